/* softmax_check.c: row softmax of f16 input into f32, against a double
 * reference from the same f16 values, at sizes whose row count is not a
 * multiple of the block; each shape runs the config that specializes N. */
#include "host.h"

static bool fits_n(const IrFunc *f, const void *ctx)
{
    return host_meta(f, "N") == *(const int64_t *)ctx && host_meta(f, "BM") > 0;
}

static void reference(const uint16_t *x, double *y, int64_t m, int64_t n)
{
    for (int64_t i = 0; i < m; i++) {
        const uint16_t *row = x + i * n;
        double *out = y + i * n, mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) mx = fmax(mx, ph_f16_to_f32(row[j]));
        for (int64_t j = 0; j < n; j++) sum += (out[j] = exp(ph_f16_to_f32(row[j]) - mx));
        for (int64_t j = 0; j < n; j++) out[j] /= sum;
    }
}

static bool check_shape(const IrModule *m, int64_t rows, int64_t cols, HostRng *r)
{
    const IrFunc *f = host_pick(m, "softmax", fits_n, &cols);
    if (!f || !host_signature(f, "f16:2 f32:2")) return false;
    size_t total = (size_t)(rows * cols);
    uint16_t *x = host_alloc(DT_F16, total);
    float *y = host_alloc(DT_F32, total);
    double *ref = xmalloc(total * sizeof *ref);
    host_fill_normal(DT_F16, x, total, 0.0, 2.0, r);
    host_poison(DT_F32, y, total);
    reference(x, ref, rows, cols);
    IrArg args[] = {host_tensor2(x, rows, cols), host_tensor2(y, rows, cols)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 2, host_cdiv(rows, host_meta(f, "BM")), 1, 1)) {
        char name[96];
        snprintf(name, sizeof name, "%s M %lld N %lld y", f->name, (long long)rows, (long long)cols);
        ok = host_check(name, DT_F32, y, ref, total, 1e-6, 1e-4);
    }
    free(x);
    free(y);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "softmax.ph", &status);
    if (!m) return status;
    static const int64_t shapes[][2] = {{1000, 256}, {37, 128}, {1, 128}};
    int nshapes = sizeof shapes / sizeof *shapes, failed = 0;
    HostRng r;
    host_rng_seed(&r, 2);
    for (int i = 0; i < nshapes; i++) failed += !check_shape(m, shapes[i][0], shapes[i][1], &r);
    printf("softmax: %d of %d shapes ok (atol 1e-6, rtol 1e-4)\n", nshapes - failed, nshapes);
    return host_finish(m, failed);
}
