/* masks.c: a select whose condition holds at every element of its tile
 * costs one scalar test. Attention's causal mask,
 * `ph.where(kt + ph.iota(1) <= q0 + ph.iota(0), s, -1.0e30)`, is true on
 * every KV tile below the diagonal, yet costs a compare and a select per
 * element on each; after this pass it costs a few scalar ops there.
 *
 * A tile `select %c, %a, %b` whose condition is a signed compare (lt, le,
 * gt, ge) of two i32 tiles that are each an affine form
 *     S + k + cr*row + cc*col
 * (S a sum of i32 scalars times constants; k, cr, cc integer constants;
 * built from iota, splat, broadcast, add, sub, neg and mul by a constant)
 * becomes
 *     %t = <the compare holds at every element>
 *     %x = if %t { yield %a } else { %s = select %c, %a, %b; yield %s }
 * lhs - rhs is affine too, so the compare is hardest to satisfy at one
 * corner of the tile, picked by the signs of its coefficients; the test
 * computes both sides there with scalar ops. The ops that build %c stay
 * where they are: the code generator builds them where they are used,
 * in the else.
 *
 * Exactness. i32 arithmetic wraps, in the tile ops and in the scalar ops
 * alike, and the IR has no wider integer. Each side's elements are
 * congruent modulo 2^32 to the integer S + k + cr*row + cc*col, where S is
 * the i32 value the test computes for the scalar part (however it wraps,
 * its residue is right). The test first checks, by comparing S with
 * constants, that this integer lies in the i32 range at every element of
 * the tile (it is extreme at the corners, so the constants follow from k,
 * cr, cc and the shape). Then every element equals its integer, neither
 * side wraps at the corner either, and the corner's compare is the
 * integers' compare, which decides the whole tile. When a side may leave
 * the range the test is false and the select runs as before.
 *
 * A masked store whose mask is such a compare (or a broadcast of one: a
 * row mask over the window) is split the same way, into
 *     if %t { store, no mask } else { store, masked }
 * so a window the mask keeps whole takes the code generator's whole-window
 * paths (vector stores, the epilogue through shared memory): attention's
 * last row block cut at N_CTX costs the other blocks nothing. Without
 * scalars the mask is dropped (true everywhere), the store is (false
 * everywhere), or both stay.
 *
 * A compare of forms without scalars is decided here: the select is
 * replaced by %a when it holds everywhere, by %b when it fails everywhere,
 * and stays when the tile is mixed. At run time only "holds everywhere"
 * is tested: a second if for "fails everywhere" cost registers (and
 * spills) in the attention kernels, whose loops skip the tiles where the
 * mask fails everywhere, so it would never be taken there.
 *
 * Expects: verified IR, after licm (a select whose operands are invariant
 * has left its loop; inside an if it could not). Guarantees: the same
 * results; nothing else moves. A select the code generator builds where it
 * is used (%a and %b made of splats, iotas and broadcasts: layout.c) is
 * left alone, since it holds no registers to save and the if would give
 * it some. */
#include "ir/irutil.h"

#include <stdlib.h>
#include <string.h>

enum {
    MAX_TERMS = 4,      /* scalars in one form's S */
    VISIT_BUDGET = 64,  /* ops looked at for one compare, so shared operands cannot blow up */
    MAX_DEPTH = 200,    /* regions: the rewrite nests one more, the verifier allows IR_MAX_DEPTH */
    MAX_EXTENT = 1 << 20,
};

static const int64_t COEF_LIMIT = (int64_t)1 << 32;

/* sum over terms of sc[i] * sv[i] (rank-0 i32 values), + k + row*r + col*c */
typedef struct {
    int nterms;
    ValueId sv[MAX_TERMS];
    int64_t sc[MAX_TERMS];
    int64_t k, row, col;
} Affine;

static int64_t wrap32(int64_t v)
{
    uint64_t u = (uint64_t)v & 0xffffffffu;
    return u >= 0x80000000u ? (int64_t)u - ((int64_t)1 << 32) : (int64_t)u;
}

static bool small(int64_t x) { return x >= -COEF_LIMIT && x <= COEF_LIMIT; }

static bool scale_by(int64_t *x, int64_t c)
{
    int64_t m = c < 0 ? -c : c;
    if (m && (*x > COEF_LIMIT / m || *x < -COEF_LIMIT / m)) return false;
    *x *= c;
    return true;
}

static bool scale(Affine *a, int64_t c)
{
    for (int i = 0; i < a->nterms; i++)
        if (!scale_by(&a->sc[i], c)) return false;
    return scale_by(&a->k, c) && scale_by(&a->row, c) && scale_by(&a->col, c);
}

static bool add_term(Affine *a, ValueId v, int64_t c)
{
    for (int i = 0; i < a->nterms; i++)
        if (a->sv[i] == v) {
            a->sc[i] += c;
            if (!a->sc[i]) {   /* cancelled: kt - kt */
                a->sv[i] = a->sv[a->nterms - 1];
                a->sc[i] = a->sc[--a->nterms];
                return true;
            }
            return small(a->sc[i]);
        }
    if (a->nterms == MAX_TERMS) return false;
    a->sv[a->nterms] = v;
    a->sc[a->nterms++] = c;
    return true;
}

/* a += sign * b, sign 1 or -1 */
static bool combine(Affine *a, const Affine *b, int64_t sign)
{
    for (int i = 0; i < b->nterms; i++)
        if (!add_term(a, b->sv[i], sign * b->sc[i])) return false;
    a->k += sign * b->k;
    a->row += sign * b->row;
    a->col += sign * b->col;
    return small(a->k) && small(a->row) && small(a->col);
}

static bool is_constant(const Affine *a) { return !a->nterms && !a->row && !a->col; }

static bool affine(const IrFunc *f, ValueId v, Affine *out, int *budget);

static bool affine_binary(const IrFunc *f, const IrOp *d, Affine *out, int *budget)
{
    if (d->sub != BIN_ADD && d->sub != BIN_SUB && d->sub != BIN_MUL) return false;
    Affine b;
    if (!affine(f, d->args[0], out, budget) || !affine(f, d->args[1], &b, budget)) return false;
    if (d->sub != BIN_MUL) return combine(out, &b, d->sub == BIN_ADD ? 1 : -1);
    if (is_constant(&b)) return scale(out, b.k);
    if (!is_constant(out)) return false;   /* a product of two variables is not affine */
    int64_t c = out->k;
    *out = b;
    return scale(out, c);
}

/* The affine form of i32 value v, if it has one. */
static bool affine(const IrFunc *f, ValueId v, Affine *out, int *budget)
{
    memset(out, 0, sizeof *out);
    IrType t = ir_vtype(f, v);
    const IrOp *d = f->values[v].def;
    if (t.dt != DT_I32 || --*budget < 0) return false;
    if (t.rank == 0) {
        if (d && d->kind == OP_CONST) out->k = wrap32(d->ival);
        else add_term(out, v, 1);
        return true;
    }
    if (!d || ir_rows(t) > MAX_EXTENT || ir_cols(t) > MAX_EXTENT) return false;
    bool ok = false;
    switch (d->kind) {
    case OP_IOTA:
        if (t.rank == 2 && d->axis == 0) out->row = 1;
        else out->col = 1;   /* a rank-1 tile is one row */
        ok = true;
        break;
    case OP_SPLAT: case OP_BROADCAST:
        ok = affine(f, d->args[0], out, budget);
        break;
    case OP_UNARY:
        ok = d->sub == UN_NEG && affine(f, d->args[0], out, budget) && scale(out, -1);
        break;
    case OP_BINARY:
        ok = affine_binary(f, d, out, budget);
        break;
    default:
        break;
    }
    /* along an axis of extent 1 the index is always 0 (and a broadcast
     * stretches that one element) */
    if (ir_rows(t) == 1) out->row = 0;
    if (ir_cols(t) == 1) out->col = 0;
    return ok;
}

/* The constant part of a form at the tile's row r, column c. */
static int64_t at(const Affine *a, int64_t r, int64_t c) { return a->k + a->row * r + a->col * c; }

static int64_t least(const Affine *a, int rows, int cols)
{
    return at(a, a->row < 0 ? rows - 1 : 0, a->col < 0 ? cols - 1 : 0);
}

static int64_t greatest(const Affine *a, int rows, int cols)
{
    return at(a, a->row > 0 ? rows - 1 : 0, a->col > 0 ? cols - 1 : 0);
}

/* ---- building the tests, before the select ---- */

typedef struct {
    IrFunc *f;
    IrBlock *blk;
    int pos;      /* where the next op goes in blk */
    Loc loc;
} Builder;

static ValueId emit(Builder *b, IrOpKind kind, int sub, DType dt, ValueId x, ValueId y)
{
    ValueId args[2] = {x, y};
    IrType t = ir_scalar(dt);
    IrOp *op = ir_emit(b->f, NULL, kind, y ? 2 : 1, args, 1, &t);
    op->sub = sub;
    op->loc = b->loc;
    ir_block_insert(b->f, b->blk, b->pos++, op);
    return op->res[0];
}

static ValueId emit_const(Builder *b, DType dt, int64_t v)
{
    IrType t = ir_scalar(dt);
    IrOp *op = ir_emit(b->f, NULL, OP_CONST, 0, NULL, 1, &t);
    op->ival = dt == DT_I32 ? wrap32(v) : v;
    op->loc = b->loc;
    ir_block_insert(b->f, b->blk, b->pos++, op);
    return op->res[0];
}

/* x and y, where 0 stands for true */
static ValueId emit_and(Builder *b, ValueId x, ValueId y)
{
    if (!x || !y) return x ? x : y;
    return emit(b, OP_BINARY, BIN_AND, DT_BOOL, x, y);
}

/* S of a form: an i32 scalar congruent to it modulo 2^32; 0 when it has none. */
static ValueId emit_scalar_part(Builder *b, const Affine *a)
{
    ValueId s = 0;
    for (int i = 0; i < a->nterms; i++) {
        ValueId t = a->sv[i];
        int64_t c = a->sc[i];
        if (!c) continue;
        if (c == -1 && s) {
            s = emit(b, OP_BINARY, BIN_SUB, DT_I32, s, t);
            continue;
        }
        if (c != 1) t = emit(b, OP_BINARY, BIN_MUL, DT_I32, t, emit_const(b, DT_I32, c));
        s = s ? emit(b, OP_BINARY, BIN_ADD, DT_I32, s, t) : t;
    }
    return s;
}

/* One side of the compare: its form, its scalar part S, and whether S plus
 * the form's least and greatest constant parts stay in the i32 range. */
typedef struct {
    Affine a;
    ValueId s;
    ValueId in_range;   /* bool scalar; 0 when always */
} Side;

static const int64_t I32_MIN = -((int64_t)1 << 31), I32_MAX = ((int64_t)1 << 31) - 1;

/* The range S must lie in, [*lo, *hi], for every element of the side to be
 * its integer; false when no i32 S does. S is taken as 0 when the form has
 * no scalars. */
static bool side_bounds(const Affine *a, int rows, int cols, int64_t *lo, int64_t *hi)
{
    *lo = I32_MIN - least(a, rows, cols);
    *hi = I32_MAX - greatest(a, rows, cols);
    if (!a->nterms) return *lo <= 0 && 0 <= *hi;
    return *lo <= I32_MAX && *hi >= I32_MIN && *lo <= *hi;
}

/* Emits the range check of a side whose bounds side_bounds accepted. */
static void emit_range(Builder *b, Side *sd, int rows, int cols)
{
    int64_t lo, hi;
    side_bounds(&sd->a, rows, cols, &lo, &hi);
    if (!sd->s) return;
    ValueId above = lo > I32_MIN ? emit(b, OP_CMP, CMP_GE, DT_BOOL, sd->s, emit_const(b, DT_I32, lo)) : 0;
    ValueId below = hi < I32_MAX ? emit(b, OP_CMP, CMP_LE, DT_BOOL, sd->s, emit_const(b, DT_I32, hi)) : 0;
    sd->in_range = emit_and(b, above, below);
}

/* The side's value at row r, column c (exact when it is in range). */
static ValueId emit_corner(Builder *b, const Side *sd, int64_t r, int64_t c)
{
    int64_t k = at(&sd->a, r, c);
    if (!sd->s) return emit_const(b, DT_I32, k);
    if (!wrap32(k)) return sd->s;
    return emit(b, OP_BINARY, BIN_ADD, DT_I32, sd->s, emit_const(b, DT_I32, k));
}

static bool holds(int cmp, int64_t x, int64_t y)
{
    switch (cmp) {
    case CMP_LT: return x < y;
    case CMP_LE: return x <= y;
    case CMP_GT: return x > y;
    default: return x >= y;
    }
}

/* ---- the rewrite ---- */

/* The compare being split: its sides and the corners of the tile where it
 * is hardest to hold (for "true everywhere") and easiest (for "false
 * everywhere"). */
typedef struct {
    int cmp;
    Side lhs, rhs;
    int rows, cols;
    int64_t hard_r, hard_c, easy_r, easy_c;
} Split;

/* Whether cond is a compare of affine forms that can both be in range. */
static bool match_compare(const IrFunc *f, ValueId cond, Split *sp)
{
    const IrOp *d = f->values[cond].def;
    if (!d || d->kind != OP_CMP || d->sub > CMP_GE) return false;
    int budget = VISIT_BUDGET;
    memset(sp, 0, sizeof *sp);
    if (!affine(f, d->args[0], &sp->lhs.a, &budget) || !affine(f, d->args[1], &sp->rhs.a, &budget)) return false;
    IrType t = ir_vtype(f, d->args[0]);
    sp->cmp = d->sub;
    sp->rows = ir_rows(t);
    sp->cols = ir_cols(t);
    int64_t lo, hi;
    if (!side_bounds(&sp->lhs.a, sp->rows, sp->cols, &lo, &hi) || !side_bounds(&sp->rhs.a, sp->rows, sp->cols, &lo, &hi))
        return false;
    /* lhs - rhs is greatest where its row and column coefficients say */
    int64_t dr = sp->lhs.a.row - sp->rhs.a.row, dc = sp->lhs.a.col - sp->rhs.a.col;
    int64_t max_r = dr > 0 ? sp->rows - 1 : 0, max_c = dc > 0 ? sp->cols - 1 : 0;
    int64_t min_r = dr < 0 ? sp->rows - 1 : 0, min_c = dc < 0 ? sp->cols - 1 : 0;
    bool less = sp->cmp == CMP_LT || sp->cmp == CMP_LE;
    sp->hard_r = less ? max_r : min_r;
    sp->hard_c = less ? max_c : min_c;
    sp->easy_r = less ? min_r : max_r;
    sp->easy_c = less ? min_c : max_c;
    return true;
}

/* The compare a mask stretches: a broadcast holds where its operand does
 * (a row or column mask stretched over the tile). */
static ValueId through_broadcasts(const IrFunc *f, ValueId mask)
{
    for (const IrOp *d; (d = f->values[mask].def) && d->kind == OP_BROADCAST;) mask = d->args[0];
    return mask;
}

/* Whether the code generator builds v where it is used (layout.c's rule). */
static bool built_where_used(const IrFunc *f, ValueId v, int *budget)
{
    if (ir_vtype(f, v).rank == 0) return true;
    const IrOp *d = f->values[v].def;
    if (!d || --*budget < 0) return false;
    if (ir_op_is(d->kind, IR_OP_BUILT_AT_USE)) return true;
    if (!ir_op_is(d->kind, IR_OP_ELEMENTWISE)) return false;
    for (int i = 0; i < d->nargs; i++)
        if (!built_where_used(f, d->args[i], budget)) return false;
    return true;
}

/* A compare of forms without scalars over the whole tile: 1 when it holds
 * at every element, -1 when at none, 0 when the tile is mixed. */
static int decided(const Split *sp)
{
    const Affine *l = &sp->lhs.a, *r = &sp->rhs.a;
    if (holds(sp->cmp, at(l, sp->hard_r, sp->hard_c), at(r, sp->hard_r, sp->hard_c))) return 1;
    if (!holds(sp->cmp, at(l, sp->easy_r, sp->easy_c), at(r, sp->easy_r, sp->easy_c))) return -1;
    return 0;
}

/* Such a compare decided here: every later use of the select at
 * blk->ops[i] reads %a or %b instead, and the select goes. Returns false
 * when the tile is mixed. */
static bool decide_now(IrBlock *blk, int i, const Split *sp)
{
    IrOp *sel = blk->ops[i];
    int d = decided(sp);
    if (!d) return false;
    ir_block_remove(blk, i);
    ir_replace_uses(blk, sel->res[0], d > 0 ? sel->args[1] : sel->args[2]);
    return true;
}

/* An if on cond with nres (0 or 1) results of type *t. */
static IrOp *new_if(IrFunc *f, ValueId cond, int nres, const IrType *t, Loc loc)
{
    IrOp *op = ir_emit(f, NULL, OP_IF, 1, &cond, nres, t);
    op->body = ir_block_new(f);
    op->els = ir_block_new(f);
    op->loc = loc;
    return op;
}

/* Ends branch blk of the if that replaces a select: it yields v. */
static void end_branch_yielding(IrFunc *f, IrBlock *blk, ValueId v, Loc loc)
{
    IrOp *y = ir_emit(f, blk, OP_YIELD, 1, &v, 0, NULL);
    y->loc = loc;
}

/* Emits at b's position the bool scalar that says the compare (forms with
 * scalars) holds at every element. */
static ValueId emit_holds_everywhere(Builder *b, Split *sp)
{
    sp->lhs.s = emit_scalar_part(b, &sp->lhs.a);
    sp->rhs.s = emit_scalar_part(b, &sp->rhs.a);
    emit_range(b, &sp->lhs, sp->rows, sp->cols);
    emit_range(b, &sp->rhs, sp->rows, sp->cols);
    ValueId x = emit_corner(b, &sp->lhs, sp->hard_r, sp->hard_c), y = emit_corner(b, &sp->rhs, sp->hard_r, sp->hard_c);
    ValueId hard = emit(b, OP_CMP, sp->cmp, DT_BOOL, x, y);
    return emit_and(b, emit_and(b, sp->lhs.in_range, sp->rhs.in_range), hard);
}

/* Replaces the select at blk->ops[i] (forms with scalars) by the test and
 * the if; returns the index of the if. */
static int split(IrFunc *f, IrBlock *blk, int i, Split *sp)
{
    IrOp *sel = blk->ops[i];
    ir_block_remove(blk, i);
    Builder b = {f, blk, i, sel->loc};
    ValueId all = emit_holds_everywhere(&b, sp);

    IrType t = ir_vtype(f, sel->res[0]);
    IrOp *if_op = new_if(f, all, 1, &t, sel->loc);
    ir_block_insert(f, blk, b.pos, if_op);
    end_branch_yielding(f, if_op->body, sel->args[1], sel->loc);
    /* the if takes the select's value, so its uses stay as they are; the
     * select, in the else, takes the value made for the if */
    ValueId value = sel->res[0], fresh = if_op->res[0];
    if_op->res[0] = value;
    f->values[value].def = if_op;
    sel->res[0] = fresh;
    f->values[fresh].def = sel;
    f->values[fresh].name = f->values[value].name;
    ir_block_insert(f, if_op->els, 0, sel);
    end_branch_yielding(f, if_op->els, fresh, sel->loc);
    return b.pos;
}

/* Splits or decides the select at blk->ops[i] when it qualifies; returns
 * the index of the last op now standing for it (i - 1 when it went). */
static int visit_select(IrFunc *f, IrBlock *blk, int i, int depth)
{
    IrOp *sel = blk->ops[i];
    Split sp;
    if (ir_vtype(f, sel->res[0]).rank == 0 || !match_compare(f, through_broadcasts(f, sel->args[0]), &sp)) return i;
    if (!sp.lhs.a.nterms && !sp.rhs.a.nterms) return decide_now(blk, i, &sp) ? i - 1 : i;
    int budget = VISIT_BUDGET;
    if (depth > MAX_DEPTH || (built_where_used(f, sel->args[1], &budget) && built_where_used(f, sel->args[2], &budget)))
        return i;
    return split(f, blk, i, &sp);
}

/* The masked store st without its mask: the value takes the mask's place. */
static void drop_mask(IrOp *st)
{
    st->args[st->nargs - 2] = st->args[st->nargs - 1];
    st->nargs--;
    st->flags &= ~STORE_MASKED;
}

/* A masked store whose mask is such a compare: decided here when the forms
 * have no scalars (the mask dropped, the store dropped, or both kept), else
 * split into `if %t { store } else { store, masked; yield }`, so a window
 * the mask keeps whole goes the code generator's whole-window ways (vector
 * stores, the epilogue through shared memory) instead of element by
 * element: attention's last row block masked past N_CTX costs the others
 * nothing. Returns the index of the last op now standing for it. */
static int visit_store(IrFunc *f, IrBlock *blk, int i, int depth)
{
    IrOp *st = blk->ops[i];
    Split sp;
    if (!match_compare(f, through_broadcasts(f, ir_store_mask(st)), &sp)) return i;
    if (!sp.lhs.a.nterms && !sp.rhs.a.nterms) {
        int d = decided(&sp);
        if (d > 0) drop_mask(st);
        else if (d < 0) ir_block_remove(blk, i--);
        return i;
    }
    if (depth > MAX_DEPTH) return i;
    ir_block_remove(blk, i);
    Builder b = {f, blk, i, st->loc};
    ValueId all = emit_holds_everywhere(&b, &sp);
    IrOp *if_op = new_if(f, all, 0, NULL, st->loc);
    ir_block_insert(f, blk, b.pos, if_op);
    IrOp *whole = ir_clone_op(f, st, st->args);
    drop_mask(whole);
    ir_block_insert(f, if_op->body, 0, whole);
    ir_emit(f, if_op->body, OP_YIELD, 0, NULL, 0, NULL)->loc = st->loc;
    ir_block_insert(f, if_op->els, 0, st);
    ir_emit(f, if_op->els, OP_YIELD, 0, NULL, 0, NULL)->loc = st->loc;
    return b.pos;
}

static void masks_block(IrFunc *f, IrBlock *blk, int depth)
{
    if (depth > MAX_DEPTH) return;
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        if (op->body) masks_block(f, op->body, depth + 1);
        if (op->els) masks_block(f, op->els, depth + 1);
        if (op->kind == OP_SELECT) i = visit_select(f, blk, i, depth);
        else if (ir_store_mask(op)) i = visit_store(f, blk, i, depth);
    }
}

void ir_masks(IrFunc *f) { masks_block(f, f->body, 0); }

/* ---- loops split where the masks hold (pass `masksplit`, after pipeline) ----
 *
 * A for loop whose body holds ifs this pass made for selects (`if %t {
 * yield %a } else { select %c, %a, %b; yield }`) on compares whose scalars
 * are the loop's variable iv or values from outside the loop runs, where
 * every such compare holds at every element for the first iterations and
 * not after (attention's key-column and causal masks: the last K/V
 * blocks), as two loops: a copy running those first iterations with each
 * such if replaced by %a, then the loop itself from where the copy
 * stopped, carrying on from the copy's results (ring slots included: one
 * ring across both). The split point is found in i64 from the compares'
 * forms: the iterations where each side's S is the exact integer inside
 * its range and the corner's compare holds, the conditions under which
 * the if's own test holds; each is linear in iv, so it holds on a prefix
 * of the iterations, on a suffix (then it must hold at the first), or
 * everywhere or nowhere. A mask under ifs on conditions from outside the
 * loop limits the split only where those conditions reach it. */

enum { SPLIT_COEF = 1 << 20 };   /* |coefficients| kept small, so the i64 sums cannot wrap */

typedef struct {
    ValueId if_res;       /* the mask if's result in the original loop */
    ValueId then_value;   /* %a */
} MaskIf;

typedef struct {
    IrFunc *f;
    const bool *inside;
    ValueId iv;
    MaskIf *ifs;
    int nifs, cap;
} LoopScan;

static bool invariant_terms(const LoopScan *ls, const Affine *a, int64_t *c_iv)
{
    *c_iv = 0;
    for (int i = 0; i < a->nterms; i++) {
        if (a->sc[i] > SPLIT_COEF || a->sc[i] < -SPLIT_COEF) return false;
        if (a->sv[i] == ls->iv) *c_iv += a->sc[i];
        else if (ls->inside[a->sv[i]]) return false;
    }
    return true;
}

/* Whether op is a mask if of this pass whose compare can limit a split;
 * its split in *sp. */
static bool mask_if(const LoopScan *ls, const IrOp *op, Split *sp, MaskIf *mi)
{
    if (op->kind != OP_IF || op->nres != 1 || op->body->nops != 1 || !op->els || op->els->nops < 2) return false;
    const IrOp *ty = op->body->ops[0], *ey = op->els->ops[op->els->nops - 1];
    if (ty->kind != OP_YIELD || ey->kind != OP_YIELD || ty->nargs != 1 || ey->nargs != 1) return false;
    const IrOp *sel = ls->f->values[ey->args[0]].def;
    if (!sel || sel->kind != OP_SELECT || sel->args[1] != ty->args[0]) return false;
    if (!match_compare(ls->f, through_broadcasts(ls->f, sel->args[0]), sp)) return false;
    int64_t cl, cr;
    if (!invariant_terms(ls, &sp->lhs.a, &cl) || !invariant_terms(ls, &sp->rhs.a, &cr) || (!cl && !cr)) return false;
    mi->if_res = op->res[0];
    mi->then_value = ty->args[0];
    return true;
}

static ValueId emit3(Builder *b, IrOpKind kind, DType dt, ValueId x, ValueId y, ValueId z)
{
    ValueId args[3] = {x, y, z};
    IrType t = ir_scalar(dt);
    IrOp *op = ir_emit(b->f, NULL, kind, 3, args, 1, &t);
    op->loc = b->loc;
    ir_block_insert(b->f, b->blk, b->pos++, op);
    return op->res[0];
}

static ValueId to64(Builder *b, ValueId v) { return emit(b, OP_CONVERT, 0, DT_I64, v, 0); }
static ValueId add64(Builder *b, ValueId x, ValueId y) { return emit(b, OP_BINARY, BIN_ADD, DT_I64, x, y); }
static ValueId k64(Builder *b, int64_t v) { return emit_const(b, DT_I64, v); }

/* The side's S without its iv term, exact in i64 (the terms' values are
 * i32, their coefficients at most SPLIT_COEF). */
static ValueId exact_rest(Builder *b, const Affine *a, ValueId iv)
{
    ValueId s = k64(b, 0);
    for (int i = 0; i < a->nterms; i++) {
        if (a->sv[i] == iv) continue;
        ValueId t = emit(b, OP_BINARY, BIN_MUL, DT_I64, to64(b, a->sv[i]), k64(b, a->sc[i]));
        s = add64(b, s, t);
    }
    return s;
}

static int64_t iv_coef(const Affine *a, ValueId iv)
{
    int64_t c = 0;
    for (int i = 0; i < a->nterms; i++) c += a->sv[i] == iv ? a->sc[i] : 0;
    return c;
}

/* How many of the iterations start, start + step, ... (at most trip)
 * satisfy P iv + Q <= 0 (Q an i64 value), as an i64 value. */
static ValueId count_where(Builder *b, int64_t P, ValueId Q, ValueId start, ValueId trip, int64_t step)
{
    if (P > 0) {
        /* iv <= floor(-Q / P) = B; count = max(0, (B - start) // step + 1) */
        ValueId negq = emit(b, OP_BINARY, BIN_SUB, DT_I64, k64(b, 0), Q);
        ValueId B = emit(b, OP_BINARY, BIN_FLOORDIV, DT_I64, negq, k64(b, P));
        ValueId d = emit(b, OP_BINARY, BIN_SUB, DT_I64, B, start);
        ValueId n = add64(b, emit(b, OP_BINARY, BIN_FLOORDIV, DT_I64, d, k64(b, step)), k64(b, 1));
        n = emit(b, OP_BINARY, BIN_MAX, DT_I64, n, k64(b, 0));
        return emit(b, OP_BINARY, BIN_MIN, DT_I64, n, trip);
    }
    /* P <= 0: holds from some iteration on (or never, or always): all of them when it holds at the first */
    ValueId at0 = add64(b, emit(b, OP_BINARY, BIN_MUL, DT_I64, start, k64(b, P)), Q);
    ValueId ok = emit(b, OP_CMP, CMP_LE, DT_BOOL, at0, k64(b, 0));
    return emit3(b, OP_SELECT, DT_I64, ok, trip, k64(b, 0));
}

/* The iterations (from the first, at most trip) where the mask if's compare
 * holds at every element by the conditions its test checks: each side's S
 * exact and in its range, the corner's compare. */
static ValueId count_holding(Builder *b, const Split *sp, ValueId iv, ValueId start, ValueId trip, int64_t step)
{
    const Side *side[2] = {&sp->lhs, &sp->rhs};
    ValueId rest[2], n = trip;
    for (int s = 0; s < 2; s++) {
        const Affine *a = &side[s]->a;
        rest[s] = exact_rest(b, a, iv);
        if (!a->nterms) continue;
        int64_t lo, hi, c = iv_coef(a, iv);
        side_bounds(a, sp->rows, sp->cols, &lo, &hi);
        if (lo < I32_MIN) lo = I32_MIN;
        if (hi > I32_MAX) hi = I32_MAX;
        /* lo - S <= 0 and S - hi <= 0 */
        ValueId qlo = emit(b, OP_BINARY, BIN_SUB, DT_I64, k64(b, lo), rest[s]);
        ValueId qhi = emit(b, OP_BINARY, BIN_SUB, DT_I64, rest[s], k64(b, hi));
        n = emit(b, OP_BINARY, BIN_MIN, DT_I64, n, count_where(b, -c, qlo, start, trip, step));
        n = emit(b, OP_BINARY, BIN_MIN, DT_I64, n, count_where(b, c, qhi, start, trip, step));
    }
    /* D = x - y at the hard corner: lt D + 1 <= 0, le D <= 0, gt 1 - D <= 0, ge -D <= 0 */
    int64_t P = iv_coef(&sp->lhs.a, iv) - iv_coef(&sp->rhs.a, iv);
    int64_t k = at(&sp->lhs.a, sp->hard_r, sp->hard_c) - at(&sp->rhs.a, sp->hard_r, sp->hard_c);
    ValueId D = add64(b, emit(b, OP_BINARY, BIN_SUB, DT_I64, rest[0], rest[1]), k64(b, k));
    bool less = sp->cmp == CMP_LT || sp->cmp == CMP_LE;
    int64_t bump = sp->cmp == CMP_LT || sp->cmp == CMP_GT;
    ValueId Q = less ? D : emit(b, OP_BINARY, BIN_SUB, DT_I64, k64(b, 0), D);
    if (bump) Q = add64(b, Q, k64(b, 1));
    return emit(b, OP_BINARY, BIN_MIN, DT_I64, n, count_where(b, less ? P : -P, Q, start, trip, step));
}

enum { MAX_REACH = 8 };

typedef struct {
    MaskIf mi;
    Split sp;
    int nreach;           /* -1: reached whatever the ifs around it say */
    ValueId reach[MAX_REACH];
    bool in_then[MAX_REACH];
} Found;

static void scan_mask_ifs(LoopScan *ls, IrBlock *blk, Found **out, int *n, int *cap, const ValueId *reach,
                          const bool *in_then, int nreach, int depth)
{
    for (int i = 0; i < blk->nops && depth < MAX_DEPTH; i++) {
        IrOp *op = blk->ops[i];
        Found fd = {0};
        if (mask_if(ls, op, &fd.sp, &fd.mi)) {
            fd.nreach = nreach;
            for (int k = 0; k < nreach && k < MAX_REACH; k++) fd.reach[k] = reach[k], fd.in_then[k] = in_then[k];
            if (*n == *cap) *out = xrealloc(*out, sizeof **out * (size_t)(*cap = *cap ? 2 * *cap : 4));
            (*out)[(*n)++] = fd;
            continue;
        }
        if (op->kind != OP_IF) continue;
        /* beneath an if on a condition from outside the loop, a mask limits the split only where it reaches */
        ValueId r[MAX_REACH];
        bool t[MAX_REACH];
        int m = nreach;
        for (int k = 0; k < nreach; k++) r[k] = reach[k], t[k] = in_then[k];
        bool known = m >= 0 && m < MAX_REACH && !ls->inside[op->args[0]];
        if (known) r[m] = op->args[0];
        t[known ? m : 0] = true;
        scan_mask_ifs(ls, op->body, out, n, cap, r, t, known ? m + 1 : -1, depth + 1);
        t[known ? m : 0] = false;
        if (op->els) scan_mask_ifs(ls, op->els, out, n, cap, r, t, known ? m + 1 : -1, depth + 1);
    }
}

/* The op in blk (or an if's branches within it) whose result is v, removed;
 * the branch it was in is returned. */
static IrBlock *remove_def(IrBlock *blk, ValueId v, int depth)
{
    for (int i = 0; i < blk->nops && depth < MAX_DEPTH; i++) {
        IrOp *op = blk->ops[i];
        if (op->nres == 1 && op->res[0] == v) {
            ir_block_remove(blk, i);
            return blk;
        }
        if (op->kind != OP_IF) continue;
        IrBlock *in = remove_def(op->body, v, depth + 1);
        if (!in && op->els) in = remove_def(op->els, v, depth + 1);
        if (in) return in;
    }
    return NULL;
}

/* Whether blk is pure ops without regions, then a yield. */
static bool pure_then_yield(const IrBlock *blk)
{
    if (!blk->nops || blk->ops[blk->nops - 1]->kind != OP_YIELD) return false;
    for (int i = 0; i + 1 < blk->nops; i++)
        if (!ir_op_is(blk->ops[i]->kind, IR_OP_PURE) || blk->ops[i]->body || blk->ops[i]->els) return false;
    return true;
}

/* Ifs in blk whose branches compute nothing that stays and yield the same
 * values (a causal mask's if, once its inner mask gave way in the split's
 * copy: the mask's compare is left, read by nothing) give way to those
 * values, inner ones first. */
static void drop_plain_ifs(IrBlock *blk, int depth)
{
    for (int i = 0; i < blk->nops && depth < MAX_DEPTH; i++) {
        IrOp *op = blk->ops[i];
        if (op->body) drop_plain_ifs(op->body, depth + 1);
        if (op->els) drop_plain_ifs(op->els, depth + 1);
        if (op->kind != OP_IF || !op->els || !pure_then_yield(op->body) || !pure_then_yield(op->els)) continue;
        const IrOp *t = op->body->ops[op->body->nops - 1], *e = op->els->ops[op->els->nops - 1];
        bool same = t->kind == OP_YIELD && e->kind == OP_YIELD && t->nargs == op->nres && e->nargs == op->nres;
        for (int k = 0; same && k < op->nres; k++) same = t->args[k] == e->args[k];
        if (!same) continue;
        for (int k = 0; k < op->nres; k++) ir_replace_uses(blk, op->res[k], t->args[k]);
        ir_block_remove(blk, i--);
    }
}

/* Splits the loop at blk->ops[i] when it qualifies; returns the index of the loop. */
static int split_loop(IrFunc *f, IrBlock *blk, int i)
{
    IrOp *loop = blk->ops[i];
    int nmap = f->nvalues + 1;
    bool *inside = xcalloc((size_t)nmap, sizeof *inside);
    ir_mark_defined(loop->body, inside);
    LoopScan ls = {f, inside, loop->body->args[0], NULL, 0, 0};
    Found *found = NULL;
    int nfound = 0, cap = 0;
    scan_mask_ifs(&ls, loop->body, &found, &nfound, &cap, NULL, NULL, 0, 0);
    if (!nfound) {
        free(inside);
        return i;
    }
    Builder b = {f, blk, i, loop->loc};
    int64_t step = loop->ival;
    ValueId start = to64(&b, loop->args[0]), end = to64(&b, loop->args[1]);
    ValueId span = add64(&b, emit(&b, OP_BINARY, BIN_SUB, DT_I64, end, start), k64(&b, step - 1));
    ValueId trip = emit(&b, OP_BINARY, BIN_MAX, DT_I64, emit(&b, OP_BINARY, BIN_FLOORDIV, DT_I64, span, k64(&b, step)), k64(&b, 0));
    ValueId n = trip;
    for (int k = 0; k < nfound; k++) {
        ValueId c = count_holding(&b, &found[k].sp, ls.iv, start, trip, step), reach = 0;
        for (int r = 0; r < found[k].nreach; r++) {
            ValueId cond = found[k].reach[r];
            if (!found[k].in_then[r]) cond = emit(&b, OP_UNARY, UN_NOT, DT_BOOL, cond, 0);
            reach = emit_and(&b, reach, cond);
        }
        if (reach) c = emit3(&b, OP_SELECT, DT_I64, reach, c, trip);
        n = emit(&b, OP_BINARY, BIN_MIN, DT_I64, n, c);
    }
    ValueId mid = add64(&b, start, emit(&b, OP_BINARY, BIN_MUL, DT_I64, n, k64(&b, step)));
    mid = emit(&b, OP_CONVERT, 0, DT_I32, emit(&b, OP_BINARY, BIN_MIN, DT_I64, mid, end), 0);

    ValueId *map = xcalloc((size_t)nmap, sizeof *map);
    IrOp *first = ir_clone_deep(f, loop, map, nmap);
    first->args[1] = mid;
    /* in the copy each mask if gives way to its %a, which may be an earlier
     * mask's result (the causal mask's input is the key mask's) */
    ValueId *clone_if = xcalloc((size_t)nfound + 1, sizeof *clone_if), *value = xcalloc((size_t)nfound + 1, sizeof *value);
    for (int k = 0; k < nfound; k++) {
        ValueId a = found[k].mi.then_value;
        if (a < nmap && map[a]) a = map[a];
        for (int j = 0; j < k; j++)
            if (a == clone_if[j]) a = value[j];
        clone_if[k] = map[found[k].mi.if_res];
        value[k] = a;
        if (remove_def(first->body, clone_if[k], 0)) ir_replace_uses(first->body, clone_if[k], a);
    }
    free(clone_if);
    free(value);
    drop_plain_ifs(first->body, 0);
    ir_block_insert(f, blk, b.pos, first);
    loop->args[0] = mid;
    for (int k = 0; k < first->nres; k++) loop->args[2 + k] = first->res[k];
    free(map);
    free(found);
    free(inside);
    return b.pos + 1;
}

static void split_block(IrFunc *f, IrBlock *blk, int depth)
{
    if (depth > MAX_DEPTH) return;
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        if (op->body) split_block(f, op->body, depth + 1);
        if (op->els) split_block(f, op->els, depth + 1);
        if (op->kind == OP_FOR) i = split_loop(f, blk, i);
    }
}

void ir_mask_split(IrFunc *f) { split_block(f, f->body, 0); }
