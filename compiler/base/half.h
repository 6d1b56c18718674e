/* half.h: f16 and bf16 as bit patterns, converted to and from f32 with
 * round-to-nearest-even, exactly as the GPU's cvt.rn does. Shared by the
 * interpreter, the host programs and the tests. */
#ifndef PHC_HALF_H
#define PHC_HALF_H

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

static inline float ph_round_f16(float f) { return ph_f16_to_f32(ph_f32_to_f16(f)); }
static inline float ph_round_bf16(float f) { return ph_bf16_to_f32(ph_f32_to_bf16(f)); }

#endif
