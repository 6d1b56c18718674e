/* sema_stmt.c: statements, in the two passes of sema.h: lets and vars
 * (scoping, declared types), assignments and stores, expression
 * statements, and for, while and if, through which vars become SSA values
 * threaded as OP_FOR's and OP_WHILE's carried values and OP_IF's results. */
#include "sema.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef VEC(int) IntVec;

/* ---- statements ---- */
static const char *sym_what(SymKind k)
{
    switch (k) {
    case SYM_SCALAR: case SYM_TENSOR: return "a parameter";
    case SYM_META: return "a meta-parameter";
    case SYM_DIM: return "a dimension name";
    case SYM_ALIAS: return "the namespace alias";
    case SYM_LOOP: return "a loop variable";
    default: return "a local";
    }
}

/* A name may be declared when nothing of that name is live. */
static bool can_declare(Sema *s, const char *name, Loc loc)
{
    Sym *y = sema_lookup(s, name);
    if (!y) return true;
    if (y->kind == SYM_LET || y->kind == SYM_VAR)
        sema_err(s, loc, "'%s' is already declared in this scope or an enclosing one", name);
    else sema_err(s, loc, "'%s' shadows %s", name, sym_what(y->kind));
    return false;
}

void sema_declare(Sema *s, const char *name, SymKind kind, Val v)
{
    v.weak = false;
    vec_push(&s->syms, ((Sym){.name = name, .kind = kind, .val = v}));
}

static void name_value(Sema *s, ValueId v, const char *name)
{
    if (v && s->emit && !s->f->values[v].name) s->f->values[v].name = arena_strdup(s->f->arena, name);
}

/* ph.var's TYPE: a scalar dtype or ph.tile[DT][dims]; dt DT_VOID on error. */
static Val var_type(Sema *s, const Expr *t)
{
    Val r = {.dt = DT_VOID};
    DType dt = sema_dtype(s->alias, t);
    if (dt != DT_VOID) {
        if (dt == DT_F16 || dt == DT_BF16 || ir_is_storage(dt)) {
            sema_err(s, t->loc, "scalars are i32, f32 or bool; %s is only a tile or tensor element type", ir_dtype_name(dt));
            return r;
        }
        r.dt = dt;
        return r;
    }
    if (t->kind != EX_INDEX || !t->lhs || t->lhs->kind != EX_INDEX || !sema_is_ns(s->alias, t->lhs->lhs, "tile")) {
        sema_err(s, t->loc, "expected a type: %s.i32, %s.f32, bool or %s.tile[DTYPE][DIMS]", s->alias, s->alias, s->alias);
        return r;
    }
    dt = t->lhs->nitems == 1 ? sema_dtype(s->alias, t->lhs->items[0]) : DT_VOID;
    if (dt == DT_VOID) {
        sema_err(s, t->lhs->loc, "expected one element type for the tile: f16, bf16, f32, i32 or bool");
        return r;
    }
    int n = t->nitems;
    Expr *const *items = t->items;
    if (n == 1 && items[0]->kind == EX_TUPLE) {
        n = items[0]->nitems;
        items = items[0]->items;
    }
    if (n < 1 || n > 2) {
        sema_err(s, t->loc, "a tile has 1 or 2 dimensions, got %d", n);
        return r;
    }
    bool ok = true;
    for (int i = 0; i < n; i++) ok = sema_const_dim(s, items[i], "a tile dimension", &r.dim[i]) && ok;
    if (!ok) return r;
    if ((int64_t)r.dim[0] * (n == 2 ? r.dim[1] : 1) > MAX_NUMEL) {
        sema_err(s, t->loc, "the tile has more than %d elements", MAX_NUMEL);
        return r;
    }
    r.rank = n;
    if (n == 1) r.dim[1] = 1;
    r.dt = dt;
    return r;
}

/* x: ph.let = e / x: ph.var[T] = e. The typing pass checks; the emitting
 * pass declares. In a pass with errors the name is declared erroneous so
 * later uses stay quiet. */
static void decl_stmt(Sema *s, const Stmt *st)
{
    const Expr *a = st->annot;
    bool is_let = sema_is_ns(s->alias, a, "let");
    bool is_var = a && a->kind == EX_INDEX && sema_is_ns(s->alias, a->lhs, "var");
    if (!st->target || st->target->kind != EX_NAME) {
        sema_err(s, st->loc, "expected a name before ':'");
        return;
    }
    const char *name = st->target->name;
    int bad0 = s->bad;
    bool fresh = s->emit || can_declare(s, name, st->target->loc);
    Val v = val_error();
    if (!is_let && !is_var) {
        sema_err(s, a ? a->loc : st->loc, "expected %s.let or %s.var[TYPE] after '%s:'", s->alias, s->alias, name);
    } else if (!st->value) {
        sema_err(s, st->loc, "'%s' needs an initial value", name);
    } else if (is_let) {
        v = sema_expr(s, st->value);
        if (!val_bad(v) && v.weak) v = sema_coerce_to(s, v, v.wfloat ? DT_F32 : DT_I32, 0, v.dim, st->value->loc, name);
    } else if (a->nitems != 1) {
        sema_err(s, a->loc, "%s.var takes one type", s->alias);
    } else {
        Val t = var_type(s, a->items[0]);
        Val x = sema_expr(s, st->value);
        if (!val_bad(t)) {
            char what[96];
            snprintf(what, sizeof what, "var '%s'", name);
            v = sema_coerce_to(s, x, t.dt, t.rank, t.dim, st->value->loc, what);
        }
    }
    if (s->emit) {
        name_value(s, v.v, name);
    } else {
        if (s->bad == bad0 && sema_resolve_iotas(s)) return;   /* the emitting pass declares */
        if (!fresh) return;
        v = val_error();   /* later uses stay quiet */
    }
    sema_declare(s, name, is_var ? SYM_VAR : SYM_LET, v);
}

static Sym *assign_target(Sema *s, const Expr *t)
{
    Sym *y = sema_lookup(s, t->name);
    if (!y) sema_err(s, t->loc, "undeclared name '%s'", t->name);
    else if (y->kind == SYM_VAR) return y;
    else if (y->kind == SYM_LET || y->kind == SYM_LOOP)
        sema_err(s, t->loc, "'%s' is not a var; declare it with %s.var to assign to it", t->name, s->alias);
    else sema_err(s, t->loc, "cannot assign to '%s', which is %s", t->name, sym_what(y->kind));
    return NULL;
}

static TokKind aug_op(TokKind op)
{
    switch (op) {
    case T_PLUSEQ: return T_PLUS;
    case T_MINUSEQ: return T_MINUS;
    case T_STAREQ: return T_STAR;
    case T_SLASHEQ: return T_SLASH;
    default: return T_EOF;
    }
}

static void store(Sema *s, const Stmt *st, TokKind op)
{
    Window w;
    if (!sema_window(s, st->target, &w)) {
        if (st->value) sema_expr(s, st->value);
        return;
    }
    char what[96];
    snprintf(what, sizeof what, "the window of '%s'", s->k->params[w.param].name);
    Val x = sema_window_value(s, sema_expr(s, st->value), &w, st->value->loc, what);
    if (op != T_EOF) x = sema_binary(s, op, sema_load(s, &w, st->loc), x, st->loc);
    x = sema_coerce_to(s, x, w.dt, w.vrank, w.vdim, st->value->loc, what);
    if (val_bad(x) || !s->emit) return;
    ValueId args[IR_MAX_RANK + 1];
    int n = sema_window_starts(s, &w, st->loc, args);
    args[n] = x.v;
    IrOp *op2 = ir_emit(s->f, s->blk, sema_window_gathers(&w) ? OP_SCATTER : OP_STORE, n + 1, args, 0, NULL);
    op2->loc = st->loc;
    op2->param = w.param;
    op2->window_axes = w.axes;
}

static void assign_stmt(Sema *s, const Stmt *st)
{
    TokKind op = T_EOF;
    if (st->kind == ST_AUGASSIGN) {
        op = aug_op(st->op);
        if (op == T_EOF) {
            sema_err(s, st->loc, "only +=, -=, *= and /= are supported");
            return;
        }
    }
    const Expr *t = st->target;
    if (t && t->kind == EX_INDEX) {
        store(s, st, op);
        return;
    }
    if (!t || t->kind != EX_NAME) {
        sema_err(s, t ? t->loc : st->loc, "cannot assign to this expression; assign to a var or a tensor window");
        return;
    }
    Sym *y = assign_target(s, t);
    /* the value may inline a helper, whose symbols can move the table: keep y's place */
    ptrdiff_t at = y ? y - s->syms.data : -1;
    Val x = sema_expr(s, st->value);
    if (!y) return;
    y = &s->syms.data[at];
    if (val_bad(y->val)) {
        s->bad++;
        return;
    }
    if (op != T_EOF) x = sema_binary(s, op, y->val, x, st->loc);
    char what[96];
    snprintf(what, sizeof what, "var '%s'", y->name);
    x = sema_coerce_to(s, x, y->val.dt, y->val.rank, y->val.dim, st->value->loc, what);
    if (val_bad(x) || !s->emit) return;
    name_value(s, x.v, y->name);
    y->val.v = x.v;
}

static void expr_stmt(Sema *s, const Stmt *st)
{
    const Expr *e = st->value;
    if (e->kind == EX_STRING) return;
    if (e->kind == EX_CALL && (sema_is_ns(s->alias, e->lhs, "online_softmax") || sema_is_ns(s->alias, e->lhs, "online_softmax2"))) {
        sema_online_softmax(s, e);
        return;
    }
    if (e->kind == EX_CALL && sema_is_ns(s->alias, e->lhs, "atomic_add")) {
        sema_atomic_add(s, e);
        return;
    }
    if (e->kind == EX_CALL && sema_is_ns(s->alias, e->lhs, "store")) {
        sema_masked_store(s, e);
        return;
    }
    if (e->kind == EX_CALL && sema_is_ns(s->alias, e->lhs, "device_print")) {
        sema_device_print(s, e);
        return;
    }
    if (e->kind == EX_CALL && sema_is_ns(s->alias, e->lhs, "device_assert")) {
        sema_device_assert(s, e);
        return;
    }
    const FuncDef *helper = e->kind == EX_CALL ? sema_helper(s, e->lhs) : NULL;
    if (helper) {
        sema_inline_call(s, e, helper, false);
        return;
    }
    int bad0 = s->bad;
    sema_expr(s, e);
    if (s->bad == bad0) sema_err(s, e->loc, "expression result is unused");
}

/* One simple statement: the typing pass, then the emitting pass when it
 * was clean (and the code is reachable). */
static void simple_pass(Sema *s, const Stmt *st)
{
    switch (st->kind) {
    case ST_EXPR: expr_stmt(s, st); break;
    case ST_DECL: decl_stmt(s, st); break;
    case ST_ASSIGN: case ST_AUGASSIGN: assign_stmt(s, st); break;
    case ST_RETURN:
        if (st->value) sema_err(s, st->value->loc, "a kernel returns no value; write 'return'");
        else if (s->emit) ir_emit(s->f, s->blk, OP_RETURN, 0, NULL, 0, NULL)->loc = st->loc;
        break;
    default: break;
    }
}

static void simple(Sema *s, const Stmt *st, bool dead)
{
    s->nsym = 0;
    int bad0 = s->bad;
    s->emit = false;
    simple_pass(s, st);
    if (s->bad == bad0 && st->kind != ST_DECL) sema_resolve_iotas(s);
    if (s->bad != bad0) return;
    if (dead) {
        /* unreachable: declare with the type only, emit nothing */
        if (st->kind == ST_DECL) {
            s->emit = true;
            IrBlock *keep = s->blk;
            s->blk = ir_block_new(s->f);
            simple_pass(s, st);
            s->blk = keep;
            s->emit = false;
        }
        return;
    }
    s->emit = true;
    simple_pass(s, st);
    s->emit = false;
}

/* Vars live now that stmts (nested blocks too) assign: the values a loop
 * carries or an if yields. */
static void assigned_vars(Sema *s, Stmt *const *body, int n, IntVec *out, int depth)
{
    if (depth > MAX_DEPTH) return;
    for (int i = 0; i < n; i++) {
        const Stmt *st = body[i];
        const Expr *names[3] = {NULL, NULL, NULL};
        if ((st->kind == ST_ASSIGN || st->kind == ST_AUGASSIGN) && st->target && st->target->kind == EX_NAME)
            names[0] = st->target;
        if (st->kind == ST_EXPR && st->value && st->value->kind == EX_CALL
            && (sema_is_ns(s->alias, st->value->lhs, "online_softmax") || sema_is_ns(s->alias, st->value->lhs, "online_softmax2")))
            for (int j = 0; j < 3 && j < st->value->nitems; j++) names[j] = st->value->items[j];
        for (int j = 0; j < 3; j++) {
            if (!names[j] || names[j]->kind != EX_NAME) continue;
            Sym *y = sema_lookup(s, names[j]->name);
            if (!y || y->kind != SYM_VAR || val_bad(y->val)) continue;
            int idx = (int)(y - s->syms.data);
            bool dup = false;
            for (int q = 0; q < out->len; q++) dup |= out->data[q] == idx;
            if (!dup) vec_push(out, idx);
        }
        if (st->kind == ST_FOR || st->kind == ST_IF || st->kind == ST_WHILE) {
            assigned_vars(s, st->body, st->nbody, out, depth + 1);
            assigned_vars(s, st->orelse, st->norelse, out, depth + 1);
        }
    }
}

static void scoped_block(Sema *s, Stmt *const *body, int n)
{
    int mark = s->syms.len;
    sema_lower_block(s, body, n);
    s->syms.len = mark;
}

static void sema_emit_yield(Sema *s, IrBlock *b, const IntVec *vars, Loc loc)
{
    ValueId *args = xcalloc((size_t)vars->len + 1, sizeof *args);
    for (int i = 0; i < vars->len; i++) args[i] = s->syms.data[vars->data[i]].val.v;
    ir_emit(s->f, b, OP_YIELD, vars->len, args, 0, NULL)->loc = loc;
    free(args);
}

/* Results of an OP_FOR / OP_IF become the vars' values. */
static void take_results(Sema *s, IrOp *op, const IntVec *vars)
{
    for (int i = 0; i < vars->len; i++) {
        Sym *y = &s->syms.data[vars->data[i]];
        y->val.v = op->res[i];
        s->f->values[op->res[i]].name = arena_strdup(s->f->arena, y->name);
    }
}

static IrType *var_types(Sema *s, const IntVec *vars)
{
    IrType *t = xcalloc((size_t)vars->len + 1, sizeof *t);
    for (int i = 0; i < vars->len; i++) t[i] = val_irtype(s->syms.data[vars->data[i]].val);
    return t;
}

/* range(stop) / range(start, stop[, step]): typing then, when clean, emitting. */
static bool range_pass(Sema *s, const Expr *r, Val *lo, Val *hi, int64_t *step)
{
    int none[2] = {1, 1};
    const Expr *estart = r->nitems >= 2 ? r->items[0] : NULL, *estop = r->nitems >= 2 ? r->items[1] : r->items[0];
    bool ok = true;
    *lo = (Val){.dt = DT_I32, .weak = true};
    if (estart) {
        *lo = sema_expr(s, estart);
        ok = !val_bad(*lo);
    }
    *hi = sema_expr(s, estop);
    ok = !val_bad(*hi) && ok;
    const Expr *es[2] = {estart, estop};
    Val *vs[2] = {lo, hi};
    for (int i = 0; i < 2; i++) {
        if (val_bad(*vs[i])) continue;
        if (vs[i]->rank != 0 || vs[i]->dt != DT_I32 || (vs[i]->weak && vs[i]->wfloat)) {
            char t[64];
            val_str(s, *vs[i], t, sizeof t);
            sema_err(s, es[i]->loc, "expected an i32 scalar for the %s of range, got %s%s", i ? "stop" : "start", t,
                     vs[i]->dt == DT_I64 && vs[i]->rank == 0 ? "; the loop counts in i32: convert the bound with ph.i32(...)" : "");
            ok = false;
            continue;
        }
        *vs[i] = sema_coerce_to(s, *vs[i], DT_I32, 0, none, es[i] ? es[i]->loc : r->loc, "range");
        ok = !val_bad(*vs[i]) && ok;
    }
    *step = 1;
    if (r->nitems == 3) {
        char why[200];
        if (!sema_const_int(s, r->items[2], step, why, sizeof why)) {
            sema_err(s, r->items[2]->loc, "expected a compile-time integer for the step of range, got %s", why);
            ok = false;
        } else if (*step < 1 || *step > INT32_MAX) {
            sema_err(s, r->items[2]->loc, "the step of range must be a positive i32, got %lld", (long long)*step);
            ok = false;
        }
    }
    return ok && sema_resolve_iotas(s);
}

int64_t sema_count_stmts(const Stmt *st)
{
    int64_t c = 1;
    for (int i = 0; i < st->nbody; i++) c += sema_count_stmts(st->body[i]);
    for (int i = 0; i < st->norelse; i++) c += sema_count_stmts(st->orelse[i]);
    return c;
}

static bool returns_at_top(Stmt *const *body, int n)
{
    for (int i = 0; i < n; i++)
        if (body[i]->kind == ST_RETURN) return true;
    return false;
}

/* for i in ph.static_range(start, stop[, step]): the body lowered once per
 * value of i, in order, each copy in the enclosing block with i a
 * compile-time integer (usable where a meta-parameter is). The arguments
 * are compile-time integers; the step may be negative, not 0. A return in
 * the body ends the block there, as it would in the first copy. */
static void static_for(Sema *s, const Stmt *st, bool dead)
{
    const Expr *r = st->value;
    int64_t v[3] = {0, 0, 1};
    bool ok = r->nitems >= 1 && r->nitems <= 3;
    if (!ok) sema_err(s, r->loc, "%s.static_range takes 1 to 3 arguments, got %d", s->alias, r->nitems);
    for (int i = 0; ok && i < r->nitems; i++) {
        char why[200];
        const Expr *a = r->items[i];
        if (a->kind == EX_KEYWORD) {
            sema_err(s, a->loc, "%s.static_range takes no keyword arguments", s->alias);
            ok = false;
        } else if (!sema_const_int(s, a, &v[r->nitems == 1 ? 1 : i], why, sizeof why)) {
            sema_err(s, a->loc, "expected a compile-time integer for %s.static_range, got %s", s->alias, why);
            ok = false;
        }
    }
    if (ok && v[2] == 0) {
        sema_err(s, r->items[2]->loc, "the step of %s.static_range must not be 0", s->alias);
        ok = false;
    }
    int64_t span = v[2] > 0 ? v[1] - v[0] : v[0] - v[1], step = v[2] > 0 ? v[2] : -v[2];
    int64_t count = ok && span > 0 ? (span + step - 1) / step : 0;
    int64_t copies = count * (sema_count_stmts(st) - 1);
    if (ok && (count > MAX_UNROLLED || s->unrolled + copies > MAX_UNROLLED)) {
        sema_err(s, r->loc, "%s.static_range copies %lld statements here, which takes the statements copied into this "
                 "kernel (unrolled loops multiplied, helpers inlined) past %d; use range", s->alias, (long long)copies,
                 MAX_UNROLLED);
        ok = false;
    }
    const char *iv_name = st->target && st->target->kind == EX_NAME ? st->target->name : NULL;
    if (!iv_name) sema_err(s, st->target ? st->target->loc : st->loc, "expected a name after 'for'");
    bool fresh = iv_name && can_declare(s, iv_name, st->target->loc);
    if (!ok) count = 1, dead = true;   /* the body is still checked, once */
    s->unrolled += ok ? copies : 0;
    for (int64_t k = 0; k < count; k++) {
        int mark = s->syms.len;
        Val iv = val_weak_int(v[0] + k * v[2]);
        if (fresh) vec_push(&s->syms, ((Sym){.name = iv_name, .kind = SYM_LOOP, .val = iv}));   /* weak: compile-time */
        bool was_dead = s->dead;
        s->dead = dead;
        sema_lower_block(s, st->body, st->nbody);
        s->dead = was_dead;
        s->syms.len = mark;
        if (returns_at_top(st->body, st->nbody)) dead = true;
    }
    if (count && returns_at_top(st->body, st->nbody)) s->dead = true;
}

static bool is_static_range(Sema *s, const Expr *r)
{
    return r && r->kind == EX_CALL && sema_is_ns(s->alias, r->lhs, "static_range");
}

static void for_stmt(Sema *s, const Stmt *st, bool dead)
{
    const Expr *r = st->value;
    bool ok = true;
    if (is_static_range(s, r)) {
        static_for(s, st, dead);
        return;
    }
    s->emit = false;
    s->nsym = 0;
    if (!r || r->kind != EX_CALL || !r->lhs || r->lhs->kind != EX_NAME || strcmp(r->lhs->name, "range")) {
        sema_err(s, r ? r->loc : st->loc, "expected range(...) after 'in': a loop runs over range(stop) or range(start, stop[, step])");
        ok = false;
    } else if (r->nitems < 1 || r->nitems > 3) {
        sema_err(s, r->loc, "range takes 1 to 3 arguments, got %d", r->nitems);
        ok = false;
    } else {
        for (int i = 0; i < r->nitems; i++)
            if (r->items[i]->kind == EX_KEYWORD) {
                sema_err(s, r->items[i]->loc, "range takes no keyword arguments");
                ok = false;
            }
    }
    Val lo = {0}, hi = {0};
    int64_t step = 1;
    if (ok) ok = range_pass(s, r, &lo, &hi, &step);
    const char *iv_name = st->target && st->target->kind == EX_NAME ? st->target->name : NULL;
    if (!iv_name) sema_err(s, st->target ? st->target->loc : st->loc, "expected a name after 'for'");
    bool fresh = iv_name && can_declare(s, iv_name, st->target->loc);
    bool emit = ok && !dead;
    if (emit) {
        s->emit = true;
        ok = range_pass(s, r, &lo, &hi, &step);
        s->emit = false;
    }
    IntVec carried = {0};
    assigned_vars(s, st->body, st->nbody, &carried, 0);
    IrBlock *outer = s->blk, *body = ir_block_new(s->f);
    ValueId *saved = xcalloc((size_t)carried.len + 1, sizeof *saved);
    for (int i = 0; i < carried.len; i++) saved[i] = s->syms.data[carried.data[i]].val.v;
    ValueId iv = ir_block_arg(s->f, body, ir_scalar(DT_I32), iv_name);
    for (int i = 0; i < carried.len; i++) {
        Sym *y = &s->syms.data[carried.data[i]];
        y->val.v = ir_block_arg(s->f, body, val_irtype(y->val), y->name);
    }
    int mark = s->syms.len;
    if (fresh) sema_declare(s, iv_name, SYM_LOOP, (Val){.dt = DT_I32, .v = iv});
    s->blk = body;
    sema_lower_block(s, st->body, st->nbody);
    s->syms.len = mark;
    sema_emit_yield(s, body, &carried, st->loc);
    s->blk = outer;
    if (emit) {
        int n = 2 + carried.len;
        ValueId *args = xcalloc((size_t)n, sizeof *args);
        args[0] = lo.v;
        args[1] = hi.v;
        memcpy(args + 2, saved, sizeof *saved * (size_t)carried.len);
        IrType *types = var_types(s, &carried);
        IrOp *op = ir_emit(s->f, s->blk, OP_FOR, n, args, carried.len, types);
        op->loc = st->loc;
        op->ival = step;
        op->body = body;
        take_results(s, op, &carried);
        free(args);
        free(types);
    } else {
        for (int i = 0; i < carried.len; i++) s->syms.data[carried.data[i]].val.v = saved[i];
    }
    free(saved);
    free(carried.data);
}

/* An if's or a while's condition: typed, then, when clean and live, emitted
 * into s->blk. True when it was emitted (into *c). */
static bool condition(Sema *s, const Expr *e, bool dead, Val *c)
{
    s->emit = false;
    s->nsym = 0;
    int bad0 = s->bad;
    *c = sema_expr(s, e);
    if (!val_bad(*c) && (c->dt != DT_BOOL || c->rank != 0)) {
        char t[64];
        val_str(s, *c, t, sizeof t);
        sema_err(s, e->loc, c->rank ? "expected a bool scalar condition, got %s: a condition must be the "
                 "same in the whole block (use ph.where for tiles)" : "expected a bool scalar condition, got %s", t);
    }
    if (s->bad == bad0) sema_resolve_iotas(s);
    bool emit = s->bad == bad0 && !dead;
    if (emit) {
        s->emit = true;
        *c = sema_expr(s, e);
        s->emit = false;
    }
    return emit;
}

/* The vars of vars take fresh arguments of region b. */
static void region_args(Sema *s, IrBlock *b, const IntVec *vars)
{
    for (int i = 0; i < vars->len; i++) {
        Sym *y = &s->syms.data[vars->data[i]];
        y->val.v = ir_block_arg(s->f, b, val_irtype(y->val), y->name);
    }
}

/* while cond: body. The condition is evaluated before every iteration with
 * the vars' current values: it is lowered into the while's condition
 * region, whose arguments are the vars the body assigns, as the body's
 * are; the while's results are their values when the condition fails. */
static void while_stmt(Sema *s, const Stmt *st, bool dead)
{
    IntVec carried = {0};
    assigned_vars(s, st->body, st->nbody, &carried, 0);
    ValueId *saved = xcalloc((size_t)carried.len + 1, sizeof *saved);
    for (int i = 0; i < carried.len; i++) saved[i] = s->syms.data[carried.data[i]].val.v;
    IrBlock *outer = s->blk, *cond = ir_block_new(s->f), *body = ir_block_new(s->f);
    region_args(s, cond, &carried);
    s->blk = cond;
    Val c;
    bool emit = condition(s, st->value, dead, &c);
    if (emit) ir_emit(s->f, cond, OP_YIELD, 1, &c.v, 0, NULL)->loc = st->loc;
    region_args(s, body, &carried);
    s->blk = body;
    scoped_block(s, st->body, st->nbody);
    sema_emit_yield(s, body, &carried, st->loc);
    s->blk = outer;
    if (emit) {
        IrType *types = var_types(s, &carried);
        IrOp *op = ir_emit(s->f, s->blk, OP_WHILE, carried.len, saved, carried.len, types);
        op->loc = st->loc;
        op->body = cond;
        op->els = body;
        take_results(s, op, &carried);
        free(types);
    } else {
        for (int i = 0; i < carried.len; i++) s->syms.data[carried.data[i]].val.v = saved[i];
    }
    free(saved);
    free(carried.data);
}

static void if_stmt(Sema *s, const Stmt *st, bool dead)
{
    Val c;
    bool emit = condition(s, st->value, dead, &c);
    IntVec vars = {0};
    assigned_vars(s, st->body, st->nbody, &vars, 0);
    assigned_vars(s, st->orelse, st->norelse, &vars, 0);
    ValueId *saved = xcalloc((size_t)vars.len + 1, sizeof *saved);
    for (int i = 0; i < vars.len; i++) saved[i] = s->syms.data[vars.data[i]].val.v;
    IrBlock *outer = s->blk, *then = ir_block_new(s->f), *els = ir_block_new(s->f);
    s->blk = then;
    scoped_block(s, st->body, st->nbody);
    sema_emit_yield(s, then, &vars, st->loc);
    for (int i = 0; i < vars.len; i++) s->syms.data[vars.data[i]].val.v = saved[i];
    s->blk = els;
    scoped_block(s, st->orelse, st->norelse);
    sema_emit_yield(s, els, &vars, st->loc);
    s->blk = outer;
    if (emit) {
        IrType *types = var_types(s, &vars);
        IrOp *op = ir_emit(s->f, s->blk, OP_IF, 1, &c.v, vars.len, types);
        op->loc = st->loc;
        op->body = then;
        op->els = els;
        take_results(s, op, &vars);
        free(types);
    } else {
        for (int i = 0; i < vars.len; i++) s->syms.data[vars.data[i]].val.v = saved[i];
    }
    free(saved);
    free(vars.data);
}

/* Statements after a return are checked but not emitted: they are lowered
 * into a block nothing refers to, and vars keep the values they had at the
 * return. */
void sema_lower_block(Sema *s, Stmt *const *body, int n)
{
    if (++s->depth > MAX_DEPTH) {
        s->depth--;
        if (n) sema_err(s, body[0]->loc, "blocks nested too deeply");
        return;
    }
    bool dead = s->dead;
    for (int i = 0; i < n; i++) {
        const Stmt *st = body[i];
        if (st->kind == ST_FOR) for_stmt(s, st, s->dead);
        else if (st->kind == ST_IF) if_stmt(s, st, s->dead);
        else if (st->kind == ST_WHILE) while_stmt(s, st, s->dead);
        else simple(s, st, s->dead);
        if (st->kind == ST_RETURN) s->dead = true;
    }
    s->dead = dead;
    s->depth--;
}

