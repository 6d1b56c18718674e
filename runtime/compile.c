/* compile.c: ph_compile, a module's PTX or LLVM IR as text, ahead of time:
 * the front end, the IR passes and the code generator, as phc runs them,
 * for a host that keeps or loads the code itself (and for phc). */
#include "phobos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "dsl.h"
#include "runtime_internal.h"

static ph_status compile_module(const char *name, const char *source, const SemaOptions *sema,
                                const CodegenOptions *cg, CgEmit emit, char **text)
{
    char *diags = NULL;
    size_t len = 0;
    FILE *msgs = open_memstream(&diags, &len);
    if (!msgs) return ph_internal_fail(PH_ERR_COMPILE, "out of memory");
    IrModule *ir = ph_compile_string(name, source, sema, msgs);
    fclose(msgs);
    ph_status s = PH_OK;
    if (!ir) s = ph_internal_fail(PH_ERR_COMPILE, diags && *diags ? diags : "compilation failed");
    free(diags);
    if (s != PH_OK) return s;
    char err[1024];
    if (codegen_emit(ir, cg, emit, text, err, sizeof err)) s = ph_internal_fail(PH_ERR_COMPILE, err);
    ir_module_free(ir);
    return s;
}

ph_status ph_compile(const char *name, const char *source, const ph_compile_options *opt, char **text)
{
    static const ph_compile_options defaults;
    if (!source || !text) return ph_internal_fail(PH_ERR_INVALID, "null source or text pointer");
    *text = NULL;
    if (!opt) opt = &defaults;
    const char *arch = opt->arch ? opt->arch : "sm_90";
    if (strcmp(arch, "sm_80") && strcmp(arch, "sm_90"))
        return ph_internal_fail(PH_ERR_INVALID, "unknown arch (sm_80, sm_90)");
    if (opt->emit != PH_EMIT_PTX && opt->emit != PH_EMIT_LLVM) return ph_internal_fail(PH_ERR_INVALID, "unknown emit kind");
    if (opt->ndefines < 0 || (opt->ndefines && (!opt->define_names || !opt->define_values)))
        return ph_internal_fail(PH_ERR_INVALID, "ndefines without define_names and define_values");
    SemaOptions sema = {opt->kernel, opt->ndefines, (const char **)opt->define_names, opt->define_values};
    CodegenOptions cg = {arch, opt->no_opt ? 0 : 3, opt->lineinfo != 0, name};
    return compile_module(name ? name : "<string>", source, &sema, &cg, opt->emit == PH_EMIT_LLVM ? CG_EMIT_LLVM : CG_EMIT_PTX, text);
}
