/* varlen_attention_check.c: every config of varlen_attention.ph against a
 * plain C reference in double, causal and not. The batch packs sequences
 * of random lengths: one of a single token, an empty one, some shorter
 * than a block, some not a multiple of one, one of exactly two blocks of
 * 32; packed tokens past the last sequence are padding, NaN in Q, K and V,
 * so a read of one shows. O is poisoned before each launch: every row of a
 * sequence must match the reference and every padding row keep its poison.
 * Then each sequence runs alone (CU a two-element view, one sequence in
 * the grid) into a freshly poisoned O, so a block writing into a
 * neighbouring sequence's rows shows whatever order the blocks run in. */
#include "host.h"

enum { B = 8, H = 2, D = 64, HD = H * D, PAD = 5, MAXLEN = 160 };

typedef struct {
    int32_t cu[B + 1];
    int total, tokens, maxlen;   /* tokens: total plus the padding */
    uint16_t *q, *k, *v;
} Batch;

/* Lengths (fixed edge cases and random ones), their prefix sums, and the
 * packed tensors: f16 normals, the padding NaN. */
static void make_batch(Batch *bt, HostRng *r)
{
    int lens[B] = {1, 0, 64, 17, 0, 0, 0, 0};
    lens[4] = 33 + (int)(host_uniform(r) * 30);                 /* one block and a part */
    lens[5] = 2 + (int)(host_uniform(r) * 30);                  /* under a block */
    lens[6] = 65 + (int)(host_uniform(r) * (MAXLEN - 65));      /* several blocks */
    lens[7] = 1 + (int)(host_uniform(r) * MAXLEN);
    bt->cu[0] = 0;
    bt->maxlen = 0;
    for (int b = 0; b < B; b++) {
        bt->cu[b + 1] = bt->cu[b] + lens[b];
        if (lens[b] > bt->maxlen) bt->maxlen = lens[b];
    }
    bt->total = bt->cu[B];
    bt->tokens = bt->total + PAD;
    size_t n = (size_t)bt->tokens * HD, live = (size_t)bt->total * HD;
    bt->q = host_alloc(DT_F16, n);
    bt->k = host_alloc(DT_F16, n);
    bt->v = host_alloc(DT_F16, n);
    host_fill_normal(DT_F16, bt->q, live, 0.0, 1.0, r);
    host_fill_normal(DT_F16, bt->k, live, 0.0, 1.0, r);
    host_fill_normal(DT_F16, bt->v, live, 0.0, 1.0, r);
    for (size_t i = live; i < n; i++) bt->q[i] = bt->k[i] = bt->v[i] = 0x7e00;   /* NaN: padding */
}

static double at(const uint16_t *x, int t, int h, int d) { return ph_f16_to_f32(x[(size_t)t * HD + (size_t)h * D + (size_t)d]); }

/* o[t, h, :] for every token of every sequence; the padding rows untouched. */
static void reference(const Batch *bt, double scale, int causal, double *o)
{
    double *sc = xmalloc(sizeof *sc * MAXLEN);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < bt->cu[b + 1] - bt->cu[b]; i++) {
                int t = bt->cu[b] + i, nk = causal ? i + 1 : bt->cu[b + 1] - bt->cu[b];
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < nk; j++) {
                    double dot = 0;
                    for (int d = 0; d < D; d++) dot += at(bt->q, t, h, d) * at(bt->k, bt->cu[b] + j, h, d);
                    sc[j] = dot * scale;
                    mx = fmax(mx, sc[j]);
                }
                for (int j = 0; j < nk; j++) sum += (sc[j] = exp(sc[j] - mx));
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j < nk; j++) acc += sc[j] * at(bt->v, bt->cu[b] + j, h, d);
                    o[(size_t)t * HD + (size_t)h * D + (size_t)d] = acc / sum;
                }
            }
    free(sc);
}

/* The rows first .. last - 1 of o against ref, every other row of o still
 * poison; prints one line. */
static bool check_rows(const char *label, const uint16_t *o, const double *ref, int tokens, int first, int last)
{
    size_t kept = 0, lo = (size_t)first * HD, hi = (size_t)last * HD;
    for (size_t i = 0; i < (size_t)tokens * HD; i++)
        if ((i < lo || i >= hi) && !host_is_poison(DT_F16, o, i)) {
            if (!kept) printf("%s: element %zu (token %zu) outside the rows %d .. %d written\n", label, i, i / HD, first, last - 1);
            kept++;
        }
    bool ok = host_check(label, DT_F16, o + lo, ref + lo, hi - lo, 4e-3, 1e-2);
    if (kept) printf("%s: FAIL (%zu elements outside the sequence changed)\n", label, kept);
    return ok && !kept;
}

static bool run(const IrFunc *f, const Batch *bt, const int32_t *cu, int nseq, int causal, uint16_t *o)
{
    float scale = 0.125f;
    host_poison(DT_F16, o, (size_t)bt->tokens * HD);
    IrArg args[] = {host_tensor2(bt->q, bt->tokens, HD), host_tensor2(bt->k, bt->tokens, HD), host_tensor2(bt->v, bt->tokens, HD),
                    host_tensor1((void *)cu, nseq + 1), host_tensor2(o, bt->tokens, HD), host_f32(scale), host_i32(causal)};
    int64_t blocks = host_cdiv(bt->maxlen, host_meta(f, "BM"));
    return !host_launch(host_current(), f, args, 7, blocks, nseq, H);
}

static bool check_config(const IrFunc *f, HostRng *r)
{
    if (!host_signature(f, "f16:2 f16:2 f16:2 i32:1 f16:2 f32 i32") || host_meta(f, "D") != D) return false;
    Batch bt;
    make_batch(&bt, r);
    size_t n = (size_t)bt.tokens * HD;
    uint16_t *o = host_alloc(DT_F16, n);
    double *ref = xmalloc(sizeof *ref * n);
    bool ok = true;
    for (int causal = 0; causal < 2; causal++) {
        char label[160];
        reference(&bt, 0.125, causal, ref);
        snprintf(label, sizeof label, "%s%s (%d tokens, longest %d)", f->name, causal ? " causal" : "", bt.total, bt.maxlen);
        ok &= run(f, &bt, bt.cu, B, causal, o) && check_rows(label, o, ref, bt.tokens, 0, bt.total);
        for (int b = 0; b < B; b++) {
            snprintf(label, sizeof label, "%s%s, sequence %d alone (tokens %d .. %d)", f->name, causal ? " causal" : "", b, bt.cu[b], bt.cu[b + 1] - 1);
            ok &= run(f, &bt, bt.cu + b, 1, causal, o) && check_rows(label, o, ref, bt.tokens, bt.cu[b], bt.cu[b + 1]);
        }
    }
    free(bt.q);
    free(bt.k);
    free(bt.v);
    free(o);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "varlen_attention.ph", &status);
    if (!m) return status;
    HostRng r;
    host_rng_seed(&r, 11);
    int failed = 0, runs = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, "varlen_fwd")) {
            runs++;
            failed += !check_config(m->funcs[i], &r);
        }
    printf("varlen_attention: %d of %d configs ok (atol 4e-3, rtol 1e-2)\n", runs - failed, runs);
    return host_finish(m, failed || !runs);
}
