/* licm.c: loop-invariant code motion. An op in a loop body whose operands
 * are all defined outside the loop moves before the loop, so it runs once:
 * the tutorial's `L[base + q0:+BR, 0:+1]` inside attn_bwd_dq's loop, the
 * splat of `scale`, index arithmetic.
 *
 * Expects: verified IR. Guarantees: the same results. Only ops without
 * effects move; a load (or gather) moves only when the kernel never writes its tensor
 * (so no store or atomic add in the loop can change what it reads);
 * integer // and % move only with a non-zero constant divisor, since a
 * hoisted op runs even when the loop runs zero times. A while's condition
 * and body are loop bodies alike. Inner loops are done first, so an op can
 * move out of several loops. */
#include "ir/irutil.h"

#include <stdlib.h>

static bool nonzero_constant(const IrFunc *f, ValueId v)
{
    const IrOp *d = f->values[v].def;
    return d && d->kind == OP_CONST && (ir_is_float(ir_vtype(f, v).dt) ? d->fval != 0 : d->ival != 0);
}

static bool movable(const IrFunc *f, const IrOp *op, const bool *stored)
{
    if (op->kind == OP_LOAD || op->kind == OP_GATHER) return !stored[op->param];
    if (!ir_op_is(op->kind, IR_OP_PURE)) return false;
    /* the one pure op that can trap, were it hoisted out of a loop that runs zero times */
    if (op->kind == OP_BINARY && (op->sub == BIN_FLOORDIV || op->sub == BIN_MOD) && !ir_is_float(ir_vtype(f, op->args[1]).dt))
        return nonzero_constant(f, op->args[1]);
    return true;
}

static void licm_block(IrFunc *f, IrBlock *blk, const bool *stored);

/* Moves what it can out of region body of loop op (at index *pos of parent). */
static void hoist_from(IrFunc *f, IrBlock *parent, int *pos, IrOp *loop, IrBlock *body, const bool *stored)
{
    bool *inside = xcalloc((size_t)f->nvalues + 1, sizeof *inside);
    ir_mark_defined(loop->body, inside);
    if (loop->els) ir_mark_defined(loop->els, inside);
    for (int i = 0; i < body->nops;) {
        IrOp *op = body->ops[i];
        bool invariant = movable(f, op, stored);
        for (int j = 0; j < op->nargs && invariant; j++)
            if (inside[op->args[j]]) invariant = false;
        if (!invariant) { i++; continue; }
        ir_block_remove(body, i);
        ir_block_insert(f, parent, (*pos)++, op);
        for (int j = 0; j < op->nres; j++) inside[op->res[j]] = false;
    }
    free(inside);
}

static void licm_block(IrFunc *f, IrBlock *blk, const bool *stored)
{
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        if (op->body) licm_block(f, op->body, stored);
        if (op->els) licm_block(f, op->els, stored);
        if (op->kind == OP_FOR) hoist_from(f, blk, &i, op, op->body, stored);
        /* a while's condition and body, by the same rule: its body may run zero times too */
        if (op->kind == OP_WHILE) {
            hoist_from(f, blk, &i, op, op->body, stored);
            hoist_from(f, blk, &i, op, op->els, stored);
        }
    }
}

void ir_licm(IrFunc *f)
{
    bool *stored = ir_stored_params(f);
    licm_block(f, f->body, stored);
    free(stored);
}
