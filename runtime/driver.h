/* driver.h: the CUDA driver API as the runtime calls it, declared here so
 * that no CUDA header is needed: its types, and the table of its calls,
 * from libcuda.so.1 (dlopen'ed by driver.c) or a test's fakes. */
#ifndef PHOBOS_DRIVER_H
#define PHOBOS_DRIVER_H

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
    ATTR_SM_COUNT = 16, ATTR_L2_CACHE_SIZE = 38, ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76,
    ATTR_MAX_SHARED_PER_BLOCK_OPTIN = 97,
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
    CUresult (*CtxGetCurrent)(CUcontext *);
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
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* cuTensorMapEncodeTiled (CUDA 12.0 and later; NULL before): map,
     * data type, rank, address, dims, strides in bytes, box, element
     * strides, interleave, swizzle, L2 promotion, out-of-bounds fill */
    CUresult (*TensorMapEncodeTiled)(void *, int, unsigned, void *, const unsigned long long *, const unsigned long long *,
                                     const unsigned *, const unsigned *, int, int, int, int);
} PhDriver;

/* From now on the runtime calls these instead of libcuda.so.1 (every
 * field set); ph_init then initializes through them. For tests. */
void ph_internal_use_driver(const PhDriver *fake);

/* Loads libcuda.so.1's calls, once (true), unless a test gave its own. */
bool ph_internal_load_driver(void);
/* The driver's calls (every field set once ph_internal_load_driver is true). */
const PhDriver *ph_internal_driver(void);
/* PH_ERR_CUDA, with the driver's words for r, and what failed. */
ph_status ph_internal_cuda_fail(CUresult r, const char *what);
/* CUDA_ERROR_ASSERT: a kernel called __assertfail (ph.device_assert) */
enum { PH_CUDA_ERROR_ASSERT = 710 };
/* PH_OK for r == 0, else as ph_internal_cuda_fail. */
ph_status ph_internal_cuda_status(CUresult r, const char *what);

#endif
