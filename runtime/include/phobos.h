/* phobos.h: the Phobos runtime, the one header a host program includes.
 *
 * It loads the CUDA driver with dlopen (so a program starts, and says so
 * plainly, on a machine without one), compiles each config of a .ph module
 * to PTX and loads it on its own when a launch first needs it, checks
 * every launch against the kernel's signature, picks a config (autotuning
 * across the eligible ones, timed with CUDA events on the real arguments,
 * the winner remembered per kernel and dims, in memory and on disk), and
 * launches.
 * Every call returns a status; ph_last_error() says what went wrong. */
#ifndef PHOBOS_H
#define PHOBOS_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header; the library's own is ph_version(). The
 * library's soname, libphobos.so.MAJOR, changes when its ABI does. */
#define PH_VERSION_MAJOR 0
#define PH_VERSION_MINOR 1
#define PH_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0": the version of the library the program runs with. */
const char *ph_version(void);

typedef enum {
    PH_OK = 0,
    PH_ERR_NO_DRIVER,      /* no libcuda.so.1 on this machine */
    PH_ERR_NO_DEVICE,      /* the driver found no usable GPU */
    PH_ERR_CUDA,           /* a driver call failed (message has the driver's words) */
    PH_ERR_COMPILE,        /* the .ph source has errors (message has the diagnostics) */
    PH_ERR_MODULE,         /* the driver refused every eligible config (message has each JIT log) */
    PH_ERR_NOT_FOUND,      /* no kernel of that name, or a file that cannot be read */
    PH_ERR_ARGS,           /* arguments do not match the kernel's parameters */
    PH_ERR_NOT_ELIGIBLE,   /* no config accepts these dims (specialized dims, aligned promises) */
    PH_ERR_GRID,           /* a grid of zero blocks or over the device's limits */
    PH_ERR_STATE,          /* the runtime was shut down, or not initialized */
    PH_ERR_INVALID,        /* a null pointer or bad value passed to the API */
} ph_status;

typedef struct ph_module ph_module;
typedef struct ph_kernel ph_kernel;
typedef uint64_t ph_devptr;

typedef enum { PH_ARG_TENSOR = 1, PH_ARG_I32, PH_ARG_F32, PH_ARG_I64 } ph_arg_kind;

/* A tensor's element type. PH_DTYPE_UNCHECKED (zero) is no claim at all:
 * the launch takes the tensor's elements to be what the kernel declares. */
typedef enum { PH_DTYPE_UNCHECKED = 0, PH_F16, PH_BF16, PH_F32, PH_I32, PH_I8, PH_U8, PH_F8E4M3, PH_F8E5M2, PH_I64 } ph_dtype;

/* One kernel argument. A tensor is a device pointer and its dims, and
 * optionally its element type and its strides (in elements, as torch's
 * stride() reports them); a launch refuses a tensor whose dtype is not the
 * parameter's. A tensor of rank 1 or 2 is read row-major and contiguous:
 * strides that are not (a dim of size 1 may have any stride) are refused.
 * A tensor of rank 3 or 4 is read through its strides, whatever they are
 * (each from 0 to 2^62; a view of another tensor, passed as it is). Strides
 * all 0 are "not given": the tensor is taken as row-major contiguous.
 * Entries past the rank are ignored: a rank-1 tensor's dims and strides
 * are {d0, 1, 1, 1} and {s0, 0, 0, 0}. An i64 scalar (PH_ARG_I64, made by
 * ph_i64) is held in dims[0], which a scalar has no other use for, so the
 * struct kept its size and layout when i64 came. */
typedef struct {
    ph_arg_kind kind;
    ph_devptr ptr;
    int64_t dims[4];
    int32_t i32;
    float f32;
    ph_dtype dtype;
    int64_t strides[4];
} ph_arg;

/* Tensors whose dtype is not checked, taken as row-major contiguous. */
static inline ph_arg ph_tensor1(ph_devptr p, int64_t d0) { ph_arg a = {PH_ARG_TENSOR, p, {d0, 1, 1, 1}, 0, 0, PH_DTYPE_UNCHECKED, {0, 0, 0, 0}}; return a; }
static inline ph_arg ph_tensor2(ph_devptr p, int64_t d0, int64_t d1) { ph_arg a = {PH_ARG_TENSOR, p, {d0, d1, 1, 1}, 0, 0, PH_DTYPE_UNCHECKED, {0, 0, 0, 0}}; return a; }
/* Tensors whose dtype is checked, contiguous. */
static inline ph_arg ph_tensor1_t(ph_devptr p, ph_dtype t, int64_t d0) { ph_arg a = {PH_ARG_TENSOR, p, {d0, 1, 1, 1}, 0, 0, t, {0, 0, 0, 0}}; return a; }
static inline ph_arg ph_tensor2_t(ph_devptr p, ph_dtype t, int64_t d0, int64_t d1) { ph_arg a = {PH_ARG_TENSOR, p, {d0, d1, 1, 1}, 0, 0, t, {0, 0, 0, 0}}; return a; }
/* Tensors whose dtype and strides (in elements) are checked. */
static inline ph_arg ph_tensor1_s(ph_devptr p, ph_dtype t, int64_t d0, int64_t s0) { ph_arg a = {PH_ARG_TENSOR, p, {d0, 1, 1, 1}, 0, 0, t, {s0, 0, 0, 0}}; return a; }
static inline ph_arg ph_tensor2_s(ph_devptr p, ph_dtype t, int64_t d0, int64_t d1, int64_t s0, int64_t s1)
{
    ph_arg a = {PH_ARG_TENSOR, p, {d0, d1, 1, 1}, 0, 0, t, {s0, s1, 0, 0}};
    return a;
}
/* Tensors of rank 1 to 4 with their dtype, dims and strides (in elements;
 * strides NULL: row-major contiguous): a rank-3/4 view, a torch tensor's
 * permute() or transpose(), is passed as it is, without a copy. */
static inline ph_arg ph_tensor_nd(ph_devptr p, ph_dtype t, int rank, const int64_t *dims, const int64_t *strides)
{
    ph_arg a = {PH_ARG_TENSOR, p, {1, 1, 1, 1}, 0, 0, t, {0, 0, 0, 0}};
    for (int i = 0; i < rank && i < 4; i++) {
        a.dims[i] = dims[i];
        a.strides[i] = strides ? strides[i] : 0;
    }
    return a;
}
static inline ph_arg ph_i32(int32_t v) { ph_arg a = {PH_ARG_I32, 0, {0, 0, 0, 0}, v, 0, PH_DTYPE_UNCHECKED, {0, 0, 0, 0}}; return a; }
static inline ph_arg ph_f32(float v) { ph_arg a = {PH_ARG_F32, 0, {0, 0, 0, 0}, 0, v, PH_DTYPE_UNCHECKED, {0, 0, 0, 0}}; return a; }
static inline ph_arg ph_i64(int64_t v) { ph_arg a = {PH_ARG_I64, 0, {v, 0, 0, 0}, 0, 0, PH_DTYPE_UNCHECKED, {0, 0, 0, 0}}; return a; }
/* The value of an i64 scalar argument (ph_i64). */
static inline int64_t ph_arg_i64_value(const ph_arg *a) { return a->dims[0]; }

/* The chosen config's meta-parameters, passed to the grid callback (the
 * tutorial's `lambda meta:`). */
typedef struct {
    int n;
    const char *const *names;
    const int64_t *values;
} ph_meta;

/* Returns the meta-parameter's value, or `dflt` when the config has none. */
int64_t ph_meta_get(const ph_meta *meta, const char *name, int64_t dflt);

/* Fills grid[0..2] (unset entries are 1) for a config. */
typedef void (*ph_grid_fn)(const ph_meta *meta, void *user, unsigned grid[3]);

/* ---- the runtime: one per process ----
 * ph_init(device) runs kernels on that GPU. ph_init(PH_INTERPRETER), or
 * any ph_init with the environment variable PHOBOS_TARGET=interp, runs
 * them on the CPU interpreter of the IR instead, with no driver: "device"
 * pointers are then host pointers (ph_malloc is calloc, the copies are
 * memcpy, a host program may pass its own arrays), each launch runs the
 * first eligible config to completion before it returns, streams are
 * ignored, and nothing is timed. Changing target needs ph_shutdown first.
 *
 * Several GPUs: ph_init may be called for each device a program uses
 * (again for one already started, it does nothing); each retains its
 * device's primary context, the one the CUDA runtime API (and torch) use.
 * The first device started is every thread's device until the thread
 * calls ph_set_device, as cudaSetDevice: ph_malloc, the copies,
 * ph_synchronize and module loads act on the calling thread's device. The
 * first ph_init leaves its device's context current in the calling thread
 * and ph_set_device makes its device's current; every other call makes
 * the context it needs current for its duration and then puts back the
 * one the thread had. ph_shutdown releases every device.
 *
 * Threads: every call may be made from any thread. The runtime's shared
 * state (modules' loaded configs, the autotuner's choices, the devices) is
 * behind one lock; a launch holds it while it checks, loads and launches
 * (and while the first launch for some dims is timed), so launches from
 * several threads are safe but their host-side work is serialized; the
 * kernels themselves run as their streams let them. A grid callback runs
 * with the lock held: it may call the runtime, but a launch from it is
 * refused (PH_ERR_STATE) and a ph_shutdown does nothing. The message
 * ph_last_error returns is the calling thread's own. ph_shutdown must not
 * race with other calls. */
#define PH_INTERPRETER (-1)
ph_status ph_init(int device);
void ph_shutdown(void);
/* The calling thread's device from now on: one ph_init has started
 * (PH_ERR_STATE otherwise). On the interpreter every device number is the
 * interpreter. */
ph_status ph_set_device(int device);
/* The calling thread's device (PH_INTERPRETER on the interpreter). */
ph_status ph_get_device(int *device);
const char *ph_last_error(void);
const char *ph_status_name(ph_status s);
/* The calling thread's device: "NVIDIA H200, sm_90, 132 SMs", or "the CPU interpreter" */
const char *ph_device_name(void);
/* The calling thread's device's multiprocessors (SMs): the grid that keeps
 * every one busy with a block of a persistent kernel (one that loops over
 * its tiles, bench/gemm_tuned.ph); 1 on the interpreter, which runs one
 * block at a time, and 0 before a device has started. */
int ph_device_multiprocessors(void);

/* ---- modules and kernels ----
 * A module runs on the calling thread's device when it is loaded (when no
 * ph_init has run yet, on the device of the thread that first launches
 * it): its launches go to that device whatever thread makes them. */
ph_status ph_module_load_file(const char *path, ph_module **out);
ph_status ph_module_load_string(const char *name, const char *source, ph_module **out);
void ph_module_free(ph_module *m);
/* name is a kernel's name (launches autotune across its configs) or an
 * entry name such as attn_fwd__D_64__BR_32__BC_32 (that config only). */
ph_status ph_kernel_get(ph_module *m, const char *name, ph_kernel **out);
/* The number of m's kernels (-1 for a null m), and kernel i's name, in the
 * source's order (NULL out of range): what ph_kernel_get takes, besides
 * entry names. The names live as long as the module. */
int ph_module_kernel_count(const ph_module *m);
const char *ph_module_kernel_name(const ph_module *m, int i);

/* A kernel's parameter, as its signature declares it: kind PH_ARG_TENSOR
 * with an element type ("f16", "bf16", "f32", "i32", "i8", "u8") and rank 1 to 4, each
 * dim a name (dim_names[a]) or a literal (dim_values[a]); or a scalar
 * (PH_ARG_I32 or PH_ARG_F32, rank 0). The strings live as long as the module. */
typedef struct {
    const char *name;
    ph_arg_kind kind;
    const char *dtype;
    int rank;
    const char *dim_names[4];
    int64_t dim_values[4];
} ph_param;

/* The number of k's parameters (-1 for a null k), and parameter i of them. */
int ph_kernel_param_count(const ph_kernel *k);
ph_status ph_kernel_param(const ph_kernel *k, int i, ph_param *out);

/* Launches kernel on the legacy default stream (the NULL stream): as
 * ph_launch_stream with a NULL stream. With several eligible configs the
 * first launch for a (kernel, dims) pair picks one: the winner of an earlier
 * run of the program (kept on disk), else each config timed with the real
 * arguments (outputs are written more than once: see ph_kernel_set_restore)
 * and the fastest kept. */
ph_status ph_launch(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs);

/* Launches kernel on `stream`, a CUstream of the module's device (NULL:
 * the legacy default stream), after the work queued on it before and
 * before the work queued after; the launch returns without waiting for
 * the kernel. The first launch's autotuning runs on that stream too (its
 * CUDA events are recorded there), and waits for the timed runs. */
ph_status ph_launch_stream(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs, void *stream);

/* The config the last launch of k used (its entry name), or NULL. */
const char *ph_kernel_last_config(const ph_kernel *k);

/* ---- autotuning: for the whole process, from the next launch on ----
 * on = 1: autotune (the default). 0: a launch runs the first eligible
 * config the driver accepts, in phc --list order (as the interpreter
 * does), and nothing is timed, read or written. -1: as the environment
 * variable PHOBOS_AUTOTUNE says (0, off, no or false turn it off). */
void ph_set_autotune(int on);
/* on = 1: a progress line on stderr while tuning, and a line for each
 * winner read from disk; 0: none; -1: as PHOBOS_AUTOTUNE_VERBOSE says
 * (1 or 0), else progress only when stderr is a terminal. */
void ph_set_autotune_verbose(int on);

/* The tensor parameter named param of k is updated in place: before each
 * run the autotuner times, and before the launch it keeps, it is copied
 * back to the contents it had when the launch was called (restore), or
 * filled with zeros (zero), as @ph.autotune_restore and @ph.autotune_zero
 * declare in the source. PH_ERR_INVALID when k has no tensor of that name. */
ph_status ph_kernel_set_restore(ph_kernel *k, const char *param);
ph_status ph_kernel_set_zero(ph_kernel *k, const char *param);

/* What a config's function uses, as the driver loaded it: the figures
 * ptxas -v prints, for a program to check (a config that spills runs
 * slower than its registers would let it). */
typedef struct {
    const char *config;            /* its entry name; lives as long as the module */
    int threads;                   /* the block it launches with (@ph.launch) */
    int registers;                 /* per thread */
    int local_bytes;               /* local memory per thread: the stack frame, spills included */
    int spill_store_bytes;         /* bytes of spill stores and loads, from the JIT's log; -1 where */
    int spill_load_bytes;          /* it said nothing (code the driver had cached) */
    int static_shared_bytes;
    int dynamic_shared_bytes;      /* what each launch asks for (configs over 48 KB) */
    int max_threads_per_block;     /* the most this function can launch with, its registers allowing */
} ph_stats;

/* Loads config (one of k's entry names, or NULL: the config k's last
 * launch used, or k's only one) as a launch would, and fills *out through
 * cuFuncGetAttribute. Needs a GPU: on the interpreter it is PH_ERR_STATE.
 * With the environment variable PHOBOS_STATS=1, each config prints these
 * figures in one line on stderr when it is loaded, and a second where
 * ptxas says its wgmma pipeline was lost (docs/runtime.md). */
ph_status ph_kernel_stats(ph_kernel *k, const char *config, ph_stats *out);

/* ---- ahead of time: a module's code as text, as phc writes it ----
 * Needs no driver and no ph_init. */
typedef enum { PH_EMIT_PTX = 0, PH_EMIT_LLVM } ph_emit;

/* A zeroed struct asks for every kernel and config, as optimized PTX for sm_90. */
typedef struct {
    const char *arch;                 /* a target, as phc --arch names it: "sm_80", "sm_86", "sm_89" (sm_80's
                                       * code), "sm_90" or "sm_90a" (wgmma); NULL: "sm_90"; another: PH_ERR_INVALID */
    ph_emit emit;                     /* PTX, or the LLVM IR handed to the NVPTX backend */
    int no_opt;                       /* nonzero: no LLVM optimization (phc -O0) */
    const char *kernel;               /* only this kernel; NULL: every kernel */
    int ndefines;                     /* only configs whose meta-parameter define_names[i] */
    const char *const *define_names;  /* equals define_values[i] (phc -D NAME=VALUE) */
    const int64_t *define_values;
    int lineinfo;                     /* nonzero: .file and .loc line information for the .ph
                                       * lines, as nvcc -lineinfo gives (phc -lineinfo) */
    int opt_level;                    /* 0 or 2: the default pipeline (phc -O2); 3: LLVM's full
                                       * -O3 pipeline (phc -O3), slower to compile; no_opt wins */
} ph_compile_options;

/* Compiles source (called name in messages) to one module with an entry
 * per (kernel, config). On success *text is that module, NUL-terminated
 * and malloc'd (the caller frees it); opt may be NULL. */
ph_status ph_compile(const char *name, const char *source, const ph_compile_options *opt, char **text);

/* ---- device memory ----
 * On the calling thread's device, through the legacy default stream: the
 * copies return when they are done, and ph_synchronize waits for all the
 * device's work, on every stream. */
ph_status ph_malloc(ph_devptr *p, size_t bytes);
ph_status ph_free(ph_devptr p);
ph_status ph_memcpy_htod(ph_devptr dst, const void *src, size_t bytes);
ph_status ph_memcpy_dtoh(void *dst, ph_devptr src, size_t bytes);
ph_status ph_memset8(ph_devptr dst, unsigned char value, size_t bytes);
ph_status ph_synchronize(void);

#ifdef __cplusplus
}
#endif
#endif
