/* dot_wgmma.c: Hopper's warpgroup dot engine (wgmma.mma_async, sm_90a).
 *
 * Expects: a dot layout_dot_on_tensorcores takes whose A rows are 64 or
 * 128 per warpgroup of the block (M == 16 x warps x r, r m64 instructions
 * a warpgroup, r 1 or 2, at most 128 accumulators a thread), or 64 rows on
 * several warpgroups, each computing a share of the columns (its result
 * layout_mma_wg_cols, A read from shared memory); otherwise the result is
 * the MMA layout with every warp along rows, interleaved where r is 2
 * (layout_mma_interleaved), which is the wgmma accumulator's: in
 * instruction i of warpgroup g (rows 64(g + G i) on, G warpgroups), warp w,
 * lane l, value j holds row 16(w%4) + l/4 + 8((j/2)%2), column 2(l%4) +
 * j%2 + 8(j/4); N at most 256, operand rows the hardware's swizzle can
 * hold (layout_shared_atoms); B read from memory, not computed.
 * Guarantees: B, and an A read from memory, are read from shared memory
 * through matrix descriptors, where they lie (a ring slot, a region: the
 * target gives both layout_shared_atoms) or written to scratch in that
 * layout; a computed A (P in attention) is read from registers, in the
 * MMA layout with warps along rows (converted to it where it lies
 * otherwise: the accumulator of an earlier dot already is); the result is
 * in the accumulator registers when the dot ends (its group waited for),
 * and no wgmma reads shared memory after it. */
#include "codegen/target.h"
#include "ir/irutil.h"
#include "nvidia/ptx_asm.h"
#include "nvidia/targets.h"

#include <stdlib.h>
#include <string.h>

/* Rows of rows x cols 16-bit elements that a descriptor can address. */
static bool swizzle_holds(int cols) { return cols * 2 == 32 || cols * 2 == 64 || (cols * 2) % 128 == 0; }

/* Whether the value a dot operand is made from is read from memory (a
 * load, a ring slot, a loop's carried slot) rather than computed. A loop's
 * carried value is what the loop starts it with: where that is computed
 * (a carried P of wgmma_overlap.c), so is the value, once `computed` says
 * a block argument counts by its start (the register A test; the B test
 * keeps taking a carried tile as memory, written to scratch). */
static bool read_from_memory_as(const IrFunc *f, ValueId v, bool carried_by_init, int depth)
{
    const IrOp *d = f->values[v].def;
    while (d && (d->kind == OP_CONVERT || d->kind == OP_TRANSPOSE)) {
        v = d->args[0];
        d = f->values[v].def;
    }
    if ((!d && carried_by_init) || (d && d->kind == OP_FOR)) {
        ValueId init = depth < 8 ? ir_carried_init(f, v) : 0;
        if (init) return read_from_memory_as(f, init, carried_by_init, depth + 1);
    }
    return !d || d->kind == OP_LOAD || d->kind == OP_COPY_ASYNC || d->kind == OP_WAIT_ASYNC;
}

static bool read_from_memory(const IrFunc *f, ValueId v) { return read_from_memory_as(f, v, false, 0); }

/* A result of 64 rows on several warpgroups: each computes all the rows
 * and a share of the columns (layout_mma_wg_cols), A read by all of them
 * from shared memory. */
static bool split_columns(const IrFunc *f, const IrOp *dot) { return ir_vtype(f, dot->args[0]).shape[0] == 64 && f->threads >= 256; }

/* Whether A is computed (not read from memory) on one warpgroup's rows:
 * then the dot reads it from registers unless the layout pass folded a
 * transpose into it (a_in_registers). */
static bool a_computed(const IrFunc *f, const IrOp *dot)
{
    return !split_columns(f, dot) && !read_from_memory_as(f, dot->args[0], true, 0);
}

/* a_computed, and not a transpose (or a convert of one), which the plan may
 * fold: from registers whatever the plan says. */
static bool a_computed_whole(const IrFunc *f, const IrOp *dot)
{
    const IrOp *d = f->values[dot->args[0]].def;
    while (d && d->kind == OP_CONVERT) d = f->values[d->args[0]].def;
    return a_computed(f, dot) && (!d || d->kind != OP_TRANSPOSE);
}

static bool wgmma_accepts(const IrFunc *f, const IrOp *dot)
{
    if (!layout_dot_on_tensorcores(f, dot) || f->threads % 128) return false;
    IrType a = ir_vtype(f, dot->args[0]), b = ir_vtype(f, dot->args[1]);
    bool tb = dot->flags & DOT_TRANS_B;
    int M = a.shape[0], K = a.shape[1], N = tb ? b.shape[0] : b.shape[1];
    /* r m64 instructions a warpgroup (r 1 or 2) of n columns each (all N,
     * or a warpgroup's share), at most 128 accumulators a thread */
    int per = 16 * (f->threads / 32), r = M / per, n = N;
    if (split_columns(f, dot)) {
        int groups = f->threads / 128;
        if (N % (8 * groups)) return false;
        r = 1, n = N / groups;
    } else if (M % per) return false;
    /* a K-major operand in shared memory has rows of K elements, which the
     * swizzle must fit; A in registers and B read MN-major have none (P V
     * with 176 keys, FlashAttention-3's tile at head dim 128) */
    bool k_major = tb || !a_computed_whole(f, dot);
    if (r > 2 || r * n > 256 || K % 16 || (k_major && !swizzle_holds(K))) return false;
    /* B [K, N] is read MN-major, in atoms of 64 columns; a warpgroup's share
     * of them may be part of an atom, its descriptor starting inside the
     * atom's row (the swizzle is of the address, as for K-major steps) */
    if (!tb && (N % 64 || (n % 64 && 64 % n))) return false;
    return read_from_memory(f, dot->args[1]);
}

/* Whether A is taken from registers: computed, and not a transpose the
 * layout pass folded into the dot (that one is written to scratch
 * transposed). */
static bool a_in_registers(Cg *c, const IrOp *dot)
{
    return a_computed(c->f, dot) && !c->plan.absorbed[dot->args[0]];
}

/* The four registers of A's fragment for row piece im and columns
 * k0..k0+15: the MMA layout's pieces 2(k0/16) and 2(k0/16)+1 of that
 * row (tn of them a row), rows g then g+8 of each, two columns a
 * register. */
static void a_fragment(Cg *c, const Slots *a, DType dt, int im, int tn, int k0, LLVMValueRef out[4])
{
    LLVMTypeRef pair = LLVMVectorType(dtype_ty(c, dt), 2);
    for (int r = 0; r < 4; r++) {
        int piece = im * tn + 2 * (k0 / 16) + (r >> 1), i0 = (r & 1) * 2;
        LLVMValueRef x = LLVMBuildInsertElement(c->b, LLVMGetUndef(pair), a->v[piece * 4 + i0], i32c(c, 0), "");
        x = LLVMBuildInsertElement(c->b, x, a->v[piece * 4 + i0 + 1], i32c(c, 1), "");
        out[r] = LLVMBuildBitCast(c->b, x, c->ti32, "");
    }
}

/* A splat of the constant 0. */
static bool zero_tile(const IrFunc *f, ValueId v)
{
    const IrOp *d = f->values[v].def;
    if (!d || d->kind != OP_SPLAT) return false;
    const IrOp *k = f->values[d->args[0]].def;
    return k && k->kind == OP_CONST && k->fval == 0.0 && !k->ival;
}

static const Layout *wgmma_result_layout(LayoutTable *t, const IrFunc *f, const IrOp *dot)
{
    IrType r = ir_vtype(f, dot->res[0]);
    if (split_columns(f, dot)) return layout_mma_wg_cols(t, r.shape[0], r.shape[1], f->threads);
    return layout_mma_interleaved(t, r.shape[0], r.shape[1], f->threads);
}

/* Where an operand is read from: its buffer, its start (bytes in the
 * area) and its SHARED layout. */
typedef struct {
    int buf;
    LLVMValueRef at;
    const Layout *sl;
} Operand;

static Operand place_operand(Cg *c, ValueId v, DType dt, int rows, int cols)
{
    const Region *r = find_region(c, v, dt);
    if (r) return (Operand){r->buf, i32c(c, r->base), r->lay};
    LLVMValueRef ring = operand_ring_at(c, v, dt);
    if (ring) {
        ValueId root = operand_ring_root(c, v);
        return (Operand){ring_buffer_of(c, root), ring, home_layout(c, root)};
    }
    const Layout *sl = layout_shared_atoms(c->layouts, rows, cols, 2);
    int buf = smem_operand_buffer(c, SMEM_SCRATCH, layout_shared_size(sl));
    operand_to_smem(c, v, dt, buf, smem_offset(c, buf), sl);
    return (Operand){buf, i32c(c, smem_offset(c, buf)), sl};
}

/* PHOBOS_SCRATCH_TURNS (on by default; =0 leaves it out): whether dot's A
 * scratch is taken in turns, two halves by the iteration's parity
 * (SMEM_TURNS), so that an iteration's write needs no barrier against the
 * last one's reads (the fused backward's dS^T for dQ: its barrier after the
 * dQ share's wait goes): the dot directly in the body of the for being
 * emitted, and waited for there where it is issued, so that every access
 * of an iteration is of its own half. */
static bool in_turns(Cg *c, const IrOp *dot)
{
    const IrBlock *b = c->loop.body;
    if (!b || c->loop.step <= 0 || !env_switch("PHOBOS_SCRATCH_TURNS", true)) return false;
    bool here = false, waited = !(dot->flags & DOT_ISSUED);
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op == dot) here = true;
        for (int j = 0; here && op->kind == OP_WAIT_DOTS && j < op->nargs; j++) waited |= op->args[j] == dot->res[0];
    }
    return here && waited;
}

/* The for's iteration count from its first, modulo 2 (i32). */
static LLVMValueRef iteration_parity(Cg *c)
{
    LLVMValueRef n = LLVMBuildSDiv(c->b, LLVMBuildSub(c->b, c->loop.iv, c->loop.lb, ""), i32c(c, c->loop.step), "");
    return LLVMBuildAnd(c->b, n, i32c(c, 1), "");
}

/* Whether A is the transpose of a computed tile (the fused backward's dS
 * for dQ = dS K, from dS^T), with no region or ring of its own: then it
 * is written to scratch as that tile, [K, M], an MMA layout's pairs 4
 * bytes a store, and read M-major (imm-trans-a), instead of written
 * transposed an element at a time; its rows (M) whole 64-column atoms. */
static bool a_from_its_transpose(Cg *c, const IrOp *dot, int M)
{
    bool tr;
    ValueId root = operand_root(c, dot->args[0], &tr);
    DType dt = vtype(c, dot->args[0]).dt;
    return tr && root != dot->args[0] && M % 64 == 0 && !find_region(c, dot->args[0], dt) &&
           !operand_ring_at(c, dot->args[0], dt);
}

/* The columns of one swizzle atom, its bytes, and the descriptor's swizzle mode. */
static int atom_cols(const Layout *sl) { return layout_shared_atom_cols(sl); }
static int64_t atom_bytes(const Layout *sl) { return (int64_t)sl->rows * atom_cols(sl) * sl->elem; }
static int swizzle_mode(const Layout *sl)
{
    int row = layout_shared_hw_swizzle(sl);
    return row == 128 ? 1 : row == 64 ? 2 : 3;
}

/* The descriptor of the matrix at byte at of the area, the leading and
 * stride byte offsets lbo and sbo, in swizzle mode of sl: lo its variable
 * part, hi what desc_at ors into it. PHOBOS_SHORT_DESCRIPTORS=1 (off: timed
 * level, docs/performance.md "fortieth"): lo is the low 32 bits alone (the
 * start address and lbo; the high half, sbo and the swizzle, is a
 * constant), so a descriptor kept across a loop holds one register, not two
 * (the head dim 128 dK/dV pick's spills 388 / 436 -> 332 / 380 bytes;
 * Nsight Compute found its loop's R2UR waiting on 64-bit bases reloaded
 * from the stack, docs/performance.md "thirty-eighth").
 */
typedef struct { LLVMValueRef lo; uint64_t hi; } Desc;

static Desc descriptor(Cg *c, LLVMValueRef at, const Layout *sl, int64_t lbo, int64_t sbo)
{
    LLVMBuilderRef B = c->b;
    uint64_t fixed = (uint64_t)((lbo >> 4) & 0x3FFF) << 16 | (uint64_t)((sbo >> 4) & 0x3FFF) << 32 | (uint64_t)swizzle_mode(sl) << 62;
    if (env_switch("PHOBOS_SHORT_DESCRIPTORS", false)) {   /* the start stays in its 14 bits: shared memory is under 256 KB */
        LLVMValueRef addr = LLVMBuildPtrToInt(B, smem_byte_ptr(c, at), c->ti32, "");
        LLVMValueRef start = LLVMBuildLShr(B, LLVMBuildAnd(B, addr, i32c(c, 0x3FFFF), ""), i32c(c, 4), "");
        return (Desc){LLVMBuildOr(B, start, i32c(c, (int64_t)(fixed & 0xFFFFFFFFu)), ""), fixed >> 32 << 32};
    }
    LLVMValueRef addr = LLVMBuildPtrToInt(B, smem_byte_ptr(c, at), c->ti64, "");
    LLVMValueRef start = LLVMBuildLShr(B, LLVMBuildAnd(B, addr, LLVMConstInt(c->ti64, 0x3FFFF, 0), ""), LLVMConstInt(c->ti64, 4, 0), "");
    return (Desc){LLVMBuildOr(B, start, LLVMConstInt(c->ti64, fixed, 0), ""), 0};
}

/* Descriptor d moved on by bytes (within its 14-bit start), as the
 * instruction takes it (i64). */
static LLVMValueRef desc_at(Cg *c, Desc d, int64_t bytes)
{
    LLVMBuilderRef B = c->b;
    if (LLVMTypeOf(d.lo) == c->ti64)
        return bytes ? LLVMBuildAdd(B, d.lo, LLVMConstInt(c->ti64, (unsigned long long)(bytes >> 4), 0), "") : d.lo;
    LLVMValueRef lo = bytes ? LLVMBuildAdd(B, d.lo, i32c(c, bytes >> 4), "") : d.lo;
    return LLVMBuildOr(B, LLVMBuildZExt(B, lo, c->ti64, ""), LLVMConstInt(c->ti64, d.hi, 0), "");
}

/* The byte offset of column k0 (a multiple of 16) of a K-major operand's row 0. */
static int64_t k_major_step(const Layout *sl, int k0) { return k0 / atom_cols(sl) * atom_bytes(sl) + (int64_t)(k0 % atom_cols(sl)) * sl->elem; }

/* A wgmma dot is fenced for the async proxy only where an operand's bytes
 * may have been stored by threads (the generic proxy) with no proxy fence
 * after them (PHOBOS_FEWER_FENCES=0: before every dot). Not a region (its
 * writers fence their stores: fence_operand_stores) nor a warp-specialized
 * kernel's ring slots: the producer fills them by bulk copies (the async
 * proxy's own writes) or, element by element, fences its stores before its
 * arrival on the full barrier (copy_tma.c ws_copy_elements). Each fence
 * waits for the thread's memory operations in flight (MEMBAR.ALL.CTA in the
 * SASS: in the fused backward the dQ adds of the iteration before,
 * docs/performance.md "twenty-seventh"). */
static bool fewer_fences(void) { return env_switch("PHOBOS_FEWER_FENCES", true); }

static bool stored_by_threads(Cg *c, int buf)
{
    SmemKind kind = c->smem_plan.bufs.data[buf].kind;
    return !fewer_fences() || (kind != SMEM_REGION && (kind != SMEM_RING || !c->f->producer));
}

static void fence_operand_stores(Cg *c)
{
    if (fewer_fences()) ptx_fence_proxy_async(c);
}

static void emit_dot_wgmma(Cg *c, const IrOp *op)
{
    IrType at = vtype(c, op->args[0]), t = vtype(c, op->res[0]);
    const Layout *l = c->plan.of[op->res[0]];
    bool tb = op->flags & DOT_TRANS_B, bf = at.dt == DT_BF16;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    /* warpgroup g's instruction i covers the 64 rows of block g + G i (G
     * warpgroups): warp w then holds rows 16w + 16 x warps x i, the
     * interleaved MMA layout, accumulator i being its pieces' row i; or,
     * columns split, its one instruction the 64 rows and the Nw columns
     * from g Nw */
    bool split = split_columns(c->f, op);
    int G = c->T / 128, r = split ? 1 : M / (64 * G), Nw = split ? N / G : N;
    bool a_regs = a_in_registers(c, op), a_mn = !a_regs && a_from_its_transpose(c, op, M);
    Slots aval = {0};
    Operand a = {0};
    if (a_regs) {
        const Layout *al = layout_mma_interleaved(c->layouts, M, K, c->T);
        if (!al || al->kind != LAY_MMA || al->wn != 1 || al->tm != r) {
            cg_fail(c, op, "internal error: a wgmma register A operand in a layout other than 16-row pieces interleaved over the warps");
            return;
        }
        aval = cg_get(c, op->args[0], al);
    } else if (a_mn) {   /* [K, M]: A's transpose as it is */
        const Layout *sl = layout_shared_atoms(c->layouts, K, M, 2);
        int64_t size = layout_shared_size(sl);
        bool turns = in_turns(c, op);
        int buf = smem_operand_buffer(c, turns ? SMEM_TURNS : SMEM_SCRATCH, turns ? 2 * size : size);
        LLVMValueRef half = turns ? mul(c, iteration_parity(c), size) : i32c(c, 0);
        operand_to_smem_transposed(c, op->args[0], at.dt, turns ? smem_byte_ptr(c, half) : NULL, buf, smem_offset(c, buf), sl);
        a = (Operand){buf, add(c, i32c(c, smem_offset(c, buf)), half), sl};
    } else a = place_operand(c, op->args[0], at.dt, M, K);
    Operand b = place_operand(c, op->args[1], at.dt, tb ? N : K, tb ? K : N);
    if ((!a_regs && !layout_shared_hw_swizzle(a.sl)) || !layout_shared_hw_swizzle(b.sl) || (!tb && b.sl->atom && b.sl->atom != 64) ||
        (a_mn && atom_cols(a.sl) != 64)) {
        cg_fail(c, op, "internal error: a wgmma operand lies in shared memory in a layout no descriptor describes");
        return;
    }
    /* an issued dot's zero accumulator is the first instruction's scale-d 0: no
     * registers to zero while another group runs */
    bool zero = (op->flags & DOT_ISSUED) && zero_tile(c->f, op->args[2]);
    int n = layout_nslots(l);
    LLVMValueRef *d = xmalloc(sizeof *d * (size_t)n);
    if (zero) {
        for (int i = 0; i < n; i++) d[i] = LLVMGetUndef(c->tf32);
    } else {
        Slots acc = cg_get(c, op->args[2], l);
        for (int i = 0; i < n; i++) d[i] = acc.v[i];
    }
    Desc da[2] = {{NULL, 0}, {NULL, 0}};
    LLVMValueRef *afr = NULL;
    int nfr = K / 16 * 4;   /* registers of one row piece's A */
    if (a_regs) {
        smem_access(c, b.buf, false);
        afr = xmalloc(sizeof *afr * (size_t)(r * nfr));
        for (int i = 0; i < r; i++)
            for (int k0 = 0; k0 < K; k0 += 16) a_fragment(c, &aval, at.dt, i, K / 8, k0, &afr[i * nfr + k0 / 16 * 4]);
    } else {
        smem_access(c, a.buf, false);
        smem_access_together(c, b.buf, false);
        /* A: block g + G i's 64 rows, whole 8-row groups of 8 x row bytes;
         * M-major, its atom of 64 columns (atoms lbo apart, 8-row groups of K sbo apart) */
        int64_t a_row = (int64_t)atom_cols(a.sl) * a.sl->elem;
        for (int i = 0; i < r; i++) {
            LLVMValueRef block = add(c, udiv(c, c->warp, 4), i32c(c, (int64_t)G * i));
            LLVMValueRef at = split ? a.at : offset_add(c, a.at, mul(c, block, a_mn ? atom_bytes(a.sl) : 64 * a_row));
            da[i] = a_mn ? descriptor(c, at, a.sl, atom_bytes(a.sl), 8 * a_row) : descriptor(c, at, a.sl, 16, 8 * a_row);
        }
    }
    int64_t b_row = (int64_t)atom_cols(b.sl) * b.sl->elem;
    LLVMValueRef b_at = b.at;
    if (split)   /* the warpgroup's columns: B's rows g Nw on (K-major), or its atoms of 64 columns */
        b_at = offset_add(c, b.at, mul(c, udiv(c, c->warp, 4), tb ? Nw * b_row : Nw % 64 ? Nw * b.sl->elem : Nw / 64 * atom_bytes(b.sl)));
    /* B [N, K] K-major like A; [K, N] MN-major: atoms of 64 columns lbo apart, 8-row groups sbo apart */
    Desc db = tb ? descriptor(c, b_at, b.sl, 16, 8 * b_row) : descriptor(c, b_at, b.sl, atom_bytes(b.sl), 8 * b_row);
    if (!(op->flags & DOT_IN_TURN)) nvidia_turn_wait(c);
    if ((!a_regs && stored_by_threads(c, a.buf)) || stored_by_threads(c, b.buf)) ptx_fence_proxy_async(c);
    /* Register A passes through the fence, and so do the accumulators where
     * other code may write them between the instructions (a rescale of the
     * second row piece's sunk past the first wgmma makes ptxas inject a
     * warpgroup.arrive, C7519), and an issued dot's, whose zeros LLVM
     * would otherwise write after the fence while another group runs (ptxas
     * then injects a warpgroup.wait, C7517): 64 registers a statement (one
     * fence is enough, more are harmless). */
    int na = a_regs ? r * nfr : 0, nacc = a_regs || r > 1 || (op->flags & DOT_ISSUED) ? n : 0, nregs = na + nacc;
    LLVMValueRef *tied = xmalloc(sizeof *tied * (size_t)(nregs ? nregs : 1));
    if (na) memcpy(tied, afr, sizeof *tied * (size_t)na);
    if (nacc) memcpy(tied + na, d, sizeof *tied * (size_t)nacc);
    for (int i = 0; i < nregs; i += 64) ptx_wgmma_fence_regs(c, tied + i, nregs - i < 64 ? nregs - i : 64);
    if (na) memcpy(afr, tied, sizeof *tied * (size_t)na);
    if (nacc) memcpy(d, tied + na, sizeof *tied * (size_t)nacc);
    free(tied);
    if (!nregs) ptx_wgmma_fence(c);
    for (int k0 = 0; k0 < K; k0 += 16) {
        int64_t bstep = tb ? k_major_step(b.sl, k0) : (int64_t)k0 * b_row;
        for (int i = 0; i < r; i++) {
            LLVMValueRef *acc_i = d + i * (Nw / 2);   /* row piece i's accumulators */
            bool add = k0 || !zero;
            if (a_regs) ptx_wgmma_mma_regs(c, Nw, bf, &afr[i * nfr + k0 / 16 * 4], desc_at(c, db, bstep), !tb, add, acc_i);
            else {
                int64_t astep = a_mn ? (int64_t)k0 * (int64_t)atom_cols(a.sl) * a.sl->elem : k_major_step(a.sl, k0);
                ptx_wgmma_mma(c, Nw, bf, desc_at(c, da[i], astep), a_mn, desc_at(c, db, bstep), !tb, add, acc_i);
            }
        }
    }
    ptx_wgmma_commit(c);
    if (!(op->flags & DOT_TURN_KEPT)) nvidia_turn_pass(c);
    free(afr);
    if (op->flags & DOT_ISSUED) {   /* in flight: its wait_dots ties the accumulators (and A) */
        int *scratch = &c->issued_scratch[2 * op->res[0]];
        if (!a_regs && c->smem_plan.bufs.data[a.buf].kind == SMEM_SCRATCH) scratch[0] = a.buf;
        if (c->smem_plan.bufs.data[b.buf].kind == SMEM_SCRATCH) scratch[1] = b.buf;
        Slots out = new_slots(n, l);
        for (int i = 0; i < n; i++) out.v[i] = d[i];
        c->vals[op->res[0]] = out;
        free(d);
        return;
    }
    /* an async dot keeps its group in flight: the previous iteration's is done, its ring slot free */
    ptx_wgmma_wait(c, op->flags & DOT_ASYNC ? 1 : 0, d, n);
    /* and every warpgroup's: the copies after an async dot may refill that slot */
    if ((op->flags & DOT_ASYNC) && c->f->producer) c->target->copy->release(c, false, NULL);   /* to the producer, by mbarriers */
    else if (op->flags & DOT_ASYNC) smem_fixed_barrier(c);
    Slots out = new_slots(n, l);
    for (int i = 0; i < n; i++) out.v[i] = d[i];
    c->vals[op->res[0]] = out;
    free(d);
}

/* The register A operand of an issued dot, as its wgmma read it (the
 * fragments built again from the same values, which LLVM merges with the
 * issue's): appended to regs from *n. */
static void issued_a_registers(Cg *c, const IrOp *dot, LLVMValueRef *regs, int *n)
{
    if (!a_in_registers(c, dot)) return;
    IrType at = vtype(c, dot->args[0]);
    int M = at.shape[0], K = at.shape[1], r = M / (64 * (c->T / 128));
    Slots aval = cg_get(c, dot->args[0], layout_mma_interleaved(c->layouts, M, K, c->T));
    for (int i = 0; i < r; i++)
        for (int k0 = 0; k0 < K; k0 += 16) {
            a_fragment(c, &aval, at.dt, i, K / 8, k0, &regs[*n]);
            *n += 4;
        }
}

/* wait_dots: the issued dots' groups but the last ival complete, their
 * accumulators and A registers tied through the wait. ptxas moves a
 * WARPGROUP.DEPBAR up to the first instruction of its basic block that
 * needs nothing it waits for, so a wait put after the softmax ran before
 * it (docs/performance.md, "twentieth"); a fence.acq_rel.cta, which it does
 * not move a wait above, holds a WAIT_AFTER_WORK one where it is
 * (PHOBOS_HOLD_WAIT=0: no fence). Once all are done,
 * the ring slots they read are read no more in this warpgroup: a block
 * barrier, since the copies that follow (wgmma_overlap.c puts them there)
 * refill those slots for the whole block; with a producer, the release of
 * every group waited for before the last wait (the slots of the iteration
 * before, which the P V just completed read; the current one's stay). */
static void wait_wgmma(Cg *c, const IrOp *w)
{
    int total = 0;
    for (int i = 0; i < w->nargs; i++) {
        const IrOp *dot = ir_issued_dot(c->f, w->args[i]);
        IrType at = vtype(c, dot->args[0]);
        total += c->vals[w->args[i]].n + at.shape[0] * at.shape[1] / c->T / 2 + 4;
    }
    LLVMValueRef *regs = xmalloc(sizeof *regs * (size_t)(total + 1));
    int n = 0;
    bool reads_ring = false;
    for (int i = 0; i < w->nargs; i++) {
        Slots s = c->vals[w->args[i]];
        memcpy(regs + n, s.v, sizeof *regs * (size_t)s.n);
        n += s.n;
    }
    int nacc = n;
    for (int i = 0; i < w->nargs; i++) {
        const IrOp *dot = ir_issued_dot(c->f, w->args[i]);
        /* a dot carried in flight from the iteration before read an A no longer at hand: one
         * computed outside the loop (ir/verify.c refuses a carried one) */
        if (dot == c->f->values[w->args[i]].def) issued_a_registers(c, dot, regs, &n);
        reads_ring |= operand_ring_root(c, dot->args[1]) != 0 || operand_ring_root(c, dot->args[0]) != 0;
    }
    if ((w->flags & WAIT_AFTER_WORK) && env_switch("PHOBOS_HOLD_WAIT", true)) ptx_fence_cta(c);
    ptx_wgmma_wait_regs(c, (int)w->ival, regs, n);
    /* the scratch an issued dot reads is read until here: nothing takes its bytes before */
    for (int i = 0; i < w->nargs; i++)
        for (int k = 0; k < 2; k++)
            if (c->issued_scratch[2 * w->args[i] + k] >= 0) smem_access(c, c->issued_scratch[2 * w->args[i] + k], false);
    for (int i = 0, at = 0; i < w->nargs && at < nacc; i++) {
        Slots s = c->vals[w->args[i]], out = new_slots(s.n, s.lay);
        memcpy(out.v, regs + at, sizeof *out.v * (size_t)s.n);
        at += s.n;
        c->vals[w->res[i]] = out;
    }
    free(regs);
    if (w->ival == 0 && reads_ring && c->f->producer) c->target->copy->release(c, false, NULL);   /* to the producer, by mbarriers */
    else if (w->ival == 0 && reads_ring) smem_fixed_barrier(c);
}

static void drain_wgmma(Cg *c, const IrOp *dot, Slots *acc)
{
    ptx_wgmma_wait(c, 0, acc->v, acc->n);
    if (c->f->producer) c->target->copy->release(c, true, dot);
}

const DotEngine dot_wgmma = {"wgmma", wgmma_accepts, emit_dot_wgmma, wgmma_result_layout, drain_wgmma, wait_wgmma, fence_operand_stores};
