/* targets.h: the targets the compiler knows, by name: the one table of
 * them (the rows themselves live with their back ends: compiler/nvidia/
 * targets.c), for everything that turns an arch name (--arch,
 * ph_compile_options.arch, a device's) into a Target for the code
 * generator, or names the choices in a message. */
#ifndef PHC_DRIVER_TARGETS_H
#define PHC_DRIVER_TARGETS_H

#include "codegen/codegen.h"

/* The row named name, or NULL: none is. */
const struct Target *target_find(const char *name);

/* The name of the target a compile without an arch is for: "sm_90". */
const char *target_default(void);

/* The known names for a message, in the table's order: "sm_80, sm_86, sm_89, sm_90, sm_90a". */
const char *target_names(void);

/* Adds a row after the built-in ones (a test's target, say); a row of a
 * name already known replaces it. The row must outlive its use. 0, or 1
 * when the table is full. Not safe while another thread compiles. */
int target_register(const struct Target *t);

#endif
