# A loop body that ends with a return (its latch is a dead block, so the
# loop runs at most once) after an if that yields a load or a sum.
# run: grid 3 1 1 N=96 n=3
import phobos.lang as ph


@ph.kernel
def fuzz(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], n: ph.i32):
    b: ph.let = ph.ctx.block.x
    acc: ph.var[ph.tile[ph.f32][32]] = 2.0
    for i in range(0, n):
        if b == 0:
            acc = X[i * 32:+32]
        else:
            acc = acc + ph.exp(-ph.abs(X[b * 32:+32]))
        Y[b * 32:+32] = acc
        return
    Y[b * 32:+32] = acc
