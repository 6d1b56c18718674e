/* jit.c: a config's PTX to the CUDA driver, each config a CUDA module of
 * its own, so that a config the driver refuses (too much shared memory,
 * say) costs only itself: it leaves the eligible set and keeps the
 * driver's reason. Assembled by ptxas where there is one (a cubin, cached
 * on disk), else by the driver's JIT; PHOBOS_STATS's line per config. */
#include "jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "cache.h"
#include "codegen/codegen.h"
#include "error.h"
#include "generate.h"
#include "nvidia/ptxas.h"
#include "nvidia/ptxinfo.h"

static PhRuntime *const rt = &ph_internal_runtime;

/* Config c leaves its kernel's eligible set for good, for this reason. */
static ph_status leave_eligible_set(ph_module *m, int c, const char *why)
{
    m->state[c].state = CONFIG_REFUSED;
    m->state[c].why = xstrdup(why);
    return ph_internal_failf(PH_ERR_MODULE, "%s", why);
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
    const PhDriver *cu = ph_internal_driver();
    Config *st = &m->state[c];
    CUresult r = cu->FuncSetAttribute(st->fn, FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
    if (r) {
        const char *msg = NULL;
        cu->GetErrorString(r, &msg);
        cu->ModuleUnload(st->mod);
        char why[512];
        snprintf(why, sizeof why, "the CUDA driver refused %s %lld bytes of dynamic shared memory (error %d): %s",
                 m->ir->funcs[c]->name, (long long)bytes, r, msg ? msg : "unknown");
        return leave_eligible_set(m, c, why);
    }
    st->shared_bytes = (unsigned)bytes;
    return PH_OK;
}

/* A block of config c launches ir_launch_threads threads: where its
 * registers a thread leave room for fewer, the launch would fail (CUDA
 * error 701) in the middle of autotuning, so the config leaves the
 * eligible set at load, with the figures that say why. */
static ph_status fits_a_block(ph_module *m, int c)
{
    const PhDriver *cu = ph_internal_driver();
    Config *st = &m->state[c];
    int most = 0, regs = 0, threads = ir_launch_threads(m->ir->funcs[c]);
    CUresult r = cu->FuncGetAttribute(&most, FUNC_ATTR_MAX_THREADS_PER_BLOCK, st->fn);
    if (r) return ph_internal_cuda_fail(r, "cuFuncGetAttribute");
    if (most >= threads) return PH_OK;
    cu->FuncGetAttribute(&regs, FUNC_ATTR_NUM_REGS, st->fn);
    cu->ModuleUnload(st->mod);
    char why[512];
    snprintf(why, sizeof why, "%s is refused: a block of it launches %d threads, and with its %d registers a thread this device runs at most %d",
             m->ir->funcs[c]->name, threads, regs, most);
    return leave_eligible_set(m, c, why);
}

/* ---- what a config uses ---- */

ph_status ph_internal_config_stats(ph_module *m, int c, ph_stats *out)
{
    const PhDriver *cu = ph_internal_driver();
    const Config *st = &m->state[c];
    const IrFunc *f = m->ir->funcs[c];
    *out = (ph_stats){.config = f->name, .threads = ir_launch_threads(f), .spill_store_bytes = st->spill_stores,
                      .spill_load_bytes = st->spill_loads, .dynamic_shared_bytes = (int)st->shared_bytes};
    CUresult r;
    if ((r = cu->FuncGetAttribute(&out->registers, FUNC_ATTR_NUM_REGS, st->fn)) ||
        (r = cu->FuncGetAttribute(&out->local_bytes, FUNC_ATTR_LOCAL_SIZE_BYTES, st->fn)) ||
        (r = cu->FuncGetAttribute(&out->static_shared_bytes, FUNC_ATTR_SHARED_SIZE_BYTES, st->fn)) ||
        (r = cu->FuncGetAttribute(&out->max_threads_per_block, FUNC_ATTR_MAX_THREADS_PER_BLOCK, st->fn)))
        return ph_internal_cuda_fail(r, "cuFuncGetAttribute");
    return PH_OK;
}

/* PHOBOS_STATS's line for config c, just loaded, and a second where
 * ptxas said its wgmma pipeline was lost (report: ptxas's, if any). */
static void print_stats(ph_module *m, int c, const PtxasReport *report)
{
    ph_stats s;
    if (ph_internal_config_stats(m, c, &s)) {
        fprintf(stderr, "phobos: %s: %s\n", m->ir->funcs[c]->name, ph_last_error());
        return;
    }
    char spills[96] = "spills not reported";
    if (s.spill_store_bytes >= 0)
        snprintf(spills, sizeof spills, "%d bytes spill stores, %d bytes spill loads", s.spill_store_bytes, s.spill_load_bytes);
    fprintf(stderr, "phobos: %s: %d registers, %s, %d bytes local memory, %d bytes static shared, %d bytes dynamic shared, "
                    "%d threads (at most %d)\n", s.config, s.registers, spills, s.local_bytes, s.static_shared_bytes,
            s.dynamic_shared_bytes, s.threads, s.max_threads_per_block);
    char lost[600];
    if (ptxas_wgmma_text(&report->wgmma, lost, sizeof lost)) fprintf(stderr, "phobos: %s: %s\n", s.config, lost);
}

/* ---- assembling ---- */

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

/* Assembles ptx with ptxas (or takes the cubin it made before from the
 * disk cache) and loads the cubin: true when j->mod is loaded. Where
 * there is no ptxas, it fails, or the driver takes no cubin of it, the
 * caller gives the driver the PTX. ptxas runs as a process of its own, so
 * threads assemble at once where the driver's JIT would take one config
 * after another. */
static bool load_cubin(const Device *d, const char *ptx, Jit *j)
{
    const PhDriver *cu = ph_internal_driver();
    char ptxas[4096], path[1200];
    if (!runtime_ptxas(ptxas, sizeof ptxas)) return false;
    bool lineinfo = ph_internal_env_asked("PHOBOS_LINEINFO"), cached = ph_internal_cubin_cache_path(ptxas, d->arch, ptx, lineinfo, path, sizeof path);
    size_t bytes = 0;
    void *cubin = cached ? ph_internal_cubin_cache_read(path, &bytes) : NULL;
    if (!cubin) {
        PtxasRun r;
        if (!ptxas_run(ptxas, d->arch, ptx, PTXAS_VERBOSE | (lineinfo ? PTXAS_LINEINFO : 0), &r) && r.cubin) {
            snprintf(j->info, sizeof j->info, "%s", r.log);   /* the report of -v, for the spills */
            cubin = r.cubin, bytes = r.cubin_bytes, r.cubin = NULL;
            if (cached) ph_internal_cubin_cache_write(path, cubin, bytes);
        }
        ptxas_run_free(&r);
        if (!cubin) return false;
    }
    int opts[4] = {JIT_ERROR_LOG, JIT_ERROR_LOG_SIZE};
    void *vals[4] = {j->elog, (void *)(uintptr_t)sizeof j->elog};
    j->r = cu->ModuleLoadDataEx(&j->mod, cubin, 2, opts, vals);
    free(cubin);
    if (j->r) j->info[0] = j->elog[0] = 0;
    return !j->r;
}

/* Loads the PTX of entry `name` in d's context: a cubin from ptxas when
 * there is one (load_cubin), else through the driver's JIT. It touches no
 * state of the runtime's, so several threads may assemble configs at
 * once; the calling thread's context is as it was after. */
void ph_internal_jit_ptx(const Device *d, const char *name, const char *ptx, Jit *j)
{
    const PhDriver *cu = ph_internal_driver();
    j->done = true;
    j->shared = codegen_dynamic_shared_bytes(ptx, name);
    j->ndescs = codegen_copy_descriptors(ptx, name, j->descs);
    j->too_big = j->shared > d->max_shared;
    if (j->too_big) return;
    CUcontext saved = NULL;
    if ((j->r = cu->CtxGetCurrent(&saved)) || (saved != d->ctx && (j->r = cu->CtxSetCurrent(d->ctx)))) {
        snprintf(j->elog, sizeof j->elog, "cuCtxSetCurrent failed");
        return;
    }
    if (!load_cubin(d, ptx, j)) {
        int opts[6] = {JIT_INFO_LOG, JIT_INFO_LOG_SIZE, JIT_ERROR_LOG, JIT_ERROR_LOG_SIZE, JIT_LOG_VERBOSE, JIT_GENERATE_LINE_INFO};
        void *vals[6] = {j->info, (void *)(uintptr_t)sizeof j->info, j->elog, (void *)(uintptr_t)sizeof j->elog,
                         (void *)(uintptr_t)1, (void *)(uintptr_t)1};
        j->r = cu->ModuleLoadDataEx(&j->mod, ptx, ph_internal_env_asked("PHOBOS_LINEINFO") ? 6 : 5, opts, vals);
    }
    if (saved != d->ctx) cu->CtxSetCurrent(saved);
}

/* Config c (not loaded yet) takes what the JIT made of its PTX: loaded,
 * or, where the PTX asks for too much shared memory or the driver
 * refused it, out of the eligible set (PH_ERR_MODULE). */
ph_status ph_internal_config_take_jit(ph_module *m, int c, const Jit *j)
{
    const PhDriver *cu = ph_internal_driver();
    Config *st = &m->state[c];
    const Device *d = &rt->devices[m->device];
    if (j->too_big) {
        char why[512];
        snprintf(why, sizeof why, "%s is refused: it needs %lld bytes of shared memory, more than the %d a block of this device may have",
                 m->ir->funcs[c]->name, (long long)j->shared, d->max_shared);
        return leave_eligible_set(m, c, why);
    }
    if (j->r) return refuse(m, c, j->r, j->elog);
    CUresult r;
    st->mod = j->mod;
    if ((r = cu->ModuleGetFunction(&st->fn, st->mod, m->ir->funcs[c]->name))) {
        cu->ModuleUnload(st->mod);
        return ph_internal_cuda_fail(r, "cuModuleGetFunction");
    }
    ph_status s = fits_a_block(m, c);
    if (!s && j->shared) s = allow_dynamic_shared(m, c, j->shared);
    if (s) return s;
    PtxasReport report;
    bool reported = ptxas_report_of(j->info, m->ir->funcs[c]->name, &report);
    st->spill_stores = reported ? (int)report.spill_stores : -1;
    st->spill_loads = reported ? (int)report.spill_loads : -1;
    st->ndescs = j->ndescs;
    memcpy(st->descs, j->descs, sizeof st->descs);
    st->state = CONFIG_LOADED;
    if (ph_internal_env_asked("PHOBOS_STATS")) print_stats(m, c, &report);
    return PH_OK;
}

/* Config c (not loaded yet) goes to the driver on its own, as ptx (which
 * this frees). PH_ERR_MODULE: the driver refused it. */
static ph_status config_load_ptx(ph_module *m, int c, char *ptx)
{
    Jit *j = xcalloc(1, sizeof *j);
    ph_internal_jit_ptx(&rt->devices[m->device], m->ir->funcs[c]->name, ptx, j);
    free(ptx);
    ph_status s = ph_internal_config_take_jit(m, c, j);
    free(j);
    return s;
}

/* Config c's PTX goes to the driver on its own, the first time a launch
 * needs it. PH_ERR_MODULE: the driver refused it (now or before). */
ph_status ph_internal_config_load(ph_module *m, int c)
{
    Config *st = &m->state[c];
    if (st->state == CONFIG_LOADED) return PH_OK;
    if (st->state == CONFIG_REFUSED) return ph_internal_failf(PH_ERR_MODULE, "%s", st->why);
    char *ptx = NULL, err[PH_CONFIG_ERR_BYTES];
    bool from_cache;
    if (ph_internal_config_ptx(m, c, rt->devices[m->device].arch, &ptx, &from_cache, err, sizeof err))
        return ph_internal_failf(PH_ERR_COMPILE, "code generation failed: %s", err);
    return config_load_ptx(m, c, ptx);
}

