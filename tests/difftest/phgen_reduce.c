/* phgen_reduce.c: the reducer: shrinks a program while a predicate still
 * holds, one step at a time (phgen.h lists the steps). */
#include "phgen_gen.h"

#include <stdlib.h>

typedef struct {
    PhgenProgram *p;
    PhgenPredicate still_fails;
    void *user;
    int tries, max_tries, steps;
} Reducer;

static bool attempt(Reducer *r)
{
    if (r->tries >= r->max_tries) return false;
    r->tries++;
    char *src = phgen_source(r->p);
    bool fails = r->still_fails(src, &r->p->spec, r->user);
    free(src);
    if (fails) r->steps++;
    return fails;
}

static bool uses_name(const Node *n, const char *name)
{
    if (n->uses_all) return true;
    size_t len = strlen(name);
    for (const char *s = strstr(n->uses, name); s; s = strstr(s + 1, name))
        if (s[-1] == ' ' && (s[len] == ' ' || s[len] == 0)) return true;
    return false;
}

/* Whether a live statement outside skip's subtree uses name. */
static bool used_outside(const Node *n, const Node *skip, const char *name)
{
    if (n == skip || n->dropped) return false;
    if (uses_name(n, name)) return true;
    for (int i = 0; i < n->nbody; i++)
        if (used_outside(n->body[i], skip, name)) return true;
    return n->next && used_outside(n->next, skip, name);
}

static void collect(Node *n, Node ***list, int *count, int *cap)
{
    if (*count == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *list = realloc(*list, sizeof **list * (size_t)*cap);
    }
    (*list)[(*count)++] = n;
    for (int i = 0; i < n->nbody; i++) collect(n->body[i], list, count, cap);
    if (n->next) collect(n->next, list, count, cap);
}

/* One sweep over the statements, last first: each goes if the failure stays. */
static bool drop_pass(Reducer *r)
{
    Node **all = NULL;
    int count = 0, cap = 0;
    collect(&r->p->root, &all, &count, &cap);
    bool progress = false;
    for (int i = count - 1; i >= 1; i--) {
        Node *n = all[i];
        if (n->dropped || (n->def[0] && used_outside(&r->p->root, n, n->def))) continue;
        n->dropped = true;
        if (attempt(r)) progress = true;
        else n->dropped = false;
    }
    free(all);
    return progress;
}

static bool spec_keeps_promises(const PhgenProgram *p);

static void reduce_configs(Reducer *r)
{
    for (int m = 0; m < r->p->nmeta; m++) {
        Meta *meta = &r->p->meta[m], saved = *meta;
        for (int v = 0; v < saved.n && saved.n > 1; v++) {
            meta->n = 1;
            meta->v[0] = saved.v[v];
            if (spec_keeps_promises(r->p) && attempt(r)) break;
            *meta = saved;
        }
    }
}

/* The smallest legal value below v for meta-parameter m, or 0. */
static int smaller_meta(const PhgenProgram *p, int m, int v)
{
    if (p->meta[m].role == META_THREADS) return v > 32 ? (v / 2 + 31) / 32 * 32 : 0;
    if (p->meta[m].role == META_DIM) return 0;   /* the spec's dim must stay one of its values */
    int unit = p->tc ? (m == 1 ? 8 : 16) : 1;
    int w = v / 2 / unit * unit;
    return w >= unit && w < v ? w : 0;
}

/* Whether the spec still keeps the promises: aligned dims hold every
 * block's tile (multiples the interpreter checks itself), a specialized dim
 * is one config's value. */
static bool spec_keeps_promises(const PhgenProgram *p)
{
    const DtSpec *s = &p->spec;
    for (int e = EM; e <= EN; e++)
        if (p->aligned[e] && s->grid[e - EM] * meta_max(&p->meta[e - EM]) > dt_spec_get(s, ext_dim[e], 0)) return false;
    if (p->specialized == E1) return true;
    const Meta *sm = &p->meta[p->nmeta - 1];
    for (int i = 0; i < sm->n; i++)
        if (sm->v[i] == dt_spec_get(s, ext_dim[p->specialized], 0)) return true;
    return false;
}

static void reduce_sizes(Reducer *r)
{
    DtSpec *s = &r->p->spec;
    for (int a = 0; a < 2; a++)
        while (s->grid[a] > 1) {
            int saved = s->grid[a];
            s->grid[a] = saved / 2;
            if (!attempt(r)) { s->grid[a] = saved; break; }
        }
    for (int i = 0; i < s->nvalues; i++) {
        if (strcmp(s->values[i].name, "M") && strcmp(s->values[i].name, "N") && strcmp(s->values[i].name, "K")) continue;
        while (s->values[i].value > 1) {
            double saved = s->values[i].value;
            s->values[i].value = (double)((int)saved / 2);
            if (!spec_keeps_promises(r->p) || !attempt(r)) { s->values[i].value = saved; break; }
        }
    }
    for (int m = 0; m < r->p->nmeta; m++) {
        Meta *meta = &r->p->meta[m];
        if (meta->n != 1) continue;
        int w;
        while ((w = smaller_meta(r->p, m, meta->v[0])) > 0) {
            int saved = meta->v[0];
            meta->v[0] = w;
            if (!attempt(r)) { meta->v[0] = saved; break; }
        }
    }
}

int phgen_reduce(PhgenProgram *p, PhgenPredicate still_fails, void *user, int max_tries)
{
    Reducer r = {p, still_fails, user, 0, max_tries, 0};
    reduce_configs(&r);
    while (drop_pass(&r)) {}
    reduce_sizes(&r);
    while (drop_pass(&r)) {}
    return r.steps;
}

static int count_alive(const Node *n)
{
    if (n->dropped) return 0;
    int c = 1;
    for (int i = 0; i < n->nbody; i++) c += count_alive(n->body[i]);
    return c + (n->next ? count_alive(n->next) : 0);
}

int phgen_count_stmts(const PhgenProgram *p) { return count_alive(&p->root) - 1; }
