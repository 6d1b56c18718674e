/* test_fold.c: the fold pass against the interpreter and against C. Each
 * case is a scalar op on two constants, written in the IR text form, whose
 * result is stored: fold must turn the op into the constant C computes,
 * and the interpreter, run on the unfolded function, must store the same. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "base/half.h"
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
    IrArg arg = {.data = &x, .dims = {1, 0}};
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

/* The bits of an f32; every NaN as the quiet NaN the three sides give. */
static uint32_t f32_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return isnan(v) ? 0x7fc00000u : u;
}

/* Runs OP on two f32 constants unfolded, then folds it (a nonzero divisor
 * must fold) and runs it again: both runs and the constant give want's
 * bits, so a sign of zero counts and a NaN must be the quiet NaN. */
static void check_float_op(const char *op, float a, float b, float want)
{
    char ta[64], tb[64];
    number_text(ta, sizeof ta, "f32", a);
    number_text(tb, sizeof tb, "f32", b);
    IrModule *m = binary_program(op, "f32", ta, tb, "f32", "f32");
    IrFunc *f = m->funcs[0];
    uint32_t bits = run_one(f);
    cr_expect_eq(bits, f32_bits(want), "interpreter: %a %s %a gave %a (0x%08x), want %a", a, op, b,
                 ph_bits_f32(bits), bits, want);
    ir_fold(f);
    const IrOp *d = f->values[3].def;
    if (b != 0) {
        cr_expect(d->kind == OP_CONST, "%a %s %a not folded", a, op, b);
        if (d->kind == OP_CONST)
            cr_expect_eq(f32_bits((float)d->fval), f32_bits(want), "fold: %a %s %a gave %a, want %a", a, op, b,
                         d->fval, want);
    }
    bits = run_one(f);
    cr_expect_eq(bits, f32_bits(want), "folded, run: %a %s %a gave %a, want %a", a, op, b, ph_bits_f32(bits), want);
    ir_module_free(m);
}

/* a, b, a // b and a % b as Python computes them on a and b widened to
 * float (a double), rounded to f32 (python3: ctypes.c_float(a // b)); a
 * zero divisor, where Python raises, gives a / b and NaN. */
static const struct { float a, b, quot, rem; } float_divmods[] = {
    {0x1.ep+2f, 0x1p+1f, 0x1.8p+1f, 0x1.8p+0f},
    {0x1.ep+2f, -0x1p+1f, -0x1p+2f, -0x1p-1f},
    {-0x1.ep+2f, 0x1p+1f, -0x1p+2f, 0x1p-1f},
    {-0x1.ep+2f, -0x1p+1f, 0x1.8p+1f, -0x1.8p+0f},
    {-0x1p-2f, 0x1p+3f, -0x1p+0f, 0x1.fp+2f},
    {0x1p+0f, 0x1.99999ap-4f, 0x1.2p+3f, 0x1.999996p-4f},
    {-0x1p+0f, 0x1.99999ap-4f, -0x1.4p+3f, 0x1p-26f},
    {0x1p+0f, -0x1.99999ap-4f, -0x1.4p+3f, -0x1p-26f},
    {0x1.333334p-2f, 0x1.99999ap-4f, 0x1.8p+1f, 0x1p-27f},
    {0x1.4p+2f, 0x1.666666p-1f, 0x1.cp+2f, 0x1.9999bp-4f},
    {-0x1.8p+2f, 0x1.8p+1f, -0x1p+1f, 0.0f},
    {0x1.8p+2f, -0x1.8p+1f, -0x1p+1f, -0.0f},
    {0x1.8p+2f, 0x1.8p+1f, 0x1p+1f, 0.0f},
    {-0x1.8p+2f, -0x1.8p+1f, 0x1p+1f, -0.0f},
    {0.0f, -0x1p+0f, -0.0f, -0.0f},
    {-0.0f, 0x1p+0f, -0.0f, 0.0f},
    {-0.0f, -0x1p+0f, 0.0f, -0.0f},
    {0.0f, 0x1p+0f, 0.0f, 0.0f},
    {0x1.93e594p+99f, 0x1.8p+1f, 0x1.0d43b8p+98f, 0.0f},
    {-0x1.93e594p+99f, 0x1.8p+1f, -0x1.0d43b8p+98f, 0.0f},
    {0x1.5af1d8p+66f, 0x1.333334p-2f, 0x1.211edep+68f, 0x1.93b64p-5f},
    {0x1.c363ccp+127f, 0x1.b38fb8p-127f, INFINITY, 0x1.8513ep-128f},
    {-0x1.c363ccp+127f, 0x1.30e49cp-127f, -INFINITY, 0x1.ee995p-129f},
    {0x1.fffffep+127f, 0x1p-149f, INFINITY, 0.0f},
    {0x1.fffffep+127f, -0x1p-148f, -INFINITY, -0.0f},
    {0x1.2ced32p+126f, 0x1.b38fb8p-127f, INFINITY, 0x1.a3d838p-127f},
    {0x1.8p+30f, 0x1.8p+1f, 0x1p+29f, 0.0f},
    {0x1.7ffffep+30f, 0x1.8p+1f, 0x1.fffffep+28f, 0x1p+0f},
    {0x1.fffffep+23f, 0x1.000002p+0f, 0x1.fffffap+23f, 0x1.8p-22f},
    {0x1p+29f, 0x1.000002p+0f, 0x1.fffffcp+28f, 0x1p-17f},
    {-0x1.4484cp-100f, 0x1.93e594p+99f, -0x1p+0f, 0x1.93e594p+99f},
    {0x1.4484cp-100f, -0x1.93e594p+99f, -0x1p+0f, -0x1.93e594p+99f},
    {0x1.4484cp-100f, 0x1.93e594p+99f, 0.0f, 0x1.4484cp-100f},
    {0x1.16c2p-133f, 0x1.4e84p-135f, 0x1.8p+1f, 0x1.bdfp-137f},
    {-0x1.cp-147f, 0x1p-149f, -0x1.cp+2f, 0.0f},
    {0x1p+0f, 0x1.16c2p-133f, INFINITY, 0x1.78ep-137f},
    {0x1.b38fb8p-128f, 0x1p-149f, 0x1.b38fb8p+21f, 0.0f},
    {0x1.16c2p-133f, -0x1p+0f, -0x1p+0f, -0x1p+0f},
    {-0x1.16c2p-133f, 0x1p+0f, -0x1p+0f, 0x1p+0f},
    {0x1p+0f, INFINITY, 0.0f, 0x1p+0f},
    {-0x1p+0f, INFINITY, -0x1p+0f, INFINITY},
    {0x1p+0f, -INFINITY, -0x1p+0f, -INFINITY},
    {-0x1p+0f, -INFINITY, 0.0f, -0x1p+0f},
    {0.0f, INFINITY, 0.0f, 0.0f},
    {-0.0f, INFINITY, -0.0f, 0.0f},
    {0.0f, -INFINITY, -0.0f, -0.0f},
    {INFINITY, 0x1p+1f, NAN, NAN},
    {-INFINITY, 0x1p+1f, NAN, NAN},
    {INFINITY, INFINITY, NAN, NAN},
    {NAN, 0x1p+0f, NAN, NAN},
    {0x1p+0f, NAN, NAN, NAN},
    {0x1p+0f, 0.0f, INFINITY, NAN},
    {-0x1p+0f, 0.0f, -INFINITY, NAN},
    {0x1p+0f, -0.0f, -INFINITY, NAN},
    {0.0f, 0.0f, NAN, NAN},
    {INFINITY, 0.0f, INFINITY, NAN},
    {NAN, 0.0f, NAN, NAN},
};

Test(fold, f32_floordiv_and_mod_floor_like_python)
{
    for (size_t i = 0; i < sizeof float_divmods / sizeof *float_divmods; i++) {
        float a = float_divmods[i].a, b = float_divmods[i].b;
        check_float_op("floordiv", a, b, float_divmods[i].quot);
        check_float_op("mod", a, b, float_divmods[i].rem);
    }
}

/* ---- x + dot(a, b, 0) -> dot(a, b, x) ---- */

static const IrOp *def_of(const IrFunc *f, ValueId v) { return f->values[v].def; }

/* %7 sums a dot into the carried %5: fused. %11 + %9: %9's dot has a second
 * use. %14 + %12: %12's dot accumulates 1s already. %17 + %16: %17 is
 * defined after the dot, which cannot take it. */
Test(fold, an_add_of_a_dot_accumulates_in_the_dot)
{
    const char *text =
        "func f kernel f threads 128\n"
        "    params(A: f32[4, 4], B: f32[4, 4], C: f32[4, 4]) {\n"
        "  %1 = const 0 : i32\n"
        "  %2 = const 4 : i32\n"
        "  %3 = const 0.0 : f32\n"
        "  %4 = splat %3 : f32[4, 4]\n"
        "  %20 = load A[%1, %1] : f32[4, 4]\n"
        "  %21 = load B[%1, %1] : f32[4, 4]\n"
        "  %22 = for %23 = %1 to %2 step 1 iter(%5 = %4) : f32[4, 4] {\n"
        "    %6 = dot %20, %21, %4 : f32[4, 4]\n"
        "    %7 = add %5, %6 : f32[4, 4]\n"
        "    yield %7\n"
        "  }\n"
        "  %9 = dot %20, %21, %4 : f32[4, 4]\n"
        "  %10 = mul %9, %9 : f32[4, 4]\n"
        "  %11 = add %10, %9 : f32[4, 4]\n"
        "  %30 = const 1.0 : f32\n"
        "  %31 = splat %30 : f32[4, 4]\n"
        "  %12 = dot %20, %21, %31 : f32[4, 4]\n"
        "  %14 = add %12, %11 : f32[4, 4]\n"
        "  %16 = dot %20, %21, %4 : f32[4, 4]\n"
        "  %17 = mul %14, %22 : f32[4, 4]\n"
        "  %18 = add %17, %16 : f32[4, 4]\n"
        "  store C[%1, %1], %18\n"
        "  return\n"
        "}\n";
    char err[512];
    IrModule *m = ir_parse(text, err, sizeof err), *ref = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    IrFunc *f = m->funcs[0];
    ir_fold(f);
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    ir_dce(f);
    const IrOp *loop = NULL, *store = NULL;
    for (int i = 0; i < f->body->nops; i++) {
        if (f->body->ops[i]->kind == OP_FOR) loop = f->body->ops[i];
        if (f->body->ops[i]->kind == OP_STORE) store = f->body->ops[i];
    }
    const IrOp *y = loop->body->ops[loop->body->nops - 1];
    const IrOp *fused = def_of(f, y->args[0]);
    cr_expect(fused->kind == OP_DOT && fused->args[2] == loop->body->args[1], "the loop's dot accumulates the carried value");
    cr_expect_eq(loop->body->nops, 2, "dot and yield: the add is gone");
    const IrOp *last = def_of(f, store->args[2]);
    cr_expect(last->kind == OP_BINARY && last->sub == BIN_ADD, "the dot before %%17 keeps its add");
    const IrOp *d14 = def_of(f, def_of(f, last->args[0])->args[0]);
    cr_expect(d14->kind == OP_BINARY && d14->sub == BIN_ADD, "a dot with its own accumulator keeps its add");
    const IrOp *d11 = def_of(f, d14->args[1]);
    cr_expect(d11->kind == OP_BINARY && d11->sub == BIN_ADD, "a dot used twice keeps its add");
    /* the same numbers (small integers: every sum is exact in any order) */
    float a[16], b[16], c1[16], c2[16];
    for (int i = 0; i < 16; i++) { a[i] = (float)(i % 5 - 2); b[i] = (float)(i % 3 - 1); c1[i] = c2[i] = -9.0f; }
    int grid[3] = {1, 1, 1};
    IrArg args1[3] = {{.data = a, .dims = {4, 4}}, {.data = b, .dims = {4, 4}}, {.data = c1, .dims = {4, 4}}};
    IrArg args2[3] = {{.data = a, .dims = {4, 4}}, {.data = b, .dims = {4, 4}}, {.data = c2, .dims = {4, 4}}};
    cr_assert_eq(ir_interp(ref->funcs[0], args1, 3, grid, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ir_interp(f, args2, 3, grid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 16; i++) cr_expect_eq(c2[i], c1[i], "element %d", i);
    ir_module_free(m);
    ir_module_free(ref);
}
