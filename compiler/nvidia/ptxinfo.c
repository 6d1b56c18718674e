/* ptxinfo.c: a config's costs read back from text (ptxinfo.h): the shared
 * memory its PTX declares, and ptxas -v's report of registers, stack
 * frame, spills and shared memory, and of wgmma pipelines lost. */
#include "ptxinfo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

static bool is_name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.'; }

/* The first what in [p, end) that no name character follows, or NULL. */
static const char *find_word(const char *p, const char *end, const char *what)
{
    size_t n = strlen(what);
    for (const char *at = p; (at = strstr(at, what)) && at + n <= end; at++)
        if (!is_name_char(at[n])) return at;
    return NULL;
}

/* The number written just before the first what in [p, end) ("32" of
 * "Used 32 registers"), or -1. */
static int64_t number_before(const char *p, const char *end, const char *what)
{
    const char *at = find_word(p, end, what);
    if (!at) return -1;
    const char *q = at;
    while (q > p && q[-1] == ' ') q--;
    const char *digits = q;
    while (digits > p && isdigit((unsigned char)digits[-1])) digits--;
    return digits < q ? strtoll(digits, NULL, 10) : -1;
}

/* ".shared .align 16 .b8 NAME[BYTES];": the bytes of shared array name, or 0. */
static int64_t shared_array_bytes(const char *ptx, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = ptx; (p = strstr(p, name)); p++) {
        if (p == ptx || p[-1] != ' ' || p[n] != '[') continue;
        const char *line = p;
        while (line > ptx && line[-1] != '\n') line--;
        const char *shared = strstr(line, ".shared "), *elem = strstr(line, " .b"), *ext = strstr(line, ".extern");
        if (!shared || shared > p || !elem || elem > p || (ext && ext < p)) continue;
        int64_t bits = strtoll(elem + 3, NULL, 10), count = strtoll(p + n + 1, NULL, 10);
        return count * (bits / 8);
    }
    return 0;
}

int64_t ptx_static_shared_bytes(const char *ptx, const char *entry)
{
    char name[600];
    snprintf(name, sizeof name, "%s_smem", entry);   /* the one area, as cg_smem.c names it */
    return shared_array_bytes(ptx, name);
}

int64_t codegen_dynamic_shared_bytes(const char *ptx, const char *entry)
{
    /* the constant's line: ".visible .const .align 4 .u32 NAME_dynamic_shared_bytes = BYTES;" */
    size_t n = strlen(entry), suffix = strlen(CODEGEN_DYNAMIC_SHARED_SUFFIX);
    for (const char *p = ptx; (p = strstr(p, ".u32 ")); p++) {
        const char *name = p + 5;
        if (strncmp(name, entry, n) || strncmp(name + n, CODEGEN_DYNAMIC_SHARED_SUFFIX, suffix)) continue;
        const char *rest = name + n + suffix;
        if (strncmp(rest, " = ", 3)) continue;
        return strtoll(rest + 3, NULL, 10);
    }
    return 0;
}

/* The constant's line: ".visible .const .align 4 .b8 NAME_copy_descriptors[N] = {b0, b1, ...};",
 * its u32 words little-endian bytes, as LLVM prints an i32 array. */
int codegen_copy_descriptors(const char *ptx, const char *entry, CodegenCopyDesc *out)
{
    char name[600];
    snprintf(name, sizeof name, " %s%s[", entry, CODEGEN_COPY_DESCS_SUFFIX);
    const char *p = strstr(ptx, name);
    if (!p || !(p = strstr(p, "= {"))) return 0;
    p += 3;
    enum { W = CODEGEN_COPY_DESC_WORDS };
    uint32_t words[1 + W * CODEGEN_MAX_COPY_DESCS] = {0};
    int nbytes = 0;
    while (*p && *p != '}' && nbytes < 4 * (1 + W * CODEGEN_MAX_COPY_DESCS)) {
        char *end;
        unsigned long b = strtoul(p, &end, 10);
        if (end == p) break;
        words[nbytes / 4] |= (uint32_t)(b & 0xff) << (8 * (nbytes % 4));
        nbytes++;
        p = end;
        while (*p == ',' || *p == ' ') p++;
    }
    int n = (int)words[0];
    if (n < 0 || n > CODEGEN_MAX_COPY_DESCS) return 0;
    for (int j = 0; j < n; j++) {
        const uint32_t *d = &words[1 + W * j];
        out[j] = (CodegenCopyDesc){(int)d[0], (int)d[1], (int)d[2], (int)d[3], (int)d[4]};
    }
    return n;
}

/* ptxas -v, per entry:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
 *   ptxas info    : Function properties for NAME
 *       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem
 * The entry's part runs from its "Function properties" to the next
 * function's; "smem" is absent when the entry has no static shared
 * memory, and older releases add "N bytes cmem[0]" and leave out barriers. */
/* ptxas's wgmma messages come before the entries' reports, one a line,
 * each ending with the function it is about:
 *   ptxas info    : (C7519) warpgroup.arrive is injected in around line 1057 by
 *       compiler to allow use of registers in GMMA in function 'NAME'
 *   ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions
 *       are serialized due to ... in the function 'NAME'
 * (each one line in the log). The kind is told by its words, not its
 * code, which differs between the serialization reasons. */
static void count_wgmma_line(const char *line, size_t len, PtxasWgmma *w)
{
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1), line);
    if (strstr(text, "wgmma.mma_async instructions are serialized")) w->serialized++;
    else if (strstr(text, "warpgroup.wait is injected")) w->wait_injected++;
    else if (strstr(text, "warpgroup.arrive is injected")) w->arrive_injected++;
    else return;
    if (w->first[0]) return;
    const char *body = strstr(text, " : ");
    body = body ? body + 3 : text;
    static const char *const name_intro[] = {" in the function '", " in function '"};
    size_t keep = strlen(body);
    for (size_t i = 0; i < sizeof name_intro / sizeof *name_intro; i++) {
        const char *at = strstr(body, name_intro[i]);
        if (at && (size_t)(at - body) < keep) keep = (size_t)(at - body);
    }
    snprintf(w->first, sizeof w->first, "%.*s", (int)keep, body);
}

static void read_wgmma_messages(const char *log, const char *entry, PtxasWgmma *w)
{
    char tail[600];
    int tail_len = snprintf(tail, sizeof tail, "function '%s'", entry);
    for (const char *line = log; *line;) {
        size_t len = strcspn(line, "\n");
        size_t end = len;
        while (end && (line[end - 1] == '\r' || line[end - 1] == ' ')) end--;
        if (tail_len > 0 && end >= (size_t)tail_len && !memcmp(line + end - tail_len, tail, (size_t)tail_len))
            count_wgmma_line(line, end, w);
        line += len + (line[len] == '\n');
    }
}

bool ptxas_wgmma_text(const PtxasWgmma *w, char *buf, size_t n)
{
    if (n) buf[0] = 0;
    if (!w->serialized && !w->wait_injected && !w->arrive_injected) return false;
    size_t len = (size_t)snprintf(buf, n, "wgmma pipeline lost:");
    const char *sep = " ";
    if (w->serialized && len < n) len += (size_t)snprintf(buf + len, n - len, "%s%d serialized", sep, w->serialized), sep = ", ";
    if (w->wait_injected && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%s%d warpgroup.wait injected (C7517)", sep, w->wait_injected), sep = ", ";
    if (w->arrive_injected && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%s%d warpgroup.arrive injected (C7519)", sep, w->arrive_injected);
    if (len < n) snprintf(buf + len, n - len, "; first: %s", w->first);
    return true;
}

bool ptxas_report_of(const char *log, const char *entry, PtxasReport *r)
{
    *r = (PtxasReport){-1, -1, -1, -1, -1, {0}};
    read_wgmma_messages(log, entry, &r->wgmma);
    static const char props[] = "Function properties for ";
    char head[600];
    snprintf(head, sizeof head, "%s%s", props, entry);
    const char *end = log + strlen(log), *start = find_word(log, end, head);
    if (!start) return false;
    const char *next = strstr(start + strlen(head), props), *compiling = strstr(start + strlen(head), "Compiling entry function");
    if (compiling && (!next || compiling < next)) next = compiling;
    if (next) end = next;
    r->registers = (int)number_before(start, end, "registers");
    r->stack_frame = number_before(start, end, "bytes stack frame");
    r->spill_stores = number_before(start, end, "bytes spill stores");
    r->spill_loads = number_before(start, end, "bytes spill loads");
    r->shared = number_before(start, end, "bytes smem");
    if (r->registers >= 0 && r->shared < 0) r->shared = 0;
    return true;
}
