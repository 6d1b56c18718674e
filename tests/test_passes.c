/* test_passes.c: the loop passes, licm, async and pipeline, on IR in its
 * text form (tests/ir/loops.ir, tests/ir/async.ir): what moves and what
 * stays, and that the interpreter computes the same results before and
 * after. */
#include <criterion/criterion.h>
#include <math.h>

#include "base/half.h"
#include "testutil.h"

static IrModule *load_ir(const char *path)
{
    char *text = tu_read_file(path), err[512];
    cr_assert_not_null(text);
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    free(text);
    return m;
}

static const IrOp *find_loop(const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->kind == OP_FOR) return b->ops[i];
    return NULL;
}

static int count_loads(const IrBlock *b, int param)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++)
        n += b->ops[i]->kind == OP_LOAD && b->ops[i]->param == param;
    return n;
}

/* Runs f on fixed inputs; returns Y (16 * 4 floats, caller frees). */
static float *run(const IrFunc *f, int n)
{
    static float x[64 * 16], w[16];
    for (int i = 0; i < 64 * 16; i++) x[i] = (float)((i * 7) % 13) - 6.0f;
    for (int i = 0; i < 16; i++) w[i] = 0.5f + (float)i;
    float *y = malloc(4 * 16 * sizeof *y);
    for (int i = 0; i < 64; i++) y[i] = (float)i * 0.25f;
    IrArg args[4] = {{.data = x, .dims = {64, 16}}, {.data = w, .dims = {1, 16}}, {.data = y, .dims = {4, 16}}, {.i = n}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 4, grid, err, sizeof err), 0, "%s", err);
    return y;
}

Test(passes, licm_moves_invariant_loads_of_read_only_tensors)
{
    IrModule *m = load_ir("tests/ir/loops.ir");
    IrFunc *f = m->funcs[0];
    ir_licm(f);
    char err[512];
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    const IrOp *loop = find_loop(f->body);
    cr_assert_eq(count_loads(f->body, 1), 1, "W's load moved before the loop:\n%s", tu_func_text(f));
    cr_assert_eq(count_loads(loop->body, 1), 0);
    cr_assert_eq(count_loads(loop->body, 2), 1, "Y is stored: its load stays in the loop");
    cr_assert_eq(count_loads(loop->body, 0), 1, "X's window depends on the counter");
    ir_module_free(m);
}

Test(passes, pipeline_issues_loads_one_iteration_ahead)
{
    IrModule *m = load_ir("tests/ir/loops.ir");
    IrFunc *f = m->funcs[0];
    ir_licm(f);
    ir_pipeline(f);
    ir_dce(f);
    char err[512];
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    const IrOp *loop = find_loop(f->body);
    cr_assert_eq(loop->nargs, 4, "X's tile is carried: lower, upper, acc, x\n%s", tu_func_text(f));
    cr_assert_eq(count_loads(f->body, 0), 1, "the first window is loaded before the loop");
    cr_assert_eq(count_loads(loop->body, 0), 1, "the next window is loaded in the body");
    const IrOp *y = loop->body->ops[loop->body->nops - 1];
    const IrOp *next = f->values[y->args[1]].def;
    cr_assert(next && next->kind == OP_LOAD && next->param == 0, "the yield carries the next window");
    ir_module_free(m);
}

Test(passes, loop_passes_keep_the_results)
{
    for (int n = 0; n <= 20; n += 5) {
        IrModule *a = load_ir("tests/ir/loops.ir"), *b = load_ir("tests/ir/loops.ir");
        char err[512];
        cr_assert_eq(ir_run_passes(b->funcs[0], true, NULL, NULL, err, sizeof err), 0, "%s", err);
        float *ya = run(a->funcs[0], n), *yb = run(b->funcs[0], n);
        for (int i = 0; i < 64; i++) cr_assert_eq(ya[i], yb[i], "n %d, Y[%d]: %g before the passes, %g after", n, i, ya[i], yb[i]);
        free(ya);
        free(yb);
        ir_module_free(a);
        ir_module_free(b);
    }
}

Test(passes, licm_keeps_a_floordiv_by_a_variable_in_the_loop)
{
    const char *text =
        "func f kernel f threads 32\n"
        "    params(Y: i32[4], n: i32, d: i32) {\n"
        "  %1.n = param n : i32\n"
        "  %2.d = param d : i32\n"
        "  %3 = const 0 : i32\n"
        "  %4.s = for %5.i = %3 to %1.n step 1 iter(%6.s = %3) : i32 {\n"
        "    %7 = floordiv %1.n, %2.d : i32\n"
        "    %8 = add %6.s, %7 : i32\n"
        "    yield %8\n"
        "  }\n"
        "  %9 = splat %4.s : i32[4]\n"
        "  store Y[%3], %9\n"
        "  return\n"
        "}\n";
    char err[512];
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    ir_licm(m->funcs[0]);
    const IrOp *loop = find_loop(m->funcs[0]->body);
    cr_assert_eq(loop->body->nops, 3, "the division stays: with n = 0 and d = 0 the loop never divides");
    ir_module_free(m);
}

/* tests/ir/store_load.ir on X[32] = 1, 2, 3, ... and Y[40] = -100: after
 * the loop, Y[i] holds the sum of X's windows before i's (4 wide), as a
 * plain C loop computes it. */
enum { SL_X = 32, SL_Y = 40 };

static void store_load_expected(int n, const float *x, float *y)
{
    float acc[4] = {0};
    for (int i = 0; i < n; i += 4) {
        for (int k = 0; k < 4; k++)
            if (i + k < SL_Y) y[i + k] = acc[k];
        for (int k = 0; k < 4; k++) acc[k] = (i + k < SL_Y ? y[i + k] : 0) + (i + k < SL_X ? x[i + k] : 0);
    }
    for (int k = 0; k < 4; k++)
        if (n + k < SL_Y) y[n + k] = acc[k];
}

static void store_load_run(const IrFunc *f, int n, float *y)
{
    float x[SL_X];
    for (int i = 0; i < SL_X; i++) x[i] = (float)(i + 1);
    for (int i = 0; i < SL_Y; i++) y[i] = -100.0f;
    IrArg args[3] = {{.data = x, .dims = {SL_X, 0}}, {.data = y, .dims = {SL_Y, 0}}, {.i = n}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 3, grid, err, sizeof err), 0, "%s", err);
}

Test(passes, pipeline_leaves_a_load_of_a_stored_tensor_in_place)
{
    IrModule *m = load_ir("tests/ir/store_load.ir");
    IrFunc *f = m->funcs[0];
    char err[512];
    cr_assert_eq(ir_run_passes(f, true, NULL, NULL, err, sizeof err), 0, "%s", err);
    const IrOp *loop = find_loop(f->body);
    char *text = tu_func_text(f);
    cr_assert_eq(count_loads(f->body, 1), 0, "no load of Y before the loop:\n%s", text);
    cr_assert_eq(count_loads(loop->body, 1), 1, "Y's load stays in the body:\n%s", text);
    const IrOp *store = loop->body->ops[0], *load = loop->body->ops[1];
    cr_assert(store->kind == OP_STORE && load->kind == OP_LOAD && load->param == 1,
              "the body still stores Y and then loads it back:\n%s", text);
    cr_assert_eq(load->args[0], loop->body->args[0], "at the counter, not the next one:\n%s", text);
    cr_assert_eq(count_loads(f->body, 0), 1, "X's first window is loaded before the loop:\n%s", text);
    cr_assert_eq(loop->nargs, 4, "and carried: lower, upper, acc, x\n%s", text);
    free(text);
    ir_module_free(m);
}

Test(passes, pipeline_keeps_a_store_then_load_loop_s_results)
{
    for (int n = 0; n <= 36; n += 6) {
        IrModule *a = load_ir("tests/ir/store_load.ir"), *b = load_ir("tests/ir/store_load.ir");
        char err[512];
        cr_assert_eq(ir_run_passes(b->funcs[0], true, NULL, NULL, err, sizeof err), 0, "%s", err);
        float want[SL_Y], ya[SL_Y], yb[SL_Y];
        float x[SL_X];
        for (int i = 0; i < SL_X; i++) x[i] = (float)(i + 1);
        for (int i = 0; i < SL_Y; i++) want[i] = -100.0f;
        store_load_expected(n, x, want);
        store_load_run(a->funcs[0], n, ya);
        store_load_run(b->funcs[0], n, yb);
        for (int i = 0; i < SL_Y; i++) {
            cr_assert_eq(ya[i], want[i], "n %d, Y[%d]: %g before the passes, %g expected", n, i, ya[i], want[i]);
            cr_assert_eq(yb[i], want[i], "n %d, Y[%d]: %g after the passes, %g expected", n, i, yb[i], want[i]);
        }
        ir_module_free(a);
        ir_module_free(b);
    }
}

static int count_kind(const IrBlock *b, IrOpKind kind, int param);

/* ---- atomic adds write their tensor: tests/ir/atomic_add.ir ---- */

enum { AA_X = 24, AA_Y = 20 };

/* Runs f with n on X = 1, 2, 3, ..., S = 0.5, Y = 10, 20, 30, ...; out
 * gets O (4), S (4) and Y (AA_Y) as floats. */
static void atomic_add_run(const IrFunc *f, int n, float *out)
{
    float x[AA_X], s[4], o[4];
    int32_t y[AA_Y];
    for (int i = 0; i < AA_X; i++) x[i] = (float)(i + 1);
    for (int i = 0; i < 4; i++) s[i] = 0.5f, o[i] = -1.0f;
    for (int i = 0; i < AA_Y; i++) y[i] = 10 * (i + 1);
    IrArg args[5] = {{.data = x, .dims = {AA_X, 0}}, {.data = s, .dims = {4, 0}}, {.data = y, .dims = {AA_Y, 0}}, {.data = o, .dims = {4, 0}}, {.i = n}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 5, grid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 4; i++) out[i] = o[i], out[4 + i] = s[i];
    for (int i = 0; i < AA_Y; i++) out[8 + i] = (float)y[i];
}

/* The same as a plain C loop. */
static void atomic_add_expected(int n, float *out)
{
    float s[4] = {0.5f, 0.5f, 0.5f, 0.5f}, acc[4] = {0};
    int32_t y[AA_Y];
    for (int i = 0; i < AA_Y; i++) y[i] = 10 * (i + 1);
    for (int i = 0; i < n; i += 4)
        for (int k = 0; k < 4; k++) {
            s[k] += i + k < AA_X ? (float)(i + k + 1) : 0.0f;
            if (i + k < AA_Y) y[i + k] += 1;
            acc[k] += s[k] + (i + k < AA_Y ? (float)y[i + k] : 0.0f);
        }
    for (int i = 0; i < 4; i++) out[i] = acc[i], out[4 + i] = s[i];
    for (int i = 0; i < AA_Y; i++) out[8 + i] = (float)y[i];
}

Test(passes, loads_of_a_tensor_added_into_stay_after_its_adds)
{
    IrModule *m = load_ir("tests/ir/atomic_add.ir");
    IrFunc *f = m->funcs[0];
    char err[512];
    cr_assert_eq(ir_run_passes(f, true, NULL, NULL, err, sizeof err), 0, "%s", err);
    const IrOp *loop = find_loop(f->body);
    char *text = tu_func_text(f);
    cr_assert_eq(count_loads(f->body, 1), 0, "S is added into in the loop: its load is not hoisted:\n%s", text);
    cr_assert_eq(count_loads(f->body, 2), 0, "nor Y's issued ahead:\n%s", text);
    cr_assert_eq(count_loads(loop->body, 1), 1, "%s", text);
    cr_assert_eq(count_loads(loop->body, 2), 1, "%s", text);
    cr_assert_eq(count_kind(loop->body, OP_ATOMIC_ADD, -1), 2, "dce keeps both adds:\n%s", text);
    cr_assert_eq(count_loads(f->body, 0), 1, "X, never written, is pipelined:\n%s", text);
    free(text);
    for (int n = 0; n <= 28; n += 4) {
        IrModule *a = load_ir("tests/ir/atomic_add.ir");
        float want[8 + AA_Y], before[8 + AA_Y], after[8 + AA_Y];
        atomic_add_expected(n, want);
        atomic_add_run(a->funcs[0], n, before);
        atomic_add_run(f, n, after);
        for (int i = 0; i < 8 + AA_Y; i++) {
            cr_assert_eq(before[i], want[i], "n %d, value %d: %g before the passes, %g expected", n, i, before[i], want[i]);
            cr_assert_eq(after[i], want[i], "n %d, value %d: %g after the passes, %g expected", n, i, after[i], want[i]);
        }
        ir_module_free(a);
    }
    ir_module_free(m);
}

/* A loop whose only effect is an atomic add of loop-invariant operands
 * stays, and so does the add, in it: it adds n times, not once. */
Test(passes, licm_and_dce_keep_an_invariant_add_in_its_loop)
{
    const char *text =
        "func f kernel f threads 32\n"
        "    params(Y: i32[4], n: i32) {\n"
        "  %1.n = param n : i32\n"
        "  %2 = const 0 : i32\n"
        "  %3 = splat %1.n : i32[4]\n"
        "  for %4.i = %2 to %1.n step 1 {\n"
        "    atomic_add Y[%2], %3\n"
        "    yield\n"
        "  }\n"
        "  return\n"
        "}\n";
    char err[512];
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    ir_licm(m->funcs[0]);
    ir_dce(m->funcs[0]);
    const IrOp *loop = find_loop(m->funcs[0]->body);
    cr_assert_not_null(loop, "the loop was removed:\n%s", tu_func_text(m->funcs[0]));
    cr_assert_eq(loop->body->nops, 2);
    cr_assert_eq(loop->body->ops[0]->kind, OP_ATOMIC_ADD);
    ir_module_free(m);
}

/* ---- async: tests/ir/async.ir is a 3-stage loop (after licm) loading A
 * and B for tensor-core dots, Y (which the loop stores) for one, and B
 * again for an elementwise add. ---- */

static int count_kind(const IrBlock *b, IrOpKind kind, int param)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++)
        n += b->ops[i]->kind == kind && (param < 0 || b->ops[i]->param == param);
    return n;
}

/* Runs mm on fixed non-zero inputs with n = 96 (three iterations, so the
 * copies past the loop's range read past A's and B's rows); returns C and
 * Y (32 * 32 floats, then 96 * 32 halves as floats; caller frees). */
static float *run_mm(const IrFunc *f)
{
    enum { N = 96, K = 32 };
    static uint16_t a[(N + 32) * K], b[(N + 32) * K], y[N * K];
    for (int i = 0; i < (N + 32) * K; i++) {
        a[i] = ph_f32_to_f16((float)((i * 7) % 11 - 5) * 0.125f);
        b[i] = ph_f32_to_f16((float)((i * 5) % 13 - 6) * 0.25f);
    }
    for (int i = 0; i < N * K; i++) y[i] = ph_f32_to_f16((float)(i % 9 - 4) * 0.5f);
    float *out = calloc(32 * 32 + N * K, sizeof *out);
    for (int i = 0; i < 32 * 32; i++) out[i] = -7.0f;   /* poison */
    IrArg args[5] = {{.data = a, .dims = {N + 32, K}}, {.data = b, .dims = {N + 32, K}}, {.data = y, .dims = {N, K}}, {.data = out, .dims = {32, 32}}, {.i = N}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 5, grid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < N * K; i++) out[32 * 32 + i] = ph_f16_to_f32(y[i]);
    return out;
}

Test(passes, async_copies_dot_operands_through_a_ring_of_stages)
{
    IrModule *ref = load_ir("tests/ir/async.ir"), *m = load_ir("tests/ir/async.ir");
    IrFunc *f = m->funcs[0];
    cr_assert_eq(f->stages, 3);
    ir_async(f);
    char err[512];
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s\n%s", err, tu_func_text(f));
    const IrOp *loop = find_loop(f->body);
    const IrBlock *body = loop->body;
    /* before the loop: iterations 0 and 1 of A and B, a commit each */
    cr_expect_eq(count_kind(f->body, OP_COPY_ASYNC, 0), 2, "%s", tu_func_text(f));
    cr_expect_eq(count_kind(f->body, OP_COPY_ASYNC, 1), 2);
    cr_expect_eq(count_kind(f->body, OP_COMMIT_ASYNC, -1), 2);
    /* in the loop: first the wait for this iteration's tiles, allowing the one younger group */
    const IrOp *wait = body->ops[0];
    cr_assert_eq(wait->kind, OP_WAIT_ASYNC, "%s", tu_func_text(f));
    cr_expect_eq(wait->ival, 1);
    cr_expect_eq(wait->nargs, 2);
    cr_expect_eq(count_kind(body, OP_COPY_ASYNC, 0), 1);
    cr_expect_eq(count_kind(body, OP_COPY_ASYNC, 1), 1);
    cr_expect_eq(count_kind(body, OP_COMMIT_ASYNC, -1), 1);
    cr_expect_eq(count_loads(body, 0), 0, "A is copied, not loaded");
    cr_expect_eq(count_loads(body, 1), 1, "B's elementwise use keeps its own load");
    cr_expect_eq(count_loads(body, 2), 1, "Y is stored in the loop: its load stays");
    /* the tiles of two iterations and the write slot are carried */
    cr_expect_eq(loop->nargs - 2, 1 + 2 * 2 + 1);
    /* after the loop: nothing left in flight */
    int at = -1;
    for (int i = 0; i < f->body->nops; i++)
        if (f->body->ops[i] == loop) at = i;
    const IrOp *drain = f->body->ops[at + 1];
    cr_expect(drain->kind == OP_WAIT_ASYNC && drain->nargs == 0 && drain->ival == 0, "%s", tu_func_text(f));
    /* the same results, in the interpreter */
    float *want = run_mm(ref->funcs[0]), *got = run_mm(f);
    for (int i = 0; i < 32 * 32 + 96 * 32; i++) cr_assert_eq(got[i], want[i], "element %d: %g, want %g", i, got[i], want[i]);
    free(want); free(got);
    ir_module_free(ref);
    ir_module_free(m);
}

/* Two stages wait for everything; one stage, or no tensor cores, copies nothing. */
Test(passes, async_stage_count_decides_the_schedule)
{
    for (int stages = 1; stages <= 4; stages++)
        for (int tc = 0; tc < 2; tc++) {
            IrModule *m = load_ir("tests/ir/async.ir");
            IrFunc *f = m->funcs[0];
            f->stages = stages;
            f->tensorcore = tc;
            ir_async(f);
            char err[512];
            cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
            const IrOp *loop = find_loop(f->body);
            int copies = count_kind(f->body, OP_COPY_ASYNC, -1);
            if (stages == 1 || !tc) {
                cr_expect_eq(copies, 0, "stages %d, tensorcore %d", stages, tc);
                cr_expect_eq(count_loads(loop->body, 0), 1);
                ir_pipeline(f);
                int ahead = loop->nargs - 2 - 1;   /* loads the register pipeline carries */
                cr_expect_eq(ahead > 0, stages != 1, "stages %d, tensorcore %d: %d loads carried", stages, tc, ahead);
            } else {
                cr_expect_eq(copies, 2 * (stages - 1), "stages %d", stages);
                cr_expect_eq(loop->body->ops[0]->ival, stages - 2, "stages %d", stages);
                float *r = run_mm(f);
                free(r);
            }
            ir_module_free(m);
        }
}

/* tests/ir/async_once.ir: Q's row block picked by a select on a constant
 * (as bench/attention_fused.ph's non-persistent forward picks it), inside
 * a loop of one trip around a K loop. Runs it on block 1 with n 96. */
static float *run_once(const IrFunc *f)
{
    enum { N = 96, K = 32 };
    static uint16_t q[64 * K], k[(N + 64) * K];
    for (int i = 0; i < 64 * K; i++) q[i] = ph_f32_to_f16((float)((i * 7) % 11 - 5) * 0.125f);
    for (int i = 0; i < (N + 64) * K; i++) k[i] = ph_f32_to_f16((float)((i * 5) % 13 - 6) * 0.25f);
    float *out = malloc(32 * 32 * sizeof *out);
    for (int i = 0; i < 32 * 32; i++) out[i] = -7.0f;   /* poison */
    IrArg args[4] = {{.data = q, .dims = {64, K}}, {.data = k, .dims = {N + 64, K}}, {.data = out, .dims = {32, 32}}, {.i = N}};
    char err[512];
    int grid[3] = {2, 1, 1};
    cr_assert_eq(ir_interp(f, args, 4, grid, err, sizeof err), 0, "%s", err);
    return out;
}

/* PHOBOS_COPY_ONCE=1: the select and the loop of one trip fold away, licm
 * takes Q's load out of the K loop, and async copies it once, into a ring
 * of one stage: its commit before the K loop's first two, its WAIT_ONCE
 * wait (two younger groups pending) just before the K loop. Without the
 * switch Q stays a load inside the loop of one trip. */
Test(passes, copy_once_takes_a_tile_loaded_outside_loops)
{
    for (int on = 0; on < 2; on++) {
        if (on) setenv("PHOBOS_COPY_ONCE", "1", 1);
        IrModule *ref = load_ir("tests/ir/async_once.ir"), *m = load_ir("tests/ir/async_once.ir");
        IrFunc *f = m->funcs[0];
        ir_fold(f);
        ir_licm(f);
        ir_async(f);
        unsetenv("PHOBOS_COPY_ONCE");
        char err[512];
        cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s\n%s", err, tu_func_text(f));
        const IrOp *loop = find_loop(f->body), *once = NULL, *wait = NULL;
        int at = -1, commits_before = 0;
        for (int i = 0; i < f->body->nops; i++) {
            const IrOp *op = f->body->ops[i];
            if (op->kind == OP_COPY_ASYNC && op->param == 0) once = op;
            if (op->kind == OP_WAIT_ASYNC && op->nargs) wait = op;
            if (op == loop) at = i;
            commits_before += op->kind == OP_COMMIT_ASYNC && at < 0;
        }
        cr_assert_not_null(loop);
        if (!on) {
            cr_expect_null(once, "%s", tu_func_text(f));
            cr_expect_eq(count_loads(loop->body, 0), 1, "Q is loaded in the loop of one trip:\n%s", tu_func_text(f));
        } else {
            cr_assert_not_null(once, "Q is not copied:\n%s", tu_func_text(f));
            cr_expect_eq(once->ival, 1, "a ring of %lld stages", (long long)once->ival);
            cr_assert_not_null(wait, "%s", tu_func_text(f));
            cr_expect(wait->flags & WAIT_ONCE);
            cr_expect_eq(wait->ival, 2, "%s", tu_func_text(f));
            cr_expect_eq(f->body->ops[at - 1], wait, "the wait is not just before the K loop:\n%s", tu_func_text(f));
            cr_expect_eq(commits_before, 3, "%s", tu_func_text(f));
            cr_expect_eq(count_kind(loop->body, OP_COPY_ASYNC, 1), 1, "K still turns in its ring");
            /* the text form keeps the flag and the ring of one stage */
            char *text = tu_func_text(f);
            cr_expect(strstr(text, "pending 2 once") && strstr(text, "stages 1"), "%s", text);
            IrModule *back = ir_parse(text, err, sizeof err);
            cr_assert_not_null(back, "%s", err);
            char *again = tu_func_text(back->funcs[0]);
            cr_expect_str_eq(again, text);
            ir_module_free(back);
            free(again);
            free(text);
        }
        float *want = run_once(ref->funcs[0]), *got = run_once(f);
        for (int i = 0; i < 32 * 32; i++) cr_assert_eq(got[i], want[i], "element %d: %g, want %g", i, got[i], want[i]);
        free(want); free(got);
        ir_module_free(ref);
        ir_module_free(m);
    }
}

/* A return between the load and its first reader: the tile stays a load
 * (a block must not end with the copy engine writing its shared memory). */
Test(passes, copy_once_leaves_a_tile_a_return_may_skip)
{
    char *text = tu_read_file("tests/ir/async_once.ir"), err[512];
    cr_assert_not_null(text);
    const char *at = strstr(text, "    %18.acc = for");
    cr_assert_not_null(at);
    static const char early[] = "    %23 = gt %1.n, %9 : bool\n    if %23 {\n      return\n      yield\n    }\n";
    size_t head = (size_t)(at - text);
    char *edited = malloc(strlen(text) + sizeof early);
    memcpy(edited, text, head);
    strcpy(edited + head, early);
    strcat(edited, at);
    IrModule *m = ir_parse(edited, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    IrFunc *f = m->funcs[0];
    setenv("PHOBOS_COPY_ONCE", "1", 1);
    ir_fold(f);
    ir_licm(f);
    ir_async(f);
    unsetenv("PHOBOS_COPY_ONCE");
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    cr_expect_eq(count_kind(f->body, OP_COPY_ASYNC, 0), 0, "Q is copied past a return:\n%s", tu_func_text(f));
    cr_expect_eq(count_loads(f->body, 0), 1);
    ir_module_free(m);
    free(edited);
    free(text);
}

/* A dot nobody uses leaves no copies behind: the waits and commits async
 * adds are effects, so the dead loads go before it copies anything. */
Test(passes, async_copies_nothing_for_a_dead_dot)
{
    const char *text =
        "func f kernel f threads 128 tensorcore stages 3\n"
        "    params(A: f16[M, 32], C: f32[32, 32], n: i32) {\n"
        "  %1 = const 0 : i32\n"
        "  %2 = param n : i32\n"
        "  %3 = const 0.0 : f32\n"
        "  %4 = splat %3 : f32[32, 32]\n"
        "  for %5 = %1 to %2 step 32 {\n"
        "    %6 = load A[%5, %1] : f16[32, 32]\n"
        "    %7 = dot_t %6, %6, %4 : f32[32, 32]\n"
        "    yield\n"
        "  }\n"
        "  store C[%1, %1], %4\n"
        "  return\n"
        "}\n";
    char err[512];
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    IrFunc *f = m->funcs[0];
    ir_async(f);
    ir_dce(f);
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    cr_expect_eq(count_kind(f->body, OP_COPY_ASYNC, -1), 0, "%s", tu_func_text(f));
    cr_expect_null(find_loop(f->body), "the empty loop goes too:\n%s", tu_func_text(f));
    ir_module_free(m);
}

/* Runs vector_ring.ir on fixed non-zero inputs, n = 64 (two
 * iterations); returns C (32 * 32 floats; caller frees). */
static float *run_vector_ring(const IrFunc *f)
{
    enum { N = 64 };
    static uint16_t a[(N + 32) * 32];
    static float l[N + 32], d[N + 32], w[(N + 32) * 2];
    for (int i = 0; i < (N + 32) * 32; i++) a[i] = ph_f32_to_f16((float)((i * 7) % 11 - 5) * 0.125f);
    for (int i = 0; i < N + 32; i++) l[i] = (float)(i % 5) - 2.0f, d[i] = (float)(i % 3) * 0.5f;
    for (int i = 0; i < (N + 32) * 2; i++) w[i] = (float)(i % 7) * 0.25f - 0.5f;
    float *out = malloc(32 * 32 * sizeof *out);
    for (int i = 0; i < 32 * 32; i++) out[i] = -7.0f;   /* poison */
    IrArg args[6] = {{.data = a, .dims = {N + 32, 32}}, {.data = l, .dims = {N + 32, 1}}, {.data = d, .dims = {N + 32, 1}},
                     {.data = w, .dims = {N + 32, 2}}, {.data = out, .dims = {32, 32}}, {.i = N}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 6, grid, err, sizeof err), 0, "%s", err);
    return out;
}

/* The vector rings (on by default): a column of a one-column f32 tensor
 * that only transposed broadcasts read (L) goes through a ring beside the
 * dot's operand; one broadcast straight (D) or a column of a wider tensor
 * (W) stays a load, as does everything with PHOBOS_VECTOR_RING=0; the
 * interpreter gives the same C either way. */
Test(passes, async_puts_a_transposed_column_in_a_ring_of_its_own)
{
    for (int on = 0; on < 2; on++) {
        if (!on) setenv("PHOBOS_VECTOR_RING", "0", 1);
        IrModule *ref = load_ir("tests/ir/vector_ring.ir"), *m = load_ir("tests/ir/vector_ring.ir");
        IrFunc *f = m->funcs[0];
        ir_async(f);
        unsetenv("PHOBOS_VECTOR_RING");
        char err[512];
        cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s\n%s", err, tu_func_text(f));
        const IrBlock *body = find_loop(f->body)->body;
        cr_expect_eq(count_kind(body, OP_COPY_ASYNC, 0), 1, "%s", tu_func_text(f));
        cr_expect_eq(count_kind(body, OP_COPY_ASYNC, 1), on, "L copied unless the switch is 0:\n%s", tu_func_text(f));
        cr_expect_eq(count_loads(body, 1), !on);
        cr_expect_eq(count_loads(body, 2), 1, "D, broadcast straight, stays a load");
        cr_expect_eq(count_loads(body, 3), 1, "W, two columns, stays a load");
        cr_expect_eq(body->ops[0]->nargs, 1 + on, "the wait gives A's slot, and L's with the switch");
        float *want = run_vector_ring(ref->funcs[0]), *got = run_vector_ring(f);
        for (int i = 0; i < 32 * 32; i++) cr_assert_eq(got[i], want[i], "element %d: %g, want %g", i, got[i], want[i]);
        free(want); free(got);
        ir_module_free(ref);
        ir_module_free(m);
    }
}

/* ---- while loops ---- */

/* i counts up to n; s adds n // d and n * 3 and loads X[i]: the product and
 * the condition's n + 1 leave the loop (licm), the division by a variable
 * stays (n = 0 runs no iteration, d may be 0), the load of X stays (its
 * start is the counter), and nothing is pipelined. */
static const char *while_text =
    "func f kernel f threads 32\n"
    "    params(X: i32[8], Y: i32[4], n: i32, d: i32) {\n"
    "  %1.n = param n : i32\n"
    "  %2.d = param d : i32\n"
    "  %3 = const 0 : i32\n"
    "  %4 = const 1 : i32\n"
    "  %5 = const 3 : i32\n"
    "  %6.i, %7.s = while iter(%8.i = %3, %9.s = %3) : i32, i32 {\n"
    "    %10 = add %1.n, %4 : i32\n"
    "    %11 = lt %8.i, %10 : bool\n"
    "    yield %11\n"
    "  } do(%12.i, %13.s) {\n"
    "    %14 = floordiv %1.n, %2.d : i32\n"
    "    %15 = mul %1.n, %5 : i32\n"
    "    %16 = load X[%12.i] : i32[1]\n"
    "    %17 = reduce_sum %16, 0 : i32[1]\n"
    "    %18 = add %13.s, %14 : i32\n"
    "    %19 = add %18, %15 : i32\n"
    "    %20 = add %12.i, %4 : i32\n"
    "    yield %20, %19\n"
    "  }\n"
    "  %21 = splat %7.s : i32[4]\n"
    "  store Y[%3], %21\n"
    "  return\n"
    "}\n";

static const IrOp *find_while(const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->kind == OP_WHILE) return b->ops[i];
    return NULL;
}

static int32_t while_run(const IrFunc *f, int n, int d)
{
    int32_t x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4] = {0};
    IrArg args[4] = {{.data = x, .dims = {8, 0}}, {.data = y, .dims = {4, 0}}, {.i = n}, {.i = d}};
    char err[512];
    int grid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(f, args, 4, grid, err, sizeof err), 0, "%s", err);
    return y[0];
}

Test(passes, licm_moves_what_is_safe_out_of_a_while_and_pipeline_leaves_it)
{
    char err[512];
    IrModule *m = ir_parse(while_text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    IrFunc *f = m->funcs[0];
    int32_t before = while_run(f, 5, 2);
    cr_assert_eq(before, 6 * (5 / 2 + 15));
    ir_licm(f);
    ir_pipeline(f);
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    const IrOp *w = find_while(f->body);
    cr_assert_not_null(w);
    cr_assert_eq(w->body->nops, 2, "the condition's n + 1 moved out:\n%s", tu_func_text(f));
    cr_assert_eq(w->els->nops, 7, "the product moved out, the division and the load stayed:\n%s", tu_func_text(f));
    cr_assert_eq(w->nargs, 2, "pipeline carries nothing new through a while");
    cr_assert_eq(w->els->ops[0]->kind, OP_BINARY);
    cr_assert_eq(w->els->ops[0]->sub, BIN_FLOORDIV);
    cr_assert_eq(w->els->ops[1]->kind, OP_LOAD);
    cr_assert_eq(while_run(f, 5, 2), before);
    cr_assert_eq(while_run(f, -1, 0), 0, "no iteration, no division by zero");
    ir_module_free(m);
}

Test(passes, fold_removes_a_while_that_never_runs_and_dce_keeps_one_that_may)
{
    char err[512];
    IrModule *m = ir_parse(while_text, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    IrFunc *f = m->funcs[0];
    ir_dce(f);
    cr_assert_not_null(find_while(f->body), "a while stays: it may never end");
    /* the condition i < n + 1 becomes n > n + 1 with n the constant 5: never true */
    IrOp *p = f->values[1].def, *lt = find_while(f->body)->body->ops[1];
    p->kind = OP_CONST;
    p->ival = 5;
    lt->sub = CMP_GT;
    lt->args[0] = 1;
    ir_fold(f);
    cr_assert_eq(ir_verify(f, err, sizeof err), 0, "%s", err);
    cr_assert_null(find_while(f->body), "folded away:\n%s", tu_func_text(f));
    cr_assert_eq(while_run(f, 5, 2), 0, "the results are the initial values");
    ir_module_free(m);
}
