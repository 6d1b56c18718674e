/* test_cpusim.c: the code generator's output run on the CPU executor
 * (tests/cpusim/) against the interpreter, so the back end is checked
 * without a GPU. Every config of every kernel of tests/gpu/ops.ph (and of
 * tests/gpu/math.ph, the math built-ins, tests/gpu/gather.ph, elements,
 * gathers and scatters (and the examples built on them: paged attention,
 * the embedding bag, varlen attention), tests/gpu/types.ph, the 8-bit integer types,
 * tests/gpu/masked.ph, masked loads and stores, tests/gpu/flow.ph,
 * unrolled loops, helpers and RoPE, and tests/gpu/loops.ph, while loops) runs on
 * the same random inputs both ways; every tensor must agree (within the
 * tolerances of test_gpu_ops), and the poisoned guard zones around each
 * tensor must be untouched, so a store outside a tensor is caught even
 * where the interpreter would not show it. The attention tutorial's four
 * kernels (tensor cores, online softmax, causal masks) run the same way at
 * a small size, the fused backward also with its dQ share added by bulk
 * adds and four floats at a time (sm_90a), and tensor-core dots whose operands lie in every form of
 * swizzled shared memory. The atomic adds of tests/gpu/atomics.ph, many
 * blocks and threads into overlapping windows, must give a plain C
 * reference exactly. Every past finding of the random-program
 * fuzzer (the .ph files of tests/difftest/regressions/) runs here too,
 * through the difftest engine, on the inputs `cpufuzz --regress` gives
 * it. The executor's own checks of bad launches are tested too, and its
 * model of the GPU's fused multiply-adds; its model of shared-memory races
 * and cp.async is tested in test_cpusim_races.c, sm_90a's wgmma in
 * test_cpusim_wgmma.c (the runs both suites make: tests/cpusim/
 * simharness.h). The code generator's emitted shared-memory addresses are
 * checked against layout.c's map. */
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS, setenv */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <sys/mman.h>

#include "atomicharness.h"
#include "attention/attention_host.h"
#include "codegen/cg.h"
#include "codegen/codegen.h"
#include "nvidia/mma_layout.h"
#include "cpusim.h"
#include "difftest.h"
#include "driver/targets.h"
#include "opsharness.h"
#include "simharness.h"
#include "testutil.h"

Test(cpusim, every_ops_config_matches_the_interpreter, .timeout = 600) { every_config_matches(OPS, 21, "sm_90"); }

/* tests/gpu/math.ph's math built-ins (their accuracy on many more inputs:
 * test_cpusim_math.c). */
Test(cpusim, every_math_config_matches_the_interpreter, .timeout = 600) { every_config_matches(MATH_OPS, 5, "sm_90"); }

/* Elements read as scalars, gathers and scatters (tests/gpu/gather.ph),
 * on the code of sm_80 and of sm_90a: indices outside the tensors read 0
 * and are never written (the executor's guard zones catch a write). */
Test(cpusim, every_gather_config_matches_the_interpreter, .timeout = 600)
{
    every_config_matches(GATHER_OPS, 10, "sm_80");
    every_config_matches(GATHER_OPS, 10, "sm_90a");
}

/* The examples built on elements and gathers, every config, on random
 * inputs: offsets, lengths and page numbers from -50 to 49, so bags run
 * backwards or past the table and pages lie outside the pool. */
Test(cpusim, paged_attention_and_embedding_bag_match_the_interpreter, .timeout = 600)
{
    every_config_matches("examples/paged_attention/paged_attention.ph", 2, "sm_90");
    every_config_matches("examples/embedding_bag/embedding_bag.ph", 2, "sm_90a");
}
/* examples/varlen_attention, every config, causal and not, on both GPU
 * paths: random prefix sums from -50 to 49 (so sequences of negative
 * length, and ones that start before the tensor or run past it), whose
 * blocks past a sequence's end return and whose rows past it are masked;
 * the guard zones catch a row stored outside O. */
Test(cpusim, every_varlen_attention_config_matches_the_interpreter, .timeout = 600)
{
    IrModule *m = driver_compile_file("examples/varlen_attention/varlen_attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, 2);
    const char *arch[2] = {"sm_90", "sm_90a"};
    for (int a = 0; a < 2; a++) {
        cpusim *s = load_arch(m, arch[a]);
        for (int i = 0; i < m->nfuncs; i++)
            for (int causal = 0; causal < 2; causal++) {
                int bad = run_config_with(s, m->funcs[i], "causal", causal);
                cr_expect_eq(bad, 0, "%s on %s, causal %d: %d elements or guards differ", m->funcs[i]->name, arch[a], causal, bad);
            }
        cpusim_free(s);
    }
    ir_module_free(m);
}
/* tests/gpu/types.ph: i8 and u8 conversions, widening, integer dots. */
Test(cpusim, every_types_config_matches_the_interpreter, .timeout = 600) { every_config_matches(TYPE_OPS, 10, "sm_90"); }
/* The scaled int8 GEMM of examples/int8gemm, every config (its check
 * holds the interpreter to a plain C reference). */
Test(cpusim, every_int8gemm_config_matches_the_interpreter, .timeout = 600) { every_config_matches("examples/int8gemm/int8gemm.ph", 4, "sm_90"); }
/* examples/fp8gemm: the row quantization and the fp8 GEMM on mma.sync's
 * e4m3 form, every config, on sm_90 and sm_90a. */
Test(cpusim, every_fp8gemm_config_matches_the_interpreter, .timeout = 600) { every_config_matches("examples/fp8gemm/fp8gemm.ph", 4, "sm_90"); }
Test(cpusim, every_fp8gemm_config_matches_the_interpreter_on_sm_90a, .timeout = 600) { every_config_matches("examples/fp8gemm/fp8gemm.ph", 4, "sm_90a"); }
/* tests/gpu/i64.ph: i64 arithmetic, conversions, reductions, gathers by an
 * i64 tile, atomic adds; on sm_90's code and sm_90a's. */
Test(cpusim, every_i64_config_matches_the_interpreter, .timeout = 600)
{
    every_config_matches(I64_OPS, 10, "sm_90");
    every_config_matches(I64_OPS, 10, "sm_90a");
}
/* sm_90a: its wgmma engine takes no integer dot, the others do */
Test(cpusim, every_types_config_matches_the_interpreter_on_sm_90a, .timeout = 600) { every_config_matches(TYPE_OPS, 10, "sm_90a"); }
/* tests/gpu/masked.ph: masked loads and stores, a ragged softmax; for
 * each GPU path (sm_80's code, sm_90a's). */
Test(cpusim, every_masked_config_matches_the_interpreter, .timeout = 600)
{
    every_config_matches(MASKED_OPS, 6, "sm_90");
    every_config_matches(MASKED_OPS, 6, "sm_80");
    every_config_matches(MASKED_OPS, 6, "sm_90a");
}

/* tests/gpu/flow.ph: ph.static_range, @ph.func helpers, RoPE on
 * interleaved pairs; for each GPU path. */
Test(cpusim, every_flow_config_matches_the_interpreter, .timeout = 600)
{
    every_config_matches(FLOW_OPS, 7, "sm_90");
    every_config_matches(FLOW_OPS, 7, "sm_80");
    every_config_matches(FLOW_OPS, 7, "sm_90a");
}

/* tests/gpu/strided.ph: rank-3/4 tensors passed as views, windows over two
 * axes or one; the guard zones catch a write outside a tensor's span. */
Test(cpusim, every_strided_config_matches_the_interpreter, .timeout = 600)
{
    every_config_matches(STRIDED_OPS, 4, "sm_90");
    every_config_matches(STRIDED_OPS, 4, "sm_80");
    every_config_matches(STRIDED_OPS, 4, "sm_90a");
}

/* examples/attention_bhnd's configs on the executor (arch's code) and in
 * the interpreter, from the inputs of its check (normal q, k, v; scale
 * 0.125; N = 100, past the blocks) passed as the same views: K and V as
 * [B, N, H, D] memory, O written into [B, N, H, D], the keys of
 * attn_bhnd_kt as a [B, H, D, N] view. Every output element must agree
 * within 1e-2 (the outputs are means of v; the GPU's exp is approximate)
 * and stay poisoned alike. Returns the runs that differ. */
static int attention_views_differ(const char *arch)
{
    enum { B = 2, H = 3, N = 100, D = 64 };
    const size_t n = (size_t)B * H * N * D;
    IrModule *m = driver_compile_file("examples/attention_bhnd/attention_bhnd.ph", NULL, stderr);
    cr_assert_not_null(m);
    cpusim *s = load_arch(m, arch);
    HostLauncher sim = {"cpusim", sim_launch, s, 0};
    HostRng r;
    host_rng_seed(&r, 12);
    uint16_t *in[3];
    for (int i = 0; i < 3; i++) host_fill_normal(DT_F16, in[i] = host_alloc(DT_F16, n), n, 0.0, 1.0, &r);
    const int64_t bhnd[4] = {B, H, N, D}, bhdn[4] = {B, H, D, N}, bnhd[4] = {B, N, H, D};
    const int64_t flat[4] = {H * N * D, N * D, D, 1}, heads[4] = {N * H * D, D, H * D, 1}, keys[4] = {H * N * D, N * D, 1, D};
    const int64_t out[4] = {N * H * D, H * D, D, 1};   /* [B, N, H, D], row-major */
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        bool kt = !strcmp(f->kernel, "attn_bhnd_kt");
        for (int causal = 0; causal < (kt ? 1 : 2); causal++) {
            uint16_t *o[2];
            IrArg a[2][6];
            for (int w = 0; w < 2; w++) {
                host_poison(DT_F16, o[w] = host_alloc(DT_F16, n), n);
                a[w][0] = host_tensor_view(in[0], 4, bhnd, flat);
                a[w][1] = kt ? host_tensor_view(in[1], 4, bhdn, keys) : host_tensor_view(in[1], 4, bhnd, heads);
                a[w][2] = host_tensor_view(in[2], 4, bhnd, kt ? flat : heads);
                a[w][3] = kt ? host_tensor_view(o[w], 4, bhnd, flat) : host_tensor_view(o[w], 4, bnhd, out);
                a[w][4] = host_f32(0.125f);
                a[w][5] = host_i32(causal);
            }
            int64_t gx = host_cdiv(N, host_meta(f, "BM"));
            cr_assert_eq(host_launch(&host_interpreter, f, a[0], kt ? 5 : 6, gx, H, B), 0);
            cr_assert_eq(host_launch(&sim, f, a[1], kt ? 5 : 6, gx, H, B), 0, "%s on %s", f->name, arch);
            int bad = 0;
            size_t written = 0;
            for (size_t e = 0; e < n; e++) {
                double want = host_get(DT_F16, o[0], e), got = host_get(DT_F16, o[1], e);
                written += !host_is_poison(DT_F16, o[0], e);
                bool same = host_is_poison(DT_F16, o[0], e) ? host_is_poison(DT_F16, o[1], e) : fabs(got - want) <= 1e-2;
                if (!same && bad++ < 3) cr_log_error("%s (%s, causal %d): O[%zu]: cpusim %.6g, interpreter %.6g", f->name, arch, causal, e, got, want);
            }
            cr_expect_eq(written, n, "%s: the interpreter wrote %zu of %zu elements", f->name, written, n);
            failed += bad != 0;
            free(o[0]);
            free(o[1]);
        }
    }
    for (int i = 0; i < 3; i++) free(in[i]);
    cpusim_free(s);
    ir_module_free(m);
    return failed;
}

/* examples/attention_bhnd: attention over [B, H, N, D] views, on both GPU paths. */
Test(cpusim, attention_over_views_matches_the_interpreter, .timeout = 600)
{
    cr_expect_eq(attention_views_differ("sm_90"), 0);
    cr_expect_eq(attention_views_differ("sm_90a"), 0);
}

/* tests/gpu/loops.ph: while loops (counts read from tensors, nested, an
 * early return, a tensor-core dot, a chase through links), a for loop of
 * two dots, one written out at every step (on sm_90a issued first, its
 * store beside the other); each GPU path. */
Test(cpusim, every_loops_config_matches_the_interpreter, .timeout = 600)
{
    every_config_matches(LOOP_OPS, 6, "sm_90");
    every_config_matches(LOOP_OPS, 6, "sm_80");
    every_config_matches(LOOP_OPS, 6, "sm_90a");
}

/* The GEMM the bench times, every config (tile shapes, warp grids, stage
 * counts) at the ops dims (M 100, N 72, K 48: windows past every edge and
 * a K that is no multiple of BK). */
Test(cpusim, every_gemm_config_matches_the_interpreter, .timeout = 600) { every_config_matches("bench/gemm_tuned.ph", 8, "sm_90"); }

/* ---- atomic adds ---- */

/* Runs config f of tests/gpu/atomics.ph on the executor, each tensor
 * between guard zones, and in the interpreter; returns the elements that
 * differ from the plain C reference plus the tensors whose guards changed. */
static int run_atomic_config(cpusim *s, const IrFunc *f)
{
    AtomicRun r;
    atomic_run(f, &r);
    ph_arg sargs[AT_MAX_PARAMS];
    Zone zone[AT_MAX_PARAMS] = {{0}};
    for (int i = 0; i < r.n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            sargs[i] = p->dt == DT_I32 ? ph_i32(r.args[i].i) : ph_f32(r.args[i].f);
            continue;
        }
        zone[i] = zone_new(r.args[i].data, r.bytes[i]);
        ph_devptr ptr = (ph_devptr)(uintptr_t)zone[i].data;
        sargs[i] = p->rank == 2 ? ph_tensor2(ptr, r.args[i].dims[0], r.args[i].dims[1]) : ph_tensor1(ptr, r.args[i].dims[0]);
    }
    char err[512];
    int bad = 0;
    ph_status st = cpusim_launch(s, f->name, r.grid, sargs, r.n, err, sizeof err);
    if (st != PH_OK) {
        cr_log_error("%s", err);
        bad++;
    }
    int grid[3] = {(int)r.grid[0], (int)r.grid[1], (int)r.grid[2]};
    cr_assert_eq(ir_interp(f, r.args, r.n, grid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < r.n; i++) {
        if (!f->params[i].is_tensor) continue;
        bad += atomic_compare("interpreter", f, &r, i, r.args[i].data);
        if (st == PH_OK) bad += atomic_compare("cpusim", f, &r, i, zone[i].data);
        long at = zone_damage(&zone[i]);
        if (at) {
            cr_log_error("%s: %s: written at byte %ld, outside its %zu bytes", f->name, f->params[i].name, at, zone[i].bytes);
            bad++;
        }
        zone_free(&zone[i]);
    }
    at_free(&r);
    return bad;
}

/* Several blocks, and several threads of each, add into overlapping
 * windows of f32 and i32 tensors, windows that cross the tensors' edges,
 * from loads, splats, reduction slices and tensor-core results (idle warps
 * included): every element must be the plain C reference's, exactly (the
 * inputs are integers), so an add made twice, lost, or landing outside
 * the tensor shows. */
Test(cpusim, atomic_adds_match_a_plain_c_reference, .timeout = 600)
{
    IrModule *m = driver_compile_file(ATOMICS, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, 14);
    /* sm_80 adds element by element; sm_90 and sm_90a add runs of two
     * and four floats at once where a window's chunks are aligned
     * (PHOBOS_ADD_INSIDE=1: from one address a thread where the window is
     * wholly inside the tensor, a dot result's pairs still traded); by
     * default a dot result's pairs traded between neighbouring lanes and
     * added four at a time, with
     * PHOBOS_ADD_EXCHANGE=0 two at a time); sm_90a with PHOBOS_BULK_ADD=1 a
     * large dot result by bulk adds from shared memory; on sm_90a a
     * producer warp's adds (atomicdot_wide's W 1) by the copy engine, by
     * default a tensor map's boxes, with PHOBOS_TENSOR_ADDS=0 rows; the
     * staged tile by default fenced by the producer's thread, with
     * PHOBOS_PRODUCER_FENCE=0 by each consumer */
    static const struct { const char *arch, *env, *val; } runs[] = {
        {"sm_80", NULL, NULL}, {"sm_90", NULL, NULL}, {"sm_90a", NULL, NULL}, {"sm_90a", "PHOBOS_BULK_ADD", "1"},
        {"sm_90", "PHOBOS_ADD_INSIDE", "1"}, {"sm_90a", "PHOBOS_ADD_INSIDE", "1"}, {"sm_90", "PHOBOS_ADD_EXCHANGE", "0"},
        {"sm_90a", "PHOBOS_ADD_EXCHANGE", "0"}, {"sm_90a", "PHOBOS_TENSOR_ADDS", "0"}, {"sm_90a", "PHOBOS_PRODUCER_FENCE", "0"}};
    for (size_t a = 0; a < sizeof runs / sizeof *runs; a++) {
        const char *arch = runs[a].arch, *env = runs[a].env;
        if (env) setenv(env, runs[a].val, 1);
        cpusim *s = load_arch(m, arch);
        if (env) unsetenv(env);
        int failed = 0;
        for (int i = 0; i < m->nfuncs; i++) {
            int bad = run_atomic_config(s, m->funcs[i]);
            if (bad) cr_log_error("%s %s, %s: %d elements or guards differ", arch, env ? env : "", m->funcs[i]->name, bad);
            failed += bad != 0;
        }
        cr_expect_eq(failed, 0, "%s %s: %d of %d configs differ from the reference", arch, env ? env : "", failed, m->nfuncs);
        bool sm90a = !strcmp(arch, "sm_90a"), rows = env && !strcmp(env, "PHOBOS_TENSOR_ADDS");
        if (sm90a) cr_expect_gt(cpusim_bulk_adds(s), 0, "no bulk adds on sm_90a %s", env ? env : "");
        else cr_expect_eq(cpusim_bulk_adds(s), 0, "bulk adds on %s", arch);
        if (sm90a && !rows) cr_expect_gt(cpusim_box_adds(s), 0, "no tensor map adds on sm_90a %s", env ? env : "");
        else cr_expect_eq(cpusim_box_adds(s), 0, "tensor map adds on %s %s", arch, env ? env : "");
        cpusim_free(s);
    }
    ir_module_free(m);
}

/* ---- the attention tutorial (simharness.h) ---- */

Test(cpusim, attention_tutorial_matches_the_interpreter, .timeout = 600)
{
    attention_matches_the_interpreter("examples/attention/attention.ph", "sm_90", 0);
}

/* The fused backward: dQ added up by the dK/dV kernel's atomic adds. */
Test(cpusim, fused_attention_matches_the_interpreter, .timeout = 600)
{
    attention_matches_the_interpreter("tests/gpu/attention_fused.ph", "sm_90", 0);
}

/* PHOBOS_BULK_ADD=1: the fused backward's dQ share added by the copy
 * engine from two scratch slots taken in turns, each iteration's adds
 * reading their slot while the next iteration runs. The executor reads a
 * bulk add's bytes at its thread's wait, as late as the GPU may, so a slot
 * written again before that wait shows, as a race or as wrong sums. */
Test(cpusim, fused_attention_with_bulk_adds_matches_on_sm90a, .timeout = 900)
{
    setenv("PHOBOS_BULK_ADD", "1", 1);
    static const int picks[] = {5, 7};
    for (int i = 0; i < 2; i++) {
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 64);
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 128);
    }
    unsetenv("PHOBOS_BULK_ADD");
}

/* By default (PHOBOS_PRODUCER_ADDS) the fused backward's dQ share is
 * staged by the consumers and added by the producer's thread (cg_store.c):
 * at the dK/dV picks of both head dims (a producer and two consumer
 * warpgroups), and with the switch off, by the consumers' own adds. The
 * executor reads a bulk add's bytes at its thread's wait, as late as the
 * GPU may, so consumers writing the slot before the producer gave it back
 * show as wrong sums or a race; a hand-over the producer never sees, as a
 * deadlock. */
Test(cpusim, fused_attention_with_the_producers_adds_matches_on_sm90a, .timeout = 1200)
{
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 15, 64);
    setenv("PHOBOS_PRODUCER_ADDS", "0", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    unsetenv("PHOBOS_PRODUCER_ADDS");
}

/* PHOBOS_PRODUCER_FENCE=0: each consumer fences its own stores of the dQ
 * share before it hands the slot over (by default the producer's thread
 * fences once the barrier ordered their stores before it, which the
 * other fused attention tests run; the executor takes the issuing
 * thread's fence for a bulk add's bytes, and with neither fails the add).
 * The dK/dV picks of both head dims. */
Test(cpusim, fused_attention_with_the_consumers_fences_matches_on_sm90a, .timeout = 1200)
{
    setenv("PHOBOS_PRODUCER_FENCE", "0", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 15, 64);
    unsetenv("PHOBOS_PRODUCER_FENCE");
}

/* Whether b or a block below copies param's tensor into a ring. */
static bool copies_param(const IrBlock *b, int param)
{
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if ((op->kind == OP_COPY_ASYNC && op->param == param) || copies_param(op->body, param) || copies_param(op->els, param)) return true;
    }
    return false;
}

/* PHOBOS_COPY_ONCE=1: a tile loaded once, outside every loop, that only
 * dots read (the forward's Q, the dK/dV kernel's K and V) goes through a
 * one-stage ring, copied by the copy engine (the producer's, where there
 * is one) and waited for before its first reader, the loops' first
 * copies in flight meanwhile. Every kernel of both head dims at several
 * picks (a producer or none, warpgroups in turns), on sm_90a's engines
 * and on sm_90's (cp.async, mma.sync). */
Test(cpusim, attention_with_tiles_copied_once_matches, .timeout = 2400)
{
    setenv("PHOBOS_COPY_ONCE", "1", 1);
    IrModule *m = driver_compile_file("bench/attention_fused.ph", NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *f = NULL;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, "attn_fwd__D_128__BR_128__BC_128__NT_256__S_3__W_2__MASKED_1__PERSISTENT_0__OCC_1")) f = m->funcs[i];
    cr_assert_not_null(f);
    cr_expect(copies_param(f->body, 0), "Q is not copied");
    ir_module_free(m);
    /* the bench's picks: the forward's 128 x 128 S 3 W 2 and 192 x 128 S 3 W 1, the dK/dV kernel's W 1 */
    setenv("PHOBOS_CONFIG_INDEX_attn_fwd", "11", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    setenv("PHOBOS_CONFIG_INDEX_attn_fwd", "26", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 15, 64);
    /* no producer: the forward's 128 x 64 W 0, the dK/dV kernel's 64 x 64 W 0 */
    setenv("PHOBOS_CONFIG_INDEX_attn_fwd", "35", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 0, 64);
    unsetenv("PHOBOS_CONFIG_INDEX_attn_fwd");
    attention_matches_at("bench/attention_fused.ph", "sm_90", 3, 64);
    unsetenv("PHOBOS_COPY_ONCE");
}

/* With PHOBOS_TENSOR_ADDS=0 the producer's slot is rows of the tile's
 * width, added whole (a window of whole rows) by one bulk add, as before
 * the tensor adds (the default, above: 32-column boxes of the 128-byte
 * swizzle through an f32 tensor map, which cpusim_tma.c reads through the
 * swizzle at the producer's wait): the dK/dV picks of both head dims. */
Test(cpusim, fused_attention_with_row_slots_matches_on_sm90a, .timeout = 1200)
{
    setenv("PHOBOS_TENSOR_ADDS", "0", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 15, 64);
    unsetenv("PHOBOS_TENSOR_ADDS");
}

/* The fused backward's L and Delta columns through rings of their own
 * (async.c, the default), each thread reading its columns of S^T straight
 * from the slot: with a producer warp (bench picks 7 at head dim 128, 15
 * at 64, the dS^T scratch in turns as well) the producer copies them, and
 * the consumers release a slot only after the last op built from it
 * (warp_specialize.c). With PHOBOS_VECTOR_RING=0 they are loaded and
 * exchanged through scratch, on the mma.sync path and on sm_90a. */
Test(cpusim, fused_attention_with_vector_rings_and_without_matches, .timeout = 1800)
{
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 15, 64);
    setenv("PHOBOS_VECTOR_RING", "0", 1);
    attention_matches_at("tests/gpu/attention_fused.ph", "sm_90", 5, 64);
    attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", 5, 128);
    unsetenv("PHOBOS_VECTOR_RING");
}

/* PHOBOS_SCRATCH_TURNS=0 (with the vector rings and without): the dQ
 * share's A, dS^T, written to one scratch with a barrier after the
 * share's wait, where by default (dot_wgmma.c, SMEM_TURNS) each
 * iteration writes the half its parity names with no barrier against the
 * last one's reads (the default attention tests run that; the executor's
 * race check sees a half written while a warpgroup's wgmma may still
 * read it). */
Test(cpusim, fused_attention_without_scratch_in_turns_matches, .timeout = 1800)
{
    setenv("PHOBOS_SCRATCH_TURNS", "0", 1);
    attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", 5, 128);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 15, 64);
    setenv("PHOBOS_VECTOR_RING", "0", 1);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 7, 128);
    unsetenv("PHOBOS_VECTOR_RING");
    unsetenv("PHOBOS_SCRATCH_TURNS");
}

/* The fused backward's dQ share traded between neighbouring lanes and
 * added four floats at a time (the default; the bench's fused file runs so
 * in test_cpusim_wgmma.c), and with PHOBOS_ADD_EXCHANGE=0 two at a time.
 * The share is issued before dK and waited for at once, and its adds run
 * while dK does (wgmma_issue.c): the last wait before the first add waits
 * for every dot, and a wgmma issues between it and that add. */
Test(cpusim, fused_attention_with_exchanged_adds_matches_on_sm90a, .timeout = 900)
{
    IrModule *m = driver_compile_file("bench/attention_fused.ph", NULL, stderr);
    cr_assert_not_null(m);
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *ptx = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
    const char *dkdv = strstr(ptx, ".entry attn_bwd_dkdv__D_128__BR_64__BC_128__NT_256__W_1(");
    const char *add = dkdv ? strstr(dkdv, "red.global.add.v4.f32") : NULL, *wait = NULL;
    cr_assert_not_null(add, "no four-float adds in the dK/dV kernel");
    for (const char *p = dkdv; (p = strstr(p, "wgmma.wait_group.sync.aligned")) && p < add; p++) wait = p;
    cr_assert_not_null(wait);
    cr_expect(!strncmp(wait, "wgmma.wait_group.sync.aligned 0;", 32), "the dQ share read while an older dot runs");
    cr_expect_gt(tu_count_between(wait, add, "wgmma.mma_async"), 0, "the dQ share's adds wait for every dot");
    free(ptx);
    ir_module_free(m);
    static const int picks[] = {1, 5, 7};
    for (int i = 0; i < 3; i++) {
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 64);
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 128);
    }
    setenv("PHOBOS_ADD_EXCHANGE", "0", 1);
    attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", 5, 64);
    unsetenv("PHOBOS_ADD_EXCHANGE");
}

/* The bench forward's blocks cut at N_CTX (MASKED=1): at N_CTX 128 each
 * head's one block of 192 rows (three consumer warpgroups) or 256 is
 * partial, and its masked stores must leave the next head's rows alone;
 * with 176 key columns its one K/V block is partial too, and the next
 * head's keys (or the zeros past the tensor) must weigh nothing. */
Test(cpusim, attention_forward_partial_blocks_match_on_sm90a, .timeout = 1200)
{
    static const int picks[] = {13, 24, 27};   /* BR 256 BC 64 S 2 W 1; BR 192 S 2 W 1 and S 3 W 2 */
    for (int i = 0; i < 3; i++) attention_matches_at("bench/attention_fused.ph", "sm_90a", picks[i], 64);
    attention_matches_at("bench/attention_fused.ph", "sm_90a", 25, 128);   /* BR 128 BC 176 S 2 W 2 */
}

/* The same forward with its whole key blocks in a loop of their own
 * (PHOBOS_MASK_SPLIT), that loop's softmax beside its P V at 176 keys
 * (PHOBOS_OVERLAP_WIDE): at N_CTX 640 the unmasked loop runs 2 or 3 blocks
 * of 176 keys, the masked one the partial block (and, causal, the
 * diagonal's). Both loops rotated, one block each (causal, the second row
 * block), the slots of the first loop's last block must go back to the
 * producer before the second loop's first wait (a deadlock otherwise). */
Test(cpusim, attention_forward_split_and_overlapped_matches_on_sm90a, .timeout = 2400)
{
    setenv("PHOBOS_MASK_SPLIT", "1", 1);
    attention_matches_sized("bench/attention_fused.ph", "sm_90a", 11, 64, 640);    /* BR 128 BC 128 S 3 W 2 */
    setenv("PHOBOS_OVERLAP_WIDE", "1", 1);
    attention_matches_sized("bench/attention_fused.ph", "sm_90a", 25, 128, 640);   /* BR 128 BC 176 S 2 W 2 */
    attention_matches_sized("bench/attention_fused.ph", "sm_90a", 27, 64, 640);    /* BR 192 BC 128 S 3 W 2 */
    unsetenv("PHOBOS_MASK_SPLIT");
    unsetenv("PHOBOS_OVERLAP_WIDE");
}

/* The bench forward's persistent configs (PERSISTENT 1, the last that fit
 * each head dim) on 3 blocks: each block loops over 2 of the 6 (row
 * block, head) tiles, head by head, its producer's copies for the next
 * tile issued while its consumers finish this one; the last row block
 * partial at head dim 64. */
Test(cpusim, attention_forward_persistent_matches_on_sm90a, .timeout = 2400)
{
    attention_matches_sized("bench/attention_fused.ph", "sm_90a", 26, 128, 384);   /* BR 128 BC 128 S 3 W 2 */
    attention_matches_sized("bench/attention_fused.ph", "sm_90a", 32, 64, 640);    /* BR 256 BC 128 S 2 W 1 */
}

/* A ring nested around another: with PHOBOS_WINDOW_DIVISIONS=1 a loop
 * load whose window goes through // and % is pipelined too, so the
 * persistent forward's Q (its tile's row block and head) goes through a
 * ring of the producer's, a tile ahead, its slot held through the inner
 * loop where K and V turn. The copy engine gives the Q ring slot numbers
 * and counters of its own (a channel, copy_tma.c): with one set for every
 * ring the inner loop's first release freed Q's slot and the executor
 * found the block deadlocked. Head dim 64's config has the ring (head dim
 * 128's rings fill the budget without it). */
Test(cpusim, attention_forward_persistent_q_in_a_ring_matches_on_sm90a, .timeout = 2400)
{
    setenv("PHOBOS_WINDOW_DIVISIONS", "1", 1);
    IrModule *m = driver_compile_file("bench/attention_fused.ph", NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *f = NULL;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, "attn_fwd__D_64__BR_256__BC_128__NT_256__S_2__W_1__MASKED_1__PERSISTENT_1__OCC_1")) f = m->funcs[i];
    cr_assert_not_null(f);
    cr_expect(copies_param(f->body, 0), "Q is not copied into a ring");
    ir_module_free(m);
    attention_matches_sized("bench/attention_fused.ph", "sm_90a", 32, 64, 640);   /* BR 256 BC 128 S 2 W 1 */
    unsetenv("PHOBOS_WINDOW_DIVISIONS");
}

/* ---- bad launches: a status and a message, never a crash ---- */

static const char *TINY =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def scale(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * 128\n"
    "    Y[i0:+128] = X[i0:+128] * a\n";

Test(cpusim, bad_launches_are_refused_with_a_message)
{
    char *diags = NULL;
    IrModule *m = tu_compile("tiny.ph", TINY, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cpusim *s = load(m);
    float init[200];
    for (int i = 0; i < 200; i++) init[i] = (float)i;
    Zone xz = zone_new(init, sizeof init);
    for (int i = 0; i < 200; i++) init[i] = -1;
    Zone yz = zone_new(init, sizeof init);
    float *x = (float *)xz.data, *y = (float *)yz.data;
    ph_arg args[3] = {ph_tensor1((uintptr_t)x, 200), ph_tensor1((uintptr_t)y, 200), ph_f32(0.5f)};
    unsigned grid[3] = {2, 1, 1}, none[3] = {0, 1, 1};
    char err[256];
    const char *entry = m->funcs[0]->name;

    cr_expect_eq(cpusim_launch(s, "nosuch", grid, args, 3, err, sizeof err), PH_ERR_NOT_FOUND);
    cr_expect(strstr(err, "nosuch"), "%s", err);
    cr_expect_eq(cpusim_launch(s, entry, grid, args, 2, err, sizeof err), PH_ERR_ARGS);
    cr_expect(strstr(err, "takes 3 arguments, got 2"), "%s", err);
    ph_arg swapped[3] = {args[0], args[2], args[1]};
    cr_expect_eq(cpusim_launch(s, entry, grid, swapped, 3, err, sizeof err), PH_ERR_ARGS);
    cr_expect(strstr(err, "argument 2 is not a tensor"), "%s", err);
    ph_arg null_tensor[3] = {ph_tensor1(0, 200), args[1], args[2]};
    cr_expect_eq(cpusim_launch(s, entry, grid, null_tensor, 3, err, sizeof err), PH_ERR_INVALID);
    cr_expect_eq(cpusim_launch(s, entry, none, args, 3, err, sizeof err), PH_ERR_GRID);
    cr_expect_eq(cpusim_launch(NULL, entry, grid, args, 3, err, sizeof err), PH_ERR_INVALID);
    for (int i = 0; i < 200; i++) cr_assert_eq(y[i], -1, "a refused launch wrote Y[%d]", i);

    cr_assert_eq(cpusim_launch(s, entry, grid, args, 3, err, sizeof err), PH_OK, "%s", err);
    for (int i = 0; i < 200; i++) cr_assert_eq(y[i], 0.5f * (float)i, "Y[%d] = %g", i, y[i]);
    cr_expect_eq(zone_damage(&yz), 0, "Y written outside its 200 elements");
    zone_free(&xz);
    zone_free(&yz);
    cpusim_free(s);
    ir_module_free(m);
    cpusim *none_loaded = (cpusim *)1;
    cr_expect_eq(cpusim_load(NULL, &none_loaded, err, sizeof err), PH_ERR_INVALID);
    cr_expect_null(none_loaded);
}

/* ---- contraction: a*b - c rounded once, as on the GPU ---- */

static const char *MULSUB =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def mulsub(A: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], b: ph.f32, c: ph.f32):\n"
    "    Y[0:+128] = A[0:+128] * b - c\n";

/* With c near every a*b, a*b - c shows the product's rounding: the
 * interpreter rounds the product first, the executor fuses the two into
 * one fma as the NVPTX back end does. */
Test(cpusim, a_multiply_feeding_a_subtract_is_fused)
{
    char *diags = NULL;
    IrModule *m = tu_compile("mulsub.ph", MULSUB, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cpusim *s = load(m);
    static float a[128], y[128], yi[128];
    const float b = 1.0f / 3.0f, c = b;
    for (int i = 0; i < 128; i++) {
        a[i] = 1.0f + (float)i * 0x1p-20f;
        y[i] = yi[i] = -1;
    }
    ph_arg args[4] = {ph_tensor1((uintptr_t)a, 128), ph_tensor1((uintptr_t)y, 128), ph_f32(b), ph_f32(c)};
    unsigned grid[3] = {1, 1, 1};
    char err[256];
    cr_assert_eq(cpusim_launch(s, m->funcs[0]->name, grid, args, 4, err, sizeof err), PH_OK, "%s", err);
    IrArg iargs[4] = {{.data = a, .dims = {128, 0}}, {.data = yi, .dims = {128, 0}}, {.f = b}, {.f = c}};
    int igrid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(m->funcs[0], iargs, 4, igrid, err, sizeof err), 0, "%s", err);
    int differ = 0;
    for (int i = 0; i < 128; i++) {
        volatile float product = a[i] * b;   /* rounded, whatever the host compiler contracts */
        cr_expect_eq(yi[i], product - c, "interpreter: Y[%d] = %a, not %a", i, yi[i], product - c);
        cr_expect_eq(y[i], fmaf(a[i], b, -c), "executor: Y[%d] = %a, not fma's %a", i, y[i], fmaf(a[i], b, -c));
        differ += y[i] != yi[i];
    }
    cr_expect_gt(differ, 64, "fused and unfused agree on %d of 128", 128 - differ);
    cpusim_free(s);
    ir_module_free(m);
}

/* Each regression file is a program and its run spec (its "# run:" line);
 * every config must agree with the interpreter on the inputs of seed 1. */
Test(cpusim, the_fuzzer_regressions_match_the_interpreter, .timeout = 600)
{
    const char *dir = "tests/difftest/regressions";
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".ph")) continue;
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *src = tu_read_file(path);
        cr_assert_not_null(src, "%s", path);
        DtSpec spec;
        cr_assert_eq(dt_spec_from_source(&spec, src, err, sizeof err), 0, "%s: %s", path, err);
        IrModule *m = driver_compile_file(path, NULL, stderr);
        cr_assert_not_null(m, "%s", path);
        DtReport rep;
        DtVerdict v = dt_compare_module(m, src, &spec, &dt_cpusim_backend, 1, NULL, &rep);
        cr_expect_eq(v, DT_SAME, "%s: %s in %s: %s", path, dt_verdict_name(v), rep.config, rep.message);
        ir_module_free(m);
        free(src);
        files++;
    }
    closedir(d);
    cr_expect_gt(files, 0);
}

/* ---- swizzled shared memory ---- */

/* Tensor-core dots whose operands take every form of shared layout: A
 * [BM, BK] and B^T [BN, BK] of 32, 96 and 256-byte rows (max phase 2, 2,
 * 8), B [BK, BN] of 16, 48 and 128-byte rows (no XOR, an odd number of
 * chunks, max phase 8); with one stage in the scratch area and with two
 * in cp.async rings, the shifted A window filled element by element (its
 * start is no whole chunk), and a0 in a region of its own. */
static const char *SWIZZLES =
    "import phobos.lang as ph\n"
    "@ph.kernel\n@ph.tensorcore\n@ph.stages(S)\n"
    "@ph.autotune(BM=[16, 32], BN=[8, 24, 64], BK=[16, 48, 128], S=[1, 2])\n"
    "def swz(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], BT: ph.tensor[ph.f16][N, K], C: ph.tensor[ph.f32][M, N],\n"
    "        k_len: ph.i32, shift: ph.i32):\n"
    "    r0: ph.let = ph.ctx.block.x * BM\n"
    "    c0: ph.let = ph.ctx.block.y * BN\n"
    "    a0: ph.let = A[r0:+BM, 0:+BK]\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k in range(0, k_len, BK):\n"
    "        acc += ph.dot(a0, B[k:+BK, c0:+BN])\n"
    "        acc += ph.dot_t(A[r0:+BM, k + shift:+BK], BT[c0:+BN, k:+BK])\n"
    "    C[r0:+BM, c0:+BN] = acc\n";

/* The largest max phase among the ring slots of f; 0 without rings. */
static int ring_max_phase(const IrFunc *f)
{
    LayoutTable *t = layout_table_new();
    LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
    int most = 0;
    for (int v = 1; v < f->nvalues; v++)
        if (p.of[v] && p.of[v]->kind == LAY_SHARED && p.of[v]->max_phase > most) most = p.of[v]->max_phase;
    layout_plan_free(&p);
    layout_table_free(t);
    return most;
}

Test(cpusim, tensor_core_dots_over_every_swizzle_match_the_interpreter, .timeout = 600)
{
    char *diags = NULL;
    IrModule *m = tu_compile("swz.ph", SWIZZLES, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    cr_assert_eq(m->nfuncs, 36);
    cpusim *s = load(m);
    int failed = 0, phases[9] = {0};
    for (int i = 0; i < m->nfuncs; i++) {
        phases[ring_max_phase(m->funcs[i])]++;
        int bad = run_config(s, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements or guards differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_expect_eq(failed, 0, "%d of %d configs differ from the interpreter", failed, m->nfuncs);
    cr_expect_eq(phases[0], 18, "one stage: no rings");
    cr_expect(phases[2] > 0 && phases[8] > 0, "rings swizzled in pairs of chunks and over 8 chunks");
    cpusim_free(s);
    ir_module_free(m);
    free(diags);
}

/* The code generator's shared-memory addresses (shared_offset, and
 * shared_shifted for the ldmatrix rows and cp.async chunks a thread
 * reaches from its first) are layout_shared_offset's arithmetic emitted:
 * on constant rows and columns LLVM's builder folds them to the very
 * offset, for every element of swizzled, padded and plain layouts. */
Test(cpusim, the_emitted_shared_memory_map_is_layout_shared_offset)
{
    Cg c;
    memset(&c, 0, sizeof c);
    c.ctx = LLVMContextCreate();
    c.mod = LLVMModuleCreateWithNameInContext("map", c.ctx);
    c.b = LLVMCreateBuilderInContext(c.ctx);
    c.ti32 = LLVMInt32TypeInContext(c.ctx);
    c.fn = LLVMAddFunction(c.mod, "f", LLVMFunctionType(LLVMVoidTypeInContext(c.ctx), NULL, 0, 0));
    LLVMPositionBuilderAtEnd(c.b, LLVMAppendBasicBlockInContext(c.ctx, c.fn, "entry"));
    LayoutTable *t = layout_table_new();
    static const int widths[] = {4, 8, 12, 16, 24, 32, 48, 64, 128, 136};
    int swizzled = 0, shifted = 0;
    for (int elem = 2; elem <= 4; elem += 2)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (int plain = 0; plain < 2; plain++) {
                const Layout *l = plain ? layout_shared_plain(t, 24, widths[w], elem) : layout_shared(t, 24, widths[w], elem);
                swizzled += l->max_phase > 1;
                for (int r = 0; r < l->rows; r++)
                    for (int col = 0; col < l->cols; col++) {
                        LLVMValueRef v = shared_offset(&c, l, i32c(&c, r), i32c(&c, col));
                        cr_assert(LLVMIsAConstantInt(v), "[24, %d]: no constant", widths[w]);
                        cr_assert_eq(LLVMConstIntGetSExtValue(v), layout_shared_offset(l, r, col), "[24, %d] of %d bytes%s: (%d, %d)",
                                     widths[w], elem, plain ? ", plain" : "", r, col);
                        for (int dr = 0; r + dr < l->rows; dr += 8)
                            for (int dc = 0; col + dc < l->cols; dc += l->vec) {
                                if (!layout_shared_shift_holds(l, col, dr, dc)) continue;
                                LLVMValueRef s = shared_shifted(&c, l, v, dr, dc);
                                cr_assert(LLVMIsAConstantInt(s));
                                cr_assert_eq(LLVMConstIntGetSExtValue(s), layout_shared_offset(l, r + dr, col + dc),
                                             "[24, %d] of %d bytes: (%d, %d) moved by (%d, %d)", widths[w], elem, r, col, dr, dc);
                                shifted++;
                            }
                    }
            }
    cr_assert_gt(swizzled, 8);
    cr_assert_gt(shifted, 10000);
    layout_table_free(t);
    LLVMDisposeBuilder(c.b);
    LLVMDisposeModule(c.mod);
    LLVMContextDispose(c.ctx);
}
