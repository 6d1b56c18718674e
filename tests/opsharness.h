/* opsharness.h: the inputs and the comparison that the suites checking
 * tests/gpu/ops.ph share (test_gpu_ops on the GPU, test_cpusim on the CPU
 * executor): dims and scalars per kernel, random tensors, and every element
 * of a tensor against the interpreter's within tolerances that allow for the
 * GPU's approximate exp/log/rsqrt and its summation order. */
#ifndef PHC_OPSHARNESS_H
#define PHC_OPSHARNESS_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "ir/ir.h"

#define OPS "tests/gpu/ops.ph"
#define MATH_OPS "tests/gpu/math.ph"   /* tanh, erf, sigmoid, pow, fma, inf, nan */
#define GATHER_OPS "tests/gpu/gather.ph" /* scalars from tensors, gathers, scatters */
#define TYPE_OPS "tests/gpu/types.ph"  /* i8, u8: conversions, widening, integer dots */
#define MASKED_OPS "tests/gpu/masked.ph"   /* masked loads and stores, a ragged softmax */
#define FLOW_OPS "tests/gpu/flow.ph"       /* ph.static_range, @ph.func helpers, RoPE */
#define STRIDED_OPS "tests/gpu/strided.ph" /* rank-3/4 tensors as views, windows over two axes or one */
#define LOOP_OPS "tests/gpu/loops.ph"      /* while loops */
#define I64_OPS "tests/gpu/i64.ph"         /* i64: arithmetic, conversions, reductions, gathers, atomics */

/* The value of a dimension or scalar for a kernel: the table first, then defaults. */
static int64_t value_for(const char *kernel, const char *name)
{
    static const struct { const char *kernel, *name; int64_t v; } table[] = {
        {"widerow", "M", 9}, {"widerow", "N", 1000},
        {"fdot", "K", 40},
        {"fmadot", "k_len", 45}, {"fmadot_t", "k_len", 45}, {"fmadot_tr", "k_len", 45},
        {"fmadot", "K", 45}, {"fmadot_t", "K", 45}, {"fmadot_tr", "K", 45},
        {"bdot", "k_len", 48},
        {"ringdot", "k1", 3}, {"ringdot", "M", 200}, {"ringdot", "K", 96},
        {"ctrl", "N", 500}, {"ctrl", "n", 37},
        {"masks", "n", 300},
        {"argred", "G", 24}, {"argred", "L", 200}, {"vecshape", "L", 800},
        {"idot", "K", 80}, {"tcidot", "K", 80},
        {"pdot", "K", 400},   /* 400 = 2 x 176 + 48: a last K tile past K at each BK */
        {"rope", "P", 1000},
        /* bench/gemm_tuned.ph is persistent: more tiles than the 4 x 3 grid's
         * blocks (15 of 128 x 256), so blocks loop, and edges in M and N */
        {"gemm", "M", 520}, {"gemm", "N", 520}, {"gemm", "K", 80},
        {"perm", "B", 2}, {"perm", "H", 3}, {"perm", "D", 20}, {"edges", "B", 2}, {"edges", "H", 3}, {"edges", "D", 6},
        {"tdot", "B", 2}, {"tdot", "H", 3},
        {"wide", "n", 5000000011}, {"wideidx", "V", 50},
        {"wdot_out", "R", 384},   /* 2 blocks of BM 64 rows for each of K / BK steps */
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (!strcmp(table[i].kernel, kernel) && !strcmp(table[i].name, name)) return table[i].v;
    if (!strcmp(name, "M")) return 100;
    if (!strcmp(name, "N")) return 72;
    if (!strcmp(name, "K")) return 48;
    if (!strcmp(name, "G")) return 8;
    return 37;
}

static size_t elem_bytes(DType dt) { return (size_t)ir_dtype_bytes(dt); }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void fill(DType dt, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double x = (uniform() - 0.5) * 4.0;
        switch (dt) {
        case DT_F16: ((uint16_t *)p)[i] = ph_f32_to_f16((float)x); break;
        case DT_BF16: ((uint16_t *)p)[i] = ph_f32_to_bf16((float)x); break;
        case DT_I32: ((int32_t *)p)[i] = (int32_t)(x * 25); break;
        /* small values (indices, sums) three times in four, else any 64 bits */
        case DT_I64: ((int64_t *)p)[i] = uniform() < 0.75 ? (int64_t)(x * 25) : (int64_t)(rng ^ (rng << 29)); break;
        case DT_I8: case DT_U8: ((uint8_t *)p)[i] = (uint8_t)(uniform() * 256); break;   /* every value */
        case DT_F8E4M3: ((uint8_t *)p)[i] = ph_f32_to_e4m3((float)x); break;
        case DT_F8E5M2: ((uint8_t *)p)[i] = ph_f32_to_e5m2((float)x); break;
        default: ((float *)p)[i] = (float)x; break;
        }
    }
}

static double as_double(DType dt, const void *p, size_t i)
{
    switch (dt) {
    case DT_F16: return ph_f16_to_f32(((const uint16_t *)p)[i]);
    case DT_BF16: return ph_bf16_to_f32(((const uint16_t *)p)[i]);
    case DT_I32: return ((const int32_t *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    case DT_I8: return ((const int8_t *)p)[i];
    case DT_U8: return ((const uint8_t *)p)[i];
    case DT_F8E4M3: return ph_e4m3_to_f32(((const uint8_t *)p)[i]);
    case DT_F8E5M2: return ph_e5m2_to_f32(((const uint8_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Strides for a rank-3/4 tensor of dims d, laid out in memory as a view
 * that is not row-major: for an even parameter index as torch's
 * x.transpose(R-3, R-2) of a contiguous tensor (the last stride 1), for an
 * odd one as x.transpose(R-2, R-1) (the last two axes swapped). */
static void view_strides(int index, int rank, const int64_t *d, int64_t *st)
{
    int order[4] = {0, 1, 2, 3};   /* memory order, outermost first */
    int a = index % 2 ? rank - 2 : rank - 3, t = order[a];
    order[a] = order[a + 1], order[a + 1] = t;
    int64_t run = 1;
    for (int k = rank - 1; k >= 0; k--) {
        st[order[k]] = run;
        run *= d[order[k]];
    }
}

/* The interpreter's arguments for config f: each dim from value_for (a
 * specialized dim from its meta-parameter), tensors filled at random in
 * new buffers (bufs[i], count[i] elements; a rank-3/4 tensor as a view,
 * view_strides), scalars from value_for. */
static void host_args(const IrFunc *f, IrArg *args, void **bufs, size_t *count)
{
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        memset(&args[i], 0, sizeof args[i]);
        bufs[i] = NULL;
        count[i] = 0;
        if (!p->is_tensor) {
            args[i].i = (int32_t)value_for(f->kernel, p->name);
            args[i].l = value_for(f->kernel, p->name);
            args[i].f = 0.75f;
            continue;
        }
        int64_t d[4] = {1, 1, 1, 1};
        for (int a = 0; a < p->rank; a++) {
            d[a] = p->dim_name[a] ? value_for(f->kernel, p->dim_name[a]) : p->dim_value[a];
            for (int m = 0; m < f->nmeta && p->dim_name[a]; m++)
                if (!strcmp(f->meta[m].name, p->dim_name[a])) d[a] = f->meta[m].value;
        }
        count[i] = (size_t)(d[0] * d[1] * d[2] * d[3]);
        bufs[i] = malloc(count[i] * elem_bytes(p->dt));
        fill(p->dt, bufs[i], count[i]);
        args[i].data = bufs[i];
        args[i].dims[0] = d[0];
        args[i].dims[1] = p->rank >= 2 ? d[1] : 0;
        for (int a = 2; a < p->rank; a++) args[i].dims[a] = d[a];
        if (p->rank > 2) view_strides(i, p->rank, d, args[i].strides);
    }
}

/* Compares count elements of a tensor of param p, got against the
 * interpreter's want (NaN matches NaN) within atol + rtol |want|; logs the
 * first few differences under the name who, and returns how many differ. */
static inline int compare_tensor_within(const char *who, const IrFunc *f, const IrParam *p, const void *want, const void *got,
                                 size_t count, double atol, double rtol)
{
    int bad = 0;
    for (size_t e = 0; e < count; e++) {
        double w = as_double(p->dt, want, e), g = as_double(p->dt, got, e);
        bool same = (isnan(w) && isnan(g)) || w == g || fabs(g - w) <= atol + rtol * fabs(w);
        if (!same && bad++ < 5)
            cr_log_error("%s: %s[%zu]: %s %.9g, interpreter %.9g", f->name, p->name, e, who, g, w);
    }
    return bad;
}

/* The kernels whose every operation is exact or exactly rounded on every
 * side (float // and %; max and min; math.ph's fmas; prefix sums in
 * index order; types.ph's fp8 conversions): their tensors must match the interpreter's bit for bit, a
 * zero's sign and a NaN's bits included. */
static inline bool compared_bitwise(const IrFunc *f)
{
    return !strcmp(f->kernel, "fmods") || !strcmp(f->kernel, "zeromax") || !strcmp(f->kernel, "fmas") || !strcmp(f->kernel, "scan") ||
           !strcmp(f->kernel, "fp8cvt");
}

static inline int compare_tensor_bits(const char *who, const IrFunc *f, const IrParam *p, const void *want, const void *got,
                                      size_t count)
{
    int bad = 0;
    size_t bytes = elem_bytes(p->dt);
    for (size_t e = 0; e < count; e++) {
        uint64_t w = 0, g = 0;
        memcpy(&w, (const char *)want + e * bytes, bytes);
        memcpy(&g, (const char *)got + e * bytes, bytes);
        if (w != g && bad++ < 5)
            cr_log_error("%s: %s[%zu]: %s %a (0x%llx), interpreter %a (0x%llx)", f->name, p->name, e, who,
                         as_double(p->dt, got, e), (unsigned long long)g, as_double(p->dt, want, e), (unsigned long long)w);
    }
    return bad;
}

/* The same, within the tolerances of one kernel's outputs: integers
 * exact; floats apart by the GPU's approximate exp/log/rsqrt and summation
 * order, and for 16-bit results by one rounding; bit for bit for the
 * kernels above. */
static inline int compare_tensor(const char *who, const IrFunc *f, const IrParam *p, const void *want, const void *got, size_t count)
{
    /* i64 past 2^53 is not exact as a double: its bits */
    if (compared_bitwise(f) || p->dt == DT_I64) return compare_tensor_bits(who, f, p, want, got, count);
    double rtol = ir_is_int(p->dt) ? 0 : p->dt == DT_F32 ? 2e-3 : 8e-3, atol = ir_is_int(p->dt) ? 0 : 1e-4;
    return compare_tensor_within(who, f, p, want, got, count, atol, rtol);
}

#endif
