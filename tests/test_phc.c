/* test_phc.c: the command line, run as a user runs it: outputs compared
 * with golden files (the IR of every example, --list, diagnostics), exit
 * statuses, option spellings, standard input and output, what -o does to
 * links and special files, colour on a terminal, and no output file when
 * there are errors. */
#define _XOPEN_SOURCE 700   /* posix_openpt */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "phobos.h"
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
                                          "--dump-after", "--arch", "-O0", "-O2", "-O3", "-lineinfo", "--stats",
                                          "--time-passes", "exit status"};
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        cr_expect(strstr(out, options[i]) != NULL, "--help does not mention %s", options[i]);
    cr_expect(strstr(out, "--arch=TARGET      the target: sm_80, sm_86, sm_89, sm_90, sm_90a (default sm_90)") != NULL, "%s", out);
    free(out); free(err);
    cr_assert_eq(phc("-h", &out, &err), 0);
    cr_expect(strstr(out, "usage: phc") != NULL);
    free(out); free(err);
    cr_assert_eq(phc("--version", &out, &err), 0);
    char want[64];
    snprintf(want, sizeof want, "phc %d.%d.%d\n", PH_VERSION_MAJOR, PH_VERSION_MINOR, PH_VERSION_PATCH);
    cr_expect_str_eq(out, want);
    cr_expect_str_eq(err, "");
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
    cr_assert_eq(phc("--list -D BLOCK=64 examples/vecadd/vecadd.ph", &out, &err), 2, "a -D that selects nothing is a bad command line");
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
/* -O2 is the default; -O3, LLVM's full pipeline, compiles the same
 * kernels; --time-passes says on stderr where the time went, step by
 * step, and changes nothing on stdout. */
Test(phc, O2_is_the_default_and_time_passes_reports_each_step)
{
    char *plain, *o2, *o3, *timed, *err;
    cr_assert_eq(phc("examples/matmul/matmul.ph", &plain, &err), 0, "%s", err);
    cr_expect_str_eq(err, "");
    free(err);
    cr_assert_eq(phc("-O2 examples/matmul/matmul.ph", &o2, &err), 0, "%s", err);
    cr_expect_str_eq(o2, plain, "-O2 is what phc does by default");
    free(err);
    cr_assert_eq(phc("-O3 examples/matmul/matmul.ph", &o3, &err), 0, "%s", err);
    cr_expect(strstr(o3, ".entry matmul__") != NULL, "%.300s", o3);
    free(err);
    cr_assert_eq(phc("--time-passes examples/matmul/matmul.ph", &timed, &err), 0, "%s", err);
    cr_expect_str_eq(timed, plain, "--time-passes changes no output");
    static const char *const steps[] = {"phc: time: front end (lex, parse, sema) ", " ms, IR passes ",
                                        "phobos: time: examples/matmul/matmul.ph: ", "ms CPU (lowering ",
                                        ", LLVM pipeline ", ", NVPTX back end ", " ms a config\n"};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) cr_expect(strstr(err, steps[i]) != NULL, "no '%s' in: %s", steps[i], err);
    free(err);
    /* the front end's line alone where no code is generated */
    cr_assert_eq(phc("--time-passes --emit=ir examples/matmul/matmul.ph", NULL, &err), 0);
    cr_expect(strstr(err, "phc: time: front end") != NULL && strstr(err, "phobos: time:") == NULL, "%s", err);
    free(err);
    free(plain), free(o2), free(o3), free(timed);
}

/* The first line where a and b differ, for a message; "" when they are equal. */
static const char *first_difference(const char *a, const char *b, char *line, size_t n)
{
    const char *at = a, *bt = b;
    while (*at && *at == *bt) at++, bt++;
    if (!*at && !*bt) return "";
    while (at > a && at[-1] != '\n') at--;
    snprintf(line, n, "%.*s", (int)strcspn(at, "\n"), at);
    return line;
}

/* The default pipeline is a short list of default<O3>'s passes (codegen.c,
 * DEFAULT_PASSES): on the examples it loses nothing, the PTX being what
 * LLVM's full pipeline, -O3, writes, byte for byte. Should this fail, the
 * list lacks a pass that a kernel now needs. */
Test(phc, the_default_pipeline_writes_the_full_pipelines_ptx_for_the_examples, .timeout = 600)
{
    static const char *const files[] = {"examples/matmul/matmul.ph", "examples/attention/attention.ph",
                                        "examples/softmax/softmax.ph", "examples/layernorm/layernorm.ph",
                                        "examples/vecadd/vecadd.ph"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char args[256], line[256], *o2, *o3, *err;
        cr_assert_eq(phc(files[i], &o2, &err), 0, "%s", err);
        free(err);
        snprintf(args, sizeof args, "-O3 %s", files[i]);
        cr_assert_eq(phc(args, &o3, &err), 0, "%s", err);
        free(err);
        cr_expect(strstr(o2, ".entry ") != NULL, "%s: %.300s", files[i], o2);
        cr_expect(strcmp(o2, o3) == 0, "%s: -O2 and -O3 differ first at: %s", files[i], first_difference(o2, o3, line, sizeof line));
        free(o2), free(o3);
    }
}

/* The code generator's helpers (fmod's) are functions of their own: the
 * default pipeline inlines them, so the kernel it writes calls nothing,
 * where -O0, which runs no pipeline, keeps the call. */
Test(phc, the_default_pipeline_inlines_the_code_generators_helpers)
{
    char *out, *err;
    cr_assert_eq(phc("-O0 --kernel=fmods tests/gpu/ops.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, ".func") != NULL && strstr(out, "call") != NULL, "no helper at -O0: %.300s", out);
    free(out), free(err);
    cr_assert_eq(phc("--kernel=fmods tests/gpu/ops.ph", &out, &err), 0, "%s", err);
    cr_expect(strstr(out, ".entry fmods__") != NULL, "%.300s", out);
    cr_expect(strstr(out, ".func") == NULL && strstr(out, "call") == NULL, "a call left in the kernel");
    free(out), free(err);
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
    snprintf(env, sizeof env, "PTXAS=%s/ptxas", dir);
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
    snprintf(env, sizeof env, "PTXAS=%s/ptxas", dir);
    cr_assert_eq(phc_env(env, "--emit=cubin examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect_str_eq(out, "CUBIN");
    cr_expect_str_eq(err, "ptxas warning : fake\n");
    free(out); free(err);
    remove_folder(dir);
}

/* No ptxas where phc looks ($PTXAS, $CUDA_HOME/bin, PATH): then, and only
 * then, the message asks whether it is installed. */
Test(phc, cubin_without_ptxas_asks_if_installed)
{
    char dir[] = "/tmp/phc-no-ptxas.XXXXXX", env[256], *out, *err;
    cr_assert_not_null(mkdtemp(dir));
    snprintf(env, sizeof env, "PTXAS= PATH=%s CUDA_HOME=%s", dir, dir);
    cr_assert_eq(phc_env(env, "--emit=cubin examples/vecadd/vecadd.ph", &out, &err), 3, "%s", err);
    cr_expect(strstr(err, "phc: ptxas could not be found ($PTXAS, ${CUDA_HOME:-/usr/local/cuda}/bin or PATH)") != NULL, "%s", err);
    cr_expect(strstr(err, "is it installed?") != NULL, "%s", err);
    cr_expect_str_eq(out, "");
    free(out); free(err);
    remove_folder(dir);
}

/* ---- --stats ---- */

/* The bytes of shared array name as ptx declares it ("... .b8 NAME[BYTES];"), or 0. */
static long long declared_shared(const char *ptx, const char *name)
{
    char pattern[300];
    snprintf(pattern, sizeof pattern, ".b8 %s[", name);
    const char *p = strstr(ptx, pattern);
    return p ? atoll(p + strlen(pattern)) : 0;
}

/* ptxas -v's report, from a stand-in named by $PTXAS: run with -v and the
 * target, each config's figures read from its own part of the report, and
 * a second line for the config whose wgmma pipeline ptxas says it broke. */
Test(phc, stats_read_what_ptxas_reports)
{
    char dir[] = "/tmp/phc-fake-ptxas.XXXXXX", env[256], *out, *err;
    fake_ptxas(dir,
               "echo \"$@\" > \"$0.args\"\n"
               "cat >&2 <<'EOF'\n"
               "ptxas info    : (C7519) warpgroup.arrive is injected in around line 9 by compiler to allow use of registers in GMMA in function 'vecadd__BLOCK_256'\n"
               "ptxas info    : (C7519) warpgroup.arrive is injected in around line 7 by compiler to allow use of registers in GMMA in function 'vecadd__BLOCK_256'\n"
               "ptxas info    : Compiling entry function 'vecadd__BLOCK_128' for 'sm_80'\n"
               "ptxas info    : Function properties for vecadd__BLOCK_128\n"
               "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
               "ptxas info    : Used 40 registers, used 0 barriers, 512 bytes smem\n"
               "ptxas info    : Compiling entry function 'vecadd__BLOCK_256' for 'sm_80'\n"
               "ptxas info    : Function properties for vecadd__BLOCK_256\n"
               "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
               "ptxas info    : Used 32 registers, used 0 barriers\n"
               "EOF\n");
    snprintf(env, sizeof env, "PTXAS=%s/ptxas", dir);
    cr_assert_eq(phc_env(env, "--stats --arch=sm_80 examples/vecadd/vecadd.ph", &out, &err), 0, "%s", err);
    cr_expect_str_eq(err,
        "vecadd__BLOCK_128: 40 registers, 8 bytes spill stores, 12 bytes spill loads, 16 bytes stack frame, "
        "512 bytes static shared, 0 bytes dynamic shared\n"
        "vecadd__BLOCK_256: 32 registers, 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack frame, "
        "0 bytes static shared, 0 bytes dynamic shared\n"
        "vecadd__BLOCK_256: wgmma pipeline lost: 2 warpgroup.arrive injected (C7519); first: (C7519) warpgroup.arrive is "
        "injected in around line 9 by compiler to allow use of registers in GMMA\n");
    cr_expect(strstr(out, ".entry vecadd__BLOCK_128(") != NULL, "the PTX is still the output");
    char path[128];
    snprintf(path, sizeof path, "%s/ptxas.args", dir);
    char *args = tu_read_file(path);
    cr_assert_not_null(args, "the stand-in never ran");
    cr_expect(!strncmp(args, "-v -arch=sm_80 -o ", 18), "ptxas ran as: %s", args);
    free(out); free(err); free(args);
    /* a ptxas that rejects the PTX: its words, status 3, nothing written */
    remove_folder(dir);
    strcpy(dir, "/tmp/phc-fake-ptxas.XXXXXX");
    fake_ptxas(dir, "echo 'ptxas fatal   : bad PTX' >&2\nexit 255\n");
    snprintf(env, sizeof env, "PTXAS=%s/ptxas", dir);
    cr_assert_eq(phc_env(env, "--stats examples/vecadd/vecadd.ph", &out, &err), 3, "%s", err);
    cr_expect_str_eq(err, "phc: ptxas failed (exit status 255):\nptxas fatal   : bad PTX\n");
    cr_expect_str_eq(out, "");
    free(out); free(err);
    remove_folder(dir);
}

/* Without ptxas anywhere it looks, one line says so, then each config's
 * shared memory as its PTX declares it: static for matmul's operand tiles,
 * dynamic past 48 KB for the three-stage attention forward pass. */
Test(phc, stats_without_ptxas_give_the_shared_memory)
{
    char dir[] = "/tmp/phc-no-ptxas.XXXXXX", env[256], *out, *err;
    cr_assert_not_null(mkdtemp(dir));
    snprintf(env, sizeof env, "PTXAS= PATH=%s CUDA_HOME=%s", dir, dir);
    cr_assert_eq(phc_env(env, "--stats examples/matmul/matmul.ph", &out, &err), 0, "%s", err);
    static const char note[] = "phc: --stats: no ptxas ($PTXAS, ${CUDA_HOME:-/usr/local/cuda}/bin or PATH): registers, "
                               "spills and stack frames are not known, only the shared memory phc allocates\n";
    cr_assert(!strncmp(err, note, strlen(note)), "%s", err);
    const char *entries[] = {"matmul__BM_32__BN_32__BK_32", "matmul__BM_64__BN_32__BK_32"};
    const char *line = err + strlen(note);
    for (int i = 0; i < 2; i++) {
        char name[128], want[300];
        snprintf(name, sizeof name, "%s_smem", entries[i]);
        long long bytes = declared_shared(out, name);
        cr_expect_gt(bytes, 0, "%s declares no shared area", entries[i]);
        snprintf(want, sizeof want, "%s: %lld bytes static shared, 0 bytes dynamic shared\n", entries[i], bytes);
        cr_expect(!strncmp(line, want, strlen(want)), "expected %sgot %s", want, line);
        line += strcspn(line, "\n") + 1;
    }
    cr_expect_str_eq(line, "");
    free(out); free(err);
    cr_assert_eq(phc_env(env, "--stats --kernel attn_fwd -D D=64 -D BR=128 -D BC=64 -D S=3 -D W=0 bench/attention_tuned.ph", &out, &err),
                 0, "%s", err);
    const char *constant = strstr(out, ".u32 attn_fwd__D_64__BR_128__BC_64__NT_256__S_3__W_0__MASKED_1_dynamic_shared_bytes = ");
    cr_assert_not_null(constant, "this config's shared memory is dynamic");
    char want[300];
    snprintf(want, sizeof want, "attn_fwd__D_64__BR_128__BC_64__NT_256__S_3__W_0__MASKED_1: 0 bytes static shared, %lld bytes dynamic shared\n",
             atoll(strchr(constant, '=') + 2));
    cr_expect_str_eq(err + strlen(note), want);
    free(out); free(err);
    cr_expect_eq(phc("--stats --emit=ir examples/vecadd/vecadd.ph", NULL, &err), 2);
    cr_expect(strstr(err, "--stats reports on the PTX phc writes") != NULL, "%s", err);
    free(err);
    remove_folder(dir);
}

/* The real ptxas, where this machine has one: each config's registers (at
 * most the 255 of .maxnreg), no spills and no stack frame for matmul, and
 * ptxas's static shared memory is what the PTX declares. */
Test(phc, stats_from_ptxas, .timeout = 120)
{
    char *out, *err;
    cr_assert_eq(phc("--stats examples/matmul/matmul.ph", &out, &err), 0, "%s", err);
    if (strstr(err, "phc: --stats: no ptxas"))
        cr_skip_test("no ptxas on this machine: its report is not checked here (the stand-in's and the no-ptxas cases are)");
    int lines = 0;
    for (const char *line = err; *line; line += strcspn(line, "\n") + 1, lines++) {
        char entry[128], area[160];
        int regs;
        long long stores, loads, frame, shared, dynamic;
        cr_assert_eq(sscanf(line, "%127[^:]: %d registers, %lld bytes spill stores, %lld bytes spill loads, %lld bytes stack frame, "
                                  "%lld bytes static shared, %lld bytes dynamic shared", entry, &regs, &stores, &loads, &frame,
                            &shared, &dynamic), 7, "unexpected line: %s", line);
        cr_expect(regs > 0 && regs <= 255, "%s: %d registers", entry, regs);
        cr_expect_eq(stores + loads + frame, 0, "%s spills", entry);
        snprintf(area, sizeof area, "%s_smem", entry);
        cr_expect_eq(shared, declared_shared(out, area), "%s: ptxas counts %lld bytes of shared memory", entry, shared);
        cr_expect_eq(dynamic, 0);
    }
    cr_expect_eq(lines, 2, "%s", err);
    free(out); free(err);
}

/* --emit=layouts shows the layout pass's decisions, numbered as --emit=ir
 * numbers values: the attention forward loop keeps the scores and the
 * accumulator in the tensor cores' layout, the softmax state in its row
 * slice, K and V in swizzled shared-memory ring slots, the mask nowhere of
 * its own. */
Test(phc, layouts_of_the_attention_forward_pass)
{
    char *out, *err;
    cr_assert_eq(phc("--emit=layouts --kernel attn_fwd examples/attention/attention.ph", &out, &err), 0, "%s", err);
    static const char *const want[] = {
        "func attn_fwd__D_64__BR_32__BC_32 (128 threads)\n",
        "  %11.q = load : f16[32, 64]  blocked[32x64: v8 lanes 4x8 warps 4x1]\n",
        "    %50.k = wait_async : f16[32, 64]  shared[32x64: swizzled, vec 8, per phase 1, max phase 8]\n",
        "    %58.s = dot_t : f32[32, 32]  mma[32x32: warps 2x2, 1x2 pieces each] (tensor cores)\n",
        "    %45.m = loop value : f32[32, 1]  slice(mma[32x32: warps 2x2, 1x2 pieces each], axis 1)\n",
        "    %44.acc = loop value : f32[32, 64]  mma[32x64: warps 2x2, 1x4 pieces each]\n",
        "      %69 = le : bool[32, 32]  built where used\n",
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

/* The output of phc args, which must exit with status_want. */
static char *phc_out(const char *args, int status_want)
{
    char *out, *err;
    int rc = phc(args, &out, &err);
    cr_assert_eq(rc, status_want, "phc %s: status %d, not %d\n%s", args, rc, status_want, err);
    free(err);
    return out;
}

/* Each option that takes a value takes it as --opt=VALUE or --opt VALUE
 * (-oFILE or -o FILE, -DNAME=V or -D NAME=V), before the file or after it,
 * and a file named like an option follows --. */
Test(phc, options_take_their_values_in_either_spelling)
{
    static const char *const pairs[][2] = {
        {"--emit=ir examples/vecadd/vecadd.ph", "--emit ir examples/vecadd/vecadd.ph"},
        {"--emit=ir --kernel=attn_bwd_delta examples/attention/attention.ph", "examples/attention/attention.ph --kernel attn_bwd_delta --emit ir"},
        {"--list -D BLOCK=256 examples/vecadd/vecadd.ph", "--list -DBLOCK=256 examples/vecadd/vecadd.ph"},
        {"--arch=sm_80 -O0 examples/vecadd/vecadd.ph", "--arch sm_80 -O 0 examples/vecadd/vecadd.ph"},
        {"--dump-after=licm examples/vecadd/vecadd.ph", "--dump-after licm -- examples/vecadd/vecadd.ph"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        char *a = phc_out(pairs[i][0], 0), *b = phc_out(pairs[i][1], 0);
        cr_expect(strlen(a) > 40, "phc %s wrote %zu bytes", pairs[i][0], strlen(a));
        cr_expect_str_eq(a, b, "phc %s and phc %s differ", pairs[i][0], pairs[i][1]);
        free(a); free(b);
    }
    char *want = tu_read_file("tests/golden/vecadd.ir");
    static const char *const outputs[] = {"-o %s", "-o%s", "--output=%s", "--output %s"};
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        char path[64], opt[128], args[256];
        snprintf(path, sizeof path, "/tmp/phc_test_o.%d.ir", getpid());
        unlink(path);
        snprintf(opt, sizeof opt, outputs[i], path);
        snprintf(args, sizeof args, "--emit=ir %s examples/vecadd/vecadd.ph", opt);
        free(phc_out(args, 0));
        char *got = tu_read_file(path);
        cr_expect(got && !strcmp(got, want), "phc %s wrote %s", args, got ? got : "nothing");
        free(got);
        unlink(path);
    }
    free(want);
}

/* -lineinfo (nvcc's spelling) and --lineinfo: .file names the source from
 * the folder phc ran in, and the store of vecadd.ph's line 12 (column 5)
 * has its .loc; standard input is <stdin>. Without it there is no .loc. */
Test(phc, lineinfo_names_the_source_lines)
{
    char *one = phc_out("-lineinfo examples/vecadd/vecadd.ph", 0), *two = phc_out("--lineinfo examples/vecadd/vecadd.ph", 0);
    cr_expect_str_eq(one, two);
    char cwd[4096], file[4200];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(file, sizeof file, ".file\t1 \"%s/examples/vecadd/vecadd.ph\"\n", cwd);
    cr_expect(strstr(one, file) != NULL, "no %s in:\n%s", file, one);
    const char *store = strstr(one, "st.global");
    cr_assert_not_null(store);
    const char *loc = NULL;
    for (const char *p = one; (p = strstr(p, ".loc\t")) && p < store; p++) loc = p;
    cr_assert_not_null(loc, "no .loc before the store:\n%s", one);
    cr_expect(!strncmp(loc, ".loc\t1 12 5\n", 12), "the store's line is %.12s", loc);
    char *piped = phc_out("-lineinfo - < examples/vecadd/vecadd.ph", 0);
    cr_expect(strstr(piped, ".file\t1 \"<stdin>\"\n") != NULL, "%s", piped);
    char *plain = phc_out("examples/vecadd/vecadd.ph", 0);
    cr_expect(strstr(plain, ".loc") == NULL && strstr(plain, ".file") == NULL, "%s", plain);
    free(one); free(two); free(piped); free(plain);
}

/* "-" is standard input, named <stdin> in messages; "-o -" is standard output. */
Test(phc, standard_input_and_output)
{
    char *want = tu_read_file("tests/golden/vecadd.ir");
    char *a = phc_out("--emit=ir - < examples/vecadd/vecadd.ph", 0);
    char *b = phc_out("--emit=ir -o - - < examples/vecadd/vecadd.ph", 0);
    cr_expect_str_eq(a, want);
    cr_expect_str_eq(b, want);
    free(a); free(b);
    a = phc_out("--emit=ptx --kernel vecadd -o - - < examples/vecadd/vecadd.ph", 0);
    cr_expect(strstr(a, ".entry vecadd__BLOCK_256(") != NULL, "%.300s", a);
    free(a);

    char *out, *err;
    cr_assert_eq(phc("--check - < tests/golden/type_errors.ph", &out, &err), 1);
    char *golden = tu_read_file("tests/golden/type_errors.err");
    cr_expect(!strncmp(err, "<stdin>:8:22: error: '/' on two i32 values", 41), "%s", err);
    /* every message as for the file, with <stdin> for its name */
    size_t n = 0;
    for (char *p = golden; (p = strstr(p, "tests/golden/type_errors.ph")); p++) n++;
    cr_expect_gt(n, 1);
    char *e = err, *g = golden;
    while (*g) {
        if (!strncmp(g, "tests/golden/type_errors.ph", 27)) {
            cr_assert(!strncmp(e, "<stdin>", 7), "at %.60s", e);
            g += 27, e += 7;
        } else {
            cr_assert_eq(*e, *g, "stdin's messages differ from the file's at %.60s", e);
            e++, g++;
        }
    }
    cr_expect_eq(*e, 0);
    free(out); free(err); free(golden); free(want);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* -o through a symbolic link writes the file it points to and leaves the
 * link a link, relative or dangling; a file replaced keeps its mode; on
 * errors the file is untouched. */
Test(phc, output_through_a_symlink_keeps_the_link)
{
    char dir[] = "/tmp/phc-links.XXXXXX", real[96], link[96], dangling[96], made[96], args[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(real, sizeof real, "%s/real.ir", dir);
    snprintf(link, sizeof link, "%s/link.ir", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.ir", dir);
    snprintf(made, sizeof made, "%s/made.ir", dir);
    write_text(real, "old\n");
    cr_assert_eq(chmod(real, 0640), 0);
    cr_assert_eq(symlink("real.ir", link), 0);
    cr_assert_eq(symlink("made.ir", dangling), 0);

    snprintf(args, sizeof args, "--emit=ir -o %s tests/golden/type_errors.ph", link);
    free(phc_out(args, 1));
    char *got = tu_read_file(real);
    cr_expect_str_eq(got, "old\n", "a failing run wrote through the link");
    free(got);

    char *want = tu_read_file("tests/golden/vecadd.ir");
    snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", link);
    free(phc_out(args, 0));
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the link was replaced");
    cr_assert_eq(stat(real, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
    got = tu_read_file(real);
    cr_expect_str_eq(got, want);
    free(got);

    snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", dangling);
    free(phc_out(args, 0));
    cr_assert_eq(lstat(dangling, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the dangling link was replaced");
    got = tu_read_file(made);
    cr_expect(got && !strcmp(got, want), "the link's target holds %s", got ? got : "nothing");
    free(got); free(want);
    remove_folder(dir);
}

/* What -o refuses: a directory, the input file, a file it may not write,
 * a folder that is not there; each is a status 2 and leaves things as
 * they were. */
Test(phc, output_that_cannot_be_written_is_refused)
{
    char dir[] = "/tmp/phc-refused.XXXXXX", path[96], args[256], *out, *err;
    cr_assert_not_null(mkdtemp(dir));
    snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", dir);
    cr_expect_eq(phc(args, &out, &err), 2);
    cr_expect(strstr(err, "it is a directory") != NULL, "%s", err);
    struct stat st;
    cr_expect(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    free(out); free(err);

    snprintf(path, sizeof path, "%s/in.ph", dir);
    char *src = tu_read_file("examples/vecadd/vecadd.ph");
    write_text(path, src);
    snprintf(args, sizeof args, "--emit=ir -o %s %s", path, path);
    cr_expect_eq(phc(args, &out, &err), 2);
    cr_expect(strstr(err, "it is the input file") != NULL, "%s", err);
    char *now = tu_read_file(path);
    cr_expect_str_eq(now, src);
    free(now); free(src); free(out); free(err);

    snprintf(path, sizeof path, "%s/nowhere/x.ir", dir);
    snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", path);
    cr_expect_eq(phc(args, &out, &err), 2);
    cr_expect(strstr(err, "cannot write") != NULL, "%s", err);
    free(out); free(err);

    if (geteuid() != 0) {   /* root may write anything */
        snprintf(path, sizeof path, "%s/ro.ir", dir);
        write_text(path, "read only\n");
        cr_assert_eq(chmod(path, 0444), 0);
        snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", path);
        cr_expect_eq(phc(args, &out, &err), 2);
        now = tu_read_file(path);
        cr_expect_str_eq(now, "read only\n");
        free(now); free(out); free(err);
    }
    remove_folder(dir);
}

/* A special file is written, never replaced: a FIFO stays a FIFO and its
 * reader gets the output; a link to /proc/self/fd/1, as /dev/stdout is,
 * when standard output is a file opened for appending, appends to it (the
 * file is not renamed over); a character device stays one. The links and
 * devices are the test's own, so a phc that replaced them would harm
 * nothing outside its folder. */
Test(phc, special_files_are_written_not_replaced)
{
    char dir[] = "/tmp/phc-special.XXXXXX", fifo[96], got_path[96], cmd[512], args[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(got_path, sizeof got_path, "%s/read", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    snprintf(cmd, sizeof cmd, "timeout 20 cat %s > %s &", fifo, got_path);
    cr_assert_eq(system(cmd), 0);
    snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", fifo);
    free(phc_out(args, 0));
    struct stat st;
    cr_assert_eq(lstat(fifo, &st), 0);
    cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
    char *want = tu_read_file("tests/golden/vecadd.ir"), *got = NULL;
    for (int i = 0; i < 200 && !(got && *got && !strcmp(got, want)); i++) {   /* the reader finishes on its own time */
        free(got);
        nanosleep(&(struct timespec){0, 50000000}, NULL);
        got = tu_read_file(got_path);
    }
    cr_expect(got && !strcmp(got, want), "the FIFO's reader got %s", got ? got : "nothing");
    free(got);

    char appended[96], stdout_link[96];
    snprintf(appended, sizeof appended, "%s/appended", dir);
    snprintf(stdout_link, sizeof stdout_link, "%s/stdout", dir);
    write_text(appended, "first line\n");
    cr_assert_eq(symlink("/proc/self/fd/1", stdout_link), 0);
    snprintf(cmd, sizeof cmd, PHC " --emit=ir -o %s examples/vecadd/vecadd.ph >> %s", stdout_link, appended);
    cr_assert_eq(system(cmd), 0);
    got = tu_read_file(appended);
    cr_expect(!strncmp(got, "first line\n", 11) && !strcmp(got + 11, want), "%s", got);
    free(got);

    char node[96];
    snprintf(node, sizeof node, "%s/null", dir);
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0) {   /* a /dev/null of our own, where allowed */
        snprintf(args, sizeof args, "--emit=ir -o %s examples/vecadd/vecadd.ph", node);
        free(phc_out(args, 0));
        cr_assert_eq(lstat(node, &st), 0);
        cr_expect(S_ISCHR(st.st_mode), "the character device was replaced");
    }
    free(want);
    remove_folder(dir);
}

/* Every kind of bad command line is status 2, with a message that says
 * which; errors in the program are 1. */
Test(phc, exit_status_of_each_bad_command_line)
{
    static const struct { const char *args, *says; } bad[] = {
        {"--bogus examples/vecadd/vecadd.ph", "unknown option '--bogus'"},
        {"-X examples/vecadd/vecadd.ph", "unknown option '-X'"},
        {"--check=yes examples/vecadd/vecadd.ph", "option '--check' takes no value"},
        {"examples/vecadd/vecadd.ph --kernel", "option '--kernel' needs a value"},
        {"examples/vecadd/vecadd.ph -o", "option '-o' needs a value"},
        {"--emit=bogus examples/vecadd/vecadd.ph", "unknown --emit kind 'bogus'"},
        {"--arch sm_70 examples/vecadd/vecadd.ph", "unknown --arch 'sm_70' (sm_80, sm_86, sm_89, sm_90, sm_90a)"},
        {"-O1 examples/vecadd/vecadd.ph", "unknown optimization level '-O1'"},
        {"--kernel nope examples/vecadd/vecadd.ph", "no kernel named 'nope'"},
        {"-D BLOCK examples/vecadd/vecadd.ph", "-D expects NAME=VALUE"},
        {"-D =3 examples/vecadd/vecadd.ph", "-D expects NAME=VALUE"},
        {"-D BLOCK=x examples/vecadd/vecadd.ph", "-D expects an integer value"},
        {"-D NOPE=1 examples/vecadd/vecadd.ph", "no selected kernel has a meta-parameter named 'NOPE'"},
        {"-D BLOCK=64 examples/vecadd/vecadd.ph", "the -D values select no config"},
        {"examples/vecadd/vecadd.ph examples/softmax/softmax.ph", "more than one input file"},
        {"", "no input file"},
        {"/nonexistent.ph", "cannot open /nonexistent.ph"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out, *err;
        cr_expect_eq(phc(bad[i].args, &out, &err), 2, "phc %s", bad[i].args);
        cr_expect(strstr(err, bad[i].says) != NULL, "phc %s says: %s", bad[i].args, err);
        cr_expect_str_eq(out, "", "phc %s", bad[i].args);
        free(out); free(err);
    }
    free(phc_out("--check tests/golden/syntax_error.ph", 1));
    free(phc_out("--check examples/vecadd/vecadd.ph", 0));
}

/* Every target --arch names: sm_86 and sm_89 write sm_80's code; sm_90a
 * puts wgmma first (the configs it does not take on mma.sync), where sm_90
 * has mma.sync alone for the same program. */
Test(phc, arch_names_each_target, .timeout = 120)
{
    static const struct { const char *args, *target, *has, *lacks; } want[] = {
        {"--arch=sm_86 examples/matmul/matmul.ph", ".target sm_80", "mma.sync.aligned", "wgmma"},
        {"--arch=sm_89 examples/matmul/matmul.ph", ".target sm_80", "mma.sync.aligned", "wgmma"},
        {"--arch=sm_90a tests/gpu/gemm_wgmma.ph", ".target sm_90a", "wgmma.mma_async.sync.aligned.m64n", NULL},
        {"--arch=sm_90 tests/gpu/gemm_wgmma.ph", ".target sm_90\n", "mma.sync.aligned", "wgmma"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char *ptx = phc_out(want[i].args, 0), *sm80 = i < 2 ? phc_out("--arch=sm_80 examples/matmul/matmul.ph", 0) : NULL;
        cr_expect(strstr(ptx, want[i].target) && strstr(ptx, want[i].has), "phc %s", want[i].args);
        cr_expect(!want[i].lacks || !strstr(ptx, want[i].lacks), "phc %s: %s", want[i].args, want[i].lacks);
        if (sm80) cr_expect_str_eq(ptx, sm80, "phc %s: not sm_80's code", want[i].args);
        free(ptx); free(sm80);
    }
}

/* Runs phc after env with its standard error on a pseudo-terminal, as in
 * an interactive shell; returns what it printed there. */
static char *phc_on_tty(const char *env, const char *args)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert_geq(master, 0, "no pseudo-terminal");
    cr_assert_eq(grantpt(master), 0);
    cr_assert_eq(unlockpt(master), 0);
    const char *name = ptsname(master);
    cr_assert_not_null(name);
    int keep = open(name, O_RDWR | O_NOCTTY);   /* so the output stays readable after phc exits */
    cr_assert_geq(keep, 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s " PHC " %s 2>%s >/dev/null", env, args, name);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "phc %s: status %d", args, st);
    cr_assert_eq(fcntl(master, F_SETFL, O_NONBLOCK), 0);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while (len + 1 < cap && (n = read(master, buf + len, cap - 1 - len)) > 0) len += (size_t)n;
    buf[len] = 0;
    close(keep);
    close(master);
    return buf;
}

/* On a terminal "error:" is red and the caret green, as clang has them;
 * NO_COLOR, TERM=dumb or a file instead of a terminal turn colour off. */
Test(phc, colour_on_a_terminal_only)
{
    char *tty = phc_on_tty("TERM=xterm NO_COLOR=", "--check tests/golden/syntax_error.ph");
    cr_expect(strstr(tty, "\033[1;31merror: \033[0m") != NULL, "%s", tty);
    cr_expect(strstr(tty, "\033[1;32m^\033[0m") != NULL, "%s", tty);
    free(tty);
    static const char *const plain[] = {"TERM=xterm NO_COLOR=1", "TERM=dumb"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        tty = phc_on_tty(plain[i], "--check tests/golden/syntax_error.ph");
        cr_expect(strstr(tty, "error: ") != NULL, "%s: %s", plain[i], tty);
        cr_expect(strchr(tty, '\033') == NULL, "%s: colour: %s", plain[i], tty);
        free(tty);
    }
    char *out, *err;
    cr_assert_eq(phc_env("TERM=xterm", "--check tests/golden/syntax_error.ph", &out, &err), 1);
    cr_expect(strchr(err, '\033') == NULL, "colour into a file: %s", err);
    free(out); free(err);
}
