/* layout.h: where each element of a tile lives, as data.
 *
 * A layout maps a thread (warp w, lane l) and a register slot s to the
 * element (row, col) of a tile's 2-D view that the slot holds. Three kinds:
 *
 *   BLOCKED  rows and columns spread over lanes and warps, each thread
 *            holding v consecutive columns per chunk (16-byte accesses for
 *            f16 at v = 8), the pattern repeated over the tile;
 *   MMA      the accumulator of mma.sync.m16n8k16: the tile cut into 16x8
 *            pieces, warps owning wm x wn blocks of them, lane l holding
 *            rows l/4 and l/4+8, columns 2(l%4) and 2(l%4)+1 of each piece;
 *   SLICE    a parent layout with one axis reduced away: slot s holds the
 *            parent's slot s's row (axis 1) or column (axis 0), so a value
 *            broadcast back over that axis needs no data movement. Several
 *            slots and threads hold one element; one of them owns it.
 *
 * The layout pass (layout.c) gives every tile value of a function one
 * layout; the code generator converts between layouts through shared
 * memory only where producer and consumer disagree. */
#ifndef PHC_LAYOUT_H
#define PHC_LAYOUT_H

#include "ir.h"

typedef enum { LAY_BLOCKED, LAY_MMA, LAY_SLICE } LayKind;

typedef struct Layout {
    LayKind kind;
    int rows, cols;            /* the tile's 2-D view */
    int threads;               /* of the block */
    /* BLOCKED: v columns per chunk, tc lanes along columns (32/tc along
     * rows), wr x wc warps; the pattern covers ctar x ctac elements */
    int v, tc, wr, wc;
    /* MMA: wm x wn warps in use (the others hold nothing), each owning
     * tm x tn pieces of 16x8 */
    int wm, wn, tm, tn;
    /* SLICE */
    const struct Layout *parent;
    int axis;                  /* the axis reduced away: 1 gives [rows, 1], 0 gives [1, cols] */
} Layout;

/* Interned layouts: equal layouts are the same pointer. */
typedef struct LayoutTable LayoutTable;
LayoutTable *layout_table_new(void);
void layout_table_free(LayoutTable *t);

const Layout *layout_blocked(LayoutTable *t, int rows, int cols, int threads, int elem_bytes);
/* NULL when the shape does not cut into 16x8 pieces. */
const Layout *layout_mma(LayoutTable *t, int rows, int cols, int threads);
const Layout *layout_slice(LayoutTable *t, const Layout *parent, int axis);

int layout_nslots(const Layout *l);
void layout_str(const Layout *l, char *buf, size_t n);

/* The layout pass: one layout per tile value of f (NULL for scalars and
 * for values materialized where they are used: splat and iota).
 * Expects verified IR; guarantees that a loop's carried value, its block
 * argument and its result share a layout. */
typedef struct {
    const Layout **of;        /* by ValueId */
    bool *absorbed;           /* transposes and converts folded into a dot's operand */
    bool *mma_dot;            /* dots that run on the tensor cores */
} LayoutPlan;

LayoutPlan layout_plan(const IrFunc *f, LayoutTable *t);
void layout_plan_free(LayoutPlan *p);
/* Whether a dot runs on the tensor cores: @ph.tensorcore, f16 or bf16
 * operands of one dtype, M, N, K multiples of 16, 8, 16. */
bool layout_dot_on_tensorcores(const IrFunc *f, const IrOp *op);

#endif
