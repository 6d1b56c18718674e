import phobos.lang as ph


# @ph.func helpers: what they must be.
@ph.func
def twice(x):
    return x * 2.0


@ph.func
def early(x):
    if x > 0:
        return
    return x


@ph.func
def typed(x: ph.f32, y=1):
    return x


@ph.func
def nothing(T, r0):
    T[r0:+4] = 1.0


@ph.func
def loop_a(x):
    return loop_b(x)


@ph.func
def loop_b(x):
    return loop_a(x)


@ph.func
def peek(x):
    return x + r0


@ph.kernel
@ph.autotune(B=[4])
def k(X: ph.tensor[ph.f32][N], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * B
    a: ph.let = twice(X[r0:+B], 1)
    b: ph.let = twice(y=1.0)
    c: ph.let = nothing(X, r0)
    d: ph.let = loop_a(1.0)
    e: ph.let = peek(1)
    f: ph.let = twice(ph.iota(1))
    g: ph.let = twice(x=2.0, x=3.0)
    h: ph.let = twice(X)


@ph.kernel
@ph.func
def both(x):
    pass


@ph.func
@ph.kernel
def other(x) -> ph.f32:
    return x
