import phobos.lang as ph


@ph.kernel
@ph.autotune(B=[16])
def k(X: ph.tensor[ph.f32][M, N], V: ph.tensor[ph.f32][M], I: ph.tensor[ph.i32][M], a: ph.i32):
    x: ph.let = X[0:+B, 0:+32]
    v: ph.let = V[0:+B]
    i1: ph.let = ph.argmax(v, 0)
    i2: ph.let = ph.argmax(x, 2)
    i3: ph.let = ph.argmin(x, a)
    i4: ph.let = ph.argmax(x > 0.0, 1)
    s1: ph.let = ph.cumsum(x)
    r1: ph.let = ph.reshape(x, [B * 32])
    r2: ph.let = ph.reshape(v, [B, 2])
    r3: ph.let = ph.reshape(v, [B + 1])
    r4: ph.let = ph.reshape(v, B)
    r5: ph.let = ph.reshape(v, [1, a])
    r6: ph.let = ph.reshape(1.0, [1])
    V[0:+B] = ph.rowsum(X[0:+8, 0:+32])
    V[0:+B] = ph.colsum(x)
    X[0:+B, 0:+1] = v
    X[0:+B, 0:+2] = ph.reshape(v, [1, B])
    ph.atomic_add(V[0:+B], x)
    I[0:+B] = ph.argmax(x, 1)
    I[0:+B] = ph.argmax(x, 0)
    ok1: ph.let = ph.reshape(ph.iota(0, B), [B]) + ph.reshape(ph.argmin(x, 1), [1, B])
    ok2: ph.let = ph.cumsum(ph.reshape(v, [B, 1]), 0) + ph.argmax(ph.iota(1, 4) + ph.iota(0), 1)
    V[0:+B] += ph.reshape(v, [B, 1])
    X[0:+1, 0:+B] = ph.cumsum(ph.reshape(v, [1, B]), 1)
