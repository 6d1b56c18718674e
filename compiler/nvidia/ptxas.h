/* ptxas.h: NVIDIA's PTX assembler, run as a program: where it is, and one
 * run from PTX in memory to a cubin in memory. phc's --emit=cubin and
 * --stats and the runtime's assembly of a kernel's configs all run it
 * through here, found the same way. */
#ifndef PHC_PTXAS_H
#define PHC_PTXAS_H

#include <stdbool.h>
#include <stddef.h>

/* The ptxas to run: the first executable of $PTXAS,
 * ${CUDA_HOME:-/usr/local/cuda}/bin/ptxas and ptxas in PATH's folders;
 * false when there is none. */
bool ptxas_find(char *path, size_t n);

/* What one run gave. */
typedef struct {
    int status;         /* its exit status (0: assembled); -1: it could not be run, or was killed (err says why) */
    char *log;          /* everything it printed, stdout and stderr ("" when nothing), NUL-terminated */
    void *cubin;        /* status 0: the cubin it wrote; NULL if it wrote none */
    size_t cubin_bytes;
    char err[256];
} PtxasRun;

enum {
    PTXAS_VERBOSE = 1,    /* -v: the report of registers, spills and shared memory, in the log */
    PTXAS_LINEINFO = 2,   /* -lineinfo: the PTX's .loc lines kept in the cubin */
};

/* Runs `ptxas [-v] [-lineinfo] -arch=ARCH -o CUBIN PTX` on ptx (flags:
 * PTXAS_*), with files in a private temporary folder (removed after), no
 * shell between. Safe to call from several threads at once. Returns
 * r->status; free with ptxas_run_free. */
int ptxas_run(const char *ptxas, const char *arch, const char *ptx, int flags, PtxasRun *r);
void ptxas_run_free(PtxasRun *r);

#endif
