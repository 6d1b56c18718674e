/* fold.c: constant folding. Scalar ops whose operands are all constants
 * become constants, computed exactly as the interpreter computes them (i32
 * wraps, // and % floor like Python, f16/bf16 results rounded); exact
 * identities (x*1, and x+0, x-0 on i32) drop their op; an `if` on a
 * constant is replaced by its taken branch and a `for` that provably runs
 * zero times by its initial values. Expects verified IR; keeps it so. */
#include "ir.h"
#include "floormod.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { FOLD_MAX_DEPTH = 256 };

typedef VEC(IrOp *) OpVec;

typedef struct {
    IrFunc *f;
    ValueId *repl;      /* value -> the value that now stands for it, 0 if none */
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

static float round_to(DType dt, float x)
{
    if (dt == DT_F16) return ph_round_f16(x);
    if (dt == DT_BF16) return ph_round_bf16(x);
    return x;
}

static float const_float(const IrFunc *f, const IrOp *c)
{
    return round_to(f->values[c->res[0]].type.dt, (float)c->fval);
}

static int32_t wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

/* Python's floor division and modulo on i32; b != 0. */
static int32_t floordiv32(int32_t a, int32_t b)
{
    int64_t q = (int64_t)a / b;
    if ((int64_t)a % b != 0 && ((a < 0) != (b < 0))) q--;
    return wrap32(q);
}

static int32_t mod32(int32_t a, int32_t b)
{
    int64_t r = (int64_t)a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return (int32_t)r;
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
    op->fval = round_to(f->values[op->res[0]].type.dt, v);
}

static bool fold_int_binary(IrOp *op, int32_t a, int32_t b)
{
    uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
    int32_t r;
    switch (op->sub) {
    case BIN_ADD: r = (int32_t)(ua + ub); break;
    case BIN_SUB: r = (int32_t)(ua - ub); break;
    case BIN_MUL: r = (int32_t)(ua * ub); break;
    case BIN_FLOORDIV: if (!b) return false; r = floordiv32(a, b); break;
    case BIN_MOD: if (!b) return false; r = mod32(a, b); break;
    case BIN_MAX: r = a > b ? a : b; break;
    case BIN_MIN: r = a < b ? a : b; break;
    default: return false;
    }
    make_const_int(op, r);
    return true;
}

static bool fold_float_binary(IrFunc *f, IrOp *op, float a, float b)
{
    float r;
    switch (op->sub) {
    case BIN_ADD: r = a + b; break;
    case BIN_SUB: r = a - b; break;
    case BIN_MUL: r = a * b; break;
    case BIN_DIV: if (b == 0) return false; r = a / b; break;
    case BIN_FLOORDIV: if (b == 0) return false; r = floor_div_f32(a, b); break;
    case BIN_MOD: if (b == 0) return false; r = floor_mod_f32(a, b); break;
    case BIN_MAX: r = fmaxf(a, b); break;
    case BIN_MIN: r = fminf(a, b); break;
    default: return false;
    }
    make_const_float(f, op, r);
    return true;
}

static bool fold_unary(IrFunc *f, IrOp *op, const IrOp *c, DType dt)
{
    if (dt == DT_BOOL) {
        if (op->sub != UN_NOT) return false;
        make_const_int(op, !c->ival);
        return true;
    }
    if (dt == DT_I32) {
        uint32_t a = (uint32_t)(int32_t)c->ival;
        if (op->sub == UN_NEG) make_const_int(op, (int32_t)(0u - a));
        else if (op->sub == UN_ABS) make_const_int(op, (int32_t)a < 0 ? (int32_t)(0u - a) : (int32_t)a);
        else return false;
        return true;
    }
    float x = const_float(f, c), r;
    switch (op->sub) {
    case UN_NEG: r = -x; break;
    case UN_ABS: r = fabsf(x); break;
    case UN_EXP: r = expf(x); break;
    case UN_EXP2: r = exp2f(x); break;
    case UN_LOG: r = logf(x); break;
    case UN_LOG2: r = log2f(x); break;
    case UN_SQRT: r = sqrtf(x); break;
    case UN_RSQRT: r = 1.0f / sqrtf(x); break;
    default: return false;
    }
    make_const_float(f, op, r);
    return true;
}

static bool compare(int sub, double a, double b)
{
    switch (sub) {
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    case CMP_GE: return a >= b;
    case CMP_EQ: return a == b;
    default: return a != b;
    }
}

/* float -> i32 as the interpreter does it: toward zero, saturating, NaN -> 0 */
static int32_t float_to_i32(float x)
{
    if (isnan(x)) return 0;
    if (x >= 2147483648.0f) return INT32_MAX;
    if (x <= -2147483648.0f) return INT32_MIN;
    return (int32_t)x;
}

static bool fold_convert(IrFunc *f, IrOp *op, const IrOp *c, DType from, DType to)
{
    if (ir_is_float(from)) {
        float x = const_float(f, c);
        if (to == DT_I32) make_const_int(op, float_to_i32(x));
        else if (to == DT_BOOL) make_const_int(op, x != 0);
        else make_const_float(f, op, x);
    } else {
        int32_t x = (int32_t)c->ival;
        if (to == DT_I32) make_const_int(op, x);
        else if (to == DT_BOOL) make_const_int(op, x != 0);
        else make_const_float(f, op, (float)x);
    }
    return true;
}

/* Operand values as doubles for comparisons: exact for i32 and floats. */
static double const_number(const IrFunc *f, const IrOp *c)
{
    DType dt = f->values[c->res[0]].type.dt;
    return ir_is_float(dt) ? (double)const_float(f, c) : (double)(int32_t)c->ival;
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
    case OP_BINARY:
        if (dt == DT_BOOL) {
            if (op->sub == BIN_AND) make_const_int(op, c[0]->ival && c[1]->ival);
            else if (op->sub == BIN_OR) make_const_int(op, c[0]->ival || c[1]->ival);
            else return false;
            return true;
        }
        if (dt == DT_I32) return fold_int_binary(op, (int32_t)c[0]->ival, (int32_t)c[1]->ival);
        return fold_float_binary(f, op, const_float(f, c[0]), const_float(f, c[1]));
    case OP_UNARY:
        return fold_unary(f, op, c[0], dt);
    case OP_CMP:
        if (dt == DT_BOOL) make_const_int(op, compare(op->sub, (double)!!c[0]->ival, (double)!!c[1]->ival));
        else make_const_int(op, compare(op->sub, const_number(f, c[0]), const_number(f, c[1])));
        return true;
    case OP_SELECT: {
        const IrOp *pick = c[0]->ival ? c[1] : c[2];
        if (ir_is_float(f->values[op->res[0]].type.dt)) make_const_float(f, op, const_float(f, pick));
        else make_const_int(op, pick->ival);
        return true;
    }
    case OP_CONVERT:
        return fold_convert(f, op, c[0], dt, f->values[op->res[0]].type.dt);
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
static ValueId identity(const IrFunc *f, const IrOp *op)
{
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

static void fold_ops(Folder *fo, IrOp **ops, int n, OpVec *out, int depth)
{
    for (int i = 0; i < n; i++) {
        IrOp *op = ops[i];
        for (int k = 0; k < op->nargs; k++) op->args[k] = resolve(fo, op->args[k]);
        if (depth > FOLD_MAX_DEPTH) {
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
        if (op->kind == OP_FOR || op->kind == OP_IF) {
            fold_block(fo, op->body, depth + 1);
            fold_block(fo, op->els, depth + 1);
        } else if (!fold_constant(fo->f, op)) {
            ValueId same = identity(fo->f, op);
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
    Folder fo = {f, xcalloc((size_t)f->nvalues, sizeof(ValueId))};
    fold_block(&fo, f->body, 0);
    free(fo.repl);
}
