/* ir.h: the tile IR, the one header of the compiler layer.
 *
 * A function is one (kernel, config) pair: every meta-parameter is a known
 * integer, so every tile shape is a compile-time constant. Values are SSA,
 * typed dtype x shape (rank 0 is a scalar, one value for the whole block).
 * Control flow is structured: OP_FOR carries loop values through block
 * arguments and OP_YIELD (like MLIR's scf.for), OP_IF yields its results
 * from both branches, OP_WHILE runs a condition region then a body region
 * over its carried values (MLIR's scf.while, the body's arguments being
 * the carried values themselves). docs/ir.md describes every op and the text form. */
#ifndef PHC_IR_H
#define PHC_IR_H

#include <stdio.h>
#include "base/util.h"

/* i64 computes like i32, in 64 bits (appended last, so the others keep
 * their numbers).
 * i8, u8 and the fp8 formats f8e4m3, f8e5m2 are storage types: tensors,
 * loads, stores, conversions, selects, shape ops and dot operands take
 * them; arithmetic does not (the front end widens them first: the 8-bit
 * integers to i32, as C promotes its small integers, fp8 to f32). */
typedef enum { DT_VOID, DT_BOOL, DT_I32, DT_F16, DT_BF16, DT_F32, DT_I8, DT_U8, DT_F8E4M3, DT_F8E5M2, DT_I64, DT_COUNT } DType;

/* rank 0: scalar; rank 1: shape[0] elements; rank 2: shape[0] x shape[1].
 * Broadcasting aligns dims to the right, as NumPy does, so a rank-1 tile
 * of n behaves as [1, n]; ir_rows/ir_cols give that 2-D view. */
typedef struct { DType dt; int rank; int shape[2]; } IrType;

/* A source position, 1-based; col counts bytes. */
typedef struct { int line, col; } Loc;

typedef int ValueId; /* index into IrFunc.values; 0 is "no value" */

/* The ops, numbered in the order of ops.h, which says what each does. */
typedef enum {
#define IR_OP(kind, name, nargs, nres, props) OP_##kind,
#include "ops.h"
#undef IR_OP
    OP_COUNT
} IrOpKind;

/* What an op is like, for the passes that treat ops alike (ops.h's
 * properties column). */
enum {
    IR_OP_PURE = 1 << 0,          /* its results follow from its operands and the launch: it reads no
                                   * memory and has no effect (it may still trap: an i32 // 0) */
    IR_OP_ELEMENTWISE = 1 << 1,   /* works element by element on operands of its result's shape */
    IR_OP_BUILT_AT_USE = 1 << 2,  /* a tile made from a scalar, an index or another tile's elements: the
                                   * code generator builds it where it is used, in the user's layout (layout.c) */
    IR_OP_WINDOW = 1 << 3,        /* reads or writes a window of tensor parameter `param` */
    IR_OP_WRITES = 1 << 4,        /* writes its tensor */
    IR_OP_EFFECT = 1 << 5,        /* matters beyond its results (writes, orders, ends a region) */
    IR_OP_REGIONS = 1 << 6,       /* has regions: body, and els for an if */
};

/* One row of ops.h: see there. */
typedef struct {
    const char *name;
    int nargs, nres;
    unsigned props;
} IrOpInfo;
extern const IrOpInfo ir_ops[OP_COUNT];

/* Whether ops of kind k have every property in props (IR_OP_*). */
static inline bool ir_op_is(int kind, unsigned props)
{
    return (unsigned)kind < OP_COUNT && (ir_ops[kind].props & props) == props;
}

typedef enum { UN_NEG, UN_NOT, UN_EXP, UN_EXP2, UN_LOG, UN_LOG2, UN_SQRT, UN_RSQRT, UN_ABS,
               UN_TANH, UN_ERF, UN_SIGMOID, UN_COUNT } IrUnop;
/* DIV and POW on floats; FLOORDIV and MOD floor like Python (on i32 and
 * floats); AND/OR on bools. */
typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_FLOORDIV, BIN_MOD, BIN_MAX, BIN_MIN, BIN_AND, BIN_OR, BIN_POW, BIN_COUNT } IrBinop;
typedef enum { CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE, CMP_COUNT } IrCmp;
typedef enum { RED_SUM, RED_MAX, RED_MIN, RED_COUNT } IrReduce;

/* DOT_ASYNC: a target's pass found the dot may run on past its issue,
 * the loop carrying its result waiting for it at its end (the code
 * generator's business; the dot means what it always does).
 * WAIT_SLOTS_RELEASED (OP_WAIT_ASYNC): the same pass found the slots the
 * copies after this wait refill are released by an async dot's barrier,
 * so the wait needs a barrier only to publish copies the threads made
 * themselves (the code generator asks its copy engine).
 * WAIT_AFTER_WORK (OP_WAIT_DOTS): the ops before this wait in its block
 * are meant to run while its dots do (wgmma_overlap's softmax beside
 * P V); the code generator keeps the wait behind them.
 * WAIT_ONCE (OP_WAIT_ASYNC): the wait for a tile copied once, outside
 * loops (async.c's one-stage rings): its pending count counts every
 * ring's groups, and where the groups of each set of rings committed
 * together are waited for apart (a warp-specialized kernel's channels),
 * it waits for all of its own rings' groups.
 * DOT_ISSUED: the dot is issued and left running; only an OP_WAIT_DOTS
 * reads its result, and the operands it reads (its ring slot, its A in
 * registers) stay untouched until that wait.
 * DOT_TURN_KEPT, DOT_IN_TURN: where warpgroups take turns at their dots
 * (IrFunc.turns), the dot after a DOT_TURN_KEPT one issues in its turn
 * (DOT_IN_TURN: no wait for one of its own), so a pair of dots goes to
 * the tensor cores together. */
enum { DOT_TRANS_B = 1, DOT_ASYNC = 2, DOT_ISSUED = 4, DOT_TURN_KEPT = 8, DOT_IN_TURN = 16 };
enum { WAIT_SLOTS_RELEASED = 1, WAIT_AFTER_WORK = 2, WAIT_ONCE = 4 };
/* STORE_MASKED (OP_STORE): the operand before the value is a bool tile of
 * the value's type and shape; an element is written only where it is true
 * (and, as always, only inside the tensor). */
enum { STORE_MASKED = 1 };
/* ADD_BY_PRODUCER (OP_ATOMIC_ADD): a target's warp-specialization pass
 * found the producer can issue this add (its window's starts are values
 * the producer computes): the consumers stage the tile and the producer
 * adds it (the code generator's business; the add means what it always
 * does). */
enum { ADD_BY_PRODUCER = 2 };

/* Limits every layer shares. IR_MAX_RINGS: the verifier refuses a ring
 * number (OP_COPY_ASYNC's axis) at or past it, the async pass makes no
 * more rings, the code generator sizes its tables by it. IR_MAX_DEPTH:
 * the verifier refuses regions nested deeper, so passes that recurse
 * over verified IR stop there too. */
enum { IR_MAX_RINGS = 64, IR_MAX_DEPTH = 256 };
/* The most axes a tensor parameter has. Ranks 1 and 2 are row-major and
 * contiguous; a tensor of rank 3 or 4 has strides, which the kernel takes
 * with its dims (abi.h), so a view of another tensor is passed as it is. */
enum { IR_MAX_RANK = 4 };

typedef struct IrBlock IrBlock;

typedef struct IrOp {
    IrOpKind kind;
    int sub;               /* IrUnop, IrBinop, IrCmp or IrReduce */
    int axis;              /* OP_IOTA, OP_REDUCE, OP_ARGMAX, OP_ARGMIN, OP_CUMSUM, OP_DIM, OP_BLOCK_ID, OP_GRID_DIM */
    int param;             /* OP_PARAM, OP_DIM and the memory ops (OP_LOAD ... OP_SCATTER_ADD): index into IrFunc.params */
    int flags;             /* OP_DOT: DOT_TRANS_B, DOT_ASYNC, DOT_ISSUED; OP_WAIT_ASYNC: WAIT_SLOTS_RELEASED, WAIT_ONCE; OP_WAIT_DOTS: WAIT_AFTER_WORK; OP_STORE: STORE_MASKED; OP_ATOMIC_ADD: ADD_BY_PRODUCER */
    int window_axes;       /* OP_LOAD, OP_STORE, OP_ATOMIC_ADD of a tensor of rank 3 or 4: the bitmask of the
                            * one or two tensor axes the tile's axes run along, in order (the others are
                            * indexed by their start alone); 0 for ranks 1 and 2 (the tile has every axis) */
    int64_t ival;          /* OP_CONST (i32, bool), OP_FOR (step), the waits (pending groups) */
    double fval;           /* OP_CONST (floats) */
    int nargs;  ValueId *args;
    int nres;   ValueId *res;
    IrBlock *body, *els;   /* OP_FOR: body; OP_IF: then (body), else (els); OP_WHILE: condition (body), loop body (els) */
    Loc loc;               /* source statement, for messages */
    const char *str;       /* OP_DEVICE_PRINT: the prefix; OP_DEVICE_ASSERT: the message (arena strings) */
    const char *file;      /* OP_DEVICE_ASSERT: the source file, for its message */
} IrOp;

struct IrBlock {
    int nargs; ValueId *args;  /* OP_FOR body: induction variable then carried values */
    int nops, cap; IrOp **ops;
};

typedef struct {
    IrType type;
    IrOp *def;          /* defining op, or NULL for a block argument */
    const char *name;   /* source name, for the printer; may be NULL */
} IrValue;

/* What the runtime's autotuner does to a tensor before each run it times
 * and before the launch it keeps (@ph.autotune_restore, @ph.autotune_zero):
 * nothing, copy back the contents it had, or fill it with zeros. The
 * kernel's code, and the interpreter, ignore it. */
typedef enum { IR_TUNE_KEEP, IR_TUNE_RESTORE, IR_TUNE_ZERO } IrTuneReset;

/* A kernel parameter. A tensor's dims are names (dim_name[i] != NULL) or
 * literals (dim_value[i]). */
typedef struct {
    const char *name;
    bool is_tensor;
    DType dt;
    int rank;                   /* tensors: 1 to IR_MAX_RANK */
    const char *dim_name[4];
    int64_t dim_value[4];
    IrTuneReset tune_reset;     /* tensors only */
    bool tune_key;              /* integer scalars only: its value is part of the autotuner's key (@ph.autotune_key) */
} IrParam;

typedef struct { const char *name; int64_t value; } IrMeta;
/* @ph.aligned(DIM="NAME"): dim DIM is a multiple of value (NAME's value in this config) */
typedef struct { const char *dim; const char *meta; int64_t value; } IrAligned;

typedef struct IrFunc {
    const char *kernel;    /* the kernel's name */
    const char *name;      /* entry name: kernel__NAME1_V1__NAME2_V2 (see docs/ir.md) */
    int nparams; IrParam *params;
    int nmeta;   IrMeta *meta;        /* this config, in @ph.autotune order */
    int naligned; IrAligned *aligned;
    int threads;                      /* @ph.launch, resolved */
    int stages;                       /* @ph.stages: 1 no pipelining of loop loads, S >= 2 S-stage; 0 default */
    int occupancy;                    /* @ph.occupancy: blocks a multiprocessor the registers leave room for; 0 or 1: one */
    /* @ph.warp_specialize: threads launched past `threads` for a producer
     * of the rings' copies (IR_PRODUCER_THREADS or 0); the tile code keeps
     * `threads` (ir_launch_threads: what a launch runs) */
    int producer_threads;
    /* @ph.warp_specialize(2): with a producer, the tile code's warpgroups
     * take turns issuing their wgmma (ping-pong), so one's softmax runs
     * while another's dots do */
    bool turns;
    IrBlock *producer;                /* set by a target's warp-specialization pass on its copy: the producer's code, or NULL */
    bool tensorcore;
    int nvalues, capvalues; IrValue *values;  /* values[0] unused */
    IrBlock *body;                    /* ends with OP_RETURN */
    Loc loc;
    Arena *arena;                     /* owns everything above */
} IrFunc;

enum { IR_PRODUCER_THREADS = 128 };   /* one warpgroup: setmaxnreg moves registers by whole warpgroups */

/* The threads a launch of f runs: its tile code's, then a producer's. */
static inline int ir_launch_threads(const IrFunc *f) { return f->threads + f->producer_threads; }

typedef struct {
    int nfuncs, cap;
    IrFunc **funcs;   /* kernels in source order, configs in product order (last name fastest) */
} IrModule;

/* ---- types ---- */
IrType ir_scalar(DType dt);
IrType ir_tile1(DType dt, int n);
IrType ir_tile2(DType dt, int rows, int cols);
int ir_rows(IrType t);           /* 1 for scalars and rank 1 */
int ir_cols(IrType t);           /* 1 for scalars */
int64_t ir_numel(IrType t);
bool ir_type_eq(IrType a, IrType b);
bool ir_is_float(DType dt);             /* f16, bf16, f32 and the fp8 formats */
bool ir_is_f8(DType dt);                /* f8e4m3, f8e5m2 */
bool ir_is_int(DType dt);               /* i32, i64, i8, u8 */
bool ir_is_storage(DType dt);           /* i8, u8, f8e4m3, f8e5m2: no arithmetic on them (see DType) */
const char *ir_dtype_name(DType dt);   /* "f16", "bf16", "f32", "i32", "i64", "i8", "u8", "f8e4m3", "f8e5m2", "bool" */
DType ir_dtype_named(const char *name, size_t len);  /* DT_VOID for no dtype */
int ir_dtype_bytes(DType dt);           /* an element's bytes in memory: 1 for i8, u8 and fp8, 2 for f16 and bf16, 8 for i64, else 4 */
void ir_type_str(IrType t, char *buf, size_t n);  /* "f32", "f32[32, 64]" */

/* ---- building ---- */
IrFunc *ir_func_new(const char *kernel);
void ir_func_free(IrFunc *f);
IrModule *ir_module_new(void);
void ir_module_add(IrModule *m, IrFunc *f);
void ir_module_free(IrModule *m);
IrBlock *ir_block_new(IrFunc *f);
ValueId ir_value_new(IrFunc *f, IrType t, const char *name);
ValueId ir_block_arg(IrFunc *f, IrBlock *b, IrType t, const char *name);
/* Appends an op to b with the given operands and one new result per entry of
 * restypes; the caller sets the attributes (sub, axis, ...) on the op. */
IrOp *ir_emit(IrFunc *f, IrBlock *b, IrOpKind kind, int nargs, const ValueId *args,
              int nres, const IrType *restypes);
static inline IrType ir_vtype(const IrFunc *f, ValueId v) { return f->values[v].type; }
/* A memory op's start (or index) operands (load, store, atomic_add,
 * copy_async, gather, scatter, scatter_add): all but the value, the mask
 * of a masked store and a copy's slot. */
static inline int ir_window_starts(const IrOp *op)
{
    bool reads = op->kind == OP_LOAD || op->kind == OP_GATHER;
    return op->nargs - !reads - (op->kind == OP_STORE && (op->flags & STORE_MASKED));
}
/* A masked store's mask (just before the value); 0 for any other op. */
static inline ValueId ir_store_mask(const IrOp *op)
{
    return op->kind == OP_STORE && (op->flags & STORE_MASKED) && op->nargs >= 2 ? op->args[op->nargs - 2] : 0;
}

/* ---- names ---- */
const char *ir_op_name(const IrOp *op);   /* "add", "exp", "reduce_sum", "for", ... */
extern const char *const ir_unop_names[UN_COUNT];
extern const char *const ir_binop_names[BIN_COUNT];
extern const char *const ir_cmp_names[CMP_COUNT];
extern const char *const ir_reduce_names[RED_COUNT];

/* ---- text form, checking, passes ---- */
void ir_print_func(FILE *out, const IrFunc *f);
void ir_print_module(FILE *out, const IrModule *m);
/* Parses the text form back (docs/ir.md). NULL on error, with "line:col: message" in err. */
IrModule *ir_parse(const char *text, char *err, size_t errlen);
/* 0 when f is well formed; otherwise 1 with a message naming the op. */
int ir_verify(const IrFunc *f, char *err, size_t errlen);

typedef struct { const char *name; void (*run)(IrFunc *f); const char *what; } IrPass;
extern const IrPass ir_passes[];     /* the pipeline, in order; ends with {NULL} */
void ir_fold(IrFunc *f);             /* constant folding of scalar ops */
void ir_dce(IrFunc *f);              /* removes ops whose results are unused and that write nothing */
void ir_licm(IrFunc *f);             /* moves loop-invariant ops out of loops (licm.c) */
void ir_masks(IrFunc *f);            /* a select on an affine i32 compare decided once per tile when it can be (masks.c) */
void ir_mask_split(IrFunc *f);        /* a loop run as two where its masks hold on its first iterations (masks.c) */
void ir_async(IrFunc *f);            /* copies loop loads feeding tensor-core dots through shared-memory rings (async.c) */
void ir_pipeline(IrFunc *f);         /* issues loop loads one iteration ahead (pipeline.c) */
/* Runs every pass (verifying after each when verify is set); prints the IR
 * after the pass named dump_after (may be NULL) to dump. 0 on success;
 * 1 with err filled when the verifier rejects a pass's output. */
int ir_run_passes(IrFunc *f, bool verify, const char *dump_after, FILE *dump, char *err, size_t errlen);

/* ---- the interpreter ---- */
/* A tensor argument is host memory with its actual dims; f16 and bf16
 * elements are uint16_t bit patterns, f32 float, i32 int32_t, i64 int64_t. Ranks 1 and 2
 * are row-major contiguous; ranks 3 and 4 take strides, in elements (all 0:
 * row-major contiguous). */
typedef struct {
    void *data;        /* tensors */
    int64_t dims[4];   /* tensors: rank-many entries used */
    int32_t i;         /* i32 scalars */
    float f;           /* f32 scalars */
    int64_t strides[4];/* tensors of rank 3 or 4: rank-many entries used, all 0 for row-major */
    int64_t l;         /* i64 scalars */
} IrArg;

/* Runs f over the whole grid, block by block, on host memory. Checks
 * before running: argument count, dims that must agree (a name shared by
 * tensors, literal dims, dims this config specializes), aligned promises,
 * null data, grid sizes >= 1. 0 on success; otherwise nonzero, nothing run,
 * and a message in err. A failed device_assert is the exception: the
 * blocks before it have run, and err names file:line:col, block, element
 * and message. device_print writes to stdout. */
int ir_interp(const IrFunc *f, const IrArg *args, int nargs, const int grid[3], char *err, size_t errlen);

/* The kernel ABI's parameters (ir_abi_params, ir_param_bytes) come with the IR. */
#include "abi.h"

#endif
