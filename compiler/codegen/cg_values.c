/* cg_values.c: small builders, where a slot lives, and tile values in layouts.
 *
 * Expects: the layout plan (c->plan) of the function being emitted.
 * Guarantees: cg_get() hands out a value in any layout asked for: its own
 * slots, a cached conversion, or a new one. Values without a layout
 * (splat, iota, broadcast and elementwise ops over those) are materialized
 * in the layout of their user. Other conversions go through a scratch
 * buffer (write, barrier, read), except that a layout with the same
 * map, broadcasting a SLICE back over its parent and reloading a tensor
 * the kernel never writes need no exchange. Conversions are cached for the
 * block they were made in (cache_truncate drops them as it ends). */
#include "target.h"

#include <stdlib.h>
#include <string.h>

void cg_fail(Cg *c, const IrOp *op, const char *msg)
{
    if (c->failed) return;
    c->failed = true;
    snprintf(c->err, c->errlen, "%s: %s at %d:%d: %s", c->f->name, op ? ir_op_name(op) : "?",
             op ? op->loc.line : 0, op ? op->loc.col : 0, msg);
}

/* ---- small builders ---- */

LLVMTypeRef dtype_ty(Cg *c, DType dt)
{
    switch (dt) {
    case DT_BOOL: return c->ti1;
    case DT_I32: return c->ti32;
    case DT_I64: return c->ti64;
    case DT_I8: case DT_U8: case DT_F8E4M3: case DT_F8E5M2: return c->ti8;
    case DT_F16: return c->tf16;
    case DT_BF16: return c->tbf16;
    case DT_F32: return c->tf32;
    default: return c->tvoid;
    }
}

/* A call of the function name (declared on first use) at B's position. */
LLVMValueRef cg_call_at(Cg *c, LLVMBuilderRef B, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts,
                        LLVMValueRef *args)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, pts, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn) fn = LLVMAddFunction(c->mod, name, fty);
    return LLVMBuildCall2(B, fty, fn, args, (unsigned)n, "");
}

LLVMValueRef cg_call(Cg *c, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts, LLVMValueRef *args)
{
    return cg_call_at(c, c->b, name, ret, n, pts, args);
}

/* Every thread of the block meets here; their shared-memory writes are visible after. */
void barrier(Cg *c) { c->target->isa->barrier(c); }

LLVMValueRef call1f(Cg *c, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = c->tf32;
    return cg_call(c, name, c->tf32, 1, &t, &x);
}

/* float view of a value for arithmetic: f16/bf16 widen to f32 */
LLVMValueRef to_f32(Cg *c, LLVMValueRef v, DType dt)
{
    if (dt == DT_F32) return v;
    if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPExt(c->b, v, c->tf32, "");
    if (ir_is_f8(dt)) return cg_f8_to_f32(c, v, dt);
    if (dt == DT_I32 || dt == DT_I8 || dt == DT_I64) return LLVMBuildSIToFP(c->b, v, c->tf32, "");
    if (dt == DT_BOOL || dt == DT_U8) return LLVMBuildUIToFP(c->b, v, c->tf32, "");
    return v;
}

LLVMValueRef from_f32(Cg *c, LLVMValueRef v, DType dt)
{
    if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPTrunc(c->b, v, dtype_ty(c, dt), "");
    if (ir_is_f8(dt)) return cg_f32_to_f8(c, v, dt);
    return v;
}

/* every dtype but i64 travels through shared memory as one 32-bit word;
 * an i64 as one 64-bit element (smem_elem_ptr) */
LLVMValueRef to_word(Cg *c, LLVMValueRef v, DType dt)
{
    switch (dt) {
    case DT_BOOL: case DT_U8: case DT_F8E4M3: case DT_F8E5M2: return LLVMBuildZExt(c->b, v, c->ti32, "");   /* fp8: its bits */
    case DT_I8: return LLVMBuildSExt(c->b, v, c->ti32, "");
    case DT_I32: return v;
    default: return LLVMBuildBitCast(c->b, to_f32(c, v, dt), c->ti32, "");
    }
}

static LLVMValueRef from_word(Cg *c, LLVMValueRef w, DType dt)
{
    switch (dt) {
    case DT_BOOL: return LLVMBuildTrunc(c->b, w, c->ti1, "");
    case DT_I8: case DT_U8: case DT_F8E4M3: case DT_F8E5M2: return LLVMBuildTrunc(c->b, w, c->ti8, "");
    case DT_I32: return w;
    default: return from_f32(c, LLVMBuildBitCast(c->b, w, c->tf32, ""), dt);
    }
}

/* The shared area: words, or 16-bit halves for tensor-core operands. */

/* Word index of buffer buf. The buffer's start is a constant address (the
 * area plus its offset), kept apart from the index so that every access
 * folds it into its address instead of adding it in a register. */
LLVMValueRef smem_word_ptr(Cg *c, int buf, LLVMValueRef index)
{
    LLVMValueRef offset = i32c(c, smem_offset(c, buf));
    LLVMValueRef start = LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->ctx), c->smem, &offset, 1, "");
    return LLVMBuildInBoundsGEP2(c->b, c->ti32, start, &index, 1, "");
}

Guard guard_begin(Cg *c, LLVMValueRef cond)
{
    Guard g = {NULL};
    if (!cond) return g;
    LLVMBasicBlockRef then = new_bb(c, "g"), done = new_bb(c, "gd");
    LLVMBuildCondBr(c->b, cond, then, done);
    LLVMPositionBuilderAtEnd(c->b, then);
    g.done = done;
    return g;
}

void guard_end(Cg *c, Guard g)
{
    if (!g.done) return;
    LLVMBuildBr(c->b, g.done);
    LLVMPositionBuilderAtEnd(c->b, g.done);
}

Slots new_slots(int n, const Layout *lay)
{
    Slots s = {xcalloc((size_t)(n ? n : 1), sizeof(LLVMValueRef)), n, lay};
    return s;
}

/* ---- where a slot lives ---- */

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

SlotPos slot_pos(Cg *c, const Layout *l, int s)
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

/* A scratch buffer for a tile of dtype dt in layout l, one word per
 * element (two for i64). */
int tile_scratch(Cg *c, const Layout *l, DType dt)
{
    return smem_buffer(c, SMEM_SCRATCH, (int64_t)l->rows * l->cols * smem_elem_bytes(dt));
}

/* Element index of buffer buf, of an element of dtype dt: a word, or an
 * i64 (8 bytes). */
LLVMValueRef smem_elem_ptr(Cg *c, int buf, LLVMValueRef index, DType dt)
{
    if (dt != DT_I64) return smem_word_ptr(c, buf, index);
    LLVMValueRef offset = i32c(c, smem_offset(c, buf));
    LLVMValueRef start = LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->ctx), c->smem, &offset, 1, "");
    return LLVMBuildInBoundsGEP2(c->b, c->ti64, start, &index, 1, "");
}

void smem_store_elem(Cg *c, int buf, LLVMValueRef index, LLVMValueRef v, DType dt)
{
    if (dt == DT_I64) LLVMBuildStore(c->b, v, smem_elem_ptr(c, buf, index, dt));
    else smem_store(c, buf, index, to_word(c, v, dt));
}

LLVMValueRef smem_load_elem(Cg *c, int buf, LLVMValueRef index, DType dt)
{
    if (dt == DT_I64) return LLVMBuildLoad2(c->b, c->ti64, smem_elem_ptr(c, buf, index, dt), "");
    return from_word(c, smem_load(c, buf, index), dt);
}

/* Writes every element of s to scratch buffer buf, word row * cols + col. */
void slots_to_smem(Cg *c, const Slots *s, DType dt, int buf)
{
    const Layout *l = s->lay;
    smem_access(c, buf, true);
    for (int k = 0; k < s->n; k++) {
        SlotPos p = slot_pos(c, l, k);
        Guard g = guard_begin(c, and1(c, p.valid, p.owner));
        /* the word before its index, as the code has always been built (the PTX's order follows) */
        if (dt == DT_I64) smem_store_elem(c, buf, add(c, mul(c, p.row, l->cols), p.col), s->v[k], dt);
        else smem_store(c, buf, add(c, mul(c, p.row, l->cols), p.col), to_word(c, s->v[k], dt));
        guard_end(c, g);
    }
}

/* Reads a tile in layout l from scratch buffer buf; index(row, col) gives
 * the word in it. Slots that hold nothing read its first word (in bounds,
 * ignored). */

static Slots slots_from_smem(Cg *c, const Layout *l, DType dt, WordIndex index, const void *ctx, int buf)
{
    Slots out = new_slots(layout_nslots(l), l);
    smem_access(c, buf, false);
    for (int k = 0; k < out.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef w = index(c, p.row, p.col, ctx);
        if (p.valid) w = LLVMBuildSelect(c->b, p.valid, w, i32c(c, 0), "");
        out.v[k] = smem_load_elem(c, buf, w, dt);
    }
    return out;
}

typedef struct { int64_t cols, base; } RowMajor;

static LLVMValueRef row_major_index(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx)
{
    const RowMajor *m = ctx;
    return add(c, add(c, mul(c, row, m->cols), col), i32c(c, m->base));
}

/* Moves s through a scratch buffer into layout l: write, then read (a
 * barrier between, and one before where the plan says), each slot of l
 * reading the word index(row, col). */
Slots exchange(Cg *c, const Slots *s, DType dt, const Layout *l, WordIndex index, const void *ctx)
{
    int buf = tile_scratch(c, s->lay, dt);
    slots_to_smem(c, s, dt, buf);
    return slots_from_smem(c, l, dt, index, ctx, buf);
}

/* Element (row, col) of a transpose is (col, row) of its source. */
static LLVMValueRef transposed_index(Cg *c, LLVMValueRef row, LLVMValueRef col, const void *ctx)
{
    return add(c, mul(c, col, *(const int *)ctx), row);
}

/* The transpose of src in layout l (a row made a column and back too),
 * through shared memory. */
Slots transposed_into(Cg *c, ValueId src, const Layout *l)
{
    /* a column in a ring slot (async.c's vector rings): each slot of l
     * reads its element where it lies, no exchange */
    const Slots *own = &c->vals[src];
    if (own->v && own->lay && own->lay->kind == LAY_SHARED) return read_shared_at(c, src, own, l, true);
    Slots home = cg_get(c, src, reg_layout(c, src));
    int scols = ir_cols(vtype(c, src));
    return exchange(c, &home, vtype(c, src).dt, l, transposed_index, &scols);
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

static const Layout *default_layout(Cg *c, IrType t)
{
    int bytes = ir_dtype_bytes(t.dt);
    return layout_blocked(c->layouts, ir_rows(t), ir_cols(t), c->T, bytes);
}

/* The layout a value is emitted in: its planned one, else (values
 * materialized where used) the default for its shape. */
const Layout *home_layout(Cg *c, ValueId v)
{
    return c->plan.of[v] ? c->plan.of[v] : default_layout(c, vtype(c, v));
}

/* The register layout a value is read in where its user has no layout
 * of its own to ask for: its home, unless that is shared memory. */
const Layout *reg_layout(Cg *c, ValueId v)
{
    const Layout *l = home_layout(c, v);
    return l->kind == LAY_SHARED ? default_layout(c, vtype(c, v)) : l;
}

/* Converts s (value v) to layout l. */
static Slots convert_layout(Cg *c, ValueId v, const Slots *s, const Layout *l)
{
    const IrOp *def = c->f->values[v].def;
    if (s->lay && s->lay->kind == LAY_SHARED) return read_shared_at(c, v, s, l, false);
    if (l->kind == LAY_SHARED) {
        cg_fail(c, def, "internal error: a register tile where a shared-memory ring slot is wanted");
        return new_slots(1, l);
    }
    /* a tensor the kernel never writes can be read again in the new layout */
    if (def && def->kind == OP_LOAD && !c->stored[def->param]) return emit_load_in(c, def, l);
    RowMajor m = {l->cols, 0};
    return exchange(c, s, vtype(c, v).dt, l, row_major_index, &m);
}

static Slots cache_find(Cg *c, ValueId v, const Layout *l)
{
    for (int i = c->cache.len - 1; i >= 0; i--)
        if (c->cache.data[i].v == v && layout_same_map(c->cache.data[i].s.lay, l)) return c->cache.data[i].s;
    return (Slots){NULL, 0, NULL};
}

Slots cg_get(Cg *c, ValueId v, const Layout *l)
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
void cache_truncate(Cg *c, int len)
{
    while (c->cache.len > len) free(c->cache.data[--c->cache.len].s.v);
}

LLVMValueRef elementwise(Cg *c, const IrOp *op, DType in, DType out, LLVMValueRef *a)
{
    switch (op->kind) {
    case OP_UNARY: return scalar_unop(c, op->sub, in, a[0]);
    case OP_BINARY: return scalar_binop(c, op->sub, in, a[0], a[1]);
    case OP_CMP: return scalar_cmp(c, op->sub, in, a[0], a[1]);
    case OP_SELECT: return LLVMBuildSelect(c->b, a[0], a[1], a[2], "");
    case OP_FMA: return scalar_fma(c, in, a[0], a[1], a[2]);
    case OP_CONVERT: return cg_convert(c, a[0], in, out);
    default: return a[0];
    }
}

DType operand_dtype(Cg *c, const IrOp *op)
{
    return vtype(c, op->args[op->kind == OP_SELECT ? 1 : 0]).dt;
}

/* Slot k of an elementwise op's operand: a scalar's one value for every slot. */
static LLVMValueRef slot_of(const Slots *s, int k) { return s->n == 1 && !s->lay ? s->v[0] : s->v[k]; }

/* PHOBOS_RESCALE_SKIP=1: a product with an online softmax's rescale
 * factor (ir_is_max_rescale) is skipped by a thread whose factors are all
 * exactly 1, which they are wherever its rows' maxima did not move: past
 * the first blocks of a long row, most of them. x * 1 is x, so the values
 * are the same bit for bit; what changes is a compare a row and a branch
 * around the multiplies. Off by default until measured on the GPU. */
static bool rescale_skip_on(void) { return env_switch("PHOBOS_RESCALE_SKIP", false); }

/* Which operand of op (an f32 multiply of tiles) is a rescale factor to
 * skip, -1 for none. */
static int rescale_factor_operand(Cg *c, const IrOp *op)
{
    if (op->kind != OP_BINARY || op->sub != BIN_MUL || vtype(c, op->res[0]).dt != DT_F32 || !rescale_skip_on()) return -1;
    for (int i = 0; i < 2; i++)
        if (is_tile(c, op->args[i]) && ir_is_max_rescale(c->f, op->args[i])) return i;
    return -1;
}

/* out = args[0] * args[1], where args[unit] holds the factors: the
 * multiplies run only where a factor of the thread's is not 1.0 (NaN
 * included); elsewhere out is the other operand itself. */
static void skip_unit_rescale(Cg *c, const IrOp *op, const Slots *args, int unit, Slots *out)
{
    LLVMBuilderRef B = c->b;
    const Slots *f = &args[unit], *x = &args[!unit];
    LLVMValueRef one = LLVMConstReal(c->tf32, 1.0), need = NULL;
    for (int k = 0; k < out->n; k++) {
        LLVMValueRef ne = LLVMBuildFCmp(B, LLVMRealUNE, slot_of(f, k), one, "");
        need = need ? LLVMBuildOr(B, need, ne, "") : ne;
    }
    LLVMBasicBlockRef from = LLVMGetInsertBlock(B), mul = new_bb(c, "rescale"), join = new_bb(c, "rescaled");
    LLVMBuildCondBr(B, need, mul, join);
    LLVMPositionBuilderAtEnd(B, mul);
    LLVMValueRef *prod = xcalloc((size_t)out->n, sizeof *prod);
    for (int k = 0; k < out->n; k++) {
        LLVMValueRef a[2];
        for (int i = 0; i < 2; i++) a[i] = slot_of(&args[i], k);
        prod[k] = elementwise(c, op, DT_F32, DT_F32, a);
    }
    LLVMBasicBlockRef mul_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    for (int k = 0; k < out->n; k++) {
        LLVMValueRef phi = LLVMBuildPhi(B, c->tf32, "");
        LLVMValueRef vs[2] = {prod[k], slot_of(x, k)};
        LLVMBasicBlockRef bs[2] = {mul_end, from};
        LLVMAddIncoming(phi, vs, bs, 2);
        out->v[k] = phi;
    }
    free(prod);
}

/* The shared divisor (PHOBOS_SHARED_DIVISOR=0 turns it off): an f32
 * division of a tile by a divisor its thread's slots share (a row's sum
 * broadcast over its columns, attention's acc / l; a scalar) takes the
 * divisor's reciprocal once, r = 1 / y (correctly rounded), and corrects
 * each quotient q = x r by one step of Markstein's: q + (x - y q) r, with
 * the residual x - y q an exact fma. That is the correctly rounded x / y
 * wherever 2^-60 <= |x|, |y| <= 2^60 (no intermediate overflows or
 * underflows); a thread with any operand outside (zeros, infinities, NaN,
 * subnormals, extremes) divides every slot. Bit for bit what the division
 * gives, with a multiply and two FMAs a slot where the IEEE division is a
 * range test, a reciprocal's refinement and a call of its slow path (the
 * head dim 128 forward at N_CTX 1024 8-11% faster on an H100,
 * docs/performance.md "twenty-ninth"). */
static bool shared_divisor_on(void) { return env_switch("PHOBOS_SHARED_DIVISOR", true); }

/* Whether op divides f32 tiles by a divisor whose slots repeat (at most
 * half as many distinct values as slots). */
static bool divides_by_shared(Cg *c, const IrOp *op, const Slots *args, int n)
{
    if (op->kind != OP_BINARY || op->sub != BIN_DIV || operand_dtype(c, op) != DT_F32 || n < 2 || !shared_divisor_on()) return false;
    int distinct = 0;
    for (int k = 0; k < n && 2 * distinct <= n; k++) {
        int j = 0;
        while (j < k && slot_of(&args[1], j) != slot_of(&args[1], k)) j++;
        distinct += j == k;
    }
    return 2 * distinct <= n;
}

static LLVMValueRef in_markstein_range(Cg *c, LLVMValueRef v)
{
    LLVMValueRef a = call1f(c, "llvm.fabs.f32", v);
    return LLVMBuildAnd(c->b, LLVMBuildFCmp(c->b, LLVMRealOGE, a, LLVMConstReal(c->tf32, 0x1p-60), ""),
                        LLVMBuildFCmp(c->b, LLVMRealOLE, a, LLVMConstReal(c->tf32, 0x1p60), ""), "");
}

static void divide_by_shared(Cg *c, const Slots *args, Slots *out)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef ok = NULL;
    for (int k = 0; k < out->n; k++) {
        LLVMValueRef y = slot_of(&args[1], k), both = in_markstein_range(c, slot_of(&args[0], k));
        if (k == 0 || y != slot_of(&args[1], k - 1)) both = LLVMBuildAnd(B, both, in_markstein_range(c, y), "");
        ok = ok ? LLVMBuildAnd(B, ok, both, "") : both;
    }
    LLVMBasicBlockRef fast = new_bb(c, "divide.shared"), slow = new_bb(c, "divide.each"), join = new_bb(c, "divided");
    LLVMBuildCondBr(B, ok, fast, slow);
    LLVMValueRef *q[2] = {xcalloc((size_t)out->n, sizeof *q[0]), xcalloc((size_t)out->n, sizeof *q[1])};
    LLVMBasicBlockRef ends[2];
    LLVMPositionBuilderAtEnd(B, fast);
    LLVMValueRef r = NULL;
    for (int k = 0; k < out->n; k++) {
        LLVMValueRef x = slot_of(&args[0], k), y = slot_of(&args[1], k);
        if (k == 0 || y != slot_of(&args[1], k - 1)) r = LLVMBuildFDiv(B, LLVMConstReal(c->tf32, 1.0), y, "");
        LLVMValueRef q0 = LLVMBuildFMul(B, x, r, "");
        q[0][k] = math_fma(c, math_fma(c, LLVMBuildFNeg(B, y, ""), q0, x), r, q0);
    }
    ends[0] = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, slow);
    for (int k = 0; k < out->n; k++) q[1][k] = LLVMBuildFDiv(B, slot_of(&args[0], k), slot_of(&args[1], k), "");
    ends[1] = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    for (int k = 0; k < out->n; k++) {
        LLVMValueRef phi = LLVMBuildPhi(B, c->tf32, "");
        LLVMValueRef vs[2] = {q[0][k], q[1][k]};
        LLVMAddIncoming(phi, vs, ends, 2);
        out->v[k] = phi;
    }
    free(q[0]);
    free(q[1]);
}

/* Builds value v (an op without a layout of its own) in layout l. */
Slots materialize(Cg *c, ValueId v, const Layout *l)
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
            Slots s = cg_get(c, src, l);
            for (int k = 0; k < n; k++) out.v[k] = s.v[k];
            break;
        }
        /* a row or column over a layout that is not a slice: each slot
         * reads the slice's slot at its position */
        int axis = r0 == l->rows && c0 == 1 ? 1 : r0 == 1 && c0 == l->cols ? 0 : -1;
        if (axis >= 0 && l->kind != LAY_SLICE) {
            const Layout *sl = layout_slice(c->layouts, l, axis);
            Slots s = cg_get(c, src, sl);
            for (int k = 0; k < n; k++) out.v[k] = s.v[layout_slice_slot(sl, k)];
            break;
        }
        /* anything else: through shared memory, reading the stretched element */
        Slots home = cg_get(c, src, reg_layout(c, src));
        SourceShape shape = {r0, c0};
        free(out.v);
        return exchange(c, &home, st.dt, l, broadcast_index, &shape);
    }
    case OP_RESHAPE: {
        ValueId src = op->args[0];
        IrType st = vtype(c, src);
        if (ir_rows(st) == l->rows && ir_cols(st) == l->cols) {
            /* [n] and [1, n]: one 2-D view, so the same slots */
            Slots s = cg_get(c, src, l);
            for (int k = 0; k < n; k++) out.v[k] = s.v[k];
            break;
        }
        /* a row to a column or back: element (r, c) is the source's (c, r) */
        free(out.v);
        return transposed_into(c, src, l);
    }
    case OP_TRANSPOSE:   /* a vector's, built where used (cg_control.c, PHOBOS_VECTOR_TRANSPOSE) */
        free(out.v);
        return transposed_into(c, op->args[0], l);
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_FMA: case OP_CONVERT: {
        Slots args[3];
        for (int i = 0; i < op->nargs && i < 3; i++) args[i] = cg_get(c, op->args[i], l);
        int unit = rescale_factor_operand(c, op);
        if (unit >= 0) {
            skip_unit_rescale(c, op, args, unit, &out);
            break;
        }
        if (divides_by_shared(c, op, args, n)) {
            divide_by_shared(c, args, &out);
            break;
        }
        DType in = operand_dtype(c, op);
        for (int k = 0; k < n; k++) {
            LLVMValueRef a[3];
            for (int i = 0; i < op->nargs && i < 3; i++) a[i] = slot_of(&args[i], k);
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
