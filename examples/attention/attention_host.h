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

typedef struct { IrFunc *fwd, *delta, *dkdv, *dq; } AttnKernels;

static const char *const attn_sig_fwd = "f16:2 f16:2 f16:2 f16:2 f32:2 i32 f32 i32";
static const char *const attn_sig_delta = "f16:2 f16:2 f32:2";
static const char *const attn_sig_dkdv = "f16:2 f16:2 f16:2 f16:2 f32:2 f32:2 f16:2 f16:2 i32 f32 i32";
static const char *const attn_sig_dq = "f16:2 f16:2 f16:2 f16:2 f32:2 f32:2 f16:2 i32 f32 i32";

/* ---- choosing configs ---- */

/* A config fits when its D is the head dim and its blocks tile N_CTX (the
 * grids divide by them, and attn_fwd promises R is a multiple of BR). */
static bool attn_fits(const IrFunc *f, const void *ctx)
{
    const AttnSize *s = ctx;
    int64_t d = host_meta(f, "D"), br = host_meta(f, "BR"), bc = host_meta(f, "BC");
    if (d != -1 && d != s->d) return false;
    if (br > 0 && s->n % br) return false;
    if (bc > 0 && s->n % bc) return false;
    return true;
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
    k->dq = host_pick(m, "attn_bwd_dq", attn_fits, s);
    if (!k->fwd || !k->delta || !k->dkdv || !k->dq) return 1;
    if (host_meta(k->fwd, "BR") <= 0 || host_meta(k->delta, "BR") <= 0 ||
        host_meta(k->dkdv, "BC") <= 0 || host_meta(k->dq, "BR") <= 0) {
        fprintf(stderr, "attention: a kernel lacks the BR/BC meta-parameter its grid needs\n");
        return 1;
    }
    if (!host_signature(k->fwd, attn_sig_fwd) || !host_signature(k->delta, attn_sig_delta) ||
        !host_signature(k->dkdv, attn_sig_dkdv) || !host_signature(k->dq, attn_sig_dq))
        return 1;
    return 0;
}

/* ---- the seed's run: four launches ---- */

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
    if (host_launch(l, k->fwd, fwd_args, 8, s->n / host_meta(k->fwd, "BR"), heads, 1)) return 1;
    IrArg delta_args[] = {o, dout, delta};
    if (host_launch(l, k->delta, delta_args, 3, rows / host_meta(k->delta, "BR"), 1, 1)) return 1;
    IrArg dkdv_args[] = {q, kk, v, dout, lse, delta, dk, dv, n, scale, c};
    if (host_launch(l, k->dkdv, dkdv_args, 11, s->n / host_meta(k->dkdv, "BC"), heads, 1)) return 1;
    IrArg dq_args[] = {q, kk, v, dout, lse, delta, dq, n, scale, c};
    if (host_launch(l, k->dq, dq_args, 10, s->n / host_meta(k->dq, "BR"), heads, 1)) return 1;
    return 0;
}

#endif
