/* driver.c: the CUDA driver, through dlopen of libcuda.so.1, so that the
 * library loads (and its interpreter runs) on a machine without one; or
 * the fakes a test stands in for it. */
#define _GNU_SOURCE
#include "driver.h"

#include <dlfcn.h>
#include <string.h>

#include "error.h"

static PhDriver cu;
static bool cu_loaded;

const PhDriver *ph_internal_driver(void) { return &cu; }

void ph_internal_use_driver(const PhDriver *fake)
{
    cu = *fake;
    cu_loaded = true;
}

ph_status ph_internal_cuda_fail(CUresult r, const char *what)
{
    const char *msg = NULL;
    if (cu.GetErrorString) cu.GetErrorString(r, &msg);
    if (r == PH_CUDA_ERROR_ASSERT)   /* ph.device_assert: __assertfail printed where, then trapped */
        return ph_internal_failf(PH_ERR_CUDA, "%s failed: a device assert failed (ph.device_assert; CUDA error %d, %s): the "
                                 "GPU printed the assert's file, line and message to stdout; the CUDA context is unusable "
                                 "from now on (every later call fails): end the process", what, r, msg ? msg : "unknown");
    return ph_internal_failf(PH_ERR_CUDA, "%s failed: CUDA error %d (%s)", what, r, msg ? msg : "unknown");
}

ph_status ph_internal_cuda_status(CUresult r, const char *what) { return r ? ph_internal_cuda_fail(r, what) : PH_OK; }

bool ph_internal_load_driver(void)
{
    if (cu_loaded) return true;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
#define SYM(field, name) if (!(*(void **)&cu.field = dlsym(lib, name))) { dlclose(lib); memset(&cu, 0, sizeof cu); return false; }
    SYM(Init, "cuInit") SYM(DeviceGetCount, "cuDeviceGetCount") SYM(DeviceGet, "cuDeviceGet")
    SYM(DeviceGetName, "cuDeviceGetName") SYM(DeviceGetAttribute, "cuDeviceGetAttribute")
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
    SYM(CtxSetCurrent, "cuCtxSetCurrent") SYM(CtxGetCurrent, "cuCtxGetCurrent") SYM(CtxSynchronize, "cuCtxSynchronize")
    SYM(ModuleLoadDataEx, "cuModuleLoadDataEx") SYM(ModuleUnload, "cuModuleUnload")
    SYM(ModuleGetFunction, "cuModuleGetFunction") SYM(FuncSetAttribute, "cuFuncSetAttribute")
    SYM(FuncGetAttribute, "cuFuncGetAttribute")
    SYM(LaunchKernel, "cuLaunchKernel")
    SYM(MemAlloc, "cuMemAlloc_v2") SYM(MemFree, "cuMemFree_v2") SYM(MemcpyHtoD, "cuMemcpyHtoD_v2")
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2") SYM(MemcpyDtoD, "cuMemcpyDtoD_v2") SYM(MemsetD8, "cuMemsetD8_v2")
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") SYM(MemsetD8Async, "cuMemsetD8Async")
    SYM(EventCreate, "cuEventCreate")
    SYM(EventRecord, "cuEventRecord") SYM(EventSynchronize, "cuEventSynchronize")
    SYM(EventDestroy, "cuEventDestroy_v2") SYM(GetErrorString, "cuGetErrorString")
#undef SYM
    *(void **)&cu.EventElapsedTime = dlsym(lib, "cuEventElapsedTime_v2");
    if (!cu.EventElapsedTime) *(void **)&cu.EventElapsedTime = dlsym(lib, "cuEventElapsedTime");
    if (!cu.EventElapsedTime) { dlclose(lib); memset(&cu, 0, sizeof cu); return false; }
    *(void **)&cu.TensorMapEncodeTiled = dlsym(lib, "cuTensorMapEncodeTiled");   /* optional: copies go without it */
    cu_loaded = true;   /* lib stays open for the life of the process */
    return true;
}
