/* target.h: a GPU the code generator writes for, as one row of data and
 * hooks (a Target, after QBE's).
 *
 * The code generator's core (compiler/codegen) names no GPU: whatever
 * depends on the chip it asks of the Target it was given
 * (CodegenOptions.target, Cg.target): the LLVM CPU and features, the dot
 * engines and the order they are tried in, how a ring slot is filled,
 * the intrinsics behind thread indices, barriers, shuffles and fast
 * math, the kernel's annotations, and the rewrites of the PTX it prints.
 * A new generation is new files: its engines and hooks, and a row that
 * names them (compiler/nvidia/targets.c has sm_80's and sm_90's), found
 * by name through compiler/driver/targets.c. docs/architecture.md,
 * "Targets", says how one plugs in. */
#ifndef PHC_TARGET_H
#define PHC_TARGET_H

#include "dot.h"

/* What a target's chip has, for code that asks rather than names it. */
enum {
    TARGET_TENSOR_CORES = 1u << 0,   /* mma.sync-class matrix instructions */
    TARGET_ASYNC_COPY = 1u << 1,     /* copies from global to shared memory that run on while the threads compute */
};

/* The machine's instructions the core emits through hooks, each the
 * whole LLVM of one operation (an intrinsic call, as a rule). */
typedef struct TargetIsa {
    LLVMValueRef (*thread_index)(Cg *c);              /* the thread's index in the block (i32) */
    LLVMValueRef (*block_index)(Cg *c, int axis);     /* the block's index in the grid along axis 0..2 */
    LLVMValueRef (*grid_blocks)(Cg *c, int axis);     /* the grid's blocks along axis 0..2 */
    void (*barrier)(Cg *c);                           /* every thread of the block, shared memory made visible */
    /* v (i32 when isint, else f32) of the lane whose index is this one's XOR lane_mask, within the warp */
    LLVMValueRef (*shuffle_xor)(Cg *c, LLVMValueRef v, int lane_mask, bool isint);
    LLVMValueRef (*exp2_fast)(Cg *c, LLVMValueRef x);   /* f32 2^x, approximate, subnormals flushed */
    LLVMValueRef (*log2_fast)(Cg *c, LLVMValueRef x);   /* f32 log2 x, approximate */
    LLVMValueRef (*rsqrt_fast)(Cg *c, LLVMValueRef x);  /* f32 1/sqrt x, approximate */
    void (*annotate_kernel)(Cg *c);                     /* what the assembler is told of c->fn (block size, registers) */
    /* with a producer (IrFunc.producer): at the start of the producer's
     * threads' code (producer) or of the consumers', what moves registers
     * between them and what starts the consumers' turns (IrFunc.turns);
     * NULL: nothing */
    void (*role_begin)(Cg *c, bool producer);
} TargetIsa;

/* How a ring slot (OP_COPY_ASYNC) is filled, and how a thread waits for
 * its fills. The core has placed the ring and recorded the write; the
 * engine emits the copy of op's window, from row r0 and column c0 (i64),
 * into the slot at byte offset at of the shared area, laid out as slot (a
 * SHARED layout). */
typedef struct CopyEngine {
    const char *name;
    /* before the entry is declared: the bulk copy descriptors the engine
     * will use (Cg.descs, codegen.h), NULL: none */
    void (*plan)(Cg *c, const IrFunc *f);
    /* at the body's entry, where the kernel has rings: the engine's own
     * set-up (barriers in shared memory, counters), NULL: none */
    void (*begin)(Cg *c);
    void (*copy)(Cg *c, const IrOp *op, const Layout *slot, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0);
    void (*commit)(Cg *c);               /* closes the group of the copies issued since the last */
    void (*wait)(Cg *c, const IrOp *wait);   /* until at most wait->ival groups are in flight */
    /* after a wait whose slots an async dot releases: the waited copies
     * made visible to every thread, which needs a block barrier only for
     * copies the threads issued themselves; NULL: a barrier */
    void (*publish)(Cg *c);
    /* warp specialization (IrFunc.producer, c->role CG_CONSUMERS): the
     * slots of the groups waited for are read no more: all of them, or
     * all but those of the last wait (an async dot's engine, once the
     * previous iteration's dot completed), of the rings whose slots op's
     * operands are (a release_async's, a drained dot's; NULL: every
     * ring's); NULL: the engine has no producer */
    void (*release)(Cg *c, bool all, const IrOp *op);
} CopyEngine;

/* Adds of f32 rows from shared memory into global memory by a copy
 * engine, each float as atomically as one add. */
typedef struct BulkAddEngine {
    /* after a thread's stores into shared memory, before the engine reads them */
    void (*fence)(Cg *c);
    /* bytes (a multiple of 16) at shared offset shared_at (i32) added into
     * global address global_at (i64), both 16-byte aligned; the shared
     * bytes may be read until the thread's next wait_reads */
    void (*add_f32)(Cg *c, LLVMValueRef global_at, LLVMValueRef shared_at, int bytes);
    /* every add the thread issued has read its shared bytes */
    void (*wait_reads)(Cg *c);
    /* at the kernel's exit: every add the thread issued has landed */
    void (*drain)(Cg *c);
    /* A warp-specialized kernel's adds by its producer (ADD_BY_PRODUCER):
     * staging slot `slot` handed from the consumers to the producer's one
     * thread and back; `free_at` is the slot's 8 bytes of shared memory
     * (an i32 offset) that say it may be written again. NULL: none. */
    /* by thread 0 before the block's first barrier */
    void (*slot_init)(Cg *c, LLVMValueRef free_at);
    /* a consumer: the producer gave the slot back for the phase of parity
     * `parity` (i32 0 or 1; a fresh slot's parity 1 passes at once) */
    void (*wait_free)(Cg *c, LLVMValueRef free_at, LLVMValueRef parity);
    /* a consumer, after its stores into the slot: they are the engine's to read */
    void (*hand_over)(Cg *c, int slot);
    /* the producer: every consumer handed the slot over */
    void (*take)(Cg *c, int slot);
    /* the producer, after its adds from the slot: once they read it, free */
    void (*give_back)(Cg *c, LLVMValueRef free_at);
    /* the box of descriptor `desc` (Cg.descs: f32, 128-byte rows in the
     * 128-byte swizzle) at column x, row y (i32) added from shared offset
     * shared_at (i32, 1024-byte aligned), elements outside the tensor left
     * alone; read until the thread's next wait_reads. NULL: none (the
     * producer's slots stay rows of the tile's width). */
    void (*add_f32_box)(Cg *c, int desc, LLVMValueRef shared_at, LLVMValueRef x, LLVMValueRef y);
} BulkAddEngine;

/* An IR pass a target adds after the standard pipeline (a Hopper
 * warp-specialization pass, say). */
typedef struct TargetPass {
    const char *name;
    void (*run)(IrFunc *f);
} TargetPass;

struct Target {
    const char *name;          /* what --arch and ph_compile_options.arch name: "sm_80" */
    int sm;                    /* the compute capability, times ten: 80 */
    int ptx_version;           /* the PTX ISA version the back end writes, times ten: 80 */
    const char *llvm_cpu;      /* NVPTX's CPU: "sm_80" */
    const char *llvm_features; /* NVPTX's features: "+ptx80" */
    unsigned caps;             /* TARGET_* */
    const DotEngine *const *dots;   /* in order of preference, NULL-terminated: the first that accepts a dot lowers it */
    const CopyEngine *copy;
    const TargetPass *passes;  /* ended by a row without a name; NULL: none */
    const TargetIsa *isa;
    /* the SHARED layout of the tiles dots read from shared memory (ring
     * slots, regions), and the alignment of their buffers; NULL and 0:
     * layout_shared, 16 bytes */
    const Layout *(*operand_layout)(LayoutTable *t, int rows, int cols, int elem_bytes);
    int operand_align;
    /* an atomic add of n (2 or 4) f32 at once: v[0..n) added to the n
     * floats at global address addr (i64, 4n-byte aligned), each element
     * as atomically as one add; NULL: the chip adds one element at a time */
    void (*atomic_add_f32xn)(Cg *c, LLVMValueRef addr, const LLVMValueRef *v, int n);
    /* an engine that adds a tile from shared memory into global memory
     * (cg_store.c: an atomic add of a dot's result); NULL: none */
    const BulkAddEngine *bulk_add;
    /* the optimized LLVM module rewritten before the back end lowers it,
     * around what the back end gets wrong; NULL: none */
    void (*fix_llvm)(LLVMModuleRef mod);
    /* the PTX as printed, rewritten (malloc'd; NULL when out of memory);
     * NULL: none */
    char *(*fix_ptx)(const char *ptx);
};

#endif
