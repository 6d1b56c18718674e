/* difftest_gpu.c: the GPU as a difftest back end, through the runtime
 * (phobos.h): the module is compiled and loaded from its source, and each
 * config is launched by its entry name (no autotuning) on copies of the
 * host buffers. Every runtime status is checked and its message reported;
 * a CUDA error is taken as fatal, since a fault leaves the context
 * unusable. */
#include "difftest.h"
#include "phobos.h"

#include <string.h>

static ph_module *gpu_module;

static DtRunStatus failed(char *err, size_t errlen, ph_status s, const char *what, const char *name)
{
    snprintf(err, errlen, "%s %s: %s: %s", what, name, ph_status_name(s), ph_last_error());
    return s == PH_ERR_CUDA || s == PH_ERR_STATE || s == PH_ERR_NO_DRIVER || s == PH_ERR_NO_DEVICE ? DT_RUN_FATAL
                                                                                                    : DT_RUN_FAILED;
}

static DtRunStatus gpu_load(DtBackend *b, const char *source, const IrModule *m, char *err, size_t errlen)
{
    (void)b, (void)m;
    ph_status s = ph_init(0);
    if (s != PH_OK) return failed(err, errlen, s, "ph_init", "(device 0)");
    if ((s = ph_module_load_string("gpufuzz.ph", source, &gpu_module)) != PH_OK) {
        gpu_module = NULL;
        return failed(err, errlen, s, "ph_module_load_string", "gpufuzz.ph");
    }
    return DT_RUN_OK;
}

static void fixed_grid(const ph_meta *meta, void *user, unsigned grid[3])
{
    (void)meta;
    const int *g = user;
    for (int a = 0; a < 3; a++) grid[a] = (unsigned)g[a];
}

/* A rank-3/4 tensor is a view of all its elements (difftest.c's
 * view_strides: a permutation), so its bytes are its elements'. */
static size_t tensor_bytes(const IrParam *p, const IrArg *a)
{
    size_t n = (size_t)a->dims[0] * (p->rank >= 2 ? (size_t)a->dims[1] : 1);
    for (int d = 2; d < p->rank; d++) n *= (size_t)a->dims[d];
    return n * (size_t)ir_dtype_bytes(p->dt);
}

static DtRunStatus gpu_run(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err, size_t errlen)
{
    (void)b;
    ph_arg gargs[32];
    ph_devptr ptr[32] = {0};
    DtRunStatus st = DT_RUN_OK;
    ph_status s;
    ph_kernel *k;
    if (nargs > 32) {
        snprintf(err, errlen, "%s: more than 32 arguments", f->name);
        return DT_RUN_FAILED;
    }
    for (int i = 0; i < nargs && st == DT_RUN_OK; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            gargs[i] = p->dt == DT_I32 ? ph_i32(args[i].i) : p->dt == DT_I64 ? ph_i64(args[i].l) : ph_f32(args[i].f);
            continue;
        }
        size_t bytes = tensor_bytes(p, &args[i]);
        if ((s = ph_malloc(&ptr[i], bytes)) != PH_OK) st = failed(err, errlen, s, "ph_malloc for", p->name);
        else if ((s = ph_memcpy_htod(ptr[i], args[i].data, bytes)) != PH_OK) st = failed(err, errlen, s, "ph_memcpy_htod to", p->name);
        gargs[i] = p->rank > 2 ? ph_tensor_nd(ptr[i], PH_DTYPE_UNCHECKED, p->rank, args[i].dims, args[i].strides)
                 : p->rank == 2 ? ph_tensor2(ptr[i], args[i].dims[0], args[i].dims[1]) : ph_tensor1(ptr[i], args[i].dims[0]);
    }
    if (st == DT_RUN_OK && (s = ph_kernel_get(gpu_module, f->name, &k)) != PH_OK) st = failed(err, errlen, s, "ph_kernel_get", f->name);
    if (st == DT_RUN_OK && (s = ph_launch(k, fixed_grid, (void *)grid, gargs, nargs)) != PH_OK) st = failed(err, errlen, s, "ph_launch", f->name);
    if (st == DT_RUN_OK && (s = ph_synchronize()) != PH_OK) st = failed(err, errlen, s, "ph_synchronize after", f->name);
    for (int i = 0; i < nargs && st == DT_RUN_OK; i++)
        if (f->params[i].is_tensor && (s = ph_memcpy_dtoh(args[i].data, ptr[i], tensor_bytes(&f->params[i], &args[i]))) != PH_OK)
            st = failed(err, errlen, s, "ph_memcpy_dtoh from", f->params[i].name);
    for (int i = 0; i < nargs; i++)
        if (ptr[i] && (s = ph_free(ptr[i])) != PH_OK && st == DT_RUN_OK) st = failed(err, errlen, s, "ph_free of", f->params[i].name);
    return st;
}

static void gpu_unload(DtBackend *b)
{
    (void)b;
    ph_module_free(gpu_module);
    gpu_module = NULL;
}

DtBackend dt_gpu_backend = {"gpu", gpu_load, gpu_run, gpu_unload, NULL};
