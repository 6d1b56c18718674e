/* layernorm_check.c: row layer normalization of bf16 input with f32
 * weight and bias into bf16, against a double reference from the same
 * bf16 values, at row counts that are not multiples of the block. */
#include "host.h"

/* The bf16 output rounds to 8 bits: half an ulp is 2^-9 relative. */
#define ATOL 1e-3
#define RTOL 1e-2
#define EPS 1e-5f

static bool fits_n(const IrFunc *f, const void *ctx)
{
    return host_meta(f, "N") == *(const int64_t *)ctx && host_meta(f, "BM") > 0;
}

static void reference(const uint16_t *x, const float *w, const float *b, double *y, int64_t m, int64_t n)
{
    for (int64_t i = 0; i < m; i++) {
        const uint16_t *row = x + i * n;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < n; j++) mean += ph_bf16_to_f32(row[j]);
        mean /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            double c = ph_bf16_to_f32(row[j]) - mean;
            var += c * c;
        }
        var /= (double)n;
        double rstd = 1.0 / sqrt(var + (double)EPS);
        for (int64_t j = 0; j < n; j++)
            y[i * n + j] = (ph_bf16_to_f32(row[j]) - mean) * rstd * w[j] + b[j];
    }
}

static bool check_shape(const IrModule *mod, int64_t m, int64_t n, HostRng *r)
{
    const IrFunc *f = host_pick(mod, "layernorm", fits_n, &n);
    if (!f || !host_signature(f, "bf16:2 f32:1 f32:1 bf16:2 f32")) return false;
    size_t total = (size_t)(m * n);
    uint16_t *x = host_alloc(DT_BF16, total), *y = host_alloc(DT_BF16, total);
    float *w = host_alloc(DT_F32, (size_t)n), *b = host_alloc(DT_F32, (size_t)n);
    double *ref = xmalloc(total * sizeof *ref);
    host_fill_normal(DT_BF16, x, total, 1.5, 2.0, r);
    host_fill_normal(DT_F32, w, (size_t)n, 1.0, 0.2, r);
    host_fill_normal(DT_F32, b, (size_t)n, 0.0, 0.5, r);
    host_poison(DT_BF16, y, total);
    reference(x, w, b, ref, m, n);
    IrArg args[] = {host_tensor2(x, m, n), host_tensor1(w, n), host_tensor1(b, n),
                    host_tensor2(y, m, n), host_f32(EPS)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 5, host_cdiv(m, host_meta(f, "BM")), 1, 1)) {
        char name[96];
        snprintf(name, sizeof name, "%s M %lld N %lld y", f->name, (long long)m, (long long)n);
        ok = host_check(name, DT_BF16, y, ref, total, ATOL, RTOL);
    }
    free(x);
    free(y);
    free(w);
    free(b);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "layernorm.ph", &status);
    if (!m) return status;
    static const int64_t shapes[][2] = {{50, 256}, {3, 256}, {1000, 256}};
    int nshapes = sizeof shapes / sizeof *shapes, failed = 0;
    HostRng r;
    host_rng_seed(&r, 4);
    for (int i = 0; i < nshapes; i++) failed += !check_shape(m, shapes[i][0], shapes[i][1], &r);
    printf("layernorm: %d of %d shapes ok (atol %g, rtol %g)\n", nshapes - failed, nshapes, ATOL, RTOL);
    return host_finish(m, failed);
}
