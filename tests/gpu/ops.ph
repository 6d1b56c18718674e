"""Kernels that exercise the code generator's paths one at a time, for
tests/test_gpu_ops.c: each runs on the GPU and in the interpreter on the
same random inputs, and every tensor must come back the same. The dims are
chosen by the test so that windows run past the tensors' edges."""

import phobos.lang as ph


@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 48], BN=[32, 40], NT=[96, 128])
def colred(X: ph.tensor[ph.f32][M, N], S: ph.tensor[ph.f32][G, N], Mx: ph.tensor[ph.f32][G, N], Mn: ph.tensor[ph.f32][G, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    S[ph.ctx.block.x, c0:+BN] = ph.colsum(x)
    Mx[ph.ctx.block.x, c0:+BN] = ph.colmax(x)
    Mn[ph.ctx.block.x, c0:+BN] = ph.colmin(x)


@ph.kernel
@ph.launch(256)
@ph.autotune(BN=[1024, 1000])
def widerow(X: ph.tensor[ph.f32][M, N], S: ph.tensor[ph.f32][M, 1], Mn: ph.tensor[ph.f32][M, 1]):
    r0: ph.let = ph.ctx.block.x * 2
    x: ph.let = X[r0:+2, 0:+BN]
    S[r0:+2, 0:+1] = ph.rowsum(x)
    Mn[r0:+2, 0:+1] = ph.rowmin(x * 2.0 - 1.0)


@ph.kernel
@ph.autotune(BM=[16, 32], BN=[16, 24])
def transp(X: ph.tensor[ph.f16][M, N], Y: ph.tensor[ph.f16][N, M]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    Y[c0:+BN, r0:+BM] = ph.transpose(X[r0:+BM, c0:+BN])


@ph.kernel
@ph.autotune(BM=[8], BN=[64])
def masks(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], I: ph.tensor[ph.i32][M, N], n: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    x: ph.let = X[r0:+BM, 0:+BN]
    idx: ph.let = (r0 + ph.iota(0, BM)) * BN + ph.iota(1, BN)
    Y[r0:+BM, 0:+BN] = ph.where(idx < n, x, -x) + ph.f32(idx // 7 - idx % 5)
    I[r0:+BM, 0:+BN] = ph.i32(x * 10.0) // 3 + (idx - n) % 4


@ph.kernel
@ph.tensorcore
@ph.autotune(BM=[32, 64], BN=[32], BK=[16, 32])
def bdot(A: ph.tensor[ph.bf16][M, K], B: ph.tensor[ph.bf16][K, N], C: ph.tensor[ph.f32][M, N], k_len: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, k_len, BK):
        acc += ph.dot(A[r0:+BM, k:+BK], B[k:+BK, c0:+BN])
    C[r0:+BM, c0:+BN] = acc


# A dot whose A is computed (attention's P, from registers on sm_90a) and
# whose K, the tile of keys, is no swizzle width (48, 80 and 176 columns of
# f16): B [K, N] is read MN-major, its rows N wide whatever K is, so wgmma
# takes it; the last K tile runs past K (zeros read). P is S halved, exact
# in f32 and rounded to f16 alike everywhere (an exponential's last bit
# differs on the GPU and may round P's f16 the other way).
@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(BK=[48, 80, 176])
def pdot(S: ph.tensor[ph.f32][M, K], V: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * 64
    c0: ph.let = ph.ctx.block.y * 64
    acc: ph.var[ph.tile[ph.f32][64, 64]] = 0.0
    for k in range(0, K, BK):
        p: ph.let = ph.f16(S[r0:+64, k:+BK] * 0.5)
        acc += ph.dot(p, V[k:+BK, c0:+64])
    C[r0:+64, c0:+64] = acc


# Copies into shared-memory rings, each way the code generator has: a
# window inside the tensor (no test a chunk), one past an edge or before
# the start (zero-filled chunks), one whose start is no whole chunk
# (element by element, from k1); BK 48's rows of 6 chunks do not divide
# the block's threads; BK 64's tiles of A are 4 and 8 chunks a thread,
# whose copies inside the tensor walk a column of chunks.
@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(BM=[64], BN=[32], BK=[16, 48, 64], NT=[64, 128])
def ringdot(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][N, K], C: ph.tensor[ph.f32][M, N], k1: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM - 16
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, K, BK):
        acc += ph.dot_t(A[r0:+BM, k:+BK], B[c0:+BN, k:+BK])
    for k in range(k1, K, BK):
        acc += ph.dot_t(A[r0:+BM, k:+BK], B[c0:+BN, k:+BK])
    C[r0:+BM, c0:+BN] = acc


@ph.kernel
@ph.autotune(BM=[16], BN=[24])
def fdot(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][N, K], C: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    C[r0:+BM, c0:+BN] = ph.dot_t(A[r0:+BM, 0:+32], B[c0:+BN, 0:+32])


@ph.kernel
@ph.autotune(BN=[64, 100])
def vec1(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][M, N], Z: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * 4
    x: ph.let = X[0:+BN]
    y: ph.let = Y[r0:+4, 0:+BN]
    Z[r0:+4, 0:+BN] = ph.exp(y - x) * ph.sqrt(ph.abs(x)) + ph.max(x, y) / (1.0 + ph.abs(y))


@ph.kernel
def ctrl(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], n: ph.i32):
    b: ph.let = ph.ctx.block.x
    if b % 3 == 2:
        return
    s: ph.var[ph.tile[ph.f32][32]] = 0.0
    for i in range(b, n, 2):
        x: ph.let = X[i * 4:+32]
        if i % 4 == 0:
            s += x
        elif i % 4 == 1:
            s = ph.max(s, x)
        else:
            s -= x * 0.5
    Y[b * 32:+32] = s


# The FMA dot path (f32, no @ph.tensorcore) inside a K loop whose length is
# not a multiple of BK, over shapes that are and are not powers of two and
# every warp split of 1, 2, 4 and 8 warps: A @ B, A @ B^T and A^T @ B.
@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 48], BN=[16, 24], BK=[12, 16], NT=[32, 64, 128, 256])
def fmadot(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], C: ph.tensor[ph.f32][M, N], k_len: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, k_len, BK):
        acc += ph.dot(A[r0:+BM, k:+BK], B[k:+BK, c0:+BN])
    C[r0:+BM, c0:+BN] = acc


@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 48], BN=[16, 24], BK=[12, 16], NT=[32, 128])
def fmadot_t(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][N, K], C: ph.tensor[ph.f32][M, N], k_len: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, k_len, BK):
        acc += ph.dot_t(A[r0:+BM, k:+BK], B[c0:+BN, k:+BK])
    C[r0:+BM, c0:+BN] = acc


@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 48], BN=[16, 24], BK=[12, 16], NT=[64, 256])
def fmadot_tr(A: ph.tensor[ph.f32][K, M], B: ph.tensor[ph.f32][K, N], C: ph.tensor[ph.f32][M, N], k_len: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, k_len, BK):
        acc += ph.dot(ph.transpose(A[k:+BK, r0:+BM]), B[k:+BK, c0:+BN])
    C[r0:+BM, c0:+BN] = acc


# Float // and % on operands built to be hard, one kind per column mod 8:
# random pairs; quotients near 1e9 (past 2^29), 1e60 and 1e76; subnormal
# divisors; small integers (signed zeros, zero divisors); multiples of
# 0.1, -0.3 and 0.7; inf, NaN and zeros. Every element must come back bit
# for bit what the interpreter gives.
@ph.kernel
@ph.autotune(BN=[64])
def fmods(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], Q: ph.tensor[ph.f32][M, N], R: ph.tensor[ph.f32][M, N]):
    r0: ph.let = (ph.ctx.block.x * 3 + ph.ctx.block.y) * 4
    x: ph.let = X[r0:+4, 0:+BN]
    y: ph.let = Y[r0:+4, 0:+BN]
    idx: ph.let = (r0 + ph.iota(0, 4)) * BN + ph.iota(1, BN)
    kind: ph.let = ph.iota(1, BN) % 8
    nan: ph.let = (x - x) / (y - y)
    sa: ph.let = ph.where(idx % 5 == 0, x * 1.0e38 * 1.0e38, ph.where(idx % 5 == 1, nan, ph.where(idx % 5 == 2, x * 0.0, x)))
    sb: ph.let = ph.where(idx % 4 == 0, y * 1.0e38 * 1.0e38, ph.where(idx % 4 == 1, nan, ph.where(idx % 4 == 2, y * 0.0, y)))
    tenths: ph.let = ph.where(idx % 3 == 0, 0.1, ph.where(idx % 3 == 1, -0.3, 0.7))
    a: ph.let = ph.where(kind == 0, x, ph.where(kind == 1, x * 1.0e9, ph.where(kind == 2, x * 1.0e30,
                ph.where(kind == 3, x * 1.0e38, ph.where(kind == 4, x * 1.0e-39,
                ph.where(kind == 5, -ph.f32(6 - idx % 13), ph.where(kind == 6, ph.f32(idx % 17 - 8), sa)))))))
    b: ph.let = ph.where(kind < 2, y, ph.where(kind == 2, y * 1.0e-30, ph.where(kind == 3, y * 1.0e-38,
                ph.where(kind == 4, y * 1.0e-43, ph.where(kind == 5, ph.f32(idx % 7 - 3), ph.where(kind == 6, tenths, sb))))))
    Q[r0:+4, 0:+BN] = a // b
    R[r0:+4, 0:+BN] = a % b


# max and min where only the zeros' signs and NaNs decide: elementwise on
# signed zeros, NaN and numbers in every pairing, and row and column
# reductions over tiles of zeros of mixed and of single signs (rows of
# -0.0 alone, one +0.0 among them) and of NaN with numbers. -0.0 is below
# +0.0 and a NaN loses to a number, whatever the order (a NaN meets no NaN,
# whose bits would be the hardware's): every element must
# come back bit for bit what the interpreter gives.
@ph.kernel
@ph.autotune(BN=[64])
def zeromax(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], E: ph.tensor[ph.f32][M, N], F: ph.tensor[ph.f32][M, N],
            R: ph.tensor[ph.f32][M, 4], C: ph.tensor[ph.f32][M, N]):
    r0: ph.let = (ph.ctx.block.x * 3 + ph.ctx.block.y) * 4
    x: ph.let = X[r0:+4, 0:+BN]
    y: ph.let = Y[r0:+4, 0:+BN]
    idx: ph.let = (r0 + ph.iota(0, 4)) * BN + ph.iota(1, BN)
    nan: ph.let = (x - x) / (y - y)
    zx: ph.let = x * 0.0
    zy: ph.let = y * 0.0
    a: ph.let = ph.where(idx % 4 == 0, zx, ph.where(idx % 4 == 1, nan, ph.where(idx % 4 == 2, -zx, x)))
    # a NaN in b never meets one in a (idx % 20 == 17): NaN results' bits are the hardware's
    b: ph.let = ph.where(idx % 20 == 17, y, ph.where(idx % 5 == 0, zy, ph.where(idx % 5 == 1, -zy,
                ph.where(idx % 5 == 2, nan, ph.where(idx % 5 == 3, -zx, y)))))
    E[r0:+4, 0:+BN] = ph.max(a, b)
    F[r0:+4, 0:+BN] = ph.min(a, b)
    neg: ph.let = -ph.abs(zx)
    lone: ph.let = ph.where(ph.iota(1, BN) == (r0 + ph.iota(0, 4)) % BN, -neg, neg)   # one +0.0 a row
    R[r0:+4, 0:+1] = ph.rowmax(zx)
    R[r0:+4, 1:+1] = ph.rowmax(neg)
    R[r0:+4, 2:+1] = ph.rowmin(lone)
    R[r0:+4, 3:+1] = ph.rowmax(ph.where(idx % 3 == 0, neg, nan))
    row: ph.let = ph.iota(0, 4)
    C[r0:+4, 0:+BN] = ph.where(row == 0, ph.colmax(lone), ph.where(row == 1, ph.colmin(neg),
                      ph.where(row == 2, ph.colmax(b), ph.colmin(-b))))


# Integer edges on operands built from the random ones, one kind per column
# mod 4: dividends as they are, times 10^8 (past i32: wrapped), INT32_MIN,
# and random ones again; divisors 0, -1 and random (which holds zeros too)
# by element. // and % by zero give 0 and INT32_MIN // -1 wraps; W holds
# ph.i32 of floats past i32's range and of NaN (saturating, NaN -> 0), abs
# and negation of INT32_MIN, and wrapping products.
@ph.kernel
@ph.autotune(BN=[64])
def idiv0(X: ph.tensor[ph.i32][M, N], Y: ph.tensor[ph.i32][M, N], F: ph.tensor[ph.f32][M, N],
          Q: ph.tensor[ph.i32][M, N], R: ph.tensor[ph.i32][M, N], W: ph.tensor[ph.i32][M, N]):
    r0: ph.let = (ph.ctx.block.x * 3 + ph.ctx.block.y) * 4
    x: ph.let = X[r0:+4, 0:+BN]
    y: ph.let = Y[r0:+4, 0:+BN]
    f: ph.let = F[r0:+4, 0:+BN]
    idx: ph.let = (r0 + ph.iota(0, 4)) * BN + ph.iota(1, BN)
    kind: ph.let = ph.iota(1, BN) % 4
    a: ph.let = ph.where(kind == 1, x * 100000000, ph.where(kind == 2, -2147483647 - 1, x))
    b: ph.let = ph.where(idx % 3 == 0, 0, ph.where(idx % 3 == 1, -1, y))
    Q[r0:+4, 0:+BN] = a // b
    R[r0:+4, 0:+BN] = a % b
    nan: ph.let = (f - f) / (f - f)
    big: ph.let = ph.where(idx % 5 == 0, nan, f * 3.0e9)
    W[r0:+4, 0:+BN] = ph.where(kind == 0, ph.i32(big), ph.where(kind == 1, ph.abs(a),
                      ph.where(kind == 2, ph.where(idx % 2 == 0, ph.abs(a), -a), a * a + y)))


# argmax and argmin along both axes, across warp counts and tiles past the
# tensors' edges: f32 values rounded to a few levels (ties: the smallest
# index wins) with NaNs in some rows (the first NaN wins), f16 and i32
# (ties again). Row results go to a rank-1 window too, as [BM, 1].
@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 12], BN=[64, 40], NT=[32, 128, 256])
def argred(X: ph.tensor[ph.f32][M, N], H: ph.tensor[ph.f16][M, N], I: ph.tensor[ph.i32][M, N],
           RA: ph.tensor[ph.i32][M, G], CA: ph.tensor[ph.i32][G, N], V: ph.tensor[ph.i32][L]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    idx: ph.let = (r0 + ph.iota(0, BM)) * 7 + c0 + ph.iota(1, BN)
    nan: ph.let = (x - x) / (x - x)
    q: ph.let = ph.where(idx % 23 == 4 and ph.iota(0, BM) % 3 == 0, nan, ph.f32(ph.i32(x * 2.0)))
    h: ph.let = H[r0:+BM, c0:+BN]
    i: ph.let = I[r0:+BM, c0:+BN] // 10
    k: ph.let = ph.ctx.block.y * 6
    RA[r0:+BM, k] = ph.argmax(q, 1)
    RA[r0:+BM, k + 1] = ph.argmin(q, 1)
    RA[r0:+BM, k + 2] = ph.argmax(h, 1)
    RA[r0:+BM, k + 3] = ph.argmin(h, 1)
    RA[r0:+BM, k + 4] = ph.argmax(i, 1)
    RA[r0:+BM, k + 5] = ph.argmin(i, 1)
    j: ph.let = ph.ctx.block.x * 6
    CA[j, c0:+BN] = ph.argmax(q, 0)
    CA[j + 1, c0:+BN] = ph.argmin(q, 0)
    CA[j + 2, c0:+BN] = ph.argmax(h, 0)
    CA[j + 3, c0:+BN] = ph.argmin(-h, 0)
    CA[j + 4, c0:+BN] = ph.argmax(i, 0)
    CA[j + 5, c0:+BN] = ph.argmin(i, 0) + ph.argmax(ph.rowsum(i), 0)
    V[(ph.ctx.block.y * 4 + ph.ctx.block.x) * BM:+BM] = ph.argmax(q, 1)


# Vectors reshaped between [n], [1, n] and [n, 1], and reductions stored
# into rank-1 windows (a [BM, 1] and a [1, 32] result).
@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 24], NT=[32, 128])
def vecshape(X: ph.tensor[ph.f32][M, N], V: ph.tensor[ph.f32][L], T: ph.tensor[ph.f32][M, N],
             U: ph.tensor[ph.f32][L], W: ph.tensor[ph.f32][L]):
    b: ph.let = ph.ctx.block.y * 4 + ph.ctx.block.x
    r0: ph.let = b * BM
    x: ph.let = X[r0:+BM, 0:+32]
    v: ph.let = V[r0:+BM]
    T[r0:+BM, 0:+32] = x * ph.reshape(v, [BM, 1]) + ph.reshape(ph.colmax(x), [32])
    T[r0:+BM, 32:+1] = ph.reshape(ph.reshape(ph.rowsum(x), [1, BM]), [BM, 1])
    T[r0:+BM, 33:+1] = ph.reshape(ph.reshape(v, [1, BM]), [BM, 1]) * 2.0
    U[r0:+BM] = ph.rowmax(x) + ph.rowmin(x)
    W[b * 32:+32] = ph.colsum(x)
    W[b * 32 + 400:+32] = ph.reshape(ph.colmin(x), [32])


# Inclusive prefix sums along both axes: f32, f16 (summed in f32, each
# rounded once) and i32, across warp counts and tiles past the edges, and
# the prefix sums of a reduction's column (of integers: exact in any
# order). Summed in index order everywhere, so compared bit for bit.
@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 12], BN=[64, 40], NT=[32, 128])
def scan(X: ph.tensor[ph.f32][M, N], H: ph.tensor[ph.f16][M, N], I: ph.tensor[ph.i32][M, N],
         SR: ph.tensor[ph.f32][M, N], SC: ph.tensor[ph.f32][M, N], HR: ph.tensor[ph.f16][M, N],
         IC: ph.tensor[ph.i32][M, N], RS: ph.tensor[ph.f32][M, G]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    x: ph.let = X[r0:+BM, c0:+BN]
    SR[r0:+BM, c0:+BN] = ph.cumsum(x, 1)
    SC[r0:+BM, c0:+BN] = ph.cumsum(x, 0)
    HR[r0:+BM, c0:+BN] = ph.cumsum(H[r0:+BM, c0:+BN], 1)
    IC[r0:+BM, c0:+BN] = ph.cumsum(I[r0:+BM, c0:+BN], 0) + ph.cumsum(I[r0:+BM, c0:+BN], 1)
    RS[r0:+BM, ph.ctx.block.y] = ph.cumsum(ph.rowsum(ph.f32(ph.i32(x * 8.0))), 0)


# argmax, argmin and cumsum of a tensor-core dot's result (its engine's
# layout, not a blocked one), on small integers so that every sum is exact
# in any order and the ties are the same everywhere.
@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(BM=[32, 64], BN=[32], NT=[64, 128])
def argdot(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], RA: ph.tensor[ph.i32][M, G],
           CA: ph.tensor[ph.i32][G, N], S: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    a: ph.let = ph.f16(ph.i32(A[r0:+BM, 0:+32] * 2.0))
    b: ph.let = ph.f16(ph.i32(B[0:+32, c0:+BN] * 2.0))
    d: ph.let = ph.dot(a, b)
    RA[r0:+BM, ph.ctx.block.y * 2] = ph.argmax(d, 1)
    RA[r0:+BM, ph.ctx.block.y * 2 + 1] = ph.argmin(d, 1)
    CA[ph.ctx.block.x * 2, c0:+BN] = ph.argmax(d, 0)
    CA[ph.ctx.block.x * 2 + 1, c0:+BN] = ph.argmin(d, 0)
    S[r0:+BM, c0:+BN] = ph.cumsum(d, 1) + ph.cumsum(d, 0)
