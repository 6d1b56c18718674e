/* args.h: a launch's arguments against a kernel's configs (args.c). */
#ifndef PHOBOS_ARGS_H
#define PHOBOS_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "phobos.h"

/* The argument kind a parameter takes: a tensor, an i32, an i64 or an f32. */
static inline ph_arg_kind ph_internal_arg_kind(const IrParam *p)
{
    if (p->is_tensor) return PH_ARG_TENSOR;
    return p->dt == DT_I32 ? PH_ARG_I32 : p->dt == DT_I64 ? PH_ARG_I64 : PH_ARG_F32;
}

/* Checks what every config f of a kernel shares: count, kinds, non-null
 * pointers, dtypes, dims that must agree between tensors, literal dims,
 * strides. */
ph_status ph_internal_check_args(const IrFunc *f, const ph_arg *args, int nargs);
/* Why config f cannot take these arguments (in why), or NULL when it can. */
const char *ph_internal_ineligible(const IrFunc *f, const ph_arg *args, char *why, size_t n);
/* Config f's grid, from the callback given f's meta-parameters, within a
 * device's max_grid (NULL: none known). */
ph_status ph_internal_grid_for(const IrFunc *f, const char **meta_names, int64_t *meta_values, const int *max_grid,
                               ph_grid_fn grid, void *user, unsigned g[3]);
/* Writes args into store, a launch's parameters (three a tensor: its
 * address and its dims, and for rank 3 or 4 its strides; one a scalar), as
 * the kernel ABI passes them. */
void ph_internal_pack_args(uint64_t *store, const IrFunc *f, const ph_arg *args);

#endif
