/* exec_gpu.c: NVIDIA GPUs as the runtime's target, through the CUDA
 * driver (driver.c): the devices started, each with its primary context;
 * launches of the configs a launch loads (load.c), the autotuner's pick
 * among them; device memory. Every call is made in the context of the
 * device it is for, and the calling thread's context is put back after. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "autotune.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "device.h"
#include "error.h"
#include "jit.h"
#include "load.h"
#include "module.h"

static PhRuntime *const rt = &ph_internal_runtime;

/* Makes d's context current in the calling thread, keeping the one that
 * was in *saved for leave_context. */
static ph_status enter_context(const Device *d, CUcontext *saved)
{
    const PhDriver *cu = ph_internal_driver();
    CUresult r = cu->CtxGetCurrent(saved);
    if (!r && *saved != d->ctx) r = cu->CtxSetCurrent(d->ctx);
    return r ? ph_internal_cuda_fail(r, "cuCtxSetCurrent") : PH_OK;
}

static void leave_context(const Device *d, CUcontext saved)
{
    if (saved != d->ctx) ph_internal_driver()->CtxSetCurrent(saved);
}

/* ---- devices ---- */

/* The target a device of compute capability major.minor runs: sm_90a's
 * wgmma on 9.0 (H100, H200), sm_80 code on every other chip from 8.0 on;
 * PHOBOS_ARCH names another the device can run (sm_90 on 9.0: the
 * mma.sync path where wgmma would be taken). */
static ph_status device_arch(Device *d, int ordinal, int major, int minor)
{
    const char *want = getenv("PHOBOS_ARCH");
    const char *arch = major == 9 && minor == 0 ? "sm_90a" : "sm_80";
    if (want && *want) {
        if (!target_find(want)) return ph_internal_failf(PH_ERR_INVALID, "PHOBOS_ARCH=%s names no target (%s)", want, target_names());
        /* sm_XY runs on X.Y and later; sm_XYa on X.Y alone */
        int sm = atoi(want + 3), cc = major * 10 + minor;
        if (sm > cc || (want[strlen(want) - 1] == 'a' && sm != cc))
            return ph_internal_failf(PH_ERR_INVALID, "PHOBOS_ARCH=%s: device %d (compute capability %d.%d) cannot run %s code", want, ordinal,
                                     major, minor, want);
        arch = want;
    }
    snprintf(d->arch, sizeof d->arch, "%s", arch);
    return PH_OK;
}

/* Retains the primary context of device `ordinal` (in range) and reads
 * what launches need to know of it. */
static ph_status device_open(Device *d, int ordinal)
{
    const PhDriver *cu = ph_internal_driver();
    CUresult r;
    if ((r = cu->DeviceGet(&d->dev, ordinal))) return ph_internal_cuda_fail(r, "cuDeviceGet");
    int major = 0, minor = 0;
    cu->DeviceGetAttribute(&major, ATTR_CC_MAJOR, d->dev);
    cu->DeviceGetAttribute(&minor, ATTR_CC_MINOR, d->dev);
    if (major < 8)
        return ph_internal_failf(PH_ERR_NO_DEVICE, "device %d has compute capability %d.%d; phc needs 8.0 or later", ordinal, major, minor);
    if (cu->DeviceGetAttribute(&d->multiprocessors, ATTR_SM_COUNT, d->dev) || d->multiprocessors < 1) d->multiprocessors = 1;
    cu->DeviceGetAttribute(&d->max_grid[0], ATTR_MAX_GRID_X, d->dev);
    cu->DeviceGetAttribute(&d->max_grid[1], ATTR_MAX_GRID_Y, d->dev);
    cu->DeviceGetAttribute(&d->max_grid[2], ATTR_MAX_GRID_Z, d->dev);
    cu->DeviceGetAttribute(&d->max_threads, ATTR_MAX_THREADS_PER_BLOCK, d->dev);
    if (cu->DeviceGetAttribute(&d->max_shared, ATTR_MAX_SHARED_PER_BLOCK_OPTIN, d->dev) || d->max_shared < CODEGEN_MAX_STATIC_SHARED)
        d->max_shared = CODEGEN_MAX_STATIC_SHARED;   /* every device of compute capability 8.0 and later has this much */
    ph_status st = device_arch(d, ordinal, major, minor);
    if (st) return st;
    char name[200] = "";
    cu->DeviceGetName(name, sizeof name, d->dev);
    snprintf(d->name, sizeof d->name, "%s, sm_%d%d, %d SMs", name, major, minor, d->multiprocessors);
    if ((r = cu->DevicePrimaryCtxRetain(&d->ctx, d->dev))) return ph_internal_cuda_fail(r, "cuDevicePrimaryCtxRetain");
    d->ready = true;
    return PH_OK;
}

static bool gpu_started(int device) { return device >= 0 && device < MAX_DEVICES && rt->devices[device].ready; }

/* Starts GPU `device` beside those already started. */
static ph_status gpu_start(int device)
{
    const PhDriver *cu = ph_internal_driver();
    if (!ph_internal_load_driver())
        return ph_internal_failf(PH_ERR_NO_DRIVER, "no CUDA driver on this machine (libcuda.so.1 could not be loaded: %s)", dlerror());
    CUresult r = cu->Init(0);
    if (r) return r == 100 ? ph_internal_failf(PH_ERR_NO_DEVICE, "the CUDA driver found no GPU (CUDA error 100)") : ph_internal_cuda_fail(r, "cuInit");
    int count = 0;
    if ((r = cu->DeviceGetCount(&count))) return ph_internal_cuda_fail(r, "cuDeviceGetCount");
    if (device < 0 || device >= count)
        return ph_internal_failf(PH_ERR_NO_DEVICE, "device %d does not exist (this machine has %d)", device, count);
    if (device >= MAX_DEVICES) return ph_internal_failf(PH_ERR_NO_DEVICE, "device %d: the runtime drives devices 0 to %d", device, MAX_DEVICES - 1);
    Device *d = &rt->devices[device];
    ph_status s = device_open(d, device);
    if (s) return s;
    if (rt->ready) return PH_OK;
    /* the first device: every thread's until it chooses, and current in this one */
    if ((r = cu->CtxSetCurrent(d->ctx))) {
        cu->DevicePrimaryCtxRelease(d->dev);
        d->ready = false;
        return ph_internal_cuda_fail(r, "cuCtxSetCurrent");
    }
    rt->ready = true;
    rt->default_device = device;
    rt->generation++;
    return PH_OK;
}

static ph_status gpu_choose(int device, CUcontext *current)
{
    if (device < 0 || device >= MAX_DEVICES || !rt->devices[device].ready)
        return ph_internal_failf(PH_ERR_STATE, "device %d is not initialized (call ph_init(%d) first)", device, device);
    ph_internal_thread_choose(device);
    *current = rt->devices[device].ctx;
    return PH_OK;
}

static int gpu_current(void) { return ph_internal_thread_device(); }

/* Each device's work finished, and its context let go. */
static void gpu_stop(void)
{
    const PhDriver *cu = ph_internal_driver();
    for (int i = 0; i < MAX_DEVICES; i++) {
        Device *d = &rt->devices[i];
        CUcontext saved = NULL;
        if (!d->ready) continue;
        if (!enter_context(d, &saved)) {
            cu->CtxSynchronize();
            leave_context(d, saved);
        }
        cu->DevicePrimaryCtxRelease(d->dev);
    }
}

static void gpu_release(ph_module *m)
{
    const PhDriver *cu = ph_internal_driver();
    const Device *d = &rt->devices[m->device];
    CUcontext saved = NULL;
    if (enter_context(d, &saved)) return;
    for (int i = 0; i < m->ir->nfuncs; i++)
        if (m->state[i].state == CONFIG_LOADED) cu->ModuleUnload(m->state[i].mod);
    leave_context(d, saved);
}

/* ---- launches ---- */

/* Tensor map j of config st for this launch's tensors, in k->maps: the
 * tensor as a [dim0, dim1] array of the descriptor's elements (2 bytes:
 * moved, not read, so f16 and bf16 alike; 4: f32, which the engine's adds
 * add), the box the config copies, zeros outside. Whether the driver could
 * build it: it cannot where the address or the row stride is not a
 * multiple of 16 bytes, and then the kernel goes without it (cp.async,
 * adds from shared memory by the threads). */
static bool build_map(ph_kernel *k, const CodegenCopyDesc *d, int j, const IrFunc *f, const ph_arg *args)
{
    const PhDriver *cu = ph_internal_driver();
    if (!cu->TensorMapEncodeTiled || !k->maps || d->param < 0 || d->param >= f->nparams || !f->params[d->param].is_tensor) return false;
    const ph_arg *a = &args[d->param];
    unsigned long long dims[2] = {(unsigned long long)(f->params[d->param].rank == 2 ? a->dims[1] : 1), (unsigned long long)a->dims[0]};
    unsigned long long strides[1] = {dims[0] * (unsigned long long)d->elem_bytes};
    unsigned box[2] = {(unsigned)d->cols, (unsigned)d->rows}, elem[2] = {1, 1};
    int swizzle = d->swizzle == 128 ? 3 : d->swizzle == 64 ? 2 : d->swizzle == 32 ? 1 : 0;
    enum { UINT16 = 1, FLOAT32 = 7, INTERLEAVE_NONE = 0, L2_PROMOTION_128B = 2, OOB_FILL_ZEROS = 0 };
    if (!a->ptr || a->ptr % 16 || strides[0] % 16 || !dims[0] || !dims[1] || (d->elem_bytes != 2 && d->elem_bytes != 4)) return false;
    return !cu->TensorMapEncodeTiled(k->maps + 128 * j, d->elem_bytes == 4 ? FLOAT32 : UINT16, 2, (void *)(uintptr_t)a->ptr, dims, strides, box, elem, INTERLEAVE_NONE,
                                     swizzle, L2_PROMOTION_128B, OOB_FILL_ZEROS);
}

/* Whether map j was last built for config cfg's descriptor d and the
 * same tensor (address, extents); notes it as built for them otherwise. */
static bool map_cached(ph_kernel *k, int j, int cfg, const CodegenCopyDesc *d, const IrFunc *f, const ph_arg *args)
{
    bool tensor = d->param >= 0 && d->param < f->nparams && f->params[d->param].is_tensor;
    const ph_arg *a = tensor ? &args[d->param] : NULL;
    uint64_t ptr = a ? a->ptr : 0;
    int64_t d0 = a ? a->dims[0] : 0, d1 = a && f->params[d->param].rank == 2 ? a->dims[1] : 0;
    bool same = k->map_of[j].cfg == cfg && !memcmp(&k->map_of[j].desc, d, sizeof *d) && k->map_of[j].ptr == ptr &&
                k->map_of[j].dims[0] == d0 && k->map_of[j].dims[1] == d1;
    k->map_of[j].cfg = cfg, k->map_of[j].desc = *d, k->map_of[j].ptr = ptr, k->map_of[j].dims[0] = d0, k->map_of[j].dims[1] = d1;
    return same;
}

/* The launch's parameters after the ABI's: config cfg's (st's) maps, then
 * their flags (codegen.h); a map is built only when its tensor changed. */
static void pack_copy_descriptors(ph_kernel *k, int cfg, const Config *st, const IrFunc *f, const ph_arg *args)
{
    int n = k->nvalues, nd = st->ndescs;
    for (int j = 0; j < nd; j++) {
        if (!map_cached(k, j, cfg, &st->descs[j], f, args)) {
            k->map_ok[j] = build_map(k, &st->descs[j], j, f, args);
            if (!k->map_ok[j] && k->maps) memset(k->maps + 128 * j, 0, 128);
        }
        static unsigned char no_map[128];   /* what a kernel told 0 never reads */
        k->params[n + j] = k->maps ? (void *)(k->maps + 128 * j) : (void *)no_map;
        k->params[n + nd + j] = &k->map_ok[j];
    }
}

/* Launches config `cfg` of k (an index into k's configs, loaded) on grid g. */
static ph_status launch_one(ph_kernel *k, int cfg, const unsigned g[3], const ph_arg *args)
{
    const PhDriver *cu = ph_internal_driver();
    const IrFunc *f = k->module->ir->funcs[k->first + cfg];
    const Config *st = &k->module->state[k->first + cfg];
    ph_internal_pack_args(k->values, f, args);
    pack_copy_descriptors(k, k->first + cfg, st, f, args);
    CUresult r = cu->LaunchKernel(st->fn, g[0], g[1], g[2], (unsigned)ir_launch_threads(f), 1, 1, st->shared_bytes, k->stream, k->params, NULL);
    return r ? ph_internal_cuda_fail(r, "cuLaunchKernel") : PH_OK;
}

static ph_status launch_config(void *k, int cfg, const unsigned g[3], const ph_arg *args)
{
    return launch_one(k, cfg, g, args);
}

/* What the autotuner runs k's configs on: its launches, on the stream of
 * k's launch in progress, on its module's device. */
static PhTuneTarget tune_target(ph_kernel *k)
{
    const Device *d = &rt->devices[k->module->device];
    return (PhTuneTarget){launch_config, k, k->stream, d->dev, d->name};
}

/* Launches one of the eligible configs (ne > 0), the autotuner's pick
 * when there are several. */
static ph_status launch_eligible(ph_kernel *k, const PhTuneTarget *on, const int *eligible, unsigned (*grids)[3], int ne,
                                 const ph_arg *args, int nargs)
{
    int pick = 0;   /* index into eligible[] and grids[] */
    if (ne > 1) {
        ph_status s = ph_internal_autotune(k->tuner, on, eligible, grids, ne, args, nargs, &pick);
        if (s) return s;
    }
    k->last = eligible[pick];
    return launch_one(k, eligible[pick], grids[pick], args);
}

/* The module's device's context is made current for the loads, the
 * timed runs and the launch itself. */
static ph_status gpu_launch(ph_kernel *k, int *eligible, unsigned (*grids)[3], int ne, const ph_arg *args, int nargs,
                            CUstream stream)
{
    const Device *d = &rt->devices[k->module->device];
    CUcontext saved = NULL;
    ph_status s = enter_context(d, &saved);
    if (s) return s;
    k->stream = stream;
    PhTuneTarget on = tune_target(k);
    s = ph_internal_load_needed(k, &on, eligible, grids, &ne, args, nargs);
    if (!s) s = launch_eligible(k, &on, eligible, grids, ne, args, nargs);
    leave_context(d, saved);
    return s;
}

/* In the context of the module's device, as a launch. */
static ph_status gpu_stats(ph_kernel *k, const char *config, ph_stats *out)
{
    int c;
    ph_status s = ph_internal_stats_config(k, config, &c);
    if (s) return s;
    const Device *d = &rt->devices[ph_internal_module_device(k->module)];
    CUcontext saved = NULL;
    if ((s = enter_context(d, &saved))) return s;
    s = ph_internal_config_load(k->module, c);
    if (!s) s = ph_internal_config_stats(k->module, c, out);
    leave_context(d, saved);
    return s;
}

/* ---- device memory ---- */

static ph_status gpu_alloc(ph_devptr *p, size_t bytes)
{
    CUdeviceptr d = 0;
    ph_status s = ph_internal_cuda_status(ph_internal_driver()->MemAlloc(&d, bytes ? bytes : 1), "cuMemAlloc");
    if (!s) *p = d;
    return s;
}

static ph_status gpu_free(ph_devptr p) { return p ? ph_internal_cuda_status(ph_internal_driver()->MemFree(p), "cuMemFree") : PH_OK; }

static ph_status gpu_htod(ph_devptr dst, const void *src, size_t bytes)
{
    return ph_internal_cuda_status(ph_internal_driver()->MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

static ph_status gpu_dtoh(void *dst, ph_devptr src, size_t bytes)
{
    return ph_internal_cuda_status(ph_internal_driver()->MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

static ph_status gpu_memset8(ph_devptr dst, unsigned char value, size_t bytes)
{
    return ph_internal_cuda_status(ph_internal_driver()->MemsetD8(dst, value, bytes), "cuMemsetD8");
}

static ph_status gpu_synchronize(void) { return ph_internal_cuda_status(ph_internal_driver()->CtxSynchronize(), "the kernel (cuCtxSynchronize)"); }

const PhExec ph_internal_exec_gpu = {
    .started = gpu_started, .start = gpu_start, .choose = gpu_choose, .current = gpu_current,
    .stop = gpu_stop, .release = gpu_release, .launch = gpu_launch, .stats = gpu_stats,
    .enter = enter_context, .leave = leave_context, .alloc = gpu_alloc, .free = gpu_free, .htod = gpu_htod,
    .dtoh = gpu_dtoh, .memset8 = gpu_memset8, .synchronize = gpu_synchronize,
};
