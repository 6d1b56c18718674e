# Returns three regions deep (if, for, if, if) after values carried through
# each: the loop's tile and count, a transposed tile, a where over iota; C
# holds the count where the block returned, Y and C the values otherwise.
# run: grid 4 4 1 M=64 N=64 n=3
import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[16])
def fuzz(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], C: ph.tensor[ph.i32][M, N], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    v: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    cnt: ph.var[ph.i32] = 0
    if ph.ctx.block.x < 3:
        for i in range(0, n):
            if ph.ctx.block.y > i:
                v += ph.transpose(X[c0:+BN, r0:+BM])
                cnt += 1
            else:
                if ph.ctx.block.x == i:
                    C[r0:+BM, c0:+BN] = cnt
                    return
                v = v - X[r0:+BM, c0:+BN]
        cnt += 10
    else:
        v = ph.where(ph.iota(1) > 3, X[r0:+BM, c0:+BN], v)
    Y[r0:+BM, c0:+BN] = v
    C[r0:+BM, c0:+BN] = cnt
