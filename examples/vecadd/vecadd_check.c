/* vecadd_check.c: runs every config of vecadd.ph at lengths that are not
 * multiples of its block and checks each element of z = x + y exactly
 * (f32 addition rounds the same everywhere), and that the guard elements
 * allocated past the end of Z are never written. */
#include "host.h"

enum { GUARD = 300 };   /* more than a block, so a store past n cannot skip it */

/* Returns whether the run matched; prints one line. */
static bool check_length(const HostLauncher *l, const IrFunc *f, int64_t n, HostRng *r)
{
    float *x = host_alloc(DT_F32, (size_t)n), *y = host_alloc(DT_F32, (size_t)n);
    float *z = host_alloc(DT_F32, (size_t)n + GUARD);
    double *ref = xmalloc((size_t)n * sizeof *ref);
    host_fill_normal(DT_F32, x, (size_t)n, 0.0, 1.0, r);
    host_fill_normal(DT_F32, y, (size_t)n, 0.0, 1.0, r);
    host_poison(DT_F32, z, (size_t)n + GUARD);
    for (int64_t i = 0; i < n; i++) ref[i] = (float)(x[i] + y[i]);

    int64_t block = host_meta(f, "BLOCK");
    IrArg args[] = {host_tensor1(x, n), host_tensor1(y, n), host_tensor1(z, n)};
    bool ok = false;
    char name[96];
    snprintf(name, sizeof name, "%s n %lld z", f->name, (long long)n);
    if (!host_launch(l, f, args, 3, host_cdiv(n, block), 1, 1)) {
        ok = host_check(name, DT_F32, z, ref, (size_t)n, 0, 0);
        size_t touched = 0;
        for (size_t i = (size_t)n; i < (size_t)n + GUARD; i++) touched += !host_is_poison(DT_F32, z, i);
        printf("%s n %lld guard %s (%zu of %d written past the end)\n", f->name, (long long)n,
               touched ? "FAIL" : "ok", touched, GUARD);
        ok = ok && !touched;
    }
    free(x);
    free(y);
    free(z);
    free(ref);
    return ok;
}

int main(int argc, char **argv)
{
    int status;
    IrModule *m = host_start(argc, argv, "vecadd.ph", &status);
    if (!m) return status;
    static const int64_t lengths[] = {1000, 1, 128, 4097};
    HostRng r;
    host_rng_seed(&r, 1);
    int failed = 0, runs = 0;
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        if (strcmp(f->kernel, "vecadd")) continue;
        if (!host_signature(f, "f32:1 f32:1 f32:1") || host_meta(f, "BLOCK") <= 0) {
            failed++;
            runs++;
            continue;
        }
        for (size_t j = 0; j < sizeof lengths / sizeof *lengths; j++, runs++)
            failed += !check_length(host_current(), f, lengths[j], &r);
    }
    if (!runs) fprintf(stderr, "vecadd: no config of kernel vecadd\n");
    printf("vecadd: %d of %d runs ok (exact)\n", runs - failed, runs);
    return host_finish(m, failed || !runs);
}
