"""Matrix multiplication C = A @ B: f16 inputs on the tensor cores, f32
accumulation, f32 output. A block computes a [BM, BN] tile of C walking K
BK at a time; K is a run-time bound, and the windows past the edges of A
and B read 0, so no size needs to be a multiple of a block."""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(BM=[32, 64], BN=[32], BK=[32])
def matmul(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f32][M, N]):
    m0: ph.let = ph.ctx.block.x * BM
    n0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k0 in range(0, K, BK):
        a: ph.let = A[m0:+BM, k0:+BK]
        b: ph.let = B[k0:+BK, n0:+BN]
        acc += ph.dot(a, b)
    C[m0:+BM, n0:+BN] = acc
