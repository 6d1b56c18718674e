import phobos.lang as ph

@ph.kernel
@ph.autotune(A=[1, 2], B=[-3, 4, 5])
def k(X: ph.tensor[ph.f32][N]):
    X[0:+1] = A + B
@ph.kernel
def plain(X: ph.tensor[ph.f32][N]):
    pass
