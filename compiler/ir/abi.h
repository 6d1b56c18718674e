/* abi.h: the kernel ABI's parameters, in one place: the PTX parameters the
 * entry of an IrFunc takes, in order, as the code generator declares them
 * (codegen.c) and the runtime packs a launch's arguments (runtime/), and
 * the bytes they take. docs/runtime.md ("Kernel ABI") says it in words for
 * a host that loads phc's PTX itself; codegen.h says the rest of the ABI
 * (the entry's name, block size and shared memory). Included by ir.h. */
#ifndef PHC_IR_ABI_H
#define PHC_IR_ABI_H

#include "ir.h"

/* What one PTX parameter of an entry carries. The kernel's parameters come
 * in IrFunc.params order; a tensor expands to three PTX parameters, a
 * scalar to one. */
typedef enum {
    IR_ABI_TENSOR_ADDRESS,   /* a tensor's global address (8 bytes) */
    IR_ABI_TENSOR_DIM0,      /* its first dim, i64 */
    IR_ABI_TENSOR_DIM1,      /* its second dim, i64; 1 for a rank-1 tensor */
    IR_ABI_SCALAR,           /* an i32 or f32 scalar (the parameter's dtype), 4 bytes */
} IrAbiSlot;

enum { IR_ABI_MAX_SLOTS = 3 };   /* the most PTX parameters one kernel parameter expands to */

/* One PTX parameter: what it carries, of which kernel parameter. */
typedef struct {
    IrAbiSlot slot;
    int param;   /* index into the kernel's params */
} IrAbiParam;

/* The PTX parameters kernel parameter p expands to, in order, into out; their count. */
int ir_abi_slots(const IrParam *p, IrAbiSlot out[IR_ABI_MAX_SLOTS]);
/* The PTX parameters of an entry with these kernel parameters, in order,
 * into out (NULL: only counted); their count. */
int ir_abi_params(const IrParam *params, int nparams, IrAbiParam *out);
/* The bytes of a slot in the parameter space, which is also its alignment. */
int ir_abi_slot_bytes(IrAbiSlot s);

/* The bytes an entry's PTX parameters take in the parameter space, each
 * at its natural alignment. The driver refuses an entry whose parameters
 * exceed IR_MAX_PARAM_BYTES: 4 KB is the limit of the PTX ISA version phc
 * emits (8.0) and of every driver; 32764 bytes needs PTX ISA 8.1 and a
 * CUDA 12.1 driver. */
enum { IR_MAX_PARAM_BYTES = 4096 };
int64_t ir_param_bytes(const IrParam *params, int nparams);

#endif
