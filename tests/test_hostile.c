/* test_hostile.c: hostile and odd inputs to the front end. Each case runs in
 * a forked child whose CPU time and peak memory are read with wait4: every
 * input must end in a clear error (the message is compared) or a correct
 * result, within LIMIT_S seconds of CPU time and LIMIT_MB of memory.
 *
 * Bounds: 1 s and 200 MB. Under AddressSanitizer the memory bound is not
 * checked (its shadow memory and quarantine make RSS meaningless) and the
 * sanitizers' slowdown gets 8 s. CPU time rather than wall time is
 * measured, because the suites run in parallel with each other. */
#define _DEFAULT_SOURCE   /* wait4 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif
#if UNDER_ASAN || defined(__SANITIZE_UNDEFINED__)
static const double LIMIT_S = 8.0;
#else
static const double LIMIT_S = 1.0;
#endif
static const long LIMIT_MB = 200;

#define HEAD "import phobos.lang as ph\n\n"
/* A kernel whose body continues with more statements (each indented 4). */
#define KERNEL HEAD "@ph.kernel\n@ph.autotune(BLOCK=[64])\n" \
    "def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):\n" \
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n" \
    "    x: ph.var[ph.tile[ph.f32][BLOCK]] = X[i0:+BLOCK]\n"
#define STORE "    Y[i0:+BLOCK] = x\n"

typedef struct {
    char *out;        /* what the child wrote: messages, then a summary line */
    double cpu_s;     /* user + system */
    long maxrss_mb;
    int status;
} Run;

/* The whole front end on len bytes (NULs allowed): lex, parse, check and
 * lower, passes. Writes the messages and "ok: N functions" or "errors". */
static void compile_job(const char *text, size_t len, FILE *out)
{
    SrcFile src = {.path = "t.ph", .text = text, .len = len};
    Diag d;
    diag_init(&d, &src, out);
    Arena *a = arena_new();
    static const SemaOptions none;
    Module *m = parse(&src, &d, a);
    IrModule *ir = d.nerrors ? NULL : sema(m, &d, &none);
    char err[512];
    for (int i = 0; ir && i < ir->nfuncs; i++)
        if (ir_run_passes(ir->funcs[i], true, NULL, NULL, err, sizeof err)) fprintf(out, "internal: %s\n", err);
    if (ir) fprintf(out, "ok: %d functions\n", ir->nfuncs);
    else fprintf(out, "errors\n");
    ir_module_free(ir);
    arena_free(a);
    diag_free(&d);
}

/* The lexer alone: "tokens: N, errors: E". */
static void lex_job(const char *text, size_t len, FILE *out)
{
    SrcFile src = {.path = "t.ph", .text = text, .len = len};
    Diag d;
    diag_init(&d, &src, out);
    Arena *a = arena_new();
    int n;
    lex(&src, &d, a, &n);
    fprintf(out, "tokens: %d, errors: %d\n", n, d.nerrors);
    arena_free(a);
    diag_free(&d);
}

/* text must have a NUL at text[len] (SrcFile's guarantee). */
static Run run_child(void (*job)(const char *, size_t, FILE *), const char *text, size_t len)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        FILE *out = fdopen(fds[1], "w");
        job(text, len, out);
        fclose(out);
        _exit(0);
    }
    close(fds[1]);
    Run r = {0};
    size_t cap = 4096, n = 0;
    r.out = malloc(cap);
    ssize_t got;
    while ((got = read(fds[0], r.out + n, cap - n - 1)) > 0) {
        n += (size_t)got;
        if (n + 1 == cap) r.out = realloc(r.out, cap *= 2);
    }
    r.out[n] = 0;
    close(fds[0]);
    struct rusage ru;
    cr_assert_eq(wait4(pid, &r.status, 0, &ru), pid);
    r.cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    r.maxrss_mb = ru.ru_maxrss / 1024;
    return r;
}

/* Runs job on text and checks the exit, the time and the memory bounds. */
static Run run_bounded(void (*job)(const char *, size_t, FILE *), const char *text, size_t len)
{
    Run r = run_child(job, text, len);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "the child failed (status %#x):\n%.2000s", r.status, r.out);
    cr_assert_leq(r.cpu_s, LIMIT_S, "took %.2f s of CPU (bound %.1f s)", r.cpu_s, LIMIT_S);
    if (!UNDER_ASAN) cr_assert_leq(r.maxrss_mb, LIMIT_MB, "peak memory %ld MB (bound %ld MB)", r.maxrss_mb, LIMIT_MB);
    return r;
}

/* Only the "t.ph:L:C: error: ..." lines and the summary, without the source echo. */
static char *messages(const char *out)
{
    char *res = calloc(1, strlen(out) + 1);
    for (const char *p = out; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p + 1) : strlen(p);
        if (strncmp(p, "    ", 4)) strncat(res, p, n);
        p += n;
    }
    return res;
}

static void expect(const char *text, size_t len, const char *want)
{
    Run r = run_bounded(compile_job, text, len);
    char *msgs = messages(r.out);
    cr_assert_str_eq(msgs, want);
    free(msgs);
    free(r.out);
}

/* n copies of s after head and before tail, in a malloc'd string. */
static char *repeat(const char *head, const char *s, size_t n, const char *tail, size_t *len)
{
    size_t hl = strlen(head), sl = strlen(s), tl = strlen(tail);
    *len = hl + sl * n + tl;
    char *t = malloc(*len + 1), *p = t;
    memcpy(p, head, hl), p += hl;
    for (size_t i = 0; i < n; i++) memcpy(p, s, sl), p += sl;
    memcpy(p, tail, tl), p += tl;
    *p = 0;
    return t;
}

Test(hostile, empty_file_is_an_empty_module)
{
    expect("", 0, "ok: 0 functions\n");
}

Test(hostile, only_comments)
{
    const char *t = "# nothing but comments\n\n   # indented\n#\n# no newline at the end";
    expect(t, strlen(t), "ok: 0 functions\n");
}

/* 10 MB of statements: lexing held ~590 MB (64-byte tokens grown in one
 * array and then copied into the arena); now 32-byte tokens are written
 * once into an array of the counted size. */
/* Ten megabytes of statements are 4.7 million tokens: the lexer counts
 * them without building any, and refuses the file past 2 million. */
Test(hostile, ten_megabytes_of_tokens_refused_in_bounded_memory)
{
    size_t len, n = 10u << 20;
    n /= strlen("    x = x + x * x\n");
    char *t = repeat(KERNEL, "    x = x + x * x\n", n, STORE, &len);
    Run r = run_bounded(lex_job, t, len);
    cr_assert(strstr(r.out, "error: more than 2000000 tokens in this file; phc reads at most 2000000\n"), "%.300s", r.out);
    cr_assert(strstr(r.out, "tokens: 1, errors: 1\n"), "%.300s", r.out);
    cr_log_info("10 MB lexed: %.2f s, %ld MB", r.cpu_s, r.maxrss_mb);
    free(r.out);
    free(t);
}

/* A 10 MB file of a kernel in a sea of comments and a docstring. */
Test(hostile, ten_megabytes_of_comments_around_a_kernel)
{
    size_t len;
    char *t = repeat("\"\"\"A module docstring.\n" "0123456789abcdef\n", "# a comment line with text in it .......\n",
                     (10u << 20) / 41, "\"\"\"\n" KERNEL STORE, &len);
    expect(t, len, "ok: 1 functions\n");
    free(t);
}

/* n bytes of '$' through the whole front end, with the exit and the
 * memory bound checked; the time is the caller's to judge. */
static Run garbage(size_t n)
{
    size_t len;
    char *t = repeat("", "$", n, "", &len);
    Run r = run_child(compile_job, t, len);
    free(t);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "the child failed (status %#x):\n%.2000s", r.status, r.out);
    if (!UNDER_ASAN) cr_assert_leq(r.maxrss_mb, LIMIT_MB, "peak memory %ld MB (bound %ld MB)", r.maxrss_mb, LIMIT_MB);
    return r;
}

/* 10 MB of bytes the language has no use for: the lexer stops talking after
 * 200 messages, so the output stays small. Its time is bounded by the work
 * it does rather than by the clock alone: 10 MB must cost at most about
 * GARBAGE_SCALE times what 1 MB costs (linear work is 10 times; a cost per
 * byte that grows with the file, 100), with GARBAGE_SLACK_S for fork and
 * clock granularity. The absolute bound is 4 times LIMIT_S: 10 MB measured
 * 0.48-0.65 s of the 1 s bound on a loaded two-core machine, too close to
 * tell a slow machine from a slow lexer; the scaling check tells them. */
enum { GARBAGE_SCALE = 20 };
static const double GARBAGE_SLACK_S = 0.1;

Test(hostile, ten_megabytes_of_garbage)
{
    Run big = garbage(10u << 20), small = garbage(1u << 20);
    char *msgs = messages(big.out);
    cr_assert(!strncmp(msgs, "t.ph:1:1: error: unexpected character '$'\nt.ph:1:2: error: unexpected character '$'\n", 84),
              "%.300s", msgs);
    cr_assert_leq(strlen(big.out), 64 * 1024, "%zu bytes of messages", strlen(big.out));
    cr_log_info("garbage: 1 MB %.3f s, 10 MB %.3f s", small.cpu_s, big.cpu_s);
    cr_assert_leq(big.cpu_s, 4 * LIMIT_S, "10 MB took %.2f s of CPU (bound %.1f s)", big.cpu_s, 4 * LIMIT_S);
    cr_assert_leq(big.cpu_s, GARBAGE_SCALE * small.cpu_s + GARBAGE_SLACK_S,
                  "10 MB took %.3f s of CPU, 1 MB %.3f s: more than %d times as much", big.cpu_s, small.cpu_s, GARBAGE_SCALE);
    free(msgs);
    free(big.out);
    free(small.out);
}

/* Showing a message's source line costs the 200 bytes shown, not the
 * file: 10 MB of '$' on one line, and 10 MB of comment lines with the bad
 * bytes on the last ones, each cost at most about what 10 MB of '$' in
 * 100-byte lines costs. The line was found by scanning from the file's
 * start and then to its end, byte by byte, for each of the 50 messages
 * shown: 0.45 s for the one line, 0.4 s for the comments, against 0.05 s. */
Test(hostile, a_message_costs_its_line_not_the_file)
{
    size_t len;
    char *one_line = repeat("", "$", 10u << 20, "", &len);
    Run line = run_child(compile_job, one_line, len);
    free(one_line);
    char *bytes = repeat("", "$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$\n",
                         (10u << 20) / 100, "", &len);
    Run lines = run_child(compile_job, bytes, len);
    free(bytes);
    char *tail = repeat("", "# a comment line of forty bytes .......\n", (10u << 20) / 40, "$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n"
                        "$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n"
                        "$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n$\n", &len);
    Run late = run_child(compile_job, tail, len);
    free(tail);
    cr_log_info("10 MB of '$': %.3f s in 100-byte lines, %.3f s on one line; after 10 MB of comments %.3f s",
                lines.cpu_s, line.cpu_s, late.cpu_s);
    cr_assert(strstr(late.out, "t.ph:262145:1: error: unexpected character '$'\n    $\n    ^\n"), "%.300s", late.out);
    cr_assert_leq(line.cpu_s, 3 * lines.cpu_s + 0.05, "one 10 MB line took %.3f s, 100-byte lines %.3f s", line.cpu_s, lines.cpu_s);
    cr_assert_leq(late.cpu_s, 3 * lines.cpu_s + 0.05, "messages after 10 MB took %.3f s, 10 MB of messages %.3f s", late.cpu_s,
                  lines.cpu_s);
    free(line.out);
    free(lines.out);
    free(late.out);
}

/* Messages in any order each show their own line: the line last shown is
 * where the next search starts only when the next message is not above it. */
Test(hostile, messages_out_of_line_order_show_their_lines)
{
    SrcFile src = {.path = "t.ph", .text = "one\ntwo\n\tthree\nfour", .len = 19};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    Diag d;
    diag_init(&d, &src, out);
    int lines[] = {3, 1, 4, 4, 2, 5, 1};
    for (int i = 0; i < 7; i++) diag_error(&d, (Loc){lines[i], 2}, "at %d", i);
    diag_free(&d);
    fclose(out);
    cr_assert_str_eq(buf, "t.ph:3:2: error: at 0\n    \tthree\n    \t^\n"
                          "t.ph:1:2: error: at 1\n    one\n     ^\n"
                          "t.ph:4:2: error: at 2\n    four\n     ^\n"
                          "t.ph:4:2: error: at 3\n    four\n     ^\n"
                          "t.ph:2:2: error: at 4\n    two\n     ^\n"
                          "t.ph:5:2: error: at 5\n    \n    ^\n"
                          "t.ph:1:2: error: at 6\n    one\n     ^\n");
    free(buf);
}

/* A 100 kB line, a flat sum of 25,000 terms: one expression, not 25,000
 * levels of nesting (it was refused as "expression nested too deeply"). */
Test(hostile, hundred_kilobyte_line)
{
    size_t len;
    char *t = repeat(KERNEL "    x = x", " + x", 25000, "\n" STORE, &len);
    cr_assert_geq(len, 100000u);
    expect(t, len, "ok: 1 functions\n");
    free(t);
}

Test(hostile, thousand_nested_brackets)
{
    size_t len;
    char *open = repeat(KERNEL "    x = ", "(", 1000, "x", &len);
    char *t = repeat(open, ")", 1000, "\n" STORE, &len);
    expect(t, len, "t.ph:8:208: error: nesting too deep\nerrors\n");
    free(open);
    free(t);
}

Test(hostile, thousand_nested_blocks)
{
    char *t = malloc(4 * 1024 * 1024), *p = t;
    p += sprintf(p, KERNEL);
    for (int i = 1; i <= 1000; i++) p += sprintf(p, "%*sif i0 > %d:\n", 4 * i, "", i);
    sprintf(p, "%*sx = x + 1.0\n" STORE, 4 * 1001, "");
    expect(t, strlen(t), "t.ph:207:804: error: nesting too deep\nerrors\n");
    free(t);
}

Test(hostile, huge_integer_literal)
{
    const char *t = KERNEL "    x = x * 123456789012345678901234567890\n" STORE;
    expect(t, strlen(t), "t.ph:8:13: error: integer literal too large\nerrors\n");
}

/* Python's rule: a float literal past the largest double is inf. */
Test(hostile, huge_float_literal)
{
    const char *t = KERNEL "    x = x * 1e999 + 0.000000000000000000000000000000000000000000000001e-400\n" STORE;
    expect(t, strlen(t), "ok: 1 functions\n");
}

Test(hostile, invalid_utf8_and_nul_bytes)
{
    static const char t[] = KERNEL "    y = \xff\xfe\n    z = 1\0\n" STORE;
    expect(t, sizeof t - 1, "t.ph:8:9: error: invalid UTF-8\nt.ph:8:10: error: invalid UTF-8\n"
           "t.ph:9:10: error: NUL byte in source\nt.ph:8:11: error: expected an expression, found NEWLINE\nerrors\n");
}

Test(hostile, crlf_line_ends)
{
    const char *lf = KERNEL "    if i0 > 0:\n        x = x * 2.0\n" STORE;
    char *crlf = malloc(2 * strlen(lf) + 1), *p = crlf;
    for (const char *q = lf; *q; q++) {
        if (*q == '\n') *p++ = '\r';
        *p++ = *q;
    }
    *p = 0;
    char *d1, *d2;
    IrModule *a = tu_compile("t.ph", lf, NULL, &d1), *b = tu_compile("t.ph", crlf, NULL, &d2);
    cr_assert(a && b, "%s%s", d1, d2);
    char *ta = tu_ir_text(a), *tb = tu_ir_text(b);
    cr_assert_str_eq(ta, tb, "CRLF must lower exactly as LF");
    expect(crlf, strlen(crlf), "ok: 1 functions\n");
    free(ta), free(tb), free(d1), free(d2), free(crlf);
    ir_module_free(a);
    ir_module_free(b);
}

/* Python's rule: indentation whose meaning depends on the tab size is an
 * error; tabs used the same way on every line are fine. */
Test(hostile, tabs_mixed_with_spaces)
{
    const char *ambiguous = KERNEL "    if i0 > 0:\n        x = x * 2.0\n\tx = x * 3.0\n" STORE;
    expect(ambiguous, strlen(ambiguous),
           "t.ph:10:2: error: inconsistent use of tabs and spaces in indentation\nerrors\n");
    const char *consistent = HEAD "@ph.kernel\n@ph.autotune(BLOCK=[64])\n"
        "def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):\n"
        "\ti0: ph.let = ph.ctx.block.x * BLOCK\n"
        "\tif i0 > 0:\n\t\tY[i0:+BLOCK] = X[i0:+BLOCK]\n";
    expect(consistent, strlen(consistent), "ok: 1 functions\n");
}

Test(hostile, ten_thousand_statements)
{
    size_t len;
    char *t = repeat(KERNEL, "    x = x + x * 0.5\n", 10000, STORE, &len);
    expect(t, len, "ok: 1 functions\n");
    free(t);
}

/* 60,000 errors: the check that prints each message once compared each
 * new message with all earlier ones (quadratic: seconds here). */
Test(hostile, sixty_thousand_errors)
{
    char *t = malloc(4 << 20), *p = t;
    p += sprintf(p, KERNEL);
    for (int i = 0; i < 60000; i++) p += sprintf(p, "    x = x + u%d\n", i);
    sprintf(p, STORE);
    Run r = run_bounded(compile_job, t, strlen(t));
    cr_assert(strstr(r.out, "t.ph:8:13: error: undeclared name 'u0'\n"), "%.300s", r.out);
    cr_assert(strstr(r.out, "t.ph: too many errors; no more are shown\nerrors\n"), "%.300s", r.out);
    free(r.out);
    free(t);
}

Test(hostile, config_product_of_ten_thousand)
{
    char list[1024], *p = list;
    for (int i = 1; i <= 100; i++) p += sprintf(p, "%s%d", i > 1 ? ", " : "", i);
    char *t = malloc(4096);
    sprintf(t, HEAD "@ph.kernel\n@ph.autotune(A=[%s], B=[%s])\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n", list, list);
    expect(t, strlen(t), "t.ph:5:5: error: kernel 'k' has 10000 configs, more than the 4096 phc compiles; "
           "give @ph.autotune fewer values\nerrors\n");
    /* a product past 2^63 is counted without overflow */
    char *p16 = malloc(16384), *q = p16;
    q += sprintf(q, HEAD "@ph.kernel\n@ph.autotune(");
    for (int i = 0; i < 16; i++) q += sprintf(q, "%sM%d=[%s]", i ? ", " : "", i, list);
    sprintf(q, ")\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n");
    expect(p16, strlen(p16), "t.ph:5:5: error: kernel 'k' has more than 9223372036854775807 configs, more than the "
           "4096 phc compiles; give @ph.autotune fewer values\nerrors\n");
    free(p16);
    free(t);
}

/* The largest product phc compiles, each config lowered and optimized. */
Test(hostile, config_product_at_the_limit)
{
    char list[1024], *p = list;
    for (int i = 1; i <= 64; i++) p += sprintf(p, "%s%d", i > 1 ? ", " : "", 64 * i);
    char *t = malloc(4096);
    sprintf(t, HEAD "@ph.kernel\n@ph.autotune(A=[%s], B=[%s])\n"
            "def k(X: ph.tensor[ph.f32][N]):\n    x: ph.let = X[0:+A]\n    X[0:+A] = x * 2.0\n", list, list);
    expect(t, strlen(t), "ok: 4096 functions\n");
    free(t);
}

/* Ten megabytes of real statements: refused at the lexer's token limit,
 * before any token or AST node is built. */
Test(hostile, ten_megabytes_of_statements)
{
    size_t len;
    char *t = repeat(KERNEL, "    x = x + x * 0.5 + 1.0 * x - x\n", 400000, STORE, &len);
    cr_assert_gt(len, (size_t)10 << 20);
    Run r = run_bounded(compile_job, t, len);
    cr_assert(strstr(r.out, "error: more than 2000000 tokens in this file; phc reads at most 2000000\n"), "%.300s", r.out);
    cr_assert(!strstr(r.out, "expected"), "no cascade after the cut: %.300s", r.out);
    free(r.out);
    free(t);
}

/* Lowering costs configs x statements: a large body in many configs is
 * refused before any work, with the count. */
Test(hostile, configs_times_statements)
{
    char list[1024], *p = list;
    for (int i = 1; i <= 64; i++) p += sprintf(p, "%s%d", i > 1 ? ", " : "", i);
    size_t len;
    char head[4096];
    snprintf(head, sizeof head, HEAD "@ph.kernel\n@ph.autotune(A=[%s], B=[%s])\n"
             "def k(X: ph.tensor[ph.f32][N]):\n    x: ph.var[ph.f32] = 0.0\n", list, list);
    char *t = repeat(head, "    x = x + 1.0\n", 10000, "", &len);
    expect(t, len, "t.ph:5:5: error: kernel 'k' has 4096 configs of 10001 statements: 40964096 statements to lower, "
           "more than the 4000000 phc lowers for one kernel; select fewer configs with -D or give @ph.autotune fewer values\nerrors\n");
    free(t);
}

/* A file under the token limit but over the statement limit: the parser
 * stops there, with one message. */
Test(hostile, hundred_thousand_statements)
{
    size_t len;
    char *t = repeat(KERNEL, "    x = x\n", 120000, STORE, &len);
    Run r = run_bounded(compile_job, t, len);
    cr_assert(strstr(r.out, "error: more than 100000 statements in this file; phc compiles at most 100000\n"), "%.300s", r.out);
    cr_assert(!strstr(r.out, "expected"), "no cascade after the cut: %.300s", r.out);
    free(r.out);
    free(t);
}
