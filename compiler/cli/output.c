/* output.c: phc writes its output, made in memory, to a file or standard
 * output (cli.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

/* The output is made in memory first, so a failing run writes nothing.
 * A regular file is replaced whole (written aside, then renamed over it);
 * the file a symbolic link points to is the one replaced, so the link
 * stays; phc's own standard output (-o -, /dev/stdout) is written through
 * the stream it has; another file that is not a regular one (a device, a
 * FIFO) is opened and written, never replaced; a directory is refused. */

static int cannot_write(const char *path, const char *why)
{
    fprintf(stderr, "phc: cannot write %s: %s\n", path, why);
    return EXIT_USAGE;
}

static bool write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static int write_stdout(const char *buf, size_t len)
{
    if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) return cannot_write("standard output", strerror(errno));
    return EXIT_OK;
}

/* The file the chain of symbolic links from path ends at, whether it
 * exists or not (path itself when it is no link). 0, or -1 with errno. */
static int resolve_links(const char *path, char *out, size_t n)
{
    if ((size_t)snprintf(out, n, "%s", path) >= n) return errno = ENAMETOOLONG, -1;
    for (int hops = 0; hops < 40; hops++) {
        char link[4096], next[4096];
        ssize_t len = readlink(out, link, sizeof link - 1);
        if (len < 0) return errno == EINVAL || errno == ENOENT ? 0 : -1;   /* no link, or nothing there yet */
        link[len] = 0;
        const char *slash = strrchr(out, '/');
        int dir = link[0] == '/' || !slash ? 0 : (int)(slash - out + 1);   /* a relative link is read from its folder */
        if ((size_t)snprintf(next, sizeof next, "%.*s%s", dir, out, link) >= sizeof next || strlen(next) >= n)
            return errno = ENAMETOOLONG, -1;
        strcpy(out, next);
    }
    return errno = ELOOP, -1;
}

/* Writes target whole or not at all: into a new file beside it, then
 * renamed over it; an existing file keeps its permissions. */
static int replace_file(const char *shown, const char *target, const char *buf, size_t len)
{
    struct stat st;
    bool exists = stat(target, &st) == 0;
    if (exists && access(target, W_OK)) return cannot_write(shown, strerror(errno));
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.phc%ld.tmp", target, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) return cannot_write(shown, strerror(errno));
    bool ok = (!exists || !fchmod(fd, st.st_mode & 07777)) && write_all(fd, buf, len);
    int saved = errno;
    if (close(fd) && ok) ok = false, saved = errno;
    if (ok && rename(tmp, target)) ok = false, saved = errno;
    if (ok) return EXIT_OK;
    unlink(tmp);
    return cannot_write(shown, strerror(saved));
}

static int write_in_place(const char *path, const char *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_NOCTTY);
    if (fd < 0) return cannot_write(path, strerror(errno));
    bool ok = write_all(fd, buf, len);
    int saved = errno;
    if (close(fd) && ok) ok = false, saved = errno;
    return ok ? EXIT_OK : cannot_write(path, strerror(saved));
}

int phc_write_output(const char *path, const char *input, const char *buf, size_t len)
{
    if (!path || !strcmp(path, "-")) return write_stdout(buf, len);
    struct stat st, out, in;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return cannot_write(path, "it is a directory");
        if (strcmp(input, "-") && !stat(input, &in) && st.st_dev == in.st_dev && st.st_ino == in.st_ino)
            return cannot_write(path, "it is the input file");
        if (!fstat(STDOUT_FILENO, &out) && st.st_dev == out.st_dev && st.st_ino == out.st_ino) return write_stdout(buf, len);
        if (!S_ISREG(st.st_mode)) return write_in_place(path, buf, len);
    }
    char target[4096];
    if (resolve_links(path, target, sizeof target)) return cannot_write(path, strerror(errno));
    return replace_file(path, target, buf, len);
}
