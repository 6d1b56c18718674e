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
 * them; the smallest scratch buffers, up to 1/16 of the area (1 to 4 KB),
 * get bytes of their own, which spares the barriers sharing would need,
 * unless that takes the area past a device's block limit it is under
 * (place). A buffer accessed nowhere takes no space. Barriers go where an
 * access could otherwise meet another thread's access of the same bytes
 * since the last barrier, one of them a write (below, "barriers"); the set
 * is minimal: no barrier of it can go without such a meeting. */
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
    SmemEvent e = {kind, buf, write, false, false};
    vec_push(&p->events, e);
    return p->events.len - 1;
}

int smem_add_access_together(SmemPlan *p, int buf, bool write)
{
    SmemEvent e = {SMEM_ACCESS, buf, write, true, false};
    vec_push(&p->events, e);
    return p->events.len - 1;
}

int smem_add_access_unordered(SmemPlan *p, int buf, bool write)
{
    SmemEvent e = {SMEM_ACCESS, buf, write, false, true};
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
            } else if (e->together && (!i || p->events.data[i - 1].kind != SMEM_ACCESS)) {
                snprintf(err, errlen, "internal error: event %d is made together with no access", i);
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
            /* halves taken in turns: the one the last iteration left is read no more only once
             * the next has passed its barrier, so no other buffer takes its bytes in the loop */
            if (b->kind == SMEM_TURNS) {
                if (b->first > i) b->first = i;
                if (b->last < end) b->last = end;
            }
        }
    }
}

/* ---- placement ---- */

/* Placement works on spans, [from, to] by buffer: the live ranges, or
 * longer for buffers kept apart. */
typedef struct { const SmemPlan *p; const int *from, *to; } Spans;

static bool spans_meet(const Spans *s, int a, int b) { return s->from[a] <= s->to[b] && s->from[b] <= s->to[a]; }

static int64_t align_up(int64_t x, int a) { return (x + a - 1) / a * a; }

/* Sorts ids by cmp(ctx, a, b) < 0 first (insertion: the lists are short,
 * and no state outside the call, as compilations may run in threads). */
typedef int (*IdOrder)(const void *ctx, int a, int b);

static void sort_ids(int *ids, int n, IdOrder cmp, const void *ctx)
{
    for (int i = 1; i < n; i++) {
        int x = ids[i], j = i;
        for (; j > 0 && cmp(ctx, x, ids[j - 1]) < 0; j--) ids[j] = ids[j - 1];
        ids[j] = x;
    }
}

/* Decreasing size, then earlier first use, then lower id. */
static int by_size(const void *ctx, int a, int b)
{
    const SmemPlan *p = ctx;
    const SmemBuf *ba = &p->bufs.data[a], *bb = &p->bufs.data[b];
    if (ba->bytes != bb->bytes) return ba->bytes > bb->bytes ? -1 : 1;
    if (ba->first != bb->first) return ba->first < bb->first ? -1 : 1;
    return (a > b) - (a < b);
}

static int by_size_up(const void *ctx, int a, int b) { return -by_size(ctx, a, b); }

static int by_offset(const void *ctx, int a, int b)
{
    const SmemPlan *p = ctx;
    int64_t oa = p->bufs.data[a].offset, ob = p->bufs.data[b].offset;
    if (oa != ob) return oa < ob ? -1 : 1;
    return (a > b) - (a < b);
}

/* The lowest offset for buffer b clear of every placed buffer whose span
 * meets its. */
static int64_t first_fit(SmemPlan *p, const Spans *sp, int b, const int *placed, int nplaced, int *near)
{
    const SmemBuf *buf = &p->bufs.data[b];
    int n = 0;
    for (int i = 0; i < nplaced; i++)
        if (spans_meet(sp, placed[i], b)) near[n++] = placed[i];
    sort_ids(near, n, by_offset, p);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        const SmemBuf *q = &p->bufs.data[near[i]];
        if (q->offset >= at + buf->bytes) break;
        if (q->offset + q->bytes > at) at = align_up(q->offset + q->bytes, buf->align);
    }
    return at;
}

/* First fit by decreasing size over the spans; the area's size. */
static int64_t place_spans(SmemPlan *p, const Spans *sp)
{
    int n = p->bufs.len, *order = xmalloc(sizeof *order * (size_t)(n + 1)), *near = xmalloc(sizeof *near * (size_t)(n + 1));
    int nlive = 0;
    for (int b = 0; b < n; b++) {
        p->bufs.data[b].offset = 0;
        if (p->bufs.data[b].first >= 0 && p->bufs.data[b].bytes > 0) order[nlive++] = b;
    }
    sort_ids(order, nlive, by_size, p);
    int64_t bytes = 0;
    for (int i = 0; i < nlive; i++) {
        SmemBuf *b = &p->bufs.data[order[i]];
        b->offset = first_fit(p, sp, order[i], order, i, near);
        if (b->offset + b->bytes > bytes) bytes = b->offset + b->bytes;
    }
    free(order);
    free(near);
    return bytes;
}

/* The most shared memory a block may opt in to on the devices a kernel
 * may run on (compute capability 8.6 and 8.9, 8.0 and 8.7, 9.0); which
 * device is known only at launch. */
static const int64_t block_limits[] = {101376, 166912, 232448};

/* The bytes an area of least bytes may grow by, for buffers of their own,
 * without passing a block limit it is under: bytes it does not have to
 * take would otherwise keep a config off a device it fits. */
static int64_t room_under_limit(int64_t least)
{
    for (size_t i = 0; i < sizeof block_limits / sizeof *block_limits; i++)
        if (least <= block_limits[i]) return block_limits[i] - least;
    return INT64_MAX;
}

/* Scratch that shares bytes with a buffer used just before it needs a
 * barrier first (its writes would meet the other's last reads), where
 * bytes of its own need none. So the smallest scratch buffers, while they
 * take at most 1/16 of the least area, and 1 to 4 KB, and the area stays
 * under the block limit the least one is under, are kept apart: their span
 * is the whole kernel. If that placement costs more than their sum (first
 * fit is no optimum), the least one stays. */
static void place(SmemPlan *p)
{
    int n = p->bufs.len, *from = xmalloc(sizeof *from * (size_t)(n + 1)), *to = xmalloc(sizeof *to * (size_t)(n + 1));
    int *small = xmalloc(sizeof *small * (size_t)(n + 1)), nsmall = 0;
    int64_t *least_at = xmalloc(sizeof *least_at * (size_t)(n + 1));
    for (int b = 0; b < n; b++) {
        from[b] = p->bufs.data[b].first;
        to[b] = p->bufs.data[b].last;
        if (p->bufs.data[b].kind == SMEM_SCRATCH && p->bufs.data[b].first >= 0 && p->bufs.data[b].bytes > 0) small[nsmall++] = b;
    }
    Spans sp = {p, from, to};
    int64_t least = place_spans(p, &sp), budget = least / 16 < 1024 ? 1024 : least / 16 > 4096 ? 4096 : least / 16, apart = 0;
    int64_t room = room_under_limit(least);
    if (budget > room) budget = room;
    for (int b = 0; b < n; b++) least_at[b] = p->bufs.data[b].offset;
    sort_ids(small, nsmall, by_size_up, p);
    for (int i = 0; i < nsmall && apart + p->bufs.data[small[i]].bytes <= budget; i++) {
        apart += p->bufs.data[small[i]].bytes;
        from[small[i]] = 0;
        to[small[i]] = p->events.len;
    }
    p->bytes = least;
    if (apart) {
        int64_t bytes = place_spans(p, &sp);
        if (bytes <= least + apart) p->bytes = bytes;
        else
            for (int b = 0; b < n; b++) p->bufs.data[b].offset = least_at[b];
    }
    free(from);
    free(to);
    free(small);
    free(least_at);
}

bool smem_bufs_overlap(const SmemPlan *p, int a, int b)
{
    const SmemBuf *x = &p->bufs.data[a], *y = &p->bufs.data[b];
    if (x->first < 0 || y->first < 0 || !x->bytes || !y->bytes) return false;
    return x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
}

/* ---- barriers ----
 * Accesses since the last barrier are pending: a read or a write of a
 * buffer by some threads, which others may not have seen. An access needs
 * a barrier before it when a pending access shares a byte with it and
 * either writes (read after write, write after read, write after write),
 * unless both are of one ring, whose copies and reads its waits order,
 * and the later one is not unordered: a copy before the ring's loop meets
 * the ring's reads and ordered copies still pending (those of the loop's
 * last run, inside an outer loop), though not the other copies before the
 * loop (each its own slot). A
 * loop's body starts with what was pending at its entry and what its end
 * leaves, up to a fixed point (one more iteration may always follow);
 * after the loop, what was pending at its head (it may run no iteration);
 * after an if, what either branch leaves. The places a barrier may go are
 * accesses and loop entries: placing one before every such event orders
 * every conflict; then each is taken out again, the innermost loops'
 * first, where the check below still holds without it. Accesses made
 * together are one place: they all meet what was pending before the
 * first, where their barrier goes. */

typedef struct {
    const SmemPlan *p;
    const int *match;
    const bool *barrier;
    int words;            /* 64-bit words of a set of buffers */
    uint64_t *overlap;    /* by buffer: the buffers an access of it conflicts with */
} Check;

static void put(uint64_t *set, int b) { set[b / 64] |= (uint64_t)1 << (b % 64); }

/* The pending set: reads in its first third, writes in its second, and in
 * its last the writes of rings by ordered accesses (their loops' copies). */
enum { PENDING_PARTS = 3 };
static uint64_t *pending_new(const Check *k) { return xcalloc((size_t)(PENDING_PARTS * k->words) + 1, sizeof(uint64_t)); }

static bool has(const uint64_t *set, int b) { return set[b / 64] >> (b % 64) & 1; }

static bool conflicts(const Check *k, const uint64_t *pend, const SmemEvent *e)
{
    const uint64_t *o = k->overlap + (size_t)e->buf * (size_t)k->words, *reads = pend, *writes = pend + k->words;
    for (int i = 0; i < k->words; i++)
        if (o[i] & (writes[i] | (e->write ? reads[i] : 0))) return true;
    /* an unordered access of a ring meets the ring's own ordered ones */
    if (e->unordered && (has(pend + 2 * k->words, e->buf) || (e->write && has(reads, e->buf)))) return true;
    return false;
}

static void record(const Check *k, uint64_t *pend, const SmemEvent *e)
{
    put(pend + (e->write ? k->words : 0), e->buf);
    if (e->write && !e->unordered && k->p->bufs.data[e->buf].kind == SMEM_RING) put(pend + 2 * k->words, e->buf);
}

/* Whether every run of events lo .. hi-1 passes a barrier (a nested loop's
 * body may run no iteration). */
static bool always_barrier(const Check *k, int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        const SmemEvent *e = &k->p->events.data[i];
        if (k->barrier[i] || e->kind == SMEM_BARRIER) return true;
        if (e->kind == SMEM_LOOP) i = k->match[i];
        else if (e->kind == SMEM_IF) {
            int els = k->match[i], end = k->match[els];
            if (always_barrier(k, i + 1, els) && always_barrier(k, els + 1, end)) return true;
            i = end;
        }
    }
    return false;
}

/* A loop body's turns (SMEM_TURNS accessed in it, not in a nested loop)
 * taken out of pend at its end when every iteration passes a barrier: the
 * next iteration uses the other half, and the one after it this half again
 * only past that iteration's barrier. */
static void forget_turns(const Check *k, int lo, int hi, uint64_t *pend)
{
    if (!always_barrier(k, lo, hi)) return;
    for (int i = lo; i < hi; i++) {
        const SmemEvent *e = &k->p->events.data[i];
        if (e->kind == SMEM_LOOP) i = k->match[i];
        else if (e->kind == SMEM_ACCESS && k->p->bufs.data[e->buf].kind == SMEM_TURNS)
            for (int part = 0; part < PENDING_PARTS; part++) pend[part * k->words + e->buf / 64] &= ~((uint64_t)1 << (e->buf % 64));
    }
}

/* Runs events lo .. hi-1 from pending set pend (updated); false, with *at
 * the access, when one conflicts with a pending access and no barrier
 * comes between. */
static bool walk(const Check *k, int lo, int hi, uint64_t *pend, int *at)
{
    size_t size = sizeof *pend * (size_t)(PENDING_PARTS * k->words);
    for (int i = lo; i < hi; i++) {
        const SmemEvent *e = &k->p->events.data[i];
        if (k->barrier[i] || e->kind == SMEM_BARRIER) memset(pend, 0, size);
        if (e->kind == SMEM_ACCESS) {
            /* the accesses made together meet what was pending before the first */
            int last = i;
            while (last + 1 < hi && k->p->events.data[last + 1].kind == SMEM_ACCESS && k->p->events.data[last + 1].together) last++;
            for (int j = i; j <= last; j++)
                if (conflicts(k, pend, &k->p->events.data[j])) { *at = j; return false; }
            for (int j = i; j <= last; j++) record(k, pend, &k->p->events.data[j]);
            i = last;
        } else if (e->kind == SMEM_LOOP) {
            int end = k->match[i];
            uint64_t *head = pending_new(k), *next = pending_new(k), *left = pending_new(k);
            memcpy(head, pend, size);
            bool ok;
            for (;;) {
                memcpy(next, head, size);
                if (!(ok = walk(k, i + 1, end, next, at))) break;
                /* what the last iteration leaves stays pending after the loop, its turns too */
                for (int w = 0; w < PENDING_PARTS * k->words; w++) left[w] |= next[w];
                forget_turns(k, i + 1, end, next);
                for (int w = 0; w < PENDING_PARTS * k->words; w++) next[w] |= pend[w];
                if (!memcmp(next, head, size)) break;
                memcpy(head, next, size);
            }
            for (int w = 0; w < PENDING_PARTS * k->words; w++) pend[w] = head[w] | left[w];
            free(head);
            free(next);
            free(left);
            if (!ok) return false;
            i = end;
        } else if (e->kind == SMEM_IF) {
            int els = k->match[i], end = k->match[els];
            uint64_t *other = pending_new(k);
            memcpy(other, pend, size);
            bool ok = walk(k, i + 1, els, pend, at) && walk(k, els + 1, end, other, at);
            for (int w = 0; w < PENDING_PARTS * k->words; w++) pend[w] |= other[w];
            free(other);
            if (!ok) return false;
            i = end;
        }
    }
    return true;
}

static bool check_barriers(const Check *k, int *at)
{
    uint64_t *pend = pending_new(k);
    bool ok = walk(k, 0, k->p->events.len, pend, at);
    free(pend);
    return ok;
}

static Check check_new(const SmemPlan *p, const int *match, const bool *barrier)
{
    Check k = {p, match, barrier, (p->bufs.len + 63) / 64, NULL};
    k.overlap = xcalloc((size_t)p->bufs.len * (size_t)k.words + 1, sizeof *k.overlap);
    for (int a = 0; a < p->bufs.len; a++)
        for (int b = 0; b < p->bufs.len; b++)
            if (smem_bufs_overlap(p, a, b) && !(a == b && p->bufs.data[a].kind == SMEM_RING))
                put(k.overlap + (size_t)a * (size_t)k.words, b);
    return k;
}

/* Deeper loops first, then program order. */
static int by_depth(const void *ctx, int a, int b)
{
    const int *depth = ctx;
    if (depth[a] != depth[b]) return depth[a] > depth[b] ? -1 : 1;
    return (a > b) - (a < b);
}

static void place_barriers(SmemPlan *p, const int *match)
{
    int n = p->events.len, ncand = 0;
    int *depth = xmalloc(sizeof *depth * (size_t)(n + 1)), *cand = xmalloc(sizeof *cand * (size_t)(n + 1));
    for (int i = 0, d = 0; i < n; i++) {
        SmemEventKind kind = p->events.data[i].kind;
        if (kind == SMEM_LOOP_END) d--;
        depth[i] = d;
        if (kind == SMEM_LOOP) d++;
        if ((kind == SMEM_ACCESS && !p->events.data[i].together) || kind == SMEM_LOOP) {
            p->barrier[i] = true;
            cand[ncand++] = i;
        }
    }
    sort_ids(cand, ncand, by_depth, depth);
    Check k = check_new(p, match, p->barrier);
    for (int j = 0; j < ncand; j++) {
        int at;
        p->barrier[cand[j]] = false;
        if (!check_barriers(&k, &at)) p->barrier[cand[j]] = true;
    }
    free(k.overlap);
    free(depth);
    free(cand);
}

bool smem_plan_check(const SmemPlan *p, const bool *barrier, int *at)
{
    char err[128];
    int *match = xmalloc(sizeof *match * (size_t)(p->events.len + 1));
    bool ok = match_events(p, match, err, sizeof err);
    *at = -1;
    if (ok) {
        Check k = check_new(p, match, barrier);
        ok = check_barriers(&k, at);
        free(k.overlap);
    }
    free(match);
    return ok;
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
        place_barriers(p, match);
    }
    free(match);
    return ok;
}
