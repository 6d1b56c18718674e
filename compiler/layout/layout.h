/* layout.h: where each element of a tile lives, as data.
 *
 * A layout maps a thread (warp w, lane l) and a register slot s to the
 * element (row, col) of a tile's 2-D view that the slot holds. Four kinds:
 *
 *   BLOCKED  rows and columns spread over lanes and warps, each thread
 *            holding v consecutive columns per chunk (16-byte accesses for
 *            f16 at v = 8), the pattern repeated over the tile;
 *   MMA      the accumulator of mma.sync.m16n8k16: the tile cut into 16x8
 *            pieces, warps owning wm x wn blocks of them, lane l holding
 *            rows l/4 and l/4+8, columns 2(l%4) and 2(l%4)+1 of each piece;
 *   SLICE    a parent layout with one axis reduced away: a thread's slots
 *            are the distinct rows (axis 1) or columns (axis 0) its
 *            parent's slots hold, one slot each, so a value broadcast back
 *            over that axis needs no data movement (parent slot s reads
 *            slot layout_slice_slot(s)). The threads that differ only
 *            along the reduced axis hold copies; one of them owns it.
 *   SHARED   not in registers: the tile lies in shared memory (a ring slot
 *            that an asynchronous copy fills), its 16-byte chunks swizzled
 *            so that ldmatrix has no bank conflict; dots read it from there
 *            and other users convert it to a register layout. The maps
 *            below are for the three register kinds only.
 *
 * The layout pass (layout.c) gives every tile value of a function one
 * layout; the code generator converts between layouts through shared
 * memory only where producer and consumer disagree. */
#ifndef PHC_LAYOUT_H
#define PHC_LAYOUT_H

#include "ir/ir.h"

typedef enum { LAY_BLOCKED, LAY_MMA, LAY_SLICE, LAY_SHARED } LayKind;

typedef struct Layout {
    LayKind kind;
    int rows, cols;            /* the tile's 2-D view */
    int threads;               /* of the block */
    /* BLOCKED: v columns per chunk, tc lanes along columns (32/tc along
     * rows), wr x wc warps; the pattern covers ctar x ctac elements */
    int v, tc, wr, wc;
    /* MMA: wm x wn warps in use (the others hold nothing), each owning
     * tm x tn pieces of 16x8; a warp's rows of pieces mstride rows apart,
     * 0 for adjacent (16): wgmma's interleaved accumulator, whose every
     * instruction covers 64 rows of four warps, has 16 x wm. Warp w sits
     * at row w / wn, column w % wn of the warps' grid; with wg_cols at row
     * w % wm, column w / wm: a warpgroup's four warps down the rows, the
     * warpgroups along the columns (wgmma's result where each warpgroup
     * computes a share of the columns) */
    int wm, wn, tm, tn, mstride;
    bool wg_cols;
    /* SLICE */
    const struct Layout *parent;
    int axis;                  /* the axis reduced away: 1 gives [rows, 1], 0 gives [1, cols] */
    /* SHARED: the tile lies in shared memory, row-major, rows stride
     * elements of elem bytes apart; its one slot holds the byte offset
     * where it starts (a ring slot of an asynchronous copy). Within a row
     * the 16-byte chunks of vec elements are swizzled (Triton's
     * SwizzledSharedEncoding): chunk j of row r lies at chunk
     * j ^ ((r / per_phase) % max_phase) of that row; max_phase 1 leaves
     * them in place. layout_shared_offset is the map. Where atom is
     * non-zero the tile is cut along its columns into atoms of atom
     * columns (cols / atom of them), each a rows x atom tile of its own
     * laid out as above (stride == atom), one after another: the
     * arrangement of 128-byte rows that Hopper's matrix descriptors and
     * bulk tensor copies read and write. */
    int stride, elem;
    int vec, per_phase, max_phase;
    int atom;
} Layout;

/* Interned layouts: equal layouts are the same pointer. */
typedef struct LayoutTable LayoutTable;
LayoutTable *layout_table_new(void);
void layout_table_free(LayoutTable *t);

const Layout *layout_blocked(LayoutTable *t, int rows, int cols, int threads, int elem_bytes);
/* NULL when the shape does not cut into 16x8 pieces. */
const Layout *layout_mma(LayoutTable *t, int rows, int cols, int threads);
const Layout *layout_mma_for(LayoutTable *t, int rows, int cols, int threads, bool rows_first);
/* Every warp along rows with rows / (16 x warps) pieces each, 16 x warps
 * rows apart (mstride): warp w holds rows 16w + 16 x warps x im (+ the
 * lane's); NULL when the shape does not cut so. What wgmma's warpgroups
 * hold where each issues several m64 instructions (dot_wgmma.c). */
const Layout *layout_mma_interleaved(LayoutTable *t, int rows, int cols, int threads);
/* 64 rows on every warpgroup, each holding cols / warpgroups columns:
 * warp w holds rows 16(w % 4) and columns (w / 4) x cols / warpgroups on
 * (wg_cols); NULL when the shape does not cut so. What wgmma's
 * warpgroups hold where each computes a share of a 64-row result's
 * columns (dot_wgmma.c). */
const Layout *layout_mma_wg_cols(LayoutTable *t, int rows, int cols, int threads);
/* NULL when the parent is itself a slice. */
const Layout *layout_slice(LayoutTable *t, const Layout *parent, int axis);
/* A tile that ldmatrix reads, 8 rows of 16 bytes at a time, with no bank
 * conflict: rows of whole 16-byte chunks are swizzled, cols * elem_bytes
 * bytes apart; other rows are padded by 16 bytes. */
const Layout *layout_shared(LayoutTable *t, int rows, int cols, int elem_bytes);
/* The bytes such a tile takes. */
int64_t layout_shared_bytes(int rows, int cols, int elem_bytes);
/* The hardware's swizzled arrangement (wgmma's shared matrix
 * descriptors, TMA's SWIZZLE_32B/64B/128B): rows of 32 or 64 bytes as
 * layout_shared has them (which is that swizzle already); wider rows cut
 * into atoms of 128-byte rows, each 8-row group's 16-byte chunks XORed
 * with the row % 8, so that byte address bits 4-6 are XORed with bits
 * 7-9 once the tile starts 1024-byte aligned. NULL for rows of other
 * widths (not a whole 32, 64 or multiple of 128 bytes). */
const Layout *layout_shared_atoms(LayoutTable *t, int rows, int cols, int elem_bytes);
/* The bytes a SHARED layout's tile takes. */
int64_t layout_shared_size(const Layout *l);
/* The columns of one atom of SHARED layout l (its row, when it has no atoms). */
int layout_shared_atom_cols(const Layout *l);
/* The hardware swizzle SHARED layout l is, as the span of its rows in
 * bytes (32, 64 or 128: what wgmma's descriptors and TMA's SWIZZLE_*B
 * name), for 2-byte elements in atoms as layout_shared_atoms makes them;
 * 0 when it is none of them (or l is NULL or no SHARED layout). */
int layout_shared_hw_swizzle(const Layout *l);
/* Row-major, neither swizzled nor padded: words the FMA engine reads one
 * at a time. */
const Layout *layout_shared_plain(LayoutTable *t, int rows, int cols, int elem_bytes);
/* The byte offset of element (row, col) of SHARED layout l from the tile's
 * start: row * stride * elem, plus col * elem with its 16-byte chunk index
 * XORed with (row / per_phase) % max_phase. The XOR moves whole chunks, so
 * a chunk's bytes stay together (one cp.async, one ldmatrix row); the
 * offsets of the tile's elements are a permutation of the unswizzled ones.
 * The code generator emits the same arithmetic (shared_offset). */
int64_t layout_shared_offset(const Layout *l, int row, int col);
/* The same map moved by drow rows and dcol columns as a constant XOR and
 * add: layout_shared_offset(l, row + drow, col + dcol) is
 * (layout_shared_offset(l, row, col) ^ xor_bytes) + add_bytes wherever
 * layout_shared_shift_holds(l, col, drow, dcol), for any row. So ldmatrix
 * computes a thread's offset once and each 8x8 matrix's from it. */
typedef struct { int64_t xor_bytes, add_bytes; } LayoutShift;
LayoutShift layout_shared_shift(const Layout *l, int drow, int dcol);
bool layout_shared_shift_holds(const Layout *l, int col, int drow, int dcol);

int layout_nslots(const Layout *l);
/* How many consecutive columns of one row a register layout's slots hold
 * in runs: for every thread, slots k .. k+n-1 (k a multiple of n) hold
 * one row's columns j .. j+n-1, j a multiple of n; what one vector access
 * reads or writes. BLOCKED: its v; MMA: the pair 2(l%4), 2(l%4)+1; 1
 * for the others. */
int layout_col_run(const Layout *l);
/* The slot of slice l that holds the kept-axis position of its parent's
 * slot parent_slot (in every thread). */
int layout_slice_slot(const Layout *l, int parent_slot);
void layout_str(const Layout *l, char *buf, size_t n);

/* ---- which element a thread's slot holds ----
 *
 * For every kind, the element of (warp, lane, slot) is the sum of two
 * parts: a thread base, which depends on the thread only and is computed at
 * run time, and a slot offset, which depends on the slot only and is a
 * compile-time constant:
 *
 *   row = base.row + offset.row,   col = base.col + offset.col.
 *
 * A layout's pattern may be larger than the tile (BLOCKED), so a slot holds
 * an element only where its position lies inside the tile; the offset says
 * per axis whether any thread's position can lie outside, which is where
 * the code generator compares at run time. The idle warps of an MMA layout
 * (warps >= wm * wn) hold nothing: they compute warp 0's positions and never
 * write. A SLICE keeps its parent's terms along the kept axis and drops
 * those along the reduced one; its slot j's offset is that of the first
 * parent slot at the j-th distinct kept-axis offset. Every thread along the
 * reduced axis, those whose parent positions lie past the tile included,
 * holds a copy, and the thread whose parent terms along that axis are 0
 * is the owner, the one that writes. */

/* One term of a thread base: (x / by) * scale, or (x % by) * scale where
 * rem; x is the warp or the lane. scale 0: no term. */
typedef struct { bool rem; int by, scale; } LayoutTerm;

/* The thread base as data, for the code generator to emit: per axis
 * (0 rows, 1 columns) a warp term and a lane term. Warps from warps_in_use
 * on are idle and take warp 0's base. */
typedef struct {
    LayoutTerm warp[2], lane[2];
    int warps_in_use;
} LayoutThreadMap;

typedef struct {
    int row, col;
    bool active;   /* the warp is in use */
    bool first;    /* a SLICE: the thread's parent terms along the reduced
                    * axis are 0 (owner threads); always true otherwise */
} LayoutThreadBase;

typedef struct {
    int row, col;
    bool row_check, col_check;   /* some thread's row (col) at this slot lies past the tile */
} LayoutSlot;

LayoutThreadMap layout_thread_map(const Layout *l);
int layout_term_eval(LayoutTerm t, int x);
/* Whether term t is 0 at x: the comparison the code generator emits for
 * owner threads (x % by == 0, or x < by). */
bool layout_term_is_zero(LayoutTerm t, int x);
LayoutThreadBase layout_thread_base(const Layout *l, int warp, int lane);
LayoutSlot layout_slot_offset(const Layout *l, int slot);
/* How many (warp, lane, slot) hold each element of the tile: 1 for BLOCKED
 * and MMA; for a SLICE the threads along the reduced axis (one slot
 * each): the values its parent's lane and warp terms take there. */
int layout_copies(const Layout *l);

/* Which element (*row, *col) slot `slot` of thread (warp, lane) holds, for
 * every kind; *valid: the slot holds it at all (active warp, inside the
 * tile), *owner: valid and the one copy of the element that writes it.
 * Built on layout_thread_base and layout_slot_offset; the code generator
 * emits the same arithmetic in LLVM IR. */
void layout_elem_of(const Layout *l, int warp, int lane, int slot, int *row, int *col, bool *valid, bool *owner);

/* How the threads of a register layout l (BLOCKED or MMA) share the rows
 * (axis 1) or columns (axis 0) of its tile: what a reduction along axis
 * combines. The lanes of a warp that hold parts of one output element
 * differ by the XORs lane_masks; nwarps warps hold parts of it, a warp's
 * index among them being warp_index of the warp (warp % n or warp / n);
 * one lane of each such group holds the warp's partial once all lanes are
 * combined: lane % lead_lanes == 0 along axis 1, lane < lead_lanes along
 * axis 0. */
typedef struct {
    int lane_masks[5], nmasks;
    int nwarps;
    LayoutTerm warp_index;
    int lead_lanes;
} LayoutReduction;

LayoutReduction layout_reduction(const Layout *l, int axis);

/* Whether a and b are one layout whatever their kinds and fields say: the
 * same tile and slots, and layout_elem_of gives the same answer for every
 * (warp, lane, slot), the element compared where the slot is valid. A
 * value in one needs no conversion to the other: the slices of two MMA
 * layouts that differ only in their columns, say. */
bool layout_same_map(const Layout *a, const Layout *b);

/* The layout a dot's result takes is its engine's choice, not this
 * pass's: result gives the layout the engine that will lower dot wants
 * (its own, an MMA layout say), or NULL for the default (BLOCKED). The
 * code generator asks its target's engines (codegen/codegen.c); a tool
 * without a target names an engine's policy (compiler/nvidia/
 * mma_layout.h). A NULL policy gives every dot the default. */
typedef struct {
    const Layout *(*result)(LayoutTable *t, const IrFunc *f, const IrOp *dot, const void *ctx);
    const void *ctx;
    /* the SHARED layout of a ring slot (a tile an asynchronous copy
     * fills, which dots read in place); NULL, or NULL returned:
     * layout_shared */
    const Layout *(*slot)(LayoutTable *t, int rows, int cols, int elem_bytes);
} LayoutDotPolicy;

/* The layout pass: one layout per tile value of f (NULL for scalars and
 * for values materialized where they are used: splat and iota).
 * Expects verified IR; guarantees that a loop's carried value, its block
 * argument and its result share a layout. */
typedef struct {
    const Layout **of;        /* by ValueId */
    bool *absorbed;           /* transposes and converts folded into a dot's operand */
    bool *mma_dot;            /* dots whose engine chose their result's layout (the tensor cores') */
} LayoutPlan;

LayoutPlan layout_plan(const IrFunc *f, LayoutTable *t, const LayoutDotPolicy *dots);
void layout_plan_free(LayoutPlan *p);
/* Whether a dot runs on the tensor cores: @ph.tensorcore, f16 or bf16
 * operands of one dtype, M, N, K multiples of 16, 8, 16. */
bool layout_dot_on_tensorcores(const IrFunc *f, const IrOp *op);

#endif
