/* test_smem_plan.c: the shared-memory planner (compiler/layout/smem_plan.c), on
 * event sequences written by hand and generated: live ranges over loops
 * and branches, placement (no two live buffers share a byte, alignment,
 * reuse of dead buffers' space), malformed sequences, and the barriers
 * placed from the accesses (where each kind of conflict needs one, none
 * where the waits of a ring or separate bytes order the accesses, and, on
 * generated sequences, every path of a few iterations ordered by a set no
 * barrier of which can go). */
#include <criterion/criterion.h>

#include "layout/smem_plan.h"

static void use(SmemPlan *p, int buf, bool write) { smem_add_event(p, SMEM_ACCESS, buf, write); }
static void mark(SmemPlan *p, SmemEventKind k) { smem_add_event(p, k, -1, false); }

static void make(SmemPlan *p)
{
    char err[256];
    cr_assert(smem_plan_make(p, err, sizeof err), "%s", err);
}

static const SmemBuf *buf(const SmemPlan *p, int b) { return &p->bufs.data[b]; }

static int nbarriers(const SmemPlan *p)
{
    int n = 0;
    for (int i = 0; i < p->events.len; i++) n += p->barrier[i];
    return n;
}

/* An op's scratch (write, then read) after another's: the second takes the
 * first's bytes; two buffers used at once do not share any. */
Test(smem_plan, buffers_dead_before_another_is_used_share_its_space)
{
    SmemPlan p = {0};
    int a = smem_add_buffer(&p, SMEM_SCRATCH, 65536, 16), b = smem_add_buffer(&p, SMEM_SCRATCH, 16384, 16);
    int c = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16), d = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16);
    use(&p, a, true); use(&p, a, false);
    use(&p, b, true); use(&p, b, false);
    use(&p, c, true); use(&p, d, true); use(&p, c, false); use(&p, d, false);   /* one op's two operands */
    make(&p);
    cr_expect_eq(buf(&p, a)->offset, 0);
    cr_expect_eq(buf(&p, b)->offset, 0, "a is dead when b is written");
    cr_expect_eq(buf(&p, c)->first, 4);
    cr_expect_eq(buf(&p, c)->last, 6);
    cr_expect_not(smem_bufs_overlap(&p, c, d), "c and d are live together");
    cr_expect(smem_bufs_overlap(&p, a, b));
    cr_expect_eq(p.bytes, 65536, "the largest buffer sets the size: %lld", (long long)p.bytes);
    smem_plan_free(&p);
}

/* Offsets are multiples of each buffer's alignment, and a small buffer
 * fills a gap the larger ones left. */
Test(smem_plan, offsets_keep_each_buffers_alignment)
{
    SmemPlan p = {0};
    int a = smem_add_buffer(&p, SMEM_SCRATCH, 100, 4), b = smem_add_buffer(&p, SMEM_SCRATCH, 20, 16);
    int c = smem_add_buffer(&p, SMEM_SCRATCH, 6, 2), d = smem_add_buffer(&p, SMEM_SCRATCH, 8, 128);
    for (int i = 0; i < 4; i++) use(&p, i, true);
    for (int i = 0; i < 4; i++) use(&p, i, false);   /* all four live together */
    make(&p);
    cr_expect_eq(buf(&p, a)->offset, 0);
    cr_expect_eq(buf(&p, b)->offset, 112, "past a's 100 bytes, up to 16: %lld", (long long)buf(&p, b)->offset);
    cr_expect_eq(buf(&p, d)->offset, 256, "past b, up to 128: %lld", (long long)buf(&p, d)->offset);
    cr_expect_eq(buf(&p, c)->offset, 100, "between a and b: %lld", (long long)buf(&p, c)->offset);
    cr_expect_eq(p.bytes, 264);
    smem_plan_free(&p);
}

/* A ring filled before a loop and read in it, and a region written before
 * the loop and read in it, live until the loop's end: scratch used late in
 * the body may not take their bytes, since the next iteration reads them.
 * Scratch whose first use is in the body starts afresh each iteration, and
 * after the loop everything is free again. */
Test(smem_plan, a_buffer_live_before_a_loop_and_used_in_it_lives_over_the_whole_loop)
{
    SmemPlan p = {0};
    int ring = smem_add_buffer(&p, SMEM_RING, 8192, 16), region = smem_add_buffer(&p, SMEM_REGION, 4096, 16);
    int s1 = smem_add_buffer(&p, SMEM_SCRATCH, 4096, 16), s2 = smem_add_buffer(&p, SMEM_SCRATCH, 4096, 16);
    int after = smem_add_buffer(&p, SMEM_SCRATCH, 16384, 16);
    use(&p, region, true);                 /* 0 */
    use(&p, ring, true);                   /* 1: the prologue's copy */
    mark(&p, SMEM_LOOP);                      /* 2 */
    mark(&p, SMEM_BARRIER);                   /* 3: the wait's */
    use(&p, ring, true);                   /* 4: the next copy */
    use(&p, ring, false);                  /* 5 */
    use(&p, region, false);                /* 6 */
    use(&p, s1, true); use(&p, s1, false);   /* 7, 8 */
    use(&p, s2, true); use(&p, s2, false);   /* 9, 10 */
    mark(&p, SMEM_LOOP_END);                  /* 11 */
    use(&p, after, true); use(&p, after, false);
    make(&p);
    cr_expect_eq(buf(&p, ring)->last, 11);
    cr_expect_eq(buf(&p, region)->last, 11, "read in the loop after being written before it");
    cr_expect_eq(buf(&p, s1)->last, 8, "written and read within one iteration");
    for (int s = s1; s <= s2; s++) {
        cr_expect_not(smem_bufs_overlap(&p, s, ring));
        cr_expect_not(smem_bufs_overlap(&p, s, region));
    }
    cr_expect(smem_bufs_overlap(&p, s1, s2), "one op's scratch after another's");
    cr_expect_eq(buf(&p, after)->offset, 0, "everything is dead after the loop");
    cr_expect_eq(p.bytes, 16384);
    smem_plan_free(&p);
}

/* A region written in an outer loop's body and read in an inner loop is
 * live until the inner loop ends, not over the outer loop: it is written
 * afresh each outer iteration. */
Test(smem_plan, a_buffer_written_in_an_outer_loop_lives_over_the_inner_loop_only)
{
    SmemPlan p = {0};
    int region = smem_add_buffer(&p, SMEM_REGION, 65536, 16), s = smem_add_buffer(&p, SMEM_SCRATCH, 65536, 16);
    mark(&p, SMEM_LOOP);                      /* 0 */
    use(&p, region, true);                 /* 1 */
    mark(&p, SMEM_LOOP);                      /* 2 */
    use(&p, region, false);                /* 3 */
    mark(&p, SMEM_LOOP_END);                  /* 4 */
    use(&p, s, true); use(&p, s, false);   /* 5, 6 */
    mark(&p, SMEM_LOOP_END);                  /* 7 */
    make(&p);
    cr_expect_eq(buf(&p, region)->first, 1);
    cr_expect_eq(buf(&p, region)->last, 4);
    cr_expect(smem_bufs_overlap(&p, region, s), "the scratch after the inner loop reuses the region's bytes");
    cr_expect_eq(p.bytes, 65536);
    smem_plan_free(&p);
}

/* The two branches of an if never run together: their buffers may share. */
Test(smem_plan, the_branches_of_an_if_share_space)
{
    SmemPlan p = {0};
    int t = smem_add_buffer(&p, SMEM_SCRATCH, 2048, 16), e = smem_add_buffer(&p, SMEM_SCRATCH, 2048, 16);
    int across = smem_add_buffer(&p, SMEM_SCRATCH, 64, 16);
    use(&p, across, true);
    mark(&p, SMEM_IF);
    use(&p, t, true); use(&p, t, false);
    mark(&p, SMEM_ELSE);
    use(&p, e, true); use(&p, e, false);
    mark(&p, SMEM_IF_END);
    use(&p, across, false);
    make(&p);
    cr_expect(smem_bufs_overlap(&p, t, e));
    cr_expect_not(smem_bufs_overlap(&p, t, across));
    cr_expect_not(smem_bufs_overlap(&p, e, across));
    cr_expect_eq(p.bytes, 2048 + 64);
    smem_plan_free(&p);
}

/* Small scratch buffers used one after another in a loop (the partials of
 * two row reductions) get bytes of their own, up to 1/16 of the area: no
 * barrier for the second's writes over the first's reads, nor for the
 * large scratch after them. The rest share what they can. */
Test(smem_plan, small_scratch_buffers_are_kept_apart)
{
    SmemPlan p = {0};
    int ring = smem_add_buffer(&p, SMEM_RING, 65536, 16), x = smem_add_buffer(&p, SMEM_SCRATCH, 256, 16);
    int y = smem_add_buffer(&p, SMEM_SCRATCH, 256, 16), z = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16);
    int before = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16);
    use(&p, before, true); use(&p, before, false);
    use(&p, ring, true);
    mark(&p, SMEM_LOOP);
    use(&p, ring, true);
    mark(&p, SMEM_BARRIER);
    use(&p, ring, false);
    for (int b = x; b <= z; b++) { use(&p, b, true); use(&p, b, false); }
    mark(&p, SMEM_LOOP_END);
    make(&p);
    cr_expect_not(smem_bufs_overlap(&p, x, y));
    cr_expect_not(smem_bufs_overlap(&p, x, z));
    cr_expect_not(smem_bufs_overlap(&p, y, z));
    cr_expect(smem_bufs_overlap(&p, before, ring), "the ring takes the bytes of scratch dead before its first copy");
    cr_expect_eq(p.bytes, 65536 + 512 + 8192, "%lld", (long long)p.bytes);
    cr_expect_eq(nbarriers(&p), 5, "four reads, and the ring's first copy over before's reads: %d", nbarriers(&p));
    smem_plan_free(&p);
}

/* A large scratch buffer, then two small ones that could take its bytes
 * once it is dead, in a loop: the small ones get bytes of their own while
 * the area stays under the block limit it is under (232448 bytes, an H200
 * block; 166912, compute capability 8.0) and share the large one's where
 * they would pass it, so they never keep a config off a device it fits. */
static int64_t area_with_small_buffers_after(int64_t large, int *apart)
{
    SmemPlan p = {0};
    int big = smem_add_buffer(&p, SMEM_SCRATCH, large, 16), x = smem_add_buffer(&p, SMEM_SCRATCH, 1024, 16);
    int y = smem_add_buffer(&p, SMEM_SCRATCH, 1024, 16);
    mark(&p, SMEM_LOOP);
    use(&p, big, true); use(&p, big, false);
    use(&p, x, true); use(&p, x, false);
    use(&p, y, true); use(&p, y, false);
    mark(&p, SMEM_LOOP_END);
    make(&p);
    *apart = !smem_bufs_overlap(&p, big, x) + !smem_bufs_overlap(&p, big, y);
    int64_t bytes = p.bytes;
    smem_plan_free(&p);
    return bytes;
}

Test(smem_plan, small_buffers_kept_apart_never_pass_a_block_limit)
{
    int apart;
    cr_expect_eq(area_with_small_buffers_after(200704, &apart), 200704 + 2048);
    cr_expect_eq(apart, 2, "far under the limit, both have bytes of their own");
    cr_expect_eq(area_with_small_buffers_after(229376, &apart), 229376 + 2048);
    cr_expect_eq(apart, 2, "229376 + 2048 is still under 232448");
    cr_expect_eq(area_with_small_buffers_after(231424, &apart), 232448);
    cr_expect_eq(apart, 1, "room for one under 232448: the other shares the large buffer's bytes");
    cr_expect_eq(area_with_small_buffers_after(231936, &apart), 231936);
    cr_expect_eq(apart, 0, "no room for either: both share");
    cr_expect_eq(area_with_small_buffers_after(166400, &apart), 166400);
    cr_expect_eq(apart, 0, "166912 bounds a block of compute capability 8.0");
    cr_expect_eq(area_with_small_buffers_after(240000, &apart), 240000 + 2048);
    cr_expect_eq(apart, 2, "over every limit, none to keep under");
}

/* A buffer nobody accesses takes no space; a sequence that does not nest is
 * refused with a message. */
Test(smem_plan, unused_buffers_take_nothing_and_bad_nesting_is_an_error)
{
    SmemPlan p = {0};
    smem_add_buffer(&p, SMEM_RING, 1 << 20, 16);
    int s = smem_add_buffer(&p, SMEM_SCRATCH, 256, 16);
    use(&p, s, true);
    make(&p);
    cr_expect_eq(p.bytes, 256);
    cr_expect_eq(buf(&p, 0)->first, -1);
    smem_plan_free(&p);

    static const SmemEventKind bad[][3] = {
        {SMEM_LOOP, SMEM_IF_END, SMEM_BARRIER}, {SMEM_IF, SMEM_IF_END, SMEM_BARRIER},
        {SMEM_LOOP, SMEM_BARRIER, SMEM_BARRIER}, {SMEM_ELSE, SMEM_IF_END, SMEM_BARRIER},
        {SMEM_LOOP_END, SMEM_BARRIER, SMEM_BARRIER},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        SmemPlan q = {0};
        for (int j = 0; j < 3; j++) mark(&q, bad[i][j]);
        char err[256];
        cr_expect_not(smem_plan_make(&q, err, sizeof err), "sequence %zu accepted", i);
        cr_expect(strstr(err, "internal error") != NULL, "%s", err);
        smem_plan_free(&q);
    }
    SmemPlan q = {0};
    use(&q, 3, true);
    char err[256];
    cr_expect_not(smem_plan_make(&q, err, sizeof err));
    cr_expect(strstr(err, "buffer 3") != NULL, "%s", err);
    smem_plan_free(&q);
}

/* ---- barriers ---- */

/* Writing then reading a buffer needs a barrier between (read after
 * write), and the next writer of those bytes one after the reads (write
 * after read); one op's two operands, written side by side, need none
 * between them. */
Test(smem_plan, a_read_of_others_writes_and_a_write_over_others_reads_need_a_barrier)
{
    SmemPlan p = {0};
    int s1 = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16), s2 = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16);
    int a = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16), b = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16);
    use(&p, s1, true); use(&p, s1, false);      /* 0, 1 */
    use(&p, s2, true); use(&p, s2, false);      /* 2, 3: in s1's bytes */
    use(&p, a, true); use(&p, b, true);         /* 4, 5 */
    use(&p, a, false); use(&p, b, false);       /* 6, 7 */
    make(&p);
    cr_assert(smem_bufs_overlap(&p, s1, s2));
    cr_assert_not(smem_bufs_overlap(&p, a, b));
    bool want[8] = {false, true, true, true, true, false, true, false};
    for (int i = 0; i < 8; i++) cr_expect_eq(p.barrier[i], want[i], "event %d: barrier %d", i, p.barrier[i]);
    smem_plan_free(&p);
}

/* In a loop, an iteration's first write meets the previous one's last
 * reads: a barrier inside the loop, unless the body starts with one of its
 * own (a wait's), which then serves. */
Test(smem_plan, a_loop_s_next_iteration_meets_the_accesses_its_last_left)
{
    for (int wait = 0; wait < 2; wait++) {
        SmemPlan p = {0};
        int s = smem_add_buffer(&p, SMEM_SCRATCH, 256, 16);
        mark(&p, SMEM_LOOP);
        if (wait) mark(&p, SMEM_BARRIER);
        int w = p.events.len;
        use(&p, s, true); use(&p, s, false);
        mark(&p, SMEM_LOOP_END);
        make(&p);
        cr_expect_eq(p.barrier[w], !wait, "wait %d: the write's barrier", wait);
        cr_expect(p.barrier[w + 1], "the read's");
        cr_expect_eq(nbarriers(&p), 2 - wait);
        smem_plan_free(&p);
    }
}

/* A scratch in two halves taken in turns (SMEM_TURNS): the write needs no
 * barrier against the last iteration's read (the other half) once every
 * iteration passes one, the read's; without such a barrier (writes alone),
 * or for what follows the loop, the last iteration's accesses still count. */
Test(smem_plan, a_scratch_taken_in_turns_meets_nothing_of_the_last_iteration)
{
    SmemPlan p = {0};
    int t = smem_add_buffer(&p, SMEM_TURNS, 4096, 16), y = smem_add_buffer(&p, SMEM_SCRATCH, 4096, 16);
    mark(&p, SMEM_LOOP);
    int w = p.events.len;
    use(&p, t, true); use(&p, t, false);
    mark(&p, SMEM_LOOP_END);
    int after = p.events.len;
    use(&p, y, true); use(&p, y, false);
    make(&p);
    cr_expect_not(p.barrier[w], "the write meets the other half's read");
    cr_expect(p.barrier[w + 1], "the read meets this iteration's write");
    cr_expect_eq(buf(&p, t)->first, w - 1, "live over the whole loop");
    cr_expect(smem_bufs_overlap(&p, t, y), "y takes t's bytes after the loop");
    cr_expect(p.barrier[after], "y's write meets the last iteration's read of t");
    smem_plan_free(&p);

    SmemPlan q = {0};
    t = smem_add_buffer(&q, SMEM_TURNS, 4096, 16);
    mark(&q, SMEM_LOOP);
    w = q.events.len;
    use(&q, t, true);
    mark(&q, SMEM_LOOP_END);
    make(&q);
    cr_expect(q.barrier[w] || q.barrier[w - 1], "writes alone: no barrier in the body, so two iterations apart meet");
    smem_plan_free(&q);
}

/* A region written before a loop and read in it: published by the wait's
 * barrier that starts each iteration, or else by one barrier at the loop's
 * entry, never one per iteration. */
Test(smem_plan, a_buffer_written_before_a_loop_is_published_at_its_entry)
{
    for (int wait = 0; wait < 2; wait++) {
        SmemPlan p = {0};
        int g = smem_add_buffer(&p, SMEM_REGION, 4096, 16);
        use(&p, g, true);
        int loop = smem_add_event(&p, SMEM_LOOP, -1, false);
        if (wait) mark(&p, SMEM_BARRIER);
        int r = p.events.len;
        use(&p, g, false);
        mark(&p, SMEM_LOOP_END);
        make(&p);
        cr_expect_not(p.barrier[r], "wait %d: no barrier in the loop", wait);
        cr_expect_eq(p.barrier[loop], !wait, "wait %d: a barrier at the loop's entry", wait);
        cr_expect_eq(nbarriers(&p), !wait);
        smem_plan_free(&p);
    }
}

/* The asynchronous pipeline: copies before the loop, then per iteration a
 * wait (its copies land) and its barrier, the next copy, the reads; the
 * drain after the loop. The ring's own accesses need no barrier besides
 * the wait's; scratch after the loop, in the ring's bytes, needs one
 * before its write (the last iteration's reads) and one before its read. */
Test(smem_plan, a_ring_s_waits_order_its_accesses_and_what_follows_it_waits_for_its_readers)
{
    SmemPlan p = {0};
    int ring = smem_add_buffer(&p, SMEM_RING, 4096, 16), s = smem_add_buffer(&p, SMEM_SCRATCH, 4096, 16);
    use(&p, ring, true);
    mark(&p, SMEM_LOOP);
    use(&p, ring, true);
    mark(&p, SMEM_BARRIER);
    use(&p, ring, true);
    use(&p, ring, false);
    mark(&p, SMEM_LOOP_END);
    use(&p, ring, true);
    int w = p.events.len;
    use(&p, s, true); use(&p, s, false);
    make(&p);
    cr_assert(smem_bufs_overlap(&p, ring, s));
    cr_expect(p.barrier[w]);
    cr_expect(p.barrier[w + 1]);
    cr_expect_eq(nbarriers(&p), 2, "%d barriers", nbarriers(&p));
    smem_plan_free(&p);
}

/* A ring's loop inside an outer loop (a persistent kernel's tiles): the
 * copies before the ring's loop (unordered) meet the reads and copies of
 * its last run, so a barrier goes before the first of them, none between
 * them, and none in the ring's loop besides the wait's. */
Test(smem_plan, copies_before_a_ring_s_loop_wait_for_its_last_run)
{
    SmemPlan p = {0};
    int ring = smem_add_buffer(&p, SMEM_RING, 4096, 16);
    mark(&p, SMEM_LOOP);
    int first = p.events.len;
    smem_add_access_unordered(&p, ring, true);
    smem_add_access_unordered(&p, ring, true);
    mark(&p, SMEM_LOOP);
    mark(&p, SMEM_BARRIER);
    use(&p, ring, true);
    use(&p, ring, false);
    mark(&p, SMEM_LOOP_END);
    use(&p, ring, true);
    mark(&p, SMEM_LOOP_END);
    make(&p);
    cr_expect_eq(nbarriers(&p), 1, "%d barriers", nbarriers(&p));
    cr_expect(p.barrier[first] || p.barrier[first - 1], "no barrier before the copies");
    int at;
    bool none[16] = {0};
    cr_expect_not(smem_plan_check(&p, none, &at), "no barrier at all passes");
    cr_expect_eq(at, first, "the first copy meets the last run's accesses, not %d", at);
    smem_plan_free(&p);
}

/* A loop may run no iteration, so what was pending before it still is
 * after it; an if's branches each leave theirs. */
Test(smem_plan, what_was_pending_before_a_loop_or_in_a_branch_is_pending_after)
{
    SmemPlan p = {0};
    int s = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16), t = smem_add_buffer(&p, SMEM_SCRATCH, 8192, 16);
    use(&p, s, true);
    mark(&p, SMEM_LOOP); mark(&p, SMEM_BARRIER); mark(&p, SMEM_LOOP_END);
    int r = p.events.len;
    use(&p, s, false);
    use(&p, t, true);
    mark(&p, SMEM_IF); mark(&p, SMEM_BARRIER); mark(&p, SMEM_ELSE); mark(&p, SMEM_IF_END);
    int r2 = p.events.len;
    use(&p, t, false);
    make(&p);
    cr_expect(p.barrier[r], "the loop's barrier runs only if it iterates");
    cr_expect(p.barrier[r + 1], "t takes s's bytes, which s's read may still use");
    cr_expect(p.barrier[r2], "the else branch has no barrier");
    cr_expect_eq(nbarriers(&p), 3);
    int at;
    cr_expect(smem_plan_check(&p, p.barrier, &at));
    p.barrier[r2] = false;
    cr_expect_not(smem_plan_check(&p, p.barrier, &at));
    cr_expect_eq(at, r2);
    smem_plan_free(&p);
}

/* ---- generated sequences ---- */

static uint64_t rng_state;
static int rnd(int n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

/* A random well-nested sequence over nbufs buffers, loops and ifs nested
 * at most max_depth deep. */
static void random_events(SmemPlan *p, int nbufs, int len, int max_depth)
{
    for (int b = 0; b < nbufs; b++)
        smem_add_buffer(p, (SmemKind)rnd(3), 16 * (1 + rnd(64)) + rnd(3) * 4, 1 << rnd(8));
    SmemEventKind open[16];
    int depth = 0;
    for (int i = 0; i < len || depth; i++) {
        int r = rnd(10);
        if (i >= len || (r == 0 && depth)) {
            SmemEventKind o = open[--depth];
            if (o == SMEM_IF) { mark(p, SMEM_ELSE); open[depth++] = SMEM_ELSE; }
            else mark(p, o == SMEM_LOOP ? SMEM_LOOP_END : SMEM_IF_END);
        } else if (r == 1 && depth < max_depth) {
            SmemEventKind k = rnd(2) ? SMEM_LOOP : SMEM_IF;
            mark(p, k);
            open[depth++] = k;
        } else if (r == 2) {
            mark(p, SMEM_BARRIER);
        } else {
            int b = rnd(nbufs);
            if (p->bufs.data[b].kind == SMEM_RING && rnd(3) == 0) smem_add_access_unordered(p, b, true);
            else use(p, b, rnd(2));
        }
    }
}

/* Whether buffer b is accessed between events lo and hi (exclusive). */
static bool accessed_in(const SmemPlan *p, int b, int lo, int hi)
{
    for (int i = lo + 1; i < hi; i++)
        if (p->events.data[i].kind == SMEM_ACCESS && p->events.data[i].buf == b) return true;
    return false;
}

/* For any sequence: aligned offsets; no two buffers accessed at the same
 * event, or one accessed in a loop while the other was live before the
 * loop and is accessed in it, share a byte; the size is the last end. */
Test(smem_plan, generated_sequences_never_place_live_buffers_together)
{
    for (int round = 0; round < 400; round++) {
        rng_state = (uint64_t)round * 7919 + 1;
        SmemPlan p = {0};
        int nbufs = 1 + rnd(12);
        random_events(&p, nbufs, 5 + rnd(60), 16);
        make(&p);
        int64_t end = 0;
        for (int b = 0; b < nbufs; b++) {
            const SmemBuf *x = buf(&p, b);
            cr_assert_eq(x->offset % x->align, 0, "round %d: buffer %d at %lld, alignment %d", round, b, (long long)x->offset, x->align);
            if (x->first >= 0 && x->offset + x->bytes > end) end = x->offset + x->bytes;
            for (int o = 0; o < b; o++) {
                const SmemBuf *y = buf(&p, o);
                bool together = x->first >= 0 && y->first >= 0 && x->first <= y->last && y->first <= x->last;
                cr_assert(!together || !smem_bufs_overlap(&p, b, o), "round %d: buffers %d and %d live together share bytes", round, b, o);
            }
        }
        cr_assert_eq(p.bytes, end, "round %d", round);
        /* the loop rule, from the events alone */
        for (int i = 0; i < p.events.len; i++) {
            if (p.events.data[i].kind != SMEM_LOOP) continue;
            int depth = 0, end_at = i;
            for (int j = i; j < p.events.len; j++) {
                SmemEventKind k = p.events.data[j].kind;
                depth += k == SMEM_LOOP || k == SMEM_IF ? 1 : k == SMEM_LOOP_END || k == SMEM_IF_END ? -1 : 0;
                if (!depth) { end_at = j; break; }
            }
            for (int b = 0; b < nbufs; b++) {
                if (!accessed_in(&p, b, i, end_at) || buf(&p, b)->first > i) continue;
                for (int o = 0; o < nbufs; o++)
                    cr_assert(o == b || !accessed_in(&p, o, i, end_at) || !smem_bufs_overlap(&p, b, o),
                              "round %d: buffer %d, live into the loop at %d, shares bytes with %d used in it", round, b, i, o);
            }
        }
        smem_plan_free(&p);
    }
}

/* ---- barriers on generated sequences, against paths ----
 * An independent judge: every path through the sequence, loops run 0 to 3
 * times and ifs either way, scanned access by access; two accesses of the
 * same bytes, one a write, need a barrier (placed or a fixed one) between
 * them, unless both are of one ring and the later is ordered or the
 * earlier an unordered write too. */

/* The event that closes the loop or if opened at i; for an if, *els is its else. */
static int closing(const SmemPlan *p, int i, int *els)
{
    int depth = 0;
    for (int j = i; j < p->events.len; j++) {
        SmemEventKind k = p->events.data[j].kind;
        if (k == SMEM_LOOP || k == SMEM_IF) depth++;
        else if (k == SMEM_LOOP_END || k == SMEM_IF_END) depth--;
        else if (k == SMEM_ELSE && depth == 1) *els = j;
        if (!depth) return j;
    }
    return -1;
}

enum { MAX_PATH = 4096, MAX_PATHS = 20000, MAX_TODO = 256 };

typedef struct { int lo, hi; } Span;   /* events lo .. hi-1 still to run */

typedef struct { const SmemPlan *p; const bool *barrier; bool ok; int paths; int path[MAX_PATH]; } Judge;

static void judge_path(Judge *j, int n)
{
    int *pend = xmalloc(sizeof *pend * (size_t)(n + 1)), npend = 0;
    j->paths++;
    for (int x = 0; x < n && j->ok; x++) {
        const SmemEvent *e = &j->p->events.data[j->path[x]];
        if (j->barrier[j->path[x]] || e->kind == SMEM_BARRIER) npend = 0;
        if (e->kind != SMEM_ACCESS) continue;
        for (int y = 0; y < npend; y++) {
            const SmemEvent *o = &j->p->events.data[pend[y]];
            bool one_ring = o->buf == e->buf && j->p->bufs.data[e->buf].kind == SMEM_RING &&
                            (!e->unordered || (o->unordered && o->write));
            if ((o->write || e->write) && !one_ring && smem_bufs_overlap(j->p, o->buf, e->buf)) j->ok = false;
        }
        pend[npend++] = j->path[x];
    }
    free(pend);
}

/* Runs the spans of todo, last first, extending the path of n events. */
static void explore(Judge *j, int n, const Span *todo, int ntodo)
{
    if (!j->ok || j->paths >= MAX_PATHS) return;
    cr_assert_lt(n, MAX_PATH - 1);
    cr_assert_lt(ntodo, MAX_TODO - 8);
    Span stack[MAX_TODO];
    memcpy(stack, todo, sizeof *todo * (size_t)ntodo);
    while (ntodo && stack[ntodo - 1].lo >= stack[ntodo - 1].hi) ntodo--;
    if (!ntodo) { judge_path(j, n); return; }
    int i = stack[ntodo - 1].lo++, els = -1, end;
    j->path[n++] = i;
    switch (j->p->events.data[i].kind) {
    case SMEM_LOOP:
        end = closing(j->p, i, &els);
        stack[ntodo - 1].lo = end + 1;
        for (int times = 0; times <= 3; times++) {
            for (int t = 0; t < times; t++) stack[ntodo + t] = (Span){i + 1, end};
            explore(j, n, stack, ntodo + times);
        }
        break;
    case SMEM_IF:
        end = closing(j->p, i, &els);
        stack[ntodo - 1].lo = end + 1;
        stack[ntodo] = (Span){i + 1, els};
        explore(j, n, stack, ntodo + 1);
        stack[ntodo] = (Span){els + 1, end};
        explore(j, n, stack, ntodo + 1);
        break;
    default:
        explore(j, n, stack, ntodo);
        break;
    }
}

static bool judge(const SmemPlan *p, const bool *barrier, int *paths)
{
    Judge *j = xcalloc(1, sizeof *j);
    *j = (Judge){.p = p, .barrier = barrier, .ok = true};
    Span all = {0, p->events.len};
    explore(j, 0, &all, 1);
    bool ok = j->ok;
    *paths = j->paths;
    free(j);
    return ok;
}

/* Generated sequences: the placed barriers order every path, and each of
 * them is needed: without it the plan's check finds an unordered pair, and
 * so does a path. */
Test(smem_plan, generated_sequences_get_barriers_every_path_needs)
{
    int removed = 0, seen = 0;
    for (int round = 0; round < 300; round++) {
        rng_state = (uint64_t)round * 104729 + 7;
        SmemPlan p = {0};
        random_events(&p, 1 + rnd(6), 4 + rnd(24), 3);
        make(&p);
        int at, paths;
        cr_assert(smem_plan_check(&p, p.barrier, &at), "round %d: the plan's own check fails at %d", round, at);
        cr_assert(judge(&p, p.barrier, &paths), "round %d: a path meets an unordered pair (%d paths)", round, paths);
        for (int i = 0; i < p.events.len; i++) {
            if (!p.barrier[i]) continue;
            p.barrier[i] = false;
            cr_assert_not(smem_plan_check(&p, p.barrier, &at), "round %d: the barrier before %d is not needed", round, i);
            removed++;
            seen += !judge(&p, p.barrier, &paths);
            p.barrier[i] = true;
        }
        smem_plan_free(&p);
    }
    cr_expect_gt(removed, 100);
    cr_expect_eq(seen, removed, "%d of %d needed barriers seen needed on paths", seen, removed);
}
