/* test_sema_index.c: elements read as scalars (X[i, j] with plain indices
 * only) and windows addressed by tiles of i32 indices (gathers, scatters):
 * the IR sema builds, the interpreter's values against plain C (outside
 * the tensor reads 0, is never written), and the errors, each at its
 * file:line:col. */
#include <criterion/criterion.h>
#include "ir/ir.h"
#include "semacheck.h"

#define HEAD "import phobos.lang as ph\n\n"

/* Ops of kind in b and its regions whose first value (result, else the
 * last operand) has rank rank. */
static int count_ops(const IrFunc *f, const IrBlock *b, IrOpKind kind, int rank)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        ValueId v = op->nres ? op->res[0] : op->nargs ? op->args[op->nargs - 1] : 0;
        if (op->kind == kind && v && f->values[v].type.rank == rank) n++;
        if (op->body) n += count_ops(f, op->body, kind, rank);
        if (op->els) n += count_ops(f, op->els, kind, rank);
    }
    return n;
}

/* Runs the module's first config in the interpreter on g blocks. */
static void run(const IrModule *m, IrArg *args, int nargs, int g)
{
    char err[256];
    int grid[3] = {g, 1, 1};
    cr_assert_eq(ir_interp(m->funcs[0], args, nargs, grid, err, sizeof err), 0, "%s", err);
}

static IrArg tensor(void *data, int64_t d0, int64_t d1) { return (IrArg){.data = data, .dims = {d0, d1}}; }

/* A page table: each row's page count and its pages' starts read from a
 * tensor, as a loop bound, window starts and an if condition; an element
 * outside the table reads 0. */
Test(index, elements_are_scalars_for_loops_windows_and_ifs)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "@ph.autotune(P=[4])\n"
        "def k(BT: ph.tensor[ph.i32][B, 5], X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][B, P]):\n"
        "    b: ph.let = ph.ctx.block.x\n"
        "    acc: ph.var[ph.tile[ph.f32][1, P]] = 0.0\n"
        "    for j in range(1, BT[b, 0] + 1):\n"
        "        acc += X[BT[b, j] * P:+P]\n"
        "    if BT[b + 10, 0] == 0:\n"
        "        acc = acc * ph.f32(BT[b, 0])\n"
        "    Y[b, :] = acc\n");
    const IrFunc *f = m->funcs[0];
    cr_assert_eq(count_ops(f, f->body, OP_GATHER, 0), 4, "BT[b, 0] twice, BT[b, j], BT[b + 10, 0]: scalars");
    cr_assert_eq(count_ops(f, f->body, OP_GATHER, 2) + count_ops(f, f->body, OP_GATHER, 1), 0);
    int32_t bt[3 * 5] = {2, 1, 0, 9, 9, /* */ 1, 7, 9, 9, 9, /* */ 0, 9, 9, 9, 9};
    float x[16], y[3 * 4];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    IrArg args[] = {tensor(bt, 3, 5), tensor(x, 16, 0), tensor(y, 3, 4)};
    run(m, args, 3, 3);
    for (int b = 0; b < 3; b++)
        for (int e = 0; e < 4; e++) {
            float want = 0;
            for (int j = 1; j <= bt[b * 5]; j++) {
                int at = bt[b * 5 + j] * 4 + e;   /* page 7 runs past x's 16 elements: 0 */
                want += at < 16 ? x[at] : 0.0f;
            }
            want *= (float)bt[b * 5];
            cr_expect_eq(y[b * 4 + e], want, "Y[%d, %d] = %g, want %g", b, e, y[b * 4 + e], want);
        }
    ir_module_free(m);
}

/* Rows gathered by an i32 tile, and scattered back elsewhere: an index
 * outside the table reads 0, and a row outside is never written. */
Test(index, gathers_read_zero_and_scatters_skip_outside_indices)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "@ph.autotune(BM=[4], D=[3])\n"
        "def k(I: ph.tensor[ph.i32][M], E: ph.tensor[ph.f32][V, D], O: ph.tensor[ph.f32][M, D], S: ph.tensor[ph.f32][V, D]):\n"
        "    idx: ph.let = I[0:+BM]\n"
        "    O[0:+BM, :] = E[idx, :]\n"
        "    S[idx, 1:+2] = E[idx, 0] + 100.0\n");
    const IrFunc *f = m->funcs[0];
    cr_assert_eq(count_ops(f, f->body, OP_GATHER, 2), 2);
    cr_assert_eq(count_ops(f, f->body, OP_SCATTER, 2), 1);
    int32_t idx[4] = {2, -1, 5, 0};
    float e[5 * 3], o[4 * 3] = {0}, s[5 * 3] = {0};
    for (int i = 0; i < 15; i++) e[i] = (float)i;
    IrArg args[] = {tensor(idx, 4, 0), tensor(e, 5, 3), tensor(o, 4, 3), tensor(s, 5, 3)};
    run(m, args, 4, 1);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) {
            bool in = idx[r] >= 0 && idx[r] < 5;
            cr_expect_eq(o[r * 3 + c], in ? e[idx[r] * 3 + c] : 0.0f, "O[%d, %d]", r, c);
        }
    for (int v = 0; v < 5; v++)
        for (int c = 0; c < 3; c++) {
            bool written = (v == 2 || v == 0) && c >= 1;
            cr_expect_eq(s[v * 3 + c], written ? e[v * 3] + 100.0f : 0.0f, "S[%d, %d]", v, c);
        }
    ir_module_free(m);
}

/* Both axes gathered broadcast together; a rank-1 tensor takes the
 * index tile's shape; a gathered column beside a window of rows. */
Test(index, index_tiles_broadcast_and_gather_columns)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "@ph.autotune(BM=[2], BN=[3])\n"
        "def k(X: ph.tensor[ph.i32][R, C], V: ph.tensor[ph.i32][L], A: ph.tensor[ph.i32][BM, BN],\n"
        "      B: ph.tensor[ph.i32][BM, BN], Z: ph.tensor[ph.i32][BM, BN]):\n"
        "    r: ph.let = ph.iota(0, BM) * 2\n"
        "    c: ph.let = ph.iota(1, BN) + 1\n"
        "    A[:, :] = X[r, c]\n"
        "    B[:, :] = V[r + c]\n"
        "    Z[:, :] = X[0:+BM, ph.iota(1, BN) * 3 - 1]\n");
    int32_t x[4 * 4], v[4] = {10, 11, 12, 13}, a[6], b[6], z[6];
    for (int i = 0; i < 16; i++) x[i] = 100 + i;
    IrArg args[] = {tensor(x, 4, 4), tensor(v, 4, 0), tensor(a, 2, 3), tensor(b, 2, 3), tensor(z, 2, 3)};
    run(m, args, 5, 1);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            int ri = 2 * i, cj = j + 1, k = ri + cj, zc = 3 * j - 1;
            cr_expect_eq(a[i * 3 + j], cj < 4 ? x[ri * 4 + cj] : 0, "A[%d, %d]", i, j);
            cr_expect_eq(b[i * 3 + j], k < 4 ? v[k] : 0, "B[%d, %d]", i, j);
            cr_expect_eq(z[i * 3 + j], zc >= 0 && zc < 4 ? x[i * 4 + zc] : 0, "Z[%d, %d]", i, j);
        }
    ir_module_free(m);
}

/* ph.atomic_add through a tile of indices: every element adds, those
 * with the same indices each once, those outside not at all. */
Test(index, atomic_adds_through_indices_count_every_duplicate)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "@ph.autotune(BM=[8])\n"
        "def k(I: ph.tensor[ph.i32][M], H: ph.tensor[ph.i32][V, 2], T: ph.tensor[ph.f32][V]):\n"
        "    idx: ph.let = I[0:+BM]\n"
        "    ph.atomic_add(H[idx, 0:+2], ph.iota(1, 2) + 1)\n"
        "    ph.atomic_add(T[idx], 0.5)\n");
    cr_assert_eq(count_ops(m->funcs[0], m->funcs[0]->body, OP_SCATTER_ADD, 2), 1);
    cr_assert_eq(count_ops(m->funcs[0], m->funcs[0]->body, OP_SCATTER_ADD, 1), 1);
    int32_t idx[8] = {1, 3, 1, -2, 1, 4, 3, 0}, h[4 * 2] = {0};
    float t[4] = {0};
    IrArg args[] = {tensor(idx, 8, 0), tensor(h, 4, 2), tensor(t, 4, 0)};
    run(m, args, 3, 2);   /* two blocks: every add twice */
    static const int32_t times[4] = {1, 3, 0, 2};   /* 4 and -2 lie outside */
    for (int v = 0; v < 4; v++) {
        cr_expect_eq(h[v * 2], 2 * times[v], "H[%d, 0]", v);
        cr_expect_eq(h[v * 2 + 1], 4 * times[v], "H[%d, 1]", v);
        cr_expect_eq(t[v], 1.0f * times[v], "T[%d]", v);
    }
    ir_module_free(m);
}

Test(index, errors_name_the_subscript)
{
    static const char *const want[] = {
        "t.ph:7:19: error: expected an i32 index or an i32 tile of indices, got f32[4]\n",
        "t.ph:8:17: error: a tile of row indices beside a window of columns must be a vector ([n], [1, n] or [n, 1]), got i32[4, 4]\n",
        "t.ph:9:17: error: the row indices i32[1, 4] and the column indices i32[1, 8] do not broadcast together\n",
        "t.ph:10:17: error: the number of indices is not known here; give ph.iota its extent: ph.iota(axis, n)\n",
        "t.ph:11:33: error: cannot broadcast i32[5, 1] to f32[4, 4] (the window of 'X')\n",
        "t.ph:12:19: error: expected an i32 scalar for the window start, got i32[4]\n",
        "t.ph:13:19: error: expected an i32 scalar for the window start, got f32\n",
    };
    fails_with_all(HEAD
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.f32][R, C], I: ph.tensor[ph.i32][R]):\n"
        "    idx: ph.let = I[0:+4]\n"
        "    sq: ph.let = ph.iota(0, 4) + ph.iota(1, 4)\n"
        "    a: ph.let = X[ph.f32(idx), 0:+4]\n"
        "    b: ph.let = X[sq, 0:+4]\n"
        "    c: ph.let = X[ph.iota(1, 4), ph.iota(1, 8)]\n"
        "    d: ph.let = X[ph.iota(0), 0:+4]\n"
        "    ph.atomic_add(X[idx, 0:+4], ph.iota(0, 5))\n"
        "    e: ph.let = X[idx:+4, 0:+4]\n"
        "    f: ph.let = X[0.5, 0]\n", want, sizeof want / sizeof *want);
}
