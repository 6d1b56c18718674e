/* test_fp8.c: half.h's fp8 conversions against their definition, by brute
 * force. Every one of the 256 codes of each format decodes to the value
 * OCP's formats give it; f32 values (every 1021st bit pattern, every code's
 * value and the midpoints between neighbours, each a little above and
 * below) encode to the nearest code, ties to the even one, past the largest
 * finite value saturating to it (infinities too), NaN to 0x7f. The
 * generated code's conversions are held to these by test_scalarops and the
 * CPU executor (tests/gpu/types.ph). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "base/half.h"

typedef struct {
    const char *name;
    int man, bias;
    bool has_inf;
    double max;
    uint8_t (*enc)(float);
    float (*dec)(uint8_t);
} Format;

static const Format e4m3 = {"e4m3", 3, 7, false, 448, ph_f32_to_e4m3, ph_e4m3_to_f32};
static const Format e5m2 = {"e5m2", 2, 15, true, 57344, ph_f32_to_e5m2, ph_e5m2_to_f32};

/* A code's value from its fields, as the format's definition writes it. */
static double value(const Format *f, int code)
{
    int s = code >> 7, e = (code >> f->man) & ((1 << (7 - f->man)) - 1), m = code & ((1 << f->man) - 1);
    int emax = (1 << (7 - f->man)) - 1;
    if (f->has_inf && e == emax) return m ? NAN : s ? -INFINITY : INFINITY;
    if (!f->has_inf && e == emax && m == (1 << f->man) - 1) return NAN;
    double v = e ? ldexp(1.0 + m / (double)(1 << f->man), e - f->bias) : ldexp(m / (double)(1 << f->man), 1 - f->bias);
    return s ? -v : v;
}

/* The code x rounds to: the nearest finite value, ties to the even code,
 * beyond the largest one that value; NaN 0x7f. */
static uint8_t nearest(const Format *f, double x)
{
    if (isnan(x)) return 0x7f;
    int sign = signbit(x) ? 0x80 : 0;
    double a = fabs(x) > f->max ? f->max : fabs(x);   /* beyond it every code's distance rounds alike */
    int best = 0;
    for (int c = 1; c < 128; c++) {
        double v = value(f, c);
        if (isnan(v) || isinf(v)) continue;
        double d = fabs(v - a), db = fabs(value(f, best) - a);
        if (d < db || (d == db && !(c & 1))) best = c;
    }
    return (uint8_t)(sign | best);
}

static void check_decode(const Format *f)
{
    for (int c = 0; c < 256; c++) {
        double want = value(f, c);
        float got = f->dec((uint8_t)c);
        if (isnan(want)) {
            cr_assert(isnan(got), "%s 0x%02x: %g, not NaN", f->name, c, got);
            continue;
        }
        cr_assert(got == want && !signbit(got) == !signbit(want), "%s 0x%02x: %g, not %g", f->name, c, got, want);
    }
}

static void check_encode(const Format *f, float x)
{
    uint8_t want = nearest(f, x), got = f->enc(x);
    cr_assert_eq(got, want, "%s of %a: 0x%02x, not 0x%02x", f->name, x, got, want);
}

static void check_encodes(const Format *f)
{
    for (uint64_t u = 0; u < 0x100000000ull; u += 1021) check_encode(f, ph_bits_f32((uint32_t)u));
    for (int c = 0; c < 128; c++) {
        double v = value(f, c), w = value(f, c + 1);
        if (isnan(v) || isinf(v)) continue;
        float pts[3] = {(float)v, (float)((v + (isnan(w) || isinf(w) ? v + ldexp(1, (int)log2(v) - f->man) : w)) / 2), 0};
        for (int i = 0; i < 2; i++)
            for (int s = -1; s <= 1; s += 2) {
                check_encode(f, s * pts[i]);
                check_encode(f, s * nextafterf(pts[i], INFINITY));
                check_encode(f, s * nextafterf(pts[i], 0));
            }
    }
    check_encode(f, INFINITY);
    check_encode(f, -INFINITY);
    check_encode(f, NAN);
    check_encode(f, (float)f->max * 1.0625f);   /* the midpoint past the largest value */
}

Test(fp8, e4m3_decodes_every_code) { check_decode(&e4m3); }
Test(fp8, e5m2_decodes_every_code) { check_decode(&e5m2); }
Test(fp8, e4m3_encodes_to_nearest_even_saturating, .timeout = 120) { check_encodes(&e4m3); }
Test(fp8, e5m2_encodes_to_nearest_even_saturating, .timeout = 120) { check_encodes(&e5m2); }

Test(fp8, documented_edges)
{
    cr_assert_eq(ph_f32_to_e4m3(464.0f), 0x7e);            /* a tie: to 448, the even code */
    cr_assert_eq(ph_f32_to_e4m3(nextafterf(464.0f, 1e9f)), 0x7e);   /* saturates */
    cr_assert_eq(ph_f32_to_e4m3(-INFINITY), 0xfe);
    cr_assert_eq(ph_f32_to_e5m2(INFINITY), 0x7b);          /* no infinity from a conversion */
    cr_assert_eq(ph_f32_to_e5m2(-NAN), 0x7f);
    cr_assert_eq(ph_f32_to_e4m3(ldexpf(1, -10)), 0x00);    /* half the smallest subnormal: to even, 0 */
    cr_assert_eq(ph_f32_to_e4m3(-ldexpf(1.5f, -10)), 0x81);
    cr_assert(isinf(ph_e5m2_to_f32(0xfc)) && ph_e5m2_to_f32(0xfc) < 0);
    cr_assert(isnan(ph_e4m3_to_f32(0xff)) && isnan(ph_e5m2_to_f32(0x7d)));
}
