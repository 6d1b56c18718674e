import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    acc: ph.var[ph.f32] = 0.0
    cnt: ph.var[ph.i32] = 0
    other: ph.var[ph.i32] = 0
    for i in range(n, 2 * n, BR):
        inner: ph.var[ph.i32] = i
        inner += 1
        if i > 3:
            acc += 1.0
        elif i > 2:
            cnt = cnt + inner
        else:
            pass
    for j in range(4):
        pass
    X[0:+1, 0:+1] = acc + ph.f32(cnt + other)
