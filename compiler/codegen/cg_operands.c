/* cg_operands.c: dot operands on their way to shared memory.
 *
 * Expects: the layout plan's absorbed transposes and converts.
 * Guarantees: an operand is written from its root value, transposed and
 * converted as it goes; a tensor-core operand defined outside the loop
 * that reads it gets a region, a buffer of the shared area (plan_regions),
 * written once where it is defined (write_regions), instead of every
 * iteration. */
#include "cg.h"
#include "dot.h"

/* The value whose elements a dot operand is, and whether it is read
 * transposed: transposes and converts absorbed by the layout pass are
 * applied as the operand is written to shared memory. */
ValueId operand_root(Cg *c, ValueId v, bool *transposed)
{
    *transposed = false;
    for (;;) {
        const IrOp *d = c->f->values[v].def;
        if (!d || !c->plan.absorbed[v]) return v;
        if (d->kind == OP_TRANSPOSE) *transposed = !*transposed;
        v = d->args[0];
    }
}

ValueId operand_ring_root(Cg *c, ValueId operand)
{
    bool tr;
    ValueId root = operand_root(c, operand, &tr);
    const Layout *l = c->plan.of[root];
    return !tr && l && l->kind == LAY_SHARED ? root : 0;
}

LLVMValueRef operand_ring_at(Cg *c, ValueId operand, DType dt)
{
    ValueId root = operand_ring_root(c, operand);
    if (!root || vtype(c, root).dt != dt || !c->vals[root].v) return NULL;
    return c->vals[root].v[0];
}

/* Writes dot operand v to shared buffer buf as dtype dt, element (r, c)
 * at byte base + layout_shared_offset(sl, r, c) of the area. The write's
 * access is recorded once the value is at hand (its conversion may use
 * shared memory of its own). */
static void root_to_smem(Cg *c, ValueId root, bool tr, DType dt, LLVMValueRef area, int buf, int64_t base, const Layout *sl,
                         bool mma_pairs);

void operand_to_smem(Cg *c, ValueId v, DType dt, int buf, int64_t base, const Layout *sl)
{
    bool tr;
    ValueId root = operand_root(c, v, &tr);
    root_to_smem(c, root, tr, dt, c->smem, buf, base, sl, false);
}

/* Whether n consecutive elements from a column that n divides lie
 * together at an address n elements aligned, in every row: inside one
 * 16-byte chunk, which the swizzle moves whole, in rows of whole chunks. */
static bool runs_stay_together(const Layout *sl, int64_t base, int n)
{
    int64_t run = (int64_t)n * sl->elem;
    return 16 % run == 0 && (int64_t)sl->stride * sl->elem % run == 0 && (!sl->atom || sl->atom % n == 0) && base % run == 0;
}

static void root_to_smem(Cg *c, ValueId root, bool tr, DType dt, LLVMValueRef area, int buf, int64_t base, const Layout *sl,
                         bool mma_pairs)
{
    IrType rt = vtype(c, root);
    const Layout *l = reg_layout(c, root);
    Slots s = cg_get(c, root, l);
    smem_access(c, buf, true);
    /* chunks of consecutive halves go out as one 16-byte store; with
     * mma_pairs an MMA layout's pairs of columns as one 4-byte store */
    int vec = !tr && sl->elem == 2 && l->kind == LAY_BLOCKED && l->v >= 2 && runs_stay_together(sl, base, l->v) ? l->v : 1;
    if (mma_pairs && !tr && sl->elem == 2 && l->kind == LAY_MMA && runs_stay_together(sl, base, 2)) vec = 2;
    for (int k = 0; k < s.n; k += vec) {
        SlotPos p = slot_pos(c, l, k);
        LLVMValueRef row = tr ? p.col : p.row, col = tr ? p.row : p.col;
        LLVMValueRef ptr = shared_byte_ptr(c, area, add(c, shared_offset(c, sl, row, col), i32c(c, base)));
        Guard g = guard_begin(c, and1(c, p.valid, p.owner));
        if (vec > 1) {
            LLVMTypeRef vt = LLVMVectorType(dtype_ty(c, dt), (unsigned)vec);
            LLVMValueRef x = LLVMGetUndef(vt);
            for (int j = 0; j < vec; j++)
                x = LLVMBuildInsertElement(c->b, x, cg_convert(c, s.v[k + j], rt.dt, dt), i32c(c, j), "");
            LLVMValueRef st = LLVMBuildStore(c->b, x, ptr);
            LLVMSetAlignment(st, (unsigned)(vec * 2));
        } else {
            LLVMBuildStore(c->b, cg_convert(c, s.v[k], rt.dt, dt), ptr);
        }
        guard_end(c, g);
    }
}

void operand_to_smem_transposed(Cg *c, ValueId v, DType dt, LLVMValueRef area, int buf, int64_t base, const Layout *sl)
{
    bool tr;
    ValueId root = operand_root(c, v, &tr);
    root_to_smem(c, root, !tr, dt, area ? area : c->smem, buf, base, sl, true);
}

const Region *find_region(Cg *c, ValueId operand, DType dt)
{
    bool tr;
    ValueId root = operand_root(c, operand, &tr);
    for (int i = 0; i < c->regions.len; i++)
        if (c->regions.data[i].root == root && c->regions.data[i].tr == tr && c->regions.data[i].dt == dt) return &c->regions.data[i];
    return NULL;
}

/* Finds the tensor-core dot operands defined outside the loop that reads
 * them and gives each its region. */
void plan_regions(Cg *c, const IrBlock *blk, int depth, int *def_depth)
{
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        for (int j = 0; j < op->nres; j++) def_depth[op->res[j]] = depth;
        if (op->kind == OP_DOT && c->plan.mma_dot[op->res[0]] && !ir_is_storage(vtype(c, op->args[0]).dt)) {
            DType dt = vtype(c, op->args[0]).dt;
            const DotEngine *engine = dot_engine_for(c->target, c->f, op);
            for (int a = 0; a < 2; a++) {
                bool tr;
                ValueId root = operand_root(c, op->args[a], &tr);
                Region *seen = (Region *)find_region(c, op->args[a], dt);
                if (seen && engine->operand_stored) seen->engine = engine;
                if (!c->f->values[root].def || def_depth[root] >= depth || seen) continue;
                if (c->plan.of[root] && c->plan.of[root]->kind == LAY_SHARED) continue;   /* in a ring already */
                IrType t = vtype(c, op->args[a]);
                const Layout *sl = operand_layout(c, t.shape[0], t.shape[1], 2);
                int buf = smem_operand_buffer(c, SMEM_REGION, layout_shared_size(sl));
                Region r = {root, tr, dt, smem_offset(c, buf), sl, def_depth[root], buf, engine};
                vec_push(&c->regions, r);
            }
        }
        bool loop = op->kind == OP_FOR || op->kind == OP_WHILE;   /* a while's regions both repeat */
        if (op->body) plan_regions(c, op->body, loop ? depth + 1 : depth, def_depth);
        if (op->els) plan_regions(c, op->els, op->kind == OP_WHILE ? depth + 1 : depth, def_depth);
    }
}

/* Writes the regions of a value just defined. */
void write_regions(Cg *c, ValueId v)
{
    for (int i = 0; i < c->regions.len; i++) {
        const Region *r = &c->regions.data[i];
        if (r->root != v) continue;
        root_to_smem(c, r->root, r->tr, r->dt, c->smem, r->buf, r->base, r->lay, false);
        if (r->engine->operand_stored) r->engine->operand_stored(c);
    }
}
