/* sema.c: semantic analysis and lowering to tile IR. Checks the module's
 * top level (imports, kernels), each kernel's decorators and parameters
 * once, then, for every config of its @ph.autotune product that the
 * options select, checks the body with the meta-parameters bound and
 * builds one IrFunc. Statements are checked and lowered in two passes
 * (sema.h); vars become SSA values threaded through OP_FOR and OP_IF. */
#include "sema.h"

#include <stdlib.h>
#include <string.h>

typedef VEC(int) IntVec;
typedef VEC(Kernel) KernelVec;

/* ---- the top level ---- */
static const char *stmt_what(const Stmt *st)
{
    switch (st->kind) {
    case ST_EXPR: return "an expression";
    case ST_ASSIGN: case ST_AUGASSIGN: return "an assignment";
    case ST_DECL: return "a declaration";
    case ST_FOR: return "a for loop";
    case ST_IF: return "an if statement";
    case ST_RETURN: return "a return statement";
    default: return "a pass statement";
    }
}

static bool is_string_stmt(const Stmt *st)
{
    return st && st->kind == ST_EXPR && st->value && st->value->kind == EX_STRING;
}

/* Finds the namespace alias; reports every import that is not allowed. */
static const char *check_imports(const Module *m, Diag *d)
{
    const char *alias = NULL;
    int alias_line = 0;
    for (int i = 0; i < m->nitems; i++) {
        const Top *t = m->items[i];
        const char *mod = t->module ? t->module : "";
        if (t->kind == TOP_FROM_IMPORT) {
            if (strcmp(mod, "__future__"))
                diag_error(d, t->loc, "'from %s import ...' is not supported; the only module is phobos.lang: "
                           "write 'import phobos.lang as ph'", mod);
            else if (!t->name || strcmp(t->name, "annotations") || t->alias)
                diag_error(d, t->loc, "'from __future__ import %s' is not supported; only 'annotations' is",
                           t->name ? t->name : "");
        } else if (t->kind == TOP_IMPORT) {
            if (strcmp(mod, "phobos.lang"))
                diag_error(d, t->loc, "cannot import module '%s'; the only module is phobos.lang", mod);
            else if (!t->alias)
                diag_error(d, t->loc, "write 'import phobos.lang as ph': the built-ins are used through an alias");
            else if (alias)
                diag_error(d, t->loc, "phobos.lang is already imported (line %d)", alias_line);
            else {
                alias = t->alias;
                alias_line = t->loc.line;
            }
        }
    }
    return alias;
}

/* ---- kernel headers ---- */
static bool is_ns(const char *alias, const Expr *e, const char *name)
{
    const char *n = ns_attr_of(alias, e);
    return n && !strcmp(n, name);
}

static int param_index(const Kernel *k, const char *name)
{
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].name && !strcmp(k->params[i].name, name)) return i;
    return -1;
}

static int meta_index(const Kernel *k, const char *name)
{
    for (int i = 0; i < k->nmeta; i++)
        if (!strcmp(k->meta_name[i], name)) return i;
    return -1;
}

static bool is_dim_name(const Kernel *k, const char *name)
{
    for (int i = 0; i < k->nparams; i++)
        for (int a = 0; a < k->params[i].rank; a++)
            if (k->params[i].dim_name[a] && !strcmp(k->params[i].dim_name[a], name)) return true;
    return false;
}

static bool check_param_type(Diag *d, const char *alias, const Param *p, IrParam *out)
{
    const Expr *a = p->annot;
    DType dt = sema_dtype(alias, a);
    if (dt != DT_VOID) {
        if (dt != DT_I32 && dt != DT_F32) {
            diag_error(d, a->loc, "scalar parameters are %s.i32 or %s.f32, got %s", alias, alias, ir_dtype_name(dt));
            return false;
        }
        out->dt = dt;
        return true;
    }
    if (a->kind != EX_INDEX || !a->lhs || a->lhs->kind != EX_INDEX || !is_ns(alias, a->lhs->lhs, "tensor")) {
        diag_error(d, a->loc, "expected %s.tensor[DTYPE][DIMS], %s.i32 or %s.f32 as the type of parameter '%s'",
                   alias, alias, alias, p->name);
        return false;
    }
    out->is_tensor = true;
    out->dt = a->lhs->nitems == 1 ? sema_dtype(alias, a->lhs->items[0]) : DT_VOID;
    if (out->dt == DT_VOID || out->dt == DT_BOOL) {
        diag_error(d, a->lhs->loc, "expected one element type for tensor '%s': %s.f16, %s.bf16, %s.f32 or %s.i32",
                   p->name, alias, alias, alias, alias);
        return false;
    }
    int n = a->nitems;
    Expr *const *items = a->items;
    if (n == 1 && items[0]->kind == EX_TUPLE) {
        n = items[0]->nitems;
        items = items[0]->items;
    }
    if (n < 1 || n > 2) {
        diag_error(d, a->loc, "tensor '%s' must have rank 1 or 2, got %d dimensions", p->name, n);
        return false;
    }
    out->rank = n;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const Expr *e = items[i];
        if (e->kind == EX_NAME) {
            out->dim_name[i] = e->name;
        } else if (e->kind == EX_INT && !e->overflow && e->ival >= 1 && e->ival <= INT32_MAX) {
            out->dim_value[i] = e->ival;
        } else {
            diag_error(d, e->loc, "a tensor dimension is a name or a positive integer literal");
            ok = false;
        }
    }
    return ok;
}

/* The driver refuses an entry whose parameters do not fit the kernel
 * parameter space; said here, at the kernel's name, rather than at load. */
static void check_param_space(Diag *d, const FuncDef *fd, Kernel *k)
{
    int64_t bytes = ir_param_bytes(k->params, k->nparams);
    if (bytes <= IR_MAX_PARAM_BYTES) return;
    int tensors = 0;
    for (int i = 0; i < k->nparams; i++) tensors += k->params[i].is_tensor;
    diag_error(d, fd->loc, "kernel '%s' takes %lld bytes of parameters (%d tensors of 24 bytes, %d scalars of 4); "
               "a GPU kernel's parameters are limited to %d bytes", fd->name, (long long)bytes, tensors,
               k->nparams - tensors, IR_MAX_PARAM_BYTES);
    k->ok = false;
}

static void check_params(Diag *d, const char *alias, const FuncDef *fd, Kernel *k)
{
    k->nparams = fd->nparams;
    k->params = xcalloc((size_t)fd->nparams + 1, sizeof *k->params);
    for (int i = 0; i < fd->nparams; i++) {
        const Param *p = &fd->params[i];
        IrParam *ip = &k->params[i];
        ip->name = p->name;
        ip->dt = DT_VOID;
        if (param_index(k, p->name) < i) {
            diag_error(d, p->loc, "parameter '%s' is given twice", p->name);
            k->ok = false;
        }
        if (!strcmp(p->name, alias)) {
            diag_error(d, p->loc, "parameter '%s' shadows the namespace alias", p->name);
            k->ok = false;
        }
        if (p->dflt) diag_error(d, p->dflt->loc, "parameter '%s' has a default value; kernel parameters take none", p->name);
        if (!p->annot) {
            diag_error(d, p->loc, "parameter '%s' needs a type: %s.tensor[DTYPE][DIMS], %s.i32 or %s.f32",
                       p->name, alias, alias, alias);
            k->ok = false;
        } else if (!check_param_type(d, alias, p, ip)) {
            k->ok = false;   /* dims that were valid stay known, for @ph.aligned */
        }
    }
    for (int i = 0; i < k->nparams; i++)
        for (int a = 0; a < k->params[i].rank; a++) {
            const char *dn = k->params[i].dim_name[a];
            if (dn && param_index(k, dn) >= 0) {
                diag_error(d, fd->params[i].annot->loc, "dimension name '%s' is also the name of a parameter", dn);
                k->ok = false;
            } else if (dn && !strcmp(dn, alias)) {
                diag_error(d, fd->params[i].annot->loc, "dimension name '%s' shadows the namespace alias", dn);
                k->ok = false;
            }
        }
    if (fd->returns) diag_error(d, fd->returns->loc, "a kernel returns nothing; remove the '->' annotation");
    check_param_space(d, fd, k);
}

static bool int_literal(const Expr *e, int64_t *out)
{
    bool neg = false;
    if (e->kind == EX_UNARY && e->op == T_MINUS && e->lhs) {
        neg = true;
        e = e->lhs;
    }
    if (e->kind != EX_INT || e->overflow || e->ival > INT32_MAX + (int64_t)neg) return false;
    *out = neg ? -e->ival : e->ival;
    return true;
}

static void check_autotune(Diag *d, const char *alias, const Expr *e, Kernel *k)
{
    if (e->kind != EX_CALL) {
        diag_error(d, e->loc, "@%s.autotune takes NAME=[values, ...] arguments", alias);
        return;
    }
    for (int i = 0; i < e->nitems; i++) {
        const Expr *kw = e->items[i];
        if (kw->kind != EX_KEYWORD) {
            diag_error(d, kw->loc, "@%s.autotune takes NAME=[values, ...] arguments", alias);
            continue;
        }
        if (meta_index(k, kw->name) >= 0) { diag_error(d, kw->loc, "meta-parameter '%s' is given twice", kw->name); continue; }
        if (param_index(k, kw->name) >= 0) { diag_error(d, kw->loc, "meta-parameter '%s' shadows a parameter", kw->name); continue; }
        if (!strcmp(kw->name, alias)) { diag_error(d, kw->loc, "meta-parameter '%s' shadows the namespace alias", kw->name); continue; }
        const Expr *list = kw->lhs;
        if (!list || list->kind != EX_LIST || list->nitems == 0) {
            diag_error(d, list ? list->loc : kw->loc, "meta-parameter '%s' needs a non-empty list of integers", kw->name);
            continue;
        }
        if (k->nmeta == MAX_META) { diag_error(d, kw->loc, "at most %d meta-parameters are supported", MAX_META); return; }
        int64_t *vals = xcalloc((size_t)list->nitems, sizeof *vals);
        bool ok = true;
        for (int j = 0; j < list->nitems && ok; j++) {
            if (!int_literal(list->items[j], &vals[j])) {
                diag_error(d, list->items[j]->loc, "expected an i32 integer literal in the values of '%s'", kw->name);
                ok = false;
            }
            for (int q = 0; q < j && ok; q++)
                if (vals[q] == vals[j]) {
                    diag_error(d, list->items[j]->loc, "value %lld of '%s' is listed twice", (long long)vals[j], kw->name);
                    ok = false;
                }
        }
        if (!ok) { free(vals); continue; }
        k->meta_name[k->nmeta] = kw->name;
        k->meta_loc[k->nmeta] = kw->loc;
        k->nvalues[k->nmeta] = list->nitems;
        k->values[k->nmeta++] = vals;
    }
}

static void check_aligned(Diag *d, const char *alias, const Expr *e, Kernel *k)
{
    if (e->kind != EX_CALL || e->nitems == 0) {
        diag_error(d, e->loc, "@%s.aligned takes DIM=\"META\" arguments", alias);
        return;
    }
    k->aligned = xcalloc((size_t)e->nitems, sizeof *k->aligned);
    k->aligned_loc = xcalloc((size_t)e->nitems, sizeof *k->aligned_loc);
    for (int i = 0; i < e->nitems; i++) {
        const Expr *kw = e->items[i];
        if (kw->kind != EX_KEYWORD || !kw->lhs || kw->lhs->kind != EX_STRING) {
            diag_error(d, kw->loc, "@%s.aligned takes DIM=\"META\" arguments", alias);
            continue;
        }
        bool dup = false;
        for (int j = 0; j < k->naligned; j++) dup |= !strcmp(k->aligned[j].dim, kw->name);
        if (dup) { diag_error(d, kw->loc, "dimension '%s' is given twice in @%s.aligned", kw->name, alias); continue; }
        if (!is_dim_name(k, kw->name)) {
            diag_error(d, kw->loc, "'%s' is not a dimension name of a tensor parameter", kw->name);
            continue;
        }
        if (meta_index(k, kw->lhs->name) < 0) {
            diag_error(d, kw->lhs->loc, "'%s' is not a meta-parameter of this kernel", kw->lhs->name);
            continue;
        }
        k->aligned_loc[k->naligned] = kw->loc;
        k->aligned[k->naligned++] = (IrAligned){kw->name, kw->lhs->name, 0};
    }
}

/* @ph.autotune_restore("DQ", ...) and @ph.autotune_zero("DK", ...): the
 * tensor parameters the autotuner restores, or zeroes, before each run it
 * times and before the launch it keeps, for kernels that update them in
 * place. A tensor is named once, in one of the two. */
static void check_tune_reset(Diag *d, const char *alias, const Expr *e, Kernel *k, IrTuneReset how)
{
    const char *what = how == IR_TUNE_RESTORE ? "autotune_restore" : "autotune_zero";
    if (e->kind != EX_CALL || e->nitems == 0) {
        diag_error(d, e->loc, "@%s.%s takes the names of tensor parameters, as strings", alias, what);
        return;
    }
    for (int i = 0; i < e->nitems; i++) {
        const Expr *a = e->items[i];
        if (a->kind != EX_STRING) {
            diag_error(d, a->loc, "@%s.%s takes the names of tensor parameters, as strings", alias, what);
            continue;
        }
        int p = param_index(k, a->name);
        if (p < 0) {
            diag_error(d, a->loc, "'%s' is not a parameter of this kernel", a->name);
            continue;
        }
        IrParam *ip = &k->params[p];
        if (ip->dt == DT_VOID) continue;   /* its type is wrong, and said so */
        if (!ip->is_tensor) {
            diag_error(d, a->loc, "'%s' is a scalar; @%s.%s names tensor parameters", a->name, alias, what);
        } else if (ip->tune_reset == how) {
            diag_error(d, a->loc, "tensor '%s' is named twice in @%s.%s", a->name, alias, what);
        } else if (ip->tune_reset) {
            diag_error(d, a->loc, "tensor '%s' cannot be both restored and zeroed", a->name);
        } else {
            ip->tune_reset = how;
        }
    }
}

static void check_decorators(Diag *d, const char *alias, const FuncDef *fd, Kernel *k)
{
    static const char *const names[] = {"kernel", "tensorcore", "launch", "autotune", "aligned", "stages",
                                        "autotune_restore", "autotune_zero"};
    enum { NDECORATORS = sizeof names / sizeof *names };
    bool seen[NDECORATORS] = {true};
    const Expr *aligned = NULL;
    for (int i = 1; i < fd->ndecorators; i++) {
        const Expr *e = fd->decorators[i];
        const Expr *callee = e->kind == EX_CALL ? e->lhs : e;
        const char *n = ns_attr_of(alias, callee);
        int which = -1;
        for (int j = 0; n && j < NDECORATORS; j++)
            if (!strcmp(n, names[j])) which = j;
        if (which < 0) {
            diag_error(d, e->loc, "unknown decorator; expected @%s.tensorcore, @%s.launch, @%s.autotune, @%s.aligned, "
                       "@%s.stages, @%s.autotune_restore or @%s.autotune_zero", alias, alias, alias, alias, alias, alias, alias);
            continue;
        }
        if (which == 0) continue;   /* a second @ph.kernel: reported with the kernel */
        if (seen[which]) {
            diag_error(d, e->loc, "@%s.%s is given twice", alias, names[which]);
            continue;
        }
        seen[which] = true;
        switch (which) {
        case 1:
            if (e->kind == EX_CALL) diag_error(d, e->loc, "@%s.tensorcore takes no arguments", alias);
            else k->tensorcore = true;
            break;
        case 2:
            if (e->kind != EX_CALL || e->nitems != 1 || (e->items[0]->kind != EX_INT && e->items[0]->kind != EX_NAME))
                diag_error(d, e->loc, "@%s.launch takes one argument: a thread count or a meta-parameter name", alias);
            else k->launch = e->items[0];
            break;
        case 3: check_autotune(d, alias, e, k); break;
        case 4: aligned = e; break;
        case 5:
            if (e->kind != EX_CALL || e->nitems != 1 || (e->items[0]->kind != EX_INT && e->items[0]->kind != EX_NAME))
                diag_error(d, e->loc, "@%s.stages takes one argument: a stage count or a meta-parameter name", alias);
            else k->stages = e->items[0];
            break;
        case 6: check_tune_reset(d, alias, e, k, IR_TUNE_RESTORE); break;
        case 7: check_tune_reset(d, alias, e, k, IR_TUNE_ZERO); break;
        }
    }
    if (aligned) check_aligned(d, alias, aligned, k);
    if (k->launch && k->launch->kind == EX_NAME && meta_index(k, k->launch->name) < 0) {
        diag_error(d, k->launch->loc, "'%s' is not a meta-parameter of this kernel; @%s.launch takes an integer "
                   "or a meta-parameter name", k->launch->name, alias);
        k->launch = NULL;
    }
    if (k->stages && k->stages->kind == EX_NAME && meta_index(k, k->stages->name) < 0) {
        diag_error(d, k->stages->loc, "'%s' is not a meta-parameter of this kernel; @%s.stages takes an integer "
                   "or a meta-parameter name", k->stages->name, alias);
        k->stages = NULL;
    }
}

static void kernel_free(Kernel *k)
{
    free(k->params);
    for (int i = 0; i < k->nmeta; i++) free(k->values[i]);
    free(k->aligned);
    free(k->aligned_loc);
}

/* ---- statements ---- */
static void lower_block(Sema *s, Stmt *const *body, int n);

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

static void declare(Sema *s, const char *name, SymKind kind, Val v)
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
        if (dt == DT_F16 || dt == DT_BF16) {
            sema_err(s, t->loc, "scalars are i32, f32 or bool; %s is only a tile or tensor element type", ir_dtype_name(dt));
            return r;
        }
        r.dt = dt;
        return r;
    }
    if (t->kind != EX_INDEX || !t->lhs || t->lhs->kind != EX_INDEX || !is_ns(s->alias, t->lhs->lhs, "tile")) {
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
    bool is_let = is_ns(s->alias, a, "let");
    bool is_var = a && a->kind == EX_INDEX && is_ns(s->alias, a->lhs, "var");
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
    declare(s, name, is_var ? SYM_VAR : SYM_LET, v);
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
    Val x = sema_expr(s, st->value);
    if (op != T_EOF) x = sema_binary(s, op, sema_load(s, &w, st->loc), x, st->loc);
    char what[96];
    snprintf(what, sizeof what, "the window of '%s'", s->k->params[w.param].name);
    int dim[2] = {w.ext[0], w.rank == 2 ? w.ext[1] : 1};
    x = sema_coerce_to(s, x, w.dt, w.rank, dim, st->value->loc, what);
    if (val_bad(x) || !s->emit) return;
    ValueId args[3] = {w.start[0].v, w.start[1].v, 0};
    args[w.rank] = x.v;
    IrOp *op2 = ir_emit(s->f, s->blk, OP_STORE, w.rank + 1, args, 0, NULL);
    op2->loc = st->loc;
    op2->param = w.param;
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
    Val x = sema_expr(s, st->value);
    if (!y) return;
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
    if (e->kind == EX_CALL && is_ns(s->alias, e->lhs, "online_softmax")) {
        sema_online_softmax(s, e);
        return;
    }
    if (e->kind == EX_CALL && is_ns(s->alias, e->lhs, "atomic_add")) {
        sema_atomic_add(s, e);
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
            && is_ns(s->alias, st->value->lhs, "online_softmax"))
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
        if (st->kind == ST_FOR || st->kind == ST_IF) {
            assigned_vars(s, st->body, st->nbody, out, depth + 1);
            assigned_vars(s, st->orelse, st->norelse, out, depth + 1);
        }
    }
}

static void scoped_block(Sema *s, Stmt *const *body, int n)
{
    int mark = s->syms.len;
    lower_block(s, body, n);
    s->syms.len = mark;
}

static void emit_yield(Sema *s, IrBlock *b, const IntVec *vars, Loc loc)
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
            sema_err(s, es[i]->loc, "expected an i32 scalar for the %s of range, got %s", i ? "stop" : "start", t);
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

static void for_stmt(Sema *s, const Stmt *st, bool dead)
{
    const Expr *r = st->value;
    bool ok = true;
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
    if (fresh) declare(s, iv_name, SYM_LOOP, (Val){.dt = DT_I32, .v = iv});
    s->blk = body;
    lower_block(s, st->body, st->nbody);
    s->syms.len = mark;
    emit_yield(s, body, &carried, st->loc);
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

static void if_stmt(Sema *s, const Stmt *st, bool dead)
{
    s->emit = false;
    s->nsym = 0;
    int bad0 = s->bad;
    Val c = sema_expr(s, st->value);
    if (!val_bad(c) && (c.dt != DT_BOOL || c.rank != 0)) {
        char t[64];
        val_str(s, c, t, sizeof t);
        sema_err(s, st->value->loc, c.rank ? "expected a bool scalar condition, got %s: a condition must be the "
                 "same in the whole block (use ph.where for tiles)" : "expected a bool scalar condition, got %s", t);
    }
    if (s->bad == bad0) sema_resolve_iotas(s);
    bool emit = s->bad == bad0 && !dead;
    if (emit) {
        s->emit = true;
        c = sema_expr(s, st->value);
        s->emit = false;
    }
    IntVec vars = {0};
    assigned_vars(s, st->body, st->nbody, &vars, 0);
    assigned_vars(s, st->orelse, st->norelse, &vars, 0);
    ValueId *saved = xcalloc((size_t)vars.len + 1, sizeof *saved);
    for (int i = 0; i < vars.len; i++) saved[i] = s->syms.data[vars.data[i]].val.v;
    IrBlock *outer = s->blk, *then = ir_block_new(s->f), *els = ir_block_new(s->f);
    s->blk = then;
    scoped_block(s, st->body, st->nbody);
    emit_yield(s, then, &vars, st->loc);
    for (int i = 0; i < vars.len; i++) s->syms.data[vars.data[i]].val.v = saved[i];
    s->blk = els;
    scoped_block(s, st->orelse, st->norelse);
    emit_yield(s, els, &vars, st->loc);
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
static void lower_block(Sema *s, Stmt *const *body, int n)
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
        else simple(s, st, s->dead);
        if (st->kind == ST_RETURN) s->dead = true;
    }
    s->dead = dead;
    s->depth--;
}

/* ---- configs ---- */
static void entry_name(const Kernel *k, const int64_t *config, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "%s", k->def->name);
    for (int i = 0; i < k->nmeta && len < n; i++) {
        int64_t v = config[i];
        len += (size_t)snprintf(buf + len, n - len, "__%s_%s%lld", k->meta_name[i], v < 0 ? "m" : "",
                                (long long)(v < 0 ? -v : v));
    }
}

static const char *adup(IrFunc *f, const char *s) { return s ? arena_strdup(f->arena, s) : NULL; }

static void func_header(IrFunc *f, const Kernel *k, const int64_t *config)
{
    char name[1024];
    entry_name(k, config, name, sizeof name);
    f->name = adup(f, name);
    f->loc = k->def->loc;
    f->tensorcore = k->tensorcore;
    f->nparams = k->nparams;
    f->params = arena_alloc(f->arena, sizeof *f->params * (size_t)(k->nparams + 1));
    for (int i = 0; i < k->nparams; i++) {
        f->params[i] = k->params[i];
        f->params[i].name = adup(f, k->params[i].name);
        for (int a = 0; a < 2; a++) f->params[i].dim_name[a] = adup(f, k->params[i].dim_name[a]);
    }
    f->nmeta = k->nmeta;
    f->meta = arena_alloc(f->arena, sizeof *f->meta * (size_t)(k->nmeta + 1));
    for (int i = 0; i < k->nmeta; i++) f->meta[i] = (IrMeta){adup(f, k->meta_name[i]), config[i]};
    f->naligned = k->naligned;
    f->aligned = arena_alloc(f->arena, sizeof *f->aligned * (size_t)(k->naligned + 1));
    for (int i = 0; i < k->naligned; i++)
        f->aligned[i] = (IrAligned){adup(f, k->aligned[i].dim), adup(f, k->aligned[i].meta),
                                    config[meta_index(k, k->aligned[i].meta)]};
}

/* Per-config checks of the header: the launch size, specialized dims, aligned values. */
static void check_config(Sema *s, const Kernel *k, const int64_t *config)
{
    IrFunc *f = s->f;
    if (k->launch) {
        int64_t t = k->launch->kind == EX_INT ? k->launch->ival : config[meta_index(k, k->launch->name)];
        if (k->launch->kind == EX_INT && k->launch->overflow) t = -1;
        if (t < 32 || t > 1024 || t % 32) {
            if (k->launch->kind == EX_NAME)
                sema_err(s, k->launch->loc, "@%s.launch needs a multiple of 32 from 32 to 1024, got %s = %lld",
                         s->alias, k->launch->name, (long long)t);
            else sema_err(s, k->launch->loc, "@%s.launch needs a multiple of 32 from 32 to 1024, got %lld",
                          s->alias, (long long)t);
        } else {
            f->threads = (int)t;
        }
    }
    if (k->stages) {
        int64_t n = k->stages->kind == EX_INT ? k->stages->ival : config[meta_index(k, k->stages->name)];
        if (k->stages->kind == EX_INT && k->stages->overflow) n = -1;
        if (n < 1 || n > MAX_STAGES) {
            if (k->stages->kind == EX_NAME)
                sema_err(s, k->stages->loc, "@%s.stages needs a stage count from 1 to %d, got %s = %lld", s->alias,
                         MAX_STAGES, k->stages->name, (long long)n);
            else sema_err(s, k->stages->loc, "@%s.stages needs a stage count from 1 to %d, got %lld", s->alias,
                          MAX_STAGES, (long long)n);
        } else {
            f->stages = (int)n;
        }
    }
    for (int i = 0; i < k->nmeta; i++)
        if (is_dim_name(k, k->meta_name[i]) && (config[i] < 1 || config[i] > INT32_MAX))
            sema_err(s, k->meta_loc[i], "meta-parameter %s = %lld specializes dimension %s, which must be at least 1",
                     k->meta_name[i], (long long)config[i], k->meta_name[i]);
    for (int i = 0; i < k->naligned; i++)
        if (f->aligned[i].value < 1)
            sema_err(s, k->aligned_loc[i], "@%s.aligned: %s = %lld is not a positive multiple", s->alias,
                     f->aligned[i].meta, (long long)f->aligned[i].value);
}

static IrFunc *lower_config(Diag *d, const char *alias, const Kernel *k, const int64_t *config)
{
    IrFunc *f = ir_func_new(k->def->name);
    func_header(f, k, config);
    Sema s = {.d = d, .alias = alias, .k = k, .config = config, .f = f, .blk = f->body};
    check_config(&s, k, config);
    declare(&s, alias, SYM_ALIAS, (Val){.dt = DT_VOID});
    for (int i = 0; i < k->nmeta; i++)
        declare(&s, k->meta_name[i], SYM_META, (Val){.dt = DT_I32, .weak = true, .ival = config[i]});
    for (int i = 0; i < k->nparams; i++) {
        const IrParam *p = &k->params[i];
        if (p->is_tensor) {
            vec_push(&s.syms, ((Sym){.name = p->name, .kind = SYM_TENSOR, .param = i}));
            for (int a = 0; a < p->rank; a++)
                if (p->dim_name[a] && !sema_lookup(&s, p->dim_name[a]))
                    vec_push(&s.syms, ((Sym){.name = p->dim_name[a], .kind = SYM_DIM, .param = i, .axis = a}));
            continue;
        }
        Val v = {.dt = p->dt};
        if (p->dt != DT_VOID) {
            IrOp *op;
            v.v = sema_emit1(&s, OP_PARAM, 0, NULL, ir_scalar(p->dt), f->loc, &op);
            op->param = i;
            f->values[v.v].name = adup(f, p->name);
        }
        vec_push(&s.syms, ((Sym){.name = p->name, .kind = SYM_SCALAR, .param = i, .val = v}));
    }
    lower_block(&s, k->def->body, k->def->nbody);
    if (!f->body->nops || f->body->ops[f->body->nops - 1]->kind != OP_RETURN)
        ir_emit(f, f->body, OP_RETURN, 0, NULL, 0, NULL)->loc = f->loc;
    free(s.syms.data);
    return f;
}

static bool config_selected(const Kernel *k, const int64_t *config, const SemaOptions *opt)
{
    for (int i = 0; i < opt->ndefines; i++) {
        int m = meta_index(k, opt->define_names[i]);
        if (m >= 0 && config[m] != opt->define_values[i]) return false;
    }
    return true;
}

/* Statements in a body, nested ones too (the parser bounds the depth). */
static int64_t count_stmts(Stmt *const *body, int n)
{
    int64_t total = n;
    for (int i = 0; i < n; i++) total += count_stmts(body[i]->body, body[i]->nbody) + count_stmts(body[i]->orelse, body[i]->norelse);
    return total;
}

static void lower_kernel(Diag *d, const char *alias, const Kernel *k, const SemaOptions *opt, IrModule *out)
{
    /* The whole product is counted first (saturating), so the message
     * says how far over the limit it is; nothing is lowered then. */
    int64_t total = 1;
    bool huge = false;
    for (int i = 0; i < k->nmeta; i++)
        if (__builtin_mul_overflow(total, (int64_t)k->nvalues[i], &total)) huge = true, total = INT64_MAX;
    if (huge || total > MAX_CONFIGS) {
        char count[32];
        if (huge) snprintf(count, sizeof count, "more than %lld", (long long)INT64_MAX);
        else snprintf(count, sizeof count, "%lld", (long long)total);
        diag_error(d, k->def->loc, "kernel '%s' has %s configs, more than the %d phc compiles; "
                   "give @%s.autotune fewer values", k->def->name, count, MAX_CONFIGS, alias);
        return;
    }
    int idx[MAX_META] = {0};
    int64_t config[MAX_META + 1] = {0};
    int nselected = 0;
    /* Lowering costs configs x statements: bound it before starting. */
    int64_t selected = 0;
    for (int64_t c = 0; c < total; c++) {
        for (int i = 0; i < k->nmeta; i++) config[i] = k->values[i][idx[i]];
        selected += config_selected(k, config, opt);
        for (int i = k->nmeta - 1; i >= 0; i--) {
            if (++idx[i] < k->nvalues[i]) break;
            idx[i] = 0;
        }
    }
    int64_t stmts = count_stmts(k->def->body, k->def->nbody);
    if (selected * stmts > MAX_LOWERED) {
        diag_error(d, k->def->loc, "kernel '%s' has %lld configs of %lld statements: %lld statements to lower, more than the %d "
                   "phc lowers for one kernel; select fewer configs with -D or give @%s.autotune fewer values",
                   k->def->name, (long long)selected, (long long)stmts, (long long)(selected * stmts), MAX_LOWERED, alias);
        return;
    }
    for (int64_t c = 0; c < total; c++) {
        for (int i = 0; i < k->nmeta; i++) config[i] = k->values[i][idx[i]];
        if (config_selected(k, config, opt)) {
            nselected++;
            IrFunc *f = lower_config(d, alias, k, config);
            ir_module_add(out, f);
        }
        for (int i = k->nmeta - 1; i >= 0; i--) {   /* the last name varies fastest */
            if (++idx[i] < k->nvalues[i]) break;
            idx[i] = 0;
        }
    }
    if (!nselected) {
        diag_error(d, k->def->loc, "the -D values select no config of kernel '%s'", k->def->name);
        d->noption_errors++;
    }
}

/* ---- the module ---- */
static bool kernel_decorator(const Expr *e, const char **ns)
{
    if (e->kind != EX_ATTR || !e->lhs || e->lhs->kind != EX_NAME || strcmp(e->name, "kernel")) return false;
    *ns = e->lhs->name;
    return true;
}

static void collect_kernels(const Module *m, Diag *d, const char **alias, KernelVec *ks)
{
    for (int i = 0; i < m->nitems; i++) {
        const Top *t = m->items[i];
        if (t->kind == TOP_STMT) {
            if (!is_string_stmt(t->stmt))
                diag_error(d, t->loc, "expected an import or a kernel at the top level, got %s",
                           t->stmt ? stmt_what(t->stmt) : "a statement");
            continue;
        }
        if (t->kind != TOP_DEF || !t->def) continue;
        const FuncDef *fd = t->def;
        const char *ns = NULL;
        bool marked = false;
        for (int j = 0; j < fd->ndecorators; j++) {
            const char *n;
            if (kernel_decorator(fd->decorators[j], &n) && (!*alias || !strcmp(n, *alias))) {
                if (j == 0) {
                    marked = true;
                    ns = n;
                } else {
                    diag_error(d, fd->decorators[j]->loc, "@%s.kernel must be the first decorator", n);
                    marked = true;
                }
            }
        }
        if (!marked) {
            diag_error(d, fd->loc, "'def %s' is not a kernel: a top-level def needs @%s.kernel as its first decorator",
                       fd->name, *alias ? *alias : "ph");
            continue;
        }
        if (!ns) continue;
        if (!*alias) {
            diag_error(d, fd->decorators[0]->loc, "'%s' is not imported; add 'import phobos.lang as %s'", ns, ns);
            *alias = ns;
        }
        bool dup = false;
        for (int j = 0; j < ks->len && !dup; j++)
            if (!strcmp(ks->data[j].def->name, fd->name)) {
                diag_error(d, fd->loc, "kernel '%s' is already defined at line %d", fd->name, ks->data[j].def->loc.line);
                dup = true;
            }
        if (dup) continue;
        Kernel k = {.def = fd, .ok = true};
        check_params(d, *alias, fd, &k);
        check_decorators(d, *alias, fd, &k);
        vec_push(ks, k);
    }
}

static bool kernel_selected(const Kernel *k, const SemaOptions *opt)
{
    return !opt->kernel || !strcmp(opt->kernel, k->def->name);
}

static void check_options(Diag *d, const Module *m, const KernelVec *ks, const SemaOptions *opt)
{
    Loc none = {0, 0};
    (void)m;
    if (opt->kernel) {
        bool found = false;
        for (int i = 0; i < ks->len; i++) found |= kernel_selected(&ks->data[i], opt);
        if (!found) {
            diag_error(d, none, "no kernel named '%s'", opt->kernel);
            d->noption_errors++;
        }
    }
    for (int j = 0; j < opt->ndefines; j++) {
        bool found = false;
        for (int i = 0; i < ks->len; i++)
            found |= kernel_selected(&ks->data[i], opt) && meta_index(&ks->data[i], opt->define_names[j]) >= 0;
        if (!found) {
            diag_error(d, none, "-D %s=%lld: no selected kernel has a meta-parameter named '%s'",
                       opt->define_names[j], (long long)opt->define_values[j], opt->define_names[j]);
            d->noption_errors++;
        }
    }
}

IrModule *sema(const Module *m, Diag *d, const SemaOptions *opt)
{
    static const SemaOptions no_options;
    if (!opt) opt = &no_options;
    int errors0 = d->nerrors;
    const char *alias = check_imports(m, d);
    KernelVec ks = {0};
    collect_kernels(m, d, &alias, &ks);
    check_options(d, m, &ks, opt);
    IrModule *out = ir_module_new();
    for (int i = 0; i < ks.len; i++)
        if (ks.data[i].ok && kernel_selected(&ks.data[i], opt)) lower_kernel(d, alias, &ks.data[i], opt, out);
    for (int i = 0; i < ks.len; i++) kernel_free(&ks.data[i]);
    free(ks.data);
    if (d->nerrors > errors0) {
        ir_module_free(out);
        return NULL;
    }
    return out;
}
