/* targets.c: the rows of NVIDIA's targets (codegen/target.h).
 *
 * All write PTX ISA 8.0 (8.4 where a kernel has an fp8 mma or a vector
 * atomic add: cg_ptxas.c) and fill ring slots with cp.async; sm_80 and
 * sm_90 prefer mma.sync to FMA loops and differ in the chip the back end
 * schedules for and ptxas assembles for (and sm_90 has fp8 mma.sync and
 * vector atomic adds, which sm_80's code has not); sm_90a puts wgmma first. */
#include "codegen/target.h"

#include "nvidia/ptx_asm.h"
#include "nvidia/targets.h"

static const DotEngine *const ampere_dots[] = {&dot_mma_sync, &dot_mma_s8, &dot_fma, NULL};
/* Hopper through mma.sync: Ampere's and the fp8 mma (sm_89 and up) */
static const DotEngine *const hopper_sync_dots[] = {&dot_mma_sync, &dot_mma_s8, &dot_mma_f8, &dot_fma, NULL};

/* A row with Ampere's instructions (mma.sync, cp.async), named row_name
 * for chip row_sm, its code scheduled for LLVM CPU cpu; red_add: the
 * vector atomic adds (Hopper's), or NULL. */
#define AMPERE_ROW(row_name, row_sm, cpu, row_dots, red_add)                                                                             \
    {                                                                                                                 \
        .name = row_name, .sm = row_sm, .ptx_version = 80, .llvm_cpu = cpu, .llvm_features = "+ptx80",                \
        .caps = TARGET_TENSOR_CORES | TARGET_ASYNC_COPY, .dots = row_dots, .copy = &copy_cp_async, .passes = NULL, \
        .isa = &nvidia_isa, .atomic_add_f32xn = red_add, .fix_llvm = nvptx_workarounds, .fix_ptx = ptxas_workarounds,          \
    }

const Target nvidia_sm80 = AMPERE_ROW("sm_80", 80, "sm_80", ampere_dots, NULL);

/* Hopper through Ampere's instructions, the code that runs on every
 * Hopper part (and the mma.sync path on one that has wgmma). */
const Target nvidia_sm90 = AMPERE_ROW("sm_90", 90, "sm_90", hopper_sync_dots, ptx_red_add_f32);

static const DotEngine *const hopper_dots[] = {&dot_wgmma, &dot_mma_sync, &dot_mma_s8, &dot_mma_f8, &dot_fma, NULL};
static const TargetPass hopper_passes[] = {{"wgmma-async", wgmma_async}, {"wgmma-overlap", wgmma_overlap}, {"wgmma-issue", wgmma_issue},
                                             {"warp-specialize", warp_specialize}, {NULL, NULL}};

/* 16-bit dot operands in the hardware's swizzle, which wgmma's matrix
 * descriptors read (and ldmatrix as well as today's layout) */
static const Layout *hopper_operand_layout(LayoutTable *t, int rows, int cols, int elem_bytes)
{
    return elem_bytes == 2 ? layout_shared_atoms(t, rows, cols, elem_bytes) : NULL;
}

/* shared addresses: the area's i32 offsets (ptx_shared_address's) */
static void bulk_add_f32(Cg *c, LLVMValueRef global_at, LLVMValueRef shared_at, int bytes)
{
    ptx_bulk_add_f32(c, global_at, ptx_shared_address(c, smem_byte_ptr(c, shared_at)), bytes);
}

/* The producer's adds: a slot is handed over through named barrier
 * STAGE_BARRIER + slot (the consumers arrive, the producer's thread waits:
 * its warp counts as 32 threads, the rest of which have exited), so no
 * consumer waits for another; it comes back through an mbarrier of one
 * arrival, the producer's, which each consumer waits for on its own.
 * Barriers 0 and 1 are the block's and the consumers', 2 to 4 the
 * warpgroups' turns (isa.c). */
enum { STAGE_BARRIER = 8 };

static LLVMValueRef shared_at(Cg *c, LLVMValueRef offset) { return ptx_shared_address(c, smem_byte_ptr(c, offset)); }

static void stage_slot_init(Cg *c, LLVMValueRef free_at)
{
    LLVMTypeRef pts[2] = {c->tptr3, c->ti32};
    LLVMValueRef args[2] = {smem_byte_ptr(c, free_at), i32c(c, 1)};
    cg_call(c, "llvm.nvvm.mbarrier.init.shared", c->tvoid, 2, pts, args);
    ptx_fence_mbarrier_init(c);
}

static void stage_wait_free(Cg *c, LLVMValueRef free_at, LLVMValueRef parity)
{
    ptx_mbarrier_wait(c, "stwait", shared_at(c, free_at), parity);
}

/* The slot's stores (the generic proxy) are read by the copy engine (the
 * async proxy): a proxy fence on the way from each store to the add. The
 * producer's thread takes it once the slot's barrier has ordered every
 * store before it (the memory model takes a proxy fence anywhere on that
 * path, as the dS fence after the consumers' barrier already is), so no
 * consumer waits at a fence for its own stores to land: the fused backward
 * 2-3% faster at head dim 128 and 5-6% at 64 on an H100
 * (docs/performance.md, "fortieth"). PHOBOS_PRODUCER_FENCE=0: each
 * consumer fences its own stores before it arrives. */
static bool producer_fences(void) { return env_switch("PHOBOS_PRODUCER_FENCE", true); }

static void stage_hand_over(Cg *c, int slot)
{
    if (!producer_fences()) ptx_fence_proxy_async(c);
    ptx_barrier_arrive(c, i32c(c, STAGE_BARRIER + slot), c->T + 32);
}

static void stage_take(Cg *c, int slot)
{
    LLVMTypeRef pts[2] = {c->ti32, c->ti32};
    LLVMValueRef args[2] = {i32c(c, STAGE_BARRIER + slot), i32c(c, c->T + 32)};
    cg_call(c, "llvm.nvvm.barrier.sync.cnt", c->tvoid, 2, pts, args);
    if (producer_fences()) ptx_fence_proxy_async(c);
}

static void stage_give_back(Cg *c, LLVMValueRef free_at)
{
    ptx_bulk_wait_reads(c);
    LLVMValueRef bar = smem_byte_ptr(c, free_at);
    cg_call(c, "llvm.nvvm.mbarrier.arrive.shared", c->ti64, 1, &c->tptr3, &bar);
}

static void bulk_add_box(Cg *c, int desc, LLVMValueRef shared, LLVMValueRef x, LLVMValueRef y)
{
    ptx_bulk_tensor_add_f32(c, c->desc_map[desc], x, y, shared_at(c, shared));
}

static const BulkAddEngine hopper_bulk_add = {ptx_fence_proxy_async, bulk_add_f32, ptx_bulk_wait_reads, ptx_bulk_drain,
                                              stage_slot_init, stage_wait_free, stage_hand_over, stage_take, stage_give_back,
                                              bulk_add_box};

/* Hopper with its own instructions (wgmma, which needs the "a" target):
 * the dots wgmma takes on it, the rest as on sm_90. */
const Target nvidia_sm90a = {
    .name = "sm_90a",
    .sm = 90,
    .ptx_version = 80,
    .llvm_cpu = "sm_90a",
    .llvm_features = "+ptx80",
    .caps = TARGET_TENSOR_CORES | TARGET_ASYNC_COPY,
    .dots = hopper_dots,
    .copy = &copy_tma,
    .passes = hopper_passes,
    .isa = &nvidia_isa,
    .operand_layout = hopper_operand_layout,
    .operand_align = 1024,   /* a 128-byte swizzle repeats every 1024 bytes: descriptors assume it starts there */
    .atomic_add_f32xn = ptx_red_add_f32,
    .bulk_add = &hopper_bulk_add,
    .fix_llvm = nvptx_workarounds,
    .fix_ptx = ptxas_workarounds,
};

/* Ampere's GA10x parts (sm_86: A10, A40, RTX 30) and Ada (sm_89: L4, L40,
 * RTX 40): sm_80's code (PTX .target sm_80), which they run; a row of
 * their own names the chip ptxas assembles for (phc --emit=cubin). */
const Target nvidia_sm86 = AMPERE_ROW("sm_86", 86, "sm_80", ampere_dots, NULL);

const Target nvidia_sm89 = AMPERE_ROW("sm_89", 89, "sm_80", ampere_dots, NULL);
