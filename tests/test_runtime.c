/* test_runtime.c: the runtime's checks that need no GPU: a missing driver
 * said plainly, compile errors and unknown kernels reported, and every
 * argument check refusing a bad launch before anything reaches a device;
 * against a fake driver, config loading, autotuning, streams and two
 * devices; on the interpreter, launches from several threads at once. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "phobos.h"
#include "testutil.h"

/* ---- counting heap allocations ----
 * This binary's malloc, calloc and realloc are glibc's own, counted while
 * the calling thread asks for it, so a test can see that a launch
 * allocates nothing. Under AddressSanitizer, which brings its allocator,
 * nothing is replaced and the test that counts skips. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif
#if defined(__GLIBC__) && !defined(UNDER_ASAN)
#define COUNTS_ALLOCATIONS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t count, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
static _Thread_local bool counting;
static _Thread_local long allocations;
void *malloc(size_t n) { allocations += counting; return __libc_malloc(n); }
void *calloc(size_t count, size_t n) { allocations += counting; return __libc_calloc(count, n); }
void *realloc(void *p, size_t n) { allocations += counting; return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
#else
#define COUNTS_ALLOCATIONS 0
static bool counting;
static long allocations;
#endif

static const char *vecadd_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256])\n"
    "@ph.aligned(N=\"BLOCK\")\n"
    "def vadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n"
    "@ph.kernel\n"
    "def twod(A: ph.tensor[ph.f16][M, 64], B: ph.tensor[ph.f16][M, 64]):\n"
    "    B[0:+16, :] = A[0:+16, :]\n";

static void grid1(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)user;
    g[0] = (unsigned)(1024 / ph_meta_get(meta, "BLOCK", 1));
}

static ph_kernel *get(ph_module **m, const char *name)
{
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, m), PH_OK, "%s", ph_last_error());
    ph_kernel *k = NULL;
    cr_assert_eq(ph_kernel_get(*m, name, &k), PH_OK, "%s", ph_last_error());
    return k;
}

static bool driver_present(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) dlclose(h);
    return h != NULL;
}

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
#include "runtime_internal.h"

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

/* ---- the runtime against a fake driver ----
 * The driver's calls are replaced by fakes that keep what they were asked:
 * each module loaded (the entries its PTX holds), each launch, and a time
 * per config for the autotuner. A config named in fake.refuse is refused
 * at load as the JIT refuses too much shared memory. The device lets a
 * block opt in to the H200's 227 KB of shared memory; each function's
 * dynamic shared memory allowance is kept, and refused with deny_shared.
 * Device memory is host memory from a static pool (so counting
 * allocations sees the runtime's only); fake.trace keeps a letter per
 * call the autotuner makes around a launch: C a copy on the device, Z a
 * memset of a tensor, F a memset of the L2 cache's size (a flush), R an
 * event recorded, L a launch. With add_one, a launch adds 1 to each f32
 * of its first tensor, as `X += 1` would. A config's load may end only
 * once the autotuner has launched so many times (slow_load); a config may
 * have a clock of its own (its timed runs' times), and a module with no
 * function in it (no_function). */
enum { FAKE_L2_BYTES = 4096 };
/* The launches of one config timed by the autotuner */
enum { RUNS_TIMED = PH_TUNE_WARMUPS + PH_TUNE_RUNS };

static struct {
    const char *refuse[8];
    char loaded[64][128];   /* the entry of each PTX image loaded, in the order loads began */
    bool loaded_cubin[64];  /* that image was a cubin (ELF) */
    int loaded_device[64];  /* the device whose context was current in the loading thread */
    int nloads;
    int load_us;            /* each load takes this long */
    const char *slow_load;  /* this config's load ends once there were slow_load_launches launches (or after 5 s) */
    int slow_load_launches;
    int loading, most_loading;   /* loads under way now, and the most there were at once */
    int launches_seen;           /* launches, as loads see them, */
    int launches_before[64];     /* and how many there were before each load ended */
    char unloaded[64][128]; /* each module unloaded, by its entry */
    int nunloads;
    const char *no_function;     /* this config's module has no function: cuModuleGetFunction fails */
    char launched[256][128];
    unsigned launched_shared[256];   /* the dynamic shared memory each launch asked for */
    int nlaunches;
    char allowed[64][128];  /* each function given a dynamic shared memory allowance */
    int allowed_bytes[64], nallowed;
    bool deny_shared;
    bool line_info_asked[64];   /* per load: the JIT asked for line information */
    bool quiet_jit;         /* the JIT's info log stays empty, as for code the driver had cached */
    const char *fast;       /* this config times 1 ms, others 2 ms */
    const char *fluke;      /* this config's first timed run takes 0.1 ms, its others 3 ms */
    int fluke_runs;
    struct {                /* a config's timed runs: `first` ms for the first PH_TUNE_RUNS, then `again` (when set) */
        const char *config;
        float first, again;
        int runs;
    } clock[8];
    int ntimings;           /* times the autotuner read an event's elapsed time */
    bool add_one;
    char trace[4096];
    int ntrace;
    int retained[2];        /* each device's primary context's retains, less its releases */
    int launched_device[256];    /* the device whose context was current at each launch */
    CUstream launched_on[256];   /* each launch's stream */
    CUstream recorded_on[64];    /* each event record's stream */
    int nrecords;
    bool slow_launches;     /* each launch takes a while before it reads its parameters */
    int inconsistent;       /* launches whose parameters were not one launch's */
    CUdeviceptr allocated[256];  /* each allocation, */
    int alloc_device[256];       /* and the device whose context was current then */
    int nallocs;
} fake;

/* Two devices, each with a context of its own; the current context is per
 * thread, as the driver's is. */
static char fake_contexts[2];
static _Thread_local CUcontext fake_current;

static void traced(char c)
{
    if (fake.ntrace + 1 < (int)sizeof fake.trace) fake.trace[fake.ntrace++] = c;
}

static unsigned char fake_memory[1 << 20];
static size_t fake_memory_used;

static int current_device(void);

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes)
{
    size_t at = (fake_memory_used + 255) & ~(size_t)255;
    if (at + bytes > sizeof fake_memory) return 2;   /* CUDA_ERROR_OUT_OF_MEMORY */
    fake_memory_used = at + bytes;
    *p = (CUdeviceptr)(uintptr_t)(fake_memory + at);
    fake.allocated[fake.nallocs % 256] = *p;
    fake.alloc_device[fake.nallocs++ % 256] = current_device();
    return 0;
}
static CUresult fake_free(CUdeviceptr p) { (void)p; return 0; }
static CUresult fake_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    traced('C');
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return 0;
}
static CUresult fake_memset(CUdeviceptr dst, unsigned char v, size_t bytes)
{
    traced(bytes == FAKE_L2_BYTES ? 'F' : 'Z');
    memset((void *)(uintptr_t)dst, v, bytes);
    return 0;
}
static CUresult fake_dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) { (void)s; return fake_dtod(dst, src, bytes); }
static CUresult fake_memset_async(CUdeviceptr dst, unsigned char v, size_t bytes, CUstream s) { (void)s; return fake_memset(dst, v, bytes); }

static CUresult fake_ok(void) { return 0; }
static CUresult fake_init(unsigned f) { (void)f; return 0; }
static CUresult fake_count(int *n) { *n = 2; return 0; }
static CUresult fake_get(CUdevice *d, int i) { *d = i; return 0; }
static CUresult fake_name(char *s, int n, CUdevice d) { (void)d; snprintf(s, (size_t)n, "Fake GPU"); return 0; }
static CUresult fake_attr(int *v, int a, CUdevice d)
{
    (void)d;
    *v = a == ATTR_CC_MAJOR ? 9 : a == ATTR_CC_MINOR ? 0 : a == ATTR_SM_COUNT ? 132 : a == ATTR_MAX_THREADS_PER_BLOCK ? 1024
       : a == ATTR_MAX_SHARED_PER_BLOCK_OPTIN ? 232448 : a == ATTR_L2_CACHE_SIZE ? FAKE_L2_BYTES : 65535;
    return 0;
}
static CUresult fake_retain(CUcontext *c, CUdevice d) { *c = (CUcontext)&fake_contexts[d]; fake.retained[d]++; return 0; }
static CUresult fake_release(CUdevice d) { fake.retained[d]--; return 0; }
static CUresult fake_set(CUcontext c) { fake_current = c; return 0; }
static CUresult fake_get_current(CUcontext *c) { *c = fake_current; return 0; }
/* The device whose context is current in the calling thread, or -1. */
static int current_device(void)
{
    return fake_current ? (int)((char *)fake_current - fake_contexts) : -1;
}
/* The device whose context was current when p was allocated, or -1. */
static int device_of(CUdeviceptr p)
{
    for (int i = 0; i < fake.nallocs && i < 256; i++)
        if (fake.allocated[i] == p) return fake.alloc_device[i];
    return -1;
}

/* The entry name of a PTX image: what follows its one ".entry ". */
static void entry_of(const char *ptx, char *name, size_t n)
{
    const char *e = strstr(ptx, ".entry ");
    cr_assert_not_null(e, "a PTX image with no entry");
    cr_assert_null(strstr(e + 1, ".entry "), "a PTX image with more than one entry");
    e += 7;
    size_t len = strcspn(e, "(");
    snprintf(name, n, "%.*s", (int)len, e);
}

/* Loads may come from several threads at once, as the driver allows. */
static pthread_mutex_t fake_load_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult fake_load(CUmodule *mod, const void *image, unsigned nopts, int *opts, void **vals)
{
    pthread_mutex_lock(&fake_load_lock);
    int at = fake.nloads++;
    char *name = fake.loaded[at];
    /* the fake ptxas's cubins are "\177ELF" and the entry name */
    fake.loaded_cubin[at] = !memcmp(image, "\177ELF", 4);
    if (fake.loaded_cubin[at]) snprintf(name, sizeof fake.loaded[0], "%s", (const char *)image + 4);
    else entry_of(image, name, sizeof fake.loaded[0]);
    fake.loaded_device[at] = current_device();
    if (++fake.loading > fake.most_loading) fake.most_loading = fake.loading;
    pthread_mutex_unlock(&fake_load_lock);
    struct timespec pause = {fake.load_us / 1000000, fake.load_us % 1000000 * 1000L};
    if (fake.load_us) nanosleep(&pause, NULL);
    for (int ms = 0; fake.slow_load && !strcmp(name, fake.slow_load) && ms < 5000; ms++) {
        pthread_mutex_lock(&fake_load_lock);
        bool enough = fake.launches_seen >= fake.slow_load_launches;
        pthread_mutex_unlock(&fake_load_lock);
        if (enough) break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    pthread_mutex_lock(&fake_load_lock);
    fake.loading--;
    fake.launches_before[at] = fake.launches_seen;
    pthread_mutex_unlock(&fake_load_lock);
    for (int i = 0; i < 8 && fake.refuse[i]; i++)
        if (!strcmp(fake.refuse[i], name)) {
            for (unsigned j = 0; j < nopts; j++)
                if (opts[j] == JIT_ERROR_LOG)
                    snprintf(vals[j], 256, "ptxas error   : Entry function '%s' uses too much shared data (0x10000 bytes, 0xc000 max)\n", name);
            return CU_ERROR_INVALID_PTX;
        }
    /* a verbose info log is ptxas -v's report: its figures for this fake */
    bool verbose = false;
    for (unsigned j = 0; j < nopts; j++) {
        verbose |= opts[j] == JIT_LOG_VERBOSE && vals[j];
        fake.line_info_asked[at] |= opts[j] == JIT_GENERATE_LINE_INFO && vals[j];
    }
    for (unsigned j = 0; j < nopts && verbose && !fake.quiet_jit; j++)
        if (opts[j] == JIT_INFO_LOG)
            snprintf(vals[j], 512, "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function '%s' for 'sm_90'\n"
                     "ptxas info    : Function properties for %s\n    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                     "ptxas info    : Used 40 registers, used 0 barriers, 1024 bytes smem\n", name, name);
    *mod = (CUmodule)name;
    return 0;
}
static CUresult fake_unload(CUmodule m)
{
    snprintf(fake.unloaded[fake.nunloads++ % 64], sizeof fake.unloaded[0], "%s", (const char *)m);
    return 0;
}
static CUresult fake_function(CUfunction *f, CUmodule m, const char *name)
{
    cr_assert_str_eq((const char *)m, name, "a function asked of another config's module");
    if (fake.no_function && !strcmp(name, fake.no_function)) return 500;   /* CUDA_ERROR_NOT_FOUND */
    *f = (CUfunction)m;
    return 0;
}
static CUresult fake_func_attr(CUfunction f, int attr, int value)
{
    cr_assert_eq(attr, FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, "the only function attribute the runtime sets");
    if (fake.deny_shared) return 1;   /* CUDA_ERROR_INVALID_VALUE */
    snprintf(fake.allowed[fake.nallowed], sizeof fake.allowed[0], "%s", (const char *)f);
    fake.allowed_bytes[fake.nallowed++] = value;
    return 0;
}
/* The figures of fake_load's report; the allowance fake_func_attr gave. */
static CUresult fake_func_get_attr(int *v, int attr, CUfunction f)
{
    switch (attr) {
    case FUNC_ATTR_NUM_REGS: *v = 40; return 0;
    case FUNC_ATTR_LOCAL_SIZE_BYTES: *v = 16; return 0;
    case FUNC_ATTR_SHARED_SIZE_BYTES: *v = 1024; return 0;
    case FUNC_ATTR_MAX_THREADS_PER_BLOCK: *v = 1024; return 0;
    case FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *v = 0;
        for (int i = 0; i < fake.nallowed; i++)
            if (!strcmp(fake.allowed[i], (const char *)f)) *v = fake.allowed_bytes[i];
        return 0;
    default: return 1;   /* CUDA_ERROR_INVALID_VALUE */
    }
}
static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, CUstream st, void **params, void **extra)
{
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)extra;
    traced('L');
    pthread_mutex_lock(&fake_load_lock);
    fake.launches_seen++;
    pthread_mutex_unlock(&fake_load_lock);
    if (fake.slow_launches) {
        /* X at 0x10000 * t with N = 128 * t, for the launching thread's t */
        nanosleep(&(struct timespec){0, 100000}, NULL);
        uint64_t x = *(uint64_t *)params[0];
        int64_t n = *(int64_t *)params[1];
        fake.inconsistent += n != 128 * (int64_t)(x / 0x10000);
    }
    if (fake.add_one) {
        float *x = (float *)(uintptr_t)*(uint64_t *)params[0];
        int64_t n = *(int64_t *)params[1] * *(int64_t *)params[2];
        for (int64_t i = 0; i < n; i++) x[i] += 1.0f;
    }
    fake.launched_shared[fake.nlaunches % 256] = smem;
    fake.launched_on[fake.nlaunches % 256] = st;
    fake.launched_device[fake.nlaunches % 256] = current_device();
    snprintf(fake.launched[fake.nlaunches++ % 256], sizeof fake.launched[0], "%s", (const char *)f);
    return 0;
}
static CUresult fake_event(CUevent *e, unsigned f) { (void)f; *e = (CUevent)&fake; return 0; }
static CUresult fake_record(CUevent e, CUstream s) { (void)e; traced('R'); fake.recorded_on[fake.nrecords++ % 64] = s; return 0; }
static CUresult fake_sync(CUevent e) { (void)e; return 0; }
/* A timed run of config on its own clock: -1 when it has none. */
static float clock_of(const char *config)
{
    for (int i = 0; i < 8 && fake.clock[i].config; i++) {
        if (strcmp(fake.clock[i].config, config)) continue;
        int run = fake.clock[i].runs++;
        return run >= PH_TUNE_RUNS && fake.clock[i].again ? fake.clock[i].again : fake.clock[i].first;
    }
    return -1;
}

static CUresult fake_elapsed(float *ms, CUevent a, CUevent b)
{
    (void)a; (void)b;
    fake.ntimings++;
    const char *last = fake.launched[(fake.nlaunches - 1) % 256];
    float own = clock_of(last);
    if (own >= 0) *ms = own;
    else if (fake.fluke && !strcmp(last, fake.fluke)) *ms = fake.fluke_runs++ ? 3.0f : 0.1f;
    else *ms = fake.fast && !strcmp(last, fake.fast) ? 1.0f : 2.0f;
    return 0;
}
static CUresult fake_destroy(CUevent e) { (void)e; return 0; }
static CUresult fake_error(CUresult r, const char **s) { (void)r; *s = "fake error"; return 0; }

static void use_fake_driver(void)
{
    PhDriver d = {
        .Init = fake_init, .DeviceGetCount = fake_count, .DeviceGet = fake_get, .DeviceGetName = fake_name,
        .DeviceGetAttribute = fake_attr, .DevicePrimaryCtxRetain = fake_retain, .DevicePrimaryCtxRelease = fake_release,
        .CtxSetCurrent = fake_set, .CtxGetCurrent = fake_get_current, .CtxSynchronize = fake_ok, .ModuleLoadDataEx = fake_load,
        .ModuleUnload = fake_unload, .ModuleGetFunction = fake_function, .FuncSetAttribute = fake_func_attr,
        .FuncGetAttribute = fake_func_get_attr, .LaunchKernel = fake_launch, .EventCreate = fake_event,
        .EventRecord = fake_record, .EventSynchronize = fake_sync, .EventElapsedTime = fake_elapsed,
        .EventDestroy = fake_destroy, .GetErrorString = fake_error,
        .MemAlloc = fake_alloc, .MemFree = fake_free, .MemcpyDtoD = fake_dtod, .MemsetD8 = fake_memset,
        .MemcpyDtoDAsync = fake_dtod_async, .MemsetD8Async = fake_memset_async,
    };
    ph_internal_use_driver(&d);
    setenv("PHOBOS_CACHE_DIR", "off", 1);
    setenv("PHOBOS_PTXAS", "0", 1);   /* the fake driver's JIT assembles, unless a test says otherwise */
    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_device_name(), "Fake GPU, sm_90, 132 SMs");
}

static const char *three_configs_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "def vadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n"
    "@ph.kernel\n"
    "def twod(A: ph.tensor[ph.f16][M, 64], B: ph.tensor[ph.f16][M, 64]):\n"
    "    B[0:+16, :] = A[0:+16, :]\n";

static int launches_of(const char *name)
{
    int n = 0;
    for (int i = 0; i < fake.nlaunches && i < 256; i++) n += !strcmp(fake.launched[i], name);
    return n;
}

/* How many times the driver was given a module with this entry. */
static int loads_of(const char *name)
{
    int n = 0;
    for (int i = 0; i < fake.nloads && i < 64; i++) n += !strcmp(fake.loaded[i], name);
    return n;
}

/* A kernel's configs go to the driver from the threads that generate
 * them, several at once, each in the context of the module's device
 * (here device 1, which no worker thread had current), and the calling
 * thread keeps its own context. */
Test(runtime, configs_are_assembled_at_once_on_the_modules_device)
{
    use_fake_driver();
    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK, "%s", ph_last_error());
    setenv("PHOBOS_COMPILE_THREADS", "3", 1);
    fake.load_us = 200000;
    fake.fast = "vadd__BLOCK_128";   /* the others are not close: timed once */
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3);
    cr_assert_geq(fake.most_loading, 2, "the driver assembled at most %d config at once", fake.most_loading);
    for (int i = 0; i < 3; i++) cr_assert_eq(fake.loaded_device[i], 1, "%s loaded for device %d", fake.loaded[i], fake.loaded_device[i]);
    cr_assert_eq(current_device(), 1);
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED, "every config loaded is timed");
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

/* On a first launch the configs are timed as they load, while the others
 * are still being compiled: here the fastest config's load ends only once
 * the two others were wholly timed (a launch that waited for every config
 * would wait 5 s for it, then time all three after), and it still wins. */
Test(runtime, configs_are_timed_as_they_load)
{
    setenv("PHOBOS_COMPILE_THREADS", "3", 1);
    use_fake_driver();
    fake.slow_load = "vadd__BLOCK_512";
    fake.slow_load_launches = 2 * RUNS_TIMED;
    fake.fast = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3);
    int last = 0;
    while (strcmp(fake.loaded[last], "vadd__BLOCK_512")) last++;
    cr_assert_eq(fake.launches_before[last], 2 * RUNS_TIMED, "%d launches before the last config was in",
                 fake.launches_before[last]);
    cr_assert_eq(launches_of("vadd__BLOCK_128"), RUNS_TIMED);
    cr_assert_eq(launches_of("vadd__BLOCK_256"), RUNS_TIMED);
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED + 1, "timed when it came, then launched");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

/* A driver error while the configs come in (a module without its
 * function) fails the launch with the driver's words, once every thread
 * is done: the modules assembled for configs not taken yet are unloaded,
 * as is the failing one's. The configs loaded before the error stay
 * loaded: the next launch loads only the others. One thread compiles, so
 * the configs come in config order. */
Test(runtime, a_driver_error_while_configs_load_fails_the_launch)
{
    setenv("PHOBOS_COMPILE_THREADS", "1", 1);
    use_fake_driver();
    fake.no_function = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_CUDA);
    cr_assert_str_eq(ph_last_error(), "cuModuleGetFunction failed: CUDA error 500 (fake error)");
    cr_assert_eq(fake.nloads, 3, "every config was assembled");
    cr_assert_eq(fake.nunloads, 2, "%d modules unloaded", fake.nunloads);
    cr_assert_str_eq(fake.unloaded[0], "vadd__BLOCK_256");
    cr_assert_str_eq(fake.unloaded[1], "vadd__BLOCK_512");
    cr_assert_eq(fake.nlaunches, 0);

    fake.no_function = NULL;
    fake.fast = "vadd__BLOCK_256";
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 5);
    cr_assert_eq(loads_of("vadd__BLOCK_128"), 1, "loaded by the failed launch, kept");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    cr_assert_eq(launches_of("vadd__BLOCK_128"), RUNS_TIMED);
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

/* A stand-in for ptxas in a new folder: it counts its runs (in
 * FOLDER/ptxas.runs), and writes as the cubin "\177ELF" and the PTX's entry
 * name, with ptxas -v's report of it; with fail set it rejects the PTX. */
static void fake_ptxas(char *dir, bool fail)
{
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/ptxas", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" >> \"$0.runs\"\n%s"
               "while [ \"$1\" != -o ]; do shift; done\n"
               "name=$(sed -n 's/^.*\\.entry \\([A-Za-z0-9_]*\\)(.*/\\1/p' \"$3\")\n"
               "printf '\\177ELF%%s' \"$name\" > \"$2\"\n"
               "echo \"ptxas info    : Compiling entry function '$name' for 'sm_90'\"\n"
               "echo \"ptxas info    : Function properties for $name\"\n"
               "echo '    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads'\n"
               "echo 'ptxas info    : Used 20 registers, used 0 barriers'\n",
            fail ? "echo 'ptxas fatal   : rejected' >&2\nexit 1\n" : "");
    fclose(f);
    cr_assert_eq(chmod(path, 0755), 0);
}

static int lines_in(const char *path)
{
    char *text = tu_read_file(path);
    int n = 0;
    for (const char *p = text; p && *p; p++) n += *p == '\n';
    free(text);
    return n;
}

/* With a ptxas (PHOBOS_PTXAS names it), each config is assembled by it,
 * one process per config, and the driver gets cubins; ptxas -v's report
 * gives the spills; the cubins are cached on disk, so the same configs
 * loaded again run no ptxas. */
Test(runtime, configs_are_assembled_by_ptxas_and_cached)
{
    use_fake_driver();
    char bin[] = "/tmp/phobos-fake-ptxas.XXXXXX", cache[] = "/tmp/phobos-cubins.XXXXXX", tool[128], runs[128];
    fake_ptxas(bin, false);
    cr_assert_not_null(mkdtemp(cache));
    snprintf(tool, sizeof tool, "%s/ptxas", bin);
    snprintf(runs, sizeof runs, "%s/ptxas.runs", bin);
    setenv("PHOBOS_PTXAS", tool, 1);
    setenv("PHOBOS_CACHE_DIR", cache, 1);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    for (int round = 0; round < 2; round++) {
        ph_module *m;
        ph_kernel *k;
        cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
        cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
        ph_set_autotune(1);
        cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
        /* the second time the autotuner's winner, kept on disk, is the only config loaded */
        cr_assert_eq(fake.nloads, round ? 4 : 3);
        for (int i = 0; i < fake.nloads; i++) cr_assert(fake.loaded_cubin[i], "%s was loaded as PTX", fake.loaded[i]);
        cr_assert_eq(lines_in(runs), 3, "round %d: ptxas ran %d times", round, lines_in(runs));
        ph_stats st;
        cr_assert_eq(ph_kernel_stats(k, fake.loaded[fake.nloads - 1], &st), PH_OK, "%s", ph_last_error());
        cr_assert_eq(st.spill_store_bytes, round ? -1 : 4, "the report of ptxas -v, when it ran");
        ph_module_free(m);
    }
    char *ran = tu_read_file(runs);
    cr_assert(!strncmp(ran, "-v -arch=sm_90 -o ", 18), "ptxas ran as: %s", ran);
    free(ran);
    unsetenv("PHOBOS_CACHE_DIR");
    ph_shutdown();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", bin, cache);
    cr_assert_eq(system(cmd), 0);
}

/* A ptxas that rejects the PTX leaves it to the driver's JIT. */
Test(runtime, what_ptxas_rejects_goes_to_the_driver)
{
    use_fake_driver();
    char bin[] = "/tmp/phobos-fake-ptxas.XXXXXX", tool[128], runs[128];
    fake_ptxas(bin, true);
    snprintf(tool, sizeof tool, "%s/ptxas", bin);
    snprintf(runs, sizeof runs, "%s/ptxas.runs", bin);
    setenv("PHOBOS_PTXAS", tool, 1);
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(lines_in(runs), 3);
    cr_assert_eq(fake.nloads, 3);
    for (int i = 0; i < 3; i++) cr_assert(!fake.loaded_cubin[i], "%s was loaded as a cubin", fake.loaded[i]);
    ph_module_free(m);
    ph_shutdown();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", bin);
    cr_assert_eq(system(cmd), 0);
}

/* Of three configs the driver refuses one: the two others load, are timed
 * and the faster runs; the refused one is never launched nor loaded again.
 * Only the launched kernel's configs are loaded, each as its own module. */
Test(runtime, a_refused_config_leaves_the_eligible_set)
{
    use_fake_driver();
    fake.refuse[0] = "vadd__BLOCK_256";
    fake.fast = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3, "each config is a module of its own");
    cr_assert_eq(loads_of("vadd__BLOCK_128"), 1);
    cr_assert_eq(loads_of("vadd__BLOCK_256"), 1);
    cr_assert_eq(loads_of("vadd__BLOCK_512"), 1);
    cr_assert_eq(launches_of("vadd__BLOCK_256"), 0, "the refused config never runs");
    cr_assert_eq(launches_of("vadd__BLOCK_128"), RUNS_TIMED, "timed: a warm-up and the timed runs");
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED + 1, "timed, then launched as the faster");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");

    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3, "nothing is loaded twice, nor the refused config again");
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED + 2);

    /* one config by its entry name: the driver's words */
    ph_kernel *one;
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &one), PH_OK);
    cr_assert_eq(ph_launch(one, grid1, NULL, args, 4), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), "vadd__BLOCK_256: no eligible config could be loaded: the CUDA driver refused "
                     "vadd__BLOCK_256 (error 218): ptxas error   : Entry function 'vadd__BLOCK_256' uses too much "
                     "shared data (0x10000 bytes, 0xc000 max)");
    cr_assert_eq(fake.nloads, 3);
    ph_module_free(m);
    ph_shutdown();
}

/* When the driver refuses every eligible config, the launch says why for each. */
Test(runtime, every_config_refused_says_why)
{
    use_fake_driver();
    fake.refuse[0] = "vadd__BLOCK_128";
    fake.refuse[1] = "vadd__BLOCK_256";
    fake.refuse[2] = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_MODULE);
    const char *e = ph_last_error();
    cr_assert(!strncmp(e, "vadd: no eligible config could be loaded: the CUDA driver refused vadd__BLOCK_128 (error 218): ", 94), "%s", e);
    cr_assert(strstr(e, "; the CUDA driver refused vadd__BLOCK_256 (error 218): ptxas error") != NULL, "%s", e);
    cr_assert(strstr(e, "Entry function 'vadd__BLOCK_512' uses too much shared data") != NULL, "%s", e);
    cr_assert_eq(fake.nlaunches, 0);
    ph_module_free(m);
    ph_shutdown();
}

/* A launch loads its own kernel's eligible configs and nothing else: not
 * the module's other kernels, not the configs its dims rule out. */
Test(runtime, configs_load_when_first_launched)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(fake.nloads, 0, "nothing is loaded before a launch");
    /* N = 128 * 3: only BLOCK 128 keeps its promise N % BLOCK == 0 */
    ph_arg args[4] = {ph_tensor1(0x10000, 384), ph_tensor1(0x20000, 384), ph_tensor1(0x30000, 384), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 1);
    cr_assert_str_eq(fake.loaded[0], "vadd__BLOCK_128");
    cr_assert_eq(fake.nlaunches, 1, "one eligible config: no timing");
    ph_kernel *t;
    cr_assert_eq(ph_kernel_get(m, "twod", &t), PH_OK);
    ph_arg targs[2] = {ph_tensor2(0x10000, 16, 64), ph_tensor2(0x20000, 16, 64)};
    cr_assert_eq(ph_launch(t, grid1, NULL, targs, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 2);
    cr_assert_str_eq(fake.loaded[1], "twod");
    ph_module_free(m);
    ph_shutdown();
}

/* tr__BM_32 transposes through 16 KiB of static shared memory, tr__BM_128
 * through 64 KiB of dynamic shared memory, tr__BM_512 would need 256 KiB. */
static const char *transpose_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BM=[32, 128, 512])\n"
    "def tr(A: ph.tensor[ph.f32][N, 128], C: ph.tensor[ph.f32][128, N]):\n"
    "    i0: ph.let = ph.ctx.block.x * BM\n"
    "    C[:, i0:+BM] = ph.transpose(A[i0:+BM, :])\n";

static int launches_with_shared(const char *name, unsigned bytes)
{
    int n = 0;
    for (int i = 0; i < fake.nlaunches && i < 256; i++) n += !strcmp(fake.launched[i], name) && fake.launched_shared[i] == bytes;
    return n;
}

/* A config over 48 KB is allowed its dynamic shared memory once, when it
 * loads, and every launch asks for it; a static config asks for none; a
 * config over the device's opt-in maximum leaves the eligible set before
 * the driver sees it, saying why. */
Test(runtime, configs_over_48_kb_take_dynamic_shared_memory)
{
    use_fake_driver();
    fake.fast = "tr__BM_128";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 2, "the config over the device's maximum never reaches the driver");
    cr_assert_eq(loads_of("tr__BM_32"), 1);
    cr_assert_eq(loads_of("tr__BM_128"), 1);
    cr_assert_eq(fake.nallowed, 1);
    cr_assert_str_eq(fake.allowed[0], "tr__BM_128");
    cr_assert_eq(fake.allowed_bytes[0], 65536);
    cr_assert_eq(launches_with_shared("tr__BM_32", 0), RUNS_TIMED, "timed with no dynamic shared memory");
    cr_assert_eq(launches_with_shared("tr__BM_128", 65536), RUNS_TIMED + 1, "timed, then launched, with 64 KiB each time");
    cr_assert_eq(fake.nlaunches, 2 * RUNS_TIMED + 1);
    cr_assert_str_eq(ph_kernel_last_config(k), "tr__BM_128");

    ph_kernel *big;
    cr_assert_eq(ph_kernel_get(m, "tr__BM_512", &big), PH_OK);
    cr_assert_eq(ph_launch(big, grid1, NULL, args, 2), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), "tr__BM_512: no eligible config could be loaded: tr__BM_512 is refused: it needs "
                     "262144 bytes of shared memory, more than the 232448 a block of this device may have");
    cr_assert_eq(fake.nloads, 2);
    cr_assert_eq(fake.nallowed, 1, "the allowance is set once, at load");
    ph_module_free(m);
    ph_shutdown();
}

/* When the driver will not allow a function its dynamic shared memory,
 * that config leaves the eligible set with the driver's error. */
Test(runtime, a_refused_shared_memory_allowance_leaves_the_eligible_set)
{
    use_fake_driver();
    fake.deny_shared = true;
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "tr__BM_32");
    cr_assert_eq(fake.nlaunches, 1, "one config left: no timing");
    ph_kernel *one;
    cr_assert_eq(ph_kernel_get(m, "tr__BM_128", &one), PH_OK);
    cr_assert_eq(ph_launch(one, grid1, NULL, args, 2), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), "tr__BM_128: no eligible config could be loaded: the CUDA driver refused tr__BM_128 "
                     "65536 bytes of dynamic shared memory (error 1): fake error");
    ph_module_free(m);
    ph_shutdown();
}

/* ph_kernel_stats: a named config is loaded as a launch would load it,
 * and its figures are the driver's (registers, local memory, static shared
 * memory, the block limit), the JIT log's (spills) and the runtime's own
 * (the dynamic shared memory each launch asks for, the block). NULL is
 * the last launch's config; before any launch, only a kernel's one config. */
Test(runtime, kernel_stats_come_from_the_driver)
{
    use_fake_driver();
    fake.fast = "tr__BM_32";
    ph_module *m;
    ph_kernel *k, *one;
    ph_stats s;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    cr_assert_eq(ph_kernel_stats(k, NULL, &s), PH_ERR_INVALID);
    cr_assert_str_eq(ph_last_error(), "tr has 3 configs and none was launched yet: name one");
    cr_assert_eq(ph_kernel_stats(k, "tr__BM_64", &s), PH_ERR_NOT_FOUND);
    cr_assert_str_eq(ph_last_error(), "tr has no config named 'tr__BM_64'");
    cr_assert_eq(ph_kernel_stats(NULL, NULL, &s), PH_ERR_INVALID);
    cr_assert_eq(fake.nloads, 0);

    cr_assert_eq(ph_kernel_stats(k, "tr__BM_128", &s), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 1, "the config is loaded to be asked");
    cr_assert_str_eq(s.config, "tr__BM_128");
    cr_expect_eq(s.threads, 128);
    cr_expect_eq(s.registers, 40);
    cr_expect_eq(s.local_bytes, 16);
    cr_expect_eq(s.spill_store_bytes, 8);
    cr_expect_eq(s.spill_load_bytes, 12);
    cr_expect_eq(s.static_shared_bytes, 1024);
    cr_expect_eq(s.dynamic_shared_bytes, 65536, "64 KiB: dynamic");
    cr_expect_eq(s.max_threads_per_block, 1024);
    cr_assert_eq(ph_kernel_stats(k, "tr__BM_512", &s), PH_ERR_MODULE, "a refused config has no figures");

    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_stats(k, NULL, &s), PH_OK, "%s", ph_last_error());
    cr_expect_str_eq(s.config, "tr__BM_32", "the config the last launch used");
    cr_expect_eq(s.dynamic_shared_bytes, 0);
    cr_expect_eq(fake.nloads, 2, "nothing is loaded twice");
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &one), PH_OK);
    cr_assert_eq(ph_kernel_stats(one, NULL, &s), PH_OK, "a kernel of one config needs no name");
    ph_module_free(m);
    ph_shutdown();

    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK);
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK);
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &one), PH_OK);
    cr_assert_eq(ph_kernel_stats(one, NULL, &s), PH_ERR_STATE);
    cr_assert_str_eq(ph_last_error(), "statistics come from the CUDA driver; the interpreter has none");
    ph_module_free(m);
    ph_shutdown();
}

/* What the code above prints on stderr, whole: stderr goes to a file. */
static char *stderr_of_launch(ph_kernel *k, const ph_arg *args, int nargs)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/phobos-stats.%d", getpid());
    fflush(stderr);
    int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    ph_status s = ph_launch(k, grid1, NULL, args, nargs);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    char *text = tu_read_file(path);
    unlink(path);
    return text;
}

/* PHOBOS_TIME_COMPILE=1: the first launch generates the kernel's three
 * configs at once; a line each, in config order, says where its time
 * went, then one line the batch's. A launch that generates nothing says
 * nothing. */
Test(runtime, phobos_time_compile_reports_each_config_of_a_batch)
{
    setenv("PHOBOS_TIME_COMPILE", "1", 1);
    setenv("PHOBOS_COMPILE_THREADS", "2", 1);
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    char *log = stderr_of_launch(k, args, 4);
    const char *at = log;
    static const char *const lines[] = {"phobos: time: vadd__BLOCK_128: ", "phobos: time: vadd__BLOCK_256: ",
                                        "phobos: time: vadd__BLOCK_512: ",
                                        "phobos: time: 3 configs generated (0 from the PTX cache) on 2 threads in "};
    for (int i = 0; i < 4; i++) {
        const char *line = strstr(at, lines[i]);
        cr_assert_not_null(line, "no '%s' after what came before in:\n%s", lines[i], log);
        at = line + strlen(lines[i]);
    }
    cr_expect(strstr(log, "ms CPU (lowering ") && strstr(log, ", LLVM pipeline ") && strstr(log, ", NVPTX back end "), "%s", log);
    free(log);
    log = stderr_of_launch(k, args, 4);
    cr_expect_str_eq(log, "", "every config is loaded: nothing generated, nothing said");
    free(log);
    ph_module_free(m);
    ph_shutdown();
    unsetenv("PHOBOS_TIME_COMPILE");
    unsetenv("PHOBOS_COMPILE_THREADS");
}

/* PHOBOS_OPT picks the JIT's pipeline: O3 and O0 are other files in the
 * disk cache than the default's, and O0's PTX is not the default's. */
Test(runtime, phobos_opt_picks_the_pipeline_and_its_cache_file)
{
    char dir[] = "/tmp/phobos-cache-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    ph_module *m;
    char *plain, *ptx, err[512];
    bool cached;
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &plain, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached);
    static const char *const levels[] = {"O3", "O0"};
    for (int i = 0; i < 2; i++) {
        setenv("PHOBOS_OPT", levels[i], 1);
        cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
        cr_assert(!cached, "PHOBOS_OPT=%s: generated, not the default's file", levels[i]);
        if (i == 1) cr_expect_str_neq(ptx, plain, "O0 is not optimized");
        free(ptx);
        cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
        cr_assert(cached, "PHOBOS_OPT=%s: its own file, read back", levels[i]);
        free(ptx);
    }
    unsetenv("PHOBOS_OPT");
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(cached);
    cr_expect_str_eq(ptx, plain);
    free(ptx);
    free(plain);
    ph_module_free(m);
    unsetenv("PHOBOS_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* PHOBOS_STATS=1: each config prints its figures when it loads, once;
 * where the JIT's log holds no report, the spills are not made up. */
Test(runtime, phobos_stats_prints_a_line_per_loaded_config)
{
    setenv("PHOBOS_STATS", "1", 1);
    use_fake_driver();
    fake.fast = "tr__BM_128";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    char *err = stderr_of_launch(k, args, 2);
    cr_expect_str_eq(err,
        "phobos: tr__BM_32: 40 registers, 8 bytes spill stores, 12 bytes spill loads, 16 bytes local memory, "
        "1024 bytes static shared, 0 bytes dynamic shared, 128 threads (at most 1024)\n"
        "phobos: tr__BM_128: 40 registers, 8 bytes spill stores, 12 bytes spill loads, 16 bytes local memory, "
        "1024 bytes static shared, 65536 bytes dynamic shared, 128 threads (at most 1024)\n");
    free(err);
    err = stderr_of_launch(k, args, 2);
    cr_expect_str_eq(err, "", "loaded configs print nothing again");
    free(err);
    ph_module_free(m);

    fake.quiet_jit = true;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &k), PH_OK);
    err = stderr_of_launch(k, args, 2);
    cr_expect_str_eq(err, "phobos: tr__BM_32: 40 registers, spills not reported, 16 bytes local memory, "
                          "1024 bytes static shared, 0 bytes dynamic shared, 128 threads (at most 1024)\n");
    free(err);
    ph_stats s;
    cr_assert_eq(ph_kernel_stats(k, NULL, &s), PH_OK);
    cr_expect(s.spill_store_bytes == -1 && s.spill_load_bytes == -1);
    ph_module_free(m);
    ph_shutdown();
    unsetenv("PHOBOS_STATS");
}

/* With PHOBOS_LINEINFO=1 the JIT is asked to keep the line information
 * (CU_JIT_GENERATE_LINE_INFO); without it, it is not. */
Test(runtime, lineinfo_asks_the_jit_for_line_information)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *a, *b;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &a), PH_OK);
    cr_assert_eq(ph_kernel_get(m, "tr__BM_128", &b), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(a, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    setenv("PHOBOS_LINEINFO", "1", 1);
    cr_assert_eq(ph_launch(b, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    unsetenv("PHOBOS_LINEINFO");
    cr_assert_eq(fake.nloads, 2);
    cr_expect_not(fake.line_info_asked[0]);
    cr_expect(fake.line_info_asked[1]);
    ph_module_free(m);
    ph_shutdown();
}

/* A second launch with the same dims takes the remembered winner: nothing
 * is timed again, even when another config would now be faster. */
Test(runtime, a_second_launch_with_the_same_dims_is_not_tuned_again)
{
    use_fake_driver();
    fake.fast = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 3 * PH_TUNE_RUNS, "three configs, each timed");
    cr_assert_eq(fake.nlaunches, 3 * RUNS_TIMED + 1);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");

    fake.fast = "vadd__BLOCK_512";
    args[0].ptr = 0x40000;   /* other buffers, the same dims */
    args[3] = ph_f32(3);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 3 * PH_TUNE_RUNS, "nothing timed again");
    cr_assert_eq(fake.nlaunches, 3 * RUNS_TIMED + 2, "one launch");
    cr_assert_str_eq(fake.launched[3 * RUNS_TIMED + 1], "vadd__BLOCK_256");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    cr_assert_eq(fake.nloads, 3);
    ph_module_free(m);
    ph_shutdown();
}

/* Two tensors with dims of their own: a change in any one dim (here the
 * second tensor's second) is new dims, tuned again; each set of dims keeps
 * its own winner. */
static const char *two_tensors_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(B=[16, 32])\n"
    "def cp(A: ph.tensor[ph.f32][M, K], C: ph.tensor[ph.f32][P, Q]):\n"
    "    C[0:+B, 0:+16] = A[0:+B, 0:+16]\n";

Test(runtime, other_dims_are_tuned_again)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("cp.ph", two_tensors_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "cp", &k), PH_OK);
    ph_arg first[2] = {ph_tensor2(0x10000, 64, 64), ph_tensor2(0x20000, 64, 64)};
    ph_arg other[2] = {ph_tensor2(0x10000, 64, 64), ph_tensor2(0x20000, 64, 32)};
    fake.fast = "cp__B_16";
    cr_assert_eq(ph_launch(k, grid1, NULL, first, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 2 * PH_TUNE_RUNS);
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_16");

    fake.fast = "cp__B_32";
    cr_assert_eq(ph_launch(k, grid1, NULL, other, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 4 * PH_TUNE_RUNS, "new dims: both configs timed again");
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_32");

    cr_assert_eq(ph_launch(k, grid1, NULL, first, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_16", "the first dims keep their winner");
    cr_assert_eq(ph_launch(k, grid1, NULL, other, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_32");
    cr_assert_eq(fake.ntimings, 4 * PH_TUNE_RUNS, "neither is timed a second time");
    cr_assert_eq(fake.nlaunches, 2 * (2 * RUNS_TIMED + 1) + 2, "two tunings (each config's runs and the winner), then two launches");
    ph_module_free(m);
    ph_shutdown();
}

/* The refusal names the reason of each config that was eligible, and only
 * those; a later launch gives the same reasons, kept from the first, with
 * nothing loaded again. */
static const char *aligned_three_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "@ph.aligned(N=\"BLOCK\")\n"
    "def vadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n";

Test(runtime, the_refusal_names_each_eligible_configs_reason)
{
    use_fake_driver();
    fake.refuse[0] = "vadd__BLOCK_128";
    fake.refuse[1] = "vadd__BLOCK_256";
    fake.refuse[2] = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", aligned_three_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    /* N = 768: BLOCK 512 breaks its promise and is not eligible */
    ph_arg args[4] = {ph_tensor1(0x10000, 768), ph_tensor1(0x20000, 768), ph_tensor1(0x30000, 768), ph_f32(2)};
    const char *want = "vadd: no eligible config could be loaded: "
        "the CUDA driver refused vadd__BLOCK_128 (error 218): ptxas error   : Entry function 'vadd__BLOCK_128' uses too much "
        "shared data (0x10000 bytes, 0xc000 max); "
        "the CUDA driver refused vadd__BLOCK_256 (error 218): ptxas error   : Entry function 'vadd__BLOCK_256' uses too much "
        "shared data (0x10000 bytes, 0xc000 max)";
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), want);
    cr_assert_eq(fake.nloads, 2);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), want);
    cr_assert_eq(fake.nloads, 2, "a refused config is not loaded again");
    cr_assert_eq(fake.nlaunches, 0);
    ph_module_free(m);
    ph_shutdown();
}

/* ph_launch_stream puts every launch on the caller's stream, the timed
 * ones and the CUDA events that time them too; ph_launch uses the NULL
 * stream. */
Test(runtime, launches_and_their_timing_go_on_the_callers_stream)
{
    use_fake_driver();
    fake.fast = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    CUstream stream = (CUstream)(uintptr_t)0x5000;
    cr_assert_eq(ph_launch_stream(k, grid1, NULL, args, 4, stream), PH_OK, "%s", ph_last_error());
    enum { RUNS = PH_TUNE_WARMUPS + PH_TUNE_RUNS, LAUNCHES = 3 * RUNS + 1 };
    cr_assert_eq(fake.nlaunches, LAUNCHES, "three configs timed, then the fastest");
    for (int i = 0; i < fake.nlaunches; i++) cr_assert_eq(fake.launched_on[i], stream, "launch %d on %p", i, (void *)fake.launched_on[i]);
    cr_assert_eq(fake.nrecords, 3 * PH_TUNE_RUNS * 2 + 1, "two events for each timed run, one before the scratch is freed");
    for (int i = 0; i < fake.nrecords; i++) cr_assert_eq(fake.recorded_on[i], stream, "event %d recorded on %p", i, (void *)fake.recorded_on[i]);

    CUstream other = (CUstream)(uintptr_t)0x6000;
    cr_assert_eq(ph_launch_stream(k, grid1, NULL, args, 4, other), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.launched_on[LAUNCHES], other, "a tuned launch goes on its own stream");
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_null(fake.launched_on[LAUNCHES + 1], "ph_launch is the NULL stream");
    cr_assert_eq(fake.nlaunches, LAUNCHES + 2);
    ph_module_free(m);
    ph_shutdown();
}

/* What a thread that never chose a device sees and does: a launch of a
 * module loaded for device 1, a malloc, and the context it had after each. */
typedef struct {
    ph_kernel *k;
    ph_status launch, malloc_status;
    int device, launched_device, context_after_launch, context_after_malloc;
    ph_devptr p;
} Stranger;

static void *stranger(void *arg)
{
    Stranger *t = arg;
    ph_get_device(&t->device);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    t->launch = ph_launch(t->k, grid1, NULL, args, 4);
    t->launched_device = fake.launched_device[(fake.nlaunches - 1) % 256];
    t->context_after_launch = current_device();
    t->malloc_status = ph_malloc(&t->p, 64);
    t->context_after_malloc = current_device();
    return NULL;
}

/* Two devices: ph_init retains each one's context; the first is every
 * thread's device until it calls ph_set_device; a module runs on the
 * device it was loaded for, whatever thread launches it; ph_malloc works
 * on the calling thread's device; each call puts back the context the
 * thread had; ph_shutdown releases both. */
Test(runtime, each_module_runs_on_the_device_it_was_loaded_for)
{
    use_fake_driver();
    cr_assert_eq(fake.retained[0], 1);
    cr_assert_eq(current_device(), 0, "the first ph_init leaves its device's context current");
    int dev = -5;
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 0);
    cr_assert_eq(ph_set_device(1), PH_ERR_STATE);
    cr_assert_str_eq(ph_last_error(), "device 1 is not initialized (call ph_init(1) first)");

    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_init(1), PH_OK);
    cr_assert_eq(fake.retained[1], 1, "a device is started once");
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 0, "the first device started stays the default");
    cr_assert_eq(current_device(), 0, "starting another device leaves the thread's context alone");
    cr_assert_eq(ph_init(2), PH_ERR_NO_DEVICE);
    cr_assert_str_eq(ph_last_error(), "device 2 does not exist (this machine has 2)");

    ph_module *m0, *m1;
    ph_kernel *k0, *k1;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m0), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(current_device(), 1, "ph_set_device makes its device's context current");
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 1);
    ph_devptr p = 0;
    cr_assert_eq(ph_malloc(&p, 64), PH_OK, "%s", ph_last_error());
    cr_assert_eq(device_of(p), 1, "allocated on device 1");
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m0, "vadd__BLOCK_128", &k0), PH_OK);
    cr_assert_eq(ph_kernel_get(m1, "vadd__BLOCK_128", &k1), PH_OK);

    cr_assert_eq(ph_set_device(0), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k1, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.launched_device[0], 1, "m1 was loaded for device 1");
    cr_assert_eq(current_device(), 0, "the launch put back the thread's context");
    cr_assert_eq(ph_launch(k0, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.launched_device[1], 0, "m0 was loaded for device 0");
    cr_assert_eq(ph_malloc(&p, 64), PH_OK);
    cr_assert_eq(device_of(p), 0, "allocated on device 0");

    Stranger t = {.k = k1, .device = -5};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, stranger, &t), 0);
    pthread_join(th, NULL);
    cr_assert_eq(t.device, 0, "a thread that never chose has the default device");
    cr_assert_eq(t.launch, PH_OK);
    cr_assert_eq(t.launched_device, 1, "m1 runs on device 1 from any thread");
    cr_assert_eq(t.context_after_launch, -1, "the thread had no context, and has none after");
    cr_assert_eq(t.malloc_status, PH_OK);
    cr_assert_eq(device_of(t.p), 0, "its memory is on its device, the default");
    cr_assert_eq(t.context_after_malloc, -1);

    ph_module_free(m0);
    ph_module_free(m1);
    ph_shutdown();
    cr_assert_eq(fake.retained[0], 0, "ph_shutdown releases device 0");
    cr_assert_eq(fake.retained[1], 0, "and device 1");
    cr_assert_eq(ph_set_device(0), PH_ERR_STATE);
    cr_assert_eq(ph_get_device(&dev), PH_ERR_STATE);
}

/* A module outlives a ph_shutdown: its configs went with the context, so
 * its next launch loads them again, on the device the launching thread
 * has in the new runtime. */
Test(runtime, a_module_from_before_a_shutdown_loads_again)
{
    use_fake_driver();
    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK);
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 1);
    cr_assert_eq(fake.launched_device[0], 1);
    ph_shutdown();
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_STATE);
    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 2, "loaded again");
    cr_assert_eq(fake.launched_device[1], 0, "on this thread's device now");
    ph_module_free(m);
    ph_shutdown();
}

/* How many times ph_launch allocated. */
static long allocations_of(ph_kernel *k, const ph_arg *args, int nargs, ph_status *s)
{
    allocations = 0;
    counting = true;
    *s = ph_launch(k, grid1, NULL, args, nargs);
    counting = false;
    return allocations;
}

/* Once a kernel's configs are loaded and tuned for the launch's dims, a
 * launch allocates nothing: through the autotuner, or one config by its
 * entry name. Tuning new dims allocates (the winner is remembered), which
 * shows the count sees the runtime's allocations. */
Test(runtime, a_tuned_launch_allocates_nothing)
{
    if (!COUNTS_ALLOCATIONS) cr_skip_test("AddressSanitizer owns malloc here: allocations are not counted");
    use_fake_driver();
    ph_module *m;
    ph_kernel *k, *one;
    ph_status s;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_128", &one), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    long first = allocations_of(k, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_gt(first, 0, "the first launch generates and loads three configs");

    long again = allocations_of(k, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_eq(again, 0, "a launch with tuned dims allocated %ld times", again);

    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    long tuned = allocations_of(k, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_eq(tuned, 1, "tuning new dims remembers the winner (%ld allocations)", tuned);
    cr_assert_eq(allocations_of(k, args, 4, &s), 0);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());

    cr_assert_eq(ph_launch(one, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    long single = allocations_of(one, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_eq(single, 0, "a launch of one loaded config allocated %ld times", single);
    ph_module_free(m);
    ph_shutdown();
}

/* ---- the interpreter as the target (PH_INTERPRETER, PHOBOS_TARGET=interp) ---- */

static void grid_of_n(const ph_meta *meta, void *user, unsigned g[3])
{
    long n = *(long *)user, block = (long)ph_meta_get(meta, "BLOCK", 1);
    g[0] = (unsigned)((n + block - 1) / block);
}

/* Host arrays are the arguments; the launch has run when it returns; the
 * first eligible config is the one run (BLOCK 256 is not, for N = 384). */
Test(runtime, the_interpreter_runs_launches_on_host_memory)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_device_name(), "the CPU interpreter");
    ph_module *m;
    ph_kernel *k = get(&m, "vadd");
    float x[384], y[384], z[384];
    for (int i = 0; i < 384; i++) { x[i] = (float)i; y[i] = 1.0f - (float)i / 2; z[i] = -1; }
    long n = 384;
    ph_arg args[4] = {ph_tensor1((ph_devptr)(uintptr_t)x, n), ph_tensor1((ph_devptr)(uintptr_t)y, n),
                      ph_tensor1((ph_devptr)(uintptr_t)z, n), ph_f32(2.0f)};
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 4), PH_OK, "%s", ph_last_error());
    for (int i = 0; i < 384; i++) cr_assert_float_eq(z[i], 2.0f * x[i] + y[i], 1e-6f, "z[%d] = %g", i, z[i]);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    cr_assert_eq(ph_synchronize(), PH_OK);
    memset(z, 0, sizeof z);
    cr_assert_eq(ph_launch_stream(k, grid_of_n, &n, args, 4, (void *)(uintptr_t)0x5000), PH_OK, "the stream is ignored: %s",
                 ph_last_error());
    for (int i = 0; i < 384; i++) cr_assert_float_eq(z[i], 2.0f * x[i] + y[i], 1e-6f, "z[%d] = %g", i, z[i]);
    n = 100;   /* a multiple of no BLOCK */
    args[0].dims[0] = args[1].dims[0] = args[2].dims[0] = n;
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 4), PH_ERR_NOT_ELIGIBLE);
    args[0].dims[0] = 128;
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 4), PH_ERR_ARGS);
    cr_assert(strstr(ph_last_error(), "dim N is 128 in X but 100 in Y") != NULL, "%s", ph_last_error());
    ph_module_free(m);
    ph_shutdown();
}

/* Memory calls work on host memory, so a program written for the GPU
 * (ph_malloc, copies, ph_memset8) runs unchanged. */
Test(runtime, the_interpreters_memory_is_host_memory)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_devptr d = 0;
    cr_assert_eq(ph_malloc(&d, 64), PH_OK);
    cr_assert_eq(ph_memset8(d, 0x3f, 64), PH_OK);
    unsigned char back[64];
    cr_assert_eq(ph_memcpy_dtoh(back, d, 64), PH_OK);
    cr_assert_eq(back[0], 0x3f);
    cr_assert_eq(back[63], 0x3f);
    const char hello[] = "hello";
    cr_assert_eq(ph_memcpy_htod(d, hello, sizeof hello), PH_OK);
    cr_assert_str_eq((const char *)(uintptr_t)d, "hello");
    cr_assert_eq(ph_free(d), PH_OK);
    ph_shutdown();
    cr_assert_eq(ph_malloc(&d, 64), PH_ERR_STATE);
}

/* PHOBOS_TARGET=interp turns any ph_init into the interpreter's; changing
 * target without ph_shutdown is refused. */
Test(runtime, phobos_target_interp_selects_the_interpreter)
{
    setenv("PHOBOS_TARGET", "interp", 1);
    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_device_name(), "the CPU interpreter");
    unsetenv("PHOBOS_TARGET");
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK);
    cr_assert_eq(ph_init(0), PH_ERR_STATE);
    cr_assert(strstr(ph_last_error(), "already runs on the CPU interpreter") != NULL, "%s", ph_last_error());
    ph_shutdown();
    cr_assert_str_eq(ph_device_name(), "no device");
}

/* A kernel's signature, parameter by parameter: names, kinds, element
 * types, ranks, named and literal dims. */
Test(runtime, kernel_params_describe_the_signature)
{
    ph_module *m;
    ph_kernel *k = get(&m, "twod");
    cr_assert_eq(ph_kernel_param_count(k), 2);
    cr_assert_eq(ph_kernel_param_count(NULL), -1);
    ph_param p;
    cr_assert_eq(ph_kernel_param(k, 0, &p), PH_OK);
    cr_assert_str_eq(p.name, "A");
    cr_assert_eq(p.kind, PH_ARG_TENSOR);
    cr_assert_str_eq(p.dtype, "f16");
    cr_assert_eq(p.rank, 2);
    cr_assert_str_eq(p.dim_names[0], "M");
    cr_assert_null(p.dim_names[1]);
    cr_assert_eq(p.dim_values[1], 64);
    cr_assert_eq(ph_kernel_param(k, 2, &p), PH_ERR_INVALID);
    cr_assert(strstr(ph_last_error(), "twod has no parameter 2") != NULL, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &k), PH_OK);
    cr_assert_eq(ph_kernel_param_count(k), 4);
    cr_assert_eq(ph_kernel_param(k, 3, &p), PH_OK);
    cr_assert_str_eq(p.name, "a");
    cr_assert_eq(p.kind, PH_ARG_F32);
    cr_assert_str_eq(p.dtype, "f32");
    cr_assert_eq(p.rank, 0);
    cr_assert_eq(ph_kernel_param(k, 2, &p), PH_OK);
    cr_assert_str_eq(p.dim_names[0], "N");
    cr_assert_eq(p.rank, 1);
    ph_module_free(m);
}

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
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
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

static const char *five_configs_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[64, 128, 256, 512, 1024])\n"
    "def v5(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n";

/* After the first timing, the configs within PH_TUNE_CLOSE_PERCENT of the
 * fastest, the PH_TUNE_RETIMED fastest of them, are timed again and the
 * second times decide: here the first timing's winner (BLOCK 64) loses
 * the second to BLOCK 256; BLOCK 1024, close but fourth, and BLOCK 128,
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
    const char *names[5] = {"v5__BLOCK_64", "v5__BLOCK_128", "v5__BLOCK_256", "v5__BLOCK_512", "v5__BLOCK_1024"};
    const float first[5] = {1.0f, 1.16f, 1.10f, 1.12f, 1.14f}, again[5] = {1.0f, 0.5f, 0.9f, 0, 0};
    for (int i = 0; i < 5; i++) fake.clock[i].config = names[i], fake.clock[i].first = first[i], fake.clock[i].again = again[i];
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v5.ph", five_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "v5", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    const int twice[5] = {1, 0, 1, 1, 0};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(fake.clock[i].runs, (1 + twice[i]) * PH_TUNE_RUNS, "%s: %d timed runs", names[i], fake.clock[i].runs);
    cr_assert_str_eq(ph_kernel_last_config(k), "v5__BLOCK_256");
    fflush(out);
    cr_assert(strstr(log, "phobos: tuning v5 (5 configs) again 1/3 v5__BLOCK_64: 1.0000 ms\n"
                          "phobos: tuning v5 (5 configs) again 2/3 v5__BLOCK_256: 0.9000 ms\n"
                          "phobos: tuning v5 (5 configs) again 3/3 v5__BLOCK_512: 1.1200 ms\n"
                          "phobos: tuned v5 (5 configs): v5__BLOCK_256, 0.9000 ms (median of 7 runs)\n"), "%s", log);

    /* new dims: BLOCK 128 is not close, and is not timed again */
    for (int i = 0; i < 5; i++) fake.clock[i].runs = 0, fake.clock[i].first = 1.9f, fake.clock[i].again = 0;
    fake.clock[0].first = 1.0f;
    fake.clock[1].first = 1.16f, fake.clock[1].again = 0.5f;
    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    for (int i = 0; i < 5; i++) cr_assert_eq(fake.clock[i].runs, PH_TUNE_RUNS, "%s: %d timed runs", names[i], fake.clock[i].runs);
    cr_assert_str_eq(ph_kernel_last_config(k), "v5__BLOCK_64");
    ph_set_autotune_verbose(-1);
    ph_internal_autotune_log(NULL);
    fclose(out);
    free(log);
    ph_module_free(m);
    ph_shutdown();
}

/* What the autotuner does around each run of each config, as the trace
 * of driver calls shows it: `per_run` before each timed launch and
 * `before` before the warm-up; `first` once before all, `last` once after,
 * then an event that the scratch waits for before it is freed. */
static void expect_tuning_trace(const char *first, const char *before, const char *per_run, const char *last, int configs)
{
    char want[4096] = "";
    strcat(want, first);
    for (int c = 0; c < configs; c++) {
        for (int w = 0; w < PH_TUNE_WARMUPS; w++) strcat(strcat(want, before), "L");
        for (int r = 0; r < PH_TUNE_RUNS; r++) strcat(strcat(want, per_run), "FRLR");
    }
    strcat(strcat(want, last), "RL");
    cr_assert_str_eq(fake.trace, want);
}

/* Three configs of one time, as bump's are on the fake clock, are each
 * timed, then, all three close to the fastest, each timed again. */
enum { TIMED_TWICE = 2 * 3 };

/* @ph.autotune_restore: X is saved (C), copied back before every run (C),
 * the L2 flushed (F) before each timed one, and copied back once more for
 * the launch kept, so a tuned first launch adds exactly 1; a second launch
 * is one launch. Without it, X would have seen every run. The three
 * configs take the same time: each is timed twice (TIMED_TWICE), the
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
    cr_assert_eq(fake.ntimings, TIMED_TWICE * PH_TUNE_RUNS, "tuned");
    expect_tuning_trace("C", "C", "C", "C", TIMED_TWICE);
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
    cr_assert_eq(host[0], TIMED_TWICE * RUNS_TIMED + 1, "X[0] = %g", host[0]);
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
    expect_tuning_trace("", "Z", "Z", "Z", TIMED_TWICE);
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
    expect_tuning_trace("C", "C", "C", "C", TIMED_TWICE);
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
