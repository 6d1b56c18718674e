import phobos.lang as ph


# tanh, erf, sigmoid, pow, fma, inf and nan in every form sema accepts:
# tiles and scalars of each float dtype, i32 and literal arguments (taken
# as f32), broadcasting, the constants as literals (-ph.inf, a var filled
# with them, converted), and IEEE division by a zero literal.
@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], H: ph.tensor[ph.f16][R, C], I: ph.tensor[ph.i32][R, C], Y: ph.tensor[ph.f32][R, C],
      n: ph.i32, s: ph.f32):
    x: ph.let = X[0:+BR, 0:+BC]
    h: ph.let = H[0:+BR, 0:+BC]
    i: ph.let = I[0:+BR, 0:+BC]
    m: ph.var[ph.tile[ph.f32][BR, 1]] = -ph.inf
    m = ph.max(m, ph.rowmax(x))
    u: ph.let = ph.tanh(x) + ph.erf(h) + ph.sigmoid(i) + ph.tanh(n) + ph.erf(s) + ph.sigmoid(0.5)
    v: ph.let = ph.pow(h, 2.0) + ph.pow(x, h) + ph.pow(i, 2) + ph.pow(2, n) + ph.pow(s, 0.5)
    w: ph.let = ph.fma(m, X[0, 0:+BC], s) + ph.fma(h, h, 1) + ph.fma(i, 2, n) + ph.fma(1, 2, 3)
    z: ph.let = ph.where(x > 0.0, ph.inf, -1.0 / 0.0) + ph.f16(ph.nan) + ph.min(ph.nan, -ph.inf)
    Y[0:+BR, 0:+BC] = u + v + w + z
