/* util.c: checked allocation and the arena. Out of memory ends the process
 * with a message: no caller can do better, and none needs to check. And
 * the edit distance that "did you mean" messages pick a name by, and the
 * code generation switches read from the environment. */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t n)
{
    fprintf(stderr, "phc: out of memory (asked for %zu bytes)\n", n);
    exit(3);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

typedef struct Chunk {
    struct Chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} Chunk;

struct Arena { Chunk *head; };

Arena *arena_new(void) { return xcalloc(1, sizeof(Arena)); }

void *arena_alloc(Arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    Chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 65536 ? n : 65536;
        c = xmalloc(sizeof(Chunk) + size);
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

void arena_free(Arena *a)
{
    if (!a) return;
    for (Chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n >= 64 || m >= 64) return (int)(n > m ? n : m);
    int row[64];   /* the distances of a's prefixes to b's prefix so far */
    for (size_t i = 0; i <= n; i++) row[i] = (int)i;
    for (size_t j = 1; j <= m; j++) {
        int diag = row[0];
        row[0] = (int)j;
        for (size_t i = 1; i <= n; i++) {
            int up = row[i];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[i - 1] + 1 < best) best = row[i - 1] + 1;
            row[i] = best;
            diag = up;
        }
    }
    return row[n];
}

bool env_switch(const char *name, bool by_default)
{
    const char *v = getenv(name);
    if (v && !strcmp(v, "1")) return true;
    if (v && !strcmp(v, "0")) return false;
    return by_default;
}
