/* embedding_bag_check.c: every config of embedding_bag.ph against a plain C
 * reference in double: bags of 0 to 70 indices (more than a block's BJ, and
 * empty ones), a column count that is not a multiple of BD, and indices
 * outside the table (negative, and at or past V), which add nothing. */
#include "host.h"

enum { V = 500, D = 100, B = 23 };

/* Offsets of B bags of random lengths; returns the number of indices. */
static int64_t make_offsets(int32_t *off, HostRng *r)
{
    off[0] = 0;
    for (int b = 0; b < B; b++) off[b + 1] = off[b] + (b % 7 == 3 ? 0 : (int32_t)(host_uniform(r) * 71));
    return off[B];
}

static void reference(const int32_t *idx, const float *w, const int32_t *off, const float *e, double *o)
{
    for (int b = 0; b < B; b++)
        for (int c = 0; c < D; c++) {
            double sum = 0;
            for (int32_t j = off[b]; j < off[b + 1]; j++)
                if (idx[j] >= 0 && idx[j] < V) sum += (double)w[j] * e[(int64_t)idx[j] * D + c];
            o[b * D + c] = sum;
        }
}

static bool check_config(const IrFunc *f, HostRng *r)
{
    if (!host_signature(f, "i32:1 f32:1 i32:1 f32:2 f32:2")) return false;
    int32_t off[B + 1];
    int64_t n = make_offsets(off, r);
    int32_t *idx = host_alloc(DT_I32, (size_t)n + 1);
    float *w = host_alloc(DT_F32, (size_t)n + 1), *e = host_alloc(DT_F32, (size_t)V * D), *o = host_alloc(DT_F32, (size_t)B * D);
    for (int64_t j = 0; j < n; j++) {
        double u = host_uniform(r);
        idx[j] = u < 0.05 ? -1 - (int32_t)(u * 100) : u > 0.95 ? V + (int32_t)((u - 0.95) * 100) : (int32_t)(u * V);
    }
    host_fill_normal(DT_F32, w, (size_t)n, 1.0, 0.5, r);
    host_fill_normal(DT_F32, e, (size_t)V * D, 0.0, 1.0, r);
    host_poison(DT_F32, o, (size_t)B * D);
    double *ref = xmalloc(sizeof *ref * B * D);
    reference(idx, w, off, e, ref);
    IrArg args[] = {host_tensor1(idx, n ? n : 1), host_tensor1(w, n ? n : 1), host_tensor1(off, B + 1),
                    host_tensor2(e, V, D), host_tensor2(o, B, D)};
    bool ok = false;
    if (!host_launch(host_current(), f, args, 5, B, host_cdiv(D, host_meta(f, "BD")), 1)) {
        char name[96];
        snprintf(name, sizeof name, "%s (%lld indices) O", f->name, (long long)n);
        ok = host_check(name, DT_F32, o, ref, (size_t)B * D, 1e-4, 1e-5);
    }
    free(idx);
    free(w);
    free(e);
    free(o);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "embedding_bag.ph", &status);
    if (!m) return status;
    HostRng r;
    host_rng_seed(&r, 5);
    int failed = 0, runs = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->kernel, "embedding_bag")) {
            runs++;
            failed += !check_config(m->funcs[i], &r);
        }
    printf("embedding_bag: %d of %d configs ok (atol 1e-4, rtol 1e-5)\n", runs - failed, runs);
    return host_finish(m, failed || !runs);
}
