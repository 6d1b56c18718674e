/* difftest.h: differential testing of a back end against the IR
 * interpreter. A run spec says how to launch a module's kernels (the grid,
 * each dimension's size, each scalar's value); the engine runs every config
 * of every kernel on random inputs through the interpreter and through a
 * back end, and compares every tensor. A back end is a struct of function
 * pointers: the interpreter itself (a smoke test of the plumbing), the GPU
 * through the runtime (difftest_gpu.c), or any other executor of the code
 * generator's output. */
#ifndef DIFFTEST_H
#define DIFFTEST_H

#include <stdbool.h>
#include <stdint.h>
#include "dsl.h"

/* ---- the run spec ---- */
enum { DT_MAX_VALUES = 32 };

typedef struct { char name[32]; double value; } DtValue;

/* How to launch: the grid, and a value per dimension name and scalar
 * parameter (a dimension that a config specializes takes the config's
 * value). Text form, one line: "grid 3 2 1 M=40 N=33 n=5 s=0.75". */
typedef struct {
    int grid[3];
    int nvalues;
    DtValue values[DT_MAX_VALUES];
} DtSpec;

void dt_spec_init(DtSpec *s);
void dt_spec_set(DtSpec *s, const char *name, double value);
/* The value of name, or dflt when the spec has none. */
double dt_spec_get(const DtSpec *s, const char *name, double dflt);
bool dt_spec_has(const DtSpec *s, const char *name);
void dt_spec_format(const DtSpec *s, char *buf, size_t n);
/* 0 on success; 1 with a message in err. */
int dt_spec_parse(DtSpec *s, const char *text, char *err, size_t errlen);
/* Reads the spec from the first line of source that starts with "# run:". */
int dt_spec_from_source(DtSpec *s, const char *source, char *err, size_t errlen);

/* ---- back ends ---- */
typedef enum {
    DT_RUN_OK = 0,
    DT_RUN_FAILED,   /* this launch failed; later ones may work (a compile error, a refused launch) */
    DT_RUN_FATAL,    /* the device is unusable from now on (a fault in a kernel) */
} DtRunStatus;

typedef struct DtBackend DtBackend;
struct DtBackend {
    const char *name;
    /* Prepares the module given as source text and as the IR the front
     * end made of it. */
    DtRunStatus (*load)(DtBackend *b, const char *source, const IrModule *m, char *err, size_t errlen);
    /* Runs config f over grid with the arguments as ir_interp takes them:
     * tensors in host memory hold the inputs (and the poisoned outputs)
     * and on return hold what the kernel left there. */
    DtRunStatus (*run)(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err, size_t errlen);
    void (*unload)(DtBackend *b);
    void *state;
};

extern DtBackend dt_interp_backend;   /* the interpreter against itself */
/* The interpreter with a planted fault: after a config that computes a dot,
 * the first element of every f32 tensor it stores is off by 100. A
 * self-test of the engine, the reducer and gpufuzz's mismatch files. */
extern DtBackend dt_planted_backend;
extern DtBackend dt_gpu_backend;      /* the GPU through the runtime (difftest_gpu.c, libphobos) */
extern DtBackend dt_cpusim_backend;   /* the CPU executor of generated code (difftest_cpusim.c, cpufuzz) */

/* ---- the engine ---- */
typedef enum {
    DT_SAME,            /* every config of every kernel agrees */
    DT_MISMATCH,        /* some tensor differs */
    DT_BACKEND_FAILED,  /* the back end refused or failed a program the interpreter ran */
    DT_BACKEND_FATAL,   /* ... and cannot run anything more */
    DT_REFERENCE_FAILED,/* the interpreter refused the program or its spec: a bad test, not a finding */
} DtVerdict;

typedef struct {
    int configs;               /* configs compared */
    int failed;                /* of which differed or failed */
    int ineligible;            /* configs skipped: they specialize a dim to another value than the spec's */
    char config[160];          /* the first that differed or failed */
    char message[2048];        /* its first differing elements, or the error */
} DtReport;

const char *dt_verdict_name(DtVerdict v);

/* Runs every function of m (the module compiled from source) through the
 * interpreter and the back end on the same inputs (drawn from input_seed;
 * never zero) with outputs poisoned alike, and compares every tensor:
 * integers exactly, floats within a tolerance scaled to the tensor's
 * magnitude and to the least precise float type the function computes in.
 * `only`, when not NULL, restricts the run to the function of that entry
 * name. A config that specializes a dim (a meta-parameter named like it) to
 * another value than the spec gives it is not run, as the runtime would
 * never launch it there. */
DtVerdict dt_compare_module(const IrModule *m, const char *source, const DtSpec *spec, DtBackend *be,
                            uint64_t input_seed, const char *only, DtReport *rep);

#endif
