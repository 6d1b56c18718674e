/* cache.c: the runtime's disk cache.
 * A config's PTX is kept in a file named by a hash of its module's source
 * text, its entry name, the target, and this build of the library, so a
 * second run of a program skips code generation; a rebuilt library never reads an older one's
 * PTX. The folder is $PHOBOS_CACHE_DIR (empty or "off": no cache), else
 * $XDG_CACHE_HOME/phobos, else ~/.cache/phobos. Any failure to read or
 * write it only means compiling again. A cubin ptxas made of a PTX is
 * kept beside it, and the autotuner's winners too (autotune.c). */
#define _GNU_SOURCE
#include "cache.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "codegen/codegen.h"
#include "dsl.h"
#include "phobos.h"

bool ph_internal_cache_folder(char *folder, size_t n)
{
    const char *dir = getenv("PHOBOS_CACHE_DIR"), *sub = "";
    char base[1024];
    if (dir && (!*dir || !strcmp(dir, "off"))) return false;
    if (!dir) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) snprintf(base, sizeof base, "%s", xdg);
        else if (home && *home) snprintf(base, sizeof base, "%s/.cache", home);
        else return false;
        mkdir(base, 0755);
        dir = base;
        sub = "/phobos";
    }
    if ((size_t)snprintf(folder, n, "%s%s", dir, sub) >= n) return false;
    mkdir(folder, 0755);
    return true;
}

/* ---- the build ---- */

static char build_id[160];

/* Finds the GNU build id note of the object that holds this file's code. */
static int read_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t here = (uintptr_t)data;
    bool ours = false;
    for (int i = 0; i < info->dlpi_phnum && !ours; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + p->p_vaddr;
        ours = p->p_type == PT_LOAD && here >= start && here < start + p->p_memsz;
    }
    if (!ours) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_NOTE) continue;
        size_t align = p->p_align == 8 ? 8 : 4;
        const unsigned char *note = (const unsigned char *)(info->dlpi_addr + p->p_vaddr), *end = note + p->p_memsz;
        while (note + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)note;
            const unsigned char *name = note + sizeof *h, *desc = name + ((h->n_namesz + align - 1) & ~(align - 1));
            if (desc + h->n_descsz > end) break;
            if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4) && h->n_descsz <= 64) {
                size_t len = strlen(build_id);
                for (unsigned j = 0; j < h->n_descsz; j++) len += (size_t)sprintf(build_id + len, "%02x", desc[j]);
                return 1;
            }
            note = desc + ((h->n_descsz + align - 1) & ~(align - 1));
        }
    }
    return 1;
}

const char *ph_internal_build_id(void)
{
    if (*build_id) return build_id;
    snprintf(build_id, sizeof build_id, "%s ", ph_version());
    size_t len = strlen(build_id);
    dl_iterate_phdr(read_build_id, (void *)(uintptr_t)&read_build_id);
    if (strlen(build_id) == len) snprintf(build_id + len, sizeof build_id - len, "compiled %s %s", __DATE__, __TIME__);
    return build_id;
}

/* ---- PTX ---- */

/* The library's GNU build id names the build: it changes with any source
 * file, where this file's own compile time would miss a rebuilt compiler. */
uint64_t ph_internal_source_key(const char *path, const char *source)
{
    const char *build = ph_internal_build_id();
    uint64_t h = fnv1a(FNV1A_START, build, strlen(build));
    for (const char *const *sw = codegen_switches; *sw; sw++) {
        const char *v = getenv(*sw);
        if (v) h = fnv1a(fnv1a(h, *sw, strlen(*sw) + 1), v, strlen(v) + 1);
    }
    if (source) return fnv1a(h, source, strlen(source));
    SrcFile f;
    char err[256];
    if (!path || src_load(&f, path, err, sizeof err)) return 0;
    h = fnv1a(h, f.text, f.len);
    src_free(&f);
    return h ? h : 1;
}

bool ph_internal_ptx_cache_path(uint64_t key, const char *arch, char *path, size_t n)
{
    char folder[1100];
    if (!ph_internal_cache_folder(folder, sizeof folder)) return false;
    return key && (size_t)snprintf(path, n, "%s/%016llx-%s.ptx", folder, (unsigned long long)key, arch) < n;
}

char *ph_internal_ptx_cache_read(const char *path)
{
    SrcFile f;
    char err[256];
    if (src_load(&f, path, err, sizeof err)) return NULL;
    char *text = (char *)f.text;
    free((char *)f.path);
    if (f.len < 16 || strncmp(text, "//", 2)) {   /* not PTX as the code generator writes it */
        free(text);
        return NULL;
    }
    return text;
}

void ph_internal_ptx_cache_write(const char *path, const char *ptx)
{
    char tmp[1240];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    bool ok = fputs(ptx, f) >= 0;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) remove(tmp);   /* written whole, or not at all */
}

/* ---- cubins ---- */

/* The ptxas is named by its path, size and time, so another ptxas makes its own. */
bool ph_internal_cubin_cache_path(const char *ptxas, const char *arch, const char *ptx, bool lineinfo, char *path, size_t n)
{
    struct stat st;
    char folder[1100];
    if (!ph_internal_cache_folder(folder, sizeof folder) || stat(ptxas, &st)) return false;
    uint64_t key = fnv1a(FNV1A_START, ptx, strlen(ptx));
    long long id[3] = {(long long)st.st_size, (long long)st.st_mtime, lineinfo};
    key = fnv1a(fnv1a(key, ptxas, strlen(ptxas)), id, sizeof id);
    return (size_t)snprintf(path, n, "%s/%016llx-%s.cubin", folder, (unsigned long long)key, arch) < n;
}

void *ph_internal_cubin_cache_read(const char *path, size_t *bytes)
{
    SrcFile f;
    char err[256];
    if (src_load(&f, path, err, sizeof err)) return NULL;
    free((char *)f.path);
    if (f.len < 4 || memcmp(f.text, "\177ELF", 4)) {
        free((char *)f.text);
        return NULL;
    }
    *bytes = f.len;
    return (void *)f.text;
}

void ph_internal_cubin_cache_write(const char *path, const void *cubin, size_t bytes)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.%ld.%p.tmp", path, (long)getpid(), (void *)&tmp);   /* this thread's */
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    bool ok = fwrite(cubin, 1, bytes, f) == bytes;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) remove(tmp);   /* written whole, or not at all */
}
