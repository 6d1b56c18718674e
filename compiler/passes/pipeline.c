/* pipeline.c: software pipelining of loads in loops. A load in a loop body
 * whose window depends only on the induction variable (and on values from
 * outside the loop) is issued one iteration ahead: the first before the
 * loop, each next one at the end of the body, carried to the next
 * iteration as a loop value. The GPU then waits for a load while it works
 * on the previous tile, instead of stalling on it (attn_fwd's k and v).
 *
 * Expects: verified IR, after licm (invariant loads are already out).
 * Guarantees: the same results. The extra load of the last iteration reads
 * a window past the loop's range; loads are bounds-checked, so it reads
 * zeros or in-bounds data nobody uses. Only loads of tensors the kernel
 * never writes (stores or atomically adds to) move, and at most
 * PIPELINE_BUDGET elements per loop are carried, to bound the registers
 * this costs. */
#include "ir/irutil.h"

#include <stdlib.h>

enum { PIPELINE_BUDGET = 8192 };

/* Copies the marked scalar ops of body (in order) and then the load, with
 * iv replaced by at, inserting them into blk from index *pos; returns the
 * new load's value. */
static ValueId copy_window(IrFunc *f, IrBlock *body, const IrOp *load, const bool *need, int nneed, ValueId iv,
                           ValueId at, IrBlock *blk, int *pos)
{
    ValueId *map = xcalloc((size_t)f->nvalues + 1, sizeof *map);
    ir_copy_marked(f, body, need, nneed, iv, at, blk, pos, map);
    ValueId args[IR_MAX_RANK];
    for (int j = 0; j < load->nargs && j < IR_MAX_RANK; j++) args[j] = map[load->args[j]] ? map[load->args[j]] : load->args[j];
    IrOp *c = ir_clone_op(f, load, args);
    ir_block_insert(f, blk, (*pos)++, c);
    free(map);
    return c->res[0];
}

static void pipeline_loop(IrFunc *f, IrBlock *parent, int *pos, IrOp *loop, const bool *stored)
{
    IrBlock *body = loop->body;
    ValueId iv = body->args[0];
    int64_t carried = 0;
    int original = f->nvalues;   /* the loads this pass adds are not pipelined again */
    for (int i = 0; i < body->nops; i++) {
        IrOp *load = body->ops[i];
        if (load->kind != OP_LOAD || load->res[0] >= original || stored[load->param]) continue;
        int64_t n = ir_numel(ir_vtype(f, load->res[0]));
        if (carried + n > PIPELINE_BUDGET) continue;
        int nneed = f->nvalues;
        bool *need = ir_window_chain(f, body, load, iv);
        if (need) {
            carried += n;
            /* the first window, before the loop */
            ValueId first = copy_window(f, body, load, need, nneed, iv, loop->args[0], parent, pos);
            ValueId cur = ir_for_add_carried(f, loop, first, 0);
            ir_replace_uses(body, load->res[0], cur);
            /* the next window, at the end of the body */
            int at = body->nops - 1;
            IrType i32 = ir_scalar(DT_I32);
            IrOp *step = ir_emit(f, NULL, OP_CONST, 0, NULL, 1, &i32);
            step->ival = loop->ival;
            ir_block_insert(f, body, at++, step);
            ValueId ab[2] = {iv, step->res[0]};
            IrOp *next_iv = ir_emit(f, NULL, OP_BINARY, 2, ab, 1, &i32);
            next_iv->sub = BIN_ADD;
            ir_block_insert(f, body, at++, next_iv);
            /* need[] marks values of the body; the copies depend on next_iv */
            ValueId next = copy_window(f, body, load, need, nneed, iv, next_iv->res[0], body, &at);
            IrOp *y = body->ops[body->nops - 1];
            y->args[y->nargs - 1] = next;
        }
        free(need);
    }
}

static void pipeline_block(IrFunc *f, IrBlock *blk, const bool *stored)
{
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        if (op->body) pipeline_block(f, op->body, stored);
        if (op->els) pipeline_block(f, op->els, stored);
        if (op->kind == OP_FOR) pipeline_loop(f, blk, &i, op, stored);
    }
}

void ir_pipeline(IrFunc *f)
{
    if (f->stages == 1) return;   /* @ph.stages(1): no software pipelining */
    bool *stored = ir_stored_params(f);
    pipeline_block(f, f->body, stored);
    free(stored);
}
