import phobos.lang as ph


# i64 as a Triton or PyTorch user writes it: literals past i32 beside an
# i64, scalar vars and parameters, element reads as window starts and
# conditions, gathers and scatters by an i64 tile, atomic adds, prints.
@ph.kernel
@ph.autotune(BM=[32])
def fine(A: ph.tensor[ph.i64][M, M], I: ph.tensor[ph.i64][M], E: ph.tensor[ph.f32][V, M], n: ph.i64):
    a: ph.let = A[0:+BM, 0:+BM]
    big: ph.let = a * 3000000000 + ph.i64(5000000000) - n
    s: ph.var[ph.i64] = 9000000000
    s += A[n, 1]
    t: ph.var[ph.tile[ph.i64][BM, BM]] = -9000000000
    t = ph.where(a > s, a, t)
    E[I[0:+BM], 0:+BM] = E[I[0:+BM], 0:+BM] * ph.f32(a)
    A[A[0, 0]:+BM, 0:+BM] = ph.i64(ph.f16(a)) + ph.i32(big)
    ph.atomic_add(A[0:+BM, 0:+BM], ph.rowsum(big))
    ph.device_print("s n", s, n, A[0, 0] > n)
    if A[1, 1] > 0:
        A[0, 0] = ph.i64(9223372036854775807) + 1     # wraps at run time
