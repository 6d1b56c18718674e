/* dot_mma.c: the tensor-core dot engine (mma.sync m16n8k16, sm_80 and up).
 *
 * Expects: a dot layout_dot_on_tensorcores takes (this engine's accepts,
 * the very test the layout pass gives the result its MMA layout by).
 * Guarantees: operands are read as 16-bit elements from shared memory (their
 * region, their ring slot read in place, or scratch written here, each in
 * the swizzled SHARED layout of its shape, so ldmatrix has no bank
 * conflicts), fragments are loaded with ldmatrix, and the result is left in
 * the MMA layout's registers. */
#include "codegen/dot.h"
#include "nvidia/mma_layout.h"
#include "nvidia/targets.h"

#include <stdlib.h>

/* The ldmatrix row addresses of one operand in layout sl at byte base of
 * area: a thread's own row and column (from its lane and warp), then per
 * 8x8 matrix a constant step of whole 8-row and 8-column blocks. The
 * thread's offset is computed once, and each matrix's is a constant shift
 * of it (an XOR and an add: layout_shared_shift) where that holds at every
 * column a thread can have (cols, known here), else the whole map. A
 * matrix's column is a multiple of 8: its row's 16 bytes are one chunk,
 * which the swizzle keeps whole. */
typedef struct {
    LLVMValueRef area, base;
    const Layout *sl;
    LLVMValueRef row, col, at;
    int cols[2 * 32], ncols;
} MatrixRows;

/* The columns a thread can have: warp_step apart over nwarps warps, and
 * 8 more for half the lanes where lane_col. */
static MatrixRows matrix_rows(Cg *c, LLVMValueRef area, LLVMValueRef base, const Layout *sl, LLVMValueRef row, LLVMValueRef col,
                              int nwarps, int warp_step, bool lane_col)
{
    MatrixRows m = {area, base, sl, row, col, shared_offset(c, sl, row, col), {0}, 0};
    if (nwarps > 32) {
        m.ncols = -1;   /* more than a block has: never shifted */
        return m;
    }
    for (int w = 0; w < nwarps; w++) {
        m.cols[m.ncols++] = w * warp_step;
        if (lane_col) m.cols[m.ncols++] = w * warp_step + 8;
    }
    return m;
}

static LLVMValueRef matrix_row(Cg *c, const MatrixRows *m, int drow, int dcol)
{
    bool holds = m->ncols >= 0;
    for (int i = 0; i < m->ncols; i++) holds = holds && layout_shared_shift_holds(m->sl, m->cols[i], drow, dcol);
    LLVMValueRef off;
    if (holds) off = shared_shifted(c, m->sl, m->at, drow, dcol);
    else off = shared_offset(c, m->sl, add(c, m->row, i32c(c, drow)), add(c, m->col, i32c(c, dcol)));
    return shared_byte_ptr(c, m->area, offset_add(c, m->base, off));
}

static void emit_dot_mma(Cg *c, const IrOp *op)
{
    IrType at = vtype(c, op->args[0]), t = vtype(c, op->res[0]);
    const Layout *l = c->plan.of[op->res[0]];
    bool tb = op->flags & DOT_TRANS_B, bf = at.dt == DT_BF16;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    LLVMBuilderRef B = c->b;
    /* each operand in the SHARED layout of its shape (B [N, K] for dot_t) */
    int brows = tb ? N : K, bcols = tb ? K : N;
    const Layout *sa = layout_shared(c->layouts, M, K, 2), *sb = layout_shared(c->layouts, brows, bcols, 2);
    int64_t abase = 0, bbase = 0;   /* in bytes of the area */
    const Region *ra = find_region(c, op->args[0], at.dt), *rb = find_region(c, op->args[1], at.dt);
    /* operands in a ring slot are read where they lie */
    LLVMValueRef aring = operand_ring_at(c, op->args[0], at.dt), bring = operand_ring_at(c, op->args[1], at.dt);
    /* An A operand held in an MMA layout whose warps own whole rows, split
     * like the result's, is already in fragments: FlashAttention-2 keeps P
     * in registers this way. */
    const Layout *al = c->plan.of[op->args[0]];
    bool a_regs = !ra && al && al->kind == LAY_MMA && al->wn == 1 && l->wn == 1 && al->wm == l->wm && al->mstride == l->mstride &&
                  al->rows == M && al->cols == K && !c->plan.absorbed[op->args[0]];
    LLVMValueRef aarea = c->smem, barea = c->smem;   /* every buffer lies in the one shared area */
    bool write_a = !ra && !a_regs && !aring, write_b = !rb && !bring;
    /* the buffer each operand is read from: its region, its ring, or scratch written here (only for
     * the operands written: B's alone where A is in registers or a region) */
    int abuf = ra ? ra->buf : aring ? ring_buffer_of(c, operand_ring_root(c, op->args[0])) : -1;
    int bbuf = rb ? rb->buf : bring ? ring_buffer_of(c, operand_ring_root(c, op->args[1])) : -1;
    if (write_a) abuf = smem_buffer(c, SMEM_SCRATCH, layout_shared_bytes(M, K, 2)), abase = smem_offset(c, abuf);
    if (write_b) bbuf = smem_buffer(c, SMEM_SCRATCH, layout_shared_bytes(brows, bcols, 2)), bbase = smem_offset(c, bbuf);
    if (ra) { abase = ra->base; sa = ra->lay; }
    if (rb) { bbase = rb->base; sb = rb->lay; }
    LLVMValueRef abase_v = i32c(c, abase), bbase_v = i32c(c, bbase);
    if (aring) { abase_v = aring; sa = home_layout(c, operand_ring_root(c, op->args[0])); }
    if (bring) { bbase_v = bring; sb = home_layout(c, operand_ring_root(c, op->args[1])); }
    if (write_a) operand_to_smem(c, op->args[0], at.dt, abuf, abase, sa);
    if (write_b) operand_to_smem(c, op->args[1], at.dt, bbuf, bbase, sb);

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
    LLVMValueRef half = mul(c, udiv(c, c->lane, 16), 8), quad = udiv(c, c->lane, 8);   /* quad: the matrix this lane addresses */
    /* A: lanes 0-15 give rows m..m+15 of a matrix pair, lanes 16-31 the same rows 8 columns on */
    MatrixRows arows = matrix_rows(c, aarea, abase_v, sa, add(c, m_base, l16), half, 1, 0, true);
    /* B [N, K]: matrix i holds rows n + 8(i/2) .. +7 at column k + 8(i%2); a lone one rows n .. n+7.
     * B [K, N]: matrix i holds rows k + 8(i%2) .. +7 at column n + 8(i/2), transposed on load. */
    MatrixRows bpair = tb ? matrix_rows(c, barea, bbase_v, sb, add(c, add(c, n_base, l8), mul(c, udiv(c, quad, 2), 8)),
                                        mul(c, urem(c, quad, 2), 8), 1, 0, true)
                          : matrix_rows(c, barea, bbase_v, sb, l16, add(c, n_base, half), l->wn, l->tn * 8, true);
    MatrixRows blone = tb ? matrix_rows(c, barea, bbase_v, sb, add(c, n_base, l8), mul(c, urem(c, quad, 2), 8), 1, 0, true)
                          : matrix_rows(c, barea, bbase_v, sb, l16, n_base, l->wn, l->tn * 8, false);
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
            LLVMValueRef p = matrix_row(c, &arows, im * 16, k0);
            LLVMValueRef fr = cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &p);
            for (int i = 0; i < 4; i++) {
                LLVMValueRef x = LLVMBuildExtractValue(B, fr, (unsigned)i, "");
                afr[im * 4 + i] = bf ? x : LLVMBuildBitCast(B, x, tv2, "");
            }
        }
        /* two 8-column pieces of B per ldmatrix.x4 (matrices 2 and 3 the second's), a lone last one with .x2 */
        for (int in = 0; in < tn; in += 2) {
            bool pair = in + 1 < tn;
            const MatrixRows *bm = pair ? &bpair : &blone;
            LLVMValueRef p, fr;
            if (tb) {
                p = matrix_row(c, bm, in * 8, k0);
                fr = pair ? cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &p)
                          : cg_call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3", tvec2, 1, &c->tptr3, &p);
            } else {
                p = matrix_row(c, bm, k0, in * 8);
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

const DotEngine dot_mma_sync = {"mma.sync", layout_dot_on_tensorcores, emit_dot_mma, mma_sync_result_layout, NULL, NULL, NULL};
