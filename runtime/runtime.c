/* runtime.c: the Phobos runtime (runtime/include/phobos.h): the CUDA
 * driver through dlopen, each config compiled to PTX and loaded on its own
 * when a launch first needs it, and checked launches; which config a
 * launch runs, among those the driver accepts, is the autotuner's choice
 * (autotune.c). */
#define _GNU_SOURCE
#include "phobos.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "dsl.h"
#include "nvidia/ptxas.h"
#include "nvidia/ptxinfo.h"
#include "runtime_internal.h"

/* The driver's calls (runtime_internal.h), from libcuda.so.1 or a test's fakes. */
static PhDriver cu;
static bool cu_loaded;

/* A device the runtime has started (ph_init), with its primary context
 * retained; on the interpreter, devices[0] stands for it. */
typedef struct {
    bool ready;
    CUdevice dev;
    CUcontext ctx;
    char arch[16];
    char name[256];
    int max_grid[3];
    int max_threads;
    int max_shared;        /* bytes of shared memory a block may opt in to */
} Device;

enum { MAX_DEVICES = 64 };

/* The runtime's shared state, behind `lock`: the devices, and in each
 * module its loaded configs, the autotuner's choices and the launch
 * scratch. ph_last_error's message is per thread and needs none. */
static struct {
    bool ready;
    bool interp;           /* the CPU interpreter stands in for the device (PH_INTERPRETER) */
    int default_device;    /* the first started: a thread's device until it calls ph_set_device */
    unsigned generation;   /* one more at each start: a choice made before a ph_shutdown is stale */
    Device devices[MAX_DEVICES];
} rt;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int held;   /* how deep the calling thread holds `lock` */

/* Takes the lock, or takes it again in the thread that holds it: a grid
 * callback runs inside a launch, and may ask the runtime things. */
static void lock_runtime(void)
{
    if (!held++) pthread_mutex_lock(&lock);
}

static void unlock_runtime(void)
{
    if (!--held) pthread_mutex_unlock(&lock);
}

/* The device the calling thread chose with ph_set_device, in the runtime
 * generation it chose it in. */
static _Thread_local struct { int device; unsigned generation; } chosen;

static _Thread_local char last_error[8192];

const char *ph_last_error(void) { return last_error; }

static ph_status fail(ph_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

ph_status ph_internal_fail(ph_status s, const char *message) { return fail(s, "%s", message); }

static ph_status cu_fail(CUresult r, const char *what)
{
    const char *msg = NULL;
    if (cu.GetErrorString) cu.GetErrorString(r, &msg);
    return fail(PH_ERR_CUDA, "%s failed: CUDA error %d (%s)", what, r, msg ? msg : "unknown");
}

ph_status ph_internal_cuda_fail(CUresult r, const char *what) { return cu_fail(r, what); }
const PhDriver *ph_internal_driver(void) { return &cu; }

const char *ph_status_name(ph_status s)
{
    static const char *const names[] = {"ok", "no CUDA driver", "no device", "CUDA error", "compile error",
        "module refused", "not found", "bad arguments", "no eligible config", "bad grid", "bad state", "invalid value"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown status";
}

void ph_internal_use_driver(const PhDriver *fake)
{
    cu = *fake;
    cu_loaded = true;
}

static bool load_driver(void)
{
    if (cu_loaded) return true;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
#define SYM(field, name) if (!(*(void **)&cu.field = dlsym(lib, name))) { dlclose(lib); memset(&cu, 0, sizeof cu); return false; }
    SYM(Init, "cuInit") SYM(DeviceGetCount, "cuDeviceGetCount") SYM(DeviceGet, "cuDeviceGet")
    SYM(DeviceGetName, "cuDeviceGetName") SYM(DeviceGetAttribute, "cuDeviceGetAttribute")
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
    SYM(CtxSetCurrent, "cuCtxSetCurrent") SYM(CtxGetCurrent, "cuCtxGetCurrent") SYM(CtxSynchronize, "cuCtxSynchronize")
    SYM(ModuleLoadDataEx, "cuModuleLoadDataEx") SYM(ModuleUnload, "cuModuleUnload")
    SYM(ModuleGetFunction, "cuModuleGetFunction") SYM(FuncSetAttribute, "cuFuncSetAttribute")
    SYM(FuncGetAttribute, "cuFuncGetAttribute")
    SYM(LaunchKernel, "cuLaunchKernel")
    SYM(MemAlloc, "cuMemAlloc_v2") SYM(MemFree, "cuMemFree_v2") SYM(MemcpyHtoD, "cuMemcpyHtoD_v2")
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2") SYM(MemcpyDtoD, "cuMemcpyDtoD_v2") SYM(MemsetD8, "cuMemsetD8_v2")
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") SYM(MemsetD8Async, "cuMemsetD8Async")
    SYM(EventCreate, "cuEventCreate")
    SYM(EventRecord, "cuEventRecord") SYM(EventSynchronize, "cuEventSynchronize")
    SYM(EventDestroy, "cuEventDestroy_v2") SYM(GetErrorString, "cuGetErrorString")
#undef SYM
    *(void **)&cu.EventElapsedTime = dlsym(lib, "cuEventElapsedTime_v2");
    if (!cu.EventElapsedTime) *(void **)&cu.EventElapsedTime = dlsym(lib, "cuEventElapsedTime");
    if (!cu.EventElapsedTime) { dlclose(lib); memset(&cu, 0, sizeof cu); return false; }
    cu_loaded = true;   /* lib stays open for the life of the process */
    return true;
}

/* The interpreter as the target: no driver, host memory as device memory,
 * launches run the IR on the CPU. Its grid limits are a GPU's, so a grid
 * one target refuses the other does too. */
static ph_status init_interpreter(void)
{
    Device *d = &rt.devices[0];
    d->max_grid[0] = INT32_MAX;
    d->max_grid[1] = d->max_grid[2] = 65535;
    snprintf(d->name, sizeof d->name, "the CPU interpreter");
    d->ready = true;
    rt.interp = rt.ready = true;
    rt.default_device = 0;
    rt.generation++;
    return PH_OK;
}

static bool interpreter_asked(int device)
{
    const char *target = getenv("PHOBOS_TARGET");
    return device == PH_INTERPRETER || (target && !strcmp(target, "interp"));
}

/* The calling thread's device: its ph_set_device choice, else the first
 * started. The runtime is ready. */
static int thread_device(void)
{
    if (chosen.generation == rt.generation && rt.devices[chosen.device].ready) return chosen.device;
    return rt.default_device;
}

/* Makes d's context current in the calling thread, keeping the one that
 * was in *saved for leave_context. */
static ph_status enter_context(const Device *d, CUcontext *saved)
{
    CUresult r = cu.CtxGetCurrent(saved);
    if (!r && *saved != d->ctx) r = cu.CtxSetCurrent(d->ctx);
    return r ? cu_fail(r, "cuCtxSetCurrent") : PH_OK;
}

static void leave_context(const Device *d, CUcontext saved)
{
    if (saved != d->ctx) cu.CtxSetCurrent(saved);
}

/* Retains the primary context of device `ordinal` (in range) and reads
 * what launches need to know of it. */
static ph_status device_open(Device *d, int ordinal)
{
    CUresult r;
    if ((r = cu.DeviceGet(&d->dev, ordinal))) return cu_fail(r, "cuDeviceGet");
    int major = 0, minor = 0, sms = 0;
    cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, d->dev);
    cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, d->dev);
    if (major < 8)
        return fail(PH_ERR_NO_DEVICE, "device %d has compute capability %d.%d; phc needs 8.0 or later", ordinal, major, minor);
    cu.DeviceGetAttribute(&sms, ATTR_SM_COUNT, d->dev);
    cu.DeviceGetAttribute(&d->max_grid[0], ATTR_MAX_GRID_X, d->dev);
    cu.DeviceGetAttribute(&d->max_grid[1], ATTR_MAX_GRID_Y, d->dev);
    cu.DeviceGetAttribute(&d->max_grid[2], ATTR_MAX_GRID_Z, d->dev);
    cu.DeviceGetAttribute(&d->max_threads, ATTR_MAX_THREADS_PER_BLOCK, d->dev);
    if (cu.DeviceGetAttribute(&d->max_shared, ATTR_MAX_SHARED_PER_BLOCK_OPTIN, d->dev) || d->max_shared < CODEGEN_MAX_STATIC_SHARED)
        d->max_shared = CODEGEN_MAX_STATIC_SHARED;   /* every device of compute capability 8.0 and later has this much */
    /* sm_80 code runs on every later chip; sm_90 where it is one */
    snprintf(d->arch, sizeof d->arch, major == 9 ? "sm_90" : "sm_80");
    char name[200] = "";
    cu.DeviceGetName(name, sizeof name, d->dev);
    snprintf(d->name, sizeof d->name, "%s, sm_%d%d, %d SMs", name, major, minor, sms);
    if ((r = cu.DevicePrimaryCtxRetain(&d->ctx, d->dev))) return cu_fail(r, "cuDevicePrimaryCtxRetain");
    d->ready = true;
    return PH_OK;
}

/* Starts the interpreter, or GPU `device` beside those already started. */
static ph_status start_target(int device)
{
    bool interp = interpreter_asked(device);
    if (rt.ready && rt.interp != interp)
        return fail(PH_ERR_STATE, "the runtime already runs on %s (call ph_shutdown first)", rt.devices[rt.default_device].name);
    if (rt.ready && (interp || (device >= 0 && device < MAX_DEVICES && rt.devices[device].ready))) return PH_OK;
    if (interp) return init_interpreter();
    if (!load_driver())
        return fail(PH_ERR_NO_DRIVER, "no CUDA driver on this machine (libcuda.so.1 could not be loaded: %s)", dlerror());
    CUresult r = cu.Init(0);
    if (r) return r == 100 ? fail(PH_ERR_NO_DEVICE, "the CUDA driver found no GPU (CUDA error 100)") : cu_fail(r, "cuInit");
    int count = 0;
    if ((r = cu.DeviceGetCount(&count))) return cu_fail(r, "cuDeviceGetCount");
    if (device < 0 || device >= count)
        return fail(PH_ERR_NO_DEVICE, "device %d does not exist (this machine has %d)", device, count);
    if (device >= MAX_DEVICES) return fail(PH_ERR_NO_DEVICE, "device %d: the runtime drives devices 0 to %d", device, MAX_DEVICES - 1);
    Device *d = &rt.devices[device];
    ph_status s = device_open(d, device);
    if (s) return s;
    if (rt.ready) return PH_OK;
    /* the first device: every thread's until it chooses, and current in this one */
    if ((r = cu.CtxSetCurrent(d->ctx))) {
        cu.DevicePrimaryCtxRelease(d->dev);
        d->ready = false;
        return cu_fail(r, "cuCtxSetCurrent");
    }
    rt.ready = true;
    rt.default_device = device;
    rt.generation++;
    return PH_OK;
}

ph_status ph_init(int device)
{
    lock_runtime();
    ph_status s = start_target(device);
    unlock_runtime();
    return s;
}

#define NOT_READY "the runtime is not initialized (call ph_init) or was shut down"

ph_status ph_set_device(int device)
{
    lock_runtime();
    ph_status s = PH_OK;
    CUcontext ctx = NULL;
    if (!rt.ready) {
        s = fail(PH_ERR_STATE, NOT_READY);
    } else if (rt.interp) {
        chosen.generation = 0;   /* every device is the interpreter */
    } else if (device < 0 || device >= MAX_DEVICES || !rt.devices[device].ready) {
        s = fail(PH_ERR_STATE, "device %d is not initialized (call ph_init(%d) first)", device, device);
    } else {
        chosen.device = device;
        chosen.generation = rt.generation;
        ctx = rt.devices[device].ctx;
    }
    unlock_runtime();
    CUresult r = ctx ? cu.CtxSetCurrent(ctx) : 0;
    return s ? s : r ? cu_fail(r, "cuCtxSetCurrent") : PH_OK;
}

ph_status ph_get_device(int *device)
{
    if (!device) return fail(PH_ERR_INVALID, "null pointer to ph_get_device");
    lock_runtime();
    ph_status s = !rt.ready ? fail(PH_ERR_STATE, NOT_READY) : PH_OK;
    if (!s) *device = rt.interp ? PH_INTERPRETER : thread_device();
    unlock_runtime();
    return s;
}

const char *ph_device_name(void)
{
    lock_runtime();
    const char *name = rt.ready ? rt.devices[thread_device()].name : "no device";
    unlock_runtime();
    return name;
}

void ph_shutdown(void)
{
    if (held) return;   /* from inside a launch's grid callback: not now */
    lock_runtime();
    for (int i = 0; rt.ready && !rt.interp && i < MAX_DEVICES; i++) {
        Device *d = &rt.devices[i];
        CUcontext saved = NULL;
        if (!d->ready) continue;
        if (!enter_context(d, &saved)) {
            cu.CtxSynchronize();
            leave_context(d, saved);
        }
        cu.DevicePrimaryCtxRelease(d->dev);
    }
    memset(rt.devices, 0, sizeof rt.devices);
    rt.ready = rt.interp = false;
    unlock_runtime();
}

/* ---- modules ---- */

struct ph_kernel {
    ph_module *module;
    char *name;
    int first, count;          /* its configs: module->ir->funcs[first .. first+count) */
    PhTuner *tuner;            /* its choice among them, and the winners it keeps */
    int last;
    /* What a launch works in, sized once with the module so that a launch
     * allocates nothing: the eligible configs (indices into first ..) and
     * their grids, and cuLaunchKernel's parameters, params[i] pointing at
     * values[i]. Like the autotuner's memory, one launch of k at a time. */
    int *eligible;
    unsigned (*grids)[3];
    void **params;
    uint64_t *values;
    CUstream stream;           /* the launch in progress's, its timing's too */
};

/* Each config is its own CUDA module, loaded when a launch first needs it,
 * so a config the driver refuses (too much shared memory, say) costs only
 * itself: it leaves the eligible set and keeps the driver's reason. */
typedef enum { CONFIG_UNLOADED, CONFIG_LOADED, CONFIG_REFUSED } ConfigState;

typedef struct {
    ConfigState state;
    CUmodule mod;
    CUfunction fn;
    unsigned shared_bytes; /* CONFIG_LOADED: the dynamic shared memory each launch asks for */
    int spill_stores, spill_loads;   /* CONFIG_LOADED: bytes, as the JIT's log says; -1 when it does not */
    char *why;             /* CONFIG_REFUSED: the driver's words, or ours */
    const char **meta_names;  /* its meta-parameters as the grid callback sees them, */
    int64_t *meta_values;     /* built once with the module (the names are the IR's) */
} Config;

struct ph_module {
    IrModule *ir;
    int device;            /* the device it runs on, chosen when it was loaded or first launched */
    unsigned generation;   /* the runtime's, then: after a ph_shutdown its configs are loaded again */
    char *source;          /* the file's path, or the string's name: the .file of line information */
    uint64_t key;          /* of the source text: with a config's name, names its PTX in the disk cache */
    Config *state;         /* per config (IrFunc) */
    int nkernels;
    ph_kernel *kernels;    /* one per kernel, all its configs */
    ph_kernel *configs;    /* one per config (IrFunc), by entry name */
};

/* The parameters cuLaunchKernel takes for f: its entry's, by the kernel ABI (ir/abi.h). */
static int launch_param_count(const IrFunc *f) { return ir_abi_params(f->params, f->nparams, NULL); }

/* Sizes k's launch scratch for its configs and its kernel's parameters,
 * and gives it its autotuner. */
static void kernel_scratch_init(ph_kernel *k)
{
    int n = launch_param_count(k->module->ir->funcs[k->first]);
    k->tuner = ph_internal_tuner_new(&k->module->ir->funcs[k->first], k->count, k->module->key);
    k->eligible = xcalloc((size_t)k->count, sizeof *k->eligible);
    k->grids = xcalloc((size_t)k->count, sizeof *k->grids);
    k->params = xcalloc((size_t)n + 1, sizeof *k->params);
    k->values = xcalloc((size_t)n + 1, sizeof *k->values);
    for (int i = 0; i < n; i++) k->params[i] = &k->values[i];
}

static void kernel_free(ph_kernel *k)
{
    ph_internal_tuner_free(k->tuner);
    free(k->name);
    free(k->eligible);
    free(k->grids);
    free(k->params);
    free(k->values);
}

/* Config c's meta-parameters, as every launch passes them to the grid callback. */
static void config_meta_init(Config *c, const IrFunc *f)
{
    c->meta_names = xcalloc((size_t)f->nmeta + 1, sizeof *c->meta_names);
    c->meta_values = xcalloc((size_t)f->nmeta + 1, sizeof *c->meta_values);
    for (int i = 0; i < f->nmeta; i++) {
        c->meta_names[i] = f->meta[i].name;
        c->meta_values[i] = f->meta[i].value;
    }
}

static ph_status module_from_ir(IrModule *ir, uint64_t key, ph_module **out)
{
    ph_module *m = xcalloc(1, sizeof *m);
    m->ir = ir;
    m->key = key;
    m->kernels = xcalloc((size_t)ir->nfuncs + 1, sizeof *m->kernels);
    for (int i = 0; i < ir->nfuncs; i++) {
        if (i && !strcmp(ir->funcs[i]->kernel, ir->funcs[i - 1]->kernel)) {
            m->kernels[m->nkernels - 1].count++;
            continue;
        }
        ph_kernel *k = &m->kernels[m->nkernels++];
        k->module = m;
        k->name = xstrdup(ir->funcs[i]->kernel);
        k->first = i;
        k->count = 1;
        k->last = -1;
    }
    m->configs = xcalloc((size_t)ir->nfuncs + 1, sizeof *m->configs);
    for (int i = 0; i < ir->nfuncs; i++)
        m->configs[i] = (ph_kernel){.module = m, .name = xstrdup(ir->funcs[i]->name), .first = i, .count = 1, .last = -1};
    m->state = xcalloc((size_t)ir->nfuncs + 1, sizeof *m->state);
    for (int i = 0; i < ir->nfuncs; i++) config_meta_init(&m->state[i], ir->funcs[i]);
    for (int i = 0; i < m->nkernels; i++) kernel_scratch_init(&m->kernels[i]);
    for (int i = 0; i < ir->nfuncs; i++) kernel_scratch_init(&m->configs[i]);
    *out = m;
    return PH_OK;
}

/* ---- the disk cache of PTX ----
 * A config's PTX is kept in a file named by a hash of its module's source
 * text, its entry name, the target, and this build of the library, so a
 * second run of a program skips code generation; a rebuilt library never reads an older one's
 * PTX. The folder is $PHOBOS_CACHE_DIR (empty or "off": no cache), else
 * $XDG_CACHE_HOME/phobos, else ~/.cache/phobos. Any failure to read or
 * write it only means compiling again. */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The library's GNU build id names the build: it changes with any source
 * file, where runtime.c's own compile time would miss a rebuilt compiler. */
static uint64_t source_key(const char *path, const char *source)
{
    const char *build = ph_internal_build_id();
    uint64_t h = fnv1a(0xcbf29ce484222325ull, build, strlen(build));
    if (source) return fnv1a(h, source, strlen(source));
    SrcFile f;
    char err[256];
    if (!path || src_load(&f, path, err, sizeof err)) return 0;
    h = fnv1a(h, f.text, f.len);
    src_free(&f);
    return h ? h : 1;
}

bool ph_internal_cache_folder(char *folder, size_t n)
{
    const char *dir = getenv("PHOBOS_CACHE_DIR"), *sub = "";
    char base[1024];
    if (dir && (!*dir || !strcmp(dir, "off"))) return false;
    if (!dir) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) snprintf(base, sizeof base, "%s", xdg);
        else if (home && *home) snprintf(base, sizeof base, "%s/.cache", home);
        else return false;
        mkdir(base, 0755);
        dir = base;
        sub = "/phobos";
    }
    if ((size_t)snprintf(folder, n, "%s%s", dir, sub) >= n) return false;
    mkdir(folder, 0755);
    return true;
}

static bool cache_path(uint64_t key, const char *arch, char *path, size_t n)
{
    char folder[1100];
    if (!ph_internal_cache_folder(folder, sizeof folder)) return false;
    return key && (size_t)snprintf(path, n, "%s/%016llx-%s.ptx", folder, (unsigned long long)key, arch) < n;
}

static char *cache_read(const char *path)
{
    SrcFile f;
    char err[256];
    if (src_load(&f, path, err, sizeof err)) return NULL;
    char *text = (char *)f.text;
    free((char *)f.path);
    if (f.len < 16 || strncmp(text, "//", 2)) {   /* not PTX as the code generator writes it */
        free(text);
        return NULL;
    }
    return text;
}

static void cache_write(const char *path, const char *ptx)
{
    char tmp[1240];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    bool ok = fputs(ptx, f) >= 0;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) remove(tmp);   /* written whole, or not at all */
}

/* PHOBOS_LINEINFO=1 (any value but empty or 0): configs are compiled with
 * line information, as phc -lineinfo compiles them, for compute-sanitizer
 * and Nsight Compute. Read at each config's compilation. */
static bool lineinfo_asked(void)
{
    const char *v = getenv("PHOBOS_LINEINFO");
    return v && *v && strcmp(v, "0");
}

/* A config's PTX for arch: from the disk cache, or generated (and cached),
 * the time it took added to *times when not NULL. */
static int config_ptx(ph_module *m, int config, const char *arch, char **ptx, bool *from_cache, CodegenTimes *times,
                      char *err, size_t errlen)
{
    IrFunc *f = m->ir->funcs[config];
    bool lineinfo = lineinfo_asked();
    int level = ph_internal_opt_level();
    uint64_t key = m->key ? fnv1a(m->key, f->name, strlen(f->name) + 1) : 0;
    if (key) key = fnv1a(key, &level, sizeof level);   /* each pipeline's PTX is a file of its own */
    /* PTX with line information is another file: it names the source's path,
     * a relative one from the current folder */
    char cwd[4096] = "";
    if (key && lineinfo) {
        if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
        key = fnv1a(fnv1a(fnv1a(key, "lineinfo", 8), m->source, strlen(m->source) + 1), cwd, strlen(cwd) + 1);
    }
    char path[1200];
    bool cached = cache_path(key, arch, path, sizeof path);
    *from_cache = false;
    if (cached && (*ptx = cache_read(path))) {
        *from_cache = true;
        return 0;
    }
    IrModule one = {1, 1, &f};   /* this config alone */
    CodegenOptions o = {.arch = arch, .opt_level = level, .lineinfo = lineinfo, .source = m->source, .times = times};
    if (codegen_emit(&one, &o, CG_EMIT_PTX, ptx, err, errlen)) return 1;
    if (cached) cache_write(path, *ptx);
    return 0;
}

int ph_internal_config_ptx(ph_module *m, int config, const char *arch, char **ptx, bool *from_cache, char *err, size_t errlen)
{
    CodegenTimes times = {0};
    bool timed = ph_internal_time_asked();
    int failed = config_ptx(m, config, arch, ptx, from_cache, timed ? &times : NULL, err, errlen);
    if (timed && !failed && !*from_cache) ph_internal_print_times(m->ir->funcs[config]->name, 1, &times);
    return failed;
}

/* ---- generating a kernel's configs at once ---- */

typedef struct {
    ph_module *m;
    const int *configs;
    const char *arch;
    char **ptx;
    bool *from_cache;
    int *failed;
    char (*err)[PH_CONFIG_ERR_BYTES];
    CodegenTimes *times;   /* per config, when PHOBOS_TIME_COMPILE asks */
    /* when not NULL, run on the same thread on each config's PTX, once it is there */
    void (*then)(void *ctx, int i, const char *ptx);
    void *then_ctx;
} PtxBatch;

static void generate_one(void *batch, int i)
{
    PtxBatch *b = batch;
    b->failed[i] = config_ptx(b->m, b->configs[i], b->arch, &b->ptx[i], &b->from_cache[i], b->times ? &b->times[i] : NULL,
                              b->err[i], sizeof b->err[i]);
    if (b->then && !b->failed[i]) b->then(b->then_ctx, i, b->ptx[i]);
}

static double wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* PHOBOS_TIME_COMPILE's lines for a batch, in the order of its configs
 * (not the order they finished in), then how long the batch took. */
static void print_batch_times(const PtxBatch *b, int n, int threads, double ms)
{
    int generated = 0;
    for (int i = 0; i < n; i++) {
        if (b->failed[i] || b->from_cache[i]) continue;
        ph_internal_print_times(b->m->ir->funcs[b->configs[i]]->name, 1, &b->times[i]);
        generated++;
    }
    threads = threads < n ? threads : n;
    fprintf(stderr, "phobos: time: %d configs generated (%d from the PTX cache) on %d thread%s in %.1f ms\n", generated,
            n - generated, threads, threads == 1 ? "" : "s", ms);
}

/* A batch of n configs, its results cleared, its times kept when
 * PHOBOS_TIME_COMPILE asks. */
static void ptx_batch_begin(PtxBatch *b, int n)
{
    for (int i = 0; i < n; i++) b->ptx[i] = NULL, b->from_cache[i] = false, b->failed[i] = 0, b->err[i][0] = 0;
    b->times = ph_internal_time_asked() ? xcalloc((size_t)n, sizeof *b->times) : NULL;
}

/* The batch done, in ms: PHOBOS_TIME_COMPILE's lines. */
static void ptx_batch_end(PtxBatch *b, int n, int threads, double ms)
{
    if (b->times) print_batch_times(b, n, threads, ms);
    free(b->times);
}

void ph_internal_configs_ptx(ph_module *m, const int *configs, int n, const char *arch, int threads, char **ptx,
                             bool *from_cache, int *failed, char (*err)[PH_CONFIG_ERR_BYTES])
{
    PtxBatch b = {m, configs, arch, ptx, from_cache, failed, err, NULL, NULL, NULL};
    ptx_batch_begin(&b, n);
    double start = wall_ms();
    ph_internal_parallel(n, threads, generate_one, &b);
    ptx_batch_end(&b, n, threads, wall_ms() - start);
}

/* The device m runs on: the calling thread's when m is loaded, or when
 * the runtime was not running then, when m is first launched. A module
 * from before a ph_shutdown lost its loaded configs with the contexts:
 * it takes a device again and they load again. The runtime is ready and
 * the lock held. */
static Device *module_device(ph_module *m)
{
    if (m->generation != rt.generation || !rt.devices[m->device].ready) {
        for (int i = 0; i < m->ir->nfuncs; i++)
            if (m->state[i].state == CONFIG_LOADED) m->state[i].state = CONFIG_UNLOADED;
        m->device = thread_device();
        m->generation = rt.generation;
    }
    return &rt.devices[m->device];
}

static ph_status compile_source(const char *name, const char *source, const char *path, ph_module **out)
{
    if (!out) return fail(PH_ERR_INVALID, "null module pointer");
    *out = NULL;
    char *diags = NULL;
    size_t len = 0;
    FILE *msgs = open_memstream(&diags, &len);
    IrModule *ir = path ? ph_compile_file(path, NULL, msgs) : ph_compile_string(name, source, NULL, msgs);
    fclose(msgs);
    ph_status s = PH_OK;
    if (!ir) {
        bool unreadable = path && strstr(diags, "cannot open");
        s = fail(unreadable ? PH_ERR_NOT_FOUND : PH_ERR_COMPILE, "%s", diags && *diags ? diags : "compilation failed");
    } else {
        s = module_from_ir(ir, source_key(path, source), out);
        (*out)->source = xstrdup(path ? path : name);
        lock_runtime();
        if (rt.ready) module_device(*out);
        unlock_runtime();
    }
    free(diags);
    return s;
}

ph_status ph_module_load_file(const char *path, ph_module **out)
{
    if (!path) return fail(PH_ERR_INVALID, "null path");
    return compile_source(NULL, NULL, path, out);
}

ph_status ph_module_load_string(const char *name, const char *source, ph_module **out)
{
    if (!source) return fail(PH_ERR_INVALID, "null source");
    return compile_source(name ? name : "<string>", source, NULL, out);
}

void ph_module_free(ph_module *m)
{
    if (!m) return;
    int nconfigs = m->ir->nfuncs;
    lock_runtime();
    /* configs loaded before a ph_shutdown went with their context */
    const Device *d = &rt.devices[m->device];
    CUcontext saved = NULL;
    bool live = rt.ready && !rt.interp && m->generation == rt.generation && !enter_context(d, &saved);
    for (int i = 0; live && i < nconfigs; i++)
        if (m->state[i].state == CONFIG_LOADED) cu.ModuleUnload(m->state[i].mod);
    if (live) leave_context(d, saved);
    unlock_runtime();
    for (int i = 0; i < nconfigs; i++) {
        free(m->state[i].why);
        free(m->state[i].meta_names);
        free(m->state[i].meta_values);
    }
    for (int i = 0; i < m->nkernels; i++) kernel_free(&m->kernels[i]);
    for (int i = 0; i < nconfigs; i++) kernel_free(&m->configs[i]);
    free(m->state);
    free(m->kernels);
    free(m->configs);
    ir_module_free(m->ir);
    free(m->source);
    free(m);
}

ph_status ph_kernel_get(ph_module *m, const char *name, ph_kernel **out)
{
    if (!m || !name || !out) return fail(PH_ERR_INVALID, "null argument to ph_kernel_get");
    for (int i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].name, name)) { *out = &m->kernels[i]; return PH_OK; }
    /* an entry name picks one config, with no autotuning */
    for (int i = 0; i < m->ir->nfuncs; i++)
        if (!strcmp(m->configs[i].name, name)) { *out = &m->configs[i]; return PH_OK; }
    return fail(PH_ERR_NOT_FOUND, "no kernel named '%s' in this module", name);
}

int ph_kernel_param_count(const ph_kernel *k)
{
    return k ? k->module->ir->funcs[k->first]->nparams : -1;
}

ph_status ph_kernel_param(const ph_kernel *k, int i, ph_param *out)
{
    if (!k || !out) return fail(PH_ERR_INVALID, "null argument to ph_kernel_param");
    const IrFunc *f = k->module->ir->funcs[k->first];
    if (i < 0 || i >= f->nparams) return fail(PH_ERR_INVALID, "%s has no parameter %d (it has %d)", k->name, i, f->nparams);
    const IrParam *p = &f->params[i];
    *out = (ph_param){p->name, p->is_tensor ? PH_ARG_TENSOR : p->dt == DT_I32 ? PH_ARG_I32 : PH_ARG_F32,
                      ir_dtype_name(p->dt), p->is_tensor ? p->rank : 0, {NULL, NULL}, {0, 0}};
    for (int a = 0; a < out->rank; a++) {
        out->dim_names[a] = p->dim_name[a];
        out->dim_values[a] = p->dim_name[a] ? 0 : p->dim_value[a];
    }
    return PH_OK;
}

/* Config c leaves its kernel's eligible set for good, for this reason. */
static ph_status leave_eligible_set(ph_module *m, int c, const char *why)
{
    m->state[c].state = CONFIG_REFUSED;
    m->state[c].why = xstrdup(why);
    return fail(PH_ERR_MODULE, "%s", why);
}

/* The driver refused config c, in these words. */
static ph_status refuse(ph_module *m, int c, CUresult r, const char *log)
{
    size_t n = strlen(log);
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ')) n--;   /* the JIT log ends with a newline */
    char why[1024];
    snprintf(why, sizeof why, "the CUDA driver refused %s (error %d): %.*s", m->ir->funcs[c]->name, r,
             (int)n, n ? log : "no log");
    return leave_eligible_set(m, c, why);
}

/* A config over 48 KB of shared memory takes it dynamically (codegen.h):
 * more than the device lets a block opt in to is refused before the
 * driver sees it; otherwise the function is allowed that much. */
static ph_status allow_dynamic_shared(ph_module *m, int c, int64_t bytes)
{
    Config *st = &m->state[c];
    CUresult r = cu.FuncSetAttribute(st->fn, FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
    if (r) {
        const char *msg = NULL;
        cu.GetErrorString(r, &msg);
        cu.ModuleUnload(st->mod);
        char why[512];
        snprintf(why, sizeof why, "the CUDA driver refused %s %lld bytes of dynamic shared memory (error %d): %s",
                 m->ir->funcs[c]->name, (long long)bytes, r, msg ? msg : "unknown");
        return leave_eligible_set(m, c, why);
    }
    st->shared_bytes = (unsigned)bytes;
    return PH_OK;
}

/* ---- what a config uses ---- */

/* PHOBOS_STATS=1 (any value but empty or 0): a line on stderr per config loaded. */
static bool stats_asked(void)
{
    const char *v = getenv("PHOBOS_STATS");
    return v && *v && strcmp(v, "0");
}

/* Loaded config c's figures, from the driver (cuFuncGetAttribute). */
static ph_status config_stats(ph_module *m, int c, ph_stats *out)
{
    const Config *st = &m->state[c];
    const IrFunc *f = m->ir->funcs[c];
    *out = (ph_stats){.config = f->name, .threads = f->threads, .spill_store_bytes = st->spill_stores,
                      .spill_load_bytes = st->spill_loads, .dynamic_shared_bytes = (int)st->shared_bytes};
    CUresult r;
    if ((r = cu.FuncGetAttribute(&out->registers, FUNC_ATTR_NUM_REGS, st->fn)) ||
        (r = cu.FuncGetAttribute(&out->local_bytes, FUNC_ATTR_LOCAL_SIZE_BYTES, st->fn)) ||
        (r = cu.FuncGetAttribute(&out->static_shared_bytes, FUNC_ATTR_SHARED_SIZE_BYTES, st->fn)) ||
        (r = cu.FuncGetAttribute(&out->max_threads_per_block, FUNC_ATTR_MAX_THREADS_PER_BLOCK, st->fn)))
        return cu_fail(r, "cuFuncGetAttribute");
    return PH_OK;
}

/* PHOBOS_STATS's line for config c, just loaded. */
static void print_stats(ph_module *m, int c)
{
    ph_stats s;
    if (config_stats(m, c, &s)) {
        fprintf(stderr, "phobos: %s: %s\n", m->ir->funcs[c]->name, last_error);
        return;
    }
    char spills[96] = "spills not reported";
    if (s.spill_store_bytes >= 0)
        snprintf(spills, sizeof spills, "%d bytes spill stores, %d bytes spill loads", s.spill_store_bytes, s.spill_load_bytes);
    fprintf(stderr, "phobos: %s: %d registers, %s, %d bytes local memory, %d bytes static shared, %d bytes dynamic shared, "
                    "%d threads (at most %d)\n", s.config, s.registers, spills, s.local_bytes, s.static_shared_bytes,
            s.dynamic_shared_bytes, s.threads, s.max_threads_per_block);
}

/* What the driver's JIT made of one config's PTX. */
typedef struct {
    bool done;           /* jit_ptx ran */
    int64_t shared;      /* the dynamic shared memory the PTX asks for */
    bool too_big;        /* more than a block of the device may have: not given to the driver */
    CUresult r;          /* the driver's answer; mod is the module when 0 */
    CUmodule mod;
    char info[8192], elog[8192];   /* its logs; the verbose info log is ptxas -v's report (spills) */
} Jit;

/* The ptxas the runtime assembles with: PHOBOS_PTXAS names it, or is 0
 * (or off) for none; else the one phc finds ($PTXAS, $CUDA_HOME/bin,
 * PATH). None: the driver's JIT assembles. */
static bool runtime_ptxas(char *path, size_t n)
{
    const char *v = getenv("PHOBOS_PTXAS");
    if (v && (!strcmp(v, "0") || !strcmp(v, "off"))) return false;
    if (v && *v) return (size_t)snprintf(path, n, "%s", v) < n && !access(path, X_OK);
    return ptxas_find(path, n);
}

/* A cubin's place in the disk cache: named for the PTX it was made from,
 * the target, line information, and the ptxas that made it (its path,
 * size and time), so another ptxas makes its own. false: no cache. */
static bool cubin_path(const char *ptxas, const char *arch, const char *ptx, bool lineinfo, char *path, size_t n)
{
    struct stat st;
    char folder[1100];
    if (!ph_internal_cache_folder(folder, sizeof folder) || stat(ptxas, &st)) return false;
    uint64_t key = fnv1a(0xcbf29ce484222325ull, ptx, strlen(ptx));
    long long id[3] = {(long long)st.st_size, (long long)st.st_mtime, lineinfo};
    key = fnv1a(fnv1a(key, ptxas, strlen(ptxas)), id, sizeof id);
    return (size_t)snprintf(path, n, "%s/%016llx-%s.cubin", folder, (unsigned long long)key, arch) < n;
}

/* A cached cubin (an ELF file), or NULL. */
static void *cubin_read(const char *path, size_t *bytes)
{
    SrcFile f;
    char err[256];
    if (src_load(&f, path, err, sizeof err)) return NULL;
    free((char *)f.path);
    if (f.len < 4 || memcmp(f.text, "\177ELF", 4)) {
        free((char *)f.text);
        return NULL;
    }
    *bytes = f.len;
    return (void *)f.text;
}

static void cubin_write(const char *path, const void *cubin, size_t bytes)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.%ld.%p.tmp", path, (long)getpid(), (void *)&tmp);   /* this thread's */
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    bool ok = fwrite(cubin, 1, bytes, f) == bytes;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) remove(tmp);   /* written whole, or not at all */
}

/* Assembles ptx with ptxas (or takes the cubin it made before from the
 * disk cache) and loads the cubin: true when j->mod is loaded. Where
 * there is no ptxas, it fails, or the driver takes no cubin of it, the
 * caller gives the driver the PTX. ptxas runs as a process of its own, so
 * threads assemble at once where the driver's JIT would take one config
 * after another. */
static bool load_cubin(const Device *d, const char *ptx, Jit *j)
{
    char ptxas[4096], path[1200];
    if (!runtime_ptxas(ptxas, sizeof ptxas)) return false;
    bool lineinfo = lineinfo_asked(), cached = cubin_path(ptxas, d->arch, ptx, lineinfo, path, sizeof path);
    size_t bytes = 0;
    void *cubin = cached ? cubin_read(path, &bytes) : NULL;
    if (!cubin) {
        PtxasRun r;
        if (!ptxas_run(ptxas, d->arch, ptx, PTXAS_VERBOSE | (lineinfo ? PTXAS_LINEINFO : 0), &r) && r.cubin) {
            snprintf(j->info, sizeof j->info, "%s", r.log);   /* the report of -v, for the spills */
            cubin = r.cubin, bytes = r.cubin_bytes, r.cubin = NULL;
            if (cached) cubin_write(path, cubin, bytes);
        }
        ptxas_run_free(&r);
        if (!cubin) return false;
    }
    int opts[4] = {JIT_ERROR_LOG, JIT_ERROR_LOG_SIZE};
    void *vals[4] = {j->elog, (void *)(uintptr_t)sizeof j->elog};
    j->r = cu.ModuleLoadDataEx(&j->mod, cubin, 2, opts, vals);
    free(cubin);
    if (j->r) j->info[0] = j->elog[0] = 0;
    return !j->r;
}

/* Loads the PTX of entry `name` in d's context: a cubin from ptxas when
 * there is one (load_cubin), else through the driver's JIT. It touches no
 * state of the runtime's, so several threads may assemble configs at
 * once; the calling thread's context is as it was after. */
static void jit_ptx(const Device *d, const char *name, const char *ptx, Jit *j)
{
    j->done = true;
    j->shared = codegen_dynamic_shared_bytes(ptx, name);
    j->too_big = j->shared > d->max_shared;
    if (j->too_big) return;
    CUcontext saved = NULL;
    if ((j->r = cu.CtxGetCurrent(&saved)) || (saved != d->ctx && (j->r = cu.CtxSetCurrent(d->ctx)))) {
        snprintf(j->elog, sizeof j->elog, "cuCtxSetCurrent failed");
        return;
    }
    if (!load_cubin(d, ptx, j)) {
        int opts[6] = {JIT_INFO_LOG, JIT_INFO_LOG_SIZE, JIT_ERROR_LOG, JIT_ERROR_LOG_SIZE, JIT_LOG_VERBOSE, JIT_GENERATE_LINE_INFO};
        void *vals[6] = {j->info, (void *)(uintptr_t)sizeof j->info, j->elog, (void *)(uintptr_t)sizeof j->elog,
                         (void *)(uintptr_t)1, (void *)(uintptr_t)1};
        j->r = cu.ModuleLoadDataEx(&j->mod, ptx, lineinfo_asked() ? 6 : 5, opts, vals);
    }
    if (saved != d->ctx) cu.CtxSetCurrent(saved);
}

/* Config c (not loaded yet) takes what the JIT made of its PTX: loaded,
 * or, where the PTX asks for too much shared memory or the driver
 * refused it, out of the eligible set (PH_ERR_MODULE). */
static ph_status config_take_jit(ph_module *m, int c, const Jit *j)
{
    Config *st = &m->state[c];
    const Device *d = &rt.devices[m->device];
    if (j->too_big) {
        char why[512];
        snprintf(why, sizeof why, "%s is refused: it needs %lld bytes of shared memory, more than the %d a block of this device may have",
                 m->ir->funcs[c]->name, (long long)j->shared, d->max_shared);
        return leave_eligible_set(m, c, why);
    }
    if (j->r) return refuse(m, c, j->r, j->elog);
    CUresult r;
    st->mod = j->mod;
    if ((r = cu.ModuleGetFunction(&st->fn, st->mod, m->ir->funcs[c]->name))) {
        cu.ModuleUnload(st->mod);
        return cu_fail(r, "cuModuleGetFunction");
    }
    if (j->shared) {
        ph_status s = allow_dynamic_shared(m, c, j->shared);
        if (s) return s;
    }
    PtxasReport report;
    bool reported = ptxas_report_of(j->info, m->ir->funcs[c]->name, &report);
    st->spill_stores = reported ? (int)report.spill_stores : -1;
    st->spill_loads = reported ? (int)report.spill_loads : -1;
    st->state = CONFIG_LOADED;
    if (stats_asked()) print_stats(m, c);
    return PH_OK;
}

/* Config c (not loaded yet) goes to the driver on its own, as ptx (which
 * this frees). PH_ERR_MODULE: the driver refused it. */
static ph_status config_load_ptx(ph_module *m, int c, char *ptx)
{
    Jit *j = xcalloc(1, sizeof *j);
    jit_ptx(&rt.devices[m->device], m->ir->funcs[c]->name, ptx, j);
    free(ptx);
    ph_status s = config_take_jit(m, c, j);
    free(j);
    return s;
}

/* Config c's PTX goes to the driver on its own, the first time a launch
 * needs it. PH_ERR_MODULE: the driver refused it (now or before). */
static ph_status config_load(ph_module *m, int c)
{
    Config *st = &m->state[c];
    if (st->state == CONFIG_LOADED) return PH_OK;
    if (st->state == CONFIG_REFUSED) return fail(PH_ERR_MODULE, "%s", st->why);
    char *ptx = NULL, err[PH_CONFIG_ERR_BYTES];
    bool from_cache;
    if (ph_internal_config_ptx(m, c, rt.devices[m->device].arch, &ptx, &from_cache, err, sizeof err))
        return fail(PH_ERR_COMPILE, "code generation failed: %s", err);
    return config_load_ptx(m, c, ptx);
}

/* k could load none of its eligible configs: PH_ERR_MODULE with each
 * one's reason, as it was kept when the config left the eligible set. */
static ph_status none_loaded(const ph_kernel *k, const int *eligible, int ne)
{
    fail(PH_ERR_MODULE, "%s: no eligible config could be loaded: ", k->name);
    size_t len = strlen(last_error);
    for (int i = 0; i < ne && len + 1 < sizeof last_error; i++) {
        const char *why = k->module->state[k->first + eligible[i]].why;
        int n = snprintf(last_error + len, sizeof last_error - len, "%s%s", i ? "; " : "", why ? why : "refused");
        len += n > 0 ? (size_t)n : 0;
    }
    return PH_ERR_MODULE;
}

/* A batch's configs assembled where they are generated. */
typedef struct {
    const Device *device;
    const ph_module *m;
    const int *configs;
    Jit *jit;
} JitBatch;

static void jit_generated(void *batch, int i, const char *ptx)
{
    JitBatch *b = batch;
    jit_ptx(b->device, b->m->ir->funcs[b->configs[i]]->name, ptx, &b->jit[i]);
}

/* How many of the eligible configs are not loaded yet. */
static int unloaded(const ph_kernel *k, const int *eligible, int ne)
{
    int n = 0;
    for (int i = 0; i < ne; i++) n += k->module->state[k->first + eligible[i]].state == CONFIG_UNLOADED;
    return n;
}

/* A launch's eligible configs that are not loaded yet, generated at once
 * on threads of their own (as many as ph_internal_compile_threads says),
 * each given to the driver on the thread that generated it, so ptxas or
 * the driver assembles them at once too. The threads touch no state of
 * the runtime's; the launching thread keeps the lock and takes each
 * config once its thread is done with it, in the order they finish. */
typedef struct {
    ph_kernel *k;
    const int *eligible;
    int ne;
    int looked_at;      /* eligible[] seen up to here for configs loaded before, which come first */
    int n;              /* the configs generated: */
    int *todo, *at;     /* each one's config (of the module's) and its index into eligible[] */
    char **text;
    bool *from_cache;
    int *failed;
    char (*err)[PH_CONFIG_ERR_BYTES];
    Jit *jit;
    PtxBatch batch;
    JitBatch jits;
    PhParallel *loop;
    int threads;
    double start, last;   /* when the batch began, and when its last config so far was done */
    bool given;           /* the autotuner was given a config */
    int second, alone;    /* the second loaded, not given yet; the only one loaded; -1: none */
} Arrivals;

static void arrivals_start(Arrivals *a, ph_kernel *k, const int *eligible, int ne)
{
    ph_module *m = k->module;
    const Device *d = &rt.devices[m->device];
    *a = (Arrivals){.k = k, .eligible = eligible, .ne = ne, .n = unloaded(k, eligible, ne), .second = -1, .alone = -1};
    size_t n = (size_t)a->n;
    a->todo = xcalloc(n, sizeof *a->todo), a->at = xcalloc(n, sizeof *a->at);
    for (int i = 0, j = 0; i < ne; i++)
        if (m->state[k->first + eligible[i]].state == CONFIG_UNLOADED) a->at[j] = i, a->todo[j++] = k->first + eligible[i];
    a->text = xcalloc(n, sizeof *a->text), a->err = xcalloc(n, sizeof *a->err);
    a->from_cache = xcalloc(n, sizeof *a->from_cache), a->failed = xcalloc(n, sizeof *a->failed);
    a->jit = xcalloc(n, sizeof *a->jit);
    a->jits = (JitBatch){d, m, a->todo, a->jit};
    a->batch = (PtxBatch){m, a->todo, d->arch, a->text, a->from_cache, a->failed, a->err, NULL, jit_generated, &a->jits};
    ptx_batch_begin(&a->batch, a->n);
    a->threads = ph_internal_compile_threads();
    a->start = a->last = wall_ms();
    a->loop = ph_internal_parallel_start(a->n, a->threads, generate_one, &a->batch);
}

/* The next config a thread is done with (its index into todo[]), once it
 * is; -1 when every one was taken. */
static int arrival(Arrivals *a)
{
    int j = ph_internal_parallel_next(a->loop);
    if (j >= 0) a->last = wall_ms();
    return j;
}

/* The next config loaded (its index into eligible[], -1 when none is
 * left): those loaded before, then each as its thread is done with it,
 * taken as a config loaded alone is (one the driver refuses leaves the
 * eligible set, and is skipped). A failure to generate ends the tuning. */
static ph_status next_loaded(Arrivals *a, int *i)
{
    ph_module *m = a->k->module;
    while (a->looked_at < a->ne) {
        int e = a->looked_at++;
        if (m->state[a->k->first + a->eligible[e]].state == CONFIG_LOADED) {
            *i = e;
            return PH_OK;
        }
    }
    for (int j; (j = arrival(a)) >= 0;) {
        if (a->failed[j]) return fail(PH_ERR_COMPILE, "code generation failed: %s", a->err[j]);
        ph_status s = config_take_jit(m, a->todo[j], &a->jit[j]);
        if (s == PH_ERR_MODULE) continue;   /* for good, its reason kept */
        if (s) return s;
        *i = a->at[j];
        return PH_OK;
    }
    *i = -1;
    return PH_OK;
}

/* The autotuner's next config (a PhNextConfig), as next_loaded gives
 * them, but the first only once a second is loaded too: a config that
 * turns out to be the only one the driver accepts runs untimed (*alone),
 * as it would have had the refusals been known before. */
static ph_status next_arrival(void *arrivals, int *i)
{
    Arrivals *a = arrivals;
    ph_status s;
    if (a->given && a->second >= 0) {
        *i = a->second;
        a->second = -1;
        return PH_OK;
    }
    if (a->given) return next_loaded(a, i);
    if ((s = next_loaded(a, i)) || *i < 0 || (s = next_loaded(a, &a->second))) return s;
    if (a->second < 0) {
        a->alone = *i;
        *i = -1;
    }
    a->given = *i >= 0;
    return PH_OK;
}

/* Waits for the threads, after a tuning that returned s; the modules
 * assembled for configs it did not take (it failed) are unloaded. On a
 * failure to generate, the first in eligible order says why, whichever
 * finished first. */
static ph_status arrivals_end(Arrivals *a, ph_status s)
{
    for (int j; (j = arrival(a)) >= 0;)
        if (a->jit[j].done && !a->jit[j].r && !a->jit[j].too_big) cu.ModuleUnload(a->jit[j].mod);
    ph_internal_parallel_end(a->loop);
    ptx_batch_end(&a->batch, a->n, a->threads, a->last - a->start);
    for (int j = 0; s == PH_ERR_COMPILE && j < a->n; j++)
        if (a->failed[j]) {
            s = fail(PH_ERR_COMPILE, "code generation failed: %s", a->err[j]);
            break;
        }
    for (int j = 0; j < a->n; j++) free(a->text[j]);
    free(a->todo), free(a->at), free(a->text), free(a->err), free(a->from_cache), free(a->failed), free(a->jit);
    return s;
}

/* A launch's first tuning, for eligible configs of which several are not
 * loaded yet: they are generated and assembled at once while the
 * autotuner times each one as soon as it is loaded (those loaded before
 * first), so the tuning ends about when the slowest config is in rather
 * than the time of all the timing later. The winner (or the only config
 * the driver accepted) is then eligible[0], alone, as load_only leaves
 * it; the configs the driver refused left the eligible set; none loaded
 * is PH_ERR_MODULE with every reason. */
static ph_status tune_as_loaded(ph_kernel *k, int *eligible, unsigned (*grids)[3], int *ne, const ph_arg *args, int nargs)
{
    Arrivals a;
    arrivals_start(&a, k, eligible, *ne);
    int pick = -1;
    ph_status s = ph_internal_autotune_as_ready(k->tuner, k, eligible, grids, *ne, args, nargs, next_arrival, &a, &pick);
    s = arrivals_end(&a, s);
    if (s) return s;
    if (pick < 0) pick = a.alone;
    if (pick < 0) return none_loaded(k, eligible, *ne);
    eligible[0] = eligible[pick];
    memcpy(grids[0], grids[pick], sizeof *grids);
    *ne = 1;
    return PH_OK;
}

/* Loads the eligible configs of k (indices into its configs, with their
 * grids), at most one of them not loaded yet (generated where it loads),
 * and drops those the driver refuses; none left is PH_ERR_MODULE with
 * every reason. */
static ph_status load_eligible(ph_kernel *k, int *eligible, unsigned (*grids)[3], int *ne)
{
    int kept = 0;
    for (int i = 0; i < *ne; i++) {
        int c = k->first + eligible[i];
        if (k->module->state[c].state == CONFIG_REFUSED) continue;   /* for good, its reason kept */
        ph_status s = config_load(k->module, c);
        if (s == PH_ERR_MODULE) continue;
        if (s) return s;
        eligible[kept] = eligible[i];
        memcpy(grids[kept++], grids[i], sizeof *grids);
    }
    /* with none kept, nothing was moved: eligible[] still names every refused config */
    if (!kept) return none_loaded(k, eligible, *ne);
    *ne = kept;
    return PH_OK;
}

/* Keeps eligible[i] alone, loaded, when it loads: true. */
static bool load_only(ph_kernel *k, int *eligible, unsigned (*grids)[3], int *ne, int i, ph_status *s)
{
    *s = config_load(k->module, k->first + eligible[i]);
    if (*s) return false;
    eligible[0] = eligible[i];
    memcpy(grids[0], grids[i], sizeof *grids);
    *ne = 1;
    return true;
}

/* Loads what the launch needs of its eligible configs: the one the
 * autotuner already knows for these arguments, or with autotuning off the
 * first that loads, alone; else every one, to be timed, and when several
 * are not loaded yet, timed as they load (tune_as_loaded: the winner is
 * then the one left). A config the driver refuses leaves the eligible
 * set, as in load_eligible. */
static ph_status load_needed(ph_kernel *k, int *eligible, unsigned (*grids)[3], int *ne, const ph_arg *args, int nargs)
{
    int pick = 0;
    ph_status s = PH_OK;
    if (*ne > 1 && !ph_internal_autotune_enabled()) {
        for (int i = 0; i < *ne; i++)
            if (load_only(k, eligible, grids, ne, i, &s) || s != PH_ERR_MODULE) return s;
        return none_loaded(k, eligible, *ne);
    }
    if (*ne > 1 && ph_internal_autotune_known(k->tuner, k, eligible, *ne, args, nargs, &pick) &&
        (load_only(k, eligible, grids, ne, pick, &s) || s != PH_ERR_MODULE))
        return s;
    if (unloaded(k, eligible, *ne) > 1) return tune_as_loaded(k, eligible, grids, ne, args, nargs);
    return load_eligible(k, eligible, grids, ne);
}

/* ---- launching ---- */

int64_t ph_meta_get(const ph_meta *meta, const char *name, int64_t dflt)
{
    for (int i = 0; meta && i < meta->n; i++)
        if (!strcmp(meta->names[i], name)) return meta->values[i];
    return dflt;
}

static const char *arg_kind_name(ph_arg_kind k)
{
    return k == PH_ARG_TENSOR ? "a tensor" : k == PH_ARG_I32 ? "an i32" : k == PH_ARG_F32 ? "an f32" : "an unknown kind";
}

/* The name of a tensor argument's dtype, or NULL for a value outside the enum. */
static const char *arg_dtype_name(ph_dtype t)
{
    static const char *const names[] = {[PH_F16] = "f16", [PH_BF16] = "bf16", [PH_F32] = "f32", [PH_I32] = "i32"};
    return t > PH_DTYPE_UNCHECKED && (unsigned)t < sizeof names / sizeof *names ? names[t] : NULL;
}

/* A tensor argument's dtype against its parameter's: unchecked agrees. */
static ph_status check_dtype(const IrFunc *f, const IrParam *p, ph_dtype t)
{
    if (t == PH_DTYPE_UNCHECKED) return PH_OK;
    const char *got = arg_dtype_name(t);
    if (!got) return fail(PH_ERR_ARGS, "%s: parameter %s: unknown dtype %d", f->kernel, p->name, (int)t);
    if (strcmp(got, ir_dtype_name(p->dt)))
        return fail(PH_ERR_ARGS, "%s: parameter %s: expected %s, got %s", f->kernel, p->name, ir_dtype_name(p->dt), got);
    return PH_OK;
}

/* Whether strides lay dims out row-major and contiguous, as torch's
 * is_contiguous() says: a dim of size 1 may have any stride. */
static bool row_major_contiguous(const int64_t *dims, const int64_t *strides, int rank)
{
    int64_t expected = 1;
    for (int a = rank - 1; a >= 0; a--) {
        if (dims[a] != 1 && strides[a] != expected) return false;
        expected *= dims[a];
    }
    return true;
}

/* The kernel reads a tensor as row-major contiguous (the language says a
 * tensor parameter is): strides that say otherwise are refused; none
 * given ({0, 0}) say nothing. */
static ph_status check_strides(const IrFunc *f, const IrParam *p, const ph_arg *a)
{
    if ((!a->strides[0] && !a->strides[1]) || row_major_contiguous(a->dims, a->strides, p->rank)) return PH_OK;
    if (p->rank == 1)
        return fail(PH_ERR_ARGS, "%s: parameter %s: strides (%lld) are not row-major contiguous for dims (%lld)", f->kernel,
                    p->name, (long long)a->strides[0], (long long)a->dims[0]);
    return fail(PH_ERR_ARGS, "%s: parameter %s: strides (%lld, %lld) are not row-major contiguous for dims (%lld, %lld)",
                f->kernel, p->name, (long long)a->strides[0], (long long)a->strides[1], (long long)a->dims[0],
                (long long)a->dims[1]);
}

/* Checks what every config shares: count, kinds, non-null pointers,
 * dtypes, dims that must agree between tensors, literal dims, strides. */
static ph_status check_args(const IrFunc *f, const ph_arg *args, int nargs)
{
    if (nargs != f->nparams)
        return fail(PH_ERR_ARGS, "%s takes %d arguments, got %d", f->kernel, f->nparams, nargs);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        ph_arg_kind want = p->is_tensor ? PH_ARG_TENSOR : p->dt == DT_I32 ? PH_ARG_I32 : PH_ARG_F32;
        if (args[i].kind != want)
            return fail(PH_ERR_ARGS, "%s: argument %d (%s) must be %s, got %s", f->kernel, i + 1, p->name,
                        arg_kind_name(want), arg_kind_name(args[i].kind));
        if (!p->is_tensor) continue;
        if (!args[i].ptr) return fail(PH_ERR_ARGS, "%s: tensor %s is a null pointer", f->kernel, p->name);
        ph_status s = check_dtype(f, p, args[i].dtype);
        if (s) return s;
        for (int a = 0; a < p->rank; a++) {
            int64_t d = args[i].dims[a];
            if (d < 1 || d > INT32_MAX)
                return fail(PH_ERR_ARGS, "%s: tensor %s has dim %d = %lld (must be 1 .. 2^31-1)", f->kernel, p->name, a, (long long)d);
            if (!p->dim_name[a] && d != p->dim_value[a])
                return fail(PH_ERR_ARGS, "%s: tensor %s's dim %d must be %lld, got %lld", f->kernel, p->name, a,
                            (long long)p->dim_value[a], (long long)d);
            for (int j = 0; j < i && p->dim_name[a]; j++) {
                const IrParam *q = &f->params[j];
                for (int b = 0; q->is_tensor && b < q->rank; b++)
                    if (q->dim_name[b] && !strcmp(q->dim_name[b], p->dim_name[a]) && args[j].dims[b] != d)
                        return fail(PH_ERR_ARGS, "%s: dim %s is %lld in %s but %lld in %s", f->kernel, p->dim_name[a],
                                    (long long)args[j].dims[b], q->name, (long long)d, p->name);
            }
        }
        if ((s = check_strides(f, p, &args[i]))) return s;
    }
    return PH_OK;
}

static int64_t dim_value(const IrFunc *f, const ph_arg *args, const char *dim)
{
    for (int i = 0; i < f->nparams; i++)
        for (int a = 0; f->params[i].is_tensor && a < f->params[i].rank; a++)
            if (f->params[i].dim_name[a] && !strcmp(f->params[i].dim_name[a], dim)) return args[i].dims[a];
    return -1;
}

/* Why config f cannot take these arguments, or NULL when it can. */
static const char *ineligible(const IrFunc *f, const ph_arg *args, char *why, size_t n)
{
    for (int i = 0; i < f->nmeta; i++) {
        int64_t d = dim_value(f, args, f->meta[i].name);
        if (d >= 0 && d != f->meta[i].value) {
            snprintf(why, n, "%s needs %s = %lld, got %lld", f->name, f->meta[i].name, (long long)f->meta[i].value, (long long)d);
            return why;
        }
    }
    for (int i = 0; i < f->naligned; i++) {
        int64_t d = dim_value(f, args, f->aligned[i].dim);
        if (d >= 0 && f->aligned[i].value > 0 && d % f->aligned[i].value) {
            snprintf(why, n, "%s promises %s %% %s == 0, but %s = %lld is not a multiple of %lld", f->name, f->aligned[i].dim,
                     f->aligned[i].meta, f->aligned[i].dim, (long long)d, (long long)f->aligned[i].value);
            return why;
        }
    }
    return NULL;
}

/* One launch parameter of kernel ABI slot `slot` (ir/abi.h) from argument a of parameter p. */
static void pack_slot(uint64_t *to, IrAbiSlot slot, const IrParam *p, const ph_arg *a)
{
    int64_t d1 = p->rank == 2 ? a->dims[1] : 1;
    switch (slot) {
    case IR_ABI_TENSOR_ADDRESS: *to = a->ptr; break;
    case IR_ABI_TENSOR_DIM0: memcpy(to, &a->dims[0], 8); break;
    case IR_ABI_TENSOR_DIM1: memcpy(to, &d1, 8); break;
    case IR_ABI_SCALAR: memcpy(to, p->dt == DT_I32 ? (const void *)&a->i32 : (const void *)&a->f32, 4); break;
    }
}

/* Writes args into k's launch parameters, as the kernel ABI passes them. */
static void pack_args(ph_kernel *k, const IrFunc *f, const ph_arg *args)
{
    for (int i = 0, n = 0; i < f->nparams; i++) {
        IrAbiSlot slots[IR_ABI_MAX_SLOTS];
        for (int s = 0, ns = ir_abi_slots(&f->params[i], slots); s < ns; s++)
            pack_slot(&k->values[n++], slots[s], &f->params[i], &args[i]);
    }
}

/* Config f's grid, from the callback, within device d's limits (NULL: none known). */
static ph_status grid_for(const IrFunc *f, const Config *c, const Device *d, ph_grid_fn grid, void *user, unsigned g[3])
{
    ph_meta meta = {f->nmeta, c->meta_names, c->meta_values};
    g[0] = g[1] = g[2] = 1;
    grid(&meta, user, g);
    for (int i = 0; i < 3; i++)
        if (g[i] == 0 || (d && g[i] > (unsigned)d->max_grid[i]))
            return fail(PH_ERR_GRID, "%s: grid %u x %u x %u is empty or over the device's limits (%d x %d x %d)", f->name,
                        g[0], g[1], g[2], d ? d->max_grid[0] : 0, d ? d->max_grid[1] : 0, d ? d->max_grid[2] : 0);
    return PH_OK;
}

static ph_status launch_one(ph_kernel *k, int cfg, const unsigned g[3], const ph_arg *args)
{
    const IrFunc *f = k->module->ir->funcs[k->first + cfg];
    const Config *st = &k->module->state[k->first + cfg];
    pack_args(k, f, args);
    CUresult r = cu.LaunchKernel(st->fn, g[0], g[1], g[2], (unsigned)f->threads, 1, 1, st->shared_bytes, k->stream, k->params, NULL);
    return r ? cu_fail(r, "cuLaunchKernel") : PH_OK;
}

/* The interpreter runs the first eligible config (it times nothing) on
 * the arguments as they are: their pointers are host memory. */
static ph_status interp_launch(ph_kernel *k, int cfg, const unsigned g[3], const ph_arg *args, int nargs)
{
    const IrFunc *f = k->module->ir->funcs[k->first + cfg];
    IrArg *iargs = xcalloc((size_t)nargs + 1, sizeof *iargs);
    for (int i = 0; i < nargs; i++)
        iargs[i] = (IrArg){(void *)(uintptr_t)args[i].ptr, {args[i].dims[0], args[i].dims[1]}, args[i].i32, args[i].f32};
    int grid[3] = {(int)g[0], (int)g[1], (int)g[2]};
    char err[1024] = "";
    int r = ir_interp(f, iargs, nargs, grid, err, sizeof err);
    free(iargs);
    k->last = cfg;
    return r ? fail(PH_ERR_ARGS, "%s: %s", f->name, err) : PH_OK;
}

CUdevice ph_internal_device(const ph_kernel *k) { return rt.devices[k->module->device].dev; }
const char *ph_internal_device_name(const ph_kernel *k) { return rt.devices[k->module->device].name; }
CUstream ph_internal_stream(const ph_kernel *k) { return k->stream; }

ph_status ph_internal_launch(ph_kernel *k, int config, const unsigned g[3], const ph_arg *args)
{
    return launch_one(k, config, g, args);
}

PhTuner *ph_internal_tuner(const ph_kernel *k) { return k->tuner; }

/* Launches one of the eligible configs (ne > 0), the autotuner's pick
 * when there are several. */
static ph_status launch_eligible(ph_kernel *k, const int *eligible, unsigned (*grids)[3], int ne, const ph_arg *args, int nargs)
{
    int pick = 0;   /* index into eligible[] and grids[] */
    if (ne > 1) {
        ph_status s = ph_internal_autotune(k->tuner, k, eligible, grids, ne, args, nargs, &pick);
        if (s) return s;
    }
    k->last = eligible[pick];
    return launch_one(k, eligible[pick], grids[pick], args);
}

/* A launch, the lock held: the module's device's context is made current
 * for the loads, the timed runs and the launch itself. */
static ph_status launch_kernel(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs, CUstream stream)
{
    const IrFunc *f0 = k->module->ir->funcs[k->first];
    ph_status s = check_args(f0, args, nargs);
    if (s) return s;
    char why[512] = "";
    int *eligible = k->eligible, ne = 0;
    unsigned (*grids)[3] = k->grids;
    for (int i = 0; i < k->count; i++) {
        char w[512];
        if (ineligible(k->module->ir->funcs[k->first + i], args, w, sizeof w)) snprintf(why, sizeof why, "%s", w);
        else eligible[ne++] = i;
    }
    if (!ne) s = fail(PH_ERR_NOT_ELIGIBLE, "%s: no config accepts these arguments (%s)", k->name, why);
    const Device *d = rt.ready ? module_device(k->module) : NULL;
    /* the grid callback runs once per eligible config */
    for (int i = 0; i < ne && !s; i++) {
        int c = k->first + eligible[i];
        s = grid_for(k->module->ir->funcs[c], &k->module->state[c], d, grid, user, grids[i]);
    }
    if (!s && !rt.ready) s = fail(PH_ERR_STATE, NOT_READY);
    if (!s && rt.interp) return interp_launch(k, eligible[0], grids[0], args, nargs);
    CUcontext saved = NULL;
    if (s || (s = enter_context(d, &saved))) return s;
    k->stream = stream;
    s = load_needed(k, eligible, grids, &ne, args, nargs);
    if (!s) s = launch_eligible(k, eligible, grids, ne, args, nargs);
    leave_context(d, saved);
    return s;
}

ph_status ph_launch_stream(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs, void *stream)
{
    if (!k || !grid || (!args && nargs)) return fail(PH_ERR_INVALID, "null argument to ph_launch");
    if (held) return fail(PH_ERR_STATE, "%s: ph_launch from inside a launch's grid callback", k->name);
    lock_runtime();
    ph_status s = launch_kernel(k, grid, user, args, nargs, stream);
    unlock_runtime();
    return s;
}

ph_status ph_launch(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs)
{
    return ph_launch_stream(k, grid, user, args, nargs, NULL);
}

const char *ph_kernel_last_config(const ph_kernel *k)
{
    if (!k) return NULL;
    lock_runtime();
    const char *name = k->last >= 0 ? k->module->ir->funcs[k->first + k->last]->name : NULL;
    unlock_runtime();
    return name;
}

static ph_status kernel_stats(ph_kernel *k, const char *config, ph_stats *out)
{
    if (!rt.ready) return fail(PH_ERR_STATE, "the runtime is not initialized (call ph_init) or was shut down");
    if (rt.interp) return fail(PH_ERR_STATE, "statistics come from the CUDA driver; the interpreter has none");
    int c = -1;
    if (config) {
        for (int i = 0; i < k->count && c < 0; i++)
            if (!strcmp(k->module->ir->funcs[k->first + i]->name, config)) c = k->first + i;
        if (c < 0) return fail(PH_ERR_NOT_FOUND, "%s has no config named '%s'", k->name, config);
    } else if (k->last >= 0 || k->count == 1) {
        c = k->first + (k->last >= 0 ? k->last : 0);
    } else {
        return fail(PH_ERR_INVALID, "%s has %d configs and none was launched yet: name one", k->name, k->count);
    }
    const Device *d = module_device(k->module);
    CUcontext saved = NULL;
    ph_status s = enter_context(d, &saved);
    if (s) return s;
    s = config_load(k->module, c);
    if (!s) s = config_stats(k->module, c, out);
    leave_context(d, saved);
    return s;
}

/* Under the lock, in the context of the module's device, as a launch. */
ph_status ph_kernel_stats(ph_kernel *k, const char *config, ph_stats *out)
{
    if (!k || !out) return fail(PH_ERR_INVALID, "null argument to ph_kernel_stats");
    lock_runtime();
    ph_status s = kernel_stats(k, config, out);
    unlock_runtime();
    return s;
}

/* ---- memory ---- */

/* A memory call on the calling thread's device, its context current from
 * call_begin to call_end. The lock is held only to find the device: a
 * copy that waits for the device does not hold up launches elsewhere. */
typedef struct {
    bool interp;
    const Device *dev;
    CUcontext saved;
} Call;

static ph_status call_begin(Call *c)
{
    lock_runtime();
    bool ready = rt.ready;
    c->interp = rt.interp;
    c->dev = ready ? &rt.devices[thread_device()] : NULL;
    unlock_runtime();
    if (!ready) return fail(PH_ERR_STATE, NOT_READY);
    return c->interp ? PH_OK : enter_context(c->dev, &c->saved);
}

static ph_status call_end(const Call *c, ph_status s)
{
    if (!c->interp) leave_context(c->dev, c->saved);
    return s;
}

static ph_status cu_status(CUresult r, const char *what) { return r ? cu_fail(r, what) : PH_OK; }

ph_status ph_malloc(ph_devptr *p, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!p) return call_end(&c, fail(PH_ERR_INVALID, "null pointer to ph_malloc"));
    if (c.interp)
        return (*p = (ph_devptr)(uintptr_t)calloc(1, bytes ? bytes : 1)) ? PH_OK : fail(PH_ERR_INVALID, "out of host memory (%zu bytes)", bytes);
    CUdeviceptr d = 0;
    s = cu_status(cu.MemAlloc(&d, bytes ? bytes : 1), "cuMemAlloc");
    if (!s) *p = d;
    return call_end(&c, s);
}

ph_status ph_free(ph_devptr p)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (c.interp) { free((void *)(uintptr_t)p); return PH_OK; }
    return call_end(&c, p ? cu_status(cu.MemFree(p), "cuMemFree") : PH_OK);
}

ph_status ph_memcpy_htod(ph_devptr dst, const void *src, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!dst || !src) return call_end(&c, fail(PH_ERR_INVALID, "null pointer to ph_memcpy_htod"));
    if (c.interp) { memcpy((void *)(uintptr_t)dst, src, bytes); return PH_OK; }
    return call_end(&c, cu_status(cu.MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD"));
}

ph_status ph_memcpy_dtoh(void *dst, ph_devptr src, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!dst || !src) return call_end(&c, fail(PH_ERR_INVALID, "null pointer to ph_memcpy_dtoh"));
    if (c.interp) { memcpy(dst, (const void *)(uintptr_t)src, bytes); return PH_OK; }
    return call_end(&c, cu_status(cu.MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH"));
}

ph_status ph_memset8(ph_devptr dst, unsigned char value, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!dst) return call_end(&c, fail(PH_ERR_INVALID, "null pointer to ph_memset8"));
    if (c.interp) { memset((void *)(uintptr_t)dst, value, bytes); return PH_OK; }
    return call_end(&c, cu_status(cu.MemsetD8(dst, value, bytes), "cuMemsetD8"));
}

ph_status ph_synchronize(void)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s || c.interp) return s;   /* the interpreter's launches return when they are done */
    return call_end(&c, cu_status(cu.CtxSynchronize(), "the kernel (cuCtxSynchronize)"));
}
