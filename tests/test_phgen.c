/* test_phgen.c: the differential testing engine of tests/difftest, without
 * a GPU: run specs read back, the engine finds a planted difference, the
 * regression files parse and run in the interpreter. */
#include <criterion/criterion.h>
#include <dirent.h>

#include "difftest.h"
#include "testutil.h"

/* A back end that is the interpreter, except that every f32 output of a
 * config computing a dot comes back with its first element changed. */
static bool has_dot(const IrBlock *b)
{
    for (int i = 0; b && i < b->nops; i++)
        if (b->ops[i]->kind == OP_DOT || has_dot(b->ops[i]->body) || has_dot(b->ops[i]->els)) return true;
    return false;
}

static DtRunStatus dot_breaker_run(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err, size_t errlen)
{
    (void)b;
    if (ir_interp(f, args, nargs, grid, err, errlen)) return DT_RUN_FAILED;
    if (has_dot(f->body))
        for (int i = 0; i < nargs; i++)
            if (f->params[i].is_tensor && f->params[i].dt == DT_F32 && f->params[i].name[0] == 'Y') ((float *)args[i].data)[0] += 100;
    return DT_RUN_OK;
}

static DtBackend dot_breaker = {"dot-breaker", NULL, dot_breaker_run, NULL, NULL};

static DtRunStatus ok_load(DtBackend *b, const char *source, const IrModule *m, char *err, size_t errlen)
{
    (void)b, (void)source, (void)m, (void)err, (void)errlen;
    return DT_RUN_OK;
}
static void no_unload(DtBackend *b) { (void)b; }

Test(phgen, the_engine_reports_a_planted_difference)
{
    dot_breaker.load = ok_load;
    dot_breaker.unload = no_unload;
    const char *src = "# run: grid 2 1 1 M=20 N=9 K=13\n"
                      "import phobos.lang as ph\n"
                      "@ph.kernel\n@ph.autotune(BM=[8, 16], BN=[8])\n"
                      "def k(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], Y: ph.tensor[ph.f32][M, N]):\n"
                      "    Y[ph.ctx.block.x * BM:+BM, 0:+BN] = ph.dot(A[ph.ctx.block.x * BM:+BM, 0:+16], B[0:+16, 0:+BN])\n";
    IrModule *m = tu_compile("k.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    DtSpec spec;
    char err[128];
    cr_assert_eq(dt_spec_from_source(&spec, src, err, sizeof err), 0, "%s", err);
    DtReport rep;
    cr_assert_eq(dt_compare_module(m, src, &spec, &dt_interp_backend, 3, NULL, &rep), DT_SAME, "%s", rep.message);
    cr_assert_eq(dt_compare_module(m, src, &spec, &dot_breaker, 3, NULL, &rep), DT_MISMATCH);
    cr_expect_eq(rep.configs, 2);
    cr_expect_eq(rep.failed, 2);
    cr_expect_str_eq(rep.config, "k__BM_8__BN_8");
    cr_expect(strstr(rep.message, "Y[0, 0]: back end") != NULL, "%s", rep.message);
    cr_expect(strstr(rep.message, "1 of 180 elements differ") != NULL, "%s", rep.message);
    cr_assert_eq(dt_compare_module(m, src, &spec, &dot_breaker, 3, "k__BM_16__BN_8", &rep), DT_MISMATCH);
    cr_expect_eq(rep.configs, 1);
    ir_module_free(m);
}

Test(phgen, the_regression_files_parse_and_run_in_the_interpreter)
{
    const char *dir = "tests/difftest/regressions";
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".ph")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *src = tu_read_file(path), err[256];
        cr_assert_not_null(src);
        DtSpec spec;
        cr_assert_eq(dt_spec_from_source(&spec, src, err, sizeof err), 0, "%s: %s", path, err);
        IrModule *m = ph_compile_file(path, NULL, stderr);
        cr_assert_not_null(m, "%s", path);
        DtReport rep;
        cr_expect_eq(dt_compare_module(m, src, &spec, &dt_interp_backend, 1, NULL, &rep), DT_SAME, "%s: %s", path, rep.message);
        ir_module_free(m);
        free(src);
        files++;
    }
    closedir(d);
    cr_expect_gt(files, 0);
}

Test(phgen, run_specs_read_back_and_refuse_bad_text)
{
    DtSpec s, t;
    dt_spec_init(&s);
    s.grid[0] = 3;
    dt_spec_set(&s, "M", 40);
    dt_spec_set(&s, "s", -0.75);
    char buf[256], err[128];
    dt_spec_format(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "grid 3 1 1 M=40 s=-0.75");
    cr_assert_eq(dt_spec_parse(&t, buf, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(&s, &t, sizeof s), 0);
    cr_expect_eq(dt_spec_get(&t, "M", 0), 40);
    cr_expect_eq(dt_spec_get(&t, "Q", 9), 9);
    cr_expect_neq(dt_spec_parse(&t, "M=4", err, sizeof err), 0);
    cr_expect(strstr(err, "grid") != NULL);
    cr_expect_neq(dt_spec_parse(&t, "grid 0 1 1", err, sizeof err), 0);
    cr_expect_neq(dt_spec_parse(&t, "grid 1 1 1 M=", err, sizeof err), 0);
    cr_expect_neq(dt_spec_parse(&t, "grid 1 1 1 =3", err, sizeof err), 0);
    cr_expect_neq(dt_spec_from_source(&t, "import phobos.lang as ph\n", err, sizeof err), 0);
}
