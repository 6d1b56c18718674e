/* test_runtime.c: the runtime's checks that need no GPU: a missing driver
 * said plainly, compile errors and unknown kernels reported, and every
 * argument check refusing a bad launch before anything reaches a device;
 * the PTX disk cache and code generation on threads; dtypes, strides, and
 * launches from several threads at once on the interpreter. The fake
 * driver's suites are test_runtime_load.c, test_runtime_launch.c and
 * test_runtime_autotune.c. */
#include "test_runtime.h"

Test(runtime, no_driver_is_said_plainly)
{
    if (driver_present()) cr_skip_test("a CUDA driver is installed here: the no-driver path is not reachable");
    cr_assert_eq(ph_init(0), PH_ERR_NO_DRIVER);
    cr_assert(strstr(ph_last_error(), "no CUDA driver on this machine") != NULL, "%s", ph_last_error());
    cr_assert_eq(ph_malloc(&(ph_devptr){0}, 16), PH_ERR_STATE);
}

Test(runtime, compile_errors_carry_the_diagnostics)
{
    ph_module *m = NULL;
    cr_assert_eq(ph_module_load_string("bad.ph", "import phobos.lang as ph\n@ph.kernel\ndef k(n: ph.i32):\n    x: ph.let = n / 2\n", &m), PH_ERR_COMPILE);
    cr_assert_null(m);
    cr_assert(strstr(ph_last_error(), "bad.ph:4:") != NULL, "%s", ph_last_error());
    cr_assert_eq(ph_module_load_file("/nonexistent/k.ph", &m), PH_ERR_NOT_FOUND, "%s", ph_last_error());
}

/* ph_compile, ahead of time and without ph_init: every config by
 * default; a kernel and a -D's worth of options narrow it to one entry;
 * LLVM IR on request; errors come back as diagnostics or PH_ERR_INVALID. */
Test(runtime, compile_ahead_of_time)
{
    char *text = NULL;
    cr_assert_eq(ph_compile("v.ph", vecadd_src, NULL, &text), PH_OK, "%s", ph_last_error());
    cr_expect(strstr(text, ".target sm_90") != NULL);
    static const char *const entries[] = {".entry vadd__BLOCK_128(", ".entry vadd__BLOCK_256(", ".entry twod("};
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) cr_expect(strstr(text, entries[i]) != NULL, "no %s", entries[i]);
    free(text);

    const char *names[] = {"BLOCK"};
    int64_t values[] = {256};
    ph_compile_options o = {"sm_80", PH_EMIT_PTX, 1, "vadd", 1, names, values, 0, 0};
    cr_assert_eq(ph_compile("v.ph", vecadd_src, &o, &text), PH_OK, "%s", ph_last_error());
    cr_expect(strstr(text, ".target sm_80") && strstr(text, ".entry vadd__BLOCK_256("), "%.400s", text);
    cr_expect(!strstr(text, "vadd__BLOCK_128") && !strstr(text, "twod"), "%.400s", text);
    free(text);

    o.emit = PH_EMIT_LLVM;
    cr_assert_eq(ph_compile("v.ph", vecadd_src, &o, &text), PH_OK, "%s", ph_last_error());
    cr_expect(strstr(text, "define ptx_kernel void @vadd__BLOCK_256(") != NULL, "%.400s", text);
    free(text);

    text = (char *)"untouched";
    cr_assert_eq(ph_compile("bad.ph", "import phobos.lang as ph\n@ph.kernel\ndef k(n: ph.i32):\n    x: ph.let = n / 2\n", NULL, &text),
                 PH_ERR_COMPILE);
    cr_expect_null(text);
    cr_expect(strstr(ph_last_error(), "bad.ph:4:") != NULL, "%s", ph_last_error());
    o = (ph_compile_options){.kernel = "nope"};
    cr_expect_eq(ph_compile("v.ph", vecadd_src, &o, &text), PH_ERR_COMPILE);
    cr_expect(strstr(ph_last_error(), "no kernel named 'nope'") != NULL, "%s", ph_last_error());
    o = (ph_compile_options){.arch = "sm_70"};
    cr_expect_eq(ph_compile("v.ph", vecadd_src, &o, &text), PH_ERR_INVALID);
    o = (ph_compile_options){.opt_level = 3};
    cr_assert_eq(ph_compile("v.ph", vecadd_src, &o, &text), PH_OK, "LLVM's full pipeline: %s", ph_last_error());
    cr_expect(strstr(text, ".entry vadd__BLOCK_128(") != NULL);
    free(text);
    o = (ph_compile_options){.opt_level = 1};
    cr_expect_eq(ph_compile("v.ph", vecadd_src, &o, &text), PH_ERR_INVALID);
    cr_expect(strstr(ph_last_error(), "unknown opt_level") != NULL, "%s", ph_last_error());
    cr_expect_eq(ph_compile("v.ph", NULL, NULL, &text), PH_ERR_INVALID);
    cr_expect_eq(ph_compile("v.ph", vecadd_src, NULL, NULL), PH_ERR_INVALID);
}

Test(runtime, unknown_kernel)
{
    ph_module *m;
    get(&m, "vadd");
    ph_kernel *k;
    cr_assert_eq(ph_kernel_get(m, "nope", &k), PH_ERR_NOT_FOUND);
    cr_assert_str_eq(ph_last_error(), "no kernel named 'nope' in this module");
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &k), PH_OK, "entry names pick one config");
    ph_module_free(m);
}

Test(runtime, argument_checks)
{
    ph_module *m;
    ph_kernel *k = get(&m, "vadd");
    ph_devptr p = 0x10000;
    ph_arg good[4] = {ph_tensor1(p, 1024), ph_tensor1(p, 1024), ph_tensor1(p, 1024), ph_f32(2)};

    cr_assert_eq(ph_launch(k, grid1, NULL, good, 3), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd takes 4 arguments, got 3");

    ph_arg kind[4] = {good[0], good[1], good[2], ph_i32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, kind, 4), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd: argument 4 (a) must be an f32, got an i32");

    ph_arg dims[4] = {good[0], ph_tensor1(p, 1000), good[2], good[3]};
    cr_assert_eq(ph_launch(k, grid1, NULL, dims, 4), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd: dim N is 1024 in X but 1000 in Y");

    ph_arg null[4] = {good[0], good[1], ph_tensor1(0, 1024), good[3]};
    cr_assert_eq(ph_launch(k, grid1, NULL, null, 4), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd: tensor Z is a null pointer");

    ph_arg aligned[4] = {ph_tensor1(p, 1000), ph_tensor1(p, 1000), ph_tensor1(p, 1000), good[3]};
    cr_assert_eq(ph_launch(k, grid1, NULL, aligned, 4), PH_ERR_NOT_ELIGIBLE);
    cr_assert(strstr(ph_last_error(), "promises N % BLOCK == 0") != NULL, "%s", ph_last_error());
    ph_module_free(m);
}

Test(runtime, literal_dims_are_checked)
{
    ph_module *m;
    ph_kernel *k = get(&m, "twod");
    ph_arg args[2] = {ph_tensor2(0x10000, 16, 64), ph_tensor2(0x20000, 16, 32)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: tensor B's dim 1 must be 64, got 32");
    ph_module_free(m);
}

static void zero_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta;
    (void)user;
    g[0] = 0;
}

Test(runtime, empty_grid_is_refused)
{
    ph_module *m;
    ph_kernel *k = get(&m, "vadd");
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x10000, 1024), ph_tensor1(0x10000, 1024), ph_f32(1)};
    cr_assert_eq(ph_launch(k, zero_grid, NULL, args, 4), PH_ERR_GRID);
    cr_assert(strstr(ph_last_error(), "grid 0 x 1 x 1") != NULL, "%s", ph_last_error());
    ph_module_free(m);
}

Test(runtime, launch_without_init_is_refused)
{
    ph_shutdown();
    ph_module *m;
    ph_kernel *k = get(&m, "vadd");
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x10000, 1024), ph_tensor1(0x10000, 1024), ph_f32(1)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_STATE);
    cr_assert(strstr(ph_last_error(), "not initialized") != NULL);
    ph_module_free(m);
}

/* A kernel of many tensors: every argument is checked (a mismatch in the
 * 81st is found), a count that is not the kernel's is refused whatever it
 * is, and good arguments reach the launch. */
Test(runtime, launches_of_many_tensors_are_checked)
{
    enum { N = 85 };
    size_t len = 0;
    char *src = NULL;
    FILE *out = open_memstream(&src, &len);
    fprintf(out, "import phobos.lang as ph\n@ph.kernel\ndef wide(");
    for (int i = 0; i < N; i++) fprintf(out, "%sT%d: ph.tensor[ph.f32][M, 8]", i ? ", " : "", i);
    fprintf(out, "):\n    T%d[0:+16, :] = T0[0:+16, :]\n", N - 1);
    fclose(out);
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("wide.ph", src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "wide", &k), PH_OK);
    ph_arg args[N + 1];
    for (int i = 0; i <= N; i++) args[i] = ph_tensor2(0x10000 + 0x1000 * (ph_devptr)i, 64, 8);
    args[80].dims[0] = 32;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, N), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "wide: dim M is 64 in T0 but 32 in T80");
    args[80].dims[0] = 64;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, N + 1), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "wide takes 85 arguments, got 86");
    cr_assert_eq(ph_launch(k, grid1, NULL, args, -1), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "wide takes 85 arguments, got -1");
    ph_shutdown();
    cr_assert_eq(ph_launch(k, grid1, NULL, args, N), PH_ERR_STATE, "%s", ph_last_error());
    ph_module_free(m);
    free(src);
}

static void count_configs(const ph_meta *meta, void *user, unsigned g[3])
{
    int64_t *seen = user;   /* seen[0]: calls; seen[b]: calls for B = b */
    int64_t b = ph_meta_get(meta, "B", 0);
    seen[0]++;
    if (meta->n == 1 && b >= 1 && b <= 300) seen[b]++;
    g[0] = 1;
}

/* Every config of a kernel is a candidate, however many it has: a launch
 * asks the grid of each of 300 configs once, then stops at the missing
 * runtime. */
Test(runtime, every_config_is_considered)
{
    size_t len = 0;
    char *src = NULL;
    FILE *out = open_memstream(&src, &len);
    fprintf(out, "import phobos.lang as ph\n@ph.kernel\n@ph.autotune(B=[");
    for (int b = 1; b <= 300; b++) fprintf(out, "%s%d", b > 1 ? ", " : "", b);
    fprintf(out, "])\ndef many(X: ph.tensor[ph.f32][N]):\n    X[0:+B] = X[0:+B] + 1.0\n");
    fclose(out);
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("many.ph", src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "many", &k), PH_OK);
    ph_arg x = ph_tensor1(0x10000, 1000);
    int64_t seen[301] = {0};
    ph_shutdown();
    cr_assert_eq(ph_launch(k, count_configs, seen, &x, 1), PH_ERR_STATE, "%s", ph_last_error());
    cr_assert_eq(seen[0], 300, "the grid callback ran %lld times", (long long)seen[0]);
    for (int b = 1; b <= 300; b++) cr_assert_eq(seen[b], 1, "config B = %d asked %lld times", b, (long long)seen[b]);
    ph_module_free(m);
    free(src);
}

/* The disk cache: a config's PTX, its entry alone, is generated once, then
 * read back; another config, target or source is another entry; "off"
 * turns the cache off. */

Test(runtime, ptx_disk_cache)
{
    char dir[] = "/tmp/phobos-cache-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    ph_module *m;
    char *ptx, *again, err[512];
    bool cached;
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached, "the first time, the PTX is generated");
    cr_assert(strstr(ptx, ".entry vadd__BLOCK_128(") != NULL);
    cr_assert(strstr(ptx, "vadd__BLOCK_256") == NULL, "one config's PTX holds its entry only");
    ph_module_free(m);
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &again, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(cached, "the second time, it comes from %s", dir);
    cr_assert_str_eq(again, ptx);
    free(again);
    cr_assert_eq(ph_internal_config_ptx(m, 1, "sm_90", &again, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached, "another config is another entry");
    cr_assert(strstr(again, ".entry vadd__BLOCK_256(") != NULL && strstr(again, "vadd__BLOCK_128") == NULL);
    free(again);
    cr_assert_eq(ph_internal_config_ptx(m, 1, "sm_90", &again, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(cached, "and is read back in turn");
    free(again);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_80", &again, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached, "another target is another entry");
    cr_assert(strstr(again, ".target sm_80") != NULL);
    free(again);
    ph_module_free(m);

    char *changed = malloc(strlen(vecadd_src) + 16);
    sprintf(changed, "%s\n# edited\n", vecadd_src);
    cr_assert_eq(ph_module_load_string("v.ph", changed, &m), PH_OK);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &again, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached, "an edited source is compiled again");
    free(again);
    ph_module_free(m);
    free(changed);

    setenv("PHOBOS_CACHE_DIR", "off", 1);
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &again, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached, "PHOBOS_CACHE_DIR=off: no cache");
    free(again);
    ph_module_free(m);
    free(ptx);
    unsetenv("PHOBOS_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A tensor-core kernel of four configs and a plain one: enough LLVM work
 * per config that threads generating them at once do overlap. */
static const char *tensorcore_configs_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(128)\n"
    "@ph.stages(S)\n"
    "@ph.autotune(BM=[32, 64], S=[2, 3])\n"
    "def mm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, 64], C: ph.tensor[ph.f32][M, 64]):\n"
    "    m0: ph.let = ph.ctx.block.x * BM\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, 64]] = 0.0\n"
    "    for k0 in range(0, K, 32):\n"
    "        acc += ph.dot(A[m0:+BM, k0:+32], B[k0:+32, :])\n"
    "    C[m0:+BM, :] = acc\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256])\n"
    "def vadd(X: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N]):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = X[i0:+BLOCK] + 1.0\n";

/* The configs generated at once on one thread, on three and on as many
 * as there are configs: the same PTX, config by config, as each one
 * generated alone, in the order asked (not the order they finish in). */
Test(runtime, configs_generate_alike_on_any_number_of_threads)
{
    setenv("PHOBOS_CACHE_DIR", "off", 1);
    ph_module *m;
    cr_assert_eq(ph_module_load_string("mm.ph", tensorcore_configs_src, &m), PH_OK, "%s", ph_last_error());
    enum { N = 6 };
    const int order[N] = {5, 0, 3, 1, 4, 2};   /* not the module's */
    const char *entries[N] = {"vadd__BLOCK_256", "mm__BM_32__S_2", "mm__BM_64__S_3", "mm__BM_32__S_3", "vadd__BLOCK_128",
                              "mm__BM_64__S_2"};
    char *alone[N], err[512];
    bool cached;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(ph_internal_config_ptx(m, order[i], "sm_90", &alone[i], &cached, err, sizeof err), 0, "%s", err);
        char entry[64];
        snprintf(entry, sizeof entry, ".entry %s(", entries[i]);
        cr_assert_not_null(strstr(alone[i], entry), "config %d is %s", order[i], entries[i]);
    }
    const int threads[] = {1, 3, N};
    for (int t = 0; t < 3; t++) {
        char *ptx[N], (*errs)[PH_CONFIG_ERR_BYTES] = calloc(N, sizeof *errs);
        bool from_cache[N];
        int failed[N];
        ph_internal_configs_ptx(m, order, N, "sm_90", threads[t], ptx, from_cache, failed, errs);
        for (int i = 0; i < N; i++) {
            cr_assert_eq(failed[i], 0, "%d threads, config %d: %s", threads[t], order[i], errs[i]);
            cr_assert(!from_cache[i]);
            cr_assert_str_eq(ptx[i], alone[i], "%d threads: config %d's PTX differs from its own", threads[t], order[i]);
            free(ptx[i]);
        }
        free(errs);
    }
    for (int i = 0; i < N; i++) free(alone[i]);
    ph_module_free(m);
    unsetenv("PHOBOS_CACHE_DIR");
}

/* A loop started on threads of its own gives the calling thread each
 * iteration once, as it finishes: here the later iterations finish first
 * on four threads, in order on one; then -1. */
typedef struct {
    int ran[4];
} Sleepers;

static void sleep_then_count(void *arg, int i)
{
    nanosleep(&(struct timespec){0, (4 - i) * 60000000L}, NULL);   /* iteration 0 the longest */
    ((Sleepers *)arg)->ran[i]++;
}

Test(runtime, a_loop_gives_each_iteration_as_it_finishes)
{
    const int threads[2] = {4, 1}, order[2][4] = {{3, 2, 1, 0}, {0, 1, 2, 3}};
    for (int t = 0; t < 2; t++) {
        Sleepers s = {{0}};
        PhParallel *p = ph_internal_parallel_start(4, threads[t], sleep_then_count, &s);
        for (int i = 0; i < 4; i++) {
            int got = ph_internal_parallel_next(p);
            cr_assert_eq(got, order[t][i], "%d threads: iteration %d came as the %dth", threads[t], got, i + 1);
            cr_assert_eq(s.ran[got], 1, "given once it has run");
        }
        cr_assert_eq(ph_internal_parallel_next(p), -1);
        cr_assert_eq(ph_internal_parallel_next(p), -1);
        ph_internal_parallel_end(p);
        for (int i = 0; i < 4; i++) cr_assert_eq(s.ran[i], 1);
    }
}

/* PHOBOS_LINEINFO=1: a config's PTX has .file (the module's file) and
 * .loc directives, and is cached apart from the PTX without them, which
 * has none; 0 is off. */
Test(runtime, lineinfo_from_the_environment)
{
    char dir[] = "/tmp/phobos-cache-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    ph_module *m;
    char *plain, *lined, err[512];
    bool cached;
    cr_assert_eq(ph_module_load_file("examples/vecadd/vecadd.ph", &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &plain, &cached, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(plain, ".loc") == NULL && strstr(plain, ".file") == NULL);
    setenv("PHOBOS_LINEINFO", "1", 1);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &lined, &cached, err, sizeof err), 0, "%s", err);
    cr_expect(!cached, "the PTX without line information is not taken for it");
    char cwd[4096], file[4200];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(file, sizeof file, ".file\t1 \"%s/examples/vecadd/vecadd.ph\"\n", cwd);
    cr_expect(strstr(lined, file) != NULL, "no %s in:\n%s", file, lined);
    cr_expect(strstr(lined, ".loc\t1 12 5\n") != NULL, "the store's line:\n%s", lined);
    free(lined);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &lined, &cached, err, sizeof err), 0, "%s", err);
    cr_expect(cached && strstr(lined, file) != NULL, "then read back from the cache");
    free(lined);
    setenv("PHOBOS_LINEINFO", "0", 1);
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &lined, &cached, err, sizeof err), 0, "%s", err);
    cr_expect(cached && !strcmp(lined, plain), "PHOBOS_LINEINFO=0 is the PTX without");
    free(lined);
    free(plain);
    ph_module_free(m);
    unsetenv("PHOBOS_LINEINFO");
    unsetenv("PHOBOS_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- dtypes and strides ---- */

static void one_block_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta;
    (void)user;
    g[0] = 1;
}

/* A tensor that says its dtype is checked against the parameter's, and
 * the refusal names the parameter; unchecked (ph_tensor2) and the right
 * dtype run. On the interpreter, so the launches that pass really run. */
Test(runtime, a_wrong_dtype_is_refused_naming_the_parameter)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_module *m;
    ph_kernel *k = get(&m, "twod");
    uint16_t a[16 * 64], b[16 * 64];
    for (int i = 0; i < 16 * 64; i++) { a[i] = (uint16_t)(0x3c00 + i % 512); b[i] = 0; }
    ph_devptr pa = (ph_devptr)(uintptr_t)a, pb = (ph_devptr)(uintptr_t)b;

    ph_arg wrong[2] = {ph_tensor2_t(pa, PH_F32, 16, 64), ph_tensor2_t(pb, PH_F16, 16, 64)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, wrong, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: parameter A: expected f16, got f32");
    ph_arg bf16[2] = {ph_tensor2_t(pa, PH_F16, 16, 64), ph_tensor2_t(pb, PH_BF16, 16, 64)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, bf16, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: parameter B: expected f16, got bf16");
    ph_arg unknown[2] = {ph_tensor2_t(pa, (ph_dtype)99, 16, 64), bf16[1]};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, unknown, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: parameter A: unknown dtype 99");
    for (int i = 0; i < 16 * 64; i++) cr_assert_eq(b[i], 0, "a refused launch wrote B[%d]", i);

    ph_arg right[2] = {ph_tensor2_t(pa, PH_F16, 16, 64), ph_tensor2(pb, 16, 64)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, right, 2), PH_OK, "%s", ph_last_error());
    cr_assert_arr_eq(b, a, sizeof a);

    ph_kernel *v;
    cr_assert_eq(ph_kernel_get(m, "vadd", &v), PH_OK);
    float x[128] = {0}, y[128] = {0}, z[128] = {0};
    ph_arg ints[4] = {ph_tensor1_t((ph_devptr)(uintptr_t)x, PH_F32, 128), ph_tensor1_t((ph_devptr)(uintptr_t)y, PH_I32, 128),
                      ph_tensor1((ph_devptr)(uintptr_t)z, 128), ph_f32(1)};
    cr_assert_eq(ph_launch(v, grid1, NULL, ints, 4), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd: parameter Y: expected f32, got i32");
    ph_module_free(m);
    ph_shutdown();
}

/* Strides, in elements, must be row-major contiguous for the dims, as
 * torch's is_contiguous() says: a dim of size 1 may have any stride, and
 * none given ({0, 0}) is contiguous. Anything else is refused, naming the
 * parameter, before the interpreter reads a thing. */
Test(runtime, strides_that_are_not_row_major_contiguous_are_refused)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_module *m;
    ph_kernel *k = get(&m, "twod");
    uint16_t a[16 * 64], b[16 * 64];
    for (int i = 0; i < 16 * 64; i++) { a[i] = (uint16_t)(0x3c00 + i % 512); b[i] = 0; }
    ph_devptr pa = (ph_devptr)(uintptr_t)a, pb = (ph_devptr)(uintptr_t)b;

    ph_arg column_major[2] = {ph_tensor2_t(pa, PH_F16, 16, 64), ph_tensor2_s(pb, PH_F16, 16, 64, 1, 16)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, column_major, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: parameter B: strides (1, 16) are not row-major contiguous for dims (16, 64)");
    ph_arg padded[2] = {ph_tensor2_s(pa, PH_F16, 16, 64, 128, 1), ph_tensor2(pb, 16, 64)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, padded, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: parameter A: strides (128, 1) are not row-major contiguous for dims (16, 64)");
    ph_arg broadcast[2] = {ph_tensor2_s(pa, PH_F16, 16, 64, 0, 1), ph_tensor2(pb, 16, 64)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, broadcast, 2), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "twod: parameter A: strides (0, 1) are not row-major contiguous for dims (16, 64)");
    ph_arg untyped[2] = {ph_tensor2(pa, 16, 64), ph_tensor2_s(pb, PH_DTYPE_UNCHECKED, 16, 64, 64, 2)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, untyped, 2), PH_ERR_ARGS, "strides are checked without a dtype");
    cr_assert_str_eq(ph_last_error(), "twod: parameter B: strides (64, 2) are not row-major contiguous for dims (16, 64)");
    for (int i = 0; i < 16 * 64; i++) cr_assert_eq(b[i], 0, "a refused launch wrote B[%d]", i);

    ph_arg contiguous[2] = {ph_tensor2_s(pa, PH_F16, 16, 64, 64, 1), ph_tensor2_s(pb, PH_F16, 16, 64, 64, 1)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, contiguous, 2), PH_OK, "%s", ph_last_error());
    cr_assert_arr_eq(b, a, sizeof a);

    /* one row: its stride is anything (torch reports the row's length, or 1, or 0) */
    memset(b, 0, sizeof b);
    ph_arg row[2] = {ph_tensor2_s(pa, PH_F16, 1, 64, 12345, 1), ph_tensor2_s(pb, PH_F16, 1, 64, 0, 1)};
    cr_assert_eq(ph_launch(k, one_block_grid, NULL, row, 2), PH_OK, "%s", ph_last_error());
    cr_assert_arr_eq(b, a, 64 * sizeof *a);
    cr_assert_eq(b[64], 0, "one row of B, no more");

    ph_kernel *v;
    cr_assert_eq(ph_kernel_get(m, "vadd", &v), PH_OK);
    float x[256], y[256], z[256];
    for (int i = 0; i < 256; i++) { x[i] = (float)i; y[i] = 1; z[i] = 0; }
    ph_devptr px = (ph_devptr)(uintptr_t)x, py = (ph_devptr)(uintptr_t)y, pz = (ph_devptr)(uintptr_t)z;
    ph_arg every_other[4] = {ph_tensor1_s(px, PH_F32, 128, 2), ph_tensor1(py, 128), ph_tensor1(pz, 128), ph_f32(2)};
    cr_assert_eq(ph_launch(v, grid1, NULL, every_other, 4), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd: parameter X: strides (2) are not row-major contiguous for dims (128)");
    ph_arg negative[4] = {ph_tensor1(px, 128), ph_tensor1_s(py, PH_F32, 128, -1), ph_tensor1(pz, 128), ph_f32(2)};
    cr_assert_eq(ph_launch(v, grid1, NULL, negative, 4), PH_ERR_ARGS);
    cr_assert_str_eq(ph_last_error(), "vadd: parameter Y: strides (-1) are not row-major contiguous for dims (128)");
    for (int i = 0; i < 256; i++) cr_assert_eq(z[i], 0.0f, "a refused launch wrote Z[%d]", i);
    ph_arg unit[4] = {ph_tensor1_s(px, PH_F32, 128, 1), ph_tensor1_s(py, PH_F32, 128, 1), ph_tensor1_s(pz, PH_F32, 128, 1), ph_f32(2)};
    long n = 128;
    cr_assert_eq(ph_launch(v, grid_of_n, &n, unit, 4), PH_OK, "%s", ph_last_error());
    for (int i = 0; i < 128; i++) cr_assert_float_eq(z[i], 2.0f * x[i] + 1.0f, 1e-6f, "z[%d] = %g", i, z[i]);
    cr_assert_eq(z[128], 0.0f);
    ph_module_free(m);
    ph_shutdown();
}

/* ---- threads ---- */

typedef struct {
    ph_kernel *k;
    int t;              /* 1, 2, ...: its arguments are X at 0x10000 * t, N = 128 * t */
    int failed;
} Launcher;

static void *launcher(void *arg)
{
    Launcher *l = arg;
    ph_devptr x = 0x10000 * (ph_devptr)l->t;
    int64_t n = 128 * l->t;
    ph_arg args[4] = {ph_tensor1(x, n), ph_tensor1(x + 0x1000, n), ph_tensor1(x + 0x2000, n), ph_f32(2)};
    for (int rep = 0; rep < 10; rep++) l->failed += ph_launch(l->k, grid1, NULL, args, 4) != PH_OK;
    return NULL;
}

/* Threads launch one autotuned kernel at once, each with dims of its own,
 * against a driver that dawdles inside every launch: under the lock no
 * launch's parameters are overwritten by another's before the driver reads
 * them, each thread's dims are tuned once, and every launch is counted. */
Test(runtime, threads_launching_one_kernel_do_not_mix_their_arguments)
{
    use_fake_driver();
    fake.slow_launches = true;
    fake.fast = "vadd__BLOCK_256";   /* the others are not close: each config timed once */
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    enum { T = 4 };
    pthread_t th[T];
    Launcher l[T];
    for (int i = 0; i < T; i++) {
        l[i] = (Launcher){.k = k, .t = i + 1};
        cr_assert_eq(pthread_create(&th[i], NULL, launcher, &l[i]), 0);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) cr_expect_eq(l[i].failed, 0, "thread %d: %d launches failed", i, l[i].failed);
    cr_assert_eq(fake.inconsistent, 0, "%d launches had another launch's parameters", fake.inconsistent);
    cr_assert_eq(fake.ntimings, T * 3 * PH_TUNE_RUNS, "each thread's dims tuned once: %d timings", fake.ntimings);
    cr_assert_eq(fake.nlaunches, T * (3 * (PH_TUNE_WARMUPS + PH_TUNE_RUNS) + 1 + 9), "a tuning and nine launches a thread: %d",
                 fake.nlaunches);
    cr_assert_eq(fake.nloads, 3, "each config loaded once");
    ph_module_free(m);
    ph_shutdown();
}

enum { THREADS = 4, LAUNCHES = 25, LEN = 128 * THREADS };

typedef struct {
    ph_kernel *k;
    int id;
    int wrong;          /* elements of a result that were not the thread's own */
    int failed;         /* launches that did not return PH_OK */
    bool own_message;   /* its refused launch left its own words in ph_last_error */
} Worker;

static void *worker(void *arg)
{
    Worker *w = arg;
    float x[LEN], y[LEN], z[LEN];
    long n = 128 * (w->id + 1);   /* dims of its own: eligible configs and grids of its own */
    for (int rep = 0; rep < LAUNCHES; rep++) {
        float a = (float)(w->id * 100 + rep);
        for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = (float)w->id; z[i] = -1; }
        ph_arg args[4] = {ph_tensor1_t((ph_devptr)(uintptr_t)x, PH_F32, n), ph_tensor1_t((ph_devptr)(uintptr_t)y, PH_F32, n),
                          ph_tensor1_t((ph_devptr)(uintptr_t)z, PH_F32, n), ph_f32(a)};
        w->failed += ph_launch(w->k, grid_of_n, &n, args, 4) != PH_OK;
        for (int i = 0; i < n; i++) w->wrong += z[i] != a * x[i] + (float)w->id;
    }
    /* a refusal whose message only this thread can have written */
    ph_arg bad[4] = {ph_tensor1((ph_devptr)(uintptr_t)x, 128), ph_tensor1((ph_devptr)(uintptr_t)y, 128 + 128 * (w->id + 1)),
                     ph_tensor1((ph_devptr)(uintptr_t)z, 128), ph_f32(0)};
    ph_status s = ph_launch(w->k, grid_of_n, &n, bad, 4);
    char want[128];
    snprintf(want, sizeof want, "vadd: dim N is 128 in X but %d in Y", 128 + 128 * (w->id + 1));
    for (int rep = 0; rep < 100; rep++) sched_yield();   /* the others keep launching meanwhile */
    w->own_message = s == PH_ERR_ARGS && !strcmp(ph_last_error(), want);
    return NULL;
}

/* Threads launch one kernel at once on the interpreter: the lock keeps its
 * scratch and the runtime's state whole, each thread gets its own result,
 * and each its own error message. */
Test(runtime, threads_launch_at_once_on_the_interpreter)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_module *m;
    ph_kernel *k = get(&m, "vadd");
    pthread_t th[THREADS];
    Worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (Worker){.k = k, .id = i};
        cr_assert_eq(pthread_create(&th[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        cr_expect_eq(w[i].failed, 0, "thread %d: %d launches failed", i, w[i].failed);
        cr_expect_eq(w[i].wrong, 0, "thread %d: %d elements were not its own", i, w[i].wrong);
        cr_expect(w[i].own_message, "thread %d: ph_last_error is not its own", i);
    }
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    ph_module_free(m);
    ph_shutdown();
}

/* Under PHOBOS_TARGET=interp every device number is the interpreter, so a
 * program written for several GPUs runs unchanged. */
Test(runtime, every_device_is_the_interpreter)
{
    cr_assert_eq(ph_set_device(0), PH_ERR_STATE, "nothing started yet");
    setenv("PHOBOS_TARGET", "interp", 1);
    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    unsetenv("PHOBOS_TARGET");
    cr_assert_eq(ph_set_device(1), PH_OK, "%s", ph_last_error());
    int dev = 0;
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, PH_INTERPRETER);
    cr_assert_str_eq(ph_device_name(), "the CPU interpreter");
    ph_shutdown();
}

static ph_kernel *reentered;

/* A grid callback that asks the runtime things, and tries to launch. */
static void asking_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta;
    const char **seen = user;
    seen[0] = ph_device_name();
    ph_arg x = ph_tensor1(0x10000, 128);
    seen[1] = ph_launch(reentered, one_block_grid, NULL, &x, 1) == PH_ERR_STATE ? ph_last_error() : "launched";
    g[0] = 1;
}

/* A grid callback runs inside its launch, the lock held: it may ask the
 * runtime things (no deadlock), but a launch from it is refused. */
Test(runtime, a_grid_callback_may_ask_but_not_launch)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_module *m;
    ph_kernel *k = get(&m, "vadd__BLOCK_128");
    reentered = k;
    float x[128] = {0}, y[128] = {0}, z[128] = {0};
    ph_arg args[4] = {ph_tensor1((ph_devptr)(uintptr_t)x, 128), ph_tensor1((ph_devptr)(uintptr_t)y, 128),
                      ph_tensor1((ph_devptr)(uintptr_t)z, 128), ph_f32(1)};
    const char *seen[2] = {NULL, NULL};
    cr_assert_eq(ph_launch(k, asking_grid, seen, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(seen[0], "the CPU interpreter");
    cr_assert_str_eq(seen[1], "vadd__BLOCK_128: ph_launch from inside a launch's grid callback");
    ph_module_free(m);
    ph_shutdown();
}
