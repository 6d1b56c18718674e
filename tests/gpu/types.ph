"""Kernels for the 8-bit types (i8, u8, and fp8 at the end): conversions both ways with
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

# fp8 (docs/language.md, "fp8"): conversions into e4m3 and e5m2 past their
# largest values (saturating) and into their subnormals, out of them into
# f16, bf16, f32, i32 and i8, and between them; compared bit for bit.
@ph.kernel
@ph.autotune(BM=[16, 32], BN=[64])
def fp8cvt(X: ph.tensor[ph.f32][M, N], E: ph.tensor[ph.f8e4m3][M, N], F: ph.tensor[ph.f8e5m2][M, N],
           G: ph.tensor[ph.f8e4m3][M, N], H: ph.tensor[ph.f16][M, N], Y: ph.tensor[ph.f32][M, N],
           Z: ph.tensor[ph.i32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    E[r0:+BM, c0:+BN] = x * 300.0
    F[r0:+BM, c0:+BN] = x * 40000.0
    G[r0:+BM, c0:+BN] = ph.where(x > 0.0, x * 0.004, x * 0.00025)
    e: ph.let = ph.f8e4m3(x * 300.0)
    f: ph.let = ph.f8e5m2(x * 3.0)
    H[r0:+BM, c0:+BN] = ph.f16(e) + ph.f16(f)
    Y[r0:+BM, c0:+BN] = ph.f32(ph.f8e5m2(e)) - ph.f32(ph.f8e4m3(ph.bf16(x))) + ph.f8e4m3(ph.f8e5m2(x * 1.0e5))
    Z[r0:+BM, c0:+BN] = ph.i32(e) + ph.i32(ph.i8(ph.f8e5m2(x * 100.0))) + ph.i32(ph.f8e4m3(ph.i32(x * 200.0)))

# fp8 tiles kept as they are by selects and transposes, widened to f32 by
# arithmetic and reductions, stored from f32.
@ph.kernel
@ph.autotune(BM=[16, 32])
def fp8shape(A: ph.tensor[ph.f8e4m3][M, N], B: ph.tensor[ph.f8e5m2][M, N], Pick: ph.tensor[ph.f8e4m3][M, N],
             T: ph.tensor[ph.f8e5m2][N, M], S: ph.tensor[ph.f32][M, N], R: ph.tensor[ph.f32][M]):
    r0: ph.let = ph.ctx.block.x * BM
    a: ph.let = A[r0:+BM, 0:+64]
    b: ph.let = B[r0:+BM, 0:+64]
    Pick[r0:+BM, 0:+64] = ph.where(a > b, a, ph.f8e4m3(-0.75))
    T[0:+64, r0:+BM] = ph.transpose(b)
    S[r0:+BM, 0:+64] = a * 2.0 - b
    R[r0:+BM] = ph.rowmax(a) + ph.rowsum(b)

# fp8 dots: on the FMA engine (f8dot), and with @ph.tensorcore on mma.sync
# m16n8k32 (tcf8dot: e4m3 x e5m2, e4m3 x e4m3 through dot_t, and a K of 16
# the tensor cores do not take, beside).
@ph.kernel
@ph.autotune(BM=[16, 32], BN=[32])
def f8dot(A: ph.tensor[ph.f8e4m3][M, K], B: ph.tensor[ph.f8e5m2][K, N], C: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, K, 32):
        acc += ph.dot(A[r0:+BM, k:+32], B[k:+32, c0:+BN])
    C[r0:+BM, c0:+BN] = acc

@ph.kernel
@ph.tensorcore
@ph.autotune(BM=[16, 64], BN=[32, 64], BK=[32, 64], W=[128, 256])
@ph.launch(W)
def tcf8dot(A: ph.tensor[ph.f8e4m3][M, K], B: ph.tensor[ph.f8e5m2][K, N], Bt: ph.tensor[ph.f8e4m3][N, K],
            C: ph.tensor[ph.f32][M, N], D: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    acc_t: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, K, BK):
        a: ph.let = A[r0:+BM, k:+BK]
        acc += ph.dot(a, B[k:+BK, c0:+BN])
        acc_t += ph.dot_t(a, Bt[c0:+BN, k:+BK])
    C[r0:+BM, c0:+BN] = acc
    D[r0:+BM, c0:+BN] = acc_t + ph.dot(ph.f8e5m2(A[r0:+BM, 0:+16]), B[0:+16, c0:+BN])

# fp8 through the other memory paths: a gather of rows, a masked load
# whose other value saturates (1000.0 is 448 in e4m3), a masked store, an
# element read as a scalar, and a scatter of rows permuted in the block.
@ph.kernel
@ph.autotune(BM=[16])
def fp8mem(A: ph.tensor[ph.f8e4m3][M, N], I: ph.tensor[ph.i32][M], G: ph.tensor[ph.f8e4m3][M, N],
           H: ph.tensor[ph.f8e5m2][M, N], Y: ph.tensor[ph.f32][M, N], S: ph.tensor[ph.f8e4m3][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    idx: ph.let = (ph.reshape(I[r0:+BM], [BM, 1]) % M + M) % M
    g: ph.let = A[idx, 0:+64]
    G[r0:+BM, 0:+64] = g
    m: ph.let = ph.load(A[r0:+BM, 0:+64], mask=ph.iota(1, 64) < 40, other=1000.0)
    ph.store(H[r0:+BM, 0:+64], m, mask=ph.iota(0, BM) > 3)
    Y[r0:+BM, 0:+64] = m + A[r0, 3]
    S[r0 + ph.iota(0, BM) * 5 % BM, 0:+64] = ph.f8e4m3(g * 0.5)
