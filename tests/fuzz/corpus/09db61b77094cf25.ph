import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    b: ph.let = ph.ctx.block.z + ph.ctx.grid.y
    c: ph.let = not (b < 3 and b > 1 or b == 2)
    X[0:+1, 0:+1] = ph.where(c, 1.0, 2.0)
