/* frontend_bench.c: how long the front end takes: load, lex, parse,
 * check, lower every (kernel, config) to IR and run the pass pipeline,
 * all through driver_compile_file, for a whole program and for each of its
 * kernels alone.
 *
 *   frontend_bench PROGRAM.ph [REPEATS]
 *
 * Prints the median and the minimum wall time in milliseconds and the
 * number of IR functions each compilation produced. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsl.h"
#include "driver/driver.h"

enum { WARMUP = 10, DEFAULT_REPEATS = 200, MAX_REPEATS = 100000 };

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Compiles path (only kernel when not NULL) warmup + repeats times and
 * prints one line; returns the number of IR functions, -1 on failure. */
static int bench(const char *path, const char *kernel, int repeats, double *times)
{
    SemaOptions opt = {kernel, 0, NULL, NULL};
    int nfuncs = -1;
    for (int i = 0; i < WARMUP + repeats; i++) {
        double t0 = now_ms();
        IrModule *m = driver_compile_file(path, &opt, i == 0 ? stderr : NULL);
        double t1 = now_ms();
        if (!m) {
            fprintf(stderr, "%s: compilation failed\n", path);
            return -1;
        }
        nfuncs = m->nfuncs;
        ir_module_free(m);
        if (i >= WARMUP) times[i - WARMUP] = t1 - t0;
    }
    qsort(times, (size_t)repeats, sizeof *times, cmp_double);
    double median = repeats % 2 ? times[repeats / 2]
                                : (times[repeats / 2 - 1] + times[repeats / 2]) / 2;
    printf("%-16s %3d IR functions   median %8.3f ms   min %8.3f ms   (%d runs)\n",
           kernel ? kernel : "whole program", nfuncs, median, times[0], repeats);
    return nfuncs;
}

/* The distinct kernel names of m, in source order. */
static int kernel_names(const IrModule *m, const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < m->nfuncs && n < max; i++) {
        bool seen = false;
        for (int j = 0; j < n && !seen; j++) seen = !strcmp(names[j], m->funcs[i]->kernel);
        if (!seen) names[n++] = m->funcs[i]->kernel;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s PROGRAM.ph [REPEATS]\n", argv[0]);
        return 2;
    }
    int repeats = DEFAULT_REPEATS;
    if (argc == 3) {
        char *end;
        long r = strtol(argv[2], &end, 10);
        if (*end || end == argv[2] || r < 1 || r > MAX_REPEATS) {
            fprintf(stderr, "REPEATS must be 1 .. %d\n", MAX_REPEATS);
            return 2;
        }
        repeats = (int)r;
    }
    double *times = xmalloc(sizeof *times * (size_t)repeats);
    printf("front end + IR passes of %s (driver_compile_file, %d warm-up runs)\n", argv[1], WARMUP);
    int status = bench(argv[1], NULL, repeats, times) < 0;

    IrModule *m = status ? NULL : driver_compile_file(argv[1], NULL, NULL);
    const char *names[64];
    int nkernels = m ? kernel_names(m, names, 64) : 0;
    for (int i = 0; i < nkernels; i++)
        if (bench(argv[1], names[i], repeats, times) < 0) status = 1;
    ir_module_free(m);
    free(times);
    return status;
}
