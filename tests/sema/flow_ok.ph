import phobos.lang as ph


# docs/language.md's unrolled loops, helpers and RoPE compile.
@ph.kernel
@ph.autotune(BM=[16], BN=[32])
def unrolled(X: ph.tensor[ph.f32][M, N], R: ph.tensor[ph.f32][M, 2], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for u in ph.static_range(4):                 # u = 0, 1, 2, 3: four copies of the body
        acc += X[r0:+BM, c0 + u:+BN] * (u + 1)
    for w in ph.static_range(3, -1, -2):         # w = 3, then 1
        R[r0:+BM, w // 2] = ph.rowsum(X[r0:+BM, c0:+w])    # w is compile-time: a window length
    Y[r0:+BM, c0:+BN] = acc


@ph.func
def rms(x, eps):
    return x * ph.rsqrt(ph.rowsum(x * x) / 64.0 + eps)


@ph.func
def store_scaled(Out, r0, v, k):
    Out[r0:+16, 0:+64] = v * k                       # a helper without a value, called as a statement


@ph.kernel
def norm(X: ph.tensor[ph.f32][M, 64], Y: ph.tensor[ph.f32][M, 64]):
    r0: ph.let = ph.ctx.block.x * 16
    store_scaled(Y, r0, rms(X[r0:+16, 0:+64], 1.0e-6), 2.0)


@ph.func
def rotate(a, b, c, s):
    return a * c - b * s


@ph.kernel
@ph.autotune(BP=[64])
def rope(X: ph.tensor[ph.f32][P, 2], Cos: ph.tensor[ph.f32][P], Sin: ph.tensor[ph.f32][P],
         Y: ph.tensor[ph.f32][P, 2]):
    p0: ph.let = ph.ctx.block.x * BP
    c: ph.let = ph.reshape(Cos[p0:+BP], [BP, 1])
    s: ph.let = ph.reshape(Sin[p0:+BP], [BP, 1])
    even: ph.let = X[p0:+BP, 0:+1]
    odd: ph.let = X[p0:+BP, 1:+1]
    Y[p0:+BP, 0:+1] = rotate(even, odd, c, s)       # x[2i] cos - x[2i + 1] sin
    Y[p0:+BP, 1:+1] = rotate(odd, even, c, -s)      # x[2i + 1] cos + x[2i] sin
