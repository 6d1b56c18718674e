/* dot.h: the dot engines, the ways the code generator lowers a tile dot.
 *
 * An engine says which dots it takes (accepts, from the IR alone) and
 * emits one (emit: the result in the layout the layout pass gave it). The
 * code generator picks one engine per dot from its target's list
 * (Target.dots, target.h): the first that accepts. The list's order is a
 * preference: the most specialised engine first, dot_fma last, which
 * takes any dot. The engines of a chip live with its target
 * (compiler/nvidia/dot_mma.c: mma.sync).
 *
 * The layout pass asks the same engine for the dot's result layout (its
 * result_layout, through the policy codegen.c hands layout_plan), so an
 * engine and the layout of its result always agree; the layout plan's
 * mma_dot flag marks the dots whose engine chose one. An engine with
 * layouts of its own (a Hopper wgmma engine: dot_wgmma.c) adds them to
 * layout.c, gives them in its result_layout, and goes in its target's
 * list above the ones it is to win over. */
#ifndef PHC_DOT_H
#define PHC_DOT_H

#include "cg.h"

typedef struct DotEngine {
    const char *name;
    bool (*accepts)(const IrFunc *f, const IrOp *dot);
    void (*emit)(Cg *c, const IrOp *dot);
    /* the layout of an accepted dot's result, NULL: the default (BLOCKED);
     * the layout pass asks (layout.h, LayoutDotPolicy) */
    const Layout *(*result_layout)(LayoutTable *t, const IrFunc *f, const IrOp *dot);
    /* an engine whose DOT_ASYNC dots leave their work in flight: waits
     * for it, replacing acc's slots (the result of the loop that carries
     * such a dot's result, where the loop ends); NULL: none */
    void (*drain)(Cg *c, const IrOp *dot, Slots *acc);
    /* an engine whose dots may be DOT_ISSUED: emits an OP_WAIT_DOTS of
     * them (its results replacing theirs); NULL: none */
    void (*wait)(Cg *c, const IrOp *wait);
    /* after a thread's stores of an operand its dots read from shared
     * memory, made outside them (a region: cg_operands.c), what the
     * engine's reads need of the storing thread (Hopper's wgmma: a proxy
     * fence), so the dots in the loop need nothing; NULL: nothing */
    void (*operand_stored)(Cg *c);
} DotEngine;

#pragma GCC visibility push(hidden)

extern const DotEngine dot_fma;        /* dot_fma.c: FMA loops, any dot */

/* The engine that lowers dot: the first in the target's list that accepts it (cg_control.c). */
const DotEngine *dot_engine_for(const Target *t, const IrFunc *f, const IrOp *dot);

#pragma GCC visibility pop

#endif
