# A colsum of an 8 x 8 i32 window with 64 threads (a pattern of 32 rows by
# 2 lanes of 4 columns) carried in a [1, BN] var and broadcast back over a
# 16 x 8 tile: the second warp, whose rows all lie past the window, never
# wrote its partial, and the sums took garbage.
# run: grid 3 1 1 M=60 N=6 K=1 n=4 s=1.25
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[8], BK=[16], NT=[64])
@ph.launch(NT)
@ph.tensorcore
def fuzz(X4: ph.tensor[ph.i32][N, N], X6: ph.tensor[ph.f32][M, M], Y15: ph.tensor[ph.bf16][M, N], n: ph.i32, s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    v3: ph.var[ph.tile[ph.i32][1, BN]] = 1
    v3 = ((v3 // 2) + (((-ph.colsum(X4[c0:+BN, c0:+BN])) // (-3)) % 64))
    Y15[r0:+BM, c0:+BN] = (ph.rowmin(ph.i32(X6[r0:+BM, r0 - 2] * 4.0)) * (v3 % 2))
