import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32, 64])
def k(X: ph.tensor[ph.f32][R, 64], Y: ph.tensor[ph.f16][R, 64], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BR
    x: ph.let = X[r0:+BR, :]
    half: ph.let = n / 2
    acc: ph.var[ph.tile[ph.f32][BR, 32]] = x
    x = x * 2.0
    Y[r0:+BR, :] = ph.rowsum(x) + undefined_name
