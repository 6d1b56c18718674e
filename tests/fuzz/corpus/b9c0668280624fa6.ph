import phobos.lang as ph

@ph.kernel
def k(X: ph.tensor[ph.f32][N]):
    x: ph.let = X[0:+4] +
    y: ph.let = 1 / 2
