import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    x: ph.let = 1
    x: ph.let = 2
    n: ph.let = 3
    R: ph.let = 3
    BR: ph.let = 3
    ph: ph.let = 3
    x = 4
    y = 4
    n = 4
    v: ph.var[ph.tile[ph.f32][BR, n]] = 0.0
    w: ph.var[ph.f16] = 0.0
    u: ph.var[ph.tile[ph.f32][BR, BC]]
    z: ph.let = undefined + 1
    z2: ph.let = z * 2
    q: ph.var[ph.tile[ph.f32][BR, 1]] = X[0:+BR, 0:+BC]
    for i in range(4):
        i = 1
        j: ph.let = 1
    j: ph.let = 2
    for x in range(3):
        pass
