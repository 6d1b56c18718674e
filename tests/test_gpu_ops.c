/* test_gpu_ops.c: the code generator against the interpreter, path by path.
 * Every config of every kernel of tests/gpu/ops.ph (column and wide-row
 * reductions, transposes, masks and integer arithmetic, bf16 and FMA dots,
 * rank-1 broadcasting, early returns and branches in loops, blocks of 96
 * threads, windows past the tensors' edges), and of tests/gpu/math.ph
 * (tanh, erf, sigmoid, pow, fma, inf and nan), tests/gpu/gather.ph
 * (elements as scalars, gathers, scatters), tests/gpu/types.ph (8-bit
 * integers), tests/gpu/masked.ph (masked loads and stores) and
 * tests/gpu/flow.ph (unrolled loops, helpers, RoPE) and tests/gpu/loops.ph
 * (while loops), runs on the GPU and in the
 * interpreter on the same random inputs; every tensor must come back the
 * same, within the approximate exp/log/rsqrt of the GPU. The atomic adds
 * of tests/gpu/atomics.ph, every block of the grid adding into the same
 * elements at once, must give the plain C reference exactly. Skips without
 * a driver, unless PHOBOS_REQUIRE_GPU is set (make gpucheck). */
#include <criterion/criterion.h>

#include "atomicharness.h"
#include "opsharness.h"
#include "phobos.h"
#include "testutil.h"

static void need_gpu(void)
{
    if (ph_init(0) == PH_OK) return;
    if (getenv("PHOBOS_REQUIRE_GPU")) cr_assert_fail("no GPU: %s", ph_last_error());
    cr_skip_test("no GPU: %s", ph_last_error());
}

static void fixed_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta;
    (void)user;
    g[0] = 4;
    g[1] = 3;
}

/* Runs config f both ways and compares every tensor; returns the mismatches. */
static int run_config(ph_module *mod, const IrFunc *f)
{
    int n = f->nparams, bad = 0;
    IrArg iargs[16];
    ph_arg gargs[16];
    void *host[16] = {0}, *gpu_out[16] = {0};
    size_t count[16] = {0};
    cr_assert_leq(n, 16);
    host_args(f, iargs, host, count);
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            gargs[i] = p->dt == DT_I32 ? ph_i32(iargs[i].i) : p->dt == DT_I64 ? ph_i64(iargs[i].l) : ph_f32(iargs[i].f);
            continue;
        }
        gpu_out[i] = malloc(count[i] * elem_bytes(p->dt));
        ph_devptr ptr;
        cr_assert_eq(ph_malloc(&ptr, count[i] * elem_bytes(p->dt)), PH_OK, "%s", ph_last_error());
        cr_assert_eq(ph_memcpy_htod(ptr, host[i], count[i] * elem_bytes(p->dt)), PH_OK);
        gargs[i] = p->rank == 2 ? ph_tensor2(ptr, iargs[i].dims[0], iargs[i].dims[1]) : p->rank == 1 ? ph_tensor1(ptr, iargs[i].dims[0])
                 : ph_tensor_nd(ptr, PH_DTYPE_UNCHECKED, p->rank, iargs[i].dims, iargs[i].strides);
    }
    ph_kernel *k;
    cr_assert_eq(ph_kernel_get(mod, f->name, &k), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_launch(k, fixed_grid, NULL, gargs, n), PH_OK, "%s: %s", f->name, ph_last_error());
    cr_assert_eq(ph_synchronize(), PH_OK, "%s: %s", f->name, ph_last_error());
    char err[512];
    int grid[3] = {4, 3, 1};
    cr_assert_eq(ir_interp(f, iargs, n, grid, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) continue;
        cr_assert_eq(ph_memcpy_dtoh(gpu_out[i], gargs[i].ptr, count[i] * elem_bytes(p->dt)), PH_OK);
        ph_free(gargs[i].ptr);
        bad += compare_tensor("gpu", f, p, host[i], gpu_out[i], count[i]);
        free(host[i]);
        free(gpu_out[i]);
    }
    return bad;
}

/* The inputs the harness builds suit every config (dims agree, specialized
 * dims match): checked in the interpreter alone, so it runs without a GPU. */
Test(gpu_ops, harness_inputs_fit_every_config)
{
    IrModule *m = driver_compile_file(OPS, NULL, stderr);
    cr_assert_not_null(m);
    cr_assert_gt(m->nfuncs, 20);
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        IrArg args[16];
        void *bufs[16];
        size_t count[16];
        cr_assert_leq(f->nparams, 16);
        host_args(f, args, bufs, count);
        char err[512];
        int grid[3] = {4, 3, 1};
        cr_expect_eq(ir_interp(f, args, f->nparams, grid, err, sizeof err), 0, "%s: %s", f->name, err);
        for (int j = 0; j < f->nparams; j++) free(bufs[j]);
    }
    ir_module_free(m);
}

static void every_config_of_file_matches(const char *path)
{
    need_gpu();
    IrModule *m = driver_compile_file(path, NULL, stderr);
    cr_assert_not_null(m);
    ph_module *mod;
    cr_assert_eq(ph_module_load_file(path, &mod), PH_OK, "%s", ph_last_error());
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        int bad = run_config(mod, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_expect_eq(failed, 0, "%d of %d configs differ from the interpreter", failed, m->nfuncs);
    ph_module_free(mod);
    ir_module_free(m);
}

Test(gpu_ops, every_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(OPS); }

/* tanh, erf, sigmoid, pow and fma on special values and random inputs,
 * within the accuracy docs/language.md states for the GPU. */
Test(gpu_ops, every_math_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(MATH_OPS); }

/* Scalars read from tensors, gathers and scatters, indices outside the tensors among them. */
Test(gpu_ops, every_gather_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(GATHER_OPS); }
/* tests/gpu/types.ph: i8 and u8 conversions, widening, integer dots. */
Test(gpu_ops, every_types_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(TYPE_OPS); }
/* tests/gpu/i64.ph: i64 arithmetic past 2^31, conversions, reductions,
 * gathers by an i64 tile, atomic adds (atom.add.u64). */
Test(gpu_ops, every_i64_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(I64_OPS); }
/* Masked loads and stores, a ragged softmax: an element a mask leaves out
 * must stay as the interpreter leaves it. */
Test(gpu_ops, every_masked_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(MASKED_OPS); }

/* ph.static_range, @ph.func helpers, RoPE on interleaved pairs. */
Test(gpu_ops, every_flow_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(FLOW_OPS); }

/* Rank-3/4 tensors passed as views (strides not row-major), windows over
 * two axes or one, the others indexed by scalars (some outside). */
Test(gpu_ops, every_strided_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(STRIDED_OPS); }

/* tests/gpu/loops.ph: while loops, data-dependent trip counts, an early return in one. */
Test(gpu_ops, every_loops_config_matches_the_interpreter, .timeout = 300) { every_config_of_file_matches(LOOP_OPS); }

/* ---- atomic adds ---- */

static void run_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta;
    memcpy(g, user, 3 * sizeof *g);
}

/* Runs config f of tests/gpu/atomics.ph on the GPU, by its entry name (so
 * untuned: it runs once); returns the elements that differ from the plain
 * C reference. */
static int run_atomic_config(ph_module *mod, const IrFunc *f)
{
    AtomicRun r;
    atomic_run(f, &r);
    ph_arg gargs[AT_MAX_PARAMS];
    for (int i = 0; i < r.n; i++) {
        const IrParam *p = &f->params[i];
        if (!p->is_tensor) {
            gargs[i] = p->dt == DT_I32 ? ph_i32(r.args[i].i) : p->dt == DT_I64 ? ph_i64(r.args[i].l) : ph_f32(r.args[i].f);
            continue;
        }
        ph_devptr ptr;
        cr_assert_eq(ph_malloc(&ptr, r.bytes[i]), PH_OK, "%s", ph_last_error());
        cr_assert_eq(ph_memcpy_htod(ptr, r.args[i].data, r.bytes[i]), PH_OK);
        gargs[i] = p->rank == 2 ? ph_tensor2(ptr, r.args[i].dims[0], r.args[i].dims[1]) : ph_tensor1(ptr, r.args[i].dims[0]);
    }
    ph_kernel *k;
    cr_assert_eq(ph_kernel_get(mod, f->name, &k), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_launch(k, run_grid, r.grid, gargs, r.n), PH_OK, "%s: %s", f->name, ph_last_error());
    cr_assert_eq(ph_synchronize(), PH_OK, "%s: %s", f->name, ph_last_error());
    int bad = 0;
    for (int i = 0; i < r.n; i++) {
        if (!f->params[i].is_tensor) continue;
        void *got = malloc(r.bytes[i]);
        cr_assert_eq(ph_memcpy_dtoh(got, gargs[i].ptr, r.bytes[i]), PH_OK);
        ph_free(gargs[i].ptr);
        bad += atomic_compare("gpu", f, &r, i, got);
        free(got);
    }
    at_free(&r);
    return bad;
}

/* Blocks and threads adding into overlapping windows of f32 and i32
 * tensors at once, across the tensors' edges: every element must be the
 * reference's, exactly (integer inputs: any order of the adds is exact). */
Test(gpu_ops, atomic_adds_match_a_plain_c_reference, .timeout = 300)
{
    need_gpu();
    IrModule *m = driver_compile_file(ATOMICS, NULL, stderr);
    cr_assert_not_null(m);
    ph_module *mod;
    cr_assert_eq(ph_module_load_file(ATOMICS, &mod), PH_OK, "%s", ph_last_error());
    int failed = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        int bad = run_atomic_config(mod, m->funcs[i]);
        if (bad) cr_log_error("%s: %d elements differ", m->funcs[i]->name, bad);
        failed += bad != 0;
    }
    cr_expect_eq(failed, 0, "%d of %d configs differ from the reference", failed, m->nfuncs);
    ph_module_free(mod);
    ir_module_free(m);
}
