/* fuzz_frontend.c: libFuzzer target for the front end and the IR passes:
 * bytes -> lex, parse, AST print -> sema -> passes with the verifier ->
 * IR print, parse, print (see fuzz_common.h). make fuzz runs it. */
#include <stdint.h>
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ir_module_free(fuzz_front(data, size));
    return 0;
}
