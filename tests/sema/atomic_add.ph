import phobos.lang as ph


# ph.atomic_add: what its arguments must be.
@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], H: ph.tensor[ph.f16][C], I: ph.tensor[ph.i32][C], n: ph.i32):
    t: ph.let = X[0:+BR, 0:+BC]
    ph.atomic_add(X[0:+BR, 0:+BC])
    ph.atomic_add(t, 1.0)
    ph.atomic_add(H[0:+16], 1.0)
    ph.atomic_add(X[0:+16, 0:+BC], t)
    s: ph.let = ph.atomic_add(I[0:+4], 1)
    ph.atomic_add(I[n:+4], t[0])
    ph.atomic_add(X[0:+BR, :+1], ph.rowsum(t))
