/* remote_util.c — helpers of the Slurm and AWS fleet backends (see remote_internal.h): run a
 * program and capture its output (posix_spawnp + poll, no shell), shell quoting, base64, and the
 * checks of a job file's backend section.
 *
 * Contract: nothing here exits or prints; errors are values whose messages name the program,
 * the file and line, or the field. */
#include "remote_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define RMT_MAX_OUTPUT (8u << 20)

int rmt_printf(baton_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return BATON_ERR_FORMAT;
    if (baton_buf_reserve(b, (size_t)n + 1)) return BATON_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return BATON_OK;
}

int rmt_cstr(baton_buf *b)
{
    if (baton_buf_reserve(b, 1)) return BATON_ERR_NOMEM;
    b->data[b->len] = 0;
    return BATON_OK;
}

int rmt_only(const char *s, const char *set)
{
    if (!s || !*s) return 0;
    for (; *s; s++)
        if (!strchr(set, *s)) return 0;
    return 1;
}

int rmt_shq(baton_buf *b, const char *s)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-";
    if (rmt_only(s, safe)) return baton_buf_append(b, s, strlen(s));
    if (baton_buf_append(b, "'", 1)) return BATON_ERR_NOMEM;
    for (; *s; s++) {
        int rc = *s == '\'' ? baton_buf_append(b, "'\\''", 4) : baton_buf_append(b, s, 1);
        if (rc) return BATON_ERR_NOMEM;
    }
    return baton_buf_append(b, "'", 1);
}

int rmt_base64(baton_buf *b, const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (baton_buf_reserve(b, (n + 2) / 3 * 4 + 1)) return BATON_ERR_NOMEM;
    char *o = (char *)b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tab[v >> 18], *o++ = tab[v >> 12 & 63], *o++ = tab[v >> 6 & 63], *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = tab[v >> 18], *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    b->len = (size_t)(o - (char *)b->data);
    return BATON_OK;
}

/* ------------------------------------------------------------------ running programs */
static int drain(int fd, baton_buf *b, size_t *dropped)
{
    char tmp[16384];
    ssize_t r = read(fd, tmp, sizeof tmp);
    if (r < 0) return errno == EINTR || errno == EAGAIN ? 1 : -1;
    if (r == 0) return 0;
    if (b && b->len + (size_t)r <= RMT_MAX_OUTPUT) {
        if (baton_buf_append(b, tmp, (size_t)r)) return -1;
    } else {
        *dropped += (size_t)r;
    }
    return 1;
}

int rmt_run(const char *const *argv, baton_buf *out, baton_buf *errout, int *status, baton_err *err)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc = BATON_OK;
    posix_spawn_file_actions_t fa;
    *status = -1;
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: pipe: %s", argv[0], strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    /* the child starts with default signal dispositions and an empty mask */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(po[1]), close(pe[1]);
    po[1] = pe[1] = -1;
    if (e) {
        rc = baton_err_set(err, e == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO, "%s: cannot run it: %s%s",
                           argv[0], strerror(e), e == ENOENT ? " (is it installed and on PATH?)" : "");
        goto out;
    }
    size_t dropped = 0;
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_n = 2;
    while (open_n > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int d = drain(pf[k].fd, k ? errout : out, &dropped);
            if (d <= 0) pf[k].fd = -1, open_n--;
        }
    }
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) {
            rc = baton_err_set(err, BATON_ERR_IO, "%s: waitpid: %s", argv[0], strerror(errno));
            goto out;
        }
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    if ((out && rmt_cstr(out)) || (errout && rmt_cstr(errout)))
        rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for its output", argv[0]);
out:
    for (int k = 0; k < 2; k++) {
        if (po[k] >= 0) close(po[k]);
        if (pe[k] >= 0) close(pe[k]);
    }
    return rc;
}

/* ------------------------------------------------------------------ job file sections */
const char *rmt_opt(const baton_job *job, const char *key, int *line)
{
    const baton_job_kv *kv = fleet_job_backend_opt(job, key);
    if (line) *line = kv ? kv->line : 0;
    return kv ? kv->value : NULL;
}

int rmt_fail(baton_err *err, const baton_job *job, int line, const char *field, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) return baton_err_set(err, BATON_ERR_ARG, "%s:%d: %s: %s", job->path, line, field, msg);
    return baton_err_set(err, BATON_ERR_ARG, "%s: %s: %s", job->path, field, msg);
}

int rmt_check_section(const baton_job *job, const char *prefix, const char *const *known, baton_err *err)
{
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < job->nbackend_opts; i++) {
        const baton_job_kv *kv = &job->backend_opts[i];
        if (strncmp(kv->key, prefix, pl)) continue;
        const char *k = kv->key + pl;
        int ok = 0;
        for (const char *const *n = known; *n && !ok; n++) {
            size_t nl = strlen(*n);
            ok = (*n)[nl - 1] == '.' ? !strncmp(k, *n, nl) && k[nl] : !strcmp(k, *n);
        }
        if (ok) continue;
        char list[512] = "";
        for (const char *const *n = known; *n; n++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%.*s", l ? ", " : "", (int)strcspn(*n, "."), *n);
        }
        return rmt_fail(err, job, kv->line, kv->key, "unknown field (known here: %s)", list);
    }
    return BATON_OK;
}

int rmt_write_file(const char *path, const void *p, size_t n, unsigned mode, baton_err *err)
{
    char dir[4096];
    baton_path_dirname(path, dir, sizeof dir);
    int rc = baton_mkdir_p(dir, err);
    if (!rc) rc = baton_file_write_atomic(path, p, n, err);
    if (!rc && chmod(path, mode))
        rc = baton_err_set(err, BATON_ERR_IO, "%s: chmod: %s", path, strerror(errno));
    return rc;
}
