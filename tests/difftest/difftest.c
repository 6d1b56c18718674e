/* difftest.c: the comparison engine of difftest.h: run specs, the
 * interpreter back end, and dt_compare_module, which runs each config both
 * ways on the same random inputs and compares every tensor. */
#include "difftest.h"
#include "base/half.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- run specs ---- */

void dt_spec_init(DtSpec *s)
{
    memset(s, 0, sizeof *s);
    s->grid[0] = s->grid[1] = s->grid[2] = 1;
}

void dt_spec_set(DtSpec *s, const char *name, double value)
{
    for (int i = 0; i < s->nvalues; i++)
        if (!strcmp(s->values[i].name, name)) { s->values[i].value = value; return; }
    if (s->nvalues == DT_MAX_VALUES) return;
    snprintf(s->values[s->nvalues].name, sizeof s->values[0].name, "%s", name);
    s->values[s->nvalues++].value = value;
}

double dt_spec_get(const DtSpec *s, const char *name, double dflt)
{
    for (int i = 0; i < s->nvalues; i++)
        if (!strcmp(s->values[i].name, name)) return s->values[i].value;
    return dflt;
}

bool dt_spec_has(const DtSpec *s, const char *name)
{
    for (int i = 0; i < s->nvalues; i++)
        if (!strcmp(s->values[i].name, name)) return true;
    return false;
}

void dt_spec_format(const DtSpec *s, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "grid %d %d %d", s->grid[0], s->grid[1], s->grid[2]);
    for (int i = 0; i < s->nvalues && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, " %s=%.9g", s->values[i].name, s->values[i].value);
}

int dt_spec_parse(DtSpec *s, const char *text, char *err, size_t errlen)
{
    dt_spec_init(s);
    const char *p = text;
    bool grid = false;
    while (*p && *p != '\n') {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '\n') break;
        if (!strncmp(p, "grid", 4) && (p[4] == ' ' || p[4] == '\t')) {
            char *end;
            p += 4;
            for (int a = 0; a < 3; a++) {
                long v = strtol(p, &end, 10);
                if (end == p || v < 1 || v > 65535) {
                    snprintf(err, errlen, "'grid' needs three block counts from 1 to 65535");
                    return 1;
                }
                s->grid[a] = (int)v;
                p = end;
            }
            grid = true;
            continue;
        }
        const char *eq = p;
        while (*eq && *eq != '=' && *eq != ' ' && *eq != '\n') eq++;
        if (*eq != '=' || eq == p || eq - p >= (long)sizeof s->values[0].name) {
            snprintf(err, errlen, "expected NAME=VALUE at '%.20s'", p);
            return 1;
        }
        char name[32], *end;
        snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || (*end && *end != ' ' && *end != '\t' && *end != '\n')) {
            snprintf(err, errlen, "'%s' needs a number", name);
            return 1;
        }
        if (s->nvalues == DT_MAX_VALUES) {
            snprintf(err, errlen, "more than %d values", DT_MAX_VALUES);
            return 1;
        }
        dt_spec_set(s, name, v);
        p = end;
    }
    if (!grid) {
        snprintf(err, errlen, "the run spec has no 'grid X Y Z'");
        return 1;
    }
    return 0;
}

int dt_spec_from_source(DtSpec *s, const char *source, char *err, size_t errlen)
{
    for (const char *line = source; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, "# run:", 6)) return dt_spec_parse(s, line + 6, err, errlen);
    snprintf(err, errlen, "no '# run: grid X Y Z NAME=VALUE ...' line");
    return 1;
}

/* ---- the interpreter as a back end ---- */

static DtRunStatus interp_load(DtBackend *b, const char *source, const IrModule *m, char *err, size_t errlen)
{
    (void)b, (void)source, (void)m, (void)err, (void)errlen;
    return DT_RUN_OK;
}

static DtRunStatus interp_run(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err, size_t errlen)
{
    (void)b;
    return ir_interp(f, args, nargs, grid, err, errlen) ? DT_RUN_FAILED : DT_RUN_OK;
}

static void interp_unload(DtBackend *b) { (void)b; }

DtBackend dt_interp_backend = {"interp", interp_load, interp_run, interp_unload, NULL};

/* ---- the interpreter with a planted fault ---- */

static void mark_stores(const IrBlock *b, bool *stored, bool *plain);

static bool has_dot(const IrBlock *b)
{
    for (int i = 0; b && i < b->nops; i++)
        if (b->ops[i]->kind == OP_DOT || has_dot(b->ops[i]->body) || has_dot(b->ops[i]->els)) return true;
    return false;
}

static DtRunStatus planted_run(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err, size_t errlen)
{
    (void)b;
    if (ir_interp(f, args, nargs, grid, err, errlen)) return DT_RUN_FAILED;
    bool stored[64] = {false}, plain[64] = {false};
    if (nargs > 64 || !has_dot(f->body)) return DT_RUN_OK;
    mark_stores(f->body, stored, plain);
    for (int i = 0; i < nargs; i++)
        if (stored[i] && f->params[i].dt == DT_F32) ((float *)args[i].data)[0] += 100;
    return DT_RUN_OK;
}

DtBackend dt_planted_backend = {"planted", interp_load, planted_run, interp_unload, NULL};

/* ---- the engine ---- */

const char *dt_verdict_name(DtVerdict v)
{
    static const char *const names[] = {"same", "mismatch", "back end failed", "back end failed fatally",
                                        "interpreter refused"};
    return names[v];
}

static size_t elem_size(DType dt) { return dt == DT_F16 || dt == DT_BF16 ? 2 : dt == DT_I64 ? 8 : 4; }

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Inputs: floats of magnitude 0.25 to 2, integers 1 to 50, either sign; never 0. */
static void fill_random(DType dt, void *p, int64_t n, uint64_t *rng)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_rand(rng);
        double mag = 0.25 + 1.75 * (double)(r >> 11) / 9007199254740992.0;
        double x = (r & 1) ? -mag : mag;
        switch (dt) {
        case DT_F16: ((uint16_t *)p)[i] = ph_f32_to_f16((float)x); break;
        case DT_BF16: ((uint16_t *)p)[i] = ph_f32_to_bf16((float)x); break;
        case DT_I32: ((int32_t *)p)[i] = (int32_t)(1 + (r >> 12) % 50) * ((r & 1) ? -1 : 1); break;
        case DT_I64: ((int64_t *)p)[i] = (int64_t)(1 + (r >> 12) % 50) * ((r & 1) ? -1 : 1); break;
        default: ((float *)p)[i] = (float)x; break;
        }
    }
}

/* Outputs start as a value no program computes, so an element one side
 * writes and the other does not always shows. */
static const uint32_t POISON32 = 0xc5f1a0c3u;   /* f32 -7732.1, or an odd i32 */
static const uint16_t POISON16 = 0xeeeeu;       /* f16 -7096, bf16 -3.7e28 */
static const uint64_t POISON64 = 0xc5f1a0c3c5f1a0c3ull;   /* an i64 no program stores */

static void fill_poison(DType dt, void *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (elem_size(dt) == 2) ((uint16_t *)p)[i] = POISON16;
        else if (elem_size(dt) == 8) ((uint64_t *)p)[i] = POISON64;
        else ((uint32_t *)p)[i] = POISON32;
    }
}

static bool is_poison(DType dt, const void *p, int64_t i)
{
    if (elem_size(dt) == 8) return ((const uint64_t *)p)[i] == POISON64;
    return elem_size(dt) == 2 ? ((const uint16_t *)p)[i] == POISON16 : ((const uint32_t *)p)[i] == POISON32;
}

static double elem(DType dt, const void *p, int64_t i)
{
    switch (dt) {
    case DT_F16: return ph_f16_to_f32(((const uint16_t *)p)[i]);
    case DT_BF16: return ph_bf16_to_f32(((const uint16_t *)p)[i]);
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}

/* The tensors b writes: stored[p] by stores or atomic adds, plain[p] by stores. */
static void mark_stores(const IrBlock *b, bool *stored, bool *plain)
{
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_STORE || op->kind == OP_ATOMIC_ADD) stored[op->param] = true;
        if (op->kind == OP_STORE) plain[op->param] = true;
        mark_stores(op->body, stored, plain);
        mark_stores(op->els, stored, plain);
    }
}

/* The relative tolerance of f's float results: that of the least precise
 * float type it computes in (f32 covers the GPU's approximate exp, log and
 * rsqrt and a different order of summation). */
static double tolerance_of(const IrFunc *f)
{
    bool f16 = false, bf16 = false;
    for (int v = 1; v < f->nvalues; v++) {
        f16 |= f->values[v].type.dt == DT_F16;
        bf16 |= f->values[v].type.dt == DT_BF16;
    }
    for (int i = 0; i < f->nparams; i++) {
        f16 |= f->params[i].is_tensor && f->params[i].dt == DT_F16;
        bf16 |= f->params[i].is_tensor && f->params[i].dt == DT_BF16;
    }
    return bf16 ? 3e-2 : f16 ? 1e-2 : 2e-3;
}

static void append(char *buf, size_t n, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, n - at, fmt, ap);
    va_end(ap);
}

typedef struct {
    IrArg ref[32], be[32];
    int64_t count[32];
    bool stored[32];
} Buffers;

/* A rank-3/4 tensor's strides: laid out as a view that is not row-major,
 * its first two axes swapped in memory (torch's x.transpose(0, 1) of a
 * contiguous tensor), so the kernel must follow the strides it is given. */
static void view_strides(int rank, const int64_t *d, int64_t *st)
{
    int order[4] = {1, 0, 2, 3};   /* memory order, outermost first */
    int64_t run = 1;
    for (int k = rank - 1; k >= 0; k--) {
        st[order[k]] = run;
        run *= d[order[k]];
    }
}

/* The arguments of config f: dims from the spec (a dimension the config
 * specializes and the spec does not give takes the config's value), tensors
 * filled or poisoned (a rank-3/4 one as a view, view_strides), scalars
 * from the spec; a tensor only atomic adds write starts filled as an input
 * (a sum whose terms are near the poison's magnitude would compare within
 * the poison's tolerance; an element no block adds to keeps its value).
 * 0, or 1 with a message. */
static int build_args(const IrFunc *f, const DtSpec *spec, uint64_t seed, Buffers *b, char *err, size_t errlen)
{
    uint64_t rng = seed;
    bool plain[32] = {false};
    mark_stores(f->body, b->stored, plain);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            double v = dt_spec_get(spec, p->name, p->dt == DT_I32 ? 1 : 0.5);
            b->ref[i].i = b->be[i].i = (int32_t)v;
            b->ref[i].f = b->be[i].f = (float)v;
            continue;
        }
        int64_t d[4] = {1, 1, 1, 1};
        for (int a = 0; a < p->rank; a++) {
            d[a] = p->dim_name[a] ? (int64_t)dt_spec_get(spec, p->dim_name[a], 0) : p->dim_value[a];
            for (int m = 0; m < f->nmeta && p->dim_name[a] && !dt_spec_has(spec, p->dim_name[a]); m++)
                if (!strcmp(f->meta[m].name, p->dim_name[a])) d[a] = f->meta[m].value;
            if (d[a] < 1 || d[a] > (1 << 24)) {
                snprintf(err, errlen, "the run spec gives dimension %s of %s no size from 1 to 16777216",
                         p->dim_name[a] ? p->dim_name[a] : "?", p->name);
                return 1;
            }
        }
        b->count[i] = d[0] * d[1] * d[2] * d[3];
        if (b->count[i] > (1 << 26)) {
            snprintf(err, errlen, "tensor %s has %lld elements; the run spec is too large", p->name, (long long)b->count[i]);
            return 1;
        }
        size_t bytes = (size_t)b->count[i] * elem_size(p->dt);
        b->ref[i].data = malloc(bytes);
        b->be[i].data = malloc(bytes);
        if (plain[i]) fill_poison(p->dt, b->ref[i].data, b->count[i]);
        else fill_random(p->dt, b->ref[i].data, b->count[i], &rng);
        memcpy(b->be[i].data, b->ref[i].data, bytes);
        for (int a = 0; a < 4; a++) b->ref[i].dims[a] = b->be[i].dims[a] = a < p->rank ? d[a] : 0;
        if (p->rank > 2) {
            view_strides(p->rank, d, b->ref[i].strides);
            memcpy(b->be[i].strides, b->ref[i].strides, sizeof b->ref[i].strides);
        }
    }
    return 0;
}

static void free_args(const IrFunc *f, Buffers *b)
{
    for (int i = 0; i < f->nparams; i++) {
        free(b->ref[i].data);
        free(b->be[i].data);
    }
}

/* Compares every stored tensor; returns the number of differing elements
 * and describes the first few in rep->message. */
static int64_t compare_tensors(const IrFunc *f, const Buffers *b, DtReport *rep)
{
    double rtol = tolerance_of(f);
    int64_t bad = 0;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor || !b->stored[i]) continue;
        const void *want = b->ref[i].data, *got = b->be[i].data;
        double scale = 1;
        for (int64_t e = 0; e < b->count[i]; e++)
            if (!is_poison(p->dt, want, e) && isfinite(elem(p->dt, want, e)) && fabs(elem(p->dt, want, e)) > scale)
                scale = fabs(elem(p->dt, want, e));
        double tol = p->dt == DT_I32 || p->dt == DT_I64 ? 0 : rtol * scale;
        int64_t cols = p->rank == 2 ? b->ref[i].dims[1] : 1, tbad = 0;
        for (int64_t e = 0; e < b->count[i]; e++) {
            double w = elem(p->dt, want, e), g = elem(p->dt, got, e);
            bool wp = is_poison(p->dt, want, e), gp = is_poison(p->dt, got, e);
            bool same = wp || gp ? wp == gp : (isnan(w) && isnan(g)) || w == g || fabs(g - w) <= tol;
            /* an i64 past 2^53 is not exact as a double: its bits */
            if (p->dt == DT_I64 && !wp && !gp) same = ((const int64_t *)want)[e] == ((const int64_t *)got)[e];
            if (same) continue;
            if (bad + tbad < 4) {
                char ws[40], gs[40];
                snprintf(ws, sizeof ws, wp ? "(not written)" : "%.9g", w);
                snprintf(gs, sizeof gs, gp ? "(not written)" : "%.9g", g);
                append(rep->message, sizeof rep->message, "%s%s[%lld, %lld]: back end %s, interpreter %s", bad + tbad ? "; " : "",
                       p->name, (long long)(e / cols), (long long)(e % cols), gs, ws);
            }
            tbad++;
        }
        if (tbad)
            append(rep->message, sizeof rep->message, " (%s: %lld of %lld elements differ, tolerance %.3g)", p->name,
                   (long long)tbad, (long long)b->count[i], tol);
        bad += tbad;
    }
    return bad;
}

static DtVerdict compare_config(const IrFunc *f, const DtSpec *spec, DtBackend *be, uint64_t seed, DtReport *rep)
{
    Buffers b;
    memset(&b, 0, sizeof b);
    char err[1024] = "";
    if (f->nparams > 32) {
        snprintf(rep->message, sizeof rep->message, "%s has more than 32 parameters", f->name);
        return DT_REFERENCE_FAILED;
    }
    DtVerdict v = DT_SAME;
    if (build_args(f, spec, seed, &b, err, sizeof err)) {
        snprintf(rep->message, sizeof rep->message, "%s", err);
        v = DT_REFERENCE_FAILED;
    } else if (ir_interp(f, b.ref, f->nparams, spec->grid, err, sizeof err)) {
        snprintf(rep->message, sizeof rep->message, "interpreter: %s", err);
        v = DT_REFERENCE_FAILED;
    } else {
        DtRunStatus st = be->run(be, f, b.be, f->nparams, spec->grid, err, sizeof err);
        if (st != DT_RUN_OK) {
            snprintf(rep->message, sizeof rep->message, "%s: %s", be->name, err);
            v = st == DT_RUN_FATAL ? DT_BACKEND_FATAL : DT_BACKEND_FAILED;
        } else if (compare_tensors(f, &b, rep)) {
            v = DT_MISMATCH;
        }
    }
    free_args(f, &b);
    return v;
}

/* Whether the runtime would launch config f for the spec's dims: a
 * meta-parameter named like a tensor dim specializes it, and the config is
 * eligible only where the dim has its value (a spec without the dim takes
 * the config's value). */
static bool eligible(const IrFunc *f, const DtSpec *spec)
{
    for (int m = 0; m < f->nmeta; m++)
        if (dt_spec_has(spec, f->meta[m].name) && dt_spec_get(spec, f->meta[m].name, 0) != (double)f->meta[m].value)
            for (int i = 0; i < f->nparams; i++)
                for (int a = 0; f->params[i].is_tensor && a < f->params[i].rank; a++)
                    if (f->params[i].dim_name[a] && !strcmp(f->params[i].dim_name[a], f->meta[m].name)) return false;
    return true;
}

DtVerdict dt_compare_module(const IrModule *m, const char *source, const DtSpec *spec, DtBackend *be,
                            uint64_t input_seed, const char *only, DtReport *rep)
{
    memset(rep, 0, sizeof *rep);
    char err[1024] = "";
    DtRunStatus st = be->load(be, source, m, err, sizeof err);
    if (st != DT_RUN_OK) {
        snprintf(rep->config, sizeof rep->config, "(module)");
        snprintf(rep->message, sizeof rep->message, "%s: %s", be->name, err);
        rep->failed = 1;
        return st == DT_RUN_FATAL ? DT_BACKEND_FATAL : DT_BACKEND_FAILED;
    }
    DtVerdict worst = DT_SAME;
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        if (only && strcmp(only, f->name)) continue;
        if (!eligible(f, spec)) {
            rep->ineligible++;
            continue;
        }
        DtReport one;
        memset(&one, 0, sizeof one);
        DtVerdict v = compare_config(f, spec, be, input_seed + (uint64_t)i * 0x9e3779b9u, &one);
        rep->configs++;
        if (v == DT_SAME) continue;
        rep->failed++;
        if (worst == DT_SAME || v == DT_REFERENCE_FAILED || v == DT_BACKEND_FATAL) {
            if (worst == DT_SAME || v != worst) {
                snprintf(rep->config, sizeof rep->config, "%s", f->name);
                snprintf(rep->message, sizeof rep->message, "%s", one.message);
            }
            worst = v;
        }
        if (v == DT_BACKEND_FATAL || v == DT_REFERENCE_FAILED) break;
    }
    be->unload(be);
    return worst;
}
