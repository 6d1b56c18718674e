"""f16 matrix multiplication C = A @ B with f32 accumulation on the tensor
cores, with the tile shapes and pipeline depths the autotuner tries: A and
B arrive by cp.async into S-stage rings, K is a run-time bound, and windows
past the edges read 0, so no size needs to be a multiple of a block."""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.stages(S)
@ph.autotune(BM=[64, 128], BN=[128], BK=[32, 64], NT=[128], S=[2, 3])
def gemm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f16][M, N]):
    m0: ph.let = ph.ctx.block.x * BM
    n0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k0 in range(0, K, BK):
        acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])
    C[m0:+BM, n0:+BN] = ph.f16(acc)
