/* fold.c: constant folding. Scalar ops whose operands are all constants
 * become constants, computed by the reference table of scalar ops
 * (scalarops.h) that the interpreter computes with too; exact
 * identities (x*1, and x+0, x-0 on i32) drop their op; an `if` on a
 * constant is replaced by its taken branch and a `for` that provably runs
 * zero times by its initial values; with PHOBOS_COPY_ONCE=1 (off: timed
 * slower) a select on a constant condition is its picked operand and a
 * `for` that runs exactly once its body (so a load in it that no longer
 * depends on the loop is outside every loop: async.c's tiles copied
 * once); `x + dot(a, b, 0)` becomes
 * `dot(a, b, x)` (a dot's sum order is unspecified: the tensor cores then
 * accumulate into x). Expects verified IR; keeps it so. */
#include "ir/ir.h"
#include "ir/scalarops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef VEC(IrOp *) OpVec;

typedef struct {
    IrFunc *f;
    ValueId *repl;      /* value -> the value that now stands for it, 0 if none */
    int *uses;          /* by value: its uses in the function as it came in */
    bool copy_once;     /* PHOBOS_COPY_ONCE: constant selects and one-trip loops fold too */
} Folder;

/* Follows replacements; they always point at earlier values, so this ends. */
static ValueId resolve(const Folder *fo, ValueId v)
{
    for (int guard = 0; v > 0 && v < fo->f->nvalues && fo->repl[v] && guard < fo->f->nvalues; guard++)
        v = fo->repl[v];
    return v;
}

/* Makes every later use of `from` a use of `to`. */
static void replace_uses(Folder *fo, ValueId from, ValueId to)
{
    if (from != to) fo->repl[from] = to;
}

static const IrOp *const_def(const IrFunc *f, ValueId v)
{
    const IrOp *d = f->values[v].def;
    return d && d->kind == OP_CONST ? d : NULL;
}

static float const_float(const IrFunc *f, const IrOp *c)
{
    return sop_round(f->values[c->res[0]].type.dt, (float)c->fval);
}

static void make_const_int(IrOp *op, int64_t v)
{
    op->kind = OP_CONST;
    op->sub = 0;
    op->nargs = 0;
    op->args = NULL;
    op->ival = v;
    op->fval = 0;
}

static void make_const_float(IrFunc *f, IrOp *op, float v)
{
    make_const_int(op, 0);
    op->fval = sop_round(f->values[op->res[0]].type.dt, v);
}

/* Every op the verifier lets through has a meaning in the table, zero
 * divisors and NaNs included, so every op on constants folds. */
static void fold_binary(IrFunc *f, IrOp *op, const IrOp *const c[2], DType dt)
{
    if (dt == DT_BOOL) make_const_int(op, sop_bool_binary(op->sub, c[0]->ival != 0, c[1]->ival != 0));
    else if (dt == DT_I32) make_const_int(op, sop_i32_binary(op->sub, (int32_t)c[0]->ival, (int32_t)c[1]->ival));
    else if (dt == DT_I64) make_const_int(op, sop_i64_binary(op->sub, c[0]->ival, c[1]->ival));
    else make_const_float(f, op, sop_float_binary(op->sub, dt, const_float(f, c[0]), const_float(f, c[1])));
}

static void fold_unary(IrFunc *f, IrOp *op, const IrOp *c, DType dt)
{
    if (dt == DT_BOOL) make_const_int(op, !c->ival);
    else if (dt == DT_I32) make_const_int(op, sop_i32_unary(op->sub, (int32_t)c->ival));
    else if (dt == DT_I64) make_const_int(op, sop_i64_unary(op->sub, c->ival));
    else make_const_float(f, op, sop_float_unary(op->sub, dt, const_float(f, c)));
}

static void fold_compare(IrFunc *f, IrOp *op, const IrOp *const c[2], DType dt)
{
    bool r;
    if (dt == DT_BOOL) r = sop_compare_i32(op->sub, c[0]->ival != 0, c[1]->ival != 0);
    else if (dt == DT_I32) r = sop_compare_i32(op->sub, (int32_t)c[0]->ival, (int32_t)c[1]->ival);
    else if (dt == DT_I64) r = sop_compare_i64(op->sub, c[0]->ival, c[1]->ival);
    else r = sop_compare_float(op->sub, const_float(f, c[0]), const_float(f, c[1]));
    make_const_int(op, r);
}

static void fold_convert(IrFunc *f, IrOp *op, const IrOp *c, DType from, DType to)
{
    if (ir_is_float(from)) {
        float x = const_float(f, c);
        if (to == DT_I64) make_const_int(op, sop_float_to_i64(x));
        else if (ir_is_int(to)) make_const_int(op, sop_float_to_int(to, x));
        else if (to == DT_BOOL) make_const_int(op, x != 0);
        else make_const_float(f, op, x);
    } else {
        /* constants hold their value in their dtype's range: i64 whole */
        int64_t x = from == DT_BOOL ? c->ival != 0 : from == DT_I64 ? c->ival : (int32_t)c->ival;
        if (to == DT_I64) make_const_int(op, x);
        else if (ir_is_int(to)) make_const_int(op, sop_wrap_int(to, x));
        else if (to == DT_BOOL) make_const_int(op, x != 0);
        else make_const_float(f, op, sop_i64_to_float(to, x));
    }
}

/* Turns a scalar op on constants into a constant, in place. */
static bool fold_constant(IrFunc *f, IrOp *op)
{
    if (op->nres != 1 || f->values[op->res[0]].type.rank != 0 || op->nargs < 1) return false;
    const IrOp *c[3] = {0};
    for (int i = 0; i < op->nargs && i < 3; i++)
        if (!(c[i] = const_def(f, op->args[i]))) return false;
    DType dt = f->values[op->args[0]].type.dt;
    switch (op->kind) {
    case OP_BINARY: fold_binary(f, op, c, dt); return true;
    case OP_UNARY: fold_unary(f, op, c[0], dt); return true;
    case OP_CMP: fold_compare(f, op, c, dt); return true;
    case OP_SELECT: {
        const IrOp *pick = c[0]->ival ? c[1] : c[2];
        if (ir_is_float(f->values[op->res[0]].type.dt)) make_const_float(f, op, const_float(f, pick));
        else make_const_int(op, pick->ival);
        return true;
    }
    case OP_CONVERT:
        fold_convert(f, op, c[0], dt, f->values[op->res[0]].type.dt);
        return true;
    case OP_FMA:
        make_const_float(f, op, sop_float_fma(dt, const_float(f, c[0]), const_float(f, c[1]), const_float(f, c[2])));
        return true;
    default:
        return false;
    }
}

/* A constant, or a splat of one: its value if it is the integer k. */
static bool is_number(const IrFunc *f, ValueId v, int k)
{
    const IrOp *d = f->values[v].def;
    if (d && d->kind == OP_SPLAT) d = f->values[d->args[0]].def;
    if (!d || d->kind != OP_CONST) return false;
    DType dt = f->values[d->res[0]].type.dt;
    if (ir_is_float(dt)) return d->fval == k;
    return dt == DT_I32 && (int32_t)d->ival == k;
}

/* x*1, 1*x for any number type (exact in IEEE); x+0, 0+x, x-0 for i32 only,
 * since -0.0 + 0.0 is +0.0. Returns the value the result equals, or 0. */
static ValueId identity(const IrFunc *f, const IrOp *op, bool copy_once)
{
    if (copy_once && op->kind == OP_SELECT && op->nres == 1) {
        const IrOp *c = const_def(f, op->args[0]);
        ValueId pick = c ? op->args[c->ival ? 1 : 2] : 0;
        return pick && ir_type_eq(f->values[pick].type, f->values[op->res[0]].type) ? pick : 0;
    }
    if (op->kind != OP_BINARY || op->nres != 1) return 0;
    ValueId a = op->args[0], b = op->args[1];
    DType dt = f->values[op->res[0]].type.dt;
    if (op->sub == BIN_MUL && dt != DT_BOOL) {
        if (is_number(f, b, 1)) return a;
        if (is_number(f, a, 1)) return b;
    }
    if (dt == DT_I32 && op->sub == BIN_ADD) {
        if (is_number(f, b, 0)) return a;
        if (is_number(f, a, 0)) return b;
    }
    if (dt == DT_I32 && op->sub == BIN_SUB && is_number(f, b, 0)) return a;
    return 0;
}

/* index of the op of out defining v, or -1 */
static int defined_at(const OpVec *out, ValueId v)
{
    for (int i = 0; i < out->len; i++)
        for (int k = 0; k < out->data[i]->nres; k++)
            if (out->data[i]->res[k] == v) return i;
    return -1;
}

/* x + dot(a, b, 0), the dot used only there and x available where the dot
 * is (defined outside this block or before the dot): the dot takes x as
 * its accumulator and stands for the sum. */
static bool fold_accumulate(Folder *fo, const IrOp *op, const OpVec *out)
{
    const IrFunc *f = fo->f;
    if (op->kind != OP_BINARY || op->sub != BIN_ADD || f->values[op->res[0]].type.rank == 0) return false;
    for (int side = 0; side < 2; side++) {
        ValueId d = op->args[side], x = op->args[1 - side];
        IrOp *dot = f->values[d].def;
        if (!dot || dot->kind != OP_DOT || fo->uses[d] != 1 || !is_number(f, dot->args[2], 0)) continue;
        /* x is used by this add, so it is defined by out's ops or outside the block */
        int at = defined_at(out, d), xat = defined_at(out, x);
        if (at < 0 || xat >= at) continue;
        dot->args[2] = x;
        fo->repl[op->res[0]] = d;
        return true;
    }
    return false;
}

static void count_uses(const IrBlock *b, int *uses)
{
    for (int i = 0; b && i < b->nops; i++) {
        for (int k = 0; k < b->ops[i]->nargs; k++) uses[b->ops[i]->args[k]]++;
        count_uses(b->ops[i]->body, uses);
        count_uses(b->ops[i]->els, uses);
    }
}

static void fold_ops(Folder *fo, IrOp **ops, int n, OpVec *out, int depth);

static void fold_block(Folder *fo, IrBlock *b, int depth)
{
    if (!b) return;
    OpVec out = {0};
    fold_ops(fo, b->ops, b->nops, &out, depth);
    IrOp **ops = arena_alloc(fo->f->arena, sizeof *ops * (size_t)(out.len ? out.len : 1));
    if (out.len) memcpy(ops, out.data, sizeof *ops * (size_t)out.len);
    b->ops = ops;
    b->nops = b->cap = out.len;
    free(out.data);
}

/* An `if` on a constant: the taken branch's ops join the enclosing block. */
static void inline_branch(Folder *fo, IrOp *op, OpVec *out, int depth)
{
    IrBlock *taken = const_def(fo->f, op->args[0])->ival ? op->body : op->els;
    if (!taken || taken->nops == 0) return;
    fold_ops(fo, taken->ops, taken->nops - 1, out, depth + 1);
    IrOp *y = taken->ops[taken->nops - 1];
    for (int i = 0; i < op->nres && i < y->nargs; i++) replace_uses(fo, op->res[i], resolve(fo, y->args[i]));
}

static bool zero_trip(const IrFunc *f, const IrOp *op)
{
    const IrOp *lo = const_def(f, op->args[0]), *hi = const_def(f, op->args[1]);
    return lo && hi && (int32_t)lo->ival >= (int32_t)hi->ival;
}

/* A `for` whose constant bounds and step give exactly one trip. */
static bool one_trip(const IrFunc *f, const IrOp *op)
{
    const IrOp *lo = const_def(f, op->args[0]), *hi = const_def(f, op->args[1]);
    return lo && hi && op->ival > 0 && (int32_t)lo->ival < (int32_t)hi->ival &&
           (int64_t)(int32_t)lo->ival + op->ival >= (int64_t)(int32_t)hi->ival;
}

/* A `for` of one trip: its body's ops join the enclosing block, the
 * counter its lower bound, the carried values their initial values, its
 * results the values the body yields. */
static void inline_trip(Folder *fo, IrOp *op, OpVec *out, int depth)
{
    IrBlock *body = op->body;
    replace_uses(fo, body->args[0], op->args[0]);
    for (int k = 1; k < body->nargs && k + 1 < op->nargs; k++) replace_uses(fo, body->args[k], op->args[k + 1]);
    fold_ops(fo, body->ops, body->nops - 1, out, depth + 1);
    IrOp *y = body->ops[body->nops - 1];
    for (int i = 0; i < op->nres && i < y->nargs; i++) replace_uses(fo, op->res[i], resolve(fo, y->args[i]));
}

/* A while whose condition, folded, is the constant false: its results are its inits. */
static bool never_runs(const IrFunc *f, const IrOp *op)
{
    const IrOp *y = op->body && op->body->nops ? op->body->ops[op->body->nops - 1] : NULL;
    const IrOp *c = y && y->kind == OP_YIELD && y->nargs == 1 ? const_def(f, y->args[0]) : NULL;
    return c && !c->ival;
}

static void fold_ops(Folder *fo, IrOp **ops, int n, OpVec *out, int depth)
{
    for (int i = 0; i < n; i++) {
        IrOp *op = ops[i];
        for (int k = 0; k < op->nargs; k++) op->args[k] = resolve(fo, op->args[k]);
        if (depth > IR_MAX_DEPTH) {
            vec_push(out, op);
            continue;
        }
        if (op->kind == OP_IF && const_def(fo->f, op->args[0])) {
            inline_branch(fo, op, out, depth);
            continue;
        }
        if (op->kind == OP_FOR && zero_trip(fo->f, op)) {
            for (int k = 0; k < op->nres; k++) replace_uses(fo, op->res[k], op->args[k + 2]);
            continue;
        }
        if (fo->copy_once && op->kind == OP_FOR && one_trip(fo->f, op) && op->body && op->body->nops) {
            inline_trip(fo, op, out, depth);
            continue;
        }
        if (op->kind == OP_FOR || op->kind == OP_IF || op->kind == OP_WHILE) {
            fold_block(fo, op->body, depth + 1);
            fold_block(fo, op->els, depth + 1);
            if (op->kind == OP_WHILE && never_runs(fo->f, op)) {
                for (int k = 0; k < op->nres; k++) replace_uses(fo, op->res[k], op->args[k]);
                continue;
            }
        } else if (fold_accumulate(fo, op, out)) {
            continue;
        } else if (!fold_constant(fo->f, op)) {
            ValueId same = identity(fo->f, op, fo->copy_once);
            if (same) {
                replace_uses(fo, op->res[0], same);
                continue;
            }
        }
        vec_push(out, op);
    }
}

void ir_fold(IrFunc *f)
{
    Folder fo = {f, xcalloc((size_t)f->nvalues, sizeof(ValueId)), xcalloc((size_t)f->nvalues + 1, sizeof(int)),
                 env_switch("PHOBOS_COPY_ONCE", false)};
    count_uses(f->body, fo.uses);
    fold_block(&fo, f->body, 0);
    free(fo.repl);
    free(fo.uses);
}
