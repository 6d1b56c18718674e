import phobos.lang as ph


# tanh, erf, sigmoid, pow, fma and the constants inf and nan: what their
# arguments must be.
@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], n: ph.i32):
    t: ph.let = X[0:+BR, 0:+BC]
    a: ph.let = ph.tanh(t, t)
    b: ph.let = ph.pow(t)
    c: ph.let = ph.fma(t, t)
    d: ph.let = ph.erf(t > 0.0)
    e: ph.let = ph.pow(t, t > 0.0)
    f: ph.let = ph.fma(t, X[0:+16, 0:+BC], 1.0)
    g: ph.let = ph.pow(t, X[0:+BR, 0:+16])
    h: ph.var[ph.i32] = ph.inf
    i: ph.let = ph.nan + ph.infinity
    j: ph.let = ph.sigmoid(x=t)
    for r in range(ph.inf):
        pass
