import phobos.lang as ph


# ph.static_range: what its arguments must be.
@ph.kernel
@ph.autotune(B=[4])
def k(X: ph.tensor[ph.f32][N], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * B
    for i in ph.static_range(n):
        pass
    for i in ph.static_range(0, 8, 0):
        pass
    for i in ph.static_range(0, 100000):
        X[r0:+B] = 1.0
    for i in ph.static_range(1, 2, 3, 4):
        pass
    for i in ph.static_range(stop=4):
        pass
    for r0 in ph.static_range(4):
        pass
    for i in ph.static_range(4):
        i = 2
    for i in ph.static_range(3):
        for j in ph.static_range(200):
            for q in ph.static_range(200):
                X[r0:+B] = 1.0
    for i in ph.static_range(2):
        X[r0 + i:+B] = ph.iota(0, i)
