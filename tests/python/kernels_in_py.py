"""Kernels written in a .py file, for test_phobos.py: the decorator takes
each function's text to phc at its first launch. The line numbers of
`broken` and `nested`'s error are asserted there: move them with care."""

from __future__ import annotations

import phobos
import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[128, 256])
def axpy(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):
    i0: ph.let = ph.ctx.block.x * BLOCK
    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]


@phobos.kernel
@ph.autotune(N=[128, 256], BM=[16], T=[64, 128])
@ph.launch("T")   # a meta-parameter: a string here, a name to phc
def softmax(X: ph.tensor[ph.f16][M, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    x: ph.let = ph.f32(X[r0:+BM, :])
    e: ph.let = ph.exp(x - ph.rowmax(x))
    Y[r0:+BM, :] = e / ph.rowsum(e)


@ph.kernel
def broken(n: ph.i32):
    half: ph.let = n / 2   # line 30, the '/' at column 22


def nested():
    @ph.kernel
    def inner(n: ph.i32):
        x: ph.let = n / 2   # line 36, the '/' at column 23
    return inner
