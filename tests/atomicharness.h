/* atomicharness.h: the inputs of tests/gpu/atomics.ph's kernels and a
 * plain C reference of what they add, shared by test_cpusim (the CPU
 * executor) and test_gpu_ops (the GPU). The inputs are small integers, so
 * the sums are exact in whatever order the blocks add them: every element,
 * f32 and i32 alike, must match the reference exactly. */
#ifndef PHC_ATOMICHARNESS_H
#define PHC_ATOMICHARNESS_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "ir/ir.h"

#define ATOMICS "tests/gpu/atomics.ph"

enum { AT_MAX_PARAMS = 4 };

/* One config's run: the arguments (tensors hold the inputs), the grid, and
 * the tensors the reference computes from them. */
typedef struct {
    int n;
    IrArg args[AT_MAX_PARAMS];
    size_t count[AT_MAX_PARAMS], bytes[AT_MAX_PARAMS];
    void *want[AT_MAX_PARAMS];
    unsigned grid[3];
} AtomicRun;

static int64_t at_meta(const IrFunc *f, const char *name)
{
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[i].name, name)) return f->meta[i].value;
    cr_assert_fail("%s has no meta-parameter %s", f->name, name);
    return 0;
}

/* A small integer, different for each tensor (salt) and element. */
static int at_value(int salt, size_t i, int range) { return (int)((i * 37 + (size_t)salt * 11) % (size_t)(2 * range + 1)) - range; }

/* Argument i: a d0 x d1 tensor (d1 0: rank 1) of at_value's integers in
 * -range .. range, and its reference copy. */
static void at_tensor(AtomicRun *r, int i, DType dt, int64_t d0, int64_t d1, int range)
{
    r->count[i] = (size_t)(d0 * (d1 ? d1 : 1));
    r->bytes[i] = r->count[i] * (dt == DT_F16 ? 2 : 4);
    void *p = malloc(r->bytes[i]);
    for (size_t e = 0; e < r->count[i]; e++) {
        int v = at_value(i + 1, e, range);
        if (dt == DT_F16) ((uint16_t *)p)[e] = ph_f32_to_f16((float)v);
        else if (dt == DT_F32) ((float *)p)[e] = (float)v;
        else ((int32_t *)p)[e] = v;
    }
    r->args[i] = (IrArg){.data = p, .dims = {d0, d1}};
    r->want[i] = malloc(r->bytes[i]);
    memcpy(r->want[i], p, r->bytes[i]);
}

static void at_free(AtomicRun *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->args[i].data);
        free(r->want[i]);
    }
}

/* Element (row, col) of a rows x cols tensor, 0 outside it. */
static float at_f32(const void *t, int64_t rows, int64_t cols, int64_t row, int64_t col)
{
    return row >= 0 && row < rows && col >= 0 && col < cols ? ((const float *)t)[row * cols + col] : 0.0f;
}

static int32_t at_i32(const void *t, int64_t rows, int64_t cols, int64_t row, int64_t col)
{
    return row >= 0 && row < rows && col >= 0 && col < cols ? ((const int32_t *)t)[row * cols + col] : 0;
}

static float at_f16(const void *t, int64_t rows, int64_t cols, int64_t row, int64_t col)
{
    return row >= 0 && row < rows && col >= 0 && col < cols ? ph_f16_to_f32(((const uint16_t *)t)[row * cols + col]) : 0.0f;
}

/* Adds v at (row, col) where that lies inside the tensor. */
static void at_add_f32(void *t, int64_t rows, int64_t cols, int64_t row, int64_t col, float v)
{
    if (row >= 0 && row < rows && col >= 0 && col < cols) ((float *)t)[row * cols + col] += v;
}

static void at_add_i32(void *t, int64_t rows, int64_t cols, int64_t row, int64_t col, int32_t v)
{
    if (row >= 0 && row < rows && col >= 0 && col < cols) ((int32_t *)t)[row * cols + col] += v;
}

/* atomic2d(A, B, X, Y), [M, N] each, M 24 and N 50 on a 4 x 3 grid; N 52
 * where the windows start at multiples of 4 (C0 4), so that their rows'
 * chunks of four floats are aligned. */
static void at_atomic2d(const IrFunc *f, AtomicRun *r)
{
    enum { M = 24 };
    int64_t c0off = at_meta(f, "C0"), N = c0off % 4 ? 50 : 52;
    at_tensor(r, 0, DT_F32, M, N, 8);
    at_tensor(r, 1, DT_I32, M, N, 8);
    at_tensor(r, 2, DT_F32, M, N, 20);
    at_tensor(r, 3, DT_I32, M, N, 20);
    r->n = 4;
    r->grid[0] = 4, r->grid[1] = 3, r->grid[2] = 1;
    int64_t bm = at_meta(f, "BM"), bn = at_meta(f, "BN");
    const void *a = r->args[0].data, *b = r->args[1].data;
    for (int64_t by = 0; by < r->grid[1]; by++)
        for (int64_t bx = 0; bx < r->grid[0]; bx++) {
            int64_t r0 = by * (bm / 2) - 3, c0 = bx * (bn / 2) - c0off;
            for (int64_t i = 0; i < bm; i++) {
                float rowsum = 0;
                for (int64_t j = 0; j < bn; j++) {
                    float av = at_f32(a, M, N, r0 + i, c0 + j);
                    rowsum += av;
                    at_add_f32(r->want[2], M, N, r0 + i, c0 + j, av + (float)bx);
                    at_add_i32(r->want[3], M, N, r0 + i, c0 + j, at_i32(b, M, N, r0 + i, c0 + j) * 3 + (int32_t)i);
                }
                at_add_f32(r->want[2], M, N, r0 + i, 0, rowsum);
            }
            for (int64_t j = 0; j < bn; j++) {
                int32_t colsum = 0;
                for (int64_t i = 0; i < bm; i++) colsum += at_i32(b, M, N, r0 + i, c0 + j);
                at_add_i32(r->want[3], M, N, 0, c0 + j, colsum);
                at_add_i32(r->want[3], M, N, r0 + 1, c0 + j, 1);
            }
        }
}

/* atomic1d(A, X, Y), [L] each, L 200 on a 5 x 2 grid. */
static void at_atomic1d(const IrFunc *f, AtomicRun *r)
{
    enum { L = 200 };
    at_tensor(r, 0, DT_F32, L, 0, 8);
    at_tensor(r, 1, DT_F32, L, 0, 20);
    at_tensor(r, 2, DT_I32, L, 0, 20);
    r->n = 3;
    r->grid[0] = 5, r->grid[1] = 2, r->grid[2] = 1;
    int64_t block = at_meta(f, "BLOCK");
    for (int64_t by = 0; by < r->grid[1]; by++)
        for (int64_t bx = 0; bx < r->grid[0]; bx++) {
            int64_t i0 = (bx + r->grid[0] * by) * (block / 3) - 10;
            for (int64_t j = 0; j < block; j++) {
                float av = at_f32(r->args[0].data, 1, L, 0, i0 + j);
                at_add_f32(r->want[1], 1, L, 0, i0 + j, av * 2.0f);
                at_add_i32(r->want[2], 1, L, 0, i0 + j, (int32_t)av + (int32_t)by);
            }
            at_add_f32(r->want[1], 1, L, 0, 0, 1.0f);
            at_add_i32(r->want[2], 1, L, 0, by, 1);
        }
}

/* The reference of a dot kernel's adds: on a 3 x 2 grid, block (bx, by)
 * adds P[r0 .. r0 + rows, 16 bx .. +16] V[16 bx .. +16, 0 .. cols] into
 * X's window at (r0, c0), for r0 from -8 below m_len in steps of step; P is
 * M x K, V K x N and X M x N (inputs from at_tensor). */
static void at_dot_adds(AtomicRun *r, int64_t M, int64_t m_len, int64_t K, int64_t N, int64_t rows, int64_t cols, int64_t step, int64_t c0)
{
    at_tensor(r, 0, DT_F16, M, K, 3);
    at_tensor(r, 1, DT_F16, K, N, 3);
    at_tensor(r, 2, DT_F32, M, N, 20);
    r->args[3] = (IrArg){.i = m_len};
    r->n = 4;
    r->grid[0] = 3, r->grid[1] = 2, r->grid[2] = 1;
    const void *p = r->args[0].data, *v = r->args[1].data;
    for (int64_t by = 0; by < r->grid[1]; by++)
        for (int64_t bx = 0; bx < r->grid[0]; bx++)
            for (int64_t r0 = -8; r0 < m_len; r0 += step)
                for (int64_t i = 0; i < rows; i++)
                    for (int64_t j = 0; j < cols; j++) {
                        float dot = 0;
                        for (int64_t k = bx * 16; k < bx * 16 + 16; k++) dot += at_f16(p, M, K, r0 + i, k) * at_f16(v, K, N, k, j);
                        at_add_f32(r->want[2], M, N, r0 + i, c0 + j, dot);
                    }
}

/* atomicdot(P [M, K] f16, V [K, 16] f16, X [M, 16], m_len), M 40 and K 43:
 * windows of BM rows BM / 2 apart. */
static void at_atomicdot(const IrFunc *f, AtomicRun *r)
{
    int64_t bm = at_meta(f, "BM");
    at_dot_adds(r, 40, 40, 43, 16, bm, 16, bm / 2, 0);
}

/* atomicdot_wide(P [M, K] f16, V [K, N] f16, X [M, N], m_len), M 100, K 43
 * and N 68 (64 at C0 0: windows of whole rows): 64 x 64 windows 32 rows
 * apart from column C0, the first starting before the tensor and the last
 * past its last row (m_len 140: r0 -8 to 120). */
static void at_atomicdot_wide(const IrFunc *f, AtomicRun *r)
{
    int64_t c0 = at_meta(f, "C0");
    at_dot_adds(r, 100, 140, 43, c0 ? 68 : 64, 64, 64, 32, c0);
}

/* atomicread(P, V, X, Y), [16, 16] each, one block. */
static void at_atomicread(AtomicRun *r)
{
    enum { D = 16 };
    at_tensor(r, 0, DT_F16, D, D, 3);
    at_tensor(r, 1, DT_F16, D, D, 3);
    at_tensor(r, 2, DT_F32, D, D, 20);
    at_tensor(r, 3, DT_F32, D, D, 20);
    r->n = 4;
    r->grid[0] = r->grid[1] = r->grid[2] = 1;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            float dot = 0;
            for (int k = 0; k < D; k++) dot += at_f16(r->args[0].data, D, D, i, k) * at_f16(r->args[1].data, D, D, k, j);
            ((float *)r->want[3])[i * D + j] = dot + ((const float *)r->args[2].data)[i * D + j];
            ((float *)r->want[2])[i * D + j] += 1.0f;
        }
}

/* The inputs and the reference results of config f. */
static void atomic_run(const IrFunc *f, AtomicRun *r)
{
    memset(r, 0, sizeof *r);
    if (!strcmp(f->kernel, "atomic2d")) at_atomic2d(f, r);
    else if (!strcmp(f->kernel, "atomic1d")) at_atomic1d(f, r);
    else if (!strcmp(f->kernel, "atomicdot")) at_atomicdot(f, r);
    else if (!strcmp(f->kernel, "atomicdot_wide")) at_atomicdot_wide(f, r);
    else if (!strcmp(f->kernel, "atomicread")) at_atomicread(r);
    else cr_assert_fail("no reference for kernel %s", f->kernel);
    cr_assert_eq(r->n, f->nparams, "%s: the harness and the kernel disagree on its parameters", f->name);
}

/* Compares tensor i of a run, got against the reference, exactly (an
 * input must come back as it was); logs the first differences under who
 * and returns how many elements differ. */
static int atomic_compare(const char *who, const IrFunc *f, const AtomicRun *r, int i, const void *got)
{
    int bad = 0;
    const IrParam *p = &f->params[i];
    if (p->dt == DT_F16) {
        if (!memcmp(got, r->want[i], r->bytes[i])) return 0;
        cr_log_error("%s: %s, an input, changed", f->name, p->name);
        return 1;
    }
    for (size_t e = 0; e < r->count[i]; e++) {
        double g = p->dt == DT_I32 ? ((const int32_t *)got)[e] : ((const float *)got)[e];
        double w = p->dt == DT_I32 ? ((const int32_t *)r->want[i])[e] : ((const float *)r->want[i])[e];
        if (g != w && bad++ < 5) cr_log_error("%s: %s[%zu]: %s %.9g, reference %.9g", f->name, p->name, e, who, g, w);
    }
    return bad;
}

#endif
