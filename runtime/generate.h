/* generate.h: a config's PTX, from the disk cache or generated, one at a
 * time or a kernel's configs at once on threads of their own
 * (generate.c). */
#ifndef PHOBOS_GENERATE_H
#define PHOBOS_GENERATE_H

#include <stdbool.h>
#include <stddef.h>

#include "phobos.h"

struct CodegenTimes;

/* The PTX of config number `config` (an index into the module's configs,
 * in --list order) for arch ("sm_90"): from the disk cache when a run of
 * this build has generated it before, else generated and cached. It holds
 * that config's entry only. 0 on success (*ptx malloc'd; *from_cache says
 * which); 1 with err filled. */
int ph_internal_config_ptx(ph_module *m, int config, const char *arch, char **ptx, bool *from_cache, char *err, size_t errlen);

/* The PTX of configs[0..n) (indices as ph_internal_config_ptx takes them),
 * generated on up to `threads` threads at once: what
 * ph_internal_config_ptx gives for configs[i] lands in ptx[i],
 * from_cache[i] and failed[i] (0 or 1), with its message in err[i], the
 * same whatever the number of threads. Needs no lock: it reads the module
 * and writes only these arrays (and the disk cache). */
enum { PH_CONFIG_ERR_BYTES = 2048 };
void ph_internal_configs_ptx(ph_module *m, const int *configs, int n, const char *arch, int threads, char **ptx,
                             bool *from_cache, int *failed, char (*err)[PH_CONFIG_ERR_BYTES]);

/* A batch of configs being generated, as ph_internal_configs_ptx keeps
 * it: for a launch that takes each config as its thread is done with it
 * (ph_internal_parallel_start running ph_internal_generate_one). */
typedef struct {
    ph_module *m;
    const int *configs;
    const char *arch;
    char **ptx;
    bool *from_cache;
    int *failed;
    char (*err)[PH_CONFIG_ERR_BYTES];
    struct CodegenTimes *times;   /* per config, when PHOBOS_TIME_COMPILE asks */
    /* when not NULL, run on the same thread on each config's PTX, once it is there */
    void (*then)(void *ctx, int i, const char *ptx);
    void *then_ctx;
} PtxBatch;

/* A batch of n configs, its results cleared, its times kept when
 * PHOBOS_TIME_COMPILE asks. */
void ph_internal_ptx_batch_begin(PtxBatch *b, int n);
/* Config i of the batch generated (a loop's work, on any thread). */
void ph_internal_generate_one(void *batch, int i);
/* The batch done, in ms, on so many threads: PHOBOS_TIME_COMPILE's lines. */
void ph_internal_ptx_batch_end(PtxBatch *b, int n, int threads, double ms);
/* A clock for those ms. */
double ph_internal_wall_ms(void);

#endif
