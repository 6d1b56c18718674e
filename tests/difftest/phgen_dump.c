/* phgen_dump: writes the generator's programs for seeds FIRST..FIRST+COUNT-1
 * as DIR/seed-S.ph, so that tools outside C (tests/ptx/identical.sh) can
 * compile the same random programs on every run: the programs of the
 * corpus recorded in tests/ptx/hashes.txt, without the math built-ins,
 * elements, gathers and scatters, the 8-bit types, masked loads and
 * stores, unrolled loops and helpers, rank-4 views and i64, each generated
 * from a stream of its own (PhgenOptions.pct_math_more, pct_index,
 * pct_types, pct_mask, pct_flow, pct_strided, pct_i64).
 *
 *   phgen_dump DIR COUNT [FIRST]   (FIRST defaults to 1) */
#include "phgen.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: phgen_dump DIR COUNT [FIRST]\n");
        return 2;
    }
    long count = strtol(argv[2], NULL, 0);
    unsigned long long first = argc == 4 ? strtoull(argv[3], NULL, 0) : 1;
    /* the programs tests/ptx/hashes.txt recorded, from before the newer math built-ins and indexing */
    PhgenOptions opt;
    phgen_default_options(&opt);
    opt.pct_math_more = 0;
    opt.pct_index = 0;
    opt.pct_types = 0;
    opt.pct_mask = 0;
    opt.pct_flow = 0;
    opt.pct_strided = 0;
    opt.pct_while = 0;
    opt.pct_assert = 0;
    opt.pct_i64 = 0;
    opt.pct_warp_specialize = 0;
    opt.pct_atomic = 0;
    for (long i = 0; i < count; i++) {
        unsigned long long seed = first + (unsigned long long)i;
        PhgenProgram *p = phgen_generate(seed, &opt);
        char *src = phgen_source(p), path[4096];
        snprintf(path, sizeof path, "%s/seed-%llu.ph", argv[1], seed);
        FILE *f = fopen(path, "w");
        if (!f || fputs(src, f) == EOF || fclose(f)) {
            perror(path);
            return 1;
        }
        free(src);
        phgen_free(p);
    }
    return 0;
}
