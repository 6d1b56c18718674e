/* autotune.c: which of a kernel's eligible configs a launch runs. With
 * autotuning on (the default; PHOBOS_AUTOTUNE=0 or ph_set_autotune(0)
 * turns it off, and the first eligible config runs), the winner already
 * known for the launch's tensor dims, in memory or on disk beside the PTX
 * cache; failing that, each config timed on the real arguments as it
 * becomes ready (on a first launch, while the others are still being
 * compiled): warm-up, then the median of PH_TUNE_RUNS runs timed with CUDA
 * events, the L2 cache flushed before each, the tensors a kernel updates
 * in place (@ph.autotune_restore, @ph.autotune_zero) put back before
 * each; then the few closest to the fastest timed again, in turns. */
#include "autotune.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ir/ir.h"
#include "base/hash.h"
#include "base/util.h"
#include "cache.h"
#include "error.h"

/* The winner for one set of tensor dims (every tensor argument's two). */
typedef struct Winner {
    struct Winner *next;
    int config;
    int ndims;
    int64_t dims[];   /* ndims of them */
} Winner;

struct PhTuner {
    IrFunc *const *configs;   /* the kernel's, configs[0] its first */
    int count;
    int nparams;
    IrTuneReset *reset;       /* per parameter: as the decorators say, or as the API set it */
    CUdeviceptr *saved;       /* per parameter: a restored tensor's contents, while tuning */
    uint64_t space;           /* the source and the configs' entry names; 0: winners stay in memory */
    Winner *winners;
    float *ms;                /* while tuning, per eligible config: its first median (INFINITY: none) */
};

PhTuner *ph_internal_tuner_new(IrFunc *const *configs, int count, uint64_t source_key)
{
    PhTuner *t = xcalloc(1, sizeof *t);
    const IrFunc *f = configs[0];
    t->configs = configs;
    t->count = count;
    t->nparams = f->nparams;
    t->reset = xcalloc((size_t)f->nparams + 1, sizeof *t->reset);
    t->saved = xcalloc((size_t)f->nparams + 1, sizeof *t->saved);
    t->ms = xcalloc((size_t)count + 1, sizeof *t->ms);
    for (int i = 0; i < f->nparams; i++) t->reset[i] = f->params[i].tune_reset;
    if (source_key) {
        t->space = source_key;
        for (int i = 0; i < count; i++) t->space = fnv1a(t->space, configs[i]->name, strlen(configs[i]->name) + 1);
        t->space += !t->space;
    }
    return t;
}

void ph_internal_tuner_free(PhTuner *t)
{
    if (!t) return;
    for (Winner *w = t->winners, *n; w; w = n) { n = w->next; free(w); }
    free(t->reset);
    free(t->saved);
    free(t->ms);
    free(t);
}

/* ---- the switches ---- */

static int autotune_setting = -1, verbose_setting = -1;   /* -1: as the environment says */
static FILE *log_stream;

void ph_set_autotune(int on) { autotune_setting = on < 0 ? -1 : on != 0; }
void ph_set_autotune_verbose(int on) { verbose_setting = on < 0 ? -1 : on != 0; }
void ph_internal_autotune_log(FILE *out) { log_stream = out; }

bool ph_internal_autotune_enabled(void)
{
    return autotune_setting >= 0 ? autotune_setting : ph_internal_env_switch(getenv("PHOBOS_AUTOTUNE"), true);
}

typedef enum { QUIET, ON_A_TERMINAL, ASKED } Verbosity;

/* Progress is shown when asked for (ph_set_autotune_verbose,
 * PHOBOS_AUTOTUNE_VERBOSE), else on a terminal. */
static Verbosity verbosity(FILE *out)
{
    if (verbose_setting >= 0) return verbose_setting ? ASKED : QUIET;
    const char *env = getenv("PHOBOS_AUTOTUNE_VERBOSE");
    if (ph_internal_env_switch(env, false)) return ASKED;
    if (!ph_internal_env_switch(env, true)) return QUIET;
    return isatty(fileno(out)) ? ON_A_TERMINAL : QUIET;
}

/* ---- restored and zeroed tensors ---- */

/* The bytes from a tensor's first element to past its last: its elements
 * for a contiguous one; for a rank-3/4 view, the span its strides reach. */
static size_t tensor_bytes(const IrParam *p, const ph_arg *a)
{
    size_t elem = (size_t)ir_dtype_bytes(p->dt);
    bool strided = false;
    for (int i = 0; p->rank > 2 && i < p->rank; i++) strided = strided || a->strides[i];
    size_t n = 1;
    if (!strided) {
        for (int i = 0; i < p->rank; i++) n *= (size_t)a->dims[i];
    } else {
        for (int i = 0; i < p->rank; i++) n += (size_t)(a->dims[i] - 1) * (size_t)a->strides[i];
    }
    return n * elem;
}

ph_status ph_internal_tuner_set_reset(PhTuner *t, const char *param, IrTuneReset how)
{
    const IrFunc *f = t->configs[0];
    for (int i = 0; i < f->nparams; i++) {
        if (strcmp(f->params[i].name, param)) continue;
        if (!f->params[i].is_tensor)
            return ph_internal_failf(PH_ERR_INVALID, "%s: parameter '%s' is a scalar; only a tensor is restored or zeroed",
                                     f->kernel, param);
        t->reset[i] = how;
        return PH_OK;
    }
    return ph_internal_failf(PH_ERR_INVALID, "%s has no parameter named '%.200s'", f->kernel, param);
}

/* ---- timing ---- */

/* What a tuning holds on the device while it runs. */
typedef struct {
    const PhDriver *cu;
    CUstream stream;        /* the launch's: every copy, flush and event goes there */
    CUevent start, stop;
    CUdeviceptr flush;      /* as many bytes as the L2 cache holds; 0: no flush */
    size_t flush_bytes;
} Bench;

static ph_status check(CUresult r, const char *what) { return r ? ph_internal_cuda_fail(r, what) : PH_OK; }

/* Copies each restored tensor aside, into scratch device memory. */
static ph_status save_outputs(Bench *b, PhTuner *t, const ph_arg *args)
{
    const IrFunc *f = t->configs[0];
    ph_status s = PH_OK;
    for (int i = 0; i < t->nparams && !s; i++) {
        if (t->reset[i] != IR_TUNE_RESTORE) continue;
        size_t bytes = tensor_bytes(&f->params[i], &args[i]);
        s = check(b->cu->MemAlloc(&t->saved[i], bytes), "cuMemAlloc (scratch for a tensor the autotuner restores)");
        if (!s) s = check(b->cu->MemcpyDtoDAsync(t->saved[i], args[i].ptr, bytes, b->stream), "cuMemcpyDtoDAsync (saving a tensor before tuning)");
    }
    return s;
}

/* Puts the restored tensors back as they were saved, and zeroes the zeroed. */
static ph_status reset_outputs(Bench *b, const PhTuner *t, const ph_arg *args)
{
    const IrFunc *f = t->configs[0];
    ph_status s = PH_OK;
    for (int i = 0; i < t->nparams && !s; i++) {
        size_t bytes = tensor_bytes(&f->params[i], &args[i]);
        if (t->reset[i] == IR_TUNE_RESTORE && t->saved[i])
            s = check(b->cu->MemcpyDtoDAsync(args[i].ptr, t->saved[i], bytes, b->stream), "cuMemcpyDtoDAsync (restoring a tensor)");
        else if (t->reset[i] == IR_TUNE_ZERO)
            s = check(b->cu->MemsetD8Async(args[i].ptr, 0, bytes, b->stream), "cuMemsetD8Async (zeroing a tensor)");
    }
    return s;
}

/* Events, the L2 flush buffer and the saved tensors. */
static ph_status bench_open(Bench *b, PhTuner *t, const PhTuneTarget *on, const ph_arg *args)
{
    b->cu = ph_internal_driver();
    b->stream = on->stream;
    ph_status s = check(b->cu->EventCreate(&b->start, 0), "cuEventCreate");
    if (!s) s = check(b->cu->EventCreate(&b->stop, 0), "cuEventCreate");
    int l2 = 0;
    if (!s && !b->cu->DeviceGetAttribute(&l2, ATTR_L2_CACHE_SIZE, on->device) && l2 > 0) {
        b->flush_bytes = (size_t)l2;
        s = check(b->cu->MemAlloc(&b->flush, b->flush_bytes), "cuMemAlloc (the L2 flush buffer)");
    }
    if (!s) s = save_outputs(b, t, args);
    return s;
}

static void bench_close(Bench *b, PhTuner *t)
{
    for (int i = 0; i < t->nparams; i++)
        if (t->saved[i]) { b->cu->MemFree(t->saved[i]); t->saved[i] = 0; }
    if (b->flush) b->cu->MemFree(b->flush);
    if (b->start) b->cu->EventDestroy(b->start);
    if (b->stop) b->cu->EventDestroy(b->stop);
}

static float median(float *ms, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) { float x = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = x; }
    return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

/* One run of config cfg: the outputs put back, then, when timed, the L2
 * cache flushed (writing a buffer its size evicts what the last run left
 * there) and the launch between two events. */
static ph_status run_config(Bench *b, const PhTuner *t, const PhTuneTarget *on, int cfg, const unsigned g[3], const ph_arg *args, float *ms)
{
    ph_status s = reset_outputs(b, t, args);
    if (!ms) return s ? s : on->launch(on->ctx, cfg, g, args);
    if (!s && b->flush) s = check(b->cu->MemsetD8Async(b->flush, 0, b->flush_bytes, b->stream), "cuMemsetD8Async (flushing the L2 cache)");
    if (!s) s = check(b->cu->EventRecord(b->start, b->stream), "cuEventRecord");
    if (!s) s = on->launch(on->ctx, cfg, g, args);
    if (!s) s = check(b->cu->EventRecord(b->stop, b->stream), "cuEventRecord");
    if (!s) s = check(b->cu->EventSynchronize(b->stop), "the kernel (cuEventSynchronize)");
    if (!s) s = check(b->cu->EventElapsedTime(ms, b->start, b->stop), "cuEventElapsedTime");
    return s;
}

/* Config cfg's time: the median of PH_TUNE_RUNS timed runs after the
 * warm-ups; or, when its first timed run takes longer than give_up, that
 * run alone (*stopped): the config cannot win, the runs left would be
 * wasted. */
static ph_status time_config(Bench *b, const PhTuner *t, const PhTuneTarget *on, int cfg, const unsigned g[3], const ph_arg *args,
                             float give_up, float *ms, bool *stopped)
{
    float runs[PH_TUNE_RUNS];
    ph_status s = PH_OK;
    *stopped = false;
    for (int i = 0; i < PH_TUNE_WARMUPS && !s; i++) s = run_config(b, t, on, cfg, g, args, NULL);
    for (int i = 0; i < PH_TUNE_RUNS && !s; i++) {
        s = run_config(b, t, on, cfg, g, args, &runs[i]);
        if (!s && !i && runs[0] > give_up) {
            *ms = runs[0];
            *stopped = true;
            return PH_OK;
        }
    }
    if (!s) *ms = median(runs, PH_TUNE_RUNS);
    return s;
}

/* ---- a tuning ---- */

/* A tuning under way: the kernel and its eligible configs, what the
 * timing holds on the device (opened with the first config to time), and
 * where its progress goes. */
typedef struct {
    PhTuner *t;
    const PhTuneTarget *on;
    const int *eligible;
    unsigned (*grids)[3];
    int ne;
    const ph_arg *args;
    Bench b;
    bool began, opened;     /* bench_open was called; it succeeded */
    int median_of;          /* how many runs the winner's time is the median of */
    FILE *out;
    Verbosity v;
} Tuning;

static const char *config_name(const PhTuner *t, int cfg) { return t->configs[cfg]->name; }

/* On a terminal one line, rewritten as configs are timed; elsewhere a line
 * per config timed, with its time (ms < 0: its timing begins), and when it
 * was stopped after its first run, why. pass is "" for the first timing,
 * "again " for the second; config i (of eligible[]) is n of `of` in it. */
static void progress(const Tuning *u, const char *pass, int n, int of, int i, float ms, bool stopped, float best)
{
    if (u->v == QUIET) return;
    const char *kernel = u->t->configs[0]->kernel;
    if (isatty(fileno(u->out))) {
        if (ms < 0) fprintf(u->out, "\rphobos: tuning %s (%d configs) %s%d/%d ...\033[K", kernel, u->ne, pass, n, of);
    } else if (ms >= 0) {
        fprintf(u->out, "phobos: tuning %s (%d configs) %s%d/%d %s: %.4f ms", kernel, u->ne, pass, n, of,
                config_name(u->t, u->eligible[i]), ms);
        if (stopped) fprintf(u->out, ", its first run, over %d times the best so far (%.4f ms): stopped", PH_TUNE_PRUNE, best);
        fputc('\n', u->out);
    }
    fflush(u->out);
}

static void report(const Tuning *u, int winner, float ms)
{
    if (u->v == QUIET) return;
    bool tty = isatty(fileno(u->out));
    fprintf(u->out, "%sphobos: tuned %s (%d configs): %s, %.4f ms (median of %d runs)%s\n", tty ? "\r" : "",
            u->t->configs[0]->kernel, u->ne, config_name(u->t, winner), ms, u->median_of, tty ? "\033[K" : "");
    fflush(u->out);
}

static Tuning tuning(PhTuner *t, const PhTuneTarget *on, const int *eligible, unsigned (*grids)[3], int ne, const ph_arg *args)
{
    FILE *out = log_stream ? log_stream : stderr;
    return (Tuning){.t = t, .on = on, .eligible = eligible, .grids = grids, .ne = ne, .args = args, .out = out, .v = verbosity(out),
                    .median_of = PH_TUNE_RUNS};
}

/* Config i (of eligible[]) timed, the device's scratch opened first when
 * it is the first. */
static ph_status time_eligible(Tuning *u, int i, float give_up, float *ms, bool *stopped)
{
    if (!u->began) {
        u->began = true;
        ph_status s = bench_open(&u->b, u->t, u->on, u->args);
        if (s) return s;
        u->opened = true;
    }
    return time_config(&u->b, u->t, u->on, u->eligible[i], u->grids[i], u->args, give_up, ms, stopped);
}

/* Each config next gives, timed as it comes: its median in t->ms[] (none
 * for one stopped after its first run, over PH_TUNE_PRUNE times the best
 * median so far), the fastest in *pick and *best. */
static ph_status first_timing(Tuning *u, PhNextConfig next, void *ctx, int *pick, float *best)
{
    for (int i = 0; i < u->ne; i++) u->t->ms[i] = INFINITY;
    ph_status s;
    int i, n = 0;
    while (!(s = next(ctx, &i)) && i >= 0) {
        float ms = 0;
        bool stopped;
        progress(u, "", ++n, u->ne, i, -1, false, 0);
        if ((s = time_eligible(u, i, *best * PH_TUNE_PRUNE, &ms, &stopped))) return s;
        progress(u, "", n, u->ne, i, ms, stopped, *best);
        if (stopped) continue;
        u->t->ms[i] = ms;
        if (ms < *best) { *best = ms; *pick = i; }
    }
    return s;
}

/* The configs whose first median is within PH_TUNE_CLOSE_PERCENT of best,
 * the PH_TUNE_RETIMED fastest of them (on a tie the first), in eligible
 * order: how many, in close[]. */
static int close_to(const Tuning *u, float best, int *close)
{
    const float *ms = u->t->ms;
    int n = 0;
    for (int i = 0; i < u->ne; i++) {
        if (!(ms[i] <= best * (1 + PH_TUNE_CLOSE_PERCENT / 100.0))) continue;
        if (n == PH_TUNE_RETIMED) {   /* i replaces the slowest kept (the last of equals), when faster */
            int slowest = 0;
            for (int j = 1; j < n; j++) slowest = ms[close[j]] >= ms[close[slowest]] ? j : slowest;
            if (!(ms[i] < ms[close[slowest]])) continue;
            memmove(&close[slowest], &close[slowest + 1], (size_t)(n - 1 - slowest) * sizeof *close);
            n--;
        }
        close[n++] = i;
    }
    return n;
}

/* The first timing may have run while other threads compiled the configs
 * still to come, LLVM and ptxas on every core: the timing thread can lose
 * its CPU between recording a run's start event and launching the kernel,
 * and the GPU's clock runs on meanwhile. And a GPU at its power limit
 * moves its clock by a quarter within a tenth of a second (an H100 under
 * attention: 1335 to 1980 MHz, nvidia-smi's SW power cap), so seven runs
 * of one config, tens of milliseconds, see whatever part of that swing
 * they fall in. So when several configs are close to the fastest, those
 * are timed again once every config is in and nothing else runs, in
 * turns: each round runs every one of them once (in the opposite order
 * the next round), so each sees the same clocks, and the medians of their
 * PH_TUNE_ROUNDS runs decide (on a tie, the first in eligible order). One
 * further behind is taken to be slower in earnest. */
static ph_status second_timing(Tuning *u, int *pick, float *best)
{
    int close[PH_TUNE_RETIMED], n = close_to(u, *best, close);
    if (n < 2) return PH_OK;   /* no other is close: the first timing stands */
    float runs[PH_TUNE_RETIMED][PH_TUNE_ROUNDS];
    ph_status s = PH_OK;
    for (int j = 0; j < n && !s; j++) {
        progress(u, "again ", j + 1, n, close[j], -1, false, 0);
        for (int w = 0; w < PH_TUNE_WARMUPS && !s; w++) s = run_config(&u->b, u->t, u->on, u->eligible[close[j]], u->grids[close[j]], u->args, NULL);
    }
    for (int r = 0; r < PH_TUNE_ROUNDS && !s; r++)
        for (int k = 0; k < n && !s; k++) {
            int j = r % 2 ? n - 1 - k : k;
            s = run_config(&u->b, u->t, u->on, u->eligible[close[j]], u->grids[close[j]], u->args, &runs[j][r]);
        }
    if (s) return s;
    *best = INFINITY;
    u->median_of = PH_TUNE_ROUNDS;
    for (int j = 0; j < n; j++) {
        float ms = median(runs[j], PH_TUNE_ROUNDS);
        progress(u, "again ", j + 1, n, close[j], ms, false, 0);
        if (ms < *best) { *best = ms; *pick = close[j]; }
    }
    return PH_OK;
}

/* Times each config next gives, as it gives them, then the closest again;
 * the fastest's index into eligible[] in *pick, -1 when next gave none.
 * The outputs are put back for the launch that follows. */
static ph_status tune(Tuning *u, PhNextConfig next, void *ctx, int *pick, float *best)
{
    *pick = -1;
    *best = INFINITY;
    ph_status s = first_timing(u, next, ctx, pick, best);
    if (!s && *pick >= 0) s = second_timing(u, pick, best);
    ph_status back = u->opened ? reset_outputs(&u->b, u->t, u->args) : PH_OK;
    /* the scratch is freed only once the stream has used it */
    if (u->opened && u->b.stop && !u->b.cu->EventRecord(u->b.stop, u->b.stream)) u->b.cu->EventSynchronize(u->b.stop);
    if (u->began) bench_close(&u->b, u->t);
    if (!s && !back && *pick >= 0) report(u, u->eligible[*pick], *best);
    else if ((s || back) && u->v != QUIET && isatty(fileno(u->out))) fputc('\n', u->out);   /* end the line the failure left */
    return s ? s : back;
}

/* The eligible configs in order, all loaded: a tuning's configs when a
 * launch found them so. */
typedef struct {
    int next, n;
} InOrder;

static ph_status in_order(void *ctx, int *i)
{
    InOrder *o = ctx;
    *i = o->next < o->n ? o->next++ : -1;
    return PH_OK;
}

/* ---- winners in memory, by the dims of every tensor argument and the
 * values of the key scalars (@ph.autotune_key) ---- */

static bool is_key_scalar(const IrFunc *f, const ph_arg *args, int i)
{
    return args[i].kind != PH_ARG_TENSOR && i < f->nparams && f->params[i].tune_key;
}

/* An integer scalar argument's value (an i64 is held in dims[0]: phobos.h). */
static int64_t scalar_value(const ph_arg *a) { return a->kind == PH_ARG_I64 ? a->dims[0] : a->i32; }

/* What a winner is kept for, into key (when not NULL): each tensor's four
 * dims, then each key scalar's value; how many. */
static int key_values(const PhTuner *t, const ph_arg *args, int nargs, int64_t *key)
{
    int n = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == PH_ARG_TENSOR) {
            for (int a = 0; a < 4; a++, n++)
                if (key) key[n] = args[i].dims[a];
        } else if (is_key_scalar(t->configs[0], args, i)) {
            if (key) key[n] = scalar_value(&args[i]);
            n++;
        }
    return n;
}

static bool winner_for(const PhTuner *t, const Winner *w, const ph_arg *args, int nargs)
{
    int n = 0;   /* key_values' order, compared in place: a tuned launch allocates nothing */
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == PH_ARG_TENSOR) {
            for (int a = 0; a < 4; a++, n++)
                if (n >= w->ndims || w->dims[n] != args[i].dims[a]) return false;
        } else if (is_key_scalar(t->configs[0], args, i)) {
            if (n >= w->ndims || w->dims[n] != scalar_value(&args[i])) return false;
            n++;
        }
    return n == w->ndims;
}

static void remember(PhTuner *t, const ph_arg *args, int nargs, int config)
{
    int n = key_values(t, args, nargs, NULL);
    Winner *w = xcalloc(1, sizeof *w + (size_t)n * sizeof *w->dims);
    w->ndims = key_values(t, args, nargs, w->dims);
    w->config = config;
    w->next = t->winners;
    t->winners = w;
}

/* Whether config is eligible; its index into eligible[] in *pick. */
static bool eligible_index(const int *eligible, int ne, int config, int *pick)
{
    for (int i = 0; i < ne; i++)
        if (eligible[i] == config) { *pick = i; return true; }
    return false;
}

static bool known_winner(const PhTuner *t, const int *eligible, int ne, const ph_arg *args, int nargs, int *pick)
{
    for (const Winner *w = t->winners; w; w = w->next)
        if (winner_for(t, w, args, nargs)) return eligible_index(eligible, ne, w->config, pick);
    return false;
}

/* ---- winners on disk ----
 * A file per key, in the PTX cache's folder, named by the key's hash: the
 * key's lines, then "winner ENTRY" and the time it took. */

char *ph_internal_tune_key(const IrFunc *f, uint64_t space, const ph_arg *args, int nargs, const char *device)
{
    char *key = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&key, &len);
    if (!out) return NULL;
    fprintf(out, "phobos autotune 1\nkernel %s\nspace %016llx\ndims", f->kernel, (unsigned long long)space);
    for (int i = 0; i < nargs && i < f->nparams; i++) {
        if (!f->params[i].is_tensor) continue;
        fprintf(out, " %lld", (long long)args[i].dims[0]);
        for (int a = 1; a < f->params[i].rank; a++) fprintf(out, "x%lld", (long long)args[i].dims[a]);
    }
    bool keyed = false;   /* the line only where the kernel has key scalars: other keys stay as they were */
    for (int i = 0; i < nargs && i < f->nparams; i++)
        if (is_key_scalar(f, args, i)) {
            fprintf(out, "%s %s=%lld", keyed ? "" : "\nvalues", f->params[i].name,
                    (long long)scalar_value(&args[i]));
            keyed = true;
        }
    fprintf(out, "\ndevice %s\nbuild %s\n", device, ph_internal_build_id());
    fclose(out);
    return key;
}

bool ph_internal_tune_path(const char *key, char *path, size_t n)
{
    char folder[1100];
    if (!ph_internal_cache_folder(folder, sizeof folder)) return false;
    uint64_t h = fnv1a(FNV1A_START, key, strlen(key));
    return (size_t)snprintf(path, n, "%s/%016llx.tune", folder, (unsigned long long)h) < n;
}

bool ph_internal_tune_read(const char *path, const char *key, char *winner, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t keylen = strlen(key), cap = keylen + 512;
    char *text = xcalloc(cap + 1, 1);
    size_t len = fread(text, 1, cap, f);
    fclose(f);
    bool ok = len > keylen && !memcmp(text, key, keylen) && !strncmp(text + keylen, "winner ", 7);
    if (ok) {
        const char *name = text + keylen + 7;
        size_t nlen = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        ok = nlen && nlen < n && name[nlen] == '\n';
        if (ok) snprintf(winner, n, "%.*s", (int)nlen, name);
    }
    free(text);
    return ok;
}

bool ph_internal_tune_write(const char *path, const char *key, const char *winner, float ms)
{
    static unsigned serial;
    char tmp[1300];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), serial++) >= sizeof tmp) return false;
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    bool ok = fprintf(f, "%swinner %s\nmedian %.6f ms\n", key, winner, ms) > 0;
    ok = !fclose(f) && ok;
    if (ok && !rename(tmp, path)) return true;   /* written whole, or not at all */
    remove(tmp);
    return false;
}

/* The winner a file holds for key, when it is one of the eligible configs. */
static bool stored_winner(const PhTuner *t, const char *path, const char *key, const int *eligible, int ne, int *pick)
{
    char name[1100];
    if (!ph_internal_tune_read(path, key, name, sizeof name)) return false;
    for (int c = 0; c < t->count; c++)
        if (!strcmp(config_name(t, c), name)) return eligible_index(eligible, ne, c, pick);
    return false;
}

/* ---- the choice ---- */

/* The key of the winner for these arguments and its file's path, when
 * the cache is on, in *key (malloc'd) and path; else *key is NULL. */
static void winner_file(const PhTuner *t, const PhTuneTarget *on, const ph_arg *args, int nargs, char **key, char *path, size_t n)
{
    *key = NULL;
    bool on_disk = t->space && ph_internal_cache_folder(path, n);   /* the cache is on */
    if (on_disk) *key = ph_internal_tune_key(t->configs[0], t->space, args, nargs, on->device_name);
    on_disk = *key && ph_internal_tune_path(*key, path, n);
    if (!on_disk) {
        free(*key);
        *key = NULL;
    }
}

/* The winner on disk for these arguments, remembered when found. The
 * key and the file's path, when the cache is on, in *key and path. */
static bool disk_winner(PhTuner *t, const PhTuneTarget *on, const int *eligible, int ne, const ph_arg *args, int nargs, int *pick,
                        char **key, char *path, size_t n)
{
    winner_file(t, on, args, nargs, key, path, n);
    if (!*key || !stored_winner(t, path, *key, eligible, ne, pick)) return false;
    FILE *out = log_stream ? log_stream : stderr;
    if (verbosity(out) == ASKED)
        fprintf(out, "phobos: %s: %s, as tuned before (%s)\n", t->configs[0]->kernel, config_name(t, eligible[*pick]), path);
    remember(t, args, nargs, eligible[*pick]);
    return true;
}

/* A tuning's winner, config, kept in memory for these arguments and, when
 * the cache is on (key), on disk. */
static void keep_winner(PhTuner *t, const ph_arg *args, int nargs, int config, const char *key, const char *path, float ms)
{
    remember(t, args, nargs, config);
    if (key) ph_internal_tune_write(path, key, config_name(t, config), ms);
}

bool ph_internal_autotune_known(PhTuner *t, const PhTuneTarget *on, const int *eligible, int ne, const ph_arg *args, int nargs, int *pick)
{
    if (known_winner(t, eligible, ne, args, nargs, pick)) return true;
    char path[1200], *key;
    bool found = disk_winner(t, on, eligible, ne, args, nargs, pick, &key, path, sizeof path);
    free(key);
    return found;
}

ph_status ph_internal_autotune(PhTuner *t, const PhTuneTarget *on, const int *eligible, unsigned (*grids)[3], int ne,
                               const ph_arg *args, int nargs, int *pick)
{
    *pick = 0;
    if (!ph_internal_autotune_enabled() || known_winner(t, eligible, ne, args, nargs, pick)) return PH_OK;
    char path[1200], *key;
    if (disk_winner(t, on, eligible, ne, args, nargs, pick, &key, path, sizeof path)) {
        free(key);
        return PH_OK;
    }
    float ms = 0;
    InOrder all = {0, ne};
    Tuning u = tuning(t, on, eligible, grids, ne, args);
    ph_status s = tune(&u, in_order, &all, pick, &ms);
    if (!s) keep_winner(t, args, nargs, eligible[*pick], key, path, ms);
    free(key);
    return s;
}

ph_status ph_internal_autotune_as_ready(PhTuner *t, const PhTuneTarget *on, const int *eligible, unsigned (*grids)[3], int ne,
                                        const ph_arg *args, int nargs, PhNextConfig next, void *ctx, int *pick)
{
    char path[1200], *key;
    winner_file(t, on, args, nargs, &key, path, sizeof path);
    float ms = 0;
    Tuning u = tuning(t, on, eligible, grids, ne, args);
    ph_status s = tune(&u, next, ctx, pick, &ms);
    if (!s && *pick >= 0) keep_winner(t, args, nargs, eligible[*pick], key, path, ms);
    free(key);
    return s;
}
