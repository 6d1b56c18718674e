/* phgen_mask.c: masked loads and stores for the generator (ph.load with
 * mask= and other=, ph.store with mask=). Every draw comes from the masks'
 * own stream (rnd_mask), so with PhgenOptions.pct_mask 0 a seed gives the
 * program it gave before masks existed. A mask is made of iotas and block
 * indices only, so it is exact on every back end; it is a scalar, a row or
 * column pattern, or an affine compare of both iotas (the masks pass's
 * case, mixed on some tiles and uniform on others). */
#include "phgen_gen.h"

/* An axis of sh whose extent is not 1 (-1: none); rank 1 is axis 1. */
static int some_axis(Gen *g, Shape sh)
{
    if (sh.rank == 1) return 1;
    bool rows = sh.rank == 2 && sh.e[0] != E1, cols = sh.rank == 2 && sh.e[1] != E1;
    if (rows && cols) return rnd_mask(g, 2);
    return rows ? 0 : cols ? 1 : -1;
}

static char *mask_text(Gen *g, Shape sh)
{
    PhgenProgram *p = g->p;
    int axis = some_axis(g, sh), form = axis < 0 ? 0 : rnd_mask(g, 4);
    int k = 2 + rnd_mask(g, 3), j = rnd_mask(g, k);
    char blk = rnd_mask(g, 2) ? 'x' : 'y';
    bool both = sh.rank == 2 && sh.e[0] != E1 && sh.e[1] != E1;
    switch (form) {
    case 0: return pfmt(p, "ph.ctx.block.%c %% %d != %d", blk, k, j);
    case 1: return pfmt(p, "ph.iota(%d, %s) %% %d != %d", axis, ext_meta[sh.e[axis]], k, j);
    case 2:
        if (both)
            return pfmt(p, "ph.iota(0, %s) + ph.iota(1, %s) * %d < %s + ph.ctx.block.%c %% 4", ext_meta[sh.e[0]],
                        ext_meta[sh.e[1]], 1 + rnd_mask(g, 2), ext_meta[sh.e[0]], blk);
        return pfmt(p, "ph.iota(%d, %s) < %d + ph.ctx.block.%c", axis, ext_meta[sh.e[axis]], 1 + rnd_mask(g, 8), blk);
    default: return pfmt(p, "(ph.iota(%d, %s) + ph.ctx.block.%c) %% 2 == 0", axis, ext_meta[sh.e[axis]], blk);
    }
}

char *masked_load_text(Gen *g, char *window, Shape sh, DType dt)
{
    if (rnd_mask(g, 100) >= g->o.pct_mask) return window;
    static const char *const floats[] = {"0.5", "-1.5", "2.0", "0.0"};
    static const char *const ints[] = {"3", "-7", "1", "0"};
    const char *other = (dt == DT_I32 ? ints : floats)[rnd_mask(g, 4)];
    char *mask = mask_text(g, sh);
    feature(g, PF_MASKED_LOAD);
    switch (rnd_mask(g, 4)) {
    case 0: return pfmt(g->p, "ph.load(%s, %s, %s)", window, mask, other);
    case 1: return pfmt(g->p, "ph.load(%s, mask=%s)", window, mask);
    default: return pfmt(g->p, "ph.load(%s, mask=%s, other=%s)", window, mask, other);
    }
}

char *store_text(Gen *g, const char *window, Shape sh, const char *value)
{
    if (rnd_mask(g, 100) >= g->o.pct_mask) return pfmt(g->p, "%s = %s", window, value);
    feature(g, PF_MASKED_STORE);
    return pfmt(g->p, "ph.store(%s, %s, mask=%s)", window, value, mask_text(g, sh));
}
