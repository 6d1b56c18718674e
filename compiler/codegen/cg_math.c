/* cg_math.c: tanh, erf, sigmoid, pow and fma on one f32 element, as
 * sequences of LLVM operations every target selects (there is no libm on
 * the GPU): polynomials evaluated with llvm.fma, the target's fast exp2 and
 * log2, a correctly rounded division, selects for the special values.
 *
 * Expects: f32 operands (cg_scalar.c widens f16 and bf16 and rounds back).
 * Guarantees: the special values of C (docs/language.md, "Scalar
 * semantics"), and the accuracy stated there. The polynomials were fitted
 * for phc (weighted least squares on Chebyshev nodes, iterated toward the
 * least maximum error, in long double); with an exact exp2, over every 61st
 * positive f32, the results were within 1.8 ulps of the correctly rounded
 * tanh and 1.2 ulps of erf (2.3 and 1.2 with exp2 one ulp off either way);
 * tests/test_cpusim_math.c holds them to 3 and 2 on the CPU executor. No
 * multiply here carries the contract flag, so nothing fuses but the fmas
 * written, and the CPU executor computes the same steps. */
#include "target.h"

#include <math.h>

static LLVMValueRef fma3(Cg *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d)
{
    LLVMTypeRef t3[3] = {c->tf32, c->tf32, c->tf32};
    LLVMValueRef v3[3] = {a, b, d};
    return cg_call(c, "llvm.fma.f32", c->tf32, 3, t3, v3);
}

static LLVMValueRef copysign_f32(Cg *c, LLVMValueRef mag, LLVMValueRef sign)
{
    LLVMTypeRef t2[2] = {c->tf32, c->tf32};
    LLVMValueRef v2[2] = {mag, sign};
    return cg_call(c, "llvm.copysign.f32", c->tf32, 2, t2, v2);
}

/* coef[0] + coef[1] t + ... + coef[n-1] t^(n-1), one fma a step */
static LLVMValueRef horner(Cg *c, const float *coef, int n, LLVMValueRef t)
{
    LLVMValueRef s = f32c(c, coef[n - 1]);
    for (int k = n - 2; k >= 0; k--) s = fma3(c, s, t, f32c(c, coef[k]));
    return s;
}

static LLVMValueRef fmul(Cg *c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(c->b, a, b, ""); }
static LLVMValueRef fcmp(Cg *c, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFCmp(c->b, p, a, b, ""); }
static LLVMValueRef sel(Cg *c, LLVMValueRef k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(c->b, k, a, b, ""); }

/* tanh: for |x| < 0.55, |x| + |x|^3 P(x^2), P fitted to (tanh(x) - x) / x^3
 * (the form keeps the small result's relative accuracy, which 1 - 2 / (e + 1)
 * loses by cancellation); above, 1 - 2 / (exp(2|x|) + 1), which gives 1 once
 * the exp overflows. The sign is x's, so tanh(-0.0) is -0.0; NaN takes the
 * second form and stays NaN. */
LLVMValueRef math_tanh(Cg *c, LLVMValueRef x)
{
    static const float P[] = {-3.333333200e-01f, 1.333311328e-01f, -5.390936100e-02f, 2.130905016e-02f, -6.609691564e-03f};
    LLVMBuilderRef B = c->b;
    LLVMValueRef a = call1f(c, "llvm.fabs.f32", x), t = fmul(c, a, a);
    LLVMValueRef small = fma3(c, fmul(c, a, t), horner(c, P, 5, t), a);
    LLVMValueRef e = c->target->isa->exp2_fast(c, fmul(c, a, f32c(c, 2.0 * 1.4426950408889634)));
    LLVMValueRef big = LLVMBuildFSub(B, f32c(c, 1), LLVMBuildFDiv(B, f32c(c, 2), LLVMBuildFAdd(B, e, f32c(c, 1), ""), ""), "");
    return copysign_f32(c, sel(c, fcmp(c, LLVMRealOLT, a, f32c(c, 0.55)), small, big), x);
}

/* erf: for |x| < 1, |x| (2/sqrt(pi)) + |x|^3 Q(x^2), Q fitted to the rest,
 * 2/sqrt(pi) split in two floats so its product is exact to the last bit;
 * from 1 on, 1 - 2^R(|x| - 1), R fitted to log2(erfc) on [1, 4] (erfc is
 * below half an ulp of 1 from 3.92 on, so |x| past 4 is taken as 4 and the
 * result is 1). The sign is x's; NaN stays NaN through the clamp. */
LLVMValueRef math_erf(Cg *c, LLVMValueRef x)
{
    static const float Q[] = {-3.761263833e-01f, 1.128375133e-01f, -2.686151866e-02f,
                               5.204080807e-03f, -8.156375991e-04f, 8.357559138e-05f};
    static const float R[] = {-2.668416688e+00f, -3.807225982e+00f, -1.216338926e+00f, -5.999722282e-02f, 1.456951929e-02f,
                              -2.994968951e-03f, 4.806120653e-04f, -5.393880441e-05f, 3.534922512e-06f, -8.925658504e-08f};
    LLVMValueRef a = call1f(c, "llvm.fabs.f32", x), t = fmul(c, a, a);
    LLVMValueRef rest = fmul(c, fmul(c, a, t), horner(c, Q, 6, t));
    LLVMValueRef small = fma3(c, a, f32c(c, 1.128379226e+00f), fma3(c, a, f32c(c, -5.863538344e-08f), rest));
    LLVMValueRef four = f32c(c, 4), clamped = sel(c, fcmp(c, LLVMRealOGT, a, four), four, a);
    LLVMValueRef tail = c->target->isa->exp2_fast(c, horner(c, R, 10, LLVMBuildFSub(c->b, clamped, f32c(c, 1), "")));
    LLVMValueRef big = LLVMBuildFSub(c->b, f32c(c, 1), tail, "");
    return copysign_f32(c, sel(c, fcmp(c, LLVMRealOLT, a, f32c(c, 1)), small, big), x);
}

/* sigmoid: 1 / (1 + exp(-x)) with ph.exp's exp, so 0 once exp(-x)
 * overflows (x below about -88.7) and 1 once it flushes to 0. */
LLVMValueRef math_sigmoid(Cg *c, LLVMValueRef x)
{
    LLVMValueRef e = c->target->isa->exp2_fast(c, fmul(c, x, f32c(c, -1.4426950408889634)));
    return LLVMBuildFDiv(c->b, f32c(c, 1), LLVMBuildFAdd(c->b, f32c(c, 1), e, ""), "");
}

/* pow: exp2(y log2 |x|), then C's cases: the sign of x for an odd integer
 * y (a -0.0 counts as negative), NaN for a finite negative x and a
 * non-integer finite y, 1 for y = ±0, for x = 1, and for x = -1 with an
 * infinite y (whatever the other operand, NaN included). The rest of C's
 * table (zero, infinite and NaN operands) comes out of the IEEE values of
 * log2 and exp2 and of their product. */
LLVMValueRef math_pow(Cg *c, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef B = c->b;
    const TargetIsa *isa = c->target->isa;
    LLVMValueRef one = f32c(c, 1), inf = f32c(c, INFINITY);
    LLVMValueRef ax = call1f(c, "llvm.fabs.f32", x), ay = call1f(c, "llvm.fabs.f32", y);
    LLVMValueRef r = isa->exp2_fast(c, fmul(c, y, isa->log2_fast(c, ax)));
    LLVMValueRef y_int = fcmp(c, LLVMRealOEQ, call1f(c, "llvm.trunc.f32", y), y);   /* true for ±inf, false for NaN */
    /* past 2^24 every f32 is even; below it the conversion is exact */
    LLVMValueRef small_y = fcmp(c, LLVMRealOLT, ay, f32c(c, 16777216.0));
    LLVMValueRef yi = LLVMBuildFPToSI(B, sel(c, small_y, y, f32c(c, 0)), c->ti32, "");
    LLVMValueRef odd = LLVMBuildAnd(B, LLVMBuildTrunc(B, yi, c->ti1, ""), LLVMBuildAnd(B, y_int, small_y, ""), "");
    LLVMValueRef x_neg = LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildBitCast(B, x, c->ti32, ""), i32c(c, 0), "");
    r = sel(c, LLVMBuildAnd(B, x_neg, odd, ""), LLVMBuildFNeg(B, r, ""), r);
    LLVMValueRef finite_neg = LLVMBuildAnd(B, fcmp(c, LLVMRealOLT, x, f32c(c, 0)), fcmp(c, LLVMRealONE, ax, inf), "");
    r = sel(c, LLVMBuildAnd(B, finite_neg, LLVMBuildNot(B, y_int, ""), ""), f32c(c, NAN), r);
    LLVMValueRef unit = LLVMBuildOr(B, fcmp(c, LLVMRealOEQ, y, f32c(c, 0)), fcmp(c, LLVMRealOEQ, x, one), "");
    unit = LLVMBuildOr(B, unit, LLVMBuildAnd(B, fcmp(c, LLVMRealOEQ, ax, one), fcmp(c, LLVMRealOEQ, ay, inf), ""), "");
    return sel(c, unit, one, r);
}

/* a * b + c rounded once: fma.rn.f32. */
LLVMValueRef math_fma(Cg *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d) { return fma3(c, a, b, d); }
