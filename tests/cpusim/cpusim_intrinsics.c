/* cpusim_intrinsics.c: what the executor computes for the llvm.nvvm.*
 * intrinsics the IR wrappers pass it (special registers, barriers, the
 * approximate math, PTX max/min), the warp collectives once every lane has
 * posted (shfl.sync, ldmatrix, mma in the PTX ISA's fragment layouts;
 * wgmma's in cpusim_wgmma.c), and the half and bfloat libcalls of the x86
 * back end. */
#define _GNU_SOURCE
#include "cpusim_impl.h"

#include <llvm-c/Support.h>
#include <math.h>
#include <string.h>

const char *const intrinsic_names[IN_COUNT] = {
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
    "llvm.nvvm.mbarrier.init.shared", "llvm.nvvm.mbarrier.arrive.shared", "llvm.nvvm.mma.m16n8k32.row.col.s8",
    "llvm.nvvm.barrier.sync.cnt", "llvm.nvvm.bar.warp.sync",
    /* inline PTX (cpusim_asm.c), named for messages */
    "wgmma.mma_async", "wgmma.wait_group", "wgmma.fence", "wgmma.commit_group", "fence.proxy.async", "mma.sync fp8", "setmaxnreg", "fence.acq_rel.cta",
    "fence.mbarrier_init", "mbarrier.expect_tx", "mbarrier.try_wait", "cp.async.bulk.tensor", "bar.arrive",
    "red.global.add.v", "cp.reduce.async.bulk", "cp.async.bulk.wait_group", "cp.async.bulk.wait_group.read", "cp.async.bulk",
    "cp.reduce.async.bulk.tensor",
};

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

/* A subnormal as the .ftz forms of PTX take and give it: a zero of its sign. */
static float flush_subnormal(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

/* Called by the IR wrappers: in[] holds the intrinsic's arguments, out[]
 * receives its results (an aggregate's members in order). */
void sim_intrinsic(int32_t id, const uint64_t *in, uint64_t *out)
{
    Launch *L = current_launch;
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
    case IN_BARRIER: case IN_BARRIER_CNT:
        me->st = TH_BARRIER;
        me->bar_id = id == IN_BARRIER ? 0 : lo32(in[0]), me->bar_count = id == IN_BARRIER ? 0 : lo32(in[1]);
        if (id == IN_BARRIER_CNT && !named_barrier_ok(L, "bar.sync", me->bar_id, me->bar_count)) setcontext(&L->sched);
        yield_to_scheduler(L, me);
        return;
    case IN_MBAR_INIT: case IN_MBAR_ARRIVE: sim_mbarrier_intrinsic(L, id, in, out); return;
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

/* mma.m16n8k32.row.col.s8, s32 += s8 x s8, wrapping. With g = lane/4,
 * q = lane%4: A's registers hold four i8 each, A[g][4q..], A[g+8][4q..],
 * A[g][4q+16..], A[g+8][4q+16..] (the lowest column in the lowest byte);
 * B's hold B[4q..][g], B[4q+16..][g]; C and D as m16n8k16's. */
static void warp_mma_s8(Thread *w)
{
    int8_t A[16][32], B[32][8];
    uint32_t C[16][8];
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int r = 0; r < 4; r++)
            for (int e = 0; e < 4; e++) A[g + (r & 1) * 8][4 * q + (r >> 1) * 16 + e] = (int8_t)(lo32(w[t].in[r]) >> (8 * e));
        for (int r = 0; r < 2; r++)
            for (int e = 0; e < 4; e++) B[4 * q + r * 16 + e][g] = (int8_t)(lo32(w[t].in[4 + r]) >> (8 * e));
        for (int r = 0; r < 4; r++) C[g + (r >> 1) * 8][2 * q + (r & 1)] = lo32(w[t].in[6 + r]);
    }
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int r = 0; r < 4; r++) {
            int i = g + (r >> 1) * 8, j = 2 * q + (r & 1);
            uint32_t sum = C[i][j];
            for (int k = 0; k < 32; k++) sum += (uint32_t)(A[i][k] * B[k][j]);
            w[t].out[r] = sum;
        }
    }
}

/* mma.m16n8k32.row.col.f32.{e4m3|e5m2}.{e4m3|e5m2}.f32 (inline PTX): the
 * fragments as the s8 form's, four fp8 per register; products exact, the
 * sum rounded once to f32. */
static void warp_mma_f8(Launch *L, Thread *w)
{
    const AsmCall *a = &L->s->asm_calls[w[0].asm_call];
    float A[16][32], B[32][8], C[16][8];
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int r = 0; r < 4; r++)
            for (int e = 0; e < 4; e++) {
                uint8_t x = (uint8_t)(lo32(w[t].in[r]) >> (8 * e));
                A[g + (r & 1) * 8][4 * q + (r >> 1) * 16 + e] = a->a_e5m2 ? ph_e5m2_to_f32(x) : ph_e4m3_to_f32(x);
            }
        for (int r = 0; r < 2; r++)
            for (int e = 0; e < 4; e++) {
                uint8_t x = (uint8_t)(lo32(w[t].in[4 + r]) >> (8 * e));
                B[4 * q + r * 16 + e][g] = a->b_e5m2 ? ph_e5m2_to_f32(x) : ph_e4m3_to_f32(x);
            }
        for (int r = 0; r < 4; r++) C[g + (r >> 1) * 8][2 * q + (r & 1)] = slot_f32(w[t].in[6 + r]);
    }
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int r = 0; r < 4; r++) {
            int i = g + (r >> 1) * 8, j = 2 * q + (r & 1);
            double sum = C[i][j];
            for (int k = 0; k < 32; k++) sum += (double)A[i][k] * B[k][j];
            w[t].out[r] = f32_slot((float)sum);
        }
    }
}

/* setmaxnreg of the warp from thread lo, with the kernel's .maxnreg: .dec
 * gives the block's pool what the warp had above the count, .inc takes
 * what it needs from the pool, and waits (false) while the pool is short:
 * a block whose warpgroups ask for more than their .maxnreg gave never
 * gets it, and ends in the scheduler's deadlock. */
static bool take_registers(Launch *L, int lo)
{
    int *mine = &L->warp_regs[lo / 32], want = L->s->asm_calls[L->th[lo].asm_call].regs;
    if (!L->k->maxnreg) return true;   /* registers not modelled */
    if (want < 0 && -want > *mine)
        launch_fail(L, "warp %d: setmaxnreg.dec to %d registers where it has %d", lo / 32, -want, *mine);
    else if (want > 0 && want < *mine)
        launch_fail(L, "warp %d: setmaxnreg.inc to %d registers where it has %d", lo / 32, want, *mine);
    if (L->failed) return false;
    int delta = (want < 0 ? -want : want) - *mine;
    if (delta > L->reg_pool) return false;
    L->reg_pool -= delta, *mine += delta;
    return true;
}

/* Computes the collectives of the warps whose live lanes all posted one;
 * true when any did. */
bool release_warps(Launch *L)
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
        if (op == IN_WGMMA) {   /* a warpgroup's: computed once its four warps posted it */
            any |= release_wgmma(L, lo);
            continue;
        }
        if (op == IN_SETMAXNREG && !take_registers(L, lo)) continue;
        if (op != IN_SHFL_I32 && op != IN_SHFL_F32 && op != IN_WARP_SYNC && n != 32) {
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
        case IN_MMA_S8: warp_mma_s8(w); break;
        case IN_MMA_F8: warp_mma_f8(L, w); break;
        case IN_WGMMA_WAIT: warp_wgmma_wait(L, w); break;
        case IN_WARP_SYNC: order_warp_sync(L, lo, n); break;
        case IN_SETMAXNREG: break;   /* registers are not modelled: the warp only had to reach it whole */
        }
        for (int l = 0; l < n; l++) w[l].st = TH_READY;
        any = true;
    }
    return any;
}

/* ---- the half and bfloat libcalls of the x86 back end ---- */

static _Float16 bits_as_half(uint16_t h) { _Float16 r; memcpy(&r, &h, 2); return r; }
static _Float16 sim_truncsfhf2(float f) { return bits_as_half(ph_f32_to_f16(f)); }
static _Float16 sim_truncdfhf2(double d) { return bits_as_half(ph_f32_to_f16((float)d)); }
static float sim_extendhfsf2(_Float16 x) { uint16_t h; memcpy(&h, &x, 2); return ph_f16_to_f32(h); }
/* bf16 travels in the same register as half: the low 16 bits of xmm0 */
static _Float16 sim_truncsfbf2(float f) { return bits_as_half(ph_f32_to_bf16(f)); }
static _Float16 sim_truncdfbf2(double d) { return bits_as_half(ph_f32_to_bf16((float)d)); }

void add_libcalls(void)
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

