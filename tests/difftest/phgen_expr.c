/* phgen_expr.c: the generator's expressions (phgen.c says how they are
 * made): leaves (literals, scalars, loads of windows), operators, math,
 * reductions, argmax/argmin, prefix sums, dots, transposes and reshapes,
 * conditions and index tiles, each to fit a target shape with bounded, and
 * where needed exact, values. */
#include "phgen_gen.h"

#include <math.h>
#include <stdlib.h>

void gen_use(Gen *g, const char *name)
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

void sym_push(Gen *g, const char *name, DType dt, Shape sh, bool exact, bool is_var, double mag)
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

void scope_pop(Gen *g)
{
    while (g->nsyms && g->syms[g->nsyms - 1].scope >= g->scope) g->nsyms--;
    g->scope--;
}

/* ---- leaves ---- */

static const char *start_of(Gen *g, int e)
{
    return e == EM ? "r0" : e == EN ? "c0" : e == EK ? g->kstart : "0";
}

Tensor *tensor_for(Gen *g, int rank, int e0, int e1, DType dt)
{
    PhgenProgram *p = g->p;
    int match = -1, nmatch = 0;
    for (int i = 0; i < p->ntens; i++) {
        Tensor *t = &p->tens[i];
        if (!t->output && !t->view && t->rank == rank && t->e[0] == e0 && t->e[1] == e1 && t->dt == dt && rnd(g, ++nmatch) == 0) match = i;
    }
    if (match >= 0 && (chance(g, 70) || p->ntens >= 10)) return &p->tens[match];
    for (int i = 0; p->ntens >= 10 && i < p->ntens; i++) {   /* enough inputs: one of another dtype will do */
        Tensor *t = &p->tens[i];
        if (!t->output && !t->view && t->rank == rank && t->e[0] == e0 && t->e[1] == e1) return t;
    }
    /* 10 + one per shape (12 shapes) fits; outputs count in ntens too, so a
     * dot operand's shape may still have none (must_load) */
    if (p->ntens >= (g->must_load ? (int)(sizeof p->tens / sizeof p->tens[0]) : 23)) return NULL;
    Tensor *t = &p->tens[p->ntens];
    snprintf(t->name, sizeof t->name, "X%d", p->ntens++);
    t->dt = dt;
    t->rank = rank;
    t->e[0] = e0;
    t->e[1] = e1;
    t->output = false;
    t->view = false;
    feature(g, dt == DT_F16 ? PF_F16 : dt == DT_BF16 ? PF_BF16 : dt == DT_I32 ? PF_I32_TENSOR : PF_F32);
    if (rank == 1) feature(g, PF_RANK1);
    return t;
}

/* Whether a 2-D load reads a rank-4 view (pct_strided, from its own
 * stream; nothing drawn when it is 0). */
static bool strided_chance(Gen *g)
{
    return g->o.pct_strided && rnd_strided(g, 100) < g->o.pct_strided;
}

/* An input declared [2, e0, 3, e1] (the difftest engine passes it as a
 * view: strides that are not row-major), read as an e0 x e1 window; an
 * existing one of that dtype and those extents, or a new one. From the
 * views' stream only. */
static Tensor *view_for(Gen *g, int e0, int e1, DType dt)
{
    PhgenProgram *p = g->p;
    for (int i = 0; i < p->ntens; i++) {
        Tensor *t = &p->tens[i];
        if (t->view && t->e[0] == e0 && t->e[1] == e1 && t->dt == dt && rnd_strided(g, 3)) return t;
    }
    for (int i = 0; p->ntens >= 23 && i < p->ntens; i++) {   /* no room: a view of this shape in any dtype */
        Tensor *t = &p->tens[i];
        if (t->view && t->e[0] == e0 && t->e[1] == e1) return t;
    }
    if (p->ntens >= 23) return NULL;
    Tensor *t = &p->tens[p->ntens];
    *t = (Tensor){.dt = dt, .rank = 2, .e = {e0, e1}, .view = true};
    snprintf(t->name, sizeof t->name, "V%d", p->ntens++);
    feature(g, PF_STRIDED_VIEW);
    return t;
}

/* The scalar indices of a view's axes 0 (of 2) and 2 (of 3): block ids and
 * literals, sometimes outside (the whole window reads 0). */
static char *view_window(Gen *g, const Tensor *t, const char *rows, const char *cols)
{
    static const char *const a0[] = {"0", "1", "ph.ctx.block.y % 2", "ph.ctx.block.x - 1", "2"};
    static const char *const a2[] = {"2", "ph.ctx.block.x % 3", "ph.ctx.block.y + 1", "0", "(-1)"};
    return pfmt(g->p, "%s[%s, %s, %s, %s]", t->name, a0[rnd_strided(g, 5)], rows, a2[rnd_strided(g, 5)], cols);
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
        gen_use(g, g->stream_iv);
        feature(g, PF_LOOP_LOAD);
        return pfmt(g->p, "%s + %s", r, g->stream_iv);
    }
    if (g->nloops && chance(g, 25)) {
        const char *iv = g->loopvar[rnd(g, g->nloops)];
        gen_use(g, iv);
        r = pfmt(g->p, "%s + %s", r, iv);
    }
    if (chance(g, 25)) {
        int off = chance(g, 60) ? 1 + rnd(g, 6) : -1 - rnd(g, 3);
        r = pfmt(g->p, "%s %c %d", r, off < 0 ? '-' : '+', off < 0 ? -off : off);
        feature(g, PF_EDGE_WINDOW);
    }
    if (index_chance(g)) {   /* moved by an element of an i32 input: 0 to 3 */
        bool back = !g->on_index;
        if (back) index_stream(g);
        Ex e;
        if (gen_element(g, NEED_INT, &e)) r = pfmt(g->p, "%s + %s %% 4", r, e.t);
        if (back) index_stream(g);
    }
    return r;
}

DType pick_dtype(Gen *g, unsigned flags)
{
    if (flags & NEED_INT) return DT_I32;
    if (!(flags & NEED_FLOAT) && chance(g, 12)) return DT_I32;
    int r = rnd(g, 10);
    return r < 5 ? DT_F32 : r < 8 ? DT_F16 : DT_BF16;
}

/* A tile of BM (or BN, BK) row indices into a tensor of extent e rows,
 * some outside it: a permutation-like walk of the rows, or an i32 tensor
 * of indices. On the index stream. */
static char *row_indices(Gen *g, int e)
{
    if (chance(g, 50)) {
        Tensor *t = tensor_for(g, 1, e, E1, DT_I32);
        if (t && t->dt == DT_I32) return pfmt(g->p, "%s[%s:+%s]", t->name, window_start(g, e), ext_meta[e]);
    }
    return pfmt(g->p, "(%s + ph.iota(0, %s) * %d) %% %s - %d", start_of(g, e), ext_meta[e], 1 + rnd(g, 3), ext_dim[e], rnd(g, 3));
}

/* A load of exactly shape sh (rank 1 or 2) and dtype dt. */
bool load_of(Gen *g, Shape sh, DType dt, Ex *out)
{
    int te[2];
    for (int d = 0; d < 2; d++) te[d] = sh.e[d] != E1 ? sh.e[d] : EM + rnd(g, 3);
    bool view = sh.rank == 2 && strided_chance(g);
    Tensor *t = sh.rank == 1 ? tensor_for(g, 1, sh.e[1], E1, dt) : view ? view_for(g, te[0], te[1], dt) : tensor_for(g, 2, te[0], te[1], dt);
    if (!t && view) {   /* no room for another view: a plain tensor of the shape */
        view = false;
        t = tensor_for(g, 2, te[0], te[1], dt);
    }
    if (!t) return false;
    char *text;
    bool gathered = false;
    if (sh.rank == 1) {
        text = pfmt(g->p, "%s[%s:+%s]", t->name, window_start(g, sh.e[1]), ext_meta[sh.e[1]]);
    } else {
        char *ax[2];
        for (int d = 0; d < 2; d++)   /* a view's axis of extent 1 is a window of 1: a plain index would drop it */
            ax[d] = sh.e[d] != E1 ? pfmt(g->p, "%s:+%s", window_start(g, te[d]), ext_meta[te[d]])
                  : view ? pfmt(g->p, "%s:+1", window_start(g, te[d])) : window_start(g, te[d]);
        if (!view && sh.e[0] != E1 && index_chance(g)) {   /* the window's rows gathered by a tile of indices */
            index_stream(g);
            ax[0] = row_indices(g, te[0]);
            index_stream(g);
            feature(g, PF_GATHER);
            gathered = true;
        }
        text = view ? view_window(g, t, ax[0], ax[1]) : pfmt(g->p, "%s[%s, %s]", t->name, ax[0], ax[1]);
    }
    /* a gathered window's shape follows its indices', not sh: it takes no mask */
    if (!gathered) text = masked_load_text(g, text, sh, t->dt);
    if (rnd_flow(g, 200) < g->o.pct_flow) {   /* through the helper fz_keep, which returns its argument */
        text = pfmt(g->p, "fz_keep(%s)", text);
        g->p->helper_used = true;
        feature(g, PF_HELPER);
    }
    *out = ex(text, dt, sh, true, t->dt == DT_I32 || t->dt == DT_I64 ? 50 : 2);
    if (t->dt != dt) {   /* a tensor of another dtype, converted (exactly: it is a raw input) */
        out->t = dt == DT_I32 ? pfmt(g->p, "ph.i32(%s * 4.0)", text) : pfmt(g->p, "%s(%s)", dtname(dt), text);
        out->mag = dt == DT_I32 ? 8 : out->mag;
    }
    return true;
}

/* A shape that fits t: each dim kept or made 1, sometimes rank 1. */
Shape sub_shape(Gen *g, Shape t)
{
    if (t.rank < 2) return t;
    Shape s = t;
    int drop = rnd(g, 10);
    if (drop == 0 && t.e[1] != E1) s.e[0] = E1;
    else if (drop == 1 && t.e[0] != E1) s.e[1] = E1;
    if (s.e[0] == E1 && s.e[1] != E1 && chance(g, 35)) s.rank = 1;
    return s;
}

Ex gen_literal(Gen *g, bool want_int)
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

/* One element of an input tensor read as a scalar (exact: a raw input),
 * its indices from the block ids, sometimes outside the tensor (it reads
 * 0). On the index stream. */
bool gen_element(Gen *g, unsigned flags, Ex *out)
{
    DType dt = pick_dtype(g, flags);
    static const char *const at[] = {"ph.ctx.block.x", "ph.ctx.block.y + 1", "2", "ph.ctx.block.x - 1", "r0 + 3"};
    bool rank1 = chance(g, 30);
    Tensor *t = rank1 ? tensor_for(g, 1, EM + rnd(g, 3), E1, dt) : tensor_for(g, 2, EM + rnd(g, 3), EM + rnd(g, 3), dt);
    if (!t || !flags_ok(flags, t->dt, true)) return false;   /* a tensor of another dtype may come back */
    dt = t->dt;
    char *text = rank1 ? pfmt(g->p, "%s[%s]", t->name, at[rnd(g, 5)]) : pfmt(g->p, "%s[%s, %s]", t->name, at[rnd(g, 5)], at[rnd(g, 5)]);
    *out = ex(text, dt, shape0(), true, dt == DT_I32 ? 50 : 2);
    feature(g, PF_ELEMENT);
    return true;
}

/* A scalar that is not a literal: parameters, block ids, dims, loop
 * variables, scalar locals, elements of tensors. */
static bool scalar_leaf(Gen *g, unsigned flags, Ex *out)
{
    if (index_chance(g)) {
        index_stream(g);
        bool made = gen_element(g, flags, out);
        index_stream(g);
        if (made) return true;
    }
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
            gen_use(g, iv);
            *out = ex(pfmt(g->p, "%s", iv), DT_I32, shape0(), true, 256);
            return true;
        }
        if (k == 5) {
            int pick = -1, seen = 0;
            for (int i = 0; i < g->nsyms; i++)
                if (g->syms[i].sh.rank == 0 && flags_ok(flags, g->syms[i].dt, g->syms[i].exact) && rnd(g, ++seen) == 0) pick = i;
            if (pick < 0) continue;
            Sym *s = &g->syms[pick];
            gen_use(g, s->name);
            *out = ex(pfmt(g->p, "%s", s->name), s->dt, shape0(), s->exact, s->mag);
            return true;
        }
    }
    return false;
}

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
            gen_use(g, s->name);
            return ex(pfmt(g->p, "%s", s->name), s->dt, s->sh, s->exact, s->mag);
        }
    }
    if (k < 8 && t.rank > 0 && load_of(g, sub_shape(g, t), pick_dtype(g, flags), &e)) return e;
    if (k < 9 || !allow_literal)
        if (scalar_leaf(g, flags, &e)) return e;
    if (!allow_literal && t.rank > 0 && load_of(g, t, pick_dtype(g, flags), &e)) return e;
    bool want_int = (flags & NEED_INT) || (!(flags & NEED_FLOAT) && chance(g, 30));
    return gen_literal(g, want_int);
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

/* An exact float a as an i32 through i8 or u8: a * 64 (exact; made f32 so
 * that a literal converts as a run-time value does, not refused) converted,
 * saturating past the 8-bit range, or a * 4 to i32 then wrapped into it,
 * then widened again, in arithmetic or explicitly. Every side computes it
 * bit for bit. */
static Ex narrow_round_trip(Gen *g, Ex a)
{
    const char *to = rnd_types(g, 2) ? "ph.u8" : "ph.i8";
    char *n = rnd_types(g, 2) ? pfmt(g->p, "%s(ph.f32(%s * 64.0))", to, a.t) : pfmt(g->p, "%s(ph.i32(%s * 4.0))", to, a.t);
    feature(g, PF_I8_CONVERT);
    int w = rnd_types(g, 3);
    char *t = w == 0 ? pfmt(g->p, "ph.i32(%s)", n) : w == 1 ? pfmt(g->p, "(%s - 3)", n) : pfmt(g->p, "ph.where(%s > 0, %s, -%s)", n, n, n);
    return ex(t, DT_I32, a.sh, true, 258);
}

/* An exact value a through fp8 and into dt: rounded (and saturated) to
 * e4m3 or e5m2, possibly scaled first, through the other format at times;
 * every side rounds it bit for bit (half.h's routines, cg_fp8.c), so the
 * result is exact too, at most a's magnitude. Drawn from the types' stream. */
static Ex fp8_round_trip(Gen *g, Ex a, DType dt)
{
    static const char *const fmt[] = {"ph.f8e4m3", "ph.f8e5m2"};
    int f = rnd_types(g, 2), form = rnd_types(g, 3);
    char *q = form == 0 ? pfmt(g->p, "%s(%s)", fmt[f], a.t)
            : form == 1 ? pfmt(g->p, "(%s(%s * 64.0) * 0.015625)", fmt[f], a.t)   /* scaled: e4m3 saturates past 7 */
                        : pfmt(g->p, "%s(%s(%s))", fmt[1 - f], fmt[f], a.t);
    feature(g, PF_F8_CONVERT);
    return ex(pfmt(g->p, "%s(%s)", dtname(dt), q), dt, a.sh, true, a.mag);
}

static Ex convert(Gen *g, Shape t, int depth, unsigned flags)
{
    if (flags & NEED_INT) {   /* float -> i32 on exact values only */
        Ex a = gen_num(g, t, depth - 1, NEED_EXACT | NEED_FLOAT);
        if (a.mag * 4 > ICAP) return a.dt == DT_I32 ? a : leaf(g, t, flags, true);
        feature(g, PF_F2I);
        feature(g, PF_CONVERT);
        if (rnd_types(g, 100) < g->o.pct_types) return narrow_round_trip(g, a);
        if (g->o.pct_i64 && rnd_i64(g, 100) < g->o.pct_i64) return phgen_i64_round_trip(g, a);
        return ex(pfmt(g->p, "ph.i32(%s * 4.0)", a.t), DT_I32, a.sh, true, a.mag * 4);
    }
    Ex a = gen_num(g, t, depth - 1, flags & NEED_EXACT);
    static const DType to[] = {DT_F32, DT_F16, DT_BF16};
    DType dt = to[rnd(g, 3)];
    feature(g, PF_CONVERT);
    if (a.exact && rnd_types(g, 100) < g->o.pct_types) return fp8_round_trip(g, a, dt);
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

/* ---- the newer math built-ins, from their own stream (rnd_more) ----
 * Each is built on the operand a that math() drew, with literals and the
 * scalar s, so that the main stream draws what it drew before they existed.
 * tanh, erf and sigmoid are bounded and at most 1.13-Lipschitz; pow takes a
 * base of at least 0.5 with a small exponent, an integer exponent (any
 * base), or a clamped exponent of a literal base; fma's result stays under
 * the cap; the constants appear where the result is a or bit-identical on
 * every side (a NaN ignored by max, an infinity of an exact value's sign). */
static const char *const more_lits[] = {"0.5", "1.5", "2.0", "(-0.5)", "(-1.25)", "3.0", "0.75", "(-2.0)"};
static const double more_vals[] = {0.5, 1.5, 2.0, -0.5, -1.25, 3.0, 0.75, -2.0};

static Ex more_smooth(Gen *g, Ex a, DType dt, const char *arg)
{
    static const char *const fns[] = {"tanh", "erf", "sigmoid"};
    feature(g, PF_TANH_ERF_SIGMOID);
    return ex(pfmt(g->p, "ph.%s(%s)", fns[rnd_more(g, 3)], arg ? arg : a.t), dt, a.sh, false, 1);
}

static Ex more_pow(Gen *g, Ex a, DType dt)
{
    feature(g, PF_POW);
    int form = rnd_more(g, 3), k = rnd_more(g, 8);
    double e = more_vals[k];
    double base = e < 0 ? 0.5 : a.mag + 0.5;   /* the base is at least 0.5 */
    if (form == 0 && e * log2(base) < log2(FCAP))
        return ex(pfmt(g->p, "ph.pow(ph.abs(%s) + 0.5, %s)", a.t, more_lits[k]), dt, a.sh, false, pow(base, e));
    if (form == 1 && a.mag * a.mag * (a.mag < 1 ? 1 : a.mag) <= FCAP) {
        bool cube = rnd_more(g, 2);
        return ex(pfmt(g->p, "ph.pow(%s, %s)", a.t, cube ? "3.0" : "2.0"), dt, a.sh, false,
                  cube ? a.mag * a.mag * a.mag : a.mag * a.mag);
    }
    static const char *const bases[] = {"0.5", "1.5", "2.0", "0.75"};
    return ex(pfmt(g->p, "ph.pow(%s, ph.min(ph.max(%s, -4.0), 4.0))", bases[rnd_more(g, 4)], a.t), dt, a.sh, false, 16);
}

static Ex more_fma(Gen *g, Ex a, DType dt)
{
    feature(g, PF_FMA);
    int form = rnd_more(g, 3), k1 = rnd_more(g, 8), k2 = rnd_more(g, 8);
    if (form == 2 && a.sh.rank == 2 && a.sh.e[1] != E1 && is_float(a.dt) && !a.weak && a.mag * a.mag + 2 <= FCAP)
        return ex(pfmt(g->p, "ph.fma(%s, ph.rowmax(%s), s)", a.t, a.t), DT_F32, a.sh, false, a.mag * a.mag + 2);
    if (form == 1 && a.mag * a.mag + 3 <= FCAP)
        return ex(pfmt(g->p, "ph.fma(%s, %s, %s)", a.t, a.t, more_lits[k2]), dt, a.sh, false, a.mag * a.mag + 3);
    double mag = a.mag * fabs(more_vals[k1]) + fabs(more_vals[k2]);
    if (mag > FCAP) return more_smooth(g, a, dt, NULL);
    return ex(pfmt(g->p, "ph.fma(%s, %s, %s)", a.t, more_lits[k1], more_lits[k2]), dt, a.sh, false, mag);
}

static Ex more_special(Gen *g, Ex a, DType dt)
{
    int form = rnd_more(g, 4);
    if (a.weak) return more_smooth(g, a, dt, NULL);   /* max of two literals is a literal */
    feature(g, PF_INF_NAN);
    if (form == 3 && a.exact) {
        static const char *const fns[] = {"tanh", "erf", "sigmoid"};
        feature(g, PF_TANH_ERF_SIGMOID);
        return ex(pfmt(g->p, "ph.%s(ph.max(%s * ph.inf, -ph.inf))", fns[rnd_more(g, 3)], a.t), dt, a.sh, false, 1);
    }
    static const char *const forms[] = {"ph.max(%s, -ph.inf)", "ph.min(%s, ph.inf)", "ph.max(%s, ph.nan)", "ph.min(%s, ph.nan)"};
    Ex r = ex(pfmt(g->p, forms[form == 3 ? 3 : form], a.t), a.dt == DT_I32 ? DT_F32 : a.dt, a.sh, a.exact, a.mag);
    return r;
}

static Ex math_more(Gen *g, Ex a, DType dt)
{
    switch (rnd_more(g, 4)) {
    case 0: return more_smooth(g, a, dt, NULL);
    case 1: return more_pow(g, a, dt);
    case 2: return more_fma(g, a, dt);
    default: return more_special(g, a, dt);
    }
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
    int pick = rnd(g, 8);
    /* the division draws another operand from the main stream: it stays */
    if (pick != 7 && rnd_more(g, 100) < g->o.pct_math_more) return math_more(g, a, dt);
    switch (pick) {
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

/* ph.argmax or ph.argmin of an exact tile, so that rounding never moves
 * the winner (ties, from integers and max/abs/where, are common): an exact
 * i32 index below the reduced extent. */
static Ex arg_reduce(Gen *g, Shape t, Shape os, bool row, int depth, unsigned flags)
{
    Ex a = gen_num(g, os, depth - 1, NEED_EXACT);
    if (a.sh.rank < 2 && !load_of(g, os, pick_dtype(g, 0), &a)) return leaf(g, t, flags, true);
    int along = row ? a.sh.e[1] : a.sh.e[0];
    feature(g, PF_ARG_REDUCE);
    return ex(pfmt(g->p, "ph.%s(%s, %d)", chance(g, 50) ? "argmax" : "argmin", a.t, row ? 1 : 0), DT_I32,
              row ? shape2(a.sh.e[0], E1) : shape2(E1, a.sh.e[1]), true, g->maxv[along]);
}

/* ph.cumsum of a 2-D tile of t's shape along either axis: i32 sums exact
 * while they stay small; float sums scaled by 1/length, as sums are. */
static Ex cumsum(Gen *g, Shape t, int depth, unsigned flags)
{
    if ((flags & NEED_EXACT) && (flags & NEED_FLOAT)) return leaf(g, t, flags, true);
    unsigned sub = flags & NEED_EXACT ? flags | NEED_INT : flags;
    Ex a = gen_num(g, t, depth - 1, sub);
    if (a.sh.rank < 2 && !load_of(g, shape2(t.e[0], t.e[1]), pick_dtype(g, sub), &a)) return leaf(g, t, flags, true);
    int axis = rnd(g, 2), along = axis == 1 ? a.sh.e[1] : a.sh.e[0];
    char *s = pfmt(g->p, "ph.cumsum(%s, %d)", a.t, axis);
    if (a.dt == DT_I32) {
        double mag = a.mag * g->maxv[along];
        if (mag > ICAP) return a;
        feature(g, PF_CUMSUM);
        return ex(s, DT_I32, a.sh, a.exact, mag);
    }
    feature(g, PF_CUMSUM);
    return ex(along == E1 ? s : pfmt(g->p, "(%s / %s)", s, ext_meta[along]), a.dt, a.sh, false, a.mag);
}

static Ex reduce(Gen *g, Shape t, int depth, unsigned flags)
{
    bool row = chance(g, 50);
    int x = EM + rnd(g, 3);
    Shape os = row ? shape2(t.e[0], x) : shape2(x, t.e[1]);
    int form = rnd(g, 10);
    if (form == 0 && !(flags & NEED_FLOAT)) return arg_reduce(g, t, os, row, depth, flags);
    if (form == 1) return cumsum(g, t, depth, flags);
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

/* A load of exactly sh for a dot's operand, which has no other source:
 * when the tensors (outputs among them) reached the inputs' limit before
 * any input of this shape, a new input past it (the array holds one a
 * shape beyond both limits, so none is ever refused; the draws are
 * load_of's, so programs that never get here are unchanged). */
static void must_load(Gen *g, Shape sh, DType dt, Ex *a)
{
    g->must_load = true;
    bool ok = load_of(g, sh, dt, a);
    g->must_load = false;
    if (!ok) abort();   /* tens[] sized too small for the limits above */
}

/* A dot operand of exactly shape sh (rank 2) and dtype dt, magnitude <= 2. */
Ex dot_operand(Gen *g, Shape sh, DType dt)
{
    Ex a;
    DType src = dt;
    if (chance(g, 25)) src = dt == DT_F32 ? (chance(g, 50) ? DT_F16 : DT_BF16) : DT_F32;
    must_load(g, sh, src, &a);
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
char *dot_text(Gen *g, int P, int Q, int R, DType dt)
{
    int form = rnd(g, 4);
    if (dt != DT_F32) feature(g, dt == DT_F16 ? PF_DOT_TC_F16 : PF_DOT_TC_BF16);
    else feature(g, PF_DOT_FMA);
    if (form == 0 || form == 3) {
        Ex a = dot_operand(g, shape2(P, R), dt);
        if (form == 3) {
            Ex b = dot_operand(g, shape2(Q, R), dt);
            feature(g, PF_DOT_TRANSPOSE);
            return pfmt(g->p, "ph.dot(%s, ph.transpose(%s))", a.t, b.t);
        }
        Ex b = dot_operand(g, shape2(R, Q), dt);
        return pfmt(g->p, "ph.dot(%s, %s)", a.t, b.t);
    }
    if (form == 1) {
        Ex a = dot_operand(g, shape2(P, R), dt);
        Ex b = dot_operand(g, shape2(Q, R), dt);
        feature(g, PF_DOT_T);
        return pfmt(g->p, "ph.dot_t(%s, %s)", a.t, b.t);
    }
    Ex a = dot_operand(g, shape2(R, P), dt);
    Ex b = dot_operand(g, shape2(R, Q), dt);
    feature(g, PF_DOT_TRANSPOSE);
    return pfmt(g->p, "ph.dot(ph.transpose(%s), %s)", a.t, b.t);
}

DType dot_dtype(Gen *g)
{
    if (!g->p->tc) return chance(g, 85) ? DT_F32 : DT_F16;
    int r = rnd(g, 10);
    return r < 5 ? DT_F16 : r < 9 ? DT_BF16 : DT_F32;
}

/* An i8 dot operand of exactly shape sh: an input times 64 (exact) to i8,
 * saturating, or through i32 and wrapped. */
static char *i8_operand(Gen *g, Shape sh)
{
    Ex a;
    must_load(g, sh, DT_F32, &a);
    return chance(g, 50) ? pfmt(g->p, "ph.i8(%s * 64.0)", a.t) : pfmt(g->p, "ph.i8(ph.i32(%s * 64.0))", a.t);
}

/* ph.dot or ph.dot_t of two i8 tiles over extent R, as an f32 tile scaled
 * to the float dots' magnitude: its i32 sums are exact, and exact in f32
 * (below 2^24 for R up to 1024). Drawn wholly from the types' stream. */
static Ex int8_dot(Gen *g, Shape t, int R)
{
    uint64_t saved = g->rng;
    g->rng = g->rng_types;
    bool trans = chance(g, 40);
    char *a = i8_operand(g, shape2(t.e[0], R));
    char *b = trans ? i8_operand(g, shape2(t.e[1], R)) : i8_operand(g, shape2(R, t.e[1]));
    g->rng_types = g->rng;
    g->rng = saved;
    feature(g, PF_DOT_I8);
    if (trans) feature(g, PF_DOT_T);
    return ex(pfmt(g->p, "(ph.f32(ph.%s(%s, %s)) / (4096.0 * %s))", trans ? "dot_t" : "dot", a, b, ext_meta[R]), DT_F32, t, false, 4);
}

/* An fp8 dot operand of exactly shape sh: an input times 4 rounded to
 * e4m3 or e5m2 (fmt), exactly as every side rounds it. */
static char *f8_operand(Gen *g, Shape sh, const char *fmt)
{
    Ex a;
    must_load(g, sh, DT_F32, &a);
    return pfmt(g->p, "%s(%s * 4.0)", fmt, a.t);
}

/* ph.dot or ph.dot_t of two fp8 tiles (the formats drawn apart) over
 * extent R, scaled to the float dots' magnitude: products exact, sums in
 * f32 (the tensor cores' e4m3/e5m2 mma.sync with @ph.tensorcore where the
 * shape allows, the FMA path otherwise). Drawn wholly from the types' stream. */
static Ex fp8_dot(Gen *g, Shape t, int R)
{
    uint64_t saved = g->rng;
    g->rng = g->rng_types;
    bool trans = chance(g, 40);
    const char *fa = chance(g, 50) ? "ph.f8e4m3" : "ph.f8e5m2", *fb = chance(g, 50) ? "ph.f8e4m3" : "ph.f8e5m2";
    char *a = f8_operand(g, shape2(t.e[0], R), fa);
    char *b = trans ? f8_operand(g, shape2(t.e[1], R), fb) : f8_operand(g, shape2(R, t.e[1]), fb);
    g->rng_types = g->rng;
    g->rng = saved;
    feature(g, PF_DOT_F8);
    if (trans) feature(g, PF_DOT_T);
    return ex(pfmt(g->p, "(ph.%s(%s, %s) / (16.0 * %s))", trans ? "dot_t" : "dot", a, b, ext_meta[R]), DT_F32, t, false, 4);
}

static Ex dot(Gen *g, Shape t)
{
    int R = g->p->tc ? EK : EM + rnd(g, 3);
    char *s = dot_text(g, t.e[0], t.e[1], R, dot_dtype(g));
    if (rnd_types(g, 100) < g->o.pct_types) return rnd_types(g, 3) ? int8_dot(g, t, R) : fp8_dot(g, t, R);
    return ex(pfmt(g->p, "(%s / %s)", s, ext_meta[R]), DT_F32, t, false, 4);
}

/* A vector of t's extent e along one axis: sh itself when its non-1 dim
 * is e, else a load of exactly sh. */
static bool vector_of(Gen *g, Shape sh, int e, int depth, unsigned flags, Ex *out)
{
    *out = gen_num(g, sh, depth - 1, flags);
    bool ok = sh.rank == 1 ? out->sh.rank >= 1 && out->sh.e[1] == e
                           : out->sh.rank == 2 && (sh.e[0] == e ? out->sh.e[0] == e : out->sh.e[1] == e);
    return ok || load_of(g, sh, pick_dtype(g, flags), out);
}

/* ph.reshape between [e], [1, e] and [e, 1]: a row of t made a column, or
 * a column made a row (rank 1). */
static Ex reshaped(Gen *g, Shape t, int depth, unsigned flags)
{
    bool to_col = t.e[0] != E1 && (t.e[1] == E1 || chance(g, 50));
    int e = to_col ? t.e[0] : t.e[1];
    if (e == E1) return leaf(g, t, flags, true);
    Shape src = to_col ? (chance(g, 50) ? (Shape){1, {E1, e}} : shape2(E1, e)) : shape2(e, E1);
    Ex a;
    if (!vector_of(g, src, e, depth, flags, &a)) return leaf(g, t, flags, true);
    feature(g, PF_RESHAPE);
    if (to_col) return ex(pfmt(g->p, "ph.reshape(%s, [%s, 1])", a.t, ext_meta[e]), a.dt, shape2(e, E1), a.exact, a.mag);
    return ex(pfmt(g->p, "ph.reshape(%s, [%s])", a.t, ext_meta[e]), a.dt, (Shape){1, {E1, e}}, a.exact, a.mag);
}

static Ex transpose(Gen *g, Shape t, int depth, unsigned flags)
{
    Ex a;
    if (chance(g, 40)) return reshaped(g, t, depth, flags);
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

Ex gen_cond(Gen *g, Shape t, int depth, int fix)
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
    Ex b = chance(g, 50) ? gen_literal(g, a.dt == DT_I32) : gen_num(g, t, depth > 0 ? depth - 1 : 0, NEED_EXACT);
    if (a.literal && b.literal) a = leaf(g, t, NEED_EXACT, false);
    return ex(pfmt(g->p, "(%s %s %s)", a.t, cmps[rnd(g, 6)], b.t), DT_BOOL, bcast(a.sh, b.sh), true, 1);
}

static Ex gen_num_(Gen *g, Shape t, int depth, unsigned flags);
/* An expression whose shape fits t, meeting flags. */
Ex gen_num(Gen *g, Shape t, int depth, unsigned flags)
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
        if (k >= 94 && t.rank == 2) return transpose(g, t, depth, flags);
    }
    return leaf(g, t, flags, true);
}

