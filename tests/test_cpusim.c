/* test_cpusim.c: the code generator's output run on the CPU executor
 * (tests/cpusim/) against the interpreter, so the back end is checked
 * without a GPU. Every config of every kernel of tests/gpu/ops.ph runs on
 * the same random inputs both ways; every tensor must agree (within the
 * tolerances of test_gpu_ops), and the poisoned guard zones around each
 * tensor must be untouched, so a store outside a tensor is caught even
 * where the interpreter would not show it. The attention tutorial's four
 * kernels (tensor cores, online softmax, causal masks) run the same way at
 * a small size, and tensor-core dots whose operands lie in every form of
 * swizzled shared memory. The atomic adds of tests/gpu/atomics.ph, many
 * blocks and threads into overlapping windows, must give a plain C
 * reference exactly. Every past finding of the random-program
 * fuzzer (the .ph files of tests/difftest/regressions/) runs here too,
 * through the difftest engine, on the inputs `cpufuzz --regress` gives
 * it. The
 * executor's own checks of bad launches are tested too, and its model of
 * cp.async on hand-written LLVM IR (a double-buffered pipeline right, then
 * each of its barriers and waits taken out; every copy form's zero fill),
 * and of the GPU's fused multiply-adds. The code generator's emitted
 * shared-memory addresses are checked against layout.c's map. */
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <sys/mman.h>

#include "atomicharness.h"
#include "attention/attention_host.h"
#include "codegen/cg.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "nvidia/mma_layout.h"
#include "cpusim.h"
#include "difftest.h"
#include "opsharness.h"
#include "testutil.h"

#define GUARD_BYTES 256
#define GUARD_FILL 0xa5
#define PAGE 4096

static cpusim *load(const IrModule *m)
{
    char err[1024];
    cpusim *s = NULL;
    ph_status st = cpusim_load(m, &s, err, sizeof err);
    cr_assert_eq(st, PH_OK, "cpusim_load: %s", err);
    return s;
}

/* A tensor's memory: bytes bytes with at least GUARD_BYTES of fill on
 * either side, between two inaccessible pages, so a store just outside the
 * tensor changes the fill and one further out faults. */
typedef struct { unsigned char *map, *data; size_t span, bytes; } Zone;

static Zone zone_new(const void *init, size_t bytes)
{
    Zone z = {.bytes = bytes};
    z.span = (bytes + 2 * GUARD_BYTES + PAGE - 1) / PAGE * PAGE;
    z.map = mmap(NULL, z.span + 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(z.map, MAP_FAILED);
    mprotect(z.map, PAGE, PROT_NONE);
    mprotect(z.map + PAGE + z.span, PAGE, PROT_NONE);
    memset(z.map + PAGE, GUARD_FILL, z.span);
    z.data = z.map + PAGE + z.span - GUARD_BYTES - bytes;
    memcpy(z.data, init, bytes);
    return z;
}

/* The offset from the tensor's start of the first fill byte that changed; 0 if none. */
static long zone_damage(const Zone *z)
{
    for (unsigned char *p = z->map + PAGE; p < z->map + PAGE + z->span; p++) {
        if (p == z->data) p += z->bytes;
        if (p < z->map + PAGE + z->span && *p != GUARD_FILL) return (long)(p - z->data);
    }
    return 0;
}

static void zone_free(Zone *z) { munmap(z->map, z->span + 2 * PAGE); }

/* Runs config f on the executor and in the interpreter over a 4 x 3 grid;
 * returns the elements that differ plus the tensors whose guards changed. */
static int run_config(cpusim *s, const IrFunc *f)
{
    int n = f->nparams, bad = 0;
    IrArg iargs[16];
    ph_arg sargs[16];
    void *host[16] = {0};
    Zone zone[16] = {{0}};
    size_t count[16] = {0};
    cr_assert_leq(n, 16);
    host_args(f, iargs, host, count);
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            sargs[i] = p->dt == DT_I32 ? ph_i32(iargs[i].i) : ph_f32(iargs[i].f);
            continue;
        }
        zone[i] = zone_new(host[i], count[i] * elem_bytes(p->dt));
        ph_devptr ptr = (ph_devptr)(uintptr_t)zone[i].data;
        sargs[i] = p->rank == 2 ? ph_tensor2(ptr, iargs[i].dims[0], iargs[i].dims[1]) : ph_tensor1(ptr, iargs[i].dims[0]);
    }
    char err[512];
    unsigned grid[3] = {4, 3, 1};
    ph_status st = cpusim_launch(s, f->name, grid, sargs, n, err, sizeof err);
    if (st != PH_OK) {
        cr_log_error("%s", err);
        bad++;
    }
    int igrid[3] = {4, 3, 1};
    cr_assert_eq(ir_interp(f, iargs, n, igrid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) continue;
        if (st == PH_OK) {
            bad += compare_tensor("cpusim", f, p, host[i], zone[i].data, count[i]);
            long at = zone_damage(&zone[i]);
            if (at) {
                cr_log_error("%s: %s: written at byte %ld, outside its %zu bytes", f->name, p->name, at, zone[i].bytes);
                bad++;
            }
        }
        free(host[i]);
        zone_free(&zone[i]);
    }
    return bad;
}

/* Every config of the program at path, at least min_configs of them, on
 * the executor and in the interpreter. */
static void every_config_matches(const char *path, int min_configs)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, min_configs);
    cpusim *s = load(m);
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        int bad = run_config(s, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements or guards differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_expect_eq(failed, 0, "%d of %d configs differ from the interpreter", failed, m->nfuncs);
    cpusim_free(s);
    ir_module_free(m);
}

Test(cpusim, every_ops_config_matches_the_interpreter, .timeout = 600) { every_config_matches(OPS, 21); }

/* The GEMM the bench times, every config (tile shapes, warp grids, stage
 * counts) at the ops dims (M 100, N 72, K 48: windows past every edge and
 * a K that is no multiple of BK). */
Test(cpusim, every_gemm_config_matches_the_interpreter, .timeout = 600) { every_config_matches("bench/gemm_tuned.ph", 8); }

/* ---- atomic adds ---- */

/* Runs config f of tests/gpu/atomics.ph on the executor, each tensor
 * between guard zones, and in the interpreter; returns the elements that
 * differ from the plain C reference plus the tensors whose guards changed. */
static int run_atomic_config(cpusim *s, const IrFunc *f)
{
    AtomicRun r;
    atomic_run(f, &r);
    ph_arg sargs[AT_MAX_PARAMS];
    Zone zone[AT_MAX_PARAMS] = {{0}};
    for (int i = 0; i < r.n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            sargs[i] = p->dt == DT_I32 ? ph_i32(r.args[i].i) : ph_f32(r.args[i].f);
            continue;
        }
        zone[i] = zone_new(r.args[i].data, r.bytes[i]);
        ph_devptr ptr = (ph_devptr)(uintptr_t)zone[i].data;
        sargs[i] = p->rank == 2 ? ph_tensor2(ptr, r.args[i].dims[0], r.args[i].dims[1]) : ph_tensor1(ptr, r.args[i].dims[0]);
    }
    char err[512];
    int bad = 0;
    ph_status st = cpusim_launch(s, f->name, r.grid, sargs, r.n, err, sizeof err);
    if (st != PH_OK) {
        cr_log_error("%s", err);
        bad++;
    }
    int grid[3] = {(int)r.grid[0], (int)r.grid[1], (int)r.grid[2]};
    cr_assert_eq(ir_interp(f, r.args, r.n, grid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < r.n; i++) {
        if (!f->params[i].is_tensor) continue;
        bad += atomic_compare("interpreter", f, &r, i, r.args[i].data);
        if (st == PH_OK) bad += atomic_compare("cpusim", f, &r, i, zone[i].data);
        long at = zone_damage(&zone[i]);
        if (at) {
            cr_log_error("%s: %s: written at byte %ld, outside its %zu bytes", f->name, f->params[i].name, at, zone[i].bytes);
            bad++;
        }
        zone_free(&zone[i]);
    }
    at_free(&r);
    return bad;
}

/* Several blocks, and several threads of each, add into overlapping
 * windows of f32 and i32 tensors, windows that cross the tensors' edges,
 * from loads, splats, reduction slices and tensor-core results (idle warps
 * included): every element must be the plain C reference's, exactly (the
 * inputs are integers), so an add made twice, lost, or landing outside
 * the tensor shows. */
Test(cpusim, atomic_adds_match_a_plain_c_reference, .timeout = 600)
{
    IrModule *m = driver_compile_file(ATOMICS, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_geq(m->nfuncs, 10);
    cpusim *s = load(m);
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        int bad = run_atomic_config(s, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements or guards differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_expect_eq(failed, 0, "%d of %d configs differ from the reference", failed, m->nfuncs);
    cpusim_free(s);
    ir_module_free(m);
}

/* ---- the attention tutorial ---- */

/* The executor as one of examples/host.h's launchers. */
static int sim_launch(const HostLauncher *l, const IrFunc *f, const IrArg *args, int nargs, const int grid[3], char *err,
                      size_t errlen)
{
    ph_arg a[64];
    if (nargs > 64) return 1;
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) a[i] = p->dt == DT_I32 ? ph_i32(args[i].i) : ph_f32(args[i].f);
        else a[i] = ph_tensor2((uintptr_t)args[i].data, args[i].dims[0], p->rank == 2 ? args[i].dims[1] : 1);
    }
    unsigned g[3] = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
    return cpusim_launch(l->ctx, f->name, g, a, nargs, err, errlen) != PH_OK;
}

/* The forward and backward passes of path's kernels at Z 1, H 2, N_CTX
 * 128, HEAD_DIM 64, causal and not, on the executor and in the interpreter
 * from the same inputs: every output and gradient must agree. */
static void attention_matches_the_interpreter(const char *path)
{
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    AttnSize size = {1, 2, 128, 64, 0.5};
    AttnKernels k;
    cr_assert_eq(attn_pick(m, &size, &k), 0);
    cpusim *s = load(m);
    HostLauncher sim = {"cpusim", sim_launch, s};
    size_t rows = (size_t)(size.z * size.h * size.n), elems = rows * (size_t)size.d;
    /* AttnBufs' order: q k v dout, then what the kernels write: o dq dk dv lse delta */
    const char *names[10] = {"Q", "K", "V", "dO", "O", "dQ", "dK", "dV", "L", "Delta"};
    const IrFunc *writer[10] = {NULL, NULL, NULL, NULL, k.fwd, k.dq, k.dkdv, k.dkdv, k.fwd, k.delta};
    int failed = 0;
    for (int causal = 0; causal < 2; causal++) {
        void *want[10];
        Zone got[10];
        HostRng r;
        host_rng_seed(&r, 42 + (uint64_t)causal);
        for (int i = 0; i < 10; i++) {
            DType dt = i < 8 ? DT_F16 : DT_F32;
            size_t n = i < 8 ? elems : rows;
            want[i] = host_alloc(dt, n);
            if (i < 4) host_fill_normal(dt, want[i], n, 0.0, i == 3 ? 1.0 : 0.5, &r);
            else host_poison(dt, want[i], n);
            got[i] = zone_new(want[i], n * host_dtype_size(dt));
        }
        AttnBufs wb = {want[0], want[1], want[2], want[3], want[4], want[5], want[6], want[7], want[8], want[9]};
        AttnBufs gb = {(uint16_t *)got[0].data, (uint16_t *)got[1].data, (uint16_t *)got[2].data, (uint16_t *)got[3].data,
                       (uint16_t *)got[4].data, (uint16_t *)got[5].data, (uint16_t *)got[6].data, (uint16_t *)got[7].data,
                       (float *)got[8].data, (float *)got[9].data};
        cr_assert_eq(attn_run(&host_interpreter, &k, &size, causal, &wb), 0);
        cr_assert_eq(attn_run(&sim, &k, &size, causal, &gb), 0, "the executor refused a launch (see above)");
        for (int i = 4; i < 10; i++) {
            IrParam p = {.name = names[i], .is_tensor = true, .dt = i < 8 ? DT_F16 : DT_F32};
            size_t n = i < 8 ? elems : rows;
            /* O reaches Delta and the gradients rounded to f16, where both
             * sides may be a rounding apart: sums over D of such terms differ
             * by more than compare_tensor's 1e-4 (the tutorial's own check
             * allows 1e-2) */
            int bad = compare_tensor_within(causal ? "cpusim (causal)" : "cpusim", writer[i], &p, want[i], got[i].data, n,
                                            1e-3, i < 8 ? 8e-3 : 2e-3);
            long at = zone_damage(&got[i]);
            if (at) cr_log_error("%s: written at byte %ld, outside its %zu bytes", names[i], at, got[i].bytes);
            failed += bad || at;
        }
        for (int i = 0; i < 10; i++) {
            free(want[i]);
            zone_free(&got[i]);
        }
    }
    cr_expect_eq(failed, 0, "%d of 12 outputs differ from the interpreter", failed);
    cpusim_free(s);
    ir_module_free(m);
}

Test(cpusim, attention_tutorial_matches_the_interpreter, .timeout = 600)
{
    attention_matches_the_interpreter("examples/attention/attention.ph");
}

/* The fused backward: dQ added up by the dK/dV kernel's atomic adds. */
Test(cpusim, fused_attention_matches_the_interpreter, .timeout = 600)
{
    attention_matches_the_interpreter("tests/gpu/attention_fused.ph");
}

/* ---- bad launches: a status and a message, never a crash ---- */

static const char *TINY =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def scale(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * 128\n"
    "    Y[i0:+128] = X[i0:+128] * a\n";

Test(cpusim, bad_launches_are_refused_with_a_message)
{
    char *diags = NULL;
    IrModule *m = tu_compile("tiny.ph", TINY, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cpusim *s = load(m);
    float init[200];
    for (int i = 0; i < 200; i++) init[i] = (float)i;
    Zone xz = zone_new(init, sizeof init);
    for (int i = 0; i < 200; i++) init[i] = -1;
    Zone yz = zone_new(init, sizeof init);
    float *x = (float *)xz.data, *y = (float *)yz.data;
    ph_arg args[3] = {ph_tensor1((uintptr_t)x, 200), ph_tensor1((uintptr_t)y, 200), ph_f32(0.5f)};
    unsigned grid[3] = {2, 1, 1}, none[3] = {0, 1, 1};
    char err[256];
    const char *entry = m->funcs[0]->name;

    cr_expect_eq(cpusim_launch(s, "nosuch", grid, args, 3, err, sizeof err), PH_ERR_NOT_FOUND);
    cr_expect(strstr(err, "nosuch"), "%s", err);
    cr_expect_eq(cpusim_launch(s, entry, grid, args, 2, err, sizeof err), PH_ERR_ARGS);
    cr_expect(strstr(err, "takes 3 arguments, got 2"), "%s", err);
    ph_arg swapped[3] = {args[0], args[2], args[1]};
    cr_expect_eq(cpusim_launch(s, entry, grid, swapped, 3, err, sizeof err), PH_ERR_ARGS);
    cr_expect(strstr(err, "argument 2 is not a tensor"), "%s", err);
    ph_arg null_tensor[3] = {ph_tensor1(0, 200), args[1], args[2]};
    cr_expect_eq(cpusim_launch(s, entry, grid, null_tensor, 3, err, sizeof err), PH_ERR_INVALID);
    cr_expect_eq(cpusim_launch(s, entry, none, args, 3, err, sizeof err), PH_ERR_GRID);
    cr_expect_eq(cpusim_launch(NULL, entry, grid, args, 3, err, sizeof err), PH_ERR_INVALID);
    for (int i = 0; i < 200; i++) cr_assert_eq(y[i], -1, "a refused launch wrote Y[%d]", i);

    cr_assert_eq(cpusim_launch(s, entry, grid, args, 3, err, sizeof err), PH_OK, "%s", err);
    for (int i = 0; i < 200; i++) cr_assert_eq(y[i], 0.5f * (float)i, "Y[%d] = %g", i, y[i]);
    cr_expect_eq(zone_damage(&yz), 0, "Y written outside its 200 elements");
    zone_free(&xz);
    zone_free(&yz);
    cpusim_free(s);
    ir_module_free(m);
    cpusim *none_loaded = (cpusim *)1;
    cr_expect_eq(cpusim_load(NULL, &none_loaded, err, sizeof err), PH_ERR_INVALID);
    cr_expect_null(none_loaded);
}

/* ---- contraction: a*b - c rounded once, as on the GPU ---- */

static const char *MULSUB =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def mulsub(A: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], b: ph.f32, c: ph.f32):\n"
    "    Y[0:+128] = A[0:+128] * b - c\n";

/* With c near every a*b, a*b - c shows the product's rounding: the
 * interpreter rounds the product first, the executor fuses the two into
 * one fma as the NVPTX back end does. */
Test(cpusim, a_multiply_feeding_a_subtract_is_fused)
{
    char *diags = NULL;
    IrModule *m = tu_compile("mulsub.ph", MULSUB, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cpusim *s = load(m);
    static float a[128], y[128], yi[128];
    const float b = 1.0f / 3.0f, c = b;
    for (int i = 0; i < 128; i++) {
        a[i] = 1.0f + (float)i * 0x1p-20f;
        y[i] = yi[i] = -1;
    }
    ph_arg args[4] = {ph_tensor1((uintptr_t)a, 128), ph_tensor1((uintptr_t)y, 128), ph_f32(b), ph_f32(c)};
    unsigned grid[3] = {1, 1, 1};
    char err[256];
    cr_assert_eq(cpusim_launch(s, m->funcs[0]->name, grid, args, 4, err, sizeof err), PH_OK, "%s", err);
    IrArg iargs[4] = {{a, {128, 0}, 0, 0}, {yi, {128, 0}, 0, 0}, {.f = b}, {.f = c}};
    int igrid[3] = {1, 1, 1};
    cr_assert_eq(ir_interp(m->funcs[0], iargs, 4, igrid, err, sizeof err), 0, "%s", err);
    int differ = 0;
    for (int i = 0; i < 128; i++) {
        volatile float product = a[i] * b;   /* rounded, whatever the host compiler contracts */
        cr_expect_eq(yi[i], product - c, "interpreter: Y[%d] = %a, not %a", i, yi[i], product - c);
        cr_expect_eq(y[i], fmaf(a[i], b, -c), "executor: Y[%d] = %a, not fma's %a", i, y[i], fmaf(a[i], b, -c));
        differ += y[i] != yi[i];
    }
    cr_expect_gt(differ, 64, "fused and unfused agree on %d of 128", 128 - differ);
    cpusim_free(s);
    ir_module_free(m);
}

/* Each regression file is a program and its run spec (its "# run:" line);
 * every config must agree with the interpreter on the inputs of seed 1. */
Test(cpusim, the_fuzzer_regressions_match_the_interpreter, .timeout = 600)
{
    const char *dir = "tests/difftest/regressions";
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".ph")) continue;
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *src = tu_read_file(path);
        cr_assert_not_null(src, "%s", path);
        DtSpec spec;
        cr_assert_eq(dt_spec_from_source(&spec, src, err, sizeof err), 0, "%s: %s", path, err);
        IrModule *m = driver_compile_file(path, NULL, stderr);
        cr_assert_not_null(m, "%s", path);
        DtReport rep;
        DtVerdict v = dt_compare_module(m, src, &spec, &dt_cpusim_backend, 1, NULL, &rep);
        cr_expect_eq(v, DT_SAME, "%s: %s in %s: %s", path, dt_verdict_name(v), rep.config, rep.message);
        ir_module_free(m);
        free(src);
        files++;
    }
    closedir(d);
    cr_expect_gt(files, 0);
}

/* ---- swizzled shared memory ---- */

/* Tensor-core dots whose operands take every form of shared layout: A
 * [BM, BK] and B^T [BN, BK] of 32, 96 and 256-byte rows (max phase 2, 2,
 * 8), B [BK, BN] of 16, 48 and 128-byte rows (no XOR, an odd number of
 * chunks, max phase 8); with one stage in the scratch area and with two
 * in cp.async rings, the shifted A window filled element by element (its
 * start is no whole chunk), and a0 in a region of its own. */
static const char *SWIZZLES =
    "import phobos.lang as ph\n"
    "@ph.kernel\n@ph.tensorcore\n@ph.stages(S)\n"
    "@ph.autotune(BM=[16, 32], BN=[8, 24, 64], BK=[16, 48, 128], S=[1, 2])\n"
    "def swz(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], BT: ph.tensor[ph.f16][N, K], C: ph.tensor[ph.f32][M, N],\n"
    "        k_len: ph.i32, shift: ph.i32):\n"
    "    r0: ph.let = ph.ctx.block.x * BM\n"
    "    c0: ph.let = ph.ctx.block.y * BN\n"
    "    a0: ph.let = A[r0:+BM, 0:+BK]\n"
    "    acc: ph.var[ph.tile[ph.f32][BM, BN]] = 0.0\n"
    "    for k in range(0, k_len, BK):\n"
    "        acc += ph.dot(a0, B[k:+BK, c0:+BN])\n"
    "        acc += ph.dot_t(A[r0:+BM, k + shift:+BK], BT[c0:+BN, k:+BK])\n"
    "    C[r0:+BM, c0:+BN] = acc\n";

/* The largest max phase among the ring slots of f; 0 without rings. */
static int ring_max_phase(const IrFunc *f)
{
    LayoutTable *t = layout_table_new();
    LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
    int most = 0;
    for (int v = 1; v < f->nvalues; v++)
        if (p.of[v] && p.of[v]->kind == LAY_SHARED && p.of[v]->max_phase > most) most = p.of[v]->max_phase;
    layout_plan_free(&p);
    layout_table_free(t);
    return most;
}

Test(cpusim, tensor_core_dots_over_every_swizzle_match_the_interpreter, .timeout = 600)
{
    char *diags = NULL;
    IrModule *m = tu_compile("swz.ph", SWIZZLES, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    cr_assert_eq(m->nfuncs, 36);
    cpusim *s = load(m);
    int failed = 0, phases[9] = {0};
    for (int i = 0; i < m->nfuncs; i++) {
        phases[ring_max_phase(m->funcs[i])]++;
        int bad = run_config(s, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements or guards differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_expect_eq(failed, 0, "%d of %d configs differ from the interpreter", failed, m->nfuncs);
    cr_expect_eq(phases[0], 18, "one stage: no rings");
    cr_expect(phases[2] > 0 && phases[8] > 0, "rings swizzled in pairs of chunks and over 8 chunks");
    cpusim_free(s);
    ir_module_free(m);
    free(diags);
}

/* The code generator's shared-memory addresses (shared_offset, and
 * shared_shifted for the ldmatrix rows and cp.async chunks a thread
 * reaches from its first) are layout_shared_offset's arithmetic emitted:
 * on constant rows and columns LLVM's builder folds them to the very
 * offset, for every element of swizzled, padded and plain layouts. */
Test(cpusim, the_emitted_shared_memory_map_is_layout_shared_offset)
{
    Cg c;
    memset(&c, 0, sizeof c);
    c.ctx = LLVMContextCreate();
    c.mod = LLVMModuleCreateWithNameInContext("map", c.ctx);
    c.b = LLVMCreateBuilderInContext(c.ctx);
    c.ti32 = LLVMInt32TypeInContext(c.ctx);
    c.fn = LLVMAddFunction(c.mod, "f", LLVMFunctionType(LLVMVoidTypeInContext(c.ctx), NULL, 0, 0));
    LLVMPositionBuilderAtEnd(c.b, LLVMAppendBasicBlockInContext(c.ctx, c.fn, "entry"));
    LayoutTable *t = layout_table_new();
    static const int widths[] = {4, 8, 12, 16, 24, 32, 48, 64, 128, 136};
    int swizzled = 0, shifted = 0;
    for (int elem = 2; elem <= 4; elem += 2)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (int plain = 0; plain < 2; plain++) {
                const Layout *l = plain ? layout_shared_plain(t, 24, widths[w], elem) : layout_shared(t, 24, widths[w], elem);
                swizzled += l->max_phase > 1;
                for (int r = 0; r < l->rows; r++)
                    for (int col = 0; col < l->cols; col++) {
                        LLVMValueRef v = shared_offset(&c, l, i32c(&c, r), i32c(&c, col));
                        cr_assert(LLVMIsAConstantInt(v), "[24, %d]: no constant", widths[w]);
                        cr_assert_eq(LLVMConstIntGetSExtValue(v), layout_shared_offset(l, r, col), "[24, %d] of %d bytes%s: (%d, %d)",
                                     widths[w], elem, plain ? ", plain" : "", r, col);
                        for (int dr = 0; r + dr < l->rows; dr += 8)
                            for (int dc = 0; col + dc < l->cols; dc += l->vec) {
                                if (!layout_shared_shift_holds(l, col, dr, dc)) continue;
                                LLVMValueRef s = shared_shifted(&c, l, v, dr, dc);
                                cr_assert(LLVMIsAConstantInt(s));
                                cr_assert_eq(LLVMConstIntGetSExtValue(s), layout_shared_offset(l, r + dr, col + dc),
                                             "[24, %d] of %d bytes: (%d, %d) moved by (%d, %d)", widths[w], elem, r, col, dr, dc);
                                shifted++;
                            }
                    }
            }
    cr_assert_gt(swizzled, 8);
    cr_assert_gt(shifted, 10000);
    layout_table_free(t);
    LLVMDisposeBuilder(c.b);
    LLVMDisposeModule(c.mod);
    LLVMContextDispose(c.ctx);
}

/* ---- shared-memory races ---- */

/* A transpose and a row sum, both exchanged through scratch buffers
 * between barriers. */
static const char *EXCHANGE =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def exchange(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N]):\n"
    "    r0: ph.let = ph.ctx.block.x * 32\n"
    "    Y[r0:+32, 0:+64] = ph.transpose(X[0:+64, r0:+32]) + ph.rowsum(X[r0:+32, 0:+64])\n";

#define BARRIER_CALL "call void @llvm.nvvm.barrier0()"

/* llvm_ir with its which-th barrier call taken out, or every one when
 * which is -1; *calls receives how many there were. */
static char *without_barrier(const char *llvm_ir, int which, int *calls)
{
    char *out = strdup(llvm_ir);
    *calls = 0;
    for (char *p = out; (p = strstr(p, BARRIER_CALL)); p += strlen(BARRIER_CALL)) {
        char *line = p;
        while (line > out && line[-1] != '\n') line--;
        bool is_call = strncmp(line, "declare", 7) != 0;
        if (is_call && (which < 0 || which == *calls)) memset(line, ' ', (size_t)(p - line) + strlen(BARRIER_CALL));
        *calls += is_call;
    }
    return out;
}

/* Runs exchange over 2 blocks of a 64 x 64 X; PH_OK only if Y is right. */
static ph_status run_exchange(const IrModule *m, const char *llvm_ir, char *err, size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, llvm_ir, &s, err, errlen), PH_OK, "%s", err);
    static float x[64 * 64], y[64 * 64];
    for (int i = 0; i < 64 * 64; i++) x[i] = (float)(i % 61) * 0.25f, y[i] = -1;
    ph_arg args[2] = {ph_tensor2((uintptr_t)x, 64, 64), ph_tensor2((uintptr_t)y, 64, 64)};
    unsigned grid[3] = {2, 1, 1};
    ph_status st = cpusim_launch(s, m->funcs[0]->name, grid, args, 2, err, errlen);
    for (int i = 0; st == PH_OK && i < 64; i++) {
        float sum = 0;
        for (int k = 0; k < 64; k++) sum += x[i * 64 + k];
        for (int j = 0; j < 64; j++)
            cr_assert_float_eq(y[i * 64 + j], x[j * 64 + i] + sum, 1e-3, "Y[%d, %d] = %g", i, j, y[i * 64 + j]);
    }
    cpusim_free(s);
    return st;
}

Test(cpusim, a_missing_barrier_is_reported_as_a_race)
{
    char *diags = NULL;
    IrModule *m = tu_compile("exchange.ph", EXCHANGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    CodegenOptions o = {.target = target_find("sm_90"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *text = NULL, err[1024];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_LLVM, &text, err, sizeof err), 0, "%s", err);

    cr_expect_eq(run_exchange(m, text, err, sizeof err), PH_OK, "the barrier-separated exchange: %s", err);

    /* the conversion is: every thread writes, a barrier, every thread
     * reads what others wrote. No barrier goes before the writes: no
     * thread used those bytes before (the shared-memory plan places
     * barriers where accesses would otherwise meet). */
    int calls;
    char *racy = without_barrier(text, -1, &calls);
    cr_assert_eq(calls, 1, "the exchange has %d barriers, not 1 (see cg_values.c, exchange)", calls);
    cr_expect_eq(run_exchange(m, racy, err, sizeof err), PH_ERR_INVALID, "no barrier, no race seen");
    /* thread 0 runs alone to its end, reading words threads 1.. have yet
     * to write; the first of them to write one is caught */
    cr_expect(strstr(err, "exchange: shared-memory race in block (0, 0, 0): thread "), "%s", err);
    cr_expect(strstr(err, " writes byte ") && strstr(err, " of exchange_smem (in exchange, block %") &&
              strstr(err, "that thread 0 read (in exchange, block %"), "%s", err);
    cr_expect(strstr(err, "with no barrier between"), "%s", err);
    free(racy);
    free(text);
    ir_module_free(m);
}

/* Hand-written in place of exchange's code: each thread writes its id to
 * scratch word tid, then (after a barrier, or not) reads its warp
 * neighbour's word (its previous lane's, lane 0 the last's) plus SKIP and
 * stores it, as a float, to Y[tid]. */
static const char *NEIGHBOUR_IR =
    "@exchange_scratch = internal addrspace(3) global [1024 x i32] undef, align 16\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "define ptx_kernel void @exchange(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %mine = getelementptr i32, ptr addrspace(3) @exchange_scratch, i32 %t\n"
    "  store i32 %t, ptr addrspace(3) %mine, align 4\n"
    "  br label %read\n"
    "read:\n"
    "  BARRIER\n"
    "  %prev = add i32 %t, 31\n"
    "  %lane = and i32 %prev, 31\n"
    "  %warp = and i32 %t, -32\n"
    "  %n = or i32 %warp, %lane\n"
    "  %past = add i32 %n, SKIP\n"
    "  %theirs = getelementptr i32, ptr addrspace(3) @exchange_scratch, i32 %past\n"
    "  %v = load i32, ptr addrspace(3) %theirs, align 4\n"
    "  %f = sitofp i32 %v to float\n"
    "  %out = getelementptr float, ptr addrspace(1) %Y, i32 %t\n"
    "  store float %f, ptr addrspace(1) %out, align 4\n"
    "  ret void\n"
    "}\n";

/* text with the first occurrence of key replaced by value, in buf */
static void substitute(char *buf, size_t n, const char *text, const char *key, const char *value)
{
    const char *at = strstr(text, key);
    cr_assert_not_null(at);
    snprintf(buf, n, "%.*s%s%s", (int)(at - text), text, value, at + strlen(key));
}

static ph_status run_neighbour(const IrModule *m, bool with_barrier, int skip, float *y, char *err, size_t errlen)
{
    char ir[2048], tmp[2048], words[16];
    snprintf(words, sizeof words, "%d", skip);
    substitute(tmp, sizeof tmp, NEIGHBOUR_IR, "BARRIER", with_barrier ? BARRIER_CALL : "");
    substitute(ir, sizeof ir, tmp, "SKIP", words);
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, ir, &s, err, errlen), PH_OK, "%s", err);
    static float x[64 * 64];
    ph_arg args[2] = {ph_tensor2((uintptr_t)x, 64, 64), ph_tensor2((uintptr_t)y, 64, 64)};
    unsigned grid[3] = {1, 1, 1};
    ph_status st = cpusim_launch(s, "exchange", grid, args, 2, err, errlen);
    cpusim_free(s);
    return st;
}

/* Lanes of one warp are no exception: the code generator never relies on
 * a warp's lanes running in lockstep. */
Test(cpusim, a_read_of_another_threads_write_needs_a_barrier_even_in_a_warp)
{
    char *diags = NULL;
    IrModule *m = tu_compile("exchange.ph", EXCHANGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    int T = m->funcs[0]->threads;
    cr_assert_geq(T, 32);
    static float y[64 * 64];
    char err[1024];
    cr_assert_eq(run_neighbour(m, true, 0, y, err, sizeof err), PH_OK, "%s", err);
    for (int t = 0; t < T; t++) cr_assert_eq(y[t], (float)((t & ~31) | ((t + 31) & 31)), "Y[%d] = %g", t, y[t]);

    cr_assert_eq(run_neighbour(m, false, 0, y, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "exchange: shared-memory race in block (0, 0, 0): thread 1 reads byte 0 of exchange_scratch "
                          "(in exchange, block %read) that thread 0 wrote (in exchange, block %entry) with no barrier between");
    ir_module_free(m);
}

/* A read of a word no thread wrote gets on the GPU what an earlier block
 * (or kernel) left there: reported at the next barrier or the block's end. */
Test(cpusim, a_read_of_shared_memory_the_block_never_wrote_is_reported)
{
    char *diags = NULL;
    IrModule *m = tu_compile("exchange.ph", EXCHANGE, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cr_assert_leq(m->funcs[0]->threads, 512);
    static float y[64 * 64];
    char err[1024];
    cr_assert_eq(run_neighbour(m, true, 512, y, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "exchange: block (0, 0, 0) thread 0 reads byte 2172 of exchange_scratch (in exchange, block %read), "
                          "which no thread of the block wrote before");
    ir_module_free(m);
}

/* ---- cp.async: copies in flight until their thread's wait ---- */

/* A module naming kernel name, 64 threads, X and Y f32 matrices: the
 * hand-written LLVM IR below stands in for its code. */
static IrModule *stub_module(const char *name)
{
    char src[512], *diags = NULL;
    snprintf(src, sizeof src,
             "import phobos.lang as ph\n@ph.kernel\n@ph.launch(64)\n"
             "def %s(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][P, Q]):\n"
             "    Y[0:+1, 0:+1] = X[0:+1, 0:+1]\n",
             name);
    IrModule *m = tu_compile("stub.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    free(diags);
    cr_assert_eq(m->nfuncs, 1);
    cr_assert_str_eq(m->funcs[0]->name, name);
    cr_assert_eq(m->funcs[0]->threads, 64);
    return m;
}

/* tmpl with each "{KEY}" of keys[] replaced by the value of the same index */
static char *expand(const char *tmpl, int n, const char *const keys[], const char *const values[])
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    cr_assert_not_null(f);
    for (const char *p = tmpl; *p;) {
        int k = -1;
        for (int i = 0; *p == '{' && i < n && k < 0; i++)
            if (!strncmp(p + 1, keys[i], strlen(keys[i])) && p[1 + strlen(keys[i])] == '}') k = i;
        if (k < 0) {
            fputc(*p++, f);
            continue;
        }
        fputs(values[k], f);
        p += strlen(keys[k]) + 2;
    }
    fclose(f);
    return out;
}

/* Runs kernel entry of m, given as LLVM IR, over blocks blocks; X and Y by
 * their dims. */
static ph_status run_ir(const IrModule *m, const char *ir, unsigned blocks, float *x, int xm, int xn, float *y, int ym, int yn,
                        char *err, size_t errlen)
{
    cpusim *s = NULL;
    cr_assert_eq(cpusim_load_llvm(m, ir, &s, err, errlen), PH_OK, "%s", err);
    ph_arg args[2] = {ph_tensor2((uintptr_t)x, xm, xn), ph_tensor2((uintptr_t)y, ym, yn)};
    unsigned grid[3] = {blocks, 1, 1};
    ph_status st = cpusim_launch(s, m->funcs[0]->name, grid, args, 2, err, errlen);
    cpusim_free(s);
    return st;
}

#define WAIT_GROUP_1 "call void @llvm.nvvm.cp.async.wait.group(i32 1)"
#define WAIT_ALL "call void @llvm.nvvm.cp.async.wait.all()"

/* Double buffering as a pipelined K loop does it: each of the 64 threads
 * copies 16 bytes of each of 4 stages (X row 64k + t, 4 floats) to its
 * slot of buffer k & 1, the next stage's copy issued before the wait for
 * this one (wait_group 1); after a barrier, each thread sums its
 * neighbour's slot (thread t + DELTA) into Y[k][t], then a barrier before
 * the buffer is refilled. The copy past the last stage reads nothing
 * (src_size 0, its source past X) and is waited for at the end. */
static const char *PIPE_IR =
    "@pipe_buf = internal addrspace(3) global [128 x <4 x float>] undef, align 16\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.commit.group()\n"
    "declare void @llvm.nvvm.cp.async.wait.group(i32 immarg)\n"
    "declare void @llvm.nvvm.cp.async.wait.all()\n"
    "define ptx_kernel void @pipe(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %src0 = getelementptr <4 x float>, ptr addrspace(1) %X, i32 %t\n"
    "  %dst0 = getelementptr <4 x float>, ptr addrspace(3) @pipe_buf, i32 %t\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %dst0, ptr addrspace(1) %src0, i32 16)\n"
    "  call void @llvm.nvvm.cp.async.commit.group()\n"
    "  %nb.wide = add i32 %t, {DELTA}\n"
    "  %nb = and i32 %nb.wide, 63\n"
    "  br label %issue\n"
    "issue:\n"
    "  %k = phi i32 [ 0, %entry ], [ %k1, %use ]\n"
    "  %k1 = add i32 %k, 1\n"
    "  %more = icmp ult i32 %k1, 4\n"
    "  %size = select i1 %more, i32 16, i32 0\n"
    "  %srow.base = mul i32 %k1, 64\n"
    "  %srow = add i32 %srow.base, %t\n"
    "  %src = getelementptr <4 x float>, ptr addrspace(1) %X, i32 %srow\n"
    "  %dhalf = and i32 %k1, 1\n"
    "  %dslot.base = mul i32 %dhalf, 64\n"
    "  %dslot = add i32 %dslot.base, %t\n"
    "  %dst = getelementptr <4 x float>, ptr addrspace(3) @pipe_buf, i32 %dslot\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %dst, ptr addrspace(1) %src, i32 %size)\n"
    "  call void @llvm.nvvm.cp.async.commit.group()\n"
    "  br label %land\n"
    "land:\n"
    "  {WAIT}\n"
    "  br label %use\n"
    "use:\n"
    "  {BARRIER1}\n"
    "  %rhalf = and i32 %k, 1\n"
    "  %rslot.base = mul i32 %rhalf, 64\n"
    "  %rslot = add i32 %rslot.base, %nb\n"
    "  %rp = getelementptr <4 x float>, ptr addrspace(3) @pipe_buf, i32 %rslot\n"
    "  %v = load <4 x float>, ptr addrspace(3) %rp, align 16\n"
    "  %v0 = extractelement <4 x float> %v, i32 0\n"
    "  %v1 = extractelement <4 x float> %v, i32 1\n"
    "  %v2 = extractelement <4 x float> %v, i32 2\n"
    "  %v3 = extractelement <4 x float> %v, i32 3\n"
    "  %s01 = fadd float %v0, %v1\n"
    "  %s012 = fadd float %s01, %v2\n"
    "  %sum = fadd float %s012, %v3\n"
    "  %yi.base = mul i32 %k, 64\n"
    "  %yi = add i32 %yi.base, %t\n"
    "  %yp = getelementptr float, ptr addrspace(1) %Y, i32 %yi\n"
    "  store float %sum, ptr addrspace(1) %yp, align 4\n"
    "  {BARRIER2}\n"
    "  %last = icmp eq i32 %k1, 4\n"
    "  br i1 %last, label %done, label %issue\n"
    "done:\n"
    "  {FINAL}\n"
    "  ret void\n"
    "}\n";

typedef struct { const char *delta, *wait, *barrier1, *barrier2, *final; } PipeVariant;

static const PipeVariant PIPE_RIGHT = {"1", WAIT_GROUP_1, BARRIER_CALL, BARRIER_CALL, WAIT_ALL};

/* Runs the pipe kernel as v has it over blocks blocks; with PH_OK, checks Y. */
static ph_status run_pipe(PipeVariant v, unsigned blocks, char *err, size_t errlen)
{
    IrModule *m = stub_module("pipe");
    static const char *const keys[5] = {"DELTA", "WAIT", "BARRIER1", "BARRIER2", "FINAL"};
    const char *values[5] = {v.delta, v.wait, v.barrier1, v.barrier2, v.final};
    char *ir = expand(PIPE_IR, 5, keys, values);
    static float x[4 * 64 * 4], y[4 * 64];
    for (int i = 0; i < 4 * 64 * 4; i++) x[i] = (float)(i % 29) * 0.5f - 3;
    for (int i = 0; i < 4 * 64; i++) y[i] = -1;
    ph_status st = run_ir(m, ir, blocks, x, 4 * 64, 4, y, 4, 64, err, errlen);
    int delta = atoi(v.delta);
    for (int k = 0; st == PH_OK && k < 4; k++)
        for (int t = 0; t < 64; t++) {
            const float *row = &x[(k * 64 + (t + delta) % 64) * 4];
            cr_assert_eq(y[k * 64 + t], row[0] + row[1] + row[2] + row[3], "Y[%d][%d] = %g", k, t, y[k * 64 + t]);
        }
    free(ir);
    ir_module_free(m);
    return st;
}

Test(cpusim, a_double_buffered_cp_async_pipeline_runs_right)
{
    char err[1024];
    cr_assert_eq(run_pipe(PIPE_RIGHT, 2, err, sizeof err), PH_OK, "%s", err);
    PipeVariant back = PIPE_RIGHT;
    back.delta = "63";
    cr_assert_eq(run_pipe(back, 2, err, sizeof err), PH_OK, "%s", err);
}

/* The copy lands some time before the wait: reading its destination
 * earlier, even in the thread that issued it, may see the old bytes. */
Test(cpusim, a_read_of_a_cp_async_destination_before_the_wait_is_a_race)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.delta = "0";
    v.wait = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "no wait, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 0 reads byte 0 of pipe_buf (in pipe, block %use) "
                          "that thread 0's cp.async (in pipe, block %entry) may still be writing: no cp.async wait of thread 0 "
                          "covers it yet");

    /* wait_group 2 lets both stages in flight stay there */
    v = PIPE_RIGHT;
    v.wait = "call void @llvm.nvvm.cp.async.wait.group(i32 2)";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "a wait for too little, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 0 reads byte 16 of pipe_buf (in pipe, block %use) "
                          "that thread 1's cp.async (in pipe, block %entry) may still be writing: no cp.async wait of thread 1 "
                          "covers it yet");
}

/* The wait makes a copy visible to its own thread only: the others need
 * a barrier after it. Each thread reads the previous thread's slot, which
 * that thread's wait filled earlier in the same epoch. */
Test(cpusim, a_read_of_another_threads_cp_async_needs_a_barrier_after_the_wait)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.delta = "63";
    v.barrier1 = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "no barrier after the wait, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 1 reads byte 0 of pipe_buf (in pipe, block %use) "
                          "that thread 0 wrote (in pipe, block %land, the cp.async.wait.group completing its cp.async) with no "
                          "barrier between");
}

/* Without the barrier that ends each stage, thread 1 refills the slot
 * thread 0 has just read. */
Test(cpusim, a_cp_async_into_a_buffer_another_thread_reads_needs_a_barrier_before)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.barrier2 = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "no barrier before the refill, no race seen");
    cr_expect_str_eq(err, "pipe: shared-memory race in block (0, 0, 0): thread 1's cp.async writes byte 16 of pipe_buf (in pipe, "
                          "block %issue) that thread 0 read (in pipe, block %use) with no barrier between");
}

Test(cpusim, a_cp_async_never_waited_for_fails_the_launch)
{
    char err[1024];
    PipeVariant v = PIPE_RIGHT;
    v.final = "";
    cr_assert_eq(run_pipe(v, 1, err, sizeof err), PH_ERR_INVALID, "the last copy never waited for, and no error");
    cr_expect_str_eq(err, "pipe: block (0, 0, 0) thread 0 ends with a cp.async (in pipe, block %issue) never waited for");
}

/* Every form of cp.async, each thread t to its 96-byte slot of fill_buf
 * from the same bytes of X: cg.16.s with src_size t % 17, ca.16.s with
 * (t + 8) % 17, ca.16, cg.16, ca.8.s with t % 9, ca.8, ca.4.s with t % 5,
 * ca.4; a copy that reads nothing is given a source that points nowhere.
 * After wait_all each thread stores the first 88 bytes of its slot to Y. */
static const char *FILL_IR =
    "@fill_buf = internal addrspace(3) global [6144 x i8] undef, align 16\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.8.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.16(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.8(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.wait.all()\n"
    "define ptx_kernel void @fill(ptr addrspace(1) %X, i64 %0, i64 %1, ptr addrspace(1) %Y, i64 %2, i64 %3) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %base = {BASE}\n"
    "  %d0 = getelementptr i8, ptr addrspace(3) @fill_buf, i32 %base\n"
    "  %s0 = getelementptr i8, ptr addrspace(1) %X, i32 %base\n"
    "  %n0 = {SIZE0}\n"
    "  %z0 = icmp eq i32 %n0, 0\n"
    "  %w0 = select i1 %z0, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s0\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %d0, ptr addrspace(1) %w0, i32 %n0)\n"
    "  %d16 = getelementptr i8, ptr addrspace(3) %d0, i32 16\n"
    "  %s16 = getelementptr i8, ptr addrspace(1) %s0, i32 16\n"
    "  %t8 = add i32 %t, 8\n"
    "  %n16 = urem i32 %t8, 17\n"
    "  %z16 = icmp eq i32 %n16, 0\n"
    "  %w16 = select i1 %z16, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s16\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.16.s(ptr addrspace(3) %d16, ptr addrspace(1) %w16, i32 %n16)\n"
    "  %d32 = getelementptr i8, ptr addrspace(3) %d0, i32 {OFF32}\n"
    "  %s32 = getelementptr i8, ptr addrspace(1) %s0, i32 {OFF32}\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.16(ptr addrspace(3) %d32, ptr addrspace(1) %s32)\n"
    "  %d48 = getelementptr i8, ptr addrspace(3) %d0, i32 48\n"
    "  %s48 = getelementptr i8, ptr addrspace(1) %s0, i32 48\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %d48, ptr addrspace(1) %s48)\n"
    "  %d64 = getelementptr i8, ptr addrspace(3) %d0, i32 64\n"
    "  %s64 = getelementptr i8, ptr addrspace(1) %s0, i32 64\n"
    "  %n64 = urem i32 %t, 9\n"
    "  %z64 = icmp eq i32 %n64, 0\n"
    "  %w64 = select i1 %z64, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s64\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.8.s(ptr addrspace(3) %d64, ptr addrspace(1) %w64, i32 %n64)\n"
    "  %d72 = getelementptr i8, ptr addrspace(3) %d0, i32 72\n"
    "  %s72 = getelementptr i8, ptr addrspace(1) %s0, i32 72\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.8(ptr addrspace(3) %d72, ptr addrspace(1) %s72)\n"
    "  %d80 = getelementptr i8, ptr addrspace(3) %d0, i32 80\n"
    "  %s80 = getelementptr i8, ptr addrspace(1) %s0, i32 80\n"
    "  %n80 = urem i32 %t, 5\n"
    "  %z80 = icmp eq i32 %n80, 0\n"
    "  %w80 = select i1 %z80, ptr addrspace(1) inttoptr (i64 8 to ptr addrspace(1)), ptr addrspace(1) %s80\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3) %d80, ptr addrspace(1) %w80, i32 %n80)\n"
    "  %d84 = getelementptr i8, ptr addrspace(3) %d0, i32 84\n"
    "  %s84 = getelementptr i8, ptr addrspace(1) %s0, i32 84\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %d84, ptr addrspace(1) %s84)\n"
    "  call void @llvm.nvvm.cp.async.wait.all()\n"
    "  br label %out\n"
    "out:\n"
    "  %v = load <22 x i32>, ptr addrspace(3) %d0, align 16\n"
    "  %yo = mul i32 %t, 88\n"
    "  %y = getelementptr i8, ptr addrspace(1) %Y, i32 %yo\n"
    "  store <22 x i32> %v, ptr addrspace(1) %y, align 4\n"
    "  ret void\n"
    "}\n";

#define FILL_BASE "mul i32 %t, 96"
#define FILL_SIZE0 "urem i32 %t, 17"

/* Runs the fill kernel with BASE, SIZE0 and OFF32 (the ca.16 copy's
 * offset in the slot) as given, X as xrows of its 64 rows of 96 bytes;
 * with PH_OK, checks every byte of Y. */
static ph_status run_fill(const char *base, const char *size0, const char *off32, int xrows, char *err, size_t errlen)
{
    IrModule *m = stub_module("fill");
    static const char *const keys[3] = {"BASE", "SIZE0", "OFF32"};
    const char *values[3] = {base, size0, off32};
    char *ir = expand(FILL_IR, 3, keys, values);
    static float xf[64 * 24], yf[64 * 22];
    unsigned char *x = (unsigned char *)xf, *y = (unsigned char *)yf;
    for (int i = 0; i < (int)sizeof xf; i++) x[i] = (unsigned char)(1 + i % 251);
    memset(yf, 0xee, sizeof yf);
    ph_status st = run_ir(m, ir, 1, xf, xrows, 24, yf, 64, 22, err, errlen);
    static const int off[8] = {0, 16, 32, 48, 64, 72, 80, 84}, bytes[8] = {16, 16, 16, 16, 8, 8, 4, 4};
    for (int t = 0; st == PH_OK && t < 64; t++) {
        int read[8] = {t % 17, (t + 8) % 17, 16, 16, t % 9, 8, t % 5, 4};
        for (int c = 0; c < 8; c++)
            for (int i = 0; i < bytes[c]; i++) {
                int at = off[c] + i;
                unsigned char want = i < read[c] ? x[t * 96 + at] : 0;
                cr_assert_eq(y[t * 88 + at], want, "thread %d, byte %d of its slot: %d, not %d", t, at, y[t * 88 + at], want);
            }
    }
    free(ir);
    ir_module_free(m);
    return st;
}

/* Only src_size bytes are read, the rest of the copy zeros; with src_size
 * 0 nothing is read, wherever the source points. */
Test(cpusim, every_cp_async_form_copies_and_zero_fills)
{
    char err[1024];
    cr_assert_eq(run_fill(FILL_BASE, FILL_SIZE0, "32", 64, err, sizeof err), PH_OK, "%s", err);
}

Test(cpusim, a_bad_cp_async_is_refused_with_a_message)
{
    char err[1024];
    /* X half as long as the copies take: thread 32's first copy reads 15 bytes past it */
    cr_assert_eq(run_fill(FILL_BASE, FILL_SIZE0, "32", 32, err, sizeof err), PH_ERR_INVALID);
    cr_expect(strstr(err, "fill: block (0, 0, 0) thread 32's cp.async (in fill, block %entry) reads 15 bytes at ") &&
              strstr(err, ", outside every tensor argument"), "%s", err);

    cr_assert_eq(run_fill(FILL_BASE, "add i32 %t, 0", "32", 64, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "fill: block (0, 0, 0) thread 17's cp.async (in fill, block %entry) has src_size 17, past its 16 "
                          "bytes");

    cr_assert_eq(run_fill("add i32 %t, 8", FILL_SIZE0, "32", 64, err, sizeof err), PH_ERR_INVALID);
    cr_expect(strstr(err, "fill: block (0, 0, 0) thread 0's cp.async (in fill, block %entry) of 16 bytes to ") &&
              strstr(err, ", not 16-byte aligned"), "%s", err);
}

/* The PTX ISA orders no two cp.asyncs without a wait between, even of one
 * thread: the ca.16 copy moved onto the ca.16.s one's bytes. */
Test(cpusim, two_cp_asyncs_to_one_byte_in_flight_are_a_race)
{
    char err[1024];
    cr_assert_eq(run_fill(FILL_BASE, FILL_SIZE0, "16", 64, err, sizeof err), PH_ERR_INVALID);
    cr_expect_str_eq(err, "fill: shared-memory race in block (0, 0, 0): thread 0's cp.async writes byte 16 of fill_buf (in fill, "
                          "block %entry) that thread 0's cp.async (in fill, block %entry) may still be writing: no cp.async wait "
                          "of thread 0 covers it yet");
}
