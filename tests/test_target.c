/* test_target.c: a target is a row. A target of this suite's own, "test_fma"
 * (sm_80's row with FMA as its only dot engine), is registered and then
 * chosen by name like sm_80 and sm_90: the examples compile for it to PTX
 * without a tensor-core instruction, while sm_80 and sm_90 use mma.sync
 * for the same programs. The suite adds a row and edits no file of the
 * code generator: that is what it shows. It links the code generator's
 * objects (as test_cpusim does), the engines' symbols with them. */
#include <criterion/criterion.h>
#include <glob.h>

#include "codegen/codegen.h"
#include "codegen/target.h"
#include "driver/targets.h"
#include "testutil.h"

static const DotEngine *const fma_only[] = {&dot_fma, NULL};
static Target test_fma;

static void register_test_fma(void)
{
    test_fma = *target_find("sm_80");
    test_fma.name = "test_fma";
    test_fma.caps &= ~TARGET_TENSOR_CORES;
    test_fma.dots = fma_only;
    cr_assert_eq(target_register(&test_fma), 0);
}

TestSuite(target, .init = register_test_fma);

static char *emit_for(const IrModule *m, const char *name)
{
    CodegenOptions o = {.target = target_find(name), .opt_level = CODEGEN_OPT_DEFAULT};
    cr_assert_not_null(o.target, "no target %s", name);
    char *out = NULL, err[2048];
    cr_assert_eq(codegen_emit(m, &o, CG_EMIT_PTX, &out, err, sizeof err), 0, "%s: codegen failed: %s", name, err);
    return out;
}

static bool any_tensorcore_kernel(const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->tensorcore) return true;
    return false;
}

Test(target, a_registered_row_is_found_and_listed)
{
    cr_expect_eq(target_find("test_fma"), &test_fma);
    cr_expect_str_eq(target_names(), "sm_80, sm_90, test_fma");
    cr_expect_null(target_find("sm_70"));
    cr_expect_str_eq(target_find("sm_90")->name, "sm_90");
}

Test(target, a_row_of_fma_only_compiles_every_example_without_tensor_cores, .timeout = 1800)
{
    glob_t g;
    cr_assert_eq(glob("examples/*/*.ph", 0, NULL, &g), 0, "no examples found (run from the repository root)");
    int tensorcore_programs = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        IrModule *m = driver_compile_file(g.gl_pathv[i], NULL, stderr);
        cr_assert_not_null(m, "%s does not compile", g.gl_pathv[i]);
        char *fma = emit_for(m, "test_fma");
        cr_expect(strstr(fma, ".target sm_80") != NULL, "%s: test_fma writes for sm_80's chip", g.gl_pathv[i]);
        cr_expect(strstr(fma, "mma.sync") == NULL && strstr(fma, "ldmatrix") == NULL,
                  "%s: test_fma has no tensor-core engine, yet its PTX uses the tensor cores", g.gl_pathv[i]);
        if (any_tensorcore_kernel(m)) {
            /* the control: the same program on the built-in rows */
            tensorcore_programs++;
            for (int k = 0; k < 2; k++) {
                const char *arch = k ? "sm_90" : "sm_80";
                char *ptx = emit_for(m, arch);
                cr_expect(strstr(ptx, "mma.sync.aligned.m16n8k16") != NULL, "%s: no mma.sync for %s", g.gl_pathv[i], arch);
                free(ptx);
            }
        }
        free(fma);
        ir_module_free(m);
    }
    cr_expect_geq(tensorcore_programs, 1, "no example uses the tensor cores: the control shows nothing");
    globfree(&g);
}
