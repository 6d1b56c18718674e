/* cg_scan.c: ph.cumsum, inclusive prefix sums along an axis of a tile.
 *
 * Expects: any register layout for the source; the result in its home
 * layout. Guarantees: each element is its line's elements up to it summed
 * in index order (floats in f32 from -0.0, rounded once to the dtype; i32
 * wrapping), so the result is the interpreter's bit for bit, whatever the
 * layouts and the warps. The tile goes through a scratch buffer and every
 * slot walks its line there: one loop over the line's length, in which a
 * slot adds an element only up to its own position (past it, the
 * identity, which changes no sum). */
#include "target.h"

#include <stdlib.h>

/* Where slot k's line starts in the row-major buffer, and its position
 * along the line (0 for a slot that holds nothing, so it reads in bounds). */
typedef struct { LLVMValueRef base, pos; } LineAt;

static LineAt line_at(Cg *c, const Layout *l, int k, int axis, int cols)
{
    SlotPos p = slot_pos(c, l, k);
    LineAt at = {axis == 1 ? mul(c, p.row, cols) : p.col, axis == 1 ? p.col : p.row};
    if (p.valid) {
        at.base = LLVMBuildSelect(c->b, p.valid, at.base, i32c(c, 0), "");
        at.pos = LLVMBuildSelect(c->b, p.valid, at.pos, i32c(c, 0), "");
    }
    return at;
}

void emit_cumsum(Cg *c, const IrOp *op)
{
    ValueId src = op->args[0];
    IrType st = vtype(c, src);
    DType cdt = st.dt == DT_I32 || st.dt == DT_I64 ? st.dt : DT_F32;   /* floats sum in f32 */
    bool isint = cdt != DT_F32;
    LLVMTypeRef acc_ty = dtype_ty(c, cdt);
    Slots home = cg_get(c, src, reg_layout(c, src));
    int buf = tile_scratch(c, home.lay, st.dt);
    slots_to_smem(c, &home, st.dt, buf);
    smem_access(c, buf, false);
    const Layout *l = home_layout(c, op->res[0]);
    int n = layout_nslots(l), cols = ir_cols(st), len = op->axis == 1 ? cols : ir_rows(st);
    int64_t step = op->axis == 1 ? 1 : cols;
    LineAt *at = xmalloc(sizeof *at * (size_t)n);
    for (int k = 0; k < n; k++) at[k] = line_at(c, l, k, op->axis, cols);
    /* -0.0 + x is x for every float x, +0.0 included */
    LLVMValueRef identity = isint ? LLVMConstInt(acc_ty, 0, 1) : f32c(c, -0.0);
    LLVMValueRef *phis = xmalloc(sizeof *phis * (size_t)n), *next = xmalloc(sizeof *next * (size_t)n);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), head = new_bb(c, "scan"), done = new_bb(c, "scand");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef i = LLVMBuildPhi(c->b, c->ti32, "i"), zero = i32c(c, 0);
    LLVMAddIncoming(i, &zero, &pre, 1);
    for (int k = 0; k < n; k++) {
        phis[k] = LLVMBuildPhi(c->b, acc_ty, "");
        LLVMAddIncoming(phis[k], &identity, &pre, 1);
    }
    LLVMValueRef offset = LLVMBuildMul(c->b, i, i32c(c, step), "");
    for (int k = 0; k < n; k++) {
        LLVMValueRef x = smem_load_elem(c, buf, add(c, at[k].base, offset), cdt);
        LLVMValueRef upto = LLVMBuildICmp(c->b, LLVMIntSLE, i, at[k].pos, "");
        x = LLVMBuildSelect(c->b, upto, x, identity, "");
        next[k] = scalar_binop(c, BIN_ADD, cdt, phis[k], x);
    }
    LLVMValueRef i1 = add(c, i, i32c(c, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMAddIncoming(i, &i1, &latch, 1);
    for (int k = 0; k < n; k++) LLVMAddIncoming(phis[k], &next[k], &latch, 1);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, i1, i32c(c, len), ""), head, done);
    LLVMPositionBuilderAtEnd(c->b, done);
    /* the loop runs at least once and tests at the bottom: the sums are the
     * last iteration's, not the header's phis */
    Slots out = new_slots(n, l);
    for (int k = 0; k < n; k++) out.v[k] = isint ? next[k] : from_f32(c, next[k], st.dt);
    c->vals[op->res[0]] = out;
    free(at);
    free(phis);
    free(next);
}
