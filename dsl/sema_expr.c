/* sema_expr.c: typing and lowering of expressions: literals (weak dtypes),
 * names, operators with promotion and NumPy broadcasting (sema_shape.c),
 * windows and loads, and compile-time integer expressions; the built-ins
 * are in sema_call.c. Each function serves both passes of a statement
 * (see sema.h): it always computes the type, reports errors only in the
 * typing pass, and emits IR only in the emitting pass, inserting converts,
 * splats and broadcasts so that every elementwise op sees operands of one
 * type. */
#include "sema.h"
#include "base/floormod.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An operator as written, for messages. */
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
Val sema_elementwise(Sema *s, IrOpKind kind, int sub, TokKind fold_op, Val a, Val b, Loc loc, const char *name)
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
        a = sema_widen(s, a, loc);   /* arithmetic and comparisons on i8 and u8 happen in i32 */
        b = sema_widen(s, b, loc);
        dt = sema_promote(a, b);
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
            return val_weak_int(r);
        }
        double x = a.wfloat ? a.fval : (double)a.ival, y = b.wfloat ? b.fval : (double)b.ival;
        return val_weak_float(fold_float(fold_op, x, y));
    }
    int rank, dim[2];
    if (!sema_shape_bcast(s, a, b, &rank, dim)) {
        sema_err(s, loc, "shapes %s and %s do not broadcast in '%s'", ta, tb, name);
        return val_error();
    }
    a = sema_coerce(s, a, dt, rank, dim, loc);
    b = sema_coerce(s, b, dt, rank, dim, loc);
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
    if (is_cmp(op)) return sema_elementwise(s, OP_CMP, cmp_of[op], T_EOF, a, b, loc, op_text(op));
    return sema_elementwise(s, OP_BINARY, binop_of[op], op == T_AND || op == T_OR ? T_EOF : op, a, b, loc, op_text(op));
}

Val sema_unary_op(Sema *s, IrUnop sub, Val x, Loc loc)
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
        return sema_unary_op(s, UN_NOT, x, e->loc);
    }
    if (x.dt == DT_BOOL) {
        sema_err(s, e->loc, "unary '%s' does not take a bool operand", op_text(e->op));
        return val_error();
    }
    if (e->op == T_PLUS) return x;
    x = sema_widen(s, x, e->loc);
    if (x.weak) {
        if (x.wfloat) return val_weak_float(-x.fval);
        if (x.ival == INT64_MIN) {
            sema_err(s, e->loc, "integer overflow in a constant expression");
            return val_error();
        }
        return val_weak_int(-x.ival);
    }
    return sema_unary_op(s, UN_NEG, x, e->loc);
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
        {"f16", DT_F16}, {"bf16", DT_BF16}, {"f32", DT_F32}, {"i32", DT_I32}, {"i64", DT_I64}, {"bool", DT_BOOL},
        {"i8", DT_I8}, {"u8", DT_U8}, {"f8e4m3", DT_F8E4M3}, {"f8e5m2", DT_F8E5M2},
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
        return val_weak_int(y->val.ival);
    case SYM_DIM: {
        Val r = val_scalar(DT_I32, 0);
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
    Val r = val_scalar(DT_I32, 0);
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
    /* f32 constants that behave as float literals do (weak), so -ph.inf folds */
    if (n && !strcmp(n, "inf")) return val_weak_float(INFINITY);
    if (n && !strcmp(n, "nan")) return val_weak_float(NAN);
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
        /* a static_range variable, a helper's parameter bound to a compile-time integer */
        bool weak_int = y && (y->kind == SYM_LOOP || y->kind == SYM_LET) && y->val.weak && !y->val.wfloat;
        if (y && (y->kind == SYM_META || weak_int)) { *out = y->val.ival; return true; }
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

/* An i64 index (a scalar or a tile) as the i32 the memory ops take,
 * saturated: every index past the i32 range lies outside every tensor
 * (a dim is at most 2^31 - 1), and so do INT32_MIN and INT32_MAX and a
 * window's positions after them (a window is at most 65536 long, and
 * INT32_MAX + i wraps to a negative i32), so the edge rules hold as
 * they would in 64 bits. Anything else is returned as it is. */
Val sema_index_i32(Sema *s, Val v, Loc loc)
{
    if (val_bad(v) || v.dt != DT_I64 || v.weak) return v;
    v = sema_elementwise(s, OP_BINARY, BIN_MAX, T_EOF, v, val_weak_int(INT32_MIN), loc, "an index");
    v = sema_elementwise(s, OP_BINARY, BIN_MIN, T_EOF, v, val_weak_int(INT32_MAX), loc, "an index");
    return val_bad(v) ? v : sema_coerce(s, v, DT_I32, v.rank, v.dim, loc);
}

static bool start_value(Sema *s, Val v, const Expr *e, Loc loc, Val *out)
{
    v = sema_index_i32(s, v, e ? e->loc : loc);
    if (v.rank != 0 || v.dt != DT_I32 || (v.weak && v.wfloat)) {
        char t[64];
        val_str(s, v, t, sizeof t);
        sema_err(s, e->loc, "expected an i32 scalar for the window start, got %s", t);
        return false;
    }
    int none[2] = {1, 1};
    *out = sema_coerce(s, v, DT_I32, 0, none, e ? e->loc : loc);
    return !val_bad(*out);
}

/* e NULL: the start of ':' or ':+n', 0, at loc. */
static bool window_start(Sema *s, const Expr *e, Loc loc, Val *out)
{
    Val v = e ? sema_expr(s, e) : val_weak_int(0);
    if (val_bad(v)) return false;
    return start_value(s, v, e, loc, out);
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

/* A subscript without ':': a plain index (an i32 scalar), or an i32 tile
 * of indices, which gathers. */
static bool index_item(Sema *s, Window *w, int axis, const Expr *it)
{
    w->ext[axis] = 1;
    Val v = sema_expr(s, it);
    if (val_bad(v)) return false;
    if (v.rank == 0) {
        w->plain[axis] = true;
        return start_value(s, v, it, it->loc, &w->start[axis]);
    }
    if (v.dt != DT_I32 && v.dt != DT_I64) {
        char t[64];
        val_str(s, v, t, sizeof t);
        sema_err(s, it->loc, "expected an i32 index or an i32 tile of indices, got %s", t);
        return false;
    }
    w->gathered[axis] = true;
    w->start[axis] = sema_index_i32(s, v, it->loc);
    return true;
}

static bool window_item(Sema *s, const IrParam *p, Window *w, int axis, const Expr *it)
{
    Val *start = &w->start[axis];
    int *ext = &w->ext[axis];
    if (it->kind != EX_SLICE) return index_item(s, w, axis, it);
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

/* The shape of a gathering window: a rank-1 tensor's is its index tile's;
 * two index tiles broadcast together; one beside a window (or plain
 * index) is a vector laid along its axis, the other axis the window's. */
static bool gather_shape(Sema *s, Window *w, Loc loc)
{
    char a[64], b[64];
    if (w->rank == 1) {
        w->vrank = w->start[0].rank;
        w->vdim[0] = w->start[0].dim[0];
        w->vdim[1] = w->start[0].dim[1];
    } else if (w->gathered[0] && w->gathered[1]) {
        if (!sema_shape_bcast(s, w->start[0], w->start[1], &w->vrank, w->vdim)) {
            val_str(s, w->start[0], a, sizeof a);
            val_str(s, w->start[1], b, sizeof b);
            sema_err(s, loc, "the row indices %s and the column indices %s do not broadcast together", a, b);
            return false;
        }
    } else {
        int g = w->gathered[0] ? 0 : 1, n;
        if (!sema_vector_len(s, w->start[g], &n)) {
            val_str(s, w->start[g], a, sizeof a);
            sema_err(s, loc, "a tile of %s indices beside a window of %s must be a vector ([n], [1, n] or [n, 1]), got %s",
                     g == 0 ? "row" : "column", g == 0 ? "columns" : "rows", a);
            return false;
        }
        w->vrank = 2;
        w->vdim[g] = n;
        w->vdim[1 - g] = w->ext[1 - g];
    }
    if (w->vrank == 1) w->vdim[1] = 1;
    for (int i = 0; i < w->vrank; i++)
        if (sema_dim_now(s, w->vdim[i]) < 1) {
            sema_err(s, loc, "the number of indices is not known here; give ph.iota its extent: ph.iota(axis, n)");
            return false;
        }
    for (int i = 0; i < 2; i++) w->vdim[i] = sema_dim_now(s, w->vdim[i]);
    return true;
}

/* A window of a rank-3/4 tensor: scalars index some axes, and the one or
 * two others are the tile's (in the tensor's order); seen from here on as
 * a window of those axes alone. */
static bool strided_window(Sema *s, const char *name, Window *w, Expr *const *items, Loc loc)
{
    int nwin = 0;
    for (int a = 0; a < w->trank; a++) {
        if (w->gathered[a]) {
            sema_err(s, items[a]->loc, "'%s' has rank %d: its subscripts are i32 scalars and windows, not tiles of indices",
                     name, w->trank);
            return false;
        }
        w->tstart[a] = w->start[a];
        if (!w->plain[a]) w->axes |= 1 << a, nwin++;
    }
    if (nwin < 1 || nwin > 2) {
        sema_err(s, loc, "a window of the rank-%d tensor '%s' runs along one or two axes, the others indexed by scalars; "
                 "it has %d window%s", w->trank, name, nwin, nwin == 1 ? "" : "s");
        return false;
    }
    int j = 0;
    for (int a = 0; a < w->trank; a++)
        if (w->axes & (1 << a)) w->start[j] = w->tstart[a], w->ext[j] = w->ext[a], w->plain[j] = false, j++;
    for (; j < IR_MAX_RANK; j++) w->start[j] = (Val){0}, w->ext[j] = 0, w->plain[j] = false;
    w->rank = nwin;
    return true;
}

int sema_window_starts(Sema *s, const Window *w, Loc loc, ValueId *args)
{
    if (w->trank > 2) {
        for (int a = 0; a < w->trank; a++) args[a] = w->tstart[a].v;
        return w->trank;
    }
    args[0] = w->start[0].v;
    args[1] = w->start[1].v;
    if (sema_window_gathers(w)) sema_gather_indices(s, w, loc, args);
    return w->rank;
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
        static const char *const forms[] = {"", "i:+n", "r:+n, c:+m", "z, r:+n, c:+m", "z, h, r:+n, c:+m"};
        sema_err(s, index->loc, "'%s' has rank %d: write %s[%s], got %d subscript%s", x->name, p->rank, x->name,
                 forms[p->rank], n, n == 1 ? "" : "s");
        return false;
    }
    memset(w, 0, sizeof *w);
    w->param = y->param;
    w->rank = w->trank = p->rank;
    w->dt = p->dt;
    bool ok = true;
    for (int i = 0; i < n; i++) ok = window_item(s, p, w, i, items[i]) && ok;
    if (!ok) return false;
    if (p->rank > 2 && !strided_window(s, x->name, w, items, index->loc)) return false;
    if (sema_window_gathers(w)) {
        if (!gather_shape(s, w, index->loc)) return false;
    } else {
        w->vrank = w->rank;
        w->vdim[0] = w->ext[0];
        w->vdim[1] = w->rank == 2 ? w->ext[1] : 1;
    }
    if ((int64_t)w->vdim[0] * w->vdim[1] > MAX_NUMEL) {
        sema_err(s, index->loc, "the window has more than %d elements", MAX_NUMEL);
        return false;
    }
    return true;
}

/* An index per element along axis a of a window that does not gather on
 * it: the start plus the element's position in the window. */
static Val window_positions(Sema *s, const Window *w, int a, Loc loc)
{
    Val start = sema_coerce(s, w->start[a], DT_I32, w->vrank, w->vdim, loc);
    if (w->ext[a] == 1) return start;
    Val at = {.dt = DT_I32, .rank = w->vrank, .dim = {w->vdim[0], w->vdim[1]}};
    IrOp *op;
    at.v = sema_emit1(s, OP_IOTA, 0, NULL, val_irtype(at), loc, &op);
    op->axis = a;
    return sema_binary(s, T_PLUS, at, start, loc);
}

void sema_gather_indices(Sema *s, const Window *w, Loc loc, ValueId idx[2])
{
    bool both = w->rank == 1 || (w->gathered[0] && w->gathered[1]);
    for (int a = 0; a < w->rank; a++) {
        Val v = w->start[a];
        if (!w->gathered[a]) {
            v = window_positions(s, w, a, loc);
        } else if (!both) {
            int n = a == 0 ? w->vdim[0] : w->vdim[1];
            int line[2] = {a == 0 ? n : 1, a == 0 ? 1 : n};
            v = sema_coerce(s, sema_reshape(s, v, 2, line, loc), DT_I32, 2, w->vdim, loc);
        } else {
            v = sema_coerce(s, v, DT_I32, w->vrank, w->vdim, loc);
        }
        idx[a] = v.v;
    }
}

/* One element, X[i] or X[i, j] with every subscript a plain index: a
 * scalar of X's dtype, 0 outside X. */
static Val load_element(Sema *s, const Window *w, Loc loc)
{
    Val r = val_scalar(w->dt, 0);
    if (s->emit) {
        IrOp *op;
        ValueId args[2] = {w->start[0].v, w->start[1].v};
        r.v = sema_emit1(s, OP_GATHER, w->rank, args, val_irtype(r), loc, &op);
        op->param = w->param;
    }
    return r;
}

Val sema_load(Sema *s, const Window *w, Loc loc)
{
    Val r = {.dt = w->dt, .rank = w->vrank, .dim = {w->vdim[0], w->vdim[1]}};
    if (s->emit) {
        IrOp *op;
        ValueId args[IR_MAX_RANK];
        int n = sema_window_starts(s, w, loc, args);
        r.v = sema_emit1(s, sema_window_gathers(w) ? OP_GATHER : OP_LOAD, n, args, val_irtype(r), loc, &op);
        op->param = w->param;
        op->window_axes = w->axes;
    }
    return r;
}

static bool every_index_plain(const Window *w)
{
    return w->trank <= 2 && w->plain[0] && (w->rank == 1 || w->plain[1]);
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
            r = val_weak_int(e->ival);
        }
        break;
    case EX_FLOAT:
        r = val_weak_float(e->fval);
        break;
    case EX_BOOL:
        r = val_scalar(DT_BOOL, s->emit ? sema_const(s, DT_BOOL, e->ival, 0, e->loc) : 0);
        break;
    case EX_NAME: r = name_value(s, e); break;
    case EX_ATTR: r = attr_value(s, e); break;
    case EX_CALL: r = sema_call(s, e); break;
    case EX_INDEX: {
        Window w;
        if (!sema_window(s, e, &w)) r = val_error();
        else r = every_index_plain(&w) ? load_element(s, &w, e->loc) : sema_load(s, &w, e->loc);
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
