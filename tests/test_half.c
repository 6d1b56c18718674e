/* test_half.c: compiler/base/half.h against references built from the formats'
 * definitions. The example checks use half.h for both their inputs and
 * their expected values, so an error in it cancels out there; here every
 * f16 and bf16 bit pattern is decoded and compared with ldexp of its sign,
 * exponent and mantissa fields, and the encoders are checked at every
 * halfway point between neighbours, at the overflow and underflow edges,
 * on NaN, and against a nearest-value search over a sweep of f32 patterns. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "base/half.h"

/* The binary16/bfloat16 layouts: mantissa bits and exponent bias. */
typedef struct {
    const char *name;
    int man_bits, exp_bits, bias;
    float (*decode)(uint16_t);
    uint16_t (*encode)(float);
} Format;

static const Format f16 = {"f16", 10, 5, 15, ph_f16_to_f32, ph_f32_to_f16};
static const Format bf16 = {"bf16", 7, 8, 127, ph_bf16_to_f32, ph_f32_to_bf16};

static unsigned exp_field(const Format *fm, uint16_t h) { return (h >> fm->man_bits) & ((1u << fm->exp_bits) - 1); }
static unsigned man_field(const Format *fm, uint16_t h) { return h & ((1u << fm->man_bits) - 1); }
static unsigned exp_max(const Format *fm) { return (1u << fm->exp_bits) - 1; }
static bool is_nan_bits(const Format *fm, uint16_t h) { return exp_field(fm, h) == exp_max(fm) && man_field(fm, h); }

/* The value a bit pattern stands for, from the definition of the format. */
static double reference(const Format *fm, uint16_t h)
{
    double sign = h & 0x8000 ? -1.0 : 1.0;
    unsigned e = exp_field(fm, h), m = man_field(fm, h);
    if (e == exp_max(fm)) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * ldexp(m, 1 - fm->bias - fm->man_bits);           /* subnormal or zero */
    return sign * ldexp(m + (1u << fm->man_bits), (int)e - fm->bias - fm->man_bits);
}

/* The largest finite magnitude's pattern; the next pattern up is infinity. */
static uint16_t max_finite(const Format *fm) { return (uint16_t)((exp_max(fm) << fm->man_bits) - 1); }

/* What the pattern after h would stand for were the exponent unbounded:
 * 2^(emax+1) past the largest finite value, so halfway points there work. */
static double next_up(const Format *fm, uint16_t h)
{
    if (h == max_finite(fm)) return ldexp(1.0, (int)exp_max(fm) - fm->bias);
    return reference(fm, (uint16_t)(h + 1));
}

/* Round to nearest, ties to even, by searching the sorted positive
 * patterns: the independent encoder the sweep compares against. */
static uint16_t reference_encode(const Format *fm, float x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return 0xffff;       /* stands for any NaN; compared with is_nan_bits */
    double a = fabs((double)x);
    uint16_t inf = (uint16_t)(exp_max(fm) << fm->man_bits);
    double top = next_up(fm, max_finite(fm)), last = reference(fm, max_finite(fm));
    if (a >= (last + top) / 2) return sign | inf;   /* a tie there goes to the even pattern: infinity */
    uint16_t lo = 0, hi = max_finite(fm);            /* largest h with value(h) <= a */
    while (lo < hi) {
        uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if (reference(fm, mid) <= a) lo = mid;
        else hi = mid - 1;
    }
    double below = reference(fm, lo), above = next_up(fm, lo);
    if (a - below < above - a || (a - below == above - a && !(lo & 1))) return sign | lo;
    return sign | (uint16_t)(lo + 1);
}

static void check_decode_all(const Format *fm)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        double want = reference(fm, (uint16_t)h);
        float got = fm->decode((uint16_t)h);
        if (isnan(want)) {
            cr_assert(isnan(got), "%s 0x%04x is a NaN, decoded as %g", fm->name, h, got);
            continue;
        }
        cr_assert((double)got == want && !signbit(got) == !signbit(want),
                  "%s 0x%04x: decoded %a, the format defines %a", fm->name, h, (double)got, want);
    }
}

Test(half, every_f16_pattern_decodes_to_its_defined_value) { check_decode_all(&f16); }
Test(half, every_bf16_pattern_decodes_to_its_defined_value) { check_decode_all(&bf16); }

Test(half, decode_spot_values)
{
    /* a few values written out, so the reference itself is checked too */
    cr_assert_eq(ph_f16_to_f32(0x0001), 0x1p-24f);
    cr_assert_eq(ph_f16_to_f32(0x03ff), 0x3ffp-24f);
    cr_assert_eq(ph_f16_to_f32(0x0400), 0x1p-14f);
    cr_assert_eq(ph_f16_to_f32(0x3c00), 1.0f);
    cr_assert_eq(ph_f16_to_f32(0x7bff), 65504.0f);
    cr_assert_eq(ph_f16_to_f32(0xc000), -2.0f);
    cr_assert(signbit(ph_f16_to_f32(0x8000)) && ph_f16_to_f32(0x8000) == 0);
    cr_assert_eq(ph_bf16_to_f32(0x0001), 0x1p-133f);
    cr_assert_eq(ph_bf16_to_f32(0x3f80), 1.0f);
    cr_assert_eq(ph_bf16_to_f32(0x7f7f), 0x1.fep127f);
    cr_assert(isinf(ph_bf16_to_f32(0xff80)) && ph_bf16_to_f32(0xff80) < 0);
}

static void check_round_trip_all(const Format *fm)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        uint16_t back = fm->encode(fm->decode((uint16_t)h));
        if (is_nan_bits(fm, (uint16_t)h)) {
            cr_assert(is_nan_bits(fm, back), "%s NaN 0x%04x came back as 0x%04x", fm->name, h, back);
            cr_assert_eq(back & 0x8000, h & 0x8000, "%s NaN 0x%04x lost its sign", fm->name, h);
        } else {
            cr_assert_eq(back, h, "%s 0x%04x came back as 0x%04x", fm->name, h, back);
        }
    }
}

Test(half, every_f16_value_round_trips_exactly) { check_round_trip_all(&f16); }
Test(half, every_bf16_value_round_trips_exactly) { check_round_trip_all(&bf16); }

/* Between each pattern and the next (of either sign), the midpoint goes to
 * the even one and the f32 values next to it to the nearer one. Midpoints
 * need one bit more than the format, so they are exact in f32. */
static void check_halfway_points(const Format *fm)
{
    for (uint16_t h = 0; h <= max_finite(fm); h++) {
        for (int neg = 0; neg <= 1; neg++) {
            uint16_t s = neg ? 0x8000 : 0;
            double lo = reference(fm, h), hi = next_up(fm, h);
            float mid = (float)((lo + hi) / 2);
            cr_assert_eq((double)mid, (lo + hi) / 2, "%s 0x%04x: the midpoint is not exact", fm->name, h);
            float x = neg ? -mid : mid;
            uint16_t even = h & 1 ? (uint16_t)(h + 1) : h;
            cr_assert_eq(fm->encode(x), s | even, "%s: %a, halfway above 0x%04x, gave 0x%04x", fm->name, (double)x, h, fm->encode(x));
            float under = nextafterf(x, 0), over = nextafterf(x, neg ? -INFINITY : INFINITY);
            cr_assert_eq(fm->encode(under), s | h, "%s: %a, just under halfway above 0x%04x", fm->name, (double)under, h);
            cr_assert_eq(fm->encode(over), s | (uint16_t)(h + 1), "%s: %a, just over halfway above 0x%04x", fm->name, (double)over, h);
        }
    }
}

Test(half, f16_rounds_halfway_points_to_even) { check_halfway_points(&f16); }
Test(half, bf16_rounds_halfway_points_to_even) { check_halfway_points(&bf16); }

Test(half, f16_overflow_underflow_and_nan)
{
    cr_assert_eq(ph_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(ph_f32_to_f16(65519.996f), 0x7bff, "below 65520 rounds down to the largest");
    cr_assert_eq(ph_f32_to_f16(65520.0f), 0x7c00, "65520 is halfway to 2^16 and rounds to even: inf");
    cr_assert_eq(ph_f32_to_f16(-1e6f), 0xfc00);
    cr_assert_eq(ph_f32_to_f16(INFINITY), 0x7c00);
    cr_assert_eq(ph_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(ph_f32_to_f16(0x1p-24f), 0x0001, "the smallest subnormal");
    cr_assert_eq(ph_f32_to_f16(0x1.8p-24f), 0x0002, "1.5 units is halfway: to even, 2");
    cr_assert_eq(ph_f32_to_f16(0x1p-25f), 0x0000, "half the smallest subnormal: to even, 0");
    cr_assert_eq(ph_f32_to_f16(0x1.000002p-25f), 0x0001);
    cr_assert_eq(ph_f32_to_f16(-0x1p-26f), 0x8000, "underflow keeps the sign");
    cr_assert_eq(ph_f32_to_f16(0x1p-149f), 0x0000, "an f32 subnormal");
    cr_assert_eq(ph_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(ph_f32_to_f16(0x1.ffcp-15f), 0x0400, "halfway from the largest subnormal to the smallest normal: to even, the normal");
    cr_assert(is_nan_bits(&f16, ph_f32_to_f16(NAN)));
    cr_assert(is_nan_bits(&f16, ph_f32_to_f16(-NAN)) && (ph_f32_to_f16(-NAN) & 0x8000));
    cr_assert(is_nan_bits(&f16, ph_f32_to_f16(ph_bits_f32(0x7f800001u))), "a NaN whose payload is below f16's mantissa stays NaN");
}

Test(half, bf16_overflow_underflow_and_nan)
{
    cr_assert_eq(ph_f32_to_bf16(0x1.fep127f), 0x7f7f);
    cr_assert_eq(ph_f32_to_bf16(0x1.ffp127f), 0x7f80, "halfway to 2^128 rounds to even: inf");
    cr_assert_eq(ph_f32_to_bf16(0x1.fefffep127f), 0x7f7f);
    cr_assert_eq(ph_f32_to_bf16(-INFINITY), 0xff80);
    cr_assert_eq(ph_f32_to_bf16(0x1p-133f), 0x0001, "the smallest subnormal");
    cr_assert_eq(ph_f32_to_bf16(0x1p-134f), 0x0000, "halfway: to even, 0");
    cr_assert_eq(ph_f32_to_bf16(-0x1p-140f), 0x8000);
    cr_assert(is_nan_bits(&bf16, ph_f32_to_bf16(NAN)));
    cr_assert(is_nan_bits(&bf16, ph_f32_to_bf16(ph_bits_f32(0xff800001u))) && (ph_f32_to_bf16(ph_bits_f32(0xff800001u)) & 0x8000),
              "a NaN whose payload is all in the low bits stays a NaN, with its sign");
}

/* Every 4093rd f32 pattern (a prime stride, so every exponent and many
 * mantissas are hit), encoded and compared with the nearest-value search. */
static void check_sweep(const Format *fm)
{
    for (uint64_t u = 0; u <= 0xffffffffu; u += 4093) {
        float x = ph_bits_f32((uint32_t)u);
        uint16_t got = fm->encode(x), want = reference_encode(fm, x);
        if (isnan(x)) cr_assert(is_nan_bits(fm, got), "%s: NaN 0x%08x encoded as 0x%04x", fm->name, (unsigned)u, got);
        else cr_assert_eq(got, want, "%s: %a (0x%08x) encoded as 0x%04x, nearest is 0x%04x", fm->name, (double)x, (unsigned)u, got, want);
    }
}

Test(half, f16_encoding_matches_a_nearest_value_search) { check_sweep(&f16); }
Test(half, bf16_encoding_matches_a_nearest_value_search) { check_sweep(&bf16); }
