/* phc.c: the command line. It runs the pipeline's stages (compiler/driver)
 * on the file, once, and stops where its options ask: run_stages() reads
 * load -> lex -> parse -> check and lower (sema) -> IR passes -> emit. */
#include "cli.h"
#include "codegen/codegen.h"
#include "driver/driver.h"
#include "driver/targets.h"
#include "phobos.h"   /* the version (PH_VERSION_*) only: phc and the library have one */
#include "nvidia/ptxas.h"
#include "nvidia/ptxinfo.h"

#include <errno.h>
#include <getopt.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

typedef enum { EMIT_NONE, EMIT_TOKENS, EMIT_AST, EMIT_IR, EMIT_LAYOUTS, EMIT_LLVM, EMIT_PTX, EMIT_CUBIN } Emit;

typedef struct {
    const char *input, *output, *dump_after;
    const char *arch;      /* as --arch names it, for the code generator and ptxas */
    Emit emit;
    bool check_only, list, stats, time_passes;
    SemaOptions sema;
    CodegenOptions code;   /* for the code generation stage, in libphobos.so */
    const char *define_names[64];
    int64_t define_values[64];
} Options;

/* a format: the targets' names and the default fill its two %s */
static const char usage[] =
    "usage: phc [options] FILE.ph\n"
    "       phc [options] -          (the program from standard input)\n"
    "\n"
    "Compiles a Phobos kernel file to one PTX module with an entry per (kernel,\n"
    "config), named kernel__NAME_VALUE__... (see --list). An option's value may\n"
    "follow it as --opt=VALUE or --opt VALUE (-oFILE or -o FILE).\n"
    "\n"
    "options:\n"
    "  --check            check the program only (lex, parse, semantic analysis); no output\n"
    "  --emit=KIND        tokens | ast | ir | layouts | llvm | ptx | cubin: what to write\n"
    "                     (default ptx; layouts: where each tile value lives on the GPU;\n"
    "                     cubin runs ptxas: $PTXAS, $CUDA_HOME/bin, by default\n"
    "                     /usr/local/cuda/bin, or PATH)\n"
    "  --arch=TARGET      the target: %s (default %s);\n"
    "                     sm_86, sm_89: sm_80's code, which ptxas assembles for their\n"
    "                     chip; sm_90a: Hopper's wgmma first (H100, H200)\n"
    "  -O0, -O2, -O3      no LLVM optimization (readable LLVM IR and PTX); phc's pipeline\n"
    "                     (default); LLVM's full -O3 pipeline (slower to compile)\n"
    "  -lineinfo, --lineinfo\n"
    "                     line information: .loc directives that map the PTX (and so the\n"
    "                     SASS, for compute-sanitizer and Nsight Compute) to FILE.ph's lines\n"
    "  --stats            for each config, on standard error: registers, spills, stack\n"
    "                     frame (local memory), static and dynamic shared memory, from\n"
    "                     ptxas -v ($PTXAS, $CUDA_HOME/bin, by default /usr/local/cuda/bin,\n"
    "                     or PATH), and a second line where ptxas says the config's wgmma\n"
    "                     pipeline was lost (wgmma serialized; C7517, C7519: a wait or\n"
    "                     arrive injected): how many, and the first; without ptxas, the\n"
    "                     shared memory alone\n"
    "  -o FILE, --output=FILE\n"
    "                     write the output to FILE instead of standard output (- is\n"
    "                     standard output); nothing is written when there are errors\n"
    "  --kernel=NAME      only kernel NAME\n"
    "  -D NAME=VALUE      only configs whose meta-parameter NAME is VALUE (repeatable)\n"
    "  --list             list the kernels and their configs (entry names, meta-parameters)\n"
    "  --dump-after=PASS  print the IR after pass PASS (parse = as lowered; see --passes)\n"
    "  --passes           list the IR passes in pipeline order\n"
    "  --time-passes      on standard error, the CPU time of each step: front end, IR\n"
    "                     passes, then the code generator's lowering, LLVM pipeline and\n"
    "                     NVPTX back end (as PHOBOS_TIME_COMPILE=1 reports them)\n"
    "  -h, --help         this text\n"
    "  --version          phc's version\n"
    "\n"
    "Errors are in colour on a terminal, unless NO_COLOR is set.\n"
    "\n"
    "exit status: 0 success; 1 errors in the program (reported as file:line:col: error:);\n"
    "2 bad command line (an unknown option or --kernel, a malformed -D, ...), an input\n"
    "it cannot read or an output it cannot write; 3 internal error.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "phc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'phc --help' for the options)\n");
    return EXIT_USAGE;
}

static int parse_define(Options *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return usage_error("-D expects NAME=VALUE, got '%s'", arg);
    if (o->sema.ndefines == 64) return usage_error("too many -D options (at most 64): '%s'", arg);
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 0);
    if (*end || errno) return usage_error("-D expects an integer value, got '%s'", arg);
    o->define_names[o->sema.ndefines] = xstrndup(arg, (size_t)(eq - arg));
    o->define_values[o->sema.ndefines++] = v;
    return EXIT_OK;
}

static int parse_emit(Options *o, const char *k)
{
    static const struct { const char *name; Emit emit; } kinds[] = {
        {"tokens", EMIT_TOKENS}, {"ast", EMIT_AST}, {"ir", EMIT_IR}, {"layouts", EMIT_LAYOUTS},
        {"llvm", EMIT_LLVM}, {"ptx", EMIT_PTX}, {"cubin", EMIT_CUBIN},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(k, kinds[i].name)) { o->emit = kinds[i].emit; return EXIT_OK; }
    return usage_error("unknown --emit kind '%s' (tokens, ast, ir, layouts, llvm, ptx, cubin)", k);
}

/* Every long option has a value of its own, past any character, so that
 * after an error optopt tells a short option (a character) from a long one. */
enum { OPT_CHECK = 256, OPT_EMIT, OPT_ARCH, OPT_OUTPUT, OPT_KERNEL, OPT_LIST, OPT_DUMP_AFTER, OPT_PASSES, OPT_HELP, OPT_VERSION,
       OPT_LINEINFO, OPT_STATS, OPT_TIME_PASSES };

static const struct option long_options[] = {
    {"check", no_argument, NULL, OPT_CHECK},
    {"emit", required_argument, NULL, OPT_EMIT},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"kernel", required_argument, NULL, OPT_KERNEL},
    {"list", no_argument, NULL, OPT_LIST},
    {"dump-after", required_argument, NULL, OPT_DUMP_AFTER},
    {"passes", no_argument, NULL, OPT_PASSES},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"lineinfo", no_argument, NULL, OPT_LINEINFO},
    {"stats", no_argument, NULL, OPT_STATS},
    {"time-passes", no_argument, NULL, OPT_TIME_PASSES},
    {NULL, 0, NULL, 0},
};

/* The leading ':' has getopt_long say ':' for a missing value and print
 * nothing itself, so every message here has phc's form. */
static const char short_options[] = ":ho:D:O:";

static const char *long_option_name(int val)
{
    for (const struct option *l = long_options; l->name; l++)
        if (l->val == val) return l->name;
    return "?";
}

/* What getopt_long refused. optopt is the short option's character (it
 * may sit inside a cluster, -Xq), a long option's value, or 0 for a long
 * option it does not know, which is then the word before optind. */
static int option_error(int c, char **argv)
{
    char word[64];
    if (optopt > 0 && optopt < 256) snprintf(word, sizeof word, "-%c", optopt);
    else if (optopt >= 256) snprintf(word, sizeof word, "--%s", long_option_name(optopt));
    if (c == ':') return usage_error("option '%s' needs a value", word);
    if (optopt >= 256) return usage_error("option '%s' takes no value", word);   /* --check=x */
    return usage_error("unknown option '%s'", optopt ? word : argv[optind - 1]);
}

/* One option; EXIT_OK to go on, another status to stop with (--help,
 * --version and --passes stop at once, with EXIT_OK, through exit). */
static int take_option(Options *o, int c, char **argv)
{
    switch (c) {
    case 'h': case OPT_HELP: printf(usage, target_names(), target_default()); exit(EXIT_OK);
    case OPT_VERSION: printf("phc %d.%d.%d\n", PH_VERSION_MAJOR, PH_VERSION_MINOR, PH_VERSION_PATCH); exit(EXIT_OK);
    case OPT_PASSES:
        for (const IrPass *p = ir_passes; p->name; p++) printf("%-8s %s\n", p->name, p->what);
        exit(EXIT_OK);
    case OPT_CHECK: o->check_only = true; return EXIT_OK;
    case OPT_LIST: o->list = true; return EXIT_OK;
    case OPT_EMIT: return parse_emit(o, optarg);
    case OPT_ARCH: {
        if (target_find(optarg)) {
            o->arch = optarg;
            return EXIT_OK;
        }
        char fmt[256];
        snprintf(fmt, sizeof fmt, "unknown --arch '%%s' (%s)", target_names());
        return usage_error(fmt, optarg);
    }
    case 'O':
        if (strcmp(optarg, "0") && strcmp(optarg, "2") && strcmp(optarg, "3"))
            return usage_error("unknown optimization level '-O%s' (-O0, -O2, -O3)", optarg);
        o->code.opt_level = optarg[0] == '0' ? CODEGEN_OPT_NONE : optarg[0] == '3' ? CODEGEN_OPT_FULL : CODEGEN_OPT_DEFAULT;
        return EXIT_OK;
    case OPT_LINEINFO: o->code.lineinfo = true; return EXIT_OK;
    case OPT_STATS: o->stats = true; return EXIT_OK;
    case OPT_TIME_PASSES: o->time_passes = true; return EXIT_OK;
    case OPT_DUMP_AFTER: o->dump_after = optarg; return EXIT_OK;
    case 'o': case OPT_OUTPUT: o->output = optarg; return EXIT_OK;
    case OPT_KERNEL: o->sema.kernel = optarg; return EXIT_OK;
    case 'D': return parse_define(o, optarg);
    default: return option_error(c, argv);
    }
}

/* nvcc spells it -lineinfo, one dash: taken as --lineinfo (getopt_long
 * would read the cluster -l -i -n ...). Words after -- are file names. */
static void accept_nvcc_spellings(int argc, char **argv)
{
    static char lineinfo[] = "--lineinfo";
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-lineinfo")) argv[i] = lineinfo;
}

static int parse_args(Options *o, int argc, char **argv)
{
    int c, status;
    opterr = 0;
    accept_nvcc_spellings(argc, argv);
    while ((c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1)
        if ((status = take_option(o, c, argv))) return status;
    if (optind == argc) return usage_error("%s", "no input file");
    if (optind + 1 < argc) return usage_error("more than one input file ('%s')", argv[optind + 1]);
    o->input = argv[optind];
    if (o->stats && (o->check_only || o->list || o->dump_after || (o->emit != EMIT_PTX && o->emit != EMIT_CUBIN)))
        return usage_error("%s", "--stats reports on the PTX phc writes: use it with --emit=ptx (the default) or --emit=cubin");
    o->sema.define_names = o->define_names;
    o->sema.define_values = o->define_values;
    return EXIT_OK;
}

static int run_passes(const Options *o, IrModule *ir, FILE *out)
{
#ifdef NDEBUG
    const bool verify = false;
#else
    const bool verify = true;
#endif
    char err[1024];
    int failed = driver_run_passes(ir, &(PassOptions){verify, o->dump_after, out}, err, sizeof err);
    if (failed) fprintf(stderr, "phc: %s\n", err);
    return !failed ? EXIT_OK : failed == DRIVER_UNKNOWN_PASS ? EXIT_USAGE : EXIT_INTERNAL;
}

/* Why no ptxas could be run: it is not where phc looks, or it failed (its
 * own words, then its exit status). */
static void report_ptxas(const PtxasRun *r)
{
    if (r->status == -1) fprintf(stderr, "phc: %s:\n", r->err);
    else fprintf(stderr, "phc: ptxas failed (exit status %d):\n", r->status);
    fputs(*r->log ? r->log : "(ptxas printed nothing)\n", stderr);
    if (*r->log && r->log[strlen(r->log) - 1] != '\n') fputc('\n', stderr);
}

static bool find_ptxas_or_say(char *path, size_t n)
{
    if (ptxas_find(path, n)) return true;
    fprintf(stderr, "phc: ptxas could not be found ($PTXAS, ${CUDA_HOME:-/usr/local/cuda}/bin or PATH); is it installed?\n");
    return false;
}

/* ptxas assembles the PTX into a cubin, the output; its warnings go to
 * standard error. */
static int emit_cubin(const Options *o, const char *ptx, FILE *out)
{
    char ptxas[4096];
    if (!find_ptxas_or_say(ptxas, sizeof ptxas)) return EXIT_INTERNAL;
    PtxasRun r;
    int status = EXIT_INTERNAL;
    if (ptxas_run(ptxas, o->arch, ptx, o->code.lineinfo ? PTXAS_LINEINFO : 0, &r)) report_ptxas(&r);
    else if (!r.cubin) fprintf(stderr, "phc: %s wrote no cubin\n", ptxas);
    else {
        fputs(r.log, stderr);
        status = fwrite(r.cubin, 1, r.cubin_bytes, out) == r.cubin_bytes ? EXIT_OK : EXIT_INTERNAL;
    }
    ptxas_run_free(&r);
    return status;
}

/* ---- --stats ---- */

/* Runs ptxas -v -arch=ARCH on the PTX, its report in *log; EXIT_OK, or
 * phc's status after saying why it failed. */
static int ptxas_verbose(const char *ptxas, const char *arch, const char *ptx, char **log)
{
    PtxasRun r;
    if (ptxas_run(ptxas, arch, ptx, PTXAS_VERBOSE, &r)) {
        report_ptxas(&r);
        ptxas_run_free(&r);
        return EXIT_INTERNAL;
    }
    *log = r.log;
    r.log = NULL;
    ptxas_run_free(&r);
    return EXIT_OK;
}

/* --stats: a line per config on standard error, what ptxas -v reports of
 * it and the dynamic shared memory its launch asks for (codegen.h), and a
 * second where ptxas says its wgmma pipeline was lost (ptxinfo.h); with
 * no ptxas, one line that says so, then what phc knows: the shared memory
 * each config's PTX declares. */
static int print_stats(const Options *o, const IrModule *ir, const char *ptx)
{
    char ptxas[4096], *log = NULL;
    bool assembled = ptxas_find(ptxas, sizeof ptxas);
    if (!assembled)
        fprintf(stderr, "phc: --stats: no ptxas ($PTXAS, ${CUDA_HOME:-/usr/local/cuda}/bin or PATH): registers, spills "
                        "and stack frames are not known, only the shared memory phc allocates\n");
    else {
        int status = ptxas_verbose(ptxas, o->arch, ptx, &log);
        if (status) return status;
    }
    int status = EXIT_OK;
    for (int i = 0; i < ir->nfuncs; i++) {
        const char *entry = ir->funcs[i]->name;
        long long dynamic = codegen_dynamic_shared_bytes(ptx, entry);
        PtxasReport r;
        if (!assembled) {
            fprintf(stderr, "%s: %lld bytes static shared, %lld bytes dynamic shared\n", entry,
                    (long long)ptx_static_shared_bytes(ptx, entry), dynamic);
        } else if (ptxas_report_of(log, entry, &r) && r.registers >= 0 && r.spill_stores >= 0) {
            fprintf(stderr, "%s: %d registers, %lld bytes spill stores, %lld bytes spill loads, %lld bytes stack frame, "
                            "%lld bytes static shared, %lld bytes dynamic shared\n", entry, r.registers,
                    (long long)r.spill_stores, (long long)r.spill_loads, (long long)r.stack_frame, (long long)r.shared, dynamic);
            char lost[600];
            if (ptxas_wgmma_text(&r.wgmma, lost, sizeof lost)) fprintf(stderr, "%s: %s\n", entry, lost);
        } else {
            fprintf(stderr, "phc: --stats: %s is not in what ptxas -v printed:\n%s", entry, log);
            status = EXIT_INTERNAL;
            break;
        }
    }
    free(log);
    return status;
}

/* The code generation stage is the library's (driver_emit, in libphobos.so
 * with LLVM): it lowers the IR the passes left. */
static int emit_code(const Options *o, const SrcFile *src, const IrModule *ir, FILE *out)
{
    CodegenOptions code = o->code;
    code.source = src->path;
    char *text = NULL, err[1024];
    CgEmit what = o->emit == EMIT_LLVM ? CG_EMIT_LLVM : CG_EMIT_PTX;
    if (driver_emit(ir, o->arch, &code, what, o->time_passes ? src->path : NULL, &text, err, sizeof err)) {
        fprintf(stderr, "phc: %s\n", err);
        return EXIT_INTERNAL;
    }
    int status = o->stats ? print_stats(o, ir, text) : EXIT_OK;
    if (!status && o->emit == EMIT_CUBIN) status = emit_cubin(o, text, out);
    else if (!status) fputs(text, out);
    free(text);
    return status;
}

/* Colour on a terminal only, and not when NO_COLOR is set (to anything
 * but the empty string, as no-color.org asks) or TERM is dumb. */
static bool diagnostics_in_color(void)
{
    const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(STDERR_FILENO) && !(no_color && *no_color) && !(term && !strcmp(term, "dumb"));
}

/* FILE.ph, or standard input for "-", named <stdin> in messages. */
static int load_input(const char *input, SrcFile *src)
{
    char err[512];
    int failed = strcmp(input, "-") ? src_load(src, input, err, sizeof err) : src_read(src, stdin, "<stdin>", err, sizeof err);
    if (failed) fprintf(stderr, "phc: %s\n", err);
    return failed ? EXIT_USAGE : EXIT_OK;
}

/* --time-passes: the calling thread's CPU time, as the library reports its own. */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The stages in order, each stopping the run where an option asks for what
 * it made (or when the program has errors, which c->diag counts). */
static int run_stages(const Options *o, Compilation *c, FILE *out)
{
    if (o->emit == EMIT_TOKENS) {
        int n;
        Token *toks = driver_lex(c, &n);
        if (!c->diag.nerrors) phc_print_tokens(out, toks, n);
        return EXIT_OK;
    }
    double start = cpu_ms();
    if (!driver_parse(c)) return EXIT_OK;
    if (o->emit == EMIT_AST) { ast_print(out, c->ast); return EXIT_OK; }
    if (!driver_lower(c, &o->sema)) return EXIT_OK;
    if (o->list) { phc_print_list(out, c->ir); return EXIT_OK; }
    double front = cpu_ms();
    int status = run_passes(o, c->ir, out);
    if (status) return status;
    if (o->time_passes)
        fprintf(stderr, "phc: time: front end (lex, parse, sema) %.1f ms, IR passes %.1f ms CPU, %d configs\n",
                front - start, cpu_ms() - front, c->ir->nfuncs);
    if (o->check_only || o->dump_after) return EXIT_OK;
    if (o->emit == EMIT_IR) ir_print_module(out, c->ir);
    else if (o->emit == EMIT_LAYOUTS) phc_print_layouts(out, c->ir, o->arch);
    else return emit_code(o, c->src, c->ir, out);
    return EXIT_OK;
}

static int compile(const Options *o, FILE *out)
{
    SrcFile src;
    if (load_input(o->input, &src)) return EXIT_USAGE;
    Compilation c;
    driver_begin(&c, &src, stderr);
    c.diag.color = diagnostics_in_color();
    int status = run_stages(o, &c, out);
    if (c.diag.nerrors && !status) status = c.diag.noption_errors ? EXIT_USAGE : EXIT_PROGRAM;
    driver_end(&c);
    src_free(&src);
    return status;
}

int main(int argc, char **argv)
{
    Options o = {0};
    o.emit = EMIT_PTX;
    o.arch = target_default();
    o.code.opt_level = CODEGEN_OPT_DEFAULT;
    int status = parse_args(&o, argc, argv);
    if (status) return status;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) { perror("phc"); return EXIT_INTERNAL; }
    status = compile(&o, out);
    fclose(out);
    if (status == EXIT_OK && !o.check_only) status = phc_write_output(o.output, o.input, buf, len);
    free(buf);
    for (int i = 0; i < o.sema.ndefines; i++) free((char *)o.define_names[i]);
    return status;
}
