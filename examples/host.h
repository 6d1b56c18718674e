/* host.h: what the example host programs share: a seeded RNG, filling and
 * poisoning tensors of any element type, comparing a result with a double
 * precision reference, picking a kernel config, and launching through a
 * "launcher" (the IR interpreter now, the GPU runtime later).
 *
 * Every function is static inline so each *_check.c stays one file. */
#ifndef PHC_EXAMPLES_HOST_H
#define PHC_EXAMPLES_HOST_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl.h"
#include "driver/driver.h"
#include "base/half.h"
#include "phobos.h"

/* ---- random numbers: splitmix64 seeds xoshiro256**; Box-Muller for normals ---- */

typedef struct { uint64_t s[4]; } HostRng;

static inline uint64_t host_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void host_rng_seed(HostRng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = host_splitmix64(&seed);
}

static inline uint64_t host_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t host_rng_next(HostRng *r)
{
    uint64_t *s = r->s;
    uint64_t result = host_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = host_rotl(s[3], 45);
    return result;
}

/* Uniform in (0, 1): never 0, so log() in Box-Muller stays finite. */
static inline double host_uniform(HostRng *r)
{
    return ((double)(host_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double host_normal(HostRng *r, double mean, double std)
{
    double u1 = host_uniform(r), u2 = host_uniform(r);
    return mean + std * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- elements of any dtype, as double ---- */

static inline size_t host_dtype_size(DType dt)
{
    return (size_t)ir_dtype_bytes(dt);
}

static inline void *host_alloc(DType dt, size_t n)
{
    void *p = calloc(n ? n : 1, host_dtype_size(dt));
    if (!p) {
        fprintf(stderr, "out of memory (%zu elements)\n", n);
        exit(2);
    }
    return p;
}

static inline double host_get(DType dt, const void *p, size_t i)
{
    switch (dt) {
    case DT_F16: return ph_f16_to_f32(((const uint16_t *)p)[i]);
    case DT_BF16: return ph_bf16_to_f32(((const uint16_t *)p)[i]);
    case DT_F32: return ((const float *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I8: return ((const int8_t *)p)[i];
    case DT_U8: return ((const uint8_t *)p)[i];
    case DT_F8E4M3: return ph_e4m3_to_f32(((const uint8_t *)p)[i]);
    case DT_F8E5M2: return ph_e5m2_to_f32(((const uint8_t *)p)[i]);
    default: return NAN;
    }
}

/* Stores v rounded to nearest even in dt. */
static inline void host_set(DType dt, void *p, size_t i, double v)
{
    switch (dt) {
    case DT_F16: ((uint16_t *)p)[i] = ph_f32_to_f16((float)v); break;
    case DT_BF16: ((uint16_t *)p)[i] = ph_f32_to_bf16((float)v); break;
    case DT_F32: ((float *)p)[i] = (float)v; break;
    case DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case DT_F8E4M3: ((uint8_t *)p)[i] = ph_f32_to_e4m3((float)v); break;
    case DT_F8E5M2: ((uint8_t *)p)[i] = ph_f32_to_e5m2((float)v); break;
    default: break;
    }
}

static inline void host_fill_normal(DType dt, void *p, size_t n, double mean, double std, HostRng *r)
{
    for (size_t i = 0; i < n; i++) host_set(dt, p, i, host_normal(r, mean, std));
}

/* ---- poison: a NaN pattern no kernel computes, so an unwritten element fails ---- */

/* fp8: 0xff, a NaN of each format that no conversion gives (they give 0x7f) */
enum { HOST_POISON_16 = 0x7e5a, HOST_POISON_BF16 = 0x7fa5, HOST_POISON_F8 = 0xff };
#define HOST_POISON_32 0x7fa5a5a5u

static inline void host_poison(DType dt, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case DT_F16: ((uint16_t *)p)[i] = HOST_POISON_16; break;
        case DT_BF16: ((uint16_t *)p)[i] = HOST_POISON_BF16; break;
        case DT_F8E4M3: case DT_F8E5M2: ((uint8_t *)p)[i] = HOST_POISON_F8; break;
        default: ((uint32_t *)p)[i] = HOST_POISON_32; break;
        }
    }
}

static inline bool host_is_poison(DType dt, const void *p, size_t i)
{
    switch (dt) {
    case DT_F16: return ((const uint16_t *)p)[i] == HOST_POISON_16;
    case DT_BF16: return ((const uint16_t *)p)[i] == HOST_POISON_BF16;
    case DT_F8E4M3: case DT_F8E5M2: return ((const uint8_t *)p)[i] == HOST_POISON_F8;
    default: return ((const uint32_t *)p)[i] == HOST_POISON_32;
    }
}

/* ---- comparison with a reference ---- */

typedef struct {
    double max_diff;   /* NaN when any element of got is NaN */
    size_t nbad;       /* elements beyond atol + rtol * |ref| (NaN counts) */
    size_t worst;      /* index of the first bad element, or of the largest diff */
    double worst_got, worst_ref;
} HostCmp;

static inline HostCmp host_compare(DType dt, const void *got, const double *ref, size_t n,
                                   double atol, double rtol)
{
    HostCmp c = {0, 0, 0, 0, 0};
    double largest = -1;
    for (size_t i = 0; i < n; i++) {
        double g = host_get(dt, got, i), d = fabs(g - ref[i]);
        bool bad = !(d <= atol + rtol * fabs(ref[i]));   /* NaN is bad */
        if (isnan(d)) c.max_diff = NAN;
        else if (d > c.max_diff) c.max_diff = d;          /* stays NaN once NaN */
        /* remember the first bad element, or the largest diff while none is bad */
        bool first_bad = bad && c.nbad++ == 0;
        if (first_bad || (c.nbad == 0 && d > largest)) {
            largest = d;
            c.worst = i;
            c.worst_got = g;
            c.worst_ref = ref[i];
        }
    }
    return c;
}

/* Prints "NAME max diff 0.00123 ok" (or FAIL with the first bad element);
 * returns whether it passed. */
static inline bool host_report(const char *name, HostCmp c, size_t n)
{
    if (c.nbad == 0) {
        printf("%s max diff %.3g ok\n", name, c.max_diff);
        return true;
    }
    printf("%s max diff %.3g FAIL (%zu of %zu bad; first at %zu: got %.6g, want %.6g)\n",
           name, c.max_diff, c.nbad, n, c.worst, c.worst_got, c.worst_ref);
    return false;
}

static inline bool host_check(const char *name, DType dt, const void *got, const double *ref,
                              size_t n, double atol, double rtol)
{
    return host_report(name, host_compare(dt, got, ref, n, atol, rtol), n);
}

static inline double host_rms(const double *ref, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += ref[i] * ref[i];
    return n ? sqrt(sum / (double)n) : 0;
}

/* host_check with the absolute part of the tolerance scaled to the tensor:
 * each element within rtol * |ref| + arms * rms(ref), so a tensor of small
 * outputs is held to errors as small as its own, whatever its scale.
 * Prints "NAME (within RTOL |ref| + ATOL) max diff D ok". */
static inline bool host_check_scaled(const char *name, DType dt, const void *got, const double *ref,
                                     size_t n, double rtol, double arms)
{
    double atol = arms * host_rms(ref, n);
    char label[160];
    snprintf(label, sizeof label, "%s (within %.3g |ref| + %.3g)", name, rtol, atol);
    return host_report(label, host_compare(dt, got, ref, n, atol, rtol), n);
}

/* ---- the program and its kernels ---- */

static inline IrModule *host_compile(const char *path)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    if (!m) fprintf(stderr, "%s: compilation failed\n", path);
    return m;
}

/* The value of meta-parameter name in f's config, or -1 when f has none. */
static inline int64_t host_meta(const IrFunc *f, const char *name)
{
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[i].name, name)) return f->meta[i].value;
    return -1;
}

/* How many configs of kernel fit, as fits(f, ctx) decides (NULL: any). */
static inline int host_count_fits(const IrModule *m, const char *kernel,
                                  bool (*fits)(const IrFunc *f, const void *ctx), const void *ctx)
{
    int nfit = 0;
    for (int i = 0; m && i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, kernel) && (!fits || fits(m->funcs[i], ctx))) nfit++;
    return nfit;
}

/* The first config of kernel that fits, as fits(f, ctx) decides (NULL: any).
 * PHOBOS_CONFIG_INDEX=i picks the i-th fitting config instead (counting
 * modulo how many fit), so a test can walk every config of a file, and
 * PHOBOS_CONFIG_INDEX_<kernel>=j picks that kernel's j-th whatever the
 * other kernels take (a run refused for one kernel's config runs again
 * with that kernel's pinned, so the others' still get checked). */
static inline IrFunc *host_pick(const IrModule *m, const char *kernel,
                                bool (*fits)(const IrFunc *f, const void *ctx), const void *ctx)
{
    char own[128];
    snprintf(own, sizeof own, "PHOBOS_CONFIG_INDEX_%s", kernel);
    const char *env = getenv(own);
    if (!env) env = getenv("PHOBOS_CONFIG_INDEX");
    int want = env ? atoi(env) : 0, nfit = host_count_fits(m, kernel, fits, ctx);
    if (nfit) want = (want % nfit + nfit) % nfit;
    for (int i = 0; m && i < m->nfuncs; i++) {
        IrFunc *f = m->funcs[i];
        if (!strcmp(f->kernel, kernel) && (!fits || fits(f, ctx)) && want-- == 0) return f;
    }
    fprintf(stderr, "no config of kernel %s fits this launch\n", kernel);
    return NULL;
}

/* Checks that f's parameters are what the host passes, so an edited .ph
 * fails with a message instead of reading the wrong memory. spec is a
 * space-separated list: "f16:2" for a rank-2 f16 tensor, "i32" for a scalar. */
static inline bool host_signature(const IrFunc *f, const char *spec)
{
    int i = 0;
    const char *p = spec;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ");
        if (i >= f->nparams) break;
        const IrParam *q = &f->params[i];
        char want[32], have[32];
        snprintf(want, sizeof want, "%.*s", (int)len, p);
        if (q->is_tensor) snprintf(have, sizeof have, "%s:%d", ir_dtype_name(q->dt), q->rank);
        else snprintf(have, sizeof have, "%s", ir_dtype_name(q->dt));
        if (strcmp(want, have)) {
            fprintf(stderr, "%s: parameter %d (%s) is %s, the host passes %s\n",
                    f->kernel, i + 1, q->name, have, want);
            return false;
        }
        i++;
        p += len;
    }
    while (*p == ' ') p++;
    if (i != f->nparams || *p) {
        fprintf(stderr, "%s: has %d parameters, the host passes a different number (%s)\n",
                f->kernel, f->nparams, spec);
        return false;
    }
    return true;
}

static inline IrArg host_tensor1(void *data, int64_t n) { return (IrArg){.data = data, .dims = {n, 0}}; }
static inline IrArg host_tensor2(void *data, int64_t rows, int64_t cols)
{
    return (IrArg){.data = data, .dims = {rows, cols}};
}
/* A tensor of rank 3 or 4 with its strides in elements (a view of another
 * tensor, as torch's permute() and transpose() make them). */
static inline IrArg host_tensor_view(void *data, int rank, const int64_t *dims, const int64_t *strides)
{
    IrArg a = {.data = data};
    for (int i = 0; i < rank && i < 4; i++) a.dims[i] = dims[i], a.strides[i] = strides[i];
    return a;
}
static inline IrArg host_i32(int32_t v) { return (IrArg){.i = v}; }
static inline IrArg host_f32(float v) { return (IrArg){.f = v}; }

static inline int64_t host_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- launching ---- */

/* Runs f over grid with args in host memory. The interpreter is one
 * launcher; a GPU launcher copies the tensors to the device and back.
 * processors: the blocks a persistent config (meta-parameter PERSISTENT =
 * p, a kernel that covers its tiles from a grid of any size) launches for
 * each unit of p: the GPU's multiprocessors, 1 on the interpreter (which
 * runs one block at a time); 0 launches a block a tile. */
typedef struct HostLauncher {
    const char *name;
    int (*launch)(const struct HostLauncher *l, const IrFunc *f, const IrArg *args, int nargs,
                  const int grid[3], char *err, size_t errlen);
    void *ctx;
    int processors;
} HostLauncher;

static inline int host_interp_launch(const HostLauncher *l, const IrFunc *f, const IrArg *args,
                                     int nargs, const int grid[3], char *err, size_t errlen)
{
    (void)l;
    return ir_interp(f, args, nargs, grid, err, errlen);
}

static const HostLauncher host_interpreter = {"interpreter", host_interp_launch, NULL, 1};

/* The GPU launcher: copies every tensor (inputs and poisoned outputs) to
 * the device, launches f's config through the runtime, copies every tensor
 * back. ctx is the ph_module compiled from the same file. */
static inline void host_fixed_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta;
    const int *grid = user;
    for (int i = 0; i < 3; i++) g[i] = (unsigned)grid[i];
}

static inline int host_gpu_launch(const HostLauncher *l, const IrFunc *f, const IrArg *args,
                                  int nargs, const int grid[3], char *err, size_t errlen)
{
    ph_kernel *k;
    if (ph_kernel_get(l->ctx, f->name, &k)) {
        snprintf(err, errlen, "%s", ph_last_error());
        return 1;
    }
    if (nargs != f->nparams || nargs > 64) {
        snprintf(err, errlen, "%s takes %d arguments, got %d", f->name, f->nparams, nargs);
        return 1;
    }
    ph_arg dargs[64];
    size_t bytes[64];
    int status = 0;
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            dargs[i] = p->dt == DT_I32 ? ph_i32(args[i].i) : ph_f32(args[i].f);
            continue;
        }
        int64_t d1 = p->rank == 2 ? args[i].dims[1] : 1, span = args[i].dims[0] * d1;
        dargs[i] = ph_tensor2(0, args[i].dims[0], d1);
        if (p->rank > 2) {   /* a view: the bytes its strides reach */
            int64_t elems = 1;
            span = 1;
            for (int a = 0; a < p->rank; a++) span += (args[i].dims[a] - 1) * args[i].strides[a], elems *= args[i].dims[a];
            if (span == 1) span = elems;   /* no strides given: row-major */
            dargs[i] = ph_tensor_nd(0, PH_DTYPE_UNCHECKED, p->rank, args[i].dims, args[i].strides);
        }
        bytes[i] = (size_t)span * host_dtype_size(p->dt);
        if (ph_malloc(&dargs[i].ptr, bytes[i]) || ph_memcpy_htod(dargs[i].ptr, args[i].data, bytes[i])) {
            status = 1;
            break;
        }
    }
    if (!status && ph_launch(k, host_fixed_grid, (void *)grid, dargs, nargs)) status = 1;
    if (!status && ph_synchronize()) status = 1;
    for (int i = 0; i < nargs && !status; i++)
        if (f->params[i].is_tensor && ph_memcpy_dtoh(args[i].data, dargs[i].ptr, bytes[i])) status = 1;
    if (status) snprintf(err, errlen, "%s", ph_last_error());
    for (int i = 0; i < nargs; i++)
        if (f->params[i].is_tensor && dargs[i].ptr) ph_free(dargs[i].ptr);
    return status;
}

/* Chooses where the kernels run: PHOBOS_TARGET=gpu (a GPU is required),
 * interp, or auto (the default: the GPU when a driver and device are there,
 * else the interpreter, saying why). */
static inline const HostLauncher *host_launcher(const char *path)
{
    static HostLauncher gpu = {"gpu", host_gpu_launch, NULL, 0};
    const char *target = getenv("PHOBOS_TARGET");
    if (!target || !*target) target = "auto";
    if (!strcmp(target, "interp")) return &host_interpreter;
    if (ph_init(0) != PH_OK) {
        if (!strcmp(target, "gpu")) {
            fprintf(stderr, "PHOBOS_TARGET=gpu but %s\n", ph_last_error());
            return NULL;
        }
        printf("(no GPU: %s; running on the interpreter)\n", ph_last_error());
        return &host_interpreter;
    }
    ph_module *m;
    if (ph_module_load_file(path, &m)) {
        fprintf(stderr, "%s\n", ph_last_error());
        return NULL;
    }
    gpu.ctx = m;
    gpu.processors = ph_device_multiprocessors();
    printf("(running on the GPU: %s)\n", ph_device_name());
    return &gpu;
}

/* The launcher the checks use, chosen once in main by host_use. */
static const HostLauncher *host_active_launcher;
static inline const HostLauncher *host_current(void)
{
    return host_active_launcher ? host_active_launcher : &host_interpreter;
}
static inline bool host_use(const char *path)
{
    host_active_launcher = host_launcher(path);
    return host_active_launcher != NULL;
}

static inline void host_launcher_free(const HostLauncher *l);

/* The start of a check's main: the one argument is the .ph file, compiled
 * here, and the launcher is chosen. NULL on failure, with *status the exit
 * status to return (2: usage). */
static inline IrModule *host_start(int argc, char **argv, const char *file, int *status)
{
    *status = 1;
    if (argc != 2) {
        fprintf(stderr, "usage: %s %s\n", argv[0], file);
        *status = 2;
        return NULL;
    }
    IrModule *m = host_compile(argv[1]);
    if (m && !host_use(argv[1])) {
        ir_module_free(m);
        m = NULL;
    }
    return m;
}

/* The end of a check's main: releases what host_start made; the exit status. */
static inline int host_finish(IrModule *m, int failed)
{
    host_launcher_free(host_current());
    ir_module_free(m);
    return failed != 0;
}

static inline void host_launcher_free(const HostLauncher *l)
{
    if (l && l->launch == host_gpu_launch) {
        ph_module_free(l->ctx);
        ph_shutdown();
    }
}

/* Launches and prints any error as "kernel: message"; returns 0 on success. */
static inline int host_launch(const HostLauncher *l, const IrFunc *f, const IrArg *args, int nargs,
                              int64_t gx, int64_t gy, int64_t gz)
{
    if (gx < 1 || gy < 1 || gz < 1 || gx > INT32_MAX || gy > 65535 || gz > 65535) {
        fprintf(stderr, "%s: bad grid (%lld, %lld, %lld)\n", f->name, (long long)gx,
                (long long)gy, (long long)gz);
        return 1;
    }
    int grid[3] = {(int)gx, (int)gy, (int)gz};
    char err[512] = "";
    if (l->launch(l, f, args, nargs, grid, err, sizeof err)) {
        fprintf(stderr, "%s (%s): %s\n", f->name, l->name, err[0] ? err : "launch failed");
        return 1;
    }
    return 0;
}

#endif
