/* copy_cp_async.c: the copy engine of sm_80 and up: ring slots filled
 * by cp.async.cg, 16-byte chunks that travel from global to shared memory
 * while the threads compute (cp.async.commit_group, wait_group).
 *
 * Expects: a ring slot placed by cg_memory.c (at: its byte offset in the
 * shared area; l: its SHARED layout), the window's first row and column.
 * Guarantees: every element of the window lands in the slot where l puts
 * it, zero where it lies outside the tensor; whole chunks go by cp.async,
 * the rest (a window whose rows are no whole chunks, a tensor not 16-byte
 * aligned) element by element, synchronously. */
#include "codegen/target.h"

#include "nvidia/targets.h"

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
        LLVMValueRef args[3] = {smem_byte_ptr(c, dst), src, LLVMBuildSelect(B, inb, i32c(c, 16), i32c(c, 0), "")};
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
        LLVMBuildStore(B, x, LLVMBuildInBoundsGEP2(B, LLVMInt8TypeInContext(c->ctx), smem_byte_ptr(c, dst), &k, 1, ""));
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
        LLVMValueRef args[2] = {smem_byte_ptr(c, dst), src};
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
static void copy_into_slot(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    bool whole_chunks = (int64_t)l->cols * l->elem % 16 == 0;
    int unit = whole_chunks ? 16 / l->elem : 1, per_row = l->cols / unit;
    int64_t nunits = (int64_t)l->rows * per_row;
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    /* chunks a thread, or elements where rows are no whole chunks */
    bool small = nunits < COPY_TEST_ONCE_CHUNKS * c->T;
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
}

static void commit_group(Cg *c) { call0(c, "llvm.nvvm.cp.async.commit.group", c->tvoid); }

static void wait_groups(Cg *c, const IrOp *wait)
{
    LLVMTypeRef ti32 = c->ti32;
    LLVMValueRef n = i32c(c, (int)wait->ival);
    cg_call(c, "llvm.nvvm.cp.async.wait.group", c->tvoid, 1, &ti32, &n);
}

const CopyEngine copy_cp_async = {"cp.async", NULL, NULL, copy_into_slot, commit_group, wait_groups, NULL, NULL};

