import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    t: ph.let = X[0:+BR, 0:+BC]
    a1: ph.let = n / n
    a2: ph.let = n / a
    a3: ph.let = t ** 2
    a4: ph.let = t @ t
    a5: ph.let = n << 1
    a6: ph.let = (n < 1) + 1
    a7: ph.let = n and True
    a8: ph.let = t + X[0:+BC, 0:+BR]
    a9: ph.let = not n
    b1: ph.let = 1 // 0
    b2: ph.let = "s"
    b3: ph.let = ph.ctx.block.w
    b4: ph.let = ph.ctx.thread.x
    b5: ph.let = ph.f16
    b6: ph.let = 3000000000 + n
    t + 1
