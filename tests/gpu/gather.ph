"""Scalars read from tensors and tiles of indices (gathers and scatters),
for tests/test_gpu_ops.c and tests/test_cpusim.c: each kernel runs on the
GPU (or the CPU executor) and in the interpreter on the same random inputs
(i32 tensors hold -50 .. 49, so about half the indices lie outside the
tensors), and every tensor must come back the same."""

import phobos.lang as ph


# A scalar element as a window start, a loop bound, an if condition and in
# arithmetic; f32 and f16 elements; one read outside its tensor (gives 0).
@ph.kernel
@ph.autotune(BM=[16, 32], BN=[32])
def elem(S: ph.tensor[ph.i32][G, 4], X: ph.tensor[ph.f32][M, N], H: ph.tensor[ph.f16][N],
         Y: ph.tensor[ph.f32][M, N], C: ph.tensor[ph.i32][M]):
    b: ph.let = ph.ctx.block.x
    c0: ph.let = ph.ctx.block.y * BN
    r0: ph.let = S[b, 0] + 40
    trips: ph.let = ph.min(S[b, 1], 5)
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, trips):
        acc += X[r0 + k:+BM, c0:+BN]
    if S[b, 2] > 0:
        acc = acc * 2.0
    elif S[b + 100, 2] == 0:
        acc = acc - H[b * 3]
    Y[b * BM:+BM, c0:+BN] = acc + ph.f32(S[b, 3]) * X[b, ph.ctx.block.y]
    C[b] = S[b, 3] * 2 + trips


# Rows of a table gathered by a tile of i32 indices, beside a window of
# columns and beside a plain column index.
@ph.kernel
@ph.autotune(BM=[16, 32], BN=[32, 40])
def rows(I: ph.tensor[ph.i32][M], E: ph.tensor[ph.f16][K, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    idx: ph.let = I[r0:+BM]
    Y[r0:+BM, c0:+BN] = ph.f32(E[idx, c0:+BN]) * 0.5 + E[idx + 1, c0]


# Columns gathered, rows and columns both gathered, and a rank-1 tensor
# read through a 2-D tile of indices.
@ph.kernel
@ph.autotune(BM=[16], BN=[32, 24])
def cols(J: ph.tensor[ph.i32][N], X: ph.tensor[ph.f32][M, N], V: ph.tensor[ph.i32][K],
         Y: ph.tensor[ph.f32][M, N], Z: ph.tensor[ph.i32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    j: ph.let = J[c0:+BN]
    i: ph.let = ph.reshape(J[r0:+BM], [BM, 1])
    Y[r0:+BM, c0:+BN] = X[r0:+BM, j] + X[i, j + 3] * 0.25
    Z[r0:+BM, c0:+BN] = V[i + j]


# Scatters: rows moved to a permutation of the rows (7 and M share no
# factor), those past M sent to -1 (never written); columns scattered too,
# a += through a gathered window, and a rank-1 scatter.
@ph.kernel
@ph.autotune(BM=[16, 32], BN=[32])
def scatter(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], W: ph.tensor[ph.f16][N, M],
            Z: ph.tensor[ph.i32][M]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    r: ph.let = r0 + ph.iota(0, BM)
    p: ph.let = ph.where(r < M, r * 7 % M, -1)
    x: ph.let = X[r0:+BM, c0:+BN]
    Y[p, c0:+BN] = x
    Y[p, c0:+BN] += 1.0
    W[c0:+BN, p] = ph.transpose(x)
    if ph.ctx.block.y == 0:
        Z[p] = r * 3


# Atomic adds through tiles of indices: a histogram (every block adding,
# repeated bins, -1 and those past G outside), and rows of small integers
# added by index (exact in any order).
@ph.kernel
@ph.autotune(BM=[32, 64], BN=[32])
def histo(I: ph.tensor[ph.i32][M], X: ph.tensor[ph.f32][M, N], Hist: ph.tensor[ph.i32][G],
          R: ph.tensor[ph.f32][G, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    bins: ph.let = I[r0:+BM] % 10 - 1
    if ph.ctx.block.y == 0:
        ph.atomic_add(Hist[bins], 1)
    ph.atomic_add(R[bins, c0:+BN], ph.f32(ph.i32(X[r0:+BM, c0:+BN] * 4.0)))
