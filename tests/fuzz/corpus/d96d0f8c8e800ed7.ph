"""Row softmax of an [M, N] f16 tensor into f32: a block takes BM rows
whole. N is specialized by the config (so `:` reads the full row); M is
not, and the last block's rows past M read 0 and are not stored."""

import phobos.lang as ph


@ph.kernel
@ph.launch(128)
@ph.autotune(N=[128, 256], BM=[16])
def softmax(X: ph.tensor[ph.f16][M, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    x: ph.let = ph.f32(X[r0:+BM, :])
    e: ph.let = ph.exp(x - ph.rowmax(x))
    Y[r0:+BM, :] = e / ph.rowsum(e)
