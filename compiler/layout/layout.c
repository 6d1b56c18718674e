/* layout.c: layouts (layout.h) and the layout pass, which gives each tile
 * value of a function the distribution the code generator emits it in.
 *
 * Anchors: a tensor-core dot's result takes the MMA layout, a load the
 * BLOCKED layout of its shape (16-byte chunks), a reduction the SLICE of
 * its operand's layout. Elementwise ops take the layout of their operands,
 * preferring MMA, then SLICE, then BLOCKED, so the softmax arithmetic of
 * attention stays in the accumulator layout of the dot that feeds it.
 * Values that are cheap to compute anywhere (splat, iota, broadcast, and
 * elementwise ops over only those) get no layout: the code generator
 * materializes them in whatever layout their user has. */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

struct LayoutTable { Layout **items; int n, cap; };

LayoutTable *layout_table_new(void) { return xcalloc(1, sizeof(LayoutTable)); }

void layout_table_free(LayoutTable *t)
{
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->items[i]);
    free(t->items);
    free(t);
}

static const Layout *intern(LayoutTable *t, const Layout *l)
{
    for (int i = 0; i < t->n; i++)
        if (!memcmp(t->items[i], l, sizeof *l)) return t->items[i];
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->items = xrealloc(t->items, sizeof *t->items * (size_t)t->cap);
    }
    Layout *copy = xmalloc(sizeof *copy);
    *copy = *l;
    t->items[t->n++] = copy;
    return copy;
}

static int largest_divisor_at_most(int n, int limit)
{
    for (int d = limit < n ? limit : n; d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

const Layout *layout_blocked(LayoutTable *t, int rows, int cols, int threads, int elem_bytes)
{
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAY_BLOCKED;
    l.rows = rows;
    l.cols = cols;
    l.threads = threads;
    l.v = 1;
    for (int v = 16 / (elem_bytes > 0 ? elem_bytes : 4); v > 1; v /= 2)
        if (cols % v == 0) { l.v = v; break; }
    int chunks = cols / l.v;
    l.tc = 1;
    while (l.tc * 2 <= 32 && l.tc * 2 <= chunks) l.tc *= 2;
    int warps = threads / 32;
    int per_row_warps = chunks / l.tc;   /* warps that fit along one row of chunks */
    l.wc = largest_divisor_at_most(warps, per_row_warps > 0 ? per_row_warps : 1);
    l.wr = warps / l.wc;
    return intern(t, &l);
}

/* The MMA layout of rows x cols on wm x wn warps, each owning its share
 * of 16x8 pieces, row pieces mstride apart (0: adjacent). */
static const Layout *mma_layout(LayoutTable *t, int rows, int cols, int threads, int wm, int wn, int mstride)
{
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAY_MMA;
    l.rows = rows;
    l.cols = cols;
    l.threads = threads;
    l.wm = wm;
    l.wn = wn;
    l.tm = rows / 16 / wm;
    l.tn = cols / 8 / wn;
    l.mstride = mstride;
    return intern(t, &l);
}

/* The MMA layout of a rows x cols result over threads' warps. Rows-first
 * (rows_first) puts as many warps as divide the 16-row pieces along rows,
 * so a warp owns whole rows: what row reductions and an A operand held in
 * registers need. Otherwise the warps form the grid whose warp reads the
 * fewest operand fragments per 16-deep step (one ldmatrix.x4 per 16 rows
 * of A, one per 16 columns of B: tm + tn / 2), as a plain product's do. */
const Layout *layout_mma_for(LayoutTable *t, int rows, int cols, int threads, bool rows_first)
{
    if (rows % 16 || cols % 8) return NULL;
    int tiles_m = rows / 16, tiles_n = cols / 8, warps = threads / 32;
    int best_m = 1, best_n = 1;
    for (int wm = 1; wm <= warps; wm++) {
        if (tiles_m % wm) continue;
        for (int wn = 1; wm * wn <= warps; wn++) {
            if (tiles_n % wn) continue;
            /* most warps in use; among equals, more warps along rows, or the fewest fragments */
            int used = wm * wn, best = best_m * best_n;
            int frags = tiles_m / wm + (tiles_n / wn + 1) / 2, best_frags = tiles_m / best_m + (tiles_n / best_n + 1) / 2;
            bool better = used > best || (used == best && (rows_first ? wm > best_m
                                                            : frags < best_frags || (frags == best_frags && wm > best_m)));
            if (better) {
                best_m = wm;
                best_n = wn;
            }
        }
    }
    return mma_layout(t, rows, cols, threads, best_m, best_n, 0);
}

const Layout *layout_mma(LayoutTable *t, int rows, int cols, int threads) { return layout_mma_for(t, rows, cols, threads, true); }

const Layout *layout_mma_interleaved(LayoutTable *t, int rows, int cols, int threads)
{
    int warps = threads / 32;
    if (!warps || rows % (16 * warps) || cols % 8) return NULL;
    if (rows == 16 * warps) return layout_mma_for(t, rows, cols, threads, true);   /* one piece a warp: nothing to interleave */
    return mma_layout(t, rows, cols, threads, warps, 1, 16 * warps);
}

const Layout *layout_mma_wg_cols(LayoutTable *t, int rows, int cols, int threads)
{
    int groups = threads / 128;
    if (rows != 64 || groups < 2 || threads % 128 || cols % (8 * groups)) return NULL;
    Layout l = *mma_layout(t, rows, cols, threads, 4, groups, 0);
    l.wg_cols = true;
    return intern(t, &l);
}

const Layout *layout_slice(LayoutTable *t, const Layout *parent, int axis)
{
    if (parent->kind == LAY_SLICE) return NULL;
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAY_SLICE;
    l.rows = axis == 1 ? parent->rows : 1;
    l.cols = axis == 1 ? 1 : parent->cols;
    l.threads = parent->threads;
    l.parent = parent;
    l.axis = axis;
    return intern(t, &l);
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* BLOCKED: lanes form (32 / tc) x tc, warps wr x wc; the pattern of
 * ctar x ctac elements repeats over the tile, rows of patterns outermost,
 * then columns, then the v consecutive columns of a chunk. */
static int blocked_ctar(const Layout *l) { return (32 / l->tc) * l->wr; }
static int blocked_ctac(const Layout *l) { return l->v * l->tc * l->wc; }

/* A SLICE's slots are the distinct positions along the kept axis of its
 * parent's slots, numbered in the order the parent's slots first reach
 * them: BLOCKED rows of patterns (axis 1) or columns of patterns times the
 * chunk's columns (axis 0); MMA rows +0 and +8 of each piece's row (axis 1)
 * or columns +0 and +1 of each piece's column (axis 0). */
static int slice_nslots(const Layout *l)
{
    const Layout *p = l->parent;
    if (p->kind == LAY_MMA) return l->axis == 1 ? p->tm * 2 : p->tn * 2;
    return l->axis == 1 ? ceil_div(p->rows, blocked_ctar(p)) : ceil_div(p->cols, blocked_ctac(p)) * p->v;
}

int layout_slice_slot(const Layout *l, int parent_slot)
{
    const Layout *p = l->parent;
    int s = parent_slot;
    if (p->kind == LAY_MMA) {
        int i = s % 4, in = (s / 4) % p->tn, im = s / 4 / p->tn;
        return l->axis == 1 ? im * 2 + (i >> 1) : in * 2 + (i & 1);
    }
    int reps_c = ceil_div(p->cols, blocked_ctac(p));
    int j = s % p->v, rc = (s / p->v) % reps_c, rr = s / p->v / reps_c;
    return l->axis == 1 ? rr : rc * p->v + j;
}

/* The first parent slot that holds slice slot j. */
static int slice_parent_slot(const Layout *l, int j)
{
    const Layout *p = l->parent;
    if (p->kind == LAY_MMA) return l->axis == 1 ? (j / 2) * p->tn * 4 + (j % 2) * 2 : (j / 2) * 4 + j % 2;
    return l->axis == 1 ? j * ceil_div(p->cols, blocked_ctac(p)) * p->v : j;
}

/* A SHARED layout's fields, without interning. Rows of n whole 16-byte
 * chunks get Triton's swizzle for ldmatrix-read operands: the eight rows
 * of an 8x8 matrix (8-aligned, one 16-byte chunk each) must land on eight
 * different chunks modulo 8, the 128 bytes that span the 32 banks. Rows of
 * 128 bytes or more XOR their chunk index with row % 8 (per_phase 1,
 * max_phase 8); of 64 bytes, two consecutive rows fill the banks, so the
 * phase advances every 2 rows (per_phase 2, max_phase 4); of 32 bytes
 * every 4 (per_phase 4, max_phase 2); rows of 16 bytes need no XOR. In
 * general max_phase is the largest power of two that divides n, at most
 * 8, which keeps the XOR inside the row, and per_phase 8 / max_phase;
 * an odd n spreads 8 rows over 8 chunks by itself. Rows of part chunks
 * are padded by 16 bytes instead. */
static Layout shared_fields(int rows, int cols, int elem_bytes)
{
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAY_SHARED;
    l.rows = rows;
    l.cols = cols;
    l.elem = elem_bytes;
    l.vec = 16 / elem_bytes;
    l.per_phase = l.max_phase = 1;
    int64_t row_bytes = (int64_t)cols * elem_bytes;
    if (row_bytes < 16 || row_bytes % 16) {
        l.stride = cols + 16 / elem_bytes;
        return l;
    }
    int64_t chunks = row_bytes / 16;
    l.stride = cols;
    while (l.max_phase < 8 && chunks % (2 * l.max_phase) == 0) l.max_phase *= 2;
    l.per_phase = 8 / l.max_phase;
    return l;
}

int64_t layout_shared_bytes(int rows, int cols, int elem_bytes)
{
    Layout l = shared_fields(rows, cols, elem_bytes);
    return (int64_t)rows * l.stride * elem_bytes;
}

const Layout *layout_shared(LayoutTable *t, int rows, int cols, int elem_bytes)
{
    Layout l = shared_fields(rows, cols, elem_bytes);
    return intern(t, &l);
}

const Layout *layout_shared_atoms(LayoutTable *t, int rows, int cols, int elem_bytes)
{
    int64_t row_bytes = (int64_t)cols * elem_bytes;
    if (row_bytes == 32 || row_bytes == 64) return layout_shared(t, rows, cols, elem_bytes);
    if (row_bytes % 128) return NULL;
    Layout l = shared_fields(rows, 128 / elem_bytes, elem_bytes);
    l.cols = cols;
    if (row_bytes > 128) l.atom = 128 / elem_bytes;
    return intern(t, &l);
}

int64_t layout_shared_size(const Layout *l) { return (int64_t)l->rows * (l->atom ? l->cols : l->stride) * l->elem; }

int layout_shared_atom_cols(const Layout *l) { return l->atom ? l->atom : l->cols; }

int layout_shared_hw_swizzle(const Layout *l)
{
    if (!l || l->kind != LAY_SHARED || l->elem != 2) return 0;
    int cols = layout_shared_atom_cols(l), row = cols * l->elem;
    bool swizzled = l->stride == cols && l->per_phase * l->max_phase == 8;
    return swizzled && (row == 32 || row == 64 || row == 128) ? row : 0;
}

const Layout *layout_shared_plain(LayoutTable *t, int rows, int cols, int elem_bytes)
{
    Layout l = shared_fields(rows, cols, elem_bytes);
    l.stride = cols;
    l.per_phase = l.max_phase = 1;
    return intern(t, &l);
}

int64_t layout_shared_offset(const Layout *l, int row, int col)
{
    int64_t atom_at = 0;
    if (l->atom) {
        atom_at = (int64_t)(col / l->atom) * l->rows * l->atom * l->elem;
        col %= l->atom;
    }
    int64_t in_row = (int64_t)col * l->elem;
    if (l->max_phase > 1) in_row ^= (int64_t)(row / l->per_phase % l->max_phase) * 16;
    return atom_at + (int64_t)row * l->stride * l->elem + in_row;
}

/* Whole phase periods of rows (per_phase * max_phase) keep the XOR of a
 * row, and rows of whole max_phase-chunk groups leave the low bits of a
 * row's start clear; a column shift of whole chunks then splits into its
 * part inside a max_phase-chunk group, which meets the XOR, and the rest,
 * an add. Where the column's bytes and that part share no set bit, adding
 * the part is XORing it, and XORs commute. Unswizzled maps shift by an add
 * alone. */
LayoutShift layout_shared_shift(const Layout *l, int drow, int dcol)
{
    int64_t atoms_at = 0;
    if (l->atom) {
        atoms_at = (int64_t)(dcol / l->atom) * l->rows * l->atom * l->elem;
        dcol %= l->atom;
    }
    int64_t col_bytes = (int64_t)dcol * l->elem, group = (int64_t)l->max_phase * 16;
    LayoutShift s;
    s.xor_bytes = l->max_phase > 1 ? col_bytes % group : 0;
    s.add_bytes = atoms_at + col_bytes - s.xor_bytes + (int64_t)drow * l->stride * l->elem;
    return s;
}

/* In atoms, a shift holds where the column stays in its atom's place: the
 * shift's part inside an atom does not carry the column into the next. */
bool layout_shared_shift_holds(const Layout *l, int col, int drow, int dcol)
{
    if (l->atom) {
        if (col % l->atom + dcol % l->atom >= l->atom) return false;
        col %= l->atom;
        dcol %= l->atom;
    }
    if (l->max_phase == 1) return true;
    LayoutShift s = layout_shared_shift(l, drow, dcol);
    return drow % (l->per_phase * l->max_phase) == 0 && (int64_t)dcol * l->elem % 16 == 0 &&
           ((int64_t)col * l->elem & s.xor_bytes) == 0;
}

int layout_nslots(const Layout *l)
{
    switch (l->kind) {
    case LAY_BLOCKED: {
        int ctar = (32 / l->tc) * l->wr, ctac = l->v * l->tc * l->wc;
        return ((l->rows + ctar - 1) / ctar) * ((l->cols + ctac - 1) / ctac) * l->v;
    }
    case LAY_MMA: return l->tm * l->tn * 4;
    case LAY_SLICE: return slice_nslots(l);
    case LAY_SHARED: return 1;
    }
    return 0;
}

int layout_col_run(const Layout *l)
{
    return l->kind == LAY_BLOCKED ? l->v : l->kind == LAY_MMA ? 2 : 1;
}

void layout_str(const Layout *l, char *buf, size_t n)
{
    char p[200];
    switch (l->kind) {
    case LAY_BLOCKED:
        snprintf(buf, n, "blocked[%dx%d: v%d lanes %dx%d warps %dx%d]", l->rows, l->cols, l->v, 32 / l->tc, l->tc, l->wr, l->wc);
        break;
    case LAY_MMA:
        snprintf(buf, n, "mma[%dx%d: warps %dx%d, %dx%d pieces each%s%s]", l->rows, l->cols, l->wm, l->wn, l->tm, l->tn,
                 l->mstride ? ", interleaved" : "", l->wg_cols ? ", warpgroups along columns" : "");
        break;
    case LAY_SLICE:
        layout_str(l->parent, p, sizeof p);
        snprintf(buf, n, "slice(%s, axis %d)", p, l->axis);
        break;
    case LAY_SHARED:
        if (l->atom)
            snprintf(buf, n, "shared[%dx%d: atoms of %d columns, swizzled, vec %d, per phase %d, max phase %d]", l->rows, l->cols,
                     l->atom, l->vec, l->per_phase, l->max_phase);
        else if (l->max_phase > 1)
            snprintf(buf, n, "shared[%dx%d: swizzled, vec %d, per phase %d, max phase %d]", l->rows, l->cols, l->vec, l->per_phase,
                     l->max_phase);
        else if (l->stride != l->cols)
            snprintf(buf, n, "shared[%dx%d: padded, row stride %d]", l->rows, l->cols, l->stride);
        else
            snprintf(buf, n, "shared[%dx%d: row-major]", l->rows, l->cols);
        break;
    }
}

/* ---- which element a thread's slot holds ---- */

static LayoutTerm term(bool rem, int by, int scale) { LayoutTerm t = {rem, by, scale}; return t; }

LayoutThreadMap layout_thread_map(const Layout *l)
{
    LayoutThreadMap m;
    memset(&m, 0, sizeof m);
    m.warps_in_use = l->threads / 32;
    switch (l->kind) {
    case LAY_BLOCKED:
        m.warp[0] = term(false, l->wc, 32 / l->tc);
        m.lane[0] = term(false, l->tc, 1);
        m.warp[1] = term(true, l->wc, l->v * l->tc);
        m.lane[1] = term(true, l->tc, l->v);
        break;
    case LAY_MMA:
        /* lane l holds rows l/4 (+8) and columns 2(l%4) (+1) of each piece */
        m.warp[0] = l->wg_cols ? term(true, l->wm, l->tm * 16) : term(false, l->wn, l->mstride ? 16 : l->tm * 16);
        m.lane[0] = term(false, 4, 1);
        m.warp[1] = l->wg_cols ? term(false, l->wm, l->tn * 8) : term(true, l->wn, l->tn * 8);
        m.lane[1] = term(true, 4, 2);
        m.warps_in_use = l->wm * l->wn;
        break;
    case LAY_SLICE:
        m = layout_thread_map(l->parent);
        m.warp[l->axis] = term(false, 1, 0);
        m.lane[l->axis] = term(false, 1, 0);
        break;
    case LAY_SHARED:
        break;   /* no register holds an element: every thread names the tile's start */
    }
    return m;
}

int layout_term_eval(LayoutTerm t, int x)
{
    if (!t.scale) return 0;
    return (t.rem ? x % t.by : x / t.by) * t.scale;
}

bool layout_term_is_zero(LayoutTerm t, int x)
{
    return !t.scale || (t.rem ? x % t.by == 0 : x < t.by);
}

/* Owner threads of a slice: the parent's terms along the reduced axis are
 * 0. Tested on the thread's own warp: an idle warp holds nothing, so it
 * owns nothing either way. */
static bool first_thread(const Layout *l, int warp, int lane)
{
    if (l->kind != LAY_SLICE) return true;
    LayoutThreadMap pm = layout_thread_map(l->parent);
    return layout_term_is_zero(pm.lane[l->axis], lane) && layout_term_is_zero(pm.warp[l->axis], warp);
}

LayoutThreadBase layout_thread_base(const Layout *l, int warp, int lane)
{
    LayoutThreadMap m = layout_thread_map(l);
    LayoutThreadBase b;
    b.active = warp < m.warps_in_use;
    int w = b.active ? warp : 0;
    b.row = layout_term_eval(m.warp[0], w) + layout_term_eval(m.lane[0], lane);
    b.col = layout_term_eval(m.warp[1], w) + layout_term_eval(m.lane[1], lane);
    b.first = first_thread(l, warp, lane);
    return b;
}

LayoutSlot layout_slot_offset(const Layout *l, int slot)
{
    LayoutSlot o;
    memset(&o, 0, sizeof o);
    switch (l->kind) {
    case LAY_BLOCKED: {
        int ctar = blocked_ctar(l), ctac = blocked_ctac(l), reps_c = ceil_div(l->cols, ctac);
        int j = slot % l->v, rc = (slot / l->v) % reps_c, rr = slot / l->v / reps_c;
        o.row = rr * ctar;
        o.col = rc * ctac + j;
        o.row_check = (int64_t)(rr + 1) * ctar > l->rows;
        o.col_check = (int64_t)(rc + 1) * ctac > l->cols;
        break;
    }
    case LAY_MMA: {
        /* four registers per 16x8 piece: rows +0 +0 +8 +8, columns +0 +1 +0 +1 */
        int i = slot % 4, in = (slot / 4) % l->tn, im = slot / 4 / l->tn;
        o.row = im * (l->mstride ? l->mstride : 16) + 8 * (i >> 1);
        o.col = in * 8 + (i & 1);
        break;
    }
    case LAY_SLICE: {
        /* the kept axis of the first parent slot at this position; along
         * it, the parent's slots at one position agree on the check */
        LayoutSlot q = layout_slot_offset(l->parent, slice_parent_slot(l, slot));
        if (l->axis == 1) {
            o.row = q.row;
            o.row_check = q.row_check;
        } else {
            o.col = q.col;
            o.col_check = q.col_check;
        }
        break;
    }
    case LAY_SHARED:
        break;
    }
    return o;
}

/* How many values term t takes for x in [0, n). */
static int term_values(LayoutTerm t, int n)
{
    if (!t.scale) return 1;
    return t.rem ? (t.by < n ? t.by : n) : ceil_div(n, t.by);
}

int layout_copies(const Layout *l)
{
    if (l->kind != LAY_SLICE) return 1;
    /* the threads that differ only in the parent's terms along the reduced axis */
    LayoutThreadMap pm = layout_thread_map(l->parent);
    return term_values(pm.lane[l->axis], 32) * term_values(pm.warp[l->axis], pm.warps_in_use);
}

void layout_elem_of(const Layout *l, int warp, int lane, int slot, int *row, int *col, bool *valid, bool *owner)
{
    LayoutThreadBase b = layout_thread_base(l, warp, lane);
    LayoutSlot o = layout_slot_offset(l, slot);
    *row = b.row + o.row;
    *col = b.col + o.col;
    *valid = b.active && (!o.row_check || *row < l->rows) && (!o.col_check || *col < l->cols);
    *owner = *valid && b.first;
}

bool layout_same_map(const Layout *a, const Layout *b)
{
    if (a == b) return true;
    if (a->kind == LAY_SHARED || b->kind == LAY_SHARED) return false;   /* in registers or not */
    int n = layout_nslots(a);
    if (a->rows != b->rows || a->cols != b->cols || a->threads != b->threads || n != layout_nslots(b)) return false;
    for (int w = 0; w < a->threads / 32; w++)
        for (int lane = 0; lane < 32; lane++)
            for (int s = 0; s < n; s++) {
                int ra, ca, rb, cb;
                bool va, oa, vb, ob;
                layout_elem_of(a, w, lane, s, &ra, &ca, &va, &oa);
                layout_elem_of(b, w, lane, s, &rb, &cb, &vb, &ob);
                if (va != vb || oa != ob || (va && (ra != rb || ca != cb))) return false;
            }
    return true;
}

/* A warp's place along the axis a reduction combines (its column of the
 * warps' grid along axis 1, its row along axis 0): the thread map's warp
 * term for that axis, unscaled. */
static LayoutTerm warp_index(const Layout *l, int axis)
{
    LayoutTerm t = layout_thread_map(l).warp[axis == 1 ? 1 : 0];
    t.scale = 1;
    return t;
}

LayoutReduction layout_reduction(const Layout *l, int axis)
{
    LayoutReduction r = {{0}, 0, 1, {false, 1, 1}, 1};
    if (l->kind == LAY_MMA) {
        /* lane l holds rows l/4 and l/4+8 and columns 2(l%4), 2(l%4)+1 of a piece */
        static const int row_masks[] = {1, 2}, col_masks[] = {4, 8, 16};
        const int *m = axis == 1 ? row_masks : col_masks;
        r.nmasks = axis == 1 ? 2 : 3;
        for (int i = 0; i < r.nmasks; i++) r.lane_masks[i] = m[i];
        r.nwarps = axis == 1 ? l->wn : l->wm;
        r.warp_index = warp_index(l, axis);
        r.lead_lanes = 4;
        return r;
    }
    if (axis == 1)
        for (int m = 1; m < l->tc; m *= 2) r.lane_masks[r.nmasks++] = m;
    else
        for (int m = l->tc; m < 32; m *= 2) r.lane_masks[r.nmasks++] = m;
    r.nwarps = axis == 1 ? l->wc : l->wr;
    r.warp_index = warp_index(l, axis);
    r.lead_lanes = l->tc;
    return r;
}

bool layout_dot_on_tensorcores(const IrFunc *f, const IrOp *op)
{
    if (!f->tensorcore) return false;
    IrType a = ir_vtype(f, op->args[0]), b = ir_vtype(f, op->args[1]);
    if (a.dt != b.dt || (a.dt != DT_F16 && a.dt != DT_BF16)) return false;
    int M = a.shape[0], K = a.shape[1];
    int N = op->flags & DOT_TRANS_B ? b.shape[0] : b.shape[1];
    return M % 16 == 0 && N % 8 == 0 && K % 16 == 0 && K <= 512;
}

/* ---- the pass ---- */

typedef struct {
    const IrFunc *f;
    LayoutTable *t;
    LayoutPlan p;
    bool *lazy;          /* by ValueId: materialized where used */
    const LayoutDotPolicy *dots;
} Pass;


static const Layout *default_layout(Pass *ps, ValueId v)
{
    IrType t = ir_vtype(ps->f, v);
    return layout_blocked(ps->t, ir_rows(t), ir_cols(t), ps->f->threads, ir_dtype_bytes(t.dt));
}

static int rank_of(const Layout *l) { return !l || l->kind == LAY_SHARED ? 0 : l->kind == LAY_MMA ? 3 : l->kind == LAY_SLICE ? 2 : 1; }

static void plan_block(Pass *ps, const IrBlock *blk);

static bool is_tile_value(Pass *ps, ValueId v) { return ir_vtype(ps->f, v).rank > 0; }

/* A while's carried values have one layout in both regions' arguments and
 * the results: the init's at first, then, as for a for, what the body yields. */
static void plan_while(Pass *ps, const IrOp *op)
{
    const Layout **of = ps->p.of;
    const IrBlock *cond = op->body, *body = op->els;
    for (int i = 0; i < op->nargs; i++) {
        ValueId init = op->args[i], arg = cond->args[i];
        if (!is_tile_value(ps, arg)) continue;
        of[arg] = of[body->args[i]] = ps->lazy[init] || !of[init] ? default_layout(ps, arg) : of[init];
    }
    for (int round = 0; round < 2; round++) {
        plan_block(ps, cond);
        plan_block(ps, body);
        const IrOp *y = body->ops[body->nops - 1];
        for (int i = 0; i < op->nargs && y->kind == OP_YIELD; i++) {
            ValueId yv = y->args[i];
            if (is_tile_value(ps, cond->args[i]) && !ps->lazy[yv] && of[yv]) of[cond->args[i]] = of[body->args[i]] = of[yv];
        }
    }
    for (int i = 0; i < op->nres; i++) of[op->res[i]] = of[body->args[i]];
}

static void plan_op(Pass *ps, const IrOp *op)
{
    const IrFunc *f = ps->f;
    const Layout **of = ps->p.of;
    ValueId r = op->nres ? op->res[0] : 0;
    if (r && !is_tile_value(ps, r) && !ir_op_is(op->kind, IR_OP_REGIONS)) return;
    switch (op->kind) {
    case OP_SPLAT: case OP_IOTA: case OP_BROADCAST: case OP_RESHAPE:
        ps->lazy[r] = true;
        break;
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_FMA: case OP_CONVERT: {
        const Layout *best = NULL;
        bool all_lazy = true;
        for (int i = 0; i < op->nargs; i++) {
            ValueId a = op->args[i];
            if (!is_tile_value(ps, a)) continue;
            if (!ps->lazy[a]) all_lazy = false;
            if (rank_of(of[a]) > rank_of(best)) best = of[a];
        }
        if (all_lazy) ps->lazy[r] = true;
        else of[r] = best ? best : default_layout(ps, r);
        break;
    }
    case OP_LOAD: case OP_TRANSPOSE: case OP_CUMSUM: case OP_GATHER:
        of[r] = default_layout(ps, r);
        break;
    case OP_COPY_ASYNC: {
        IrType t = ir_vtype(f, r);
        /* a policy's slot layout may not take the tile (f32, rows its swizzle cannot hold) */
        /* a column (async.c's vector rings): contiguous, as the tensor holds it, for the 1-D bulk copy */
        if (ir_cols(t) == 1) of[r] = layout_shared_plain(ps->t, ir_rows(t), 1, ir_dtype_bytes(t.dt));
        else of[r] = ps->dots && ps->dots->slot ? ps->dots->slot(ps->t, ir_rows(t), ir_cols(t), ir_dtype_bytes(t.dt)) : NULL;
        if (!of[r]) of[r] = layout_shared(ps->t, ir_rows(t), ir_cols(t), ir_dtype_bytes(t.dt));
        break;
    }
    case OP_WAIT_ASYNC: case OP_WAIT_DOTS:
        for (int i = 0; i < op->nres; i++) {
            ValueId a = op->args[i];
            if (ps->lazy[a]) ps->lazy[op->res[i]] = true;
            else of[op->res[i]] = of[a] ? of[a] : default_layout(ps, op->res[i]);
        }
        break;
    case OP_DOT: {
        const Layout *m = ps->dots ? ps->dots->result(ps->t, f, op, ps->dots->ctx) : NULL;
        ps->p.mma_dot[r] = m != NULL;
        of[r] = m ? m : default_layout(ps, r);
        break;
    }
    case OP_REDUCE: case OP_ARGMAX: case OP_ARGMIN: {
        const Layout *src = ps->lazy[op->args[0]] || !of[op->args[0]] || of[op->args[0]]->kind == LAY_SHARED
                                ? default_layout(ps, op->args[0]) : of[op->args[0]];
        of[r] = src->kind == LAY_SLICE ? default_layout(ps, r) : layout_slice(ps->t, src, op->axis);
        break;
    }
    case OP_FOR: {
        const IrBlock *body = op->body;
        int n = op->nargs - 2;
        for (int i = 0; i < n; i++) {
            ValueId init = op->args[2 + i], arg = body->args[1 + i];
            if (!is_tile_value(ps, arg)) continue;
            of[arg] = ps->lazy[init] || !of[init] ? default_layout(ps, arg) : of[init];
        }
        /* twice: the carried values settle in the layout the body gives them */
        for (int round = 0; round < 2; round++) {
            plan_block(ps, body);
            const IrOp *y = body->ops[body->nops - 1];
            for (int i = 0; i < n && y->kind == OP_YIELD; i++) {
                ValueId arg = body->args[1 + i], yv = y->args[i];
                if (is_tile_value(ps, arg) && !ps->lazy[yv] && of[yv]) of[arg] = of[yv];
            }
        }
        for (int i = 0; i < op->nres; i++) of[op->res[i]] = of[body->args[1 + i]];
        break;
    }
    case OP_WHILE:
        plan_while(ps, op);
        break;
    case OP_IF: {
        plan_block(ps, op->body);
        if (op->els) plan_block(ps, op->els);
        const IrOp *yt = op->body->nops ? op->body->ops[op->body->nops - 1] : NULL;
        const IrOp *ye = op->els && op->els->nops ? op->els->ops[op->els->nops - 1] : NULL;
        for (int i = 0; i < op->nres; i++) {
            ValueId res = op->res[i];
            if (!is_tile_value(ps, res)) continue;
            const Layout *l = NULL;
            if (yt && yt->kind == OP_YIELD && !ps->lazy[yt->args[i]]) l = of[yt->args[i]];
            if (!l && ye && ye->kind == OP_YIELD && !ps->lazy[ye->args[i]]) l = of[ye->args[i]];
            of[res] = l ? l : default_layout(ps, res);
        }
        break;
    }
    default:
        break;
    }
}

static void plan_block(Pass *ps, const IrBlock *blk)
{
    for (int i = 0; i < blk->nops; i++) plan_op(ps, blk->ops[i]);
}

/* A transpose, or a convert of one, used only as a dot's operand is never
 * materialized: the dot writes its operand to shared memory transposed. */
static void count_uses(const IrBlock *blk, int *uses, int *dot_uses)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        for (int j = 0; j < op->nargs; j++) {
            uses[op->args[j]]++;
            if (op->kind == OP_DOT && j < 2) dot_uses[op->args[j]]++;
        }
        if (op->body) count_uses(op->body, uses, dot_uses);
        if (op->els) count_uses(op->els, uses, dot_uses);
    }
}

/* Converts of a transpose used only as dot operands; each one counts as a
 * dot use of the transpose it reads. */
static void mark_absorbed_converts(const IrFunc *f, const IrBlock *blk, const int *uses, int *dot_uses, bool *absorbed)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        if (op->body) mark_absorbed_converts(f, op->body, uses, dot_uses, absorbed);
        if (op->els) mark_absorbed_converts(f, op->els, uses, dot_uses, absorbed);
        if (op->kind != OP_CONVERT) continue;
        const IrOp *src = f->values[op->args[0]].def;
        ValueId r = op->res[0];
        if (src && src->kind == OP_TRANSPOSE && uses[r] == dot_uses[r] && uses[r] > 0) {
            absorbed[r] = true;
            dot_uses[op->args[0]]++;
        }
    }
}

static void mark_absorbed_transposes(const IrBlock *blk, const int *uses, const int *dot_uses, bool *absorbed)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        if (op->body) mark_absorbed_transposes(op->body, uses, dot_uses, absorbed);
        if (op->els) mark_absorbed_transposes(op->els, uses, dot_uses, absorbed);
        ValueId r = op->nres ? op->res[0] : 0;
        if (op->kind == OP_TRANSPOSE && uses[r] > 0 && uses[r] == dot_uses[r]) absorbed[r] = true;
    }
}

LayoutPlan layout_plan(const IrFunc *f, LayoutTable *t, const LayoutDotPolicy *dots)
{
    Pass ps = {f, t, {0}, NULL, dots};
    size_t n = (size_t)f->nvalues + 1;
    ps.p.of = xcalloc(n, sizeof *ps.p.of);
    ps.p.absorbed = xcalloc(n, sizeof *ps.p.absorbed);
    ps.p.mma_dot = xcalloc(n, sizeof *ps.p.mma_dot);
    ps.lazy = xcalloc(n, sizeof *ps.lazy);
    plan_block(&ps, f->body);
    int *uses = xcalloc(n, sizeof *uses), *dot_uses = xcalloc(n, sizeof *dot_uses);
    count_uses(f->body, uses, dot_uses);
    mark_absorbed_converts(f, f->body, uses, dot_uses, ps.p.absorbed);
    mark_absorbed_transposes(f->body, uses, dot_uses, ps.p.absorbed);
    /* lazy values have no layout of their own */
    for (size_t v = 0; v < n; v++)
        if (ps.lazy[v]) ps.p.of[v] = NULL;
    free(uses);
    free(dot_uses);
    free(ps.lazy);
    return ps.p;
}

void layout_plan_free(LayoutPlan *p)
{
    free(p->of);
    free(p->absorbed);
    free(p->mma_dot);
    memset(p, 0, sizeof *p);
}
