/* compile.c: ph_compile, a module's PTX or LLVM IR as text, ahead of time:
 * the front end, the IR passes and the code generator, as phc runs them,
 * for a host that keeps or loads the code itself (and for phc). */
#include "phobos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codegen/codegen.h"
#include "driver/targets.h"
#include "dsl.h"
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

void ph_internal_print_times(const char *what, int configs, const CodegenTimes *t)
{
    double total = t->lower_ms + t->optimize_ms + t->backend_ms;
    char each[64] = "";
    if (configs > 1) snprintf(each, sizeof each, "; %d configs, %.1f ms a config", configs, total / configs);
    /* one write, so that lines of threads compiling at once stay whole */
    fprintf(stderr, "phobos: time: %s: %.1f ms CPU (lowering %.1f, LLVM pipeline %.1f, NVPTX back end %.1f)%s\n", what,
            total, t->lower_ms, t->optimize_ms, t->backend_ms, each);
}

static ph_status compile_module(const char *name, const char *source, const SemaOptions *sema,
                                CodegenOptions *cg, CgEmit emit, char **text)
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
    CodegenTimes times = {0};
    if (ph_internal_time_asked()) cg->times = &times;
    if (codegen_emit(ir, cg, emit, text, err, sizeof err)) s = ph_internal_fail(PH_ERR_COMPILE, err);
    else if (cg->times) ph_internal_print_times(name, ir->nfuncs, &times);
    ir_module_free(ir);
    return s;
}

ph_status ph_compile(const char *name, const char *source, const ph_compile_options *opt, char **text)
{
    static const ph_compile_options defaults;
    if (!source || !text) return ph_internal_fail(PH_ERR_INVALID, "null source or text pointer");
    *text = NULL;
    if (!opt) opt = &defaults;
    const struct Target *target = target_find(opt->arch ? opt->arch : "sm_90");
    if (!target) {
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
    CodegenOptions cg = {.target = target, .opt_level = level, .lineinfo = opt->lineinfo != 0, .source = name};
    return compile_module(name ? name : "<string>", source, &sema, &cg, opt->emit == PH_EMIT_LLVM ? CG_EMIT_LLVM : CG_EMIT_PTX, text);
}
