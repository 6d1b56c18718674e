/* pipeline.c: the runtime's two calls into the compiler: the front end
 * for a module's source, the code generator for one config at a time
 * (each config is generated, cached and loaded on its own). */
#include "pipeline.h"

#include "codegen/codegen.h"
#include "driver/driver.h"

IrModule *ph_internal_source_ir(const char *name, const char *source, const char *path, FILE *msgs)
{
    return path ? driver_compile_file(path, NULL, msgs) : driver_compile_string(name, source, NULL, msgs);
}

int ph_internal_config_codegen(IrFunc *f, const char *arch, int opt_level, bool lineinfo, const char *source,
                               CodegenTimes *times, char **ptx, char *err, size_t errlen)
{
    IrModule one = {1, 1, &f};   /* this config alone */
    CodegenOptions o = {.opt_level = opt_level, .lineinfo = lineinfo, .source = source, .times = times};
    return driver_emit(&one, arch, &o, CG_EMIT_PTX, NULL, ptx, err, errlen) ? 1 : 0;
}
