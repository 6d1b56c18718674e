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
#include "base/half.h"
#include "refharness.h"

#define OPS "tests/gpu/ops.ph"

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

/* P = f16(S / 2) (exact in f32, rounded once to f16) times V, over the K
 * tiles of BK from 0 (the last reads zeros past K: no terms). */
static void ref_pdot(Ref *r, int bx, int by)
{
    int64_t K = r->args[param(r, "S")].dims[1], r0 = bx * 64, c0 = by * 64;
    for (int64_t i = r0; i < r0 + 64; i++)
        for (int64_t j = c0; j < c0 + 64; j++) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double t = ph_round_f16((float)in2(r, "S", i, k) * 0.5f) * in2(r, "V", k, j);
                sum += t;
                mag += fabs(t);
            }
            out2(r, "C", i, j, sum, sum_tol(K + 1, mag));
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

static const KernelRef refs[] = {
    {"colred", {"S", "Mx", "Mn"}, ref_colred},
    {"widerow", {"S", "Mn"}, ref_widerow},
    {"transp", {"Y"}, ref_transp},
    {"masks", {"Y", "I"}, ref_masks},
    {"bdot", {"C"}, ref_bdot},
    {"pdot", {"C"}, ref_pdot},
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

Test(ops_ref, every_config_matches_the_reference, .timeout = 120)
{
    every_config_matches_its_reference(OPS, refs, sizeof refs / sizeof *refs, 21);
}

Test(ops_ref, every_kernel_has_a_reference) { every_kernel_has_a_reference(OPS, refs, sizeof refs / sizeof *refs); }
