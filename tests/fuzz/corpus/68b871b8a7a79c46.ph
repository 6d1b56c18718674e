import phobos.lang as pl
@pl.kernel
def k(X: pl.tensor[pl.f32][N]):
    X[0:+4] = pl.exp(1.0)
