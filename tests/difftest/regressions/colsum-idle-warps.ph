# A column sum of a 1 x 1 tile with 256 threads: the BLOCKED layout spreads
# its 32 x 8 pattern of threads over rows that lie past the tile, and the
# warps whose rows all lay past it skipped writing their partial sums to
# shared memory, which the cross-warp step then read unwritten (NaN).
# run: grid 1 1 1 M=1 N=1 K=1 n=2 s=-0.5
import phobos.lang as ph


@ph.kernel
@ph.launch(256)
@ph.autotune(BM=[1], BN=[1], BK=[1])
def fuzz(Y2: ph.tensor[ph.f32][M, N], X3: ph.tensor[ph.f32][M, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    Y2[r0:+BM, c0:+BN] = (ph.colsum(ph.max(4, (-X3[r0:+BM, c0:+BN]))) / BM)
