/* isa.c: the NVPTX intrinsics behind the code generator's machine hooks
 * (TargetIsa, codegen/target.h), shared by the NVIDIA targets.
 *
 * Each hook is one call of an llvm.nvvm intrinsic (or the kernel's
 * nvvm.annotations), declared in the module on first use. */
#include "codegen/target.h"

#include "nvidia/ptx_asm.h"
#include "nvidia/targets.h"

#include <stdio.h>
#include <string.h>

static LLVMValueRef thread_index(Cg *c) { return call0(c, "llvm.nvvm.read.ptx.sreg.tid.x", c->ti32); }

/* ctaid (the block's index) or nctaid (the grid's size) along axis */
static LLVMValueRef grid_register(Cg *c, const char *reg, int axis)
{
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg, "xyz"[axis]);
    return call0(c, name, c->ti32);
}

static LLVMValueRef block_index(Cg *c, int axis) { return grid_register(c, "ctaid", axis); }
static LLVMValueRef grid_blocks(Cg *c, int axis) { return grid_register(c, "nctaid", axis); }

/* The tile code's threads alone where a producer runs beside them
 * (bar.sync 1, T: barrier 0 would wait for the producer's threads too) */
static void block_barrier(Cg *c)
{
    if (c->role != CG_CONSUMERS) {
        call0(c, "llvm.nvvm.barrier0", c->tvoid);
        return;
    }
    LLVMTypeRef pts[2] = {c->ti32, c->ti32};
    LLVMValueRef args[2] = {i32c(c, 1), i32c(c, c->T)};
    cg_call(c, "llvm.nvvm.barrier.sync.cnt", c->tvoid, 2, pts, args);
}

/* shfl.sync.bfly over the whole warp (mask all ones, clamp 31); an i64
 * as its two halves (the instruction moves 32 bits) */
static LLVMValueRef shuffle_xor(Cg *c, LLVMValueRef v, int lane_mask, bool isint)
{
    if (LLVMTypeOf(v) == c->ti64) {
        LLVMValueRef sh = LLVMConstInt(c->ti64, 32, 0);
        LLVMValueRef lo = shuffle_xor(c, LLVMBuildTrunc(c->b, v, c->ti32, ""), lane_mask, true);
        LLVMValueRef hi = shuffle_xor(c, LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, v, sh, ""), c->ti32, ""), lane_mask, true);
        return LLVMBuildOr(c->b, LLVMBuildZExt(c->b, lo, c->ti64, ""), LLVMBuildShl(c->b, LLVMBuildZExt(c->b, hi, c->ti64, ""), sh, ""), "");
    }
    LLVMTypeRef ty = isint ? c->ti32 : c->tf32;
    LLVMTypeRef pts[4] = {c->ti32, ty, c->ti32, c->ti32};
    LLVMValueRef args[4] = {LLVMConstInt(c->ti32, 0xffffffffu, 0), v, i32c(c, lane_mask), i32c(c, 31)};
    return cg_call(c, isint ? "llvm.nvvm.shfl.sync.bfly.i32" : "llvm.nvvm.shfl.sync.bfly.f32", ty, 4, pts, args);
}

/* ex2.approx.ftz: one MUFU.EX2; without .ftz ptxas wraps each in a range
 * fix-up (a compare and two predicated multiplies) to produce subnormal
 * results, which the GPU flushes to zero instead (docs/language.md) */
static LLVMValueRef exp2_fast(Cg *c, LLVMValueRef x) { return call1f(c, "llvm.nvvm.ex2.approx.ftz.f", x); }
static LLVMValueRef log2_fast(Cg *c, LLVMValueRef x) { return call1f(c, "llvm.nvvm.lg2.approx.f", x); }
static LLVMValueRef rsqrt_fast(Cg *c, LLVMValueRef x) { return call1f(c, "llvm.nvvm.rsqrt.approx.f", x); }

static void annotate(Cg *c, const char *key, int value)
{
    LLVMMetadataRef ann[3] = {LLVMValueAsMetadata(c->fn), LLVMMDStringInContext2(c->ctx, key, strlen(key)),
                              LLVMValueAsMetadata(i32c(c, value))};
    LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, ann, 3)));
}

/* The copy descriptors are read where the launch put them (the parameter
 * space): without grid_constant LLVM 19 copies a parameter whose address
 * is taken to local memory, where the bulk copy cannot read it. */
static void annotate_grid_constants(Cg *c)
{
    if (!c->ndescs) return;
    unsigned first = LLVMCountParams(c->fn) - 2 * (unsigned)c->ndescs;
    LLVMMetadataRef idx[CODEGEN_MAX_COPY_DESCS];
    for (int j = 0; j < c->ndescs; j++) idx[j] = LLVMValueAsMetadata(i32c(c, first + (unsigned)j + 1));   /* counted from 1 */
    LLVMMetadataRef ann[3] = {LLVMValueAsMetadata(c->fn), LLVMMDStringInContext2(c->ctx, "grid_constant", 13),
                              LLVMMDNodeInContext2(c->ctx, idx, (size_t)c->ndescs)};
    LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, ann, 3)));
}

/* The blocks of the kernel a multiprocessor should hold at once (@ph.occupancy). */
static int occupancy(const Cg *c) { return c->f->occupancy > 1 ? c->f->occupancy : 1; }

/* The registers a thread of the block may have (its .maxnreg): a quadrant's
 * 16K shared by its warps of each of the occupancy's blocks. */
static int block_registers(Cg *c)
{
    int regs = 255, warps = (ir_launch_threads(c->f) + 31) / 32;
    int fit = (16384 / (32 * occupancy(c) * ((warps + 3) / 4))) & ~7;
    return fit < regs ? fit : regs;   /* up to 8 warps, 2 to a quadrant: 256, so 255 */
}

static void annotate_kernel(Cg *c)
{
    annotate_grid_constants(c);
    /* .maxntid tells ptxas the block size, so it can spend registers */
    annotate(c, "maxntidx", ir_launch_threads(c->f));
    /* .maxnreg 255: otherwise ptxas may trade a few spills for occupancy, and local memory is slower than registers.
     * A block past 256 threads (a producer warpgroup's, a @ph.launch(512)) gets what its warps can share: the SM's 64K registers
     * are four quadrants of 16K, a block's warps are dealt out to the quadrants in turn, so the fullest
     * holds ceil(warps / 4) of them; in the allocation's steps of 8. ptxas does not infer it from .maxntid
     * under a .maxnreg, and a block that asks for more does not launch (CUDA error 701) */
    annotate(c, "maxnreg", block_registers(c));
    /* @ph.occupancy(N): .minnctapersm N, which ptxas honours within the .maxnreg above */
    if (occupancy(c) > 1) annotate(c, "minctasm", occupancy(c));
}

/* A warp-specialized block's producer warpgroup keeps PRODUCER_REGS a
 * thread (it runs scalar loops and issues copies) and its consumers take
 * the rest, when they are whole warpgroups and the block's .maxnreg is
 * below the 255 a thread may have (one consumer warpgroup of a block alone
 * on its multiprocessor has them already; of two blocks, @ph.occupancy(2),
 * .maxnreg 128, it takes 2 * 128 - 24 = 232). What
 * there is to share is what the block was launched with: setmaxnreg.inc
 * takes registers from a pool of the block's own that only .dec fills, and
 * waits until it has them, so consumers asking for more than the block's
 * .maxnreg times its warpgroups, less the producer's, wait forever (the CPU
 * executor models the pool, tests/cpusim). With two consumer warpgroups
 * (three in all, .maxnreg 168): 3 * 168 - 24 = 480, 240 each; with three
 * (.maxnreg 128): 512 - 24 = 488, 160 each in steps of 8.
 * PHOBOS_PRODUCER_REGS=1 (off until run on the GPU): the producer keeps
 * what the consumers' steps of 8 leave, where 24 leaves some unused: 32
 * with three consumer warpgroups, 24 as before with two. */
enum { PRODUCER_REGS = 24 };

static void role_registers(Cg *c, bool producer)
{
    int T = c->T, groups = T / 128;
    int block = block_registers(c), budget = block * (groups + 1);   /* a thread of each warpgroup: the block's pool */
    if (T % 128 || !groups || block >= 255) return;
    int consumer = ((budget - PRODUCER_REGS) / groups) & ~7;
    if (consumer > 256) consumer = 256;
    if (consumer <= block) return;   /* too many consumer warps for the producer's to matter */
    int mine = env_switch("PHOBOS_PRODUCER_REGS", false) ? (budget - consumer * groups) & ~7 : PRODUCER_REGS;
    ptx_setmaxnreg(c, !producer, producer ? mine : consumer);
}

/* @ph.warp_specialize(2): the consumer warpgroups issue their wgmma in
 * turn, by index, round and round: warpgroup g waits at named barrier
 * TURN_BARRIER + g (256 threads: its own and the previous warpgroup's
 * arrival) before it issues, and arrives at the next one's once it has
 * issued (committed, not completed). Every warpgroup issues the same dots
 * in the same order (the tile code's control flow is the same in every
 * thread), so each barrier sees one arrival per wait. The last warpgroup's
 * arrival at the start gives warpgroup 0 the first turn; the last arrival
 * of a block is left unwaited-for, which the block's end clears. Barrier 1
 * is the consumers' block barrier (block_barrier). */
enum { TURN_BARRIER = 2, TURN_THREADS = 256 };

static bool taking_turns(Cg *c)
{
    return c->role == CG_CONSUMERS && c->f->turns && c->f->producer && c->T % 128 == 0 && c->T >= 256;
}

static LLVMValueRef warpgroup(Cg *c) { return udiv(c, c->tid, 128); }

static LLVMValueRef turn_barrier(Cg *c, int ahead)
{
    LLVMValueRef g = warpgroup(c);
    if (ahead) g = urem(c, add(c, g, i32c(c, ahead)), c->T / 128);
    return add(c, g, i32c(c, TURN_BARRIER));
}

void nvidia_turn_wait(Cg *c)
{
    if (!taking_turns(c)) return;
    LLVMTypeRef pts[2] = {c->ti32, c->ti32};
    LLVMValueRef args[2] = {turn_barrier(c, 0), i32c(c, TURN_THREADS)};
    cg_call(c, "llvm.nvvm.barrier.sync.cnt", c->tvoid, 2, pts, args);
}

void nvidia_turn_pass(Cg *c)
{
    if (taking_turns(c)) ptx_barrier_arrive(c, turn_barrier(c, 1), TURN_THREADS);
}

static void role_begin(Cg *c, bool producer)
{
    role_registers(c, producer);
    if (producer || !taking_turns(c)) return;
    Guard last = guard_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, warpgroup(c), i32c(c, c->T / 128 - 1), ""));
    ptx_barrier_arrive(c, i32c(c, TURN_BARRIER), TURN_THREADS);
    guard_end(c, last);
}

const TargetIsa nvidia_isa = {
    .thread_index = thread_index,
    .block_index = block_index,
    .grid_blocks = grid_blocks,
    .barrier = block_barrier,
    .shuffle_xor = shuffle_xor,
    .exp2_fast = exp2_fast,
    .log2_fast = log2_fast,
    .rsqrt_fast = rsqrt_fast,
    .annotate_kernel = annotate_kernel,
    .role_begin = role_begin,
};
