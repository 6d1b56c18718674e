/* codegen.h: tile IR to LLVM IR (LLVM-C, NVPTX) and to PTX, in memory.
 *
 * Kernel ABI (docs/architecture.md): each IrFunc becomes one PTX entry
 * named IrFunc.name. Its parameters, in IrFunc.params order: a tensor is
 * three parameters (global pointer, i64 dim0, i64 dim1; dim1 is 1 for a
 * rank-1 tensor), an i32 or f32 scalar is one. The block has
 * IrFunc.threads threads; shared memory is static. */
#ifndef PHC_CODEGEN_H
#define PHC_CODEGEN_H

#include "ir.h"

typedef struct {
    const char *arch;   /* "sm_80", "sm_90" (default sm_90) */
    int opt_level;      /* 0: no LLVM optimization (readable); 3: default */
} CodegenOptions;

typedef enum { CG_EMIT_LLVM, CG_EMIT_PTX } CgEmit;

/* Lowers every function of m into one module and emits it as LLVM IR text
 * or PTX. On success returns 0 and a malloc'd NUL-terminated text in *out;
 * otherwise 1 with a message in err. */
int codegen_emit(const IrModule *m, const CodegenOptions *o, CgEmit what, char **out, char *err, size_t errlen);

#endif
