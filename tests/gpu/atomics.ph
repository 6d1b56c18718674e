"""ph.atomic_add, for tests/test_cpusim.c (the CPU executor) and
tests/test_gpu_ops.c (the GPU): the blocks of a grid add into overlapping
windows of f32 and i32 tensors, windows that cross the tensors' edges, from
every kind of layout (loads, slices of a reduction, splats, tensor-core
results with idle warps). The inputs are small integers, so every sum is
exact in any order and the results are compared with a plain C reference
element for element."""

import phobos.lang as ph


# Windows half a window apart, the first ones starting before the tensors
# and the last ones ending past them; the row and column sums are slices,
# held by several threads and added by one. With C0 5 no window's columns
# start at a multiple of 4 (element by element); with C0 4 every one does,
# and N is 52 (atomicharness.h): sm_90's vector adds, four floats each.
@ph.kernel
@ph.launch(NT)
@ph.autotune(BM=[16, 24], BN=[32], NT=[64, 96], C0=[5, 4])
def atomic2d(A: ph.tensor[ph.f32][M, N], B: ph.tensor[ph.i32][M, N], X: ph.tensor[ph.f32][M, N],
             Y: ph.tensor[ph.i32][M, N]):
    r0: ph.let = ph.ctx.block.y * (BM // 2) - 3
    c0: ph.let = ph.ctx.block.x * (BN // 2) - C0
    a: ph.let = A[r0:+BM, c0:+BN]
    b: ph.let = B[r0:+BM, c0:+BN]
    ph.atomic_add(X[r0:+BM, c0:+BN], a + ph.ctx.block.x)
    ph.atomic_add(X[r0:+BM, 0:+1], ph.rowsum(a))
    ph.atomic_add(Y[r0:+BM, c0:+BN], b * 3 + ph.iota(0))
    ph.atomic_add(Y[0:+1, c0:+BN], ph.colsum(b))
    ph.atomic_add(Y[r0 + 1, c0:+BN], 1)


# Rank-1 windows a third of a window apart; every block adds 1 to X[0] and
# to Y[its row of the grid], a one-element window of a block of threads.
@ph.kernel
@ph.autotune(BLOCK=[64, 100])
def atomic1d(A: ph.tensor[ph.f32][L], X: ph.tensor[ph.f32][L], Y: ph.tensor[ph.i32][L]):
    i0: ph.let = (ph.ctx.block.x + ph.ctx.grid.x * ph.ctx.block.y) * (BLOCK // 3) - 10
    a: ph.let = A[i0:+BLOCK]
    ph.atomic_add(X[i0:+BLOCK], a * 2.0)
    ph.atomic_add(Y[i0:+BLOCK], ph.i32(a) + ph.ctx.block.y)
    ph.atomic_add(X[0], 1.0)
    ph.atomic_add(Y[ph.ctx.block.y], 1)


# FlashAttention-2's dQ: each block adds the products of its slice of K
# into every window of rows, in a loop, from the tensor cores' registers
# (with 8 warps, most of them idle for a 16-row tile). Blocks along y do the
# same work, so every element is added to by several blocks.
@ph.kernel
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(BM=[16, 32], NT=[128, 256])
def atomicdot(P: ph.tensor[ph.f16][M, K], V: ph.tensor[ph.f16][K, 16], X: ph.tensor[ph.f32][M, 16], m_len: ph.i32):
    k0: ph.let = ph.ctx.block.x * 16
    v: ph.let = V[k0:+16, :]
    for r0 in range(-8, m_len, BM // 2):
        ph.atomic_add(X[r0:+BM, :], ph.dot(P[r0:+BM, k0:+16], v))


# The same from 64 x 64 tiles, 16 KB each: sm_90a adds them by its copy
# engine's bulk adds: a window of whole rows inside the tensor in one add
# (C0 0, N 64); a row each, rows before and past the tensor left out, where
# a window's rows are whole aligned 16-byte chunks inside the tensor (C0 0
# at the first and last windows; C0 4, N 68); element by element from
# shared memory where they are not (C0 2: not aligned; C0 8: past the last
# column). One or two warpgroups. The harness's m_len (140, M 100) makes the
# last window start past the last row. With a producer warp (W 1) the
# producer adds each tile the consumers staged (cg_store.c): on sm_90a a
# 32-column box at a time through an f32 tensor map, the engine leaving out
# what lies past the tensor, element by element where C0 is 2 and where the
# window starts before the tensor (row -8: the GPU faults on such a box).
@ph.kernel
@ph.warp_specialize(W)
@ph.tensorcore
@ph.launch(NT)
@ph.autotune(NT=[128, 256], C0=[0, 4, 2, 8], W=[0, 1])
def atomicdot_wide(P: ph.tensor[ph.f16][M, K], V: ph.tensor[ph.f16][K, N], X: ph.tensor[ph.f32][M, N], m_len: ph.i32):
    k0: ph.let = ph.ctx.block.x * 16
    v: ph.let = V[k0:+16, 0:+64]
    for r0 in range(-8, m_len, 32):
        ph.atomic_add(X[r0:+64, C0:+64], ph.dot(P[r0:+64, k0:+16], v))


# A window of X read, then added into, then used where the tensor cores'
# layout wants it: the use must see X as it was read. (A tensor the kernel
# never writes is loaded again in the layout a use wants; X is written.)
# One block, whose every thread adds only elements it read itself.
@ph.kernel
@ph.tensorcore
def atomicread(P: ph.tensor[ph.f16][16, 16], V: ph.tensor[ph.f16][16, 16], X: ph.tensor[ph.f32][16, 16],
               Y: ph.tensor[ph.f32][16, 16]):
    x: ph.let = X[0:+16, :]
    ph.atomic_add(X[0:+16, :], 1.0)
    Y[0:+16, :] = ph.dot(P[0:+16, :], V[0:+16, :]) + x
