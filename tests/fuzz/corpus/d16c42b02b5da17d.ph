import phobos.lang as ph


@ph.kernel
@ph.autotune(BR=[32, 64], BC=[32])
def k(X: ph.tensor[ph.f32][R, C], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BR
    acc: ph.var[ph.tile[ph.f32][BR, BC]] = 0.0
    t: ph.let = X[r0:+BR, 0:+BC]
    acc = X[r0:+32, 0:+64]
    acc += ph.iota(0) + ph.iota(1)
    u: ph.let = ph.iota(0) * 2
    X[r0:+BR, 0:+BC] = ph.where(ph.iota(1) < n, t, acc)
    X[r0, :] = t
