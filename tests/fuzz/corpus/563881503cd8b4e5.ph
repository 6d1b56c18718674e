"""A row softmax: every rule on the happy path, no diagnostics."""
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.launch(BLOCK)
@ph.autotune(BLOCK=[64, 128], N=[256])
@ph.aligned(N="BLOCK")
def softmax(X: ph.tensor[ph.f16][M, N], Y: ph.tensor[ph.f16][M, N]):
    row: ph.let = ph.ctx.block.x
    x: ph.let = ph.f32(X[row, :])
    mx: ph.let = ph.rowmax(x)
    e: ph.let = ph.exp(x - mx)
    total: ph.var[ph.tile[ph.f32][1, 1]] = 0.0
    for i in range(0, N, BLOCK):
        total += ph.rowsum(ph.f32(X[row, i:+BLOCK]))
    Y[row, :] = e / ph.rowsum(e) + total * 0.0
