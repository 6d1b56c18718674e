/* load.c: which of a GPU launch's eligible configs are loaded, and how:
 * the one the autotuner already knows alone, or every one, those not
 * loaded yet generated and assembled at once on threads of their own
 * while the autotuner times each as soon as it is in. */
#include "load.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "error.h"
#include "generate.h"
#include "jit.h"
#include "parallel.h"

static PhRuntime *const rt = &ph_internal_runtime;

/* k could load none of its eligible configs: PH_ERR_MODULE with each
 * one's reason, as it was kept when the config left the eligible set. */
static ph_status none_loaded(const ph_kernel *k, const int *eligible, int ne)
{
    ph_internal_failf(PH_ERR_MODULE, "%s: no eligible config could be loaded: ", k->name);
    for (int i = 0; i < ne; i++) {
        const char *why = k->module->state[k->first + eligible[i]].why;
        ph_internal_fail_append("%s%s", i ? "; " : "", why ? why : "refused");
    }
    return PH_ERR_MODULE;
}

/* A batch's configs assembled where they are generated. */
typedef struct {
    const Device *device;
    const ph_module *m;
    const int *configs;
    Jit *jit;
} JitBatch;

static void jit_generated(void *batch, int i, const char *ptx)
{
    JitBatch *b = batch;
    ph_internal_jit_ptx(b->device, b->m->ir->funcs[b->configs[i]]->name, ptx, &b->jit[i]);
}

/* How many of the eligible configs are not loaded yet. */
static int unloaded(const ph_kernel *k, const int *eligible, int ne)
{
    int n = 0;
    for (int i = 0; i < ne; i++) n += k->module->state[k->first + eligible[i]].state == CONFIG_UNLOADED;
    return n;
}

/* A launch's eligible configs that are not loaded yet, generated at once
 * on threads of their own (as many as ph_internal_compile_threads says),
 * each given to the driver on the thread that generated it, so ptxas or
 * the driver assembles them at once too. The threads touch no state of
 * the runtime's; the launching thread keeps the lock and takes each
 * config once its thread is done with it, in the order they finish. */
typedef struct {
    ph_kernel *k;
    const int *eligible;
    int ne;
    int looked_at;      /* eligible[] seen up to here for configs loaded before, which come first */
    int n;              /* the configs generated: */
    int *todo, *at;     /* each one's config (of the module's) and its index into eligible[] */
    char **text;
    bool *from_cache;
    int *failed;
    char (*err)[PH_CONFIG_ERR_BYTES];
    Jit *jit;
    PtxBatch batch;
    JitBatch jits;
    PhParallel *loop;
    int threads;
    double start, last;   /* when the batch began, and when its last config so far was done */
    bool given;           /* the autotuner was given a config */
    int second, alone;    /* the second loaded, not given yet; the only one loaded; -1: none */
} Arrivals;

static void arrivals_start(Arrivals *a, ph_kernel *k, const int *eligible, int ne)
{
    ph_module *m = k->module;
    const Device *d = &rt->devices[m->device];
    *a = (Arrivals){.k = k, .eligible = eligible, .ne = ne, .n = unloaded(k, eligible, ne), .second = -1, .alone = -1};
    size_t n = (size_t)a->n;
    a->todo = xcalloc(n, sizeof *a->todo), a->at = xcalloc(n, sizeof *a->at);
    for (int i = 0, j = 0; i < ne; i++)
        if (m->state[k->first + eligible[i]].state == CONFIG_UNLOADED) a->at[j] = i, a->todo[j++] = k->first + eligible[i];
    a->text = xcalloc(n, sizeof *a->text), a->err = xcalloc(n, sizeof *a->err);
    a->from_cache = xcalloc(n, sizeof *a->from_cache), a->failed = xcalloc(n, sizeof *a->failed);
    a->jit = xcalloc(n, sizeof *a->jit);
    a->jits = (JitBatch){d, m, a->todo, a->jit};
    a->batch = (PtxBatch){m, a->todo, d->arch, a->text, a->from_cache, a->failed, a->err, NULL, jit_generated, &a->jits};
    ph_internal_ptx_batch_begin(&a->batch, a->n);
    a->threads = ph_internal_compile_threads();
    a->start = a->last = ph_internal_wall_ms();
    a->loop = ph_internal_parallel_start(a->n, a->threads, ph_internal_generate_one, &a->batch);
}

/* The next config a thread is done with (its index into todo[]), once it
 * is; -1 when every one was taken. */
static int arrival(Arrivals *a)
{
    int j = ph_internal_parallel_next(a->loop);
    if (j >= 0) a->last = ph_internal_wall_ms();
    return j;
}

/* The next config loaded (its index into eligible[], -1 when none is
 * left): those loaded before, then each as its thread is done with it,
 * taken as a config loaded alone is (one the driver refuses leaves the
 * eligible set, and is skipped). A failure to generate ends the tuning. */
static ph_status next_loaded(Arrivals *a, int *i)
{
    ph_module *m = a->k->module;
    while (a->looked_at < a->ne) {
        int e = a->looked_at++;
        if (m->state[a->k->first + a->eligible[e]].state == CONFIG_LOADED) {
            *i = e;
            return PH_OK;
        }
    }
    for (int j; (j = arrival(a)) >= 0;) {
        if (a->failed[j]) return ph_internal_failf(PH_ERR_COMPILE, "code generation failed: %s", a->err[j]);
        ph_status s = ph_internal_config_take_jit(m, a->todo[j], &a->jit[j]);
        if (s == PH_ERR_MODULE) continue;   /* for good, its reason kept */
        if (s) return s;
        *i = a->at[j];
        return PH_OK;
    }
    *i = -1;
    return PH_OK;
}

/* The autotuner's next config (a PhNextConfig), as next_loaded gives
 * them, but the first only once a second is loaded too: a config that
 * turns out to be the only one the driver accepts runs untimed (*alone),
 * as it would have had the refusals been known before. */
static ph_status next_arrival(void *arrivals, int *i)
{
    Arrivals *a = arrivals;
    ph_status s;
    if (a->given && a->second >= 0) {
        *i = a->second;
        a->second = -1;
        return PH_OK;
    }
    if (a->given) return next_loaded(a, i);
    if ((s = next_loaded(a, i)) || *i < 0 || (s = next_loaded(a, &a->second))) return s;
    if (a->second < 0) {
        a->alone = *i;
        *i = -1;
    }
    a->given = *i >= 0;
    return PH_OK;
}

/* Waits for the threads, after a tuning that returned s; the modules
 * assembled for configs it did not take (it failed) are unloaded. On a
 * failure to generate, the first in eligible order says why, whichever
 * finished first. */
static ph_status arrivals_end(Arrivals *a, ph_status s)
{
    for (int j; (j = arrival(a)) >= 0;)
        if (a->jit[j].done && !a->jit[j].r && !a->jit[j].too_big) ph_internal_driver()->ModuleUnload(a->jit[j].mod);
    ph_internal_parallel_end(a->loop);
    ph_internal_ptx_batch_end(&a->batch, a->n, a->threads, a->last - a->start);
    for (int j = 0; s == PH_ERR_COMPILE && j < a->n; j++)
        if (a->failed[j]) {
            s = ph_internal_failf(PH_ERR_COMPILE, "code generation failed: %s", a->err[j]);
            break;
        }
    for (int j = 0; j < a->n; j++) free(a->text[j]);
    free(a->todo), free(a->at), free(a->text), free(a->err), free(a->from_cache), free(a->failed), free(a->jit);
    return s;
}

/* A launch's first tuning, for eligible configs of which several are not
 * loaded yet: they are generated and assembled at once while the
 * autotuner times each one as soon as it is loaded (those loaded before
 * first), so the tuning ends about when the slowest config is in rather
 * than the time of all the timing later. The winner (or the only config
 * the driver accepted) is then eligible[0], alone, as load_only leaves
 * it; the configs the driver refused left the eligible set; none loaded
 * is PH_ERR_MODULE with every reason. */
static ph_status tune_as_loaded(ph_kernel *k, const PhTuneTarget *on, int *eligible, unsigned (*grids)[3], int *ne,
                                const ph_arg *args, int nargs)
{
    Arrivals a;
    arrivals_start(&a, k, eligible, *ne);
    int pick = -1;
    ph_status s = ph_internal_autotune_as_ready(k->tuner, on, eligible, grids, *ne, args, nargs, next_arrival, &a, &pick);
    s = arrivals_end(&a, s);
    if (s) return s;
    if (pick < 0) pick = a.alone;
    if (pick < 0) return none_loaded(k, eligible, *ne);
    eligible[0] = eligible[pick];
    memcpy(grids[0], grids[pick], sizeof *grids);
    *ne = 1;
    return PH_OK;
}

/* Loads the eligible configs of k (indices into its configs, with their
 * grids), at most one of them not loaded yet (generated where it loads),
 * and drops those the driver refuses; none left is PH_ERR_MODULE with
 * every reason. */
static ph_status load_eligible(ph_kernel *k, int *eligible, unsigned (*grids)[3], int *ne)
{
    int kept = 0;
    for (int i = 0; i < *ne; i++) {
        int c = k->first + eligible[i];
        if (k->module->state[c].state == CONFIG_REFUSED) continue;   /* for good, its reason kept */
        ph_status s = ph_internal_config_load(k->module, c);
        if (s == PH_ERR_MODULE) continue;
        if (s) return s;
        eligible[kept] = eligible[i];
        memcpy(grids[kept++], grids[i], sizeof *grids);
    }
    /* with none kept, nothing was moved: eligible[] still names every refused config */
    if (!kept) return none_loaded(k, eligible, *ne);
    *ne = kept;
    return PH_OK;
}

/* Keeps eligible[i] alone, loaded, when it loads: true. */
static bool load_only(ph_kernel *k, int *eligible, unsigned (*grids)[3], int *ne, int i, ph_status *s)
{
    *s = ph_internal_config_load(k->module, k->first + eligible[i]);
    if (*s) return false;
    eligible[0] = eligible[i];
    memcpy(grids[0], grids[i], sizeof *grids);
    *ne = 1;
    return true;
}

/* Loads what the launch needs of its eligible configs: the one the
 * autotuner already knows for these arguments, or with autotuning off the
 * first that loads, alone; else every one, to be timed, and when several
 * are not loaded yet, timed as they load (tune_as_loaded: the winner is
 * then the one left). A config the driver refuses leaves the eligible
 * set, as in load_eligible. */
ph_status ph_internal_load_needed(ph_kernel *k, const PhTuneTarget *on, int *eligible, unsigned (*grids)[3], int *ne,
                                  const ph_arg *args, int nargs)
{
    int pick = 0;
    ph_status s = PH_OK;
    if (*ne > 1 && !ph_internal_autotune_enabled()) {
        for (int i = 0; i < *ne; i++)
            if (load_only(k, eligible, grids, ne, i, &s) || s != PH_ERR_MODULE) return s;
        return none_loaded(k, eligible, *ne);
    }
    if (*ne > 1 && ph_internal_autotune_known(k->tuner, on, eligible, *ne, args, nargs, &pick) &&
        (load_only(k, eligible, grids, ne, pick, &s) || s != PH_ERR_MODULE))
        return s;
    if (unloaded(k, eligible, *ne) > 1) return tune_as_loaded(k, on, eligible, grids, ne, args, nargs);
    return load_eligible(k, eligible, grids, ne);
}

