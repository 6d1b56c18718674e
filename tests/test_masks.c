/* test_masks.c: the masks pass on tests/ir/masks.ir: which selects it
 * splits, decides or leaves alone, and that the interpreter computes the
 * same Y before and after it for a and b swept up to INT32_MIN and
 * INT32_MAX, where a corner test that wrapped would decide mixed tiles.
 * A copy of the split function whose fallback select has its operands
 * swapped shows which path a run took: it agrees with the original only
 * when the scalar test decided the tile. On the random programs of
 * tests/difftest, the interpreter computes the same with and without the
 * pass. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "difftest.h"
#include "ir/irutil.h"
#include "phgen.h"
#include "testutil.h"

enum { ROWS = 4, COLS = 16, N = ROWS * COLS };

static IrModule *load_masks(void)
{
    char *text = tu_read_file("tests/ir/masks.ir"), err[512];
    cr_assert_not_null(text);
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    free(text);
    return m;
}

static IrFunc *func_named(const IrModule *m, const char *name)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, name)) return m->funcs[i];
    cr_assert_fail("no function %s in tests/ir/masks.ir", name);
    return NULL;
}

static void run_masks(IrFunc *f)
{
    ir_masks(f);
    char err[512];
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s\n%s", err, tu_func_text(f));
}

static int count_kind(const IrBlock *b, IrOpKind kind)
{
    int n = 0;
    for (int i = 0; b && i < b->nops; i++) {
        n += b->ops[i]->kind == kind;
        n += count_kind(b->ops[i]->body, kind) + count_kind(b->ops[i]->els, kind);
    }
    return n;
}

static IrOp *find_kind(const IrBlock *b, IrOpKind kind)
{
    for (int i = 0; b && i < b->nops; i++)
        if (b->ops[i]->kind == kind) return b->ops[i];
    return NULL;
}

/* The select that runs on tiles the test does not decide: in the else of
 * the if the select became. */
static IrOp *fallback_select(const IrFunc *f)
{
    IrOp *if_op = find_kind(f->body, OP_IF);
    cr_assert_not_null(if_op, "no if:\n%s", tu_func_text(f));
    IrOp *sel = find_kind(if_op->els, OP_SELECT);
    cr_assert_not_null(sel, "no select in the else:\n%s", tu_func_text(f));
    return sel;
}

/* Y for X[i] = i + 1 (never -1), I[i] = i - 20. */
static void run(const IrFunc *f, int32_t a, int32_t b, float *y)
{
    float x[N];
    int32_t idx[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i + 1);
        idx[i] = i - 20;
        y[i] = 0;
    }
    IrArg args[5] = {{.data = x, .dims = {ROWS, COLS}}, {.data = idx, .dims = {ROWS, COLS}}, {.data = y, .dims = {ROWS, COLS}},
                     {.i = a}, {.i = b}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 5, grid, err, sizeof err), 0, "%s", err);
}

static const char *const split_names[] = {"split_le", "split_gt", "split_lt", "split_ge", "split_col_mask"};
enum { NSPLIT = sizeof split_names / sizeof *split_names };

Test(masks, splits_a_select_on_affine_forms_with_scalars)
{
    IrModule *m = load_masks();
    for (int k = 0; k < NSPLIT; k++) {
        IrFunc *f = func_named(m, split_names[k]);
        run_masks(f);
        cr_assert_eq(count_kind(f->body, OP_SELECT), 1, "%s", tu_func_text(f));
        cr_assert_eq(count_kind(f->body, OP_IF), 1, "%s", tu_func_text(f));
        fallback_select(f);
        cr_assert_null(find_kind(f->body, OP_SELECT), "%s: no select is left outside the ifs", split_names[k]);
    }
    ir_module_free(m);
}

Test(masks, leaves_other_selects_as_they_are)
{
    static const char *const names[] = {"keep_load_operand", "keep_iota_product", "keep_float_compare", "keep_eq",
                                        "keep_built_where_used", "keep_mixed_constant", "keep_constant_that_wraps"};
    IrModule *m = load_masks();
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        IrFunc *f = func_named(m, names[k]);
        char *before = tu_func_text(f);
        run_masks(f);
        char *after = tu_func_text(f);
        cr_assert_str_eq(after, before, "%s changed", names[k]);
        free(before);
        free(after);
    }
    ir_module_free(m);
}

/* Forms without scalars: the select goes, Y is X or -1 everywhere. */
Test(masks, decides_compares_without_scalars)
{
    IrModule *m = load_masks();
    static const char *const names[] = {"decide_all_true", "decide_all_false"};
    for (int k = 0; k < 2; k++) {
        IrFunc *f = func_named(m, names[k]);
        run_masks(f);
        cr_assert_eq(count_kind(f->body, OP_SELECT) + count_kind(f->body, OP_IF), 0, "%s", tu_func_text(f));
        float y[N];
        run(f, 0, 0, y);
        for (int i = 0; i < N; i++) cr_assert_eq(y[i], k == 0 ? (float)(i + 1) : -1.0f, "%s: Y[%d] = %g", names[k], i, y[i]);
    }
    ir_module_free(m);
}

/* A masked store on a row mask with scalars: an if, the store without its
 * mask in the then and with it in the else, Y the same as before the pass
 * for a and b swept past the i32 range's ends (the then taken only where
 * every row is kept); masks without scalars decided: the mask or the store
 * gone. */
Test(masks, splits_or_decides_a_masked_store)
{
    IrModule *m = load_masks(), *orig = load_masks();
    IrFunc *f = func_named(m, "split_store"), *g = func_named(orig, "split_store");
    run_masks(f);
    IrOp *if_op = find_kind(f->body, OP_IF);
    cr_assert_not_null(if_op, "%s", tu_func_text(f));
    IrOp *whole = find_kind(if_op->body, OP_STORE), *masked = find_kind(if_op->els, OP_STORE);
    cr_assert(whole && masked, "%s", tu_func_text(f));
    cr_expect(!ir_store_mask(whole) && ir_store_mask(masked), "%s", tu_func_text(f));
    cr_expect_null(find_kind(f->body, OP_STORE), "a store left outside the if");
    static const int32_t v[] = {INT32_MIN, INT32_MIN + 2, -5, -1, 0, 1, 3, 4, 5, INT32_MAX - 3, INT32_MAX};
    enum { NV = sizeof v / sizeof *v };
    for (int i = 0; i < NV; i++)
        for (int j = 0; j < NV; j++) {
            float want[N], got[N];
            run(g, v[i], v[j], want);
            run(f, v[i], v[j], got);
            for (int e = 0; e < N; e++) cr_assert_eq(got[e], want[e], "a %d b %d: Y[%d] %g, want %g", v[i], v[j], e, got[e], want[e]);
        }
    IrFunc *all = func_named(m, "decide_store_all"), *none = func_named(m, "decide_store_none");
    run_masks(all);
    run_masks(none);
    IrOp *st = find_kind(all->body, OP_STORE);
    cr_assert(st && !ir_store_mask(st), "%s", tu_func_text(all));
    cr_expect_eq(count_kind(none->body, OP_STORE), 0, "%s", tu_func_text(none));
    ir_module_free(m);
    ir_module_free(orig);
}

/* What the original computes: every element X, every element -1, or mixed. */
typedef enum { ALL_X, ALL_MINUS_1, MIXED } Outcome;

static Outcome outcome_of(const float *y)
{
    int x = 0, minus = 0;
    for (int i = 0; i < N; i++) {
        if (y[i] == -1.0f) minus++;
        else x++;
    }
    return !minus ? ALL_X : !x ? ALL_MINUS_1 : MIXED;
}

/* The outcome where split_names[k]'s condition holds everywhere (split_ge
 * selects -1 where it holds). */
static Outcome holds_everywhere(int k) { return strcmp(split_names[k], "split_ge") ? ALL_X : ALL_MINUS_1; }

static const int32_t sweep[] = {INT32_MIN, INT32_MIN + 1, INT32_MIN + 7, INT32_MIN + 40, -1000, -37, -20, -9, -5,
                                -3, -1, 0, 1, 2, 4, 6, 9, 15, 20, 37, 1000, INT32_MAX - 40, INT32_MAX - 16,
                                INT32_MAX - 7, INT32_MAX - 1, INT32_MAX};
enum { NSWEEP = sizeof sweep / sizeof *sweep };

static bool near_a_limit(int32_t v) { return v < -100000 || v > 100000; }

/* Over the sweep: the pass keeps Y. With the fallback select's operands
 * swapped, Y agrees with the original only where the test skipped the
 * select: that happens only on tiles where the condition holds everywhere,
 * and on every such tile far from the i32 limits. */
Test(masks, split_selects_compute_what_they_did)
{
    for (int k = 0; k < NSPLIT; k++) {
        IrModule *orig = load_masks(), *split = load_masks(), *poisoned = load_masks();
        IrFunc *fo = func_named(orig, split_names[k]), *fs = func_named(split, split_names[k]);
        IrFunc *fp = func_named(poisoned, split_names[k]);
        run_masks(fs);
        run_masks(fp);
        IrOp *sel = fallback_select(fp);
        ValueId t = sel->args[1];
        sel->args[1] = sel->args[2];
        sel->args[2] = t;
        int seen[3] = {0}, skipped = 0;
        for (int i = 0; i < NSWEEP; i++)
            for (int j = 0; j < NSWEEP; j++) {
                int32_t a = sweep[i], b = sweep[j];
                float yo[N], ys[N], yp[N];
                run(fo, a, b, yo);
                run(fs, a, b, ys);
                run(fp, a, b, yp);
                for (int e = 0; e < N; e++)
                    cr_assert_eq(ys[e], yo[e], "%s, a %d, b %d: Y[%d] is %g, was %g", split_names[k], a, b, e, ys[e], yo[e]);
                Outcome o = outcome_of(yo);
                seen[o]++;
                bool skips = !memcmp(yp, yo, sizeof yo);
                if (skips)
                    cr_assert_eq(o, holds_everywhere(k), "%s, a %d, b %d: the select was skipped on a tile it changes",
                                 split_names[k], a, b);
                else if (o == holds_everywhere(k))
                    cr_assert(near_a_limit(a) || near_a_limit(b), "%s, a %d, b %d: the test missed a tile where the condition holds",
                              split_names[k], a, b);
                skipped += skips;
            }
        cr_assert(seen[ALL_X] && seen[ALL_MINUS_1] && seen[MIXED], "%s: the sweep meets all three cases (%d %d %d)",
                  split_names[k], seen[ALL_X], seen[ALL_MINUS_1], seen[MIXED]);
        cr_assert_gt(skipped, 0);
        ir_module_free(orig);
        ir_module_free(split);
        ir_module_free(poisoned);
    }
}

/* a + col <= b + row with a = INT32_MAX - 7: columns 8..15 wrap to
 * negative numbers, so a test at the greatest corner alone (a + 15, wrapped,
 * <= b) would call the tile all true; columns 0..7 are not. */
Test(masks, a_side_that_wraps_is_not_called_uniform)
{
    IrModule *orig = load_masks(), *split = load_masks();
    IrFunc *fo = func_named(orig, "split_le"), *fs = func_named(split, "split_le");
    run_masks(fs);
    float yo[N], ys[N];
    run(fo, INT32_MAX - 7, 0, yo);
    run(fs, INT32_MAX - 7, 0, ys);
    cr_assert_eq(outcome_of(yo), MIXED);
    for (int e = 0; e < N; e++) cr_assert_eq(ys[e], yo[e], "Y[%d] is %g, was %g", e, ys[e], yo[e]);
    ir_module_free(orig);
    ir_module_free(split);
}

/* The pipeline runs the pass (after licm) and verifies what it makes. */
Test(masks, runs_in_the_pipeline)
{
    IrModule *m = load_masks();
    IrFunc *f = func_named(m, "split_le");
    char err[512];
    cr_assert_eq(ir_run_passes(f, true, NULL, NULL, err, sizeof err), 0, "%s", err);
    fallback_select(f);
    ir_module_free(m);
}

/* ---- generated programs ---- */

/* source lowered and run through every pass but masks */
static IrModule *compile_without_masks(const char *source)
{
    static const SemaOptions none;
    SrcFile src;
    src_from_string(&src, "gen.ph", source);
    Diag d;
    diag_init(&d, &src, NULL);
    Arena *a = arena_new();
    Module *ast = parse(&src, &d, a);
    IrModule *ir = d.nerrors ? NULL : sema(ast, &d, &none);
    arena_free(a);
    diag_free(&d);
    src_free(&src);
    for (int i = 0; ir && i < ir->nfuncs; i++)
        for (const IrPass *p = ir_passes; p->name; p++)
            if (strcmp(p->name, "masks")) p->run(ir->funcs[i]);
    return ir;
}

/* A back end for the difftest engine: the interpreter on the program
 * compiled without the masks pass. */
static DtRunStatus unmasked_load(DtBackend *b, const char *source, const IrModule *m, char *err, size_t errlen)
{
    (void)m;
    b->state = compile_without_masks(source);
    if (b->state) return DT_RUN_OK;
    snprintf(err, errlen, "the program does not compile");
    return DT_RUN_FAILED;
}

static DtRunStatus unmasked_run(DtBackend *b, const IrFunc *f, IrArg *args, int nargs, const int grid[3], char *err,
                                size_t errlen)
{
    const IrModule *m = b->state;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, f->name))
            return ir_interp(m->funcs[i], args, nargs, grid, err, errlen) ? DT_RUN_FAILED : DT_RUN_OK;
    snprintf(err, errlen, "no function %s", f->name);
    return DT_RUN_FAILED;
}

static void unmasked_unload(DtBackend *b)
{
    ir_module_free(b->state);
    b->state = NULL;
}

/* The masks pass's ifs in a block: an if whose then yields what the
 * select in its else chooses where its condition holds. */
static int count_splits(const IrBlock *b)
{
    int n = 0;
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_IF && op->nres == 1 && op->body->nops == 1 && op->els && op->els->nops == 2 &&
            op->els->ops[0]->kind == OP_SELECT && op->els->ops[0]->args[1] == op->body->ops[0]->args[0])
            n++;
        n += count_splits(op->body) + count_splits(op->els);
    }
    return n;
}

Test(masks, generated_programs_compute_what_they_did, .timeout = 300)
{
    DtBackend unmasked = {"interpreter without masks", unmasked_load, unmasked_run, unmasked_unload, NULL};
    int programs = 0, splits = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        DtSpec spec;
        char *src = phgen_program(seed, NULL, &spec), *diags = NULL;
        IrModule *m = tu_compile("gen.ph", src, NULL, &diags);
        cr_assert_not_null(m, "seed %llu: %s", (unsigned long long)seed, diags);
        int n = 0;
        for (int i = 0; i < m->nfuncs; i++) n += count_splits(m->funcs[i]->body);
        if (n) {
            DtReport rep;
            DtVerdict v = dt_compare_module(m, src, &spec, &unmasked, seed, NULL, &rep);
            cr_assert_eq(v, DT_SAME, "seed %llu: %s in %s: %s\n%s", (unsigned long long)seed, dt_verdict_name(v),
                         rep.config, rep.message, src);
            programs++;
            splits += n;
        }
        ir_module_free(m);
        free(diags);
        free(src);
    }
    cr_log_info("%d programs with %d split selects", programs, splits);
    cr_assert_gt(programs, 10, "the generator's masks reach the pass");
}

/* masksplit on split_loop: two loops, the first without the mask's if,
 * and Y as before over the sweep of a and b, i32 limits included (where
 * the exact forms leave the range the first loop runs no iteration). */
Test(masks, a_loop_splits_where_its_mask_holds_and_computes_what_it_did)
{
    IrModule *orig = load_masks(), *split = load_masks();
    IrFunc *fo = func_named(orig, "split_loop"), *fs = func_named(split, "split_loop");
    run_masks(fs);
    ir_mask_split(fs);
    char err[512];
    cr_assert_eq(ir_verify(fs, err, sizeof err), 0, "%s\n%s", err, tu_func_text(fs));
    cr_assert_eq(count_kind(fs->body, OP_FOR), 2, "%s", tu_func_text(fs));
    const IrOp *first = find_kind(fs->body, OP_FOR);
    cr_expect_eq(count_kind(first->body, OP_IF) + count_kind(first->body, OP_SELECT), 0, "%s", tu_func_text(fs));
    int whole = 0;
    for (int i = 0; i < NSWEEP; i++)
        for (int j = 0; j < NSWEEP; j++) {
            float yo[N], ys[N];
            run(fo, sweep[i], sweep[j], yo);
            run(fs, sweep[i], sweep[j], ys);
            for (int e = 0; e < N; e++)
                cr_assert_eq(ys[e], yo[e], "a %d b %d: Y[%d] is %g, was %g", sweep[i], sweep[j], e, ys[e], yo[e]);
        }
    /* between the limits, every count of whole blocks 0..4 */
    for (int b = -20; b < 100; b += 7) {
        float yo[N], ys[N];
        run(fo, 3, b, yo);
        run(fs, 3, b, ys);
        for (int e = 0; e < N; e++) cr_assert_eq(ys[e], yo[e], "a 3 b %d: Y[%d] is %g, was %g", b, e, ys[e], yo[e]);
        whole++;
    }
    cr_assert_gt(whole, 0);
    ir_module_free(orig);
    ir_module_free(split);
}
