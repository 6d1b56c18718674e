/* paged_attention_check.c: every config of paged_attention.ph against a
 * plain C reference in double: sequences of 0 to 200 tokens (one token, a
 * whole number of pages, a part page) whose pages are scattered through
 * the pool in random order, unused block-table entries -1; the pool's
 * pages no sequence uses are poisoned, so a read of one shows. */
#include "host.h"

enum { S = 9, H = 3, D = 64, HD = H * D, MAXLEN = 200 };

typedef struct {
    int page, maxp, npages;
    int32_t lens[S], *bt;
    uint16_t *q, *k, *v;
} Cache;

/* Lengths, a block table over a shuffled pool with spare pages, and the
 * cache's contents (f16 normals; spare pages NaN). */
static void make_cache(Cache *c, int page, HostRng *r)
{
    static const int32_t fixed[S] = {1, 0, 200, 37, 64, 5, 128, 99, 16};
    c->page = page;
    c->maxp = (MAXLEN + page - 1) / page;
    c->npages = S * c->maxp + 3;
    c->bt = host_alloc(DT_I32, (size_t)S * c->maxp);
    int *pool = xmalloc(sizeof *pool * (size_t)c->npages);
    for (int i = 0; i < c->npages; i++) pool[i] = i;
    for (int i = c->npages - 1; i > 0; i--) {
        int j = (int)(host_uniform(r) * (i + 1)), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    size_t tokens = (size_t)c->npages * page;
    c->q = host_alloc(DT_F16, (size_t)S * HD);
    c->k = host_alloc(DT_F16, tokens * HD);
    c->v = host_alloc(DT_F16, tokens * HD);
    host_fill_normal(DT_F16, c->q, (size_t)S * HD, 0.0, 1.0, r);
    for (size_t i = 0; i < tokens * HD; i++) c->k[i] = c->v[i] = 0x7e00;   /* NaN: a page no one uses */
    int next = 0;
    for (int s = 0; s < S; s++) {
        c->lens[s] = fixed[s];
        for (int p = 0; p < c->maxp; p++) {
            bool used = p * page < c->lens[s];
            c->bt[s * c->maxp + p] = used ? pool[next++] : -1;
            if (!used) continue;
            size_t at = (size_t)c->bt[s * c->maxp + p] * page * HD;
            host_fill_normal(DT_F16, c->k + at, (size_t)page * HD, 0.0, 1.0, r);
            host_fill_normal(DT_F16, c->v + at, (size_t)page * HD, 0.0, 1.0, r);
        }
    }
    free(pool);
}

static void reference(const Cache *c, double scale, double *o)
{
    double *sc = xmalloc(sizeof *sc * MAXLEN);
    for (int s = 0; s < S; s++)
        for (int h = 0; h < H; h++) {
            int n = c->lens[s];
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < n; t++) {
                size_t row = ((size_t)c->bt[s * c->maxp + t / c->page] * c->page + (size_t)(t % c->page)) * HD + (size_t)h * D;
                double dot = 0;
                for (int d = 0; d < D; d++) dot += ph_f16_to_f32(c->q[s * HD + h * D + d]) * ph_f16_to_f32(c->k[row + d]);
                sc[t] = dot * scale;
                mx = fmax(mx, sc[t]);
            }
            for (int t = 0; t < n; t++) sum += (sc[t] = exp(sc[t] - mx));
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int t = 0; t < n; t++) {
                    size_t row = ((size_t)c->bt[s * c->maxp + t / c->page] * c->page + (size_t)(t % c->page)) * HD + (size_t)h * D;
                    acc += sc[t] * ph_f16_to_f32(c->v[row + d]);
                }
                o[s * HD + h * D + d] = n ? acc / sum : 0.0;
            }
        }
    free(sc);
}

static bool check_config(const IrFunc *f, HostRng *r)
{
    if (!host_signature(f, "f16:2 f16:2 f16:2 i32:2 i32:1 f32:2 f32") || host_meta(f, "D") != D) return false;
    Cache c;
    make_cache(&c, (int)host_meta(f, "PAGE"), r);
    float scale = 0.125f, *o = host_alloc(DT_F32, (size_t)S * HD);
    host_poison(DT_F32, o, (size_t)S * HD);
    double *ref = xmalloc(sizeof *ref * S * HD);
    reference(&c, scale, ref);
    int64_t tokens = (int64_t)c.npages * c.page;
    IrArg args[] = {host_tensor2(c.q, S, HD), host_tensor2(c.k, tokens, HD), host_tensor2(c.v, tokens, HD),
                    host_tensor2(c.bt, S, c.maxp), host_tensor1(c.lens, S), host_tensor2(o, S, HD), host_f32(scale)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 7, S, H, 1)) ok = host_check(f->name, DT_F32, o, ref, (size_t)S * HD, 2e-3, 5e-3);
    free(c.bt);
    free(c.q);
    free(c.k);
    free(c.v);
    free(o);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "paged_attention.ph", &status);
    if (!m) return status;
    HostRng r;
    host_rng_seed(&r, 6);
    int failed = 0, runs = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, "paged_decode")) {
            runs++;
            failed += !check_config(m->funcs[i], &r);
        }
    printf("paged_attention: %d of %d configs ok (atol 2e-3, rtol 5e-3)\n", runs - failed, runs);
    return host_finish(m, failed || !runs);
}
