/* targets.h: NVIDIA's targets (sm_80, sm_86, sm_89, sm_90, sm_90a) and the parts their rows
 * name: the mma.sync dot engine, the cp.async copy engine, the NVPTX
 * intrinsic hooks and the LLVM and PTX fix-ups. compiler/driver/targets.c lists
 * the rows; the code generator reaches the parts only through a row. */
#ifndef PHC_NVIDIA_TARGETS_H
#define PHC_NVIDIA_TARGETS_H

#include "codegen/codegen.h"

#pragma GCC visibility push(hidden)

extern const struct Target nvidia_sm80;   /* A100 and every later chip */
extern const struct Target nvidia_sm86;   /* GA10x, Ada (sm_89): sm_80's code, ptxas for their chip */
extern const struct Target nvidia_sm89;
extern const struct Target nvidia_sm90;   /* H100 through Ampere's instructions */
extern const struct Target nvidia_sm90a;  /* H100 and H200 with wgmma */

/* The parts (with codegen/target.h's types). */
extern const struct DotEngine dot_mma_sync;   /* dot_mma.c: mma.sync m16n8k16, sm_80 and up */
extern const struct DotEngine dot_wgmma;      /* dot_wgmma.c: wgmma.mma_async from shared memory, sm_90a */
extern const struct DotEngine dot_mma_s8;     /* dot_mma_s8.c: mma.sync m16n8k32 on i8, sm_80 and up */
extern const struct DotEngine dot_mma_f8;     /* dot_mma_s8.c: mma.sync m16n8k32 on fp8, sm_89 and up (PTX 8.4) */
extern const struct CopyEngine copy_cp_async;  /* copy_cp_async.c: cp.async.cg into ring slots, sm_80 and up */
extern const struct CopyEngine copy_tma;       /* copy_tma.c: bulk tensor copies on mbarriers, sm_90a */
extern const struct TargetIsa nvidia_isa;      /* isa.c: llvm.nvvm intrinsics */
/* The most copies and commits wgmma_async and wgmma_overlap move past a dot: 64 rings at most
 * (IR_MAX_RINGS), a commit each; a loop with more is left as it is. */
enum { WGMMA_MAX_MOVED = 128 };
/* wgmma_async.c: sm_90a's pass, a K loop's wgmma left in flight (DOT_ASYNC) */
void wgmma_async(IrFunc *f);
/* wgmma_overlap.c: sm_90a's pass, a loop's last dot issued beside the next iteration's first (DOT_ISSUED, OP_WAIT_DOTS) */
void wgmma_overlap(IrFunc *f);
/* which of wgmma_issue and wgmma_overlap run: PHOBOS_DOT_OVERLAP=0 neither, =1 both, else (the
 * default) wgmma_issue, and wgmma_overlap where warpgroups take turns */
typedef enum { DOT_OVERLAP_NONE, DOT_OVERLAP_DEFAULT, DOT_OVERLAP_ALL } DotOverlap;
DotOverlap wgmma_overlap_mode(void);
/* wgmma_issue.c: sm_90a's pass, an iteration's dots issued early and waited for where read (DOT_ISSUED, OP_WAIT_DOTS) */
void wgmma_issue(IrFunc *f);
/* warp_specialize.c: sm_90a's pass, the producer's code of @ph.warp_specialize (IrFunc.producer) */
void warp_specialize(IrFunc *f);

#pragma GCC visibility pop

/* The optimized module with the rewrites of cg_ptxas.c that keep LLVM
 * 19's NVPTX back end from lowering it wrong: the NVIDIA rows' fix_llvm. */
struct LLVMOpaqueModule;   /* an LLVMModuleRef */
void nvptx_workarounds(struct LLVMOpaqueModule *mod);

/* The emitted PTX with the rewrites of cg_ptxas.c that keep ptxas from
 * miscompiling it (malloc'd; NULL when out of memory): the NVIDIA rows'
 * fix_ptx, applied by codegen_emit to all the PTX it returns. */
char *ptxas_workarounds(const char *ptx);

#endif
