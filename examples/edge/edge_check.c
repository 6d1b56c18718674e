/* edge_check.c: numerical edge cases of the tutorial kernels, checked
 * against double-precision references computed with the same formulas.
 *
 *   edge_check examples/edge/edge.ph
 *
 * The argument is the path `make examples-check` passes; only its folder
 * is used, and there is no edge.ph: the kernels are the other examples'
 * own, unchanged, compiled from ../attention/attention.ph,
 * ../softmax/softmax.ph and ../layernorm/layernorm.ph beside that folder,
 * so an edit of a tutorial is checked here too. The launches go to the interpreter or, as in host.h, to the GPU when
 * PHOBOS_TARGET=gpu or auto finds one.
 *
 * Attention cases, each causal and not, at N_CTX 64 and 128 (the causal
 * tutorial inputs also at 1024): rows whose only unmasked key is key 0,
 * one-hot rows (every score but one at least 512 below it), scores of ~1e3 that
 * overflow a naive exp, exact ties at +-512, a running max that jumps by
 * ~1e3 from key block to key block (and falls), and a NaN or inf in q, an
 * inf in k (scores of +inf in some rows and -inf in others) and +-inf in v.
 *
 * The expected value of every element is its reference in double, rounded
 * to the output's dtype: a NaN there must be a NaN here, an inf the same
 * inf, a finite value finite and within atol + rtol * |ref|. An element
 * left unwritten (the poison pattern, itself a NaN) always fails. */
#include "host.h"
#include "attention/attention_host.h"

#include <libgen.h>

/* ---- elements as classes: finite, +inf, -inf, NaN ---- */

enum { CL_FINITE, CL_PINF, CL_NINF, CL_NAN };

static int edge_class(double x)
{
    return isnan(x) ? CL_NAN : isinf(x) ? (x > 0 ? CL_PINF : CL_NINF) : CL_FINITE;
}

/* x as the kernel must store it: rounded to dt, so a reference beyond
 * f16's 65504 expects inf. */
static double edge_round(DType dt, double x)
{
    uint32_t tmp = 0;
    host_set(dt, &tmp, 0, x);
    return host_get(dt, &tmp, 0);
}

typedef struct {
    size_t n, finite, inf, nan, bad;
    double max_diff;           /* over the elements both sides have finite */
    size_t first;              /* first bad element */
    double got, want;
    const char *why;
} EdgeCmp;

static EdgeCmp edge_compare(DType dt, const void *got, const double *ref, size_t n, double atol,
                            double rtol)
{
    EdgeCmp c = {.n = n};
    for (size_t i = 0; i < n; i++) {
        double g = host_get(dt, got, i), want = edge_round(dt, ref[i]);
        int cw = edge_class(want), cg = edge_class(g);
        c.finite += cw == CL_FINITE;
        c.inf += cw == CL_PINF || cw == CL_NINF;
        c.nan += cw == CL_NAN;
        const char *why = NULL;
        if (host_is_poison(dt, got, i)) why = "unwritten";
        else if (cw != cg) why = "class";
        else if (cw == CL_FINITE) {
            double d = fabs(g - ref[i]);
            if (d > c.max_diff) c.max_diff = d;
            if (!(d <= atol + rtol * fabs(ref[i]))) why = "value";
        }
        if (why && c.bad++ == 0) {
            c.first = i;
            c.got = g;
            c.want = ref[i];
            c.why = why;
        }
    }
    return c;
}

/* One line: "NAME max diff D (finite F, inf I, NaN N) ok", or FAIL with
 * the first bad element as [row, col]. Returns whether it passed. */
static bool edge_report(const char *name, EdgeCmp c, size_t cols)
{
    printf("%-44s max diff %-9.3g (finite %zu, inf %zu, NaN %zu)", name, c.max_diff, c.finite,
           c.inf, c.nan);
    if (!c.bad) {
        printf(" ok\n");
        return true;
    }
    printf(" FAIL (%zu of %zu bad; first at [%zu, %zu]: got %.6g, want %.6g: %s)\n", c.bad, c.n,
           c.first / cols, c.first % cols, c.got, c.want, c.why);
    return false;
}

/* How many elements two references put in different classes. */
static size_t edge_class_diff(DType dt, const double *a, const double *b, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += edge_class(edge_round(dt, a[i])) != edge_class(edge_round(dt, b[i]));
    return k;
}

/* ---- the programs: one module per file, each with its own launcher ---- */

typedef struct {
    char path[4096];
    IrModule *m;
    HostLauncher l;
} Prog;

static bool edge_gpu;   /* whether the runtime is initialized and the launches go to the GPU */

/* Picks the target once, as host_launcher does for one file. */
static bool edge_target(void)
{
    const char *target = getenv("PHOBOS_TARGET");
    if (!target || !*target) target = "auto";
    if (!strcmp(target, "interp")) return true;
    if (ph_init(0) != PH_OK) {
        if (!strcmp(target, "gpu")) {
            fprintf(stderr, "PHOBOS_TARGET=gpu but %s\n", ph_last_error());
            return false;
        }
        printf("(no GPU: %s; running on the interpreter)\n", ph_last_error());
        return true;
    }
    printf("(running on the GPU: %s)\n", ph_device_name());
    edge_gpu = true;
    return true;
}

static bool prog_load(Prog *p, const char *dir, const char *rel)
{
    snprintf(p->path, sizeof p->path, "%s/%s", dir, rel);
    p->m = host_compile(p->path);
    if (!p->m) return false;
    p->l = host_interpreter;
    if (edge_gpu) {
        ph_module *mod;
        if (ph_module_load_file(p->path, &mod)) {
            fprintf(stderr, "%s: %s\n", p->path, ph_last_error());
            return false;
        }
        p->l = (HostLauncher){"gpu", host_gpu_launch, mod, ph_device_multiprocessors()};
    }
    return true;
}

static void prog_free(Prog *p)
{
    if (p->l.launch == host_gpu_launch) ph_module_free(p->l.ctx);
    ir_module_free(p->m);
}

/* ======================= attention ======================= */

enum { PH_EDGE_MAXD = 64 };   /* the head dim; the reference keeps a row of it */

/* The causal kernels visit whole key blocks up to the diagonal and mask
 * inside them; the reference models those blocks with these sizes (the
 * forward's and dq's BR, dkdv's BC). */
static int attn_blocks(const AttnKernels *k, int *br, int *bc)
{
    *br = (int)host_meta(k->fwd, "BR");
    *bc = (int)host_meta(k->dkdv, "BC");
    if (*br <= 0 || *bc <= 0 || host_meta(k->fwd, "BC") <= 0 || host_meta(k->dq, "BR") != *br ||
        host_meta(k->dkdv, "BR") <= 0 || host_meta(k->delta, "BR") <= 0) {
        fprintf(stderr, "attention: a kernel lacks the BR/BC meta-parameters its grid needs\n");
        return 1;
    }
    return 0;
}

/* ---- the reference ---- */

/* Which (query i, key j) pairs a kernel multiplies. Unmasked pairs
 * always. Causal kernels also walk the masked pairs inside the diagonal
 * blocks with probability 0, and 0 * inf or 0 * NaN there is NaN; the
 * reference models that when blocked (the forward and dq walk key blocks
 * j < (i / br + 1) * br, dkdv query blocks i >= j / bc * bc / br * br).
 * Unblocked, it is the mathematical softmax that never touches a masked
 * key. For finite inputs the two are the same numbers. */
typedef struct { bool causal, blocked; int br, bc; } AMask;

static bool a_unmasked(const AMask *mk, int i, int j) { return !mk->causal || j <= i; }

static bool a_fwd_visits(const AMask *mk, int i, int j)
{
    if (a_unmasked(mk, i, j)) return true;
    return mk->blocked && j < (i / mk->br + 1) * mk->br;
}

static bool a_bwd_visits(const AMask *mk, int i, int j)
{
    if (a_unmasked(mk, i, j)) return true;
    return mk->blocked && i >= j / mk->bc * mk->bc / mk->br * mk->br;
}

static double dotd(const double *a, const double *b, int d)
{
    double s = 0;
    for (int c = 0; c < d; c++) s += a[c] * b[c];
    return s;
}

typedef struct { double *o, *dq, *dk, *dv; } ARef;

/* One head, the tutorial's formulas in double: P = softmax(S scale) over
 * the unmasked keys (max by '>', which skips a NaN as the kernels' max
 * does; a NaN score still makes the row's sum NaN), O = P V,
 * delta = rowsum(dO O), dS = P (dO V^T - delta), dQ = dS K scale,
 * dK = dS^T Q scale, dV = P^T dO, summed over the visited pairs. */
static void attn_ref_head(const AttnSize *s, const AMask *mk, const double *q, const double *k,
                          const double *v, const double *dout, double *o, double *dq, double *dk,
                          double *dv, double *p, double *delta)
{
    int n = s->n, d = s->d;
    for (int i = 0; i < n; i++) {
        const double *qi = q + (size_t)i * d;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < n; j++) {
            if (!a_unmasked(mk, i, j)) continue;
            p[(size_t)i * n + j] = dotd(qi, k + (size_t)j * d, d) * s->scale;
            if (p[(size_t)i * n + j] > mx) mx = p[(size_t)i * n + j];
        }
        for (int j = 0; j < n; j++)
            if (a_unmasked(mk, i, j)) sum += (p[(size_t)i * n + j] = exp(p[(size_t)i * n + j] - mx));
        double *oi = o + (size_t)i * d;
        for (int c = 0; c < d; c++) oi[c] = 0;
        for (int j = 0; j < n; j++) {
            double *pij = &p[(size_t)i * n + j];
            if (a_unmasked(mk, i, j)) *pij /= sum;
            else *pij = 0;
            if (!a_fwd_visits(mk, i, j)) continue;
            for (int c = 0; c < d; c++) oi[c] += *pij * v[(size_t)j * d + c];
        }
        /* delta from O as stored in f16, which is what attn_bwd_delta
         * reads: with scores of ~1e3 the rows are near one-hot, dS is the
         * small difference dO.v_j - delta, and O's rounding (2^-11
         * relative) times |k| ~ 8..25 moved dQ and dK by up to 0.03 from a
         * delta of the exact O, beyond atol 1e-2 and rtol 1e-2. */
        double oh[PH_EDGE_MAXD];
        for (int c = 0; c < d; c++) oh[c] = edge_round(DT_F16, oi[c]);
        delta[i] = dotd(dout + (size_t)i * d, oh, d);
    }
    for (int i = 0; i < n; i++) {
        const double *qi = q + (size_t)i * d, *doi = dout + (size_t)i * d;
        double *dqi = dq + (size_t)i * d;
        for (int c = 0; c < d; c++) dqi[c] = 0;
        for (int j = 0; j < n; j++) {
            bool fv = a_fwd_visits(mk, i, j), bv = a_bwd_visits(mk, i, j);
            if (!fv && !bv) continue;
            double pij = p[(size_t)i * n + j];
            double ds = pij * (dotd(doi, v + (size_t)j * d, d) - delta[i]);
            for (int c = 0; c < d; c++) {
                if (fv) dqi[c] += ds * k[(size_t)j * d + c] * s->scale;
                if (bv) {
                    dv[(size_t)j * d + c] += pij * doi[c];
                    dk[(size_t)j * d + c] += ds * qi[c] * s->scale;
                }
            }
        }
    }
}

static void attn_reference(const AttnSize *s, const AMask *mk, const AttnBufs *b, ARef *r)
{
    size_t total = (size_t)s->h * s->n * s->d, head = (size_t)s->n * s->d;
    double *x[4];
    const uint16_t *src[4] = {b->q, b->k, b->v, b->dout};
    for (int t = 0; t < 4; t++) {
        x[t] = xmalloc(total * sizeof(double));
        for (size_t i = 0; i < total; i++) x[t][i] = ph_f16_to_f32(src[t][i]);
    }
    double *p = xmalloc((size_t)s->n * s->n * sizeof *p), *delta = xmalloc((size_t)s->n * sizeof *delta);
    memset(r->dk, 0, total * sizeof *r->dk);
    memset(r->dv, 0, total * sizeof *r->dv);
    for (int h = 0; h < s->h; h++) {
        size_t off = (size_t)h * head;
        attn_ref_head(s, mk, x[0] + off, x[1] + off, x[2] + off, x[3] + off, r->o + off,
                      r->dq + off, r->dk + off, r->dv + off, p, delta);
    }
    for (int t = 0; t < 4; t++) free(x[t]);
    free(p);
    free(delta);
}

/* ---- the inputs of each case ---- */

typedef enum {
    A_TUTORIAL, A_ONEHOT, A_LARGE, A_TIES, A_RISE, A_FALL, A_NAN_Q, A_INF_Q, A_INF_K, A_INF_V,
    A_NCASES
} ACase;

static const char *const acase_name[A_NCASES] = {
    "tutorial", "one-hot", "large", "ties", "rising max", "falling max",
    "nan in q", "inf in q", "inf in k", "+-inf in v",
};

/* Atol 1e-2 as the tutorial where values are O(1); where the scores are
 * ~1e3 an f32 score carries an absolute error of ~1e-4, so p and the
 * gradients get a relative error of that order on top. */
static const double acase_rtol[A_NCASES] = {
    [A_LARGE] = 1e-2, [A_TIES] = 1e-2, [A_RISE] = 1e-2, [A_FALL] = 1e-2, [A_ONEHOT] = 1e-2,
};

/* Where the non-finite inputs go: head 0, a row inside the second block. */
enum { EDGE_ROW = 37, EDGE_KEY = 40 };

/* Sylvester's Hadamard matrix: rows i, j of order 64 are orthogonal. */
static int hadamard(int i, int j) { return __builtin_popcount((unsigned)(i & j)) & 1 ? -1 : 1; }

static void attn_inputs(ACase cs, const AttnSize *s, AttnBufs *b, uint64_t seed)
{
    size_t total = (size_t)s->h * s->n * s->d;
    int n = s->n, d = s->d;
    HostRng r;
    host_rng_seed(&r, seed);
    host_fill_normal(DT_F16, b->q, total, 0.0, 0.5, &r);
    host_fill_normal(DT_F16, b->k, total, 0.0, 0.5, &r);
    host_fill_normal(DT_F16, b->v, total, 0.0, 0.5, &r);
    host_fill_normal(DT_F16, b->dout, total, 0.0, 1.0, &r);
    for (int h = 0; h < s->h; h++)
        for (int i = 0; i < n; i++)
            for (int c = 0; c < d; c++) {
                size_t at = ((size_t)h * n + i) * d + c;
                switch (cs) {
                case A_ONEHOT: {
                    /* k_j = 4 H[j % 64] (negated past 64), q_i = 4 k_t(i) / 4:
                     * score 512 for key t(i), -512 or 0 for the others. */
                    int t = (i * 37 + 11 + 5 * h) % n;
                    int kc = c % 64;
                    host_set(DT_F16, b->k, at, 4.0 * hadamard(i % 64, kc) * (i >= 64 ? -1 : 1));
                    host_set(DT_F16, b->q, at, 4.0 * hadamard(t % 64, kc) * (t >= 64 ? -1 : 1));
                    break;
                }
                case A_LARGE:
                    host_set(DT_F16, b->q, at, host_normal(&r, 0, 8));
                    host_set(DT_F16, b->k, at, host_normal(&r, 0, 8));
                    break;
                case A_TIES:
                    /* q rows +-4, k rows +-4: every score is exactly +-512 */
                    host_set(DT_F16, b->q, at, i % 3 ? 4.0 : -4.0);
                    host_set(DT_F16, b->k, at, (i / 5) % 2 ? 4.0 : -4.0);
                    break;
                case A_RISE: case A_FALL: {
                    /* score = 32 q_i k_j = (1 + (i % 4) / 4) level(j): the
                     * key blocks sit at levels from -1000 to +1000 (rising
                     * or falling), with steps of 0.25 per key inside one */
                    int nb = n / 32, blk = i / 32;
                    if (cs == A_FALL) blk = nb - 1 - blk;
                    double level = 1000.0 * (2.0 * blk / (nb - 1) - 1.0) + 0.25 * (i % 32);
                    host_set(DT_F16, b->k, at, level / 128.0);
                    host_set(DT_F16, b->q, at, 4.0 * (1.0 + 0.25 * (i % 4)));
                    break;
                }
                default: break;
                }
            }
    size_t row = (size_t)EDGE_ROW * d, key = (size_t)EDGE_KEY * d;
    switch (cs) {
    case A_NAN_Q: host_set(DT_F16, b->q, row + 5, NAN); break;
    case A_INF_Q: host_set(DT_F16, b->q, row + 5, INFINITY); break;
    case A_INF_K: host_set(DT_F16, b->k, key + 3, INFINITY); break;   /* scores +inf or -inf by q's sign */
    case A_INF_V:
        host_set(DT_F16, b->v, key + 3, INFINITY);
        host_set(DT_F16, b->v, (size_t)n * d + (size_t)20 * d + 7, -INFINITY);   /* head 1 */
        break;
    default: break;
    }
}

static void attn_poison(const AttnSize *s, AttnBufs *b)
{
    size_t rows = (size_t)s->h * s->n, total = rows * (size_t)s->d;
    uint16_t *outs[] = {b->o, b->dq, b->dk, b->dv};
    for (int i = 0; i < 4; i++) host_poison(DT_F16, outs[i], total);
    host_poison(DT_F32, b->lse, rows);
    host_poison(DT_F32, b->delta, rows);
}

/* Causal row 0 of every head sees only key 0, so its output is v[0] and
 * must be stored bit for bit (p = exp(0) = 1, l = 1), wherever the
 * reference is finite (an inf among the masked keys of the first block
 * makes a column NaN, 0 * inf, which the class check covers). */
static bool attn_first_rows(const AttnSize *s, const AttnBufs *b, const double *ref, const char *label)
{
    int exact = 0, cols = 0;
    for (int h = 0; h < s->h; h++)
        for (int c = 0; c < s->d; c++) {
            size_t at = (size_t)h * s->n * s->d + (size_t)c;
            if (!isfinite(ref[at])) continue;
            cols++;
            exact += b->o[at] == b->v[at];
        }
    printf("%-44s out row 0 == v row 0 bit for bit in %d of %d finite columns of %d heads %s\n",
           label, exact, cols, s->h, exact == cols ? "ok" : "FAIL");
    return exact == cols;
}

/* Runs one case; returns the number of failed lines, -1 when a launch failed. */
static int attn_case(const Prog *pg, ACase cs, int n, int causal, uint64_t seed)
{
    AttnSize s = {1, 2, n, PH_EDGE_MAXD, 0.5};   /* Z is 1: rows are H N_CTX */
    AttnKernels k;
    int br, bc;
    if (attn_pick(pg->m, &s, &k) || attn_blocks(&k, &br, &bc)) return -1;
    size_t rows = (size_t)s.h * s.n, total = rows * (size_t)s.d;
    AttnBufs b;
    uint16_t **tiles[] = {&b.q, &b.k, &b.v, &b.dout, &b.o, &b.dq, &b.dk, &b.dv};
    for (int i = 0; i < 8; i++) *tiles[i] = host_alloc(DT_F16, total);
    b.lse = host_alloc(DT_F32, rows);
    b.delta = host_alloc(DT_F32, rows);
    ARef ref[2];
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 4; i++) (&ref[t].o)[i] = xmalloc(total * sizeof(double));

    attn_inputs(cs, &s, &b, seed);
    attn_poison(&s, &b);
    int failed = 0;
    if (attn_run(&pg->l, &k, &s, causal, &b)) failed = -1;
    if (failed == 0) {
        AMask blocked = {causal, true, br, bc}, plain = {causal, false, br, bc};
        attn_reference(&s, &blocked, &b, &ref[0]);
        attn_reference(&s, &plain, &b, &ref[1]);
        char label[64];
        snprintf(label, sizeof label, "%s %s N %d", acase_name[cs], causal ? "causal" : "full", n);
        const char *names[] = {"out", "dq", "dk", "dv"};
        const uint16_t *got[] = {b.o, b.dq, b.dk, b.dv};
        for (int i = 0; i < 4; i++) {
            char name[96];
            snprintf(name, sizeof name, "%s %s", label, names[i]);
            const double *want = (&ref[0].o)[i];
            failed += !edge_report(name, edge_compare(DT_F16, got[i], want, total, 1e-2, acase_rtol[cs]),
                                   (size_t)s.d);
            size_t differ = edge_class_diff(DT_F16, want, (&ref[1].o)[i], total);
            if (differ)
                printf("    (%zu of these are NaN only because the causal kernels multiply the zero"
                       " probabilities of masked keys in the diagonal blocks: 0 * inf, 0 * NaN)\n",
                       differ);
        }
        if (causal) failed += !attn_first_rows(&s, &b, ref[0].o, label);
    }
    for (int i = 0; i < 8; i++) free(*tiles[i]);
    free(b.lse);
    free(b.delta);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 4; i++) free((&ref[t].o)[i]);
    return failed;
}

/* ======================= softmax ======================= */

static bool fits_n(const IrFunc *f, const void *ctx)
{
    return host_meta(f, "N") == *(const int64_t *)ctx && host_meta(f, "BM") > 0;
}

enum { SM_ROWS = 11, SM_N = 128 };

static const char *const sm_row_name[SM_ROWS] = {
    "normal", "near +65504 (ties)", "near -65504, one max", "all -inf", "one finite, rest -inf",
    "one +inf", "one NaN", "constant", "+65504 and -65504", "one -inf", "one tiny max",
};

static void sm_inputs(uint16_t *x, HostRng *r)
{
    for (int i = 0; i < SM_ROWS; i++)
        for (int j = 0; j < SM_N; j++) {
            double v;
            switch (i) {
            case 0: v = host_normal(r, 0, 2); break;
            case 1: v = host_uniform(r) < 0.5 ? 65504 : 65472; break;   /* exp(x) overflows f32 */
            case 2: v = j == 77 ? -65472 : -65504; break;
            case 3: v = -INFINITY; break;
            case 4: v = j == 5 ? 3.0 : -INFINITY; break;
            case 5: v = j == 9 ? INFINITY : host_normal(r, 0, 2); break;
            case 6: v = j == 9 ? NAN : host_normal(r, 0, 2); break;
            case 7: v = 7.0; break;
            case 8: v = j % 2 ? 65504 : -65504; break;
            case 9: v = j == 3 ? -INFINITY : host_normal(r, 0, 2); break;
            default: v = j == 100 ? -60000 : -65504; break;   /* the max alone, exp(-5504) = 0 */
            }
            host_set(DT_F16, x, (size_t)i * SM_N + j, v);
        }
}

/* softmax_check's reference: exp(x - max) / sum, max by fmax (NaN skipped). */
static void sm_reference(const uint16_t *x, double *y)
{
    for (int i = 0; i < SM_ROWS; i++) {
        double mx = -INFINITY, sum = 0, *out = y + (size_t)i * SM_N;
        for (int j = 0; j < SM_N; j++) mx = fmax(mx, ph_f16_to_f32(x[(size_t)i * SM_N + j]));
        for (int j = 0; j < SM_N; j++) sum += (out[j] = exp(ph_f16_to_f32(x[(size_t)i * SM_N + j]) - mx));
        for (int j = 0; j < SM_N; j++) out[j] /= sum;
    }
}

static int softmax_cases(const Prog *pg)
{
    int64_t n = SM_N;
    const IrFunc *f = host_pick(pg->m, "softmax", fits_n, &n);
    if (!f || !host_signature(f, "f16:2 f32:2")) return -1;
    size_t total = (size_t)SM_ROWS * SM_N;
    uint16_t *x = host_alloc(DT_F16, total);
    float *y = host_alloc(DT_F32, total);
    double *ref = xmalloc(total * sizeof *ref);
    HostRng r;
    host_rng_seed(&r, 7);
    sm_inputs(x, &r);
    host_poison(DT_F32, y, total);
    sm_reference(x, ref);
    IrArg args[] = {host_tensor2(x, SM_ROWS, SM_N), host_tensor2(y, SM_ROWS, SM_N)};
    int failed = 0;
    if (host_launch(&pg->l, f, args, 2, host_cdiv(SM_ROWS, host_meta(f, "BM")), 1, 1)) failed = -1;
    for (int i = 0; i < SM_ROWS && failed >= 0; i++) {
        char name[96];
        snprintf(name, sizeof name, "softmax row %s", sm_row_name[i]);
        size_t at = (size_t)i * SM_N;
        failed += !edge_report(name, edge_compare(DT_F32, y + at, ref + at, SM_N, 1e-6, 1e-4), SM_N);
    }
    free(x);
    free(y);
    free(ref);
    return failed;
}

/* ======================= layernorm ======================= */

enum { LN_ROWS = 9, LN_N = 256 };

static const char *const ln_row_name[LN_ROWS] = {
    "normal", "constant 3 (variance 0)", "constant 1e30 (variance 0)", "scale 1e17",
    "1000 + normal", "one +inf", "scale 1e-20", "one NaN", "constant -0.5, one 0",
};

static void ln_inputs(uint16_t *x, HostRng *r)
{
    for (int i = 0; i < LN_ROWS; i++)
        for (int j = 0; j < LN_N; j++) {
            double v;
            switch (i) {
            case 0: v = host_normal(r, 1.5, 2); break;
            case 1: v = 3.0; break;
            case 2: v = 1e30; break;
            case 3: v = host_normal(r, 0, 1e17); break;
            case 4: v = 1000 + host_normal(r, 0, 1); break;
            case 5: v = j == 17 ? INFINITY : host_normal(r, 0, 1); break;
            case 6: v = host_normal(r, 0, 1e-20); break;
            case 7: v = j == 17 ? NAN : host_normal(r, 0, 1); break;
            default: v = j == 200 ? 0 : -0.5; break;
            }
            host_set(DT_BF16, x, (size_t)i * LN_N + j, v);
        }
}

/* layernorm_check's reference in double. */
static void ln_reference(const uint16_t *x, const float *w, const float *b, float eps, double *y)
{
    for (int i = 0; i < LN_ROWS; i++) {
        const uint16_t *row = x + (size_t)i * LN_N;
        double mean = 0, var = 0;
        for (int j = 0; j < LN_N; j++) mean += ph_bf16_to_f32(row[j]);
        mean /= LN_N;
        for (int j = 0; j < LN_N; j++) {
            double c = ph_bf16_to_f32(row[j]) - mean;
            var += c * c;
        }
        var /= LN_N;
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int j = 0; j < LN_N; j++)
            y[(size_t)i * LN_N + j] = (ph_bf16_to_f32(row[j]) - mean) * rstd * w[j] + b[j];
    }
}

/* eps 1e-5 and eps 0: with eps 0 a constant row is 0 * rsqrt(0) = NaN
 * in double too, and the 1e-20 row needs variances near f32's subnormals. */
static int layernorm_cases(const Prog *pg)
{
    int64_t n = LN_N;
    const IrFunc *f = host_pick(pg->m, "layernorm", fits_n, &n);
    if (!f || !host_signature(f, "bf16:2 f32:1 f32:1 bf16:2 f32")) return -1;
    size_t total = (size_t)LN_ROWS * LN_N;
    uint16_t *x = host_alloc(DT_BF16, total), *y = host_alloc(DT_BF16, total);
    float *w = host_alloc(DT_F32, LN_N), *bias = host_alloc(DT_F32, LN_N);
    double *ref = xmalloc(total * sizeof *ref);
    HostRng r;
    host_rng_seed(&r, 11);
    ln_inputs(x, &r);
    host_fill_normal(DT_F32, w, LN_N, 1.0, 0.2, &r);
    host_fill_normal(DT_F32, bias, LN_N, 0.0, 0.5, &r);
    int failed = 0;
    const float epss[] = {1e-5f, 0.0f};
    for (int e = 0; e < 2 && failed >= 0; e++) {
        host_poison(DT_BF16, y, total);
        ln_reference(x, w, bias, epss[e], ref);
        IrArg args[] = {host_tensor2(x, LN_ROWS, LN_N), host_tensor1(w, LN_N), host_tensor1(bias, LN_N),
                        host_tensor2(y, LN_ROWS, LN_N), host_f32(epss[e])};
        if (host_launch(&pg->l, f, args, 5, host_cdiv(LN_ROWS, host_meta(f, "BM")), 1, 1)) {
            failed = -1;
            break;
        }
        for (int i = 0; i < LN_ROWS; i++) {
            char name[96];
            snprintf(name, sizeof name, "layernorm eps %g row %s", epss[e], ln_row_name[i]);
            size_t at = (size_t)i * LN_N;
            failed += !edge_report(name, edge_compare(DT_BF16, y + at, ref + at, LN_N, 1e-3, 1e-2), LN_N);
        }
    }
    free(x);
    free(y);
    free(w);
    free(bias);
    free(ref);
    return failed;
}

/* ======================= main ======================= */

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s examples/edge/edge.ph\n", argv[0]);
        return 2;
    }
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", argv[1]);
    const char *dir = dirname(dirbuf);
    if (!edge_target()) return 1;
    Prog progs[3];
    memset(progs, 0, sizeof progs);
    const char *files[3] = {"../attention/attention.ph", "../softmax/softmax.ph", "../layernorm/layernorm.ph"};
    int loaded = 0, failed = 0, lines = 0;
    for (; loaded < 3; loaded++)
        if (!prog_load(&progs[loaded], dir, files[loaded])) break;
    if (loaded < 3) {
        failed = -1;
        if (progs[loaded].m) loaded++;
    }
    const int sizes[] = {64, 128};
    for (int c = 0; c < A_NCASES && failed >= 0; c++)
        for (int si = 0; si < 2 && failed >= 0; si++)
            for (int causal = 0; causal <= 1 && failed >= 0; causal++) {
                int f = attn_case(&progs[0], (ACase)c, sizes[si], causal, 100 + (uint64_t)c);
                failed = f < 0 ? -1 : failed + f;
                lines += 4 + causal;
            }
    if (failed >= 0) {   /* the tutorial's size, causal: row 0 of each head still alone */
        int f = attn_case(&progs[0], A_TUTORIAL, 1024, 1, 100);
        failed = f < 0 ? -1 : failed + f;
        lines += 5;
    }
    if (failed >= 0) {
        int f = softmax_cases(&progs[1]);
        failed = f < 0 ? -1 : failed + f;
        lines += SM_ROWS;
    }
    if (failed >= 0) {
        int f = layernorm_cases(&progs[2]);
        failed = f < 0 ? -1 : failed + f;
        lines += 2 * LN_ROWS;
    }
    if (failed < 0) printf("edge: FAIL (a compilation or launch failed)\n");
    else printf("edge (%s): %d of %d ok\n", edge_gpu ? "gpu" : "interpreter", lines - failed, lines);
    for (int i = 0; i < loaded; i++) prog_free(&progs[i]);
    if (edge_gpu) ph_shutdown();
    return failed != 0;
}
