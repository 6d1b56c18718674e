/* mma_layout.c: the layout policy of the mma.sync engine: a dot it takes
 * (layout_dot_on_tensorcores) leaves its result in an MMA layout, the
 * mma.sync accumulator's, with the warps' grid this chooses. Needs no
 * LLVM: the layout pass's tools (phc --layouts, the layout suite) use it
 * without a code generator. */
#include "nvidia/mma_layout.h"

/* Whether a block reduces a tile or computes a dot operand (from another
 * dot's result, a softmax, ...): then warps own whole rows of every MMA
 * result, so row statistics stay in a warp and a result can be the next
 * dot's A operand in registers. A kernel whose dots read their operands
 * straight from memory and which reduces nothing (a plain product, with
 * any elementwise epilogue) gets the grid of fewest fragments. */
static bool needs_rows_first(const IrFunc *f, const IrBlock *blk)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        if (op->kind == OP_REDUCE) return true;
        if (op->kind == OP_DOT)
            for (int a = 0; a < 2; a++) {
                const IrOp *d = f->values[op->args[a]].def;
                while (d && (d->kind == OP_CONVERT || d->kind == OP_TRANSPOSE)) d = f->values[d->args[0]].def;
                if (d && d->kind != OP_LOAD && d->kind != OP_COPY_ASYNC && d->kind != OP_WAIT_ASYNC) return true;
            }
        if ((op->body && needs_rows_first(f, op->body)) || (op->els && needs_rows_first(f, op->els))) return true;
    }
    return false;
}

const Layout *mma_sync_result_layout(LayoutTable *t, const IrFunc *f, const IrOp *dot)
{
    IrType r = ir_vtype(f, dot->res[0]);
    return layout_mma_for(t, r.shape[0], r.shape[1], f->threads, needs_rows_first(f, f->body));
}

/* K at most 512 as mma.sync's f16 dots: the engine unrolls the K loop. */
bool mma_s8_accepts(const IrFunc *f, const IrOp *dot)
{
    if (!f->tensorcore) return false;
    IrType a = ir_vtype(f, dot->args[0]), b = ir_vtype(f, dot->args[1]);
    if (a.dt != DT_I8 || b.dt != DT_I8) return false;
    int M = a.shape[0], K = a.shape[1];
    int N = dot->flags & DOT_TRANS_B ? b.shape[0] : b.shape[1];
    return M % 16 == 0 && N % 8 == 0 && K % 32 == 0 && K <= 512;
}

/* The same shapes for two fp8 operands (e4m3 and e5m2 mixed). */
bool mma_f8_accepts(const IrFunc *f, const IrOp *dot)
{
    if (!f->tensorcore) return false;
    IrType a = ir_vtype(f, dot->args[0]), b = ir_vtype(f, dot->args[1]);
    if (!ir_is_f8(a.dt) || !ir_is_f8(b.dt)) return false;
    int M = a.shape[0], K = a.shape[1];
    int N = dot->flags & DOT_TRANS_B ? b.shape[0] : b.shape[1];
    return M % 16 == 0 && N % 8 == 0 && K % 32 == 0 && K <= 512;
}

static const Layout *tensorcore_result(LayoutTable *t, const IrFunc *f, const IrOp *dot, const void *ctx)
{
    (void)ctx;
    return layout_dot_on_tensorcores(f, dot) || mma_s8_accepts(f, dot) ? mma_sync_result_layout(t, f, dot) : NULL;
}

const LayoutDotPolicy mma_sync_layouts = {tensorcore_result, NULL, NULL};
