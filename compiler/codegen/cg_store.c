/* cg_store.c: stores and atomic adds of tiles into tensor windows.
 *
 * A tile in a BLOCKED layout is written in its chunks of v consecutive
 * columns, one vector store each, where the window's chunks are aligned
 * (window_chunks_aligned: then a chunk is wholly inside the tensor or
 * wholly outside); element by element otherwise, and always where a
 * mask picks the elements (ph.store's mask=). A wide tile in an MMA
 * layout (a dot's result, or what is computed from one) first goes through
 * shared memory into the BLOCKED layout: a warp then writes whole rows of
 * 16-byte chunks, where the MMA layout's threads would each write two
 * elements of eight rows, a quarter of every 32-byte sector a store
 * touches. The staging buffer is scratch, so after a loop it takes the
 * bytes the loop's rings held.
 *
 * Expects: the window's operands emitted (window_elem reads them).
 * Guarantees: each element of the window inside the tensor (and, for a
 * masked store, where its mask holds) is written once, by the one thread that owns a valid slot holding it (an idle
 * warp's slots and a slice's copies write nothing), so an add is never
 * made twice; nothing outside the tensor is written. Atomic adds are
 * monotonic atomicrmw on the global address space, element by element:
 * red.global.add (atom where the result were used) for f32 and i32,
 * device-wide; f32 adds without a mask, where the target adds several
 * floats at once (Target.atomic_add_f32xn: Hopper's red.global.add.v4.f32),
 * go a run of consecutive columns at a time (a dot's result: its pairs),
 * each element still added atomically. */
#include "target.h"

#include <stdlib.h>

/* The smallest MMA tile worth staging: below it the barrier and the
 * shared-memory round trip cost more than the sectors they save. */
enum { STAGE_MIN_BYTES = 4096 };

/* Element by element, each under its own guard; where mask is given (its
 * slots in s's layout), only the elements whose mask slot holds. */
static void store_elements(Cg *c, const IrOp *op, const Slots *s, const Slots *mask, bool atomic)
{
    const IrParam *prm = &c->f->params[op->param];
    LLVMTypeRef et = dtype_ty(c, prm->dt);
    LLVMAtomicRMWBinOp how = prm->dt == DT_F32 ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
    for (int k = 0; k < s->n; k++) {
        SlotPos p = slot_pos(c, s->lay, k);
        LLVMValueRef off, inb;
        window_elem(c, op, p, &off, &inb);
        if (mask) inb = LLVMBuildAnd(c->b, inb, mask->v[k], "");
        Guard g = guard_begin(c, and1(c, inb, p.owner));
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        if (atomic) LLVMBuildAtomicRMW(c->b, how, ptr, s->v[k], LLVMAtomicOrderingMonotonic, 0);
        else LLVMBuildStore(c->b, s->v[k], ptr);
        guard_end(c, g);
    }
}

/* A BLOCKED layout's chunks (slots k .. k+v-1 hold consecutive columns of
 * one row, the first column a multiple of v), one vector store each; the
 * window's chunks are aligned, so the first element's test is the chunk's. */
static void store_chunks(Cg *c, const IrOp *op, const Slots *s)
{
    const Layout *l = s->lay;
    DType dt = c->f->params[op->param].dt;
    LLVMTypeRef et = dtype_ty(c, dt), vt = LLVMVectorType(et, (unsigned)l->v);
    for (int k = 0; k < s->n; k += l->v) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef off, inb;
        window_elem(c, op, p, &off, &inb);
        Guard g = guard_begin(c, inb);
        LLVMValueRef chunk = LLVMGetUndef(vt);
        for (int j = 0; j < l->v; j++) chunk = LLVMBuildInsertElement(c->b, chunk, s->v[k + j], i32c(c, j), "");
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef st = LLVMBuildStore(c->b, chunk, ptr);
        LLVMSetAlignment(st, (unsigned)(l->v * ir_dtype_bytes(dt)));
        guard_end(c, g);
    }
}

/* Chunks where the window's are aligned, elements where not: one branch,
 * uniform over the block. */
static void store_blocked(Cg *c, const IrOp *op, const Slots *s)
{
    LLVMBasicBlockRef vec = new_bb(c, "stv"), scal = new_bb(c, "sts"), done = new_bb(c, "std");
    LLVMBuildCondBr(c->b, window_chunks_aligned(c, op, s->lay->v), vec, scal);
    LLVMPositionBuilderAtEnd(c->b, vec);
    store_chunks(c, op, s);
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, scal);
    store_elements(c, op, s, NULL, false);
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, done);
}

/* Whether a tile in layout l is written faster through shared memory:
 * an MMA layout of a wide enough tile whose rows are whole 16-byte chunks.
 * Inside a loop too: a persistent kernel's epilogue, between one tile's K
 * loop and the next tile's copies, takes the rings' bytes as after a
 * loop (measured on the H200, bench/gemm_tuned.ph at 4096^3: 565 TFLOP/s
 * element by element, 723 staged). */
static bool staging_pays(const Layout *l, DType dt)
{
    if (l->kind != LAY_MMA) return false;
    int64_t row_bytes = (int64_t)l->cols * ir_dtype_bytes(dt);
    return row_bytes % 16 == 0 && row_bytes * l->rows >= STAGE_MIN_BYTES;
}

/* s (an MMA layout) into the BLOCKED layout of its tile through a scratch
 * buffer in the swizzled SHARED layout: the MMA layout's pairs of adjacent
 * columns written as one word (two for 4-byte elements) each, eight rows
 * of a warp's write in eight different 16-byte columns of banks; each
 * 16-byte chunk read back in one access. */
static Slots stage_through_shared(Cg *c, const Slots *s, DType dt)
{
    const Layout *from = s->lay;
    int eb = ir_dtype_bytes(dt);
    const Layout *to = layout_blocked(c->layouts, from->rows, from->cols, c->T, eb);
    const Layout *sl = layout_shared(c->layouts, from->rows, from->cols, eb);
    LLVMTypeRef et = dtype_ty(c, dt), pair = LLVMVectorType(et, 2), chunk = LLVMVectorType(et, (unsigned)to->v);
    int buf = smem_buffer(c, SMEM_SCRATCH, layout_shared_size(sl));
    LLVMValueRef base = LLVMConstInt(c->ti32, (unsigned long long)smem_offset(c, buf), 0);
    smem_access(c, buf, true);
    for (int k = 0; k + 1 < s->n; k += 2) {   /* MMA slots 2i, 2i+1: one row, columns 2j, 2j+1 */
        SlotPos p = slot_pos(c, from, k);
        Guard g = guard_begin(c, p.valid);
        LLVMValueRef v = LLVMBuildInsertElement(c->b, LLVMGetUndef(pair), s->v[k], i32c(c, 0), "");
        v = LLVMBuildInsertElement(c->b, v, s->v[k + 1], i32c(c, 1), "");
        LLVMValueRef st = LLVMBuildStore(c->b, v, smem_byte_ptr(c, offset_add(c, base, shared_offset(c, sl, p.row, p.col))));
        LLVMSetAlignment(st, (unsigned)(2 * eb));
        guard_end(c, g);
    }
    smem_access(c, buf, false);
    Slots out = new_slots(layout_nslots(to), to);
    for (int k = 0; k < out.n; k += to->v) {
        SlotPos p = slot_pos(c, to, k);
        LLVMValueRef at = shared_offset(c, sl, p.row, p.col);
        if (p.valid) at = LLVMBuildSelect(c->b, p.valid, at, i32c(c, 0), "");
        LLVMValueRef ld = LLVMBuildLoad2(c->b, chunk, smem_byte_ptr(c, offset_add(c, base, at)), "");
        LLVMSetAlignment(ld, (unsigned)(to->v * eb));
        for (int j = 0; j < to->v; j++) out.v[k + j] = LLVMBuildExtractElement(c->b, ld, i32c(c, j), "");
    }
    return out;
}

/* The widest vector atomic add (2 or 4 floats) that runs of l's slots
 * fill, where the target has one: 0 where none. */
static int atomic_width(Cg *c, const Layout *l, DType dt)
{
    int run = layout_col_run(l);
    if (dt != DT_F32 || !c->target->atomic_add_f32xn) return 0;
    return run % 4 == 0 ? 4 : run % 2 == 0 ? 2 : 0;
}

/* Whether a rank-2 window's len elements along axis a lie inside the
 * tensor (uniform over the block). */
static LLVMValueRef window_axis_inside(Cg *c, const IrOp *op, int a, int len)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef start = LLVMBuildSExt(B, c->vals[op->args[a]].v[0], c->ti64, "");
    LLVMValueRef end = LLVMBuildAdd(B, start, LLVMConstInt(c->ti64, (unsigned long long)len, 0), "");
    LLVMValueRef dim = a ? c->tensor_dim1[op->param] : c->tensor_dim0[op->param];
    return LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, start, LLVMConstInt(c->ti64, 0, 0), ""),
                        LLVMBuildICmp(B, LLVMIntSLE, end, dim, ""), "");
}

/* Whether a rank-2 window of an R x C tile lies wholly inside the tensor. */
static LLVMValueRef window_inside(Cg *c, const IrOp *op, int R, int C)
{
    return LLVMBuildAnd(c->b, window_axis_inside(c, op, 0, R), window_axis_inside(c, op, 1, C), "");
}

/* PHOBOS_ADD_EXCHANGE (on by default; =0 turns it off): an MMA layout's
 * pairs of columns added four floats at a time. Each thread holds, in a
 * row, the pair at columns 2q, 2q+1 (q = lane % 4) of every 8-column
 * piece; neighbouring lanes (lane ^ 1) trade one pair of two pieces side
 * by side, so the even lane holds columns 2q..2q+3 of the first piece and
 * the odd one 2(q-1)..2q+1 of the second: one red.v4 for two red.v2 (on
 * the H200 a 64 x D f32 tile from 256 threads adds at 3.3 TB/s against
 * 2.4; the fused backward 6% faster, docs/performance.md "sixteenth"). */
static bool exchange_on(void) { return env_switch("PHOBOS_ADD_EXCHANGE", true); }

/* For each pair k of s's slots that starts a 16-column block, the slot of
 * the pair 8 columns right of it (-1 at such a right pair), malloc'd;
 * NULL where a pair has none, or a slot may be invalid (past the tile, or
 * an idle warp's) or held twice. */
static int *exchange_partners(Cg *c, const Slots *s)
{
    const Layout *l = s->lay;
    int n = s->n, min_col = 0;
    if (l->kind != LAY_MMA || n % 4) return NULL;
    for (int k = 0; k < n; k++) {
        LayoutSlot o = layout_slot_offset(l, k);
        SlotPos p = slot_pos(c, l, k);
        if (p.valid || p.owner) return NULL;
        if (!k || o.col < min_col) min_col = o.col;
    }
    int *partner = xmalloc(sizeof *partner * (size_t)n);
    for (int k = 0; k < n; k += 2) partner[k] = -2;
    bool ok = true;
    for (int k = 0; ok && k < n; k += 2) {
        LayoutSlot a = layout_slot_offset(l, k), a1 = layout_slot_offset(l, k + 1);
        ok = a1.row == a.row && a1.col == a.col + 1;
        if (!ok || (a.col - min_col) % 16) continue;
        for (int k2 = 0; k2 < n; k2 += 2) {
            LayoutSlot b = layout_slot_offset(l, k2);
            if (b.row == a.row && b.col == a.col + 8) partner[k] = k2, partner[k2] = -1;
        }
        ok = partner[k] >= 0;
    }
    for (int k = 0; ok && k < n; k += 2) ok = partner[k] != -2;
    if (!ok) {
        free(partner);
        return NULL;
    }
    return partner;
}

/* Pair k of s and its partner k2 traded with the neighbouring lane (odd:
 * this lane's index is odd): the four floats this lane adds, into v, and
 * the position of the first. */
static SlotPos exchanged_run(Cg *c, const Slots *s, int k, int k2, LLVMValueRef odd, LLVMValueRef *v)
{
    LLVMBuilderRef B = c->b;
    for (int i = 0; i < 2; i++) {   /* the even lane gives its right pair, the odd its left */
        LLVMValueRef give = LLVMBuildSelect(B, odd, s->v[k + i], s->v[k2 + i], "");
        LLVMValueRef got = c->target->isa->shuffle_xor(c, give, 1, false);
        v[i] = LLVMBuildSelect(B, odd, got, s->v[k + i], "");
        v[2 + i] = LLVMBuildSelect(B, odd, s->v[k2 + i], got, "");
    }
    SlotPos p = slot_pos(c, s->lay, k), right = slot_pos(c, s->lay, k2);
    p.col = LLVMBuildSelect(B, odd, LLVMBuildSub(B, right.col, i32c(c, 2), ""), p.col, "");
    return p;
}

/* PHOBOS_ADD_INSIDE=1 (off until timed on the GPU): where the window lies
 * wholly inside the tensor, the runs go without bounds tests from one
 * address a thread: its first element's, plus each slot's constant row
 * and column offsets (a row's times the row length once per distinct row,
 * the column's an immediate), where each run otherwise computes its own
 * 64-bit address and tests it. */
static bool add_inside_on(void) { return env_switch("PHOBOS_ADD_INSIDE", false); }

/* The runs of n floats (with partner, exchange_partners' pairs traded,
 * n 4) of a window wholly inside the tensor. */
static void atomic_add_runs_inside(Cg *c, const IrOp *op, const Slots *s, int n, const int *partner)
{
    LLVMBuilderRef B = c->b;
    const Layout *l = s->lay;
    LLVMValueRef d1 = c->tensor_dim1[op->param];
    SlotPos p0 = slot_pos(c, l, 0);
    LayoutSlot o0 = layout_slot_offset(l, 0);
    /* a position is the thread's base plus the slot's constant offset (cg_values.c axis_pos) */
    LLVMValueRef trow = LLVMBuildSub(B, p0.row, i32c(c, o0.row), ""), tcol = LLVMBuildSub(B, p0.col, i32c(c, o0.col), "");
    LLVMValueRef odd = NULL;
    if (partner) {
        /* an odd lane adds at its right pair's column less 2: its left pair's plus 6 */
        odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, c->lane, i32c(c, 1), ""), i32c(c, 0), "");
        tcol = LLVMBuildAdd(B, tcol, LLVMBuildSelect(B, odd, i32c(c, 6), i32c(c, 0), ""), "");
    }
    LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, trow, c->ti64, ""), "");
    LLVMValueRef col = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, ""), LLVMBuildZExt(B, tcol, c->ti64, ""), "");
    LLVMValueRef elem = LLVMBuildAdd(B, LLVMBuildMul(B, r, d1, ""), col, "");
    LLVMValueRef base = LLVMBuildAdd(B, LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, ""),
                                     LLVMBuildShl(B, elem, LLVMConstInt(c->ti64, 2, 0), ""), "");
    int step = partner ? 2 : n;   /* a pair and its partner make a run of 4 */
    for (int k = 0; k + step <= s->n; k += step) {
        LLVMValueRef traded[4], *v = &s->v[k];
        if (partner) {
            if (partner[k] < 0) continue;
            exchanged_run(c, s, k, partner[k], odd, traded);
            v = traded;
        }
        LayoutSlot o = layout_slot_offset(l, k);
        SlotPos p = slot_pos(c, l, k);
        Guard g = guard_begin(c, and1(c, p.valid, p.owner));
        LLVMValueRef rows = LLVMBuildMul(B, d1, LLVMConstInt(c->ti64, (unsigned long long)(o.row - o0.row), 0), "");
        LLVMValueRef off = LLVMBuildAdd(B, rows, LLVMConstInt(c->ti64, (unsigned long long)(int64_t)(o.col - o0.col), 0), "");
        LLVMValueRef addr = LLVMBuildAdd(B, base, LLVMBuildShl(B, off, LLVMConstInt(c->ti64, 2, 0), ""), "");
        c->target->atomic_add_f32xn(c, addr, v, n);
        guard_end(c, g);
    }
}

/* One atomic add of the n floats v at position p of op's window (tensor:
 * its base address), where p lies inside the tensor and holds the copy
 * that writes. */
static void add_run_at(Cg *c, const IrOp *op, LLVMValueRef tensor, SlotPos p, LLVMValueRef *v, int n)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef off, inb;
    window_elem(c, op, p, &off, &inb);
    Guard g = guard_begin(c, and1(c, inb, p.owner));
    LLVMValueRef addr = LLVMBuildAdd(B, tensor, LLVMBuildShl(B, off, LLVMConstInt(c->ti64, 2, 0), ""), "");
    c->target->atomic_add_f32xn(c, addr, v, n);
    guard_end(c, g);
}

/* Atomic f32 adds of n consecutive columns at a time (runs of s's slots,
 * layout_col_run; with partner, exchange_partners' pairs traded, n 4)
 * where the window's n-element chunks are aligned (then each run is
 * wholly inside the tensor or wholly outside); element by element
 * otherwise. One branch, uniform over the block. */
static void atomic_add_runs(Cg *c, const IrOp *op, const Slots *s, int n, const int *partner)
{
    LLVMBuilderRef B = c->b;
    LLVMBasicBlockRef vec = new_bb(c, "adv"), scal = new_bb(c, "ads"), done = new_bb(c, "add");
    LLVMValueRef aligned = window_chunks_aligned(c, op, n);
    if (add_inside_on() && c->f->params[op->param].rank == 2) {
        /* a window across the tensor's edge goes element by element: fewer
         * paths, fewer registers (ptxas at the fused backward's D 128: 92
         * bytes of spills, 156 without the switch, 180 with the vector
         * edge path kept beside) */
        LLVMBuildCondBr(B, LLVMBuildAnd(B, aligned, window_inside(c, op, s->lay->rows, s->lay->cols), ""), vec, scal);
        LLVMPositionBuilderAtEnd(B, vec);
        atomic_add_runs_inside(c, op, s, n, partner);
        LLVMBuildBr(B, done);
        LLVMPositionBuilderAtEnd(B, scal);
        store_elements(c, op, s, NULL, true);
        LLVMBuildBr(B, done);
        LLVMPositionBuilderAtEnd(B, done);
        return;
    }
    LLVMBuildCondBr(B, aligned, vec, scal);
    LLVMPositionBuilderAtEnd(B, vec);
    LLVMValueRef base = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    if (partner) {
        LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, c->lane, i32c(c, 1), ""), i32c(c, 0), "");
        for (int k = 0; k < s->n; k += 2) {
            if (partner[k] < 0) continue;
            LLVMValueRef v[4];
            SlotPos p = exchanged_run(c, s, k, partner[k], odd, v);
            add_run_at(c, op, base, p, v, 4);
        }
    } else {
        for (int k = 0; k + n <= s->n; k += n) add_run_at(c, op, base, slot_pos(c, s->lay, k), &s->v[k], n);
    }
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, scal);
    store_elements(c, op, s, NULL, true);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

/* Whether an atomic add of a tile in layout l goes through the target's
 * bulk adds: with PHOBOS_BULK_ADD=1 (off by default: on the H200 the fused
 * backward's dQ share ran 9-28% slower so than by vector adds from the
 * registers, docs/performance.md), f32 in an MMA layout (a dot's result)
 * of a rank-2 tensor, rows of whole 16-byte chunks, as large a tile as
 * staging needs. */
static bool bulk_add_pays(Cg *c, const IrOp *op, const Layout *l, DType dt)
{
    return env_switch("PHOBOS_BULK_ADD", false) && c->target->bulk_add && dt == DT_F32 && c->f->params[op->param].rank == 2 && staging_pays(l, dt);
}

/* The fallback of a bulk add: the R x C floats of the scratch at base
 * (rows pitch bytes apart, or laid out as SHARED layout `slot`) added
 * element by element, thread t taking elements t, t + T, ... in a loop
 * (rare: the registers are free by now; `one_thread`: all of them by this
 * thread, a producer's). */
static void adds_from_scratch(Cg *c, const IrOp *op, LLVMValueRef base, int R, int C, int64_t pitch, const Layout *slot, bool one_thread)
{
    LLVMBuilderRef B = c->b;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B), head = new_bb(c, "adsh"), body = new_bb(c, "adsb"), out = new_bb(c, "adse");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef i = LLVMBuildPhi(B, c->ti32, "");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, i, i32c(c, (int64_t)R * C), ""), body, out);
    LLVMPositionBuilderAtEnd(B, body);
    SlotPos p = {.row = udiv(c, i, C), .col = urem(c, i, C)};
    LLVMValueRef off, inb;
    window_elem(c, op, p, &off, &inb);
    LLVMValueRef at = slot ? shared_offset(c, slot, p.row, p.col) : add(c, mul(c, p.row, pitch), mul(c, p.col, 4));
    LLVMValueRef v = LLVMBuildLoad2(B, c->tf32, smem_byte_ptr(c, add(c, base, at)), "");
    Guard g = guard_begin(c, inb);
    LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpFAdd, LLVMBuildGEP2(B, c->tf32, c->tensor_ptr[op->param], &off, 1, ""), v,
                       LLVMAtomicOrderingMonotonic, 0);
    guard_end(c, g);
    LLVMValueRef next = add(c, i, i32c(c, one_thread ? 1 : c->T));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, head);
    LLVMValueRef vals[2] = {one_thread ? i32c(c, 0) : c->tid, next};
    LLVMBasicBlockRef from[2] = {pre, latch};
    LLVMAddIncoming(i, vals, from, 2);
    LLVMPositionBuilderAtEnd(B, out);
}

/* A bulk add's scratch: the tile's C floats a row, rows unpadded, so a
 * window of whole rows of the tensor is one contiguous range in both and
 * goes in one bulk add (on the H200 4.0 TB/s for a 64 x D tile against
 * 1.8-2.8 for a row each, docs/performance.md "sixteenth"). The price is
 * bank conflicts on the writes: a warp's eight rows fall in the same
 * banks, so where the pairs trade (exchange_partners) each lane writes
 * four floats, two wavefronts where one would do, else pairs, four. */
static int64_t bulk_pitch(int C) { return (int64_t)C * 4; }

static int producer_add_of(const Cg *c, const IrOp *op);

/* Whether op is an atomic add that goes through the bulk adds. */
static bool adds_in_bulk(Cg *c, const IrOp *op)
{
    if (op->kind != OP_ATOMIC_ADD || ir_store_mask(op) || c->role == CG_PRODUCER || producer_add_of(c, op) >= 0) return false;
    ValueId val = op->args[op->nargs - 1];
    return is_tile(c, val) && bulk_add_pays(c, op, reg_layout(c, val), c->f->params[op->param].dt);
}

/* The bulk adds directly in a loop's body take turns between two scratch
 * slots: the adds of one iteration read their slot while the next
 * iteration runs, and only the one after writes it again, so no thread
 * waits for a read it has just issued. The buffer is accessed before the
 * loop, which keeps it live over the whole loop in the plan (nothing else
 * takes its bytes while the copy engine may read them), and after it,
 * once the last adds have read it. */
int bulk_adds_enter_loop(Cg *c, const IrBlock *body)
{
    int mark = c->nloop_adds, most = (int)(sizeof c->loop_adds / sizeof c->loop_adds[0]);
    for (int i = 0; i < body->nops && c->nloop_adds < most; i++) {
        const IrOp *op = body->ops[i];
        if (!adds_in_bulk(c, op)) continue;
        const Layout *l = reg_layout(c, op->args[op->nargs - 1]);
        int buf = smem_buffer(c, SMEM_SCRATCH, 2 * l->rows * bulk_pitch(l->cols));
        smem_access(c, buf, false);
        LLVMValueRef slot = entry_alloca(c, c->ti32);
        LLVMBuildStore(c->b, i32c(c, 0), slot);
        c->loop_adds[c->nloop_adds].op = op;
        c->loop_adds[c->nloop_adds].buf = buf;
        c->loop_adds[c->nloop_adds].slot = slot;
        c->nloop_adds++;
    }
    return mark;
}

void bulk_adds_leave_loop(Cg *c, int mark)
{
    for (int i = mark; i < c->nloop_adds; i++) {
        c->target->bulk_add->wait_reads(c);
        smem_access(c, c->loop_adds[i].buf, false);
    }
    c->nloop_adds = mark;
}

/* s (an MMA layout) written to the bulk add's scratch at base, rows
 * pitch bytes apart. */
static void write_bulk_scratch(Cg *c, const Slots *s, LLVMValueRef base, int64_t pitch)
{
    LLVMBuilderRef B = c->b;
    int *partner = exchange_on() ? exchange_partners(c, s) : NULL;
    LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, c->lane, i32c(c, 1), ""), i32c(c, 0), "");
    for (int k = 0; k + 1 < s->n; k += 2) {   /* MMA slots 2i, 2i+1: one row, columns 2j, 2j+1 */
        if (partner && partner[k] < 0) continue;
        LLVMValueRef v[4] = {s->v[k], s->v[k + 1]};
        SlotPos p = partner ? exchanged_run(c, s, k, partner[k], odd, v) : slot_pos(c, s->lay, k);
        int n = partner ? 4 : 2;
        LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(c->tf32, (unsigned)n));
        for (int i = 0; i < n; i++) vec = LLVMBuildInsertElement(B, vec, v[i], i32c(c, i), "");
        Guard g = guard_begin(c, p.valid);
        LLVMValueRef at = add(c, base, add(c, mul(c, p.row, pitch), mul(c, p.col, 4)));
        LLVMSetAlignment(LLVMBuildStore(B, vec, smem_byte_ptr(c, at)), (unsigned)n * 4);
        guard_end(c, g);
    }
    free(partner);
}

/* The bulk adds of the R x C floats at scratch offset base (rows
 * bulk_pitch apart) into op's window, whose rows are whole 16-byte chunks
 * inside the tensor's columns: a window of whole rows of the tensor, all
 * inside, in one add (thread 0's, the same thread each turn, so its waits
 * cover its earlier adds); any other a row each, each row inside the
 * tensor by one thread (thread t row t, t + T, ...; `one_thread`: all by
 * this thread, a producer's, in a loop). */
static void issue_bulk_adds(Cg *c, const IrOp *op, LLVMValueRef base, int R, int C, bool one_thread)
{
    LLVMBuilderRef B = c->b;
    int64_t pitch = bulk_pitch(C);
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef r0 = LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, "");
    LLVMValueRef c0 = LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, "");
    LLVMValueRef tensor = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    LLVMValueRef rows_whole = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, c0, LLVMConstInt(c->ti64, 0, 0), ""),
                                           LLVMBuildICmp(B, LLVMIntEQ, d1, LLVMConstInt(c->ti64, (unsigned long long)C, 0), ""), "");
    rows_whole = LLVMBuildAnd(B, rows_whole, window_axis_inside(c, op, 0, R), "");
    LLVMBasicBlockRef one = new_bb(c, "addo"), each = new_bb(c, "addp"), done = new_bb(c, "addi");
    LLVMBuildCondBr(B, rows_whole, one, each);
    LLVMPositionBuilderAtEnd(B, one);
    Guard g0 = guard_begin(c, one_thread ? NULL : LLVMBuildICmp(B, LLVMIntEQ, c->tid, i32c(c, 0), ""));
    LLVMValueRef first = LLVMBuildAdd(B, tensor, LLVMBuildShl(B, LLVMBuildMul(B, r0, d1, ""), LLVMConstInt(c->ti64, 2, 0), ""), "");
    c->target->bulk_add->add_f32(c, first, base, R * C * 4);
    guard_end(c, g0);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, each);
    LLVMBasicBlockRef pre = each, head = NULL, latch = NULL;
    LLVMValueRef i = NULL;
    if (one_thread) {   /* row i, i = 0 .. R - 1 */
        head = new_bb(c, "addrow");
        LLVMBuildBr(B, head);
        LLVMPositionBuilderAtEnd(B, head);
        i = LLVMBuildPhi(B, c->ti32, "");
    }
    for (int i0 = 0; i0 < (one_thread ? 1 : R); i0 += c->T) {
        LLVMValueRef row = one_thread ? i : add(c, c->tid, i32c(c, i0));
        LLVMValueRef grow = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, row, c->ti64, ""), "");
        LLVMValueRef inb = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, row, i32c(c, R), ""),
                                        LLVMBuildICmp(B, LLVMIntULT, grow, d0, ""), "");
        Guard g = guard_begin(c, inb);
        LLVMValueRef elem = LLVMBuildAdd(B, LLVMBuildMul(B, grow, d1, ""), c0, "");
        LLVMValueRef gat = LLVMBuildAdd(B, tensor, LLVMBuildShl(B, elem, LLVMConstInt(c->ti64, 2, 0), ""), "");
        c->target->bulk_add->add_f32(c, gat, add(c, base, mul(c, row, pitch)), C * 4);
        guard_end(c, g);
    }
    if (one_thread) {
        LLVMValueRef next = add(c, i, i32c(c, 1));
        latch = LLVMGetInsertBlock(B);
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, next, i32c(c, R), ""), head, done);
        LLVMValueRef vals[2] = {i32c(c, 0), next};
        LLVMBasicBlockRef from[2] = {pre, latch};
        LLVMAddIncoming(i, vals, from, 2);
    } else {
        LLVMBuildBr(B, done);
    }
    LLVMPositionBuilderAtEnd(B, done);
}

/* The R x C floats at scratch offset base added into op's window: by bulk
 * adds where its rows are whole aligned 16-byte chunks inside the tensor's
 * columns, else element by element (a uniform branch). */
static void add_scratch(Cg *c, const IrOp *op, LLVMValueRef base, int R, int C, bool one_thread)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef whole = LLVMBuildAnd(B, window_chunks_aligned(c, op, 4), window_axis_inside(c, op, 1, C), "");
    LLVMBasicBlockRef bulk = new_bb(c, "addb"), elems = new_bb(c, "adde"), done = new_bb(c, "addd");
    LLVMBuildCondBr(B, whole, bulk, elems);
    LLVMPositionBuilderAtEnd(B, bulk);
    issue_bulk_adds(c, op, base, R, C, one_thread);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, elems);
    adds_from_scratch(c, op, base, R, C, bulk_pitch(C), NULL, one_thread);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

/* The bulk add: s (an MMA layout) written to a scratch buffer (rows
 * bulk_pitch apart; in a loop, the slot of this iteration), made visible
 * to the copy engine (fence, the plan's barrier), and added by the copy
 * engine: a window of whole rows of the tensor in one bulk add, any other
 * a row each (each row inside the tensor by one thread). In a loop each thread waits
 * for its previous iteration's adds to read the other slot before that
 * barrier, so the next iteration may write it; elsewhere for these adds,
 * right after them. Where the window's rows are not whole aligned 16-byte
 * chunks inside the tensor (window_chunks_aligned, the columns inside),
 * the scratch is added element by element instead (adds_from_scratch);
 * the branch is uniform over the block and comes after the barrier, so
 * the plan's barriers run whichever is taken. */
static void atomic_add_bulk(Cg *c, const IrOp *op, const Slots *s)
{
    LLVMBuilderRef B = c->b;
    const Layout *l = s->lay;
    int R = l->rows, C = l->cols;
    int64_t pitch = bulk_pitch(C);
    int turn = -1;
    for (int i = 0; i < c->nloop_adds; i++)
        if (c->loop_adds[i].op == op) turn = i;
    int buf = turn >= 0 ? c->loop_adds[turn].buf : smem_buffer(c, SMEM_SCRATCH, R * pitch);
    LLVMValueRef base = i32c(c, smem_offset(c, buf));
    if (turn >= 0) {
        LLVMValueRef slot = LLVMBuildLoad2(B, c->ti32, c->loop_adds[turn].slot, "");
        base = add(c, base, mul(c, slot, R * pitch));
        LLVMBuildStore(B, LLVMBuildXor(B, slot, i32c(c, 1), ""), c->loop_adds[turn].slot);
    }
    smem_access(c, buf, true);
    write_bulk_scratch(c, s, base, pitch);
    c->target->bulk_add->fence(c);
    if (turn >= 0) c->target->bulk_add->wait_reads(c);
    smem_access(c, buf, false);
    c->bulk_adds = true;
    add_scratch(c, op, base, R, C, false);
    if (turn < 0) c->target->bulk_add->wait_reads(c);
}

/* ---- adds the producer issues (ADD_BY_PRODUCER: warp-specialized) ----
 * The consumers write the tile into a staging slot (rows bulk_pitch apart,
 * as a bulk add's scratch), hand it over and go on; the producer's thread
 * takes it, adds it by the copy engine and, once the engine has read it,
 * gives it back. No consumer waits for another or for the engine, and the
 * adds' address arithmetic is the producer's. A slot's bytes are the same
 * in both roles and the whole kernel's (allocated before the roles part,
 * accessed at the start and after everything, as the copy engine's
 * mbarriers are), and its mbarrier follows it; a tile larger than
 * PRODUCER_SLOT_MOST stays the consumers' to add. A window whose rows are
 * not whole 16-byte chunks inside the tensor's columns the producer adds
 * element by element from the slot (rare: a misaligned tensor). */

/* A staging slot's bytes at most: a slot holds them for the whole kernel,
 * and a 64 KB one (a 128 x 128 tile) takes the fused backward's head dim
 * 128 configs of 128-row blocks past a block's 227 KB of shared memory,
 * where the consumers' own adds leave them under it. */
enum { PRODUCER_SLOT_MOST = 32 * 1024 };

/* The add's entry in c->producer_adds, or -1. */
static int producer_add_of(const Cg *c, const IrOp *op)
{
    for (int i = 0; i < c->nproducer_adds; i++)
        if (c->producer_adds[i].op == op) return i;
    return -1;
}

/* The producer's slots box-major in the hardware's 128-byte swizzle,
 * added through an f32 tensor map a 32-column box at a time, so the
 * consumers store two floats a lane with no exchange and no bank conflict
 * (the fused backward 4-7% faster at head dim 128 and 4% at 64 on an
 * H100, docs/performance.md "thirty-sixth"); PHOBOS_TENSOR_ADDS=0: rows
 * of the tile's width, added whole or a row at a time. */
static bool tensor_adds_on(void) { return env_switch("PHOBOS_TENSOR_ADDS", true); }

/* The slot of tile l added through a tensor map: boxes of 32 f32 columns
 * (128-byte rows, the widest swizzle) of at most 256 rows; NULL where the
 * engine has no such adds or the tile does not cut so. */
static const Layout *box_slot(Cg *c, const Layout *l)
{
    if (!tensor_adds_on() || !c->target->bulk_add->add_f32_box || l->rows > 256) return NULL;
    const Layout *s = layout_shared_atoms(c->layouts, l->rows, l->cols, 4);
    return s && layout_shared_atom_cols(s) * 4 == 128 ? s : NULL;
}

static void find_producer_adds(Cg *c, const IrBlock *b)
{
    int most = (int)(sizeof c->producer_adds / sizeof c->producer_adds[0]);
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        find_producer_adds(c, op->body);
        find_producer_adds(c, op->els);
        if (op->kind != OP_ATOMIC_ADD || !(op->flags & ADD_BY_PRODUCER) || c->nproducer_adds == most) continue;
        ValueId val = op->args[op->nargs - 1];
        DType dt = c->f->params[op->param].dt;
        if (!is_tile(c, val) || dt != DT_F32) continue;
        const Layout *l = reg_layout(c, val);
        if (!staging_pays(l, dt) || l->rows * bulk_pitch(l->cols) > PRODUCER_SLOT_MOST) continue;
        const Layout *slot = box_slot(c, l);
        int desc = slot ? copy_descriptor(c, (CodegenCopyDesc){op->param, l->rows, layout_shared_atom_cols(slot), 128, 4}, true) : -1;
        int k = c->nproducer_adds++;
        c->producer_adds[k].op = op;
        c->producer_adds[k].slot = desc >= 0 ? slot : NULL;
        c->producer_adds[k].desc = desc;
    }
}

void producer_adds_plan(Cg *c, const IrFunc *f)
{
    c->nproducer_adds = 0;
    const BulkAddEngine *e = c->target->bulk_add;
    if (f->producer && e && e->slot_init) find_producer_adds(c, f->body);
}

/* A slot's bytes (its mbarrier follows them). */
static int64_t slot_bytes(Cg *c, int k)
{
    const IrOp *op = c->producer_adds[k].op;
    const Layout *l = reg_layout(c, op->args[op->nargs - 1]);
    return c->producer_adds[k].slot ? layout_shared_size(c->producer_adds[k].slot) : l->rows * bulk_pitch(l->cols);
}

/* Before the roles part: the staging slots of the adds the producer
 * issues (a swizzled one where the hardware's swizzle wants it, at 1024
 * bytes), their mbarriers initialized, behind a block barrier. */
void producer_adds_begin(Cg *c)
{
    if (!c->nproducer_adds) return;
    for (int k = 0; k < c->nproducer_adds; k++) {
        int64_t bytes = slot_bytes(c, k) + 8;
        c->producer_adds[k].buf = c->producer_adds[k].slot ? smem_operand_buffer(c, SMEM_REGION, bytes) : smem_buffer(c, SMEM_REGION, bytes);
        c->producer_adds[k].phase = entry_alloca(c, c->ti32);
        LLVMBuildStore(c->b, i32c(c, 1), c->producer_adds[k].phase);   /* a fresh slot's wait passes */
    }
    Guard g = guard_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, i32c(c, 0), ""));
    for (int k = 0; k < c->nproducer_adds; k++) {
        int buf = c->producer_adds[k].buf;
        smem_access(c, buf, true);
        c->target->bulk_add->slot_init(c, i32c(c, smem_offset(c, buf) + slot_bytes(c, k)));
    }
    guard_end(c, g);
    smem_fixed_barrier(c);
}

/* After everything: the slots' last access (the producer may read one
 * while the consumers run their epilogue). */
void producer_adds_end(Cg *c)
{
    for (int k = 0; k < c->nproducer_adds; k++) smem_access(c, c->producer_adds[k].buf, false);
}

/* s (an MMA layout) written to a box slot at base (SHARED layout slot): a
 * lane's two floats of a row at a time, where the swizzle spreads a
 * warp's eight rows over every bank. */
static void write_box_slot(Cg *c, const Slots *s, LLVMValueRef base, const Layout *slot)
{
    LLVMBuilderRef B = c->b;
    for (int k = 0; k + 1 < s->n; k += 2) {   /* MMA slots 2i, 2i+1: one row, columns 2j, 2j+1 */
        SlotPos p = slot_pos(c, s->lay, k);
        LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(c->tf32, 2));
        for (int i = 0; i < 2; i++) vec = LLVMBuildInsertElement(B, vec, s->v[k + i], i32c(c, i), "");
        Guard g = guard_begin(c, p.valid);
        LLVMSetAlignment(LLVMBuildStore(B, vec, smem_byte_ptr(c, add(c, base, shared_offset(c, slot, p.row, p.col)))), 8);
        guard_end(c, g);
    }
}

/* Whether a window's start v is a box coordinate the engine adds at: not
 * before the tensor (an H100 faults on such an add, an illegal
 * instruction, where a load's box may start there) and within an int32. */
static LLVMValueRef box_coord_ok(Cg *c, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    return LLVMBuildICmp(c->b, LLVMIntULE, v, LLVMConstInt(t, INT32_MAX, false), "");
}

/* The producer's adds of a box slot: a box of the tensor map each where
 * the launch built the map and the window starts on a 16-byte unit of
 * its row, not before the tensor (the engine clips what lies past it),
 * else element by element (a uniform branch: the producer's one thread). */
static void add_box_slot(Cg *c, const IrOp *op, int k, LLVMValueRef base, int R, int C)
{
    LLVMBuilderRef B = c->b;
    const Layout *slot = c->producer_adds[k].slot;
    int j = c->producer_adds[k].desc, box = layout_shared_atom_cols(slot);
    LLVMValueRef ok = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, c->desc_ok[j], i32c(c, 0), ""), window_chunks_aligned(c, op, 4), "");
    ok = LLVMBuildAnd(B, ok, LLVMBuildAnd(B, box_coord_ok(c, c->vals[op->args[0]].v[0]), box_coord_ok(c, c->vals[op->args[1]].v[0]), ""), "");
    LLVMBasicBlockRef boxes = new_bb(c, "addx"), elems = new_bb(c, "adde"), done = new_bb(c, "addd");
    LLVMBuildCondBr(B, ok, boxes, elems);
    LLVMPositionBuilderAtEnd(B, boxes);
    LLVMValueRef y = LLVMBuildTrunc(B, c->vals[op->args[0]].v[0], c->ti32, "");
    LLVMValueRef x = LLVMBuildTrunc(B, c->vals[op->args[1]].v[0], c->ti32, "");
    for (int b = 0; b < C / box; b++)
        c->target->bulk_add->add_f32_box(c, j, add(c, base, i32c(c, (int64_t)b * R * box * 4)), add(c, x, i32c(c, (int64_t)b * box)), y);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, elems);
    adds_from_scratch(c, op, base, R, C, 0, slot, true);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

static void atomic_add_by_producer(Cg *c, const IrOp *op, int k)
{
    LLVMBuilderRef B = c->b;
    const BulkAddEngine *e = c->target->bulk_add;
    ValueId val = op->args[op->nargs - 1];
    const Layout *l = reg_layout(c, val), *slot = c->producer_adds[k].slot;
    int R = l->rows, C = l->cols;
    LLVMValueRef base = i32c(c, smem_offset(c, c->producer_adds[k].buf));
    LLVMValueRef free_at = i32c(c, smem_offset(c, c->producer_adds[k].buf) + slot_bytes(c, k));
    if (c->role != CG_PRODUCER) {
        Slots s = cg_get(c, val, l);
        LLVMValueRef parity = LLVMBuildLoad2(B, c->ti32, c->producer_adds[k].phase, "");
        LLVMBuildStore(B, LLVMBuildXor(B, parity, i32c(c, 1), ""), c->producer_adds[k].phase);
        e->wait_free(c, free_at, parity);
        if (slot) write_box_slot(c, &s, base, slot);
        else write_bulk_scratch(c, &s, base, bulk_pitch(C));
        e->hand_over(c, k);
        return;
    }
    e->take(c, k);
    if (slot) add_box_slot(c, op, k, base, R, C);
    else add_scratch(c, op, base, R, C, true);
    e->give_back(c, free_at);
    c->bulk_adds = true;
}

static void write_window(Cg *c, const IrOp *op, bool atomic)
{
    int by_producer = atomic ? producer_add_of(c, op) : -1;
    if (by_producer >= 0) {
        atomic_add_by_producer(c, op, by_producer);
        return;
    }
    if (c->role == CG_PRODUCER) return;   /* an add the consumers make from their registers */
    ValueId val = op->args[op->nargs - 1];
    if (!is_tile(c, val)) {
        /* a scalar written to a one-element window (sema broadcasts tiles) */
        cg_fail(c, op, atomic ? "internal error: scalar atomic_add" : "internal error: scalar store");
        return;
    }
    const Layout *l = reg_layout(c, val);
    Slots s = cg_get(c, val, l);
    DType dt = c->f->params[op->param].dt;
    ValueId mask = ir_store_mask(op);
    int width = atomic && !mask ? atomic_width(c, l, dt) : 0;
    if (atomic && !mask && bulk_add_pays(c, op, l, dt)) {
        atomic_add_bulk(c, op, &s);
    } else if (width) {
        int *partner = width == 2 && exchange_on() ? exchange_partners(c, &s) : NULL;
        atomic_add_runs(c, op, &s, partner ? 4 : width, partner);
        free(partner);
    } else if (atomic || mask) {
        Slots m = mask ? cg_get(c, mask, l) : (Slots){0};
        store_elements(c, op, &s, mask ? &m : NULL, atomic);
    } else if (staging_pays(l, dt)) {
        Slots b = stage_through_shared(c, &s, dt);
        store_blocked(c, op, &b);
        free(b.v);
    } else if (l->kind == LAY_BLOCKED && l->v > 1) {
        store_blocked(c, op, &s);
    } else {
        store_elements(c, op, &s, NULL, false);
    }
}

void emit_store(Cg *c, const IrOp *op) { write_window(c, op, false); }
void emit_atomic_add(Cg *c, const IrOp *op) { write_window(c, op, true); }
