/* test_sema_strided.c: tensors of rank 3 and 4 with strides: windows over
 * two of their axes or one, the others indexed by scalars; the IR sema
 * builds (starts for every axis, the window's axes), its text form read
 * back, the interpreter's values on views (strides that are not row-major)
 * against plain C, with every edge (outside the tensor reads 0 and is never
 * written, per axis), and the errors, each at its file:line:col. */
#include <criterion/criterion.h>
#include "ir/ir.h"
#include "semacheck.h"

#define HEAD "import phobos.lang as ph\n\n"

static const IrOp *first_op(const IrBlock *b, IrOpKind kind)
{
    for (int i = 0; i < b->nops; i++) {
        if (b->ops[i]->kind == kind) return b->ops[i];
        const IrOp *in = b->ops[i]->body ? first_op(b->ops[i]->body, kind) : NULL;
        if (in) return in;
    }
    return NULL;
}

static IrArg view(void *data, int rank, const int64_t *dims, const int64_t *strides)
{
    IrArg a = {.data = data};
    for (int i = 0; i < rank; i++) a.dims[i] = dims[i], a.strides[i] = strides ? strides[i] : 0;
    return a;
}

/* O[b, n, h, :] = 2 Q[b, h, n, :] + K[b, h, n, :] with K a transposed view
 * ([B, N, H, D] memory seen as [B, H, N, D]) and O written into a
 * [B, N, H, D] tensor: rows past N read 0 and are not written, columns past
 * D likewise, and a head index past H reads a whole window of zeros. */
Test(strided, windows_over_two_axes_of_views)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "@ph.autotune(BM=[4], BD=[4])\n"
        "def k(Q: ph.tensor[ph.f32][B, H, N, D], K: ph.tensor[ph.f32][B, H, N, D], O: ph.tensor[ph.f32][B, N, H, D]):\n"
        "    m0: ph.let = ph.ctx.block.x * BM\n"
        "    h: ph.let = ph.ctx.block.y\n"
        "    z: ph.let = ph.ctx.block.z\n"
        "    q: ph.let = Q[z, h, m0:+BM, 0:+BD]\n"
        "    O[z, m0:+BM, h, 0:+BD] = q * 2.0 + K[z, h, m0:+BM, 0:+BD] + Q[z, h + 1, m0:+BM, 0:+BD]\n");
    const IrFunc *f = m->funcs[0];
    const IrOp *ld = first_op(f->body, OP_LOAD), *st = first_op(f->body, OP_STORE);
    cr_assert(ld && st);
    cr_expect_eq(ld->nargs, 4);
    cr_expect_eq(ld->window_axes, 0xc);
    cr_expect_eq(st->window_axes, 0xa);
    cr_expect_eq(ir_vtype(f, ld->res[0]).rank, 2);
    /* the text form says the axes and reads back the same */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ir_print_func(out, f);
    fclose(out);
    cr_expect(strstr(text, "axes 2 3 : f32[4, 4]"), "%s", text);
    cr_expect(strstr(text, "axes 1 3"), "%s", text);
    char err[256];
    IrModule *back = ir_parse(text, err, sizeof err);
    cr_assert_not_null(back, "%s", err);
    cr_expect_eq(ir_verify(back->funcs[0], err, sizeof err), 0, "%s", err);
    cr_expect_eq(first_op(back->funcs[0]->body, OP_STORE)->window_axes, 0xa);
    ir_module_free(back);
    free(text);

    enum { B = 2, H = 3, N = 6, D = 3 };
    float q[B * H * N * D], kmem[B * N * H * D], o[B * N * H * D];
    for (int i = 0; i < B * H * N * D; i++) q[i] = (float)i, kmem[i] = (float)(1000 + i), o[i] = -1.0f;
    int64_t dims[4] = {B, H, N, D}, odims[4] = {B, N, H, D};
    int64_t kst[4] = {N * H * D, D, H * D, 1};   /* [B, N, H, D] memory seen as [B, H, N, D] */
    IrArg args[] = {view(q, 4, dims, NULL), view(kmem, 4, dims, kst), view(o, 4, odims, NULL)};
    int grid[3] = {2, H + 1, B};   /* rows 0..7 (past N), heads 0..3 (one past H) */
    cr_assert_eq(ir_interp(f, args, 3, grid, err, sizeof err), 0, "%s", err);
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++)
            for (int h = 0; h < H; h++)
                for (int d = 0; d < D; d++) {
                    double next = h + 1 < H ? q[((b * H + h + 1) * N + n) * D + d] : 0.0;
                    double want = 2.0 * q[((b * H + h) * N + n) * D + d] + kmem[((b * N + n) * H + h) * D + d] + next;
                    cr_expect_float_eq(o[((b * N + n) * H + h) * D + d], want, 1e-6, "O[%d, %d, %d, %d]", b, n, h, d);
                }
    ir_module_free(m);
}

/* A window along one axis is a 1-D tile; one along axes 0 and 2 of a
 * rank-3 tensor with the last two swapped in memory; stores through a
 * scalar index outside the tensor write nothing. */
Test(strided, windows_along_one_axis_and_outer_axes)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.f32][G, M, C], Y: ph.tensor[ph.f32][G, C], Z: ph.tensor[ph.f32][G, M, C]):\n"
        "    g: ph.let = ph.ctx.block.x\n"
        "    Y[g, 0:+8] = X[g, 1, 0:+8]\n"
        "    Z[0:+4, 2, 0:+8] = X[0:+4, 0, 0:+8] + 1.0\n"
        "    Z[g + 5, 0, 0:+8] = X[g, 1, 0:+8]\n");
    const IrFunc *f = m->funcs[0];
    cr_expect_eq(ir_vtype(f, first_op(f->body, OP_LOAD)->res[0]).rank, 1);
    enum { G = 3, M = 4, C = 5 };
    float x[G * M * C], y[G * C], z[G * M * C];
    for (int i = 0; i < G * M * C; i++) x[i] = (float)i, z[i] = -1.0f;
    for (int i = 0; i < G * C; i++) y[i] = -1.0f;
    int64_t dims[3] = {G, M, C}, st[3] = {M * C, 1, M}, ydims[2] = {G, C};
    IrArg args[] = {view(x, 3, dims, st), view(y, 2, ydims, NULL), view(z, 3, dims, NULL)};
    char err[256];
    int grid[3] = {G, 1, 1};
    cr_assert_eq(ir_interp(f, args, 3, grid, err, sizeof err), 0, "%s", err);
    for (int g = 0; g < G; g++)
        for (int c = 0; c < C; c++) {
            cr_expect_float_eq(y[g * C + c], x[g * M * C + 1 + c * M], 1e-6, "Y[%d, %d]", g, c);
            cr_expect_float_eq(z[(g * M + 2) * C + c], x[g * M * C + c * M] + 1.0f, 1e-6, "Z[%d, 2, %d]", g, c);
            for (int r = 0; r < M; r++)
                if (r != 2) cr_expect_float_eq(z[(g * M + r) * C + c], -1.0f, 0, "Z[%d, %d, %d] written", g, r, c);
        }
    ir_module_free(m);
}

Test(strided, errors_name_their_place)
{
    fails_with(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][A, B, C, D, E]):\n    pass\n",
               "t.ph:4:10: error: tensor 'X' must have rank 1 to 4, got 5 dimensions");
    fails_with(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][A, B, C]):\n    y: ph.let = X[0:+2, 0:+2, 0:+2]\n",
               "t.ph:5:17: error: a window of the rank-3 tensor 'X' runs along one or two axes, the others indexed by scalars; "
               "it has 3 windows");
    fails_with(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][A, B, C]):\n    y: ph.let = X[0, 1, 2]\n",
               "t.ph:5:17: error: a window of the rank-3 tensor 'X' runs along one or two axes, the others indexed by scalars; "
               "it has 0 windows");
    fails_with(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][A, B, C]):\n    y: ph.let = X[ph.iota(1, 4), 0, 0:+4]\n",
               "t.ph:5:19: error: 'X' has rank 3: its subscripts are i32 scalars and windows, not tiles of indices");
    fails_with(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][A, B, C, D]):\n    X[0, 0:+4] = 1.0\n",
               "t.ph:5:5: error: 'X' has rank 4: write X[z, h, r:+n, c:+m], got 2 subscripts");
    fails_with(HEAD "@ph.kernel\ndef k(X: ph.tensor[ph.f32][A, B, C, D]):\n    X[0, 0, 0:+4, :] = 1.0\n",
               "t.ph:5:19: error: ':' takes the whole of dimension 'D', which is known only at run time");
}
