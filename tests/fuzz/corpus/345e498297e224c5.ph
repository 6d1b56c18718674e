import phobos.lang as ph

@ph.kernel
@ph.launch(100)
@ph.foo
@ph.tensorcore()
@ph.autotune(B=[1, 1], X=[2], C=[])
@ph.aligned(M="B", N="Q")
@ph.autotune(D=[1])
@ph.tensorcore
@ph.kernel
def k(X: ph.tensor[ph.f32][N]):
    pass
