import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    h: ph.let = ph.f16(X[0:+BR, 0:+BC])
    b: ph.let = ph.bf16(X[0:+BC, 0:+16])
    f: ph.let = X[0:+BC, 0:+16]
    d1: ph.let = ph.dot(h, f)
    d2: ph.let = ph.dot(h, b)
    d3: ph.let = ph.dot_t(X[0:+BR, 0:+BC], X[0:+16, 0:+BC])
    t: ph.let = ph.transpose(d1)
    e: ph.let = ph.exp(n) + ph.rsqrt(t) + ph.abs(-2)
    m: ph.let = ph.max(ph.rowmax(d1), ph.colmin(d3)) + ph.min(1, 2.0)
    s: ph.let = ph.rowsum(ph.i32(d2))
    X[0:+BR, 0:+16] = m + ph.f32(s) + d2 + ph.f32(ph.iota(0, 32) + ph.iota(1))
