/* sema_call.c: the built-ins, ph.NAME(...) calls: dot, dot_t and
 * transpose, math (pow and fma among it), reductions, argmax and argmin,
 * cumsum, reshape, where, iota, converts, and the statements
 * online_softmax and atomic_add; each checks its arguments' count, shapes
 * and dtypes in the typing pass and emits its ops in the emitting pass. */
#include "sema.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    B_DOT, B_DOT_T, B_TRANSPOSE, B_MATH, B_ABS, B_MAX, B_MIN, B_REDUCE, B_WHERE, B_IOTA, B_CONVERT, B_SOFTMAX,
    B_ATOMIC_ADD, B_POW, B_FMA, B_ALONG, B_RESHAPE,
} BuiltinKind;

typedef struct { const char *name; BuiltinKind kind; int min, max; int sub; int axis; } Builtin;

static const Builtin builtins[] = {
    {"dot", B_DOT, 2, 2, 0, 0}, {"dot_t", B_DOT_T, 2, 2, 0, 0}, {"transpose", B_TRANSPOSE, 1, 1, 0, 0},
    {"exp", B_MATH, 1, 1, UN_EXP, 0}, {"exp2", B_MATH, 1, 1, UN_EXP2, 0}, {"log", B_MATH, 1, 1, UN_LOG, 0},
    {"log2", B_MATH, 1, 1, UN_LOG2, 0}, {"sqrt", B_MATH, 1, 1, UN_SQRT, 0}, {"rsqrt", B_MATH, 1, 1, UN_RSQRT, 0},
    {"tanh", B_MATH, 1, 1, UN_TANH, 0}, {"erf", B_MATH, 1, 1, UN_ERF, 0}, {"sigmoid", B_MATH, 1, 1, UN_SIGMOID, 0},
    {"pow", B_POW, 2, 2, BIN_POW, 0}, {"fma", B_FMA, 3, 3, 0, 0},
    {"abs", B_ABS, 1, 1, UN_ABS, 0}, {"max", B_MAX, 2, 2, BIN_MAX, 0}, {"min", B_MIN, 2, 2, BIN_MIN, 0},
    {"rowsum", B_REDUCE, 1, 1, RED_SUM, 1}, {"rowmax", B_REDUCE, 1, 1, RED_MAX, 1},
    {"rowmin", B_REDUCE, 1, 1, RED_MIN, 1}, {"colsum", B_REDUCE, 1, 1, RED_SUM, 0},
    {"colmax", B_REDUCE, 1, 1, RED_MAX, 0}, {"colmin", B_REDUCE, 1, 1, RED_MIN, 0},
    {"where", B_WHERE, 3, 3, 0, 0}, {"iota", B_IOTA, 1, 2, 0, 0},
    {"f16", B_CONVERT, 1, 1, DT_F16, 0}, {"bf16", B_CONVERT, 1, 1, DT_BF16, 0},
    {"f32", B_CONVERT, 1, 1, DT_F32, 0}, {"i32", B_CONVERT, 1, 1, DT_I32, 0}, {"i64", B_CONVERT, 1, 1, DT_I64, 0},
    {"i8", B_CONVERT, 1, 1, DT_I8, 0}, {"u8", B_CONVERT, 1, 1, DT_U8, 0},
    {"f8e4m3", B_CONVERT, 1, 1, DT_F8E4M3, 0}, {"f8e5m2", B_CONVERT, 1, 1, DT_F8E5M2, 0},
    {"online_softmax", B_SOFTMAX, 5, 5, UN_EXP, 0}, {"online_softmax2", B_SOFTMAX, 5, 5, UN_EXP2, 0},
    {"atomic_add", B_ATOMIC_ADD, 2, 2, 0, 0},
    {"argmax", B_ALONG, 2, 2, OP_ARGMAX, 0}, {"argmin", B_ALONG, 2, 2, OP_ARGMIN, 0},
    {"cumsum", B_ALONG, 2, 2, OP_CUMSUM, 0}, {"reshape", B_RESHAPE, 2, 2, 0, 0},
};

static Val zero_acc(Sema *s, DType dt, int m, int n, Loc loc)
{
    Val r = {.dt = dt, .rank = 2, .dim = {m, n}};
    if (s->emit) {
        ValueId z = sema_const(s, dt, 0, 0.0, loc);
        r.v = sema_emit1(s, OP_SPLAT, 1, &z, val_irtype(r), loc, NULL);
    }
    return r;
}

/* The dtype both dot operands are rounded to (two fp8 keep theirs: the
 * tensor cores mix e4m3 and e5m2). An fp8 operand beside a wider float
 * takes its dtype, exactly. */
static DType dot_dtype(DType a, DType b)
{
    if (a == b) return a;
    if (ir_is_f8(a)) return b;
    if (ir_is_f8(b)) return a;
    if (a == DT_F32) return b;
    if (b == DT_F32) return a;
    return DT_F32;   /* f16 with bf16 */
}

static Val dot_call(Sema *s, const Expr *e, bool trans, Val a, Val b)
{
    const char *name = trans ? "ph.dot_t" : "ph.dot";
    char ta[64], tb[64];
    val_str(s, a, ta, sizeof ta);
    val_str(s, b, tb, sizeof tb);
    if (a.rank != 2 || b.rank != 2) {
        sema_err(s, e->loc, "%s expects two 2-D tiles, got %s and %s", name, ta, tb);
        return val_error();
    }
    bool int8 = a.dt == DT_I8 && b.dt == DT_I8, f8 = ir_is_f8(a.dt) && ir_is_f8(b.dt);
    if (!int8 && (a.dt == DT_I8 || a.dt == DT_U8 || b.dt == DT_I8 || b.dt == DT_U8)) {
        sema_err(s, e->loc, "%s of 8-bit integers needs two i8 operands (for an i32 result), got %s and %s", name, ta, tb);
        return val_error();
    }
    if (a.dt == DT_I64 || b.dt == DT_I64) {
        sema_err(s, e->loc, "%s has no i64 form (no tensor core or FMA path multiplies i64), got %s and %s; "
                 "convert the operands to f32 (or i8 for an exact integer dot)", name, ta, tb);
        return val_error();
    }
    if (!int8 && (!ir_is_float(a.dt) || !ir_is_float(b.dt))) {
        sema_err(s, e->loc, "%s needs f16, bf16, f32 or fp8 operands, got %s and %s", name, ta, tb);
        return val_error();
    }
    int kb = trans ? b.dim[1] : b.dim[0];
    if (!sema_dim_same(s, a.dim[1], kb)) {
        sema_err(s, e->loc, "%s: the inner dimensions differ: %s and %s%s", name, ta, tb,
                 trans ? " (dot_t multiplies by the transpose of the second operand)" : "");
        return val_error();
    }
    int m = a.dim[0], n = trans ? b.dim[0] : b.dim[1];
    DType dt = dot_dtype(a.dt, b.dt), rt = int8 ? DT_I32 : DT_F32;
    a = sema_coerce(s, a, f8 ? a.dt : dt, 2, a.dim, e->loc);
    b = sema_coerce(s, b, f8 ? b.dt : dt, 2, b.dim, e->loc);
    Val acc = zero_acc(s, rt, m, n, e->loc);
    Val r = {.dt = rt, .rank = 2, .dim = {m, n}};
    if (s->emit) {
        IrOp *op;
        ValueId args[3] = {a.v, b.v, acc.v};
        r.v = sema_emit1(s, OP_DOT, 3, args, val_irtype(r), e->loc, &op);
        op->flags = trans ? DOT_TRANS_B : 0;
    }
    return r;
}

static Val reduce_call(Sema *s, const Expr *e, const Builtin *b, Val x)
{
    char t[64];
    val_str(s, x, t, sizeof t);
    if (x.rank != 2 || x.dt == DT_BOOL) {
        sema_err(s, e->loc, "ph.%s expects a 2-D i32 or float tile, got %s", b->name, t);
        return val_error();
    }
    Val r = x;
    r.dim[b->axis] = 1;
    if (s->emit) {
        IrOp *op;
        r.v = sema_emit1(s, OP_REDUCE, 1, &x.v, val_irtype(r), e->loc, &op);
        op->sub = b->sub;
        op->axis = b->axis;
    }
    return r;
}

static Val math_call(Sema *s, const Expr *e, const Builtin *b, Val x)
{
    char t[64];
    val_str(s, x, t, sizeof t);
    if (x.dt == DT_BOOL) {
        sema_err(s, e->loc, "ph.%s needs a number, got %s", b->name, t);
        return val_error();
    }
    if (b->kind == B_ABS && x.weak) return x.wfloat ? val_weak_float(fabs(x.fval)) : x.ival == INT64_MIN ? x : val_weak_int(x.ival < 0 ? -x.ival : x.ival);
    DType dt = b->kind == B_ABS ? (x.weak ? sema_promote(x, x) : x.dt) : ir_is_float(x.dt) && !x.weak ? x.dt : DT_F32;
    x = sema_coerce(s, x, dt, x.rank, x.dim, e->loc);
    if (val_bad(x)) return x;
    return sema_unary_op(s, b->sub, x, e->loc);
}

/* The dtype of a float built-in's operands: promoted as for an operator,
 * an i32 (or integer literal) result taken as f32, as ph.exp takes it. */
static DType float_promote(const Val *a, int n)
{
    Val acc = a[0];
    for (int i = 1; i < n; i++) {
        DType dt = sema_promote(acc, a[i]);
        acc = (Val){.dt = dt, .weak = acc.weak && a[i].weak, .wfloat = !ir_is_int(dt)};
    }
    return ir_is_int(acc.dt) ? DT_F32 : acc.dt;
}

/* ph.pow(x, y) and ph.fma(a, b, c): floats, the operands promoted
 * together and broadcast together (NumPy's rules, as for ph.where). */
static Val float_nary_call(Sema *s, const Expr *e, const Builtin *b, Val *a, int n)
{
    char t[3][64];
    for (int i = 0; i < n; i++) {
        val_str(s, a[i], t[i], sizeof t[i]);
        if (a[i].dt == DT_BOOL) {
            sema_err(s, e->items[i]->loc, "ph.%s needs numbers, got %s", b->name, t[i]);
            return val_error();
        }
    }
    DType dt = float_promote(a, n);
    Val shape = a[0];
    for (int i = 1; i < n; i++) {
        int rank, dim[2];
        if (!sema_shape_bcast(s, shape, a[i], &rank, dim)) {
            if (n == 2) sema_err(s, e->loc, "ph.%s: shapes %s and %s do not broadcast", b->name, t[0], t[1]);
            else sema_err(s, e->loc, "ph.%s: shapes %s, %s and %s do not broadcast", b->name, t[0], t[1], t[2]);
            return val_error();
        }
        shape = (Val){.dt = dt, .rank = rank, .dim = {dim[0], dim[1]}};
    }
    ValueId args[3];
    for (int i = 0; i < n; i++) {
        a[i] = sema_coerce(s, a[i], dt, shape.rank, shape.dim, e->loc);
        if (val_bad(a[i])) return val_error();
        args[i] = a[i].v;
    }
    Val r = {.dt = dt, .rank = shape.rank, .dim = {shape.dim[0], shape.dim[1]}};
    if (s->emit) {
        IrOp *op;
        r.v = sema_emit1(s, b->kind == B_FMA ? OP_FMA : OP_BINARY, n, args, val_irtype(r), e->loc, &op);
        op->sub = b->kind == B_FMA ? 0 : b->sub;
    }
    return r;
}

/* ph.max or ph.min of two literals, as the ops compute it: a NaN loses to
 * a number and -0.0 is below 0.0 (scalarops.c). */
static Val weak_max_min(bool max, Val a, Val b)
{
    double x = a.wfloat ? a.fval : (double)a.ival, y = b.wfloat ? b.fval : (double)b.ival;
    if (!a.wfloat && !b.wfloat) return (max ? x >= y : x <= y) ? a : b;
    double r = isnan(x) ? y : isnan(y) ? x : x == y ? (!signbit(x) == max ? x : y) : max ? fmax(x, y) : fmin(x, y);
    return val_weak_float(r);
}

static Val convert_call(Sema *s, const Expr *e, DType dt, Val x)
{
    if (x.dt == DT_BOOL) {
        sema_err(s, e->loc, "cannot convert bool to %s; use ph.where(c, 1, 0)", ir_dtype_name(dt));
        return val_error();
    }
    if (!x.weak && x.dt == dt) return x;
    return sema_coerce(s, x, dt, x.rank, x.dim, e->loc);
}

static Val where_call(Sema *s, const Expr *e, Val c, Val a, Val b)
{
    char t[64];
    if (c.dt != DT_BOOL) {
        val_str(s, c, t, sizeof t);
        sema_err(s, e->loc, "ph.where needs a bool condition, got %s", t);
        return val_error();
    }
    DType dt;
    if (a.dt == DT_BOOL || b.dt == DT_BOOL) {
        if (a.dt != b.dt) {
            sema_err(s, e->loc, "ph.where cannot choose between bool and a number");
            return val_error();
        }
        dt = DT_BOOL;
    } else {
        dt = sema_promote(a, b);
    }
    int rank, dim[2], rank2, dim2[2];
    Val ab;
    if (!sema_shape_bcast(s, a, b, &rank, dim)
        || (ab = (Val){.dt = dt, .rank = rank, .dim = {dim[0], dim[1]}}, !sema_shape_bcast(s, c, ab, &rank2, dim2))) {
        char ta[64], tb[64];
        val_str(s, c, t, sizeof t);
        val_str(s, a, ta, sizeof ta);
        val_str(s, b, tb, sizeof tb);
        sema_err(s, e->loc, "ph.where: shapes %s, %s and %s do not broadcast", t, ta, tb);
        return val_error();
    }
    c = sema_coerce(s, c, DT_BOOL, rank2, dim2, e->loc);
    a = sema_coerce(s, a, dt, rank2, dim2, e->loc);
    b = sema_coerce(s, b, dt, rank2, dim2, e->loc);
    if (val_bad(a) || val_bad(b) || val_bad(c)) return val_error();
    Val r = {.dt = dt, .rank = rank2, .dim = {dim2[0], dim2[1]}};
    if (s->emit) {
        ValueId args[3] = {c.v, a.v, b.v};
        r.v = sema_emit1(s, OP_SELECT, 3, args, val_irtype(r), e->loc, NULL);
    }
    return r;
}

static Val iota_call(Sema *s, const Expr *e)
{
    int64_t axis;
    char why[200];
    bool known = sema_const_int(s, e->items[0], &axis, why, sizeof why);
    if (!known || (axis != 0 && axis != 1)) {
        if (known) snprintf(why, sizeof why, "%lld", (long long)axis);
        sema_err(s, e->items[0]->loc, "expected 0 or 1 for the axis of ph.iota, got %s", why);
        return val_error();
    }
    int n;
    if (e->nitems == 2) {
        if (!sema_const_dim(s, e->items[1], "the extent of ph.iota", &n)) return val_error();
    } else {
        int i = 0;
        while (i < s->nsym && s->sym_expr[i] != e) i++;
        if (i == s->nsym) {
            if (s->emit || s->nsym == MAX_IOTA) {
                sema_err(s, e->loc, "too many ph.iota calls without an extent in one statement");
                return val_error();
            }
            s->nsym++;
            s->sym_parent[i] = i;
            s->sym_value[i] = 0;
            s->sym_expr[i] = e;
            s->sym_axis[i] = (int)axis;
        }
        n = sema_dim_now(s, -i - 1);
    }
    Val r = {.dt = DT_I32, .rank = 2, .dim = {axis == 0 ? n : 1, axis == 1 ? n : 1}};
    if (s->emit) {
        IrOp *op;
        r.v = sema_emit1(s, OP_IOTA, 0, NULL, val_irtype(r), e->loc, &op);
        op->axis = (int)axis;
    }
    return r;
}

/* ph.argmax(t, axis), ph.argmin(t, axis), ph.cumsum(t, axis): axis a
 * compile-time 0 or 1 of a 2-D number tile. */
static Val along_call(Sema *s, const Expr *e, const Builtin *b)
{
    Val x = sema_expr(s, e->items[0]);
    int64_t axis;
    char why[200], t[64];
    bool known = sema_const_int(s, e->items[1], &axis, why, sizeof why);
    if (!known || (axis != 0 && axis != 1)) {
        if (known) snprintf(why, sizeof why, "%lld", (long long)axis);
        sema_err(s, e->items[1]->loc, "expected 0 or 1 for the axis of ph.%s, got %s", b->name, why);
        return val_error();
    }
    if (val_bad(x)) return x;
    x = sema_widen(s, x, e->loc);
    val_str(s, x, t, sizeof t);
    if (x.rank != 2 || x.dt == DT_BOOL) {
        sema_err(s, e->loc, "ph.%s expects a 2-D i32 or float tile, got %s%s", b->name, t,
                 x.rank == 1 ? "; write ph.reshape(x, [1, n]) for a 1-D tile" : "");
        return val_error();
    }
    Val r = x;
    if (b->sub != OP_CUMSUM) {
        r.dt = DT_I32;
        r.dim[axis] = 1;
    }
    if (s->emit) {
        IrOp *op;
        r.v = sema_emit1(s, (IrOpKind)b->sub, 1, &x.v, val_irtype(r), e->loc, &op);
        op->axis = (int)axis;
    }
    return r;
}

/* ph.reshape(t, [n]), ph.reshape(t, [1, n]), ph.reshape(t, [n, 1]):
 * a vector's elements as another vector. */
static Val reshape_call(Sema *s, const Expr *e)
{
    Val x = sema_expr(s, e->items[0]);
    const Expr *shape = e->items[1];
    if (shape->kind != EX_LIST || shape->nitems < 1 || shape->nitems > 2) {
        sema_err(s, shape->loc, "expected the shape of ph.reshape as a list: [n], [1, n] or [n, 1]");
        return val_error();
    }
    int dim[2] = {1, 1};
    bool ok = true;
    for (int i = 0; i < shape->nitems; i++)
        ok = sema_const_dim(s, shape->items[i], "a dimension of ph.reshape", &dim[i]) && ok;
    if (!ok || val_bad(x)) return val_error();
    Val target = {.dt = x.dt, .rank = shape->nitems, .dim = {dim[0], dim[1]}};
    char a[64], b[64];
    val_str(s, x, a, sizeof a);
    val_str(s, target, b, sizeof b);
    int n, want;
    if (x.rank == 0 || !sema_vector_len(s, x, &n)) {
        sema_err(s, e->items[0]->loc, "ph.reshape changes a vector, [n], [1, n] or [n, 1], got %s", a);
        return val_error();
    }
    if (!sema_vector_len(s, target, &want)) {
        sema_err(s, shape->loc, "ph.reshape makes a vector, [n], [1, n] or [n, 1], not %s", b);
        return val_error();
    }
    if (!sema_dim_same(s, n, want)) {
        sema_err(s, e->loc, "ph.reshape cannot make %s of %s: the element counts differ", b, a);
        return val_error();
    }
    return sema_reshape(s, x, target.rank, dim, e->loc);
}

static const Builtin *builtin_named(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, name)) return &builtins[i];
    return NULL;
}

/* The built-in whose name is nearest to a misspelt one (an edit or two), or NULL. */
static const char *builtin_near(const char *name)
{
    const char *best = NULL;
    int best_d = 3;
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++) {
        int d = edit_distance(name, builtins[i].name);
        if (d < best_d && d < (int)strlen(name)) best = builtins[i].name, best_d = d;
    }
    return best;
}

/* Checks the callee, arity and keywords; NULL after an error. */
static const Builtin *call_target(Sema *s, const Expr *e)
{
    const char *name = sema_ns_attr(s, e->lhs);
    if (!name) {
        if (e->lhs->kind == EX_NAME)
            sema_err(s, e->loc, "'%s' is not a function; only the %s built-ins can be called", e->lhs->name,
                     s->alias ? s->alias : "ph");
        else sema_err(s, e->loc, "only the %s built-ins can be called", s->alias ? s->alias : "ph");
        return NULL;
    }
    const Builtin *b = builtin_named(name);
    if (!b) {
        const char *near = builtin_near(name);
        if (near) sema_err(s, e->loc, "'%s.%s' is not a built-in function; did you mean '%s.%s'?", s->alias, name, s->alias, near);
        else sema_err(s, e->loc, "'%s.%s' is not a built-in function", s->alias, name);
        return NULL;
    }
    for (int i = 0; i < e->nitems; i++) {
        if (e->items[i]->kind == EX_KEYWORD) {
            sema_err(s, e->items[i]->loc, "ph.%s takes no keyword arguments", name);
            return NULL;
        }
    }
    if (e->nitems < b->min || e->nitems > b->max) {
        if (b->min == b->max)
            sema_err(s, e->loc, "ph.%s takes %d argument%s, got %d", name, b->min, b->min == 1 ? "" : "s", e->nitems);
        else sema_err(s, e->loc, "ph.%s takes %d or %d arguments, got %d", name, b->min, b->max, e->nitems);
        return NULL;
    }
    return b;
}

Val sema_call(Sema *s, const Expr *e)
{
    if (sema_is_ns(s->alias, e->lhs, "load")) return sema_masked_load(s, e);
    const FuncDef *helper = sema_helper(s, e->lhs);
    if (helper) return sema_inline_call(s, e, helper, true);
    if (sema_is_ns(s->alias, e->lhs, "store")) {
        sema_err(s, e->loc, "%s.store is a statement: it writes a tensor window and has no value", s->alias);
        return val_error();
    }
    if (sema_is_ns(s->alias, e->lhs, "device_print") || sema_is_ns(s->alias, e->lhs, "device_assert")) {
        sema_err(s, e->loc, "%s.%s is a statement and has no value", s->alias, e->lhs->name);
        return val_error();
    }
    const Builtin *b = call_target(s, e);
    if (!b) return val_error();
    if (b->kind == B_SOFTMAX) {
        sema_err(s, e->loc, "ph.%s is a statement: it updates its first three arguments and has no value", b->name);
        return val_error();
    }
    if (b->kind == B_ATOMIC_ADD) {
        sema_err(s, e->loc, "ph.atomic_add is a statement: it adds into a tensor window and has no value");
        return val_error();
    }
    if (b->kind == B_IOTA) return iota_call(s, e);
    if (b->kind == B_ALONG) return along_call(s, e, b);
    if (b->kind == B_RESHAPE) return reshape_call(s, e);
    Val a[3];
    bool bad = false;
    for (int i = 0; i < e->nitems; i++) {
        a[i] = sema_expr(s, e->items[i]);
        bad |= val_bad(a[i]);
    }
    if (bad) return val_error();
    /* i8 and u8 reach only dots, transposes, conversions and ph.where as they are */
    if (b->kind != B_DOT && b->kind != B_DOT_T && b->kind != B_TRANSPOSE && b->kind != B_CONVERT && b->kind != B_WHERE)
        for (int i = 0; i < e->nitems; i++) a[i] = sema_widen(s, a[i], e->items[i]->loc);
    switch (b->kind) {
    case B_DOT: return dot_call(s, e, false, a[0], a[1]);
    case B_DOT_T: return dot_call(s, e, true, a[0], a[1]);
    case B_TRANSPOSE: {
        char t[64];
        val_str(s, a[0], t, sizeof t);
        if (a[0].rank != 2) {
            sema_err(s, e->loc, "ph.transpose expects a 2-D tile, got %s", t);
            return val_error();
        }
        Val r = a[0];
        r.dim[0] = a[0].dim[1];
        r.dim[1] = a[0].dim[0];
        if (s->emit) r.v = sema_emit1(s, OP_TRANSPOSE, 1, &a[0].v, val_irtype(r), e->loc, NULL);
        return r;
    }
    case B_MATH: case B_ABS: return math_call(s, e, b, a[0]);
    case B_MAX: case B_MIN:
        if (a[0].weak && a[1].weak) return weak_max_min(b->kind == B_MAX, a[0], a[1]);
        return sema_elementwise(s, OP_BINARY, b->sub, T_EOF, a[0], a[1], e->loc, b->name);
    case B_POW: case B_FMA: return float_nary_call(s, e, b, a, e->nitems);
    case B_REDUCE: return reduce_call(s, e, b, a[0]);
    case B_WHERE: return where_call(s, e, a[0], a[1], a[2]);
    case B_CONVERT: return convert_call(s, e, (DType)b->sub, a[0]);
    default: return val_error();
    }
}

/* ---- ph.online_softmax ---- */
static int var_arg(Sema *s, const Expr *e, const char *fn)
{
    Sym *y = e->kind == EX_NAME ? sema_lookup(s, e->name) : NULL;
    if (e->kind != EX_NAME) {
        sema_err(s, e->loc, "ph.%s updates its first three arguments: each must be a var", fn);
        return -1;
    }
    if (!y) {
        sema_err(s, e->loc, "undeclared name '%s'", e->name);
        return -1;
    }
    if (y->kind != SYM_VAR) {
        sema_err(s, e->loc, "'%s' is not a var; declare it with ph.var to assign to it", e->name);
        return -1;
    }
    if (val_bad(y->val)) {
        s->bad++;
        return -1;
    }
    return (int)(y - s->syms.data);
}

static bool softmax_shape(Sema *s, const char *fn, const Expr *e, Val v, bool ok_dt, int d0, int d1, const char *want)
{
    if (v.rank == 2 && ok_dt && sema_dim_same(s, v.dim[0], d0) && sema_dim_same(s, v.dim[1], d1)) return true;
    char t[64];
    val_str(s, v, t, sizeof t);
    sema_err(s, e->loc, "ph.%s expects %s, got %s", fn, want, t);
    return false;
}

static ValueId emit_bin(Sema *s, int sub, ValueId a, ValueId b, IrType t, Loc loc)
{
    IrOp *op;
    ValueId args[2] = {a, b};
    ValueId v = sema_emit1(s, OP_BINARY, 2, args, t, loc, &op);
    op->sub = sub;
    return v;
}

static ValueId emit_un(Sema *s, int sub, ValueId a, IrType t, Loc loc)
{
    IrOp *op;
    ValueId v = sema_emit1(s, OP_UNARY, 1, &a, t, loc, &op);
    op->sub = sub;
    return v;
}

static ValueId emit_rowred(Sema *s, int sub, ValueId a, IrType t, Loc loc)
{
    IrOp *op;
    ValueId v = sema_emit1(s, OP_REDUCE, 1, &a, t, loc, &op);
    op->sub = sub;
    op->axis = 1;
    return v;
}

void sema_online_softmax(Sema *s, const Expr *e)
{
    const Builtin *b = call_target(s, e);
    if (!b) return;
    const char *fn = b->name;
    IrUnop ex = (IrUnop)b->sub;   /* exp, or exp2 for online_softmax2 (s and m in base-2 units) */
    int iacc = var_arg(s, e->items[0], fn), im = var_arg(s, e->items[1], fn), il = var_arg(s, e->items[2], fn);
    Val sv = sema_expr(s, e->items[3]), vv = sema_expr(s, e->items[4]);
    if (iacc < 0 || im < 0 || il < 0 || val_bad(sv) || val_bad(vv)) return;
    Val acc = s->syms.data[iacc].val, m = s->syms.data[im].val, l = s->syms.data[il].val;
    if (!softmax_shape(s, fn, e->items[0], acc, acc.dt == DT_F32, acc.dim[0], acc.dim[1], "an f32 [M, N] var for acc")) return;
    int M = acc.dim[0], N = acc.dim[1];
    bool ok = softmax_shape(s, fn, e->items[1], m, m.dt == DT_F32, M, 1, "an f32 [M, 1] var for m (acc is [M, N])");
    ok = softmax_shape(s, fn, e->items[2], l, l.dt == DT_F32, M, 1, "an f32 [M, 1] var for l (acc is [M, N])") && ok;
    ok = ok && softmax_shape(s, fn, e->items[3], sv, sv.dt == DT_F32, M, sv.rank == 2 ? sv.dim[1] : 1,
                             "an f32 [M, K] tile for s (acc is [M, N])");
    ok = ok && softmax_shape(s, fn, e->items[4], vv, vv.dt == DT_F16 || vv.dt == DT_BF16, sv.dim[1], N,
                             "an f16 or bf16 [K, N] tile for v (s is [M, K], acc is [M, N])");
    if (!ok || !s->emit) return;
    Loc loc = e->loc;
    int K = sv.dim[1];
    IrType col = ir_tile2(DT_F32, M, 1), mk = ir_tile2(DT_F32, M, K), mn_t = ir_tile2(DT_F32, M, N);
    ValueId rm = emit_rowred(s, RED_MAX, sv.v, col, loc);
    ValueId mn = emit_bin(s, BIN_MAX, m.v, rm, col, loc);
    ValueId a = emit_un(s, ex, emit_bin(s, BIN_SUB, m.v, mn, col, loc), col, loc);
    /* s - mn before exp scales by log2(e): s * log2e - mn * log2e would be
     * one fma per score on the GPU, whose exponent for s == mn is the
     * rounding error of mn * log2e, huge when mn is a mask value such as
     * -1.0e30 (tests/difftest/regressions/softmax-masked-leading-blocks.ph).
     * online_softmax2 takes s in base-2 units (the program folds log2(e)
     * into the scale it multiplies the scores by): one subtraction and the
     * exp2, exact where s == mn */
    ValueId mnb = sema_emit1(s, OP_BROADCAST, 1, &mn, mk, loc, NULL);
    ValueId p = emit_un(s, ex, emit_bin(s, BIN_SUB, sv.v, mnb, mk, loc), mk, loc);
    ValueId lnew = emit_bin(s, BIN_ADD, emit_bin(s, BIN_MUL, l.v, a, col, loc), emit_rowred(s, RED_SUM, p, col, loc), col, loc);
    ValueId ab = sema_emit1(s, OP_BROADCAST, 1, &a, mn_t, loc, NULL);
    ValueId scaled = emit_bin(s, BIN_MUL, acc.v, ab, mn_t, loc);
    ValueId p16 = sema_emit1(s, OP_CONVERT, 1, &p, ir_tile2(vv.dt, M, K), loc, NULL);
    /* the dot accumulates onto the rescaled acc: no separate add per element */
    ValueId dargs[3] = {p16, vv.v, scaled};
    ValueId accnew = sema_emit1(s, OP_DOT, 3, dargs, mn_t, loc, NULL);
    Sym *ys[3] = {&s->syms.data[iacc], &s->syms.data[im], &s->syms.data[il]};
    ValueId nv[3] = {accnew, mn, lnew};
    for (int i = 0; i < 3; i++) {
        ys[i]->val.v = nv[i];
        s->f->values[nv[i]].name = arena_strdup(s->f->arena, ys[i]->name);
    }
}

/* ---- ph.atomic_add ---- */

/* The window ph.atomic_add adds into: X[...] of an f32 or i32 tensor
 * parameter; false after an error. */
static bool atomic_window(Sema *s, const Expr *t, Window *w)
{
    const Expr *x = t->kind == EX_INDEX ? t->lhs : NULL;
    Sym *y = x && x->kind == EX_NAME ? sema_lookup(s, x->name) : NULL;
    if (x && x->kind == EX_NAME && !y) {
        sema_err(s, x->loc, "undeclared name '%s'", x->name);
        return false;
    }
    if (!y || y->kind != SYM_TENSOR) {
        sema_err(s, t->loc, "ph.atomic_add adds into a window of a tensor parameter: expected X[r:+n, c:+m] or X[i:+n] "
                 "as its first argument");
        return false;
    }
    if (!sema_window(s, t, w)) return false;
    if (w->dt != DT_F32 && w->dt != DT_I32 && w->dt != DT_I64) {
        sema_err(s, t->loc, "ph.atomic_add adds into f32 or i32 tensors; '%s' is %s", x->name, ir_dtype_name(w->dt));
        return false;
    }
    return true;
}

/* ph.atomic_add(X[...], value): value, broadcast to the window and
 * converted to X's dtype as a store converts, is added to each element of
 * the window inside X, atomically with other blocks' adds; through a tile
 * of indices, each element adds into the element its indices name. */
void sema_atomic_add(Sema *s, const Expr *e)
{
    if (!call_target(s, e)) return;
    Window w = {0};
    bool ok = atomic_window(s, e->items[0], &w);
    Val x = sema_expr(s, e->items[1]);
    if (!ok) return;
    char what[96];
    snprintf(what, sizeof what, "the window of '%s'", s->k->params[w.param].name);
    x = sema_window_value(s, x, &w, e->items[1]->loc, what);
    x = sema_coerce_to(s, x, w.dt, w.vrank, w.vdim, e->items[1]->loc, what);
    if (val_bad(x) || !s->emit) return;
    ValueId args[IR_MAX_RANK + 1];
    bool gathers = sema_window_gathers(&w);
    int n = sema_window_starts(s, &w, e->loc, args);
    args[n] = x.v;
    IrOp *op = ir_emit(s->f, s->blk, gathers ? OP_SCATTER_ADD : OP_ATOMIC_ADD, n + 1, args, 0, NULL);
    op->loc = e->loc;
    op->param = w.param;
    op->window_axes = w.axes;
}

