/* test_cpusim_races.c: the CPU executor's (tests/cpusim/) own model of
 * shared memory, on kernels and hand-written LLVM IR: a missing barrier,
 * a read of another thread's write without one (in a warp too), a read of
 * shared memory the block never wrote; and cp.async: a double-buffered
 * pipeline right, then each of its barriers and waits taken out, every
 * copy form's zero fill, bad copies refused, two copies to one byte in
 * flight. test_cpusim.c runs generated code against the interpreter. */
#include <criterion/criterion.h>

#include "codegen/codegen.h"
#include "driver/targets.h"
#include "cpusim.h"
#include "testutil.h"

/* ---- shared-memory races ---- */

/* A transpose and a row sum, both exchanged through scratch buffers
 * between barriers. */
static const char *EXCHANGE =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def exchange(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N]):\n"
    "    r0: ph.let = ph.ctx.block.x * 32\n"
    "    Y[r0:+32, 0:+64] = ph.transpose(X[0:+64, r0:+32]) + ph.rowsum(X[r0:+32, 0:+64])\n";

#define BARRIER_CALL "call void @llvm.nvvm.barrier0()"

/* llvm_ir with its which-th barrier call taken out, or every one when
 * which is -1; *calls receives how many there were. */
static char *without_barrier(const char *llvm_ir, int which, int *calls)
{
    char *out = strdup(llvm_ir);
    *calls = 0;
    for (char *p = out; (p = strstr(p, BARRIER_CALL)); p += strlen(BARRIER_CALL)) {
        char *line = p;
        while (line > out && line[-1] != '\n') line--;
        bool is_call = strncmp(line, "declare", 7) != 0;
        if (is_call && (which < 0 || which == *calls)) memset(line, ' ', (size_t)(p - line) + strlen(BARRIER_CALL));
        *calls += is_call;
    }
    return out;
}

/* Runs exchange over 2 blocks of a 64 x 64 X; PH_OK only if Y is right. */
static ph_status run_exchange(const IrModule *m, const char *llvm_ir, char *err, size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, llvm_ir, &s, err, errlen), PH_OK, "%s", err);
    static float x[64 * 64], y[64 * 64];
    for (int i = 0; i < 64 * 64; i++) x[i] = (float)(i % 61) * 0.25f, y[i] = -1;
    ph_arg args[2] = {ph_tensor2((uintptr_t)x, 64, 64), ph_tensor2((uintptr_t)y, 64, 64)};
    unsigned grid[3] = {2, 1, 1};
    ph_status st = cpusim_launch(s, m->funcs[0]->name, grid, args, 2, err, errlen);
    for (int i = 0; st == PH_OK && i < 64; i++) {
        float sum = 0;
        for (int k = 0; k < 64; k++) sum += x[i * 64 + k];
        for (int j = 0; j < 64; j++)
            cr_assert_float_eq(y[i * 64 + j], x[j * 64 + i] + sum, 1e-3, "Y[%d, %d] = %g", i, j, y[i * 64 + j]);
    }
    cpusim_free(s);
    return st;
}

Test(cpusim, a_missing_barrier_is_reported_as_a_race)
{
    char *diags = NULL;
    IrModule *m = tu_compile("exchange.ph", EXCHANGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    CodegenOptions o = {.target = target_find("sm_90"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *text = NULL, err[1024];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_LLVM, &text, err, sizeof err), 0, "%s", err);

    cr_expect_eq(run_exchange(m, text, err, sizeof err), PH_OK, "the barrier-separated exchange: %s", err);

    /* the conversion is: every thread writes, a barrier, every thread
     * reads what others wrote. No barrier goes before the writes: no
     * thread used those bytes before (the shared-memory plan places
     * barriers where accesses would otherwise meet). */
    int calls;
    char *racy = without_barrier(text, -1, &calls);
    cr_assert_eq(calls, 1, "the exchange has %d barriers, not 1 (see cg_values.c, exchange)", calls);
    cr_expect_eq(run_exchange(m, racy, err, sizeof err), PH_ERR_INVALID, "no barrier, no race seen");
    /* thread 0 runs alone to its end, reading words threads 1.. have yet
     * to write; the first of them to write one is caught */
    cr_expect(strstr(err, "exchange: shared-memory race in block (0, 0, 0): thread "), "%s", err);
    cr_expect(strstr(err, " writes byte ") && strstr(err, " of exchange_smem (in exchange, block %") &&
              strstr(err, "that thread 0 read (in exchange, block %"), "%s", err);
    cr_expect(strstr(err, "with no barrier between"), "%s", err);
    free(racy);
    free(text);
    ir_module_free(m);
}

/* Hand-written in place of exchange's code: each thread writes its id to
 * scratch word tid, then (after a barrier, or not) reads its warp
 * neighbour's word (its previous lane's, lane 0 the last's) plus SKIP and
 * stores it, as a float, to Y[tid]. */
static const char *NEIGHBOUR_IR =
    "@exchange_scratch = internal addrspace(3) global [1024 x i32] undef, align 16\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "define ptx_kernel void @exchange(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %mine = getelementptr i32, ptr addrspace(3) @exchange_scratch, i32 %t\n"
    "  store i32 %t, ptr addrspace(3) %mine, align 4\n"
    "  br label %read\n"
    "read:\n"
    "  BARRIER\n"
    "  %prev = add i32 %t, 31\n"
    "  %lane = and i32 %prev, 31\n"
    "  %warp = and i32 %t, -32\n"
    "  %n = or i32 %warp, %lane\n"
    "  %past = add i32 %n, SKIP\n"
    "  %theirs = getelementptr i32, ptr addrspace(3) @exchange_scratch, i32 %past\n"
    "  %v = load i32, ptr addrspace(3) %theirs, align 4\n"
    "  %f = sitofp i32 %v to float\n"
    "  %out = getelementptr float, ptr addrspace(1) %Y, i32 %t\n"
    "  store float %f, ptr addrspace(1) %out, align 4\n"
    "  ret void\n"
    "}\n";

/* text with the first occurrence of key replaced by value, in buf */
static void substitute(char *buf, size_t n, const char *text, const char *key, const char *value)
{
    const char *at = strstr(text, key);
    cr_assert_not_null(at);
    snprintf(buf, n, "%.*s%s%s", (int)(at - text), text, value, at + strlen(key));
}

static ph_status run_neighbour(const IrModule *m, bool with_barrier, int skip, float *y, char *err, size_t errlen)
{
    char ir[2048], tmp[2048], words[16];
    snprintf(words, sizeof words, "%d", skip);
    substitute(tmp, sizeof tmp, NEIGHBOUR_IR, "BARRIER", with_barrier ? BARRIER_CALL : "");
    substitute(ir, sizeof ir, tmp, "SKIP", words);
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, ir, &s, err, errlen), PH_OK, "%s", err);
    static float x[64 * 64];
    ph_arg args[2] = {ph_tensor2((uintptr_t)x, 64, 64), ph_tensor2((uintptr_t)y, 64, 64)};
    unsigned grid[3] = {1, 1, 1};
    ph_status st = cpusim_launch(s, "exchange", grid, args, 2, err, errlen);
    cpusim_free(s);
    return st;
}

/* Lanes of one warp are no exception: the code generator never relies on
 * a warp's lanes running in lockstep. */
Test(cpusim, a_read_of_another_threads_write_needs_a_barrier_even_in_a_warp)
{
    char *diags = NULL;
    IrModule *m = tu_compile("exchange.ph", EXCHANGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    int T = m->funcs[0]->threads;
    cr_assert_geq(T, 32);
    static float y[64 * 64];
    char err[1024];
    cr_assert_eq(run_neighbour(m, true, 0, y, err, sizeof err), PH_OK, "%s", err);
    for (int t = 0; t < T; t++) cr_assert_eq(y[t], (float)((t & ~31) | ((t + 31) & 31)), "Y[%d] = %g", t, y[t]);

    cr_assert_eq(run_neighbour(m, false, 0, y, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "exchange: shared-memory race in block (0, 0, 0): thread 1 reads byte 0 of exchange_scratch "
                          "(in exchange, block %read) that thread 0 wrote (in exchange, block %entry) with no barrier between");
    ir_module_free(m);
}

/* A read of a word no thread wrote gets on the GPU what an earlier block
 * (or kernel) left there: reported at the next barrier or the block's end. */
Test(cpusim, a_read_of_shared_memory_the_block_never_wrote_is_reported)
{
    char *diags = NULL;
    IrModule *m = tu_compile("exchange.ph", EXCHANGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cr_assert_leq(m->funcs[0]->threads, 512);
    static float y[64 * 64];
    char err[1024];
    cr_assert_eq(run_neighbour(m, true, 512, y, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "exchange: block (0, 0, 0) thread 0 reads byte 2172 of exchange_scratch (in exchange, block %read), "
                          "which no thread of the block wrote before");
    ir_module_free(m);
}

/* ---- cp.async: copies in flight until their thread's wait ---- */

/* A module naming kernel name, 64 threads, X and Y f32 matrices: the
 * hand-written LLVM IR below stands in for its code. */
static IrModule *stub_module(const char *name)
{
    char src[512], *diags = NULL;
    snprintf(src, sizeof src,
             "import phobos.lang as ph\n@ph.kernel\n@ph.launch(64)\n"
             "def %s(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][P, Q]):\n"
             "    Y[0:+1, 0:+1] = X[0:+1, 0:+1]\n",
             name);
    IrModule *m = tu_compile("stub.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cr_assert_eq(m->nfuncs, 1);
    cr_assert_str_eq(m->funcs[0]->name, name);
    cr_assert_eq(m->funcs[0]->threads, 64);
    return m;
}

/* tmpl with each "{KEY}" of keys[] replaced by the value of the same index */
static char *expand(const char *tmpl, int n, const char *const keys[], const char *const values[])
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    cr_assert_not_null(f);
    for (const char *p = tmpl; *p;) {
        int k = -1;
        for (int i = 0; *p == '{' && i < n && k < 0; i++)
            if (!strncmp(p + 1, keys[i], strlen(keys[i])) && p[1 + strlen(keys[i])] == '}') k = i;
        if (k < 0) {
            fputc(*p++, f);
            continue;
        }
        fputs(values[k], f);
        p += strlen(keys[k]) + 2;
    }
    fclose(f);
    return out;
}

/* Runs kernel entry of m, given as LLVM IR, over blocks blocks; X and Y by
 * their dims. */
static ph_status run_ir(const IrModule *m, const char *ir, unsigned blocks, float *x, int xm, int xn, float *y, int ym, int yn,
                        char *err, size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, ir, &s, err, errlen), PH_OK, "%s", err);
    ph_arg args[2] = {ph_tensor2((uintptr_t)x, xm, xn), ph_tensor2((uintptr_t)y, ym, yn)};
    unsigned grid[3] = {blocks, 1, 1};
    ph_status st = cpusim_launch(s, m->funcs[0]->name, grid, args, 2, err, errlen);
    cpusim_free(s);
    return st;
}

#define WAIT_GROUP_1 "call void @llvm.nvvm.cp.async.wait.group(i32 1)"
#define WAIT_ALL "call void @llvm.nvvm.cp.async.wait.all()"

/* Double buffering as a pipelined K loop does it: each of the 64 threads
 * copies 16 bytes of each of 4 stages (X row 64k + t, 4 floats) to its
 * slot of buffer k & 1, the next stage's copy issued before the wait for
 * this one (wait_group 1); after a barrier, each thread sums its
 * neighbour's slot (thread t + DELTA) into Y[k][t], then a barrier before
 * the buffer is refilled. The copy past the last stage reads nothing
 * (src_size 0, its source past X) and is waited for at the end. */
static const char *PIPE_IR =
    "@pipe_buf = internal addrspace(3) global [128 x <4 x float>] undef, align 16\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.commit.group()\n"
    "declare void @llvm.nvvm.cp.async.wait.group(i32 immarg)\n"
    "declare void @llvm.nvvm.cp.async.wait.all()\n"
    "define ptx_kernel void @pipe(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %src0 = getelementptr <4 x float>, ptr addrspace(1) %X, i32 %t\n"
    "  %dst0 = getelementptr <4 x float>, ptr addrspace(3) @pipe_buf, i32 %t\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %dst0, ptr addrspace(1) %src0, i32 16)\n"
    "  call void @llvm.nvvm.cp.async.commit.group()\n"
    "  %nb.wide = add i32 %t, {DELTA}\n"
    "  %nb = and i32 %nb.wide, 63\n"
    "  br label %issue\n"
    "issue:\n"
    "  %k = phi i32 [ 0, %entry ], [ %k1, %use ]\n"
    "  %k1 = add i32 %k, 1\n"
    "  %more = icmp ult i32 %k1, 4\n"
    "  %size = select i1 %more, i32 16, i32 0\n"
    "  %srow.base = mul i32 %k1, 64\n"
    "  %srow = add i32 %srow.base, %t\n"
    "  %src = getelementptr <4 x float>, ptr addrspace(1) %X, i32 %srow\n"
    "  %dhalf = and i32 %k1, 1\n"
    "  %dslot.base = mul i32 %dhalf, 64\n"
    "  %dslot = add i32 %dslot.base, %t\n"
    "  %dst = getelementptr <4 x float>, ptr addrspace(3) @pipe_buf, i32 %dslot\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %dst, ptr addrspace(1) %src, i32 %size)\n"
    "  call void @llvm.nvvm.cp.async.commit.group()\n"
    "  br label %land\n"
    "land:\n"
    "  {WAIT}\n"
    "  br label %use\n"
    "use:\n"
    "  {BARRIER1}\n"
    "  %rhalf = and i32 %k, 1\n"
    "  %rslot.base = mul i32 %rhalf, 64\n"
    "  %rslot = add i32 %rslot.base, %nb\n"
    "  %rp = getelementptr <4 x float>, ptr addrspace(3) @pipe_buf, i32 %rslot\n"
    "  %v = load <4 x float>, ptr addrspace(3) %rp, align 16\n"
    "  %v0 = extractelement <4 x float> %v, i32 0\n"
    "  %v1 = extractelement <4 x float> %v, i32 1\n"
    "  %v2 = extractelement <4 x float> %v, i32 2\n"
    "  %v3 = extractelement <4 x float> %v, i32 3\n"
    "  %s01 = fadd float %v0, %v1\n"
    "  %s012 = fadd float %s01, %v2\n"
    "  %sum = fadd float %s012, %v3\n"
    "  %yi.base = mul i32 %k, 64\n"
    "  %yi = add i32 %yi.base, %t\n"
    "  %yp = getelementptr float, ptr addrspace(1) %Y, i32 %yi\n"
    "  store float %sum, ptr addrspace(1) %yp, align 4\n"
    "  {BARRIER2}\n"
    "  %last = icmp eq i32 %k1, 4\n"
    "  br i1 %last, label %done, label %issue\n"
    "done:\n"
    "  {FINAL}\n"
    "  ret void\n"
    "}\n";

typedef struct { const char *delta, *wait, *barrier1, *barrier2, *final; } PipeVariant;

static const PipeVariant PIPE_RIGHT = {"1", WAIT_GROUP_1, BARRIER_CALL, BARRIER_CALL, WAIT_ALL};

/* Runs the pipe kernel as v has it over blocks blocks; with PH_OK, checks Y. */
static ph_status run_pipe(PipeVariant v, unsigned blocks, char *err, size_t errlen)
{
    IrModule *m = stub_module("pipe");
    static const char *const keys[5] = {"DELTA", "WAIT", "BARRIER1", "BARRIER2", "FINAL"};
    const char *values[5] = {v.delta, v.wait, v.barrier1, v.barrier2, v.final};
    char *ir = expand(PIPE_IR, 5, keys, values);
    static float x[4 * 64 * 4], y[4 * 64];
    for (int i = 0; i < 4 * 64 * 4; i++) x[i] = (float)(i % 29) * 0.5f - 3;
    for (int i = 0; i < 4 * 64; i++) y[i] = -1;
    ph_status st = run_ir(m, ir, blocks, x, 4 * 64, 4, y, 4, 64, err, errlen);
    int delta = atoi(v.delta);
    for (int k = 0; st == PH_OK && k < 4; k++)
        for (int t = 0; t < 64; t++) {
            const float *row = &x[(k * 64 + (t + delta) % 64) * 4];
            cr_assert_eq(y[k * 64 + t], row[0] + row[1] + row[2] + row[3], "Y[%d][%d] = %g", k, t, y[k * 64 + t]);
        }
    free(ir);
    ir_module_free(m);
    return st;
}

Test(cpusim, a_double_buffered_cp_async_pipeline_runs_right)
{
    char err[1024];
    cr_assert_eq(run_pipe(PIPE_RIGHT, 2, err, sizeof err), PH_OK, "%s", err);
    PipeVariant back = PIPE_RIGHT;
    back.delta = "63";
    cr_assert_eq(run_pipe(back, 2, err, sizeof err), PH_OK, "%s", err);
}

/* The copy lands some time before the wait: reading its destination
 * earlier, even in the thread that issued it, may see the old bytes. */
Test(cpusim, a_read_of_a_cp_async_destination_before_the_wait_is_a_race)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.delta = "0";
    v.wait = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "no wait, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 0 reads byte 0 of pipe_buf (in pipe, block %use) "
                          "that thread 0's cp.async (in pipe, block %entry) may still be writing: no cp.async wait of thread 0 "
                          "covers it yet");

    /* wait_group 2 lets both stages in flight stay there */
    v = PIPE_RIGHT;
    v.wait = "call void @llvm.nvvm.cp.async.wait.group(i32 2)";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "a wait for too little, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 0 reads byte 16 of pipe_buf (in pipe, block %use) "
                          "that thread 1's cp.async (in pipe, block %entry) may still be writing: no cp.async wait of thread 1 "
                          "covers it yet");
}

/* The wait makes a copy visible to its own thread only: the others need
 * a barrier after it. Each thread reads the previous thread's slot, which
 * that thread's wait filled earlier in the same epoch. */
Test(cpusim, a_read_of_another_threads_cp_async_needs_a_barrier_after_the_wait)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.delta = "63";
    v.barrier1 = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "no barrier after the wait, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 1 reads byte 0 of pipe_buf (in pipe, block %use) "
                          "that thread 0 wrote (in pipe, block %land, the cp.async.wait.group completing its cp.async) with no "
                          "barrier between");
}

/* Without the barrier that ends each stage, thread 1 refills the slot
 * thread 0 has just read. */
Test(cpusim, a_cp_async_into_a_buffer_another_thread_reads_needs_a_barrier_before)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.barrier2 = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "no barrier before the refill, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 1's cp.async writes byte 16 of pipe_buf (in pipe, "
                          "block %issue) that thread 0 read (in pipe, block %use) with no barrier between");
}

Test(cpusim, a_cp_async_never_waited_for_fails_the_launch)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.final = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "the last copy never waited for, and no error");
    cr_expect_str_eq(err, "pipe: block (0, 0, 0) thread 0 ends with a cp.async (in pipe, block %issue) never waited for");
}

/* Every form of cp.async, each thread t to its 96-byte slot of fill_buf
 * from the same bytes of X: cg.16.s with src_size t % 17, ca.16.s with
 * (t + 8) % 17, ca.16, cg.16, ca.8.s with t % 9, ca.8, ca.4.s with t % 5,
 * ca.4; a copy that reads nothing is given a source that points nowhere.
 * After wait_all each thread stores the first 88 bytes of its slot to Y. */
static const char *FILL_IR =
    "@fill_buf = internal addrspace(3) global [6144 x i8] undef, align 16\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.8.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.16(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.8(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.wait.all()\n"
    "define ptx_kernel void @fill(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %base = {BASE}\n"
    "  %d0 = getelementptr i8, ptr addrspace(3) @fill_buf, i32 %base\n"
    "  %s0 = getelementptr i8, ptr addrspace(1) %X, i32 %base\n"
    "  %n0 = {SIZE0}\n"
    "  %z0 = icmp eq i32 %n0, 0\n"
    "  %w0 = select i1 %z0, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s0\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %d0, ptr addrspace(1) %w0, i32 %n0)\n"
    "  %d16 = getelementptr i8, ptr addrspace(3) %d0, i32 16\n"
    "  %s16 = getelementptr i8, ptr addrspace(1) %s0, i32 16\n"
    "  %t8 = add i32 %t, 8\n"
    "  %n16 = urem i32 %t8, 17\n"
    "  %z16 = icmp eq i32 %n16, 0\n"
    "  %w16 = select i1 %z16, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s16\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.16.s(ptr addrspace(3) %d16, ptr addrspace(1) %w16, i32 %n16)\n"
    "  %d32 = getelementptr i8, ptr addrspace(3) %d0, i32 {OFF32}\n"
    "  %s32 = getelementptr i8, ptr addrspace(1) %s0, i32 {OFF32}\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.16(ptr addrspace(3) %d32, ptr addrspace(1) %s32)\n"
    "  %d48 = getelementptr i8, ptr addrspace(3) %d0, i32 48\n"
    "  %s48 = getelementptr i8, ptr addrspace(1) %s0, i32 48\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %d48, ptr addrspace(1) %s48)\n"
    "  %d64 = getelementptr i8, ptr addrspace(3) %d0, i32 64\n"
    "  %s64 = getelementptr i8, ptr addrspace(1) %s0, i32 64\n"
    "  %n64 = urem i32 %t, 9\n"
    "  %z64 = icmp eq i32 %n64, 0\n"
    "  %w64 = select i1 %z64, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s64\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.8.s(ptr addrspace(3) %d64, ptr addrspace(1) %w64, i32 %n64)\n"
    "  %d72 = getelementptr i8, ptr addrspace(3) %d0, i32 72\n"
    "  %s72 = getelementptr i8, ptr addrspace(1) %s0, i32 72\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.8(ptr addrspace(3) %d72, ptr addrspace(1) %s72)\n"
    "  %d80 = getelementptr i8, ptr addrspace(3) %d0, i32 80\n"
    "  %s80 = getelementptr i8, ptr addrspace(1) %s0, i32 80\n"
    "  %n80 = urem i32 %t, 5\n"
    "  %z80 = icmp eq i32 %n80, 0\n"
    "  %w80 = select i1 %z80, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s80\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3) %d80, ptr addrspace(1) %w80, i32 %n80)\n"
    "  %d84 = getelementptr i8, ptr addrspace(3) %d0, i32 84\n"
    "  %s84 = getelementptr i8, ptr addrspace(1) %s0, i32 84\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %d84, ptr addrspace(1) %s84)\n"
    "  call void @llvm.nvvm.cp.async.wait.all()\n"
    "  br label %out\n"
    "out:\n"
    "  %v = load <22 x i32>, ptr addrspace(3) %d0, align 16\n"
    "  %yo = mul i32 %t, 88\n"
    "  %y = getelementptr i8, ptr addrspace(1) %Y, i32 %yo\n"
    "  store <22 x i32> %v, ptr addrspace(1) %y, align 4\n"
    "  ret void\n"
    "}\n";

#define FILL_BASE "mul i32 %t, 96"
#define FILL_SIZE0 "urem i32 %t, 17"

/* Runs the fill kernel with BASE, SIZE0 and OFF32 (the ca.16 copy's
 * offset in the slot) as given, X as xrows of its 64 rows of 96 bytes;
 * with PH_OK, checks every byte of Y. */
static ph_status run_fill(const char *base, const char *size0, const char *off32, int xrows, char *err, size_t errlen)
{
    IrModule *m = stub_module("fill");
    static const char *const keys[3] = {"BASE", "SIZE0", "OFF32"};
    const char *values[3] = {base, size0, off32};
    char *ir = expand(FILL_IR, 3, keys, values);
    static float xf[64 * 24], yf[64 * 22];
    unsigned char *x = (unsigned char *)xf, *y = (unsigned char *)yf;
    for (int i = 0; i < (int)sizeof xf; i++) x[i] = (unsigned char)(1 + i % 251);
    memset(yf, 0xee, sizeof yf);
    ph_status st = run_ir(m, ir, 1, xf, xrows, 24, yf, 64, 22, err, errlen);
    static const int off[8] = {0, 16, 32, 48, 64, 72, 80, 84}, bytes[8] = {16, 16, 16, 16, 8, 8, 4, 4};
    for (int t = 0; st == PH_OK && t < 64; t++) {
        int read[8] = {t % 17, (t + 8) % 17, 16, 16, t % 9, 8, t % 5, 4};
        for (int c = 0; c < 8; c++)
            for (int i = 0; i < bytes[c]; i++) {
                int at = off[c] + i;
                unsigned char want = i < read[c] ? x[t * 96 + at] : 0;
                cr_assert_eq(y[t * 88 + at], want, "thread %d, byte %d of its slot: %d, not %d", t, at, y[t * 88 + at], want);
            }
    }
    free(ir);
    ir_module_free(m);
    return st;
}

/* Only src_size bytes are read, the rest of the copy zeros; with src_size
 * 0 nothing is read, wherever the source points. */
Test(cpusim, every_cp_async_form_copies_and_zero_fills)
{
    char err[1024];
    cr_assert_eq(run_fill(FILL_BASE, FILL_SIZE0, "32", 64, err, sizeof err), PH_OK, "%s", err);
}

Test(cpusim, a_bad_cp_async_is_refused_with_a_message)
{
    char err[1024];
    /* X half as long as the copies take: thread 32's first copy reads 15 bytes past it */
    cr_assert_eq(run_fill(FILL_BASE, FILL_SIZE0, "32", 32, err, sizeof err), PH_ERR_INVALID);
    cr_expect(strstr(err, "fill: block (0, 0, 0) thread 32's cp.async (in fill, block %entry) reads 15 bytes at ") &&
              strstr(err, ", outside every tensor argument"), "%s", err);

    cr_assert_eq(run_fill(FILL_BASE, "add i32 %t, 0", "32", 64, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "fill: block (0, 0, 0) thread 17's cp.async (in fill, block %entry) has src_size 17, past its 16 "
                          "bytes");

    cr_assert_eq(run_fill("add i32 %t, 8", FILL_SIZE0, "32", 64, err, sizeof err), PH_ERR_INVALID);
    cr_expect(strstr(err, "fill: block (0, 0, 0) thread 0's cp.async (in fill, block %entry) of 16 bytes to ") &&
              strstr(err, ", not 16-byte aligned"), "%s", err);
}

/* The PTX ISA orders no two cp.asyncs without a wait between, even of one
 * thread: the ca.16 copy moved onto the ca.16.s one's bytes. */
Test(cpusim, two_cp_asyncs_to_one_byte_in_flight_are_a_race)
{
    char err[1024];
    cr_assert_eq(run_fill(FILL_BASE, FILL_SIZE0, "16", 64, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "fill: shared-memory race in block (0, 0, 0): thread 0's cp.async writes byte 16 of fill_buf (in fill, "
                          "block %entry) that thread 0's cp.async (in fill, block %entry) may still be writing: no cp.async wait "
                          "of thread 0 covers it yet");
}

/* ---- mbarriers between threads (cpusim_order.c) ---- */

#define TRY_WAIT(bar, parity, label, next)                                                                                \
    label ":\n"                                                                                                           \
    "  %" label "r = call i32 asm sideeffect \"{\\0A.reg .pred p;\\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$1], "  \
    "$2;\\0Aselp.b32 $0, 1, 0, p;\\0A}\", \"=r,r,r,~{memory}\"(i32 ptrtoint (ptr addrspace(3) " bar " to i32), i32 " parity \
    ")\n"                                                                                                                 \
    "  %" label "ok = icmp ne i32 %" label "r, 0\n"                                                                       \
    "  br i1 %" label "ok, label %" next ", label %" label "\n"

#define HAND_FULL "@hand_bar"
#define HAND_EMPTY "getelementptr (i64, ptr addrspace(3) @hand_bar, i32 1)"

/* A producer and its consumers as a warp-specialized kernel hands a slot
 * over, without a block barrier: thread 32 stores X[32k .. 32k + 31] into
 * the slot and arrives on the full mbarrier (round k = 0, 1); threads 0-31
 * wait for its phase k, read word t + 1 of the slot ({CONSUME0}: the read
 * and then the arrival on the empty mbarrier, which thread 32 waits for
 * before round 1) and store the two rounds' sum to Y[t]. */
static const char *HANDOFF_IR =
    "@hand_buf = internal addrspace(3) global [32 x float] undef, align 16\n"
    "@hand_bar = internal addrspace(3) global [2 x i64] undef, align 8\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)\n"
    "declare i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3))\n"
    "define ptx_kernel void @hand(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %is0 = icmp eq i32 %t, 0\n"
    "  br i1 %is0, label %init, label %go\n"
    "init:\n"
    "  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) " HAND_FULL ", i32 1)\n"
    "  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) " HAND_EMPTY ", i32 32)\n"
    "  br label %go\n"
    "go:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %prod = icmp eq i32 %t, 32\n"
    "  br i1 %prod, label %round0, label %notprod\n"
    "notprod:\n"
    "  %cons = icmp ult i32 %t, 32\n"
    "  br i1 %cons, label %fw0, label %done\n"
    /* the producer: two rounds of 32 stores, each then an arrival */
    "round0:\n"
    "  br label %st0\n"
    "st0:\n"
    "  %i0 = phi i32 [ 0, %round0 ], [ %i0n, %st0 ]\n"
    "  %x0p = getelementptr float, ptr addrspace(1) %X, i32 %i0\n"
    "  %x0 = load float, ptr addrspace(1) %x0p\n"
    "  %b0p = getelementptr float, ptr addrspace(3) @hand_buf, i32 %i0\n"
    "  store float %x0, ptr addrspace(3) %b0p\n"
    "  %i0n = add i32 %i0, 1\n"
    "  %i0c = icmp ult i32 %i0n, 32\n"
    "  br i1 %i0c, label %st0, label %pub0\n"
    "pub0:\n"
    "  %a0 = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) " HAND_FULL ")\n"
    "  br label %{EMPTY_WAIT}\n"
    TRY_WAIT(HAND_EMPTY, "0", "ew", "round1")
    "round1:\n"
    "  br label %st1\n"
    "st1:\n"
    "  %i1 = phi i32 [ 0, %round1 ], [ %i1n, %st1 ]\n"
    "  %i1x = add i32 %i1, 32\n"
    "  %x1p = getelementptr float, ptr addrspace(1) %X, i32 %i1x\n"
    "  %x1 = load float, ptr addrspace(1) %x1p\n"
    "  %b1p = getelementptr float, ptr addrspace(3) @hand_buf, i32 %i1\n"
    "  store float %x1, ptr addrspace(3) %b1p\n"
    "  %i1n = add i32 %i1, 1\n"
    "  %i1c = icmp ult i32 %i1n, 32\n"
    "  br i1 %i1c, label %st1, label %pub1\n"
    "pub1:\n"
    "  %a1 = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) " HAND_FULL ")\n"
    "  br label %done\n"
    /* the consumers */
    TRY_WAIT(HAND_FULL, "0", "fw0", "use0")
    "use0:\n"
    "  %n = add i32 %t, 1\n"
    "  %w = and i32 %n, 31\n"
    "  %r0p = getelementptr float, ptr addrspace(3) @hand_buf, i32 %w\n"
    "{CONSUME0}"
    "  br label %fw1\n"
    TRY_WAIT(HAND_FULL, "1", "fw1", "use1")
    "use1:\n"
    "  %v1 = load float, ptr addrspace(3) %r0p\n"
    "  %sum = fadd float %v0, %v1\n"
    "  %yp = getelementptr float, ptr addrspace(1) %Y, i32 %t\n"
    "  store float %sum, ptr addrspace(1) %yp\n"
    "  br label %done\n"
    "done:\n"
    "  ret void\n"
    "}\n";

#define READ_THEN_RELEASE \
    "  %v0 = load float, ptr addrspace(3) %r0p\n  %e0 = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) " HAND_EMPTY ")\n"
#define RELEASE_THEN_READ \
    "  %e0 = call i64 @llvm.nvvm.mbarrier.arrive.shared(ptr addrspace(3) " HAND_EMPTY ")\n  %v0 = load float, ptr addrspace(3) %r0p\n"

static ph_status run_handoff(const char *empty_wait, const char *consume0, char *err, size_t errlen)
{
    IrModule *m = stub_module("hand");
    static const char *const keys[2] = {"EMPTY_WAIT", "CONSUME0"};
    const char *values[2] = {empty_wait, consume0};
    char *ir = expand(HANDOFF_IR, 2, keys, values);
    static float x[64], y[32];
    for (int i = 0; i < 64; i++) x[i] = (float)i * 0.5f;
    for (int i = 0; i < 32; i++) y[i] = -1;
    ph_status st = run_ir(m, ir, 1, x, 64, 1, y, 32, 1, err, errlen);
    for (int t = 0; st == PH_OK && t < 32; t++) cr_assert_eq(y[t], x[(t + 1) % 32] + x[32 + (t + 1) % 32], "Y[%d] = %g", t, y[t]);
    free(ir);
    ir_module_free(m);
    return st;
}

/* Right: the stores before the full arrival, the reads before the empty
 * one, each wait seeing the other side's phase: no race, though no block
 * barrier orders a thing after the first. */
Test(cpusim, an_mbarrier_handoff_orders_the_threads_it_hands_between)
{
    char err[1024];
    cr_expect_eq(run_handoff("ew", READ_THEN_RELEASE, err, sizeof err), PH_OK, "%s", err);
}

/* The consumers release the slot before they read it: the producer's
 * second round overwrites what they read after their arrival. */
Test(cpusim, a_release_before_the_read_is_a_race)
{
    char err[1024];
    cr_assert_eq(run_handoff("ew", RELEASE_THEN_READ, err, sizeof err), PH_ERR_INVALID, "release before the read, no race seen");
    cr_expect(strstr(err, "hand: shared-memory race in block (0, 0, 0): thread 32 writes byte ") &&
              strstr(err, "of hand_buf (in hand, block %st1) that thread ") && strstr(err, "read (in hand, block %use0)"), "%s", err);
}

/* The producer refills without waiting for the empty barrier. Its first
 * round's stores are seen by no consumer before its second's. */
Test(cpusim, a_refill_without_the_empty_wait_is_reported)
{
    char err[1024];
    cr_assert_eq(run_handoff("round1", READ_THEN_RELEASE, err, sizeof err), PH_ERR_INVALID, "no empty wait, no error");
    cr_log_info("%s", err);
    cr_expect(strstr(err, "deadlock") || strstr(err, "race"), "%s", err);
}
