/* codegen.h: tile IR to LLVM IR (LLVM-C, NVPTX) and to PTX, in memory.
 *
 * Kernel ABI (docs/runtime.md): each IrFunc becomes one PTX entry named
 * IrFunc.name. Its parameters are those ir/abi.h lists (ir_abi_params:
 * a tensor's address and two dims, a scalar). The block has
 * IrFunc.threads threads. Its shared memory is static while it fits
 * CODEGEN_MAX_STATIC_SHARED bytes; past that it is dynamic: the launch
 * must ask for the bytes the PTX constant NAME_dynamic_shared_bytes holds
 * (codegen_dynamic_shared_bytes reads them), after raising the function's
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to as much. */
#ifndef PHC_CODEGEN_H
#define PHC_CODEGEN_H

#include "ir/ir.h"
#include "layout/layout.h"

/* The LLVM pipelines (codegen.c says what each runs). */
enum {
    CODEGEN_OPT_NONE = 0,      /* no LLVM optimization: readable LLVM IR and PTX (phc -O0) */
    CODEGEN_OPT_DEFAULT = 2,   /* phc's own (phc -O2, the default) */
    CODEGEN_OPT_FULL = 3,      /* LLVM's default<O3> and its -O3 back end (phc -O3) */
};

/* Where codegen_emit's time went, in milliseconds of the calling thread's
 * CPU time: added to, so that a caller may sum over calls. */
typedef struct CodegenTimes {
    double lower_ms;      /* tile IR to LLVM IR, and LLVM's verifier */
    double optimize_ms;   /* the LLVM pipeline */
    double backend_ms;    /* NVPTX: instruction selection, the PTX printer (or the LLVM IR printed) */
} CodegenTimes;

/* The GPU the code is for (codegen/target.h); rows are found by name in
 * compiler/driver/targets.h (target_find). */
struct Target;

typedef struct {
    const struct Target *target;   /* required */
    int opt_level;      /* CODEGEN_OPT_*; any other value is the default */
    bool lineinfo;      /* line information: PTX .file and .loc directives for the .ph lines */
    const char *source; /* with lineinfo: the .ph file's path, as .file names it (NULL: "<string>") */
    CodegenTimes *times;   /* not NULL: what each step took is added there */
} CodegenOptions;

#define CODEGEN_TRIPLE "nvptx64-nvidia-cuda"

typedef enum { CG_EMIT_LLVM, CG_EMIT_PTX } CgEmit;

/* The most static shared memory ptxas lets a kernel declare (48 KB). */
#define CODEGEN_MAX_STATIC_SHARED 49152

/* What follows an entry's name in the name of the constant that holds its
 * dynamic shared memory, in bytes (an i32 in the constant space), and in
 * the name of the extern shared array that stands for that memory. */
#define CODEGEN_DYNAMIC_SHARED_SUFFIX "_dynamic_shared_bytes"
#define CODEGEN_DYNAMIC_AREA_SUFFIX "_shared"

/* The environment switches code generation reads (their names, ended by
 * NULL): the same source gives other PTX under each, so the runtime's PTX
 * cache keys on them. */
extern const char *const codegen_switches[];

/* The dynamic shared memory, in bytes, entry of ptx (PTX as codegen_emit
 * writes it) must be launched with: 0 when its shared memory is static.
 * In ptxinfo.c, with the other readers of PTX text. */
int64_t codegen_dynamic_shared_bytes(const char *ptx, const char *entry);

/* Bulk copy descriptors (Hopper's tensor maps): a copy engine may ask the
 * launch for one per (tensor, box) it copies with the bulk tensor copy.
 * The entry then takes, after the parameters of ir/abi.h, one 128-byte
 * parameter (64-byte aligned) per descriptor, the map
 * cuTensorMapEncodeTiled writes, then one i32 per descriptor: nonzero when
 * the launch could build it (16-byte aligned address and row stride), 0
 * when the kernel is to copy that tensor without it. The PTX constant
 * NAME_copy_descriptors (u32: their count, then per descriptor its tensor
 * parameter's index in IrFunc.params, the box's rows, its columns, the
 * shared-memory swizzle in bytes: 0, 32, 64 or 128, and the element's
 * bytes: 2 or 4) says which. The tensor is read as a [dim0, dim1] array
 * of such elements, rows dim1 elements apart; coordinates outside it read
 * zeros (a copy) or are left alone (an add). A map of 4-byte elements is
 * f32's: the engine's adds add floats; one of 2-byte elements moves
 * bytes, f16 and bf16 alike. */
enum { CODEGEN_MAX_COPY_DESCS = 8, CODEGEN_COPY_DESC_WORDS = 5 };
typedef struct { int param, rows, cols, swizzle, elem_bytes; } CodegenCopyDesc;
#define CODEGEN_COPY_DESCS_SUFFIX "_copy_descriptors"
/* The descriptors entry of ptx asks for, into out (at most
 * CODEGEN_MAX_COPY_DESCS): their count, 0 for none. In ptxinfo.c. */
int codegen_copy_descriptors(const char *ptx, const char *entry, CodegenCopyDesc *out);

/* Lowers every function of m into one module and emits it as LLVM IR text
 * or PTX. On success returns 0 and a malloc'd NUL-terminated text in *out;
 * otherwise 1 with a message in err. Threads may call it at once: each
 * call has an LLVM context of its own, and nothing else is shared. */
int codegen_emit(const IrModule *m, const CodegenOptions *o, CgEmit what, char **out, char *err, size_t errlen);

/* The layout pass's policy for target t: each dot's result in its
 * engine's layout (t's first that accepts it), ring slots in t's operand
 * layout. What the code generator plans with (phc --emit=layouts too). */
LayoutDotPolicy codegen_dot_policy(const struct Target *t);

#endif
