import phobos.lang as ph


# A misspelt built-in: the nearest name is offered when one is an edit or two away.
@ph.kernel
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):
    t: ph.let = X[0:+128]
    a: ph.let = ph.exxp(t)
    b: ph.let = ph.rowsun(ph.iota(1, 4))
    c: ph.let = ph.sqr(t)
    d: ph.let = ph.frobnicate(t)
    Y[0:+128] = t
