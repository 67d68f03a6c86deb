/* channel.c — a dataset exposed as SageMaker-style named pipes, so a trainer in any language reads
 * streamed records exactly as in SageMaker Pipe mode (see io.h for the contract).
 *
 * Each epoch: mkfifo <dir>/<channel>_<epoch>, open it for writing (this blocks until a reader
 * opens it; polled with O_NONBLOCK so a timeout can apply), write the epoch's records RecordIO-
 * framed, close (the reader sees end of file), unlink. EPIPE means the reader went away: the
 * epoch ends there and the loader seeks to the start of the next epoch. SIGPIPE is ignored for the process.
 * The loader is told where the last epoch ends, so it fetches nothing beyond it.
 *
 * The end of an epoch is said apart from a producer that died: once every record of epoch e is
 * written and before the pipe is closed, <dir>/<channel>_<e>.done is written (atomically), one
 * JSON object {"epoch", "records", "pid", "last"}. A reader that meets end of file without that
 * file — or whose count differs — was cut off; one waiting for the next pipe can watch "pid". An
 * epoch's stale .done is removed before its pipe is made. */
#include "io_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int open_writer(const char *path, double timeout_s, baton_err *err)
{
    double t0 = baton_now();
    for (;;) {
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);  /* blocking writes from here on */
            return fd;
        }
        if (errno != ENXIO)  /* ENXIO: no reader yet */
            return baton_err_set(err, BATON_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        if (timeout_s > 0 && baton_now() - t0 > timeout_s)
            return baton_err_set(err, BATON_ERR_IO, "%s: no reader opened it within %.0f s", path, timeout_s);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* A channel name is one path component of letters, digits, '.', '_' and '-' (not starting with '.'):
 * its pipes must land inside fifo_dir. */
/* The epoch's ".done" file: {"epoch", "records", "pid", "last"}, written whole or not at all
 * (a failure is a warning: the pipe's EOF still ends the epoch). */
static void write_done(const char *path, uint64_t epoch, uint64_t records, int last)
{
    cJSON *j = cJSON_CreateObject();
    char *text = NULL;
    if (j && cJSON_AddNumberToObject(j, "epoch", (double)epoch) && cJSON_AddNumberToObject(j, "records", (double)records) &&
        cJSON_AddNumberToObject(j, "pid", (double)getpid()) && cJSON_AddBoolToObject(j, "last", last))
        text = baton_json_print(j, 0);
    cJSON_Delete(j);
    baton_err e2 = {0};
    if (!text) {
        baton_log(BATON_LOG_WARN, "%s: out of memory", path);
        return;
    }
    size_t k = strlen(text);
    text[k] = '\n';   /* over the terminator: the file is the line and its newline */
    if (baton_file_write_atomic(path, text, k + 1, &e2)) baton_log(BATON_LOG_WARN, "%s: %s", path, e2.msg);
    free(text);
}

static int channel_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 1 && n <= 200 && s[0] != '.' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int baton_channel_check(const baton_channel_opts *o, baton_err *err)
{
    if (!channel_name_ok(o->channel))
        return baton_err_set(err, BATON_ERR_USAGE, "--channel '%s': expected a name of letters, digits, '.', '_' and "
                             "'-' (the pipes are NAME_0, NAME_1, ... inside --fifo-dir)", o->channel ? o->channel : "");
    if (o->epochs < 1) return baton_err_set(err, BATON_ERR_USAGE, "--epochs must be >= 1");
    /* the folder is the reader's: it must exist (a folder created here has no reader waiting in it) */
    struct stat sb;
    if (stat(o->fifo_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such folder (create it, and point the reader at it)",
                             o->fifo_dir);
    return BATON_OK;
}

int baton_channel_run(baton_loader *l, const baton_channel_opts *o, baton_channel_stats *st,
                      baton_err *err)
{
    memset(st, 0, sizeof *st);
    int rc = baton_channel_check(o, err);
    if (rc) return rc;
    signal(SIGPIPE, SIG_IGN);
    struct stat sb;
    /* nothing past the last epoch is fetched */
    baton_cursor end = {baton_loader_cursor(l).seed, o->epochs, 0};
    if ((rc = baton_loader_set_end(l, &end, err))) return rc;
    baton_buf frame = {0};
    while (rc == BATON_OK && baton_loader_cursor(l).epoch < o->epochs) {
        uint64_t epoch = baton_loader_cursor(l).epoch;
        char path[4096], name[256];
        snprintf(name, sizeof name, "%s_%llu", o->channel, (unsigned long long)epoch);
        if ((rc = baton_path_join(path, sizeof path, o->fifo_dir, name, err))) break;
        if (lstat(path, &sb) == 0) {   /* a pipe a crashed run left is replaced; anything else is not ours */
            if (!S_ISFIFO(sb.st_mode)) {
                rc = baton_err_set(err, BATON_ERR_ARG, "%s exists and is not a named pipe: not touching it (remove it, "
                                   "or use another --channel)", path);
                break;
            }
            unlink(path);
        }
        char done[4200];
        snprintf(done, sizeof done, "%s.done", path);
        unlink(done);   /* a crashed run's: this epoch is not done yet */
        if (mkfifo(path, 0644) != 0) {
            rc = baton_err_set(err, BATON_ERR_IO, "%s: mkfifo: %s", path, strerror(errno));
            break;
        }
        if (o->on_pipe) o->on_pipe(path, o->ud);
        int fd = open_writer(path, o->open_timeout_s, err);
        if (fd < 0) {
            rc = err->code;
            unlink(path);
            if (o->on_pipe) o->on_pipe(NULL, o->ud);
            break;
        }
        baton_progress prog;
        if (o->progress) baton_progress_start(&prog, name, baton_loader_epoch_size(l));
        baton_record r;
        uint64_t n = 0, gone = st->readers_gone;
        while ((rc = baton_loader_next(l, &r, err)) == BATON_OK) {
            frame.len = 0;
            if ((rc = baton_recordio_frame(&frame, r.data, r.len, err))) break;
            if (baton_write_all(fd, frame.data, frame.len, path, err)) {
                if (errno != EPIPE) {
                    rc = err->code;
                    break;
                }
                baton_log(BATON_LOG_WARN, "%s: the reader went away after %llu records; epoch %llu ends here",
                          path, (unsigned long long)n, (unsigned long long)epoch);
                st->readers_gone++;
                baton_cursor next = {baton_loader_cursor(l).seed, epoch + 1, 0};
                rc = baton_loader_seek(l, &next, err);
                if (rc == BATON_OK) rc = BATON_END;
                break;
            }
            n++;
            st->records++;
            st->bytes += frame.len;
            if (o->progress && (n & 255) == 0) baton_progress_update(&prog, n);
        }
        if (o->progress) baton_progress_finish(&prog);
        if (rc == BATON_END && st->readers_gone == gone) {   /* every record written: say so before the EOF */
            write_done(done, epoch, n, epoch + 1 >= o->epochs);
        }
        close(fd);
        unlink(path);
        if (o->on_pipe) o->on_pipe(NULL, o->ud);
        if (rc == BATON_END) {
            rc = BATON_OK;
            st->epochs++;
        }
    }
    baton_buf_free(&frame);
    return rc;
}
