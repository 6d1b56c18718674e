/* exec_interp.c: the CPU interpreter as the runtime's target
 * (PH_INTERPRETER, PHOBOS_TARGET=interp): no driver, host memory as device
 * memory, launches run the IR on the CPU. Its grid limits are a GPU's, so
 * a grid one target refuses the other does too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "device.h"
#include "error.h"
#include "module.h"

static PhRuntime *const rt = &ph_internal_runtime;

static bool interp_started(int device)
{
    (void)device;
    return true;
}

static ph_status interp_start(int device)
{
    (void)device;
    Device *d = &rt->devices[0];
    d->max_grid[0] = INT32_MAX;
    d->max_grid[1] = d->max_grid[2] = 65535;
    snprintf(d->name, sizeof d->name, "the CPU interpreter");
    d->multiprocessors = 1;   /* it runs one block at a time */
    d->ready = true;
    rt->ready = true;
    rt->default_device = 0;
    rt->generation++;
    return PH_OK;
}

static ph_status interp_choose(int device, CUcontext *current)
{
    (void)device, (void)current;
    ph_internal_thread_choose(-1);   /* every device is the interpreter */
    return PH_OK;
}

static int interp_current(void) { return PH_INTERPRETER; }
static void interp_stop(void) {}
static void interp_release(ph_module *m) { (void)m; }

/* The interpreter runs the first eligible config (it times nothing) on
 * the arguments as they are: their pointers are host memory. */
static ph_status interp_launch(ph_kernel *k, int *eligible, unsigned (*grids)[3], int ne, const ph_arg *args, int nargs,
                               CUstream stream)
{
    (void)ne, (void)stream;
    int cfg = eligible[0];
    const unsigned *g = grids[0];
    const IrFunc *f = k->module->ir->funcs[k->first + cfg];
    IrArg *iargs = xcalloc((size_t)nargs + 1, sizeof *iargs);
    for (int i = 0; i < nargs; i++)
        iargs[i] = (IrArg){.data = (void *)(uintptr_t)args[i].ptr,
                           .dims = {args[i].dims[0], args[i].dims[1], args[i].dims[2], args[i].dims[3]},
                           .i = args[i].i32, .f = args[i].f32,
                           .strides = {args[i].strides[0], args[i].strides[1], args[i].strides[2], args[i].strides[3]},
                           .l = args[i].kind == PH_ARG_I64 ? ph_arg_i64_value(&args[i]) : 0};
    int grid[3] = {(int)g[0], (int)g[1], (int)g[2]};
    char err[1024] = "";
    int r = ir_interp(f, iargs, nargs, grid, err, sizeof err);
    free(iargs);
    k->last = cfg;
    if (r && strstr(err, ": device assert failed in kernel"))   /* as the GPU answers one: PH_ERR_CUDA */
        return ph_internal_failf(PH_ERR_CUDA, "%s", err);
    return r ? ph_internal_failf(PH_ERR_ARGS, "%s: %s", f->name, err) : PH_OK;
}

static ph_status interp_stats(ph_kernel *k, const char *config, ph_stats *out)
{
    (void)k, (void)config, (void)out;
    return ph_internal_failf(PH_ERR_STATE, "statistics come from the CUDA driver; the interpreter has none");
}

/* ---- host memory as device memory ---- */

static ph_status interp_enter(const Device *d, CUcontext *saved)
{
    (void)d, (void)saved;
    return PH_OK;
}

static void interp_leave(const Device *d, CUcontext saved) { (void)d, (void)saved; }

static ph_status interp_alloc(ph_devptr *p, size_t bytes)
{
    *p = (ph_devptr)(uintptr_t)calloc(1, bytes ? bytes : 1);
    return *p ? PH_OK : ph_internal_failf(PH_ERR_INVALID, "out of host memory (%zu bytes)", bytes);
}

static ph_status interp_free(ph_devptr p)
{
    free((void *)(uintptr_t)p);
    return PH_OK;
}

static ph_status interp_htod(ph_devptr dst, const void *src, size_t bytes)
{
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return PH_OK;
}

static ph_status interp_dtoh(void *dst, ph_devptr src, size_t bytes)
{
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return PH_OK;
}

static ph_status interp_memset8(ph_devptr dst, unsigned char value, size_t bytes)
{
    memset((void *)(uintptr_t)dst, value, bytes);
    return PH_OK;
}

/* Its launches return when they are done. */
static ph_status interp_synchronize(void) { return PH_OK; }

const PhExec ph_internal_exec_interp = {
    .started = interp_started, .start = interp_start, .choose = interp_choose, .current = interp_current,
    .stop = interp_stop, .release = interp_release, .launch = interp_launch, .stats = interp_stats,
    .enter = interp_enter, .leave = interp_leave, .alloc = interp_alloc, .free = interp_free, .htod = interp_htod,
    .dtoh = interp_dtoh, .memset8 = interp_memset8, .synchronize = interp_synchronize,
};
