"""Control flow beyond range loops and ifs (loops unrolled by
ph.static_range, helper functions inlined), and RoPE on interleaved pairs, for tests/test_gpu_ops.c
(on the GPU), tests/test_cpusim.c (the code generator on the CPU executor)
and tests/test_lang_ref.c (the interpreter against plain C), on random
inputs whose windows run past the tensors' edges."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BM=[16], BN=[32, 24])
def unrolled(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], R: ph.tensor[ph.f32][M, G]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for u in ph.static_range(4):               # the window moves by u; u weighs it
        acc += X[r0:+BM, c0 + u:+BN] * (u + 1)
    for u in ph.static_range(3, -1, -2):       # 3, then 1: a compile-time extent
        R[r0:+BM, ph.ctx.block.y * 2 + u // 2] = ph.rowsum(X[r0:+BM, c0:+u])
    Y[r0:+BM, c0:+BN] = acc


@ph.func
def clamp(x, lo, hi):
    return ph.min(ph.max(x, lo), hi)


@ph.func
def window_sum(T, r0, c0, BM, BN, taps):
    # a var, an unrolled loop, a tensor and compile-time extents from the caller
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for u in ph.static_range(taps):
        acc += clamp(T[r0:+BM, c0 + u:+BN], -1.0, 1.0)
    return acc


@ph.func
def put(Out, r0, c0, BM, BN, v):
    Out[r0:+BM, c0:+BN] = v


@ph.kernel
@ph.autotune(BM=[16], BN=[32])
def helpers(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    s: ph.let = window_sum(X, r0, c0, BM, BN, 3)
    t: ph.let = window_sum(X, r0, c0, BM, BN, 2) * n
    put(Y, r0, c0, BM, BN, s + clamp(t, hi=ph.f32(n // 10), lo=-2.0))


@ph.func
def rotate(a, b, c, s):
    return a * c - b * s


@ph.kernel
@ph.autotune(BP=[32, 64], UNROLL=[1, 2])
def rope(X: ph.tensor[ph.f32][P, 2], Cos: ph.tensor[ph.f32][P], Sin: ph.tensor[ph.f32][P],
         Y: ph.tensor[ph.f32][P, 2]):
    # pair p of a row is (x[2i], x[2i + 1]): the [T, D] tensor seen as P = T * D / 2 pairs
    for u in ph.static_range(UNROLL):
        p0: ph.let = ((ph.ctx.block.y * ph.ctx.grid.x + ph.ctx.block.x) * UNROLL + u) * BP
        c: ph.let = ph.reshape(Cos[p0:+BP], [BP, 1])
        s: ph.let = ph.reshape(Sin[p0:+BP], [BP, 1])
        even: ph.let = X[p0:+BP, 0:+1]
        odd: ph.let = X[p0:+BP, 1:+1]
        Y[p0:+BP, 0:+1] = rotate(even, odd, c, s)
        Y[p0:+BP, 1:+1] = rotate(odd, even, c, -s)
