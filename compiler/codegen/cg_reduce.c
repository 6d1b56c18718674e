/* cg_reduce.c: reductions along an axis of a tile, and argmax/argmin,
 * which reduce (value, index) pairs the same way.
 *
 * Expects: a source in a register layout and the result's SLICE layout.
 * Guarantees: the reduction runs in registers, then across lanes with
 * the target's shuffles, then across warps through a scratch buffer; every copy
 * of a result element holds the same value. */
#include "target.h"

#include <stdlib.h>

/* ---- reductions ---- */

/* The dtype a reduction computes in: i32 and i64 as they are, floats in f32. */
static DType compute_dt(DType dt) { return dt == DT_I32 || dt == DT_I64 ? dt : DT_F32; }

static LLVMValueRef reduce_identity(Cg *c, IrReduce r, DType cdt)
{
    if (cdt == DT_I32) return i32c(c, r == RED_SUM ? 0 : r == RED_MAX ? INT32_MIN : INT32_MAX);
    if (cdt == DT_I64) return LLVMConstInt(c->ti64, (unsigned long long)(r == RED_SUM ? 0 : r == RED_MAX ? INT64_MIN : INT64_MAX), 1);
    /* the values that change nothing, so the result is the interpreter's,
     * which starts from the first element: max and min ignore a NaN operand
     * (an all-NaN set stays NaN, where -inf would win), and -0 + x is x for
     * every x (+0 would turn a sum of -0s into +0) */
    return f32c(c, r == RED_SUM ? -0.0 : __builtin_nan(""));
}

static LLVMValueRef reduce_combine(Cg *c, IrReduce r, DType cdt, LLVMValueRef a, LLVMValueRef b)
{
    IrBinop op = r == RED_SUM ? BIN_ADD : r == RED_MAX ? BIN_MAX : BIN_MIN;
    return scalar_binop(c, op, cdt, a, b);
}

/* For reducing layout l along axis into slice out: the slot of out each
 * of a thread's slots adds to, and the lanes and warps that share an
 * output element (layout_reduction), with this warp's index among those. */
typedef struct { int ngroups; int *group; LayoutReduction share; LLVMValueRef warp_index; } ReducePlan;

static ReducePlan reduce_plan(Cg *c, const Layout *l, const Layout *out, int axis)
{
    int n = layout_nslots(l);
    ReducePlan rp = {layout_nslots(out), xcalloc((size_t)n, sizeof(int)), layout_reduction(l, axis), NULL};
    for (int s = 0; s < n; s++) rp.group[s] = layout_slice_slot(out, s);
    LayoutTerm wi = rp.share.warp_index;
    rp.warp_index = wi.rem ? urem(c, c->warp, wi.by) : udiv(c, c->warp, wi.by);
    return rp;
}

void emit_reduce(Cg *c, const IrOp *op)
{
    ValueId src = op->args[0];
    IrType st = vtype(c, src), t = vtype(c, op->res[0]);
    const Layout *out_l = c->plan.of[op->res[0]];
    DType cdt = compute_dt(st.dt);
    bool isint = cdt != DT_F32;
    IrReduce r = op->sub;
    if (!out_l || out_l->kind != LAY_SLICE) {
        /* a reduction the layout pass left to shared memory: a thread per output element */
        Slots home = cg_get(c, src, reg_layout(c, src));
        int buf = tile_scratch(c, home.lay, st.dt);
        slots_to_smem(c, &home, st.dt, buf);
        smem_access(c, buf, false);
        const Layout *l = home_layout(c, op->res[0]);
        Slots out = new_slots(layout_nslots(l), l);
        int R = ir_rows(st), C = ir_cols(st), len = op->axis == 1 ? C : R;
        for (int k = 0; k < out.n; k++) {
            SlotPos p = slot_pos(c, l, k);
            LLVMValueRef acc = reduce_identity(c, r, cdt);
            LLVMValueRef base = op->axis == 1 ? mul(c, p.row, C) : p.col;
            if (p.valid) base = LLVMBuildSelect(c->b, p.valid, base, i32c(c, 0), "");
            for (int i = 0; i < len; i++) {
                LLVMValueRef w = smem_load_elem(c, buf, add(c, base, i32c(c, (int64_t)i * (op->axis == 1 ? 1 : C))), cdt);
                acc = reduce_combine(c, r, cdt, acc, w);
            }
            out.v[k] = isint ? acc : from_f32(c, acc, t.dt);
        }
        c->vals[op->res[0]] = out;
        return;
    }
    const Layout *l = out_l->parent;
    Slots s = cg_get(c, src, l);
    ReducePlan rp = reduce_plan(c, l, out_l, op->axis);
    LLVMValueRef *part = xmalloc(sizeof *part * (size_t)rp.ngroups);
    for (int g = 0; g < rp.ngroups; g++) part[g] = reduce_identity(c, r, cdt);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef x = isint ? s.v[k] : to_f32(c, s.v[k], st.dt);
        if (p.valid) x = LLVMBuildSelect(c->b, p.valid, x, reduce_identity(c, r, cdt), "");
        part[rp.group[k]] = reduce_combine(c, r, cdt, part[rp.group[k]], x);
    }
    for (int g = 0; g < rp.ngroups; g++)
        for (int m = 0; m < rp.share.nmasks; m++)
            part[g] = reduce_combine(c, r, cdt, part[g], c->target->isa->shuffle_xor(c, part[g], rp.share.lane_masks[m], isint));
    int nwarps = rp.share.nwarps;
    if (nwarps > 1) {
        /* partials of the warps that share an output element meet in shared memory */
        int len = op->axis == 1 ? l->rows : l->cols;
        int buf = smem_buffer(c, SMEM_SCRATCH, (int64_t)nwarps * len * smem_elem_bytes(cdt));
        smem_access(c, buf, true);
        /* An output element exists where its slot of the result (a slice)
         * is valid: the kept axis only. Every warp writes its partial, the
         * identity for a warp whose rows (columns) all lie past the tile,
         * since every warp's is read; every copy reads the total. */
        LLVMValueRef *pos = xmalloc(sizeof *pos * (size_t)rp.ngroups), *kept = xmalloc(sizeof *kept * (size_t)rp.ngroups);
        for (int g = 0; g < rp.ngroups; g++) {
            SlotPos p = slot_pos(c, out_l, g);
            pos[g] = op->axis == 1 ? p.row : p.col;
            kept[g] = p.valid;
            int lead_lanes = rp.share.lead_lanes;
            LLVMValueRef lead = op->axis == 1 ? LLVMBuildICmp(c->b, LLVMIntEQ, urem(c, c->lane, lead_lanes), i32c(c, 0), "")
                                              : LLVMBuildICmp(c->b, LLVMIntULT, c->lane, i32c(c, lead_lanes), "");
            Guard gd = guard_begin(c, and1(c, kept[g], lead));
            if (cdt == DT_I64) {
                smem_store_elem(c, buf, add(c, mul(c, rp.warp_index, len), pos[g]), part[g], cdt);
            } else {   /* the word before its index, as the code has always been built */
                LLVMValueRef w = isint ? part[g] : LLVMBuildBitCast(c->b, part[g], c->ti32, "");
                smem_store(c, buf, add(c, mul(c, rp.warp_index, len), pos[g]), w);
            }
            guard_end(c, gd);
        }
        smem_access(c, buf, false);
        for (int g = 0; g < rp.ngroups; g++) {
            LLVMValueRef at = kept[g] ? LLVMBuildSelect(c->b, kept[g], pos[g], i32c(c, 0), "") : pos[g];
            LLVMValueRef acc = reduce_identity(c, r, cdt);
            for (int w = 0; w < nwarps; w++) {
                LLVMValueRef x = smem_load_elem(c, buf, add(c, at, i32c(c, (int64_t)w * len)), cdt);
                acc = reduce_combine(c, r, cdt, acc, x);
            }
            part[g] = acc;
        }
        free(pos);
        free(kept);
    }
    Slots out = new_slots(rp.ngroups, out_l);
    for (int g = 0; g < rp.ngroups; g++) out.v[g] = isint ? part[g] : from_f32(c, part[g], t.dt);
    c->vals[op->res[0]] = out;
    free(part);
    free(rp.group);
}

/* ---- argmax and argmin: (value, index) pairs ---- */

typedef struct { LLVMValueRef v, i; } Pair;

/* The pair every element beats: the worst value, at an index past them all. */
static Pair arg_identity(Cg *c, bool max, DType cdt)
{
    LLVMValueRef v = cdt == DT_I32 ? i32c(c, max ? INT32_MIN : INT32_MAX)
                   : cdt == DT_I64 ? LLVMConstInt(c->ti64, (unsigned long long)(max ? INT64_MIN : INT64_MAX), 1)
                   : f32c(c, max ? -__builtin_inf() : __builtin_inf());
    return (Pair){v, i32c(c, INT32_MAX)};
}

/* The better of a and b: a NaN beats every number, then the larger (the
 * smaller for argmin), then the smaller index. A total order on pairs of
 * distinct indices, so any order of combining gives the interpreter's
 * answer (its first NaN, else its first best). */
static Pair arg_combine(Cg *c, bool max, bool isint, Pair a, Pair b)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef earlier = LLVMBuildICmp(B, LLVMIntSLT, b.i, a.i, ""), take;
    if (isint) {
        LLVMValueRef better = LLVMBuildICmp(B, max ? LLVMIntSGT : LLVMIntSLT, b.v, a.v, "");
        LLVMValueRef tie = LLVMBuildICmp(B, LLVMIntEQ, b.v, a.v, "");
        take = LLVMBuildOr(B, better, LLVMBuildAnd(B, tie, earlier, ""), "");
    } else {
        LLVMValueRef a_num = LLVMBuildFCmp(B, LLVMRealORD, a.v, a.v, ""), b_nan = LLVMBuildFCmp(B, LLVMRealUNO, b.v, b.v, "");
        LLVMValueRef better = LLVMBuildFCmp(B, max ? LLVMRealOGT : LLVMRealOLT, b.v, a.v, "");
        LLVMValueRef tie = LLVMBuildFCmp(B, LLVMRealOEQ, b.v, a.v, "");
        LLVMValueRef nan_wins = LLVMBuildAnd(B, b_nan, LLVMBuildOr(B, a_num, earlier, ""), "");
        LLVMValueRef num_wins = LLVMBuildAnd(B, a_num, LLVMBuildOr(B, better, LLVMBuildAnd(B, tie, earlier, ""), ""), "");
        take = LLVMBuildOr(B, nan_wins, num_wins, "");
    }
    return (Pair){LLVMBuildSelect(B, take, b.v, a.v, ""), LLVMBuildSelect(B, take, b.i, a.i, "")};
}

/* A source the layout pass left without a slice result (a slice itself):
 * through shared memory, a thread per output element walking its line. */
static Slots argreduce_in_smem(Cg *c, const IrOp *op, bool max, DType cdt)
{
    ValueId src = op->args[0];
    IrType st = vtype(c, src);
    bool isint = cdt != DT_F32;
    Slots home = cg_get(c, src, reg_layout(c, src));
    int buf = tile_scratch(c, home.lay, st.dt);
    slots_to_smem(c, &home, st.dt, buf);
    smem_access(c, buf, false);
    const Layout *l = home_layout(c, op->res[0]);
    Slots out = new_slots(layout_nslots(l), l);
    int C = ir_cols(st), len = op->axis == 1 ? C : ir_rows(st);
    for (int k = 0; k < out.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        Pair best = arg_identity(c, max, cdt);
        LLVMValueRef base = op->axis == 1 ? mul(c, p.row, C) : p.col;
        if (p.valid) base = LLVMBuildSelect(c->b, p.valid, base, i32c(c, 0), "");
        for (int i = 0; i < len; i++) {
            LLVMValueRef w = smem_load_elem(c, buf, add(c, base, i32c(c, (int64_t)i * (op->axis == 1 ? 1 : C))), cdt);
            best = arg_combine(c, max, isint, best, (Pair){w, i32c(c, i)});
        }
        out.v[k] = best.i;
    }
    return out;
}

/* The warps' partial pairs of each output element meet in shared memory:
 * values in the first half of the buffer, indices (words) in the second. */
static void argreduce_across_warps(Cg *c, const Layout *out_l, const ReducePlan *rp, int axis, bool max, DType cdt,
                                   Pair *part)
{
    const Layout *l = out_l->parent;
    bool isint = cdt != DT_F32;
    int nwarps = rp->share.nwarps, len = axis == 1 ? l->rows : l->cols, half = nwarps * len;
    int idx_at = half * smem_elem_bytes(cdt) / 4;   /* the word where the indices start */
    int buf = smem_buffer(c, SMEM_SCRATCH, (int64_t)half * smem_elem_bytes(cdt) + (int64_t)half * 4);
    smem_access(c, buf, true);
    LLVMValueRef *pos = xmalloc(sizeof *pos * (size_t)rp->ngroups), *kept = xmalloc(sizeof *kept * (size_t)rp->ngroups);
    for (int g = 0; g < rp->ngroups; g++) {
        SlotPos p = slot_pos(c, out_l, g);
        pos[g] = axis == 1 ? p.row : p.col;
        kept[g] = p.valid;
        int lead_lanes = rp->share.lead_lanes;
        LLVMValueRef lead = axis == 1 ? LLVMBuildICmp(c->b, LLVMIntEQ, urem(c, c->lane, lead_lanes), i32c(c, 0), "")
                                      : LLVMBuildICmp(c->b, LLVMIntULT, c->lane, i32c(c, lead_lanes), "");
        Guard gd = guard_begin(c, and1(c, kept[g], lead));
        LLVMValueRef at = add(c, mul(c, rp->warp_index, len), pos[g]);
        smem_store_elem(c, buf, at, part[g].v, cdt);
        smem_store(c, buf, add(c, at, i32c(c, idx_at)), part[g].i);
        guard_end(c, gd);
    }
    smem_access(c, buf, false);
    for (int g = 0; g < rp->ngroups; g++) {
        LLVMValueRef at = kept[g] ? LLVMBuildSelect(c->b, kept[g], pos[g], i32c(c, 0), "") : pos[g];
        Pair best = arg_identity(c, max, cdt);
        for (int w = 0; w < nwarps; w++) {
            LLVMValueRef wat = add(c, at, i32c(c, (int64_t)w * len));
            Pair x = {smem_load_elem(c, buf, wat, cdt), smem_load(c, buf, add(c, wat, i32c(c, idx_at)))};
            best = arg_combine(c, max, isint, best, x);
        }
        part[g] = best;
    }
    free(pos);
    free(kept);
}

void emit_argreduce(Cg *c, const IrOp *op)
{
    ValueId src = op->args[0];
    IrType st = vtype(c, src);
    const Layout *out_l = c->plan.of[op->res[0]];
    DType cdt = compute_dt(st.dt);
    bool isint = cdt != DT_F32, max = op->kind == OP_ARGMAX;
    if (!out_l || out_l->kind != LAY_SLICE) {
        c->vals[op->res[0]] = argreduce_in_smem(c, op, max, cdt);
        return;
    }
    const Layout *l = out_l->parent;
    Slots s = cg_get(c, src, l);
    ReducePlan rp = reduce_plan(c, l, out_l, op->axis);
    Pair *part = xmalloc(sizeof *part * (size_t)rp.ngroups);
    for (int g = 0; g < rp.ngroups; g++) part[g] = arg_identity(c, max, cdt);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        Pair x = {isint ? s.v[k] : to_f32(c, s.v[k], st.dt), op->axis == 1 ? p.col : p.row};
        if (p.valid) {
            Pair none = arg_identity(c, max, cdt);
            x = (Pair){LLVMBuildSelect(c->b, p.valid, x.v, none.v, ""), LLVMBuildSelect(c->b, p.valid, x.i, none.i, "")};
        }
        part[rp.group[k]] = arg_combine(c, max, isint, part[rp.group[k]], x);
    }
    for (int g = 0; g < rp.ngroups; g++)
        for (int m = 0; m < rp.share.nmasks; m++) {
            int mask = rp.share.lane_masks[m];
            Pair other = {c->target->isa->shuffle_xor(c, part[g].v, mask, isint), c->target->isa->shuffle_xor(c, part[g].i, mask, true)};
            part[g] = arg_combine(c, max, isint, part[g], other);
        }
    if (rp.share.nwarps > 1) argreduce_across_warps(c, out_l, &rp, op->axis, max, cdt, part);
    Slots out = new_slots(rp.ngroups, out_l);
    for (int g = 0; g < rp.ngroups; g++) out.v[g] = part[g].i;
    c->vals[op->res[0]] = out;
    free(part);
    free(rp.group);
}
