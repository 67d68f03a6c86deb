/* shardfile.c — local shard files read in the indexed order, record by record, in any order: mount
 * mode's dataset folder (a local disk or a mounted NFS/EFS/FSx path) and file and cache mode's
 * local copy (a folder that other processes can clean, truncate or replace under the reader).
 *
 * Owns: one descriptor per shard (opened and size-checked when the reader opens; at most
 * open_budget's kept open at once, the others reopened when needed), a cache of checked pieces (slots
 * of one piece each, placed by the piece's number in the dataset, allocated on first use, at most
 * cache_bytes in all), a scratch buffer for a record that crosses pieces (or of a shard without
 * pieces, or read as it is), and under io_shardfile_check_once a flag per piece checked.
 *
 * Why pread and not a mapping: a mapped file that another process truncates kills the reader with
 * SIGBUS at the first touch of a page past the new end — in any thread, also in the decode
 * pipeline that the record was handed to, where no guard can stand. pread returns fewer bytes
 * instead, which is an error naming the shard. And the bytes that are checked are the bytes
 * returned: a piece is read into memory of our own, checked there against dataset.json, and
 * records are decoded from that copy; a file changed after the check cannot change them.
 *
 * Contract: a record's bytes are returned only after every piece they lie in was read whole and
 * its CRC32C matched dataset.json (io_piece_check names the piece otherwise). By default (mount
 * mode) they are the checked bytes themselves, from the cache. Under io_shardfile_check_once (a
 * local copy, checked whole as it was written) each piece is checked the first time this reader
 * needs it, and a record of a piece checked before but since dropped from the cache is read as it
 * is: a random order over a dataset larger than the cache would otherwise read and check a whole
 * piece (64 KiB by default) for each record — for 3 KiB records, several times slower than the
 * mapping this replaced (bench/RESULTS.md). A shard without
 * pieces (an older dataset) is read as it is, and its caller sums the whole shard. A file that
 * is shorter than dataset.json says when a read reaches past its end is BATON_ERR_TRUNCATED
 * naming the shard and the offset; other read errors are BATON_ERR_IO. */
#include "io_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Descriptors kept open: every shard where the process's limit leaves room — a quarter of its soft
 * RLIMIT_NOFILE, at least MIN_OPEN, at most MAX_OPEN — else the oldest closed as another opens. A
 * reopen costs microseconds on a local disk but a round trip through a FUSE or network file system
 * (s3fs: a random order over 204 shards with 64 kept open reopened one for 69 % of the records). */
#define MIN_OPEN 64
#define MAX_OPEN 4096

static size_t open_budget(size_t nshards)
{
    struct rlimit rl;
    size_t cap = MIN_OPEN;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        cap = rl.rlim_cur == RLIM_INFINITY ? MAX_OPEN : (size_t)(rl.rlim_cur / 4);
    cap = cap < MIN_OPEN ? MIN_OPEN : cap > MAX_OPEN ? MAX_OPEN : cap;
    return nshards && nshards < cap ? nshards : cap;
}

typedef struct slot {
    uint8_t *buf;
    uint32_t shard;
    uint64_t piece;
    int valid;
} slot;

struct io_shardfile {
    char *uri;
    char *dir;
    const baton_manifest *m;
    int *fd;                 /* per shard, -1 when closed */
    uint32_t *ring;          /* shards whose descriptor is open, oldest first */
    size_t nopen, ring_head, max_open;
    uint64_t *first_piece;   /* per shard: dataset-wide number of its first piece */
    slot *slots;
    size_t nslots;
    uint64_t piece_max;
    uint8_t *checked;        /* io_shardfile_check_once: per piece (dataset-wide), checked by this reader */
    baton_buf scratch;
};

static int shard_path(const io_shardfile *f, uint32_t s, char *path, size_t cap, baton_err *err)
{
    return baton_path_join(path, cap, f->dir, f->m->shards[s].file, err);
}

/* Open shard s (closing the oldest open one when max_open are) and check its size. */
static int open_shard(io_shardfile *f, uint32_t s, baton_err *err)
{
    if (f->fd[s] >= 0) return BATON_OK;
    const baton_shard_info *si = &f->m->shards[s];
    char path[4096];
    if (shard_path(f, s, path, sizeof path, err)) return err->code;
    int fd = -1;
    int rc = io_open_shard(path, si, &fd, err);
    if (rc) return rc;
    if (f->nopen == f->max_open) {   /* the ring is full: close its oldest */
        uint32_t old = f->ring[f->ring_head];
        baton_sys.close(f->fd[old]);
        f->fd[old] = -1;
        f->ring[f->ring_head] = s;
        f->ring_head = (f->ring_head + 1) % f->max_open;
    } else {
        f->ring[(f->ring_head + f->nopen++) % f->max_open] = s;
    }
    f->fd[s] = fd;
    return BATON_OK;
}

/* Read exactly n bytes of shard s at offset at into buf. */
static int read_exact(io_shardfile *f, uint32_t s, uint64_t at, uint8_t *buf, size_t n, baton_err *err)
{
    int rc = open_shard(f, s, err);
    if (rc) return rc;
    const baton_shard_info *si = &f->m->shards[s];
    size_t got = 0;
    while (got < n) {
        ssize_t r = baton_sys.pread(f->fd[s], buf + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return baton_err_set(err, BATON_ERR_IO, "%s%s: read failed at offset %llu: %s", f->uri, si->file,
                                 (unsigned long long)(at + got), strerror(errno));
        if (r == 0) {
            struct stat st;
            long long now = baton_sys.fstat(f->fd[s], &st) == 0 ? (long long)st.st_size : -1;
            return baton_err_set(err, BATON_ERR_TRUNCATED,
                                 "%s%s: the file ends at offset %llu (now %lld bytes), dataset.json says %llu: it was "
                                 "cut short while being read", f->uri, si->file, (unsigned long long)(at + got), now,
                                 (unsigned long long)si->bytes);
        }
        got += (size_t)r;
    }
    return BATON_OK;
}

int io_shardfile_new(io_shardfile **out, const char *uri, const char *dir, const baton_manifest *m,
                     size_t cache_bytes, baton_err *err)
{
    *out = NULL;
    io_shardfile *f = calloc(1, sizeof *f);
    size_t n = m->nshards ? m->nshards : 1;
    if (f) {
        f->uri = strdup(uri);
        f->m = m;
        f->dir = strdup(dir);
        if ((f->fd = malloc(n * sizeof *f->fd))) memset(f->fd, 0xff, n * sizeof *f->fd);   /* all -1 */
        f->max_open = open_budget(m->nshards);
        f->ring = malloc(f->max_open * sizeof *f->ring);
        f->first_piece = calloc(n + 1, sizeof *f->first_piece);
    }
    if (!f || !f->uri || !f->dir || !f->fd || !f->ring || !f->first_piece) {
        io_shardfile_close(f);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    for (size_t s = 0; s < m->nshards; s++) {
        f->first_piece[s + 1] = f->first_piece[s] + baton_shard_pieces(&m->shards[s]);
        if (m->shards[s].piece_bytes > f->piece_max) f->piece_max = m->shards[s].piece_bytes;
    }
    if (f->piece_max) {
        f->nslots = cache_bytes / f->piece_max;
        if (f->nslots < 1) f->nslots = 1;
        if (f->nslots > f->first_piece[m->nshards]) f->nslots = (size_t)f->first_piece[m->nshards];
        if (!(f->slots = calloc(f->nslots ? f->nslots : 1, sizeof *f->slots))) {
            io_shardfile_close(f);
            return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        }
    }
    *out = f;
    return BATON_OK;
}

int io_shardfile_open(io_shardfile **out, const char *uri, const char *dir, const baton_manifest *m,
                      size_t cache_bytes, baton_err *err)
{
    int rc = io_shardfile_new(out, uri, dir, m, cache_bytes, err);
    /* every shard there, of its size, before the first record */
    for (size_t s = 0; rc == BATON_OK && s < m->nshards; s++) rc = open_shard(*out, (uint32_t)s, err);
    if (rc) {
        io_shardfile_close(*out);
        *out = NULL;
    }
    return rc;
}

/* Piece k of shard s, read and checked (or found in the cache). */
static int get_piece(io_shardfile *f, uint32_t s, uint64_t k, const uint8_t **p, baton_err *err)
{
    const baton_shard_info *si = &f->m->shards[s];
    slot *sl = &f->slots[(f->first_piece[s] + k) % f->nslots];
    if (sl->valid && sl->shard == s && sl->piece == k) {
        *p = sl->buf;
        return BATON_OK;
    }
    sl->valid = 0;
    if (!sl->buf && !(sl->buf = malloc(f->piece_max))) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    uint64_t lo = k * si->piece_bytes, hi = lo + si->piece_bytes < si->bytes ? lo + si->piece_bytes : si->bytes;
    int rc = read_exact(f, s, lo, sl->buf, (size_t)(hi - lo), err);
    if (rc == BATON_OK)
        rc = io_piece_check(f->uri, si, lo, sl->buf, (size_t)(hi - lo), baton_crc32c(0, sl->buf, (size_t)(hi - lo)),
                            err);
    if (rc) return rc;
    sl->shard = s;
    sl->piece = k;
    sl->valid = 1;
    if (f->checked) f->checked[f->first_piece[s] + k] = 1;
    *p = sl->buf;
    return BATON_OK;
}

int io_shardfile_check_once(io_shardfile *f, baton_err *err)
{
    uint64_t n = f->first_piece[f->m->nshards];
    if (!f->checked && !(f->checked = calloc(n ? n : 1, 1)))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    return BATON_OK;
}

/* Whether pieces k0..k1 of shard s were all checked by this reader (check-once policy). */
static int all_checked(const io_shardfile *f, uint32_t s, uint64_t k0, uint64_t k1)
{
    if (!f->checked) return 0;
    for (uint64_t k = k0; k <= k1; k++)
        if (!f->checked[f->first_piece[s] + k]) return 0;
    return 1;
}

int io_shardfile_read(io_shardfile *f, uint32_t s, uint64_t at, uint64_t end, const uint8_t **p, baton_err *err)
{
    const baton_shard_info *si = &f->m->shards[s];
    if (at > end || end > si->bytes)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s%s: internal: bytes %llu..%llu are outside its %llu", f->uri,
                             si->file, (unsigned long long)at, (unsigned long long)end, (unsigned long long)si->bytes);
    size_t n = (size_t)(end - at);
    if (!si->piece_bytes || !n) {   /* no pieces: as it is */
        f->scratch.len = 0;
        if (baton_buf_reserve(&f->scratch, n ? n : 1)) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        int rc = read_exact(f, s, at, f->scratch.data, n, err);
        *p = f->scratch.data;
        return rc;
    }
    uint64_t P = si->piece_bytes, k0 = at / P, k1 = (end - 1) / P;
    const uint8_t *piece;
    const slot *sl = &f->slots[(f->first_piece[s] + k0) % f->nslots];
    if (!(k0 == k1 && sl->valid && sl->shard == s && sl->piece == k0) && all_checked(f, s, k0, k1)) {
        f->scratch.len = 0;   /* check once: pieces checked before (and not one cached piece), read as they are */
        if (baton_buf_reserve(&f->scratch, n)) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        *p = f->scratch.data;
        return read_exact(f, s, at, f->scratch.data, n, err);
    }
    if (k0 == k1) {   /* inside one piece: straight from the cache */
        int rc = get_piece(f, s, k0, &piece, err);
        if (rc == BATON_OK) *p = piece + (at - k0 * P);
        return rc;
    }
    f->scratch.len = 0;
    if (baton_buf_reserve(&f->scratch, n)) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (uint64_t k = k0; k <= k1; k++) {   /* across pieces: each checked, its part copied */
        int rc = get_piece(f, s, k, &piece, err);
        if (rc) return rc;
        uint64_t lo = k * P > at ? k * P : at, hi = (k + 1) * P < end ? (k + 1) * P : end;
        memcpy(f->scratch.data + (lo - at), piece + (lo - k * P), (size_t)(hi - lo));
    }
    *p = f->scratch.data;
    return BATON_OK;
}

void io_shardfile_close(io_shardfile *f)
{
    if (!f) return;
    for (size_t s = 0; f->fd && s < f->m->nshards; s++)
        if (f->fd[s] >= 0) baton_sys.close(f->fd[s]);
    for (size_t i = 0; f->slots && i < f->nslots; i++) free(f->slots[i].buf);
    free(f->slots);
    free(f->fd);
    free(f->ring);
    free(f->first_piece);
    free(f->checked);
    free(f->dir);
    free(f->uri);
    baton_buf_free(&f->scratch);
    free(f);
}
