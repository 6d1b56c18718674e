/* phgen_gen.h: what the files of the generator share (phgen.c: the
 * program, its configs, run spec and text; phgen_expr.c: expressions;
 * phgen_stmt.c: statements; phgen_reduce.c: the reducer): the statement
 * tree, the program, the generation state, and the small helpers on
 * shapes, dtypes and the random stream. */
#ifndef PHGEN_GEN_H
#define PHGEN_GEN_H

#include "phgen.h"

#include <stdio.h>
#include <string.h>

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
/* view: an input declared [2, e[0], 3, e[1]] and read along axes 1 and 3
 * (pct_strided); to the generator a rank-2 tensor of e[0] x e[1]. */
typedef struct { char name[16]; DType dt; int rank; int e[2]; bool output; bool view; } Tensor;

struct PhgenProgram {
    uint64_t seed;
    bool tc;
    int launch;            /* threads literal; 0: no decorator; -1: the meta-parameter NT */
    int launch2;           /* the second kernel's, when there is one */
    bool two_kernels;
    int deco_order[4];     /* tensorcore, launch, autotune, aligned in print order */
    int warp_specialize;   /* @ph.warp_specialize's argument, 0 for none */
    bool aligned[4];       /* per extent: @ph.aligned(DIM="BDIM") */
    int specialized;       /* the extent whose dim is also an autotune name, or E1 */
    int nmeta;
    Meta meta[5];          /* BM, BN, BK, then NT and the specialized dim when there are */
    /* inputs stop at 23 tensors (10, then one a shape: 12), outputs at 28; a
     * dot operand that must have an input of a shape none has yet takes one
     * past both (must_load: at most one a shape, so 28 + 12) */
    Tensor tens[40];
    int ntens;
    Node root;
    DtSpec spec;
    uint64_t features;
    bool helper_used;      /* the source defines fz_keep, a @ph.func helper */
    void **allocs;
    int nallocs, capallocs;
};

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
    uint64_t rng_more;         /* the newer math built-ins' own stream (PhgenOptions.pct_math_more) */
    uint64_t rng_index;        /* elements, gathers and scatters' own stream (PhgenOptions.pct_index) */
    bool on_index;             /* rnd draws from that stream now (index_stream) */
    uint64_t rng_types;        /* the 8-bit types' own stream (PhgenOptions.pct_types) */
    uint64_t rng_mask;         /* masked loads' and stores' own stream (PhgenOptions.pct_mask) */
    uint64_t rng_flow;         /* ph.static_range's and helpers' own stream (PhgenOptions.pct_flow) */
    uint64_t rng_strided;      /* rank-4 views' own stream (PhgenOptions.pct_strided) */
    uint64_t rng_while;        /* range loops written as whiles: their own stream (PhgenOptions.pct_while) */
    uint64_t rng_assert;       /* device asserts that hold: their own stream (PhgenOptions.pct_assert) */
    uint64_t rng_i64;          /* i64 arithmetic and outputs: their own stream (PhgenOptions.pct_i64) */
    uint64_t rng_ws;           /* @ph.warp_specialize: its own stream (PhgenOptions.pct_warp_specialize) */
    uint64_t rng_atomic;       /* atomic adds: their own stream (PhgenOptions.pct_atomic) */
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
    bool must_load;            /* tensor_for may pass the inputs' limit (must_load) */
} Gen;

static inline uint64_t next_u64(Gen *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline int rnd(Gen *g, int n) { return n <= 1 ? 0 : (int)(next_u64(g) % (uint64_t)n); }
/* rnd drawn from another stream (*stream, advanced), leaving rnd's own as it was:
 * each newer generator feature draws from a stream of its own, so a seed's
 * program is otherwise the one it was before the feature existed. */
static inline int rnd_from(Gen *g, uint64_t *stream, int n)
{
    uint64_t saved = g->rng;
    g->rng = *stream;
    int r = rnd(g, n);
    *stream = g->rng;
    g->rng = saved;
    return r;
}
static inline int rnd_more(Gen *g, int n) { return rnd_from(g, &g->rng_more, n); }    /* the newer math built-ins */
static inline int rnd_types(Gen *g, int n) { return rnd_from(g, &g->rng_types, n); }  /* the 8-bit types */
static inline int rnd_mask(Gen *g, int n) { return rnd_from(g, &g->rng_mask, n); }    /* masked loads and stores */
static inline int rnd_flow(Gen *g, int n) { return rnd_from(g, &g->rng_flow, n); }    /* unrolled loops and helpers */
static inline int rnd_strided(Gen *g, int n) { return rnd_from(g, &g->rng_strided, n); }   /* rank-4 views */
static inline int rnd_while(Gen *g, int n) { return rnd_from(g, &g->rng_while, n); }  /* loops written as whiles */
static inline int rnd_assert(Gen *g, int n) { return rnd_from(g, &g->rng_assert, n); }  /* device asserts */
static inline int rnd_i64(Gen *g, int n) { return rnd_from(g, &g->rng_i64, n); }      /* i64 */
static inline int rnd_atomic(Gen *g, int n) { return rnd_from(g, &g->rng_atomic, n); }   /* atomic adds */
static inline bool chance(Gen *g, int pct) { return rnd(g, 100) < pct; }
/* Swaps rnd's stream with that of elements, gathers and scatters: what is
 * drawn between two calls leaves the main stream as it was. */
static inline void index_stream(Gen *g)
{
    uint64_t t = g->rng;
    g->rng = g->rng_index;
    g->rng_index = t;
    g->on_index = !g->on_index;
}
/* Whether to make an element, a gather or a scatter here: from their own
 * stream, and never (drawing nothing) with pct_index 0. */
static inline bool index_chance(Gen *g)
{
    if (!g->o.pct_index) return false;
    if (g->on_index) return chance(g, g->o.pct_index);
    index_stream(g);
    bool yes = chance(g, g->o.pct_index);
    index_stream(g);
    return yes;
}
static inline void feature(Gen *g, PhgenFeature f) { g->p->features |= 1ull << f; }

static inline Shape shape0(void) { return (Shape){0, {E1, E1}}; }
static inline Shape shape2(int a, int b) { return (Shape){2, {a, b}}; }

static inline bool fits(Shape v, Shape t)
{
    if (v.rank > t.rank) return false;
    return (v.e[0] == E1 || v.e[0] == t.e[0]) && (v.e[1] == E1 || v.e[1] == t.e[1]);
}

static inline Shape bcast(Shape a, Shape b)
{
    Shape r = {a.rank > b.rank ? a.rank : b.rank, {a.e[0] != E1 ? a.e[0] : b.e[0], a.e[1] != E1 ? a.e[1] : b.e[1]}};
    return r;
}

static inline bool is_float(DType dt) { return dt == DT_F16 || dt == DT_BF16 || dt == DT_F32; }

/* The dtype sema gives a binary op on a and b (docs/language.md, Promotion). */
static inline DType promote(Ex a, Ex b)
{
    if (a.dt == b.dt) return a.dt;
    if (a.dt == DT_I32) return b.dt;
    if (b.dt == DT_I32) return a.dt;
    if (a.weak) return b.dt;
    if (b.weak) return a.dt;
    return DT_F32;   /* two different float dtypes: f16 with bf16, or either with f32 */
}

static inline Ex ex(char *t, DType dt, Shape sh, bool exact, double mag)
{
    return (Ex){.t = t, .dt = dt, .sh = sh, .exact = exact, .mag = mag};
}

static inline const char *dtname(DType dt)
{
    return dt == DT_F16 ? "ph.f16" : dt == DT_BF16 ? "ph.bf16" : dt == DT_I32 ? "ph.i32" : dt == DT_I64 ? "ph.i64" : "ph.f32";
}

/* A meta-parameter's largest value over the configs. */
static inline int meta_max(const Meta *m) { int r = m->v[0]; for (int i = 1; i < m->n; i++) if (m->v[i] > r) r = m->v[i]; return r; }

static inline bool flags_ok(unsigned flags, DType dt, bool exact)
{
    if ((flags & NEED_EXACT) && !exact) return false;
    if ((flags & NEED_INT) && dt != DT_I32) return false;
    if ((flags & NEED_FLOAT) && !is_float(dt)) return false;
    return true;
}

/* ---- phgen.c: the program's memory and its statement tree ---- */
/* Text formatted into the program's memory (freed with it). */
char *pfmt(PhgenProgram *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
Node *node_new(PhgenProgram *p, const char *head, bool block);
void node_add(PhgenProgram *p, Node *parent, Node *child);

/* ---- phgen_expr.c: names in scope, tensors, expressions ---- */
/* Records that the statement being generated uses name. */
void gen_use(Gen *g, const char *name);
void sym_push(Gen *g, const char *name, DType dt, Shape sh, bool exact, bool is_var, double mag);
void scope_pop(Gen *g);
/* A tensor parameter of that rank, extents and dtype, made when there is none. */
Tensor *tensor_for(Gen *g, int rank, int e0, int e1, DType dt);
DType pick_dtype(Gen *g, unsigned flags);
/* A load of exactly shape sh (rank 1 or 2) and dtype dt. */
bool load_of(Gen *g, Shape sh, DType dt, Ex *out);
/* A window's text as a masked load or store (pct_mask of them, from the
 * masks' stream), else unchanged: a mask of shape sh from iotas and block
 * indices, exact everywhere; a load's other value a literal of dtype dt. */
char *masked_load_text(Gen *g, char *window, Shape sh, DType dt);
/* The statement that stores value into window: `window = value`, or
 * ph.store(window, value, mask=...) for a window of shape sh. */
char *store_text(Gen *g, const char *window, Shape sh, const char *value);
/* A shape that fits t: each dim kept or made 1, sometimes rank 1. */
Shape sub_shape(Gen *g, Shape t);
Ex gen_literal(Gen *g, bool want_int);
/* A dot operand of exactly shape sh (rank 2) and dtype dt, magnitude <= 2. */
Ex dot_operand(Gen *g, Shape sh, DType dt);
/* One of ph.dot(a, b), ph.dot_t(a, b), ph.dot(ph.transpose(a), b), giving [P, Q] over inner extent R. */
char *dot_text(Gen *g, int P, int Q, int R, DType dt);
DType dot_dtype(Gen *g);
/* A condition (bool) whose shape fits t, from exact values only. */
Ex gen_cond(Gen *g, Shape t, int depth, int fix);
/* An expression whose shape fits t, meeting flags. */
Ex gen_num(Gen *g, Shape t, int depth, unsigned flags);
/* An element of an input tensor as a scalar meeting flags (false: no tensor for it). */
bool gen_element(Gen *g, unsigned flags, Ex *out);

/* ---- phgen_i64.c: i64, from its own stream (PhgenOptions.pct_i64) ---- */
/* An exact float a's value times 4 as an i32, through i64 arithmetic past 2^32. */
Ex phgen_i64_round_trip(Gen *g, Ex a);
/* Whether an i32 output is an i64 one instead (pct_i64). */
bool phgen_i64_output(Gen *g);
/* The text an i64 output stores for an exact i32 value: the value past 2^32. */
const char *phgen_i64_value(Gen *g, const char *value);

/* ---- phgen_stmt.c: statements ---- */
void gen_stmt(Gen *g, Node *parent, int depth);
/* Each output is written once per block, in windows no two blocks share. */
void gen_store(Gen *g, Node *parent);
/* Sometimes (pct_atomic, programs with tensor-core dots) a K loop adding
 * each step's dot of two f16 or bf16 inputs, loaded as they are, into an
 * output of its own: the copies and the add a warp-specialized kernel's
 * producer takes (by boxes where BN is a multiple of 32). */
void gen_added_dots(Gen *g, Node *parent);

#endif
