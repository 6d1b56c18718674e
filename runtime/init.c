/* init.c: starting the runtime and choosing its target once (ph_init:
 * the GPU, or the CPU interpreter for PH_INTERPRETER or
 * PHOBOS_TARGET=interp), the calling thread's device, and ph_shutdown. */
#include "phobos.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "driver.h"
#include "error.h"

static PhRuntime *const rt = &ph_internal_runtime;

static bool interpreter_asked(int device)
{
    const char *target = getenv("PHOBOS_TARGET");
    return device == PH_INTERPRETER || (target && !strcmp(target, "interp"));
}

/* Starts the target `device` asks for, or one more device of it. */
static ph_status start_target(int device)
{
    const PhExec *exec = interpreter_asked(device) ? &ph_internal_exec_interp : &ph_internal_exec_gpu;
    if (rt->ready && rt->exec != exec)
        return ph_internal_failf(PH_ERR_STATE, "the runtime already runs on %s (call ph_shutdown first)",
                                 rt->devices[rt->default_device].name);
    if (rt->ready && exec->started(device)) return PH_OK;
    ph_status s = exec->start(device);
    if (!s) rt->exec = exec;
    return s;
}

ph_status ph_init(int device)
{
    ph_internal_lock();
    ph_status s = start_target(device);
    ph_internal_unlock();
    return s;
}

ph_status ph_set_device(int device)
{
    ph_internal_lock();
    CUcontext ctx = NULL;
    ph_status s = !rt->ready ? ph_internal_failf(PH_ERR_STATE, NOT_READY) : rt->exec->choose(device, &ctx);
    ph_internal_unlock();
    CUresult r = ctx ? ph_internal_driver()->CtxSetCurrent(ctx) : 0;
    return s ? s : r ? ph_internal_cuda_fail(r, "cuCtxSetCurrent") : PH_OK;
}

ph_status ph_get_device(int *device)
{
    if (!device) return ph_internal_failf(PH_ERR_INVALID, "null pointer to ph_get_device");
    ph_internal_lock();
    ph_status s = !rt->ready ? ph_internal_failf(PH_ERR_STATE, NOT_READY) : PH_OK;
    if (!s) *device = rt->exec->current();
    ph_internal_unlock();
    return s;
}

const char *ph_device_name(void)
{
    ph_internal_lock();
    const char *name = rt->ready ? rt->devices[ph_internal_thread_device()].name : "no device";
    ph_internal_unlock();
    return name;
}

int ph_device_multiprocessors(void)
{
    ph_internal_lock();
    int n = rt->ready ? rt->devices[ph_internal_thread_device()].multiprocessors : 0;
    ph_internal_unlock();
    return n;
}

void ph_shutdown(void)
{
    if (ph_internal_locked()) return;   /* from inside a launch's grid callback: not now */
    ph_internal_lock();
    if (rt->ready) rt->exec->stop();
    memset(rt->devices, 0, sizeof rt->devices);
    rt->ready = false;
    rt->exec = NULL;
    ph_internal_unlock();
}
