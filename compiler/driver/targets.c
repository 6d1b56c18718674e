/* targets.c: the table of targets and their lookup by name (targets.h). */
#include "driver/targets.h"

#include "codegen/target.h"
#include "nvidia/targets.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { MAX_TARGETS = 16 };

static const Target *table[MAX_TARGETS] = {&nvidia_sm80, &nvidia_sm86, &nvidia_sm89, &nvidia_sm90, &nvidia_sm90a};
static int ntargets = 5;
static char names[MAX_TARGETS * 24];   /* target_names', rebuilt as rows are added */
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

const char *target_default(void) { return nvidia_sm90.name; }

const Target *target_find(const char *name)
{
    for (int i = 0; name && i < ntargets; i++)
        if (!strcmp(table[i]->name, name)) return table[i];
    return NULL;
}

static void list_names(void)
{
    size_t len = 0;
    names[0] = 0;
    for (int i = 0; i < ntargets && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", table[i]->name);
}

/* written once (threads compiling at once may ask), and again by target_register */
const char *target_names(void)
{
    pthread_once(&names_once, list_names);
    return names;
}

int target_register(const Target *t)
{
    pthread_once(&names_once, list_names);
    int i = 0;
    while (i < ntargets && strcmp(table[i]->name, t->name)) i++;
    if (i == MAX_TARGETS) return 1;
    table[i] = t;
    if (i == ntargets) ntargets++;
    list_names();
    return 0;
}
