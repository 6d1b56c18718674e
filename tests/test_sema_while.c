/* test_sema_while.c: while loops: the IR sema builds (vars carried through
 * the condition and the body, as a for carries them), the interpreter's
 * values against plain C (trip counts read from tensors, zero among them,
 * a var declared in the body, an early return, a helper in the condition),
 * and the errors, each at its file:line:col with its caret. */
#include <criterion/criterion.h>
#include "ir/ir.h"
#include "semacheck.h"

#define HEAD "import phobos.lang as ph\n\n"

static int count_kind(const IrBlock *b, IrOpKind kind)
{
    int n = 0;
    for (int i = 0; b && i < b->nops; i++) {
        n += b->ops[i]->kind == kind;
        n += count_kind(b->ops[i]->body, kind) + count_kind(b->ops[i]->els, kind);
    }
    return n;
}

static void run(const IrModule *m, IrArg *args, int nargs, int g)
{
    char err[256];
    int grid[3] = {g, 1, 1};
    cr_assert_eq(ir_interp(m->funcs[0], args, nargs, grid, err, sizeof err), 0, "%s", err);
}

static IrArg tensor(void *data, int64_t d0, int64_t d1) { return (IrArg){.data = data, .dims = {d0, d1}}; }

/* Each block sums rows b, b+1, ... of X while fewer than P[b] rows are
 * taken and the sum stays under a limit: a scalar and a tile carried, the
 * count read from a tensor (0 and negative counts run no iteration). */
Test(while_loop, carries_scalars_and_tiles_to_a_count_read_from_a_tensor)
{
    IrModule *m = compiles(HEAD
        "@ph.kernel\n"
        "def k(P: ph.tensor[ph.i32][B], X: ph.tensor[ph.f32][R, 4], Y: ph.tensor[ph.f32][B, 4], C: ph.tensor[ph.i32][B]):\n"
        "    b: ph.let = ph.ctx.block.x\n"
        "    n: ph.var[ph.i32] = 0\n"
        "    total: ph.var[ph.f32] = 0.0\n"
        "    acc: ph.var[ph.tile[ph.f32][1, 4]] = 0.0\n"
        "    while n < P[b] and total < 20.0:\n"
        "        row: ph.let = X[b + n, 0:+4]\n"
        "        acc += row\n"
        "        total += 1.5\n"
        "        n += 1\n"
        "    C[b] = n\n"
        "    Y[b, 0:+4] = acc\n");
    cr_assert_eq(count_kind(m->funcs[0]->body, OP_WHILE), 1);
    enum { B = 5, R = 40 };
    int32_t P[B] = {3, 0, -2, 30, 1}, C[B];
    float X[R * 4], Y[B * 4];
    for (int i = 0; i < R * 4; i++) X[i] = (float)(i % 7) - 2.0f;
    IrArg args[4] = {tensor(P, B, 0), tensor(X, R, 4), tensor(Y, B, 4), tensor(C, B, 0)};
    run(m, args, 4, B);
    for (int b = 0; b < B; b++) {
        int n = 0;
        float total = 0, acc[4] = {0};
        while (n < P[b] && total < 20.0f) {
            for (int j = 0; j < 4; j++) acc[j] += b + n < R ? X[(b + n) * 4 + j] : 0.0f;
            total += 1.5f;
            n++;
        }
        cr_expect_eq(C[b], n, "C[%d] %d, want %d", b, C[b], n);
        for (int j = 0; j < 4; j++) cr_expect_eq(Y[b * 4 + j], acc[j], "Y[%d, %d]", b, j);
    }
    ir_module_free(m);
}

/* A chase through links, a helper in the condition, a while nested in a
 * for and a return inside a while. */
Test(while_loop, helpers_nesting_and_return)
{
    IrModule *m = compiles(HEAD
        "@ph.func\n"
        "def live(L, j):\n"
        "    return L[j] > 0\n"
        "\n"
        "@ph.kernel\n"
        "def k(L: ph.tensor[ph.i32][N], H: ph.tensor[ph.i32][N]):\n"
        "    b: ph.let = ph.ctx.block.x\n"
        "    j: ph.var[ph.i32] = b\n"
        "    hops: ph.var[ph.i32] = 0\n"
        "    for r in range(2):\n"
        "        while live(L, j) and hops < 5:\n"
        "            j = (j + L[j]) % N\n"
        "            hops += 1\n"
        "            if hops == 4 and b == 0:\n"
        "                H[b] = -1\n"
        "                return\n"
        "        hops += r\n"
        "    H[b] = j * 100 + hops\n");
    enum { N = 8 };
    int32_t L[N] = {2, 1, 0, 3, -1, 1, 1, 5}, H[N];
    IrArg args[2] = {tensor(L, N, 0), tensor(H, N, 0)};
    run(m, args, 2, N);
    for (int b = 0; b < N; b++) {
        int j = b, hops = 0, want = -2;
        for (int r = 0; r < 2 && want == -2; r++) {
            while (L[j] > 0 && hops < 5 && want == -2) {
                j = (j + L[j]) % N;
                hops++;
                if (hops == 4 && b == 0) want = -1;
            }
            hops += r;
        }
        if (want == -2) want = j * 100 + hops;
        cr_expect_eq(H[b], want, "H[%d] %d, want %d", b, H[b], want);
    }
    ir_module_free(m);
}

/* A var declared in the body lives until the body's end, afresh each iteration. */
Test(while_loop, body_scopes)
{
    fails_with(HEAD
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.i32][N]):\n"
        "    n: ph.var[ph.i32] = 0\n"
        "    while n < 3:\n"
        "        t: ph.let = n * 2\n"
        "        n += 1\n"
        "    X[0] = t\n",
        "t.ph:9:12: error: undeclared name 't'");
}

Test(while_loop, condition_errors)
{
    fails_with(HEAD
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.f32][N]):\n"
        "    while X[0:+4] > 0.0:\n"
        "        pass\n",
        "t.ph:5:19: error: expected a bool scalar condition, got bool[4]: a condition must be the same in the whole "
        "block (use ph.where for tiles)\n"
        "        while X[0:+4] > 0.0:\n"
        "                      ^\n");
    fails_with(HEAD
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.f32][N]):\n"
        "    n: ph.var[ph.i32] = 3\n"
        "    while n:\n"
        "        n -= 1\n",
        "t.ph:6:11: error: expected a bool scalar condition, got i32\n"
        "        while n:\n"
        "              ^\n");
    fails_with(HEAD
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.f32][N]):\n"
        "    while undefined_name < 3:\n"
        "        pass\n",
        "t.ph:5:11: error: undeclared name 'undefined_name'");
}
