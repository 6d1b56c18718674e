/* wgmma_issue.c: sm_90a's IR pass: within one iteration of a loop, each
 * wgmma dot issued as early as its operands allow and waited for only
 * where its result is first read, so independent dots run together and
 * the elementwise work between them runs beside them (attention's backward:
 * dP^T = V dO^T issued with S^T = K Q^T, P^T computed while it runs).
 *
 * Expects: IR after wgmma-overlap (loops it rotated hold issued dots and
 * are left alone), before warp-specialize (which places a slot's release
 * after the wait_dots of the dots that read it). A for loop qualifies when
 * its body has at least two dots, all at its top level, none flagged, all
 * wgmma's. An operand that goes through scratch (the fused backward's dS
 * for dQ = dS K, written from dS^T's registers) is written where the dot
 * issues; the engine keeps that scratch live up to the dot's wait_dots, so
 * the shared-memory plan gives its bytes to nothing else while it runs.
 * Guarantees: the dots keep their operands and become DOT_ISSUED, each
 * moved up to just after the last op its operands come from (hoist says
 * how they order); a wait_dots before the first op that reads each result
 * (pending: the dots issued after it by then), or, for a dot whose result
 * is only stored or atomically added, before the next dot issues (its
 * stores then run beside that dot), and ones of pending 0 for
 * the rest before the yield, so nothing of a dot is in flight at the
 * iteration's end (ptxas sees no group cross the back edge) and
 * the body's refills at the next iteration's start (after its wait's
 * barrier) find every slot read. A loop where no tile op would run between
 * a dot and its wait is left as it is. On by default; PHOBOS_DOT_OVERLAP=0
 * turns it off (wgmma_overlap_mode). */
#include "codegen/dot.h"
#include "ir/irutil.h"
#include "nvidia/targets.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_DOTS = 16 };

/* The index of the top-level op of body that defines v (itself or in its regions); -1 outside. */
static int defined_at(const IrBlock *body, const bool *inside, ValueId v)
{
    if (!inside[v]) return -1;
    for (int i = 0; i < body->nops; i++) {
        const IrOp *op = body->ops[i];
        for (int r = 0; r < op->nres; r++)
            if (op->res[r] == v) return i;
    }
    return -1;   /* a block argument */
}

static bool qualifies(const IrFunc *f, const IrBlock *body, int *dots, int *n)
{
    *n = 0;
    for (int i = 0; i < body->nops; i++) {
        const IrOp *op = body->ops[i];
        if (op->kind == OP_FOR || op->kind == OP_WHILE || op->kind == OP_RETURN || op->kind == OP_WAIT_DOTS) return false;
        if (ir_has_dot(op->body) || ir_has_dot(op->els)) return false;
        if (op->kind != OP_DOT) continue;
        if (*n == MAX_DOTS || (op->flags & (DOT_ASYNC | DOT_ISSUED)) || !dot_wgmma.accepts(f, op)) return false;
        dots[(*n)++] = i;
    }
    return *n >= 2;
}

/* Whether every op of body that reads v writes it to memory as the value
 * of a store or an atomic add (the fused backward's dQ share): nothing
 * else in the iteration waits for it. */
static bool written_out_only(const IrBlock *body, ValueId v)
{
    int n = 0;
    for (int i = 0; i < body->nops; i++) {
        const IrOp *op = body->ops[i];
        if (!ir_op_uses(op, v)) continue;
        if ((op->kind != OP_STORE && op->kind != OP_ATOMIC_ADD) || op->args[op->nargs - 1] != v) return false;
        for (int j = 0; j + 1 < op->nargs; j++)
            if (op->args[j] == v) return false;
        n++;
    }
    return n > 0;
}

/* How many ops of body read v. */
static int readers(const IrBlock *body, ValueId v)
{
    int n = 0;
    for (int i = 0; i < body->nops; i++) n += ir_op_uses(body->ops[i], v);
    return n;
}

typedef struct {
    IrBlock *body;
    const int *dots, *owner, *anchor;
    const bool *out_only;   /* dot k's result only written out (written_out_only) */
    int n;
    bool *placed;
    IrOp **out;
    int m;
} Order;

/* The dots anchored at op at (-1: the body's start) in program order, each
 * after the ops it brings and followed by the dots anchored at it; a dot
 * only written out goes first (issue_loop waits for it before the next
 * issues, so its stores run beside the others). */
static void place_dots(Order *o, int at)
{
    for (;;) {
        int best = -1;
        for (int k = 0; k < o->n && best < 0; k++)
            if (!o->placed[k] && o->anchor[k] == at && o->out_only[k]) best = k;
        for (int k = 0; k < o->n && best < 0; k++)
            if (!o->placed[k] && o->anchor[k] == at) best = k;
        if (best < 0) return;
        o->placed[best] = true;
        for (int i = 0; i < o->dots[best]; i++)
            if (o->owner[i] == best) o->out[o->m++] = o->body->ops[i];
        o->out[o->m++] = o->body->ops[o->dots[best]];
        place_dots(o, o->dots[best]);
    }
}

/* Moves each dot up to just after the last op its operands come from, with
 * the transposes and converts that only its operand reads (the layout pass
 * folds them into the operand's write to shared memory: dS for dQ = dS K),
 * so a dot passes another that still waits for its operands (dP^T past dV
 * in dK/dV). Dots ready at one point keep the program's order, except that
 * one only written out goes first. The other ops keep their order; dots[]
 * follows. */
static void hoist(IrBlock *body, const bool *inside, int *dots, int n)
{
    int nops = body->nops, anchor[MAX_DOTS];
    int *owner = xmalloc(sizeof *owner * (size_t)nops);   /* the dot an op goes with, -1 none */
    for (int i = 0; i < nops; i++) owner[i] = -1;
    for (int k = 0; k < n; k++) owner[dots[k]] = k;
    for (int k = 0; k < n; k++) {
        const IrOp *dot = body->ops[dots[k]];
        anchor[k] = -1;
        for (int a = 0; a < 3; a++) {
            ValueId v = dot->args[a];
            int at = defined_at(body, inside, v);
            while (at >= 0 && owner[at] < 0 && (body->ops[at]->kind == OP_TRANSPOSE || body->ops[at]->kind == OP_CONVERT) &&
                   readers(body, v) == 1) {
                owner[at] = k;
                v = body->ops[at]->args[0];
                at = defined_at(body, inside, v);
            }
            if (at > anchor[k]) anchor[k] = at;
        }
    }
    bool placed[MAX_DOTS] = {false}, out_only[MAX_DOTS];
    for (int k = 0; k < n; k++) out_only[k] = written_out_only(body, body->ops[dots[k]]->res[0]);
    Order o = {body, dots, owner, anchor, out_only, n, placed, xmalloc(sizeof *o.out * (size_t)nops), 0};
    place_dots(&o, -1);
    for (int i = 0; i < nops; i++) {
        if (owner[i] >= 0) continue;
        o.out[o.m++] = body->ops[i];
        place_dots(&o, i);
    }
    for (int k = 0; k < n; k++)
        for (int i = 0; i < nops; i++)
            if (o.out[i] == body->ops[dots[k]]) {
                dots[k] = i;
                break;
            }
    memcpy(body->ops, o.out, sizeof *o.out * (size_t)nops);
    free(o.out);
    free(owner);
}

static void replace_from(IrBlock *body, int from, ValueId old, ValueId new)
{
    for (int i = from; i < body->nops; i++) {
        IrOp *op = body->ops[i];
        for (int j = 0; j < op->nargs; j++)
            if (op->args[j] == old) op->args[j] = new;
        if (op->body) ir_replace_uses(op->body, old, new);
        if (op->els) ir_replace_uses(op->els, old, new);
    }
}

static bool is_tile_op(const IrFunc *f, const IrOp *op)
{
    if (op->body || op->els) return true;
    for (int r = 0; r < op->nres; r++)
        if (ir_vtype(f, op->res[r]).rank > 0) return true;
    return false;
}

/* Whether some tile op lies between each issued dot and its first reader:
 * otherwise waiting at once is all the loop can do. */
static bool gains(const IrFunc *f, const IrBlock *body, const int *dots, int n)
{
    for (int k = 0; k < n; k++) {
        ValueId r = body->ops[dots[k]]->res[0];
        for (int i = dots[k] + 1; i < body->nops && !ir_op_uses(body->ops[i], r); i++)
            if (body->ops[i]->kind == OP_DOT || is_tile_op(f, body->ops[i])) return true;
    }
    return false;
}

static void issue_loop(IrFunc *f, IrBlock *body)
{
    bool *inside = xcalloc((size_t)f->nvalues + 1, sizeof *inside);
    ir_mark_defined(body, inside);
    int dots[MAX_DOTS], n;
    if (!qualifies(f, body, dots, &n)) {
        free(inside);
        return;
    }
    /* the order tried on a copy of the op list, kept where it gains */
    IrBlock trial = *body;
    trial.ops = xmalloc(sizeof *trial.ops * (size_t)body->nops);
    memcpy(trial.ops, body->ops, sizeof *trial.ops * (size_t)body->nops);
    trial.cap = body->nops;
    hoist(&trial, inside, dots, n);
    free(inside);
    if (!gains(f, &trial, dots, n)) {
        free(trial.ops);
        return;
    }
    memcpy(body->ops, trial.ops, sizeof *trial.ops * (size_t)body->nops);
    free(trial.ops);
    /* in the order they issue (a group completes after every older one) */
    IrOp *issued[MAX_DOTS];
    int nissued = 0, m = 0;
    for (int k = 0; k < n; k++) body->ops[dots[k]]->flags |= DOT_ISSUED;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->kind == OP_DOT) issued[m++] = body->ops[i];
    bool waited[MAX_DOTS] = {false};
    bool out_only[MAX_DOTS];
    for (int k = 0; k < m; k++) out_only[k] = written_out_only(body, issued[k]->res[0]);
    for (int i = 0; i < body->nops; i++) {
        IrOp *op = body->ops[i];
        bool issue = op->kind == OP_DOT && (op->flags & DOT_ISSUED);
        bool end = op->kind == OP_YIELD;
        /* a dot only written out is waited for before the next dot issues
         * (pending 0), so its stores run while that one does: the dQ
         * share's adds beside dK. Read after a wait that leaves a younger
         * dot running instead (wait_group 1), the fifteenth session's ptxas
         * serialized the loop's wgmmas (C7514); CUDA 13's does not, but it
         * measured no faster (docs/performance.md, "thirty-fifth"). */
        for (int k = 0; k < nissued; k++) {
            if (waited[k] || (!end && !(issue && out_only[k]) && !ir_op_uses(op, issued[k]->res[0]))) continue;
            IrType t = ir_vtype(f, issued[k]->res[0]);
            IrOp *w = ir_emit(f, NULL, OP_WAIT_DOTS, 1, &issued[k]->res[0], 1, &t);
            w->ival = end ? 0 : nissued - 1 - k;   /* the back edge sees no group in flight (ptxas: C7517) */
            w->loc = op->loc;
            ir_block_insert(f, body, i, w);
            replace_from(body, i + 1, issued[k]->res[0], w->res[0]);
            waited[k] = true;
            i++;
        }
        nissued += issue;
    }
}

static void issue_block(IrFunc *f, IrBlock *b, int depth)
{
    for (int i = 0; i < b->nops; i++) {
        IrOp *op = b->ops[i];
        if (op->body && depth < IR_MAX_DEPTH) issue_block(f, op->body, depth + 1);
        if (op->els && depth < IR_MAX_DEPTH) issue_block(f, op->els, depth + 1);
        if (op->kind == OP_FOR) issue_loop(f, op->body);
    }
}

void wgmma_issue(IrFunc *f)
{
    if (wgmma_overlap_mode() != DOT_OVERLAP_NONE) issue_block(f, f->body, 0);
}
