/* ptxas.c: NVIDIA's PTX assembler, run as a program (ptxas.h). ptxas
 * reads and writes files, so each run has a private temporary folder for
 * the PTX, the cubin and what it prints. */
#include "ptxas.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

static bool executable(char *path, size_t n, const char *fmt, const char *a, int len)
{
    int w = len >= 0 ? snprintf(path, n, fmt, len, a) : snprintf(path, n, fmt, a);
    return w > 0 && (size_t)w < n && !access(path, X_OK);
}

bool ptxas_find(char *path, size_t n)
{
    const char *env = getenv("PTXAS"), *home = getenv("CUDA_HOME"), *dirs = getenv("PATH");
    if (env && *env && executable(path, n, "%s", env, -1)) return true;
    if (executable(path, n, "%s/bin/ptxas", home && *home ? home : "/usr/local/cuda", -1)) return true;
    for (const char *d = dirs ? dirs : ""; *d;) {
        size_t len = strcspn(d, ":");
        if (len && executable(path, n, "%.*s/ptxas", d, (int)len)) return true;
        d += len + (d[len] == ':');
    }
    return false;
}

/* The whole of a file, NUL-terminated; NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = xmalloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = xrealloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

static bool write_all(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return !fclose(f) && ok;
}

/* Runs args[0] with stdout and stderr to log_path; the wait status as
 * ptxas_run reports it. */
static int spawn_and_wait(char **args, const char *log_path, char *err, size_t errlen)
{
    posix_spawn_file_actions_t io;
    posix_spawn_file_actions_init(&io);
    posix_spawn_file_actions_addopen(&io, STDOUT_FILENO, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&io, STDOUT_FILENO, STDERR_FILENO);
    extern char **environ;
    pid_t pid;
    int rc = posix_spawn(&pid, args[0], &io, NULL, args, environ), ws = 0;
    posix_spawn_file_actions_destroy(&io);
    if (rc) {
        snprintf(err, errlen, "cannot run %s: %s", args[0], strerror(rc));
        return -1;
    }
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "waiting for %s: %s", args[0], strerror(errno));
            return -1;
        }
    if (WIFEXITED(ws)) return WEXITSTATUS(ws);
    snprintf(err, errlen, "%s was killed by signal %d", args[0], WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    return -1;
}

int ptxas_run(const char *ptxas, const char *arch, const char *ptx, int flags, PtxasRun *r)
{
    *r = (PtxasRun){.status = -1};
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/phobos-ptxas.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(r->err, sizeof r->err, "cannot make a temporary folder %.200s: %s", dir, strerror(errno));
        r->log = xstrdup("");
        return r->status;
    }
    char ptx_path[4200], cubin_path[4200], log_path[4200], arch_opt[64];
    snprintf(ptx_path, sizeof ptx_path, "%s/k.ptx", dir);
    snprintf(cubin_path, sizeof cubin_path, "%s/k.cubin", dir);
    snprintf(log_path, sizeof log_path, "%s/ptxas.log", dir);
    snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
    if (!write_all(ptx_path, ptx)) snprintf(r->err, sizeof r->err, "cannot write %.200s", ptx_path);
    else {
        char *args[8] = {(char *)ptxas}, **a = args + 1;
        if (flags & PTXAS_VERBOSE) *a++ = "-v";
        if (flags & PTXAS_LINEINFO) *a++ = "-lineinfo";
        *a++ = arch_opt, *a++ = "-o", *a++ = cubin_path, *a++ = ptx_path, *a = NULL;
        r->status = spawn_and_wait(args, log_path, r->err, sizeof r->err);
    }
    r->log = read_all(log_path, NULL);
    if (!r->log) r->log = xstrdup("");
    if (r->status == 0) r->cubin = read_all(cubin_path, &r->cubin_bytes);
    remove(ptx_path);
    remove(cubin_path);
    remove(log_path);
    rmdir(dir);
    return r->status;
}

void ptxas_run_free(PtxasRun *r)
{
    free(r->log);
    free(r->cubin);
    *r = (PtxasRun){0};
}
