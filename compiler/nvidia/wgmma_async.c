/* wgmma_async.c: sm_90a's IR pass: a K loop's wgmma left in flight while
 * the next iteration's copies are issued and waited for.
 *
 * Expects: IR after the standard pipeline (the async pass's rings: a loop
 * body that waits for its ring slots, refills the slots the previous
 * iteration read, then computes).
 * Guarantees: in a loop whose one dot the wgmma engine takes, reads both
 * operands from the ring slots the body waits for, and feeds nothing but
 * the loop's carried accumulator, the dot is DOT_ASYNC (its engine waits
 * for the previous iteration's group after issuing it, and the loop's end
 * for the last) and the body's copies and commits come after it: a slot is
 * refilled only once the wgmma that read it has completed; the waits the
 * dot's operands come from are WAIT_SLOTS_RELEASED (their barrier is the
 * copy engine's to keep or drop). Other loops are left as they are. */
#include "codegen/dot.h"
#include "ir/irutil.h"
#include "nvidia/targets.h"

static int count_dots(const IrBlock *b)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++) {
        n += b->ops[i]->kind == OP_DOT;
        if (b->ops[i]->body) n += count_dots(b->ops[i]->body);
        if (b->ops[i]->els) n += count_dots(b->ops[i]->els);
    }
    return n;
}

static int uses_in(const IrBlock *b, ValueId v)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int j = 0; j < op->nargs; j++) n += op->args[j] == v;
        if (op->body) n += uses_in(op->body, v);
        if (op->els) n += uses_in(op->els, v);
    }
    return n;
}

/* The index of the body's one dot that can run on, or -1. */
static int async_candidate(const IrFunc *f, const IrBlock *body)
{
    if (count_dots(body) != 1) return -1;
    int at = -1;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->kind == OP_DOT) at = i;
    if (at < 0) return -1;   /* the dot is nested deeper */
    const IrOp *dot = body->ops[at], *yield = body->ops[body->nops - 1];
    if (!dot_wgmma.accepts(f, dot)) return -1;
    int copies = 0;   /* async_loop moves every copy and commit before the dot after it */
    for (int i = 0; i < at; i++) copies += body->ops[i]->kind == OP_COPY_ASYNC || body->ops[i]->kind == OP_COMMIT_ASYNC;
    if (copies > WGMMA_MAX_MOVED) return -1;
    for (int a = 0; a < 2; a++) {
        const IrOp *d = f->values[dot->args[a]].def;
        if (!d || d->kind != OP_WAIT_ASYNC || (d->flags & WAIT_ONCE)) return -1;   /* a tile copied once stays */
    }
    /* acc: carried value j, and the dot's result is what the yield carries on, and only that */
    for (int j = 1; j < body->nargs; j++)
        if (body->args[j] == dot->args[2])
            return yield->args[j - 1] == dot->res[0] && uses_in(body, dot->res[0]) == 1 && uses_in(body, dot->args[2]) == 1 ? at : -1;
    return -1;
}

static void async_loop(IrFunc *f, IrOp *loop)
{
    IrBlock *body = loop->body;
    int at = async_candidate(f, body);
    if (at < 0) return;
    IrOp *dot = body->ops[at];
    /* the copies and commits before the dot, in order, to just after it */
    IrOp *moved[WGMMA_MAX_MOVED];
    int nmoved = 0;
    for (int i = 0; i < at && nmoved < WGMMA_MAX_MOVED;) {
        IrOpKind k = body->ops[i]->kind;
        if (k == OP_COPY_ASYNC || k == OP_COMMIT_ASYNC) {
            moved[nmoved++] = body->ops[i];
            ir_block_remove(body, i);
            at--;
        } else {
            i++;
        }
    }
    for (int i = 0; i < nmoved; i++) ir_block_insert(f, body, at + 1 + i, moved[i]);
    dot->flags |= DOT_ASYNC;
    /* the refills now follow the dot's release of the slots they overwrite */
    for (int a = 0; a < 2; a++) ((IrOp *)f->values[dot->args[a]].def)->flags |= WAIT_SLOTS_RELEASED;
}

static void async_block(IrFunc *f, IrBlock *b)
{
    for (int i = 0; i < b->nops; i++) {
        IrOp *op = b->ops[i];
        if (op->body) async_block(f, op->body);
        if (op->els) async_block(f, op->els);
        if (op->kind == OP_FOR) async_loop(f, op);
    }
}

void wgmma_async(IrFunc *f) { async_block(f, f->body); }
