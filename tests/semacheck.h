/* semacheck.h: the sema suites' two checks on a program's text: it
 * compiles (the module returned), or it fails with a given message. */
#ifndef PHC_TESTS_SEMACHECK_H
#define PHC_TESTS_SEMACHECK_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static inline IrModule *compiles(const char *text)
{
    char *diags;
    IrModule *m = tu_compile("t.ph", text, NULL, &diags);
    cr_assert(m, "unexpected errors:\n%s", diags);
    free(diags);
    return m;
}

/* The compiler refuses text, and each of the n messages is among its diagnostics. */
static inline void fails_with_all(const char *text, const char *const *want, int n)
{
    char *diags;
    IrModule *m = tu_compile("t.ph", text, NULL, &diags);
    cr_assert_null(m, "expected errors for:\n%s", text);
    for (int i = 0; i < n; i++) cr_expect(strstr(diags, want[i]), "no\n%s\nin:\n%s", want[i], diags);
    free(diags);
}

static inline void fails_with(const char *text, const char *want) { fails_with_all(text, &want, 1); }

#endif
