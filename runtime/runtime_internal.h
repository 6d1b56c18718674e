/* runtime_internal.h: what the runtime's own tests reach that a host does
 * not: the CUDA driver's table of calls (so a test without a GPU can stand
 * fakes in for the driver) and the step from a config to its PTX, through
 * the disk cache. */
#ifndef PHOBOS_RUNTIME_INTERNAL_H
#define PHOBOS_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "phobos.h"

/* ---- the driver API, declared here so no CUDA header is needed ---- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

enum {
    ATTR_MAX_THREADS_PER_BLOCK = 1, ATTR_MAX_GRID_X = 5, ATTR_MAX_GRID_Y = 6, ATTR_MAX_GRID_Z = 7,
    ATTR_SM_COUNT = 16, ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76, ATTR_MAX_SHARED_PER_BLOCK_OPTIN = 97,
    FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0, FUNC_ATTR_SHARED_SIZE_BYTES = 1, FUNC_ATTR_LOCAL_SIZE_BYTES = 3,
    FUNC_ATTR_NUM_REGS = 4, FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    JIT_INFO_LOG = 3, JIT_INFO_LOG_SIZE = 4, JIT_ERROR_LOG = 5, JIT_ERROR_LOG_SIZE = 6, JIT_LOG_VERBOSE = 12,
    JIT_GENERATE_LINE_INFO = 13,
    CU_ERROR_INVALID_PTX = 218, CU_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
};

/* The driver calls the runtime makes, by their cu* names. */
typedef struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*FuncGetAttribute)(int *, int, CUfunction);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorString)(CUresult, const char **);
} PhDriver;

/* From now on the runtime calls these instead of libcuda.so.1 (every
 * field set); ph_init then initializes through them. For tests. */
void ph_internal_use_driver(const PhDriver *fake);

/* The PTX of config number `config` (an index into the module's configs,
 * in --list order) for arch ("sm_90"): from the disk cache when a run of
 * this build has generated it before, else generated and cached. It holds
 * that config's entry only. 0 on success (*ptx malloc'd; *from_cache says
 * which); 1 with err filled. */
int ph_internal_config_ptx(ph_module *m, int config, const char *arch, char **ptx, bool *from_cache, char *err, size_t errlen);

/* Sets the message ph_last_error() returns, and returns s: for the
 * runtime's files other than runtime.c. */
ph_status ph_internal_fail(ph_status s, const char *message);

#endif
