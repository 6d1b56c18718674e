/* ptxinfo.c: a config's costs read back from text (ptxinfo.h): the shared
 * memory its PTX declares, and ptxas -v's report of registers, stack
 * frame, spills and shared memory. */
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
    uint32_t words[1 + 4 * CODEGEN_MAX_COPY_DESCS] = {0};
    int nbytes = 0;
    while (*p && *p != '}' && nbytes < 4 * (1 + 4 * CODEGEN_MAX_COPY_DESCS)) {
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
    for (int j = 0; j < n; j++)
        out[j] = (CodegenCopyDesc){(int)words[1 + 4 * j], (int)words[2 + 4 * j], (int)words[3 + 4 * j], (int)words[4 + 4 * j]};
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
bool ptxas_report_of(const char *log, const char *entry, PtxasReport *r)
{
    *r = (PtxasReport){-1, -1, -1, -1, -1};
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
