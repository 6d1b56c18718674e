/* test_cpusim_i64.c: i64's scalar ops at their edges, wherever they are
 * computed (test_scalarops does the same for the other dtypes, whose
 * values a double holds; i64's do not, so its cases are integers here).
 * Each case is one kernel computing the op twice, on operands loaded from
 * tensors and on constants; the documented result (docs/language.md,
 * "64-bit integers") must come from the reference table (scalarops.c),
 * the interpreter, the interpreter after phc's fold pass (which must have
 * folded the constants' op) and the generated code on the CPU executor,
 * sm_90's and sm_90a's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cpusim.h"
#include "ir/scalarops.h"
#include "testutil.h"

typedef struct {
    const char *op;      /* the IR op */
    DType dt, rdt;       /* operand and result dtypes */
    int64_t a, b, want;  /* an f32 operand is a, as a float; an f32 result want's value as a float */
    float fa;            /* the f32 operand of a conversion from f32 */
} Case;

#define MIN64 INT64_MIN
#define MAX64 INT64_MAX

static const Case cases[] = {
    {"add", DT_I64, DT_I64, MAX64, 1, MIN64, 0},                 /* wraps */
    {"sub", DT_I64, DT_I64, MIN64, 1, MAX64, 0},
    {"mul", DT_I64, DT_I64, 4294967296, 4294967296, 0, 0},
    {"mul", DT_I64, DT_I64, 3000000000, 3000000000, 9000000000000000000, 0},
    {"mul", DT_I64, DT_I64, MIN64, -1, MIN64, 0},
    {"floordiv", DT_I64, DT_I64, -7, 2, -4, 0},                  /* floors like Python */
    {"mod", DT_I64, DT_I64, -7, 2, 1, 0},
    {"mod", DT_I64, DT_I64, 7, -2, -1, 0},
    {"floordiv", DT_I64, DT_I64, -9000000000000000001, 3, -3000000000000000001, 0},
    {"floordiv", DT_I64, DT_I64, MIN64, -1, MIN64, 0},           /* 2^63 wrapped */
    {"mod", DT_I64, DT_I64, MIN64, -1, 0, 0},
    {"floordiv", DT_I64, DT_I64, 5000000000, 0, 0, 0},           /* by zero: 0, as NumPy */
    {"mod", DT_I64, DT_I64, -5000000000, 0, 0, 0},
    {"max", DT_I64, DT_I64, MIN64, MAX64, MAX64, 0},
    {"min", DT_I64, DT_I64, -1, 4294967296, -1, 0},
    {"neg", DT_I64, DT_I64, MIN64, 0, MIN64, 0},
    {"abs", DT_I64, DT_I64, MIN64, 0, MIN64, 0},
    {"abs", DT_I64, DT_I64, -5000000000, 0, 5000000000, 0},
    {"lt", DT_I64, DT_BOOL, 9007199254740993, 9007199254740992, 0, 0},   /* not equal as doubles would be */
    {"ne", DT_I64, DT_BOOL, 9007199254740993, 9007199254740992, 1, 0},
    {"ge", DT_I64, DT_BOOL, MIN64, MAX64, 0, 0},
    {"convert", DT_F32, DT_I64, 0, 0, MAX64, 1.0e19f},           /* saturates */
    {"convert", DT_F32, DT_I64, 0, 0, MIN64, -1.0e19f},
    {"convert", DT_F32, DT_I64, 0, 0, -2, -2.9f},                /* toward zero */
    {"convert", DT_F32, DT_I64, 0, 0, 16777216000000000, 1.6777216e16f},
    {"convert", DT_I64, DT_I32, 4294967301, 0, 5, 0},             /* wraps modulo 2^32 */
    {"convert", DT_I64, DT_I32, -2147483649, 0, 2147483647, 0},
    {"convert", DT_I64, DT_I8, 200, 0, -56, 0},
    {"convert", DT_I32, DT_I64, -7, 0, -7, 0},                    /* by the sign */
    {"convert", DT_I64, DT_BOOL, 4294967296, 0, 1, 0},
    {"convert", DT_I64, DT_F32, 9007199254740993, 0, 9007199254740992, 0},   /* nearest even in f32 */
    {"convert", DT_I64, DT_F32, 4611686293305294849, 0, 4611686568183201792, 0},   /* 2^62 + 2^38 + 1: up */
    {"convert", DT_I64, DT_F32, 4611686293305294848, 0, 4611686018427387904, 0},   /* 2^62 + 2^38: a tie, to even */
};
enum { NCASES = sizeof cases / sizeof *cases };

/* The result of case c as the reference table computes it. */
static int64_t table_result(const Case *c)
{
    for (int k = 0; k < CMP_COUNT; k++)
        if (!strcmp(ir_cmp_names[k], c->op)) return sop_compare_i64(k, c->a, c->b);
    for (int u = 0; u < UN_COUNT; u++)
        if (!strcmp(ir_unop_names[u], c->op)) return sop_i64_unary(u, c->a);
    for (int b = 0; b < BIN_COUNT; b++)
        if (!strcmp(ir_binop_names[b], c->op)) return sop_i64_binary(b, c->a, c->b);
    if (c->dt == DT_F32) return sop_float_to_i64(c->fa);
    if (c->rdt == DT_I64) return c->a;
    if (c->rdt == DT_BOOL) return c->a != 0;
    if (c->rdt == DT_F32) return (int64_t)sop_i64_to_float(DT_F32, c->a);
    return sop_wrap_int(c->rdt, c->a);
}

static bool result_ok(const Case *c, int64_t got, const char *side, int k)
{
    int64_t want = c->want;
    bool ok = got == want;
    if (!ok) cr_log_error("%s: case %d (%s %lld, %lld): got %lld, documented %lld", side, k, c->op, (long long)c->a,
                          (long long)c->b, (long long)got, (long long)want);
    return ok;
}

/* The kernel of case k: Z[0] = op(A[0], B[0]), Z[1] = op(const a, const b). */
static void kernel_text(char *buf, size_t n, int k)
{
    const Case *c = &cases[k];
    const char *dn = ir_dtype_name(c->dt), *rn = ir_dtype_name(c->rdt == DT_BOOL ? DT_I32 : c->rdt);
    bool one = !strcmp(c->op, "neg") || !strcmp(c->op, "abs") || !strcmp(c->op, "convert");
    char ca[64], cb[64];
    if (c->dt == DT_F32) snprintf(ca, sizeof ca, "%.9g", (double)c->fa);
    else snprintf(ca, sizeof ca, "%lld", (long long)c->a);
    snprintf(cb, sizeof cb, "%lld", (long long)c->b);
    const char *r = c->rdt == DT_BOOL ? "bool" : rn;
    /* bools are stored as i32 (a bool tensor does not exist) */
    snprintf(buf, n,
             "func c%d kernel c%d threads 32\n    params(A: %s[2], B: %s[2], Z: %s[2]) {\n"
             "  %%1 = const 0 : i32\n  %%2 = load A[%%1] : %s[1]\n  %%3 = load B[%%1] : %s[1]\n"
             "  %%4 = %s %%2%s : %s[1]\n  %%5 = convert %%4 : %s[1]\n  store Z[%%1], %%5\n"
             "  %%6 = const %s : %s\n  %%7 = const %s : %s\n  %%8 = %s %%6%s : %s\n  %%9 = convert %%8 : %s\n"
             "  %%10 = splat %%9 : %s[1]\n  %%11 = const 1 : i32\n  store Z[%%11], %%10\n  return\n}\n",
             k, k, dn, dn, rn, dn, dn, c->op, one ? "" : ", %3", r, rn, ca, dn, cb, dn, c->op, one ? "" : ", %7", r, rn,
             rn);
}

/* Z's element e read as an int64_t (i32, i8 widened; f32 as its value, truncated: only exact cases). */
static int64_t z_elem(const Case *c, const void *z, int e)
{
    DType rt = c->rdt == DT_BOOL ? DT_I32 : c->rdt;
    if (rt == DT_I64) return ((const int64_t *)z)[e];
    if (rt == DT_I8) return ((const int8_t *)z)[e];
    if (rt == DT_F32) return (int64_t)((const float *)z)[e];   /* the cases' results are below 2^63 */
    return ((const int32_t *)z)[e];
}

static IrModule *module(void)
{
    static char text[NCASES * 900];
    size_t at = 0;
    for (int k = 0; k < NCASES; k++) {
        kernel_text(text + at, sizeof text - at, k);
        at += strlen(text + at);
    }
    char err[512] = "";
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert(m, "%s", err);
    for (int k = 0; k < m->nfuncs; k++) cr_assert_eq(ir_verify(m->funcs[k], err, sizeof err), 0, "%s", err);
    return m;
}

typedef struct { int64_t a[2], b[2], z[2]; } Buffers;

static Buffers buffers_for(const Case *c)
{
    Buffers t = {{c->a, 0}, {c->b, 0}, {0, 0}};
    if (c->dt == DT_F32) memcpy(t.a, &c->fa, sizeof c->fa);
    else if (c->dt == DT_I32) {
        int32_t a32 = (int32_t)c->a;
        memcpy(t.a, &a32, 4);
    }
    return t;
}

static int check_side(const Case *c, const Buffers *t, const char *side, int k)
{
    int bad = 0;
    for (int e = 0; e < 2; e++) bad += !result_ok(c, z_elem(c, t->z, e), side, k);
    return bad;
}

Test(i64, the_table_gives_the_documented_results)
{
    int bad = 0;
    for (int k = 0; k < NCASES; k++) {
        const Case *c = &cases[k];
        int64_t got = table_result(c);
        bad += !result_ok(c, got, "table", k);
    }
    cr_expect_eq(bad, 0);
}

static int run_interp(IrModule *m, bool fold)
{
    int bad = 0;
    for (int k = 0; k < NCASES; k++) {
        const Case *c = &cases[k];
        Buffers t = buffers_for(c);
        IrArg args[3] = {{.data = t.a, .dims = {2}}, {.data = t.b, .dims = {2}}, {.data = t.z, .dims = {2}}};
        if (fold) {
            ir_fold(m->funcs[k]);
            char err[256];
            cr_assert_eq(ir_verify(m->funcs[k], err, sizeof err), 0, "%s", err);
            /* the constants' op and its convert folded: the splat's operand is a constant */
            const IrBlock *b = m->funcs[k]->body;
            const IrOp *splat = b->ops[b->nops - 4];
            cr_assert_eq(splat->kind, OP_SPLAT);
            const IrOp *d = m->funcs[k]->values[splat->args[0]].def;
            cr_expect(d && d->kind == OP_CONST, "case %d (%s): fold left the constants' op", k, c->op);
        }
        char err[512] = "";
        const int grid[3] = {1, 1, 1};
        cr_assert_eq(ir_interp(m->funcs[k], args, 3, grid, err, sizeof err), 0, "%s", err);
        bad += check_side(c, &t, fold ? "interpreter after fold" : "interpreter", k);
    }
    return bad;
}

Test(i64, the_interpreter_and_fold_give_the_documented_results)
{
    IrModule *m = module();
    cr_expect_eq(run_interp(m, false), 0);
    cr_expect_eq(run_interp(m, true), 0);
    ir_module_free(m);
}

static void generated_code(const char *arch)
{
    IrModule *m = module();
    char err[1024] = "";
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_arch(m, arch, &s, err, sizeof err), PH_OK, "cpusim_load: %s", err);
    int bad = 0;
    for (int k = 0; k < NCASES; k++) {
        const Case *c = &cases[k];
        Buffers t = buffers_for(c);
        ph_arg args[3] = {ph_tensor1((ph_devptr)(uintptr_t)t.a, 2), ph_tensor1((ph_devptr)(uintptr_t)t.b, 2),
                          ph_tensor1((ph_devptr)(uintptr_t)t.z, 2)};
        unsigned grid[3] = {1, 1, 1};
        cr_assert_eq(cpusim_launch(s, m->funcs[k]->name, grid, args, 3, err, sizeof err), PH_OK, "c%d: %s", k, err);
        bad += check_side(c, &t, arch, k);
    }
    cr_expect_eq(bad, 0, "%d of %d cases differ", bad, NCASES);
    cpusim_free(s);
    ir_module_free(m);
}

Test(i64, generated_code_gives_the_documented_results, .timeout = 120) { generated_code("sm_90"); }
Test(i64, generated_code_gives_the_documented_results_on_sm_90a, .timeout = 120) { generated_code("sm_90a"); }
