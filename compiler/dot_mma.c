/* dot_mma.c: the tensor-core dot engine (mma.sync m16n8k16, sm_80 and up).
 *
 * Expects: a dot layout_dot_on_tensorcores takes (this engine's accepts,
 * the very test the layout pass gives the result its MMA layout by).
 * Guarantees: operands are read as 16-bit elements from shared memory (their
 * region, their ring slot read in place, or scratch written here, rows padded
 * by 16 bytes so ldmatrix has no bank conflicts), fragments are loaded with
 * ldmatrix, and the result is left in the MMA layout's registers. */
#include "dot.h"

#include <stdlib.h>

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
    int64_t abase = 0, bbase = 0;
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
    bool write_a = !ra && !a_regs && !aring, write_b = !rb && !bring;
    /* the buffer each operand is read from: its region, its ring, or scratch written here */
    int abuf = ra ? ra->buf : aring ? ring_buffer_of(c, ring_root(c, op->args[0])) : -1;
    int bbuf = rb ? rb->buf : bring ? ring_buffer_of(c, ring_root(c, op->args[1])) : -1;
    if (write_a) abuf = smem_buffer(c, SMEM_SCRATCH, (int64_t)M * sa * 2), abase = smem_offset(c, abuf) / 2;
    if (write_b) bbuf = smem_buffer(c, SMEM_SCRATCH, (int64_t)(tb ? N : K) * sb * 2), bbase = smem_offset(c, bbuf) / 2;
    if (ra) { aarea = c->smem; abase = ra->base; }
    if (rb) { barea = c->smem; bbase = rb->base; }
    LLVMValueRef abase_v = i32c(c, abase), bbase_v = i32c(c, bbase);
    if (aring) { aarea = c->smem; abase_v = aring; sa = home_layout(c, ring_root(c, op->args[0]))->stride; }
    if (bring) { barea = c->smem; bbase_v = bring; sb = home_layout(c, ring_root(c, op->args[1]))->stride; }
    if (write_a) operand_to_smem(c, op->args[0], at.dt, abuf, abase, sa, 2);
    if (write_b) operand_to_smem(c, op->args[1], at.dt, bbuf, bbase, sb, 2);

    Slots acc = cg_get(c, op->args[2], l);
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
    Slots aval = a_regs ? cg_get(c, op->args[0], al) : (Slots){NULL, 0, NULL};
    /* the reads, one loop over K for both, after any conversion the accumulator or A in registers needed */
    if (abuf >= 0) smem_access(c, abuf, false);
    if (bbuf >= 0 && abuf >= 0) smem_access_together(c, bbuf, false);
    else if (bbuf >= 0) smem_access(c, bbuf, false);
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
            LLVMValueRef fr = cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &p);
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
                fr = pair ? cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &p)
                          : cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3", tvec2, 1, &c->tptr3, &p);
            } else {
                /* B is [K, N]: matrix i holds rows k0 + 8(i%2) .. +7 at column n + 8(i/2), transposed on load */
                LLVMValueRef row = add(c, i32c(c, k0), l16);
                LLVMValueRef col = pair ? add(c, nb, mul(c, udiv(c, c->lane, 16), 8)) : nb;
                p = smem_half_ptr_in(c, barea, add(c, add(c, mul(c, row, sb), col), bbase_v));
                fr = pair ? cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3", tvec4, 1, &c->tptr3, &p)
                          : cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3", tvec2, 1, &c->tptr3, &p);
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
                LLVMValueRef r = cg_call(c, bf ? "llvm.nvvm.mma.m16n8k16.row.col.bf16" : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                                      tf4, 10, targs, args);
                for (int i = 0; i < 4; i++) acc4[i] = LLVMBuildExtractValue(B, r, (unsigned)i, "");
            }
    }
    for (int i = 0; i < tm * tn * 4; i++) out.v[i] = d[i];
    c->vals[op->res[0]] = out;
    free(d); free(afr); free(bfr);
}

const DotEngine dot_mma_sync = {"mma.sync", layout_dot_on_tensorcores, emit_dot_mma};
