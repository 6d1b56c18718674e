/* phgen.c: random valid Phobos programs for differential testing, and the
 * reducer that shrinks one (phgen.h says what a program looks like).
 *
 * The generator works on shapes made of four extents: 1 and the tile sizes
 * BM, BN, BK, whose windows lie along the tensor dims M, N, K at the starts
 * r0, c0 and the current K offset. An expression is generated to fit a
 * target shape (each of its dims the target's or 1), so any two values for
 * one target broadcast together whatever the config. Every value carries
 * its dtype as sema will infer it, a bound on its magnitude and whether it
 * is exact: computed bit-identically by every correct back end (integers,
 * indices, raw inputs and what neg/abs/max/min/where/conversions and
 * multiplications by 2 or 0.5 make of them). Conditions and float->int
 * conversions take exact values only, so rounding can never flip a branch.
 *
 * The body is a tree of statements, each with the name it declares and the
 * names it uses; the reducer drops a statement when nothing left uses its
 * name, and prints the tree again. */
#include "phgen_gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(PF_COUNT <= 64, "PhgenProgram.features holds one bit a feature in a uint64_t");

const char *const phgen_feature_names[PF_COUNT] = {
    "unary", "binary", "math", "row_reduce", "col_reduce",
    "dot_fma", "dot_t", "dot_transpose", "dot_tc_f16", "dot_tc_bf16", "dot_k_loop",
    "iota_mask", "where", "convert", "float_to_int", "int_div",
    "for_carry", "step_not_dividing", "if_elif_else", "early_return", "store_loop",
    "edge_window", "rank1", "nonpow2_tile", "pow2_tile",
    "f32", "f16", "bf16", "i32_tensor",
    "multi_config", "launch_meta", "threads_32", "threads_256",
    "aligned", "specialized", "multi_kernel", "online_softmax", "attention_tc",
    "loop_load", "invariant_load",
    "tanh_erf_sigmoid", "pow", "fma", "inf_nan",
    "arg_reduce", "cumsum", "reshape", "rank1_store",
    "element", "gather", "scatter",
    "i8_convert", "dot_i8",
    "masked_load", "masked_store", "static_range", "helper",
    "f8_convert", "dot_f8",
    "strided_view",
    "while", "device_assert",
    "i64_arith", "i64_tensor",
};

void phgen_default_options(PhgenOptions *o)
{
    o->max_stmts = 7;
    o->max_depth = 3;
    o->max_configs = 8;
    o->max_tile = 2048;
    o->pct_aligned = 12;
    o->pct_specialized = 15;
    o->pct_two_kernels = 12;
    o->pct_attention = 6;
    o->pct_stream = 35;
    o->pct_math_more = 40;
    o->pct_index = 15;
    o->pct_types = 30;
    o->pct_mask = 15;
    o->pct_flow = 20;
    o->pct_strided = 15;
    o->pct_while = 25;
    o->pct_i64 = 40;
    o->pct_warp_specialize = 25;
    o->pct_atomic = 20;
    o->pct_assert = 5;
}

/* ---- the program's memory and its statement tree ---- */

static void *keep(PhgenProgram *p, void *ptr)
{
    if (p->nallocs == p->capallocs) {
        p->capallocs = p->capallocs ? 2 * p->capallocs : 64;
        p->allocs = realloc(p->allocs, sizeof *p->allocs * (size_t)p->capallocs);
    }
    return p->allocs[p->nallocs++] = ptr;
}

static char *vfmt(PhgenProgram *p, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = malloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return keep(p, s);
}

char *pfmt(PhgenProgram *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(p, fmt, ap);
    va_end(ap);
    return s;
}

Node *node_new(PhgenProgram *p, const char *head, bool block)
{
    Node *n = keep(p, calloc(1, sizeof *n));
    n->head = pfmt(p, "%s", head);
    n->block = block;
    return n;
}

void node_add(PhgenProgram *p, Node *parent, Node *child)
{
    if (parent->nbody == parent->capbody) {
        parent->capbody = parent->capbody ? 2 * parent->capbody : 8;
        Node **b = malloc(sizeof *b * (size_t)parent->capbody);
        if (parent->nbody) memcpy(b, parent->body, sizeof *b * (size_t)parent->nbody);
        parent->body = keep(p, b);
    }
    parent->body[parent->nbody++] = child;
}

/* ---- configs and the run spec ---- */

static void pick_values(Gen *g, Meta *m, const char *name, const int *pool, int npool, int count)
{
    snprintf(m->name, sizeof m->name, "%s", name);
    m->role = name[0] == 'B' ? META_TILE : name[0] == 'N' && name[1] == 'T' ? META_THREADS : META_DIM;
    m->n = 0;
    while (m->n < count) {
        int v = pool[rnd(g, npool)];
        bool dup = false;
        for (int i = 0; i < m->n; i++) dup |= m->v[i] == v;
        if (!dup) m->v[m->n++] = v;
    }
}

static int meta_min(const Meta *m) { int r = m->v[0]; for (int i = 1; i < m->n; i++) if (m->v[i] < r) r = m->v[i]; return r; }

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }
static int meta_lcm(const Meta *m) { int r = 1; for (int i = 0; i < m->n; i++) r = r / gcd(r, m->v[i]) * m->v[i]; return r; }

/* A specialized dim (N or K named in the autotune, so compile-time in each
 * config: the spec gives it one config's value) and @ph.aligned promises
 * (dims the spec makes multiples of every value of the tile size, windows
 * along them never past the edge: choose_spec and window_start see to it). */
static void choose_promises(Gen *g)
{
    static const int dims[] = {8, 16, 24, 32, 48, 64, 5, 12};
    PhgenProgram *p = g->p;
    p->specialized = E1;
    if (chance(g, g->o.pct_specialized)) {
        p->specialized = chance(g, 50) ? EN : EK;
        pick_values(g, &p->meta[p->nmeta++], ext_dim[p->specialized], dims, 8, chance(g, 40) ? 2 : 1);
        feature(g, PF_SPECIALIZED);
    }
    for (int e = EM; e <= EK; e++)
        if (e != p->specialized && chance(g, g->o.pct_aligned) && meta_lcm(&p->meta[e - EM]) <= 192) {
            p->aligned[e] = true;
            feature(g, PF_ALIGNED);
        }
    p->two_kernels = chance(g, g->o.pct_two_kernels);
    if (p->two_kernels) {
        static const int threads[] = {32, 64, 128, 256};
        p->launch2 = p->launch == -1 ? -1 : chance(g, 25) ? 0 : threads[rnd(g, 4)];
        feature(g, PF_MULTI_KERNEL);
    }
}

static void choose_configs(Gen *g)
{
    static const int bm[] = {4, 8, 16, 32, 64, 1, 3, 6, 12, 20, 24, 48}, bn[] = {8, 16, 32, 64, 2, 5, 12, 24, 40},
                     bk[] = {4, 8, 16, 32, 3, 6, 12, 20};
    static const int tbm[] = {16, 32, 48, 64}, tbn[] = {8, 16, 24, 32, 40, 64}, tbk[] = {16, 32, 48};
    static const int threads[] = {32, 64, 96, 128, 256, 192};
    PhgenProgram *p = g->p;
    p->tc = chance(g, 30);
    int launch = rnd(g, 10);
    p->launch = launch < 2 ? 0 : launch < 5 ? threads[rnd(g, 6)] : -1;
    int counts[4];
    do {
        int prod = 1;
        for (int i = 0; i < 4; i++) {
            counts[i] = chance(g, 40) ? 2 : 1;
            if (i == 3 && p->launch != -1) counts[i] = 1;
            prod *= counts[i];
        }
        if (prod <= g->o.max_configs) break;
    } while (1);
    do {
        if (p->tc) {
            pick_values(g, &p->meta[0], "BM", tbm, 4, counts[0]);
            pick_values(g, &p->meta[1], "BN", tbn, 6, counts[1]);
            pick_values(g, &p->meta[2], "BK", tbk, 3, counts[2]);
        } else {
            pick_values(g, &p->meta[0], "BM", bm, 12, counts[0]);
            pick_values(g, &p->meta[1], "BN", bn, 9, counts[1]);
            pick_values(g, &p->meta[2], "BK", bk, 8, counts[2]);
        }
    } while (meta_max(&p->meta[0]) * meta_max(&p->meta[1]) > g->o.max_tile);
    p->nmeta = 3;
    if (p->launch == -1) {
        pick_values(g, &p->meta[p->nmeta++], "NT", threads, 5, counts[3]);
        feature(g, PF_LAUNCH_META);
    }
    choose_promises(g);
    for (int d = 0; d < 3; d++) {
        g->maxv[EM + d] = meta_max(&p->meta[d]);
        g->minv[EM + d] = meta_min(&p->meta[d]);
        for (int i = 0; i < p->meta[d].n; i++) {
            int v = p->meta[d].v[i];
            feature(g, (v & (v - 1)) ? PF_NONPOW2_TILE : PF_POW2_TILE);
        }
    }
    g->maxv[E1] = g->minv[E1] = 1;
    if (counts[0] * counts[1] * counts[2] * counts[3] > 1) feature(g, PF_MULTI_CONFIG);
    int t = p->launch > 0 ? p->launch : p->launch == 0 ? 128 : 0;
    if (t == 32) feature(g, PF_THREADS_32);
    if (t == 256) feature(g, PF_THREADS_256);
    for (int i = 0; p->launch == -1 && i < p->meta[3].n; i++) {
        if (p->meta[3].v[i] == 32) feature(g, PF_THREADS_32);
        if (p->meta[3].v[i] == 256) feature(g, PF_THREADS_256);
    }
    /* decorators after @ph.kernel come in any order */
    int order[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) {
        int j = rnd(g, i + 1), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    memcpy(p->deco_order, order, sizeof order);
}

static void choose_spec(Gen *g)
{
    static const double svals[] = {0.75, -0.5, 1.25, 2.0};
    DtSpec *s = &g->p->spec;
    dt_spec_init(s);
    PhgenProgram *p = g->p;
    int M = 1 + rnd(g, 2 * g->maxv[EM] + 12), N = 1 + rnd(g, 2 * g->maxv[EN] + 12), K = 1 + rnd(g, 3 * g->maxv[EK] + 8);
    int *dim[4] = {NULL, &M, &N, &K};
    for (int e = EM; e <= EK; e++)
        if (p->aligned[e]) *dim[e] = meta_lcm(&p->meta[e - EM]) * (1 + rnd(g, 3));
    if (p->specialized != E1) {
        const Meta *sm = &p->meta[p->nmeta - 1];
        *dim[p->specialized] = sm->v[rnd(g, sm->n)];
    }
    dt_spec_set(s, "M", M);
    dt_spec_set(s, "N", N);
    dt_spec_set(s, "K", K);
    g->n_value = 1 + rnd(g, 10);
    dt_spec_set(s, "n", g->n_value);
    dt_spec_set(s, "s", svals[rnd(g, 4)]);
    int gx = (M + g->minv[EM] - 1) / g->minv[EM], gy = (N + g->minv[EN] - 1) / g->minv[EN];
    s->grid[0] = (gx < 3 ? gx : 3) + rnd(g, 2);
    s->grid[1] = (gy < 2 ? gy : 2) + rnd(g, 2);
    s->grid[2] = 1;
    /* no block starts past an aligned dim's last full tile */
    if (p->aligned[EM] && s->grid[0] > M / g->maxv[EM]) s->grid[0] = M / g->maxv[EM];
    if (p->aligned[EN] && s->grid[1] > N / g->maxv[EN]) s->grid[1] = N / g->maxv[EN];
}

/* ---- the whole program ---- */

/* Features recorded while generating may belong to a subexpression that
 * was then replaced; those that the text shows are taken from the text. */
static void features_from_text(PhgenProgram *p)
{
    static const struct { PhgenFeature f; const char *a, *b; } sig[] = {
        {PF_IOTA_MASK, "ph.iota(", NULL}, {PF_DOT_T, "ph.dot_t(", NULL}, {PF_WHERE, "ph.where(", NULL},
        {PF_ROW_REDUCE, "ph.row", NULL}, {PF_COL_REDUCE, "ph.col", NULL}, {PF_F2I, "ph.i32(", NULL},
        {PF_EARLY_RETURN, "return\n", NULL}, {PF_STORE_LOOP, "in range(0, BM, ", NULL},
        {PF_IF_ELIF_ELSE, "elif ", "else:"}, {PF_DOT_K_LOOP, "in range(0, K, BK):", NULL},
        {PF_INT_DIV, " // ", " % "}, {PF_POW, "ph.pow(", NULL}, {PF_FMA, "ph.fma(", NULL},
    };
    char *src = phgen_source(p);
    for (size_t i = 0; i < sizeof sig / sizeof *sig; i++) {
        bool has = strstr(src, sig[i].a) && (!sig[i].b || strstr(src, sig[i].b));
        if (sig[i].f == PF_INT_DIV) has = strstr(src, sig[i].a) || strstr(src, sig[i].b);
        p->features = has ? p->features | 1ull << sig[i].f : p->features & ~(1ull << sig[i].f);
    }
    bool smooth = strstr(src, "ph.tanh(") || strstr(src, "ph.erf(") || strstr(src, "ph.sigmoid(");
    bool special = strstr(src, "ph.inf") || strstr(src, "ph.nan");
    p->features = smooth ? p->features | 1ull << PF_TANH_ERF_SIGMOID : p->features & ~(1ull << PF_TANH_ERF_SIGMOID);
    p->features = special ? p->features | 1ull << PF_INF_NAN : p->features & ~(1ull << PF_INF_NAN);
    free(src);
}

PhgenProgram *phgen_generate(uint64_t seed, const PhgenOptions *opt)
{
    Gen *g = calloc(1, sizeof *g);
    PhgenProgram *p = calloc(1, sizeof *p);
    g->p = p;
    p->seed = seed;
    if (opt) g->o = *opt;
    else phgen_default_options(&g->o);
    g->rng = seed * 0x2545f4914f6cdd1dull + 0x1234567;
    g->rng_more = seed * 0x9e3779b97f4a7c15ull + 0x2545f491;
    g->rng_index = seed * 0xbf58476d1ce4e5b9ull + 0x7f4a7c15;
    g->rng_types = seed * 0xd1b54a32d192ed03ull + 0x8bb84b93;
    g->rng_mask = seed * 0xd1b54a32d192ed03ull + 0x8bb84b93;
    g->rng_flow = seed * 0xa0761d6478bd642full + 0xe7037ed1;
    g->rng_strided = seed * 0xe7037ed1a0b428dbull + 0x589965cc;
    g->rng_while = seed * 0x8ebc6af09c88c6e3ull + 0x589965cc;
    g->rng_assert = seed * 0xc2b2ae3d27d4eb4full + 0x165667b1;
    g->rng_i64 = seed * 0x94d049bb133111ebull + 0x27d4eb2f;
    g->rng_ws = seed * 0xff51afd7ed558ccdull + 0xc4ceb9fe;
    g->rng_atomic = seed * 0xc4ceb9fe1a85ec53ull + 0x85ebca6b;
    g->kstart = "0";
    p->root.block = true;
    choose_configs(g);
    choose_spec(g);
    sym_push(g, "r0", DT_I32, shape0(), true, false, 4096);
    sym_push(g, "c0", DT_I32, shape0(), true, false, 4096);
    int nstmts = 1 + rnd(g, g->o.max_stmts);
    for (int i = 0; i < nstmts; i++) gen_stmt(g, &p->root, 0);
    gen_added_dots(g, &p->root);
    int nout = 1 + rnd(g, 3);
    g->storing = true;
    for (int i = 0; i < nout; i++) gen_store(g, &p->root);
    /* every dimension name the body may use is declared by some tensor */
    bool has_k = false;
    for (int i = 0; i < p->ntens; i++) has_k |= p->tens[i].e[0] == EK || p->tens[i].e[1] == EK;
    if (!has_k) tensor_for(g, 1, EK, E1, DT_F32);
    /* a producer warpgroup (and warpgroups taking turns) where dots may go to wgmma */
    if (p->tc && rnd_from(g, &g->rng_ws, 100) < g->o.pct_warp_specialize) p->warp_specialize = 1 + rnd_from(g, &g->rng_ws, 2);
    free(g);
    features_from_text(p);
    return p;
}

void phgen_free(PhgenProgram *p)
{
    if (!p) return;
    for (int i = 0; i < p->nallocs; i++) free(p->allocs[i]);
    free(p->allocs);
    free(p);
}

const DtSpec *phgen_spec(const PhgenProgram *p) { return &p->spec; }
uint64_t phgen_features(const PhgenProgram *p) { return p->features; }

static void print_node(FILE *out, const Node *n, int indent)
{
    if (n->dropped) return;
    fprintf(out, "%*s%s\n", indent, "", n->head);
    if (!n->block) return;
    int alive = 0;
    for (int i = 0; i < n->nbody; i++)
        if (!n->body[i]->dropped) {
            print_node(out, n->body[i], indent + 4);
            alive++;
        }
    if (!alive) fprintf(out, "%*spass\n", indent + 4, "");
    if (n->next) print_node(out, n->next, indent);
}

/* Whether a tensor of the program has dim e (an @ph.aligned promise may
 * name only such a dim: the reducer and the choice of tensors can leave a
 * promised dim with no tensor at all). */
static bool dim_declared(const PhgenProgram *p, int e)
{
    for (int i = 0; i < p->ntens; i++)
        if (p->tens[i].e[0] == e || (p->tens[i].rank == 2 && p->tens[i].e[1] == e)) return true;
    return false;
}

/* The decorators, in the program's order (reversed for the second kernel). */
static void print_decorators(FILE *out, const PhgenProgram *p, int launch, bool reversed)
{
    fprintf(out, "@ph.kernel\n");
    for (int i = 0; i < 4; i++) {
        int d = p->deco_order[reversed ? 3 - i : i];
        if (d == 0 && p->tc) fprintf(out, "@ph.tensorcore\n");
        if (d == 1 && launch > 0) fprintf(out, "@ph.launch(%d)\n", launch);
        if (d == 1 && launch < 0) fprintf(out, "@ph.launch(NT)\n");
        bool promised[EK + 1] = {false};
        for (int e = EM; e <= EK; e++) promised[e] = p->aligned[e] && dim_declared(p, e);
        if (d == 3 && (promised[EM] || promised[EN] || promised[EK])) {
            fprintf(out, "@ph.aligned(");
            for (int e = EM, first = 1; e <= EK; e++)
                if (promised[e]) {
                    fprintf(out, "%s%s=\"%s\"", first ? "" : ", ", ext_dim[e], ext_meta[e]);
                    first = 0;
                }
            fprintf(out, ")\n");
        }
        if (d == 2) {
            fprintf(out, "@ph.autotune(");
            for (int m = 0; m < p->nmeta; m++) {
                fprintf(out, "%s%s=[", m ? ", " : "", p->meta[m].name);
                for (int v = 0; v < p->meta[m].n; v++) fprintf(out, "%s%d", v ? ", " : "", p->meta[m].v[v]);
                fprintf(out, "]");
            }
            fprintf(out, ")\n");
        }
    }
    if (p->warp_specialize) fprintf(out, "@ph.warp_specialize(%d)\n", p->warp_specialize);
}

static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* Whether text holds name as a whole identifier. */
static bool has_word(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = strstr(text, name); s; s = strstr(s + 1, name))
        if ((s == text || !ident_char(s[-1])) && !ident_char(s[n])) return true;
    return false;
}

/* The parameters the body uses: the tensors it names, plus for each dim
 * name it (or a decorator) uses and no such tensor declares, one tensor that does (the
 * reducer leaves tensors behind that nothing reads any more). */
static void print_params(FILE *out, const PhgenProgram *p, const char *body)
{
    bool keep[sizeof p->tens / sizeof p->tens[0]] = {false}, unheld[EK + 1] = {false};
    for (int i = 0; i < p->ntens; i++) keep[i] = has_word(body, p->tens[i].name);
    for (int e = EM; e <= EK; e++) {
        bool declared = false;
        int first = -1;
        for (int i = 0; i < p->ntens; i++) {
            bool has = p->tens[i].e[0] == e || (p->tens[i].rank == 2 && p->tens[i].e[1] == e);
            if (has && first < 0) first = i;
            declared |= has && keep[i];
        }
        bool named = has_word(body, ext_dim[e]) || p->aligned[e] || p->specialized == e;   /* decorators name it too */
        if (!declared && first >= 0 && named) keep[first] = true;
        unheld[e] = named && first < 0;   /* a scalar leaf named a dim no tensor of the program has */
    }
    for (int e = EM; e <= EK; e++)
        if (unheld[e]) fprintf(out, "Dim%s: ph.tensor[ph.f32][%s], ", ext_dim[e], ext_dim[e]);
    for (int i = 0; i < p->ntens; i++) {
        const Tensor *t = &p->tens[i];
        if (!keep[i]) continue;
        if (t->view) fprintf(out, "%s: ph.tensor[%s][2, %s, 3, %s], ", t->name, dtname(t->dt), ext_dim[t->e[0]], ext_dim[t->e[1]]);
        else if (t->rank == 1) fprintf(out, "%s: ph.tensor[%s][%s], ", t->name, dtname(t->dt), ext_dim[t->e[0]]);
        else fprintf(out, "%s: ph.tensor[%s][%s, %s], ", t->name, dtname(t->dt), ext_dim[t->e[0]], ext_dim[t->e[1]]);
    }
}

char *phgen_source(const PhgenProgram *p)
{
    char *body = NULL, *buf = NULL, spec[512];
    size_t blen = 0, len = 0;
    FILE *bout = open_memstream(&body, &blen);
    fprintf(bout, "    r0: ph.let = ph.ctx.block.x * BM\n    c0: ph.let = ph.ctx.block.y * BN\n");
    for (int i = 0; i < p->root.nbody; i++) print_node(bout, p->root.body[i], 4);
    fclose(bout);
    FILE *out = open_memstream(&buf, &len);
    dt_spec_format(&p->spec, spec, sizeof spec);
    fprintf(out, "# A program from tests/difftest/phgen.c (seed %llu) for differential testing.\n",
            (unsigned long long)p->seed);
    fprintf(out, "# run: %s\nimport phobos.lang as ph\n\n\n", spec);
    if (p->helper_used) fprintf(out, "@ph.func\ndef fz_keep(x):\n    y: ph.let = x\n    return y\n\n\n");
    for (int k = 0; k < 1 + p->two_kernels; k++) {
        if (k) fprintf(out, "\n\n");
        print_decorators(out, p, k ? p->launch2 : p->launch, k);
        fprintf(out, "def fuzz%s(", k ? "2" : "");
        print_params(out, p, body);
        fprintf(out, "n: ph.i32, s: ph.f32):\n%s", body);
    }
    fclose(out);
    free(body);
    return buf;
}

char *phgen_program(uint64_t seed, const PhgenOptions *opt, DtSpec *spec)
{
    PhgenProgram *p = phgen_generate(seed, opt);
    char *src = phgen_source(p);
    if (spec) *spec = p->spec;
    phgen_free(p);
    return src;
}

