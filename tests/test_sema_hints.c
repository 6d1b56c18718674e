/* test_sema_hints.c: what an error offers beside the fault: the built-in
 * nearest to a misspelt name ("did you mean"), by the edit distance of
 * base/util.c, and nothing when no name is near. */
#include <criterion/criterion.h>
#include "base/util.h"
#include "testutil.h"

Test(hints, edit_distance_counts_insertions_deletions_and_substitutions)
{
    cr_assert_eq(edit_distance("exp", "exp"), 0);
    cr_assert_eq(edit_distance("exxp", "exp"), 1);
    cr_assert_eq(edit_distance("sqr", "sqrt"), 1);
    cr_assert_eq(edit_distance("rowsun", "rowsum"), 1);
    cr_assert_eq(edit_distance("towd", "twod"), 2);
    cr_assert_eq(edit_distance("", "abs"), 3);
    cr_assert_eq(edit_distance("softmax", "rowmax"), 3);
}

Test(hints, a_misspelt_built_in_gets_the_nearest_offered)
{
    char *diags;
    IrModule *m = tu_compile("t.ph",
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):\n"
        "    t: ph.let = X[0:+128]\n"
        "    a: ph.let = ph.exxp(t)\n"
        "    b: ph.let = ph.rowsun(ph.iota(1, 4))\n"
        "    c: ph.let = ph.sqr(t)\n"
        "    d: ph.let = ph.frobnicate(t)\n"
        "    e: ph.let = ph.softmax(t)\n"
        "    Y[0:+128] = t\n", NULL, &diags);
    cr_assert_null(m);
    const char *want[] = {
        "t.ph:5:17: error: 'ph.exxp' is not a built-in function; did you mean 'ph.exp'?\n",
        "t.ph:6:17: error: 'ph.rowsun' is not a built-in function; did you mean 'ph.rowsum'?\n",
        "t.ph:7:17: error: 'ph.sqr' is not a built-in function; did you mean 'ph.sqrt'?\n",
        "t.ph:8:17: error: 'ph.frobnicate' is not a built-in function\n",
        "t.ph:9:17: error: 'ph.softmax' is not a built-in function\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) cr_expect(strstr(diags, want[i]), "no %s in:\n%s", want[i], diags);
    free(diags);
}
