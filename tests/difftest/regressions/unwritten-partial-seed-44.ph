# Found on the H200 (seed 44 of gpufuzz), unseen by the CPU executor until it
# checked reads of shared memory nothing wrote: a reduction across warps
# whose rows lay past the tile read those warps' unwritten partials.
# run: grid 1 1 1 M=1 N=1 K=1 n=1 s=0.75
import phobos.lang as ph


@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[1], BN=[1], BK=[1], NT=[64])
def fuzz(X2: ph.tensor[ph.i32][M, N], X9: ph.tensor[ph.f32][M, N], Y12: ph.tensor[ph.f16][M, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    Y12[r0:+BM, c0:+BN] = ph.f16(ph.where((((c0 + ph.iota(1, BN)) % 3) == 0), ph.bf16(X2[r0:+BM, c0 - 1:+BN]), ph.colmin(X9[r0 + 3:+BM, c0:+BN])))
