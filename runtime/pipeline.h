/* pipeline.h: what the runtime asks of the compiler, in two calls
 * (pipeline.c): a module's source to the IR of every config, and one
 * config's IR to PTX; and the code generator's settings from the
 * environment, which compile.c (ph_compile) reads too. Both calls are the
 * pipeline's own stages (compiler/driver): the front half, and the code
 * generation stage, one config at a time. */
#ifndef PHOBOS_PIPELINE_H
#define PHOBOS_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ir/ir.h"

/* The IR of a module's source: the file at path, or else source, named
 * name; NULL with its diagnostics written to msgs. */
IrModule *ph_internal_source_ir(const char *name, const char *source, const char *path, FILE *msgs);

/* Config f's PTX alone (*ptx malloc'd) for arch, through the pipeline
 * opt_level names (CODEGEN_OPT_*), with line information naming source
 * when lineinfo, what each step took added to *times when not NULL.
 * 0 on success; 1 with err filled. */
struct CodegenTimes;
int ph_internal_config_codegen(IrFunc *f, const char *arch, int opt_level, bool lineinfo, const char *source,
                               struct CodegenTimes *times, char **ptx, char *err, size_t errlen);

/* ---- compile.c ---- */

/* The pipeline the runtime's code generation runs (CODEGEN_OPT_*):
 * PHOBOS_OPT=O0, O2 or O3, else the default, O2. */
int ph_internal_opt_level(void);
/* Whether PHOBOS_TIME_COMPILE asks (any value but empty or 0) for the
 * code generator's time on stderr (the line is driver_print_times'). */
bool ph_internal_time_asked(void);

#endif
