/* loader.c — records of each epoch, in order, through one of four input modes.
 *
 *   file   a verified copy in local_dir, filled while epoch 0 reads it (fill.c, loader_fill.c: the
 *          pieces of the records about to be read asked for first, a download of the rest behind
 *          them), then read there; with download_first (or a dataset without pieces) every shard is
 *          downloaded and checked before the open returns.
 *   mount  the dataset folder is read in place (a local disk or a mounted NFS/EFS/FSx path).
 *   pipe   shards are streamed from the store; nothing is written locally; memory is bounded by
 *          the fetcher's buffer plus one shuffle block.
 *   cache  epoch 0 is streamed as in pipe mode while every whole shard that passes by is written
 *          to local_dir and verified; later epochs read the local copy (shards that did not come
 *          whole through the stream — after a restart mid-shard, or for other workers' blocks —
 *          are downloaded first). A full disk turns caching off with a warning (pipe from then on).
 *   A folder of file mode's is shared: by a group of loaders that split the downloads (share.c), or
 *   else by whichever processes open it, which take turns downloading (download_turn).
 *
 * Orders: file/mount/cache-after-epoch-0 use the indexed order, pipe and cache's epoch 0 the
 * streamed order (order.c; its reading is stream.c's). Local reads — mount mode's folder, file and
 * cache mode's copy alike — go through shardfile.c (pread into checked pieces of our own memory, so
 * a file cut short or replaced under the reader is an error naming it, never SIGBUS) and use the
 * shard's index. Streamed reads go through one baton_fetch that is given the ranges of the
 * current and the next epoch ahead of time, so the next epoch starts without a stall, but never
 * a range past the end the caller set (baton_loader_set_end); the fetcher bounds what is buffered.
 *
 * Contract: baton_loader_seek({seed, epoch, position}) followed by next() yields exactly the
 * records that an uninterrupted reader would have yielded from that position on, whatever end
 * is set; the store's bytes are counted (stats, per epoch) as they arrive. */
#include "loader_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_TARGET_BYTES (32u << 20)
#define PIECE_CACHE_BYTES (64u << 20)   /* local reading: checked pieces kept in memory */


static int perm_ready(baton_loader *l, baton_err *err);

void baton_loader_opts_default(baton_loader_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = BATON_MODE_PIPE;
    baton_store_opts_default(&o->store);
    baton_fetch_opts_default(&o->fetch);
    o->world = 1;
    o->download_threads = 4;
    o->share_wait_s = 300;
}

/* ---------------------------------------------------------------- opening */

/* Check one shard's index (bytes in b) against the manifest, keep its offsets, and (file and
 * cache modes) write it beside the local copy — without fsync, as the shards' copies are
 * (localcopy.c): the loader always takes indexes from the store, and whoever reads the folder
 * later checks the copy against dataset.json's size and CRC32C here; in cache mode the first
 * shard's index is on the way to the first batch, and two fsyncs cost milliseconds each. */
static int take_index(baton_loader *l, size_t s, const baton_buf *b, int keep, baton_err *err)
{
    const baton_shard_info *si = &l->m.shards[s];
    uint32_t crc = baton_crc32c(0, b->data, b->len);
    if (b->len != si->index_bytes || crc != si->index_crc32c)
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: %zu bytes CRC32C %08x, dataset.json says %llu bytes %08x",
                             si->index, b->len, crc, (unsigned long long)si->index_bytes, si->index_crc32c);
    baton_idx_entry *e = NULL;
    size_t n = 0;
    int rc = baton_idx_parse(si->index, (const char *)b->data, b->len, &e, &n, err);
    if (rc == BATON_OK && keep && (l->o.mode == BATON_MODE_FILE || l->o.mode == BATON_MODE_CACHE)) {
        char path[4096];  /* keep the index beside the local copy: it becomes a dataset folder */
        rc = baton_path_join(path, sizeof path, l->local_dir, si->index, err);
        if (rc == BATON_OK) rc = baton_file_write_replace(path, b->data, b->len, err);
    }
    if (rc) {
        free(e);
        return rc;
    }
    if (n != si->records) rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: %zu entries for %llu records",
                                             si->index, n, (unsigned long long)si->records);
    uint64_t *o = rc ? NULL : malloc((n ? n : 1) * sizeof *o);
    if (!rc && !o) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (size_t i = 0; rc == BATON_OK && i < n; i++) {
        o[i] = e[i].offset;
        if ((i == 0 && o[0] != 0) || (i > 0 && o[i] <= o[i - 1]) || o[i] >= si->bytes)
            rc = baton_err_set(err, BATON_ERR_CORRUPT,
                               "%s: line %zu: offset %llu is out of order or past the end (%llu bytes)",
                               si->index, i + 1, (unsigned long long)o[i], (unsigned long long)si->bytes);
    }
    free(e);
    if (rc) {
        free(o);
        return rc;
    }
    l->off[s] = o;
    return BATON_OK;
}

/* Every shard's index, fetched concurrently (many shards must not mean many round trips before
 * the first batch): at least INDEX_INFLIGHT requests in flight. The objects are small, so the
 * store's latency sets the time: 204 of them from a RADOS Gateway on BlueStore took 1.16 s at 8 in
 * flight, 0.35-0.39 s at 32 and 0.24-0.33 s at 64 (bench/RESULTS.md §16 part 5). Pipe and cache
 * mode do not wait for them at the open: they are asked for in the order epoch 0 streams the shards
 * and taken as the plan reaches each shard (io_loader_index), so the first block waits for its own
 * shards' indexes only — asked for alone (INDEX_FIRST), the rest once the first arrived, so that
 * they do not queue behind 63 others at the store — the other modes take them all before the open
 * returns. */
#define INDEX_INFLIGHT 64
#define INDEX_FIRST 2

/* Ask for the indexes of l->iorder[l->iasked, upto); all asked: no more input. */
static int index_ask(baton_loader *l, size_t upto, baton_err *err)
{
    int rc = BATON_OK;
    for (; rc == BATON_OK && l->iasked < upto; l->iasked++) {
        const baton_shard_info *si = &l->m.shards[l->iorder[l->iasked]];
        rc = io_fetch_add(l->ifetch, si->index, 0, si->index_bytes, l->iorder[l->iasked], err);
    }
    if (rc == BATON_OK && l->iasked == l->m.nshards) {
        io_fetch_close_input(l->ifetch);
        free(l->iorder);
        l->iorder = NULL;
    }
    return rc;
}

static int index_start(baton_loader *l, baton_err *err)
{
    size_t n = l->m.nshards;
    for (size_t s = 0; s < n; s++)
        if (!l->m.shards[s].index)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: shard %s has no .idx listed in dataset.json",
                                 l->uri, l->m.shards[s].file);
    if (n == 0) return BATON_OK;
    int streamed = l->o.mode == BATON_MODE_PIPE || l->o.mode == BATON_MODE_CACHE;
    baton_fetch_opts fo = l->o.fetch;
    if (!streamed && l->m.indexes) {   /* all of them at once: one file, a few requests */
        fo.chunk_bytes = 1u << 20;
        l->iall = 1;
        baton_fetch *f = io_fetch_new(l->store, &fo, err);
        if (!f) return err->code;
        io_loader_set_fetch(l, &l->ifetch, f, 1);
        int rc = io_fetch_add(l->ifetch, l->m.indexes, 0, l->m.indexes_bytes, 0, err);
        io_fetch_close_input(l->ifetch);
        return rc;
    }
    if (!(l->iorder = malloc(n * sizeof *l->iorder))) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    io_order_shards(l->o.seed, 0, n, streamed && !l->o.no_shuffle, l->iorder);
    if (fo.inflight < INDEX_INFLIGHT) fo.inflight = INDEX_INFLIGHT;
    fo.chunk_bytes = 1u << 20;   /* a slot per request in flight (max_buffered / chunk_bytes slots) */
    baton_fetch *f = io_fetch_new(l->store, &fo, err);
    if (!f) return err->code;
    io_loader_set_fetch(l, &l->ifetch, f, 1);
    return index_ask(l, streamed && n > INDEX_FIRST ? INDEX_FIRST : n, err);
}

/* The index fetch's bytes counted (they belong to the open, wherever they arrive) and it freed. */
static void index_done(baton_loader *l)
{
    free(l->iorder);
    l->iorder = NULL;
    if (!l->ifetch) return;
    io_loader_set_fetch(l, &l->ifetch, NULL, 1);
    baton_buf_free(&l->ibuf);
}

/* The indexes in one file: each shard's part taken as soon as all of it is in l->ibuf (l->ioff:
 * where the next part starts); once all are, the file kept beside a local copy as it came (one
 * write, not one per shard: write_local_manifest writes the shards' own .idx files later). */
static int index_take_parts(baton_loader *l, baton_err *err)
{
    int rc = BATON_OK, before = l->inext < l->m.nshards;
    while (rc == BATON_OK && l->inext < l->m.nshards && l->ibuf.len - l->ioff >= l->m.shards[l->inext].index_bytes) {
        baton_buf part = {l->ibuf.data + l->ioff, (size_t)l->m.shards[l->inext].index_bytes, 0};
        rc = take_index(l, l->inext, &part, 0, err);
        if (rc) return baton_err_prefix(err, "%s%s: the part of %s", baton_store_uri(l->store), l->m.indexes,
                                        l->m.shards[l->inext].index);
        l->ioff += part.len;
        l->inext++;
    }
    if (before && l->inext == l->m.nshards && l->local_dir && (l->o.mode == BATON_MODE_FILE || l->o.mode == BATON_MODE_CACHE)) {
        char path[4096];
        rc = baton_path_join(path, sizeof path, l->local_dir, l->m.indexes, err);
        if (rc == BATON_OK) rc = baton_file_write_replace(path, l->ibuf.data, l->ibuf.len, err);
    }
    return rc;
}

/* Take the indexes as they arrive (every one when want is SIZE_MAX, else until shard want has its);
 * without `wait`, only those already in. */
static int index_take_until(baton_loader *l, size_t want, int wait, baton_err *err)
{
    int rc = BATON_OK;
    baton_fetch_piece p;
    while (l->ifetch && (want == SIZE_MAX || !l->off[want])) {
        rc = wait ? io_fetch_next(l->ifetch, &p, err) : io_fetch_next_nowait(l->ifetch, &p, err);
        if (rc == BATON_NEED_MORE) return BATON_OK;
        if (rc != BATON_OK) break;
        if (baton_buf_append(&l->ibuf, p.data, p.len)) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        int last = p.last;
        size_t s = (size_t)p.tag;
        if (rc == BATON_OK && l->iall) {
            rc = io_verify_size(baton_store_uri(l->store), l->m.indexes, l->m.indexes_bytes, p.object_size, p.offset, err);
            io_fetch_release(l->ifetch, &p);
            if (rc == BATON_OK) rc = index_take_parts(l, err);
            if (rc) break;
            continue;
        }
        if (rc == BATON_OK)
            rc = io_verify_size(baton_store_uri(l->store), l->m.shards[s].index, l->m.shards[s].index_bytes,
                                p.object_size, p.offset, err);
        io_fetch_release(l->ifetch, &p);
        if (rc == BATON_OK && last) {
            rc = take_index(l, s, &l->ibuf, 1, err);
            l->ibuf.len = 0;
            if (rc == BATON_OK && l->iorder) rc = index_ask(l, l->m.nshards, err);   /* the first came: the rest */
        }
        if (rc) break;
    }
    if (rc == BATON_END && l->iall && l->inext < l->m.nshards)
        rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s%s: ends before the index of %s", baton_store_uri(l->store),
                           l->m.indexes, l->m.shards[l->inext].index);
    if (rc == BATON_END) {
        index_done(l);
        rc = want == SIZE_MAX || l->off[want] ? BATON_OK
                                                : baton_err_set(err, BATON_ERR_IO, "%s: the index of shard %s did not arrive",
                                                                l->uri, l->m.shards[want].file);
    }
    return rc;
}

int io_loader_index(baton_loader *l, uint32_t s, baton_err *err)
{
    if (s < l->m.nshards && l->off[s]) return BATON_OK;
    if (!l->ifetch)
        return baton_err_set(err, BATON_ERR_IO, "%s: the index of shard %u is not loaded", l->uri, (unsigned)s);
    return index_take_until(l, s, 1, err);
}

int io_loader_index_ready(baton_loader *l, uint32_t s, int *ready, baton_err *err)
{
    int rc = l->off[s] || !l->ifetch ? io_loader_index(l, s, err) : index_take_until(l, s, 0, err);
    *ready = rc == BATON_OK && l->off[s];
    return rc;
}

static int index_take_all(baton_loader *l, baton_err *err) { return index_take_until(l, SIZE_MAX, 1, err); }

int io_open_shard(const char *path, const baton_shard_info *si, int *out, baton_err *err)
{
    int fd = baton_open_regular(path, err);
    if (fd == -2) return err->code;
    if (fd < 0)
        return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO, "%s: cannot open shard: %s",
                             path, strerror(errno));
    struct stat st;
    int rc = BATON_OK;
    if (baton_sys.fstat(fd, &st) != 0)
        rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot stat shard: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: not a regular file", path);
    else if ((uint64_t)st.st_size != si->bytes)
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: %lld bytes, dataset.json says %llu", path,
                           (long long)st.st_size, (unsigned long long)si->bytes);
    if (rc) baton_sys.close(fd);
    else *out = fd;
    return rc;
}

/* File and cache mode: the local copy, every shard in place and checked, read from now on through
 * the pread reader (shardfile.c) — opened and size-checked now unless `lazy` (a shared cache whose
 * shards arrive one by one: io_share_take marks each, its first read opens it). */
int io_loader_open_local(baton_loader *l, int lazy, baton_err *err)
{
    if (l->sf) return BATON_OK;
    if (!lazy) memset(l->local_ok, 1, l->m.nshards);
    int rc = (lazy ? io_shardfile_new : io_shardfile_open)(&l->sf, l->local_uri, l->local_dir, &l->m, PIECE_CACHE_BYTES,
                                                           err);
    return rc ? rc : io_shardfile_check_once(l->sf, err);
}

int io_loader_write_local(baton_loader *l, baton_err *err)
{
    if (l->iall) {   /* the indexes came in one file (index_take_parts kept it): each shard's own .idx too */
        char path[4096];
        uint8_t *b = NULL;
        size_t n = 0, at = 0;
        int rc = baton_indexes_read(l->local_dir, &l->m, &b, &n, err);
        for (size_t s = 0; rc == BATON_OK && s < l->m.nshards; at += l->m.shards[s++].index_bytes) {
            rc = baton_path_join(path, sizeof path, l->local_dir, l->m.shards[s].index, err);
            if (rc == BATON_OK) rc = baton_file_write_replace(path, b + at, (size_t)l->m.shards[s].index_bytes, err);
        }
        free(b);
        if (rc) return rc;
    }
    return baton_manifest_save(l->local_dir, &l->m, err);
}

/* File mode's download into a folder that no group splits: the loaders of other processes with the
 * same folder (the Python module's default folder is one per URI) take turns, so each shard is
 * fetched once and no two writers share a ".part" (one's rename took the other's file away). The
 * lock is released when its holder closes it or dies; a waiter then finds the shards in place and
 * verified, or downloads what is missing. */
static int download_turn(const char *dir, int *fd, baton_err *err)
{
    char path[4200], what[4200];
    if (baton_path_join(path, sizeof path, dir, ".download.lock", err)) return err->code;
    snprintf(what, sizeof what, "the local copy in %s", dir);
    for (int said = 0;; said = 1) {
        baton_err e = {0};
        int rc = baton_lock_acquire(path, what, fd, &e);
        if (rc != BATON_ERR_BUSY) {
            if (rc) *err = e;
            return rc;
        }
        if (!said) baton_log(BATON_LOG_INFO, "waiting for another process's download: %s", e.msg);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* File mode without a group, once it has the folder's turn. The copy is filled while epoch 0 reads
 * it (fill.c: the records' own pieces asked for first, everything downloaded behind them, each byte
 * fetched once; what an earlier holder left is used piece by piece, each piece checked) and the
 * turn kept until the copy is whole or the loader closes; or — a dataset packed before pieces, or
 * download_first asked — every shard is downloaded and checked before the open returns
 * (SageMaker's File mode). */
static int file_open(baton_loader *l, baton_err *err)
{
    int pieced = l->m.nshards > 0, lock = -1;
    for (size_t s = 0; s < l->m.nshards; s++) pieced &= l->m.shards[s].piece_bytes != 0;
    int rc = download_turn(l->local_dir, &lock, err);
    if (rc) return rc;
    if (pieced && !l->o.download_first) {
        rc = io_fill_open(&l->fill, l->store, &l->m, l->local_dir, l->local_uri, &l->sfetch, err);
        if (rc) baton_lock_release(lock);
        else l->dl_lock = lock;
        return rc;
    }
    rc = io_download(l->store, &l->m, l->local_dir, NULL, &l->sfetch, &l->st, err);
    if (!rc) rc = io_loader_write_local(l, err);
    baton_lock_release(lock);
    return rc ? rc : io_loader_open_local(l, 0, err);
}


baton_io_mode baton_io_mode_for_uri(const char *uri)
{
    return !strstr(uri, "://") || !strncmp(uri, "file://", 7) ? BATON_MODE_MOUNT : BATON_MODE_PIPE;
}

int baton_loader_open_dataset(const baton_loader_opts *o, int mode_set, baton_loader **out, baton_err *err)
{
    *out = NULL;
    if (!o->uri) return baton_err_set(err, BATON_ERR_ARG, "no data URI");
    baton_loader_opts lo = *o;
    if (!mode_set) lo.mode = baton_io_mode_for_uri(o->uri);
    if (lo.mode == BATON_MODE_FILE || lo.mode == BATON_MODE_CACHE) {
        if (!lo.local_dir)
            return baton_err_set(err, BATON_ERR_ARG, "%s mode needs a local folder", baton_io_mode_name(lo.mode));
        int rc = baton_mkdir_p(lo.local_dir, err);
        if (rc) return rc;
    } else {
        lo.local_dir = NULL, lo.share_rank = 0, lo.share_size = 0;
    }
    int rc = baton_loader_open(&lo, out, err);
    if (rc) return baton_err_prefix(err, "%s", o->uri);
    if (baton_loader_epoch_size(*out) == 0) {
        baton_loader_close(*out);
        *out = NULL;
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: no records", o->uri);
    }
    return BATON_OK;
}

baton_io_mode baton_loader_mode(const baton_loader *l) { return l->o.mode; }

int baton_loader_open(const baton_loader_opts *o, baton_loader **out, baton_err *err)
{
    *out = NULL;
    if (!o->uri) return baton_err_set(err, BATON_ERR_ARG, "no data URI");
    if (o->world == 0 || o->rank >= o->world)
        return baton_err_set(err, BATON_ERR_ARG, "rank %u is not below world %u", o->rank, o->world);
    if (o->share_size > 1 && (o->share_rank >= o->share_size || !(o->share_wait_s > 0)))
        return baton_err_set(err, BATON_ERR_ARG, "share_rank %u of %u, share_wait_s %g: not a group", o->share_rank,
                             o->share_size, o->share_wait_s);
    if ((o->mode == BATON_MODE_FILE || o->mode == BATON_MODE_CACHE) && !o->local_dir)
        return baton_err_set(err, BATON_ERR_ARG, "%s mode needs a local folder for its copy",
                             baton_io_mode_name(o->mode));
    double t0 = baton_now();
    baton_loader *l = calloc(1, sizeof *l);
    if (!l) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    l->rest_b = UINT64_MAX;
    l->dl_lock = -1;
    pthread_mutex_init(&l->stats_mu, NULL);
    l->o = *o;
    l->uri = strdup(o->uri);
    l->local_dir = o->local_dir ? strdup(o->local_dir) : NULL;
    if (o->local_dir && (l->local_uri = malloc(strlen(o->local_dir) + 2)))
        sprintf(l->local_uri, "%s%s", o->local_dir,
                *o->local_dir && o->local_dir[strlen(o->local_dir) - 1] == '/' ? "" : "/");
    int rc = (!l->uri || (o->local_dir && (!l->local_dir || !l->local_uri)))
                 ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : 0;
    if (!rc) rc = baton_store_open(o->uri, &o->store, &l->store, err);
    if (!rc && o->mode == BATON_MODE_MOUNT && baton_store_kind_of(l->store) != BATON_STORE_LOCAL)
        rc = baton_err_set(err, BATON_ERR_ARG, "%s: mount mode reads a path (a mounted file system), not a URL",
                           baton_store_uri(l->store));
    baton_buf mj = {0};
    if (!rc) rc = baton_store_get(l->store, BATON_MANIFEST_NAME, BATON_MANIFEST_MAX_BYTES, &mj, err);
    l->st.bytes_fetched += mj.len;
    if (!rc) {
        char name[4200];
        snprintf(name, sizeof name, "%s%s", baton_store_uri(l->store), BATON_MANIFEST_NAME);
        rc = baton_manifest_parse(name, (const char *)mj.data, mj.len, &l->m, err);
    }
    baton_buf_free(&mj);
    if (!rc) {
        io_pieces_warn_old(baton_store_uri(l->store), &l->m);
        l->sfetch = o->fetch;
        rc = io_piece_fetch_opts(&l->m, &l->sfetch, err);
    }
    if (!rc && l->local_dir) rc = baton_mkdir_p(l->local_dir, err);
    if (!rc) {
        size_t n = l->m.nshards;
        l->off = calloc(n ? n : 1, sizeof *l->off);
        l->shard_first = calloc(n + 1, sizeof *l->shard_first);
        l->local_ok = calloc(n ? n : 1, 1);
        if (o->mode == BATON_MODE_CACHE) l->cache_written = calloc(n ? n : 1, 1);
        if (!l->off || !l->shard_first || !l->local_ok || (o->mode == BATON_MODE_CACHE && !l->cache_written))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        for (size_t s = 0; !rc && s < n; s++)
            l->shard_first[s + 1] = l->shard_first[s] + l->m.shards[s].records;
        if (!rc) rc = io_verify_init(&l->verify, n, err);
        if (!rc) rc = index_start(l, err);
        if (!rc && o->mode != BATON_MODE_PIPE && o->mode != BATON_MODE_CACHE) rc = index_take_all(l, err);
        l->total = l->m.samples;
    }
    if (!rc) {
        uint64_t bytes = 0;  /* default block: about BLOCK_TARGET_BYTES of records */
        for (size_t s = 0; s < l->m.nshards; s++) bytes += l->m.shards[s].bytes;
        uint64_t avg = l->total ? bytes / l->total + 1 : 1;
        l->block = o->block ? o->block : BLOCK_TARGET_BYTES / avg;
        if (!o->block) l->block = l->block < 64 ? 64 : l->block > 16384 ? 16384 : l->block;
    }
    if (!rc && o->share_size > 1 && (o->mode == BATON_MODE_FILE || o->mode == BATON_MODE_CACHE))
        rc = io_share_open(l, err);
    if (!rc && o->mode == BATON_MODE_FILE && l->share) {   /* every shard, fetched by its owner */
        rc = io_share_plan(l, err);
        for (size_t s = 0; !rc && s < l->m.nshards; s++) rc = io_share_take(l, (uint32_t)s, err);
        if (!rc) rc = io_loader_write_local(l, err);
        if (!rc) rc = io_loader_open_local(l, 0, err);
    } else if (!rc && o->mode == BATON_MODE_FILE) {
        rc = file_open(l, err);
        if (!rc && l->fill) {   /* the first records' pieces on their way while the caller sets up */
            l->cur = (baton_cursor){o->seed, 0, 0};
            rc = perm_ready(l, err);
            if (!rc) rc = io_loader_fill_launch(l, err);
        }
    }
    if (!rc && o->mode == BATON_MODE_MOUNT)
        rc = io_shardfile_open(&l->sf, baton_store_uri(l->store), baton_store_local_dir(l->store), &l->m,
                               PIECE_CACHE_BYTES, err);
    if (rc) {
        baton_loader_close(l);
        return rc;
    }
    l->cur = (baton_cursor){o->seed, 0, 0};
    l->st.open_fetched = l->st.bytes_fetched;
    l->st.open_s = baton_now() - t0;
    *out = l;
    return BATON_OK;
}

const baton_manifest *baton_loader_manifest(const baton_loader *l) { return &l->m; }

/* The epoch's order is the streamed one (a shared cache reads cache mode's epoch 0 locally, in
 * that order). */
static int order_streamed(const baton_loader *l, uint64_t epoch)
{
    return l->o.mode == BATON_MODE_PIPE || (l->o.mode == BATON_MODE_CACHE && (epoch == 0 || l->cache_off));
}

uint64_t baton_loader_epoch_size(const baton_loader *l)
{
    if (order_streamed(l, l->cur.epoch))
        return io_stream_epoch_size(l->total, l->block, l->o.rank, l->o.world);
    return io_indexed_epoch_size(l->total, l->o.rank, l->o.world);
}

baton_cursor baton_loader_cursor(const baton_loader *l) { return l->cur; }

void io_loader_set_fetch(baton_loader *l, baton_fetch **pf, baton_fetch *by, int open)
{
    io_fetch_replace(pf, by, &l->stats_mu, &l->st, open, NULL);
}

/* From any thread (a Python stats() beside the pipeline's reader): the fetches it reads are
 * replaced under stats_mu, the share's and the fill's counts are under their own locks. The
 * loader's own counters are read as they are (whole words; a count may lag a record). */
void baton_loader_get_stats(const baton_loader *l, baton_loader_stats *st)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&l->stats_mu;
    pthread_mutex_lock(mu);
    *st = l->st;
    if (l->ifetch) io_fetch_add_stats(l->ifetch, st, 1);   /* indexes still arriving: the open's */
    if (l->fetch) io_fetch_add_stats(l->fetch, st, 0);
    pthread_mutex_unlock(mu);
    if (l->share) io_share_stats(l, st);
    if (l->fill) io_fill_stats(l->fill, st);
}

uint64_t baton_loader_epoch_fetched(const baton_loader *l, uint64_t epoch)
{
    return epoch >= l->ep_base && epoch - l->ep_base < l->ep_len ? l->ep_fetched[epoch - l->ep_base] : 0;
}

/* ---------------------------------------------------------------- indexed order */

uint32_t io_loader_shard_of(const baton_loader *l, uint64_t g)
{
    size_t lo = 0, hi = l->m.nshards;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (l->shard_first[mid] <= g) lo = mid;
        else hi = mid;
    }
    return (uint32_t)lo;
}

int io_loader_order(const baton_loader *l, uint64_t epoch, uint64_t *perm, baton_err *err)
{
    if (order_streamed(l, epoch))
        return io_stream_permutation(&l->m, l->o.seed, epoch, l->block, !l->o.no_shuffle, l->o.rank, l->o.world, l->shard_first, perm,
                                     err);
    io_indexed_permutation(l->o.seed, epoch, l->total, !l->o.no_shuffle, perm);
    uint64_t n = io_indexed_epoch_size(l->total, l->o.rank, l->o.world);
    for (uint64_t p = 0; p < n && l->o.world > 1; p++) perm[p] = perm[l->o.rank + p * l->o.world];   /* forward: safe */
    return BATON_OK;
}

/* l->perm: the order of the cursor's epoch. */
static int perm_ready(baton_loader *l, baton_err *err)
{
    if (l->perm_valid && l->perm_epoch == l->cur.epoch) return BATON_OK;
    if (!l->perm && !(l->perm = malloc((l->total ? l->total : 1) * sizeof *l->perm)))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    int rc = io_loader_order(l, l->cur.epoch, l->perm, err);
    if (rc) return rc;
    l->perm_epoch = l->cur.epoch;
    l->perm_valid = 1;
    return BATON_OK;
}


static int indexed_prepare(baton_loader *l, baton_err *err)
{
    int irc = index_take_all(l, err);   /* the indexed order reaches every shard */
    if (irc) return irc;
    if (l->o.mode == BATON_MODE_CACHE && !l->cache_ready && !l->share) {
        io_stream_reset(l);
        baton_fetch_opts fo = l->sfetch;
        uint64_t before = l->st.bytes_fetched;
        int rc = io_download(l->store, &l->m, l->local_dir, l->cache_written, &fo, &l->st, err);
        io_loader_count_fetched(l, l->cur.epoch, l->st.bytes_fetched - before);
        if (rc == BATON_OK) rc = io_loader_write_local(l, err);
        if (rc == BATON_OK) rc = io_loader_open_local(l, 0, err);
        if (rc) return rc;
        l->cache_ready = 1;
    }
    if (l->o.mode == BATON_MODE_CACHE && l->share) {   /* shards taken one by one (io_share_take) */
        int rc = io_loader_open_local(l, 1, err);
        if (rc) return rc;
    }
    int rc = perm_ready(l, err);
    if (rc == BATON_OK && io_loader_filling(l)) rc = io_loader_fill_seek(l, err);
    if (rc) return rc;
    return l->share && l->o.mode == BATON_MODE_CACHE ? io_share_plan(l, err) : BATON_OK;
}




static int indexed_next(baton_loader *l, baton_record *out, baton_err *err)
{
    uint64_t g = l->perm[l->cur.position];
    uint32_t s = io_loader_shard_of(l, g);
    if (l->share && !l->local_ok[s]) {
        int rc = io_share_take(l, s, err);
        if (rc) return rc;
    }
    int rc = io_loader_filling(l) ? io_loader_fill_poll(l, 1, err) : BATON_OK;
    if (rc == BATON_OK && io_loader_filling(l)) rc = io_loader_fill_ahead(l, err);
    if (rc) return rc;
    uint64_t j = g - l->shard_first[s], at = l->off[s][j], end = io_loader_rec_end(l, s, j + 1);
    const uint8_t *bytes = NULL;
    /* read with pread, each piece checked before a record of it is decoded */
    if (io_loader_filling(l)) {   /* bytes in the fill's buffer: the copy can be taken over after the read */
        rc = io_fill_read(l->fill, s, at, end, &bytes, err);
        l->fill_read_to = l->cur.position + 1;
        if (rc == BATON_OK) rc = io_loader_fill_poll(l, 0, err);
    } else {
        rc = io_shardfile_read(l->sf, s, at, end, &bytes, err);
    }
    if (rc) return rc;
    int mount = l->o.mode == BATON_MODE_MOUNT;
    if (mount) {   /* these bytes come from the store */
        l->st.bytes_fetched += end - at;
        io_loader_count_fetched(l, l->cur.epoch, end - at);
    }
    /* a shard without pieces (an older dataset): summed into its CRC32C, compared once the epoch
     * read every record of it (a local copy was checked as it was written; this catches one
     * changed since) */
    if (!l->m.shards[s].piece_bytes)
        rc = io_verify_add(&l->verify, mount ? baton_store_uri(l->store) : l->local_uri, &l->m, s, l->cur.epoch, at,
                           end - at, baton_crc32c(0, bytes, end - at), NULL, err);
    if (rc) return rc;
    baton_rec r;
    rc = baton_rec_read_at(l->m.format, bytes, end - at, at, l->m.shards[s].file, &l->scratch, &r, err);
    if (rc) return rc;
    l->st.bytes_read += end - at;
    out->data = r.data;
    out->len = r.len;
    out->shard = s;
    out->offset = at;
    return BATON_OK;
}

/* ---------------------------------------------------------------- cursor API */

int baton_loader_seek(baton_loader *l, const baton_cursor *c, baton_err *err)
{
    if (c->seed != l->o.seed)
        return baton_err_set(err, BATON_ERR_ARG, "cursor seed %llu does not match the loader's seed %llu",
                             (unsigned long long)c->seed, (unsigned long long)l->o.seed);
    l->cur = *c;
    uint64_t size = baton_loader_epoch_size(l);
    if (l->cur.position > size)
        return baton_err_set(err, BATON_ERR_ARG, "cursor position %llu is past the epoch's %llu records",
                             (unsigned long long)c->position, (unsigned long long)size);
    l->streamed = io_loader_epoch_streamed(l, l->cur.epoch);
    l->positioned = 1;
    io_verify_reset(&l->verify, &l->m);   /* a pass that does not start at its beginning checks only whole shards */
    if (io_loader_past_end(l, l->cur.epoch, l->cur.position)) {
        io_stream_reset(l);   /* nothing more to read: nothing to fetch */
        return BATON_OK;
    }
    if (l->streamed) return io_stream_seek(l, err);
    io_stream_reset(l);
    return indexed_prepare(l, err);
}

int baton_loader_hold_ahead(baton_loader *l, int hold, baton_err *err)
{
    int was = l->hold_ahead;
    l->hold_ahead = hold != 0;
    return was && !hold && l->positioned && l->streamed ? io_stream_release(l, err) : BATON_OK;
}

int baton_loader_set_end(baton_loader *l, const baton_cursor *end, baton_err *err)
{
    if (end->seed != l->o.seed)
        return baton_err_set(err, BATON_ERR_ARG, "end cursor seed %llu does not match the loader's seed %llu",
                             (unsigned long long)end->seed, (unsigned long long)l->o.seed);
    l->end = *end;
    l->has_end = 1;
    /* already reading: plan again from where the reader is (what was fetched ahead is dropped) */
    return l->positioned ? baton_loader_seek(l, &l->cur, err) : BATON_OK;
}

static int loader_advance(baton_loader *l, baton_record *out, int skip, baton_err *err)
{
    if (!l->positioned) {
        int rc = baton_loader_seek(l, &l->cur, err);
        if (rc) return rc;
    }
    uint64_t size = baton_loader_epoch_size(l);
    if (l->cur.position >= size) {
        /* epoch over: position the next one (its ranges may already be streaming); a filled copy
         * whole by now is taken over (no record handed out points into the fill any more) */
        int rc = io_loader_filling(l) ? io_loader_fill_poll(l, 1, err) : BATON_OK;
        if (rc) return rc;
        l->cur.epoch++;
        l->cur.position = 0;
        int streamed = io_loader_epoch_streamed(l, l->cur.epoch);
        if (streamed && l->streamed && l->fetch) rc = io_stream_plan_ahead(l, err);
        else l->positioned = 0;
        l->streamed = streamed;
        return rc ? rc : BATON_END;
    }
    if (io_loader_past_end(l, l->cur.epoch, l->cur.position))
        return baton_err_set(err, BATON_ERR_ARG, "%s: record %llu of epoch %llu is past the end this reader was given "
                             "(epoch %llu, record %llu)", l->uri, (unsigned long long)l->cur.position,
                             (unsigned long long)l->cur.epoch, (unsigned long long)l->end.epoch,
                             (unsigned long long)l->end.position);
    int rc = l->share ? io_share_poll(l, err) : BATON_OK;
    if (rc) return rc;
    if (l->streamed) rc = io_stream_next(l, out, err);   /* a streamed block arrives whole anyway */
    else if (skip) memset(out, 0, sizeof *out);           /* indexed: nothing read at all */
    else rc = indexed_next(l, out, err);
    if (rc) return rc;
    out->position = l->cur.position++;
    return BATON_OK;
}

int baton_loader_next(baton_loader *l, baton_record *out, baton_err *err) { return loader_advance(l, out, 0, err); }

int baton_loader_skip(baton_loader *l, baton_record *out, baton_err *err) { return loader_advance(l, out, 1, err); }

void baton_loader_close(baton_loader *l)
{
    if (!l) return;
    io_share_close(l);
    uint64_t got;
    int done;
    baton_err e;
    if (io_loader_filling(l) && io_fill_poll(l->fill, &got, &done, &e) == BATON_OK && done)
        io_loader_write_local(l, &e);   /* whole: the folder is a dataset */
    io_fill_close(l->fill);   /* else the download stops; what is in place is used piece by piece next time */
    baton_lock_release(l->dl_lock);
    io_stream_reset(l);
    index_done(l);
    io_shardfile_close(l->sf);
    for (size_t s = 0; l->off && s < l->m.nshards; s++) free(l->off[s]);
    free(l->off);
    free(l->shard_first);
    free(l->local_ok);
    free(l->local_uri);
    free(l->perm);
    free(l->cache_written);
    free(l->plan);
    free(l->recs);
    free(l->bperm);
    free(l->slot);
    free(l->need);
    free(l->pperm);
    free(l->ep_fetched);
    io_verify_free(&l->verify);
    baton_bigmem_free(l->arena.data, l->arena.cap);   /* stream.c's block arena */
    baton_buf_free(&l->scratch);
    baton_manifest_free(&l->m);
    baton_store_close(l->store);
    free(l->uri);
    free(l->local_dir);
    pthread_mutex_destroy(&l->stats_mu);
    free(l);
}
