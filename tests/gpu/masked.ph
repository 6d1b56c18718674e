"""Masked loads and stores (ph.load with mask= and other=, ph.store with
mask=) and the ragged softmax built from them, for tests/test_gpu_ops.c (on
the GPU), tests/test_cpusim.c (the code generator on the CPU executor) and
tests/test_lang_ref.c (the interpreter against plain C). Each runs on random
inputs whose windows run past the tensors' edges: a masked-off element
reads `other`, an element outside a tensor reads 0 under a true mask, and a
store writes neither."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[32, 40])
def mload(X: ph.tensor[ph.f32][M, N], H: ph.tensor[ph.f16][M, N], C: ph.tensor[ph.i32][N],
          Y: ph.tensor[ph.f32][M, N], Z: ph.tensor[ph.f16][M, N], V: ph.tensor[ph.i32][N], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    # an affine mask (masks.c decides it per tile where it can), other a scalar
    below: ph.let = r0 + ph.iota(0, BM) < c0 + ph.iota(1, BN) + n
    x: ph.let = ph.load(X[r0:+BM, c0:+BN], mask=below, other=-ph.inf)
    # a mask read from data, a [1, BN] mask of a rank-1 tensor, other a tile
    c: ph.let = ph.load(C[c0:+BN], mask=ph.iota(1, BN) % 3 != 1, other=ph.iota(1, BN))
    h: ph.let = ph.load(H[r0:+BM, c0:+BN], mask=x > 0.5, other=c)
    ph.store(Y[r0:+BM, c0:+BN], ph.max(x, -3.0) + ph.f32(h), mask=c > 0)
    # a [BM, 1] mask from a reduction, and a scalar one
    ph.store(Z[r0:+BM, c0:+BN], ph.max(x, -8.0) * 2.0, mask=ph.rowmax(x) < 1.5)
    ph.store(V[c0:+BN], ph.colsum(ph.i32(ph.max(x, -3.0) * 4.0)) + c, mask=n > 20 and ph.ctx.block.x == 0)


@ph.kernel
@ph.autotune(BM=[4, 8], BN=[128])
def ragged_softmax(X: ph.tensor[ph.f32][M, N], Lens: ph.tensor[ph.i32][M], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM + ph.ctx.block.y * ph.ctx.grid.x * BM
    live: ph.let = ph.iota(1, BN) < ph.reshape(Lens[r0:+BM], [BM, 1])
    x: ph.let = ph.load(X[r0:+BM, 0:+BN], mask=live, other=-ph.inf)
    p: ph.let = ph.where(live, ph.exp(x - ph.rowmax(x)), 0.0)
    ph.store(Y[r0:+BM, 0:+BN], p / ph.rowsum(p), mask=live)


@ph.kernel
@ph.autotune(BM=[8], BN=[16, 32])
def ragged_softmax_loop(X: ph.tensor[ph.f32][M, N], Lens: ph.tensor[ph.i32][M], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM + ph.ctx.block.y * ph.ctx.grid.x * BM
    lens: ph.let = ph.reshape(Lens[r0:+BM], [BM, 1])
    m: ph.var[ph.tile[ph.f32][BM, 1]] = -ph.inf
    l: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0
    for c0 in range(0, N, BN):
        live: ph.let = c0 + ph.iota(1, BN) < lens
        x: ph.let = ph.load(X[r0:+BM, c0:+BN], mask=live, other=-ph.inf)
        mn: ph.let = ph.max(m, ph.rowmax(x))
        l = l * ph.where(mn == -ph.inf, 1.0, ph.exp(m - mn)) + ph.rowsum(ph.where(live, ph.exp(x - mn), 0.0))
        m = mn
    for c0 in range(0, N, BN):
        live: ph.let = c0 + ph.iota(1, BN) < lens
        ph.store(Y[r0:+BM, c0:+BN], ph.exp(X[r0:+BM, c0:+BN] - m) / l, mask=live)
