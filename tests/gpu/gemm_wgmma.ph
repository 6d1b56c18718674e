"""f16 GEMM with f32 accumulation in the shapes Hopper's wgmma engine takes
(64 rows of the block's tile per warpgroup): A [M, K] and B [K, N] by
cp.async into S-stage rings, read by wgmma through matrix descriptors."""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.stages(S)
@ph.autotune(BM=[64, 128], BN=[128, 256], BK=[32, 64], NT=[128, 256], S=[3, 4])
def gemm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f16][M, N]):
    m0: ph.let = ph.ctx.block.x * BM
    n0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k0 in range(0, K, BK):
        acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])
    C[m0:+BM, n0:+BN] = ph.f16(acc)
