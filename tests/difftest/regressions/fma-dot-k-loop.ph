# The FMA dot (f32, no @ph.tensorcore) accumulated over a K loop whose length
# is not a multiple of BK: the code generator once took the loop header's sum,
# which lacks the last k, and nearly every element differed on the GPU.
# run: grid 3 2 1 M=40 N=20 K=45
import phobos.lang as ph


@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16], BN=[12], BK=[8], NT=[32, 128])
def fuzz(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, K, BK):
        acc += ph.dot(A[r0:+BM, k:+BK], B[k:+BK, c0:+BN])
    Y[r0:+BM, c0:+BN] = acc / K
