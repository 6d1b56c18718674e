/* sema.c: semantic analysis and lowering to tile IR, the top level. Checks
 * the module's imports and kernels (each kernel's header: sema_kernel.c),
 * then, for every config of a kernel's @ph.autotune product that the
 * options select, checks the body with the meta-parameters bound
 * (sema_stmt.c) and builds one IrFunc. */
#include "sema.h"

#include <stdlib.h>
#include <string.h>

typedef VEC(Kernel) KernelVec;
typedef VEC(const FuncDef *) HelperVec;

/* ---- the top level ---- */
static const char *stmt_what(const Stmt *st)
{
    switch (st->kind) {
    case ST_EXPR: return "an expression";
    case ST_ASSIGN: case ST_AUGASSIGN: return "an assignment";
    case ST_DECL: return "a declaration";
    case ST_FOR: return "a for loop";
    case ST_IF: return "an if statement";
    case ST_WHILE: return "a while loop";
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
        for (int a = 0; a < IR_MAX_RANK; a++) f->params[i].dim_name[a] = adup(f, k->params[i].dim_name[a]);
    }
    f->nmeta = k->nmeta;
    f->meta = arena_alloc(f->arena, sizeof *f->meta * (size_t)(k->nmeta + 1));
    for (int i = 0; i < k->nmeta; i++) f->meta[i] = (IrMeta){adup(f, k->meta_name[i]), config[i]};
    f->naligned = k->naligned;
    f->aligned = arena_alloc(f->arena, sizeof *f->aligned * (size_t)(k->naligned + 1));
    for (int i = 0; i < k->naligned; i++)
        f->aligned[i] = (IrAligned){adup(f, k->aligned[i].dim), adup(f, k->aligned[i].meta),
                                    config[sema_meta_index(k, k->aligned[i].meta)]};
}

/* A header decorator's argument in this config: the literal (-1 where it
 * overflowed) or the meta-parameter's value. */
static int64_t header_value(const Kernel *k, const Expr *e, const int64_t *config)
{
    if (e->kind == EX_INT) return e->overflow ? -1 : e->ival;
    return config[sema_meta_index(k, e->name)];
}

/* Per-config checks of the header: the launch size, specialized dims, aligned values. */
static void check_config(Sema *s, const Kernel *k, const int64_t *config)
{
    IrFunc *f = s->f;
    if (k->launch) {
        int64_t t = header_value(k, k->launch, config);
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
        int64_t n = header_value(k, k->stages, config);
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
    if (k->warp_specialize) {
        int64_t w = header_value(k, k->warp_specialize, config);
        if (w < 0 || w > 2)
            sema_err(s, k->warp_specialize->loc,
                     "@%s.warp_specialize needs 0 (off), 1 (a producer warpgroup) or 2 (and the warpgroups computing take turns), got %lld",
                     s->alias, (long long)w);
        else f->producer_threads = w ? IR_PRODUCER_THREADS : 0, f->turns = w == 2;
    }
    if (k->occupancy) {
        int64_t n = header_value(k, k->occupancy, config);
        if (n < 1 || n > MAX_OCCUPANCY)
            sema_err(s, k->occupancy->loc, "@%s.occupancy needs a block count from 1 to %d, got %lld", s->alias, MAX_OCCUPANCY,
                     (long long)n);
        else f->occupancy = (int)n;
    }
    for (int i = 0; i < k->nmeta; i++)
        if (sema_is_dim_name(k, k->meta_name[i]) && (config[i] < 1 || config[i] > INT32_MAX))
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
    sema_declare(&s, alias, SYM_ALIAS, (Val){.dt = DT_VOID});
    for (int i = 0; i < k->nmeta; i++)
        sema_declare(&s, k->meta_name[i], SYM_META, (Val){.dt = DT_I32, .weak = true, .ival = config[i]});
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
    sema_lower_block(&s, k->def->body, k->def->nbody);
    if (!f->body->nops || f->body->ops[f->body->nops - 1]->kind != OP_RETURN)
        ir_emit(f, f->body, OP_RETURN, 0, NULL, 0, NULL)->loc = f->loc;
    free(s.syms.data);
    return f;
}

static bool config_selected(const Kernel *k, const int64_t *config, const SemaOptions *opt)
{
    for (int i = 0; i < opt->ndefines; i++) {
        int m = sema_meta_index(k, opt->define_names[i]);
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

/* Whether config is an element of product p. */
static bool in_product(const Kernel *k, int p, const int64_t *config)
{
    for (int i = 0; i < k->nmeta; i++) {
        bool found = false;
        for (int j = 0; j < k->nvalues[p][i] && !found; j++) found = k->values[p][i][j] == config[i];
        if (!found) return false;
    }
    return true;
}

/* Calls visit(config) for each config of the kernel's products in order
 * (the last name varying fastest within each); a config already in an
 * earlier product is reported once, by its config, and stops the walk
 * (false). */
typedef void (*ConfigVisit)(const int64_t *config, void *ctx);

static bool each_config(Diag *d, const char *alias, const Kernel *k, ConfigVisit visit, void *ctx)
{
    int nproducts = k->nproducts ? k->nproducts : 1;
    for (int p = 0; p < nproducts; p++) {
        int idx[MAX_META] = {0};
        int64_t config[MAX_META + 1] = {0};
        for (bool more = true; more;) {
            for (int i = 0; i < k->nmeta; i++) config[i] = k->values[p][i][idx[i]];
            for (int q = 0; q < p; q++)
                if (in_product(k, q, config)) {
                    diag_error(d, k->def->loc, "kernel '%s': a config is in two @%s.autotune products (%s = %lld, ...)",
                               k->def->name, alias, k->meta_name[0], (long long)config[0]);
                    return false;
                }
            visit(config, ctx);
            more = false;
            for (int i = k->nmeta - 1; i >= 0 && !more; i--) {
                more = ++idx[i] < k->nvalues[p][i];
                if (!more) idx[i] = 0;
            }
        }
    }
    return true;
}

typedef struct {
    const Kernel *k;
    const SemaOptions *opt;
    Diag *d;
    const char *alias;
    int64_t selected;
    IrModule *out;      /* NULL: count only */
} Lowering;

static void count_or_lower(const int64_t *config, void *ctx)
{
    Lowering *l = ctx;
    if (!config_selected(l->k, config, l->opt)) return;
    l->selected++;
    if (l->out) ir_module_add(l->out, lower_config(l->d, l->alias, l->k, config));
}

static void lower_kernel(Diag *d, const char *alias, const Kernel *k, const SemaOptions *opt, IrModule *out)
{
    /* The configs are counted first (saturating), so the message says how
     * far over the limit they are; nothing is lowered then. */
    int64_t total = 0;
    bool huge = false;
    for (int p = 0; p < (k->nproducts ? k->nproducts : 1); p++) {
        int64_t size = 1;
        for (int i = 0; i < k->nmeta; i++)
            if (__builtin_mul_overflow(size, (int64_t)k->nvalues[p][i], &size)) huge = true, size = INT64_MAX;
        if (__builtin_add_overflow(total, size, &total)) huge = true, total = INT64_MAX;
    }
    if (huge || total > MAX_CONFIGS) {
        char count[32];
        if (huge) snprintf(count, sizeof count, "more than %lld", (long long)INT64_MAX);
        else snprintf(count, sizeof count, "%lld", (long long)total);
        diag_error(d, k->def->loc, "kernel '%s' has %s configs, more than the %d phc compiles; "
                   "give @%s.autotune fewer values", k->def->name, count, MAX_CONFIGS, alias);
        return;
    }
    /* Lowering costs configs x statements: bound it before starting. */
    Lowering l = {k, opt, d, alias, 0, NULL};
    if (!each_config(d, alias, k, count_or_lower, &l)) return;
    int64_t stmts = count_stmts(k->def->body, k->def->nbody);
    if (l.selected * stmts > MAX_LOWERED) {
        diag_error(d, k->def->loc, "kernel '%s' has %lld configs of %lld statements: %lld statements to lower, more than the %d "
                   "phc lowers for one kernel; select fewer configs with -D or give @%s.autotune fewer values",
                   k->def->name, (long long)l.selected, (long long)stmts, (long long)(l.selected * stmts), MAX_LOWERED, alias);
        return;
    }
    if (!l.selected) {
        diag_error(d, k->def->loc, "the -D values select no config of kernel '%s'", k->def->name);
        d->noption_errors++;
        return;
    }
    l.out = out;
    each_config(d, alias, k, count_or_lower, &l);
}

/* ---- the module ---- */
static bool kernel_decorator(const Expr *e, const char **ns)
{
    if (e->kind != EX_ATTR || !e->lhs || e->lhs->kind != EX_NAME || strcmp(e->name, "kernel")) return false;
    *ns = e->lhs->name;
    return true;
}

/* @ALIAS.func as a def's first decorator: a helper, inlined where called (sema_func.c). */
static bool helper_decorator(const FuncDef *fd, const char *alias)
{
    const Expr *e = fd->ndecorators ? fd->decorators[0] : NULL;
    return alias && e && e->kind == EX_ATTR && e->lhs && e->lhs->kind == EX_NAME && !strcmp(e->name, "func")
        && !strcmp(e->lhs->name, alias);
}

static void collect_helpers(const Module *m, Diag *d, const char *alias, HelperVec *hs)
{
    for (int i = 0; i < m->nitems; i++) {
        const Top *t = m->items[i];
        if (t->kind != TOP_DEF || !t->def || !helper_decorator(t->def, alias)) continue;
        const FuncDef *fd = t->def;
        bool dup = false;
        for (int j = 0; j < hs->len && !dup; j++)
            if (!strcmp(hs->data[j]->name, fd->name)) {
                diag_error(d, fd->loc, "helper '%s' is already defined at line %d", fd->name, hs->data[j]->loc.line);
                dup = true;
            }
        if (!dup && sema_check_helper(d, alias, fd)) vec_push(hs, fd);
    }
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
        if (t->kind != TOP_DEF || !t->def || helper_decorator(t->def, *alias)) continue;
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
        sema_check_params(d, *alias, fd, &k);
        sema_check_decorators(d, *alias, fd, &k);
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
            found |= kernel_selected(&ks->data[i], opt) && sema_meta_index(&ks->data[i], opt->define_names[j]) >= 0;
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
    HelperVec hs = {0};
    collect_helpers(m, d, alias, &hs);
    collect_kernels(m, d, &alias, &ks);
    for (int i = 0; i < ks.len; i++) {
        ks.data[i].helpers = hs.data;
        ks.data[i].nhelpers = hs.len;
    }
    check_options(d, m, &ks, opt);
    IrModule *out = ir_module_new();
    for (int i = 0; i < ks.len; i++)
        if (ks.data[i].ok && kernel_selected(&ks.data[i], opt)) lower_kernel(d, alias, &ks.data[i], opt, out);
    for (int i = 0; i < ks.len; i++) sema_kernel_free(&ks.data[i]);
    free(ks.data);
    free(hs.data);
    if (d->nerrors > errors0) {
        ir_module_free(out);
        return NULL;
    }
    return out;
}
