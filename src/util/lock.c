/* lock.c — exclusive locks on a folder for processes that must not share it (two trainers on one
 * checkpoint folder, two supervisors on one job): flock(2) on a lock file that holds the holder's
 * pid as text.
 *
 * Contract: the lock is advisory and tied to the open file, so it is released when the holder
 * closes it or dies (SIGKILL included); a stale pid left in the file by a dead holder is harmless —
 * the next taker gets the lock and overwrites it. The pid is read only to name the holder in a
 * message. */
#include "baton/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int baton_lock_acquire(const char *path, const char *what, int *fd_out, baton_err *err)
{
    *fd_out = -1;
    /* the lock is held on a read-only descriptor, so that holding it never keeps a file open for
     * writing (that would stop the file system from being remounted read-only under a run); the
     * pid is written through a second, short-lived one */
    int fd = baton_sys.open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        baton_err_errno(err, e, "cannot create the lock file", path);
        return baton_err_prefix(err, "%s is not writable", what);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e != EWOULDBLOCK) {
            baton_sys.close(fd);
            return baton_err_errno(err, e, "cannot lock", path);
        }
        char b[32] = {0};
        ssize_t n = baton_sys.pread(fd, b, sizeof b - 1, 0);
        baton_sys.close(fd);
        long pid = n > 0 ? strtol(b, NULL, 10) : 0;
        if (pid > 0)
            return baton_err_set(err, BATON_ERR_BUSY, "%s is in use by process %ld (%s is locked)", what, pid, path);
        return baton_err_set(err, BATON_ERR_BUSY, "%s is in use by another process (%s is locked)", what, path);
    }
    char b[32];
    int n = snprintf(b, sizeof b, "%ld\n", (long)getpid());
    int wfd = baton_sys.open(path, O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    int ok = wfd >= 0 && baton_sys.write(wfd, b, (size_t)n) == n;
    int e = errno;
    if (wfd >= 0 && baton_sys.close(wfd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        baton_sys.close(fd);
        baton_err_errno(err, e, "cannot write the lock file", path);
        return baton_err_prefix(err, "%s is not writable", what);
    }
    *fd_out = fd;
    return BATON_OK;
}

void baton_lock_release(int fd)
{
    if (fd >= 0) baton_sys.close(fd);
}
