/* frontend.c: the whole front half in one call, for phc, host programs and
 * tests: load, parse, check and lower, then the IR pass pipeline. */
#include "dsl.h"

#include <string.h>

static IrModule *compile(SrcFile *src, const SemaOptions *opt, FILE *diag_out)
{
    static const SemaOptions none;
    Diag d;
    diag_init(&d, src, diag_out);
    Arena *a = arena_new();
    Module *m = parse(src, &d, a);
    IrModule *ir = d.nerrors ? NULL : sema(m, &d, opt ? opt : &none);
    arena_free(a);
    diag_free(&d);
    if (!ir) return NULL;
    char err[512];
    for (int i = 0; i < ir->nfuncs; i++) {
        if (ir_run_passes(ir->funcs[i], true, NULL, NULL, err, sizeof err)) {
            if (diag_out) fprintf(diag_out, "%s: internal error: %s\n", src->path, err);
            ir_module_free(ir);
            return NULL;
        }
    }
    return ir;
}

IrModule *ph_compile_file(const char *path, const SemaOptions *opt, FILE *diag_out)
{
    SrcFile src;
    char err[512];
    if (src_load(&src, path, err, sizeof err)) {
        if (diag_out) fprintf(diag_out, "phc: %s\n", err);
        return NULL;
    }
    IrModule *m = compile(&src, opt, diag_out);
    src_free(&src);
    return m;
}

IrModule *ph_compile_string(const char *name, const char *text, const SemaOptions *opt, FILE *diag_out)
{
    SrcFile src;
    src_from_string(&src, name, text);
    IrModule *m = compile(&src, opt, diag_out);
    src_free(&src);
    return m;
}

IrFunc *ph_find_kernel(const IrModule *m, const char *kernel)
{
    for (int i = 0; m && i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, kernel)) return m->funcs[i];
    return NULL;
}
