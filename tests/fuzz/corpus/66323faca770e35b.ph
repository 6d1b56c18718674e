import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    row: ph.let = X[n, 0:+BC]
    y: ph.let = Y[n:+16]
    X[n:+BR, 0:+BC] += row
    Y[0:+16] = y * 2.0
    Y[3] = 1
