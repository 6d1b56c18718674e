/* runtime_internal.h: what the runtime's own tests reach that a host does
 * not: the CUDA driver's table of calls (so a test without a GPU can stand
 * fakes in for the driver), the step from a config to its PTX, through
 * the disk cache, the loops on threads, and the autotuner's parts. Each
 * comes from the header of its layer; the runtime's files include those. */
#ifndef PHOBOS_RUNTIME_INTERNAL_H
#define PHOBOS_RUNTIME_INTERNAL_H

#include "autotune.h"
#include "cache.h"
#include "driver.h"
#include "error.h"
#include "generate.h"
#include "parallel.h"
#include "pipeline.h"

#endif
