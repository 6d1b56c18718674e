/* phgen_i64.c: i64 in the random programs (PhgenOptions.pct_i64): in place
 * of a float-to-i32 conversion, a round trip through i64 arithmetic past
 * 2^32 (some reading an i64 input), and i64 outputs holding values past
 * 2^32. Every draw comes from the i64 stream (g->rng_i64), so the rest of a
 * seed's program is the one it was, and with pct_i64 0 (phgen_dump) nothing
 * is drawn at all. Every value is an exact integer: each back end must give
 * the interpreter's bits. */
#include "phgen_gen.h"

/* A value from 0 to 2^32 - 1 of shape sh: an i64 input's magnitude or a literal. */
static char *low_word(Gen *g, Shape sh)
{
    Ex in;
    if (sh.rank > 0 && chance(g, 50) && load_of(g, sh, DT_I64, &in)) {
        feature(g, PF_I64_TENSOR);
        return pfmt(g->p, "ph.abs(%s)", in.t);
    }
    return pfmt(g->p, "%lld", (long long)rnd(g, 1 << 30) * 3);
}

Ex phgen_i64_round_trip(Gen *g, Ex a)
{
    uint64_t saved = g->rng;
    g->rng = g->rng_i64;
    char *x = pfmt(g->p, "ph.i64(%s * 4.0)", a.t), *t;   /* exact: |a * 4| <= ICAP */
    int form = rnd(g, 4);
    if (form == 0) {          /* the low word added below the high one, floored away */
        t = pfmt(g->p, "ph.i32((%s * 4294967296 + %s) // 4294967296)", x, low_word(g, a.sh));
    } else if (form == 1) {   /* 2x - x, the product past 2^32 */
        t = pfmt(g->p, "ph.i32(%s * 6000000000 // 3000000000 - %s)", x, x);
    } else if (form == 2) {   /* a remainder: (x * 2^33 + w) % 2^33 is w, then x back by its own floor */
        char *w = low_word(g, a.sh);
        t = pfmt(g->p, "ph.i32((%s * 8589934592 + %s) %% 8589934592 - %s + %s)", x, w, w, x);
    } else {                  /* a compare and a select of i64 values, past i32 on both sides */
        t = pfmt(g->p, "ph.i32(ph.where(%s * 3000000000 >= -5000000000, %s, ph.min(%s, 5000000000)))", x, x, x);
    }
    g->rng_i64 = g->rng;
    g->rng = saved;
    feature(g, PF_I64_ARITH);
    return ex(t, DT_I32, a.sh, true, a.mag * 4);
}

bool phgen_i64_output(Gen *g)
{
    if (rnd_i64(g, 100) >= g->o.pct_i64) return false;
    feature(g, PF_I64_TENSOR);
    return true;
}

const char *phgen_i64_value(Gen *g, const char *value)
{
    /* past 2^32, exact: |value| <= ICAP, so the product stays below 2^47 */
    return pfmt(g->p, "ph.i64(%s) * 3000000000 + %d", value, rnd_i64(g, 1000) - 500);
}
