import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    h: ph.let = ph.f16(X[0:+BR, 0:+BC])
    h2: ph.let = h * 0.5
    i: ph.let = n + 0.5
    j: ph.let = h * a
    k2: ph.let = ph.bf16(h) + h
    q: ph.let = -1.0e30
    r: ph.let = n // 2 % 3
    X[0:+BR, 0:+BC] = h2 + ph.f32(i) + j + k2 + q + ph.f32(r)
