import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    a1: ph.let = X[0:+BR]
    a2: ph.let = X[0:BR, 0:+1]
    a3: ph.let = X[0:+n, 0:+1]
    a4: ph.let = X[:, 0:+1]
    a5: ph.let = X[0.5, 0:+1]
    a6: ph.let = X[0:+0, 0:+1]
    a7: ph.let = X
    a8: ph.let = n[0]
    X[0:+BR, 0:+1] = X[0:+BR, 0:+BC]
    Y[0:+4] = n < 1
