/* fuzz_common.h: the pipeline both libFuzzer targets drive, from bytes to
 * checked, optimized and printed tile IR. Any input must end in a clean
 * error or in IR that verifies after every pass and prints to text that
 * parses back to the same text; anything else (a crash, a sanitizer report,
 * a leak, an abort below) is a finding. */
#ifndef PHC_FUZZ_COMMON_H
#define PHC_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dsl.h"

/* Messages and printed trees are written, not discarded, so the code that
 * formats them (source echo with a caret, the AST printer) runs too. */
static FILE *fuzz_sink(void)
{
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    return sink;
}

static char *fuzz_print_func(const IrFunc *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ir_print_func(out, f);
    fclose(out);
    return buf;
}

/* The printed IR must parse back and print the same: the text form is a
 * faithful view of the IR (docs/ir.md). */
static void fuzz_round_trip(const IrFunc *f)
{
    char *text = fuzz_print_func(f), err[512];
    IrModule *back = ir_parse(text, err, sizeof err);
    if (!back || back->nfuncs != 1) {
        fprintf(stderr, "printed IR does not parse back: %s\n%s", back ? "not one function" : err, text);
        abort();
    }
    char *again = fuzz_print_func(back->funcs[0]);
    if (strcmp(text, again)) {
        fprintf(stderr, "IR round trip differs:\n--- printed\n%s--- reparsed\n%s", text, again);
        abort();
    }
    free(again);
    ir_module_free(back);
    free(text);
}

/* Lexes, parses, prints the AST, checks and lowers every kernel and config,
 * runs the passes with the verifier on, and round-trips the IR. Returns
 * the module (caller frees) or NULL when the program has errors. */
static IrModule *fuzz_front(const uint8_t *data, size_t size)
{
    SrcFile src;
    char *text = malloc(size + 1);
    if (size) memcpy(text, data, size);
    text[size] = 0;              /* SrcFile's guarantee; NULs before it stay */
    src.path = "fuzz.ph";
    src.text = text;
    src.len = size;
    Diag d;
    diag_init(&d, &src, fuzz_sink());
    Arena *a = arena_new();
    Module *m = parse(&src, &d, a);
    IrModule *ir = NULL;
    if (!d.nerrors) {
        static const SemaOptions none;
        ast_print(fuzz_sink(), m);
        ir = sema(m, &d, &none);
        if (ir && d.nerrors) {
            fprintf(stderr, "sema returned IR despite %d errors\n", d.nerrors);
            abort();
        }
        if (!ir && !d.nerrors) {
            fprintf(stderr, "sema failed without a message\n");
            abort();
        }
    }
    arena_free(a);
    diag_free(&d);
    for (int i = 0; ir && i < ir->nfuncs; i++) {
        char err[1024];
        if (ir_run_passes(ir->funcs[i], true, NULL, NULL, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", ir->funcs[i]->name, err);
            abort();
        }
        fuzz_round_trip(ir->funcs[i]);
    }
    free(text);
    return ir;
}

#endif
