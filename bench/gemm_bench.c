/* gemm_bench.c: times the GEMM kernel of PROGRAM.ph (bench/gemm_tuned.ph:
 * C = A @ B, f16 inputs, f32 accumulation, f16 output) on the GPU through
 * the runtime, at 2048³, 4096³, 8192³ and M 8192, N 4096, K 2048: the
 * shape of a transformer's MLP projection (8192 tokens, 2048 features in,
 * 4096 out), whose flops are 4096³'s, so its row says what a non-square
 * grid of blocks and a K shorter than M and N (fewer iterations for each
 * block's pipeline to fill and drain) cost against the cube.
 *
 *   gemm_bench [--tsv PATH] [--shape M N K] [--blocks N] [--kernel NAME] PROGRAM.ph
 *
 * Each figure is timed as gpubench.h says; TFLOP/s = 2·M·N·K / time. A
 * line per shape with the config the autotuner chose; with --tsv, the
 * figures as rows for bench/benchtable.py (impl "phc"). A shape that
 * fails is a row "n/a" with the runtime's message, and the exit status
 * is 1. Every shape's result is then checked: C poisoned, one more
 * launch, and 1024 sampled elements against a double-precision dot of the
 * same f16 inputs; a wrong one fails the bench. --shape runs that one
 * shape instead of the grid (make gpusanitize: small, under
 * compute-sanitizer, every config launched while the autotuner times it);
 * --blocks N launches at most N blocks, so that each loops over several
 * tiles (make gpusanitize, the persistent kernel's tile loop). --kernel
 * names the kernel or one config's entry name (default gemm: autotuned),
 * so make gpucheck checks every config, not only the one that wins. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpubench.h"
#include "base/half.h"

typedef struct { int64_t m, n, k; } Shape;
static const Shape grid_shapes[] = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 4096, 2048}};

static int64_t max_blocks;   /* --blocks; 0: a block per multiprocessor */

typedef struct {
    ph_kernel *gemm;
    ph_devptr a, b, c;
    Shape s;
} Gemm;

/* The kernel is persistent (it loops over the tiles): a block per tile,
 * or per multiprocessor where there are fewer. */
static void grid_tiles(const ph_meta *meta, void *user, unsigned g[3])
{
    const Gemm *w = user;
    int64_t bm = ph_meta_get(meta, "BM", 1), bn = ph_meta_get(meta, "BN", 1);
    int64_t tiles = ((w->s.m + bm - 1) / bm) * ((w->s.n + bn - 1) / bn), sms = max_blocks ? max_blocks : ph_device_multiprocessors();
    g[0] = (unsigned)(sms > 0 && sms < tiles ? sms : tiles);
}

static ph_status multiply(void *user)
{
    Gemm *w = user;
    ph_arg args[] = {ph_tensor2_t(w->a, PH_F16, w->s.m, w->s.k), ph_tensor2_t(w->b, PH_F16, w->s.k, w->s.n),
                     ph_tensor2_t(w->c, PH_F16, w->s.m, w->s.n)};
    return ph_launch(w->gemm, grid_tiles, w, args, 3);
}

/* A, B and C as large as the largest of the shapes needs, A and B random
 * and independent; a smaller shape uses their beginning. */
static ph_status alloc_buffers(Gemm *w, const Shape *shapes, size_t nshapes)
{
    size_t n = 1;
    for (size_t i = 0; i < nshapes; i++) {
        size_t mk = (size_t)(shapes[i].m * shapes[i].k), kn = (size_t)(shapes[i].k * shapes[i].n), mn = (size_t)(shapes[i].m * shapes[i].n);
        if (mk > n) n = mk;
        if (kn > n) n = kn;
        if (mn > n) n = mn;
    }
    ph_status s = ph_malloc(&w->a, n * 2);
    if (!s) s = ph_malloc(&w->b, n * 2);
    if (!s) s = ph_malloc(&w->c, n * 2);
    if (!s) s = gpubench_random_f16(w->a, n, 1);
    if (!s) s = gpubench_random_f16(w->b, n, 2);
    return s;
}

/* Whether C = A @ B at 1024 sampled elements (every row and column
 * residue among them, the last row and column included), within f32
 * accumulation of K terms plus f16 rounding of the result. */
static int check_product(Gemm *w)
{
    Shape s = w->s;
    size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2), *c = malloc(nc * 2);
    int bad = -1;
    if (a && b && c && !ph_memset8(w->c, 0xff, nc * 2) && !multiply(w) && !ph_memcpy_dtoh(a, w->a, na * 2) &&
        !ph_memcpy_dtoh(b, w->b, nb * 2) && !ph_memcpy_dtoh(c, w->c, nc * 2)) {
        bad = 0;
        uint64_t x = 0x2545f4914f6cdd1dull;
        for (int t = 0; t < 1024; t++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            int64_t i = t == 0 ? s.m - 1 : (int64_t)(x % (uint64_t)s.m), j = t == 0 ? s.n - 1 : (int64_t)((x >> 32) % (uint64_t)s.n);
            double want = 0, mag = 0;
            for (int64_t k = 0; k < s.k; k++) {
                double term = (double)ph_f16_to_f32(a[i * s.k + k]) * ph_f16_to_f32(b[k * s.n + j]);
                want += term;
                mag += fabs(term);
            }
            double got = ph_f16_to_f32(c[i * s.n + j]), tol = (double)(s.k + 2) * 0x1p-24 * mag + 0x1p-11 * fabs(want);
            if (!(fabs(got - want) <= tol) && bad++ < 3)
                printf("  C[%lld, %lld] = %.6g, want %.6g (tolerance %.2g)\n", (long long)i, (long long)j, got, want, tol);
        }
    }
    free(a);
    free(b);
    free(c);
    return bad;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *tsv_path = NULL, *kernel = "gemm";
    const Shape *shapes = grid_shapes;
    size_t nshapes = sizeof grid_shapes / sizeof *grid_shapes;
    Shape one = {0, 0, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tsv") && i + 1 < argc) {
            tsv_path = argv[++i];
        } else if (!strcmp(argv[i], "--shape") && i + 3 < argc) {
            one = (Shape){atoll(argv[i + 1]), atoll(argv[i + 2]), atoll(argv[i + 3])};
            i += 3;
            if (one.m < 1 || one.n < 1 || one.k < 1) {
                fprintf(stderr, "%s: --shape M N K takes three positive sizes\n", argv[0]);
                return 2;
            }
            shapes = &one;
            nshapes = 1;
        } else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            max_blocks = atoll(argv[++i]);
            if (max_blocks < 1) {
                fprintf(stderr, "%s: --blocks takes a positive count\n", argv[0]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) {
            kernel = argv[++i];
        } else if (argv[i][0] != '-' && !path) {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: %s [--tsv PATH] [--shape M N K] [--blocks N] [--kernel NAME] PROGRAM.ph\n", argv[0]);
            return 2;
        }
    }
    if (!path) path = "bench/gemm_tuned.ph";
    setvbuf(stdout, NULL, _IOLBF, 0);
    char what[512];
    snprintf(what, sizeof what, "gemm bench (%s)", path);
    GpuBench *b = gpubench_open(what);
    if (!b) return 0;

    ph_module *m = NULL;
    Gemm w = {0};
    if (ph_module_load_file(path, &m) || ph_kernel_get(m, kernel, &w.gemm)) {
        fprintf(stderr, "%s: %s\n", path, ph_last_error());
        gpubench_close(b);
        return 1;
    }
    printf("%s on %s: f16 in, f32 accumulation, f16 out\n", what, ph_device_name());
    int failed = 0;
    if (alloc_buffers(&w, shapes, nshapes)) {
        fprintf(stderr, "%s: %s\n", what, ph_last_error());
        failed = 1;
    }
    FILE *tsv = NULL;
    if (!failed && tsv_path && !(tsv = gpubench_tsv_open(tsv_path, path, "impl\tM\tN\tK\tms\tconfig"))) failed = 1;
    int broken = failed;   /* after a driver error nothing more is timed */
    for (size_t i = 0; i < nshapes && !broken; i++) {
        w.s = shapes[i];
        double ms = -1;
        ph_status st = gpubench_time(b, multiply, &w, GPUBENCH_GEMM_REPS, &ms);
        const char *note = st ? ph_last_error() : ph_kernel_last_config(w.gemm);
        if (!note) note = "?";
        if (st) printf("M %lld N %lld K %lld: n/a: %s\n", (long long)w.s.m, (long long)w.s.n, (long long)w.s.k, note);
        else printf("M %lld N %lld K %lld: %8.3f ms %7.1f TFLOP/s   %s\n", (long long)w.s.m, (long long)w.s.n, (long long)w.s.k, ms,
                    2.0 * w.s.m * w.s.n * w.s.k / ms / 1e9, note);
        char key[128];
        snprintf(key, sizeof key, "phc\t%lld\t%lld\t%lld", (long long)w.s.m, (long long)w.s.n, (long long)w.s.k);
        gpubench_tsv_row(tsv, key, ms, note);
        failed |= st != PH_OK;
        broken = st == PH_ERR_CUDA;
        if (!st) {
            int bad = check_product(&w);
            if (bad) printf("M %lld N %lld K %lld: %s\n", (long long)w.s.m, (long long)w.s.n, (long long)w.s.k,
                            bad < 0 ? "the check could not run" : "WRONG RESULTS");
            else printf("M %lld N %lld K %lld: 1024 sampled elements right\n", (long long)w.s.m, (long long)w.s.n, (long long)w.s.k);
            failed |= bad != 0;
        }
    }
    if (tsv) fclose(tsv);
    ph_devptr bufs[] = {w.a, w.b, w.c};
    for (int i = 0; i < 3; i++)
        if (bufs[i]) ph_free(bufs[i]);
    ph_module_free(m);
    gpubench_close(b);
    return failed;
}
