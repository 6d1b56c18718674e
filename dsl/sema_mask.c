/* sema_mask.c: ph.load and ph.store, the window access with a mask.
 *
 * ph.load(X[...], mask=m, other=v) reads the window and keeps its element
 * where m is true, v elsewhere: a load and a select, so the edge rule
 * (outside the tensor reads 0) holds under a true mask, and masks.c
 * decides a mask made of iotas and scalars once per tile when it can.
 * ph.store(X[...], v, mask=m) is a store that writes only where m is true
 * (the IR's masked store): a select of the old contents would write them
 * back, racing with the block that owns them. m is a bool scalar or tile
 * that broadcasts to the window's shape; v is converted to X's dtype. */
#include "sema.h"

enum { ARG_WINDOW, ARG_SECOND, ARG_THIRD, ARG_COUNT };

/* The arguments of a ph.load or ph.store call by position, keywords
 * placed where their names say; false after an error. names[i] is
 * argument i's keyword (NULL: positional only). */
static bool place_args(Sema *s, const Expr *e, const char *fn, const char *const names[ARG_COUNT], int required,
                       const Expr *out[ARG_COUNT])
{
    bool ok = true, keywords = false;
    int npos = 0;
    for (int i = 0; i < e->nitems; i++) {
        const Expr *a = e->items[i];
        if (a->kind != EX_KEYWORD) {
            if (keywords || npos >= ARG_COUNT) {
                sema_err(s, a->loc, keywords ? "%s.%s: a positional argument after a keyword argument"
                                             : "%s.%s takes at most 3 arguments", s->alias, fn);
                return false;
            }
            out[npos++] = a;
            continue;
        }
        keywords = true;
        int at = -1;
        for (int j = 0; j < ARG_COUNT; j++)
            if (names[j] && !strcmp(names[j], a->name)) at = j;
        if (at < 0) {
            sema_err(s, a->loc, "%s.%s takes no keyword argument %s=; its keywords are %s", s->alias, fn, a->name,
                     names[ARG_SECOND] ? "mask= and other=" : "mask=");
            ok = false;
        } else if (out[at]) {
            sema_err(s, a->loc, "%s.%s: argument %s= given twice", s->alias, fn, a->name);
            ok = false;
        } else out[at] = a->lhs;
    }
    for (int j = 0; ok && j < required; j++)
        if (!out[j]) {
            sema_err(s, e->loc, "%s.%s needs %s", s->alias, fn, j == ARG_WINDOW ? "a window X[...] as its first argument"
                     : "a value to store as its second argument");
            ok = false;
        }
    return ok;
}

/* The window X[...] of a tensor parameter; false after an error. */
static bool mask_window(Sema *s, const Expr *t, const char *fn, Window *w)
{
    const Expr *x = t->kind == EX_INDEX ? t->lhs : NULL;
    Sym *y = x && x->kind == EX_NAME ? sema_lookup(s, x->name) : NULL;
    if (x && x->kind == EX_NAME && !y) {
        sema_err(s, x->loc, "undeclared name '%s'", x->name);
        return false;
    }
    if (!y || y->kind != SYM_TENSOR) {
        sema_err(s, t->loc, "%s.%s takes a window of a tensor parameter: expected X[r:+n, c:+m] or X[i:+n] as its first argument",
                 s->alias, fn);
        return false;
    }
    return sema_window(s, t, w);
}

/* The mask as a bool tile of the window's shape; a [1, n] or [n, 1] mask
 * of a rank-1 window is taken as [n], as a stored value is. */
static Val window_mask(Sema *s, const Expr *m, const Window *w, const char *what)
{
    Val x = sema_expr(s, m);
    if (val_bad(x)) return x;
    if (x.dt != DT_BOOL) {
        char t[64];
        val_str(s, x, t, sizeof t);
        sema_err(s, m->loc, "expected a bool scalar or tile for %s, got %s; write a comparison such as ph.iota(1) < n", what, t);
        return val_error();
    }
    int n, dim[2] = {w->ext[0], w->rank == 2 ? w->ext[1] : 1};
    if (w->rank == 1 && x.rank == 2 && sema_vector_len(s, x, &n)) {
        int known = sema_dim_now(s, n);
        if (known < 0 || known == w->ext[0]) {
            int d1[2] = {n, 1};
            x = sema_reshape(s, x, 1, d1, m->loc);
        }
    }
    return sema_coerce_to(s, x, DT_BOOL, w->rank, dim, m->loc, what);
}

static const char *const load_names[ARG_COUNT] = {NULL, "mask", "other"};
static const char *const store_names[ARG_COUNT] = {NULL, NULL, "mask"};

Val sema_masked_load(Sema *s, const Expr *e)
{
    const Expr *a[ARG_COUNT] = {0};
    if (!place_args(s, e, "load", load_names, 1, a)) return val_error();
    Window w;
    if (!mask_window(s, a[ARG_WINDOW], "load", &w)) return val_error();
    const Expr *me = a[ARG_SECOND], *oe = a[ARG_THIRD];
    if (oe && !me) {
        sema_err(s, oe->loc, "%s.load: other= is the value where the mask is false; it needs mask=", s->alias);
        return val_error();
    }
    char what[96], owhat[96];
    snprintf(what, sizeof what, "the mask of '%s'", s->k->params[w.param].name);
    snprintf(owhat, sizeof owhat, "the other value of '%s'", s->k->params[w.param].name);
    int dim[2] = {w.ext[0], w.rank == 2 ? w.ext[1] : 1};
    Val m = me ? window_mask(s, me, &w, what) : val_weak_int(0);
    Val o = oe ? sema_expr(s, oe) : val_weak_int(0);
    if (oe && !val_bad(o) && o.rank == 2 && w.rank == 1) o = sema_window_value(s, o, &w, oe->loc, owhat);
    o = sema_coerce_to(s, o, w.dt, w.rank, dim, oe ? oe->loc : e->loc, owhat);
    if (val_bad(m) || val_bad(o)) return val_error();
    Val r = sema_load(s, &w, e->loc);
    if (!me || !s->emit) return r;
    ValueId args[3] = {m.v, r.v, o.v};
    r.v = sema_emit1(s, OP_SELECT, 3, args, val_irtype(r), e->loc, NULL);
    return r;
}

void sema_masked_store(Sema *s, const Expr *e)
{
    const Expr *a[ARG_COUNT] = {0};
    if (!place_args(s, e, "store", store_names, 2, a)) return;
    Window w;
    if (!mask_window(s, a[ARG_WINDOW], "store", &w)) return;
    char what[96], mwhat[96];
    snprintf(what, sizeof what, "the window of '%s'", s->k->params[w.param].name);
    snprintf(mwhat, sizeof mwhat, "the mask of '%s'", s->k->params[w.param].name);
    int dim[2] = {w.ext[0], w.rank == 2 ? w.ext[1] : 1};
    const Expr *ve = a[ARG_SECOND], *me = a[ARG_THIRD];
    Val x = sema_window_value(s, sema_expr(s, ve), &w, ve->loc, what);
    x = sema_coerce_to(s, x, w.dt, w.rank, dim, ve->loc, what);
    Val m = me ? window_mask(s, me, &w, mwhat) : val_weak_int(0);
    if (val_bad(x) || val_bad(m) || !s->emit) return;
    ValueId args[IR_MAX_RANK + 2];
    int n = sema_window_starts(s, &w, e->loc, args);
    if (me) args[n++] = m.v;
    args[n++] = x.v;
    IrOp *op = ir_emit(s->f, s->blk, OP_STORE, n, args, 0, NULL);
    op->loc = e->loc;
    op->param = w.param;
    op->window_axes = w.axes;
    op->flags = me ? STORE_MASKED : 0;
}
