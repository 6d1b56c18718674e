/* driver.h: the pipeline, written once: source -> tokens -> AST -> tile IR
 * per (kernel, config) (sema) -> IR passes -> LLVM IR or PTX. One function
 * per stage, for phc, which stops between them for its --emit kinds; and
 * the calls that run them all: the front half for the tests and host
 * programs (driver_compile_file, driver_compile_string), the whole for the
 * runtime's ph_compile (driver_compile).
 *
 * The front half (driver.c) builds without LLVM, into libphc.a; the code
 * generation stage (emit.c) lives in libphobos.so with the code generator,
 * which exports driver_emit for phc (runtime/phobos.map). */
#ifndef PHC_DRIVER_H
#define PHC_DRIVER_H

#include <stdio.h>
#include "codegen/codegen.h"
#include "dsl.h"

/* ---- the stages, in order, on one source ---- */
/* One source going through the pipeline. The source stays the caller's; the
 * rest is the compilation's, but for the IR a caller takes (driver_take_ir). */
typedef struct {
    const SrcFile *src;
    Diag diag;          /* the program's errors, in their file:line:col: form */
    Arena *arena;       /* tokens and AST */
    Module *ast;        /* after driver_parse */
    IrModule *ir;       /* after driver_lower */
} Compilation;

/* Starts one; the program's errors go to diag_out (NULL: nowhere). */
void driver_begin(Compilation *c, const SrcFile *src, FILE *diag_out);
void driver_end(Compilation *c);

/* Tokens (--emit=tokens): the lexer's array, ending with T_EOF; errors in c->diag. */
Token *driver_lex(Compilation *c, int *ntokens);
/* The AST in c->ast (it lexes on its own). false when there were errors. */
bool driver_parse(Compilation *c);
/* Checks the AST and lowers each selected (kernel, config) into c->ir.
 * false when there were errors (c->ir NULL). */
bool driver_lower(Compilation *c, const SemaOptions *opt);
/* c->ir, which the caller then frees (ir_module_free). */
IrModule *driver_take_ir(Compilation *c);

/* The IR passes on each function of ir, in pipeline order. */
typedef struct {
    bool verify;              /* the IR verifier before the first pass and after each */
    const char *dump_after;   /* a pass's name, or "parse" (as lowered): print each function then */
    FILE *dump;               /* where (with dump_after) */
} PassOptions;
enum { DRIVER_PASS_FAILED = 1, DRIVER_UNKNOWN_PASS = 2 };
/* 0; or DRIVER_UNKNOWN_PASS (no such dump_after) or DRIVER_PASS_FAILED (the
 * verifier), with a message in err. */
int driver_run_passes(IrModule *ir, const PassOptions *o, char *err, size_t errlen);

/* Code generation (emit.c, in libphobos.so): every function of ir into one
 * module, as LLVM IR text or PTX, for the target named arch (the table of
 * targets, targets.h; o->target is ignored). 0 and a malloc'd text in *out;
 * otherwise 1 with a message in err. With times_of, a line on standard error says
 * where the CPU time went, for times_of (driver_print_times). */
int driver_emit(const IrModule *ir, const char *arch, const CodegenOptions *o, CgEmit what, const char *times_of, char **out, char *err,
                size_t errlen);
/* "phobos: time: WHAT: ..." on standard error: the code generator's steps
 * for configs configs (PHOBOS_TIME_COMPILE, phc --time-passes). */
void driver_print_times(const char *what, int configs, const CodegenTimes *t);

/* ---- the stages run together ---- */
/* The front half: loads (driver_compile_file), parses, checks and lowers,
 * then the passes with the verifier. Diagnostics go to diag_out (NULL:
 * discarded). The module (the caller frees it), or NULL. */
IrModule *driver_compile_file(const char *path, const SemaOptions *opt, FILE *diag_out);
IrModule *driver_compile_string(const char *name, const char *text, const SemaOptions *opt, FILE *diag_out);

/* The whole pipeline, source text to LLVM IR or PTX (emit.c): 0 and a
 * malloc'd text in *out; otherwise 1, the program's errors in diag_out and
 * a message in err. name names the source in messages and in the times line
 * (with timed). */
int driver_compile(const char *name, const char *text, const SemaOptions *sema, const char *arch, const CodegenOptions *cg,
                   CgEmit what,
                   bool timed, FILE *diag_out, char **out, char *err, size_t errlen);

/* The first function of m for kernel (its first selected config), or NULL. */
IrFunc *driver_find_kernel(const IrModule *m, const char *kernel);

#endif
