/* matmul_check.c: C = A @ B with f16 inputs and f32 output, against a
 * double reference from the same f16 values, for every config of the
 * kernel, at sizes that are not multiples of any block. */
#include "host.h"

static void reference(const uint16_t *a, const uint16_t *b, double *c, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t p = 0; p < k; p++)
                sum += (double)ph_f16_to_f32(a[i * k + p]) * ph_f16_to_f32(b[p * n + j]);
            c[i * n + j] = sum;
        }
}

/* f32 accumulation of K products of magnitude about 1/4: a few f32 ulps
 * of the partial sums, far below an f16 rounding (about 5e-4 relative). */
#define ATOL 1e-4
#define RTOL 1e-4

static bool check_config(const IrFunc *f, int64_t m, int64_t n, int64_t k, HostRng *r)
{
    if (!host_signature(f, "f16:2 f16:2 f32:2")) return false;
    int64_t bm = host_meta(f, "BM"), bn = host_meta(f, "BN");
    if (bm <= 0 || bn <= 0) {
        fprintf(stderr, "%s: needs meta-parameters BM and BN for its grid\n", f->name);
        return false;
    }
    uint16_t *a = host_alloc(DT_F16, (size_t)(m * k)), *b = host_alloc(DT_F16, (size_t)(k * n));
    float *c = host_alloc(DT_F32, (size_t)(m * n));
    double *ref = xmalloc((size_t)(m * n) * sizeof *ref);
    host_fill_normal(DT_F16, a, (size_t)(m * k), 0.0, 0.5, r);
    host_fill_normal(DT_F16, b, (size_t)(k * n), 0.0, 0.5, r);
    host_poison(DT_F32, c, (size_t)(m * n));
    reference(a, b, ref, m, n, k);
    IrArg args[] = {host_tensor2(a, m, k), host_tensor2(b, k, n), host_tensor2(c, m, n)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 3, host_cdiv(m, bm), host_cdiv(n, bn), 1)) {
        char name[128];
        snprintf(name, sizeof name, "%s M %lld N %lld K %lld c", f->name, (long long)m,
                 (long long)n, (long long)k);
        ok = host_check(name, DT_F32, c, ref, (size_t)(m * n), ATOL, RTOL);
    }
    free(a);
    free(b);
    free(c);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "matmul.ph", &status);
    if (!m) return status;
    static const int64_t shapes[][3] = {{100, 72, 200}, {64, 32, 32}, {1, 1, 1}};
    int nshapes = sizeof shapes / sizeof *shapes, failed = 0, runs = 0;
    HostRng r;
    host_rng_seed(&r, 3);
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i]->kernel, "matmul")) continue;
        for (int s = 0; s < nshapes; s++, runs++)
            failed += !check_config(m->funcs[i], shapes[s][0], shapes[s][1], shapes[s][2], &r);
    }
    if (!runs) fprintf(stderr, "matmul: no config of kernel matmul\n");
    printf("matmul: %d of %d runs ok (atol %g, rtol %g)\n", runs - failed, runs, ATOL, RTOL);
    return host_finish(m, failed || !runs);
}
