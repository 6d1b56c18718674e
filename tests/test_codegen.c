/* test_codegen.c: lowering to PTX, checked without a GPU. Every config of
 * every example and bench program goes through ptxas for sm_90 and sm_80,
 * and so does every tile shape of tests/gpu/attention_shapes.ph and
 * the attention example at head dim 128, whose configs need
 * more than 48 KB of shared memory and take it dynamically; tensor-core
 * kernels use mma.sync fed by ldmatrix; the attention kernels use no local
 * memory (ptxas -v: no stack frame, no spills); attn_fwd keeps its row
 * statistics one value per row a thread owns, in registers also where
 * BC != D; an atomic add is one atom per owned element. Skips, saying why,
 * where ptxas is not installed. */
#include <criterion/criterion.h>
#include <glob.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "driver/targets.h"
#include "nvidia/targets.h"
#include "layout/layout.h"
#include "nvidia/mma_layout.h"
#include "testutil.h"

static const char *ptxas_path(void)
{
    static const char *const candidates[] = {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"};
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
        if (access(candidates[i], X_OK) == 0) return candidates[i];
    return NULL;
}

static char *emit_at(const IrModule *m, const char *arch, int opt_level, CgEmit what)
{
    CodegenOptions o = {.target = target_find(arch), .opt_level = opt_level};
    char *out = NULL, err[2048];
    int rc = codegen_emit(m, &o, what, &out, err, sizeof err);
    cr_assert_eq(rc, 0, "codegen failed: %s", err);
    return out;
}

static char *emit(const IrModule *m, const char *arch, CgEmit what) { return emit_at(m, arch, CODEGEN_OPT_DEFAULT, what); }

/* Runs ptxas -v on ptx; returns its exit status and its report in *log. */
static int run_ptxas(const char *ptx, const char *arch, char **log)
{
    char dir[] = "/tmp/phc-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/k.ptx", dir);
    FILE *f = fopen(path, "w");
    fputs(ptx, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -v -arch=%s -o %s/k.cubin %s 2>&1", ptxas_path(), arch, dir, path);
    FILE *p = popen(cmd, "r");
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    char line[1024];
    while (fgets(line, sizeof line, p)) fputs(line, out);
    int rc = pclose(p);
    fclose(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    *log = buf;
    return rc;
}

/* Its 114 configs take minutes through LLVM and ptxas: tests of their own, below. */
#define ATTENTION_SHAPES "tests/gpu/attention_shapes.ph"

static void check_examples_with_ptxas(const char *arch)
{
    if (!ptxas_path()) cr_skip_test("ptxas not found in /usr/local/cuda/bin or /usr/bin: PTX not assembled");
    glob_t g;
    cr_assert_eq(glob("examples/*/*.ph", 0, NULL, &g), 0, "no examples found (run from the repository root)");
    cr_assert_geq(g.gl_pathc, 5);
    cr_assert_eq(glob("tests/gpu/*.ph", GLOB_APPEND, NULL, &g), 0, "no tests/gpu programs");
    cr_assert_eq(glob("bench/*.ph", GLOB_APPEND, NULL, &g), 0, "no bench programs");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (!strcmp(g.gl_pathv[i], ATTENTION_SHAPES)) continue;
        IrModule *m = driver_compile_file(g.gl_pathv[i], NULL, stderr);
        cr_assert_not_null(m, "%s does not compile", g.gl_pathv[i]);
        char *ptx = emit(m, arch, CG_EMIT_PTX), *log = NULL;
        int rc = run_ptxas(ptx, arch, &log);
        cr_expect_eq(rc, 0, "ptxas -arch=%s rejects %s:\n%s", arch, g.gl_pathv[i], log);
        /* one entry per config */
        for (int j = 0; j < m->nfuncs; j++) {
            char entry[512];
            snprintf(entry, sizeof entry, ".entry %s(", m->funcs[j]->name);
            cr_expect(strstr(ptx, entry) != NULL, "%s: no entry %s in the PTX", g.gl_pathv[i], m->funcs[j]->name);
        }
        free(log);
        free(ptx);
        ir_module_free(m);
    }
    globfree(&g);
}

Test(codegen, every_example_assembles_for_sm90, .timeout = 1800) { check_examples_with_ptxas("sm_90"); }
Test(codegen, every_example_assembles_for_sm80, .timeout = 1800) { check_examples_with_ptxas("sm_80"); }

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* tests/gpu/attention_shapes.ph holds the attention kernels at head dim 64
 * and 128 in every tile shape tests/gpucheck.sh runs (query and key tiles
 * of 32, 64 and 128 rows, 4 and 8 warps), and ptxas assembles every one of
 * its configs. The sanitized build, whose LLVM and ptxas are the same,
 * leaves these minutes out. */
static void check_attention_shapes_with_ptxas(const char *arch)
{
    if (!ptxas_path()) cr_skip_test("ptxas not found in /usr/local/cuda/bin or /usr/bin: PTX not assembled");
    if (SANITIZED) cr_skip_test("sanitized build: the plain build assembles the same PTX");
    IrModule *m = driver_compile_file(ATTENTION_SHAPES, NULL, stderr);
    cr_assert_not_null(m, "%s does not compile (run from the repository root)", ATTENTION_SHAPES);
    char *ptx = emit(m, arch, CG_EMIT_PTX), *log = NULL;
    static const char *const tiled[] = {"attn_fwd", "attn_bwd_dkdv", "attn_bwd_dq"};
    static const int dims[] = {64, 128}, blocks[] = {32, 64, 128}, threads[] = {128, 256};
    int entries = 0;
    for (int d = 0; d < 2; d++)
        for (int r = 0; r < 3; r++) {
            char entry[256];
            snprintf(entry, sizeof entry, ".entry attn_bwd_delta__D_%d__BR_%d(", dims[d], blocks[r]);
            cr_expect(strstr(ptx, entry) != NULL, "no %s in the PTX", entry);
            entries++;
            for (int k = 0; k < 3; k++)
                for (int c = 0; c < 3; c++)
                    for (int t = 0; t < 2; t++) {
                        snprintf(entry, sizeof entry, ".entry %s__D_%d__BR_%d__BC_%d__NT_%d(", tiled[k], dims[d], blocks[r],
                                 blocks[c], threads[t]);
                        cr_expect(strstr(ptx, entry) != NULL, "no %s in the PTX", entry);
                        entries++;
                    }
        }
    cr_expect_eq(m->nfuncs, entries, "%s has %d configs, not the %d shapes", ATTENTION_SHAPES, m->nfuncs, entries);
    int rc = run_ptxas(ptx, arch, &log);
    cr_expect_eq(rc, 0, "ptxas -arch=%s rejects %s:\n%s", arch, ATTENTION_SHAPES, log);
    free(log);
    free(ptx);
    ir_module_free(m);
}

Test(codegen, every_attention_shape_assembles_for_sm90, .timeout = 1800) { check_attention_shapes_with_ptxas("sm_90"); }
Test(codegen, every_attention_shape_assembles_for_sm80, .timeout = 1800) { check_attention_shapes_with_ptxas("sm_80"); }

/* text with every `from` replaced by `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    for (const char *p = text, *q; *p; p = q + strlen(from)) {
        if (!(q = strstr(p, from))) { fputs(p, out); break; }
        fprintf(out, "%.*s%s", (int)(q - p), p, to);
    }
    fclose(out);
    return buf;
}

/* The attention example at head dim 128 with 64x64 tiles: the forward
 * kernel needs 81920 bytes of shared memory (Q's region, two-stage rings
 * for K and V, no scratch), the backward ones 107008 (the regions of K and
 * V, the rings of Q and dO, one scratch operand of 64 x 64 halves at a
 * time, and 512 bytes of their own for the exchanges of L's and Delta's
 * rows) and 98304, more than ptxas allows a kernel statically (0xc000
 * bytes). They declare one extern
 * array and say their size; the delta kernel stays static; ptxas accepts
 * them all. */
Test(codegen, attention_at_head_dim_128_takes_dynamic_shared_memory, .timeout = 120)
{
    char *text = tu_read_file("examples/attention/attention.ph");
    cr_assert_not_null(text, "run from the repository root");
    char *d128 = replace_all(text, "D=[64]", "D=[128]"), *br = replace_all(d128, "BR=[32]", "BR=[64]"),
         *src = replace_all(br, "BC=[32]", "BC=[64]"), *diags = NULL;
    IrModule *m = tu_compile("attention128.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    static const struct { const char *entry; int64_t bytes; } want[] = {
        {"attn_fwd__D_128__BR_64__BC_64", 81920}, {"attn_bwd_delta__D_128__BR_64", 0},
        {"attn_bwd_dkdv__D_128__BR_64__BC_64", 107008}, {"attn_bwd_dq__D_128__BR_64__BC_64", 98304},
    };
    cr_assert_eq(m->nfuncs, 4);
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(m->funcs[i]->name, want[i].entry);
        cr_expect_eq(codegen_dynamic_shared_bytes(ptx, want[i].entry), want[i].bytes, "%s: %lld bytes", want[i].entry,
                     (long long)codegen_dynamic_shared_bytes(ptx, want[i].entry));
        char decl[256];
        snprintf(decl, sizeof decl, ".extern .shared .align 16 .b8 %s_shared[];", want[i].entry);
        cr_expect_eq(strstr(ptx, decl) != NULL, want[i].bytes > 0, "%s: extern shared array %s", want[i].entry,
                     want[i].bytes ? "missing" : "where static memory fits");
        snprintf(decl, sizeof decl, "%s_smem", want[i].entry);
        if (want[i].bytes) cr_expect_null(strstr(ptx, decl), "%s: a static area besides", want[i].entry);
    }
    if (ptxas_path()) {
        char *log = NULL;
        cr_expect_eq(run_ptxas(ptx, "sm_90", &log), 0, "ptxas -arch=sm_90 rejects attention at head dim 128:\n%s", log);
        free(log);
    }
    free(ptx);
    ir_module_free(m);
    free(diags); free(src); free(br); free(d128); free(text);
    if (!ptxas_path()) cr_skip_test("ptxas not found: the dynamic-shared PTX was not assembled");
}

/* The largest backward config the GPU suite runs, dK and dV at head dim
 * 128 with 128x128 tiles, fits the 232448 bytes an H200 block may have:
 * K and V in regions (32 KB each), two-stage rings of Q and dO (128 KB),
 * 32 KB of scratch for the one operand its dots write, P^T or dS^T (their
 * B, dO or Q, is read from its ring in place), and 1 KB of their own for
 * the exchanges of L's and Delta's rows, which the shared-memory plan
 * gives them only while the area stays under that limit. */
Test(codegen, the_largest_backward_config_fits_an_h200_block, .timeout = 300)
{
    const char *names[] = {"D", "BR", "BC"};
    const int64_t values[] = {128, 128, 128};
    SemaOptions o = {.kernel = "attn_bwd_dkdv", .ndefines = 3, .define_names = names, .define_values = values};
    IrModule *m = driver_compile_file(ATTENTION_SHAPES, &o, stderr);
    cr_assert_not_null(m, "%s does not compile (run from the repository root)", ATTENTION_SHAPES);
    cr_assert_eq(m->nfuncs, 2, "128 and 256 threads");
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    for (int i = 0; i < m->nfuncs; i++) {
        int64_t bytes = codegen_dynamic_shared_bytes(ptx, m->funcs[i]->name);
        cr_expect_eq(bytes, 230400, "%s: %lld bytes", m->funcs[i]->name, (long long)bytes);
        cr_expect_leq(bytes, 232448);
    }
    free(ptx);
    ir_module_free(m);
}

/* .maxnreg by block size: 255 up to 8 warps; past that what the fullest of
 * the SM's four register quadrants (16K each, warps dealt to them in turn)
 * gives each of its warps, so every config the driver loads can launch. */
Test(codegen, maxnreg_lets_every_block_size_launch)
{
    static const struct { int threads, regs; } want[] = {{32, 255}, {256, 255}, {288, 168}, {384, 168}, {512, 128}, {1024, 64}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char src[512], *diags = NULL;
        snprintf(src, sizeof src,
                 "import phobos.lang as ph\n\n@ph.kernel\n@ph.launch(%d)\n"
                 "def k(X: ph.tensor[ph.f32][N]):\n    X[0:+%d] = X[0:+%d] + 1.0\n", want[i].threads, want[i].threads, want[i].threads);
        IrModule *m = tu_compile("k.ph", src, NULL, &diags);
        cr_assert_not_null(m, "%s", diags ? diags : "");
        char *ptx = emit(m, "sm_90", CG_EMIT_PTX), line[64];
        snprintf(line, sizeof line, ".maxnreg %d\n", want[i].regs);
        cr_expect(strstr(ptx, line), "%d threads: want %s", want[i].threads, line);
        free(ptx);
        free(diags);
        ir_module_free(m);
    }
}

/* The PTX of one kernel's entry: from ".entry NAME(" to the next ".entry". */
static char *entry_text(const char *ptx, const char *name)
{
    char key[512];
    snprintf(key, sizeof key, ".entry %s(", name);
    const char *s = strstr(ptx, key);
    if (!s) return NULL;
    const char *e = strstr(s + 1, ".entry ");
    return xstrndup(s, e ? (size_t)(e - s) : strlen(s));
}

Test(codegen, tensorcore_dots_use_mma_and_ldmatrix)
{
    IrModule *m = driver_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    int tensorcore = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        char *text = entry_text(ptx, m->funcs[i]->name);
        cr_assert_not_null(text, "no entry for %s", m->funcs[i]->name);
        if (m->funcs[i]->tensorcore) {
            tensorcore++;
            cr_expect(strstr(text, "mma.sync.aligned.m16n8k16") != NULL, "%s: no mma.sync", m->funcs[i]->name);
            cr_expect(strstr(text, "ldmatrix.sync.aligned") != NULL, "%s: no ldmatrix", m->funcs[i]->name);
        } else {
            cr_expect(strstr(text, "mma.sync") == NULL, "%s: mma.sync without @ph.tensorcore", m->funcs[i]->name);
        }
        free(text);
    }
    cr_expect_eq(tensorcore, 3);
    free(ptx);
    ir_module_free(m);
}

Test(codegen, dots_without_tensorcore_use_fma)
{
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "def mm(A: ph.tensor[ph.f16][M, 32], B: ph.tensor[ph.f16][32, 32], C: ph.tensor[ph.f32][M, 32]):\n"
        "    C[0:+32, :] = ph.dot(A[0:+32, :], B[:, :])\n";
    IrModule *m = tu_compile("mm.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    cr_expect(strstr(ptx, "mma.sync") == NULL);
    cr_expect(strstr(ptx, "fma.rn.f32") != NULL);
    free(ptx);
    ir_module_free(m);
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* An atomic add is one atom.global.add (ptxas makes it a RED where its
 * result is unused) per slot of the value's layout, and nothing else
 * writes the tensor: a [16, 32] f32 window over 128 threads is 4 a thread,
 * the row sums' slice 1, an i32 [32] window 4; a tensor-core [16, 16]
 * result over 8 warps 4 (two warps hold it). On sm_90 an aligned f32
 * window also takes a vector add a run of slots: the [16, 32] window's 4
 * one red.global.add.v4.f32, the dot result's pairs two .v2 (the elements'
 * adds stay, for windows that are not aligned). That only the owner of a
 * valid slot adds (a slice's copies and idle warps are guarded off) is
 * test_cpusim's to check, on the results. */
Test(codegen, atomic_adds_are_one_atom_per_owned_element)
{
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "def adds(A: ph.tensor[ph.f32][M, N], X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.i32][N]):\n"
        "    a: ph.let = A[0:+16, 0:+32]\n"
        "    ph.atomic_add(X[0:+16, 0:+32], a)\n"
        "    ph.atomic_add(X[0:+16, 0:+1], ph.rowsum(a))\n"
        "    ph.atomic_add(Y[0:+32], 1)\n"
        "@ph.kernel\n"
        "@ph.tensorcore\n"
        "@ph.launch(256)\n"
        "def dq(P: ph.tensor[ph.f16][M, 16], V: ph.tensor[ph.f16][16, 16], X: ph.tensor[ph.f32][M, 16]):\n"
        "    ph.atomic_add(X[0:+16, :], ph.dot(P[0:+16, :], V[:, :]))\n";
    IrModule *m = tu_compile("adds.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    for (int a = 0; a < 2; a++) {   /* sm_80, then sm_90 and its vector adds */
        const char *archs[2] = {"sm_80", "sm_90"};
        bool vec = a == 1;
        char *ptx = emit(m, archs[a], CG_EMIT_PTX);
        char *adds = entry_text(ptx, "adds"), *dq = entry_text(ptx, "dq");
        cr_assert(adds && dq, "%s", ptx);
        int f32 = count_of(adds, "atom.global.add.f32") + count_of(adds, "red.global.add.f32");
        int i32 = count_of(adds, "atom.global.add.u32") + count_of(adds, "red.global.add.u32") +
                  count_of(adds, "atom.global.add.s32") + count_of(adds, "red.global.add.s32");
        cr_expect(f32 == 5 && i32 == 4, "%s: %d f32 and %d i32 adds: %s", archs[a], f32, i32, adds);
        cr_expect_eq(count_of(adds, "st.global"), 0, "%s: %s", archs[a], adds);
        cr_expect_eq(count_of(dq, "atom.global.add.f32") + count_of(dq, "red.global.add.f32"), 4, "%s: %s", archs[a], dq);
        cr_expect(count_of(adds, "red.global.add.v4.f32") == vec && count_of(dq, "red.global.add.v2.f32") == 2 * vec,
                  "%s: %d v4 adds, %d v2 adds", archs[a], count_of(adds, "red.global.add.v4.f32"), count_of(dq, "red.global.add.v2.f32"));
        cr_expect(strstr(dq, "mma.sync.aligned.m16n8k16") && strstr(ptx, vec ? ".version 8.4" : ".version 8.0"), "%s", ptx);
        free(adds), free(dq), free(ptx);
    }
    ir_module_free(m);
}

/* A loop whose loads feed tensor-core dots copies them with cp.async into
 * rings of @ph.stages slots, with one test a copy for a window inside the
 * tensors instead of one a chunk: S-1 groups in flight, so each iteration waits
 * with wait_group S-2, and the dots read the rings without a barrier of
 * their own: one bar.sync per iteration (the unrolled loop has none
 * besides the waits'). One stage keeps plain loads. */
Test(codegen, loop_operands_of_tensorcore_dots_arrive_by_cp_async)
{
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n@ph.tensorcore\n@ph.stages(S)\n@ph.autotune(S=[1, 2, 3, 4])\n"
        "def mm(A: ph.tensor[ph.f16][M, 64], B: ph.tensor[ph.f16][N, 64], C: ph.tensor[ph.f32][M, N], k: ph.i32):\n"
        "    acc: ph.var[ph.tile[ph.f32][64, 64]] = 0.0\n"
        "    for j in range(0, k, 64):\n"
        "        acc += ph.dot_t(A[j:+64, :], B[j:+64, :])\n"
        "    C[0:+64, 0:+64] = acc\n";
    IrModule *m = tu_compile("mm.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    cr_assert_eq(m->nfuncs, 4);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    for (int i = 0; i < 4; i++) {
        int stages = i + 1;
        char *text = entry_text(ptx, m->funcs[i]->name);
        cr_assert_not_null(text);
        if (stages == 1) {
            cr_expect_eq(count_of(text, "cp.async"), 0, "%s", m->funcs[i]->name);
        } else {
            char wait[64];
            snprintf(wait, sizeof wait, "cp.async.wait_group %d;", stages - 2);
            /* 64x64 f16 tiles of A and B: 512 chunks of 16 bytes each, 4 per thread each where
             * the window lies inside the tensor (no source size: nothing to zero-fill); where
             * it may cross an edge, one zero-filling copy a tile in a loop over the chunks */
            cr_expect_eq(count_of(text, "cp.async.cg.shared.global"), 10 * stages, "%s", m->funcs[i]->name);
            cr_expect_eq(count_of(text, "], 16;"), 8 * stages, "%s", m->funcs[i]->name);
            cr_expect(strstr(text, wait) != NULL, "%s: no %s", m->funcs[i]->name, wait);
            cr_expect(strstr(text, "cp.async.wait_group 0;") != NULL, "%s: no drain after the loop", m->funcs[i]->name);
            cr_expect_eq(count_of(text, "cp.async.commit_group;"), stages, "%s", m->funcs[i]->name);
            /* the waits' barrier, and two of the store staged through shared memory after
             * the loop (its buffer takes the ring's bytes; its reads follow its writes) */
            cr_expect_eq(count_of(text, "bar.sync"), 3, "%s: the waits' barrier and the store's two", m->funcs[i]->name);
        }
        free(text);
    }
    char *log = NULL;
    if (ptxas_path()) {
        cr_expect_eq(run_ptxas(ptx, "sm_90", &log), 0, "%s", log);
        free(log);
        log = NULL;
        char *ptx80 = emit(m, "sm_80", CG_EMIT_PTX);
        cr_expect_eq(run_ptxas(ptx80, "sm_80", &log), 0, "%s", log);
        free(log);
        free(ptx80);
    }
    free(ptx);
    ir_module_free(m);
}

/* How a ring copy is lowered depends on its chunks a thread (128 threads
 * here, 16-byte chunks of 8 halves). From 4 on, a window inside the tensor
 * is one test and then each chunk a cp.async without a source size,
 * unrolled, while the slow ways, across an edge (zero-filling) and element
 * by element, are loops the back end keeps rolled (`.pragma "nounroll"`):
 * one zero-filling copy and 8 element loads in each. Below 4 (A's 32x64
 * tile: 2 chunks a thread), every chunk keeps its own test, unrolled, and
 * so do its elements. Two copy sites each: before the loop and in it. */
Test(codegen, ring_copies_test_a_window_once_from_four_chunks_a_thread)
{
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n@ph.tensorcore\n@ph.autotune(BM=[32, 128])\n"
        "def mm(A: ph.tensor[ph.f16][M, 64], B: ph.tensor[ph.f16][N, 64], C: ph.tensor[ph.f32][M, N], k: ph.i32):\n"
        "    acc: ph.var[ph.tile[ph.f32][BM, 64]] = 0.0\n"
        "    for j in range(0, k, 64):\n"
        "        acc += ph.dot_t(A[j:+BM, :], B[j:+64, :])\n"
        "    C[0:+BM, 0:+64] = acc\n";
    IrModule *m = tu_compile("mm.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    cr_assert_eq(m->nfuncs, 2);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    /* per config: chunks without a source size, all cp.async, rolled loops, element loads */
    static const struct { const char *name; int inside, copies, rolled, loads; } want[2] = {
        /* A small: 2 sites x 2 chunks tested, 2 x 2 x 8 elements; B (64x64, 4 a thread) test-once */
        {"mm__BM_32", 2 * 4, 2 * 4 + 2 * 2 + 2 * 1, 2 * 2, 2 * 2 * 8 + 2 * 8},
        /* A (128x64, 8 a thread) and B both test-once */
        {"mm__BM_128", 2 * 8 + 2 * 4, 2 * 12 + 2 * 2, 2 * 4, 2 * 2 * 8},
    };
    for (int i = 0; i < 2; i++) {
        char *text = entry_text(ptx, want[i].name);
        cr_assert_not_null(text, "%s", want[i].name);
        cr_expect_eq(count_of(text, "], 16;"), want[i].inside, "%s", want[i].name);
        cr_expect_eq(count_of(text, "cp.async.cg.shared.global"), want[i].copies, "%s", want[i].name);
        cr_expect_eq(count_of(text, ".pragma \"nounroll\";"), want[i].rolled, "%s", want[i].name);
        cr_expect_eq(count_of(text, "ld.global.b16"), want[i].loads, "%s", want[i].name);
        free(text);
    }
    free(ptx);
    ir_module_free(m);
}

/* Y = A * A + A in dtype dt, lowered to PTX. */
static char *muladd_ptx(const char *dt)
{
    char src[512];
    snprintf(src, sizeof src,
             "import phobos.lang as ph\n"
             "@ph.kernel\n"
             "def muladd(A: ph.tensor[ph.%s][N], Y: ph.tensor[ph.%s][N]):\n"
             "    a: ph.let = A[0:+128]\n"
             "    Y[0:+128] = a * a + a\n", dt, dt);
    IrModule *m = tu_compile("muladd.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    ir_module_free(m);
    return ptx;
}

/* f32 a*b + c is one fma.rn.f32 (docs/language.md); in f16 the product is
 * rounded to f16 first, so the two stay apart. */
Test(codegen, f32_multiply_adds_contract_into_fma)
{
    char *ptx = muladd_ptx("f32");
    cr_expect(strstr(ptx, "fma.rn.f32") != NULL, "%s", ptx);
    cr_expect(strstr(ptx, "mul.rn.f32") == NULL && strstr(ptx, "add.rn.f32") == NULL, "%s", ptx);
    free(ptx);
    ptx = muladd_ptx("f16");
    cr_expect(strstr(ptx, "fma.rn") == NULL, "%s", ptx);
    free(ptx);
}

Test(codegen, attention_kernels_use_no_local_memory, .timeout = 120)
{
    if (!ptxas_path()) cr_skip_test("ptxas not found: resource usage not read");
    IrModule *m = driver_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX), *log = NULL;
    cr_assert_eq(run_ptxas(ptx, "sm_90", &log), 0, "%s", log);
    int reports = 0;
    for (const char *p = log; (p = strstr(p, "bytes stack frame")); p++) {
        const char *line = p;
        while (line > log && line[-1] != '\n') line--;
        int frame = -1, stores = -1, loads = -1;
        cr_assert_eq(sscanf(line, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &frame, &stores, &loads), 3,
                     "unexpected ptxas report: %.100s", line);
        cr_expect_eq(frame, 0, "a kernel has a %d-byte stack frame:\n%s", frame, log);
        cr_expect_eq(stores + loads, 0, "a kernel spills:\n%s", log);
        reports++;
    }
    cr_expect_eq(reports, m->nfuncs, "ptxas -v reported %d kernels, expected %d:\n%s", reports, m->nfuncs, log);
    free(log);
    free(ptx);
    ir_module_free(m);
}

Test(codegen, llvm_ir_names_kernels_and_uses_ptx_kernel_convention)
{
    IrModule *m = driver_compile_file("examples/attention/attention.ph", NULL, stderr);
    cr_assert_not_null(m);
    char *ll = emit(m, "sm_90", CG_EMIT_LLVM);
    cr_expect(strstr(ll, "define ptx_kernel void @attn_fwd__D_64__BR_32__BC_32(") != NULL, "%.2000s", ll);
    cr_expect(strstr(ll, "target triple = \"nvptx64-nvidia-cuda\"") != NULL);
    free(ll);
    ir_module_free(m);
}

/* A kernel with ntensors f32 tensors T0.. and nscalars i32 scalars s0..;
 * it copies T0 into the last tensor. */
static char *wide_kernel(int ntensors, int nscalars)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    fprintf(out, "import phobos.lang as ph\n@ph.kernel\ndef wide(");
    for (int i = 0; i < ntensors; i++) fprintf(out, "%sT%d: ph.tensor[ph.f32][N]", i ? ", " : "", i);
    for (int i = 0; i < nscalars; i++) fprintf(out, ", s%d: ph.i32", i);
    fprintf(out, "):\n    T%d[0:+128] = T0[0:+128]\n", ntensors - 1);
    fclose(out);
    return buf;
}

/* 85 tensors are 255 PTX parameters, each one declared and the last one used. */
Test(codegen, a_kernel_with_85_tensors_lowers_to_ptx)
{
    char *src = wide_kernel(85, 0), *diags = NULL;
    IrModule *m = tu_compile("wide.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    cr_expect(strstr(ptx, ".param .u64 wide_param_252,") != NULL, "the last tensor's pointer is declared");
    cr_expect(strstr(ptx, ".param .u64 wide_param_254\n") != NULL, "its second dim is the last parameter");
    cr_expect(strstr(ptx, "wide_param_255") == NULL);
    cr_expect(strstr(ptx, "[wide_param_252]") != NULL, "the store goes through the last tensor's pointer");
    free(ptx);
    ir_module_free(m);
    free(src);
    free(diags);
}

/* The entry declares the parameters the kernel ABI lists (ir/abi.h), in its order. */
Test(codegen, entry_parameters_are_the_abi_list)
{
    char *src = wide_kernel(2, 2), *diags = NULL;
    IrModule *m = tu_compile("wide.ph", src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    const IrFunc *f = m->funcs[0];
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    IrAbiParam abi[8];
    int n = ir_abi_params(f->params, f->nparams, abi);
    cr_assert_eq(n, 8);
    for (int k = 0; k < n; k++) {
        char decl[64];
        snprintf(decl, sizeof decl, ".param %s wide_param_%d", abi[k].slot == IR_ABI_SCALAR ? ".u32" : ".u64", k);
        cr_expect(strstr(ptx, decl) != NULL, "%s is declared", decl);
    }
    cr_expect(strstr(ptx, "wide_param_8") == NULL);
    free(ptx);
    ir_module_free(m);
    free(src);
    free(diags);
}

/* Sema refuses a kernel whose parameters do not fit the parameter space;
 * IR that reaches the code generator by another way is refused there. */
Test(codegen, parameters_over_the_parameter_space_are_refused)
{
    char *src = wide_kernel(2, 0);
    IrModule *m = tu_compile("wide.ph", src, NULL, NULL);
    cr_assert_not_null(m);
    IrFunc *f = m->funcs[0];
    IrParam *own = f->params, many[171];
    for (int i = 0; i < 171; i++) many[i] = own[i % 2];
    f->params = many;
    f->nparams = 171;
    CodegenOptions o = {.target = target_find("sm_90"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *out = NULL, err[512];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &out, err, sizeof err), 1);
    cr_expect_null(out);
    cr_expect_str_eq(err, "wide: its parameters take 4104 bytes; a GPU kernel's parameters are limited to 4096 bytes");
    f->params = own;
    f->nparams = 2;
    ir_module_free(m);
    free(src);
}

static int count_in(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static const IrOp *first_op_of(const IrBlock *b, IrOpKind kind)
{
    for (int i = 0; i < b->nops; i++) {
        if (b->ops[i]->kind == kind) return b->ops[i];
        const IrOp *in = b->ops[i]->body ? first_op_of(b->ops[i]->body, kind) : NULL;
        if (in) return in;
    }
    return NULL;
}

/* The float phis of function name's loop header (its block "for") in
 * LLVM IR text: one per f32 value the loop carries. */
static int loop_carried_floats(const char *llvm, const char *name)
{
    char key[512];
    snprintf(key, sizeof key, "@%s(", name);
    const char *f = strstr(llvm, key), *head = f ? strstr(f, "\nfor:") : NULL;
    cr_assert_not_null(head, "%s: no loop header in the LLVM IR", name);
    const char *end = strstr(head, "\n\n");
    char *block = xstrndup(head, end ? (size_t)(end - head) : strlen(head));
    int n = count_in(block, " = phi float ");
    free(block);
    return n;
}

/* The attn_fwd configs of path at head dim 64, lowered to LLVM IR without
 * optimization and to PTX. Only that kernel and head dim: the backward
 * kernels and head dim 128 would take the most time, and the checks below
 * pair BC 32 with BC 64, the head dim. */
typedef struct { IrModule *m; char *llvm, *ptx; } FwdCode;

static FwdCode fwd_code(const char *path)
{
    const char *d_name[] = {"D"};
    const int64_t d_value[] = {64};
    SemaOptions o = {.kernel = "attn_fwd", .ndefines = 1, .define_names = d_name, .define_values = d_value};
    FwdCode fc = {driver_compile_file(path, &o, stderr), NULL, NULL};
    cr_assert_not_null(fc.m, "%s does not compile", path);
    cr_assert_gt(fc.m->nfuncs, 0, "%s: no attn_fwd config", path);
    fc.llvm = emit_at(fc.m, "sm_90", 0, CG_EMIT_LLVM);
    fc.ptx = emit(fc.m, "sm_90", CG_EMIT_PTX);
    return fc;
}

static void fwd_code_free(FwdCode *fc)
{
    free(fc->llvm);
    free(fc->ptx);
    ir_module_free(fc->m);
}

/* attn_fwd's row statistics m and l are slices of the scores' MMA layout,
 * which hold one value per row a thread owns: a warp owns rows / wm rows
 * of the tile, and a lane 2 rows of each 16 (lane/4 and lane/4 + 8), so
 * rows / (8 wm) each. The loop carries the accumulator's slots and that
 * many values for each of m and l (it carried one per score slot), and
 * the PTX's max.f32 are the row max (each score once, 2 shuffle steps and
 * wn - 1 other warps per row) and the new m (one per row), with one per
 * row to spare: far fewer than one per score slot for m alone. */
static void expect_row_statistics_per_owned_row(const FwdCode *fc)
{
    for (int i = 0; i < fc->m->nfuncs; i++) {
        const IrFunc *f = fc->m->funcs[i];
        LayoutTable *t = layout_table_new();
        LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
        const IrOp *loop = first_op_of(f->body, OP_FOR), *rowmax = first_op_of(f->body, OP_REDUCE);
        cr_assert(loop && rowmax && loop->nres >= 3);
        const Layout *s = p.of[rowmax->res[0]]->parent, *acc = p.of[loop->res[0]];
        cr_assert_eq(s->kind, LAY_MMA, "%s: the scores are not in the MMA layout", f->name);
        cr_assert_eq(p.of[loop->res[1]]->kind, LAY_SLICE);
        cr_assert_eq(p.of[loop->res[2]]->kind, LAY_SLICE);
        int rows = s->rows / (8 * s->wm);
        int carried = loop_carried_floats(fc->llvm, f->name);
        cr_expect_eq(carried, layout_nslots(acc) + 2 * rows, "%s: the loop carries %d floats: acc's %d slots and %d rows for m and l",
                     f->name, carried, layout_nslots(acc), rows);
        char *text = entry_text(fc->ptx, f->name);
        cr_assert_not_null(text);
        int maxes = count_in(text, "max.f32"), bound = layout_nslots(s) + (3 + s->wn) * rows;
        cr_expect_leq(maxes, bound, "%s: %d max.f32, more than %d (%d score slots, %d rows, %d warps a row)", f->name, maxes, bound,
                      layout_nslots(s), rows, s->wn);
        free(text);
        layout_plan_free(&p);
        layout_table_free(t);
    }
}

/* alpha = exp(m - m_new) lives in the row slice of the scores [BR, BC]
 * and multiplies the accumulator [BR, D]; where the warps split the rows
 * alike, the slices are one layout and the broadcast stays in registers.
 * The forward kernel with BC 128 (!= D) then has as many barriers as with
 * BC 64 (= D): none for an exchange of alpha (or of 1/l after the loop). */
static void expect_no_exchange_where_bc_is_not_d(const FwdCode *fc)
{
    int pairs = 0;
    for (int i = 0; i < fc->m->nfuncs; i++) {
        const IrFunc *f = fc->m->funcs[i];
        if (!strstr(f->name, "__BC_128__") || strstr(f->name, "__BR_192__")) continue;   /* 192 rows: BC 128 alone */
        char *other = replace_all(f->name, "__BC_128__", "__BC_64__");
        char *text = entry_text(fc->ptx, f->name), *other_text = entry_text(fc->ptx, other);
        cr_assert(text && other_text, "no entry %s", other);
        LayoutTable *t = layout_table_new();
        LayoutPlan p = layout_plan(f, t, &mma_sync_layouts);
        const IrOp *loop = first_op_of(f->body, OP_FOR), *rowmax = first_op_of(f->body, OP_REDUCE);
        const Layout *alpha = p.of[rowmax->res[0]], *acc = p.of[loop->res[0]];
        cr_assert_eq(acc->cols, 64);
        cr_assert(alpha->parent != acc && layout_same_map(alpha, layout_slice(t, acc, 1)), "%s: the warps split the rows alike", f->name);
        layout_plan_free(&p);
        layout_table_free(t);
        /* a block barrier, or the consumers' named one where a producer warpgroup is launched */
        int bars = count_in(text, "bar.sync") + count_in(text, "barrier.sync"),
            other_bars = count_in(other_text, "bar.sync") + count_in(other_text, "barrier.sync");
        cr_expect_gt(other_bars, 0);
        cr_expect_eq(bars, other_bars, "%s: %d barriers, %s: %d", f->name, bars, other, other_bars);
        pairs++;
        free(text);
        free(other_text);
        free(other);
    }
    cr_expect_eq(pairs, 12, "BR 128 and 256, 2 and 3 stages, W 0, 1 and 2");
}

Test(codegen, attention_forward_keeps_one_row_statistic_per_owned_row_in_registers, .timeout = 120)
{
    FwdCode example = fwd_code("examples/attention/attention.ph"), tuned = fwd_code("bench/attention_tuned.ph");
    expect_row_statistics_per_owned_row(&example);
    expect_row_statistics_per_owned_row(&tuned);
    expect_no_exchange_where_bc_is_not_d(&tuned);
    fwd_code_free(&example);
    fwd_code_free(&tuned);
}

/* ptxas (CUDA 13.0) drops the negation in max(a, -b) chained into another
 * integer max (compiler/nvidia/cg_ptxas.c): generated PTX carries no neg.s32, and
 * the rewrite computes ~x + 1 under the same guard. */
Test(codegen, integer_negation_is_written_as_not_and_add_one)
{
    IrModule *m = tu_compile("rowmax_neg.ph",
                             "import phobos.lang as ph\n"
                             "@ph.kernel\n"
                             "def k(X: ph.tensor[ph.i32][M, K], Y: ph.tensor[ph.i32][M, N]):\n"
                             "    Y[0:+16, 0:+8] = ph.rowmax(-X[0:+16, 0:+32])\n",
                             NULL, NULL);
    cr_assert_not_null(m);
    char *ptx = emit(m, "sm_90", CG_EMIT_PTX);
    cr_expect(strstr(ptx, "neg.s32") == NULL, "%s", ptx);
    cr_expect(strstr(ptx, "not.b32") != NULL && strstr(ptx, "max.s32") != NULL, "%s", ptx);
    free(ptx);
    ir_module_free(m);

    char *out = ptxas_workarounds("\tneg.s32 \t%r39, %r69;\n"
                                  "\t@%p3 neg.s32 \t%r4, %r4;\n"
                                  "\tneg.f32 \t%f1, %f2;\n"
                                  "\tneg.s32 \t%r1, %r2; // kept: not one plain instruction\n"
                                  "\tmax.s32 \t%r44, %r39, %r40;");
    cr_expect_str_eq(out, "\tnot.b32 \t%r39, %r69;\n"
                          "\tadd.s32 \t%r39, %r39, 1;\n"
                          "\t@%p3 not.b32 \t%r4, %r4;\n"
                          "\t@%p3 add.s32 \t%r4, %r4, 1;\n"
                          "\tneg.f32 \t%f1, %f2;\n"
                          "\tneg.s32 \t%r1, %r2; // kept: not one plain instruction\n"
                          "\tmax.s32 \t%r44, %r39, %r40;");
    free(out);
}

/* LLVM 19's NVPTX lowers `sitofp i1` as an unsigned conversion (true to
 * 1.0), and InstCombine forms one from -(q % 2) stored to an f32 tensor:
 * the NVIDIA rows rewrite it into a select of -1.0 and 0.0 before the back
 * end (compiler/nvidia/cg_ptxas.c). */
Test(codegen, a_negated_bit_converts_to_minus_one)
{
    IrModule *m = tu_compile("negmod2.ph",
                             "import phobos.lang as ph\n"
                             "@ph.kernel\n"
                             "def k(X: ph.tensor[ph.i32][N], Y: ph.tensor[ph.f32][N]):\n"
                             "    t: ph.let = ((X[0:+16] * X[0:+16]) // (-3)) % 2\n"
                             "    Y[0:+16] = -t\n",
                             NULL, NULL);
    cr_assert_not_null(m);
    const char *archs[] = {"sm_80", "sm_90", "sm_90a"};
    for (int i = 0; i < 3; i++) {
        char *ll = emit(m, archs[i], CG_EMIT_LLVM), *ptx = emit(m, archs[i], CG_EMIT_PTX);
        cr_expect(strstr(ll, "sitofp i1") == NULL, "%s: %s", archs[i], ll);
        cr_expect(strstr(ptx, "selp.f32") != NULL && strstr(ptx, "0fBF800000") != NULL, "%s: %s", archs[i], ptx);
        free(ll);
        free(ptx);
    }
    ir_module_free(m);
}

/* ---- line information (-lineinfo) ---- */

static char *emit_lined(const IrModule *m, const char *arch, const char *source)
{
    CodegenOptions o = {.target = target_find(arch), .opt_level = CODEGEN_OPT_DEFAULT, .lineinfo = true, .source = source};
    char *out = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &out, err, sizeof err), 0, "codegen failed: %s", err);
    return out;
}

/* The line of the .loc in force at the first instruction that contains
 * what (0 where LLVM merged code of several lines), or -1 when there is
 * no such instruction or no .loc before it. */
static int loc_line_of(const char *ptx, const char *what)
{
    const char *at = strstr(ptx, what);
    int line = -1;
    for (const char *p = ptx; at && (p = strstr(p, ".loc\t")) && p < at; p++)
        cr_assert_eq(sscanf(p, ".loc\t1 %d", &line), 1, "a .loc that names another file: %.40s", p);
    return at ? line : -1;
}

static const char *scale_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "def scale(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * 128\n"   /* line 4 */
    "    x: ph.let = X[i0:+128]\n"              /* line 5 */
    "    y: ph.let = ph.exp(x) * a\n"           /* line 6 */
    "    Y[i0:+128] = y\n";                     /* line 7 */

/* Each statement's instructions carry its line: the block index, the
 * load, the exponential, the store; the file is the source's, from the
 * folder the compiler runs in. Without line information there is none. */
Test(codegen, lineinfo_maps_instructions_to_their_statements)
{
    char *diags = NULL;
    IrModule *m = tu_compile("scale.ph", scale_src, NULL, &diags);
    cr_assert_not_null(m, "%s", diags);
    char *ptx = emit_lined(m, "sm_90", "scale.ph");
    char cwd[4096], file[4200];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(file, sizeof file, ".file\t1 \"%s/scale.ph\"\n", cwd);
    cr_expect(strstr(ptx, file) != NULL, "no %s in:\n%s", file, ptx);
    cr_expect_eq(loc_line_of(ptx, "%ctaid.x"), 4, "%s", ptx);
    cr_expect_eq(loc_line_of(ptx, "ld.global"), 5, "%s", ptx);
    cr_expect_eq(loc_line_of(ptx, "ex2.approx"), 6, "%s", ptx);
    cr_expect_eq(loc_line_of(ptx, "st.global"), 7, "%s", ptx);
    cr_expect(strstr(ptx, ".loc\t1 6 17\n") != NULL, "ph.exp(x) starts at column 17:\n%s", ptx);
    cr_expect(strstr(ptx, ".target sm_90\n") != NULL, "directives only: no `debug` target, which changes ptxas's code");
    free(ptx);
    ptx = emit(m, "sm_90", CG_EMIT_PTX);
    cr_expect(strstr(ptx, ".loc") == NULL && strstr(ptx, ".file") == NULL && strstr(ptx, ".section") == NULL, "%s", ptx);
    free(ptx);
    ir_module_free(m);
    free(diags);
}

/* The PTX without the lines of line information: .loc, .file, .section
 * and the labels that only they use ($L__tmp, $L__func_begin/end). */
static char *without_line_info(const char *ptx)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    for (const char *p = ptx; *p;) {
        size_t n = strcspn(p, "\n");
        const char *s = p + strspn(p, " \t");
        bool drop = !strncmp(s, ".loc\t", 5) || !strncmp(s, ".file\t", 6) || !strncmp(s, ".section\t", 9) ||
                    !strncmp(s, "$L__tmp", 7) || !strncmp(s, "$L__func_", 9) || s == p + n;
        if (!drop) fprintf(out, "%.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    fclose(out);
    return buf;
}

/* Line information changes no instruction: every example's PTX with it,
 * less its directives, is its PTX without it (so ptxas allocates the same
 * registers); and where ptxas is installed, it assembles for sm_80 and sm_90. */
Test(codegen, lineinfo_changes_no_instruction, .timeout = 300)
{
    glob_t g;
    cr_assert_eq(glob("examples/*/*.ph", 0, NULL, &g), 0, "no examples found (run from the repository root)");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        IrModule *m = driver_compile_file(g.gl_pathv[i], NULL, stderr);
        cr_assert_not_null(m, "%s does not compile", g.gl_pathv[i]);
        for (int a = 0; a < 2; a++) {
            const char *arch = a ? "sm_80" : "sm_90";
            char *plain = emit(m, arch, CG_EMIT_PTX), *lined = emit_lined(m, arch, g.gl_pathv[i]);
            char *stripped = without_line_info(lined), *plain_stripped = without_line_info(plain);
            cr_expect(strstr(lined, ".loc\t1 ") != NULL, "%s: no .loc", g.gl_pathv[i]);
            cr_expect_str_eq(stripped, plain_stripped, "%s, %s: line information changed the code", g.gl_pathv[i], arch);
            char *log = NULL;
            if (ptxas_path()) cr_expect_eq(run_ptxas(lined, arch, &log), 0, "ptxas -arch=%s rejects %s with line information:\n%s",
                                           arch, g.gl_pathv[i], log);
            free(log);
            free(stripped);
            free(plain_stripped);
            free(plain);
            free(lined);
        }
        ir_module_free(m);
    }
    globfree(&g);
}
