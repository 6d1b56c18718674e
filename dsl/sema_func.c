/* sema_func.c: helper functions, `@ph.func def f(a, b): ... return e`,
 * inlined where they are called.
 *
 * A call f(x, y) binds the helper's parameters to the argument values (a
 * tensor parameter passed by name binds as that tensor) and lowers the
 * helper's body at the call site, in a scope that sees its parameters and
 * the namespace only; its last statement may be `return VALUE`, the call's
 * value. The statement calling it runs its two passes (sema.h) as usual:
 * in the typing pass the body is checked as unreachable code is (types
 * only, nothing emitted, arguments standing in as fresh values of their
 * types), in the emitting pass it is lowered for real. The iota extents
 * of the calling statement are kept aside while the body's statements
 * resolve their own. */
#include "sema.h"

#include <stdlib.h>

const FuncDef *sema_helper(const Sema *s, const Expr *callee)
{
    if (!callee || callee->kind != EX_NAME) return NULL;
    for (int i = 0; i < s->k->nhelpers; i++)
        if (!strcmp(s->k->helpers[i]->name, callee->name)) return s->k->helpers[i];
    return NULL;
}

/* The statement a helper's value comes from: its last, `return VALUE`. */
static const Stmt *value_return(const FuncDef *fn)
{
    const Stmt *last = fn->nbody ? fn->body[fn->nbody - 1] : NULL;
    return last && last->kind == ST_RETURN && last->value ? last : NULL;
}

/* The argument for each parameter, by position or keyword; false after an error. */
static bool match_args(Sema *s, const Expr *e, const FuncDef *fn, const Expr **out)
{
    bool ok = true;
    int npos = 0;
    for (int i = 0; i < e->nitems; i++) {
        const Expr *a = e->items[i];
        int at = -1;
        if (a->kind != EX_KEYWORD) at = npos++;
        else
            for (int j = 0; j < fn->nparams; j++)
                if (!strcmp(fn->params[j].name, a->name)) at = j;
        if (at < 0 || at >= fn->nparams) {
            if (a->kind == EX_KEYWORD) sema_err(s, a->loc, "helper '%s' has no parameter '%s'", fn->name, a->name);
            else sema_err(s, a->loc, "helper '%s' takes %d argument%s, got %d", fn->name, fn->nparams,
                          fn->nparams == 1 ? "" : "s", e->nitems);
            return false;
        }
        if (out[at]) {
            sema_err(s, a->loc, "helper '%s': parameter '%s' is given twice", fn->name, fn->params[at].name);
            ok = false;
        }
        out[at] = a->kind == EX_KEYWORD ? a->lhs : a;
    }
    for (int j = 0; ok && j < fn->nparams; j++)
        if (!out[j]) {
            sema_err(s, e->loc, "helper '%s' needs its parameter '%s'", fn->name, fn->params[j].name);
            ok = false;
        }
    return ok;
}

/* An argument as the symbol of its parameter: a tensor by name, else a value. */
static bool bind_arg(Sema *s, const Expr *a, const char *name, Sym *out)
{
    Sym *t = a->kind == EX_NAME ? sema_lookup(s, a->name) : NULL;
    if (t && t->kind == SYM_TENSOR) {
        *out = (Sym){.name = name, .kind = SYM_TENSOR, .param = t->param};
        return true;
    }
    Val v = sema_expr(s, a);
    if (val_bad(v)) return false;
    for (int d = 0; d < v.rank; d++)
        if (sema_dim_now(s, v.dim[d]) < 0) {
            sema_err(s, a->loc, "the extent of this iota is not known at the call; write ph.iota(axis, n)");
            return false;
        }
    v.dim[0] = v.rank ? sema_dim_now(s, v.dim[0]) : v.dim[0];
    v.dim[1] = v.rank == 2 ? sema_dim_now(s, v.dim[1]) : v.dim[1];
    if (!s->emit && !v.weak) v.v = ir_value_new(s->f, val_irtype(v), name);   /* a stand-in of its type */
    *out = (Sym){.name = name, .kind = SYM_LET, .val = v};
    return true;
}

typedef struct {
    int nsym, sym_parent[MAX_IOTA], sym_value[MAX_IOTA], sym_axis[MAX_IOTA];
    const Expr *sym_expr[MAX_IOTA];
    int floor, nsyms;
    bool emit, dead;
} Saved;

static void save(Sema *s, Saved *v)
{
    v->nsym = s->nsym;
    memcpy(v->sym_parent, s->sym_parent, sizeof v->sym_parent);
    memcpy(v->sym_value, s->sym_value, sizeof v->sym_value);
    memcpy(v->sym_axis, s->sym_axis, sizeof v->sym_axis);
    memcpy(v->sym_expr, s->sym_expr, sizeof v->sym_expr);
    v->floor = s->scope_floor;
    v->nsyms = s->syms.len;
    v->emit = s->emit;
    v->dead = s->dead;
}

static void restore(Sema *s, const Saved *v)
{
    s->nsym = v->nsym;
    memcpy(s->sym_parent, v->sym_parent, sizeof v->sym_parent);
    memcpy(s->sym_value, v->sym_value, sizeof v->sym_value);
    memcpy(s->sym_axis, v->sym_axis, sizeof v->sym_axis);
    memcpy(s->sym_expr, v->sym_expr, sizeof v->sym_expr);
    s->scope_floor = v->floor;
    s->syms.len = v->nsyms;
    s->emit = v->emit;
    s->dead = v->dead;
}

/* `return VALUE`: typed, then (where code is emitted) lowered. */
static Val return_value(Sema *s, const Stmt *ret)
{
    s->nsym = 0;
    int bad0 = s->bad;
    s->emit = false;
    Val r = sema_expr(s, ret->value);
    if (s->bad == bad0) sema_resolve_iotas(s);
    if (s->bad != bad0) return val_error();
    if (!s->dead) {
        s->emit = true;
        r = sema_expr(s, ret->value);
    }
    for (int d = 0; d < r.rank; d++) r.dim[d] = sema_dim_now(s, r.dim[d]);
    return r;
}

Val sema_inline_call(Sema *s, const Expr *e, const FuncDef *fn, bool want_value)
{
    for (int i = 0; i < s->ninline; i++)
        if (s->inlining[i] == fn) {
            sema_err(s, e->loc, "helper '%s' calls itself; helpers are inlined, so they cannot recurse", fn->name);
            return val_error();
        }
    if (s->ninline == MAX_INLINE) {
        sema_err(s, e->loc, "helpers nested more than %d deep", MAX_INLINE);
        return val_error();
    }
    const Stmt *ret = value_return(fn);
    if (want_value && !ret) {
        sema_err(s, e->loc, "helper '%s' returns no value; its last statement would be 'return VALUE'", fn->name);
        return val_error();
    }
    int64_t copies = s->unrolled + 1;
    for (int i = 0; i < fn->nbody; i++) copies += sema_count_stmts(fn->body[i]);
    if (copies > MAX_UNROLLED) {
        sema_err(s, e->loc, "inlining helper '%s' here takes the statements copied into this kernel past %d", fn->name,
                 MAX_UNROLLED);
        return val_error();
    }
    s->unrolled = copies;
    const Expr **args = xcalloc((size_t)fn->nparams + 1, sizeof *args);
    Sym *bound = xcalloc((size_t)fn->nparams + 1, sizeof *bound);
    bool ok = match_args(s, e, fn, args);
    for (int j = 0; ok && j < fn->nparams; j++) ok = bind_arg(s, args[j], fn->params[j].name, &bound[j]);
    Val r = val_error();
    if (ok) {
        Saved keep;
        save(s, &keep);
        s->scope_floor = s->syms.len;
        s->dead = !s->emit || s->dead;
        for (int j = 0; j < fn->nparams; j++) vec_push(&s->syms, bound[j]);
        s->inlining[s->ninline++] = fn;
        sema_lower_block(s, fn->body, ret ? fn->nbody - 1 : fn->nbody);
        r = ret ? return_value(s, ret) : (Val){.dt = DT_VOID};
        s->ninline--;
        restore(s, &keep);
        if (!want_value) r = (Val){.dt = DT_VOID};
        else if (val_bad(r)) s->bad++;
    }
    free(args);
    free(bound);
    return r;
}

/* ---- the helpers of a module ---- */

/* A `return` anywhere but as the last statement, with a value. */
static bool check_returns(Diag *d, Stmt *const *body, int n, bool top)
{
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const Stmt *st = body[i];
        if (st->kind == ST_RETURN && !(top && i == n - 1 && st->value)) {
            diag_error(d, st->loc, "a helper returns only at its end: its last statement may be 'return VALUE'");
            ok = false;
        }
        ok = check_returns(d, st->body, st->nbody, false) && ok;
        ok = check_returns(d, st->orelse, st->norelse, false) && ok;
    }
    return ok;
}

bool sema_check_helper(Diag *d, const char *alias, const FuncDef *fn)
{
    bool ok = true;
    for (int i = 1; i < fn->ndecorators; i++) {
        diag_error(d, fn->decorators[i]->loc, "a helper takes no decorator but @%s.func", alias);
        ok = false;
    }
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].annot || fn->params[i].dflt) {
            const Expr *x = fn->params[i].annot ? fn->params[i].annot : fn->params[i].dflt;
            diag_error(d, x->loc, "a helper's parameter is a bare name: '%s' takes the type of its argument, and no default",
                       fn->params[i].name);
            ok = false;
        }
    if (fn->returns) {
        diag_error(d, fn->returns->loc, "a helper's result takes the type of its return value: write no '->'");
        ok = false;
    }
    return check_returns(d, fn->body, fn->nbody, true) && ok;
}
