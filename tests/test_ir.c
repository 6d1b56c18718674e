/* test_ir.c: the IR's text form (print -> parse -> print is the identity),
 * the verifier (each kind of malformed IR refused with a message naming
 * the op), the fold and dce passes and the pass driver, on IR text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"
#include "ir/irutil.h"
#include "testutil.h"

static IrModule *parse_ok(const char *text)
{
    char err[512] = "";
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert(m, "parse failed: %s", err);
    return m;
}

static void round_trip_file(const char *path)
{
    char *text = tu_read_file(path);
    cr_assert(text, "missing %s", path);
    IrModule *m = parse_ok(text);
    char err[512];
    for (int i = 0; i < m->nfuncs; i++)
        cr_assert_eq(ir_verify(m->funcs[i], err, sizeof err), 0, "%s: %s", path, err);
    char *once = tu_ir_text(m);
    IrModule *m2 = parse_ok(once);
    char *twice = tu_ir_text(m2);
    cr_assert_str_eq(once, twice);
    ir_module_free(m);
    ir_module_free(m2);
    free(once);
    free(twice);
    free(text);
}

Test(ir_text, round_trip_attention) { round_trip_file("tests/ir/attn_fwd.ir"); }
Test(ir_text, round_trip_control) { round_trip_file("tests/ir/control.ir"); }
Test(ir_text, round_trip_fold) { round_trip_file("tests/ir/fold.ir"); }
Test(ir_text, round_trip_types) { round_trip_file("tests/ir/types.ir"); }
Test(ir_text, round_trip_fp8) { round_trip_file("tests/ir/fp8.ir"); }
Test(ir_text, round_trip_i64) { round_trip_file("tests/ir/i64.ir"); }

Test(ir_text, round_trip_while) { round_trip_file("tests/ir/while.ir"); }
/* atomic_add prints as it is written: the tensor, the starts, the value */
Test(ir_text, round_trip_atomic_add)
{
    round_trip_file("tests/ir/atomic_add.ir");
    char *text = tu_read_file("tests/ir/atomic_add.ir");
    IrModule *m = parse_ok(text);
    char *printed = tu_ir_text(m);
    const char *body = text;
    while (*body == '#') body = strchr(body, '\n') + 1;
    cr_assert_str_eq(body, printed);
    const IrOp *loop = m->funcs[0]->body->ops[6];
    const IrOp *add = loop->body->ops[1];
    cr_assert_eq(add->kind, OP_ATOMIC_ADD);
    cr_assert(add->param == 1 && add->nargs == 2 && add->nres == 0, "S[%%2], %%10.x");
    ir_module_free(m);
    free(printed);
    free(text);
}
/* an add the producer issues (ADD_BY_PRODUCER, warp_specialize.c) says so
 * after its value, and only an atomic add takes the flag */
Test(ir_text, an_add_by_the_producer_round_trips)
{
    const char *text = "func k kernel k threads 128\n"
                       "    params(A: f32[M, N]) {\n"
                       "  %1 = const 0 : i32\n"
                       "  %2 = const 1.0 : f32\n"
                       "  %3 = splat %2 : f32[16, 16]\n"
                       "  atomic_add A[%1, %1], %3 by_producer\n"
                       "  return\n"
                       "}\n";
    IrModule *m = parse_ok(text);
    char err[512];
    cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 0, "%s", err);
    IrOp *add = m->funcs[0]->body->ops[3];
    cr_assert(add->kind == OP_ATOMIC_ADD && add->flags == ADD_BY_PRODUCER);
    char *printed = tu_ir_text(m);
    cr_assert_str_eq(printed, text);
    add->kind = OP_STORE;   /* a store with the flag is refused */
    cr_assert_neq(ir_verify(m->funcs[0], err, sizeof err), 0);
    free(printed);
    ir_module_free(m);
}
/* gathers and scatters print as loads and stores do; licm moves a gather
 * only out of a loop that cannot change what it reads */
Test(ir_text, round_trip_gather_scatter)
{
    round_trip_file("tests/ir/gather.ir");
    char *text = tu_read_file("tests/ir/gather.ir");
    IrModule *m = parse_ok(text);
    const IrFunc *f = m->funcs[0];
    const IrOp *n = f->body->ops[1], *loop = f->body->ops[6];
    cr_assert(n->kind == OP_GATHER && n->nargs == 1 && f->values[n->res[0]].type.rank == 0);
    cr_assert_eq(loop->body->ops[3]->kind, OP_SCATTER);
    char err[512];
    ir_licm(m->funcs[0]);
    cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 0, "%s", err);
    int gathers_in_loop = 0, e_in_loop = 0;
    for (int i = 0; i < loop->body->nops; i++)
        if (loop->body->ops[i]->kind == OP_GATHER) {
            gathers_in_loop++;
            e_in_loop += loop->body->ops[i]->param == 1;
        }
    cr_assert_eq(gathers_in_loop, 1, "S's gather stays");
    cr_assert_eq(e_in_loop, 0, "E's gather moves out");
    ir_module_free(m);
    free(text);
}

/* a masked store prints its mask after the value and keeps it before the value */
Test(ir_text, round_trip_masked_store)
{
    round_trip_file("tests/ir/masked_store.ir");
    char *text = tu_read_file("tests/ir/masked_store.ir");
    IrModule *m = parse_ok(text);
    const IrOp *st = m->funcs[0]->body->ops[6];
    cr_assert_eq(st->kind, OP_STORE);
    cr_assert(st->flags == STORE_MASKED && st->nargs == 3 && ir_window_starts(st) == 1);
    cr_assert(ir_store_mask(st) == st->args[1] && st->args[2] == st->args[1] + 1, "mask %%5, value %%6");
    ir_module_free(m);
    free(text);
}
/* after the passes: asynchronous copies, commits (no operands: the next
 * line's value is not theirs), waits with and without operands */
Test(ir_text, round_trip_after_the_passes)
{
    round_trip_file("tests/golden/matmul.ir");
    round_trip_file("tests/golden/attention.ir");
}

Test(ir_text, file_is_already_in_printed_form)
{
    char *text = tu_read_file("tests/ir/attn_fwd.ir");
    IrModule *m = parse_ok(text);
    char *printed = tu_ir_text(m);
    /* the file is the printer's output after one comment line */
    cr_assert_str_eq(strchr(text, '\n') + 1, printed);
    ir_module_free(m);
    free(printed);
    free(text);
}

Test(ir_text, header_and_attributes_survive)
{
    char *text = tu_read_file("tests/ir/attn_fwd.ir");
    IrModule *m = parse_ok(text);
    IrFunc *f = m->funcs[0];
    cr_assert_str_eq(f->kernel, "attn_fwd");
    cr_assert_str_eq(f->name, "attn_fwd__D_16__BR_16__BC_16");
    cr_assert_eq(f->threads, 128);
    cr_assert(f->tensorcore);
    cr_assert_eq(f->nmeta, 3);
    cr_assert_eq(f->meta[1].value, 16);
    cr_assert_eq(f->naligned, 1);
    cr_assert_str_eq(f->aligned[0].meta, "BR");
    cr_assert_eq(f->nparams, 8);
    cr_assert_str_eq(f->params[4].dim_name[0], "R");
    cr_assert_null(f->params[4].dim_name[1]);
    cr_assert_eq(f->params[4].dim_value[1], 1);
    cr_assert_eq(f->params[6].dt, DT_F32);
    cr_assert(!f->params[6].is_tensor);
    ir_module_free(m);
    free(text);
}

/* @ph.warp_specialize(1) and (2): the producer's threads, and whether the
 * tile code's warpgroups take turns, in the header */
Test(ir_text, producer_and_turns_survive)
{
    const char *const heads[] = {"threads 256 producer 128\n", "threads 256 producer 128 turns\n"};
    for (int w = 0; w < 2; w++) {
        char text[256];
        snprintf(text, sizeof text, "func k kernel k %s    params(n: i32) {\n  return\n}\n", heads[w]);
        IrModule *m = parse_ok(text);
        cr_assert_eq(m->funcs[0]->producer_threads, 128);
        cr_assert_eq(m->funcs[0]->turns, w == 1);
        char *once = tu_ir_text(m);
        cr_assert(strstr(once, heads[w]), "%s", once);
        ir_module_free(m);
        free(once);
    }
}

/* @ph.occupancy(2): the blocks a multiprocessor should hold, in the header
 * (one, the default, prints nothing); out of range, refused */
Test(ir_text, occupancy_survives)
{
    IrModule *m = parse_ok("func k kernel k threads 256 occupancy 2\n    params(n: i32) {\n  return\n}\n");
    cr_assert_eq(m->funcs[0]->occupancy, 2);
    char *once = tu_ir_text(m);
    cr_assert(strstr(once, "threads 256 occupancy 2\n"), "%s", once);
    ir_module_free(m);
    free(once);
    char err[256];
    cr_assert_null(ir_parse("func k kernel k threads 256 occupancy 9\n    params(n: i32) {\n  return\n}\n", err, sizeof err));
    cr_assert(strstr(err, "a block count from 1 to 8"), "%s", err);
}

Test(ir_text, floats_print_exactly)
{
    const char *text =
        "func f kernel f threads 32\n    params() {\n"
        "  %1 = const 0.1 : f32\n  %2 = const -1e+30 : f32\n  %3 = const inf : f32\n"
        "  %4 = const 3.0 : f16\n  return\n}\n";
    IrModule *m = parse_ok(text);
    char *printed = tu_ir_text(m);
    cr_assert_str_eq(printed, text);
    cr_assert_eq(m->funcs[0]->body->ops[0]->fval, 0.1);
    ir_module_free(m);
    free(printed);
}

static void parse_fails(const char *text, const char *want)
{
    char err[512] = "";
    IrModule *m = ir_parse(text, err, sizeof err);
    cr_assert_null(m, "parsed: %s", text);
    cr_assert(strstr(err, want), "message '%s' lacks '%s'", err, want);
}

/* ir_is_max_rescale: exp(x - max(x, y)) and exp2 of it, either order of
 * max's operands, through a broadcast; not when the subtrahend is another
 * value's maximum, nor a plain difference, nor another function. */
Test(ir_text, the_max_rescale_factor_is_recognised)
{
    const char *text =
        "func f kernel f threads 32\n    params(X: f32[16, 1], Y: f32[16, 1], Z: f32[16, 1]) {\n"
        "  %1 = const 0 : i32\n  %2.x = load X[%1, %1] : f32[16, 1]\n  %3.y = load Y[%1, %1] : f32[16, 1]\n"
        "  %4.z = load Z[%1, %1] : f32[16, 1]\n  %5 = max %2.x, %3.y : f32[16, 1]\n  %6 = max %3.y, %2.x : f32[16, 1]\n"
        "  %7 = sub %2.x, %5 : f32[16, 1]\n  %8 = exp %7 : f32[16, 1]\n  %9 = sub %2.x, %6 : f32[16, 1]\n"
        "  %10 = exp2 %9 : f32[16, 1]\n  %11 = broadcast %8 : f32[16, 16]\n  %12 = sub %4.z, %5 : f32[16, 1]\n"
        "  %13 = exp %12 : f32[16, 1]\n  %14 = sub %2.x, %3.y : f32[16, 1]\n  %15 = exp %14 : f32[16, 1]\n"
        "  %16 = log %7 : f32[16, 1]\n  return\n}\n";
    IrModule *m = parse_ok(text);
    const IrFunc *f = m->funcs[0];
    static const int yes[] = {8, 10, 11}, no[] = {13, 15, 16, 7, 5};
    for (int i = 0; i < 3; i++) cr_expect(ir_is_max_rescale(f, yes[i]), "%%%d is a rescale factor", yes[i]);
    for (int i = 0; i < 5; i++) cr_expect(!ir_is_max_rescale(f, no[i]), "%%%d is none", no[i]);
    ir_module_free(m);
}

/* A tensor the autotuner restores or zeroes carries the word after its
 * dims, an integer scalar in the autotuner's key the word key after its
 * type, through print and parse. */
Test(ir_text, tune_resets_survive)
{
    const char *text =
        "func f kernel f threads 32\n    params(X: f32[N] restore, Y: f16[N, 4] zero, Z: f32[N], n: i32, c: i32 key) {\n"
        "  return\n}\n";
    IrModule *m = parse_ok(text);
    const IrParam *p = m->funcs[0]->params;
    cr_assert_eq(p[0].tune_reset, IR_TUNE_RESTORE);
    cr_assert_eq(p[1].tune_reset, IR_TUNE_ZERO);
    cr_assert_eq(p[2].tune_reset, IR_TUNE_KEEP);
    cr_assert_eq(p[3].tune_reset, IR_TUNE_KEEP);
    cr_assert(!p[3].tune_key && p[4].tune_key);
    char *printed = tu_ir_text(m);
    cr_assert_str_eq(printed, text);
    ir_module_free(m);
    free(printed);
    parse_fails("func f kernel f threads 32\n    params(n: i32 restore) {\n  return\n}\n", "expected ',' or ')'");
    parse_fails("func f kernel f threads 32\n    params(s: f32 key) {\n  return\n}\n", "only an integer scalar is a key");
}

Test(ir_text, parse_errors_name_line_and_column)
{
    const char *head = "func f kernel f threads 32\n    params(n: i32) {\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%s  %%1 = add %%2, %%2 : i32\n  return\n}\n", head);
    parse_fails(buf, "3:12: value %2 is used before it is defined");
    snprintf(buf, sizeof buf, "%s  %%1 = const 1 : i32\n  %%1 = const 2 : i32\n  return\n}\n", head);
    parse_fails(buf, "4:3: value %1 is defined twice");
    snprintf(buf, sizeof buf, "%s  %%1 = frob : i32\n  return\n}\n", head);
    parse_fails(buf, "3:8: expected an op name");
    snprintf(buf, sizeof buf, "%s  %%1 = const 1 : i16\n  return\n}\n", head);
    parse_fails(buf, "expected a dtype");
    snprintf(buf, sizeof buf, "%s  %%1 = param m : i32\n  return\n}\n", head);
    parse_fails(buf, "unknown parameter");
    snprintf(buf, sizeof buf, "%s  %%1 = const 1 : i32\n", head);
    parse_fails(buf, "expected '}'");
    parse_fails("func f kernel f threads 32 params() { return", "expected '}'");
    parse_fails("garbage", "1:1: expected 'func'");
}

Test(ir_text, deep_nesting_is_refused_not_crashed)
{
    size_t cap = 400000, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "func f kernel f threads 32 params() {\n %%1 = const 1 : bool\n");
    for (int i = 0; i < 1000; i++) n += (size_t)snprintf(text + n, cap - n, "if %%1 {\n");
    char err[256];
    cr_assert_null(ir_parse(text, err, sizeof err));
    cr_assert(strstr(err, "nested too deeply"), "%s", err);
    free(text);
}

/* ---- the verifier ---- */

static void verify_fails(const char *params, const char *body, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text, "func f kernel f threads 32\n    params(%s) {\n%s}\n", params, body);
    IrModule *m = parse_ok(text);
    char err[512] = "";
    cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 1, "accepted:\n%s", text);
    cr_assert(strstr(err, want), "message '%s' lacks '%s'", err, want);
    ir_module_free(m);
}

/* ops.h is the one list of op names: each names one op, no sub-op shares
 * it, and the op kinds keep their numbers (the text form and the tests'
 * IR depend on the names, nothing outside on the numbers but the order). */
Test(ir_text, op_table_names_are_unique)
{
    cr_assert_eq(OP_CONST, 0);
    cr_assert_eq(OP_RETURN, OP_COUNT - 1);
    const char *const *subs[] = {ir_unop_names, ir_binop_names, ir_cmp_names, ir_reduce_names};
    const int nsubs[] = {UN_COUNT, BIN_COUNT, CMP_COUNT, RED_COUNT};
    for (int k = 0; k < OP_COUNT; k++) {
        const char *name = ir_ops[k].name;
        if (!name) continue;
        for (int j = k + 1; j < OP_COUNT; j++)
            cr_expect(!ir_ops[j].name || strcmp(name, ir_ops[j].name), "ops %d and %d are both '%s'", k, j, name);
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < nsubs[t]; i++) cr_expect(strcmp(name, subs[t][i]), "'%s' is an op and a sub-op", name);
    }
    cr_expect(ir_op_is(OP_STORE, IR_OP_WRITES | IR_OP_EFFECT) && !ir_op_is(OP_LOAD, IR_OP_EFFECT));
    cr_expect(ir_op_is(OP_DOT, IR_OP_PURE) && !ir_op_is(OP_COPY_ASYNC, IR_OP_PURE) && !ir_op_is(OP_COUNT, IR_OP_PURE));
}

/* The kernel ABI's parameter list: a tensor is its address and two dims,
 * a scalar one slot, in parameter order; the bytes align each slot. */
Test(ir_abi, parameters_expand_in_order)
{
    IrModule *m = parse_ok("func k kernel k threads 128\n"
                           "    params(n: i32, A: f16[M, N], x: f32[N], s: f32) {\n  return\n}\n");
    const IrFunc *f = m->funcs[0];
    IrAbiParam abi[8];
    cr_assert_eq(ir_abi_params(f->params, f->nparams, NULL), 8);
    cr_assert_eq(ir_abi_params(f->params, f->nparams, abi), 8);
    const IrAbiParam want[8] = {{IR_ABI_SCALAR, 0},       {IR_ABI_TENSOR_ADDRESS, 1}, {IR_ABI_TENSOR_DIM0, 1},
                                {IR_ABI_TENSOR_DIM1, 1},  {IR_ABI_TENSOR_ADDRESS, 2}, {IR_ABI_TENSOR_DIM0, 2},
                                {IR_ABI_TENSOR_DIM1, 2},  {IR_ABI_SCALAR, 3}};
    for (int k = 0; k < 8; k++)
        cr_expect(abi[k].slot == want[k].slot && abi[k].param == want[k].param, "slot %d: %d of %d", k, abi[k].slot, abi[k].param);
    /* 4 for n, padding to 8, 24 and 24 for the tensors, 4 for s */
    cr_expect_eq(ir_param_bytes(f->params, f->nparams), 60);
    ir_module_free(m);
}

Test(ir_verify, accepts_the_test_files)
{
    /* covered by the round trips; one more small one with every scalar op */
    IrModule *m = parse_ok("func f kernel f threads 32\n    params(x: f32) {\n"
                           "  %1 = param x : f32\n  %2 = exp %1 : f32\n  %3 = convert %2 : i32\n  return\n}\n");
    char err[256];
    cr_assert_eq(ir_verify(m->funcs[0], err, sizeof err), 0, "%s", err);
    ir_module_free(m);
}

Test(ir_verify, rejects_malformed_ir)
{
    const char *c = "  %1 = const 1 : i32\n  %2 = const 1.0 : f32\n";
    char b[1024];
#define BODY(...) (snprintf(b, sizeof b, __VA_ARGS__), b)
    verify_fails("", BODY("%s  %%3 = add %%1, %%2 : i32\n  return\n", c), "op 'add' (%3): operands have different types i32 and f32");
    verify_fails("", BODY("%s  %%3 = lt %%1, %%1 : i32\n  return\n", c), "op 'lt' (%3): result must be bool");
    verify_fails("", BODY("%s  %%3 = div %%1, %%1 : i32\n  return\n", c), "divides floats only");
    verify_fails("", BODY("%s  %%3 = exp %%1 : i32\n  return\n", c), "op 'exp' (%3): needs a float operand");
    verify_fails("", BODY("%s  %%3 = splat %%1 : f32[4]\n  return\n", c), "op 'splat' (%3)");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4]\n  %%4 = broadcast %%3 : f32[4, 8]\n  return\n", c), "cannot broadcast f32[4] to f32[4, 8]");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4, 2]\n  %%4 = convert %%3 : f16[2, 4]\n  return\n", c), "changes shape");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4, 2]\n  %%4 = transpose %%3 : f32[4, 2]\n  return\n", c), "cannot transpose");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4, 2]\n  %%4 = reduce_sum %%3, 1 : f32[1, 2]\n  return\n", c), "result must be f32[4, 1]");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4, 2]\n  %%4 = dot %%3, %%3, %%3 : f32[4, 2]\n  return\n", c), "inner dimensions differ");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4, 4]\n  %%4 = splat %%1 : i32[4, 4]\n  %%5 = dot %%4, %%4, %%3 : f32[4, 4]\n  return\n", c), "needs two float or two i8 operands");
    verify_fails("", BODY("%s  %%3 = splat %%2 : f32[4]\n  %%4 = select %%1, %%3, %%3 : f32[4]\n  return\n", c), "condition must be bool");
    verify_fails("X: f16[N, M]", BODY("%s  %%3 = load X[%%1] : f16[4, 4]\n  return\n", c), "tensor 'X' has rank 2 but the window has 1 starts");
    verify_fails("X: f16[N, M]", BODY("%s  %%3 = load X[%%1, %%1] : f32[4, 4]\n  return\n", c), "does not match tensor 'X'");
    verify_fails("X: f16[N, M]", BODY("%s  %%3 = load X[%%2, %%1] : f16[4, 4]\n  return\n", c), "window start 1 must be an i32 scalar");
    verify_fails("X: f16[N]", BODY("%s  %%3 = splat %%2 : f32[4]\n  store X[%%1], %%3\n  return\n", c), "op 'store'");
    verify_fails("X: f32[N]", BODY("%s  %%3 = splat %%2 : f32[4]\n  %%4 = splat %%1 : i32[4]\n  store X[%%1], %%3 mask %%4\n  return\n", c),
                 "mask must be bool of the value's shape, is i32[4]");
    verify_fails("X: f32[N]", BODY("%s  %%3 = splat %%2 : f32[4]\n  %%4 = lt %%1, %%1 : bool\n  %%5 = splat %%4 : bool[2]\n  store X[%%1], %%3 mask %%5\n  return\n", c),
                 "mask must be bool of the value's shape, is bool[2]");
    verify_fails("", BODY("%s  %%3 = for %%4 = %%1 to %%1 step 1 iter(%%5 = %%1) : i32 {\n    yield %%2\n  }\n  return\n", c), "body yields f32 for result 1 of type i32");
    verify_fails("", BODY("%s  %%3 = for %%4 = %%1 to %%1 step 0 iter(%%5 = %%1) : i32 {\n    yield %%5\n  }\n  return\n", c), "step 0 must be positive");
    verify_fails("", BODY("%s  for %%3 = %%1 to %%1 step 1 {\n    %%4 = add %%3, %%1 : i32\n  }\n  return\n", c), "must end with yield");
    verify_fails("", BODY("%s  %%3 = eq %%1, %%1 : bool\n  %%4 = if %%3 : i32 {\n    yield %%1\n  }\n  return\n", c), "has results but no else branch");
    verify_fails("", BODY("%s  %%3 = eq %%1, %%1 : bool\n  %%4 = if %%3 : i32 {\n    yield %%1\n  } else {\n    yield\n  }\n  return\n", c), "else branch yields 0 values");
    verify_fails("", BODY("%s  if %%1 {\n    yield\n  }\n  return\n", c), "condition must be a bool scalar");
    verify_fails("", BODY("%s  yield\n  return\n", c), "op 'yield': outside a for body");
    verify_fails("", BODY("%s", c), "must end with return");
    verify_fails("", BODY("%s  %%3 = eq %%1, %%1 : bool\n  if %%3 {\n    %%4 = add %%1, %%1 : i32\n    yield\n  }\n  %%5 = add %%4, %%1 : i32\n  return\n", c),
                 "operand %4 is used outside the region that defines it");
    verify_fails("n: i32", BODY("%s  %%3 = param n : f32\n  return\n", c), "differs from parameter 'n'");
    verify_fails("", BODY("%s  %%3 = add %%1, %%1 : i32 @12:5\n  %%4 = add %%3, %%2 : i32\n  return\n", c), "op 'add' (%4)");
    verify_fails("", BODY("%s  %%3 = add %%1, %%2 : i32 @12:5\n  return\n", c), "op 'add' (%3) at 12:5");
#undef BODY
}

Test(ir_verify, use_before_definition_in_built_ir)
{
    IrFunc *f = ir_func_new("k");
    IrType i32 = ir_scalar(DT_I32);
    IrOp *c = ir_emit(f, NULL, OP_CONST, 0, NULL, 1, &i32);
    ValueId later = c->res[0];
    ir_emit(f, f->body, OP_BINARY, 2, (ValueId[]){later, later}, 1, &i32);
    ir_emit(f, f->body, OP_RETURN, 0, NULL, 0, NULL);
    char err[256];
    cr_assert_eq(ir_verify(f, err, sizeof err), 1);
    cr_assert(strstr(err, "operand %1 is used before it is defined"), "%s", err);
    ir_func_free(f);
}

/* ---- passes ---- */

static const char *const folded =
    "func folds kernel folds threads 128\n"
    "    params(X: i32[N]) {\n"
    "  %1 = const -2147483648 : i32\n"
    "  %2 = const 0 : i32\n"
    "  %3 = block_id x : i32\n"
    "  %4 = const -5 : i32\n"
    "  %5 = splat %4 : i32[4]\n"
    "  store X[%3], %5\n"
    "  %6 = splat %1 : i32[4]\n"
    "  store X[%2], %6\n"
    "  return\n"
    "}\n";

Test(ir_passes, fold_and_dce_on_printed_text)
{
    /* 7 // -2 = -4 and 7 % -2 = -1 as in Python; 2^31-1 + 1 wraps; x // 0
     * is 0; the if on a constant inlines; the empty for gives its init;
     * block_id*1 + 0 is block_id; the unused dim goes. */
    char *text = tu_read_file("tests/ir/fold.ir");
    IrModule *m = parse_ok(text);
    char err[512];
    cr_assert_eq(ir_run_passes(m->funcs[0], true, NULL, NULL, err, sizeof err), 0, "%s", err);
    char *out = tu_func_text(m->funcs[0]);
    cr_assert_str_eq(out, folded);
    ir_module_free(m);
    free(out);
    free(text);
}

Test(ir_passes, fold_keeps_float_plus_zero)
{
    IrModule *m = parse_ok("func f kernel f threads 32\n    params(x: f32, X: f32[N]) {\n"
                           "  %1 = param x : f32\n  %2 = const 0.0 : f32\n  %3 = add %1, %2 : f32\n"
                           "  %4 = const 1.0 : f32\n  %5 = mul %3, %4 : f32\n  %6 = const 0 : i32\n"
                           "  %7 = splat %5 : f32[2]\n  store X[%6], %7\n  return\n}\n");
    ir_fold(m->funcs[0]);
    ir_dce(m->funcs[0]);
    char *out = tu_func_text(m->funcs[0]);
    /* -0.0 + 0.0 is +0.0, so the add stays; the multiply by one goes */
    cr_assert(strstr(out, "= add %1, %2 : f32"), "%s", out);
    cr_assert_null(strstr(out, "mul"), "%s", out);
    cr_assert(strstr(out, "splat %3 : f32[2]"), "%s", out);
    ir_module_free(m);
    free(out);
}

Test(ir_passes, fold_scalar_floats_and_compares)
{
    IrModule *m = parse_ok("func f kernel f threads 32\n    params(X: f16[N]) {\n"
                           "  %1 = const 1.0 : f16\n  %2 = const 0.00048828125 : f16\n  %3 = add %1, %2 : f16\n"
                           "  %4 = const -7.5 : f32\n  %5 = convert %4 : i32\n  %6 = const 3 : i32\n"
                           "  %7 = lt %5, %6 : bool\n  %8 = select %7, %3, %1 : f16\n  %9 = const 0 : i32\n"
                           "  %10 = splat %8 : f16[2]\n  store X[%9], %10\n  return\n}\n");
    ir_fold(m->funcs[0]);
    ir_dce(m->funcs[0]);
    char *out = tu_func_text(m->funcs[0]);
    /* 1 + 2^-11 in f16 is a tie and rounds to even: 1.0 */
    cr_assert(strstr(out, "%1 = const 1.0 : f16\n  %2 = const 0 : i32\n  %3 = splat %1 : f16[2]"), "%s", out);
    ir_module_free(m);
    free(out);
}

Test(ir_passes, dce_keeps_stores_and_loops_that_store)
{
    char *text = tu_read_file("tests/ir/control.ir");
    IrModule *m = parse_ok(text);
    char *before = tu_func_text(m->funcs[0]);
    ir_dce(m->funcs[0]);
    char *after = tu_func_text(m->funcs[0]);
    cr_assert_str_eq(before, after);
    ir_module_free(m);
    free(before);
    free(after);
    free(text);
}

Test(ir_passes, dce_removes_a_pure_loop)
{
    IrModule *m = parse_ok("func f kernel f threads 32\n    params(n: i32) {\n"
                           "  %1 = const 0 : i32\n  %2 = param n : i32\n"
                           "  %3 = for %4 = %1 to %2 step 1 iter(%5 = %1) : i32 {\n"
                           "    %6 = add %5, %4 : i32\n    yield %6\n  }\n  return\n}\n");
    ir_dce(m->funcs[0]);
    char *out = tu_func_text(m->funcs[0]);
    cr_assert_str_eq(out, "func f kernel f threads 32\n    params(n: i32) {\n  return\n}\n");
    ir_module_free(m);
    free(out);
}

Test(ir_passes, table_and_driver)
{
    cr_assert_str_eq(ir_passes[0].name, "fold");
    cr_assert_str_eq(ir_passes[1].name, "licm");
    cr_assert_str_eq(ir_passes[2].name, "masks");
    cr_assert_str_eq(ir_passes[3].name, "async");
    cr_assert_str_eq(ir_passes[4].name, "pipeline");
    cr_assert_str_eq(ir_passes[5].name, "masksplit");
    cr_assert_str_eq(ir_passes[6].name, "dce");
    cr_assert_null(ir_passes[7].name);
    char *text = tu_read_file("tests/ir/fold.ir");
    IrModule *m = parse_ok(text);
    char err[512] = "";
    cr_assert_eq(ir_run_passes(m->funcs[0], true, "layout", NULL, err, sizeof err), 1);
    cr_assert_str_eq(err, "unknown pass 'layout' for dump-after; the passes are: fold licm masks async pipeline masksplit dce");
    size_t len = 0;
    char *dump = NULL;
    FILE *out = open_memstream(&dump, &len);
    cr_assert_eq(ir_run_passes(m->funcs[0], true, "dce", out, err, sizeof err), 0);
    fclose(out);
    cr_assert_str_eq(dump, folded);
    free(dump);
    ir_module_free(m);
    free(text);
}

Test(ir_passes, driver_verifies_first)
{
    IrModule *m = parse_ok("func f kernel f threads 32\n    params() {\n  %1 = const 1 : i32\n}\n");
    char err[512] = "";
    cr_assert_eq(ir_run_passes(m->funcs[0], true, NULL, NULL, err, sizeof err), 1);
    cr_assert(strstr(err, "before the first pass") && strstr(err, "must end with return"), "%s", err);
    ir_module_free(m);
}
