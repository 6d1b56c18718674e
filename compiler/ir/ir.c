/* ir.c: building tile IR: types, values, blocks, ops, and the names the
 * printer and the messages use. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

IrType ir_scalar(DType dt) { return (IrType){dt, 0, {1, 1}}; }
IrType ir_tile1(DType dt, int n) { return (IrType){dt, 1, {n, 1}}; }
IrType ir_tile2(DType dt, int rows, int cols) { return (IrType){dt, 2, {rows, cols}}; }

int ir_rows(IrType t) { return t.rank == 2 ? t.shape[0] : 1; }
int ir_cols(IrType t) { return t.rank == 2 ? t.shape[1] : t.rank == 1 ? t.shape[0] : 1; }
int64_t ir_numel(IrType t) { return (int64_t)ir_rows(t) * ir_cols(t); }

bool ir_type_eq(IrType a, IrType b)
{
    if (a.dt != b.dt || a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; i++)
        if (a.shape[i] != b.shape[i]) return false;
    return true;
}

bool ir_is_float(DType dt) { return dt == DT_F16 || dt == DT_BF16 || dt == DT_F32 || ir_is_f8(dt); }

bool ir_is_f8(DType dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }

bool ir_is_int(DType dt) { return dt == DT_I32 || dt == DT_I64 || dt == DT_I8 || dt == DT_U8; }

bool ir_is_storage(DType dt) { return dt == DT_I8 || dt == DT_U8 || ir_is_f8(dt); }

int ir_dtype_bytes(DType dt)
{
    if (dt == DT_I8 || dt == DT_U8 || ir_is_f8(dt)) return 1;
    if (dt == DT_I64) return 8;
    return dt == DT_F16 || dt == DT_BF16 ? 2 : 4;
}

static const char *const dtype_names[DT_COUNT] = {"void", "bool", "i32", "f16", "bf16", "f32", "i8", "u8", "f8e4m3", "f8e5m2", "i64"};

const char *ir_dtype_name(DType dt)
{
    return (unsigned)dt < DT_COUNT ? dtype_names[dt] : "?";
}

DType ir_dtype_named(const char *name, size_t len)
{
    for (int dt = DT_BOOL; dt < DT_COUNT; dt++)
        if (strlen(dtype_names[dt]) == len && !memcmp(dtype_names[dt], name, len)) return (DType)dt;
    return DT_VOID;
}

void ir_type_str(IrType t, char *buf, size_t n)
{
    if (t.rank == 0) snprintf(buf, n, "%s", ir_dtype_name(t.dt));
    else if (t.rank == 1) snprintf(buf, n, "%s[%d]", ir_dtype_name(t.dt), t.shape[0]);
    else snprintf(buf, n, "%s[%d, %d]", ir_dtype_name(t.dt), t.shape[0], t.shape[1]);
}

IrFunc *ir_func_new(const char *kernel)
{
    Arena *a = arena_new();
    IrFunc *f = arena_alloc(a, sizeof *f);
    f->arena = a;
    f->kernel = arena_strdup(a, kernel);
    f->name = f->kernel;
    f->threads = 128;
    f->capvalues = 64;
    f->values = xcalloc((size_t)f->capvalues, sizeof *f->values);
    f->nvalues = 1;
    f->body = ir_block_new(f);
    return f;
}

void ir_func_free(IrFunc *f)
{
    if (!f) return;
    free(f->values);
    arena_free(f->arena);
}

IrModule *ir_module_new(void) { return xcalloc(1, sizeof(IrModule)); }

void ir_module_add(IrModule *m, IrFunc *f)
{
    if (m->nfuncs == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 8;
        m->funcs = xrealloc(m->funcs, sizeof *m->funcs * (size_t)m->cap);
    }
    m->funcs[m->nfuncs++] = f;
}

void ir_module_free(IrModule *m)
{
    if (!m) return;
    for (int i = 0; i < m->nfuncs; i++) ir_func_free(m->funcs[i]);
    free(m->funcs);
    free(m);
}

/* Blocks, ops and their arrays live in the function's arena. */
IrBlock *ir_block_new(IrFunc *f)
{
    return arena_alloc(f->arena, sizeof(IrBlock));
}

ValueId ir_value_new(IrFunc *f, IrType t, const char *name)
{
    if (f->nvalues == f->capvalues) {
        f->capvalues *= 2;
        f->values = xrealloc(f->values, sizeof *f->values * (size_t)f->capvalues);
    }
    ValueId v = f->nvalues++;
    f->values[v] = (IrValue){t, NULL, name ? arena_strdup(f->arena, name) : NULL};
    return v;
}

ValueId ir_block_arg(IrFunc *f, IrBlock *b, IrType t, const char *name)
{
    ValueId v = ir_value_new(f, t, name);
    ValueId *args = arena_alloc(f->arena, sizeof *args * (size_t)(b->nargs + 1));
    if (b->nargs) memcpy(args, b->args, sizeof *args * (size_t)b->nargs);
    args[b->nargs++] = v;
    b->args = args;
    return v;
}

static void block_append(IrFunc *f, IrBlock *b, IrOp *op)
{
    if (b->nops == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        IrOp **ops = arena_alloc(f->arena, sizeof *ops * (size_t)cap);
        if (b->nops) memcpy(ops, b->ops, sizeof *ops * (size_t)b->nops);
        b->ops = ops;
        b->cap = cap;
    }
    b->ops[b->nops++] = op;
}

IrOp *ir_emit(IrFunc *f, IrBlock *b, IrOpKind kind, int nargs, const ValueId *args,
              int nres, const IrType *restypes)
{
    IrOp *op = arena_alloc(f->arena, sizeof *op);
    op->kind = kind;
    op->nargs = nargs;
    if (nargs) {
        op->args = arena_alloc(f->arena, sizeof *op->args * (size_t)nargs);
        memcpy(op->args, args, sizeof *op->args * (size_t)nargs);
    }
    op->nres = nres;
    if (nres) {
        op->res = arena_alloc(f->arena, sizeof *op->res * (size_t)nres);
        for (int i = 0; i < nres; i++) {
            op->res[i] = ir_value_new(f, restypes[i], NULL);
            f->values[op->res[i]].def = op;
        }
    }
    if (b) block_append(f, b, op);
    return op;
}

const char *const ir_unop_names[UN_COUNT] = {"neg", "not", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs",
                                              "tanh", "erf", "sigmoid"};
const char *const ir_binop_names[BIN_COUNT] = {"add", "sub", "mul", "div", "floordiv", "mod", "max", "min", "and", "or", "pow"};
const char *const ir_cmp_names[CMP_COUNT] = {"lt", "le", "gt", "ge", "eq", "ne"};
const char *const ir_reduce_names[RED_COUNT] = {"reduce_sum", "reduce_max", "reduce_min"};

const IrOpInfo ir_ops[OP_COUNT] = {
#define IR_OP(kind, name, nargs, nres, props) [OP_##kind] = {name, nargs, nres, props},
#include "ops.h"
#undef IR_OP
};

const char *ir_op_name(const IrOp *op)
{
    switch (op->kind) {
    case OP_UNARY: return (unsigned)op->sub < UN_COUNT ? ir_unop_names[op->sub] : "?";
    case OP_BINARY: return (unsigned)op->sub < BIN_COUNT ? ir_binop_names[op->sub] : "?";
    case OP_CMP: return (unsigned)op->sub < CMP_COUNT ? ir_cmp_names[op->sub] : "?";
    case OP_REDUCE: return (unsigned)op->sub < RED_COUNT ? ir_reduce_names[op->sub] : "?";
    case OP_DOT: return op->flags & DOT_TRANS_B ? "dot_t" : "dot";
    default: return (unsigned)op->kind < OP_COUNT && ir_ops[op->kind].name ? ir_ops[op->kind].name : "?";
    }
}
