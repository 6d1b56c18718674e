/* args.c: a launch's arguments: checked against the kernel's parameters,
 * each config's eligibility for them, its grid from the host's callback,
 * and the parameters as the kernel ABI takes them. */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

int64_t ph_meta_get(const ph_meta *meta, const char *name, int64_t dflt)
{
    for (int i = 0; meta && i < meta->n; i++)
        if (!strcmp(meta->names[i], name)) return meta->values[i];
    return dflt;
}

static const char *arg_kind_name(ph_arg_kind k)
{
    return k == PH_ARG_TENSOR ? "a tensor" : k == PH_ARG_I32 ? "an i32" : k == PH_ARG_F32 ? "an f32" : k == PH_ARG_I64 ? "an i64" : "an unknown kind";
}

/* The name of a tensor argument's dtype, or NULL for a value outside the enum. */
static const char *arg_dtype_name(ph_dtype t)
{
    static const char *const names[] = {[PH_F16] = "f16", [PH_BF16] = "bf16", [PH_F32] = "f32", [PH_I32] = "i32",
                                         [PH_I8] = "i8", [PH_U8] = "u8", [PH_F8E4M3] = "f8e4m3", [PH_F8E5M2] = "f8e5m2",
                                         [PH_I64] = "i64"};
    return t > PH_DTYPE_UNCHECKED && (unsigned)t < sizeof names / sizeof *names ? names[t] : NULL;
}

/* A tensor argument's dtype against its parameter's: unchecked agrees. */
static ph_status check_dtype(const IrFunc *f, const IrParam *p, ph_dtype t)
{
    if (t == PH_DTYPE_UNCHECKED) return PH_OK;
    const char *got = arg_dtype_name(t);
    if (!got) return ph_internal_failf(PH_ERR_ARGS, "%s: parameter %s: unknown dtype %d", f->kernel, p->name, (int)t);
    if (strcmp(got, ir_dtype_name(p->dt)))
        return ph_internal_failf(PH_ERR_ARGS, "%s: parameter %s: expected %s, got %s", f->kernel, p->name, ir_dtype_name(p->dt), got);
    return PH_OK;
}

/* Whether strides lay dims out row-major and contiguous, as torch's
 * is_contiguous() says: a dim of size 1 may have any stride. */
static bool row_major_contiguous(const int64_t *dims, const int64_t *strides, int rank)
{
    int64_t expected = 1;
    for (int a = rank - 1; a >= 0; a--) {
        if (dims[a] != 1 && strides[a] != expected) return false;
        expected *= dims[a];
    }
    return true;
}

static bool strides_given(const ph_arg *a, int rank)
{
    for (int i = 0; i < rank; i++)
        if (a->strides[i]) return true;
    return false;
}

/* A rank-3/4 tensor is read through its strides: each from 0 to 2^62, and
 * its farthest element's offset below 2^62 too, so the kernel's i64
 * offsets never wrap. */
static ph_status check_view(const IrFunc *f, const IrParam *p, const ph_arg *a)
{
    const int64_t limit = (int64_t)1 << 62;
    int64_t span = 0;
    for (int i = 0; i < p->rank; i++) {
        if (a->strides[i] < 0 || a->strides[i] > limit)
            return ph_internal_failf(PH_ERR_ARGS, "%s: parameter %s: stride %d is %lld; strides must be from 0 to 2^62", f->kernel,
                                     p->name, i, (long long)a->strides[i]);
        if (a->strides[i] && a->dims[i] - 1 > (limit - 1 - span) / a->strides[i])
            return ph_internal_failf(PH_ERR_ARGS, "%s: parameter %s: its strides reach past 2^62 elements", f->kernel, p->name);
        span += (a->dims[i] - 1) * a->strides[i];
    }
    return PH_OK;
}

/* The kernel reads a tensor of rank 1 or 2 as row-major contiguous (the
 * language says such a tensor parameter is): strides that say otherwise
 * are refused; none given ({0, 0}) say nothing. One of rank 3 or 4 is read
 * through its strides. */
static ph_status check_strides(const IrFunc *f, const IrParam *p, const ph_arg *a)
{
    if (p->rank > 2) return check_view(f, p, a);
    if (!strides_given(a, p->rank) || row_major_contiguous(a->dims, a->strides, p->rank)) return PH_OK;
    if (p->rank == 1)
        return ph_internal_failf(PH_ERR_ARGS, "%s: parameter %s: strides (%lld) are not row-major contiguous for dims (%lld)", f->kernel,
                    p->name, (long long)a->strides[0], (long long)a->dims[0]);
    return ph_internal_failf(PH_ERR_ARGS, "%s: parameter %s: strides (%lld, %lld) are not row-major contiguous for dims (%lld, %lld)",
                f->kernel, p->name, (long long)a->strides[0], (long long)a->strides[1], (long long)a->dims[0],
                (long long)a->dims[1]);
}

/* Checks what every config shares: count, kinds, non-null pointers,
 * dtypes, dims that must agree between tensors, literal dims, strides. */
ph_status ph_internal_check_args(const IrFunc *f, const ph_arg *args, int nargs)
{
    if (nargs != f->nparams)
        return ph_internal_failf(PH_ERR_ARGS, "%s takes %d arguments, got %d", f->kernel, f->nparams, nargs);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        ph_arg_kind want = ph_internal_arg_kind(p);
        if (args[i].kind != want)
            return ph_internal_failf(PH_ERR_ARGS, "%s: argument %d (%s) must be %s, got %s", f->kernel, i + 1, p->name,
                        arg_kind_name(want), arg_kind_name(args[i].kind));
        if (!p->is_tensor) continue;
        if (!args[i].ptr) return ph_internal_failf(PH_ERR_ARGS, "%s: tensor %s is a null pointer", f->kernel, p->name);
        ph_status s = check_dtype(f, p, args[i].dtype);
        if (s) return s;
        for (int a = 0; a < p->rank; a++) {
            int64_t d = args[i].dims[a];
            if (d < 1 || d > INT32_MAX)
                return ph_internal_failf(PH_ERR_ARGS, "%s: tensor %s has dim %d = %lld (must be 1 .. 2^31-1)", f->kernel, p->name, a, (long long)d);
            if (!p->dim_name[a] && d != p->dim_value[a])
                return ph_internal_failf(PH_ERR_ARGS, "%s: tensor %s's dim %d must be %lld, got %lld", f->kernel, p->name, a,
                            (long long)p->dim_value[a], (long long)d);
            for (int j = 0; j < i && p->dim_name[a]; j++) {
                const IrParam *q = &f->params[j];
                for (int b = 0; q->is_tensor && b < q->rank; b++)
                    if (q->dim_name[b] && !strcmp(q->dim_name[b], p->dim_name[a]) && args[j].dims[b] != d)
                        return ph_internal_failf(PH_ERR_ARGS, "%s: dim %s is %lld in %s but %lld in %s", f->kernel, p->dim_name[a],
                                    (long long)args[j].dims[b], q->name, (long long)d, p->name);
            }
        }
        if ((s = check_strides(f, p, &args[i]))) return s;
    }
    return PH_OK;
}

static int64_t dim_value(const IrFunc *f, const ph_arg *args, const char *dim)
{
    for (int i = 0; i < f->nparams; i++)
        for (int a = 0; f->params[i].is_tensor && a < f->params[i].rank; a++)
            if (f->params[i].dim_name[a] && !strcmp(f->params[i].dim_name[a], dim)) return args[i].dims[a];
    return -1;
}

/* Why config f cannot take these arguments, or NULL when it can. */
const char *ph_internal_ineligible(const IrFunc *f, const ph_arg *args, char *why, size_t n)
{
    for (int i = 0; i < f->nmeta; i++) {
        int64_t d = dim_value(f, args, f->meta[i].name);
        if (d >= 0 && d != f->meta[i].value) {
            snprintf(why, n, "%s needs %s = %lld, got %lld", f->name, f->meta[i].name, (long long)f->meta[i].value, (long long)d);
            return why;
        }
    }
    for (int i = 0; i < f->naligned; i++) {
        int64_t d = dim_value(f, args, f->aligned[i].dim);
        if (d >= 0 && f->aligned[i].value > 0 && d % f->aligned[i].value) {
            snprintf(why, n, "%s promises %s %% %s == 0, but %s = %lld is not a multiple of %lld", f->name, f->aligned[i].dim,
                     f->aligned[i].meta, f->aligned[i].dim, (long long)d, (long long)f->aligned[i].value);
            return why;
        }
    }
    return NULL;
}

/* One launch parameter of kernel ABI slot `slot` (ir/abi.h) from argument a of parameter p. */
static void pack_slot(uint64_t *to, IrAbiSlot slot, const IrParam *p, const ph_arg *a)
{
    int dim = ir_abi_dim_axis(slot), stride = ir_abi_stride_axis(slot);
    if (slot == IR_ABI_TENSOR_ADDRESS) {
        *to = a->ptr;
    } else if (slot == IR_ABI_SCALAR) {
        memcpy(to, p->dt == DT_I32 ? (const void *)&a->i32 : (const void *)&a->f32, 4);
    } else if (slot == IR_ABI_SCALAR64) {
        int64_t v = ph_arg_i64_value(a);
        memcpy(to, &v, 8);
    } else if (dim >= 0) {
        int64_t d = dim < p->rank ? a->dims[dim] : 1;
        memcpy(to, &d, 8);
    } else if (stride >= 0) {   /* the strides given, or row-major ones */
        int64_t st = a->strides[stride];
        if (!strides_given(a, p->rank)) {
            st = 1;
            for (int i = stride + 1; i < p->rank; i++) st *= a->dims[i];
        }
        memcpy(to, &st, 8);
    }
}

void ph_internal_pack_args(uint64_t *store, const IrFunc *f, const ph_arg *args)
{
    for (int i = 0, n = 0; i < f->nparams; i++) {
        IrAbiSlot slots[IR_ABI_MAX_SLOTS];
        for (int s = 0, ns = ir_abi_slots(&f->params[i], slots); s < ns; s++)
            pack_slot(&store[n++], slots[s], &f->params[i], &args[i]);
    }
}

ph_status ph_internal_grid_for(const IrFunc *f, const char **meta_names, int64_t *meta_values, const int *max_grid,
                               ph_grid_fn grid, void *user, unsigned g[3])
{
    ph_meta meta = {f->nmeta, meta_names, meta_values};
    g[0] = g[1] = g[2] = 1;
    grid(&meta, user, g);
    for (int i = 0; i < 3; i++)
        if (g[i] == 0 || (max_grid && g[i] > (unsigned)max_grid[i]))
            return ph_internal_failf(PH_ERR_GRID, "%s: grid %u x %u x %u is empty or over the device's limits (%d x %d x %d)", f->name,
                        g[0], g[1], g[2], max_grid ? max_grid[0] : 0, max_grid ? max_grid[1] : 0, max_grid ? max_grid[2] : 0);
    return PH_OK;
}

