/* shard.c — baton_shard_writer: writes one shard file and its .idx crash-safely.
 *
 * Owns two temp files, "<final>.tmp.<pid>", and a write buffer for each (records are framed into
 * a 1 MiB buffer, flushed with one write() when full). Keeps the running CRC32C and byte count of
 * both files, one index line "key\toffset\n" per record (offset = the record's first byte), and
 * when asked (_set_pieces) the CRC32C of every fixed-size piece of the shard file.
 * _commit flushes, fsyncs both files, renames them to their final names and fsyncs the
 * directories; until then no file exists under a final name, and on any failure (commit or abort)
 * the temps are removed and whatever this commit already renamed is removed again.
 *
 * Contract: errors are sticky (after a failed _add, later _add and _commit fail too, with the
 * first message); disk full is BATON_ERR_NOSPACE. key BATON_SHARD_KEY_AUTO means "the running
 * record number"; other keys must be below 2^63 (the .idx limit). idx_path may be NULL (no index).
 * All file operations go through baton_sys. */
#include "rec_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHARD_FLUSH ((size_t)1 << 20)
#define IDX_FLUSH ((size_t)64 << 10)

typedef struct out_file {
    char *final, *tmp;
    int fd;
    baton_buf buf;
    uint64_t bytes;
    uint32_t crc;
} out_file;

struct baton_shard_writer {
    baton_rec_format fmt;
    out_file rec, idx;
    uint64_t piece_bytes;   /* 0: no piece checksums */
    uint32_t *pieces;       /* npieces so far; the last one open while its bytes come */
    size_t npieces, cap_pieces;
    int has_idx;
    uint64_t records;
    int err_code;
    baton_err sticky;
};

static int out_open(out_file *o, const char *path, baton_err *err)
{
    o->fd = -1;
    size_t n = strlen(path) + 32;
    o->final = strdup(path);
    o->tmp = malloc(n);
    if (!o->final || !o->tmp) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
    snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    o->fd = baton_sys.open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0) return baton_err_errno(err, errno, "cannot create", o->tmp);
    return BATON_OK;
}

static int out_flush(out_file *o, baton_err *err)
{
    if (o->buf.len == 0) return BATON_OK;
    int rc = baton_write_all(o->fd, o->buf.data, o->buf.len, o->tmp, err);
    o->buf.len = 0;
    return rc;
}

/* Account for bytes just appended to o->buf at old_len; flush when the buffer is full. */
static int out_added(out_file *o, size_t old_len, size_t limit, baton_err *err)
{
    size_t added = o->buf.len - old_len;
    o->crc = baton_crc32c(o->crc, o->buf.data + old_len, added);
    o->bytes += added;
    return o->buf.len >= limit ? out_flush(o, err) : BATON_OK;
}

static void out_discard(out_file *o)
{
    if (o->fd >= 0) baton_sys.close(o->fd);
    o->fd = -1;
    if (o->tmp) baton_sys.unlink(o->tmp);
    free(o->final);
    free(o->tmp);
    baton_buf_free(&o->buf);
    o->final = o->tmp = NULL;
}

void baton_shard_writer_abort(baton_shard_writer *w)
{
    if (!w) return;
    out_discard(&w->rec);
    if (w->has_idx) out_discard(&w->idx);
    free(w->pieces);
    free(w);
}

int baton_shard_writer_set_pieces(baton_shard_writer *w, uint64_t piece_bytes, baton_err *err)
{
    if (w->records || w->rec.bytes)
        return baton_err_set(err, BATON_ERR_ARG, "%s: piece size set after the first record", w->rec.final);
    if (piece_bytes < BATON_PIECE_BYTES_MIN || piece_bytes > BATON_PIECE_BYTES_MAX)
        return baton_err_set(err, BATON_ERR_ARG, "%s: piece size %llu is outside %u..%u bytes", w->rec.final,
                             (unsigned long long)piece_bytes, BATON_PIECE_BYTES_MIN, BATON_PIECE_BYTES_MAX);
    w->piece_bytes = piece_bytes;
    return BATON_OK;
}

const uint32_t *baton_shard_writer_pieces(const baton_shard_writer *w, size_t *n)
{
    *n = w->npieces;
    return w->pieces;
}

/* The shard file's bytes [at, at+n) were just framed: summed into their pieces. */
static int pieces_add(baton_shard_writer *w, uint64_t at, const uint8_t *p, size_t n)
{
    while (n > 0) {
        uint64_t k = at / w->piece_bytes, room = (k + 1) * w->piece_bytes - at;
        size_t m = room < n ? (size_t)room : n;
        if (k == w->npieces) {   /* a new piece opens */
            if (w->npieces == w->cap_pieces) {
                size_t cap = w->cap_pieces ? w->cap_pieces * 2 : 64;
                uint32_t *q = realloc(w->pieces, cap * sizeof *q);
                if (!q) return BATON_ERR_NOMEM;
                w->pieces = q;
                w->cap_pieces = cap;
            }
            w->pieces[w->npieces++] = 0;
        }
        w->pieces[k] = baton_crc32c(w->pieces[k], p, m);
        at += m;
        p += m;
        n -= m;
    }
    return BATON_OK;
}

baton_shard_writer *baton_shard_writer_open(const char *rec_path, const char *idx_path,
                                            baton_rec_format fmt, baton_err *err)
{
    if (fmt != BATON_FMT_RECORDIO && fmt != BATON_FMT_TFRECORD) {
        baton_err_set(err, BATON_ERR_ARG, "%s: record format unknown", rec_path);
        return NULL;
    }
    baton_shard_writer *w = calloc(1, sizeof *w);
    if (!w) {
        baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", rec_path);
        return NULL;
    }
    w->fmt = fmt;
    w->rec.fd = w->idx.fd = -1;
    w->has_idx = idx_path != NULL;
    if (out_open(&w->rec, rec_path, err) != BATON_OK ||
        (w->has_idx && out_open(&w->idx, idx_path, err) != BATON_OK)) {
        baton_shard_writer_abort(w);
        return NULL;
    }
    return w;
}

static int fail(baton_shard_writer *w, int code, baton_err *err)
{
    w->err_code = code;
    if (err) w->sticky = *err;
    else baton_err_set(&w->sticky, code, "%s: write failed", w->rec.final);
    w->sticky.code = code;
    return code;
}

int baton_shard_writer_add(baton_shard_writer *w, uint64_t key, const void *payload, size_t n,
                           baton_err *err)
{
    if (w->err_code) {
        if (err) *err = w->sticky;
        return w->err_code;
    }
    if (key == BATON_SHARD_KEY_AUTO) key = w->records;
    if (key >= ((uint64_t)1 << 63))
        return baton_err_set(err, BATON_ERR_ARG, "%s: record key %llu is not below 2^63",
                             w->rec.final, (unsigned long long)key);
    uint64_t offset = w->rec.bytes;
    size_t old = w->rec.buf.len;
    int rc = baton_rec_frame(w->fmt, &w->rec.buf, payload, n, err);
    if (rc) return rc;   /* nothing was appended: the writer is still usable */
    if (w->piece_bytes && pieces_add(w, offset, w->rec.buf.data + old, w->rec.buf.len - old) != BATON_OK)
        return fail(w, baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", w->rec.final), err);
    if ((rc = out_added(&w->rec, old, SHARD_FLUSH, err))) return fail(w, rc, err);
    if (w->has_idx) {
        old = w->idx.buf.len;
        if (rec_idx_append(&w->idx.buf, key, offset) != BATON_OK)
            return fail(w, baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", w->idx.final),
                        err);
        if ((rc = out_added(&w->idx, old, IDX_FLUSH, err))) return fail(w, rc, err);
    }
    w->records++;
    return BATON_OK;
}

uint64_t baton_shard_writer_bytes(const baton_shard_writer *w) { return w->rec.bytes; }
uint64_t baton_shard_writer_records(const baton_shard_writer *w) { return w->records; }
uint32_t baton_shard_writer_crc32c(const baton_shard_writer *w) { return w->rec.crc; }
uint64_t baton_shard_writer_idx_bytes(const baton_shard_writer *w) { return w->idx.bytes; }
uint32_t baton_shard_writer_idx_crc32c(const baton_shard_writer *w) { return w->idx.crc; }

static int out_finish(out_file *o, baton_err *err)
{
    int rc = out_flush(o, err);
    if (rc) return rc;
    if (baton_sys.fsync(o->fd) != 0) return baton_err_errno(err, errno, "fsync failed", o->tmp);
    int fd = o->fd;
    o->fd = -1;
    if (baton_sys.close(fd) != 0) return baton_err_errno(err, errno, "close failed", o->tmp);
    return BATON_OK;
}

int baton_shard_writer_commit(baton_shard_writer *w, baton_err *err)
{
    int rc = w->err_code;
    if (rc && err) *err = w->sticky;
    if (!rc) rc = out_finish(&w->rec, err);
    if (!rc && w->has_idx) rc = out_finish(&w->idx, err);
    /* rename the index first: a shard under its final name always has its index */
    int idx_renamed = 0, rec_renamed = 0;
    if (!rc && w->has_idx) {
        if (baton_sys.rename(w->idx.tmp, w->idx.final) != 0)
            rc = baton_err_errno(err, errno, "rename failed", w->idx.final);
        else
            idx_renamed = 1;
    }
    if (!rc) {
        if (baton_sys.rename(w->rec.tmp, w->rec.final) != 0)
            rc = baton_err_errno(err, errno, "rename failed", w->rec.final);
        else
            rec_renamed = 1;
    }
    if (!rc) {
        char dir[4096], idir[4096];
        baton_path_dirname(w->rec.final, dir, sizeof dir);
        rc = baton_fsync_dir(dir, err);
        if (!rc && w->has_idx) {
            baton_path_dirname(w->idx.final, idir, sizeof idir);
            if (strcmp(dir, idir) != 0) rc = baton_fsync_dir(idir, err);
        }
    }
    /* a renamed temp no longer exists; a failed commit takes back what it published */
    if (rec_renamed) {
        if (rc) baton_sys.unlink(w->rec.final);
        free(w->rec.tmp);
        w->rec.tmp = NULL;
    }
    if (idx_renamed) {
        if (rc) baton_sys.unlink(w->idx.final);
        free(w->idx.tmp);
        w->idx.tmp = NULL;
    }
    baton_shard_writer_abort(w);
    return rc;
}
