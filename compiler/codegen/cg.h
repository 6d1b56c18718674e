/* cg.h: what the code generator's files share (internal to the back end).
 *
 * The back end turns verified tile IR into LLVM IR for NVPTX, then PTX.
 * Each tile value lives in the layout the layout pass (layout.c) chose: a
 * thread holds its slots as LLVM values, named by compile-time slot
 * numbers, so no register array is indexed at run time. Its files:
 *   codegen.c      the kernel ABI, the two emissions of a kernel, the LLVM
 *                  driver (codegen_emit), line information (cg_locate);
 *                  emit_func runs the steps below in order
 *   cg_smem.c      shared memory: buffers, their accesses, the area
 *   cg_values.c    small builders, where a slot lives, values in layouts
 *                  (get, cache, materialize, conversions through shared memory)
 *   cg_store.c     stores and atomic adds (wide tiles staged through shared memory)
 *   cg_memory.c    loads, shared-memory addresses (the SHARED
 *                  layouts' map), rings: their places, copies into them
 *                  (the target's copy engine), ring reads
 *   cg_reduce.c    reductions
 *   cg_operands.c  dot operands into shared memory; regions of loop-invariant ones
 *   dot.h          the dot engines, picked per dot from the target's list;
 *                  dot_fma.c (FMA, any dot) is the core's own
 *   cg_scalar.c    scalar arithmetic, Python's float // and %
 *   cg_control.c   blocks, for/while/if/yield, one op's lowering (emit_op)
 *   cg_debug.c     device_print and device_assert (vprintf, __assertfail)
 *   target.h       the GPU (Target): what the core asks of it; its rows,
 *                  engines and hooks live with it (compiler/nvidia)
 * Emission runs, per function (emit_func): layout plan (layout_plan), then
 * twice kernel declaration (the ABI), ring plan (plan_rings), region plan
 * (plan_regions) and emission of the body (emit_block, op by op in program
 * order): the first emission records the shared-memory buffers and their
 * accesses and is discarded, the shared-memory plan (smem_plan.c) places
 * them, the second addresses them; then the area is sized. Everything here
 * is hidden: no symbol leaves libphobos.so. */
#ifndef PHC_CG_H
#define PHC_CG_H

#include "codegen.h"
#include "ir/irutil.h"
#include "layout/layout.h"
#include "layout/smem_plan.h"

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct Target Target;

typedef struct {
    LLVMValueRef *v;     /* one value per slot; scalars have one */
    int n;
    const Layout *lay;   /* NULL for scalars */
} Slots;

typedef struct { ValueId v; Slots s; } Cached;

/* A dot operand defined outside the loop that reads it: written to its own
 * shared-memory region once, where it is defined, instead of every
 * iteration (attn_fwd's q). base: its byte offset in the shared area (its
 * buffer's); lay: its SHARED layout; engine: the engine of a dot that reads
 * it, one with operand_stored where any has (cg_operands.c). */
typedef struct { ValueId root; bool tr; DType dt; int64_t base; const Layout *lay; int depth; int buf; const struct DotEngine *engine; } Region;

/* A for being emitted: its body, counter, first value and step. */
typedef struct { const IrBlock *body; LLVMValueRef iv, lb; int64_t step; } CgLoop;

enum { CG_MAX_RINGS = IR_MAX_RINGS };   /* ir_verify's limit on ring numbers */

typedef struct {
    const Target *target;        /* the GPU: whatever depends on it is asked of this (target.h) */
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef tvoid, ti1, ti8, ti16, ti32, ti64, tf16, tbf16, tf32, tf64, tptr1, tptr3;
    LLVMTypeRef tv2f16;
    const IrFunc *f;
    LLVMValueRef fn;
    int T;                       /* threads */
    LLVMValueRef tid, warp, lane;
    Slots *vals;                 /* by ValueId: the value in its own layout */
    VEC(Cached) cache;           /* the value in other layouts, innermost block last */
    LayoutTable *layouts;
    LayoutPlan plan;
    bool *stored;                /* by param: the kernel stores to this tensor */
    LLVMValueRef *tensor_ptr, *tensor_dim0, *tensor_dim1, *scalar;   /* by param */
    LLVMValueRef (*tensor_dims)[4];      /* by param: every dim (rank-many; i64) */
    LLVMValueRef (*tensor_strides)[4];   /* by param, rank 3 and 4: the strides in elements (i64) */
    LLVMValueRef smem;           /* placeholder for the shared area, sized at the end */
    SmemPlan smem_plan;          /* its buffers and their accesses, recorded by the first emission, placed */
    bool smem_replay;            /* the second emission: smem_plan is made */
    int smem_next_buf, smem_next_event;   /* the second emission's place in the plan */
    VEC(Region) regions;
    int64_t ring_at[CG_MAX_RINGS], ring_slot_bytes[CG_MAX_RINGS];   /* by ring: byte offset in the area, slot size; -1 unplaced */
    int ring_buf[CG_MAX_RINGS];  /* by ring: its buffer */
    bool ring_in_flight[CG_MAX_RINGS];    /* copied into since the last wait for every group */
    int *ring_of;                /* by value: the ring a ring-slot value lies in, -1 none */
    int *issued_scratch;         /* by value: an issued dot's operand scratch buffers (two), -1 none */
    /* the copy engine's bulk copy descriptors: the entry's parameters
     * after the ABI's (codegen.h), the map and its flag (i32) */
    CodegenCopyDesc descs[CODEGEN_MAX_COPY_DESCS];   /* copy_descriptor's */
    int ndescs;
    LLVMValueRef desc_map[CODEGEN_MAX_COPY_DESCS], desc_ok[CODEGEN_MAX_COPY_DESCS];
    LLVMValueRef copy_state[12]; /* the copy engine's: what its begin made (counters, a buffer's offset) */
    /* a warp-specialized kernel's ring channels (ir_ring_channels), each
     * with barriers and consumer counters of its own (copy_tma.c) */
    int copy_nchan, copy_open_chan;
    int copy_ring_chan[CG_MAX_RINGS], copy_chan_base[CG_MAX_RINGS];
    LLVMValueRef copy_chan_state[CG_MAX_RINGS][5];
    struct { const IrOp *op; unsigned chans; } copy_drains[16];   /* waits that give no slots: the channels they drain */
    int copy_ndrains;
    int copy_buf;                /* the copy engine's shared buffer, -1 none */
    bool slots_read_by_lanes;    /* a ring's slots are read by each thread (a vector ring's column) */
    LLVMBasicBlockRef exit_bb;
    bool bulk_adds;              /* the target's bulk adds were issued: drained at the exit */
    /* bulk adds of the loops being emitted that alternate between two
     * scratch slots, each slot's adds waited for one iteration later
     * (cg_store.c bulk_adds_enter_loop) */
    struct { const IrOp *op; int buf; LLVMValueRef slot; } loop_adds[4];
    int nloop_adds;
    /* the adds a warp-specialized kernel's producer issues (ADD_BY_PRODUCER,
     * cg_store.c producer_adds_plan): each one's staging slot (a buffer of
     * the whole kernel, its mbarrier at the end), the slot's SHARED layout
     * and the f32 tensor map its boxes are added through (NULL and -1: rows
     * of the tile's width, added as rows) and, in each consumer, the parity
     * of the slot's next wait */
    struct { const IrOp *op; int buf; const Layout *slot; int desc; LLVMValueRef phase; } producer_adds[4];
    int nproducer_adds;
    /* the innermost for being emitted: its body, counter, first value and
     * step (an op directly in the body runs once an iteration: the scratch
     * taken in turns by the iteration's parity, dot_wgmma.c) */
    CgLoop loop;
    /* @ph.warp_specialize (IrFunc.producer_threads): which threads the code
     * being emitted runs in: all of the block's (CG_ALL: its entry, or a
     * kernel without the option), the producer's or the tile code's */
    enum { CG_ALL, CG_PRODUCER, CG_CONSUMERS } role;
    LLVMDIBuilderRef di;         /* line information (-lineinfo), or NULL */
    LLVMMetadataRef di_file, di_kernel;   /* the .ph file; the kernel's subprogram */
    char *err; size_t errlen;
    bool failed;
} Cg;

/* An alloca of type t in the function's entry block (cg_debug.c). */
LLVMValueRef entry_alloca(Cg *c, LLVMTypeRef t);

/* A loop's bulk adds (cg_store.c): before its entry, their two-slot scratch
 * buffers, live over the whole loop; after it, their last adds' reads
 * waited for. Enter returns the mark that leave takes. */
int bulk_adds_enter_loop(Cg *c, const IrBlock *body);
void bulk_adds_leave_loop(Cg *c, int mark);
/* The producer's adds (cg_store.c): found, and their tensor maps asked
 * for, before the entry is declared; their slots made before the roles
 * part, and kept until after everything. */
void producer_adds_plan(Cg *c, const IrFunc *f);
void producer_adds_begin(Cg *c);
void producer_adds_end(Cg *c);

/* Runs what follows only where cond holds (cond NULL: always). */
typedef struct { LLVMBasicBlockRef done; } Guard;

/* A slot holds element (row, col) where valid holds. valid is the AND of
 * three parts, kept apart for reductions: row_ok and col_ok (the position
 * lies inside the tile along that axis; a layout's pattern of threads may
 * be larger than the tile) and active (this thread computes the slot at
 * all: the idle warps of an MMA layout do not). The copies of an element
 * (a slice's threads along its reduced axis) all hold it; owner picks the
 * one that writes it. The arithmetic is layout.h's, emitted: the thread
 * base from the warp and the lane, plus the slot's constant offset. */
typedef struct {
    LLVMValueRef row, col;   /* i32 */
    LLVMValueRef valid;      /* i1, or NULL: always */
    LLVMValueRef row_ok, col_ok, active;   /* i1 each, or NULL: always */
    LLVMValueRef owner;      /* i1, or NULL: this slot is the one copy that writes */
} SlotPos;

/* Gives the word of a scratch buffer that element (row, col) of a tile is read from. */
typedef LLVMValueRef (*WordIndex)(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx);

#pragma GCC visibility push(hidden)

/* codegen.c */
void cg_locate(Cg *c, const IrOp *op, const IrOp *parent);
/* Descriptor d's index in c->descs, added when new and `add` (before the
 * entry is declared: an engine's plan); -1 when absent or no room. */
int copy_descriptor(Cg *c, CodegenCopyDesc d, bool add);

/* cg_smem.c */
void smem_begin(Cg *c, bool replay);
void smem_discard(Cg *c);
bool smem_place(Cg *c);
void smem_place_area(Cg *c);
int smem_buffer(Cg *c, SmemKind kind, int64_t bytes);
/* A buffer that holds dot operands (a ring, a region): aligned as the target asks. */
int smem_operand_buffer(Cg *c, SmemKind kind, int64_t bytes);
/* The SHARED layout of a rows x cols dot operand the target's engines read in place. */
const Layout *operand_layout(Cg *c, int rows, int cols, int elem_bytes);
int64_t smem_offset(Cg *c, int buf);
void smem_access(Cg *c, int buf, bool write);
void smem_access_together(Cg *c, int buf, bool write);
void smem_access_unordered(Cg *c, int buf, bool write);
void smem_mark(Cg *c, SmemEventKind kind);
void smem_fixed_barrier(Cg *c);
LLVMValueRef smem_byte_ptr(Cg *c, LLVMValueRef offset);

/* cg_values.c */
void barrier(Cg *c);
void cg_fail(Cg *c, const IrOp *op, const char *msg);
LLVMTypeRef dtype_ty(Cg *c, DType dt);
LLVMValueRef cg_call_at(Cg *c, LLVMBuilderRef B, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts,
                        LLVMValueRef *args);
LLVMValueRef cg_call(Cg *c, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts, LLVMValueRef *args);
LLVMValueRef call1f(Cg *c, const char *name, LLVMValueRef x);
LLVMValueRef to_f32(Cg *c, LLVMValueRef v, DType dt);
LLVMValueRef from_f32(Cg *c, LLVMValueRef v, DType dt);
/* cg_fp8.c: an fp8 value (i8 bits) to f32, exactly, and an f32 to fp8 as cvt.rn.satfinite */
LLVMValueRef cg_f8_to_f32(Cg *c, LLVMValueRef v, DType dt);
LLVMValueRef cg_f32_to_f8(Cg *c, LLVMValueRef x, DType dt);
LLVMValueRef to_word(Cg *c, LLVMValueRef v, DType dt);
LLVMValueRef smem_word_ptr(Cg *c, int buf, LLVMValueRef index);
Guard guard_begin(Cg *c, LLVMValueRef cond);
void guard_end(Cg *c, Guard g);
Slots new_slots(int n, const Layout *lay);
SlotPos slot_pos(Cg *c, const Layout *l, int s);
int tile_scratch(Cg *c, const Layout *l, DType dt);
void slots_to_smem(Cg *c, const Slots *s, DType dt, int buf);
Slots exchange(Cg *c, const Slots *s, DType dt, const Layout *l, WordIndex index, const void *ctx);
Slots transposed_into(Cg *c, ValueId src, const Layout *l);
const Layout *home_layout(Cg *c, ValueId v);
const Layout *reg_layout(Cg *c, ValueId v);
Slots cg_get(Cg *c, ValueId v, const Layout *l);
void cache_truncate(Cg *c, int len);
LLVMValueRef elementwise(Cg *c, const IrOp *op, DType in, DType out, LLVMValueRef *a);
DType operand_dtype(Cg *c, const IrOp *op);
Slots materialize(Cg *c, ValueId v, const Layout *l);

/* cg_memory.c */
/* The element of a window at slot position p: its offset in the tensor (i64), whether inside. */
void window_elem(Cg *c, const IrOp *op, SlotPos p, LLVMValueRef *offset, LLVMValueRef *inb);
/* Whether a window's chunks of v elements are each wholly inside or wholly outside the
 * tensor and aligned to v elements: its row length, column start and base address are. */
LLVMValueRef window_chunks_aligned(Cg *c, const IrOp *op, int v);
Slots emit_load_in(Cg *c, const IrOp *op, const Layout *l);
/* cg_store.c */
void emit_store(Cg *c, const IrOp *op);
void emit_atomic_add(Cg *c, const IrOp *op);
void emit_gather(Cg *c, const IrOp *op);
void emit_scatter(Cg *c, const IrOp *op);
LLVMValueRef shared_offset(Cg *c, const Layout *l, LLVMValueRef row, LLVMValueRef col);
LLVMValueRef shared_shifted(Cg *c, const Layout *l, LLVMValueRef at, int drow, int dcol);
LLVMValueRef shared_byte_ptr(Cg *c, LLVMValueRef area, LLVMValueRef offset);
void plan_rings(Cg *c, const IrFunc *f);
int ring_buffer_of(Cg *c, ValueId v);
void emit_copy_async(Cg *c, const IrOp *op);
void emit_wait_async(Cg *c, const IrOp *op);
void emit_release_async(Cg *c, const IrOp *op);
Slots read_shared_at(Cg *c, ValueId v, const Slots *s, const Layout *l, bool transposed);

/* cg_debug.c: ph.device_print (vprintf) and ph.device_assert (__assertfail) */
void emit_device_print(Cg *c, const IrOp *op);
void emit_device_assert(Cg *c, const IrOp *op);

/* cg_reduce.c */
void emit_reduce(Cg *c, const IrOp *op);
void emit_argreduce(Cg *c, const IrOp *op);

/* cg_scan.c */
void emit_cumsum(Cg *c, const IrOp *op);

/* cg_operands.c */
ValueId operand_root(Cg *c, ValueId v, bool *transposed);
/* The ring slot value a dot operand is read in place from, when it is one
 * (not transposed): 0 otherwise. */
ValueId operand_ring_root(Cg *c, ValueId operand);
/* Its start in the shared area, in bytes, where it is of dtype dt: NULL otherwise. */
LLVMValueRef operand_ring_at(Cg *c, ValueId operand, DType dt);
void operand_to_smem(Cg *c, ValueId v, DType dt, int buf, int64_t base, const Layout *sl);
/* The same, v's transpose written (element (r, c) of sl is v's (c, r)),
 * an MMA layout's pairs of columns 4 bytes a store where they lie together;
 * base bytes past area (a shared pointer; NULL: the area's start). */
void operand_to_smem_transposed(Cg *c, ValueId v, DType dt, LLVMValueRef area, int buf, int64_t base, const Layout *sl);
const Region *find_region(Cg *c, ValueId operand, DType dt);
void plan_regions(Cg *c, const IrBlock *blk, int depth, int *def_depth);
void write_regions(Cg *c, ValueId v);

/* cg_scalar.c */
LLVMValueRef scalar_binop(Cg *c, IrBinop op, DType dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef scalar_unop(Cg *c, IrUnop op, DType dt, LLVMValueRef a);
LLVMValueRef scalar_cmp(Cg *c, IrCmp op, DType dt, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_convert(Cg *c, LLVMValueRef v, DType from, DType to);
/* a * b + d on dtype dt: one f32 fma, rounded to dt */
LLVMValueRef scalar_fma(Cg *c, DType dt, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d);

/* cg_math.c: on f32 values */
LLVMValueRef math_tanh(Cg *c, LLVMValueRef x);
LLVMValueRef math_erf(Cg *c, LLVMValueRef x);
LLVMValueRef math_sigmoid(Cg *c, LLVMValueRef x);
LLVMValueRef math_pow(Cg *c, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef math_fma(Cg *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d);

/* cg_control.c */
void emit_block(Cg *c, const IrBlock *blk, const IrOp *parent, Slots *yielded);

/* one-line builders */
static inline LLVMValueRef i32c(Cg *c, int64_t v) { return LLVMConstInt(c->ti32, (unsigned long long)v, 1); }
static inline LLVMValueRef f32c(Cg *c, double v) { return LLVMConstReal(c->tf32, v); }
static inline LLVMValueRef call0(Cg *c, const char *name, LLVMTypeRef ret) { return cg_call(c, name, ret, 0, NULL, NULL); }
static inline LLVMBasicBlockRef new_bb(Cg *c, const char *name) { return LLVMAppendBasicBlockInContext(c->ctx, c->fn, name); }
static inline LLVMValueRef add(Cg *c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(c->b, a, b, ""); }
/* Byte offsets in shared memory are non-negative and far under 2^31, so
 * their sums wrap neither way; saying so lets LLVM move constant parts into
 * the address (ld [r+2048]) instead of a register per address. */
static inline LLVMValueRef offset_add(Cg *c, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef s = LLVMBuildNSWAdd(c->b, a, b, "");
    if (LLVMIsAInstruction(s)) LLVMSetNUW(s, 1);
    return s;
}
static inline LLVMValueRef mul(Cg *c, LLVMValueRef a, int64_t k) { return LLVMBuildMul(c->b, a, i32c(c, k), ""); }
static inline LLVMValueRef udiv(Cg *c, LLVMValueRef a, int64_t k) { return LLVMBuildUDiv(c->b, a, i32c(c, k), ""); }
static inline LLVMValueRef urem(Cg *c, LLVMValueRef a, int64_t k) { return LLVMBuildURem(c->b, a, i32c(c, k), ""); }
static inline LLVMValueRef and1(Cg *c, LLVMValueRef a, LLVMValueRef b) { return !a ? b : !b ? a : LLVMBuildAnd(c->b, a, b, ""); }
static inline void smem_store(Cg *c, int buf, LLVMValueRef index, LLVMValueRef w) { LLVMBuildStore(c->b, w, smem_word_ptr(c, buf, index)); }
static inline LLVMValueRef smem_load(Cg *c, int buf, LLVMValueRef index) { return LLVMBuildLoad2(c->b, c->ti32, smem_word_ptr(c, buf, index), ""); }
/* An element of a scratch tile of dtype dt: 8 bytes for i64, else a word. */
static inline int smem_elem_bytes(DType dt) { return dt == DT_I64 ? 8 : 4; }
LLVMValueRef smem_elem_ptr(Cg *c, int buf, LLVMValueRef index, DType dt);
void smem_store_elem(Cg *c, int buf, LLVMValueRef index, LLVMValueRef v, DType dt);
LLVMValueRef smem_load_elem(Cg *c, int buf, LLVMValueRef index, DType dt);
static inline IrType vtype(Cg *c, ValueId v) { return ir_vtype(c->f, v); }
static inline bool is_tile(Cg *c, ValueId v) { return vtype(c, v).rank > 0; }

#pragma GCC visibility pop

#endif
