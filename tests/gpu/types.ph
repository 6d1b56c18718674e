"""Kernels for the 8-bit integer types (i8, u8): conversions both ways with
their wrap and saturation rules, arithmetic widened to i32, selects and
shape ops kept narrow, and integer dots (i8 x i8 -> i32) on the FMA engine
and (tcidot) on the tensor cores. Run by test_cpusim and test_gpu_ops
against the interpreter (docs/language.md, "8-bit integers")."""
import phobos.lang as ph

@ph.kernel
@ph.autotune(BM=[16, 32], BN=[64, 128])
def narrow(X: ph.tensor[ph.f32][M, N], I: ph.tensor[ph.i32][M, N], S: ph.tensor[ph.i8][M, N],
           U: ph.tensor[ph.u8][M, N], W: ph.tensor[ph.i8][M, N], F: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN] * 80.0
    S[r0:+BM, c0:+BN] = ph.i8(x)
    U[r0:+BM, c0:+BN] = x
    W[r0:+BM, c0:+BN] = ph.i8(I[r0:+BM, c0:+BN])
    i: ph.let = I[r0:+BM, c0:+BN]
    F[r0:+BM, c0:+BN] = ph.f32(ph.i8(i)) + ph.u8(i) + ph.f32(ph.u8(x))

@ph.kernel
@ph.autotune(BM=[16, 32])
def widen(A: ph.tensor[ph.i8][M, N], B: ph.tensor[ph.u8][M, N], Sum: ph.tensor[ph.i32][M, N],
          Pick: ph.tensor[ph.i8][M, N], T: ph.tensor[ph.i8][N, M], R: ph.tensor[ph.i32][M]):
    r0: ph.let = ph.ctx.block.x * BM
    a: ph.let = A[r0:+BM, 0:+64]
    b: ph.let = B[r0:+BM, 0:+64]
    Sum[r0:+BM, 0:+64] = a * 3 - b + (-a)
    Pick[r0:+BM, 0:+64] = ph.where(a > b, a, ph.i8(-5))
    T[0:+64, r0:+BM] = ph.transpose(a)
    R[r0:+BM] = ph.rowsum(a) + ph.rowmax(b)

@ph.kernel
@ph.autotune(BM=[16, 32], BN=[32, 64])
def idot(A: ph.tensor[ph.i8][M, K], B: ph.tensor[ph.i8][K, N], C: ph.tensor[ph.i32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.i32][BM, BN]] = 0
    for k in range(0, K, 32):
        acc += ph.dot(A[r0:+BM, k:+32], B[k:+32, c0:+BN])
    C[r0:+BM, c0:+BN] = acc

@ph.kernel
@ph.tensorcore
@ph.autotune(BM=[16, 64], BN=[32, 64], BK=[32, 64], W=[128, 256])
@ph.launch(W)
def tcidot(A: ph.tensor[ph.i8][M, K], B: ph.tensor[ph.i8][K, N], Bt: ph.tensor[ph.i8][N, K],
           C: ph.tensor[ph.i32][M, N], D: ph.tensor[ph.i32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.i32][BM, BN]] = 0
    acc_t: ph.var[ph.tile[ph.i32][BM, BN]] = 0
    for k in range(0, K, BK):
        a: ph.let = A[r0:+BM, k:+BK]
        acc += ph.dot(a, B[k:+BK, c0:+BN])
        acc_t += ph.dot_t(a, Bt[c0:+BN, k:+BK])
    C[r0:+BM, c0:+BN] = acc
    D[r0:+BM, c0:+BN] = acc_t + ph.dot(ph.i8(A[r0:+BM, 0:+16]), B[0:+16, c0:+BN])
