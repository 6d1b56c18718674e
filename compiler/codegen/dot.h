/* dot.h: the dot engines, the ways the code generator lowers a tile dot.
 *
 * An engine says which dots it takes (accepts, from the IR alone) and
 * emits one (emit: the result in the layout the layout pass gave it). The
 * code generator picks one engine per dot from dot_engines[]: the first
 * that accepts. The table's order is a preference: the most specialised
 * engine first, dot_fma last, which takes any dot.
 *
 * The layout pass decides each dot's result layout with the same test:
 * dot_mma_sync.accepts is layout_dot_on_tensorcores, the function behind
 * the layout plan's mma_dot flag, so an engine and the layout of its
 * result always agree. An engine with layouts of its own (a Hopper wgmma
 * engine: dot_wgmma.c) adds them to layout.c, and a row above the ones it
 * is to win over. */
#ifndef PHC_DOT_H
#define PHC_DOT_H

#include "cg.h"

typedef struct DotEngine {
    const char *name;
    bool (*accepts)(const IrFunc *f, const IrOp *dot);
    void (*emit)(Cg *c, const IrOp *dot);
} DotEngine;

#pragma GCC visibility push(hidden)

extern const DotEngine dot_mma_sync;   /* dot_mma.c: mma.sync m16n8k16, sm_80 and up */
extern const DotEngine dot_fma;        /* dot_fma.c: FMA loops, any dot */

/* In order of preference, NULL-terminated (cg_control.c). */
extern const DotEngine *const dot_engines[];

/* The engine that lowers dot: the first in dot_engines[] that accepts it. */
const DotEngine *dot_engine_for(const IrFunc *f, const IrOp *dot);

#pragma GCC visibility pop

#endif
