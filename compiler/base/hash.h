/* hash.h: the 64-bit FNV-1a hash, the one the runtime names its on-disk
 * files by (PTX, cubins, autotuned winners): a file's name must come out
 * the same in every build, so there is one definition of it. */
#ifndef PHC_HASH_H
#define PHC_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a offset basis: the hash of no bytes. */
#define FNV1A_START 0xcbf29ce484222325ull

/* h continued over data[0 .. n): start from FNV1A_START, chain calls to
 * hash several pieces as one. */
static inline uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#endif
