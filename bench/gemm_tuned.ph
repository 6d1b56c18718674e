"""f16 matrix multiplication C = A @ B with f32 accumulation on the tensor
cores, with the tile shapes and pipeline depths the autotuner tries: A and
B arrive through S-stage rings (cp.async, or TMA on sm_90a), K is a
run-time bound, and windows past the edges read 0, so no size needs to be
a multiple of a block.

The kernel is persistent: a grid of any size covers every tile, block b
taking tiles b, b + blocks, b + 2 blocks, ...; the bench launches one
block per multiprocessor (ph_device_multiprocessors), so no block waits
for a slot on the GPU and the last wave is not a partial one of fresh
blocks. Tiles are numbered in groups of GM tile rows, column by column
within a group, so that the blocks running at once read a few rows of A
and columns of B many times while they are in L2.

W = 1 adds a producer warp (@ph.warp_specialize): on sm_90a one of its
threads issues the rings' copies while the NT threads compute, slots
handed over by mbarriers instead of a block barrier each K step. It is
not among the autotuned configs (W=[0]) until compute-sanitizer's
racecheck is clean on it on the H200 (docs/architecture.md);
tests/test_cpusim_ws.c checks it with W=[1]."""

import phobos.lang as ph


@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.stages(S)
@ph.warp_specialize(W)
@ph.autotune(BM=[64, 128], BN=[128, 256], BK=[32, 64], NT=[128, 256], S=[3], GM=[8], W=[0])
def gemm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f16][M, N]):
    tiles_m: ph.let = (M + BM - 1) // BM
    tiles_n: ph.let = (N + BN - 1) // BN
    group: ph.let = GM * tiles_n
    blocks: ph.let = ph.ctx.grid.x * ph.ctx.grid.y
    first: ph.let = ph.ctx.block.x + ph.ctx.block.y * ph.ctx.grid.x
    for t in range(0, (tiles_m * tiles_n - first + blocks - 1) // blocks):
        tile: ph.let = first + t * blocks
        first_m: ph.let = (tile // group) * GM
        rows: ph.let = ph.min(tiles_m - first_m, GM)
        m0: ph.let = (first_m + (tile % group) % rows) * BM
        n0: ph.let = ((tile % group) // rows) * BN
        acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
        for k0 in range(0, K, BK):
            acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])
        C[m0:+BM, n0:+BN] = ph.f16(acc)
