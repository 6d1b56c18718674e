/* launch.c: ph_launch: the arguments checked (args.c), the configs that
 * accept them and their grids, then the launch on the runtime's target
 * (device.h's execution); and what a kernel's launches leave to ask. */
#include "phobos.h"

#include <stdio.h>
#include <string.h>

#include "args.h"
#include "device.h"
#include "error.h"
#include "module.h"

static PhRuntime *const rt = &ph_internal_runtime;

/* PH_ERR_NOT_ELIGIBLE, naming each of k's configs and why it refuses these arguments. */
static ph_status none_accepts(const ph_kernel *k, const ph_arg *args)
{
    ph_internal_failf(PH_ERR_NOT_ELIGIBLE, "%s: no config accepts these arguments: ", k->name);
    for (int i = 0; i < k->count; i++) {
        char why[512];
        ph_internal_ineligible(k->module->ir->funcs[k->first + i], args, why, sizeof why);
        ph_internal_fail_append("%s%s", i ? "; " : "", why);
    }
    return PH_ERR_NOT_ELIGIBLE;
}

/* A launch, the lock held. */
static ph_status launch_kernel(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs, CUstream stream)
{
    const IrFunc *f0 = k->module->ir->funcs[k->first];
    ph_status s = ph_internal_check_args(f0, args, nargs);
    if (s) return s;
    int *eligible = k->eligible, ne = 0;
    unsigned (*grids)[3] = k->grids;
    for (int i = 0; i < k->count; i++) {
        char why[512];
        if (!ph_internal_ineligible(k->module->ir->funcs[k->first + i], args, why, sizeof why)) eligible[ne++] = i;
    }
    if (!ne) s = none_accepts(k, args);
    const Device *d = rt->ready ? &rt->devices[ph_internal_module_device(k->module)] : NULL;
    /* the grid callback runs once per eligible config */
    for (int i = 0; i < ne && !s; i++) {
        int c = k->first + eligible[i];
        const Config *st = &k->module->state[c];
        s = ph_internal_grid_for(k->module->ir->funcs[c], st->meta_names, st->meta_values, d ? d->max_grid : NULL, grid,
                                 user, grids[i]);
    }
    if (!s && !rt->ready) s = ph_internal_failf(PH_ERR_STATE, NOT_READY);
    return s ? s : rt->exec->launch(k, eligible, grids, ne, args, nargs, stream);
}

ph_status ph_launch_stream(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs, void *stream)
{
    if (!k || !grid || (!args && nargs)) return ph_internal_failf(PH_ERR_INVALID, "null argument to ph_launch");
    if (ph_internal_locked())
        return ph_internal_failf(PH_ERR_STATE, "%s: ph_launch from inside a launch's grid callback", k->name);
    ph_internal_lock();
    ph_status s = launch_kernel(k, grid, user, args, nargs, stream);
    ph_internal_unlock();
    return s;
}

ph_status ph_launch(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs)
{
    return ph_launch_stream(k, grid, user, args, nargs, NULL);
}

const char *ph_kernel_last_config(const ph_kernel *k)
{
    if (!k) return NULL;
    ph_internal_lock();
    const char *name = k->last >= 0 ? k->module->ir->funcs[k->first + k->last]->name : NULL;
    ph_internal_unlock();
    return name;
}

/* Under the lock, as a launch. */
ph_status ph_kernel_stats(ph_kernel *k, const char *config, ph_stats *out)
{
    if (!k || !out) return ph_internal_failf(PH_ERR_INVALID, "null argument to ph_kernel_stats");
    ph_internal_lock();
    ph_status s = !rt->ready ? ph_internal_failf(PH_ERR_STATE, NOT_READY) : rt->exec->stats(k, config, out);
    ph_internal_unlock();
    return s;
}
