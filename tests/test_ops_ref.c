/* test_ops_ref.c: the interpreter against plain C, kernel by kernel, for
 * every config of tests/gpu/ops.ph, so the interpreter that judges the GPU
 * in test_gpu_ops.c is itself judged by something that shares none of its
 * code. Each reference below is written from the language contract alone
 * (docs/language.md): it walks the blocks of the same fixed 4 x 3 grid,
 * reads a window's elements past a tensor's edge as 0, drops a store's
 * elements past the edge, and computes in double. Inputs are
 * test_gpu_ops.c's (tests/opsharness.h); outputs are poisoned before the run,
 * and an element that no block writes must come back poisoned. Inputs must
 * come back unchanged.
 *
 * Tolerances follow from where f32 rounds, never from measured errors:
 * a sum (or dot) of n terms accumulated in f32 in any order is within
 * (n + 1) u sum|term| of the exact sum (u = 2^-24, the product of a dot
 * rounding once more); an elementwise expression within a few u of its
 * terms' magnitudes; moves, max and min exact; integers exact; and the
 * store's rounding to the tensor's dtype on top. The inputs are of
 * magnitude ~1, so a dot term or a reduced element dropped is a change of
 * ~1 against bounds of at most 3e-4 (dots of 32 to 48 terms, columns of
 * 48) and 6e-2 (rows of 1000); the errors seen are 1% to 10% of the
 * bounds for sums, up to 98% where the only rounding is the store's. */
#include <criterion/criterion.h>
#include <math.h>

#include "opsharness.h"
#include "testutil.h"

#define OPS "tests/gpu/ops.ph"
#define MAXP 16
#define U32 0x1p-24   /* unit roundoff of f32 */

enum { GRID_X = 4, GRID_Y = 3 };   /* test_gpu_ops.c's fixed_grid */

/* ---- poison: a NaN no kernel computes (a sentinel for i32) ---- */

enum { POISON_16 = 0x7e5a, POISON_BF16 = 0x7fa5 };
#define POISON_32 0x7fa5a5a5u

static void poison(DType dt, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == DT_F16) ((uint16_t *)p)[i] = POISON_16;
        else if (dt == DT_BF16) ((uint16_t *)p)[i] = POISON_BF16;
        else ((uint32_t *)p)[i] = POISON_32;
    }
}

static bool is_poison(DType dt, const void *p, size_t i)
{
    if (dt == DT_F16) return ((const uint16_t *)p)[i] == POISON_16;
    if (dt == DT_BF16) return ((const uint16_t *)p)[i] == POISON_BF16;
    return ((const uint32_t *)p)[i] == POISON_32;
}

/* ---- what a reference sees: the arguments, and where it writes ---- */

typedef struct {
    const IrFunc *f;
    const IrArg *args;
    double *want[MAXP];   /* per output tensor: the expected elements */
    double *tol[MAXP];    /* allowed |got - want|; negative where no block writes */
} Ref;

static int param(const Ref *r, const char *name)
{
    for (int i = 0; i < r->f->nparams; i++)
        if (!strcmp(r->f->params[i].name, name)) return i;
    cr_assert_fail("%s has no parameter %s", r->f->name, name);
    return -1;
}

static int64_t meta(const Ref *r, const char *name)
{
    for (int i = 0; i < r->f->nmeta; i++)
        if (!strcmp(r->f->meta[i].name, name)) return r->f->meta[i].value;
    cr_assert_fail("%s has no meta-parameter %s", r->f->name, name);
    return 0;
}

static int32_t scalar(const Ref *r, const char *name) { return r->args[param(r, name)].i; }

/* Element (i, j) of a tensor (j = 0 for rank 1), or -1 past its edges. */
static int64_t element(const Ref *r, int p, int64_t i, int64_t j)
{
    const int64_t *d = r->args[p].dims;
    int64_t cols = r->f->params[p].rank == 2 ? d[1] : 1;
    if (i < 0 || i >= d[0] || j < 0 || j >= cols) return -1;
    return i * cols + j;
}

/* A window's element: the tensor's, or 0 past its edges. */
static double in2(const Ref *r, const char *name, int64_t i, int64_t j)
{
    int p = param(r, name);
    int64_t e = element(r, p, i, j);
    return e < 0 ? 0.0 : as_double(r->f->params[p].dt, r->args[p].data, (size_t)e);
}

static double in1(const Ref *r, const char *name, int64_t i) { return in2(r, name, i, 0); }

static double store_rounding(DType dt)
{
    return dt == DT_F16 ? 0x1p-11 : dt == DT_BF16 ? 0x1p-8 : dt == DT_F32 ? U32 : 0;
}

/* A store's element: dropped past the edges; tol is the error of v before
 * the store, which adds its own rounding to the tensor's dtype. */
static void out2(Ref *r, const char *name, int64_t i, int64_t j, double v, double tol)
{
    int p = param(r, name);
    int64_t e = element(r, p, i, j);
    cr_assert_not_null(r->want[p], "%s: %s is not listed as an output", r->f->name, name);
    if (e < 0) return;
    r->want[p][e] = v;
    r->tol[p][e] = tol + store_rounding(r->f->params[p].dt) * fabs(v);
}

static void out1(Ref *r, const char *name, int64_t i, double v, double tol) { out2(r, name, i, 0, v, tol); }

/* The bound on n terms summed in f32 whose magnitudes add up to mag. */
static double sum_tol(int64_t n, double mag) { return (double)(n + 1) * U32 * mag; }

static int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

/* ---- the references, one block (bx, by) at a time ---- */

static void ref_colred(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    for (int64_t c = c0; c < c0 + bn; c++) {
        double sum = 0, mag = 0, mx = -INFINITY, mn = INFINITY;
        for (int64_t i = r0; i < r0 + bm; i++) {
            double x = in2(r, "X", i, c);
            sum += x;
            mag += fabs(x);
            mx = fmax(mx, x);
            mn = fmin(mn, x);
        }
        out2(r, "S", bx, c, sum, sum_tol(bm, mag));
        out2(r, "Mx", bx, c, mx, 0);
        out2(r, "Mn", bx, c, mn, 0);
    }
}

static void ref_widerow(Ref *r, int bx, int by)
{
    (void)by;
    int64_t bn = meta(r, "BN"), r0 = bx * 2;
    for (int64_t i = r0; i < r0 + 2; i++) {
        double sum = 0, mag = 0, mn = INFINITY;
        for (int64_t j = 0; j < bn; j++) {
            double x = in2(r, "X", i, j);
            sum += x;
            mag += fabs(x);
            mn = fmin(mn, x * 2.0 - 1.0);   /* each rounds once, and min keeps the order */
        }
        out2(r, "S", i, 0, sum, sum_tol(bn, mag));
        out2(r, "Mn", i, 0, mn, 0);
    }
}

static void ref_transp(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    for (int64_t i = 0; i < bm; i++)
        for (int64_t j = 0; j < bn; j++) out2(r, "Y", c0 + j, r0 + i, in2(r, "X", r0 + i, c0 + j), 0);
}

static void ref_masks(Ref *r, int bx, int by)
{
    (void)by;
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, n = scalar(r, "n");
    for (int64_t i = r0; i < r0 + bm; i++)
        for (int64_t j = 0; j < bn; j++) {
            int64_t idx = i * bn + j;
            double x = in2(r, "X", i, j);
            /* x and the integer are exact in f32: only the sum rounds, as the store does */
            out2(r, "Y", i, j, (idx < n ? x : -x) + (double)(floordiv(idx, 7) - floormod(idx, 5)), 0);
            float tenx = (float)x * 10.0f;   /* an f32 tile times a literal is an f32 product */
            int64_t t = (int32_t)tenx;        /* ph.i32 truncates toward zero */
            out2(r, "I", i, j, (double)(floordiv(t, 3) + floormod(idx - n, 4)), 0);
        }
}

/* The dots: C[r0:+BM, c0:+BN] = sum over k in range(0, k_len, BK) of the
 * windows' product; form says how A and B are laid out. */
typedef enum { AB, ABT, ATB } DotForm;

static double dot_a(const Ref *r, DotForm form, int64_t i, int64_t k)
{
    return form == ATB ? in2(r, "A", k, i) : in2(r, "A", i, k);
}

static double dot_b(const Ref *r, DotForm form, int64_t k, int64_t j)
{
    return form == ABT ? in2(r, "B", j, k) : in2(r, "B", k, j);
}

static void ref_dot_loop(Ref *r, int bx, int by, DotForm form)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), bk = meta(r, "BK"), klen = scalar(r, "k_len");
    int64_t r0 = bx * bm, c0 = by * bn;
    for (int64_t i = r0; i < r0 + bm; i++)
        for (int64_t j = c0; j < c0 + bn; j++) {
            double sum = 0, mag = 0;
            int64_t terms = 0;
            for (int64_t k = 0; k < klen; k += bk)
                for (int64_t kk = k; kk < k + bk; kk++, terms++) {
                    double t = dot_a(r, form, i, kk) * dot_b(r, form, kk, j);
                    sum += t;
                    mag += fabs(t);
                }
            out2(r, "C", i, j, sum, sum_tol(terms + 1, mag));
        }
}

/* Two passes over K, from 0 and from k1, each in BK steps; the windows
 * start 16 rows above the block's. */
static void ref_ringdot(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), bk = meta(r, "BK"), K = r->args[param(r, "A")].dims[1];
    int64_t r0 = bx * bm - 16, c0 = by * bn, starts[2] = {0, scalar(r, "k1")};
    for (int64_t i = r0; i < r0 + bm; i++)
        for (int64_t j = c0; j < c0 + bn; j++) {
            double sum = 0, mag = 0;
            int64_t terms = 0;
            for (int pass = 0; pass < 2; pass++)
                for (int64_t k = starts[pass]; k < K; k += bk)
                    for (int64_t kk = k; kk < k + bk; kk++, terms++) {
                        double t = in2(r, "A", i, kk) * in2(r, "B", j, kk);
                        sum += t;
                        mag += fabs(t);
                    }
            out2(r, "C", i, j, sum, sum_tol(terms + 1, mag));
        }
}

static void ref_bdot(Ref *r, int bx, int by) { ref_dot_loop(r, bx, by, AB); }
static void ref_fmadot(Ref *r, int bx, int by) { ref_dot_loop(r, bx, by, AB); }
static void ref_fmadot_t(Ref *r, int bx, int by) { ref_dot_loop(r, bx, by, ABT); }
static void ref_fmadot_tr(Ref *r, int bx, int by) { ref_dot_loop(r, bx, by, ATB); }

static void ref_fdot(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    for (int64_t i = r0; i < r0 + bm; i++)
        for (int64_t j = c0; j < c0 + bn; j++) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < 32; k++) {
                double t = in2(r, "A", i, k) * in2(r, "B", j, k);
                sum += t;
                mag += fabs(t);
            }
            out2(r, "C", i, j, sum, sum_tol(32 + 1, mag));
        }
}

static void ref_vec1(Ref *r, int bx, int by)
{
    (void)by;
    int64_t bn = meta(r, "BN"), r0 = bx * 4;
    for (int64_t i = r0; i < r0 + 4; i++)
        for (int64_t j = 0; j < bn; j++) {
            double x = in1(r, "X", j), y = in2(r, "Y", i, j);
            double t1 = exp(y - x) * sqrt(fabs(x)), t2 = fmax(x, y) / (1.0 + fabs(y));
            /* exp's argument |y - x| <= 4 carries its rounding into t1 four
             * times over; the other ops add an ulp or two each */
            out2(r, "Z", i, j, t1 + t2, 16 * U32 * (fabs(t1) + fabs(t2)));
        }
}

static void ref_ctrl(Ref *r, int bx, int by)
{
    (void)by;
    int64_t b = bx, n = scalar(r, "n");
    if (b % 3 == 2) return;
    for (int64_t e = 0; e < 32; e++) {
        double s = 0, mag = 0;
        int64_t steps = 0;
        for (int64_t i = b; i < n; i += 2, steps++) {
            double x = in1(r, "X", i * 4 + e);
            if (floormod(i, 4) == 0) s += x;
            else if (floormod(i, 4) == 1) s = fmax(s, x);
            else s -= x * 0.5;
            mag += fabs(x);
        }
        out1(r, "Y", b * 32 + e, s, sum_tol(steps, mag));
    }
}

/* Python's a // b and a % b on floats (CPython's float_divmod, which is
 * the definition: the remainder is exact, takes b's sign, a zero one too,
 * and the quotient is the integer nearest (a - a % b) / b); Python raises
 * on b == 0, where the language gives a / b and NaN. */
static void python_float_divmod(double a, double b, double *quot, double *rem)
{
    if (b == 0) {
        *quot = a / b;
        *rem = NAN;
        return;
    }
    double m = fmod(a, b), div = (a - m) / b;
    if (m != 0 && (b < 0) != (m < 0)) {
        m += b;
        div -= 1.0;
    } else if (m == 0) {
        m = copysign(0.0, b);
    }
    if (div == 0) {
        *quot = copysign(0.0, a / b);
    } else {
        *quot = floor(div);
        if (div - *quot > 0.5) *quot += 1.0;
    }
    *rem = m;
}

/* The operands fmods builds, in f32 as the kernel computes them (each
 * literal rounded to f32 first, as a weak literal is), then Python's
 * results in double: compared bit for bit once rounded to f32. */
static void ref_fmods(Ref *r, int bx, int by)
{
    int64_t bn = meta(r, "BN"), r0 = (bx * 3 + by) * 4;
    for (int64_t i = r0; i < r0 + 4; i++)
        for (int64_t j = 0; j < bn; j++) {
            int64_t idx = i * bn + j, kind = j % 8;
            float x = (float)in2(r, "X", i, j), y = (float)in2(r, "Y", i, j);
            float big = (float)1.0e38, zero = 0.0f, nan = (x - x) / (y - y);
            float sa = idx % 5 == 0 ? x * big * big : idx % 5 == 1 ? nan : idx % 5 == 2 ? x * zero : x;
            float sb = idx % 4 == 0 ? y * big * big : idx % 4 == 1 ? nan : idx % 4 == 2 ? y * zero : y;
            float tenths = idx % 3 == 0 ? (float)0.1 : idx % 3 == 1 ? (float)-0.3 : (float)0.7;
            float a = kind == 0 ? x : kind == 1 ? x * (float)1.0e9 : kind == 2 ? x * (float)1.0e30
                    : kind == 3 ? x * big : kind == 4 ? x * (float)1.0e-39 : kind == 5 ? -(float)(6 - idx % 13)
                    : kind == 6 ? (float)(idx % 17 - 8) : sa;
            float b = kind < 2 ? y : kind == 2 ? y * (float)1.0e-30 : kind == 3 ? y * (float)1.0e-38
                    : kind == 4 ? y * (float)1.0e-43 : kind == 5 ? (float)(idx % 7 - 3) : kind == 6 ? tenths : sb;
            double q, m;
            python_float_divmod(a, b, &q, &m);
            out2(r, "Q", i, j, q, 0);
            out2(r, "R", i, j, m, 0);
        }
}

/* The contract's max and min on floats: a NaN loses to a number, -0.0 is
 * below +0.0 (IEEE 754-2019 maximumNumber / minimumNumber). */
static float max_number(float a, float b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == 0 && b == 0) return signbit(a) ? b : a;
    return a > b ? a : b;
}

static float min_number(float a, float b) { return -max_number(-a, -b); }

/* zeromax's operands as the kernel builds them, element (i, j) of its
 * block's 4 x BN tile. */
typedef struct { float zx, a, b, neg, lone; } ZeroOperands;

static ZeroOperands zero_operands(const Ref *r, int64_t r0, int64_t i, int64_t j)
{
    int64_t bn = meta(r, "BN"), idx = i * bn + j;
    float x = (float)in2(r, "X", i, j), y = (float)in2(r, "Y", i, j);
    float nan = (x - x) / (y - y), zx = x * 0.0f, zy = y * 0.0f;
    ZeroOperands o;
    o.zx = zx;
    o.a = idx % 4 == 0 ? zx : idx % 4 == 1 ? nan : idx % 4 == 2 ? -zx : x;
    o.b = idx % 20 == 17 ? y : idx % 5 == 0 ? zy : idx % 5 == 1 ? -zy : idx % 5 == 2 ? nan : idx % 5 == 3 ? -zx : y;
    o.neg = -fabsf(zx);
    o.lone = j == i % bn ? -o.neg : o.neg;
    (void)r0;
    return o;
}

static void ref_zeromax(Ref *r, int bx, int by)
{
    int64_t bn = meta(r, "BN"), r0 = (bx * 3 + by) * 4;
    for (int64_t i = r0; i < r0 + 4; i++) {
        float rmax = NAN, rneg = NAN, rlone = NAN, rmix = NAN;
        for (int64_t j = 0; j < bn; j++) {
            ZeroOperands o = zero_operands(r, r0, i, j);
            out2(r, "E", i, j, max_number(o.a, o.b), 0);
            out2(r, "F", i, j, min_number(o.a, o.b), 0);
            rmax = max_number(rmax, o.zx);
            rneg = max_number(rneg, o.neg);
            rlone = min_number(rlone, o.lone);
            rmix = max_number(rmix, (i * bn + j) % 3 == 0 ? o.neg : NAN);
        }
        out2(r, "R", i, 0, rmax, 0);
        out2(r, "R", i, 1, rneg, 0);
        out2(r, "R", i, 2, rlone, 0);
        out2(r, "R", i, 3, rmix, 0);
    }
    for (int64_t j = 0; j < bn; j++) {
        float c[4] = {NAN, NAN, NAN, NAN};
        for (int64_t i = r0; i < r0 + 4; i++) {
            ZeroOperands o = zero_operands(r, r0, i, j);
            c[0] = max_number(c[0], o.lone);
            c[1] = min_number(c[1], o.neg);
            c[2] = max_number(c[2], o.b);
            c[3] = min_number(c[3], -o.b);
        }
        for (int64_t i = 0; i < 4; i++) out2(r, "C", r0 + i, j, c[i], 0);
    }
}

/* Python's integer // and % (floor), taken from i64 to i32 by wrapping as
 * every i32 result is; a zero divisor gives 0 and 0 (NumPy's choice, the
 * language's). */
static int32_t wrap_i32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
static int64_t floordiv0(int64_t a, int64_t b) { return b ? floordiv(a, b) : 0; }
static int64_t floormod0(int64_t a, int64_t b) { return b ? floormod(a, b) : 0; }

/* ph.i32 of a float: toward zero, saturating, NaN -> 0. */
static int64_t saturate_i32(double v)
{
    if (isnan(v)) return 0;
    if (v >= 2147483648.0) return INT32_MAX;
    if (v <= -2147483648.0) return INT32_MIN;
    return (int64_t)v;
}

static void ref_idiv0(Ref *r, int bx, int by)
{
    int64_t bn = meta(r, "BN"), r0 = (bx * 3 + by) * 4;
    for (int64_t i = r0; i < r0 + 4; i++)
        for (int64_t j = 0; j < bn; j++) {
            int64_t idx = i * bn + j, kind = j % 4;
            int64_t x = (int64_t)in2(r, "X", i, j), y = (int64_t)in2(r, "Y", i, j);
            float f = (float)in2(r, "F", i, j);
            int64_t a = kind == 1 ? wrap_i32(x * 100000000) : kind == 2 ? INT32_MIN : x;
            int64_t b = idx % 3 == 0 ? 0 : idx % 3 == 1 ? -1 : y;
            out2(r, "Q", i, j, wrap_i32(floordiv0(a, b)), 0);
            out2(r, "R", i, j, wrap_i32(floormod0(a, b)), 0);
            float big = idx % 5 == 0 ? NAN : f * 3.0e9f;   /* an f32 product, as the kernel's */
            int64_t w = kind == 0 ? saturate_i32(big) : kind == 1 ? wrap_i32(llabs(a))
                      : kind == 2 ? wrap_i32(idx % 2 == 0 ? llabs(a) : -a) : wrap_i32(a * a + y);
            out2(r, "W", i, j, (double)w, 0);
        }
}

/* ---- along an axis: argmax/argmin, reshapes, prefix sums ---- */

/* The index of the first NaN of v[0..n), else of its first largest
 * (smallest) element (docs/language.md, "Along an axis"). */
static int64_t arg_best(const double *v, int64_t n, bool max)
{
    int64_t best = 0;
    for (int64_t k = 0; k < n; k++) {
        if (isnan(v[k])) return k;
        if (max ? v[k] > v[best] : v[k] < v[best]) best = k;
    }
    return best;
}

enum { ARG_MAXLEN = 256 };

static void ref_argred(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    /* q, h and i of the kernel, row-major in the tile */
    static double q[ARG_MAXLEN * ARG_MAXLEN], h[ARG_MAXLEN * ARG_MAXLEN], in[ARG_MAXLEN * ARG_MAXLEN];
    cr_assert(bm <= ARG_MAXLEN && bn <= ARG_MAXLEN);
    for (int64_t i = 0; i < bm; i++)
        for (int64_t j = 0; j < bn; j++) {
            int64_t idx = (r0 + i) * 7 + c0 + j;
            float x = (float)in2(r, "X", r0 + i, c0 + j);
            q[i * bn + j] = idx % 23 == 4 && i % 3 == 0 ? NAN : (double)(float)(int32_t)(x * 2.0f);
            h[i * bn + j] = in2(r, "H", r0 + i, c0 + j);
            in[i * bn + j] = (double)floordiv((int64_t)in2(r, "I", r0 + i, c0 + j), 10);
        }
    double line[ARG_MAXLEN];
    const double *tiles[3] = {q, h, in};
    for (int64_t i = 0; i < bm; i++)
        for (int t = 0; t < 3; t++) {
            for (int64_t j = 0; j < bn; j++) line[j] = tiles[t][i * bn + j];
            out2(r, "RA", r0 + i, by * 6 + 2 * t, (double)arg_best(line, bn, true), 0);
            out2(r, "RA", r0 + i, by * 6 + 2 * t + 1, (double)arg_best(line, bn, false), 0);
            if (t == 0) out1(r, "V", (by * 4 + bx) * bm + i, (double)arg_best(line, bn, true), 0);
        }
    double rowsum[ARG_MAXLEN];
    for (int64_t i = 0; i < bm; i++) {
        rowsum[i] = 0;
        for (int64_t j = 0; j < bn; j++) rowsum[i] += in[i * bn + j];
    }
    int64_t best_row = arg_best(rowsum, bm, true);
    for (int64_t j = 0; j < bn; j++) {
        double col[3][ARG_MAXLEN];
        for (int64_t i = 0; i < bm; i++) {
            col[0][i] = q[i * bn + j];
            col[1][i] = h[i * bn + j];
            col[2][i] = in[i * bn + j];
        }
        int64_t row = bx * 6, c = c0 + j;
        out2(r, "CA", row, c, (double)arg_best(col[0], bm, true), 0);
        out2(r, "CA", row + 1, c, (double)arg_best(col[0], bm, false), 0);
        out2(r, "CA", row + 2, c, (double)arg_best(col[1], bm, true), 0);
        for (int64_t i = 0; i < bm; i++) col[1][i] = -col[1][i];
        out2(r, "CA", row + 3, c, (double)arg_best(col[1], bm, false), 0);
        out2(r, "CA", row + 4, c, (double)arg_best(col[2], bm, true), 0);
        out2(r, "CA", row + 5, c, (double)(arg_best(col[2], bm, false) + best_row), 0);
    }
}

static void ref_vecshape(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), b = by * 4 + bx, r0 = b * bm;
    double colmax[32], colmin[32], colsum[32], colmag[32];
    for (int j = 0; j < 32; j++) colmax[j] = -INFINITY, colmin[j] = INFINITY, colsum[j] = 0, colmag[j] = 0;
    for (int64_t i = r0; i < r0 + bm; i++)
        for (int j = 0; j < 32; j++) {
            double x = in2(r, "X", i, j);
            colmax[j] = fmax(colmax[j], x);
            colmin[j] = fmin(colmin[j], x);
            colsum[j] += x;
            colmag[j] += fabs(x);
        }
    for (int64_t i = r0; i < r0 + bm; i++) {
        double v = in1(r, "V", i), sum = 0, mag = 0, mx = -INFINITY, mn = INFINITY;
        for (int j = 0; j < 32; j++) {
            double x = in2(r, "X", i, j), prod = x * v;
            /* the product and the sum round once each */
            out2(r, "T", i, j, prod + colmax[j], U32 * (2 * fabs(prod) + fabs(colmax[j])));
            sum += x;
            mag += fabs(x);
            mx = fmax(mx, x);
            mn = fmin(mn, x);
        }
        out2(r, "T", i, 32, sum, sum_tol(32, mag));
        out2(r, "T", i, 33, v * 2.0, 0);
        out1(r, "U", i, mx + mn, 0);
    }
    for (int j = 0; j < 32; j++) {
        out1(r, "W", b * 32 + j, colsum[j], sum_tol(bm, colmag[j]));
        out1(r, "W", b * 32 + 400 + j, colmin[j], 0);
    }
}

/* Prefix sums in f32 in index order, as the language defines them: the
 * f32 outputs are compared bit for bit. */
static void ref_scan(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    for (int64_t i = r0; i < r0 + bm; i++) {
        float sr = 0, hr = 0;
        int32_t ir = 0;
        for (int64_t j = c0; j < c0 + bn; j++) {
            sr += (float)in2(r, "X", i, j);
            hr += (float)in2(r, "H", i, j);
            ir += (int32_t)in2(r, "I", i, j);
            out2(r, "SR", i, j, sr, 0);
            out2(r, "HR", i, j, hr, 0);
            int32_t ic = 0;
            for (int64_t k = r0; k <= i; k++) ic += (int32_t)in2(r, "I", k, j);
            out2(r, "IC", i, j, (double)(ic + ir), 0);
        }
    }
    for (int64_t j = c0; j < c0 + bn; j++) {
        float sc = 0;
        for (int64_t i = r0; i < r0 + bm; i++) {
            sc += (float)in2(r, "X", i, j);
            out2(r, "SC", i, j, sc, 0);
        }
    }
    float rs = 0;   /* sums of small integers: exact */
    for (int64_t i = r0; i < r0 + bm; i++) {
        for (int64_t j = c0; j < c0 + bn; j++) rs += (float)(int32_t)((float)in2(r, "X", i, j) * 8.0f);
        out2(r, "RS", i, by, rs, 0);
    }
}

static void ref_argdot(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    static double d[64 * 32];
    cr_assert(bm <= 64 && bn <= 32);
    for (int64_t i = 0; i < bm; i++)
        for (int64_t j = 0; j < bn; j++) {
            double sum = 0;   /* products and sums of small integers: exact */
            for (int64_t k = 0; k < 32; k++)
                sum += (double)(int32_t)((float)in2(r, "A", r0 + i, k) * 2.0f) * (double)(int32_t)((float)in2(r, "B", k, c0 + j) * 2.0f);
            d[i * bn + j] = sum;
        }
    double line[64];
    for (int64_t i = 0; i < bm; i++) {
        for (int64_t j = 0; j < bn; j++) line[j] = d[i * bn + j];
        out2(r, "RA", r0 + i, by * 2, (double)arg_best(line, bn, true), 0);
        out2(r, "RA", r0 + i, by * 2 + 1, (double)arg_best(line, bn, false), 0);
    }
    for (int64_t j = 0; j < bn; j++) {
        for (int64_t i = 0; i < bm; i++) line[i] = d[i * bn + j];
        out2(r, "CA", bx * 2, c0 + j, (double)arg_best(line, bm, true), 0);
        out2(r, "CA", bx * 2 + 1, c0 + j, (double)arg_best(line, bm, false), 0);
    }
    for (int64_t i = 0; i < bm; i++)
        for (int64_t j = 0; j < bn; j++) {
            double along_row = 0, down_col = 0;
            for (int64_t k = 0; k <= j; k++) along_row += d[i * bn + k];
            for (int64_t k = 0; k <= i; k++) down_col += d[k * bn + j];
            out2(r, "S", r0 + i, c0 + j, along_row + down_col, 0);
        }
}

typedef struct {
    const char *kernel;
    const char *outputs[6];
    void (*block)(Ref *r, int bx, int by);
} KernelRef;

static const KernelRef refs[] = {
    {"colred", {"S", "Mx", "Mn"}, ref_colred},
    {"widerow", {"S", "Mn"}, ref_widerow},
    {"transp", {"Y"}, ref_transp},
    {"masks", {"Y", "I"}, ref_masks},
    {"bdot", {"C"}, ref_bdot},
    {"ringdot", {"C"}, ref_ringdot},
    {"fdot", {"C"}, ref_fdot},
    {"vec1", {"Z"}, ref_vec1},
    {"ctrl", {"Y"}, ref_ctrl},
    {"fmadot", {"C"}, ref_fmadot},
    {"fmadot_t", {"C"}, ref_fmadot_t},
    {"fmadot_tr", {"C"}, ref_fmadot_tr},
    {"fmods", {"Q", "R"}, ref_fmods},
    {"idiv0", {"Q", "R", "W"}, ref_idiv0},
    {"zeromax", {"E", "F", "R", "C"}, ref_zeromax},
    {"argred", {"RA", "CA", "V"}, ref_argred},
    {"vecshape", {"T", "U", "W"}, ref_vecshape},
    {"scan", {"SR", "SC", "HR", "IC", "RS"}, ref_scan},
    {"argdot", {"RA", "CA", "S"}, ref_argdot},
};

static const KernelRef *find_ref(const char *kernel)
{
    for (size_t i = 0; i < sizeof refs / sizeof *refs; i++)
        if (!strcmp(refs[i].kernel, kernel)) return &refs[i];
    return NULL;
}

static bool is_output(const KernelRef *k, const char *name)
{
    for (int i = 0; i < 6 && k->outputs[i]; i++)
        if (!strcmp(k->outputs[i], name)) return true;
    return false;
}

/* ---- one config: run both, compare ---- */

typedef struct { size_t written, unwritten, bad; double worst; } Tally;

/* An f32 output of a kernel compared bit for bit (opsharness.h): the
 * reference rounded to f32 has got's bits (a zero's sign counts), or both
 * are NaN. */
static bool same_f32(const void *got, size_t e, double want)
{
    uint32_t g, w;
    float wf = (float)want;
    memcpy(&g, (const char *)got + 4 * e, 4);
    memcpy(&w, &wf, 4);
    return isnan(want) ? isnan(ph_bits_f32(g)) : g == w;
}

static void compare_output(const IrFunc *f, int p, const void *got, const double *want,
                           const double *tol, size_t n, bool bitwise, Tally *t)
{
    DType dt = f->params[p].dt;
    for (size_t e = 0; e < n; e++) {
        bool ok;
        double g = as_double(dt, got, e);
        if (tol[e] < 0) {
            t->unwritten++;
            ok = is_poison(dt, got, e);
        } else {
            t->written++;
            double err = fabs(g - want[e]);
            ok = bitwise ? same_f32(got, e, want[e]) : err <= tol[e];   /* NaN fails unless bitwise */
            if (ok && tol[e] > 0 && err / tol[e] > t->worst) t->worst = err / tol[e];
        }
        if (!ok && t->bad++ < 5)
            cr_log_error("%s: %s[%zu]: interpreter %.9g, reference %s%.9g (tolerance %.3g)", f->name,
                         f->params[p].name, e, g, tol[e] < 0 ? "unwritten, poison expected; " : "",
                         tol[e] < 0 ? 0.0 : want[e], tol[e] < 0 ? 0.0 : tol[e]);
    }
}

/* Runs config f in the interpreter and in its reference; returns the
 * elements that differ, and adds to *t what was compared. */
static size_t check_config(const IrFunc *f, Tally *t)
{
    const KernelRef *k = find_ref(f->kernel);
    cr_assert_not_null(k, "kernel %s of " OPS " has no reference here", f->kernel);
    cr_assert_leq(f->nparams, MAXP);
    IrArg args[MAXP];
    void *bufs[MAXP], *inputs[MAXP] = {0};
    size_t count[MAXP];
    host_args(f, args, bufs, count);
    Ref r = {.f = f, .args = args};
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *q = &f->params[p];
        if (!q->is_tensor) continue;
        size_t bytes = count[p] * elem_bytes(q->dt);
        if (is_output(k, q->name)) {
            poison(q->dt, bufs[p], count[p]);
            r.want[p] = malloc(count[p] * sizeof(double));
            r.tol[p] = malloc(count[p] * sizeof(double));
            for (size_t e = 0; e < count[p]; e++) r.want[p][e] = NAN, r.tol[p][e] = -1;
        } else {
            inputs[p] = malloc(bytes);
            memcpy(inputs[p], bufs[p], bytes);
        }
    }
    for (int bx = 0; bx < GRID_X; bx++)
        for (int by = 0; by < GRID_Y; by++) k->block(&r, bx, by);

    char err[512];
    int grid[3] = {GRID_X, GRID_Y, 1};
    cr_assert_eq(ir_interp(f, args, f->nparams, grid, err, sizeof err), 0, "%s: %s", f->name, err);
    size_t before = t->bad;
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *q = &f->params[p];
        if (r.want[p]) compare_output(f, p, bufs[p], r.want[p], r.tol[p], count[p], compared_bitwise(f) && q->dt == DT_F32, t);
        else if (inputs[p] && memcmp(inputs[p], bufs[p], count[p] * elem_bytes(q->dt))) {
            cr_log_error("%s: input %s was written", f->name, q->name);
            t->bad++;
        }
        free(bufs[p]);
        free(inputs[p]);
        free(r.want[p]);
        free(r.tol[p]);
    }
    return t->bad - before;
}

Test(ops_ref, every_config_matches_the_reference, .timeout = 120)
{
    IrModule *m = driver_compile_file(OPS, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_gt(m->nfuncs, 20);
    Tally t = {0};
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        size_t bad = check_config(m->funcs[i], &t);
        if (bad) cr_log_error("%s: %zu elements differ from the reference", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_log_info("%zu elements written, %zu left poisoned, worst error %.2f of its tolerance",
                t.written, t.unwritten, t.worst);
    /* the references write and skip elements of every config, so both checks bite */
    cr_expect_gt(t.written, 0);
    cr_expect_gt(t.unwritten, 0);
    cr_expect_eq(failed, 0, "%d of %d configs differ from the reference", failed, m->nfuncs);
    ir_module_free(m);
}

/* Every kernel of the file has a reference, and every reference a kernel. */
Test(ops_ref, every_kernel_has_a_reference)
{
    IrModule *m = driver_compile_file(OPS, NULL, stderr);
    cr_assert_not_null(m);
    for (int i = 0; i < m->nfuncs; i++)
        cr_expect_not_null(find_ref(m->funcs[i]->kernel), "%s has no reference", m->funcs[i]->kernel);
    for (size_t j = 0; j < sizeof refs / sizeof *refs; j++) {
        bool found = false;
        for (int i = 0; i < m->nfuncs && !found; i++) found = !strcmp(m->funcs[i]->kernel, refs[j].kernel);
        cr_expect(found, "the reference for %s has no kernel in " OPS, refs[j].kernel);
    }
    ir_module_free(m);
}
