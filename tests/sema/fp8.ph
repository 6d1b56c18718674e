import phobos.lang as ph


# fp8: scalars of an fp8 dtype, dots of fp8 with 8-bit integers, atomic adds
# into fp8, math that widens to f32 first (no error), stores that convert.
@ph.kernel
@ph.autotune(BM=[32], BK=[32])
def k(A: ph.tensor[ph.f8e4m3][M, K], B: ph.tensor[ph.f8e5m2][K, M], C: ph.tensor[ph.f32][M, M],
      I: ph.tensor[ph.i8][K, M]):
    a: ph.let = A[0:+BM, 0:+BK]
    b: ph.let = B[0:+BK, 0:+BM]
    x: ph.var[ph.f8e4m3] = 1.0
    d: ph.let = ph.dot(a, I[0:+BK, 0:+BM])
    ph.atomic_add(A[0:+BM, 0:+BK], a)
    C[0:+BM, 0:+BM] = ph.dot(a, b) + ph.abs(ph.dot_t(a, ph.f8e4m3(ph.transpose(b))))
    A[0:+BM, 0:+BK] = ph.exp(a) * 1000.0
    e: ph.let = a + ph.f8e5m2(a) < 0.5
    t: ph.var[ph.tile[ph.f8e5m2][BM, BK]] = 57344.0
    f: ph.let = ph.dot(a, ph.f16(b))


@ph.kernel
def scalar(A: ph.tensor[ph.f8e5m2][M], s: ph.f8e5m2):
    pass
