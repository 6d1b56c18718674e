/* difftest_cpusim.c: the CPU executor of generated code (tests/cpusim) as a
 * difftest back end: the same LLVM IR the GPU gets, run on the host, so the
 * generator's programs check the code generator where there is no GPU.
 * PHOBOS_ARCH names the target it compiles for (sm_90a: wgmma and TMA). */
#include "cpusim.h"
#include "difftest.h"

#include <stdint.h>
#include <stdlib.h>

static DtRunStatus cpusim_backend_load(DtBackend *b, const char *source, const IrModule *m, char *err, size_t errlen)
{
    (void)source;
    cpusim *s;
    /* the target the GPU runtime would pick by the same variable; sm_90 (Ampere's instructions) by default */
    const char *arch = getenv("PHOBOS_ARCH");
    if (cpusim_load_arch(m, arch && *arch ? arch : "sm_90", &s, err, errlen) != PH_OK) return DT_RUN_FAILED;
    b->state = s;
    return DT_RUN_OK;
}

static DtRunStatus cpusim_backend_run(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err,
                                      size_t errlen)
{
    ph_arg *a = calloc((size_t)(nargs ? nargs : 1), sizeof *a);
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) a[i] = p->dt == DT_I32 ? ph_i32(args[i].i) : p->dt == DT_I64 ? ph_i64(args[i].l) : ph_f32(args[i].f);
        else if (p->rank > 2) a[i] = ph_tensor_nd((ph_devptr)(uintptr_t)args[i].data, PH_DTYPE_UNCHECKED, p->rank, args[i].dims, args[i].strides);
        else if (p->rank == 2) a[i] = ph_tensor2((ph_devptr)(uintptr_t)args[i].data, args[i].dims[0], args[i].dims[1]);
        else a[i] = ph_tensor1((ph_devptr)(uintptr_t)args[i].data, args[i].dims[0]);
    }
    unsigned g[3] = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
    ph_status st = cpusim_launch(b->state, f->name, g, a, nargs, err, errlen);
    free(a);
    return st == PH_OK ? DT_RUN_OK : DT_RUN_FAILED;
}

static void cpusim_backend_unload(DtBackend *b)
{
    cpusim_free(b->state);
    b->state = NULL;
}

DtBackend dt_cpusim_backend = {"cpusim", cpusim_backend_load, cpusim_backend_run, cpusim_backend_unload, NULL};
