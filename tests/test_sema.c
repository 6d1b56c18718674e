/* test_sema.c: semantic analysis and lowering. For each rule a program
 * that passes (its IR checked by the verifier, its shape checked where it
 * matters) and one that fails with the exact message (ph.atomic_add's
 * among them); the seed's four
 * attention kernels; configs and -D; several errors in one run; the
 * golden cases under tests/sema/ (NAME.ph with the exact output NAME.err). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "testutil.h"

#define HEAD "import phobos.lang as ph\n\n"

/* Parses and checks text without the pass pipeline, so the IR is as sema
 * built it; every function must verify. *diags gets the messages. */
static IrModule *lower(const char *text, const SemaOptions *opt, char **diags)
{
    static const SemaOptions none;
    SrcFile src;
    src_from_string(&src, "t.ph", text);
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    Diag d;
    diag_init(&d, &src, out);
    Arena *a = arena_new();
    Module *m = parse(&src, &d, a);
    IrModule *ir = d.nerrors ? NULL : sema(m, &d, opt ? opt : &none);
    arena_free(a);
    diag_free(&d);
    fclose(out);
    src_free(&src);
    char err[512];
    for (int i = 0; ir && i < ir->nfuncs; i++)
        cr_assert_eq(ir_verify(ir->funcs[i], err, sizeof err), 0, "%s: %s", ir->funcs[i]->name, err);
    if (diags) *diags = buf;
    else free(buf);
    return ir;
}

static IrModule *ok(const char *text)
{
    char *diags;
    IrModule *m = lower(text, NULL, &diags);
    cr_assert(m, "unexpected errors:\n%s", diags);
    cr_assert_str_eq(diags, "");
    free(diags);
    return m;
}

/* Only the "t.ph:L:C: error: ..." lines, without the source echo. */
static char *messages(const char *diags)
{
    char *out = calloc(1, strlen(diags) + 1);
    for (const char *p = diags; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p + 1) : strlen(p);
        if (strncmp(p, "    ", 4)) strncat(out, p, n);
        p += n;
    }
    return out;
}

static void fails(const char *text, const char *expected)
{
    char *diags;
    IrModule *m = lower(text, NULL, &diags);
    cr_assert_null(m, "expected errors for:\n%s", text);
    char *msgs = messages(diags);
    cr_assert_str_eq(msgs, expected);
    free(msgs);
    free(diags);
}

/* A kernel with one f32 [R, C] tensor X, a rank-1 tensor Y, scalars n and a,
 * metas BR=32, BC=64, and the given body. */
#define K1(body) HEAD "@ph.kernel\n@ph.autotune(BR=[32], BC=[64])\n" \
    "def k(X: ph.tensor[ph.f32][R, C], Y: ph.tensor[ph.f16][C], n: ph.i32, a: ph.f32):\n" body

static IrOp *find_op(IrBlock *b, IrOpKind kind, int nth)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->kind == kind && nth-- == 0) return b->ops[i];
    return NULL;
}

static int count_ops(IrBlock *b, IrOpKind kind)
{
    int n = 0;
    for (int i = 0; b && i < b->nops; i++) {
        n += b->ops[i]->kind == kind;
        n += count_ops(b->ops[i]->body, kind) + count_ops(b->ops[i]->els, kind);
    }
    return n;
}

/* The last op of the function body before the return, e.g. a store. */
static IrOp *last_op(IrFunc *f, int back)
{
    return f->body->ops[f->body->nops - 1 - back];
}

static IrType vt(IrFunc *f, ValueId v) { return f->values[v].type; }

/* ---- the seed ---- */
Test(seed, attention_kernels)
{
    char *text = tu_read_file("examples/attention/attention.ph");
    cr_assert(text);
    IrModule *m = ok(text);
    cr_assert_eq(m->nfuncs, 4);
    const char *names[] = {"attn_fwd__D_64__BR_32__BC_32", "attn_bwd_delta__D_64__BR_64",
                           "attn_bwd_dkdv__D_64__BR_32__BC_32", "attn_bwd_dq__D_64__BR_32__BC_32"};
    int nparams[] = {8, 3, 11, 10};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(m->funcs[i]->name, names[i]);
        cr_assert_eq(m->funcs[i]->nparams, nparams[i]);
    }
    IrFunc *f = m->funcs[0];
    cr_assert_str_eq(f->kernel, "attn_fwd");
    cr_assert(f->tensorcore);
    cr_assert_eq(f->threads, 128);
    cr_assert_eq(f->nmeta, 3);
    cr_assert_str_eq(f->meta[1].name, "BR");
    cr_assert_eq(f->meta[1].value, 32);
    cr_assert_eq(f->naligned, 1);
    cr_assert_str_eq(f->aligned[0].dim, "R");
    cr_assert_str_eq(f->aligned[0].meta, "BR");
    cr_assert_eq(f->aligned[0].value, 32);
    cr_assert(f->params[0].is_tensor);
    cr_assert_eq(f->params[0].dt, DT_F16);
    cr_assert_str_eq(f->params[0].dim_name[0], "R");
    cr_assert_str_eq(f->params[0].dim_name[1], "D");
    cr_assert_null(f->params[4].dim_name[1]);
    cr_assert_eq(f->params[4].dim_value[1], 1);
    cr_assert(!f->params[5].is_tensor);
    cr_assert_eq(f->params[6].dt, DT_F32);
    cr_assert(!m->funcs[1]->tensorcore);

    /* the loop carries exactly acc, m and l */
    IrOp *loop = find_op(f->body, OP_FOR, 0);
    cr_assert(loop);
    cr_assert_eq(loop->nres, 3);
    cr_assert_eq(loop->ival, 32);
    cr_assert_str_eq(f->values[loop->res[0]].name, "acc");
    cr_assert_str_eq(f->values[loop->res[1]].name, "m");
    cr_assert_str_eq(f->values[loop->res[2]].name, "l");
    cr_assert_eq(loop->body->nargs, 4);
    cr_assert_str_eq(f->values[loop->body->args[0]].name, "kt");
    IrType acc = vt(f, loop->res[0]);
    cr_assert(ir_type_eq(acc, ir_tile2(DT_F32, 32, 64)));
    cr_assert(ir_type_eq(vt(f, loop->res[1]), ir_tile2(DT_F32, 32, 1)));
    /* the if inside yields s; online_softmax expands to two dots in all */
    IrOp *cond = find_op(loop->body, OP_IF, 0);
    cr_assert(cond);
    cr_assert_eq(cond->nres, 1);
    cr_assert_eq(count_ops(loop->body, OP_DOT), 2);
    cr_assert_eq(count_ops(loop->body, OP_REDUCE), 2);
    /* P.V accumulates onto acc * a, and that is the new acc: no add after the dot */
    IrOp *pv = find_op(loop->body, OP_DOT, 1);
    cr_assert(pv);
    const IrOp *scaled = f->values[pv->args[2]].def;
    cr_assert(scaled && scaled->kind == OP_BINARY && scaled->sub == BIN_MUL);
    cr_assert_eq(scaled->args[0], loop->body->args[1]);
    const IrOp *yield = loop->body->ops[loop->body->nops - 1];
    cr_assert_eq(yield->kind, OP_YIELD);
    cr_assert_eq(yield->args[0], pv->res[0]);
    cr_assert_eq(count_ops(f->body, OP_STORE), 2);
    cr_assert_eq(last_op(f, 0)->kind, OP_RETURN);
    /* attn_bwd_dkdv carries dk and dv */
    IrOp *loop2 = find_op(m->funcs[2]->body, OP_FOR, 0);
    cr_assert_eq(loop2->nres, 2);
    ir_module_free(m);
    free(text);
}

Test(seed, full_pipeline_and_speed)
{
    char *text = tu_read_file("examples/attention/attention.ph");
    cr_assert(text);
    char *diags;
    IrModule *m = tu_compile("attention.ph", text, NULL, &diags);
    cr_assert(m, "%s", diags);
    cr_assert_str_eq(diags, "");
    ir_module_free(m);
    free(diags);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 20; i++) ir_module_free(lower(text, NULL, NULL));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / 20;
    cr_assert_lt(ms, 10.0, "front end + IR took %.2f ms", ms);
    free(text);
}

/* ---- configs ---- */
#define TUNED HEAD "@ph.kernel\n@ph.autotune(A=[1, 2], B=[-3, 4, 5])\n" \
    "def k(X: ph.tensor[ph.f32][N]):\n    X[0:+1] = A + B\n" \
    "@ph.kernel\ndef plain(X: ph.tensor[ph.f32][N]):\n    pass\n"

Test(configs, product_order_and_names)
{
    IrModule *m = ok(TUNED);
    cr_assert_eq(m->nfuncs, 7);
    const char *names[] = {"k__A_1__B_m3", "k__A_1__B_4", "k__A_1__B_5", "k__A_2__B_m3", "k__A_2__B_4", "k__A_2__B_5", "plain"};
    for (int i = 0; i < 7; i++) cr_assert_str_eq(m->funcs[i]->name, names[i]);
    cr_assert_eq(m->funcs[3]->meta[1].value, -3);
    cr_assert_eq(m->funcs[6]->nmeta, 0);
    ir_module_free(m);
}

Test(configs, defines_select)
{
    const char *dn[] = {"B"};
    int64_t dv[] = {4};
    SemaOptions opt = {.ndefines = 1, .define_names = dn, .define_values = dv};
    IrModule *m = lower(TUNED, &opt, NULL);
    cr_assert(m);
    cr_assert_eq(m->nfuncs, 3);
    cr_assert_str_eq(m->funcs[0]->name, "k__A_1__B_4");
    cr_assert_str_eq(m->funcs[1]->name, "k__A_2__B_4");
    cr_assert_str_eq(m->funcs[2]->name, "plain");
    ir_module_free(m);
    opt.kernel = "k";
    m = lower(TUNED, &opt, NULL);
    cr_assert_eq(m->nfuncs, 2);
    ir_module_free(m);
}

Test(configs, defines_errors)
{
    const char *dn[] = {"Z"};
    int64_t dv[] = {4};
    SemaOptions opt = {.ndefines = 1, .define_names = dn, .define_values = dv};
    char *diags;
    cr_assert_null(lower(TUNED, &opt, &diags));
    cr_assert_str_eq(diags, "t.ph: error: -D Z=4: no selected kernel has a meta-parameter named 'Z'\n");
    free(diags);
    dn[0] = "B";
    dv[0] = 7;
    cr_assert_null(lower(TUNED, &opt, &diags));
    cr_assert_str_eq(diags, "t.ph:5:5: error: the -D values select no config of kernel 'k'\n    def k(X: ph.tensor[ph.f32][N]):\n        ^\n");
    free(diags);
    SemaOptions o2 = {.kernel = "nope"};
    cr_assert_null(lower(TUNED, &o2, &diags));
    cr_assert_str_eq(diags, "t.ph: error: no kernel named 'nope'\n");
    free(diags);
}

Test(configs, errors_of_one_config_only)
{
    fails(HEAD "@ph.kernel\n@ph.autotune(T=[64, 48])\n@ph.launch(T)\ndef k(X: ph.tensor[ph.f32][N]):\n"
               "    t: ph.let = X[0:+T - 50]\n",
          "t.ph:5:12: error: @ph.launch needs a multiple of 32 from 32 to 1024, got T = 48\n"
          "t.ph:7:24: error: the window length must be at least 1, got -2\n");
}

/* ---- top level ---- */
Test(top, imports_and_statements)
{
    fails("\"\"\"doc\"\"\"\nfrom __future__ import annotations\nfrom __future__ import division\nimport os\n"
          "import phobos.lang\nimport phobos.lang as ph\nx = 1\n\"ok string\"\n"
          "def f():\n    pass\n@ph.kernel\ndef k():\n    pass\n@ph.kernel\ndef k():\n    pass\n",
          "t.ph:3:1: error: 'from __future__ import division' is not supported; only 'annotations' is\n"
          "t.ph:4:1: error: cannot import module 'os'; the only module is phobos.lang\n"
          "t.ph:5:1: error: write 'import phobos.lang as ph': the built-ins are used through an alias\n"
          "t.ph:7:1: error: expected an import or a kernel at the top level, got an assignment\n"
          "t.ph:9:5: error: 'def f' is not a kernel: a top-level def needs @ph.kernel as its first decorator\n"
          "t.ph:15:5: error: kernel 'k' is already defined at line 12\n");
}

Test(top, other_alias)
{
    IrModule *m = ok("import phobos.lang as pl\n@pl.kernel\ndef k(X: pl.tensor[pl.f32][N]):\n    X[0:+4] = pl.exp(1.0)\n");
    cr_assert_eq(m->nfuncs, 1);
    cr_assert_str_eq(m->funcs[0]->name, "k");
    ir_module_free(m);
}

Test(top, missing_import)
{
    fails("@ph.kernel\ndef k():\n    pass\n", "t.ph:1:2: error: 'ph' is not imported; add 'import phobos.lang as ph'\n");
}

/* ---- decorators and parameters ---- */
Test(header, decorators)
{
    IrModule *m = ok(HEAD "@ph.kernel\n@ph.aligned(N=\"B\")\n@ph.launch(T)\n@ph.tensorcore\n"
                     "@ph.autotune(B=[16], T=[256])\ndef k(X: ph.tensor[ph.f32][N, 4], s: ph.f32):\n    pass\n");
    IrFunc *f = m->funcs[0];
    cr_assert_eq(f->threads, 256);
    cr_assert(f->tensorcore);
    cr_assert_eq(f->aligned[0].value, 16);
    cr_assert_eq(f->params[0].dim_value[1], 4);
    cr_assert_eq(f->params[1].dt, DT_F32);
    ir_module_free(m);
    fails(HEAD "@ph.kernel\n@ph.launch(100)\n@ph.foo\n@ph.tensorcore()\n@ph.autotune(B=[1, 1], X=[2], C=[])\n"
               "@ph.aligned(M=\"B\", N=\"Q\")\n@ph.autotune(D=[1])\n@ph.tensorcore\n@ph.kernel\n"
               "def k(X: ph.tensor[ph.f32][N]):\n    pass\n",
          "t.ph:11:2: error: @ph.kernel must be the first decorator\n"
          "t.ph:5:2: error: unknown decorator; expected @ph.tensorcore, @ph.launch, @ph.autotune, @ph.aligned, @ph.stages, "
          "@ph.autotune_restore, @ph.autotune_zero, @ph.autotune_key, @ph.warp_specialize or @ph.occupancy\n"
          "t.ph:6:2: error: @ph.tensorcore takes no arguments\n"
          "t.ph:7:20: error: value 1 of 'B' is listed twice\n"
          "t.ph:7:24: error: meta-parameter 'X' shadows a parameter\n"
          "t.ph:7:33: error: meta-parameter 'C' needs a non-empty list of integers\n"
          "t.ph:9:14: error: 'D' is not a meta-parameter of the first @ph.autotune: every @ph.autotune names the same ones, "
          "in the same order\n"
          "t.ph:10:2: error: @ph.tensorcore is given twice\n"
          "t.ph:8:13: error: 'M' is not a dimension name of a tensor parameter\n"
          "t.ph:8:22: error: 'Q' is not a meta-parameter of this kernel\n"
          "t.ph:4:12: error: @ph.launch needs a multiple of 32 from 32 to 1024, got 100\n");
}

/* Several @ph.autotune: the configs are their products one after the
 * other, each over the first one's names in its order, no config twice. */
Test(header, autotune_products)
{
    IrModule *m = ok(HEAD "@ph.kernel\n@ph.launch(T)\n@ph.autotune(B=[16, 32], T=[128])\n@ph.autotune(B=[48], T=[96, 192])\n"
                     "def k(X: ph.tensor[ph.f32][N]):\n    pass\n");
    static const char *const want[] = {"k__B_16__T_128", "k__B_32__T_128", "k__B_48__T_96", "k__B_48__T_192"};
    cr_assert_eq(m->nfuncs, 4);
    for (int i = 0; i < 4; i++) cr_expect_str_eq(m->funcs[i]->name, want[i]);
    cr_expect_eq(m->funcs[3]->threads, 192);
    ir_module_free(m);
    fails(HEAD "@ph.kernel\n@ph.autotune(B=[16], T=[128])\n@ph.autotune(T=[96], B=[48])\n@ph.autotune(B=[48])\n"
               "@ph.autotune(B=[8, 16], T=[128])\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n",
          "t.ph:5:14: error: expected 'B' here: every @ph.autotune names the first one's meta-parameters, in its order\n"
          "t.ph:6:2: error: this @ph.autotune lacks meta-parameter 'T' (every one names the first one's)\n"
          "t.ph:8:5: error: kernel 'k': a config is in two @ph.autotune products (B = 16, ...)\n");
    char src[2048] = HEAD "@ph.kernel\n";   /* the 17th decorator is over the limit */
    for (int i = 0; i < 17; i++) snprintf(src + strlen(src), sizeof src - strlen(src), "@ph.autotune(B=[%d])\n", i);
    strcat(src, "def k(X: ph.tensor[ph.f32][N]):\n    pass\n");
    fails(src, "t.ph:20:2: error: at most 16 @ph.autotune decorators are supported\n");
}

/* @ph.autotune_restore and @ph.autotune_zero mark tensor parameters in
 * every config's IR, and nothing else; a name that is not a tensor
 * parameter, a tensor named twice, or arguments that are not strings are
 * errors at the argument. */
Test(header, autotune_restore_and_zero)
{
    IrModule *m = ok(HEAD "@ph.kernel\n@ph.autotune(B=[16, 32])\n@ph.autotune_restore(\"X\")\n@ph.autotune_zero(\"Z\", \"W\")\n"
                     "def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], "
                     "W: ph.tensor[ph.f16][N, 4], n: ph.i32):\n    pass\n");
    cr_assert_eq(m->nfuncs, 2);
    static const IrTuneReset want[5] = {IR_TUNE_RESTORE, IR_TUNE_KEEP, IR_TUNE_ZERO, IR_TUNE_ZERO, IR_TUNE_KEEP};
    for (int i = 0; i < m->nfuncs; i++)
        for (int p = 0; p < 5; p++)
            cr_assert_eq(m->funcs[i]->params[p].tune_reset, want[p], "%s: parameter %d", m->funcs[i]->name, p);
    ir_module_free(m);
    fails(HEAD "@ph.kernel\n"
               "@ph.autotune_restore(\"X\", \"n\", \"Q\", X)\n"
               "@ph.autotune_zero(\"X\", \"Y\", \"Y\")\n"
               "@ph.autotune_zero(\"Y\")\n"
               "def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], n: ph.i32):\n    pass\n"
               "@ph.kernel\n@ph.autotune_restore\n@ph.autotune_zero()\n"
               "def k2(X: ph.tensor[ph.f32][N]):\n    pass\n",
          "t.ph:4:27: error: 'n' is a scalar; @ph.autotune_restore names tensor parameters\n"
          "t.ph:4:32: error: 'Q' is not a parameter of this kernel\n"
          "t.ph:4:37: error: @ph.autotune_restore takes the names of tensor parameters, as strings\n"
          "t.ph:5:19: error: tensor 'X' cannot be both restored and zeroed\n"
          "t.ph:5:29: error: tensor 'Y' is named twice in @ph.autotune_zero\n"
          "t.ph:6:2: error: @ph.autotune_zero is given twice\n"
          "t.ph:10:2: error: @ph.autotune_restore takes the names of tensor parameters, as strings\n"
          "t.ph:11:2: error: @ph.autotune_zero takes the names of tensor parameters, as strings\n");
}

Test(header, parameters)
{
    fails(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][N, 0], n: ph.f16, b, c: ph.i32 = 3, X: ph.i32, "
               "Y: ph.tensor[ph.bool][N], Z: ph.tensor[ph.f32][A, B, C, E, F], W: int, n2: ph.tensor[ph.f32][X]) -> int:\n    pass\n",
          "t.ph:4:31: error: a tensor dimension is a name or a positive integer literal\n"
          "t.ph:4:38: error: scalar parameters are ph.i32 or ph.f32, got f16\n"
          "t.ph:4:46: error: parameter 'b' needs a type: ph.tensor[DTYPE][DIMS], ph.i32 or ph.f32\n"
          "t.ph:4:61: error: parameter 'c' has a default value; kernel parameters take none\n"
          "t.ph:4:64: error: parameter 'X' is given twice\n"
          "t.ph:4:78: error: expected one element type for tensor 'Y': ph.f16, ph.bf16, ph.f32 or ph.i32\n"
          "t.ph:4:104: error: tensor 'Z' must have rank 1 to 4, got 5 dimensions\n"
          "t.ph:4:141: error: expected ph.tensor[DTYPE][DIMS], ph.i32 or ph.f32 as the type of parameter 'W'\n"
          "t.ph:4:150: error: dimension name 'X' is also the name of a parameter\n"
          "t.ph:4:175: error: a kernel returns nothing; remove the '->' annotation\n");
}

/* ---- dims, metas, locals ---- */
Test(locals, dims_metas_and_vars)
{
    IrModule *m = ok(HEAD "@ph.kernel\n@ph.autotune(D=[8], B=[4])\n"
                     "def k(X: ph.tensor[ph.f32][R, D]):\n"
                     "    r: ph.let = R\n"
                     "    d: ph.let = D\n"
                     "    t: ph.var[ph.tile[ph.f32][B * 2 - 4, D // 2]] = 1\n"
                     "    c: ph.var[ph.i32] = 0\n"
                     "    c += 2\n"
                     "    t = t * 2.0 + X[r - 1:+4, 4:+4]\n"
                     "    X[0:+B, :] = d\n");
    IrFunc *f = m->funcs[0];
    IrOp *dim = find_op(f->body, OP_DIM, 0);
    cr_assert(dim);
    cr_assert_eq(dim->param, 0);
    cr_assert_eq(dim->axis, 0);
    cr_assert_null(find_op(f->body, OP_DIM, 1), "D is specialized: a constant, not a dim");
    IrOp *st = last_op(f, 1);
    cr_assert_eq(st->kind, OP_STORE);
    cr_assert(ir_type_eq(vt(f, st->args[2]), ir_tile2(DT_F32, 4, 8)));
    cr_assert_eq(count_ops(f->body, OP_LOAD), 1);
    IrOp *ld = find_op(f->body, OP_LOAD, 0);
    cr_assert(ir_type_eq(vt(f, ld->res[0]), ir_tile2(DT_F32, 4, 4)));
    ir_module_free(m);
}

Test(locals, errors)
{
    fails(K1("    x: ph.let = 1\n"
             "    x: ph.let = 2\n"
             "    n: ph.let = 3\n"
             "    R: ph.let = 3\n"
             "    BR: ph.let = 3\n"
             "    ph: ph.let = 3\n"
             "    x = 4\n"
             "    y = 4\n"
             "    n = 4\n"
             "    v: ph.var[ph.tile[ph.f32][BR, n]] = 0.0\n"
             "    w: ph.var[ph.f16] = 0.0\n"
             "    u: ph.var[ph.tile[ph.f32][BR, BC]]\n"
             "    z: ph.let = undefined + 1\n"
             "    z2: ph.let = z * 2\n"
             "    q: ph.var[ph.tile[ph.f32][BR, 1]] = X[0:+BR, 0:+BC]\n"
             "    for i in range(4):\n"
             "        i = 1\n"
             "        j: ph.let = 1\n"
             "    j: ph.let = 2\n"
             "    for x in range(3):\n"
             "        pass\n"),
          "t.ph:7:5: error: 'x' is already declared in this scope or an enclosing one\n"
          "t.ph:8:5: error: 'n' shadows a parameter\n"
          "t.ph:9:5: error: 'R' shadows a dimension name\n"
          "t.ph:10:5: error: 'BR' shadows a meta-parameter\n"
          "t.ph:11:5: error: 'ph' shadows the namespace alias\n"
          "t.ph:12:5: error: 'x' is not a var; declare it with ph.var to assign to it\n"
          "t.ph:13:5: error: undeclared name 'y'\n"
          "t.ph:14:5: error: cannot assign to 'n', which is a parameter\n"
          "t.ph:15:35: error: expected a compile-time integer for a tile dimension, got i32 value 'n'\n"
          "t.ph:16:15: error: scalars are i32, f32 or bool; f16 is only a tile or tensor element type\n"
          "t.ph:17:5: error: 'u' needs an initial value\n"
          "t.ph:18:17: error: undeclared name 'undefined'\n"
          "t.ph:20:41: error: cannot broadcast f32[32, 64] to f32[32, 1] (var 'q')\n"
          "t.ph:22:9: error: 'i' is not a var; declare it with ph.var to assign to it\n"
          "t.ph:25:9: error: 'x' is already declared in this scope or an enclosing one\n");
}

/* ---- expressions ---- */
Test(expr, weak_literals_and_promotion)
{
    IrModule *m = ok(K1("    h: ph.let = ph.f16(X[0:+BR, 0:+BC])\n"
                        "    h2: ph.let = h * 0.5\n"
                        "    i: ph.let = n + 0.5\n"
                        "    j: ph.let = h * a\n"
                        "    k2: ph.let = ph.bf16(h) + h\n"
                        "    q: ph.let = -1.0e30\n"
                        "    r: ph.let = n // 2 % 3\n"
                        "    X[0:+BR, 0:+BC] = h2 + ph.f32(i) + j + k2 + q + ph.f32(r)\n"));
    IrFunc *f = m->funcs[0];
    cr_assert_eq(vt(f, find_op(f->body, OP_BINARY, 0)->res[0]).dt, DT_F16, "f16 tile * literal stays f16");
    IrBlock *b = f->body;
    int seen = 0;
    for (int i = 0; i < b->nops; i++) {
        const char *nm = b->ops[i]->nres ? f->values[b->ops[i]->res[0]].name : NULL;
        if (!nm) continue;
        IrType t = vt(f, b->ops[i]->res[0]);
        if (!strcmp(nm, "i")) { cr_assert_eq(t.dt, DT_F32); seen++; }
        if (!strcmp(nm, "j")) { cr_assert(ir_type_eq(t, ir_tile2(DT_F32, 32, 64))); seen++; }
        if (!strcmp(nm, "k2")) { cr_assert_eq(t.dt, DT_F32); seen++; }
        if (!strcmp(nm, "q")) { cr_assert_eq(b->ops[i]->kind, OP_CONST); cr_assert_eq(b->ops[i]->fval, -1.0e30); seen++; }
    }
    cr_assert_eq(seen, 4);
    ir_module_free(m);
}

/* Literal arithmetic is Python's, in double: 1.0 // 0.1 is 9.0 (0.1 is a
 * little above a tenth), the remainder consistent with it, the sign of a
 * zero remainder the divisor's. */
Test(expr, literal_floordiv_and_mod_are_pythons)
{
    IrModule *m = ok(K1("    q: ph.let = 1.0 // 0.1\n"
                        "    r: ph.let = 1.0 % 0.1\n"
                        "    z: ph.let = -6.0 % 3.0\n"
                        "    w: ph.let = -1.0 // (1.0e300 * 1.0e300)\n"
                        "    X[0:+BR, 0:+BC] = X[0:+BR, 0:+BC] + q + r + z + w\n"));
    IrFunc *f = m->funcs[0];
    IrBlock *b = f->body;
    int seen = 0;
    for (int i = 0; i < b->nops; i++) {
        const char *nm = b->ops[i]->nres ? f->values[b->ops[i]->res[0]].name : NULL;
        if (!nm || b->ops[i]->kind != OP_CONST) continue;
        double v = b->ops[i]->fval;
        if (!strcmp(nm, "q")) { cr_expect_eq(v, 9.0); seen++; }
        if (!strcmp(nm, "r")) { cr_expect_eq(v, 0.09999999999999995); seen++; }
        if (!strcmp(nm, "z")) { cr_expect(v == 0 && !signbit(v), "-6.0 %% 3.0 gave %g", v); seen++; }
        if (!strcmp(nm, "w")) { cr_expect_eq(v, -1.0); seen++; }
    }
    cr_assert_eq(seen, 4);
    ir_module_free(m);
}

Test(expr, broadcasting)
{
    IrModule *m = ok(K1("    c: ph.let = X[0:+BR, 0:+1]\n"
                        "    r: ph.let = Y[0:+BC]\n"
                        "    t: ph.let = c - r\n"
                        "    X[0:+BR, 0:+BC] = t\n"));
    IrFunc *f = m->funcs[0];
    IrOp *sub = find_op(f->body, OP_BINARY, 0);
    cr_assert(ir_type_eq(vt(f, sub->res[0]), ir_tile2(DT_F32, 32, 64)));
    cr_assert(ir_type_eq(vt(f, sub->args[0]), vt(f, sub->args[1])));
    cr_assert_eq(count_ops(f->body, OP_BROADCAST), 2);
    ir_module_free(m);
}

Test(expr, operator_errors)
{
    fails(K1("    t: ph.let = X[0:+BR, 0:+BC]\n"
             "    a1: ph.let = n / n\n"
             "    a2: ph.let = n / a\n"
             "    a3: ph.let = t ** 2\n"
             "    a4: ph.let = t @ t\n"
             "    a5: ph.let = n << 1\n"
             "    a6: ph.let = (n < 1) + 1\n"
             "    a7: ph.let = n and True\n"
             "    a8: ph.let = t + X[0:+BC, 0:+BR]\n"
             "    a9: ph.let = not n\n"
             "    b1: ph.let = 1 // 0\n"
             "    b2: ph.let = \"s\"\n"
             "    b3: ph.let = ph.ctx.block.w\n"
             "    b4: ph.let = ph.ctx.thread.x\n"
             "    b5: ph.let = ph.f16\n"
             "    b6: ph.let = 3000000000 + n\n"
             "    t + 1\n"),
          "t.ph:7:20: error: '/' on two i32 values; use '//'\n"
          "t.ph:9:20: error: operator '**' is not supported\n"
          "t.ph:10:20: error: operator '@' is not supported\n"
          "t.ph:11:20: error: operator '<<' is not supported\n"
          "t.ph:12:26: error: '+' does not take bool operands, got bool and i32\n"
          "t.ph:13:20: error: 'and' needs bool operands, got i32 and bool\n"
          "t.ph:14:20: error: shapes f32[32, 64] and f32[64, 32] do not broadcast in '+'\n"
          "t.ph:15:18: error: 'not' needs a bool operand, got i32\n"
          "t.ph:16:20: error: division by zero\n"
          "t.ph:17:18: error: a string is not a value here\n"
          "t.ph:18:18: error: expected x, y or z after ph.ctx.block, got 'w'\n"
          "t.ph:19:18: error: expected ph.ctx.block.x|y|z or ph.ctx.grid.x|y|z\n"
          "t.ph:20:18: error: 'ph.f16' is not a value\n"
          "t.ph:21:29: error: integer 3000000000 does not fit in i32\n"
          "t.ph:22:7: error: expression result is unused\n");
}

Test(expr, ctx_and_logic)
{
    IrModule *m = ok(K1("    b: ph.let = ph.ctx.block.z + ph.ctx.grid.y\n"
                        "    c: ph.let = not (b < 3 and b > 1 or b == 2)\n"
                        "    X[0:+1, 0:+1] = ph.where(c, 1.0, 2.0)\n"));
    IrFunc *f = m->funcs[0];
    IrOp *bid = find_op(f->body, OP_BLOCK_ID, 0), *gd = find_op(f->body, OP_GRID_DIM, 0);
    cr_assert_eq(bid->axis, 2);
    cr_assert_eq(gd->axis, 1);
    IrOp *sel = find_op(f->body, OP_SELECT, 0);
    cr_assert_eq(vt(f, sel->res[0]).rank, 0, "all scalars: a scalar select");
    cr_assert_eq(count_ops(f->body, OP_UNARY), 1);
    ir_module_free(m);
}

/* ---- windows ---- */
Test(windows, loads_and_stores)
{
    IrModule *m = ok(K1("    row: ph.let = X[n, 0:+BC]\n"
                        "    y: ph.let = Y[n:+16]\n"
                        "    X[n:+BR, 0:+BC] += row\n"
                        "    Y[0:+16] = y * 2.0\n"
                        "    Y[3] = 1\n"));
    IrFunc *f = m->funcs[0];
    IrOp *l0 = find_op(f->body, OP_LOAD, 0), *l1 = find_op(f->body, OP_LOAD, 1), *l2 = find_op(f->body, OP_LOAD, 2);
    cr_assert(ir_type_eq(vt(f, l0->res[0]), ir_tile2(DT_F32, 1, 64)));
    cr_assert(ir_type_eq(vt(f, l1->res[0]), ir_tile1(DT_F16, 16)));
    cr_assert_eq(l1->param, 1);
    cr_assert_eq(l1->nargs, 1);
    cr_assert(ir_type_eq(vt(f, l2->res[0]), ir_tile2(DT_F32, 32, 64)), "+= loads the window");
    IrOp *s2 = find_op(f->body, OP_STORE, 2);
    cr_assert(ir_type_eq(vt(f, s2->args[1]), ir_tile1(DT_F16, 1)));
    ir_module_free(m);
}

Test(windows, errors)
{
    fails(K1("    a1: ph.let = X[0:+BR]\n"
             "    a2: ph.let = X[0:BR, 0:+1]\n"
             "    a3: ph.let = X[0:+n, 0:+1]\n"
             "    a4: ph.let = X[:, 0:+1]\n"
             "    a5: ph.let = X[0.5, 0:+1]\n"
             "    a6: ph.let = X[0:+0, 0:+1]\n"
             "    a7: ph.let = X\n"
             "    a8: ph.let = n[0]\n"
             "    X[0:+BR, 0:+1] = X[0:+BR, 0:+BC]\n"
             "    Y[0:+4] = n < 1\n"),
          "t.ph:6:18: error: 'X' has rank 2: write X[r:+n, c:+m], got 1 subscript\n"
          "t.ph:7:20: error: expected a window 'start:+length' (or ':' for the whole dimension); 'start:stop' slices are not supported\n"
          "t.ph:8:22: error: expected a compile-time integer for the window length, got i32 value 'n'\n"
          "t.ph:9:20: error: ':' takes the whole of dimension 'R', which is known only at run time; write 'start:+length' with a compile-time length\n"
          "t.ph:10:20: error: expected an i32 scalar for the window start, got f32\n"
          "t.ph:11:22: error: the window length must be at least 1, got 0\n"
          "t.ph:12:18: error: tensor 'X' is not a value; load a window of it, e.g. X[r:+n, c:+m]\n"
          "t.ph:13:18: error: only tensor parameters can be indexed\n"
          "t.ph:14:22: error: cannot broadcast f32[32, 64] to f32[32, 1] (the window of 'X')\n"
          "t.ph:15:17: error: cannot convert bool to f16[4] (the window of 'Y')\n");
}

/* A kernel with f32 [R, C] X, rank-1 f16 H and i32 I, scalar n, metas BR, BC. */
#define KA(body) HEAD "@ph.kernel\n@ph.autotune(BR=[32], BC=[64])\n" \
    "def k(X: ph.tensor[ph.f32][R, C], H: ph.tensor[ph.f16][C], I: ph.tensor[ph.i32][C], n: ph.i32):\n" body

Test(windows, atomic_add)
{
    IrModule *m = ok(KA("    t: ph.let = X[n:+BR, 0:+BC]\n"
                        "    ph.atomic_add(X[n:+BR, 0:+BC], t * 2.0)\n"
                        "    ph.atomic_add(X[n:+BR, 0:+1], ph.rowsum(t))\n"
                        "    ph.atomic_add(I[n:+16], 1)\n"
                        "    ph.atomic_add(X[n, :+BC], ph.iota(1) + n)\n"
                        "    ph.atomic_add(I[3], 2.5)\n"));
    IrFunc *f = m->funcs[0];
    cr_assert_eq(count_ops(f->body, OP_ATOMIC_ADD), 5);
    cr_assert_eq(count_ops(f->body, OP_STORE), 0);
    IrOp *a0 = find_op(f->body, OP_ATOMIC_ADD, 0), *a1 = find_op(f->body, OP_ATOMIC_ADD, 1);
    IrOp *a2 = find_op(f->body, OP_ATOMIC_ADD, 2), *a3 = find_op(f->body, OP_ATOMIC_ADD, 3);
    IrOp *a4 = find_op(f->body, OP_ATOMIC_ADD, 4);
    cr_assert(a0->param == 0 && a0->nargs == 3 && a0->nres == 0);
    cr_assert(ir_type_eq(vt(f, a0->args[2]), ir_tile2(DT_F32, 32, 64)));
    cr_assert(ir_type_eq(vt(f, a1->args[2]), ir_tile2(DT_F32, 32, 1)), "a [BR, 1] window takes the row sums as they are");
    cr_assert_eq(f->values[a1->args[2]].def->kind, OP_REDUCE);
    cr_assert(a2->param == 2 && a2->nargs == 2);
    cr_assert(ir_type_eq(vt(f, a2->args[1]), ir_tile1(DT_I32, 16)), "the scalar is splat to the window");
    cr_assert(ir_type_eq(vt(f, a3->args[2]), ir_tile2(DT_F32, 1, 64)), "i32 converted to X's f32, as a store converts");
    cr_assert_eq(f->values[a3->args[2]].def->kind, OP_CONVERT);
    cr_assert(ir_type_eq(vt(f, a4->args[1]), ir_tile1(DT_I32, 1)));
    cr_assert_eq(a4->loc.line, 11);
    cr_assert_eq(a4->loc.col, 5);
    ir_module_free(m);
}

Test(windows, atomic_add_errors)
{
    fails(KA("    t: ph.let = X[0:+BR, 0:+BC]\n"
             "    ph.atomic_add(X[0:+BR, 0:+BC])\n"
             "    ph.atomic_add(X[0:+BR, 0:+BC], t, t)\n"
             "    ph.atomic_add(X, t)\n"
             "    ph.atomic_add(t, 1.0)\n"
             "    ph.atomic_add(n[0], 1)\n"
             "    ph.atomic_add(Z[0:+4], 1)\n"
             "    ph.atomic_add(H[0:+16], 1.0)\n"
             "    ph.atomic_add(X[0:+16, 0:+BC], t)\n"
             "    ph.atomic_add(I[0:+4], n < 1)\n"
             "    ph.atomic_add(X[0:+BR], 1.0)\n"
             "    s: ph.let = ph.atomic_add(I[0:+4], 1)\n"
             "    ph.atomic_add(I[0:+4], value=1)\n"
             "    ph.atomic_add(I[0:+4], q)\n"),
          "t.ph:7:5: error: ph.atomic_add takes 2 arguments, got 1\n"
          "t.ph:8:5: error: ph.atomic_add takes 2 arguments, got 3\n"
          "t.ph:9:19: error: ph.atomic_add adds into a window of a tensor parameter: expected X[r:+n, c:+m] or X[i:+n] as its first argument\n"
          "t.ph:10:19: error: ph.atomic_add adds into a window of a tensor parameter: expected X[r:+n, c:+m] or X[i:+n] as its first argument\n"
          "t.ph:11:19: error: ph.atomic_add adds into a window of a tensor parameter: expected X[r:+n, c:+m] or X[i:+n] as its first argument\n"
          "t.ph:12:19: error: undeclared name 'Z'\n"
          "t.ph:13:19: error: ph.atomic_add adds into f32 or i32 tensors; 'H' is f16\n"
          "t.ph:14:36: error: cannot broadcast f32[32, 64] to f32[16, 64] (the window of 'X')\n"
          "t.ph:15:30: error: cannot convert bool to i32[4] (the window of 'I')\n"
          "t.ph:16:19: error: 'X' has rank 2: write X[r:+n, c:+m], got 1 subscript\n"
          "t.ph:17:17: error: ph.atomic_add is a statement: it adds into a tensor window and has no value\n"
          "t.ph:18:28: error: ph.atomic_add takes no keyword arguments\n"
          "t.ph:19:28: error: undeclared name 'q'\n");
}

/* ---- built-ins ---- */
Test(builtins, dot_and_friends)
{
    IrModule *m = ok(K1("    h: ph.let = ph.f16(X[0:+BR, 0:+BC])\n"
                        "    b: ph.let = ph.bf16(X[0:+BC, 0:+16])\n"
                        "    f: ph.let = X[0:+BC, 0:+16]\n"
                        "    d1: ph.let = ph.dot(h, f)\n"
                        "    d2: ph.let = ph.dot(h, b)\n"
                        "    d3: ph.let = ph.dot_t(X[0:+BR, 0:+BC], X[0:+16, 0:+BC])\n"
                        "    t: ph.let = ph.transpose(d1)\n"
                        "    e: ph.let = ph.exp(n) + ph.rsqrt(t) + ph.abs(-2)\n"
                        "    m: ph.let = ph.max(ph.rowmax(d1), ph.colmin(d3)) + ph.min(1, 2.0)\n"
                        "    s: ph.let = ph.rowsum(ph.i32(d2))\n"
                        "    X[0:+BR, 0:+16] = m + ph.f32(s) + d2 + ph.f32(ph.iota(0, 32) + ph.iota(1))\n"));
    IrFunc *f = m->funcs[0];
    IrOp *d1 = find_op(f->body, OP_DOT, 0), *d2 = find_op(f->body, OP_DOT, 1), *d3 = find_op(f->body, OP_DOT, 2);
    cr_assert(ir_type_eq(vt(f, d1->args[1]), ir_tile2(DT_F16, 64, 16)), "f32 beside f16 is rounded to f16");
    cr_assert(ir_type_eq(vt(f, d1->args[2]), ir_tile2(DT_F32, 32, 16)), "acc is a zero splat");
    cr_assert_eq(f->values[d1->args[2]].def->kind, OP_SPLAT);
    cr_assert_eq(vt(f, d2->args[0]).dt, DT_F32, "f16 with bf16: both f32");
    cr_assert_eq(vt(f, d3->args[0]).dt, DT_F32);
    cr_assert_eq(d3->flags, DOT_TRANS_B);
    cr_assert(ir_type_eq(vt(f, d3->res[0]), ir_tile2(DT_F32, 32, 16)));
    IrOp *red = find_op(f->body, OP_REDUCE, 1);
    cr_assert_eq(red->axis, 0);
    cr_assert_eq(red->sub, RED_MIN);
    IrOp *iota = find_op(f->body, OP_IOTA, 1);
    cr_assert(ir_type_eq(vt(f, iota->res[0]), ir_tile2(DT_I32, 1, 16)), "iota(1) takes the store's extent");
    ir_module_free(m);
}

Test(builtins, errors)
{
    fails(K1("    t: ph.let = X[0:+BR, 0:+BC]\n"
             "    a1: ph.let = ph.dot(t, t)\n"
             "    a2: ph.let = ph.dot(ph.i32(t), t)\n"
             "    a3: ph.let = ph.dot(Y[0:+4], t)\n"
             "    a4: ph.let = ph.transpose(n)\n"
             "    a5: ph.let = ph.exp(n < 1)\n"
             "    a6: ph.let = ph.rowsum(Y[0:+4])\n"
             "    a7: ph.let = ph.where(n, 1, 2)\n"
             "    a8: ph.let = ph.iota(2)\n"
             "    a9: ph.let = ph.iota(1) + n\n"
             "    b1: ph.let = ph.f32(n < 1)\n"
             "    b2: ph.let = ph.dot(t)\n"
             "    b3: ph.let = ph.exp(t, axis=1)\n"
             "    b4: ph.let = ph.softmax(t)\n"
             "    b5: ph.let = print(t)\n"
             "    b6: ph.let = ph.online_softmax(t, t, t, t, t)\n"
             "    b7: ph.let = ph.iota(n, 4)\n"
             "    b8: ph.let = ph.where(t > 0.0, t, n < 1)\n"
             "    ph.exp(t)\n"),
          "t.ph:7:18: error: ph.dot: the inner dimensions differ: f32[32, 64] and f32[32, 64]\n"
          "t.ph:8:18: error: ph.dot needs f16, bf16, f32 or fp8 operands, got i32[32, 64] and f32[32, 64]\n"
          "t.ph:9:18: error: ph.dot expects two 2-D tiles, got f16[4] and f32[32, 64]\n"
          "t.ph:10:18: error: ph.transpose expects a 2-D tile, got i32\n"
          "t.ph:11:18: error: ph.exp needs a number, got bool\n"
          "t.ph:12:18: error: ph.rowsum expects a 2-D i32 or float tile, got f16[4]\n"
          "t.ph:13:18: error: ph.where needs a bool condition, got i32\n"
          "t.ph:14:26: error: expected 0 or 1 for the axis of ph.iota, got 2\n"
          "t.ph:15:18: error: cannot infer the extent of ph.iota(1): nothing in this statement broadcasts it to a known shape; write ph.iota(1, n)\n"
          "t.ph:16:18: error: cannot convert bool to f32; use ph.where(c, 1, 0)\n"
          "t.ph:17:18: error: ph.dot takes 2 arguments, got 1\n"
          "t.ph:18:28: error: ph.exp takes no keyword arguments\n"
          "t.ph:19:18: error: 'ph.softmax' is not a built-in function\n"
          "t.ph:20:18: error: 'print' is not a function; only the ph built-ins can be called\n"
          "t.ph:21:18: error: ph.online_softmax is a statement: it updates its first three arguments and has no value\n"
          "t.ph:22:26: error: expected 0 or 1 for the axis of ph.iota, got i32 value 'n'\n"
          "t.ph:23:18: error: ph.where cannot choose between bool and a number\n"
          "t.ph:24:5: error: expression result is unused\n");
}

Test(builtins, online_softmax_errors)
{
    fails(K1("    acc: ph.var[ph.tile[ph.f32][BR, BC]] = 0.0\n"
             "    m: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0\n"
             "    l: ph.var[ph.tile[ph.f32][BR, 2]] = 0.0\n"
             "    s: ph.let = X[0:+BR, 0:+16]\n"
             "    v: ph.let = ph.f16(X[0:+16, 0:+BC])\n"
             "    c: ph.let = 1\n"
             "    ph.online_softmax(acc, m, l, s, v)\n"
             "    ph.online_softmax(acc, m, c, s, v)\n"
             "    ph.online_softmax(acc, m, m, s, X[0:+16, 0:+BC])\n"),
          "t.ph:12:31: error: ph.online_softmax expects an f32 [M, 1] var for l (acc is [M, N]), got f32[32, 2]\n"
          "t.ph:13:31: error: 'c' is not a var; declare it with ph.var to assign to it\n"
          "t.ph:14:37: error: ph.online_softmax expects an f16 or bf16 [K, N] tile for v (s is [M, K], acc is [M, N]), got f32[16, 64]\n");
}

/* ---- control flow ---- */
Test(control, loops_and_ifs)
{
    IrModule *m = ok(K1("    acc: ph.var[ph.f32] = 0.0\n"
                        "    cnt: ph.var[ph.i32] = 0\n"
                        "    other: ph.var[ph.i32] = 0\n"
                        "    for i in range(n, 2 * n, BR):\n"
                        "        inner: ph.var[ph.i32] = i\n"
                        "        inner += 1\n"
                        "        if i > 3:\n"
                        "            acc += 1.0\n"
                        "        elif i > 2:\n"
                        "            cnt = cnt + inner\n"
                        "        else:\n"
                        "            pass\n"
                        "    for j in range(4):\n"
                        "        pass\n"
                        "    X[0:+1, 0:+1] = acc + ph.f32(cnt + other)\n"));
    IrFunc *f = m->funcs[0];
    IrOp *loop = find_op(f->body, OP_FOR, 0);
    cr_assert_eq(loop->nres, 2, "acc and cnt are carried; inner and other are not");
    cr_assert_eq(loop->ival, 32);
    IrOp *outer_if = find_op(loop->body, OP_IF, 0);
    cr_assert_eq(outer_if->nres, 2);
    cr_assert(outer_if->els);
    IrOp *elif = find_op(outer_if->els, OP_IF, 0);
    cr_assert(elif);
    cr_assert_eq(elif->nres, 1, "the elif assigns only cnt");
    cr_assert_eq(elif->els->nops, 1);
    cr_assert_eq(elif->els->ops[0]->kind, OP_YIELD);
    IrOp *y = loop->body->ops[loop->body->nops - 1];
    cr_assert_eq(y->kind, OP_YIELD);
    cr_assert_eq(y->nargs, 2);
    IrOp *loop2 = find_op(f->body, OP_FOR, 1);
    cr_assert_eq(loop2->nres, 0);
    cr_assert_eq(loop2->ival, 1);
    ir_module_free(m);
}

Test(control, returns)
{
    IrModule *m = ok(K1("    if n > 0:\n"
                        "        return\n"
                        "        x: ph.let = 1\n"
                        "    Y[0:+1] = 1\n"));
    IrFunc *f = m->funcs[0];
    IrOp *cond = find_op(f->body, OP_IF, 0);
    cr_assert_eq(cond->body->nops, 2, "return, then the yield; the dead let emits nothing");
    cr_assert_eq(cond->body->ops[0]->kind, OP_RETURN);
    cr_assert_eq(last_op(f, 0)->kind, OP_RETURN);
    ir_module_free(m);
    fails(K1("    return\n    x: ph.let = undefined\n"), "t.ph:7:17: error: undeclared name 'undefined'\n");
}

Test(control, errors)
{
    fails(K1("    for i in range(0.5):\n"
             "        pass\n"
             "    for i in range(0, 4, 0):\n"
             "        pass\n"
             "    for i in range(0, 4, n):\n"
             "        pass\n"
             "    for i in [1, 2]:\n"
             "        pass\n"
             "    for n in range(3):\n"
             "        pass\n"
             "    if n:\n"
             "        pass\n"
             "    if X[0:+1, 0:+1] > 0.0:\n"
             "        pass\n"
             "    return 1\n"),
          "t.ph:6:20: error: expected an i32 scalar for the stop of range, got f32\n"
          "t.ph:8:26: error: the step of range must be a positive i32, got 0\n"
          "t.ph:10:26: error: expected a compile-time integer for the step of range, got i32 value 'n'\n"
          "t.ph:12:14: error: expected range(...) after 'in': a loop runs over range(stop) or range(start, stop[, step])\n"
          "t.ph:14:9: error: 'n' shadows a parameter\n"
          "t.ph:16:8: error: expected a bool scalar condition, got i32\n"
          "t.ph:18:22: error: expected a bool scalar condition, got bool[1, 1]: a condition must be the same in the whole block (use ph.where for tiles)\n"
          "t.ph:20:12: error: a kernel returns no value; write 'return'\n");
}

Test(errors, many_in_one_run_without_cascades)
{
    char *diags;
    cr_assert_null(lower(K1("    a0: ph.let = undefined\n"
                            "    b: ph.let = a0 + 1\n"
                            "    c: ph.let = b * X[0:+BR, 0:+BC]\n"
                            "    d: ph.let = n / n\n"
                            "    e: ph.let = q\n"), NULL, &diags));
    char *msgs = messages(diags);
    cr_assert_str_eq(msgs, "t.ph:6:18: error: undeclared name 'undefined'\n"
                           "t.ph:9:19: error: '/' on two i32 values; use '//'\n"
                           "t.ph:10:17: error: undeclared name 'q'\n");
    free(msgs);
    free(diags);
}

/* ---- golden files ---- */
Test(golden, files)
{
    DIR *dir = opendir("tests/sema");
    cr_assert(dir, "run from the repository root");
    struct dirent *ent;
    int n = 0;
    while ((ent = readdir(dir))) {
        size_t len = strlen(ent->d_name);
        if (len < 4 || strcmp(ent->d_name + len - 3, ".ph")) continue;
        char path[512], errpath[512];
        snprintf(path, sizeof path, "tests/sema/%s", ent->d_name);
        snprintf(errpath, sizeof errpath, "tests/sema/%.*s.err", (int)(len - 3), ent->d_name);
        char *text = tu_read_file(path), *want = tu_read_file(errpath);
        cr_assert(text && want, "%s needs %s", path, errpath);
        char *diags;
        IrModule *m = tu_compile(ent->d_name, text, NULL, &diags);
        cr_expect_str_eq(diags, want, "%s", path);
        if (*want) cr_expect_null(m, "%s", path);
        else cr_expect(m, "%s", path);
        ir_module_free(m);
        free(diags);
        free(text);
        free(want);
        n++;
    }
    closedir(dir);
    cr_assert_gt(n, 0);
}
