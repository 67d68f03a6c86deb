/* ckpt_cost.c — what a checkpoint costs the training loop (run by bench/ckpt.sh; built by
 * `make bench-build` into build/bench/ckpt_cost).
 *
 * For resnet20 and resnet56 (each with SGD momentum state, as the trainer saves them) and two
 * synthetic checkpoints of 64 and 256 MiB:
 *   - blocking time of one background save: baton_ckpt_snapshot + baton_ckpt_persist_async, the
 *     whole time the training loop is held (the persist itself runs in its thread and is waited for
 *     between measurements, outside the timing); median and 90th percentile of --reps saves, as a
 *     share of the trainer's default interval (BATON_TRAIN_CKPT_EVERY_SEC) and of one training step
 *     (batch 128, oneDNN kernels, median of 5; real models only);
 *   - synchronous save (ckpt_save_sync: snapshot, write, fsync every file and the folders,
 *     rename; in a store that keeps them all, so nothing is removed) against `dd if=/dev/zero of=F
 *     bs=1M count=BYTES iflag=count_bytes conv=fsync` of the same number of bytes in the same
 *     folder, alternating, --pairs pairs; medians and their ratio (save / dd; < 1 means the save is
 *     faster than dd), and the ratio of the fastest of each; also (a third run in each round) the
 *     same save in a store that keeps 2, so that it also removes the oldest checkpoint.
 * Prints a table, then one JSON line per checkpoint.
 *
 * Usage: ckpt_cost [--dir DIR (default /tmp)] [--reps N (default 200)] [--pairs N (default 9)]
 *                  [--only NAME] */
#include "../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"
#include "baton/train.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

static double run_dd(const char *file, uint64_t bytes)
{
    char of[4300], count[64];
    snprintf(of, sizeof of, "of=%s", file);
    snprintf(count, sizeof count, "count=%llu", (unsigned long long)bytes);
    char *argv[] = {"dd", "if=/dev/zero", of, "bs=1M", count, "iflag=count_bytes", "conv=fsync", "status=none", NULL};
    double t0 = baton_now();
    pid_t pid;
    if (posix_spawnp(&pid, "dd", NULL, NULL, argv, environ) != 0) return -1;
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    double dt = baton_now() - t0;
    unlink(file);
    return dt;
}

typedef struct cfg {
    const char *name;
    const char *model;        /* NULL: synthetic */
    size_t synth_floats;      /* per tensor (model and momentum) */
} cfg;

typedef struct state {
    baton_nn_model *m;
    baton_nn_optim *o;
    float *w, *mom;
    baton_nn_tensor mt, ot;
} state;

static int snapshot(baton_ckpt_store *s, state *st, const char *json, uint64_t step, baton_err *err)
{
    if (st->m) return baton_ckpt_snapshot(s, st->m, st->o, json, step, BATON_CKPT_WAIT, err);
    return baton_ckpt_snapshot_tensors(s, &st->mt, 1, &st->ot, 1, step, json, step, BATON_CKPT_WAIT, err);
}

/* Median time of one training step at batch 128 (oneDNN kernels). */
static double step_time(baton_nn_model *m, baton_nn_optim *o, int c, int h, int w, baton_err *err)
{
    int n = 128;
    size_t px = (size_t)n * (size_t)(c * h * w);
    float *x = malloc(px * sizeof *x);
    int32_t *y = malloc((size_t)n * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return -1;
    }
    baton_rng r;
    baton_rng_seed(&r, 1);
    for (size_t i = 0; i < px; i++) x[i] = baton_rng_float(&r) - 0.5f;
    for (int i = 0; i < n; i++) y[i] = (int32_t)baton_rng_below(&r, 10);
    double t[8];
    int k = 0;
    for (int i = 0; i < 7; i++) {
        float loss;
        int correct;
        double t0 = baton_now();
        if (baton_nn_train_batch(m, x, y, n, &loss, &correct, err) || baton_nn_optim_step(o, 0.01, err)) {
            k = 0;
            break;
        }
        if (i >= 2) t[k++] = baton_now() - t0;
    }
    free(x);
    free(y);
    return k ? quantile(t, k, 0.5) : -1;
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp", *only = NULL;
    int reps = 200, pairs = 9;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: ckpt_cost [--dir DIR] [--reps N] [--pairs N] [--only NAME]\n");
            return 2;
        }
    }
    if (reps < 5 || pairs < 1) {
        fprintf(stderr, "ckpt_cost: --reps >= 5, --pairs >= 1\n");
        return 2;
    }
    baton_log_set_level(BATON_LOG_WARN);
    const cfg cfgs[] = {
        {"resnet20+momentum", "resnet20", 0},
        {"resnet56+momentum", "resnet56", 0},
        {"synthetic 64 MiB", NULL, (size_t)8 << 20},
        {"synthetic 256 MiB", NULL, (size_t)32 << 20},
    };
    char work[4096];
    snprintf(work, sizeof work, "%s/baton-ckpt-cost.%ld", dir, (long)getpid());
    baton_err err = {0};
    if (baton_mkdir_p(work, &err)) {
        fprintf(stderr, "ckpt_cost: %s\n", err.msg);
        return 1;
    }
    const baton_nn_kernels *k = baton_nn_kernels_dnnl(&err);
    if (!k) k = baton_nn_kernels_reference();
    double interval = BATON_TRAIN_CKPT_EVERY_SEC;
    char lines[8][1024];
    int nl = 0, rc = 0;
    printf("%-18s %8s %9s %8s %10s %9s %8s %8s %8s %6s %6s %9s\n", "checkpoint", "MB", "block ms", "p90 ms",
           "% interval", "% of step", "save ms", "dd ms", "save MB/s", "ratio", "best", "+ret. ms");
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        const cfg *f = &cfgs[c];
        if (only && strcmp(only, f->name) && (!f->model || strcmp(only, f->model))) continue;
        state st = {0};
        double step_s = -1;
        if (f->model) {
            baton_nn_spec spec = {f->model, 1, 28, 28, 10, 128, 7};
            baton_nn_optim_cfg oc = {BATON_NN_SGD, 0.9, 1, 5e-4, 0, 0, 0};
            if (baton_nn_model_create(&spec, k, &st.m, &err) || baton_nn_optim_create(&oc, st.m, &st.o, &err)) {
                fprintf(stderr, "ckpt_cost: %s: %s\n", f->name, err.msg);
                rc = 1;
                break;
            }
            step_s = step_time(st.m, st.o, 1, 28, 28, &err);   /* also fills the momentum buffers */
        } else {
            st.w = malloc(f->synth_floats * sizeof(float));
            st.mom = malloc(f->synth_floats * sizeof(float));
            if (!st.w || !st.mom) {
                fprintf(stderr, "ckpt_cost: out of memory\n");
                rc = 1;
                break;
            }
            for (size_t i = 0; i < f->synth_floats; i++) st.w[i] = st.mom[i] = (float)i * 1e-6f;
            st.mt = (baton_nn_tensor){"w", BATON_NN_PARAM, BATON_NN_F32, 1, {(int64_t)f->synth_floats}, f->synth_floats,
                                      st.w, NULL};
            st.ot = (baton_nn_tensor){"w.momentum_buffer", BATON_NN_BUFFER, BATON_NN_F32, 1,
                                      {(int64_t)f->synth_floats}, f->synth_floats, st.mom, NULL};
        }
        char cdir[4200], ddfile[4200];
        snprintf(cdir, sizeof cdir, "%s/%s", work, f->model ? f->model : (f->synth_floats >> 20) == 8 ? "s64" : "s256");
        snprintf(ddfile, sizeof ddfile, "%s/dd.bin", work);
        char cdir2[4300];
        snprintf(cdir2, sizeof cdir2, "%s-sync", cdir);
        baton_ckpt_store *s = NULL, *s2 = NULL;
        /* s keeps 2 (every save also removes the oldest); s2 keeps them all (a save only writes) */
        if (baton_ckpt_store_open(cdir, 2, &s, &err) || baton_ckpt_store_open(cdir2, pairs + 2, &s2, &err)) {
            fprintf(stderr, "ckpt_cost: %s\n", err.msg);
            rc = 1;
            break;
        }
        char json[256];
        int n = f->model ? reps : reps / 10 < 5 ? 5 : reps / 10;
        double *blk = calloc((size_t)n, sizeof *blk);
        double *sv = calloc((size_t)pairs, sizeof *sv), *dd = calloc((size_t)pairs, sizeof *dd);
        double *sr = calloc((size_t)pairs, sizeof *sr);
        uint64_t step = 1, bytes = 0;
        for (int i = 0; i < n && !rc; i++, step++) {
            snprintf(json, sizeof json, "{\"step\": %llu, \"model\": \"%s\"}", (unsigned long long)step, f->name);
            double t0 = baton_now();
            if (snapshot(s, &st, json, step, &err) || baton_ckpt_persist_async(s, &err)) rc = 1;
            blk[i] = baton_now() - t0;
            if (!rc && baton_ckpt_wait(s, &err)) rc = 1;
        }
        if (!rc) {
            baton_ckpt_info *info;
            size_t ni;
            if (baton_ckpt_list(cdir, 0, &info, &ni, &err) == BATON_OK) {
                if (ni) bytes = info[0].bytes;
                free(info);
            }
        }
        for (int i = 0; i < pairs && !rc; i++, step++) {
            snprintf(json, sizeof json, "{\"step\": %llu, \"model\": \"%s\"}", (unsigned long long)step, f->name);
            for (int v = 0; v < 2 && !rc; v++) {
                baton_ckpt_store *ss = v ? s : s2;
                double t0 = baton_now();
                if (st.m ? ckpt_save_sync(ss, st.m, st.o, json, step, &err)
                         : (snapshot(ss, &st, json, step, &err) || baton_ckpt_persist_sync(ss, &err)))
                    rc = 1;
                (v ? sr : sv)[i] = baton_now() - t0;
                if (!v) dd[i] = run_dd(ddfile, bytes);
            }
            if (dd[i] < 0) {
                snprintf(err.msg, sizeof err.msg, "dd failed");
                rc = 1;
            }
        }
        if (rc) {
            fprintf(stderr, "ckpt_cost: %s: %s\n", f->name, err.msg);
        } else {
            double b50 = quantile(blk, n, 0.5), b90 = quantile(blk, n, 0.9);
            double s50 = quantile(sv, pairs, 0.5), d50 = quantile(dd, pairs, 0.5);
            double smin = quantile(sv, pairs, 0), dmin = quantile(dd, pairs, 0);   /* less load-sensitive */
            double r50 = quantile(sr, pairs, 0.5);
            double mb = (double)bytes / 1e6;
            char stepcol[32] = "-";
            if (step_s > 0) snprintf(stepcol, sizeof stepcol, "%.3f", 100.0 * b50 / step_s);
            printf("%-18s %8.2f %9.3f %8.3f %10.5f %9s %8.2f %8.2f %8.0f %6.2f %6.2f %9.2f\n", f->name, mb, b50 * 1e3,
                   b90 * 1e3, 100.0 * b50 / interval, stepcol, s50 * 1e3, d50 * 1e3, mb / s50, s50 / d50, smin / dmin,
                   r50 * 1e3);
            if (nl < 8)
                snprintf(lines[nl++], sizeof lines[0],
                         "{\"bench\":\"ckpt_cost\",\"checkpoint\":\"%s\",\"bytes\":%llu,\"block_ms_median\":%.4f,"
                         "\"block_ms_p90\":%.4f,\"saves\":%d,\"interval_s\":%.0f,\"block_pct_of_interval\":%.6f,"
                         "\"step_ms\":%.2f,\"block_pct_of_step\":%.4f,\"sync_save_ms\":%.3f,\"dd_ms\":%.3f,"
                         "\"pairs\":%d,\"save_over_dd\":%.3f,\"save_over_dd_best\":%.3f,"
                         "\"sync_save_with_retention_ms\":%.3f}",
                         f->name, (unsigned long long)bytes, b50 * 1e3, b90 * 1e3, n, interval, 100.0 * b50 / interval,
                         step_s > 0 ? step_s * 1e3 : -1.0, step_s > 0 ? 100.0 * b50 / step_s : -1.0, s50 * 1e3,
                         d50 * 1e3, pairs, s50 / d50, smin / dmin, r50 * 1e3);
        }
        fflush(stdout);
        free(blk);
        free(sv);
        free(dd);
        free(sr);
        baton_ckpt_store_close(s);
        baton_ckpt_store_close(s2);
        baton_nn_optim_free(st.o);
        baton_nn_model_free(st.m);
        free(st.w);
        free(st.mom);
        if (rc) break;
    }
    printf("\nblock = snapshot + hand-off to the persist thread (what the training loop waits for); interval = the "
           "trainer's default %.0f s; step = one batch-128 training step; save = synchronous save with fsyncs; "
           "dd = dd conv=fsync of the same bytes; ratio = save / dd (medians); best = fastest save / fastest dd; "
           "+ret. = a synchronous save that also removes the oldest checkpoint (retention, keep 2)\n",
           interval);
    for (int i = 0; i < nl; i++) printf("%s\n", lines[i]);
    baton_remove_tree(work);
    return rc;
}
