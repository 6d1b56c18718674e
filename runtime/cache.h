/* cache.h: the runtime's files on disk (cache.c): where they go, the
 * build that names them, and the PTX and cubins kept there so that a
 * second run of a program skips code generation and assembly. */
#ifndef PHOBOS_CACHE_H
#define PHOBOS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The disk cache's folder (created), as the PTX cache names it; false when
 * the cache is off (PHOBOS_CACHE_DIR empty or "off") or there is no home. */
bool ph_internal_cache_folder(char *folder, size_t n);

/* The library's build: its version and its GNU build id (the linker's
 * hash of its contents), else the time it was compiled. */
const char *ph_internal_build_id(void);

/* A module's key: a hash of this build and its source text (source, or
 * else the file at path); 0 when the file cannot be read. */
uint64_t ph_internal_source_key(const char *path, const char *source);

/* The PTX file of a config whose key (0: none, no file) says what it was
 * generated from, for arch; false when the cache is off. */
bool ph_internal_ptx_cache_path(uint64_t key, const char *arch, char *path, size_t n);
/* A cached PTX file's text (malloc'd), or NULL when it is missing or no PTX. */
char *ph_internal_ptx_cache_read(const char *path);
/* Writes ptx to path whole or not at all. */
void ph_internal_ptx_cache_write(const char *path, const char *ptx);

/* A cubin's file: named for the PTX it was made from, the target, line
 * information, and the ptxas that made it; false: no cache. */
bool ph_internal_cubin_cache_path(const char *ptxas, const char *arch, const char *ptx, bool lineinfo, char *path, size_t n);
/* A cached cubin (an ELF file, malloc'd, its size in *bytes), or NULL. */
void *ph_internal_cubin_cache_read(const char *path, size_t *bytes);
/* Writes a cubin to path whole or not at all (safe from several threads). */
void ph_internal_cubin_cache_write(const char *path, const void *cubin, size_t bytes);

#endif
