/* cpusim.c: the CPU executor of generated kernels (see cpusim.h).
 *
 * Loading: codegen_emit's LLVM IR is parsed into a fresh context and
 * retargeted to the host; each kernel (PTX_Kernel calling convention)
 * gets the C convention and an entry trampoline that reads its parameters
 * from an array of 64-bit slots; each llvm.nvvm.* declaration, and those of
 * llvm.maxnum/minnum.f32 (PTX max.f32 and min.f32, which order -0.0 below
 * +0.0 where the host's instructions need not), is replaced
 * by a small IR function that stores its arguments to a slot array and
 * calls sim_intrinsic (no aggregate or vector crosses into C by value);
 * a contract fmul and the fadd or fsub of its block that uses it become
 * one llvm.fma.f32, as the NVPTX back end fuses them (fma.rn.f32).
 * MCJIT compiles the module; the half and bfloat libcalls the x86 back
 * end emits are provided here (round to nearest even, compiler/base/half.h).
 *
 * Running: a block's threads are ucontext fibers, one stack each. The
 * scheduler resumes every ready thread in tid order; a thread runs until
 * it exits or posts itself at a barrier or a warp collective. When none
 * is ready, warps whose lanes all posted the same collective compute it
 * (PTX ISA fragment layouts) and resume; else, when every live thread is
 * at the barrier, all resume (an exited thread no longer counts, as with
 * bar.sync); anything else is a deadlock. Shared memory (the module's
 * addrspace(3) globals, a kernel's extern array of dynamic shared memory
 * given the size its launch would ask for) is filled with 0xff bytes, a NaN in every float
 * format, before each block, so reading what no thread wrote shows.
 *
 * Races: the schedule is sequential, so a missing barrier would go
 * unseen. Every load and store through an addrspace(3) pointer (and each
 * ldmatrix row) reports itself to the executor first; a shadow of every
 * shared byte keeps its last writer and its readers with the barrier epoch
 * of each, and a read of another thread's write, a write over another
 * thread's read, or two threads' writes within one epoch end the launch;
 * so does a read of a byte no thread of the block wrote before it (on the
 * GPU, what an earlier block left there), at the epoch's end.
 *
 * cp.async: a copy's source is read at issue, its destination written at
 * the wait of its thread that covers it (the GPU writes it some time in
 * between). Until then the destination is in flight: any access of it, by
 * any thread, its own included, is a race. At the wait the bytes count as
 * written there by the issuing thread, so another thread's read needs a
 * barrier after the wait; a thread that ends with copies in flight fails
 * the launch. */
#define _GNU_SOURCE
#include "cpusim.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "base/half.h"
#include "base/util.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

/* ---- the intrinsics, by the id the IR wrappers pass ---- */

enum {
    IN_TID_X, IN_TID_Y, IN_TID_Z, IN_CTAID_X, IN_CTAID_Y, IN_CTAID_Z, IN_NCTAID_X, IN_NCTAID_Y, IN_NCTAID_Z,
    IN_BARRIER, IN_SHFL_I32, IN_SHFL_F32, IN_LDM_X4, IN_LDM_X2, IN_LDM_X2_TRANS, IN_MMA_F16, IN_MMA_BF16,
    IN_EX2, IN_EX2_FTZ, IN_LG2, IN_RSQRT, IN_FMAX, IN_FMIN,
    /* cp.async, each size with and without src_size; then the group operations */
    IN_CP_CA4, IN_CP_CA8, IN_CP_CA16, IN_CP_CG16, IN_CP_CA4_S, IN_CP_CA8_S, IN_CP_CA16_S, IN_CP_CG16_S,
    IN_CP_COMMIT, IN_CP_WAIT_GROUP, IN_CP_WAIT_ALL, IN_LDM_X4_TRANS, IN_COUNT
};

static const char *const intrinsic_names[IN_COUNT] = {
    "llvm.nvvm.read.ptx.sreg.tid.x", "llvm.nvvm.read.ptx.sreg.tid.y", "llvm.nvvm.read.ptx.sreg.tid.z",
    "llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y", "llvm.nvvm.read.ptx.sreg.ctaid.z",
    "llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z",
    "llvm.nvvm.barrier0", "llvm.nvvm.shfl.sync.bfly.i32", "llvm.nvvm.shfl.sync.bfly.f32",
    "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3",
    "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3", "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
    "llvm.nvvm.mma.m16n8k16.row.col.bf16", "llvm.nvvm.ex2.approx.f", "llvm.nvvm.ex2.approx.ftz.f",
    "llvm.nvvm.lg2.approx.f", "llvm.nvvm.rsqrt.approx.f", "llvm.maxnum.f32", "llvm.minnum.f32", "llvm.nvvm.cp.async.ca.shared.global.4", "llvm.nvvm.cp.async.ca.shared.global.8",
    "llvm.nvvm.cp.async.ca.shared.global.16", "llvm.nvvm.cp.async.cg.shared.global.16",
    "llvm.nvvm.cp.async.ca.shared.global.4.s", "llvm.nvvm.cp.async.ca.shared.global.8.s",
    "llvm.nvvm.cp.async.ca.shared.global.16.s", "llvm.nvvm.cp.async.cg.shared.global.16.s",
    "llvm.nvvm.cp.async.commit.group", "llvm.nvvm.cp.async.wait.group", "llvm.nvvm.cp.async.wait.all",
    "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3",
};

static bool is_async_copy(int id) { return id >= IN_CP_CA4 && id <= IN_CP_CG16_S; }
static bool is_async_wait(int id) { return id == IN_CP_WAIT_GROUP || id == IN_CP_WAIT_ALL; }

/* A cp.async's size in bytes, and whether it takes a src_size operand. */
static unsigned async_copy_bytes(int id)
{
    static const unsigned bytes[4] = {4, 8, 16, 16};
    return bytes[(id - IN_CP_CA4) % 4];
}
static bool async_copy_has_src_size(int id) { return id >= IN_CP_CA4_S; }

/* ---- the loaded module ---- */

typedef struct {
    char *name;
    int threads, nparams;
    IrParam *params;                       /* kinds and ranks only (names not kept) */
    void (*entry)(const uint64_t *slots);
} SimKernel;

/* The race shadow of one shared byte: who wrote it last and who read it,
 * each in which barrier epoch, and the access sites (indexes into
 * cpusim.sites). Two readers are kept, so a writer always finds one that
 * is not itself when there is one. copier is the thread whose cp.async to
 * the byte is in flight (issued, no wait of that thread has covered it
 * yet), NO_THREAD when none. */
#define NO_THREAD 0xffff
typedef struct {
    uint64_t w_epoch, r_epoch;
    uint16_t writer, reader[2], copier;
    int32_t w_site, r_site[2], c_site;
} ByteShadow;

typedef struct { char *name; unsigned char *addr; size_t bytes; ByteShadow *shadow; } SharedArea;

#define STACK_BYTES (1u << 20)
#define PAGE 4096u

struct cpusim {
    LLVMContextRef ctx;
    LLVMExecutionEngineRef ee;
    SimKernel *kernels;
    int nkernels;
    SharedArea *shared;
    int nshared;
    unsigned char *stacks;                 /* nstacks fiber stacks, each above a guard page */
    int nstacks;
    char **sites;                          /* each instrumented access: "function, block %name" */
    int nsites;
    uint64_t epoch;                        /* the barrier epoch now; a new one per block and barrier */
};

/* ---- a launch in progress ---- */

typedef enum { TH_READY, TH_BARRIER, TH_WARP, TH_EXITED } ThreadState;

/* A cp.async in flight: its source was read at issue (the GPU reads it
 * some time before the wait; another thread's store to it meanwhile would
 * be a global-memory race, not modelled); data reaches shared memory when
 * a wait of its thread covers group. */
typedef struct {
    SharedArea *area;
    size_t off;
    unsigned bytes;
    uint32_t group;
    int32_t site;
    unsigned char data[16];
} AsyncCopy;

typedef struct {
    ucontext_t ctx;
    ThreadState st;
    int op;                 /* the collective posted */
    const uint64_t *in;     /* its arguments, one per slot */
    uint64_t *out;          /* its results */
    AsyncCopy *copies;      /* its cp.asyncs in flight, in issue order */
    int ncopies, copies_cap;
    uint32_t groups;        /* cp.async groups committed; the open one's number */
    int32_t async_site;     /* the site of the cp.async operation it is at */
} Thread;

/* The bytes a tensor argument spans, by its dims: what a cp.async may read. */
typedef struct { uint64_t lo, hi; } TensorSpan;

typedef struct {
    cpusim *s;
    const SimKernel *k;
    const uint64_t *slots;
    unsigned grid[3], block[3];
    int T, cur;
    Thread *th;
    ucontext_t sched;
    bool in_thread;         /* a fiber runs: a memory fault is the kernel's */
    uint64_t block_epoch;   /* the epoch the block started in: a write before it is another block's */
    struct {                /* the first read, this epoch, of a byte the block had not written */
        bool seen;
        int thread;
        size_t byte;
        const SharedArea *area;
        int32_t site;
    } unwritten;
    TensorSpan tensors[256];
    int ntensors;
    bool failed;
    char msg[640];
} Launch;

/* The JIT-compiled code reaches the executor through plain C calls, so
 * the launch running now is a global. Launches do not nest. */
static Launch *current;

static void launch_fail(Launch *L, const char *fmt, ...)
{
    if (L->failed) return;
    L->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->msg, sizeof L->msg, fmt, ap);
    va_end(ap);
}

static void yield_to_scheduler(Launch *L, Thread *me) { swapcontext(&me->ctx, &L->sched); }

static uint32_t lo32(uint64_t v) { return (uint32_t)v; }
static float slot_f32(uint64_t v) { return ph_bits_f32(lo32(v)); }
static uint64_t f32_slot(float f) { return ph_f32_bits(f); }

/* llvm.maxnum / minnum.f32 as NVPTX lowers them, PTX max.f32 / min.f32 as
 * the ISA defines them: a NaN operand gives the
 * other (NaN when both are), and +0.0 > -0.0. */
static float ptx_max_min(float a, float b, bool max)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == b) return (signbit(a) != 0) == max ? b : a;
    return (a > b) == max ? a : b;
}

static bool issue_async_copy(Launch *L, int t, int id, const uint64_t *in);
static void wait_async_copies(Launch *L, int t, uint32_t pending);

/* A subnormal as the .ftz forms of PTX take and give it: a zero of its sign. */
static float flush_subnormal(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

/* Called by the IR wrappers: in[] holds the intrinsic's arguments, out[]
 * receives its results (an aggregate's members in order). */
static void sim_intrinsic(int32_t id, const uint64_t *in, uint64_t *out)
{
    Launch *L = current;
    Thread *me = &L->th[L->cur];
    switch (id) {
    case IN_TID_X: out[0] = (uint64_t)L->cur; return;
    case IN_TID_Y: case IN_TID_Z: out[0] = 0; return;
    case IN_CTAID_X: case IN_CTAID_Y: case IN_CTAID_Z: out[0] = L->block[id - IN_CTAID_X]; return;
    case IN_NCTAID_X: case IN_NCTAID_Y: case IN_NCTAID_Z: out[0] = L->grid[id - IN_NCTAID_X]; return;
    case IN_EX2: out[0] = f32_slot(exp2f(slot_f32(in[0]))); return;
    case IN_EX2_FTZ: out[0] = f32_slot(flush_subnormal(exp2f(flush_subnormal(slot_f32(in[0]))))); return;
    case IN_LG2: out[0] = f32_slot(log2f(slot_f32(in[0]))); return;
    case IN_RSQRT: out[0] = f32_slot(1.0f / sqrtf(slot_f32(in[0]))); return;
    case IN_FMAX: case IN_FMIN: out[0] = f32_slot(ptx_max_min(slot_f32(in[0]), slot_f32(in[1]), id == IN_FMAX)); return;
    case IN_BARRIER:
        me->st = TH_BARRIER;
        yield_to_scheduler(L, me);
        return;
    case IN_CP_COMMIT: me->groups++; return;
    case IN_CP_WAIT_GROUP: wait_async_copies(L, L->cur, lo32(in[0])); return;
    case IN_CP_WAIT_ALL:   /* commit_group, then wait_group 0 */
        me->groups++;
        wait_async_copies(L, L->cur, 0);
        return;
    default:
        if (is_async_copy(id)) {
            /* a bad copy abandons the block, as a race does */
            if (!issue_async_copy(L, L->cur, id, in)) setcontext(&L->sched);
            return;
        }
        me->st = TH_WARP;
        me->op = id;
        me->in = in;
        me->out = out;
        yield_to_scheduler(L, me);
        return;
    }
}

/* ---- shared-memory races ---- */

/* ACCESS_COPY is a cp.async's issue: checked as a write, but what it
 * leaves is the copy in flight, the write coming at its wait. */
enum { ACCESS_READ, ACCESS_WRITE, ACCESS_COPY };

static const char *access_verb(int kind) { return kind == ACCESS_READ ? " reads" : kind == ACCESS_WRITE ? " writes" : "'s cp.async writes"; }

/* Starts a barrier epoch: what threads did before no longer races with
 * what they do next. Epoch 0 is never (a fresh shadow). */
static void next_epoch(cpusim *s) { s->epoch++; }

static const char *site_name(const cpusim *s, int32_t site)
{
    return site >= 0 && site < s->nsites ? s->sites[site] : "ldmatrix";
}

static SharedArea *shared_area_of(cpusim *s, uint64_t addr, uint64_t bytes)
{
    for (int i = 0; i < s->nshared; i++) {
        SharedArea *a = &s->shared[i];
        if (addr >= (uintptr_t)a->addr && bytes <= a->bytes && addr - (uintptr_t)a->addr <= a->bytes - bytes) return a;
    }
    return NULL;
}

static void race_fail(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, int other, bool other_wrote,
                      int32_t other_site)
{
    launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that thread %d %s (in %s) "
                "with no barrier between",
                L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name,
                site_name(L->s, site), other, other_wrote ? "wrote" : "read", site_name(L->s, other_site));
}

/* An access of a byte a cp.async is still copying to: on the GPU the copy
 * lands any time before its thread's wait, so even its own thread may not
 * touch the byte until then. */
static void in_flight_fail(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, const ByteShadow *b)
{
    launch_fail(L, "shared-memory race in block (%u, %u, %u): thread %d%s byte %zu of %s (in %s) that thread %d's cp.async "
                "(in %s) may still be writing: no cp.async wait of thread %d covers it yet",
                L->block[0], L->block[1], L->block[2], t, access_verb(kind), off, a->name, site_name(L->s, site), b->copier,
                site_name(L->s, b->c_site), b->copier);
}

/* Records thread t's access of bytes bytes at addr; false, the launch
 * failed, on a race or an access outside shared memory. Same-warp
 * accesses are no exception: the code generator never relies on a warp
 * running in lockstep. */
static bool check_shared_access(Launch *L, int t, uint64_t addr, uint64_t bytes, int kind, int32_t site)
{
    cpusim *s = L->s;
    SharedArea *a = shared_area_of(s, addr, bytes);
    if (!a) {
        launch_fail(L, "block (%u, %u, %u) thread %d%s %llu bytes at %p (in %s), outside shared memory", L->block[0],
                    L->block[1], L->block[2], t, access_verb(kind), (unsigned long long)bytes,
                    (void *)(uintptr_t)addr, site_name(s, site));
        return false;
    }
    size_t off = addr - (uintptr_t)a->addr;
    uint64_t e = s->epoch;
    for (size_t i = off; i < off + bytes; i++) {
        ByteShadow *b = &a->shadow[i];
        if (b->copier != NO_THREAD) {
            in_flight_fail(L, t, kind, site, a, i, b);
            return false;
        }
        if (kind == ACCESS_READ && b->w_epoch < L->block_epoch && !L->unwritten.seen)
            L->unwritten.seen = true, L->unwritten.thread = t, L->unwritten.byte = i, L->unwritten.area = a,
            L->unwritten.site = site;
        if (b->w_epoch == e && b->writer != t) {
            race_fail(L, t, kind, site, a, i, b->writer, true, b->w_site);
            return false;
        }
        if (kind != ACCESS_READ && b->r_epoch == e) {
            int j = b->reader[0] != t ? 0 : b->reader[1] != NO_THREAD ? 1 : -1;
            if (j >= 0) {
                race_fail(L, t, kind, site, a, i, b->reader[j], false, b->r_site[j]);
                return false;
            }
        }
        if (kind == ACCESS_COPY) {
            continue;   /* marked in flight by the caller, once every byte passed */
        } else if (kind == ACCESS_WRITE) {
            b->w_epoch = e, b->writer = (uint16_t)t, b->w_site = site;
        } else if (b->r_epoch != e) {
            b->r_epoch = e, b->reader[0] = (uint16_t)t, b->r_site[0] = site, b->reader[1] = NO_THREAD;
        } else if (b->reader[0] != t && b->reader[1] == NO_THREAD) {
            b->reader[1] = (uint16_t)t, b->r_site[1] = site;
        }
    }
    return true;
}

/* At a barrier or the block's end: a read of a byte the block had not
 * written (on the GPU, what an earlier block left there, or garbage) fails
 * the launch, unless a thread wrote it later in the epoch, which was
 * reported as a race. */
static bool end_epoch(Launch *L)
{
    if (L->unwritten.seen && !L->failed)
        launch_fail(L, "block (%u, %u, %u) thread %d reads byte %zu of %s (in %s), which no thread of the block wrote before",
                    L->block[0], L->block[1], L->block[2], L->unwritten.thread, L->unwritten.byte, L->unwritten.area->name,
                    site_name(L->s, L->unwritten.site));
    L->unwritten.seen = false;
    return !L->failed;
}

/* Called by the instrumented code before each access of shared memory.
 * A race abandons the block at once, as a memory fault does. */
static void sim_shared_access(uint64_t addr, uint64_t bytes, int32_t kind, int32_t site)
{
    Launch *L = current;
    if (!check_shared_access(L, L->cur, addr, bytes, kind, site)) setcontext(&L->sched);
}

/* ---- cp.async: a copy in flight until a wait of its thread ---- */

/* Called by the instrumented code before each cp.async copy and wait, so
 * that the executor can name where it is. */
static void sim_async_site(int32_t site)
{
    Launch *L = current;
    L->th[L->cur].async_site = site;
}

static bool tensor_holds(const Launch *L, uint64_t addr, uint64_t bytes)
{
    for (int i = 0; i < L->ntensors; i++) {
        const TensorSpan *ts = &L->tensors[i];
        if (addr >= ts->lo && bytes <= ts->hi - ts->lo && addr - ts->lo <= ts->hi - ts->lo - bytes) return true;
    }
    return false;
}

/* Thread t's cp.async (intrinsic id, arguments in): the copy of its size
 * from global src to shared dst, only the first src_size bytes read, the
 * rest zeros. It is checked as a write of dst now, so a read of dst by
 * another thread since the last barrier is a race; then every byte of dst
 * is in flight until a wait of t covers the copy. The source must lie in
 * a tensor argument (by its dims) unless src_size is 0. */
static bool issue_async_copy(Launch *L, int t, int id, const uint64_t *in)
{
    Thread *th = &L->th[t];
    unsigned bytes = async_copy_bytes(id);
    uint64_t dst = in[0], src = in[1];
    uint32_t src_size = async_copy_has_src_size(id) ? lo32(in[2]) : bytes;
    const char *where = site_name(L->s, th->async_site);
    if (src_size > bytes) {
        launch_fail(L, "block (%u, %u, %u) thread %d's cp.async (in %s) has src_size %u, past its %u bytes", L->block[0],
                    L->block[1], L->block[2], t, where, src_size, bytes);
        return false;
    }
    if (dst % bytes || (src_size && src % bytes)) {
        launch_fail(L, "block (%u, %u, %u) thread %d's cp.async (in %s) of %u bytes %s %p, not %u-byte aligned", L->block[0],
                    L->block[1], L->block[2], t, where, bytes, dst % bytes ? "to" : "from",
                    (void *)(uintptr_t)(dst % bytes ? dst : src), bytes);
        return false;
    }
    if (src_size && !tensor_holds(L, src, src_size)) {
        launch_fail(L, "block (%u, %u, %u) thread %d's cp.async (in %s) reads %u bytes at %p, outside every tensor argument",
                    L->block[0], L->block[1], L->block[2], t, where, src_size, (void *)(uintptr_t)src);
        return false;
    }
    if (!check_shared_access(L, t, dst, bytes, ACCESS_COPY, th->async_site)) return false;
    if (th->ncopies == th->copies_cap) {
        th->copies_cap = th->copies_cap ? 2 * th->copies_cap : 8;
        th->copies = realloc(th->copies, sizeof *th->copies * (size_t)th->copies_cap);
    }
    AsyncCopy *c = &th->copies[th->ncopies++];
    c->area = shared_area_of(L->s, dst, bytes);
    c->off = dst - (uintptr_t)c->area->addr;
    c->bytes = bytes;
    c->group = th->groups;
    c->site = th->async_site;
    memset(c->data, 0, sizeof c->data);
    if (src_size) memcpy(c->data, (const void *)(uintptr_t)src, src_size);
    for (unsigned i = 0; i < bytes; i++) {
        ByteShadow *b = &c->area->shadow[c->off + i];
        b->copier = (uint16_t)t, b->c_site = c->site;
    }
    return true;
}

/* Thread t waits until at most pending of its committed groups are in
 * flight: the copies of the older groups land now, each byte then written
 * by t at the wait (its site), so a reader in another thread needs a
 * barrier after it. */
static void wait_async_copies(Launch *L, int t, uint32_t pending)
{
    Thread *th = &L->th[t];
    uint32_t landed = th->groups > pending ? th->groups - pending : 0;   /* the groups numbered below */
    int kept = 0;
    for (int i = 0; i < th->ncopies; i++) {
        AsyncCopy *c = &th->copies[i];
        if (c->group >= landed) {
            th->copies[kept++] = *c;
            continue;
        }
        memcpy(c->area->addr + c->off, c->data, c->bytes);
        for (unsigned j = 0; j < c->bytes; j++) {
            ByteShadow *b = &c->area->shadow[c->off + j];
            b->copier = NO_THREAD;
            b->w_epoch = L->s->epoch, b->writer = (uint16_t)t, b->w_site = th->async_site;
        }
    }
    th->ncopies = kept;
}

/* Forgets every copy in flight (before a block, after the launch), so no
 * byte stays in flight into the next. */
static void drop_async_copies(Launch *L)
{
    for (int t = 0; t < L->T; t++) {
        Thread *th = &L->th[t];
        for (int i = 0; i < th->ncopies; i++)
            for (unsigned j = 0; j < th->copies[i].bytes; j++) th->copies[i].area->shadow[th->copies[i].off + j].copier = NO_THREAD;
        th->ncopies = 0;
        th->groups = 0;
    }
}

/* ---- warp collectives, computed once every lane has posted ---- */

/* shfl.sync.bfly: lane l reads lane l ^ b, unless that is past the clamp
 * (c & 31, within the segment c >> 8 masks); then it keeps its own. */
static void warp_shfl(Launch *L, Thread *w, int n)
{
    for (int l = 0; l < n; l++) {
        uint32_t b = lo32(w[l].in[2]) & 31, c = lo32(w[l].in[3]), seg = (c >> 8) & 31;
        uint32_t max_lane = ((uint32_t)l & seg) | (c & 31 & ~seg), j = (uint32_t)l ^ b;
        uint32_t src = j <= max_lane ? j : (uint32_t)l;
        if (src >= (uint32_t)n) {
            launch_fail(L, "shfl.sync: lane %d reads lane %u, which this block does not have", l, src);
            return;
        }
        w[l].out[0] = w[src].in[1];
    }
}

static const unsigned char *shared_row(Launch *L, uint64_t addr, int lane)
{
    for (int i = 0; i < L->s->nshared; i++) {
        const SharedArea *a = &L->s->shared[i];
        if (addr >= (uintptr_t)a->addr && addr + 16 <= (uintptr_t)a->addr + a->bytes) {
            if (addr % 16) break;
            return (const unsigned char *)(uintptr_t)addr;
        }
    }
    launch_fail(L, "ldmatrix: lane %d's row address is %s", lane,
                addr % 16 ? "not 16-byte aligned" : "outside shared memory");
    return NULL;
}

/* ldmatrix m8n8 .b16: lanes 8i..8i+7 give the row addresses of matrix i;
 * lane t receives row t/4, columns 2(t%4) and 2(t%4)+1 of each matrix (the
 * lower column in the lower half); .trans gives the transposed matrix. */
static void warp_ldmatrix(Launch *L, Thread *w, int nmat, bool trans)
{
    uint16_t m[4][8][8];
    for (int i = 0; i < nmat; i++)
        for (int r = 0; r < 8; r++) {
            const unsigned char *row = shared_row(L, w[i * 8 + r].in[0], i * 8 + r);
            /* the lane that gives a row's address counts as its reader */
            if (!row || !check_shared_access(L, (int)(w - L->th) + i * 8 + r, (uintptr_t)row, 16, ACCESS_READ, -1)) return;
            memcpy(m[i][r], row, 16);
        }
    for (int t = 0; t < 32; t++)
        for (int i = 0; i < nmat; i++) {
            int g = t / 4, c = 2 * (t % 4);
            uint16_t lo = trans ? m[i][c][g] : m[i][g][c], hi = trans ? m[i][c + 1][g] : m[i][g][c + 1];
            w[t].out[i] = (uint64_t)lo | (uint64_t)hi << 16;
        }
}

static float half_as_f32(uint16_t h, bool bf) { return bf ? ph_bf16_to_f32(h) : ph_f16_to_f32(h); }

/* mma.m16n8k16.row.col, f32 += f16 x f16 or bf16 x bf16. With g = lane/4,
 * q = lane%4: A's registers hold A[g][2q..], A[g+8][2q..], A[g][2q+8..],
 * A[g+8][2q+8..]; B's hold B[2q..][g], B[2q+8..][g]; C and D hold
 * [g][2q], [g][2q+1], [g+8][2q], [g+8][2q+1]. Products of 16-bit floats
 * are exact; the sum is rounded once. */
static void warp_mma(Thread *w, bool bf)
{
    float A[16][16], B[16][8], C[16][8];
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int r = 0; r < 4; r++) {
            uint32_t v = lo32(w[t].in[r]);
            int row = g + (r & 1) * 8, col = 2 * q + (r >> 1) * 8;
            A[row][col] = half_as_f32((uint16_t)v, bf);
            A[row][col + 1] = half_as_f32((uint16_t)(v >> 16), bf);
        }
        for (int r = 0; r < 2; r++) {
            uint32_t v = lo32(w[t].in[4 + r]);
            B[2 * q + r * 8][g] = half_as_f32((uint16_t)v, bf);
            B[2 * q + r * 8 + 1][g] = half_as_f32((uint16_t)(v >> 16), bf);
        }
        for (int r = 0; r < 4; r++) C[g + (r >> 1) * 8][2 * q + (r & 1)] = slot_f32(w[t].in[6 + r]);
    }
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int r = 0; r < 4; r++) {
            int i = g + (r >> 1) * 8, j = 2 * q + (r & 1);
            double sum = C[i][j];
            for (int k = 0; k < 16; k++) sum += (double)A[i][k] * B[k][j];
            w[t].out[r] = f32_slot((float)sum);
        }
    }
}

/* Computes the collectives of the warps whose live lanes all posted one;
 * true when any did. */
static bool release_warps(Launch *L)
{
    bool any = false;
    for (int lo = 0; lo < L->T && !L->failed; lo += 32) {
        Thread *w = &L->th[lo];
        int n = L->T - lo < 32 ? L->T - lo : 32, posted = 0, op = -1;
        for (int l = 0; l < n; l++)
            if (w[l].st == TH_WARP) {
                if (op >= 0 && w[l].op != op) {
                    launch_fail(L, "warp %d: lanes at %s and at %s", lo / 32, intrinsic_names[op], intrinsic_names[w[l].op]);
                    return false;
                }
                op = w[l].op;
                posted++;
            }
        if (!posted || posted != n) continue;
        if (op != IN_SHFL_I32 && op != IN_SHFL_F32 && n != 32) {
            launch_fail(L, "warp %d: %s needs 32 lanes, the block gives it %d", lo / 32, intrinsic_names[op], n);
            return false;
        }
        switch (op) {
        case IN_SHFL_I32: case IN_SHFL_F32: warp_shfl(L, w, n); break;
        case IN_LDM_X4: warp_ldmatrix(L, w, 4, false); break;
        case IN_LDM_X2: warp_ldmatrix(L, w, 2, false); break;
        case IN_LDM_X2_TRANS: warp_ldmatrix(L, w, 2, true); break;
        case IN_LDM_X4_TRANS: warp_ldmatrix(L, w, 4, true); break;
        case IN_MMA_F16: warp_mma(w, false); break;
        case IN_MMA_BF16: warp_mma(w, true); break;
        }
        for (int l = 0; l < n; l++) w[l].st = TH_READY;
        any = true;
    }
    return any;
}

/* ---- the scheduler ---- */

/* A kernel's access outside mapped memory ends the launch with a message
 * instead of the process: the handler resumes the scheduler, abandoning
 * the block (its fibers are never resumed). It runs on its own stack, so
 * a fiber's stack overflow (its guard page) is reported the same way. */
static void on_fault(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    Launch *L = current;
    if (!L || !L->in_thread) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    launch_fail(L, "%s at address %p, block (%u, %u, %u) thread %d", sig == SIGSEGV ? "segmentation fault" : "bus error",
                si->si_addr, L->block[0], L->block[1], L->block[2], L->cur);
    setcontext(&L->sched);
}

typedef struct { struct sigaction segv, bus; stack_t stack; } FaultTrap;

static void trap_faults(FaultTrap *old, void *altstack, size_t bytes)
{
    stack_t ss = {.ss_sp = altstack, .ss_size = bytes};
    sigaltstack(&ss, &old->stack);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old->segv);
    sigaction(SIGBUS, &sa, &old->bus);
}

static void untrap_faults(const FaultTrap *old)
{
    sigaction(SIGSEGV, &old->segv, NULL);
    sigaction(SIGBUS, &old->bus, NULL);
    sigaltstack(&old->stack, NULL);
}

static void fiber_main(void)
{
    Launch *L = current;
    L->k->entry(L->slots);
    Thread *me = &L->th[L->cur];
    me->st = TH_EXITED;
    if (me->ncopies)
        launch_fail(L, "block (%u, %u, %u) thread %d ends with a cp.async (in %s) never waited for", L->block[0], L->block[1],
                    L->block[2], L->cur, site_name(L->s, me->copies[0].site));
    /* returning resumes uc_link, the scheduler */
}

static void run_block(Launch *L)
{
    for (int t = 0; t < L->T; t++) {
        Thread *th = &L->th[t];
        getcontext(&th->ctx);
        th->ctx.uc_stack.ss_sp = L->s->stacks + (size_t)t * (STACK_BYTES + PAGE) + PAGE;
        th->ctx.uc_stack.ss_size = STACK_BYTES;
        th->ctx.uc_link = &L->sched;
        makecontext(&th->ctx, fiber_main, 0);
        th->st = TH_READY;
    }
    drop_async_copies(L);
    next_epoch(L->s);
    L->block_epoch = L->s->epoch;
    L->unwritten.seen = false;
    for (;;) {
        for (int t = 0; t < L->T && !L->failed; t++)
            if (L->th[t].st == TH_READY) {
                L->cur = t;
                L->in_thread = true;
                swapcontext(&L->sched, &L->th[t].ctx);
                L->in_thread = false;
            }
        if (L->failed) return;
        if (release_warps(L)) continue;
        if (L->failed) return;
        int live = 0, at_barrier = 0, at_warp = 0;
        for (int t = 0; t < L->T; t++) {
            live += L->th[t].st != TH_EXITED;
            at_barrier += L->th[t].st == TH_BARRIER;
            at_warp += L->th[t].st == TH_WARP;
        }
        if (!live) {
            end_epoch(L);
            return;
        }
        if (at_barrier == live) {
            if (!end_epoch(L)) return;
            for (int t = 0; t < L->T; t++)
                if (L->th[t].st == TH_BARRIER) L->th[t].st = TH_READY;
            next_epoch(L->s);
            continue;
        }
        launch_fail(L, "deadlock in block (%u, %u, %u): %d threads at a barrier, %d at warp collectives, %d exited",
                    L->block[0], L->block[1], L->block[2], at_barrier, at_warp, L->T - live);
        return;
    }
}

static int ensure_stacks(cpusim *s, int n)
{
    if (n <= s->nstacks) return 0;
    size_t each = STACK_BYTES + PAGE;
    if (s->stacks) munmap(s->stacks, (size_t)s->nstacks * each);
    s->nstacks = 0;
    s->stacks = mmap(NULL, (size_t)n * each, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s->stacks == MAP_FAILED) { s->stacks = NULL; return 1; }
    /* a guard page below each stack: an overflow faults instead of corrupting a neighbour */
    for (int i = 0; i < n; i++) mprotect(s->stacks + (size_t)i * each, PAGE, PROT_NONE);
    s->nstacks = n;
    return 0;
}

static const SimKernel *find_kernel(const cpusim *s, const char *name)
{
    for (int i = 0; name && i < s->nkernels; i++)
        if (!strcmp(s->kernels[i].name, name)) return &s->kernels[i];
    return NULL;
}

static ph_status fail(ph_status st, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return st;
}

/* Packs the arguments into slots as the kernel's trampoline reads them
 * (codegen.h: a tensor is pointer, dim0, dim1; dim1 1 for rank 1). */
static ph_status pack_args(const SimKernel *k, const ph_arg *args, int nargs, uint64_t *slots, char *err, size_t errlen)
{
    if (nargs != k->nparams)
        return fail(PH_ERR_ARGS, err, errlen, "%s takes %d arguments, got %d", k->name, k->nparams, nargs);
    if (nargs && !args) return fail(PH_ERR_INVALID, err, errlen, "%s: null argument array", k->name);
    int n = 0;
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &k->params[i];
        ph_arg_kind want = p->is_tensor ? PH_ARG_TENSOR : p->dt == DT_I32 ? PH_ARG_I32 : PH_ARG_F32;
        if (args[i].kind != want)
            return fail(PH_ERR_ARGS, err, errlen, "%s: argument %d is not a%s", k->name, i + 1,
                        want == PH_ARG_TENSOR ? " tensor" : want == PH_ARG_I32 ? "n i32" : "n f32");
        if (p->is_tensor) {
            if (!args[i].ptr) return fail(PH_ERR_INVALID, err, errlen, "%s: argument %d is a null tensor", k->name, i + 1);
            slots[n++] = args[i].ptr;
            slots[n++] = (uint64_t)args[i].dims[0];
            slots[n++] = (uint64_t)(p->rank == 2 ? args[i].dims[1] : 1);
        } else if (want == PH_ARG_I32) {
            slots[n++] = (uint32_t)args[i].i32;
        } else {
            slots[n++] = f32_slot(args[i].f32);
        }
    }
    return PH_OK;
}

/* The bytes each tensor argument spans by its dims (slots packed by
 * pack_args): where a cp.async may read. */
static int tensor_spans(const SimKernel *k, const uint64_t *slots, TensorSpan *spans)
{
    int n = 0, slot = 0;
    for (int i = 0; i < k->nparams; i++) {
        const IrParam *p = &k->params[i];
        if (!p->is_tensor) {
            slot++;
            continue;
        }
        int64_t d0 = (int64_t)slots[slot + 1], d1 = (int64_t)slots[slot + 2];
        uint64_t elems = d0 > 0 && d1 > 0 ? (uint64_t)d0 * (uint64_t)d1 : 0;
        spans[n].lo = slots[slot];
        spans[n].hi = slots[slot] + elems * (p->dt == DT_F16 || p->dt == DT_BF16 ? 2 : 4);
        n++;
        slot += 3;
    }
    return n;
}

ph_status cpusim_launch(cpusim *s, const char *kernel, const unsigned grid[3], const ph_arg *args, int nargs,
                        char *err, size_t errlen)
{
    if (!s) return fail(PH_ERR_INVALID, err, errlen, "no simulator");
    const SimKernel *k = find_kernel(s, kernel);
    if (!k) return fail(PH_ERR_NOT_FOUND, err, errlen, "no entry named %s", kernel ? kernel : "(null)");
    if (!grid || !grid[0] || !grid[1] || !grid[2]) return fail(PH_ERR_GRID, err, errlen, "%s: a grid of zero blocks", k->name);
    if (nargs < 0 || nargs > 256) return fail(PH_ERR_ARGS, err, errlen, "%s: %d arguments", k->name, nargs);
    uint64_t slots[3 * 256 + 1];
    ph_status st = pack_args(k, args, nargs, slots, err, errlen);
    if (st != PH_OK) return st;
    if (current) return fail(PH_ERR_STATE, err, errlen, "a launch is already running");
    if (ensure_stacks(s, k->threads)) return fail(PH_ERR_INVALID, err, errlen, "no memory for %d fiber stacks", k->threads);
    Launch L = {.s = s, .k = k, .slots = slots, .grid = {grid[0], grid[1], grid[2]}, .T = k->threads};
    L.th = calloc((size_t)k->threads, sizeof *L.th);
    if (!L.th) return fail(PH_ERR_INVALID, err, errlen, "out of memory");
    L.ntensors = tensor_spans(k, slots, L.tensors);
    static unsigned char altstack[1 << 16];
    FaultTrap old;
    trap_faults(&old, altstack, sizeof altstack);
    current = &L;
    for (unsigned z = 0; z < grid[2] && !L.failed; z++)
        for (unsigned y = 0; y < grid[1] && !L.failed; y++)
            for (unsigned x = 0; x < grid[0] && !L.failed; x++) {
                for (int i = 0; i < s->nshared; i++) memset(s->shared[i].addr, 0xff, s->shared[i].bytes);
                L.block[0] = x, L.block[1] = y, L.block[2] = z;
                run_block(&L);
            }
    current = NULL;
    untrap_faults(&old);
    drop_async_copies(&L);
    for (int t = 0; t < L.T; t++) free(L.th[t].copies);
    free(L.th);
    if (L.failed) return fail(PH_ERR_INVALID, err, errlen, "%s: %s", k->name, L.msg);
    return PH_OK;
}

/* ---- the half and bfloat libcalls of the x86 back end ---- */

static _Float16 bits_as_half(uint16_t h) { _Float16 r; memcpy(&r, &h, 2); return r; }
static _Float16 sim_truncsfhf2(float f) { return bits_as_half(ph_f32_to_f16(f)); }
static _Float16 sim_truncdfhf2(double d) { return bits_as_half(ph_f32_to_f16((float)d)); }
static float sim_extendhfsf2(_Float16 x) { uint16_t h; memcpy(&h, &x, 2); return ph_f16_to_f32(h); }
/* bf16 travels in the same register as half: the low 16 bits of xmm0 */
static _Float16 sim_truncsfbf2(float f) { return bits_as_half(ph_f32_to_bf16(f)); }
static _Float16 sim_truncdfbf2(double d) { return bits_as_half(ph_f32_to_bf16((float)d)); }

static void add_libcalls(void)
{
    LLVMAddSymbol("__truncsfhf2", (void *)sim_truncsfhf2);
    LLVMAddSymbol("__truncdfhf2", (void *)sim_truncdfhf2);
    LLVMAddSymbol("__extendhfsf2", (void *)sim_extendhfsf2);
    LLVMAddSymbol("__gnu_h2f_ieee", (void *)sim_extendhfsf2);
    LLVMAddSymbol("__gnu_f2h_ieee", (void *)sim_truncsfhf2);
    LLVMAddSymbol("__truncsfbf2", (void *)sim_truncsfbf2);
    LLVMAddSymbol("__truncdfbf2", (void *)sim_truncdfbf2);
    LLVMAddSymbol("fmaf", (void *)fmaf);   /* llvm.fma.f32 where the host has no FMA instruction */
}

/* ---- loading: the GPU module made runnable on the host ---- */

static int intrinsic_id(const char *name)
{
    for (int i = 0; i < IN_COUNT; i++)
        if (!strcmp(intrinsic_names[i], name)) return i;
    return -1;
}

/* 32-bit floats and pairs of 16-bit floats are carried as their bits. */
static bool is_word_type(LLVMTypeRef t)
{
    LLVMTypeKind k = LLVMGetTypeKind(t);
    if (k == LLVMFloatTypeKind) return true;
    if (k != LLVMVectorTypeKind || LLVMGetVectorSize(t) != 2) return false;
    LLVMTypeKind e = LLVMGetTypeKind(LLVMGetElementType(t));
    return e == LLVMHalfTypeKind || e == LLVMBFloatTypeKind;
}

static bool slot_type_ok(LLVMTypeRef t)
{
    LLVMTypeKind k = LLVMGetTypeKind(t);
    return k == LLVMPointerTypeKind || (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) <= 64) || is_word_type(t);
}

static LLVMValueRef to_slot(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v), i64 = LLVMInt64TypeInContext(ctx);
    switch (LLVMGetTypeKind(t)) {
    case LLVMPointerTypeKind: return LLVMBuildPtrToInt(b, v, i64, "");
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t) == 64 ? v : LLVMBuildZExt(b, v, i64, "");
    default: return LLVMBuildZExt(b, LLVMBuildBitCast(b, v, LLVMInt32TypeInContext(ctx), ""), i64, "");
    }
}

static LLVMValueRef from_slot(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef v, LLVMTypeRef t)
{
    switch (LLVMGetTypeKind(t)) {
    case LLVMPointerTypeKind: return LLVMBuildIntToPtr(b, v, t, "");
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t) == 64 ? v : LLVMBuildTrunc(b, v, t, "");
    default: return LLVMBuildBitCast(b, LLVMBuildTrunc(b, v, LLVMInt32TypeInContext(ctx), ""), t, "");
    }
}

static LLVMValueRef slot_ptr(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef base, unsigned i)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
    LLVMValueRef idx = LLVMConstInt(i64, i, 0);
    return LLVMBuildGEP2(b, i64, base, &idx, 1, "");
}

/* Replaces the declaration of intrinsic id by a function of the same type
 * that passes its arguments and results through slot arrays to
 * sim_intrinsic. */
static int lower_intrinsic(LLVMModuleRef mod, LLVMValueRef decl, int id, char *err, size_t errlen)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef fty = LLVMGlobalGetValueType(decl), ret = LLVMGetReturnType(fty);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
    unsigned n = LLVMCountParamTypes(fty), nret = 0;
    LLVMTypeRef pts[16];
    if (n > 16) return snprintf(err, errlen, "%s: %u parameters", intrinsic_names[id], n), 1;
    LLVMGetParamTypes(fty, pts);
    for (unsigned i = 0; i < n; i++)
        if (!slot_type_ok(pts[i])) return snprintf(err, errlen, "%s: a parameter type the executor cannot carry", intrinsic_names[id]), 1;
    LLVMTypeKind rk = LLVMGetTypeKind(ret);
    if (rk == LLVMStructTypeKind) {
        nret = LLVMCountStructElementTypes(ret);
        for (unsigned i = 0; i < nret; i++)
            if (nret > 4 || !slot_type_ok(LLVMStructGetTypeAtIndex(ret, i)))
                return snprintf(err, errlen, "%s: a result type the executor cannot carry", intrinsic_names[id]), 1;
    } else if (rk != LLVMVoidTypeKind && !slot_type_ok(ret)) {
        return snprintf(err, errlen, "%s: a result type the executor cannot carry", intrinsic_names[id]), 1;
    }

    char name[128];
    snprintf(name, sizeof name, "cpusim.%s", intrinsic_names[id] + strlen("llvm."));
    LLVMValueRef fn = LLVMAddFunction(mod, name, fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMValueRef in = LLVMBuildAlloca(b, LLVMArrayType2(i64, n ? n : 1), "in");
    LLVMValueRef out = LLVMBuildAlloca(b, LLVMArrayType2(i64, 4), "out");
    for (unsigned i = 0; i < n; i++) LLVMBuildStore(b, to_slot(b, ctx, LLVMGetParam(fn, i)), slot_ptr(b, ctx, in, i));
    LLVMTypeRef hpts[3] = {i32, ptr, ptr};
    LLVMTypeRef hty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), hpts, 3, 0);
    LLVMValueRef host = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_intrinsic, 0), ptr);
    LLVMValueRef hargs[3] = {LLVMConstInt(i32, (unsigned long long)id, 0), in, out};
    LLVMBuildCall2(b, hty, host, hargs, 3, "");
    if (rk == LLVMVoidTypeKind) {
        LLVMBuildRetVoid(b);
    } else if (rk == LLVMStructTypeKind) {
        LLVMValueRef agg = LLVMGetUndef(ret);
        for (unsigned i = 0; i < nret; i++) {
            LLVMValueRef w = LLVMBuildLoad2(b, i64, slot_ptr(b, ctx, out, i), "");
            agg = LLVMBuildInsertValue(b, agg, from_slot(b, ctx, w, LLVMStructGetTypeAtIndex(ret, i)), i, "");
        }
        LLVMBuildRet(b, agg);
    } else {
        LLVMBuildRet(b, from_slot(b, ctx, LLVMBuildLoad2(b, i64, slot_ptr(b, ctx, out, 0), ""), ret));
    }
    LLVMDisposeBuilder(b);
    LLVMReplaceAllUsesWith(decl, fn);
    LLVMDeleteFunction(decl);
    return 0;
}

/* Gives kernel fn the C convention and a trampoline NAME.simentry(ptr
 * slots) that loads each parameter from its slot and calls it. */
static void add_trampoline(LLVMModuleRef mod, LLVMValueRef fn)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMSetFunctionCallConv(fn, LLVMCCallConv);
    LLVMTypeRef fty = LLVMGlobalGetValueType(fn), ptr = LLVMPointerTypeInContext(ctx, 0);
    unsigned n = LLVMCountParamTypes(fty);
    LLVMTypeRef *pts = calloc(n ? n : 1, sizeof *pts);
    LLVMValueRef *args = calloc(n ? n : 1, sizeof *args);
    LLVMGetParamTypes(fty, pts);
    size_t len;
    const char *kname = LLVMGetValueName2(fn, &len);
    char *name = malloc(len + 16);
    snprintf(name, len + 16, "%.*s.simentry", (int)len, kname);
    LLVMValueRef tr = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), &ptr, 1, 0));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, tr, "entry"));
    for (unsigned i = 0; i < n; i++) args[i] = LLVMBuildLoad2(b, pts[i], slot_ptr(b, ctx, LLVMGetParam(tr, 0), i), "");
    LLVMValueRef call = LLVMBuildCall2(b, fty, fn, args, n, "");
    LLVMSetInstructionCallConv(call, LLVMCCallConv);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    free(name); free(pts); free(args);
}

/* ---- race instrumentation: every shared access reports itself ---- */

typedef struct { LLVMValueRef ptr, bytes; int kind; } SharedAccess;

static bool is_shared_ptr(LLVMValueRef p)
{
    LLVMTypeRef t = LLVMTypeOf(p);
    return LLVMGetTypeKind(t) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(t) == 3;
}

static bool callee_named(LLVMValueRef call, const char *prefix)
{
    LLVMValueRef callee = LLVMGetCalledValue(call);
    if (!callee || !LLVMIsAFunction(callee)) return false;
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    return !strncmp(name, prefix, strlen(prefix));
}

/* The shared-memory accesses inst makes (at most two); atomics count as
 * writes (the code generator emits none). A memset or memcpy's length is
 * the value the call is given. */
static int shared_accesses(LLVMValueRef inst, LLVMTargetDataRef td, SharedAccess acc[2])
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(inst));
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
    int n = 0;
    LLVMValueRef p;
    switch (LLVMGetInstructionOpcode(inst)) {
    case LLVMLoad:
        if (is_shared_ptr(p = LLVMGetOperand(inst, 0)))
            acc[n++] = (SharedAccess){p, LLVMConstInt(i64, LLVMStoreSizeOfType(td, LLVMTypeOf(inst)), 0), ACCESS_READ};
        break;
    case LLVMStore:
    case LLVMAtomicRMW:
    case LLVMAtomicCmpXchg: {
        bool store = LLVMGetInstructionOpcode(inst) == LLVMStore;
        LLVMValueRef v = LLVMGetOperand(inst, store ? 0 : 1);
        if (is_shared_ptr(p = LLVMGetOperand(inst, store ? 1 : 0)))
            acc[n++] = (SharedAccess){p, LLVMConstInt(i64, LLVMStoreSizeOfType(td, LLVMTypeOf(v)), 0), ACCESS_WRITE};
        break;
    }
    case LLVMCall: {
        bool set = callee_named(inst, "llvm.memset."), copy = callee_named(inst, "llvm.memcpy.") || callee_named(inst, "llvm.memmove.");
        if (!set && !copy) break;
        LLVMValueRef len = LLVMGetOperand(inst, 2);
        if (is_shared_ptr(p = LLVMGetOperand(inst, 0))) acc[n++] = (SharedAccess){p, len, ACCESS_WRITE};
        if (copy && is_shared_ptr(p = LLVMGetOperand(inst, 1))) acc[n++] = (SharedAccess){p, len, ACCESS_READ};
        break;
    }
    default:
        break;
    }
    return n;
}

/* A site's description: "function, block %name" (the names --emit=llvm
 * prints), then what, if any. */
static int32_t add_site(cpusim *s, LLVMValueRef fn, LLVMBasicBlockRef bb, const char *what)
{
    size_t len;
    const char *fname = LLVMGetValueName2(fn, &len);
    const char *bname = LLVMGetBasicBlockName(bb);
    char buf[700];
    snprintf(buf, sizeof buf, "%.*s, block %%%s%s", (int)len, fname, bname && *bname ? bname : "(unnamed)", what);
    s->sites = realloc(s->sites, sizeof *s->sites * (size_t)(s->nsites + 1));
    s->sites[s->nsites] = xstrdup(buf);
    return s->nsites++;
}

/* The id of the cp.async copy or wait inst calls, or -1. */
static int async_op_called(LLVMValueRef inst)
{
    if (LLVMGetInstructionOpcode(inst) != LLVMCall || !callee_named(inst, "llvm.nvvm.cp.async.")) return -1;
    size_t len;
    int id = intrinsic_id(LLVMGetValueName2(LLVMGetCalledValue(inst), &len));
    return id >= 0 && (is_async_copy(id) || is_async_wait(id)) ? id : -1;
}

/* Puts a call of sim_shared_access(address, bytes, kind, site) before
 * every access of shared memory in mod (ldmatrix's reads are checked where
 * the executor computes it), and one of sim_async_site(site) before every
 * cp.async copy and wait. A site is a basic block; a wait's says what it
 * is, since it is where its copies write. */
static void instrument_shared_accesses(cpusim *s, LLVMModuleRef mod)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTargetDataRef td = LLVMGetModuleDataLayout(mod);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMTypeRef pts[4] = {i64, i64, i32, i32};
    LLVMTypeRef hty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), pts, 4, 0);
    LLVMValueRef hook = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_shared_access, 0), ptr);
    LLVMTypeRef aty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), &i32, 1, 0);
    LLVMValueRef async_hook = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)sim_async_site, 0), ptr);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
            int32_t site = -1;
            for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst; inst = LLVMGetNextInstruction(inst)) {
                int op = async_op_called(inst);
                if (op >= 0) {
                    int32_t at = is_async_wait(op) ? add_site(s, f, bb, op == IN_CP_WAIT_ALL ? ", the cp.async.wait.all completing its cp.async"
                                                                                             : ", the cp.async.wait.group completing its cp.async")
                               : site >= 0 ? site : (site = add_site(s, f, bb, ""));
                    LLVMPositionBuilderBefore(b, inst);
                    LLVMValueRef arg = LLVMConstInt(i32, (unsigned)at, 0);
                    LLVMBuildCall2(b, aty, async_hook, &arg, 1, "");
                }
                SharedAccess acc[2];
                int n = shared_accesses(inst, td, acc);
                if (n && site < 0) site = add_site(s, f, bb, "");
                for (int i = 0; i < n; i++) {
                    LLVMPositionBuilderBefore(b, inst);
                    LLVMValueRef bytes = acc[i].bytes;
                    if (LLVMGetIntTypeWidth(LLVMTypeOf(bytes)) != 64) bytes = LLVMBuildZExt(b, bytes, i64, "");
                    LLVMValueRef args[4] = {LLVMBuildPtrToInt(b, acc[i].ptr, i64, ""), bytes,
                                            LLVMConstInt(i32, (unsigned)acc[i].kind, 0), LLVMConstInt(i32, (unsigned)site, 0)};
                    LLVMBuildCall2(b, hty, hook, args, 4, "");
                }
            }
        }
    LLVMDisposeBuilder(b);
}

/* A kernel with dynamic shared memory (codegen.h) declares an extern array
 * and the constant that sizes it: the array becomes a global of that many
 * bytes, what the runtime asks the driver for at launch, so it is poisoned
 * and shadowed like every static area. */
static int define_dynamic_shared(LLVMModuleRef mod, LLVMValueRef kernel, char *err, size_t errlen)
{
    size_t len;
    const char *kname = LLVMGetValueName2(kernel, &len);
    char name[600];
    snprintf(name, sizeof name, "%s%s", kname, CODEGEN_DYNAMIC_AREA_SUFFIX);
    LLVMValueRef area = LLVMGetNamedGlobal(mod, name);
    if (!area) return 0;
    snprintf(name, sizeof name, "%s%s", kname, CODEGEN_DYNAMIC_SHARED_SUFFIX);
    LLVMValueRef size = LLVMGetNamedGlobal(mod, name);
    LLVMValueRef init = size ? LLVMGetInitializer(size) : NULL;
    if (!init || !LLVMIsAConstantInt(init) || LLVMConstIntGetSExtValue(init) < 1)
        return snprintf(err, errlen, "%s: an extern shared array with no size (%s)", kname, name), 1;
    LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(LLVMGetModuleContext(mod)), (uint64_t)LLVMConstIntGetSExtValue(init));
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(mod, at, "", 3);
    LLVMSetInitializer(g, LLVMGetUndef(at));
    LLVMSetAlignment(g, 16);
    LLVMReplaceAllUsesWith(area, g);
    snprintf(name, sizeof name, "%s%s", kname, CODEGEN_DYNAMIC_AREA_SUFFIX);
    LLVMDeleteGlobal(area);
    LLVMSetValueName2(g, name, strlen(name));
    return 0;
}

/* ---- contraction: the GPU's fused multiply-adds ----
 * The NVPTX back end fuses an fmul into the fadd or fsub it feeds when both
 * carry the contract flag and sit in one basic block (its selection DAG
 * is built a block at a time), even when the product has other users
 * (NVPTX asks for aggressive fusion). The same rewrite here, into
 * llvm.fma.f32, which the host computes exactly rounded, makes the
 * executor round as the GPU does; the order of preference is the DAG
 * combiner's: the left operand, unless both are products and the left
 * has more users. */

static bool contract_flag(LLVMValueRef v) { return LLVMCanValueUseFastMathFlags(v) && (LLVMGetFastMathFlags(v) & LLVMFastMathAllowContract); }

static unsigned count_uses(LLVMValueRef v)
{
    unsigned n = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) n++;
    return n;
}

/* An fmul of f32 values with the contract flag, in block bb. */
static bool fusable_product(LLVMValueRef v, LLVMBasicBlockRef bb)
{
    return LLVMIsAInstruction(v) && LLVMGetInstructionOpcode(v) == LLVMFMul && contract_flag(v)
        && LLVMGetInstructionParent(v) == bb && LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMFloatTypeKind;
}

/* Replaces add (an fadd or fsub) by an fma of product operand `which`;
 * the product goes when nothing else uses it. */
static void fuse(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef add, int which)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef fty = LLVMFunctionType(f32, (LLVMTypeRef[]){f32, f32, f32}, 3, 0);
    LLVMValueRef fma_fn = LLVMGetNamedFunction(mod, "llvm.fma.f32");
    if (!fma_fn) fma_fn = LLVMAddFunction(mod, "llvm.fma.f32", fty);
    bool sub = LLVMGetInstructionOpcode(add) == LLVMFSub;
    LLVMValueRef prod = LLVMGetOperand(add, (unsigned)which), other = LLVMGetOperand(add, (unsigned)!which);
    LLVMValueRef x = LLVMGetOperand(prod, 0), y = LLVMGetOperand(prod, 1);
    LLVMPositionBuilderBefore(b, add);
    if (sub && which == 0) other = LLVMBuildFNeg(b, other, "");   /* x*y - z: fma(x, y, -z) */
    if (sub && which == 1) x = LLVMBuildFNeg(b, x, "");           /* z - x*y: fma(-x, y, z) */
    LLVMValueRef r = LLVMBuildCall2(b, fty, fma_fn, (LLVMValueRef[]){x, y, other}, 3, "");
    LLVMReplaceAllUsesWith(add, r);
    LLVMInstructionEraseFromParent(add);
    if (!LLVMGetFirstUse(prod)) LLVMInstructionEraseFromParent(prod);
}

static void fuse_multiply_adds(LLVMModuleRef mod)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef next;
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
                next = LLVMGetNextInstruction(i);
                LLVMOpcode op = LLVMGetInstructionOpcode(i);
                if ((op != LLVMFAdd && op != LLVMFSub) || !contract_flag(i)) continue;
                bool p0 = fusable_product(LLVMGetOperand(i, 0), bb), p1 = fusable_product(LLVMGetOperand(i, 1), bb);
                if (p0 && p1) fuse(mod, b, i, count_uses(LLVMGetOperand(i, 0)) > count_uses(LLVMGetOperand(i, 1)));
                else if (p0 || p1) fuse(mod, b, i, p1);
            }
        }
    }
    LLVMDisposeBuilder(b);
}

/* Retargets mod to the host: intrinsics lowered, kernels callable, shared
 * memory made visible to the executor (external linkage, so MCJIT can say
 * where each global lies), every shared access checked for races,
 * multiply-adds fused as on the GPU. */
static int prepare_module(cpusim *s, LLVMModuleRef mod, char *err, size_t errlen)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) == 71 /* PTX_Kernel */ && define_dynamic_shared(mod, f, err, errlen))
            return 1;
    instrument_shared_accesses(s, mod);
    fuse_multiply_adds(mod);
    LLVMValueRef next;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = next) {
        next = LLVMGetNextFunction(f);
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && (!strncmp(name, "llvm.nvvm.", 10) || intrinsic_id(name) >= 0)) {
            int id = intrinsic_id(name);
            if (id < 0) return snprintf(err, errlen, "an intrinsic the executor does not model: %s", name), 1;
            if (lower_intrinsic(mod, f, id, err, errlen)) return 1;
        } else if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) == 71 /* PTX_Kernel */) {
            add_trampoline(mod, f);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
        if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == 3) LLVMSetLinkage(g, LLVMExternalLinkage);
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "internal error: the retargeted module does not verify: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return 1;
    }
    LLVMDisposeMessage(msg);
    return 0;
}

static int init_host_target(char *err, size_t errlen)
{
    static int done, failed;
    if (!done) {
        done = 1;
        LLVMLinkInMCJIT();
        failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
        add_libcalls();
    }
    if (failed) snprintf(err, errlen, "no native target in this LLVM");
    return failed;
}

static int set_host_layout(LLVMModuleRef mod, char *err, size_t errlen)
{
    char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
    LLVMTargetRef target;
    int bad = LLVMGetTargetFromTriple(triple, &target, &msg);
    if (bad) {
        snprintf(err, errlen, "host target %s: %s", triple, msg ? msg : "");
    } else {
        LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "", "", LLVMCodeGenLevelDefault, LLVMRelocDefault,
                                                          LLVMCodeModelJITDefault);
        LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
        LLVMSetTarget(mod, triple);
        LLVMSetModuleDataLayout(mod, td);
        LLVMDisposeTargetData(td);
        LLVMDisposeTargetMachine(tm);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    return bad;
}

/* Finds each kernel's trampoline and each shared global once compiled. */
static int resolve(cpusim *s, const IrModule *m, LLVMModuleRef mod, char *err, size_t errlen)
{
    LLVMTargetDataRef td = LLVMGetExecutionEngineTargetData(s->ee);
    s->kernels = calloc((size_t)m->nfuncs + 1, sizeof *s->kernels);
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        SimKernel *k = &s->kernels[s->nkernels++];
        k->name = xstrdup(f->name);
        k->threads = f->threads;
        k->nparams = f->nparams;
        k->params = calloc((size_t)f->nparams + 1, sizeof *k->params);
        for (int j = 0; j < f->nparams; j++) {
            k->params[j] = f->params[j];
            k->params[j].name = NULL;
            k->params[j].dim_name[0] = k->params[j].dim_name[1] = NULL;
        }
        char name[600];
        snprintf(name, sizeof name, "%s.simentry", f->name);
        uint64_t addr = LLVMGetFunctionAddress(s->ee, name);
        if (!addr || k->threads < 1 || k->threads > 1024)
            return snprintf(err, errlen, "%s: no compiled entry, or %d threads", f->name, k->threads), 1;
        k->entry = (void (*)(const uint64_t *))(uintptr_t)addr;
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
        if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3) continue;
        size_t len;
        const char *name = LLVMGetValueName2(g, &len);
        s->shared = realloc(s->shared, sizeof *s->shared * (size_t)(s->nshared + 1));
        SharedArea *a = &s->shared[s->nshared++];
        a->name = xstrdup(name);
        a->addr = (unsigned char *)(uintptr_t)LLVMGetGlobalValueAddress(s->ee, name);
        a->bytes = LLVMABISizeOfType(td, LLVMGlobalGetValueType(g));
        a->shadow = calloc(a->bytes ? a->bytes : 1, sizeof *a->shadow);
        for (size_t i = 0; i < a->bytes; i++) a->shadow[i].copier = NO_THREAD;
        if (!a->addr) return snprintf(err, errlen, "shared global %s has no address", name), 1;
    }
    return 0;
}

ph_status cpusim_load_llvm(const IrModule *m, const char *llvm_ir, cpusim **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!m || !llvm_ir) return fail(PH_ERR_INVALID, err, errlen, "no module");
    if (init_host_target(err, errlen)) return PH_ERR_INVALID;
    cpusim *s = calloc(1, sizeof *s);
    s->ctx = LLVMContextCreate();
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(llvm_ir, strlen(llvm_ir), "phobos.ll");
    LLVMModuleRef mod = NULL;
    char *msg = NULL;
    if (LLVMParseIRInContext(s->ctx, buf, &mod, &msg)) {
        snprintf(err, errlen, "internal error: the emitted LLVM IR does not parse: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    if (set_host_layout(mod, err, errlen) || prepare_module(s, mod, err, errlen)) {
        LLVMDisposeModule(mod);
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    struct LLVMMCJITCompilerOptions jo;
    LLVMInitializeMCJITCompilerOptions(&jo, sizeof jo);
    /* the IR is optimized already; fast instruction selection halves the load time */
    jo.OptLevel = 0;
    if (LLVMCreateMCJITCompilerForModule(&s->ee, mod, &jo, sizeof jo, &msg)) {
        snprintf(err, errlen, "MCJIT: %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    if (resolve(s, m, mod, err, errlen)) {
        cpusim_free(s);
        return PH_ERR_COMPILE;
    }
    *out = s;
    return PH_OK;
}

ph_status cpusim_load(const IrModule *m, cpusim **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!m) return fail(PH_ERR_INVALID, err, errlen, "no module");
    CodegenOptions o = {.target = target_find("sm_90"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *text = NULL;
    if (codegen_emit(m, &o, CG_EMIT_LLVM, &text, err, errlen)) return PH_ERR_COMPILE;
    ph_status st = cpusim_load_llvm(m, text, out, err, errlen);
    free(text);
    return st;
}

void cpusim_free(cpusim *s)
{
    if (!s) return;
    for (int i = 0; i < s->nkernels; i++) { free(s->kernels[i].name); free(s->kernels[i].params); }
    free(s->kernels);
    for (int i = 0; i < s->nshared; i++) { free(s->shared[i].name); free(s->shared[i].shadow); }
    for (int i = 0; i < s->nsites; i++) free(s->sites[i]);
    free(s->sites);
    free(s->shared);
    if (s->stacks) munmap(s->stacks, (size_t)s->nstacks * (STACK_BYTES + PAGE));
    if (s->ee) LLVMDisposeExecutionEngine(s->ee);   /* owns the module */
    LLVMContextDispose(s->ctx);
    free(s);
}
