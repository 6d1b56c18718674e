/* gpubench.c: timing for the GPU benchmarks, as gpubench.h describes. The
 * events come from the driver itself, opened here as the runtime opens it
 * (dlopen: the bench starts, and skips, on a machine without one); they are
 * recorded on the legacy default stream, where ph_launch and ph_memset8 put
 * their work, in the context ph_init made current. */
#include "gpubench.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/half.h"

typedef int CUresult;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;

typedef struct {
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
} Events;

struct GpuBench {
    Events cu;
    CUevent start, stop;
    ph_devptr flush;
};

int gpubench_attention_reps(int64_t n_ctx) { return n_ctx <= 4096 ? 30 : 20; }

static int load_events(Events *cu)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    *(void **)&cu->EventCreate = dlsym(lib, "cuEventCreate");
    *(void **)&cu->EventRecord = dlsym(lib, "cuEventRecord");
    *(void **)&cu->EventSynchronize = dlsym(lib, "cuEventSynchronize");
    *(void **)&cu->EventDestroy = dlsym(lib, "cuEventDestroy_v2");
    *(void **)&cu->EventElapsedTime = dlsym(lib, "cuEventElapsedTime_v2");
    if (!cu->EventElapsedTime) *(void **)&cu->EventElapsedTime = dlsym(lib, "cuEventElapsedTime");
    return cu->EventCreate && cu->EventRecord && cu->EventSynchronize && cu->EventDestroy && cu->EventElapsedTime;
}

GpuBench *gpubench_open(const char *what)
{
    if (ph_init(0) != PH_OK) {
        printf("%s skipped: %s\n", what, ph_last_error());
        return NULL;
    }
    int device = 0;
    if (ph_get_device(&device) != PH_OK || device == PH_INTERPRETER) {
        /* PHOBOS_TARGET=interp: these sizes would take days on the CPU */
        printf("%s skipped: the runtime's target is the CPU interpreter\n", what);
        ph_shutdown();
        return NULL;
    }
    GpuBench *b = calloc(1, sizeof *b);
    const char *why = NULL;
    if (!b || !load_events(&b->cu)) why = "no CUDA event functions in libcuda.so.1";
    else if (b->cu.EventCreate(&b->start, 0) || b->cu.EventCreate(&b->stop, 0)) why = "cuEventCreate failed";
    else if (ph_malloc(&b->flush, GPUBENCH_FLUSH_BYTES) != PH_OK) why = "no memory for the L2 flush buffer";
    if (why) {
        printf("%s skipped: %s\n", what, why);
        gpubench_close(b);
        return NULL;
    }
    return b;
}

void gpubench_close(GpuBench *b)
{
    if (b) {
        if (b->flush) ph_free(b->flush);
        if (b->start) b->cu.EventDestroy(b->start);
        if (b->stop) b->cu.EventDestroy(b->stop);
        free(b);
    }
    ph_shutdown();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static ph_status event_fail(const char *call)
{
    fprintf(stderr, "%s failed\n", call);
    return PH_ERR_CUDA;
}

/* One repetition: the flush, then work between the two events. */
static ph_status timed_once(GpuBench *b, GpuWork work, void *user, double *ms)
{
    ph_status s = ph_memset8(b->flush, 0, GPUBENCH_FLUSH_BYTES);
    if (s) return s;
    if (b->cu.EventRecord(b->start, NULL)) return event_fail("cuEventRecord");
    if ((s = work(user))) return s;
    if (b->cu.EventRecord(b->stop, NULL)) return event_fail("cuEventRecord");
    if (b->cu.EventSynchronize(b->stop)) return event_fail("the timed work (cuEventSynchronize)");
    float f = 0;
    if (b->cu.EventElapsedTime(&f, b->start, b->stop)) return event_fail("cuEventElapsedTime");
    *ms = f;
    return PH_OK;
}

static double wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

ph_status gpubench_time(GpuBench *b, GpuWork work, void *user, int reps, double *ms)
{
    ph_status s = PH_OK;
    double began = wall_ms();
    for (int i = 0; !s && (i < GPUBENCH_WARMUPS || wall_ms() - began < GPUBENCH_WARM_MS); i++)
        if (!(s = work(user))) s = ph_synchronize();
    double *t = calloc(GPUBENCH_MAX_REPS, sizeof *t), sum = 0;
    if (!t) return PH_ERR_INVALID;
    int n = 0;
    while (!s && n < GPUBENCH_MAX_REPS && (n < reps || sum < GPUBENCH_TIMED_MS))
        if (!(s = timed_once(b, work, user, &t[n]))) sum += t[n++];
    if (!s) *ms = median(t, n);
    free(t);
    return s;
}

/* xorshift64: fast (a billion values for the largest attention inputs),
 * and good enough for inputs whose values need only be unrelated. */
static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

ph_status gpubench_random_f16(ph_devptr dst, size_t n, uint64_t seed)
{
    enum { CHUNK = 1 << 22 };
    uint16_t *host = malloc(CHUNK * sizeof *host);
    if (!host) return PH_ERR_INVALID;
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (seed * 0xbf58476d1ce4e5b9ull);
    ph_status s = PH_OK;
    for (size_t done = 0; done < n && !s; done += CHUNK) {
        size_t m = n - done < CHUNK ? n - done : CHUNK;
        for (size_t j = 0; j < m; j++) host[j] = ph_f32_to_f16((float)(next_random(&x) >> 40) * 0x1p-24f - 0.5f);
        s = ph_memcpy_htod(dst + done * sizeof *host, host, m * sizeof *host);
    }
    free(host);
    return s;
}

FILE *gpubench_tsv_open(const char *path, const char *source, const char *columns)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        return NULL;
    }
    fprintf(f, "# source: %s\n# device: %s\n# phobos: %s\n%s\n", source, ph_device_name(), ph_version(), columns);
    fflush(f);
    return f;
}

void gpubench_tsv_row(FILE *tsv, const char *key, double ms, const char *note)
{
    if (!tsv) return;
    fprintf(tsv, "%s\t", key);
    if (ms < 0) fputs("n/a\t", tsv);
    else fprintf(tsv, "%.6f\t", ms);
    for (const char *p = note ? note : ""; *p; p++) fputc(*p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p, tsv);
    fputc('\n', tsv);
    fflush(tsv);   /* the rows so far survive a later crash */
}
