/* passes.c: the IR pass pipeline, in order, and the driver that runs it,
 * checking the IR before the first pass and after each one when asked, and
 * printing it after a named pass (phc --dump-after=NAME). */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

/* PHOBOS_MASK_SPLIT=1 runs masksplit (off until timed on the GPU: docs/performance.md, "nineteenth"). */
static void mask_split_if_on(IrFunc *f)
{
    if (env_switch("PHOBOS_MASK_SPLIT", false)) ir_mask_split(f);
}

const IrPass ir_passes[] = {
    {"fold", ir_fold, "constant folding, exact identities, constant ifs and empty loops"},
    {"licm", ir_licm, "moves loop-invariant ops (and loads of tensors never stored) out of loops"},
    {"masks", ir_masks, "a select on a compare of affine i32 tiles is skipped on tiles where the compare holds everywhere"},
    {"async", ir_async, "copies loop loads that feed tensor-core dots through S-stage shared-memory rings"},
    {"pipeline", ir_pipeline, "issues loads that depend only on a loop's counter one iteration ahead"},
    {"masksplit", mask_split_if_on, "with PHOBOS_MASK_SPLIT=1, a loop whose masks hold on its first iterations runs those as a loop without them"},
    {"dce", ir_dce, "removes ops whose results are unused and that store nothing"},
    {NULL, NULL, NULL},
};

static bool known_pass(const char *name)
{
    for (const IrPass *p = ir_passes; p->name; p++)
        if (!strcmp(p->name, name)) return true;
    return false;
}

static void unknown_pass(const char *name, char *err, size_t errlen)
{
    size_t n = (size_t)snprintf(err, errlen, "unknown pass '%s' for dump-after; the passes are:", name);
    for (const IrPass *p = ir_passes; p->name && n < errlen; p++)
        n += (size_t)snprintf(err + n, errlen - n, " %s", p->name);
}

static int verify_at(IrFunc *f, const char *when, char *err, size_t errlen)
{
    char msg[512];
    if (!ir_verify(f, msg, sizeof msg)) return 0;
    snprintf(err, errlen, "invalid IR %s: %s", when, msg);
    return 1;
}

int ir_run_passes(IrFunc *f, bool verify, const char *dump_after, FILE *dump, char *err, size_t errlen)
{
    if (dump_after && !known_pass(dump_after)) {
        unknown_pass(dump_after, err, errlen);
        return 1;
    }
    if (verify && verify_at(f, "before the first pass", err, errlen)) return 1;
    for (const IrPass *p = ir_passes; p->name; p++) {
        p->run(f);
        if (verify) {
            char when[64];
            snprintf(when, sizeof when, "after pass '%s'", p->name);
            if (verify_at(f, when, err, errlen)) return 1;
        }
        if (dump_after && dump && !strcmp(dump_after, p->name)) ir_print_func(dump, f);
    }
    return 0;
}
