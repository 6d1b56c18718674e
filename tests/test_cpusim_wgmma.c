/* test_cpusim_wgmma.c: sm_90a's code (Hopper's wgmma engine, its inline
 * PTX) run on the CPU executor (tests/cpusim/, cpusim_wgmma.c) against
 * the interpreter: tests/gpu/gemm_wgmma.ph (f16, B read MN-major) and
 * DOTS below (B K-major, bf16, every swizzle, one stage and rings) at
 * shapes past every tile edge; every config of the programs
 * test_cpusim.c runs for sm_90, the examples and the tuned attention too.
 * Then the executor's own model of wgmma's hazards, on sm_90a's LLVM IR
 * changed by hand: each change (the proxy fence taken out, a wait_group
 * that waits for one group too few, the barrier after the wait taken out,
 * the drain at the loop's end taken out, a descriptor's swizzle mode
 * changed) must fail the launch or its results. Then sm_90a's copy engine
 * (cpusim_tma.c): ring slots go by the bulk tensor copy where the launch
 * builds the tensor map and the window starts on a 16-byte unit, else by
 * the threads, as counted by the executor; and its hazards, by changed IR
 * (a try_wait on the other parity, expect_tx with the wrong byte count,
 * no mbarrier.init, a descriptor with another swizzle or box). */
#include "simharness.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "testutil.h"
#include <unistd.h>

#define GEMM_WGMMA "tests/gpu/gemm_wgmma.ph"

/* Dots beside gemm_wgmma.ph's (f16, B [K, N] read MN-major): B given
 * transposed ([N, K], read K-major like A, ph.dot_t) in f16 (one
 * warpgroup) and bf16 (two), and B [K, N] in bf16; K tiles of 32, 64, 128
 * and 256-byte rows (the 32, 64 and 128-byte swizzles, the last over two
 * atoms); one stage (operands stored by threads) and three (cp.async
 * rings). Every config is one the wgmma engine takes (64 rows of the tile
 * per warpgroup). */
static const char *DOTS =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(NT)\n"
    "@ph.stages(S)\n"
    "@ph.autotune(BM=[64], BN=[64], BK=[16, 32, 128], NT=[128], S=[1, 3])\n"
    "def nt_f16(A: ph.tensor[ph.f16][M, K], BT: ph.tensor[ph.f16][N, K], C: ph.tensor[ph.f32][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * BM\n"
    "    n0: ph.let = ph.ctx.block.y * BN\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k0 in range(0, K, BK):\n"
    "        acc += ph.dot_t(A[m0:+BM, k0:+BK], BT[n0:+BN, k0:+BK])\n"
    "    C[m0:+BM, n0:+BN] = acc\n"
    "\n"
    "\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(NT)\n"
    "@ph.stages(S)\n"
    "@ph.autotune(BM=[128], BN=[64, 128], BK=[32, 64], NT=[256], S=[1, 3])\n"
    "def nt_bf16(A: ph.tensor[ph.bf16][M, K], BT: ph.tensor[ph.bf16][N, K], C: ph.tensor[ph.f32][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * BM\n"
    "    n0: ph.let = ph.ctx.block.y * BN\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k0 in range(0, K, BK):\n"
    "        acc += ph.dot_t(A[m0:+BM, k0:+BK], BT[n0:+BN, k0:+BK])\n"
    "    C[m0:+BM, n0:+BN] = acc\n"
    "\n"
    "\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(NT)\n"
    "@ph.stages(S)\n"
    "@ph.autotune(BM=[64], BN=[64, 128], BK=[16, 64], NT=[128], S=[1, 3])\n"
    "def nn_bf16(A: ph.tensor[ph.bf16][M, K], B: ph.tensor[ph.bf16][K, N], C: ph.tensor[ph.bf16][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * BM\n"
    "    n0: ph.let = ph.ctx.block.y * BN\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k0 in range(0, K, BK):\n"
    "        acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])\n"
    "    C[m0:+BM, n0:+BN] = ph.bf16(acc)\n";

/* ---- gemms at given shapes ---- */

/* Every config of module m (at least min_configs), which it frees, on
 * sm_90a at each shape: the executor's run must succeed and agree with the
 * interpreter. */
static void every_config_at_shapes(IrModule *m, int min_configs, const Shape *shapes, int nshapes)
{
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, min_configs);
    cpusim *s = load_arch(m, "sm_90a");
    int failed = gemm_runs_failing(s, m, shapes, nshapes, 0);
    cr_expect_eq(failed, 0, "%d of %d runs fail or differ from the interpreter", failed, m->nfuncs * nshapes);
    unsigned long bulk, async;
    cpusim_copy_counts(s, &bulk, &async);
    cr_expect_gt(bulk, 0, "the rings' slots filled by the bulk tensor copy");
    cpusim_free(s);
    ir_module_free(m);
}

/* M, N and K past the tiles' edges (no multiple of 64, of BN, of BK) and
 * one shape within a tile. */
static const Shape SHAPES[] = {{100, 72, 48}, {130, 200, 72}, {64, 64, 16}};

Test(cpusim_wgmma, every_gemm_wgmma_config_matches_the_interpreter, .timeout = 600)
{
    every_config_at_shapes(driver_compile_file(GEMM_WGMMA, NULL, stderr), 32, SHAPES, 2);
}

Test(cpusim_wgmma, k_major_and_bf16_dots_over_every_swizzle_match_the_interpreter, .timeout = 600)
{
    char *diags = NULL;
    IrModule *m = tu_compile("wgmma_dots.ph", DOTS, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    every_config_at_shapes(m, 22, SHAPES, 3);
}

/* ---- what test_cpusim.c runs for sm_90, for sm_90a ---- */

Test(cpusim_wgmma, every_ops_and_gemm_tuned_config_matches_on_sm90a, .timeout = 600)
{
    IrModule *m = driver_compile_file(OPS, NULL, stderr);
    cr_assert_not_null(m);
    int failed = configs_that_differ(m, "sm_90a");
    cr_expect_eq(failed, 0, "%d of %d configs differ from the interpreter", failed, m->nfuncs);
    ir_module_free(m);
    every_config_matches("bench/gemm_tuned.ph", 8, "sm_90a");
}

Test(cpusim_wgmma, every_example_config_matches_on_sm90a, .timeout = 600)
{
    static const char *const examples[] = {"examples/matmul/matmul.ph", "examples/softmax/softmax.ph",
                                           "examples/layernorm/layernorm.ph", "examples/vecadd/vecadd.ph",
                                           "examples/tutorial/softmax.ph", "examples/tutorial/vecadd.ph"};
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) every_config_matches(examples[i], 1, "sm_90a");
}

Test(cpusim_wgmma, attention_matches_the_interpreter_on_sm90a, .timeout = 600)
{
    attention_matches_the_interpreter("examples/attention/attention.ph", "sm_90a", 0);
    attention_matches_the_interpreter("tests/gpu/attention_fused.ph", "sm_90a", 0);
}

/* tests/gpu/attention_fused.ph's dK/dV kernel on two warpgroups with 64
 * rows of K (BR 64, BC 64, picks 5) or of Q (BC 128, pick 7): its 64-row
 * dots (S^T, dP^T and dV/dK at BC 64, the dQ share added atomically at
 * both) split their columns between the warpgroups (layout_mma_wg_cols),
 * A written to shared memory. The dQ dot's A, the transpose of dS^T, is
 * written as dS^T and read M-major (imm-trans-a 1); at head dim 64 each
 * warpgroup's B share is 32 columns of a 64-column atom (m64n32k16, its
 * descriptor starting half-way into the atom's row). A share offset of 0
 * or a K step of A one row off fails this. */
static char *sm90a_ptx(const IrModule *m)
{
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *out = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &out, err, sizeof err), 0, "%s", err);
    return out;
}

Test(cpusim_wgmma, dots_of_64_rows_split_columns_between_warpgroups_on_sm90a, .timeout = 900)
{
    IrModule *m = driver_compile_file("tests/gpu/attention_fused.ph", NULL, stderr);
    cr_assert_not_null(m);
    char *ptx = sm90a_ptx(m);
    cr_expect_not_null(strstr(ptx, "m64n32k16.f32.f16.f16"), "no 32-column share of a 64-column atom");
    cr_expect_not_null(strstr(ptx, "p, 1, 1, 1, 1;"), "no M-major A");
    /* that A goes through scratch, and the loop's dots still issue together (wgmma_issue.c):
     * dP^T beside S^T, dV beside dS^T's computation, waits that leave a group running */
    const char *dkdv = strstr(ptx, ".entry attn_bwd_dkdv__D_64__BR_64__BC_128__NT_256("), *next = dkdv ? strstr(dkdv + 1, ".entry") : NULL;
    cr_assert_not_null(dkdv);
    cr_expect_gt(tu_count_between(dkdv, next, "wgmma.wait_group.sync.aligned 1;"), 0, "the dK/dV loop waits for each dot at once");
    free(ptx);
    ir_module_free(m);
    static const int picks[] = {5, 7};
    for (int i = 0; i < 2; i++) {
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 64);
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 128);
    }
}

/* bench/attention_tuned.ph at N_CTX 128, D 64: of the configs that fit,
 * each kernel's 0th, 5th and 15th (modulo their number): forwards of BR
 * 128 on two warpgroups (W 0 and 2: no producer, turns with the rotation)
 * and of BR 256, one block a head cut at N_CTX (MASKED), and both of each backward kernel's
 * shapes that take wgmma (a whole run takes some 20 seconds). */
Test(cpusim_wgmma, tuned_attention_matches_on_sm90a, .timeout = 600)
{
    static const int picks[] = {0, 5, 15};
    for (int i = 0; i < 3; i++) attention_matches_the_interpreter("bench/attention_tuned.ph", "sm_90a", picks[i]);
}

/* bench/attention_fused.ph: the tuned forward beside the fused backward,
 * whose dK/dV picks 1 and 3 have a producer warp (W 1) on one and on two
 * consumer warpgroups, the dQ share added from the loop; pick 15 is the
 * H200's at head dim 64, 128 rows of Q an iteration on two warpgroups. */
Test(cpusim_wgmma, bench_fused_attention_matches_on_sm90a, .timeout = 600)
{
    static const int picks[] = {1, 3, 15};
    for (int i = 0; i < 3; i++) attention_matches_the_interpreter("bench/attention_fused.ph", "sm_90a", picks[i]);
}

/* L and Delta's rows turned into columns where the broadcasts read them
 * (one exchange each, not two; PHOBOS_VECTOR_TRANSPOSE=0 turns it off): the
 * fused backward's two-warpgroup dK/dV configs and the tuned file's picks
 * match the interpreter either way, and the kernel has fewer barriers with
 * it. */
Test(cpusim_wgmma, vector_transposes_built_where_used_match_on_sm90a, .timeout = 900)
{
    IrModule *m = driver_compile_file("tests/gpu/attention_fused.ph", NULL, stderr);
    cr_assert_not_null(m);
    setenv("PHOBOS_VECTOR_TRANSPOSE", "0", 1);
    char *before = sm90a_ptx(m);
    unsetenv("PHOBOS_VECTOR_TRANSPOSE");
    char *after = sm90a_ptx(m);
    int with = tu_count_between(after, NULL, "bar.sync"), without = tu_count_between(before, NULL, "bar.sync");
    cr_expect_lt(with, without, "%d barriers with the switch, %d without", with, without);
    free(before);
    free(after);
    ir_module_free(m);
    setenv("PHOBOS_VECTOR_TRANSPOSE", "0", 1);
    static const int picks[] = {5, 7};
    for (int i = 0; i < 2; i++) {
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 64);
        attention_matches_at("tests/gpu/attention_fused.ph", "sm_90a", picks[i], 128);
        attention_matches_the_interpreter("bench/attention_tuned.ph", "sm_90a", picks[i]);
    }
    unsetenv("PHOBOS_VECTOR_TRANSPOSE");
}

/* The same with PHOBOS_DOT_OVERLAP=1: the forward's P V carried over
 * (wgmma_overlap.c) and the backward's dots issued early (wgmma_issue.c:
 * dP^T beside S^T in dK/dV, dP beside S in dQ). */
Test(cpusim_wgmma, tuned_attention_with_dots_left_running_matches_on_sm90a, .timeout = 600)
{
    static const int picks[] = {0, 5, 15};
    setenv("PHOBOS_DOT_OVERLAP", "1", 1);
    for (int i = 0; i < 3; i++) attention_matches_the_interpreter("bench/attention_tuned.ph", "sm_90a", picks[i]);
    unsetenv("PHOBOS_DOT_OVERLAP");
}

/* ---- the executor's model of wgmma's hazards, on sm_90a's IR changed by hand ---- */

/* tests/gpu/gemm_wgmma.ph with its autotune line replaced by autotune. */
static IrModule *gemm_config(const char *autotune)
{
    char *src = tu_read_file(GEMM_WGMMA), *diags = NULL;
    cr_assert_not_null(src);
    char *at = strstr(src, "@ph.autotune("), *end = at ? strchr(at, '\n') : NULL;
    cr_assert(at && end);
    size_t len = strlen(src) + strlen(autotune) + 2;
    char *text = malloc(len);
    snprintf(text, len, "%.*s%s%s", (int)(at - src), src, autotune, end);
    IrModule *m = tu_compile("gemm_wgmma.ph", text, NULL, &diags);
    cr_assert_not_null(m, "%s", diags ? diags : "");
    cr_assert_eq(m->nfuncs, 1);
    free(diags);
    free(text);
    free(src);
    return m;
}

/* One dot_t, its operands stored by the block's threads (one stage: no ring). */
static const char *ONE_STAGE =
    "import phobos.lang as ph\n"
    "@ph.kernel\n@ph.tensorcore\n@ph.launch(128)\n@ph.stages(1)\n@ph.autotune(BM=[64], BN=[64])\n"
    "def gemm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][N, K], C: ph.tensor[ph.f32][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * BM\n"
    "    n0: ph.let = ph.ctx.block.y * BN\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k0 in range(0, K, 64):\n"
    "        acc += ph.dot_t(A[m0:+BM, k0:+64], B[n0:+BN, k0:+64])\n"
    "    C[m0:+BM, n0:+BN] = acc\n";

static char *sm90a_ir(const IrModule *m)
{
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *text = NULL, err[1024];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_LLVM, &text, err, sizeof err), 0, "%s", err);
    return text;
}

/* Blanks the line of text holding the which-th occurrence of needle at or
 * after from (-1: every one); how many it blanked. */
static int blank_lines(char *text, const char *from, const char *needle, int which)
{
    int n = 0, seen = 0;
    for (char *p = strstr(from ? from : text, needle); p; p = strstr(p + 1, needle)) {
        if (which >= 0 && seen++ != which) continue;
        char *line = p;
        while (line > text && line[-1] != '\n') line--;
        for (char *q = line; *q && *q != '\n'; q++) *q = ' ';
        n++;
        if (which >= 0) break;
    }
    return n;
}

/* Every descriptor constant of text (an i64 OR'd into a descriptor with
 * its swizzle bits 62-63 set) given the next swizzle mode instead: 128B
 * becomes 64B, 64B 32B, 32B 128B; how many it changed. */
static int change_swizzle(char **text)
{
    const char *key = "or disjoint i64 %";
    int n = 0;
    size_t cap = strlen(*text) + 4096;
    char *out = malloc(cap), *o = out;
    const char *p = *text;
    for (const char *k; (k = strstr(p, key));) {
        const char *eol = strchr(k, '\n'), *comma = memchr(k, ',', (size_t)(eol - k));
        char *end;
        long long v = comma ? strtoll(comma + 2, &end, 10) : 0;
        uint64_t u = (uint64_t)v;
        if (comma && end == eol && u >> 62) {
            uint64_t mode = u >> 62, next = mode % 3 + 1;
            o += sprintf(o, "%.*s%lld", (int)(comma + 2 - p), p, (long long)((u & ~(3ull << 62)) | next << 62));
            n++;
        } else {
            o += sprintf(o, "%.*s", (int)(eol - p), p);
        }
        p = eol;
    }
    strcpy(o, p);
    free(*text);
    *text = out;
    return n;
}

static void replace_all(char **text, const char *from, const char *to)
{
    size_t n = 0, lf = strlen(from), lt = strlen(to);
    for (const char *p = strstr(*text, from); p; p = strstr(p + lf, from)) n++;
    char *out = malloc(strlen(*text) + n * (lt + 1) + 1), *o = out;
    const char *p = *text;
    for (const char *q; (q = strstr(p, from)); p = q + lf) o += sprintf(o, "%.*s%s", (int)(q - p), p, to);
    strcpy(o, p);
    free(*text);
    *text = out;
}

/* Runs m's one config from llvm_ir at shape sh. The status, its message
 * in err; *bad: the elements that differ from the interpreter (not
 * logged: the changed IR is expected to give some); copies (may be NULL):
 * the bulk tensor copies and the cp.asyncs issued. */
static ph_status run_ir_at(const IrModule *m, const char *llvm_ir, Shape sh, int *bad, unsigned long copies[2], char *err,
                           size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, llvm_ir, &s, err, errlen), PH_OK, "%s", err);
    ph_status st = run_gemm_at(s, m->funcs[0], sh, 0, true, bad, err, errlen);
    if (copies) cpusim_copy_counts(s, &copies[0], &copies[1]);
    cpusim_free(s);
    return st;
}

/* At M 130, N 200, K 160: several K tiles, every ring slot refilled, rows
 * of A and B 16-byte aligned (the bulk copy takes every slot). */
static ph_status run_ir(const IrModule *m, const char *llvm_ir, int *bad, char *err, size_t errlen)
{
    return run_ir_at(m, llvm_ir, (Shape){130, 200, 160}, bad, NULL, err, errlen);
}

/* K 162: A's rows 324 bytes apart, so no tensor map for A (its flag 0):
 * A's slots go by cp.async, B's by the bulk copy. */
static const Shape K_UNALIGNED = {130, 200, 162};

#define RING_ONE_WG "@ph.autotune(BM=[64], BN=[128], BK=[32], NT=[128], S=[3])"
#define RING_TWO_WG "@ph.autotune(BM=[128], BN=[128], BK=[64], NT=[256], S=[3])"

/* The IR as emitted runs right: what the changes below break works. */
Test(cpusim_wgmma, the_async_wgmma_loop_as_emitted_runs_right)
{
    const char *configs[2] = {RING_ONE_WG, RING_TWO_WG};
    for (int i = 0; i < 2; i++) {
        IrModule *m = gemm_config(configs[i]);
        char *ir = sm90a_ir(m), err[1024];
        int bad;
        cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_OK, "%s", err);
        cr_expect_eq(bad, 0);
        free(ir);
        ir_module_free(m);
    }
}

/* Without fence.proxy.async, the wgmma (the async proxy) reads bytes the
 * cp.asyncs (the generic proxy) wrote, or the threads stored (A's slots
 * by cp.async: K_UNALIGNED; the bulk copy's writes are the async proxy's
 * own). */
Test(cpusim_wgmma, a_wgmma_without_a_proxy_fence_is_reported)
{
    char *diags = NULL, err[1024];
    IrModule *ring = gemm_config(RING_ONE_WG), *stored = tu_compile("one_stage.ph", ONE_STAGE, NULL, &diags);
    cr_assert_not_null(stored, "%s", diags);
    free(diags);
    IrModule *ms[2] = {ring, stored};
    const char *writer[2] = {", block %cps", "gemm__BM_64__BN_64, block %"};
    for (int i = 0; i < 2; i++) {
        char *ir = sm90a_ir(ms[i]);
        cr_assert_gt(blank_lines(ir, NULL, "asm sideeffect \"fence.proxy.async.shared::cta;\"", -1), 0);
        int bad;
        cr_expect_eq(run_ir_at(ms[i], ir, K_UNALIGNED, &bad, NULL, err, sizeof err), PH_ERR_INVALID, "no fence, no error");
        cr_log_info("%s", err);
        cr_expect(strstr(err, "'s wgmma.mma_async (in ") && strstr(err, "with no fence.proxy.async after it"), "%s", err);
        cr_expect(strstr(err, writer[i]) && (i == 0 || !strstr(err, "cp.async")), "%s", err);
        free(ir);
        ir_module_free(ms[i]);
    }
}

/* wait_group 2 after issuing leaves the previous iteration's wgmma in
 * flight while the copies refill the slot it reads. */
Test(cpusim_wgmma, a_wait_group_that_leaves_the_last_groups_wgmma_in_flight_is_reported)
{
    const char *configs[2] = {RING_ONE_WG, RING_TWO_WG};
    for (int i = 0; i < 2; i++) {
        IrModule *m = gemm_config(configs[i]);
        char *ir = sm90a_ir(m), err[1024];
        cr_assert(strstr(ir, "wgmma.wait_group.sync.aligned 1;"));
        replace_all(&ir, "wgmma.wait_group.sync.aligned 1;", "wgmma.wait_group.sync.aligned 2;");
        int bad;
        cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "wait_group 2, no error");
        cr_log_info("%s", err);
        cr_expect(strstr(err, "'s bulk tensor copy writes byte ") && strstr(err, "wgmma.mma_async (in ") &&
                  strstr(err, "may still be reading"), "%s", err);
        free(ir);
        ir_module_free(m);
    }
}

/* Without the barrier after wait_group 1, a thread refills the slot while
 * the other warps have not seen the wgmma that read it end. */
Test(cpusim_wgmma, a_slot_refilled_with_no_barrier_after_the_wait_is_reported)
{
    const char *configs[2] = {RING_ONE_WG, RING_TWO_WG};
    for (int i = 0; i < 2; i++) {
        IrModule *m = gemm_config(configs[i]);
        char *ir = sm90a_ir(m), err[1024];
        const char *wait = strstr(ir, "wgmma.wait_group.sync.aligned 1;");
        cr_assert_not_null(wait);
        cr_assert_eq(blank_lines(ir, wait, "call void @llvm.nvvm.barrier0()", 0), 1);
        int bad;
        cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "no barrier, no error");
        cr_log_info("%s", err);
        /* the read is the wgmma's issue (two of its threads') or, after a barrier, its warp's wait */
        cr_expect(strstr(err, "shared-memory race in block ") && strstr(err, "'s bulk tensor copy writes byte ") &&
                      (strstr(err, ", wgmma.wait_group) with no barrier between") || strstr(err, ", wgmma.mma_async) with no barrier between")),
                  "%s", err);
        free(ir);
        ir_module_free(m);
    }
}

/* The loop's last wgmma never waited for: wait_group 1 where it ends. The
 * epilogue's staging buffer takes the ring's bytes, so the report is the
 * write over what the wgmma may still read, or, where nothing is written
 * there, the thread ending with it in flight. */
Test(cpusim_wgmma, a_thread_ending_with_a_wgmma_in_flight_is_reported)
{
    IrModule *m = gemm_config(RING_ONE_WG);
    char *ir = sm90a_ir(m), err[1024];
    cr_assert(strstr(ir, "wgmma.wait_group.sync.aligned 0;"));
    replace_all(&ir, "wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;");
    int bad;
    cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "a wgmma in flight at the end, no error");
    cr_log_info("%s", err);
    cr_expect((strstr(err, "ends with a wgmma.mma_async (in ") && strstr(err, "in flight")) ||
                  (strstr(err, "shared-memory race") && strstr(err, "may still be reading")),
              "%s", err);
    free(ir);
    ir_module_free(m);
}

/* A descriptor whose swizzle mode is not its operand's layout reads other
 * bytes: wrong elements, or bytes a cp.async is still writing, or bytes
 * past the area. For A of 32, 64 and 128-byte rows (BK 16, 32, 64) and B
 * of 128-byte rows, each mode changed to the next; and both operands
 * K-major, stored by the threads, where only the values can show it. */
Test(cpusim_wgmma, a_descriptor_with_another_swizzle_mode_gives_wrong_results)
{
    const char *configs[4] = {"@ph.autotune(BM=[64], BN=[128], BK=[16], NT=[128], S=[3])", RING_ONE_WG, RING_TWO_WG, "one stage"};
    for (int i = 0; i < 4; i++) {
        char *diags = NULL;
        IrModule *m = i < 3 ? gemm_config(configs[i]) : tu_compile("one_stage.ph", ONE_STAGE, NULL, &diags);
        cr_assert_not_null(m, "%s", diags);
        free(diags);
        char *ir = sm90a_ir(m), err[1024];
        cr_assert_geq(change_swizzle(&ir), 2, "A's and B's descriptors (their steps along K may be folded in)");
        int bad = 0;
        ph_status st = run_ir(m, ir, &bad, err, sizeof err);
        cr_expect(st != PH_OK || bad > 0, "%s: another swizzle, the same results", configs[i]);
        if (i == 3) cr_expect(st == PH_OK && bad > 1000, "%s: %d elements differ", err, bad);
        if (st != PH_OK) cr_log_info("%s: %s", configs[i], err);
        else cr_log_info("%s: %d of %d elements differ from the interpreter's", configs[i], bad, 130 * 200);
        free(ir);
        ir_module_free(m);
    }
}

/* ---- the copy engine: ring slots by the bulk tensor copy, on mbarriers ---- */

/* The slots go by the bulk copy where the launch could build the tensor
 * maps, by cp.async for A where it could not (K_UNALIGNED), with the
 * interpreter's results either way. */
Test(cpusim_wgmma, ring_slots_go_by_the_bulk_copy_where_the_tensor_map_allows)
{
    const char *configs[2] = {RING_ONE_WG, RING_TWO_WG};
    for (int i = 0; i < 2; i++) {
        IrModule *m = gemm_config(configs[i]);
        char *ir = sm90a_ir(m), err[1024];
        int bad;
        unsigned long aligned[2], unaligned[2];
        cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_OK, "%s", err);
        cr_expect_eq(bad, 0);
        cr_expect_eq(run_ir_at(m, ir, (Shape){130, 200, 160}, &bad, aligned, err, sizeof err), PH_OK, "%s", err);
        cr_expect(aligned[0] > 0 && aligned[1] == 0, "aligned: %lu bulk copies, %lu cp.asyncs", aligned[0], aligned[1]);
        cr_expect_eq(run_ir_at(m, ir, K_UNALIGNED, &bad, unaligned, err, sizeof err), PH_OK, "%s", err);
        cr_expect_eq(bad, 0);
        cr_expect(unaligned[0] > 0 && unaligned[0] < aligned[0], "K 162: %lu bulk copies (B's), at K 160 %lu", unaligned[0],
                  aligned[0]);
        free(ir);
        ir_module_free(m);
    }
}

/* ops.ph's ringdot from k1 = 3 (opsharness.h): the first loop's windows
 * start on 16-byte units (the bulk copy), the second's inside one (copied
 * by the threads: the GPU faults on such a bulk copy); from k1 = 8 both
 * loops' go by the bulk copy. */
Test(cpusim_wgmma, a_window_starting_inside_a_16_byte_unit_goes_by_cp_async, .timeout = 300)
{
    IrModule *m = driver_compile_file(OPS, NULL, stderr);
    cr_assert_not_null(m);
    int kept = 0, all = m->nfuncs;
    /* ringdot's configs first, but BK 48's: 96-byte rows have no swizzle the bulk copy writes, the threads copy all */
    for (int i = 0; i < all; i++) {
        IrFunc *f = m->funcs[i];
        if (strcmp(f->kernel, "ringdot") || host_meta(f, "BK") == 48) continue;
        m->funcs[i] = m->funcs[kept];
        m->funcs[kept++] = f;
    }
    cr_assert_geq(kept, 2);
    m->nfuncs = kept;
    cpusim *s = load_arch(m, "sm_90a");
    for (int i = 0; i < kept; i++) {
        unsigned long bulk[3], async;
        const int k1[2] = {3, 8};
        cpusim_copy_counts(s, &bulk[0], &async);
        for (int j = 0; j < 2; j++) {
            cr_expect_eq(run_config_with(s, m->funcs[i], "k1", k1[j]), 0, "%s from k1 = %d differs from the interpreter",
                         m->funcs[i]->name, k1[j]);
            cpusim_copy_counts(s, &bulk[j + 1], &async);
        }
        unsigned long from3 = bulk[1] - bulk[0], from8 = bulk[2] - bulk[1];
        cr_expect(from3 > 0 && from8 > from3 * 3 / 2, "%s: %lu bulk copies from k1 = 3, %lu from k1 = 8", m->funcs[i]->name, from3,
                  from8);
    }
    cpusim_free(s);
    m->nfuncs = all;
    ir_module_free(m);
}

/* The last i32 operand of each line of text holding needle: a constant
 * changed by change(c), or a value XORed with 1 by an instruction put
 * before the line. How many it changed. */
static int change_last_operand(char **text, const char *needle, long (*change)(long))
{
    size_t cap = strlen(*text) * 2 + 4096;
    char *out = malloc(cap), *o = out;
    const char *p = *text;
    int n = 0;
    for (const char *k; (k = strstr(p, needle));) {
        const char *line = k, *eol = strchr(k, '\n');
        while (line > p && line[-1] != '\n') line--;
        const char *op = NULL;
        for (const char *q = line; q < eol; q++)
            if (!strncmp(q, "i32 ", 4)) op = q + 4;
        const char *end = op ? strchr(op, ')') : NULL;
        cr_assert(op && end && end < eol, "no i32 operand: %.*s", (int)(eol - line), line);
        o += sprintf(o, "%.*s", (int)(line - p), p);
        if (*op == '%') {
            o += sprintf(o, "  %%changed%d = xor i32 %.*s, 1\n%.*s%%changed%d", n, (int)(end - op), op, (int)(op - line), line, n);
        } else {
            o += sprintf(o, "%.*s%ld", (int)(op - line), line, change(strtol(op, NULL, 10)));
        }
        o += sprintf(o, "%.*s", (int)(eol - end), end);
        p = eol;
        n++;
    }
    strcpy(o, p);
    free(*text);
    *text = out;
    return n;
}

static long flip(long c) { return c ^ 1; }
static long twice(long c) { return 2 * c; }
static long half(long c) { return c / 2; }

/* try_wait.parity on the other parity: the first wait of each mbarrier
 * passes at once (the phase before the first counts as complete), before
 * the bulk copy landed. */
Test(cpusim_wgmma, a_wait_on_the_wrong_mbarrier_phase_is_reported)
{
    IrModule *m = gemm_config(RING_ONE_WG);
    char *ir = sm90a_ir(m), err[1024];
    cr_assert_gt(change_last_operand(&ir, "mbarrier.try_wait.parity", flip), 0);
    int bad;
    cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "the wrong phase, no error");
    cr_log_info("%s", err);
    cr_expect(strstr(err, "that a bulk tensor copy (in ") && strstr(err, "mbarrier"), "%s", err);
    free(ir);
    ir_module_free(m);
}

/* expect_tx announcing twice the bytes: the phase never completes, every
 * thread waits (a deadlock); half of them: the copies complete more bytes
 * than expected (the GPU would complete the phase early). */
Test(cpusim_wgmma, expect_tx_with_the_wrong_byte_count_is_reported)
{
    long (*changes[2])(long) = {twice, half};
    for (int i = 0; i < 2; i++) {
        IrModule *m = gemm_config(RING_ONE_WG);
        char *ir = sm90a_ir(m), err[1024];
        cr_assert_gt(change_last_operand(&ir, "mbarrier.expect_tx", changes[i]), 0);
        int bad;
        cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "the wrong byte count, no error");
        cr_log_info("%s", err);
        if (i == 0)
            cr_expect(strstr(err, "deadlock in block ") && strstr(err, "128 waiting on mbarriers") &&
                      strstr(err, "waits for 0 arrivals and 12288 transaction bytes"), "%s", err);
        else
            cr_expect(strstr(err, "completes 2048 transaction bytes more than its expect_tx announced"), "%s", err);
        free(ir);
        ir_module_free(m);
    }
}

/* The mbarriers never initialised: the first expect_tx is reported. */
Test(cpusim_wgmma, an_mbarrier_never_initialised_is_reported)
{
    IrModule *m = gemm_config(RING_ONE_WG);
    char *ir = sm90a_ir(m), err[1024];
    cr_assert_eq(blank_lines(ir, NULL, "call void @llvm.nvvm.mbarrier.init.shared(", -1), 8);
    int bad;
    cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "no init, no error");
    cr_log_info("%s", err);
    cr_expect(strstr(err, "which no mbarrier.init initialised"), "%s", err);
    free(ir);
    ir_module_free(m);
}

/* Field `field` (1: box rows, 3: swizzle) of every descriptor in the
 * NAME_copy_descriptors lists of text (codegen.h), changed by change;
 * how many it changed. The executor builds its tensor maps from them as
 * the runtime does. */
static int change_descriptors(char **text, int field, long (*change)(long))
{
    int n = 0;
    char *out = malloc(strlen(*text) + 4096), *o = out;
    const char *p = *text;
    for (const char *k; (k = strstr(p, "_copy_descriptors = "));) {
        const char *list = strstr(k, "] ["), *eol = strchr(k, '\n');
        cr_assert(list && list < eol);
        o += sprintf(o, "%.*s", (int)(list + 3 - p), p);
        const char *q = list + 3, *last = q;
        long count = strtol(q + 4, NULL, 10);
        for (int i = 0; (q = strstr(q, "i32 ")) && q < eol; i++) {
            char *end;
            long v = strtol(q + 4, &end, 10);
            bool changed = i >= 1 && i <= CODEGEN_COPY_DESC_WORDS * count && (i - 1) % CODEGEN_COPY_DESC_WORDS == field;
            o += sprintf(o, "%si32 %ld", i ? ", " : "", changed ? change(v) : v);
            n += changed;
            q = last = end;
        }
        p = last;
    }
    strcpy(o, p);
    free(*text);
    *text = out;
    return n;
}

static long next_swizzle(long sw) { return sw == 128 ? 64 : sw == 64 ? 32 : 128; }

/* The descriptors' swizzle changed: the bulk copy lays the box out in
 * another pattern than the wgmma descriptors read, so the results differ;
 * their rows doubled: each box more bytes than the expect_tx says. */
Test(cpusim_wgmma, a_tensor_map_with_another_box_or_swizzle_is_reported_or_gives_wrong_results)
{
    IrModule *m = gemm_config(RING_ONE_WG);
    char *ir = sm90a_ir(m), *ir2 = strdup(ir), err[1024];
    cr_assert_eq(change_descriptors(&ir, 3, next_swizzle), 2);
    int bad = 0;
    ph_status st = run_ir(m, ir, &bad, err, sizeof err);
    cr_expect(st == PH_OK && bad > 1000, "%s: %d elements differ", err, bad);
    cr_assert_eq(change_descriptors(&ir2, 1, twice), 2);
    cr_expect_eq(run_ir(m, ir2, &bad, err, sizeof err), PH_ERR_INVALID, "boxes of twice the rows, no error");
    cr_log_info("%s", err);
    free(ir);
    free(ir2);
    ir_module_free(m);
}

/* Inline asm the executor does not know fails the load with its text,
 * rather than running as something else. */
Test(cpusim_wgmma, unknown_inline_asm_is_refused_at_load)
{
    char *diags = NULL, err[512];
    IrModule *m = tu_compile("one_stage.ph", ONE_STAGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    static const char *const texts[] = {"bar.arrive 1, 64;", "wgmma.mma_async.sync.aligned.m64n8k16.f32.e4m3.e4m3 {$0}, $1, $2, 1, 1, 1;",
                                        "wgmma.wait_group.sync.aligned;"};
    for (int i = 0; i < 3; i++) {
        char ir[512];
        snprintf(ir, sizeof ir, "define ptx_kernel void @k() {\n  call void asm sideeffect \"%s\", \"~{memory}\"()\n  ret void\n}\n",
                 texts[i]);
        cpusim *s = NULL;
        cr_expect_eq(cpusim_load_llvm(m, ir, &s, err, sizeof err), PH_ERR_COMPILE, "%s: loaded", texts[i]);
        cr_expect_null(s);
        cr_expect(strstr(err, "inline asm the executor does not model") && strstr(err, texts[i]), "%s", err);
    }
    ir_module_free(m);
}

/* ---- the last dot carried into the next iteration (wgmma_overlap.c, PHOBOS_DOT_OVERLAP=1) ---- */

/* Attention's forward loop without the division at its end, over n_kv
 * keys: zero (the loop never runs: the inits come out), one tile (the
 * first iteration only, then the last dot after the loop), a tile and a
 * piece (K and V past N read as zeros), several. One and two warpgroups,
 * two and three stages; and in bf16, masked, with Q read in the loop (licm
 * takes it out) and the softmax spelled out (the fold pass makes acc * a
 * the P V dot's accumulator). */
static const char *OVERLAP =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(NT)\n"
    "@ph.stages(S)\n"
    "@ph.autotune(BR=[128], BC=[64], NT=[128, 256], S=[2, 3])\n"
    "def flash(Q: ph.tensor[ph.f16][M, 64], K: ph.tensor[ph.f16][N, 64], V: ph.tensor[ph.f16][N, 64],\n"
    "          O: ph.tensor[ph.f32][M, 64], n_kv: ph.i32):\n"
    "    q0: ph.let = ph.ctx.block.x * BR\n"
    "    q: ph.let = Q[q0:+BR, :]\n"
    "    acc: ph.var[ph.tile[ph.f32][BR, 64]] = 0.0\n"
    "    m: ph.var[ph.tile[ph.f32][BR, 1]] = -1.0e30\n"
    "    l: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0\n"
    "    for kt in range(0, n_kv, BC):\n"
    "        s: ph.let = ph.dot_t(q, K[kt:+BC, :]) * 0.125\n"
    "        ph.online_softmax(acc, m, l, s, V[kt:+BC, :])\n"
    "    O[q0:+BR, :] = acc + l\n"
    "\n"
    "\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(128)\n"
    "@ph.stages(S)\n"
    "@ph.autotune(S=[2, 3])\n"
    "def spelled(Q: ph.tensor[ph.bf16][M, 64], K: ph.tensor[ph.bf16][N, 64], V: ph.tensor[ph.bf16][N, 64],\n"
    "            O: ph.tensor[ph.f32][M, 64], n_kv: ph.i32):\n"
    "    q0: ph.let = ph.ctx.block.x * 64\n"
    "    acc: ph.var[ph.tile[ph.f32][64, 64]] = 0.0\n"
    "    m: ph.var[ph.tile[ph.f32][64, 1]] = -1.0e30\n"
    "    l: ph.var[ph.tile[ph.f32][64, 1]] = 0.0\n"
    "    for kt in range(0, n_kv, 32):\n"
    "        s: ph.let = ph.dot_t(Q[q0:+64, :], K[kt:+32, :])\n"
    "        s2: ph.let = ph.where(kt + ph.iota(1, 32) <= q0 + ph.iota(0, 64) + 40, s * 0.125, -1.0e30)\n"
    "        mn: ph.let = ph.max(m, ph.rowmax(s2))\n"
    "        a: ph.let = ph.exp(m - mn)\n"
    "        p: ph.let = ph.exp(s2 - mn)\n"
    "        l = l * a + ph.rowsum(p)\n"
    "        acc = acc * a + ph.dot(ph.bf16(p), V[kt:+32, :])\n"
    "        m = mn\n"
    "    O[q0:+64, :] = acc / ph.max(l, 1.0e-30)\n";

Test(cpusim_wgmma, the_forward_with_its_last_dot_carried_over_matches_at_every_trip_count, .timeout = 600)
{
    setenv("PHOBOS_DOT_OVERLAP", "1", 1);
    IrModule *m = driver_compile_string("overlap.ph", OVERLAP, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_eq(m->nfuncs, 6);
    char *ir = sm90a_ir(m);
    /* each config waits for S with the last dot still in flight */
    int waits = 0;
    for (const char *p = ir; (p = strstr(p, "wgmma.wait_group.sync.aligned 1;")); p++) waits++;
    cr_expect_geq(waits, 6, "%d waits that leave one group in flight", waits);
    free(ir);
    cpusim *s = load_arch(m, "sm_90a");
    static const int trips[] = {0, 64, 72, 200};
    for (int i = 0; i < m->nfuncs; i++)
        for (int t = 0; t < 4; t++) cr_expect_eq(run_config_with(s, m->funcs[i], "n_kv", trips[t]), 0, "%s, n_kv %d", m->funcs[i]->name, trips[t]);
    cpusim_free(s);
    ir_module_free(m);
    unsetenv("PHOBOS_DOT_OVERLAP");
}

/* ---- ph.online_softmax2: the softmax in base 2 ---- */

/* bench/attention_tuned.ph's forward, whose softmax is in base 2, made
 * base e: the scores scaled by scale alone, ph.online_softmax, L as m +
 * log(l) (the backward kernels as they are). */
static char *base_e_source(void)
{
    char *src = tu_read_file("bench/attention_tuned.ph");
    cr_assert_not_null(src);
    static const char *const edits[][2] = {
        {"        s = s * (scale * 1.4426950408889634)\n", "        s = s * scale\n"},
        {"ph.online_softmax2(acc, m, l, s, v)", "ph.online_softmax(acc, m, l, s, v)"},
        {"(m + ph.log2(l)) * 0.6931471805599453, mask=rows)", "m + ph.log(l), mask=rows)"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        cr_assert_not_null(strstr(src, edits[i][0]), "bench/attention_tuned.ph has no '%s'", edits[i][0]);
        replace_all(&src, edits[i][0], edits[i][1]);
    }
    return src;
}

/* The tuned forward in base 2 gives the base-e one's O and L on the
 * interpreter (one rounding of the folded scale apart), and runs on
 * sm_90a as the interpreter does, where its loop has one multiply a score
 * fewer. */
Test(cpusim_wgmma, attention_in_base_two_matches_on_sm90a, .timeout = 600)
{
    char *src = base_e_source(), path[] = "/tmp/phc_base_e_XXXXXX.ph";
    int fd = mkstemps(path, 3);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, src, strlen(src)), (ssize_t)strlen(src));
    close(fd);
    IrModule *two = driver_compile_file("bench/attention_tuned.ph", NULL, stderr), *e = driver_compile_file(path, NULL, stderr);
    cr_assert(two && e);
    AttnSize size = {1, 2, 128, 64, 0.5};
    AttnKernels k2, ke;
    cr_assert_eq(attn_pick(two, &size, &k2), 0);
    cr_assert_eq(attn_pick(e, &size, &ke), 0);
    size_t rows = (size_t)(size.z * size.h * size.n), elems = rows * (size_t)size.d;
    for (int causal = 0; causal < 2; causal++) {
        HostRng r;
        host_rng_seed(&r, 7 + (uint64_t)causal);
        uint16_t *in[4], *o[2];
        float *lse[2];
        for (int i = 0; i < 4; i++) {
            in[i] = host_alloc(DT_F16, elems);
            host_fill_normal(DT_F16, in[i], elems, 0.0, i == 3 ? 1.0 : 0.5, &r);
        }
        for (int j = 0; j < 2; j++) {
            uint16_t *g[4];
            for (int i = 0; i < 4; i++) host_poison(DT_F16, g[i] = host_alloc(DT_F16, elems), elems);
            float *dl = host_alloc(DT_F32, rows);
            host_poison(DT_F32, lse[j] = host_alloc(DT_F32, rows), rows);
            host_poison(DT_F32, dl, rows);
            o[j] = g[0];
            AttnBufs b = {in[0], in[1], in[2], in[3], g[0], g[1], g[2], g[3], lse[j], dl};
            cr_assert_eq(attn_run(&host_interpreter, j ? &k2 : &ke, &size, causal, &b), 0);
            for (int i = 1; i < 4; i++) free(g[i]);
            free(dl);
        }
        IrParam po = {.name = "O", .is_tensor = true, .dt = DT_F16}, pl = {.name = "L", .is_tensor = true, .dt = DT_F32};
        cr_expect_eq(compare_tensor_within("base 2", k2.fwd, &po, o[0], o[1], elems, 1e-3, 2e-3), 0);
        cr_expect_eq(compare_tensor_within("base 2", k2.fwd, &pl, lse[0], lse[1], rows, 1e-5, 1e-5), 0);
        for (int i = 0; i < 4; i++) free(in[i]);
        for (int j = 0; j < 2; j++) free(o[j]), free(lse[j]);
    }
    ir_module_free(two);
    ir_module_free(e);
    static const int picks[] = {0, 5};
    for (int i = 0; i < 2; i++) attention_matches_the_interpreter("bench/attention_tuned.ph", "sm_90a", picks[i]);
    unlink(path);
    free(src);
}

/* ---- PHOBOS_RESCALE_SKIP: the online softmax's rescale skipped where it is by 1 ---- */

/* With the switch on, the product of O (and l) with the factor exp2(m -
 * max(m, rowmax)) runs in a branch taken by a thread only where one of its
 * factors is not 1 (a compare each, fcmp une), so the code has the
 * compares and the branch, and off has neither; and the attention kernels
 * still give the interpreter's results: the tutorial on sm_90 (32 x 32
 * tiles, four blocks of K and V at N_CTX 128, where some rows' maxima move
 * and others' do not) and the tuned file on sm_90a. */
Test(cpusim_wgmma, attention_with_the_rescale_skipped_matches, .timeout = 600)
{
    IrModule *m = driver_compile_file("bench/attention_tuned.ph", NULL, stderr);
    cr_assert_not_null(m);
    IrModule one = *m;
    one.nfuncs = 1;   /* the forward's first config */
    cr_assert_str_eq(m->funcs[0]->kernel, "attn_fwd");
    char *off = sm90a_ir(&one);
    setenv("PHOBOS_RESCALE_SKIP", "1", 1);
    char *on = sm90a_ir(&one);
    cr_expect_null(strstr(off, "fcmp une"), "a rescale compare with the switch off");
    cr_expect_not_null(strstr(on, "fcmp une float"), "no rescale compare with the switch on");
    cr_expect_not_null(strstr(on, "\nrescale"), "no rescale branch with the switch on");
    free(off);
    free(on);
    ir_module_free(m);
    attention_matches_the_interpreter("examples/attention/attention.ph", "sm_90", 0);
    static const int picks[] = {0, 5};
    for (int i = 0; i < 2; i++) attention_matches_the_interpreter("bench/attention_tuned.ph", "sm_90a", picks[i]);
    unsetenv("PHOBOS_RESCALE_SKIP");
}
