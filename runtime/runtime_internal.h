/* runtime_internal.h: what the runtime's own tests reach that a host does
 * not: the step from a loaded module to its PTX, through the disk cache. */
#ifndef PHOBOS_RUNTIME_INTERNAL_H
#define PHOBOS_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "phobos.h"

/* The module's PTX for arch ("sm_90"): from the disk cache when a run of
 * this build has generated it before, else generated and cached. 0 on
 * success (*ptx malloc'd; *from_cache says which); 1 with err filled. */
int ph_internal_module_ptx(ph_module *m, const char *arch, char **ptx, bool *from_cache, char *err, size_t errlen);

#endif
