/* test_phgen.c: the random program generator of tests/difftest (the
 * machine behind `make gpufuzz`) and its reducer, without a GPU: every
 * generated program passes the front end, the verifier and the pass
 * pipeline and runs in the interpreter; generation is deterministic; the
 * corpus covers every feature the generator promises; the reducer shrinks a
 * program while a failure persists; the engine finds a planted difference;
 * the regression files parse. */
#include <criterion/criterion.h>
#include <dirent.h>

#include "difftest.h"
#include "phgen.h"
#include "testutil.h"

enum { CORPUS_FIRST = 1, CORPUS_SIZE = 500 };

Test(phgen, every_program_compiles_verifies_and_runs_in_the_interpreter, .timeout = 120)
{
    uint64_t seen = 0;
    int configs = 0;
    for (uint64_t seed = CORPUS_FIRST; seed < CORPUS_FIRST + CORPUS_SIZE; seed++) {
        PhgenProgram *p = phgen_generate(seed, NULL);
        char *src = phgen_source(p), *diags = NULL;
        IrModule *m = tu_compile("gen.ph", src, NULL, &diags);
        cr_assert_not_null(m, "seed %llu does not compile:\n%s\n%s", (unsigned long long)seed, diags, src);
        for (int i = 0; i < m->nfuncs; i++) {
            char err[512];
            cr_assert_eq(ir_verify(m->funcs[i], err, sizeof err), 0, "seed %llu: %s", (unsigned long long)seed, err);
        }
        DtSpec spec;
        char err[256];
        cr_assert_eq(dt_spec_from_source(&spec, src, err, sizeof err), 0, "%s", err);
        cr_assert_eq(memcmp(spec.grid, phgen_spec(p)->grid, sizeof spec.grid), 0);
        DtReport rep;
        DtVerdict v = dt_compare_module(m, src, &spec, &dt_interp_backend, seed, NULL, &rep);
        cr_assert_eq(v, DT_SAME, "seed %llu: %s in %s: %s\n%s", (unsigned long long)seed, dt_verdict_name(v), rep.config,
                     rep.message, src);
        cr_assert_eq(rep.configs + rep.ineligible, m->nfuncs);
        cr_assert_gt(rep.configs, 0, "seed %llu: no config is eligible for the spec", (unsigned long long)seed);
        configs += rep.configs;
        seen |= phgen_features(p);
        ir_module_free(m);
        free(diags);
        free(src);
        phgen_free(p);
    }
    cr_log_info("%d programs, %d configs", CORPUS_SIZE, configs);
    cr_expect_gt(configs, CORPUS_SIZE);
}

/* Seeds whose programs once failed to compile, each with what was wrong. */
Test(phgen, programs_that_once_did_not_compile_do)
{
    static const struct { uint64_t seed; const char *why; } seeds[] = {
        {203612115, "@ph.aligned named N, which no tensor of the program has"},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        char *src = phgen_program(seeds[i].seed, NULL, NULL), *diags = NULL;
        IrModule *m = tu_compile("gen.ph", src, NULL, &diags);
        cr_expect_not_null(m, "seed %llu (%s):\n%s\n%s", (unsigned long long)seeds[i].seed, seeds[i].why, diags, src);
        if (m) ir_module_free(m);
        free(diags);
        free(src);
    }
}

/* A dot operand must load an input of its shape; these once found the
 * tensors (outputs among them) at the inputs' limit with none of it, and
 * the generator aborted, taking a whole fuzzing run with it. */
Test(phgen, programs_that_once_aborted_the_generator_compile)
{
    static const uint64_t seeds[] = {15805, 70820};
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        char *src = phgen_program(seeds[i], NULL, NULL), *diags = NULL;
        IrModule *m = tu_compile("gen.ph", src, NULL, &diags);
        cr_expect_not_null(m, "seed %llu:\n%s\n%s", (unsigned long long)seeds[i], diags, src);
        if (m) ir_module_free(m);
        free(diags);
        free(src);
    }
}

Test(phgen, generation_is_deterministic)
{
    for (uint64_t seed = 1; seed < 40; seed++) {
        DtSpec a, b;
        char *x = phgen_program(seed, NULL, &a), *y = phgen_program(seed, NULL, &b);
        cr_assert_str_eq(x, y, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
        char *z = phgen_program(seed + 1000, NULL, NULL);
        cr_expect_str_neq(x, z);
        free(x);
        free(y);
        free(z);
    }
}

/* Counts, over the corpus, the programs showing each feature (taken from
 * the text where the text shows it); every feature must appear. */
Test(phgen, the_corpus_covers_every_feature)
{
    int count[PF_COUNT] = {0}, tc = 0, launch = 0, aligned = 0, softmax = 0, kernels2 = 0, ws = 0, atomics = 0;
    for (uint64_t seed = CORPUS_FIRST; seed < CORPUS_FIRST + CORPUS_SIZE; seed++) {
        PhgenProgram *p = phgen_generate(seed, NULL);
        uint64_t f = phgen_features(p);
        for (int i = 0; i < PF_COUNT; i++) count[i] += (f >> i) & 1;
        char *src = phgen_source(p);
        tc += strstr(src, "@ph.tensorcore") != NULL;
        launch += strstr(src, "@ph.launch(NT)") != NULL;
        aligned += strstr(src, "@ph.aligned(") != NULL;
        softmax += strstr(src, "ph.online_softmax(") != NULL;
        kernels2 += strstr(src, "def fuzz2(") != NULL;
        ws += strstr(src, "@ph.warp_specialize(") != NULL;
        atomics += strstr(src, "ph.atomic_add(") != NULL;
        free(src);
        phgen_free(p);
    }
    for (int i = 0; i < PF_COUNT; i++) {
        cr_log_info("%-18s %d", phgen_feature_names[i], count[i]);
        cr_expect_gt(count[i], 2, "feature %s appears in %d programs", phgen_feature_names[i], count[i]);
    }
    cr_expect_gt(tc, 30);
    cr_expect_gt(launch, 30);
    /* the fast paths: promises, fused softmax, modules of two kernels, often enough to matter */
    cr_expect_gt(aligned, 40);
    cr_expect_gt(softmax, 20);
    cr_expect_gt(kernels2, 30);
    cr_expect_gt(ws, 10, "@ph.warp_specialize on %d programs", ws);
    cr_expect_gt(atomics, 25, "ph.atomic_add in %d programs", atomics);
    cr_expect_gt(count[PF_ATTENTION_TC], 15);
    cr_expect_gt(count[PF_SPECIALIZED], 30);
    cr_expect_gt(count[PF_LOOP_LOAD], 40);
}

/* Masked loads and stores come from a stream of their own: with
 * pct_mask 0 no program has one, and with every load and store masked a
 * seed's program differs from its unmasked one only in lines that hold
 * ph.load or ph.store (so tests/ptx/hashes.txt's programs stay as they were). */
Test(phgen, masks_leave_the_rest_of_the_program_alone)
{
    PhgenOptions none, all;
    phgen_default_options(&none);
    none.pct_mask = 0;
    all = none;
    all.pct_mask = 100;
    int masked = 0;
    for (uint64_t seed = 1; seed < 60; seed++) {
        char *a = phgen_program(seed, &none, NULL), *b = phgen_program(seed, &all, NULL);
        cr_assert(!strstr(a, "ph.load(") && !strstr(a, "ph.store("), "seed %llu", (unsigned long long)seed);
        masked += strstr(b, "mask") != NULL;
        char *sa, *sb, *la = strtok_r(a, "\n", &sa), *lb = strtok_r(b, "\n", &sb);
        for (; la && lb; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb))
            cr_assert(!strcmp(la, lb) || strstr(lb, "ph.load(") || strstr(lb, "ph.store("), "seed %llu: '%s' became '%s'",
                      (unsigned long long)seed, la, lb);
        cr_assert(!la && !lb, "seed %llu: the line counts differ", (unsigned long long)seed);
        free(a);
        free(b);
    }
    cr_expect_gt(masked, 50);
}

/* Unrolled loops and helpers come from a stream of their own too: with
 * pct_flow 0 no program has one (phgen_dump's programs), with 100 every
 * loop of literal bounds is unrolled, and some programs pass loads through
 * the helper. */
Test(phgen, unrolled_loops_and_helpers_have_a_stream_of_their_own)
{
    PhgenOptions none, all;
    phgen_default_options(&none);
    none.pct_flow = 0;
    all = none;
    all.pct_flow = 100;
    int unrolled = 0, helped = 0;
    for (uint64_t seed = 1; seed < 60; seed++) {
        char *a = phgen_program(seed, &none, NULL), *b = phgen_program(seed, &all, NULL);
        cr_assert(!strstr(a, "static_range") && !strstr(a, "@ph.func"), "seed %llu", (unsigned long long)seed);
        unrolled += strstr(b, "ph.static_range(") != NULL;
        helped += strstr(b, "fz_keep(") != NULL;
        free(a);
        free(b);
    }
    cr_expect_gt(unrolled, 10);
    cr_expect_gt(helped, 10);
}

/* src, the program of seed, compiles and runs in the interpreter as the
 * engine runs it (its inputs filled from `fill`), with the spec given or
 * the one of its run line. */
static void expect_runs_in_interpreter(uint64_t seed, const char *src, const DtSpec *given, uint64_t fill)
{
    DtSpec spec;
    char err[256];
    if (given) spec = *given;
    else cr_assert_eq(dt_spec_from_source(&spec, src, err, sizeof err), 0, "%s", err);
    char *diags = NULL;
    IrModule *m = tu_compile("gen.ph", src, NULL, &diags);
    cr_assert_not_null(m, "seed %llu:\n%s\n%s", (unsigned long long)seed, diags ? diags : "", src);
    free(diags);
    DtReport rep;
    cr_expect_eq(dt_compare_module(m, src, &spec, &dt_interp_backend, fill, NULL, &rep), DT_SAME, "seed %llu: %s: %s",
                 (unsigned long long)seed, rep.config, rep.message);
    ir_module_free(m);
}

/* Rank-4 views come from a stream of their own too: with pct_strided 0
 * no program declares one (phgen_dump's programs); with 100 every 2-D load
 * of an input reads one, and each such program compiles and runs in the
 * interpreter, the engine passing the tensors with strides that are not
 * row-major. */
Test(phgen, strided_views_have_a_stream_of_their_own)
{
    PhgenOptions none, all;
    phgen_default_options(&none);
    none.pct_strided = 0;
    all = none;
    all.pct_strided = 100;
    int viewed = 0;
    for (uint64_t seed = 1; seed < 40; seed++) {
        DtSpec spec;
        char *a = phgen_program(seed, &none, NULL), *b = phgen_program(seed, &all, &spec);
        cr_assert(!strstr(a, "][2, "), "seed %llu", (unsigned long long)seed);
        if (strstr(b, "][2, ")) {
            viewed++;
            expect_runs_in_interpreter(seed, b, &spec, seed);
        }
        free(a);
        free(b);
    }
    cr_expect_gt(viewed, 20);
}

/* Range loops written as whiles come from a stream of their own: with
 * pct_while 0 no program has one, with 100 every range loop that is not
 * unrolled is one, and those programs compile and run in the interpreter
 * (each loop ends: its counter is a var no other statement assigns). */
Test(phgen, while_loops_have_a_stream_of_their_own)
{
    PhgenOptions none, all;
    phgen_default_options(&none);
    none.pct_while = 0;
    all = none;
    all.pct_while = 100;
    int whiles = 0;
    for (uint64_t seed = 1; seed < 60; seed++) {
        char *a = phgen_program(seed, &none, NULL), *b = phgen_program(seed, &all, NULL);
        cr_assert(!strstr(a, "while "), "seed %llu", (unsigned long long)seed);
        cr_assert(!strstr(b, " in range(") || strstr(b, "range(0, K, BK)") || strstr(b, "range(0, BM,"),
                  "seed %llu: a range loop left:\n%s", (unsigned long long)seed, b);
        if (strstr(b, "while ")) {
            whiles++;
            expect_runs_in_interpreter(seed, b, NULL, 3);
        }
        free(a);
        free(b);
    }
    cr_expect_gt(whiles, 10);
}

/* Atomic adds come from a stream of their own: none with pct_atomic 0;
 * with 100 most programs add into an output (its [BM, BN] store made an
 * add into windows moved across the tensor's edges) and some K loops of
 * tensor-core dots add each step's dot into an output of their own; such
 * programs run in the interpreter. */
Test(phgen, atomic_adds_have_a_stream_of_their_own)
{
    PhgenOptions none, all;
    phgen_default_options(&none);
    none.pct_atomic = 0;
    all = none;
    all.pct_atomic = 100;
    int added = 0, in_loops = 0;
    for (uint64_t seed = 1; seed < 80; seed++) {
        char *a = phgen_program(seed, &none, NULL), *b = phgen_program(seed, &all, NULL);
        cr_assert(!strstr(a, "ph.atomic_add("), "seed %llu", (unsigned long long)seed);
        if (strstr(b, "ph.atomic_add(")) {
            added++;
            in_loops += strstr(b, "        ph.atomic_add(") != NULL;
            expect_runs_in_interpreter(seed, b, NULL, 5);
        }
        free(a);
        free(b);
    }
    cr_expect_gt(added, 20);
    cr_expect_gt(in_loops, 3);
}

/* Device asserts come from a stream of their own, always hold (the
 * interpreter runs every such program without a failed assert), and no
 * program prints. */
Test(phgen, device_asserts_have_a_stream_of_their_own_and_hold)
{
    PhgenOptions none, all;
    phgen_default_options(&none);
    none.pct_assert = 0;
    all = none;
    all.pct_assert = 30;
    int asserting = 0;
    for (uint64_t seed = 1; seed < 40; seed++) {
        char *a = phgen_program(seed, &none, NULL), *b = phgen_program(seed, &all, NULL);
        cr_assert(!strstr(a, "device_assert") && !strstr(b, "device_print"), "seed %llu", (unsigned long long)seed);
        if (strstr(b, "device_assert")) {
            asserting++;
            expect_runs_in_interpreter(seed, b, NULL, 3);
        }
        free(a);
        free(b);
    }
    cr_expect_gt(asserting, 20);
}

static bool still_fails(const char *source, const DtSpec *spec, void *user)
{
    int *runs = user;
    ++*runs;
    IrModule *m = tu_compile("cand.ph", source, NULL, NULL);
    if (!m) return false;
    DtReport rep;
    DtVerdict v = dt_compare_module(m, source, spec, &dt_planted_backend, 7, NULL, &rep);
    ir_module_free(m);
    return v == DT_MISMATCH;
}

Test(phgen, the_engine_reports_a_planted_difference)
{
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
    cr_assert_eq(dt_compare_module(m, src, &spec, &dt_planted_backend, 3, NULL, &rep), DT_MISMATCH);
    cr_expect_eq(rep.configs, 2);
    cr_expect_eq(rep.failed, 2);
    cr_expect_str_eq(rep.config, "k__BM_8__BN_8");
    cr_expect(strstr(rep.message, "Y[0, 0]: back end") != NULL, "%s", rep.message);
    cr_expect(strstr(rep.message, "1 of 180 elements differ") != NULL, "%s", rep.message);
    cr_assert_eq(dt_compare_module(m, src, &spec, &dt_planted_backend, 3, "k__BM_16__BN_8", &rep), DT_MISMATCH);
    cr_expect_eq(rep.configs, 1);
    ir_module_free(m);
}

/* Whether src holds an attention chain (phgen_stmt.c): its statements feed
 * one another down to the store, so no statement of it can go while its
 * score dot must stay, and it reduces to more than a dot loop and a store. */
static bool has_attention_chain(const char *src)
{
    return strstr(src, "ph.online_softmax(") || strstr(src, ": ph.let = ph.exp(m");
}

Test(phgen, the_reducer_keeps_the_failure_and_drops_the_rest, .timeout = 120)
{
    int reduced = 0;
    /* the programs without elements and gathers: an element moving a dot's window keeps its
     * tensor, and the counts below are those of the plain programs (which rank-4 views, drawn
     * or not, would change too; a loop written as a while keeps its counter's var, first let
     * and step: three statements more) */
    PhgenOptions opt;
    phgen_default_options(&opt);
    opt.pct_index = 0;
    opt.pct_strided = 0;
    opt.pct_while = 0;
    for (uint64_t seed = 1; seed < 400 && reduced < 3; seed++) {
        PhgenProgram *p = phgen_generate(seed, &opt);
        char *src = phgen_source(p);
        int runs = 0;
        if (phgen_count_stmts(p) < 6 || has_attention_chain(src) || !still_fails(src, phgen_spec(p), &runs)) {
            free(src);
            phgen_free(p);
            continue;
        }
        int before = phgen_count_stmts(p);
        int steps = phgen_reduce(p, still_fails, &runs, 2000);
        char *small = phgen_source(p);
        cr_assert(still_fails(small, phgen_spec(p), &runs), "the reduced program lost the failure:\n%s", small);
        cr_expect_gt(steps, 0);
        cr_expect_lt(phgen_count_stmts(p), before, "seed %llu", (unsigned long long)seed);
        /* what is left: the dot's accumulator, its loop and update, and a store, give or take a let */
        cr_expect_leq(phgen_count_stmts(p), 5, "seed %llu: %d statements left\n%s", (unsigned long long)seed,
                      phgen_count_stmts(p), small);
        cr_expect(strstr(small, "ph.dot") != NULL);
        cr_expect(strstr(small, "# run: grid 1 1 1 ") != NULL, "%s", small);
        cr_expect(strstr(small, "M=1 ") != NULL, "%s", small);
        cr_expect_leq(strlen(small), strlen(src));
        reduced++;
        free(small);
        free(src);
        phgen_free(p);
    }
    cr_assert_eq(reduced, 3);
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
        IrModule *m = driver_compile_file(path, NULL, stderr);
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
