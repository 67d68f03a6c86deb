/* fill.c — file mode's local copy, filled while the first epoch reads it.
 *
 * Owns: per shard a file in the local folder ("<shard>.part" until every piece of it is in place
 * and checked, then renamed to the shard's name) and per piece a state; the download thread, which
 * fetches every piece still missing (runs of pieces, one fetch chunk at most a range); the reader's
 * own fetch of the pieces of the records it is about to read (io_fill_want), so the first batch
 * waits for its own records, not for the whole dataset; the bytes both fetched.
 *
 * Contract:
 *   1. A piece is asked for once: by the reader or by the download, never both (a piece in flight
 *      is waited for, not asked for again), so the store sends each byte of the dataset once.
 *   2. No record is handed out from bytes that were not checked: a fetched piece is checked against
 *      dataset.json before it is written, and every piece again when a record in it is read back
 *      (pread into our own memory, never a mapping).
 *   3. Pieces found wrong as they arrive are fetched again, once per shard; wrong a second time is
 *      an error naming the shard and the piece (file mode's download always did so).
 *   4. A copy found in place — a whole one from an earlier run, or the ".part" a crash left — is
 *      used piece by piece: each is checked before a record of it is read (by the reader, or by the
 *      download thread, which checks them all); a piece that fails is fetched again.
 *   5. A shard gets its final name only once every piece is in place and checked: its CRC32C is
 *      then dataset.json's (the manifest's pieces sum to it, manifest.c checks).
 *   6. Threads: the loader's thread calls the functions below (io_fill_stats may come from any
 *      thread: the fetches it reads are replaced and freed under mu); the download thread touches
 *      the store, the files, and the states and counters under mu only. Retiring or closing
 *      cancels it between two pieces and joins it.
 * Only for datasets whose shards all have pieces (loader.c downloads older ones first). */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { P_MISSING, P_UNCHECKED, P_ASKED, P_DOWNLOAD, P_PRESENT };

#define FILL_MAX_OPEN 256   /* shards kept open; past that, a shard is opened for each access */
/* The download's share of the store: while it runs, every record whose pieces it has not brought
 * yet costs a request of its own (about 1 ms of a RADOS Gateway's CPU each); at the seed's scale
 * on 2 cores, 8 ranges in flight and 16 asked for made epoch 0 100 s with 17,900 such requests,
 * against 111 s and 26,700 at 4 and 8 (16 and 32: 97 s). */
#define DL_INFLIGHT 8
#define DL_AHEAD 16         /* ranges the download thread keeps asked for */
#define WANT_INFLIGHT 16    /* the reader's requests in flight: one record's pieces each */

typedef struct fshard {
    uint8_t *st;            /* per piece: P_* */
    uint64_t npieces, present;
    int fd;                 /* -1: not kept open */
    int renamed;            /* the file has its final name */
    int retried;            /* pieces of it arrived wrong once already */
    int fetched;            /* a piece of it was fetched (counted in downloads) */
    int create;             /* its ".part" is created (and sized) at its first use */
    int whole;              /* every piece in place and checked, the file under its name */
} fshard;

struct io_fill {
    baton_store *store;
    const baton_manifest *m;
    char *dir, *uri;        /* the folder, and how errors name it (ending in '/') */
    fshard *sh;
    size_t nshards, complete;
    int nopen;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* a piece arrived, the download started, failed or was cancelled */
    baton_fetch *want;      /* the reader's fetch (its thread only) */
    baton_fetch *dl;        /* the download thread's */
    pthread_t thread;
    int running, go, cancel, failed;
    baton_err err;          /* the download thread's failure */
    uint64_t fetched, counted;  /* bytes of pieces received (both threads); of them, polled */
    uint64_t downloads;         /* shards of which a piece was fetched */
    baton_buf buf;          /* the reader's pieces, read back */
    size_t chunk;           /* the download's fetch chunk: whole pieces of every shard */
    baton_fetch_opts wopts; /* the reader's fetch's */
    baton_loader_stats past; /* counts of fetches freed (io_fill_forget, io_fill_retire); under mu */
};

static uint64_t pend(const baton_shard_info *si, uint64_t k)
{
    uint64_t e = (k + 1) * si->piece_bytes;
    return e < si->bytes ? e : si->bytes;
}

static int path_of(const io_fill *f, uint32_t s, int part, char *out, size_t cap, baton_err *err)
{
    char name[4096];
    if (baton_path_join(name, sizeof name, f->dir, f->m->shards[s].file, err)) return err->code;
    if (snprintf(out, cap, "%s%s", name, part ? ".part" : "") >= (int)cap)
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", name);
    return BATON_OK;
}

/* Shard s's file, open for reading and writing: *tmp 1 when the caller closes it (past
 * FILL_MAX_OPEN). Under mu. */
static int shard_fd(io_fill *f, uint32_t s, int *fd, int *tmp, baton_err *err)
{
    fshard *h = &f->sh[s];
    *tmp = 0;
    if (h->fd >= 0) return *fd = h->fd, BATON_OK;
    char path[4200];
    if (path_of(f, s, !h->renamed, path, sizeof path, err)) return err->code;
    int d = baton_sys.open(path, O_RDWR | O_CLOEXEC | (h->create ? O_CREAT | O_TRUNC : 0), 0644);
    if (d < 0) return baton_err_errno(err, errno, h->create ? "cannot create" : "cannot open", path);
    if (h->create && ftruncate(d, (off_t)f->m->shards[s].bytes) != 0) {
        int rc = baton_err_errno(err, errno, "cannot size", path);
        baton_sys.close(d);
        return rc;
    }
    h->create = 0;
    if (f->nopen < FILL_MAX_OPEN) h->fd = d, f->nopen++;
    else *tmp = 1;
    *fd = d;
    return BATON_OK;
}

/* Piece k..k1 of shard s are in place and checked (under mu): the shard renamed when whole. */
static int mark_present(io_fill *f, uint32_t s, uint64_t k, uint64_t k1, baton_err *err)
{
    fshard *h = &f->sh[s];
    for (; k <= k1; k++)
        if (h->st[k] != P_PRESENT) h->st[k] = P_PRESENT, h->present++;
    if (h->present < h->npieces || h->whole) return BATON_OK;
    char part[4200], final[4200];
    if (path_of(f, s, 1, part, sizeof part, err) || path_of(f, s, 0, final, sizeof final, err)) return err->code;
    if (!h->renamed && baton_sys.rename(part, final) != 0)
        return baton_err_set(err, BATON_ERR_IO, "%s: rename: %s", final, strerror(errno));
    h->renamed = h->whole = 1;   /* a copy found in place under its name counts once checked */
    f->complete++;
    return BATON_OK;
}

/* Open (creating where needed) every shard's file; states from what is in place. */
static int open_shards(io_fill *f, baton_err *err)
{
    for (uint32_t s = 0; s < f->nshards; s++) {
        const baton_shard_info *si = &f->m->shards[s];
        fshard *h = &f->sh[s];
        h->fd = -1;
        h->npieces = baton_shard_pieces(si);
        if (!(h->st = calloc(h->npieces ? h->npieces : 1, 1))) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        char final[4200], part[4200];
        if (path_of(f, s, 0, final, sizeof final, err) || path_of(f, s, 1, part, sizeof part, err)) return err->code;
        struct stat st;
        int in_place = stat(final, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == si->bytes;
        if (in_place || (stat(part, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == si->bytes)) {
            memset(h->st, P_UNCHECKED, h->npieces);   /* used piece by piece, each checked first */
            h->renamed = in_place;
            int rc = h->npieces == 0 ? mark_present(f, s, 1, 0, err) : BATON_OK;   /* an empty shard */
            if (rc) return rc;
            continue;
        }
        h->create = 1;   /* at its first use: the open creates no files */
        int rc = BATON_OK, fd, tmp;
        if (h->npieces == 0 && !(rc = shard_fd(f, s, &fd, &tmp, err))) {   /* an empty shard: in place at once */
            if (tmp) baton_sys.close(fd);
            rc = mark_present(f, s, 1, 0, err);
        }
        if (rc) return rc;
    }
    return BATON_OK;
}

/* Bytes [lo, hi) of shard s: written (wr) from buf, or read into it. Under mu only for shard_fd. */
static int shard_io(io_fill *f, uint32_t s, uint64_t lo, uint64_t hi, uint8_t *buf, int wr, baton_err *err)
{
    const baton_shard_info *si = &f->m->shards[s];
    pthread_mutex_lock(&f->mu);
    int fd = -1, tmp = 0, rc = shard_fd(f, s, &fd, &tmp, err);
    char path[4200];
    if (rc == BATON_OK) rc = path_of(f, s, !f->sh[s].renamed, path, sizeof path, err);   /* how errors name it */
    pthread_mutex_unlock(&f->mu);
    if (rc) return rc;
    size_t n = (size_t)(hi - lo), done = 0;
    struct stat st;   /* a copy cut short under us (a cleaner of the folder) is not written past */
    if (wr && baton_sys.fstat(fd, &st) == 0 && (uint64_t)st.st_size < si->bytes)
        rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s: the file is now %lld bytes, dataset.json says %llu: it was "
                           "cut short while being filled", path, (long long)st.st_size, (unsigned long long)si->bytes);
    while (rc == BATON_OK && done < n) {
        ssize_t r = wr ? baton_sys.pwrite(fd, buf + done, n - done, (off_t)(lo + done))
                       : baton_sys.pread(fd, buf + done, n - done, (off_t)(lo + done));
        if (r < 0 && errno == EINTR) continue;
        if (r > 0) {
            done += (size_t)r;
        } else if (r == 0 && !wr) {   /* as shardfile.c says it */
            long long now = baton_sys.fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
            rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s: the file ends at offset %llu (now %lld bytes), "
                               "dataset.json says %llu: it was cut short while being read", path,
                               (unsigned long long)(lo + done), now, (unsigned long long)si->bytes);
        } else {
            if (r == 0) errno = ENOSPC;
            rc = errno == ENOSPC || errno == EDQUOT
                     ? baton_err_set(err, BATON_ERR_NOSPACE, "%s: no space left for file mode's copy (%llu bytes)", path,
                                     (unsigned long long)si->bytes)
                     : baton_err_set(err, BATON_ERR_IO, "%s: %s failed at offset %llu: %s", path, wr ? "write" : "read",
                                     (unsigned long long)(lo + done), strerror(errno));
        }
    }
    if (tmp) baton_sys.close(fd);
    return rc;
}

/* A fetched chunk of whole pieces of shard s: checked, written, marked; a wrong one marks its
 * pieces missing again (*again 1) the first time for the shard, and is an error the second. */
static int take_piece(io_fill *f, const baton_fetch_piece *p, int *again, baton_err *err)
{
    uint32_t s = (uint32_t)p->tag;
    const baton_shard_info *si = &f->m->shards[s];
    uint64_t k0 = p->offset / si->piece_bytes, k1 = (p->offset + p->len - 1) / si->piece_bytes;
    *again = 0;
    baton_err why = {0};
    int rc = io_verify_size(baton_store_uri(f->store), si->file, si->bytes, p->object_size, p->offset, err);
    if (rc) return rc;
    int bad = io_piece_check(baton_store_uri(f->store), si, p->offset, p->data, p->len, p->crc32c, &why);
    if (bad && bad != BATON_ERR_CORRUPT) return *err = why, bad;
    if (!bad) rc = shard_io(f, s, p->offset, p->offset + p->len, (uint8_t *)p->data, 1, err);
    pthread_mutex_lock(&f->mu);
    f->fetched += p->len;
    if (!f->sh[s].fetched) f->sh[s].fetched = 1, f->downloads++;
    if (rc == BATON_OK && !bad) {
        rc = mark_present(f, s, k0, k1, err);
    } else if (bad && !f->sh[s].retried) {
        f->sh[s].retried = 1;
        for (uint64_t k = k0; k <= k1; k++) f->sh[s].st[k] = P_MISSING;
        baton_log(BATON_LOG_WARN, "%s; fetching those bytes again", why.msg);
        *again = 1;
    } else if (bad) {
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: checksum mismatch again after fetching it a second time (the "
                           "store's copy does not match dataset.json): %s", si->file, why.msg);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

/* Pieces k0..k1 of shard s read back into b and checked (*ok 1: all good). A wrong piece found in
 * place (P_UNCHECKED) is marked missing, to be fetched again; one this process wrote and checked
 * is an error: the file changed under the reader. The good unchecked ones become present; pieces
 * another thread is handling meanwhile are left to it. */
static int check_in_place(io_fill *f, uint32_t s, uint64_t k0, uint64_t k1, baton_buf *b, int *ok, baton_err *err)
{
    const baton_shard_info *si = &f->m->shards[s];
    uint64_t lo = k0 * si->piece_bytes, hi = pend(si, k1);
    *ok = 0;
    if (baton_buf_reserve(b, (size_t)(hi - lo))) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = shard_io(f, s, lo, hi, b->data, 0, err);
    if (rc) return rc;
    baton_err why = {0};
    *ok = io_piece_check(f->uri, si, lo, b->data, (size_t)(hi - lo), baton_crc32c(0, b->data, (size_t)(hi - lo)),
                         &why) == BATON_OK;
    pthread_mutex_lock(&f->mu);
    for (uint64_t k = k0; k <= k1 && rc == BATON_OK; k++) {
        int x = f->sh[s].st[k];
        int good = *ok || baton_crc32c(0, b->data + (k * si->piece_bytes - lo), (size_t)(pend(si, k) - k * si->piece_bytes)) ==
                              si->piece_crc32c[k];
        if (good && x == P_UNCHECKED) rc = mark_present(f, s, k, k, err);
        else if (!good && x == P_UNCHECKED) f->sh[s].st[k] = P_MISSING;
        else if (!good && x == P_PRESENT)
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s (the copy changed after it was written)", why.msg);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

/* ---------------------------------------------------------------- the download thread */

typedef struct scan {
    uint32_t s;
    uint64_t k;
} scan;

/* The next run of pieces to work on from *c, at most a fetch chunk: RUN_FETCH (missing ones, now
 * marked P_DOWNLOAD) or RUN_CHECK (found in place); 0 when none is left. Under mu. */
enum { RUN_FETCH = 1, RUN_CHECK = 2 };
static int next_run(io_fill *f, scan *c, uint32_t *s, uint64_t *k0, uint64_t *k1)
{
    for (; c->s < f->nshards; c->s++, c->k = 0) {
        fshard *h = &f->sh[c->s];
        uint64_t most = f->chunk / f->m->shards[c->s].piece_bytes;   /* a multiple (io_piece_fetch_opts) */
        while (c->k < h->npieces && h->st[c->k] != P_MISSING && h->st[c->k] != P_UNCHECKED) c->k++;
        if (c->k == h->npieces) continue;
        int kind = h->st[c->k];
        *s = c->s, *k0 = c->k;
        while (c->k < h->npieces && h->st[c->k] == kind && c->k - *k0 < most) {
            if (kind == P_MISSING) h->st[c->k] = P_DOWNLOAD;
            c->k++;
        }
        *k1 = c->k - 1;
        return kind == P_MISSING ? RUN_FETCH : RUN_CHECK;
    }
    return 0;
}

static int download(io_fill *f, baton_err *err)
{
    scan c = {0, 0};
    baton_buf b = {0};
    int rc = BATON_OK, outstanding = 0, more = 1, wrapped = 0;
    while (rc == BATON_OK && !__atomic_load_n(&f->cancel, __ATOMIC_ACQUIRE)) {
        while (rc == BATON_OK && more && outstanding < DL_AHEAD) {
            uint32_t s;
            uint64_t k0, k1;
            pthread_mutex_lock(&f->mu);
            int kind = next_run(f, &c, &s, &k0, &k1);
            pthread_mutex_unlock(&f->mu);
            if (!kind && !wrapped) {   /* once more from the start: pieces the reader asked for and */
                c = (scan){0, 0};       /* forgot (io_fill_forget), or found wrong, behind the scan */
                wrapped = 1;
            } else if (!kind) {
                more = 0;
            } else if (kind == RUN_CHECK) {
                int ok;
                rc = check_in_place(f, s, k0, k1, &b, &ok, err);
                if (!ok && c.s > s) c = (scan){s, k0};   /* the wrong pieces: fetched on the way back */
                else if (!ok) c.k = k0;
            } else {
                const baton_shard_info *si = &f->m->shards[s];
                rc = io_fetch_add(f->dl, si->file, k0 * si->piece_bytes, pend(si, k1) - k0 * si->piece_bytes, s, err);
                outstanding++;
            }
        }
        if (rc || outstanding == 0) break;
        baton_fetch_piece p;
        if ((rc = io_fetch_next(f->dl, &p, err)) != BATON_OK) break;
        int again = 0, last = p.last;
        rc = take_piece(f, &p, &again, err);
        io_fetch_release(f->dl, &p);
        if (last) outstanding--;
        if (again) c = (scan){0, 0}, more = 1, wrapped = 0;
    }
    baton_buf_free(&b);
    return rc;
}

static void *download_main(void *arg)
{
    io_fill *f = arg;
    struct timespec by;   /* a reader that reads nothing for a second does not hold the download back */
    clock_gettime(CLOCK_REALTIME, &by);
    by.tv_sec += 1;
    pthread_mutex_lock(&f->mu);
    while (!f->go && !f->cancel && pthread_cond_timedwait(&f->cv, &f->mu, &by) != ETIMEDOUT) {}
    pthread_mutex_unlock(&f->mu);
    baton_err e = {0};
    int rc = download(f, &e);
    pthread_mutex_lock(&f->mu);
    if (rc && !f->cancel) {
        f->err = e;
        baton_err_prefix(&f->err, "downloading file mode's copy into %s", f->dir);
        f->failed = 1;
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---------------------------------------------------------------- the reader's side */

int io_fill_open(io_fill **out, baton_store *store, const baton_manifest *m, const char *dir, const char *uri,
                 const baton_fetch_opts *fo, baton_err *err)
{
    *out = NULL;
    io_fill *f = calloc(1, sizeof *f);
    if (!f) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    f->store = store, f->m = m, f->nshards = m->nshards;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->dir = strdup(dir), f->uri = strdup(uri);
    f->sh = calloc(f->nshards ? f->nshards : 1, sizeof *f->sh);
    for (size_t s = 0; f->sh && s < f->nshards; s++) f->sh[s].fd = -1;
    int rc = !f->dir || !f->uri || !f->sh ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : BATON_OK;
    if (!rc) rc = open_shards(f, err);
    /* the reader's records: many small ranges, so more of them in flight, in small chunks */
    baton_fetch_opts wo = *fo;
    wo.inflight = wo.inflight < WANT_INFLIGHT ? WANT_INFLIGHT : wo.inflight;
    wo.chunk_bytes = 1u << 20, wo.max_buffered = 32u << 20;
    f->chunk = fo->chunk_bytes;
    if (!rc) rc = io_piece_fetch_opts(m, &wo, err);
    f->wopts = wo;
    if (!rc && !(f->want = io_fetch_new(store, &wo, err))) rc = err->code;
    baton_fetch_opts dlo = *fo;   /* the download: whole runs of pieces, more of them in flight */
    dlo.inflight = dlo.inflight < DL_INFLIGHT ? DL_INFLIGHT : dlo.inflight;
    if (!rc && !(f->dl = io_fetch_new(store, &dlo, err))) rc = err->code;
    if (!rc) {
        if (pthread_create(&f->thread, NULL, download_main, f) != 0)
            rc = baton_err_set(err, BATON_ERR_IO, "cannot start the download thread: %s", strerror(errno));
        else
            f->running = 1;
    }
    if (rc) {
        io_fill_close(f);
        return rc;
    }
    *out = f;
    return BATON_OK;
}

void io_fill_start(io_fill *f)
{
    pthread_mutex_lock(&f->mu);
    f->go = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int io_fill_want(io_fill *f, uint32_t s, uint64_t at, uint64_t end, baton_err *err)
{
    const baton_shard_info *si = &f->m->shards[s];
    if (at >= end) return BATON_OK;
    uint64_t k0 = at / si->piece_bytes, k1 = (end - 1) / si->piece_bytes;
    int rc = BATON_OK;
    while (rc == BATON_OK && k0 <= k1) {
        pthread_mutex_lock(&f->mu);
        while (k0 <= k1 && f->sh[s].st[k0] != P_MISSING) k0++;
        uint64_t r = k0;
        while (r <= k1 && f->sh[s].st[r] == P_MISSING) f->sh[s].st[r++] = P_ASKED;
        pthread_mutex_unlock(&f->mu);
        if (r > k0) rc = io_fetch_add(f->want, si->file, k0 * si->piece_bytes, pend(si, r - 1) - k0 * si->piece_bytes, s, err);
        k0 = r;
    }
    return rc;
}

/* *pf replaced by `by`, its counts kept in f->past, under mu (io_fill_stats reads them there). */
static void retire_fetch(io_fill *f, baton_fetch **pf, baton_fetch *by)
{
    io_fetch_replace(pf, by, &f->mu, &f->past, 0, pf == &f->want ? &f->past.record_requests : NULL);
}

int io_fill_forget(io_fill *f, baton_err *err)
{
    baton_fetch *fresh = io_fetch_new(f->store, &f->wopts, err);
    if (!fresh) return err->code;
    retire_fetch(f, &f->want, fresh);   /* what the old one holds is dropped */
    pthread_mutex_lock(&f->mu);
    for (size_t s = 0; s < f->nshards; s++)
        for (uint64_t k = 0; k < f->sh[s].npieces; k++)
            if (f->sh[s].st[k] == P_ASKED) f->sh[s].st[k] = P_MISSING;
    pthread_mutex_unlock(&f->mu);
    return BATON_OK;
}

int io_fill_read(io_fill *f, uint32_t s, uint64_t at, uint64_t end, const uint8_t **out, baton_err *err)
{
    const baton_shard_info *si = &f->m->shards[s];
    uint64_t lo, hi;
    io_piece_span(si, at, end, &lo, &hi);
    uint64_t k0 = lo / si->piece_bytes, k1 = (hi - 1) / si->piece_bytes;
    for (;;) {
        int missing = 0, asked = 0, down = 0;
        pthread_mutex_lock(&f->mu);
        if (f->failed) {
            *err = f->err;
            pthread_mutex_unlock(&f->mu);
            return err->code;
        }
        for (uint64_t k = k0; k <= k1; k++) {
            int x = f->sh[s].st[k];
            missing |= x == P_MISSING, asked |= x == P_ASKED, down |= x == P_DOWNLOAD;
        }
        if (down && !missing && !asked) pthread_cond_wait(&f->cv, &f->mu);
        pthread_mutex_unlock(&f->mu);
        int rc = BATON_OK;
        if (missing) {
            rc = io_fill_want(f, s, at, end, err);
        } else if (asked) {   /* the reader's fetch brings them: take what comes before them */
            baton_fetch_piece p;
            int again;
            rc = io_fetch_next(f->want, &p, err);
            if (rc == BATON_OK) {
                rc = take_piece(f, &p, &again, err);
                io_fetch_release(f->want, &p);
            }
        } else if (!down) {   /* all in place: read back and checked (again) */
            int ok;
            rc = check_in_place(f, s, k0, k1, &f->buf, &ok, err);
            if (rc == BATON_OK && ok) {
                *out = f->buf.data + (at - lo);
                return BATON_OK;
            }
        }
        if (rc) return rc;
    }
}

int io_fill_poll(io_fill *f, uint64_t *got, int *done, baton_err *err)
{
    pthread_mutex_lock(&f->mu);
    *got = f->fetched - f->counted;
    f->counted = f->fetched;
    *done = f->complete == f->nshards;
    int rc = f->failed ? (*err = f->err, err->code) : BATON_OK;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void io_fill_stats(io_fill *f, baton_loader_stats *st)
{
    pthread_mutex_lock(&f->mu);
    st->downloads += f->downloads;
    st->record_requests += f->past.record_requests;
    st->bytes_fetched += f->past.bytes_fetched;
    st->fetch_retries += f->past.fetch_retries;
    if (f->want) {
        baton_fetch_stats fs;
        io_fetch_get_stats(f->want, &fs);
        st->record_requests += fs.requests;
        io_fetch_add_stats(f->want, st, 0);
    }
    if (f->dl) io_fetch_add_stats(f->dl, st, 0);
    pthread_mutex_unlock(&f->mu);
}

void io_fill_retire(io_fill *f)
{
    if (f->running) {
        pthread_mutex_lock(&f->mu);
        __atomic_store_n(&f->cancel, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
        f->running = 0;
    }
    retire_fetch(f, &f->want, NULL);
    retire_fetch(f, &f->dl, NULL);
    for (size_t s = 0; f->sh && s < f->nshards; s++) {
        if (f->sh[s].fd >= 0) baton_sys.close(f->sh[s].fd);
        f->sh[s].fd = -1;
    }
    baton_buf_free(&f->buf);
}

void io_fill_close(io_fill *f)
{
    if (!f) return;
    io_fill_retire(f);
    for (size_t s = 0; f->sh && s < f->nshards; s++) free(f->sh[s].st);
    free(f->sh);
    free(f->dir);
    free(f->uri);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
