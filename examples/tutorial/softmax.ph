"""The tutorial's second kernel: the softmax of each row of an [M, N]
matrix, for any M and N. A block takes BM rows and walks them BN columns
at a time, twice: once for each row's maximum and sum, once to write."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[4, 16], BN=[128, 512])
def softmax(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    m: ph.var[ph.tile[ph.f32][BM, 1]] = -1.0e30    # each row's maximum so far
    l: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0        # its sum of exp(x - m)
    for c0 in range(0, N, BN):
        inside: ph.let = c0 + ph.iota(1, BN) < N   # [1, BN]: columns left of N
        x: ph.let = ph.where(inside, X[r0:+BM, c0:+BN], -1.0e30)
        m_new: ph.let = ph.max(m, ph.rowmax(x))
        l = l * ph.exp(m - m_new) + ph.rowsum(ph.exp(x - m_new))
        m = m_new
    for c0 in range(0, N, BN):
        Y[r0:+BM, c0:+BN] = ph.exp(X[r0:+BM, c0:+BN] - m) / l
