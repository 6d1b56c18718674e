/* test_runtime.h: what the runtime's suites (tests/test_runtime*.c)
 * share: heap allocations counted, a module of two kernels and its
 * helpers, and a fake CUDA driver that stands in for libcuda.so.1 so that
 * config loading, autotuning, streams and two devices are tested without
 * a GPU. Each suite uses some of it. */
#ifndef PHOBOS_TEST_RUNTIME_H
#define PHOBOS_TEST_RUNTIME_H
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"

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

/* A grid of ceil(n / BLOCK) blocks, n the long user points at. */
static void grid_of_n(const ph_meta *meta, void *user, unsigned g[3])
{
    long n = *(long *)user, block = (long)ph_meta_get(meta, "BLOCK", 1);
    g[0] = (unsigned)((n + block - 1) / block);
}

#include "runtime_internal.h"

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
    const char *few_threads;     /* this config's registers let a block have only 32 threads */
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
    float drift;            /* each timed run takes drift * ntimings longer (a clock that slows) */
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
    struct {                     /* each cuTensorMapEncodeTiled call */
        int dtype, swizzle, l2, oob;
        unsigned rank, box[2], elem[2];
        uint64_t addr, dims[2], strides[1];
    } maps[16];
    int nmaps;
    void *launch_params[32];     /* the last launch's parameters (pointers to them), the first 32 */
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
    case FUNC_ATTR_MAX_THREADS_PER_BLOCK: *v = fake.few_threads && !strcmp(fake.few_threads, (const char *)f) ? 32 : 1024; return 0;
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
    /* the array ends with a NULL (the runtime sizes it with room to spare) */
    for (int i = 0; i < 32; i++) fake.launch_params[i] = i && !fake.launch_params[i - 1] ? NULL : params[i];
    fake.launched_shared[fake.nlaunches % 256] = smem;
    fake.launched_on[fake.nlaunches % 256] = st;
    fake.launched_device[fake.nlaunches % 256] = current_device();
    snprintf(fake.launched[fake.nlaunches++ % 256], sizeof fake.launched[0], "%s", (const char *)f);
    return 0;
}
/* Records the call; the map's first 8 bytes hold the address, as a mark. */
static CUresult fake_tensor_map(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                const unsigned long long *strides, const unsigned *box, const unsigned *elem, int interleave,
                                int swizzle, int l2, int oob)
{
    (void)interleave;
    if (rank != 2 || fake.nmaps == 16) return 1;
    fake.maps[fake.nmaps].dtype = dtype, fake.maps[fake.nmaps].swizzle = swizzle;
    fake.maps[fake.nmaps].l2 = l2, fake.maps[fake.nmaps].oob = oob, fake.maps[fake.nmaps].rank = rank;
    fake.maps[fake.nmaps].addr = (uint64_t)(uintptr_t)addr;
    for (int i = 0; i < 2; i++) {
        fake.maps[fake.nmaps].dims[i] = dims[i];
        fake.maps[fake.nmaps].box[i] = box[i];
        fake.maps[fake.nmaps].elem[i] = elem[i];
    }
    fake.maps[fake.nmaps++].strides[0] = strides[0];
    memcpy(map, &addr, sizeof addr);
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
    *ms *= 1 + fake.drift * (float)fake.ntimings;
    return 0;
}
static CUresult fake_destroy(CUevent e) { (void)e; return 0; }
static CUresult fake_error(CUresult r, const char **s) { (void)r; *s = "fake error"; return 0; }

static void use_fake_driver(void)
{
    /* the fake device is compute capability 9.0: its default path, whatever
     * a gpucheck run with the mma.sync path forced (PHOBOS_ARCH=sm_90) says */
    unsetenv("PHOBOS_ARCH");
    PhDriver d = {
        .Init = fake_init, .DeviceGetCount = fake_count, .DeviceGet = fake_get, .DeviceGetName = fake_name,
        .DeviceGetAttribute = fake_attr, .DevicePrimaryCtxRetain = fake_retain, .DevicePrimaryCtxRelease = fake_release,
        .CtxSetCurrent = fake_set, .CtxGetCurrent = fake_get_current, .CtxSynchronize = fake_ok, .ModuleLoadDataEx = fake_load,
        .ModuleUnload = fake_unload, .ModuleGetFunction = fake_function, .FuncSetAttribute = fake_func_attr,
        .FuncGetAttribute = fake_func_get_attr, .LaunchKernel = fake_launch, .EventCreate = fake_event,
        .EventRecord = fake_record, .EventSynchronize = fake_sync, .EventElapsedTime = fake_elapsed,
        .EventDestroy = fake_destroy, .GetErrorString = fake_error,
        .MemAlloc = fake_alloc, .MemFree = fake_free, .MemcpyDtoD = fake_dtod, .MemsetD8 = fake_memset,
        .MemcpyDtoDAsync = fake_dtod_async, .MemsetD8Async = fake_memset_async, .TensorMapEncodeTiled = fake_tensor_map,
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

/* three_configs_src's vadd loaded (*m) and launched once on 1024 elements,
 * which tunes it: the kernel. */
static ph_kernel *vadd_launched(ph_module **m)
{
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(*m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    return k;
}

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

#endif
