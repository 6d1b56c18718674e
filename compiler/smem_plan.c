/* smem_plan.c: live ranges and placement of a kernel's shared-memory buffers.
 *
 * Expects: the buffers and, in program order, the events of one kernel
 * (smem_plan.h): accesses between well-nested loop and if marks.
 * Guarantees: every accessed buffer gets an offset, a multiple of its
 * alignment, such that two buffers whose live ranges meet never share a
 * byte; the area's size is the end of the last one. Placement is first fit
 * by decreasing size (ties: earlier first use, then lower id), so the
 * largest buffers, the rings and regions that live over whole loops, are
 * laid out first and the scratch of single ops fills the space around
 * them. A buffer accessed nowhere takes no space.
 * Until barriers are placed from the accesses, the code generator brackets
 * every scratch use with barriers itself; the plan adds one before the
 * first access of a ring or region that takes bytes another buffer used
 * before it (whose last readers may still be at work). */
#include "smem_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int smem_add_buffer(SmemPlan *p, SmemKind kind, int64_t bytes, int align)
{
    SmemBuf b = {kind, bytes, align > 0 ? align : 1, -1, -1, 0};
    vec_push(&p->bufs, b);
    return p->bufs.len - 1;
}

int smem_add_event(SmemPlan *p, SmemEventKind kind, int buf, bool write)
{
    SmemEvent e = {kind, buf, write};
    vec_push(&p->events, e);
    return p->events.len - 1;
}

void smem_plan_free(SmemPlan *p)
{
    free(p->bufs.data);
    free(p->events.data);
    free(p->barrier);
    memset(p, 0, sizeof *p);
}

/* ---- structure ---- */

/* match[i]: for a loop's entry its end and the reverse; for an if its
 * else, for an else its end and the reverse. False when the marks do not
 * nest or an access names no buffer. */
static bool match_events(const SmemPlan *p, int *match, char *err, size_t errlen)
{
    int n = p->events.len, *stack = xmalloc(sizeof *stack * (size_t)(n + 1)), depth = 0;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const SmemEvent *e = &p->events.data[i];
        match[i] = -1;
        switch (e->kind) {
        case SMEM_ACCESS:
            if (e->buf < 0 || e->buf >= p->bufs.len) {
                snprintf(err, errlen, "internal error: event %d accesses buffer %d of %d", i, e->buf, p->bufs.len);
                ok = false;
            }
            break;
        case SMEM_BARRIER: break;
        case SMEM_LOOP: case SMEM_IF: stack[depth++] = i; break;
        case SMEM_ELSE:
            if (!depth || p->events.data[stack[depth - 1]].kind != SMEM_IF) ok = false;
            else match[stack[depth - 1]] = i, stack[depth - 1] = i;
            break;
        case SMEM_LOOP_END: case SMEM_IF_END: {
            SmemEventKind open = e->kind == SMEM_LOOP_END ? SMEM_LOOP : SMEM_ELSE;
            if (!depth || p->events.data[stack[depth - 1]].kind != open) { ok = false; break; }
            int o = stack[--depth];
            match[o] = i;
            match[i] = o;
            break;
        }
        }
        if (!ok && !err[0]) snprintf(err, errlen, "internal error: shared-memory event %d does not nest", i);
    }
    if (ok && depth) {
        snprintf(err, errlen, "internal error: %d shared-memory regions left open", depth);
        ok = false;
    }
    free(stack);
    return ok;
}

/* ---- live ranges ---- */

/* First and last access of each buffer; then, for every loop a buffer is
 * accessed in after being live before it, the range reaches the loop's
 * end: what one iteration leaves, the next reads. */
static void live_ranges(SmemPlan *p, const int *match)
{
    for (int b = 0; b < p->bufs.len; b++) p->bufs.data[b].first = p->bufs.data[b].last = -1;
    for (int i = 0; i < p->events.len; i++) {
        const SmemEvent *e = &p->events.data[i];
        if (e->kind != SMEM_ACCESS) continue;
        SmemBuf *b = &p->bufs.data[e->buf];
        if (b->first < 0) b->first = i;
        b->last = i;
    }
    for (int i = 0; i < p->events.len; i++) {
        if (p->events.data[i].kind != SMEM_LOOP) continue;
        int end = match[i];
        for (int j = i + 1; j < end; j++) {
            const SmemEvent *e = &p->events.data[j];
            if (e->kind != SMEM_ACCESS) continue;
            SmemBuf *b = &p->bufs.data[e->buf];
            if (b->first < i && b->last < end) b->last = end;
        }
    }
}

/* ---- placement ---- */

static bool live_together(const SmemBuf *a, const SmemBuf *b) { return a->first <= b->last && b->first <= a->last; }

static int64_t align_up(int64_t x, int a) { return (x + a - 1) / a * a; }

static const SmemPlan *sort_plan;

/* Decreasing size, then earlier first use, then lower id. */
static int by_size(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    const SmemBuf *ba = &sort_plan->bufs.data[a], *bb = &sort_plan->bufs.data[b];
    if (ba->bytes != bb->bytes) return ba->bytes > bb->bytes ? -1 : 1;
    if (ba->first != bb->first) return ba->first < bb->first ? -1 : 1;
    return (a > b) - (a < b);
}

static int by_offset(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    int64_t oa = sort_plan->bufs.data[a].offset, ob = sort_plan->bufs.data[b].offset;
    if (oa != ob) return oa < ob ? -1 : 1;
    return (a > b) - (a < b);
}

/* The lowest offset for buffer b clear of every placed buffer live with it. */
static int64_t first_fit(SmemPlan *p, int b, const int *placed, int nplaced, int *near)
{
    const SmemBuf *buf = &p->bufs.data[b];
    int n = 0;
    for (int i = 0; i < nplaced; i++)
        if (live_together(&p->bufs.data[placed[i]], buf)) near[n++] = placed[i];
    sort_plan = p;
    qsort(near, (size_t)n, sizeof *near, by_offset);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        const SmemBuf *q = &p->bufs.data[near[i]];
        if (q->offset >= at + buf->bytes) break;
        if (q->offset + q->bytes > at) at = align_up(q->offset + q->bytes, buf->align);
    }
    return at;
}

static void place(SmemPlan *p)
{
    int n = p->bufs.len, *order = xmalloc(sizeof *order * (size_t)(n + 1)), *near = xmalloc(sizeof *near * (size_t)(n + 1));
    int nlive = 0;
    for (int b = 0; b < n; b++) {
        p->bufs.data[b].offset = 0;
        if (p->bufs.data[b].first >= 0 && p->bufs.data[b].bytes > 0) order[nlive++] = b;
    }
    sort_plan = p;
    qsort(order, (size_t)nlive, sizeof *order, by_size);
    p->bytes = 0;
    for (int i = 0; i < nlive; i++) {
        SmemBuf *b = &p->bufs.data[order[i]];
        b->offset = first_fit(p, order[i], order, i, near);
        if (b->offset + b->bytes > p->bytes) p->bytes = b->offset + b->bytes;
    }
    free(order);
    free(near);
}

bool smem_bufs_overlap(const SmemPlan *p, int a, int b)
{
    const SmemBuf *x = &p->bufs.data[a], *y = &p->bufs.data[b];
    if (x->first < 0 || y->first < 0 || !x->bytes || !y->bytes) return false;
    return x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
}

/* ---- barriers ---- */

/* A ring or region whose bytes another buffer used before it: a barrier
 * before its first access, so that buffer's last readers are done. */
static void fence_reused_space(SmemPlan *p)
{
    for (int b = 0; b < p->bufs.len; b++) {
        const SmemBuf *buf = &p->bufs.data[b];
        if (buf->kind == SMEM_SCRATCH || buf->first < 0) continue;
        for (int o = 0; o < p->bufs.len; o++)
            if (o != b && p->bufs.data[o].first >= 0 && p->bufs.data[o].last < buf->first && smem_bufs_overlap(p, o, b)) {
                p->barrier[buf->first] = true;
                break;
            }
    }
}

bool smem_plan_make(SmemPlan *p, char *err, size_t errlen)
{
    if (errlen) err[0] = 0;
    int n = p->events.len;
    int *match = xmalloc(sizeof *match * (size_t)(n + 1));
    bool ok = match_events(p, match, err, errlen);
    if (ok) {
        live_ranges(p, match);
        place(p);
        free(p->barrier);
        p->barrier = xcalloc((size_t)n + 1, sizeof *p->barrier);
        fence_reused_space(p);
    }
    free(match);
    return ok;
}
