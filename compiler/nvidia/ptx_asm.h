/* ptx_asm.h: the PTX that LLVM 19's NVPTX back end has no intrinsic for
 * (wgmma, the async proxy's fences), as inline assembly written in one
 * place (ptx_asm.c). Each call emits one asm statement with side effects
 * and a memory clobber, so LLVM keeps it in program order with the shared
 * memory accesses around it. */
#ifndef PHC_NVIDIA_PTX_ASM_H
#define PHC_NVIDIA_PTX_ASM_H

#include "codegen/cg.h"

#pragma GCC visibility push(hidden)

/* fence.proxy.async.shared::cta: the thread's ordinary shared-memory
 * accesses ordered with the async proxy's (wgmma operand reads, bulk
 * copies) that follow. */
void ptx_fence_proxy_async(Cg *c);

/* wgmma.fence.sync.aligned: registers written before it (accumulators,
 * register A operands) are seen by the wgmma that follow. */
void ptx_wgmma_fence(Cg *c);
/* wgmma.commit_group.sync.aligned: the wgmma issued since the last commit form a group. */
void ptx_wgmma_commit(Cg *c);
/* setmaxnreg.inc / .dec (sm_90a): this warpgroup's registers a thread
 * become regs (a multiple of 8 from 24 to 256), from or to the block's pool */
void ptx_setmaxnreg(Cg *c, bool inc, int regs);
/* wgmma.wait_group.sync.aligned pending: until at most pending groups are
 * in flight. acc[0..n) are the accumulator registers of the waited
 * groups, passed through the statement (tied), so nothing reads them
 * before it; they are replaced by its results. */
void ptx_wgmma_wait(Cg *c, int pending, LLVMValueRef *acc, int n);
/* wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16|bf16}: acc[0..n/2)
 * (f32, the thread's accumulator slots) += A (64 x 16 from descriptor
 * da, K-major, or M-major where a_mn_major) times B (16 x n from descriptor db, MN-major where
 * b_mn_major), replaced in place by the results; without accumulate
 * (scale-d 0) acc = A B, whatever acc held (undef is fine). */
void ptx_wgmma_mma(Cg *c, int n, bool bf16, LLVMValueRef da, bool a_mn_major, LLVMValueRef db, bool b_mn_major, bool accumulate,
                   LLVMValueRef *acc);
/* The same with A from registers: a[0..4) (i32, two 16-bit elements
 * each) are the thread's A fragment of rows 16w..16w+15 (w its warp in
 * the warpgroup) and 16 columns, in mma.sync m16n8k16's A order. */
void ptx_wgmma_mma_regs(Cg *c, int n, bool bf16, const LLVMValueRef a[4], LLVMValueRef db, bool b_mn_major, bool accumulate,
                        LLVMValueRef *acc);
/* wgmma.fence with regs[0..n) (i32 or f32, n <= 64) passed through it
 * (tied): they are written before the fence, and the wgmma that read the
 * results come after it, as register A operands and accumulators must be. */
void ptx_wgmma_fence_regs(Cg *c, LLVMValueRef *regs, int n);
/* wgmma.wait_group.sync.aligned pending with regs[0..n) (i32 or f32, any
 * n) tied through it: the accumulators of the groups it completes and the
 * register A operands they read, which nothing may touch before. One
 * instruction per 64 registers: a repeated wait is done at once. */
void ptx_wgmma_wait_regs(Cg *c, int pending, LLVMValueRef *regs, int n);
/* mma.sync.aligned.m16n8k32.row.col.f32.{e4m3|e5m2}.{e4m3|e5m2}.f32 (PTX
 * ISA 8.4, sm_89 and up; codegen_emit then writes .version 8.4): acc[0..4)
 * (f32) += A (a[0..4), four fp8 each, s8's fragment order) times B
 * (b[0..2)), replaced in place by the results. */
void ptx_mma_f8(Cg *c, bool a_e5m2, bool b_e5m2, const LLVMValueRef a[4], const LLVMValueRef b[2], LLVMValueRef *acc);

/* red.global.add.v{n}.f32 (n 2 or 4; sm_90, PTX ISA 8.1): v[0..n) (f32)
 * added to the n floats at global address addr (i64, 4n-byte aligned),
 * each element atomically as red.global.add.f32 adds one, in one
 * instruction (codegen_emit then writes .version 8.4). */
void ptx_red_add_f32(Cg *c, LLVMValueRef addr, const LLVMValueRef *v, int n);
/* cp.reduce.async.bulk .add.f32: bytes (a multiple of 16) of f32 at
 * shared address shared_at (i32) added into those at global address
 * global_at (i64), both 16-byte aligned, each float atomically; committed
 * as a bulk group, not waited for. */
void ptx_bulk_add_f32(Cg *c, LLVMValueRef global_at, LLVMValueRef shared_at, int bytes);
/* cp.reduce.async.bulk.tensor.2d .add, tile mode: the box of f32 tensor
 * map `map` (the parameter's generic address) at column x, row y (i32)
 * added from shared src (32-bit), laid out as the map's swizzle; elements
 * outside the tensor are left alone. Committed as a bulk group. */
void ptx_bulk_tensor_add_f32(Cg *c, LLVMValueRef map, LLVMValueRef x, LLVMValueRef y, LLVMValueRef src);
/* cp.async.bulk.wait_group.read 0: the thread's bulk adds have read their
 * shared bytes (not yet landed: ptx_bulk_drain). */
void ptx_bulk_wait_reads(Cg *c);
/* cp.async.bulk.wait_group 0: the thread's bulk adds complete. */
void ptx_bulk_drain(Cg *c);

/* bar.arrive id, count: this thread counts towards named barrier id's
 * count threads without waiting for the others (LLVM 19 has no intrinsic) */
void ptx_barrier_arrive(Cg *c, LLVMValueRef id, int count);

/* isa.c: a consumer warpgroup's turn at the wgmma (IrFunc.turns): waited
 * for before it issues a dot, passed on once issued; nothing where the
 * kernel's warpgroups do not take turns */
void nvidia_turn_wait(Cg *c);
void nvidia_turn_pass(Cg *c);

/* Shared-memory addresses below are i32 offsets in the shared window
 * (ptx_shared_address). */
LLVMValueRef ptx_shared_address(Cg *c, LLVMValueRef ptr3);
/* fence.acq_rel.cta: also a point ptxas moves no wgmma wait above. */
void ptx_fence_cta(Cg *c);
/* fence.mbarrier_init.release.cluster: initialised mbarriers visible to the async proxy. */
void ptx_fence_mbarrier_init(Cg *c);
/* mbarrier.expect_tx: bytes more to arrive at bar before its phase completes. */
void ptx_mbarrier_expect_tx(Cg *c, LLVMValueRef bar, LLVMValueRef bytes);
/* mbarrier.try_wait.parity: whether the phase of parity `parity` (i32 0 or 1) of bar has completed (i1). */
LLVMValueRef ptx_mbarrier_try_wait(Cg *c, LLVMValueRef bar, LLVMValueRef parity);
/* A loop of try_waits until that phase of bar has completed; the builder
 * left after it. `name` names the loop's block. */
void ptx_mbarrier_wait(Cg *c, const char *name, LLVMValueRef bar, LLVMValueRef parity);
/* cp.async.bulk.tensor.2d, tile mode: the box of tensor map `map` (the
 * parameter's generic address) at column x, row y (i32) to shared dst,
 * its bytes completing on mbarrier bar. */
void ptx_bulk_tensor_load(Cg *c, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef x, LLVMValueRef y, LLVMValueRef bar);
/* cp.async.bulk of `bytes` contiguous bytes (a multiple of 16, both
 * addresses 16-byte aligned) from global src to shared dst, completing on
 * mbarrier bar (shared addresses: 32-bit). */
void ptx_bulk_load(Cg *c, LLVMValueRef dst, LLVMValueRef src, int bytes, LLVMValueRef bar);

#pragma GCC visibility pop

#endif
