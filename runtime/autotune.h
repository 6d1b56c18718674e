/* autotune.h: the autotuner (autotune.c): which of a kernel's eligible
 * configs a launch runs, and the winners it keeps in memory and on disk.
 * It is given what it runs on (PhTuneTarget) by the launch; it calls
 * nothing of the layers above it. */
#ifndef PHOBOS_AUTOTUNE_H
#define PHOBOS_AUTOTUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "driver.h"
#include "ir/ir.h"
#include "phobos.h"

typedef struct PhTuner PhTuner;

/* What a tuning runs on, as the launch that asks gives it: a launch of
 * config `config` (an index into the kernel's configs) on grid g, the
 * stream every launch, copy, flush and event of the tuning goes to, and
 * the device (its L2 cache's size; its name, in the winners' keys). */
typedef struct {
    ph_status (*launch)(void *ctx, int config, const unsigned g[3], const ph_arg *args);
    void *ctx;
    CUstream stream;
    CUdevice device;
    const char *device_name;
} PhTuneTarget;

/* A config is timed by PH_TUNE_WARMUPS untimed launches, then the median
 * of PH_TUNE_RUNS launches timed with CUDA events; one whose first timed
 * run takes over PH_TUNE_PRUNE times the best median so far stops there
 * (it cannot win). Once every config is timed, those whose median is
 * within PH_TUNE_CLOSE_PERCENT of the best, the PH_TUNE_RETIMED fastest of
 * them, are timed again when there are two or more: after a warm-up
 * each, PH_TUNE_ROUNDS rounds that run each of them once, and the medians
 * of those runs decide. */
enum {
    PH_TUNE_WARMUPS = 1,
    PH_TUNE_RUNS = 7,
    PH_TUNE_PRUNE = 2,
    PH_TUNE_CLOSE_PERCENT = 15,
    PH_TUNE_RETIMED = 6,
    PH_TUNE_ROUNDS = 11
};

/* The autotuner of a kernel of count configs (configs[0] its first, the
 * IR's: they outlive it), from a module whose source hashes to source_key
 * (0: its winners are not kept on disk). */
PhTuner *ph_internal_tuner_new(IrFunc *const *configs, int count, uint64_t source_key);
void ph_internal_tuner_free(PhTuner *t);

/* Which of the eligible configs (ne > 1: indices into the kernel's configs, each
 * loaded, their grids in grids[]) a launch with args runs: *pick is
 * an index into eligible[]. Off: the first; else the winner known for
 * these dims, in memory or on disk; else each one timed and the fastest
 * kept. The tensors named to restore or zero are as the caller gave them
 * when it returns, ready for the launch. */
ph_status ph_internal_autotune(PhTuner *t, const PhTuneTarget *on, const int *eligible, unsigned (*grids)[3], int ne,
                               const ph_arg *args, int nargs, int *pick);

/* Where a tuning takes its configs, one at a time, as they become ready:
 * in *i an index into eligible[] of a config loaded by now, each once, or
 * -1 when none is left. A failure ends the tuning with its status. */
typedef ph_status (*PhNextConfig)(void *ctx, int *i);

/* A tuning of the configs next gives, each timed as it comes, the winner
 * kept as ph_internal_autotune keeps it: for a first launch, whose
 * configs are still being compiled when the first are timed. The caller
 * knows no winner for these arguments. *pick: the winner's index into
 * eligible[] (ne of them, their grids in grids[]), -1 when next gave none. */
ph_status ph_internal_autotune_as_ready(PhTuner *t, const PhTuneTarget *on, const int *eligible, unsigned (*grids)[3], int ne,
                                        const ph_arg *args, int nargs, PhNextConfig next, void *ctx, int *pick);

/* Whether the winner for a launch with args is known already, in
 * memory or on disk, and eligible: its index into eligible[] in *pick.
 * The launch then loads that config alone. */
bool ph_internal_autotune_known(PhTuner *t, const PhTuneTarget *on, const int *eligible, int ne, const ph_arg *args, int nargs, int *pick);

/* Whether autotuning is on: as ph_set_autotune set it, else as
 * PHOBOS_AUTOTUNE says (on when unset). */
bool ph_internal_autotune_enabled(void);
/* Where the progress lines go (NULL: stderr). For tests. */
void ph_internal_autotune_log(FILE *out);

/* The on-disk winner's key, as the file's first lines hold it: the
 * kernel (f, its first config), its config space (a hash of the source and
 * the configs' entry names), each tensor argument's dims, the device
 * (ph_device_name()) and the build. malloc'd. */
char *ph_internal_tune_key(const IrFunc *f, uint64_t space, const ph_arg *args, int nargs, const char *device);
/* The file that holds key's winner, in the cache folder: a hash of the key,
 * with ".tune". False when the cache is off. */
bool ph_internal_tune_path(const char *key, char *path, size_t n);
/* The winner's entry name from path, when the file holds exactly key and
 * a well-formed winner line; false for anything else (missing, truncated,
 * another key, garbage). */
bool ph_internal_tune_read(const char *path, const char *key, char *winner, size_t n);
/* Writes key and the winner to path whole or not at all (a file aside,
 * then renamed over it). */
bool ph_internal_tune_write(const char *path, const char *key, const char *winner, float ms);

/* A tensor parameter the autotuner restores or zeroes before each timed
 * run (IR_TUNE_RESTORE, IR_TUNE_ZERO), by name, over what the decorators
 * said: ph_kernel_set_restore and ph_kernel_set_zero. */
ph_status ph_internal_tuner_set_reset(PhTuner *t, const char *param, IrTuneReset how);

#endif
