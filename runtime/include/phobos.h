/* phobos.h: the Phobos runtime, the one header a host program includes.
 *
 * It loads the CUDA driver with dlopen (so a program starts, and says so
 * plainly, on a machine without one), compiles each config of a .ph module
 * to PTX and loads it on its own when a launch first needs it, checks
 * every launch against the kernel's signature, picks a config (autotuning
 * across the eligible ones, timed with CUDA events on the real arguments,
 * the winner remembered per kernel and dims), and launches.
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

typedef enum { PH_ARG_TENSOR = 1, PH_ARG_I32, PH_ARG_F32 } ph_arg_kind;

/* One kernel argument: a tensor is a device pointer plus its dims. */
typedef struct {
    ph_arg_kind kind;
    ph_devptr ptr;
    int64_t dims[2];
    int32_t i32;
    float f32;
} ph_arg;

static inline ph_arg ph_tensor1(ph_devptr p, int64_t d0) { ph_arg a = {PH_ARG_TENSOR, p, {d0, 1}, 0, 0}; return a; }
static inline ph_arg ph_tensor2(ph_devptr p, int64_t d0, int64_t d1) { ph_arg a = {PH_ARG_TENSOR, p, {d0, d1}, 0, 0}; return a; }
static inline ph_arg ph_i32(int32_t v) { ph_arg a = {PH_ARG_I32, 0, {0, 0}, v, 0}; return a; }
static inline ph_arg ph_f32(float v) { ph_arg a = {PH_ARG_F32, 0, {0, 0}, 0, v}; return a; }

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
 * first eligible config to completion before it returns, and nothing is
 * timed. Changing target needs ph_shutdown first. */
#define PH_INTERPRETER (-1)
ph_status ph_init(int device);
void ph_shutdown(void);
const char *ph_last_error(void);
const char *ph_status_name(ph_status s);
/* "NVIDIA H200, sm_90, 132 SMs", or "the CPU interpreter" */
const char *ph_device_name(void);

/* ---- modules and kernels ---- */
ph_status ph_module_load_file(const char *path, ph_module **out);
ph_status ph_module_load_string(const char *name, const char *source, ph_module **out);
void ph_module_free(ph_module *m);
/* name is a kernel's name (launches autotune across its configs) or an
 * entry name such as attn_fwd__D_64__BR_32__BC_32 (that config only). */
ph_status ph_kernel_get(ph_module *m, const char *name, ph_kernel **out);

/* A kernel's parameter, as its signature declares it: kind PH_ARG_TENSOR
 * with an element type ("f16", "bf16", "f32", "i32") and rank 1 or 2, each
 * dim a name (dim_names[a]) or a literal (dim_values[a]); or a scalar
 * (PH_ARG_I32 or PH_ARG_F32, rank 0). The strings live as long as the module. */
typedef struct {
    const char *name;
    ph_arg_kind kind;
    const char *dtype;
    int rank;
    const char *dim_names[2];
    int64_t dim_values[2];
} ph_param;

/* The number of k's parameters (-1 for a null k), and parameter i of them. */
int ph_kernel_param_count(const ph_kernel *k);
ph_status ph_kernel_param(const ph_kernel *k, int i, ph_param *out);

/* Launches kernel on the current stream. With several eligible configs the
 * first launch for a (kernel, dims) pair times each one (with the real
 * arguments: outputs are written more than once) and keeps the fastest. */
ph_status ph_launch(ph_kernel *k, ph_grid_fn grid, void *user, const ph_arg *args, int nargs);

/* The config the last launch of k used (its entry name), or NULL. */
const char *ph_kernel_last_config(const ph_kernel *k);

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
 * figures in one line on stderr when it is loaded. */
ph_status ph_kernel_stats(ph_kernel *k, const char *config, ph_stats *out);

/* ---- ahead of time: a module's code as text, as phc writes it ----
 * Needs no driver and no ph_init. */
typedef enum { PH_EMIT_PTX = 0, PH_EMIT_LLVM } ph_emit;

/* A zeroed struct asks for every kernel and config, as optimized PTX for sm_90. */
typedef struct {
    const char *arch;                 /* "sm_80" or "sm_90"; NULL: "sm_90" */
    ph_emit emit;                     /* PTX, or the LLVM IR handed to the NVPTX backend */
    int no_opt;                       /* nonzero: no LLVM optimization (phc -O0) */
    const char *kernel;               /* only this kernel; NULL: every kernel */
    int ndefines;                     /* only configs whose meta-parameter define_names[i] */
    const char *const *define_names;  /* equals define_values[i] (phc -D NAME=VALUE) */
    const int64_t *define_values;
    int lineinfo;                     /* nonzero: .file and .loc line information for the .ph
                                       * lines, as nvcc -lineinfo gives (phc -lineinfo) */
} ph_compile_options;

/* Compiles source (called name in messages) to one module with an entry
 * per (kernel, config). On success *text is that module, NUL-terminated
 * and malloc'd (the caller frees it); opt may be NULL. */
ph_status ph_compile(const char *name, const char *source, const ph_compile_options *opt, char **text);

/* ---- device memory ---- */
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
