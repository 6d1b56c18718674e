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
    return copy_descriptor(c, (CodegenCopyDesc){op->param, l->rows, box_cols(l), layout_shared_hw_swizzle(l), 2}, add);
}

/* A vector ring's slot (async.c: a column of f32 as the tensor holds it,
 * a one-column tensor's rows one after another) goes in one 1-D bulk copy
 * where the window lies inside the tensor and starts on a 16-byte
 * boundary; else element by element, as a slot the tensor copy cannot
 * write. */
static bool column_slot(const Layout *l) { return l->kind == LAY_SHARED && l->cols == 1 && l->stride == 1; }

static void plan_block(Cg *c, const IrBlock *b)
{
    for (int i = 0; i < b->nops; i++) {
        if (b->ops[i]->kind == OP_COPY_ASYNC) {
            descriptor_of(c, b->ops[i], true);
            c->slots_read_by_lanes |= column_slot(c->plan.of[b->ops[i]->res[0]]);
        }
        if (b->ops[i]->body) plan_block(c, b->ops[i]->body);
        if (b->ops[i]->els) plan_block(c, b->ops[i]->els);
    }
}

static void plan_descriptors(Cg *c, const IrFunc *f)
{
    c->slots_read_by_lanes = false;
    plan_block(c, f->body);
}

/* copy_state: the groups committed and waited for, and whether a copy
 * went by cp.async (i32 variables; the last the same in every thread:
 * copies are the whole block's, their fallback decided by kernel
 * parameters and window starts) */
enum { COMMITTED, WAITED, BY_THREADS, COPY_STATES };
/* and warp-specialized (copy_tma_ws.c), each thread's own: groups
 * released, the slots of groups committed and not released (4 bits each,
 * the oldest lowest), the phase bits of the full and empty mbarriers (bit
 * s: slot s's next phase's parity), the open group's slot, whether the
 * producer waited for that slot to be empty, WAITED before the last wait */
enum { RELEASED = COPY_STATES, QUEUE, FULL_PHASES, EMPTY_PHASES, GROUP_SLOT, EMPTY_DONE, KEEP, WS_STATES };

static LLVMValueRef barrier_base(Cg *c) { return i32c(c, smem_offset(c, c->copy_buf)); }

/* Group g's mbarrier (a shared pointer), and its address in the shared window. */
static LLVMValueRef group_barrier_ptr(Cg *c, LLVMValueRef g)
{
    return smem_byte_ptr(c, offset_add(c, barrier_base(c), mul(c, urem(c, g, TMA_BARRIERS), 8)));
}

static LLVMValueRef group_barrier(Cg *c, LLVMValueRef g) { return ptx_shared_address(c, group_barrier_ptr(c, g)); }

static LLVMValueRef is_thread0(Cg *c) { return LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, i32c(c, 0), ""); }

/* ---- channels (warp-specialized): rings committed together, each
 * channel with slot numbers (barriers) and consumer counters of its own:
 * its slot s's barriers are those of slot base + s, and its groups are
 * waited for and released in order among themselves, so a ring nested
 * around another (a persistent kernel's Q, held through the inner loop
 * that K and V turn in) keeps its slot while the inner rings turn. A
 * kernel with one channel is as it was without them. */
static const int chan_counters[5] = {COMMITTED, WAITED, RELEASED, QUEUE, KEEP};

/* Channel ch's counter `state` (one of chan_counters): channel 0's are the engine's own. */
static LLVMValueRef chan_ptr(Cg *c, int ch, int state)
{
    if (!ch) return c->copy_state[state];
    for (int i = 0; i < 5; i++)
        if (chan_counters[i] == state) return c->copy_chan_state[ch][i];
    return NULL;
}

static LLVMValueRef chan_load(Cg *c, int ch, int state) { return LLVMBuildLoad2(c->b, c->ti32, chan_ptr(c, ch, state), ""); }
static void chan_store(Cg *c, int ch, int state, LLVMValueRef v) { LLVMBuildStore(c->b, v, chan_ptr(c, ch, state)); }

static int ring_channel(const Cg *c, int ring) { return ring >= 0 && ring < CG_MAX_RINGS && c->copy_ring_chan[ring] > 0 ? c->copy_ring_chan[ring] : 0; }

/* The channels of the copies in b and below (a bitmask). */
static unsigned channels_in(const Cg *c, const IrBlock *b)
{
    unsigned m = 0;
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_COPY_ASYNC) m |= 1u << ring_channel(c, op->axis);
        m |= channels_in(c, op->body) | channels_in(c, op->els);
    }
    return m;
}

/* Each wait of b and below that gives no slots (a loop's last, for the
 * copies past its range) drains the channels of the nearest op before it
 * that copies (the loop); with none, every channel. */
static void plan_drains(Cg *c, const IrBlock *b)
{
    for (int i = 0; b && i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        if (op->kind == OP_WAIT_ASYNC && !op->nargs && c->copy_ndrains < (int)(sizeof c->copy_drains / sizeof c->copy_drains[0])) {
            unsigned m = 0;
            for (int j = i - 1; j >= 0 && !m; j--) {
                const IrOp *p = b->ops[j];
                m = p->kind == OP_COPY_ASYNC ? 1u << ring_channel(c, p->axis) : channels_in(c, p->body) | channels_in(c, p->els);
            }
            c->copy_drains[c->copy_ndrains].op = op;
            c->copy_drains[c->copy_ndrains++].chans = m;
        }
        plan_drains(c, op->body);
        plan_drains(c, op->els);
    }
}

static void plan_channels(Cg *c)
{
    int stages[CG_MAX_RINGS];
    c->copy_nchan = ir_ring_channels(c->f, c->copy_ring_chan, stages);
    for (int ch = 0, base = 0; ch < c->copy_nchan; base += stages[ch++]) c->copy_chan_base[ch] = base;
    static const char *const names[5] = {"chgroups", "chwaited", "chreleased", "chqueue", "chkeep"};
    for (int ch = 1; ch < c->copy_nchan; ch++)
        for (int i = 0; i < 5; i++) {
            c->copy_chan_state[ch][i] = LLVMBuildAlloca(c->b, c->ti32, names[i]);
            LLVMBuildStore(c->b, i32c(c, 0), c->copy_chan_state[ch][i]);
        }
    c->copy_open_chan = 0;
    c->copy_ndrains = 0;
    plan_drains(c, c->f->body);
}

/* The channels (a bitmask) whose slots op's ring operands are; every
 * channel for NULL, for an op with none, or for a wait that gives none
 * and was not planned. */
static unsigned channels_of(const Cg *c, const IrOp *op)
{
    unsigned all = c->copy_nchan >= 32 ? ~0u : (1u << (c->copy_nchan > 0 ? c->copy_nchan : 1)) - 1, m = 0;
    if (!op) return all;
    if (op->kind == OP_WAIT_ASYNC && !op->nargs) {
        for (int i = 0; i < c->copy_ndrains; i++)
            if (c->copy_drains[i].op == op) return c->copy_drains[i].chans ? c->copy_drains[i].chans : all;
        return all;
    }
    for (int i = 0; i < op->nargs; i++)
        if (c->ring_of[op->args[i]] >= 0) m |= 1u << ring_channel(c, c->ring_of[op->args[i]]);
    return m ? m : all;
}

static void begin_barriers(Cg *c)
{
    LLVMBuilderRef B = c->b;
    bool ws = c->f->producer != NULL;   /* a second row of mbarriers: the slots' empty ones */
    c->copy_buf = smem_buffer(c, SMEM_REGION, 8 * TMA_BARRIERS * (ws ? 2 : 1));
    smem_access(c, c->copy_buf, true);
    static const char *const names[WS_STATES] = {"groups", "waited", "by_threads", "released", "queue",
                                                 "full_phases", "empty_phases", "group_slot", "empty_done", "keep"};
    for (int i = 0; i < (ws ? WS_STATES : COPY_STATES); i++) {
        c->copy_state[i] = LLVMBuildAlloca(B, c->ti32, names[i]);
        LLVMBuildStore(B, i32c(c, 0), c->copy_state[i]);
    }
    if (ws) plan_channels(c);
    Guard g = guard_begin(c, is_thread0(c));
    LLVMTypeRef pts[2] = {c->tptr3, c->ti32};
    /* a full barrier waits for the producer's one arrival, an empty one for each consumer warp's (ws_release) */
    int empty = c->slots_read_by_lanes ? c->T : c->T / 32;
    for (int b = 0; b < TMA_BARRIERS * (ws ? 2 : 1); b++) {
        LLVMValueRef args[2] = {smem_byte_ptr(c, offset_add(c, barrier_base(c), i32c(c, 8 * b))), i32c(c, b < TMA_BARRIERS ? 1 : empty)};
        cg_call(c, "llvm.nvvm.mbarrier.init.shared", c->tvoid, 2, pts, args);
    }
    ptx_fence_mbarrier_init(c);
    guard_end(c, g);
    smem_fixed_barrier(c);
}

/* ---- warp-specialized (IrFunc.producer): the producer's copies ----
 * Slot s of the rings has two mbarriers: full[s] (one arrival: the
 * producer's, with the copies' bytes as transactions) and empty[s] (one
 * arrival from each consumer warp, or from each consumer thread where
 * threads read slots with loads of their own: ws_release). The producer,
 * before a group's first copy into slot s, waits for empty[s]'s phase of the slot's
 * previous filling (a fresh barrier's parity-1 wait passes at once),
 * issues the group's copies on full[s] and at the commit arrives on it.
 * A consumer keeps the slots of the groups it committed and has not
 * released in a queue, waits for full[s] of each group in order and, once
 * nothing reads a group's slot (ws_release), arrives on empty[s]. Phase
 * bits are per slot, in a thread's own registers. */

/* Whether the window at column c0 may go by the bulk copy: the launch built
 * descriptor j's map, and the box's first column is on a 16-byte boundary
 * too (the hardware faults, an illegal instruction, on a bulk tensor copy
 * that starts inside one). */
static LLVMValueRef bulk_allowed(Cg *c, const Layout *l, int j, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef col_aligned = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, c0, LLVMConstInt(c->ti64, (unsigned long long)(16 / l->elem - 1), 0), ""),
                                             LLVMConstInt(c->ti64, 0, 0), "");
    return LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, c->desc_ok[j], i32c(c, 0), ""), col_aligned, "");
}

/* The window's boxes (one per atom of the slot's layout) into the slot at
 * `at`, completing on mbarrier `bar`, which expects their bytes. */
static void load_boxes(Cg *c, const Layout *l, LLVMValueRef at, int j, LLVMValueRef r0, LLVMValueRef c0, LLVMValueRef bar)
{
    LLVMBuilderRef B = c->b;
    int cols = box_cols(l), atoms = l->cols / cols;
    ptx_mbarrier_expect_tx(c, bar, i32c(c, (int64_t)l->rows * l->cols * l->elem));
    LLVMValueRef x = LLVMBuildTrunc(B, c0, c->ti32, ""), y = LLVMBuildTrunc(B, r0, c->ti32, "");
    for (int a = 0; a < atoms; a++) {
        LLVMValueRef dst = ptx_shared_address(c, smem_byte_ptr(c, offset_add(c, at, i32c(c, (int64_t)a * l->rows * cols * l->elem))));
        ptx_bulk_tensor_load(c, dst, c->desc_map[j], add(c, x, i32c(c, (int64_t)a * cols)), y, bar);
    }
}

static LLVMValueRef column_from(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef r0)
{
    LLVMValueRef tensor = LLVMBuildPtrToInt(c->b, c->tensor_ptr[op->param], c->ti64, "");
    return LLVMBuildAdd(c->b, tensor, LLVMBuildMul(c->b, r0, LLVMConstInt(c->ti64, (unsigned long long)l->elem, 0), ""), "");
}

static LLVMValueRef column_bulk_allowed(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef zero = LLVMConstInt(c->ti64, 0, 0), one = LLVMConstInt(c->ti64, 1, 0);
    LLVMValueRef end = LLVMBuildAdd(B, r0, LLVMConstInt(c->ti64, (unsigned long long)l->rows, 0), "");
    LLVMValueRef ok = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, r0, zero, ""), LLVMBuildICmp(B, LLVMIntSLE, end, c->tensor_dim0[op->param], ""), "");
    ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, c->tensor_dim1[op->param], one, ""), "");
    ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, c0, zero, ""), "");
    LLVMValueRef low = LLVMBuildAnd(B, column_from(c, op, l, r0), LLVMConstInt(c->ti64, 15, 0), "");
    return LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, low, zero, ""), "");
}

static void load_column(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef bar)
{
    int bytes = l->rows * l->elem;
    ptx_mbarrier_expect_tx(c, bar, i32c(c, bytes));
    ptx_bulk_load(c, ptx_shared_address(c, smem_byte_ptr(c, at)), column_from(c, op, l, r0), bytes, bar);
}

/* Whether the window may go by a bulk copy: descriptor j's tensor copy, or
 * a column's 1-D copy (j < 0); and that copy, its bytes on mbarrier bar. */
static LLVMValueRef by_bulk(Cg *c, const IrOp *op, const Layout *l, int j, LLVMValueRef r0, LLVMValueRef c0)
{
    if (j >= 0) return bulk_allowed(c, l, j, c0);
    return column_slot(l) ? column_bulk_allowed(c, op, l, r0, c0) : LLVMConstInt(c->ti1, 0, 0);
}

static void load_bulk(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, int j, LLVMValueRef r0, LLVMValueRef c0,
                      LLVMValueRef bar)
{
    if (j >= 0) load_boxes(c, l, at, j, r0, c0, bar);
    else load_column(c, op, l, at, r0, bar);
}

static LLVMValueRef ws_load(Cg *c, int state) { return LLVMBuildLoad2(c->b, c->ti32, c->copy_state[state], ""); }
static void ws_store(Cg *c, int state, LLVMValueRef v) { LLVMBuildStore(c->b, v, c->copy_state[state]); }

/* full[s] (row 0) or empty[s] (row 1): a shared pointer */
static LLVMValueRef slot_barrier_ptr(Cg *c, int row, LLVMValueRef s)
{
    return smem_byte_ptr(c, offset_add(c, barrier_base(c), add(c, mul(c, s, 8), i32c(c, 8 * TMA_BARRIERS * row))));
}

/* Waits until bar's phase of parity `parity` completed. */
static void wait_phase(Cg *c, const char *name, LLVMValueRef bar, LLVMValueRef parity)
{
    ptx_mbarrier_wait(c, name, ptx_shared_address(c, bar), parity);
}

/* The bit of slot s in the phase bits of state, flipped for the next phase; its value before. */
static LLVMValueRef next_phase(Cg *c, int state, LLVMValueRef s)
{
    LLVMValueRef bits = ws_load(c, state), bit = LLVMBuildShl(c->b, i32c(c, 1), s, "");
    ws_store(c, state, LLVMBuildXor(c->b, bits, bit, ""));
    return LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, bits, s, ""), i32c(c, 1), "");
}

/* The window element by element, zero outside the tensor, stored by the
 * producer's one thread (a tensor map the launch could not build, a box
 * starting inside a 16-byte unit), then fenced for the async proxy that
 * the wgmma reading it is: the store precedes the full barrier's arrival. */
static void ws_copy_elements(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    LLVMBuilderRef B = c->b;
    LLVMTypeRef et = dtype_ty(c, vtype(c, op->res[0]).dt);
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B), body = new_bb(c, "wsel"), after = new_bb(c, "wseld");
    LLVMBuildBr(B, body);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef i = LLVMBuildPhi(B, c->ti32, "");
    LLVMValueRef row = LLVMBuildUDiv(B, i, i32c(c, l->cols), ""), col = LLVMBuildURem(B, i, i32c(c, l->cols), "");
    LLVMValueRef gr = LLVMBuildAdd(B, r0, LLVMBuildZExt(B, row, c->ti64, ""), "");
    LLVMValueRef gc = LLVMBuildAdd(B, c0, LLVMBuildZExt(B, col, c->ti64, ""), "");
    LLVMValueRef inb = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, gr, d0, ""), LLVMBuildICmp(B, LLVMIntULT, gc, d1, ""), "");
    LLVMValueRef off = LLVMBuildSelect(B, inb, LLVMBuildAdd(B, LLVMBuildMul(B, gr, d1, ""), gc, ""), LLVMConstInt(c->ti64, 0, 0), "");
    LLVMValueRef x = LLVMBuildLoad2(B, et, LLVMBuildGEP2(B, et, c->tensor_ptr[op->param], &off, 1, ""), "");
    x = LLVMBuildSelect(B, inb, x, LLVMConstNull(et), "");
    LLVMBuildStore(B, x, smem_byte_ptr(c, add(c, at, shared_offset(c, l, row, col))));
    LLVMValueRef next = add(c, i, i32c(c, 1));
    LLVMValueRef zero = i32c(c, 0);
    LLVMAddIncoming(i, &zero, &pre, 1);
    LLVMAddIncoming(i, &next, &body, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, next, i32c(c, (int64_t)l->rows * l->cols), ""), body, after);
    LLVMPositionBuilderAtEnd(B, after);
    ptx_fence_proxy_async(c);
}

/* A copy into slot s: the producer issues it (after waiting, at its
 * group's first copy, for the slot to be empty); a consumer notes s. */
static void ws_copy(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0, int j)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef s = c->vals[op->args[op->nargs - 1]].v[0];
    c->copy_open_chan = ring_channel(c, op->axis);
    if (c->copy_chan_base[c->copy_open_chan]) s = add(c, s, i32c(c, c->copy_chan_base[c->copy_open_chan]));
    ws_store(c, GROUP_SLOT, s);
    if (c->role != CG_PRODUCER) return;
    LLVMBasicBlockRef wait = new_bb(c, "wsempty"), go = new_bb(c, "wsgo");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, ws_load(c, EMPTY_DONE), i32c(c, 0), ""), wait, go);
    LLVMPositionBuilderAtEnd(B, wait);
    wait_phase(c, "wsemptywait", slot_barrier_ptr(c, 1, s), LLVMBuildXor(B, next_phase(c, EMPTY_PHASES, s), i32c(c, 1), ""));
    ws_store(c, EMPTY_DONE, i32c(c, 1));
    LLVMBuildBr(B, go);
    LLVMPositionBuilderAtEnd(B, go);
    LLVMValueRef bar = ptx_shared_address(c, slot_barrier_ptr(c, 0, s));
    LLVMBasicBlockRef bulk = new_bb(c, "wstma"), slow = new_bb(c, "wsslow"), done = new_bb(c, "wscopied");
    bool column = j < 0 && column_slot(l);
    LLVMBuildCondBr(B, by_bulk(c, op, l, j, r0, c0), bulk, slow);
    LLVMPositionBuilderAtEnd(B, bulk);
    if (j >= 0 || column) {
        ptx_fence_proxy_async(c);
        load_bulk(c, op, l, at, j, r0, c0, bar);
    }
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, slow);
    /* a column's slot, whose last filling was the 1-D bulk copy's (the
     * async proxy's) but for a window past the tensor's end, seen complete
     * by this thread too before its own stores: the phase the consumers
     * saw before releasing the slot, so the wait passes at once (its
     * parity is the empty wait's above) */
    if (column) {
        LLVMValueRef seen = LLVMBuildAnd(B, LLVMBuildLShr(B, ws_load(c, EMPTY_PHASES), s, ""), i32c(c, 1), "");
        wait_phase(c, "wsfullseen", slot_barrier_ptr(c, 0, s), seen);
    }
    ws_copy_elements(c, op, l, at, r0, c0);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
}

/* The producer arrives on its group's full barrier; a consumer queues the group's slot. */
static void ws_commit(Cg *c)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef s = ws_load(c, GROUP_SLOT);
    if (c->role == CG_PRODUCER) {
        LLVMValueRef bar = slot_barrier_ptr(c, 0, s);
        cg_call(c, "llvm.nvvm.mbarrier.arrive.shared", c->ti64, 1, &c->tptr3, &bar);
        ws_store(c, EMPTY_DONE, i32c(c, 0));
        return;
    }
    int ch = c->copy_open_chan;
    LLVMValueRef groups = chan_load(c, ch, COMMITTED), n = LLVMBuildSub(B, groups, chan_load(c, ch, RELEASED), "");
    chan_store(c, ch, QUEUE, LLVMBuildOr(B, chan_load(c, ch, QUEUE), LLVMBuildShl(B, s, mul(c, n, 4), ""), ""));
    chan_store(c, ch, COMMITTED, add(c, groups, i32c(c, 1)));
}

/* A consumer waits for the full phase of each group of channel ch up to
 * its committed - 1 - pending. */
static void ws_wait_channel(Cg *c, int ch, int pending)
{
    LLVMBuilderRef B = c->b;
    chan_store(c, ch, KEEP, chan_load(c, ch, WAITED));
    LLVMValueRef last = LLVMBuildSub(B, chan_load(c, ch, COMMITTED), i32c(c, 1 + pending), "");
    LLVMBasicBlockRef head = new_bb(c, "wswait"), one = new_bb(c, "wsfull"), done = new_bb(c, "wswaited");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef w = chan_load(c, ch, WAITED);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLE, w, last, ""), one, done);
    LLVMPositionBuilderAtEnd(B, one);
    LLVMValueRef at = mul(c, LLVMBuildSub(B, w, chan_load(c, ch, RELEASED), ""), 4);
    LLVMValueRef s = LLVMBuildAnd(B, LLVMBuildLShr(B, chan_load(c, ch, QUEUE), at, ""), i32c(c, 15), "");
    wait_phase(c, "wsfullwait", slot_barrier_ptr(c, 0, s), next_phase(c, FULL_PHASES, s));
    chan_store(c, ch, WAITED, add(c, w, i32c(c, 1)));
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, done);
}

/* The wait's channels: its slots', or those a wait that gives none drains.
 * A WAIT_ONCE wait's pending count counts other channels' groups: it
 * waits for every group of its own. */
static void ws_wait(Cg *c, const IrOp *wait)
{
    unsigned chans = channels_of(c, wait);
    for (int ch = 0; ch < CG_MAX_RINGS && ch < 32; ch++)
        if (chans >> ch & 1) ws_wait_channel(c, ch, wait->flags & WAIT_ONCE ? 0 : (int)wait->ival);
}

/* A consumer warp arrives on the empty barrier of each group waited for
 * (all) or waited for before the last wait, oldest first: its lane 0,
 * once the warp's wgmma.wait_group (warp-wide) saw the wgmma reading the
 * slot complete; no thread reads a slot otherwise (warp_specialize.c's
 * protocol), and the slots of a wait that gives none are read by nobody.
 * Where threads read slots with loads of their own (a vector ring's
 * column), every thread arrives after its loads: lane 0's arrival orders
 * the other lanes' loads before the producer's refill only through the
 * bar.warp.sync before it, which ptxas drops from converged code, and
 * compute-sanitizer's racecheck then sees the refill race the loads. */
static void ws_release_channel(Cg *c, int ch, bool all)
{
    LLVMBuilderRef B = c->b;
    LLVMValueRef upto = chan_load(c, ch, all ? WAITED : KEEP);
    LLVMBasicBlockRef head = new_bb(c, "wsrel"), one = new_bb(c, "wsrelease"), done = new_bb(c, "wsreleased");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef r = chan_load(c, ch, RELEASED);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, r, upto, ""), one, done);
    LLVMPositionBuilderAtEnd(B, one);
    LLVMValueRef q = chan_load(c, ch, QUEUE);
    LLVMValueRef bar = slot_barrier_ptr(c, 1, LLVMBuildAnd(B, q, i32c(c, 15), ""));
    LLVMBasicBlockRef arrive = new_bb(c, "wsarrive"), arrived = new_bb(c, "wsarrived");
    LLVMValueRef arrives = c->slots_read_by_lanes ? LLVMConstInt(c->ti1, 1, 0) : LLVMBuildICmp(B, LLVMIntEQ, c->lane, i32c(c, 0), "");
    LLVMBuildCondBr(B, arrives, arrive, arrived);
    LLVMPositionBuilderAtEnd(B, arrive);
    cg_call(c, "llvm.nvvm.mbarrier.arrive.shared", c->ti64, 1, &c->tptr3, &bar);
    LLVMBuildBr(B, arrived);
    LLVMPositionBuilderAtEnd(B, arrived);
    chan_store(c, ch, QUEUE, LLVMBuildLShr(B, q, i32c(c, 4), ""));
    chan_store(c, ch, RELEASED, add(c, r, i32c(c, 1)));
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, done);
}

/* In each channel of op's slots (every channel for NULL): all but the
 * last wait's groups never include a group still read, whatever the
 * channel; all of them only those op names. */
static void ws_release(Cg *c, bool all, const IrOp *op)
{
    unsigned chans = channels_of(c, op);
    for (int ch = 0; ch < CG_MAX_RINGS && ch < 32; ch++)
        if (chans >> ch & 1) ws_release_channel(c, ch, all);
}

/* cp.async, as sm_80 copies, noted for publish */
static void copy_by_threads(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    if (c->copy_buf >= 0) LLVMBuildStore(c->b, i32c(c, 1), c->copy_state[BY_THREADS]);
    copy_cp_async.copy(c, op, l, at, r0, c0);
}

static void copy_bulk(Cg *c, const IrOp *op, const Layout *l, LLVMValueRef at, LLVMValueRef r0, LLVMValueRef c0)
{
    if (c->f->producer) {
        ws_copy(c, op, l, at, r0, c0, descriptor_of(c, op, false));
        return;
    }
    int j = descriptor_of(c, op, false);
    if (j < 0 && !column_slot(l)) {
        copy_by_threads(c, op, l, at, r0, c0);
        return;
    }
    LLVMBuilderRef B = c->b;
    smem_access(c, c->copy_buf, false);
    LLVMBasicBlockRef bulk = new_bb(c, "tma"), fallback = new_bb(c, "tmafb"), done = new_bb(c, "tmad");
    LLVMBuildCondBr(B, by_bulk(c, op, l, j, r0, c0), bulk, fallback);
    LLVMPositionBuilderAtEnd(B, bulk);
    Guard g = guard_begin(c, is_thread0(c));
    ptx_fence_proxy_async(c);   /* the slot's last readers read it through the generic proxy */
    LLVMValueRef bar = group_barrier(c, LLVMBuildLoad2(B, c->ti32, c->copy_state[COMMITTED], ""));
    load_bulk(c, op, l, at, j, r0, c0, bar);
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
    if (c->f->producer) {
        ws_commit(c);
        return;
    }
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
static void wait_bulk(Cg *c, const IrOp *wait)
{
    LLVMBuilderRef B = c->b;
    int pending = (int)wait->ival;
    if (c->f->producer) {
        ws_wait(c, wait);
        return;
    }
    copy_cp_async.wait(c, wait);
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
    if (c->f->producer) return;   /* each consumer waited itself; the producer's own stores precede its arrival */
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

const CopyEngine copy_tma = {"tma", plan_descriptors, begin_barriers, copy_bulk, commit_bulk, wait_bulk, publish_bulk, ws_release};
