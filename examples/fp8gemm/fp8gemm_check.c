/* fp8gemm_check.c: examples/fp8gemm against plain C, every config of both
 * kernels, at sizes that are no multiples of any block. quantize_rows must
 * give the bits C gives (half.h's e4m3 rounding of x / scale, scale =
 * the row's largest magnitude / 448, all f32 as IEEE rounds it); fp8gemm,
 * on A from it and B quantized here with one scale, the double-precision
 * sum of the e4m3 products, scaled, within the tolerances below. */
#include "host.h"

/* Row i of x (k wide) quantized as quantize_rows does it. */
static void quantize_row(const float *x, int64_t k, uint8_t *q, float *scale)
{
    float amax = 1.0e-30f;
    for (int64_t p = 0; p < k; p++) amax = fabsf(x[p]) > amax ? fabsf(x[p]) : amax;
    *scale = amax / 448.0f;
    for (int64_t p = 0; p < k; p++) q[p] = ph_f32_to_e4m3(x[p] / *scale);
}

static bool check_quantize(const IrFunc *f, int64_t m, int64_t k, HostRng *r)
{
    if (!host_signature(f, "f32:2 f8e4m3:2 f32:1")) return false;
    int64_t bm = host_meta(f, "BM");
    float *x = host_alloc(DT_F32, (size_t)(m * k)), *s = host_alloc(DT_F32, (size_t)m);
    uint8_t *q = host_alloc(DT_F8E4M3, (size_t)(m * k)), *want_q = host_alloc(DT_F8E4M3, (size_t)(m * k));
    double *want_s = xmalloc((size_t)m * sizeof *want_s), *want_qv = xmalloc((size_t)(m * k) * sizeof *want_qv);
    for (int64_t i = 0; i < m * k; i++) x[i] = (float)host_normal(r, 0, 1 + (double)(i / k % 7));   /* rows of different scales */
    for (int64_t i = 0; i < m; i++) {
        float sc;
        quantize_row(x + i * k, k, want_q + i * k, &sc);
        want_s[i] = sc;
    }
    for (int64_t i = 0; i < m * k; i++) want_qv[i] = ph_e4m3_to_f32(want_q[i]);
    host_poison(DT_F8E4M3, q, (size_t)(m * k));
    host_poison(DT_F32, s, (size_t)m);
    IrArg args[] = {host_tensor2(x, m, k), host_tensor2(q, m, k), host_tensor1(s, m)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 3, host_cdiv(m, bm), 1, 1)) {
        char name[128];
        snprintf(name, sizeof name, "%s M %lld K %lld", f->name, (long long)m, (long long)k);
        ok = host_check(name, DT_F8E4M3, q, want_qv, (size_t)(m * k), 0, 0) && host_check(name, DT_F32, s, want_s, (size_t)m, 0, 0);
    }
    free(x); free(s); free(q); free(want_q); free(want_s); free(want_qv);
    return ok;
}

/* The products of e4m3 values are exact in f32; the sums are rounded in
 * f32 by the tensor cores in their own order, whose fp8 accumulation NVIDIA
 * documents only as "f32"; so an absolute tolerance of a few thousandths
 * of the terms' typical size (|a| |b| sa sb, about 1 here: C is about
 * sqrt(K)), and the f16 store's rounding, 2^-11 relative. */
#define ATOL 2e-2
#define RTOL 2e-3

static bool check_gemm(const IrFunc *f, int64_t m, int64_t n, int64_t k, HostRng *r)
{
    if (!host_signature(f, "f8e4m3:2 f8e4m3:2 f32:1 f32 f16:2")) return false;
    int64_t bm = host_meta(f, "BM"), bn = host_meta(f, "BN");
    uint8_t *a = host_alloc(DT_F8E4M3, (size_t)(m * k)), *b = host_alloc(DT_F8E4M3, (size_t)(k * n));
    float *sa = host_alloc(DT_F32, (size_t)m), *x = host_alloc(DT_F32, (size_t)(m * k)), *y = host_alloc(DT_F32, (size_t)(k * n));
    uint16_t *c = host_alloc(DT_F16, (size_t)(m * n));
    double *ref = xmalloc((size_t)(m * n) * sizeof *ref);
    for (int64_t i = 0; i < m * k; i++) x[i] = (float)host_normal(r, 0, 1);
    for (int64_t i = 0; i < m; i++) quantize_row(x + i * k, k, a + i * k, &sa[i]);
    float sb;
    for (int64_t i = 0; i < k * n; i++) y[i] = (float)host_normal(r, 0, 2);
    quantize_row(y, k * n, b, &sb);   /* the whole tensor as one row: one scale */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t p = 0; p < k; p++) sum += (double)ph_e4m3_to_f32(a[i * k + p]) * ph_e4m3_to_f32(b[p * n + j]);
            ref[i * n + j] = sum * sa[i] * sb;
        }
    host_poison(DT_F16, c, (size_t)(m * n));
    IrArg args[] = {host_tensor2(a, m, k), host_tensor2(b, k, n), host_tensor1(sa, m), {.f = sb}, host_tensor2(c, m, n)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 5, host_cdiv(m, bm), host_cdiv(n, bn), 1)) {
        char name[128];
        snprintf(name, sizeof name, "%s M %lld N %lld K %lld c", f->name, (long long)m, (long long)n, (long long)k);
        ok = host_check(name, DT_F16, c, ref, (size_t)(m * n), ATOL, RTOL);
    }
    free(a); free(b); free(sa); free(x); free(y); free(c); free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "fp8gemm.ph", &status);
    if (!m) return status;
    static const int64_t shapes[][3] = {{100, 72, 200}, {64, 64, 64}, {1, 1, 1}};
    int nshapes = sizeof shapes / sizeof *shapes, failed = 0, runs = 0;
    HostRng r;
    host_rng_seed(&r, 8);
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        bool gemm = !strcmp(f->kernel, "fp8gemm");
        if (!gemm && strcmp(f->kernel, "quantize_rows")) continue;
        for (int s = 0; s < nshapes; s++, runs++)
            failed += gemm ? !check_gemm(f, shapes[s][0], shapes[s][1], shapes[s][2], &r)
                           : !check_quantize(f, shapes[s][0], shapes[s][2], &r);
    }
    if (!runs) fprintf(stderr, "fp8gemm: no config of kernels fp8gemm and quantize_rows\n");
    printf("fp8gemm: %d of %d runs ok (GEMM atol %g, rtol %g; quantization exact)\n", runs - failed, runs, ATOL, RTOL);
    return host_finish(m, failed || !runs);
}
