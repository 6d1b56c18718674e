import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    t: ph.let = X[0:+BR, 0:+BC]
    a1: ph.let = ph.dot(t, t)
    a2: ph.let = ph.dot(ph.i32(t), t)
    a3: ph.let = ph.dot(Y[0:+4], t)
    a4: ph.let = ph.transpose(n)
    a5: ph.let = ph.exp(n < 1)
    a6: ph.let = ph.rowsum(Y[0:+4])
    a7: ph.let = ph.where(n, 1, 2)
    a8: ph.let = ph.iota(2)
    a9: ph.let = ph.iota(1) + n
    b1: ph.let = ph.f32(n < 1)
    b2: ph.let = ph.dot(t)
    b3: ph.let = ph.exp(t, axis=1)
    b4: ph.let = ph.softmax(t)
    b5: ph.let = print(t)
    b6: ph.let = ph.online_softmax(t, t, t, t, t)
    b7: ph.let = ph.iota(n, 4)
    b8: ph.let = ph.where(t > 0.0, t, n < 1)
    ph.exp(t)
