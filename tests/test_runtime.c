/* test_runtime.c: the runtime's checks that need no GPU: a missing driver
 * said plainly, compile errors and unknown kernels reported, and every
 * argument check refusing a bad launch before anything reaches a device. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
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
    ph_compile_options o = {"sm_80", PH_EMIT_PTX, 1, "vadd", 1, names, values, 0};
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
#include "../runtime/runtime_internal.h"

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
 * dynamic shared memory allowance is kept, and refused with deny_shared. */
static struct {
    const char *refuse[8];
    char loaded[64][128];   /* the entry of each PTX image loaded */
    int nloads;
    char launched[256][128];
    unsigned launched_shared[256];   /* the dynamic shared memory each launch asked for */
    int nlaunches;
    char allowed[64][128];  /* each function given a dynamic shared memory allowance */
    int allowed_bytes[64], nallowed;
    bool deny_shared;
    bool line_info_asked[64];   /* per load: the JIT asked for line information */
    bool quiet_jit;         /* the JIT's info log stays empty, as for code the driver had cached */
    const char *fast;       /* this config times 1 ms, others 2 ms */
    int ntimings;           /* times the autotuner read an event's elapsed time */
} fake;

static CUresult fake_ok(void) { return 0; }
static CUresult fake_init(unsigned f) { (void)f; return 0; }
static CUresult fake_count(int *n) { *n = 1; return 0; }
static CUresult fake_get(CUdevice *d, int i) { *d = i; return 0; }
static CUresult fake_name(char *s, int n, CUdevice d) { (void)d; snprintf(s, (size_t)n, "Fake GPU"); return 0; }
static CUresult fake_attr(int *v, int a, CUdevice d)
{
    (void)d;
    *v = a == ATTR_CC_MAJOR ? 9 : a == ATTR_CC_MINOR ? 0 : a == ATTR_SM_COUNT ? 132 : a == ATTR_MAX_THREADS_PER_BLOCK ? 1024
       : a == ATTR_MAX_SHARED_PER_BLOCK_OPTIN ? 232448 : 65535;
    return 0;
}
static CUresult fake_retain(CUcontext *c, CUdevice d) { (void)d; *c = (CUcontext)&fake; return 0; }
static CUresult fake_release(CUdevice d) { (void)d; return 0; }
static CUresult fake_set(CUcontext c) { (void)c; return 0; }

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

static CUresult fake_load(CUmodule *mod, const void *image, unsigned nopts, int *opts, void **vals)
{
    char *name = fake.loaded[fake.nloads++];
    entry_of(image, name, sizeof fake.loaded[0]);
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
        fake.line_info_asked[fake.nloads - 1] |= opts[j] == JIT_GENERATE_LINE_INFO && vals[j];
    }
    for (unsigned j = 0; j < nopts && verbose && !fake.quiet_jit; j++)
        if (opts[j] == JIT_INFO_LOG)
            snprintf(vals[j], 512, "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function '%s' for 'sm_90'\n"
                     "ptxas info    : Function properties for %s\n    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                     "ptxas info    : Used 40 registers, used 0 barriers, 1024 bytes smem\n", name, name);
    *mod = (CUmodule)name;
    return 0;
}
static CUresult fake_unload(CUmodule m) { (void)m; return 0; }
static CUresult fake_function(CUfunction *f, CUmodule m, const char *name)
{
    cr_assert_str_eq((const char *)m, name, "a function asked of another config's module");
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
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)st; (void)params; (void)extra;
    fake.launched_shared[fake.nlaunches % 256] = smem;
    snprintf(fake.launched[fake.nlaunches++ % 256], sizeof fake.launched[0], "%s", (const char *)f);
    return 0;
}
static CUresult fake_event(CUevent *e, unsigned f) { (void)f; *e = (CUevent)&fake; return 0; }
static CUresult fake_record(CUevent e, CUstream s) { (void)e; (void)s; return 0; }
static CUresult fake_sync(CUevent e) { (void)e; return 0; }
static CUresult fake_elapsed(float *ms, CUevent a, CUevent b)
{
    (void)a; (void)b;
    fake.ntimings++;
    const char *last = fake.launched[(fake.nlaunches - 1) % 256];
    *ms = fake.fast && !strcmp(last, fake.fast) ? 1.0f : 2.0f;
    return 0;
}
static CUresult fake_destroy(CUevent e) { (void)e; return 0; }
static CUresult fake_error(CUresult r, const char **s) { (void)r; *s = "fake error"; return 0; }

static void use_fake_driver(void)
{
    PhDriver d = {
        .Init = fake_init, .DeviceGetCount = fake_count, .DeviceGet = fake_get, .DeviceGetName = fake_name,
        .DeviceGetAttribute = fake_attr, .DevicePrimaryCtxRetain = fake_retain, .DevicePrimaryCtxRelease = fake_release,
        .CtxSetCurrent = fake_set, .CtxSynchronize = fake_ok, .ModuleLoadDataEx = fake_load, .ModuleUnload = fake_unload,
        .ModuleGetFunction = fake_function, .FuncSetAttribute = fake_func_attr, .FuncGetAttribute = fake_func_get_attr,
        .LaunchKernel = fake_launch, .EventCreate = fake_event,
        .EventRecord = fake_record, .EventSynchronize = fake_sync, .EventElapsedTime = fake_elapsed,
        .EventDestroy = fake_destroy, .GetErrorString = fake_error,
    };
    ph_internal_use_driver(&d);
    setenv("PHOBOS_CACHE_DIR", "off", 1);
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
    cr_assert_str_eq(fake.loaded[0], "vadd__BLOCK_128");
    cr_assert_str_eq(fake.loaded[1], "vadd__BLOCK_256");
    cr_assert_str_eq(fake.loaded[2], "vadd__BLOCK_512");
    cr_assert_eq(launches_of("vadd__BLOCK_256"), 0, "the refused config never runs");
    cr_assert_eq(launches_of("vadd__BLOCK_128"), 6, "timed: a warm-up and five runs");
    cr_assert_eq(launches_of("vadd__BLOCK_512"), 7, "timed, then launched as the faster");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");

    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3, "nothing is loaded twice, nor the refused config again");
    cr_assert_eq(launches_of("vadd__BLOCK_512"), 8);

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
    cr_assert_str_eq(fake.loaded[0], "tr__BM_32");
    cr_assert_str_eq(fake.loaded[1], "tr__BM_128");
    cr_assert_eq(fake.nallowed, 1);
    cr_assert_str_eq(fake.allowed[0], "tr__BM_128");
    cr_assert_eq(fake.allowed_bytes[0], 65536);
    cr_assert_eq(launches_with_shared("tr__BM_32", 0), 6, "timed with no dynamic shared memory");
    cr_assert_eq(launches_with_shared("tr__BM_128", 65536), 7, "timed, then launched, with 64 KiB each time");
    cr_assert_eq(fake.nlaunches, 13);
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
    cr_assert_eq(fake.ntimings, 15, "three configs, five timed runs each");
    cr_assert_eq(fake.nlaunches, 19);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");

    fake.fast = "vadd__BLOCK_512";
    args[0].ptr = 0x40000;   /* other buffers, the same dims */
    args[3] = ph_f32(3);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 15, "nothing timed again");
    cr_assert_eq(fake.nlaunches, 20, "one launch");
    cr_assert_str_eq(fake.launched[19], "vadd__BLOCK_256");
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
    cr_assert_eq(fake.ntimings, 10);
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_16");

    fake.fast = "cp__B_32";
    cr_assert_eq(ph_launch(k, grid1, NULL, other, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 20, "new dims: both configs timed again");
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_32");

    cr_assert_eq(ph_launch(k, grid1, NULL, first, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_16", "the first dims keep their winner");
    cr_assert_eq(ph_launch(k, grid1, NULL, other, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_32");
    cr_assert_eq(fake.ntimings, 20, "neither is timed a second time");
    cr_assert_eq(fake.nlaunches, 13 + 13 + 2, "two tunings (six runs a config and the winner), then two launches");
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
