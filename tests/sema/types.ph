import phobos.lang as ph


# i8 and u8: literals that do not fit, integer dots of other dtypes, scalar
# parameters, atomic adds and dots mixing dtypes.
@ph.kernel
@ph.autotune(BM=[32], BK=[32])
def k(A: ph.tensor[ph.i8][M, K], B: ph.tensor[ph.u8][K, M], C: ph.tensor[ph.i32][M, M]):
    a: ph.let = A[0:+BM, 0:+BK]
    b: ph.let = B[0:+BK, 0:+BM]
    x: ph.var[ph.tile[ph.i8][BM, BK]] = 200
    y: ph.var[ph.u8] = -1
    z: ph.let = ph.u8(256)
    d: ph.let = ph.dot(a, b)
    e: ph.let = ph.dot(a, ph.f16(b))
    ph.atomic_add(A[0:+BM, 0:+BK], a)
    A[0:+BM, 0:+BK] = 127.9
    f: ph.let = ph.i8(300.0)


@ph.kernel
def scalar(A: ph.tensor[ph.i8][M], s: ph.i8):
    pass
