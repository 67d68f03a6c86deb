/* file.c — file helpers: read a whole (bounded) file, write all bytes, crash-safe whole-file
 * replace (temp name, fsync, rename, fsync of the parent), mkdir -p, path joins.
 * All system calls go through baton_sys so tests can fail them. */
#include "baton/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int io_err(baton_err *err, const char *what, const char *path) { return baton_err_errno(err, errno, what, path); }

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int baton_open_regular(const char *path, baton_err *err)
{
    int fd = baton_sys.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0) return -1;
    struct stat st;   /* the real fstat: a test failing the table's fails the caller's own call */
    if (fstat(fd, &st) != 0) {
        int e = errno;
        baton_sys.close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        baton_sys.close(fd);
        baton_err_set(err, BATON_ERR_FORMAT, "%s: is %s, expected a regular file", path, kind_of(st.st_mode));
        return -2;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        baton_sys.close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int baton_check_regular(const char *path, baton_err *err)
{
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0) return io_err(err, "cannot open", path);
    baton_sys.close(fd);
    return BATON_OK;
}

int baton_file_read_all(const char *path, size_t max_len, uint8_t **out, size_t *len, baton_err *err)
{
    *out = NULL;
    *len = 0;
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0) return io_err(err, "cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = io_err(err, "cannot stat", path);
        baton_sys.close(fd);
        return rc;
    }
    if (S_ISDIR(st.st_mode)) {
        baton_sys.close(fd);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: is a directory, expected a file", path);
    }
    if ((uint64_t)st.st_size > max_len) {
        baton_sys.close(fd);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %lld bytes, more than the %zu accepted",
                             path, (long long)st.st_size, max_len);
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    uint8_t *p = malloc(cap);
    if (!p) {
        baton_sys.close(fd);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {  /* buffer full: at end of file, or the file grew */
            uint8_t probe;
            ssize_t r1 = baton_sys.read(fd, &probe, 1);
            if (r1 == 0) break;
            if (r1 < 0) {
                if (errno == EINTR) continue;
                int rc = io_err(err, "read failed", path);
                free(p);
                baton_sys.close(fd);
                return rc;
            }
            if (n + 1 > max_len) {
                free(p);
                baton_sys.close(fd);
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: more than %zu bytes", path, max_len);
            }
            uint8_t *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                baton_sys.close(fd);
                return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
            }
            p = q;
            cap *= 2;
            p[n++] = probe;
            continue;
        }
        ssize_t r = baton_sys.read(fd, p + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            int rc = io_err(err, "read failed", path);
            free(p);
            baton_sys.close(fd);
            return rc;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    baton_sys.close(fd);
    p[n] = 0;
    *out = p;
    *len = n;
    return BATON_OK;
}

int baton_write_all(int fd, const void *p, size_t n, const char *name, baton_err *err)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = baton_sys.write(fd, b, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return io_err(err, "write failed", name);
        }
        if (w == 0) {
            errno = ENOSPC;
            return io_err(err, "write made no progress", name);
        }
        b += w;
        n -= (size_t)w;
    }
    return BATON_OK;
}

int baton_fsync_dir(const char *dir, baton_err *err)
{
    int fd = baton_sys.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return io_err(err, "cannot open directory", dir);
    if (baton_sys.fsync(fd) != 0 && errno != EINVAL) {
        int rc = io_err(err, "fsync of directory failed", dir);
        baton_sys.close(fd);
        return rc;
    }
    baton_sys.close(fd);
    return BATON_OK;
}

/* baton_file_publish, with the two fsyncs only when durable. */
static int publish(int fd, const char *tmp, const char *path, int rc, int durable, baton_err *err)
{
    if (durable && rc == BATON_OK && baton_sys.fsync(fd) != 0) rc = io_err(err, "fsync failed", tmp);
    if (baton_sys.close(fd) != 0 && rc == BATON_OK) rc = io_err(err, "close failed", tmp);
    if (rc == BATON_OK && baton_sys.rename(tmp, path) != 0) rc = io_err(err, "rename failed", path);
    if (rc != BATON_OK) {
        baton_sys.unlink(tmp);
        return rc;
    }
    if (!durable) return BATON_OK;
    char dir[4096];
    baton_path_dirname(path, dir, sizeof dir);
    return baton_fsync_dir(dir, err);
}

int baton_file_publish(int fd, const char *tmp, const char *path, int rc, baton_err *err)
{
    return publish(fd, tmp, path, rc, 1, err);
}

/* An output path that names a character device or a FIFO (/dev/null, /dev/stdout, a pipe a reader
 * holds open) is written straight into: renaming a temporary file over it would replace the device
 * node with a regular file (as root, /dev/null itself). A FIFO nobody reads is refused rather than
 * waited on; other kinds of special file (mode, from stat) are refused. */
static int write_special(const char *path, mode_t mode, const void *p, size_t n, baton_err *err)
{
    if (!S_ISCHR(mode) && !S_ISFIFO(mode))
        return baton_err_set(err, BATON_ERR_IO, "%s: is %s, expected a regular file", path, kind_of(mode));
    int fd = baton_sys.open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
    if (fd < 0)
        return errno == ENXIO ? baton_err_set(err, BATON_ERR_IO, "%s: is a FIFO with no reader", path)
                              : io_err(err, "cannot open", path);
    int fl = fcntl(fd, F_GETFL);   /* writes to a pipe block as usual once a reader is there */
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    int rc = baton_write_all(fd, p, n, path, err);
    if (baton_sys.close(fd) != 0 && rc == BATON_OK) rc = io_err(err, "close failed", path);
    return rc;
}

static int write_via_tmp(const char *path, const void *p, size_t n, int durable, baton_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return write_special(path, st.st_mode, p, n, err);
    static unsigned serial;   /* threads of one process may write the same file at once */
    char tmp[4096];
    unsigned k = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), k) >= (int)sizeof tmp)
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", path);
    int fd = baton_sys.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return io_err(err, "cannot create", tmp);
    return publish(fd, tmp, path, baton_write_all(fd, p, n, tmp, err), durable, err);
}

int baton_file_write_atomic(const char *path, const void *p, size_t n, baton_err *err)
{
    return write_via_tmp(path, p, n, 1, err);
}

int baton_file_write_replace(const char *path, const void *p, size_t n, baton_err *err)
{
    return write_via_tmp(path, p, n, 0, err);
}

int baton_mkdir_p(const char *path, baton_err *err)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return baton_err_set(err, BATON_ERR_ARG, "bad directory path");
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (baton_sys.mkdir(buf, 0755) != 0 && errno != EEXIST)
                return io_err(err, "cannot create directory", buf);
            buf[i] = c;
        }
    }
    if (!baton_is_dir(path))
        return baton_err_set(err, BATON_ERR_IO, "%s: exists and is not a directory", path);
    return BATON_OK;
}

int baton_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return baton_sys.unlink(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) {
            errno = ENAMETOOLONG;
            rc = -1;
            continue;
        }
        if (baton_remove_tree(sub) != 0) rc = -1;
    }
    closedir(d);
    if (rmdir(path) != 0) rc = -1;
    return rc;
}

void baton_path_dirname(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, cap, ".");
    } else if (slash == path) {
        snprintf(out, cap, "/");
    } else {
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
    }
}

int baton_path_join(char *out, size_t cap, const char *dir, const char *name, baton_err *err)
{
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] == '/';
    int n = snprintf(out, cap, "%s%s%s", dir, slash ? "" : "/", name);
    if (n < 0 || (size_t)n >= cap)
        return baton_err_set(err, BATON_ERR_ARG, "%s/%s: path too long", dir, name);
    return BATON_OK;
}

int baton_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
