/* version.c: the library's version, as phobos.h numbers it, for a program
 * to tell which libphobos it was loaded with. */
#include "phobos.h"

#define STRINGIFY(x) #x
#define VERSION_STRING(major, minor, patch) STRINGIFY(major) "." STRINGIFY(minor) "." STRINGIFY(patch)

const char *ph_version(void)
{
    return VERSION_STRING(PH_VERSION_MAJOR, PH_VERSION_MINOR, PH_VERSION_PATCH);
}
