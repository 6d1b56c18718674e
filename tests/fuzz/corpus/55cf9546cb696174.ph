import phobos.lang as ph

@ph.kernel
@ph.autotune(D=[8], B=[4])
def k(X: ph.tensor[ph.f32][R, D]):
    r: ph.let = R
    d: ph.let = D
    t: ph.var[ph.tile[ph.f32][B * 2 - 4, D // 2]] = 1
    c: ph.var[ph.i32] = 0
    c += 2
    t = t * 2.0 + X[r - 1:+4, 4:+4]
    X[0:+B, :] = d
