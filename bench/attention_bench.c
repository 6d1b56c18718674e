/* attention_bench.c: times the tutorial's four kernels on the GPU through
 * the runtime: forward (attn_fwd) and backward (attn_bwd_delta +
 * attn_bwd_dkdv + attn_bwd_dq), causal and not, and prints milliseconds and
 * TFLOP/s in the convention of Triton's tutorial (forward 4·Z·H·N²·D flops,
 * half when causal; backward 2.5 times the forward), each row with the
 * configs the autotuner chose. Inputs are random; each figure is the
 * median of 20 timed repetitions after 3 warm-ups. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "half.h"
#include "phobos.h"

#define CHECK(call) do { if ((call) != PH_OK) { fprintf(stderr, "%s: %s\n", #call, ph_last_error()); exit(1); } } while (0)

typedef struct { int z, h, n, d; } Size;
typedef struct { Size s; const char *block; } GridCtx;

static void grid_rows(const ph_meta *meta, void *user, unsigned g[3])
{
    GridCtx *c = user;
    int64_t b = ph_meta_get(meta, c->block, 1);
    g[0] = (unsigned)(c->s.n / b);
    g[1] = (unsigned)(c->s.z * c->s.h);
}

static void grid_flat(const ph_meta *meta, void *user, unsigned g[3])
{
    GridCtx *c = user;
    g[0] = (unsigned)((int64_t)c->s.z * c->s.h * c->s.n / ph_meta_get(meta, "BR", 1));
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    ph_kernel *fwd, *delta, *dkdv, *dq;
    ph_devptr q, k, v, o, dout, dq_, dk, dv, lse, dlt;
} Attn;

static void forward(Attn *a, Size s, int causal)
{
    int64_t rows = (int64_t)s.z * s.h * s.n;
    ph_arg args[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                     ph_tensor2(a->o, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_i32(s.n), ph_f32(0.5f), ph_i32(causal)};
    GridCtx c = {s, "BR"};
    CHECK(ph_launch(a->fwd, grid_rows, &c, args, 8));
}

static void backward(Attn *a, Size s, int causal)
{
    int64_t rows = (int64_t)s.z * s.h * s.n;
    GridCtx c = {s, "BR"};
    ph_arg dargs[] = {ph_tensor2(a->o, rows, s.d), ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->dlt, rows, 1)};
    CHECK(ph_launch(a->delta, grid_flat, &c, dargs, 3));
    ph_arg kv[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                   ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_tensor2(a->dlt, rows, 1),
                   ph_tensor2(a->dk, rows, s.d), ph_tensor2(a->dv, rows, s.d), ph_i32(s.n), ph_f32(0.5f), ph_i32(causal)};
    GridCtx ck = {s, "BC"};
    CHECK(ph_launch(a->dkdv, grid_rows, &ck, kv, 11));
    ph_arg q[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                  ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_tensor2(a->dlt, rows, 1),
                  ph_tensor2(a->dq_, rows, s.d), ph_i32(s.n), ph_f32(0.5f), ph_i32(causal)};
    CHECK(ph_launch(a->dq, grid_rows, &c, q, 10));
}

static double time_ms(Attn *a, Size s, int causal, int bwd)
{
    double t[20];
    for (int rep = 0; rep < 23; rep++) {
        CHECK(ph_synchronize());
        double t0 = now_ms();
        if (bwd) backward(a, s, causal);
        else forward(a, s, causal);
        CHECK(ph_synchronize());
        if (rep >= 3) t[rep - 3] = now_ms() - t0;
    }
    qsort(t, 20, sizeof *t, cmp_double);
    return (t[9] + t[10]) / 2;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "examples/attention/attention.ph";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (ph_init(0) != PH_OK) {
        printf("attention bench skipped: %s\n", ph_last_error());
        return 0;
    }
    ph_module *m;
    Attn a;
    CHECK(ph_module_load_file(path, &m));
    CHECK(ph_kernel_get(m, "attn_fwd", &a.fwd));
    CHECK(ph_kernel_get(m, "attn_bwd_delta", &a.delta));
    CHECK(ph_kernel_get(m, "attn_bwd_dkdv", &a.dkdv));
    CHECK(ph_kernel_get(m, "attn_bwd_dq", &a.dq));
    Size sizes[] = {{4, 16, 1024, 64}, {4, 16, 4096, 64}};
    printf("phobos attention (%s) on %s\n", path, ph_device_name());
    printf("%-6s %-5s %6s %4s %4s %-8s %10s %9s\n", "causal", "pass", "N_CTX", "Z", "H", "", "ms", "TFLOP/s");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        Size s = sizes[i];
        size_t rows = (size_t)s.z * s.h * s.n, n16 = rows * (size_t)s.d;
        uint16_t *host = malloc(n16 * 2);
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (size_t j = 0; j < n16; j++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            host[j] = ph_f32_to_f16(((float)(x % 2001) - 1000.0f) / 2000.0f);
        }
        ph_devptr *bufs16[] = {&a.q, &a.k, &a.v, &a.o, &a.dout, &a.dq_, &a.dk, &a.dv};
        for (int b = 0; b < 8; b++) {
            CHECK(ph_malloc(bufs16[b], n16 * 2));
            CHECK(ph_memcpy_htod(*bufs16[b], host, n16 * 2));
        }
        CHECK(ph_malloc(&a.lse, rows * 4));
        CHECK(ph_malloc(&a.dlt, rows * 4));
        free(host);
        for (int causal = 0; causal <= 1; causal++) {
            double flops = 4.0 * s.z * s.h * (double)s.n * s.n * s.d * (causal ? 0.5 : 1.0);
            forward(&a, s, causal);   /* lse for the backward pass */
            double f = time_ms(&a, s, causal, 0), b = time_ms(&a, s, causal, 1);
            printf("%-6d %-5s %6d %4d %4d %-8s %10.3f %9.2f   %s\n", causal, "fwd", s.n, s.z, s.h, "", f, flops / f / 1e9,
                   ph_kernel_last_config(a.fwd));
            printf("%-6d %-5s %6d %4d %4d %-8s %10.3f %9.2f   %s %s %s\n", causal, "bwd", s.n, s.z, s.h, "", b,
                   2.5 * flops / b / 1e9, ph_kernel_last_config(a.delta), ph_kernel_last_config(a.dkdv),
                   ph_kernel_last_config(a.dq));
        }
        for (int b = 0; b < 8; b++) ph_free(*bufs16[b]);
        ph_free(a.lse);
        ph_free(a.dlt);
    }
    ph_module_free(m);
    ph_shutdown();
    return 0;
}
