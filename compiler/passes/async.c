/* async.c: the loads of a loop that feed tensor-core dots become
 * asynchronous copies into shared-memory rings of S slots (S: the
 * function's stages, @ph.stages). The copies for the first S-1 iterations
 * are issued before the loop; iteration i waits for its own (all but the
 * S-2 youngest groups, then a barrier), and then issues those of iteration
 * i+S-1 into the slot that iteration i-1 read. So S-1 tiles are in flight
 * while the block computes, and one barrier per iteration both publishes
 * the arrived tile and retires the slot about to be refilled. A dot reads
 * its operand straight from the ring (ldmatrix); nothing passes through
 * registers.
 *
 *   copies of iterations 0 .. S-2 into slots 0 .. S-2; commit each
 *   for iv, (tiles of iterations iv .. iv+S-2, write slot w = S-1):
 *       tile = wait_async (tile of iv), pending S-2
 *       copy of iteration iv+S-1 into slot w; commit
 *       ... the body, reading tile ...
 *       yield (tiles of iv+1 .. iv+S-1, w + 1 mod S)
 *   wait_async pending 0
 *
 * Expects: verified IR, after licm; runs dce first, since the waits and
 * commits it adds keep their loop alive. Guarantees: the same values (a copy
 * means what its load meant; the copies of iterations past the loop's
 * range read windows nobody uses, zero-filled where they leave the
 * tensor); the ring slots' contents are each read only between the wait
 * that publishes them and the next wait's barrier. A load moves only when
 * the kernel never writes its tensor, its window follows from the loop
 * counter, every use is an operand of a dot on the tensor cores, and its
 * rows are whole 16-byte chunks. The rings of a function take at most
 * ASYNC_BUDGET bytes; loads past it stay for the register pipeline.
 *
 * PHOBOS_COPY_ONCE=1 (off: timed slower, docs/performance.md "fortieth"):
 * the function body's own loads (outside every loop) that only tensor-core
 * dots read, and that the rules above would take, are copied once, into
 * rings of one stage: one group of copies where the last of them was
 * loaded, its commit, and a WAIT_ONCE wait just before the first op that
 * reads one of them (the loops' first copies in between stay in flight, the
 * pending count counting them). With a producer warp the copy is the
 * producer's, so a block's first tile (attention's Q, the dK/dV kernel's K
 * and V) no longer passes through the consumers' registers. Nothing moves
 * where a return may come between the copy and its wait. Such a tile takes
 * the shared memory its dot would have staged it in, so it is not counted
 * in ASYNC_BUDGET.
 */
#include "ir/irutil.h"
#include "layout/layout.h"

#include <stdlib.h>
#include <string.h>

enum { ASYNC_BUDGET = 192 * 1024, ASYNC_DEFAULT_STAGES = 2 };

typedef struct {
    IrFunc *f;
    int stages;
    bool *stored;
    int *uses, *tc_uses;   /* by value: all uses, uses as a tensor-core dot's A or B */
    int *bcast_uses;       /* by value: uses by broadcasts */
    int64_t ring_bytes;
    int nrings;
} Async;

static void count_uses(const IrFunc *f, const IrBlock *b, int *uses, int *tc_uses, int *bcast_uses)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        bool tc = op->kind == OP_DOT && layout_dot_on_tensorcores(f, op);
        for (int j = 0; j < op->nargs; j++) {
            uses[op->args[j]]++;
            if (tc && j < 2) tc_uses[op->args[j]]++;
            if (op->kind == OP_BROADCAST) bcast_uses[op->args[j]]++;
        }
        if (op->body) count_uses(f, op->body, uses, tc_uses, bcast_uses);
        if (op->els) count_uses(f, op->els, uses, tc_uses, bcast_uses);
    }
}

static bool has_return(const IrBlock *b)
{
    for (int i = 0; b && i < b->nops; i++)
        if (b->ops[i]->kind == OP_RETURN || has_return(b->ops[i]->body) || has_return(b->ops[i]->els)) return true;
    return false;
}

/* Shared-memory bytes of one slot, laid out as the code generator lays rings out. */
static int64_t slot_bytes(IrType t)
{
    if (ir_cols(t) == 1) return (int64_t)ir_rows(t) * ir_dtype_bytes(t.dt);   /* a column: plain (layout.c) */
    return layout_shared_bytes(ir_rows(t), ir_cols(t), ir_dtype_bytes(t.dt));
}

/* Whether every use of v in b and below is a transpose that only
 * broadcasts read (the backward's L and Delta: a column of the scores'
 * rows, turned and stretched over S^T). */
static bool only_transposed_broadcasts(const Async *a, const IrBlock *b, ValueId v)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int j = 0; j < op->nargs; j++)
            if (op->args[j] == v && (op->kind != OP_TRANSPOSE || a->uses[op->res[0]] == 0 ||
                                     a->uses[op->res[0]] != a->bcast_uses[op->res[0]]))
                return false;
        if ((op->body && !only_transposed_broadcasts(a, op->body, v)) || (op->els && !only_transposed_broadcasts(a, op->els, v)))
            return false;
    }
    return true;
}

/* PHOBOS_VECTOR_RING (on by default; =0 leaves it out): a column of f32
 * (a [BR, 1] window of a one-column tensor, so BR contiguous floats)
 * read only through transposes that broadcasts read goes through a ring
 * as well, read by each thread straight from its slot in the layout the
 * broadcast wants: no exchange through scratch and no barrier for it, and
 * with a producer warp its copy is the producer's (FlashAttention-3 loads
 * its log-sum-exp and dO.O rows so). */
static bool vector_wanted(Async *a, const IrOp *load, IrType t)
{
    const IrParam *p = &a->f->params[load->param];
    if (!env_switch("PHOBOS_VECTOR_RING", true) || t.dt != DT_F32 || t.shape[1] != 1 || p->dim_name[1] || p->dim_value[1] != 1) return false;
    return t.shape[0] % 4 == 0 && a->uses[load->res[0]] > 0 && only_transposed_broadcasts(a, a->f->body, load->res[0]);
}

static bool wanted(Async *a, const IrOp *load)
{
    if (load->kind != OP_LOAD || a->stored[load->param]) return false;
    ValueId r = load->res[0];
    IrType t = ir_vtype(a->f, r);
    if (a->f->params[load->param].rank != 2 || t.rank != 2) return false;
    if (vector_wanted(a, load, t)) return true;
    if (((int64_t)t.shape[1] * ir_dtype_bytes(t.dt)) % 16) return false;
    if (ir_is_storage(t.dt)) return false;   /* the copy engines move 16- and 32-bit elements */
    return a->uses[r] > 0 && a->uses[r] == a->tc_uses[r];
}

static ValueId emit_const(IrFunc *f, IrBlock *b, int *pos, int64_t v)
{
    IrType i32 = ir_scalar(DT_I32);
    IrOp *k = ir_emit(f, NULL, OP_CONST, 0, NULL, 1, &i32);
    k->ival = v;
    ir_block_insert(f, b, (*pos)++, k);
    return k->res[0];
}

static ValueId emit_binary(IrFunc *f, IrBlock *b, int *pos, IrBinop op, ValueId x, ValueId y)
{
    IrType i32 = ir_scalar(DT_I32);
    ValueId xy[2] = {x, y};
    IrOp *o = ir_emit(f, NULL, OP_BINARY, 2, xy, 1, &i32);
    o->sub = op;
    ir_block_insert(f, b, (*pos)++, o);
    return o->res[0];
}

static void emit_commit(IrFunc *f, IrBlock *b, int *pos)
{
    ir_block_insert(f, b, (*pos)++, ir_emit(f, NULL, OP_COMMIT_ASYNC, 0, NULL, 0, NULL));
}

/* The copy of load's window at iteration `at` (the window's scalar chain,
 * marked in need, copied with iv replaced) into ring slot `slot`. */
static ValueId emit_copy(IrFunc *f, IrBlock *body, const IrOp *load, const bool *need, int nneed, ValueId iv,
                         ValueId at, ValueId slot, int ring, int stages, IrBlock *blk, int *pos)
{
    ValueId *map = xcalloc((size_t)f->nvalues + 1, sizeof *map);
    ir_copy_marked(f, body, need, nneed, iv, at, blk, pos, map);
    ValueId args[3];
    for (int j = 0; j < 2; j++) args[j] = map[load->args[j]] ? map[load->args[j]] : load->args[j];
    args[2] = slot;
    free(map);
    IrType t = ir_vtype(f, load->res[0]);
    IrOp *c = ir_emit(f, NULL, OP_COPY_ASYNC, 3, args, 1, &t);
    c->param = load->param;
    c->axis = ring;
    c->ival = stages;
    c->loc = load->loc;
    f->values[c->res[0]].name = f->values[load->res[0]].name;
    ir_block_insert(f, blk, (*pos)++, c);
    return c->res[0];
}

typedef struct { IrOp *load; bool *need; int nneed; int ring; } Moved;

static void async_loop(Async *a, IrBlock *parent, int *pos, IrOp *loop)
{
    IrFunc *f = a->f;
    IrBlock *body = loop->body;
    ValueId iv = body->args[0];
    int S = a->stages;
    if (has_return(body)) return;
    Moved *mv = xcalloc((size_t)body->nops + 1, sizeof *mv);
    int n = 0;
    for (int i = 0; i < body->nops && a->nrings < IR_MAX_RINGS; i++) {
        IrOp *load = body->ops[i];
        if (!wanted(a, load)) continue;
        int64_t bytes = S * slot_bytes(ir_vtype(f, load->res[0]));
        if (a->ring_bytes + bytes > ASYNC_BUDGET) continue;
        int nneed = f->nvalues;
        bool *need = ir_window_chain(f, body, load, iv);
        if (!need) continue;
        a->ring_bytes += bytes;
        mv[n++] = (Moved){load, need, nneed, a->nrings++};
    }
    if (!n) { free(mv); return; }

    /* before the loop: the tiles of iterations 0 .. S-2 */
    ValueId *first = xcalloc((size_t)n * (size_t)(S - 1), sizeof *first);
    for (int j = 0; j < S - 1; j++) {
        ValueId at = j ? emit_binary(f, parent, pos, BIN_ADD, loop->args[0], emit_const(f, parent, pos, (int64_t)j * loop->ival))
                       : loop->args[0];
        ValueId slot = emit_const(f, parent, pos, j);
        for (int m = 0; m < n; m++)
            first[m * (S - 1) + j] = emit_copy(f, body, mv[m].load, mv[m].need, mv[m].nneed, iv, at, slot, mv[m].ring, S, parent, pos);
        emit_commit(f, parent, pos);
    }
    ValueId *tile = xcalloc((size_t)n * (size_t)(S - 1), sizeof *tile);
    for (int k = 0; k < n * (S - 1); k++) tile[k] = ir_for_add_carried(f, loop, first[k], 0);
    int ncar_before = loop->nargs - 2 - n * (S - 1);
    ValueId wslot = ir_for_add_carried(f, loop, emit_const(f, parent, pos, S - 1), 0);

    /* the top of the body: wait for this iteration's tiles, then issue iteration iv+S-1's */
    int at = 0;
    ValueId *oldest = xcalloc((size_t)n, sizeof *oldest);
    IrType *types = xcalloc((size_t)n, sizeof *types);
    for (int m = 0; m < n; m++) {
        oldest[m] = tile[m * (S - 1)];
        types[m] = ir_vtype(f, oldest[m]);
    }
    IrOp *wait = ir_emit(f, NULL, OP_WAIT_ASYNC, n, oldest, n, types);
    wait->ival = S - 2;
    ir_block_insert(f, body, at++, wait);
    for (int m = 0; m < n; m++) {
        f->values[wait->res[m]].name = f->values[mv[m].load->res[0]].name;
        ir_replace_uses(body, mv[m].load->res[0], wait->res[m]);
        for (int i = 0; i < body->nops; i++)
            if (body->ops[i] == mv[m].load) { ir_block_remove(body, i); break; }
    }
    ValueId ahead = emit_binary(f, body, &at, BIN_ADD, iv, emit_const(f, body, &at, (int64_t)(S - 1) * loop->ival));
    ValueId *next = xcalloc((size_t)n, sizeof *next);
    for (int m = 0; m < n; m++)
        next[m] = emit_copy(f, body, mv[m].load, mv[m].need, mv[m].nneed, iv, ahead, wslot, mv[m].ring, S, body, &at);
    emit_commit(f, body, &at);

    /* the end of the body: the tiles shift by one, the write slot turns */
    int end = body->nops - 1;
    ValueId w1 = emit_binary(f, body, &end, BIN_ADD, wslot, emit_const(f, body, &end, 1));
    ValueId ss = emit_const(f, body, &end, S);
    IrType b1 = ir_scalar(DT_BOOL), i32 = ir_scalar(DT_I32);
    ValueId cmp_args[2] = {w1, ss};
    IrOp *wrap = ir_emit(f, NULL, OP_CMP, 2, cmp_args, 1, &b1);
    wrap->sub = CMP_EQ;
    ir_block_insert(f, body, end++, wrap);
    ValueId sel_args[3] = {wrap->res[0], emit_const(f, body, &end, 0), w1};
    IrOp *turned = ir_emit(f, NULL, OP_SELECT, 3, sel_args, 1, &i32);
    ir_block_insert(f, body, end++, turned);
    IrOp *y = body->ops[body->nops - 1];
    for (int m = 0; m < n; m++)
        for (int j = 0; j < S - 1; j++)
            y->args[ncar_before + m * (S - 1) + j] = j + 1 < S - 1 ? tile[m * (S - 1) + j + 1] : next[m];
    y->args[y->nargs - 1] = turned->res[0];

    /* after the loop: nothing left in flight */
    (*pos)++;
    IrOp *drain = ir_emit(f, NULL, OP_WAIT_ASYNC, 0, NULL, 0, NULL);
    ir_block_insert(f, parent, *pos, drain);

    for (int m = 0; m < n; m++) free(mv[m].need);
    free(mv); free(first); free(tile); free(oldest); free(types); free(next);
}

/* ---- tiles copied once (PHOBOS_COPY_ONCE) ---- */

static bool holds_commits(const IrBlock *b)
{
    for (int i = 0; b && i < b->nops; i++)
        if (b->ops[i]->kind == OP_COMMIT_ASYNC || holds_commits(b->ops[i]->body) || holds_commits(b->ops[i]->els)) return true;
    return false;
}

/* The index of the first op of b after `from` that reads v, or b->nops. */
static int first_use(const IrBlock *b, int from, ValueId v)
{
    int j = from + 1;
    while (j < b->nops && !ir_op_uses(b->ops[j], v)) j++;
    return j;
}

enum { MAX_ONCE = 8 };

static void async_once(Async *a)
{
    IrFunc *f = a->f;
    IrBlock *b = f->body;
    IrOp *load[MAX_ONCE];
    int at[MAX_ONCE], use[MAX_ONCE], n = 0;
    for (int i = 0; i < b->nops && n < MAX_ONCE && a->nrings + n < IR_MAX_RINGS; i++) {
        IrOp *op = b->ops[i];
        ValueId r = op->kind == OP_LOAD ? op->res[0] : 0;
        if (!r || !wanted(a, op) || a->uses[r] != a->tc_uses[r]) continue;
        load[n] = op, at[n] = i, use[n] = first_use(b, i, r), n++;
    }
    /* one group, copied where the last of them was loaded: each read after that */
    for (bool dropped = true; dropped && n;) {
        dropped = false;
        for (int k = 0; k < n; k++)
            if (use[k] <= at[n - 1]) {
                memmove(load + k, load + k + 1, sizeof *load * (size_t)(n - k - 1));
                memmove(at + k, at + k + 1, sizeof *at * (size_t)(n - k - 1));
                memmove(use + k, use + k + 1, sizeof *use * (size_t)(n - k - 1));
                n--, dropped = true;
                break;
            }
    }
    if (!n) return;
    int pos = at[n - 1], first = b->nops;
    for (int k = 0; k < n; k++) first = use[k] < first ? use[k] : first;
    /* a block that returns with a copy in flight would leave the engine writing shared memory it gave up */
    for (int j = pos + 1; j < first; j++)
        if (b->ops[j]->kind == OP_RETURN || has_return(b->ops[j]->body) || has_return(b->ops[j]->els)) return;
    for (int k = n - 1; k >= 0; k--) ir_block_remove(b, at[k]);
    pos -= n - 1, first -= n;
    int before = pos;
    ValueId slot = emit_const(f, b, &pos, 0), copies[MAX_ONCE];
    IrType types[MAX_ONCE];
    for (int k = 0; k < n; k++) {
        ValueId args[3] = {load[k]->args[0], load[k]->args[1], slot};
        types[k] = ir_vtype(f, load[k]->res[0]);
        IrOp *c = ir_emit(f, NULL, OP_COPY_ASYNC, 3, args, 1, &types[k]);
        c->param = load[k]->param;
        c->axis = a->nrings++;
        c->ival = 1;
        c->loc = load[k]->loc;
        f->values[c->res[0]].name = f->values[load[k]->res[0]].name;
        ir_block_insert(f, b, pos++, c);
        copies[k] = c->res[0];
    }
    emit_commit(f, b, &pos);
    first += pos - before;
    /* the groups committed in between stay pending, where they can be counted */
    int pending = 0;
    for (int j = pos; j < first; j++) {
        if (b->ops[j]->kind == OP_COMMIT_ASYNC) pending++;
        if (holds_commits(b->ops[j]->body) || holds_commits(b->ops[j]->els)) { pending = 0; break; }
    }
    IrOp *wait = ir_emit(f, NULL, OP_WAIT_ASYNC, n, copies, n, types);
    wait->ival = pending;
    wait->flags |= WAIT_ONCE;
    wait->loc = first < b->nops ? b->ops[first]->loc : load[0]->loc;
    ir_block_insert(f, b, first, wait);
    for (int k = 0; k < n; k++) {
        f->values[wait->res[k]].name = f->values[load[k]->res[0]].name;
        ir_replace_uses(b, load[k]->res[0], wait->res[k]);
    }
}

static void async_block(Async *a, IrBlock *blk)
{
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        if (op->body) async_block(a, op->body);
        if (op->els) async_block(a, op->els);
        if (op->kind == OP_FOR) async_loop(a, blk, &i, op);
    }
}

void ir_async(IrFunc *f)
{
    Async a = {f, f->stages ? f->stages : ASYNC_DEFAULT_STAGES, NULL, NULL, NULL, NULL, 0, 0};
    if (a.stages < 2 || !f->tensorcore) return;
    /* waits and commits are effects dce keeps: dead loads must go first */
    ir_dce(f);
    size_t n = (size_t)f->nvalues + 1;
    a.stored = ir_stored_params(f);
    a.uses = xcalloc(n, sizeof *a.uses);
    a.tc_uses = xcalloc(n, sizeof *a.tc_uses);
    a.bcast_uses = xcalloc(n, sizeof *a.bcast_uses);
    count_uses(f, f->body, a.uses, a.tc_uses, a.bcast_uses);
    async_block(&a, f->body);
    if (env_switch("PHOBOS_COPY_ONCE", false)) async_once(&a);
    free(a.stored);
    free(a.uses);
    free(a.tc_uses);
    free(a.bcast_uses);
}
