/* store_local.c — stores on a local or mounted file system: objects are files under the folder.
 *
 * Owns: whole-file reads, ranged reads (pread), sizes, crash-safe writes (temp file, fsync,
 * rename, fsync of the parent), streamed copies for put_file, deletes that remove the folders they
 * leave empty; the local store's method table (the walk that lists it is in store_list.c). Every system call that moves data
 * goes through baton_sys, so tests can inject failures.
 *
 * Contract: a missing object is BATON_ERR_NOTFOUND naming its path; a range that runs past the end
 * of the file is BATON_ERR_TRUNCATED naming the path, the offset and the size; names with '/'
 * create the folders they need on put. */
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int os_err(baton_err *err, const char *what, const char *path) { return baton_err_errno(err, errno, what, path); }

static int object_path(baton_store *s, const char *name, char *path, size_t cap, baton_err *err)
{
    return baton_path_join(path, cap, s->local_dir, name, err);
}

int io_local_open(baton_store *s, const char *name, char *path, size_t cap, baton_err *err)
{
    int rc = object_path(s, name, path, cap, err);
    if (rc != BATON_OK) return rc;
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0) return os_err(err, "cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = os_err(err, "cannot stat", path);
        baton_sys.close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        baton_sys.close(fd);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a regular file", path);
    }
    return fd;
}

static int local_get_range(baton_store *s, const char *name, uint64_t off, uint64_t len,
                           baton_buf *out, baton_err *err)
{
    char path[4096];
    int fd = io_local_open(s, name, path, sizeof path, err);
    if (fd < 0) return fd;
    struct stat st;
    int rc = BATON_OK;
    if (fstat(fd, &st) != 0) {
        rc = os_err(err, "cannot stat", path);
    } else if ((uint64_t)st.st_size < off + len) {
        rc = baton_err_set(err, BATON_ERR_TRUNCATED,
                           "%s: range of %" PRIu64 " bytes at offset %" PRIu64
                           " runs past the end of the file (%lld bytes)",
                           path, len, off, (long long)st.st_size);
    } else if (baton_buf_reserve(out, (size_t)len) != BATON_OK) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for %" PRIu64 " bytes", path, len);
    }
    uint64_t got = 0;
    while (rc == BATON_OK && got < len) {
        ssize_t r = baton_sys.pread(fd, out->data + out->len, (size_t)(len - got), (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = os_err(err, "read failed", path);
        } else if (r == 0) {
            rc = baton_err_set(err, BATON_ERR_TRUNCATED,
                               "%s: file ended at offset %" PRIu64 " (shrank while being read)", path,
                               off + got);
        } else {
            out->len += (size_t)r;
            got += (uint64_t)r;
        }
    }
    if (rc != BATON_OK) out->len -= (size_t)got;
    baton_sys.close(fd);
    return rc;
}

static int local_get(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err)
{
    char path[4096];
    int fd = io_local_open(s, name, path, sizeof path, err);
    if (fd < 0) return fd;
    struct stat st;
    int rc = BATON_OK;
    if (fstat(fd, &st) != 0)
        rc = os_err(err, "cannot stat", path);
    else if ((uint64_t)st.st_size > max)
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: %lld bytes, more than the %zu accepted", path,
                           (long long)st.st_size, max);
    baton_sys.close(fd);
    if (rc != BATON_OK) return rc;
    if (st.st_size == 0) return BATON_OK;
    return local_get_range(s, name, 0, (uint64_t)st.st_size, out, err);
}

static int local_size(baton_store *s, const char *name, uint64_t *size, baton_err *err)
{
    char path[4096];
    int fd = io_local_open(s, name, path, sizeof path, err);
    if (fd < 0) return fd;
    struct stat st;
    int rc = BATON_OK;
    if (fstat(fd, &st) != 0) rc = os_err(err, "cannot stat", path);
    else *size = (uint64_t)st.st_size;
    baton_sys.close(fd);
    return rc;
}

static int make_parent(const char *path, baton_err *err)
{
    char dir[4096];
    baton_path_dirname(path, dir, sizeof dir);
    if (baton_is_dir(dir)) return BATON_OK;
    return baton_mkdir_p(dir, err);
}

static int local_put(baton_store *s, const char *name, const void *p, size_t n, baton_err *err)
{
    char path[4096];
    int rc = object_path(s, name, path, sizeof path, err);
    if (rc == BATON_OK) rc = make_parent(path, err);
    if (rc == BATON_OK) rc = baton_file_write_atomic(path, p, n, err);
    return rc;
}

static int local_put_file(baton_store *s, const char *name, const char *src, baton_err *err)
{
    char path[4096], tmp[4200];
    int rc = object_path(s, name, path, sizeof path, err);
    if (rc == BATON_OK) rc = make_parent(path, err);
    if (rc != BATON_OK) return rc;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int in = baton_open_regular(src, err);
    if (in == -2) return err->code;
    if (in < 0) return os_err(err, "cannot open", src);
    int out = baton_sys.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        rc = os_err(err, "cannot create", tmp);
        baton_sys.close(in);
        return rc;
    }
    size_t cap = 1 << 20;
    uint8_t *buf = malloc(cap);
    if (!buf) rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", src);
    while (rc == BATON_OK) {
        ssize_t r = baton_sys.read(in, buf, cap);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = os_err(err, "read failed", src);
        } else if (r == 0) {
            break;
        } else {
            rc = baton_write_all(out, buf, (size_t)r, tmp, err);
        }
    }
    free(buf);
    baton_sys.close(in);
    return baton_file_publish(out, tmp, path, rc, err);
}

static int local_delete(baton_store *s, const char *name, baton_err *err)
{
    char path[4096];
    int rc = object_path(s, name, path, sizeof path, err);
    if (rc != BATON_OK) return rc;
    if (baton_sys.unlink(path) != 0 && errno != ENOENT)
        return baton_err_set(err, BATON_ERR_IO, "%s: cannot delete: %s", path, strerror(errno));
    /* folders exist only for their objects (as on S3): remove the ones left empty */
    for (char *slash = strrchr(path, '/'); slash && slash > path + strlen(s->local_dir); slash = strrchr(path, '/')) {
        *slash = 0;
        if (rmdir(path) != 0) break;
    }
    return BATON_OK;
}

const io_store_ops io_store_local_ops = {
    .get = local_get,
    .get_range = local_get_range,
    .size = local_size,
    .put = local_put,
    .put_file = local_put_file,
    .del = local_delete,
    .list = io_local_list,
};
