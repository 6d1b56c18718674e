"""Layer normalization of the rows of an [M, N] bf16 tensor: each row's
mean and variance in f32, then (x - mean) / sqrt(variance + eps) scaled by
the weight W[N] and shifted by the bias B[N], both broadcast against the
[BM, N] tile. A block takes BM whole rows; the rows past M are not
stored."""

import phobos.lang as ph


@ph.kernel
@ph.launch(128)
@ph.autotune(N=[256], BM=[8])
def layernorm(X: ph.tensor[ph.bf16][M, N], W: ph.tensor[ph.f32][N], B: ph.tensor[ph.f32][N],
              Y: ph.tensor[ph.bf16][M, N], eps: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    x: ph.let = ph.f32(X[r0:+BM, :])
    mean: ph.let = ph.rowsum(x) / N
    xc: ph.let = x - mean
    variance: ph.let = ph.rowsum(xc * xc) / N
    Y[r0:+BM, :] = xc * ph.rsqrt(variance + eps) * W[:] + B[:]
