/* test_cpusim_ws.c: warp specialization (@ph.warp_specialize, the
 * warp-specialize pass and copy_tma.c's producer and consumers) on the CPU
 * executor: bench/gemm_tuned.ph with the option on, every tile shape it
 * tunes, against the interpreter at shapes past every tile edge, on grids
 * smaller than the tiles (a block runs several tiles, so the rings'
 * mbarrier phases turn over across tiles), with the tensor maps built and
 * with A's not (K 162: its rows no multiple of 16 bytes, so the producer
 * stores A's slots itself). Then planted bugs in the LLVM IR as emitted,
 * which the executor must report: a consumer that never arrives on a
 * slot's empty barrier (a deadlock), a producer that does not wait for it,
 * consumers that release a slot before the wgmma reading it completed, a
 * full wait on the other parity. (test_cpusim_races.c holds the order of
 * mbarriers, cpusim_order.c, to account on hand-written IR.) */
#include "simharness.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "ir/irutil.h"
#include "nvidia/targets.h"
#include "testutil.h"

#include <unistd.h>

/* bench/gemm_tuned.ph with autotune as its autotune line and, unless the
 * file says it already, @ph.warp_specialize(W). */
static IrModule *gemm_ws(const char *autotune)
{
    char *src = tu_read_file("bench/gemm_tuned.ph"), *diags = NULL;
    cr_assert_not_null(src);
    char *at = strstr(src, "@ph.autotune("), *end = at ? strchr(at, '\n') : NULL;
    cr_assert(at && end);
    const char *ws = strstr(src, "@ph.warp_specialize(") ? "" : "@ph.warp_specialize(W)\n";
    size_t len = strlen(src) + strlen(autotune) + strlen(ws) + 2;
    char *text = malloc(len);
    snprintf(text, len, "%.*s%s%s%s", (int)(at - src), src, ws, autotune, end);
    IrModule *m = tu_compile("gemm_tuned.ph", text, NULL, &diags);
    cr_assert_not_null(m, "%s", diags ? diags : "");
    free(diags);
    free(text);
    free(src);
    return m;
}

#define EVERY_TILE "@ph.autotune(BM=[64, 128], BN=[128, 256], BK=[32, 64], NT=[128, 256], S=[3], GM=[8], W=[1])"
#define TWO_WG "@ph.autotune(BM=[128], BN=[128], BK=[64], NT=[256], S=[3], GM=[8], W=[1])"

/* M, N and K past the tiles' edges, K 162 (A's map not built), a shape inside one tile. */
static const Shape SHAPES[] = {{130, 200, 72}, {100, 300, 168}, {130, 200, 162}, {64, 64, 16}};

Test(cpusim_ws, every_gemm_tuned_tile_warp_specialized_matches_the_interpreter, .timeout = 1200)
{
    IrModule *m = gemm_ws(EVERY_TILE);
    cpusim *s = load_arch(m, "sm_90a");
    int nshapes = (int)(sizeof SHAPES / sizeof *SHAPES), runs = m->nfuncs * nshapes;
    for (int i = 0; i < m->nfuncs; i++) cr_assert_eq(ir_launch_threads(m->funcs[i]), m->funcs[i]->threads + 128);
    int failed = gemm_runs_failing(s, m, SHAPES, nshapes, 2);
    cr_expect_eq(failed, 0, "%d of %d runs fail or differ from the interpreter", failed, runs);
    unsigned long bulk, async;
    cpusim_copy_counts(s, &bulk, &async);
    cr_expect_gt(bulk, 0, "the producer's bulk tensor copies");
    cr_expect_eq(async, 0, "no cp.async: the producer stores what the bulk copy cannot bring");
    cpusim_free(s);
    ir_module_free(m);
}

/* The producer is there: its copies, the consumers' named barrier, the
 * launch's extra warpgroup, which gives its registers to the consumers. */
Test(cpusim_ws, the_ptx_has_a_producer_and_consumer_barriers)
{
    IrModule *m = gemm_ws(TWO_WG);
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *ptx = NULL, err[1024];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(ptx, ".maxntid 384, 1, 1"), "the producer's warpgroup in .maxntid");
    /* 12 warps: three share a quadrant of 16K registers, so at most 170 each (168 in steps of 8);
     * a .maxnreg above it builds a kernel the driver does not launch */
    cr_expect(strstr(ptx, ".maxnreg 168"), "registers for three warps to a quadrant");
    /* then the producer keeps 24 a thread and the consumers take the rest of the block's 3 * 168 */
    cr_expect(strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 24;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 240;"),
              "registers moved from the producer to the consumers");
    cr_expect(strstr(ptx, "barrier.sync \t1, 256;"), "the consumers' barrier");
    free(ptx);
    /* PHOBOS_PRODUCER_REGS=1: the producer keeps what the consumers leave, and two of 240 leave 24 */
    setenv("PHOBOS_PRODUCER_REGS", "1", 1);
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
    unsetenv("PHOBOS_PRODUCER_REGS");
    cr_expect(strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 24;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 240;"),
              "the block's 504 a thread are spent either way");
    free(ptx);
    ir_module_free(m);
}

static char *sm90a_ir(const IrModule *m)
{
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *text = NULL, err[1024];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_LLVM, &text, err, sizeof err), 0, "%s", err);
    return text;
}

static ph_status run_ir(const IrModule *m, const char *llvm_ir, int *bad, char *err, size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, llvm_ir, &s, err, errlen), PH_OK, "%s", err);
    ph_status st = run_gemm_at(s, m->funcs[0], (Shape){130, 300, 200}, 1, true, bad, err, errlen);
    cpusim_free(s);
    return st;
}

Test(cpusim_ws, the_warp_specialized_gemm_as_emitted_runs_right)
{
    IrModule *m = gemm_ws(TWO_WG);
    char *ir = sm90a_ir(m), err[1024];
    int bad;
    cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_OK, "%s", err);
    cr_expect_eq(bad, 0);
    free(ir);
    ir_module_free(m);
}

/* Three consumer warpgroups (.maxnreg 128, four warpgroups share 512 a
 * thread): 160 each, the producer 24, or with PHOBOS_PRODUCER_REGS=1 the
 * 32 they leave; and the executor, which models the block's pool of
 * registers, runs both. */
Test(cpusim_ws, three_consumer_warpgroups_share_the_blocks_registers, .timeout = 300)
{
    IrModule *m = gemm_ws("@ph.autotune(BM=[192], BN=[128], BK=[64], NT=[384], S=[3], GM=[8], W=[1])");
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    for (int regs = 0; regs < 2; regs++) {
        char *ptx = NULL, err[1024];
        if (regs) setenv("PHOBOS_PRODUCER_REGS", "1", 1);
        cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
        char *ir = sm90a_ir(m);
        unsetenv("PHOBOS_PRODUCER_REGS");
        cr_expect(strstr(ptx, ".maxnreg 128"), "four warpgroups: 128 a thread");
        cr_expect(strstr(ptx, regs ? "setmaxnreg.dec.sync.aligned.u32 32;" : "setmaxnreg.dec.sync.aligned.u32 24;") &&
                      strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 160;"), "producer %s, consumers 160", regs ? "32" : "24");
        int bad;
        cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_OK, "%s", err);
        cr_expect_eq(bad, 0);
        free(ir);
        free(ptx);
    }
    ir_module_free(m);
}

/* One consumer warpgroup in each of two blocks a multiprocessor
 * (@ph.occupancy(2): .maxnreg 128 for the block's two warpgroups): the
 * consumers take the producer's registers, 2 * 128 - 24 = 232, where a
 * block alone (.maxnreg 255) moves none; the executor's pool covers it. */
Test(cpusim_ws, one_consumer_warpgroup_of_two_blocks_takes_the_producers_registers, .timeout = 300)
{
    for (int occupancy = 1; occupancy <= 2; occupancy++) {
        char line[160];
        snprintf(line, sizeof line, "@ph.occupancy(%d)\n@ph.autotune(BM=[64], BN=[128], BK=[64], NT=[128], S=[3], GM=[8], W=[1])", occupancy);
        IrModule *m = gemm_ws(line);
        CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
        char *ptx = NULL, err[1024];
        cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
        if (occupancy == 2) {
            cr_expect(strstr(ptx, ".maxnreg 128") && strstr(ptx, ".minnctapersm 2"), "two blocks of two warpgroups: 128 a thread");
            cr_expect(strstr(ptx, "setmaxnreg.dec.sync.aligned.u32 24;") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"),
                      "the producer keeps 24, the consumers take 232");
            char *ir = sm90a_ir(m);
            int bad;
            cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_OK, "%s", err);
            cr_expect_eq(bad, 0);
            free(ir);
        } else {
            cr_expect(strstr(ptx, ".maxnreg 255") && !strstr(ptx, "setmaxnreg"), "a block alone: 255 a thread, nothing to move");
        }
        free(ptx);
        ir_module_free(m);
    }
}

/* bench/attention_fused.ph's forward as two blocks a multiprocessor of a
 * producer and one consumer warpgroup each (64-row blocks, OCC 2: the
 * consumers at 232 registers), its line of those configs alone: the
 * tutorial's passes, causal and not, on the executor against the
 * interpreter, the 64 x 128 config (pick 1) at head dim 64. */
Test(cpusim_ws, attention_forward_two_blocks_of_one_consumer_warpgroup_matches, .timeout = 1200)
{
    char *src = tu_read_file("bench/attention_fused.ph");
    cr_assert_not_null(src);
    char *occupancy = strstr(src, "@ph.occupancy(OCC)\n"), *lines = strstr(src, "@ph.autotune("), *key = strstr(src, "@ph.autotune_key(");
    cr_assert(occupancy && lines && key && occupancy < lines && lines < key);
    char path[] = "/tmp/two_blocks_XXXXXX.ph";
    int fd = mkstemps(path, 3);
    cr_assert(fd >= 0);
    FILE *out = fdopen(fd, "w");
    fprintf(out, "%.*s", (int)(lines - src), src);
    fprintf(out, "@ph.autotune(D=[64, 128], BR=[64], BC=[64, 128], NT=[128], S=[2], W=[1], MASKED=[1], PERSISTENT=[0], OCC=[2])\n%s", key);
    fclose(out);
    free(src);
    const char *names[] = {"D", "BR", "BC", "NT", "S", "W", "MASKED", "PERSISTENT", "OCC"};
    const int64_t values[] = {64, 64, 128, 128, 2, 1, 1, 0, 2};
    SemaOptions only = {.kernel = "attn_fwd", .ndefines = 9, .define_names = names, .define_values = values};
    IrModule *m = driver_compile_file(path, &only, stderr);
    cr_assert(m && m->nfuncs == 1);
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *ptx = NULL, err[1024];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(ptx, ".minnctapersm 2") && strstr(ptx, "setmaxnreg.inc.sync.aligned.u32 232;"), "two blocks, the consumers at 232");
    free(ptx);
    ir_module_free(m);
    attention_matches_sized(path, "sm_90a", 1, 64, 256);
    unlink(path);
}

/* ---- planted bugs, in the LLVM IR as emitted ---- */

/* The label of the basic block line p lies in (a pointer to its name). */
static const char *block_of(const char *text, const char *p)
{
    for (const char *line = p; line > text;) {
        line--;
        while (line > text && line[-1] != '\n') line--;
        if (line[0] != ' ' && line[0] != '\n' && line[0] != ';' && strchr(line, ':') && strchr(line, ':') < strchr(line, '\n'))
            return line;
    }
    return text;
}

/* Blanks every line holding needle in a block whose label starts with
 * block; changes `from` to `to` in it instead when from is given. How
 * many lines it changed. */
static int edit_in_blocks(char *text, const char *block, const char *needle, const char *from, const char *to)
{
    int n = 0;
    for (char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) {
        if (strncmp(block_of(text, p), block, strlen(block))) continue;
        char *line = p;
        while (line > text && line[-1] != '\n') line--;
        char *eol = strchr(line, '\n');
        if (!from) {
            for (char *q = line; q < eol; q++) *q = ' ';
        } else {
            char *at = strstr(line, from);
            cr_assert(at && at < eol && strlen(to) == strlen(from), "%.*s", (int)(eol - line), line);
            memcpy(at, to, strlen(to));
        }
        n++;
    }
    return n;
}

static void expect_caught(char *ir, const char *what, const char *want1, const char *want2)
{
    IrModule *m = gemm_ws(TWO_WG);
    char err[1024];
    int bad;
    cr_expect_eq(run_ir(m, ir, &bad, err, sizeof err), PH_ERR_INVALID, "%s, and no error", what);
    cr_log_info("%s: %s", what, err);
    cr_expect(strstr(err, want1) && (!want2 || strstr(err, want2)), "%s: %s", what, err);
    ir_module_free(m);
}

/* No consumer arrives on an empty barrier: the producer waits for ever. */
Test(cpusim_ws, a_consumer_that_never_releases_a_slot_is_a_deadlock)
{
    IrModule *m = gemm_ws(TWO_WG);
    char *ir = sm90a_ir(m);
    cr_assert_gt(edit_in_blocks(ir, "wsarrive", "@llvm.nvvm.mbarrier.arrive.shared(", NULL, NULL), 0);
    expect_caught(ir, "no empty arrive", "deadlock in block (0, 0, 0)", "waiting on mbarriers");
    free(ir);
    ir_module_free(m);
}

/* The producer keeping 32 a thread where two consumer warpgroups of 240
 * need all but 24 of the block's 3 * 168: their setmaxnreg.inc waits for
 * registers nobody gives back (what hung the GPU with an earlier
 * PHOBOS_PRODUCER_REGS). */
Test(cpusim_ws, consumers_asking_for_more_registers_than_the_block_has_are_a_deadlock)
{
    IrModule *m = gemm_ws(TWO_WG);
    char *ir = sm90a_ir(m), *at = strstr(ir, "setmaxnreg.dec.sync.aligned.u32 24;");
    cr_assert_not_null(at);
    memcpy(at + strlen("setmaxnreg.dec.sync.aligned.u32 "), "32", 2);
    expect_caught(ir, "the producer keeping 32", "deadlock in block (0, 0, 0)", "setmaxnreg.inc 240 with 168");
    free(ir);
    ir_module_free(m);
}

/* The producer's wait for an empty slot passing at once: it refills a
 * slot whose last copy the consumers have not even seen land. */
Test(cpusim_ws, a_refill_without_waiting_for_the_empty_barrier_is_reported)
{
    IrModule *m = gemm_ws(TWO_WG);
    char *ir = sm90a_ir(m);
    int n = 0;
    for (char *p = strstr(ir, "mbarrier.try_wait.parity"); p; p = strstr(p + 1, "mbarrier.try_wait.parity")) {
        if (strncmp(block_of(ir, p), "wsemptywait", 11)) continue;
        char *line = p;
        while (line > ir && line[-1] != '\n') line--;
        char *call = strstr(line, "= call i32 asm"), *eol = strchr(line, '\n');
        cr_assert(call && call < eol);
        memset(call, ' ', (size_t)(eol - call));
        memcpy(call, "= add i32 0, 1", 14);
        n++;
    }
    cr_assert_gt(n, 0);
    expect_caught(ir, "no empty wait", "thread 256's bulk tensor copy writes byte ", NULL);
    free(ir);
    ir_module_free(m);
}

/* The consumers release a slot whose wgmma may still read it: wait_group 2 after issuing. */
Test(cpusim_ws, a_slot_released_before_its_wgmma_completed_is_reported)
{
    IrModule *m = gemm_ws(TWO_WG);
    char *ir = sm90a_ir(m);
    cr_assert_gt(edit_in_blocks(ir, "", "wgmma.wait_group.sync.aligned 1;", "aligned 1;", "aligned 2;"), 0);
    expect_caught(ir, "wait_group 2", "thread 256's bulk tensor copy writes byte ", "may still be reading");
    free(ir);
    ir_module_free(m);
}

/* A consumer waiting for the other parity of a full barrier: it reads
 * the slot before its copy landed (the phase before the first counts as
 * complete). */
Test(cpusim_ws, a_full_wait_on_the_wrong_parity_is_reported)
{
    IrModule *m = gemm_ws(TWO_WG);
    char *ir = sm90a_ir(m);
    /* the parity operand, `i32 %x)` ending the call: xor'ed with 1 by an instruction before it */
    size_t cap = strlen(ir) * 2 + 4096;
    char *out = malloc(cap), *o = out;
    const char *p = ir;
    int n = 0;
    for (const char *k; (k = strstr(p, "mbarrier.try_wait.parity"));) {
        const char *line = k, *eol = strchr(k, '\n');
        while (line > ir && line[-1] != '\n') line--;
        const char *op = NULL;
        for (const char *q = line; q < eol; q++)
            if (!strncmp(q, "i32 %", 5)) op = q + 4;
        const char *end = op ? strchr(op, ')') : NULL;
        o += sprintf(o, "%.*s", (int)(line - p), p);
        if (!strncmp(block_of(ir, k), "wsfullwait", 10) && op && end < eol) {
            o += sprintf(o, "  %%flip%d = xor i32 %.*s, 1\n%.*s%%flip%d", n, (int)(end - op), op, (int)(op - line), line, n);
            o += sprintf(o, "%.*s", (int)(eol - end), end);
            n++;
        } else {
            o += sprintf(o, "%.*s", (int)(eol - line), line);
        }
        p = eol;
    }
    strcpy(o, p);
    cr_assert_gt(n, 0);
    expect_caught(out, "full waits on the other parity", "that a bulk tensor copy (in ", "mbarrier");
    free(out);
    free(ir);
    ir_module_free(m);
}

/* Where the option does not apply (sm_90: cp.async rings, no producer),
 * the extra warp exits at once and the tile code, on its named barrier,
 * runs as without it. */
Test(cpusim_ws, the_option_without_a_producer_runs_right_on_sm90)
{
    IrModule *m = gemm_ws(TWO_WG);
    cpusim *s = load_arch(m, "sm_90");
    char err[1024];
    int bad;
    cr_expect_eq(run_gemm_at(s, m->funcs[0], (Shape){130, 200, 72}, 2, false, &bad, err, sizeof err), PH_OK, "%s", err);
    cr_expect_eq(bad, 0);
    cpusim_free(s);
    ir_module_free(m);
}

/* A GEMM whose blocks past the last tile return before their loop, and
 * whose loop's end is a tensor's element (a scalar the producer does not
 * load: no producer then, and the kernel runs as without the option). */
static const char *EARLY_RETURN =
    "import phobos.lang as ph\n"
    "@ph.kernel\n@ph.tensorcore\n@ph.launch(128)\n@ph.stages(3)\n@ph.warp_specialize(1)\n"
    "@ph.autotune(BM=[64], BN=[128], BK=[64])\n"
    "def gemm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f16][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * BM\n"
    "    n0: ph.let = ph.ctx.block.y * BN\n"
    "    if m0 >= M:\n"
    "        return\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k0 in range(0, K, BK):\n"
    "        acc += ph.dot(A[m0:+BM, k0:+BK], B[k0:+BK, n0:+BN])\n"
    "    C[m0:+BM, n0:+BN] = ph.f16(acc)\n";

Test(cpusim_ws, blocks_that_return_early_stop_their_producer_too)
{
    char *diags = NULL, err[1024];
    IrModule *m = tu_compile("early.ph", EARLY_RETURN, NULL, &diags);
    cr_assert_not_null(m, "%s", diags ? diags : "");
    free(diags);
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *ptx = NULL;
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(ptx, "barrier.sync \t1, 128;") && strstr(ptx, "cp.async.bulk.tensor"), "a producer and consumers");
    free(ptx);
    cpusim *s = load_arch(m, "sm_90a");
    int bad;
    /* 3 blocks along M for 130 rows, 5 launched: two return at once */
    cr_expect_eq(run_gemm_at(s, m->funcs[0], (Shape){130, 100, 200}, 5, false, &bad, err, sizeof err), PH_OK, "%s", err);
    cr_expect_eq(bad, 0);
    cpusim_free(s);
    ir_module_free(m);
}

/* src with @ph.warp_specialize(w) on each kernel, in a file of its own
 * (path, a mkstemps template ending in ".ph"); how many kernels. A kernel
 * that has one already (an autotuned W: the tuned forward's, dQ's) gets
 * W=[w] for its list, as tests/ws_copies.sh writes the copies gpucheck runs. */
static int write_specialized(const char *src, char *path, int w)
{
    int fd = mkstemps(path, 3);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    int kernels = 0;
    for (const char *p = src; *p;) {
        const char *k = strstr(p, "@ph.kernel\n"), *l = strstr(p, ", W=[");
        if (l && (!k || l < k)) {
            const char *end = strchr(l, ']');
            cr_assert_not_null(end);
            fprintf(f, "%.*s, W=[%d]", (int)(l - p), p, w);
            p = end + 1;
            continue;
        }
        if (!k) {
            fputs(p, f);
            break;
        }
        fprintf(f, "%.*s@ph.kernel\n", (int)(k - p), p);
        p = k + strlen("@ph.kernel\n");
        if (strncmp(p, "@ph.warp_specialize(", 20)) fprintf(f, "@ph.warp_specialize(%d)\n", w);
        kernels++;
    }
    fclose(f);
    return kernels;
}

static int write_warp_specialized(const char *src, char *path) { return write_specialized(src, path, 1); }

/* The file named file with @ph.warp_specialize(w) on each of its four
 * kernels, written to path (as write_specialized's) and compiled. */
static IrModule *compile_specialized(const char *file, char *path, int w)
{
    char *src = tu_read_file(file);
    cr_assert_not_null(src);
    cr_assert_eq(write_specialized(src, path, w), 4);
    free(src);
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    return m;
}

/* The sm_90a PTX of m's function i alone (the caller frees it). */
static char *sm90a_ptx_of(IrModule *m, int i)
{
    CodegenOptions o = {.target = target_find("sm_90a"), .opt_level = CODEGEN_OPT_DEFAULT};
    IrModule one = *m;
    one.funcs = &m->funcs[i], one.nfuncs = 1;
    char *ptx = NULL, err[1024];
    cr_assert_eq(codegen_emit(&one, &o, CG_EMIT_PTX, &ptx, err, sizeof err), 0, "%s", err);
    return ptx;
}

/* Each entry of the file's sm_90a PTX whose name starts with one of
 * prefix[] has a producer: its consumers meet at named barrier 1 (which
 * leaves the producer out), and they release slots, after a bar.warp.sync
 * (release_async) or after the wgmma.wait_group of the dots that read
 * them (an async dot's, a wait_dots'): the producer took its copies. */
static void expect_producers(const char *path, const char *const *prefix, int n)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    for (int i = 0; i < m->nfuncs; i++)
        for (int j = 0; j < n; j++) {
            if (strncmp(m->funcs[i]->name, prefix[j], strlen(prefix[j]))) continue;
            char *ptx = sm90a_ptx_of(m, i);
            bool releases = strstr(ptx, "bar.warp.sync") || strstr(ptx, "wgmma.wait_group");
            cr_expect(releases && strstr(ptx, "barrier.sync \t1,"), "%s has no producer", m->funcs[i]->name);
            free(ptx);
        }
    ir_module_free(m);
}

/* Attention's loops read a wait's K and V slots by two dots (QK^T, then
 * PV in the online softmax): the pass releases the slots after the second,
 * and the producer takes the copies of the forward and of both backward
 * kernels that loop (the delta kernel has no ring). */
Test(cpusim_ws, warp_specialized_attention_matches_the_interpreter, .timeout = 600)
{
    static const char *const looping[] = {"attn_fwd", "attn_bwd_dkdv", "attn_bwd_dq"};
    char *src = tu_read_file("examples/attention/attention.ph");
    cr_assert_not_null(src);
    char path[] = "/tmp/phc_ws_attention_XXXXXX.ph";
    cr_assert_eq(write_warp_specialized(src, path), 4);
    expect_producers(path, looping, 3);
    attention_matches_the_interpreter(path, "sm_90a", 0);
    unlink(path);
    free(src);
}

/* By default (dot_wgmma.c) the dots of a warp-specialized kernel fence
 * none of their region or slot operands: the regions' writers fence their
 * own stores, which the tests above run. The executor checks every wgmma's
 * bytes for a proxy fence after the threads' stores (it fails the forward's
 * Q region where the writers do not fence). PHOBOS_FEWER_FENCES=0 puts a
 * fence before every dot as well: the same results. */
Test(cpusim_ws, warp_specialized_attention_with_a_fence_before_every_dot_matches_the_interpreter, .timeout = 1200)
{
    static const int picks[] = {0, 5, 12};
    char *src = tu_read_file("bench/attention_tuned.ph");
    cr_assert_not_null(src);
    char path[] = "/tmp/phc_ws_fences_XXXXXX.ph";
    cr_assert_eq(write_warp_specialized(src, path), 4);
    setenv("PHOBOS_FEWER_FENCES", "0", 1);
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) attention_matches_the_interpreter(path, "sm_90a", picks[i]);
    unsetenv("PHOBOS_FEWER_FENCES");
    unlink(path);
    free(src);
}

/* bench/attention_tuned.ph so, at N_CTX 128 D 64: of the configs that
 * fit, each kernel's picks (modulo their number): the forward's BR 128 and
 * 256, BC 64 and 128, 2 and 3 stages on two warpgroups, on wgmma. */
Test(cpusim_ws, warp_specialized_tuned_attention_matches_the_interpreter, .timeout = 1200)
{
    static const char *const looping[] = {"attn_fwd__D_64", "attn_bwd_dkdv__D_64", "attn_bwd_dq__D_64"};
    static const int picks[] = {0, 3, 5, 6, 9, 10, 12, 15};
    char *src = tu_read_file("bench/attention_tuned.ph");
    cr_assert_not_null(src);
    char path[] = "/tmp/phc_ws_tuned_XXXXXX.ph";
    cr_assert_eq(write_warp_specialized(src, path), 4);
    expect_producers(path, looping, 3);
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) attention_matches_the_interpreter(path, "sm_90a", picks[i]);
    unlink(path);
    free(src);
}

/* Attention's forward entry fwd of m, from llvm_ir (the module's IR as
 * emitted, then edited), on the executor: Z 1 H 2 N_CTX 128 D 64 at random,
 * row blocks of fwd's BR on a grid of `blocks` x 2; the launch's status,
 * err its message. */
static ph_status run_forward_ir(const IrModule *m, const IrFunc *fwd, const char *llvm_ir, int blocks, char *err, size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, llvm_ir, &s, err, errlen), PH_OK, "%s", err);
    int64_t rows = 256, d = 64;
    HostRng r;
    host_rng_seed(&r, 7);
    void *t[5];
    for (int i = 0; i < 5; i++) {
        t[i] = host_alloc(i < 4 ? DT_F16 : DT_F32, (size_t)(i < 4 ? rows * d : rows));
        if (i < 3) host_fill_normal(DT_F16, t[i], (size_t)(rows * d), 0.0, 0.5, &r);
    }
    IrArg args[] = {host_tensor2(t[0], rows, d), host_tensor2(t[1], rows, d), host_tensor2(t[2], rows, d),
                    host_tensor2(t[3], rows, d), host_tensor2(t[4], rows, 1), host_i32(128), host_f32(0.5f), host_i32(0)};
    HostLauncher sim = {"cpusim", sim_launch, s, 0};
    const int grid[3] = {blocks, 2, 1};
    ph_status st = sim_launch(&sim, fwd, args, 8, grid, err, errlen);
    for (int i = 0; i < 5; i++) free(t[i]);
    cpusim_free(s);
    return st;
}

/* The consumers' release without its bar.warp.sync (every call taken out
 * of the IR as emitted): lane 0 arrives on the empty barrier while the other
 * lanes' ldmatrix reads of the slot are ordered before nothing it does, and
 * the producer's refill of the slot races them. The tutorial's forward:
 * 32-row tiles, its dots on mma.sync. */
Test(cpusim_ws, a_release_without_the_warp_sync_is_reported, .timeout = 300)
{
    char *src = tu_read_file("examples/attention/attention.ph");
    cr_assert_not_null(src);
    char path[] = "/tmp/phc_ws_nosync_XXXXXX.ph";
    cr_assert_eq(write_warp_specialized(src, path), 4);
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    const IrFunc *fwd = m->funcs[0];
    cr_assert_str_eq(fwd->name, "attn_fwd__D_64__BR_32__BC_32");
    char *ir = sm90a_ir(m);
    const char *sync = "call void @llvm.nvvm.bar.warp.sync(i32 -1)";
    int removed = 0;
    for (char *at; (at = strstr(ir, sync)); removed++) memset(at, ' ', strlen(sync));
    cr_assert_gt(removed, 0, "no bar.warp.sync in the warp-specialized attention");
    char err[2048];
    cr_expect_neq(run_forward_ir(m, fwd, ir, 128 / 32, err, sizeof err), 0, "the executor saw no race");
    cr_expect(strstr(err, "race") && strstr(err, "ldmatrix"), "%s", err);
    free(ir);
    ir_module_free(m);
    unlink(path);
    free(src);
}

/* make gpusanitize's GEMM shape (384 x 640 x 192 on 3 blocks: each block
 * three tiles, the producer running ahead into the next tile's K loop) with
 * the two-warpgroup 128 x 256 tiles. */
Test(cpusim_ws, the_sanitizers_gemm_shape_runs_without_races, .timeout = 600)
{
    IrModule *m = gemm_ws("@ph.autotune(BM=[128], BN=[256], BK=[32, 64], NT=[256], S=[3], GM=[8], W=[1])");
    cpusim *s = load_arch(m, "sm_90a");
    for (int i = 0; i < m->nfuncs; i++) {
        char err[4096];
        int bad = 0;
        ph_status st = run_gemm_at(s, m->funcs[i], (Shape){384, 640, 192}, 3, false, &bad, err, sizeof err);
        cr_expect_eq(st, PH_OK, "%s: %s", m->funcs[i]->name, err);
        cr_expect_eq(bad, 0, "%s: %d elements or guards differ", m->funcs[i]->name, bad);
    }
    cpusim_free(s);
    ir_module_free(m);
}

/* @ph.warp_specialize(2): the two consumer warpgroups of the 256-thread
 * configs take turns at their wgmma (a named barrier each, bar.arrive to
 * the next), the others run as with 1. The same picks as above. */
/* The turns' arrivals in the forward's D 64 BR 128 BC 64 configs of m
 * (S 2, 3; two warpgroups): want in each. */
static void expect_turn_arrivals(IrModule *m, int want)
{
    int turning = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        if (strncmp(m->funcs[i]->name, "attn_fwd__D_64__BR_128__BC_64__NT_", 34)) continue;
        char *ptx = sm90a_ptx_of(m, i);
        bool two = m->funcs[i]->threads == 256;
        int arrivals = 0;
        for (const char *p = ptx; (p = strstr(p, "bar.arrive")); p++) arrivals++;
        cr_expect_eq(arrivals, two ? want : 0, "%s: %d bar.arrive", m->funcs[i]->name, arrivals);
        turning += two;
        free(ptx);
    }
    cr_expect_eq(turning, 2, "the forward's D 64 BR 128 BC 64 NT 256 configs (S 2, 3) of one W");
}

/* With PHOBOS_DOT_OVERLAP=0, each dot waited for where it is issued. */
Test(cpusim_ws, attention_whose_warpgroups_take_turns_matches_the_interpreter, .timeout = 1200)
{
    static const int picks[] = {0, 3, 5, 6, 9, 10, 12, 15};
    char path[] = "/tmp/phc_ws_turns_XXXXXX.ph";
    setenv("PHOBOS_DOT_OVERLAP", "0", 1);
    IrModule *m = compile_specialized("bench/attention_tuned.ph", path, 2);
    /* the first turn's arrival, then one wait and one arrival a dot (QK^T, PV) */
    expect_turn_arrivals(m, 3);
    ir_module_free(m);
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) attention_matches_the_interpreter(path, "sm_90a", picks[i]);
    unsetenv("PHOBOS_DOT_OVERLAP");
    unlink(path);
}

/* The same by default, where warpgroups taking turns get the rotation
 * (wgmma_overlap.c) and the early issue (wgmma_issue.c): a turn covers the
 * first iteration's QK^T, then the loop's pair (QK^T beside the previous
 * tile's PV), then the last PV; the producer takes the slots back once the
 * PV that read them completed. */
Test(cpusim_ws, overlapped_attention_taking_turns_matches_the_interpreter, .timeout = 1200)
{
    static const int picks[] = {5, 6, 12};
    char path[] = "/tmp/phc_ws_overlap_XXXXXX.ph";
    unsetenv("PHOBOS_DOT_OVERLAP");
    IrModule *m = compile_specialized("bench/attention_tuned.ph", path, 2);
    expect_turn_arrivals(m, 4);
    ir_module_free(m);
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) attention_matches_the_interpreter(path, "sm_90a", picks[i]);
    unlink(path);
}

/* PHOBOS_VECTOR_RING=0 with the warpgroups taking turns: the backward's
 * L and Delta columns loaded and exchanged through scratch, turns and all
 * (the default, the rings, is overlapped_attention_taking_turns' run). */
Test(cpusim_ws, warpgroups_taking_turns_without_vector_rings_match_the_interpreter, .timeout = 1200)
{
    static const int picks[] = {5, 6, 7};   /* dK/dV at head dim 64: BR 64 BC 64 and BC 128 with a producer, one without */
    char path[] = "/tmp/phc_ws_ring_XXXXXX.ph";
    setenv("PHOBOS_VECTOR_RING", "0", 1);
    IrModule *m = compile_specialized("bench/attention_tuned.ph", path, 2);
    ir_module_free(m);
    for (size_t i = 0; i < sizeof picks / sizeof *picks; i++) attention_matches_the_interpreter(path, "sm_90a", picks[i]);
    unsetenv("PHOBOS_VECTOR_RING");
    unlink(path);
}

/* The consumers' first turn never given (warpgroup 1's arrival at barrier
 * 2 before its first wgmma taken out of the IR as emitted): warpgroup 0
 * waits for ever for its turn, warpgroup 1 for warpgroup 0's arrival. */
Test(cpusim_ws, warpgroups_that_never_get_their_first_turn_are_a_deadlock, .timeout = 300)
{
    char path[] = "/tmp/phc_ws_noturn_XXXXXX.ph";
    IrModule *m = compile_specialized("bench/attention_tuned.ph", path, 2);
    int at = -1;
    for (int i = 0; i < m->nfuncs && at < 0; i++)
        if (!strcmp(m->funcs[i]->name, "attn_fwd__D_64__BR_128__BC_64__NT_256__S_2__W_2__MASKED_1")) at = i;
    cr_assert_geq(at, 0);
    IrModule one = *m;
    one.funcs = &m->funcs[at], one.nfuncs = 1;
    char *ir = sm90a_ir(&one);
    const char *first = "\"r,r,~{memory}\"(i32 2, i32 256)";
    char *p = strstr(ir, first);
    cr_assert_not_null(p, "no first turn in the IR");
    char *call = p;
    while (call > ir && strncmp(call, "call void asm", 13)) call--;
    char *eol = strchr(p, '\n');
    memset(call, ' ', (size_t)(eol - call));
    char err[2048];
    cr_expect_neq(run_forward_ir(&one, m->funcs[at], ir, 1, err, sizeof err), 0, "the launch ended");
    cr_expect(strstr(err, "deadlock") && strstr(err, "256 threads at a barrier"), "%s", err);
    free(ir);
    ir_module_free(m);
    unlink(path);
}

/* ---- the rotated forward taking turns: P V waited for in its iteration (wgmma_overlap.c) ---- */

/* Attention's forward loop taking turns over n_kv keys: none (the guard
 * yields the inits), one tile (the loop never runs: the last P V after
 * it), a tile and a piece, several; with ph.online_softmax, and spelled
 * out with a mask. The rotated loop issues P_{j-1} V_{j-1} beside S_j and
 * waits for it before the back edge, where P_j takes P_{j-1}'s registers:
 * a wgmma in flight there would read P_j (the GPU's wrong outputs of the
 * wait at the next top, docs/performance.md "twenty-third"). */
static const char *ROTATED =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(256)\n"
    "@ph.stages(S)\n"
    "@ph.warp_specialize(2)\n"
    "@ph.autotune(S=[2, 3])\n"
    "def flash(Q: ph.tensor[ph.f16][M, 64], K: ph.tensor[ph.f16][N, 64], V: ph.tensor[ph.f16][N, 64],\n"
    "          O: ph.tensor[ph.f32][M, 64], n_kv: ph.i32):\n"
    "    q0: ph.let = ph.ctx.block.x * 128\n"
    "    q: ph.let = Q[q0:+128, :]\n"
    "    acc: ph.var[ph.tile[ph.f32][128, 64]] = 0.0\n"
    "    m: ph.var[ph.tile[ph.f32][128, 1]] = -1.0e30\n"
    "    l: ph.var[ph.tile[ph.f32][128, 1]] = 0.0\n"
    "    for kt in range(0, n_kv, 64):\n"
    "        s: ph.let = ph.dot_t(q, K[kt:+64, :]) * 0.125\n"
    "        ph.online_softmax(acc, m, l, s, V[kt:+64, :])\n"
    "    O[q0:+128, :] = acc + l\n"
    "\n"
    "\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(256)\n"
    "@ph.stages(S)\n"
    "@ph.warp_specialize(2)\n"
    "@ph.autotune(S=[2, 3])\n"
    "def spelled(Q: ph.tensor[ph.f16][M, 64], K: ph.tensor[ph.f16][N, 64], V: ph.tensor[ph.f16][N, 64],\n"
    "            O: ph.tensor[ph.f32][M, 64], n_kv: ph.i32):\n"
    "    q0: ph.let = ph.ctx.block.x * 128\n"
    "    acc: ph.var[ph.tile[ph.f32][128, 64]] = 0.0\n"
    "    m: ph.var[ph.tile[ph.f32][128, 1]] = -1.0e30\n"
    "    l: ph.var[ph.tile[ph.f32][128, 1]] = 0.0\n"
    "    for kt in range(0, n_kv, 64):\n"
    "        s: ph.let = ph.dot_t(Q[q0:+128, :], K[kt:+64, :])\n"
    "        s2: ph.let = ph.where(kt + ph.iota(1, 64) <= q0 + ph.iota(0, 128) + 40, s * 0.125, -1.0e30)\n"
    "        mn: ph.let = ph.max(m, ph.rowmax(s2))\n"
    "        a: ph.let = ph.exp(m - mn)\n"
    "        p: ph.let = ph.exp(s2 - mn)\n"
    "        l = l * a + ph.rowsum(p)\n"
    "        acc = acc * a + ph.dot(ph.f16(p), V[kt:+64, :])\n"
    "        m = mn\n"
    "    O[q0:+128, :] = acc / ph.max(l, 1.0e-30)\n";

/* Counts in b the issued dots (*issued) and the for loops that carry one in flight over their back edge (the result). */
static int loops_carrying_a_dot(const IrFunc *f, const IrBlock *b, int depth, int *issued)
{
    int n = 0;
    for (int i = 0; b && i < b->nops && depth < 8; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_DOT && (op->flags & DOT_ISSUED)) ++*issued;
        if (op->kind == OP_FOR) {
            const IrOp *y = op->body->ops[op->body->nops - 1];
            for (int a = 0; a < y->nargs; a++)
                if (ir_issued_dot(f, y->args[a])) n++;
        }
        n += loops_carrying_a_dot(f, op->body, depth + 1, issued) + loops_carrying_a_dot(f, op->els, depth + 1, issued);
    }
    return n;
}

Test(cpusim_ws, the_rotated_loop_waits_for_p_v_in_its_iteration_and_matches_at_every_trip_count, .timeout = 900)
{
    IrModule *m = driver_compile_string("rotated.ph", ROTATED, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_eq(m->nfuncs, 4);
    for (int i = 0; i < m->nfuncs; i++) {
        IrFunc *c = ir_func_clone(m->funcs[i]);
        wgmma_async(c);
        wgmma_overlap(c);
        int issued = 0, carried = loops_carrying_a_dot(c, c->body, 0, &issued);
        cr_expect_geq(issued, 2, "%s: not rotated (%d issued dots)", c->name, issued);
        cr_expect_eq(carried, 0, "%s: a loop carries a dot in flight over its back edge", c->name);
        ir_func_free(c);
    }
    /* the wait for P V is held after the softmax by a fence (ptxas moves an unfenced one up to
     * the top of its block); PHOBOS_HOLD_WAIT=0 leaves the fence out */
    for (int hold = 0; hold < 2; hold++) {
        setenv("PHOBOS_HOLD_WAIT", hold ? "1" : "0", 1);
        for (int i = 0; i < m->nfuncs; i++) {
            char *ptx = sm90a_ptx_of(m, i);
            const char *fence = strstr(ptx, "fence.acq_rel.cta;"), *wait = fence ? strstr(fence, "wgmma.wait_group") : NULL;
            cr_expect_eq(fence != NULL, hold, "%s: the fence is %s", m->funcs[i]->name, hold ? "missing" : "there");
            if (hold) cr_expect(wait && !strncmp(wait, "wgmma.wait_group.sync.aligned 0;", 32) && wait - fence < 80, "%s: no wait for P V after the fence", m->funcs[i]->name);
            free(ptx);
        }
    }
    unsetenv("PHOBOS_HOLD_WAIT");
    cpusim *s = load_arch(m, "sm_90a");
    static const int trips[] = {0, 64, 72, 200, 320};
    for (int i = 0; i < m->nfuncs; i++)
        for (int t = 0; t < 5; t++) cr_expect_eq(run_config_with(s, m->funcs[i], "n_kv", trips[t]), 0, "%s, n_kv %d", m->funcs[i]->name, trips[t]);
    cpusim_free(s);
    ir_module_free(m);
}
