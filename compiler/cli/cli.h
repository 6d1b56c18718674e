/* cli.h: what phc.c shares with its helpers: its exit statuses, the
 * printers of the stages' products for --emit and --list (print.c), and
 * the writing of its output (output.c). */
#ifndef PHC_CLI_H
#define PHC_CLI_H

#include <stdio.h>
#include "driver/driver.h"

enum { EXIT_OK = 0, EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

/* --emit=tokens: a token a line, line:col, kind and spelling. */
void phc_print_tokens(FILE *out, const Token *t, int n);
/* --list: each kernel, then its configs: entry names and meta-parameters. */
void phc_print_list(FILE *out, const IrModule *m);
/* --emit=layouts: each tile value with the layout it is emitted in. */
/* for the target arch names (its engines' result layouts, its ring slots') */
void phc_print_layouts(FILE *out, const IrModule *m, const char *arch);

/* Writes the output, buf, to path (NULL or "-": standard output) whole or
 * not at all; EXIT_OK, or EXIT_USAGE after saying why it cannot. input is
 * the input file's path, never overwritten. */
int phc_write_output(const char *path, const char *input, const char *buf, size_t len);

#endif
