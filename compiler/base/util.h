/* util.h: the few helpers every layer of phc shares: checked allocation,
 * an arena for IR and AST nodes (freed in one call), growable arrays, the
 * code generation switches, the edit distance of two names. */
#ifndef PHC_UTIL_H
#define PHC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Whether the code generation switch name (codegen_switches, codegen.c) is
 * on: set to 1, or unset (or neither 0 nor 1) and on by default. */
bool env_switch(const char *name, bool by_default);

/* The edit distance (insertions, deletions, substitutions) of a and b,
 * for "did you mean" in messages; names of 64 bytes or more are as far as
 * their longer length. */
int edit_distance(const char *a, const char *b);

/* Bump allocator: every AST node and IR object lives in one, so a compilation
 * is freed with one arena_free. Allocations are zeroed and 16-byte aligned. */
typedef struct Arena Arena;
Arena *arena_new(void);
void *arena_alloc(Arena *a, size_t n);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
void arena_free(Arena *a);

/* Growable array of T: VEC(int) v = {0}; vec_push(&v, 3); free(v.data); */
#define VEC(T) struct { T *data; int len, cap; }
#define vec_push(v, x) do { \
        if ((v)->len == (v)->cap) { \
            (v)->cap = (v)->cap ? 2 * (v)->cap : 8; \
            (v)->data = xrealloc((v)->data, sizeof *(v)->data * (size_t)(v)->cap); \
        } \
        (v)->data[(v)->len++] = (x); \
    } while (0)

#endif
