/* test_layout.c: the layouts and the layout pass (compiler/layout.c), which
 * need no GPU: the shapes each layout takes, how many slots a thread holds,
 * interning, the plan the pass makes for the tutorial's kernels, and the map
 * from (warp, lane, slot) to element. */
#include <criterion/criterion.h>

#include "layout.h"
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
    cr_assert_eq(layout_nslots(sl), layout_nslots(s), "a slice has its parent's slots");
    layout_table_free(t);
}

static const IrFunc *kernel(const IrModule *m, const char *name)
{
    const IrFunc *f = ph_find_kernel(m, name);
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
    IrModule *m = ph_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *f = kernel(m, "attn_fwd");
    LayoutTable *t = layout_table_new();
    LayoutPlan p = layout_plan(f, t);
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
    IrModule *m = ph_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *f = kernel(m, "attn_bwd_dkdv");
    LayoutTable *t = layout_table_new();
    LayoutPlan p = layout_plan(f, t);
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

/* The owner of a slice's element is the copy at parent position 0 along
 * the reduced axis; an MMA layout's idle warps hold nothing. */
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
    cr_assert_eq(layout_copies(rows), 8, "every column of a row holds it");
    layout_elem_of(rows, 0, 4, 0, &r, &c, &valid, &owner);
    cr_assert(valid && owner && r == 1 && c == 0, "lane 4 holds column 0 of row 1");
    layout_elem_of(rows, 0, 5, 0, &r, &c, &valid, &owner);
    cr_assert(valid && !owner && r == 1, "lane 5 a copy (columns 2, 3)");
    layout_elem_of(rows, 0, 4, 1, &r, &c, &valid, &owner);
    cr_assert(valid && !owner && r == 1, "register 1 a copy (column 1)");
    const Layout *b = layout_blocked(t, 3, 5, 64, 4);
    cr_assert_eq(layout_copies(layout_slice(t, b, 1)), layout_extent(b, 1));
    cr_assert_gt(layout_extent(b, 1), 5, "the pattern runs past the tile: those copies count too");
    layout_table_free(t);
}
