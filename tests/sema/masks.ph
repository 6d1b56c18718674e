import phobos.lang as ph


# ph.load with mask= and other=, ph.store with mask=: what their arguments must be.
@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], V: ph.tensor[ph.f16][C], n: ph.i32):
    t: ph.let = X[0:+BR, 0:+BC]
    m: ph.let = ph.iota(1, BC) < n
    a: ph.let = ph.load(X[0:+BR, 0:+BC], mask=t)
    b: ph.let = ph.load(X[0:+BR, 0:+BC], other=1.0)
    c: ph.let = ph.load(X[0:+BR, 0:+BC], mask=ph.iota(0, 16) < n)
    d: ph.let = ph.load(X[0:+BR, 0:+BC], mask=m, fill=0.0)
    e: ph.let = ph.load(t, mask=m)
    f: ph.let = ph.load(X[0:+BR, 0:+BC], mask=m, other=ph.iota(0, 8))
    g: ph.let = ph.load(X[0:+BR, 0:+BC], mask=m, mask=m)
    h: ph.let = ph.load(V[0:+BC], mask=ph.iota(0, BC) < n)
    ph.store(X[0:+BR, 0:+BC], t, mask=1)
    ph.store(X[0:+BR, 0:+BC], mask=m)
    ph.store(X[0:+BR, 0:+BC], t, other=0.0)
    ph.store(V[0:+BC], t, mask=m)
    s: ph.let = ph.store(X[0:+BR, 0:+BC], t)
    ph.store(V[0:+BC], ph.f16(ph.load(V[0:+BC], m, -ph.inf)), ph.iota(0, BC) < n)
    ph.store(X[0:+BR, 0:+BC], ph.load(X[0:+BR, 0:+BC], mask=m, other=-ph.inf), mask=n > 0)
    ph.load(X[0:+BR, 0:+BC])
