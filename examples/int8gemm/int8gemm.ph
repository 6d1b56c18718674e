"""int8 GEMM with per-row and per-column scales, as quantized inference
runs it: C = (SA[:, None] * SB[None, :]) * (A @ B), A an i8 [M, K] (one
scale per row), B an i8 [K, N] (one scale per column), the products
summed exactly in i32 on the tensor cores (mma.sync m16n8k32), scaled in
f32 and stored as f16. Windows past the edges read 0, so no size needs to
be a multiple of a block."""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(BM=[32, 64], BN=[64], BK=[32, 64])
def int8gemm(A: ph.tensor[ph.i8][M, K], B: ph.tensor[ph.i8][K, N], SA: ph.tensor[ph.f32][M],
             SB: ph.tensor[ph.f32][N], C: ph.tensor[ph.f16][M, N]):
    m0: ph.let = ph.ctx.block.x * BM
    n0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.i32][BM, BN]] = 0
    for k0 in range(0, K, BK):
        acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])
    row_scale: ph.let = ph.reshape(SA[m0:+BM], [BM, 1])
    C[m0:+BM, n0:+BN] = ph.f32(acc) * row_scale * SB[n0:+BN]
