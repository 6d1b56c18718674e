/* warp_specialize.c: sm_90a's IR pass for @ph.warp_specialize: the ring
 * copies given to a producer thread past the tile code's threads, the rest
 * left to them (the consumers).
 *
 * Expects: IR after wgmma_async (a target pass, on the code generator's
 * copy of the function), f->producer_threads set.
 * Guarantees: f->producer is the producer's code, or NULL where the kernel
 * does not follow the protocol below (the producer's threads then exit at
 * once and the consumers run the body as without the option). The
 * producer's code is f->body less everything but its copies, commits,
 * returns, the loops and ifs that hold copies or returns, and the scalar ops they need
 * (their ValueIds are f->body's; a loop or if keeps only its scalar
 * carried values and results; ops are shared, not copied, where they are
 * kept whole, so values[].def stays f->body's). The protocol, which the
 * copy engine implements (copy_tma.c): every commit closes a group of at
 * least one copy, all into the same slot number of rings of at most 8
 * stages in all (rings committed together count once: ir_ring_channels); every wait that gives slots is WAIT_SLOTS_RELEASED (an async
 * dot reads them, whose engine releases them once its wgmma completed, or
 * a release_async follows their last reader), and every other wait gives
 * none (its groups are released once waited for). Before checking it the
 * pass places those releases: after the last op of a wait's block that
 * reads the wait's slots, where every reader is a dot of a warp-wide
 * engine (wgmma, mma.sync: each warp's reads are over when any of its
 * lanes goes on) and none carries a slot out of the block; attention's
 * loop, whose QK^T and PV dots read the K and V slots of one wait, is
 * such a block. A kernel that then does not follow the protocol gets its
 * IR back as it was. Everything the copies' windows and slots, and the conditions of
 * early returns, depend on is scalar control flow and scalar arithmetic,
 * which the producer runs itself (no while holds a copy or a return).
 * The producer also gets (PHOBOS_PRODUCER_ADDS=0 turns it off) the atomic adds of
 * f32 tiles into rank-2 tensors outside whiles whose window starts it
 * computes, flagged ADD_BY_PRODUCER: the consumers stage such a tile in
 * shared memory and the producer adds it (cg_store.c), so the adds'
 * address arithmetic and the wait for the copy engine's reads leave the
 * consumers' path. */
#include "codegen/dot.h"
#include "ir/irutil.h"
#include "nvidia/targets.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_WS_STAGES = 8 };   /* the copy engine's mbarrier pairs */

static bool holds_copies(const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_COPY_ASYNC || op->kind == OP_COMMIT_ASYNC) return true;
        if ((op->body && holds_copies(op->body)) || (op->els && holds_copies(op->els))) return true;
    }
    return false;
}

/* What the producer must run of b: copies, and returns, since a producer
 * that went on where the consumers returned would wait for ever for slots
 * nobody releases. */
static bool matters(const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_COPY_ASYNC || op->kind == OP_COMMIT_ASYNC || op->kind == OP_RETURN) return true;
        if (op->kind == OP_ATOMIC_ADD && (op->flags & ADD_BY_PRODUCER)) return true;
        if ((op->body && matters(op->body)) || (op->els && matters(op->els))) return true;
    }
    return false;
}

/* The adds the producer may take (ADD_BY_PRODUCER, set or cleared in b
 * and below): f32 tiles into rank-2 tensors, outside whiles (whose
 * trip counts the producer does not follow). */
static void mark_producer_adds(IrFunc *f, IrBlock *b, bool on)
{
    for (int i = 0; i < b->nops; i++) {
        IrOp *op = b->ops[i];
        if (op->kind == OP_ATOMIC_ADD) {
            IrType t = ir_vtype(f, op->args[op->nargs - 1]);
            bool fits = t.rank == 2 && t.dt == DT_F32 && f->params[op->param].rank == 2;
            op->flags = on && fits ? op->flags | ADD_BY_PRODUCER : op->flags & ~ADD_BY_PRODUCER;
        }
        if (op->kind == OP_WHILE) continue;
        if (op->body) mark_producer_adds(f, op->body, on);
        if (op->els) mark_producer_adds(f, op->els, on);
    }
}

/* Groups and waits as the protocol wants them, in b and below. */
static bool follows_protocol(const IrFunc *f, const IrBlock *b)
{
    ValueId slot = 0;
    int copies = 0;
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        switch (op->kind) {
        case OP_COPY_ASYNC:
            if (op->ival > MAX_WS_STAGES || (copies && op->args[op->nargs - 1] != slot)) return false;
            slot = op->args[op->nargs - 1], copies++;
            break;
        case OP_COMMIT_ASYNC:
            if (!copies) return false;
            copies = 0;
            break;
        case OP_WAIT_ASYNC:
            if (op->nargs && !(op->flags & WAIT_SLOTS_RELEASED)) return false;
            break;
        case OP_WHILE:
            if (matters(op->body) || matters(op->els)) return false;
            break;
        default: break;
        }
        if (op->kind != OP_WHILE && ((op->body && !follows_protocol(f, op->body)) || (op->els && !follows_protocol(f, op->els))))
            return false;
    }
    return copies == 0;   /* a group's copies and its commit in one block */
}

/* ---- releases after a wait's last reader ---- */

typedef struct {
    IrOp *wait;      /* flagged WAIT_SLOTS_RELEASED by place_releases */
    IrBlock *block;  /* which holds */
    IrOp *release;   /* the release_async it inserted */
} Placed;

enum { MAX_PLACED = 64 };

typedef struct {
    Placed at[MAX_PLACED];
    int n;
} Releases;

static bool is_result_of(const IrOp *wait, ValueId v)
{
    for (int i = 0; i < wait->nres; i++)
        if (wait->res[i] == v) return true;
    return false;
}

/* What reads a wait's slots: the wait, and the values built from its
 * slots where they are used (a vector ring's column turned and
 * broadcast: cg_values.c reads the slot where a user asks for the
 * value, so every op over such a value, and each if that yields one,
 * may be where the slot is read). */
typedef struct {
    const IrFunc *f;
    const IrOp *wait;
    bool *derived;   /* by value */
} SlotReads;

static bool from_slots(const SlotReads *r, ValueId v) { return is_result_of(r->wait, v) || r->derived[v]; }

static bool builds_where_used(IrOpKind k)
{
    switch (k) {
    case OP_TRANSPOSE: case OP_BROADCAST: case OP_RESHAPE:
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_FMA: case OP_CONVERT:
        return true;
    default: return false;
    }
}

static void mark_derived(SlotReads *r, const IrBlock *b, int from)
{
    for (int i = from; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        bool any = false;
        for (int j = 0; j < op->nargs; j++) any |= from_slots(r, op->args[j]);
        if (op->body) {
            if (any && op->kind == OP_FOR)
                for (int j = 0; j < op->body->nargs; j++) r->derived[op->body->args[j]] = true;
            mark_derived(r, op->body, 0);
        }
        if (op->els) mark_derived(r, op->els, 0);
        bool yields = false;
        for (int side = 0; side < 2 && op->kind == OP_IF; side++) {
            const IrBlock *br = side ? op->els : op->body;
            const IrOp *y = br && br->nops ? br->ops[br->nops - 1] : NULL;
            for (int j = 0; y && y->kind == OP_YIELD && j < y->nargs; j++) yields |= from_slots(r, y->args[j]);
        }
        if ((any && (builds_where_used(op->kind) || op->kind == OP_FOR)) || yields)
            for (int j = 0; j < op->nres; j++) r->derived[op->res[j]] = true;
    }
}

/* op, or an op of its regions, uses a slot wait gives; a wait_dots reads
 * what the issued dots it waits for read (their reads end there). */
static bool reads_slots(const SlotReads *r, const IrOp *op)
{
    for (int j = 0; j < op->nargs; j++) {
        if (from_slots(r, op->args[j])) return true;
        const IrOp *dot = op->kind == OP_WAIT_DOTS ? r->f->values[op->args[j]].def : NULL;
        if (dot && (from_slots(r, dot->args[0]) || from_slots(r, dot->args[1]))) return true;
    }
    for (int side = 0; side < 2; side++) {
        const IrBlock *b = side ? op->els : op->body;
        for (int i = 0; b && i < b->nops; i++)
            if (reads_slots(r, b->ops[i])) return true;
    }
    return false;
}

/* Every read of wait's slots in op and its regions ends in its warp once
 * any lane goes on past a bar.warp.sync: an operand of a dot that sm_90a
 * lowers with a warp-wide engine, or a vector ring's column read by each
 * thread (cg_values.c: a transpose of the slot, and what is built from
 * it), whose loads are the thread's own. A loop carrying such a value
 * on, or a slot read any other way, is not. */
static bool reads_end_in_warp(const SlotReads *r, const IrOp *op, bool in_loop_body)
{
    bool direct = false, built = false;
    for (int j = 0; j < op->nargs; j++) direct |= is_result_of(r->wait, op->args[j]), built |= r->derived[op->args[j]];
    if (op->kind == OP_DOT && (direct || built)) {
        const DotEngine *e = dot_engine_for(&nvidia_sm90a, r->f, op);
        if (from_slots(r, op->args[2]) || (e != &dot_wgmma && e != &dot_mma_sync)) return false;
    } else if (direct && (op->kind != OP_TRANSPOSE || ir_cols(ir_vtype(r->f, op->args[0])) != 1)) {
        return false;   /* only a column is read by threads (a vector ring's) */
    } else if ((direct || built) && op->kind == OP_YIELD && in_loop_body) {
        return false;
    }
    for (int side = 0; side < 2; side++) {
        const IrBlock *b = side ? op->els : op->body;
        for (int i = 0; b && i < b->nops; i++)
            if (!reads_end_in_warp(r, b->ops[i], op->kind == OP_FOR || op->kind == OP_WHILE)) return false;
    }
    return true;
}

static void place_releases(IrFunc *f, IrBlock *b, Releases *r)
{
    for (int i = 0; i < b->nops; i++) {
        IrOp *wait = b->ops[i];
        if (wait->body) place_releases(f, wait->body, r);
        if (wait->els) place_releases(f, wait->els, r);
        if (wait->kind != OP_WAIT_ASYNC || !wait->nargs || (wait->flags & WAIT_SLOTS_RELEASED) || r->n == MAX_PLACED) continue;
        SlotReads sr = {f, wait, xcalloc((size_t)f->nvalues + 1, sizeof(bool))};
        mark_derived(&sr, b, i + 1);
        int last = i;
        bool ok = true;
        for (int j = i + 1; j < b->nops && ok; j++)
            if (reads_slots(&sr, b->ops[j])) {
                ok = b->ops[j]->kind != OP_YIELD && reads_end_in_warp(&sr, b->ops[j], false);
                last = j;
            }
        free(sr.derived);
        if (!ok) continue;
        IrOp *release = ir_emit(f, NULL, OP_RELEASE_ASYNC, wait->nres, wait->res, 0, NULL);
        release->loc = b->ops[last]->loc;
        ir_block_insert(f, b, last + 1, release);
        wait->flags |= WAIT_SLOTS_RELEASED;
        r->at[r->n++] = (Placed){wait, b, release};
    }
}

/* The IR as it was before place_releases. */
static void remove_releases(Releases *r)
{
    for (int k = 0; k < r->n; k++) {
        Placed *p = &r->at[k];
        p->wait->flags &= ~WAIT_SLOTS_RELEASED;
        for (int i = 0; i < p->block->nops; i++)
            if (p->block->ops[i] == p->release) {
                ir_block_remove(p->block, i);
                break;
            }
    }
    r->n = 0;
}

typedef struct {
    IrFunc *f;
    bool *have;   /* by value: the producer computes it */
    bool ok;
} Ws;

static bool all_had(const Ws *w, const IrOp *op, int from, int to)
{
    for (int j = from; j < to; j++)
        if (!w->have[op->args[j]]) return false;
    return true;
}

static bool is_scalar(const Ws *w, ValueId v) { return w->f->values[v].type.rank == 0; }

/* A scalar op the producer may run as it is: pure, rank-0 results. */
static bool pure_scalar(const Ws *w, const IrOp *op)
{
    switch (op->kind) {
    case OP_CONST: case OP_PARAM: case OP_DIM: case OP_BLOCK_ID: case OP_GRID_DIM:
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_FMA: case OP_CONVERT:
        for (int j = 0; j < op->nres; j++)
            if (!is_scalar(w, op->res[j])) return false;
        return true;
    default: return false;
    }
}

static IrBlock *producer_block(Ws *w, const IrBlock *b, const IrOp *parent, const bool *keep);

static IrBlock *new_block(IrFunc *f, int nargs, const ValueId *args)
{
    IrBlock *nb = ir_block_new(f);
    nb->args = arena_alloc(f->arena, sizeof *nb->args * (size_t)(nargs + 1));
    nb->nargs = nargs;
    if (nargs) memcpy(nb->args, args, sizeof *args * (size_t)nargs);
    return nb;
}

static void append(IrFunc *f, IrBlock *b, IrOp *op) { ir_block_insert(f, b, b->nops, op); }

/* An op like op whose args, results and regions are the kept ones (no
 * value's def changes). */
static IrOp *shell(IrFunc *f, const IrOp *op, int nargs, const ValueId *args, int nres, const ValueId *res)
{
    IrOp *n = arena_alloc(f->arena, sizeof *n);
    *n = *op;
    n->nargs = nargs, n->nres = nres;
    n->args = arena_alloc(f->arena, sizeof *n->args * (size_t)(nargs + 1));
    n->res = arena_alloc(f->arena, sizeof *n->res * (size_t)(nres + 1));
    if (nargs) memcpy(n->args, args, sizeof *args * (size_t)nargs);
    if (nres) memcpy(n->res, res, sizeof *res * (size_t)nres);
    n->body = n->els = NULL;
    return n;
}

/* A for whose scalar carried values the producer computes: kept ones
 * (keep[i] for carried i) to a fixed point, as a carried value is kept
 * only where what its body yields is. */
static IrOp *producer_for(Ws *w, const IrOp *op)
{
    int ncar = op->nargs - 2;
    bool *keep = xcalloc((size_t)ncar + 1, sizeof *keep);
    for (int i = 0; i < ncar; i++) keep[i] = is_scalar(w, op->body->args[1 + i]) && w->have[op->args[2 + i]];
    IrBlock *body = NULL;
    for (bool changed = true; changed && w->ok;) {
        changed = false;
        w->have[op->body->args[0]] = true;
        for (int i = 0; i < ncar; i++) w->have[op->body->args[1 + i]] = keep[i];
        body = producer_block(w, op->body, op, keep);
        const IrOp *y = op->body->ops[op->body->nops - 1];
        for (int i = 0; i < ncar; i++)
            if (keep[i] && !w->have[y->args[i]]) keep[i] = false, changed = true;
    }
    ValueId *args = xcalloc((size_t)op->nargs + 1, sizeof *args), *res = xcalloc((size_t)op->nres + 1, sizeof *res),
            *bargs = xcalloc((size_t)op->nargs + 1, sizeof *bargs);
    int na = 2, nr = 0, nb = 1;
    args[0] = op->args[0], args[1] = op->args[1], bargs[0] = op->body->args[0];
    for (int i = 0; i < ncar; i++)
        if (keep[i]) args[na++] = op->args[2 + i], bargs[nb++] = op->body->args[1 + i], res[nr++] = op->res[i];
    IrOp *n = shell(w->f, op, na, args, nr, res);
    if (body) {
        body->args = arena_alloc(w->f->arena, sizeof *body->args * (size_t)(nb + 1));
        memcpy(body->args, bargs, sizeof *bargs * (size_t)nb);
        body->nargs = nb;
    }
    n->body = body;
    for (int i = 0; i < op->nres; i++) w->have[op->res[i]] = false;
    for (int i = 0; i < nr; i++) w->have[res[i]] = true;
    free(args), free(res), free(bargs), free(keep);
    return n;
}

/* An if with the scalar results both branches compute. */
static IrOp *producer_if(Ws *w, const IrOp *op)
{
    bool *keep = xcalloc((size_t)op->nres + 1, sizeof *keep);
    for (int i = 0; i < op->nres; i++) keep[i] = is_scalar(w, op->res[i]);
    IrBlock *then = NULL, *els = NULL;
    for (bool changed = true; changed && w->ok;) {
        changed = false;
        then = producer_block(w, op->body, op, keep);
        els = op->els ? producer_block(w, op->els, op, keep) : NULL;
        for (int side = 0; side < 2; side++) {
            const IrBlock *b = side ? op->els : op->body;
            if (!b || !b->nops || b->ops[b->nops - 1]->kind != OP_YIELD) continue;
            const IrOp *y = b->ops[b->nops - 1];
            for (int i = 0; i < op->nres && i < y->nargs; i++)
                if (keep[i] && !w->have[y->args[i]]) keep[i] = false, changed = true;
        }
    }
    ValueId *res = xcalloc((size_t)op->nres + 1, sizeof *res);
    int nr = 0;
    for (int i = 0; i < op->nres; i++)
        if (keep[i]) res[nr++] = op->res[i];
    IrOp *n = shell(w->f, op, 1, op->args, nr, res);
    n->body = then, n->els = els;
    for (int i = 0; i < op->nres; i++) w->have[op->res[i]] = keep[i];
    free(res), free(keep);
    return n;
}

static IrBlock *producer_block(Ws *w, const IrBlock *b, const IrOp *parent, const bool *keep)
{
    IrBlock *nb = new_block(w->f, b->nargs, b->args);
    for (int i = 0; i < b->nops && w->ok; i++) {
        const IrOp *op = b->ops[i];
        IrOp *n = NULL;
        if (op->kind == OP_YIELD && parent) {
            ValueId *args = xcalloc((size_t)op->nargs + 1, sizeof *args);
            int na = 0;
            for (int j = 0; j < op->nargs; j++)
                if (keep[j]) args[na++] = op->args[j];
            n = shell(w->f, op, na, args, 0, NULL);
            free(args);
        } else if (op->kind == OP_ATOMIC_ADD && (op->flags & ADD_BY_PRODUCER)) {
            /* the producer needs the window's starts; the tile is the consumers' */
            if (all_had(w, op, 0, op->nargs - 1)) n = (IrOp *)op;
            else ((IrOp *)op)->flags &= ~ADD_BY_PRODUCER;
        } else if (op->kind == OP_COPY_ASYNC || op->kind == OP_COMMIT_ASYNC || op->kind == OP_RETURN) {
            if (!all_had(w, op, 0, op->nargs)) w->ok = false;
            n = (IrOp *)op;
        } else if ((op->kind == OP_FOR || op->kind == OP_IF) && (matters(op->body) || (op->els && matters(op->els)))) {
            if (!all_had(w, op, 0, op->kind == OP_FOR ? 2 : 1)) w->ok = false;
            else n = op->kind == OP_FOR ? producer_for(w, op) : producer_if(w, op);
        } else if (pure_scalar(w, op) && all_had(w, op, 0, op->nargs)) {
            n = (IrOp *)op;
            for (int j = 0; j < op->nres; j++) w->have[op->res[j]] = true;
        } else {
            for (int j = 0; j < op->nres; j++) w->have[op->res[j]] = false;
        }
        if (n) append(w->f, nb, n);
    }
    return nb;
}

void warp_specialize(IrFunc *f)
{
    f->producer = NULL;
    if (!f->producer_threads || !holds_copies(f->body)) return;
    Releases r = {.n = 0};
    place_releases(f, f->body, &r);
    /* each channel's slots have barriers of their own (copy_tma.c) */
    int ring_chan[IR_MAX_RINGS], stages[IR_MAX_RINGS], total = 0;
    for (int ch = 0, n = ir_ring_channels(f, ring_chan, stages); ch < n; ch++) total += stages[ch];
    if (total > MAX_WS_STAGES || !follows_protocol(f, f->body)) {
        remove_releases(&r);
        return;
    }
    mark_producer_adds(f, f->body, env_switch("PHOBOS_PRODUCER_ADDS", true));
    Ws w = {f, xcalloc((size_t)f->nvalues + 1, sizeof(bool)), true};
    IrBlock *p = producer_block(&w, f->body, NULL, NULL);
    if (w.ok) {
        f->producer = p;
    } else {
        remove_releases(&r);
        mark_producer_adds(f, f->body, false);
    }
    free(w.have);
}
