/* refharness.h: what the suites judging the interpreter against plain C
 * share (test_ops_ref.c for tests/gpu/ops.ph, test_lang_ref.c for the
 * language's later features): the poison that marks unwritten outputs, a
 * reference's view of the arguments (in2 reads a window's element, 0 past
 * the edges; out2 sets an expected element and its tolerance, dropped past
 * the edges), and the run of a whole file's configs, each in the
 * interpreter and in its reference on the same fixed grid of blocks,
 * compared element by element (test_ops_ref.c's header says how the
 * tolerances are chosen). */
#ifndef PHC_REFHARNESS_H
#define PHC_REFHARNESS_H

#include <criterion/criterion.h>
#include <math.h>

#include "driver/driver.h"
#include "opsharness.h"
#include "testutil.h"

#define MAXP 16
#define U32 0x1p-24   /* unit roundoff of f32 */

enum { GRID_X = 4, GRID_Y = 3 };   /* test_gpu_ops.c's fixed_grid */

/* ---- poison: a NaN no kernel computes (a sentinel for i32) ---- */

enum { POISON_16 = 0x7e5a, POISON_BF16 = 0x7fa5 };
#define POISON_32 0x7fa5a5a5u

static inline void poison(DType dt, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == DT_F16) ((uint16_t *)p)[i] = POISON_16;
        else if (dt == DT_BF16) ((uint16_t *)p)[i] = POISON_BF16;
        else ((uint32_t *)p)[i] = POISON_32;
    }
}

static inline bool is_poison(DType dt, const void *p, size_t i)
{
    if (dt == DT_F16) return ((const uint16_t *)p)[i] == POISON_16;
    if (dt == DT_BF16) return ((const uint16_t *)p)[i] == POISON_BF16;
    return ((const uint32_t *)p)[i] == POISON_32;
}

/* ---- what a reference sees: the arguments, and where it writes ---- */

typedef struct {
    const IrFunc *f;
    const IrArg *args;
    double *want[MAXP];   /* per output tensor: the expected elements */
    double *tol[MAXP];    /* allowed |got - want|; negative where no block writes */
} Ref;

static inline int param(const Ref *r, const char *name)
{
    for (int i = 0; i < r->f->nparams; i++)
        if (!strcmp(r->f->params[i].name, name)) return i;
    cr_assert_fail("%s has no parameter %s", r->f->name, name);
    return -1;
}

static inline int64_t meta(const Ref *r, const char *name)
{
    for (int i = 0; i < r->f->nmeta; i++)
        if (!strcmp(r->f->meta[i].name, name)) return r->f->meta[i].value;
    cr_assert_fail("%s has no meta-parameter %s", r->f->name, name);
    return 0;
}

static inline int32_t scalar(const Ref *r, const char *name) { return r->args[param(r, name)].i; }

/* Element (i, j) of a tensor (j = 0 for rank 1), or -1 past its edges. */
static inline int64_t element(const Ref *r, int p, int64_t i, int64_t j)
{
    const int64_t *d = r->args[p].dims;
    int64_t cols = r->f->params[p].rank == 2 ? d[1] : 1;
    if (i < 0 || i >= d[0] || j < 0 || j >= cols) return -1;
    return i * cols + j;
}

/* A window's element: the tensor's, or 0 past its edges. */
static inline double in2(const Ref *r, const char *name, int64_t i, int64_t j)
{
    int p = param(r, name);
    int64_t e = element(r, p, i, j);
    return e < 0 ? 0.0 : as_double(r->f->params[p].dt, r->args[p].data, (size_t)e);
}

static inline double in1(const Ref *r, const char *name, int64_t i) { return in2(r, name, i, 0); }

static inline double store_rounding(DType dt)
{
    return dt == DT_F16 ? 0x1p-11 : dt == DT_BF16 ? 0x1p-8 : dt == DT_F32 ? U32 : 0;
}

/* A store's element: dropped past the edges; tol is the error of v before
 * the store, which adds its own rounding to the tensor's dtype. */
static inline void out2(Ref *r, const char *name, int64_t i, int64_t j, double v, double tol)
{
    int p = param(r, name);
    int64_t e = element(r, p, i, j);
    cr_assert_not_null(r->want[p], "%s: %s is not listed as an output", r->f->name, name);
    if (e < 0) return;
    r->want[p][e] = v;
    r->tol[p][e] = tol + store_rounding(r->f->params[p].dt) * fabs(v);
}

static inline void out1(Ref *r, const char *name, int64_t i, double v, double tol) { out2(r, name, i, 0, v, tol); }

/* The bound on n terms summed in f32 whose magnitudes add up to mag. */
static inline double sum_tol(int64_t n, double mag) { return (double)(n + 1) * U32 * mag; }

static inline int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static inline int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

/* ---- a file's kernels and their references ---- */

typedef struct {
    const char *kernel;
    const char *outputs[6];
    void (*block)(Ref *r, int bx, int by);
} KernelRef;

static inline const KernelRef *find_ref(const KernelRef *refs, size_t nrefs, const char *kernel)
{
    for (size_t i = 0; i < nrefs; i++)
        if (!strcmp(refs[i].kernel, kernel)) return &refs[i];
    return NULL;
}

static inline bool is_output(const KernelRef *k, const char *name)
{
    for (int i = 0; i < 6 && k->outputs[i]; i++)
        if (!strcmp(k->outputs[i], name)) return true;
    return false;
}

/* ---- one config: run both, compare ---- */

typedef struct { size_t written, unwritten, bad; double worst; } Tally;

/* An f32 output of a kernel compared bit for bit (opsharness.h): the
 * reference rounded to f32 has got's bits (a zero's sign counts), or both
 * are NaN. */
static inline bool same_f32(const void *got, size_t e, double want)
{
    uint32_t g, w;
    float wf = (float)want;
    memcpy(&g, (const char *)got + 4 * e, 4);
    memcpy(&w, &wf, 4);
    return isnan(want) ? isnan(ph_bits_f32(g)) : g == w;
}

static inline void compare_output(const IrFunc *f, int p, const void *got, const double *want,
                           const double *tol, size_t n, bool bitwise, Tally *t)
{
    DType dt = f->params[p].dt;
    for (size_t e = 0; e < n; e++) {
        bool ok;
        double g = as_double(dt, got, e);
        if (tol[e] < 0) {
            t->unwritten++;
            ok = is_poison(dt, got, e);
        } else {
            t->written++;
            double err = fabs(g - want[e]);
            ok = bitwise ? same_f32(got, e, want[e]) : err <= tol[e];   /* NaN fails unless bitwise */
            if (ok && tol[e] > 0 && err / tol[e] > t->worst) t->worst = err / tol[e];
        }
        if (!ok && t->bad++ < 5)
            cr_log_error("%s: %s[%zu]: interpreter %.9g, reference %s%.9g (tolerance %.3g)", f->name,
                         f->params[p].name, e, g, tol[e] < 0 ? "unwritten, poison expected; " : "",
                         tol[e] < 0 ? 0.0 : want[e], tol[e] < 0 ? 0.0 : tol[e]);
    }
}

/* Runs config f in the interpreter and in its reference; returns the
 * elements that differ, and adds to *t what was compared. */
static inline size_t check_config(const IrFunc *f, const KernelRef *refs, size_t nrefs, Tally *t)
{
    const KernelRef *k = find_ref(refs, nrefs, f->kernel);
    cr_assert_not_null(k, "kernel %s has no reference here", f->kernel);
    cr_assert_leq(f->nparams, MAXP);
    IrArg args[MAXP];
    void *bufs[MAXP], *inputs[MAXP] = {0};
    size_t count[MAXP];
    host_args(f, args, bufs, count);
    Ref r = {.f = f, .args = args};
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *q = &f->params[p];
        if (!q->is_tensor) continue;
        size_t bytes = count[p] * elem_bytes(q->dt);
        if (is_output(k, q->name)) {
            poison(q->dt, bufs[p], count[p]);
            r.want[p] = malloc(count[p] * sizeof(double));
            r.tol[p] = malloc(count[p] * sizeof(double));
            for (size_t e = 0; e < count[p]; e++) r.want[p][e] = NAN, r.tol[p][e] = -1;
        } else {
            inputs[p] = malloc(bytes);
            memcpy(inputs[p], bufs[p], bytes);
        }
    }
    for (int bx = 0; bx < GRID_X; bx++)
        for (int by = 0; by < GRID_Y; by++) k->block(&r, bx, by);

    char err[512];
    int grid[3] = {GRID_X, GRID_Y, 1};
    cr_assert_eq(ir_interp(f, args, f->nparams, grid, err, sizeof err), 0, "%s: %s", f->name, err);
    size_t before = t->bad;
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *q = &f->params[p];
        if (r.want[p]) compare_output(f, p, bufs[p], r.want[p], r.tol[p], count[p], compared_bitwise(f) && q->dt == DT_F32, t);
        else if (inputs[p] && memcmp(inputs[p], bufs[p], count[p] * elem_bytes(q->dt))) {
            cr_log_error("%s: input %s was written", f->name, q->name);
            t->bad++;
        }
        free(bufs[p]);
        free(inputs[p]);
        free(r.want[p]);
        free(r.tol[p]);
    }
    return t->bad - before;
}

/* Every config of the file at path against its reference: min_configs at
 * least, and both checks (elements written, elements left poisoned) bite. */
static inline void every_config_matches_its_reference(const char *path, const KernelRef *refs, size_t nrefs, int min_configs)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, min_configs);
    Tally t = {0};
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        size_t bad = check_config(m->funcs[i], refs, nrefs, &t);
        if (bad) cr_log_error("%s: %zu elements differ from the reference", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_log_info("%s: %zu elements written, %zu left poisoned, worst error %.2f of its tolerance",
                path, t.written, t.unwritten, t.worst);
    cr_expect_gt(t.written, 0);
    cr_expect_gt(t.unwritten, 0);
    cr_expect_eq(failed, 0, "%d of %d configs differ from the reference", failed, m->nfuncs);
    ir_module_free(m);
}

/* Every kernel of the file has a reference, and every reference a kernel. */
static inline void every_kernel_has_a_reference(const char *path, const KernelRef *refs, size_t nrefs)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    for (int i = 0; i < m->nfuncs; i++)
        cr_expect_not_null(find_ref(refs, nrefs, m->funcs[i]->kernel), "%s has no reference", m->funcs[i]->kernel);
    for (size_t j = 0; j < nrefs; j++) {
        bool found = false;
        for (int i = 0; i < m->nfuncs && !found; i++) found = !strcmp(m->funcs[i]->kernel, refs[j].kernel);
        cr_expect(found, "the reference for %s has no kernel in %s", refs[j].kernel, path);
    }
    ir_module_free(m);
}

#endif
