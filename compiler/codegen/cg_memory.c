/* cg_memory.c: loads, gathers and scatters, shared-memory addresses and
 * shared-memory rings: their places, the copies into them (through the
 * target's copy engine), the waits for those, reads of their slots.
 *
 * Expects: ring numbers below CG_MAX_RINGS (ir_verify's limit), placed by
 * plan_rings before emission.
 * Guarantees: a load, gather or scatter touches only in-bounds elements
 * (the window's mask, the indices' bounds), a scatter each element once
 * (stores, masked ones too, are cg_store.c's); every
 * shared-memory tile is addressed by its SHARED layout's map
 * (shared_offset, layout_shared_offset emitted); copies land in their
 * ring slot, a buffer of the shared area, and read_shared_at reads a ring
 * slot in any register layout. */
#include "target.h"

#include <stdlib.h>
#include <string.h>

/* ---- memory ---- */

/* The window axis of a rank-3/4 tensor that the tile's columns run
 * along (its last window axis), and the one its rows run along (-1 for a
 * 1-D tile). */
static int col_axis(const IrOp *op) { return 31 - __builtin_clz((unsigned)op->window_axes); }
static int row_axis(const IrOp *op)
{
    unsigned rest = (unsigned)op->window_axes & ~(1u << col_axis(op));
    return rest ? __builtin_ctz(rest) : -1;
}

/* A window of a rank-3/4 tensor: each axis's index (its start, plus the
 * slot's row or column along the window axes) checked against its dim
 * (unsigned: negative is out) and times its stride, summed in i64. */
static void strided_elem(Cg *c, const IrOp *op, SlotPos p, LLVMValueRef *offset, LLVMValueRef *ok)
{
    LLVMBuilderRef B = c->b;
    int rank = c->f->params[op->param].rank, ca = col_axis(op), ra = row_axis(op);
    *offset = NULL;
    *ok = NULL;
    for (int a = 0; a < rank; a++) {
        LLVMValueRef at = LLVMBuildSExt(B, c->vals[op->args[a]].v[0], c->ti64, "");
        if (a == ca) at = LLVMBuildAdd(B, at, LLVMBuildZExt(B, p.col, c->ti64, ""), "");
        if (a == ra) at = LLVMBuildAdd(B, at, LLVMBuildZExt(B, p.row, c->ti64, ""), "");
        LLVMValueRef in = LLVMBuildICmp(B, LLVMIntULT, at, c->tensor_dims[op->param][a], "");
        LLVMValueRef term = LLVMBuildMul(B, at, c->tensor_strides[op->param][a], "");
        *ok = *ok ? LLVMBuildAnd(B, *ok, in, "") : in;
        *offset = *offset ? LLVMBuildAdd(B, *offset, term, "") : term;
    }
}

/* Whether every column of a rank-2 window lies inside its rank-2 tensor
 * whatever the slot: its start and the tensor's column count constants
 * (PHOBOS_SPECIALIZED_DIMS) with start + the tile's columns within it. A
 * valid slot's column is below the tile's (slot_pos), but the column LLVM
 * sees (an exchanged pair's, a thread's base plus an offset) it cannot
 * always bound, so the test is left out here rather than folded there. */
static bool columns_inside(Cg *c, const IrOp *op)
{
    LLVMValueRef start = c->vals[op->args[1]].v[0], d1 = c->tensor_dim1[op->param];
    ValueId tile = op->kind == OP_LOAD ? op->res[0] : op->kind == OP_STORE || op->kind == OP_ATOMIC_ADD ? op->args[op->nargs - 1] : 0;
    IrType t = tile ? vtype(c, tile) : (IrType){0};
    if (t.rank != 2 || !LLVMIsAConstantInt(start) || !LLVMIsAConstantInt(d1)) return false;
    long long s = LLVMConstIntGetSExtValue(start), d = LLVMConstIntGetSExtValue(d1);
    return s >= 0 && s + t.shape[1] <= d;
}

/* The element (row, col) of the window at slot position p: its offset in
 * the tensor (i64) and whether it lies inside. */
void window_elem(Cg *c, const IrOp *op, SlotPos p, LLVMValueRef *offset, LLVMValueRef *inb)
{
    const IrParam *prm = &c->f->params[op->param];
    LLVMBuilderRef B = c->b;
    if (prm->rank > 2) {
        LLVMValueRef ok;
        strided_elem(c, op, p, offset, &ok);
        *inb = p.valid ? LLVMBuildAnd(B, ok, p.valid, "") : ok;
        return;
    }
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef ok;
    if (prm->rank == 1) {
        LLVMValueRef cl = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, p.col, c->ti64, ""), "");
        ok = LLVMBuildICmp(B, LLVMIntULT, cl, d0, "");   /* unsigned: negative is out */
        *offset = cl;
    } else {
        LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, p.row, c->ti64, ""), "");
        LLVMValueRef cl = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, ""), LLVMBuildZExt(B, p.col, c->ti64, ""), "");
        LLVMValueRef col_ok = columns_inside(c, op) ? NULL : LLVMBuildICmp(B, LLVMIntULT, cl, d1, "");
        ok = LLVMBuildICmp(B, LLVMIntULT, r, d0, "");
        if (col_ok) ok = LLVMBuildAnd(B, ok, col_ok, "");
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
        LLVMSetAlignment(v, (unsigned)(l->v * ir_dtype_bytes(t.dt)));
        for (int j = 0; j < l->v; j++)
            out.v[k + j] = LLVMBuildSelect(c->b, inb, LLVMBuildExtractElement(c->b, v, i32c(c, j), ""), LLVMConstNull(et), "");
    }
    return out;
}

/* A rank-3/4 window's chunks: where the columns' axis has stride 1 and a
 * dim that is a multiple of v, every other stride is a multiple of v and
 * the columns' start is, a chunk's elements are consecutive, and wholly
 * inside or wholly outside. */
static LLVMValueRef strided_chunks_aligned(Cg *c, const IrOp *op, int v)
{
    LLVMBuilderRef B = c->b;
    const IrParam *prm = &c->f->params[op->param];
    int ca = col_axis(op);
    LLVMValueRef zero = LLVMConstInt(c->ti64, 0, 0), vm = LLVMConstInt(c->ti64, (unsigned long long)v, 0);
    LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntEQ, c->tensor_strides[op->param][ca], LLVMConstInt(c->ti64, 1, 0), "");
    ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildURem(B, c->tensor_dims[op->param][ca], vm, ""), zero, ""), "");
    for (int a = 0; a < prm->rank; a++)
        if (a != ca) ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildURem(B, c->tensor_strides[op->param][a], vm, ""), zero, ""), "");
    LLVMValueRef start = c->vals[op->args[ca]].v[0];
    ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, start, i32c(c, v - 1), ""), i32c(c, 0), ""), "");
    int64_t bytes = (int64_t)v * ir_dtype_bytes(prm->dt);
    LLVMValueRef addr = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    return LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, addr, LLVMConstInt(c->ti64, (unsigned long long)bytes - 1, 0), ""), zero, ""), "");
}

LLVMValueRef window_chunks_aligned(Cg *c, const IrOp *op, int v)
{
    const IrParam *prm = &c->f->params[op->param];
    LLVMBuilderRef B = c->b;
    if (prm->rank > 2) return strided_chunks_aligned(c, op, v);
    int64_t bytes = (int64_t)v * ir_dtype_bytes(prm->dt);
    LLVMValueRef row_len = prm->rank == 2 ? c->tensor_dim1[op->param] : c->tensor_dim0[op->param];
    LLVMValueRef start = c->vals[op->args[prm->rank - 1]].v[0];
    LLVMValueRef addr = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
    return LLVMBuildAnd(B,
        LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildURem(B, row_len, LLVMConstInt(c->ti64, (unsigned long long)v, 0), ""), LLVMConstInt(c->ti64, 0, 0), ""),
        LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, start, i32c(c, v - 1), ""), i32c(c, 0), ""),
                     LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, addr, LLVMConstInt(c->ti64, (unsigned long long)bytes - 1, 0), ""),
                                   LLVMConstInt(c->ti64, 0, 0), ""), ""), "");
}

Slots emit_load_in(Cg *c, const IrOp *op, const Layout *l)
{
    if (l->kind != LAY_BLOCKED || l->v < 2) return load_scalar(c, op, l);
    LLVMBuilderRef B = c->b;
    LLVMValueRef aligned = window_chunks_aligned(c, op, l->v);
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

/* ---- memory by element: gathers and scatters ---- */

/* The element whose indices are k's slots of idx (a scalar's one value
 * where k is -1): its offset in the tensor (i64) and whether it lies
 * inside. Indices are signed: a negative one is outside. */
static void element_at(Cg *c, const IrOp *op, const Slots *idx, int k, LLVMValueRef *offset, LLVMValueRef *inb)
{
    LLVMBuilderRef B = c->b;
    int rank = c->f->params[op->param].rank;
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef at[2];
    for (int a = 0; a < rank; a++) at[a] = LLVMBuildSExt(B, idx[a].v[k < 0 ? 0 : k], c->ti64, "");
    if (rank == 1) {
        *inb = LLVMBuildICmp(B, LLVMIntULT, at[0], d0, "");   /* unsigned: negative is out */
        *offset = at[0];
        return;
    }
    *inb = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, at[0], d0, ""), LLVMBuildICmp(B, LLVMIntULT, at[1], d1, ""), "");
    *offset = LLVMBuildAdd(B, LLVMBuildMul(B, at[0], d1, ""), at[1], "");
}

/* The indices of a gather or scatter in layout l (NULL: scalars). */
static void element_indices(Cg *c, const IrOp *op, const Layout *l, Slots idx[2])
{
    int rank = c->f->params[op->param].rank;
    for (int a = 0; a < rank; a++) idx[a] = l ? cg_get(c, op->args[a], l) : c->vals[op->args[a]];
}

/* Every thread reads its slots' elements (a scalar: every thread the one
 * element); one outside the tensor reads element 0 and is replaced by 0,
 * as a window's. */
void emit_gather(Cg *c, const IrOp *op)
{
    LLVMTypeRef et = dtype_ty(c, c->f->params[op->param].dt);
    const Layout *l = is_tile(c, op->res[0]) ? home_layout(c, op->res[0]) : NULL;
    Slots idx[2];
    element_indices(c, op, l, idx);
    Slots out = new_slots(l ? layout_nslots(l) : 1, l);
    for (int k = 0; k < out.n; k++) {
        LLVMValueRef off, inb;
        element_at(c, op, idx, l ? k : -1, &off, &inb);
        if (l) {
            SlotPos p = slot_pos(c, l, k);
            if (p.valid) inb = LLVMBuildAnd(c->b, inb, p.valid, "");
        }
        off = LLVMBuildSelect(c->b, inb, off, LLVMConstInt(c->ti64, 0, 0), "");
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        out.v[k] = LLVMBuildSelect(c->b, inb, LLVMBuildLoad2(c->b, et, ptr, ""), LLVMConstNull(et), "");
    }
    c->vals[op->res[0]] = out;
}

/* Each element inside the tensor is written by the owner of a valid slot
 * holding it, as a window's; elements with the same indices race, and one
 * of their values lands. An add is an atomic add as a window's, so every
 * element with the same indices adds its value. */
void emit_scatter(Cg *c, const IrOp *op)
{
    bool atomic = op->kind == OP_SCATTER_ADD;
    ValueId val = op->args[op->nargs - 1];
    if (!is_tile(c, val)) {
        cg_fail(c, op, "internal error: scalar scatter");
        return;
    }
    const Layout *l = reg_layout(c, val);
    Slots idx[2];
    element_indices(c, op, l, idx);
    Slots s = cg_get(c, val, l);
    LLVMTypeRef et = dtype_ty(c, c->f->params[op->param].dt);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef off, inb;
        element_at(c, op, idx, k, &off, &inb);
        Guard g = guard_begin(c, and1(c, and1(c, inb, p.valid), p.owner));
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        if (atomic)
            LLVMBuildAtomicRMW(c->b, c->f->params[op->param].dt == DT_F32 ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd, ptr,
                               s.v[k], LLVMAtomicOrderingMonotonic, 0);
        else LLVMBuildStore(c->b, s.v[k], ptr);
        guard_end(c, g);
    }
}

/* ---- shared-memory addresses: layout.h's SHARED map, emitted ---- */

/* The byte offset of element (row, col) of a tile in shared layout l:
 * layout_shared_offset's arithmetic, emitted (i32 row and col, unsigned). */
LLVMValueRef shared_offset(Cg *c, const Layout *l, LLVMValueRef row, LLVMValueRef col)
{
    LLVMValueRef atom_at = NULL;
    if (l->atom) {
        atom_at = mul(c, udiv(c, col, l->atom), (int64_t)l->rows * l->atom * l->elem);
        col = urem(c, col, l->atom);
    }
    LLVMValueRef in_row = mul(c, col, l->elem);
    if (l->max_phase > 1) {
        LLVMValueRef phase = urem(c, udiv(c, row, l->per_phase), l->max_phase);
        in_row = LLVMBuildXor(c->b, in_row, mul(c, phase, 16), "");
    }
    LLVMValueRef at = offset_add(c, mul(c, row, (int64_t)l->stride * l->elem), in_row);
    return atom_at ? offset_add(c, atom_at, at) : at;
}

LLVMValueRef shared_byte_ptr(Cg *c, LLVMValueRef area, LLVMValueRef offset)
{
    return LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->ctx), area, &offset, 1, "");
}

/* Offset at of an element moved by drow rows and dcol columns, where
 * layout_shared_shift_holds: layout_shared_shift's XOR and add. */
LLVMValueRef shared_shifted(Cg *c, const Layout *l, LLVMValueRef at, int drow, int dcol)
{
    LayoutShift s = layout_shared_shift(l, drow, dcol);
    LLVMValueRef x = s.xor_bytes ? LLVMBuildXor(c->b, at, i32c(c, s.xor_bytes), "") : at;
    return offset_add(c, x, i32c(c, s.add_bytes));
}

/* ---- shared-memory rings ---- */

/* Gives each ring a buffer of stages slots, each the bytes its SHARED
 * layout takes, and notes the ring of every value that is a slot of one. */
static void find_rings(Cg *c, const IrBlock *blk)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        if (op->kind == OP_COPY_ASYNC) {
            c->ring_of[op->res[0]] = op->axis;
            if (c->ring_buf[op->axis] < 0) {
                const Layout *l = c->plan.of[op->res[0]];
                int64_t slot = layout_shared_size(l);
                c->ring_slot_bytes[op->axis] = slot;
                c->ring_buf[op->axis] = smem_operand_buffer(c, SMEM_RING, op->ival * slot);
                c->ring_at[op->axis] = smem_offset(c, c->ring_buf[op->axis]);
            }
        }
        if (op->kind == OP_WAIT_ASYNC)
            for (int j = 0; j < op->nargs; j++) c->ring_of[op->res[j]] = c->ring_of[op->args[j]];
        if (op->kind == OP_FOR)
            for (int j = 0; j < op->nres; j++) c->ring_of[op->body->args[1 + j]] = c->ring_of[op->res[j]] = c->ring_of[op->args[2 + j]];
        if (op->body) find_rings(c, op->body);
        if (op->els) find_rings(c, op->els);
        if (op->kind == OP_IF && op->nres) {
            const IrOp *y = op->body->ops[op->body->nops - 1];
            for (int j = 0; j < op->nres && j < y->nargs; j++) c->ring_of[op->res[j]] = c->ring_of[y->args[j]];
        }
    }
}

/* The buffer of the ring value v is a slot of. */
int ring_buffer_of(Cg *c, ValueId v)
{
    if (c->ring_of[v] < 0) {
        cg_fail(c, c->f->values[v].def, "internal error: a ring slot of no known ring");
        return 0;
    }
    return c->ring_buf[c->ring_of[v]];
}

void plan_rings(Cg *c, const IrFunc *f)
{
    for (int i = 0; i < CG_MAX_RINGS; i++) c->ring_buf[i] = -1, c->ring_at[i] = -1;
    c->ring_of = xmalloc(sizeof *c->ring_of * ((size_t)f->nvalues + 1));
    for (int v = 0; v <= f->nvalues; v++) c->ring_of[v] = -1;
    find_rings(c, f->body);
}

/* A copy into a ring slot: the slot's byte offset in the area, the
 * window's first row and column; the target's copy engine fills the slot
 * (copy_cp_async.c: cp.async chunks where it can). */
void emit_copy_async(Cg *c, const IrOp *op)
{
    LLVMBuilderRef B = c->b;
    const Layout *l = c->plan.of[op->res[0]];
    LLVMValueRef slot = c->vals[op->args[op->nargs - 1]].v[0];
    LLVMValueRef at = offset_add(c, i32c(c, c->ring_at[op->axis]), mul(c, slot, c->ring_slot_bytes[op->axis]));
    LLVMValueRef r0 = LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, "");
    LLVMValueRef c0 = LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, "");
    /* a slot the ring's loop turns (a value it carries) is free by the loop's
     * waits; any other is a copy before the loop, which may run again in an
     * outer loop after the last run's reads of the ring */
    ValueId slot_id = op->args[op->nargs - 1];
    if (c->f->values[slot_id].def) smem_access_unordered(c, c->ring_buf[op->axis], true);
    else smem_access(c, c->ring_buf[op->axis], true);
    c->ring_in_flight[op->axis] = true;
    c->target->copy->copy(c, op, l, at, r0, c0);
    Slots out = new_slots(1, l);
    out.v[0] = at;
    c->vals[op->res[0]] = out;
}

/* Warp-specialized, the slots of the groups waited for are read no more:
 * each consumer warp's lane 0 arrives on their empty barriers, after a
 * bar.warp.sync that orders the other lanes' reads (an ldmatrix's are each
 * lane's) before its arrival. Elsewhere nothing: the next wait's barrier
 * ends the reads. */
void emit_release_async(Cg *c, const IrOp *op)
{
    if (!c->f->producer || !c->target->copy->release) return;
    LLVMValueRef all = i32c(c, -1);
    cg_call(c, "llvm.nvvm.bar.warp.sync", c->tvoid, 1, &c->ti32, &all);
    c->target->copy->release(c, true, op);
}

/* Waits until at most ival groups of this thread's copies are in flight;
 * with copies to publish, a barrier then makes every thread's visible
 * (and ends every read of the slots the next copies refill). For the
 * shared-memory plan, the copies land here: a write of every ring copied
 * into since the last wait for all groups. */
void emit_wait_async(Cg *c, const IrOp *op)
{
    for (int r = 0; r < CG_MAX_RINGS; r++)
        if (c->ring_in_flight[r]) {
            smem_access(c, c->ring_buf[r], true);
            if (op->ival == 0) c->ring_in_flight[r] = false;
        }
    c->target->copy->wait(c, op);
    if (op->nargs && (op->flags & WAIT_SLOTS_RELEASED) && c->target->copy->publish) c->target->copy->publish(c);
    else if (op->nargs) smem_fixed_barrier(c);
    /* warp-specialized, a wait that gives no slots ends the reads of what it waited for */
    if (!op->nargs && c->f->producer && c->target->copy->release) c->target->copy->release(c, true, op);
    for (int i = 0; i < op->nargs; i++) {
        Slots s = c->vals[op->args[i]];
        if (!s.v) s = cg_get(c, op->args[i], home_layout(c, op->args[i]));
        Slots r = new_slots(s.n, s.lay);
        memcpy(r.v, s.v, sizeof *r.v * (size_t)s.n);
        c->vals[op->res[i]] = r;
    }
}

/* A ring slot's column (plain, one column: async.c's vector rings) read
 * transposed into l, whose slots all lie in its one row and inside the
 * tile: slot k holds the column's element p.col, 4 bytes each, so its
 * address is the thread's first slot's plus a constant (layout_slot_offset),
 * and two slots of neighbouring columns from an even one (an MMA layout's
 * pairs), where every thread's columns start even, are one 8-byte load.
 * false where l is not such a layout. */
static bool read_column_transposed(Cg *c, ValueId v, const Slots *s, const Layout *l, Slots *out)
{
    const Layout *sl = s->lay;
    LayoutThreadMap m = layout_thread_map(l);
    int n = layout_nslots(l);
    if (sl->cols != 1 || sl->stride != 1 || m.lane[0].scale || m.warp[0].scale) return false;
    for (int k = 0; k < n; k++) {
        LayoutSlot o = layout_slot_offset(l, k);
        if (o.row || o.row_check || o.col_check) return false;
    }
    LLVMBuilderRef B = c->b;
    LLVMTypeRef et = dtype_ty(c, vtype(c, v).dt), pair = LLVMVectorType(et, 2);
    int first = layout_slot_offset(l, 0).col;
    bool even = m.lane[1].scale % 2 == 0 && m.warp[1].scale % 2 == 0 && first % 2 == 0 && sl->elem == 4;
    LLVMValueRef at = add(c, s->v[0], mul(c, slot_pos(c, l, 0).col, sl->elem));
    *out = new_slots(n, l);
    for (int k = 0; k < n; k++) {
        int col = layout_slot_offset(l, k).col;
        LLVMValueRef ptr = smem_byte_ptr(c, add(c, at, i32c(c, (int64_t)(col - first) * sl->elem)));
        if (even && col % 2 == 0 && k + 1 < n && layout_slot_offset(l, k + 1).col == col + 1) {
            LLVMValueRef two = LLVMBuildLoad2(B, pair, ptr, "");
            LLVMSetAlignment(two, 8);
            out->v[k] = LLVMBuildExtractElement(B, two, i32c(c, 0), "");
            out->v[++k] = LLVMBuildExtractElement(B, two, i32c(c, 1), "");
        } else {
            out->v[k] = LLVMBuildLoad2(B, et, ptr, "");
        }
    }
    return true;
}

/* A tile in a ring slot (s holds its byte offset), read into layout l;
 * transposed, each slot (row, col) of l reads the tile's (col, row). */
Slots read_shared_at(Cg *c, ValueId v, const Slots *s, const Layout *l, bool transposed)
{
    smem_access(c, ring_buffer_of(c, v), false);
    Slots out;
    if (transposed && read_column_transposed(c, v, s, l, &out)) return out;
    const Layout *sl = s->lay;
    LLVMTypeRef et = dtype_ty(c, vtype(c, v).dt);
    out = new_slots(layout_nslots(l), l);
    for (int k = 0; k < out.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef off = transposed ? shared_offset(c, sl, p.col, p.row) : shared_offset(c, sl, p.row, p.col);
        if (p.valid) off = LLVMBuildSelect(c->b, p.valid, off, i32c(c, 0), "");
        LLVMValueRef ptr = smem_byte_ptr(c, add(c, s->v[0], off));
        out.v[k] = LLVMBuildLoad2(c->b, et, ptr, "");
    }
    return out;
}
