import phobos.lang as ph

@ph.kernel
@ph.autotune(T=[64, 48])
@ph.launch(T)
def k(X: ph.tensor[ph.f32][N]):
    t: ph.let = X[0:+T - 50]
