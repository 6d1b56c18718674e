# Found on the H200 (seed 39 of gpufuzz), unseen by the CPU executor until it
# checked reads of shared memory nothing wrote: a reduction across warps
# whose rows lay past the tile read those warps' unwritten partials.
# run: grid 1 1 1 M=1 N=1 K=1 n=5 s=1.25
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[1], BN=[1], BK=[1])
@ph.launch(192)
def fuzz(Y5: ph.tensor[ph.f16][M, N], X6: ph.tensor[ph.f16][K, K], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    v1: ph.var[ph.tile[ph.f32][1, BN]] = 1.0
    v2: ph.var[ph.tile[ph.f32][BM, BN]] = ph.colmin(v1)
    Y5[r0:+BM, c0:+BN] = ph.where((((r0 + ph.iota(0, BM)) < M) or (((c0 + ph.iota(1, BN)) % 3) == 0)), ph.abs(v2), ph.rowmax((ph.colsum(X6[0:+BK, 0:+BK]) / BK)))
