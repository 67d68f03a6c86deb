/* benchio.c — one input mode measured end to end through the decode pipeline (the seed's table:
 * launch time, samples/s, epoch times, N-epoch total), or with no_decode through the data path
 * alone (every record's bytes read once — a CRC32C, as a decoder would touch them — and dropped:
 * what reading costs, without the decoders' time). The local copy of file and cache mode is made
 * fresh for each run (its folder is emptied first), so every mode starts cold on the store side;
 * the page cache is whatever it is (a mounted file system usually has a warm cache too). */
#include "baton/img.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* CPU seconds (user + system) of the whole process so far */
static double cpu_now(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static int empty_dir(const char *dir, baton_err *err)
{
    if (baton_remove_tree(dir) != 0)
        return baton_err_set(err, BATON_ERR_IO, "%s: cannot remove: %s", dir, strerror(errno));
    return baton_mkdir_p(dir, err);
}

/* The loader's options for the mode: mount mode reads a path (r->skipped when the URI is none and
 * no --mount-path names one); file and cache modes copy into WORK/MODE, emptied first. */
static int open_opts(const baton_bench_io_opts *o, baton_io_mode mode, baton_loader_opts *lo, char local[4096],
                     baton_bench_io_result *r, baton_err *err)
{
    baton_loader_opts_default(lo);
    lo->uri = o->uri;
    lo->mode = mode;
    lo->store = o->store;
    lo->fetch = o->fetch;
    lo->seed = o->seed;
    if (mode == BATON_MODE_MOUNT) {
        const char *p = o->mount_path ? o->mount_path : o->uri;
        if (strstr(p, "://") && strncmp(p, "file://", 7) != 0) {
            r->skipped = 1;
            snprintf(r->skip_reason, sizeof r->skip_reason, "mount mode needs a path (give --mount-path)");
            return BATON_OK;
        }
        lo->uri = p;
    }
    if (mode == BATON_MODE_FILE || mode == BATON_MODE_CACHE) {
        if (baton_path_join(local, 4096, o->work_dir, baton_io_mode_name(mode), err)) return err->code;
        int rc = empty_dir(local, err);
        if (rc) return rc;
        lo->local_dir = local;
    }
    return BATON_OK;
}

/* Every sample of o->epochs epochs, as batches of the pipeline p or (p NULL) as the loader's
 * records: launch time (t0 -> the first sample), each epoch's time and CPU time, the samples (and
 * the records' CRC32C), with progress. */
static int read_epochs(const baton_bench_io_opts *o, baton_io_mode mode, baton_loader *l, baton_pipeline *p,
                       double t0, double c0, baton_bench_io_result *r, baton_err *err)
{
    baton_progress prog;
    char label[64];
    snprintf(label, sizeof label, "bench-io %s", baton_io_mode_name(mode));
    uint64_t per_epoch = baton_loader_epoch_size(l);
    if (o->progress) baton_progress_start(&prog, label, per_epoch * o->epochs);
    double last = 0, last_cpu = 0;
    int rc = BATON_OK;
    while (r->epochs < o->epochs) {
        baton_batch *b = NULL;
        baton_record rec;
        rc = p ? baton_pipeline_next(p, &b, err) : baton_loader_next(l, &rec, err);
        if (rc == BATON_END) {
            double now = baton_now(), cpu = cpu_now();
            r->epoch_cpu_s[r->epochs] = cpu - last_cpu;
            r->epoch_s[r->epochs++] = now - last;
            last = now;
            last_cpu = cpu;
            continue;
        }
        if (rc) break;
        if (r->samples == 0) {
            last = baton_now();
            last_cpu = cpu_now();
            r->launch_s = last - t0;
            r->launch_cpu_s = last_cpu - c0;
        }
        if (p) {
            r->samples += b->n;
            baton_pipeline_release(p, b);
        } else {
            r->samples++;
            r->digest = baton_crc32c(r->digest, rec.data, rec.len);
        }
        if (o->progress) baton_progress_update(&prog, r->samples);
    }
    if (o->progress) baton_progress_finish(&prog);
    return rc == BATON_END ? BATON_OK : rc;
}

/* What the loader read and fetched, per epoch too, and the dataset's size. */
static void loader_totals(baton_loader *l, baton_bench_io_result *r)
{
    baton_loader_stats st;
    baton_loader_get_stats(l, &st);
    r->bytes_read = st.bytes_read;
    r->retries = st.fetch_retries;
    r->record_requests = st.record_requests;
    r->bytes_fetched = st.bytes_fetched;
    r->open_fetched = st.open_fetched;
    for (uint64_t e = 0; e < r->epochs; e++) r->epoch_fetched[e] = baton_loader_epoch_fetched(l, e);
    const baton_manifest *m = baton_loader_manifest(l);
    for (size_t s = 0; s < m->nshards; s++) r->dataset_bytes += m->shards[s].bytes;
}

int baton_bench_io_run(const baton_bench_io_opts *o, baton_io_mode mode, baton_bench_io_result *r,
                       baton_err *err)
{
    memset(r, 0, sizeof *r);
    r->mode = mode;
    if (o->epochs == 0 || o->epochs > BATON_BENCH_MAX_EPOCHS)
        return baton_err_set(err, BATON_ERR_USAGE, "--epochs must be 1..%d", BATON_BENCH_MAX_EPOCHS);
    baton_loader_opts lo;
    char local[4096];
    int rc = open_opts(o, mode, &lo, local, r, err);
    if (rc || r->skipped) return rc;
    double t0 = baton_now(), c0 = cpu_now();
    baton_loader *l;
    if ((rc = baton_loader_open_dataset(&lo, 1, &l, err))) return rc;   /* the front door train and Python use */
    r->open_s = baton_now() - t0;
    baton_cursor end = {o->seed, o->epochs, 0};   /* nothing past the last epoch is fetched */
    if ((rc = baton_loader_set_end(l, &end, err))) {
        baton_loader_close(l);
        return rc;
    }
    baton_pipeline *p = NULL;
    if (!o->no_decode && !(p = baton_pipeline_open(l, &o->pipe, err))) {
        baton_loader_close(l);
        return err->code;
    }
    rc = read_epochs(o, mode, l, p, t0, c0, r, err);
    r->total_s = baton_now() - t0;
    if (p) baton_pipeline_close(p);
    loader_totals(l, r);
    baton_loader_close(l);
    double run = r->total_s - r->launch_s;
    r->samples_per_s = run > 0 ? (double)r->samples / run : 0;
    if (lo.local_dir && !o->keep_work) {   /* the copy was only for this measurement */
        if (baton_remove_tree(local) != 0) baton_log(BATON_LOG_WARN, "%s: cannot remove: %s", local, strerror(errno));
        rmdir(o->work_dir);   /* when nothing else is left in it */
    }
    return rc;
}
