/* ppo_files.c — the files `baton race train` writes beside its checkpoints: the per-iteration CSV
 * log (one row per iteration: its number, episodes, steps, mean reward and progress, laps, the best
 * lap so far, the losses, time and speed), the SIM_TRACE_LOG CSVs of iterations
 * (<trace-dir>/<n>-iteration.csv, n from 0, DeepRacer's layout under training-simtrace/), and the
 * model's own model_metadata.json and hyperparameters.json in the checkpoint folder.
 *
 * Contract: trace files and the model's files are written whole and atomically (a temporary name,
 * fsync, rename), log rows appended (a torn last row is cut at the next start); a resume from
 * iteration k cuts the log to the rows of iterations <= k and removes the trace files
 * of iterations k and later (rows written after the checkpoint it resumes from are written again,
 * the same, by the resumed run). */
#include "ppo_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_HEADER                                                                                          \
    "iteration,episodes,steps,mean_reward,mean_progress,laps,best_lap_s,policy_loss,value_loss,entropy,kl," \
    "clip_frac,seconds,steps_per_s\n"

int race_log_cut(const char *path, uint64_t iterations, baton_err *err)
{
    uint8_t *text = NULL;
    size_t len = 0;
    int rc = access(path, F_OK) == 0 ? baton_file_read_all(path, (size_t)256 << 20, &text, &len, err) : BATON_OK;
    if (rc) return rc;
    baton_buf out = {0};
    rc = baton_buf_append(&out, LOG_HEADER, strlen(LOG_HEADER));
    const char *p = (const char *)text, *end = p ? p + len : NULL;
    while (!rc && p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        char *e;
        unsigned long long it = strtoull(p, &e, 10);
        if (e != p && *e == ',' && it <= iterations && nl) rc = baton_buf_append(&out, p, n);
        p += n;
    }
    if (!rc) rc = baton_file_write_atomic(path, out.data, out.len, err);
    else baton_err_set(err, rc, "%s: out of memory", path);
    baton_buf_free(&out);
    free(text);
    return rc;
}

int race_log_row(const char *path, const race_run_state *s, uint64_t steps, double mean_reward, double mean_progress,
                 uint64_t laps, const race_learn_stats *l, double seconds, double steps_per_s, baton_err *err)
{
    FILE *f = fopen(path, "a");
    if (!f) return baton_err_errno(err, errno, "cannot open the log", path);
    fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.6g,%.4f,%" PRIu64 ",%.4f,%.6g,%.6g,%.6g,%.6g,%.4f,%.3f,%.0f\n",
            s->iteration, s->episodes, steps, mean_reward, mean_progress, laps, s->best_lap_s, l->policy_loss,
            l->value_loss, l->entropy, l->kl, l->clip_frac, seconds, steps_per_s);
    if (fclose(f) != 0) return baton_err_errno(err, errno, "write failed", path);
    return BATON_OK;
}

static int trace_path(char *out, size_t cap, const char *dir, uint64_t index, baton_err *err)
{
    char name[48];
    snprintf(name, sizeof name, "%" PRIu64 "-iteration.csv", index);
    return baton_path_join(out, cap, dir, name, err);
}

int race_trace_cut(const char *dir, uint64_t from, baton_err *err)
{
    int rc = baton_mkdir_p(dir, err);
    if (rc) return rc;
    DIR *d = opendir(dir);
    if (!d) return baton_err_errno(err, errno, "cannot list", dir);
    struct dirent *de;
    rc = BATON_OK;
    while (!rc && (de = readdir(d))) {
        char *e;
        unsigned long long k = strtoull(de->d_name, &e, 10);
        if (e == de->d_name || strcmp(e, "-iteration.csv") || k < from) continue;
        char p[4200];
        if (!(rc = baton_path_join(p, sizeof p, dir, de->d_name, err)) && unlink(p) && errno != ENOENT)
            rc = baton_err_errno(err, errno, "cannot remove", p);
    }
    closedir(d);
    return rc;
}

int race_trace_write(const char *dir, uint64_t index, const baton_buf *rows, baton_err *err)
{
    char p[4200];
    int rc = trace_path(p, sizeof p, dir, index, err);
    baton_buf out = {0};
    if (!rc) rc = baton_buf_append(&out, RACE_TRACE_HEADER, strlen(RACE_TRACE_HEADER));
    if (!rc) rc = baton_buf_append(&out, rows->data, rows->len);
    if (rc == BATON_ERR_NOMEM) baton_err_set(err, rc, "%s: out of memory", p);
    if (!rc) rc = baton_file_write_atomic(p, out.data, out.len, err);
    baton_buf_free(&out);
    return rc;
}

int race_model_files(const char *dir, const baton_ppo_meta *m, const baton_ppo_hyper *h, baton_err *err)
{
    char p[4200], *mt = ppo_meta_format(m), *ht = ppo_hyper_format(h);
    int rc = mt && ht ? BATON_OK : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    if (!rc) rc = baton_path_join(p, sizeof p, dir, "model_metadata.json", err);
    if (!rc) rc = baton_file_write_atomic(p, mt, strlen(mt), err);
    if (!rc) rc = baton_path_join(p, sizeof p, dir, "hyperparameters.json", err);
    if (!rc) rc = baton_file_write_atomic(p, ht, strlen(ht), err);
    free(mt);
    free(ht);
    return rc;
}
