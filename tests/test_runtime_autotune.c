/* test_runtime_autotune.c: the autotuner: its switch, the timing (the
 * median run, a config far behind stopped, the closest timed again),
 * tensors restored or zeroed between runs, progress lines, and winners on
 * disk; against a fake driver (test_runtime.h), and on a real GPU where
 * there is one. */
#include "test_runtime.h"

/* ---- autotune control: the switch, the timing, tensors updated in place,
 * winners on disk ---- */
#include <dirent.h>

/* Three kernels that add 1 to X in place, with three configs each: one
 * restores X between runs, one zeroes it, one declares neither. */
static const char *bump_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "@ph.autotune_restore(\"X\")\n"
    "def bump(X: ph.tensor[ph.f32][N]):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    X[i0:+BLOCK] = X[i0:+BLOCK] + 1.0\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "@ph.autotune_zero(\"X\")\n"
    "def bump_zeroed(X: ph.tensor[ph.f32][N]):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    X[i0:+BLOCK] = X[i0:+BLOCK] + 1.0\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "def bump_plain(X: ph.tensor[ph.f32][N], n: ph.i32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    X[i0:+BLOCK] = X[i0:+BLOCK] + 1.0\n";

static ph_kernel *bump_kernel(ph_module **m, const char *name)
{
    cr_assert_eq(ph_module_load_string("bump.ph", bump_src, m), PH_OK, "%s", ph_last_error());
    ph_kernel *k = NULL;
    cr_assert_eq(ph_kernel_get(*m, name, &k), PH_OK, "%s", ph_last_error());
    return k;
}

/* The launch of a bump kernel over n floats (bump_plain's second argument
 * is n, for its signature). */
static ph_status bump_launch(ph_kernel *k, ph_devptr x, long *n)
{
    ph_arg args[2] = {ph_tensor1(x, *n), ph_i32((int32_t)*n)};
    return ph_launch(k, grid_of_n, n, args, ph_kernel_param_count(k));
}

static char *temp_cache_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/phobos-tune-test.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void remove_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The files in dir ending in suffix. */
static int files_ending(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name), slen = strlen(suffix);
        n += len > slen && !strcmp(e->d_name + len - slen, suffix);
    }
    closedir(d);
    return n;
}

Test(autotune, the_switch_reads_the_environment)
{
    static const char *const off[] = {"0", "off", "No", "FALSE"}, *const on[] = {"1", "on", "yes", "True"};
    for (int i = 0; i < 4; i++) {
        cr_assert(!ph_internal_env_switch(off[i], true), "%s", off[i]);
        cr_assert(ph_internal_env_switch(on[i], false), "%s", on[i]);
    }
    cr_assert(ph_internal_env_switch(NULL, true));
    cr_assert(!ph_internal_env_switch("", false), "an empty value is no value");
    cr_assert(ph_internal_env_switch("maybe", true));
    unsetenv("PHOBOS_AUTOTUNE");
    cr_assert(ph_internal_autotune_enabled(), "on by default");
    setenv("PHOBOS_AUTOTUNE", "0", 1);
    cr_assert(!ph_internal_autotune_enabled());
    ph_set_autotune(1);
    cr_assert(ph_internal_autotune_enabled(), "the API's choice over the environment's");
    ph_set_autotune(-1);
    cr_assert(!ph_internal_autotune_enabled(), "-1: the environment's again");
    unsetenv("PHOBOS_AUTOTUNE");
    ph_set_autotune(0);
    cr_assert(!ph_internal_autotune_enabled());
    ph_set_autotune(-1);
}

/* Off, a launch runs the first eligible config the driver accepts and
 * times nothing: one launch, no event, no flush. */
Test(autotune, off_runs_the_first_eligible_config)
{
    use_fake_driver();
    setenv("PHOBOS_AUTOTUNE", "0", 1);
    fake.fast = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    cr_assert_eq(fake.ntimings, 0);
    cr_assert_str_eq(fake.trace, "L", "one launch and nothing else");
    cr_assert_eq(fake.nloads, 1, "the config launched is the only one generated and loaded");
    ph_module_free(m);

    /* the first the driver accepts, the configs after it left alone */
    fake.refuse[0] = "vadd__BLOCK_128";
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    cr_assert_eq(fake.ntimings, 0);
    cr_assert_eq(fake.nloads, 3);
    cr_assert_str_eq(fake.loaded[1], "vadd__BLOCK_128");
    cr_assert_str_eq(fake.loaded[2], "vadd__BLOCK_256");

    /* the API over the environment: tuned */
    ph_set_autotune(1);
    args[0].dims[0] = args[1].dims[0] = args[2].dims[0] = 2048;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 2 * PH_TUNE_RUNS);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");
    ph_set_autotune(-1);
    unsetenv("PHOBOS_AUTOTUNE");
    ph_module_free(m);
    ph_shutdown();
}

/* A config whose one fast run is a fluke loses to a steadier one: the
 * median counts, not the best run. */
Test(autotune, the_median_run_decides)
{
    use_fake_driver();
    fake.fluke = "vadd__BLOCK_128";   /* 0.1 ms once, then 3 ms; the others 2 ms */
    ph_module *m;
    ph_kernel *k = vadd_launched(&m);
    cr_assert_eq(fake.fluke_runs, PH_TUNE_RUNS);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    ph_module_free(m);
    ph_shutdown();
}

/* Pruning: a config whose first timed run is over PH_TUNE_PRUNE times the
 * best median so far stops there, and the log says so; one at exactly
 * twice is timed whole. The first config timed has nothing to lose to:
 * timed whole however slow. One thread compiles, so the configs are timed
 * in config order; new dims are timed in that order too. */
Test(autotune, a_config_far_behind_stops_after_its_first_run)
{
    setenv("PHOBOS_COMPILE_THREADS", "1", 1);
    use_fake_driver();
    char *log = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&log, &len);
    ph_internal_autotune_log(out);
    ph_set_autotune_verbose(1);
    fake.clock[0].config = "vadd__BLOCK_128", fake.clock[0].first = 1.0f;
    fake.clock[1].config = "vadd__BLOCK_256", fake.clock[1].first = 2.5f;
    fake.clock[2].config = "vadd__BLOCK_512", fake.clock[2].first = 2.0f;
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.clock[0].runs, PH_TUNE_RUNS);
    cr_assert_eq(fake.clock[1].runs, 1, "2.5 ms against 1 ms: stopped after one run, not %d", fake.clock[1].runs);
    cr_assert_eq(launches_of("vadd__BLOCK_256"), PH_TUNE_WARMUPS + 1);
    cr_assert_eq(fake.clock[2].runs, PH_TUNE_RUNS, "twice the best is not over it");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    fflush(out);
    char want[1024];
    snprintf(want, sizeof want,
             "phobos: tuning vadd (3 configs) 1/3 vadd__BLOCK_128: 1.0000 ms\n"
             "phobos: tuning vadd (3 configs) 2/3 vadd__BLOCK_256: 2.5000 ms, its first run, over 2 times the best so far "
             "(1.0000 ms): stopped\n"
             "phobos: tuning vadd (3 configs) 3/3 vadd__BLOCK_512: 2.0000 ms\n"
             "phobos: tuned vadd (3 configs): vadd__BLOCK_128, 1.0000 ms (median of %d runs)\n", PH_TUNE_RUNS);
    cr_assert_str_eq(log, want);

    /* new dims, the configs loaded: the slow first is timed whole */
    for (int i = 0; i < 3; i++) fake.clock[i].runs = 0;
    fake.clock[0].first = 5.0f, fake.clock[1].first = 1.0f, fake.clock[2].first = 2.5f;
    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.clock[0].runs, PH_TUNE_RUNS, "the first timed: nothing to be behind");
    cr_assert_eq(fake.clock[1].runs, PH_TUNE_RUNS);
    cr_assert_eq(fake.clock[2].runs, 1);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    ph_set_autotune_verbose(-1);
    ph_internal_autotune_log(NULL);
    fclose(out);
    free(log);
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

static const char *eight_configs_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[64, 128, 256, 512, 1024, 32, 16, 8])\n"
    "def v8(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n";

/* After the first timing, the configs within PH_TUNE_CLOSE_PERCENT of the
 * fastest, the PH_TUNE_RETIMED fastest of them, are timed again and the
 * second times decide: here the first timing's winner (BLOCK 64) loses
 * the second to BLOCK 256; BLOCK 8, close but seventh, and BLOCK 128,
 * not close, are timed once. With only the fastest close, nothing is
 * timed again, though a second time would have crowned another. */
Test(autotune, the_closest_configs_are_timed_again_and_decide)
{
    use_fake_driver();
    char *log = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&log, &len);
    ph_internal_autotune_log(out);
    ph_set_autotune_verbose(1);
    enum { N = 8 };
    const char *names[N] = {"v8__BLOCK_64", "v8__BLOCK_128", "v8__BLOCK_256", "v8__BLOCK_512",
                            "v8__BLOCK_1024", "v8__BLOCK_32", "v8__BLOCK_16", "v8__BLOCK_8"};
    const float first[N] = {1.0f, 1.16f, 1.10f, 1.12f, 1.14f, 1.13f, 1.11f, 1.145f};
    const float again[N] = {1.0f, 0.5f, 0.9f, 0, 0, 1.05f, 0, 0.1f};
    for (int i = 0; i < N; i++) fake.clock[i].config = names[i], fake.clock[i].first = first[i], fake.clock[i].again = again[i];
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v8.ph", eight_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "v8", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    const int twice[N] = {1, 0, 1, 1, 1, 1, 1, 0};
    for (int i = 0; i < N; i++)
        cr_assert_eq(fake.clock[i].runs, PH_TUNE_RUNS + twice[i] * PH_TUNE_ROUNDS, "%s: %d timed runs", names[i], fake.clock[i].runs);
    cr_assert_str_eq(ph_kernel_last_config(k), "v8__BLOCK_256");
    fflush(out);
    cr_assert(strstr(log, "phobos: tuning v8 (8 configs) again 1/6 v8__BLOCK_64: 1.0000 ms\n"
                          "phobos: tuning v8 (8 configs) again 2/6 v8__BLOCK_256: 0.9000 ms\n"
                          "phobos: tuning v8 (8 configs) again 3/6 v8__BLOCK_512: 1.1200 ms\n"
                          "phobos: tuning v8 (8 configs) again 4/6 v8__BLOCK_1024: 1.1400 ms\n"
                          "phobos: tuning v8 (8 configs) again 5/6 v8__BLOCK_32: 1.0500 ms\n"
                          "phobos: tuning v8 (8 configs) again 6/6 v8__BLOCK_16: 1.1100 ms\n"
                          "phobos: tuned v8 (8 configs): v8__BLOCK_256, 0.9000 ms (median of 11 runs)\n"), "%s", log);

    /* new dims: BLOCK 128 is not close, and is not timed again */
    for (int i = 0; i < N; i++) fake.clock[i].runs = 0, fake.clock[i].first = 1.9f, fake.clock[i].again = 0;
    fake.clock[0].first = 1.0f;
    fake.clock[1].first = 1.16f, fake.clock[1].again = 0.5f;
    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    for (int i = 0; i < N; i++) cr_assert_eq(fake.clock[i].runs, PH_TUNE_RUNS, "%s: %d timed runs", names[i], fake.clock[i].runs);
    cr_assert_str_eq(ph_kernel_last_config(k), "v8__BLOCK_64");
    ph_set_autotune_verbose(-1);
    ph_internal_autotune_log(NULL);
    fclose(out);
    free(log);
    ph_module_free(m);
    ph_shutdown();
}

/* A GPU's clock moves while it is timed (at its power limit, by a
 * quarter in a tenth of a second): here every timed run takes 1% longer
 * than the one before. BLOCK 256 is truly faster (0.99 against 1.00 ms),
 * and timed after BLOCK 128 it would have lost: the second timing runs the
 * two in turns, so each sees the same clocks, and it wins. */
Test(autotune, the_second_timing_takes_turns_so_a_drifting_clock_does_not_decide)
{
    use_fake_driver();
    fake.drift = 0.01f;
    fake.clock[0].config = "vadd__BLOCK_128", fake.clock[0].first = 1.0f, fake.clock[0].again = 1.0f;
    fake.clock[1].config = "vadd__BLOCK_256", fake.clock[1].first = 1.05f, fake.clock[1].again = 0.99f;
    fake.clock[2].config = "vadd__BLOCK_512", fake.clock[2].first = 3.0f;
    ph_module *m;
    ph_kernel *k = vadd_launched(&m);
    cr_assert_eq(fake.clock[0].runs, PH_TUNE_RUNS + PH_TUNE_ROUNDS);
    cr_assert_eq(fake.clock[1].runs, PH_TUNE_RUNS + PH_TUNE_ROUNDS);
    cr_assert(fake.clock[2].runs <= PH_TUNE_RUNS, "3 ms against 1: not timed again (%d runs)", fake.clock[2].runs);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    ph_module_free(m);
    ph_shutdown();
}

/* What the autotuner does around each run of each config, as the trace
 * of driver calls shows it: `per_run` before each timed launch and
 * `before` before the warm-up; `first` once before all, `last` once after,
 * then an event that the scratch waits for before it is freed. */
static void expect_tuning_trace(const char *first, const char *before, const char *per_run, const char *last, int configs)
{
    char want[8192] = "";
    strcat(want, first);
    for (int c = 0; c < configs; c++) {
        for (int w = 0; w < PH_TUNE_WARMUPS; w++) strcat(strcat(want, before), "L");
        for (int r = 0; r < PH_TUNE_RUNS; r++) strcat(strcat(want, per_run), "FRLR");
    }
    /* the second timing: a warm-up each, then rounds of one run each */
    for (int c = 0; c < configs; c++)
        for (int w = 0; w < PH_TUNE_WARMUPS; w++) strcat(strcat(want, before), "L");
    for (int r = 0; r < PH_TUNE_ROUNDS * configs; r++) strcat(strcat(want, per_run), "FRLR");
    strcat(strcat(want, last), "RL");
    cr_assert_str_eq(fake.trace, want);
}

/* Three configs of one time, as bump's are on the fake clock, are each
 * timed, then, all three close to the fastest, timed again in rounds:
 * the launches and timed runs of a tuning. */
enum {
    BUMP_CONFIGS = 3,
    BUMP_TIMINGS = BUMP_CONFIGS * (PH_TUNE_RUNS + PH_TUNE_ROUNDS),
    BUMP_LAUNCHES = BUMP_CONFIGS * (2 * PH_TUNE_WARMUPS + PH_TUNE_RUNS + PH_TUNE_ROUNDS)
};

/* @ph.autotune_restore: X is saved (C), copied back before every run (C),
 * the L2 flushed (F) before each timed one, and copied back once more for
 * the launch kept, so a tuned first launch adds exactly 1; a second launch
 * is one launch. Without it, X would have seen every run. The three
 * configs take the same time: each is timed twice (BUMP_TIMINGS), the
 * second time too between copies. */
Test(autotune, a_restored_tensor_sees_one_launch)
{
    use_fake_driver();
    fake.add_one = true;
    ph_module *m;
    ph_kernel *k = bump_kernel(&m, "bump");
    long n = 512;
    ph_devptr x;
    cr_assert_eq(ph_malloc(&x, (size_t)n * 4), PH_OK, "%s", ph_last_error());
    float *host = (float *)(uintptr_t)x;
    for (long i = 0; i < n; i++) host[i] = (float)i * 0.5f;
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, BUMP_TIMINGS, "tuned");
    expect_tuning_trace("C", "C", "C", "C", BUMP_CONFIGS);
    for (long i = 0; i < n; i++) cr_assert_eq(host[i], (float)i * 0.5f + 1, "X[%ld] = %g", i, host[i]);

    fake.ntrace = 0;
    memset(fake.trace, 0, sizeof fake.trace);
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(fake.trace, "L", "tuned dims: nothing restored");
    for (long i = 0; i < n; i++) cr_assert_eq(host[i], (float)i * 0.5f + 2, "X[%ld] = %g", i, host[i]);

    /* the control: declaring nothing, X takes every run */
    ph_kernel *plain;
    cr_assert_eq(ph_kernel_get(m, "bump_plain", &plain), PH_OK);
    for (long i = 0; i < n; i++) host[i] = 0;
    cr_assert_eq(bump_launch(plain, x, &n), PH_OK, "%s", ph_last_error());
    cr_assert_eq(host[0], BUMP_LAUNCHES + 1, "X[0] = %g", host[0]);
    ph_module_free(m);
    ph_shutdown();
}

/* @ph.autotune_zero: X is zeroed (Z) before every run and before the
 * launch kept, which starts from zeros: X is 1 wherever it was. */
Test(autotune, a_zeroed_tensor_starts_each_run_from_zeros)
{
    use_fake_driver();
    fake.add_one = true;
    ph_module *m;
    ph_kernel *k = bump_kernel(&m, "bump_zeroed");
    long n = 512;
    ph_devptr x;
    cr_assert_eq(ph_malloc(&x, (size_t)n * 4), PH_OK, "%s", ph_last_error());
    float *host = (float *)(uintptr_t)x;
    for (long i = 0; i < n; i++) host[i] = 7.0f;
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    expect_tuning_trace("", "Z", "Z", "Z", BUMP_CONFIGS);
    for (long i = 0; i < n; i++) cr_assert_eq(host[i], 1.0f, "X[%ld] = %g", i, host[i]);
    ph_module_free(m);
    ph_shutdown();
}

/* ph_kernel_set_restore and ph_kernel_set_zero do what the decorators do,
 * for a kernel that declares neither; bad names are refused. */
Test(autotune, the_api_names_tensors_to_restore_or_zero)
{
    use_fake_driver();
    fake.add_one = true;
    ph_module *m;
    ph_kernel *k = bump_kernel(&m, "bump_plain");
    cr_assert_eq(ph_kernel_set_restore(k, "X"), PH_OK, "%s", ph_last_error());
    long n = 256;
    ph_devptr x;
    cr_assert_eq(ph_malloc(&x, (size_t)n * 4), PH_OK, "%s", ph_last_error());
    float *host = (float *)(uintptr_t)x;
    for (long i = 0; i < n; i++) host[i] = (float)i;
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    expect_tuning_trace("C", "C", "C", "C", BUMP_CONFIGS);
    for (long i = 0; i < n; i++) cr_assert_eq(host[i], (float)i + 1, "X[%ld] = %g", i, host[i]);

    cr_assert_eq(ph_kernel_set_zero(k, "X"), PH_OK, "%s", ph_last_error());
    n = 128;   /* new dims: tuned again, X zeroed this time */
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    for (long i = 0; i < n; i++) cr_assert_eq(host[i], 1.0f, "X[%ld] = %g", i, host[i]);

    cr_assert_eq(ph_kernel_set_restore(k, "Q"), PH_ERR_INVALID);
    cr_assert_str_eq(ph_last_error(), "bump_plain has no parameter named 'Q'");
    cr_assert_eq(ph_kernel_set_zero(k, "n"), PH_ERR_INVALID);
    cr_assert_str_eq(ph_last_error(), "bump_plain: parameter 'n' is a scalar; only a tensor is restored or zeroed");
    cr_assert_eq(ph_kernel_set_restore(NULL, "X"), PH_ERR_INVALID);
    cr_assert_eq(ph_kernel_set_zero(k, NULL), PH_ERR_INVALID);
    ph_module_free(m);
    ph_shutdown();
}

/* The progress lines: one per config and the winner, when asked (by the
 * API or PHOBOS_AUTOTUNE_VERBOSE); none when not, nor by default off a
 * terminal. One thread compiles: the configs are timed as they are ready,
 * in config order. */
Test(autotune, progress_lines_when_asked)
{
    setenv("PHOBOS_COMPILE_THREADS", "1", 1);
    use_fake_driver();
    char *log = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&log, &len);
    ph_internal_autotune_log(out);
    ph_set_autotune_verbose(1);
    fake.fast = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    fflush(out);
    char want[1024];
    snprintf(want, sizeof want,
             "phobos: tuning vadd (3 configs) 1/3 vadd__BLOCK_128: 2.0000 ms\n"
             "phobos: tuning vadd (3 configs) 2/3 vadd__BLOCK_256: 1.0000 ms\n"
             "phobos: tuning vadd (3 configs) 3/3 vadd__BLOCK_512: 2.0000 ms\n"
             "phobos: tuned vadd (3 configs): vadd__BLOCK_256, 1.0000 ms (median of %d runs)\n", PH_TUNE_RUNS);
    cr_assert_str_eq(log, want);

    size_t said = strlen(log);
    ph_set_autotune_verbose(0);
    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    ph_set_autotune_verbose(-1);   /* the environment's say, then none off a terminal */
    for (int i = 0; i < 3; i++) args[i].dims[0] = 4096;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    fflush(out);
    cr_assert_eq(strlen(log), said, "nothing more: %s", log + said);

    setenv("PHOBOS_AUTOTUNE_VERBOSE", "1", 1);
    for (int i = 0; i < 3; i++) args[i].dims[0] = 8192;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    fflush(out);
    cr_assert(strstr(log + said, "phobos: tuned vadd (3 configs): vadd__BLOCK_256") != NULL, "%s", log + said);
    unsetenv("PHOBOS_AUTOTUNE_VERBOSE");
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_internal_autotune_log(NULL);
    fclose(out);
    free(log);
    ph_module_free(m);
    ph_shutdown();
}

/* The on-disk winner's key holds each part that makes it (the kernel, its
 * config space, the dims, the device, the build); a file written is read
 * back, and one that is not whole and exactly for the key is ignored. */
Test(autotune, winner_files_and_their_keys)
{
    char *dir = temp_cache_dir();
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    IrModule *ir = driver_compile_string("v.ph", three_configs_src, NULL, NULL);
    cr_assert_not_null(ir);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    const char *gpu = "Fake GPU, sm_90, 132 SMs";
    char *key = ph_internal_tune_key(ir->funcs[0], 0x1234, args, 4, gpu);
    const char *build = ph_internal_build_id();
    cr_assert(!strncmp(build, ph_version(), strlen(ph_version())) && strlen(build) > strlen(ph_version()) + 8, "%s", build);
    char want[512];
    snprintf(want, sizeof want, "phobos autotune 1\nkernel vadd\nspace 0000000000001234\ndims 1024 1024 1024\n"
             "device Fake GPU, sm_90, 132 SMs\nbuild %s\n", build);
    cr_assert_str_eq(key, want);
    ph_arg two[2] = {ph_tensor2(0x10000, 16, 64), ph_tensor2(0x20000, 16, 64)};
    char *key2 = ph_internal_tune_key(ir->funcs[3], 0x1234, two, 2, gpu);
    cr_assert(strstr(key2, "kernel twod\n") && strstr(key2, "\ndims 16x64 16x64\n"), "%s", key2);

    /* each part changes the file */
    char path[1200], other[1200];
    cr_assert(ph_internal_tune_path(key, path, sizeof path));
    cr_assert(!strncmp(path, dir, strlen(dir)) && !strcmp(path + strlen(path) - 5, ".tune"), "%s", path);
    char *variants[3];
    args[0].dims[0] = args[1].dims[0] = args[2].dims[0] = 2048;
    variants[0] = ph_internal_tune_key(ir->funcs[0], 0x1234, args, 4, gpu);
    args[0].dims[0] = args[1].dims[0] = args[2].dims[0] = 1024;
    variants[1] = ph_internal_tune_key(ir->funcs[0], 0x1235, args, 4, gpu);
    variants[2] = ph_internal_tune_key(ir->funcs[0], 0x1234, args, 4, "Fake GPU, sm_80, 108 SMs");
    for (int i = 0; i < 3; i++) {
        cr_assert(ph_internal_tune_path(variants[i], other, sizeof other));
        cr_assert_str_neq(other, path, "variant %d", i);
    }

    char winner[256] = "";
    cr_assert(!ph_internal_tune_read(path, key, winner, sizeof winner), "no file yet");
    cr_assert(ph_internal_tune_write(path, key, "vadd__BLOCK_256", 0.25f));
    cr_assert(ph_internal_tune_read(path, key, winner, sizeof winner));
    cr_assert_str_eq(winner, "vadd__BLOCK_256");
    cr_assert(!ph_internal_tune_read(path, variants[0], winner, sizeof winner), "another key's file");
    cr_assert_eq(files_ending(dir, ".tmp"), 0, "nothing left aside");
    cr_assert_eq(files_ending(dir, ".tune"), 1);

    /* corrupt files are ignored */
    const char *tails[] = {"", "winner \n", "winner vadd__BLOCK_256", "winner vadd BLOCK\n", "winn"};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        FILE *f = fopen(path, "wb");
        fprintf(f, "%s%s", key, tails[i]);
        fclose(f);
        cr_assert(!ph_internal_tune_read(path, key, winner, sizeof winner), "read a file ending '%s'", tails[i]);
    }
    FILE *f = fopen(path, "wb");
    fputs("\x7f" "ELF garbage", f);
    fclose(f);
    cr_assert(!ph_internal_tune_read(path, key, winner, sizeof winner));
    cr_assert(ph_internal_tune_write(path, key, "vadd__BLOCK_512", 0.25f), "written over");
    cr_assert(ph_internal_tune_read(path, key, winner, sizeof winner));
    cr_assert_str_eq(winner, "vadd__BLOCK_512");

    setenv("PHOBOS_CACHE_DIR", "off", 1);
    cr_assert(!ph_internal_tune_path(key, other, sizeof other), "the cache off: no file");
    unsetenv("PHOBOS_CACHE_DIR");
    for (int i = 0; i < 3; i++) free(variants[i]);
    free(key);
    free(key2);
    ir_module_free(ir);
    remove_dir(dir);
}

/* @ph.autotune_key("mode"): each value of mode gets a tuning of its own,
 * in memory and on disk (a "values" line in the key); a scalar not named
 * there (n) tunes nothing again. */
Test(autotune, a_key_scalar_tunes_each_of_its_values)
{
    static const char *keyed_src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "@ph.autotune(BLOCK=[128, 256, 512])\n"
        "@ph.autotune_key(\"mode\")\n"
        "def vkeyed(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], mode: ph.i32, n: ph.i32):\n"
        "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
        "    Z[i0:+BLOCK] = X[i0:+BLOCK] + Y[i0:+BLOCK]\n";
    use_fake_driver();
    char *dir = temp_cache_dir();
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("k.ph", keyed_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vkeyed", &k), PH_OK);
    ph_arg args[5] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_i32(0), ph_i32(7)};
    static const int mode[] = {0, 0, 1, 0, 1};
    static const int n[] = {7, 8, 7, 9, 10};
    static const bool tunes[] = {true, false, true, false, false};
    for (int i = 0; i < 5; i++) {
        args[3] = ph_i32(mode[i]), args[4] = ph_i32(n[i]);
        int before = fake.ntimings;
        cr_assert_eq(ph_launch(k, grid1, NULL, args, 5), PH_OK, "%s", ph_last_error());
        cr_assert_eq(fake.ntimings > before, tunes[i], "launch %d (mode %d, n %d): %s", i, mode[i], n[i],
                     tunes[i] ? "not tuned" : "tuned again");
    }
    cr_assert_eq(files_ending(dir, ".tune"), 2, "a winner file for each value of mode");
    IrModule *ir = driver_compile_string("k.ph", keyed_src, NULL, NULL);
    cr_assert_not_null(ir);
    char *key = ph_internal_tune_key(ir->funcs[0], 0x1234, args, 5, "Fake GPU");
    cr_assert(strstr(key, "\ndims 1024 1024 1024\nvalues mode=1\ndevice Fake GPU\n"), "%s", key);
    free(key);
    ir_module_free(ir);
    ph_module_free(m);
    ph_shutdown();
    unsetenv("PHOBOS_CACHE_DIR");
    remove_dir(dir);
}

/* A winner tuned once is on disk: the same kernel loaded again, after
 * ph_shutdown and ph_init, launches it for the same dims without timing
 * anything, though another config would now win; other dims, an edited
 * source or a corrupt file mean tuning again; autotuning off reads nothing. */
Test(autotune, a_winner_on_disk_is_used_by_a_later_load)
{
    use_fake_driver();
    char *dir = temp_cache_dir();
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    fake.fast = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 3 * PH_TUNE_RUNS);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");
    cr_assert_eq(files_ending(dir, ".tune"), 1);
    ph_module_free(m);
    ph_shutdown();

    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    fake.fast = "vadd__BLOCK_128";   /* what a new tuning would pick */
    int launched = fake.nlaunches;
    char *log = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&log, &len);
    ph_internal_autotune_log(out);
    ph_set_autotune_verbose(1);
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 3 * PH_TUNE_RUNS, "nothing timed");
    cr_assert_eq(fake.nlaunches, launched + 1, "one launch");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512", "the stored winner");
    cr_assert_eq(fake.nloads, 3 + 1, "the stored winner is the only config generated and loaded");
    cr_assert_str_eq(fake.loaded[3], "vadd__BLOCK_512");
    fflush(out);
    cr_assert(strstr(log, "phobos: vadd: vadd__BLOCK_512, as tuned before (") != NULL, "%s", log);
    ph_set_autotune_verbose(-1);
    ph_internal_autotune_log(NULL);
    fclose(out);
    free(log);

    /* other dims: tuned, and kept beside */
    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 6 * PH_TUNE_RUNS);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    cr_assert_eq(files_ending(dir, ".tune"), 2);
    for (int i = 0; i < 3; i++) args[i].dims[0] = 1024;
    ph_module_free(m);

    /* autotuning off: the first eligible config, whatever the disk says */
    ph_set_autotune(0);
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    ph_set_autotune(-1);
    ph_module_free(m);

    /* an edited source is another config space */
    char *edited = malloc(strlen(three_configs_src) + 16);
    sprintf(edited, "%s# edited\n", three_configs_src);
    cr_assert_eq(ph_module_load_string("v.ph", edited, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 9 * PH_TUNE_RUNS, "tuned again");
    ph_module_free(m);
    free(edited);

    /* every file corrupt: tuned again, and the file written anew */
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".tune")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "wb");
        fputs("phobos autotune 1\nkernel vadd\nspa", f);
        fclose(f);
    }
    closedir(d);
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
        cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
        cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
        cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
        cr_assert_eq(fake.ntimings, 12 * PH_TUNE_RUNS, "round %d: tuned the first time only", round);
        ph_module_free(m);
    }
    unsetenv("PHOBOS_CACHE_DIR");
    remove_dir(dir);
    ph_shutdown();
}

/* ---- autotune control on a real GPU (skipped without one) ---- */

static void need_gpu(void)
{
    if (ph_init(0) == PH_OK) return;
    if (getenv("PHOBOS_REQUIRE_GPU")) cr_assert_fail("no GPU: %s", ph_last_error());
    cr_skip_test("no GPU: %s", ph_last_error());
}

enum { GPU_N = 1 << 20 };

/* X[i] = i % 1000 / 2 on the device: exact in f32, as are X + 1 and X + 17. */
static ph_devptr gpu_ramp(float *host)
{
    ph_devptr x;
    cr_assert_eq(ph_malloc(&x, GPU_N * 4), PH_OK, "%s", ph_last_error());
    for (long i = 0; i < GPU_N; i++) host[i] = (float)(i % 1000) * 0.5f;
    cr_assert_eq(ph_memcpy_htod(x, host, GPU_N * 4), PH_OK, "%s", ph_last_error());
    return x;
}

/* X holds ramp + add, exactly. */
static void gpu_expect(ph_devptr x, const float *ramp, float add)
{
    float *back = malloc(GPU_N * 4);
    cr_assert_eq(ph_synchronize(), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_memcpy_dtoh(back, x, GPU_N * 4), PH_OK, "%s", ph_last_error());
    for (long i = 0; i < GPU_N; i++) cr_assert_eq(back[i], ramp[i] + add, "X[%ld] = %g, not %g", i, back[i], ramp[i] + add);
    free(back);
}

/* Autotuning off: one launch (X += 1 once), of the first config. */
Test(autotune_gpu, off_launches_once)
{
    need_gpu();
    setenv("PHOBOS_CACHE_DIR", "off", 1);
    ph_set_autotune(0);
    float *ramp = malloc(GPU_N * 4);
    ph_devptr x = gpu_ramp(ramp);
    ph_module *m;
    ph_kernel *k = bump_kernel(&m, "bump_plain");
    long n = GPU_N;
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    gpu_expect(x, ramp, 1);
    cr_assert_str_eq(ph_kernel_last_config(k), "bump_plain__BLOCK_128");
    ph_set_autotune(-1);
    ph_free(x);
    free(ramp);
    ph_module_free(m);
}

/* A tuned first launch (its progress lines say so) leaves a restored
 * tensor one increment on, and a zeroed one at exactly one launch's worth. */
Test(autotune_gpu, restored_and_zeroed_tensors_see_one_launch)
{
    need_gpu();
    setenv("PHOBOS_CACHE_DIR", "off", 1);
    char *log = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&log, &len);
    ph_internal_autotune_log(out);
    ph_set_autotune_verbose(1);
    float *ramp = malloc(GPU_N * 4), *zeros = calloc(GPU_N, 4);
    ph_devptr x = gpu_ramp(ramp);
    ph_module *m;
    ph_kernel *k = bump_kernel(&m, "bump");
    long n = GPU_N;
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    gpu_expect(x, ramp, 1);
    cr_assert_eq(ph_kernel_get(m, "bump_zeroed", &k), PH_OK);
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    gpu_expect(x, zeros, 1);
    fflush(out);
    cr_assert(strstr(log, "phobos: tuned bump (3 configs): ") && strstr(log, "phobos: tuned bump_zeroed (3 configs): "), "%s", log);
    ph_internal_autotune_log(NULL);
    ph_set_autotune_verbose(-1);
    fclose(out);
    free(log);
    ph_free(x);
    free(ramp);
    free(zeros);
    ph_module_free(m);
}

/* The winner kept on disk is launched by a later load, after ph_shutdown
 * and ph_init, without timing: X += 1 exactly once, with no restore. */
Test(autotune_gpu, a_stored_winner_is_launched_without_timing)
{
    need_gpu();
    char *dir = temp_cache_dir();
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    float *ramp = malloc(GPU_N * 4);
    ph_devptr x = gpu_ramp(ramp);
    ph_module *m;
    ph_kernel *k = bump_kernel(&m, "bump_plain");
    long n = GPU_N;
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_synchronize(), PH_OK, "%s", ph_last_error());
    char winner[256];
    snprintf(winner, sizeof winner, "%s", ph_kernel_last_config(k));
    cr_assert_eq(files_ending(dir, ".tune"), 1);
    ph_free(x);
    ph_module_free(m);
    ph_shutdown();

    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    x = gpu_ramp(ramp);
    k = bump_kernel(&m, "bump_plain");
    cr_assert_eq(bump_launch(k, x, &n), PH_OK, "%s", ph_last_error());
    gpu_expect(x, ramp, 1);
    cr_assert_str_eq(ph_kernel_last_config(k), winner);
    ph_free(x);
    free(ramp);
    ph_module_free(m);
    unsetenv("PHOBOS_CACHE_DIR");
    remove_dir(dir);
}
