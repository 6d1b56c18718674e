"""fp8 GEMM, as fp8 inference and training quantize it: C = SA[:, None] *
sb * (A @ B), A an e4m3 [M, K] with one scale per row, B an e4m3 [K, N]
with one scale for the whole tensor, the products summed in f32 on the
tensor cores (mma.sync m16n8k32 .e4m3 on sm_90 and sm_90a), scaled and
stored as f16. quantize_rows makes A from an f32 matrix: each row's
largest magnitude maps to 448, e4m3's largest value, and every element is
divided by the row's scale and rounded to nearest even. Windows past the
edges read 0, so no size needs to be a multiple of a block."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BK=[64])
def quantize_rows(X: ph.tensor[ph.f32][M, K], Q: ph.tensor[ph.f8e4m3][M, K], S: ph.tensor[ph.f32][M]):
    m0: ph.let = ph.ctx.block.x * BM
    amax: ph.var[ph.tile[ph.f32][BM, 1]] = 1.0e-30    # an all-zero row keeps a scale above 0
    for k0 in range(0, K, BK):
        amax = ph.max(amax, ph.rowmax(ph.abs(X[m0:+BM, k0:+BK])))
    scale: ph.let = amax / 448.0
    for k0 in range(0, K, BK):
        Q[m0:+BM, k0:+BK] = X[m0:+BM, k0:+BK] / scale
    S[m0:+BM] = scale


@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(BM=[32, 64], BN=[64], BK=[32, 64])
def fp8gemm(A: ph.tensor[ph.f8e4m3][M, K], B: ph.tensor[ph.f8e4m3][K, N], SA: ph.tensor[ph.f32][M], sb: ph.f32,
            C: ph.tensor[ph.f16][M, N]):
    m0: ph.let = ph.ctx.block.x * BM
    n0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k0 in range(0, K, BK):
        acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])
    row_scale: ph.let = ph.reshape(SA[m0:+BM], [BM, 1])
    C[m0:+BM, n0:+BN] = acc * (row_scale * sb)
