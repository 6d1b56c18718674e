# colmax of a 1 x 1 i32 window with 256 threads: as in colsum-idle-warps.ph,
# seven warps' partials were never written and the maximum took whatever
# shared memory held.
# run: grid 1 1 1 M=1 N=3 K=1 n=3 s=-0.5
import phobos.lang as ph


@ph.kernel
@ph.launch(256)
@ph.autotune(BM=[1], BN=[1], BK=[1])
def fuzz(Y8: ph.tensor[ph.i32][M, N], X9: ph.tensor[ph.i32][K, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    Y8[ph.ctx.block.x, c0:+BN] = ph.colmax(X9[0, c0:+BN])
