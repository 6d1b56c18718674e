"""while loops, for tests/test_gpu_ops.c (on the GPU) and tests/test_cpusim.c
(the code generator on the CPU executor): trip counts read from tensors (zero
included), scalar and tile vars carried, loops nested both ways with ifs and
an early return inside, a dot on the tensor cores in a while, two in a for
loop (one written out at every step), and a chase through a tensor of links, on random inputs whose windows run past the
tensors' edges; ph.device_assert with conditions that hold and one
ph.device_print, which leave the results alone."""

import phobos.lang as ph


@ph.kernel
@ph.autotune(BN=[32, 16])
def steps(P: ph.tensor[ph.i32][M], X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N],
          C: ph.tensor[ph.i32][M]):
    b: ph.let = ph.ctx.block.x
    c0: ph.let = ph.ctx.block.y * BN
    n: ph.var[ph.i32] = 0
    acc: ph.var[ph.tile[ph.f32][1, BN]] = 0.0
    while n < ph.abs(P[b]) % 9:                  # 0 to 8 iterations, read from P
        acc += X[b + n, c0:+BN] * (n + 1)
        n += 1
    ph.device_assert(n <= 8 and n >= 0, "n out of range")          # asserts that hold: the launch goes on
    ph.device_assert(acc * 0.0 == 0.0, "acc is not finite")
    if ph.ctx.block.y == 0:
        C[b] = n
    Y[b, c0:+BN] = acc


@ph.kernel
@ph.autotune(BM=[16], BN=[32])
def nested(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N], lim: ph.i32):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    k: ph.var[ph.i32] = 0
    while k * 3 < lim + ph.ctx.block.x:
        for j in range(0, k % 4):
            acc += X[r0 + j:+BM, c0:+BN]
        if k == 7:
            acc = acc * 0.5
        w: ph.var[ph.i32] = k
        while w > 2:                             # an inner while, its trip count the outer's counter
            acc += ph.rowsum(X[r0:+BM, c0 + w:+BN]) * 0.01
            w -= 3
        k += 1
    Y[r0:+BM, c0:+BN] = acc


@ph.kernel
@ph.autotune(BM=[16], BN=[32])
def early(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 1.0
    k: ph.var[ph.i32] = 0
    while k < 12:
        if X[r0 + k, c0] > 0.9:                  # a data-dependent exit: the block stores and ends
            Y[r0:+BM, c0:+BN] = acc + 100.0
            return
        acc = acc + X[r0:+BM, c0 + k:+BN]
        k += 1
    Y[r0:+BM, c0:+BN] = acc


@ph.kernel
@ph.tensorcore
@ph.autotune(BM=[32], BN=[32], BK=[16])
def wdot(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], Cm: ph.tensor[ph.f32][M, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    k: ph.var[ph.i32] = 0
    while k < K:                                 # a counted loop written as a while
        acc += ph.dot(A[r0:+BM, k:+BK], B[k:+BK, c0:+BN])
        k += BK
    Cm[r0:+BM, c0:+BN] = acc


@ph.kernel
def chase(L: ph.tensor[ph.i32][M], H: ph.tensor[ph.i32][M, 2]):
    b: ph.let = ph.ctx.block.x * 3 + ph.ctx.block.y
    j: ph.var[ph.i32] = b
    hops: ph.var[ph.i32] = 0
    while L[j] > 0 and hops < 6:                 # follow the links while they point forward
        j = (j + L[j]) % M
        hops += 1
    if b == 0:                                   # one line on stdout: pid (0, 0, 0) chase 0 j hops
        ph.device_print("chase", b, j, hops)
    H[b, 0] = j
    H[b, 1] = hops


# Two tensor-core dots a step of a for loop: one summed over the steps, one
# written out at every step, into rows of its own (sm_90a issues the written
# one first and waits for it before the other issues, so its store runs
# while the other dot does: wgmma_issue.c). Each step's rows are a whole
# grid of blocks apart: no two blocks' windows overlap, past M either.
@ph.kernel
@ph.tensorcore
@ph.launch(128)
@ph.autotune(BM=[64], BN=[64], BK=[16, 32])
def wdot_out(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], B2: ph.tensor[ph.f16][K, N],
             Cm: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][R, N]):
    r0: ph.let = ph.ctx.block.x * BM
    c0: ph.let = ph.ctx.block.y * BN
    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0
    for k in range(0, K, BK):
        a: ph.let = A[r0:+BM, k:+BK]
        acc += ph.dot(a, B[k:+BK, c0:+BN])
        Y[k // BK * (ph.ctx.grid.x * BM) + r0:+BM, c0:+BN] = ph.dot(a, B2[k:+BK, c0:+BN])
    Cm[r0:+BM, c0:+BN] = acc
