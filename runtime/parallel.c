/* parallel.c: the iterations of a loop on threads of their own, for the
 * code generation of a kernel's configs: each compiles in an LLVM context
 * of its own (codegen_emit keeps nothing between calls), so a kernel's
 * configs cost about the slowest one's time instead of their sum. An
 * iteration writes only its own results, so what a loop computes does not
 * depend on how many threads ran it. A loop either has the calling thread
 * among its threads and returns when it is done (ph_internal_parallel), or
 * runs on threads of its own while the calling thread takes each iteration
 * as it finishes (ph_internal_parallel_start): the autotuner times a
 * config while the others are still being compiled. */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

/* LLVM's instruction selection recurses over large basic blocks: the
 * threads get the stack a main thread has, whatever RLIMIT_STACK says. */
enum { WORKER_STACK_BYTES = 16 << 20 };

typedef struct {
    void (*work)(void *arg, int i);
    void *arg;
    int n;
    atomic_int next;   /* the first iteration no thread has taken yet */
    PhParallel *taker; /* when not NULL, told of each iteration finished */
} Loop;

static void finished(PhParallel *p, int i);

/* Takes iterations until none is left: a slow one holds up only its thread. */
static void run_iterations(Loop *loop)
{
    for (int i; (i = atomic_fetch_add(&loop->next, 1)) < loop->n;) {
        loop->work(loop->arg, i);
        if (loop->taker) finished(loop->taker, i);
    }
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
    Loop loop = {work, arg, n, 0, NULL};
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

/* ---- a loop whose iterations the calling thread takes as they finish ---- */

struct PhParallel {
    Loop loop;
    pthread_mutex_t lock;
    pthread_cond_t finished;
    int *done;          /* the iterations finished, in the order they finished */
    int ndone;          /* under the lock */
    int taken;          /* of done[], by the calling thread */
    pthread_t *ids;
    int started;
};

/* A worker's iteration i is done: the calling thread may take it. */
static void finished(PhParallel *p, int i)
{
    pthread_mutex_lock(&p->lock);
    p->done[p->ndone++] = i;
    pthread_cond_signal(&p->finished);
    pthread_mutex_unlock(&p->lock);
}

PhParallel *ph_internal_parallel_start(int n, int threads, void (*work)(void *arg, int i), void *arg)
{
    PhParallel *p = xcalloc(1, sizeof *p);
    p->loop = (Loop){work, arg, n, 0, p};
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->finished, NULL);
    p->done = xcalloc(n > 0 ? (size_t)n : 1, sizeof *p->done);
    if (threads > n) threads = n;
    p->ids = xcalloc(threads > 0 ? (size_t)threads : 1, sizeof *p->ids);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORKER_STACK_BYTES);
    while (p->started < threads && !pthread_create(&p->ids[p->started], &attr, worker, &p->loop)) p->started++;
    pthread_attr_destroy(&attr);
    return p;
}

int ph_internal_parallel_next(PhParallel *p)
{
    if (p->taken == p->loop.n) return -1;
    if (!p->started) {   /* no thread could be had: the calling thread runs it */
        int i = atomic_fetch_add(&p->loop.next, 1);
        p->loop.work(p->loop.arg, i);
        p->taken++;
        return i;
    }
    pthread_mutex_lock(&p->lock);
    while (p->ndone == p->taken) pthread_cond_wait(&p->finished, &p->lock);
    int i = p->done[p->taken++];
    pthread_mutex_unlock(&p->lock);
    return i;
}

void ph_internal_parallel_end(PhParallel *p)
{
    for (int i = 0; i < p->started; i++) pthread_join(p->ids[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->finished);
    free(p->ids);
    free(p->done);
    free(p);
}
