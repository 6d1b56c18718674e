/* runtime_internal.h: what the runtime's own tests reach that a host does
 * not: the CUDA driver's table of calls (so a test without a GPU can stand
 * fakes in for the driver), the step from a config to its PTX, through
 * the disk cache, and the autotuner's parts (autotune.c); and what the
 * runtime's files share. */
#ifndef PHOBOS_RUNTIME_INTERNAL_H
#define PHOBOS_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
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

/* The PTX of configs[0..n) (indices as ph_internal_config_ptx takes them),
 * generated on up to `threads` threads at once: what
 * ph_internal_config_ptx gives for configs[i] lands in ptx[i],
 * from_cache[i] and failed[i] (0 or 1), with its message in err[i], the
 * same whatever the number of threads. Needs no lock: it reads the module
 * and writes only these arrays (and the disk cache). */
enum { PH_CONFIG_ERR_BYTES = 2048 };
void ph_internal_configs_ptx(ph_module *m, const int *configs, int n, const char *arch, int threads, char **ptx,
                             bool *from_cache, int *failed, char (*err)[PH_CONFIG_ERR_BYTES]);

/* How many threads generate code at once: PHOBOS_COMPILE_THREADS, else
 * the online CPUs. */
int ph_internal_compile_threads(void);
/* Runs work(arg, i) for every i in [0, n) on up to `threads` threads, the
 * calling one among them, and returns when every call has (parallel.c). */
void ph_internal_parallel(int n, int threads, void (*work)(void *arg, int i), void *arg);
/* The same loop on up to `threads` threads of its own, started: the
 * calling thread is free, and takes each iteration once it has finished,
 * in the order they finish (ph_internal_parallel_next: each i in [0, n)
 * once, then -1; where no thread could be started it runs one itself).
 * ph_internal_parallel_end waits for the iterations still running or not
 * begun, whether taken or not, and frees the loop. */
typedef struct PhParallel PhParallel;
PhParallel *ph_internal_parallel_start(int n, int threads, void (*work)(void *arg, int i), void *arg);
int ph_internal_parallel_next(PhParallel *p);
void ph_internal_parallel_end(PhParallel *p);

/* The pipeline the runtime's code generation runs (CODEGEN_OPT_*):
 * PHOBOS_OPT=O0, O2 or O3, else the default, O2. */
int ph_internal_opt_level(void);
/* Whether PHOBOS_TIME_COMPILE asks (any value but empty or 0) for the
 * code generator's time on stderr; and that report's line: what was
 * generated, in how many configs, and where the time went. */
struct CodegenTimes;
bool ph_internal_time_asked(void);
void ph_internal_print_times(const char *what, int configs, const struct CodegenTimes *t);

/* Sets the message ph_last_error() returns, and returns s: for the
 * runtime's files other than runtime.c. */
ph_status ph_internal_fail(ph_status s, const char *message);

/* ---- what runtime.c lends the autotuner ---- */
typedef struct PhTuner PhTuner;
struct IrFunc;

const PhDriver *ph_internal_driver(void);
/* The device k's module runs on, its name, and the stream of k's launch in
 * progress (the autotuner's copies, flushes and events go there). */
CUdevice ph_internal_device(const ph_kernel *k);
const char *ph_internal_device_name(const ph_kernel *k);
CUstream ph_internal_stream(const ph_kernel *k);
/* PH_ERR_CUDA, with the driver's words for r, and what failed. */
ph_status ph_internal_cuda_fail(CUresult r, const char *what);
/* Launches config `config` of k (an index into k's configs) on grid g. */
ph_status ph_internal_launch(ph_kernel *k, int config, const unsigned g[3], const ph_arg *args);
PhTuner *ph_internal_tuner(const ph_kernel *k);
/* The disk cache's folder (created), as the PTX cache names it; false when
 * the cache is off (PHOBOS_CACHE_DIR empty or "off") or there is no home. */
bool ph_internal_cache_folder(char *folder, size_t n);

/* ---- the autotuner (autotune.c) ---- */

/* A config is timed by PH_TUNE_WARMUPS untimed launches, then the median
 * of PH_TUNE_RUNS launches timed with CUDA events; one whose first timed
 * run takes over PH_TUNE_PRUNE times the best median so far stops there
 * (it cannot win). Once every config is timed, those whose median is
 * within PH_TUNE_CLOSE_PERCENT of the best, the PH_TUNE_RETIMED fastest of
 * them, are timed again when there are two or more, and their second
 * medians decide. */
enum { PH_TUNE_WARMUPS = 1, PH_TUNE_RUNS = 7, PH_TUNE_PRUNE = 2, PH_TUNE_CLOSE_PERCENT = 15, PH_TUNE_RETIMED = 3 };

/* The autotuner of a kernel of count configs (configs[0] its first, the
 * IR's: they outlive it), from a module whose source hashes to source_key
 * (0: its winners are not kept on disk). */
PhTuner *ph_internal_tuner_new(struct IrFunc *const *configs, int count, uint64_t source_key);
void ph_internal_tuner_free(PhTuner *t);

/* Which of the eligible configs (ne > 1: indices into k's configs, each
 * loaded, their grids in grids[]) a launch of k with args runs: *pick is
 * an index into eligible[]. Off: the first; else the winner known for
 * these dims, in memory or on disk; else each one timed and the fastest
 * kept. The tensors named to restore or zero are as the caller gave them
 * when it returns, ready for the launch. */
ph_status ph_internal_autotune(PhTuner *t, ph_kernel *k, const int *eligible, unsigned (*grids)[3], int ne,
                               const ph_arg *args, int nargs, int *pick);

/* Where a tuning takes its configs, one at a time, as they become ready:
 * in *i an index into eligible[] of a config loaded by now, each once, or
 * -1 when none is left. A failure ends the tuning with its status. */
typedef ph_status (*PhNextConfig)(void *ctx, int *i);

/* A tuning of the configs next gives, each timed as it comes, the winner
 * kept as ph_internal_autotune keeps it: for a first launch, whose
 * configs are still being compiled when the first are timed. The caller
 * knows no winner for these arguments. *pick: the winner's index into
 * eligible[] (ne of them, their grids in grids[]), -1 when next gave none. */
ph_status ph_internal_autotune_as_ready(PhTuner *t, ph_kernel *k, const int *eligible, unsigned (*grids)[3], int ne,
                                        const ph_arg *args, int nargs, PhNextConfig next, void *ctx, int *pick);

/* Whether the winner for a launch of k with args is known already, in
 * memory or on disk, and eligible: its index into eligible[] in *pick.
 * The launch then loads that config alone. */
bool ph_internal_autotune_known(PhTuner *t, ph_kernel *k, const int *eligible, int ne, const ph_arg *args, int nargs, int *pick);

/* Whether autotuning is on: as ph_set_autotune set it, else as
 * PHOBOS_AUTOTUNE says (on when unset). */
bool ph_internal_autotune_enabled(void);
/* An environment switch's value: "0", "off", "no", "false" are false;
 * "1", "on", "yes", "true" true (any case); anything else, or NULL, dflt. */
bool ph_internal_env_switch(const char *value, bool dflt);
/* Where the progress lines go (NULL: stderr). For tests. */
void ph_internal_autotune_log(FILE *out);

/* The library's build: its version and its GNU build id (the linker's
 * hash of its contents), else the time it was compiled. */
const char *ph_internal_build_id(void);
/* The on-disk winner's key, as the file's first lines hold it: the
 * kernel (f, its first config), its config space (a hash of the source and
 * the configs' entry names), each tensor argument's dims, the device
 * (ph_device_name()) and the build. malloc'd. */
char *ph_internal_tune_key(const struct IrFunc *f, uint64_t space, const ph_arg *args, int nargs, const char *device);
/* The file that holds key's winner, in the cache folder: a hash of the key,
 * with ".tune". False when the cache is off. */
bool ph_internal_tune_path(const char *key, char *path, size_t n);
/* The winner's entry name from path, when the file holds exactly key and
 * a well-formed winner line; false for anything else (missing, truncated,
 * another key, garbage). */
bool ph_internal_tune_read(const char *path, const char *key, char *winner, size_t n);
/* Writes key and the winner to path whole or not at all (a file aside,
 * then renamed over it). */
bool ph_internal_tune_write(const char *path, const char *key, const char *winner, float ms);

#endif
