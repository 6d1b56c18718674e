/* test_verify.c: one rejected function per rule of the verifier, each
 * checked for its whole message, so that a rule that is dropped or
 * loosened lets its program through and fails here. Most programs are IR
 * text; the rules that the text parser already enforces (value numbers,
 * parameter indices, block arguments) are reached by corrupting a parsed
 * function. A last test reads compiler/ir/verify.c and fails when one of its
 * messages has no case here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Two constants most programs start from: %1 an i32, %2 an f32. */
#define C "  %1 = const 1 : i32\n  %2 = const 1.0 : f32\n"
/* %3 a while carrying %1: condition %4 < %1, body passing %5 on. */
#define WHILE C "  %3 = while iter(%4 = %1) : i32 {\n    %6 = lt %4, %1 : bool\n    yield %6\n  } do(%5) {\n    yield %5\n  }\n  return\n"
/* %3 a bool scalar. */
#define B C "  %3 = eq %1, %1 : bool\n"

typedef struct {
    const char *params, *body;
    void (*corrupt)(IrFunc *f);   /* NULL: the text alone breaks the rule */
    const char *message;          /* ir_verify's whole message */
} Rejected;

static IrOp *def(IrFunc *f, ValueId v) { return f->values[v].def; }
static IrOp *first_op(IrFunc *f) { return f->body->ops[0]; }
static IrOp *third_op(IrFunc *f) { return f->body->ops[2]; }
/* the for at index 2, after C; the if at index 3, after B */
static IrOp *control(IrFunc *f) { return f->body->ops[2]; }
static IrOp *if_op(IrFunc *f) { return f->body->ops[3]; }

static ValueId *values(IrFunc *f, int n, ValueId v)
{
    ValueId *a = arena_alloc(f->arena, sizeof *a * (size_t)n);
    for (int i = 0; i < n; i++) a[i] = v;
    return a;
}

static void block_arg_out_of_range(IrFunc *f) { control(f)->body->args[0] = f->nvalues; }
static void block_arg_defined_twice(IrFunc *f) { control(f)->body->args[0] = 1; }
static void def_points_elsewhere(IrFunc *f) { f->values[3].def = def(f, 1); }
static void void_type(IrFunc *f) { f->values[3].type.dt = DT_VOID; }
static void negative_nargs(IrFunc *f) { third_op(f)->nargs = -1; }
static void operand_out_of_range(IrFunc *f) { third_op(f)->args[1] = f->nvalues + 5; }
static void operand_defined_later(IrFunc *f) { third_op(f)->args[0] = 4; }
static void result_out_of_range(IrFunc *f) { third_op(f)->res[0] = f->nvalues; }
static void load_of_missing_param(IrFunc *f) { third_op(f)->param = 7; }
static void param_of_missing_param(IrFunc *f) { first_op(f)->param = 7; }
static void tensor_of_rank_5(IrFunc *f) { f->params[0].rank = 5; }
static void axes_of_rank_2(IrFunc *f) { third_op(f)->window_axes = 3; }
static void unknown_unary(IrFunc *f) { third_op(f)->sub = UN_COUNT; }
static void unknown_binary(IrFunc *f) { third_op(f)->sub = BIN_COUNT; }
static void unknown_compare(IrFunc *f) { third_op(f)->sub = CMP_COUNT; }
static void unknown_reduction(IrFunc *f) { def(f, 4)->sub = RED_COUNT; }
static void axis_2(IrFunc *f) { def(f, 4)->axis = 2; }
/* a kind past the table, whatever its length */
static void unknown_kind(IrFunc *f) { third_op(f)->kind = (IrOpKind)1000; }
static void copy_without_operands(IrFunc *f) { third_op(f)->nargs = 0; }
static void ring_of_no_stage(IrFunc *f) { third_op(f)->ival = 0; }
static void load_with_flags(IrFunc *f) { third_op(f)->flags = 4; }
static void negative_pending(IrFunc *f) { third_op(f)->ival = -1; }
static void block_id_axis_3(IrFunc *f) { first_op(f)->axis = 3; }
static void for_without_upper(IrFunc *f) { control(f)->nargs = 1; }
static void for_without_results(IrFunc *f) { control(f)->nres = 0; }
static void for_without_body(IrFunc *f) { control(f)->body = NULL; }
static void no_prefix(IrFunc *f) { third_op(f)->str = NULL; }
static void assert_without_file(IrFunc *f) { f->body->ops[3]->file = NULL; }
static void while_arg_f32(IrFunc *f) { f->values[control(f)->els->args[0]].type = ir_scalar(DT_F32); }
static void while_without_body(IrFunc *f) { control(f)->els = NULL; }
static void while_without_results(IrFunc *f) { control(f)->nres = 0; }
static void for_body_without_args(IrFunc *f) { control(f)->body->nargs = 1; }
static void f32_induction_variable(IrFunc *f) { f->values[control(f)->body->args[0]].type = ir_scalar(DT_F32); }
static void if_with_two_conditions(IrFunc *f) { if_op(f)->args = values(f, 2, 3); if_op(f)->nargs = 2; }
static void if_without_then(IrFunc *f) { if_op(f)->body = NULL; }
static void corrupt_region(IrFunc *f) { if_op(f)->body->nops = 2; if_op(f)->body->ops = NULL; }
static void null_op(IrFunc *f) { if_op(f)->body->ops[0] = NULL; }
static void no_body(IrFunc *f) { f->body = NULL; }
static void body_with_args(IrFunc *f) { f->body->nargs = 1; f->body->args = values(f, 1, 1); }

static const Rejected rejected[] = {
    /* ---- scoping and definitions ---- */
    {"", C "  for %3 = %1 to %1 step 1 {\n    yield\n  }\n  return\n", block_arg_out_of_range,
     "f: op 'for': defines value %4, which does not exist"},
    {"", C "  for %3 = %1 to %1 step 1 {\n    yield\n  }\n  return\n", block_arg_defined_twice,
     "f: op 'for': defines value %1 a second time"},
    {"", C "  %3 = add %1, %1 : i32\n  return\n", def_points_elsewhere,
     "f: op 'add' (%3): result %3 does not name this op as its definition"},
    {"", C "  %3 = const 2 : i32\n  return\n", void_type, "f: op 'const' (%3): value %3 has no valid type"},
    {"", C "  %3 = add %1, %1 : i32\n  return\n", negative_nargs, "f: op 'add' (%3): negative operand count"},
    {"", C "  %3 = add %1, %1 : i32\n  return\n", operand_out_of_range, "f: op 'add' (%3): operand 2 is not a value"},
    {"", C "  %3 = add %1, %1 : i32\n  %4 = add %1, %1 : i32\n  return\n", operand_defined_later,
     "f: op 'add' (%3): operand %4 is used before it is defined"},
    {"", B "  if %3 {\n    %4 = add %1, %1 : i32\n    yield\n  }\n  %5 = add %4, %1 : i32\n  return\n", NULL,
     "f: op 'add' (%5): operand %4 is used outside the region that defines it"},
    {"", C "  %3 = add %1, %1 : i32\n  return\n", result_out_of_range, "f: op 'add' (%4): result 1 is not a value"},
    /* ---- operand and result counts ---- */
    {"", C "  %3 = add %1 : i32\n  return\n", NULL, "f: op 'add' (%3): takes 2 operands, has 1"},
    {"", C "  %3, %4 = const 1 : i32, i32\n  return\n", NULL, "f: op 'const' (%3): has 2 results, needs 1"},
    {"", C "  return %1\n", NULL, "f: op 'return': takes 0 operands, has 1"},
    /* ---- leaves ---- */
    {"", C "  %3 = const 1 : i32[4]\n  return\n", NULL, "f: op 'const' (%3): must be a scalar, is i32[4]"},
    {"n: i32", "  %1 = param n : i32\n  return\n", param_of_missing_param,
     "f: op 'param' (%1): names parameter 7, which does not exist"},
    {"X: f16[N]", "  %1 = param X : f16\n  return\n", NULL, "f: op 'param' (%1): parameter 'X' is a tensor"},
    {"s: i8", "  %1 = param s : i8\n  return\n", NULL, "f: op 'param' (%1): scalar parameter 's' is i8, not i32, i64 or f32"},
    {"", "  %1 = const 128 : i8\n  return\n", NULL, "f: op 'const' (%1): 128 does not fit in i8"},
    {"", "  %1 = const -1 : u8\n  return\n", NULL, "f: op 'const' (%1): -1 does not fit in u8"},
    {"", "  %1 = const 5 : i8\n  %2 = add %1, %1 : i8\n  return\n", NULL, "f: op 'add' (%2): takes no i8 operand: convert it to i32 first"},
    {"", "  %1 = const 5 : u8\n  %2 = neg %1 : u8\n  return\n", NULL, "f: op 'neg' (%2): takes no u8 operand: convert it to i32 first"},
    {"", "  %1 = const 5 : i8\n  %2 = splat %1 : i8[4, 4]\n  %3 = reduce_max %2, 1 : i8[4, 1]\n  return\n", NULL,
     "f: op 'reduce_max' (%3): takes no i8 operand: convert it to i32 first"},
    {"", "  %1 = const 5 : i8\n  %2 = splat %1 : i8[4, 4]\n  %3 = cumsum %2, 1 : i8[4, 4]\n  return\n", NULL,
     "f: op 'cumsum' (%3): takes no i8 operand: convert it to i32 first"},
    {"", "  %1 = const 5 : i8\n  %2 = splat %1 : i8[4, 4]\n  %3 = const 0.0 : f32\n  %4 = splat %3 : f32[4, 4]\n"
         "  %5 = dot %2, %2, %4 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot' (%5): accumulator f32[4, 4] and result f32[4, 4] must be i32[4, 4]"},
    {"", "  %1 = const 500.0 : f8e4m3\n  return\n", NULL, "f: op 'const' (%1): 500 is no f8e4m3 value"},
    {"", "  %1 = const 1.0 : f8e5m2\n  %2 = abs %1 : f8e5m2\n  return\n", NULL, "f: op 'abs' (%2): takes no f8e5m2 operand: convert it to f32 first"},
    {"n: i32", "  %1 = param n : f32\n  return\n", NULL, "f: op 'param' (%1): type f32 differs from parameter 'n' (i32)"},
    {"X: f16[N]", "  %1 = dim X 1 : i32\n  return\n", NULL, "f: op 'dim' (%1): axis 1 is not an axis of 'X'"},
    {"X: f16[N]", "  %1 = dim X 0 : f32\n  return\n", NULL, "f: op 'dim' (%1): must be an i32 scalar"},
    {"", "  %1 = block_id y : i32\n  return\n", block_id_axis_3, "f: op 'block_id' (%1): axis 3 is not 0, 1 or 2"},
    {"", "  %1 = grid_dim z : f32\n  return\n", NULL, "f: op 'grid_dim' (%1): must be an i32 scalar"},
    {"", "  %1 = iota 0 : f32[4]\n  return\n", NULL, "f: op 'iota' (%1): must be an i32 tile, is f32[4]"},
    {"", "  %1 = iota 1 : i32[4]\n  return\n", NULL, "f: op 'iota' (%1): axis 1 is not an axis of i32[4]"},
    /* ---- shape and type changes ---- */
    {"", C "  %3 = splat %1 : f32[4]\n  return\n", NULL, "f: op 'splat' (%3): needs a scalar and a tile of its dtype, has i32 -> f32[4]"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = broadcast %3 : f16[4, 4]\n  return\n", NULL,
     "f: op 'broadcast' (%4): changes dtype f32 to f16"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = broadcast %3 : f32[4, 8]\n  return\n", NULL,
     "f: op 'broadcast' (%4): cannot broadcast f32[4] to f32[4, 8]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = convert %3 : f16[2, 4]\n  return\n", NULL,
     "f: op 'convert' (%4): changes shape f32[4, 2] to f16[2, 4]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = transpose %3 : f32[4, 2]\n  return\n", NULL,
     "f: op 'transpose' (%4): cannot transpose f32[4, 2] to f32[4, 2]"},
    /* ---- elementwise ---- */
    {"", C "  %3 = neg %1 : f32\n  return\n", NULL, "f: op 'neg' (%3): result type f32 differs from operand type i32"},
    {"", B "  %4 = neg %3 : bool\n  return\n", NULL, "f: op 'neg' (%4): needs a number, not bool"},
    {"", C "  %3 = not %1 : i32\n  return\n", NULL, "f: op 'not' (%3): needs bool, not i32"},
    {"", C "  %3 = exp %1 : i32\n  return\n", NULL, "f: op 'exp' (%3): needs a float operand, not i32"},
    {"", C "  %3 = exp %2 : f32\n  return\n", unknown_unary, "f: op '?' (%3): unknown unary op 12"},
    {"", C "  %3 = add %1, %2 : i32\n  return\n", NULL, "f: op 'add' (%3): operands have different types i32 and f32"},
    {"", C "  %3 = lt %1, %1 : bool\n  return\n", unknown_compare, "f: op '?' (%3): unknown comparison 6"},
    {"", C "  %3 = lt %1, %1 : i32\n  return\n", NULL, "f: op 'lt' (%3): result must be bool of the operands' shape, is i32"},
    {"", C "  %3 = add %1, %1 : i32\n  return\n", unknown_binary, "f: op '?' (%3): unknown binary op 11"},
    {"", C "  %3 = add %1, %1 : f32\n  return\n", NULL, "f: op 'add' (%3): result type f32 differs from operand type i32"},
    {"", C "  %3 = and %1, %1 : i32\n  return\n", NULL, "f: op 'and' (%3): needs bool operands, not i32"},
    {"", B "  %4 = add %3, %3 : bool\n  return\n", NULL, "f: op 'add' (%4): needs numbers, not bool"},
    {"", C "  %3 = div %1, %1 : i32\n  return\n", NULL, "f: op 'div' (%3): divides floats only (use floordiv on i32)"},
    {"", C "  %3 = pow %1, %1 : i32\n  return\n", NULL, "f: op 'pow' (%3): needs float operands, not i32"},
    {"", C "  %3 = fma %2, %2, %1 : f32\n  return\n", NULL,
     "f: op 'fma' (%3): operands f32, f32, i32 and result must have one type"},
    {"", C "  %3 = fma %1, %1, %1 : i32\n  return\n", NULL, "f: op 'fma' (%3): needs float operands, not i32"},
    {"", C "  %3 = select %1, %2, %2 : f32\n  return\n", NULL,
     "f: op 'select' (%3): condition must be bool of the operands' shape, is i32"},
    {"", B "  %4 = select %3, %2, %1 : f32\n  return\n", NULL,
     "f: op 'select' (%4): operands f32 and i32 and result must have one type"},
    /* ---- reductions and dots ---- */
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = reduce_sum %3, 1 : f32[4, 1]\n  return\n", unknown_reduction,
     "f: op '?' (%4): unknown reduction 3"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = reduce_max %3, 1 : f16[4, 1]\n  return\n", NULL,
     "f: op 'reduce_max' (%4): changes dtype f32 to f16"},
    {"", B "  %4 = splat %3 : bool[4]\n  %5 = reduce_max %4, 0 : bool[1]\n  return\n", NULL,
     "f: op 'reduce_max' (%5): cannot reduce bool"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = reduce_sum %3, 1 : f32[1]\n  return\n", NULL,
     "f: op 'reduce_sum' (%4): axis 1 is not an axis of f32[4]"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = argmax %3, 0 : i32[1]\n  return\n", NULL,
     "f: op 'argmax' (%4): needs a 2-D number tile, has f32[4]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = cumsum %3, 1 : f32[4, 2]\n  return\n", axis_2,
     "f: op 'cumsum' (%4): axis 2 is not 0 or 1"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = argmin %3, 1 : f32[4, 1]\n  return\n", NULL,
     "f: op 'argmin' (%4): result must be i32[4, 1], is f32[4, 1]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = reshape %3 : f32[8]\n  return\n", NULL,
     "f: op 'reshape' (%4): cannot reshape f32[4, 2] to f32[8] (vectors of the same elements only)"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = reshape %3 : f32[1, 3]\n  return\n", NULL,
     "f: op 'reshape' (%4): cannot reshape f32[4] to f32[1, 3] (vectors of the same elements only)"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = reduce_sum %3, 1 : f32[1, 2]\n  return\n", NULL,
     "f: op 'reduce_sum' (%4): result must be f32[4, 1], is f32[1, 2]"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = splat %2 : f32[4, 4]\n  %5 = dot %3, %3, %4 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot' (%5): needs 2-D operands, has f32[4] and f32[4]"},
    {"", C "  %3 = const 1.0 : f16\n  %4 = const 1.0 : bf16\n  %5 = splat %3 : f16[4, 4]\n  %6 = splat %4 : bf16[4, 4]\n"
         "  %7 = splat %2 : f32[4, 4]\n  %8 = dot %5, %6, %7 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot' (%8): needs two float or two i8 operands of one dtype (or two fp8), has f16[4, 4] and bf16[4, 4]"},
    {"", C "  %3 = splat %1 : i32[4, 4]\n  %4 = splat %2 : f32[4, 4]\n  %5 = dot %3, %3, %4 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot' (%5): needs two float or two i8 operands of one dtype (or two fp8), has i32[4, 4] and i32[4, 4]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = splat %2 : f32[4, 4]\n  %5 = dot %3, %3, %4 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot' (%5): inner dimensions differ: f32[4, 2] and f32[4, 2]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = splat %2 : f32[4, 4]\n  %5 = dot_t %3, %4, %4 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot_t' (%5): inner dimensions differ: f32[4, 2] and f32[4, 4]"},
    {"", C "  %3 = splat %2 : f32[4, 2]\n  %4 = splat %2 : f32[2, 4]\n  %5 = splat %2 : f32[4, 2]\n  %6 = dot %3, %4, %5 : f32[4, 4]\n  return\n", NULL,
     "f: op 'dot' (%6): accumulator f32[4, 2] and result f32[4, 4] must be f32[4, 4]"},
    /* ---- memory ---- */
    {"X: f16[N, M]", C "  %3 = load X[%1, %1] : f16[4, 4]\n  return\n", load_of_missing_param,
     "f: op 'load' (%3): names parameter 7, which does not exist"},
    {"n: i32", C "  %3 = load n[%1] : i32[4]\n  return\n", NULL, "f: op 'load' (%3): parameter 'n' is not a tensor"},
    {"X: f16[N]", C "  %3 = load X[%1] : f16[4]\n  return\n", tensor_of_rank_5, "f: op 'load' (%3): tensor 'X' has rank 5"},
    {"X: f16[N, M]", C "  %3 = load X[%1, %1] : f16[4, 4]\n  return\n", axes_of_rank_2,
     "f: op 'load' (%3): tensor 'X' has rank 2: its windows take no axes"},
    {"X: f16[B, H, N, D]", C "  %3 = load X[%1, %1, %1, %1] : f16[4, 4]\n  return\n", NULL,
     "f: op 'load' (%3): axes mask 0 is not one or two axes of tensor 'X' (rank 4)"},
    {"X: f16[B, H, N, D]", C "  %3 = load X[%1, %1, %1, %1] axes 0 1 2 : f16[4, 4]\n  return\n", NULL,
     "f: op 'load' (%3): axes mask 7 is not one or two axes of tensor 'X' (rank 4)"},
    {"X: f16[B, N, D]", C "  %3 = load X[%1, %1, %1] axes 1 : f16[4, 4]\n  return\n", NULL,
     "f: op 'load' (%3): window f16[4, 4] does not match tensor 'X' (f16, rank 1)"},
    {"X: f16[B, N, D]", C "  %3 = load X[%1, %1] axes 1 2 : f16[4, 4]\n  return\n", NULL,
     "f: op 'load' (%3): tensor 'X' has rank 3 but the window has 2 starts"},
    {"X: f32[B, N, D]", C "  %3 = gather X[%1, %1, %1] : f32\n  return\n", NULL,
     "f: op 'gather' (%3): tensor 'X' has rank 3; this op takes tensors of rank 1 or 2"},
    {"X: f16[N, M]", C "  %3 = load X[%1] : f16[4, 4]\n  return\n", NULL,
     "f: op 'load' (%3): tensor 'X' has rank 2 but the window has 1 starts"},
    {"X: f16[N, M]", C "  %3 = load X[%1, %2] : f16[4, 4]\n  return\n", NULL, "f: op 'load' (%3): window start 2 must be an i32 scalar"},
    {"X: f16[N, M]", C "  %3 = load X[%1, %1] : f32[4, 4]\n  return\n", NULL,
     "f: op 'load' (%3): window f32[4, 4] does not match tensor 'X' (f16, rank 2)"},
    {"X: f16[N]", C "  %3 = splat %2 : f32[4]\n  store X[%1], %3\n  return\n", NULL,
     "f: op 'store': window f32[4] does not match tensor 'X' (f16, rank 1)"},
    {"X: f32[N]", C "  load X[%1]\n  return\n", NULL, "f: op 'load': has 0 results, needs 1"},
    {"X: f16[N]", C "  %3 = const 1.0 : f16\n  %4 = splat %3 : f16[4]\n  atomic_add X[%1], %4\n  return\n", NULL,
     "f: op 'atomic_add': tensor 'X' is f16; atomic_add takes an f32, i32 or i64 tensor"},
    {"X: i32[N]", C "  %3 = splat %2 : f32[4]\n  atomic_add X[%1], %3\n  return\n", NULL,
     "f: op 'atomic_add': window f32[4] does not match tensor 'X' (i32, rank 1)"},
    {"X: f32[N, M]", C "  %3 = splat %2 : f32[4, 4]\n  atomic_add X[%1], %3\n  return\n", NULL,
     "f: op 'atomic_add': tensor 'X' has rank 2 but the window has 1 starts"},
    {"X: f32[N]", C "  %3 = splat %2 : f32[4]\n  %4 = atomic_add X[%1], %3 : f32\n  return\n", NULL,
     "f: op 'atomic_add' (%4): has 1 results, needs 0"},
    /* ---- gathers and scatters ---- */
    {"X: f32[N, M]", C "  %3 = gather X[%1] : f32\n  return\n", NULL, "f: op 'gather' (%3): tensor 'X' has rank 2 but there are 1 indices"},
    {"X: f32[N]", C "  scatter X[%1], %2\n  return\n", NULL, "f: op 'scatter': writes a tile; one element is a store's"},
    {"X: f32[N]", C "  %3 = splat %2 : f32[4]\n  %4 = splat %1 : i32[4]\n  store X[%1], %3 mask %4\n  return\n", NULL,
     "f: op 'store': mask must be bool of the value's shape, is i32[4]"},
    {"X: f16[N]", C "  %3 = load X[%1] : f16[4]\n  return\n", load_with_flags, "f: op 'load' (%3): has flags 4 it does not take"},
    {"X: f16[N]", C "  %3 = gather X[%1] : f32\n  return\n", NULL, "f: op 'gather' (%3): elements f32 do not match tensor 'X' (f16)"},
    {"X: f32[N, M]", C "  %3 = splat %1 : i32[4]\n  %4 = gather X[%3, %1] : f32[4]\n  return\n", NULL,
     "f: op 'gather' (%4): index 2 is i32; it must be i32 of the elements' shape f32[4]"},
    {"X: f32[N]", C "  %3 = splat %2 : f32[4]\n  scatter X[%3], %3\n  return\n", NULL,
     "f: op 'scatter': index 1 is f32[4]; it must be i32 of the elements' shape f32[4]"},
    {"X: f16[N]", C "  %3 = splat %1 : i32[4]\n  %4 = const 1.0 : f16\n  %5 = splat %4 : f16[4]\n  scatter_add X[%3], %5\n  return\n", NULL,
     "f: op 'scatter_add': tensor 'X' is f16; scatter_add takes an f32, i32 or i64 tensor"},
    /* ---- asynchronous copies ---- */
#define COPY "  %3 = copy_async X[%1, %1], %1 ring 0 stages 2 : f16[4, 4]\n"
    {"X: f16[N, M]", C COPY "  return\n", copy_without_operands, "f: op 'copy_async' (%3): needs a window and a ring slot"},
    {"X: f16[N, M]", C "  %3 = copy_async X[%1, %1], %2 ring 0 stages 2 : f16[4, 4]\n  return\n", NULL,
     "f: op 'copy_async' (%3): the ring slot must be an i32 scalar"},
    {"X: f16[N, M]", C "  %3 = copy_async X[%1, %1], %1 ring 0 stages 2 : f32[4, 4]\n  return\n", NULL,
     "f: op 'copy_async' (%3): window f32[4, 4] does not match tensor 'X' (f16, rank 2)"},
    {"X: f16[N, M]", C COPY "  return\n", ring_of_no_stage, "f: op 'copy_async' (%3): a ring needs at least 1 stage, has 0"},
    {"X: f16[N, M]", C "  %3 = copy_async X[%1, %1], %1 ring 64 stages 2 : f16[4, 4]\n  return\n", NULL,
     "f: op 'copy_async' (%3): ring 64 is out of range (0 to 63)"},
    {"X: f16[N, M]", C COPY "  %4 = copy_async X[%1, %1], %1 ring 0 stages 3 : f16[4, 4]\n  return\n", NULL,
     "f: op 'copy_async' (%4): ring 0 holds f16[4, 4] in 2 stages elsewhere; this copy has f16[4, 4] in 3"},
    {"X: f16[N, M]", C COPY "  copy_async X[%1, %1], %1 ring 0 stages 2\n  return\n", NULL, "f: op 'copy_async': has 0 results, needs 1"},
    {"X: f16[N, M]", C COPY "  %4 = wait_async %3, %3 pending 0 : f16[4, 4]\n  return\n", NULL,
     "f: op 'wait_async' (%4): has 1 results for 2 operands"},
    {"", C "  wait_async pending 0\n  return\n", negative_pending, "f: op 'wait_async': pending count -1 is negative"},
    {"", C "  %3 = wait_async %1 pending 0 : i32\n  return\n", NULL,
     "f: op 'wait_async' (%3): operand 1 is a scalar; it waits for tiles"},
    {"", C "  %3 = splat %2 : f32[4]\n  %4 = wait_async %3 pending 1 : f32[8]\n  return\n", NULL,
     "f: op 'wait_async' (%4): result 1 is f32[8], its copy f32[4]"},
    {"X: f16[N, M]", C COPY "  release_async %3\n  return\n", NULL, "f: op 'release_async': operand 1 is no wait_async's result"},
    /* an issued dot (wgmma_overlap.c) is read by its wait_dots alone */
#define ISSUED "  %3 = splat %2 : f32[64, 16]\n  %4 = splat %2 : f32[64, 64]\n  %5 = convert %3 : f16[64, 16]\n" \
               "  %6 = splat %2 : f32[16, 64]\n  %7 = convert %6 : f16[16, 64]\n  %8 = dot %5, %7, %4 issued : f32[64, 64]\n"
    {"", C ISSUED "  %9 = add %8, %4 : f32[64, 64]\n  return\n", NULL,
     "f: op 'add' (%9): operand %8 is an issued dot's result, which only a wait_dots reads"},
    {"", C ISSUED "  %9 = wait_dots %4 pending 0 : f32[64, 64]\n  return\n", NULL, "f: op 'wait_dots' (%9): operand 1 is no issued dot's result"},
    /* a for loop may carry one in flight: its argument and result are issued too */
    {"", C ISSUED "  %9 = for %10 = %1 to %1 step 1 iter(%11 = %4) : f32[64, 64] {\n    %12 = add %11, %4 : f32[64, 64]\n"
                  "    %13 = dot %5, %7, %12 issued : f32[64, 64]\n    yield %13\n  }\n  return\n", NULL,
     "f: op 'add' (%12): operand %11 is an issued dot's result, which only a wait_dots reads"},
    {"", C ISSUED "  %9 = for %10 = %1 to %1 step 1 iter(%11 = %4) : f32[64, 64] {\n    %12 = wait_dots %11 pending 0 : f32[64, 64]\n"
                  "    %13 = dot %5, %7, %12 issued : f32[64, 64]\n    yield %13\n  }\n  %14 = add %9, %4 : f32[64, 64]\n  return\n", NULL,
     "f: op 'add' (%14): operand %9 is an issued dot's result, which only a wait_dots reads"},
    /* but not one whose A the loop writes again before the wait: carried (P_{j-1}), or computed in the body */
    {"", C ISSUED "  %9, %10 = for %11 = %1 to %1 step 1 iter(%12 = %4, %13 = %5) : f32[64, 64], f16[64, 16] {\n"
                  "    %14 = wait_dots %12 pending 0 : f32[64, 64]\n    %15 = dot %13, %7, %14 issued : f32[64, 64]\n"
                  "    %16 = convert %3 : f16[64, 16]\n    yield %15, %16\n  }\n  return\n", NULL,
     "f: op 'for' (%9): carries a dot in flight (%15) whose A (%13) the loop writes again before the dot's wait"},
    {"", C ISSUED "  %9 = for %10 = %1 to %1 step 1 iter(%11 = %4) : f32[64, 64] {\n    %12 = wait_dots %11 pending 0 : f32[64, 64]\n"
                  "    %13 = convert %3 : f16[64, 16]\n    %14 = dot %13, %7, %12 issued : f32[64, 64]\n    yield %14\n  }\n  return\n", NULL,
     "f: op 'for' (%9): carries a dot in flight (%14) whose A (%13) the loop writes again before the dot's wait"},
    /* an if may not */
    {"", C ISSUED "  %9 = eq %1, %1 : bool\n  %10 = if %9 : f32[64, 64] {\n    yield %8\n  } else {\n    yield %4\n  }\n  return\n", NULL,
     "f: op 'if' (%10): then branch yields an issued dot's result (only a for loop carries one)"},
#undef ISSUED
#undef COPY
    /* ---- for ---- */
    {"", C "  %3 = for %4 = %1 to %1 step 1 iter(%5 = %1) : i32 {\n    yield %5\n  }\n  return\n", for_without_upper,
     "f: op 'for' (%3): needs lower and upper bounds"},
    {"", C "  for %3 = %2 to %1 step 1 {\n    yield\n  }\n  return\n", NULL, "f: op 'for': bounds must be i32 scalars"},
    {"", C "  for %3 = %1 to %1 step 0 {\n    yield\n  }\n  return\n", NULL, "f: op 'for': step 0 must be positive"},
    {"", C "  for %3 = %1 to %1 step 4294967296 {\n    yield\n  }\n  return\n", NULL, "f: op 'for': step 4294967296 must be positive"},
    {"", C "  %3 = for %4 = %1 to %1 step 1 iter(%5 = %1) : i32 {\n    yield %5\n  }\n  return\n", for_without_results,
     "f: op 'for': has 1 carried values but 0 results"},
    {"", C "  for %3 = %1 to %1 step 1 {\n    yield\n  }\n  return\n", for_without_body, "f: op 'for': has no body"},
    {"", C "  %3 = for %4 = %1 to %1 step 1 iter(%5 = %1) : i32 {\n    yield %5\n  }\n  return\n", for_body_without_args,
     "f: op 'for' (%3): body has 1 arguments, needs 2"},
    {"", C "  for %3 = %1 to %1 step 1 {\n    yield\n  }\n  return\n", f32_induction_variable,
     "f: op 'for': induction variable must be i32"},
    {"", C "  %3 = for %4 = %1 to %1 step 1 iter(%5 = %1) : f32 {\n    yield %5\n  }\n  return\n", NULL,
     "f: op 'for' (%3): carried value 1: initial i32, argument and result must agree (f32)"},
    {"", C "  %3 = for %4 = %1 to %1 step 1 iter(%5 = %1) : i32 {\n    yield %5, %5\n  }\n  return\n", NULL,
     "f: op 'for' (%3): body yields 2 values, the op has 1 results"},
    {"", C "  %3 = for %4 = %1 to %1 step 1 iter(%5 = %1) : i32 {\n    yield %2\n  }\n  return\n", NULL,
     "f: op 'for' (%3): body yields f32 for result 1 of type i32"},
    /* ---- if ---- */
    {"", B "  if %3 {\n    yield\n  }\n  return\n", if_with_two_conditions, "f: op 'if': takes 1 operands, has 2"},
    {"", C "  if %1 {\n    yield\n  }\n  return\n", NULL, "f: op 'if': condition must be a bool scalar"},
    {"", B "  if %3 {\n    yield\n  }\n  return\n", if_without_then, "f: op 'if': has no then branch"},
    {"", B "  %4 = if %3 : i32 {\n    yield %1\n  }\n  return\n", NULL, "f: op 'if' (%4): has results but no else branch"},
    {"", B "  %4 = if %3 : i32 {\n    yield %2\n  } else {\n    yield %1\n  }\n  return\n", NULL,
     "f: op 'if' (%4): then branch yields f32 for result 1 of type i32"},
    {"", B "  %4 = if %3 : i32 {\n    yield %1\n  } else {\n    yield\n  }\n  return\n", NULL,
     "f: op 'if' (%4): else branch yields 0 values, the op has 1 results"},
    /* ---- while ---- */
    {"", C "  %3 = while iter(%4 = %1) : i32 {\n    yield %4\n  } do(%5) {\n    yield %5\n  }\n  return\n", NULL,
     "f: op 'while' (%3): condition must yield one bool scalar"},
    {"", C "  %3 = while iter(%4 = %1) : i32 {\n    %6 = lt %4, %1 : bool\n    yield %6\n  } do(%5) {\n    yield %2\n  }\n  return\n",
     NULL, "f: op 'while' (%3): body yields f32 for result 1 of type i32"},
    {"", WHILE, while_arg_f32, "f: op 'while' (%3): carried value 1: initial i32, arguments and result must agree (f32)"},
    {"", WHILE, while_without_body, "f: op 'while' (%3): has no body"},
    {"", WHILE, while_without_results, "f: op 'while': has 1 carried values but 0 results"},
    /* ---- device_print, device_assert ---- */
    {"", C "  device_print \"x\", %1\n  return\n", no_prefix, "f: op 'device_print': has no prefix"},
    {"", C "  %3 = splat %1 : i32[4]\n  device_print \"x\", %2, %3\n  return\n", NULL,
     "f: op 'device_print': operand 2 is i32[4]; it prints i32, f32 and bool scalars"},
    {"", C "  device_assert %1, \"m\", \"t.ph\"\n  return\n", NULL, "f: op 'device_assert': condition must be bool, is i32"},
    {"", B "  device_assert %3, \"m\", \"t.ph\"\n  return\n", assert_without_file,
     "f: op 'device_assert': has no message or no file"},
    /* ---- regions ---- */
    {"", B "  if %3 {\n  }\n  return\n", NULL, "f: op 'if': a region of a 'if' must end with yield"},
    {"", B "  if %3 {\n    %4 = add %1, %1 : i32\n    yield\n  }\n  return\n", corrupt_region, "f: op 'if': has a corrupt region"},
    {"", B "  if %3 {\n    %4 = add %1, %1 : i32\n    yield\n  }\n  return\n", null_op, "f: op 'if': has a null op"},
    {"", B "  if %3 {\n    yield\n    return\n    yield\n  }\n  return\n", NULL,
     "f: op 'yield': must be the last op of its region"},
    {"", C "  yield\n  return\n", NULL, "f: op 'yield': outside a for body, if branch or while region"},
    {"", B "  if %3 {\n    %4 = yield %1 : i32\n  }\n  return\n", NULL, "f: op 'yield' (%4): has 1 results, needs 0"},
    {"", C, NULL, "f: the function body must end with return"},
    {"", C "  %3 = add %1, %1 : i32\n  return\n", unknown_kind, "f: op '?' (%3): unknown op kind 1000"},
    {"", C "  return\n", no_body, "f: has no body"},
    {"", C "  return\n", body_with_args, "f: the function body takes no arguments"},
};

static const int nrejected = (int)(sizeof rejected / sizeof *rejected);

/* The message ir_verify gives for case i (a static buffer). */
static const char *message_of(int i)
{
    static char err[512];
    const Rejected *r = &rejected[i];
    char text[2048], perr[512];
    snprintf(text, sizeof text, "func f kernel f threads 32\n    params(%s) {\n%s}\n", r->params, r->body);
    IrModule *m = ir_parse(text, perr, sizeof perr);
    cr_assert_not_null(m, "case %d does not parse: %s\n%s", i, perr, text);
    if (r->corrupt) {
        cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 0, "case %d is rejected before its corruption: %s\n%s", i, err, text);
        r->corrupt(m->funcs[0]);
    }
    err[0] = 0;
    cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 1, "case %d accepted, not refused with\n  %s\n%s", i, r->message, text);
    ir_module_free(m);
    return err;
}

Test(ir_verify, every_rule_refuses_its_program)
{
    for (int i = 0; i < nrejected; i++) {
        const char *got = message_of(i);
        cr_expect_str_eq(got, rejected[i].message, "case %d:\n  got  %s\n  want %s", i, got, rejected[i].message);
    }
}

/* A dot carried in flight, its A from outside the loop, waited for at the body's top
 * and after the loop, is accepted. */
Test(ir_verify, a_for_loop_carrying_an_issued_dot_to_its_waits_is_accepted)
{
    const char *text = "func f kernel f threads 128\n    params() {\n" C
                       "  %3 = splat %2 : f32[64, 16]\n  %4 = splat %2 : f32[64, 64]\n  %5 = convert %3 : f16[64, 16]\n"
                       "  %6 = splat %2 : f32[16, 64]\n  %7 = convert %6 : f16[16, 64]\n"
                       "  %9 = for %10 = %1 to %1 step 1 iter(%11 = %4) : f32[64, 64] {\n"
                       "    %12 = wait_dots %11 pending 0 : f32[64, 64]\n    %13 = dot %5, %7, %12 issued : f32[64, 64]\n"
                       "    yield %13\n  }\n  %14 = wait_dots %9 pending 0 : f32[64, 64]\n  return\n}\n";
    char perr[512], err[512] = "";
    IrModule *m = ir_parse(text, perr, sizeof perr);
    cr_assert_not_null(m, "%s", perr);
    cr_expect_eq(ir_verify(m->funcs[0], err, sizeof err), 0, "%s", err);
    ir_module_free(m);
}

/* Builds `if c { if c { ... yield } yield }` depth deep, then return. */
static IrFunc *nested_ifs(int depth)
{
    IrFunc *f = ir_func_new("f");
    f->name = "f";
    IrType b = ir_scalar(DT_BOOL);
    IrOp *c = ir_emit(f, f->body, OP_CONST, 0, NULL, 1, &b);
    IrBlock *at = f->body;
    for (int i = 0; i < depth; i++) {
        IrOp *op = ir_emit(f, at, OP_IF, 1, &c->res[0], 0, NULL);
        op->body = ir_block_new(f);
        if (at != f->body) ir_emit(f, at, OP_YIELD, 0, NULL, 0, NULL);
        at = op->body;
    }
    ir_emit(f, at, OP_YIELD, 0, NULL, 0, NULL);
    ir_emit(f, f->body, OP_RETURN, 0, NULL, 0, NULL);
    return f;
}

Test(ir_verify, regions_nest_at_most_256_deep)
{
    char err[512];
    IrFunc *ok = nested_ifs(256), *deep = nested_ifs(257);
    cr_assert_eq(ir_verify(ok, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ir_verify(deep, err, sizeof err), 1);
    cr_assert_str_eq(err, "f: op 'if': regions nested more than 256 deep");
    ir_func_free(ok);
    ir_func_free(deep);
}

/* ---- every message of verify.c has a case ---- */

/* Whether s is, entirely, what printf would make of fmt (%d, %lld, %s, %%). */
static bool fits(const char *fmt, const char *s)
{
    if (!*fmt) return !*s;
    if (fmt[0] == '%' && fmt[1] == '%') return *s == '%' && fits(fmt + 2, s + 1);
    if (fmt[0] == '%' && fmt[1] == 's') {
        for (const char *t = s; ; t++) {
            if (fits(fmt + 2, t)) return true;
            if (!*t) return false;
        }
    }
    if (fmt[0] == '%' && (fmt[1] == 'd' || !strncmp(fmt + 1, "lld", 3))) {
        const char *rest = fmt + (fmt[1] == 'd' ? 2 : 4), *t = s;
        if (*t == '-') t++;
        if (*t < '0' || *t > '9') return false;
        while (*t >= '0' && *t <= '9') t++;
        return fits(rest, t);
    }
    return *fmt == *s && fits(fmt + 1, s + 1);
}

/* Whether some message ends, after a ": ", with fmt filled in. */
static bool covered(const char *fmt, char (*messages)[512], int n)
{
    for (int i = 0; i < n; i++)
        for (const char *p = messages[i]; (p = strstr(p, ": ")); p++)
            if (fits(fmt, p + 2)) return true;
    return false;
}

Test(ir_verify, every_message_of_the_verifier_has_a_case)
{
    /* the table's messages, and the nesting limit's */
    char (*messages)[512] = calloc((size_t)nrejected + 1, sizeof *messages);
    for (int i = 0; i < nrejected; i++) snprintf(messages[i], sizeof messages[i], "%s", message_of(i));
    IrFunc *deep = nested_ifs(257);
    cr_assert_eq(ir_verify(deep, messages[nrejected], sizeof messages[nrejected]), 1);
    ir_func_free(deep);
    char *src = tu_read_file("compiler/ir/verify.c");
    cr_assert_not_null(src, "run from the repository root");
    int formats = 0;
    /* every string literal on a line that calls bad(v, ...) is a message format */
    for (char *line = strtok(src, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "bad(v, ") && !strstr(line, "bad(&v, ")) continue;
        for (char *q = strchr(line, '"'); q; q = strchr(q, '"')) {
            char *end = strchr(q + 1, '"');
            cr_assert_not_null(end);
            *end = 0;
            formats++;
            cr_expect(covered(q + 1, messages, nrejected + 1), "no case for the verifier's message \"%s\"", q + 1);
            q = end + 1;
        }
    }
    cr_assert_gt(formats, 60, "found only %d messages in compiler/ir/verify.c", formats);
    free(src);
    free(messages);
}
