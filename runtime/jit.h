/* jit.h: a config's PTX to the driver, on its own (jit.c): assembled by
 * ptxas or the driver's JIT, loaded, or refused and out of its kernel's
 * eligible set with the reason; and what a loaded config uses. */
#ifndef PHOBOS_JIT_H
#define PHOBOS_JIT_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "module.h"

/* What the driver's JIT made of one config's PTX. */
typedef struct {
    bool done;           /* ph_internal_jit_ptx ran */
    int64_t shared;      /* the dynamic shared memory the PTX asks for */
    int ndescs;          /* the bulk copy descriptors it asks for */
    CodegenCopyDesc descs[CODEGEN_MAX_COPY_DESCS];
    bool too_big;        /* more than a block of the device may have: not given to the driver */
    CUresult r;          /* the driver's answer; mod is the module when 0 */
    CUmodule mod;
    char info[8192], elog[8192];   /* its logs; the verbose info log is ptxas -v's report (spills) */
} Jit;

/* Loads the PTX of entry `name` in d's context: a cubin from ptxas when
 * there is one, else through the driver's JIT. It touches no state of
 * the runtime's, so several threads may assemble configs at once; the
 * calling thread's context is as it was after. */
void ph_internal_jit_ptx(const Device *d, const char *name, const char *ptx, Jit *j);

/* Config c (not loaded yet) takes what the JIT made of its PTX: loaded,
 * or, where the PTX asks for too much shared memory or the driver
 * refused it, out of the eligible set (PH_ERR_MODULE). */
ph_status ph_internal_config_take_jit(ph_module *m, int c, const Jit *j);

/* Config c's PTX goes to the driver on its own, the first time a launch
 * needs it. PH_ERR_MODULE: the driver refused it (now or before). */
ph_status ph_internal_config_load(ph_module *m, int c);

/* Loaded config c's figures, from the driver (cuFuncGetAttribute). */
ph_status ph_internal_config_stats(ph_module *m, int c, ph_stats *out);

#endif
