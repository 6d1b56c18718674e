/* codegen.c: tile IR to LLVM IR for the NVPTX backend, then PTX.
 *
 * Expects: verified IR (compiler/verify.c), every shape static.
 * Guarantees: one kernel per IrFunc, with the ABI of codegen.h; the block's
 * threads agree on every scalar and every branch (scalars are computed
 * redundantly by every thread), so barriers are always reached by all.
 *
 * Each tile value lives in the layout the layout pass (layout.c) chose: a
 * thread holds its slots as LLVM values, named by compile-time slot
 * numbers, so no register array is indexed at run time. Values without a
 * layout (splat, iota, broadcast and elementwise ops over those) are
 * materialized in the layout of their user. Where a value is wanted in
 * another layout it is converted through shared memory (barrier, write,
 * barrier, read), except that a layout with the same map, broadcasting a
 * SLICE back over its parent and reloading a tensor the kernel never
 * writes need no exchange.
 * Reductions run in registers, then across lanes with shfl.sync.bfly, then
 * across warps through shared memory. Tensor-core dots write their
 * operands to shared memory as 16-bit elements (rows padded by 16 bytes so
 * ldmatrix has no bank conflicts), load fragments with ldmatrix and leave
 * their result in the MMA layout's registers. */
#include "codegen.h"
#include "irutil.h"
#include "layout.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    LLVMValueRef *v;     /* one value per slot; scalars have one */
    int n;
    const Layout *lay;   /* NULL for scalars */
} Slots;

typedef struct { ValueId v; Slots s; } Cached;

/* A dot operand defined outside the loop that reads it: written to its own
 * shared-memory region once, where it is defined, instead of every
 * iteration (attn_fwd's q). */
typedef struct { ValueId root; bool tr; DType dt; int64_t base, stride; int depth; } Region;

enum { CG_MAX_RINGS = 64 };   /* ir_verify's limit on ring numbers */

typedef struct {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef tvoid, ti1, ti16, ti32, ti64, tf16, tbf16, tf32, tf64, tptr1, tptr3;
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
    LLVMValueRef smem;           /* placeholder for the scratch area, sized at the end */
    int64_t smem_words;
    LLVMValueRef opsmem;         /* placeholder for the regions of loop-invariant dot operands */
    int64_t opsmem_halves;
    VEC(Region) regions;
    int64_t ring_at[CG_MAX_RINGS], ring_slot_bytes[CG_MAX_RINGS];   /* by ring: byte offset in the operand area, slot size; -1 unplaced */
    LLVMBasicBlockRef exit_bb;
    char *err; size_t errlen;
    bool failed;
} Cg;

static void cg_fail(Cg *c, const IrOp *op, const char *msg)
{
    if (c->failed) return;
    c->failed = true;
    snprintf(c->err, c->errlen, "%s: %s at %d:%d: %s", c->f->name, op ? ir_op_name(op) : "?",
             op ? op->loc.line : 0, op ? op->loc.col : 0, msg);
}

/* ---- small builders ---- */

static LLVMTypeRef dtype_ty(Cg *c, DType dt)
{
    switch (dt) {
    case DT_BOOL: return c->ti1;
    case DT_I32: return c->ti32;
    case DT_F16: return c->tf16;
    case DT_BF16: return c->tbf16;
    case DT_F32: return c->tf32;
    default: return c->tvoid;
    }
}

static LLVMValueRef i32c(Cg *c, int64_t v) { return LLVMConstInt(c->ti32, (unsigned long long)v, 1); }
static LLVMValueRef f32c(Cg *c, double v) { return LLVMConstReal(c->tf32, v); }

/* A call of the function name (declared on first use) at B's position. */
static LLVMValueRef call_at(Cg *c, LLVMBuilderRef B, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts,
                            LLVMValueRef *args)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, pts, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn) fn = LLVMAddFunction(c->mod, name, fty);
    return LLVMBuildCall2(B, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef call(Cg *c, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts, LLVMValueRef *args)
{
    return call_at(c, c->b, name, ret, n, pts, args);
}

static LLVMValueRef call0(Cg *c, const char *name, LLVMTypeRef ret) { return call(c, name, ret, 0, NULL, NULL); }

static LLVMValueRef call1f(Cg *c, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = c->tf32;
    return call(c, name, c->tf32, 1, &t, &x);
}

static void barrier(Cg *c) { call0(c, "llvm.nvvm.barrier0", c->tvoid); }

static LLVMBasicBlockRef new_bb(Cg *c, const char *name) { return LLVMAppendBasicBlockInContext(c->ctx, c->fn, name); }

static LLVMValueRef add(Cg *c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(c->b, a, b, ""); }
static LLVMValueRef mul(Cg *c, LLVMValueRef a, int64_t k) { return LLVMBuildMul(c->b, a, i32c(c, k), ""); }
static LLVMValueRef udiv(Cg *c, LLVMValueRef a, int64_t k) { return LLVMBuildUDiv(c->b, a, i32c(c, k), ""); }
static LLVMValueRef urem(Cg *c, LLVMValueRef a, int64_t k) { return LLVMBuildURem(c->b, a, i32c(c, k), ""); }
static LLVMValueRef and1(Cg *c, LLVMValueRef a, LLVMValueRef b) { return !a ? b : !b ? a : LLVMBuildAnd(c->b, a, b, ""); }

/* float view of a value for arithmetic: f16/bf16 widen to f32 */
static LLVMValueRef to_f32(Cg *c, LLVMValueRef v, DType dt)
{
    if (dt == DT_F32) return v;
    if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPExt(c->b, v, c->tf32, "");
    if (dt == DT_I32) return LLVMBuildSIToFP(c->b, v, c->tf32, "");
    if (dt == DT_BOOL) return LLVMBuildUIToFP(c->b, v, c->tf32, "");
    return v;
}

static LLVMValueRef from_f32(Cg *c, LLVMValueRef v, DType dt)
{
    if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPTrunc(c->b, v, dtype_ty(c, dt), "");
    return v;
}

/* every dtype travels through shared memory as one 32-bit word */
static LLVMValueRef to_word(Cg *c, LLVMValueRef v, DType dt)
{
    switch (dt) {
    case DT_BOOL: return LLVMBuildZExt(c->b, v, c->ti32, "");
    case DT_I32: return v;
    default: return LLVMBuildBitCast(c->b, to_f32(c, v, dt), c->ti32, "");
    }
}

static LLVMValueRef from_word(Cg *c, LLVMValueRef w, DType dt)
{
    switch (dt) {
    case DT_BOOL: return LLVMBuildTrunc(c->b, w, c->ti1, "");
    case DT_I32: return w;
    default: return from_f32(c, LLVMBuildBitCast(c->b, w, c->tf32, ""), dt);
    }
}

/* The scratch area: words, or 16-bit halves for tensor-core operands. */
static void smem_need(Cg *c, int64_t words) { if (words > c->smem_words) c->smem_words = words; }

static LLVMValueRef smem_word_ptr(Cg *c, LLVMValueRef index)
{
    return LLVMBuildInBoundsGEP2(c->b, c->ti32, c->smem, &index, 1, "");
}

static void smem_store(Cg *c, LLVMValueRef index, LLVMValueRef w) { LLVMBuildStore(c->b, w, smem_word_ptr(c, index)); }
static LLVMValueRef smem_load(Cg *c, LLVMValueRef index) { return LLVMBuildLoad2(c->b, c->ti32, smem_word_ptr(c, index), ""); }

static LLVMValueRef smem_half_ptr_in(Cg *c, LLVMValueRef area, LLVMValueRef index)
{
    return LLVMBuildInBoundsGEP2(c->b, c->ti16, area, &index, 1, "");
}


/* Runs what follows only where cond holds (cond NULL: always). */
typedef struct { LLVMBasicBlockRef done; } Guard;
static Guard guard_begin(Cg *c, LLVMValueRef cond)
{
    Guard g = {NULL};
    if (!cond) return g;
    LLVMBasicBlockRef then = new_bb(c, "g"), done = new_bb(c, "gd");
    LLVMBuildCondBr(c->b, cond, then, done);
    LLVMPositionBuilderAtEnd(c->b, then);
    g.done = done;
    return g;
}

static void guard_end(Cg *c, Guard g)
{
    if (!g.done) return;
    LLVMBuildBr(c->b, g.done);
    LLVMPositionBuilderAtEnd(c->b, g.done);
}

static Slots new_slots(int n, const Layout *lay)
{
    Slots s = {xcalloc((size_t)(n ? n : 1), sizeof(LLVMValueRef)), n, lay};
    return s;
}

/* ---- where a slot lives ---- */

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

/* A thread's base (layout.h) in IR: the warp's and the lane's digits, from
 * which each axis's base is their scaled sum. active is NULL where every
 * warp is in use. */
typedef struct {
    LayoutThreadMap m;
    LLVMValueRef active;
    LLVMValueRef warp_digit[2], lane_digit[2];   /* by axis; NULL: no term */
} ThreadBase;

/* x / by or x % by for term t; NULL where the layout has no such term. */
static LLVMValueRef term_digit(Cg *c, LayoutTerm t, LLVMValueRef x)
{
    return !t.scale ? NULL : t.rem ? urem(c, x, t.by) : udiv(c, x, t.by);
}

static LLVMValueRef term_scaled(Cg *c, LayoutTerm t, LLVMValueRef digit)
{
    return !digit ? NULL : t.scale == 1 ? digit : mul(c, digit, t.scale);
}

static ThreadBase thread_base(Cg *c, const Layout *l)
{
    ThreadBase b;
    b.m = layout_thread_map(l);
    b.active = b.m.warps_in_use < c->T / 32 ? LLVMBuildICmp(c->b, LLVMIntULT, c->warp, i32c(c, b.m.warps_in_use), "") : NULL;
    /* idle warps compute a copy of warp 0's slots and never write */
    LLVMValueRef w = b.active ? LLVMBuildSelect(c->b, b.active, c->warp, i32c(c, 0), "") : c->warp;
    for (int a = 0; a < 2; a++) b.warp_digit[a] = term_digit(c, b.m.warp[a], w);
    for (int a = 0; a < 2; a++) b.lane_digit[a] = term_digit(c, b.m.lane[a], c->lane);
    return b;
}

static LLVMValueRef add_opt(Cg *c, LLVMValueRef a, LLVMValueRef b) { return !a ? b : !b ? a : add(c, a, b); }

/* The position along axis a: the slot's offset plus the thread's warp term
 * plus its lane term (a slice has neither along its reduced axis). The
 * sums associate as the generated code always has (an MMA slot's offset
 * joins the warp's term first, the lane's last), so the PTX LLVM schedules
 * from them stays the same. */
static LLVMValueRef axis_pos(Cg *c, const Layout *l, const ThreadBase *b, int a, int offset)
{
    LLVMValueRef lt = term_scaled(c, b->m.lane[a], b->lane_digit[a]), wt = term_scaled(c, b->m.warp[a], b->warp_digit[a]);
    LayKind kind = l->kind == LAY_SLICE ? l->parent->kind : l->kind;
    if (kind == LAY_MMA) return add_opt(c, add_opt(c, wt, i32c(c, offset)), lt);
    return add_opt(c, i32c(c, offset), add_opt(c, wt, lt));
}

/* Whether term t is 0 at x (layout_term_is_zero); NULL: always. */
static LLVMValueRef term_is_zero(Cg *c, LayoutTerm t, LLVMValueRef x)
{
    if (!t.scale) return NULL;
    return t.rem ? LLVMBuildICmp(c->b, LLVMIntEQ, urem(c, x, t.by), i32c(c, 0), "")
                 : LLVMBuildICmp(c->b, LLVMIntULT, x, i32c(c, t.by), "");
}

/* Whether this thread holds the owning copy of slice l's elements: its
 * parent's terms along the reduced axis are 0 (layout_thread_base's
 * first); NULL: always. */
static LLVMValueRef first_along_reduced_axis(Cg *c, const Layout *l)
{
    LayoutThreadMap pm = layout_thread_map(l->parent);
    LLVMValueRef warp0 = term_is_zero(c, pm.warp[l->axis], c->warp);
    LLVMValueRef lane0 = term_is_zero(c, pm.lane[l->axis], c->lane);
    return and1(c, lane0, warp0);
}

static SlotPos slot_pos(Cg *c, const Layout *l, int s)
{
    SlotPos p = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    LayoutSlot o = layout_slot_offset(l, s);
    ThreadBase b = thread_base(c, l);
    p.row = axis_pos(c, l, &b, 0, o.row);
    p.col = axis_pos(c, l, &b, 1, o.col);
    if (o.row_check) p.row_ok = LLVMBuildICmp(c->b, LLVMIntULT, p.row, i32c(c, l->rows), "");
    if (o.col_check) p.col_ok = LLVMBuildICmp(c->b, LLVMIntULT, p.col, i32c(c, l->cols), "");
    p.active = b.active;
    /* every thread along a slice's reduced axis holds the element, those
     * whose parent position lies past the tile on that axis too */
    if (l->kind == LAY_SLICE) p.owner = first_along_reduced_axis(c, l);
    p.valid = and1(c, p.active, and1(c, p.row_ok, p.col_ok));
    return p;
}

/* Writes every element of s to the scratch area at base + row * cols + col
 * (after a barrier, so earlier readers are done). */
static void slots_to_smem(Cg *c, const Slots *s, DType dt, int64_t base)
{
    const Layout *l = s->lay;
    smem_need(c, base + (int64_t)l->rows * l->cols);
    barrier(c);
    for (int k = 0; k < s->n; k++) {
        SlotPos p = slot_pos(c, l, k);
        Guard g = guard_begin(c, and1(c, p.valid, p.owner));
        smem_store(c, add(c, add(c, mul(c, p.row, l->cols), p.col), i32c(c, base)), to_word(c, s->v[k], dt));
        guard_end(c, g);
    }
}

/* Reads a tile in layout l from the scratch area; index(row, col) gives the
 * word. Slots that hold nothing read word base (in bounds, ignored). */
typedef LLVMValueRef (*WordIndex)(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx);

static Slots slots_from_smem(Cg *c, const Layout *l, DType dt, WordIndex index, const void *ctx)
{
    Slots out = new_slots(layout_nslots(l), l);
    for (int k = 0; k < out.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef w = index(c, p.row, p.col, ctx);
        if (p.valid) w = LLVMBuildSelect(c->b, p.valid, w, i32c(c, 0), "");
        out.v[k] = from_word(c, smem_load(c, w), dt);
    }
    return out;
}

typedef struct { int64_t cols, base; } RowMajor;

static LLVMValueRef row_major_index(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx)
{
    const RowMajor *m = ctx;
    return add(c, add(c, mul(c, row, m->cols), col), i32c(c, m->base));
}

/* Moves s through the scratch area into layout l: barrier, write, barrier,
 * read, each slot of l reading the word index(row, col). */
static Slots exchange(Cg *c, const Slots *s, DType dt, const Layout *l, WordIndex index, const void *ctx)
{
    slots_to_smem(c, s, dt, 0);
    barrier(c);
    return slots_from_smem(c, l, dt, index, ctx);
}

/* Element (row, col) of a transpose is (col, row) of its source. */
static LLVMValueRef transposed_index(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx)
{
    return add(c, mul(c, col, *(const int *)ctx), row);
}

/* Element (row, col) of a broadcast is its source's, a stretched axis read at 0. */
typedef struct { int rows, cols; } SourceShape;

static LLVMValueRef broadcast_index(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx)
{
    const SourceShape *src = ctx;
    LLVMValueRef r = src->rows == 1 ? i32c(c, 0) : row, cl = src->cols == 1 ? i32c(c, 0) : col;
    return add(c, mul(c, r, src->cols), cl);
}

/* ---- values in layouts ---- */

static IrType vtype(Cg *c, ValueId v) { return ir_vtype(c->f, v); }
static bool is_tile(Cg *c, ValueId v) { return vtype(c, v).rank > 0; }

static const Layout *default_layout(Cg *c, IrType t)
{
    int bytes = t.dt == DT_F16 || t.dt == DT_BF16 ? 2 : 4;
    return layout_blocked(c->layouts, ir_rows(t), ir_cols(t), c->T, bytes);
}

/* The layout a value is emitted in: its planned one, else (values
 * materialized where used) the default for its shape. */
static const Layout *home_layout(Cg *c, ValueId v)
{
    return c->plan.of[v] ? c->plan.of[v] : default_layout(c, vtype(c, v));
}

/* The register layout a value is read in where its user has no layout
 * of its own to ask for: its home, unless that is shared memory. */
static const Layout *reg_layout(Cg *c, ValueId v)
{
    const Layout *l = home_layout(c, v);
    return l->kind == LAY_SHARED ? default_layout(c, vtype(c, v)) : l;
}

static Slots get(Cg *c, ValueId v, const Layout *l);

static Slots emit_load_in(Cg *c, const IrOp *op, const Layout *l);
static Slots read_shared(Cg *c, ValueId v, const Slots *s, const Layout *l);

/* Converts s (value v) to layout l. */
static Slots convert_layout(Cg *c, ValueId v, const Slots *s, const Layout *l)
{
    const IrOp *def = c->f->values[v].def;
    if (s->lay && s->lay->kind == LAY_SHARED) return read_shared(c, v, s, l);
    if (l->kind == LAY_SHARED) {
        cg_fail(c, def, "internal error: a register tile where a shared-memory ring slot is wanted");
        return new_slots(1, l);
    }
    /* a tensor the kernel never writes can be read again in the new layout */
    if (def && def->kind == OP_LOAD && !c->stored[def->param]) return emit_load_in(c, def, l);
    RowMajor m = {l->cols, 0};
    return exchange(c, s, vtype(c, v).dt, l, row_major_index, &m);
}

static Slots materialize(Cg *c, ValueId v, const Layout *l);

static Slots cache_find(Cg *c, ValueId v, const Layout *l)
{
    for (int i = c->cache.len - 1; i >= 0; i--)
        if (c->cache.data[i].v == v && layout_same_map(c->cache.data[i].s.lay, l)) return c->cache.data[i].s;
    return (Slots){NULL, 0, NULL};
}

static Slots get(Cg *c, ValueId v, const Layout *l)
{
    Slots *own = &c->vals[v];
    /* a layout with the same map holds the value already */
    if (!is_tile(c, v) || (own->v && layout_same_map(own->lay, l))) return *own;
    Slots s = cache_find(c, v, l);
    if (s.v) return s;
    s = own->v ? convert_layout(c, v, own, l) : materialize(c, v, l);
    vec_push(&c->cache, ((Cached){v, s}));
    return s;
}

/* Forgets conversions made inside a block when the block ends: they do
 * not dominate what follows. */
static void cache_truncate(Cg *c, int len)
{
    while (c->cache.len > len) free(c->cache.data[--c->cache.len].s.v);
}

static LLVMValueRef scalar_binop(Cg *c, IrBinop op, DType dt, LLVMValueRef a, LLVMValueRef b);
static LLVMValueRef scalar_unop(Cg *c, IrUnop op, DType dt, LLVMValueRef a);
static LLVMValueRef scalar_cmp(Cg *c, IrCmp op, DType dt, LLVMValueRef a, LLVMValueRef b);
static LLVMValueRef convert(Cg *c, LLVMValueRef v, DType from, DType to);

static LLVMValueRef elementwise(Cg *c, const IrOp *op, DType in, DType out, LLVMValueRef *a)
{
    switch (op->kind) {
    case OP_UNARY: return scalar_unop(c, op->sub, in, a[0]);
    case OP_BINARY: return scalar_binop(c, op->sub, in, a[0], a[1]);
    case OP_CMP: return scalar_cmp(c, op->sub, in, a[0], a[1]);
    case OP_SELECT: return LLVMBuildSelect(c->b, a[0], a[1], a[2], "");
    case OP_CONVERT: return convert(c, a[0], in, out);
    default: return a[0];
    }
}

static DType operand_dtype(Cg *c, const IrOp *op)
{
    return vtype(c, op->args[op->kind == OP_SELECT ? 1 : 0]).dt;
}

/* Builds value v (an op without a layout of its own) in layout l. */
static Slots materialize(Cg *c, ValueId v, const Layout *l)
{
    const IrOp *op = c->f->values[v].def;
    IrType t = vtype(c, v);
    int n = layout_nslots(l);
    Slots out = new_slots(n, l);
    switch (op->kind) {
    case OP_SPLAT:
        for (int k = 0; k < n; k++) out.v[k] = c->vals[op->args[0]].v[0];
        break;
    case OP_IOTA:
        for (int k = 0; k < n; k++) {
            SlotPos p = slot_pos(c, l, k);
            out.v[k] = t.rank == 2 && op->axis == 0 ? p.row : p.col;
        }
        break;
    case OP_BROADCAST: {
        ValueId src = op->args[0];
        IrType st = vtype(c, src);
        int r0 = ir_rows(st), c0 = ir_cols(st);
        if (r0 == l->rows && c0 == l->cols) {
            Slots s = get(c, src, l);
            for (int k = 0; k < n; k++) out.v[k] = s.v[k];
            break;
        }
        /* a row or column over a layout that is not a slice: each slot
         * reads the slice's slot at its position */
        int axis = r0 == l->rows && c0 == 1 ? 1 : r0 == 1 && c0 == l->cols ? 0 : -1;
        if (axis >= 0 && l->kind != LAY_SLICE) {
            const Layout *sl = layout_slice(c->layouts, l, axis);
            Slots s = get(c, src, sl);
            for (int k = 0; k < n; k++) out.v[k] = s.v[layout_slice_slot(sl, k)];
            break;
        }
        /* anything else: through shared memory, reading the stretched element */
        Slots home = get(c, src, reg_layout(c, src));
        SourceShape shape = {r0, c0};
        free(out.v);
        return exchange(c, &home, st.dt, l, broadcast_index, &shape);
    }
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_CONVERT: {
        Slots args[3];
        for (int i = 0; i < op->nargs && i < 3; i++) args[i] = get(c, op->args[i], l);
        DType in = operand_dtype(c, op);
        for (int k = 0; k < n; k++) {
            LLVMValueRef a[3];
            for (int i = 0; i < op->nargs && i < 3; i++) a[i] = args[i].n == 1 && !args[i].lay ? args[i].v[0] : args[i].v[k];
            out.v[k] = elementwise(c, op, in, t.dt, a);
        }
        break;
    }
    default:
        cg_fail(c, op, "internal error: no way to build this value in another layout");
        for (int k = 0; k < n; k++) out.v[k] = LLVMGetUndef(dtype_ty(c, t.dt));
        break;
    }
    return out;
}

/* ---- memory ---- */

/* The element (row, col) of the window at slot position p: its offset in
 * the tensor (i64) and whether it lies inside. */
static void window_elem(Cg *c, const IrOp *op, SlotPos p, LLVMValueRef *offset, LLVMValueRef *inb)
{
    const IrParam *prm = &c->f->params[op->param];
    LLVMBuilderRef B = c->b;
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef ok;
    if (prm->rank == 1) {
        LLVMValueRef cl = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, p.col, c->ti64, ""), "");
        ok = LLVMBuildICmp(B, LLVMIntULT, cl, d0, "");   /* unsigned: negative is out */
        *offset = cl;
    } else {
        LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, p.row, c->ti64, ""), "");
        LLVMValueRef cl = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, ""), LLVMBuildZExt(B, p.col, c->ti64, ""), "");
        ok = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, r, d0, ""), LLVMBuildICmp(B, LLVMIntULT, cl, d1, ""), "");
        *offset = LLVMBuildAdd(B, LLVMBuildMul(B, r, d1, ""), cl, "");
    }
    *inb = p.valid ? LLVMBuildAnd(B, ok, p.valid, "") : ok;
}

/* Loads without branches: an element outside the tensor reads element 0
 * (which exists: dims are at least 1) and is replaced by zero. */
static Slots load_scalar(Cg *c, const IrOp *op, const Layout *l)
{
    IrType t = vtype(c, op->res[0]);
    LLVMTypeRef et = dtype_ty(c, t.dt);
    Slots out = new_slots(layout_nslots(l), l);
    for (int k = 0; k < out.n; k++) {
        LLVMValueRef off, inb;
        window_elem(c, op, slot_pos(c, l, k), &off, &inb);
        off = LLVMBuildSelect(c->b, inb, off, LLVMConstInt(c->ti64, 0, 0), "");
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef v = LLVMBuildLoad2(c->b, et, ptr, "");
        out.v[k] = LLVMBuildSelect(c->b, inb, v, LLVMConstNull(et), "");
    }
    return out;
}

/* A BLOCKED layout's chunks of v columns as vector loads, when the rows,
 * the window's start and the address are aligned to a chunk: then a chunk
 * is wholly inside the tensor or wholly outside. */
static Slots load_vector(Cg *c, const IrOp *op, const Layout *l)
{
    IrType t = vtype(c, op->res[0]);
    LLVMTypeRef et = dtype_ty(c, t.dt), vt = LLVMVectorType(et, (unsigned)l->v);
    Slots out = new_slots(layout_nslots(l), l);
    for (int k = 0; k < out.n; k += l->v) {
        LLVMValueRef off, inb;
        window_elem(c, op, slot_pos(c, l, k), &off, &inb);
        off = LLVMBuildSelect(c->b, inb, off, LLVMConstInt(c->ti64, 0, 0), "");
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef v = LLVMBuildLoad2(c->b, vt, ptr, "");
        LLVMSetAlignment(v, (unsigned)(l->v * (t.dt == DT_F16 || t.dt == DT_BF16 ? 2 : 4)));
        for (int j = 0; j < l->v; j++)
            out.v[k + j] = LLVMBuildSelect(c->b, inb, LLVMBuildExtractElement(c->b, v, i32c(c, j), ""), LLVMConstNull(et), "");
    }
    return out;
}

static Slots emit_load_in(Cg *c, const IrOp *op, const Layout *l)
{
    if (l->kind != LAY_BLOCKED || l->v < 2) return load_scalar(c, op, l);
    const IrParam *prm = &c->f->params[op->param];
    LLVMBuilderRef B = c->b;
    int64_t bytes = (int64_t)l->v * (prm->dt == DT_F16 || prm->dt == DT_BF16 ? 2 : 4);
    LLVMValueRef row_len = prm->rank == 2 ? c->tensor_dim1[op->param] : c->tensor_dim0[op->param];
    LLVMValueRef start = c->vals[op->args[prm->rank - 1]].v[0];
    LLVMValueRef addr = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    LLVMValueRef aligned = LLVMBuildAnd(B,
        LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildURem(B, row_len, LLVMConstInt(c->ti64, (unsigned long long)l->v, 0), ""), LLVMConstInt(c->ti64, 0, 0), ""),
        LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, start, i32c(c, l->v - 1), ""), i32c(c, 0), ""),
                     LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, addr, LLVMConstInt(c->ti64, (unsigned long long)bytes - 1, 0), ""),
                                   LLVMConstInt(c->ti64, 0, 0), ""), ""), "");
    LLVMBasicBlockRef vec = new_bb(c, "ldv"), scal = new_bb(c, "lds"), done = new_bb(c, "ldd");
    LLVMBuildCondBr(B, aligned, vec, scal);
    LLVMPositionBuilderAtEnd(B, vec);
    Slots a = load_vector(c, op, l);
    LLVMBasicBlockRef vec_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, scal);
    Slots s = load_scalar(c, op, l);
    LLVMBasicBlockRef scal_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    LLVMTypeRef et = dtype_ty(c, vtype(c, op->res[0]).dt);
    for (int k = 0; k < a.n; k++) {
        LLVMValueRef phi = LLVMBuildPhi(B, et, "");
        LLVMValueRef vs[2] = {a.v[k], s.v[k]};
        LLVMBasicBlockRef bs[2] = {vec_end, scal_end};
        LLVMAddIncoming(phi, vs, bs, 2);
        a.v[k] = phi;
    }
    free(s.v);
    return a;
}

static void emit_store(Cg *c, const IrOp *op)
{
    const IrParam *prm = &c->f->params[op->param];
    ValueId val = op->args[op->nargs - 1];
    LLVMTypeRef et = dtype_ty(c, prm->dt);
    const Layout *l = is_tile(c, val) ? reg_layout(c, val) : NULL;
    if (!l) {
        /* a scalar stored to a one-element window (sema broadcasts tiles) */
        cg_fail(c, op, "internal error: scalar store");
        return;
    }
    Slots s = get(c, val, l);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef off, inb;
        window_elem(c, op, p, &off, &inb);
        Guard g = guard_begin(c, and1(c, inb, p.owner));
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMBuildStore(c->b, s.v[k], ptr);
        guard_end(c, g);
    }
}

/* ---- asynchronous copies into shared-memory rings ---- */

static LLVMValueRef opsmem_byte_ptr(Cg *c, LLVMValueRef offset)
{
    return LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->ctx), c->opsmem, &offset, 1, "");
}

/* Gives each ring its stages slots in the operand area, rows padded as
 * layout_shared says. */
static void plan_rings(Cg *c, const IrBlock *blk)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        if (op->kind == OP_COPY_ASYNC && c->ring_at[op->axis] < 0) {
            const Layout *l = c->plan.of[op->res[0]];
            int64_t slot = (int64_t)l->rows * l->stride * l->elem;
            c->ring_slot_bytes[op->axis] = slot;
            c->ring_at[op->axis] = c->opsmem_halves * 2;
            c->opsmem_halves += (op->ival * slot / 2 + 7) / 8 * 8;
        }
        if (op->body) plan_rings(c, op->body);
        if (op->els) plan_rings(c, op->els);
    }
}

/* The window's 16-byte chunks, spread over the block's threads, each
 * with cp.async.cg (zero-filled past the tensor's edges) when the rows and
 * the window's start are whole chunks and the tensor is 16-byte aligned;
 * else element by element, synchronously, into the same slot. */
static void emit_copy_async(Cg *c, const IrOp *op)
{
    LLVMBuilderRef B = c->b;
    const Layout *l = c->plan.of[op->res[0]];
    const IrParam *prm = &c->f->params[op->param];
    DType dt = vtype(c, op->res[0]).dt;
    int chunk = 16 / l->elem, per_row = l->cols / chunk;
    int64_t nchunks = (int64_t)l->rows * per_row;
    LLVMValueRef slot = c->vals[op->args[op->nargs - 1]].v[0];
    LLVMValueRef at = add(c, i32c(c, c->ring_at[op->axis]), mul(c, slot, c->ring_slot_bytes[op->axis]));
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef r0 = LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, "");
    LLVMValueRef c0 = LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, "");
    LLVMValueRef zero64 = LLVMConstInt(c->ti64, 0, 0);
    LLVMValueRef addr = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    LLVMValueRef chunk64 = LLVMConstInt(c->ti64, (unsigned long long)chunk, 0);
    LLVMValueRef aligned = LLVMBuildAnd(B,
        LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildURem(B, d1, chunk64, ""), zero64, ""),
                     LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildSRem(B, c0, chunk64, ""), zero64, ""), ""),
        LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, addr, LLVMConstInt(c->ti64, 15, 0), ""), zero64, ""), "");
    (void)prm;
    LLVMBasicBlockRef fast = new_bb(c, "cpa"), slow = new_bb(c, "cps"), done = new_bb(c, "cpd");
    LLVMBuildCondBr(B, aligned, fast, slow);

    LLVMPositionBuilderAtEnd(B, fast);
    LLVMTypeRef et = dtype_ty(c, dt);
    LLVMTypeRef cpt[3] = {c->tptr3, c->tptr1, c->ti32};
    for (int64_t j = 0; j < nchunks; j += c->T) {
        LLVMValueRef idx = add(c, c->tid, i32c(c, j));
        Guard g = guard_begin(c, j + c->T > nchunks ? LLVMBuildICmp(B, LLVMIntULT, idx, i32c(c, nchunks), "") : NULL);
        LLVMValueRef row = udiv(c, idx, per_row), cc = urem(c, idx, per_row);
        LLVMValueRef gr = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, row, c->ti64, ""), "");
        LLVMValueRef gc = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, mul(c, cc, chunk), c->ti64, ""), "");
        LLVMValueRef inb = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, gr, d0, ""), LLVMBuildICmp(B, LLVMIntULT, gc, d1, ""), "");
        LLVMValueRef off = LLVMBuildSelect(B, inb, LLVMBuildAdd(B, LLVMBuildMul(B, gr, d1, ""), gc, ""), zero64, "");
        LLVMValueRef src = LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef dst = opsmem_byte_ptr(c, add(c, at, add(c, mul(c, row, (int64_t)l->stride * l->elem), mul(c, cc, 16))));
        LLVMValueRef args[3] = {dst, src, LLVMBuildSelect(B, inb, i32c(c, 16), i32c(c, 0), "")};
        call_at(c, B, "llvm.nvvm.cp.async.cg.shared.global.16.s", c->tvoid, 3, cpt, args);
        guard_end(c, g);
    }
    LLVMBuildBr(B, done);

    LLVMPositionBuilderAtEnd(B, slow);
    int64_t n = (int64_t)l->rows * l->cols;
    for (int64_t j = 0; j < n; j += c->T) {
        LLVMValueRef idx = add(c, c->tid, i32c(c, j));
        Guard g = guard_begin(c, j + c->T > n ? LLVMBuildICmp(B, LLVMIntULT, idx, i32c(c, n), "") : NULL);
        LLVMValueRef row = udiv(c, idx, l->cols), col = urem(c, idx, l->cols);
        LLVMValueRef gr = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, row, c->ti64, ""), "");
        LLVMValueRef gc = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, col, c->ti64, ""), "");
        LLVMValueRef inb = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, gr, d0, ""), LLVMBuildICmp(B, LLVMIntULT, gc, d1, ""), "");
        LLVMValueRef off = LLVMBuildSelect(B, inb, LLVMBuildAdd(B, LLVMBuildMul(B, gr, d1, ""), gc, ""), zero64, "");
        LLVMValueRef x = LLVMBuildLoad2(B, et, LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, ""), "");
        x = LLVMBuildSelect(B, inb, x, LLVMConstNull(et), "");
        LLVMValueRef dst = opsmem_byte_ptr(c, add(c, at, mul(c, add(c, mul(c, row, l->stride), col), l->elem)));
        LLVMBuildStore(B, x, dst);
        guard_end(c, g);
    }
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    Slots out = new_slots(1, l);
    out.v[0] = at;
    c->vals[op->res[0]] = out;
}

/* Waits until at most ival groups of this thread's copies are in flight;
 * with copies to publish, a barrier then makes every thread's visible
 * (and ends every read of the slots the next copies refill). */
static void emit_wait_async(Cg *c, const IrOp *op)
{
    LLVMTypeRef ti32 = c->ti32;
    LLVMValueRef pending = i32c(c, op->ival);
    call(c, "llvm.nvvm.cp.async.wait.group", c->tvoid, 1, &ti32, &pending);
    if (op->nargs) barrier(c);
    for (int i = 0; i < op->nargs; i++) {
        Slots s = c->vals[op->args[i]];
        if (!s.v) s = get(c, op->args[i], home_layout(c, op->args[i]));
        Slots r = new_slots(s.n, s.lay);
        memcpy(r.v, s.v, sizeof *r.v * (size_t)s.n);
        c->vals[op->res[i]] = r;
    }
}

/* A tile in a ring slot (s holds its byte offset), read into layout l. */
static Slots read_shared(Cg *c, ValueId v, const Slots *s, const Layout *l)
{
    const Layout *sl = s->lay;
    LLVMTypeRef et = dtype_ty(c, vtype(c, v).dt);
    Slots out = new_slots(layout_nslots(l), l);
    for (int k = 0; k < out.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef idx = add(c, mul(c, p.row, sl->stride), p.col);
        if (p.valid) idx = LLVMBuildSelect(c->b, p.valid, idx, i32c(c, 0), "");
        LLVMValueRef ptr = opsmem_byte_ptr(c, add(c, s->v[0], mul(c, idx, sl->elem)));
        out.v[k] = LLVMBuildLoad2(c->b, et, ptr, "");
    }
    return out;
}

/* ---- reductions ---- */

static LLVMValueRef shfl_xor(Cg *c, LLVMValueRef v, int mask, bool isint)
{
    LLVMTypeRef ty = isint ? c->ti32 : c->tf32;
    LLVMTypeRef pts[4] = {c->ti32, ty, c->ti32, c->ti32};
    LLVMValueRef args[4] = {LLVMConstInt(c->ti32, 0xffffffffu, 0), v, i32c(c, mask), i32c(c, 31)};
    return call(c, isint ? "llvm.nvvm.shfl.sync.bfly.i32" : "llvm.nvvm.shfl.sync.bfly.f32", ty, 4, pts, args);
}

static LLVMValueRef reduce_identity(Cg *c, IrReduce r, bool isint)
{
    if (isint) return i32c(c, r == RED_SUM ? 0 : r == RED_MAX ? INT32_MIN : INT32_MAX);
    /* the values that change nothing, so the result is the interpreter's,
     * which starts from the first element: max and min ignore a NaN operand
     * (an all-NaN set stays NaN, where -inf would win), and -0 + x is x for
     * every x (+0 would turn a sum of -0s into +0) */
    return f32c(c, r == RED_SUM ? -0.0 : __builtin_nan(""));
}

static LLVMValueRef reduce_combine(Cg *c, IrReduce r, bool isint, LLVMValueRef a, LLVMValueRef b)
{
    IrBinop op = r == RED_SUM ? BIN_ADD : r == RED_MAX ? BIN_MAX : BIN_MIN;
    return scalar_binop(c, op, isint ? DT_I32 : DT_F32, a, b);
}

/* For reducing layout l along axis into slice out: the slot of out each
 * of a thread's slots adds to, and the lanes and warps that share an
 * output element. */
typedef struct { int ngroups; int *group; int lane_masks[5], nmasks; int nwarps; LLVMValueRef warp_index; } ReducePlan;

static ReducePlan reduce_plan(Cg *c, const Layout *l, const Layout *out, int axis)
{
    int n = layout_nslots(l);
    ReducePlan rp = {layout_nslots(out), xcalloc((size_t)n, sizeof(int)), {0}, 0, 1, NULL};
    for (int s = 0; s < n; s++) rp.group[s] = layout_slice_slot(out, s);
    if (l->kind == LAY_MMA) {
        if (axis == 1) { rp.lane_masks[0] = 1; rp.lane_masks[1] = 2; rp.nmasks = 2; rp.nwarps = l->wn; rp.warp_index = urem(c, c->warp, l->wn); }
        else { rp.lane_masks[0] = 4; rp.lane_masks[1] = 8; rp.lane_masks[2] = 16; rp.nmasks = 3; rp.nwarps = l->wm; rp.warp_index = udiv(c, c->warp, l->wn); }
    } else if (axis == 1) {
        for (int m = 1; m < l->tc; m *= 2) rp.lane_masks[rp.nmasks++] = m;
        rp.nwarps = l->wc;
        rp.warp_index = urem(c, c->warp, l->wc);
    } else {
        for (int m = l->tc; m < 32; m *= 2) rp.lane_masks[rp.nmasks++] = m;
        rp.nwarps = l->wr;
        rp.warp_index = udiv(c, c->warp, l->wc);
    }
    return rp;
}

static void emit_reduce(Cg *c, const IrOp *op)
{
    ValueId src = op->args[0];
    IrType st = vtype(c, src), t = vtype(c, op->res[0]);
    const Layout *out_l = c->plan.of[op->res[0]];
    bool isint = st.dt == DT_I32;
    IrReduce r = op->sub;
    if (!out_l || out_l->kind != LAY_SLICE) {
        /* a reduction the layout pass left to shared memory: a thread per output element */
        Slots home = get(c, src, reg_layout(c, src));
        slots_to_smem(c, &home, st.dt, 0);
        barrier(c);
        const Layout *l = home_layout(c, op->res[0]);
        Slots out = new_slots(layout_nslots(l), l);
        int R = ir_rows(st), C = ir_cols(st), len = op->axis == 1 ? C : R;
        for (int k = 0; k < out.n; k++) {
            SlotPos p = slot_pos(c, l, k);
            LLVMValueRef acc = reduce_identity(c, r, isint);
            LLVMValueRef base = op->axis == 1 ? mul(c, p.row, C) : p.col;
            if (p.valid) base = LLVMBuildSelect(c->b, p.valid, base, i32c(c, 0), "");
            for (int i = 0; i < len; i++) {
                LLVMValueRef w = smem_load(c, add(c, base, i32c(c, (int64_t)i * (op->axis == 1 ? 1 : C))));
                acc = reduce_combine(c, r, isint, acc, isint ? w : LLVMBuildBitCast(c->b, w, c->tf32, ""));
            }
            out.v[k] = isint ? acc : from_f32(c, acc, t.dt);
        }
        c->vals[op->res[0]] = out;
        return;
    }
    const Layout *l = out_l->parent;
    Slots s = get(c, src, l);
    ReducePlan rp = reduce_plan(c, l, out_l, op->axis);
    LLVMValueRef *part = xmalloc(sizeof *part * (size_t)rp.ngroups);
    for (int g = 0; g < rp.ngroups; g++) part[g] = reduce_identity(c, r, isint);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef x = isint ? s.v[k] : to_f32(c, s.v[k], st.dt);
        if (p.valid) x = LLVMBuildSelect(c->b, p.valid, x, reduce_identity(c, r, isint), "");
        part[rp.group[k]] = reduce_combine(c, r, isint, part[rp.group[k]], x);
    }
    for (int g = 0; g < rp.ngroups; g++)
        for (int m = 0; m < rp.nmasks; m++)
            part[g] = reduce_combine(c, r, isint, part[g], shfl_xor(c, part[g], rp.lane_masks[m], isint));
    if (rp.nwarps > 1) {
        /* partials of the warps that share an output element meet in shared memory */
        int len = op->axis == 1 ? l->rows : l->cols;
        smem_need(c, (int64_t)rp.nwarps * len);
        barrier(c);
        /* An output element exists where its slot of the result (a slice)
         * is valid: the kept axis only. Every warp writes its partial, the
         * identity for a warp whose rows (columns) all lie past the tile,
         * since every warp's is read; every copy reads the total. */
        LLVMValueRef *pos = xmalloc(sizeof *pos * (size_t)rp.ngroups), *kept = xmalloc(sizeof *kept * (size_t)rp.ngroups);
        for (int g = 0; g < rp.ngroups; g++) {
            SlotPos p = slot_pos(c, out_l, g);
            pos[g] = op->axis == 1 ? p.row : p.col;
            kept[g] = p.valid;
            LLVMValueRef lead = op->axis == 1
                ? (l->kind == LAY_MMA ? LLVMBuildICmp(c->b, LLVMIntEQ, urem(c, c->lane, 4), i32c(c, 0), "")
                                      : LLVMBuildICmp(c->b, LLVMIntEQ, urem(c, c->lane, l->tc), i32c(c, 0), ""))
                : (l->kind == LAY_MMA ? LLVMBuildICmp(c->b, LLVMIntULT, c->lane, i32c(c, 4), "")
                                      : LLVMBuildICmp(c->b, LLVMIntULT, c->lane, i32c(c, l->tc), ""));
            Guard gd = guard_begin(c, and1(c, kept[g], lead));
            LLVMValueRef w = isint ? part[g] : LLVMBuildBitCast(c->b, part[g], c->ti32, "");
            smem_store(c, add(c, mul(c, rp.warp_index, len), pos[g]), w);
            guard_end(c, gd);
        }
        barrier(c);
        for (int g = 0; g < rp.ngroups; g++) {
            LLVMValueRef at = kept[g] ? LLVMBuildSelect(c->b, kept[g], pos[g], i32c(c, 0), "") : pos[g];
            LLVMValueRef acc = reduce_identity(c, r, isint);
            for (int w = 0; w < rp.nwarps; w++) {
                LLVMValueRef x = smem_load(c, add(c, at, i32c(c, (int64_t)w * len)));
                acc = reduce_combine(c, r, isint, acc, isint ? x : LLVMBuildBitCast(c->b, x, c->tf32, ""));
            }
            part[g] = acc;
        }
        free(pos);
        free(kept);
    }
    Slots out = new_slots(rp.ngroups, out_l);
    for (int g = 0; g < rp.ngroups; g++) out.v[g] = isint ? part[g] : from_f32(c, part[g], t.dt);
    c->vals[op->res[0]] = out;
    free(part);
    free(rp.group);
}

/* ---- dots ---- */

/* The value whose elements a dot operand is, and whether it is read
 * transposed: transposes and converts absorbed by the layout pass are
 * applied as the operand is written to shared memory. */
static ValueId operand_root(Cg *c, ValueId v, bool *transposed)
{
    *transposed = false;
    for (;;) {
        const IrOp *d = c->f->values[v].def;
        if (!d || !c->plan.absorbed[v]) return v;
        if (d->kind == OP_TRANSPOSE) *transposed = !*transposed;
        v = d->args[0];
    }
}

/* Writes dot operand v to shared memory as dtype dt, element (r, c) at
 * base + r * stride + c, in units of elem (2: halves, 4: words). */
static void root_to_smem(Cg *c, ValueId root, bool tr, DType dt, LLVMValueRef area, int64_t base, int64_t stride, int elem);

static void operand_to_smem(Cg *c, ValueId v, DType dt, int64_t base, int64_t stride, int elem)
{
    bool tr;
    ValueId root = operand_root(c, v, &tr);
    root_to_smem(c, root, tr, dt, c->smem, base, stride, elem);
}

static void root_to_smem(Cg *c, ValueId root, bool tr, DType dt, LLVMValueRef area, int64_t base, int64_t stride, int elem)
{
    IrType rt = vtype(c, root);
    const Layout *l = reg_layout(c, root);
    Slots s = get(c, root, l);
    /* chunks of consecutive halves go out as one 16-byte store */
    int vec = !tr && elem == 2 && l->kind == LAY_BLOCKED && l->v >= 2 && stride % l->v == 0 && base % l->v == 0 ? l->v : 1;
    for (int k = 0; k < s.n; k += vec) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef row = tr ? p.col : p.row, col = tr ? p.row : p.col;
        LLVMValueRef idx = add(c, add(c, mul(c, row, stride), col), i32c(c, base));
        Guard g = guard_begin(c, and1(c, p.valid, p.owner));
        if (vec > 1) {
            LLVMTypeRef vt = LLVMVectorType(dtype_ty(c, dt), (unsigned)vec);
            LLVMValueRef x = LLVMGetUndef(vt);
            for (int j = 0; j < vec; j++)
                x = LLVMBuildInsertElement(c->b, x, convert(c, s.v[k + j], rt.dt, dt), i32c(c, j), "");
            LLVMValueRef st = LLVMBuildStore(c->b, x, smem_half_ptr_in(c, area, idx));
            LLVMSetAlignment(st, (unsigned)(vec * 2));
        } else {
            LLVMValueRef x = convert(c, s.v[k], rt.dt, dt);
            if (elem == 2) LLVMBuildStore(c->b, x, smem_half_ptr_in(c, area, idx));
            else smem_store(c, idx, to_word(c, x, dt));
        }
        guard_end(c, g);
    }
}

static void emit_dot_fma(Cg *c, const IrOp *op)
{
    IrType at = vtype(c, op->args[0]), t = vtype(c, op->res[0]);
    bool tb = op->flags & DOT_TRANS_B;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    smem_need(c, (int64_t)M * K + (int64_t)K * N);
    barrier(c);
    operand_to_smem(c, op->args[0], DT_F32, 0, K, 4);
    operand_to_smem(c, op->args[1], DT_F32, (int64_t)M * K, tb ? K : N, 4);
    barrier(c);
    const Layout *l = home_layout(c, op->res[0]);
    Slots acc = get(c, op->args[2], l);
    int n = layout_nslots(l);
    Slots out = new_slots(n, l);
    LLVMValueRef *arow = xmalloc(sizeof *arow * (size_t)n), *bcol = xmalloc(sizeof *bcol * (size_t)n);
    LLVMValueRef *phis = xmalloc(sizeof *phis * (size_t)n);
    for (int k = 0; k < n; k++) {
        SlotPos p = slot_pos(c, l, k);
        arow[k] = p.valid ? LLVMBuildSelect(c->b, p.valid, p.row, i32c(c, 0), "") : p.row;
        bcol[k] = p.valid ? LLVMBuildSelect(c->b, p.valid, p.col, i32c(c, 0), "") : p.col;
    }
    /* a loop over K carrying one accumulator per slot */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), head = new_bb(c, "k"), done = new_bb(c, "kd");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef kk = LLVMBuildPhi(c->b, c->ti32, "k"), zero = i32c(c, 0);
    LLVMAddIncoming(kk, &zero, &pre, 1);
    for (int k = 0; k < n; k++) {
        phis[k] = LLVMBuildPhi(c->b, c->tf32, "");
        LLVMAddIncoming(phis[k], &acc.v[k], &pre, 1);
    }
    LLVMValueRef *next = xmalloc(sizeof *next * (size_t)n);
    for (int k = 0; k < n; k++) {
        LLVMValueRef ai = add(c, mul(c, arow[k], K), kk);
        LLVMValueRef bi = tb ? add(c, mul(c, bcol[k], K), kk) : add(c, mul(c, kk, N), bcol[k]);
        bi = add(c, bi, i32c(c, (int64_t)M * K));
        LLVMValueRef a = LLVMBuildBitCast(c->b, smem_load(c, ai), c->tf32, "");
        LLVMValueRef b = LLVMBuildBitCast(c->b, smem_load(c, bi), c->tf32, "");
        LLVMTypeRef t3[3] = {c->tf32, c->tf32, c->tf32};
        LLVMValueRef abc[3] = {a, b, phis[k]};
        next[k] = call(c, "llvm.fma.f32", c->tf32, 3, t3, abc);
    }
    LLVMValueRef k1 = add(c, kk, i32c(c, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMAddIncoming(kk, &k1, &latch, 1);
    for (int k = 0; k < n; k++) LLVMAddIncoming(phis[k], &next[k], &latch, 1);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, k1, i32c(c, K), ""), head, done);
    LLVMPositionBuilderAtEnd(c->b, done);
    /* the loop runs its body at least once and tests at the bottom: the
     * result is the last sum, not the header's phi (which lacks k = K-1) */
    for (int k = 0; k < n; k++) out.v[k] = next[k];
    c->vals[op->res[0]] = out;
    free(arow); free(bcol); free(phis); free(next);
}

static const Region *find_region(Cg *c, ValueId operand, DType dt)
{
    bool tr;
    ValueId root = operand_root(c, operand, &tr);
    for (int i = 0; i < c->regions.len; i++)
        if (c->regions.data[i].root == root && c->regions.data[i].tr == tr && c->regions.data[i].dt == dt) return &c->regions.data[i];
    return NULL;
}

/* Finds the tensor-core dot operands defined outside the loop that reads
 * them and gives each its region. */
static void plan_regions(Cg *c, const IrBlock *blk, int depth, int *def_depth)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        for (int j = 0; j < op->nres; j++) def_depth[op->res[j]] = depth;
        if (op->kind == OP_DOT && c->plan.mma_dot[op->res[0]]) {
            DType dt = vtype(c, op->args[0]).dt;
            for (int a = 0; a < 2; a++) {
                bool tr;
                ValueId root = operand_root(c, op->args[a], &tr);
                if (!c->f->values[root].def || def_depth[root] >= depth || find_region(c, op->args[a], dt)) continue;
                if (c->plan.of[root] && c->plan.of[root]->kind == LAY_SHARED) continue;   /* in a ring already */
                IrType t = vtype(c, op->args[a]);
                int64_t stride = t.shape[1] + 8, halves = (int64_t)t.shape[0] * stride;
                Region r = {root, tr, dt, c->opsmem_halves, stride, def_depth[root]};
                c->opsmem_halves += (halves + 7) / 8 * 8;
                vec_push(&c->regions, r);
            }
        }
        if (op->body) plan_regions(c, op->body, op->kind == OP_FOR ? depth + 1 : depth, def_depth);
        if (op->els) plan_regions(c, op->els, depth, def_depth);
    }
}

/* Writes the regions of a value just defined. */
static void write_regions(Cg *c, ValueId v)
{
    for (int i = 0; i < c->regions.len; i++) {
        const Region *r = &c->regions.data[i];
        if (r->root != v) continue;
        /* inside a loop, the previous iteration's readers must be done first */
        if (r->depth > 0) barrier(c);
        root_to_smem(c, r->root, r->tr, r->dt, c->opsmem, r->base, r->stride, 2);
        barrier(c);   /* the dots that read it need not write anything, so publish it here */
    }
}

/* The ring slot value a tensor-core operand is read in place from, when
 * it is one (not transposed, of the dot's dtype): NULL otherwise. */
static ValueId ring_root(Cg *c, ValueId operand)
{
    bool tr;
    ValueId root = operand_root(c, operand, &tr);
    const Layout *l = c->plan.of[root];
    return !tr && l && l->kind == LAY_SHARED ? root : 0;
}

/* Its start in the operand area, in halves. */
static LLVMValueRef ring_operand(Cg *c, ValueId operand, DType dt)
{
    ValueId root = ring_root(c, operand);
    if (!root || vtype(c, root).dt != dt || !c->vals[root].v) return NULL;
    return udiv(c, c->vals[root].v[0], 2);
}

static void emit_dot_mma(Cg *c, const IrOp *op)
{
    IrType at = vtype(c, op->args[0]), t = vtype(c, op->res[0]);
    const Layout *l = c->plan.of[op->res[0]];
    bool tb = op->flags & DOT_TRANS_B, bf = at.dt == DT_BF16;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    LLVMBuilderRef B = c->b;
    /* rows padded by 8 halves (16 bytes): ldmatrix's eight row addresses fall in different banks */
    int64_t sa = K + 8, sb = tb ? K + 8 : N + 8;
    int64_t abase = 0, bbase = (int64_t)M * sa, halves = bbase + (int64_t)(tb ? N : K) * sb;
    const Region *ra = find_region(c, op->args[0], at.dt), *rb = find_region(c, op->args[1], at.dt);
    /* operands in a ring slot are read where they lie */
    LLVMValueRef aring = ring_operand(c, op->args[0], at.dt), bring = ring_operand(c, op->args[1], at.dt);
    /* An A operand held in an MMA layout whose warps own whole rows, split
     * like the result's, is already in fragments: FlashAttention-2 keeps P
     * in registers this way. */
    const Layout *al = c->plan.of[op->args[0]];
    bool a_regs = !ra && al && al->kind == LAY_MMA && al->wn == 1 && l->wn == 1 && al->wm == l->wm &&
                  al->rows == M && al->cols == K && !c->plan.absorbed[op->args[0]];
    LLVMValueRef aarea = c->smem, barea = c->smem;
    if (ra) { aarea = c->opsmem; abase = ra->base; }
    if (rb) { barea = c->opsmem; bbase = rb->base; }
    LLVMValueRef abase_v = i32c(c, abase), bbase_v = i32c(c, bbase);
    if (aring) { aarea = c->opsmem; abase_v = aring; sa = home_layout(c, ring_root(c, op->args[0]))->stride; }
    if (bring) { barea = c->opsmem; bbase_v = bring; sb = home_layout(c, ring_root(c, op->args[1]))->stride; }
    bool write_a = !ra && !a_regs && !aring, write_b = !rb && !bring;
    if (write_a || write_b) {
        smem_need(c, (halves + 1) / 2);
        barrier(c);
        if (write_a) operand_to_smem(c, op->args[0], at.dt, abase, sa, 2);
        if (write_b) operand_to_smem(c, op->args[1], at.dt, bbase, sb, 2);
        barrier(c);
    }

    Slots acc = get(c, op->args[2], l);
    Slots out = new_slots(layout_nslots(l), l);
    LLVMValueRef active = l->wm * l->wn < c->T / 32 ? LLVMBuildICmp(B, LLVMIntULT, c->warp, i32c(c, l->wm * l->wn), "") : NULL;
    LLVMValueRef w = active ? LLVMBuildSelect(B, active, c->warp, i32c(c, 0), "") : c->warp;
    LLVMValueRef m_base = mul(c, udiv(c, w, l->wn), (int64_t)l->tm * 16), n_base = mul(c, urem(c, w, l->wn), (int64_t)l->tn * 8);
    LLVMTypeRef tv2 = bf ? c->ti32 : c->tv2f16;   /* bf16 pairs travel as i32 */
    LLVMTypeRef tvec4 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->ti32, c->ti32, c->ti32, c->ti32}, 4, 0);
    LLVMTypeRef tvec2 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->ti32, c->ti32}, 2, 0);
    LLVMTypeRef tf4 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->tf32, c->tf32, c->tf32, c->tf32}, 4, 0);
    int tm = l->tm, tn = l->tn;
    LLVMValueRef *d = xmalloc(sizeof *d * (size_t)(tm * tn * 4));
    for (int i = 0; i < tm * tn * 4; i++) d[i] = acc.v[i];
    LLVMValueRef *afr = xmalloc(sizeof *afr * (size_t)tm * 4), *bfr = xmalloc(sizeof *bfr * (size_t)tn * 2);
    LLVMValueRef l16 = urem(c, c->lane, 16), l8 = urem(c, c->lane, 8);
    Slots aval = a_regs ? get(c, op->args[0], al) : (Slots){NULL, 0, NULL};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int im = 0; a_regs && im < tm; im++) {
            /* fragment registers: rows g and g+8 of pieces 2kk and 2kk+1, two columns each */
            int tna = K / 8, kk = k0 / 16;
            for (int r = 0; r < 4; r++) {
                int piece = 2 * kk + (r >> 1), i0 = (r & 1) * 2;
                LLVMValueRef lo = aval.v[(im * tna + piece) * 4 + i0], hi = aval.v[(im * tna + piece) * 4 + i0 + 1];
                LLVMTypeRef pair = LLVMVectorType(dtype_ty(c, at.dt), 2);
                LLVMValueRef x = LLVMBuildInsertElement(B, LLVMGetUndef(pair), lo, i32c(c, 0), "");
                x = LLVMBuildInsertElement(B, x, hi, i32c(c, 1), "");
                afr[im * 4 + r] = bf ? LLVMBuildBitCast(B, x, c->ti32, "") : x;
            }
        }
        for (int im = 0; !a_regs && im < tm; im++) {
            /* lanes 0-15 give rows m..m+15 at column k0, lanes 16-31 the same rows at k0 + 8 */
            LLVMValueRef row = add(c, add(c, m_base, i32c(c, im * 16)), l16);
            LLVMValueRef col = add(c, i32c(c, k0), mul(c, udiv(c, c->lane, 16), 8));
            LLVMValueRef p = smem_half_ptr_in(c, aarea, add(c, add(c, mul(c, row, sa), col), abase_v));
            LLVMValueRef fr = call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &p);
            for (int i = 0; i < 4; i++) {
                LLVMValueRef x = LLVMBuildExtractValue(B, fr, (unsigned)i, "");
                afr[im * 4 + i] = bf ? x : LLVMBuildBitCast(B, x, tv2, "");
            }
        }
        /* two 8-column pieces of B per ldmatrix.x4 (matrices 2 and 3 the second's), a lone last one with .x2 */
        for (int in = 0; in < tn; in += 2) {
            bool pair = in + 1 < tn;
            LLVMValueRef nb = add(c, n_base, i32c(c, in * 8)), p, fr;
            LLVMValueRef quad = udiv(c, c->lane, 8);   /* the matrix this lane addresses */
            if (tb) {
                /* B is [N, K]: matrix i holds rows n + 8(i/2) .. +7 at column k0 + 8(i%2) */
                LLVMValueRef row = add(c, add(c, nb, l8), pair ? mul(c, udiv(c, quad, 2), 8) : i32c(c, 0));
                LLVMValueRef col = add(c, i32c(c, k0), mul(c, urem(c, quad, 2), 8));
                p = smem_half_ptr_in(c, barea, add(c, add(c, mul(c, row, sb), col), bbase_v));
                fr = pair ? call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &p)
                          : call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3", tvec2, 1, &c->tptr3, &p);
            } else {
                /* B is [K, N]: matrix i holds rows k0 + 8(i%2) .. +7 at column n + 8(i/2), transposed on load */
                LLVMValueRef row = add(c, i32c(c, k0), l16);
                LLVMValueRef col = pair ? add(c, nb, mul(c, udiv(c, c->lane, 16), 8)) : nb;
                p = smem_half_ptr_in(c, barea, add(c, add(c, mul(c, row, sb), col), bbase_v));
                fr = pair ? call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3", tvec4, 1, &c->tptr3, &p)
                          : call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3", tvec2, 1, &c->tptr3, &p);
            }
            for (int i = 0; i < (pair ? 4 : 2); i++) {
                LLVMValueRef x = LLVMBuildExtractValue(B, fr, (unsigned)i, "");
                bfr[in * 2 + i] = bf ? x : LLVMBuildBitCast(B, x, tv2, "");
            }
        }
        for (int im = 0; im < tm; im++)
            for (int in = 0; in < tn; in++) {
                LLVMValueRef args[10];
                LLVMTypeRef targs[10];
                for (int i = 0; i < 4; i++) { args[i] = afr[im * 4 + i]; targs[i] = tv2; }
                for (int i = 0; i < 2; i++) { args[4 + i] = bfr[in * 2 + i]; targs[4 + i] = tv2; }
                LLVMValueRef *acc4 = &d[(im * tn + in) * 4];
                for (int i = 0; i < 4; i++) { args[6 + i] = acc4[i]; targs[6 + i] = c->tf32; }
                LLVMValueRef r = call(c, bf ? "llvm.nvvm.mma.m16n8k16.row.col.bf16" : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                                      tf4, 10, targs, args);
                for (int i = 0; i < 4; i++) acc4[i] = LLVMBuildExtractValue(B, r, (unsigned)i, "");
            }
    }
    for (int i = 0; i < tm * tn * 4; i++) out.v[i] = d[i];
    c->vals[op->res[0]] = out;
    free(d); free(afr); free(bfr);
}
/* ---- Python's float // and %: compiler/floormod.c, step for step ---- */

static LLVMValueRef f64_call1(Cg *c, LLVMBuilderRef B, const char *name, LLVMValueRef x)
{
    return call_at(c, B, name, c->tf64, 1, &c->tf64, &x);
}

static LLVMValueRef f64_copysign(Cg *c, LLVMBuilderRef B, LLVMValueRef mag, LLVMValueRef sign)
{
    LLVMTypeRef t2[2] = {c->tf64, c->tf64};
    LLVMValueRef a2[2] = {mag, sign};
    return call_at(c, B, "llvm.copysign.f64", c->tf64, 2, t2, a2);
}

/* The exponent field of a positive double. */
static LLVMValueRef f64_exponent(Cg *c, LLVMBuilderRef B, LLVMValueRef v)
{
    return LLVMBuildLShr(B, LLVMBuildBitCast(B, v, c->ti64, ""), LLVMConstInt(c->ti64, 52, 0), "");
}

/* phc.fmod.f64(x, y): C's fmod of two f32 values widened to double,
 * exactly, for every x and y (the GPU has no fmod instruction). With
 * r = |x| and the divisor s = |y| 2^k scaled so that r / s < 2^29, the
 * quotient q = trunc(r / s) has at most 29 bits and s at most 24, so
 * q s is exact in double and so is r - q s (it is below s, a multiple of
 * s's last bit): r becomes r mod s, again a 24-bit number. The trunc is
 * never one too many: r and s are multiples of s's last bit 2^e, so an
 * r / s below an integer n is below it by more than 2^e / s > 2^-24,
 * while the rounding of a quotient below 2^29 moves it by at most 2^-25.
 * s is a multiple of |y|, so repeating with k = 0 at the end gives
 * r mod |y|; each step takes at least 27 bits off r's exponent, so an f32
 * quotient (below 2^277) takes at most 11. fmod(x, inf) is x; inf or NaN
 * operands and a zero divisor give NaN. */
static LLVMValueRef exact_fmod_fn(Cg *c)
{
    static const char name[] = "phc.fmod.f64";   /* a dot: no kernel can take the name */
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (fn) return fn;
    LLVMTypeRef td = c->tf64, pt[2] = {td, td};
    fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(td, pt, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef B = LLVMCreateBuilderInContext(c->ctx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
    LLVMBasicBlockRef nan = LLVMAppendBasicBlockInContext(c->ctx, fn, "nan");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c->ctx, fn, "loop");
    LLVMBasicBlockRef step = LLVMAppendBasicBlockInContext(c->ctx, fn, "step");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, fn, "done");
    LLVMValueRef x = LLVMGetParam(fn, 0), y = LLVMGetParam(fn, 1);

    LLVMPositionBuilderAtEnd(B, entry);
    LLVMValueRef ax = f64_call1(c, B, "llvm.fabs.f64", x), ay = f64_call1(c, B, "llvm.fabs.f64", y);
    LLVMValueRef finite_x = LLVMBuildFCmp(B, LLVMRealOLT, ax, LLVMConstReal(td, INFINITY), "");
    LLVMValueRef nonzero_y = LLVMBuildFCmp(B, LLVMRealOGT, ay, LLVMConstReal(td, 0), "");   /* false for NaN */
    LLVMBuildCondBr(B, LLVMBuildAnd(B, finite_x, nonzero_y, ""), loop, nan);

    LLVMPositionBuilderAtEnd(B, nan);
    LLVMBuildRet(B, LLVMConstReal(td, NAN));

    LLVMPositionBuilderAtEnd(B, loop);
    LLVMValueRef r = LLVMBuildPhi(B, td, "r");
    LLVMBuildCondBr(B, LLVMBuildFCmp(B, LLVMRealOGE, r, ay, ""), step, done);

    LLVMPositionBuilderAtEnd(B, step);
    LLVMValueRef k = LLVMBuildSub(B, LLVMBuildSub(B, f64_exponent(c, B, r), f64_exponent(c, B, ay), ""),
                                  LLVMConstInt(c->ti64, 28, 0), "");
    k = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, k, LLVMConstInt(c->ti64, 0, 0), ""), LLVMConstInt(c->ti64, 0, 0), k, "");
    LLVMValueRef sbits = LLVMBuildAdd(B, LLVMBuildBitCast(B, ay, c->ti64, ""), LLVMBuildShl(B, k, LLVMConstInt(c->ti64, 52, 0), ""), "");
    LLVMValueRef sdiv = LLVMBuildBitCast(B, sbits, td, "");
    LLVMValueRef q = f64_call1(c, B, "llvm.trunc.f64", LLVMBuildFDiv(B, r, sdiv, ""));
    LLVMValueRef r2 = LLVMBuildFSub(B, r, LLVMBuildFMul(B, q, sdiv, ""), "");
    LLVMBuildBr(B, loop);

    LLVMValueRef in_v[2] = {ax, r2};
    LLVMBasicBlockRef in_b[2] = {entry, step};
    LLVMAddIncoming(r, in_v, in_b, 2);

    LLVMPositionBuilderAtEnd(B, done);
    LLVMBuildRet(B, f64_copysign(c, B, r, x));
    LLVMDisposeBuilder(B);
    return fn;
}

/* x // y (quot) or x % y on f32 values: CPython's float_divmod in double,
 * rounded once to f32, a NaN result made the quiet NaN, a zero divisor
 * giving x / y and NaN, exactly as floormod.c. No step multiplies and
 * adds, so there is nothing to contract into an FMA. */
static LLVMValueRef floor_divmod(Cg *c, LLVMValueRef x32, LLVMValueRef y32, bool quot)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef td = c->tf64, pt[2] = {td, td};
    LLVMValueRef zero = LLVMConstReal(td, 0), one = LLVMConstReal(td, 1);
    LLVMValueRef x = LLVMBuildFPExt(B, x32, td, ""), y = LLVMBuildFPExt(B, y32, td, "");
    LLVMValueRef xy[2] = {x, y};
    LLVMValueRef fm = exact_fmod_fn(c);
    LLVMValueRef mod0 = LLVMBuildCall2(B, LLVMFunctionType(td, pt, 2, 0), fm, xy, 2, "");
    LLVMValueRef div0 = LLVMBuildFDiv(B, LLVMBuildFSub(B, x, mod0, ""), y, "");
    LLVMValueRef nonzero = LLVMBuildFCmp(B, LLVMRealUNE, mod0, zero, "");   /* C's mod != 0: true for NaN */
    LLVMValueRef signs_differ = LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, y, zero, ""),
                                             LLVMBuildFCmp(B, LLVMRealOLT, mod0, zero, ""), "");
    LLVMValueRef flip = LLVMBuildAnd(B, nonzero, signs_differ, "");
    LLVMValueRef mod = LLVMBuildSelect(B, flip, LLVMBuildFAdd(B, mod0, y, ""),
                                       LLVMBuildSelect(B, nonzero, mod0, f64_copysign(c, B, zero, y), ""), "");
    LLVMValueRef div = LLVMBuildSelect(B, flip, LLVMBuildFSub(B, div0, one, ""), div0, "");
    LLVMValueRef fl = f64_call1(c, B, "llvm.floor.f64", div);
    LLVMValueRef up = LLVMBuildFCmp(B, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), LLVMConstReal(td, 0.5), "");
    LLVMValueRef snapped = LLVMBuildSelect(B, up, LLVMBuildFAdd(B, fl, one, ""), fl, "");
    LLVMValueRef ratio = LLVMBuildFDiv(B, x, y, "");
    LLVMValueRef q = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNE, div, zero, ""), snapped,
                                     f64_copysign(c, B, zero, ratio), "");
    LLVMValueRef by_zero = LLVMBuildFCmp(B, LLVMRealOEQ, y, zero, "");
    LLVMValueRef r = quot ? LLVMBuildSelect(B, by_zero, ratio, q, "")
                          : LLVMBuildSelect(B, by_zero, LLVMConstReal(td, NAN), mod, "");
    LLVMValueRef r32 = LLVMBuildFPTrunc(B, r, c->tf32, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, r32, r32, ""), f32c(c, NAN), r32, "");
}

/* ---- scalar arithmetic: one element, any dtype ----
 * Each op means what the reference table says (scalarops.c, which the
 * interpreter and the fold pass compute with); where C or LLVM leave an
 * edge open (a zero divisor, INT32_MIN // -1, the sign of max(-0, +0)),
 * the code below closes it the same way. tests/test_scalarops.c holds all
 * three to the documented results. */

/* Python's floor division or modulo on i32 (scalarops.c, floor_divmod_i32):
 * a zero divisor gives 0; a divisor of -1 gives -a (wrapping) and 0, since
 * sdiv INT32_MIN, -1 is undefined in LLVM (the host traps on it). */
static LLVMValueRef int_floor_divmod(Cg *c, LLVMValueRef a, LLVMValueRef b, bool quot)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef zero = i32c(c, 0), one = i32c(c, 1);
    LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
    LLVMValueRef bm1 = LLVMBuildICmp(B, LLVMIntEQ, b, i32c(c, -1), "");
    LLVMValueRef bs = LLVMBuildSelect(B, LLVMBuildOr(B, bz, bm1, ""), one, b, "");
    LLVMValueRef q = LLVMBuildSDiv(B, a, bs, ""), r = LLVMBuildSRem(B, a, bs, "");
    LLVMValueRef adjust = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
        LLVMBuildICmp(B, LLVMIntNE, LLVMBuildICmp(B, LLVMIntSLT, r, zero, ""),
                      LLVMBuildICmp(B, LLVMIntSLT, bs, zero, ""), ""), "");
    LLVMValueRef out = quot ? LLVMBuildSelect(B, adjust, LLVMBuildSub(B, q, one, ""), q, "")
                            : LLVMBuildSelect(B, adjust, LLVMBuildAdd(B, r, bs, ""), r, "");
    out = LLVMBuildSelect(B, bm1, quot ? LLVMBuildSub(B, zero, a, "") : zero, out, "");
    return LLVMBuildSelect(B, bz, zero, out, "");
}

/* max or min ignoring a NaN operand (llvm.maxnum/minnum: PTX max.f32 and
 * min.f32) with -0 ordered below +0 (scalarops.c, max_number), which
 * maxnum leaves open: equal operands are two zeros or the same bits, and
 * AND of their bits gives +0 for max, OR gives -0 for min. */
static LLVMValueRef float_max_min(Cg *c, LLVMValueRef x, LLVMValueRef y, bool max)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef t2[2] = {c->tf32, c->tf32};
    LLVMValueRef xy[2] = {x, y};
    LLVMValueRef r = call(c, max ? "llvm.maxnum.f32" : "llvm.minnum.f32", c->tf32, 2, t2, xy);
    LLVMValueRef xb = LLVMBuildBitCast(B, x, c->ti32, ""), yb = LLVMBuildBitCast(B, y, c->ti32, "");
    LLVMValueRef both = max ? LLVMBuildAnd(B, xb, yb, "") : LLVMBuildOr(B, xb, yb, "");
    LLVMValueRef equal = LLVMBuildFCmp(B, LLVMRealOEQ, x, y, "");
    return LLVMBuildSelect(B, equal, LLVMBuildBitCast(B, both, c->tf32, ""), r, "");
}

/* An f32 multiply and the add or subtract it feeds may fuse into one
 * fma.rn.f32, rounded once, as nvcc (-fmad=true) and Triton do by default
 * (docs/language.md). f16 and bf16 values are rounded to their dtype
 * after each op, which keeps their products apart. */
static LLVMValueRef contractable(DType dt, LLVMValueRef inst)
{
    if (dt == DT_F32 && LLVMIsAInstruction(inst)) LLVMSetFastMathFlags(inst, LLVMFastMathAllowContract);
    return inst;
}

static LLVMValueRef scalar_binop(Cg *c, IrBinop op, DType dt, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = c->b;
    if (dt == DT_BOOL) return op == BIN_AND ? LLVMBuildAnd(B, a, b, "") : LLVMBuildOr(B, a, b, "");
    if (dt == DT_I32) {
        switch (op) {
        case BIN_ADD: return LLVMBuildAdd(B, a, b, "");   /* no nsw: i32 wraps */
        case BIN_SUB: return LLVMBuildSub(B, a, b, "");
        case BIN_MUL: return LLVMBuildMul(B, a, b, "");
        case BIN_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, b, ""), a, b, "");
        case BIN_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, b, ""), a, b, "");
        case BIN_FLOORDIV: case BIN_MOD: return int_floor_divmod(c, a, b, op == BIN_FLOORDIV);
        default: return i32c(c, 0);   /* the verifier allows no other op on i32 */
        }
    }
    LLVMValueRef x = to_f32(c, a, dt), y = to_f32(c, b, dt), r;
    switch (op) {
    case BIN_ADD: r = contractable(dt, LLVMBuildFAdd(B, x, y, "")); break;
    case BIN_SUB: r = contractable(dt, LLVMBuildFSub(B, x, y, "")); break;
    case BIN_MUL: r = contractable(dt, LLVMBuildFMul(B, x, y, "")); break;
    case BIN_DIV: r = LLVMBuildFDiv(B, x, y, ""); break;
    case BIN_MAX: case BIN_MIN: r = float_max_min(c, x, y, op == BIN_MAX); break;
    case BIN_FLOORDIV: case BIN_MOD: r = floor_divmod(c, x, y, op == BIN_FLOORDIV); break;
    default: r = x; break;
    }
    return from_f32(c, r, dt);
}

static LLVMValueRef scalar_unop(Cg *c, IrUnop op, DType dt, LLVMValueRef a)
{
    LLVMBuilderRef B = c->b;
    if (op == UN_NOT) return LLVMBuildXor(B, a, LLVMConstInt(c->ti1, 1, 0), "");
    if (dt == DT_I32) {
        if (op == UN_NEG) return LLVMBuildNeg(B, a, "");
        if (op == UN_ABS) return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, i32c(c, 0), ""), LLVMBuildNeg(B, a, ""), a, "");
        return a;
    }
    LLVMValueRef x = to_f32(c, a, dt), r;
    switch (op) {
    case UN_NEG: r = LLVMBuildFNeg(B, x, ""); break;
    /* ex2.approx.ftz: one MUFU.EX2; without .ftz ptxas wraps each in a
     * range fix-up (a compare and two predicated multiplies) to produce
     * subnormal results, which the GPU flushes to zero instead
     * (docs/language.md) */
    case UN_EXP: r = call1f(c, "llvm.nvvm.ex2.approx.ftz.f", LLVMBuildFMul(B, x, f32c(c, 1.4426950408889634), "")); break;
    case UN_EXP2: r = call1f(c, "llvm.nvvm.ex2.approx.ftz.f", x); break;
    case UN_LOG: r = LLVMBuildFMul(B, call1f(c, "llvm.nvvm.lg2.approx.f", x), f32c(c, 0.6931471805599453), ""); break;
    case UN_LOG2: r = call1f(c, "llvm.nvvm.lg2.approx.f", x); break;
    case UN_SQRT: r = call1f(c, "llvm.sqrt.f32", x); break;
    case UN_RSQRT: r = call1f(c, "llvm.nvvm.rsqrt.approx.f", x); break;
    case UN_ABS: r = call1f(c, "llvm.fabs.f32", x); break;
    default: r = x; break;
    }
    return from_f32(c, r, dt);
}

static LLVMValueRef scalar_cmp(Cg *c, IrCmp op, DType dt, LLVMValueRef a, LLVMValueRef b)
{
    if (dt == DT_I32) {
        static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
        return LLVMBuildICmp(c->b, ip[op], a, b, "");
    }
    if (dt == DT_BOOL) {   /* false < true: to a signed compare an i1 true is -1 */
        static const LLVMIntPredicate up[] = {LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE, LLVMIntEQ, LLVMIntNE};
        return LLVMBuildICmp(c->b, up[op], a, b, "");
    }
    /* ordered predicates and an unordered !=: a NaN makes all false but != */
    static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
    return LLVMBuildFCmp(c->b, fp[op], to_f32(c, a, dt), to_f32(c, b, dt), "");
}

static LLVMValueRef convert(Cg *c, LLVMValueRef v, DType from, DType to)
{
    if (from == to) return v;
    if (to == DT_I32) {
        if (from == DT_BOOL) return LLVMBuildZExt(c->b, v, c->ti32, "");
        LLVMTypeRef t = c->tf32;
        LLVMValueRef x = to_f32(c, v, from);
        return call(c, "llvm.fptosi.sat.i32.f32", c->ti32, 1, &t, &x);
    }
    if (to == DT_BOOL) {
        if (from == DT_I32) return LLVMBuildICmp(c->b, LLVMIntNE, v, i32c(c, 0), "");
        return LLVMBuildFCmp(c->b, LLVMRealUNE, to_f32(c, v, from), f32c(c, 0), "");
    }
    LLVMValueRef x = to_f32(c, v, from);
    return to == DT_F32 ? x : LLVMBuildFPTrunc(c->b, x, dtype_ty(c, to), "");
}


/* ---- blocks and control flow ---- */

static void emit_block(Cg *c, const IrBlock *blk, const IrOp *parent, Slots *yielded);
static void free_yielded(Slots *yielded, int n);

static LLVMTypeRef value_ty(Cg *c, ValueId v) { return dtype_ty(c, vtype(c, v).dt); }

/* A slot's LLVM type: the element's, or a ring slot's i32 byte offset. */
static LLVMTypeRef slot_ty(Cg *c, ValueId v, const Layout *l)
{
    return l && l->kind == LAY_SHARED ? c->ti32 : value_ty(c, v);
}

/* The layout a block argument or op result carried through control flow has. */
static const Layout *carried_layout(Cg *c, ValueId v) { return is_tile(c, v) ? home_layout(c, v) : NULL; }

static void emit_for(Cg *c, const IrOp *op)
{
    const IrBlock *body = op->body;
    int ncar = op->nargs - 2;
    LLVMValueRef lb = c->vals[op->args[0]].v[0], ub = c->vals[op->args[1]].v[0];
    Slots *init = xcalloc((size_t)(ncar ? ncar : 1), sizeof *init);
    for (int i = 0; i < ncar; i++) {
        const Layout *l = carried_layout(c, body->args[1 + i]);
        init[i] = l ? get(c, op->args[2 + i], l) : c->vals[op->args[2 + i]];
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), head = new_bb(c, "for"), bodybb = new_bb(c, "body"), done = new_bb(c, "endfor");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef iv = LLVMBuildPhi(c->b, c->ti32, "iv");
    LLVMAddIncoming(iv, &lb, &pre, 1);
    c->vals[body->args[0]] = new_slots(1, NULL);
    c->vals[body->args[0]].v[0] = iv;
    for (int i = 0; i < ncar; i++) {
        ValueId arg = body->args[1 + i];
        Slots ph = new_slots(init[i].n, carried_layout(c, arg));
        for (int s = 0; s < init[i].n; s++) {
            ph.v[s] = LLVMBuildPhi(c->b, slot_ty(c, arg, ph.lay), "");
            LLVMAddIncoming(ph.v[s], &init[i].v[s], &pre, 1);
        }
        c->vals[arg] = ph;
        /* the loop's results are the carried values when the test fails */
        Slots res = new_slots(ph.n, ph.lay);
        memcpy(res.v, ph.v, sizeof *res.v * (size_t)ph.n);
        c->vals[op->res[i]] = res;
    }
    free(init);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, iv, ub, ""), bodybb, done);
    LLVMPositionBuilderAtEnd(c->b, bodybb);
    Slots *y = xcalloc((size_t)(ncar ? ncar : 1), sizeof *y);
    int mark = c->cache.len;
    emit_block(c, body, op, y);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMValueRef next = LLVMBuildAdd(c->b, iv, i32c(c, op->ival), "");
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int i = 0; i < ncar; i++)
        for (int s = 0; s < y[i].n; s++)
            LLVMAddIncoming(c->vals[body->args[1 + i]].v[s], &y[i].v[s], &latch, 1);
    LLVMBuildBr(c->b, head);
    cache_truncate(c, mark);
    free_yielded(y, ncar);
    LLVMPositionBuilderAtEnd(c->b, done);
}

static void emit_if(Cg *c, const IrOp *op)
{
    LLVMBasicBlockRef thenbb = new_bb(c, "then"), elsebb = new_bb(c, "else"), done = new_bb(c, "endif");
    LLVMBuildCondBr(c->b, c->vals[op->args[0]].v[0], thenbb, elsebb);
    int nres = op->nres;
    Slots *yt = xcalloc((size_t)(nres ? nres : 1), sizeof *yt), *ye = xcalloc((size_t)(nres ? nres : 1), sizeof *ye);
    int mark = c->cache.len;
    LLVMPositionBuilderAtEnd(c->b, thenbb);
    emit_block(c, op->body, op, yt);
    LLVMBasicBlockRef tend = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
    cache_truncate(c, mark);
    LLVMPositionBuilderAtEnd(c->b, elsebb);
    if (op->els) emit_block(c, op->els, op, ye);
    LLVMBasicBlockRef eend = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
    cache_truncate(c, mark);
    LLVMPositionBuilderAtEnd(c->b, done);
    for (int i = 0; i < nres; i++) {
        Slots r = new_slots(yt[i].n, carried_layout(c, op->res[i]));
        for (int s = 0; s < r.n; s++) {
            r.v[s] = LLVMBuildPhi(c->b, slot_ty(c, op->res[i], r.lay), "");
            LLVMValueRef vs[2] = {yt[i].v[s], ye[i].v[s]};
            LLVMBasicBlockRef bs[2] = {tend, eend};
            LLVMAddIncoming(r.v[s], vs, bs, 2);
        }
        c->vals[op->res[i]] = r;
    }
    free_yielded(yt, nres);
    free_yielded(ye, nres);
}

/* Yielded values in the layouts of what they flow into (the loop's block
 * arguments, the if's results), converted here, before the branch. Each is
 * a copy that the for or if frees: a conversion lives in the cache, which
 * forgets (frees) it when its region ends, before the phis are built. */
static void emit_yield(Cg *c, const IrOp *op, const IrOp *parent, Slots *yielded)
{
    for (int j = 0; j < op->nargs; j++) {
        ValueId target = parent->kind == OP_FOR ? parent->body->args[1 + j] : parent->res[j];
        const Layout *l = carried_layout(c, target);
        Slots s = l ? get(c, op->args[j], l) : c->vals[op->args[j]];
        yielded[j] = new_slots(s.n, s.lay);
        memcpy(yielded[j].v, s.v, sizeof *s.v * (size_t)s.n);
    }
}

static void free_yielded(Slots *yielded, int n)
{
    for (int i = 0; i < n; i++) free(yielded[i].v);
    free(yielded);
}

static void emit_elementwise(Cg *c, const IrOp *op)
{
    ValueId r = op->res[0];
    IrType t = vtype(c, r);
    if (t.rank == 0) {
        LLVMValueRef a[3];
        for (int i = 0; i < op->nargs && i < 3; i++) a[i] = c->vals[op->args[i]].v[0];
        Slots out = new_slots(1, NULL);
        out.v[0] = elementwise(c, op, operand_dtype(c, op), t.dt, a);
        c->vals[r] = out;
        return;
    }
    if (!c->plan.of[r]) return;   /* built where it is used */
    c->vals[r] = materialize(c, r, c->plan.of[r]);
}

static void emit_op(Cg *c, const IrOp *op)
{
    IrType t = op->nres ? vtype(c, op->res[0]) : ir_scalar(DT_VOID);
    Slots one;
    switch (op->kind) {
    case OP_CONST:
        one = new_slots(1, NULL);
        if (t.dt == DT_BOOL) one.v[0] = LLVMConstInt(c->ti1, op->ival != 0, 0);
        else if (t.dt == DT_I32) one.v[0] = i32c(c, op->ival);
        else one.v[0] = LLVMConstReal(dtype_ty(c, t.dt), op->fval);
        c->vals[op->res[0]] = one;
        break;
    case OP_PARAM:
        one = new_slots(1, NULL);
        one.v[0] = c->scalar[op->param];
        c->vals[op->res[0]] = one;
        break;
    case OP_DIM:
        one = new_slots(1, NULL);
        one.v[0] = LLVMBuildTrunc(c->b, op->axis == 0 ? c->tensor_dim0[op->param] : c->tensor_dim1[op->param], c->ti32, "");
        c->vals[op->res[0]] = one;
        break;
    case OP_BLOCK_ID: case OP_GRID_DIM: {
        char name[64];
        snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", op->kind == OP_BLOCK_ID ? "ctaid" : "nctaid", "xyz"[op->axis]);
        one = new_slots(1, NULL);
        one.v[0] = call0(c, name, c->ti32);
        c->vals[op->res[0]] = one;
        break;
    }
    case OP_SPLAT: case OP_IOTA: case OP_BROADCAST:
        break;   /* built where used */
    case OP_TRANSPOSE: {
        if (c->plan.absorbed[op->res[0]]) break;
        ValueId src = op->args[0];
        Slots home = get(c, src, reg_layout(c, src));
        int scols = ir_cols(vtype(c, src));
        Slots out = exchange(c, &home, vtype(c, src).dt, home_layout(c, op->res[0]), transposed_index, &scols);
        c->vals[op->res[0]] = out;
        break;
    }
    case OP_CONVERT:
        if (c->plan.absorbed[op->res[0]]) break;
        emit_elementwise(c, op);
        break;
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT:
        emit_elementwise(c, op);
        break;
    case OP_REDUCE: emit_reduce(c, op); break;
    case OP_DOT:
        if (c->plan.mma_dot[op->res[0]]) emit_dot_mma(c, op);
        else emit_dot_fma(c, op);
        break;
    case OP_LOAD: c->vals[op->res[0]] = emit_load_in(c, op, home_layout(c, op->res[0])); break;
    case OP_STORE: emit_store(c, op); break;
    case OP_COPY_ASYNC: emit_copy_async(c, op); break;
    case OP_COMMIT_ASYNC: call0(c, "llvm.nvvm.cp.async.commit.group", c->tvoid); break;
    case OP_WAIT_ASYNC: emit_wait_async(c, op); break;
    case OP_FOR: emit_for(c, op); break;
    case OP_IF: emit_if(c, op); break;
    case OP_RETURN:
        LLVMBuildBr(c->b, c->exit_bb);
        /* anything after a return is dead: give it a block of its own */
        LLVMPositionBuilderAtEnd(c->b, new_bb(c, "dead"));
        break;
    case OP_YIELD: break;
    default: cg_fail(c, op, "no lowering for this op"); break;
    }
}

static void emit_block(Cg *c, const IrBlock *blk, const IrOp *parent, Slots *yielded)
{
    for (int i = 0; i < blk->nops && !c->failed; i++) {
        const IrOp *op = blk->ops[i];
        if (op->kind == OP_YIELD && parent) emit_yield(c, op, parent, yielded);
        else emit_op(c, op);
        if (c->regions.len)
            for (int j = 0; j < op->nres; j++) write_regions(c, op->res[j]);
    }
}

/* ---- functions and the module ---- */

/* Replaces a shared-memory placeholder by the static area it stands for,
 * now that its size is known (an unused area disappears). */
static void size_shared_area(Cg *c, LLVMValueRef placeholder, const char *what, LLVMTypeRef elem, int64_t n)
{
    if (n) {
        char name[300];
        snprintf(name, sizeof name, "%s_%s", c->f->name, what);
        LLVMTypeRef at = LLVMArrayType2(elem, (uint64_t)n);
        LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);
        LLVMSetInitializer(g, LLVMGetUndef(at));
        LLVMSetLinkage(g, LLVMInternalLinkage);
        LLVMSetAlignment(g, 16);
        LLVMReplaceAllUsesWith(placeholder, g);
    }
    LLVMDeleteGlobal(placeholder);
}

static int64_t round16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

/* Past the static limit the two areas lie in the block's dynamic shared
 * memory, one extern array: the scratch area at offset 0, the operands
 * after it, 16-byte aligned. The constant <entry>_dynamic_shared_bytes
 * (codegen.h) keeps the size the launch must ask for; external, so the
 * optimizer keeps it and the PTX shows it. */
static void place_dynamic_shared(Cg *c, int64_t bytes)
{
    char name[300];
    snprintf(name, sizeof name, "%s%s", c->f->name, CODEGEN_DYNAMIC_AREA_SUFFIX);
    LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(c->ctx), 0);
    LLVMValueRef area = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);
    LLVMSetLinkage(area, LLVMExternalLinkage);
    LLVMSetAlignment(area, 16);
    LLVMValueRef at_ops = LLVMConstInt(c->ti64, (unsigned long long)round16(c->smem_words * 4), 0);
    LLVMReplaceAllUsesWith(c->smem, area);
    LLVMReplaceAllUsesWith(c->opsmem, LLVMConstInBoundsGEP2(LLVMInt8TypeInContext(c->ctx), area, &at_ops, 1));
    LLVMDeleteGlobal(c->smem);
    LLVMDeleteGlobal(c->opsmem);
    snprintf(name, sizeof name, "%s%s", c->f->name, CODEGEN_DYNAMIC_SHARED_SUFFIX);
    LLVMValueRef size = LLVMAddGlobalInAddressSpace(c->mod, c->ti32, name, 4);
    LLVMSetInitializer(size, i32c(c, bytes));
    LLVMSetGlobalConstant(size, 1);
    LLVMSetAlignment(size, 4);
}

/* Sizes the scratch and operand areas now that emission has seen every
 * use: static arrays while they fit CODEGEN_MAX_STATIC_SHARED bytes (the
 * PTX of such a kernel does not depend on the limit), else dynamic. */
static void place_shared_areas(Cg *c)
{
    int64_t bytes = round16(c->smem_words * 4) + round16(c->opsmem_halves * 2);
    if (bytes > CODEGEN_MAX_STATIC_SHARED) {
        place_dynamic_shared(c, bytes);
        return;
    }
    size_shared_area(c, c->smem, "scratch", c->ti32, c->smem_words);
    size_shared_area(c, c->opsmem, "operands", c->ti16, c->opsmem_halves);
}

static void emit_func(Cg *c, const IrFunc *f)
{
    c->f = f;
    c->T = f->threads;
    c->failed = false;
    int np = 0;
    LLVMTypeRef *pts = xcalloc(3 * (size_t)f->nparams + 1, sizeof *pts);   /* a tensor is three */
    for (int i = 0; i < f->nparams; i++) {
        if (f->params[i].is_tensor) { pts[np++] = c->tptr1; pts[np++] = c->ti64; pts[np++] = c->ti64; }
        else pts[np++] = dtype_ty(c, f->params[i].dt);
    }
    c->fn = LLVMAddFunction(c->mod, f->name, LLVMFunctionType(c->tvoid, pts, (unsigned)np, 0));
    free(pts);
    LLVMSetFunctionCallConv(c->fn, 71 /* PTX_Kernel */);
    size_t np1 = (size_t)f->nparams + 1;
    c->tensor_ptr = xcalloc(np1, sizeof(LLVMValueRef));
    c->tensor_dim0 = xcalloc(np1, sizeof(LLVMValueRef));
    c->tensor_dim1 = xcalloc(np1, sizeof(LLVMValueRef));
    c->scalar = xcalloc(np1, sizeof(LLVMValueRef));
    c->stored = ir_stored_params(f);
    for (int i = 0, k = 0; i < f->nparams; i++) {
        if (f->params[i].is_tensor) {
            c->tensor_ptr[i] = LLVMGetParam(c->fn, (unsigned)k++);
            c->tensor_dim0[i] = LLVMGetParam(c->fn, (unsigned)k++);
            c->tensor_dim1[i] = LLVMGetParam(c->fn, (unsigned)k++);
            LLVMSetValueName2(c->tensor_ptr[i], f->params[i].name, strlen(f->params[i].name));
        } else {
            c->scalar[i] = LLVMGetParam(c->fn, (unsigned)k++);
            LLVMSetValueName2(c->scalar[i], f->params[i].name, strlen(f->params[i].name));
        }
    }
    /* .maxntid tells ptxas the block size, so it can spend registers */
    LLVMMetadataRef ann[3] = {LLVMValueAsMetadata(c->fn), LLVMMDStringInContext2(c->ctx, "maxntidx", 8),
                              LLVMValueAsMetadata(i32c(c, c->T))};
    LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, ann, 3)));
    /* .maxnreg 255: otherwise ptxas may trade a few spills for occupancy, and local memory is slower than registers */
    LLVMMetadataRef reg[3] = {LLVMValueAsMetadata(c->fn), LLVMMDStringInContext2(c->ctx, "maxnreg", 7),
                              LLVMValueAsMetadata(i32c(c, 255))};
    LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, reg, 3)));

    c->layouts = layout_table_new();
    c->plan = layout_plan(f, c->layouts);
    /* the scratch area's size is known only at the end: a placeholder stands in for it */
    char name[300];
    snprintf(name, sizeof name, "%s_scratch_placeholder", f->name);
    c->smem = LLVMAddGlobalInAddressSpace(c->mod, c->ti32, name, 3);
    c->smem_words = 0;
    snprintf(name, sizeof name, "%s_operands_placeholder", f->name);
    c->opsmem = LLVMAddGlobalInAddressSpace(c->mod, c->ti32, name, 3);
    c->opsmem_halves = 0;
    c->regions.len = 0;
    for (int i = 0; i < CG_MAX_RINGS; i++) c->ring_at[i] = -1;
    plan_rings(c, f->body);
    {
        int *def_depth = xcalloc((size_t)f->nvalues + 1, sizeof *def_depth);
        plan_regions(c, f->body, 0, def_depth);
        free(def_depth);
    }

    LLVMBasicBlockRef entry = new_bb(c, "entry");
    c->exit_bb = new_bb(c, "exit");
    LLVMPositionBuilderAtEnd(c->b, c->exit_bb);
    LLVMBuildRetVoid(c->b);
    LLVMPositionBuilderAtEnd(c->b, entry);
    c->tid = call0(c, "llvm.nvvm.read.ptx.sreg.tid.x", c->ti32);
    c->warp = udiv(c, c->tid, 32);
    c->lane = urem(c, c->tid, 32);
    c->vals = xcalloc((size_t)f->nvalues + 1, sizeof *c->vals);
    emit_block(c, f->body, NULL, NULL);
    /* the body ends with a return, so the insert point is a dead block */
    LLVMBuildUnreachable(c->b);

    place_shared_areas(c);
    free(c->regions.data);
    c->regions.data = NULL;
    c->regions.cap = c->regions.len = 0;

    cache_truncate(c, 0);
    free(c->cache.data);
    c->cache.data = NULL;
    c->cache.cap = 0;
    for (int i = 0; i <= f->nvalues; i++) free(c->vals[i].v);
    free(c->vals);
    layout_plan_free(&c->plan);
    layout_table_free(c->layouts);
    free(c->tensor_ptr); free(c->tensor_dim0); free(c->tensor_dim1); free(c->scalar); free(c->stored);
}

static int init_targets(void)
{
    static int done;
    if (!done) {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        done = 1;
    }
    return 0;
}

int codegen_emit(const IrModule *m, const CodegenOptions *o, CgEmit what, char **out, char *err, size_t errlen)
{
    const char *triple = "nvptx64-nvidia-cuda";
    const char *arch = o && o->arch ? o->arch : "sm_90";
    int opt = o ? o->opt_level : 3;
    *out = NULL;
    init_targets();
    Cg c = {0};
    c.err = err;
    c.errlen = errlen;
    c.ctx = LLVMContextCreate();
    c.mod = LLVMModuleCreateWithNameInContext("phobos", c.ctx);
    LLVMSetTarget(c.mod, triple);
    LLVMSetDataLayout(c.mod, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
    c.b = LLVMCreateBuilderInContext(c.ctx);
    c.tvoid = LLVMVoidTypeInContext(c.ctx);
    c.ti1 = LLVMInt1TypeInContext(c.ctx);
    c.ti16 = LLVMInt16TypeInContext(c.ctx);
    c.ti32 = LLVMInt32TypeInContext(c.ctx);
    c.ti64 = LLVMInt64TypeInContext(c.ctx);
    c.tf16 = LLVMHalfTypeInContext(c.ctx);
    c.tbf16 = LLVMBFloatTypeInContext(c.ctx);
    c.tf32 = LLVMFloatTypeInContext(c.ctx);
    c.tf64 = LLVMDoubleTypeInContext(c.ctx);
    c.tptr1 = LLVMPointerTypeInContext(c.ctx, 1);
    c.tptr3 = LLVMPointerTypeInContext(c.ctx, 3);
    c.tv2f16 = LLVMVectorType(c.tf16, 2);
    int status = 0;
    for (int i = 0; i < m->nfuncs && !c.failed; i++) {
        /* sema refuses such kernels; IR from elsewhere is checked here */
        int64_t bytes = ir_param_bytes(m->funcs[i]->params, m->funcs[i]->nparams);
        if (bytes > IR_MAX_PARAM_BYTES) {
            snprintf(err, errlen, "%s: its parameters take %lld bytes; a GPU kernel's parameters are limited to %d bytes",
                     m->funcs[i]->name, (long long)bytes, IR_MAX_PARAM_BYTES);
            c.failed = true;
            break;
        }
        emit_func(&c, m->funcs[i]);
    }
    char *msg = NULL;
    if (c.failed) status = 1;
    else if (LLVMVerifyModule(c.mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "internal error: LLVM rejects the lowered module: %.400s", msg ? msg : "");
        status = 1;
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    LLVMTargetRef target = NULL;
    LLVMTargetMachineRef tm = NULL;
    if (!status && LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, errlen, "no NVPTX target in this LLVM: %s", msg ? msg : "");
        status = 1;
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    if (!status) {
        tm = LLVMCreateTargetMachine(target, triple, arch, "+ptx80", opt ? LLVMCodeGenLevelAggressive : LLVMCodeGenLevelNone,
                                     LLVMRelocDefault, LLVMCodeModelDefault);
        if (opt) {
            LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
            LLVMErrorRef e = LLVMRunPasses(c.mod, "default<O3>", tm, po);
            LLVMDisposePassBuilderOptions(po);
            if (e) {
                char *em = LLVMGetErrorMessage(e);
                snprintf(err, errlen, "LLVM optimization failed: %s", em);
                LLVMDisposeErrorMessage(em);
                status = 1;
            }
        }
    }
    if (!status) {
        if (what == CG_EMIT_LLVM) {
            char *s = LLVMPrintModuleToString(c.mod);
            *out = xstrdup(s);
            LLVMDisposeMessage(s);
        } else {
            LLVMMemoryBufferRef buf = NULL;
            if (LLVMTargetMachineEmitToMemoryBuffer(tm, c.mod, LLVMAssemblyFile, &msg, &buf)) {
                snprintf(err, errlen, "PTX emission failed: %s", msg ? msg : "");
                status = 1;
            } else {
                *out = xstrndup(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
                LLVMDisposeMemoryBuffer(buf);
            }
            LLVMDisposeMessage(msg);
        }
    }
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMDisposeBuilder(c.b);
    LLVMDisposeModule(c.mod);
    LLVMContextDispose(c.ctx);
    return status;
}

int64_t codegen_dynamic_shared_bytes(const char *ptx, const char *entry)
{
    /* the constant's line: ".visible .const .align 4 .u32 NAME_dynamic_shared_bytes = BYTES;" */
    size_t n = strlen(entry), suffix = strlen(CODEGEN_DYNAMIC_SHARED_SUFFIX);
    for (const char *p = ptx; (p = strstr(p, ".u32 ")); p++) {
        const char *name = p + 5;
        if (strncmp(name, entry, n) || strncmp(name + n, CODEGEN_DYNAMIC_SHARED_SUFFIX, suffix)) continue;
        const char *rest = name + n + suffix;
        if (strncmp(rest, " = ", 3)) continue;
        return strtoll(rest + 3, NULL, 10);
    }
    return 0;
}
