/* verify_log.c — the event log that `baton verify-resume` reads: when the environment variable
 * BATON_VERIFY_LOG names a file, each baton_verify_log_* call appends one line to it (a JSON object
 * built here with cJSON and printed by json.c's writer, so names and numbers follow its rules),
 * each with a single write on a descriptor opened with O_APPEND, so lines from
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

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

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

/* One event: ev's object printed on one line and written in one call; ev is freed. */
static void log_event(cJSON *ev)
{
    char *text = ev ? baton_json_print(ev, 0) : NULL;
    cJSON_Delete(ev);
    if (!text) return;
    char line[1024];
    size_t n = strlen(text);
    if (n > sizeof line - 1) n = sizeof line - 1;
    memcpy(line, text, n);
    free(text);
    line[n++] = '\n';
    ssize_t w;
    do w = write(atomic_load(&log_fd), line, n);
    while (w < 0 && errno == EINTR);
}

/* {"ev": ev, "step": step}, or NULL when the log is off. */
static cJSON *event(const char *ev, uint64_t step)
{
    if (!baton_verify_log_on()) return NULL;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "ev", ev);
    cJSON_AddNumberToObject(j, "step", (double)step);
    return j;
}

void baton_verify_log_resume(uint64_t step)
{
    log_event(event("resume", step));
}

void baton_verify_log_batch(uint64_t epoch, uint64_t first, uint32_t n, uint64_t digest)
{
    if (!baton_verify_log_on()) return;
    cJSON *j = cJSON_CreateObject();
    if (!j) return;
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, digest);
    cJSON_AddStringToObject(j, "ev", "batch");
    cJSON_AddNumberToObject(j, "epoch", (double)epoch);
    cJSON_AddNumberToObject(j, "first", (double)first);
    cJSON_AddNumberToObject(j, "n", n);
    cJSON_AddStringToObject(j, "digest", hex);
    log_event(j);
}

void baton_verify_log_ckpt(uint64_t step, const char *model_sha256, const char *optim_sha256)
{
    cJSON *j = event("ckpt", step);
    if (!j) return;
    cJSON_AddStringToObject(j, "model", model_sha256 ? model_sha256 : "");
    cJSON_AddStringToObject(j, "optim", optim_sha256 ? optim_sha256 : "");
    log_event(j);
}

void baton_verify_log_loss(uint64_t step, double loss)
{
    cJSON *j = event("loss", step);
    if (!j) return;
    if (isfinite(loss)) cJSON_AddNumberToObject(j, "loss", loss);
    else cJSON_AddStringToObject(j, "loss", isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf");
    log_event(j);
}
