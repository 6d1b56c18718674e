/* cpusim_tma.c: sm_90a's copy engine under the executor: mbarriers, the
 * bulk tensor copy (cp.async.bulk.tensor) and the tensor maps it reads,
 * the bulk adds (cp.reduce.async.bulk, of bytes in a row or of a tensor
 * map's box).
 *
 * Tensor maps: the driver's are opaque, so the launch passes its own in
 * each descriptor's 128-byte parameter (SimTensorMap: the tensor's base,
 * dims and row stride, the box and swizzle of NAME_copy_descriptors),
 * built as the runtime builds the real one (runtime/exec_gpu.c build_map),
 * and sets the descriptor's flag where the runtime could build it (address
 * and row stride 16-byte aligned).
 *
 * mbarriers: init sets the count of arrivals a phase waits for; arrive
 * takes one, expect_tx adds transaction bytes, a bulk copy's complete_tx
 * takes them off; a phase completes when both reach zero, and the next
 * begins with the init count. try_wait.parity p succeeds once the phase of
 * parity p before the current one completed (the current phase's parity
 * is not p); a failed try_wait parks the thread until the phase
 * completes, so the others run, and a wait no thread can satisfy is a
 * deadlock (cpusim.c). Errors: an mbarrier used before its init, a phase
 * whose copies completed more bytes than expect_tx announced (on the GPU
 * the phase completes early, its waiters read stale bytes), a box starting
 * inside a 16-byte unit of its row (the H200 faults on it).
 *
 * The bulk copy reads its box at issue (zeros outside the tensor, negative
 * coordinates too) and lays it out as the hardware's swizzle does (the
 * 16-byte chunks of a row XORed with the address's bits from 7 up, as
 * cpusim_wgmma.c decodes them); it completes as late as it can: when no
 * thread can go on without it (cpusim.c), its bytes landing and its
 * complete_tx counting on its mbarrier's phase current then. Its issue is checked as a write of the
 * box by the issuing thread (a write over bytes another thread read since
 * the last barrier, or a wgmma in flight reads, is a race); until its phase
 * completes the bytes are in flight (any access is an error), then written
 * by the async proxy: a thread may touch them once its own try_wait saw
 * that phase complete, and a wgmma reads them with no proxy fence. */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the launch's tensor maps ---- */

void pack_tensor_maps(Launch *L, const ph_arg *args, uint64_t *slots, int n)
{
    const SimKernel *k = L->k;
    for (int j = 0; j < k->ndescs; j++) {
        const CodegenCopyDesc *d = &k->descs[j];
        SimTensorMap m = {0};
        bool ok = d->param >= 0 && d->param < k->nparams && k->params[d->param].is_tensor;
        if (ok) {
            const ph_arg *a = &args[d->param];
            m = (SimTensorMap){SIM_MAP_MAGIC, a->ptr, {k->params[d->param].rank == 2 ? a->dims[1] : 1, a->dims[0]}, 0,
                               d->rows, d->cols, d->swizzle, j, d->elem_bytes};
            m.row_stride = m.dims[0] * d->elem_bytes;
            ok = a->ptr % 16 == 0 && m.row_stride % 16 == 0 && m.dims[0] > 0 && m.dims[1] > 0;
        }
        memset(L->maps[j], 0, sizeof L->maps[j]);
        if (ok) memcpy(L->maps[j], &m, sizeof m);
        L->map_ok[j] = ok;
        slots[n + j] = (uint64_t)(uintptr_t)L->maps[j];
        slots[n + k->ndescs + j] = ok;
    }
}

/* ---- mbarriers ---- */

#define block_fail(L, fmt, ...) \
    launch_fail(L, "block (%u, %u, %u) thread %d: " fmt, (L)->block[0], (L)->block[1], (L)->block[2], (L)->cur, __VA_ARGS__)

/* The shared area holding the 32-bit shared address addr (a host
 * address's low bits: the areas lie on 256 KiB boundaries), *off its
 * offset there; NULL when none holds bytes bytes there. */
static SharedArea *area_of_shared32(Launch *L, uint32_t addr, size_t bytes, size_t *off)
{
    *off = 0;
    for (int i = 0; i < L->s->nshared; i++) {
        SharedArea *a = &L->s->shared[i];
        uint32_t o = addr - (uint32_t)(uintptr_t)a->addr;
        if (o < a->bytes && bytes <= a->bytes - o) return *off = o, a;
    }
    return NULL;
}

static int find_mbarrier(const Launch *L, const SharedArea *a, size_t off)
{
    for (int i = 0; i < L->nmbar; i++)
        if (L->mbar[i].area == a && L->mbar[i].off == off) return i;
    return -1;
}

/* The initialised mbarrier at 32-bit shared address addr; -1, the launch
 * failed, when there is none. */
static int mbarrier_at(Launch *L, uint32_t addr, const char *what)
{
    size_t off;
    SharedArea *a = area_of_shared32(L, addr, 8, &off);
    int i = a && off % 8 == 0 ? find_mbarrier(L, a, off) : -1;
    if (i < 0) block_fail(L, "%s on the mbarrier at shared address 0x%x, %s", what, addr,
                          !a ? "outside shared memory" : off % 8 ? "not 8-byte aligned" : "which no mbarrier.init initialised");
    return i;
}

static int mbarrier_of_host(Launch *L, uint64_t addr, const char *what) { return mbarrier_at(L, (uint32_t)addr, what); }

/* Completes mbarrier b's phase when no arrival and no byte is pending;
 * false, the launch failed, when its copies brought more bytes than
 * expected. */
static bool settle(Launch *L, int b)
{
    MBarrier *m = &L->mbar[b];
    if (m->pending) return true;
    if (m->tx < 0) {
        launch_fail(L, "block (%u, %u, %u): phase %u of the mbarrier at byte %zu of %s completes %lld transaction bytes more than "
                    "its expect_tx announced: on the GPU the phase completes before its bulk copies land",
                    L->block[0], L->block[1], L->block[2], m->phases, m->off, m->area->name, (long long)-m->tx);
        return false;
    }
    if (m->tx) return true;
    order_phase_complete(L, b);
    m->phases++;
    m->pending = m->count;
    return true;
}

void sim_mbarrier_intrinsic(Launch *L, int id, const uint64_t *in, uint64_t *out)
{
    if (id == IN_MBAR_INIT) {
        size_t off;
        SharedArea *a = area_of_shared32(L, (uint32_t)in[0], 8, &off);
        uint32_t count = lo32(in[1]);
        if (!a || off % 8 || !count) {
            block_fail(L, "mbarrier.init at %p with count %u: %s", (void *)(uintptr_t)in[0], count,
                       !a ? "outside shared memory" : off % 8 ? "not 8-byte aligned" : "a count of zero");
            setcontext(&L->sched);
        }
        int b = find_mbarrier(L, a, off);
        if (b < 0 && L->nmbar == MAX_MBARRIERS) {
            block_fail(L, "more than %d mbarriers", MAX_MBARRIERS);
            setcontext(&L->sched);
        }
        if (b < 0) b = L->nmbar++;
        for (int i = 0; i < L->nbulk; i++)
            if (L->bulk[i].bar == b) {
                block_fail(L, "mbarrier.init of the mbarrier at byte %zu of %s, which a bulk copy in flight completes on", off, a->name);
                setcontext(&L->sched);
            }
        L->mbar[b] = (MBarrier){.area = a, .off = off, .count = count, .pending = count};
        order_mbarrier_init(L, b);
        for (int t = 0; t < L->T; t++) L->th[t].mb_seen[b] = 0;
        return;
    }
    int b = mbarrier_of_host(L, in[0], "mbarrier.arrive");
    if (b < 0) setcontext(&L->sched);
    MBarrier *m = &L->mbar[b];
    out[0] = m->phases;   /* the state token: the phase it arrived on */
    order_arrive(L, L->cur, b);
    m->pending--;
    if (!settle(L, b)) setcontext(&L->sched);
}

/* ---- the bulk tensor copy ---- */

static int64_t swizzled_offset(int64_t off, int swizzle_bytes)
{
    int64_t mask = swizzle_bytes / 16 - 1;
    return mask > 0 ? off ^ (((off >> 7) & mask) << 4) : off;
}

/* Whether element (r, c) of map m's box at column x, row y lies inside
 * its tensor, and its global address *at. */
static bool box_elem(const SimTensorMap *m, int64_t x, int64_t y, int r, int c, uint64_t *at)
{
    int64_t gx = x + c, gy = y + r;
    *at = m->base + (uint64_t)gy * (uint64_t)m->row_stride + (uint64_t)gx * (uint64_t)m->elem;
    return gx >= 0 && gy >= 0 && gx < m->dims[0] && gy < m->dims[1];
}

/* The map operand: one the launch built; NULL, the launch failed, if not. */
static const SimTensorMap *map_of(Launch *L, const AsmCall *a, uint64_t p)
{
    for (int j = 0; j < L->k->ndescs; j++)
        if (p == (uintptr_t)L->maps[j]) {
            if (L->map_ok[j]) return (const SimTensorMap *)(const void *)L->maps[j];
            block_fail(L, "a bulk tensor copy (in %s) through descriptor %d's tensor map, which the launch could not build "
                          "(its flag is 0: the tensor's address or row stride is not 16-byte aligned)",
                       site_name(L->s, a->site), j);
            return NULL;
        }
    block_fail(L, "a bulk tensor copy (in %s) whose map operand %p is not a tensor map the launch passed", site_name(L->s, a->site),
               (void *)(uintptr_t)p);
    return NULL;
}

/* The box at column x, row y of map's tensor, as shared memory at off
 * will hold it (swizzled), zeros outside the tensor; NULL, the launch
 * failed, when an element inside the map's dims lies outside every tensor
 * argument (a map that does not describe its tensor). */
static unsigned char *read_box(Launch *L, const AsmCall *a, const SimTensorMap *m, int64_t x, int64_t y, size_t off)
{
    size_t e = (size_t)m->elem, row = (size_t)m->box_cols * e, bytes = row * (size_t)m->box_rows;
    unsigned char *data = calloc(bytes, 1);
    for (int r = 0; r < m->box_rows; r++)
        for (int c = 0; c < m->box_cols; c++) {
            uint64_t src;
            if (!box_elem(m, x, y, r, c, &src)) continue;
            size_t at = (size_t)swizzled_offset((int64_t)(off + (size_t)r * row + (size_t)c * e), m->swizzle) - off;
            if (!tensor_holds(L, src, e)) {
                block_fail(L, "a bulk tensor copy (in %s) through descriptor %d's map reads element (%lld, %lld) at %p, outside "
                              "every tensor argument",
                           site_name(L->s, a->site), m->desc, (long long)(y + r), (long long)(x + c), (void *)(uintptr_t)src);
                free(data);
                return NULL;
            }
            memcpy(data + at, (const void *)(uintptr_t)src, e);
        }
    return data;
}

/* A bulk copy's bytes (data, read at issue) in flight to area + off,
 * landing when the scheduler lands the copies in flight (land_bulk_copies). */
static void queue_bulk(Launch *L, const AsmCall *a, int b, SharedArea *area, size_t off, unsigned bytes, unsigned char *data)
{
    MBarrier *mb = &L->mbar[b];
    if (L->nbulk == L->bulk_cap) {
        L->bulk_cap = L->bulk_cap ? 2 * L->bulk_cap : 16;
        L->bulk = realloc(L->bulk, sizeof *L->bulk * (size_t)L->bulk_cap);
    }
    L->bulk[L->nbulk++] = (BulkCopy){b, mb->phases, area, off, bytes, data};
    for (unsigned j = 0; j < bytes; j++) {
        ByteShadow *s = &area->shadow[off + j];
        s->tma = TMA_IN_FLIGHT, s->tma_bar = (uint8_t)b, s->tma_phase = mb->phases, s->c_site = a->site;
    }
    L->s->bulk_copies++;
}

static void bulk_copy(Launch *L, const AsmCall *a, const uint64_t *in)
{
    int t = L->cur;
    const SimTensorMap *m = map_of(L, a, in[1]);
    int b = m ? mbarrier_at(L, lo32(in[4]), "a bulk tensor copy's complete_tx") : -1;
    if (b < 0) setcontext(&L->sched);
    unsigned bytes = (unsigned)(m->box_rows * m->box_cols * m->elem);
    size_t off;
    SharedArea *area = area_of_shared32(L, lo32(in[0]), bytes, &off);
    if (!area || off % 128) {
        block_fail(L, "a bulk tensor copy (in %s) of %u bytes to shared address 0x%x, %s", site_name(L->s, a->site), bytes, lo32(in[0]),
                   area ? "not 128-byte aligned" : "outside shared memory");
        setcontext(&L->sched);
    }
    int32_t x = (int32_t)lo32(in[2]);
    if (x % (16 / m->elem)) {
        block_fail(L, "a bulk tensor copy (in %s) whose box starts at column %d, inside a 16-byte unit of its row (the H200 "
                      "faults on it: an illegal instruction)",
                   site_name(L->s, a->site), x);
        setcontext(&L->sched);
    }
    if (!check_shared_access(L, t, (uintptr_t)area->addr + off, bytes, ACCESS_BULK, a->site)) setcontext(&L->sched);
    unsigned char *data = read_box(L, a, m, x, (int32_t)lo32(in[3]), off);
    if (!data) setcontext(&L->sched);
    queue_bulk(L, a, b, area, off, bytes, data);
}

/* A bulk copy of contiguous bytes (cp.async.bulk, global to shared):
 * both addresses and the size in 16-byte units, the global bytes inside
 * one tensor argument; read at issue and landed as the tensor copies are,
 * completing on its mbarrier. */
static void bulk_load(Launch *L, const AsmCall *a, const uint64_t *in)
{
    unsigned bytes = (unsigned)a->n;
    uint64_t from = in[1];
    int b = mbarrier_at(L, lo32(in[2]), "a bulk copy's complete_tx");
    if (b < 0) setcontext(&L->sched);
    size_t off;
    SharedArea *area = area_of_shared32(L, lo32(in[0]), bytes, &off);
    if (!area || off % 16 || from % 16 || bytes % 16) {
        block_fail(L, "a bulk copy (in %s) of %u bytes from %p to shared address 0x%x: %s", site_name(L->s, a->site), bytes,
                   (void *)(uintptr_t)from, lo32(in[0]), area ? "not 16-byte aligned (address or size)" : "outside shared memory");
        setcontext(&L->sched);
    }
    if (!tensor_holds(L, from, bytes)) {
        block_fail(L, "a bulk copy (in %s) of %u bytes from %p, outside every tensor argument", site_name(L->s, a->site), bytes,
                   (void *)(uintptr_t)from);
        setcontext(&L->sched);
    }
    if (!check_shared_access(L, L->cur, (uintptr_t)area->addr + off, bytes, ACCESS_BULK, a->site)) setcontext(&L->sched);
    unsigned char *data = malloc(bytes);
    if (!data) {
        block_fail(L, "%s", "out of memory");
        setcontext(&L->sched);
    }
    memcpy(data, (const void *)(uintptr_t)from, bytes);
    queue_bulk(L, a, b, area, off, bytes, data);
}

bool land_bulk_copies(Launch *L)
{
    if (!L->nbulk) return false;
    for (int i = 0; i < L->nbulk && !L->failed; i++) {
        BulkCopy *c = &L->bulk[i];
        MBarrier *m = &L->mbar[c->bar];
        memcpy(c->area->addr + c->off, c->data, c->bytes);
        for (unsigned j = 0; j < c->bytes; j++) {
            ByteShadow *s = &c->area->shadow[c->off + j];
            s->tma = TMA_LANDED, s->tma_phase = m->phases;
            s->w_epoch = L->s->epoch, s->writer = NO_THREAD;
        }
        m->tx -= c->bytes;   /* its complete_tx, on the phase current now */
        settle(L, c->bar);
    }
    for (int i = 0; i < L->nbulk; i++) free(L->bulk[i].data);
    L->nbulk = 0;
    return !L->failed;
}

/* p, the running thread's bulk add, to be read at its next wait. */
static void push_pending_add(Launch *L, PendingAdd p)
{
    Thread *me = &L->th[L->cur];
    if (me->nadds == me->adds_cap) {
        me->adds_cap = me->adds_cap ? 2 * me->adds_cap : 4;
        me->adds = realloc(me->adds, sizeof *me->adds * (size_t)me->adds_cap);
        if (!me->adds) {
            block_fail(L, "%s", "out of memory");
            setcontext(&L->sched);
        }
    }
    me->adds[me->nadds++] = p;
}

/* A bulk add and its commit: its global bytes must lie inside one tensor
 * argument, and each shared byte a thread stored needs a fence.proxy.async
 * after the store, by that thread or by the issuing one (checked here, at
 * issue: a barrier between the store and the issuer's fence is the race
 * check's at the read, sim_bulk_reads); the shared
 * bytes are read as late as the GPU may read them, at the issuing
 * thread's next wait (sim_bulk_reads), so a slot written again before
 * that wait shows (as a race, or as wrong sums). */
void sim_bulk_add(Launch *L, const AsmCall *a, const uint64_t *in)
{
    unsigned bytes = (unsigned)a->n;
    uint64_t to = in[0];
    size_t off;
    SharedArea *area = area_of_shared32(L, lo32(in[1]), bytes, &off);
    if (!area || off % 16 || to % 16 || bytes % 16) {
        block_fail(L, "a bulk add (in %s) of %u bytes from shared address 0x%x to %p: %s", site_name(L->s, a->site), bytes, lo32(in[1]),
                   (void *)(uintptr_t)to, area ? "not 16-byte aligned (address or size)" : "outside shared memory");
        setcontext(&L->sched);
    }
    if (!tensor_holds(L, to, bytes)) {
        block_fail(L, "a bulk add (in %s) of %u bytes to %p, outside every tensor argument", site_name(L->s, a->site), bytes,
                   (void *)(uintptr_t)to);
        setcontext(&L->sched);
    }
    for (unsigned j = 0; j < bytes; j++) {
        const ByteShadow *b = &area->shadow[off + j];
        if (!proxy_fenced(L, b, L->th[L->cur].fenced_at)) {
            block_fail(L, "a bulk add (in %s) reads byte %zu of %s, which thread %d stored (in %s) with no fence.proxy.async after it, "
                          "by that thread or by the add's",
                       site_name(L->s, a->site), off + j, area->name, b->writer, site_name(L->s, b->w_site));
            setcontext(&L->sched);
        }
    }
    push_pending_add(L, (PendingAdd){area, off, bytes, to, a->site, NULL, 0, 0});
}

/* A tensor add (cp.reduce.async.bulk.tensor.2d ... .add, map's box at
 * column x, row y from the shared bytes at the last operand) and its
 * commit: the map must be an f32 one, the box start on a 16-byte unit of
 * its row (as the copy's), every element of it inside the map's dims lie
 * in a tensor argument, and each shared byte a thread stored need a
 * fence.proxy.async after the store, by that thread or by the issuing one
 * (as a bulk add's); the shared bytes are read as the hardware's
 * swizzle lays the box out, at the thread's next wait (sim_bulk_reads),
 * and elements outside the map's dims are left alone. */
void sim_bulk_tensor_add(Launch *L, const AsmCall *a, const uint64_t *in)
{
    const SimTensorMap *m = map_of(L, a, in[0]);
    if (!m) setcontext(&L->sched);
    int32_t x = (int32_t)lo32(in[1]), y = (int32_t)lo32(in[2]);
    unsigned bytes = (unsigned)(m->box_rows * m->box_cols * m->elem);
    size_t off;
    SharedArea *area = area_of_shared32(L, lo32(in[3]), bytes, &off);
    const char *wrong = m->elem != 4 ? "its map's elements are not f32"
                        : !area ? "outside shared memory"
                        : off % 128 ? "not 128-byte aligned"
                        : x % 4 ? "its box starts inside a 16-byte unit of its row"
                        : x < 0 || y < 0 ? "its box starts before the tensor (an illegal instruction on an H100)" : NULL;
    if (wrong) {
        block_fail(L, "a bulk tensor add (in %s) of %u bytes from shared address 0x%x at column %d row %d: %s", site_name(L->s, a->site),
                   bytes, lo32(in[3]), x, y, wrong);
        setcontext(&L->sched);
    }
    for (int r = 0; r < m->box_rows; r++)
        for (int c = 0; c < m->box_cols; c++) {
            uint64_t to;
            if (!box_elem(m, x, y, r, c, &to) || tensor_holds(L, to, 4)) continue;
            block_fail(L, "a bulk tensor add (in %s) through descriptor %d's map adds to element (%lld, %lld) at %p, outside every "
                          "tensor argument",
                       site_name(L->s, a->site), m->desc, (long long)y + r, (long long)x + c, (void *)(uintptr_t)to);
            setcontext(&L->sched);
        }
    for (unsigned j = 0; j < bytes; j++) {
        const ByteShadow *b = &area->shadow[off + j];
        if (!proxy_fenced(L, b, L->th[L->cur].fenced_at)) {
            block_fail(L, "a bulk tensor add (in %s) reads byte %zu of %s, which thread %d stored (in %s) with no fence.proxy.async "
                          "after it, by that thread or by the add's",
                       site_name(L->s, a->site), off + j, area->name, b->writer, site_name(L->s, b->w_site));
            setcontext(&L->sched);
        }
    }
    push_pending_add(L, (PendingAdd){area, off, bytes, 0, a->site, m, x, y});
}

/* Tensor add p's box, read from its swizzled shared bytes, added into
 * the elements inside its map's dims. */
static void add_box(const PendingAdd *p)
{
    const SimTensorMap *m = p->map;
    for (int r = 0; r < m->box_rows; r++)
        for (int c = 0; c < m->box_cols; c++) {
            uint64_t to;
            if (!box_elem(m, p->x, p->y, r, c, &to)) continue;
            size_t at = (size_t)swizzled_offset((int64_t)(p->off + (size_t)r * (size_t)m->box_cols * 4 + (size_t)c * 4), m->swizzle);
            float v, *dst = (float *)(uintptr_t)to;
            memcpy(&v, p->area->addr + at, 4);
            *dst += v;
        }
}

/* The running thread's wait for its bulk adds: each reads its shared
 * bytes now (checked as the thread's read: another thread's write since
 * the issue with no barrier between is a race) and adds them into global
 * memory (the threads run one at a time, so a plain add is atomic here). */
void sim_bulk_reads(Launch *L)
{
    Thread *me = &L->th[L->cur];
    for (int k = 0; k < me->nadds; k++) {
        const PendingAdd *p = &me->adds[k];
        if (!check_shared_access(L, L->cur, (uintptr_t)p->area->addr + p->off, p->bytes, ACCESS_READ, p->site)) setcontext(&L->sched);
        if (p->map) {
            add_box(p);
            L->s->box_adds++;
        } else {
            float *dst = (float *)(uintptr_t)p->to;
            for (unsigned i = 0; i < p->bytes / 4; i++) {
                float v;
                memcpy(&v, p->area->addr + p->off + 4 * i, 4);
                dst[i] += v;
            }
        }
        L->s->bulk_adds++;
    }
    me->nadds = 0;
}

/* Waits, parked, until the phase of parity p of mbarrier b completed. */
static void try_wait(Launch *L, int b, uint32_t p, uint64_t *out)
{
    Thread *me = &L->th[L->cur];
    while ((L->mbar[b].phases & 1) == p) {
        me->st = TH_MBARRIER, me->mb_wait = b, me->mb_parity = p;
        yield_to_scheduler(L, me);
    }
    me->mb_seen[b] = L->mbar[b].phases;
    order_wait_seen(L, L->cur, b);
    out[0] = 1;
}

void sim_tma_asm(Launch *L, const AsmCall *a, const uint64_t *in, uint64_t *out)
{
    int b;
    switch (a->op) {
    case IN_FENCE_MBAR_INIT: return;
    case IN_MBAR_EXPECT_TX:
        if ((b = mbarrier_at(L, lo32(in[0]), "mbarrier.expect_tx")) < 0) setcontext(&L->sched);
        L->mbar[b].tx += lo32(in[1]);
        return;
    case IN_MBAR_TRY_WAIT:
        if ((b = mbarrier_at(L, lo32(in[0]), "mbarrier.try_wait")) < 0) setcontext(&L->sched);
        try_wait(L, b, lo32(in[1]) & 1, out);
        return;
    case IN_BULK_TENSOR: bulk_copy(L, a, in); return;
    case IN_BULK_LOAD: bulk_load(L, a, in); return;
    }
}

bool wake_mbarrier_waiters(Launch *L)
{
    bool any = false;
    for (int t = 0; t < L->T; t++) {
        Thread *th = &L->th[t];
        if (th->st == TH_MBARRIER && (L->mbar[th->mb_wait].phases & 1) != th->mb_parity) th->st = TH_READY, any = true;
    }
    return any;
}

void describe_mbarrier_wait(const Launch *L, char *buf, size_t len)
{
    buf[0] = 0;
    for (int t = 0; t < L->T; t++) {
        const Thread *th = &L->th[t];
        if (th->st != TH_MBARRIER) continue;
        const MBarrier *m = &L->mbar[th->mb_wait];
        snprintf(buf, len, "; thread %d waits for the phase of parity %u of the mbarrier at byte %zu of %s, whose phase %u waits for "
                           "%u arrivals and %lld transaction bytes",
                 t, th->mb_parity, m->off, m->area->name, m->phases, m->pending, (long long)m->tx);
        return;
    }
}

/* ---- the copies' bytes ---- */

/* An mbarrier's 8 bytes are its own from its init to the block's end (the
 * code generator never invalidates one): an ordinary write or a copy over
 * them (another buffer placed there) fails the launch. */
bool mbarrier_bytes_ok(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, size_t bytes)
{
    if (kind == ACCESS_READ) return true;
    for (int i = 0; i < L->nmbar; i++) {
        const MBarrier *m = &L->mbar[i];
        if (m->area != a || off >= m->off + 8 || m->off >= off + bytes) continue;
        launch_fail(L, "block (%u, %u, %u): thread %d%s %zu bytes at byte %zu of %s (in %s), over the mbarrier initialised at "
                    "byte %zu: its bytes are its own until the block ends", L->block[0], L->block[1], L->block[2], t,
                    access_verb(kind), bytes, off, a->name, site_name(L->s, site), m->off);
        return false;
    }
    return true;
}

bool tma_access_ok(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, ByteShadow *b)
{
    const MBarrier *m = &L->mbar[b->tma_bar];
    if (b->tma == TMA_IN_FLIGHT) {
        launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that a bulk tensor copy "
                    "(in %s) may still be writing: phase %u of its mbarrier (byte %zu of %s) has not completed",
                    L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name, site_name(L->s, site),
                    site_name(L->s, b->c_site), b->tma_phase, m->off, m->area->name);
        return false;
    }
    /* a bulk copy over a landed one: ordered by the slot's readers (their
     * records, checked by the caller), as the producer's refill is */
    if (kind != ACCESS_BULK && L->th[t].mb_seen[b->tma_bar] <= b->tma_phase) {
        launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that a bulk tensor copy "
                    "(in %s) wrote, with no try_wait of its own seeing phase %u of the copy's mbarrier (byte %zu of %s) complete",
                    L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name, site_name(L->s, site),
                    site_name(L->s, b->c_site), b->tma_phase, m->off, m->area->name);
        return false;
    }
    return true;
}

void drop_tma(Launch *L)
{
    for (int i = 0; i < L->nbulk; i++) free(L->bulk[i].data);
    L->nbulk = 0;
    L->nmbar = 0;
    for (int i = 0; i < L->s->nshared; i++)
        for (size_t j = 0; j < L->s->shared[i].bytes; j++) L->s->shared[i].shadow[j].tma = TMA_NONE;
    for (int t = 0; t < L->T; t++) memset(L->th[t].mb_seen, 0, sizeof L->th[t].mb_seen);
}

bool tma_block_end(Launch *L)
{
    if (!L->nbulk || L->failed) return !L->failed;
    const BulkCopy *c = &L->bulk[0];
    const MBarrier *m = &L->mbar[c->bar];
    launch_fail(L, "block (%u, %u, %u) ends with a bulk tensor copy to byte %zu of %s in flight: phase %u of its mbarrier (byte %zu "
                "of %s) never completed",
                L->block[0], L->block[1], L->block[2], c->off, c->area->name, c->phase, m->off, m->area->name);
    return false;
}

void cpusim_copy_counts(const cpusim *s, unsigned long *bulk, unsigned long *async)
{
    *bulk = s ? s->bulk_copies : 0;
    *async = s ? s->async_copies : 0;
}

unsigned long cpusim_bulk_adds(const cpusim *s) { return s ? s->bulk_adds : 0; }
unsigned long cpusim_box_adds(const cpusim *s) { return s ? s->box_adds : 0; }
