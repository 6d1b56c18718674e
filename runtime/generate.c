/* generate.c: a config's PTX for a target: from the disk cache when a run
 * of this build has generated it before, else generated (pipeline.c) and
 * cached; a kernel's configs at once on threads of their own, each in an
 * LLVM context of its own, with PHOBOS_TIME_COMPILE's report. */
#define _GNU_SOURCE
#include "generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/util.h"
#include "cache.h"
#include "codegen/codegen.h"
#include "driver/driver.h"
#include "error.h"
#include "module.h"
#include "parallel.h"
#include "pipeline.h"

/* A config's PTX for arch: from the disk cache, or generated (and cached),
 * the time it took added to *times when not NULL. */
static int config_ptx(ph_module *m, int config, const char *arch, char **ptx, bool *from_cache, CodegenTimes *times,
                      char *err, size_t errlen)
{
    IrFunc *f = m->ir->funcs[config];
    bool lineinfo = ph_internal_env_asked("PHOBOS_LINEINFO");
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
    bool cached = ph_internal_ptx_cache_path(key, arch, path, sizeof path);
    *from_cache = false;
    if (cached && (*ptx = ph_internal_ptx_cache_read(path))) {
        *from_cache = true;
        return 0;
    }
    if (ph_internal_config_codegen(f, arch, level, lineinfo, m->source, times, ptx, err, errlen)) return 1;
    if (cached) ph_internal_ptx_cache_write(path, *ptx);
    return 0;
}

int ph_internal_config_ptx(ph_module *m, int config, const char *arch, char **ptx, bool *from_cache, char *err, size_t errlen)
{
    CodegenTimes times = {0};
    bool timed = ph_internal_time_asked();
    int failed = config_ptx(m, config, arch, ptx, from_cache, timed ? &times : NULL, err, errlen);
    if (timed && !failed && !*from_cache) driver_print_times(m->ir->funcs[config]->name, 1, &times);
    return failed;
}

void ph_internal_generate_one(void *batch, int i)
{
    PtxBatch *b = batch;
    b->failed[i] = config_ptx(b->m, b->configs[i], b->arch, &b->ptx[i], &b->from_cache[i], b->times ? &b->times[i] : NULL,
                              b->err[i], sizeof b->err[i]);
    if (b->then && !b->failed[i]) b->then(b->then_ctx, i, b->ptx[i]);
}

double ph_internal_wall_ms(void)
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
        driver_print_times(b->m->ir->funcs[b->configs[i]]->name, 1, &b->times[i]);
        generated++;
    }
    threads = threads < n ? threads : n;
    fprintf(stderr, "phobos: time: %d configs generated (%d from the PTX cache) on %d thread%s in %.1f ms\n", generated,
            n - generated, threads, threads == 1 ? "" : "s", ms);
}

void ph_internal_ptx_batch_begin(PtxBatch *b, int n)
{
    for (int i = 0; i < n; i++) b->ptx[i] = NULL, b->from_cache[i] = false, b->failed[i] = 0, b->err[i][0] = 0;
    b->times = ph_internal_time_asked() ? xcalloc((size_t)n, sizeof *b->times) : NULL;
}

void ph_internal_ptx_batch_end(PtxBatch *b, int n, int threads, double ms)
{
    if (b->times) print_batch_times(b, n, threads, ms);
    free(b->times);
}

void ph_internal_configs_ptx(ph_module *m, const int *configs, int n, const char *arch, int threads, char **ptx,
                             bool *from_cache, int *failed, char (*err)[PH_CONFIG_ERR_BYTES])
{
    PtxBatch b = {m, configs, arch, ptx, from_cache, failed, err, NULL, NULL, NULL};
    ph_internal_ptx_batch_begin(&b, n);
    double start = ph_internal_wall_ms();
    ph_internal_parallel(n, threads, ph_internal_generate_one, &b);
    ph_internal_ptx_batch_end(&b, n, threads, ph_internal_wall_ms() - start);
}
