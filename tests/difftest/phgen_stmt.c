/* phgen_stmt.c: the generator's statements: lets and vars, assignments,
 * for loops (with loads moving with the counter), K loops of dots, the
 * attention chain, if/elif/else and early returns, and the stores of the
 * outputs; each a node of the statement tree with the name it declares
 * and those it uses. */
#include "phgen_gen.h"

#include <stdlib.h>

/* ---- statements ---- */

static Node *open_stmt(Gen *g)
{
    Node *n = node_new(g->p, "", false);
    g->cur = n;
    return n;
}

/* A statement that uses what statement like uses. */
static Node *open_stmt_like(Gen *g, const Node *like)
{
    Node *n = open_stmt(g);
    memcpy(n->uses, like->uses, sizeof n->uses);
    n->uses_all = like->uses_all;
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
    gen_use(g, v->name);
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
    if (!load_of(g, sh, pick_dtype(g, NEED_FLOAT), &a)) a = gen_literal(g, false);
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
    gen_use(g, w);
    Ex a = loop_load(g, sub_shape(g, sh), iv), b = loop_load(g, sub_shape(g, sh), NULL);
    feature(g, PF_INVARIANT_LOAD);
    char *term = a.mag * b.mag <= 4 ? pfmt(g->p, "((%s * %s) * 0.25)", a.t, b.t)
                                    : pfmt(g->p, "ph.exp(-ph.abs(%s * %s))", a.t, b.t);
    close_stmt(g, loop, n, pfmt(g->p, "%s += %s", w, term), NULL);
}

/* The loop n as a while over the counter IVw, a var no other statement
 * assigns (it is not a symbol), from lo while below hi; its first
 * statement IV: ph.let = IVw gives the body the for's counter. */
static void close_while(Gen *g, Node *parent, Node *n, const char *iv, int lo, const char *hi)
{
    Node *decl = node_new(g->p, pfmt(g->p, "%sw: ph.var[ph.i32] = %d", iv, lo), false);
    snprintf(decl->def, sizeof decl->def, "%sw", iv);
    node_add(g->p, parent, decl);
    gen_use(g, pfmt(g->p, "%sw", iv));
    close_stmt(g, parent, n, pfmt(g->p, "while %sw < %s:", iv, hi), NULL);
    Node *let = node_new(g->p, pfmt(g->p, "%s: ph.let = %sw", iv, iv), false);
    snprintf(let->def, sizeof let->def, "%s", iv);
    snprintf(let->uses, sizeof let->uses, " %sw", iv);
    node_add(g->p, n, let);
    feature(g, PF_WHILE);
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
    bool literal = chance(g, 50);
    if (literal) {
        hi = lo + 2 + rnd(g, 8);
        hitext = pfmt(g->p, "%d", hi);
    } else {
        hi = g->n_value + (chance(g, 50) ? 2 : 0);
        hitext = hi == g->n_value ? pfmt(g->p, "n") : pfmt(g->p, "n + 2");
    }
    if (hi > lo && (hi - lo) % step) feature(g, PF_STEP_NOT_DIVIDING);
    if (index_chance(g)) {   /* a bound read from an i32 input: lo + 1 to lo + 7 */
        index_stream(g);
        Ex e;
        if (gen_element(g, NEED_INT, &e)) {
            hitext = pfmt(g->p, "%d + %s %% 7", lo + 1, e.t);
            literal = false;
        }
        index_stream(g);
    }
    char *iv = fresh(g, "i");
    /* literal bounds, sometimes unrolled: the copy's compile-time counter becomes an i32 let */
    bool unrolled = literal && rnd_flow(g, 100) < g->o.pct_flow;
    if (unrolled) {
        close_stmt(g, parent, n, pfmt(g->p, "for %su in ph.static_range(%d, %s, %d):", iv, lo, hitext, step), iv);
        Node *let = node_new(g->p, pfmt(g->p, "%s: ph.let = %su", iv, iv), false);
        snprintf(let->def, sizeof let->def, "%s", iv);
        node_add(g->p, n, let);
        feature(g, PF_STATIC_RANGE);
    } else if (rnd_while(g, 100) < g->o.pct_while) {
        close_while(g, parent, n, iv, lo, hitext);
    } else {
        close_stmt(g, parent, n, pfmt(g->p, "for %s in range(%d, %s, %d):", iv, lo, hitext, step), iv);
    }
    n->block = true;
    push_loop(g, iv);
    if (w) stream_update(g, n, w, wsh, iv);
    gen_body(g, n, depth + 1, w ? rnd(g, 3) : 1 + rnd(g, 3));
    g->nloops--;
    if (!strncmp(n->head, "while ", 6)) {   /* the counter's step, last: never dropped while the loop stays */
        Node *inc = node_new(g->p, pfmt(g->p, "%sw += %d", iv, step), false);
        snprintf(inc->def, sizeof inc->def, "%sw", iv);
        node_add(g->p, n, inc);
    }
    if (w) sym_push(g, w, DT_F32, wsh, false, true, FCAP);   /* after the loop: its own update stays the only one inside */
}

/* "r0 - 3" and the like: base moved by d. */
static char *moved(Gen *g, const char *base, int d)
{
    return d ? pfmt(g->p, "%s %c %d", base, d < 0 ? '-' : '+', abs(d)) : pfmt(g->p, "%s", base);
}

/* Output name's [BM, BN] window moved from the block's by a few rows and
 * columns (the atomic adds' stream): the first block's starts before the
 * tensor, the last one's ends past it, and columns start on a 16-byte unit
 * of the row or off one. Now and then the rows move by M: every block's
 * window starts past the last row (adds of nothing, a box the copy engine
 * must clip whole), or before the first, the last block's reaching in. */
static char *moved_window(Gen *g, const char *name)
{
    static const int cols[] = {0, 0, -4, 4, -3, 5, 8, -8};
    int dr = rnd_atomic(g, 13) - 5, dc = cols[rnd_atomic(g, 8)];
    const char *rows = dr == 6 ? "r0 + M" : dr == 7 ? "r0 - M" : moved(g, "r0", dr);
    return pfmt(g->p, "%s[%s:+BM, %s:+BN]", name, rows, moved(g, "c0", dc));
}

/* Whether to make this an atomic add (pct_atomic, from its own stream;
 * never, drawing nothing, with pct_atomic 0). */
static bool atomic_chance(Gen *g) { return g->o.pct_atomic && rnd_atomic(g, 100) < g->o.pct_atomic; }

/* A new f32 output [M, N] that only atomic adds write. */
static Tensor *added_output(Gen *g)
{
    PhgenProgram *p = g->p;
    if (p->ntens >= 28) return NULL;
    Tensor *t = &p->tens[p->ntens];
    snprintf(t->name, sizeof t->name, "Y%d", p->ntens++);
    t->dt = DT_F32;
    t->rank = 2;
    t->e[0] = EM;
    t->e[1] = EN;
    t->output = true;
    return t;
}

/* Swaps rnd's stream with the atomic adds' (as index_stream does). */
static void atomic_stream(Gen *g)
{
    uint64_t t = g->rng;
    g->rng = g->rng_atomic;
    g->rng_atomic = t;
}

void gen_added_dots(Gen *g, Node *parent)
{
    PhgenProgram *p = g->p;
    if (!p->tc || !atomic_chance(g)) return;
    atomic_stream(g);
    DType dt = chance(g, 50) ? DT_F16 : DT_BF16;
    Tensor *a = tensor_for(g, 2, EM, EK, dt), *b = a ? tensor_for(g, 2, EK, EN, dt) : NULL;
    atomic_stream(g);
    /* (with ten inputs tensor_for may give one of another dtype) */
    Tensor *y = a && b && a->dt == dt && b->dt == dt ? added_output(g) : NULL;
    if (!y) return;
    char *kv = fresh(g, "k");
    Node *loop = open_stmt(g);
    close_stmt(g, parent, loop, pfmt(p, "for %s in range(0, K, BK):", kv), kv);
    loop->block = true;
    Node *add = open_stmt(g);
    gen_use(g, "r0"), gen_use(g, "c0"), gen_use(g, kv);
    close_stmt(g, loop, add, pfmt(p, "ph.atomic_add(%s, ph.dot(%s[r0:+BM, %s:+BK], %s[%s:+BK, c0:+BN]))", moved_window(g, y->name), a->name, kv, b->name, kv), NULL);
}

/* acc += ph.dot(...) over K in steps of BK, then the sum scaled by 1/K;
 * sometimes (pct_atomic) each step's dot is also added into an output of
 * its own, an add a warp-specialized kernel's producer may make. */
static void gen_kloop(Gen *g, Node *parent)
{
    char *acc = fresh(g, "acc"), *kv = fresh(g, "k");
    Node *decl = open_stmt(g);
    close_stmt(g, parent, decl, pfmt(g->p, "%s: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0", acc), acc);
    Node *loop = open_stmt(g);
    close_stmt(g, parent, loop, pfmt(g->p, "for %s in range(0, K, BK):", kv), kv);
    loop->block = true;
    Node *upd = open_stmt(g);
    gen_use(g, acc);
    gen_use(g, kv);
    g->kstart = kv;
    char *d = dot_text(g, EM, EN, EK, dot_dtype(g));
    g->kstart = "0";
    close_stmt(g, loop, upd, pfmt(g->p, "%s += %s", acc, d), NULL);
    /* about twice pct_atomic's chance (two draws): few K loops are warp-specialized */
    Tensor *added = g->p->tc && (atomic_chance(g) || atomic_chance(g)) ? added_output(g) : NULL;
    if (added) {
        Node *add = open_stmt_like(g, upd);
        close_stmt(g, loop, add, pfmt(g->p, "ph.atomic_add(%s, %s)", moved_window(g, added->name), d), NULL);
    }
    Node *let = open_stmt(g);
    gen_use(g, acc);
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
        close_stmt(g, parent, n, pfmt(p, "%s: ph.let = %s", q, dot_operand(g, shape2(EM, EN), qdt).t), q);
    }
    Node *loop = open_stmt(g);
    close_stmt(g, parent, loop, pfmt(p, "for %s in range(0, K, BK):", kv), kv);
    loop->block = true;
    g->kstart = kv;
    char *sname = fresh(g, "s");
    n = open_stmt(g);
    gen_use(g, kv);
    if (q) gen_use(g, q);
    char *qt = q ? q : dot_operand(g, shape2(EM, EN), qdt).t;
    char *kt = dot_operand(g, shape2(EK, EN), qdt).t;
    close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.dot_t(%s, %s) / BN", sname, qt, kt), sname);
    if (masked) {   /* exact conditions: indices only; masked scores are -1e30, exp gives 0 */
        char *s2 = fresh(g, "s");
        n = open_stmt(g);
        gen_use(g, sname);
        gen_use(g, kv);
        const char *cond = chance(g, 50) ? pfmt(p, "(%s + ph.iota(1, BK)) <= (r0 + ph.iota(0, BM))", kv)
                                         : pfmt(p, "(%s + ph.iota(1)) < K", kv);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.where(%s, %s, -1.0e30)", s2, cond, sname), s2);
        sname = s2;
    }
    char *v = dot_operand(g, shape2(EK, EN), vdt).t;
    if (fused) {
        n = open_stmt(g);
        gen_use(g, acc), gen_use(g, m), gen_use(g, l), gen_use(g, sname), gen_use(g, kv);
        close_stmt(g, loop, n, pfmt(p, "ph.online_softmax(%s, %s, %s, %s, %s)", acc, m, l, sname, v), NULL);
        feature(g, PF_ONLINE_SOFTMAX);
    } else {
        char *mn = fresh(g, "mn"), *a = fresh(g, "a"), *pp = fresh(g, "p");
        n = open_stmt(g);
        gen_use(g, m), gen_use(g, sname);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.max(%s, ph.rowmax(%s))", mn, m, sname), mn);
        n = open_stmt(g);
        gen_use(g, m), gen_use(g, mn);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.exp(%s - %s)", a, m, mn), a);
        n = open_stmt(g);
        gen_use(g, sname), gen_use(g, mn);
        close_stmt(g, loop, n, pfmt(p, "%s: ph.let = ph.exp(%s - %s)", pp, sname, mn), pp);
        n = open_stmt(g);
        gen_use(g, l), gen_use(g, a), gen_use(g, pp);
        close_stmt(g, loop, n, pfmt(p, "%s = %s * %s + ph.rowsum(%s)", l, l, a, pp), NULL);
        n = open_stmt(g);
        gen_use(g, acc), gen_use(g, a), gen_use(g, pp), gen_use(g, kv);
        close_stmt(g, loop, n, pfmt(p, "%s = %s * %s + ph.dot(%s(%s), %s)", acc, acc, a, dtname(vdt), pp, v), NULL);
        n = open_stmt(g);
        gen_use(g, m), gen_use(g, mn);
        close_stmt(g, loop, n, pfmt(p, "%s = %s", m, mn), NULL);
        if (p->tc) feature(g, PF_ATTENTION_TC);
    }
    g->kstart = "0";
    n = open_stmt(g);
    gen_use(g, acc), gen_use(g, l);
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

/* ph.device_assert of a condition that always holds (x - x == 0 of an i32
 * scalar or tile, exact and wrapping; an iota below its extent), so the
 * program's results are what they were; never a print. */
static void gen_assert(Gen *g, Node *parent)
{
    int ints[256], n = 0;
    for (int i = 0; i < g->nsyms; i++)
        if (g->syms[i].dt == DT_I32) ints[n++] = i;
    Node *a = open_stmt(g);
    char *head;
    if (n && rnd_assert(g, 3)) {
        const char *x = g->syms[ints[rnd_assert(g, n)]].name;
        gen_use(g, x);
        head = pfmt(g->p, "ph.device_assert(%s - %s == 0, \"%s - %s\")", x, x, x, x);
    } else {
        bool rows = rnd_assert(g, 2);
        head = pfmt(g->p, "ph.device_assert(ph.iota(%d, %s) < %s, \"iota\")", rows ? 0 : 1, rows ? "BM" : "BN", rows ? "BM" : "BN");
    }
    close_stmt(g, parent, a, head, NULL);
    feature(g, PF_DEVICE_ASSERT);
}

void gen_stmt(Gen *g, Node *parent, int depth)
{
    if (g->o.pct_assert && rnd_assert(g, 100) < g->o.pct_assert) gen_assert(g, parent);
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
/* The text stored into output t for value v: an i64 output's past 2^32. */
static const char *stored(Gen *g, const Tensor *t, const char *v) { return t->dt == DT_I64 ? phgen_i64_value(g, v) : v; }

void gen_store(Gen *g, Node *parent)
{
    PhgenProgram *p = g->p;
    if (p->ntens >= 28) return;
    Tensor *t = &p->tens[p->ntens];
    int r = rnd(g, 20);
    t->dt = r < 9 ? DT_F32 : r < 13 ? DT_F16 : r < 17 ? DT_BF16 : DT_I32;
    if (t->dt == DT_I32 && g->o.pct_i64 && phgen_i64_output(g)) t->dt = DT_I64;
    snprintf(t->name, sizeof t->name, "Y%d", p->ntens++);
    t->rank = 2;
    t->e[0] = EM;
    t->e[1] = EN;
    t->output = true;
    feature(g, t->dt == DT_F16 ? PF_F16 : t->dt == DT_BF16 ? PF_BF16 : t->dt == DT_I32 ? PF_I32_TENSOR : t->dt == DT_I64 ? PF_I64_TENSOR : PF_F32);
    unsigned flags = t->dt == DT_I32 || t->dt == DT_I64 ? NEED_INT : 0;
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
        gen_use(g, iv);
        Ex e = gen_num(g, shape2(E1, EN), depth, flags);
        close_stmt(g, loop, n, store_text(g, pfmt(p, "%s[r0 + %s, c0:+BN]", t->name, iv), shape2(E1, EN), stored(g, t, e.t)), NULL);
        g->nloops--;
        feature(g, PF_STORE_LOOP);
        return;
    }
    if (kind == 9) {   /* a rank-1 output: a [BM, 1] or [1, BN] tile, from the first block of the row or column */
        bool rows = chance(g, 50);
        t->rank = 1;
        t->e[0] = rows ? EM : EN;
        t->e[1] = E1;
        Node *cond = open_stmt(g);
        close_stmt(g, parent, cond, pfmt(p, "if ph.ctx.block.%c == 0:", rows ? 'y' : 'x'), NULL);
        cond->block = true;
        Node *n = open_stmt(g);
        Ex e = gen_num(g, rows ? shape2(EM, E1) : shape2(E1, EN), depth, flags);
        close_stmt(g, cond, n, store_text(g, pfmt(p, "%s[%s]", t->name, rows ? "r0:+BM" : "c0:+BN"), (Shape){1, {E1, rows ? EM : EN}}, stored(g, t, e.t)), NULL);
        feature(g, PF_RANK1_STORE);
        return;
    }
    Node *n = open_stmt(g);
    if (kind < 6) {
        Ex e = gen_num(g, shape2(EM, E1), depth, flags);
        close_stmt(g, parent, n, store_text(g, pfmt(p, "%s[r0:+BM, ph.ctx.block.y]", t->name), shape2(EM, E1), stored(g, t, e.t)), NULL);
    } else if (kind < 9) {
        Ex e = gen_num(g, shape2(E1, EN), depth, flags);
        close_stmt(g, parent, n, store_text(g, pfmt(p, "%s[ph.ctx.block.x, c0:+BN]", t->name), shape2(E1, EN), stored(g, t, e.t)), NULL);
    } else {
        Ex e = gen_num(g, shape2(EM, EN), depth, flags);
        const char *rows = "r0:+BM", *cols = "c0:+BN";
        bool scatter = false;
        if (index_chance(g)) {   /* a scatter: the block's rows (or columns) rotated, each written once */
            index_stream(g);
            if (chance(g, 50)) rows = pfmt(p, "r0 + (ph.iota(0, BM) + %d) %% BM", 1 + rnd(g, 7));
            else cols = pfmt(p, "c0 + (ph.iota(1, BN) + %d) %% BN", 1 + rnd(g, 7));
            index_stream(g);
            feature(g, PF_SCATTER);
            scatter = true;
        }
        /* a scatter takes no mask (ph.store's mask= is a window's) */
        if (scatter) close_stmt(g, parent, n, pfmt(p, "%s[%s, %s] = %s", t->name, rows, cols, stored(g, t, e.t)), NULL);
        else if ((t->dt == DT_F32 || t->dt == DT_I32) && atomic_chance(g)) {
            /* added, not stored; sometimes twice, so the blocks' windows overlap */
            close_stmt(g, parent, n, pfmt(p, "ph.atomic_add(%s, %s)", moved_window(g, t->name), e.t), NULL);
            if (rnd_atomic(g, 100) < 40) {
                Node *again = open_stmt_like(g, n);
                close_stmt(g, parent, again, pfmt(p, "ph.atomic_add(%s, %s)", moved_window(g, t->name), e.t), NULL);
            }
        }
        else close_stmt(g, parent, n, store_text(g, pfmt(p, "%s[r0:+BM, c0:+BN]", t->name), shape2(EM, EN), stored(g, t, e.t)), NULL);
    }
}

