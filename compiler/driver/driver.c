/* driver.c: the front half of the pipeline (driver.h), stage by stage and
 * as one call: source -> tokens -> AST -> tile IR -> IR passes. */
#include "driver/driver.h"

#include <string.h>

void driver_begin(Compilation *c, const SrcFile *src, FILE *diag_out)
{
    *c = (Compilation){.src = src, .arena = arena_new()};
    diag_init(&c->diag, src, diag_out);
}

void driver_end(Compilation *c)
{
    ir_module_free(c->ir);
    arena_free(c->arena);
    diag_free(&c->diag);
    *c = (Compilation){0};
}

Token *driver_lex(Compilation *c, int *ntokens)
{
    return lex(c->src, &c->diag, c->arena, ntokens);
}

bool driver_parse(Compilation *c)
{
    c->ast = parse(c->src, &c->diag, c->arena);
    return !c->diag.nerrors;
}

bool driver_lower(Compilation *c, const SemaOptions *opt)
{
    c->ir = sema(c->ast, &c->diag, opt);
    if (c->ir && !c->diag.nerrors) return true;
    ir_module_free(c->ir);
    c->ir = NULL;
    return false;
}

IrModule *driver_take_ir(Compilation *c)
{
    IrModule *ir = c->ir;
    c->ir = NULL;
    return ir;
}

/* "parse" is no pass: the functions are printed as lowered, before any. */
int driver_run_passes(IrModule *ir, const PassOptions *o, char *err, size_t errlen)
{
    bool dump_lowered = o->dump_after && !strcmp(o->dump_after, "parse");
    for (int i = 0; i < ir->nfuncs; i++) {
        if (dump_lowered) ir_print_func(o->dump, ir->funcs[i]);
        if (ir_run_passes(ir->funcs[i], o->verify, dump_lowered ? NULL : o->dump_after, o->dump, err, errlen))
            return o->dump_after && strstr(err, "unknown pass") ? DRIVER_UNKNOWN_PASS : DRIVER_PASS_FAILED;
    }
    return 0;
}

static IrModule *compile_front(const SrcFile *src, const SemaOptions *opt, FILE *diag_out)
{
    Compilation c;
    driver_begin(&c, src, diag_out);
    IrModule *ir = driver_parse(&c) && driver_lower(&c, opt) ? driver_take_ir(&c) : NULL;
    driver_end(&c);
    if (!ir) return NULL;
    char err[512];
    if (driver_run_passes(ir, &(PassOptions){.verify = true}, err, sizeof err)) {
        if (diag_out) fprintf(diag_out, "%s: internal error: %s\n", src->path, err);
        ir_module_free(ir);
        return NULL;
    }
    return ir;
}

IrModule *driver_compile_file(const char *path, const SemaOptions *opt, FILE *diag_out)
{
    SrcFile src;
    char err[512];
    if (src_load(&src, path, err, sizeof err)) {
        if (diag_out) fprintf(diag_out, "phc: %s\n", err);
        return NULL;
    }
    IrModule *m = compile_front(&src, opt, diag_out);
    src_free(&src);
    return m;
}

IrModule *driver_compile_string(const char *name, const char *text, const SemaOptions *opt, FILE *diag_out)
{
    SrcFile src;
    src_from_string(&src, name, text);
    IrModule *m = compile_front(&src, opt, diag_out);
    src_free(&src);
    return m;
}

IrFunc *driver_find_kernel(const IrModule *m, const char *kernel)
{
    for (int i = 0; m && i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, kernel)) return m->funcs[i];
    return NULL;
}
