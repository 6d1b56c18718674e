/* codegen.c: tile IR to LLVM IR for the NVPTX backend, then PTX.
 *
 * Expects: verified IR (compiler/verify.c), every shape static.
 * Guarantees: one kernel per IrFunc, with the ABI of codegen.h; the block's
 * threads agree on every scalar and every branch (scalars are computed
 * redundantly by every thread), so barriers are always reached by all.
 *
 * Layout: a tile of E elements in a block of T threads is spread
 * round-robin: element e (row-major) lives in thread e % T, register slot
 * e / T. Ops on equal shapes (elementwise, convert, select) are therefore
 * local to a thread. Ops that move elements between threads (broadcast,
 * transpose, reduce, dot) go through one shared-memory scratch area:
 * barrier, write, barrier, read. Dots under @ph.tensorcore whose shapes
 * the m16n8k16 instruction tiles run on the tensor cores (operands in
 * shared memory as f16/bf16, ldmatrix, mma.sync, f32 accumulate); the rest
 * use FMA. */
#include "codegen.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    LLVMValueRef *v;   /* nslots values; scalars have one */
    int n;
} Slots;

typedef struct {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef tvoid, ti1, ti16, ti32, ti64, tf16, tbf16, tf32, tptr1, tptr3;
    LLVMTypeRef tv2f16, tv2bf16;
    const IrFunc *f;
    LLVMValueRef fn;
    int T;                       /* threads */
    LLVMValueRef tid;
    Slots *vals;                 /* by ValueId */
    LLVMValueRef *tensor_ptr, *tensor_dim0, *tensor_dim1, *scalar;   /* by param */
    LLVMValueRef smem;           /* [smem_words x i32] addrspace(3) */
    int64_t smem_words;
    LLVMBasicBlockRef exit_bb;
    char *err; size_t errlen;
    bool failed;
} Cg;

static void cg_fail(Cg *c, const IrOp *op, const char *msg)
{
    if (c->failed) return;
    c->failed = true;
    snprintf(c->err, c->errlen, "%s: %s at %d:%d: %s", c->f->name, op ? ir_op_name(op) : "?",
             op ? op->loc.line : 0, op ? op->loc.col : 0, msg);
}

/* ---- small builders ---- */

static LLVMTypeRef dtype_ty(Cg *c, DType dt)
{
    switch (dt) {
    case DT_BOOL: return c->ti1;
    case DT_I32: return c->ti32;
    case DT_F16: return c->tf16;
    case DT_BF16: return c->tbf16;
    case DT_F32: return c->tf32;
    default: return c->tvoid;
    }
}

static LLVMValueRef i32c(Cg *c, int64_t v) { return LLVMConstInt(c->ti32, (unsigned long long)v, 1); }
static LLVMValueRef f32c(Cg *c, double v) { return LLVMConstReal(c->tf32, v); }

static LLVMValueRef call(Cg *c, const char *name, LLVMTypeRef ret, int n, LLVMTypeRef *pts, LLVMValueRef *args)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, pts, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn) fn = LLVMAddFunction(c->mod, name, fty);
    return LLVMBuildCall2(c->b, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef call0(Cg *c, const char *name, LLVMTypeRef ret) { return call(c, name, ret, 0, NULL, NULL); }

static LLVMValueRef call1f(Cg *c, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = c->tf32;
    return call(c, name, c->tf32, 1, &t, &x);
}

static void barrier(Cg *c) { call0(c, "llvm.nvvm.barrier0", c->tvoid); }

static LLVMBasicBlockRef new_bb(Cg *c, const char *name) { return LLVMAppendBasicBlockInContext(c->ctx, c->fn, name); }

/* float view of a value for arithmetic: f16/bf16 widen to f32 */
static LLVMValueRef to_f32(Cg *c, LLVMValueRef v, DType dt)
{
    if (dt == DT_F32) return v;
    if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPExt(c->b, v, c->tf32, "");
    if (dt == DT_I32) return LLVMBuildSIToFP(c->b, v, c->tf32, "");
    if (dt == DT_BOOL) return LLVMBuildUIToFP(c->b, v, c->tf32, "");
    return v;
}

static LLVMValueRef from_f32(Cg *c, LLVMValueRef v, DType dt)
{
    if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPTrunc(c->b, v, dtype_ty(c, dt), "");
    return v;
}

/* 32-bit word for shared memory: every dtype is held as one i32 word */
static LLVMValueRef to_word(Cg *c, LLVMValueRef v, DType dt)
{
    switch (dt) {
    case DT_BOOL: return LLVMBuildZExt(c->b, v, c->ti32, "");
    case DT_I32: return v;
    default: return LLVMBuildBitCast(c->b, to_f32(c, v, dt), c->ti32, "");
    }
}

static LLVMValueRef from_word(Cg *c, LLVMValueRef w, DType dt)
{
    switch (dt) {
    case DT_BOOL: return LLVMBuildTrunc(c->b, w, c->ti1, "");
    case DT_I32: return w;
    default: return from_f32(c, LLVMBuildBitCast(c->b, w, c->tf32, ""), dt);
    }
}

static LLVMValueRef smem_addr(Cg *c, LLVMValueRef word_index)
{
    LLVMValueRef idx[2] = {i32c(c, 0), word_index};
    return LLVMBuildInBoundsGEP2(c->b, LLVMArrayType2(c->ti32, (uint64_t)c->smem_words), c->smem, idx, 2, "");
}

static void smem_store(Cg *c, LLVMValueRef word_index, LLVMValueRef w)
{
    LLVMBuildStore(c->b, w, smem_addr(c, word_index));
}

static LLVMValueRef smem_load(Cg *c, LLVMValueRef word_index)
{
    return LLVMBuildLoad2(c->b, c->ti32, smem_addr(c, word_index), "");
}

/* ---- the round-robin layout ---- */

static int nslots(Cg *c, IrType t)
{
    if (t.rank == 0) return 1;
    int64_t e = ir_numel(t);
    return (int)((e + c->T - 1) / c->T);
}

static LLVMValueRef elem_of_slot(Cg *c, int s) { return LLVMBuildAdd(c->b, i32c(c, (int64_t)s * c->T), c->tid, ""); }

/* Whether slot s holds an element in this thread: constant true unless the
 * tile's last slot is partly filled. */
static LLVMValueRef slot_valid(Cg *c, IrType t, int s)
{
    int64_t e = ir_numel(t);
    if ((int64_t)(s + 1) * c->T <= e) return NULL;   /* always valid */
    return LLVMBuildICmp(c->b, LLVMIntULT, elem_of_slot(c, s), i32c(c, e), "");
}

static void elem_rc(Cg *c, IrType t, LLVMValueRef e, LLVMValueRef *row, LLVMValueRef *col)
{
    int cols = ir_cols(t);
    *row = LLVMBuildUDiv(c->b, e, i32c(c, cols), "");
    *col = LLVMBuildURem(c->b, e, i32c(c, cols), "");
}

/* Runs body only where cond holds (cond NULL: always). */
typedef struct { LLVMBasicBlockRef done; } Guard;
static Guard guard_begin(Cg *c, LLVMValueRef cond)
{
    Guard g = {NULL};
    if (!cond) return g;
    LLVMBasicBlockRef then = new_bb(c, "g"), done = new_bb(c, "gd");
    LLVMBuildCondBr(c->b, cond, then, done);
    LLVMPositionBuilderAtEnd(c->b, then);
    g.done = done;
    return g;
}

static void guard_end(Cg *c, Guard g)
{
    if (!g.done) return;
    LLVMBuildBr(c->b, g.done);
    LLVMPositionBuilderAtEnd(c->b, g.done);
}

/* Writes every element of tile v to the scratch area at base + its
 * row-major index (preceded by a barrier, so earlier readers are done). */
static void tile_to_smem(Cg *c, ValueId v, int64_t base)
{
    IrType t = ir_vtype(c->f, v);
    Slots *sl = &c->vals[v];
    barrier(c);
    for (int s = 0; s < sl->n; s++) {
        Guard g = guard_begin(c, slot_valid(c, t, s));
        LLVMValueRef w = t.rank == 0 ? to_word(c, sl->v[0], t.dt) : to_word(c, sl->v[s], t.dt);
        LLVMValueRef e = t.rank == 0 ? i32c(c, 0) : elem_of_slot(c, s);
        smem_store(c, LLVMBuildAdd(c->b, e, i32c(c, base), ""), w);
        guard_end(c, g);
    }
}

static Slots new_slots(Cg *c, int n)
{
    Slots s = {xcalloc((size_t)n, sizeof(LLVMValueRef)), n};
    (void)c;
    return s;
}

/* ---- shared memory need, computed before code is emitted ---- */

static bool dot_on_tensorcores(const IrFunc *f, const IrOp *op)
{
    if (!f->tensorcore) return false;
    IrType a = ir_vtype(f, op->args[0]), b = ir_vtype(f, op->args[1]);
    if (a.dt != b.dt || (a.dt != DT_F16 && a.dt != DT_BF16)) return false;
    int M = a.shape[0], K = a.shape[1];
    int N = op->flags & DOT_TRANS_B ? b.shape[0] : b.shape[1];
    return M % 16 == 0 && N % 8 == 0 && K % 16 == 0;
}

static int64_t op_smem_words(const IrFunc *f, const IrOp *op)
{
    switch (op->kind) {
    case OP_BROADCAST: case OP_TRANSPOSE: case OP_REDUCE:
        return ir_numel(ir_vtype(f, op->args[0]));
    case OP_DOT: {
        int64_t na = ir_numel(ir_vtype(f, op->args[0])), nb = ir_numel(ir_vtype(f, op->args[1]));
        int64_t nc = ir_numel(ir_vtype(f, op->res[0]));
        if (dot_on_tensorcores(f, op)) return (na + nb + 1) / 2 + 8 + nc;
        return na + nb;
    }
    default: return 0;
    }
}

static int64_t block_smem_words(const IrFunc *f, const IrBlock *blk)
{
    int64_t need = 0;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *op = blk->ops[i];
        int64_t n = op_smem_words(f, op);
        if (op->body) { int64_t m = block_smem_words(f, op->body); if (m > n) n = m; }
        if (op->els) { int64_t m = block_smem_words(f, op->els); if (m > n) n = m; }
        if (n > need) need = n;
    }
    return need;
}

/* ---- ops ---- */

static LLVMValueRef sreg(Cg *c, const char *what, int axis)
{
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", what, "xyz"[axis]);
    return call0(c, name, c->ti32);
}

static LLVMValueRef scalar_binop(Cg *c, IrBinop op, DType dt, LLVMValueRef a, LLVMValueRef b)
{
    LLVMBuilderRef B = c->b;
    if (dt == DT_BOOL) return op == BIN_AND ? LLVMBuildAnd(B, a, b, "") : LLVMBuildOr(B, a, b, "");
    if (dt == DT_I32) {
        switch (op) {
        case BIN_ADD: return LLVMBuildAdd(B, a, b, "");
        case BIN_SUB: return LLVMBuildSub(B, a, b, "");
        case BIN_MUL: return LLVMBuildMul(B, a, b, "");
        case BIN_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, a, b, ""), a, b, "");
        case BIN_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, b, ""), a, b, "");
        case BIN_FLOORDIV: case BIN_MOD: {
            /* floor like Python; a zero divisor gives 0 rather than a trap */
            LLVMValueRef zero = i32c(c, 0);
            LLVMValueRef bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
            LLVMValueRef bs = LLVMBuildSelect(B, bz, i32c(c, 1), b, "");
            LLVMValueRef q = LLVMBuildSDiv(B, a, bs, ""), r = LLVMBuildSRem(B, a, bs, "");
            LLVMValueRef adjust = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
                LLVMBuildICmp(B, LLVMIntNE, LLVMBuildICmp(B, LLVMIntSLT, r, zero, ""),
                              LLVMBuildICmp(B, LLVMIntSLT, bs, zero, ""), ""), "");
            LLVMValueRef out = op == BIN_FLOORDIV
                ? LLVMBuildSelect(B, adjust, LLVMBuildSub(B, q, i32c(c, 1), ""), q, "")
                : LLVMBuildSelect(B, adjust, LLVMBuildAdd(B, r, bs, ""), r, "");
            return LLVMBuildSelect(B, bz, zero, out, "");
        }
        default: return LLVMBuildSDiv(B, a, b, "");
        }
    }
    LLVMValueRef x = to_f32(c, a, dt), y = to_f32(c, b, dt), r;
    LLVMTypeRef t2[2] = {c->tf32, c->tf32};
    LLVMValueRef xy[2] = {x, y};
    switch (op) {
    case BIN_ADD: r = LLVMBuildFAdd(B, x, y, ""); break;
    case BIN_SUB: r = LLVMBuildFSub(B, x, y, ""); break;
    case BIN_MUL: r = LLVMBuildFMul(B, x, y, ""); break;
    case BIN_DIV: r = LLVMBuildFDiv(B, x, y, ""); break;
    case BIN_MAX: r = call(c, "llvm.maxnum.f32", c->tf32, 2, t2, xy); break;
    case BIN_MIN: r = call(c, "llvm.minnum.f32", c->tf32, 2, t2, xy); break;
    case BIN_FLOORDIV: r = call1f(c, "llvm.floor.f32", LLVMBuildFDiv(B, x, y, "")); break;
    case BIN_MOD: {
        LLVMValueRef q = call1f(c, "llvm.floor.f32", LLVMBuildFDiv(B, x, y, ""));
        r = LLVMBuildFSub(B, x, LLVMBuildFMul(B, q, y, ""), "");
        break;
    }
    default: r = x; break;
    }
    return from_f32(c, r, dt);
}

static LLVMValueRef scalar_unop(Cg *c, IrUnop op, DType dt, LLVMValueRef a)
{
    LLVMBuilderRef B = c->b;
    if (op == UN_NOT) return LLVMBuildXor(B, a, LLVMConstInt(c->ti1, 1, 0), "");
    if (dt == DT_I32) {
        if (op == UN_NEG) return LLVMBuildNeg(B, a, "");
        if (op == UN_ABS) return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, i32c(c, 0), ""), LLVMBuildNeg(B, a, ""), a, "");
        return a;
    }
    LLVMValueRef x = to_f32(c, a, dt), r;
    switch (op) {
    case UN_NEG: r = LLVMBuildFNeg(B, x, ""); break;
    case UN_EXP: r = call1f(c, "llvm.nvvm.ex2.approx.f", LLVMBuildFMul(B, x, f32c(c, 1.4426950408889634), "")); break;
    case UN_EXP2: r = call1f(c, "llvm.nvvm.ex2.approx.f", x); break;
    case UN_LOG: r = LLVMBuildFMul(B, call1f(c, "llvm.nvvm.lg2.approx.f", x), f32c(c, 0.6931471805599453), ""); break;
    case UN_LOG2: r = call1f(c, "llvm.nvvm.lg2.approx.f", x); break;
    case UN_SQRT: r = call1f(c, "llvm.sqrt.f32", x); break;
    case UN_RSQRT: r = call1f(c, "llvm.nvvm.rsqrt.approx.f", x); break;
    case UN_ABS: r = call1f(c, "llvm.fabs.f32", x); break;
    default: r = x; break;
    }
    return from_f32(c, r, dt);
}

static LLVMValueRef scalar_cmp(Cg *c, IrCmp op, DType dt, LLVMValueRef a, LLVMValueRef b)
{
    if (dt == DT_I32 || dt == DT_BOOL) {
        static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
        return LLVMBuildICmp(c->b, ip[op], a, b, "");
    }
    static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
    return LLVMBuildFCmp(c->b, fp[op], to_f32(c, a, dt), to_f32(c, b, dt), "");
}

static LLVMValueRef convert(Cg *c, LLVMValueRef v, DType from, DType to)
{
    if (from == to) return v;
    if (to == DT_I32) {
        if (from == DT_BOOL) return LLVMBuildZExt(c->b, v, c->ti32, "");
        LLVMTypeRef t = c->tf32;
        LLVMValueRef x = to_f32(c, v, from);
        return call(c, "llvm.fptosi.sat.i32.f32", c->ti32, 1, &t, &x);
    }
    if (to == DT_BOOL) {
        if (from == DT_I32) return LLVMBuildICmp(c->b, LLVMIntNE, v, i32c(c, 0), "");
        return LLVMBuildFCmp(c->b, LLVMRealUNE, to_f32(c, v, from), f32c(c, 0), "");
    }
    LLVMValueRef x = to_f32(c, v, from);
    return to == DT_F32 ? x : LLVMBuildFPTrunc(c->b, x, dtype_ty(c, to), "");
}

/* The element (row, col) of a window, as i64 offsets, with its bounds test. */
static void window_elem(Cg *c, const IrOp *op, IrType t, int s, LLVMValueRef *offset, LLVMValueRef *inb)
{
    const IrParam *p = &c->f->params[op->param];
    LLVMBuilderRef B = c->b;
    LLVMValueRef e = elem_of_slot(c, s), row, col;
    elem_rc(c, t, e, &row, &col);
    LLVMValueRef d0 = c->tensor_dim0[op->param], d1 = c->tensor_dim1[op->param];
    LLVMValueRef r, cl, ok;
    if (p->rank == 1) {
        cl = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, col, c->ti64, ""), "");
        ok = LLVMBuildICmp(B, LLVMIntULT, cl, d0, "");   /* unsigned: negative is out */
        *offset = cl;
    } else {
        r = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[0]].v[0], c->ti64, ""), LLVMBuildZExt(B, row, c->ti64, ""), "");
        cl = LLVMBuildAdd(B, LLVMBuildSExt(B, c->vals[op->args[1]].v[0], c->ti64, ""), LLVMBuildZExt(B, col, c->ti64, ""), "");
        ok = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntULT, r, d0, ""), LLVMBuildICmp(B, LLVMIntULT, cl, d1, ""), "");
        *offset = LLVMBuildAdd(B, LLVMBuildMul(B, r, d1, ""), cl, "");
    }
    LLVMValueRef valid = slot_valid(c, t, s);
    *inb = valid ? LLVMBuildAnd(B, ok, valid, "") : ok;
}

static void emit_load(Cg *c, const IrOp *op)
{
    IrType t = ir_vtype(c->f, op->res[0]);
    LLVMTypeRef et = dtype_ty(c, t.dt);
    Slots out = new_slots(c, nslots(c, t));
    for (int s = 0; s < out.n; s++) {
        LLVMValueRef off, inb;
        window_elem(c, op, t, s, &off, &inb);
        LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b);
        LLVMBasicBlockRef ld = new_bb(c, "ld"), done = new_bb(c, "ldd");
        LLVMBuildCondBr(c->b, inb, ld, done);
        LLVMPositionBuilderAtEnd(c->b, ld);
        LLVMValueRef p = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMValueRef v = LLVMBuildLoad2(c->b, et, p, "");
        LLVMBuildBr(c->b, done);
        LLVMPositionBuilderAtEnd(c->b, done);
        LLVMValueRef phi = LLVMBuildPhi(c->b, et, "");
        LLVMValueRef vals[2] = {v, LLVMConstNull(et)};
        LLVMBasicBlockRef bbs[2] = {ld, from};
        LLVMAddIncoming(phi, vals, bbs, 2);
        out.v[s] = phi;
    }
    c->vals[op->res[0]] = out;
}

static void emit_store(Cg *c, const IrOp *op)
{
    const IrParam *p = &c->f->params[op->param];
    ValueId val = op->args[op->nargs - 1];
    IrType t = ir_vtype(c->f, val);
    LLVMTypeRef et = dtype_ty(c, p->dt);
    Slots *sl = &c->vals[val];
    int n = nslots(c, t);
    for (int s = 0; s < n; s++) {
        LLVMValueRef off, inb;
        window_elem(c, op, t, s, &off, &inb);
        Guard g = guard_begin(c, inb);
        LLVMValueRef ptr = LLVMBuildGEP2(c->b, et, c->tensor_ptr[op->param], &off, 1, "");
        LLVMBuildStore(c->b, t.rank == 0 ? sl->v[0] : sl->v[s], ptr);
        guard_end(c, g);
    }
}

/* Reads dst's elements from the scratch area, where src_index maps a
 * destination (row, col) to the word to read. */
typedef LLVMValueRef (*IndexMap)(Cg *c, const IrOp *op, LLVMValueRef row, LLVMValueRef col);

static void smem_gather(Cg *c, const IrOp *op, IndexMap map)
{
    IrType t = ir_vtype(c->f, op->res[0]), st = ir_vtype(c->f, op->args[0]);
    tile_to_smem(c, op->args[0], 0);
    barrier(c);
    Slots out = new_slots(c, nslots(c, t));
    for (int s = 0; s < out.n; s++) {
        LLVMValueRef row, col;
        LLVMValueRef e = elem_of_slot(c, s);
        LLVMValueRef valid = slot_valid(c, t, s);
        /* clamp invalid slots to element 0 so the read stays in bounds */
        if (valid) e = LLVMBuildSelect(c->b, valid, e, i32c(c, 0), "");
        elem_rc(c, t, e, &row, &col);
        out.v[s] = from_word(c, smem_load(c, map(c, op, row, col)), st.dt);
    }
    c->vals[op->res[0]] = out;
}

static LLVMValueRef map_broadcast(Cg *c, const IrOp *op, LLVMValueRef row, LLVMValueRef col)
{
    IrType st = ir_vtype(c->f, op->args[0]);
    int sr = ir_rows(st), sc = ir_cols(st);
    LLVMValueRef r = sr == 1 ? i32c(c, 0) : row, cl = sc == 1 ? i32c(c, 0) : col;
    return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, r, i32c(c, sc), ""), cl, "");
}

static LLVMValueRef map_transpose(Cg *c, const IrOp *op, LLVMValueRef row, LLVMValueRef col)
{
    int sc = ir_cols(ir_vtype(c->f, op->args[0]));
    return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, col, i32c(c, sc), ""), row, "");
}

/* A counted loop over k in [0, n) carrying one accumulator per slot; body
 * returns the new accumulators. */
typedef void (*LoopBody)(Cg *c, const IrOp *op, LLVMValueRef k, LLVMValueRef *acc, int n, void *ctx);

static void counted_loop(Cg *c, const IrOp *op, int trip, LLVMValueRef *acc, int nacc, LLVMTypeRef accty, LoopBody body, void *ctx)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), head = new_bb(c, "k"), done = new_bb(c, "kd");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef k = LLVMBuildPhi(c->b, c->ti32, "k");
    LLVMValueRef *phis = xmalloc(sizeof *phis * (size_t)(nacc ? nacc : 1));
    for (int i = 0; i < nacc; i++) {
        phis[i] = LLVMBuildPhi(c->b, accty, "");
        LLVMAddIncoming(phis[i], &acc[i], &pre, 1);
        acc[i] = phis[i];
    }
    LLVMValueRef zero = i32c(c, 0);
    LLVMAddIncoming(k, &zero, &pre, 1);
    body(c, op, k, acc, nacc, ctx);
    LLVMValueRef k1 = LLVMBuildAdd(c->b, k, i32c(c, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMAddIncoming(k, &k1, &latch, 1);
    for (int i = 0; i < nacc; i++) LLVMAddIncoming(phis[i], &acc[i], &latch, 1);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, k1, i32c(c, trip), ""), head, done);
    LLVMPositionBuilderAtEnd(c->b, done);
    free(phis);
}

typedef struct { LLVMValueRef *base; int stride; } ReduceCtx;

static void reduce_step(Cg *c, const IrOp *op, LLVMValueRef k, LLVMValueRef *acc, int n, void *vctx)
{
    ReduceCtx *rc = vctx;
    DType dt = ir_vtype(c->f, op->args[0]).dt;
    for (int s = 0; s < n; s++) {
        LLVMValueRef idx = LLVMBuildAdd(c->b, rc->base[s], LLVMBuildMul(c->b, k, i32c(c, rc->stride), ""), "");
        LLVMValueRef w = smem_load(c, idx);
        LLVMValueRef x = dt == DT_I32 ? w : LLVMBuildBitCast(c->b, w, c->tf32, "");
        DType adt = dt == DT_I32 ? DT_I32 : DT_F32;
        IrBinop bop = op->sub == RED_SUM ? BIN_ADD : op->sub == RED_MAX ? BIN_MAX : BIN_MIN;
        acc[s] = scalar_binop(c, bop, adt, acc[s], x);
    }
}

static void emit_reduce(Cg *c, const IrOp *op)
{
    IrType st = ir_vtype(c->f, op->args[0]), t = ir_vtype(c->f, op->res[0]);
    int R = ir_rows(st), C = ir_cols(st);
    tile_to_smem(c, op->args[0], 0);
    barrier(c);
    int n = nslots(c, t);
    Slots out = new_slots(c, n);
    LLVMValueRef *base = xmalloc(sizeof *base * (size_t)n), *acc = xmalloc(sizeof *acc * (size_t)n);
    bool isint = st.dt == DT_I32;
    for (int s = 0; s < n; s++) {
        LLVMValueRef e = elem_of_slot(c, s), valid = slot_valid(c, t, s);
        if (valid) e = LLVMBuildSelect(c->b, valid, e, i32c(c, 0), "");
        /* axis 1: output element e is row e, words e*C + k; axis 0: column e, words k*C + e */
        base[s] = op->axis == 1 ? LLVMBuildMul(c->b, e, i32c(c, C), "") : e;
        double init = op->sub == RED_SUM ? 0.0 : op->sub == RED_MAX ? -__builtin_inf() : __builtin_inf();
        acc[s] = isint ? i32c(c, op->sub == RED_SUM ? 0 : op->sub == RED_MAX ? INT32_MIN : INT32_MAX) : f32c(c, init);
    }
    ReduceCtx rc = {base, op->axis == 1 ? 1 : C};
    counted_loop(c, op, op->axis == 1 ? C : R, acc, n, isint ? c->ti32 : c->tf32, reduce_step, &rc);
    for (int s = 0; s < n; s++) out.v[s] = isint ? acc[s] : from_f32(c, acc[s], t.dt);
    c->vals[op->res[0]] = out;
    free(base);
    free(acc);
}

/* ---- dot ---- */

typedef struct { LLVMValueRef *arow, *bcol; int K, N; bool trans_b; int64_t bbase; } DotCtx;

static void dot_step(Cg *c, const IrOp *op, LLVMValueRef k, LLVMValueRef *acc, int n, void *vctx)
{
    (void)op;
    DotCtx *d = vctx;
    for (int s = 0; s < n; s++) {
        LLVMValueRef ai = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, d->arow[s], i32c(c, d->K), ""), k, "");
        LLVMValueRef bi = d->trans_b
            ? LLVMBuildAdd(c->b, LLVMBuildMul(c->b, d->bcol[s], i32c(c, d->K), ""), k, "")
            : LLVMBuildAdd(c->b, LLVMBuildMul(c->b, k, i32c(c, d->N), ""), d->bcol[s], "");
        bi = LLVMBuildAdd(c->b, bi, i32c(c, d->bbase), "");
        LLVMValueRef a = LLVMBuildBitCast(c->b, smem_load(c, ai), c->tf32, "");
        LLVMValueRef b = LLVMBuildBitCast(c->b, smem_load(c, bi), c->tf32, "");
        LLVMTypeRef t3[3] = {c->tf32, c->tf32, c->tf32};
        LLVMValueRef abc[3] = {a, b, acc[s]};
        acc[s] = call(c, "llvm.fma.f32", c->tf32, 3, t3, abc);
    }
}

static void emit_dot_fma(Cg *c, const IrOp *op)
{
    IrType at = ir_vtype(c->f, op->args[0]), t = ir_vtype(c->f, op->res[0]);
    bool tb = op->flags & DOT_TRANS_B;
    int K = at.shape[1], N = t.shape[1];
    tile_to_smem(c, op->args[0], 0);
    /* second operand after the first, without a barrier between: disjoint words */
    {
        ValueId bv = op->args[1];
        IrType bt = ir_vtype(c->f, bv);
        for (int s = 0; s < c->vals[bv].n; s++) {
            Guard g = guard_begin(c, slot_valid(c, bt, s));
            smem_store(c, LLVMBuildAdd(c->b, elem_of_slot(c, s), i32c(c, ir_numel(at)), ""), to_word(c, c->vals[bv].v[s], bt.dt));
            guard_end(c, g);
        }
    }
    barrier(c);
    int n = nslots(c, t);
    LLVMValueRef *arow = xmalloc(sizeof *arow * (size_t)n), *bcol = xmalloc(sizeof *bcol * (size_t)n);
    LLVMValueRef *acc = xmalloc(sizeof *acc * (size_t)n);
    for (int s = 0; s < n; s++) {
        LLVMValueRef e = elem_of_slot(c, s), valid = slot_valid(c, t, s);
        if (valid) e = LLVMBuildSelect(c->b, valid, e, i32c(c, 0), "");
        elem_rc(c, t, e, &arow[s], &bcol[s]);
        acc[s] = c->vals[op->args[2]].v[s];
    }
    DotCtx d = {arow, bcol, K, N, tb, ir_numel(at)};
    counted_loop(c, op, K, acc, n, c->tf32, dot_step, &d);
    Slots out = new_slots(c, n);
    for (int s = 0; s < n; s++) out.v[s] = acc[s];
    c->vals[op->res[0]] = out;
    free(arow); free(bcol); free(acc);
}

/* Tensor cores: A [M,K] and B as 16-bit halves in shared memory (rows of
 * K or N elements), ldmatrix into mma.m16n8k16 fragments, each warp taking
 * 16x8 output tiles round-robin; the f32 results go back through shared
 * memory into the round-robin layout. */
static void emit_dot_mma(Cg *c, const IrOp *op)
{
    const IrFunc *f = c->f;
    IrType at = ir_vtype(f, op->args[0]), bt = ir_vtype(f, op->args[1]), t = ir_vtype(f, op->res[0]);
    bool tb = op->flags & DOT_TRANS_B, bf = at.dt == DT_BF16;
    int M = at.shape[0], K = at.shape[1], N = t.shape[1];
    int64_t na = ir_numel(at), nb = ir_numel(bt);
    int64_t half_words = (na + nb + 1) / 2 + 8;   /* A and B as 16-bit halves */
    LLVMBuilderRef B = c->b;
    LLVMTypeRef th = dtype_ty(c, at.dt);

    barrier(c);
    /* store A then B as 16-bit elements: address in halves */
    LLVMValueRef smem16 = LLVMBuildPointerCast(B, c->smem, c->tptr3, "");
    for (int which = 0; which < 2; which++) {
        ValueId v = op->args[which];
        IrType vt = which ? bt : at;
        int64_t base = which ? na : 0;
        for (int s = 0; s < c->vals[v].n; s++) {
            Guard g = guard_begin(c, slot_valid(c, vt, s));
            LLVMValueRef idx = LLVMBuildAdd(B, elem_of_slot(c, s), i32c(c, base), "");
            LLVMValueRef p = LLVMBuildGEP2(B, th, smem16, &idx, 1, "");
            LLVMBuildStore(B, c->vals[v].v[s], p);
            guard_end(c, g);
        }
    }
    barrier(c);

    int warps = c->T / 32, tiles_m = M / 16, tiles_n = N / 8, tiles = tiles_m * tiles_n;
    LLVMValueRef lane = LLVMBuildURem(B, c->tid, i32c(c, 32), ""), warp = LLVMBuildUDiv(B, c->tid, i32c(c, 32), "");
    LLVMValueRef cbase = i32c(c, half_words);     /* f32 results, in words */
    LLVMTypeRef tv2 = bf ? c->ti32 : c->tv2f16;  /* fragments: bf16 pairs travel as i32 */
    LLVMTypeRef tvec4 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->ti32, c->ti32, c->ti32, c->ti32}, 4, 0);
    LLVMTypeRef tvec2 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->ti32, c->ti32}, 2, 0);
    LLVMTypeRef tf4 = LLVMStructTypeInContext(c->ctx, (LLVMTypeRef[]){c->tf32, c->tf32, c->tf32, c->tf32}, 4, 0);

    for (int tile0 = 0; tile0 < tiles; tile0 += warps) {
        /* this warp's tile: tile0 + warp, when in range */
        LLVMValueRef tile = LLVMBuildAdd(B, warp, i32c(c, tile0), "");
        Guard g = guard_begin(c, tile0 + warps <= tiles ? NULL : LLVMBuildICmp(B, LLVMIntULT, tile, i32c(c, tiles), ""));
        LLVMValueRef m0 = LLVMBuildMul(B, LLVMBuildUDiv(B, tile, i32c(c, tiles_n), ""), i32c(c, 16), "");
        LLVMValueRef n0 = LLVMBuildMul(B, LLVMBuildURem(B, tile, i32c(c, tiles_n), ""), i32c(c, 8), "");
        LLVMValueRef d[4] = {f32c(c, 0), f32c(c, 0), f32c(c, 0), f32c(c, 0)};
        for (int k0 = 0; k0 < K; k0 += 16) {
            /* A: ldmatrix.x4, lane l gives row m0 + l%16, column k0 + (l/16)*8 */
            LLVMValueRef ar = LLVMBuildAdd(B, m0, LLVMBuildURem(B, lane, i32c(c, 16), ""), "");
            LLVMValueRef ac = LLVMBuildAdd(B, i32c(c, k0), LLVMBuildMul(B, LLVMBuildUDiv(B, lane, i32c(c, 16), ""), i32c(c, 8), ""), "");
            LLVMValueRef aidx = LLVMBuildAdd(B, LLVMBuildMul(B, ar, i32c(c, K), ""), ac, "");
            LLVMValueRef aptr = LLVMBuildGEP2(B, th, smem16, &aidx, 1, "");
            LLVMValueRef afr = call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3", tvec4, 1, &c->tptr3, &aptr);
            LLVMValueRef bfr, bptr, bidx;
            if (tb) {
                /* B is [N,K]: rows n0 + l%8, column k0 + ((l/8)%2)*8; non-transposed */
                LLVMValueRef br = LLVMBuildAdd(B, n0, LLVMBuildURem(B, lane, i32c(c, 8), ""), "");
                LLVMValueRef bc = LLVMBuildAdd(B, i32c(c, k0), LLVMBuildMul(B, LLVMBuildURem(B, LLVMBuildUDiv(B, lane, i32c(c, 8), ""), i32c(c, 2), ""), i32c(c, 8), ""), "");
                bidx = LLVMBuildAdd(B, LLVMBuildAdd(B, LLVMBuildMul(B, br, i32c(c, K), ""), bc, ""), i32c(c, na), "");
                bptr = LLVMBuildGEP2(B, th, smem16, &bidx, 1, "");
                bfr = call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3", tvec2, 1, &c->tptr3, &bptr);
            } else {
                /* B is [K,N]: rows k0 + l%16, column n0; transposed on load */
                LLVMValueRef br = LLVMBuildAdd(B, i32c(c, k0), LLVMBuildURem(B, lane, i32c(c, 16), ""), "");
                bidx = LLVMBuildAdd(B, LLVMBuildAdd(B, LLVMBuildMul(B, br, i32c(c, N), ""), n0, ""), i32c(c, na), "");
                bptr = LLVMBuildGEP2(B, th, smem16, &bidx, 1, "");
                bfr = call(c, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3", tvec2, 1, &c->tptr3, &bptr);
            }
            LLVMValueRef args[10];
            LLVMTypeRef targs[10];
            for (int i = 0; i < 4; i++) {
                LLVMValueRef w = LLVMBuildExtractValue(B, afr, (unsigned)i, "");
                args[i] = bf ? w : LLVMBuildBitCast(B, w, tv2, "");
                targs[i] = tv2;
            }
            for (int i = 0; i < 2; i++) {
                LLVMValueRef w = LLVMBuildExtractValue(B, bfr, (unsigned)i, "");
                args[4 + i] = bf ? w : LLVMBuildBitCast(B, w, tv2, "");
                targs[4 + i] = tv2;
            }
            for (int i = 0; i < 4; i++) { args[6 + i] = d[i]; targs[6 + i] = c->tf32; }
            LLVMValueRef r = call(c, bf ? "llvm.nvvm.mma.m16n8k16.row.col.bf16" : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                                  tf4, 10, targs, args);
            for (int i = 0; i < 4; i++) d[i] = LLVMBuildExtractValue(B, r, (unsigned)i, "");
        }
        /* lane l holds rows g = l/4 and g+8, columns 2*(l%4) + {0,1} */
        LLVMValueRef gr = LLVMBuildAdd(B, m0, LLVMBuildUDiv(B, lane, i32c(c, 4), ""), "");
        LLVMValueRef gc = LLVMBuildAdd(B, n0, LLVMBuildMul(B, LLVMBuildURem(B, lane, i32c(c, 4), ""), i32c(c, 2), ""), "");
        for (int i = 0; i < 4; i++) {
            LLVMValueRef r = i < 2 ? gr : LLVMBuildAdd(B, gr, i32c(c, 8), "");
            LLVMValueRef cl = LLVMBuildAdd(B, gc, i32c(c, i & 1), "");
            LLVMValueRef idx = LLVMBuildAdd(B, LLVMBuildAdd(B, LLVMBuildMul(B, r, i32c(c, N), ""), cl, ""), cbase, "");
            smem_store(c, idx, LLVMBuildBitCast(B, d[i], c->ti32, ""));
        }
        guard_end(c, g);
    }
    barrier(c);
    int n = nslots(c, t);
    Slots out = new_slots(c, n);
    for (int s = 0; s < n; s++) {
        LLVMValueRef e = elem_of_slot(c, s), valid = slot_valid(c, t, s);
        if (valid) e = LLVMBuildSelect(B, valid, e, i32c(c, 0), "");
        LLVMValueRef w = smem_load(c, LLVMBuildAdd(B, e, cbase, ""));
        out.v[s] = LLVMBuildFAdd(B, c->vals[op->args[2]].v[s], LLVMBuildBitCast(B, w, c->tf32, ""), "");
    }
    c->vals[op->res[0]] = out;
}

/* ---- blocks and control flow ---- */

static void emit_block(Cg *c, const IrBlock *blk, Slots *yielded);

static LLVMTypeRef value_ty(Cg *c, ValueId v) { return dtype_ty(c, ir_vtype(c->f, v).dt); }

static void emit_for(Cg *c, const IrOp *op)
{
    const IrBlock *body = op->body;
    int ncar = op->nargs - 2;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), head = new_bb(c, "for"), bodybb = new_bb(c, "body"), done = new_bb(c, "endfor");
    LLVMValueRef lb = c->vals[op->args[0]].v[0], ub = c->vals[op->args[1]].v[0];
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    LLVMValueRef iv = LLVMBuildPhi(c->b, c->ti32, "iv");
    LLVMAddIncoming(iv, &lb, &pre, 1);
    c->vals[body->args[0]] = new_slots(c, 1);
    c->vals[body->args[0]].v[0] = iv;
    for (int i = 0; i < ncar; i++) {
        Slots *init = &c->vals[op->args[2 + i]];
        Slots ph = new_slots(c, init->n);
        for (int s = 0; s < init->n; s++) {
            ph.v[s] = LLVMBuildPhi(c->b, value_ty(c, op->args[2 + i]), "");
            LLVMAddIncoming(ph.v[s], &init->v[s], &pre, 1);
        }
        c->vals[body->args[1 + i]] = ph;
        /* the loop's results are the carried values when the test fails */
        Slots res = new_slots(c, init->n);
        memcpy(res.v, ph.v, sizeof *res.v * (size_t)init->n);
        c->vals[op->res[i]] = res;
    }
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, iv, ub, ""), bodybb, done);
    LLVMPositionBuilderAtEnd(c->b, bodybb);
    Slots *y = xcalloc((size_t)(ncar ? ncar : 1), sizeof *y);
    emit_block(c, body, y);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMValueRef next = LLVMBuildAdd(c->b, iv, i32c(c, op->ival), "");
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int i = 0; i < ncar; i++)
        for (int s = 0; s < y[i].n; s++)
            LLVMAddIncoming(c->vals[body->args[1 + i]].v[s], &y[i].v[s], &latch, 1);
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, done);
    free(y);
}

static void emit_if(Cg *c, const IrOp *op)
{
    LLVMBasicBlockRef thenbb = new_bb(c, "then"), elsebb = new_bb(c, "else"), done = new_bb(c, "endif");
    LLVMBuildCondBr(c->b, c->vals[op->args[0]].v[0], thenbb, elsebb);
    int nres = op->nres;
    Slots *yt = xcalloc((size_t)(nres ? nres : 1), sizeof *yt), *ye = xcalloc((size_t)(nres ? nres : 1), sizeof *ye);
    LLVMPositionBuilderAtEnd(c->b, thenbb);
    emit_block(c, op->body, yt);
    LLVMBasicBlockRef tend = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, elsebb);
    if (op->els) emit_block(c, op->els, ye);
    LLVMBasicBlockRef eend = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, done);
    for (int i = 0; i < nres; i++) {
        Slots r = new_slots(c, yt[i].n);
        for (int s = 0; s < r.n; s++) {
            r.v[s] = LLVMBuildPhi(c->b, value_ty(c, op->res[i]), "");
            LLVMValueRef vs[2] = {yt[i].v[s], ye[i].v[s]};
            LLVMBasicBlockRef bs[2] = {tend, eend};
            LLVMAddIncoming(r.v[s], vs, bs, 2);
        }
        c->vals[op->res[i]] = r;
    }
    free(yt);
    free(ye);
}

static void emit_elementwise(Cg *c, const IrOp *op)
{
    IrType t = ir_vtype(c->f, op->res[0]);
    int n = nslots(c, t);
    Slots out = new_slots(c, n);
    DType dt = ir_vtype(c->f, op->args[0]).dt;
    for (int s = 0; s < n; s++) {
        LLVMValueRef a = c->vals[op->args[0]].v[s];
        switch (op->kind) {
        case OP_UNARY: out.v[s] = scalar_unop(c, op->sub, dt, a); break;
        case OP_BINARY: out.v[s] = scalar_binop(c, op->sub, dt, a, c->vals[op->args[1]].v[s]); break;
        case OP_CMP: out.v[s] = scalar_cmp(c, op->sub, dt, a, c->vals[op->args[1]].v[s]); break;
        case OP_SELECT: out.v[s] = LLVMBuildSelect(c->b, a, c->vals[op->args[1]].v[s], c->vals[op->args[2]].v[s], ""); break;
        case OP_CONVERT: out.v[s] = convert(c, a, dt, t.dt); break;
        default: break;
        }
    }
    c->vals[op->res[0]] = out;
}

static void emit_op(Cg *c, const IrOp *op)
{
    IrType t = op->nres ? ir_vtype(c->f, op->res[0]) : ir_scalar(DT_VOID);
    Slots one;
    switch (op->kind) {
    case OP_CONST:
        one = new_slots(c, 1);
        if (t.dt == DT_BOOL) one.v[0] = LLVMConstInt(c->ti1, op->ival != 0, 0);
        else if (t.dt == DT_I32) one.v[0] = i32c(c, op->ival);
        else one.v[0] = LLVMConstReal(dtype_ty(c, t.dt), op->fval);
        c->vals[op->res[0]] = one;
        break;
    case OP_PARAM:
        one = new_slots(c, 1);
        one.v[0] = c->scalar[op->param];
        c->vals[op->res[0]] = one;
        break;
    case OP_DIM:
        one = new_slots(c, 1);
        one.v[0] = LLVMBuildTrunc(c->b, op->axis == 0 ? c->tensor_dim0[op->param] : c->tensor_dim1[op->param], c->ti32, "");
        c->vals[op->res[0]] = one;
        break;
    case OP_BLOCK_ID: case OP_GRID_DIM:
        one = new_slots(c, 1);
        one.v[0] = sreg(c, op->kind == OP_BLOCK_ID ? "ctaid" : "nctaid", op->axis);
        c->vals[op->res[0]] = one;
        break;
    case OP_IOTA: {
        Slots out = new_slots(c, nslots(c, t));
        for (int s = 0; s < out.n; s++) {
            LLVMValueRef row, col;
            elem_rc(c, t, elem_of_slot(c, s), &row, &col);
            out.v[s] = t.rank == 2 && op->axis == 0 ? row : col;
        }
        c->vals[op->res[0]] = out;
        break;
    }
    case OP_SPLAT: {
        Slots out = new_slots(c, nslots(c, t));
        for (int s = 0; s < out.n; s++) out.v[s] = c->vals[op->args[0]].v[0];
        c->vals[op->res[0]] = out;
        break;
    }
    case OP_BROADCAST: smem_gather(c, op, map_broadcast); break;
    case OP_TRANSPOSE: smem_gather(c, op, map_transpose); break;
    case OP_UNARY: case OP_BINARY: case OP_CMP: case OP_SELECT: case OP_CONVERT:
        emit_elementwise(c, op);
        break;
    case OP_REDUCE: emit_reduce(c, op); break;
    case OP_DOT:
        if (dot_on_tensorcores(c->f, op)) emit_dot_mma(c, op);
        else emit_dot_fma(c, op);
        break;
    case OP_LOAD: emit_load(c, op); break;
    case OP_STORE: emit_store(c, op); break;
    case OP_FOR: emit_for(c, op); break;
    case OP_IF: emit_if(c, op); break;
    case OP_RETURN:
        LLVMBuildBr(c->b, c->exit_bb);
        /* anything after a return is dead: give it a block of its own */
        LLVMPositionBuilderAtEnd(c->b, new_bb(c, "dead"));
        break;
    case OP_YIELD: break;
    default: cg_fail(c, op, "no lowering for this op"); break;
    }
}

static void emit_block(Cg *c, const IrBlock *blk, Slots *yielded)
{
    for (int i = 0; i < blk->nops && !c->failed; i++) {
        const IrOp *op = blk->ops[i];
        if (op->kind == OP_YIELD && yielded)
            for (int j = 0; j < op->nargs; j++) yielded[j] = c->vals[op->args[j]];
        emit_op(c, op);
    }
}

/* ---- functions and the module ---- */

static void emit_func(Cg *c, const IrFunc *f)
{
    c->f = f;
    c->T = f->threads;
    c->failed = false;
    int np = 0;
    LLVMTypeRef pts[256];
    for (int i = 0; i < f->nparams && np < 250; i++) {
        if (f->params[i].is_tensor) { pts[np++] = c->tptr1; pts[np++] = c->ti64; pts[np++] = c->ti64; }
        else pts[np++] = dtype_ty(c, f->params[i].dt);
    }
    c->fn = LLVMAddFunction(c->mod, f->name, LLVMFunctionType(c->tvoid, pts, (unsigned)np, 0));
    LLVMSetFunctionCallConv(c->fn, 71 /* PTX_Kernel */);
    c->tensor_ptr = xcalloc((size_t)f->nparams + 1, sizeof(LLVMValueRef));
    c->tensor_dim0 = xcalloc((size_t)f->nparams + 1, sizeof(LLVMValueRef));
    c->tensor_dim1 = xcalloc((size_t)f->nparams + 1, sizeof(LLVMValueRef));
    c->scalar = xcalloc((size_t)f->nparams + 1, sizeof(LLVMValueRef));
    for (int i = 0, k = 0; i < f->nparams; i++) {
        if (f->params[i].is_tensor) {
            c->tensor_ptr[i] = LLVMGetParam(c->fn, (unsigned)k++);
            c->tensor_dim0[i] = LLVMGetParam(c->fn, (unsigned)k++);
            c->tensor_dim1[i] = LLVMGetParam(c->fn, (unsigned)k++);
            LLVMSetValueName2(c->tensor_ptr[i], f->params[i].name, strlen(f->params[i].name));
        } else {
            c->scalar[i] = LLVMGetParam(c->fn, (unsigned)k++);
            LLVMSetValueName2(c->scalar[i], f->params[i].name, strlen(f->params[i].name));
        }
    }
    /* .maxntid tells ptxas the block size, so it can spend registers */
    LLVMMetadataRef ann[3] = {LLVMValueAsMetadata(c->fn), LLVMMDStringInContext2(c->ctx, "maxntidx", 8),
                              LLVMValueAsMetadata(i32c(c, c->T))};
    LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations", LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, ann, 3)));

    c->smem_words = block_smem_words(f, f->body);
    c->smem = NULL;
    if (c->smem_words) {
        char name[300];
        snprintf(name, sizeof name, "%s_scratch", f->name);
        LLVMTypeRef at = LLVMArrayType2(c->ti32, (uint64_t)c->smem_words);
        c->smem = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);
        LLVMSetInitializer(c->smem, LLVMGetUndef(at));
        LLVMSetLinkage(c->smem, LLVMInternalLinkage);
        LLVMSetAlignment(c->smem, 16);
    }
    LLVMBasicBlockRef entry = new_bb(c, "entry");
    c->exit_bb = new_bb(c, "exit");
    LLVMPositionBuilderAtEnd(c->b, c->exit_bb);
    LLVMBuildRetVoid(c->b);
    LLVMPositionBuilderAtEnd(c->b, entry);
    c->tid = call0(c, "llvm.nvvm.read.ptx.sreg.tid.x", c->ti32);
    c->vals = xcalloc((size_t)f->nvalues, sizeof *c->vals);
    emit_block(c, f->body, NULL);
    /* the body ends with a return, so the insert point is a dead block */
    LLVMBuildUnreachable(c->b);
    for (int i = 0; i < f->nvalues; i++) free(c->vals[i].v);
    free(c->vals);
    free(c->tensor_ptr); free(c->tensor_dim0); free(c->tensor_dim1); free(c->scalar);
}

static int init_targets(void)
{
    static int done;
    if (!done) {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        done = 1;
    }
    return 0;
}

int codegen_emit(const IrModule *m, const CodegenOptions *o, CgEmit what, char **out, char *err, size_t errlen)
{
    const char *triple = "nvptx64-nvidia-cuda";
    const char *arch = o && o->arch ? o->arch : "sm_90";
    int opt = o ? o->opt_level : 3;
    *out = NULL;
    init_targets();
    Cg c = {0};
    c.err = err;
    c.errlen = errlen;
    c.ctx = LLVMContextCreate();
    c.mod = LLVMModuleCreateWithNameInContext("phobos", c.ctx);
    LLVMSetTarget(c.mod, triple);
    LLVMSetDataLayout(c.mod, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
    c.b = LLVMCreateBuilderInContext(c.ctx);
    c.tvoid = LLVMVoidTypeInContext(c.ctx);
    c.ti1 = LLVMInt1TypeInContext(c.ctx);
    c.ti16 = LLVMInt16TypeInContext(c.ctx);
    c.ti32 = LLVMInt32TypeInContext(c.ctx);
    c.ti64 = LLVMInt64TypeInContext(c.ctx);
    c.tf16 = LLVMHalfTypeInContext(c.ctx);
    c.tbf16 = LLVMBFloatTypeInContext(c.ctx);
    c.tf32 = LLVMFloatTypeInContext(c.ctx);
    c.tptr1 = LLVMPointerTypeInContext(c.ctx, 1);
    c.tptr3 = LLVMPointerTypeInContext(c.ctx, 3);
    c.tv2f16 = LLVMVectorType(c.tf16, 2);
    c.tv2bf16 = LLVMVectorType(c.tbf16, 2);
    int status = 0;
    for (int i = 0; i < m->nfuncs && !c.failed; i++) emit_func(&c, m->funcs[i]);
    char *msg = NULL;
    if (c.failed) status = 1;
    else if (LLVMVerifyModule(c.mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "internal error: LLVM rejects the lowered module: %.400s", msg ? msg : "");
        status = 1;
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    LLVMTargetRef target = NULL;
    LLVMTargetMachineRef tm = NULL;
    if (!status && LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, errlen, "no NVPTX target in this LLVM: %s", msg ? msg : "");
        status = 1;
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    if (!status) {
        tm = LLVMCreateTargetMachine(target, triple, arch, "+ptx80", opt ? LLVMCodeGenLevelAggressive : LLVMCodeGenLevelNone,
                                     LLVMRelocDefault, LLVMCodeModelDefault);
        if (opt) {
            LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
            LLVMErrorRef e = LLVMRunPasses(c.mod, "default<O3>", tm, po);
            LLVMDisposePassBuilderOptions(po);
            if (e) {
                char *em = LLVMGetErrorMessage(e);
                snprintf(err, errlen, "LLVM optimization failed: %s", em);
                LLVMDisposeErrorMessage(em);
                status = 1;
            }
        }
    }
    if (!status) {
        if (what == CG_EMIT_LLVM) {
            char *s = LLVMPrintModuleToString(c.mod);
            *out = xstrdup(s);
            LLVMDisposeMessage(s);
        } else {
            LLVMMemoryBufferRef buf = NULL;
            if (LLVMTargetMachineEmitToMemoryBuffer(tm, c.mod, LLVMAssemblyFile, &msg, &buf)) {
                snprintf(err, errlen, "PTX emission failed: %s", msg ? msg : "");
                status = 1;
            } else {
                *out = xstrndup(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
                LLVMDisposeMemoryBuffer(buf);
            }
            LLVMDisposeMessage(msg);
        }
    }
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMDisposeBuilder(c.b);
    LLVMDisposeModule(c.mod);
    LLVMContextDispose(c.ctx);
    return status;
}
