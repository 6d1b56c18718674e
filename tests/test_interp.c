/* test_interp.c: the interpreter against hand-computed values and plain C
 * references: every op, broadcasting, ragged edges (poisoned buffers),
 * loops with run-time bounds, nested ifs, early return, f16/bf16 rounding,
 * dot and dot_t, attention forward, atomic adds, argmax/argmin, cumsum and
 * reshape, and the argument checks. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"
#include "base/half.h"
#include "testutil.h"

static const int one_block[3] = {1, 1, 1};

static IrModule *parse_ok(const char *text)
{
    char err[512] = "";
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert(m, "parse failed: %s", err);
    return m;
}

static void run_ok(const IrFunc *f, const IrArg *args, int nargs, const int grid[3])
{
    char err[512] = "";
    cr_assert_eq(ir_interp(f, args, nargs, grid, err, sizeof err), 0, "%s", err);
}

static IrArg tensor1(void *data, int64_t n) { return (IrArg){.data = data, .dims = {n, 0}}; }
static IrArg tensor2(void *data, int64_t r, int64_t c) { return (IrArg){.data = data, .dims = {r, c}}; }

/* Every scalar and elementwise op, results stored into Y (f32) and I (i32). */
static const char *const ops_ir =
    "func ops kernel ops threads 32\n    params(Y: f32[16], I: i32[16], a: f32, k: i32) {\n"
    "  %1 = param a : f32\n  %2 = param k : i32\n  %3 = const 0 : i32\n  %4 = const -7 : i32\n"
    "  %5 = floordiv %4, %2 : i32\n  %6 = mod %4, %2 : i32\n  %7 = mul %4, %2 : i32\n"
    "  %8 = const 2147483647 : i32\n  %9 = add %8, %2 : i32\n  %10 = neg %4 : i32\n  %11 = abs %4 : i32\n"
    "  %12 = max %4, %2 : i32\n  %13 = min %4, %2 : i32\n  %14 = lt %4, %2 : bool\n  %15 = convert %14 : i32\n"
    "  %16 = const -2.5 : f32\n  %17 = convert %16 : i32\n  %18 = sub %4, %2 : i32\n"
    "  %19 = iota 0 : i32[8]\n  %20 = splat %5 : i32[8]\n  %21 = add %19, %20 : i32[8]\n"
    "  %22 = const 8 : i32\n  store I[%22], %21\n"
    "  %23 = exp %1 : f32\n  %24 = log %1 : f32\n  %25 = sqrt %1 : f32\n  %26 = rsqrt %1 : f32\n"
    "  %27 = exp2 %1 : f32\n  %28 = log2 %1 : f32\n  %29 = div %16, %1 : f32\n  %30 = floordiv %16, %1 : f32\n"
    "  %31 = mod %16, %1 : f32\n  %32 = abs %16 : f32\n  %33 = neg %1 : f32\n  %34 = max %16, %1 : f32\n"
    "  %35 = convert %2 : f32\n  %36 = ge %16, %1 : bool\n  %37 = select %36, %16, %1 : f32\n"
    "  %38 = not %36 : bool\n  %39 = and %38, %14 : bool\n  %40 = convert %39 : f32\n"
    "  %41 = splat %23 : f32[1]\n  store Y[%3], %41\n"
    "  %42 = const 1 : i32\n  %43 = splat %24 : f32[1]\n  store Y[%42], %43\n"
    "  %44 = const 2 : i32\n  %45 = splat %25 : f32[1]\n  store Y[%44], %45\n"
    "  %46 = const 3 : i32\n  %47 = splat %26 : f32[1]\n  store Y[%46], %47\n"
    "  %48 = const 4 : i32\n  %49 = splat %27 : f32[1]\n  store Y[%48], %49\n"
    "  %50 = const 5 : i32\n  %51 = splat %28 : f32[1]\n  store Y[%50], %51\n"
    "  %52 = const 6 : i32\n  %53 = splat %29 : f32[1]\n  store Y[%52], %53\n"
    "  %54 = const 7 : i32\n  %55 = splat %30 : f32[1]\n  store Y[%54], %55\n"
    "  %56 = splat %31 : f32[1]\n  store Y[%22], %56\n"
    "  %57 = const 9 : i32\n  %58 = splat %32 : f32[1]\n  store Y[%57], %58\n"
    "  %59 = const 10 : i32\n  %60 = splat %33 : f32[1]\n  store Y[%59], %60\n"
    "  %61 = const 11 : i32\n  %62 = splat %34 : f32[1]\n  store Y[%61], %62\n"
    "  %63 = const 12 : i32\n  %64 = splat %35 : f32[1]\n  store Y[%63], %64\n"
    "  %65 = const 13 : i32\n  %66 = splat %37 : f32[1]\n  store Y[%65], %66\n"
    "  %67 = const 14 : i32\n  %68 = splat %40 : f32[1]\n  store Y[%67], %68\n"
    "  %69 = splat %5 : i32[1]\n  store I[%3], %69\n  %70 = splat %6 : i32[1]\n  store I[%42], %70\n"
    "  %71 = splat %7 : i32[1]\n  store I[%44], %71\n  %72 = splat %9 : i32[1]\n  store I[%46], %72\n"
    "  %73 = splat %10 : i32[1]\n  store I[%48], %73\n  %74 = splat %12 : i32[1]\n  store I[%50], %74\n"
    "  %75 = splat %15 : i32[1]\n  store I[%52], %75\n  %76 = splat %17 : i32[1]\n  store I[%54], %76\n"
    "  return\n}\n";

Test(interp, every_scalar_op)
{
    IrModule *m = parse_ok(ops_ir);
    float y[16];
    int32_t iv[16];
    for (int i = 0; i < 16; i++) { y[i] = -999; iv[i] = -999; }
    IrArg args[4] = {tensor1(y, 16), tensor1(iv, 16), {.f = 2.0f}, {.i = 2}};
    run_ok(m->funcs[0], args, 4, one_block);
    cr_assert_eq(iv[0], -4);          /* -7 // 2 floors */
    cr_assert_eq(iv[1], 1);           /* -7 % 2 takes the divisor's sign */
    cr_assert_eq(iv[2], -14);
    cr_assert_eq(iv[3], INT32_MIN + 1); /* wraps */
    cr_assert_eq(iv[4], 7);
    cr_assert_eq(iv[5], 2);
    cr_assert_eq(iv[6], 1);
    cr_assert_eq(iv[7], -2);          /* -2.5 truncates toward zero */
    for (int i = 0; i < 8; i++) cr_assert_eq(iv[8 + i], i - 4);
    cr_assert_eq(y[0], expf(2.0f));
    cr_assert_eq(y[1], logf(2.0f));
    cr_assert_eq(y[2], sqrtf(2.0f));
    cr_assert_eq(y[3], 1.0f / sqrtf(2.0f));
    cr_assert_eq(y[4], 4.0f);
    cr_assert_eq(y[5], 1.0f);
    cr_assert_eq(y[6], -1.25f);
    cr_assert_eq(y[7], -2.0f);        /* floor(-1.25) */
    cr_assert_eq(y[8], 1.5f);         /* -2.5 mod 2 = 1.5, like Python */
    cr_assert_eq(y[9], 2.5f);
    cr_assert_eq(y[10], -2.0f);
    cr_assert_eq(y[11], 2.0f);
    cr_assert_eq(y[12], 2.0f);
    cr_assert_eq(y[13], 2.0f);        /* -2.5 >= 2 is false */
    cr_assert_eq(y[14], 1.0f);        /* not false and (-7 < 2) */
    cr_assert_eq(y[15], -999);
    ir_module_free(m);
}

/* A zero divisor: i32 // and % give 0 (the GPU's meaning, docs/language.md);
 * float // gives a / 0 and % NaN, as Python's rules extended. */
Test(interp, division_by_zero_gives_the_documented_results)
{
    IrModule *m = parse_ok(ops_ir);
    float y[16];
    int32_t iv[16];
    IrArg args[4] = {tensor1(y, 16), tensor1(iv, 16), {.f = 0.0f}, {.i = 0}};
    run_ok(m->funcs[0], args, 4, one_block);
    cr_assert_eq(iv[0], 0);           /* -7 // 0 */
    cr_assert_eq(iv[1], 0);           /* -7 % 0 */
    cr_assert_eq(y[6], -INFINITY);    /* -2.5 / 0.0 */
    cr_assert_eq(y[7], -INFINITY);    /* -2.5 // 0.0 */
    cr_assert(isnan(y[8]));           /* -2.5 % 0.0 */
    ir_module_free(m);
}

/* Broadcasting, transpose, reductions on 2-D tiles; a ragged 2-D window. */
static const char *const tiles_ir =
    "func tiles kernel tiles threads 32\n    params(X: f32[R, C], Y: f32[C, R], S: f32[R, 1], T: f32[1, C]) {\n"
    "  %1 = const 0 : i32\n  %2 = load X[%1, %1] : f32[4, 4]\n"
    "  %3 = iota 0 : i32[4, 1]\n  %4 = convert %3 : f32[4, 1]\n  %5 = broadcast %4 : f32[4, 4]\n"
    "  %6 = iota 0 : i32[4]\n  %7 = convert %6 : f32[4]\n  %8 = broadcast %7 : f32[4, 4]\n"
    "  %9 = const 10.0 : f32\n  %10 = splat %9 : f32[4, 4]\n  %11 = mul %5, %10 : f32[4, 4]\n"
    "  %12 = add %11, %8 : f32[4, 4]\n  %13 = add %12, %2 : f32[4, 4]\n  %14 = transpose %13 : f32[4, 4]\n"
    "  store Y[%1, %1], %14\n  %15 = reduce_sum %13, 1 : f32[4, 1]\n  store S[%1, %1], %15\n"
    "  %16 = reduce_max %13, 0 : f32[1, 4]\n  store T[%1, %1], %16\n  return\n}\n";

Test(interp, broadcast_transpose_reduce_and_ragged_windows)
{
    IrModule *m = parse_ok(tiles_ir);
    enum { R = 3, C = 2 };
    float x[R * C], y[C * R + 4], s[R + 4], t[C + 4];
    for (int i = 0; i < R * C; i++) x[i] = 0.5f * (float)i;
    for (int i = 0; i < C * R + 4; i++) y[i] = NAN;
    for (int i = 0; i < R + 4; i++) s[i] = NAN;
    for (int i = 0; i < C + 4; i++) t[i] = NAN;
    IrArg args[4] = {tensor2(x, R, C), tensor2(y, C, R), tensor2(s, R, 1), tensor2(t, 1, C)};
    run_ok(m->funcs[0], args, 4, one_block);
    /* v[i][j] = 10 i + j + x[i][j], x reading 0 outside the 3 x 2 tensor */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float v = 10.0f * (float)i + (float)j + (i < R && j < C ? x[i * C + j] : 0.0f);
            if (j < C && i < R) cr_assert_eq(y[j * R + i], v, "y[%d][%d]", j, i);
        }
    for (int i = R * C; i < C * R + 4; i++) cr_assert(isnan(y[i]), "wrote past Y's end");
    for (int i = 0; i < R; i++) {
        float sum = 0;
        for (int j = 0; j < 4; j++) sum += 10.0f * (float)i + (float)j + (j < C ? x[i * C + j] : 0.0f);
        cr_assert_eq(s[i], sum);
    }
    cr_assert(isnan(s[R]));
    for (int j = 0; j < C; j++) cr_assert_eq(t[j], 30.0f + (float)j, "t[%d] = %g", j, t[j]);
    cr_assert(isnan(t[C]));
    ir_module_free(m);
}

/* argmax, argmin, cumsum along both axes and reshapes, on a tile with ties
 * and NaNs, and an i32 one. */
static const char *const along_ir =
    "func along kernel along threads 32\n    params(X: f32[3, 4], I: i32[1, 4], RA: i32[3, 3], CA: i32[2, 4],\n"
    "    CS: f32[3, 4], CZ: f32[3, 4], V: f32[3], W: f32[3, 1], IS: i32[1, 4]) {\n"
    "  %1 = const 0 : i32\n  %2 = const 1 : i32\n  %3 = const 2 : i32\n  %4 = load X[%1, %1] : f32[3, 4]\n"
    "  %5 = argmax %4, 1 : i32[3, 1]\n  store RA[%1, %1], %5\n  %6 = argmin %4, 1 : i32[3, 1]\n  store RA[%1, %2], %6\n"
    "  %7 = load I[%1, %1] : i32[1, 4]\n  %8 = argmax %7, 1 : i32[1, 1]\n  store RA[%1, %3], %8\n"
    "  %9 = argmin %7, 1 : i32[1, 1]\n  store RA[%2, %3], %9\n"
    "  %10 = argmax %4, 0 : i32[1, 4]\n  store CA[%1, %1], %10\n  %11 = argmin %4, 0 : i32[1, 4]\n  store CA[%2, %1], %11\n"
    "  %12 = cumsum %4, 1 : f32[3, 4]\n  store CS[%1, %1], %12\n  %13 = cumsum %4, 0 : f32[3, 4]\n  store CZ[%1, %1], %13\n"
    "  %14 = reduce_min %4, 1 : f32[3, 1]\n  %15 = reshape %14 : f32[3]\n  store V[%1], %15\n"
    "  %16 = reshape %15 : f32[1, 3]\n  %17 = reshape %16 : f32[3, 1]\n  store W[%1, %1], %17\n"
    "  %18 = cumsum %7, 1 : i32[1, 4]\n  store IS[%1, %1], %18\n  return\n}\n";

Test(interp, argmax_argmin_cumsum_and_reshape)
{
    IrModule *m = parse_ok(along_ir);
    float x[12] = {1, 3, 3, 2, 5, NAN, 7, NAN, 1, 3, 0, 2}, cs[12], cz[12], v[3], w[3];
    int32_t in[4] = {2, -3, 2, 2147483647}, ra[9] = {0}, ca[8], is[4];
    IrArg args[9] = {tensor2(x, 3, 4), tensor2(in, 1, 4), tensor2(ra, 3, 3), tensor2(ca, 2, 4), tensor2(cs, 3, 4),
                     tensor2(cz, 3, 4), tensor1(v, 3), tensor2(w, 3, 1), tensor2(is, 1, 4)};
    run_ok(m->funcs[0], args, 9, one_block);
    /* ties: the smallest index; a NaN beats every number for both, the first NaN winning */
    int32_t want_ra[9] = {1, 0, 3, 1, 1, 1, 1, 2, 0};
    for (int i = 0; i < 9; i++)
        if (i != 8) cr_expect_eq(ra[i], want_ra[i], "RA[%d] = %d", i, ra[i]);
    int32_t want_ca[8] = {1, 1, 1, 1, 0, 1, 2, 1};
    for (int i = 0; i < 8; i++) cr_expect_eq(ca[i], want_ca[i], "CA[%d] = %d", i, ca[i]);
    float want_cs[12] = {1, 4, 7, 9, 5, NAN, NAN, NAN, 1, 4, 4, 6}, want_cz[12] = {1, 3, 3, 2, 6, NAN, 10, NAN, 7, NAN, 10, NAN};
    for (int i = 0; i < 12; i++) {
        cr_expect(isnan(want_cs[i]) ? isnan(cs[i]) : cs[i] == want_cs[i], "CS[%d] = %g", i, cs[i]);
        cr_expect(isnan(want_cz[i]) ? isnan(cz[i]) : cz[i] == want_cz[i], "CZ[%d] = %g", i, cz[i]);
    }
    /* row minima: 1, 5 (min ignores NaN), 0; through [3] -> [1, 3] -> [3, 1] unchanged */
    float want_v[3] = {1, 5, 0};
    for (int i = 0; i < 3; i++) cr_expect(v[i] == want_v[i] && w[i] == want_v[i], "V[%d] = %g, W[%d] = %g", i, v[i], i, w[i]);
    /* i32 prefix sums wrap */
    int32_t want_is[4] = {2, -1, 1, INT32_MIN};
    for (int i = 0; i < 4; i++) cr_expect_eq(is[i], want_is[i], "IS[%d] = %d", i, is[i]);
    ir_module_free(m);
}

Test(interp, loops_ifs_and_early_return)
{
    char *text = tu_read_file("tests/ir/control.ir");
    IrModule *m = parse_ok(text);
    float x[10];
    int32_t y[10];
    for (int n = 0; n <= 7; n++) {
        for (int i = 0; i < 10; i++) { x[i] = (float)i; y[i] = -1; }
        IrArg args[3] = {tensor1(x, 5), tensor1(y, 5), {.i = n}};
        run_ok(m->funcs[0], args, 3, one_block);
        if (n > 5) {    /* returned before any store */
            for (int i = 0; i < 10; i++) cr_assert(x[i] == (float)i && y[i] == -1);
            continue;
        }
        for (int i = 0; i < 5; i++) {
            cr_assert_eq(y[i], n * (n - 1) / 2, "n %d: y[%d] = %d", n, i, y[i]);
            cr_assert_eq(x[i], -(float)i);
        }
        for (int i = 5; i < 10; i++) cr_assert(x[i] == (float)i && y[i] == -1, "stored past the end");
    }
    ir_module_free(m);
    free(text);
}

Test(interp, nested_if_elif_else)
{
    /* y = 1 if k < 0 elif k == 0: 2 else 3, with the elif as an if in the else */
    IrModule *m = parse_ok(
        "func sel kernel sel threads 32\n    params(Y: i32[1], k: i32) {\n"
        "  %1 = param k : i32\n  %2 = const 0 : i32\n  %3 = lt %1, %2 : bool\n"
        "  %4 = if %3 : i32 {\n    %5 = const 1 : i32\n    yield %5\n  } else {\n"
        "    %6 = eq %1, %2 : bool\n    %7 = if %6 : i32 {\n      %8 = const 2 : i32\n      yield %8\n"
        "    } else {\n      %9 = const 3 : i32\n      yield %9\n    }\n    yield %7\n  }\n"
        "  %10 = splat %4 : i32[1]\n  store Y[%2], %10\n  return\n}\n");
    int32_t y;
    int want[3] = {1, 2, 3};
    for (int k = -1; k <= 1; k++) {
        IrArg args[2] = {tensor1(&y, 1), {.i = k}};
        run_ok(m->funcs[0], args, 2, one_block);
        cr_assert_eq(y, want[k + 1]);
    }
    ir_module_free(m);
}

Test(interp, swapping_yield_and_grid)
{
    /* a, b = b, a + b per iteration: Fibonacci, checking yields that swap; one element per block */
    IrModule *m = parse_ok(
        "func fib kernel fib threads 32\n    params(Y: i32[N]) {\n"
        "  %1 = block_id x : i32\n  %2 = block_id y : i32\n  %3 = grid_dim x : i32\n  %4 = mul %2, %3 : i32\n"
        "  %5 = add %4, %1 : i32\n  %6 = const 0 : i32\n  %7 = const 1 : i32\n"
        "  %8, %9 = for %10 = %6 to %5 step 1 iter(%11 = %6, %12 = %7) : i32, i32 {\n"
        "    %13 = add %11, %12 : i32\n    yield %12, %13\n  }\n"
        "  %14 = splat %8 : i32[1]\n  store Y[%5], %14\n  return\n}\n");
    int32_t y[12];
    IrArg args[1] = {tensor1(y, 12)};
    run_ok(m->funcs[0], args, 1, (int[3]){4, 3, 1});
    int32_t a = 0, b = 1;
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(y[i], a, "fib(%d)", i);
        int32_t c = a + b;
        a = b;
        b = c;
    }
    ir_module_free(m);
}

/* Each of 3 blocks adds 1 + bx + j (f32) to X[2 bx - 1 .. +3, bx - 1 .. +4]
 * and 2^31 - 1 (wrapping) to Y[bx - 1 .. +4]: overlapping windows, the first
 * and the last crossing the tensors' edges. */
static const char *const atomic_ir =
    "func acc kernel acc threads 32\n    params(X: f32[R, C], Y: i32[N]) {\n"
    "  %1 = block_id x : i32\n  %2 = const 2 : i32\n  %3 = const 1 : i32\n"
    "  %4 = mul %1, %2 : i32\n  %5 = sub %4, %3 : i32\n  %6 = sub %1, %3 : i32\n"
    "  %7 = iota 1 : i32[3, 4]\n  %8 = add %1, %3 : i32\n  %9 = splat %8 : i32[3, 4]\n"
    "  %10 = add %7, %9 : i32[3, 4]\n  %11 = convert %10 : f32[3, 4]\n"
    "  atomic_add X[%5, %6], %11\n"
    "  %12 = const 2147483647 : i32\n  %13 = splat %12 : i32[4]\n"
    "  atomic_add Y[%6], %13\n  return\n}\n";

Test(interp, atomic_adds_of_every_block_accumulate_inside_the_tensor)
{
    IrModule *m = parse_ok(atomic_ir);
    enum { R = 5, C = 6, N = 7, GUARD = 8 };
    float x[R * C + GUARD], want_x[R * C];
    int32_t y[N + GUARD], want_y[N];
    for (int i = 0; i < R * C + GUARD; i++) x[i] = i < R * C ? 0.25f * (float)i : NAN;
    for (int i = 0; i < N + GUARD; i++) y[i] = i < N ? i : -7;
    for (int i = 0; i < R * C; i++) want_x[i] = x[i];
    for (int i = 0; i < N; i++) want_y[i] = y[i];
    for (int bx = 0; bx < 3; bx++) {
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                int r = 2 * bx - 1 + i, c = bx - 1 + j;
                if (r >= 0 && r < R && c >= 0 && c < C) want_x[r * C + c] += (float)(1 + bx + j);
            }
        for (int j = 0; j < 4; j++) {
            int e = bx - 1 + j;
            if (e >= 0 && e < N) want_y[e] = (int32_t)((uint32_t)want_y[e] + 2147483647u);
        }
    }
    IrArg args[2] = {tensor2(x, R, C), tensor1(y, N)};
    run_ok(m->funcs[0], args, 2, (int[3]){3, 1, 1});
    for (int i = 0; i < R * C; i++) cr_assert_eq(x[i], want_x[i], "X[%d][%d] = %g, want %g", i / C, i % C, x[i], want_x[i]);
    for (int i = 0; i < N; i++) cr_assert_eq(y[i], want_y[i], "Y[%d] = %d, want %d", i, y[i], want_y[i]);
    for (int i = R * C; i < R * C + GUARD; i++) cr_assert(isnan(x[i]), "added past X's end");
    for (int i = N; i < N + GUARD; i++) cr_assert_eq(y[i], -7, "added past Y's end");
    cr_assert_eq(y[1], (int32_t)(1u + 3u * 2147483647u), "Y[1] gets three adds, wrapping");
    ir_module_free(m);
}

Test(interp, f16_and_bf16_rounding)
{
    IrModule *m = parse_ok(
        "func rnd kernel rnd threads 32\n    params(X: f32[4], H: f16[4], B: bf16[4], G: f16[4]) {\n"
        "  %1 = const 0 : i32\n  %2 = load X[%1] : f32[4]\n  %3 = convert %2 : f16[4]\n  store H[%1], %3\n"
        "  %4 = convert %2 : bf16[4]\n  store B[%1], %4\n  %5 = load H[%1] : f16[4]\n"
        "  %6 = add %5, %5 : f16[4]\n  store G[%1], %6\n  return\n}\n");
    float x[4] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f, 65520.0f};
    uint16_t h[4], b[4], g[4];
    IrArg args[4] = {tensor1(x, 4), tensor1(h, 4), tensor1(b, 4), tensor1(g, 4)};
    run_ok(m->funcs[0], args, 4, one_block);
    cr_assert_eq(h[0], 0x3c00);       /* 1 + 2^-11 is a tie: to even, 1.0 */
    cr_assert_eq(h[1], 0x3c02);       /* 1 + 3 * 2^-11: to even, up */
    cr_assert_eq(h[2], 0x3c04);
    cr_assert_eq(h[3], 0x7c00);       /* past the largest f16: inf */
    cr_assert_eq(b[0], 0x3f80);
    cr_assert_eq(b[2], 0x3f80);       /* 1 + 2^-8 is a bf16 tie: to even */
    cr_assert_eq(g[1], 0x4002);       /* f16 + f16 computed in f32, rounded to f16 */
    ir_module_free(m);
}

/* tests/ir/types.ir: saturation into i8, wrapping into u8, an exact i8 dot. */
Test(interp, narrow_integers_saturate_wrap_and_dot_exactly)
{
    char *text = tu_read_file("tests/ir/types.ir");
    IrModule *m = parse_ok(text);
    float x[4] = {300.5f, -1000.0f, -1.9f, NAN};
    int8_t a[4 * 8], b[8 * 4], s[4];
    uint8_t u[4];
    int32_t c[16];
    for (int i = 0; i < 32; i++) a[i] = b[i] = -128;
    a[5] = 127;   /* row 0, column 5, meets B's row 5 */
    IrArg args[6] = {tensor1(x, 4), tensor2(a, 4, 8), tensor2(b, 8, 4), tensor1(s, 4), tensor1(u, 4), tensor2(c, 4, 4)};
    run_ok(m->funcs[0], args, 6, one_block);
    cr_assert(s[0] == 127 && s[1] == -128 && s[2] == -1 && s[3] == 0, "%d %d %d %d", s[0], s[1], s[2], s[3]);
    cr_assert(u[0] == 44 && u[1] == 24 && u[2] == 255 && u[3] == 0, "%d %d %d %d", u[0], u[1], u[2], u[3]);
    cr_assert_eq(c[5], 8 * 16384 - 3);
    cr_assert_eq(c[1], 7 * 16384 - 127 * 128 - 3);
    ir_module_free(m);
    free(text);
}

/* tests/ir/fp8.ir: saturation and rounding into e4m3 and e5m2, an exact
 * widening to f16, a mixed fp8 dot in f32. */
Test(interp, fp8_rounds_saturates_and_dots_in_f32)
{
    char *text = tu_read_file("tests/ir/fp8.ir");
    IrModule *m = parse_ok(text);
    float x[4] = {1000.0f, -0.1f, 17.0f, NAN};
    uint8_t a[4 * 8], b[8 * 4], e[4], f8[4];
    uint16_t h[4];
    float c[16];
    for (int i = 0; i < 32; i++) a[i] = 0x38, b[i] = 0x3c;   /* 1.0 in each */
    a[1] = 0x40;   /* 2 at row 0, column 1, meets B's row 1 */
    b[4] = 0x7b;   /* 57344 at row 1, column 0 */
    IrArg args[7] = {tensor1(x, 4), tensor2(a, 4, 8), tensor2(b, 8, 4), tensor1(e, 4), tensor1(f8, 4), tensor1(h, 4), tensor2(c, 4, 4)};
    run_ok(m->funcs[0], args, 7, one_block);
    /* the last store wrote 448 over E; F holds e5m2 of X: 1024, -0.09375, 16 (a tie, to even), NaN */
    cr_assert(e[0] == 0x7e && e[3] == 0x7e, "%x %x", e[0], e[3]);
    cr_assert(f8[0] == 0x64 && f8[1] == 0xae && f8[2] == 0x4c && f8[3] == 0x7f, "%x %x %x %x", f8[0], f8[1], f8[2], f8[3]);
    cr_assert(h[0] == 0x6400 && h[1] == 0xae00 && h[2] == 0x4c00 && (h[3] & 0x7c00) == 0x7c00 && (h[3] & 0x3ff), "%x %x", h[0], h[3]);
    cr_assert_float_eq(c[0], 2.0f * 57344.0f + 7.0f - 0.5f, 0);
    cr_assert_float_eq(c[1], 2.0f + 7.0f - 0.5f, 0);
    cr_assert_float_eq(c[5], 7.5f, 0);
    ir_module_free(m);
    free(text);
}

/* tests/ir/i64.ir: an i64 parameter, sums past 2^31, floor division by
 * -3, a saturating conversion from f32, a transpose and an atomic add. */
Test(interp, i64_computes_in_64_bits)
{
    char *text = tu_read_file("tests/ir/i64.ir");
    IrModule *m = parse_ok(text);
    int64_t x[8] = {1, 2, 3, 4, 5, 6, 7, INT64_MAX - 10}, y[8], s[4], a[1] = {100};
    float f[4] = {-2.5f, 3.0e19f, NAN, 1.0e10f};
    IrArg args[6] = {tensor2(x, 4, 2), tensor1(f, 4), tensor2(y, 2, 4), tensor1(s, 4), tensor1(a, 1), {.l = 5000000000}};
    run_ok(m->funcs[0], args, 6, one_block);
    /* (x + n) // -3 floors: (1 + 5e9) // -3 = -1666666667 (5000000001 / 3 = 1666666667 exactly) */
    cr_assert_eq(y[0], -1666666667);
    cr_assert_eq(y[1], (int64_t)-1666666668);        /* x[2, 0] = 3: 5000000003 / 3 = 1666666667.67, floored down */
    /* x[3, 1] + n wraps past INT64_MAX to -9223372031854775819, whose // -3 floors */
    cr_assert_eq(y[7], 3074457343951591939);
    cr_assert(s[0] == -2 && s[1] == INT64_MAX && s[2] == 0 && s[3] == 10000000000, "%lld %lld %lld %lld",
              (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3]);
    /* the largest row sum is 7 + INT64_MAX - 10, added to 100 */
    cr_assert_eq(a[0], INT64_MIN + 96);
    ir_module_free(m);
    free(text);
}

static const char *const dot_ir =
    "func d kernel d threads 32\n    params(A: f16[M, K], B: f16[K, N], BT: f16[N, K], C: f32[M, N], CT: f32[M, N]) {\n"
    "  %1 = const 0 : i32\n  %2 = load A[%1, %1] : f16[24, 40]\n  %3 = load B[%1, %1] : f16[40, 16]\n"
    "  %4 = load BT[%1, %1] : f16[16, 40]\n  %5 = const 0.5 : f32\n  %6 = splat %5 : f32[24, 16]\n"
    "  %7 = dot %2, %3, %6 : f32[24, 16]\n  store C[%1, %1], %7\n"
    "  %8 = dot_t %2, %4, %6 : f32[24, 16]\n  store CT[%1, %1], %8\n  return\n}\n";

Test(interp, dot_and_dot_t_match_a_plain_loop)
{
    enum { M = 24, K = 40, N = 16 };
    IrModule *m = parse_ok(dot_ir);
    static uint16_t a[M * K], b[K * N], bt[N * K];
    static float c[M * N], ct[M * N];
    srand(7);
    for (int i = 0; i < M * K; i++) a[i] = ph_f32_to_f16((float)rand() / RAND_MAX - 0.5f);
    for (int i = 0; i < K * N; i++) b[i] = ph_f32_to_f16((float)rand() / RAND_MAX - 0.5f);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) bt[j * K + k] = b[k * N + j];
    IrArg args[5] = {tensor2(a, M, K), tensor2(b, K, N), tensor2(bt, N, K), tensor2(c, M, N), tensor2(ct, M, N)};
    run_ok(m->funcs[0], args, 5, one_block);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = 0.5f;
            for (int k = 0; k < K; k++) want += ph_f16_to_f32(a[i * K + k]) * ph_f16_to_f32(b[k * N + j]);
            cr_assert_eq(c[i * N + j], want, "c[%d][%d]", i, j);
            cr_assert_eq(ct[i * N + j], want, "ct[%d][%d]", i, j);
        }
    ir_module_free(m);
}

/* The attention forward kernel of tests/ir/attn_fwd.ir against a
 * double-precision reference: the output o and each row's log-sum-exp
 * lse = max + log(sum of exp(score - max)), which the backward pass reads. */
static void attention_reference(const uint16_t *q, const uint16_t *k, const uint16_t *v, int heads, int n, int d,
                                float scale, bool causal, double *o, double *lse)
{
    double *s = malloc(sizeof *s * (size_t)n);
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < n; i++) {
            size_t row = (size_t)h * n + i;
            const uint16_t *qi = q + row * d;
            double mx = -1e300, sum = 0;
            int end = causal ? i + 1 : n;
            for (int j = 0; j < end; j++) {
                const uint16_t *kj = k + ((size_t)h * n + j) * d;
                double dotv = 0;
                for (int e = 0; e < d; e++) dotv += (double)ph_f16_to_f32(qi[e]) * ph_f16_to_f32(kj[e]);
                s[j] = dotv * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (int e = 0; e < d; e++) o[row * d + e] = 0;
            for (int j = 0; j < end; j++) {
                double p = exp(s[j] - mx);
                sum += p;
                for (int e = 0; e < d; e++) o[row * d + e] += p * ph_f16_to_f32(v[((size_t)h * n + j) * d + e]);
            }
            for (int e = 0; e < d; e++) o[row * d + e] /= sum;
            lse[row] = mx + log(sum);
        }
    free(s);
}

/* Both outputs are poisoned (NaN) before each run, so an element the kernel
 * leaves unwritten fails. o is f16: each element within 2e-3 |ref| (four
 * f16 half-ulps) + 2e-3 rms(o), four times the largest error seen here
 * beyond 2e-3 |ref|; lse is f32 and of size ~4: within 1e-5, against
 * errors below 5e-7. A key dropped from the sums is an error of ~1/64 in
 * lse and ~1e-2 in o. */
Test(interp, attention_forward_matches_reference)
{
    enum { H = 2, NCTX = 64, D = 16, ROWS = H * NCTX };
    char *text = tu_read_file("tests/ir/attn_fwd.ir");
    IrModule *m = parse_ok(text);
    static uint16_t q[ROWS * D], k[ROWS * D], v[ROWS * D], o[ROWS * D];
    static float l[ROWS];
    static double want[ROWS * D], want_lse[ROWS];
    srand(3);
    for (int i = 0; i < ROWS * D; i++) {
        q[i] = ph_f32_to_f16(2.0f * (float)rand() / RAND_MAX - 1.0f);
        k[i] = ph_f32_to_f16(2.0f * (float)rand() / RAND_MAX - 1.0f);
        v[i] = ph_f32_to_f16(2.0f * (float)rand() / RAND_MAX - 1.0f);
    }
    for (int causal = 0; causal <= 1; causal++) {
        for (int i = 0; i < ROWS * D; i++) o[i] = 0x7e5a;   /* an f16 NaN */
        for (int i = 0; i < ROWS; i++) l[i] = NAN;
        IrArg args[8] = {tensor2(q, ROWS, D), tensor2(k, ROWS, D), tensor2(v, ROWS, D), tensor2(o, ROWS, D),
                         tensor2(l, ROWS, 1), {.i = NCTX}, {.f = 0.5f}, {.i = causal}};
        run_ok(m->funcs[0], args, 8, (int[3]){NCTX / 16, H, 1});
        attention_reference(q, k, v, H, NCTX, D, 0.5f, causal, want, want_lse);
        double rms = 0;
        for (int i = 0; i < ROWS * D; i++) rms += want[i] * want[i];
        rms = sqrt(rms / (ROWS * D));
        for (int i = 0; i < ROWS * D; i++) {
            double got = ph_f16_to_f32(o[i]), tol = 2e-3 * fabs(want[i]) + 2e-3 * rms;
            cr_assert(fabs(got - want[i]) <= tol, "causal %d: o[%d] = %g, want %g (within %.3g)", causal, i,
                      got, want[i], tol);
        }
        for (int i = 0; i < ROWS; i++)
            cr_assert(fabs(l[i] - want_lse[i]) <= 1e-5, "causal %d: lse[%d] = %.9g, want %.9g", causal, i,
                      l[i], want_lse[i]);
    }
    ir_module_free(m);
    free(text);
}

/* ---- argument checks ---- */

static void refused(const IrFunc *f, const IrArg *args, int nargs, const int grid[3], const char *want)
{
    char err[512] = "";
    cr_assert_neq(ir_interp(f, args, nargs, grid, err, sizeof err), 0, "ran; wanted: %s", want);
    cr_assert_str_eq(err, want);
}

Test(interp, argument_checks)
{
    char *text = tu_read_file("tests/ir/attn_fwd.ir");
    IrModule *m = parse_ok(text);
    const IrFunc *f = m->funcs[0];
    static uint16_t buf[64 * 16 * 2];
    static float lb[128];
    IrArg good[8] = {tensor2(buf, 64, 16), tensor2(buf, 64, 16), tensor2(buf, 64, 16), tensor2(buf, 64, 16),
                     tensor2(lb, 64, 1), {.i = 64}, {.f = 1}, {.i = 0}};
    IrArg a[8];
    refused(f, good, 7, one_block, "kernel 'attn_fwd' takes 8 arguments, got 7");
    memcpy(a, good, sizeof a);
    a[1].data = NULL;
    refused(f, a, 8, one_block, "kernel 'attn_fwd': tensor argument 'K' has no data (a null pointer)");
    memcpy(a, good, sizeof a);
    a[0].dims[0] = 0;
    refused(f, a, 8, one_block, "kernel 'attn_fwd': argument 'Q' has dim 0 = 0; dims must be between 1 and 2147483647");
    memcpy(a, good, sizeof a);
    a[2].dims[0] = 48;
    refused(f, a, 8, one_block, "kernel 'attn_fwd': dim 'R' is 64 in 'Q' but 48 in 'V'; tensors sharing a dim name must agree");
    memcpy(a, good, sizeof a);
    a[4].dims[1] = 2;
    refused(f, a, 8, one_block, "kernel 'attn_fwd': argument 'L' must have dim 1 = 1, has 2");
    memcpy(a, good, sizeof a);
    for (int i = 0; i < 4; i++) a[i].dims[1] = 32;
    refused(f, a, 8, one_block, "kernel 'attn_fwd': config 'attn_fwd__D_16__BR_16__BC_16' specializes dim 'D' = 16 "
                                "but 'Q' has 32; this config is not eligible for these arguments");
    memcpy(a, good, sizeof a);
    for (int i = 0; i < 5; i++) a[i].dims[0] = 60;
    refused(f, a, 8, one_block, "kernel 'attn_fwd': dim 'R' = 60 is not a multiple of 16 (BR), as @ph.aligned promises");
    refused(f, good, 8, (int[3]){1, 0, 1}, "kernel 'attn_fwd': grid (1, 0, 1) must have every entry >= 1");
    run_ok(f, good, 8, one_block);
    ir_module_free(m);
    free(text);
}

Test(interp, refuses_malformed_ir)
{
    IrModule *m = parse_ok("func f kernel f threads 32\n    params() {\n  %1 = const 1 : i32\n}\n");
    char err[512] = "";
    cr_assert_neq(ir_interp(m->funcs[0], NULL, 0, one_block, err, sizeof err), 0);
    cr_assert(strstr(err, "malformed IR") && strstr(err, "must end with return"), "%s", err);
    ir_module_free(m);
}
