import phobos.lang as ph

@ph.kernel
def k(X: ph.tensor[ph.f32][N, 0], n: ph.f16, b, c: ph.i32 = 3, X: ph.i32, Y: ph.tensor[ph.bool][N], Z: ph.tensor[ph.f32][A, B, C], W: int, n2: ph.tensor[ph.f32][X]) -> int:
    pass
