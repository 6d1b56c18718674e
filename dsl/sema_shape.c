/* sema_shape.c: values, their shapes and dtypes: errors and erroneous
 * values, the iota extents that broadcasting resolves, NumPy broadcasting,
 * dtype promotion, types as text, and coercion of a value to a shape and
 * dtype (emitting the converts, splats and broadcasts it takes). */
#include "sema.h"
#include "ir/scalarops.h"

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

Sym *sema_lookup(Sema *s, const char *name)
{
    for (int i = s->syms.len - 1; i >= 0; i--)
        if ((i >= s->scope_floor || s->syms.data[i].kind == SYM_ALIAS) && !strcmp(s->syms.data[i].name, name))
            return &s->syms.data[i];
    return NULL;
}

/* ---- iota extents: symbols unified by broadcasting ---- */
static int sym_root(Sema *s, int i)
{
    for (int n = 0; n < MAX_IOTA && s->sym_parent[i] != i; n++) i = s->sym_parent[i];
    return i;
}

/* A dim as it is known now: a positive extent, or the root symbol. */
int sema_dim_now(Sema *s, int d)
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
bool sema_dim_same(Sema *s, int a, int b)
{
    a = sema_dim_now(s, a);
    b = sema_dim_now(s, b);
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
    a = sema_dim_now(s, a);
    b = sema_dim_now(s, b);
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
    a = sema_dim_now(s, a);
    t = sema_dim_now(s, t);
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

bool sema_shape_bcast(Sema *s, Val a, Val b, int *rank, int dim[2])
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
        int x = sema_dim_now(s, v.dim[i]);
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
    if (ir_is_float(dt)) op->fval = ir_is_f8(dt) ? sop_round(dt, (float)f) : f;   /* fp8 constants hold the format's values */
    else op->ival = dt == DT_BOOL ? i != 0 : i;
    return v;
}

static ValueId weak_value(Sema *s, Val x, DType dt, Loc loc)
{
    if (ir_is_float(dt)) return sema_const(s, dt, 0, x.wfloat ? x.fval : (double)x.ival, loc);
    return sema_const(s, dt, x.wfloat ? (int64_t)x.fval : x.ival, 0, loc);
}

/* Converts then stretches x to (dt, rank, dim); the caller checked that it may. */
Val sema_coerce(Sema *s, Val x, DType dt, int rank, const int dim[2], Loc loc)
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
    if (x.weak && dt == DT_I64 && x.wfloat && !(fabs(x.fval) < 9223372036854775808.0)) {
        sema_err(s, loc, "%g does not fit in i64", x.fval);
        return val_error();
    }
    if (x.weak && (dt == DT_I8 || dt == DT_U8)) {
        double v = x.wfloat ? trunc(x.fval) : (double)x.ival, lo = dt == DT_I8 ? -128 : 0, hi = dt == DT_I8 ? 127 : 255;
        if (!(v >= lo && v <= hi)) {
            sema_err(s, loc, "%s does not fit in %s (%g to %g)", x.wfloat ? "this number" : "this integer", ir_dtype_name(dt), lo, hi);
            return val_error();
        }
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
    return sema_coerce(s, x, dt, rank, dim, loc);
}

/* ---- vectors: [n], [1, n], [n, 1] ---- */

bool sema_vector_len(Sema *s, Val v, int *n)
{
    if (v.rank == 1) {
        *n = v.dim[0];
        return true;
    }
    if (v.rank != 2) return false;
    bool one_row = sema_dim_now(s, v.dim[0]) == 1, one_col = sema_dim_now(s, v.dim[1]) == 1;
    if (!one_row && !one_col) return false;
    *n = one_row ? v.dim[1] : v.dim[0];
    return true;
}

Val sema_reshape(Sema *s, Val x, int rank, const int dim[2], Loc loc)
{
    Val r = {.dt = x.dt, .rank = rank, .dim = {dim[0], rank == 2 ? dim[1] : 1}};
    if (!s->emit) return r;
    if (ir_type_eq(val_irtype(x), val_irtype(r))) r.v = x.v;
    else r.v = sema_emit1(s, OP_RESHAPE, 1, &x.v, val_irtype(r), loc, NULL);
    return r;
}

/* A rank-1 window has no orientation: a [1, n] or an [n, 1] tile is its
 * [n]. A rank-1 tile is [1, n], so an [n, 1] window needs a reshape,
 * which the message names. */
Val sema_window_value(Sema *s, Val x, const Window *w, Loc loc, const char *what)
{
    if (val_bad(x) || x.rank == 0 || x.rank == w->rank || sema_window_gathers(w)) return x;
    char a[64], b[64];
    int n;
    if (w->rank == 2) {
        int ext0 = w->ext[0];
        if (s->emit || w->ext[1] != 1 || ext0 == 1 || sema_dim_now(s, x.dim[0]) != ext0) return x;
        val_str(s, x, a, sizeof a);
        Val target = {.dt = w->dt, .rank = 2, .dim = {ext0, 1}};
        val_str(s, target, b, sizeof b);
        sema_err(s, loc, "cannot store %s into %s, %s: a 1-D tile acts as [1, %d]; write ph.reshape(x, [%d, 1])",
                 a, what, b, ext0, ext0);
        return val_error();
    }
    if (!sema_vector_len(s, x, &n)) return x;   /* sema_coerce_to says why it does not fit */
    int known = sema_dim_now(s, n);
    if (known > 0 && known != 1 && known != w->ext[0]) {
        Val target = {.dt = w->dt, .rank = 1, .dim = {w->ext[0], 1}};
        val_str(s, x, a, sizeof a);
        val_str(s, target, b, sizeof b);
        sema_err(s, loc, "cannot store %s into %s, %s: a [1, n] or [n, 1] tile fits a rank-1 window of n (or 1)", a, what, b);
        return val_error();
    }
    int dim[2] = {n, 1};
    return sema_reshape(s, x, 1, dim, loc);
}

/* ---- dtype promotion ---- */
static DType promote_strong(DType a, DType b)
{
    if (a == b) return a;
    if (a == DT_I32) return b;
    if (b == DT_I32) return a;
    if (a == DT_I64) return b;   /* i64 with a float dtype gives that dtype, as i32 does */
    if (b == DT_I64) return a;
    if (a == DT_F32 || b == DT_F32) return DT_F32;
    return DT_F32;   /* f16 with bf16 */
}

/* The common dtype of two numeric operands, literals taking the other's
 * (a float literal beside an integer gives f32). i8 and u8 stay so only
 * beside their own dtype or an integer literal; with anything else they
 * count as i32. */
DType sema_promote(Val a, Val b)
{
    if (a.weak && b.weak) return a.wfloat || b.wfloat ? DT_F32 : DT_I32;
    if (a.weak) return a.wfloat && ir_is_int(b.dt) ? DT_F32 : b.dt;
    if (b.weak) return b.wfloat && ir_is_int(a.dt) ? DT_F32 : a.dt;
    if (a.dt != b.dt) {
        if (ir_is_storage(a.dt)) a.dt = ir_is_f8(a.dt) ? DT_F32 : DT_I32;
        if (ir_is_storage(b.dt)) b.dt = ir_is_f8(b.dt) ? DT_F32 : DT_I32;
    }
    return promote_strong(a.dt, b.dt);
}

Val sema_widen(Sema *s, Val x, Loc loc)
{
    if (val_bad(x) || !ir_is_storage(x.dt)) return x;
    return sema_coerce(s, x, ir_is_f8(x.dt) ? DT_F32 : DT_I32, x.rank, x.dim, loc);
}

