/* gpufuzz.c: differential fuzzing of a back end. Generates random programs
 * (phgen), runs each config on the back end and in the interpreter on the
 * same inputs (difftest), and on a difference reduces the program while the
 * difference persists and writes it as DIR/mismatch-SEED.ph, its run spec
 * in the header, where --regress reads it back.
 *
 *   gpufuzz [--backend gpu|interp|planted] [--seed S] [--count N] [--seconds T]
 *           [--out DIR] [--no-reduce] [--regress FILE...]
 *
 * Built with -DGPUFUZZ_CPUSIM it is cpufuzz: the back end is the CPU
 * executor of the generated code (tests/cpusim), with no GPU and no
 * runtime, so the generator checks the code generator anywhere.
 *
 * interp runs the interpreter against itself (the plumbing); planted, an
 * interpreter with a fault planted in dots (the reducer and the files).
 * Exits 0 when everything agreed, 1 on a difference or a generator error,
 * 2 on bad usage, 77 when --backend gpu finds no GPU. */
#include "difftest.h"
#include "phgen.h"
#include "phobos.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct {
    DtBackend *be;
    const char *out;
    bool reduce;
    int programs, configs, mismatches, generator_errors;
    char bad_seeds[512];
} Fuzz;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static IrModule *compile(const char *name, const char *source, char **diags)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    IrModule *m = ph_compile_string(name, source, NULL, out);
    fclose(out);
    if (diags) *diags = buf;
    else free(buf);
    return m;
}

/* Compiles and compares one program; *rep says how. */
static DtVerdict compare_source(Fuzz *fz, const char *source, const DtSpec *spec, uint64_t seed, DtReport *rep, char **diags)
{
    IrModule *m = compile("gpufuzz.ph", source, diags);
    if (!m) {
        memset(rep, 0, sizeof *rep);
        snprintf(rep->message, sizeof rep->message, "the program does not compile");
        return DT_REFERENCE_FAILED;
    }
    DtVerdict v = dt_compare_module(m, source, spec, fz->be, seed, NULL, rep);
    ir_module_free(m);
    return v;
}

typedef struct { Fuzz *fz; uint64_t seed; DtVerdict want; int tries; } Target;

static bool still_fails(const char *source, const DtSpec *spec, void *user)
{
    Target *t = user;
    DtReport rep;
    t->tries++;
    return compare_source(t->fz, source, spec, t->seed, &rep, NULL) == t->want;
}

/* The report's message on one line, cut short. */
static void one_line(const char *msg, char *buf, size_t n)
{
    size_t i = 0;
    for (; msg[i] && i + 1 < n; i++) buf[i] = msg[i] == '\n' ? ' ' : msg[i];
    buf[i] = 0;
}

static void write_case(Fuzz *fz, const char *kind, uint64_t seed, const char *source, const DtReport *rep, DtVerdict v)
{
    char path[1024], msg[400];
    snprintf(path, sizeof path, "%s/%s-%llu.ph", fz->out, kind, (unsigned long long)seed);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gpufuzz: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    one_line(rep->message, msg, sizeof msg);
    fprintf(f, "# gpufuzz --backend %s: %s in %s: %s\n%s", fz->be->name, dt_verdict_name(v), rep->config, msg, source);
    fclose(f);
    printf("gpufuzz: seed %llu: wrote %s\n", (unsigned long long)seed, path);
}

static void note_bad_seed(Fuzz *fz, uint64_t seed)
{
    size_t at = strlen(fz->bad_seeds);
    if (at < sizeof fz->bad_seeds - 24) snprintf(fz->bad_seeds + at, sizeof fz->bad_seeds - at, " %llu", (unsigned long long)seed);
}

/* Runs seed's program; false when the back end can run nothing more. */
static bool fuzz_one(Fuzz *fz, uint64_t seed)
{
    PhgenProgram *p = phgen_generate(seed, NULL);
    char *src = phgen_source(p), *diags = NULL, msg[400], path[1024];
    DtReport rep;
    /* a crash of the compiler or the driver leaves the program that caused it */
    snprintf(path, sizeof path, "%s/current.ph", fz->out);
    FILE *cur = fopen(path, "w");
    if (cur) {
        fputs(src, cur);
        fclose(cur);
    }
    DtVerdict v = compare_source(fz, src, phgen_spec(p), seed, &rep, &diags);
    fz->programs++;
    fz->configs += rep.configs;
    bool go_on = true;
    if (v == DT_REFERENCE_FAILED) {   /* the generator made something the language or the interpreter refuses */
        fz->generator_errors++;
        note_bad_seed(fz, seed);
        printf("gpufuzz: seed %llu: generator error: %s %s\n%s", (unsigned long long)seed, rep.message, rep.config, diags ? diags : "");
        write_case(fz, "invalid", seed, src, &rep, v);
    } else if (v != DT_SAME) {
        fz->mismatches++;
        note_bad_seed(fz, seed);
        one_line(rep.message, msg, sizeof msg);
        printf("gpufuzz: seed %llu: %s in %s (%d of %d configs): %s\n", (unsigned long long)seed, dt_verdict_name(v),
               rep.config, rep.failed, rep.configs, msg);
        fflush(stdout);
        if (v == DT_BACKEND_FATAL) {
            go_on = false;   /* nothing more can run: keep the program as it is */
        } else if (fz->reduce) {
            Target t = {fz, seed, v, 0};
            int before = phgen_count_stmts(p);
            phgen_reduce(p, still_fails, &t, 300);
            free(src);
            src = phgen_source(p);
            printf("gpufuzz: seed %llu: reduced from %d to %d statements in %d runs\n", (unsigned long long)seed, before,
                   phgen_count_stmts(p), t.tries);
            compare_source(fz, src, phgen_spec(p), seed, &rep, NULL);
        }
        write_case(fz, "mismatch", seed, src, &rep, v);
    }
    free(diags);
    free(src);
    phgen_free(p);
    return go_on;
}

static void regress(Fuzz *fz, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("gpufuzz: %s: %s\n", path, strerror(errno));
        fz->generator_errors++;
        return;
    }
    size_t len = 0, cap = 4096;
    char *src = malloc(cap);
    size_t got;
    while ((got = fread(src + len, 1, cap - len - 1, f)) > 0)
        if ((len += got) + 1 == cap) src = realloc(src, cap *= 2);
    src[len] = 0;
    fclose(f);
    DtSpec spec;
    DtReport rep;
    char err[256], *diags = NULL, msg[400];
    DtVerdict v;
    if (dt_spec_from_source(&spec, src, err, sizeof err)) {
        v = DT_REFERENCE_FAILED;
        snprintf(rep.message, sizeof rep.message, "%s", err);
        rep.configs = 0;
    } else {
        v = compare_source(fz, src, &spec, 1, &rep, &diags);
    }
    fz->programs++;
    fz->configs += rep.configs;
    one_line(rep.message, msg, sizeof msg);
    if (v == DT_SAME) printf("gpufuzz: %s: same (%d configs)\n", path, rep.configs);
    else printf("gpufuzz: %s: %s%s%s: %s\n%s", path, dt_verdict_name(v), rep.config[0] ? " in " : "", rep.config, msg, diags ? diags : "");
    if (v == DT_REFERENCE_FAILED) fz->generator_errors++;
    else if (v != DT_SAME) fz->mismatches++;
    free(diags);
    free(src);
}

static int usage(void)
{
    fprintf(stderr, "usage: gpufuzz [--backend gpu|cpusim|interp|planted] [--seed S] [--count N] [--seconds T] [--out DIR]\n"
                    "               [--no-reduce] [--regress FILE...]\n");
    return 2;
}

int main(int argc, char **argv)
{
#ifdef GPUFUZZ_CPUSIM
    Fuzz fz = {.be = &dt_cpusim_backend, .out = "build/cpufuzz", .reduce = true};
#else
    Fuzz fz = {.be = &dt_gpu_backend, .out = "build/gpufuzz", .reduce = true};
#endif
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
#ifndef GPUFUZZ_CPUSIM
    if (fz.be == &dt_gpu_backend) {
        setenv("PHOBOS_CACHE_DIR", "off", 0);   /* thousands of one-off modules are not worth caching */
        ph_status s = ph_init(0);
        if (s != PH_OK) {
            fprintf(stderr, "gpufuzz: --backend gpu needs a GPU: %s: %s\n", ph_status_name(s), ph_last_error());
            return s == PH_ERR_NO_DRIVER || s == PH_ERR_NO_DEVICE ? 77 : 1;
        }
        printf("gpufuzz: on %s\n", ph_device_name());
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
            printf("gpufuzz: %llu programs, %d mismatches, %.0f s\n", (unsigned long long)(s - seed + 1), fz.mismatches, now() - start);
            fflush(stdout);
        }
    }
    char seeds[64] = "";
    if (s > seed) snprintf(seeds, sizeof seeds, ", seeds %llu..%llu", (unsigned long long)seed, (unsigned long long)(s - 1));
    printf("gpufuzz: %d programs, %d configs, %d mismatches, %d generator errors%s, backend %s, %.1f s%s%s\n",
           fz.programs, fz.configs, fz.mismatches, fz.generator_errors, seeds, fz.be->name, now() - start,
           fz.bad_seeds[0] ? "; failing seeds:" : "", fz.bad_seeds);
#ifndef GPUFUZZ_CPUSIM
    if (fz.be == &dt_gpu_backend) ph_shutdown();
#endif
    return fz.mismatches || fz.generator_errors ? 1 : 0;
}
