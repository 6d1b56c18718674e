/* gpufuzz.c: differential fuzzing of a back end. Generates random programs
 * (phgen), runs each config on the back end and in the interpreter on the
 * same inputs (difftest), and on a difference reduces the program while the
 * difference persists and writes it as DIR/mismatch-SEED.ph, its run spec
 * in the header, where --regress reads it back.
 *
 *   gpufuzz [--backend gpu|interp|planted] [--seed S] [--count N] [--seconds T]
 *           [--out DIR] [--no-reduce] [--timeout T] [--isolate all|compile|none] [--regress FILE...]
 *
 * Each program runs in a child process, which sends its verdict back
 * through a pipe: a program that kills the compiler or the back end is a
 * crash, one that runs past --timeout seconds (60) a hang; either is
 * reduced like a mismatch (each try in a child of its own) and written as
 * DIR/crash-SEED.ph or DIR/hang-SEED.ph, and the run goes on. The CUDA
 * driver does not survive a fork, so with --backend gpu only the compile
 * (front end and code generator, to PTX) runs in a child, and the
 * comparison in the process that holds the device (docs/testing.md).
 * --isolate chooses otherwise: all (the default but for the GPU), compile
 * (the GPU's), none (everything in this process, for a debugger).
 *
 * Built with -DGPUFUZZ_CPUSIM it is cpufuzz: the back end is the CPU
 * executor of the generated code (tests/cpusim), with no GPU and no
 * runtime, so the generator checks the code generator anywhere.
 *
 * interp runs the interpreter against itself (the plumbing); planted, an
 * interpreter with a fault planted in dots (the reducer and the files).
 * Exits 0 when everything agreed, 1 on a difference, a crash, a hang or a
 * generator error, 2 on bad usage, 77 when --backend gpu finds no GPU. */
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "difftest.h"
#include "phgen.h"
#include "testutil.h"
#include "phobos.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Where a program runs: all of it in a child (back ends on the host), only
 * its compile in a child (the GPU: the device stays with the parent), or
 * all in this process. */
typedef enum { ISOLATE_ALL, ISOLATE_COMPILE, ISOLATE_NONE } Isolation;

typedef struct {
    DtBackend *be;
    const char *out;
    bool reduce;
    Isolation isolation;
    double timeout;   /* seconds a program may take in its child */
    int programs, configs, mismatches, crashes, hangs, generator_errors;
    char bad_seeds[512];
} Fuzz;

/* What became of one program: the engine's verdict when it ran to the
 * end, or the child that ran it died (CRASHED) or ran out of time (HUNG). */
typedef enum { RAN, CRASHED, HUNG } Fate;

typedef struct {
    Fate fate;
    DtVerdict v;        /* when it RAN */
    int status;         /* when it CRASHED: the signal, or 0 with exit_code */
    int exit_code;
    DtReport rep;
    char diags[4096];   /* what the front end said, cut short */
} Outcome;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Compiles and compares one program; *rep says how. */
static DtVerdict compare_source(Fuzz *fz, const char *source, const DtSpec *spec, uint64_t seed, DtReport *rep, char **diags)
{
    IrModule *m = tu_compile("gpufuzz.ph", source, NULL, diags);
    if (!m) {
        memset(rep, 0, sizeof *rep);
        snprintf(rep->message, sizeof rep->message, "the program does not compile");
        return DT_REFERENCE_FAILED;
    }
    DtVerdict v = dt_compare_module(m, source, spec, fz->be, seed, NULL, rep);
    ir_module_free(m);
    return v;
}

static void run_here(Fuzz *fz, const char *source, const DtSpec *spec, uint64_t seed, Outcome *o)
{
    char *diags = NULL;
    memset(o, 0, sizeof *o);
    o->fate = RAN;
    o->v = compare_source(fz, source, spec, seed, &o->rep, &diags);
    if (diags) snprintf(o->diags, sizeof o->diags, "%s", diags);
    free(diags);
}

/* The front end and the code generator, to PTX for every config, for a
 * child to survive or not: what they say is the in-process run's to
 * report. */
static void compile_here(const char *source, Outcome *o)
{
    memset(o, 0, sizeof *o);
    o->fate = RAN;
    IrModule *m = tu_compile("gpufuzz.ph", source, NULL, NULL);
    if (!m) return;
    CodegenOptions opts = {.target = target_find("sm_90"), .opt_level = CODEGEN_OPT_DEFAULT};
    char *ptx = NULL, err[512];
    if (codegen_emit(m, &opts, CG_EMIT_PTX, &ptx, err, sizeof err) == 0) free(ptx);
    ir_module_free(m);
}

static void write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w, n -= (size_t)w;
    }
}

/* Reads up to n bytes from fd until its end or the deadline; the count, or
 * -1 when the deadline passed first. */
static ssize_t read_until(int fd, void *buf, size_t n, double deadline)
{
    size_t got = 0;
    for (;;) {
        double left = deadline - now();
        if (left <= 0) return -1;
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, left > 3600 ? 3600000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue;   /* the deadline is checked above */
        char scratch[256];
        ssize_t k = got < n ? read(fd, (char *)buf + got, n - got) : read(fd, scratch, sizeof scratch);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return (ssize_t)got;
        if (got < n) got += (size_t)k;
    }
}

/* Runs the program (or, when compile_only, its compile) in a child, which
 * sends its Outcome back; the child's death or its running past the
 * timeout is the outcome instead. */
static void run_in_child(Fuzz *fz, const char *source, const DtSpec *spec, uint64_t seed, bool compile_only, Outcome *o)
{
    int fds[2];
    fflush(stdout);
    fflush(stderr);
    pid_t pid = pipe(fds) ? -1 : fork();
    if (pid < 0) {
        fprintf(stderr, "gpufuzz: cannot start a child (%s): running in this process\n", strerror(errno));
        if (compile_only) compile_here(source, o);
        else run_here(fz, source, spec, seed, o);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});   /* a reduction may crash hundreds of times */
        if (compile_only) compile_here(source, o);
        else run_here(fz, source, spec, seed, o);
        write_all(fds[1], o, sizeof *o);
        fflush(stdout);
        _exit(0);   /* no exit handlers: they belong to the parent (the CUDA driver's among them) */
    }
    close(fds[1]);
    ssize_t got = read_until(fds[0], o, sizeof *o, now() + fz->timeout);
    close(fds[0]);
    if (got < 0) kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (got == (ssize_t)sizeof *o && WIFEXITED(st) && WEXITSTATUS(st) == 0) return;
    memset(o, 0, sizeof *o);
    if (got < 0) {
        o->fate = HUNG;
        snprintf(o->rep.message, sizeof o->rep.message, "%s ran past %g s", compile_only ? "the compile" : "the program",
                 fz->timeout);
        return;
    }
    o->fate = CRASHED;
    if (WIFSIGNALED(st)) {
        o->status = WTERMSIG(st);
        snprintf(o->rep.message, sizeof o->rep.message, "%s killed by signal %d (%s)",
                 compile_only ? "the compile" : "the program", o->status, strsignal(o->status));
    } else {
        o->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        snprintf(o->rep.message, sizeof o->rep.message, "%s exited with status %d and no verdict",
                 compile_only ? "the compile" : "the program", o->exit_code);
    }
}

/* Compiles and compares one program where fz's isolation says. */
static void run_program(Fuzz *fz, const char *source, const DtSpec *spec, uint64_t seed, Outcome *o)
{
    switch (fz->isolation) {
    case ISOLATE_ALL: run_in_child(fz, source, spec, seed, false, o); return;
    case ISOLATE_COMPILE:
        run_in_child(fz, source, spec, seed, true, o);
        if (o->fate == RAN) run_here(fz, source, spec, seed, o);
        return;
    case ISOLATE_NONE: run_here(fz, source, spec, seed, o); return;
    }
}

static const char *fate_name(const Outcome *o)
{
    return o->fate == CRASHED ? "crash" : o->fate == HUNG ? "hang" : dt_verdict_name(o->v);
}

/* Whether b is the same finding as a: the same verdict, or a death by the
 * same signal (or exit status), or a hang. */
static bool same_finding(const Outcome *a, const Outcome *b)
{
    if (a->fate != b->fate) return false;
    if (a->fate == RAN) return a->v == b->v;
    if (a->fate == CRASHED) return a->status == b->status && a->exit_code == b->exit_code;
    return true;
}

typedef struct { Fuzz *fz; uint64_t seed; const Outcome *want; int tries; } Target;

static bool still_fails(const char *source, const DtSpec *spec, void *user)
{
    Target *t = user;
    Outcome *o = malloc(sizeof *o);
    t->tries++;
    run_program(t->fz, source, spec, t->seed, o);
    bool same = same_finding(t->want, o);
    free(o);
    return same;
}

/* The report's message on one line, cut short. */
static void one_line(const char *msg, char *buf, size_t n)
{
    size_t i = 0;
    for (; msg[i] && i + 1 < n; i++) buf[i] = msg[i] == '\n' ? ' ' : msg[i];
    buf[i] = 0;
}

static void write_case(Fuzz *fz, const char *kind, uint64_t seed, const char *source, const Outcome *o)
{
    const DtReport *rep = &o->rep;
    char path[1024], msg[400];
    snprintf(path, sizeof path, "%s/%s-%llu.ph", fz->out, kind, (unsigned long long)seed);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gpufuzz: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    one_line(rep->message, msg, sizeof msg);
    fprintf(f, "# gpufuzz --backend %s: %s%s%s: %s\n%s", fz->be->name, fate_name(o), rep->config[0] ? " in " : "", rep->config, msg,
            source);
    fclose(f);
    printf("gpufuzz: seed %llu: wrote %s\n", (unsigned long long)seed, path);
}

static void note_bad_seed(Fuzz *fz, uint64_t seed)
{
    size_t at = strlen(fz->bad_seeds);
    if (at < sizeof fz->bad_seeds - 24) snprintf(fz->bad_seeds + at, sizeof fz->bad_seeds - at, " %llu", (unsigned long long)seed);
}

/* Counts a finding of o's kind; its name for the file (NULL: none). */
static const char *count_finding(Fuzz *fz, const Outcome *o)
{
    if (o->fate == CRASHED) return fz->crashes++, "crash";
    if (o->fate == HUNG) return fz->hangs++, "hang";
    if (o->v == DT_REFERENCE_FAILED) return fz->generator_errors++, "invalid";
    if (o->v != DT_SAME) return fz->mismatches++, "mismatch";
    return NULL;
}

/* Runs seed's program; false when the back end can run nothing more. */
static bool fuzz_one(Fuzz *fz, uint64_t seed)
{
    PhgenProgram *p = phgen_generate(seed, NULL);
    char *src = phgen_source(p), msg[400], path[1024];
    Outcome *o = malloc(sizeof *o);
    /* a crash of the driver itself leaves the program that caused it */
    snprintf(path, sizeof path, "%s/current.ph", fz->out);
    FILE *cur = fopen(path, "w");
    if (cur) {
        fputs(src, cur);
        fclose(cur);
    }
    run_program(fz, src, phgen_spec(p), seed, o);
    fz->programs++;
    fz->configs += o->rep.configs;
    bool go_on = true;
    const char *kind = count_finding(fz, o);
    if (kind) note_bad_seed(fz, seed);
    if (kind && o->fate == RAN && o->v == DT_REFERENCE_FAILED) {   /* the generator made something the language or the interpreter refuses */
        printf("gpufuzz: seed %llu: generator error: %s %s\n%s", (unsigned long long)seed, o->rep.message, o->rep.config, o->diags);
        write_case(fz, kind, seed, src, o);
    } else if (kind) {
        one_line(o->rep.message, msg, sizeof msg);
        if (o->fate == RAN)
            printf("gpufuzz: seed %llu: %s in %s (%d of %d configs): %s\n", (unsigned long long)seed, fate_name(o), o->rep.config,
                   o->rep.failed, o->rep.configs, msg);
        else printf("gpufuzz: seed %llu: %s: %s\n", (unsigned long long)seed, fate_name(o), msg);
        fflush(stdout);
        if (o->fate == RAN && o->v == DT_BACKEND_FATAL) {
            go_on = false;   /* nothing more can run: keep the program as it is */
        } else if (fz->reduce) {
            Target t = {fz, seed, o, 0};
            int before = phgen_count_stmts(p);
            /* each try of a hang waits out the timeout: fewer of them */
            phgen_reduce(p, still_fails, &t, o->fate == HUNG ? 40 : 300);
            free(src);
            src = phgen_source(p);
            printf("gpufuzz: seed %llu: reduced from %d to %d statements in %d runs\n", (unsigned long long)seed, before,
                   phgen_count_stmts(p), t.tries);
            Outcome *last = malloc(sizeof *last);
            run_program(fz, src, phgen_spec(p), seed, last);
            if (same_finding(o, last)) *o = *last;   /* the reduced program's own report */
            free(last);
        }
        write_case(fz, kind, seed, src, o);
    }
    free(o);
    free(src);
    phgen_free(p);
    return go_on;
}

static void regress(Fuzz *fz, const char *path)
{
    errno = 0;
    char *src = tu_read_file(path);
    if (!src) {
        printf("gpufuzz: %s: %s\n", path, errno ? strerror(errno) : "not a file that can be read");
        fz->generator_errors++;
        return;
    }
    DtSpec spec;
    char err[256], msg[400];
    Outcome *o = malloc(sizeof *o);
    if (dt_spec_from_source(&spec, src, err, sizeof err)) {
        memset(o, 0, sizeof *o);
        o->fate = RAN;
        o->v = DT_REFERENCE_FAILED;
        snprintf(o->rep.message, sizeof o->rep.message, "%s", err);
    } else {
        run_program(fz, src, &spec, 1, o);
    }
    fz->programs++;
    fz->configs += o->rep.configs;
    one_line(o->rep.message, msg, sizeof msg);
    if (!count_finding(fz, o)) printf("gpufuzz: %s: same (%d configs)\n", path, o->rep.configs);
    else printf("gpufuzz: %s: %s%s%s: %s\n%s", path, fate_name(o), o->rep.config[0] ? " in " : "", o->rep.config, msg, o->diags);
    free(o);
    free(src);
}

static int usage(void)
{
    fprintf(stderr, "usage: gpufuzz [--backend gpu|cpusim|interp|planted] [--seed S] [--count N] [--seconds T] [--out DIR]\n"
                    "               [--no-reduce] [--timeout T] [--isolate all|compile|none] [--regress FILE...]\n");
    return 2;
}

int main(int argc, char **argv)
{
#ifdef GPUFUZZ_CPUSIM
    Fuzz fz = {.be = &dt_cpusim_backend, .out = "build/cpufuzz", .reduce = true, .timeout = 60};
#else
    Fuzz fz = {.be = &dt_gpu_backend, .out = "build/gpufuzz", .reduce = true, .timeout = 60};
#endif
    int isolation = -1;   /* by the back end */
    uint64_t seed = 1;
    long count = -1;
    double seconds = -1;
    int first_regress = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--regress")) { first_regress = i + 1; break; }
        if (!strcmp(a, "--no-reduce")) { fz.reduce = false; continue; }
        if (!v) return usage();
        i++;
        if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--count")) count = strtol(v, NULL, 0);
        else if (!strcmp(a, "--seconds")) seconds = strtod(v, NULL);
        else if (!strcmp(a, "--timeout")) fz.timeout = strtod(v, NULL);
        else if (!strcmp(a, "--isolate")) {
            if (!strcmp(v, "all")) isolation = ISOLATE_ALL;
            else if (!strcmp(v, "compile")) isolation = ISOLATE_COMPILE;
            else if (!strcmp(v, "none")) isolation = ISOLATE_NONE;
            else return usage();
        }
        else if (!strcmp(a, "--out")) fz.out = v;
        else if (!strcmp(a, "--backend")) {
#ifdef GPUFUZZ_CPUSIM
            if (!strcmp(v, "cpusim")) fz.be = &dt_cpusim_backend;
#else
            if (!strcmp(v, "gpu")) fz.be = &dt_gpu_backend;
#endif
            else if (!strcmp(v, "interp")) fz.be = &dt_interp_backend;
            else if (!strcmp(v, "planted")) fz.be = &dt_planted_backend;
            else return usage();
        } else return usage();
    }
    if (count < 0 && seconds < 0) count = first_regress < argc ? 0 : 100;
    if (!(fz.timeout > 0)) return usage();
    fz.isolation = isolation >= 0 ? (Isolation)isolation : ISOLATE_ALL;
#ifndef GPUFUZZ_CPUSIM
    if (fz.be == &dt_gpu_backend) {
        setenv("PHOBOS_CACHE_DIR", "off", 0);   /* thousands of one-off modules are not worth caching */
        ph_status s = ph_init(0);
        if (s != PH_OK) {
            fprintf(stderr, "gpufuzz: --backend gpu needs a GPU: %s: %s\n", ph_status_name(s), ph_last_error());
            return s == PH_ERR_NO_DRIVER || s == PH_ERR_NO_DEVICE ? 77 : 1;
        }
        printf("gpufuzz: on %s\n", ph_device_name());
        /* a forked child cannot use the device: only the compile goes there */
        if (isolation < 0) fz.isolation = ISOLATE_COMPILE;
        else if (isolation == ISOLATE_ALL) {
            fprintf(stderr, "gpufuzz: --isolate all cannot run on the GPU (the CUDA driver does not survive a fork)\n");
            return 2;
        }
    }
#endif
    if (mkdir(fz.out, 0777) && errno != EEXIST) {
        fprintf(stderr, "gpufuzz: cannot create %s: %s\n", fz.out, strerror(errno));
        return 1;
    }
    for (int i = first_regress; i < argc; i++) regress(&fz, argv[i]);
    double start = now();
    uint64_t s = seed;
    for (; (count < 0 || (long)(s - seed) < count) && (seconds < 0 || now() - start < seconds); s++) {
        if (!fuzz_one(&fz, s)) {
            s++;
            break;
        }
        if ((s - seed + 1) % 100 == 0) {
            printf("gpufuzz: %llu programs, %d mismatches, %d crashes, %d hangs, %.0f s\n", (unsigned long long)(s - seed + 1),
                   fz.mismatches, fz.crashes, fz.hangs, now() - start);
            fflush(stdout);
        }
    }
    char seeds[64] = "";
    if (s > seed) snprintf(seeds, sizeof seeds, ", seeds %llu..%llu", (unsigned long long)seed, (unsigned long long)(s - 1));
    printf("gpufuzz: %d programs, %d configs, %d mismatches, %d crashes, %d hangs, %d generator errors%s, backend %s, %.1f s%s%s\n",
           fz.programs, fz.configs, fz.mismatches, fz.crashes, fz.hangs, fz.generator_errors, seeds, fz.be->name, now() - start,
           fz.bad_seeds[0] ? "; failing seeds:" : "", fz.bad_seeds);
#ifndef GPUFUZZ_CPUSIM
    if (fz.be == &dt_gpu_backend) ph_shutdown();
#endif
    return fz.mismatches || fz.crashes || fz.hangs || fz.generator_errors ? 1 : 0;
}
