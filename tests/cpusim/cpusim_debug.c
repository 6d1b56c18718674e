/* cpusim_debug.c: the executor's vprintf and __assertfail, which the code
 * generator calls for ph.device_print and ph.device_assert (as CUDA's
 * printf and assert lower). vprintf formats its argument buffer as the
 * GPU's does (each argument aligned to its size; the conversions phc emits:
 * %d, %lld, %.9g and %%) and appends the text to the executor's record
 * (cpusim_printed); __assertfail ends the launch with the message the
 * GPU prints, as its trap does. */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <llvm-c/Support.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void append(cpusim *s, const char *text, size_t n)
{
    s->printed = realloc(s->printed, s->nprinted + n + 1);
    memcpy(s->printed + s->nprinted, text, n);
    s->nprinted += n;
    s->printed[s->nprinted] = 0;
}

static const unsigned char *aligned(const unsigned char *p, const unsigned char *base, size_t a)
{
    size_t off = (size_t)(p - base);
    return base + (off + a - 1) / a * a;
}

static int32_t sim_vprintf(const char *fmt, const unsigned char *args)
{
    Launch *L = current_launch;
    char out[4096];
    size_t n = 0;
    const unsigned char *p = args;
    for (const char *q = fmt; *q && n < sizeof out - 64; q++) {
        if (*q != '%') { out[n++] = *q; continue; }
        if (q[1] == '%') { out[n++] = '%'; q++; continue; }
        if (q[1] == 'd') {
            int32_t v;
            p = aligned(p, args, 4);
            memcpy(&v, p, 4);
            p += 4;
            n += (size_t)snprintf(out + n, sizeof out - n, "%d", v);
            q++;
        } else if (!strncmp(q + 1, "lld", 3)) {
            long long v;
            p = aligned(p, args, 8);
            memcpy(&v, p, 8);
            p += 8;
            n += (size_t)snprintf(out + n, sizeof out - n, "%lld", v);
            q += 3;
        } else if (!strncmp(q + 1, ".9g", 3)) {
            double v;
            p = aligned(p, args, 8);
            memcpy(&v, p, 8);
            p += 8;
            n += (size_t)snprintf(out + n, sizeof out - n, "%.9g", v);
            q += 3;
        } else {
            if (L) launch_fail(L, "vprintf: a conversion the executor does not model in \"%s\"", fmt);
            return -1;
        }
    }
    if (L) append(L->s, out, n);
    return (int32_t)n;
}

static void sim_assertfail(const char *message, const char *file, uint32_t line, const char *function, uint64_t size)
{
    (void)size;
    Launch *L = current_launch;
    if (!L) abort();
    launch_fail(L, "device assert failed: %s:%u: %s: block (%u, %u, %u), thread %d: Assertion `%s` failed.", file, line,
                function, L->block[0], L->block[1], L->block[2], L->cur, message);
    setcontext(&L->sched);   /* the GPU traps: the thread runs no further */
}

void add_debug_calls(void)
{
    LLVMAddSymbol("vprintf", (void *)sim_vprintf);
    LLVMAddSymbol("__assertfail", (void *)sim_assertfail);
}

const char *cpusim_printed(const cpusim *s) { return s->printed ? s->printed : ""; }
