/* error.h: the runtime's failures and switches: the message a failed call
 * leaves for ph_last_error (error.c), and the environment variables read
 * the same way everywhere. */
#ifndef PHOBOS_ERROR_H
#define PHOBOS_ERROR_H

#include <stdbool.h>
#include "phobos.h"

/* Sets the message ph_last_error() returns (printf's format), and returns s. */
ph_status ph_internal_failf(ph_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with the message as it is. */
ph_status ph_internal_fail(ph_status s, const char *message);
/* Adds to the end of that message, as far as it has room. */
void ph_internal_fail_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define NOT_READY "the runtime is not initialized (call ph_init) or was shut down"

/* An environment switch's value: "0", "off", "no", "false" are false;
 * "1", "on", "yes", "true" true (any case); anything else, or NULL, dflt. */
bool ph_internal_env_switch(const char *value, bool dflt);
/* Whether environment variable `name` asks for something: any value but
 * empty or 0 (PHOBOS_STATS, PHOBOS_LINEINFO). */
bool ph_internal_env_asked(const char *name);

#endif
