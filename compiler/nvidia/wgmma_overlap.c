/* wgmma_overlap.c: sm_90a's IR pass: a loop's last dot carried into the
 * next iteration and issued there beside that iteration's first, so the
 * elementwise work between the two dots (attention's softmax) runs while
 * the tensor cores work (intra-warpgroup overlap).
 *
 * Expects: IR after the standard pipeline and wgmma-async, before
 * warp-specialize (whose protocol the result follows: every wait that gives
 * slots is WAIT_SLOTS_RELEASED, the engine's wait_dots releasing them once
 * the P V that read them completed). A for loop qualifies when its
 * body has exactly two dots, both at its top level and both wgmma's: the
 * first, S = dot(A, B, Z), with each operand a load from outside the loop,
 * a tile copied once (async.c's WAIT_ONCE) or a ring slot the body waits
 * for; the last, acc' = dot(P, V, X), with P
 * computed in the body (register A), V a slot the body waits for, X the
 * carried accumulator acc or one elementwise op R of it (the rescale)
 * used by nothing else, acc used by nothing else, and acc' only carried on;
 * and S's registers twice (S, and P twice in 16 bits) plus acc's at most
 * OVERLAP_REGS a thread (overlap_bound).
 * Guarantees: such a loop becomes, under the loop's own trip test,
 *   the first iteration without its last dot (X_0 = R(acc_0), P_0, V_0);
 *   for the others: wait for the slots; issue S_j and dot(P_{j-1},
 *   V_{j-1}, X_{j-1}); wait for S_j (the other group stays in flight); the
 *   elementwise work; wait for the last dot, then a block barrier (in
 *   wait_dots' lowering) before the body's refills, which overwrite
 *   V_{j-1}'s slot; X_j = R(that result); P_j, V_j carried on;
 *   after the loop the last dot of the last iteration.
 * The wait for the last dot stays in its iteration: P_{j-1} is a value the
 * loop carries, its registers written again at the back edge (P_j), so a
 * wgmma still reading them there computes with P_j's bytes (the wait at
 * the next iteration's top, tried as PHOBOS_WAIT_NEXT, gave wrong outputs
 * on the GPU; docs/performance.md, "twenty-third"; ir/verify.c refuses
 * such a loop). The wait is flagged WAIT_AFTER_WORK: ptxas would run it
 * before the elementwise work, at the top of its block, and the engine
 * holds it after (docs/performance.md, "twenty-fourth").
 * Each dot computes what it computed before, on the same operand values:
 * only when it runs moves. A trip count of zero yields the inits as the
 * loop did. By default only kernels with a producer whose warpgroups
 * take turns or whose ring has three stages (rotates_by_default). */
#include "codegen/dot.h"
#include "ir/irutil.h"
#include "nvidia/targets.h"

#include <stdlib.h>
#include <string.h>

enum { OVERLAP_REGS = 192, OVERLAP_REGS_WIDE = 240 };

/* PHOBOS_OVERLAP_WIDE=1 (off until timed on the GPU): a loop whose body
 * has no if (no mask's test: the masksplit pass's first loop) in a kernel
 * of at most two warpgroups (240 registers a consumer thread, isa.c; three
 * get 160) rotates up to OVERLAP_REGS_WIDE, FlashAttention-3's 128 x 176 at
 * head dim 128 (S 88, twice, and O 64: ptxas fits its loop without spills
 * once the masks are out of it; with them, 1108 bytes of spills,
 * docs/performance.md, "twentieth"). */
static int overlap_bound(const IrFunc *f, const IrBlock *body)
{
    if (f->threads > 256 || !env_switch("PHOBOS_OVERLAP_WIDE", false)) return OVERLAP_REGS;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->kind == OP_IF) return OVERLAP_REGS;
    return OVERLAP_REGS_WIDE;
}

typedef struct {
    IrOp *loop;
    int first, last;   /* the two dots' indices in the body */
    int acc;           /* the carried index (0-based) of the accumulator */
    IrOp *rescale;     /* R, or NULL where X is acc itself */
} Overlap;

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

static bool matches(const IrFunc *f, IrOp *loop, const bool *inside, Overlap *o)
{
    IrBlock *body = loop->body;
    int dots[3], nd = 0;
    for (int i = 0; i < body->nops; i++) {
        const IrOp *op = body->ops[i];
        if (ir_has_dot(op->body) || ir_has_dot(op->els)) return false;
        if (op->kind == OP_DOT) {
            if (nd == 2) return false;
            dots[nd++] = i;
        }
        if (op->kind == OP_WHILE || op->kind == OP_FOR || op->kind == OP_RETURN || op->kind == OP_RELEASE_ASYNC) return false;
    }
    if (nd != 2) return false;
    int copies = 0;   /* the refills that move after the wait for P V, every one of them */
    for (int i = 0; i < body->nops; i++) copies += body->ops[i]->kind == OP_COPY_ASYNC || body->ops[i]->kind == OP_COMMIT_ASYNC;
    if (copies > WGMMA_MAX_MOVED) return false;
    const IrOp *s = body->ops[dots[0]], *pv = body->ops[dots[1]], *yield = body->ops[body->nops - 1];
    if ((s->flags | pv->flags) & (DOT_ASYNC | DOT_ISSUED)) return false;
    if (!dot_wgmma.accepts(f, s) || !dot_wgmma.accepts(f, pv)) return false;
    /* S's operands lie in shared memory already (nothing written to scratch while a dot
     * runs): a slot the body waits for, or from outside the loop a load (staged once) or a
     * tile copied once (its slot never refilled) */
    for (int a = 0; a < 2; a++) {
        const IrOp *d = f->values[s->args[a]].def;
        bool outside_ok = d && (d->kind == OP_LOAD || (d->kind == OP_WAIT_ASYNC && (d->flags & WAIT_ONCE)));
        if (inside[s->args[a]] ? !ir_waited_slot(f, body, s->args[a]) : !outside_ok) return false;
    }
    /* P computed here (its register A needs no scratch), V a slot waited for */
    if (!inside[pv->args[0]] || ir_waited_slot(f, body, pv->args[0]) || !ir_waited_slot(f, body, pv->args[1])) return false;
    const IrOp *pd = f->values[pv->args[0]].def;
    if (!pd || pd->kind == OP_TRANSPOSE) return false;
    /* acc' only carried on, as carried value o->acc */
    if (uses_in(body, pv->res[0]) != 1) return false;
    o->acc = -1;
    for (int j = 0; j < yield->nargs; j++)
        if (yield->args[j] == pv->res[0]) o->acc = j;
    if (o->acc < 0) return false;
    ValueId acc = body->args[1 + o->acc], x = pv->args[2];
    o->rescale = NULL;
    if (x != acc) {
        IrOp *r = (IrOp *)f->values[x].def;
        int at = -1;
        for (int i = 0; i < body->nops; i++)
            if (body->ops[i] == r) at = i;
        if (at < 0 || !ir_op_is(r->kind, IR_OP_ELEMENTWISE) || uses_in(body, x) != 1) return false;
        int n = 0;
        for (int j = 0; j < r->nargs; j++) n += r->args[j] == acc;
        if (n != 1) return false;
        o->rescale = r;
    }
    if (uses_in(body, acc) != 1) return false;
    /* registers: a thread holds S and the accumulator, and P twice (the one in flight, the
     * next); past OVERLAP_REGS ptxas spills or serializes the wgmma, and the loop is better
     * left as it is (ptxas -v on the tuned forward's configs: every one under it fits 255
     * registers without spills, every one over it spills) */
    int64_t sregs = ir_numel(ir_vtype(f, s->res[0])) / f->threads, oregs = ir_numel(ir_vtype(f, pv->res[0])) / f->threads;
    if (2 * sregs + oregs > overlap_bound(f, body)) return false;
    o->loop = loop;
    o->first = dots[0];
    o->last = dots[1];
    return true;
}

static int index_of(const IrBlock *b, const IrOp *op)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i] == op) return i;
    return -1;
}

static IrOp *emit_const_i32(IrFunc *f, IrBlock *b, int64_t v)
{
    IrType t = ir_scalar(DT_I32);
    IrOp *c = ir_emit(f, b, OP_CONST, 0, NULL, 1, &t);
    c->ival = v;
    return c;
}

static IrOp *emit_binary(IrFunc *f, IrBlock *b, int kind, int sub, ValueId x, ValueId y, DType dt)
{
    ValueId args[2] = {x, y};
    IrType t = ir_scalar(dt);
    IrOp *op = ir_emit(f, b, (IrOpKind)kind, 2, args, 1, &t);
    op->sub = sub;
    return op;
}

/* The body's slot waits give slots the wait for P V releases; with a
 * producer, the first iteration's slots are released by the second's wait
 * for P V (or by the wait after the loop): its wait keeps no barrier for
 * them. */
static void flag_releases(IrFunc *f, IrBlock *body, IrBlock *then)
{
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->kind == OP_WAIT_ASYNC && body->ops[i]->nargs) body->ops[i]->flags |= WAIT_SLOTS_RELEASED;
    for (int i = 0; f->producer_threads && i < then->nops; i++)
        if (then->ops[i]->kind == OP_WAIT_ASYNC && then->ops[i]->nargs) then->ops[i]->flags |= WAIT_SLOTS_RELEASED;
}

/* Whether an op of b from index `from` on waits for ring slots (in a region of its own too). */
static bool waits_for_slots(const IrBlock *b, int from, int depth)
{
    for (int i = from; b && i < b->nops && depth < IR_MAX_DEPTH; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_WAIT_ASYNC && op->nargs) return true;
        if (waits_for_slots(op->body, 0, depth + 1) || waits_for_slots(op->els, 0, depth + 1)) return true;
    }
    return false;
}

/* After the loop (the then-block's last op), the last iteration's last dot
 * onto acc, P and V the loop carried out (its carried values ncar and ncar
 * + 1); the then-block yields the loop's values with it. With hand_back,
 * the slots every wait so far gave are released after that dot, their last
 * reader: a later loop over the same ring (masksplit's second) waits for
 * slots the producer refills only once released, and the last iteration's
 * slots and the next loop's first would otherwise be held together, one
 * more than the ring's stages where the second loop is short (a deadlock). */
static void last_dot_after(IrFunc *f, IrBlock *then, const Overlap *o, const IrOp *pv, int ncar, ValueId acc, bool hand_back)
{
    IrOp *loop = o->loop;
    ValueId last_args[3] = {loop->res[ncar], loop->res[ncar + 1], acc};
    IrOp *final = ir_clone_op(f, pv, last_args);
    final->flags &= ~(DOT_ISSUED | DOT_IN_TURN);
    ir_block_insert(f, then, then->nops, final);
    if (hand_back) ir_emit(f, then, OP_RELEASE_ASYNC, 0, NULL, 0, NULL)->loc = pv->loc;
    ValueId *out = xmalloc(sizeof *out * (size_t)(ncar + 1));
    for (int i = 0; i < ncar; i++) out[i] = i == o->acc ? final->res[0] : loop->res[i];
    ir_emit(f, then, OP_YIELD, ncar, out, 0, NULL);
    free(out);
}

/* S's wait (the other group stays in flight) after S and the issue of P V
 * put after S; S's uses read it. */
static void wait_for_s(IrFunc *f, IrBlock *body, IrOp *s, IrOp *issue)
{
    int si = index_of(body, s);
    ir_block_insert(f, body, si + 1, issue);
    IrOp *wait_s = ir_emit(f, NULL, OP_WAIT_DOTS, 1, &s->res[0], 1, (IrType[]){ir_vtype(f, s->res[0])});
    wait_s->ival = 1;
    wait_s->loc = s->loc;
    ir_replace_uses(body, s->res[0], wait_s->res[0]);
    wait_s->args[0] = s->res[0];
    ir_block_insert(f, body, si + 2, wait_s);
}

static void rotate(IrFunc *f, IrBlock *outer, int at, Overlap *o)
{
    IrOp *loop = o->loop;
    IrBlock *body = loop->body;
    IrOp *s = body->ops[o->first], *pv = body->ops[o->last], *yield = body->ops[body->nops - 1];
    int ncar = loop->nargs - 2, nvals = f->nvalues;
    ValueId iv = body->args[0];

    /* the guard and, in its then-block, the first iteration without its last dot */
    IrOp *test = emit_binary(f, NULL, OP_CMP, CMP_LT, loop->args[0], loop->args[1], DT_BOOL);
    IrType *types = xmalloc(sizeof *types * (size_t)(loop->nres + 1));
    for (int i = 0; i < loop->nres; i++) types[i] = ir_vtype(f, loop->res[i]);
    IrOp *guard = ir_emit(f, NULL, OP_IF, 1, &test->res[0], loop->nres, types);
    free(types);
    guard->loc = loop->loc;
    for (int i = 0; i < loop->nres; i++) ir_replace_uses(outer, loop->res[i], guard->res[i]);
    ir_block_remove(outer, at);
    ir_block_insert(f, outer, at, test);
    ir_block_insert(f, outer, at + 1, guard);
    IrBlock *then = ir_block_new(f), *els = ir_block_new(f);
    guard->body = then;
    guard->els = els;
    ir_emit(f, els, OP_YIELD, ncar, loop->args + 2, 0, NULL);

    ValueId *map = xcalloc((size_t)nvals + 1, sizeof *map);
    map[iv] = loop->args[0];
    for (int i = 0; i < ncar; i++) map[body->args[1 + i]] = loop->args[2 + i];
    for (int i = 0; i + 1 < body->nops; i++)
        if (i != o->last) ir_block_insert(f, then, then->nops, ir_clone_deep(f, body->ops[i], map, nvals + 1));
    ValueId *first_yield = xmalloc(sizeof *first_yield * (size_t)(ncar + 1));
    for (int i = 0; i < ncar; i++) first_yield[i] = yield->args[i] < nvals + 1 && map[yield->args[i]] ? map[yield->args[i]] : yield->args[i];
    ValueId x0 = map[pv->args[2]] ? map[pv->args[2]] : pv->args[2];
    first_yield[o->acc] = x0;
    ValueId p0 = map[pv->args[0]], v0 = map[pv->args[1]];

    /* the loop from the second iteration on: S issued, then the last dot of the iteration before */
    IrOp *step = emit_const_i32(f, then, loop->ival);
    IrOp *lb = emit_binary(f, then, OP_BINARY, BIN_ADD, loop->args[0], step->res[0], DT_I32);
    loop->args[0] = lb->res[0];
    for (int i = 0; i < ncar; i++) loop->args[2 + i] = first_yield[i];
    free(first_yield);
    ValueId p_prev = ir_for_add_carried(f, loop, p0, pv->args[0]);
    ValueId v_prev = ir_for_add_carried(f, loop, v0, pv->args[1]);
    yield = body->ops[body->nops - 1];
    ValueId acc = body->args[1 + o->acc];

    ir_block_remove(body, o->last);
    ValueId pv_args[3] = {p_prev, v_prev, acc};
    IrOp *issue = ir_clone_op(f, pv, pv_args);
    issue->flags |= DOT_ISSUED | DOT_IN_TURN;
    s->flags |= DOT_ISSUED | DOT_TURN_KEPT;   /* the pair in one turn, where warpgroups take turns */
    wait_for_s(f, body, s, issue);
    /* the last dot's wait where the dot was, then the refills, then the rescale of its result */
    IrOp *wait_pv = ir_emit(f, NULL, OP_WAIT_DOTS, 1, &issue->res[0], 1, (IrType[]){ir_vtype(f, issue->res[0])});
    wait_pv->ival = 0;
    wait_pv->flags |= WAIT_AFTER_WORK;
    wait_pv->loc = pv->loc;
    int wi = o->last + 2;   /* past the issue and the first wait put before it */
    ir_block_insert(f, body, wi++, wait_pv);
    IrOp *moved[WGMMA_MAX_MOVED];
    int nmoved = 0;
    for (int i = 0; i < body->nops && nmoved < WGMMA_MAX_MOVED;) {
        IrOpKind k = body->ops[i]->kind;
        if ((k == OP_COPY_ASYNC || k == OP_COMMIT_ASYNC) && i < wi) {
            moved[nmoved++] = body->ops[i];
            ir_block_remove(body, i);
            wi--;
        } else {
            i++;
        }
    }
    for (int i = 0; i < nmoved; i++) ir_block_insert(f, body, wi++, moved[i]);
    ValueId next_acc = wait_pv->res[0];
    if (o->rescale) {
        ir_block_remove(body, index_of(body, o->rescale));
        wi--;
        for (int j = 0; j < o->rescale->nargs; j++)
            if (o->rescale->args[j] == acc) o->rescale->args[j] = wait_pv->res[0];
        ir_block_insert(f, body, wi, o->rescale);
        next_acc = o->rescale->res[0];
    }
    yield->args[o->acc] = next_acc;
    flag_releases(f, body, then);

    ir_block_insert(f, then, then->nops, loop);
    last_dot_after(f, then, o, pv, ncar, loop->res[o->acc], f->producer_threads && waits_for_slots(outer, at + 2, 0));
    free(map);
}

/* PHOBOS_DOT_OVERLAP: 0 leaves every dot waited for where it is issued; 1
 * runs both passes on every kernel; unset (or any other value), the
 * default: wgmma_issue everywhere (it measured faster on the backward,
 * docs/performance.md, eleventh) and this pass's rotation where a
 * producer feeds the loop and either its warpgroups take turns or its
 * ring has three stages or more (rotates_by_default). The runtime's cache
 * keys include the switch. */
DotOverlap wgmma_overlap_mode(void)
{
    const char *v = getenv("PHOBOS_DOT_OVERLAP");
    if (v && !strcmp(v, "0")) return DOT_OVERLAP_NONE;
    if (v && !strcmp(v, "1")) return DOT_OVERLAP_ALL;
    return DOT_OVERLAP_DEFAULT;
}

static void overlap_block(IrFunc *f, IrBlock *b, int depth)
{
    for (int i = 0; i < b->nops; i++) {
        IrOp *op = b->ops[i];
        if (op->body && depth < IR_MAX_DEPTH) overlap_block(f, op->body, depth + 1);
        if (op->els && depth < IR_MAX_DEPTH) overlap_block(f, op->els, depth + 1);
        if (op->kind != OP_FOR) continue;
        bool *inside = xcalloc((size_t)f->nvalues + 1, sizeof *inside);
        ir_mark_defined(op->body, inside);
        Overlap o;
        if (matches(f, op, inside, &o)) {
            rotate(f, b, i, &o);
            i++;   /* the test, then the guard holding the loop */
        }
        free(inside);
    }
}

/* Where the rotation measured faster. With turns one warpgroup's softmax
 * runs under the other's P V and Q K^T, FlashAttention-3's schedule (2-4%
 * at head dim 128, eleventh); without them both warpgroups run their
 * softmax at once and the rotation paid nothing at two stages (tenth,
 * twenty-fourth) but 6% at three (head dim 64, 192 x 128, twenty-fifth):
 * a rotated iteration holds two groups of slots, K_j and V_{j-1}, so with
 * two stages the producer's next copy starts only when the iteration
 * ends. */
static bool rotates_by_default(const IrFunc *f)
{
    if (!f->producer_threads) return false;
    return (f->turns && f->threads >= 256) || f->stages >= 3;
}

void wgmma_overlap(IrFunc *f)
{
    DotOverlap m = wgmma_overlap_mode();
    if (m == DOT_OVERLAP_ALL || (m == DOT_OVERLAP_DEFAULT && rotates_by_default(f))) overlap_block(f, f->body, 0);
}
