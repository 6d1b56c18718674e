import phobos.lang as ph


# docs/language.md's unrolled loops compile.
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
