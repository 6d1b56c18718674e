/* fuzz_codegen.c: libFuzzer target for the code generator: the whole front
 * end as in fuzz_frontend.c, then every program that checks is lowered to
 * LLVM IR (codegen_emit, which runs LLVM's verifier on the module). A
 * refusal from codegen on IR that verified is a finding. */
#include <stdint.h>
#include "fuzz_common.h"
#include "codegen/codegen.h"
#include "driver/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    IrModule *ir = fuzz_front(data, size);
    if (!ir) return 0;
    CodegenOptions o = {.target = target_find("sm_90"), .opt_level = 0};
    char *text = NULL, err[1024];
    if (codegen_emit(ir, &o, CG_EMIT_LLVM, &text, err, sizeof err)) {
        fprintf(stderr, "codegen refused IR that verified: %s\n", err);
        abort();
    }
    free(text);
    ir_module_free(ir);
    return 0;
}
