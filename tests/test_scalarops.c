/* test_scalarops.c: one meaning per scalar op, wherever it is computed.
 * Each case is one op on one or two operands at an edge (a zero divisor,
 * INT32_MIN // -1, a NaN into max, a float past i32's range into ph.i32,
 * a tie into f16, ...) with the result docs/language.md gives it, written
 * out here by hand. Every case becomes one kernel that computes the op
 * twice: on operands loaded from tensors (the run-time path) and on
 * constants (the path that compile-time folding takes, in phc's fold pass
 * and in LLVM's). The result must be the documented one from
 *   - the reference table (compiler/ir/scalarops.c),
 *   - the interpreter, on both,
 *   - the interpreter after phc's fold pass, which must have folded the op,
 *   - the generated LLVM IR run on the CPU executor (tests/cpusim/), on both.
 * Results compare bit for bit (a zero's sign counts; any NaN matches a
 * NaN), except the executor's exp/exp2/log/log2/rsqrt, which are the GPU's
 * approximations, and tanh/erf/sigmoid/pow, built on them: within a few
 * ulps there, special values exact, and a subnormal result of
 * exp/exp2/sigmoid/pow flushed to zero (ex2.approx.ftz). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>

#include "cpusim.h"
#include "base/half.h"
#include "ir/scalarops.h"
#include "testutil.h"

typedef struct {
    const char *op;     /* the IR op: add ... or, lt ... ne, neg ... abs, convert */
    DType dt, rdt;      /* operand and result dtypes */
    double a, b, want;  /* b unused for one-operand ops */
} Case;

enum { MAXCASES = 512 };
static Case cases[MAXCASES];
static int ncases;

static void add_case(const char *op, DType dt, DType rdt, double a, double b, double want)
{
    cr_assert_lt(ncases, MAXCASES);
    cases[ncases++] = (Case){op, dt, rdt, a, b, want};
}

static void bin(const char *op, DType dt, double a, double b, double want) { add_case(op, dt, dt, a, b, want); }
static void cmp(const char *op, DType dt, double a, double b, int want) { add_case(op, dt, DT_BOOL, a, b, want); }
static void un(const char *op, DType dt, double a, double want) { add_case(op, dt, dt, a, 0, want); }
static void cvt(DType from, DType to, double a, double want) { add_case("convert", from, to, a, 0, want); }

#define MIN32 (-2147483648.0)
#define MAX32 2147483647.0

static void i32_cases(void)
{
    bin("add", DT_I32, MAX32, 1, MIN32);            /* wraps */
    bin("sub", DT_I32, MIN32, 1, MAX32);
    bin("mul", DT_I32, 65536, 65536, 0);
    bin("mul", DT_I32, MAX32, 2, -2);
    bin("mul", DT_I32, MIN32, -1, MIN32);
    bin("floordiv", DT_I32, 7, 2, 3);
    bin("floordiv", DT_I32, -7, 2, -4);
    bin("floordiv", DT_I32, 7, -2, -4);
    bin("floordiv", DT_I32, -7, -2, 3);
    bin("floordiv", DT_I32, 7, 0, 0);               /* a zero divisor gives 0 */
    bin("floordiv", DT_I32, -7, 0, 0);
    bin("floordiv", DT_I32, 0, 0, 0);
    bin("floordiv", DT_I32, MIN32, 0, 0);
    bin("floordiv", DT_I32, MIN32, -1, MIN32);      /* 2^31 wraps */
    bin("floordiv", DT_I32, MIN32, 1, MIN32);
    bin("floordiv", DT_I32, MIN32, MIN32, 1);
    bin("floordiv", DT_I32, 5, MIN32, -1);
    bin("floordiv", DT_I32, MAX32, -1, -MAX32);
    bin("mod", DT_I32, 7, 2, 1);
    bin("mod", DT_I32, -7, 2, 1);
    bin("mod", DT_I32, 7, -2, -1);
    bin("mod", DT_I32, -7, -2, -1);
    bin("mod", DT_I32, 7, 0, 0);                    /* a zero divisor gives 0 */
    bin("mod", DT_I32, -7, 0, 0);
    bin("mod", DT_I32, MIN32, 0, 0);
    bin("mod", DT_I32, MIN32, -1, 0);
    bin("mod", DT_I32, MIN32, 3, 1);
    bin("mod", DT_I32, 5, MIN32, MIN32 + 5);
    bin("mod", DT_I32, -5, MIN32, -5);
    bin("max", DT_I32, MIN32, MAX32, MAX32);
    bin("min", DT_I32, MIN32, MAX32, MIN32);
    un("neg", DT_I32, MIN32, MIN32);
    un("neg", DT_I32, 5, -5);
    un("abs", DT_I32, MIN32, MIN32);
    un("abs", DT_I32, -5, 5);
    cmp("lt", DT_I32, MIN32, MAX32, 1);
    cmp("ge", DT_I32, MIN32, MAX32, 0);
}

/* exp and exp2 where a subnormal is the result or the argument: the
 * interpreter gives the subnormal, the GPU's ex2.approx.ftz zero (a
 * subnormal argument is taken as zero there: 2^0 is the result anyway). */
static void subnormal_exp_cases(void)
{
    un("exp2", DT_F32, -130, 0x1p-130);
    un("exp2", DT_F32, -149, 0x1p-149);             /* the least subnormal */
    un("exp", DT_F32, -100, expf(-100));
    un("exp2", DT_F32, -126, 0x1p-126);             /* the least normal: kept */
    un("exp2", DT_F32, 0x1p-140, 1);
    un("exp2", DT_F32, -0x1p-140, 1);
}

static void f32_cases(void)
{
    const double inf = INFINITY, nan = NAN;
    bin("add", DT_F32, inf, -inf, nan);
    bin("add", DT_F32, -0.0, 0.0, 0.0);
    bin("add", DT_F32, -0.0, -0.0, -0.0);
    bin("sub", DT_F32, 0.0, 0.0, 0.0);
    bin("mul", DT_F32, 1e38, 10, inf);
    bin("mul", DT_F32, 0.0, inf, nan);
    bin("mul", DT_F32, -1.0, 0.0, -0.0);
    bin("div", DT_F32, 1, 0.0, inf);
    bin("div", DT_F32, 1, -0.0, -inf);
    bin("div", DT_F32, -1, 0.0, -inf);
    bin("div", DT_F32, 0.0, 0.0, nan);
    bin("div", DT_F32, 1, 3, (float)(1.0 / 3.0));
    bin("floordiv", DT_F32, 7, 0.0, inf);
    bin("floordiv", DT_F32, -7, 2, -4);
    bin("floordiv", DT_F32, 0.0, 0.0, nan);
    bin("mod", DT_F32, 7, 0.0, nan);
    bin("mod", DT_F32, -7, 2, 1);
    bin("mod", DT_F32, 6, -3, -0.0);
    bin("max", DT_F32, nan, 1, 1);                  /* a NaN operand is ignored */
    bin("max", DT_F32, 1, nan, 1);
    bin("max", DT_F32, nan, nan, nan);
    bin("max", DT_F32, -inf, nan, -inf);
    bin("max", DT_F32, -0.0, 0.0, 0.0);             /* -0 < +0 */
    bin("max", DT_F32, 0.0, -0.0, 0.0);
    bin("max", DT_F32, -0.0, -0.0, -0.0);
    bin("min", DT_F32, nan, 1, 1);
    bin("min", DT_F32, 1, nan, 1);
    bin("min", DT_F32, -0.0, 0.0, -0.0);
    bin("min", DT_F32, 0.0, -0.0, -0.0);
    bin("min", DT_F32, 0.0, 0.0, 0.0);
    bin("min", DT_F32, -inf, 3, -inf);
    un("neg", DT_F32, 0.0, -0.0);
    un("neg", DT_F32, nan, nan);
    un("abs", DT_F32, -0.0, 0.0);
    un("abs", DT_F32, -inf, inf);
    un("exp", DT_F32, -inf, 0.0);
    un("exp", DT_F32, inf, inf);
    un("exp", DT_F32, nan, nan);
    un("exp", DT_F32, 0.0, 1);
    un("exp", DT_F32, 1, expf(1));
    un("exp", DT_F32, -200, 0.0);                   /* underflows */
    un("exp", DT_F32, 200, inf);                    /* overflows */
    un("exp2", DT_F32, -inf, 0.0);
    un("exp2", DT_F32, 3, 8);
    un("exp2", DT_F32, 128, inf);
    subnormal_exp_cases();
    un("log", DT_F32, 0.0, -inf);
    un("log", DT_F32, -0.0, -inf);
    un("log", DT_F32, -1, nan);
    un("log", DT_F32, inf, inf);
    un("log", DT_F32, 1, 0.0);
    un("log", DT_F32, 10, logf(10));
    un("log2", DT_F32, 0.0, -inf);
    un("log2", DT_F32, -1, nan);
    un("log2", DT_F32, 8, 3);
    un("sqrt", DT_F32, -1, nan);
    un("sqrt", DT_F32, -0.0, -0.0);
    un("sqrt", DT_F32, inf, inf);
    un("sqrt", DT_F32, 2, sqrtf(2));
    un("rsqrt", DT_F32, 0.0, inf);
    un("rsqrt", DT_F32, -0.0, -inf);
    un("rsqrt", DT_F32, -1, nan);
    un("rsqrt", DT_F32, inf, 0.0);
    un("rsqrt", DT_F32, 4, 0.5);
    cmp("lt", DT_F32, nan, 1, 0);                   /* unordered: only ne holds */
    cmp("ge", DT_F32, nan, 1, 0);
    cmp("eq", DT_F32, nan, nan, 0);
    cmp("ne", DT_F32, nan, nan, 1);
    cmp("eq", DT_F32, -0.0, 0.0, 1);
    cmp("lt", DT_F32, -0.0, 0.0, 0);
    cmp("lt", DT_F32, -inf, inf, 1);
}

/* tanh, erf, sigmoid: C's special values and limits; the rest correctly
 * rounded from double (the interpreter's), within a few ulps elsewhere. */
static void smooth_cases(void)
{
    const double inf = INFINITY, nan = NAN;
    const double args[] = {inf, -inf, nan, 0.0, -0.0, 1e-30, 0.5, -0.54, 0.56, 0.99, -1.01, -3, 3.95, 20};
    for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
        double x = (float)args[i];   /* the operand as the kernel holds it */
        un("tanh", DT_F32, x, (float)tanh(x));
        un("erf", DT_F32, x, (float)erf(x));
        un("sigmoid", DT_F32, x, (float)(1 / (1 + exp(-x))));
    }
    un("tanh", DT_F32, 10, 1);
    un("erf", DT_F32, 5, 1);
    un("sigmoid", DT_F32, -100, (float)(1 / (1 + exp(100.0))));   /* subnormal: 0 on the GPU */
    un("tanh", DT_F16, -0.25, ph_round_f16((float)tanh(-0.25)));
    un("erf", DT_BF16, 1, ph_round_bf16((float)erf(1)));
}

/* pow: C's table of special cases, then a few ordinary values. */
static void pow_cases(void)
{
    const double inf = INFINITY, nan = NAN;
    const double table[][3] = {
        {nan, 0.0, 1}, {nan, -0.0, 1}, {1, nan, 1}, {1, -inf, 1}, {-1, inf, 1}, {-1, -inf, 1},
        {0.0, -3, inf}, {-0.0, -3, -inf}, {0.0, -2, inf}, {-0.0, -2, inf}, {-0.0, -0.5, inf}, {0.0, -inf, inf},
        {0.0, 3, 0.0}, {-0.0, 3, -0.0}, {-0.0, 2, 0.0}, {-0.0, 0.5, 0.0}, {-0.0, inf, 0.0},
        {0.5, -inf, inf}, {-2, -inf, 0.0}, {0.5, inf, 0.0}, {-2, inf, inf},
        {-inf, -3, -0.0}, {-inf, -2, 0.0}, {-inf, 3, -inf}, {-inf, 2, inf}, {-inf, 0.5, inf},
        {inf, -1, 0.0}, {inf, 0.5, inf}, {-2, 0.5, nan}, {-inf, nan, nan}, {nan, 1, nan}, {2, nan, nan},
        {-2, 3, -8}, {-2, 2, 4}, {-1, 16777215, -1}, {-1, 16777216, 1}, {-1, 1e30, 1}, {2, 0.5, (float)sqrt(2)},
        {10, 40, inf}, {10, -50, 0.0}, {3, -2, (float)(1.0 / 9)}, {0.75, 7.5, (float)pow(0.75, 7.5)},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) bin("pow", DT_F32, table[i][0], table[i][1], table[i][2]);
    bin("pow", DT_F16, -2, 3, -8);
    bin("pow", DT_BF16, 3, 0.5, ph_round_bf16((float)sqrt(3)));
}

static void half_cases(void)
{
    const double inf = INFINITY, nan = NAN;
    bin("add", DT_F16, 65504, 32, inf);             /* 65536 rounds past 65504 */
    bin("add", DT_F16, 65504, 8, 65504);
    bin("mul", DT_F16, 0x1p-14, 0x1p-10, 0x1p-24);  /* the least subnormal */
    bin("mul", DT_F16, 0x1p-14, 0x1p-11, 0.0);      /* a tie: to even, 0 */
    bin("max", DT_F16, nan, -2, -2);
    bin("div", DT_F16, 1, 3, 0x1.554p-2);
    bin("add", DT_BF16, 1, 0x1p-8, 1);              /* a tie: to even */
    bin("add", DT_BF16, 1, 0x1.8p-8, 0x1.02p0);
    bin("min", DT_BF16, -0.0, 0.0, -0.0);
    un("sqrt", DT_F16, -1, nan);
    un("neg", DT_BF16, 0.0, -0.0);
    cmp("lt", DT_F16, nan, 1, 0);
}

static void convert_cases(void)
{
    const double inf = INFINITY, nan = NAN;
    cvt(DT_F32, DT_I32, nan, 0);                    /* toward zero, saturating, NaN -> 0 */
    cvt(DT_F32, DT_I32, inf, MAX32);
    cvt(DT_F32, DT_I32, -inf, MIN32);
    cvt(DT_F32, DT_I32, 3e9, MAX32);
    cvt(DT_F32, DT_I32, -3e9, MIN32);
    cvt(DT_F32, DT_I32, 2147483520.0, 2147483520.0);
    cvt(DT_F32, DT_I32, MIN32, MIN32);
    cvt(DT_F32, DT_I32, 1.9, 1);
    cvt(DT_F32, DT_I32, -1.9, -1);
    cvt(DT_F32, DT_I32, -0.5, 0);
    cvt(DT_F16, DT_I32, 65504, 65504);
    cvt(DT_F16, DT_I32, -inf, MIN32);
    cvt(DT_I32, DT_F32, 16777217, 16777216);       /* to nearest even */
    cvt(DT_I32, DT_F32, 16777219, 16777220);
    cvt(DT_I32, DT_F32, MAX32, 2147483648.0);
    cvt(DT_I32, DT_F16, 65519, 65504);
    cvt(DT_I32, DT_F16, 65520, inf);
    cvt(DT_I32, DT_F16, MIN32, -inf);
    cvt(DT_I32, DT_BF16, 257, 256);                 /* a tie: to even */
    cvt(DT_I32, DT_BF16, 33685505, 33554432);       /* through f32: 2^25 + 2^17 + 1 rounds twice */
    cvt(DT_F32, DT_F16, 65519.996, 65504);
    cvt(DT_F32, DT_F16, 65520, inf);
    cvt(DT_F32, DT_F16, 1e-8, 0.0);
    cvt(DT_F32, DT_F16, 3e-8, 0x1p-24);
    cvt(DT_F32, DT_F16, -1e-8, -0.0);
    cvt(DT_F32, DT_F16, 1 + 0x1p-11, 1);
    cvt(DT_F32, DT_F16, 1 + 0x3p-11, 1 + 0x1p-9);
    cvt(DT_F32, DT_F16, nan, nan);
    cvt(DT_F32, DT_BF16, 0x1.fffffep127, inf);
    cvt(DT_F32, DT_BF16, 1 + 0x1p-8, 1);
    cvt(DT_F32, DT_BF16, 1 + 0x3p-8, 1 + 0x1p-6);
    cvt(DT_F32, DT_BF16, nan, nan);
    cvt(DT_BF16, DT_F16, 0x1p-30, 0.0);
    cvt(DT_F16, DT_BF16, 65504, 65536);
    cvt(DT_F32, DT_BOOL, nan, 1);                   /* != 0 */
    cvt(DT_F32, DT_BOOL, -0.0, 0);
    cvt(DT_I32, DT_BOOL, MIN32, 1);
    cvt(DT_BOOL, DT_I32, 1, 1);
    cvt(DT_BOOL, DT_F32, 1, 1);
}

/* i8 and u8: integers wrap into them, floats saturate (NaN gives 0) */
static void narrow_cases(void)
{
    double nan = NAN;
    cvt(DT_F32, DT_I8, 127.9, 127);
    cvt(DT_F32, DT_I8, 300, 127);
    cvt(DT_F32, DT_I8, -1000, -128);
    cvt(DT_F32, DT_I8, -1.9, -1);                    /* toward zero */
    cvt(DT_F32, DT_I8, nan, 0);
    cvt(DT_F32, DT_U8, -3.5, 0);
    cvt(DT_F32, DT_U8, 255.9, 255);
    cvt(DT_F32, DT_U8, 1e10, 255);
    cvt(DT_F32, DT_U8, nan, 0);
    cvt(DT_F16, DT_I8, 65504, 127);
    cvt(DT_BF16, DT_U8, 200.5, 200);
    cvt(DT_I32, DT_I8, 200, -56);                    /* modulo 256 */
    cvt(DT_I32, DT_I8, -129, 127);
    cvt(DT_I32, DT_U8, -1, 255);
    cvt(DT_I32, DT_U8, 263, 7);
    cvt(DT_I8, DT_I32, -128, -128);
    cvt(DT_U8, DT_I32, 255, 255);
    cvt(DT_I8, DT_U8, -1, 255);
    cvt(DT_U8, DT_I8, 200, -56);
    cvt(DT_I8, DT_F32, -7, -7);
    cvt(DT_U8, DT_F16, 255, 255);
    cvt(DT_I8, DT_BOOL, -1, 1);
    cvt(DT_U8, DT_BOOL, 0, 0);
    cvt(DT_BOOL, DT_U8, 1, 1);
}

/* fp8: round to nearest even, saturating (infinities too), NaN to NaN;
 * out of fp8 exactly, to integers truncating */
static void fp8_cases(void)
{
    double nan = NAN, inf = INFINITY;
    DType e4 = DT_F8E4M3, e5 = DT_F8E5M2;
    cvt(DT_F32, e4, 464, 448);                       /* a tie: to the even code, 448 */
    cvt(DT_F32, e4, 465, 448);                       /* saturates */
    cvt(DT_F32, e4, -1e30, -448);
    cvt(DT_F32, e4, inf, 448);
    cvt(DT_F32, e4, nan, nan);
    cvt(DT_F32, e4, 0.0009765625, 0);                /* 2^-10, half the smallest subnormal: to even */
    cvt(DT_F32, e4, -0.00146484375, -0.001953125);   /* 1.5 * 2^-10: to 2^-9 */
    cvt(DT_F32, e4, 17, 16);                         /* a tie between 16 and 18 */
    cvt(DT_F32, e4, 19, 20);
    cvt(DT_F32, e5, 61440, 57344);                   /* past the largest: saturates */
    cvt(DT_F32, e5, -inf, -57344);
    cvt(DT_F32, e5, 1.125, 1);                       /* a tie: to 1.0 */
    cvt(DT_F32, e5, 1.375, 1.5);
    cvt(DT_F32, e5, 1.52587890625e-05, 1.52587890625e-05);   /* 2^-16, the smallest subnormal */
    cvt(DT_F16, e4, -300, -288);
    cvt(DT_BF16, e5, 3.5, 3.5);
    cvt(DT_I32, e4, 1000, 448);
    cvt(DT_I32, e5, -7, -7);
    cvt(e4, DT_F32, -448, -448);
    cvt(e4, DT_F16, 0.001953125, 0.001953125);
    cvt(e5, DT_BF16, 57344, 57344);
    cvt(e4, DT_I32, -3.5, -3);
    cvt(e5, DT_I8, 57344, 127);
    cvt(e5, DT_U8, -2, 0);
    cvt(e4, DT_BOOL, 0.015625, 1);
    cvt(e5, DT_BOOL, -0.0, 0);
    cvt(e4, e5, 448, 448);
    cvt(e5, e4, 57344, 448);
    cvt(e5, e4, nan, nan);
}

static void bool_cases(void)
{
    bin("and", DT_BOOL, 1, 0, 0);
    bin("and", DT_BOOL, 1, 1, 1);
    bin("or", DT_BOOL, 0, 1, 1);
    bin("or", DT_BOOL, 0, 0, 0);
    un("not", DT_BOOL, 1, 0);
    un("not", DT_BOOL, 0, 1);
    cmp("eq", DT_BOOL, 1, 1, 1);
    cmp("ne", DT_BOOL, 1, 0, 1);
    cmp("lt", DT_BOOL, 0, 1, 1);                    /* false < true */
    cmp("lt", DT_BOOL, 1, 0, 0);
    cmp("gt", DT_BOOL, 1, 0, 1);
    cmp("le", DT_BOOL, 1, 0, 0);
}

static void all_cases(void)
{
    ncases = 0;
    i32_cases();
    f32_cases();
    smooth_cases();
    pow_cases();
    half_cases();
    convert_cases();
    narrow_cases();
    fp8_cases();
    bool_cases();
}

/* ---- the kernels ---- */

static bool is_unary(const char *op)
{
    static const char *const names[] = {"neg", "not", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "convert",
                                        "tanh", "erf", "sigmoid"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(op, names[i])) return true;
    return false;
}

/* Tensors hold no bool: a bool operand is stored as an i32, a bool result too. */
static DType stored(DType dt) { return dt == DT_BOOL ? DT_I32 : dt; }

/* A constant in the text form: a float always has '.' or 'e'. */
static void const_text(char *buf, size_t n, DType dt, double v)
{
    if (!ir_is_float(dt)) snprintf(buf, n, "%lld", (long long)v);
    else if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
    else {
        snprintf(buf, n, "%.17g", v);
        if (!strpbrk(buf, ".e")) strncat(buf, ".0", n - strlen(buf) - 1);
    }
}

typedef struct { char *text; size_t len, cap; } Buf;

static void put(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->text = realloc(b->text, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->text + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Case k as kernel ck: Z[0] = op(A[0], B[0]) from the tensors and
 * Z[1] = op(a, b) from constants, each a one-element tile. */
static void case_kernel(Buf *b, int k)
{
    const Case *c = &cases[k];
    const char *dt = ir_dtype_name(c->dt), *rdt = ir_dtype_name(c->rdt);
    const char *sdt = ir_dtype_name(stored(c->dt)), *srdt = ir_dtype_name(stored(c->rdt));
    bool one = is_unary(c->op);
    char ta[64], tb[64];
    const_text(ta, sizeof ta, c->dt, c->a);
    const_text(tb, sizeof tb, c->dt, c->b);
    put(b, "func c%d kernel c%d threads 32\n    params(A: %s[N], B: %s[N], Z: %s[N]) {\n", k, k, sdt, sdt, srdt);
    put(b, "  %%1 = const 0 : i32\n  %%2 = const 1 : i32\n");
    put(b, "  %%3 = load A[%%1] : %s[1]\n  %%4 = load B[%%1] : %s[1]\n", sdt, sdt);
    /* a bool goes in and out of its i32 tensor through a convert */
    if (c->dt == DT_BOOL) put(b, "  %%5 = convert %%3 : bool[1]\n  %%6 = convert %%4 : bool[1]\n");
    const char *x = c->dt == DT_BOOL ? "%5" : "%3", *y = c->dt == DT_BOOL ? "%6" : "%4";
    if (one) put(b, "  %%7 = %s %s : %s[1]\n", c->op, x, rdt);
    else put(b, "  %%7 = %s %s, %s : %s[1]\n", c->op, x, y, rdt);
    if (c->rdt == DT_BOOL) put(b, "  %%8 = convert %%7 : i32[1]\n  store Z[%%1], %%8\n");
    else put(b, "  store Z[%%1], %%7\n");
    put(b, "  %%9 = const %s : %s\n  %%10 = const %s : %s\n", ta, dt, tb, dt);
    if (one) put(b, "  %%11 = %s %%9 : %s\n", c->op, rdt);
    else put(b, "  %%11 = %s %%9, %%10 : %s\n", c->op, rdt);
    if (c->rdt == DT_BOOL) put(b, "  %%12 = convert %%11 : i32\n  %%13 = splat %%12 : i32[1]\n");
    else put(b, "  %%13 = splat %%11 : %s[1]\n", rdt);
    put(b, "  store Z[%%2], %%13\n  return\n}\n");
}

static IrModule *case_module(void)
{
    Buf b = {0};
    for (int k = 0; k < ncases; k++) case_kernel(&b, k);
    char err[512];
    IrModule *m = ir_parse(b.text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    for (int k = 0; k < m->nfuncs; k++)
        cr_assert_eq(ir_verify(m->funcs[k], err, sizeof err), 0, "%s", err);
    free(b.text);
    return m;
}

/* ---- values in tensors ---- */

typedef struct { uint32_t a[2], b[2], z[2]; } Tensors;

static uint32_t bits_of(DType dt, double v)
{
    switch (dt) {
    case DT_F32: return ph_f32_bits((float)v);
    case DT_F16: return ph_f32_to_f16((float)v);
    case DT_BF16: return ph_f32_to_bf16((float)v);
    case DT_F8E4M3: return ph_f32_to_e4m3((float)v);
    case DT_F8E5M2: return ph_f32_to_e5m2((float)v);
    default: return (uint32_t)(int32_t)v;
    }
}

static double value_of(DType dt, uint32_t bits)
{
    switch (dt) {
    case DT_F32: return ph_bits_f32(bits);
    case DT_F16: return ph_f16_to_f32((uint16_t)bits);
    case DT_BF16: return ph_bf16_to_f32((uint16_t)bits);
    case DT_F8E4M3: return ph_e4m3_to_f32((uint8_t)bits);
    case DT_F8E5M2: return ph_e5m2_to_f32((uint8_t)bits);
    case DT_I8: return (int8_t)bits;
    case DT_U8: return (uint8_t)bits;
    default: return (int32_t)bits;
    }
}

/* Operands as the tensors hold them (f16/bf16 in the low half of a word,
 * which is where a 2-byte element 0 lies), Z poisoned. */
static Tensors tensors_for(const Case *c)
{
    Tensors t;
    DType sdt = stored(c->dt);
    t.a[0] = t.a[1] = bits_of(sdt, c->a);
    t.b[0] = t.b[1] = bits_of(sdt, c->b);
    t.z[0] = t.z[1] = 0xdeadbeef;
    return t;
}

/* One result as the case's result dtype reads it; z points at element 0. */
static double result(const Case *c, const uint32_t *z, int i)
{
    DType r = stored(c->rdt);
    uint32_t bits = 0;
    if (r == DT_F16 || r == DT_BF16) {
        uint16_t h;
        memcpy(&h, (const char *)z + 2 * i, 2);
        bits = h;
    } else if (ir_dtype_bytes(r) == 1) {
        bits = ((const uint8_t *)z)[i];
    } else {
        bits = z[i];
    }
    return value_of(r, bits);
}

/* The same value: both NaN, or equal with the same sign. */
static bool same(double got, double want)
{
    if (isnan(want)) return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

static bool approximate(const char *op)
{
    static const char *const names[] = {"exp", "exp2", "log", "log2", "rsqrt", "tanh", "erf", "sigmoid", "pow"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(op, names[i])) return true;
    return false;
}

static bool subnormal(double want) { return want != 0 && fabs(want) < 0x1p-126; }

/* The GPU's approximations: special values exact, others within 8 ulps of
 * f32, a subnormal flushed to zero (exp and exp2 on the GPU). */
static bool close_enough(double got, double want)
{
    if (same(got, want)) return true;
    if (subnormal(want)) return same(got, copysign(0.0, want));
    if (!isfinite(want) || !isfinite(got) || want == 0) return false;
    return fabs(got - want) <= 8 * 0x1p-23 * fabs(want);
}

static void describe(char *buf, size_t n, const Case *c)
{
    if (is_unary(c->op)) snprintf(buf, n, "%s %s %.9g -> %s", c->op, ir_dtype_name(c->dt), c->a, ir_dtype_name(c->rdt));
    else snprintf(buf, n, "%s %s %.9g, %.9g", c->op, ir_dtype_name(c->dt), c->a, c->b);
}

/* ---- the sides ---- */

static int check(const char *side, const Case *c, double got, bool approx_ok)
{
    bool ok = approx_ok && approximate(c->op) ? close_enough(got, c->want) : same(got, c->want);
    if (ok) return 0;
    char what[128];
    describe(what, sizeof what, c);
    cr_log_error("%s: %s gave %.9g (%a), the documented result is %.9g (%a)", side, what, got, got, c->want, c->want);
    return 1;
}

/* ---- the reference table ---- */

static int op_index(const char *const *names, int n, const char *op)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], op)) return i;
    return -1;
}

/* The case's result as the table computes it, read as the result dtype. */
static double table_result(const Case *c)
{
    int u = op_index(ir_unop_names, UN_COUNT, c->op), b = op_index(ir_binop_names, BIN_COUNT, c->op);
    int k = op_index(ir_cmp_names, CMP_COUNT, c->op);
    bool fl = ir_is_float(c->dt);
    float fa = sop_round(c->dt, (float)c->a), fb = sop_round(c->dt, (float)c->b);
    int32_t ia = fl ? 0 : (int32_t)c->a, ib = fl ? 0 : (int32_t)c->b;   /* a NaN has no int32_t */
    if (!strcmp(c->op, "convert")) {
        if (c->rdt == DT_BOOL) return fl ? fa != 0 : ia != 0;
        if (ir_is_int(c->rdt)) return fl ? sop_float_to_int(c->rdt, fa) : sop_wrap_int(c->rdt, ia);
        return fl ? sop_round(c->rdt, fa) : sop_i32_to_float(c->rdt, ia);
    }
    /* no ?: between a float and an int32_t result: it would be rounded to float */
    if (k >= 0) return fl ? sop_compare_float(k, fa, fb) : sop_compare_i32(k, ia, ib);
    if (u >= 0 && fl) return sop_float_unary(u, c->dt, fa);
    if (u >= 0) return c->dt == DT_BOOL ? !ia : sop_i32_unary(u, ia);
    cr_assert_geq(b, 0, "no op %s", c->op);
    if (c->dt == DT_BOOL) return sop_bool_binary(b, ia, ib);
    if (fl) return sop_float_binary(b, c->dt, fa, fb);
    return sop_i32_binary(b, ia, ib);
}

Test(scalarops, the_table_gives_the_documented_results)
{
    all_cases();
    int bad = 0;
    for (int k = 0; k < ncases; k++) bad += check("table", &cases[k], table_result(&cases[k]), false);
    cr_expect_eq(bad, 0, "%d of %d cases differ", bad, ncases);
}

static int interp_case(const IrFunc *f, const Case *c, Tensors *t)
{
    IrArg args[3] = {{.data = t->a, .dims = {2, 0}}, {.data = t->b, .dims = {2, 0}}, {.data = t->z, .dims = {2, 0}}};
    int grid[3] = {1, 1, 1};
    char err[512];
    if (ir_interp(f, args, 3, grid, err, sizeof err)) {
        char what[128];
        describe(what, sizeof what, c);
        cr_log_error("interpreter: %s: %s", what, err);
        return 1;
    }
    return 0;
}

Test(scalarops, the_interpreter_gives_the_documented_results)
{
    all_cases();
    IrModule *m = case_module();
    int bad = 0;
    for (int k = 0; k < ncases; k++) {
        const Case *c = &cases[k];
        Tensors t = tensors_for(c);
        if (interp_case(m->funcs[k], c, &t)) {
            bad++;
            continue;
        }
        bad += check("interpreter (tensors)", c, result(c, t.z, 0), false);
        bad += check("interpreter (constants)", c, result(c, t.z, 1), false);
    }
    cr_expect_eq(bad, 0, "%d of %d cases differ", bad, ncases);
    ir_module_free(m);
}

/* The op on constants must be gone after fold: the last store's value is
 * a splat of a constant. */
static bool folded(const IrFunc *f)
{
    const IrOp *st = NULL;
    for (int i = 0; i < f->body->nops; i++)
        if (f->body->ops[i]->kind == OP_STORE) st = f->body->ops[i];
    const IrOp *d = st ? f->values[st->args[st->nargs - 1]].def : NULL;
    if (d && d->kind == OP_SPLAT) d = f->values[d->args[0]].def;
    return d && d->kind == OP_CONST;
}

Test(scalarops, fold_gives_the_documented_results)
{
    all_cases();
    IrModule *m = case_module();
    int bad = 0;
    for (int k = 0; k < ncases; k++) {
        const Case *c = &cases[k];
        IrFunc *f = m->funcs[k];
        ir_fold(f);
        char err[512];
        cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
        if (!folded(f)) {
            char what[128];
            describe(what, sizeof what, c);
            cr_log_error("fold: %s was not folded", what);
            bad++;
            continue;
        }
        Tensors t = tensors_for(c);
        if (interp_case(f, c, &t)) {
            bad++;
            continue;
        }
        bad += check("fold", c, result(c, t.z, 1), false);
    }
    cr_expect_eq(bad, 0, "%d of %d cases differ", bad, ncases);
    ir_module_free(m);
}

/* The executor models ex2.approx.ftz: where the interpreter gives a
 * subnormal, the generated exp and exp2 give zero, and nowhere else. */
Test(scalarops, generated_exp_flushes_subnormal_results_to_zero, .timeout = 120)
{
    ncases = 0;
    subnormal_exp_cases();
    IrModule *m = case_module();
    cpusim *s = NULL;
    char err[1024];
    cr_assert_eq(cpusim_load(m, &s, err, sizeof err), PH_OK, "cpusim_load: %s", err);
    int flushed = 0;
    for (int k = 0; k < ncases; k++) {
        const Case *c = &cases[k];
        Tensors t = tensors_for(c);
        ph_arg args[3] = {ph_tensor1((ph_devptr)(uintptr_t)t.a, 2), ph_tensor1((ph_devptr)(uintptr_t)t.b, 2),
                          ph_tensor1((ph_devptr)(uintptr_t)t.z, 2)};
        unsigned grid[3] = {1, 1, 1};
        cr_assert_eq(cpusim_launch(s, m->funcs[k]->name, grid, args, 3, err, sizeof err), PH_OK, "c%d: %s", k, err);
        char what[128];
        describe(what, sizeof what, c);
        for (int i = 0; i < 2; i++) {
            double got = result(c, t.z, i);
            if (subnormal(c->want)) {
                cr_expect(same(got, 0.0), "%s gave %a, not zero", what, got);
                flushed++;
            } else {
                cr_expect(same(got, c->want), "%s gave %a, not %a", what, got, c->want);
            }
        }
    }
    cr_expect_eq(flushed, 6);
    cpusim_free(s);
    ir_module_free(m);
}

Test(scalarops, generated_code_gives_the_documented_results, .timeout = 120)
{
    all_cases();
    IrModule *m = case_module();
    cpusim *s = NULL;
    char err[1024];
    cr_assert_eq(cpusim_load(m, &s, err, sizeof err), PH_OK, "cpusim_load: %s", err);
    int bad = 0;
    for (int k = 0; k < ncases; k++) {
        const Case *c = &cases[k];
        Tensors t = tensors_for(c);
        ph_arg args[3] = {ph_tensor1((ph_devptr)(uintptr_t)t.a, 2), ph_tensor1((ph_devptr)(uintptr_t)t.b, 2),
                          ph_tensor1((ph_devptr)(uintptr_t)t.z, 2)};
        unsigned grid[3] = {1, 1, 1};
        if (cpusim_launch(s, m->funcs[k]->name, grid, args, 3, err, sizeof err) != PH_OK) {
            cr_log_error("executor: c%d: %s", k, err);
            bad++;
            continue;
        }
        bad += check("generated code (tensors)", c, result(c, t.z, 0), true);
        bad += check("generated code (constants)", c, result(c, t.z, 1), true);
    }
    cr_expect_eq(bad, 0, "%d of %d cases differ", bad, ncases);
    cpusim_free(s);
    ir_module_free(m);
}
