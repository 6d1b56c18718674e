# Found on the H200 (seed 38 of gpufuzz), unseen by the CPU executor until it
# checked reads of shared memory nothing wrote: a reduction across warps
# whose rows lay past the tile read those warps' unwritten partials.
# (seed 38, reduced by hand)
# run: grid 4 3 1 M=33 N=35 K=9 n=10 s=2
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[32], BN=[5], BK=[4])
def fuzz(X1: ph.tensor[ph.i32][K, N], Y5: ph.tensor[ph.i32][M, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    v2: ph.var[ph.tile[ph.i32][BM, 1]] = 1
    v2 = ph.min(v2, (ph.colsum(X1[0:+BK, c0]) % (-3)))
    Y5[r0:+BM, c0:+BN] = v2
