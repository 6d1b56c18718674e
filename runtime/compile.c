/* compile.c: ph_compile, a module's PTX or LLVM IR as text, ahead of time,
 * for a host that keeps or loads the code itself: phobos.h's options checked
 * and handed to the pipeline (compiler/driver), which phc runs too. */
#include "phobos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "driver/driver.h"
#include "driver/targets.h"
#include "runtime_internal.h"

int ph_internal_opt_level(void)
{
    const char *v = getenv("PHOBOS_OPT");
    if (v && !strcasecmp(v, "O0")) return CODEGEN_OPT_NONE;
    if (v && !strcasecmp(v, "O3")) return CODEGEN_OPT_FULL;
    return CODEGEN_OPT_DEFAULT;
}

bool ph_internal_time_asked(void)
{
    const char *v = getenv("PHOBOS_TIME_COMPILE");
    return v && *v && strcmp(v, "0");
}

/* The program's errors, when it has some, are the message; else the driver's. */
static ph_status compile_module(const char *name, const char *source, const SemaOptions *sema, const char *arch,
                                const CodegenOptions *cg, CgEmit emit, char **text)
{
    char *diags = NULL, err[1024];
    size_t len = 0;
    FILE *msgs = open_memstream(&diags, &len);
    if (!msgs) return ph_internal_fail(PH_ERR_COMPILE, "out of memory");
    int failed = driver_compile(name, source, sema, arch, cg, emit, ph_internal_time_asked(), msgs, text, err, sizeof err);
    fclose(msgs);
    ph_status s = failed ? ph_internal_fail(PH_ERR_COMPILE, diags && *diags ? diags : err) : PH_OK;
    free(diags);
    return s;
}

ph_status ph_compile(const char *name, const char *source, const ph_compile_options *opt, char **text)
{
    static const ph_compile_options defaults;
    if (!source || !text) return ph_internal_fail(PH_ERR_INVALID, "null source or text pointer");
    *text = NULL;
    if (!opt) opt = &defaults;
    const char *arch = opt->arch ? opt->arch : target_default();
    if (!target_find(arch)) {
        char msg[256];
        snprintf(msg, sizeof msg, "unknown arch (%s)", target_names());
        return ph_internal_fail(PH_ERR_INVALID, msg);
    }
    if (opt->emit != PH_EMIT_PTX && opt->emit != PH_EMIT_LLVM) return ph_internal_fail(PH_ERR_INVALID, "unknown emit kind");
    if (opt->ndefines < 0 || (opt->ndefines && (!opt->define_names || !opt->define_values)))
        return ph_internal_fail(PH_ERR_INVALID, "ndefines without define_names and define_values");
    if (opt->opt_level != 0 && opt->opt_level != 2 && opt->opt_level != 3)
        return ph_internal_fail(PH_ERR_INVALID, "unknown opt_level (0 or 2: the default, 3: LLVM's full pipeline)");
    SemaOptions sema = {opt->kernel, opt->ndefines, (const char **)opt->define_names, opt->define_values};
    int level = opt->no_opt ? CODEGEN_OPT_NONE : opt->opt_level == 3 ? CODEGEN_OPT_FULL : CODEGEN_OPT_DEFAULT;
    CodegenOptions cg = {.opt_level = level, .lineinfo = opt->lineinfo != 0, .source = name};
    return compile_module(name ? name : "<string>", source, &sema, arch, &cg, opt->emit == PH_EMIT_LLVM ? CG_EMIT_LLVM : CG_EMIT_PTX, text);
}
