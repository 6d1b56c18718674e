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
 * it. The executor's own checks of bad launches are tested too, and its
 * model of the GPU's fused multiply-adds; its model of shared-memory races
 * and cp.async is tested in test_cpusim_races.c. The code generator's
 * emitted shared-memory addresses are checked against layout.c's map. */
#define _DEFAULT_SOURCE   /* MAP_ANONYMOUS */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <sys/mman.h>

#include "atomicharness.h"
#include "attention/attention_host.h"
#include "codegen/cg.h"
#include "codegen/codegen.h"
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
