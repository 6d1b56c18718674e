/* mma_layout.h: where the results of mma.sync dots live (mma_layout.c). */
#ifndef PHC_NVIDIA_MMA_LAYOUT_H
#define PHC_NVIDIA_MMA_LAYOUT_H

#include "layout/layout.h"

/* The MMA layout of dot's result, for a dot the mma.sync engine takes:
 * warps along rows where the function reduces or feeds a dot from
 * computed values (layout_mma_for's rows_first). The engine's
 * result_layout (dot_mma.c). */
const Layout *mma_sync_result_layout(LayoutTable *t, const IrFunc *f, const IrOp *dot);

/* Whether the mma.sync engine's integer dots (dot_mma_s8.c) take dot:
 * i8 operands in shapes m16n8k32 tiles. */
bool mma_s8_accepts(const IrFunc *f, const IrOp *dot);
/* The same for fp8 dots (dot_mma_f8, on the rows that have it: sm_90, sm_90a). */
bool mma_f8_accepts(const IrFunc *f, const IrOp *dot);

/* The policy of sm_80's and sm_90's engines for a caller without a
 * target: MMA layouts for the dots layout_dot_on_tensorcores takes, the
 * default for the rest. */
extern const LayoutDotPolicy mma_sync_layouts;

#endif
