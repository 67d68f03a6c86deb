/* csvlog.c — the trainer's per-epoch CSV log, in the shape of Keras's CSVLogger: a header row, then
 * one row per completed epoch, appended across restarts.
 *
 * Contract: the rows always match committed progress. A row is appended right after its epoch's
 * last step; a crash can leave rows for epochs that no checkpoint holds yet, so a resume first cuts
 * the file back to the checkpoint's completed epochs (train_csv_cut, an atomic rewrite) and the
 * resumed run writes those rows again. A file that is not such a log (a first line that is not the
 * header) is never rewritten: it is an error naming the file. */
#include "train_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char header[] = "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds\n";

int train_csv_cut(const char *path, uint64_t epochs, baton_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || sb.st_size == 0) {
        if (stat(path, &sb) != 0 && errno != ENOENT) return baton_err_errno(err, errno, "cannot open the log", path);
        return baton_file_write_atomic(path, header, sizeof header - 1, err);
    }
    if (!S_ISREG(sb.st_mode)) return baton_err_set(err, BATON_ERR_ARG, "%s: the log is not a regular file", path);
    uint8_t *text;
    size_t len;
    int rc = baton_file_read_all(path, (size_t)256 << 20, &text, &len, err);
    if (rc) return baton_err_prefix(err, "log");
    if (len < sizeof header - 1 || memcmp(text, header, sizeof header - 1) != 0) {
        free(text);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a baton training log (its first line is not \"%.*s\")",
                             path, (int)sizeof header - 2, header);
    }
    /* keep the header and every complete row of an epoch < epochs, in order */
    size_t keep = sizeof header - 1, dropped = 0;
    char *out = malloc(len + 1);
    if (!out) {
        free(text);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(out, text, keep);
    size_t n = keep;
    for (size_t at = keep; at < len;) {
        const char *line = (const char *)text + at, *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) + 1 : len - at;
        char *end;
        errno = 0;
        unsigned long long e = strtoull(line, &end, 10);
        if (nl && end != line && *end == ',' && !errno && e < epochs) {
            memcpy(out + n, line, ll);
            n += ll;
        } else {
            dropped++;
        }
        at += ll;
    }
    free(text);
    rc = BATON_OK;
    if (dropped) {
        baton_log(BATON_LOG_INFO, "%s: %zu row(s) past the checkpoint's %" PRIu64 " completed epoch(s) removed", path,
                  dropped, epochs);
        rc = baton_file_write_atomic(path, out, n, err);
    }
    free(out);
    return rc;
}

int train_csv_row(const char *path, uint64_t epoch, double loss, double acc, int has_val, double vloss, double vacc,
                  double lr, double seconds, baton_err *err)
{
    FILE *f = fopen(path, "a");
    if (!f) return baton_err_errno(err, errno, "cannot open the log", path);
    fprintf(f, "%" PRIu64 ",%.6f,%.6f,", epoch, loss, acc);
    if (has_val) fprintf(f, "%.6f,%.6f,", vloss, vacc);
    else fprintf(f, ",,");
    fprintf(f, "%.8g,%.3f\n", lr, seconds);
    if (fclose(f) != 0) return baton_err_errno(err, errno, "write failed", path);
    return BATON_OK;
}
