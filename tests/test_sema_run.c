/* test_sema_run.c: the decorators that shape how a config runs and not
 * what it computes, @ph.stages and @ph.warp_specialize: a count or a
 * meta-parameter, resolved per config, and each wrong use refused with
 * its message. */
#include "semacheck.h"

#define HEAD "import phobos.lang as ph\n\n"

/* @ph.stages takes a count or a meta-parameter, resolved per config as
 * @ph.launch is; without it the function asks for the compiler's default. */
Test(header, stages)
{
    IrModule *m = compiles(HEAD "@ph.kernel\n@ph.stages(S)\n@ph.autotune(S=[1, 3])\n"
                           "def k(X: ph.tensor[ph.f32][N]):\n    pass\n"
                           "@ph.kernel\n@ph.stages(4)\ndef k2(X: ph.tensor[ph.f32][N]):\n    pass\n"
                           "@ph.kernel\ndef k3(X: ph.tensor[ph.f32][N]):\n    pass\n");
    cr_assert_eq(m->nfuncs, 4);
    cr_expect_eq(m->funcs[0]->stages, 1);
    cr_expect_eq(m->funcs[1]->stages, 3);
    cr_expect_eq(m->funcs[2]->stages, 4);
    cr_expect_eq(m->funcs[3]->stages, 0);
    ir_module_free(m);
    fails_with(HEAD "@ph.kernel\n@ph.stages(S)\n@ph.autotune(S=[2, 9])\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n",
               "t.ph:4:12: error: @ph.stages needs a stage count from 1 to 8, got S = 9\n");
    static const char *const twice[] = {"t.ph:5:2: error: @ph.stages is given twice\n",
                                        "t.ph:6:2: error: @ph.stages is given twice\n",
                                        "t.ph:4:12: error: @ph.stages needs a stage count from 1 to 8, got 0\n"};
    fails_with_all(HEAD "@ph.kernel\n@ph.stages(0)\n@ph.stages(Q)\n@ph.stages\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n",
                   twice, 3);
    static const char *const bare[] = {"t.ph:4:2: error: @ph.stages takes one argument: a stage count or a meta-parameter name\n",
                                       "t.ph:5:2: error: @ph.stages is given twice\n"};
    fails_with_all(HEAD "@ph.kernel\n@ph.stages\n@ph.stages(Q)\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n", bare, 2);
    fails_with(HEAD "@ph.kernel\n@ph.stages(Q)\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n",
               "t.ph:4:12: error: 'Q' is not a meta-parameter of this kernel; @ph.stages takes an integer or a meta-parameter name\n");
}

/* @ph.warp_specialize(W): 0 off, 1 a producer warpgroup, 2 and the tile
 * code's warpgroups taking turns (IrFunc.turns) */
Test(header, warp_specialize)
{
    IrModule *m = compiles(HEAD "@ph.kernel\n@ph.launch(256)\n@ph.warp_specialize(W)\n@ph.autotune(W=[0, 1, 2])\n"
                           "def k(X: ph.tensor[ph.f32][N]):\n    pass\n");
    cr_assert_eq(m->nfuncs, 3);
    for (int w = 0; w < 3; w++) {
        cr_expect_eq(m->funcs[w]->producer_threads, w ? 128 : 0);
        cr_expect_eq(m->funcs[w]->turns, w == 2);
    }
    ir_module_free(m);
    fails_with(HEAD "@ph.kernel\n@ph.warp_specialize(W)\n@ph.autotune(W=[1, 3])\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n",
               "t.ph:4:21: error: @ph.warp_specialize needs 0 (off), 1 (a producer warpgroup) or 2 (and the warpgroups "
               "computing take turns), got 3\n");
    fails_with(HEAD "@ph.kernel\n@ph.warp_specialize(P)\ndef k(X: ph.tensor[ph.f32][N]):\n    pass\n",
               "t.ph:4:21: error: 'P' is not a meta-parameter of this kernel; @ph.warp_specialize takes 0, 1, 2 or a "
               "meta-parameter name\n");
}
