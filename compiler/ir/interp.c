/* interp.c: the CPU interpreter of the tile IR, the executable meaning of
 * the language. Runs a function over the whole grid, one block at a time,
 * on host memory. Every value has one buffer, allocated once (shapes are
 * static) and overwritten by loops: float for f16/bf16/f32 and fp8 (f16, bf16 and fp8
 * held already rounded to their dtype), int32_t for i32, i8, u8 (within
 * their range) and bool, int64_t (two words) for i64. Each op
 * is dispatched once and loops over its whole tile; each element of a
 * scalar op is computed by the reference table (scalarops.h). */
#include "ir.h"
#include "base/half.h"
#include "scalarops.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum { RUN_NEXT, RUN_YIELD, RUN_RETURN, RUN_ERROR } RunStatus;

typedef struct {
    const IrFunc *f;
    const IrArg *args;
    int grid[3], block[3];
    uint32_t *store;       /* all value buffers */
    int64_t *offset;       /* value -> element offset into store, -1 if none */
    float *scratch;        /* dot_t's transposed operand */
    const IrOp *yielded;   /* the yield that ended the last region */
    char *err; size_t errlen;
} Interp;

static float *fbuf(Interp *in, ValueId v) { return (float *)(in->store + in->offset[v]); }
static int32_t *ibuf(Interp *in, ValueId v) { return (int32_t *)(in->store + in->offset[v]); }
static int64_t *lbuf(Interp *in, ValueId v) { return (int64_t *)(in->store + in->offset[v]); }
static int64_t numel(const Interp *in, ValueId v) { return ir_numel(ir_vtype(in->f, v)); }
static bool is_i64(const Interp *in, ValueId v) { return ir_vtype(in->f, v).dt == DT_I64; }
/* The 32-bit words of one element of v: 2 for i64, else 1. */
static int wpe(const Interp *in, ValueId v) { return is_i64(in, v) ? 2 : 1; }
/* An integer element of v (i32, i8, u8, bool or i64) widened to 64 bits. */
static int64_t int_at(Interp *in, ValueId v, int64_t e) { return is_i64(in, v) ? lbuf(in, v)[e] : ibuf(in, v)[e]; }

static void round_all(DType dt, float *x, int64_t n)
{
    if (dt == DT_F16) for (int64_t i = 0; i < n; i++) x[i] = ph_round_f16(x[i]);
    else if (dt == DT_BF16) for (int64_t i = 0; i < n; i++) x[i] = ph_round_bf16(x[i]);
    else if (ir_is_f8(dt)) for (int64_t i = 0; i < n; i++) x[i] = sop_round(dt, x[i]);
}

static RunStatus run_error(Interp *in, const IrOp *op, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(in->err, in->errlen, "kernel '%s', block (%d, %d, %d): %s in '%s'", in->f->kernel,
             in->block[0], in->block[1], in->block[2], msg, ir_op_name(op));
    if (op->loc.line > 0) {
        size_t n = strlen(in->err);
        snprintf(in->err + n, in->errlen > n ? in->errlen - n : 0, " at %d:%d", op->loc.line, op->loc.col);
    }
    return RUN_ERROR;
}

/* ---- leaves, shapes and conversions ---- */

static void run_const(Interp *in, const IrOp *op)
{
    IrType t = ir_vtype(in->f, op->res[0]);
    if (ir_is_float(t.dt)) *fbuf(in, op->res[0]) = sop_round(t.dt, (float)op->fval);
    else if (t.dt == DT_BOOL) *ibuf(in, op->res[0]) = op->ival != 0;
    else if (t.dt == DT_I64) *lbuf(in, op->res[0]) = op->ival;
    else *ibuf(in, op->res[0]) = (int32_t)op->ival;
}

static void run_iota(Interp *in, const IrOp *op)
{
    IrType t = ir_vtype(in->f, op->res[0]);
    int rows = ir_rows(t), cols = ir_cols(t);
    int32_t *r = ibuf(in, op->res[0]);
    bool by_row = t.rank == 2 && op->axis == 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) r[(int64_t)i * cols + j] = by_row ? i : j;
}

/* Buffers are 32-bit words whatever the dtype (two an element for i64),
 * so shape ops copy elements of w words. */
static void copy_elem(uint32_t *to, const uint32_t *from, int w)
{
    to[0] = from[0];
    if (w == 2) to[1] = from[1];
}

static void run_splat(Interp *in, const IrOp *op)
{
    const uint32_t *v = in->store + in->offset[op->args[0]];
    uint32_t *r = in->store + in->offset[op->res[0]];
    int w = wpe(in, op->res[0]);
    for (int64_t i = 0, n = numel(in, op->res[0]); i < n; i++) copy_elem(r + i * w, v, w);
}

static void run_broadcast(Interp *in, const IrOp *op)
{
    IrType a = ir_vtype(in->f, op->args[0]), t = ir_vtype(in->f, op->res[0]);
    int arows = ir_rows(a), acols = ir_cols(a), rows = ir_rows(t), cols = ir_cols(t), w = wpe(in, op->res[0]);
    const uint32_t *src = in->store + in->offset[op->args[0]];
    uint32_t *r = in->store + in->offset[op->res[0]];
    for (int i = 0; i < rows; i++) {
        const uint32_t *srow = src + (int64_t)(arows == 1 ? 0 : i) * acols * w;
        uint32_t *row = r + (int64_t)i * cols * w;
        if (acols == 1) for (int j = 0; j < cols; j++) copy_elem(row + (int64_t)j * w, srow, w);
        else memcpy(row, srow, sizeof *row * (size_t)cols * (size_t)w);
    }
}

static void run_transpose(Interp *in, const IrOp *op)
{
    IrType a = ir_vtype(in->f, op->args[0]);
    int rows = a.shape[0], cols = a.shape[1], w = wpe(in, op->res[0]);
    const uint32_t *src = in->store + in->offset[op->args[0]];
    uint32_t *r = in->store + in->offset[op->res[0]];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) copy_elem(r + ((int64_t)j * rows + i) * w, src + ((int64_t)i * cols + j) * w, w);
}

/* Conversions from or to i64 (sop_float_to_i64, sop_i64_to_float). */
static void convert_i64(Interp *in, const IrOp *op, DType from, DType to, int64_t n)
{
    ValueId a = op->args[0], r = op->res[0];
    for (int64_t i = 0; i < n; i++) {
        if (to == DT_I64) lbuf(in, r)[i] = ir_is_float(from) ? sop_float_to_i64(fbuf(in, a)[i]) : int_at(in, a, i);
        else if (to == DT_BOOL) ibuf(in, r)[i] = lbuf(in, a)[i] != 0;
        else if (ir_is_int(to)) ibuf(in, r)[i] = sop_wrap_int(to, lbuf(in, a)[i]);
        else fbuf(in, r)[i] = sop_i64_to_float(to, lbuf(in, a)[i]);
    }
}

static void run_convert(Interp *in, const IrOp *op)
{
    DType from = ir_vtype(in->f, op->args[0]).dt, to = ir_vtype(in->f, op->res[0]).dt;
    int64_t n = numel(in, op->res[0]);
    if (from == DT_I64 || to == DT_I64) {
        if (from == to) memcpy(lbuf(in, op->res[0]), lbuf(in, op->args[0]), sizeof(int64_t) * (size_t)n);
        else convert_i64(in, op, from, to, n);
    } else if (ir_is_float(from)) {
        const float *a = fbuf(in, op->args[0]);
        if (ir_is_int(to)) for (int64_t i = 0; i < n; i++) ibuf(in, op->res[0])[i] = sop_float_to_int(to, a[i]);
        else if (to == DT_BOOL) for (int64_t i = 0; i < n; i++) ibuf(in, op->res[0])[i] = a[i] != 0;
        else {
            float *r = fbuf(in, op->res[0]);
            for (int64_t i = 0; i < n; i++) r[i] = a[i];
            round_all(to, r, n);
        }
    } else {
        const int32_t *a = ibuf(in, op->args[0]);
        if (ir_is_int(to)) for (int64_t i = 0; i < n; i++) ibuf(in, op->res[0])[i] = sop_wrap_int(to, a[i]);
        else if (to == DT_BOOL) for (int64_t i = 0; i < n; i++) ibuf(in, op->res[0])[i] = a[i] != 0;
        else {
            float *r = fbuf(in, op->res[0]);
            for (int64_t i = 0; i < n; i++) r[i] = sop_i32_to_float(to, a[i]);
        }
    }
}

/* ---- elementwise ---- */

static void run_unary(Interp *in, const IrOp *op)
{
    DType dt = ir_vtype(in->f, op->args[0]).dt;
    int64_t n = numel(in, op->res[0]);
    if (dt == DT_I64) {
        for (int64_t i = 0; i < n; i++) lbuf(in, op->res[0])[i] = sop_i64_unary(op->sub, lbuf(in, op->args[0])[i]);
        return;
    }
    if (!ir_is_float(dt)) {
        const int32_t *a = ibuf(in, op->args[0]);
        int32_t *r = ibuf(in, op->res[0]);
        if (dt == DT_BOOL) for (int64_t i = 0; i < n; i++) r[i] = !a[i];
        else for (int64_t i = 0; i < n; i++) r[i] = sop_i32_unary(op->sub, a[i]);
        return;
    }
    const float *a = fbuf(in, op->args[0]);
    float *r = fbuf(in, op->res[0]);
    for (int64_t i = 0; i < n; i++) r[i] = sop_float_unary(op->sub, dt, a[i]);
}

static void run_binary(Interp *in, const IrOp *op)
{
    DType dt = ir_vtype(in->f, op->args[0]).dt;
    int64_t n = numel(in, op->res[0]);
    if (ir_is_float(dt)) {
        const float *a = fbuf(in, op->args[0]), *b = fbuf(in, op->args[1]);
        float *r = fbuf(in, op->res[0]);
        for (int64_t i = 0; i < n; i++) r[i] = sop_float_binary(op->sub, dt, a[i], b[i]);
        return;
    }
    if (dt == DT_I64) {
        const int64_t *a = lbuf(in, op->args[0]), *b = lbuf(in, op->args[1]);
        for (int64_t i = 0; i < n; i++) lbuf(in, op->res[0])[i] = sop_i64_binary(op->sub, a[i], b[i]);
        return;
    }
    const int32_t *a = ibuf(in, op->args[0]), *b = ibuf(in, op->args[1]);
    int32_t *r = ibuf(in, op->res[0]);
    if (dt == DT_BOOL) for (int64_t i = 0; i < n; i++) r[i] = sop_bool_binary(op->sub, a[i], b[i]);
    else for (int64_t i = 0; i < n; i++) r[i] = sop_i32_binary(op->sub, a[i], b[i]);
}

static void run_cmp(Interp *in, const IrOp *op)
{
    int64_t n = numel(in, op->res[0]);
    int32_t *r = ibuf(in, op->res[0]);
    if (ir_is_float(ir_vtype(in->f, op->args[0]).dt)) {
        const float *a = fbuf(in, op->args[0]), *b = fbuf(in, op->args[1]);
        for (int64_t i = 0; i < n; i++) r[i] = sop_compare_float(op->sub, a[i], b[i]);
    } else if (is_i64(in, op->args[0])) {
        const int64_t *a = lbuf(in, op->args[0]), *b = lbuf(in, op->args[1]);
        for (int64_t i = 0; i < n; i++) r[i] = sop_compare_i64(op->sub, a[i], b[i]);
    } else {
        const int32_t *a = ibuf(in, op->args[0]), *b = ibuf(in, op->args[1]);
        for (int64_t i = 0; i < n; i++) r[i] = sop_compare_i32(op->sub, a[i], b[i]);
    }
}

static void run_select(Interp *in, const IrOp *op)
{
    int64_t n = numel(in, op->res[0]);
    const int32_t *c = ibuf(in, op->args[0]);
    const uint32_t *a = in->store + in->offset[op->args[1]], *b = in->store + in->offset[op->args[2]];
    uint32_t *r = in->store + in->offset[op->res[0]];
    int w = wpe(in, op->res[0]);
    for (int64_t i = 0; i < n; i++) copy_elem(r + i * w, (c[i] ? a : b) + i * w, w);
}

static void run_fma(Interp *in, const IrOp *op)
{
    DType dt = ir_vtype(in->f, op->args[0]).dt;
    int64_t n = numel(in, op->res[0]);
    const float *a = fbuf(in, op->args[0]), *b = fbuf(in, op->args[1]), *c = fbuf(in, op->args[2]);
    float *r = fbuf(in, op->res[0]);
    for (int64_t i = 0; i < n; i++) r[i] = sop_float_fma(dt, a[i], b[i], c[i]);
}

/* ---- tile-wide ---- */

/* A reduction combines as the binary op does (sum in f32, rounded once at the end). */
static IrBinop reduce_binop(int sub) { return sub == RED_SUM ? BIN_ADD : sub == RED_MAX ? BIN_MAX : BIN_MIN; }

static float reduce_step(int sub, float acc, float x) { return sop_float_binary(reduce_binop(sub), DT_F32, acc, x); }

static int32_t reduce_step_i32(int sub, int32_t acc, int32_t x) { return sop_i32_binary(reduce_binop(sub), acc, x); }

/* Accumulates in index order; along rows (axis 0 of a 2-D tile) or along
 * the last axis otherwise. */
static void run_reduce(Interp *in, const IrOp *op)
{
    IrType a = ir_vtype(in->f, op->args[0]);
    int rows = ir_rows(a), cols = ir_cols(a);
    bool down = a.rank == 2 && op->axis == 0;
    int outer = down ? cols : rows, inner = down ? rows : cols;
    int64_t so = down ? 1 : cols, si = down ? cols : 1;
    if (ir_is_float(a.dt)) {
        const float *x = fbuf(in, op->args[0]);
        float *r = fbuf(in, op->res[0]);
        for (int o = 0; o < outer; o++) {
            float acc = x[o * so];
            for (int k = 1; k < inner; k++) acc = reduce_step(op->sub, acc, x[o * so + k * si]);
            r[o] = sop_round(a.dt, acc);
        }
    } else if (a.dt == DT_I64) {
        const int64_t *x = lbuf(in, op->args[0]);
        for (int o = 0; o < outer; o++) {
            int64_t acc = x[o * so];
            for (int k = 1; k < inner; k++) acc = sop_i64_binary(reduce_binop(op->sub), acc, x[o * so + k * si]);
            lbuf(in, op->res[0])[o] = acc;
        }
    } else {
        const int32_t *x = ibuf(in, op->args[0]);
        int32_t *r = ibuf(in, op->res[0]);
        for (int o = 0; o < outer; o++) {
            int32_t acc = x[o * so];
            for (int k = 1; k < inner; k++) acc = reduce_step_i32(op->sub, acc, x[o * so + k * si]);
            r[o] = acc;
        }
    }
}

/* The lines of a 2-D tile along axis: line o's element k is at
 * o * outer + k * inner (axis 0: columns down the rows; axis 1: rows). */
typedef struct { int lines, len; int64_t outer, inner; } Lines;

static Lines lines_along(IrType a, int axis)
{
    int rows = ir_rows(a), cols = ir_cols(a);
    return axis == 0 ? (Lines){cols, rows, 1, cols} : (Lines){rows, cols, cols, 1};
}

/* Whether x beats the best so far, seen earlier in the line: NaN beats
 * every number (the first NaN wins), else strictly larger (smaller), so a
 * tie keeps the smaller index. */
static bool arg_beats(bool max, float x, float best)
{
    if (isnan(best)) return false;
    if (isnan(x)) return true;
    return max ? x > best : x < best;
}

static void run_argreduce(Interp *in, const IrOp *op)
{
    IrType a = ir_vtype(in->f, op->args[0]);
    Lines ln = lines_along(a, op->axis);
    bool max = op->kind == OP_ARGMAX, isfloat = ir_is_float(a.dt);
    int32_t *r = ibuf(in, op->res[0]);
    for (int o = 0; o < ln.lines; o++) {
        int best = 0;
        for (int k = 1; k < ln.len; k++) {
            int64_t at = o * ln.outer + k * ln.inner, at_best = o * ln.outer + best * ln.inner;
            bool beats;
            if (isfloat) beats = arg_beats(max, fbuf(in, op->args[0])[at], fbuf(in, op->args[0])[at_best]);
            else {
                int64_t x = int_at(in, op->args[0], at), b = int_at(in, op->args[0], at_best);
                beats = max ? x > b : x < b;
            }
            if (beats) best = k;
        }
        r[o] = best;
    }
}

/* Inclusive prefix sums, in index order: floats in f32, each rounded once
 * to the dtype; i32 wrapping. */
static void run_cumsum(Interp *in, const IrOp *op)
{
    IrType a = ir_vtype(in->f, op->args[0]);
    Lines ln = lines_along(a, op->axis);
    for (int o = 0; o < ln.lines; o++) {
        float facc = 0;
        int32_t iacc = 0;
        int64_t lacc = 0;
        for (int k = 0; k < ln.len; k++) {
            int64_t at = o * ln.outer + k * ln.inner;
            if (ir_is_float(a.dt)) {
                float x = fbuf(in, op->args[0])[at];
                facc = k == 0 ? x : sop_float_binary(BIN_ADD, DT_F32, facc, x);
                fbuf(in, op->res[0])[at] = sop_round(a.dt, facc);
            } else if (a.dt == DT_I64) {
                int64_t x = lbuf(in, op->args[0])[at];
                lacc = k == 0 ? x : sop_i64_binary(BIN_ADD, lacc, x);
                lbuf(in, op->res[0])[at] = lacc;
            } else {
                int32_t x = ibuf(in, op->args[0])[at];
                iacc = k == 0 ? x : sop_i32_binary(BIN_ADD, iacc, x);
                ibuf(in, op->res[0])[at] = iacc;
            }
        }
    }
}

/* acc + a @ b on i8 operands: exact products, sums wrapping in i32 (the
 * order cannot matter then). */
static void run_dot_int(Interp *in, const IrOp *op)
{
    IrType at = ir_vtype(in->f, op->args[0]), bt = ir_vtype(in->f, op->args[1]);
    int m = at.shape[0], kk = at.shape[1];
    bool trans = op->flags & DOT_TRANS_B;
    int n = trans ? bt.shape[0] : bt.shape[1];
    const int32_t *a = ibuf(in, op->args[0]), *b = ibuf(in, op->args[1]), *acc = ibuf(in, op->args[2]);
    int32_t *r = ibuf(in, op->res[0]);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            uint32_t sum = (uint32_t)acc[(int64_t)i * n + j];
            for (int k = 0; k < kk; k++)
                sum += (uint32_t)(a[(int64_t)i * kk + k] * (trans ? b[(int64_t)j * kk + k] : b[(int64_t)k * n + j]));
            r[(int64_t)i * n + j] = (int32_t)sum;
        }
}

/* acc + a @ b in f32: loop order i, k, j with the inner loop contiguous. */
static void run_dot(Interp *in, const IrOp *op)
{
    if (!ir_is_float(ir_vtype(in->f, op->args[0]).dt)) {
        run_dot_int(in, op);
        return;
    }
    IrType at = ir_vtype(in->f, op->args[0]), bt = ir_vtype(in->f, op->args[1]);
    int m = at.shape[0], kk = at.shape[1];
    bool trans = op->flags & DOT_TRANS_B;
    int n = trans ? bt.shape[0] : bt.shape[1];
    const float *a = fbuf(in, op->args[0]), *b = fbuf(in, op->args[1]), *acc = fbuf(in, op->args[2]);
    float *r = fbuf(in, op->res[0]);
    if (trans) {
        float *t = in->scratch;
        for (int j = 0; j < n; j++)
            for (int k = 0; k < kk; k++) t[(int64_t)k * n + j] = b[(int64_t)j * kk + k];
        b = t;
    }
    for (int i = 0; i < m; i++) {
        float *row = r + (int64_t)i * n;
        memcpy(row, acc + (int64_t)i * n, sizeof *row * (size_t)n);
        const float *arow = a + (int64_t)i * kk;
        for (int k = 0; k < kk; k++) {
            float aik = arow[k];
            const float *brow = b + (int64_t)k * n;
            for (int j = 0; j < n; j++) row[j] += aik * brow[j];
        }
    }
}

/* ---- memory ---- */

/* A window in 2-D terms: element (gi, gj) of the tensor's plane lies at
 * base + gi * rs + gj * cs, inside when 0 <= gi < rows, 0 <= gj < cols and
 * the axes indexed by a scalar are inside (inside). A rank-1 tensor is one
 * row; a rank-2 tensor row-major; a rank-3/4 tensor's window runs along
 * window_axes (a 1-D tile along its one axis), by its strides. */
typedef struct { bool inside; int64_t base, rows, cols, r0, c0, rs, cs; } Window;

/* The strides of a tensor argument, in elements: its own, or row-major. */
static void arg_strides(const IrArg *arg, int rank, int64_t st[IR_MAX_RANK])
{
    bool given = false;
    for (int a = 0; a < rank; a++) given = given || arg->strides[a];
    int64_t run = 1;
    for (int a = rank - 1; a >= 0; a--) {
        st[a] = rank > 2 && given ? arg->strides[a] : run;
        run *= arg->dims[a];
    }
}

static Window window_of(Interp *in, const IrOp *op, const IrParam *p)
{
    const IrArg *arg = &in->args[op->param];
    int64_t st[IR_MAX_RANK];
    arg_strides(arg, p->rank, st);
    unsigned axes = p->rank <= 2 ? (1u << p->rank) - 1 : (unsigned)op->window_axes;
    Window win = {true, 0, 1, 1, 0, 0, 0, 0};
    int nwin = __builtin_popcount(axes), seen = 0;
    for (int a = 0; a < p->rank; a++) {
        int64_t at = *ibuf(in, op->args[a]);
        if (!(axes & (1u << a))) {
            win.inside = win.inside && at >= 0 && at < arg->dims[a];
            win.base += at * st[a];
        } else if (seen++ == 0 && nwin == 2) {
            win.rows = arg->dims[a], win.r0 = at, win.rs = st[a];
        } else {
            win.cols = arg->dims[a], win.c0 = at, win.cs = st[a];
        }
    }
    return win;
}

static float read_elem(DType dt, const void *base, int64_t idx)
{
    switch (dt) {
    case DT_F16: return ph_f16_to_f32(((const uint16_t *)base)[idx]);
    case DT_BF16: return ph_bf16_to_f32(((const uint16_t *)base)[idx]);
    case DT_F8E4M3: return ph_e4m3_to_f32(((const uint8_t *)base)[idx]);
    case DT_F8E5M2: return ph_e5m2_to_f32(((const uint8_t *)base)[idx]);
    default: return ((const float *)base)[idx];
    }
}

/* Element e of value v into a tensor of dtype dt at element at (v holds
 * it already in dt's range and rounding; the float formats round again,
 * which changes nothing). */
static void write_elem(Interp *in, DType dt, void *data, int64_t at, ValueId v, int64_t e)
{
    switch (dt) {
    case DT_F16: ((uint16_t *)data)[at] = ph_f32_to_f16(fbuf(in, v)[e]); break;
    case DT_BF16: ((uint16_t *)data)[at] = ph_f32_to_bf16(fbuf(in, v)[e]); break;
    case DT_F8E4M3: ((uint8_t *)data)[at] = ph_f32_to_e4m3(fbuf(in, v)[e]); break;
    case DT_F8E5M2: ((uint8_t *)data)[at] = ph_f32_to_e5m2(fbuf(in, v)[e]); break;
    case DT_F32: ((float *)data)[at] = fbuf(in, v)[e]; break;
    case DT_I8: ((int8_t *)data)[at] = (int8_t)ibuf(in, v)[e]; break;
    case DT_U8: ((uint8_t *)data)[at] = (uint8_t)ibuf(in, v)[e]; break;
    case DT_I64: ((int64_t *)data)[at] = lbuf(in, v)[e]; break;
    default: ((int32_t *)data)[at] = ibuf(in, v)[e]; break;
    }
}

static int64_t read_int(DType dt, const void *base, int64_t idx)
{
    switch (dt) {
    case DT_I64: return ((const int64_t *)base)[idx];
    case DT_I8: return ((const int8_t *)base)[idx];
    case DT_U8: return ((const uint8_t *)base)[idx];
    default: return ((const int32_t *)base)[idx];
    }
}

static void run_load(Interp *in, const IrOp *op)
{
    const IrParam *p = &in->f->params[op->param];
    IrType t = ir_vtype(in->f, op->res[0]);
    Window win = window_of(in, op, p);
    int rows = ir_rows(t), cols = ir_cols(t);
    const void *data = in->args[op->param].data;
    for (int i = 0; i < rows; i++) {
        int64_t gi = win.r0 + i;
        bool row_in = win.inside && gi >= 0 && gi < win.rows;
        int64_t base = win.base + gi * win.rs;
        if (ir_is_int(p->dt)) {
            for (int j = 0; j < cols; j++) {
                int64_t gj = win.c0 + j, x = row_in && gj >= 0 && gj < win.cols ? read_int(p->dt, data, base + gj * win.cs) : 0;
                if (p->dt == DT_I64) lbuf(in, op->res[0])[(int64_t)i * cols + j] = x;
                else ibuf(in, op->res[0])[(int64_t)i * cols + j] = (int32_t)x;
            }
        } else {
            float *r = fbuf(in, op->res[0]) + (int64_t)i * cols;
            for (int j = 0; j < cols; j++) {
                int64_t gj = win.c0 + j;
                r[j] = row_in && gj >= 0 && gj < win.cols ? read_elem(p->dt, data, base + gj * win.cs) : 0.0f;
            }
        }
    }
}

/* Adds element e of v into the tensor's element at: f32 rounded once,
 * i32 and i64 wrapping. */
static void add_elem(Interp *in, DType dt, void *data, int64_t at, ValueId v, int64_t e)
{
    if (dt == DT_F32) ((float *)data)[at] += fbuf(in, v)[e];
    else if (dt == DT_I64) ((int64_t *)data)[at] = (int64_t)((uint64_t)((int64_t *)data)[at] + (uint64_t)lbuf(in, v)[e]);
    else ((int32_t *)data)[at] = (int32_t)((uint32_t)((int32_t *)data)[at] + (uint32_t)ibuf(in, v)[e]);
}

/* A store, or with add an atomic add: blocks run one after another here,
 * so the add is a plain one (add_elem). Elements outside the tensor are
 * not touched. */
static void write_window(Interp *in, const IrOp *op, bool add)
{
    const IrParam *p = &in->f->params[op->param];
    ValueId v = op->args[op->nargs - 1], mask = ir_store_mask(op);
    IrType t = ir_vtype(in->f, v);
    Window win = window_of(in, op, p);
    int rows = ir_rows(t), cols = ir_cols(t);
    void *data = in->args[op->param].data;
    for (int i = 0; i < rows && win.inside; i++) {
        int64_t gi = win.r0 + i;
        if (gi < 0 || gi >= win.rows) continue;
        int64_t base = win.base + gi * win.rs;
        for (int j = 0; j < cols; j++) {
            int64_t gj = win.c0 + j;
            if (gj < 0 || gj >= win.cols) continue;
            int64_t e = (int64_t)i * cols + j, at = base + gj * win.cs;
            if (mask && !ibuf(in, mask)[e]) continue;
            if (add) add_elem(in, p->dt, data, at, v, e);
            else write_elem(in, p->dt, data, at, v, e);
        }
    }
}

/* Element e of a gather or scatter: its offset in the tensor, or -1
 * where an index lies outside it. */
static int64_t element_at(Interp *in, const IrOp *op, const IrParam *p, int64_t e)
{
    const IrArg *arg = &in->args[op->param];
    int64_t r = p->rank == 2 ? ibuf(in, op->args[0])[e] : 0, c = ibuf(in, op->args[p->rank - 1])[e];
    int64_t rows = p->rank == 2 ? arg->dims[0] : 1, cols = arg->dims[p->rank - 1];
    return r >= 0 && r < rows && c >= 0 && c < cols ? r * cols + c : -1;
}

static void run_gather(Interp *in, const IrOp *op)
{
    const IrParam *p = &in->f->params[op->param];
    const void *data = in->args[op->param].data;
    int64_t n = numel(in, op->res[0]);
    for (int64_t e = 0; e < n; e++) {
        int64_t at = element_at(in, op, p, e);
        if (p->dt == DT_I32) ibuf(in, op->res[0])[e] = at < 0 ? 0 : ((const int32_t *)data)[at];
        else if (p->dt == DT_I64) lbuf(in, op->res[0])[e] = at < 0 ? 0 : ((const int64_t *)data)[at];
        else fbuf(in, op->res[0])[e] = at < 0 ? 0.0f : read_elem(p->dt, data, at);
    }
}

/* Elements in index order: of two with the same indices the later lands
 * (with add, each adds its value: f32 rounded once per add, i32 wrapping). */
static void run_scatter(Interp *in, const IrOp *op, bool add)
{
    const IrParam *p = &in->f->params[op->param];
    ValueId v = op->args[op->nargs - 1];
    void *data = in->args[op->param].data;
    int64_t n = numel(in, v);
    for (int64_t e = 0; e < n; e++) {
        int64_t at = element_at(in, op, p, e);
        if (at < 0) continue;
        if (add) add_elem(in, p->dt, data, at, v, e);
        else write_elem(in, p->dt, data, at, v, e);
    }
}

/* ---- control ---- */

static void copy_value(Interp *in, ValueId to, ValueId from)
{
    memcpy(in->store + in->offset[to], in->store + in->offset[from], sizeof(uint32_t) * (size_t)(numel(in, to) * wpe(in, to)));
}

static RunStatus run_block(Interp *in, const IrBlock *b);

/* A region's yield: its values go to the owner's results. */
static void take_yield(Interp *in, const IrOp *owner)
{
    const IrOp *y = in->yielded;
    for (int i = 0; i < owner->nres; i++) copy_value(in, owner->res[i], y->args[i]);
}

static RunStatus run_for(Interp *in, const IrOp *op)
{
    int64_t lo = *ibuf(in, op->args[0]), hi = *ibuf(in, op->args[1]), step = op->ival;
    const IrBlock *body = op->body;
    int ncarried = op->nargs - 2;
    for (int i = 0; i < ncarried; i++) copy_value(in, op->res[i], op->args[i + 2]);
    for (int64_t iv = lo; iv < hi; iv += step) {
        *ibuf(in, body->args[0]) = (int32_t)iv;
        /* the results hold the carried values between iterations, so a
         * yield that swaps them reads every old value before any is written */
        for (int i = 0; i < ncarried; i++) copy_value(in, body->args[i + 1], op->res[i]);
        RunStatus s = run_block(in, body);
        if (s != RUN_YIELD) return s;
        take_yield(in, op);
    }
    return RUN_NEXT;
}

/* The results hold the carried values between iterations, as run_for's do;
 * the condition region sees them, and so does the body. */
static RunStatus run_while(Interp *in, const IrOp *op)
{
    const IrBlock *cond = op->body, *body = op->els;
    for (int i = 0; i < op->nargs; i++) copy_value(in, op->res[i], op->args[i]);
    for (;;) {
        for (int i = 0; i < op->nargs; i++) copy_value(in, cond->args[i], op->res[i]);
        RunStatus s = run_block(in, cond);
        if (s != RUN_YIELD) return s;
        if (!*ibuf(in, in->yielded->args[0])) return RUN_NEXT;
        for (int i = 0; i < op->nargs; i++) copy_value(in, body->args[i], op->res[i]);
        s = run_block(in, body);
        if (s != RUN_YIELD) return s;
        take_yield(in, op);
    }
}

/* ph.device_print: one line per block to stdout (docs/language.md). */
static void run_print(Interp *in, const IrOp *op)
{
    printf("pid (%d, %d, %d) %s", in->block[0], in->block[1], in->block[2], op->str);
    for (int i = 0; i < op->nargs; i++) {
        DType dt = ir_vtype(in->f, op->args[i]).dt;
        if (dt == DT_F32) printf(" %.9g", (double)*fbuf(in, op->args[i]));
        else if (dt == DT_I64) printf(" %lld", (long long)*lbuf(in, op->args[i]));
        else printf(" %d", (int)*ibuf(in, op->args[i]));
    }
    putchar('\n');
    fflush(stdout);
}

/* ph.device_assert: every element true, or the launch stops here. */
static RunStatus run_assert(Interp *in, const IrOp *op)
{
    IrType t = ir_vtype(in->f, op->args[0]);
    const int32_t *c = ibuf(in, op->args[0]);
    int64_t n = ir_numel(t), cols = ir_cols(t);
    for (int64_t i = 0; i < n; i++) {
        if (c[i]) continue;
        char where[64] = "";
        if (t.rank) snprintf(where, sizeof where, ", element (%lld, %lld)", (long long)(i / cols), (long long)(i % cols));
        snprintf(in->err, in->errlen, "%s:%d:%d: device assert failed in kernel '%s', block (%d, %d, %d)%s: %s", op->file,
                 op->loc.line, op->loc.col, in->f->name, in->block[0], in->block[1], in->block[2], where, op->str);
        return RUN_ERROR;
    }
    return RUN_NEXT;
}

static RunStatus run_if(Interp *in, const IrOp *op)
{
    const IrBlock *taken = *ibuf(in, op->args[0]) ? op->body : op->els;
    if (!taken) return RUN_NEXT;
    RunStatus s = run_block(in, taken);
    if (s != RUN_YIELD) return s;
    take_yield(in, op);
    return RUN_NEXT;
}

static RunStatus run_op(Interp *in, const IrOp *op)
{
    switch (op->kind) {
    case OP_CONST: run_const(in, op); break;
    case OP_PARAM:
        if (in->f->params[op->param].dt == DT_I32) *ibuf(in, op->res[0]) = in->args[op->param].i;
        else if (in->f->params[op->param].dt == DT_I64) *lbuf(in, op->res[0]) = in->args[op->param].l;
        else *fbuf(in, op->res[0]) = sop_round(in->f->params[op->param].dt, in->args[op->param].f);
        break;
    case OP_DIM: *ibuf(in, op->res[0]) = (int32_t)in->args[op->param].dims[op->axis]; break;
    case OP_BLOCK_ID: *ibuf(in, op->res[0]) = in->block[op->axis]; break;
    case OP_GRID_DIM: *ibuf(in, op->res[0]) = in->grid[op->axis]; break;
    case OP_IOTA: run_iota(in, op); break;
    case OP_SPLAT: run_splat(in, op); break;
    case OP_BROADCAST: run_broadcast(in, op); break;
    case OP_CONVERT: run_convert(in, op); break;
    case OP_TRANSPOSE: run_transpose(in, op); break;
    case OP_UNARY: run_unary(in, op); break;
    case OP_BINARY: run_binary(in, op); break;
    case OP_CMP: run_cmp(in, op); break;
    case OP_SELECT: run_select(in, op); break;
    case OP_FMA: run_fma(in, op); break;
    case OP_REDUCE: run_reduce(in, op); break;
    case OP_ARGMAX: case OP_ARGMIN: run_argreduce(in, op); break;
    case OP_CUMSUM: run_cumsum(in, op); break;
    /* a vector's elements keep their row-major order */
    case OP_RESHAPE: copy_value(in, op->res[0], op->args[0]); break;
    case OP_DOT: run_dot(in, op); break;
    case OP_LOAD: run_load(in, op); break;
    case OP_STORE: write_window(in, op, false); break;
    case OP_ATOMIC_ADD: write_window(in, op, true); break;
    case OP_GATHER: run_gather(in, op); break;
    case OP_SCATTER: run_scatter(in, op, false); break;
    case OP_SCATTER_ADD: run_scatter(in, op, true); break;
    /* copies through shared memory mean what loads mean; waiting and
     * committing order the hardware, not the values */
    case OP_COPY_ASYNC: run_load(in, op); break;
    case OP_COMMIT_ASYNC: case OP_RELEASE_ASYNC: break;
    case OP_WAIT_ASYNC: case OP_WAIT_DOTS:
        for (int i = 0; i < op->nargs; i++) copy_value(in, op->res[i], op->args[i]);
        break;
    case OP_FOR: return run_for(in, op);
    case OP_IF: return run_if(in, op);
    case OP_WHILE: return run_while(in, op);
    case OP_DEVICE_PRINT: run_print(in, op); break;
    case OP_DEVICE_ASSERT: return run_assert(in, op);
    case OP_YIELD: in->yielded = op; return RUN_YIELD;
    case OP_RETURN: return RUN_RETURN;
    default: return run_error(in, op, "unknown op");
    }
    return RUN_NEXT;
}

/* Recursion follows the IR's nesting, which ir_verify bounds. */
static RunStatus run_block(Interp *in, const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++) {
        RunStatus s = run_op(in, b->ops[i]);
        if (s != RUN_NEXT) return s;
    }
    return RUN_NEXT;
}

/* ---- buffers ---- */

typedef struct { int64_t total, max_dot_b; } Layout;

/* v's buffer: an i64 one starts at an even word, so its elements are aligned. */
static void place(Interp *in, ValueId v, Layout *l)
{
    if (is_i64(in, v)) l->total += l->total & 1;
    in->offset[v] = l->total;
    l->total += numel(in, v) * wpe(in, v);
}

static void lay_out(Interp *in, const IrBlock *b, Layout *l)
{
    if (!b) return;
    for (int i = 0; i < b->nargs; i++) place(in, b->args[i], l);
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int k = 0; k < op->nres; k++) place(in, op->res[k], l);
        if (op->kind == OP_DOT && numel(in, op->args[1]) > l->max_dot_b) l->max_dot_b = numel(in, op->args[1]);
        lay_out(in, op->body, l);
        lay_out(in, op->els, l);
    }
}

/* ---- argument checks ---- */

static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return 1;
}

/* The actual value of dimension `name`, from the first tensor that has it; 0 if none. */
static int64_t dim_value(const IrFunc *f, const IrArg *args, const char *name, int *which)
{
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pa = &f->params[p];
        for (int d = 0; pa->is_tensor && d < pa->rank; d++)
            if (pa->dim_name[d] && !strcmp(pa->dim_name[d], name)) {
                if (which) *which = p;
                return args[p].dims[d];
            }
    }
    return 0;
}

static int check_tensor(const IrFunc *f, const IrArg *args, int p, char *err, size_t errlen)
{
    const IrParam *pa = &f->params[p];
    const char *k = f->kernel;
    if (!args[p].data) return refuse(err, errlen, "kernel '%s': tensor argument '%s' has no data (a null pointer)", k, pa->name);
    for (int d = 0; d < pa->rank; d++) {
        int64_t v = args[p].dims[d];
        if (v < 1 || v > INT32_MAX)
            return refuse(err, errlen, "kernel '%s': argument '%s' has dim %d = %lld; dims must be between 1 and 2147483647",
                          k, pa->name, d, (long long)v);
        if (!pa->dim_name[d] && v != pa->dim_value[d])
            return refuse(err, errlen, "kernel '%s': argument '%s' must have dim %d = %lld, has %lld",
                          k, pa->name, d, (long long)pa->dim_value[d], (long long)v);
        if (!pa->dim_name[d]) continue;
        int first = p;
        int64_t want = dim_value(f, args, pa->dim_name[d], &first);
        if (want != v)
            return refuse(err, errlen, "kernel '%s': dim '%s' is %lld in '%s' but %lld in '%s'; tensors sharing a dim name must agree",
                          k, pa->dim_name[d], (long long)want, f->params[first].name, (long long)v, pa->name);
        for (int m = 0; m < f->nmeta; m++)
            if (!strcmp(f->meta[m].name, pa->dim_name[d]) && f->meta[m].value != v)
                return refuse(err, errlen, "kernel '%s': config '%s' specializes dim '%s' = %lld but '%s' has %lld; "
                              "this config is not eligible for these arguments",
                              k, f->name, pa->dim_name[d], (long long)f->meta[m].value, pa->name, (long long)v);
    }
    return 0;
}

static int check_args(const IrFunc *f, const IrArg *args, int nargs, const int grid[3], char *err, size_t errlen)
{
    const char *k = f->kernel;
    if (nargs != f->nparams) return refuse(err, errlen, "kernel '%s' takes %d arguments, got %d", k, f->nparams, nargs);
    if (f->nparams && !args) return refuse(err, errlen, "kernel '%s': no arguments given (a null pointer)", k);
    for (int p = 0; p < f->nparams; p++)
        if (f->params[p].is_tensor && check_tensor(f, args, p, err, errlen)) return 1;
    for (int i = 0; i < f->naligned; i++) {
        const IrAligned *a = &f->aligned[i];
        int64_t v = dim_value(f, args, a->dim, NULL);
        if (!v) continue;   /* a dim no tensor has: nothing to promise */
        if (a->value < 1 || v % a->value)
            return refuse(err, errlen, "kernel '%s': dim '%s' = %lld is not a multiple of %lld (%s), as @ph.aligned promises",
                          k, a->dim, (long long)v, (long long)a->value, a->meta ? a->meta : "the alignment");
    }
    if (!grid || grid[0] < 1 || grid[1] < 1 || grid[2] < 1)
        return refuse(err, errlen, "kernel '%s': grid (%d, %d, %d) must have every entry >= 1", k,
                      grid ? grid[0] : 0, grid ? grid[1] : 0, grid ? grid[2] : 0);
    return 0;
}

int ir_interp(const IrFunc *f, const IrArg *args, int nargs, const int grid[3], char *err, size_t errlen)
{
    char msg[400];
    if (ir_verify(f, msg, sizeof msg)) return refuse(err, errlen, "kernel '%s': malformed IR: %s", f->kernel, msg);
    if (check_args(f, args, nargs, grid, err, errlen)) return 1;
    Interp in = {.f = f, .args = args, .grid = {grid[0], grid[1], grid[2]}, .err = err, .errlen = errlen};
    in.offset = xmalloc(sizeof *in.offset * (size_t)f->nvalues);
    for (int i = 0; i < f->nvalues; i++) in.offset[i] = -1;
    Layout l = {0, 0};
    lay_out(&in, f->body, &l);
    in.store = xcalloc((size_t)(l.total ? l.total : 1), sizeof *in.store);
    in.scratch = xmalloc(sizeof *in.scratch * (size_t)(l.max_dot_b ? l.max_dot_b : 1));
    int status = 0;
    for (int z = 0; z < grid[2] && !status; z++)
        for (int y = 0; y < grid[1] && !status; y++)
            for (int x = 0; x < grid[0] && !status; x++) {
                in.block[0] = x;
                in.block[1] = y;
                in.block[2] = z;
                status = run_block(&in, f->body) == RUN_ERROR;
            }
    free(in.store);
    free(in.offset);
    free(in.scratch);
    return status;
}
