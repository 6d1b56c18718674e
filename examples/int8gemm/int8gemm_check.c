/* int8gemm_check.c: the scaled int8 GEMM against a plain C reference (the
 * i8 products summed exactly in 64 bits, scaled in double), for every
 * config of the kernel, at sizes that are not multiples of any block and
 * with i8 values over their whole range (-128 included). */
#include "host.h"

static void reference(const int8_t *a, const int8_t *b, const float *sa, const float *sb, double *c, int64_t m, int64_t n,
                      int64_t k)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t sum = 0;
            for (int64_t p = 0; p < k; p++) sum += (int64_t)a[i * k + p] * b[p * n + j];
            c[i * n + j] = (double)sa[i] * sb[j] * (double)sum;
        }
}

static void fill_i8(int8_t *p, size_t n, HostRng *r)
{
    for (size_t i = 0; i < n; i++) p[i] = (int8_t)(host_rng_next(r) >> 56);
}

/* The i32 sums are exact and below 2^24, so ph.f32(acc) is too; the two
 * f32 products and the f16 store round a few times by 2^-24 and once by
 * 2^-11 relative. */
#define ATOL 1e-6
#define RTOL 1e-3

static bool check_config(const IrFunc *f, int64_t m, int64_t n, int64_t k, HostRng *r)
{
    if (!host_signature(f, "i8:2 i8:2 f32:1 f32:1 f16:2")) return false;
    int64_t bm = host_meta(f, "BM"), bn = host_meta(f, "BN");
    if (bm <= 0 || bn <= 0) {
        fprintf(stderr, "%s: needs meta-parameters BM and BN for its grid\n", f->name);
        return false;
    }
    int8_t *a = host_alloc(DT_I8, (size_t)(m * k)), *b = host_alloc(DT_I8, (size_t)(k * n));
    float *sa = host_alloc(DT_F32, (size_t)m), *sb = host_alloc(DT_F32, (size_t)n);
    uint16_t *c = host_alloc(DT_F16, (size_t)(m * n));
    double *ref = xmalloc((size_t)(m * n) * sizeof *ref);
    fill_i8(a, (size_t)(m * k), r);
    fill_i8(b, (size_t)(k * n), r);
    for (int64_t i = 0; i < m; i++) sa[i] = (float)(host_uniform(r) * 1e-3);
    for (int64_t j = 0; j < n; j++) sb[j] = (float)(host_uniform(r) * 1e-2);
    host_poison(DT_F16, c, (size_t)(m * n));
    reference(a, b, sa, sb, ref, m, n, k);
    IrArg args[] = {host_tensor2(a, m, k), host_tensor2(b, k, n), host_tensor1(sa, m), host_tensor1(sb, n), host_tensor2(c, m, n)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 5, host_cdiv(m, bm), host_cdiv(n, bn), 1)) {
        char name[128];
        snprintf(name, sizeof name, "%s M %lld N %lld K %lld c", f->name, (long long)m, (long long)n, (long long)k);
        ok = host_check(name, DT_F16, c, ref, (size_t)(m * n), ATOL, RTOL);
    }
    free(a);
    free(b);
    free(sa);
    free(sb);
    free(c);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "int8gemm.ph", &status);
    if (!m) return status;
    static const int64_t shapes[][3] = {{100, 72, 200}, {64, 64, 64}, {1, 1, 1}};
    int nshapes = sizeof shapes / sizeof *shapes, failed = 0, runs = 0;
    HostRng r;
    host_rng_seed(&r, 8);
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i]->kernel, "int8gemm")) continue;
        for (int s = 0; s < nshapes; s++, runs++)
            failed += !check_config(m->funcs[i], shapes[s][0], shapes[s][1], shapes[s][2], &r);
    }
    if (!runs) fprintf(stderr, "int8gemm: no config of kernel int8gemm\n");
    printf("int8gemm: %d of %d runs ok (atol %g, rtol %g)\n", runs - failed, runs, ATOL, RTOL);
    return host_finish(m, failed || !runs);
}
