/* half.h: f16, bf16 and the two fp8 formats as bit patterns, converted to
 * and from f32 with round-to-nearest-even, exactly as the GPU's cvt.rn
 * (cvt.rn.satfinite for fp8) does. Shared by the interpreter, the host
 * programs and the tests; compiler/codegen/cg_fp8.c builds the fp8 ones
 * in LLVM IR step by step as they are written here. */
#ifndef PHC_HALF_H
#define PHC_HALF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ph_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float ph_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float ph_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return ph_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* subnormal (or zero): man * 2^-24 is exact in f32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return ph_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t ph_f32_to_f16(float f)
{
    uint32_t u = ph_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)                       /* inf or NaN */
        return sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0);
    if (a >= 0x477ff000u) return sign | 0x7c00; /* rounds past 65504: inf */
    if (a < 0x38800000u) {                      /* below 2^-14: subnormal f16 */
        /* scale so the f16 subnormal unit is 1, and let f32 addition round */
        float v = ph_bits_f32(a) * 16777216.0f; /* exact: times 2^24 */
        /* rint in the default mode rounds to nearest even */
        float r = __builtin_rintf(v);
        return sign | (uint16_t)r;
    }
    uint32_t exp = (a >> 23) - 112, man = a & 0x7fffff;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

static inline float ph_bf16_to_f32(uint16_t b) { return ph_bits_f32((uint32_t)b << 16); }

static inline uint16_t ph_f32_to_bf16(float f)
{
    uint32_t u = ph_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* fp8, OCP's formats as the tensor cores take them: e4m3 (bias 7, three
 * mantissa bits, no infinities, NaN S.1111.111, largest 448) and e5m2
 * (bias 15, two mantissa bits, IEEE-like: infinities S.11111.00, NaN
 * S.11111.xx, largest 57344). From f32, as cvt.rn.satfinite.{e4m3x2,
 * e5m2x2}.f32: round to nearest even with the exponent unbounded, then
 * saturate: anything past the largest finite value (an infinity too)
 * gives it, with its sign; a NaN gives 0x7f; a value below half the
 * smallest subnormal gives a zero of its sign. So e5m2 never gets an
 * infinity from a conversion. To f32: exact; a NaN gives the f32 NaN
 * 0x7fffffff (sign and payload are not kept), an e5m2 infinity the f32
 * infinity. */
typedef struct {
    int man, bias;         /* mantissa bits, exponent bias */
    bool has_inf;          /* e5m2: S.11111.00 is an infinity; e4m3: only S.1111.111 is special (NaN) */
    uint32_t sat_above;    /* f32 magnitudes (bits) above this saturate: those at most round to maxnorm */
    uint8_t maxnorm;       /* the largest finite code */
} PhF8Format;

/* 464 rounds to 448 (its even neighbour), anything above past it; 61440
 * rounds (to even) to 65536, past 57344 */
static const PhF8Format ph_e4m3 = {3, 7, false, 0x43e80000u, 0x7e};
static const PhF8Format ph_e5m2 = {2, 15, true, 0x476fffffu, 0x7b};

static inline uint8_t ph_f32_to_f8(float f, PhF8Format fm)
{
    uint32_t u = ph_f32_bits(f), a = u & 0x7fffffffu;
    uint8_t sign = (uint8_t)((u >> 24) & 0x80);
    if (a > 0x7f800000u) return 0x7f;
    if (a > fm.sat_above) return sign | fm.maxnorm;
    if (a < (uint32_t)(128 - fm.bias) << 23) {   /* below the smallest normal: units of the smallest subnormal */
        float v = ph_bits_f32(a) * ph_bits_f32((uint32_t)(127 + fm.bias - 1 + fm.man) << 23);   /* exact */
        return sign | (uint8_t)__builtin_rintf(v);   /* 2^man, the smallest normal, where it rounds up */
    }
    int shift = 23 - fm.man;
    uint32_t r = a + ((1u << (shift - 1)) - 1) + ((a >> shift) & 1);
    return sign | (uint8_t)((r >> shift) - ((uint32_t)(127 - fm.bias) << fm.man));
}

static inline float ph_f8_to_f32(uint8_t b, PhF8Format fm)
{
    uint32_t a = b & 0x7fu, sign = (uint32_t)(b & 0x80) << 24;
    uint32_t top = fm.has_inf ? 0x7fu & ~((1u << fm.man) - 1) : 0x7fu;   /* e5m2: 0x7c, infinity; e4m3: 0x7f, NaN */
    if (a > top || (!fm.has_inf && a == top)) return ph_bits_f32(0x7fffffffu);
    if (a == top) return ph_bits_f32(sign | 0x7f800000u);
    if (a >> fm.man == 0) {   /* zero or subnormal: a units of 2^(1 - bias - man), exact */
        float v = (float)a * ph_bits_f32((uint32_t)(127 - (fm.bias - 1 + fm.man)) << 23);
        return ph_bits_f32(ph_f32_bits(v) | sign);
    }
    return ph_bits_f32(sign | ((a << (23 - fm.man)) + ((uint32_t)(127 - fm.bias) << 23)));
}

static inline uint8_t ph_f32_to_e4m3(float f) { return ph_f32_to_f8(f, ph_e4m3); }
static inline uint8_t ph_f32_to_e5m2(float f) { return ph_f32_to_f8(f, ph_e5m2); }
static inline float ph_e4m3_to_f32(uint8_t b) { return ph_f8_to_f32(b, ph_e4m3); }
static inline float ph_e5m2_to_f32(uint8_t b) { return ph_f8_to_f32(b, ph_e5m2); }
static inline float ph_round_e4m3(float f) { return ph_e4m3_to_f32(ph_f32_to_e4m3(f)); }
static inline float ph_round_e5m2(float f) { return ph_e5m2_to_f32(ph_f32_to_e5m2(f)); }

static inline float ph_round_f16(float f) { return ph_f16_to_f32(ph_f32_to_f16(f)); }
static inline float ph_round_bf16(float f) { return ph_bf16_to_f32(ph_f32_to_bf16(f)); }

#endif
