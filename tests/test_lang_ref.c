/* test_lang_ref.c: the interpreter against plain C for the kernels of
 * tests/gpu/masked.ph (masked loads and stores, a ragged softmax) and
 * tests/gpu/flow.ph (ph.static_range, @ph.func helpers, RoPE), as
 * test_ops_ref.c does for tests/gpu/ops.ph and with its harness
 * (refharness.h): the same inputs as the GPU and CPU-executor checks, a
 * fixed 4 x 3 grid, outputs poisoned, so an element a masked store must
 * not write has to come back poisoned. Each reference is written from
 * docs/language.md alone: a masked-off element of a load is `other`, an
 * element past the tensor's edge under a true mask is 0. */
#include "refharness.h"

#define MASKED "tests/gpu/masked.ph"
#define FLOW "tests/gpu/flow.ph"

/* ---- tests/gpu/masked.ph ---- */

static void ref_mload(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn, n = scalar(r, "n");
    static double x[16][64];
    static int32_t c[64];
    cr_assert(bm <= 16 && bn <= 64);
    for (int64_t j = 0; j < bn; j++) c[j] = j % 3 != 1 ? (int32_t)in1(r, "C", c0 + j) : (int32_t)j;
    for (int64_t i = 0; i < bm; i++)
        for (int64_t j = 0; j < bn; j++) {
            x[i][j] = r0 + i < c0 + j + n ? in2(r, "X", r0 + i, c0 + j) : -INFINITY;
            double h = x[i][j] > 0.5 ? in2(r, "H", r0 + i, c0 + j) : (double)ph_f16_to_f32(ph_f32_to_f16((float)c[j]));
            if (c[j] > 0) out2(r, "Y", r0 + i, c0 + j, fmax(x[i][j], -3.0) + h, 0);
        }
    for (int64_t i = 0; i < bm; i++) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < bn; j++) mx = fmax(mx, x[i][j]);
        for (int64_t j = 0; mx < 1.5 && j < bn; j++) out2(r, "Z", r0 + i, c0 + j, fmax(x[i][j], -8.0) * 2.0, 0);
    }
    if (bx != 0 || n <= 20) return;
    for (int64_t j = 0; j < bn; j++) {
        int64_t sum = c[j];   /* small integers: exact */
        for (int64_t i = 0; i < bm; i++) sum += (int32_t)(float)(fmax(x[i][j], -3.0) * 4.0);
        out1(r, "V", c0 + j, (double)sum, 0);
    }
}

/* Row i of X softmaxed over its first Lens[i] elements, which lie in the
 * first `cover` columns the kernel reads (past X's edge they read 0); the
 * rest of the row is not written. tol: the relative error of exp's
 * argument and result (inputs in [-2, 2]), of each sum's terms, and of the
 * online rescaling (rescale, its exps and products, per block of columns). */
static void ragged_row(Ref *r, int64_t i, int64_t cover, double rescale)
{
    int64_t len = (int64_t)in1(r, "Lens", i);
    if (len > cover) len = cover;
    if (len <= 0) return;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < len; j++) mx = fmax(mx, in2(r, "X", i, j));
    for (int64_t j = 0; j < len; j++) sum += exp(in2(r, "X", i, j) - mx);
    for (int64_t j = 0; j < len; j++) {
        double v = exp(in2(r, "X", i, j) - mx) / sum;
        out2(r, "Y", i, j, v, v * (12 + rescale + (double)len) * U32);
    }
}

static void ragged_rows(Ref *r, int bx, int by, int64_t cover, double rescale)
{
    int64_t bm = meta(r, "BM"), r0 = bx * bm + by * GRID_X * bm;
    for (int64_t i = r0; i < r0 + bm; i++) ragged_row(r, i, cover, rescale);
}

static void ref_ragged_softmax(Ref *r, int bx, int by) { ragged_rows(r, bx, by, meta(r, "BN"), 0); }

static void ref_ragged_softmax_loop(Ref *r, int bx, int by)
{
    int64_t bn = meta(r, "BN"), n = r->args[param(r, "X")].dims[1], blocks = (n + bn - 1) / bn;
    ragged_rows(r, bx, by, blocks * bn, 12.0 * (double)blocks);
}

static const KernelRef masked_refs[] = {
    {"mload", {"Y", "Z", "V"}, ref_mload},
    {"ragged_softmax", {"Y"}, ref_ragged_softmax},
    {"ragged_softmax_loop", {"Y"}, ref_ragged_softmax_loop},
};

Test(lang_ref, every_masked_config_matches_the_reference, .timeout = 120)
{
    every_config_matches_its_reference(MASKED, masked_refs, sizeof masked_refs / sizeof *masked_refs, 6);
}

Test(lang_ref, every_masked_kernel_has_a_reference)
{
    every_kernel_has_a_reference(MASKED, masked_refs, sizeof masked_refs / sizeof *masked_refs);
}

/* ---- tests/gpu/flow.ph ---- */

static void ref_unrolled(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn;
    for (int64_t i = r0; i < r0 + bm; i++) {
        for (int64_t j = c0; j < c0 + bn; j++) {
            double acc = 0, mag = 0;
            for (int u = 0; u < 4; u++) {
                acc += in2(r, "X", i, j + u) * (u + 1);
                mag += fabs(in2(r, "X", i, j + u)) * (u + 1);
            }
            out2(r, "Y", i, j, acc, sum_tol(8, mag));
        }
        for (int w = 3; w > 0; w -= 2) {
            double sum = 0, mag = 0;
            for (int64_t j = c0; j < c0 + w; j++) sum += in2(r, "X", i, j), mag += fabs(in2(r, "X", i, j));
            out2(r, "R", i, by * 2 + w / 2, sum, sum_tol(w, mag));
        }
    }
}

static double clamp(double x, double lo, double hi) { return fmin(fmax(x, lo), hi); }

static void ref_helpers(Ref *r, int bx, int by)
{
    int64_t bm = meta(r, "BM"), bn = meta(r, "BN"), r0 = bx * bm, c0 = by * bn, n = scalar(r, "n");
    for (int64_t i = r0; i < r0 + bm; i++)
        for (int64_t j = c0; j < c0 + bn; j++) {
            double s3 = 0, s2 = 0;
            for (int u = 0; u < 3; u++) s3 += clamp(in2(r, "X", i, j + u), -1, 1);
            for (int u = 0; u < 2; u++) s2 += clamp(in2(r, "X", i, j + u), -1, 1);
            double t = clamp(s2 * (double)n, -2, (double)(n / 10));
            out2(r, "Y", i, j, s3 + t, 8 * U32 * (3 + fabs(s2 * (double)n)));
        }
}

/* pair p is (X[p, 0], X[p, 1]), rotated by the angle whose cosine and sine are Cos[p], Sin[p] */
static void ref_rope(Ref *r, int bx, int by)
{
    int64_t bp = meta(r, "BP"), unroll = meta(r, "UNROLL");
    for (int64_t u = 0; u < unroll; u++) {
        int64_t p0 = ((by * GRID_X + bx) * unroll + u) * bp;
        for (int64_t p = p0; p < p0 + bp; p++) {
            double e = in2(r, "X", p, 0), o = in2(r, "X", p, 1), c = in1(r, "Cos", p), s = in1(r, "Sin", p);
            double tol = 3 * U32 * (fabs(e * c) + fabs(o * s) + fabs(e * s) + fabs(o * c));
            out2(r, "Y", p, 0, e * c - o * s, tol);
            out2(r, "Y", p, 1, e * s + o * c, tol);
        }
    }
}

static const KernelRef flow_refs[] = {
    {"unrolled", {"Y", "R"}, ref_unrolled},
    {"helpers", {"Y"}, ref_helpers},
    {"rope", {"Y"}, ref_rope},
};

Test(lang_ref, every_flow_config_matches_the_reference, .timeout = 120)
{
    every_config_matches_its_reference(FLOW, flow_refs, sizeof flow_refs / sizeof *flow_refs, 7);
}

Test(lang_ref, every_flow_kernel_has_a_reference)
{
    every_kernel_has_a_reference(FLOW, flow_refs, sizeof flow_refs / sizeof *flow_refs);
}
