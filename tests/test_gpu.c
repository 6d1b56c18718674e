/* test_gpu.c: the runtime on a real GPU: autotuned launches compute the
 * right numbers, a config over 48 KB of shared memory runs with dynamic
 * shared memory, a config the device refuses leaves the others running,
 * and every guard (grid over the device's limits, a module the driver
 * refuses, a launch after shutdown) gives a status and a message
 * and launches nothing; a launch on a host's stream is ordered with the
 * stream's work, and two GPUs run from two threads. Skips without a
 * driver, unless PHOBOS_REQUIRE_GPU is set (make gpucheck), where a
 * missing GPU is a failure. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>

#include "base/half.h"
#include "phobos.h"
#include "testutil.h"

static void need_gpu(void)
{
    if (ph_init(0) == PH_OK) return;
    if (getenv("PHOBOS_REQUIRE_GPU")) cr_assert_fail("no GPU: %s", ph_last_error());
    cr_skip_test("no GPU: %s", ph_last_error());
}

static const char *saxpy_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "def saxpy(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n";

typedef struct { int64_t n; } Len;

static void saxpy_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    int64_t block = ph_meta_get(meta, "BLOCK", 1), n = ((Len *)user)->n;
    g[0] = (unsigned)((n + block - 1) / block);
}

Test(gpu, autotuned_saxpy_is_right)
{
    need_gpu();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("saxpy.ph", saxpy_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "saxpy", &k), PH_OK);
    Len len = {100003};
    size_t bytes = (size_t)len.n * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    for (int64_t i = 0; i < len.n; i++) { x[i] = (float)(i % 97) * 0.25f; y[i] = (float)(i % 13) - 6.0f; }
    ph_devptr dx, dy, dz;
    cr_assert_eq(ph_malloc(&dx, bytes), PH_OK);
    cr_assert_eq(ph_malloc(&dy, bytes), PH_OK);
    cr_assert_eq(ph_malloc(&dz, bytes), PH_OK);
    ph_memcpy_htod(dx, x, bytes);
    ph_memcpy_htod(dy, y, bytes);
    ph_memset8(dz, 0xff, bytes);   /* NaN poison */
    ph_arg args[4] = {ph_tensor1(dx, len.n), ph_tensor1(dy, len.n), ph_tensor1(dz, len.n), ph_f32(3.0f)};
    cr_assert_eq(ph_launch(k, saxpy_grid, &len, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_synchronize(), PH_OK, "%s", ph_last_error());
    cr_assert_not_null(ph_kernel_last_config(k));
    cr_assert_eq(ph_memcpy_dtoh(z, dz, bytes), PH_OK);
    for (int64_t i = 0; i < len.n; i++)
        cr_assert_float_eq(z[i], 3.0f * x[i] + y[i], 1e-5, "z[%lld] = %g", (long long)i, z[i]);
    ph_free(dx); ph_free(dy); ph_free(dz);
    free(x); free(y); free(z);
    ph_module_free(m);
}

static void huge_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    (void)meta; (void)user;
    g[0] = 1; g[1] = 1u << 20;   /* over the 65535 limit of y */
}

/* The multiprocessors the driver counts, as the device's name says them. */
Test(gpu, the_device_counts_its_multiprocessors)
{
    need_gpu();
    int n = ph_device_multiprocessors(), named = 0;
    const char *sms = strstr(ph_device_name(), ", sm_");
    cr_assert(sms && sscanf(strchr(sms + 1, ',') + 1, "%d SMs", &named) == 1, "%s", ph_device_name());
    cr_assert(n >= 1 && n == named, "%d multiprocessors, %s", n, ph_device_name());
}

Test(gpu, grid_over_the_limits_is_refused)
{
    need_gpu();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("saxpy.ph", saxpy_src, &m), PH_OK);
    ph_kernel_get(m, "saxpy__BLOCK_128", &k);
    ph_devptr d;
    ph_malloc(&d, 4096);
    ph_arg args[4] = {ph_tensor1(d, 1024), ph_tensor1(d, 1024), ph_tensor1(d, 1024), ph_f32(1)};
    cr_assert_eq(ph_launch(k, huge_grid, NULL, args, 4), PH_ERR_GRID);
    cr_assert(strstr(ph_last_error(), "over the device's limits") != NULL, "%s", ph_last_error());
    ph_free(d);
    ph_module_free(m);
}

static void one_block(const ph_meta *meta, void *user, unsigned g[3]) { (void)meta; (void)user; g[0] = 1; }

Test(gpu, module_the_driver_refuses)
{
    need_gpu();
    /* two 256x256 f32 operands need 512 KiB of shared memory: no GPU has it */
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "def big(A: ph.tensor[ph.f32][256, 256], C: ph.tensor[ph.f32][256, 256]):\n"
        "    a: ph.let = A[0:+256, :]\n"
        "    C[0:+256, :] = ph.dot(a, a)\n";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("big.ph", src, &m), PH_OK, "%s", ph_last_error());
    ph_kernel_get(m, "big", &k);
    ph_devptr d;
    ph_malloc(&d, 256 * 256 * 4);
    ph_arg args[2] = {ph_tensor2(d, 256, 256), ph_tensor2(d, 256, 256)};
    ph_status s = ph_launch(k, one_block, NULL, args, 2);
    cr_assert_eq(s, PH_ERR_MODULE, "status %s: %s", ph_status_name(s), ph_last_error());
    cr_assert(strstr(ph_last_error(), "refused") != NULL, "%s", ph_last_error());
    ph_free(d);
    ph_module_free(m);
}

static void transpose_grid(const ph_meta *meta, void *user, unsigned g[3])
{
    g[0] = (unsigned)(*(int64_t *)user / ph_meta_get(meta, "BM", 1));
}

/* Each config is loaded on its own: tr__BM_512 transposes through 256 KiB
 * of dynamic shared memory, more than a block of any GPU may opt in to
 * (the H200: 227 KB), and is refused before it reaches the driver;
 * tr__BM_32 (16 KiB, static) still loads, runs and transposes right.
 * Asked for by name, the refused config says why. */
Test(gpu, a_config_the_driver_refuses_leaves_the_others)
{
    need_gpu();
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "@ph.autotune(BM=[32, 512])\n"
        "def tr(A: ph.tensor[ph.f32][N, 128], C: ph.tensor[ph.f32][128, N]):\n"
        "    i0: ph.let = ph.ctx.block.x * BM\n"
        "    C[:, i0:+BM] = ph.transpose(A[i0:+BM, :])\n";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    int64_t n = 512;
    size_t bytes = (size_t)n * 128 * 4;
    float *a = malloc(bytes), *c = malloc(bytes);
    for (int64_t i = 0; i < n * 128; i++) a[i] = (float)(i % 1009) - 500.0f;
    ph_devptr da, dc;
    cr_assert_eq(ph_malloc(&da, bytes), PH_OK);
    cr_assert_eq(ph_malloc(&dc, bytes), PH_OK);
    ph_memcpy_htod(da, a, bytes);
    ph_memset8(dc, 0xff, bytes);   /* NaN poison */
    ph_arg args[2] = {ph_tensor2(da, n, 128), ph_tensor2(dc, 128, n)};
    cr_assert_eq(ph_launch(k, transpose_grid, &n, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_synchronize(), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "tr__BM_32");
    cr_assert_eq(ph_memcpy_dtoh(c, dc, bytes), PH_OK);
    for (int64_t r = 0; r < 128; r++)
        for (int64_t j = 0; j < n; j++)
            cr_assert_eq(c[r * n + j], a[j * 128 + r], "C[%lld, %lld] = %g", (long long)r, (long long)j, c[r * n + j]);
    ph_kernel *big;
    cr_assert_eq(ph_kernel_get(m, "tr__BM_512", &big), PH_OK);
    ph_status s = ph_launch(big, transpose_grid, &n, args, 2);
    cr_assert_eq(s, PH_ERR_MODULE, "status %s: %s", ph_status_name(s), ph_last_error());
    cr_assert(strstr(ph_last_error(), "tr__BM_512 is refused: it needs 262144 bytes of shared memory") != NULL, "%s", ph_last_error());
    ph_free(da); ph_free(dc);
    free(a); free(c);
    ph_module_free(m);
}

static void row_blocks(const ph_meta *meta, void *user, unsigned g[3])
{
    g[0] = (unsigned)(*(int64_t *)user / ph_meta_get(meta, "BM", 1));
}

/* A tensor-core dot whose loop-invariant left operand (64 x 256 f16) and
 * right operand (256 x 64) take 104448 bytes of shared memory, past the
 * 48 KB of static shared memory: it is launched with that much dynamic
 * shared memory and computes the product (small multiples of 1/8, so
 * every sum is exact in f32). */
Test(gpu, a_config_over_48_kb_of_shared_memory_runs)
{
    need_gpu();
    const char *src =
        "import phobos.lang as ph\n"
        "@ph.kernel\n"
        "@ph.tensorcore\n"
        "@ph.launch(128)\n"
        "@ph.autotune(BM=[64], BN=[64], K=[256])\n"
        "def mm(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], Y: ph.tensor[ph.f32][M, N]):\n"
        "    r0: ph.let = ph.ctx.block.x * BM\n"
        "    a: ph.let = A[r0:+BM, :]\n"
        "    for c in range(0, N, BN):\n"
        "        Y[r0:+BM, c:+BN] = ph.dot(a, B[:, c:+BN])\n";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("mm.ph", src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "mm", &k), PH_OK);
    int64_t M = 256, N = 128, K = 256;
    uint16_t *a = malloc((size_t)(M * K) * 2), *b = malloc((size_t)(K * N) * 2);
    float *y = malloc((size_t)(M * N) * 4);
    for (int64_t i = 0; i < M * K; i++) a[i] = ph_f32_to_f16((float)((i * 7 + i / K * 3) % 9 - 4) * 0.25f);
    for (int64_t i = 0; i < K * N; i++) b[i] = ph_f32_to_f16((float)((i * 5 + i / N) % 7 - 3) * 0.5f);
    ph_devptr da, db, dy;
    cr_assert_eq(ph_malloc(&da, (size_t)(M * K) * 2), PH_OK);
    cr_assert_eq(ph_malloc(&db, (size_t)(K * N) * 2), PH_OK);
    cr_assert_eq(ph_malloc(&dy, (size_t)(M * N) * 4), PH_OK);
    ph_memcpy_htod(da, a, (size_t)(M * K) * 2);
    ph_memcpy_htod(db, b, (size_t)(K * N) * 2);
    ph_memset8(dy, 0xff, (size_t)(M * N) * 4);   /* NaN poison */
    ph_arg args[3] = {ph_tensor2(da, M, K), ph_tensor2(db, K, N), ph_tensor2(dy, M, N)};
    cr_assert_eq(ph_launch(k, row_blocks, &M, args, 3), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_synchronize(), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_memcpy_dtoh(y, dy, (size_t)(M * N) * 4), PH_OK);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float want = 0;
            for (int64_t t = 0; t < K; t++) want += ph_f16_to_f32(a[i * K + t]) * ph_f16_to_f32(b[t * N + j]);
            cr_assert_eq(y[i * N + j], want, "Y[%lld, %lld] = %g, want %g", (long long)i, (long long)j, y[i * N + j], want);
        }
    ph_free(da); ph_free(db); ph_free(dy);
    free(a); free(b); free(y);
    ph_module_free(m);
}

Test(gpu, launch_after_shutdown_is_refused)
{
    need_gpu();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("saxpy.ph", saxpy_src, &m), PH_OK);
    ph_kernel_get(m, "saxpy", &k);
    ph_devptr d;
    ph_malloc(&d, 4096);
    ph_free(d);
    ph_shutdown();
    ph_arg args[4] = {ph_tensor1(d, 1024), ph_tensor1(d, 1024), ph_tensor1(d, 1024), ph_f32(1)};
    Len len = {1024};
    cr_assert_eq(ph_launch(k, saxpy_grid, &len, args, 4), PH_ERR_STATE);
    cr_assert(strstr(ph_last_error(), "shut down") != NULL, "%s", ph_last_error());
    ph_module_free(m);
}

/* ---- streams and several GPUs ---- */

/* The driver calls a host makes on its own streams, from libcuda.so.1. */
static struct {
    int (*StreamCreate)(void **stream, unsigned flags);
    int (*StreamDestroy)(void *stream);
    int (*StreamSynchronize)(void *stream);
    int (*MemsetD32Async)(ph_devptr p, unsigned value, size_t n, void *stream);
} host;

static void need_host_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "ph_init found a driver, but dlopen cannot: %s", dlerror());
    *(void **)&host.StreamCreate = dlsym(lib, "cuStreamCreate");
    *(void **)&host.StreamDestroy = dlsym(lib, "cuStreamDestroy_v2");
    *(void **)&host.StreamSynchronize = dlsym(lib, "cuStreamSynchronize");
    *(void **)&host.MemsetD32Async = dlsym(lib, "cuMemsetD32Async");
    cr_assert(host.StreamCreate && host.StreamDestroy && host.StreamSynchronize && host.MemsetD32Async);
}

static unsigned float_bits(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}

/* A launch on a stream of the host's, one that does not wait for the NULL
 * stream (CU_STREAM_NON_BLOCKING), runs after the work queued there
 * before it and before the work queued after: X and Y are filled on the
 * stream behind a long memset, the first launch autotunes there, and a
 * second launch sees X refilled after the first. */
Test(gpu, a_launch_on_a_stream_is_ordered_with_its_work)
{
    need_gpu();
    need_host_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("saxpy.ph", saxpy_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "saxpy", &k), PH_OK);
    Len len = {1 << 22};
    size_t bytes = (size_t)len.n * 4, big = (size_t)1 << 30;
    ph_devptr dx, dy, dz, delay;
    cr_assert_eq(ph_malloc(&dx, bytes), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_malloc(&dy, bytes), PH_OK);
    cr_assert_eq(ph_malloc(&dz, bytes), PH_OK);
    cr_assert_eq(ph_malloc(&delay, big), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_memset8(dx, 0, bytes), PH_OK);
    cr_assert_eq(ph_memset8(dy, 0, bytes), PH_OK);
    cr_assert_eq(ph_memset8(dz, 0xff, bytes), PH_OK);   /* NaN poison */
    cr_assert_eq(ph_synchronize(), PH_OK);

    void *stream = NULL;
    cr_assert_eq(host.StreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */), 0);
    for (int i = 0; i < 8; i++) cr_assert_eq(host.MemsetD32Async(delay, (unsigned)i, big / 4, stream), 0);
    cr_assert_eq(host.MemsetD32Async(dx, float_bits(1.5f), (size_t)len.n, stream), 0);
    cr_assert_eq(host.MemsetD32Async(dy, float_bits(-2.0f), (size_t)len.n, stream), 0);
    ph_arg args[4] = {ph_tensor1_t(dx, PH_F32, len.n), ph_tensor1_t(dy, PH_F32, len.n), ph_tensor1_t(dz, PH_F32, len.n), ph_f32(3.0f)};
    cr_assert_eq(ph_launch_stream(k, saxpy_grid, &len, args, 4, stream), PH_OK, "%s", ph_last_error());
    cr_assert_eq(host.MemsetD32Async(dx, float_bits(100.0f), (size_t)len.n, stream), 0);
    cr_assert_eq(host.StreamSynchronize(stream), 0);
    float *z = malloc(bytes);
    cr_assert_eq(ph_memcpy_dtoh(z, dz, bytes), PH_OK);
    for (int64_t i = 0; i < len.n; i++) cr_assert_eq(z[i], 2.5f, "z[%lld] = %g: the launch did not wait for X and Y", (long long)i, z[i]);

    for (int i = 0; i < 8; i++) cr_assert_eq(host.MemsetD32Async(delay, (unsigned)i, big / 4, stream), 0);
    args[3] = ph_f32(4.0f);
    cr_assert_eq(ph_launch_stream(k, saxpy_grid, &len, args, 4, stream), PH_OK, "%s", ph_last_error());
    cr_assert_eq(host.MemsetD32Async(dy, float_bits(0.0f), (size_t)len.n, stream), 0);
    cr_assert_eq(host.StreamSynchronize(stream), 0);
    cr_assert_eq(ph_memcpy_dtoh(z, dz, bytes), PH_OK);
    for (int64_t i = 0; i < len.n; i++) cr_assert_eq(z[i], 398.0f, "z[%lld] = %g (want 4 * 100 - 2)", (long long)i, z[i]);

    host.StreamDestroy(stream);
    free(z);
    ph_free(dx); ph_free(dy); ph_free(dz); ph_free(delay);
    ph_module_free(m);
}

/* One GPU's work, done by a thread of its own. */
typedef struct {
    int device;
    char error[1024];   /* empty when all went well */
    int64_t wrong;
    ph_module *m;
    ph_kernel *k;
    ph_devptr x, y, z;
} GpuWork;

enum { WORK_N = 1 << 20 };

/* Z = a * X + Y on the thread's device, X[i] = i % 1000 and Y[i] = device. */
static int64_t saxpy_wrong(GpuWork *g, float a)
{
    float *z = malloc((size_t)WORK_N * 4);
    int64_t wrong = -1;
    if (ph_synchronize() == PH_OK && ph_memcpy_dtoh(z, g->z, (size_t)WORK_N * 4) == PH_OK) {
        wrong = 0;
        for (int64_t i = 0; i < WORK_N; i++) wrong += z[i] != a * (float)(i % 1000) + (float)g->device;
    }
    free(z);
    return wrong;
}

#define TRY(call) do { if ((call) != PH_OK) { \
    snprintf(g->error, sizeof g->error, "device %d: %s: %s", g->device, #call, ph_last_error()); return NULL; } } while (0)

static void *gpu_worker(void *arg)
{
    GpuWork *g = arg;
    int dev = -1;
    TRY(ph_set_device(g->device));
    TRY(ph_get_device(&dev));
    if (dev != g->device) { snprintf(g->error, sizeof g->error, "ph_get_device says %d, not %d", dev, g->device); return NULL; }
    TRY(ph_module_load_string("saxpy.ph", saxpy_src, &g->m));
    TRY(ph_kernel_get(g->m, "saxpy", &g->k));
    size_t bytes = (size_t)WORK_N * 4;
    float *host_x = malloc(bytes), *host_y = malloc(bytes);
    for (int64_t i = 0; i < WORK_N; i++) { host_x[i] = (float)(i % 1000); host_y[i] = (float)g->device; }
    TRY(ph_malloc(&g->x, bytes));
    TRY(ph_malloc(&g->y, bytes));
    TRY(ph_malloc(&g->z, bytes));
    TRY(ph_memcpy_htod(g->x, host_x, bytes));
    TRY(ph_memcpy_htod(g->y, host_y, bytes));
    free(host_x);
    free(host_y);
    Len len = {WORK_N};
    ph_arg args[4] = {ph_tensor1(g->x, WORK_N), ph_tensor1(g->y, WORK_N), ph_tensor1(g->z, WORK_N), ph_f32((float)(g->device + 2))};
    TRY(ph_launch(g->k, saxpy_grid, &len, args, 4));
    g->wrong = saxpy_wrong(g, (float)(g->device + 2));
    return NULL;
}

/* Two GPUs, a thread each: each chooses its device, loads, allocates,
 * launches (autotuning there) and checks, at the same time. Then the main
 * thread, whose device is the first, launches device 1's module on device
 * 1's memory: a module's launches go to its device whatever thread makes
 * them (on device 0 they would fault on memory of device 1). */
Test(gpu, two_gpus_from_two_threads)
{
    need_gpu();
    ph_status s = ph_init(1);
    if (s == PH_ERR_NO_DEVICE) cr_skip_test("one GPU only: %s", ph_last_error());
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    GpuWork g[2] = {{.device = 0}, {.device = 1}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&th[i], NULL, gpu_worker, &g[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        cr_assert_str_empty(g[i].error, "%s", g[i].error);
        cr_assert_eq(g[i].wrong, 0, "device %d: %lld elements wrong", i, (long long)g[i].wrong);
    }

    int dev = -1;
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 0, "the main thread never chose: the first device");
    Len len = {WORK_N};
    ph_arg args[4] = {ph_tensor1(g[1].x, WORK_N), ph_tensor1(g[1].y, WORK_N), ph_tensor1(g[1].z, WORK_N), ph_f32(7.0f)};
    cr_assert_eq(ph_launch(g[1].k, saxpy_grid, &len, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(saxpy_wrong(&g[1], 7.0f), 0, "%s", ph_last_error());
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(ph_set_device(i), PH_OK);
        ph_free(g[i].x); ph_free(g[i].y); ph_free(g[i].z);
        ph_module_free(g[i].m);
    }
}
