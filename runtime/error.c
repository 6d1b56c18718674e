/* error.c: what a failed call of the runtime leaves behind (a message per
 * thread, for ph_last_error), the statuses' names, and how the runtime
 * reads its environment switches. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static _Thread_local char last_error[8192];

const char *ph_last_error(void) { return last_error; }

ph_status ph_internal_failf(ph_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

ph_status ph_internal_fail(ph_status s, const char *message) { return ph_internal_failf(s, "%s", message); }

void ph_internal_fail_append(const char *fmt, ...)
{
    size_t len = strlen(last_error);
    if (len + 1 >= sizeof last_error) return;   /* full: what follows is cut */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error + len, sizeof last_error - len, fmt, ap);
    va_end(ap);
}

const char *ph_status_name(ph_status s)
{
    static const char *const names[] = {"ok", "no CUDA driver", "no device", "CUDA error", "compile error",
        "module refused", "not found", "bad arguments", "no eligible config", "bad grid", "bad state", "invalid value"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown status";
}

bool ph_internal_env_switch(const char *value, bool dflt)
{
    static const char *const off[] = {"0", "off", "no", "false"}, *const on[] = {"1", "on", "yes", "true"};
    for (int i = 0; value && i < 4; i++) {
        if (!strcasecmp(value, off[i])) return false;
        if (!strcasecmp(value, on[i])) return true;
    }
    return dflt;
}

bool ph_internal_env_asked(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0");
}
