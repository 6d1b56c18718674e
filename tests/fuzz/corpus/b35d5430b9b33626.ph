import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    a0: ph.let = undefined
    b: ph.let = a0 + 1
    c: ph.let = b * X[0:+BR, 0:+BC]
    d: ph.let = n / n
    e: ph.let = q
