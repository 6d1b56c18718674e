import phobos.lang as ph


# i64: literals that do not fit i32 without an i64 beside them, a dot,
# loop bounds; i64_ok.ph holds what is accepted.
@ph.kernel
@ph.autotune(BM=[32])
def k(A: ph.tensor[ph.i64][M, M], F: ph.tensor[ph.f32][M, M], n: ph.i64):
    a: ph.let = A[0:+BM, 0:+BM]
    big: ph.let = 3000000000
    d: ph.let = ph.dot(a, a)
    e: ph.let = ph.dot(F[0:+BM, 0:+BM], a)
    for i in range(0, n):
        pass
    for j in range(A[0, 0], 4):
        pass
    x: ph.let = ph.i64(1.0e19)
