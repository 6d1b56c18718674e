/* simharness.h: what the suites that run generated code on the CPU
 * executor against the interpreter share (test_cpusim.c for sm_90,
 * test_cpusim_wgmma.c for sm_90a): a program's code loaded for a target,
 * tensors between guard zones, a config run both ways and compared, and
 * the attention tutorial's launches. */
#ifndef PHC_SIMHARNESS_H
#define PHC_SIMHARNESS_H

#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS, setenv */
#endif
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "attention/attention_host.h"
#include "cpusim.h"
#include "driver/driver.h"
#include "opsharness.h"

#define GUARD_BYTES 256
#define GUARD_FILL 0xa5
#define PAGE 4096

/* m's code for target arch, loaded. */
static cpusim *load_arch(const IrModule *m, const char *arch)
{
    char err[1024];
    cpusim *s = NULL;
    ph_status st = cpusim_load_arch(m, arch, &s, err, sizeof err);
    cr_assert_eq(st, PH_OK, "cpusim_load_arch %s: %s", arch, err);
    return s;
}

static inline cpusim *load(const IrModule *m) { return load_arch(m, "sm_90"); }

/* A tensor's memory: bytes bytes with at least GUARD_BYTES of fill on
 * either side, between two inaccessible pages, so a store just outside the
 * tensor changes the fill and one further out faults. */
typedef struct { unsigned char *map, *data; size_t span, bytes; } Zone;

static inline Zone zone_new(const void *init, size_t bytes)
{
    Zone z = {.bytes = bytes};
    z.span = (bytes + 2 * GUARD_BYTES + PAGE - 1) / PAGE * PAGE;
    z.map = mmap(NULL, z.span + 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(z.map, MAP_FAILED);
    mprotect(z.map, PAGE, PROT_NONE);
    mprotect(z.map + PAGE + z.span, PAGE, PROT_NONE);
    memset(z.map + PAGE, GUARD_FILL, z.span);
    z.data = z.map + PAGE + z.span - GUARD_BYTES - bytes;
    memcpy(z.data, init, bytes);
    return z;
}

/* The offset from the tensor's start of the first fill byte that changed; 0 if none. */
static inline long zone_damage(const Zone *z)
{
    for (unsigned char *p = z->map + PAGE; p < z->map + PAGE + z->span; p++) {
        if (p == z->data) p += z->bytes;
        if (p < z->map + PAGE + z->span && *p != GUARD_FILL) return (long)(p - z->data);
    }
    return 0;
}

static inline void zone_free(Zone *z) { munmap(z->map, z->span + 2 * PAGE); }

/* Runs config f on the executor and in the interpreter over a 4 x 3 grid,
 * the i32 parameter named scalar (if not NULL) given value; returns the
 * elements that differ plus the tensors whose guards changed. */
static inline int run_config_with(cpusim *s, const IrFunc *f, const char *scalar, int32_t value)
{
    int n = f->nparams, bad = 0;
    IrArg iargs[16];
    ph_arg sargs[16];
    void *host[16] = {0};
    Zone zone[16] = {{0}};
    size_t count[16] = {0};
    cr_assert_leq(n, 16);
    host_args(f, iargs, host, count);
    for (int i = 0; i < n && scalar; i++)
        if (!f->params[i].is_tensor && !strcmp(f->params[i].name, scalar)) iargs[i].i = value;
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            sargs[i] = p->dt == DT_I32 ? ph_i32(iargs[i].i) : p->dt == DT_I64 ? ph_i64(iargs[i].l) : ph_f32(iargs[i].f);
            continue;
        }
        zone[i] = zone_new(host[i], count[i] * elem_bytes(p->dt));
        ph_devptr ptr = (ph_devptr)(uintptr_t)zone[i].data;
        sargs[i] = p->rank == 2 ? ph_tensor2(ptr, iargs[i].dims[0], iargs[i].dims[1]) : p->rank == 1 ? ph_tensor1(ptr, iargs[i].dims[0])
                 : ph_tensor_nd(ptr, PH_DTYPE_UNCHECKED, p->rank, iargs[i].dims, iargs[i].strides);
    }
    char err[512];
    unsigned grid[3] = {4, 3, 1};
    ph_status st = cpusim_launch(s, f->name, grid, sargs, n, err, sizeof err);
    if (st != PH_OK) {
        cr_log_error("%s", err);
        bad++;
    }
    int igrid[3] = {4, 3, 1};
    cr_assert_eq(ir_interp(f, iargs, n, igrid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) continue;
        if (st == PH_OK) {
            bad += compare_tensor("cpusim", f, p, host[i], zone[i].data, count[i]);
            long at = zone_damage(&zone[i]);
            if (at) {
                cr_log_error("%s: %s: written at byte %ld, outside its %zu bytes", f->name, p->name, at, zone[i].bytes);
                bad++;
            }
        }
        free(host[i]);
        zone_free(&zone[i]);
    }
    return bad;
}

static inline int run_config(cpusim *s, const IrFunc *f) { return run_config_with(s, f, NULL, 0); }

/* Every config of module m on the executor (arch's code) and in the
 * interpreter; the configs that differ. */
static inline int configs_that_differ(const IrModule *m, const char *arch)
{
    cpusim *s = load_arch(m, arch);
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        int bad = run_config(s, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements or guards differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cpusim_free(s);
    return failed;
}

/* Every config of the program at path, at least min_configs of them, on
 * the executor (arch's code) and in the interpreter. */
static inline void every_config_matches(const char *path, int min_configs, const char *arch)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, min_configs);
    int failed = configs_that_differ(m, arch);
    cr_expect_eq(failed, 0, "%d of %d configs differ from the interpreter", failed, m->nfuncs);
    ir_module_free(m);
}

/* ---- GEMMs at given shapes ---- */

typedef struct { int64_t m, n, k; } Shape;

static inline int64_t shape_dim(Shape sh, const char *name)
{
    return !strcmp(name, "M") ? sh.m : !strcmp(name, "N") ? sh.n : sh.k;
}

/* The elements of got that differ from want by more than compare_tensor
 * allows, counted without a message (a test that expects them). */
static inline int quiet_differences(const IrParam *p, const void *want, const void *got, size_t count)
{
    double rtol = p->dt == DT_F32 ? 2e-3 : 8e-3, atol = 1e-4;
    int bad = 0;
    for (size_t e = 0; e < count; e++) {
        double w = as_double(p->dt, want, e), g = as_double(p->dt, got, e);
        bad += !(w == g || (isnan(w) && isnan(g)) || fabs(g - w) <= atol + rtol * fabs(w));
    }
    return bad;
}

/* Runs GEMM config f (tensors whose dims are M, N and K) at shape sh on
 * the executor and in the interpreter, over `blocks` blocks in x (a
 * persistent kernel's grid) or, for 0, the grid that covers C by BM x BN
 * tiles. The executor's status, its message in err; *bad receives the
 * elements that differ plus the tensors written outside their bytes,
 * logged as errors unless quiet. */
static inline ph_status run_gemm_at(cpusim *s, const IrFunc *f, Shape sh, unsigned blocks, bool quiet, int *bad, char *err,
                                    size_t errlen)
{
    int n = f->nparams;
    IrArg iargs[8];
    ph_arg sargs[8];
    void *want[8] = {0};
    Zone zone[8];
    size_t count[8] = {0};
    cr_assert_leq(n, 8);
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        cr_assert(p->is_tensor && p->rank == 2, "%s: parameter %d", f->name, i);
        int64_t d0 = shape_dim(sh, p->dim_name[0]), d1 = shape_dim(sh, p->dim_name[1]);
        count[i] = (size_t)(d0 * d1);
        want[i] = malloc(count[i] * elem_bytes(p->dt));
        fill(p->dt, want[i], count[i]);
        iargs[i] = (IrArg){.data = want[i], .dims = {d0, d1}};
        zone[i] = zone_new(want[i], count[i] * elem_bytes(p->dt));
        sargs[i] = ph_tensor2((uintptr_t)zone[i].data, d0, d1);
    }
    int64_t bm = host_meta(f, "BM"), bn = host_meta(f, "BN");
    unsigned grid[3] = {blocks, 1, 1};
    if (!blocks) grid[0] = (unsigned)((sh.m + bm - 1) / bm), grid[1] = (unsigned)((sh.n + bn - 1) / bn);
    ph_status st = cpusim_launch(s, f->name, grid, sargs, n, err, errlen);
    int igrid[3] = {(int)grid[0], (int)grid[1], 1};
    char ierr[256];
    cr_assert_eq(ir_interp(f, iargs, n, igrid, ierr, sizeof ierr), 0, "%s", ierr);
    *bad = 0;
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (st == PH_OK) {
            *bad += quiet ? quiet_differences(p, want[i], zone[i].data, count[i])
                          : compare_tensor("cpusim sm_90a", f, p, want[i], zone[i].data, count[i]);
            long at = zone_damage(&zone[i]);
            if (at && !quiet) cr_log_error("%s: %s: written at byte %ld, outside its %zu bytes", f->name, p->name, at, zone[i].bytes);
            *bad += at != 0;
        }
        free(want[i]);
        zone_free(&zone[i]);
    }
    return st;
}

/* Every config of m at each shape, as run_gemm_at runs it over `blocks`
 * blocks: each run that fails or differs logged; how many did. */
static inline int gemm_runs_failing(cpusim *s, const IrModule *m, const Shape *shapes, int nshapes, unsigned blocks)
{
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++)
        for (int j = 0; j < nshapes; j++) {
            char err[1024];
            int bad;
            ph_status st = run_gemm_at(s, m->funcs[i], shapes[j], blocks, false, &bad, err, sizeof err);
            if (st != PH_OK) cr_log_error("%s", err);
            else if (bad) cr_log_error("%s at M %lld N %lld K %lld: %d elements or guards differ", m->funcs[i]->name,
                                       (long long)shapes[j].m, (long long)shapes[j].n, (long long)shapes[j].k, bad);
            failed += st != PH_OK || bad;
        }
    return failed;
}

/* ---- attention: the tutorial's four launches ---- */

/* The executor as one of examples/host.h's launchers. */
static inline int sim_launch(const HostLauncher *l, const IrFunc *f, const IrArg *args, int nargs, const int grid[3], char *err,
                      size_t errlen)
{
    ph_arg a[64];
    if (nargs > 64) return 1;
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) a[i] = p->dt == DT_I32 ? ph_i32(args[i].i) : p->dt == DT_I64 ? ph_i64(args[i].l) : ph_f32(args[i].f);
        else if (p->rank > 2) a[i] = ph_tensor_nd((uintptr_t)args[i].data, PH_DTYPE_UNCHECKED, p->rank, args[i].dims, args[i].strides);
        else a[i] = ph_tensor2((uintptr_t)args[i].data, args[i].dims[0], p->rank == 2 ? args[i].dims[1] : 1);
    }
    unsigned g[3] = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
    return cpusim_launch(l->ctx, f->name, g, a, nargs, err, errlen) != PH_OK;
}

/* The forward and backward passes of path's kernels at Z 1, H 2, N_CTX
 * n_ctx, HEAD_DIM head_dim, causal and not, on the executor (arch's code)
 * and in the interpreter from the same inputs: every output and gradient
 * must agree. Each kernel's config is the pick-th of those that fit
 * (host_pick's PHOBOS_CONFIG_INDEX, modulo their number). */
static inline void attention_matches_sized(const char *path, const char *arch, int pick, int head_dim, int n_ctx)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    AttnSize size = {1, 2, n_ctx, head_dim, 0.5};
    AttnKernels k;
    char index[16];
    snprintf(index, sizeof index, "%d", pick);
    setenv("PHOBOS_CONFIG_INDEX", index, 1);
    cr_assert_eq(attn_pick(m, &size, &k), 0);
    unsetenv("PHOBOS_CONFIG_INDEX");
    cpusim *s = load_arch(m, arch);
    HostLauncher sim = {"cpusim", sim_launch, s, 3};   /* a persistent config: 3 blocks a unit */
    size_t rows = (size_t)(size.z * size.h * size.n), elems = rows * (size_t)size.d;
    /* AttnBufs' order: q k v dout, then what the kernels write: o dq dk dv lse delta */
    const char *names[10] = {"Q", "K", "V", "dO", "O", "dQ", "dK", "dV", "L", "Delta"};
    const IrFunc *writer[10] = {NULL, NULL, NULL, NULL, k.fwd, k.dq, k.dkdv, k.dkdv, k.fwd, k.delta};
    int failed = 0;
    for (int causal = 0; causal < 2; causal++) {
        void *want[10];
        Zone got[10];
        HostRng r;
        host_rng_seed(&r, 42 + (uint64_t)causal);
        for (int i = 0; i < 10; i++) {
            DType dt = i < 8 ? DT_F16 : DT_F32;
            size_t n = i < 8 ? elems : rows;
            want[i] = host_alloc(dt, n);
            if (i < 4) host_fill_normal(dt, want[i], n, 0.0, i == 3 ? 1.0 : 0.5, &r);
            else host_poison(dt, want[i], n);
            got[i] = zone_new(want[i], n * host_dtype_size(dt));
        }
        AttnBufs wb = {want[0], want[1], want[2], want[3], want[4], want[5], want[6], want[7], want[8], want[9]};
        AttnBufs gb = {(uint16_t *)got[0].data, (uint16_t *)got[1].data, (uint16_t *)got[2].data, (uint16_t *)got[3].data,
                       (uint16_t *)got[4].data, (uint16_t *)got[5].data, (uint16_t *)got[6].data, (uint16_t *)got[7].data,
                       (float *)got[8].data, (float *)got[9].data};
        cr_assert_eq(attn_run(&host_interpreter, &k, &size, causal, &wb), 0);
        cr_assert_eq(attn_run(&sim, &k, &size, causal, &gb), 0, "the executor refused a launch (see above)");
        for (int i = 4; i < 10; i++) {
            IrParam p = {.name = names[i], .is_tensor = true, .dt = i < 8 ? DT_F16 : DT_F32};
            size_t n = i < 8 ? elems : rows;
            /* O reaches Delta and the gradients rounded to f16, where both
             * sides may be a rounding apart: sums over D of such terms differ
             * by more than compare_tensor's 1e-4 (the tutorial's own check
             * allows 1e-2) */
            int bad = compare_tensor_within(causal ? "cpusim (causal)" : "cpusim", writer[i], &p, want[i], got[i].data, n,
                                            1e-3, i < 8 ? 8e-3 : 2e-3);
            long at = zone_damage(&got[i]);
            if (at) cr_log_error("%s: written at byte %ld, outside its %zu bytes", names[i], at, got[i].bytes);
            failed += bad || at;
        }
        for (int i = 0; i < 10; i++) {
            free(want[i]);
            zone_free(&got[i]);
        }
    }
    cr_expect_eq(failed, 0, "%d of 12 outputs differ from the interpreter", failed);
    cpusim_free(s);
    ir_module_free(m);
}

static inline void attention_matches_at(const char *path, const char *arch, int pick, int head_dim)
{
    attention_matches_sized(path, arch, pick, head_dim, 128);
}

static inline void attention_matches_the_interpreter(const char *path, const char *arch, int pick)
{
    attention_matches_at(path, arch, pick, 64);
}

#endif
