/* sema.h: what the files of semantic analysis share. sema.c walks the
 * module and lowers each selected config of a kernel; sema_kernel.c checks
 * a kernel's header (parameters, decorators); sema_stmt.c checks and
 * lowers statements; sema_expr.c types and lowers expressions, with
 * sema_call.c for the built-ins and sema_shape.c for values, shapes,
 * broadcasting and coercion. Every expression is visited twice per
 * statement: a typing pass (emit false) that reports errors and resolves
 * the extents of ph.iota calls through broadcasting, then, only when that
 * pass found no error, an emitting pass that builds IR with every shape
 * known. */
#ifndef PHC_SEMA_H
#define PHC_SEMA_H

#include "dsl.h"

#include <string.h>

enum {
    MAX_META = 16,          /* meta-parameters of one kernel */
    MAX_CONFIGS = 4096,     /* configs of one kernel: the elements of its autotune products */
    MAX_PRODUCTS = 16,      /* @ph.autotune decorators of one kernel */
    MAX_LOWERED = 4000000,  /* statements lowered for one kernel: selected configs x statements */
    MAX_DIM = 65536,        /* largest tile extent */
    MAX_NUMEL = 1 << 22,    /* largest tile */
    MAX_IOTA = 64,          /* ph.iota calls without an extent in one statement */
    MAX_DEPTH = 256,        /* nesting of expressions and blocks */
    MAX_STAGES = 8,         /* @ph.stages: slots of a shared-memory ring */
    MAX_OCCUPANCY = 8,      /* @ph.occupancy: blocks a multiprocessor */
    MAX_UNROLLED = 65536,   /* statements ph.static_range and inlined helpers copy in one config */
    MAX_INLINE = 32,        /* helpers inlined inside one another */
};

/* A typed value. dim[i] > 0 is a known extent; dim[i] < 0 names an iota
 * extent still unknown in the typing pass (symbol -dim[i] - 1). */
typedef struct {
    DType dt;          /* DT_VOID: erroneous (already reported) */
    int rank;
    int dim[2];
    bool weak;         /* a literal or meta-parameter: takes the dtype it meets */
    bool wfloat;       /* weak: a float (else an integer) */
    int64_t ival;
    double fval;
    ValueId v;         /* emitting pass: the IR value; 0 for weak values */
} Val;

typedef enum {
    SYM_SCALAR,   /* scalar parameter */
    SYM_TENSOR,   /* tensor parameter */
    SYM_META,     /* meta-parameter (also a specialized dimension) */
    SYM_DIM,      /* run-time dimension name */
    SYM_ALIAS,    /* the namespace */
    SYM_LET,
    SYM_VAR,
    SYM_LOOP,     /* loop variable */
} SymKind;

typedef struct {
    const char *name;
    SymKind kind;
    int param;         /* tensors and scalars: index into the kernel's params; dims: tensor */
    int axis;          /* dims */
    Val val;           /* lets, vars, loops, scalars: type and current value; metas: the value */
} Sym;

/* A kernel's header, checked once for all configs. */
typedef struct {
    const FuncDef *def;
    bool ok;                     /* false: no usable header, skip the body */
    bool tensorcore;
    const Expr *launch;          /* NULL: 128 */
    const Expr *stages;          /* @ph.stages: NULL: the compiler's default */
    const Expr *warp_specialize; /* @ph.warp_specialize: NULL: off */
    const Expr *occupancy;       /* @ph.occupancy: NULL: 1 */
    int nparams; IrParam *params;  /* strings point into the AST */
    const Expr **param_annot;
    int nmeta;
    const char *meta_name[MAX_META];
    Loc meta_loc[MAX_META];
    int nproducts;               /* @ph.autotune decorators: the configs are the union of their products */
    int nvalues[MAX_PRODUCTS][MAX_META];
    int64_t *values[MAX_PRODUCTS][MAX_META];
    int naligned; IrAligned *aligned;
    Loc *aligned_loc;
    int nhelpers; const FuncDef **helpers;   /* the module's @ph.func helpers */
} Kernel;

typedef struct {
    Diag *d;
    const char *alias;
    const Kernel *k;
    const int64_t *config;       /* this config's value per meta-parameter */
    IrFunc *f;
    IrBlock *blk;                /* where ops go */
    bool emit;                   /* false: the typing pass */
    bool dead;                   /* after a return in this block: check, do not emit */
    int bad;                     /* errors reported or met (erroneous values used) */
    int depth;
    int64_t unrolled;            /* statements copied by ph.static_range and helpers so far (this config) */
    int scope_floor;             /* syms below it are hidden (a helper's body), but the namespace */
    const FuncDef *inlining[MAX_INLINE];   /* the helpers being inlined, outermost first */
    int ninline;
    VEC(Sym) syms;
    int nscope_base;             /* syms below this are the kernel's (params, metas, dims, alias) */
    /* iota extents of the current statement: a union-find of symbols */
    int nsym;
    int sym_parent[MAX_IOTA];
    int sym_value[MAX_IOTA];     /* 0: unknown */
    const Expr *sym_expr[MAX_IOTA];
    int sym_axis[MAX_IOTA];
} Sema;

/* sema_kernel.c: a kernel's header */
void sema_check_params(Diag *d, const char *alias, const FuncDef *fd, Kernel *k);
void sema_check_decorators(Diag *d, const char *alias, const FuncDef *fd, Kernel *k);
void sema_kernel_free(Kernel *k);
int sema_meta_index(const Kernel *k, const char *name);    /* -1: no meta-parameter of that name */
bool sema_is_dim_name(const Kernel *k, const char *name);  /* a dim of one of the tensor parameters */

/* sema_stmt.c: statements */
void sema_declare(Sema *s, const char *name, SymKind kind, Val v);
void sema_lower_block(Sema *s, Stmt *const *body, int n);

/* sema_shape.c: values, shapes, broadcasting, promotion, coercion */
void sema_err(Sema *s, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
Sym *sema_lookup(Sema *s, const char *name);
Val val_error(void);
bool val_bad(Val v);
static inline Val val_weak_int(int64_t i) { return (Val){.dt = DT_I32, .weak = true, .ival = i}; }
static inline Val val_weak_float(double f) { return (Val){.dt = DT_F32, .weak = true, .wfloat = true, .fval = f}; }
static inline Val val_scalar(DType dt, ValueId v) { return (Val){.dt = dt, .v = v}; }
IrType val_irtype(Val v);
void val_str(Sema *s, Val v, char *buf, size_t n);
/* A dim as it is known now: a positive extent, or the root symbol. */
int sema_dim_now(Sema *s, int d);
/* Both dims must be the same extent (dot's K, online_softmax's M ...). */
bool sema_dim_same(Sema *s, int a, int b);
/* The broadcast shape of a and b, binding iota extents; false if they do not broadcast. */
bool sema_shape_bcast(Sema *s, Val a, Val b, int *rank, int dim[2]);
bool sema_resolve_iotas(Sema *s);
/* The common dtype of two numeric operands, literals taking the other's. */
DType sema_promote(Val a, Val b);
/* x as i32 if it is i8 or u8 (a conversion), else x: operators and most built-ins widen first. */
Val sema_widen(Sema *s, Val x, Loc loc);
ValueId sema_emit1(Sema *s, IrOpKind kind, int nargs, const ValueId *args, IrType t, Loc loc, IrOp **opp);
ValueId sema_const(Sema *s, DType dt, int64_t i, double f, Loc loc);
/* Converts then stretches x to (dt, rank, dim); the caller checked that it may. */
Val sema_coerce(Sema *s, Val x, DType dt, int rank, const int dim[2], Loc loc);
/* Checks that x broadcasts to the shape (rank, dim) and converts to dt;
 * emitting, returns the value of exactly that type. what names the target
 * in messages ("var 'x'", "the window of 'O'"). */
Val sema_coerce_to(Sema *s, Val x, DType dt, int rank, const int dim[2], Loc loc, const char *what);

/* sema_expr.c: expressions */
Val sema_expr(Sema *s, const Expr *e);
Val sema_binary(Sema *s, TokKind op, Val a, Val b, Loc loc);
/* Elementwise binary op: kind OP_BINARY (sub an IrBinop) or OP_CMP. name is
 * the operator or built-in in messages. */
Val sema_elementwise(Sema *s, IrOpKind kind, int sub, TokKind fold_op, Val a, Val b, Loc loc, const char *name);
Val sema_unary_op(Sema *s, IrUnop sub, Val x, Loc loc);
/* Compile-time integers: literals, metas, specialized dims, + - * // of those.
 * False with a reason in why (for "expected ... for WHAT, got WHY"). */
bool sema_const_int(Sema *s, const Expr *e, int64_t *out, char *why, size_t n);
bool sema_const_dim(Sema *s, const Expr *e, const char *what, int *out);
/* "ph.NAME" for attr(alias, NAME), else NULL */
const char *sema_ns_attr(Sema *s, const Expr *e);
const char *ns_attr_of(const char *alias, const Expr *e);
static inline bool sema_is_ns(const char *alias, const Expr *e, const char *name)
{
    const char *n = ns_attr_of(alias, e);
    return n && !strcmp(n, name);
}

/* An i64 index as the i32 the memory ops take, saturated (the same elements lie outside). */
Val sema_index_i32(Sema *s, Val v, Loc loc);
/* dtype from ph.f16 / ph.bf16 / ph.f32 / ph.i32 / bool; DT_VOID if not one */
DType sema_dtype(const char *alias, const Expr *e);
/* A window X[...]: the tensor's index, start values and extents; false on
 * error. A subscript that is an i32 tile gathers: start holds the tile of
 * indices and gathered is set; a plain index (no ':') sets plain. vrank and
 * vdim are the shape of the value the window reads or takes. A window of a
 * rank-3/4 tensor is seen as one of the one or two axes it runs along
 * (axes, a bitmask): rank, start and ext are theirs, and tstart holds a
 * start for each of the tensor's trank axes. */
typedef struct {
    int param; int rank; Val start[IR_MAX_RANK]; int ext[IR_MAX_RANK]; DType dt;
    bool plain[IR_MAX_RANK], gathered[IR_MAX_RANK];
    int vrank, vdim[2];
    int trank, axes; Val tstart[IR_MAX_RANK];
} Window;
bool sema_window(Sema *s, const Expr *index, Window *w);
/* Emitting: the start (or index) operands of window w's memory op into
 * args (IR_MAX_RANK of room); their count, the tensor's rank. */
int sema_window_starts(Sema *s, const Window *w, Loc loc, ValueId *args);
static inline bool sema_window_gathers(const Window *w) { return w->gathered[0] || w->gathered[1]; }
/* The window's value: a load, or a gather where a subscript is a tile of indices. */
Val sema_load(Sema *s, const Window *w, Loc loc);
/* Emitting: the i32 index per axis of every element of gathering window w. */
void sema_gather_indices(Sema *s, const Window *w, Loc loc, ValueId idx[2]);
/* sema_shape.c: a vector is rank 1, or rank 2 with a dim of 1; its
 * element count (a dim, perhaps an iota's unknown extent) in *n. */
bool sema_vector_len(Sema *s, Val v, int *n);
/* Vector x as a tile of (rank, dim) with its elements; the caller checked the count. */
Val sema_reshape(Sema *s, Val x, int rank, const int dim[2], Loc loc);
/* x as the value stored into (added into) window w, before it is broadcast
 * to it: a vector into a rank-1 window reshaped to rank 1. what names the
 * window in messages. */
Val sema_window_value(Sema *s, Val x, const Window *w, Loc loc, const char *what);

/* sema_call.c: the built-ins */
Val sema_call(Sema *s, const Expr *e);
void sema_online_softmax(Sema *s, const Expr *call);
void sema_atomic_add(Sema *s, const Expr *call);

/* sema_func.c: @ph.func helpers, inlined at their calls */
const FuncDef *sema_helper(const Sema *s, const Expr *callee);   /* the helper callee names, or NULL */
/* The helper's body lowered at call e; its return value when want_value. */
Val sema_inline_call(Sema *s, const Expr *e, const FuncDef *fn, bool want_value);
bool sema_check_helper(Diag *d, const char *alias, const FuncDef *fn);
int64_t sema_count_stmts(const Stmt *st);   /* st and the statements nested in it */

/* sema_debug.c: the statements ph.device_print and ph.device_assert */
enum { MAX_PRINT_VALUES = 16 };
void sema_device_print(Sema *s, const Expr *call);
void sema_device_assert(Sema *s, const Expr *call);

/* sema_mask.c: ph.load(X[...], mask=, other=) and the statement ph.store(X[...], v, mask=) */
Val sema_masked_load(Sema *s, const Expr *call);
void sema_masked_store(Sema *s, const Expr *call);

#endif
