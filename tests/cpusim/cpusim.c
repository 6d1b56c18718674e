/* cpusim.c: the CPU executor of generated kernels (see cpusim.h): here the
 * scheduler of a block's fibers and the launch; cpusim_impl.h lists the
 * other files. How the whole works:
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
 * the launch.
 *
 * sm_90a: wgmma's inline PTX is recognised and lowered by cpusim_asm.c and
 * modelled, a warpgroup collective with its proxy fence and its groups in
 * flight, by cpusim_wgmma.c (which says how); the mbarriers and the bulk
 * tensor copy by cpusim_tma.c: a thread whose try_wait fails is parked
 * until its phase completes, and a block whose threads are all parked or
 * at barriers that cannot be released is a deadlock. */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>

Launch *current_launch;   /* cpusim_impl.h says why a global */

void launch_fail(Launch *L, const char *fmt, ...)
{
    if (L->failed) return;
    L->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->msg, sizeof L->msg, fmt, ap);
    va_end(ap);
}

void yield_to_scheduler(Launch *L, Thread *me) { swapcontext(&me->ctx, &L->sched); }

/* ---- the scheduler ---- */

/* A kernel's access outside mapped memory ends the launch with a message
 * instead of the process: the handler resumes the scheduler, abandoning
 * the block (its fibers are never resumed). It runs on its own stack, so
 * a fiber's stack overflow (its guard page) is reported the same way. */
static void on_fault(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    Launch *L = current_launch;
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
    Launch *L = current_launch;
    L->k->entry(L->slots);
    Thread *me = &L->th[L->cur];
    me->st = TH_EXITED;
    if (me->ncopies)
        launch_fail(L, "block (%u, %u, %u) thread %d ends with a cp.async (in %s) never waited for", L->block[0], L->block[1],
                    L->block[2], L->cur, site_name(L->s, me->copies[0].site));
    if (me->nadds)
        launch_fail(L, "block (%u, %u, %u) thread %d ends with a bulk add (in %s) never waited for", L->block[0], L->block[1],
                    L->block[2], L->cur, site_name(L->s, me->adds[0].site));
    wgmma_thread_end(L, L->cur);
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
    for (int w = 0; w < 32; w++) L->warp_regs[w] = L->k->maxnreg;
    L->reg_pool = 0;   /* a block holds its threads' .maxnreg, no more: what one warpgroup takes another gave */
    drop_async_copies(L);
    drop_wgmma(L);
    drop_tma(L);
    order_begin_block(L);
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
        if (wake_mbarrier_waiters(L)) continue;
        if (release_named_barriers(L)) continue;
        if (release_warps(L)) continue;
        if (L->failed) return;
        int live = 0, at_barrier = 0, at_block = 0, at_warp = 0;
        for (int t = 0; t < L->T; t++) {
            live += L->th[t].st != TH_EXITED;
            at_barrier += L->th[t].st == TH_BARRIER;
            at_block += L->th[t].st == TH_BARRIER && L->th[t].bar_id == 0;
            at_warp += L->th[t].st == TH_WARP;
        }
        if (!live) {
            if (end_epoch(L)) tma_block_end(L);
            return;
        }
        if (at_block == live) {
            if (!end_epoch(L)) return;
            for (int t = 0; t < L->T; t++)
                if (L->th[t].st == TH_BARRIER && L->th[t].bar_id == 0) L->th[t].st = TH_READY;
            next_epoch(L->s);
            continue;
        }
        /* the bulk copies complete as late as they can: a read that does not wait for one sees it in flight */
        if (land_bulk_copies(L)) continue;
        if (L->failed) return;
        char waiting[300];
        describe_mbarrier_wait(L, waiting, sizeof waiting);
        for (int t = 0; t < L->T; t += 32)
            if (L->th[t].st == TH_WARP && L->th[t].op == IN_SETMAXNREG) {
                size_t used = strlen(waiting);
                snprintf(waiting + used, sizeof waiting - used, "; warp %d at setmaxnreg.inc %d with %d, the pool %d", t / 32,
                         L->s->asm_calls[L->th[t].asm_call].regs, L->warp_regs[t / 32], L->reg_pool);
                break;
            }
        launch_fail(L, "deadlock in block (%u, %u, %u): %d threads at a barrier, %d at warp collectives, %d waiting on mbarriers, "
                    "%d exited%s",
                    L->block[0], L->block[1], L->block[2], at_barrier, at_warp, live - at_barrier - at_warp, L->T - live, waiting);
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

ph_status status_message(ph_status st, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return st;
}

/* Packs the arguments into slots as the kernel's trampoline reads them,
 * by the kernel ABI (ir/abi.h: a tensor is pointer, dim0, dim1, dim1 1 for
 * rank 1; rank 3 and 4 then its other dims and its strides, row-major
 * ones where none are given). */
static ph_status pack_args(const SimKernel *k, const ph_arg *args, int nargs, uint64_t *slots, int *nslots, char *err,
                           size_t errlen)
{
    if (nargs != k->nparams)
        return status_message(PH_ERR_ARGS, err, errlen, "%s takes %d arguments, got %d", k->name, k->nparams, nargs);
    if (nargs && !args) return status_message(PH_ERR_INVALID, err, errlen, "%s: null argument array", k->name);
    int n = 0;
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &k->params[i];
        ph_arg_kind want = p->is_tensor ? PH_ARG_TENSOR : p->dt == DT_I32 ? PH_ARG_I32 : p->dt == DT_I64 ? PH_ARG_I64 : PH_ARG_F32;
        if (args[i].kind != want)
            return status_message(PH_ERR_ARGS, err, errlen, "%s: argument %d is not a%s", k->name, i + 1,
                        want == PH_ARG_TENSOR ? " tensor" : want == PH_ARG_I32 ? "n i32" : want == PH_ARG_I64 ? "n i64" : "n f32");
        if (p->is_tensor) {
            if (!args[i].ptr) return status_message(PH_ERR_INVALID, err, errlen, "%s: argument %d is a null tensor", k->name, i + 1);
            IrAbiSlot abi[IR_ABI_MAX_SLOTS];
            bool given = false;
            for (int a = 0; a < p->rank; a++) given = given || args[i].strides[a];
            for (int j = 0, nj = ir_abi_slots(p, abi); j < nj; j++) {
                int d = ir_abi_dim_axis(abi[j]), st = ir_abi_stride_axis(abi[j]);
                int64_t v = d >= 0 ? (d < p->rank ? args[i].dims[d] : 1) : 0;
                if (st >= 0 && given) v = args[i].strides[st];
                if (st >= 0 && !given)
                    for (int a = (v = 1, st + 1); a < p->rank; a++) v *= args[i].dims[a];
                slots[n++] = abi[j] == IR_ABI_TENSOR_ADDRESS ? args[i].ptr : (uint64_t)v;
            }
        } else if (want == PH_ARG_I32) {
            slots[n++] = (uint32_t)args[i].i32;
        } else if (want == PH_ARG_I64) {
            slots[n++] = (uint64_t)ph_arg_i64_value(&args[i]);
        } else {
            slots[n++] = f32_slot(args[i].f32);
        }
    }
    *nslots = n;
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
        uint64_t elems = 0;
        if (p->rank <= 2) {
            int64_t d0 = (int64_t)slots[slot + 1], d1 = (int64_t)slots[slot + 2];
            elems = d0 > 0 && d1 > 0 ? (uint64_t)d0 * (uint64_t)d1 : 0;
        } else {   /* dims, then strides: the span the strides reach */
            elems = 1;
            for (int a = 0; a < p->rank; a++) {
                int64_t d = (int64_t)slots[slot + 1 + a], st = (int64_t)slots[slot + 1 + p->rank + a];
                elems += d > 0 && st > 0 ? (uint64_t)(d - 1) * (uint64_t)st : 0;
            }
        }
        spans[n].lo = slots[slot];
        spans[n].hi = slots[slot] + elems * (uint64_t)ir_dtype_bytes(p->dt);
        n++;
        IrAbiSlot abi[IR_ABI_MAX_SLOTS];
        slot += ir_abi_slots(p, abi);
    }
    return n;
}

ph_status cpusim_launch(cpusim *s, const char *kernel, const unsigned grid[3], const ph_arg *args, int nargs,
                        char *err, size_t errlen)
{
    if (!s) return status_message(PH_ERR_INVALID, err, errlen, "no simulator");
    const SimKernel *k = find_kernel(s, kernel);
    if (!k) return status_message(PH_ERR_NOT_FOUND, err, errlen, "no entry named %s", kernel ? kernel : "(null)");
    if (!grid || !grid[0] || !grid[1] || !grid[2]) return status_message(PH_ERR_GRID, err, errlen, "%s: a grid of zero blocks", k->name);
    if (nargs < 0 || nargs > 256) return status_message(PH_ERR_ARGS, err, errlen, "%s: %d arguments", k->name, nargs);
    uint64_t slots[IR_ABI_MAX_SLOTS * 256 + 2 * CODEGEN_MAX_COPY_DESCS + 1];
    int nslots = 0;
    ph_status st = pack_args(k, args, nargs, slots, &nslots, err, errlen);
    if (st != PH_OK) return st;
    if (current_launch) return status_message(PH_ERR_STATE, err, errlen, "a launch is already running");
    if (ensure_stacks(s, k->threads)) return status_message(PH_ERR_INVALID, err, errlen, "no memory for %d fiber stacks", k->threads);
    Launch L = {.s = s, .k = k, .slots = slots, .grid = {grid[0], grid[1], grid[2]}, .T = k->threads};
    L.th = calloc((size_t)k->threads, sizeof *L.th);
    if (!L.th) return status_message(PH_ERR_INVALID, err, errlen, "out of memory");
    pack_tensor_maps(&L, args, slots, nslots);
    L.ntensors = tensor_spans(k, slots, L.tensors);
    L.area = k->area >= 0 ? &s->shared[k->area] : NULL;
    static unsigned char altstack[1 << 16];
    FaultTrap old;
    trap_faults(&old, altstack, sizeof altstack);
    current_launch = &L;
    for (unsigned z = 0; z < grid[2] && !L.failed; z++)
        for (unsigned y = 0; y < grid[1] && !L.failed; y++)
            for (unsigned x = 0; x < grid[0] && !L.failed; x++) {
                for (int i = 0; i < s->nshared; i++) memset(s->shared[i].addr, 0xff, s->shared[i].bytes);
                L.block[0] = x, L.block[1] = y, L.block[2] = z;
                run_block(&L);
            }
    current_launch = NULL;
    untrap_faults(&old);
    drop_async_copies(&L);
    drop_wgmma(&L);
    drop_tma(&L);
    order_end_launch(&L);
    free(L.wgmma);
    free(L.bulk);
    for (int t = 0; t < L.T; t++) free(L.th[t].copies), free(L.th[t].adds);
    free(L.th);
    if (L.failed) return status_message(PH_ERR_INVALID, err, errlen, "%s: %s", k->name, L.msg);
    return PH_OK;
}

