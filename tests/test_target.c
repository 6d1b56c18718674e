/* test_target.c: a target is a row. A target of this suite's own, "test_fma"
 * (sm_80's row with FMA as its only dot engine), is registered and then
 * chosen by name like sm_80 and sm_90: the examples compile for it to PTX
 * without a tensor-core instruction, while sm_80 and sm_90 use mma.sync
 * for the same programs. The suite adds a row and edits no file of the
 * code generator: that is what it shows. It links the code generator's
 * objects (as test_cpusim does), the engines' symbols with them. A row
 * that wraps sm_90a's wgmma engine reads the shared-memory plan the code
 * generator placed: sm_90a's rings start 1024-byte aligned. */
#include <criterion/criterion.h>
#include <glob.h>

#include "codegen/cg.h"
#include "codegen/codegen.h"
#include "codegen/target.h"
#include "driver/targets.h"
#include "testutil.h"

static const DotEngine *const fma_only[] = {&dot_fma, NULL};
static Target test_fma;

static void register_test_fma(void)
{
    test_fma = *target_find("sm_80");
    test_fma.name = "test_fma";
    test_fma.caps &= ~TARGET_TENSOR_CORES;
    test_fma.dots = fma_only;
    cr_assert_eq(target_register(&test_fma), 0);
}

TestSuite(target, .init = register_test_fma);

static char *emit_for(const IrModule *m, const char *name)
{
    CodegenOptions o = {.target = target_find(name), .opt_level = CODEGEN_OPT_DEFAULT};
    cr_assert_not_null(o.target, "no target %s", name);
    char *out = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &out, err, sizeof err), 0, "%s: codegen failed: %s", name, err);
    return out;
}

static bool any_tensorcore_kernel(const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->tensorcore) return true;
    return false;
}

/* A @ph.tensorcore kernel without fp8 tensors: its dots have mma.sync on
 * sm_80's code too (fp8's is sm_89's, and only the sm_90 rows take it). */
static bool any_tensorcore_kernel_without_fp8(const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        bool f8 = false;
        for (int p = 0; p < f->nparams; p++) f8 |= ir_is_f8(f->params[p].dt);
        if (f->tensorcore && !f8) return true;
    }
    return false;
}

Test(target, a_registered_row_is_found_and_listed)
{
    cr_expect_eq(target_find("test_fma"), &test_fma);
    cr_expect_str_eq(target_names(), "sm_80, sm_86, sm_89, sm_90, sm_90a, test_fma");
    cr_expect_null(target_find("sm_70"));
    cr_expect_str_eq(target_find("sm_90")->name, "sm_90");
}

Test(target, a_row_of_fma_only_compiles_every_example_without_tensor_cores, .timeout = 1800)
{
    glob_t g;
    cr_assert_eq(glob("examples/*/*.ph", 0, NULL, &g), 0, "no examples found (run from the repository root)");
    int tensorcore_programs = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        IrModule *m = driver_compile_file(g.gl_pathv[i], NULL, stderr);
        cr_assert_not_null(m, "%s does not compile", g.gl_pathv[i]);
        char *fma = emit_for(m, "test_fma");
        cr_expect(strstr(fma, ".target sm_80") != NULL, "%s: test_fma writes for sm_80's chip", g.gl_pathv[i]);
        cr_expect(strstr(fma, "mma.sync") == NULL && strstr(fma, "ldmatrix") == NULL,
                  "%s: test_fma has no tensor-core engine, yet its PTX uses the tensor cores", g.gl_pathv[i]);
        if (any_tensorcore_kernel(m)) {
            /* the control: the same program on the built-in rows */
            tensorcore_programs++;
            for (int k = any_tensorcore_kernel_without_fp8(m) ? 0 : 1; k < 2; k++) {
                const char *arch = k ? "sm_90" : "sm_80";
                char *ptx = emit_for(m, arch);
                /* m16n8k16 for f16 and bf16, m16n8k32 for i8 (examples/int8gemm) and fp8 (examples/fp8gemm) */
                cr_expect(strstr(ptx, "mma.sync.aligned.m16n8k") != NULL, "%s: no mma.sync for %s", g.gl_pathv[i], arch);
                free(ptx);
            }
        }
        free(fma);
        ir_module_free(m);
    }
    cr_expect_geq(tensorcore_programs, 1, "no example uses the tensor cores: the control shows nothing");
    globfree(&g);
}

/* sm_90a's rings and regions start 1024-byte aligned, where the 128-byte
 * swizzle's pattern starts (its descriptors leave the base offset 0), and
 * so does the area: the plan as placed, read by a row of sm_90a's whose
 * wgmma engine is wrapped, over gemm_wgmma and a kernel with two rings of
 * 1536 bytes after one of 6144, which 16-byte alignment puts off 1024
 * (the control: the same row asking 16 bytes does). */
static const char two_rings_src[] =
    "import phobos.lang as ph\n"
    "@ph.kernel\n@ph.tensorcore\n@ph.launch(128)\n@ph.stages(3)\n"
    "def two(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][N, K], D: ph.tensor[ph.f16][N, K],\n"
    "        C: ph.tensor[ph.f32][M, N], E: ph.tensor[ph.f32][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * 64\n"
    "    acc: ph.var[ph.tile[ph.f32][64, 16]] = 0.0\n"
    "    acd: ph.var[ph.tile[ph.f32][64, 16]] = 0.0\n"
    "    for k0 in range(0, K, 16):\n"
    "        acc += ph.dot_t(A[m0:+64, k0:+16], B[0:+16, k0:+16])\n"
    "        acd += ph.dot_t(A[m0:+64, k0:+16], D[0:+16, k0:+16])\n"
    "    C[m0:+64, 0:+16] = acc\n"
    "    E[m0:+64, 0:+16] = acd\n";

static int plan_aligned, plan_misaligned;

static void wgmma_reading_the_plan(Cg *c, const IrOp *dot)
{
    target_find("sm_90a")->dots[0]->emit(c, dot);
    for (int i = 0; c->smem_replay && i < c->smem_plan.bufs.len; i++) {
        const SmemBuf *b = &c->smem_plan.bufs.data[i];
        /* the copy engine's own buffer (its mbarriers) holds no operand */
        if (b->kind != SMEM_SCRATCH && b->first >= 0 && i != c->copy_buf) *(b->offset % 1024 ? &plan_misaligned : &plan_aligned) += 1;
    }
}

/* m's PTX for sm_90a with its wgmma engine wrapped and its operands
 * operand_align bytes aligned */
static char *emit_reading_the_plan(const IrModule *m, int operand_align)
{
    static DotEngine wgmma;
    static const DotEngine *dots[8];
    const Target *sm90a = target_find("sm_90a");
    Target row = *sm90a;
    wgmma = *sm90a->dots[0];
    wgmma.emit = wgmma_reading_the_plan;
    dots[0] = &wgmma;
    for (int i = 1; i < 7 && (dots[i] = sm90a->dots[i]); i++) {}
    row.dots = dots;
    row.operand_align = operand_align;
    CodegenOptions o = {.target = &row, .opt_level = CODEGEN_OPT_DEFAULT};
    char *out = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &out, err, sizeof err), 0, "%s", err);
    return out;
}

Test(target, sm90a_rings_and_regions_start_1024_byte_aligned, .timeout = 300)
{
    char *diags = NULL;
    IrModule *two = tu_compile("two_rings.ph", two_rings_src, NULL, &diags);
    cr_assert_not_null(two, "%s", diags);
    IrModule *gemm = driver_compile_file("tests/gpu/gemm_wgmma.ph", NULL, stderr);
    cr_assert_not_null(gemm, "run from the repository root");
    for (int align = 1024; align >= 16; align /= 64) {
        plan_aligned = plan_misaligned = 0;
        char *ptx = emit_reading_the_plan(two, align);
        free(emit_reading_the_plan(gemm, align));
        cr_assert_gt(plan_aligned + plan_misaligned, 0, "no wgmma dot read a ring");
        if (align == 1024) {
            cr_expect_eq(plan_misaligned, 0, "%d of %d rings off 1024 bytes", plan_misaligned, plan_aligned + plan_misaligned);
            cr_expect_not_null(strstr(ptx, ".shared .align 1024 .b8 two_smem["), "the area itself:\n%.600s", ptx);
        } else {
            cr_expect_gt(plan_misaligned, 0, "the control: at 16-byte alignment the rings lie at 1024 anyway");
        }
        free(ptx);
    }
    ir_module_free(two);
    ir_module_free(gemm);
    free(diags);
}

/* A ring of rows sm_90a's swizzle cannot hold (f16 [64, 48]: 96 bytes)
 * keeps the ldmatrix layout: tests/gpu/ops.ph, which has such rings,
 * compiles for sm_90a. */
Test(target, sm90a_rings_of_rows_its_swizzle_cannot_hold_keep_the_ldmatrix_layout, .timeout = 300)
{
    IrModule *m = driver_compile_file("tests/gpu/ops.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    char *ptx = emit_for(m, "sm_90a");
    cr_expect_not_null(strstr(ptx, ".target sm_90a"));
    free(ptx);
    ir_module_free(m);
}

/* Narrows m to its configs that keep(f, arg) takes, moved to the front;
 * returns how many. Restore m->nfuncs (kept in *all) before freeing m. */
static int keep_configs(IrModule *m, bool (*keep)(const IrFunc *f, const char *arg), const char *arg, int *all)
{
    int kept = 0;
    *all = m->nfuncs;
    for (int i = 0; i < *all; i++) {
        IrFunc *f = m->funcs[i];
        if (!keep(f, arg)) continue;
        m->funcs[i] = m->funcs[kept];
        m->funcs[kept++] = f;
    }
    m->nfuncs = kept;
    return kept;
}

static bool of_kernel(const IrFunc *f, const char *kernel) { return !strcmp(f->kernel, kernel); }
static bool named(const IrFunc *f, const char *name) { return !strcmp(f->name, name); }

/* attn_fwd's configs whose row block is one m64 a warpgroup */
static bool forward_of_one_m64(const IrFunc *f, const char *unused)
{
    (void)unused;
    return of_kernel(f, "attn_fwd") && strstr(f->name, f->threads == 256 ? "__BR_128__" : "__BR_64__");
}

/* tests/gpu/ops.ph's pdot: A computed (from registers), B [K, N] read
 * MN-major, K tiles of 48, 80 and 176 columns, no swizzle width: wgmma
 * still takes every dot, 3 + 5 + 11 instructions of k16. */
Test(target, sm90a_register_a_dots_take_wgmma_at_any_k_of_16s, .timeout = 300)
{
    IrModule *m = driver_compile_file("tests/gpu/ops.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    int all;
    cr_assert_eq(keep_configs(m, of_kernel, "pdot", &all), 3);
    char *ptx = emit_for(m, "sm_90a");
    cr_expect_null(strstr(ptx, "mma.sync"), "an mma.sync is left");
    cr_expect_eq(tu_count_between(ptx, ptx + strlen(ptx), "m64n64k16.f32.f16.f16 {"), 19);
    cr_expect_eq(tu_count_between(ptx, ptx + strlen(ptx), "}, {%r"), 19, "A not from registers");
    free(ptx);
    m->nfuncs = all;
    ir_module_free(m);
}

/* On sm_90a the tuned attention forward whose row block is one m64 a
 * warpgroup (BR 16 x warps) runs both dots on wgmma: Q K^T from shared
 * memory, P V with P from registers (the MMA accumulator of Q K^T,
 * converted in place), and no mma.sync is left. */
Test(target, sm90a_attention_forward_runs_both_dots_on_wgmma_with_p_from_registers, .timeout = 300)
{
    IrModule *m = driver_compile_file("bench/attention_tuned.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    int all;
    cr_assert_geq(keep_configs(m, forward_of_one_m64, NULL, &all), 8);
    char *ptx = emit_for(m, "sm_90a");
    cr_expect_null(strstr(ptx, "mma.sync"), "an mma.sync is left");
    cr_expect_not_null(strstr(ptx, "k16.f32.f16.f16 {"), "no wgmma");
    cr_expect_not_null(strstr(ptx, "}, {%r"), "no wgmma with A from registers");
    free(ptx);
    m->nfuncs = all;
    ir_module_free(m);
}

/* A 128-row forward block on one warpgroup issues two m64 instructions a
 * dot; code between them that writes the second's accumulators (the
 * rescale of O, sunk past the first wgmma by LLVM) makes ptxas inject a
 * warpgroup.arrive (C7519). So the accumulators pass through wgmma.fence
 * with register A: at D 128 the P V dot's 128 f32 and 32 A registers, the
 * Q K^T dot's 64 f32, three fences of tied f32 registers an iteration. */
Test(target, sm90a_accumulators_of_two_m64_instructions_pass_through_the_fence, .timeout = 300)
{
    IrModule *m = driver_compile_file("bench/attention_tuned.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    int all;
    cr_assert_eq(keep_configs(m, named, "attn_fwd__D_128__BR_256__BC_64__NT_256__S_2__W_0__MASKED_1", &all), 1);
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *ir = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_LLVM, &ir, err, sizeof err), 0, "%s", err);
    int tied_f32 = 0;
    for (const char *p = ir; (p = strstr(p, "\"wgmma.fence.sync.aligned;\", \"=f,")); p++) tied_f32++;
    cr_expect_geq(tied_f32, 3, "fences with f32 registers tied: %d", tied_f32);
    free(ir);
    m->nfuncs = all;
    ir_module_free(m);
}

/* wgmma_overlap.c on the tuned forward (two warpgroups of 64 rows, PHOBOS_DOT_OVERLAP=1): in
 * the loop, S = Q K^T and the previous tile's P V are both committed
 * before the wait that leaves one group in flight; the softmax follows,
 * then the wait for all, and only then the bulk copy that refills the
 * slot P V read. By default the pass runs only where a producer feeds
 * the loop and either warpgroups take turns (W 2) or the ring has three
 * stages, and PHOBOS_DOT_OVERLAP=0 turns it off there too. */
static char *one_tuned_ptx(const char *name)
{
    IrModule *m = driver_compile_file("bench/attention_tuned.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    int all;
    cr_assert_eq(keep_configs(m, named, name, &all), 1);
    char *ptx = emit_for(m, "sm_90a");
    m->nfuncs = all;
    ir_module_free(m);
    return ptx;
}

/* whether the named config's loop leaves a group in flight (the rotation) */
static bool rotated(const char *name)
{
    char *ptx = one_tuned_ptx(name);
    bool in_flight = strstr(ptx, "wgmma.wait_group.sync.aligned 1;") != NULL;
    free(ptx);
    return in_flight;
}

Test(target, sm90a_attention_forward_issues_qk_beside_the_previous_pv, .timeout = 300)
{
    setenv("PHOBOS_DOT_OVERLAP", "1", 1);
    char *ptx = one_tuned_ptx("attn_fwd__D_128__BR_128__BC_64__NT_256__S_2__W_0__MASKED_1");
    const char *one = strstr(ptx, "wgmma.wait_group.sync.aligned 1;");
    cr_assert_not_null(one, "no wait leaves a group in flight");
    const char *all = strstr(one, "wgmma.wait_group.sync.aligned 0;");
    cr_assert_not_null(all);
    /* back to the wait before: the groups committed since */
    const char *prev = ptx;
    for (const char *p = ptx; (p = strstr(p, "wgmma.wait_group.sync.aligned")) && p < one; p++) prev = p;
    cr_expect_eq(tu_count_between(prev, one, "wgmma.commit_group"), 2, "S and P V committed before the first wait");
    cr_expect_geq(tu_count_between(one, all, "ex2.approx"), 16, "the softmax's exponentials run while P V does");
    const char *refill = strstr(all, "cp.async.bulk.tensor");
    cr_assert_not_null(refill, "no refill after the wait");
    cr_expect_geq(tu_count_between(all, refill, "bar.sync"), 1, "no block barrier between the wait and the refill");
    free(ptx);
    unsetenv("PHOBOS_DOT_OVERLAP");
    cr_expect_not(rotated("attn_fwd__D_128__BR_128__BC_64__NT_256__S_2__W_0__MASKED_1"), "without PHOBOS_DOT_OVERLAP=1 the loop overlaps");
    /* by default where the warpgroups take turns (W 2), and where a producer's ring has three stages, not two */
    cr_expect(rotated("attn_fwd__D_128__BR_128__BC_128__NT_256__S_3__W_2__MASKED_1"), "taking turns, the loop does not overlap");
    cr_expect(rotated("attn_fwd__D_64__BR_192__BC_128__NT_384__S_3__W_1__MASKED_1"), "three stages, the loop does not overlap");
    cr_expect_not(rotated("attn_fwd__D_64__BR_192__BC_128__NT_384__S_2__W_1__MASKED_1"), "two stages, no turns: the loop overlaps");
    setenv("PHOBOS_DOT_OVERLAP", "0", 1);
    cr_expect_not(rotated("attn_fwd__D_128__BR_128__BC_128__NT_256__S_3__W_2__MASKED_1"), "with PHOBOS_DOT_OVERLAP=0 the loop overlaps");
    cr_expect_not(rotated("attn_fwd__D_64__BR_192__BC_128__NT_384__S_3__W_1__MASKED_1"), "with PHOBOS_DOT_OVERLAP=0 the three-stage loop overlaps");
    unsetenv("PHOBOS_DOT_OVERLAP");
}

/* PHOBOS_COPY_ONCE=1: Q, loaded once outside the K loop, is copied by the
 * engine into a slot of its own (async.c) and waited for with WAIT_ONCE;
 * the forward's loop still rotates where it did (wgmma_overlap.c takes
 * such a slot as it takes a load from outside the loop: without that the
 * head dim 128 forward ran 13% slower at N_CTX 16384 on an H100,
 * docs/performance.md, "fortieth"). */
Test(target, tiles_copied_once_keep_the_forward_loop_rotated, .timeout = 300)
{
    static const char *names[] = {"attn_fwd__D_128__BR_128__BC_128__NT_256__S_3__W_2__MASKED_1",
                                  "attn_fwd__D_64__BR_192__BC_128__NT_384__S_3__W_1__MASKED_1"};
    for (int i = 0; i < 2; i++) {
        char *loaded = one_tuned_ptx(names[i]);
        setenv("PHOBOS_COPY_ONCE", "1", 1);
        char *copied = one_tuned_ptx(names[i]);
        unsetenv("PHOBOS_COPY_ONCE");
        int by_loads = tu_count_between(loaded, loaded + strlen(loaded), "ld.global");
        int by_copy = tu_count_between(copied, copied + strlen(copied), "ld.global");
        cr_expect_lt(by_copy, by_loads, "%s: Q not copied once (%d global loads, %d without)", names[i], by_copy, by_loads);
        cr_expect_not_null(strstr(copied, "wgmma.wait_group.sync.aligned 1;"), "%s: Q copied once, the loop does not overlap", names[i]);
        free(loaded);
        free(copied);
    }
}

/* wgmma_issue.c, on by default: in dK/dV's loop dP^T = V dO^T is issued
 * beside S^T = K Q^T, so a wait leaves groups in flight (P^T is computed
 * while dP^T runs); PHOBOS_DOT_OVERLAP=0 waits for each dot where it is
 * issued. */
static int waits_leaving_groups(const char *ptx)
{
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, "wgmma.wait_group.sync.aligned ")); p++)
        n += p[30] != '0';
    return n;
}

Test(target, sm90a_attention_backward_issues_dpt_beside_st_by_default, .timeout = 300)
{
    unsetenv("PHOBOS_DOT_OVERLAP");
    char *ptx = one_tuned_ptx("attn_bwd_dkdv__D_64__BR_64__BC_128__NT_128");
    cr_expect_geq(waits_leaving_groups(ptx), 1, "no wait leaves a dot in flight");
    free(ptx);
    setenv("PHOBOS_DOT_OVERLAP", "0", 1);
    ptx = one_tuned_ptx("attn_bwd_dkdv__D_64__BR_64__BC_128__NT_128");
    cr_expect_eq(waits_leaving_groups(ptx), 0, "with PHOBOS_DOT_OVERLAP=0 a wait leaves a dot in flight");
    free(ptx);
    unsetenv("PHOBOS_DOT_OVERLAP");
}

/* The layout pass under a target's policy (codegen_dot_policy: what the
 * code generator plans with, and phc --emit=layouts --arch shows): on
 * sm_90a a 128-row GEMM block on one warpgroup has wgmma's interleaved
 * accumulator, on sm_90 mma.sync's. */
Test(target, the_layout_policy_is_the_targets_engines)
{
    IrModule *m = driver_compile_file("bench/gemm_tuned.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    const IrFunc *f = NULL;
    for (int i = 0; i < m->nfuncs && !f; i++)
        if (strstr(m->funcs[i]->name, "__BM_128__BN_128__BK_64__NT_128__")) f = m->funcs[i];
    cr_assert_not_null(f);
    const char *arch[2] = {"sm_90a", "sm_90"};
    for (int a = 0; a < 2; a++) {
        LayoutTable *t = layout_table_new();
        LayoutDotPolicy dots = codegen_dot_policy(target_find(arch[a]));
        LayoutPlan p = layout_plan(f, t, &dots);
        int interleaved = 0;
        for (int v = 1; v <= f->nvalues; v++) interleaved += p.of[v] && p.of[v]->kind == LAY_MMA && p.of[v]->mstride;
        if (a == 0) cr_expect_gt(interleaved, 0, "sm_90a: no interleaved accumulator");
        else cr_expect_eq(interleaved, 0, "sm_90: an interleaved layout");
        layout_plan_free(&p);
        layout_table_free(t);
    }
    ir_module_free(m);
}

/* Where a 64-row result is computed by G warpgroups, each a share of the
 * columns (dot_wgmma.c), warpgroup g's instruction covers all 64 rows and
 * columns g N/G on: layout_mma_wg_cols holds exactly those, and a
 * reduction along either axis combines the warps that share them. */
Test(target, the_wgmma_accumulator_of_a_column_share_a_warpgroup_is_the_wg_cols_layout)
{
    LayoutTable *t = layout_table_new();
    for (int threads = 256; threads <= 512; threads *= 2)
        for (int cols = 8 * threads / 128; cols <= 256; cols += 8 * threads / 128) {
            int warps = threads / 32, G = warps / 4, share = cols / G;
            const Layout *l = layout_mma_wg_cols(t, 64, cols, threads);
            cr_assert(l && layout_nslots(l) == share / 2, "[64, %d] in %d threads: N/(2G) values a thread", cols, threads);
            for (int w = 0, r, c; w < warps; w++)
                for (int lane = 0; lane < 32; lane++)
                    for (int j = 0; j < share / 2; j++) {
                        bool valid, owner;
                        layout_elem_of(l, w, lane, j, &r, &c, &valid, &owner);
                        cr_assert(valid && owner && r == 16 * (w % 4) + lane / 4 + 8 * ((j / 2) % 2) &&
                                      c == share * (w / 4) + 2 * (lane % 4) + j % 2 + 8 * (j / 4),
                                  "[64, %d] in %d threads: warp %d lane %d slot %d holds (%d, %d)", cols, threads, w, lane, j, r, c);
                    }
            LayoutReduction rows = layout_reduction(l, 1), columns = layout_reduction(l, 0);
            cr_expect(rows.nwarps == G && columns.nwarps == 4, "a row's columns in every warpgroup, a column's rows in four warps");
            for (int w = 0; w < warps; w++)
                cr_expect(layout_term_eval(rows.warp_index, w) == w / 4 && layout_term_eval(columns.warp_index, w) == w % 4, "warp %d", w);
        }
    cr_expect(!layout_mma_wg_cols(t, 128, 64, 256) && !layout_mma_wg_cols(t, 64, 64, 128) && !layout_mma_wg_cols(t, 64, 40, 256),
              "64 rows, several warpgroups and whole 8-column pieces a share only");
    layout_table_free(t);
}

/* Every switch the code generator reads by name is in codegen_switches,
 * which the runtime's PTX cache puts in its key: a switch missing there
 * would let one setting's cached PTX serve another. */
Test(target, every_named_switch_is_in_the_cache_key)
{
    FILE *p = popen("grep -rhoE 'env_switch\\(\"PHOBOS_[A-Z0-9_]+\"' compiler", "r");
    cr_assert_not_null(p);
    char line[256];
    int seen = 0;
    while (fgets(line, sizeof line, p)) {
        char *name = strchr(line, '"') + 1;
        *strchr(name, '"') = 0;
        bool listed = false;
        for (const char *const *sw = codegen_switches; *sw; sw++) listed |= !strcmp(*sw, name);
        cr_expect(listed, "%s is read by the code generator but not in codegen_switches", name);
        seen++;
    }
    pclose(p);
    cr_expect_geq(seen, 5, "grep found %d switches in compiler/", seen);
}

/* The counts a kernel's mbarriers are initialized with, in PTX order
 * (each init's count register, as its last mov before the init set it). */
static int barrier_counts(const char *ptx, int *counts, int max)
{
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, "mbarrier.init.shared.b64 [")) && n < max; p++) {
        const char *reg = strstr(p, "], %r"), *eol = strchr(p, '\n');
        cr_assert(reg && reg < eol);
        char name[32], mov[48];
        int len = (int)strcspn(reg + 3, ";\n");
        cr_assert_lt(len, (int)sizeof name);
        snprintf(name, sizeof name, "%.*s", len, reg + 3);
        snprintf(mov, sizeof mov, "mov.b32 \t%s, ", name);
        const char *set = NULL;
        for (const char *q = ptx; (q = strstr(q, mov)) && q < p; q++) set = q;
        cr_assert_not_null(set, "no mov sets %s", name);
        counts[n++] = atoi(set + strlen(mov));
    }
    return n;
}

/* copy_tma.c: a slot's empty barrier waits for each consumer warp's lane 0,
 * but where threads read slots with loads of their own (the fused dK/dV's
 * L and Delta rings) for every consumer thread, each arriving after its
 * own loads: compute-sanitizer's racecheck reported the producer's refill
 * racing the other lanes' loads (ptxas drops the bar.warp.sync before lane
 * 0's arrival from converged code). The forward's rings are read by wgmma
 * alone and keep one arrival a warp. */
Test(target, consumers_reading_slots_with_their_own_loads_each_release_them, .timeout = 300)
{
    /* staged: the dQ share's staging slot, whose mbarrier the producer's one arrival completes */
    static const struct { const char *name; int full, empty, staged; } cases[] = {
        {"attn_bwd_dkdv__D_64__BR_64__BC_64__NT_128__W_1", 1, 128, 1},
        {"attn_bwd_dkdv__D_128__BR_64__BC_128__NT_256__W_1", 1, 256, 1},
        {"attn_fwd__D_64__BR_192__BC_128__NT_384__S_3__W_1__MASKED_1__PERSISTENT_0__OCC_1", 1, 12, 0},
    };
    for (int i = 0; i < 3; i++) {
        IrModule *m = driver_compile_file("bench/attention_fused.ph", NULL, stderr);
        cr_assert_not_null(m, "run from the repository root");
        int all;
        cr_assert_eq(keep_configs(m, named, cases[i].name, &all), 1, "%s", cases[i].name);
        char *ptx = emit_for(m, "sm_90a");
        int counts[64], n = barrier_counts(ptx, counts, 64), full = 0, empty = 0;
        for (int j = 0; j < n; j++) {
            full += counts[j] == cases[i].full;
            empty += counts[j] == cases[i].empty;
        }
        int rings = n - cases[i].staged;
        cr_expect(n > 0 && full == rings / 2 + cases[i].staged && empty == rings / 2, "%s: %d barriers, %d with count %d, %d with %d",
                  cases[i].name, n, full, cases[i].full, empty, cases[i].empty);
        free(ptx);
        m->nfuncs = all;
        ir_module_free(m);
    }
}

/* The proxy fences of ptx's first loop: from the last slot wait before
 * its first dot to the first `end` after that dot (-1 where there is no
 * dot, no such wait or no end). */
static int fences_in_loop(const char *ptx, const char *end)
{
    const char *first = strstr(ptx, "wgmma.mma_async"), *top = NULL;
    const char *stop = first ? strstr(first, end) : NULL;
    for (const char *p = ptx; first && (p = strstr(p, "mbarrier.try_wait")) && p < first; p++) top = p;
    return top && stop ? tu_count_between(top, stop, "fence.proxy.async") : -1;
}

/* A fence.proxy.async waits for the thread's memory operations in flight
 * (MEMBAR.ALL.CTA), the dK/dV loop's dQ adds among them. By default (and
 * with PHOBOS_FEWER_FENCES=1) a wgmma dot fences only where threads may have
 * stored its operand with no fence after: the dK/dV loop of a
 * warp-specialized kernel (K and V in regions whose writers fence once, Q
 * and dO in the producer's slots) keeps one fence, the dQ share's (dS
 * stored by the threads), of the five before its dots by default.
 * test_cpusim_ws runs the kernels so (it fails where the regions' writers
 * do not fence). Counted with the consumers' own dQ adds
 * (PHOBOS_PRODUCER_ADDS=0), which end the loop; by default the loop ends
 * at the hand-over of the dQ share's staging slot, whose fence the
 * producer's thread takes past it (PHOBOS_PRODUCER_FENCE). */
Test(target, fewer_fences_leave_one_in_the_dk_dv_loop, .timeout = 300)
{
    static const char *name = "attn_bwd_dkdv__D_128__BR_64__BC_128__NT_256__W_1";
    static const char *setting[] = {"0", "1", NULL, NULL};   /* NULL: the default */
    int in_loop[4];
    for (int fewer = 0; fewer < 4; fewer++) {
        setenv("PHOBOS_PRODUCER_ADDS", fewer < 3 ? "0" : "1", 1);
        if (setting[fewer])
            setenv("PHOBOS_FEWER_FENCES", setting[fewer], 1);
        else
            unsetenv("PHOBOS_FEWER_FENCES");
        IrModule *m = driver_compile_file("bench/attention_fused.ph", NULL, stderr);
        cr_assert_not_null(m, "run from the repository root");
        int all;
        cr_assert_eq(keep_configs(m, named, name, &all), 1, "%s", name);
        char *ptx = emit_for(m, "sm_90a");
        /* the loop: from the wait for the first dot's slots to the dQ share's adds */
        in_loop[fewer] = fences_in_loop(ptx, fewer < 3 ? "red.global.add" : "bar.arrive");
        free(ptx);
        m->nfuncs = all;
        ir_module_free(m);
    }
    unsetenv("PHOBOS_FEWER_FENCES");
    unsetenv("PHOBOS_PRODUCER_ADDS");
    cr_expect(in_loop[0] == 5 && in_loop[1] == 1 && in_loop[2] == 1, "%s: %d proxy fences in the loop with a fence before every dot, %d with fewer, %d by default",
              name, in_loop[0], in_loop[1], in_loop[2]);
    cr_expect_eq(in_loop[3], 1, "%s: %d proxy fences before the staged dQ share's hand-over", name, in_loop[3]);
}

/* By default the consumers hand the dQ share's slot over with no proxy
 * fence of their own (the loop keeps dS's alone), and the producer's
 * thread fences between the slot's named barrier and its adds; with
 * PHOBOS_PRODUCER_FENCE=0 each consumer fences before it arrives.
 * test_cpusim runs the kernels both ways. */
Test(target, the_producers_fence_takes_the_consumers_at_the_hand_over, .timeout = 300)
{
    static const char *name = "attn_bwd_dkdv__D_128__BR_64__BC_128__NT_256__W_1";
    IrModule *m = driver_compile_file("bench/attention_fused.ph", NULL, stderr);
    cr_assert_not_null(m, "run from the repository root");
    int all;
    cr_assert_eq(keep_configs(m, named, name, &all), 1, "%s", name);
    setenv("PHOBOS_PRODUCER_FENCE", "0", 1);
    char *own = emit_for(m, "sm_90a");
    unsetenv("PHOBOS_PRODUCER_FENCE");
    cr_expect_eq(fences_in_loop(own, "bar.arrive"), 2, "%s: proxy fences before the hand-over with each consumer's own", name);
    free(own);
    char *ptx = emit_for(m, "sm_90a");
    cr_expect_eq(fences_in_loop(ptx, "bar.arrive"), 1, "%s: proxy fences before the hand-over", name);
    /* the adds' blocks may lie anywhere in the text: the fence is the barrier's next instruction */
    const char *take = strstr(ptx, "barrier.sync \t8,");
    cr_assert_not_null(take, "%s: no wait at the slot's barrier", name);
    const char *next = strchr(take, '\n') + 1;
    while (strncmp(next, "\t//", 3) == 0) next = strchr(next, '\n') + 1;
    cr_expect_eq(strncmp(next, "\tfence.proxy.async", 18), 0, "%s: after the slot's barrier: %.40s", name, next);
    free(ptx);
    m->nfuncs = all;
    ir_module_free(m);
}

/* The setp instructions of ptx whose line ends in `tail` (", 128;": a
 * comparison with that immediate). */
static int setp_against(const char *ptx, const char *tail)
{
    int n = 0;
    size_t len = strlen(tail);
    for (const char *l = strstr(ptx, "setp."); l; l = strstr(l + 1, "setp.")) {
        const char *eol = strchr(l, '\n');
        n += eol && (size_t)(eol - l) > len && !strncmp(eol - len, tail, len);
    }
    return n;
}

/* Specialized dims (the default; PHOBOS_SPECIALIZED_DIMS=0 turns them
 * off): a dim named like a meta-parameter (X's D) or a literal (Y's 32) is
 * a constant in the kernel (the runtime launches a config only where they
 * hold), so the kernel never reads those dims' parameters (2 and 5: each
 * tensor's address, dim 0, dim 1); off, it reads every one. */
Test(target, specialized_dims_are_constants)
{
    static const char *src = "import phobos.lang as ph\n"
                             "@ph.kernel\n"
                             "@ph.autotune(D=[64])\n"
                             "def scale_rows(X: ph.tensor[ph.f32][R, D], Y: ph.tensor[ph.f32][R, 32]):\n"
                             "    r0: ph.let = ph.ctx.block.x * 16\n"
                             "    Y[r0:+16, :] = X[r0:+16, 0:+32] * 2.0\n";
    for (int on = 0; on < 2; on++) {
        setenv("PHOBOS_SPECIALIZED_DIMS", on ? "1" : "0", 1);
        IrModule *m = driver_compile_string("dims.ph", src, NULL, stderr);
        cr_assert_not_null(m);
        for (const char *const *arch = (const char *const[]){"sm_80", "sm_90a", NULL}; *arch; arch++) {
            char *ptx = emit_for(m, *arch);
            /* a thread's column against the 32 and 64 columns: gone where they are constants (the windows start at 0) */
            int tests = setp_against(ptx, ", 32;") + setp_against(ptx, ", 31;") + setp_against(ptx, ", 64;") + setp_against(ptx, ", 63;");
            cr_expect(!on || !tests, "%s: %d columns tested against a constant dim", *arch, tests);
            for (int p = 0; p < 6; p++) {
                char param[64];
                snprintf(param, sizeof param, "[scale_rows__D_64_param_%d]", p);
                bool known = on && (p == 2 || p == 5);
                cr_expect(!strstr(ptx, param) == known, "%s, switch %d: parameter %d %s", *arch, on, p, known ? "read" : "not read");
            }
            free(ptx);
        }
        ir_module_free(m);
    }
    unsetenv("PHOBOS_SPECIALIZED_DIMS");
}

/* The fused backward's dK/dV kernel at head dim 128, its pick: with
 * specialized dims the dQ share's adds (the producer's or the consumers')
 * test no column against the
 * 128 columns of DQacc (the window [0, 128) of a 128-column tensor), which
 * LLVM could not fold itself (a column of the warpgroup's half, in a block
 * of three warpgroups); the rows are still tested. */
Test(target, specialized_dims_leave_no_column_tests_in_the_fused_backward, .timeout = 120)
{
    const char *names[] = {"D", "BR", "BC", "NT", "W"};
    const int64_t values[] = {128, 64, 128, 256, 1};
    SemaOptions only = {.kernel = "attn_bwd_dkdv", .ndefines = 5, .define_names = names, .define_values = values};
    for (int producer = 0; producer < 2; producer++) {   /* the producer's bulk add, the consumers' vector adds */
        setenv("PHOBOS_PRODUCER_ADDS", producer ? "1" : "0", 1);
        IrModule *m = driver_compile_file("bench/attention_fused.ph", &only, stderr);
        cr_assert(m && m->nfuncs == 1);
        char *ptx = emit_for(m, "sm_90a");
        int tests = setp_against(ptx, ", 128;") + setp_against(ptx, ", 127;");
        cr_expect_eq(tests, 0, "%d tests of a column against 128", tests);
        cr_expect(strstr(ptx, producer ? "cp.reduce.async.bulk" : "red.global.add.v4.f32"), "the dQ share's %s",
                  producer ? "bulk add" : "vector adds");
        free(ptx);
        ir_module_free(m);
    }
    unsetenv("PHOBOS_PRODUCER_ADDS");
}

/* The dK/dV pick at head dim 128 (a 64 x 128 dQ share a warpgroup pair
 * stages for the producer): by default the slot is four 32-column boxes
 * in the 128-byte swizzle, which the consumers store two floats a lane
 * with no shuffle, and the producer adds box by box through the f32
 * tensor map the entry asks for (its descriptor's element 4 bytes); with
 * PHOBOS_TENSOR_ADDS=0 the pairs trade (shuffles) and store four floats,
 * and the producer adds the whole tile in one bulk add. */
Test(target, the_producers_adds_go_through_a_tensor_map_by_default, .timeout = 120)
{
    const char *names[] = {"D", "BR", "BC", "NT", "W"};
    const int64_t values[] = {128, 64, 128, 256, 1};
    SemaOptions only = {.kernel = "attn_bwd_dkdv", .ndefines = 5, .define_names = names, .define_values = values};
    for (int boxes = 0; boxes < 2; boxes++) {
        setenv("PHOBOS_TENSOR_ADDS", boxes ? "1" : "0", 1);
        IrModule *m = driver_compile_file("bench/attention_fused.ph", &only, stderr);
        cr_assert(m && m->nfuncs == 1);
        char *ptx = emit_for(m, "sm_90a");
        CodegenCopyDesc d[CODEGEN_MAX_COPY_DESCS];
        int nd = codegen_copy_descriptors(ptx, m->funcs[0]->name, d), f32_maps = 0;
        for (int j = 0; j < nd; j++) f32_maps += d[j].elem_bytes == 4 && d[j].cols == 32 && d[j].swizzle == 128 && d[j].rows == 64;
        cr_expect_eq(f32_maps, boxes, "%d f32 maps of 64 x 32 boxes", f32_maps);
        cr_expect_eq(tu_count_between(ptx, NULL, "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add"), boxes ? 4 : 0);
        cr_expect_eq(tu_count_between(ptx, NULL, "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd") > 0, !boxes, "the whole tile's add");
        cr_expect_eq(tu_count_between(ptx, NULL, "shfl.sync") > 0, !boxes, "the pairs' exchange");
        cr_expect_eq(tu_count_between(ptx, NULL, "st.shared.v2.f32") >= 16, boxes, "two floats a lane");
        free(ptx);
        ir_module_free(m);
    }
    unsetenv("PHOBOS_TENSOR_ADDS");
}

/* @ph.occupancy(2): a block of 256 threads bound to 128 registers a
 * thread, so two fit a multiprocessor's 64K, and .minnctapersm 2; with a
 * producer warpgroup (384 threads) 80 a thread, and the consumers take
 * what the block was launched with less the producer's 24: (3 * 80 - 24)
 * / 2, in steps of 8 (a quadrant's half, 256, would have them wait for
 * registers the block never had). */
Test(target, occupancy_bounds_the_registers)
{
    static const char *src = "import phobos.lang as ph\n"
                             "@ph.kernel\n"
                             "@ph.launch(256)\n"
                             "@ph.occupancy(2)\n"
                             "def scale(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], a: ph.f32):\n"
                             "    i0: ph.let = ph.ctx.block.x * 256\n"
                             "    Y[i0:+256] = X[i0:+256] * a\n";
    IrModule *m = driver_compile_string("occ.ph", src, NULL, stderr);
    cr_assert_not_null(m);
    char *ptx = emit_for(m, "sm_90a");
    cr_expect(strstr(ptx, ".maxnreg 128") && strstr(ptx, ".minnctapersm 2"), "%s", ptx);
    free(ptx);
    m->funcs[0]->producer_threads = IR_PRODUCER_THREADS;   /* as @ph.warp_specialize(1) sets it */
    ptx = emit_for(m, "sm_90a");
    cr_expect(strstr(ptx, ".maxntid 384, 1, 1") && strstr(ptx, ".maxnreg 80"), "six warps to a quadrant: 85, in steps of 8");
    free(ptx);
    ir_module_free(m);
}
