/* cpusim_wgmma.c: Hopper's warpgroup MMA under the executor: what
 * wgmma.mma_async computes from its matrix descriptors, and its hazards.
 *
 * wgmma.mma_async is a warpgroup collective: once the 128 threads of a
 * warpgroup posted the same one (same descriptors, same group), A (64 x
 * 16; or from the threads' registers, in mma.sync's A fragment order) and
 * B (16 x N) are read from the kernel's shared area through the
 * descriptors (start, leading and stride byte offsets, the 128, 64 or
 * 32-byte swizzle; K-major or, with imm-trans, MN-major), converted to
 * f32, and A B added into each thread's accumulators (warp w of the
 * warpgroup, lane l, value i: row 16w + l/4 + 8((i/2)%2), column 2(l%4) +
 * i%2 + 8(i/4)), every sum rounded once. The reads happen at issue, and
 * are checked then as reads by two threads of the warpgroup (a byte some
 * thread wrote since the last barrier is a race, as is one a cp.async is
 * still copying to), and for the async proxy: a byte stored by a thread
 * (a store or a cp.async landing: the generic proxy) needs a
 * fence.proxy.async after the store, by the writer or by every thread of
 * the warpgroup, before the wgmma.
 *
 * The wgmma stays in flight, its bytes with it, until a wgmma.wait_group
 * (a warp collective) of each of the warpgroup's four warps covers its
 * group (committed groups but the last N): a write of those bytes by any
 * thread meanwhile is an error (a ring slot refilled before the wgmma that
 * read it completed), and so is a thread that ends with one in flight. At
 * a warp's wait the reads count as its first lane's, so a write by
 * another thread after the wait needs a barrier first. wgmma.fence and
 * commit_group are bookkeeping; the accumulators' own ordering is LLVM's
 * (the asm ties them). */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WG_THREADS 128

/* ---- the issue of an asm call (sim_asm) ---- */

void sim_asm(int32_t call, const uint64_t *in, uint64_t *out)
{
    Launch *L = current_launch;
    Thread *me = &L->th[L->cur];
    const AsmCall *a = &L->s->asm_calls[call];
    switch (a->op) {
    case IN_FENCE_PROXY_ASYNC: me->fenced_at = ++L->fence_tick; return;
    case IN_FENCE_CTA: return;   /* the threads run one at a time: their accesses are in order already */
    case IN_WGMMA_FENCE:   /* registers passed through it come out unchanged */
        for (int i = 0; i < a->nacc; i++) out[i] = in[a->acc[i]];
        return;
    case IN_WGMMA_COMMIT: me->wg_groups++; return;
    case IN_FENCE_MBAR_INIT: case IN_MBAR_EXPECT_TX: case IN_MBAR_TRY_WAIT: case IN_BULK_TENSOR: case IN_BULK_LOAD: sim_tma_asm(L, a, in, out); return;
    case IN_BULK_ADD_F32: sim_bulk_add(L, a, in); return;
    case IN_BULK_ADD_TENSOR: sim_bulk_tensor_add(L, a, in); return;
    case IN_BULK_DRAIN: case IN_BULK_WAIT_READ: sim_bulk_reads(L); return;   /* the adds land when they read */
    case IN_RED_ADD_F32: {   /* the threads run one at a time: a plain add is atomic here */
        float *at = (float *)(uintptr_t)in[0];
        for (int i = 0; i < a->n; i++) at[i] += slot_f32(in[1 + i]);
        return;
    }
    case IN_BAR_ARRIVE:
        if (!named_barrier_ok(L, "bar.arrive", lo32(in[0]), lo32(in[1]))) setcontext(&L->sched);
        order_named_arrive(L, L->cur, lo32(in[0]), lo32(in[1]));
        if (L->failed) setcontext(&L->sched);
        return;
    default:   /* the collectives: mma_async and wait_group */
        me->asm_call = call;
        me->st = TH_WARP;
        me->op = a->op;
        me->in = in;
        me->out = out;
        yield_to_scheduler(L, me);
        return;
    }
}

/* ---- matrix descriptors ---- */

typedef struct { int64_t start, lbo, sbo; int mode; } Descriptor;

static Descriptor decode(uint64_t d)
{
    return (Descriptor){(int64_t)(d & 0x3FFF) << 4, (int64_t)((d >> 16) & 0x3FFF) << 4, (int64_t)((d >> 32) & 0x3FFF) << 4,
                        (int)(d >> 62)};
}

/* The bytes of a swizzle atom's row in mode 1, 2, 3. */
static int64_t swizzle_row_bytes(int mode) { return mode == 1 ? 128 : mode == 2 ? 64 : 32; }

/* The hardware's swizzle of a shared address: bits 4-6 (128B), 4-5 (64B)
 * or 4 (32B) XORed with the bits from 7 up. */
static int64_t swizzled(int64_t addr, int mode)
{
    int64_t mask = mode == 1 ? 7 : mode == 2 ? 3 : 1;
    return addr ^ (((addr >> 7) & mask) << 4);
}

/* The byte of element (row, k) of a K-major operand: 8-row groups sbo
 * apart, rows of the atom its row bytes apart, k contiguous. */
static int64_t k_major_at(const Descriptor *d, int row, int k)
{
    return swizzled(d->start + (row / 8) * d->sbo + (row % 8) * swizzle_row_bytes(d->mode) + k * 2, d->mode);
}

/* The byte of element (k, col) of an MN-major operand: the atom's row
 * holds row-bytes / 2 columns, atoms along MN lbo apart, its 8 rows (k)
 * the row bytes apart, groups of 8 k sbo apart. */
static int64_t mn_major_at(const Descriptor *d, int k, int col)
{
    int64_t row = swizzle_row_bytes(d->mode), per = row / 2;
    return swizzled(d->start + (col / per) * d->lbo + (col % per) * 2 + (k % 8) * row + (k / 8) * d->sbo, d->mode);
}

/* ---- the warpgroup's mma ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The launch fails with a message on warpgroup g's wgmma (site). */
#define wg_fail(L, g, site, fmt, ...)                                                                                        \
    launch_fail(L, "block (%u, %u, %u) warpgroup %d's wgmma.mma_async (in %s): " fmt, (L)->block[0], (L)->block[1],           \
                (L)->block[2], g, site_name((L)->s, site), __VA_ARGS__)

/* Reads the 16-bit element at off of the area into *v, its 16-byte chunk
 * to chunks; false, the launch failed, when it lies outside the area. */
static bool read_element(Launch *L, int g, const AsmCall *a, int64_t off, float *v, uint32_t *chunks, int *nchunks)
{
    const SharedArea *area = L->area;
    if (off < 0 || (uint64_t)off + 2 > area->bytes) {
        wg_fail(L, g, a->site, "a descriptor reaches byte %lld, outside the %zu bytes of %s", (long long)off, area->bytes, area->name);
        return false;
    }
    uint16_t h;
    memcpy(&h, area->addr + off, 2);
    *v = a->bf16 ? ph_bf16_to_f32(h) : ph_f16_to_f32(h);
    uint32_t chunk = (uint32_t)off & ~15u;
    if (!*nchunks || chunks[*nchunks - 1] != chunk) chunks[(*nchunks)++] = chunk;
    return true;
}

/* Whether the descriptor is one the executor decodes: a swizzle mode and
 * no base offset (bits 49-51). */
static bool descriptor_known(Launch *L, int g, const AsmCall *a, uint64_t d, const char *which)
{
    if (d >> 62 && !((d >> 49) & 7)) return true;
    wg_fail(L, g, a->site, "descriptor %s 0x%016llx has %s, which the executor does not model", which, (unsigned long long)d,
            d >> 62 ? "a base offset" : "no swizzle (mode 0)");
    return false;
}

/* A (64 x 16) from warpgroup g's registers: thread (warp w, lane l)'s
 * register r holds row 16w + l/4 + 8(r%2), columns 2(l%4) + 8(r/2) and
 * one more, the first in the low half. */
static void registers_a(Launch *L, int g, const AsmCall *a, float A[64][16])
{
    for (int t = g * WG_THREADS; t < (g + 1) * WG_THREADS; t++) {
        int w = (t / 32) % 4, l = t % 32;
        for (int r = 0; r < 4; r++) {
            uint32_t x = lo32(L->th[t].in[a->reg_a[r]]);
            int row = 16 * w + l / 4 + 8 * (r % 2), col = 2 * (l % 4) + 8 * (r / 2);
            for (int h = 0; h < 2; h++) {
                uint16_t e = (uint16_t)(x >> (16 * h));
                A[row][col + h] = a->bf16 ? ph_bf16_to_f32(e) : ph_f16_to_f32(e);
            }
        }
    }
}

/* A (64 x 16) through its descriptor or from registers, B (16 x N)
 * through its descriptor; the chunks read to chunks. */
static bool read_operands(Launch *L, int g, const AsmCall *a, uint64_t da, uint64_t db, float A[64][16], float (*B)[256],
                          uint32_t *chunks, int *nchunks)
{
    if ((a->desc_a >= 0 && !descriptor_known(L, g, a, da, "A")) || !descriptor_known(L, g, a, db, "B")) return false;
    Descriptor dA = decode(da), dB = decode(db);
    if (a->desc_a < 0) registers_a(L, g, a, A);
    for (int r = 0; a->desc_a >= 0 && r < 64; r++)
        for (int k = 0; k < 16; k++) {
            int64_t off = a->trans_a ? mn_major_at(&dA, k, r) : k_major_at(&dA, r, k);
            if (!read_element(L, g, a, off, &A[r][k], chunks, nchunks)) return false;
        }
    for (int n = 0; n < a->n; n++)
        for (int k = 0; k < 16; k++) {
            int64_t off = a->trans_b ? mn_major_at(&dB, k, n) : k_major_at(&dB, n, k);
            if (!read_element(L, g, a, off, &B[k][n], chunks, nchunks)) return false;
        }
    qsort(chunks, (size_t)*nchunks, sizeof *chunks, cmp_u32);
    int kept = 0;
    for (int i = 0; i < *nchunks; i++)
        if (!kept || chunks[kept - 1] != chunks[i]) chunks[kept++] = chunks[i];
    *nchunks = kept;
    return true;
}

/* The async proxy's view of byte b: stored by a thread (the generic
 * proxy) in this block, it needs a fence.proxy.async after the store by
 * its writer, or by every reader (their fewest fences is min_fenced: a
 * wgmma's warpgroup, a bulk add's issuing thread), before the read. */
bool proxy_fenced(const Launch *L, const ByteShadow *b, uint32_t min_fenced)
{
    if (b->w_epoch < L->block_epoch) return true;   /* not this block's: end_epoch's unwritten read */
    if (b->tma == TMA_LANDED) return true;          /* a bulk copy's: the async proxy's own write */
    return L->th[b->writer].fenced_at > b->w_tick || min_fenced > b->w_tick;
}

/* Checks warpgroup g's reads of chunks at issue; marks them in flight. */
static bool check_reads(Launch *L, int g, const AsmCall *a, const uint32_t *chunks, int nchunks)
{
    SharedArea *area = L->area;
    uint32_t min_fenced = UINT32_MAX;
    for (int t = g * WG_THREADS; t < (g + 1) * WG_THREADS; t++)
        if (L->th[t].fenced_at < min_fenced) min_fenced = L->th[t].fenced_at;
    for (int i = 0; i < nchunks; i++) {
        uintptr_t at = (uintptr_t)area->addr + chunks[i];
        /* read by two of its threads, so a store by either one is another thread's */
        for (int r = 0; r < 2; r++)
            if (!check_shared_access(L, g * WG_THREADS + 32 * r, at, 16, ACCESS_READ, a->site)) return false;
        for (uint32_t j = chunks[i]; j < chunks[i] + 16; j++) {
            const ByteShadow *b = &area->shadow[j];
            if (!proxy_fenced(L, b, min_fenced)) {
                wg_fail(L, g, a->site,
                        "reads byte %u of %s, which thread %d stored (in %s) with no fence.proxy.async after it, by that thread "
                        "or by every thread of the warpgroup, before the wgmma",
                        j, area->name, b->writer, site_name(L->s, b->w_site));
                return false;
            }
        }
    }
    for (int i = 0; i < nchunks; i++)
        for (uint32_t j = chunks[i]; j < chunks[i] + 16; j++) {
            ByteShadow *b = &area->shadow[j];
            b->wg_reads++, b->wg_group = (uint16_t)g, b->wg_site = a->site;
        }
    return true;
}

static void keep_in_flight(Launch *L, int g, const AsmCall *a, uint32_t group, const uint32_t *chunks, int nchunks)
{
    if (L->nwgmma == L->wgmma_cap) {
        L->wgmma_cap = L->wgmma_cap ? 2 * L->wgmma_cap : 16;
        L->wgmma = realloc(L->wgmma, sizeof *L->wgmma * (size_t)L->wgmma_cap);
    }
    WgmmaInFlight *w = &L->wgmma[L->nwgmma++];
    *w = (WgmmaInFlight){.wg = g, .group = group, .site = a->site, .area = L->area, .nchunks = nchunks};
    w->chunk = malloc(sizeof *w->chunk * (size_t)(nchunks ? nchunks : 1));
    memcpy(w->chunk, chunks, sizeof *chunks * (size_t)nchunks);
}

/* Every thread of warpgroup g at the same wgmma, with the same operands
 * and open group; false, the launch failed, otherwise. */
static bool uniform_issue(Launch *L, int g, const AsmCall *a)
{
    const Thread *t0 = &L->th[g * WG_THREADS];
    for (int t = g * WG_THREADS + 1; t < (g + 1) * WG_THREADS; t++) {
        const Thread *th = &L->th[t];
        const char *what = th->asm_call != t0->asm_call ? "is at another wgmma.mma_async"
                         : th->wg_groups != t0->wg_groups ? "has committed other wgmma groups"
                         : (a->desc_a >= 0 && th->in[a->desc_a] != t0->in[a->desc_a]) || th->in[a->desc_b] != t0->in[a->desc_b]
                             ? "gives other descriptors"
                         : lo32(th->in[a->scale_d]) != lo32(t0->in[a->scale_d]) ? "gives another scale-d" : NULL;
        if (what) {
            wg_fail(L, g, a->site, "thread %d %s than thread %d", t, what, g * WG_THREADS);
            return false;
        }
    }
    return true;
}

/* D = A B (+ C when scale-d is set) into each thread's accumulators, every
 * sum rounded once (16-bit products are exact). */
static void accumulate(Launch *L, int g, const AsmCall *a, float A[64][16], float (*B)[256])
{
    for (int t = g * WG_THREADS; t < (g + 1) * WG_THREADS; t++) {
        Thread *th = &L->th[t];
        int w = (t / 32) % 4, l = t % 32;
        bool add_c = lo32(th->in[a->scale_d]) != 0;
        for (int i = 0; i < a->nacc; i++) {
            int row = 16 * w + l / 4 + 8 * ((i / 2) % 2), col = 2 * (l % 4) + i % 2 + 8 * (i / 4);
            double sum = add_c ? slot_f32(th->in[a->acc[i]]) : 0.0;
            for (int k = 0; k < 16; k++) sum += (double)a->scale_a * A[row][k] * ((double)a->scale_b * B[k][col]);
            th->out[i] = f32_slot((float)sum);
        }
    }
}

bool release_wgmma(Launch *L, int lo)
{
    int g = lo / WG_THREADS;
    if ((g + 1) * WG_THREADS > L->T) {   /* a producer's warp past the last whole warpgroup issues none */
        launch_fail(L, "block (%u, %u, %u): wgmma.mma_async needs warpgroups of 128 threads, the block has %d", L->block[0],
                    L->block[1], L->block[2], L->T);
        return false;
    }
    for (int t = g * WG_THREADS; t < (g + 1) * WG_THREADS; t++)
        if (L->th[t].st != TH_WARP || L->th[t].op != IN_WGMMA) return false;   /* not yet every warp */
    const AsmCall *a = &L->s->asm_calls[L->th[g * WG_THREADS].asm_call];
    if (!L->area) {
        wg_fail(L, g, a->site, "%s", "the kernel has no shared memory");
        return false;
    }
    if (!uniform_issue(L, g, a)) return false;
    const Thread *t0 = &L->th[g * WG_THREADS];
    float A[64][16], (*B)[256] = malloc(sizeof(float[16][256]));
    uint32_t *chunks = malloc(sizeof *chunks * (64 * 16 + 16 * 256));
    int nchunks = 0;
    bool ok = read_operands(L, g, a, a->desc_a >= 0 ? t0->in[a->desc_a] : 0, t0->in[a->desc_b], A, B, chunks, &nchunks) &&
              check_reads(L, g, a, chunks, nchunks);
    if (ok) {
        keep_in_flight(L, g, a, t0->wg_groups, chunks, nchunks);
        accumulate(L, g, a, A, B);
        for (int t = g * WG_THREADS; t < (g + 1) * WG_THREADS; t++) L->th[t].st = TH_READY;
    }
    free(B);
    free(chunks);
    return ok;
}

/* ---- completion: wait_group ---- */

/* The wgmma's reads are over: its bytes are no longer in flight. */
static void complete(Launch *L, int i)
{
    WgmmaInFlight *w = &L->wgmma[i];
    for (int c = 0; c < w->nchunks; c++)
        for (uint32_t j = w->chunk[c]; j < w->chunk[c] + 16; j++) w->area->shadow[j].wg_reads--;
    free(w->chunk);
    L->wgmma[i] = L->wgmma[--L->nwgmma];
}

void warp_wgmma_wait(Launch *L, Thread *w)
{
    int lo = (int)(w - L->th), g = lo / WG_THREADS, bit = 1 << (lo / 32 % 4);
    const AsmCall *a = &L->s->asm_calls[w[0].asm_call];
    for (int l = 1; l < 32; l++)
        if (L->s->asm_calls[w[l].asm_call].pending != a->pending || w[l].wg_groups != w[0].wg_groups) {
            launch_fail(L, "block (%u, %u, %u) warp %d: lanes 0 and %d wait for wgmma groups differently (in %s and %s)",
                        L->block[0], L->block[1], L->block[2], lo / 32, l, site_name(L->s, a->site),
                        site_name(L->s, L->s->asm_calls[w[l].asm_call].site));
            return;
        }
    uint32_t committed = w[0].wg_groups, done = committed > (uint32_t)a->pending ? committed - (uint32_t)a->pending : 0;
    for (int i = 0; i < L->nwgmma;) {
        WgmmaInFlight *f = &L->wgmma[i];
        if (f->wg != g || f->group >= done || (f->waited & bit)) {
            i++;
            continue;
        }
        f->waited |= (unsigned)bit;
        /* the warp has seen its reads end: they are its first lane's, until a barrier */
        for (int c = 0; c < f->nchunks; c++)
            if (!check_shared_access(L, lo, (uintptr_t)f->area->addr + f->chunk[c], 16, ACCESS_READ, a->site)) return;
        if (f->waited == 15) complete(L, i);
        else i++;
    }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < a->nacc; i++) w[l].out[i] = w[l].in[a->acc[i]];
}

bool wgmma_thread_end(Launch *L, int t)
{
    int g = t / WG_THREADS, bit = 1 << (t / 32 % 4);
    for (int i = 0; i < L->nwgmma; i++)
        if (L->wgmma[i].wg == g && !(L->wgmma[i].waited & (unsigned)bit)) {
            launch_fail(L, "block (%u, %u, %u) thread %d ends with a wgmma.mma_async (in %s) in flight: no wgmma.wait_group of its "
                        "warp covers its group",
                        L->block[0], L->block[1], L->block[2], t, site_name(L->s, L->wgmma[i].site));
            return false;
        }
    return true;
}

void drop_wgmma(Launch *L)
{
    while (L->nwgmma) complete(L, L->nwgmma - 1);
    for (int t = 0; t < L->T; t++) L->th[t].wg_groups = 0, L->th[t].fenced_at = 0;
}

void wgmma_overwrite_fail(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off)
{
    const ByteShadow *b = &a->shadow[off];
    launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that warpgroup %d's "
                "wgmma.mma_async (in %s) may still be reading: a wgmma.wait_group of each of its warps has not covered it yet",
                L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name,
                site_name(L->s, site), b->wg_group, site_name(L->s, b->wg_site));
}
