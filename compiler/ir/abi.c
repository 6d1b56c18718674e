/* abi.c: the kernel ABI's parameters (abi.h). */
#include "abi.h"

int ir_abi_slots(const IrParam *p, IrAbiSlot out[IR_ABI_MAX_SLOTS])
{
    if (!p->is_tensor) {
        out[0] = p->dt == DT_I64 ? IR_ABI_SCALAR64 : IR_ABI_SCALAR;
        return 1;
    }
    out[0] = IR_ABI_TENSOR_ADDRESS;
    out[1] = IR_ABI_TENSOR_DIM0;
    out[2] = IR_ABI_TENSOR_DIM1;
    if (p->rank <= 2) return 3;   /* row-major contiguous: dim 1 is the row stride */
    static const IrAbiSlot more[] = {IR_ABI_TENSOR_DIM2, IR_ABI_TENSOR_DIM3};
    int n = 3;
    for (int a = 2; a < p->rank; a++) out[n++] = more[a - 2];
    for (int a = 0; a < p->rank; a++) out[n++] = (IrAbiSlot)(IR_ABI_TENSOR_STRIDE0 + a);
    return n;
}

int ir_abi_params(const IrParam *params, int nparams, IrAbiParam *out)
{
    int n = 0;
    for (int i = 0; i < nparams; i++) {
        IrAbiSlot slots[IR_ABI_MAX_SLOTS];
        int ns = ir_abi_slots(&params[i], slots);
        for (int s = 0; s < ns; s++, n++)
            if (out) out[n] = (IrAbiParam){slots[s], i};
    }
    return n;
}

int ir_abi_slot_bytes(IrAbiSlot s) { return s == IR_ABI_SCALAR ? 4 : 8; }

int64_t ir_param_bytes(const IrParam *params, int nparams)
{
    int64_t bytes = 0;
    for (int i = 0; i < nparams; i++) {
        IrAbiSlot slots[IR_ABI_MAX_SLOTS];
        int ns = ir_abi_slots(&params[i], slots);
        for (int s = 0; s < ns; s++) {
            int size = ir_abi_slot_bytes(slots[s]);
            bytes = (bytes + size - 1) / size * size + size;
        }
    }
    return bytes;
}
