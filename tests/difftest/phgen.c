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
#include "phgen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
}

/* ---- the program ---- */

typedef struct Node Node;
struct Node {
    char *head;            /* the line, without indentation */
    bool block;            /* head ends with ':' and body follows */
    Node **body;
    int nbody, capbody;
    Node *next;            /* an if's elif or else */
    char def[16];          /* the name it declares, or "" */
    char uses[240];        /* " a b c": the names its line uses */
    bool uses_all;         /* uses overflowed: assume it uses everything */
    bool dropped;
};

enum { E1, EM, EN, EK };   /* extents */
static const char *const ext_meta[] = {"1", "BM", "BN", "BK"};
static const char *const ext_dim[] = {"1", "M", "N", "K"};

enum { META_TILE, META_THREADS, META_DIM };   /* a meta-parameter's role */
typedef struct { char name[4]; int n; int v[4]; int role; } Meta;
typedef struct { char name[16]; DType dt; int rank; int e[2]; bool output; } Tensor;

struct PhgenProgram {
    uint64_t seed;
    bool tc;
    int launch;            /* threads literal; 0: no decorator; -1: the meta-parameter NT */
    int launch2;           /* the second kernel's, when there is one */
    bool two_kernels;
    int deco_order[4];     /* tensorcore, launch, autotune, aligned in print order */
    bool aligned[4];       /* per extent: @ph.aligned(DIM="BDIM") */
    int specialized;       /* the extent whose dim is also an autotune name, or E1 */
    int nmeta;
    Meta meta[5];          /* BM, BN, BK, then NT and the specialized dim when there are */
    Tensor tens[32];
    int ntens;
    Node root;
    DtSpec spec;
    uint64_t features;
    void **allocs;
    int nallocs, capallocs;
};

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

static char *pfmt(PhgenProgram *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *pfmt(PhgenProgram *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(p, fmt, ap);
    va_end(ap);
    return s;
}

static Node *node_new(PhgenProgram *p, const char *head, bool block)
{
    Node *n = keep(p, calloc(1, sizeof *n));
    n->head = pfmt(p, "%s", head);
    n->block = block;
    return n;
}

static void node_add(PhgenProgram *p, Node *parent, Node *child)
{
    if (parent->nbody == parent->capbody) {
        parent->capbody = parent->capbody ? 2 * parent->capbody : 8;
        Node **b = malloc(sizeof *b * (size_t)parent->capbody);
        if (parent->nbody) memcpy(b, parent->body, sizeof *b * (size_t)parent->nbody);
        parent->body = keep(p, b);
    }
    parent->body[parent->nbody++] = child;
}

/* ---- generation state ---- */

typedef struct { int rank; int e[2]; } Shape;   /* rank 0: {E1, E1}; rank 1: {E1, X} */

typedef struct {
    char *t;
    DType dt;
    Shape sh;
    bool exact, weak, literal;
    double mag;
} Ex;

typedef struct {
    char name[16];
    DType dt;
    Shape sh;
    bool exact, is_var;
    double mag;
    int scope;
} Sym;

enum { NEED_EXACT = 1, NEED_INT = 2, NEED_FLOAT = 4 };
#define FCAP 256.0
#define ICAP 32768.0

typedef struct {
    uint64_t rng;
    PhgenProgram *p;
    PhgenOptions o;
    Sym syms[256];
    int nsyms, scope;
    Node *cur;                 /* the statement whose uses are being recorded */
    char loopvar[4][8];
    int nloops;
    const char *kstart;        /* window start along K */
    int counter;
    int maxv[4], minv[4];      /* per extent, over the configs */
    int n_value;               /* the scalar n's value in the spec */
    bool storing;              /* generating the stores */
    const char *stream_iv;     /* when set, windows along unaligned extents move with it */
} Gen;

static uint64_t next_u64(Gen *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd(Gen *g, int n) { return n <= 1 ? 0 : (int)(next_u64(g) % (uint64_t)n); }
static bool chance(Gen *g, int pct) { return rnd(g, 100) < pct; }
static void feature(Gen *g, PhgenFeature f) { g->p->features |= 1ull << f; }

static void use(Gen *g, const char *name)
{
    Node *n = g->cur;
    if (!n || n->uses_all) return;
    char key[24];
    snprintf(key, sizeof key, " %s ", name);
    size_t len = strlen(n->uses);
    char padded[256];
    snprintf(padded, sizeof padded, "%s ", n->uses);
    if (strstr(padded, key)) return;
    if (len + strlen(name) + 2 >= sizeof n->uses) { n->uses_all = true; return; }
    strcat(n->uses, " ");
    strcat(n->uses, name);
}

static Shape shape0(void) { return (Shape){0, {E1, E1}}; }
static Shape shape2(int a, int b) { return (Shape){2, {a, b}}; }

static bool fits(Shape v, Shape t)
{
    if (v.rank > t.rank) return false;
    return (v.e[0] == E1 || v.e[0] == t.e[0]) && (v.e[1] == E1 || v.e[1] == t.e[1]);
}

static Shape bcast(Shape a, Shape b)
{
    Shape r = {a.rank > b.rank ? a.rank : b.rank, {a.e[0] != E1 ? a.e[0] : b.e[0], a.e[1] != E1 ? a.e[1] : b.e[1]}};
    return r;
}

static bool is_float(DType dt) { return dt == DT_F16 || dt == DT_BF16 || dt == DT_F32; }

/* The dtype sema gives a binary op on a and b (docs/language.md, Promotion). */
static DType promote(Ex a, Ex b)
{
    if (a.dt == b.dt) return a.dt;
    if (a.dt == DT_I32) return b.dt;
    if (b.dt == DT_I32) return a.dt;
    if (a.weak) return b.dt;
    if (b.weak) return a.dt;
    return DT_F32;   /* two different float dtypes: f16 with bf16, or either with f32 */
}

static Ex ex(char *t, DType dt, Shape sh, bool exact, double mag)
{
    return (Ex){.t = t, .dt = dt, .sh = sh, .exact = exact, .mag = mag};
}

static const char *dtname(DType dt)
{
    return dt == DT_F16 ? "ph.f16" : dt == DT_BF16 ? "ph.bf16" : dt == DT_I32 ? "ph.i32" : "ph.f32";
}

static void sym_push(Gen *g, const char *name, DType dt, Shape sh, bool exact, bool is_var, double mag)
{
    if (g->nsyms == (int)(sizeof g->syms / sizeof *g->syms)) return;
    Sym *s = &g->syms[g->nsyms++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->dt = dt;
    s->sh = sh;
    s->exact = exact;
    s->is_var = is_var;
    s->mag = mag;
    s->scope = g->scope;
}

static void scope_pop(Gen *g)
{
    while (g->nsyms && g->syms[g->nsyms - 1].scope >= g->scope) g->nsyms--;
    g->scope--;
}

static bool flags_ok(unsigned flags, DType dt, bool exact)
{
    if ((flags & NEED_EXACT) && !exact) return false;
    if ((flags & NEED_INT) && dt != DT_I32) return false;
    if ((flags & NEED_FLOAT) && !is_float(dt)) return false;
    return true;
}

/* ---- leaves ---- */

static const char *start_of(Gen *g, int e)
{
    return e == EM ? "r0" : e == EN ? "c0" : e == EK ? g->kstart : "0";
}

static Tensor *tensor_for(Gen *g, int rank, int e0, int e1, DType dt)
{
    PhgenProgram *p = g->p;
    int match = -1, nmatch = 0;
    for (int i = 0; i < p->ntens; i++) {
        Tensor *t = &p->tens[i];
        if (!t->output && t->rank == rank && t->e[0] == e0 && t->e[1] == e1 && t->dt == dt && rnd(g, ++nmatch) == 0) match = i;
    }
    if (match >= 0 && (chance(g, 70) || p->ntens >= 10)) return &p->tens[match];
    for (int i = 0; p->ntens >= 10 && i < p->ntens; i++) {   /* enough inputs: one of another dtype will do */
        Tensor *t = &p->tens[i];
        if (!t->output && t->rank == rank && t->e[0] == e0 && t->e[1] == e1) return t;
    }
    if (p->ntens >= 23) return NULL;   /* 10 + one per shape (12 shapes) fits */
    Tensor *t = &p->tens[p->ntens];
    snprintf(t->name, sizeof t->name, "X%d", p->ntens++);
    t->dt = dt;
    t->rank = rank;
    t->e[0] = e0;
    t->e[1] = e1;
    t->output = false;
    feature(g, dt == DT_F16 ? PF_F16 : dt == DT_BF16 ? PF_BF16 : dt == DT_I32 ? PF_I32_TENSOR : PF_F32);
    if (rank == 1) feature(g, PF_RANK1);
    return t;
}

/* A window start along extent e of a tensor, sometimes moved by the loop
 * variable or a few elements so that windows run past the edges. */
static char *window_start(Gen *g, int e)
{
    const char *s = start_of(g, e);
    char *r = pfmt(g->p, "%s", s);
    /* an aligned axis may not be read past its edge: the window stays at a multiple of its extent */
    if (g->p->aligned[e]) return r;
    if (g->stream_iv && e != E1) {
        use(g, g->stream_iv);
        feature(g, PF_LOOP_LOAD);
        return pfmt(g->p, "%s + %s", r, g->stream_iv);
    }
    if (g->nloops && chance(g, 25)) {
        const char *iv = g->loopvar[rnd(g, g->nloops)];
        use(g, iv);
        r = pfmt(g->p, "%s + %s", r, iv);
    }
    if (chance(g, 25)) {
        int off = chance(g, 60) ? 1 + rnd(g, 6) : -1 - rnd(g, 3);
        r = pfmt(g->p, "%s %c %d", r, off < 0 ? '-' : '+', off < 0 ? -off : off);
        feature(g, PF_EDGE_WINDOW);
    }
    return r;
}

static DType pick_dtype(Gen *g, unsigned flags)
{
    if (flags & NEED_INT) return DT_I32;
    if (!(flags & NEED_FLOAT) && chance(g, 12)) return DT_I32;
    int r = rnd(g, 10);
    return r < 5 ? DT_F32 : r < 8 ? DT_F16 : DT_BF16;
}

/* A load of exactly shape sh (rank 1 or 2) and dtype dt. */
static bool load_of(Gen *g, Shape sh, DType dt, Ex *out)
{
    int te[2];
    for (int d = 0; d < 2; d++) te[d] = sh.e[d] != E1 ? sh.e[d] : EM + rnd(g, 3);
    Tensor *t = sh.rank == 1 ? tensor_for(g, 1, sh.e[1], E1, dt) : tensor_for(g, 2, te[0], te[1], dt);
    if (!t) return false;
    char *text;
    if (sh.rank == 1) {
        text = pfmt(g->p, "%s[%s:+%s]", t->name, window_start(g, sh.e[1]), ext_meta[sh.e[1]]);
    } else {
        char *ax[2];
        for (int d = 0; d < 2; d++)
            ax[d] = sh.e[d] != E1 ? pfmt(g->p, "%s:+%s", window_start(g, te[d]), ext_meta[te[d]]) : window_start(g, te[d]);
        text = pfmt(g->p, "%s[%s, %s]", t->name, ax[0], ax[1]);
    }
    *out = ex(text, dt, sh, true, t->dt == DT_I32 ? 50 : 2);
    if (t->dt != dt) {   /* a tensor of another dtype, converted (exactly: it is a raw input) */
        out->t = dt == DT_I32 ? pfmt(g->p, "ph.i32(%s * 4.0)", text) : pfmt(g->p, "%s(%s)", dtname(dt), text);
        out->mag = dt == DT_I32 ? 8 : out->mag;
    }
    return true;
}

/* A shape that fits t: each dim kept or made 1, sometimes rank 1. */
static Shape sub_shape(Gen *g, Shape t)
{
    if (t.rank < 2) return t;
    Shape s = t;
    int drop = rnd(g, 10);
    if (drop == 0 && t.e[1] != E1) s.e[0] = E1;
    else if (drop == 1 && t.e[0] != E1) s.e[1] = E1;
    if (s.e[0] == E1 && s.e[1] != E1 && chance(g, 35)) s.rank = 1;
    return s;
}

static Ex literal(Gen *g, bool want_int)
{
    static const char *const floats[] = {"0.5", "1.5", "0.25", "2.0", "0.75", "-1.25", "-0.5", "3.0"};
    static const int ints[] = {1, 2, 3, 5, 7, -2, -3, 4};
    Ex e;
    if (want_int) {
        int v = ints[rnd(g, 8)];
        e = ex(v < 0 ? pfmt(g->p, "(%d)", v) : pfmt(g->p, "%d", v), DT_I32, shape0(), true, abs(v));
    } else {
        const char *s = floats[rnd(g, 8)];
        e = ex(s[0] == '-' ? pfmt(g->p, "(%s)", s) : pfmt(g->p, "%s", s), DT_F32, shape0(), true, atof(s) < 0 ? -atof(s) : atof(s));
    }
    e.weak = e.literal = true;
    return e;
}

/* A scalar that is not a literal: parameters, block ids, dims, loop variables, scalar locals. */
static bool scalar_leaf(Gen *g, unsigned flags, Ex *out)
{
    for (int tries = 0; tries < 8; tries++) {
        int k = rnd(g, 6);
        if (k == 0 && !(flags & NEED_FLOAT)) { *out = ex(pfmt(g->p, "n"), DT_I32, shape0(), true, 16); return true; }
        if (k == 1 && !(flags & NEED_INT)) { *out = ex(pfmt(g->p, "s"), DT_F32, shape0(), true, 2); return true; }
        if (k == 2 && !(flags & NEED_FLOAT)) {
            *out = ex(pfmt(g->p, "ph.ctx.block.%c", chance(g, 50) ? 'x' : 'y'), DT_I32, shape0(), true, 8);
            return true;
        }
        if (k == 3 && !(flags & NEED_FLOAT)) {
            *out = ex(pfmt(g->p, "%s", ext_dim[EM + rnd(g, 3)]), DT_I32, shape0(), true, 256);
            return true;
        }
        if (k == 4 && g->nloops && !(flags & NEED_FLOAT)) {
            const char *iv = g->loopvar[rnd(g, g->nloops)];
            use(g, iv);
            *out = ex(pfmt(g->p, "%s", iv), DT_I32, shape0(), true, 256);
            return true;
        }
        if (k == 5) {
            int pick = -1, seen = 0;
            for (int i = 0; i < g->nsyms; i++)
                if (g->syms[i].sh.rank == 0 && flags_ok(flags, g->syms[i].dt, g->syms[i].exact) && rnd(g, ++seen) == 0) pick = i;
            if (pick < 0) continue;
            Sym *s = &g->syms[pick];
            use(g, s->name);
            *out = ex(pfmt(g->p, "%s", s->name), s->dt, shape0(), s->exact, s->mag);
            return true;
        }
    }
    return false;
}

static Ex gen_num(Gen *g, Shape t, int depth, unsigned flags);

static Ex leaf(Gen *g, Shape t, unsigned flags, bool allow_literal)
{
    Ex e;
    int k = rnd(g, 10);
    if (k < (g->storing ? 7 : 4)) {   /* a local of a fitting shape: the stores use what the body computed */
        int pick = -1, seen = 0;
        for (int i = 0; i < g->nsyms; i++) {
            Sym *s = &g->syms[i];
            if (s->sh.rank > 0 && fits(s->sh, t) && flags_ok(flags, s->dt, s->exact) && s->mag <= FCAP && rnd(g, ++seen) == 0) pick = i;
        }
        if (pick >= 0) {
            Sym *s = &g->syms[pick];
            use(g, s->name);
            return ex(pfmt(g->p, "%s", s->name), s->dt, s->sh, s->exact, s->mag);
        }
    }
    if (k < 8 && t.rank > 0 && load_of(g, sub_shape(g, t), pick_dtype(g, flags), &e)) return e;
    if (k < 9 || !allow_literal)
        if (scalar_leaf(g, flags, &e)) return e;
    if (!allow_literal && t.rank > 0 && load_of(g, t, pick_dtype(g, flags), &e)) return e;
    bool want_int = (flags & NEED_INT) || (!(flags & NEED_FLOAT) && chance(g, 30));
    return literal(g, want_int);
}

/* ---- expressions ---- */

static Ex unary_negabs(Gen *g, Shape t, int depth, unsigned flags)
{
    Ex a = gen_num(g, t, depth - 1, flags);
    bool neg = chance(g, 50);
    Ex r = a;
    r.t = neg ? pfmt(g->p, "(-%s)", a.t) : pfmt(g->p, "ph.abs(%s)", a.t);
    r.literal = false;
    feature(g, PF_UNARY);
    return r;
}

static Ex arith(Gen *g, Shape t, int depth, unsigned flags)
{
    bool want_int = (flags & NEED_INT) || (!(flags & NEED_FLOAT) && chance(g, 25));
    unsigned sub = (flags & NEED_EXACT) | (want_int ? NEED_INT : 0);
    Ex a = gen_num(g, t, depth - 1, sub | (want_int ? 0 : NEED_FLOAT));
    Ex b = gen_num(g, t, depth - 1, sub);
    if (a.literal && b.literal) b = leaf(g, t, sub, false);
    DType dt = promote(a, b);
    if ((flags & NEED_EXACT) && dt != DT_I32) {   /* exact floats: scaling by a power of two only */
        bool up = a.mag <= FCAP / 2 && chance(g, 50);
        return ex(pfmt(g->p, "(%s * %s)", a.t, up ? "2.0" : "0.5"), a.dt, a.sh, a.exact, up ? 2 * a.mag : a.mag / 2);
    }
    double cap = dt == DT_I32 ? ICAP : FCAP;
    int op = rnd(g, 3);
    if (op == 2 && a.mag * b.mag > cap) op = 0;
    if (op != 2 && a.mag + b.mag > cap) return a;
    static const char ops[] = "+-*";
    double mag = op == 2 ? a.mag * b.mag : a.mag + b.mag;
    feature(g, PF_BINARY);
    return ex(pfmt(g->p, "(%s %c %s)", a.t, ops[op], b.t), dt, bcast(a.sh, b.sh), dt == DT_I32 && a.exact && b.exact, mag);
}

static Ex maxmin(Gen *g, Shape t, int depth, unsigned flags)
{
    Ex a = gen_num(g, t, depth - 1, flags);
    Ex b = gen_num(g, t, depth - 1, flags);
    if (a.literal && b.literal) b = leaf(g, t, flags, false);
    DType dt = promote(a, b);
    if ((flags & NEED_INT) && dt != DT_I32) return a;
    feature(g, PF_BINARY);
    return ex(pfmt(g->p, "ph.%s(%s, %s)", chance(g, 50) ? "max" : "min", a.t, b.t), dt, bcast(a.sh, b.sh),
              a.exact && b.exact, a.mag > b.mag ? a.mag : b.mag);
}

static Ex gen_cond(Gen *g, Shape t, int depth, int fix);

static Ex where(Gen *g, Shape t, int depth, unsigned flags)
{
    Ex a = gen_num(g, t, depth - 1, flags);
    Ex b = gen_num(g, t, depth - 1, flags);
    if (a.literal && b.literal) b = leaf(g, t, flags, false);
    DType dt = promote(a, b);
    if ((flags & NEED_INT) && dt != DT_I32) return a;
    Shape ab = bcast(a.sh, b.sh);
    int fix = (ab.rank == 2 && ab.e[0] != E1 ? 1 : 0) | (ab.rank >= 1 && ab.e[1] != E1 ? 2 : 0);
    Ex c = gen_cond(g, t, depth - 1, fix);
    feature(g, PF_WHERE);
    return ex(pfmt(g->p, "ph.where(%s, %s, %s)", c.t, a.t, b.t), dt, bcast(c.sh, ab), a.exact && b.exact,
              a.mag > b.mag ? a.mag : b.mag);
}

static Ex convert(Gen *g, Shape t, int depth, unsigned flags)
{
    if (flags & NEED_INT) {   /* float -> i32 on exact values only */
        Ex a = gen_num(g, t, depth - 1, NEED_EXACT | NEED_FLOAT);
        if (a.mag * 4 > ICAP) return a.dt == DT_I32 ? a : leaf(g, t, flags, true);
        feature(g, PF_F2I);
        feature(g, PF_CONVERT);
        return ex(pfmt(g->p, "ph.i32(%s * 4.0)", a.t), DT_I32, a.sh, true, a.mag * 4);
    }
    Ex a = gen_num(g, t, depth - 1, flags & NEED_EXACT);
    static const DType to[] = {DT_F32, DT_F16, DT_BF16};
    DType dt = to[rnd(g, 3)];
    feature(g, PF_CONVERT);
    return ex(pfmt(g->p, "%s(%s)", dtname(dt), a.t), dt, a.sh, a.exact, a.mag);
}

static Ex intdiv(Gen *g, Shape t, int depth, unsigned flags)
{
    static const int divisors[] = {2, 3, 5, 7, -3, -4};
    bool use_float = !(flags & NEED_INT) && chance(g, 30);
    Ex a = gen_num(g, t, depth - 1, NEED_EXACT | (use_float ? NEED_FLOAT : NEED_INT));
    bool mod = chance(g, 50);
    feature(g, PF_INT_DIV);
    if (use_float) {   /* exact: a power-of-two divisor of an exact float */
        const char *d = chance(g, 50) ? "0.5" : "0.25";
        return ex(pfmt(g->p, "(%s %s %s)", a.t, mod ? "%" : "//", d), a.dt, a.sh, true, mod ? 0.5 : a.mag * 4);
    }
    int d = divisors[rnd(g, 6)];
    char *dt = d < 0 ? pfmt(g->p, "(%d)", d) : pfmt(g->p, "%d", d);
    return ex(pfmt(g->p, "(%s %s %s)", a.t, mod ? "%" : "//", dt), DT_I32, a.sh, true, mod ? abs(d) : a.mag);
}

/* exp of a non-positive value, log/sqrt/rsqrt of a positive one, division by at least 1. */
static Ex math(Gen *g, Shape t, int depth, unsigned flags)
{
    (void)flags;
    Ex a = gen_num(g, t, depth - 1, 0);
    DType dt = is_float(a.dt) && !a.weak ? a.dt : DT_F32;
    char *s;
    double mag = 1;
    feature(g, PF_MATH);
    switch (rnd(g, 8)) {
    case 0: s = pfmt(g->p, "ph.exp(-ph.abs(%s))", a.t); break;
    case 1: s = pfmt(g->p, "ph.exp2(ph.min(%s, 0.0))", a.t); break;
    case 2:
        if (a.sh.rank == 2 && is_float(a.dt) && !a.weak && a.mag <= 64) {
            s = pfmt(g->p, "ph.exp(%s - ph.rowmax(%s))", a.t, a.t);
            feature(g, PF_ROW_REDUCE);
            break;
        }
        s = pfmt(g->p, "ph.exp(-ph.abs(%s))", a.t);
        break;
    case 3: s = pfmt(g->p, "ph.log(ph.abs(%s) + 1.0)", a.t); mag = 6; break;
    case 4: s = pfmt(g->p, "ph.log2(ph.abs(%s) + 0.5)", a.t); mag = 9; break;
    case 5: s = pfmt(g->p, "ph.sqrt(ph.abs(%s) + 0.25)", a.t); mag = a.mag < 1 ? 1.2 : a.mag; break;
    case 6: s = pfmt(g->p, "ph.rsqrt(ph.abs(%s) + 0.5)", a.t); mag = 1.5; break;
    default: {
        /* a / (|b| + 1.0): the divisor's dtype is b's (f32 for an i32 b), weak when b is */
        Ex b = gen_num(g, t, depth - 1, 0);
        Ex den = {.dt = b.dt == DT_I32 ? DT_F32 : b.dt, .weak = b.weak};
        DType rdt = promote(a, den);
        feature(g, PF_BINARY);
        return ex(pfmt(g->p, "(%s / (ph.abs(%s) + 1.0))", a.t, b.t), rdt == DT_I32 ? DT_F32 : rdt,
                  bcast(a.sh, b.sh), false, a.mag);
    }
    }
    return ex(s, dt, a.sh, false, mag);
}

static Ex reduce(Gen *g, Shape t, int depth, unsigned flags)
{
    bool row = chance(g, 50);
    int x = EM + rnd(g, 3);
    Shape os = row ? shape2(t.e[0], x) : shape2(x, t.e[1]);
    Ex a = gen_num(g, os, depth - 1, flags);
    if (a.sh.rank < 2 && !load_of(g, os, pick_dtype(g, flags), &a)) return leaf(g, t, flags, true);   /* reductions take 2-D tiles */
    int kind = rnd(g, 3);
    if (kind == 0 && (flags & NEED_EXACT) && a.dt != DT_I32) kind = 1;
    static const char *const names[2][3] = {{"colsum", "colmax", "colmin"}, {"rowsum", "rowmax", "rowmin"}};
    feature(g, row ? PF_ROW_REDUCE : PF_COL_REDUCE);
    Shape rs = row ? shape2(a.sh.e[0], E1) : shape2(E1, a.sh.e[1]);
    int along = row ? a.sh.e[1] : a.sh.e[0];
    char *s = pfmt(g->p, "ph.%s(%s)", names[row][kind], a.t);
    if (kind != 0) return ex(s, a.dt, rs, a.exact, a.mag);
    if (a.dt == DT_I32) {
        double mag = a.mag * g->maxv[along];
        return mag > ICAP ? leaf(g, t, flags, true) : ex(s, DT_I32, rs, a.exact, mag);
    }
    /* a float sum is scaled by 1/length (the meta-parameter is weak: the dtype stays) */
    return ex(along == E1 ? s : pfmt(g->p, "(%s / %s)", s, ext_meta[along]), a.dt, rs, false, a.mag);
}

/* A dot operand of exactly shape sh (rank 2) and dtype dt, magnitude <= 2. */
static Ex operand(Gen *g, Shape sh, DType dt)
{
    Ex a;
    DType src = dt;
    if (chance(g, 25)) src = dt == DT_F32 ? (chance(g, 50) ? DT_F16 : DT_BF16) : DT_F32;
    if (!load_of(g, sh, src, &a)) abort();   /* a tensor of every shape can always be added */
    src = a.dt;
    int w = rnd(g, 6);
    if (w == 0) a.t = pfmt(g->p, "ph.abs(%s)", a.t);
    else if (w == 1) a.t = pfmt(g->p, "(%s * 0.5)", a.t);
    else if (w == 2) a.t = pfmt(g->p, "ph.exp(-ph.abs(%s))", a.t);
    if (src != dt) {   /* an i32 input is converted too */
        a.t = pfmt(g->p, "%s(%s)", dtname(dt), a.t);
        feature(g, PF_CONVERT);
    }
    a.dt = dt;
    return a;
}

/* One of ph.dot(a, b), ph.dot_t(a, b), ph.dot(ph.transpose(a), b), giving [P, Q] over inner extent R. */
static char *dot_text(Gen *g, int P, int Q, int R, DType dt)
{
    int form = rnd(g, 4);
    if (dt != DT_F32) feature(g, dt == DT_F16 ? PF_DOT_TC_F16 : PF_DOT_TC_BF16);
    else feature(g, PF_DOT_FMA);
    if (form == 0 || form == 3) {
        Ex a = operand(g, shape2(P, R), dt);
        if (form == 3) {
            Ex b = operand(g, shape2(Q, R), dt);
            feature(g, PF_DOT_TRANSPOSE);
            return pfmt(g->p, "ph.dot(%s, ph.transpose(%s))", a.t, b.t);
        }
        Ex b = operand(g, shape2(R, Q), dt);
        return pfmt(g->p, "ph.dot(%s, %s)", a.t, b.t);
    }
    if (form == 1) {
        Ex a = operand(g, shape2(P, R), dt);
        Ex b = operand(g, shape2(Q, R), dt);
        feature(g, PF_DOT_T);
        return pfmt(g->p, "ph.dot_t(%s, %s)", a.t, b.t);
    }
    Ex a = operand(g, shape2(R, P), dt);
    Ex b = operand(g, shape2(R, Q), dt);
    feature(g, PF_DOT_TRANSPOSE);
    return pfmt(g->p, "ph.dot(ph.transpose(%s), %s)", a.t, b.t);
}

static DType dot_dtype(Gen *g)
{
    if (!g->p->tc) return chance(g, 85) ? DT_F32 : DT_F16;
    int r = rnd(g, 10);
    return r < 5 ? DT_F16 : r < 9 ? DT_BF16 : DT_F32;
}

static Ex dot(Gen *g, Shape t)
{
    int R = g->p->tc ? EK : EM + rnd(g, 3);
    char *s = dot_text(g, t.e[0], t.e[1], R, dot_dtype(g));
    return ex(pfmt(g->p, "(%s / %s)", s, ext_meta[R]), DT_F32, t, false, 4);
}

static Ex transpose(Gen *g, Shape t, unsigned flags)
{
    Ex a;
    Shape sw = shape2(t.e[1], t.e[0]);
    if (sw.e[0] == E1 && sw.e[1] == E1) sw.e[0] = EM;   /* a [1, 1] target: transpose [BM, 1] is not within it */
    if (sw.e[0] != t.e[1] && sw.e[0] != E1) return leaf(g, t, flags, true);
    if (!load_of(g, sw, pick_dtype(g, flags), &a)) return leaf(g, t, flags, true);
    feature(g, PF_UNARY);
    return ex(pfmt(g->p, "ph.transpose(%s)", a.t), a.dt, shape2(sw.e[1], sw.e[0]), a.exact, a.mag);
}

/* An i32 index tile: a window start plus ph.iota along an axis of t. */
static Ex index_expr(Gen *g, Shape t, int fix, bool *ok)
{
    *ok = false;
    int axis = rnd(g, 2);
    if (t.rank < 2 || t.e[axis] == E1) axis = 1 - axis;
    if (t.rank < 2 || t.e[axis] == E1) return (Ex){0};
    int e = t.e[axis];
    /* an extent of 1 fixes no iota extent, so a config where e is 1 needs it written */
    bool implicit = (fix >> axis & 1) && g->minv[e] > 1 && chance(g, 50);
    char *io = implicit ? pfmt(g->p, "ph.iota(%d)", axis) : pfmt(g->p, "ph.iota(%d, %s)", axis, ext_meta[e]);
    Shape sh = axis == 0 ? shape2(e, E1) : shape2(E1, e);
    if (implicit) sh = t;   /* its extent comes from the statement; the other axis stays within t */
    if (implicit) sh.e[1 - axis] = E1;
    *ok = true;
    return ex(pfmt(g->p, "(%s + %s)", start_of(g, e), io), DT_I32, sh, true, 1024);
}

static Ex gen_cond(Gen *g, Shape t, int depth, int fix)
{
    static const char *const cmps[] = {"<", "<=", ">", ">=", "==", "!="};
    int k = rnd(g, 10);
    if (depth > 0 && k < 2) {
        Ex a = gen_cond(g, t, depth - 1, fix), b = gen_cond(g, t, depth - 1, fix);
        return ex(pfmt(g->p, "(%s %s %s)", a.t, chance(g, 50) ? "and" : "or", b.t), DT_BOOL, bcast(a.sh, b.sh), true, 1);
    }
    if (depth > 0 && k == 2) {
        Ex a = gen_cond(g, t, depth - 1, fix);
        return ex(pfmt(g->p, "(not %s)", a.t), DT_BOOL, a.sh, true, 1);
    }
    if (k < 6) {
        bool ok;
        Ex ix = index_expr(g, t, fix, &ok);
        if (ok) {
            int m = rnd(g, 3);
            const char *dim = ext_dim[ix.sh.e[0] != E1 ? ix.sh.e[0] : ix.sh.e[1]];
            if (ix.sh.e[0] == E1 && ix.sh.e[1] == E1) dim = "M";
            feature(g, PF_IOTA_MASK);
            if (m == 0) return ex(pfmt(g->p, "(%s < %s)", ix.t, dim), DT_BOOL, ix.sh, true, 1);
            if (m == 1) return ex(pfmt(g->p, "((%s %% 3) == %d)", ix.t, rnd(g, 3)), DT_BOOL, ix.sh, true, 1);
            Ex b = index_expr(g, t, fix, &ok);
            if (ok) return ex(pfmt(g->p, "(%s %s %s)", ix.t, cmps[rnd(g, 4)], b.t), DT_BOOL, bcast(ix.sh, b.sh), true, 1);
        }
    }
    Ex a = gen_num(g, t, depth > 0 ? depth - 1 : 0, NEED_EXACT);
    Ex b = chance(g, 50) ? literal(g, a.dt == DT_I32) : gen_num(g, t, depth > 0 ? depth - 1 : 0, NEED_EXACT);
    if (a.literal && b.literal) a = leaf(g, t, NEED_EXACT, false);
    return ex(pfmt(g->p, "(%s %s %s)", a.t, cmps[rnd(g, 6)], b.t), DT_BOOL, bcast(a.sh, b.sh), true, 1);
}

static Ex gen_num_(Gen *g, Shape t, int depth, unsigned flags);
/* An expression whose shape fits t, meeting flags. */
static Ex gen_num(Gen *g, Shape t, int depth, unsigned flags)
{
    Ex e = gen_num_(g, t, depth, flags);
#ifdef PHGEN_DEBUG
    if (!fits(e.sh, t) || !flags_ok(flags, e.dt, e.exact)) {
        fprintf(stderr, "phgen: %s: shape (%d: %d %d) for (%d: %d %d), flags %u, dt %d exact %d\n", e.t, e.sh.rank, e.sh.e[0],
                e.sh.e[1], t.rank, t.e[0], t.e[1], flags, e.dt, e.exact);
        abort();
    }
#endif
    return e;
}

static Ex gen_num_(Gen *g, Shape t, int depth, unsigned flags)
{
    if (depth <= 0) return leaf(g, t, flags, true);
    for (int tries = 0; tries < 6; tries++) {
        int k = rnd(g, 100);
        if (k < 20) return leaf(g, t, flags, true);
        if (k < 28) return unary_negabs(g, t, depth, flags);
        if (k < 44) return arith(g, t, depth, flags);
        if (k < 50) return maxmin(g, t, depth, flags);
        if (k < 58) return where(g, t, depth, flags);
        if (k < 64) return convert(g, t, depth, flags);
        if (k < 69 && !((flags & NEED_FLOAT) && !(flags & NEED_EXACT))) {
            Ex e = intdiv(g, t, depth, flags);
            if (flags_ok(flags, e.dt, e.exact)) return e;
            continue;
        }
        if (k < 78 && !(flags & (NEED_EXACT | NEED_INT))) return math(g, t, depth, flags);
        if (k < 86 && t.rank == 2) return reduce(g, t, depth, flags);
        if (k < 94 && t.rank == 2 && t.e[0] != E1 && t.e[1] != E1 && !(flags & (NEED_EXACT | NEED_INT))
            && (!g->p->tc || (t.e[0] == EM && t.e[1] == EN)))
            return dot(g, t);
        if (k >= 94 && t.rank == 2) return transpose(g, t, flags);
    }
    return leaf(g, t, flags, true);
}

/* ---- statements ---- */

static Node *open_stmt(Gen *g)
{
    Node *n = node_new(g->p, "", false);
    g->cur = n;
    return n;
}

static void close_stmt(Gen *g, Node *parent, Node *n, char *head, const char *def)
{
    n->head = head;
    if (def) snprintf(n->def, sizeof n->def, "%s", def);
    node_add(g->p, parent, n);
    g->cur = NULL;
}

static char *fresh(Gen *g, const char *prefix) { return pfmt(g->p, "%s%d", prefix, ++g->counter); }

static Shape tile_shape(Gen *g)
{
    int k = rnd(g, 10);
    return k < 6 ? shape2(EM, EN) : k < 8 ? shape2(EM, E1) : shape2(E1, EN);
}

static void gen_let(Gen *g, Node *parent)
{
    Node *n = open_stmt(g);
    int k = rnd(g, 10);
    Shape t = k < 7 ? tile_shape(g) : k < 8 ? shape2(EM, EK) : k < 9 ? (Shape){1, {E1, EN}} : shape0();
    Ex e = gen_num(g, t, 1 + rnd(g, g->o.max_depth), 0);
    char *name = fresh(g, "t");
    close_stmt(g, parent, n, pfmt(g->p, "%s: ph.let = %s", name, e.t), name);
    sym_push(g, name, e.dt, e.sh, e.exact, false, e.mag);
}

static char *tile_type(Gen *g, DType dt, Shape sh)
{
    return pfmt(g->p, "ph.tile[%s][%s, %s]", dtname(dt), ext_meta[sh.e[0]], ext_meta[sh.e[1]]);
}

static void gen_var(Gen *g, Node *parent)
{
    Node *n = open_stmt(g);
    Shape sh = tile_shape(g);
    int r = rnd(g, 20);
    DType dt = r < 9 ? DT_F32 : r < 13 ? DT_F16 : r < 16 ? DT_BF16 : DT_I32;
    bool exact = dt == DT_I32 || chance(g, 25);
    unsigned flags = (exact ? NEED_EXACT : 0) | (dt == DT_I32 ? NEED_INT : 0);
    char *init;
    if (chance(g, 40)) init = pfmt(g->p, dt == DT_I32 ? "%d" : "%d.0", rnd(g, 3));
    else init = gen_num(g, sh, 1 + rnd(g, g->o.max_depth), flags).t;
    char *name = fresh(g, "v");
    close_stmt(g, parent, n, pfmt(g->p, "%s: ph.var[%s] = %s", name, tile_type(g, dt, sh), init), name);
    sym_push(g, name, dt, sh, exact, true, FCAP);
}

static void gen_scalar_var(Gen *g, Node *parent)
{
    Node *n = open_stmt(g);
    bool isint = chance(g, 70);
    Ex e = gen_num(g, shape0(), 1, isint ? NEED_INT | NEED_EXACT : 0);
    char *name = fresh(g, "c");
    close_stmt(g, parent, n, pfmt(g->p, "%s: ph.var[%s] = %s", name, isint ? "ph.i32" : "ph.f32", e.t), name);
    sym_push(g, name, isint ? DT_I32 : DT_F32, shape0(), isint || e.exact, true, isint ? 4096 : FCAP);
}

static Sym *pick_var(Gen *g)
{
    int pick = -1, seen = 0;
    for (int i = 0; i < g->nsyms; i++)
        if (g->syms[i].is_var && rnd(g, ++seen) == 0) pick = i;
    return pick < 0 ? NULL : &g->syms[pick];
}

/* An assignment that keeps the var within its bound and, for an exact
 * var, exact. */
static bool gen_assign(Gen *g, Node *parent)
{
    Sym *v = pick_var(g);
    if (!v) return false;
    Node *n = open_stmt(g);
    use(g, v->name);
    bool isint = v->dt == DT_I32;
    unsigned flags = (v->exact ? NEED_EXACT : 0) | (isint ? NEED_INT : 0);
    Ex e = gen_num(g, v->sh, 1 + rnd(g, g->o.max_depth), flags);
    char *head;
    int form = rnd(g, 5);
    if (v->sh.rank == 0 && isint) form = form < 2 ? 3 : 1;   /* counters: += or a bounded fold */
    if (form == 0 && e.mag <= 64) head = pfmt(g->p, "%s = %s", v->name, e.t);
    else if (form == 1 && isint) head = pfmt(g->p, "%s = ((%s // 2) + (%s %% 64))", v->name, v->name, e.t);
    else if (form == 1 && !v->exact && e.mag <= 128) head = pfmt(g->p, "%s = ((%s * 0.5) + %s)", v->name, v->name, e.t);
    else if (form == 3 && ((isint && e.mag <= 64) || (!isint && !v->exact && e.mag <= 4)))
        head = pfmt(g->p, "%s %s= %s", v->name, chance(g, 50) ? "+" : "-", e.t);
    else if (form == 4 && !isint) head = pfmt(g->p, "%s *= 0.5", v->name);
    else head = pfmt(g->p, "%s = ph.%s(%s, %s)", v->name, chance(g, 50) ? "max" : "min", v->name, e.t);
    if (g->nloops && v->scope < g->scope) feature(g, PF_FOR_CARRY);
    close_stmt(g, parent, n, head, NULL);
    return true;
}

static void gen_stmt(Gen *g, Node *parent, int depth);

static void gen_body(Gen *g, Node *block, int depth, int count)
{
    g->scope++;
    for (int i = 0; i < count; i++) gen_stmt(g, block, depth);
    scope_pop(g);
}

static void push_loop(Gen *g, const char *iv)
{
    snprintf(g->loopvar[g->nloops++], sizeof g->loopvar[0], "%s", iv);
}

/* A load of shape sh (float) whose window moves with the loop counter iv
 * when iv is given (pipeline.c issues it one iteration ahead), or does not
 * move at all (licm.c takes it out of the loop). */
static Ex loop_load(Gen *g, Shape sh, const char *iv)
{
    Ex a;
    int saved = g->nloops;
    g->stream_iv = iv;
    g->nloops = 0;
    if (!load_of(g, sh, pick_dtype(g, NEED_FLOAT), &a)) a = literal(g, false);
    g->nloops = saved;
    g->stream_iv = NULL;
    return a;
}

/* w: a float var; in the loop, w += (a moving load) * (an invariant one),
 * bounded by 1 per iteration. */
static char *stream_var(Gen *g, Node *parent, Shape *sh)
{
    Node *n = open_stmt(g);
    *sh = tile_shape(g);
    char *w = fresh(g, "w");
    close_stmt(g, parent, n, pfmt(g->p, "%s: ph.var[%s] = 0.0", w, tile_type(g, DT_F32, *sh)), w);
    return w;
}

static void stream_update(Gen *g, Node *loop, const char *w, Shape sh, const char *iv)
{
    Node *n = open_stmt(g);
    use(g, w);
    Ex a = loop_load(g, sub_shape(g, sh), iv), b = loop_load(g, sub_shape(g, sh), NULL);
    feature(g, PF_INVARIANT_LOAD);
    char *term = a.mag * b.mag <= 4 ? pfmt(g->p, "((%s * %s) * 0.25)", a.t, b.t)
                                    : pfmt(g->p, "ph.exp(-ph.abs(%s * %s))", a.t, b.t);
    close_stmt(g, loop, n, pfmt(g->p, "%s += %s", w, term), NULL);
}

static void gen_for(Gen *g, Node *parent, int depth)
{
    bool have_var = false;
    for (int i = 0; i < g->nsyms; i++) have_var |= g->syms[i].is_var;
    if (!have_var) gen_var(g, parent);
    Shape wsh;
    char *w = chance(g, g->o.pct_stream) ? stream_var(g, parent, &wsh) : NULL;
    Node *n = open_stmt(g);
    int lo = rnd(g, 3), step = 1 + rnd(g, 3), hi;
    char *hitext;
    if (chance(g, 50)) {
        hi = lo + 2 + rnd(g, 8);
        hitext = pfmt(g->p, "%d", hi);
    } else {
        hi = g->n_value + (chance(g, 50) ? 2 : 0);
        hitext = hi == g->n_value ? pfmt(g->p, "n") : pfmt(g->p, "n + 2");
    }
    if (hi > lo && (hi - lo) % step) feature(g, PF_STEP_NOT_DIVIDING);
    char *iv = fresh(g, "i");
    close_stmt(g, parent, n, pfmt(g->p, "for %s in range(%d, %s, %d):", iv, lo, hitext, step), iv);
    n->block = true;
    push_loop(g, iv);
    if (w) stream_update(g, n, w, wsh, iv);
    gen_body(g, n, depth + 1, w ? rnd(g, 3) : 1 + rnd(g, 3));
    g->nloops--;
    if (w) sym_push(g, w, DT_F32, wsh, false, true, FCAP);   /* after the loop: its own update stays the only one inside */
}

/* acc += ph.dot(...) over K in steps of BK, then the sum scaled by 1/K. */
static void gen_kloop(Gen *g, Node *parent)
{
    char *acc = fresh(g, "acc"), *kv = fresh(g, "k");
    Node *decl = open_stmt(g);
    close_stmt(g, parent, decl, pfmt(g->p, "%s: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0", acc), acc);
    Node *loop = open_stmt(g);
    close_stmt(g, parent, loop, pfmt(g->p, "for %s in range(0, K, BK):", kv), kv);
    loop->block = true;
    Node *upd = open_stmt(g);
    use(g, acc);
    use(g, kv);
    g->kstart = kv;
    char *d = dot_text(g, EM, EN, EK, dot_dtype(g));
    g->kstart = "0";
    close_stmt(g, loop, upd, pfmt(g->p, "%s += %s", acc, d), NULL);
    Node *let = open_stmt(g);
    use(g, acc);
    char *name = fresh(g, "t");
    close_stmt(g, parent, let, pfmt(g->p, "%s: ph.let = %s / K", name, acc), name);
    sym_push(g, name, DT_F32, shape2(EM, EN), false, false, 64);
    feature(g, PF_DOT_K_LOOP);
    feature(g, PF_FOR_CARRY);
    int K = (int)dt_spec_get(&g->p->spec, "K", 1);
    for (int i = 0; i < g->p->meta[2].n; i++)
        if (K % g->p->meta[2].v[i]) feature(g, PF_STEP_NOT_DIVIDING);
}

/* An attention row block over K: s = q k^T (scaled), sometimes masked,
 * then the online softmax, as ph.online_softmax or spelled out (max,
 * exp(m - mn), exp(s - mn), rowsum, p converted to v's dtype and fed to a
 * second dot), carrying acc, m and l; q does not move with k (licm takes
 * it out), k and v do (pipeline issues them ahead). The result, acc / l, is
 * a weighted mean of v: bounded by v. */
static void gen_attention(Gen *g, Node *parent)
{
    PhgenProgram *p = g->p;
    char *acc = fresh(g, "acc"), *m = fresh(g, "m"), *l = fresh(g, "l"), *kv = fresh(g, "k");
    DType qdt = p->tc ? (chance(g, 60) ? DT_F16 : DT_BF16) : (chance(g, 60) ? DT_F32 : DT_F16);
    DType vdt = p->tc ? qdt : (chance(g, 50) ? DT_F16 : DT_BF16);
    bool masked = chance(g, 50), fused = chance(g, 50);
    Node *n = open_stmt(g);
    close_stmt(g, parent, n, pfmt(p, "%s: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0", acc), acc);
    n = open_stmt(g);
    close_stmt(g, parent, n, pfmt(p, "%s: ph.var[ph.tile[ph.f32][BM, 1]] = %s", m, masked || chance(g, 50) ? "-1.0e30" : "0.0"), m);
    n = open_stmt(g);
    close_stmt(g, parent, n, pfmt(p, "%s: ph.var[ph.tile[ph.f32][BM, 1]] = 0.0", l), l);
    char *q = NULL;
    if (chance(g, 50)) {   /* q as a let before the loop, or loaded in it (then licm moves it) */
        n = open_stmt(g);
        q = fresh(g, "q");
        close_stmt(g, parent, n, pfmt(p, "%s: ph.let = %s", q, operand(g, shape2(EM, EN), qdt).t), q);
    }
    Node *loop = open_stmt(g);
    close_stmt(g, parent, loop, pfmt(p, "for %s in range(0, K, BK):", kv), kv);
    loop->block = true;
    g->kstart = kv;
    char *sname = fresh(g, "s");
    n = open_stmt(g);
    use(g, kv);
    if (q) use(g, q);
    char *qt = q ? q : operand(g, shape2(EM, EN), qdt).t;
    char *kt = operand(g, shape2(EK, EN), qdt).t;
    close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.dot_t(%s, %s) / BN", sname, qt, kt), sname);
    if (masked) {   /* exact conditions: indices only; masked scores are -1e30, exp gives 0 */
        char *s2 = fresh(g, "s");
        n = open_stmt(g);
        use(g, sname);
        use(g, kv);
        const char *cond = chance(g, 50) ? pfmt(p, "(%s + ph.iota(1, BK)) <= (r0 + ph.iota(0, BM))", kv)
                                         : pfmt(p, "(%s + ph.iota(1)) < K", kv);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.where(%s, %s, -1.0e30)", s2, cond, sname), s2);
        sname = s2;
    }
    char *v = operand(g, shape2(EK, EN), vdt).t;
    if (fused) {
        n = open_stmt(g);
        use(g, acc), use(g, m), use(g, l), use(g, sname), use(g, kv);
        close_stmt(g, loop, n, pfmt(p, "ph.online_softmax(%s, %s, %s, %s, %s)", acc, m, l, sname, v), NULL);
        feature(g, PF_ONLINE_SOFTMAX);
    } else {
        char *mn = fresh(g, "mn"), *a = fresh(g, "a"), *pp = fresh(g, "p");
        n = open_stmt(g);
        use(g, m), use(g, sname);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.max(%s, ph.rowmax(%s))", mn, m, sname), mn);
        n = open_stmt(g);
        use(g, m), use(g, mn);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.exp(%s - %s)", a, m, mn), a);
        n = open_stmt(g);
        use(g, sname), use(g, mn);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.exp(%s - %s)", pp, sname, mn), pp);
        n = open_stmt(g);
        use(g, l), use(g, a), use(g, pp);
        close_stmt(g, loop, n, pfmt(p, "%s = %s * %s + ph.rowsum(%s)", l, l, a, pp), NULL);
        n = open_stmt(g);
        use(g, acc), use(g, a), use(g, pp), use(g, kv);
        close_stmt(g, loop, n, pfmt(p, "%s = %s * %s + ph.dot(%s(%s), %s)", acc, acc, a, dtname(vdt), pp, v), NULL);
        n = open_stmt(g);
        use(g, m), use(g, mn);
        close_stmt(g, loop, n, pfmt(p, "%s = %s", m, mn), NULL);
        if (p->tc) feature(g, PF_ATTENTION_TC);
    }
    g->kstart = "0";
    n = open_stmt(g);
    use(g, acc), use(g, l);
    char *o = fresh(g, "t");
    close_stmt(g, parent, n, pfmt(p, "%s: ph.let = %s / %s", o, acc, l), o);
    sym_push(g, o, DT_F32, shape2(EM, EN), false, false, 2);
    feature(g, PF_FOR_CARRY);
}

static char *scalar_cond(Gen *g) { return gen_cond(g, shape0(), 1, 0).t; }

static void gen_return_if(Gen *g, Node *parent)
{
    Node *n = open_stmt(g);
    close_stmt(g, parent, n, pfmt(g->p, "if %s:", scalar_cond(g)), NULL);
    n->block = true;
    node_add(g->p, n, node_new(g->p, "return", false));
    feature(g, PF_EARLY_RETURN);
}

static void gen_if(Gen *g, Node *parent, int depth)
{
    Node *n = open_stmt(g);
    close_stmt(g, parent, n, pfmt(g->p, "if %s:", scalar_cond(g)), NULL);
    n->block = true;
    gen_body(g, n, depth + 1, 1 + rnd(g, 2));
    Node *last = n;
    bool elif = chance(g, 50), els = chance(g, 60);
    if (elif) {
        Node *e = open_stmt(g);
        e->head = pfmt(g->p, "elif %s:", scalar_cond(g));
        e->block = true;
        g->cur = NULL;
        gen_body(g, e, depth + 1, 1 + rnd(g, 2));
        last->next = e;
        last = e;
    }
    if (els) {
        Node *e = node_new(g->p, "else:", true);
        gen_body(g, e, depth + 1, 1 + rnd(g, 2));
        if (chance(g, 20)) {
            node_add(g->p, e, node_new(g->p, "return", false));
            feature(g, PF_EARLY_RETURN);
        }
        last->next = e;
    }
    if (elif && els) feature(g, PF_IF_ELIF_ELSE);
}

static void gen_stmt(Gen *g, Node *parent, int depth)
{
    if (depth == 0 && chance(g, g->o.pct_attention * (g->p->tc ? 2 : 1))) {
        gen_attention(g, parent);
        return;
    }
    int k = rnd(g, 100);
    if (k < 28) gen_let(g, parent);
    else if (k < 40) gen_var(g, parent);
    else if (k < 45) gen_scalar_var(g, parent);
    else if (k < 65) { if (!gen_assign(g, parent)) gen_let(g, parent); }
    else if (k < 77 && depth < 2) gen_for(g, parent, depth);
    else if (k < 85 && depth == 0) gen_kloop(g, parent);
    else if (k < 95 && depth < 3) gen_if(g, parent, depth);
    else if (k < 98) gen_return_if(g, parent);
    else gen_let(g, parent);
}

/* Each output is written once per block, in windows no two blocks share. */
static void gen_store(Gen *g, Node *parent)
{
    PhgenProgram *p = g->p;
    if (p->ntens >= 28) return;
    Tensor *t = &p->tens[p->ntens];
    int r = rnd(g, 20);
    t->dt = r < 9 ? DT_F32 : r < 13 ? DT_F16 : r < 17 ? DT_BF16 : DT_I32;
    snprintf(t->name, sizeof t->name, "Y%d", p->ntens++);
    t->rank = 2;
    t->e[0] = EM;
    t->e[1] = EN;
    t->output = true;
    feature(g, t->dt == DT_F16 ? PF_F16 : t->dt == DT_BF16 ? PF_BF16 : t->dt == DT_I32 ? PF_I32_TENSOR : PF_F32);
    unsigned flags = t->dt == DT_I32 ? NEED_INT : 0;
    int depth = 1 + rnd(g, g->o.max_depth);
    int kind = rnd(g, 20);
    if (kind < 3) {   /* one row per iteration */
        int step = 1 + rnd(g, 3);
        char *iv = fresh(g, "i");
        Node *loop = open_stmt(g);
        close_stmt(g, parent, loop, pfmt(p, "for %s in range(0, BM, %d):", iv, step), iv);
        loop->block = true;
        push_loop(g, iv);
        Node *n = open_stmt(g);
        use(g, iv);
        Ex e = gen_num(g, shape2(E1, EN), depth, flags);
        close_stmt(g, loop, n, pfmt(p, "%s[r0 + %s, c0:+BN] = %s", t->name, iv, e.t), NULL);
        g->nloops--;
        feature(g, PF_STORE_LOOP);
        return;
    }
    Node *n = open_stmt(g);
    if (kind < 6) {
        Ex e = gen_num(g, shape2(EM, E1), depth, flags);
        close_stmt(g, parent, n, pfmt(p, "%s[r0:+BM, ph.ctx.block.y] = %s", t->name, e.t), NULL);
    } else if (kind < 9) {
        Ex e = gen_num(g, shape2(E1, EN), depth, flags);
        close_stmt(g, parent, n, pfmt(p, "%s[ph.ctx.block.x, c0:+BN] = %s", t->name, e.t), NULL);
    } else {
        Ex e = gen_num(g, shape2(EM, EN), depth, flags);
        close_stmt(g, parent, n, pfmt(p, "%s[r0:+BM, c0:+BN] = %s", t->name, e.t), NULL);
    }
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

static int meta_max(const Meta *m) { int r = m->v[0]; for (int i = 1; i < m->n; i++) if (m->v[i] > r) r = m->v[i]; return r; }
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
        {PF_INT_DIV, " // ", " % "},
    };
    char *src = phgen_source(p);
    for (size_t i = 0; i < sizeof sig / sizeof *sig; i++) {
        bool has = strstr(src, sig[i].a) && (!sig[i].b || strstr(src, sig[i].b));
        if (sig[i].f == PF_INT_DIV) has = strstr(src, sig[i].a) || strstr(src, sig[i].b);
        p->features = has ? p->features | 1ull << sig[i].f : p->features & ~(1ull << sig[i].f);
    }
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
    g->kstart = "0";
    p->root.block = true;
    choose_configs(g);
    choose_spec(g);
    sym_push(g, "r0", DT_I32, shape0(), true, false, 4096);
    sym_push(g, "c0", DT_I32, shape0(), true, false, 4096);
    int nstmts = 1 + rnd(g, g->o.max_stmts);
    for (int i = 0; i < nstmts; i++) gen_stmt(g, &p->root, 0);
    int nout = 1 + rnd(g, 3);
    g->storing = true;
    for (int i = 0; i < nout; i++) gen_store(g, &p->root);
    /* every dimension name the body may use is declared by some tensor */
    bool has_k = false;
    for (int i = 0; i < p->ntens; i++) has_k |= p->tens[i].e[0] == EK || p->tens[i].e[1] == EK;
    if (!has_k) tensor_for(g, 1, EK, E1, DT_F32);
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

/* The decorators, in the program's order (reversed for the second kernel). */
static void print_decorators(FILE *out, const PhgenProgram *p, int launch, bool reversed)
{
    fprintf(out, "@ph.kernel\n");
    for (int i = 0; i < 4; i++) {
        int d = p->deco_order[reversed ? 3 - i : i];
        if (d == 0 && p->tc) fprintf(out, "@ph.tensorcore\n");
        if (d == 1 && launch > 0) fprintf(out, "@ph.launch(%d)\n", launch);
        if (d == 1 && launch < 0) fprintf(out, "@ph.launch(NT)\n");
        if (d == 3 && (p->aligned[EM] || p->aligned[EN] || p->aligned[EK])) {
            fprintf(out, "@ph.aligned(");
            for (int e = EM, first = 1; e <= EK; e++)
                if (p->aligned[e]) {
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
    bool keep[32] = {false};
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
    }
    for (int i = 0; i < p->ntens; i++) {
        const Tensor *t = &p->tens[i];
        if (!keep[i]) continue;
        if (t->rank == 1) fprintf(out, "%s: ph.tensor[%s][%s], ", t->name, dtname(t->dt), ext_dim[t->e[0]]);
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

/* ---- reduction ---- */

typedef struct {
    PhgenProgram *p;
    PhgenPredicate still_fails;
    void *user;
    int tries, max_tries, steps;
} Reducer;

static bool attempt(Reducer *r)
{
    if (r->tries >= r->max_tries) return false;
    r->tries++;
    char *src = phgen_source(r->p);
    bool fails = r->still_fails(src, &r->p->spec, r->user);
    free(src);
    if (fails) r->steps++;
    return fails;
}

static bool uses_name(const Node *n, const char *name)
{
    if (n->uses_all) return true;
    size_t len = strlen(name);
    for (const char *s = strstr(n->uses, name); s; s = strstr(s + 1, name))
        if (s[-1] == ' ' && (s[len] == ' ' || s[len] == 0)) return true;
    return false;
}

/* Whether a live statement outside skip's subtree uses name. */
static bool used_outside(const Node *n, const Node *skip, const char *name)
{
    if (n == skip || n->dropped) return false;
    if (uses_name(n, name)) return true;
    for (int i = 0; i < n->nbody; i++)
        if (used_outside(n->body[i], skip, name)) return true;
    return n->next && used_outside(n->next, skip, name);
}

static void collect(Node *n, Node ***list, int *count, int *cap)
{
    if (*count == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *list = realloc(*list, sizeof **list * (size_t)*cap);
    }
    (*list)[(*count)++] = n;
    for (int i = 0; i < n->nbody; i++) collect(n->body[i], list, count, cap);
    if (n->next) collect(n->next, list, count, cap);
}

/* One sweep over the statements, last first: each goes if the failure stays. */
static bool drop_pass(Reducer *r)
{
    Node **all = NULL;
    int count = 0, cap = 0;
    collect(&r->p->root, &all, &count, &cap);
    bool progress = false;
    for (int i = count - 1; i >= 1; i--) {
        Node *n = all[i];
        if (n->dropped || (n->def[0] && used_outside(&r->p->root, n, n->def))) continue;
        n->dropped = true;
        if (attempt(r)) progress = true;
        else n->dropped = false;
    }
    free(all);
    return progress;
}

static bool spec_keeps_promises(const PhgenProgram *p);

static void reduce_configs(Reducer *r)
{
    for (int m = 0; m < r->p->nmeta; m++) {
        Meta *meta = &r->p->meta[m], saved = *meta;
        for (int v = 0; v < saved.n && saved.n > 1; v++) {
            meta->n = 1;
            meta->v[0] = saved.v[v];
            if (spec_keeps_promises(r->p) && attempt(r)) break;
            *meta = saved;
        }
    }
}

/* The smallest legal value below v for meta-parameter m, or 0. */
static int smaller_meta(const PhgenProgram *p, int m, int v)
{
    if (p->meta[m].role == META_THREADS) return v > 32 ? (v / 2 + 31) / 32 * 32 : 0;
    if (p->meta[m].role == META_DIM) return 0;   /* the spec's dim must stay one of its values */
    int unit = p->tc ? (m == 1 ? 8 : 16) : 1;
    int w = v / 2 / unit * unit;
    return w >= unit && w < v ? w : 0;
}

/* Whether the spec still keeps the promises: aligned dims hold every
 * block's tile (multiples the interpreter checks itself), a specialized dim
 * is one config's value. */
static bool spec_keeps_promises(const PhgenProgram *p)
{
    const DtSpec *s = &p->spec;
    for (int e = EM; e <= EN; e++)
        if (p->aligned[e] && s->grid[e - EM] * meta_max(&p->meta[e - EM]) > dt_spec_get(s, ext_dim[e], 0)) return false;
    if (p->specialized == E1) return true;
    const Meta *sm = &p->meta[p->nmeta - 1];
    for (int i = 0; i < sm->n; i++)
        if (sm->v[i] == dt_spec_get(s, ext_dim[p->specialized], 0)) return true;
    return false;
}

static void reduce_sizes(Reducer *r)
{
    DtSpec *s = &r->p->spec;
    for (int a = 0; a < 2; a++)
        while (s->grid[a] > 1) {
            int saved = s->grid[a];
            s->grid[a] = saved / 2;
            if (!attempt(r)) { s->grid[a] = saved; break; }
        }
    for (int i = 0; i < s->nvalues; i++) {
        if (strcmp(s->values[i].name, "M") && strcmp(s->values[i].name, "N") && strcmp(s->values[i].name, "K")) continue;
        while (s->values[i].value > 1) {
            double saved = s->values[i].value;
            s->values[i].value = (double)((int)saved / 2);
            if (!spec_keeps_promises(r->p) || !attempt(r)) { s->values[i].value = saved; break; }
        }
    }
    for (int m = 0; m < r->p->nmeta; m++) {
        Meta *meta = &r->p->meta[m];
        if (meta->n != 1) continue;
        int w;
        while ((w = smaller_meta(r->p, m, meta->v[0])) > 0) {
            int saved = meta->v[0];
            meta->v[0] = w;
            if (!attempt(r)) { meta->v[0] = saved; break; }
        }
    }
}

int phgen_reduce(PhgenProgram *p, PhgenPredicate still_fails, void *user, int max_tries)
{
    Reducer r = {p, still_fails, user, 0, max_tries, 0};
    reduce_configs(&r);
    while (drop_pass(&r)) {}
    reduce_sizes(&r);
    while (drop_pass(&r)) {}
    return r.steps;
}

static int count_alive(const Node *n)
{
    if (n->dropped) return 0;
    int c = 1;
    for (int i = 0; i < n->nbody; i++) c += count_alive(n->body[i]);
    return c + (n->next ? count_alive(n->next) : 0);
}

int phgen_count_stmts(const PhgenProgram *p) { return count_alive(&p->root) - 1; }
