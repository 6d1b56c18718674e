/* test_phc.c: the command line, run as a user runs it: outputs compared
 * with golden files (the IR of every example, --list, diagnostics), exit
 * statuses, and no output file when there are errors. */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define PHC "build/bin/phc"

/* Runs phc with args, after the shell assignments in env; returns the exit
 * status, stdout and stderr in *out, *err. */
static int phc_env(const char *env, const char *args, char **out, char **err)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s " PHC " %s > /tmp/phc_test_out.%d 2> /tmp/phc_test_err.%d", env, args, getpid(), getpid());
    int st = system(cmd);
    char path[64];
    snprintf(path, sizeof path, "/tmp/phc_test_out.%d", getpid());
    if (out) *out = tu_read_file(path);
    unlink(path);
    snprintf(path, sizeof path, "/tmp/phc_test_err.%d", getpid());
    if (err) *err = tu_read_file(path);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int phc(const char *args, char **out, char **err) { return phc_env("", args, out, err); }

static void expect_golden(const char *args, const char *golden)
{
    char *out, *err;
    int rc = phc(args, &out, &err);
    cr_assert_eq(rc, 0, "phc %s: status %d\n%s", args, rc, err);
    char *want = tu_read_file(golden);
    cr_assert_not_null(want, "missing golden file %s", golden);
    cr_expect_str_eq(out, want, "phc %s differs from %s", args, golden);
    free(out); free(err); free(want);
}

Test(phc, ir_of_every_example_matches_golden)
{
    static const char *const names[] = {"attention", "vecadd", "softmax", "matmul", "layernorm"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char args[256], golden[256];
        snprintf(args, sizeof args, "--emit=ir examples/%s/%s.ph", names[i], names[i]);
        snprintf(golden, sizeof golden, "tests/golden/%s.ir", names[i]);
        expect_golden(args, golden);
    }
}

Test(phc, list_matches_golden) { expect_golden("--list examples/attention/attention.ph", "tests/golden/attention.list"); }

static void expect_errors(const char *file, const char *golden)
{
    char args[512], *out, *err;
    snprintf(args, sizeof args, "--check %s", file);
    cr_assert_eq(phc(args, &out, &err), 1);
    char *want = tu_read_file(golden);
    cr_assert_not_null(want);
    cr_expect_str_eq(err, want);
    cr_expect_str_eq(out, "");
    free(out); free(err); free(want);
}

Test(phc, syntax_error_is_reported_with_a_caret) { expect_errors("tests/golden/syntax_error.ph", "tests/golden/syntax_error.err"); }
Test(phc, several_type_errors_in_one_run) { expect_errors("tests/golden/type_errors.ph", "tests/golden/type_errors.err"); }

Test(phc, no_output_file_on_error)
{
    char args[512], path[128];
    snprintf(path, sizeof path, "/tmp/phc_test_o.%d.ir", getpid());
    unlink(path);
    snprintf(args, sizeof args, "--emit=ir -o %s tests/golden/type_errors.ph", path);
    cr_assert_eq(phc(args, NULL, NULL), 1);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "phc wrote %s despite errors", path);
    snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", path);
    cr_assert_eq(phc(args, NULL, NULL), 0);
    char *got = tu_read_file(path), *want = tu_read_file("tests/golden/vecadd.ir");
    cr_expect_str_eq(got, want);
    free(got); free(want);
    unlink(path);
}

Test(phc, usage_errors_exit_2)
{
    char *out, *err;
    cr_expect_eq(phc("--emit=bogus examples/vecadd/vecadd.ph", &out, &err), 2);
    cr_expect(strstr(err, "unknown --emit kind 'bogus'") != NULL, "%s", err);
    free(out); free(err);
    cr_expect_eq(phc("", &out, &err), 2);
    cr_expect(strstr(err, "no input file") != NULL, "%s", err);
    free(out); free(err);
    cr_expect_eq(phc("/nonexistent.ph", &out, &err), 2);
    cr_expect(strstr(err, "cannot open /nonexistent.ph") != NULL, "%s", err);
    free(out); free(err);
    cr_expect_eq(phc("-D BR examples/vecadd/vecadd.ph", &out, &err), 2);
    free(out); free(err);
    cr_expect_eq(phc("--dump-after=nosuchpass examples/vecadd/vecadd.ph", &out, &err), 2);
    cr_expect(strstr(err, "unknown pass 'nosuchpass'") != NULL, "%s", err);
    free(out); free(err);
}

Test(phc, help_and_version)
{
    char *out, *err;
    cr_assert_eq(phc("--help", &out, &err), 0);
    static const char *const options[] = {"--check", "--emit=", "-o FILE", "--kernel", "-D NAME=VALUE", "--list",
                                          "--dump-after", "--arch", "-O0", "exit status"};
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        cr_expect(strstr(out, options[i]) != NULL, "--help does not mention %s", options[i]);
    free(out); free(err);
    cr_assert_eq(phc("--version", &out, &err), 0);
    cr_expect(!strncmp(out, "phc ", 4));
    free(out); free(err);
}

Test(phc, kernel_and_define_restrict_what_is_emitted)
{
    char *out, *err;
    cr_assert_eq(phc("--list -D BLOCK=256 examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "vecadd__BLOCK_256") != NULL && strstr(out, "vecadd__BLOCK_128") == NULL, "%s", out);
    free(out); free(err);
    cr_assert_eq(phc("--emit=ir --kernel attn_bwd_delta examples/attention/attention.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "func attn_bwd_delta__D_64__BR_64") != NULL);
    cr_expect(strstr(out, "attn_fwd") == NULL);
    free(out); free(err);
    cr_assert_eq(phc("--list -D BLOCK=64 examples/vecadd/vecadd.ph", &out, &err), 1);
    cr_expect(strstr(err, "select no config") != NULL, "%s", err);
    free(out); free(err);
}

Test(phc, tokens_ast_and_dump_after)
{
    char *out, *err;
    cr_assert_eq(phc("--emit=tokens examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "INDENT") != NULL && strstr(out, "NAME vecadd") != NULL, "%.400s", out);
    free(out); free(err);
    cr_assert_eq(phc("--emit=ast examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "vecadd") != NULL);
    free(out); free(err);
    cr_assert_eq(phc("--dump-after=fold examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "func vecadd__BLOCK_128") != NULL);
    free(out); free(err);
}

Test(phc, ptx_llvm_and_readable_O0)
{
    char *out, *err;
    cr_assert_eq(phc("--emit=ptx examples/attention/attention.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, ".entry attn_fwd__D_64__BR_32__BC_32(") != NULL);
    cr_expect(strstr(out, ".target sm_90") != NULL);
    free(out); free(err);
    cr_assert_eq(phc("--arch=sm_80 -O0 --emit=ptx examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, ".target sm_80") != NULL);
    free(out); free(err);
    cr_assert_eq(phc("-O0 --emit=llvm examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, "define ptx_kernel void @vecadd__BLOCK_128(") != NULL, "%.300s", out);
    free(out); free(err);
}
/* An if's branch that yields a value built or converted there (a splat, a
 * transposed tile), beside returns nested in ifs and loops: the yielded
 * slots once lived in the code generator's cache of conversions, which
 * freed them when the branch ended, before the phis read them, and phc died
 * of a segfault. */
Test(phc, branches_yielding_built_values_beside_returns_compile)
{
    static const char *const files[] = {
        "if-return-yields-splat", "elif-return-yields-converted", "loop-return-in-nested-if",
        "loop-body-ends-in-return", "deep-if-loop-return",
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char args[256], *out, *err;
        snprintf(args, sizeof args, "-O0 --emit=llvm tests/difftest/regressions/%s.ph", files[i]);
        cr_assert_eq(phc(args, &out, &err), 0, "phc %s:\n%s", args, err);
        cr_expect(strstr(out, "define ptx_kernel void @fuzz") != NULL, "%s: %.300s", files[i], out);
        /* the splat 1.0 flows into the if's result from the else side */
        if (i == 0) cr_expect(strstr(out, "phi float [ %") && strstr(out, ", [ 1.000000e+00, %"), "%s", out);
        free(out); free(err);
    }
}


Test(phc, cubin_through_ptxas)
{
    if (access("/usr/local/cuda/bin/ptxas", X_OK)) cr_skip_test("ptxas not in /usr/local/cuda/bin: no cubin");
    char *out, *err;
    cr_assert_eq(phc("--emit=cubin examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect(!memcmp(out, "\177ELF", 4), "a cubin is an ELF file");
    free(out); free(err);
}

/* A folder holding an executable script named ptxas with body script. */
static void fake_ptxas(char *dir, const char *script)
{
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/ptxas", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\n%s", script);
    fclose(f);
    cr_assert_eq(chmod(path, 0755), 0);
}

static void remove_folder(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ptxas that runs and rejects the PTX: its own message and exit status are
 * shown, and nothing suggests it is missing; no cubin is written. */
Test(phc, cubin_shows_what_ptxas_says)
{
    char dir[] = "/tmp/phc-fake-ptxas.XXXXXX", env[256], *out, *err;
    fake_ptxas(dir, "echo \"ptxas fatal   : Unresolved extern function 'nope'\" >&2\nexit 255\n");
    snprintf(env, sizeof env, "PATH=%s:\"$PATH\"", dir);
    cr_assert_eq(phc_env(env, "--emit=cubin examples/vecadd/vecadd.ph", &out, &err), 3, "%s", err);
    cr_expect_str_eq(err, "phc: ptxas failed (exit status 255):\nptxas fatal   : Unresolved extern function 'nope'\n");
    cr_expect_str_eq(out, "");
    free(out); free(err);
    remove_folder(dir);
}

/* ptxas that succeeds: the cubin it writes is the output, its warnings go
 * to stderr. */
Test(phc, cubin_is_what_ptxas_writes)
{
    char dir[] = "/tmp/phc-fake-ptxas.XXXXXX", env[256], *out, *err;
    fake_ptxas(dir, "while [ \"$1\" != -o ]; do shift; done\nprintf 'CUBIN' > \"$2\"\necho 'ptxas warning : fake' >&2\n");
    snprintf(env, sizeof env, "PATH=%s:\"$PATH\"", dir);
    cr_assert_eq(phc_env(env, "--emit=cubin examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect_str_eq(out, "CUBIN");
    cr_expect_str_eq(err, "ptxas warning : fake\n");
    free(out); free(err);
    remove_folder(dir);
}

/* No ptxas on PATH nor in $CUDA_HOME/bin: then, and only then, the message
 * asks whether it is installed. */
Test(phc, cubin_without_ptxas_asks_if_installed)
{
    char dir[] = "/tmp/phc-no-ptxas.XXXXXX", env[256], *out, *err;
    cr_assert_not_null(mkdtemp(dir));
    snprintf(env, sizeof env, "PATH=%s CUDA_HOME=%s", dir, dir);
    cr_assert_eq(phc_env(env, "--emit=cubin examples/vecadd/vecadd.ph", &out, &err), 3, "%s", err);
    cr_expect(strstr(err, "phc: ptxas could not be run (not on PATH nor in $CUDA_HOME/bin") != NULL, "%s", err);
    cr_expect(strstr(err, "is it installed?") != NULL, "%s", err);
    cr_expect_str_eq(out, "");
    free(out); free(err);
    remove_folder(dir);
}

/* --emit=layouts shows the layout pass's decisions, numbered as --emit=ir
 * numbers values: the attention forward loop keeps the scores and the
 * accumulator in the tensor cores' layout, the softmax state in its row
 * slice, the mask nowhere of its own. */
Test(phc, layouts_of_the_attention_forward_pass)
{
    char *out, *err;
    cr_assert_eq(phc("--emit=layouts --kernel attn_fwd examples/attention/attention.ph", &out, &err), 0, "%s", err);
    static const char *const want[] = {
        "func attn_fwd__D_64__BR_32__BC_32 (128 threads)\n",
        "  %11.q = load : f16[32, 64]  blocked[32x64: v8 lanes 4x8 warps 4x1]\n",
        "    %46.s = dot_t : f32[32, 32]  mma[32x32: warps 2x2, 1x2 pieces each] (tensor cores)\n",
        "    %42.m = loop value : f32[32, 1]  slice(mma[32x32: warps 2x2, 1x2 pieces each], axis 1)\n",
        "    %41.acc = loop value : f32[32, 64]  mma[32x64: warps 2x2, 1x4 pieces each]\n",
        "      %57 = le : bool[32, 32]  built where used\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) cr_expect(strstr(out, want[i]) != NULL, "missing: %s\n%s", want[i], out);
    free(out);
    free(err);
}

/* Writes a kernel with ntensors f32 tensors and nscalars i32 scalars to
 * path; it copies T0 into the last tensor. */
static void write_wide_kernel(const char *path, int ntensors, int nscalars)
{
    FILE *out = fopen(path, "w");
    cr_assert_not_null(out);
    fprintf(out, "import phobos.lang as ph\n@ph.kernel\ndef wide(");
    for (int i = 0; i < ntensors; i++) fprintf(out, "%sT%d: ph.tensor[ph.f32][N]", i ? ", " : "", i);
    for (int i = 0; i < nscalars; i++) fprintf(out, ", s%d: ph.i32", i);
    fprintf(out, "):\n    T%d[0:+128] = T0[0:+128]\n", ntensors - 1);
    fclose(out);
}

/* A tensor takes 24 bytes of the 4096-byte kernel parameter space, a
 * scalar 4: 170 tensors and 4 scalars fill it exactly; one scalar more is
 * an error at the kernel's name, before any code is generated. */
Test(phc, kernel_parameter_space_is_checked)
{
    char path[64], args[128], *out, *err;
    snprintf(path, sizeof path, "/tmp/phc_wide.%d.ph", getpid());
    write_wide_kernel(path, 85, 0);
    snprintf(args, sizeof args, "--emit=ptx %s", path);
    cr_assert_eq(phc(args, &out, &err), 0, "%s", err);
    cr_expect(strstr(out, ".entry wide(") != NULL);
    free(out); free(err);

    write_wide_kernel(path, 170, 4);
    snprintf(args, sizeof args, "--check %s", path);
    cr_expect_eq(phc(args, &out, &err), 0, "%s", err);
    free(out); free(err);

    write_wide_kernel(path, 170, 5);
    for (int emit = 0; emit < 2; emit++) {
        snprintf(args, sizeof args, "%s %s", emit ? "--emit=ptx" : "--check", path);
        cr_expect_eq(phc(args, &out, &err), 1, "%s", err);
        char want[256];
        snprintf(want, sizeof want, "%s:3:5: error: kernel 'wide' takes 4100 bytes of parameters (170 tensors of 24 bytes, "
                 "5 scalars of 4); a GPU kernel's parameters are limited to 4096 bytes\n", path);
        cr_expect(!strncmp(err, want, strlen(want)), "got:\n%s", err);
        cr_expect_str_eq(out, "");
        free(out); free(err);
    }
    unlink(path);
}
