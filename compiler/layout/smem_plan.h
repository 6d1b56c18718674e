/* smem_plan.h: the shared-memory plan of one kernel.
 *
 * A kernel's shared memory is a set of buffers: the rings of its
 * asynchronous copies, the regions of its loop-invariant dot operands and
 * the scratch space single ops need (conversions, cross-warp reductions,
 * dot operands written each time). The code generator tells the plan each
 * buffer (size, alignment, kind) and, in program order, every access to one
 * (read or write) among the marks of the structured control flow around
 * it (loops, ifs, the barriers it places itself). The plan then gives each
 * buffer its live range and an offset, so that buffers live at the same
 * time never share a byte and the others may; the area's size is the end
 * of the last buffer.
 *
 * Program order is the order of the events: a buffer is live from its
 * first access to its last, and over the whole of every loop it is
 * accessed in and was live before (a ring filled before the loop, a region
 * written before it), since then the next iteration reads what this one
 * left. A buffer whose first access is inside a loop starts afresh every
 * iteration (scratch an op writes and reads).
 *
 * The plan also says where barriers go: before an access that could meet,
 * with no barrier between, another thread's access of the same bytes, one
 * of the two a write (smem_plan.c, "barriers"). The code generator emits
 * one there and nowhere else, besides the barriers it marks as its own. */
#ifndef PHC_SMEM_PLAN_H
#define PHC_SMEM_PLAN_H

#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    SMEM_SCRATCH,   /* one op's: written and read within it (an issued dot's: up to its wait) */
    SMEM_RING,      /* an asynchronous copy ring: its copies and reads are ordered by its waits */
    SMEM_REGION,    /* a loop-invariant dot operand, written once where it is defined */
    SMEM_TURNS,     /* an op's scratch in two halves, directly in a loop's body, each
                       iteration's accesses in the half its parity names (all of them,
                       an issued dot's wait too, in that iteration): live over the loop,
                       and what one iteration leaves pending meets nothing of the next
                       where every iteration passes a barrier (smem_plan.c, "barriers") */
} SmemKind;

typedef enum {
    SMEM_ACCESS,     /* buf is read or written (write) */
    SMEM_BARRIER,    /* a barrier the code generator runs anyway (a wait's) */
    SMEM_LOOP,       /* a loop's entry; its body follows, up to the matching */
    SMEM_LOOP_END,
    SMEM_IF,         /* then SMEM_ELSE between the branches, SMEM_IF_END after */
    SMEM_ELSE,
    SMEM_IF_END,
} SmemEventKind;

typedef struct {
    SmemEventKind kind;
    int buf;         /* SMEM_ACCESS */
    bool write;
    bool together;   /* an access made with the one before it (one loop reads both) */
    bool unordered;  /* a ring access its waits do not order after the ring's earlier
                        reads and copies: a copy issued before the ring's loop, which
                        may follow the reads of the loop's previous run (an outer loop) */
} SmemEvent;

typedef struct {
    SmemKind kind;
    int64_t bytes;
    int align;       /* a power of two */
    int first, last; /* live range, in events; -1: never accessed */
    int64_t offset;  /* in the area, a multiple of align */
} SmemBuf;

typedef struct {
    VEC(SmemBuf) bufs;
    VEC(SmemEvent) events;
    int64_t bytes;   /* the area: the end of the last buffer */
    bool *barrier;   /* by event: the code generator places a barrier right before it */
} SmemPlan;

/* A new buffer; its id (0, 1, ... in order). */
int smem_add_buffer(SmemPlan *p, SmemKind kind, int64_t bytes, int align);
/* The next event; its index. */
int smem_add_event(SmemPlan *p, SmemEventKind kind, int buf, bool write);
/* An access made together with the access just added: the code between
 * them and their memory operations is one (a dot's loop reading both of
 * its operands), so a barrier either needs goes before the first. */
int smem_add_access_together(SmemPlan *p, int buf, bool write);
/* An access of a ring that its waits do not order (SmemEvent.unordered). */
int smem_add_access_unordered(SmemPlan *p, int buf, bool write);

/* Live ranges and offsets of every buffer, and the area's size; then the
 * barriers (barrier[]). False, with a message, when the events are not
 * well nested (an internal error). */
bool smem_plan_make(SmemPlan *p, char *err, size_t errlen);

/* Whether barriers (by event, before it) order every pair of accesses of
 * the same bytes by different threads, one of them a write; if not, *at is
 * the first access that meets one unordered. */
bool smem_plan_check(const SmemPlan *p, const bool *barrier, int *at);

/* Whether buffers a and b share a byte (as placed). */
bool smem_bufs_overlap(const SmemPlan *p, int a, int b);

void smem_plan_free(SmemPlan *p);

#endif
