/* attention_bench.c: times the tutorial's four kernels on the GPU through
 * the runtime: forward (attn_fwd) and backward (attn_bwd_delta +
 * attn_bwd_dkdv + attn_bwd_dq, the seed's or the fused backward of
 * examples/attention/attention_host.h), causal and not, over the grid of Triton's
 * fused-attention benchmark: batch 4, 32 heads, head dim 64 and 128,
 * N_CTX 1024 to 16384, f16.
 *
 *   attention_bench [--short] [--d D] [--n N_CTX] [--pass fwd|bwd] [--impl NAME] [--tsv PATH] PROGRAM.ph
 *
 * --short times head dim 64 at N_CTX 1024 and 4096 only (the seed's rows);
 * --d and --n keep the grid's rows of that head dim or N_CTX (one each),
 * for a lever measured on and off in little device time; --pin ENTRY
 * (repeatable) runs that config of its kernel (an entry name, as phc
 * --list prints them) instead of the autotuner's pick: one config timed
 * under several settings without a copy of the file (with --d: a pinned
 * config takes only its own head dim).
 * Each figure is timed as gpubench.h says (events, L2 flush, median); the
 * first launch at each size autotunes, the winner kept on disk by the
 * runtime. A line per figure, milliseconds and TFLOP/s counted as Triton's
 * tutorial counts them (forward 4·B·H·N²·D flops, half when causal;
 * backward 2.5 times the forward), with the configs the autotuner chose;
 * with --tsv, the same figures as rows for bench/benchtable.py (impl NAME,
 * by default "phc"). A case that fails is a row "n/a" with the runtime's
 * message, and the exit status is 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpubench.h"

enum { BATCH = 4, HEADS = 32 };
static const int full_dims[] = {64, 128}, full_ctx[] = {1024, 2048, 4096, 8192, 16384};
static const int short_dims[] = {64}, short_ctx[] = {1024, 4096};

typedef struct { int z, h, n, d; } Size;
typedef struct { Size s; const char *block; } GridCtx;

typedef struct {
    ph_kernel *fwd, *delta, *dkdv, *dq;
    ph_devptr q, k, v, o, dout, dq_, dk, dv, lse, dlt;
    ph_devptr dqacc;   /* f32: a fused backward's dQ accumulator (examples/attention/attention_host.h) */
    int fused;         /* attn_bwd_dkdv takes DQacc: the fused backward's three kernels */
} Attn;

/* What one timed piece of work runs. */
typedef struct {
    Attn *a;
    Size s;
    int causal;
} Case;

static void grid_rows(const ph_meta *meta, void *user, unsigned g[3])
{
    GridCtx *c = user;
    int64_t b = ph_meta_get(meta, c->block, 1);
    g[0] = (unsigned)((c->s.n + b - 1) / b);   /* a MASKED kernel's last block is partial */
    g[1] = (unsigned)(c->s.z * c->s.h);
    /* a persistent config's blocks loop over the tiles (attention_host.h attn_fwd_grid) */
    int64_t blocks = ph_meta_get(meta, "PERSISTENT", 0) * ph_device_multiprocessors();
    if (blocks > 0 && blocks < (int64_t)g[0] * g[1]) g[0] = (unsigned)blocks, g[1] = 1;
}

static void grid_flat(const ph_meta *meta, void *user, unsigned g[3])
{
    GridCtx *c = user;
    g[0] = (unsigned)((int64_t)c->s.z * c->s.h * c->s.n / ph_meta_get(meta, "BR", 1));
}

static ph_status forward(void *user)
{
    Case *c = user;
    Attn *a = c->a;
    Size s = c->s;
    int64_t rows = (int64_t)s.z * s.h * s.n;
    ph_arg args[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                     ph_tensor2(a->o, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_i32(s.n), ph_f32(0.5f), ph_i32(c->causal)};
    GridCtx g = {s, "BR"};
    return ph_launch(a->fwd, grid_rows, &g, args, 8);
}

/* The fused backward: delta (which zeroes DQacc), dK/dV adding each block's
 * share of dQ into DQacc, and dQ = DQacc * scale in f16. */
static ph_status fused_backward(Case *c)
{
    Attn *a = c->a;
    Size s = c->s;
    int64_t rows = (int64_t)s.z * s.h * s.n;
    GridCtx g = {s, "BR"}, gk = {s, "BC"};
    ph_arg acc = ph_tensor2(a->dqacc, rows, s.d);
    ph_arg dargs[] = {ph_tensor2(a->o, rows, s.d), ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->dlt, rows, 1), acc};
    ph_status st = ph_launch(a->delta, grid_flat, &g, dargs, 4);
    if (st) return st;
    ph_arg kv[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                   ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_tensor2(a->dlt, rows, 1),
                   ph_tensor2(a->dk, rows, s.d), ph_tensor2(a->dv, rows, s.d), acc, ph_i32(s.n), ph_f32(0.5f),
                   ph_i32(c->causal)};
    if ((st = ph_launch(a->dkdv, grid_rows, &gk, kv, 12))) return st;
    ph_arg q[] = {acc, ph_tensor2(a->dq_, rows, s.d), ph_f32(0.5f)};
    return ph_launch(a->dq, grid_flat, &g, q, 3);
}

static ph_status backward(void *user)
{
    Case *c = user;
    Attn *a = c->a;
    Size s = c->s;
    int64_t rows = (int64_t)s.z * s.h * s.n;
    GridCtx g = {s, "BR"}, gk = {s, "BC"};
    if (a->fused) return fused_backward(c);
    ph_arg dargs[] = {ph_tensor2(a->o, rows, s.d), ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->dlt, rows, 1)};
    ph_status st = ph_launch(a->delta, grid_flat, &g, dargs, 3);
    if (st) return st;
    ph_arg kv[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                   ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_tensor2(a->dlt, rows, 1),
                   ph_tensor2(a->dk, rows, s.d), ph_tensor2(a->dv, rows, s.d), ph_i32(s.n), ph_f32(0.5f), ph_i32(c->causal)};
    if ((st = ph_launch(a->dkdv, grid_rows, &gk, kv, 11))) return st;
    ph_arg q[] = {ph_tensor2(a->q, rows, s.d), ph_tensor2(a->k, rows, s.d), ph_tensor2(a->v, rows, s.d),
                  ph_tensor2(a->dout, rows, s.d), ph_tensor2(a->lse, rows, 1), ph_tensor2(a->dlt, rows, 1),
                  ph_tensor2(a->dq_, rows, s.d), ph_i32(s.n), ph_f32(0.5f), ph_i32(c->causal)};
    return ph_launch(a->dq, grid_rows, &g, q, 10);
}

static double flops(Size s, int causal, int bwd)
{
    double f = 4.0 * s.z * s.h * (double)s.n * s.n * s.d;
    return f * (causal ? 0.5 : 1.0) * (bwd ? 2.5 : 1.0);
}

/* The buffers, each as large as the largest size needs; a smaller size
 * uses their beginning. q, k, v and dO are independent random inputs. */
static ph_status alloc_buffers(Attn *a, size_t max_rows, int max_d)
{
    size_t n16 = max_rows * (size_t)max_d;
    ph_devptr *bufs16[] = {&a->q, &a->k, &a->v, &a->dout, &a->o, &a->dq_, &a->dk, &a->dv};
    ph_status s = PH_OK;
    for (int i = 0; i < 8 && !s; i++) s = ph_malloc(bufs16[i], n16 * 2);
    for (int i = 0; i < 4 && !s; i++) s = gpubench_random_f16(*bufs16[i], n16, (uint64_t)i + 1);
    if (!s) s = ph_malloc(&a->lse, max_rows * 4);
    if (!s) s = ph_malloc(&a->dlt, max_rows * 4);
    if (!s && a->fused) s = ph_malloc(&a->dqacc, n16 * 4);
    return s;
}

static void free_buffers(Attn *a)
{
    ph_devptr bufs[] = {a->q, a->k, a->v, a->dout, a->o, a->dq_, a->dk, a->dv, a->lse, a->dlt, a->dqacc};
    for (int i = 0; i < 11; i++)
        if (bufs[i]) ph_free(bufs[i]);
}

static const char *config_of(const ph_kernel *k)
{
    const char *c = ph_kernel_last_config(k);
    return c ? c : "?";
}

/* Times one pass of one case: a progress line and a TSV row. Returns the
 * status, PH_OK when the figure was taken. */
static ph_status time_case(GpuBench *b, FILE *tsv, const char *impl, Case *c, int bwd)
{
    Attn *a = c->a;
    Size s = c->s;
    double ms = -1;
    ph_status st = PH_OK;
    if (bwd) st = forward(c);   /* the row statistics L the backward pass reads */
    if (!st) st = gpubench_time(b, bwd ? backward : forward, c, gpubench_attention_reps(s.n), &ms);
    char configs[512];
    if (st) snprintf(configs, sizeof configs, "%s", ph_last_error());
    else if (bwd)
        snprintf(configs, sizeof configs, "%s %s %s", config_of(a->delta), config_of(a->dkdv), config_of(a->dq));
    else snprintf(configs, sizeof configs, "%s", config_of(a->fwd));
    const char *pass = bwd ? "bwd" : "fwd";
    if (st) printf("  %s causal %d: n/a: %s\n", pass, c->causal, configs);
    else printf("  %s causal %d: %9.3f ms %7.1f TFLOP/s   %s\n", pass, c->causal, ms, flops(s, c->causal, bwd) / ms / 1e9, configs);
    char key[128];
    snprintf(key, sizeof key, "%s\t%s\t%d\t%d\t%d\t%d\t%d", impl, pass, c->causal, s.z, s.h, s.d, s.n);
    gpubench_tsv_row(tsv, key, ms, configs);
    return st;
}

/* Kernel `name` of m, or the config a --pin names (an entry name,
 * NAME__META_VALUE...: launched as it is, nothing tuned). */
static ph_status kernel_or_pin(ph_module *m, const char *name, const char *const *pins, int npins, ph_kernel **k)
{
    size_t n = strlen(name);
    for (int i = 0; i < npins; i++)
        if (!strncmp(pins[i], name, n) && !strncmp(pins[i] + n, "__", 2)) return ph_kernel_get(m, pins[i], k);
    return ph_kernel_get(m, name, k);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *impl = "phc", *tsv_path = NULL, *pins[8];
    int short_grid = 0, only_d = 0, only_n = 0, npins = 0, only_pass = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--short")) short_grid = 1;
        else if (!strcmp(argv[i], "--pin") && i + 1 < argc && npins < 8) pins[npins++] = argv[++i];
        else if (!strcmp(argv[i], "--d") && i + 1 < argc) only_d = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) only_n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pass") && i + 1 < argc && (!strcmp(argv[i + 1], "fwd") || !strcmp(argv[i + 1], "bwd")))
            only_pass = !strcmp(argv[++i], "bwd");
        else if (!strcmp(argv[i], "--impl") && i + 1 < argc) impl = argv[++i];
        else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) tsv_path = argv[++i];
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: %s [--short] [--d D] [--n N_CTX] [--pass fwd|bwd] [--impl NAME] [--tsv PATH] [--pin ENTRY]... PROGRAM.ph\n", argv[0]);
            return 2;
        }
    }
    if (!path) path = "examples/attention/attention.ph";
    const int *dims = short_grid ? short_dims : full_dims, *ctx = short_grid ? short_ctx : full_ctx;
    int ndims = short_grid ? 1 : 2, nctx = short_grid ? 2 : 5;
    int kept = 0;
    for (int i = 0; i < ndims; i++)
        for (int j = 0; j < nctx; j++) kept += (!only_d || dims[i] == only_d) && (!only_n || ctx[j] == only_n);
    if (!kept) {
        fprintf(stderr, "%s: no row of the grid has D %d and N_CTX %d\n", argv[0], only_d, only_n);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char what[512];
    snprintf(what, sizeof what, "attention bench (%s)", path);
    GpuBench *b = gpubench_open(what);
    if (!b) return 0;

    ph_module *m = NULL;
    Attn a = {0};
    if (ph_module_load_file(path, &m) || kernel_or_pin(m, "attn_fwd", pins, npins, &a.fwd) ||
        kernel_or_pin(m, "attn_bwd_delta", pins, npins, &a.delta) || kernel_or_pin(m, "attn_bwd_dkdv", pins, npins, &a.dkdv) ||
        kernel_or_pin(m, "attn_bwd_dq", pins, npins, &a.dq)) {
        fprintf(stderr, "%s: %s\n", path, ph_last_error());
        gpubench_close(b);
        return 1;
    }
    a.fused = ph_kernel_param_count(a.dkdv) == 12;
    size_t max_rows = (size_t)BATCH * HEADS * (size_t)ctx[nctx - 1];
    printf("%s on %s: batch %d, %d heads, f16, %s\n", what, ph_device_name(), BATCH, HEADS,
           "first launch at each size autotunes (winners kept on disk)");
    int failed = 0;
    if (alloc_buffers(&a, max_rows, dims[ndims - 1])) {
        fprintf(stderr, "%s: %s\n", what, ph_last_error());
        failed = 1;
    }
    FILE *tsv = NULL;
    if (!failed && tsv_path && !(tsv = gpubench_tsv_open(tsv_path, path, "impl\tpass\tcausal\tB\tH\tD\tN\tms\tconfig"))) failed = 1;
    /* a driver error leaves the context unusable: the rest is not timed */
    int broken = failed;
    for (int i = 0; i < ndims && !broken; i++)
        for (int j = 0; j < nctx && !broken; j++) {
            Size s = {BATCH, HEADS, ctx[j], dims[i]};
            if ((only_d && s.d != only_d) || (only_n && s.n != only_n)) continue;
            printf("D %d, N_CTX %d\n", s.d, s.n);
            for (int causal = 0; causal <= 1 && !broken; causal++)
                for (int bwd = 0; bwd <= 1 && !broken; bwd++) {
                    if (only_pass >= 0 && bwd != only_pass) continue;
                    Case c = {&a, s, causal};
                    ph_status st = time_case(b, tsv, impl, &c, bwd);
                    failed |= st != PH_OK;
                    broken = st == PH_ERR_CUDA;
                }
        }
    if (tsv) fclose(tsv);
    free_buffers(&a);
    ph_module_free(m);
    gpubench_close(b);
    return failed;
}
