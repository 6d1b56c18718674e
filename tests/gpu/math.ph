"""Kernels for the math built-ins (ph.tanh, ph.erf, ph.sigmoid, ph.pow,
ph.fma, ph.inf, ph.nan), checked as tests/gpu/ops.ph's are: each runs on the
GPU (tests/test_gpu_ops.c) or the CPU executor (tests/test_cpusim.c) and in
the interpreter on the same random inputs, and every tensor must come back
the same within the GPU's accuracy (docs/language.md, "Math"); fmas bit for
bit. Every 16th element and the few after it take special values (infinities,
NaN, -0.0, integers for pow's negative bases); the rest are the random
inputs scaled to reach the functions' saturation and pow's overflow."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[32, 40])
def smooth(X: ph.tensor[ph.f32][M, N], H: ph.tensor[ph.f16][M, N], T: ph.tensor[ph.f32][M, N],
           E: ph.tensor[ph.f32][M, N], S: ph.tensor[ph.f32][M, N], Th: ph.tensor[ph.f16][M, N],
           Eb: ph.tensor[ph.bf16][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    k: ph.let = ((r0 + ph.iota(0, BM)) * N + c0 + ph.iota(1, BN)) % 16
    v: ph.let = ph.where(k == 0, ph.inf, ph.where(k == 1, -ph.inf, ph.where(k == 2, ph.nan,
                ph.where(k == 3, -0.0, ph.where(k == 4, 1.0e-30, x * 3.0)))))
    T[r0:+BM, c0:+BN] = ph.tanh(v)
    E[r0:+BM, c0:+BN] = ph.erf(v)
    S[r0:+BM, c0:+BN] = ph.sigmoid(v * 20.0)
    h: ph.let = H[r0:+BM, c0:+BN]
    Th[r0:+BM, c0:+BN] = ph.tanh(h) + ph.sigmoid(h)
    Eb[r0:+BM, c0:+BN] = ph.erf(ph.bf16(v))


@ph.kernel
@ph.autotune(BM=[16], BN=[32])
def power(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], P: ph.tensor[ph.f32][M, N],
          Q: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    y: ph.let = Y[r0:+BM, c0:+BN]
    k: ph.let = ((r0 + ph.iota(0, BM)) * N + c0 + ph.iota(1, BN)) % 16
    base: ph.let = ph.where(k == 0, 0.0, ph.where(k == 1, -0.0, ph.where(k == 2, -ph.inf, ph.where(k == 3, ph.nan,
                   ph.where(k == 4, 1.0, ph.where(k == 5, -1.0, ph.where(k < 9, -2.0 * x, ph.abs(x) * 4.0)))))))
    expo: ph.let = ph.where(k < 9, ph.f32(ph.i32(y * 3.0)), y * 3.0)
    P[r0:+BM, c0:+BN] = ph.pow(base, expo)
    # C's cases by an exponent column: y = ±0, ±inf, NaN against the bases above
    e2: ph.let = ph.where(k == 9, 0.0, ph.where(k == 10, ph.inf, ph.where(k == 11, -ph.inf,
                 ph.where(k == 12, ph.nan, ph.where(k == 13, -3.0, 0.5)))))
    Q[r0:+BM, c0:+BN] = ph.pow(ph.where(k < 9, base, x), e2) + ph.pow(x * 40.0, 30.0)


@ph.kernel
@ph.autotune(BM=[16], BN=[32, 24])
def fmas(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], F: ph.tensor[ph.f32][M, N],
         G: ph.tensor[ph.f32][M, N], Hh: ph.tensor[ph.f16][M, N], s: ph.f32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    y: ph.let = Y[r0:+BM, c0:+BN]
    # a column times a row plus a tile, and a scalar: the operands broadcast together
    F[r0:+BM, c0:+BN] = ph.fma(X[r0:+BM, c0:+1], Y[r0, c0:+BN], x) + ph.fma(y, s, 1.0)
    # the product's rounding error, 0 if the fma were a multiply and an add
    G[r0:+BM, c0:+BN] = ph.fma(x, y, -(x * y)) * 1.0e6
    Hh[r0:+BM, c0:+BN] = ph.fma(ph.f16(x), ph.f16(y), ph.f16(x) * 0.5)
