/* test_cpusim_math.c: ph.tanh, ph.erf, ph.sigmoid, ph.pow and ph.fma from
 * source to generated code. A kernel per op runs on the CPU executor and in
 * the interpreter over thousands of arguments (ordinary ones in several
 * ranges, the special values, the edges of the code generator's formulas);
 * every element must agree within the accuracy docs/language.md states for
 * the generated code when exp2 and log2 are exact, which the executor's are
 * (tanh 3 ulps, erf 2, sigmoid and pow as their exp2's argument grows), a
 * special value exactly, a subnormal result flushed to zero as on the GPU.
 * fma must be rounded once: bit for bit C's fmaf, on operands whose product
 * and sum rounded apart give another value. The edge cases one by one are
 * tests/test_scalarops.c's. */
#include "simharness.h"
#include "driver/targets.h"
#include "testutil.h"

#define B 256

static const char SOURCE[] =
    "import phobos.lang as ph\n\n"
    "@ph.kernel\n"
    "def smooth(X: ph.tensor[ph.f32][N], T: ph.tensor[ph.f32][N], E: ph.tensor[ph.f32][N], S: ph.tensor[ph.f32][N]):\n"
    "    i0: ph.let = ph.ctx.block.x * 256\n"
    "    x: ph.let = X[i0:+256]\n"
    "    T[i0:+256] = ph.tanh(x)\n"
    "    E[i0:+256] = ph.erf(x)\n"
    "    S[i0:+256] = ph.sigmoid(x)\n\n"
    "@ph.kernel\n"
    "def power(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], P: ph.tensor[ph.f32][N]):\n"
    "    i0: ph.let = ph.ctx.block.x * 256\n"
    "    P[i0:+256] = ph.pow(X[i0:+256], Y[i0:+256])\n\n"
    "@ph.kernel\n"
    "def fused(A: ph.tensor[ph.f32][N], Bt: ph.tensor[ph.f32][N], C: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N],\n"
    "          W: ph.tensor[ph.f32][N], s: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * 256\n"
    "    a: ph.let = A[i0:+256]\n"
    "    Z[i0:+256] = ph.fma(a, Bt[i0:+256], C[i0:+256])\n"
    "    W[i0:+256] = ph.fma(a, s, -1)\n";

static uint64_t seed = 0x243f6a8885a308d3ull;
static double unit(void)
{
    seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
    return (double)(seed >> 11) / 9007199254740992.0;
}

/* The size of one ulp of the f32 value v (of the least subnormal below 2^-126). */
static double ulp_of(double v)
{
    int e;
    frexp(fabs(v), &e);
    return ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
}

/* got against the interpreter's want within tol ulps; special values, zeros'
 * signs included, exactly; a subnormal want may be flushed to zero. */
static bool within(double got, double want, double tol)
{
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (!isfinite(want) || want == 0) return got == want && signbit(got) == signbit(want);
    if (fabs(want) < 0x1p-126 && got == 0) return true;
    return fabs(got - want) <= tol * ulp_of(want);
}

typedef struct { const char *name; int n; float *data[6]; float s; } Run;

/* Runs kernel r->name over r->n elements (a multiple of B) both ways:
 * r->data holds its tensors in parameter order, the outputs of the
 * executor; want[] receives the interpreter's copies. */
static void run_both(const IrModule *m, cpusim *sim, Run *r, float *want[6])
{
    const IrFunc *f = driver_find_kernel(m, r->name);
    cr_assert_not_null(f);
    IrArg iargs[8] = {0};
    ph_arg sargs[8];
    for (int i = 0; i < f->nparams; i++) {
        if (!f->params[i].is_tensor) {
            iargs[i].f = r->s;
            sargs[i] = ph_f32(r->s);
            continue;
        }
        want[i] = malloc(sizeof(float) * (size_t)r->n);
        memcpy(want[i], r->data[i], sizeof(float) * (size_t)r->n);
        iargs[i].data = want[i];
        iargs[i].dims[0] = r->n;
        sargs[i] = ph_tensor1((ph_devptr)(uintptr_t)r->data[i], r->n);
    }
    char err[512];
    unsigned grid[3] = {(unsigned)(r->n / B), 1, 1};
    cr_assert_eq(cpusim_launch(sim, f->name, grid, sargs, f->nparams, err, sizeof err), PH_OK, "%s", err);
    int igrid[3] = {r->n / B, 1, 1};
    cr_assert_eq(ir_interp(f, iargs, f->nparams, igrid, err, sizeof err), 0, "%s", err);
}

static const IrModule *module(cpusim **sim)
{
    static IrModule *m;
    char *diags = NULL;
    if (!m) m = tu_compile("math.ph", SOURCE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags ? diags : "");
    free(diags);
    *sim = load(m);
    return m;
}

static float *floats(int n)
{
    float *p = calloc((size_t)n, sizeof(float));
    cr_assert_not_null(p);
    return p;
}

/* Arguments for tanh, erf and sigmoid: special values, the formulas'
 * switch points, then ranges from the subnormals to the saturation. */
static void smooth_args(float *x, int n)
{
    static const float fixed[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 0x1p-149f, -0x1p-130f, 1e-20f, 0.55f,
                                  0x1.19999ap-1f, -0x1.199998p-1f, 1.0f, 0x1.fffffep-1f, -1.0f, 3.92f, 4.0f, 4.5f,
                                  9.0f, -9.1f, 20.0f, -80.0f, -88.0f, -89.0f, -104.0f, 88.0f};
    int k = 0;
    for (; k < (int)(sizeof fixed / sizeof *fixed); k++) x[k] = fixed[k];
    static const double span[] = {1e-6, 0.6, 1.2, 4.2, 12, 100};
    for (; k < n; k++) {
        double mag = span[k % 6] * unit();
        x[k] = (float)(unit() < 0.5 ? -mag : mag);
    }
}

Test(cpusim_math, tanh_erf_and_sigmoid_match_the_interpreter_within_their_accuracy, .timeout = 120)
{
    cpusim *sim;
    const IrModule *m = module(&sim);
    int n = 16 * B;
    Run r = {"smooth", n, {floats(n), floats(n), floats(n), floats(n)}, 0};
    smooth_args(r.data[0], n);
    float *want[6] = {0};
    run_both(m, sim, &r, want);
    int bad = 0;
    const char *names[] = {"", "tanh", "erf", "sigmoid"};
    for (int i = 0; i < n; i++) {
        double x = r.data[0][i];
        /* sigmoid's exp: its argument x log2(e), rounded, off by up to |x| 2^-24 */
        double tol[] = {0, 3, 2, 3 + 1.45 * fabs(x)};
        for (int o = 1; o <= 3; o++) {
            if (within(r.data[o][i], want[o][i], tol[o])) continue;
            if (bad++ < 10)
                cr_log_error("%s(%a): generated %a, interpreter %a (%.2f ulps)", names[o], x, r.data[o][i], want[o][i],
                             fabs(r.data[o][i] - want[o][i]) / ulp_of(want[o][i]));
        }
    }
    cr_expect_eq(bad, 0, "%d results differ", bad);
    for (int i = 0; i < 4; i++) free(r.data[i]), free(want[i]);
    cpusim_free(sim);
}

/* pow's arguments: C's special cases (every pair of the special operands),
 * negative bases with integer exponents, then positive bases and
 * exponents whose product y log2(x) stays below 60. */
static void pow_args(float *x, float *y, int n)
{
    static const float sx[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, INFINITY, -INFINITY, NAN, 0x1p-140f};
    static const float sy[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 0.5f, -0.5f, INFINITY, -INFINITY, NAN,
                               16777215.0f, 1e30f};
    int k = 0;
    for (int i = 0; i < (int)(sizeof sx / sizeof *sx); i++)
        for (int j = 0; j < (int)(sizeof sy / sizeof *sy); j++, k++) x[k] = sx[i], y[k] = sy[j];
    for (; k < n / 2; k++) {
        x[k] = (float)(-10 * unit());
        y[k] = (float)floor(17 * unit() - 8);
    }
    for (; k < n; k++) {
        x[k] = (float)exp2(40 * unit() - 20);
        double lim = 60 / fmax(fabs(log2(x[k])), 1);
        y[k] = (float)(lim * (2 * unit() - 1));
    }
}

Test(cpusim_math, pow_matches_the_interpreter_within_its_accuracy, .timeout = 120)
{
    cpusim *sim;
    const IrModule *m = module(&sim);
    int n = 16 * B;
    Run r = {"power", n, {floats(n), floats(n), floats(n)}, 0};
    pow_args(r.data[0], r.data[1], n);
    float *want[6] = {0};
    run_both(m, sim, &r, want);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double x = r.data[0][i], y = r.data[1][i];
        /* log2(x) rounded to f32, and its product with y: each off by up to |y log2 x| 2^-24 */
        double yl = x == 0 || !isfinite(x) || !isfinite(y) ? 0 : fabs(y * log2(fabs(x)));
        if (within(r.data[2][i], want[2][i], 3 + 1.5 * yl)) continue;
        if (bad++ < 10)
            cr_log_error("pow(%a, %a): generated %a, interpreter %a", x, y, r.data[2][i], want[2][i]);
    }
    cr_expect_eq(bad, 0, "%d results differ", bad);
    for (int i = 0; i < 3; i++) free(r.data[i]), free(want[i]);
    cpusim_free(sim);
}

Test(cpusim_math, fma_rounds_once_as_fmaf, .timeout = 120)
{
    cpusim *sim;
    const IrModule *m = module(&sim);
    int n = 4 * B;
    Run r = {"fused", n, {floats(n), floats(n), floats(n), floats(n), floats(n)}, 3.0f};
    int apart = 0;
    for (int i = 0; i < n; i++) {
        /* (1 + d)(1 + d) - (1 + 2d), d = 2^-12 at i = 0: 2^-24 rounded once, 0 rounded twice */
        float a = i == 0 ? 1 + 0x1p-12f : (float)(8 * unit() - 4), b = i == 0 ? a : (float)(8 * unit() - 4);
        r.data[0][i] = a;
        r.data[1][i] = b;
        r.data[2][i] = i == 0 ? -(1 + 0x1p-11f) : -(a * b) + (float)(unit() * 0x1p-20);
        apart += fmaf(a, b, r.data[2][i]) != a * b + r.data[2][i];
    }
    float *want[6] = {0};
    run_both(m, sim, &r, want);
    cr_assert_gt(apart, n / 4, "the operands must tell one rounding from two");
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float z = fmaf(r.data[0][i], r.data[1][i], r.data[2][i]), w = fmaf(r.data[0][i], 3.0f, -1.0f);
        bool ok = r.data[3][i] == z && want[3][i] == z && r.data[4][i] == w && want[4][i] == w;
        if (!ok && bad++ < 10)
            cr_log_error("fma(%a, %a, %a) is %a: generated %a, interpreter %a", r.data[0][i], r.data[1][i], r.data[2][i], z,
                         r.data[3][i], want[3][i]);
    }
    cr_expect_eq(bad, 0, "%d results differ from fmaf", bad);
    cr_expect_eq(want[3][0], 0x1p-24f);
    for (int i = 0; i < 5; i++) free(r.data[i]), free(want[i]);
    cpusim_free(sim);
}

/* ph.inf and ph.nan are float literals: -ph.inf folds, as -1.0 / 0.0 does
 * (IEEE, not an error), and ph.max / ph.min of literals ignore a NaN and
 * order -0.0 below 0.0 as the ops do; the interpreter and the generated
 * code store the same bits. */
Test(cpusim_math, inf_and_nan_are_literals)
{
    static const char src[] =
        "import phobos.lang as ph\n\n"
        "@ph.kernel\n"
        "def consts(Z: ph.tensor[ph.f32][16]):\n"
        "    Z[0:+1] = -ph.inf\n"
        "    Z[1:+1] = -1.0 / 0.0\n"
        "    Z[2:+1] = ph.inf - ph.inf\n"
        "    Z[3:+1] = ph.max(1.0, ph.nan)\n"
        "    Z[4:+1] = ph.min(ph.nan, -2.0)\n"
        "    Z[5:+1] = ph.max(-0.0, 0.0)\n"
        "    Z[6:+1] = ph.min(0.0, -0.0)\n"
        "    Z[7:+1] = ph.tanh(-ph.inf) + ph.erf(ph.inf) + ph.sigmoid(-ph.inf)\n"
        "    Z[8:+1] = ph.pow(ph.nan, 0.0) + ph.fma(ph.inf, 0.0, 1.0)\n"
        "    Z[9:+1] = ph.f32(ph.f16(ph.inf)) + ph.f32(ph.bf16(-ph.inf))\n";
    char *diags = NULL;
    IrModule *m = tu_compile("consts.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    const float want[10] = {-INFINITY, -INFINITY, NAN, 1.0f, -2.0f, 0.0f, -0.0f, 0.0f, NAN, NAN};
    float got[2][16] = {{0}};
    char err[512];
    IrArg a = {.data = got[0], .dims = {16, 0}};
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(m->funcs[0], &a, 1, grid, err, sizeof err), 0, "%s", err);
    cpusim *sim = load(m);
    ph_arg s = ph_tensor1((ph_devptr)(uintptr_t)got[1], 16);
    unsigned g[3] = {1, 1, 1};
    cr_assert_eq(cpusim_launch(sim, m->funcs[0]->name, g, &s, 1, err, sizeof err), PH_OK, "%s", err);
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < 10; i++)
            cr_expect(isnan(want[i]) ? isnan(got[side][i]) : got[side][i] == want[i] && signbit(got[side][i]) == signbit(want[i]),
                      "%s: Z[%d] is %a, not %a", side ? "generated code" : "interpreter", i, got[side][i], want[i]);
    cpusim_free(sim);
    ir_module_free(m);
}

/* The shared divisor (cg_values.c, on by default): a tile divided by a row's value
 * or a scalar, each thread's slots sharing the divisor, takes its
 * reciprocal once and corrects each quotient (Markstein's step), which must
 * be the division's own bits: the executor's generated code against the
 * interpreter and C's x / y, every element exactly, with rows in the range
 * the fast way takes (both ways of rounding a quotient, significands of all
 * ones) and rows with a zero, an infinity, a NaN, a subnormal or an
 * extreme among their operands, which the thread divides one by one. */
static const char DIVIDE[] =
    "import phobos.lang as ph\n\n"
    "@ph.kernel\n"
    "def divide(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f32][R, 1], Q: ph.tensor[ph.f32][R, C],\n"
    "           P: ph.tensor[ph.f32][R, C], s: ph.f32):\n"
    "    r0: ph.let = ph.ctx.block.x * 16\n"
    "    x: ph.let = X[r0:+16, 0:+32]\n"
    "    Q[r0:+16, 0:+32] = x / Y[r0:+16, 0:+1]\n"
    "    P[r0:+16, 0:+32] = x / s\n";

static float divide_operand(int k)
{
    static const float odd[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-140f, 0x1p-61f, 0x1p61f, 0x1.fffffep127f};
    if (k % 97 == 5) return odd[(k / 97) % 9];
    float v = (float)ldexp(1 + unit(), (int)(unit() * 100) - 50);
    if (k % 7 == 3) v = (float)ldexp(0x1.fffffep0, (int)(unit() * 100) - 50);   /* a significand of all ones */
    return unit() < 0.5 ? -v : v;
}

Test(cpusim_math, a_shared_divisor_divides_bit_for_bit, .timeout = 240)
{
    enum { ROWS = 512, COLS = 32 };
    char *diags = NULL;
    IrModule *m = tu_compile("divide.ph", DIVIDE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags ? diags : "");
    free(diags);
    const IrFunc *f = driver_find_kernel(m, "divide");
    cr_assert_not_null(f);
    float s = 0x1.8p-3f;
    float *x = floats(ROWS * COLS), *y = floats(ROWS), *q = floats(ROWS * COLS), *p = floats(ROWS * COLS);
    float *iq = floats(ROWS * COLS), *ip = floats(ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) x[i] = divide_operand(i);
    for (int i = 0; i < ROWS; i++) y[i] = divide_operand(3 * i + 1);
    unsetenv("PHOBOS_SHARED_DIVISOR");
    for (int a = 0; a < 2; a++) {
        const char *arch = a ? "sm_90a" : "sm_90";
        cpusim *sim = load_arch(m, arch);
        memset(q, 0xff, sizeof(float) * ROWS * COLS), memset(p, 0xff, sizeof(float) * ROWS * COLS);
        ph_arg sargs[5] = {ph_tensor2((uintptr_t)x, ROWS, COLS), ph_tensor2((uintptr_t)y, ROWS, 1),
                           ph_tensor2((uintptr_t)q, ROWS, COLS), ph_tensor2((uintptr_t)p, ROWS, COLS), ph_f32(s)};
        char err[512];
        unsigned grid[3] = {ROWS / 16, 1, 1};
        cr_assert_eq(cpusim_launch(sim, "divide", grid, sargs, 5, err, sizeof err), PH_OK, "%s", err);
        IrArg iargs[5] = {{.data = x, .dims = {ROWS, COLS}}, {.data = y, .dims = {ROWS, 1}}, {.data = iq, .dims = {ROWS, COLS}},
                          {.data = ip, .dims = {ROWS, COLS}}, {.f = s}};
        int igrid[3] = {ROWS / 16, 1, 1};
        cr_assert_eq(ir_interp(f, iargs, 5, igrid, err, sizeof err), 0, "%s", err);
        int bad = 0, fast = 0;
        for (int i = 0; i < ROWS * COLS; i++) {
            float wq = x[i] / y[i / COLS], wp = x[i] / s;
            fast += fabsf(x[i]) >= 0x1p-60f && fabsf(x[i]) <= 0x1p60f && fabsf(y[i / COLS]) >= 0x1p-60f && fabsf(y[i / COLS]) <= 0x1p60f;
            bool ok = !memcmp(&q[i], &wq, 4) && !memcmp(&iq[i], &wq, 4) && !memcmp(&p[i], &wp, 4) && !memcmp(&ip[i], &wp, 4);
            if (!ok && bad++ < 10)
                cr_log_error("%s: %a / %a: generated %a, interpreter %a, C %a; / %a: %a, %a, %a", arch, x[i], y[i / COLS], q[i], iq[i], wq,
                             s, p[i], ip[i], wp);
        }
        cr_expect_eq(bad, 0, "%s: %d quotients differ from C's", arch, bad);
        cr_expect_gt(fast, ROWS * COLS / 2, "most operands must be in the fast way's range");
        cpusim_free(sim);
        CodegenOptions o = {.target = target_find(arch), .opt_level = CODEGEN_OPT_DEFAULT};
        char *ptx = NULL;
        cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
        cr_expect(strstr(ptx, "rcp.rn.f32") && strstr(ptx, "div.rn.f32"), "%s: no reciprocal, or no division for the odd rows", arch);
        free(ptx);
        setenv("PHOBOS_SHARED_DIVISOR", "0", 1);   /* off: a division a slot, no reciprocal */
        cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
        cr_expect(!strstr(ptx, "rcp.rn.f32") && strstr(ptx, "div.rn.f32"), "%s: PHOBOS_SHARED_DIVISOR=0 still takes a reciprocal", arch);
        free(ptx);
        unsetenv("PHOBOS_SHARED_DIVISOR");
    }
    free(x), free(y), free(q), free(p), free(iq), free(ip);
    ir_module_free(m);
}
