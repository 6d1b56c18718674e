/* dce.c: dead code elimination. Removes ops whose results nobody uses and
 * that have no effect: everything but the ops ops.h marks IR_OP_EFFECT
 * (writes, returns, yields, the commits and waits of asynchronous copies,
 * which order the hardware: a wait's barrier protects ring slots), a for
 * or if whose regions have such an op, and every while (it may not end). Repeats until nothing changes,
 * so a chain of dead values goes entirely. Expects verified IR. */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

static bool region_has_effects(const IrBlock *b, int depth);

static bool has_effects(const IrOp *op, int depth)
{
    /* a while may never end: it stays, as the program would hang without it too */
    if (ir_op_is(op->kind, IR_OP_EFFECT) || op->kind == OP_WHILE) return true;
    if (!ir_op_is(op->kind, IR_OP_REGIONS)) return false;
    return depth > IR_MAX_DEPTH || region_has_effects(op->body, depth + 1) || region_has_effects(op->els, depth + 1);
}

static bool region_has_effects(const IrBlock *b, int depth)
{
    if (!b) return false;
    for (int i = 0; i < b->nops; i++) {
        IrOpKind k = b->ops[i]->kind;
        /* a region's own yield only passes values on */
        if (k != OP_YIELD && has_effects(b->ops[i], depth)) return true;
    }
    return false;
}

static void count_uses(const IrBlock *b, int *uses, int depth)
{
    if (!b || depth > IR_MAX_DEPTH) return;
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int k = 0; k < op->nargs; k++) uses[op->args[k]]++;
        count_uses(op->body, uses, depth + 1);
        count_uses(op->els, uses, depth + 1);
    }
}

static bool is_dead(const IrOp *op, const int *uses)
{
    if (has_effects(op, 0)) return false;
    for (int k = 0; k < op->nres; k++)
        if (uses[op->res[k]]) return false;
    return true;
}

/* Last op first, so an op's removal frees its operands' defs in the same sweep. */
static bool sweep(IrBlock *b, int *uses, int depth)
{
    if (!b || depth > IR_MAX_DEPTH) return false;
    bool changed = false;
    int keep = b->nops;
    for (int i = b->nops - 1; i >= 0; i--) {
        IrOp *op = b->ops[i];
        if (is_dead(op, uses)) {
            for (int k = 0; k < op->nargs; k++) uses[op->args[k]]--;
            b->ops[i] = NULL;
            keep--;
            changed = true;
            continue;
        }
        changed |= sweep(op->body, uses, depth + 1);
        changed |= sweep(op->els, uses, depth + 1);
    }
    if (keep != b->nops) {
        int j = 0;
        for (int i = 0; i < b->nops; i++)
            if (b->ops[i]) b->ops[j++] = b->ops[i];
        b->nops = j;
    }
    return changed;
}

void ir_dce(IrFunc *f)
{
    int *uses = xmalloc(sizeof *uses * (size_t)f->nvalues);
    /* each round removes at least one op, so this ends */
    for (bool changed = true; changed;) {
        memset(uses, 0, sizeof *uses * (size_t)f->nvalues);
        count_uses(f->body, uses, 0);
        changed = sweep(f->body, uses, 0);
    }
    free(uses);
}
