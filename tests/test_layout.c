/* test_layout.c: the layouts and the layout pass (compiler/layout/layout.c), which
 * need no GPU: the shapes each layout takes, how many slots a thread holds,
 * interning, the plan the pass makes for the tutorial's kernels, and the map
 * from (warp, lane, slot) to element for every layout the pass produces for
 * the examples, the GPU suite's programs and generated ones; the shared
 * layouts, Hopper's swizzled atoms against the hardware's definition, and
 * the wgmma accumulator. */
#include <criterion/criterion.h>
#include <glob.h>

#include "layout/layout.h"
#include "nvidia/mma_layout.h"
#include "phgen.h"
#include "testutil.h"

Test(layout, blocked_takes_16_byte_chunks_and_spreads_warps)
{
    LayoutTable *t = layout_table_new();
    const Layout *l = layout_blocked(t, 32, 64, 128, 2);   /* f16 [32, 64] */
    cr_assert_eq(l->kind, LAY_BLOCKED);
    cr_assert_eq(l->v, 8, "8 halves: 16 bytes");
    cr_assert_eq(l->tc, 8, "8 chunks across a row");
    cr_assert_eq(l->wr * l->wc, 4);
    cr_assert_eq(layout_nslots(l), 32 * 64 / 128, "every thread holds 16 elements");
    const Layout *w = layout_blocked(t, 2, 1024, 256, 4);  /* f32 [2, 1024]: warps split the row */
    cr_assert_eq(w->v, 4);
    cr_assert_eq(w->tc, 32);
    cr_assert_eq(w->wc, 8, "each of 8 warps takes 128 columns");
    const Layout *odd = layout_blocked(t, 48, 40, 96, 4);  /* f32 [48, 40] in 3 warps */
    cr_assert_eq(odd->v, 4);
    cr_assert_eq(odd->wr * odd->wc, 3);
    cr_assert_geq((int64_t)layout_nslots(odd) * 96, 48 * 40, "the slots cover the tile");
    cr_assert_eq(layout_blocked(t, 32, 64, 128, 2), l, "equal layouts are one pointer");
    layout_table_free(t);
}

Test(layout, mma_for_a_plain_product_reads_the_fewest_fragments)
{
    LayoutTable *t = layout_table_new();
    const Layout *sq = layout_mma_for(t, 128, 128, 128, false);
    cr_assert_eq(sq->wm, 2, "2x2 warps: 4 + 8/2 ldmatrix.x4 a step, where 4x1 reads 2 + 16/2");
    cr_assert_eq(sq->wn, 2);
    const Layout *wide = layout_mma_for(t, 64, 256, 256, false);
    cr_assert_eq(wide->wm * wide->wn, 8, "every warp in use");
    cr_assert_eq(wide->tm + (wide->tn + 1) / 2, 6, "2 + 8/2 fragments, the fewest (4x2 reads 1 + 16/2)");
    cr_assert_eq(wide->wm, 2, "of 2x4 and 1x8 (4 + 4/2), the one with more warps along rows");
    const Layout *rows = layout_mma_for(t, 128, 128, 128, true);
    cr_assert_eq(rows->wm, 4, "rows first: what reductions and A operands in registers need");
    cr_assert_eq(rows, layout_mma(t, 128, 128, 128));
    layout_table_free(t);
}

Test(layout, mma_uses_the_most_warps_and_prefers_rows)
{
    LayoutTable *t = layout_table_new();
    const Layout *s = layout_mma(t, 32, 32, 128);
    cr_assert_eq(s->wm, 2);
    cr_assert_eq(s->wn, 2);
    cr_assert_eq(layout_nslots(s), 32 * 32 / 128);
    const Layout *big = layout_mma(t, 128, 64, 128);
    cr_assert_eq(big->wm, 4, "warps split the rows only: reductions need no shared memory");
    cr_assert_eq(big->wn, 1);
    cr_assert_eq(big->tm * big->tn * 4, layout_nslots(big));
    const Layout *small = layout_mma(t, 16, 8, 128);
    cr_assert_eq(small->wm * small->wn, 1, "one 16x8 piece: one warp, the others idle");
    cr_assert_null(layout_mma(t, 24, 8, 128), "24 rows do not cut into 16-row pieces");
    const Layout *sl = layout_slice(t, s, 1);
    cr_assert_eq(sl->rows, 32);
    cr_assert_eq(sl->cols, 1);
    cr_assert_eq(layout_nslots(s), 8, "one 16x8 piece across, two down, per warp");
    cr_assert_eq(layout_nslots(sl), 2, "a slice holds each distinct row once: lane/4 and lane/4 + 8");
    cr_assert_eq(layout_nslots(layout_slice(t, s, 0)), 4, "columns 2(lane%%4), +1 of two pieces");
    cr_assert_null(layout_slice(t, sl, 0), "a slice of a slice is no layout");
    layout_table_free(t);
}

static const IrFunc *kernel(const IrModule *m, const char *name)
{
    const IrFunc *f = driver_find_kernel(m, name);
    cr_assert_not_null(f, "no kernel %s", name);
    return f;
}

static const IrOp *first_op(const IrBlock *b, IrOpKind kind)
{
    for (int i = 0; i < b->nops; i++) {
        if (b->ops[i]->kind == kind) return b->ops[i];
        const IrOp *in = b->ops[i]->body ? first_op(b->ops[i]->body, kind) : NULL;
        if (in) return in;
    }
    return NULL;
}

Test(layout, the_forward_pass_stays_in_the_tensor_cores_layout)
{
    IrModule *m = driver_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *f = kernel(m, "attn_fwd");
    LayoutTable *t = layout_table_new();
    LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
    const IrOp *dot = first_op(f->body, OP_DOT), *red = first_op(f->body, OP_REDUCE), *loop = first_op(f->body, OP_FOR);
    cr_assert(p.mma_dot[dot->res[0]], "q k^T runs on the tensor cores");
    cr_assert_eq(p.of[dot->res[0]]->kind, LAY_MMA);
    cr_assert_eq(p.of[red->res[0]]->kind, LAY_SLICE, "row maxima live in the scores' row slice");
    cr_assert_eq(p.of[red->res[0]]->parent, p.of[dot->res[0]]);
    cr_assert_eq(p.of[loop->res[0]]->kind, LAY_MMA, "acc is carried in the accumulator layout");
    cr_assert_eq(p.of[loop->res[1]]->kind, LAY_SLICE, "m is carried in the row slice");
    layout_plan_free(&p);
    layout_table_free(t);
    ir_module_free(m);
}

Test(layout, transposed_dot_operands_are_folded_into_the_dot)
{
    IrModule *m = driver_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *f = kernel(m, "attn_bwd_dkdv");
    LayoutTable *t = layout_table_new();
    LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
    int transposes = 0, absorbed = 0;
    for (int v = 1; v < f->nvalues; v++) {
        const IrOp *d = f->values[v].def;
        if (d && d->kind == OP_TRANSPOSE) {
            transposes++;
            absorbed += p.absorbed[v];
        }
    }
    cr_assert_gt(transposes, 0);
    cr_assert_eq(absorbed, transposes, "pt and dst are only dot operands: never built");
    layout_plan_free(&p);
    layout_table_free(t);
    ir_module_free(m);
}

/* ---- the map from (warp, lane, slot) to element ---- */

/* Why slice l's slots do not serve a broadcast back over its parent, or
 * NULL: every parent slot that holds an element reads, through
 * layout_slice_slot, a slot of the same thread that holds that element's
 * row (column). */
static const char *broadcast_defect(const Layout *l, int w, int lane, int *bad_row, int *bad_col)
{
    const Layout *p = l->parent;
    for (int s = 0; s < layout_nslots(p); s++) {
        int pr, pc, r, c;
        bool pvalid, valid, owner;
        layout_elem_of(p, w, lane, s, &pr, &pc, &pvalid, &owner);
        if (!pvalid) continue;
        int j = layout_slice_slot(l, s);
        *bad_row = pr;
        *bad_col = pc;
        if (j < 0 || j >= layout_nslots(l)) return "a parent slot reads no slot of the slice";
        layout_elem_of(l, w, lane, j, &r, &c, &valid, &owner);
        if (!valid || (l->axis == 1 ? r != pr || c != 0 : c != pc || r != 0))
            return "a parent slot reads another element of the slice";
    }
    return NULL;
}

/* Why l's map is wrong, or NULL: every slot that holds an element points
 * inside the tile; every element is held exactly layout_copies(l) times,
 * by as many threads (no thread holds one twice), and owned exactly once;
 * base plus offset is the element; a slice serves its parent's broadcast. */
static const char *map_defect(const Layout *l, int *bad_row, int *bad_col)
{
    int n = layout_nslots(l), warps = l->threads / 32, copies = layout_copies(l);
    size_t elems = (size_t)l->rows * (size_t)l->cols;
    int *held = xcalloc(elems, sizeof *held), *owned = xcalloc(elems, sizeof *owned);
    int *holder = xmalloc(elems * sizeof *holder);   /* the last thread seen holding it */
    for (size_t e = 0; e < elems; e++) holder[e] = -1;
    const char *why = NULL;
    *bad_row = *bad_col = -1;
    for (int w = 0; w < warps && !why; w++)
        for (int lane = 0; lane < 32 && !why; lane++) {
            LayoutThreadBase b = layout_thread_base(l, w, lane);
            if (l->kind == LAY_SLICE) why = broadcast_defect(l, w, lane, bad_row, bad_col);
            for (int s = 0; s < n && !why; s++) {
                int r, c;
                bool valid, owner;
                layout_elem_of(l, w, lane, s, &r, &c, &valid, &owner);
                LayoutSlot o = layout_slot_offset(l, s);
                *bad_row = r;
                *bad_col = c;
                if (r != b.row + o.row || c != b.col + o.col) why = "the element is not base plus offset";
                else if (owner && !valid) why = "an owner that holds nothing";
                else if (valid && (r < 0 || r >= l->rows || c < 0 || c >= l->cols)) why = "a valid slot outside the tile";
                else if (valid && holder[(size_t)r * l->cols + c] == w * 32 + lane) why = "a thread holds an element twice";
                else if (valid) {
                    held[(size_t)r * l->cols + c]++;
                    owned[(size_t)r * l->cols + c] += owner;
                    holder[(size_t)r * l->cols + c] = w * 32 + lane;
                }
            }
        }
    for (int r = 0; r < l->rows && !why; r++)
        for (int c = 0; c < l->cols && !why; c++) {
            *bad_row = r;
            *bad_col = c;
            if (held[(size_t)r * l->cols + c] != copies) why = "an element held other than layout_copies times";
            else if (owned[(size_t)r * l->cols + c] != 1) why = "an element owned other than once";
        }
    free(held);
    free(owned);
    free(holder);
    return why;
}

static void expect_map_covers_tile(const Layout *l, const char *where)
{
    int r, c;
    const char *why = map_defect(l, &r, &c);
    if (why) {
        char name[300];
        layout_str(l, name, sizeof name);
        cr_assert_fail("%s: %s: %s (element %d, %d; %d copies)", where, name, why, r, c, layout_copies(l));
    }
}

/* A layout and, for BLOCKED and MMA, both of its slices (the code
 * generator slices any layout to broadcast a row or column over it). */
static int check_with_slices(LayoutTable *t, const Layout *l, const char *where)
{
    expect_map_covers_tile(l, where);
    if (l->kind == LAY_SLICE) return 1;
    expect_map_covers_tile(layout_slice(t, l, 0), where);
    expect_map_covers_tile(layout_slice(t, l, 1), where);
    return 3;
}

typedef struct { const Layout **seen; int n, cap; int checked; } Checked;

/* async.c's vector rings: a column of a one-column tensor (the backward's L
 * and Delta) in a slot of its own, its elements in order as the tensor
 * holds them, whole 16-byte units for the 1-D bulk copy; not a tile of
 * 16-byte rows. */
static bool column_slot(const Layout *l) { return l->kind == LAY_SHARED && l->cols == 1 && l->stride == 1; }

static void expect_column_slot(const Layout *l, const char *where)
{
    cr_expect_eq((int64_t)l->rows * l->elem % 16, 0, "%s: a column slot of %d bytes", where, l->rows * l->elem);
    for (int r = 0; r < l->rows; r++)
        cr_assert_eq(layout_shared_offset(l, r, 0), (int64_t)r * l->elem, "%s: a column slot's element %d out of order", where, r);
}

static void check_once(Checked *ck, LayoutTable *t, const Layout *l, const char *where)
{
    for (int i = 0; i < ck->n; i++)
        if (ck->seen[i] == l) return;
    if (ck->n == ck->cap) {
        ck->cap = ck->cap ? 2 * ck->cap : 64;
        ck->seen = xrealloc(ck->seen, sizeof *ck->seen * (size_t)ck->cap);
    }
    ck->seen[ck->n++] = l;
    ck->checked += check_with_slices(t, l, where);
}

/* Every register layout the pass gives a value of m's functions (after
 * the IR passes, as the code generator sees them), and the BLOCKED layout
 * every tile value is materialized in by default. A SHARED layout holds no
 * element in registers: its check is that ring tiles keep 16-byte rows. */
static void check_module_layouts(Checked *ck, LayoutTable *t, IrModule *m, const char *where)
{
    for (int i = 0; i < m->nfuncs; i++) {
        IrFunc *f = m->funcs[i];
        char err[256];
        cr_assert_eq(ir_run_passes(f, false, NULL, NULL, err, sizeof err), 0, "%s: %s", where, err);
        LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
        for (int v = 1; v < f->nvalues; v++) {
            if (p.of[v] && column_slot(p.of[v]))
                expect_column_slot(p.of[v], where);
            else if (p.of[v] && p.of[v]->kind == LAY_SHARED)
                cr_expect_eq(p.of[v]->stride * p.of[v]->elem % 16, 0, "%s: value %d: a ring row of %d bytes", where, v,
                             p.of[v]->stride * p.of[v]->elem);
            else if (p.of[v]) check_once(ck, t, p.of[v], where);
            IrType ty = ir_vtype(f, v);
            if (ty.rank > 0)
                check_once(ck, t, layout_blocked(t, ir_rows(ty), ir_cols(ty), f->threads, ir_dtype_bytes(ty.dt)), where);
        }
        layout_plan_free(&p);
    }
}

Test(layout_map, covers_every_layout_of_the_examples_and_gpu_programs)
{
    glob_t g;
    cr_assert_eq(glob("examples/*/*.ph", 0, NULL, &g), 0, "no examples found (run from the repository root)");
    cr_assert_eq(glob("tests/gpu/*.ph", GLOB_APPEND, NULL, &g), 0);
    cr_assert_eq(glob("bench/*.ph", GLOB_APPEND, NULL, &g), 0);
    LayoutTable *t = layout_table_new();
    Checked ck = {0};
    int kinds[3] = {0};
    for (size_t i = 0; i < g.gl_pathc; i++) {
        IrModule *m = driver_compile_file(g.gl_pathv[i], NULL, stderr);
        cr_assert_not_null(m, "%s does not compile", g.gl_pathv[i]);
        check_module_layouts(&ck, t, m, g.gl_pathv[i]);
        ir_module_free(m);
    }
    for (int i = 0; i < ck.n; i++) kinds[ck.seen[i]->kind]++;
    cr_assert_gt(kinds[LAY_BLOCKED], 20);
    cr_assert_gt(kinds[LAY_MMA], 3, "the attention kernels' accumulators");
    cr_assert_gt(kinds[LAY_SLICE], 3, "their row statistics");
    free(ck.seen);
    layout_table_free(t);
    globfree(&g);
}

Test(layout_map, covers_every_layout_of_generated_programs, .timeout = 120)
{
    LayoutTable *t = layout_table_new();
    Checked ck = {0};
    for (uint64_t seed = 1; seed <= 300; seed++) {
        char *src = phgen_program(seed, NULL, NULL), where[64];
        snprintf(where, sizeof where, "phgen seed %llu", (unsigned long long)seed);
        char *diags = NULL;
        IrModule *m = tu_compile(where, src, NULL, &diags);
        cr_assert_not_null(m, "%s does not compile:\n%s", where, diags);
        check_module_layouts(&ck, t, m, where);
        ir_module_free(m);
        free(diags);
        free(src);
    }
    cr_assert_gt(ck.n, 300, "generated programs bring many shapes");
    free(ck.seen);
    layout_table_free(t);
}

/* Shapes beyond what programs produce: lengths 1..130 with non-powers of
 * two, every thread count, 2- and 4-byte elements. */
Test(layout_map, covers_every_layout_of_a_grid_of_shapes, .timeout = 120)
{
    static const int lens[] = {1, 3, 8, 16, 24, 40, 48, 64, 100, 128, 130};
    static const int threads[] = {32, 96, 128, 256, 1024};
    int nlens = (int)(sizeof lens / sizeof *lens), nthreads = (int)(sizeof threads / sizeof *threads);
    LayoutTable *t = layout_table_new();
    int checked = 0, mma = 0;
    for (int ti = 0; ti < nthreads; ti++)
        for (int ri = 0; ri < nlens; ri++)
            for (int ci = 0; ci < nlens; ci++) {
                int R = lens[ri], C = lens[ci], T = threads[ti];
                char where[64];
                snprintf(where, sizeof where, "[%d, %d] in %d threads", R, C, T);
                checked += check_with_slices(t, layout_blocked(t, R, C, T, 2), where);
                checked += check_with_slices(t, layout_blocked(t, R, C, T, 4), where);
                const Layout *m = layout_mma(t, R, C, T);
                if (m) {
                    checked += check_with_slices(t, m, where);
                    mma++;
                }
            }
    cr_assert_gt(mma, 100);
    cr_assert_gt(checked, 3000);
    layout_table_free(t);
}

/* A slice holds each distinct row (column) of its parent's slots once per
 * thread; the owner of its element is the thread at parent position 0
 * along the reduced axis; an MMA layout's idle warps hold nothing. */
Test(layout_map, slices_own_at_the_first_copy_and_idle_warps_hold_nothing)
{
    LayoutTable *t = layout_table_new();
    const Layout *m = layout_mma(t, 16, 8, 128);   /* one warp in use of four */
    int r, c;
    bool valid, owner;
    layout_elem_of(m, 0, 5, 3, &r, &c, &valid, &owner);
    cr_assert(valid && owner);
    cr_assert_eq(r, 1 + 8, "lane 5: row 5/4, register 3: +8");
    cr_assert_eq(c, 2 * (5 % 4) + 1);
    layout_elem_of(m, 2, 5, 3, &r, &c, &valid, &owner);
    cr_assert(!valid && !owner, "warp 2 is idle");
    const Layout *rows = layout_slice(t, m, 1);
    cr_assert_eq(layout_nslots(rows), 2, "rows lane/4 and lane/4 + 8");
    cr_assert_eq(layout_copies(rows), 4, "the four lanes of a row group hold it");
    layout_elem_of(rows, 0, 4, 0, &r, &c, &valid, &owner);
    cr_assert(valid && owner && r == 1 && c == 0, "lane 4 owns row 1");
    layout_elem_of(rows, 0, 5, 0, &r, &c, &valid, &owner);
    cr_assert(valid && !owner && r == 1, "lane 5 a copy (columns 2, 3)");
    layout_elem_of(rows, 0, 4, 1, &r, &c, &valid, &owner);
    cr_assert(valid && owner && r == 9, "slot 1: row 1 + 8");
    for (int s = 0; s < 4; s++)
        cr_assert_eq(layout_slice_slot(rows, s), s / 2, "registers 0, 1 read slot 0; 2, 3 slot 1");
    layout_elem_of(rows, 1, 4, 0, &r, &c, &valid, &owner);
    cr_assert(!valid && !owner, "an idle warp holds no row either");
    /* [3, 5] f32 in 64 threads: 16 rows of threads, 4 lanes along a row */
    const Layout *b = layout_blocked(t, 3, 5, 64, 4);
    const Layout *cols = layout_slice(t, b, 0);
    cr_assert_eq(layout_copies(cols), 16, "threads whose rows lie past the tile hold copies too");
    cr_assert_eq(layout_nslots(cols), 2, "two columns per lane: the pattern of 4 repeats once, past the tile");
    layout_elem_of(cols, 1, 3, 0, &r, &c, &valid, &owner);
    cr_assert(valid && !owner && c == 3, "row 8 of threads: a copy of column 3");
    layout_elem_of(cols, 0, 3, 1, &r, &c, &valid, &owner);
    cr_assert(!valid && c == 7, "column 7 lies past the tile");
    layout_table_free(t);
}

/* One layout is another where the maps agree, whatever the fields say:
 * the row slices of the attention scores [BR, BC] and of its accumulator
 * [BR, D] when the warps split the rows alike (alpha and 1/l broadcast
 * over the accumulator stay in registers), and even a BLOCKED slice and an
 * MMA slice whose threads own the same rows. */
Test(layout_map, slices_with_the_same_rows_in_the_same_threads_are_one_layout)
{
    LayoutTable *t = layout_table_new();
    static const struct { int br, bc, d, threads; } same[] = {
        {128, 32, 64, 256}, {128, 32, 64, 128}, {64, 32, 64, 256}, {64, 32, 64, 128}, {32, 32, 64, 128},
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        const Layout *s = layout_mma(t, same[i].br, same[i].bc, same[i].threads);
        const Layout *acc = layout_mma(t, same[i].br, same[i].d, same[i].threads);
        cr_assert_neq(s, acc);
        cr_assert(!layout_same_map(s, acc), "[%d, %d] and [%d, %d] are different tiles", same[i].br, same[i].bc, same[i].br, same[i].d);
        const Layout *ms = layout_slice(t, s, 1), *macc = layout_slice(t, acc, 1);
        cr_assert_neq(ms, macc, "different parents: different layouts by their fields");
        cr_assert(layout_same_map(ms, macc) && layout_same_map(macc, ms), "BR %d, BC %d, D %d, %d threads: one row slice",
                  same[i].br, same[i].bc, same[i].d, same[i].threads);
    }
    /* 32 rows in 4 warps: two warps along rows, or one warp holding them all */
    const Layout *split = layout_slice(t, layout_mma(t, 32, 32, 128), 1), *narrow = layout_slice(t, layout_mma(t, 32, 8, 128), 1);
    cr_assert_eq(layout_mma(t, 32, 8, 128)->wm, 2);
    cr_assert_eq(layout_mma(t, 32, 8, 128)->wn, 1);
    cr_assert(!layout_same_map(split, narrow), "warp 1 owns rows 0-15 in one, rows 16-31 in the other");
    const Layout *bs = layout_slice(t, layout_blocked(t, 16, 16, 32, 4), 1), *mslice = layout_slice(t, layout_mma(t, 16, 16, 32), 1);
    cr_assert(layout_same_map(bs, mslice), "lane/4 and lane/4 + 8 in both, owned by lanes 0, 4, ...");
    cr_assert(!layout_same_map(layout_slice(t, layout_blocked(t, 16, 16, 32, 2), 1), mslice), "f16 chunks of 8: two lanes a row");
    cr_assert(!layout_same_map(layout_blocked(t, 16, 16, 32, 4), layout_mma(t, 16, 16, 32)), "4 columns a chunk against 2");
    layout_table_free(t);
}

/* ---- shared-memory layouts ----
 *
 * A SHARED layout's map, layout_shared_offset, must be a bijection of the
 * tile's elements onto its bytes, keep each 16-byte chunk whole (a
 * cp.async of one chunk, an ldmatrix row) and give ldmatrix no bank
 * conflict: each 8x8 matrix is 8 row addresses of 16 bytes, 8-aligned rows
 * at a chunk-aligned column, read in one phase, which hits all 32 banks
 * once only if the 8 rows land on 8 different chunks modulo 128 bytes. */

/* Extra shared-memory wavefronts of the ldmatrix phase that reads rows
 * row0 .. row0+7 at column col of l (0: none): the most 4-byte words any
 * bank is asked for, less one (the map is injective, so no two rows ask
 * for the same word). The tile starts 128-byte aligned; a 16-byte-aligned
 * start shifts every bank alike. */
static int ldmatrix_conflicts(const Layout *l, int row0, int col)
{
    int words[32] = {0}, worst = 0;
    for (int i = 0; i < 8; i++) {
        int64_t at = layout_shared_offset(l, row0 + i, col);
        for (int64_t w = at / 4; w < (at + 16) / 4; w++)
            if (++words[w % 32] > worst) worst = words[w % 32];
    }
    return worst - 1;
}

static bool whole_chunks(const Layout *l) { return (int64_t)l->cols * l->elem % 16 == 0; }

/* Why element (r, c) of l breaks the map, or NULL; owner marks the bytes
 * taken so far. */
static const char *shared_elem_defect(const Layout *l, int r, int c, int64_t bytes, unsigned char *owner)
{
    int64_t at = layout_shared_offset(l, r, c);
    if (at < 0 || at + l->elem > bytes) return "an element outside the tile's bytes";
    if (at % l->elem) return "an element not aligned to its size";
    for (int b = 0; b < l->elem; b++)
        if (owner[at + b]++) return "two elements share a byte";
    if (!whole_chunks(l) || c % l->vec) return NULL;
    /* a chunk: one cp.async, one ldmatrix row */
    if (at % 16) return "a chunk that starts off a 16-byte boundary";
    for (int j = 1; j < l->vec; j++)
        if (layout_shared_offset(l, r, c + j) != at + j * l->elem) return "a chunk split apart";
    if (r % 8 == 0 && r + 8 <= l->rows && ldmatrix_conflicts(l, r, c)) return "an ldmatrix phase with a bank conflict";
    return NULL;
}

/* Why l's map is wrong, or NULL (*r, *c: the element where it shows). */
static const char *shared_defect(const Layout *l, int *r, int *c)
{
    int64_t bytes = (int64_t)l->rows * l->stride * l->elem;
    *r = *c = 0;
    if (bytes != layout_shared_bytes(l->rows, l->cols, l->elem)) return "its bytes are not layout_shared_bytes";
    if (whole_chunks(l) && bytes != (int64_t)l->rows * l->cols * l->elem) return "rows of whole chunks take more than their bytes";
    unsigned char *owner = xcalloc((size_t)bytes, 1);
    const char *why = NULL;
    for (int i = 0; i < l->rows && !why; i++)
        for (int j = 0; j < l->cols && !why; j++) {
            why = shared_elem_defect(l, i, j, bytes, owner);
            *r = i;
            *c = j;
        }
    free(owner);
    return why;
}

static void expect_shared_map(const Layout *l, const char *where)
{
    int r, c;
    const char *why = shared_defect(l, &r, &c);
    if (why) {
        char name[200];
        layout_str(l, name, sizeof name);
        cr_assert_fail("%s: %s: %s (element %d, %d)", where, name, why, r, c);
    }
}

Test(shared_layout, swizzles_by_the_row_width_as_triton_does)
{
    LayoutTable *t = layout_table_new();
    static const struct { int cols, elem, vec, per_phase, max_phase, stride; } want[] = {
        {64, 2, 8, 1, 8, 64},    /* 128-byte rows */
        {128, 2, 8, 1, 8, 128},  /* 256 bytes: as 128 */
        {32, 2, 8, 2, 4, 32},    /* 64 bytes: a phase every 2 rows */
        {16, 2, 8, 4, 2, 16},    /* 32 bytes: every 4 */
        {8, 2, 8, 8, 1, 8},      /* 16 bytes: 8 rows fill the banks unswizzled */
        {48, 2, 8, 4, 2, 48},    /* 96 bytes, 6 chunks: the XOR stays in pairs of chunks */
        {24, 2, 8, 8, 1, 24},    /* 48 bytes, 3 chunks: an odd stride spreads the rows */
        {32, 4, 4, 1, 8, 32},    /* f32, 128 bytes */
        {12, 2, 8, 1, 1, 20},    /* 24 bytes: padded by 16 */
        {4, 2, 8, 1, 1, 12},     /* 8 bytes: padded */
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const Layout *l = layout_shared(t, 64, want[i].cols, want[i].elem);
        cr_assert_eq(l->kind, LAY_SHARED);
        cr_expect(l->vec == want[i].vec && l->per_phase == want[i].per_phase && l->max_phase == want[i].max_phase &&
                      l->stride == want[i].stride,
                  "[64, %d] of %d bytes: vec %d, per phase %d, max phase %d, stride %d", want[i].cols, want[i].elem, l->vec,
                  l->per_phase, l->max_phase, l->stride);
        cr_expect_eq(layout_shared_bytes(64, want[i].cols, want[i].elem), (int64_t)64 * want[i].stride * want[i].elem);
    }
    cr_assert_eq(layout_shared(t, 64, 64, 2), layout_shared(t, 64, 64, 2), "interned");
    /* 128-byte rows: row r's chunk j at chunk j ^ (r % 8) */
    const Layout *l = layout_shared(t, 64, 64, 2);
    cr_expect_eq(layout_shared_offset(l, 0, 5), 10);
    cr_expect_eq(layout_shared_offset(l, 1, 0), 128 + 16);
    cr_expect_eq(layout_shared_offset(l, 1, 8), 128);
    cr_expect_eq(layout_shared_offset(l, 9, 3), 9 * 128 + 16 + 6);
    cr_expect_eq(layout_shared_offset(l, 7, 63), 7 * 128 + (7 ^ 7) * 16 + 14);
    /* 64-byte rows: rows 2k and 2k+1 share phase k % 4 */
    const Layout *h = layout_shared(t, 64, 32, 2);
    cr_expect_eq(layout_shared_offset(h, 2, 0), 2 * 64 + 16);
    cr_expect_eq(layout_shared_offset(h, 3, 8), 3 * 64);
    cr_expect_eq(layout_shared_offset(h, 8, 8), 8 * 64 + 16, "row 8: phase 0 again");
    /* padded rows are plain row-major, 16 bytes apart */
    cr_expect_eq(layout_shared_offset(layout_shared(t, 8, 12, 2), 3, 5), 3 * 40 + 10);
    layout_table_free(t);
}

/* The counter sees the conflicts swizzling removes: unswizzled 128-byte
 * rows put all 8 rows of a matrix on the same 4 banks, 64-byte rows 4 on
 * each of 2 sets, 32-byte rows 2 on each of 4, so ldmatrix takes 8, 4 and
 * 2 wavefronts; the swizzled layouts of the same shapes take 1. */
Test(shared_layout, the_counter_sees_the_conflicts_of_unswizzled_rows)
{
    LayoutTable *t = layout_table_new();
    cr_expect_eq(ldmatrix_conflicts(layout_shared_plain(t, 16, 64, 2), 0, 0), 7);
    cr_expect_eq(ldmatrix_conflicts(layout_shared_plain(t, 16, 64, 2), 8, 16), 7);
    cr_expect_eq(ldmatrix_conflicts(layout_shared_plain(t, 16, 32, 2), 0, 8), 3);
    cr_expect_eq(ldmatrix_conflicts(layout_shared_plain(t, 16, 16, 2), 0, 0), 1);
    cr_expect_eq(ldmatrix_conflicts(layout_shared_plain(t, 16, 8, 2), 0, 0), 0, "16-byte rows: 8 rows span 128 bytes");
    for (int cols = 16; cols <= 64; cols *= 2)
        for (int col = 0; col < cols; col += 8) {
            cr_expect_eq(ldmatrix_conflicts(layout_shared(t, 16, cols, 2), 0, col), 0, "[16, %d], column %d", cols, col);
            cr_expect_eq(ldmatrix_conflicts(layout_shared(t, 16, cols, 2), 8, col), 0, "[16, %d], column %d", cols, col);
        }
    layout_table_free(t);
}

/* Every length from 1 to 260 halves or words across, in 8 to 72 rows: the
 * swizzled ones and the padded ones alike. */
Test(shared_layout, maps_a_grid_of_shapes)
{
    LayoutTable *t = layout_table_new();
    static const int rows[] = {1, 8, 16, 24, 40, 72};
    int swizzled = 0;
    for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++)
        for (int cols = 1; cols <= 260; cols++)
            for (int elem = 2; elem <= 4; elem += 2) {
                char where[64];
                snprintf(where, sizeof where, "[%d, %d] of %d-byte elements", rows[ri], cols, elem);
                const Layout *l = layout_shared(t, rows[ri], cols, elem);
                expect_shared_map(l, where);
                swizzled += l->max_phase > 1;
            }
    cr_assert_gt(swizzled, 100);
    layout_table_free(t);
}

/* Where layout_shared_shift holds, moving an element is an XOR and an add
 * of its offset; and it holds where the code generator relies on it: a
 * thread's ldmatrix rows, at columns 0 and 8, moved by whole 8-row blocks
 * and by 16-column steps (k steps, pairs of B pieces), and cp.async chunks
 * moved by whole phase periods of rows. */
Test(shared_layout, shifts_are_an_xor_and_an_add_where_they_hold)
{
    LayoutTable *t = layout_table_new();
    static const int drows[] = {0, 1, 3, 4, 8, 16, 24};
    int held = 0;
    for (int elem = 2; elem <= 4; elem += 2)
        for (int cols = 4; cols <= 264; cols += 4) {
            const Layout *l = layout_shared(t, 32, cols, elem);
            int dcols[] = {0, 1, 4, l->vec, 2 * l->vec, 3 * l->vec, 4 * l->vec, 8 * l->vec, 16 * l->vec};
            for (size_t a = 0; a < sizeof drows / sizeof *drows; a++)
                for (size_t b = 0; b < sizeof dcols / sizeof *dcols; b++) {
                    int dr = drows[a], dc = dcols[b];
                    LayoutShift sh = layout_shared_shift(l, dr, dc);
                    for (int r = 0; r + dr < l->rows; r++)
                        for (int c = 0; c + dc < l->cols; c++) {
                            if (!layout_shared_shift_holds(l, c, dr, dc)) continue;
                            held++;
                            int64_t want = layout_shared_offset(l, r + dr, c + dc), got = (layout_shared_offset(l, r, c) ^ sh.xor_bytes) + sh.add_bytes;
                            if (got != want)
                                cr_assert_fail("[32, %d] of %d bytes: (%d, %d) moved by (%d, %d): %lld, not %lld", cols, elem, r, c, dr, dc,
                                               (long long)got, (long long)want);
                        }
                }
            if (elem != 2 || (cols * elem) % 16) continue;
            for (int dr = 0; dr < 32; dr += 8)
                for (int dc = 0; dc < cols; dc += 16)
                    for (int c = 0; c <= 8; c += 8)
                        cr_expect(layout_shared_shift_holds(l, c, dr, dc), "[32, %d]: column %d by (%d, %d)", cols, c, dr, dc);
            cr_expect(layout_shared_shift_holds(l, 0, 8, 0) && layout_shared_shift_holds(l, 0, 16, 0), "[32, %d]: whole phase periods", cols);
        }
    cr_assert_gt(held, 1000000);
    layout_table_free(t);
}

/* The shared layouts of the programs: every ring slot and every operand a
 * tensor-core dot writes to shared memory or reads from a region (A as
 * [M, K]; B as [N, K] for dot_t, read by plain ldmatrix, or as [K, N],
 * read by ldmatrix.trans), as dot_mma lays them out. */
typedef struct { const Layout *seen[512]; int n, rings, columns, a, b_nk, b_kn; } SharedSeen;

static void check_shared_once(SharedSeen *s, const Layout *l, const char *where)
{
    for (int i = 0; i < s->n; i++)
        if (s->seen[i] == l) return;
    cr_assert_lt(s->n, 512);
    s->seen[s->n++] = l;
    expect_shared_map(l, where);
}

static void check_dot_operands(SharedSeen *s, LayoutTable *t, const IrFunc *f, const IrBlock *b, const char *where)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->body) check_dot_operands(s, t, f, op->body, where);
        if (op->els) check_dot_operands(s, t, f, op->els, where);
        if (op->kind != OP_DOT || !layout_dot_on_tensorcores(f, op)) continue;
        IrType a = ir_vtype(f, op->args[0]), b = ir_vtype(f, op->args[1]);
        check_shared_once(s, layout_shared(t, a.shape[0], a.shape[1], 2), where);
        check_shared_once(s, layout_shared(t, b.shape[0], b.shape[1], 2), where);
        s->a++;
        if (op->flags & DOT_TRANS_B) s->b_nk++;
        else s->b_kn++;
    }
}

static void check_program_shared(SharedSeen *s, LayoutTable *t, IrModule *m, const char *where)
{
    for (int i = 0; i < m->nfuncs; i++) {
        IrFunc *f = m->funcs[i];
        char err[256];
        cr_assert_eq(ir_run_passes(f, false, NULL, NULL, err, sizeof err), 0, "%s: %s", where, err);
        LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
        for (int v = 1; v < f->nvalues; v++)
            if (p.of[v] && column_slot(p.of[v])) {
                expect_column_slot(p.of[v], where);
                s->columns++;
            } else if (p.of[v] && p.of[v]->kind == LAY_SHARED) {
                check_shared_once(s, p.of[v], where);
                s->rings++;
            }
        check_dot_operands(s, t, f, f->body, where);
        layout_plan_free(&p);
    }
}

Test(shared_layout, every_shape_of_the_programs_maps_without_bank_conflicts, .timeout = 120)
{
    glob_t g;
    cr_assert_eq(glob("examples/*/*.ph", 0, NULL, &g), 0, "no examples found (run from the repository root)");
    cr_assert_eq(glob("tests/gpu/*.ph", GLOB_APPEND, NULL, &g), 0);
    cr_assert_eq(glob("bench/*.ph", GLOB_APPEND, NULL, &g), 0);
    LayoutTable *t = layout_table_new();
    SharedSeen s = {0};
    for (size_t i = 0; i < g.gl_pathc; i++) {
        IrModule *m = driver_compile_file(g.gl_pathv[i], NULL, stderr);
        cr_assert_not_null(m, "%s does not compile", g.gl_pathv[i]);
        check_program_shared(&s, t, m, g.gl_pathv[i]);
        ir_module_free(m);
    }
    for (uint64_t seed = 1; seed <= 300; seed++) {
        char *src = phgen_program(seed, NULL, NULL), where[64];
        snprintf(where, sizeof where, "phgen seed %llu", (unsigned long long)seed);
        IrModule *m = tu_compile(where, src, NULL, NULL);
        cr_assert_not_null(m, "%s does not compile", where);
        check_program_shared(&s, t, m, where);
        ir_module_free(m);
        free(src);
    }
    cr_assert_gt(s.rings, 0, "ring slots");
    cr_assert_gt(s.columns, 0, "column slots (the fused backward's L and Delta)");
    cr_assert_gt(s.a, 0, "A operands");
    cr_assert_gt(s.b_nk, 0, "[N, K] B operands (plain ldmatrix)");
    cr_assert_gt(s.b_kn, 0, "[K, N] B operands (ldmatrix.trans)");
    int swizzled = 0;
    for (int i = 0; i < s.n; i++) swizzled += s.seen[i]->max_phase > 1;
    cr_assert_gt(swizzled, 10, "%d of %d shapes swizzled", swizzled, s.n);
    layout_table_free(t);
    globfree(&g);
}

/* ---- layout_shared_atoms: the hardware's swizzle (wgmma, TMA) ---- */

/* The swizzle as the hardware documents it, written here from its
 * definition and not from the code under test: a tile of rows of
 * row_bytes (32, 64 or a multiple of 128) is cut into column atoms of
 * min(row_bytes, 128) bytes a row, each rows * atom bytes, one after
 * another; inside an atom the unswizzled address a = row * atom + byte
 * has its 16-byte chunk bits XORed with the bits above the first 128
 * bytes: bits 4-6 ^= bits 7-9 (128-byte rows), 4-5 ^= 7-8 (64), 4 ^= 7
 * (32). */
static int64_t hardware_swizzle(int rows, int row_bytes, int row, int byte)
{
    int atom = row_bytes < 128 ? row_bytes : 128;
    int64_t chunk_mask = atom == 128 ? 7 : atom == 64 ? 3 : 1;
    int64_t a = (int64_t)row * atom + byte % atom;
    a ^= ((a >> 7) & chunk_mask) << 4;
    return (int64_t)(byte / atom) * rows * atom + a;
}

Test(shared_atoms, every_element_lies_where_the_hardware_swizzle_puts_it)
{
    LayoutTable *t = layout_table_new();
    static const int rows_of[] = {8, 16, 64, 72, 256}, row_bytes_of[] = {32, 64, 128, 256, 384, 512};
    for (size_t ri = 0; ri < sizeof rows_of / sizeof *rows_of; ri++)
        for (size_t wi = 0; wi < sizeof row_bytes_of / sizeof *row_bytes_of; wi++) {
            int rows = rows_of[ri], row_bytes = row_bytes_of[wi], cols = row_bytes / 2;
            const Layout *l = layout_shared_atoms(t, rows, cols, 2);
            cr_assert_not_null(l, "[%d, %d] of f16", rows, cols);
            cr_assert_eq(l->kind, LAY_SHARED);
            cr_assert_eq(layout_shared_size(l), (int64_t)rows * row_bytes, "[%d, %d]: neither padded nor short", rows, cols);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) {
                    int64_t want = hardware_swizzle(rows, row_bytes, r, 2 * c), got = layout_shared_offset(l, r, c);
                    if (got != want) cr_assert_fail("[%d, %d] of f16: (%d, %d) at %lld, the hardware's at %lld", rows, cols, r, c, (long long)got, (long long)want);
                }
        }
    /* the reference itself, by hand: 128-byte rows, row 1's chunk 0 is its chunk 1;
     * a second atom starts after the first's rows */
    cr_assert_eq(hardware_swizzle(8, 128, 1, 0), 128 + 16);
    cr_assert_eq(hardware_swizzle(8, 256, 0, 128), 8 * 128);
    cr_assert_eq(hardware_swizzle(8, 64, 2, 0), 128 + 16);
    cr_assert_eq(hardware_swizzle(8, 32, 4, 16), 128);
    layout_table_free(t);
}

Test(shared_atoms, elements_take_distinct_offsets_inside_the_tile)
{
    LayoutTable *t = layout_table_new();
    static const int rows_of[] = {1, 8, 24, 64, 128};
    for (size_t ri = 0; ri < sizeof rows_of / sizeof *rows_of; ri++)
        for (int elem = 2; elem <= 4; elem += 2)
            for (int row_bytes = 32; row_bytes <= 1024; row_bytes += 32) {
                int rows = rows_of[ri], cols = row_bytes / elem;
                const Layout *l = layout_shared_atoms(t, rows, cols, elem);
                if (!l) continue;
                int64_t size = layout_shared_size(l);
                cr_assert_geq(size, (int64_t)rows * row_bytes);
                unsigned char *used = calloc((size_t)size, 1);
                for (int r = 0; r < rows; r++)
                    for (int c = 0; c < cols; c++) {
                        int64_t at = layout_shared_offset(l, r, c);
                        if (at < 0 || at + elem > size || at % elem)
                            cr_assert_fail("[%d, %d] of %d bytes: (%d, %d) at %lld, outside %lld bytes", rows, cols, elem, r, c, (long long)at, (long long)size);
                        for (int k = 0; k < elem; k++) {
                            if (used[at + k]) cr_assert_fail("[%d, %d] of %d bytes: (%d, %d) overlaps another element at %lld", rows, cols, elem, r, c, (long long)at);
                            used[at + k] = 1;
                        }
                    }
                free(used);
            }
    layout_table_free(t);
}

/* Every shift by whole 8-row and 8-column steps, from every element of
 * small atom tiles: where layout_shared_shift_holds says so, the shift is
 * the map's; and it says so where the code generator relies on it (whole
 * atoms along the columns; 16-column k steps inside an atom from
 * columns 0 and 8; whole 8-row swizzle periods). */
Test(shared_atoms, shifts_agree_with_the_map_where_they_hold)
{
    LayoutTable *t = layout_table_new();
    int64_t held = 0;
    for (int elem = 2; elem <= 4; elem += 2)
        for (int rows = 8; rows <= 32; rows += 8)
            for (int row_bytes = 32; row_bytes <= 512; row_bytes *= 2) {
                int cols = row_bytes / elem;
                const Layout *l = layout_shared_atoms(t, rows, cols, elem);
                cr_assert_not_null(l);
                int atom = l->atom ? l->atom : cols;
                for (int dr = 0; dr < rows; dr += 8)
                    for (int dc = 0; dc < cols; dc += 8) {
                        LayoutShift sh = layout_shared_shift(l, dr, dc);
                        for (int r = 0; r + dr < rows; r++)
                            for (int c = 0; c + dc < cols; c++) {
                                if (!layout_shared_shift_holds(l, c, dr, dc)) continue;
                                held++;
                                int64_t want = layout_shared_offset(l, r + dr, c + dc);
                                int64_t got = (layout_shared_offset(l, r, c) ^ sh.xor_bytes) + sh.add_bytes;
                                if (got != want)
                                    cr_assert_fail("[%d, %d] of %d bytes: (%d, %d) moved by (%d, %d): %lld, not %lld", rows, cols, elem, r, c, dr, dc,
                                                   (long long)got, (long long)want);
                            }
                        if (dc % atom == 0)
                            for (int c = 0; c < cols; c++)
                                cr_expect(layout_shared_shift_holds(l, c, dr, dc), "[%d, %d] of %d bytes: column %d by whole atoms (%d, %d)", rows, cols, elem, c, dr, dc);
                        if (elem == 2 && dc % 16 == 0)
                            for (int c = 0; c <= 8 && c + dc % atom < atom; c += 8)
                                cr_expect(layout_shared_shift_holds(l, c, dr, dc), "[%d, %d]: column %d by a k step (%d, %d)", rows, cols, c, dr, dc);
                    }
            }
    cr_assert_gt(held, 100000);
    layout_table_free(t);
}

Test(shared_atoms, rows_the_hardware_swizzle_cannot_hold_have_none)
{
    LayoutTable *t = layout_table_new();
    static const int bad[] = {16, 48, 96, 160, 192, 320};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_null(layout_shared_atoms(t, 64, bad[i] / 2, 2), "f16 rows of %d bytes", bad[i]);
        cr_expect_null(layout_shared_atoms(t, 64, bad[i] / 4, 4), "f32 rows of %d bytes", bad[i]);
    }
    cr_expect_not_null(layout_shared_atoms(t, 64, 384 / 2, 2), "three 128-byte atoms");
    cr_expect_eq(layout_shared_atoms(t, 64, 128, 2)->atom, 64, "256-byte rows: atoms of 64 halves");
    cr_expect_eq(layout_shared_atoms(t, 64, 64, 2)->atom, 0, "one atom: no cut");
    layout_table_free(t);
}

/* wgmma's accumulator (m64nNk16, one warpgroup's 64 rows; warpgroups one
 * after another along the rows) is the MMA layout the engine asks for:
 * warp w of 4 holds rows 16w + lane/4 (+8), columns 2(lane%4) (+1) of
 * every 8 columns. */
Test(shared_atoms, the_wgmma_accumulator_is_the_mma_layout_with_warps_along_rows)
{
    LayoutTable *t = layout_table_new();
    for (int threads = 128; threads <= 512; threads *= 2)
        for (int cols = 8; cols <= 256; cols += 8) {
            int warps = threads / 32, rows = 16 * warps;
            const Layout *l = layout_mma_for(t, rows, cols, threads, true);
            cr_assert_not_null(l, "[%d, %d] in %d threads", rows, cols, threads);
            cr_assert_eq(layout_nslots(l), cols / 2, "[%d, %d]: N/2 values a thread", rows, cols);
            for (int w = 0; w < warps; w++)
                for (int lane = 0; lane < 32; lane++)
                    for (int i = 0; i < cols / 2; i++) {
                        int r, c;
                        bool valid, owner;
                        layout_elem_of(l, w, lane, i, &r, &c, &valid, &owner);
                        int want_r = 64 * (w / 4) + 16 * (w % 4) + lane / 4 + 8 * ((i / 2) % 2);
                        int want_c = 2 * (lane % 4) + i % 2 + 8 * (i / 4);
                        if (!valid || !owner || r != want_r || c != want_c)
                            cr_assert_fail("[%d, %d] in %d threads: warp %d lane %d slot %d holds (%d, %d)%s, wgmma's (%d, %d)", rows, cols, threads, w,
                                           lane, i, r, c, valid ? "" : " (not valid)", want_r, want_c);
                    }
        }
    layout_table_free(t);
}

/* Where each warpgroup issues r m64 instructions (r x 64 rows each), the
 * engine's instruction i of warpgroup g covers the 64 rows of block
 * g + G i (G warpgroups), its accumulator the thread's slots of row piece
 * i: layout_mma_interleaved holds exactly those elements. */
Test(shared_atoms, the_wgmma_accumulator_of_several_instructions_a_warpgroup_is_the_interleaved_mma_layout)
{
    LayoutTable *t = layout_table_new();
    for (int threads = 128; threads <= 512; threads *= 2)
        for (int r = 2; r <= 4; r++)
            for (int cols = 8; cols <= 128; cols += 8) {
                int warps = threads / 32, G = warps / 4, rows = 64 * G * r, per = cols / 2;
                const Layout *l = layout_mma_interleaved(t, rows, cols, threads);
                cr_assert_not_null(l, "[%d, %d] in %d threads", rows, cols, threads);
                cr_assert_eq(layout_nslots(l), r * per, "[%d, %d]: r N/2 values a thread", rows, cols);
                for (int w = 0; w < warps; w++)
                    for (int lane = 0; lane < 32; lane++)
                        for (int s = 0; s < r * per; s++) {
                            int i = s / per, j = s % per, g = w / 4, rr, cc;
                            bool valid, owner;
                            layout_elem_of(l, w, lane, s, &rr, &cc, &valid, &owner);
                            int want_r = 64 * (g + G * i) + 16 * (w % 4) + lane / 4 + 8 * ((j / 2) % 2);
                            int want_c = 2 * (lane % 4) + j % 2 + 8 * (j / 4);
                            if (!valid || !owner || rr != want_r || cc != want_c)
                                cr_assert_fail("[%d, %d] in %d threads: warp %d lane %d slot %d holds (%d, %d), wgmma's (%d, %d)", rows, cols,
                                               threads, w, lane, s, rr, cc, want_r, want_c);
                        }
            }
    cr_expect_null(layout_mma_interleaved(t, 96, 64, 128), "rows not a multiple of 16 x warps");
    cr_expect_eq(layout_mma_interleaved(t, 64, 64, 128), layout_mma_for(t, 64, 64, 128, true), "one piece a warp: the plain MMA layout");
    layout_table_free(t);
}
