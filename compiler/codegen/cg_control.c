/* cg_control.c: blocks, for, while, if and yield, and one op's lowering (emit_op).
 *
 * Expects: verified IR, so every scalar and every branch is uniform.
 * Guarantees: the block's threads agree on every scalar and every branch
 * (scalars are computed redundantly by every thread), so barriers are
 * always reached by all; values carried through loops and ifs keep their
 * home layouts. */
#include "target.h"

#include <stdlib.h>
#include <string.h>

static void free_yielded(Slots *yielded, int n);

static LLVMTypeRef value_ty(Cg *c, ValueId v) { return dtype_ty(c, vtype(c, v).dt); }

/* A slot's LLVM type: the element's, or a ring slot's i32 byte offset. */
static LLVMTypeRef slot_ty(Cg *c, ValueId v, const Layout *l)
{
    return l && l->kind == LAY_SHARED ? c->ti32 : value_ty(c, v);
}

/* The layout a block argument or op result carried through control flow has. */
static const Layout *carried_layout(Cg *c, ValueId v) { return is_tile(c, v) ? home_layout(c, v) : NULL; }

/* The results of loop op that a DOT_ASYNC dot of its body yields, waited
 * for by that dot's engine. */
static void drain_async_dots(Cg *c, const IrOp *op)
{
    const IrOp *yield = op->body->ops[op->body->nops - 1];
    for (int i = 0; i < op->nres && i < yield->nargs; i++) {
        const IrOp *d = c->f->values[yield->args[i]].def;
        if (!d || d->kind != OP_DOT || !(d->flags & DOT_ASYNC)) continue;
        const DotEngine *e = dot_engine_for(c->target, c->f, d);
        if (e && e->drain) e->drain(c, d, &c->vals[op->res[i]]);
    }
}

static void emit_for(Cg *c, const IrOp *op)
{
    const IrBlock *body = op->body;
    int ncar = op->nargs - 2;
    LLVMValueRef lb = c->vals[op->args[0]].v[0], ub = c->vals[op->args[1]].v[0];
    Slots *init = xcalloc((size_t)(ncar ? ncar : 1), sizeof *init);
    for (int i = 0; i < ncar; i++) {
        const Layout *l = carried_layout(c, body->args[1 + i]);
        init[i] = l ? cg_get(c, op->args[2 + i], l) : c->vals[op->args[2 + i]];
    }
    int adds = bulk_adds_enter_loop(c, body);
    smem_mark(c, SMEM_LOOP);   /* the loop's entry: where a barrier before it goes */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), head = new_bb(c, "for"), bodybb = new_bb(c, "body"), done = new_bb(c, "endfor");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef iv = LLVMBuildPhi(c->b, c->ti32, "iv");
    LLVMAddIncoming(iv, &lb, &pre, 1);
    c->vals[body->args[0]] = new_slots(1, NULL);
    c->vals[body->args[0]].v[0] = iv;
    for (int i = 0; i < ncar; i++) {
        ValueId arg = body->args[1 + i];
        Slots ph = new_slots(init[i].n, carried_layout(c, arg));
        for (int s = 0; s < init[i].n; s++) {
            ph.v[s] = LLVMBuildPhi(c->b, slot_ty(c, arg, ph.lay), "");
            LLVMAddIncoming(ph.v[s], &init[i].v[s], &pre, 1);
        }
        c->vals[arg] = ph;
        /* the loop's results are the carried values when the test fails */
        Slots res = new_slots(ph.n, ph.lay);
        memcpy(res.v, ph.v, sizeof *res.v * (size_t)ph.n);
        c->vals[op->res[i]] = res;
    }
    free(init);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, iv, ub, ""), bodybb, done);
    LLVMPositionBuilderAtEnd(c->b, bodybb);
    Slots *y = xcalloc((size_t)(ncar ? ncar : 1), sizeof *y);
    int mark = c->cache.len;
    CgLoop outer = c->loop;
    c->loop.body = body, c->loop.iv = iv, c->loop.lb = lb, c->loop.step = op->ival;
    emit_block(c, body, op, y);
    c->loop = outer;
    smem_mark(c, SMEM_LOOP_END);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMValueRef next = LLVMBuildAdd(c->b, iv, i32c(c, op->ival), "");
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int i = 0; i < ncar; i++)
        for (int s = 0; s < y[i].n; s++)
            LLVMAddIncoming(c->vals[body->args[1 + i]].v[s], &y[i].v[s], &latch, 1);
    LLVMBuildBr(c->b, head);
    cache_truncate(c, mark);
    free_yielded(y, ncar);
    LLVMPositionBuilderAtEnd(c->b, done);
    drain_async_dots(c, op);
    bulk_adds_leave_loop(c, adds);
}

/* Forgets the slots of the values region b defines, before it is emitted again. */
static void forget_region(Cg *c, const IrBlock *b)
{
    for (int i = 0; i < b->nargs; i++) {
        free(c->vals[b->args[i]].v);
        c->vals[b->args[i]] = (Slots){0};
    }
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int j = 0; j < op->nres; j++) {
            free(c->vals[op->res[j]].v);
            c->vals[op->res[j]] = (Slots){0};
        }
        if (op->body) forget_region(c, op->body);
        if (op->els) forget_region(c, op->els);
    }
}

/* A while's condition on the carried values vals (in their layouts): the
 * region emitted where the builder is, its bool returned. */
static LLVMValueRef emit_test(Cg *c, const IrOp *op, const Slots *vals)
{
    const IrBlock *cond = op->body;
    forget_region(c, cond);
    for (int i = 0; i < op->nargs; i++) {
        Slots s = new_slots(vals[i].n, vals[i].lay);
        memcpy(s.v, vals[i].v, sizeof *s.v * (size_t)s.n);
        c->vals[cond->args[i]] = s;
    }
    Slots y[1] = {{0}};
    int mark = c->cache.len;
    emit_block(c, cond, op, y);
    cache_truncate(c, mark);
    LLVMValueRef go = y[0].n ? y[0].v[0] : LLVMConstInt(c->ti1, 0, 0);
    free(y[0].v);
    return go;
}

/* A while, rotated: the condition is emitted twice, once before the loop
 * and once at the end of each iteration, so the loop is entered only where
 * it holds and the shared-memory plan sees the first test before the
 * loop's entry (what is pending after the loop is then what was pending at
 * its entry or at the end of an iteration, as for a for). */
static void emit_while(Cg *c, const IrOp *op)
{
    const IrBlock *body = op->els;
    int n = op->nargs;
    Slots *init = xcalloc((size_t)(n ? n : 1), sizeof *init), *y = xcalloc((size_t)(n ? n : 1), sizeof *y);
    for (int i = 0; i < n; i++) {
        const Layout *l = carried_layout(c, body->args[i]);
        init[i] = l ? cg_get(c, op->args[i], l) : c->vals[op->args[i]];
    }
    LLVMValueRef go = emit_test(c, op, init);
    smem_mark(c, SMEM_LOOP);   /* the loop's entry: where a barrier before it goes */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), bodybb = new_bb(c, "while"), done = new_bb(c, "endwhile");
    LLVMBuildCondBr(c->b, go, bodybb, done);
    LLVMPositionBuilderAtEnd(c->b, bodybb);
    for (int i = 0; i < n; i++) {
        ValueId arg = body->args[i];
        Slots ph = new_slots(init[i].n, carried_layout(c, arg));
        for (int s = 0; s < ph.n; s++) {
            ph.v[s] = LLVMBuildPhi(c->b, slot_ty(c, arg, ph.lay), "");
            LLVMAddIncoming(ph.v[s], &init[i].v[s], &pre, 1);
        }
        c->vals[arg] = ph;
    }
    int mark = c->cache.len;
    emit_block(c, body, op, y);
    LLVMValueRef again = emit_test(c, op, y);
    smem_mark(c, SMEM_LOOP_END);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    for (int i = 0; i < n; i++)
        for (int s = 0; s < y[i].n; s++) LLVMAddIncoming(c->vals[body->args[i]].v[s], &y[i].v[s], &latch, 1);
    LLVMBuildCondBr(c->b, again, bodybb, done);
    cache_truncate(c, mark);
    LLVMPositionBuilderAtEnd(c->b, done);
    for (int i = 0; i < n; i++) {
        Slots r = new_slots(y[i].n, carried_layout(c, op->res[i]));
        for (int s = 0; s < r.n; s++) {
            r.v[s] = LLVMBuildPhi(c->b, slot_ty(c, op->res[i], r.lay), "");
            LLVMValueRef vs[2] = {init[i].v[s], y[i].v[s]};
            LLVMBasicBlockRef bs[2] = {pre, latch};
            LLVMAddIncoming(r.v[s], vs, bs, 2);
        }
        c->vals[op->res[i]] = r;
    }
    free(init);
    free_yielded(y, n);
}

static void emit_if(Cg *c, const IrOp *op)
{
    LLVMBasicBlockRef thenbb = new_bb(c, "then"), elsebb = new_bb(c, "else"), done = new_bb(c, "endif");
    smem_mark(c, SMEM_IF);
    LLVMBuildCondBr(c->b, c->vals[op->args[0]].v[0], thenbb, elsebb);
    int nres = op->nres;
    Slots *yt = xcalloc((size_t)(nres ? nres : 1), sizeof *yt), *ye = xcalloc((size_t)(nres ? nres : 1), sizeof *ye);
    int mark = c->cache.len;
    LLVMPositionBuilderAtEnd(c->b, thenbb);
    emit_block(c, op->body, op, yt);
    LLVMBasicBlockRef tend = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
    cache_truncate(c, mark);
    LLVMPositionBuilderAtEnd(c->b, elsebb);
    smem_mark(c, SMEM_ELSE);
    if (op->els) emit_block(c, op->els, op, ye);
    LLVMBasicBlockRef eend = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
    smem_mark(c, SMEM_IF_END);
    cache_truncate(c, mark);
    LLVMPositionBuilderAtEnd(c->b, done);
    for (int i = 0; i < nres; i++) {
        Slots r = new_slots(yt[i].n, carried_layout(c, op->res[i]));
        for (int s = 0; s < r.n; s++) {
            r.v[s] = LLVMBuildPhi(c->b, slot_ty(c, op->res[i], r.lay), "");
            LLVMValueRef vs[2] = {yt[i].v[s], ye[i].v[s]};
            LLVMBasicBlockRef bs[2] = {tend, eend};
            LLVMAddIncoming(r.v[s], vs, bs, 2);
        }
        c->vals[op->res[i]] = r;
    }
    free_yielded(yt, nres);
    free_yielded(ye, nres);
}

/* Yielded values in the layouts of what they flow into (the loop's block
 * arguments, the if's results), converted here, before the branch. Each is
 * a copy that the for or if frees: a conversion lives in the cache, which
 * forgets (frees) it when its region ends, before the phis are built. */
static void emit_yield(Cg *c, const IrOp *op, const IrBlock *blk, const IrOp *parent, Slots *yielded)
{
    for (int j = 0; j < op->nargs; j++) {
        /* a while's condition yields its bool; its body, the carried values */
        ValueId target = parent->kind == OP_FOR ? parent->body->args[1 + j]
                         : parent->kind == OP_WHILE && blk == parent->body ? 0 : parent->res[j];
        const Layout *l = target ? carried_layout(c, target) : NULL;
        Slots s = l ? cg_get(c, op->args[j], l) : c->vals[op->args[j]];
        yielded[j] = new_slots(s.n, s.lay);
        memcpy(yielded[j].v, s.v, sizeof *s.v * (size_t)s.n);
    }
}

static void free_yielded(Slots *yielded, int n)
{
    for (int i = 0; i < n; i++) free(yielded[i].v);
    free(yielded);
}

static void emit_elementwise(Cg *c, const IrOp *op)
{
    ValueId r = op->res[0];
    IrType t = vtype(c, r);
    if (t.rank == 0) {
        LLVMValueRef a[3];
        for (int i = 0; i < op->nargs && i < 3; i++) a[i] = c->vals[op->args[i]].v[0];
        Slots out = new_slots(1, NULL);
        out.v[0] = elementwise(c, op, operand_dtype(c, op), t.dt, a);
        c->vals[r] = out;
        return;
    }
    if (!c->plan.of[r]) return;   /* built where it is used */
    c->vals[r] = materialize(c, r, c->plan.of[r]);
}

const DotEngine *dot_engine_for(const Target *t, const IrFunc *f, const IrOp *dot)
{
    for (int i = 0; t->dots[i]; i++)
        if (t->dots[i]->accepts(f, dot)) return t->dots[i];
    return NULL;
}

/* Whether v is read by broadcasts alone, in b and below. */
static bool only_broadcast(const IrBlock *b, ValueId v)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int j = 0; j < op->nargs; j++)
            if (op->args[j] == v && op->kind != OP_BROADCAST) return false;
        if ((op->body && !only_broadcast(op->body, v)) || (op->els && !only_broadcast(op->els, v))) return false;
    }
    return true;
}

/* A row or column turned into the other and then broadcast (the backward's
 * L and Delta, [BR, 1] to [1, BR] to the rows of S^T) is built where it is
 * used, straight from its source into the layout the broadcast reads
 * (cg_values.c materialize): one exchange through shared memory instead of
 * two; 1-4% off the fused backward on the H200. PHOBOS_VECTOR_TRANSPOSE=0
 * transposes it where it is defined instead. */
static bool transpose_built_where_used(Cg *c, const IrOp *op)
{
    IrType t = vtype(c, op->args[0]);
    return env_switch("PHOBOS_VECTOR_TRANSPOSE", true) && t.rank == 2 && (t.shape[0] == 1 || t.shape[1] == 1) &&
           only_broadcast(c->f->body, op->res[0]);
}

static void emit_op(Cg *c, const IrOp *op)
{
    IrType t = op->nres ? vtype(c, op->res[0]) : ir_scalar(DT_VOID);
    Slots one;
    switch (op->kind) {
    case OP_CONST:
        one = new_slots(1, NULL);
        if (t.dt == DT_BOOL) one.v[0] = LLVMConstInt(c->ti1, op->ival != 0, 0);
        else if (t.dt == DT_I32) one.v[0] = i32c(c, op->ival);
        else if (t.dt == DT_I64) one.v[0] = LLVMConstInt(c->ti64, (unsigned long long)op->ival, 1);
        else if (ir_is_f8(t.dt)) one.v[0] = from_f32(c, f32c(c, op->fval), t.dt);   /* folds to the constant's bits */
        else if (ir_is_int(t.dt)) one.v[0] = LLVMConstInt(c->ti8, (unsigned long long)op->ival, 1);
        else one.v[0] = LLVMConstReal(dtype_ty(c, t.dt), op->fval);
        c->vals[op->res[0]] = one;
        break;
    case OP_PARAM:
        one = new_slots(1, NULL);
        one.v[0] = c->scalar[op->param];
        c->vals[op->res[0]] = one;
        break;
    case OP_DIM:
        one = new_slots(1, NULL);
        one.v[0] = LLVMBuildTrunc(c->b, c->tensor_dims[op->param][op->axis], c->ti32, "");
        c->vals[op->res[0]] = one;
        break;
    case OP_BLOCK_ID: case OP_GRID_DIM:
        one = new_slots(1, NULL);
        one.v[0] = op->kind == OP_BLOCK_ID ? c->target->isa->block_index(c, op->axis) : c->target->isa->grid_blocks(c, op->axis);
        c->vals[op->res[0]] = one;
        break;
    case OP_SPLAT: case OP_IOTA: case OP_BROADCAST: case OP_RESHAPE:
        break;   /* built where used */
    case OP_TRANSPOSE:
        if (c->plan.absorbed[op->res[0]] || transpose_built_where_used(c, op)) break;
        c->vals[op->res[0]] = transposed_into(c, op->args[0], home_layout(c, op->res[0]));
        break;
    case OP_CONVERT:
        if (c->plan.absorbed[op->res[0]]) break;
        emit_elementwise(c, op);
        break;
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_FMA:
        emit_elementwise(c, op);
        break;
    case OP_REDUCE: emit_reduce(c, op); break;
    case OP_ARGMAX: case OP_ARGMIN: emit_argreduce(c, op); break;
    case OP_CUMSUM: emit_cumsum(c, op); break;
    case OP_DOT: {
        const DotEngine *e = dot_engine_for(c->target, c->f, op);
        if (e) e->emit(c, op);
        else cg_fail(c, op, "no dot engine takes this dot");
        break;
    }
    case OP_LOAD: c->vals[op->res[0]] = emit_load_in(c, op, home_layout(c, op->res[0])); break;
    case OP_STORE: emit_store(c, op); break;
    case OP_ATOMIC_ADD: emit_atomic_add(c, op); break;
    case OP_GATHER: emit_gather(c, op); break;
    case OP_SCATTER: case OP_SCATTER_ADD: emit_scatter(c, op); break;
    case OP_COPY_ASYNC: emit_copy_async(c, op); break;
    case OP_COMMIT_ASYNC: c->target->copy->commit(c); break;
    case OP_RELEASE_ASYNC: emit_release_async(c, op); break;
    case OP_WAIT_ASYNC: emit_wait_async(c, op); break;
    case OP_WAIT_DOTS: {
        const IrOp *d = op->nargs ? ir_issued_dot(c->f, op->args[0]) : NULL;
        const DotEngine *e = d ? dot_engine_for(c->target, c->f, d) : NULL;
        if (e && e->wait) e->wait(c, op);
        else cg_fail(c, op, "internal error: a wait_dots of dots no engine issues");
        break;
    }
    case OP_FOR: emit_for(c, op); break;
    case OP_IF: emit_if(c, op); break;
    case OP_WHILE: emit_while(c, op); break;
    case OP_DEVICE_PRINT: emit_device_print(c, op); break;
    case OP_DEVICE_ASSERT: emit_device_assert(c, op); break;
    case OP_RETURN:
        LLVMBuildBr(c->b, c->exit_bb);
        /* anything after a return is dead: give it a block of its own */
        LLVMPositionBuilderAtEnd(c->b, new_bb(c, "dead"));
        break;
    case OP_YIELD: break;
    default: cg_fail(c, op, "no lowering for this op"); break;
    }
}

void emit_block(Cg *c, const IrBlock *blk, const IrOp *parent, Slots *yielded)
{
    for (int i = 0; i < blk->nops && !c->failed; i++) {
        const IrOp *op = blk->ops[i];
        cg_locate(c, op, parent);
        if (op->kind == OP_YIELD && parent) emit_yield(c, op, blk, parent, yielded);
        else emit_op(c, op);
        if (c->regions.len && c->role != CG_PRODUCER)
            for (int j = 0; j < op->nres; j++) write_regions(c, op->res[j]);
    }
    if (parent) cg_locate(c, parent, NULL);   /* the loop's step and branch, the if's join: its line */
}
