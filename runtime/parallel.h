/* parallel.h: the iterations of a loop on threads (parallel.c), for the
 * code generation of a kernel's configs. */
#ifndef PHOBOS_PARALLEL_H
#define PHOBOS_PARALLEL_H

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

#endif
