/* test_lang_ref.c: the interpreter against plain C for the kernels of
 * tests/gpu/masked.ph (masked loads and stores), as
 * test_ops_ref.c does for tests/gpu/ops.ph and with its harness
 * (refharness.h): the same inputs as the GPU and CPU-executor checks, a
 * fixed 4 x 3 grid, outputs poisoned, so an element a masked store must
 * not write has to come back poisoned. Each reference is written from
 * docs/language.md alone: a masked-off element of a load is `other`, an
 * element past the tensor's edge under a true mask is 0. */
#include "refharness.h"

#define MASKED "tests/gpu/masked.ph"

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

static const KernelRef masked_refs[] = {
    {"mload", {"Y", "Z", "V"}, ref_mload},
};

Test(lang_ref, every_masked_config_matches_the_reference, .timeout = 120)
{
    every_config_matches_its_reference(MASKED, masked_refs, sizeof masked_refs / sizeof *masked_refs, 2);
}

Test(lang_ref, every_masked_kernel_has_a_reference)
{
    every_kernel_has_a_reference(MASKED, masked_refs, sizeof masked_refs / sizeof *masked_refs);
}
