/* attention_host.h: the host side of the attention tutorial that its
 * checks share (attention_check.c, edge/edge_check.c): the sizes, the
 * buffers, choosing a config of each of the four kernels, and the seed's
 * `run`, four launches with the seed's grids. */
#ifndef PHC_EXAMPLES_ATTENTION_HOST_H
#define PHC_EXAMPLES_ATTENTION_HOST_H

#include "host.h"

typedef struct { int z, h, n, d; double scale; } AttnSize;

/* Q, K, V, dO are inputs; the rest are what the kernels write. All are
 * [Z H N_CTX, D] (lse and delta [Z H N_CTX, 1]), row-major, f16 bits. */
typedef struct {
    uint16_t *q, *k, *v, *dout;
    uint16_t *o, *dq, *dk, *dv;
    float *lse, *delta;
} AttnBufs;

/* fused: the backward of FlashAttention-2 proper, dQ made by the dK/dV
 * kernel, which adds each K/V block's share into an f32 buffer DQacc
 * (ph.atomic_add): attn_bwd_delta(O, dO, Delta, DQacc) also zeroes DQacc,
 * attn_bwd_dkdv takes DQacc after DV, and attn_bwd_dq(DQacc, DQ, scale)
 * writes DQacc * scale as f16, over all Z H N_CTX rows as the delta
 * kernel does. Otherwise the seed's three kernels, dQ recomputing S and P. */
typedef struct { IrFunc *fwd, *delta, *dkdv, *dq; bool fused; } AttnKernels;

static const char *const attn_sig_fwd = "f16:2 f16:2 f16:2 f16:2 f32:2 i32 f32 i32";
static const char *const attn_sig_delta = "f16:2 f16:2 f32:2";
static const char *const attn_sig_dkdv = "f16:2 f16:2 f16:2 f16:2 f32:2 f32:2 f16:2 f16:2 i32 f32 i32";
static const char *const attn_sig_dq = "f16:2 f16:2 f16:2 f16:2 f32:2 f32:2 f16:2 i32 f32 i32";
static const char *const attn_sig_delta_fused = "f16:2 f16:2 f32:2 f32:2";
static const char *const attn_sig_dkdv_fused = "f16:2 f16:2 f16:2 f16:2 f32:2 f32:2 f16:2 f16:2 f32:2 i32 f32 i32";
static const char *const attn_sig_dq_fused = "f32:2 f16:2 f32";

/* ---- choosing configs ---- */

/* A config fits when its D is the head dim and its blocks tile N_CTX (the
 * grids divide by them), or when the kernel says it masks partial blocks
 * (meta-parameter MASKED = 1: it writes no row at or past N_CTX, so its
 * grid is N_CTX / BR rounded up, and its scores of key columns at or past
 * N_CTX are -inf, so its last K/V block may be partial). */
static bool attn_fits(const IrFunc *f, const void *ctx)
{
    const AttnSize *s = ctx;
    int64_t d = host_meta(f, "D"), br = host_meta(f, "BR"), bc = host_meta(f, "BC");
    bool masked = host_meta(f, "MASKED") == 1;
    if (d != -1 && d != s->d) return false;
    return masked || ((br <= 0 || s->n % br == 0) && (bc <= 0 || s->n % bc == 0));
}

/* attn_bwd_delta walks all Z H N_CTX rows. */
static bool delta_fits(const IrFunc *f, const void *ctx)
{
    const AttnSize *s = ctx;
    int64_t d = host_meta(f, "D"), br = host_meta(f, "BR");
    int64_t rows = (int64_t)s->z * s->h * s->n;
    return (d == -1 || d == s->d) && br > 0 && rows % br == 0;
}

static int attn_pick(const IrModule *m, const AttnSize *s, AttnKernels *k)
{
    k->fwd = host_pick(m, "attn_fwd", attn_fits, s);
    k->delta = host_pick(m, "attn_bwd_delta", delta_fits, s);
    k->dkdv = host_pick(m, "attn_bwd_dkdv", attn_fits, s);
    k->fused = k->dkdv && k->dkdv->nparams == 12;
    k->dq = host_pick(m, "attn_bwd_dq", k->fused ? delta_fits : attn_fits, s);
    if (!k->fwd || !k->delta || !k->dkdv || !k->dq) return 1;
    if (host_meta(k->fwd, "BR") <= 0 || host_meta(k->delta, "BR") <= 0 ||
        host_meta(k->dkdv, "BC") <= 0 || host_meta(k->dq, "BR") <= 0) {
        fprintf(stderr, "attention: a kernel lacks the BR/BC meta-parameter its grid needs\n");
        return 1;
    }
    if (!host_signature(k->fwd, attn_sig_fwd) ||
        !host_signature(k->delta, k->fused ? attn_sig_delta_fused : attn_sig_delta) ||
        !host_signature(k->dkdv, k->fused ? attn_sig_dkdv_fused : attn_sig_dkdv) ||
        !host_signature(k->dq, k->fused ? attn_sig_dq_fused : attn_sig_dq))
        return 1;
    return 0;
}

/* ---- the run: four launches ---- */

/* The forward's grid: a block a (row block, head), or for a persistent
 * config (PERSISTENT = p > 0) p blocks a processor, where there are fewer
 * than tiles; its kernel covers every tile from any grid. */
static void attn_fwd_grid(const HostLauncher *l, const IrFunc *f, const AttnSize *s, int grid[2])
{
    int64_t tiles = host_cdiv(s->n, host_meta(f, "BR")), heads = (int64_t)s->z * s->h;
    int64_t p = host_meta(f, "PERSISTENT"), blocks = p > 0 ? p * l->processors : 0;
    grid[0] = (int)tiles, grid[1] = (int)heads;
    if (blocks > 0 && blocks < tiles * heads) grid[0] = (int)blocks, grid[1] = 1;
}

/* The fused backward (see AttnKernels), DQacc poisoned before the delta
 * kernel zeroes it. */
static int attn_run_fused_backward(const HostLauncher *l, const AttnKernels *k, const AttnSize *s, IrArg *a)
{
    enum { Q, K, V, DOUT, O, LSE, DELTA, DQ, DK, DV, N, SCALE, CAUSAL };
    int64_t rows = (int64_t)s->z * s->h * s->n, heads = (int64_t)s->z * s->h;
    float *acc = host_alloc(DT_F32, (size_t)rows * (size_t)s->d);
    host_poison(DT_F32, acc, (size_t)rows * (size_t)s->d);
    IrArg dqacc = host_tensor2(acc, rows, s->d);
    IrArg delta_args[] = {a[O], a[DOUT], a[DELTA], dqacc};
    IrArg dkdv_args[] = {a[Q], a[K], a[V], a[DOUT], a[LSE], a[DELTA], a[DK], a[DV], dqacc, a[N], a[SCALE], a[CAUSAL]};
    IrArg dq_args[] = {dqacc, a[DQ], a[SCALE]};
    int failed = host_launch(l, k->delta, delta_args, 4, rows / host_meta(k->delta, "BR"), 1, 1) ||
                 host_launch(l, k->dkdv, dkdv_args, 12, s->n / host_meta(k->dkdv, "BC"), heads, 1) ||
                 host_launch(l, k->dq, dq_args, 3, rows / host_meta(k->dq, "BR"), 1, 1);
    free(acc);
    return failed;
}

static int attn_run(const HostLauncher *l, const AttnKernels *k, const AttnSize *s, bool causal,
                    AttnBufs *b)
{
    int64_t rows = (int64_t)s->z * s->h * s->n, heads = (int64_t)s->z * s->h;
    IrArg q = host_tensor2(b->q, rows, s->d), kk = host_tensor2(b->k, rows, s->d);
    IrArg v = host_tensor2(b->v, rows, s->d), dout = host_tensor2(b->dout, rows, s->d);
    IrArg o = host_tensor2(b->o, rows, s->d), lse = host_tensor2(b->lse, rows, 1);
    IrArg delta = host_tensor2(b->delta, rows, 1);
    IrArg dq = host_tensor2(b->dq, rows, s->d), dk = host_tensor2(b->dk, rows, s->d);
    IrArg dv = host_tensor2(b->dv, rows, s->d);
    IrArg n = host_i32(s->n), scale = host_f32((float)s->scale), c = host_i32(causal);

    IrArg fwd_args[] = {q, kk, v, o, lse, n, scale, c};
    int fg[2];
    attn_fwd_grid(l, k->fwd, s, fg);
    if (host_launch(l, k->fwd, fwd_args, 8, fg[0], fg[1], 1)) return 1;
    if (k->fused) {
        IrArg all[] = {q, kk, v, dout, o, lse, delta, dq, dk, dv, n, scale, c};
        return attn_run_fused_backward(l, k, s, all);
    }
    IrArg delta_args[] = {o, dout, delta};
    if (host_launch(l, k->delta, delta_args, 3, rows / host_meta(k->delta, "BR"), 1, 1)) return 1;
    IrArg dkdv_args[] = {q, kk, v, dout, lse, delta, dk, dv, n, scale, c};
    if (host_launch(l, k->dkdv, dkdv_args, 11, s->n / host_meta(k->dkdv, "BC"), heads, 1)) return 1;
    IrArg dq_args[] = {q, kk, v, dout, lse, delta, dq, n, scale, c};
    if (host_launch(l, k->dq, dq_args, 10, host_cdiv(s->n, host_meta(k->dq, "BR")), heads, 1)) return 1;
    return 0;
}

#endif
