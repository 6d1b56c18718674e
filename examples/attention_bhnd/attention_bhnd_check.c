/* attention_bhnd_check.c: every config of attention_bhnd.ph against a
 * reference in double, on views as PyTorch hands them over: Q a contiguous
 * [B, H, N, D] tensor; K and V the [B, N, H, D] tensors a projection
 * writes, seen as [B, H, N, D] (k.transpose(1, 2): strides N H D, D, H D,
 * 1); O written into a [B, N, H, D] tensor; and for attn_bhnd_kt the keys
 * as a [B, H, D, N] view of a contiguous [B, H, N, D] tensor
 * (k.transpose(2, 3): the last stride D). N = 100 is no multiple of the
 * blocks; causal and not. The outputs start poisoned, so an element not
 * written, or written outside its place, shows. */
#include "host.h"

enum { B = 2, H = 3, N = 100, D = 64 };

/* Q, K, V as [B, H, N, D] views of their memory: element (b, h, n, d)
 * at b * st[0] + h * st[1] + n * st[2] + d * st[3]. */
typedef struct { const uint16_t *p; int64_t st[4]; } View;

static double at(const View *v, int b, int h, int n, int d)
{
    return ph_f16_to_f32(v->p[b * v->st[0] + h * v->st[1] + n * v->st[2] + d * v->st[3]]);
}

/* o[b, h, n, d] (row-major [B, H, N, D]) = softmax(q k^T * scale) v. */
static void reference(const View *q, const View *k, const View *v, double scale, bool causal, double *o)
{
    double s[N];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                int end = causal ? i + 1 : N;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < end; j++) {
                    double dot = 0;
                    for (int d = 0; d < D; d++) dot += at(q, b, h, i, d) * at(k, b, h, j, d);
                    s[j] = dot * scale;
                    mx = fmax(mx, s[j]);
                }
                for (int j = 0; j < end; j++) sum += (s[j] = exp(s[j] - mx));
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j < end; j++) acc += s[j] * at(v, b, h, j, d);
                    o[((b * H + h) * N + i) * D + d] = acc / sum;
                }
            }
}

/* The reference's [B, H, N, D] as the [B, N, H, D] tensor attn_bhnd writes. */
static void to_bnhd(const double *bhnd, double *bnhd)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                for (int d = 0; d < D; d++) bnhd[((b * N + n) * H + h) * D + d] = bhnd[((b * H + h) * N + n) * D + d];
}

static const size_t ELEMS = (size_t)B * H * N * D;

static bool check(const IrFunc *f, const uint16_t *q, const uint16_t *k, const uint16_t *v, bool causal)
{
    const float scale = 0.125f;
    const int64_t bhnd[4] = {B, H, N, D}, bhdn[4] = {B, H, D, N}, bnhd[4] = {B, N, H, D};
    const int64_t contiguous[4] = {H * N * D, N * D, D, 1};
    const int64_t heads_inside[4] = {N * H * D, D, H * D, 1};   /* [B, N, H, D] memory as [B, H, N, D] */
    const int64_t keys_last[4] = {H * N * D, N * D, 1, D};      /* [B, H, N, D] memory as [B, H, D, N] */
    bool kt = !strcmp(f->kernel, "attn_bhnd_kt");
    /* attn_bhnd: K and V are [B, N, H, D] memory; attn_bhnd_kt: K is [B, H, N, D] memory seen as [B, H, D, N] */
    View qv = {q, {contiguous[0], contiguous[1], contiguous[2], contiguous[3]}};
    View kv = kt ? (View){k, {contiguous[0], contiguous[1], contiguous[2], contiguous[3]}}
                 : (View){k, {heads_inside[0], heads_inside[1], heads_inside[2], heads_inside[3]}};
    View vv = kt ? (View){v, {contiguous[0], contiguous[1], contiguous[2], contiguous[3]}}
                 : (View){v, {heads_inside[0], heads_inside[1], heads_inside[2], heads_inside[3]}};
    double *ref = xmalloc(sizeof *ref * ELEMS), *want = xmalloc(sizeof *want * ELEMS);
    reference(&qv, &kv, &vv, scale, causal, ref);
    if (!kt) to_bnhd(ref, want);
    else memcpy(want, ref, sizeof *ref * ELEMS);
    uint16_t *o = host_alloc(DT_F16, ELEMS);
    host_poison(DT_F16, o, ELEMS);
    IrArg args[6] = {host_tensor_view((void *)q, 4, bhnd, contiguous)};
    int nargs;
    if (kt) {
        args[1] = host_tensor_view((void *)k, 4, bhdn, keys_last);
        args[2] = host_tensor_view((void *)v, 4, bhnd, contiguous);
        args[3] = host_tensor_view(o, 4, bhnd, contiguous);
        args[4] = host_f32(scale);
        nargs = 5;
    } else {
        args[1] = host_tensor_view((void *)k, 4, bhnd, heads_inside);
        args[2] = host_tensor_view((void *)v, 4, bhnd, heads_inside);
        args[3] = host_tensor_view(o, 4, bnhd, (const int64_t[4]){N * H * D, H * D, D, 1});
        args[4] = host_f32(scale);
        args[5] = host_i32(causal);
        nargs = 6;
    }
    bool ok = false;
    char name[300];
    snprintf(name, sizeof name, "%s%s", f->name, causal ? " (causal)" : "");
    if (!host_launch(host_current(), f, args, nargs, host_cdiv(N, host_meta(f, "BM")), H, B))
        ok = host_check(name, DT_F16, o, want, ELEMS, 1e-2, 1e-2);
    free(o);
    free(ref);
    free(want);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "attention_bhnd.ph", &status);
    if (!m) return status;
    HostRng r;
    host_rng_seed(&r, 11);
    uint16_t *q = host_alloc(DT_F16, ELEMS), *k = host_alloc(DT_F16, ELEMS), *v = host_alloc(DT_F16, ELEMS);
    host_fill_normal(DT_F16, q, ELEMS, 0.0, 1.0, &r);
    host_fill_normal(DT_F16, k, ELEMS, 0.0, 1.0, &r);
    host_fill_normal(DT_F16, v, ELEMS, 0.0, 1.0, &r);
    int failed = 0, runs = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        bool kt = !strcmp(f->kernel, "attn_bhnd_kt");
        if (!host_signature(f, kt ? "f16:4 f16:4 f16:4 f16:4 f32" : "f16:4 f16:4 f16:4 f16:4 f32 i32")) {
            failed++;
            continue;
        }
        for (int causal = 0; causal < (kt ? 1 : 2); causal++) {
            runs++;
            failed += !check(f, q, k, v, causal);
        }
    }
    printf("attention_bhnd: %d of %d runs ok (atol 1e-2, rtol 1e-2)\n", runs - failed, runs);
    free(q);
    free(k);
    free(v);
    return host_finish(m, failed || !runs);
}
