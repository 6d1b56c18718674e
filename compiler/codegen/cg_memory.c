/* cg_memory.c: loads, stores, atomic adds, shared-memory addresses and
 * asynchronous copies into shared-memory rings.
 *
 * Expects: ring numbers below CG_MAX_RINGS (ir_verify's limit), placed by
 * plan_rings before emission.
 * Guarantees: a load, store or atomic add touches only in-bounds elements
 * (the window's mask), a store or add each element once; every
 * shared-memory tile is addressed by its SHARED layout's map
 * (shared_offset, layout_shared_offset emitted); cp.async copies land in
 * their ring slot, a buffer of the shared area, and read_shared reads a
 * ring slot in any register layout. */
#include "cg.h"

#include <stdlib.h>
#include <string.h>

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

Slots emit_load_in(Cg *c, const IrOp *op, const Layout *l)
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

/* A store or an atomic add: each element of the window inside the tensor
 * is written by one thread, once, the owner of a valid slot holding it (an
 * idle warp's slots and a slice's copies write nothing), so an add is
 * never made twice. Atomic adds are monotonic atomicrmw on the global
 * address space: red.global.add (atom where the result were used) for
 * f32 and i32, device-wide. */
static void write_window(Cg *c, const IrOp *op, bool atomic)
{
    const IrParam *prm = &c->f->params[op->param];
    ValueId val = op->args[op->nargs - 1];
    LLVMTypeRef et = dtype_ty(c, prm->dt);
    const Layout *l = is_tile(c, val) ? reg_layout(c, val) : NULL;
    if (!l) {
        /* a scalar written to a one-element window (sema broadcasts tiles) */
        cg_fail(c, op, atomic ? "internal error: scalar atomic_add" : "internal error: scalar store");
        return;
    }
    LLVMAtomicRMWBinOp how = prm->dt == DT_F32 ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
    Slots s = cg_get(c, val, l);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef off, inb;
        window_elem(c, op, p, &off, &inb);
        Guard g = guard_begin(c, and1(c, inb, p.owner));
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        if (atomic) LLVMBuildAtomicRMW(c->b, how, ptr, s.v[k], LLVMAtomicOrderingMonotonic, 0);
        else LLVMBuildStore(c->b, s.v[k], ptr);
        guard_end(c, g);
    }
}

void emit_store(Cg *c, const IrOp *op) { write_window(c, op, false); }
void emit_atomic_add(Cg *c, const IrOp *op) { write_window(c, op, true); }

/* ---- shared-memory addresses: layout.h's SHARED map, emitted ---- */

/* The byte offset of element (row, col) of a tile in shared layout l:
 * layout_shared_offset's arithmetic, emitted (i32 row and col, unsigned). */
LLVMValueRef shared_offset(Cg *c, const Layout *l, LLVMValueRef row, LLVMValueRef col)
{
    LLVMValueRef in_row = mul(c, col, l->elem);
    if (l->max_phase > 1) {
        LLVMValueRef phase = urem(c, udiv(c, row, l->per_phase), l->max_phase);
        in_row = LLVMBuildXor(c->b, in_row, mul(c, phase, 16), "");
    }
    return offset_add(c, mul(c, row, (int64_t)l->stride * l->elem), in_row);
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

static LLVMValueRef opsmem_byte_ptr(Cg *c, LLVMValueRef offset) { return smem_byte_ptr(c, offset); }

/* ---- asynchronous copies into shared-memory rings ---- */

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
                int64_t slot = (int64_t)l->rows * l->stride * l->elem;
                c->ring_slot_bytes[op->axis] = slot;
                c->ring_buf[op->axis] = smem_buffer(c, SMEM_RING, op->ival * slot);
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

/* Where thread tid's unit at step j (unit tid + j, at row, col) lies in
 * slot layout l: its first unit's offset (first) shifted, where the block
 * steps by whole rows of units and so by whole phase periods; else the
 * whole map. */
static LLVMValueRef unit_offset(Cg *c, const Layout *l, int per_row, int64_t j, LLVMValueRef first, LLVMValueRef row,
                                LLVMValueRef col)
{
    if (c->T % per_row == 0 && layout_shared_shift_holds(l, 0, (int)(j / per_row), 0))
        return shared_shifted(c, l, first, (int)(j / per_row), 0);
    return shared_offset(c, l, row, col);
}

/* A loop's latch branch marked not to be unrolled. */
static void keep_rolled(Cg *c, LLVMValueRef br)
{
    LLVMMetadataRef disable = LLVMMDStringInContext2(c->ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef self = LLVMTemporaryMDNode(c->ctx, NULL, 0);
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(c->ctx, &disable, 1)};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(c->ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, loop);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c->ctx, "llvm.loop", 9), LLVMMetadataAsValue(c->ctx, loop));
}

/* How one copy reaches its units: the three ways emit_copy_async chooses
 * between at run time, once per copy. The one test of a window inside
 * pays from COPY_TEST_ONCE_CHUNKS chunks a thread (measured: even at 4,
 * a gain at 8, a loss at 2). */
enum { COPY_TEST_ONCE_CHUNKS = 4 };
typedef enum {
    COPY_INSIDE,    /* whole chunks, the window inside the tensor: no test a chunk */
    COPY_EDGE,      /* whole chunks: each zero-filled where it lies outside */
    COPY_ELEMENTS,  /* element by element, synchronously */
} CopyWay;

/* One unit of a copy (a 16-byte chunk, or a single element where rows
 * are no whole chunks) at row, col of the window, tested against the
 * tensor's edges, landing at byte dst of the area: COPY_EDGE issues a
 * zero-filling cp.async of its chunk, COPY_ELEMENTS loads its elements
 * (zero outside) and stores them. */
static void copy_unit_tested(Cg *c, const IrOp *op, CopyWay way, const Layout *l, int unit, LLVMValueRef dst,
                             LLVMValueRef row, LLVMValueRef col, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef et = dtype_ty(c, vtype(c, op->res[0]).dt);
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef zero64 = LLVMConstInt(c->ti64, 0, 0);
    LLVMValueRef gr = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, row, c->ti64, ""), "");
    if (way == COPY_EDGE) {
        LLVMTypeRef cpt[3] = {c->tptr3, c->tptr1, c->ti32};
        LLVMValueRef gc = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, col, c->ti64, ""), "");
        LLVMValueRef inb = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, gr, d0, ""), LLVMBuildICmp(B, LLVMIntULT, gc, d1, ""), "");
        LLVMValueRef off = LLVMBuildSelect(B, inb, LLVMBuildAdd(B, LLVMBuildMul(B, gr, d1, ""), gc, ""), zero64, "");
        LLVMValueRef src = LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef args[3] = {opsmem_byte_ptr(c, dst), src, LLVMBuildSelect(B, inb, i32c(c, 16), i32c(c, 0), "")};
        cg_call_at(c, B, "llvm.nvvm.cp.async.cg.shared.global.16.s", c->tvoid, 3, cpt, args);
        return;
    }
    LLVMValueRef row_in = LLVMBuildICmp(B, LLVMIntULT, gr, d0, "");
    for (int e = 0; e < unit; e++) {
        LLVMValueRef gc = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, add(c, col, i32c(c, e)), c->ti64, ""), "");
        LLVMValueRef inb = LLVMBuildAnd(B, row_in, LLVMBuildICmp(B, LLVMIntULT, gc, d1, ""), "");
        LLVMValueRef off = LLVMBuildSelect(B, inb, LLVMBuildAdd(B, LLVMBuildMul(B, gr, d1, ""), gc, ""), zero64, "");
        LLVMValueRef src = LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef x = LLVMBuildSelect(B, inb, LLVMBuildLoad2(B, et, src, ""), LLVMConstNull(et), "");
        /* the element a constant past the unit's pointer (st [r+k]), the
         * form the back end would reach: built as smem + (dst + k), its
         * NaryReassociate reaches it one address per sweep of the whole
         * function */
        LLVMValueRef k = i32c(c, (int64_t)e * l->elem);
        LLVMBuildStore(B, x, LLVMBuildInBoundsGEP2(B, LLVMInt8TypeInContext(c->ctx), opsmem_byte_ptr(c, dst), &k, 1, ""));
    }
}

/* A copy's units the slow way, each tested (copy_unit_tested): a loop
 * over the thread's units (tid, tid + T, ...) that stays a loop. It
 * serves few iterations (a window across an edge, one that starts on no
 * whole chunk). Unrolled, its tests were most of a pipelined loop's code
 * (about 2000 of the 2500 SASS instructions of the 128x128x64 GEMM's), and
 * so of its compile and assembly time, and their invariants held
 * registers the fast way needs. */
static void copy_units_rolled(Cg *c, const IrOp *op, CopyWay way, const Layout *l, int unit, int per_row, int64_t nunits,
                              LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    int64_t trips = (nunits + c->T - 1) / c->T;
    LLVMBasicBlockRef entry = LLVMGetInsertBlock(B), body = new_bb(c, "cpl"), after = new_bb(c, "cpx");
    LLVMBuildBr(B, body);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef j = LLVMBuildPhi(B, c->ti32, "");
    LLVMValueRef idx = add(c, c->tid, mul(c, j, c->T));
    Guard g = guard_begin(c, nunits % c->T ? LLVMBuildICmp(B, LLVMIntULT, idx, i32c(c, nunits), "") : NULL);
    LLVMValueRef row = udiv(c, idx, per_row), col = mul(c, urem(c, idx, per_row), unit);
    copy_unit_tested(c, op, way, l, unit, offset_add(c, at, shared_offset(c, l, row, col)), row, col, r0, c0);
    guard_end(c, g);
    LLVMValueRef next = add(c, j, i32c(c, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    keep_rolled(c, LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, next, i32c(c, trips), ""), body, after));
    LLVMValueRef in_v[2] = {i32c(c, 0), next};
    LLVMBasicBlockRef in_b[2] = {entry, latch};
    LLVMAddIncoming(j, in_v, in_b, 2);
    LLVMPositionBuilderAtEnd(B, after);
}

/* A small copy's units (fewer than COPY_TEST_ONCE_CHUNKS chunks a
 * thread), each tested (copy_unit_tested), unrolled: for two chunks a
 * thread the one test of a window inside, its branch and its own address
 * arithmetic cost more than the tests they spare (attn_bwd_dkdv D64 BR32,
 * two 32x64 tiles an iteration: 6% slower with them); a handful of units
 * is as cheap unrolled as rolled, and what the pipelines simplify alike. */
static void copy_units_unrolled(Cg *c, const IrOp *op, CopyWay way, const Layout *l, int unit, int per_row, int64_t nunits,
                                LLVMValueRef at, LLVMValueRef first, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    for (int64_t j = 0; j < nunits; j += c->T) {
        LLVMValueRef idx = add(c, c->tid, i32c(c, j));
        Guard g = guard_begin(c, j + c->T > nunits ? LLVMBuildICmp(B, LLVMIntULT, idx, i32c(c, nunits), "") : NULL);
        LLVMValueRef row = udiv(c, idx, per_row), col = mul(c, urem(c, idx, per_row), unit);
        copy_unit_tested(c, op, way, l, unit, offset_add(c, at, unit_offset(c, l, per_row, j, first, row, col)), row, col, r0, c0);
        guard_end(c, g);
    }
}

/* The fast way: a window of whole chunks inside the tensor, each chunk a
 * cp.async without a source size, unrolled. Where the block's threads are
 * a whole number of rows of chunks, thread tid's chunks lie in one column,
 * T / per_row rows apart: their sources are one pointer step apart. */
static void copy_chunks_inside(Cg *c, const IrOp *op, const Layout *l, int per_row, int64_t nunits, LLVMValueRef at,
                               LLVMValueRef first, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef et = dtype_ty(c, vtype(c, op->res[0]).dt), cpt[2] = {c->tptr3, c->tptr1};
    LLVMValueRef d1 = c->tensor_dim1[op->param];
    int unit = 16 / l->elem;
    bool column_walk = c->T % per_row == 0;
    LLVMValueRef src = NULL, step = NULL;
    if (column_walk) {
        LLVMValueRef g0 = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, udiv(c, c->tid, per_row), c->ti64, ""), "");
        LLVMValueRef gc0 = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, mul(c, urem(c, c->tid, per_row), unit), c->ti64, ""), "");
        LLVMValueRef off = LLVMBuildAdd(B, LLVMBuildMul(B, g0, d1, ""), gc0, "");
        src = LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, "");
        step = LLVMBuildMul(B, d1, LLVMConstInt(c->ti64, (unsigned long long)(c->T / per_row), 0), "");
    }
    for (int64_t j = 0; j < nunits; j += c->T) {
        LLVMValueRef idx = add(c, c->tid, i32c(c, j));
        Guard g = guard_begin(c, j + c->T > nunits ? LLVMBuildICmp(B, LLVMIntULT, idx, i32c(c, nunits), "") : NULL);
        LLVMValueRef row = udiv(c, idx, per_row), col = mul(c, urem(c, idx, per_row), unit);
        LLVMValueRef dst = offset_add(c, at, unit_offset(c, l, per_row, j, first, row, col));
        if (column_walk) {
            if (j) src = LLVMBuildGEP2(B, et, src, &step, 1, "");   /* one register for the step */
        } else {
            LLVMValueRef gr = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, row, c->ti64, ""), "");
            LLVMValueRef gc = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, col, c->ti64, ""), "");
            LLVMValueRef off = LLVMBuildAdd(B, LLVMBuildMul(B, gr, d1, ""), gc, "");
            src = LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, "");
        }
        LLVMValueRef args[2] = {opsmem_byte_ptr(c, dst), src};
        cg_call_at(c, B, "llvm.nvvm.cp.async.cg.shared.global.16", c->tvoid, 2, cpt, args);
        guard_end(c, g);
    }
}

/* The window's units spread over the block's threads (thread tid takes
 * units tid, tid + T, ...), all landing in the same places whichever way
 * copies them. The units are 16-byte chunks, copied by cp.async.cg, when
 * the rows and the window's start are whole chunks and the tensor is
 * 16-byte aligned; then one test for the whole copy (start >= 0, start +
 * extent <= dims) sends a window inside the tensor the fast way, without
 * the edge arithmetic (compares, a select and a 64-bit multiply a chunk)
 * that otherwise outweighed a GEMM loop's copies themselves. Else the
 * units are elements, copied synchronously. */
void emit_copy_async(Cg *c, const IrOp *op)
{
    LLVMBuilderRef B = c->b;
    const Layout *l = c->plan.of[op->res[0]];
    bool whole_chunks = (int64_t)l->cols * l->elem % 16 == 0;
    int unit = whole_chunks ? 16 / l->elem : 1, per_row = l->cols / unit;
    int64_t nunits = (int64_t)l->rows * per_row;
    LLVMValueRef slot = c->vals[op->args[op->nargs - 1]].v[0];
    LLVMValueRef at = offset_add(c, i32c(c, c->ring_at[op->axis]), mul(c, slot, c->ring_slot_bytes[op->axis]));
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef r0 = LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, "");
    LLVMValueRef c0 = LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, "");
    /* chunks a thread, or elements where rows are no whole chunks */
    bool small = nunits < COPY_TEST_ONCE_CHUNKS * c->T;
    smem_access(c, c->ring_buf[op->axis], true);
    c->ring_in_flight[op->axis] = true;
    LLVMBasicBlockRef way_bb[3] = {new_bb(c, "cpi"), new_bb(c, "cpe"), new_bb(c, "cps")}, done = new_bb(c, "cpd");
    if (whole_chunks) {
        LLVMValueRef zero64 = LLVMConstInt(c->ti64, 0, 0), unit64 = LLVMConstInt(c->ti64, (unsigned long long)unit, 0);
        LLVMValueRef addr = LLVMBuildPtrToInt(B, c->tensor_ptr[op->param], c->ti64, "");
        LLVMValueRef aligned = LLVMBuildAnd(B,
            LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildURem(B, d1, unit64, ""), zero64, ""),
                         LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildSRem(B, c0, unit64, ""), zero64, ""), ""),
            LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, addr, LLVMConstInt(c->ti64, 15, 0), ""), zero64, ""), "");
        /* r0, c0 are sign-extended i32s: the sums cannot wrap */
        LLVMValueRef inside = LLVMBuildAnd(B,
            LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, r0, zero64, ""), LLVMBuildICmp(B, LLVMIntSGE, c0, zero64, ""), ""),
            LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSLE, LLVMBuildAdd(B, r0, LLVMConstInt(c->ti64, (unsigned long long)l->rows, 0), ""), d0, ""),
                         LLVMBuildICmp(B, LLVMIntSLE, LLVMBuildAdd(B, c0, LLVMConstInt(c->ti64, (unsigned long long)l->cols, 0), ""), d1, ""), ""), "");
        LLVMValueRef first = shared_offset(c, l, udiv(c, c->tid, per_row), mul(c, urem(c, c->tid, per_row), unit));
        if (small) {
            LLVMBuildCondBr(B, aligned, way_bb[COPY_EDGE], way_bb[COPY_ELEMENTS]);
            LLVMDeleteBasicBlock(way_bb[COPY_INSIDE]);
            LLVMPositionBuilderAtEnd(B, way_bb[COPY_EDGE]);
            copy_units_unrolled(c, op, COPY_EDGE, l, unit, per_row, nunits, at, first, r0, c0);
            LLVMBuildBr(B, done);
        } else {
            LLVMBasicBlockRef chunks = new_bb(c, "cpc");
            LLVMBuildCondBr(B, aligned, chunks, way_bb[COPY_ELEMENTS]);
            LLVMPositionBuilderAtEnd(B, chunks);
            LLVMBuildCondBr(B, inside, way_bb[COPY_INSIDE], way_bb[COPY_EDGE]);
            LLVMPositionBuilderAtEnd(B, way_bb[COPY_INSIDE]);
            copy_chunks_inside(c, op, l, per_row, nunits, at, first, r0, c0);
            LLVMBuildBr(B, done);
            LLVMPositionBuilderAtEnd(B, way_bb[COPY_EDGE]);
            copy_units_rolled(c, op, COPY_EDGE, l, unit, per_row, nunits, at, r0, c0);
            LLVMBuildBr(B, done);
        }
    } else {
        LLVMBuildBr(B, way_bb[COPY_ELEMENTS]);
        LLVMDeleteBasicBlock(way_bb[COPY_INSIDE]);
        LLVMDeleteBasicBlock(way_bb[COPY_EDGE]);
    }
    LLVMPositionBuilderAtEnd(B, way_bb[COPY_ELEMENTS]);
    if (small) {
        LLVMValueRef first = shared_offset(c, l, udiv(c, c->tid, per_row), mul(c, urem(c, c->tid, per_row), unit));
        copy_units_unrolled(c, op, COPY_ELEMENTS, l, unit, per_row, nunits, at, first, r0, c0);
    } else {
        copy_units_rolled(c, op, COPY_ELEMENTS, l, unit, per_row, nunits, at, r0, c0);
    }
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    Slots out = new_slots(1, l);
    out.v[0] = at;
    c->vals[op->res[0]] = out;
}

/* Waits until at most ival groups of this thread's copies are in flight;
 * with copies to publish, a barrier then makes every thread's visible
 * (and ends every read of the slots the next copies refill). For the
 * shared-memory plan, the copies land here: a write of every ring copied
 * into since the last wait for all groups. */
void emit_wait_async(Cg *c, const IrOp *op)
{
    LLVMTypeRef ti32 = c->ti32;
    LLVMValueRef pending = i32c(c, op->ival);
    for (int r = 0; r < CG_MAX_RINGS; r++)
        if (c->ring_in_flight[r]) {
            smem_access(c, c->ring_buf[r], true);
            if (op->ival == 0) c->ring_in_flight[r] = false;
        }
    cg_call(c, "llvm.nvvm.cp.async.wait.group", c->tvoid, 1, &ti32, &pending);
    if (op->nargs) smem_fixed_barrier(c);
    for (int i = 0; i < op->nargs; i++) {
        Slots s = c->vals[op->args[i]];
        if (!s.v) s = cg_get(c, op->args[i], home_layout(c, op->args[i]));
        Slots r = new_slots(s.n, s.lay);
        memcpy(r.v, s.v, sizeof *r.v * (size_t)s.n);
        c->vals[op->res[i]] = r;
    }
}

/* A tile in a ring slot (s holds its byte offset), read into layout l. */
Slots read_shared(Cg *c, ValueId v, const Slots *s, const Layout *l)
{
    const Layout *sl = s->lay;
    LLVMTypeRef et = dtype_ty(c, vtype(c, v).dt);
    Slots out = new_slots(layout_nslots(l), l);
    smem_access(c, ring_buffer_of(c, v), false);
    for (int k = 0; k < out.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef off = shared_offset(c, sl, p.row, p.col);
        if (p.valid) off = LLVMBuildSelect(c->b, p.valid, off, i32c(c, 0), "");
        LLVMValueRef ptr = opsmem_byte_ptr(c, add(c, s->v[0], off));
        out.v[k] = LLVMBuildLoad2(c->b, et, ptr, "");
    }
    return out;
}
