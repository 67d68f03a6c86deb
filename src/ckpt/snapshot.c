/* snapshot.c — the two-phase save of CheckFreq: baton_ckpt_snapshot copies the model's and the
 * optimizer's tensors and the state JSON into one in-memory snapshot (the finished safetensors
 * file images, header included), so training can go on at once; baton_ckpt_persist_async hands
 * the snapshot to a background thread that commits it (store.c) and applies retention.
 *
 * Contract:
 *   - one store is driven from one thread (the training loop); the background thread only reads
 *     the snapshot and writes the result fields, which the owner reads after pthread_join; it is the
 *     folder's one writer, so baton_ckpt_store_latest first waits for a persist in flight (what it
 *     finds is then the newest, and stays until the owner's next persist);
 *   - the snapshot buffers are allocated on first use and reused; they grow only when the tensor
 *     set or the state text grows (never in steady state);
 *   - at most one persist is in flight. A snapshot taken while one is in flight waits for it
 *     (BATON_CKPT_WAIT, the default) or returns BATON_CKPT_SKIPPED (BATON_CKPT_SKIP_IF_BUSY);
 *   - each persist's outcome is reported once: by baton_ckpt_wait, by baton_ckpt_reap (which logs
 *     a failure), or, when a later snapshot or save had to wait for it, by a warning in the log;
 *   - async and sync persists run the same code on the same bytes, so their files are identical;
 *   - with a remote attached (remote.c), a background persist queues its committed folder for the
 *     remote's uploader thread (training never waits for the network) and a synchronous persist
 *     uploads before it returns; baton_ckpt_wait waits for both. */
#include "ckpt_internal.h"

#include <dirent.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct baton_ckpt_store {
    char dir[4096];
    int keep;
    baton_buf model, optim, state, scratch;   /* file images; scratch builds headers */
    baton_buf ents, oents, mts, ots;          /* reused arrays: model/optim entries and tensor lists */
    uint64_t step;
    int fresh;                                /* a snapshot not yet handed to a persist */
    pthread_t th;
    int busy;                                 /* a thread was started and not joined */
    atomic_int done;                          /* set by the thread as it finishes (under mu, cv
                                                 broadcast: settle() waits for it) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int rc;
    baton_err err;
    char committed[4096];
    baton_ckpt_remote *remote;                /* NULL: local only */
    double commit_took[8];                    /* seconds of the last (up to) 8 local commits, a ring
                                                 (under mu: the persist thread writes it) */
    uint64_t commits;
    ckpt_vcache vc;                           /* retention's memory of verified folders (used by
                                                 the one persist in flight, or the owner) */
    int lock_fd;                              /* DIR/.lock, held while the store is open */
    int made_dir;                             /* this open created DIR */
};

/* A store closed with nothing in its folder but its lock (a run that failed before its first
 * checkpoint) leaves nothing behind: the lock file goes, and the folder too when this store made
 * it. Anything else in the folder (checkpoints, a user's files) keeps both. */
static void tidy_unused(const baton_ckpt_store *s)
{
    DIR *d = opendir(s->dir);
    if (!d) return;
    int other = 0;
    struct dirent *e;
    while (!other && (e = readdir(d)) != NULL)
        other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".lock");
    closedir(d);
    if (other) return;
    char lock[4200];
    snprintf(lock, sizeof lock, "%s/.lock", s->dir);
    if (baton_sys.unlink(lock) == 0 && s->made_dir) rmdir(s->dir);
}

int baton_ckpt_store_open(const char *dir, int keep, baton_ckpt_store **out, baton_err *err)
{
    *out = NULL;
    if (strlen(dir) >= 3000) return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", dir);
    const int existed = baton_is_dir(dir);
    int rc = baton_mkdir_p(dir, err);
    if (rc) return baton_err_prefix(err, "checkpoint directory");
    if (!baton_is_dir(dir)) return baton_err_set(err, BATON_ERR_ARG, "%s: not a folder", dir);
    char lock[4200], what[4200];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    snprintf(what, sizeof what, "checkpoint folder %s", dir);
    int fd;
    if ((rc = baton_lock_acquire(lock, what, &fd, err))) {
        if (rc == BATON_ERR_BUSY && err) {   /* say what to do about it */
            size_t l = strlen(err->msg);
            snprintf(err->msg + l, sizeof err->msg - l, "; give each run its own checkpoint folder");
        }
        return rc;
    }
    baton_ckpt_store *s = calloc(1, sizeof *s);
    if (!s) {
        baton_lock_release(fd);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    s->lock_fd = fd;
    s->made_dir = !existed;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->keep = keep > 0 ? keep : BATON_CKPT_KEEP_DEFAULT;
    *out = s;
    return BATON_OK;
}

/* Join a finished or running persist; its failure is logged when not collected by wait. */
static int join(baton_ckpt_store *s, baton_err *err, int log_failure)
{
    if (!s->busy) return BATON_OK;
    pthread_join(s->th, NULL);
    s->busy = 0;
    if (s->rc != BATON_OK) {
        if (log_failure) baton_log(BATON_LOG_WARN, "background checkpoint save failed: %s", s->err.msg);
        if (err) *err = s->err;
    }
    return s->rc;
}

void baton_ckpt_store_close(baton_ckpt_store *s)
{
    if (!s) return;
    join(s, NULL, 1);
    ckpt_remote_close(s->remote);
    baton_buf_free(&s->model);
    baton_buf_free(&s->optim);
    baton_buf_free(&s->state);
    baton_buf_free(&s->scratch);
    baton_buf_free(&s->ents);
    baton_buf_free(&s->oents);
    baton_buf_free(&s->mts);
    baton_buf_free(&s->ots);
    ckpt_vcache_free(&s->vc);
    tidy_unused(s);   /* still holding the lock: nobody else is in the folder */
    baton_lock_release(s->lock_fd);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int ckpt_busy(baton_ckpt_store *s) { return s->busy && !atomic_load(&s->done); }

int baton_ckpt_reap(baton_ckpt_store *s, int block, uint64_t *step)
{
    if (!s->busy || (!block && !atomic_load(&s->done))) return 0;
    uint64_t st = s->step;   /* a snapshot cannot replace it while the persist is unjoined */
    if (join(s, NULL, 1) != BATON_OK) return -1;
    *step = st;
    return 1;
}

const char *baton_ckpt_last_committed(const baton_ckpt_store *s) { return s->committed; }

/* Build one safetensors file image into img from named tensors. */
static int image(baton_ckpt_store *s, baton_buf *img, const baton_st_entry *e, size_t n, const char *const *mk,
                 const char *const *mv, size_t nmeta, baton_err *err)
{
    uint64_t dl;
    int rc = ckpt_st_build_header(e, n, mk, mv, nmeta, &s->scratch, &dl, err);
    if (rc != BATON_OK) return rc;
    img->len = 0;
    /* a little slack so that a longer header later (more digits) does not reallocate */
    if (dl > SIZE_MAX - s->scratch.len - 256 || baton_buf_reserve(img, s->scratch.len + (size_t)dl + 256) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "snapshot: out of memory (%llu bytes)",
                             (unsigned long long)(s->scratch.len + dl));
    memcpy(img->data, s->scratch.data, s->scratch.len);
    img->len = s->scratch.len;
    for (size_t i = 0; i < n; i++) {
        size_t bytes = baton_st_dtype_size(e[i].dtype);
        for (int d = 0; d < e[i].ndim; d++) bytes *= (size_t)e[i].shape[d];   /* checked by the header */
        if (bytes) memcpy(img->data + img->len, e[i].data, bytes);
        img->len += bytes;
    }
    return BATON_OK;
}

/* A model's or an optimizer's tensor list as entries, in buf (reused). */
static baton_st_entry *entries_of(baton_buf *buf, const baton_nn_tensor *t, size_t n, baton_err *err)
{
    buf->len = 0;
    if (baton_buf_reserve(buf, (n + 1) * sizeof(baton_st_entry)) != BATON_OK) {
        baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        return NULL;
    }
    baton_st_entry *e = (baton_st_entry *)(void *)buf->data;
    for (size_t i = 0; i < n; i++)
        e[i] = (baton_st_entry){.name = t[i].name, .dtype = t[i].dtype, .ndim = t[i].ndim, .shape = t[i].shape,
                                .data = t[i].data};
    return e;
}

int baton_ckpt_snapshot_entries(baton_ckpt_store *s, const baton_st_entry *mt, size_t nm, const baton_st_entry *ot,
                                size_t no, uint64_t optim_steps, const char *state_json, uint64_t step, int flags,
                                baton_err *err)
{
    if (s->busy) {
        if ((flags & BATON_CKPT_SKIP_IF_BUSY) && !atomic_load(&s->done)) return BATON_CKPT_SKIPPED;
        join(s, NULL, 1);
    }
    size_t sl = strlen(state_json);
    int rc = ckpt_state_check("state.json", state_json, sl, step, err);
    if (rc) return baton_err_prefix(err, "snapshot of step %" PRIu64, step);
    static const char *const mk[] = {"format"}, *const mv[] = {"pt"};
    if ((rc = image(s, &s->model, mt, nm, mk, mv, 1, err)) != BATON_OK) return baton_err_prefix(err, "model.safetensors");
    char steps[32];
    snprintf(steps, sizeof steps, "%" PRIu64, optim_steps);
    const char *ok[] = {"steps"}, *ov[] = {steps};
    if ((rc = image(s, &s->optim, ot, no, ok, ov, 1, err)) != BATON_OK) return baton_err_prefix(err, "optim.safetensors");
    s->state.len = 0;
    if (baton_buf_append(&s->state, state_json, sl) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "snapshot: out of memory");
    s->step = step;
    s->fresh = 1;
    return BATON_OK;
}

int baton_ckpt_snapshot_tensors(baton_ckpt_store *s, const baton_nn_tensor *mt, size_t nm,
                                const baton_nn_tensor *ot, size_t no, uint64_t optim_steps,
                                const char *state_json, uint64_t step, int flags, baton_err *err)
{
    if (s->busy && (flags & BATON_CKPT_SKIP_IF_BUSY) && !atomic_load(&s->done)) return BATON_CKPT_SKIPPED;
    const baton_st_entry *me = entries_of(&s->ents, mt, nm, err), *oe = me ? entries_of(&s->oents, ot, no, err) : NULL;
    if (!me || !oe) return BATON_ERR_NOMEM;
    return baton_ckpt_snapshot_entries(s, me, nm, oe, no, optim_steps, state_json, step, flags, err);
}

static int get_all(baton_buf *b, size_t n, int is_model, const void *obj, baton_nn_tensor **out, baton_err *err)
{
    b->len = 0;
    if (baton_buf_reserve(b, (n + 1) * sizeof **out) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    *out = (baton_nn_tensor *)(void *)b->data;
    for (size_t i = 0; i < n; i++) {
        int rc = is_model ? baton_nn_model_tensor(obj, i, &(*out)[i]) : baton_nn_optim_tensor(obj, i, &(*out)[i]);
        if (rc != BATON_OK) return baton_err_set(err, BATON_ERR_ARG, "snapshot: tensor %zu not available", i);
    }
    return BATON_OK;
}

int baton_ckpt_snapshot(baton_ckpt_store *s, const baton_nn_model *m, const baton_nn_optim *o,
                        const char *state_json, uint64_t step, int flags, baton_err *err)
{
    if (s->busy && (flags & BATON_CKPT_SKIP_IF_BUSY) && !atomic_load(&s->done)) return BATON_CKPT_SKIPPED;
    baton_nn_tensor *mt = NULL, *ot = NULL;
    size_t nm = baton_nn_model_ntensors(m), no = o ? baton_nn_optim_ntensors(o) : 0;
    int rc = get_all(&s->mts, nm, 1, m, &mt, err);
    if (rc == BATON_OK && o) rc = get_all(&s->ots, no, 0, o, &ot, err);
    if (rc == BATON_OK)
        rc = baton_ckpt_snapshot_tensors(s, mt, nm, ot, no, o ? baton_nn_optim_steps(o) : 0, state_json, step,
                                         flags, err);
    return rc;
}

/* A committed checkpoint, to BATON_VERIFY_LOG: its step and the SHA-256 of its model and optimizer
 * files (verify-resume compares them with an uninterrupted run's). */
static void log_commit(const baton_ckpt_store *s)
{
    if (!baton_verify_log_on()) return;
    char hex[2][65];
    const baton_buf *files[2] = {&s->model, &s->optim};
    for (int f = 0; f < 2; f++) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        hex[f][0] = 0;
        if (!EVP_Digest(files[f]->data, files[f]->len, md, &n, EVP_sha256(), NULL)) continue;
        for (unsigned int i = 0; i < n && i < 32; i++) snprintf(hex[f] + 2 * i, 3, "%02x", md[i]);
    }
    baton_verify_log_ckpt(s->step, hex[0], hex[1]);
}

enum { PERSIST_ASYNC = 0, PERSIST_SYNC = 1, PERSIST_LOCAL = 2 };

/* Commit the snapshot; then, with a remote: queue its upload (ASYNC), upload it here (SYNC), or
 * nothing (LOCAL: the caller decides). */
static void persist_now(baton_ckpt_store *s, int sync)
{
    baton_ckpt_blob files[3] = {
        {"model.safetensors", s->model.data, s->model.len},
        {"optim.safetensors", s->optim.data, s->optim.len},
        {"state.json", s->state.data, s->state.len},
    };
    memset(&s->err, 0, sizeof s->err);
    double t0 = baton_now();
    s->rc = ckpt_commit(s->dir, s->step, files, 3, s->keep, &s->vc, s->committed, sizeof s->committed, &s->err);
    if (s->rc == BATON_OK) {
        double took = baton_now() - t0;
        pthread_mutex_lock(&s->mu);
        s->commit_took[s->commits++ % 8] = took;
        pthread_mutex_unlock(&s->mu);
        log_commit(s);
    }
    if (s->rc != BATON_OK || !s->remote || sync == PERSIST_LOCAL) return;
    if (sync == PERSIST_SYNC) {
        s->rc = ckpt_remote_upload(s->remote, s->committed, s->step, &s->err);
        if (s->rc != BATON_OK)
            baton_err_prefix(&s->err, "checkpoint %" PRIu64 " committed locally (%s) but not uploaded", s->step,
                             s->committed);
    } else {
        baton_err e = {0};
        if (ckpt_remote_enqueue(s->remote, s->committed, s->step, &e) != BATON_OK)
            baton_log(BATON_LOG_WARN, "checkpoint %" PRIu64 " not uploaded: %s", s->step, e.msg);
    }
}

static void *persist_thread(void *arg)
{
    baton_ckpt_store *s = arg;
    persist_now(s, PERSIST_ASYNC);
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->done, 1);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Wait until the persist in flight, if any, has finished writing the folder (its commit and its
 * retention), without collecting its outcome: wait() or reap() still report it. */
static void settle(baton_ckpt_store *s)
{
    if (!s->busy) return;
    pthread_mutex_lock(&s->mu);
    while (!atomic_load(&s->done)) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

int baton_ckpt_persist_async(baton_ckpt_store *s, baton_err *err)
{
    if (s->busy) return baton_err_set(err, BATON_ERR_ARG, "%s: a checkpoint persist is already in flight", s->dir);
    if (!s->fresh) return baton_err_set(err, BATON_ERR_ARG, "%s: no new snapshot to persist", s->dir);
    s->fresh = 0;
    atomic_store(&s->done, 0);
    if (pthread_create(&s->th, NULL, persist_thread, s) != 0)
        return baton_err_set(err, BATON_ERR_IO, "%s: cannot start the checkpoint thread", s->dir);
    s->busy = 1;
    return BATON_OK;
}

int baton_ckpt_wait(baton_ckpt_store *s, baton_err *err)
{
    int rc = join(s, err, 0);
    if (s->remote) {
        baton_err e = {0};
        int urc = ckpt_remote_wait(s->remote, &e);
        if (urc != BATON_OK && rc == BATON_OK) {
            rc = urc;
            if (err) *err = e;
        }
    }
    return rc;
}

int baton_ckpt_store_attach(baton_ckpt_store *s, const char *uri, const baton_store_opts *so, baton_err *err)
{
    if (s->remote) return baton_err_set(err, BATON_ERR_ARG, "%s: a remote is already attached", s->dir);
    return ckpt_remote_open(uri, so, s->keep, &s->remote, err);
}

int baton_ckpt_store_restore(baton_ckpt_store *s, char *path, size_t cap, uint64_t *step, baton_err *err)
{
    if (!s->remote) return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no remote attached", s->dir);
    return ckpt_remote_restore(s->remote, s->dir, s->keep, path, cap, step, err);
}

int baton_ckpt_store_latest(baton_ckpt_store *s, char *path, size_t cap, uint64_t *step, baton_err *err)
{
    /* the store's own persist is the folder's one writer: a commit in flight would publish a newer
     * folder, and its retention (keep=1) remove the one found here while the caller reads it */
    settle(s);
    baton_ckpt_info *v;
    size_t n;
    int rc = baton_ckpt_list(s->dir, 0, &v, &n, err);
    if (rc) return rc;
    rc = BATON_ERR_NOTFOUND;
    for (size_t i = 0; i < n && rc; i++) {
        baton_err ve = {0};
        if (baton_ckpt_verify(v[i].path, &ve) != BATON_OK) {   /* the lock, and no persist in flight: no writer */
            ckpt_move_aside(s->dir, v[i].step, v[i].path, ve.msg);
            continue;
        }
        snprintf(path, cap, "%s", v[i].path);
        if (step) *step = v[i].step;
        rc = BATON_OK;
    }
    free(v);
    if (rc == BATON_OK) return rc;
    if (s->remote) return baton_ckpt_store_restore(s, path, cap, step, err);
    return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no checkpoint that verifies (%zu found)", s->dir, n);
}

int baton_ckpt_persist_sync(baton_ckpt_store *s, baton_err *err)
{
    join(s, NULL, 1);
    if (!s->fresh) return baton_err_set(err, BATON_ERR_ARG, "%s: no new snapshot to persist", s->dir);
    s->fresh = 0;
    persist_now(s, PERSIST_SYNC);
    if (s->rc != BATON_OK && err) *err = s->err;
    return s->rc;
}

/* ---------------------------------------------------------------- commits planned by a deadline */
static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void baton_ckpt_store_costs(baton_ckpt_store *s, baton_ckpt_costs *c)
{
    memset(c, 0, sizeof *c);
    c->commit_s = c->upload_s = -1;
    pthread_mutex_lock(&s->mu);
    c->commits = s->commits;
    for (uint64_t i = 0; i < s->commits && i < 8; i++)
        if (s->commit_took[i] > c->commit_s) c->commit_s = s->commit_took[i];
    pthread_mutex_unlock(&s->mu);
    if (s->remote) c->upload_s = ckpt_remote_cost(s->remote, &c->uploads);
}

/* The upload half of baton_ckpt_persist_by, for the committed folder of out->step. */
static void upload_by(baton_ckpt_store *s, double deadline, double margin_s, baton_ckpt_by *out)
{
    ckpt_remote_supersede(s->remote, out->step);
    uint64_t n = 0;
    out->upload_est_s = ckpt_remote_cost(s->remote, &n);
    double limit = deadline > 0 ? deadline - margin_s : 0, now = wall_now();
    if (ckpt_remote_uploaded(s->remote, out->step)) {   /* the background upload finished first */
        out->upload = BATON_CKPT_UPLOAD_DONE;
        out->upload_at = now;
        snprintf(out->why, sizeof out->why, "uploaded in the background before the notice was handled");
        return;
    }
    out->upload = BATON_CKPT_UPLOAD_LEFT;
    if (limit > 0 && now >= limit) {
        snprintf(out->why, sizeof out->why, "no time left: %.1f s before the deadline, a margin of %.1f s kept",
                 deadline - now, margin_s);
        return;
    }
    if (limit > 0 && out->upload_est_s >= 0 && now + out->upload_est_s > limit) {
        snprintf(out->why, sizeof out->why,
                 "an upload takes %.1f s here (the longest of the last %d), %.1f s are left before the deadline "
                 "less a margin of %.1f s",
                 out->upload_est_s, n < 8 ? (int)n : 8, limit - now, margin_s);
        return;
    }
    baton_err e = {0};
    double t0 = baton_now();
    ckpt_remote_set_deadline(s->remote, limit);
    int rc = ckpt_remote_upload(s->remote, s->committed, out->step, &e);
    ckpt_remote_set_deadline(s->remote, 0);
    out->upload_s = baton_now() - t0;
    if (rc == BATON_OK) {
        out->upload = BATON_CKPT_UPLOAD_DONE;
        out->upload_at = wall_now();
    } else {
        snprintf(out->why, sizeof out->why, "%.250s", e.msg);
    }
}

int baton_ckpt_persist_by(baton_ckpt_store *s, double deadline, double margin_s, baton_ckpt_by *out, baton_err *err)
{
    memset(out, 0, sizeof *out);
    out->upload_est_s = -1;
    double t0 = baton_now();
    baton_err jerr = {0};
    int jrc = join(s, &jerr, 0);
    if (s->fresh) {   /* the newest state: committed here, locally only */
        if (jrc != BATON_OK) baton_log(BATON_LOG_WARN, "background checkpoint save failed: %s", jerr.msg);
        s->fresh = 0;
        persist_now(s, PERSIST_LOCAL);
        if (s->rc != BATON_OK) {
            if (err) *err = s->err;
            return s->rc;
        }
    } else if (jrc != BATON_OK) {   /* the save of the newest state failed and nothing newer exists */
        if (err) *err = jerr;
        return jrc;
    } else if (!s->committed[0]) {
        return baton_err_set(err, BATON_ERR_ARG, "%s: nothing to commit", s->dir);
    }
    int rc = baton_ckpt_verify(s->committed, err);
    if (rc != BATON_OK) return baton_err_prefix(err, "the interruption's checkpoint does not verify");
    out->step = s->step;
    out->commit_at = wall_now();
    out->commit_s = baton_now() - t0;
    if (s->remote) upload_by(s, deadline, margin_s, out);
    return BATON_OK;
}

int baton_ckpt_store_upload_left(baton_ckpt_store *s, const char *folder, uint64_t step)
{
    if (!s->remote) return 0;
    baton_err e = {0};
    int has = ckpt_remote_has(s->remote, step, &e);
    if (has < 0) {
        baton_log(BATON_LOG_WARN, "cannot tell whether checkpoint %" PRIu64 " is uploaded: %s", step, e.msg);
        return 0;
    }
    if (has) return 0;
    if (ckpt_remote_enqueue(s->remote, folder, step, &e) != BATON_OK) {
        baton_log(BATON_LOG_WARN, "checkpoint %" PRIu64 " not uploaded: %s", step, e.msg);
        return 0;
    }
    baton_log(BATON_LOG_INFO, "checkpoint %" PRIu64 " was left to this machine by the previous one: uploading it", step);
    return 1;
}

int ckpt_save_sync(baton_ckpt_store *s, const baton_nn_model *m, const baton_nn_optim *o,
                         const char *state_json, uint64_t step, baton_err *err)
{
    join(s, NULL, 1);
    int rc = baton_ckpt_snapshot(s, m, o, state_json, step, BATON_CKPT_WAIT, err);
    return rc ? rc : baton_ckpt_persist_sync(s, err);
}
