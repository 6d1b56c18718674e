import phobos.lang as ph


# docs/language.md's masked loads and stores and its ragged softmax compile.
@ph.kernel
@ph.autotune(BM=[4], BN=[128])
def ragged_softmax(X: ph.tensor[ph.f32][M, N], Lens: ph.tensor[ph.i32][M], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    live: ph.let = ph.iota(1, BN) < ph.reshape(Lens[r0:+BM], [BM, 1])
    x: ph.let = ph.load(X[r0:+BM, 0:+BN], mask=live, other=-ph.inf)
    p: ph.let = ph.where(live, ph.exp(x - ph.rowmax(x)), 0.0)
    ph.store(Y[r0:+BM, 0:+BN], p / ph.rowsum(p), mask=live)


@ph.kernel
@ph.autotune(BM=[16], BN=[32], D=[64])
def pieces(X: ph.tensor[ph.f16][M, N], Lens: ph.tensor[ph.i32][M], Y: ph.tensor[ph.f32][M, N],
           Out: ph.tensor[ph.f32][B, D], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    b: ph.let = ph.ctx.block.z
    m: ph.let = ph.max(X[r0:+BM, c0:+BN], 0.0)
    l: ph.let = ph.rowsum(m)
    live: ph.let = c0 + ph.iota(1, BN) < ph.reshape(Lens[r0:+BM], [BM, 1])
    x: ph.let = ph.load(X[r0:+BM, c0:+BN], mask=live, other=-ph.inf)
    ph.store(Y[r0:+BM, c0:+BN], ph.exp(x - m) / l, mask=live)
    ph.store(Out[b, 0:+D], ph.load(Out[b, 0:+D]) + 1.0, mask=n > 0)
