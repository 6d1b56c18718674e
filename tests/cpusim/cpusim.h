/* cpusim.h: runs the code generator's LLVM IR on the CPU, every GPU thread
 * of every block, so the back end is checked where there is no GPU.
 *
 * The module's LLVM IR (codegen_emit, CG_EMIT_LLVM, optimized as for the
 * GPU) is retargeted to the host and JIT-compiled; each llvm.nvvm.*
 * intrinsic becomes a call into the executor, and multiply-adds are fused
 * into fmas where the NVPTX back end fuses them. A block's threads are
 * fibers, run one at a time until each reaches a barrier, a warp
 * collective (shfl.sync, ldmatrix, mma) or its end; blocks run one after
 * another. Every shared-memory access is checked for races against the
 * other threads' since the last barrier, and against the cp.async copies
 * in flight (issued, not yet waited for). Tensor arguments are host
 * pointers. Not modelled: timing,
 * memory ordering between blocks (they never overlap here), the ulps of
 * the GPU's approximate ex2/lg2/rsqrt (exp2f, log2f, 1/sqrtf here; the
 * .ftz form of ex2 flushes a subnormal argument and result to zero, as the
 * GPU's does). */
#ifndef PHC_CPUSIM_H
#define PHC_CPUSIM_H

#include <stddef.h>

#include "ir/ir.h"
#include "phobos.h"

typedef struct cpusim cpusim;

/* Lowers every function of m and JIT-compiles the result for the host.
 * m may be freed afterwards. PH_OK, or a status with a message in err. */
ph_status cpusim_load(const IrModule *m, cpusim **out, char *err, size_t errlen);

/* The same for target arch ("sm_80", "sm_90", "sm_90a"; cpusim_load is
 * sm_90). sm_90a's inline PTX of wgmma and fence.proxy.async is modelled
 * (cpusim_wgmma.c), and the mbarriers and bulk tensor copy (cpusim_tma.c);
 * other inline asm is refused. */
ph_status cpusim_load_arch(const IrModule *m, const char *arch, cpusim **out, char *err, size_t errlen);

/* The same from LLVM IR text instead of codegen_emit's: m still names the
 * kernels and gives their threads and parameters. For tests that run a
 * changed module (a barrier taken out, say). */
ph_status cpusim_load_llvm(const IrModule *m, const char *llvm_ir, cpusim **out, char *err, size_t errlen);

/* Runs the entry named kernel (kernel__NAME_V..., see phc --list) over
 * grid[0..2] blocks, to completion. Arguments are shaped as ph_launch's,
 * a tensor's ptr being a host address ((ph_devptr)(uintptr_t)p). Checks
 * the entry, the argument count and kinds, null tensors and the grid;
 * reports as PH_ERR_INVALID a deadlock (threads parted between a barrier
 * and a collective), a shared-memory race (within one barrier epoch, a
 * thread reads a byte another wrote, writes one another read, or two
 * write it: the message names the block, both threads and accesses, the
 * byte's offset in its shared area and the basic blocks of both
 * accesses), a read of shared memory no thread of the block wrote before,
 * an access of bytes a cp.async is still copying to (any thread's, before
 * the issuing thread's wait covers it), a thread ending with a cp.async
 * never waited for, a cp.async whose source (src_size bytes) lies outside
 * every tensor argument by its dims, misaligned or with src_size past its
 * size, a shared access outside the shared areas, a bad ldmatrix
 * address, a wgmma hazard (cpusim_wgmma.c: a missing proxy fence, a write
 * of bytes a wgmma in flight reads, a thread ending with one in flight),
 * an mbarrier or bulk tensor copy hazard (cpusim_tma.c: an access of bytes
 * a bulk copy wrote before a wait on the phase that completes it, an
 * mbarrier used uninitialised, more transaction bytes than expected, a
 * copy through a map the launch could not build, a block ending with a
 * copy in flight, an ordinary write or a copy over an mbarrier's bytes;
 * a wait that can never succeed is a deadlock),
 * or a memory fault (an access
 * outside mapped memory, a fiber's stack overflow), the process going on.
 * Dims are trusted, as on a GPU: a tensor smaller than its dims say is read
 * and written past. */
ph_status cpusim_launch(cpusim *s, const char *kernel, const unsigned grid[3], const ph_arg *args, int nargs,
                        char *err, size_t errlen);

/* The bulk tensor copies (boxes) and cp.asyncs s issued so far, over all
 * its launches: which path sm_90a's copies took. */
void cpusim_copy_counts(const cpusim *s, unsigned long *bulk, unsigned long *async);

/* The bulk adds (cp.reduce.async.bulk: a range of bytes, or a tensor
 * map's box) s ran so far, over all its launches; of them, the boxes. */
unsigned long cpusim_bulk_adds(const cpusim *s);
unsigned long cpusim_box_adds(const cpusim *s);

/* What ph.device_print printed (vprintf, cpusim_debug.c) over all of s's
 * launches, in the order the threads ran; "" when nothing. A failed
 * ph.device_assert ends its launch with the GPU's message ("device assert
 * failed: FILE:LINE: ..."). */
const char *cpusim_printed(const cpusim *s);

void cpusim_free(cpusim *s);

#endif
