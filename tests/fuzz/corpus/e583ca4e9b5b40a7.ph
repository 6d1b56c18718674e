import phobos.lang as ph

@ph.kernel
@ph.autotune(BR=[32], BC=[64])
def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):
    for i in range(0.5):
        pass
    for i in range(0, 4, 0):
        pass
    for i in range(0, 4, n):
        pass
    for i in [1, 2]:
        pass
    for n in range(3):
        pass
    if n:
        pass
    if X[0:+1, 0:+1] > 0.0:
        pass
    return 1
