/* cpusim_shared.c: shared memory under the executor: the race shadow of
 * every shared byte (cpusim.c says what is a race), checked at each
 * access the instrumented code reports, and the cp.async copies in flight
 * from their issue to the wait that covers them. */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared-memory races ---- */

const char *access_verb(int kind)
{
    return kind == ACCESS_READ ? " reads" : kind == ACCESS_WRITE ? " writes" : kind == ACCESS_COPY ? "'s cp.async writes" : "'s bulk tensor copy writes";
}

const char *site_name(const cpusim *s, int32_t site)
{
    return site >= 0 && site < s->nsites ? s->sites[site] : "ldmatrix";
}

static SharedArea *shared_area_of(cpusim *s, uint64_t addr, uint64_t bytes)
{
    for (int i = 0; i < s->nshared; i++) {
        SharedArea *a = &s->shared[i];
        if (addr >= (uintptr_t)a->addr && bytes <= a->bytes && addr - (uintptr_t)a->addr <= a->bytes - bytes) return a;
    }
    return NULL;
}

static void race_fail(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, int other, bool other_wrote,
                      int32_t other_site)
{
    launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that thread %d %s (in %s) "
                "with no barrier between",
                L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name,
                site_name(L->s, site), other, other_wrote ? "wrote" : "read", site_name(L->s, other_site));
}

/* An access of a byte a cp.async is still copying to: on the GPU the copy
 * lands any time before its thread's wait, so even its own thread may not
 * touch the byte until then. */
static void in_flight_fail(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, const ByteShadow *b)
{
    launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that thread %d's cp.async "
                "(in %s) may still be writing: no cp.async wait of thread %d covers it yet",
                L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name, site_name(L->s, site), b->copier,
                site_name(L->s, b->c_site), b->copier);
}

/* Thread t's read of byte b at its clock now, among the (at most two)
 * reads of this epoch a write must be ordered after: a thread's latest
 * read replaces its earlier one, and a read ordered before t's gives up
 * its place (a write ordered after t's read is after it too). */
static void record_read(Launch *L, ByteShadow *b, int t, int32_t site, uint32_t now)
{
    uint64_t e = L->s->epoch;
    int j = -1;
    if (b->r_epoch != e) b->r_epoch = e, b->reader[0] = b->reader[1] = NO_THREAD, j = 0;
    for (int k = 0; k < 2 && j < 0; k++)
        if (b->reader[k] == t || b->reader[k] == NO_THREAD) j = k;
    for (int k = 0; k < 2 && j < 0; k++)
        if (order_before(L, b->reader[k], b->r_clock[k], t)) j = k;
    if (j < 0) return;   /* two reads unordered with t's: a write must follow all three, and one of them suffices */
    b->reader[j] = (uint16_t)t, b->r_site[j] = site, b->r_clock[j] = now;
}

/* Records thread t's access of bytes bytes at addr; false, the launch
 * failed, on a race or an access outside shared memory. Same-warp
 * accesses are no exception: the code generator never relies on a warp
 * running in lockstep. */
bool check_shared_access(Launch *L, int t, uint64_t addr, uint64_t bytes, int kind, int32_t site)
{
    cpusim *s = L->s;
    SharedArea *a = shared_area_of(s, addr, bytes);
    if (!a) {
        launch_fail(L, "block (%u, %u, %u) thread %d%s %llu bytes at %p (in %s), outside shared memory", L->block[0],
                    L->block[1], L->block[2], t, access_verb(kind), (unsigned long long)bytes,
                    (void *)(uintptr_t)addr, site_name(s, site));
        return false;
    }
    size_t off = addr - (uintptr_t)a->addr;
    if (!mbarrier_bytes_ok(L, t, kind, site, a, off, bytes)) return false;
    uint64_t e = s->epoch;
    uint32_t now = order_now(L, t);
    for (size_t i = off; i < off + bytes; i++) {
        ByteShadow *b = &a->shadow[i];
        if (b->copier != NO_THREAD) {
            in_flight_fail(L, t, kind, site, a, i, b);
            return false;
        }
        if (b->tma && !tma_access_ok(L, t, kind, site, a, i, b)) return false;
        if (kind != ACCESS_READ && b->wg_reads) {
            wgmma_overwrite_fail(L, t, kind, site, a, i);
            return false;
        }
        if (kind == ACCESS_READ && b->w_epoch < L->block_epoch && !L->unwritten.seen)
            L->unwritten.seen = true, L->unwritten.thread = t, L->unwritten.byte = i, L->unwritten.area = a,
            L->unwritten.site = site;
        if (b->w_epoch == e && b->writer != t && b->tma != TMA_LANDED && !order_before(L, b->writer, b->w_clock, t)) {
            race_fail(L, t, kind, site, a, i, b->writer, true, b->w_site);
            return false;
        }
        if (kind != ACCESS_READ && b->r_epoch == e)
            for (int j = 0; j < 2; j++)
                if (b->reader[j] != NO_THREAD && b->reader[j] != t && !order_before(L, b->reader[j], b->r_clock[j], t)) {
                    race_fail(L, t, kind, site, a, i, b->reader[j], false, b->r_site[j]);
                    return false;
                }
        if (kind == ACCESS_COPY || kind == ACCESS_BULK) {
            continue;   /* marked in flight by the caller, once every byte passed */
        } else if (kind == ACCESS_WRITE) {
            b->w_epoch = e, b->writer = (uint16_t)t, b->w_site = site, b->w_tick = L->fence_tick, b->tma = TMA_NONE;
            b->w_clock = now;
        } else {
            record_read(L, b, t, site, now);
        }
    }
    return true;
}

/* At a barrier or the block's end: a read of a byte the block had not
 * written (on the GPU, what an earlier block left there, or garbage) fails
 * the launch, unless a thread wrote it later in the epoch, which was
 * reported as a race. */
bool end_epoch(Launch *L)
{
    if (L->unwritten.seen && !L->failed)
        launch_fail(L, "block (%u, %u, %u) thread %d reads byte %zu of %s (in %s), which no thread of the block wrote before",
                    L->block[0], L->block[1], L->block[2], L->unwritten.thread, L->unwritten.byte, L->unwritten.area->name,
                    site_name(L->s, L->unwritten.site));
    L->unwritten.seen = false;
    return !L->failed;
}

/* Called by the instrumented code before each access of shared memory.
 * A race abandons the block at once, as a memory fault does. */
void sim_shared_access(uint64_t addr, uint64_t bytes, int32_t kind, int32_t site)
{
    Launch *L = current_launch;
    if (!check_shared_access(L, L->cur, addr, bytes, kind, site)) setcontext(&L->sched);
}

/* ---- cp.async: a copy in flight until a wait of its thread ---- */

/* Called by the instrumented code before each cp.async copy and wait, so
 * that the executor can name where it is. */
void sim_async_site(int32_t site)
{
    Launch *L = current_launch;
    L->th[L->cur].async_site = site;
}

bool tensor_holds(const Launch *L, uint64_t addr, uint64_t bytes)
{
    for (int i = 0; i < L->ntensors; i++) {
        const TensorSpan *ts = &L->tensors[i];
        if (addr >= ts->lo && bytes <= ts->hi - ts->lo && addr - ts->lo <= ts->hi - ts->lo - bytes) return true;
    }
    return false;
}

/* Thread t's cp.async (intrinsic id, arguments in): the copy of its size
 * from global src to shared dst, only the first src_size bytes read, the
 * rest zeros. It is checked as a write of dst now, so a read of dst by
 * another thread since the last barrier is a race; then every byte of dst
 * is in flight until a wait of t covers the copy. The source must lie in
 * a tensor argument (by its dims) unless src_size is 0. */
bool issue_async_copy(Launch *L, int t, int id, const uint64_t *in)
{
    Thread *th = &L->th[t];
    unsigned bytes = async_copy_bytes(id);
    uint64_t dst = in[0], src = in[1];
    uint32_t src_size = async_copy_has_src_size(id) ? lo32(in[2]) : bytes;
    const char *where = site_name(L->s, th->async_site);
    if (src_size > bytes) {
        launch_fail(L, "block (%u, %u, %u) thread %d's cp.async (in %s) has src_size %u, past its %u bytes", L->block[0],
                    L->block[1], L->block[2], t, where, src_size, bytes);
        return false;
    }
    if (dst % bytes || (src_size && src % bytes)) {
        launch_fail(L, "block (%u, %u, %u) thread %d's cp.async (in %s) of %u bytes %s %p, not %u-byte aligned", L->block[0],
                    L->block[1], L->block[2], t, where, bytes, dst % bytes ? "to" : "from",
                    (void *)(uintptr_t)(dst % bytes ? dst : src), bytes);
        return false;
    }
    if (src_size && !tensor_holds(L, src, src_size)) {
        launch_fail(L, "block (%u, %u, %u) thread %d's cp.async (in %s) reads %u bytes at %p, outside every tensor argument",
                    L->block[0], L->block[1], L->block[2], t, where, src_size, (void *)(uintptr_t)src);
        return false;
    }
    if (!check_shared_access(L, t, dst, bytes, ACCESS_COPY, th->async_site)) return false;
    if (th->ncopies == th->copies_cap) {
        th->copies_cap = th->copies_cap ? 2 * th->copies_cap : 8;
        th->copies = realloc(th->copies, sizeof *th->copies * (size_t)th->copies_cap);
    }
    AsyncCopy *c = &th->copies[th->ncopies++];
    L->s->async_copies++;
    c->area = shared_area_of(L->s, dst, bytes);
    c->off = dst - (uintptr_t)c->area->addr;
    c->bytes = bytes;
    c->group = th->groups;
    c->site = th->async_site;
    memset(c->data, 0, sizeof c->data);
    if (src_size) memcpy(c->data, (const void *)(uintptr_t)src, src_size);
    for (unsigned i = 0; i < bytes; i++) {
        ByteShadow *b = &c->area->shadow[c->off + i];
        b->copier = (uint16_t)t, b->c_site = c->site;
    }
    return true;
}

/* Thread t waits until at most pending of its committed groups are in
 * flight: the copies of the older groups land now, each byte then written
 * by t at the wait (its site), so a reader in another thread needs a
 * barrier after it. */
void wait_async_copies(Launch *L, int t, uint32_t pending)
{
    Thread *th = &L->th[t];
    uint32_t landed = th->groups > pending ? th->groups - pending : 0;   /* the groups numbered below */
    int kept = 0;
    for (int i = 0; i < th->ncopies; i++) {
        AsyncCopy *c = &th->copies[i];
        if (c->group >= landed) {
            th->copies[kept++] = *c;
            continue;
        }
        memcpy(c->area->addr + c->off, c->data, c->bytes);
        for (unsigned j = 0; j < c->bytes; j++) {
            ByteShadow *b = &c->area->shadow[c->off + j];
            b->copier = NO_THREAD, b->tma = TMA_NONE;
            b->w_epoch = L->s->epoch, b->writer = (uint16_t)t, b->w_site = th->async_site, b->w_tick = L->fence_tick, b->w_clock = order_now(L, t);
        }
    }
    th->ncopies = kept;
}

/* Forgets every copy in flight (before a block, after the launch), so no
 * byte stays in flight into the next. */
void drop_async_copies(Launch *L)
{
    for (int t = 0; t < L->T; t++) {
        Thread *th = &L->th[t];
        for (int i = 0; i < th->ncopies; i++)
            for (unsigned j = 0; j < th->copies[i].bytes; j++) th->copies[i].area->shadow[th->copies[i].off + j].copier = NO_THREAD;
        th->ncopies = 0;
        th->groups = 0;
    }
}

