/* dot_mma_s8.c: the 8-bit dots on the tensor cores, mma.sync m16n8k32:
 * i8 x i8 -> i32 (dot_mma_s8, sm_80 and up) and fp8 x fp8 -> f32
 * (dot_mma_f8: e4m3 and e5m2 in any mix, sm_89 and up, so on the sm_90
 * and sm_90a rows; sm_90a's wgmma engine takes neither, so Hopper runs
 * them here too). Both instructions have one fragment layout.
 *
 * Expects: a dot mma_s8_accepts (mma_f8_accepts) takes (i8 operands, or
 * two fp8; M a multiple of 16, N of 8, K of 32, @ph.tensorcore), its
 * result in the MMA layout of mma_sync_result_layout, whose slots are the
 * s32 (f32) accumulator's as they are the f32 one's of m16n8k16.
 * Guarantees: A goes to scratch shared memory as [M, K] and B as [N, K]
 * (B^T for ph.dot, B as it is for ph.dot_t), K contiguous in both, so
 * every fragment register (four consecutive i8 along K) is one aligned
 * 32-bit shared load; i8 products are exact and the sums wrap in i32, as
 * the interpreter's (the non-saturating mma); fp8 products are exact and
 * summed in f32 by the hardware, in its order. */
#include "codegen/dot.h"
#include "nvidia/mma_layout.h"
#include "nvidia/ptx_asm.h"
#include "nvidia/targets.h"

#include <stdlib.h>

/* The 32-bit word of four 8-bit elements at (row, col) of the K-contiguous operand in sl at byte base. */
static LLVMValueRef fragment_word(Cg *c, const Layout *sl, int64_t base, LLVMValueRef row, LLVMValueRef col)
{
    LLVMValueRef p = shared_byte_ptr(c, c->smem, offset_add(c, i32c(c, base), shared_offset(c, sl, row, col)));
    LLVMValueRef v = LLVMBuildLoad2(c->b, c->ti32, p, "");
    LLVMSetAlignment(v, 4);
    return v;
}

static void emit_dot_mma_k32(Cg *c, const IrOp *op)
{
    IrType at = vtype(c, op->args[0]), bt = vtype(c, op->args[1]), t = vtype(c, op->res[0]);
    const Layout *l = c->plan.of[op->res[0]];
    bool tb = op->flags & DOT_TRANS_B;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    LLVMBuilderRef B = c->b;
    const Layout *sa = layout_shared(c->layouts, M, K, 1), *sb = layout_shared(c->layouts, N, K, 1);
    int abuf = smem_buffer(c, SMEM_SCRATCH, layout_shared_bytes(M, K, 1));
    int bbuf = smem_buffer(c, SMEM_SCRATCH, layout_shared_bytes(N, K, 1));
    int64_t abase = smem_offset(c, abuf), bbase = smem_offset(c, bbuf);
    operand_to_smem(c, op->args[0], at.dt, abuf, abase, sa);
    if (tb) operand_to_smem(c, op->args[1], bt.dt, bbuf, bbase, sb);
    else operand_to_smem_transposed(c, op->args[1], bt.dt, NULL, bbuf, bbase, sb);
    Slots acc = cg_get(c, op->args[2], l);
    smem_access(c, abuf, false);
    smem_access_together(c, bbuf, false);

    /* warps past the layout's grid compute warp 0's share and keep nothing */
    LLVMValueRef active = l->wm * l->wn < c->T / 32 ? LLVMBuildICmp(B, LLVMIntULT, c->warp, i32c(c, l->wm * l->wn), "") : NULL;
    LLVMValueRef w = active ? LLVMBuildSelect(B, active, c->warp, i32c(c, 0), "") : c->warp;
    LLVMValueRef m_base = mul(c, udiv(c, w, l->wn), (int64_t)l->tm * 16), n_base = mul(c, urem(c, w, l->wn), (int64_t)l->tn * 8);
    LLVMValueRef g = udiv(c, c->lane, 4), q4 = mul(c, urem(c, c->lane, 4), 4);
    int tm = l->tm, tn = l->tn;
    LLVMValueRef *d = xmalloc(sizeof *d * (size_t)(tm * tn * 4));
    for (int i = 0; i < tm * tn * 4; i++) d[i] = acc.v[i];
    LLVMTypeRef ti4 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->ti32, c->ti32, c->ti32, c->ti32}, 4, 0);
    LLVMTypeRef targs[10];
    for (int i = 0; i < 10; i++) targs[i] = c->ti32;
    LLVMValueRef *afr = xmalloc(sizeof *afr * (size_t)tm * 4), *bfr = xmalloc(sizeof *bfr * (size_t)tn * 2);
    for (int k0 = 0; k0 < K; k0 += 32) {
        /* A: a0 row g, a1 row g+8, a2 and a3 the same 16 columns on; four i8 from column 4(lane%4) */
        for (int im = 0; im < tm; im++)
            for (int r = 0; r < 4; r++)
                afr[im * 4 + r] = fragment_word(c, sa, abase, add(c, add(c, m_base, g), i32c(c, im * 16 + (r & 1) * 8)),
                                                add(c, q4, i32c(c, k0 + (r >> 1) * 16)));
        /* B [N, K]: b0 at row (column of the result) g, b1 16 columns on */
        for (int in = 0; in < tn; in++)
            for (int r = 0; r < 2; r++)
                bfr[in * 2 + r] = fragment_word(c, sb, bbase, add(c, add(c, n_base, g), i32c(c, in * 8)), add(c, q4, i32c(c, k0 + r * 16)));
        for (int im = 0; im < tm; im++)
            for (int in = 0; in < tn; in++) {
                LLVMValueRef args[10];
                LLVMValueRef *acc4 = &d[(im * tn + in) * 4];
                if (ir_is_f8(at.dt)) {
                    ptx_mma_f8(c, at.dt == DT_F8E5M2, bt.dt == DT_F8E5M2, &afr[im * 4], &bfr[in * 2], acc4);
                    continue;
                }
                for (int i = 0; i < 4; i++) args[i] = afr[im * 4 + i];
                for (int i = 0; i < 2; i++) args[4 + i] = bfr[in * 2 + i];
                for (int i = 0; i < 4; i++) args[6 + i] = acc4[i];
                LLVMValueRef r = cg_call(c, "llvm.nvvm.mma.m16n8k32.row.col.s8", ti4, 10, targs, args);
                for (int i = 0; i < 4; i++) acc4[i] = LLVMBuildExtractValue(B, r, (unsigned)i, "");
            }
    }
    Slots out = new_slots(layout_nslots(l), l);
    for (int i = 0; i < tm * tn * 4; i++) out.v[i] = d[i];
    c->vals[op->res[0]] = out;
    free(d); free(afr); free(bfr);
}

const DotEngine dot_mma_s8 = {"mma.sync.s8", mma_s8_accepts, emit_dot_mma_k32, mma_sync_result_layout, NULL, NULL, NULL};
const DotEngine dot_mma_f8 = {"mma.sync.f8", mma_f8_accepts, emit_dot_mma_k32, mma_sync_result_layout, NULL, NULL, NULL};
