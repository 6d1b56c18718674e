/* testutil.h: helpers the Criterion suites share: compile a program held in
 * a string and capture its diagnostics as text, read golden files. */
#ifndef PHC_TESTUTIL_H
#define PHC_TESTUTIL_H

#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "dsl.h"
#include "driver/driver.h"

/* Compiles text (named name in messages); *diags receives the messages
 * (caller frees). Returns the module or NULL. */
static inline IrModule *tu_compile(const char *name, const char *text, const SemaOptions *opt, char **diags)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    IrModule *m = driver_compile_string(name, text, opt, out);
    fclose(out);
    if (diags) *diags = buf;
    else free(buf);
    return m;
}

/* Reads a whole file into a NUL-terminated heap string (NULL if missing,
 * or no file that has a size: a directory, say). */
static inline char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    char *buf = n >= 0 && n < LONG_MAX && !fseek(f, 0, SEEK_SET) ? malloc((size_t)n + 1) : NULL;
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

/* How many times needle starts in text from `from` up to `to` (NULL: its end). */
static inline int tu_count_between(const char *from, const char *to, const char *needle)
{
    int n = 0;
    for (const char *p = from; (p = strstr(p, needle)) && (!to || p < to); p++) n++;
    return n;
}

/* Prints one function's IR into a heap string. */
static inline char *tu_func_text(const IrFunc *f)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    ir_print_func(out, f);
    fclose(out);
    return buf;
}

/* Prints a module's IR into a heap string. */
static inline char *tu_ir_text(const IrModule *m)
{
    size_t len = 0;
    char *buf = NULL;
    FILE *out = open_memstream(&buf, &len);
    ir_print_module(out, m);
    fclose(out);
    return buf;
}

#endif
