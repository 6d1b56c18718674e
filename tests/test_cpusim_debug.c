/* test_cpusim_debug.c: ph.device_print and ph.device_assert. In the
 * interpreter: the printed lines (stdout, one per block, the documented
 * format) and the status and message of a failed assert (file:line:col,
 * block, element, message). On the CPU executor, for each GPU path: the
 * same lines through the generated code's vprintf, and a failed assert
 * ending the launch through __assertfail with the GPU's message. The
 * sema errors, each at its column. And a while whose condition calls a
 * helper, with a return in its body, on the executor against the
 * interpreter. */
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS (simharness.h), dup */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpusim.h"
#include "simharness.h"
#include "testutil.h"

static const char SOURCE[] =
    "import phobos.lang as ph\n"
    "\n"
    "@ph.kernel\n"
    "def dbg(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], n: ph.i32):\n"
    "    b: ph.let = ph.ctx.block.x\n"
    "    x: ph.let = X[b]\n"
    "    k: ph.var[ph.i32] = 0\n"
    "    while k < 2:\n"
    "        ph.device_print(\"b x 100% k:\", b, x, k, x > 0.0)\n"
    "        k += 1\n"
    "    ph.device_assert(b < n, \"b must be below n\")\n"
    "    t: ph.let = X[0:+16] + ph.f32(b)\n"
    "    ph.device_assert(t < 10.0, \"t stays small\")\n"
    "    Y[b] = x\n";

static IrModule *module(void)
{
    char *diags;
    IrModule *m = tu_compile("dbg.ph", SOURCE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    return m;
}

static float X[16] = {1.5f, -2.0f, 0.25f, 3.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

/* The interpreter's run on 3 blocks with n, its stdout in out. */
static int interp(const IrFunc *f, int n, char *out, size_t outlen, char *err, size_t errlen)
{
    float y[16];
    IrArg args[3] = {{.data = X, .dims = {16, 0}}, {.data = y, .dims = {16, 0}}, {.i = n}};
    int grid[3] = {3, 1, 1};
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(1);
    dup2(fileno(tmp), 1);
    int rc = ir_interp(f, args, 3, grid, err, errlen);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(tmp);
    size_t got = fread(out, 1, outlen - 1, tmp);
    out[got] = 0;
    fclose(tmp);
    return rc;
}

static const char PRINTED[] = "pid (0, 0, 0) b x 100% k: 0 1.5 0 1\n"
                              "pid (0, 0, 0) b x 100% k: 0 1.5 1 1\n"
                              "pid (1, 0, 0) b x 100% k: 1 -2 0 0\n"
                              "pid (1, 0, 0) b x 100% k: 1 -2 1 0\n"
                              "pid (2, 0, 0) b x 100% k: 2 0.25 0 1\n"
                              "pid (2, 0, 0) b x 100% k: 2 0.25 1 1\n";

Test(device_debug, the_interpreter_prints_and_asserts)
{
    IrModule *m = module();
    char out[4096], err[512];
    cr_assert_eq(interp(m->funcs[0], 5, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(out, PRINTED);
    cr_assert_neq(interp(m->funcs[0], 2, out, sizeof out, err, sizeof err), 0);
    cr_assert_str_eq(err, "dbg.ph:11:5: device assert failed in kernel 'dbg', block (2, 0, 0): b must be below n");
    X[5] = 8.5f;   /* t = X + b reaches 10.0 at element 5 in block 2 */
    cr_assert_neq(interp(m->funcs[0], 5, out, sizeof out, err, sizeof err), 0);
    X[5] = 0;
    cr_assert_str_eq(err, "dbg.ph:13:5: device assert failed in kernel 'dbg', block (2, 0, 0), element (0, 5): t stays small");
    ir_module_free(m);
}

/* The executor's run of arch's code; its status, message and what it printed. */
static ph_status sim(const IrModule *m, const char *arch, int n, char *printed, size_t plen, char *err, size_t errlen)
{
    cpusim *s;
    cr_assert_eq(cpusim_load_arch(m, arch, &s, err, errlen), PH_OK, "%s", err);
    float y[16];
    ph_arg args[3] = {ph_tensor1((ph_devptr)(uintptr_t)X, 16), ph_tensor1((ph_devptr)(uintptr_t)y, 16), ph_i32(n)};
    unsigned grid[3] = {3, 1, 1};
    ph_status st = cpusim_launch(s, m->funcs[0]->name, grid, args, 3, err, errlen);
    snprintf(printed, plen, "%s", cpusim_printed(s));
    cpusim_free(s);
    return st;
}

Test(device_debug, the_generated_code_prints_through_vprintf_and_asserts_through_assertfail, .timeout = 120)
{
    IrModule *m = module();
    const char *archs[] = {"sm_80", "sm_90", "sm_90a"};
    for (int a = 0; a < 3; a++) {
        char out[4096], err[1024];
        cr_assert_eq(sim(m, archs[a], 5, out, sizeof out, err, sizeof err), PH_OK, "%s: %s", archs[a], err);
        cr_assert_str_eq(out, PRINTED, "%s", archs[a]);
        cr_assert_neq(sim(m, archs[a], 2, out, sizeof out, err, sizeof err), PH_OK, "%s", archs[a]);
        cr_assert(strstr(err, "device assert failed: dbg.ph:11: dbg: block (2, 0, 0), thread 0: Assertion `b must be below n` failed."),
                  "%s: %s", archs[a], err);
        X[5] = 8.5f;
        ph_status st = sim(m, archs[a], 5, out, sizeof out, err, sizeof err);
        X[5] = 0;
        cr_assert_neq(st, PH_OK, "%s", archs[a]);
        cr_assert(strstr(err, "dbg.ph:13: dbg: block (2, 0, 0), thread ") && strstr(err, "Assertion `t stays small` failed."),
                  "%s: %s", archs[a], err);
    }
    ir_module_free(m);
}

static void fails_with(const char *body, const char *want)
{
    char src[1024], *diags;
    snprintf(src, sizeof src, "import phobos.lang as ph\n\n@ph.kernel\ndef k(X: ph.tensor[ph.f32][N]):\n%s", body);
    IrModule *m = tu_compile("t.ph", src, NULL, &diags);
    cr_assert_null(m, "expected errors for:\n%s", src);
    cr_expect(strstr(diags, want), "no\n%s\nin:\n%s", want, diags);
    free(diags);
}

Test(device_debug, sema_errors)
{
    fails_with("    ph.device_print(\"x\", X[0:+4])\n",
               "t.ph:5:26: error: ph.device_print prints i32, f32 and bool scalars, got f32[4]");
    fails_with("    ph.device_print(X[0])\n", "t.ph:5:21: error: expected a string literal for the prefix of device_print");
    fails_with("    ph.device_assert(X[0], \"m\")\n",
               "t.ph:5:22: error: expected a bool condition (a scalar or a tile) for ph.device_assert, got f32");
    fails_with("    ph.device_assert(X[0] > 0.0, 3)\n", "t.ph:5:34: error: expected a string literal for the message of device_assert");
    fails_with("    y: ph.let = ph.device_assert(X[0] > 0.0, \"m\")\n", "t.ph:5:17: error: ph.device_assert is a statement and has no value");
    fails_with("    ph.device_print(\"x\", sep=1)\n", "t.ph:5:26: error: ph.device_print takes no keyword arguments");
}

/* A chase whose condition calls a helper (inlined into the condition
 * region, so emitted twice by the rotated loop), nested in a for, a return
 * in its body; every GPU path against the interpreter. */
static const char CHASE[] =
    "import phobos.lang as ph\n"
    "@ph.func\n"
    "def live(L, j):\n"
    "    return L[j] > 0\n"
    "@ph.kernel\n"
    "@ph.autotune(BN=[32])\n"
    "def hop(L: ph.tensor[ph.i32][N], X: ph.tensor[ph.f32][N, N], H: ph.tensor[ph.i32][N], Y: ph.tensor[ph.f32][N, N]):\n"
    "    b: ph.let = ph.ctx.block.x\n"
    "    j: ph.var[ph.i32] = b\n"
    "    hops: ph.var[ph.i32] = 0\n"
    "    acc: ph.var[ph.tile[ph.f32][1, BN]] = 0.0\n"
    "    for r in range(2):\n"
    "        while live(L, j) and hops < 5:\n"
    "            acc += ph.colsum(X[j:+2, 0:+BN])\n"
    "            j = (j + L[j]) % N\n"
    "            hops += 1\n"
    "            if hops == 4 and b == 3:\n"
    "                Y[b, 0:+BN] = acc\n"
    "                return\n"
    "        hops += r\n"
    "    H[b] = j * 100 + hops\n"
    "    Y[b, 0:+BN] = acc\n";

Test(device_debug, a_while_calling_a_helper_in_its_condition_matches_the_interpreter, .timeout = 300)
{
    char *diags;
    IrModule *m = tu_compile("hop.ph", CHASE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    const char *archs[] = {"sm_80", "sm_90", "sm_90a"};
    for (int a = 0; a < 3; a++) cr_expect_eq(configs_that_differ(m, archs[a]), 0, "%s", archs[a]);
    ir_module_free(m);
}

/* An i64 printed as %lld, past 2^32 and negative, beside the others: the
 * interpreter's line and the generated code's through vprintf agree. */
Test(device_debug, an_i64_prints_whole_in_both, .timeout = 120)
{
    static const char src[] = "import phobos.lang as ph\n\n@ph.kernel\n"
                              "def p(X: ph.tensor[ph.i64][N], n: ph.i64):\n"
                              "    ph.device_print(\"v\", X[ph.ctx.block.x] * 3000000000 + n, 7, n)\n";
    char *diags;
    IrModule *m = tu_compile("p.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    int64_t x[2] = {-5, 4};
    const char *want = "pid (0, 0, 0) v -15000000001 7 -1\npid (1, 0, 0) v 11999999999 7 -1\n";
    IrArg args[2] = {{.data = x, .dims = {2, 0}}, {.l = -1}};
    int grid[3] = {2, 1, 1};
    char err[512] = "", out[512];
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(1);
    dup2(fileno(tmp), 1);
    int rc = ir_interp(m->funcs[0], args, 2, grid, err, sizeof err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    rewind(tmp);
    out[fread(out, 1, sizeof out - 1, tmp)] = 0;
    fclose(tmp);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(out, want);
    const char *archs[] = {"sm_90", "sm_90a"};
    for (int a = 0; a < 2; a++) {
        cpusim *s;
        cr_assert_eq(cpusim_load_arch(m, archs[a], &s, err, sizeof err), PH_OK, "%s", err);
        ph_arg pa[2] = {ph_tensor1((ph_devptr)(uintptr_t)x, 2), ph_i64(-1)};
        unsigned g[3] = {2, 1, 1};
        cr_assert_eq(cpusim_launch(s, m->funcs[0]->name, g, pa, 2, err, sizeof err), PH_OK, "%s: %s", archs[a], err);
        cr_assert_str_eq(cpusim_printed(s), want, "%s", archs[a]);
        cpusim_free(s);
    }
    ir_module_free(m);
}
