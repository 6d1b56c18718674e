"""Vector addition: z = x + y over 1-D tensors, one block of BLOCK
elements per grid index. The last block reaches past the end of the
tensors: its loads read 0 there and its store writes nothing there."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[128, 256])
def vecadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N]):
    i0: ph.let = ph.ctx.block.x * BLOCK
    Z[i0:+BLOCK] = X[i0:+BLOCK] + Y[i0:+BLOCK]
