import phobos.lang as ph

@ph.kernel
@ph.aligned(N="B")
@ph.launch(T)
@ph.tensorcore
@ph.autotune(B=[16], T=[256])
def k(X: ph.tensor[ph.f32][N, 4], s: ph.f32):
    pass
