/* test_sema_tune.c: @ph.autotune_key, the integer scalars whose values
 * join the autotuner's key: marked on the parameter in every config's IR,
 * and an error at each argument that names no integer scalar; and
 * @ph.occupancy, the blocks a multiprocessor a config's registers leave
 * room for. */
#include "semacheck.h"

#define HEAD "import phobos.lang as ph\n\n"

Test(tune_key, marks_integer_scalars_in_every_config)
{
    IrModule *m = compiles(HEAD "@ph.kernel\n@ph.autotune(B=[16, 32])\n@ph.autotune_key(\"causal\", \"n\")\n"
                                "def k(X: ph.tensor[ph.f32][N], causal: ph.i32, n: ph.i64, s: ph.f32):\n    pass\n");
    cr_assert_eq(m->nfuncs, 2);
    static const bool want[4] = {false, true, true, false};
    for (int i = 0; i < m->nfuncs; i++)
        for (int p = 0; p < 4; p++) cr_assert_eq(m->funcs[i]->params[p].tune_key, want[p], "%s: parameter %d", m->funcs[i]->name, p);
    ir_module_free(m);
}

Test(tune_key, names_only_integer_scalars)
{
    static const char *const want[] = {
        "t.ph:4:18: error: 'X' is a tensor; its dims are always in the key; @ph.autotune_key names integer scalars\n",
        "t.ph:4:23: error: 's' is of type f32; @ph.autotune_key names integer scalars (each value of a float would tune again)\n",
        "t.ph:4:28: error: 'Q' is not a parameter of this kernel\n",
        "t.ph:4:38: error: 'c' is named twice in @ph.autotune_key\n",
        "t.ph:4:43: error: @ph.autotune_key takes the names of integer scalar parameters, as strings\n",
        "t.ph:5:2: error: @ph.autotune_key is given twice\n",
        "t.ph:9:2: error: @ph.autotune_key takes the names of integer scalar parameters, as strings\n",
    };
    fails_with_all(HEAD "@ph.kernel\n"
                        "@ph.autotune_key(\"X\", \"s\", \"Q\", \"c\", \"c\", c)\n"
                        "@ph.autotune_key(\"c\")\n"
                        "def k(X: ph.tensor[ph.f32][N], s: ph.f32, c: ph.i32):\n    pass\n"
                        "@ph.kernel\n@ph.autotune_key()\n"
                        "def k2(X: ph.tensor[ph.f32][N]):\n    pass\n",
                   want, (int)(sizeof want / sizeof *want));
}

Test(occupancy, sets_each_configs_blocks)
{
    IrModule *m = compiles(HEAD "@ph.kernel\n@ph.occupancy(OCC)\n@ph.autotune(OCC=[1, 2])\n"
                                "def k(X: ph.tensor[ph.f32][N]):\n    pass\n"
                                "@ph.kernel\n@ph.occupancy(3)\ndef k3(X: ph.tensor[ph.f32][N]):\n    pass\n");
    cr_assert_eq(m->nfuncs, 3);
    cr_assert_eq(m->funcs[0]->occupancy, 1);
    cr_assert_eq(m->funcs[1]->occupancy, 2);
    cr_assert_eq(m->funcs[2]->occupancy, 3);
    ir_module_free(m);
}

Test(occupancy, takes_a_count_from_1_to_8)
{
    static const char *const want[] = {
        "t.ph:4:2: error: @ph.occupancy takes one argument: a block count or a meta-parameter name\n",
        "t.ph:8:15: error: 'B' is not a meta-parameter of this kernel; @ph.occupancy takes an integer or a meta-parameter name\n",
        "t.ph:12:15: error: @ph.occupancy needs a block count from 1 to 8, got 9\n",
    };
    fails_with_all(HEAD "@ph.kernel\n@ph.occupancy(1, 2)\n"
                        "def k(X: ph.tensor[ph.f32][N]):\n    pass\n"
                        "@ph.kernel\n@ph.occupancy(B)\n"
                        "def k2(X: ph.tensor[ph.f32][N]):\n    pass\n"
                        "@ph.kernel\n@ph.occupancy(OCC)\n@ph.autotune(OCC=[2, 9])\n"
                        "def k3(X: ph.tensor[ph.f32][N]):\n    pass\n",
                   want, (int)(sizeof want / sizeof *want));
}
