"""Kernels for i64 (docs/language.md, "64-bit integers"): wrapping arithmetic past
2^31 and 2^63, floor division and modulo (by zero too), conversions both ways,
comparisons, ph.where, reductions, argmax, cumsum, a transpose, element reads,
masked loads and stores, += through a window,
gathers through an i64 tile of indices (PyTorch's int64 index tensors) and
atomic adds. Run by test_cpusim and test_gpu_ops against the interpreter."""
import phobos.lang as ph

@ph.kernel
@ph.autotune(BM=[16, 32], BN=[32, 64])
def wide(X: ph.tensor[ph.i64][M, N], D: ph.tensor[ph.i64][M, N], F: ph.tensor[ph.f32][M, N],
         I: ph.tensor[ph.i32][M, N], Y: ph.tensor[ph.i64][M, N], Q: ph.tensor[ph.i64][M, N],
         Z: ph.tensor[ph.f32][M, N], W: ph.tensor[ph.i32][M, N], H: ph.tensor[ph.f16][M, N], n: ph.i64):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    d: ph.let = D[r0:+BM, c0:+BN] % 7 - 3                  # divisors -3 .. 3, zero included
    Y[r0:+BM, c0:+BN] = x * 3000000000 + n - ph.abs(x) + I[r0:+BM, c0:+BN]
    Q[r0:+BM, c0:+BN] = ph.where(x > d, x // d, -(x % d)) + ph.i64(F[r0:+BM, c0:+BN] * 1.0e12)
    Z[r0:+BM, c0:+BN] = ph.f32(x) + ph.max(x, d) - ph.min(x, n)
    W[r0:+BM, c0:+BN] = ph.i32(x) + ph.where(x != d, 5, 0)
    H[r0:+BM, c0:+BN] = ph.f16(d * 1000)

@ph.kernel
@ph.autotune(BM=[16, 64], W=[64, 128])
@ph.launch(W)
def widered(X: ph.tensor[ph.i64][M, 64], R: ph.tensor[ph.i64][M, 4], C: ph.tensor[ph.i64][4, 64],
            A: ph.tensor[ph.i32][M, 2], S: ph.tensor[ph.i64][M, 64], T: ph.tensor[ph.i64][64, M]):
    r0: ph.let = ph.ctx.block.x * BM
    x: ph.let = X[r0:+BM, 0:+64]
    R[r0:+BM, 0:+1] = ph.rowsum(x)
    R[r0:+BM, 1:+1] = ph.rowmax(x)
    R[r0:+BM, 2:+1] = ph.rowmin(x)
    R[r0:+BM, 3:+1] = ph.rowsum(x % 1000)
    ph.atomic_add(C[0:+1, 0:+64], ph.colsum(x))
    ph.atomic_add(C[1:+1, 0:+64], ph.colmax(x % 100))
    A[r0:+BM, 0:+1] = ph.argmax(x, 1)
    A[r0:+BM, 1:+1] = ph.argmin(x % 10, 1)
    S[r0:+BM, 0:+64] = ph.cumsum(x, 1)
    T[0:+64, r0:+BM] = ph.transpose(x)

@ph.kernel
@ph.autotune(BJ=[8, 16], BD=[32])
def wideidx(Idx: ph.tensor[ph.i64][L], E: ph.tensor[ph.f32][V, D], O: ph.tensor[ph.f32][L, D],
            P: ph.tensor[ph.i64][L], Cnt: ph.tensor[ph.i64][V], K: ph.tensor[ph.i64][L]):
    # the harnesses launch a 4 x 3 grid: the blocks of one x would race on
    # P's += (each reading what another wrote), so one of them runs
    if ph.ctx.block.y > 0:
        return
    j0: ph.let = ph.ctx.block.x * BJ
    idx: ph.let = Idx[j0:+BJ]
    O[j0:+BJ, 0:+BD] = E[idx, 0:+BD] * 2.0
    first: ph.let = Idx[j0]
    acc: ph.var[ph.i64] = 0
    for k in range(0, BJ):
        acc += Idx[j0 + k] * k
    P[j0:+BJ] = Idx[first:+BJ] + acc
    ph.atomic_add(Cnt[idx], 1)
    P[j0:+BJ] += idx * 4294967296
    live: ph.let = j0 + ph.iota(1, BJ) < first % 40
    m: ph.let = ph.load(Idx[j0:+BJ], mask=live, other=-7000000000)
    ph.store(K[j0:+BJ], m * 2, mask=not live)
    if first > 20:
        K[j0:+BJ] = ph.i64(Idx[j0:+BJ] * 2) - 9000000000

# an i64 tile in a dot's layout (the tensor cores' on sm_90, wgmma's on
# sm_90a): its store goes through shared memory as 8-byte elements; the
# operands are small integers, so every summation order gives the same sums
@ph.kernel
@ph.tensorcore
@ph.autotune(BM=[64], BN=[64])
def widedot(A: ph.tensor[ph.f32][M, 32], B: ph.tensor[ph.f32][32, N], C: ph.tensor[ph.i64][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    a: ph.let = ph.f16(ph.i32(A[r0:+BM, 0:+32] * 4.0))
    b: ph.let = ph.f16(ph.i32(B[0:+32, c0:+BN] * 4.0))
    C[r0:+BM, c0:+BN] = ph.i64(ph.dot(a, b)) * 3000000000 + ph.rowmax(ph.i64(ph.dot(a, b)))
