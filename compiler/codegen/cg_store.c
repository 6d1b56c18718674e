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

/* Atomic f32 adds of n consecutive columns at a time (runs of s's slots,
 * layout_col_run) where the window's n-element chunks are aligned (then
 * each run is wholly inside the tensor or wholly outside); element by
 * element otherwise. One branch, uniform over the block. */
static void atomic_add_runs(Cg *c, const IrOp *op, const Slots *s, int n)
{
    LLVMBuilderRef B = c->b;
    LLVMBasicBlockRef vec = new_bb(c, "adv"), scal = new_bb(c, "ads"), done = new_bb(c, "add");
    LLVMBuildCondBr(B, window_chunks_aligned(c, op, n), vec, scal);
    LLVMPositionBuilderAtEnd(B, vec);
    LLVMValueRef base = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    for (int k = 0; k + n <= s->n; k += n) {
        SlotPos p = slot_pos(c, s->lay, k);
        LLVMValueRef off, inb;
        window_elem(c, op, p, &off, &inb);
        Guard g = guard_begin(c, and1(c, inb, p.owner));
        LLVMValueRef addr = LLVMBuildAdd(B, base, LLVMBuildShl(B, off, LLVMConstInt(c->ti64, 2, 0), ""), "");
        c->target->atomic_add_f32xn(c, addr, &s->v[k], n);
        guard_end(c, g);
    }
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, scal);
    store_elements(c, op, s, NULL, true);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

static void write_window(Cg *c, const IrOp *op, bool atomic)
{
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
    if (width) {
        atomic_add_runs(c, op, &s, width);
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
