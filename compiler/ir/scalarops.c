/* scalarops.c: the reference meaning of each scalar op (scalarops.h).
 * Written for exactness, not speed: the interpreter calls it once per
 * element. Each choice that C leaves open (a zero divisor, an overflow,
 * the sign of a zero from max) is made here explicitly, and
 * compiler/codegen/cg_scalar.c makes the same one on the GPU. */
#include "scalarops.h"
#include "base/floormod.h"
#include "base/half.h"

#include <math.h>

static int32_t wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

/* Python's divmod on i64, with INT64_MIN // -1 wrapping to INT64_MIN (its
 * % is 0) instead of overflowing; a zero divisor gives 0 and 0, as NumPy
 * does (Python raises, which a GPU thread cannot). */
static void floor_divmod_i64(int64_t a, int64_t b, int64_t *quot, int64_t *rem)
{
    if (b == 0 || b == -1) {
        *quot = b == 0 ? 0 : (int64_t)(0u - (uint64_t)a);
        *rem = 0;
        return;
    }
    int64_t q = a / b, r = a % b;
    if (r != 0 && (r < 0) != (b < 0)) {
        q--;
        r += b;
    }
    *quot = q;
    *rem = r;
}

int64_t sop_i64_binary(IrBinop op, int64_t a, int64_t b)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t q, r;
    switch (op) {
    case BIN_ADD: return (int64_t)(ua + ub);
    case BIN_SUB: return (int64_t)(ua - ub);
    case BIN_MUL: return (int64_t)(ua * ub);
    case BIN_FLOORDIV: floor_divmod_i64(a, b, &q, &r); return q;
    case BIN_MOD: floor_divmod_i64(a, b, &q, &r); return r;
    case BIN_MAX: return a > b ? a : b;
    case BIN_MIN: return a < b ? a : b;
    default: return 0;   /* the verifier allows no other op on integers */
    }
}

int64_t sop_i64_unary(IrUnop op, int64_t a)
{
    uint64_t neg = 0u - (uint64_t)a;
    switch (op) {
    case UN_NEG: return (int64_t)neg;
    case UN_ABS: return a < 0 ? (int64_t)neg : a;
    default: return a;
    }
}

/* i32 is i64 wrapped: the operands fit, so the 64-bit result's low word
 * is the wrapping 32-bit one (INT32_MIN // -1 is 2^31 there, INT32_MIN
 * here). */
int32_t sop_i32_binary(IrBinop op, int32_t a, int32_t b)
{
    return wrap32(sop_i64_binary(op, a, b));
}

int32_t sop_i32_unary(IrUnop op, int32_t a)
{
    return wrap32(sop_i64_unary(op, a));
}

float sop_round(DType dt, float x)
{
    if (dt == DT_F16) return ph_round_f16(x);
    if (dt == DT_BF16) return ph_round_bf16(x);
    if (dt == DT_F8E4M3) return ph_round_e4m3(x);
    if (dt == DT_F8E5M2) return ph_round_e5m2(x);
    return x;
}

/* IEEE 754-2019 maximumNumber / minimumNumber: a NaN loses to a number,
 * and -0 is below +0, so the result never depends on the operands' order
 * (a max reduction gives the same bits whatever order it combines in). */
static float max_number(float a, float b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
}

static float min_number(float a, float b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == b) return signbit(a) ? a : b;
    return a < b ? a : b;
}

float sop_float_binary(IrBinop op, DType dt, float a, float b)
{
    float r;
    switch (op) {
    case BIN_ADD: r = a + b; break;
    case BIN_SUB: r = a - b; break;
    case BIN_MUL: r = a * b; break;
    case BIN_DIV: r = a / b; break;
    case BIN_FLOORDIV: r = floor_div_f32(a, b); break;
    case BIN_MOD: r = floor_mod_f32(a, b); break;
    case BIN_MAX: r = max_number(a, b); break;
    case BIN_MIN: r = min_number(a, b); break;
    case BIN_POW: r = (float)pow(a, b); break;
    default: r = 0; break;
    }
    return sop_round(dt, r);
}

float sop_float_unary(IrUnop op, DType dt, float a)
{
    float r;
    switch (op) {
    case UN_NEG: r = -a; break;
    case UN_ABS: r = fabsf(a); break;
    case UN_EXP: r = expf(a); break;
    case UN_EXP2: r = exp2f(a); break;
    case UN_LOG: r = logf(a); break;
    case UN_LOG2: r = log2f(a); break;
    case UN_SQRT: r = sqrtf(a); break;
    case UN_RSQRT: r = 1.0f / sqrtf(a); break;
    /* in double, rounded once: the correctly rounded value but for rare
     * double roundings, the same whatever the host's float libm does */
    case UN_TANH: r = (float)tanh(a); break;
    case UN_ERF: r = (float)erf(a); break;
    case UN_SIGMOID: r = (float)(1.0 / (1.0 + exp(-(double)a))); break;
    default: r = a; break;
    }
    return sop_round(dt, r);
}

float sop_float_fma(DType dt, float a, float b, float c)
{
    return sop_round(dt, fmaf(a, b, c));
}

bool sop_bool_binary(IrBinop op, bool a, bool b)
{
    return op == BIN_AND ? a && b : a || b;
}

/* i32 and f32 values are exact as doubles, so one comparison serves both. */
static bool compare(IrCmp op, double a, double b)
{
    switch (op) {
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    case CMP_GE: return a >= b;
    case CMP_EQ: return a == b;
    default: return a != b;
    }
}

bool sop_compare_i32(IrCmp op, int32_t a, int32_t b) { return compare(op, a, b); }
bool sop_compare_float(IrCmp op, float a, float b) { return compare(op, a, b); }

/* i64 values are not exact as doubles: compared as integers. */
bool sop_compare_i64(IrCmp op, int64_t a, int64_t b)
{
    switch (op) {
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    case CMP_GE: return a >= b;
    case CMP_EQ: return a == b;
    default: return a != b;
    }
}

int64_t sop_float_to_i64(float x)
{
    if (isnan(x)) return 0;
    if (x >= 9223372036854775808.0f) return INT64_MAX;
    if (x <= -9223372036854775808.0f) return INT64_MIN;
    return (int64_t)x;
}

float sop_i64_to_float(DType dt, int64_t x)
{
    return sop_round(dt, (float)x);
}

/* i64's conversion saturated to i32's range (NaN is 0 in both). */
int32_t sop_float_to_i32(float x)
{
    int64_t v = sop_float_to_i64(x);
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

float sop_i32_to_float(DType dt, int32_t x)
{
    return sop_i64_to_float(dt, x);
}

int32_t sop_wrap_int(DType dt, int64_t x)
{
    if (dt == DT_I8) return (int8_t)(uint8_t)x;
    if (dt == DT_U8) return (uint8_t)x;
    return (int32_t)(uint32_t)x;
}

int32_t sop_float_to_int(DType dt, float x)
{
    if (dt == DT_I32) return sop_float_to_i32(x);
    float lo = dt == DT_I8 ? -128.0f : 0.0f, hi = dt == DT_I8 ? 127.0f : 255.0f;
    if (isnan(x)) return 0;
    return (int32_t)(x <= lo ? lo : x >= hi ? hi : x);
}
