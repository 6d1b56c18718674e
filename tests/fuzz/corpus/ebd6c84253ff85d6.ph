import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    acc: ph.var[ph.tile[ph.f32][BR, BC]] = 0.0
    m: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0
    l: ph.var[ph.tile[ph.f32][BR, 2]] = 0.0
    s: ph.let = X[0:+BR, 0:+16]
    v: ph.let = ph.f16(X[0:+16, 0:+BC])
    c: ph.let = 1
    ph.online_softmax(acc, m, l, s, v)
    ph.online_softmax(acc, m, c, s, v)
    ph.online_softmax(acc, m, m, s, X[0:+16, 0:+BC])
