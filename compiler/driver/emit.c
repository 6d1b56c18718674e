/* emit.c: the pipeline's last stage, tile IR to LLVM IR or PTX through the
 * code generator, and the whole pipeline as one call (driver.h). Built with
 * the code generator into libphobos.so, which exports driver_emit for phc. */
#include "driver/driver.h"
#include "driver/targets.h"

#include <stdlib.h>

void driver_print_times(const char *what, int configs, const CodegenTimes *t)
{
    double total = t->lower_ms + t->optimize_ms + t->backend_ms;
    char each[64] = "";
    if (configs > 1) snprintf(each, sizeof each, "; %d configs, %.1f ms a config", configs, total / configs);
    /* one write, so that lines of threads compiling at once stay whole */
    fprintf(stderr, "phobos: time: %s: %.1f ms CPU (lowering %.1f, LLVM pipeline %.1f, NVPTX back end %.1f)%s\n", what,
            total, t->lower_ms, t->optimize_ms, t->backend_ms, each);
}

int driver_emit(const IrModule *ir, const char *arch, const CodegenOptions *o, CgEmit what, const char *times_of, char **out,
                char *err, size_t errlen)
{
    CodegenOptions cg = *o;
    cg.target = target_find(arch);
    if (!cg.target) {
        snprintf(err, errlen, "unknown arch (%s)", target_names());
        return 1;
    }
    CodegenTimes times = {0};
    if (times_of) cg.times = &times;
    if (codegen_emit(ir, &cg, what, out, err, errlen)) return 1;
    if (times_of) driver_print_times(times_of, ir->nfuncs, &times);
    return 0;
}

int driver_compile(const char *name, const char *text, const SemaOptions *sema, const char *arch, const CodegenOptions *cg,
                   CgEmit what,
                   bool timed, FILE *diag_out, char **out, char *err, size_t errlen)
{
    IrModule *ir = driver_compile_string(name, text, sema, diag_out);
    if (!ir) {
        snprintf(err, errlen, "compilation failed");
        return 1;
    }
    int failed = driver_emit(ir, arch, cg, what, timed ? name : NULL, out, err, errlen);
    ir_module_free(ir);
    return failed;
}
