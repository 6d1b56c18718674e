/* cpusim_order.c: the order between threads that synchronise other than
 * at a block barrier: a named barrier (bar.sync id, count: the threads of
 * a warp-specialized kernel's tile code, without its producer) and an
 * mbarrier's arrive and wait.
 *
 * A block barrier starts a new epoch (cpusim.c), which orders everything.
 * Within an epoch, each thread keeps a vector clock (its knowledge of
 * every thread's count of releases), and each shadowed access its
 * thread's own count then; an access of another thread is ordered before
 * this thread's when this thread's clock has reached that count
 * (cpusim_shared.c asks, before reporting a race). A release (an
 * mbarrier arrive, a named barrier's arrival) adds the thread's clock to
 * what it releases and then counts one more; an acquire (a try_wait that
 * sees the phase complete, the named barrier's end) takes in what was
 * released. An mbarrier keeps the clocks its current phase's arrivals
 * released and those of its last completed phase, which a try_wait that
 * succeeds acquires (its success means that phase completed: its parity
 * is the one waited for). So the producer's refill of a slot before the
 * consumers' arrivals on its empty barrier (no try_wait of it having seen
 * them) is a race with their reads, and so is a consumer's read of a slot
 * the producer stored into before arriving on its full barrier. */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <stdlib.h>
#include <string.h>

static uint32_t *clock_of(Launch *L, int t) { return &L->vc[(size_t)t * (size_t)L->T]; }

void order_begin_block(Launch *L)
{
    size_t n = (size_t)L->T * (size_t)L->T;
    if (!L->vc)
        L->vc = malloc(sizeof *L->vc * n), L->mb_vc = malloc(sizeof *L->mb_vc * (size_t)L->T * 2 * MAX_MBARRIERS),
        L->bar_vc = malloc(sizeof *L->bar_vc * (size_t)L->T * MAX_NAMED_BARRIERS);
    memset(L->vc, 0, sizeof *L->vc * n);
    memset(L->mb_vc, 0, sizeof *L->mb_vc * (size_t)L->T * 2 * MAX_MBARRIERS);
    memset(L->bar_vc, 0, sizeof *L->bar_vc * (size_t)L->T * MAX_NAMED_BARRIERS);   /* a block's unwaited arrivals end with it */
    memset(L->bar_arrived, 0, sizeof L->bar_arrived);
    for (int t = 0; t < L->T; t++) clock_of(L, t)[t] = 1;
}

void order_end_launch(Launch *L)
{
    free(L->vc);
    free(L->mb_vc);
    free(L->bar_vc);
    L->vc = L->mb_vc = NULL;
}

uint32_t order_now(const Launch *L, int t) { return L->vc ? L->vc[(size_t)t * (size_t)L->T + (size_t)t] : 0; }

bool order_before(const Launch *L, int from, uint32_t count, int to)
{
    /* clocks start at 1: a count of 0 is an access recorded without one, ordered by nothing */
    return L->vc && count && from < L->T && to < L->T && L->vc[(size_t)to * (size_t)L->T + (size_t)from] >= count;
}

static void join(Launch *L, uint32_t *into, const uint32_t *from)
{
    for (int u = 0; u < L->T; u++)
        if (from[u] > into[u]) into[u] = from[u];
}

/* mbarrier b's clocks: its current phase's (which 0) or its last completed one's (1). */
/* bar.warp.sync over lanes lo .. lo + n - 1: each lane's accesses before it
 * are ordered before every lane's after it (and so before what any lane
 * releases after it). */
void order_warp_sync(Launch *L, int lo, int n)
{
    if (!L->vc) return;
    uint32_t *all = calloc((size_t)L->T, sizeof *all);
    for (int l = 0; l < n; l++) join(L, all, clock_of(L, lo + l));
    for (int l = 0; l < n; l++) {
        join(L, clock_of(L, lo + l), all);
        clock_of(L, lo + l)[lo + l]++;
    }
    free(all);
}

static uint32_t *mbarrier_clock(Launch *L, int b, int which) { return &L->mb_vc[((size_t)b * 2 + (size_t)which) * (size_t)L->T]; }

void order_mbarrier_init(Launch *L, int b)
{
    memset(mbarrier_clock(L, b, 0), 0, sizeof *L->vc * (size_t)L->T);
    memset(mbarrier_clock(L, b, 1), 0, sizeof *L->vc * (size_t)L->T);
}

void order_arrive(Launch *L, int t, int b)
{
    join(L, mbarrier_clock(L, b, 0), clock_of(L, t));
    clock_of(L, t)[t]++;
}

void order_phase_complete(Launch *L, int b)
{
    memcpy(mbarrier_clock(L, b, 1), mbarrier_clock(L, b, 0), sizeof *L->vc * (size_t)L->T);
    memset(mbarrier_clock(L, b, 0), 0, sizeof *L->vc * (size_t)L->T);
}

void order_wait_seen(Launch *L, int t, int b) { join(L, clock_of(L, t), mbarrier_clock(L, b, 1)); }

bool named_barrier_ok(Launch *L, const char *what, uint32_t id, uint32_t count)
{
    if (id && id < MAX_NAMED_BARRIERS && count && count % 32 == 0) return true;
    launch_fail(L, "block (%u, %u, %u) thread %d: %s %u, %u: a barrier from 1 to %d and a count of whole warps are what the code "
                "generator uses", L->block[0], L->block[1], L->block[2], L->cur, what, id, count, MAX_NAMED_BARRIERS - 1);
    return false;
}

void order_named_arrive(Launch *L, int t, uint32_t id, uint32_t count)
{
    if (L->bar_arrived[id] && L->bar_arrive_count[id] != count)
        launch_fail(L, "block (%u, %u, %u) thread %d: bar.arrive %u, %u after arrivals counting to %u", L->block[0], L->block[1],
                    L->block[2], t, id, count, L->bar_arrive_count[id]);
    join(L, L->bar_vc + (size_t)id * (size_t)L->T, clock_of(L, t));
    clock_of(L, t)[t]++;
    L->bar_arrive_count[id] = count;
    if (++L->bar_arrived[id] == count) {   /* arrivals alone complete it: nobody takes in their clocks */
        L->bar_arrived[id] = 0;
        memset(L->bar_vc + (size_t)id * (size_t)L->T, 0, sizeof *L->bar_vc * (size_t)L->T);
    }
}

/* The exited threads of warp w where its other threads wait at named
 * barrier id: the barrier waits for a warp's threads that have not exited
 * and counts the warp's arrival whole (PTX's barrier), so a warp of one
 * running thread (a producer's) arrives as 32. */
static int warp_exited_beside(Launch *L, int w, uint32_t id)
{
    int waiting = 0, exited = 0;
    for (int t = w * 32; t < w * 32 + 32 && t < L->T; t++) {
        waiting += L->th[t].st == TH_BARRIER && L->th[t].bar_id == id;
        exited += L->th[t].st == TH_EXITED;
    }
    return waiting ? exited : 0;
}

/* Ends named barrier id where count threads wait at it or arrived at it
 * (bar.arrive) since it last ended: each waiting thread takes in the
 * others' clocks. True when one ended. */
bool release_named_barriers(Launch *L)
{
    bool any = false;
    uint32_t *all = calloc((size_t)L->T, sizeof *all);
    for (uint32_t id = 1; id < MAX_NAMED_BARRIERS; id++) {
        int n = 0;
        uint32_t count = 0;
        for (int t = 0; t < L->T; t++)
            if (L->th[t].st == TH_BARRIER && L->th[t].bar_id == id) n++, count = L->th[t].bar_count;
        for (int w = 0; n && w * 32 < L->T; w++)   /* a warp arrives whole: its exited threads with it */
            n += warp_exited_beside(L, w, id);
        if (n && L->bar_arrived[id] && L->bar_arrive_count[id] != count) {
            launch_fail(L, "block (%u, %u, %u): named barrier %u waited for with a count of %u, arrived at with %u", L->block[0],
                        L->block[1], L->block[2], id, count, L->bar_arrive_count[id]);
            break;
        }
        if (!n || (uint32_t)n + L->bar_arrived[id] != count) continue;
        memcpy(all, L->bar_vc + (size_t)id * (size_t)L->T, sizeof *all * (size_t)L->T);
        memset(L->bar_vc + (size_t)id * (size_t)L->T, 0, sizeof *all * (size_t)L->T);
        L->bar_arrived[id] = 0;
        for (int t = 0; t < L->T; t++)
            if (L->th[t].st == TH_BARRIER && L->th[t].bar_id == id) join(L, all, clock_of(L, t));
        for (int t = 0; t < L->T; t++)
            if (L->th[t].st == TH_BARRIER && L->th[t].bar_id == id) {
                join(L, clock_of(L, t), all);
                clock_of(L, t)[t]++;
                L->th[t].st = TH_READY;
            }
        any = true;
    }
    free(all);
    return any;
}
