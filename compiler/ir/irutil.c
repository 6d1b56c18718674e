/* irutil.c: editing IR in place (irutil.h). */
#include "irutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ir_block_insert(IrFunc *f, IrBlock *b, int index, IrOp *op)
{
    if (b->nops == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        IrOp **ops = arena_alloc(f->arena, sizeof *ops * (size_t)cap);
        if (b->nops) memcpy(ops, b->ops, sizeof *ops * (size_t)b->nops);
        b->ops = ops;
        b->cap = cap;
    }
    memmove(&b->ops[index + 1], &b->ops[index], sizeof *b->ops * (size_t)(b->nops - index));
    b->ops[index] = op;
    b->nops++;
}

void ir_block_remove(IrBlock *b, int index)
{
    memmove(&b->ops[index], &b->ops[index + 1], sizeof *b->ops * (size_t)(b->nops - index - 1));
    b->nops--;
}

IrOp *ir_clone_op(IrFunc *f, const IrOp *op, const ValueId *args)
{
    IrType *types = xmalloc(sizeof *types * (size_t)(op->nres + 1));
    for (int i = 0; i < op->nres; i++) types[i] = ir_vtype(f, op->res[i]);
    IrOp *c = ir_emit(f, NULL, op->kind, op->nargs, args, op->nres, types);
    free(types);
    c->sub = op->sub;
    c->axis = op->axis;
    c->param = op->param;
    c->flags = op->flags;
    c->window_axes = op->window_axes;
    c->ival = op->ival;
    c->fval = op->fval;
    c->loc = op->loc;
    c->str = op->str;
    c->file = op->file;
    for (int i = 0; i < op->nres; i++) f->values[c->res[i]].name = f->values[op->res[i]].name;
    return c;
}

static ValueId mapped(const ValueId *map, int nmap, ValueId v) { return v < nmap && map[v] ? map[v] : v; }

static IrBlock *clone_region_mapped(IrFunc *f, const IrBlock *b, ValueId *map, int nmap)
{
    IrBlock *c = ir_block_new(f);
    for (int i = 0; i < b->nargs; i++) {
        ValueId a = ir_block_arg(f, c, ir_vtype(f, b->args[i]), f->values[b->args[i]].name);
        if (b->args[i] < nmap) map[b->args[i]] = a;
    }
    for (int i = 0; i < b->nops; i++) ir_block_insert(f, c, c->nops, ir_clone_deep(f, b->ops[i], map, nmap));
    return c;
}

IrOp *ir_clone_deep(IrFunc *f, const IrOp *op, ValueId *map, int nmap)
{
    ValueId *args = xmalloc(sizeof *args * (size_t)(op->nargs + 1));
    for (int i = 0; i < op->nargs; i++) args[i] = mapped(map, nmap, op->args[i]);
    IrOp *c = ir_clone_op(f, op, args);
    free(args);
    if (op->body) c->body = clone_region_mapped(f, op->body, map, nmap);
    if (op->els) c->els = clone_region_mapped(f, op->els, map, nmap);
    for (int i = 0; i < op->nres; i++)
        if (op->res[i] < nmap) map[op->res[i]] = c->res[i];
    return c;
}

static ValueId carried_init_in(const IrBlock *b, ValueId v, int depth)
{
    for (int i = 0; i < b->nops && depth < IR_MAX_DEPTH; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_FOR)
            for (int j = 0; j + 2 < op->nargs; j++)
                if (op->res[j] == v || op->body->args[1 + j] == v) return op->args[2 + j];
        ValueId r = op->body ? carried_init_in(op->body, v, depth + 1) : 0;
        if (!r && op->els) r = carried_init_in(op->els, v, depth + 1);
        if (r) return r;
    }
    return 0;
}

ValueId ir_carried_init(const IrFunc *f, ValueId v) { return carried_init_in(f->body, v, 0); }

/* The value the body of the for loop carrying v yields for it, or 0. */
static ValueId carried_next_in(const IrBlock *b, ValueId v, int depth)
{
    for (int i = 0; i < b->nops && depth < IR_MAX_DEPTH; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_FOR)
            for (int j = 0; j + 2 < op->nargs; j++)
                if (op->res[j] == v || op->body->args[1 + j] == v) return op->body->ops[op->body->nops - 1]->args[j];
        ValueId r = op->body ? carried_next_in(op->body, v, depth + 1) : 0;
        if (!r && op->els) r = carried_next_in(op->els, v, depth + 1);
        if (r) return r;
    }
    return 0;
}

const IrOp *ir_issued_dot(const IrFunc *f, ValueId v)
{
    const IrOp *d = f->values[v].def;
    if (!d || d->kind == OP_FOR) {
        ValueId next = carried_next_in(f->body, v, 0);
        d = next ? f->values[next].def : NULL;
    }
    return d && d->kind == OP_DOT && (d->flags & DOT_ISSUED) ? d : NULL;
}

static IrBlock *clone_block(IrFunc *to, const IrBlock *b);

static IrOp *clone_op_deep(IrFunc *to, const IrOp *op)
{
    IrOp *c = arena_alloc(to->arena, sizeof *c);
    *c = *op;
    c->args = arena_alloc(to->arena, sizeof *c->args * (size_t)(op->nargs + 1));
    c->res = arena_alloc(to->arena, sizeof *c->res * (size_t)(op->nres + 1));
    for (int i = 0; i < op->nargs; i++) c->args[i] = op->args[i];
    for (int i = 0; i < op->nres; i++) {
        c->res[i] = op->res[i];
        to->values[op->res[i]].def = c;
    }
    c->body = op->body ? clone_block(to, op->body) : NULL;
    c->els = op->els ? clone_block(to, op->els) : NULL;
    return c;
}

static IrBlock *clone_block(IrFunc *to, const IrBlock *b)
{
    IrBlock *c = ir_block_new(to);
    c->nargs = b->nargs;
    c->args = arena_alloc(to->arena, sizeof *c->args * (size_t)(b->nargs + 1));
    for (int i = 0; i < b->nargs; i++) c->args[i] = b->args[i];
    c->nops = c->cap = b->nops;
    c->ops = arena_alloc(to->arena, sizeof *c->ops * (size_t)(b->nops + 1));
    for (int i = 0; i < b->nops; i++) c->ops[i] = clone_op_deep(to, b->ops[i]);
    return c;
}

IrFunc *ir_func_clone(const IrFunc *f)
{
    Arena *a = arena_new();
    IrFunc *c = arena_alloc(a, sizeof *c);
    *c = *f;
    c->arena = a;
    c->capvalues = f->nvalues + 1;
    c->values = xcalloc((size_t)c->capvalues, sizeof *c->values);
    for (int i = 0; i < f->nvalues; i++) c->values[i] = f->values[i];
    c->body = clone_block(c, f->body);
    return c;
}

void ir_replace_uses(IrBlock *blk, ValueId from, ValueId to)
{
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        for (int j = 0; j < op->nargs; j++)
            if (op->args[j] == from) op->args[j] = to;
        if (op->body) ir_replace_uses(op->body, from, to);
        if (op->els) ir_replace_uses(op->els, from, to);
    }
}

static ValueId *grow(IrFunc *f, const ValueId *old, int n, ValueId extra)
{
    ValueId *a = arena_alloc(f->arena, sizeof *a * (size_t)(n + 1));
    if (n) memcpy(a, old, sizeof *a * (size_t)n);
    a[n] = extra;
    return a;
}

ValueId ir_for_add_carried(IrFunc *f, IrOp *loop, ValueId init, ValueId next)
{
    IrType t = ir_vtype(f, init);
    loop->args = grow(f, loop->args, loop->nargs, init);
    loop->nargs++;
    ValueId res = ir_value_new(f, t, f->values[init].name);
    f->values[res].def = loop;
    loop->res = grow(f, loop->res, loop->nres, res);
    loop->nres++;
    ValueId arg = ir_block_arg(f, loop->body, t, f->values[init].name);
    IrOp *y = loop->body->ops[loop->body->nops - 1];
    y->args = grow(f, y->args, y->nargs, next);
    y->nargs++;
    return arg;
}

void ir_mark_defined(const IrBlock *blk, bool *inside)
{
    for (int i = 0; i < blk->nargs; i++) inside[blk->args[i]] = true;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        for (int j = 0; j < op->nres; j++) inside[op->res[j]] = true;
        if (op->body) ir_mark_defined(op->body, inside);
        if (op->els) ir_mark_defined(op->els, inside);
    }
}

bool ir_op_uses(const IrOp *op, ValueId v)
{
    for (int j = 0; j < op->nargs; j++)
        if (op->args[j] == v) return true;
    for (int side = 0; side < 2; side++) {
        const IrBlock *b = side ? op->els : op->body;
        for (int i = 0; b && i < b->nops; i++)
            if (ir_op_uses(b->ops[i], v)) return true;
    }
    return false;
}

bool ir_has_dot(const IrBlock *b)
{
    for (int i = 0; b && i < b->nops; i++)
        if (b->ops[i]->kind == OP_DOT || ir_has_dot(b->ops[i]->body) || ir_has_dot(b->ops[i]->els)) return true;
    return false;
}

bool ir_is_max_rescale(const IrFunc *f, ValueId v)
{
    const IrOp *d = f->values[v].def;
    while (d && d->kind == OP_BROADCAST) d = f->values[d->args[0]].def;
    if (!d || d->kind != OP_UNARY || (d->sub != UN_EXP && d->sub != UN_EXP2)) return false;
    const IrOp *sub = f->values[d->args[0]].def;
    if (!sub || sub->kind != OP_BINARY || sub->sub != BIN_SUB) return false;
    const IrOp *mx = f->values[sub->args[1]].def;
    return mx && mx->kind == OP_BINARY && mx->sub == BIN_MAX && (mx->args[0] == sub->args[0] || mx->args[1] == sub->args[0]);
}

bool ir_waited_slot(const IrFunc *f, const IrBlock *body, ValueId v)
{
    const IrOp *d = f->values[v].def;
    if (!d || d->kind != OP_WAIT_ASYNC || !d->nargs) return false;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i] == d) return true;
    return false;
}

static void mark_stored(const IrBlock *blk, bool *stored)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        if (ir_op_is(op->kind, IR_OP_WRITES)) stored[op->param] = true;
        if (op->body) mark_stored(op->body, stored);
        if (op->els) mark_stored(op->els, stored);
    }
}

bool *ir_stored_params(const IrFunc *f)
{
    bool *stored = xcalloc((size_t)f->nparams + 1, sizeof *stored);
    mark_stored(f->body, stored);
    return stored;
}

/* Whether v can be recomputed from the induction variable and values from
 * outside the loop through scalar ops of the body; marks those ops. */
bool ir_loop_computable(const IrFunc *f, ValueId v, ValueId iv, const bool *inside, bool *need, int depth)
{
    if (v == iv || !inside[v]) return true;
    const IrOp *d = f->values[v].def;
    if (!d || depth > 32 || ir_vtype(f, v).rank != 0) return false;
    if (d->kind != OP_CONST && !ir_op_is(d->kind, IR_OP_ELEMENTWISE)) return false;
    /* x // 0 and x % 0 are 0 (docs/language.md), so a copy for an iteration past
     * the loop's range divides harmlessly; PHOBOS_WINDOW_DIVISIONS=1 lets
     * them in (off until timed on the GPU) */
    if (d->kind == OP_BINARY && (d->sub == BIN_FLOORDIV || d->sub == BIN_MOD) && !env_switch("PHOBOS_WINDOW_DIVISIONS", false)) return false;
    for (int i = 0; i < d->nargs; i++)
        if (!ir_loop_computable(f, d->args[i], iv, inside, need, depth + 1)) return false;
    need[v] = true;
    return true;
}

bool *ir_window_chain(const IrFunc *f, const IrBlock *body, const IrOp *load, ValueId iv)
{
    bool *inside = xcalloc((size_t)f->nvalues + 1, sizeof *inside);
    bool *need = xcalloc((size_t)f->nvalues + 1, sizeof *need);
    ir_mark_defined(body, inside);
    bool ok = true;
    for (int j = 0; j < load->nargs && ok; j++) ok = ir_loop_computable(f, load->args[j], iv, inside, need, 0);
    free(inside);
    if (!ok) { free(need); return NULL; }
    return need;
}

void ir_copy_marked(IrFunc *f, const IrBlock *body, const bool *need, int nneed, ValueId iv, ValueId at,
                    IrBlock *blk, int *pos, ValueId *map)
{
    int nvalues = nneed < f->nvalues ? nneed : f->nvalues;
    map[iv] = at;
    /* the marked ops first: blk may be body, growing as the copies go in */
    const IrOp **marked = xcalloc((size_t)body->nops + 1, sizeof *marked);
    int n = 0;
    for (int i = 0; i < body->nops; i++) {
        const IrOp *op = body->ops[i];
        if (op->nres == 1 && op->res[0] < nvalues && need[op->res[0]]) marked[n++] = op;
    }
    for (int i = 0; i < n; i++) {
        const IrOp *op = marked[i];
        ValueId args[4];
        for (int j = 0; j < op->nargs && j < 4; j++) args[j] = map[op->args[j]] ? map[op->args[j]] : op->args[j];
        IrOp *c = ir_clone_op(f, op, args);
        ir_block_insert(f, blk, (*pos)++, c);
        map[op->res[0]] = c->res[0];
    }
    free(marked);
}

/* Unites the rings copied into since the last commit (open, a bitmask
 * over rings below 64) at each commit of b and below, in program order. */
static void unite_committed(const IrBlock *b, uint64_t *open, int *parent, int *stages)
{
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_COPY_ASYNC && op->axis >= 0 && op->axis < IR_MAX_RINGS) {
            *open |= (uint64_t)1 << op->axis;
            if (op->ival > stages[op->axis]) stages[op->axis] = (int)op->ival;
        } else if (op->kind == OP_COMMIT_ASYNC) {
            int first = -1;
            for (int r = 0; r < IR_MAX_RINGS; r++) {
                if (!(*open >> r & 1)) continue;
                int root = r;
                while (parent[root] != root) root = parent[root];
                if (first < 0 || root == first) {
                    first = root;
                    continue;
                }
                int lo = root < first ? root : first;
                parent[root + first - lo] = lo;   /* the higher root under the lower: roots stay each set's lowest ring */
                first = lo;
            }
            *open = 0;
        }
        unite_committed(op->body, open, parent, stages);
        unite_committed(op->els, open, parent, stages);
    }
}

int ir_ring_channels(const IrFunc *f, int *ring_chan, int *chan_stages)
{
    int parent[IR_MAX_RINGS], stages[IR_MAX_RINGS];
    for (int r = 0; r < IR_MAX_RINGS; r++) parent[r] = r, stages[r] = 0, ring_chan[r] = -1, chan_stages[r] = 0;
    uint64_t open = 0;
    unite_committed(f->body, &open, parent, stages);
    int n = 0;
    for (int r = 0; r < IR_MAX_RINGS; r++) {
        if (!stages[r]) continue;
        int root = r;
        while (parent[root] != root) root = parent[root];
        if (ring_chan[root] < 0) ring_chan[root] = n++;   /* roots are each set's lowest ring */
        ring_chan[r] = ring_chan[root];
        if (stages[r] > chan_stages[ring_chan[r]]) chan_stages[ring_chan[r]] = stages[r];
    }
    return n;
}
