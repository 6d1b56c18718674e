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
 * in IrFunc.params order; a tensor of rank 1 or 2 expands to three PTX
 * parameters (address, dim 0, dim 1), one of rank R of 3 or 4 to 1 + 2R
 * (address, its R dims, its R strides), a scalar to one. */
typedef enum {
    IR_ABI_TENSOR_ADDRESS,   /* a tensor's global address (8 bytes) */
    IR_ABI_TENSOR_DIM0,      /* its first dim, i64 */
    IR_ABI_TENSOR_DIM1,      /* its second dim, i64; 1 for a rank-1 tensor */
    IR_ABI_SCALAR,           /* an i32 or f32 scalar (the parameter's dtype), 4 bytes */
    IR_ABI_TENSOR_DIM2,      /* rank 3 and 4: the third dim, i64 */
    IR_ABI_TENSOR_DIM3,      /* rank 4: the fourth dim, i64 */
    IR_ABI_TENSOR_STRIDE0,   /* rank 3 and 4: the stride of axis 0 in elements, i64 (then 1, 2, 3) */
    IR_ABI_TENSOR_STRIDE1,
    IR_ABI_TENSOR_STRIDE2,
    IR_ABI_TENSOR_STRIDE3,
    IR_ABI_SCALAR64,         /* an i64 scalar, 8 bytes */
} IrAbiSlot;

enum { IR_ABI_MAX_SLOTS = 9 };   /* the most PTX parameters one kernel parameter expands to */

/* The dim axis a slot carries (0 .. 3), or -1 for another slot. */
static inline int ir_abi_dim_axis(IrAbiSlot s)
{
    return s == IR_ABI_TENSOR_DIM0 ? 0 : s == IR_ABI_TENSOR_DIM1 ? 1 : s == IR_ABI_TENSOR_DIM2 ? 2 : s == IR_ABI_TENSOR_DIM3 ? 3 : -1;
}
/* The stride axis a slot carries (0 .. 3), or -1 for another slot. */
static inline bool ir_abi_is_scalar(IrAbiSlot s) { return s == IR_ABI_SCALAR || s == IR_ABI_SCALAR64; }
static inline int ir_abi_stride_axis(IrAbiSlot s)
{
    return s >= IR_ABI_TENSOR_STRIDE0 && s <= IR_ABI_TENSOR_STRIDE3 ? (int)(s - IR_ABI_TENSOR_STRIDE0) : -1;
}

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
