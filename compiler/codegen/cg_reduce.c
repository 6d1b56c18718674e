/* cg_reduce.c: reductions along an axis of a tile.
 *
 * Expects: a source in a register layout and the result's SLICE layout.
 * Guarantees: the reduction runs in registers, then across lanes with
 * the target's shuffles, then across warps through a scratch buffer; every copy
 * of a result element holds the same value. */
#include "target.h"

#include <stdlib.h>

/* ---- reductions ---- */

static LLVMValueRef reduce_identity(Cg *c, IrReduce r, bool isint)
{
    if (isint) return i32c(c, r == RED_SUM ? 0 : r == RED_MAX ? INT32_MIN : INT32_MAX);
    /* the values that change nothing, so the result is the interpreter's,
     * which starts from the first element: max and min ignore a NaN operand
     * (an all-NaN set stays NaN, where -inf would win), and -0 + x is x for
     * every x (+0 would turn a sum of -0s into +0) */
    return f32c(c, r == RED_SUM ? -0.0 : __builtin_nan(""));
}

static LLVMValueRef reduce_combine(Cg *c, IrReduce r, bool isint, LLVMValueRef a, LLVMValueRef b)
{
    IrBinop op = r == RED_SUM ? BIN_ADD : r == RED_MAX ? BIN_MAX : BIN_MIN;
    return scalar_binop(c, op, isint ? DT_I32 : DT_F32, a, b);
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
    rp.warp_index = axis == 1 ? urem(c, c->warp, rp.share.warp_group) : udiv(c, c->warp, rp.share.warp_group);
    return rp;
}

void emit_reduce(Cg *c, const IrOp *op)
{
    ValueId src = op->args[0];
    IrType st = vtype(c, src), t = vtype(c, op->res[0]);
    const Layout *out_l = c->plan.of[op->res[0]];
    bool isint = st.dt == DT_I32;
    IrReduce r = op->sub;
    if (!out_l || out_l->kind != LAY_SLICE) {
        /* a reduction the layout pass left to shared memory: a thread per output element */
        Slots home = cg_get(c, src, reg_layout(c, src));
        int buf = tile_scratch(c, home.lay);
        slots_to_smem(c, &home, st.dt, buf);
        smem_access(c, buf, false);
        const Layout *l = home_layout(c, op->res[0]);
        Slots out = new_slots(layout_nslots(l), l);
        int R = ir_rows(st), C = ir_cols(st), len = op->axis == 1 ? C : R;
        for (int k = 0; k < out.n; k++) {
            SlotPos p = slot_pos(c, l, k);
            LLVMValueRef acc = reduce_identity(c, r, isint);
            LLVMValueRef base = op->axis == 1 ? mul(c, p.row, C) : p.col;
            if (p.valid) base = LLVMBuildSelect(c->b, p.valid, base, i32c(c, 0), "");
            for (int i = 0; i < len; i++) {
                LLVMValueRef w = smem_load(c, buf, add(c, base, i32c(c, (int64_t)i * (op->axis == 1 ? 1 : C))));
                acc = reduce_combine(c, r, isint, acc, isint ? w : LLVMBuildBitCast(c->b, w, c->tf32, ""));
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
    for (int g = 0; g < rp.ngroups; g++) part[g] = reduce_identity(c, r, isint);
    for (int k = 0; k < s.n; k++) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef x = isint ? s.v[k] : to_f32(c, s.v[k], st.dt);
        if (p.valid) x = LLVMBuildSelect(c->b, p.valid, x, reduce_identity(c, r, isint), "");
        part[rp.group[k]] = reduce_combine(c, r, isint, part[rp.group[k]], x);
    }
    for (int g = 0; g < rp.ngroups; g++)
        for (int m = 0; m < rp.share.nmasks; m++)
            part[g] = reduce_combine(c, r, isint, part[g], c->target->isa->shuffle_xor(c, part[g], rp.share.lane_masks[m], isint));
    int nwarps = rp.share.nwarps;
    if (nwarps > 1) {
        /* partials of the warps that share an output element meet in shared memory */
        int len = op->axis == 1 ? l->rows : l->cols;
        int buf = smem_buffer(c, SMEM_SCRATCH, (int64_t)nwarps * len * 4);
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
            LLVMValueRef w = isint ? part[g] : LLVMBuildBitCast(c->b, part[g], c->ti32, "");
            smem_store(c, buf, add(c, mul(c, rp.warp_index, len), pos[g]), w);
            guard_end(c, gd);
        }
        smem_access(c, buf, false);
        for (int g = 0; g < rp.ngroups; g++) {
            LLVMValueRef at = kept[g] ? LLVMBuildSelect(c->b, kept[g], pos[g], i32c(c, 0), "") : pos[g];
            LLVMValueRef acc = reduce_identity(c, r, isint);
            for (int w = 0; w < nwarps; w++) {
                LLVMValueRef x = smem_load(c, buf, add(c, at, i32c(c, (int64_t)w * len)));
                acc = reduce_combine(c, r, isint, acc, isint ? x : LLVMBuildBitCast(c->b, x, c->tf32, ""));
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
