/* sema_kernel.c: a kernel's header, checked once for all its configs: the
 * parameters (tensors with their dims and address space, scalars) and the
 * decorators (@ph.autotune, @ph.launch, @ph.stages, @ph.aligned, the
 * tune-reset markers). */
#include "sema.h"

#include <stdlib.h>
#include <string.h>

static int param_index(const Kernel *k, const char *name)
{
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].name && !strcmp(k->params[i].name, name)) return i;
    return -1;
}

int sema_meta_index(const Kernel *k, const char *name)
{
    for (int i = 0; i < k->nmeta; i++)
        if (!strcmp(k->meta_name[i], name)) return i;
    return -1;
}

bool sema_is_dim_name(const Kernel *k, const char *name)
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
        if (dt != DT_I32 && dt != DT_I64 && dt != DT_F32) {
            /* the message as it was before i64 (make ptx-identical hashes diagnostics) */
            diag_error(d, a->loc, "scalar parameters are %s.i32 or %s.f32, got %s", alias, alias, ir_dtype_name(dt));
            return false;
        }
        out->dt = dt;
        return true;
    }
    if (a->kind != EX_INDEX || !a->lhs || a->lhs->kind != EX_INDEX || !sema_is_ns(alias, a->lhs->lhs, "tensor")) {
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
    if (n < 1 || n > IR_MAX_RANK) {
        diag_error(d, a->loc, "tensor '%s' must have rank 1 to 4, got %d dimensions", p->name, n);
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

void sema_check_params(Diag *d, const char *alias, const FuncDef *fd, Kernel *k)
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

/* The values of one meta-parameter: a non-empty list of distinct i32
 * literals, or NULL after an error. */
static int64_t *autotune_values(Diag *d, const Expr *kw, int *n)
{
    const Expr *list = kw->lhs;
    if (!list || list->kind != EX_LIST || list->nitems == 0) {
        diag_error(d, list ? list->loc : kw->loc, "meta-parameter '%s' needs a non-empty list of integers", kw->name);
        return NULL;
    }
    int64_t *vals = xcalloc((size_t)list->nitems, sizeof *vals);
    for (int j = 0; j < list->nitems; j++) {
        if (!int_literal(list->items[j], &vals[j])) {
            diag_error(d, list->items[j]->loc, "expected an i32 integer literal in the values of '%s'", kw->name);
            free(vals);
            return NULL;
        }
        for (int q = 0; q < j; q++)
            if (vals[q] == vals[j]) {
                diag_error(d, list->items[j]->loc, "value %lld of '%s' is listed twice", (long long)vals[j], kw->name);
                free(vals);
                return NULL;
            }
    }
    *n = list->nitems;
    return vals;
}

/* The first @ph.autotune names the meta-parameters and gives the first
 * product of their values; each later one (Triton's list of configs) gives
 * another product over the same names in the same order. */
static void check_autotune(Diag *d, const char *alias, const Expr *e, Kernel *k)
{
    if (e->kind != EX_CALL) {
        diag_error(d, e->loc, "@%s.autotune takes NAME=[values, ...] arguments", alias);
        return;
    }
    if (k->nproducts == MAX_PRODUCTS) {
        diag_error(d, e->loc, "at most %d @%s.autotune decorators are supported", MAX_PRODUCTS, alias);
        return;
    }
    int p = k->nproducts, named = 0;
    bool first = p == 0, ok = true;
    for (int i = 0; i < e->nitems; i++) {
        const Expr *kw = e->items[i];
        if (kw->kind != EX_KEYWORD) {
            diag_error(d, kw->loc, "@%s.autotune takes NAME=[values, ...] arguments", alias);
            ok = false;
            continue;
        }
        if (!first) {
            if (named == k->nmeta || strcmp(kw->name, k->meta_name[named])) {
                if (named == k->nmeta)
                    diag_error(d, kw->loc, "'%s' is not a meta-parameter of the first @%s.autotune: every @%s.autotune "
                               "names the same ones, in the same order", kw->name, alias, alias);
                else
                    diag_error(d, kw->loc, "expected '%s' here: every @%s.autotune names the first one's meta-parameters, "
                               "in its order", k->meta_name[named], alias);
                ok = false;
                break;
            }
            int64_t *vals = autotune_values(d, kw, &k->nvalues[p][named]);
            ok &= vals != NULL;
            k->values[p][named++] = vals;
            continue;
        }
        if (sema_meta_index(k, kw->name) >= 0) { diag_error(d, kw->loc, "meta-parameter '%s' is given twice", kw->name); continue; }
        if (param_index(k, kw->name) >= 0) { diag_error(d, kw->loc, "meta-parameter '%s' shadows a parameter", kw->name); continue; }
        if (!strcmp(kw->name, alias)) { diag_error(d, kw->loc, "meta-parameter '%s' shadows the namespace alias", kw->name); continue; }
        if (k->nmeta == MAX_META) { diag_error(d, kw->loc, "at most %d meta-parameters are supported", MAX_META); return; }
        int n = 0;
        int64_t *vals = autotune_values(d, kw, &n);
        if (!vals) continue;
        k->meta_name[k->nmeta] = kw->name;
        k->meta_loc[k->nmeta] = kw->loc;
        k->nvalues[0][k->nmeta] = n;
        k->values[0][k->nmeta++] = vals;
    }
    if (!first && ok && named < k->nmeta) {
        diag_error(d, e->loc, "this @%s.autotune lacks meta-parameter '%s' (every one names the first one's)", alias,
                   k->meta_name[named]);
        ok = false;
    }
    if (ok || first) k->nproducts++;
    else
        for (int i = 0; i < named; i++) free(k->values[p][i]);
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
        if (!sema_is_dim_name(k, kw->name)) {
            diag_error(d, kw->loc, "'%s' is not a dimension name of a tensor parameter", kw->name);
            continue;
        }
        if (sema_meta_index(k, kw->lhs->name) < 0) {
            diag_error(d, kw->lhs->loc, "'%s' is not a meta-parameter of this kernel", kw->lhs->name);
            continue;
        }
        k->aligned_loc[k->naligned] = kw->loc;
        k->aligned[k->naligned++] = (IrAligned){kw->name, kw->lhs->name, 0};
    }
}

/* Argument a of a decorator that takes parameter names as strings (@ph.WHAT,
 * naming TAKES): the parameter it names; NULL once the error is said (not
 * a string, not a parameter) or where the parameter's own type was wrong. */
static IrParam *named_param(Diag *d, const char *alias, const char *what, const char *takes, const Expr *a, Kernel *k)
{
    if (a->kind != EX_STRING) {
        diag_error(d, a->loc, "@%s.%s takes the names of %s, as strings", alias, what, takes);
        return NULL;
    }
    int p = param_index(k, a->name);
    if (p < 0) {
        diag_error(d, a->loc, "'%s' is not a parameter of this kernel", a->name);
        return NULL;
    }
    return k->params[p].dt == DT_VOID ? NULL : &k->params[p];   /* its type is wrong, and said so */
}

/* Whether e is a call with arguments, as such a decorator must be. */
static bool names_given(Diag *d, const char *alias, const char *what, const char *takes, const Expr *e)
{
    if (e->kind == EX_CALL && e->nitems > 0) return true;
    diag_error(d, e->loc, "@%s.%s takes the names of %s, as strings", alias, what, takes);
    return false;
}

/* @ph.autotune_restore("DQ", ...) and @ph.autotune_zero("DK", ...): the
 * tensor parameters the autotuner restores, or zeroes, before each run it
 * times and before the launch it keeps, for kernels that update them in
 * place. A tensor is named once, in one of the two. */
static void check_tune_reset(Diag *d, const char *alias, const Expr *e, Kernel *k, IrTuneReset how)
{
    const char *what = how == IR_TUNE_RESTORE ? "autotune_restore" : "autotune_zero", *takes = "tensor parameters";
    if (!names_given(d, alias, what, takes, e)) return;
    for (int i = 0; i < e->nitems; i++) {
        const Expr *a = e->items[i];
        IrParam *ip = named_param(d, alias, what, takes, a, k);
        if (!ip) continue;
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

/* @ph.autotune_key("causal", ...): integer scalar parameters whose values
 * join the tensors' dims in the autotuner's key, so each value gets a
 * tuning of its own (a flag that picks another loop, such as attention's
 * causal mask); other scalars never start a tuning. */
static void check_tune_key(Diag *d, const char *alias, const Expr *e, Kernel *k)
{
    const char *takes = "integer scalar parameters";
    if (!names_given(d, alias, "autotune_key", takes, e)) return;
    for (int i = 0; i < e->nitems; i++) {
        const Expr *a = e->items[i];
        IrParam *ip = named_param(d, alias, "autotune_key", takes, a, k);
        if (!ip) continue;
        if (ip->is_tensor)
            diag_error(d, a->loc, "'%s' is a tensor; its dims are always in the key; @%s.autotune_key names integer scalars", a->name, alias);
        else if (!ir_is_int(ip->dt))
            diag_error(d, a->loc, "'%s' is of type %s; @%s.autotune_key names integer scalars (each value of a float would tune again)",
                       a->name, ir_dtype_name(ip->dt), alias);
        else if (ip->tune_key)
            diag_error(d, a->loc, "'%s' is named twice in @%s.autotune_key", a->name, alias);
        else
            ip->tune_key = true;
    }
}

/* A decorator of one argument, an integer literal or a name (what: the
 * integer it takes): the argument, or NULL after an error. */
static const Expr *one_number(Diag *d, const char *alias, const Expr *e, const char *name, const char *what)
{
    if (e->kind == EX_CALL && e->nitems == 1 && (e->items[0]->kind == EX_INT || e->items[0]->kind == EX_NAME)) return e->items[0];
    diag_error(d, e->loc, "@%s.%s takes one argument: %s or a meta-parameter name", alias, name, what);
    return NULL;
}

/* arg, where it is a literal or names a meta-parameter of k; NULL after an error. */
static const Expr *a_meta_or_number(Diag *d, const char *alias, const Kernel *k, const Expr *arg, const char *name, const char *what)
{
    if (!arg || arg->kind != EX_NAME || sema_meta_index(k, arg->name) >= 0) return arg;
    diag_error(d, arg->loc, "'%s' is not a meta-parameter of this kernel; @%s.%s takes %s or a meta-parameter name", arg->name, alias,
               name, what);
    return NULL;
}

void sema_check_decorators(Diag *d, const char *alias, const FuncDef *fd, Kernel *k)
{
    static const char *const names[] = {"kernel", "tensorcore", "launch", "autotune", "aligned", "stages",
                                        "autotune_restore", "autotune_zero", "warp_specialize", "autotune_key", "occupancy"};
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
                       "@%s.stages, @%s.autotune_restore, @%s.autotune_zero, @%s.autotune_key, @%s.warp_specialize "
                       "or @%s.occupancy", alias, alias, alias, alias, alias, alias, alias, alias, alias, alias);
            continue;
        }
        if (which == 0) continue;   /* a second @ph.kernel: reported with the kernel */
        if (seen[which] && which != 3) {   /* @ph.autotune may repeat: one product each */
            diag_error(d, e->loc, "@%s.%s is given twice", alias, names[which]);
            continue;
        }
        seen[which] = true;
        switch (which) {
        case 1:
            if (e->kind == EX_CALL) diag_error(d, e->loc, "@%s.tensorcore takes no arguments", alias);
            else k->tensorcore = true;
            break;
        case 2: k->launch = one_number(d, alias, e, "launch", "a thread count"); break;
        case 3: check_autotune(d, alias, e, k); break;
        case 4: aligned = e; break;
        case 5: k->stages = one_number(d, alias, e, "stages", "a stage count"); break;
        case 6: check_tune_reset(d, alias, e, k, IR_TUNE_RESTORE); break;
        case 7: check_tune_reset(d, alias, e, k, IR_TUNE_ZERO); break;
        case 8: k->warp_specialize = one_number(d, alias, e, "warp_specialize", "0, 1, 2"); break;
        case 9: check_tune_key(d, alias, e, k); break;
        case 10: k->occupancy = one_number(d, alias, e, "occupancy", "a block count"); break;
        }
    }
    if (aligned) check_aligned(d, alias, aligned, k);
    k->launch = a_meta_or_number(d, alias, k, k->launch, "launch", "an integer");
    k->stages = a_meta_or_number(d, alias, k, k->stages, "stages", "an integer");
    k->warp_specialize = a_meta_or_number(d, alias, k, k->warp_specialize, "warp_specialize", "0, 1, 2");
    k->occupancy = a_meta_or_number(d, alias, k, k->occupancy, "occupancy", "an integer");
}

void sema_kernel_free(Kernel *k)
{
    free(k->params);
    for (int p = 0; p < k->nproducts; p++)
        for (int i = 0; i < k->nmeta; i++) free(k->values[p][i]);
    free(k->aligned);
    free(k->aligned_loc);
}

