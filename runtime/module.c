/* module.c: modules and their kernels: a source compiled to the IR of
 * every config (pipeline.c), a kernel per name and one per config, each
 * with its launch scratch and its autotuner, and what a host asks of
 * them. Loading a config on a device is the target's (exec_gpu.c). */
#include "module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "autotune.h"
#include "base/util.h"
#include "cache.h"
#include "device.h"
#include "error.h"
#include "pipeline.h"

static PhRuntime *const rt = &ph_internal_runtime;

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
    k->params = xcalloc((size_t)n + 2 * CODEGEN_MAX_COPY_DESCS + 1, sizeof *k->params);
    k->values = xcalloc((size_t)n + 1, sizeof *k->values);
    k->nvalues = n;
    /* NULL when out of memory: launches then copy without descriptors */
    if (posix_memalign((void **)&k->maps, 64, 128 * CODEGEN_MAX_COPY_DESCS)) k->maps = NULL;
    for (int j = 0; j < CODEGEN_MAX_COPY_DESCS; j++) k->map_of[j].cfg = -1;   /* none built yet */
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
    free(k->maps);
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

int ph_internal_module_device(ph_module *m)
{
    if (m->generation != rt->generation || !rt->devices[m->device].ready) {
        for (int i = 0; i < m->ir->nfuncs; i++)
            if (m->state[i].state == CONFIG_LOADED) m->state[i].state = CONFIG_UNLOADED;
        m->device = ph_internal_thread_device();
        m->generation = rt->generation;
    }
    return m->device;
}

static ph_status compile_source(const char *name, const char *source, const char *path, ph_module **out)
{
    if (!out) return ph_internal_failf(PH_ERR_INVALID, "null module pointer");
    *out = NULL;
    char *diags = NULL;
    size_t len = 0;
    FILE *msgs = open_memstream(&diags, &len);
    IrModule *ir = ph_internal_source_ir(name, source, path, msgs);
    fclose(msgs);
    ph_status s = PH_OK;
    if (!ir) {
        bool unreadable = path && strstr(diags, "cannot open");
        s = ph_internal_failf(unreadable ? PH_ERR_NOT_FOUND : PH_ERR_COMPILE, "%s", diags && *diags ? diags : "compilation failed");
    } else {
        s = module_from_ir(ir, ph_internal_source_key(path, source), out);
        (*out)->source = xstrdup(path ? path : name);
        ph_internal_lock();
        if (rt->ready) ph_internal_module_device(*out);
        ph_internal_unlock();
    }
    free(diags);
    return s;
}

ph_status ph_module_load_file(const char *path, ph_module **out)
{
    if (!path) return ph_internal_failf(PH_ERR_INVALID, "null path");
    return compile_source(NULL, NULL, path, out);
}

ph_status ph_module_load_string(const char *name, const char *source, ph_module **out)
{
    if (!source) return ph_internal_failf(PH_ERR_INVALID, "null source");
    return compile_source(name ? name : "<string>", source, NULL, out);
}

void ph_module_free(ph_module *m)
{
    if (!m) return;
    int nconfigs = m->ir->nfuncs;
    ph_internal_lock();
    /* configs loaded before a ph_shutdown went with their context */
    if (rt->ready && m->generation == rt->generation) rt->exec->release(m);
    ph_internal_unlock();
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

/* The kernel of m whose name is nearest to a misspelt one (an edit or two), or NULL. */
static const char *kernel_near(const ph_module *m, const char *name)
{
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; i < m->nkernels; i++) {
        int d = edit_distance(name, m->kernels[i].name);
        if (d < best_d && d < (int)strlen(name)) best = m->kernels[i].name, best_d = d;
    }
    return best;
}

ph_status ph_kernel_get(ph_module *m, const char *name, ph_kernel **out)
{
    if (!m || !name || !out) return ph_internal_failf(PH_ERR_INVALID, "null argument to ph_kernel_get");
    for (int i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].name, name)) { *out = &m->kernels[i]; return PH_OK; }
    /* an entry name picks one config, with no autotuning */
    for (int i = 0; i < m->ir->nfuncs; i++)
        if (!strcmp(m->configs[i].name, name)) { *out = &m->configs[i]; return PH_OK; }
    const char *near = kernel_near(m, name);
    if (near) return ph_internal_failf(PH_ERR_NOT_FOUND, "no kernel named '%s' in this module; did you mean '%s'?", name, near);
    return ph_internal_failf(PH_ERR_NOT_FOUND, "no kernel named '%s' in this module", name);
}

int ph_module_kernel_count(const ph_module *m) { return m ? m->nkernels : -1; }

const char *ph_module_kernel_name(const ph_module *m, int i)
{
    return m && i >= 0 && i < m->nkernels ? m->kernels[i].name : NULL;
}

int ph_kernel_param_count(const ph_kernel *k)
{
    return k ? k->module->ir->funcs[k->first]->nparams : -1;
}

ph_status ph_kernel_param(const ph_kernel *k, int i, ph_param *out)
{
    if (!k || !out) return ph_internal_failf(PH_ERR_INVALID, "null argument to ph_kernel_param");
    const IrFunc *f = k->module->ir->funcs[k->first];
    if (i < 0 || i >= f->nparams) return ph_internal_failf(PH_ERR_INVALID, "%s has no parameter %d (it has %d)", k->name, i, f->nparams);
    const IrParam *p = &f->params[i];
    *out = (ph_param){p->name, ph_internal_arg_kind(p),
                      ir_dtype_name(p->dt), p->is_tensor ? p->rank : 0, {NULL, NULL, NULL, NULL}, {0, 0, 0, 0}};
    for (int a = 0; a < out->rank; a++) {
        out->dim_names[a] = p->dim_name[a];
        out->dim_values[a] = p->dim_name[a] ? 0 : p->dim_value[a];
    }
    return PH_OK;
}

static ph_status set_reset(ph_kernel *k, const char *param, IrTuneReset how, const char *call)
{
    if (!k || !param) return ph_internal_failf(PH_ERR_INVALID, "null argument to %s", call);
    return ph_internal_tuner_set_reset(k->tuner, param, how);
}

ph_status ph_kernel_set_restore(ph_kernel *k, const char *param) { return set_reset(k, param, IR_TUNE_RESTORE, "ph_kernel_set_restore"); }
ph_status ph_kernel_set_zero(ph_kernel *k, const char *param) { return set_reset(k, param, IR_TUNE_ZERO, "ph_kernel_set_zero"); }

ph_status ph_internal_stats_config(const ph_kernel *k, const char *config, int *c)
{
    *c = -1;
    if (config) {
        for (int i = 0; i < k->count && *c < 0; i++)
            if (!strcmp(k->module->ir->funcs[k->first + i]->name, config)) *c = k->first + i;
        if (*c < 0) return ph_internal_failf(PH_ERR_NOT_FOUND, "%s has no config named '%s'", k->name, config);
    } else if (k->last >= 0 || k->count == 1) {
        *c = k->first + (k->last >= 0 ? k->last : 0);
    } else {
        return ph_internal_failf(PH_ERR_INVALID, "%s has %d configs and none was launched yet: name one", k->name, k->count);
    }
    return PH_OK;
}
