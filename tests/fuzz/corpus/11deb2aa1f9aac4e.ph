@ph.kernel
@ph.autotune(D=[64], BR=[32, 64])
def f(X: ph.tensor[ph.f16][R, D], n: ph.i32, k=2,) -> None:
    pass
