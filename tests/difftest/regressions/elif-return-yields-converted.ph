# An if/elif/else whose branches yield a dot, a transposed tile and a
# splat-plus-rowsum, with returns nested in two of them: values converted to
# the result's layout in a branch were freed before the phis read them (the
# code generator crashed, or read freed memory).
# run: grid 4 2 1 M=64 N=32 K=16
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[16], BK=[16])
def fuzz(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.5
    if ph.ctx.block.x == 1:
        acc = ph.dot(A[r0:+BM, 0:+BK], B[0:+BK, c0:+BN])
    elif ph.ctx.block.x == 2:
        if ph.ctx.block.y == 0:
            return
        acc = ph.transpose(A[r0:+BM, 0:+BN]) * 2.0
    else:
        if ph.ctx.block.y == 1:
            acc = acc + ph.rowsum(A[r0:+BM, 0:+BK])
        else:
            return
    Y[r0:+BM, c0:+BN] = acc
