# A reduction of a reduction, colsum(colsum(x)), on a 1 x 2 tile with 256
# threads: the inner one lost the partials of the warps whose rows lay past
# the tile, so the outer one summed garbage.
# run: grid 1 1 1 M=1 N=1 K=1 n=7 s=1.25
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[1], BN=[2], BK=[1])
@ph.launch(256)
def fuzz(Y0: ph.tensor[ph.i32][M, N], X1: ph.tensor[ph.i32][K, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    for i2 in range(0, BM, 1):
        Y0[r0 + i2, c0:+BN] = ph.colsum(ph.colsum(X1[0:+BK, c0:+BN]))
