/* module.h: a loaded module, its kernels and its configs, as the
 * runtime's layers share them (module.c makes them). */
#ifndef PHOBOS_MODULE_H
#define PHOBOS_MODULE_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/codegen.h"
#include "driver.h"
#include "ir/ir.h"
#include "phobos.h"

typedef struct PhTuner PhTuner;

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
    /* the bulk copy descriptors a launch passes after values' (codegen.h),
     * built for its tensors, and whether each could be */
    unsigned char *maps;       /* CODEGEN_MAX_COPY_DESCS maps of 128 bytes, 64-byte aligned */
    int32_t map_ok[CODEGEN_MAX_COPY_DESCS];
    /* what each map was last built from (its config, descriptor, tensor
     * address and extents): a launch on the same tensors rebuilds nothing */
    struct { int cfg; CodegenCopyDesc desc; uint64_t ptr; int64_t dims[2]; } map_of[CODEGEN_MAX_COPY_DESCS];
    int nvalues;
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
    int ndescs;            /* CONFIG_LOADED: the bulk copy descriptors its PTX asks for */
    CodegenCopyDesc descs[CODEGEN_MAX_COPY_DESCS];
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

/* The device m runs on (its index into the runtime's devices): the
 * calling thread's when m is loaded, or when the runtime was not running
 * then, when m is first launched. A module from before a ph_shutdown lost
 * its loaded configs with the contexts: it takes a device again and they
 * load again. The runtime is ready and the lock held. */
int ph_internal_module_device(ph_module *m);

/* The config (of the module's) that k's config named `config` is, or
 * when NULL the one k last launched, or its only one: for statistics. */
ph_status ph_internal_stats_config(const ph_kernel *k, const char *config, int *c);

#endif
