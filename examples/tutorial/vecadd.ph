"""The tutorial's first kernel: z = x + y over vectors of any length, one
block of BLOCK elements per grid index."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[256, 1024])
def vecadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N]):
    i0: ph.let = ph.ctx.block.x * BLOCK
    Z[i0:+BLOCK] = X[i0:+BLOCK] + Y[i0:+BLOCK]
