"""Tensors of rank 3 and 4 passed as views (strides that are not row-major),
windows over two of their axes or one, the others indexed by scalars, for
tests/test_gpu_ops.c (on the GPU) and tests/test_cpusim.c (the code
generator on the CPU executor, sm_90 and sm_90a), both against the
interpreter. The harness (tests/opsharness.h) lays each rank-3/4 tensor out
as torch's x.transpose(1, 2) of a contiguous tensor (even parameter index:
the last stride 1, so chunks may be read whole) or x.transpose(-2, -1) (odd
index: the last two axes swapped, every element apart). Windows run past
every edge: rows past N, columns past D, a scalar index of -1 or past its
dim, whose whole window reads 0 and writes nothing."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[32], BD=[16])
def perm(X: ph.tensor[ph.f32][B, H, N, D], Y: ph.tensor[ph.f32][B, N, H, D], W: ph.tensor[ph.f32][B, H, N, D]):
    m0: ph.let = ph.ctx.block.x * BM
    h: ph.let = ph.ctx.block.y
    for z in range(0, B):
        for d0 in range(0, D, BD):
            x: ph.let = X[z, h, m0:+BM, d0:+BD]
            # z - 1 is -1 for the first batch and h + 1 past H for the last head: zeros
            Y[z, m0:+BM, h, d0:+BD] = x * 2.0 + X[z - 1, h, m0:+BM, d0:+BD] + X[z, h + 1, m0:+BM, d0:+BD]
            W[z, h, m0:+BM, d0:+BD] = x - 1.0


@ph.kernel
@ph.autotune(BM=[32])
def edges(X: ph.tensor[ph.f32][B, H, N, D], R: ph.tensor[ph.f32][B, H, N, D], P: ph.tensor[ph.f32][B, N, H, D]):
    m0: ph.let = ph.ctx.block.x * BM
    h: ph.let = ph.ctx.block.y
    # a window along one axis (a 1-D tile); h indexes B, which it passes for h = 2
    if ph.ctx.block.x == 0:
        R[h, 0, 0:+BM, 1] = X[h, 1, 0:+BM, 0] + 0.5
    # a window along the first and the last axis
    if h == 0:
        P[0:+2, m0, 1, 0:+4] = X[0:+2, 0, m0, 0:+4] * -1.0


@ph.kernel
@ph.tensorcore
@ph.autotune(K=[32], BM=[32], BN=[32])
def tdot(A: ph.tensor[ph.f16][B, H, M, K], Bt: ph.tensor[ph.f16][B, H, K, N], C: ph.tensor[ph.f32][B, M, H, N]):
    m0: ph.let = ph.ctx.block.x * BM
    h: ph.let = ph.ctx.block.y
    for z in range(0, B):
        a: ph.let = A[z, h, m0:+BM, :]
        for n0 in range(0, N, BN):
            C[z, m0:+BM, h, n0:+BN] = ph.dot(a, Bt[z, h, :, n0:+BN])


@ph.kernel
@ph.autotune(BM=[16], BK=[64])
def r3(X: ph.tensor[ph.f32][G, M, K], T: ph.tensor[ph.f32][G, M, K], S: ph.tensor[ph.f32][G, 2, K],
       U: ph.tensor[ph.i32][G, M, K], V: ph.tensor[ph.i32][G, M, K]):
    m0: ph.let = ph.ctx.block.x * BM
    for g in range(ph.ctx.block.y, G, 3):
        x: ph.let = X[g, m0:+BM, 0:+BK]
        first: ph.let = X[g, m0, 0:+BK]                # one row, a 1-D tile
        ph.store(T[g, m0:+BM, 0:+BK], x + first, mask=ph.iota(1, BK) < 40)
        ph.atomic_add(S[g, 1, 0:+BK], ph.colsum(x))     # a rank-3 window along one axis
        u: ph.let = ph.load(U[g, m0:+BM, 0:+BK], mask=ph.iota(0, BM) % 2 == 0, other=-7)
        V[g, m0:+BM, 0:+BK] = u * 3 + ph.i32(ph.ctx.block.x)
