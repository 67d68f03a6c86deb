/* verify_log.c — the event log that `baton verify-resume` reads: when the environment variable
 * BATON_VERIFY_LOG names a file, baton_verify_log appends one line to it per call (a JSON object
 * the caller formats), each with a single write on a descriptor opened with O_APPEND, so lines from
 * several threads (the training loop, the checkpoint thread) never interleave within a line.
 *
 * Contract:
 *   - without the variable (or with it empty) nothing is opened or written, and a call costs one
 *     atomic load after the first;
 *   - the file is opened once per process (created 0644, O_CLOEXEC) and kept open; a file that
 *     cannot be opened is warned about once and the log stays off;
 *   - a line longer than 1 KiB is cut (the events are small); a failed write is ignored: the log is
 *     evidence for the verifier, never a reason for a trainer to stop;
 *   - a forked child keeps writing to the same file (the descriptor is inherited). */
#include "baton/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int log_fd = -2;   /* -2: not looked at yet; -1: off */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_log(void)
{
    const char *path = getenv("BATON_VERIFY_LOG");
    int fd = -1;
    if (path && *path) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) baton_log(BATON_LOG_WARN, "BATON_VERIFY_LOG %s: cannot open: %s (no events logged)", path, strerror(errno));
    }
    atomic_store(&log_fd, fd);
}

int baton_verify_log_on(void)
{
    int fd = atomic_load_explicit(&log_fd, memory_order_acquire);
    if (fd == -2) {
        pthread_once(&once, open_log);
        fd = atomic_load(&log_fd);
    }
    return fd >= 0;
}

void baton_verify_log(const char *fmt, ...)
{
    if (!baton_verify_log_on()) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w;
    do w = write(atomic_load(&log_fd), line, (size_t)n);
    while (w < 0 && errno == EINTR);
}
