/* device.h: the runtime's state, behind one lock (device.c): the target
 * it runs kernels on, chosen once by ph_init (an execution: the GPU or the
 * CPU interpreter, each a table of hooks), the devices started on it, and
 * which of them the calling thread uses. */
#ifndef PHOBOS_DEVICE_H
#define PHOBOS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "driver.h"
#include "phobos.h"

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
    int multiprocessors;
    int max_shared;        /* bytes of shared memory a block may opt in to */
} Device;

enum { MAX_DEVICES = 64 };

typedef struct PhExec PhExec;

/* The runtime's shared state, behind the lock: the target and its
 * devices, and in each module its loaded configs, the autotuner's
 * choices and the launch scratch. ph_last_error's message is per thread
 * and needs none. */
typedef struct {
    bool ready;
    const PhExec *exec;    /* what runs the kernels, while ready */
    int default_device;    /* the first started: a thread's device until it calls ph_set_device */
    unsigned generation;   /* one more at each start: a choice made before a ph_shutdown is stale */
    Device devices[MAX_DEVICES];
} PhRuntime;

extern PhRuntime ph_internal_runtime;

/* Takes the lock, or takes it again in the thread that holds it: a grid
 * callback runs inside a launch, and may ask the runtime things. */
void ph_internal_lock(void);
void ph_internal_unlock(void);
/* Whether the calling thread holds the lock: it is inside a launch's grid callback. */
bool ph_internal_locked(void);

/* The calling thread's device: its ph_set_device choice, else the first
 * started. The runtime is ready. */
int ph_internal_thread_device(void);
/* The calling thread's choice from now on: `device`, in this generation
 * of the runtime; -1: none, the first started. */
void ph_internal_thread_choose(int device);

/* A target the runtime runs kernels on: the GPU (exec_gpu.c) or the CPU
 * interpreter (exec_interp.c), chosen once by ph_init; the layers above
 * call it through ph_internal_runtime.exec and never ask which it is.
 * Every hook but the memory calls runs with the lock held. */
struct PhExec {
    /* Whether `device` runs already (a ph_init of it again does nothing);
     * starting it, beside those running (the first sets the runtime ready). */
    bool (*started)(int device);
    ph_status (*start)(int device);
    /* ph_set_device: the calling thread's device from now on, and the
     * context to make current once the lock is let go (NULL: none). */
    ph_status (*choose)(int device, CUcontext *current);
    /* ph_get_device's answer. */
    int (*current)(void);
    /* ph_shutdown: every device let go. */
    void (*stop)(void);
    /* ph_module_free: m's loaded configs unloaded (m loaded in this generation). */
    void (*release)(ph_module *m);
    /* A checked launch of one of k's eligible configs (ne > 0, indices
     * into k's configs, their grids in grids[]) on stream. */
    ph_status (*launch)(ph_kernel *k, int *eligible, unsigned (*grids)[3], int ne, const ph_arg *args, int nargs,
                        CUstream stream);
    /* ph_kernel_stats, the runtime ready. */
    ph_status (*stats)(ph_kernel *k, const char *config, ph_stats *out);
    /* A memory call on device d: made current from enter to leave, the
     * lock not held, the arguments checked. */
    ph_status (*enter)(const Device *d, CUcontext *saved);
    void (*leave)(const Device *d, CUcontext saved);
    ph_status (*alloc)(ph_devptr *p, size_t bytes);
    ph_status (*free)(ph_devptr p);
    ph_status (*htod)(ph_devptr dst, const void *src, size_t bytes);
    ph_status (*dtoh)(void *dst, ph_devptr src, size_t bytes);
    ph_status (*memset8)(ph_devptr dst, unsigned char value, size_t bytes);
    ph_status (*synchronize)(void);
};

extern const PhExec ph_internal_exec_gpu, ph_internal_exec_interp;

#endif
