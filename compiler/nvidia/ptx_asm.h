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
/* wgmma.wait_group.sync.aligned pending: until at most pending groups are
 * in flight. acc[0..n) are the accumulator registers of the waited
 * groups, passed through the statement (tied), so nothing reads them
 * before it; they are replaced by its results. */
void ptx_wgmma_wait(Cg *c, int pending, LLVMValueRef *acc, int n);
/* wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16|bf16}: acc[0..n/2)
 * (f32, the thread's accumulator slots) += A (64 x 16, K-major, from
 * descriptor da) times B (16 x n from descriptor db, MN-major where
 * b_mn_major), replaced in place by the results. */
void ptx_wgmma_mma(Cg *c, int n, bool bf16, LLVMValueRef da, LLVMValueRef db, bool b_mn_major, LLVMValueRef *acc);

#pragma GCC visibility pop

#endif
