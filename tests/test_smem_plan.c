/* test_smem_plan.c: the shared-memory planner (compiler/smem_plan.c), on
 * event sequences written by hand and generated: live ranges over loops
 * and branches, placement (no two live buffers share a byte, alignment,
 * reuse of dead buffers' space) and malformed sequences. */
#include <criterion/criterion.h>

#include "smem_plan.h"

static void use(SmemPlan *p, int buf, bool write) { smem_add_event(p, SMEM_ACCESS, buf, write); }
static void mark(SmemPlan *p, SmemEventKind k) { smem_add_event(p, k, -1, false); }

static void make(SmemPlan *p)
{
    char err[256];
    cr_assert(smem_plan_make(p, err, sizeof err), "%s", err);
}

static const SmemBuf *buf(const SmemPlan *p, int b) { return &p->bufs.data[b]; }

/* An op's scratch (write, then read) after another's: the second takes the
 * first's bytes; two buffers used at once do not share any. */
Test(smem_plan, buffers_dead_before_another_is_used_share_its_space)
{
    SmemPlan p = {0};
    int a = smem_add_buffer(&p, SMEM_SCRATCH, 4096, 16), b = smem_add_buffer(&p, SMEM_SCRATCH, 1024, 16);
    int c = smem_add_buffer(&p, SMEM_SCRATCH, 512, 16), d = smem_add_buffer(&p, SMEM_SCRATCH, 512, 16);
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
    cr_expect_eq(p.bytes, 4096, "the largest buffer sets the size: %lld", (long long)p.bytes);
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
    int region = smem_add_buffer(&p, SMEM_REGION, 1024, 16), s = smem_add_buffer(&p, SMEM_SCRATCH, 1024, 16);
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
    cr_expect_eq(p.bytes, 1024);
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

/* ---- generated sequences ---- */

static uint64_t rng_state;
static int rnd(int n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (uint64_t)n);
}

/* A random well-nested sequence over nbufs buffers. */
static void random_events(SmemPlan *p, int nbufs, int len)
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
        } else if (r == 1 && depth < 16) {
            SmemEventKind k = rnd(2) ? SMEM_LOOP : SMEM_IF;
            mark(p, k);
            open[depth++] = k;
        } else if (r == 2) {
            mark(p, SMEM_BARRIER);
        } else {
            use(p, rnd(nbufs), rnd(2));
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
        random_events(&p, nbufs, 5 + rnd(60));
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
