/* test_fold.c: the fold pass against the interpreter and against C. Each
 * case is a scalar op on two constants, written in the IR text form, whose
 * result is stored: fold must turn the op into the constant C computes,
 * and the interpreter, run on the unfolded function, must store the same. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "testutil.h"

/* The function: %3 = OP %1, %2 with the constants a and b of dtype dt;
 * the result, converted to the stored dtype, goes to X[0]. */
static IrModule *binary_program(const char *op, const char *dt, const char *a, const char *b, const char *res_dt,
                                const char *store_dt)
{
    char text[1024], err[512];
    snprintf(text, sizeof text,
             "func f kernel f threads 32\n    params(X: %s[N]) {\n"
             "  %%1 = const %s : %s\n  %%2 = const %s : %s\n  %%3 = %s %%1, %%2 : %s\n"
             "  %%4 = convert %%3 : %s\n  %%5 = const 0 : i32\n  %%6 = splat %%4 : %s[1]\n"
             "  store X[%%5], %%6\n  return\n}\n",
             store_dt, a, dt, b, dt, op, res_dt, store_dt, store_dt);
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s\n%s", err, text);
    cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 0, "%s\n%s", err, text);
    return m;
}

/* Runs f on a one-element X of 32-bit elements; returns what it stored. */
static uint32_t run_one(const IrFunc *f)
{
    uint32_t x = 0xdeadbeef;
    IrArg arg = {&x, {1, 0}, 0, 0};
    int grid[3] = {1, 1, 1};
    char err[512];
    cr_assert_eq(ir_interp(f, &arg, 1, grid, err, sizeof err), 0, "%s", err);
    return x;
}

/* ---- comparisons ---- */

static const char *const cmp_ops[] = {"lt", "le", "gt", "ge", "eq", "ne"};

static bool c_compare(int k, double a, double b)
{
    switch (k) {
    case 0: return a < b;
    case 1: return a <= b;
    case 2: return a > b;
    case 3: return a >= b;
    case 4: return a == b;
    default: return a != b;
    }
}

/* A constant as the text form writes it: a float always has '.' or 'e'. */
static void number_text(char *buf, size_t n, const char *dt, double v)
{
    if (!strcmp(dt, "i32") || !strcmp(dt, "bool")) snprintf(buf, n, "%lld", (long long)v);
    else if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
    else {
        snprintf(buf, n, "%.17g", v);
        if (!strpbrk(buf, ".e")) strncat(buf, ".0", n - strlen(buf) - 1);
    }
}

/* Every comparison of a and b: folded to the constant C gives, and the
 * interpreter agreeing on the unfolded program. */
static void check_compares(const char *dt, double a, double b)
{
    char ta[64], tb[64];
    number_text(ta, sizeof ta, dt, a);
    number_text(tb, sizeof tb, dt, b);
    for (int k = 0; k < 6; k++) {
        int want = c_compare(k, a, b);
        IrModule *m = binary_program(cmp_ops[k], dt, ta, tb, "bool", "i32");
        IrFunc *f = m->funcs[0];
        cr_assert_eq((int)run_one(f), want, "interpreter: %s %s %s : %s", ta, cmp_ops[k], tb, dt);
        ir_fold(f);
        const IrOp *d = f->values[3].def;
        cr_assert(d->kind == OP_CONST, "%s %s %s : %s not folded:\n%s", ta, cmp_ops[k], tb, dt, tu_func_text(f));
        cr_assert_eq(d->ival, want, "fold: %s %s %s : %s gave %lld, not %d", ta, cmp_ops[k], tb, dt, (long long)d->ival, want);
        cr_assert_eq((int)run_one(f), want, "interpreter after fold: %s %s %s : %s", ta, cmp_ops[k], tb, dt);
        ir_module_free(m);
    }
}

/* Each pair: equal, then the first just below, then just above. */
static void check_around(const char *dt, double v, double below, double above)
{
    check_compares(dt, v, v);
    check_compares(dt, below, v);
    check_compares(dt, above, v);
}

Test(fold, i32_compares_at_and_around_equality)
{
    check_around("i32", 3, 2, 4);
    check_around("i32", -3, -4, -2);
    check_around("i32", 0, -1, 1);
    check_around("i32", INT32_MAX, INT32_MAX - 1, INT32_MAX - 1);
    check_around("i32", INT32_MIN, INT32_MIN + 1, INT32_MIN + 1);
    check_compares("i32", INT32_MIN, INT32_MAX);
}

Test(fold, f32_compares_at_and_around_equality)
{
    check_around("f32", 1.5, nextafterf(1.5f, 0), nextafterf(1.5f, 2));
    check_around("f32", -2.25, nextafterf(-2.25f, -3), nextafterf(-2.25f, 0));
    check_around("f32", 0x1p-149, 0, 0x1p-148);
    check_compares("f32", -0.0, 0.0);       /* equal */
    check_compares("f32", -INFINITY, INFINITY);
    check_compares("f32", INFINITY, INFINITY);
    check_compares("f32", NAN, 1.0);        /* unordered: only ne holds */
    check_compares("f32", NAN, NAN);
}

Test(fold, f16_and_bf16_compares_at_and_around_equality)
{
    /* neighbours of 1 in each format: 1 - 2^-11, 1 + 2^-10; 1 - 2^-8, 1 + 2^-7 */
    check_around("f16", 1.0, 0.99951171875, 1.0009765625);
    check_around("f16", -65504.0, -INFINITY, -65472.0);
    check_around("bf16", 1.0, 0.99609375, 1.0078125);
    check_around("bf16", 0x1p-133, 0, 0x1p-132);
}

Test(fold, bool_compares)
{
    for (int a = 0; a <= 1; a++)
        for (int b = 0; b <= 1; b++) check_compares("bool", a, b);
}

/* ---- floor division and modulo: Python's rules ---- */

/* Python's a // b and a % b on integers, from the definition (the
 * quotient's floor is exact in double for i32 operands); the quotient
 * then wraps to i32 as every i32 result does. */
static void python_divmod(int32_t a, int32_t b, int32_t *q, int32_t *r)
{
    int64_t fq = (int64_t)floor((double)a / (double)b);
    *q = (int32_t)(uint32_t)(uint64_t)fq;
    *r = (int32_t)((int64_t)a - fq * (int64_t)b);
}

/* Folds OP on a and b and runs it unfolded: both must store want. */
static void check_int_op(const char *op, int32_t a, int32_t b, int32_t want)
{
    char ta[32], tb[32];
    snprintf(ta, sizeof ta, "%d", a);
    snprintf(tb, sizeof tb, "%d", b);
    IrModule *m = binary_program(op, "i32", ta, tb, "i32", "i32");
    IrFunc *f = m->funcs[0];
    cr_assert_eq((int32_t)run_one(f), want, "interpreter: %d %s %d, want %d", a, op, b, want);
    ir_fold(f);
    const IrOp *d = f->values[3].def;
    cr_assert(d->kind == OP_CONST, "%d %s %d not folded", a, op, b);
    cr_assert_eq((int32_t)d->ival, want, "fold: %d %s %d gave %d, want %d", a, op, b, (int32_t)d->ival, want);
    ir_module_free(m);
}

Test(fold, i32_floordiv_and_mod_floor_like_python)
{
    static const int32_t as[] = {7, -7, 6, -6, 1, -1, 0, INT32_MAX, INT32_MIN, INT32_MIN + 1};
    static const int32_t bs[] = {2, -2, 3, -3, 1, -1, 7, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof as / sizeof *as; i++)
        for (size_t j = 0; j < sizeof bs / sizeof *bs; j++) {
            int32_t q, r;
            python_divmod(as[i], bs[j], &q, &r);
            check_int_op("floordiv", as[i], bs[j], q);
            check_int_op("mod", as[i], bs[j], r);
        }
}

/* Folds OP on two f32 constants and runs it unfolded: both give want. */
static void check_float_op(const char *op, const char *a, const char *b, float want)
{
    IrModule *m = binary_program(op, "f32", a, b, "f32", "f32");
    IrFunc *f = m->funcs[0];
    uint32_t bits = run_one(f);
    float got;
    memcpy(&got, &bits, sizeof got);
    cr_assert_eq(got, want, "interpreter: %s %s %s gave %g, want %g", a, op, b, got, want);
    ir_fold(f);
    const IrOp *d = f->values[3].def;
    cr_assert(d->kind == OP_CONST, "%s %s %s not folded", a, op, b);
    cr_assert_eq((float)d->fval, want, "fold: %s %s %s gave %g, want %g", a, op, b, d->fval, want);
    ir_module_free(m);
}

Test(fold, f32_floordiv_and_mod_floor_like_python)
{
    /* values Python gives: 7.5 // -2 == -4.0, 7.5 % -2 == -0.5, ... */
    check_float_op("floordiv", "7.5", "2.0", 3.0f);
    check_float_op("floordiv", "7.5", "-2.0", -4.0f);
    check_float_op("floordiv", "-7.5", "2.0", -4.0f);
    check_float_op("floordiv", "-7.5", "-2.0", 3.0f);
    check_float_op("mod", "7.5", "2.0", 1.5f);
    check_float_op("mod", "7.5", "-2.0", -0.5f);
    check_float_op("mod", "-7.5", "2.0", 0.5f);
    check_float_op("mod", "-7.5", "-2.0", -1.5f);
    check_float_op("mod", "-0.25", "8.0", 7.75f);
}
