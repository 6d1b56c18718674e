/* host.c: the tutorial's host program. It runs vecadd.ph and softmax.ph
 * through the Phobos runtime (phobos.h) on the GPU, or on the CPU
 * interpreter when PHOBOS_TARGET=interp is set, and checks each result
 * against plain C; any difference fails the program. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <phobos.h>

/* Every runtime call returns a status; on failure ph_last_error() says why. */
#define CHECK(call) do { ph_status s_ = (call); if (s_ != PH_OK) { \
    fprintf(stderr, "%s: %s: %s\n", #call, ph_status_name(s_), ph_last_error()); exit(1); } } while (0)

/* vecadd's grid: one block per BLOCK elements. The runtime calls it for
 * each config it may launch, with that config's meta-parameters; `user` is
 * the pointer given to ph_launch, here the vector's length. */
static void vecadd_grid(const ph_meta *meta, void *user, unsigned grid[3])
{
    long n = *(const long *)user;
    long block = (long)ph_meta_get(meta, "BLOCK", 1);
    grid[0] = (unsigned)((n + block - 1) / block);
}

static int run_vecadd(ph_module *module, long n)
{
    ph_kernel *vecadd;
    CHECK(ph_kernel_get(module, "vecadd", &vecadd));

    size_t bytes = (size_t)n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    for (long i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)(n - i);
    }
    ph_devptr dx, dy, dz;
    CHECK(ph_malloc(&dx, bytes));
    CHECK(ph_malloc(&dy, bytes));
    CHECK(ph_malloc(&dz, bytes));
    CHECK(ph_memcpy_htod(dx, x, bytes));
    CHECK(ph_memcpy_htod(dy, y, bytes));

    ph_arg args[] = {ph_tensor1(dx, n), ph_tensor1(dy, n), ph_tensor1(dz, n)};
    CHECK(ph_launch(vecadd, vecadd_grid, &n, args, 3));
    CHECK(ph_synchronize());
    CHECK(ph_memcpy_dtoh(z, dz, bytes));

    long wrong = 0;
    for (long i = 0; i < n; i++) wrong += z[i] != x[i] + y[i];
    printf("vecadd: %ld elements, %ld wrong (%s)\n", n, wrong, ph_kernel_last_config(vecadd));

    /* The runtime checks each launch against the kernel's signature: X and
     * Z share the dimension N, so different lengths are refused. */
    ph_arg mismatched[] = {ph_tensor1(dx, n), ph_tensor1(dy, n), ph_tensor1(dz, n - 1)};
    ph_status s = ph_launch(vecadd, vecadd_grid, &n, mismatched, 3);
    printf("a launch with Z one shorter: %s: %s\n", ph_status_name(s), ph_last_error());
    if (s != PH_ERR_ARGS) wrong++;

    ph_free(dx);
    ph_free(dy);
    ph_free(dz);
    free(x);
    free(y);
    free(z);
    return wrong == 0;
}

/* softmax's grid: one block per BM rows; `user` points at the row count. */
static void softmax_grid(const ph_meta *meta, void *user, unsigned grid[3])
{
    long rows = *(const long *)user;
    long bm = (long)ph_meta_get(meta, "BM", 1);
    grid[0] = (unsigned)((rows + bm - 1) / bm);
}

/* The softmax of each row, in double precision. */
static void softmax_reference(const float *x, double *y, long rows, long cols)
{
    for (long r = 0; r < rows; r++) {
        const float *in = x + r * cols;
        double *out = y + r * cols, max = -INFINITY, sum = 0;
        for (long c = 0; c < cols; c++) max = fmax(max, in[c]);
        for (long c = 0; c < cols; c++) sum += out[c] = exp(in[c] - max);
        for (long c = 0; c < cols; c++) out[c] /= sum;
    }
}

static int run_softmax(ph_module *module, long rows, long cols)
{
    ph_kernel *softmax;
    CHECK(ph_kernel_get(module, "softmax", &softmax));

    size_t count = (size_t)(rows * cols), bytes = count * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    double *want = malloc(count * sizeof(double));
    for (size_t i = 0; i < count; i++) x[i] = (float)(i * 7919 % 1000) / 100.0f - 5.0f;
    softmax_reference(x, want, rows, cols);

    ph_devptr dx, dy;
    CHECK(ph_malloc(&dx, bytes));
    CHECK(ph_malloc(&dy, bytes));
    CHECK(ph_memcpy_htod(dx, x, bytes));
    ph_arg args[] = {ph_tensor2(dx, rows, cols), ph_tensor2(dy, rows, cols)};
    CHECK(ph_launch(softmax, softmax_grid, &rows, args, 2));
    CHECK(ph_synchronize());
    CHECK(ph_memcpy_dtoh(y, dy, bytes));

    long wrong = 0;
    for (size_t i = 0; i < count; i++) wrong += !(fabs(y[i] - want[i]) <= 1e-4 * want[i]);
    printf("softmax: %ld x %ld, %ld wrong (%s)\n", rows, cols, wrong, ph_kernel_last_config(softmax));

    ph_free(dx);
    ph_free(dy);
    free(x);
    free(y);
    free(want);
    return wrong == 0;
}

int main(void)
{
    /* GPU 0, or the CPU interpreter when PHOBOS_TARGET=interp is set. */
    if (ph_init(0) != PH_OK) {
        fprintf(stderr, "%s\n(PHOBOS_TARGET=interp runs the kernels on the CPU interpreter)\n", ph_last_error());
        return 1;
    }
    printf("running on %s\n", ph_device_name());
    ph_module *vecadd_ph, *softmax_ph;
    CHECK(ph_module_load_file("vecadd.ph", &vecadd_ph));
    CHECK(ph_module_load_file("softmax.ph", &softmax_ph));

    int ok = run_vecadd(vecadd_ph, 100000);
    ok &= run_softmax(softmax_ph, 100, 1000);

    ph_module_free(vecadd_ph);
    ph_module_free(softmax_ph);
    ph_shutdown();
    puts(ok ? "every result matches the C reference" : "WRONG RESULTS");
    return ok ? 0 : 1;
}
