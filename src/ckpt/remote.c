/* remote.c — a remote copy of a checkpoint directory in a store (s3://bucket/prefix/, or a local or
 * mounted folder): upload of committed checkpoints (by a background uploader thread, or on the
 * caller's thread for the final / interruption checkpoint), remote retention, and restore of the
 * newest complete remote checkpoint into a local directory that holds none, so that compute can be
 * stateless.
 *
 * Remote layout under the store: ckpt-<step>/{model.safetensors, optim.safetensors, state.json,
 * MANIFEST}, the names of the local folder (step zero-padded to 9 digits). Invariants:
 *  - MANIFEST is uploaded last, after every file it lists: a remote checkpoint counts as uploaded
 *    (complete) exactly when its MANIFEST object exists. Before a step is uploaded again, its
 *    MANIFEST object is deleted first.
 *  - Retention keeps the newest `keep` complete checkpoints; for every other one the MANIFEST object
 *    is deleted FIRST, then its files, so a half-deleted checkpoint never looks complete. Incomplete
 *    leftovers older than the newest complete checkpoint are deleted too.
 *  - All files are read back from the committed local folder into memory and checked against its
 *    MANIFEST (size, CRC32C) before the first is sent: a local copy damaged after the commit is
 *    never uploaded, and local retention removing the folder meanwhile does not cut an upload short.
 *  - Restore trusts nothing it downloads: the MANIFEST must parse and list the required files; each
 *    file must have the listed size and CRC32C, safetensors headers must validate and state.json's
 *    step must be the folder's; then the files are committed locally through ckpt_commit_files (the
 *    same atomic protocol as a save) and the new folder is verified again. A damaged remote
 *    checkpoint is skipped with a warning naming the object, and the next newest is tried.
 *
 * Threads: the uploader thread starts on the first enqueue and takes the newest queued checkpoint; a
 * newer enqueue replaces a queued one that has not started (logged). Uploads, background or on the
 * caller's thread, are serialised by one mutex, and each records its outcome under it, so
 * ckpt_remote_wait reports the outcome of the last upload. Messages name the bucket and key
 * (the store's URI plus the object name) and never contain credentials (the io layer scrubs them). */
#include "baton/rec.h"
#include "ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REMOTE_MAX_OBJECTS 100000

struct baton_ckpt_remote {
    baton_store *st;
    int keep;
    pthread_mutex_t up;                 /* one upload at a time; guards buf */
    pthread_mutex_t mu;                 /* guards the fields below */
    pthread_cond_t cv;
    pthread_t th;
    int started, stop;
    int has_pending, active;
    char pending[4096];
    uint64_t pending_step;
    int rc, reported;                   /* outcome of the last upload, and whether it was reported */
    baton_err err;
    uint64_t uploads;                   /* completed uploads */
    uint64_t last_step;                 /* the step of the newest completed upload (uploads > 0) */
    double took[8];                     /* seconds of the last (up to) 8 completed uploads, a ring */
    baton_buf buf[16];                  /* file contents while uploading (reused; one per file) */
};

static const char *const required[] = {"model.safetensors", "optim.safetensors", "state.json"};

int ckpt_remote_open(const char *uri, const baton_store_opts *so, int keep, baton_ckpt_remote **out,
                           baton_err *err)
{
    *out = NULL;
    baton_ckpt_remote *r = calloc(1, sizeof *r);
    if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = baton_store_open(uri, so, &r->st, err);
    /* a folder (a path, or file://path) that does not exist yet: create it */
    const char *local = !strncmp(uri, "file://", 7) ? uri + 7 : strstr(uri, "://") ? NULL : uri;
    if (rc == BATON_ERR_NOTFOUND && local && *local) {
        rc = baton_mkdir_p(local, err);
        if (rc == BATON_OK) rc = baton_store_open(uri, so, &r->st, err);
    }
    if (rc == BATON_OK && baton_store_kind_of(r->st) == BATON_STORE_HTTP)
        rc = baton_err_set(err, BATON_ERR_ARG, "%s: HTTP stores are read-only; use s3:// or a folder", uri);
    if (rc != BATON_OK) {
        baton_store_close(r->st);
        free(r);
        return baton_err_prefix(err, "checkpoint URI");
    }
    r->keep = keep > 0 ? keep : BATON_CKPT_KEEP_DEFAULT;
    r->reported = 1;
    pthread_mutex_init(&r->up, NULL);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    *out = r;
    return BATON_OK;
}

const char *ckpt_remote_uri(const baton_ckpt_remote *r) { return baton_store_uri(r->st); }

/* ---------------------------------------------------------------- listing */

typedef struct rstep {
    uint64_t step;
    int complete;           /* its MANIFEST object exists */
    char dir[32];           /* "ckpt-<step>" as found remotely */
} rstep;

static int cmp_rstep(const void *a, const void *b)
{
    uint64_t x = ((const rstep *)a)->step, y = ((const rstep *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The remote checkpoint folders, newest first, and the objects behind them. */
static int remote_steps(baton_ckpt_remote *r, baton_store_obj **objs, size_t *nobj, rstep **out, size_t *n,
                        baton_err *err)
{
    *out = NULL;
    *n = 0;
    int rc = baton_store_list(r->st, "ckpt-", REMOTE_MAX_OBJECTS, objs, nobj, err);
    if (rc != BATON_OK) return rc;
    rstep *v = calloc(*nobj + 1, sizeof *v);
    if (!v) {
        baton_store_list_free(*objs, *nobj);
        *objs = NULL;
        *nobj = 0;
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < *nobj; i++) {
        const char *name = (*objs)[i].name, *slash = strchr(name, '/');
        char dir[32];
        uint64_t step;
        if (!slash || (size_t)(slash - name) >= sizeof dir) continue;
        memcpy(dir, name, (size_t)(slash - name));
        dir[slash - name] = 0;
        if (!baton_ckpt_parse_name(dir, &step)) continue;
        size_t k = 0;
        while (k < *n && strcmp(v[k].dir, dir) != 0) k++;
        if (k == *n) {
            v[k].step = step;
            snprintf(v[k].dir, sizeof v[k].dir, "%s", dir);
            (*n)++;
        }
        if (!strcmp(slash + 1, "MANIFEST")) v[k].complete = 1;
    }
    if (*n > 1) qsort(v, *n, sizeof *v, cmp_rstep);
    *out = v;
    return BATON_OK;
}

int ckpt_remote_list(baton_ckpt_remote *r, uint64_t **steps, size_t *n, baton_err *err)
{
    *steps = NULL;
    *n = 0;
    baton_store_obj *objs;
    size_t nobj, ns;
    rstep *v;
    int rc = remote_steps(r, &objs, &nobj, &v, &ns, err);
    if (rc != BATON_OK) return rc;
    baton_store_list_free(objs, nobj);
    uint64_t *s = malloc((ns + 1) * sizeof *s);
    if (!s) {
        free(v);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ns; i++)
        if (v[i].complete) s[(*n)++] = v[i].step;
    free(v);
    *steps = s;
    return BATON_OK;
}

/* Delete every object of one remote folder, MANIFEST first. */
static int delete_folder(baton_ckpt_remote *r, const rstep *f, const baton_store_obj *objs, size_t nobj, baton_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "%s/MANIFEST", f->dir);
    int rc = baton_store_delete(r->st, name, err);
    if (rc != BATON_OK) return rc;
    size_t dl = strlen(f->dir);
    for (size_t i = 0; i < nobj; i++) {
        const char *o = objs[i].name;
        if (strncmp(o, f->dir, dl) != 0 || o[dl] != '/' || !strcmp(o + dl + 1, "MANIFEST")) continue;
        if ((rc = baton_store_delete(r->st, o, err)) != BATON_OK) return rc;
    }
    return BATON_OK;
}

int ckpt_remote_retain(baton_ckpt_remote *r, int keep, baton_err *err)
{
    if (keep <= 0) keep = r->keep;
    baton_store_obj *objs;
    size_t nobj, n;
    rstep *v;
    int rc = remote_steps(r, &objs, &nobj, &v, &n, err);
    if (rc != BATON_OK) return rc;
    int kept = 0;
    uint64_t newest = 0;
    int have_newest = 0;
    for (size_t i = 0; i < n && rc == BATON_OK; i++) {
        if (v[i].complete) {
            if (!have_newest) {
                newest = v[i].step;
                have_newest = 1;
            }
            if (kept < keep) {
                kept++;
                continue;
            }
        } else if (!have_newest || v[i].step >= newest) {
            continue;   /* possibly an upload in progress */
        }
        rc = delete_folder(r, &v[i], objs, nobj, err);
    }
    free(v);
    baton_store_list_free(objs, nobj);
    return rc;
}

/* ---------------------------------------------------------------- upload */

/* Read a whole local file into b (reused), at most max bytes. */
static int read_into(const char *path, uint64_t max, baton_buf *b, baton_err *err)
{
    b->len = 0;
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0)
        return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO, "%s: cannot open: %s", path,
                             strerror(errno));
    struct stat sb;
    int rc = BATON_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: not a readable regular file", path);
    } else if ((uint64_t)sb.st_size != max) {
        rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s: %lld bytes, MANIFEST says %" PRIu64, path,
                           (long long)sb.st_size, max);
    } else if (max > SIZE_MAX / 2 || baton_buf_reserve(b, (size_t)max + 1) != BATON_OK) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for %" PRIu64 " bytes", path, max);
    }
    while (rc == BATON_OK && b->len < max) {
        ssize_t k = baton_sys.read(fd, b->data + b->len, (size_t)max - b->len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = baton_err_set(err, BATON_ERR_IO, "%s: read failed: %s", path, strerror(errno));
        else if (k == 0) rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s: shorter than %" PRIu64 " bytes", path, max);
        else b->len += (size_t)k;
    }
    baton_sys.close(fd);
    return rc;
}

/* Upload one committed folder; caller holds r->up. */
static int upload_locked(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err)
{
    char p[4200], name[128], dir[32];
    snprintf(dir, sizeof dir, "ckpt-%09" PRIu64, step);
    if (snprintf(p, sizeof p, "%s/MANIFEST", folder) >= (int)sizeof p)
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", folder);
    uint8_t *text;
    size_t tlen;
    int rc = baton_file_read_all(p, BATON_CKPT_MANIFEST_MAX, &text, &tlen, err);
    if (rc != BATON_OK) return rc;
    baton_ckpt_manifest m;
    if ((rc = ckpt_manifest_parse(p, (const char *)text, tlen, &m, err)) != BATON_OK) goto out;
    for (size_t i = 0; i < m.nfiles; i++) {
        const baton_ckpt_file *f = &m.files[i];
        if ((rc = baton_path_join(p, sizeof p, folder, f->name, err)) != BATON_OK) goto out;
        if ((rc = read_into(p, f->bytes, &r->buf[i], err)) != BATON_OK) goto out;
        uint32_t crc = baton_crc32c(0, r->buf[i].data, r->buf[i].len);
        if (crc != f->crc32c) {
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: CRC32C %08x, MANIFEST says %08x; not uploading a damaged file",
                               p, crc, f->crc32c);
            goto out;
        }
    }
    /* a step uploaded again must not look complete while its files are replaced */
    snprintf(name, sizeof name, "%s/MANIFEST", dir);
    if ((rc = baton_store_delete(r->st, name, err)) != BATON_OK) goto out;
    for (size_t i = 0; i < m.nfiles; i++) {
        if ((rc = baton_path_join(name, sizeof name, dir, m.files[i].name, err)) != BATON_OK) goto out;
        if ((rc = baton_store_put(r->st, name, r->buf[i].data, r->buf[i].len, err)) != BATON_OK) goto out;
    }
    snprintf(name, sizeof name, "%s/MANIFEST", dir);
    if ((rc = baton_store_put(r->st, name, text, tlen, err)) != BATON_OK) goto out;
    baton_err rerr = {0};
    if (ckpt_remote_retain(r, r->keep, &rerr) != BATON_OK)
        baton_log(BATON_LOG_WARN, "remote retention in %s: %s", baton_store_uri(r->st), rerr.msg);
out:
    free(text);
    if (rc != BATON_OK)
        baton_err_prefix(err, "upload of checkpoint %" PRIu64 " to %s%s/", step, baton_store_uri(r->st), dir);
    return rc;
}

/* Run one upload under r->up and record its outcome (reported: the caller returns it itself). */
static int upload_record(baton_ckpt_remote *r, const char *folder, uint64_t step, int reported, baton_err *err)
{
    baton_err e = {0};
    pthread_mutex_lock(&r->up);
    double t0 = baton_now();
    int rc = upload_locked(r, folder, step, &e);
    double took = baton_now() - t0;
    pthread_mutex_lock(&r->mu);
    r->rc = rc;
    r->err = e;
    r->reported = reported || rc == BATON_OK;
    if (rc == BATON_OK) {
        r->took[r->uploads++ % 8] = took;
        if (step > r->last_step || r->uploads == 1) r->last_step = step;
    }
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_unlock(&r->up);
    if (rc != BATON_OK && err) *err = e;
    return rc;
}

int ckpt_remote_upload(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err)
{
    pthread_mutex_lock(&r->mu);
    if (r->has_pending && r->pending_step <= step) r->has_pending = 0;   /* superseded by this one */
    pthread_mutex_unlock(&r->mu);
    return upload_record(r, folder, step, 1, err);
}

static void *uploader(void *arg)
{
    baton_ckpt_remote *r = arg;
    char folder[4096];
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->has_pending && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
        if (!r->has_pending) break;   /* stopping, nothing left */
        memcpy(folder, r->pending, sizeof folder);
        uint64_t step = r->pending_step;
        r->has_pending = 0;
        r->active = 1;
        pthread_mutex_unlock(&r->mu);
        baton_err e = {0};
        int rc = upload_record(r, folder, step, 0, &e);
        if (rc == BATON_ERR_NOTFOUND && !baton_is_dir(folder)) {   /* local retention was faster: superseded */
            baton_log(BATON_LOG_INFO, "checkpoint %" PRIu64 " not uploaded: removed locally before it could be read",
                      step);
            pthread_mutex_lock(&r->mu);
            r->reported = 1;
            pthread_mutex_unlock(&r->mu);
        } else if (rc != BATON_OK)
            baton_log(BATON_LOG_WARN, "%s (training goes on; the next checkpoint will be uploaded)", e.msg);
        pthread_mutex_lock(&r->mu);
        r->active = 0;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int ckpt_remote_enqueue(baton_ckpt_remote *r, const char *folder, uint64_t step, baton_err *err)
{
    if (strlen(folder) >= sizeof r->pending) return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", folder);
    pthread_mutex_lock(&r->mu);
    int rc = BATON_OK;
    if (!r->started) {
        if (pthread_create(&r->th, NULL, uploader, r) != 0)
            rc = baton_err_set(err, BATON_ERR_IO, "cannot start the checkpoint upload thread");
        else
            r->started = 1;
    }
    if (rc == BATON_OK) {
        if (r->has_pending)
            baton_log(BATON_LOG_INFO, "checkpoint %" PRIu64 " not uploaded: checkpoint %" PRIu64 " supersedes it",
                      r->pending_step, step);
        snprintf(r->pending, sizeof r->pending, "%s", folder);
        r->pending_step = step;
        r->has_pending = 1;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int ckpt_remote_wait(baton_ckpt_remote *r, baton_err *err)
{
    pthread_mutex_lock(&r->mu);
    while (r->has_pending || r->active) pthread_cond_wait(&r->cv, &r->mu);
    int rc = r->reported ? BATON_OK : r->rc;
    if (rc != BATON_OK && err) *err = r->err;
    r->reported = 1;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

uint64_t ckpt_remote_uploads(baton_ckpt_remote *r)
{
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->uploads;
    pthread_mutex_unlock(&r->mu);
    return n;
}

double ckpt_remote_cost(baton_ckpt_remote *r, uint64_t *n)
{
    pthread_mutex_lock(&r->mu);
    double worst = -1;
    size_t k = r->uploads < 8 ? (size_t)r->uploads : 8;
    for (size_t i = 0; i < k; i++)
        if (r->took[i] > worst) worst = r->took[i];
    if (n) *n = r->uploads;
    pthread_mutex_unlock(&r->mu);
    return worst;
}

void ckpt_remote_set_deadline(baton_ckpt_remote *r, double t)
{
    baton_store_set_deadline(r->st, t);
}

int ckpt_remote_uploaded(baton_ckpt_remote *r, uint64_t step)
{
    pthread_mutex_lock(&r->mu);
    int done = r->uploads > 0 && r->last_step >= step;
    pthread_mutex_unlock(&r->mu);
    return done;
}

void ckpt_remote_supersede(baton_ckpt_remote *r, uint64_t step)
{
    pthread_mutex_lock(&r->mu);
    if (r->has_pending) {
        if (r->pending_step != step)
            baton_log(BATON_LOG_INFO, "checkpoint %" PRIu64 " not uploaded: the interruption's checkpoint supersedes it",
                      r->pending_step);
        r->has_pending = 0;
    }
    if (r->active) {
        baton_store_set_deadline(r->st, 0.001);   /* long past: the transfer under way stops */
        while (r->active) pthread_cond_wait(&r->cv, &r->mu);
        baton_store_set_deadline(r->st, 0);
        r->reported = 1;   /* cut on purpose: not a failure to report */
    }
    pthread_mutex_unlock(&r->mu);
}

int ckpt_remote_has(baton_ckpt_remote *r, uint64_t step, baton_err *err)
{
    uint64_t *steps;
    size_t n;
    int rc = ckpt_remote_list(r, &steps, &n, err);
    if (rc != BATON_OK) return rc;
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) found = steps[i] == step;
    free(steps);
    return found;
}

void ckpt_remote_close(baton_ckpt_remote *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    int started = r->started;
    pthread_mutex_unlock(&r->mu);
    if (started) pthread_join(r->th, NULL);   /* the thread uploads what is still queued first */
    if (!r->reported && r->rc != BATON_OK) baton_log(BATON_LOG_WARN, "%s", r->err.msg);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->up);
    for (size_t i = 0; i < 16; i++) baton_buf_free(&r->buf[i]);
    baton_store_close(r->st);
    free(r);
}

/* ---------------------------------------------------------------- restore */

/* Download and check one remote folder; commit it under dir. */
static int restore_one(baton_ckpt_remote *r, const rstep *f, const char *dir, int keep, char *path, size_t cap,
                       baton_err *err)
{
    char name[128], uri[1400];
    baton_buf mt = {0}, bufs[16];
    memset(bufs, 0, sizeof bufs);
    baton_ckpt_manifest m;
    snprintf(name, sizeof name, "%s/MANIFEST", f->dir);
    int rc = baton_store_get(r->st, name, BATON_CKPT_MANIFEST_MAX, &mt, err);
    if (rc == BATON_OK) {
        snprintf(uri, sizeof uri, "%s%s", baton_store_uri(r->st), name);
        rc = ckpt_manifest_parse(uri, (const char *)mt.data, mt.len, &m, err);
    }
    for (size_t k = 0; rc == BATON_OK && k < sizeof required / sizeof required[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < m.nfiles && !found; i++) found = !strcmp(m.files[i].name, required[k]);
        if (!found) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: does not list %s", uri, required[k]);
    }
    baton_ckpt_blob blobs[16];
    for (size_t i = 0; rc == BATON_OK && i < m.nfiles; i++) {
        const baton_ckpt_file *cf = &m.files[i];
        if ((rc = baton_path_join(name, sizeof name, f->dir, cf->name, err)) != BATON_OK) break;
        snprintf(uri, sizeof uri, "%s%s", baton_store_uri(r->st), name);
        if (cf->bytes > (uint64_t)SIZE_MAX / 2) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: %" PRIu64 " bytes is too large", uri, cf->bytes);
            break;
        }
        if ((rc = baton_store_get(r->st, name, (size_t)cf->bytes, &bufs[i], err)) != BATON_OK) break;
        if (bufs[i].len != cf->bytes) {
            rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s: %zu bytes, MANIFEST says %" PRIu64, uri, bufs[i].len,
                               cf->bytes);
            break;
        }
        uint32_t crc = baton_crc32c(0, bufs[i].data, bufs[i].len);
        if (crc != cf->crc32c) {
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: CRC32C %08x, MANIFEST says %08x", uri, crc, cf->crc32c);
            break;
        }
        size_t nl = strlen(cf->name);
        if (nl > 12 && !strcmp(cf->name + nl - 12, ".safetensors")) {
            baton_st_header h;
            if ((rc = ckpt_st_parse_header(uri, bufs[i].data, bufs[i].len, bufs[i].len, &h, err)) != BATON_OK) break;
            baton_st_header_free(&h);
        } else if (!strcmp(cf->name, "state.json")) {
            if ((rc = ckpt_state_check(uri, (const char *)bufs[i].data, bufs[i].len, f->step, err)) != BATON_OK)
                break;
        }
        blobs[i] = (baton_ckpt_blob){cf->name, bufs[i].data, bufs[i].len};
    }
    if (rc == BATON_OK) rc = baton_mkdir_p(dir, err);
    if (rc == BATON_OK) rc = ckpt_commit_files(dir, f->step, blobs, m.nfiles, keep, path, cap, err);
    if (rc == BATON_OK && (rc = baton_ckpt_verify(path, err)) != BATON_OK) baton_remove_tree(path);
    baton_buf_free(&mt);
    for (size_t i = 0; i < 16; i++) baton_buf_free(&bufs[i]);
    return rc;
}

int ckpt_remote_restore(baton_ckpt_remote *r, const char *dir, int keep, char *path, size_t cap, uint64_t *step,
                              baton_err *err)
{
    baton_store_obj *objs;
    size_t nobj, n;
    rstep *v;
    int rc = remote_steps(r, &objs, &nobj, &v, &n, err);
    if (rc != BATON_OK) {
        /* "nothing to restore" must not be confused with a bucket that does not exist */
        if (rc == BATON_ERR_NOTFOUND && err) err->code = rc = BATON_ERR_ARG;
        return baton_err_prefix(err, "restore from %s", baton_store_uri(r->st));
    }
    baton_store_list_free(objs, nobj);
    size_t complete = 0;
    rc = BATON_ERR_NOTFOUND;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].complete) continue;
        complete++;
        baton_err e = {0};
        double t0 = baton_now();
        if (restore_one(r, &v[i], dir, keep, path, cap, &e) != BATON_OK) {
            baton_log(BATON_LOG_WARN, "skipping remote checkpoint %s%s/: %s", baton_store_uri(r->st), v[i].dir, e.msg);
            continue;
        }
        baton_log(BATON_LOG_INFO, "restored %s%s/ into %s (%.2f s)", baton_store_uri(r->st), v[i].dir, path,
                  baton_now() - t0);
        if (step) *step = v[i].step;
        rc = BATON_OK;
        break;
    }
    if (rc != BATON_OK)
        baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no complete checkpoint that verifies (%zu folders, %zu with a MANIFEST)",
                      baton_store_uri(r->st), n, complete);
    free(v);
    return rc;
}
