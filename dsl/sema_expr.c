/* sema_expr.c: typing and lowering of expressions: literals (weak dtypes),
 * names, operators with promotion and NumPy broadcasting, windows, the
 * built-ins, and compile-time integer expressions. Each function serves
 * both passes of a statement (see sema.h): it always computes the type,
 * reports errors only in the typing pass, and emits IR only in the
 * emitting pass, inserting converts, splats and broadcasts so that every
 * elementwise op sees operands of one type. */
#include "sema.h"
#include "base/floormod.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void sema_err(Sema *s, Loc loc, const char *fmt, ...)
{
    s->bad++;
    if (s->emit) return;   /* the typing pass already said it */
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(s->d, loc, "%s", msg);
}

Val val_error(void) { return (Val){.dt = DT_VOID}; }
bool val_bad(Val v) { return v.dt == DT_VOID; }

static Val weak_int(int64_t i) { return (Val){.dt = DT_I32, .weak = true, .ival = i}; }
static Val weak_float(double f) { return (Val){.dt = DT_F32, .weak = true, .wfloat = true, .fval = f}; }
static Val scalar_val(DType dt, ValueId v) { return (Val){.dt = dt, .v = v}; }

Sym *sema_lookup(Sema *s, const char *name)
{
    for (int i = s->syms.len - 1; i >= 0; i--)
        if (!strcmp(s->syms.data[i].name, name)) return &s->syms.data[i];
    return NULL;
}

/* ---- iota extents: symbols unified by broadcasting ---- */
static int sym_root(Sema *s, int i)
{
    for (int n = 0; n < MAX_IOTA && s->sym_parent[i] != i; n++) i = s->sym_parent[i];
    return i;
}

/* A dim as it is known now: a positive extent, or the root symbol. */
static int dim_now(Sema *s, int d)
{
    if (d > 0) return d;
    int r = sym_root(s, -d - 1);
    return s->sym_value[r] ? s->sym_value[r] : -r - 1;
}

static void dim_bind(Sema *s, int d, int value) { s->sym_value[sym_root(s, -d - 1)] = value; }

static void dim_union(Sema *s, int a, int b)
{
    int ra = sym_root(s, -a - 1), rb = sym_root(s, -b - 1);
    if (ra != rb) s->sym_parent[ra] = rb;
}

/* Both dims must be the same extent (dot's K, online_softmax's M ...). */
static bool dim_same(Sema *s, int a, int b)
{
    a = dim_now(s, a);
    b = dim_now(s, b);
    if (a > 0 && b > 0) return a == b;
    if (a < 0 && b < 0) dim_union(s, a, b);
    else if (a < 0) dim_bind(s, a, b);
    else dim_bind(s, b, a);
    return true;
}

/* NumPy broadcasting of two dims; an unknown iota extent meeting an extent
 * other than 1 takes it. */
static bool dim_bcast(Sema *s, int a, int b, int *out)
{
    a = dim_now(s, a);
    b = dim_now(s, b);
    if (a > 0 && b > 0) {
        if (a != b && a != 1 && b != 1) return false;
        *out = a == 1 ? b : a;
    } else if (a < 0 && b < 0) {
        dim_union(s, a, b);
        *out = a;
    } else if (a < 0) {
        if (b != 1) dim_bind(s, a, b);
        *out = b == 1 ? a : b;
    } else {
        if (a != 1) dim_bind(s, b, a);
        *out = a == 1 ? b : a;
    }
    return true;
}

/* A dim stretched to a target extent. */
static bool dim_to(Sema *s, int a, int t)
{
    a = dim_now(s, a);
    t = dim_now(s, t);
    if (a > 0 && t > 0) return a == t || a == 1;
    if (a < 0 && t < 0) dim_union(s, a, t);
    else if (a < 0) dim_bind(s, a, t);
    else if (a != 1) dim_bind(s, t, a);
    return true;
}

/* The 2-D view of a shape, aligned to the right: [n] is [1, n]. */
static void dims2(Val v, int out[2])
{
    out[0] = v.rank == 2 ? v.dim[0] : 1;
    out[1] = v.rank == 2 ? v.dim[1] : v.rank == 1 ? v.dim[0] : 1;
}

static bool shape_bcast(Sema *s, Val a, Val b, int *rank, int dim[2])
{
    int r = a.rank > b.rank ? a.rank : b.rank, ad[2], bd[2], out[2] = {1, 1};
    dims2(a, ad);
    dims2(b, bd);
    for (int i = 2 - r; i < 2; i++)
        if (!dim_bcast(s, ad[i], bd[i], &out[i])) return false;
    *rank = r;
    dim[0] = r == 2 ? out[0] : r == 1 ? out[1] : 1;
    dim[1] = r == 2 ? out[1] : 1;
    return true;
}

bool sema_resolve_iotas(Sema *s)
{
    bool ok = true;
    for (int i = 0; i < s->nsym; i++) {
        if (s->sym_value[sym_root(s, i)]) continue;
        sema_err(s, s->sym_expr[i]->loc, "cannot infer the extent of ph.iota(%d): nothing in this statement "
                 "broadcasts it to a known shape; write ph.iota(%d, n)", s->sym_axis[i], s->sym_axis[i]);
        ok = false;
    }
    return ok;
}

/* ---- types as text ---- */
void val_str(Sema *s, Val v, char *buf, size_t n)
{
    if (v.rank == 0) {
        snprintf(buf, n, "%s", ir_dtype_name(v.dt));
        return;
    }
    char d[2][16];
    for (int i = 0; i < v.rank; i++) {
        int x = dim_now(s, v.dim[i]);
        if (x > 0) snprintf(d[i], sizeof d[i], "%d", x);
        else snprintf(d[i], sizeof d[i], "?");
    }
    if (v.rank == 1) snprintf(buf, n, "%s[%s]", ir_dtype_name(v.dt), d[0]);
    else snprintf(buf, n, "%s[%s, %s]", ir_dtype_name(v.dt), d[0], d[1]);
}

IrType val_irtype(Val v)
{
    IrType t = {v.dt, v.rank, {1, 1}};
    for (int i = 0; i < v.rank; i++) t.shape[i] = v.dim[i];
    return t;
}

static const char *op_text(TokKind op)
{
    switch (op) {
    case T_PLUS: return "+";
    case T_MINUS: return "-";
    case T_STAR: return "*";
    case T_SLASH: return "/";
    case T_DSLASH: return "//";
    case T_PERCENT: return "%";
    case T_DSTAR: return "**";
    case T_AT: return "@";
    case T_EQ: return "==";
    case T_NE: return "!=";
    case T_LT: return "<";
    case T_LE: return "<=";
    case T_GT: return ">";
    case T_GE: return ">=";
    case T_AND: return "and";
    case T_OR: return "or";
    case T_NOT: return "not";
    case T_TILDE: return "~";
    case T_AMP: return "&";
    case T_PIPE: return "|";
    case T_CARET: return "^";
    case T_SHL: return "<<";
    case T_SHR: return ">>";
    default: return "?";
    }
}

/* ---- emitting ---- */
ValueId sema_emit1(Sema *s, IrOpKind kind, int nargs, const ValueId *args, IrType t, Loc loc, IrOp **opp)
{
    IrOp *op = ir_emit(s->f, s->blk, kind, nargs, args, 1, &t);
    op->loc = loc;
    if (opp) *opp = op;
    return op->res[0];
}

ValueId sema_const(Sema *s, DType dt, int64_t i, double f, Loc loc)
{
    IrOp *op;
    ValueId v = sema_emit1(s, OP_CONST, 0, NULL, ir_scalar(dt), loc, &op);
    if (ir_is_float(dt)) op->fval = f;
    else op->ival = dt == DT_BOOL ? i != 0 : i;
    return v;
}

static ValueId weak_value(Sema *s, Val x, DType dt, Loc loc)
{
    if (ir_is_float(dt)) return sema_const(s, dt, 0, x.wfloat ? x.fval : (double)x.ival, loc);
    return sema_const(s, dt, x.wfloat ? (int64_t)x.fval : x.ival, 0, loc);
}

/* Converts then stretches x to (dt, rank, dim); the caller checked that it may. */
static Val coerce(Sema *s, Val x, DType dt, int rank, const int dim[2], Loc loc)
{
    Val r = {.dt = dt, .rank = rank, .dim = {dim[0], dim[1]}};
    if (x.weak && dt == DT_I32 && !x.wfloat && (x.ival > INT32_MAX || x.ival < INT32_MIN)) {
        sema_err(s, loc, "integer %lld does not fit in i32", (long long)x.ival);
        return val_error();
    }
    if (x.weak && dt == DT_I32 && x.wfloat && !(fabs(x.fval) < 2147483648.0)) {
        sema_err(s, loc, "%g does not fit in i32", x.fval);
        return val_error();
    }
    if (!s->emit) return r;
    ValueId v;
    if (x.weak) {
        v = weak_value(s, x, dt, loc);
        x = (Val){.dt = dt};
    } else {
        v = x.v;
        if (x.dt != dt) {
            x.dt = dt;
            v = sema_emit1(s, OP_CONVERT, 1, &v, val_irtype(x), loc, NULL);
        }
    }
    if (rank > 0) {
        if (x.rank == 0) v = sema_emit1(s, OP_SPLAT, 1, &v, val_irtype(r), loc, NULL);
        else if (!ir_type_eq(val_irtype(x), val_irtype(r)))
            v = sema_emit1(s, OP_BROADCAST, 1, &v, val_irtype(r), loc, NULL);
    }
    r.v = v;
    return r;
}

Val sema_coerce_to(Sema *s, Val x, DType dt, int rank, const int dim[2], Loc loc, const char *what)
{
    if (val_bad(x)) return x;
    Val target = {.dt = dt, .rank = rank, .dim = {dim[0], dim[1]}};
    char a[64], b[64];
    if (!s->emit) {
        if ((x.dt == DT_BOOL) != (dt == DT_BOOL)) {
            val_str(s, x, a, sizeof a);
            val_str(s, target, b, sizeof b);
            sema_err(s, loc, "cannot convert %s to %s (%s)", a, b, what);
            return val_error();
        }
        bool ok = x.rank <= rank;
        int xd[2], td[2];
        dims2(x, xd);
        dims2(target, td);
        for (int i = 2 - rank; ok && i < 2; i++) ok = dim_to(s, xd[i], td[i]);
        if (!ok) {
            val_str(s, x, a, sizeof a);
            val_str(s, target, b, sizeof b);
            sema_err(s, loc, "cannot broadcast %s to %s (%s)", a, b, what);
            return val_error();
        }
    }
    return coerce(s, x, dt, rank, dim, loc);
}

/* ---- dtype promotion ---- */
static DType promote_strong(DType a, DType b)
{
    if (a == b) return a;
    if (a == DT_I32) return b;
    if (b == DT_I32) return a;
    if (a == DT_F32 || b == DT_F32) return DT_F32;
    return DT_F32;   /* f16 with bf16 */
}

/* The common dtype of two numeric operands, literals taking the other's. */
static DType promote(Val a, Val b)
{
    if (a.weak && b.weak) return a.wfloat || b.wfloat ? DT_F32 : DT_I32;
    if (a.weak) return a.wfloat && b.dt == DT_I32 ? DT_F32 : b.dt;
    if (b.weak) return b.wfloat && a.dt == DT_I32 ? DT_F32 : a.dt;
    return promote_strong(a.dt, b.dt);
}

/* ---- constant folding of literal arithmetic ---- */
static int64_t floordiv64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && (a < 0) != (b < 0)) q--;
    return q;
}

static bool fold_int(TokKind op, int64_t a, int64_t b, int64_t *out, const char **why)
{
    switch (op) {
    case T_PLUS: if (__builtin_add_overflow(a, b, out)) goto overflow; return true;
    case T_MINUS: if (__builtin_sub_overflow(a, b, out)) goto overflow; return true;
    case T_STAR: if (__builtin_mul_overflow(a, b, out)) goto overflow; return true;
    case T_DSLASH: case T_PERCENT:
        if (b == 0) { *why = "division by zero"; return false; }
        if (a == INT64_MIN && b == -1) goto overflow;
        *out = op == T_DSLASH ? floordiv64(a, b) : a - floordiv64(a, b) * b;
        return true;
    default: return false;
    }
overflow:
    *why = "integer overflow in a constant expression";
    return false;
}

static double fold_float(TokKind op, double a, double b)
{
    switch (op) {
    case T_PLUS: return a + b;
    case T_MINUS: return a - b;
    case T_STAR: return a * b;
    case T_SLASH: return a / b;
    case T_DSLASH: return floor_div_f64(a, b);
    default: return floor_mod_f64(a, b);   /* T_PERCENT */
    }
}

/* ---- operators ---- */
static const int binop_of[T_COUNT] = {
    [T_PLUS] = BIN_ADD, [T_MINUS] = BIN_SUB, [T_STAR] = BIN_MUL, [T_SLASH] = BIN_DIV,
    [T_DSLASH] = BIN_FLOORDIV, [T_PERCENT] = BIN_MOD, [T_AND] = BIN_AND, [T_OR] = BIN_OR,
};
static const int cmp_of[T_COUNT] = {
    [T_LT] = CMP_LT, [T_LE] = CMP_LE, [T_GT] = CMP_GT, [T_GE] = CMP_GE, [T_EQ] = CMP_EQ, [T_NE] = CMP_NE,
};

static bool is_cmp(TokKind op) { return op >= T_EQ && op <= T_GE; }

/* Elementwise binary op: kind OP_BINARY (sub an IrBinop) or OP_CMP. name is
 * the operator or built-in in messages. */
static Val elementwise(Sema *s, IrOpKind kind, int sub, TokKind fold_op, Val a, Val b, Loc loc, const char *name)
{
    if (val_bad(a) || val_bad(b)) return val_error();
    char ta[64], tb[64];
    val_str(s, a, ta, sizeof ta);
    val_str(s, b, tb, sizeof tb);
    bool logical = kind == OP_BINARY && (sub == BIN_AND || sub == BIN_OR);
    DType dt;
    if (logical) {
        if (a.dt != DT_BOOL || b.dt != DT_BOOL) {
            sema_err(s, loc, "'%s' needs bool operands, got %s and %s", name, ta, tb);
            return val_error();
        }
        dt = DT_BOOL;
    } else if (a.dt == DT_BOOL || b.dt == DT_BOOL) {
        if (!(kind == OP_CMP && (sub == CMP_EQ || sub == CMP_NE) && a.dt == b.dt)) {
            sema_err(s, loc, "'%s' does not take bool operands, got %s and %s", name, ta, tb);
            return val_error();
        }
        dt = DT_BOOL;
    } else {
        dt = promote(a, b);
        if (kind == OP_BINARY && sub == BIN_DIV && dt == DT_I32) {
            sema_err(s, loc, "'/' on two i32 values; use '//'");
            return val_error();
        }
    }
    if (a.weak && b.weak && kind == OP_BINARY && fold_op != T_EOF) {
        if (dt == DT_I32) {
            const char *why = NULL;
            int64_t r;
            if (!fold_int(fold_op, a.ival, b.ival, &r, &why)) {
                sema_err(s, loc, "%s", why ? why : "cannot fold this constant expression");
                return val_error();
            }
            return weak_int(r);
        }
        double x = a.wfloat ? a.fval : (double)a.ival, y = b.wfloat ? b.fval : (double)b.ival;
        return weak_float(fold_float(fold_op, x, y));
    }
    int rank, dim[2];
    if (!shape_bcast(s, a, b, &rank, dim)) {
        sema_err(s, loc, "shapes %s and %s do not broadcast in '%s'", ta, tb, name);
        return val_error();
    }
    a = coerce(s, a, dt, rank, dim, loc);
    b = coerce(s, b, dt, rank, dim, loc);
    if (val_bad(a) || val_bad(b)) return val_error();
    Val r = {.dt = kind == OP_CMP ? DT_BOOL : dt, .rank = rank, .dim = {dim[0], dim[1]}};
    if (s->emit) {
        IrOp *op;
        ValueId args[2] = {a.v, b.v};
        r.v = sema_emit1(s, kind, 2, args, val_irtype(r), loc, &op);
        op->sub = sub;
    }
    return r;
}

Val sema_binary(Sema *s, TokKind op, Val a, Val b, Loc loc)
{
    if (is_cmp(op)) return elementwise(s, OP_CMP, cmp_of[op], T_EOF, a, b, loc, op_text(op));
    return elementwise(s, OP_BINARY, binop_of[op], op == T_AND || op == T_OR ? T_EOF : op, a, b, loc, op_text(op));
}

static Val unary_op(Sema *s, IrUnop sub, Val x, Loc loc)
{
    if (!s->emit) return x;
    IrOp *op;
    x.v = sema_emit1(s, OP_UNARY, 1, &x.v, val_irtype(x), loc, &op);
    op->sub = sub;
    return x;
}

static Val unary(Sema *s, const Expr *e)
{
    if (e->op != T_MINUS && e->op != T_PLUS && e->op != T_NOT) {
        sema_err(s, e->loc, "operator '%s' is not supported", op_text(e->op));
        return val_error();
    }
    Val x = sema_expr(s, e->lhs);
    if (val_bad(x)) return x;
    char t[64];
    val_str(s, x, t, sizeof t);
    if (e->op == T_NOT) {
        if (x.dt != DT_BOOL) {
            sema_err(s, e->loc, "'not' needs a bool operand, got %s", t);
            return val_error();
        }
        return unary_op(s, UN_NOT, x, e->loc);
    }
    if (x.dt == DT_BOOL) {
        sema_err(s, e->loc, "unary '%s' does not take a bool operand", op_text(e->op));
        return val_error();
    }
    if (e->op == T_PLUS) return x;
    if (x.weak) {
        if (x.wfloat) return weak_float(-x.fval);
        if (x.ival == INT64_MIN) {
            sema_err(s, e->loc, "integer overflow in a constant expression");
            return val_error();
        }
        return weak_int(-x.ival);
    }
    return unary_op(s, UN_NEG, x, e->loc);
}

/* ---- names ---- */
const char *ns_attr_of(const char *alias, const Expr *e)
{
    if (!alias || !e || e->kind != EX_ATTR || !e->lhs || e->lhs->kind != EX_NAME) return NULL;
    return strcmp(e->lhs->name, alias) ? NULL : e->name;
}

const char *sema_ns_attr(Sema *s, const Expr *e) { return ns_attr_of(s->alias, e); }

DType sema_dtype(const char *alias, const Expr *e)
{
    const char *n = ns_attr_of(alias, e);
    if (!n && e && e->kind == EX_NAME && !strcmp(e->name, "bool")) return DT_BOOL;
    if (!n) return DT_VOID;
    static const struct { const char *name; DType dt; } map[] = {
        {"f16", DT_F16}, {"bf16", DT_BF16}, {"f32", DT_F32}, {"i32", DT_I32}, {"bool", DT_BOOL},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(n, map[i].name)) return map[i].dt;
    return DT_VOID;
}

static Val name_value(Sema *s, const Expr *e)
{
    Sym *y = sema_lookup(s, e->name);
    if (!y) {
        sema_err(s, e->loc, "undeclared name '%s'", e->name);
        return val_error();
    }
    switch (y->kind) {
    case SYM_META:
        return weak_int(y->val.ival);
    case SYM_DIM: {
        Val r = scalar_val(DT_I32, 0);
        if (s->emit) {
            IrOp *op;
            r.v = sema_emit1(s, OP_DIM, 0, NULL, ir_scalar(DT_I32), e->loc, &op);
            op->param = y->param;
            op->axis = y->axis;
            s->f->values[r.v].name = arena_strdup(s->f->arena, y->name);
        }
        return r;
    }
    case SYM_TENSOR:
        sema_err(s, e->loc, "tensor '%s' is not a value; load a window of it, e.g. %s[r:+n%s]",
                 e->name, e->name, s->k->params[y->param].rank == 2 ? ", c:+m" : "");
        return val_error();
    case SYM_ALIAS:
        sema_err(s, e->loc, "'%s' is the namespace of the built-ins, not a value", e->name);
        return val_error();
    default:
        if (val_bad(y->val)) s->bad++;
        return y->val;
    }
}

static Val ctx_value(Sema *s, const Expr *e)
{
    const Expr *mid = e->lhs;
    const char *what = mid && mid->kind == EX_ATTR ? mid->name : NULL;
    if (!what || strcmp(ns_attr_of(s->alias, mid->lhs) ? mid->lhs->name : "", "ctx")
        || (strcmp(what, "block") && strcmp(what, "grid"))) {
        sema_err(s, e->loc, "expected ph.ctx.block.x|y|z or ph.ctx.grid.x|y|z");
        return val_error();
    }
    int axis = !strcmp(e->name, "x") ? 0 : !strcmp(e->name, "y") ? 1 : !strcmp(e->name, "z") ? 2 : -1;
    if (axis < 0) {
        sema_err(s, e->loc, "expected x, y or z after ph.ctx.%s, got '%s'", what, e->name);
        return val_error();
    }
    Val r = scalar_val(DT_I32, 0);
    if (s->emit) {
        IrOp *op;
        r.v = sema_emit1(s, !strcmp(what, "block") ? OP_BLOCK_ID : OP_GRID_DIM, 0, NULL, ir_scalar(DT_I32), e->loc, &op);
        op->axis = axis;
    }
    return r;
}

static Val attr_value(Sema *s, const Expr *e)
{
    if (e->lhs && e->lhs->kind == EX_ATTR && e->lhs->lhs && e->lhs->lhs->kind == EX_ATTR) return ctx_value(s, e);
    const char *n = sema_ns_attr(s, e);
    if (n) sema_err(s, e->loc, "'%s.%s' is not a value", s->alias, n);
    else sema_err(s, e->loc, "attribute '.%s' is not supported here; only ph.NAME and ph.ctx.block/grid.x|y|z", e->name);
    return val_error();
}

/* ---- compile-time integers ---- */
static void describe_name(Sema *s, const Expr *e, char *why, size_t n)
{
    Sym *y = sema_lookup(s, e->name);
    char t[64];
    if (!y) { snprintf(why, n, "undeclared name '%s'", e->name); return; }
    switch (y->kind) {
    case SYM_DIM: snprintf(why, n, "run-time dimension '%s'", e->name); return;
    case SYM_TENSOR: snprintf(why, n, "tensor '%s'", e->name); return;
    case SYM_ALIAS: snprintf(why, n, "the namespace '%s'", e->name); return;
    case SYM_LOOP: snprintf(why, n, "loop variable '%s'", e->name); return;
    default:
        val_str(s, y->val, t, sizeof t);
        snprintf(why, n, "%s value '%s'", val_bad(y->val) ? "erroneous" : t, e->name);
    }
}

static bool const_rec(Sema *s, const Expr *e, int64_t *out, char *why, size_t n, int depth)
{
    if (depth > MAX_DEPTH) { snprintf(why, n, "an expression nested too deeply"); return false; }
    switch (e->kind) {
    case EX_INT:
        if (e->overflow) { snprintf(why, n, "an integer literal that is too large"); return false; }
        *out = e->ival;
        return true;
    case EX_NAME: {
        Sym *y = sema_lookup(s, e->name);
        if (y && y->kind == SYM_META) { *out = y->val.ival; return true; }
        describe_name(s, e, why, n);
        return false;
    }
    case EX_UNARY:
        if (e->op != T_MINUS && e->op != T_PLUS) break;
        if (!const_rec(s, e->lhs, out, why, n, depth + 1)) return false;
        if (e->op == T_MINUS) {
            if (*out == INT64_MIN) { snprintf(why, n, "a value that overflows"); return false; }
            *out = -*out;
        }
        return true;
    case EX_BINARY: {
        if (e->op != T_PLUS && e->op != T_MINUS && e->op != T_STAR && e->op != T_DSLASH) {
            snprintf(why, n, "an expression with '%s' (compile-time integers take + - * //)", op_text(e->op));
            return false;
        }
        int64_t a, b;
        const char *err = NULL;
        if (!const_rec(s, e->lhs, &a, why, n, depth + 1) || !const_rec(s, e->rhs, &b, why, n, depth + 1)) return false;
        if (!fold_int(e->op, a, b, out, &err)) { snprintf(why, n, "%s", err ? err : "an overflow"); return false; }
        return true;
    }
    case EX_FLOAT:
        snprintf(why, n, "the float %g", e->fval);
        return false;
    default:
        break;
    }
    snprintf(why, n, "a value known only at run time");
    return false;
}

bool sema_const_int(Sema *s, const Expr *e, int64_t *out, char *why, size_t n)
{
    return const_rec(s, e, out, why, n, 0);
}

bool sema_const_dim(Sema *s, const Expr *e, const char *what, int *out)
{
    int64_t v;
    char why[200];
    if (!sema_const_int(s, e, &v, why, sizeof why)) {
        sema_err(s, e->loc, "expected a compile-time integer for %s, got %s", what, why);
        return false;
    }
    if (v < 1) {
        sema_err(s, e->loc, "%s must be at least 1, got %lld", what, (long long)v);
        return false;
    }
    if (v > MAX_DIM) {
        sema_err(s, e->loc, "%s is %lld; at most %d is supported", what, (long long)v, MAX_DIM);
        return false;
    }
    *out = (int)v;
    return true;
}

/* ---- windows ---- */
/* e NULL: the start of ':' or ':+n', 0, at loc. */
static bool window_start(Sema *s, const Expr *e, Loc loc, Val *out)
{
    Val v = e ? sema_expr(s, e) : weak_int(0);
    if (val_bad(v)) return false;
    if (v.rank != 0 || v.dt != DT_I32 || (v.weak && v.wfloat)) {
        char t[64];
        val_str(s, v, t, sizeof t);
        sema_err(s, e->loc, "expected an i32 scalar for the window start, got %s", t);
        return false;
    }
    int none[2] = {1, 1};
    *out = coerce(s, v, DT_I32, 0, none, e ? e->loc : loc);
    return !val_bad(*out);
}

/* 'r:+n - 1' parses as r : ((+n) - 1): the '+' that marks a length is on
 * the leftmost operand of the expression after ':'. */
static bool leading_plus(const Expr *e)
{
    for (int i = 0; e && i < MAX_DEPTH; i++) {
        if (e->kind == EX_UNARY && e->op == T_PLUS) return true;
        if (e->kind != EX_BINARY) return false;
        e = e->lhs;
    }
    return false;
}

static bool window_item(Sema *s, const IrParam *p, int axis, const Expr *it, Val *start, int *ext)
{
    if (it->kind != EX_SLICE) {
        *ext = 1;
        return window_start(s, it, it->loc, start);
    }
    if (!it->lhs && !it->rhs) {
        if (!p->dim_name[axis]) { *ext = (int)p->dim_value[axis]; return window_start(s, NULL, it->loc, start); }
        Sym *y = sema_lookup(s, p->dim_name[axis]);
        if (!y || y->kind != SYM_META) {
            sema_err(s, it->loc, "':' takes the whole of dimension '%s', which is known only at run time; "
                     "write 'start:+length' with a compile-time length", p->dim_name[axis]);
            return false;
        }
        if (y->val.ival < 1 || y->val.ival > MAX_DIM) {
            sema_err(s, it->loc, "':' takes the whole of dimension '%s' = %lld, which is not a valid tile extent",
                     p->dim_name[axis], (long long)y->val.ival);
            return false;
        }
        *ext = (int)y->val.ival;
        return window_start(s, NULL, it->loc, start);
    }
    if (!leading_plus(it->rhs)) {
        sema_err(s, it->loc, "expected a window 'start:+length' (or ':' for the whole dimension); "
                 "'start:stop' slices are not supported");
        return false;
    }
    bool ok = window_start(s, it->lhs, it->loc, start);
    return sema_const_dim(s, it->rhs, "the window length", ext) && ok;
}

bool sema_window(Sema *s, const Expr *index, Window *w)
{
    const Expr *x = index->lhs;
    Sym *y = x && x->kind == EX_NAME ? sema_lookup(s, x->name) : NULL;
    if (!y || y->kind != SYM_TENSOR) {
        if (x && x->kind == EX_NAME && !y) sema_err(s, x->loc, "undeclared name '%s'", x->name);
        else sema_err(s, index->loc, "only tensor parameters can be indexed");
        return false;
    }
    const IrParam *p = &s->k->params[y->param];
    int n = index->nitems;
    Expr *const *items = index->items;
    if (n == 1 && items[0]->kind == EX_TUPLE) {
        n = items[0]->nitems;
        items = items[0]->items;
    }
    if (n != p->rank) {
        sema_err(s, index->loc, "'%s' has rank %d: write %s[%s], got %d subscript%s", x->name, p->rank, x->name,
                 p->rank == 2 ? "r:+n, c:+m" : "i:+n", n, n == 1 ? "" : "s");
        return false;
    }
    w->param = y->param;
    w->rank = p->rank;
    w->dt = p->dt;
    bool ok = true;
    for (int i = 0; i < n; i++) ok = window_item(s, p, i, items[i], &w->start[i], &w->ext[i]) && ok;
    if (ok && (int64_t)w->ext[0] * (w->rank == 2 ? w->ext[1] : 1) > MAX_NUMEL) {
        sema_err(s, index->loc, "the window has more than %d elements", MAX_NUMEL);
        return false;
    }
    return ok;
}

Val sema_load(Sema *s, const Window *w, Loc loc)
{
    Val r = {.dt = w->dt, .rank = w->rank, .dim = {w->ext[0], w->rank == 2 ? w->ext[1] : 1}};
    if (s->emit) {
        IrOp *op;
        ValueId args[2] = {w->start[0].v, w->start[1].v};
        r.v = sema_emit1(s, OP_LOAD, w->rank, args, val_irtype(r), loc, &op);
        op->param = w->param;
    }
    return r;
}

/* ---- built-ins ---- */
typedef enum {
    B_DOT, B_DOT_T, B_TRANSPOSE, B_MATH, B_ABS, B_MAX, B_MIN, B_REDUCE, B_WHERE, B_IOTA, B_CONVERT, B_SOFTMAX,
    B_ATOMIC_ADD,
} BuiltinKind;

typedef struct { const char *name; BuiltinKind kind; int min, max; int sub; int axis; } Builtin;

static const Builtin builtins[] = {
    {"dot", B_DOT, 2, 2, 0, 0}, {"dot_t", B_DOT_T, 2, 2, 0, 0}, {"transpose", B_TRANSPOSE, 1, 1, 0, 0},
    {"exp", B_MATH, 1, 1, UN_EXP, 0}, {"exp2", B_MATH, 1, 1, UN_EXP2, 0}, {"log", B_MATH, 1, 1, UN_LOG, 0},
    {"log2", B_MATH, 1, 1, UN_LOG2, 0}, {"sqrt", B_MATH, 1, 1, UN_SQRT, 0}, {"rsqrt", B_MATH, 1, 1, UN_RSQRT, 0},
    {"abs", B_ABS, 1, 1, UN_ABS, 0}, {"max", B_MAX, 2, 2, BIN_MAX, 0}, {"min", B_MIN, 2, 2, BIN_MIN, 0},
    {"rowsum", B_REDUCE, 1, 1, RED_SUM, 1}, {"rowmax", B_REDUCE, 1, 1, RED_MAX, 1},
    {"rowmin", B_REDUCE, 1, 1, RED_MIN, 1}, {"colsum", B_REDUCE, 1, 1, RED_SUM, 0},
    {"colmax", B_REDUCE, 1, 1, RED_MAX, 0}, {"colmin", B_REDUCE, 1, 1, RED_MIN, 0},
    {"where", B_WHERE, 3, 3, 0, 0}, {"iota", B_IOTA, 1, 2, 0, 0},
    {"f16", B_CONVERT, 1, 1, DT_F16, 0}, {"bf16", B_CONVERT, 1, 1, DT_BF16, 0},
    {"f32", B_CONVERT, 1, 1, DT_F32, 0}, {"i32", B_CONVERT, 1, 1, DT_I32, 0},
    {"online_softmax", B_SOFTMAX, 5, 5, 0, 0}, {"atomic_add", B_ATOMIC_ADD, 2, 2, 0, 0},
};

static Val zero_acc(Sema *s, int m, int n, Loc loc)
{
    Val r = {.dt = DT_F32, .rank = 2, .dim = {m, n}};
    if (s->emit) {
        ValueId z = sema_const(s, DT_F32, 0, 0.0, loc);
        r.v = sema_emit1(s, OP_SPLAT, 1, &z, val_irtype(r), loc, NULL);
    }
    return r;
}

/* The dtype both dot operands are rounded to. */
static DType dot_dtype(DType a, DType b)
{
    if (a == b) return a;
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
    if (!ir_is_float(a.dt) || !ir_is_float(b.dt)) {
        sema_err(s, e->loc, "%s needs f16, bf16 or f32 operands, got %s and %s", name, ta, tb);
        return val_error();
    }
    int kb = trans ? b.dim[1] : b.dim[0];
    if (!dim_same(s, a.dim[1], kb)) {
        sema_err(s, e->loc, "%s: the inner dimensions differ: %s and %s%s", name, ta, tb,
                 trans ? " (dot_t multiplies by the transpose of the second operand)" : "");
        return val_error();
    }
    int m = a.dim[0], n = trans ? b.dim[0] : b.dim[1];
    DType dt = dot_dtype(a.dt, b.dt);
    a = coerce(s, a, dt, 2, a.dim, e->loc);
    b = coerce(s, b, dt, 2, b.dim, e->loc);
    Val acc = zero_acc(s, m, n, e->loc);
    Val r = {.dt = DT_F32, .rank = 2, .dim = {m, n}};
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
    if (b->kind == B_ABS && x.weak) return x.wfloat ? weak_float(fabs(x.fval)) : x.ival == INT64_MIN ? x : weak_int(x.ival < 0 ? -x.ival : x.ival);
    DType dt = b->kind == B_ABS ? (x.weak ? promote(x, x) : x.dt) : ir_is_float(x.dt) && !x.weak ? x.dt : DT_F32;
    x = coerce(s, x, dt, x.rank, x.dim, e->loc);
    if (val_bad(x)) return x;
    return unary_op(s, b->sub, x, e->loc);
}

static Val convert_call(Sema *s, const Expr *e, DType dt, Val x)
{
    if (x.dt == DT_BOOL) {
        sema_err(s, e->loc, "cannot convert bool to %s; use ph.where(c, 1, 0)", ir_dtype_name(dt));
        return val_error();
    }
    if (!x.weak && x.dt == dt) return x;
    return coerce(s, x, dt, x.rank, x.dim, e->loc);
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
        dt = promote(a, b);
    }
    int rank, dim[2], rank2, dim2[2];
    Val ab;
    if (!shape_bcast(s, a, b, &rank, dim)
        || (ab = (Val){.dt = dt, .rank = rank, .dim = {dim[0], dim[1]}}, !shape_bcast(s, c, ab, &rank2, dim2))) {
        char ta[64], tb[64];
        val_str(s, c, t, sizeof t);
        val_str(s, a, ta, sizeof ta);
        val_str(s, b, tb, sizeof tb);
        sema_err(s, e->loc, "ph.where: shapes %s, %s and %s do not broadcast", t, ta, tb);
        return val_error();
    }
    c = coerce(s, c, DT_BOOL, rank2, dim2, e->loc);
    a = coerce(s, a, dt, rank2, dim2, e->loc);
    b = coerce(s, b, dt, rank2, dim2, e->loc);
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
        n = dim_now(s, -i - 1);
    }
    Val r = {.dt = DT_I32, .rank = 2, .dim = {axis == 0 ? n : 1, axis == 1 ? n : 1}};
    if (s->emit) {
        IrOp *op;
        r.v = sema_emit1(s, OP_IOTA, 0, NULL, val_irtype(r), e->loc, &op);
        op->axis = (int)axis;
    }
    return r;
}

static const Builtin *builtin_named(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, name)) return &builtins[i];
    return NULL;
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
        sema_err(s, e->loc, "'%s.%s' is not a built-in function", s->alias, name);
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

static Val call(Sema *s, const Expr *e)
{
    const Builtin *b = call_target(s, e);
    if (!b) return val_error();
    if (b->kind == B_SOFTMAX) {
        sema_err(s, e->loc, "ph.online_softmax is a statement: it updates its first three arguments and has no value");
        return val_error();
    }
    if (b->kind == B_ATOMIC_ADD) {
        sema_err(s, e->loc, "ph.atomic_add is a statement: it adds into a tensor window and has no value");
        return val_error();
    }
    if (b->kind == B_IOTA) return iota_call(s, e);
    Val a[3];
    bool bad = false;
    for (int i = 0; i < e->nitems; i++) {
        a[i] = sema_expr(s, e->items[i]);
        bad |= val_bad(a[i]);
    }
    if (bad) return val_error();
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
        if (a[0].weak && a[1].weak) {
            bool fl = a[0].wfloat || a[1].wfloat;
            double x = a[0].wfloat ? a[0].fval : (double)a[0].ival, y = a[1].wfloat ? a[1].fval : (double)a[1].ival;
            bool first = b->kind == B_MAX ? x >= y : x <= y;
            if (fl) return weak_float(first ? x : y);
            return first ? a[0] : a[1];
        }
        return elementwise(s, OP_BINARY, b->sub, T_EOF, a[0], a[1], e->loc, b->name);
    case B_REDUCE: return reduce_call(s, e, b, a[0]);
    case B_WHERE: return where_call(s, e, a[0], a[1], a[2]);
    case B_CONVERT: return convert_call(s, e, (DType)b->sub, a[0]);
    default: return val_error();
    }
}

/* ---- ph.online_softmax ---- */
static int var_arg(Sema *s, const Expr *e)
{
    Sym *y = e->kind == EX_NAME ? sema_lookup(s, e->name) : NULL;
    if (e->kind != EX_NAME) {
        sema_err(s, e->loc, "ph.online_softmax updates its first three arguments: each must be a var");
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

static bool softmax_shape(Sema *s, const Expr *e, Val v, bool ok_dt, int d0, int d1, const char *want)
{
    if (v.rank == 2 && ok_dt && dim_same(s, v.dim[0], d0) && dim_same(s, v.dim[1], d1)) return true;
    char t[64];
    val_str(s, v, t, sizeof t);
    sema_err(s, e->loc, "ph.online_softmax expects %s, got %s", want, t);
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
    if (!call_target(s, e)) return;
    int iacc = var_arg(s, e->items[0]), im = var_arg(s, e->items[1]), il = var_arg(s, e->items[2]);
    Val sv = sema_expr(s, e->items[3]), vv = sema_expr(s, e->items[4]);
    if (iacc < 0 || im < 0 || il < 0 || val_bad(sv) || val_bad(vv)) return;
    Val acc = s->syms.data[iacc].val, m = s->syms.data[im].val, l = s->syms.data[il].val;
    if (!softmax_shape(s, e->items[0], acc, acc.dt == DT_F32, acc.dim[0], acc.dim[1], "an f32 [M, N] var for acc")) return;
    int M = acc.dim[0], N = acc.dim[1];
    bool ok = softmax_shape(s, e->items[1], m, m.dt == DT_F32, M, 1, "an f32 [M, 1] var for m (acc is [M, N])");
    ok = softmax_shape(s, e->items[2], l, l.dt == DT_F32, M, 1, "an f32 [M, 1] var for l (acc is [M, N])") && ok;
    ok = ok && softmax_shape(s, e->items[3], sv, sv.dt == DT_F32, M, sv.rank == 2 ? sv.dim[1] : 1,
                             "an f32 [M, K] tile for s (acc is [M, N])");
    ok = ok && softmax_shape(s, e->items[4], vv, vv.dt == DT_F16 || vv.dt == DT_BF16, sv.dim[1], N,
                             "an f16 or bf16 [K, N] tile for v (s is [M, K], acc is [M, N])");
    if (!ok || !s->emit) return;
    Loc loc = e->loc;
    int K = sv.dim[1];
    IrType col = ir_tile2(DT_F32, M, 1), mk = ir_tile2(DT_F32, M, K), mn_t = ir_tile2(DT_F32, M, N);
    ValueId rm = emit_rowred(s, RED_MAX, sv.v, col, loc);
    ValueId mn = emit_bin(s, BIN_MAX, m.v, rm, col, loc);
    ValueId a = emit_un(s, UN_EXP, emit_bin(s, BIN_SUB, m.v, mn, col, loc), col, loc);
    /* s - mn before exp scales by log2(e): s * log2e - mn * log2e would be
     * one fma per score on the GPU, whose exponent for s == mn is the
     * rounding error of mn * log2e, huge when mn is a mask value such as
     * -1.0e30 (tests/difftest/regressions/softmax-masked-leading-blocks.ph) */
    ValueId mnb = sema_emit1(s, OP_BROADCAST, 1, &mn, mk, loc, NULL);
    ValueId p = emit_un(s, UN_EXP, emit_bin(s, BIN_SUB, sv.v, mnb, mk, loc), mk, loc);
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
    if (w->dt != DT_F32 && w->dt != DT_I32) {
        sema_err(s, t->loc, "ph.atomic_add adds into f32 or i32 tensors; '%s' is %s", x->name, ir_dtype_name(w->dt));
        return false;
    }
    return true;
}

/* ph.atomic_add(X[...], value): value, broadcast to the window and
 * converted to X's dtype as a store converts, is added to each element of
 * the window inside X, atomically with other blocks' adds. */
void sema_atomic_add(Sema *s, const Expr *e)
{
    if (!call_target(s, e)) return;
    Window w = {0};
    bool ok = atomic_window(s, e->items[0], &w);
    Val x = sema_expr(s, e->items[1]);
    if (!ok) return;
    char what[96];
    snprintf(what, sizeof what, "the window of '%s'", s->k->params[w.param].name);
    int dim[2] = {w.ext[0], w.rank == 2 ? w.ext[1] : 1};
    x = sema_coerce_to(s, x, w.dt, w.rank, dim, e->items[1]->loc, what);
    if (val_bad(x) || !s->emit) return;
    ValueId args[3] = {w.start[0].v, w.start[1].v, 0};
    args[w.rank] = x.v;
    IrOp *op = ir_emit(s->f, s->blk, OP_ATOMIC_ADD, w.rank + 1, args, 0, NULL);
    op->loc = e->loc;
    op->param = w.param;
}

/* ---- the dispatcher ---- */
static bool arith_op(TokKind op)
{
    return op == T_PLUS || op == T_MINUS || op == T_STAR || op == T_SLASH || op == T_DSLASH
        || op == T_PERCENT || op == T_AND || op == T_OR;
}

/* a + b + c + ... parses left-nested, as deep as the chain is long: a
 * 100 kB line of terms is a flat sum to its author, not deep nesting, so
 * the left spine is walked with a loop, in the same order as the
 * recursion (leftmost operand first, then each right operand and its
 * operator). Right operands recurse as usual, their depth bounded. */
static Val binary_chain(Sema *s, const Expr *e)
{
    VEC(const Expr *) spine = {0};
    for (const Expr *x = e; x && x->kind == EX_BINARY && arith_op(x->op); x = x->lhs) vec_push(&spine, x);
    Val acc = sema_expr(s, spine.data[spine.len - 1]->lhs);
    for (int i = spine.len - 1; i >= 0; i--) {
        const Expr *x = spine.data[i];
        Val b = sema_expr(s, x->rhs);
        acc = sema_binary(s, x->op, acc, b, x->loc);
    }
    free(spine.data);
    return acc;
}

Val sema_expr(Sema *s, const Expr *e)
{
    if (!e) return val_error();
    if (++s->depth > MAX_DEPTH) {
        s->depth--;
        sema_err(s, e->loc, "expression nested too deeply");
        return val_error();
    }
    Val r;
    switch (e->kind) {
    case EX_INT:
        if (e->overflow) {
            sema_err(s, e->loc, "integer literal too large");
            r = val_error();
        } else {
            r = weak_int(e->ival);
        }
        break;
    case EX_FLOAT:
        r = weak_float(e->fval);
        break;
    case EX_BOOL:
        r = scalar_val(DT_BOOL, s->emit ? sema_const(s, DT_BOOL, e->ival, 0, e->loc) : 0);
        break;
    case EX_NAME: r = name_value(s, e); break;
    case EX_ATTR: r = attr_value(s, e); break;
    case EX_CALL: r = call(s, e); break;
    case EX_INDEX: {
        Window w;
        r = sema_window(s, e, &w) ? sema_load(s, &w, e->loc) : val_error();
        break;
    }
    case EX_UNARY: r = unary(s, e); break;
    case EX_BINARY:
        if (arith_op(e->op)) {
            r = binary_chain(s, e);
        } else {
            sema_err(s, e->loc, "operator '%s' is not supported", op_text(e->op));
            r = val_error();
        }
        break;
    case EX_COMPARE: {
        Val a = sema_expr(s, e->lhs), b = sema_expr(s, e->rhs);
        r = sema_binary(s, e->op, a, b, e->loc);
        break;
    }
    case EX_STRING: sema_err(s, e->loc, "a string is not a value here"); r = val_error(); break;
    case EX_NONE: sema_err(s, e->loc, "None is not a value here"); r = val_error(); break;
    case EX_LIST: sema_err(s, e->loc, "a list is not a value here"); r = val_error(); break;
    case EX_TUPLE: sema_err(s, e->loc, "a tuple is not a value here"); r = val_error(); break;
    case EX_SLICE: sema_err(s, e->loc, "':' is only allowed in a window subscript"); r = val_error(); break;
    default: sema_err(s, e->loc, "a keyword argument is not a value here"); r = val_error(); break;
    }
    s->depth--;
    return r;
}
