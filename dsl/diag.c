/* diag.c: source files and error messages. Every message has the form
 * "path:line:col: error: message", then the source line and a caret, so
 * editors and users find the spot; a message is never printed twice (sema
 * checks a kernel once per config and would otherwise repeat itself). */
#include "dsl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int src_load(SrcFile *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "rb");
    if (!in) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return 1;
    }
    int status = src_read(f, in, path, err, errlen);
    fclose(in);
    return status;
}

int src_read(SrcFile *f, FILE *in, const char *name, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap + 1);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, in)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
    }
    if (ferror(in)) {
        free(buf);
        snprintf(err, errlen, "cannot read %s", name);
        return 1;
    }
    buf[len] = 0;
    f->path = xstrdup(name);
    f->text = buf;
    f->len = len;
    return 0;
}

void src_from_string(SrcFile *f, const char *path, const char *text)
{
    f->path = xstrdup(path);
    f->len = strlen(text);
    f->text = xstrndup(text, f->len);
}

void src_free(SrcFile *f)
{
    free((char *)f->path);
    free((char *)f->text);
    memset(f, 0, sizeof *f);
}

/* The messages printed so far, in an open-addressing hash set: a file
 * with an error on each of 100,000 lines must not compare each new
 * message with all the earlier ones. */
typedef struct {
    uint64_t hash;
    Loc loc;
    char msg[];
} Seen;

typedef struct {
    Seen **slots;
    size_t cap, n;        /* cap: a power of two, at most half full */
} SeenSet;

static uint64_t seen_hash(Loc loc, const char *msg)
{
    uint64_t h = 14695981039346656037u;   /* FNV-1a */
    h = (h ^ (uint32_t)loc.line) * 1099511628211u;
    h = (h ^ (uint32_t)loc.col) * 1099511628211u;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) h = (h ^ *p) * 1099511628211u;
    return h;
}

static void seen_place(SeenSet *set, Seen *s)
{
    size_t i = (size_t)s->hash & (set->cap - 1);
    while (set->slots[i]) i = (i + 1) & (set->cap - 1);
    set->slots[i] = s;
}

/* Adds (loc, msg); false when it was there already. */
static bool seen_add(Diag *d, Loc loc, const char *msg)
{
    SeenSet *set = d->seen;
    if (!set) set = d->seen = xcalloc(1, sizeof *set);
    uint64_t h = seen_hash(loc, msg);
    for (size_t i = set->cap ? (size_t)h & (set->cap - 1) : 0; set->cap && set->slots[i]; i = (i + 1) & (set->cap - 1)) {
        const Seen *s = set->slots[i];
        if (s->hash == h && s->loc.line == loc.line && s->loc.col == loc.col && !strcmp(s->msg, msg)) return false;
    }
    if (2 * (set->n + 1) > set->cap) {
        SeenSet grown = {xcalloc(set->cap ? 2 * set->cap : 64, sizeof(Seen *)), set->cap ? 2 * set->cap : 64, set->n};
        for (size_t i = 0; i < set->cap; i++)
            if (set->slots[i]) seen_place(&grown, set->slots[i]);
        free(set->slots);
        *set = grown;
    }
    Seen *s = xmalloc(sizeof *s + strlen(msg) + 1);
    s->hash = h;
    s->loc = loc;
    strcpy(s->msg, msg);
    seen_place(set, s);
    set->n++;
    return true;
}

void diag_init(Diag *d, const SrcFile *f, FILE *out)
{
    memset(d, 0, sizeof *d);
    d->file = f;
    d->out = out;
}

void diag_free(Diag *d)
{
    SeenSet *set = d->seen;
    if (!set) return;
    for (size_t i = 0; i < set->cap; i++) free(set->slots[i]);
    free(set->slots);
    free(set);
    d->seen = NULL;
}

/* The colours of a terminal's messages, as clang's: the place and the
 * message in bold, "error:" in red, the caret in green. */
#define BOLD  "\033[1m"
#define RED   "\033[1;31m"
#define GREEN "\033[1;32m"
#define PLAIN "\033[0m"

/* Prints the source line holding loc with a caret under its column. Bytes
 * that are not printable are shown as '?', so a binary file cannot upset
 * the terminal; a tab stays a tab so the caret lines up. A message costs
 * the 200 bytes shown, never the rest of a long line, and the lines since
 * the one shown last (messages come mostly in file order), not all the
 * lines before it. */
static void show_line(Diag *d, Loc loc)
{
    enum { SHOWN = 200 };  /* a 100 kB line is shown in part */
    const SrcFile *f = d->file;
    if (!f || !f->text || loc.line < 1) return;
    const char *p = f->text, *end = f->text + f->len;
    int line = 1;
    if (d->shown_line >= 1 && d->shown_line <= loc.line && d->shown_start <= f->len) {
        line = d->shown_line;
        p = f->text + d->shown_start;
    }
    for (; line < loc.line && p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    d->shown_line = line;
    d->shown_start = (size_t)(p - f->text);
    const char *eol = p;
    while (eol < end && eol - p < SHOWN && *eol != '\n' && *eol != '\r') eol++;
    size_t n = (size_t)(eol - p);
    FILE *out = d->out;
    fputs("    ", out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        fputc(c == '\t' || (c >= 32 && c < 127) || c >= 128 ? c : '?', out);
    }
    fputs("\n    ", out);
    for (int i = 1; i < loc.col && (size_t)i <= n; i++)
        fputc(p[i - 1] == '\t' ? '\t' : ' ', out);
    fputs(d->color ? GREEN "^" PLAIN "\n" : "^\n", out);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!seen_add(d, loc, msg)) return;
    d->nerrors++;
    int max = d->max_errors ? d->max_errors : 50;
    if (!d->out || d->nerrors > max + 1) return;
    if (d->nerrors == max + 1) {
        fprintf(d->out, "%s: too many errors; no more are shown\n", d->file ? d->file->path : "phc");
        return;
    }
    const char *path = d->file ? d->file->path : "<input>";
    if (d->color) fputs(BOLD, d->out);
    if (loc.line < 1) fprintf(d->out, "%s: ", path);   /* the whole file (a -D or --kernel that selects nothing) */
    else fprintf(d->out, "%s:%d:%d: ", path, loc.line, loc.col);
    if (d->color) fprintf(d->out, RED "error: " PLAIN BOLD "%s" PLAIN "\n", msg);
    else fprintf(d->out, "error: %s\n", msg);
    if (loc.line >= 1) show_line(d, loc);
}
