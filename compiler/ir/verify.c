/* verify.c: checks that a function is well formed tile IR: every operand
 * defined before use in the same or an enclosing region, each op's operand
 * and result types consistent, regions ending as they must. Run before and
 * after every pass, and by the interpreter, so a bug shows up where it is
 * made rather than as a wrong number. */
#include "ir.h"
#include "scalarops.h"

#include <math.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const IrFunc *f;
    unsigned char *state;   /* per value: 0 never defined, 1 in scope, 2 out of scope */
    char *err; size_t errlen;
    bool failed;
    const IrOp *ring_first[IR_MAX_RINGS];   /* by ring: its first copy, which the others must match */
    unsigned char *pending; /* per value: a for loop carries an issued dot's result in it */
} Verifier;

/* v is an issued dot's result, or a loop's carried value of one: only a wait_dots reads it (or a for body's yield). */
static bool in_flight(const Verifier *v, ValueId a)
{
    const IrOp *d = v->f->values[a].def;
    return (d && d->kind == OP_DOT && (d->flags & DOT_ISSUED)) || v->pending[a];
}

static bool bad(Verifier *v, const IrOp *op, const char *fmt, ...)
{
    if (v->failed) return false;
    v->failed = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char where[64] = "";
    if (op && op->nres && op->res) snprintf(where, sizeof where, " (%%%d)", op->res[0]);
    char loc[32] = "";
    if (op && op->loc.line > 0) snprintf(loc, sizeof loc, " at %d:%d", op->loc.line, op->loc.col);
    if (op) snprintf(v->err, v->errlen, "%s: op '%s'%s%s: %s", v->f->name, ir_op_name(op), where, loc, msg);
    else snprintf(v->err, v->errlen, "%s: %s", v->f->name, msg);
    return false;
}

static const char *tstr(IrType t, char *buf)
{
    ir_type_str(t, buf, 32);
    return buf;
}

static IrType ty(const Verifier *v, ValueId id) { return v->f->values[id].type; }

static bool valid_type(IrType t)
{
    if (t.dt <= DT_VOID || t.dt >= DT_COUNT || t.rank < 0 || t.rank > 2) return false;
    for (int i = 0; i < t.rank; i++)
        if (t.shape[i] < 1) return false;
    return true;
}

static bool same_shape(IrType a, IrType b)
{
    a.dt = b.dt;
    return ir_type_eq(a, b);
}

static bool is_i32_scalar(IrType t) { return t.dt == DT_I32 && t.rank == 0; }

/* Arithmetic takes no storage dtype (i8, u8): the front end widens those first. */
static bool no_storage(Verifier *v, const IrOp *op, IrType a)
{
    const char *wide = ir_dtype_name(ir_is_f8(a.dt) ? DT_F32 : DT_I32);
    if (ir_is_storage(a.dt)) return bad(v, op, "takes no %s operand: convert it to %s first", ir_dtype_name(a.dt), wide);
    return true;
}

/* An integer constant's value fits its dtype. */
static bool const_fits(Verifier *v, const IrOp *op, DType dt)
{
    int64_t lo = dt == DT_I8 ? -128 : dt == DT_U8 ? 0 : dt == DT_I32 ? INT32_MIN : INT64_MIN;
    int64_t hi = dt == DT_I8 ? 127 : dt == DT_U8 ? 255 : dt == DT_I32 ? INT32_MAX : INT64_MAX;
    if (op->ival < lo || op->ival > hi) return bad(v, op, "%lld does not fit in %s", (long long)op->ival, ir_dtype_name(dt));
    return true;
}

static bool define(Verifier *v, const IrOp *op, ValueId id, bool is_result)
{
    if (id <= 0 || id >= v->f->nvalues) return bad(v, op, "defines value %%%d, which does not exist", id);
    if (v->state[id]) return bad(v, op, "defines value %%%d a second time", id);
    if (is_result && v->f->values[id].def != op) return bad(v, op, "result %%%d does not name this op as its definition", id);
    if (!valid_type(ty(v, id))) return bad(v, op, "value %%%d has no valid type", id);
    v->state[id] = 1;
    return true;
}

static bool check_operands(Verifier *v, const IrOp *op)
{
    if (op->nargs < 0 || op->nres < 0) return bad(v, op, "negative operand count");
    for (int i = 0; i < op->nargs; i++) {
        ValueId a = op->args[i];
        if (a <= 0 || a >= v->f->nvalues) return bad(v, op, "operand %d is not a value", i + 1);
        if (v->state[a] == 0) return bad(v, op, "operand %%%d is used before it is defined", a);
        if (v->state[a] == 2) return bad(v, op, "operand %%%d is used outside the region that defines it", a);
        if (in_flight(v, a) && op->kind != OP_WAIT_DOTS && op->kind != OP_YIELD)
            return bad(v, op, "operand %%%d is an issued dot's result, which only a wait_dots reads", a);
    }
    return true;
}

static bool want(Verifier *v, const IrOp *op, int nargs, int nres)
{
    if (nargs >= 0 && op->nargs != nargs) return bad(v, op, "takes %d operands, has %d", nargs, op->nargs);
    if (nres >= 0 && op->nres != nres) return bad(v, op, "has %d results, needs %d", op->nres, nres);
    return true;
}

static bool tensor_param(Verifier *v, const IrOp *op, const IrParam **out)
{
    if (op->param < 0 || op->param >= v->f->nparams) return bad(v, op, "names parameter %d, which does not exist", op->param);
    *out = &v->f->params[op->param];
    if (!(*out)->is_tensor) return bad(v, op, "parameter '%s' is not a tensor", (*out)->name);
    if ((*out)->rank < 1 || (*out)->rank > IR_MAX_RANK) return bad(v, op, "tensor '%s' has rank %d", (*out)->name, (*out)->rank);
    return true;
}

static bool check_unary(Verifier *v, const IrOp *op, IrType a, IrType r)
{
    char b1[32], b2[32];
    if (!ir_type_eq(a, r)) return bad(v, op, "result type %s differs from operand type %s", tstr(r, b1), tstr(a, b2));
    if (!no_storage(v, op, a)) return false;
    switch (op->sub) {
    case UN_NEG: case UN_ABS:
        if (a.dt == DT_BOOL) return bad(v, op, "needs a number, not bool");
        return true;
    case UN_NOT:
        if (a.dt != DT_BOOL) return bad(v, op, "needs bool, not %s", ir_dtype_name(a.dt));
        return true;
    default:
        if ((unsigned)op->sub >= UN_COUNT) return bad(v, op, "unknown unary op %d", op->sub);
        if (!ir_is_float(a.dt)) return bad(v, op, "needs a float operand, not %s", ir_dtype_name(a.dt));
        return true;
    }
}

static bool check_binary(Verifier *v, const IrOp *op, IrType a, IrType b, IrType r)
{
    char b1[32], b2[32];
    if (!ir_type_eq(a, b)) return bad(v, op, "operands have different types %s and %s", tstr(a, b1), tstr(b, b2));
    if (!no_storage(v, op, a)) return false;
    if (op->kind == OP_CMP) {
        if ((unsigned)op->sub >= CMP_COUNT) return bad(v, op, "unknown comparison %d", op->sub);
        if (r.dt != DT_BOOL || !same_shape(a, r)) return bad(v, op, "result must be bool of the operands' shape, is %s", tstr(r, b1));
        return true;
    }
    if ((unsigned)op->sub >= BIN_COUNT) return bad(v, op, "unknown binary op %d", op->sub);
    if (!ir_type_eq(a, r)) return bad(v, op, "result type %s differs from operand type %s", tstr(r, b1), tstr(a, b2));
    if (op->sub == BIN_AND || op->sub == BIN_OR) {
        if (a.dt != DT_BOOL) return bad(v, op, "needs bool operands, not %s", ir_dtype_name(a.dt));
    } else if (a.dt == DT_BOOL) {
        return bad(v, op, "needs numbers, not bool");
    } else if (op->sub == BIN_DIV && !ir_is_float(a.dt)) {
        return bad(v, op, "divides floats only (use floordiv on i32)");
    } else if (op->sub == BIN_POW && !ir_is_float(a.dt)) {
        return bad(v, op, "needs float operands, not %s", ir_dtype_name(a.dt));
    }
    return true;
}

static bool check_fma(Verifier *v, const IrOp *op, IrType a, IrType r)
{
    char b1[32], b2[32], b3[32];
    IrType x = ty(v, op->args[1]), y = ty(v, op->args[2]);
    if (!ir_type_eq(a, x) || !ir_type_eq(a, y) || !ir_type_eq(a, r))
        return bad(v, op, "operands %s, %s, %s and result must have one type", tstr(a, b1), tstr(x, b2), tstr(y, b3));
    if (!no_storage(v, op, a)) return false;
    if (!ir_is_float(a.dt)) return bad(v, op, "needs float operands, not %s", ir_dtype_name(a.dt));
    return true;
}

static bool check_broadcast(Verifier *v, const IrOp *op, IrType a, IrType r)
{
    char b1[32], b2[32];
    if (a.dt != r.dt) return bad(v, op, "changes dtype %s to %s", ir_dtype_name(a.dt), ir_dtype_name(r.dt));
    bool ok = a.rank <= r.rank && r.rank >= 1;
    ok = ok && (ir_rows(a) == 1 || ir_rows(a) == ir_rows(r)) && (ir_cols(a) == 1 || ir_cols(a) == ir_cols(r));
    if (!ok) return bad(v, op, "cannot broadcast %s to %s", tstr(a, b1), tstr(r, b2));
    return true;
}

static bool check_reduce(Verifier *v, const IrOp *op, IrType a, IrType r)
{
    char b1[32], b2[32];
    if ((unsigned)op->sub >= RED_COUNT) return bad(v, op, "unknown reduction %d", op->sub);
    if (a.dt != r.dt) return bad(v, op, "changes dtype %s to %s", ir_dtype_name(a.dt), ir_dtype_name(r.dt));
    if (a.dt == DT_BOOL) return bad(v, op, "cannot reduce bool");
    if (!no_storage(v, op, a)) return false;
    if (a.rank < 1 || op->axis < 0 || op->axis >= a.rank) return bad(v, op, "axis %d is not an axis of %s", op->axis, tstr(a, b1));
    IrType want_t = a;
    want_t.shape[op->axis] = 1;
    if (!ir_type_eq(r, want_t)) return bad(v, op, "result must be %s, is %s", tstr(want_t, b1), tstr(r, b2));
    return true;
}

/* argmax, argmin and cumsum: along axis 0 or 1 of a 2-D number tile. */
static bool check_along_axis(Verifier *v, const IrOp *op, IrType a, IrType r)
{
    char b1[32], b2[32];
    if (a.rank != 2 || a.dt == DT_BOOL) return bad(v, op, "needs a 2-D number tile, has %s", tstr(a, b1));
    if (!no_storage(v, op, a)) return false;
    if (op->axis < 0 || op->axis > 1) return bad(v, op, "axis %d is not 0 or 1", op->axis);
    IrType want_t = a;
    if (op->kind != OP_CUMSUM) {
        want_t.dt = DT_I32;
        want_t.shape[op->axis] = 1;
    }
    if (!ir_type_eq(r, want_t)) return bad(v, op, "result must be %s, is %s", tstr(want_t, b1), tstr(r, b2));
    return true;
}

/* A vector ([n], [1, n] or [n, 1]) to another of its elements. */
static bool check_reshape(Verifier *v, const IrOp *op, IrType a, IrType r)
{
    char b1[32], b2[32];
    bool ok = a.dt == r.dt && a.rank >= 1 && r.rank >= 1 && ir_numel(a) == ir_numel(r);
    ok = ok && (ir_rows(a) == 1 || ir_cols(a) == 1) && (ir_rows(r) == 1 || ir_cols(r) == 1);
    if (!ok) return bad(v, op, "cannot reshape %s to %s (vectors of the same elements only)", tstr(a, b1), tstr(r, b2));
    return true;
}

static bool check_dot(Verifier *v, const IrOp *op)
{
    char b1[32], b2[32], b3[32];
    IrType a = ty(v, op->args[0]), b = ty(v, op->args[1]), acc = ty(v, op->args[2]), r = ty(v, op->res[0]);
    if (a.rank != 2 || b.rank != 2) return bad(v, op, "needs 2-D operands, has %s and %s", tstr(a, b1), tstr(b, b2));
    bool f8 = ir_is_f8(a.dt) && ir_is_f8(b.dt);   /* e4m3 and e5m2 mix, as the tensor cores take them */
    if (!f8 && ((!ir_is_float(a.dt) && a.dt != DT_I8) || a.dt != b.dt))
        return bad(v, op, "needs two float or two i8 operands of one dtype (or two fp8), has %s and %s", tstr(a, b1), tstr(b, b2));
    bool trans = op->flags & DOT_TRANS_B;
    int bk = trans ? b.shape[1] : b.shape[0], bn = trans ? b.shape[0] : b.shape[1];
    if (a.shape[1] != bk) return bad(v, op, "inner dimensions differ: %s and %s", tstr(a, b1), tstr(b, b2));
    IrType want_t = ir_tile2(a.dt == DT_I8 ? DT_I32 : DT_F32, a.shape[0], bn);
    if (!ir_type_eq(acc, want_t) || !ir_type_eq(r, want_t))
        return bad(v, op, "accumulator %s and result %s must be %s", tstr(acc, b1), tstr(r, b2), tstr(want_t, b3));
    return true;
}

/* A window of a rank-1/2 tensor has every axis (window_axes 0); one of a
 * rank-3/4 tensor one or two of its axes, and only loads, stores and atomic
 * adds take those (the copy engines, gathers and scatters take rank 2 at most). */
static bool window_axes_ok(Verifier *v, const IrOp *op, const IrParam *p)
{
    unsigned m = (unsigned)op->window_axes;
    if (p->rank <= 2) return m ? bad(v, op, "tensor '%s' has rank %d: its windows take no axes", p->name, p->rank) : true;
    if (op->kind != OP_LOAD && op->kind != OP_STORE && op->kind != OP_ATOMIC_ADD)
        return bad(v, op, "tensor '%s' has rank %d; this op takes tensors of rank 1 or 2", p->name, p->rank);
    if (!m || m >> p->rank || __builtin_popcount(m) > 2)
        return bad(v, op, "axes mask %d is not one or two axes of tensor '%s' (rank %d)", op->window_axes, p->name, p->rank);
    return true;
}

static bool check_memory(Verifier *v, const IrOp *op)
{
    char b1[32];
    const IrParam *p;
    if (!tensor_param(v, op, &p)) return false;
    int nstart = ir_window_starts(op);
    if (nstart != p->rank) return bad(v, op, "tensor '%s' has rank %d but the window has %d starts", p->name, p->rank, nstart < 0 ? 0 : nstart);
    for (int i = 0; i < nstart; i++)
        if (!is_i32_scalar(ty(v, op->args[i]))) return bad(v, op, "window start %d must be an i32 scalar", i + 1);
    IrType w = op->nres ? ty(v, op->res[0]) : ty(v, op->args[op->nargs - 1]);
    if (!window_axes_ok(v, op, p)) return false;
    int wrank = p->rank <= 2 ? p->rank : __builtin_popcount((unsigned)op->window_axes);
    if (w.dt != p->dt || w.rank != wrank)
        return bad(v, op, "window %s does not match tensor '%s' (%s, rank %d)", tstr(w, b1), p->name, ir_dtype_name(p->dt), wrank);
    if (op->flags & ~(op->kind == OP_STORE ? STORE_MASKED : op->kind == OP_ATOMIC_ADD ? ADD_BY_PRODUCER : 0)) return bad(v, op, "has flags %d it does not take", op->flags);
    ValueId mask = ir_store_mask(op);
    IrType m = mask ? ty(v, mask) : w;
    if (mask && (m.dt != DT_BOOL || !same_shape(m, w)))
        return bad(v, op, "mask must be bool of the value's shape, is %s", tstr(m, b1));
    return true;
}

/* A gather or a scatter: an i32 index per axis of the tensor, all of the
 * shape of the elements (the result, or the value written), which have
 * the tensor's dtype. */
static bool check_by_element(Verifier *v, const IrOp *op)
{
    char b1[32], b2[32];
    const IrParam *p;
    if (!tensor_param(v, op, &p)) return false;
    int nidx = op->kind == OP_GATHER ? op->nargs : op->nargs - 1;
    if (p->rank > 2 || op->window_axes) return bad(v, op, "tensor '%s' has rank %d; this op takes tensors of rank 1 or 2", p->name, p->rank);
    if (nidx != p->rank) return bad(v, op, "tensor '%s' has rank %d but there are %d indices", p->name, p->rank, nidx < 0 ? 0 : nidx);
    IrType e = op->nres ? ty(v, op->res[0]) : ty(v, op->args[op->nargs - 1]);
    if (!op->nres && e.rank == 0) return bad(v, op, "writes a tile; one element is a store's");
    if (e.dt != p->dt) return bad(v, op, "elements %s do not match tensor '%s' (%s)", tstr(e, b1), p->name, ir_dtype_name(p->dt));
    for (int i = 0; i < nidx; i++) {
        IrType x = ty(v, op->args[i]);
        if (x.dt != DT_I32 || !same_shape(x, e))
            return bad(v, op, "index %d is %s; it must be i32 of the elements' shape %s", i + 1, tstr(x, b1), tstr(e, b2));
    }
    return true;
}

/* The hardware adds f32, i32 and i64 atomically (atom.add.u64 serves i64:
 * a two's complement add wraps alike); 16-bit floats are not offered. */
static bool check_atomic(Verifier *v, const IrOp *op)
{
    const IrParam *p = &v->f->params[op->param];
    if (p->dt != DT_F32 && p->dt != DT_I32 && p->dt != DT_I64)
        return bad(v, op, "tensor '%s' is %s; %s takes an f32, i32 or i64 tensor", p->name, ir_dtype_name(p->dt), ir_ops[op->kind].name);
    return true;
}

static bool check_block(Verifier *v, const IrBlock *b, int depth, const IrOp *owner);

/* A copy's window is a load's, plus the ring slot it fills; the copies
 * into one ring agree on the tile they carry and the ring's size. */
static bool check_copy(Verifier *v, const IrOp *op)
{
    char b1[32], b2[32];
    if (op->nargs < 1) return bad(v, op, "needs a window and a ring slot");
    if (!is_i32_scalar(ty(v, op->args[op->nargs - 1]))) return bad(v, op, "the ring slot must be an i32 scalar");
    if (!check_memory(v, op)) return false;
    if (op->ival < 1) return bad(v, op, "a ring needs at least 1 stage, has %lld", (long long)op->ival);
    if (op->axis < 0 || op->axis >= IR_MAX_RINGS) return bad(v, op, "ring %d is out of range (0 to %d)", op->axis, IR_MAX_RINGS - 1);
    const IrOp *first = v->ring_first[op->axis];
    if (!first) {
        v->ring_first[op->axis] = op;
        return true;
    }
    IrType a = ty(v, first->res[0]), b = ty(v, op->res[0]);
    if (!ir_type_eq(a, b) || first->ival != op->ival)
        return bad(v, op, "ring %d holds %s in %lld stages elsewhere; this copy has %s in %lld", op->axis,
                   tstr(a, b1), (long long)first->ival, tstr(b, b2), (long long)op->ival);
    return true;
}

static bool check_wait(Verifier *v, const IrOp *op)
{
    char b1[32], b2[32];
    if (op->nres != op->nargs) return bad(v, op, "has %d results for %d operands", op->nres, op->nargs);
    if (op->ival < 0) return bad(v, op, "pending count %lld is negative", (long long)op->ival);
    for (int i = 0; i < op->nargs; i++) {
        IrType a = ty(v, op->args[i]), r = ty(v, op->res[i]);
        if (a.rank == 0) return bad(v, op, "operand %d is a scalar; it waits for tiles", i + 1);
        if (!ir_type_eq(a, r)) return bad(v, op, "result %d is %s, its copy %s", i + 1, tstr(r, b1), tstr(a, b2));
    }
    return true;
}

static bool check_wait_dots(Verifier *v, const IrOp *op)
{
    if (!check_wait(v, op)) return false;
    for (int i = 0; i < op->nargs; i++)
        if (!in_flight(v, op->args[i])) return bad(v, op, "operand %d is no issued dot's result", i + 1);
    return true;
}

static bool check_release(Verifier *v, const IrOp *op)
{
    for (int i = 0; i < op->nargs; i++) {
        const IrOp *d = v->f->values[op->args[i]].def;
        if (!d || d->kind != OP_WAIT_ASYNC) return bad(v, op, "operand %d is no wait_async's result", i + 1);
    }
    return true;
}

/* The yield that ends a region: its operand types must be the owner's result types. */
static bool check_yield(Verifier *v, const IrOp *owner, const IrOp *y, const char *region)
{
    if (y->nargs != owner->nres) return bad(v, owner, "%s yields %d values, the op has %d results", region, y->nargs, owner->nres);
    for (int i = 0; i < y->nargs; i++) {
        char b1[32], b2[32];
        if (owner->kind != OP_FOR && in_flight(v, y->args[i]))
            return bad(v, owner, "%s yields an issued dot's result (only a for loop carries one)", region);
        IrType t = ty(v, y->args[i]), r = ty(v, owner->res[i]);
        if (!ir_type_eq(t, r)) return bad(v, owner, "%s yields %s for result %d of type %s", region, tstr(t, b1), i + 1, tstr(r, b2));
    }
    return true;
}

/* Whether b (or a region inside it) defines a: an argument or a result. */
static bool defines(const IrBlock *b, ValueId a, int depth)
{
    if (!b || depth > IR_MAX_DEPTH) return false;
    for (int i = 0; i < b->nargs; i++)
        if (b->args[i] == a) return true;
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int r = 0; r < op->nres; r++)
            if (op->res[r] == a) return true;
        if (defines(op->body, a, depth + 1) || defines(op->els, a, depth + 1)) return true;
    }
    return false;
}

/* A dot in flight over a loop's back edge reads its A from outside the
 * loop: a wgmma reads a computed A from registers until its wait, and the
 * loop writes the registers of what it carries at the back edge and of
 * what its body computes in the next iteration (a carried P_{j-1} under
 * P_j: the PTX leaves it undefined, and the GPU computed with P_j). */
static bool reads_from_outside(Verifier *v, const IrOp *loop, ValueId flight)
{
    const IrOp *dot = v->f->values[flight].def;
    if (!dot || dot->kind != OP_DOT || !dot->nargs || !defines(loop->body, dot->args[0], 0)) return true;
    return bad(v, loop, "carries a dot in flight (%%%d) whose A (%%%d) the loop writes again before the dot's wait", flight, dot->args[0]);
}

static bool check_for(Verifier *v, const IrOp *op, int depth)
{
    char b1[32], b2[32];
    if (op->nargs < 2) return bad(v, op, "needs lower and upper bounds");
    if (!is_i32_scalar(ty(v, op->args[0])) || !is_i32_scalar(ty(v, op->args[1]))) return bad(v, op, "bounds must be i32 scalars");
    if (op->ival <= 0 || op->ival > INT32_MAX) return bad(v, op, "step %lld must be positive", (long long)op->ival);
    int ncarried = op->nargs - 2;
    if (op->nres != ncarried) return bad(v, op, "has %d carried values but %d results", ncarried, op->nres);
    const IrBlock *body = op->body;
    if (!body) return bad(v, op, "has no body");
    if (body->nargs != ncarried + 1) return bad(v, op, "body has %d arguments, needs %d", body->nargs, ncarried + 1);
    for (int i = 0; i < body->nargs; i++)
        if (!define(v, op, body->args[i], false)) return false;
    if (!is_i32_scalar(ty(v, body->args[0]))) return bad(v, op, "induction variable must be i32");
    for (int i = 0; i < ncarried; i++) {
        IrType init = ty(v, op->args[i + 2]), arg = ty(v, body->args[i + 1]), res = ty(v, op->res[i]);
        if (!ir_type_eq(init, arg) || !ir_type_eq(init, res))
            return bad(v, op, "carried value %d: initial %s, argument and result must agree (%s)", i + 1, tstr(init, b1), tstr(arg, b2));
    }
    /* a dot left in flight across the back edge: the argument and the result carrying it */
    const IrOp *y = body->nops ? body->ops[body->nops - 1] : NULL;
    for (int i = 0; y && y->kind == OP_YIELD && i < ncarried && i < y->nargs; i++)
        if (y->args[i] > 0 && y->args[i] < v->f->nvalues && in_flight(v, y->args[i]) && op->res[i] > 0 && op->res[i] < v->f->nvalues) {
            if (!reads_from_outside(v, op, y->args[i])) return false;
            v->pending[body->args[i + 1]] = v->pending[op->res[i]] = 1;
        }
    if (!check_block(v, body, depth + 1, op)) return false;
    return check_yield(v, op, body->ops[body->nops - 1], "body");
}

static bool check_if(Verifier *v, const IrOp *op, int depth)
{
    IrType c = ty(v, op->args[0]);
    if (c.dt != DT_BOOL || c.rank != 0) return bad(v, op, "condition must be a bool scalar");
    if (!op->body) return bad(v, op, "has no then branch");
    if (!check_block(v, op->body, depth + 1, op)) return false;
    if (!check_yield(v, op, op->body->ops[op->body->nops - 1], "then branch")) return false;
    if (!op->els) {
        if (op->nres) return bad(v, op, "has results but no else branch");
        return true;
    }
    if (!check_block(v, op->els, depth + 1, op)) return false;
    return check_yield(v, op, op->els->ops[op->els->nops - 1], "else branch");
}

/* A region of a while: its arguments, one per carried value of the init's
 * type, are defined here; it ends with a yield of the types in want. */
static bool check_while_region(Verifier *v, const IrOp *op, const IrBlock *b, int depth, const char *what)
{
    char b1[32], b2[32];
    if (!b) return bad(v, op, "has no %s", what);
    if (b->nargs != op->nargs) return bad(v, op, "%s has %d arguments, needs %d", what, b->nargs, op->nargs);
    for (int i = 0; i < b->nargs; i++) {
        if (!define(v, op, b->args[i], false)) return false;
        IrType init = ty(v, op->args[i]), arg = ty(v, b->args[i]), res = ty(v, op->res[i]);
        if (!ir_type_eq(init, arg) || !ir_type_eq(init, res))
            return bad(v, op, "carried value %d: initial %s, arguments and result must agree (%s)", i + 1, tstr(init, b1), tstr(arg, b2));
    }
    return check_block(v, b, depth + 1, op);
}

static bool check_while(Verifier *v, const IrOp *op, int depth)
{
    if (op->nres != op->nargs) return bad(v, op, "has %d carried values but %d results", op->nargs, op->nres);
    if (!check_while_region(v, op, op->body, depth, "condition")) return false;
    const IrOp *y = op->body->ops[op->body->nops - 1];
    if (y->nargs != 1 || ty(v, y->args[0]).dt != DT_BOOL || ty(v, y->args[0]).rank != 0)
        return bad(v, op, "condition must yield one bool scalar");
    if (!check_while_region(v, op, op->els, depth, "body")) return false;
    return check_yield(v, op, op->els->ops[op->els->nops - 1], "body");
}

static bool check_op(Verifier *v, const IrOp *op, int depth)
{
    char b1[32], b2[32];
    if (!check_operands(v, op)) return false;
    IrType r = op->nres ? ty(v, op->res[0]) : ir_scalar(DT_VOID);
    IrType a = op->nargs ? ty(v, op->args[0]) : ir_scalar(DT_VOID);
    /* results' validity is checked where they are defined, after the op */
    for (int i = 0; i < op->nres; i++)
        if (op->res[i] <= 0 || op->res[i] >= v->f->nvalues) return bad(v, op, "result %d is not a value", i + 1);
    if ((unsigned)op->kind >= OP_COUNT) return bad(v, op, "unknown op kind %d", (int)op->kind);
    if (!want(v, op, ir_ops[op->kind].nargs, ir_ops[op->kind].nres)) return false;   /* ops.h's counts */
    switch (op->kind) {
    case OP_CONST:
        if (r.rank != 0) return bad(v, op, "must be a scalar, is %s", tstr(r, b1));
        if (ir_is_f8(r.dt) && !(sop_round(r.dt, (float)op->fval) == (float)op->fval || isnan(op->fval))) {
            char num[32];
            snprintf(num, sizeof num, "%g", op->fval);
            return bad(v, op, "%s is no %s value", num, ir_dtype_name(r.dt));
        }
        return ir_is_int(r.dt) ? const_fits(v, op, r.dt) : true;
    case OP_PARAM: {
        if (op->param < 0 || op->param >= v->f->nparams) return bad(v, op, "names parameter %d, which does not exist", op->param);
        const IrParam *p = &v->f->params[op->param];
        if (p->is_tensor) return bad(v, op, "parameter '%s' is a tensor", p->name);
        if (p->dt != DT_I32 && p->dt != DT_I64 && p->dt != DT_F32)
            return bad(v, op, "scalar parameter '%s' is %s, not i32, i64 or f32", p->name, ir_dtype_name(p->dt));
        if (!ir_type_eq(r, ir_scalar(p->dt))) return bad(v, op, "type %s differs from parameter '%s' (%s)", tstr(r, b1), p->name, ir_dtype_name(p->dt));
        return true;
    }
    case OP_DIM: {
        const IrParam *p;
        if (!tensor_param(v, op, &p)) return false;
        if (op->axis < 0 || op->axis >= p->rank) return bad(v, op, "axis %d is not an axis of '%s'", op->axis, p->name);
        if (!is_i32_scalar(r)) return bad(v, op, "must be an i32 scalar");
        return true;
    }
    case OP_BLOCK_ID: case OP_GRID_DIM:
        if (op->axis < 0 || op->axis > 2) return bad(v, op, "axis %d is not 0, 1 or 2", op->axis);
        if (!is_i32_scalar(r)) return bad(v, op, "must be an i32 scalar");
        return true;
    case OP_IOTA:
        if (r.dt != DT_I32 || r.rank < 1) return bad(v, op, "must be an i32 tile, is %s", tstr(r, b1));
        if (op->axis < 0 || op->axis >= r.rank) return bad(v, op, "axis %d is not an axis of %s", op->axis, tstr(r, b1));
        return true;
    case OP_SPLAT:
        if (a.rank != 0 || r.rank < 1 || a.dt != r.dt) return bad(v, op, "needs a scalar and a tile of its dtype, has %s -> %s", tstr(a, b1), tstr(r, b2));
        return true;
    case OP_BROADCAST:
        return check_broadcast(v, op, a, r);
    case OP_CONVERT:
        if (!same_shape(a, r)) return bad(v, op, "changes shape %s to %s", tstr(a, b1), tstr(r, b2));
        return true;
    case OP_TRANSPOSE:
        if (a.rank != 2 || !ir_type_eq(r, ir_tile2(a.dt, a.shape[1], a.shape[0])))
            return bad(v, op, "cannot transpose %s to %s", tstr(a, b1), tstr(r, b2));
        return true;
    case OP_UNARY:
        return check_unary(v, op, a, r);
    case OP_BINARY: case OP_CMP:
        return check_binary(v, op, a, ty(v, op->args[1]), r);
    case OP_SELECT: {
        IrType x = ty(v, op->args[1]), y = ty(v, op->args[2]);
        if (a.dt != DT_BOOL || !same_shape(a, x)) return bad(v, op, "condition must be bool of the operands' shape, is %s", tstr(a, b1));
        if (!ir_type_eq(x, y) || !ir_type_eq(x, r)) return bad(v, op, "operands %s and %s and result must have one type", tstr(x, b1), tstr(y, b2));
        return true;
    }
    case OP_FMA:
        return check_fma(v, op, a, r);
    case OP_REDUCE:
        return check_reduce(v, op, a, r);
    case OP_ARGMAX: case OP_ARGMIN: case OP_CUMSUM:
        return check_along_axis(v, op, a, r);
    case OP_RESHAPE:
        return check_reshape(v, op, a, r);
    case OP_DOT:
        return check_dot(v, op);
    case OP_LOAD: case OP_STORE:
        return check_memory(v, op);
    case OP_ATOMIC_ADD:
        return check_memory(v, op) && check_atomic(v, op);
    case OP_GATHER: case OP_SCATTER:
        return check_by_element(v, op);
    case OP_SCATTER_ADD:
        return check_by_element(v, op) && check_atomic(v, op);
    case OP_COPY_ASYNC:
        return check_copy(v, op);
    case OP_WAIT_ASYNC:
        return check_wait(v, op);
    case OP_WAIT_DOTS:
        return check_wait_dots(v, op);
    case OP_RELEASE_ASYNC:
        return check_release(v, op);
    case OP_FOR:
        return check_for(v, op, depth);
    case OP_IF:
        return check_if(v, op, depth);
    case OP_WHILE:
        return check_while(v, op, depth);
    case OP_DEVICE_PRINT:
        if (!op->str) return bad(v, op, "has no prefix");
        for (int i = 0; i < op->nargs; i++) {
            IrType t = ty(v, op->args[i]);
            if (t.rank != 0 || (t.dt != DT_I32 && t.dt != DT_I64 && t.dt != DT_F32 && t.dt != DT_BOOL))
                return bad(v, op, "operand %d is %s; it prints i32, f32 and bool scalars", i + 1, tstr(t, b1));
        }
        return true;
    case OP_DEVICE_ASSERT:
        if (a.dt != DT_BOOL) return bad(v, op, "condition must be bool, is %s", tstr(a, b1));
        if (!op->str || !op->file) return bad(v, op, "has no message or no file");
        return true;
    default:   /* commit_async, yield, return: nothing but their operand counts */
        return true;
    }
}

/* Checks a region's ops; owner is the for/if it belongs to (NULL for the
 * function body), which decides how it must end. Values defined in the
 * region go out of scope at its end. */
static bool check_block(Verifier *v, const IrBlock *b, int depth, const IrOp *owner)
{
    if (depth > IR_MAX_DEPTH) return bad(v, owner, "regions nested more than %d deep", IR_MAX_DEPTH);
    if (b->nops < 0 || (b->nops && !b->ops)) return bad(v, owner, "has a corrupt region");
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (!op) return bad(v, owner, "has a null op");
        bool last = i == b->nops - 1;
        if (op->kind == OP_YIELD && (!owner || !last)) {
            return bad(v, op, owner ? "must be the last op of its region" : "outside a for body, if branch or while region");
        }
        if (!check_op(v, op, depth)) return false;
        for (int k = 0; k < op->nres; k++)
            if (!define(v, op, op->res[k], true)) return false;
    }
    if (owner && (b->nops == 0 || b->ops[b->nops - 1]->kind != OP_YIELD))
        return bad(v, owner, "a region of a '%s' must end with yield", ir_op_name(owner));
    if (!owner && (b->nops == 0 || b->ops[b->nops - 1]->kind != OP_RETURN))
        return bad(v, NULL, "the function body must end with return");
    /* leaving the region: its values are no longer visible */
    for (int i = 0; i < b->nargs; i++)
        if (b->args[i] > 0 && b->args[i] < v->f->nvalues) v->state[b->args[i]] = 2;
    for (int i = 0; i < b->nops; i++)
        for (int k = 0; k < b->ops[i]->nres; k++) v->state[b->ops[i]->res[k]] = 2;
    return true;
}

int ir_verify(const IrFunc *f, char *err, size_t errlen)
{
    size_t n = (size_t)(f->nvalues > 0 ? f->nvalues : 1);
    Verifier v = {f, xcalloc(n, 1), err, errlen, false, {0}, xcalloc(n, 1)};
    if (!f->body) bad(&v, NULL, "has no body");
    else if (f->body->nargs) bad(&v, NULL, "the function body takes no arguments");
    else check_block(&v, f->body, 0, NULL);
    free(v.state);
    free(v.pending);
    return v.failed;
}
