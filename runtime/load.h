/* load.h: the configs a GPU launch loads (load.c). */
#ifndef PHOBOS_LOAD_H
#define PHOBOS_LOAD_H

#include "autotune.h"
#include "module.h"

/* Loads what a launch of k needs of its eligible configs (indices into
 * k's configs, *ne of them, their grids in grids[]), in the context of
 * k's module's device: the one the autotuner already knows for these
 * arguments, or with autotuning off the first that loads, alone; else
 * every one, to be timed, and when several are not loaded yet, timed as
 * they load (on: what the tuning runs on; the winner is then the one
 * left). A config the driver refuses leaves the eligible set; none left
 * is PH_ERR_MODULE with every reason. */
ph_status ph_internal_load_needed(ph_kernel *k, const PhTuneTarget *on, int *eligible, unsigned (*grids)[3], int *ne,
                                  const ph_arg *args, int nargs);

#endif
