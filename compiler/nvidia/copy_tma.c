/* copy_tma.c: sm_90a's copy engine: ring slots filled by the bulk tensor
 * copy (TMA), one thread issuing a slot's box (one per 128-byte-row atom)
 * against a tensor map the launch builds, completing on an mbarrier.
 *
 * Groups: each commit closes a group; group g completes on mbarrier g % 8
 * of the kernel's eight, whose (g / 8)-th phase it is: the issuing thread
 * adds each box's bytes to the barrier's expected transactions and, at the
 * commit, arrives (the one arrival the barrier counts); a wait for all but
 * `pending` groups waits, in every thread, for each phase not yet waited
 * for up to that group's. A copy whose slot layout the bulk copy cannot
 * write, or whose tensor map the launch could not build (an address or row
 * stride not 16-byte aligned: the map's flag is 0), or whose window starts
 * inside a 16-byte unit of its row, goes by cp.async as on sm_80, and the
 * waits wait for those groups too. A wait whose slots an async dot
 * releases (WAIT_SLOTS_RELEASED) needs no block barrier for the bulk
 * copies' bytes (each waiting thread saw the phase complete): publish
 * runs one only once a copy of the kernel went by cp.async.
 *
 * Expects: ring slots in layout_shared_atoms (the target's operand layout),
 * 1024-byte aligned. Guarantees: what copy_cp_async guarantees (every
 * element of the window in the slot, zero outside the tensor: the bulk
 * copy's out-of-bounds fill), the slot's bytes visible to every thread that
 * waited for its group. */
#include "codegen/target.h"
#include "nvidia/ptx_asm.h"
#include "nvidia/targets.h"

enum { TMA_BARRIERS = 8 };   /* groups in flight at once at most: more than a ring's stages */

static int box_cols(const Layout *l) { return layout_shared_atom_cols(l); }

/* A slot the bulk copy writes: in the hardware's swizzle, at most 256 rows a box. */
static bool bulk_layout(const Layout *l) { return layout_shared_hw_swizzle(l) && l->rows <= 256; }

/* The descriptor of op's copies, added when new; -1 where op goes by cp.async. */
static int descriptor_of(Cg *c, const IrOp *op, bool add)
{
    const Layout *l = c->plan.of[op->res[0]];
    if (!bulk_layout(l) || c->f->params[op->param].rank != 2) return -1;
    CodegenCopyDesc d = {op->param, l->rows, box_cols(l), layout_shared_hw_swizzle(l)};
    for (int j = 0; j < c->ndescs; j++)
        if (c->descs[j].param == d.param && c->descs[j].rows == d.rows && c->descs[j].cols == d.cols && c->descs[j].swizzle == d.swizzle)
            return j;
    if (!add || c->ndescs == CODEGEN_MAX_COPY_DESCS) return -1;
    c->descs[c->ndescs] = d;
    return c->ndescs++;
}

static void plan_block(Cg *c, const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++) {
        if (b->ops[i]->kind == OP_COPY_ASYNC) descriptor_of(c, b->ops[i], true);
        if (b->ops[i]->body) plan_block(c, b->ops[i]->body);
        if (b->ops[i]->els) plan_block(c, b->ops[i]->els);
    }
}

static void plan_descriptors(Cg *c, const IrFunc *f) { plan_block(c, f->body); }

/* copy_state: the groups committed and waited for, and whether a copy
 * went by cp.async (i32 variables; the last the same in every thread:
 * copies are the whole block's, their fallback decided by kernel
 * parameters and window starts) */
enum { COMMITTED, WAITED, BY_THREADS, COPY_STATES };

static LLVMValueRef barrier_base(Cg *c) { return i32c(c, smem_offset(c, c->copy_buf)); }

/* Group g's mbarrier (a shared pointer), and its address in the shared window. */
static LLVMValueRef group_barrier_ptr(Cg *c, LLVMValueRef g)
{
    return smem_byte_ptr(c, offset_add(c, barrier_base(c), mul(c, urem(c, g, TMA_BARRIERS), 8)));
}

static LLVMValueRef group_barrier(Cg *c, LLVMValueRef g) { return ptx_shared_address(c, group_barrier_ptr(c, g)); }

static LLVMValueRef is_thread0(Cg *c) { return LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, i32c(c, 0), ""); }

static void begin_barriers(Cg *c)
{
    LLVMBuilderRef B = c->b;
    c->copy_buf = smem_buffer(c, SMEM_REGION, 8 * TMA_BARRIERS);
    smem_access(c, c->copy_buf, true);
    static const char *const names[COPY_STATES] = {"groups", "waited", "by_threads"};
    for (int i = 0; i < COPY_STATES; i++) {
        c->copy_state[i] = LLVMBuildAlloca(B, c->ti32, names[i]);
        LLVMBuildStore(B, i32c(c, 0), c->copy_state[i]);
    }
    Guard g = guard_begin(c, is_thread0(c));
    LLVMTypeRef pts[2] = {c->tptr3, c->ti32};
    for (int b = 0; b < TMA_BARRIERS; b++) {
        LLVMValueRef args[2] = {smem_byte_ptr(c, offset_add(c, barrier_base(c), i32c(c, 8 * b))), i32c(c, 1)};
        cg_call(c, "llvm.nvvm.mbarrier.init.shared", c->tvoid, 2, pts, args);
    }
    ptx_fence_mbarrier_init(c);
    guard_end(c, g);
    smem_fixed_barrier(c);
}

/* cp.async, as sm_80 copies, noted for publish */
static void copy_by_threads(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    if (c->copy_buf >= 0) LLVMBuildStore(c->b, i32c(c, 1), c->copy_state[BY_THREADS]);
    copy_cp_async.copy(c, op, l, at, r0, c0);
}

static void copy_bulk(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    int j = descriptor_of(c, op, false);
    if (j < 0) {
        copy_by_threads(c, op, l, at, r0, c0);
        return;
    }
    LLVMBuilderRef B = c->b;
    smem_access(c, c->copy_buf, false);
    LLVMBasicBlockRef bulk = new_bb(c, "tma"), fallback = new_bb(c, "tmafb"), done = new_bb(c, "tmad");
    /* the box's first column on a 16-byte boundary too: the hardware faults
     * (an illegal instruction) on a bulk tensor copy that starts inside one */
    LLVMValueRef col_aligned = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, c0, LLVMConstInt(c->ti64, (unsigned long long)(16 / l->elem - 1), 0), ""),
                                             LLVMConstInt(c->ti64, 0, 0), "");
    LLVMValueRef ok = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, c->desc_ok[j], i32c(c, 0), ""), col_aligned, "");
    LLVMBuildCondBr(B, ok, bulk, fallback);
    LLVMPositionBuilderAtEnd(B, bulk);
    Guard g = guard_begin(c, is_thread0(c));
    ptx_fence_proxy_async(c);   /* the slot's last readers read it through the generic proxy */
    LLVMValueRef bar = group_barrier(c, LLVMBuildLoad2(B, c->ti32, c->copy_state[COMMITTED], ""));
    int cols = box_cols(l), atoms = l->cols / cols;
    ptx_mbarrier_expect_tx(c, bar, i32c(c, (int64_t)l->rows * l->cols * l->elem));
    LLVMValueRef x = LLVMBuildTrunc(B, c0, c->ti32, ""), y = LLVMBuildTrunc(B, r0, c->ti32, "");
    for (int a = 0; a < atoms; a++) {
        LLVMValueRef dst = ptx_shared_address(c, smem_byte_ptr(c, offset_add(c, at, i32c(c, (int64_t)a * l->rows * cols * l->elem))));
        ptx_bulk_tensor_load(c, dst, c->desc_map[j], add(c, x, i32c(c, (int64_t)a * cols)), y, bar);
    }
    guard_end(c, g);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, fallback);
    copy_by_threads(c, op, l, at, r0, c0);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

static void commit_bulk(Cg *c)
{
    LLVMBuilderRef B = c->b;
    if (c->copy_buf < 0) {
        copy_cp_async.commit(c);
        return;
    }
    smem_access(c, c->copy_buf, false);
    LLVMValueRef groups = LLVMBuildLoad2(B, c->ti32, c->copy_state[COMMITTED], "");
    Guard g = guard_begin(c, is_thread0(c));
    LLVMValueRef bar = group_barrier_ptr(c, groups);
    cg_call(c, "llvm.nvvm.mbarrier.arrive.shared", c->ti64, 1, &c->tptr3, &bar);
    guard_end(c, g);
    LLVMBuildStore(B, add(c, groups, i32c(c, 1)), c->copy_state[COMMITTED]);
    copy_cp_async.commit(c);
}

/* Every group up to committed - 1 - pending: each mbarrier phase not yet waited for, in order. */
static void wait_bulk(Cg *c, int pending)
{
    LLVMBuilderRef B = c->b;
    copy_cp_async.wait(c, pending);
    if (c->copy_buf < 0) return;
    smem_access(c, c->copy_buf, false);
    LLVMValueRef last = LLVMBuildSub(B, LLVMBuildLoad2(B, c->ti32, c->copy_state[COMMITTED], ""), i32c(c, 1 + pending), "");
    LLVMBasicBlockRef head = new_bb(c, "tmaw"), spin = new_bb(c, "tmas"), next = new_bb(c, "tman"), done = new_bb(c, "tmawd");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef w = LLVMBuildLoad2(B, c->ti32, c->copy_state[WAITED], "");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLE, w, last, ""), spin, done);
    LLVMPositionBuilderAtEnd(B, spin);
    LLVMValueRef parity = LLVMBuildAnd(B, udiv(c, w, TMA_BARRIERS), i32c(c, 1), "");
    LLVMBuildCondBr(B, ptx_mbarrier_try_wait(c, group_barrier(c, w), parity), next, spin);
    LLVMPositionBuilderAtEnd(B, next);
    LLVMBuildStore(B, add(c, w, i32c(c, 1)), c->copy_state[WAITED]);
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, done);
}

/* A bulk copy's bytes are visible to each thread its wait saw complete;
 * a barrier only once some copy went by cp.async (a uniform branch). The
 * shared-memory plan is not told of it: it may not run, so the plan
 * orders the other buffers' accesses with barriers of its own. */
static void publish_bulk(Cg *c)
{
    if (c->copy_buf < 0) {
        smem_fixed_barrier(c);
        return;
    }
    LLVMBuilderRef B = c->b;
    LLVMValueRef any = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildLoad2(B, c->ti32, c->copy_state[BY_THREADS], ""), i32c(c, 0), "");
    LLVMBasicBlockRef bar = new_bb(c, "tmapub"), done = new_bb(c, "tmapubd");
    LLVMBuildCondBr(B, any, bar, done);
    LLVMPositionBuilderAtEnd(B, bar);
    barrier(c);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

const CopyEngine copy_tma = {"tma", plan_descriptors, begin_barriers, copy_bulk, commit_bulk, wait_bulk, publish_bulk};
