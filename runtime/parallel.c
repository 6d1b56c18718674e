/* parallel.c: the iterations of a loop on threads of their own, for the
 * code generation of a kernel's configs: each compiles in an LLVM context
 * of its own (codegen_emit keeps nothing between calls), so a kernel's
 * configs cost about the slowest one's time instead of their sum. An
 * iteration writes only its own results, so what a loop computes does not
 * depend on how many threads ran it. */
#include "runtime_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

/* LLVM's instruction selection recurses over large basic blocks: the
 * threads get the stack a main thread has, whatever RLIMIT_STACK says. */
enum { WORKER_STACK_BYTES = 16 << 20 };

typedef struct {
    void (*work)(void *arg, int i);
    void *arg;
    int n;
    atomic_int next;   /* the first iteration no thread has taken yet */
} Loop;

/* Takes iterations until none is left: a slow one holds up only its thread. */
static void run_iterations(Loop *loop)
{
    for (int i; (i = atomic_fetch_add(&loop->next, 1)) < loop->n;) loop->work(loop->arg, i);
}

static void *worker(void *loop)
{
    run_iterations(loop);
    return NULL;
}

int ph_internal_compile_threads(void)
{
    const char *env = getenv("PHOBOS_COMPILE_THREADS");
    char *end;
    long n = env && *env ? strtol(env, &end, 10) : 0;
    if (n >= 1 && n <= 1024 && !*end) return (int)n;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus >= 1 && cpus <= 1024 ? (int)cpus : 1;
}

void ph_internal_parallel(int n, int threads, void (*work)(void *arg, int i), void *arg)
{
    Loop loop = {work, arg, n, 0};
    if (threads > n) threads = n;
    pthread_t *ids = xcalloc(threads > 1 ? (size_t)threads : 1, sizeof *ids);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK_BYTES);
    /* the calling thread is one of them; a thread that cannot be had
     * leaves its share to the others */
    int started = 0;
    while (started + 1 < threads && !pthread_create(&ids[started], &attr, worker, &loop)) started++;
    pthread_attr_destroy(&attr);
    run_iterations(&loop);
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    free(ids);
}
