/* device.c: the runtime's state and its lock, and the device each thread
 * uses; what runs on the devices is the execution's (exec_gpu.c,
 * exec_interp.c). */
#include "device.h"

#include <pthread.h>

PhRuntime ph_internal_runtime;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int held;   /* how deep the calling thread holds `lock` */

void ph_internal_lock(void)
{
    if (!held++) pthread_mutex_lock(&lock);
}

void ph_internal_unlock(void)
{
    if (!--held) pthread_mutex_unlock(&lock);
}

bool ph_internal_locked(void) { return held > 0; }

/* The device the calling thread chose with ph_set_device, in the runtime
 * generation it chose it in. */
static _Thread_local struct { int device; unsigned generation; } chosen;

int ph_internal_thread_device(void)
{
    const PhRuntime *rt = &ph_internal_runtime;
    if (chosen.generation == rt->generation && rt->devices[chosen.device].ready) return chosen.device;
    return rt->default_device;
}

void ph_internal_thread_choose(int device)
{
    if (device < 0) {
        chosen.generation = 0;
        return;
    }
    chosen.device = device;
    chosen.generation = ph_internal_runtime.generation;
}
