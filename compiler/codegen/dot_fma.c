/* dot_fma.c: the FMA dot engine, for dots the tensor cores do not take.
 *
 * Expects: the result's register layout (any); f32 accumulation, or i32
 * for i8 operands.
 * Guarantees: both operands go through scratch buffers as f32 words (i32
 * words for i8), in plain row-major SHARED layouts; each thread runs one
 * loop over K with an accumulator per slot of the result (an i32 one adds
 * exact products, wrapping). */
#include "dot.h"

#include <stdlib.h>

static void emit_dot_fma(Cg *c, const IrOp *op)
{
    IrType at = vtype(c, op->args[0]), t = vtype(c, op->res[0]);
    bool tb = op->flags & DOT_TRANS_B;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    const Layout *sa = layout_shared_plain(c->layouts, M, K, 4);
    const Layout *sb = tb ? layout_shared_plain(c->layouts, N, K, 4) : layout_shared_plain(c->layouts, K, N, 4);
    int abuf = smem_buffer(c, SMEM_SCRATCH, (int64_t)M * K * 4), bbuf = smem_buffer(c, SMEM_SCRATCH, (int64_t)K * N * 4);
    int64_t abase = smem_offset(c, abuf), bbase = smem_offset(c, bbuf);   /* in bytes */
    DType word = t.dt == DT_I32 ? DT_I32 : DT_F32;
    LLVMTypeRef wt = dtype_ty(c, word);
    operand_to_smem(c, op->args[0], word, abuf, abase, sa);
    operand_to_smem(c, op->args[1], word, bbuf, bbase, sb);
    const Layout *l = home_layout(c, op->res[0]);
    Slots acc = cg_get(c, op->args[2], l);
    smem_access(c, abuf, false);   /* after any conversion of the accumulator; the loop reads both */
    smem_access_together(c, bbuf, false);
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
        phis[k] = LLVMBuildPhi(c->b, wt, "");
        LLVMAddIncoming(phis[k], &acc.v[k], &pre, 1);
    }
    LLVMValueRef *next = xmalloc(sizeof *next * (size_t)n);
    for (int k = 0; k < n; k++) {
        LLVMValueRef ai = add(c, i32c(c, abase), shared_offset(c, sa, arow[k], kk));
        LLVMValueRef bi = add(c, i32c(c, bbase), tb ? shared_offset(c, sb, bcol[k], kk) : shared_offset(c, sb, kk, bcol[k]));
        LLVMValueRef a = LLVMBuildLoad2(c->b, wt, shared_byte_ptr(c, c->smem, ai), "");
        LLVMValueRef b = LLVMBuildLoad2(c->b, wt, shared_byte_ptr(c, c->smem, bi), "");
        if (word == DT_I32) {
            next[k] = LLVMBuildAdd(c->b, phis[k], LLVMBuildMul(c->b, a, b, ""), "");
            continue;
        }
        LLVMTypeRef t3[3] = {c->tf32, c->tf32, c->tf32};
        LLVMValueRef abc[3] = {a, b, phis[k]};
        next[k] = cg_call(c, "llvm.fma.f32", c->tf32, 3, t3, abc);
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

/* Any dot: the engine of last resort. */
static bool fma_accepts(const IrFunc *f, const IrOp *dot)
{
    (void)f; (void)dot;
    return true;
}

const DotEngine dot_fma = {"fma", fma_accepts, emit_dot_fma, NULL, NULL, NULL, NULL};
