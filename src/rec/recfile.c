/* recfile.c — baton_rec_file: read every record of one local shard file, fast.
 *
 * Owns a file descriptor and a baton_rec_reader. read() goes straight into the reader's buffer
 * (reserve/commit, no extra copy) in chunks of REC_FILE_CHUNK bytes, a size that keeps a chunk in
 * the CPU's cache between the kernel's copy, the CRC32C pass and the record parse. The optional
 * whole-file checksum is computed in the same pass.
 *
 * Why read() and not a mapping (a mapping measured faster for a page-cache-warm scan): a mapped
 * file that another process truncates kills the reader with SIGBUS at the first touch of a page
 * past the new end; read() returns fewer bytes instead, which the reader reports as a truncated
 * record naming the file and offset (as io's shardfile.c reads with pread for the same reason).
 *
 * Contract: _open fails (NULL + err) when the file cannot be opened, or, when fmt is
 * BATON_FMT_UNKNOWN, when its first bytes are neither format (legacy RecordIO magic, empty file,
 * …). _next returns BATON_OK, BATON_END or an error naming the file and byte offset; errors are
 * sticky. I/O goes through baton_sys so tests can inject failures. */
#include "rec_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef REC_FILE_CHUNK
#define REC_FILE_CHUNK ((size_t)1 << 20)
#endif

struct baton_rec_file {
    int fd;
    int eof;
    int err_code;
    baton_err sticky;
    char *path;
    baton_rec_reader *r;
};

/* One read() into the reader; at end of file, finish the reader. */
static int fill(baton_rec_file *f, baton_err *err)
{
    uint8_t *p;
    size_t cap;
    int rc = baton_rec_reader_reserve(f->r, REC_FILE_CHUNK, &p, &cap, &f->sticky);
    if (rc) {
        f->err_code = rc;
        if (err) *err = f->sticky;
        return rc;
    }
    if (cap > REC_FILE_CHUNK) cap = REC_FILE_CHUNK;
    for (;;) {
        ssize_t got = baton_sys.read(f->fd, p, cap);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            f->err_code =
                baton_err_set(&f->sticky, BATON_ERR_IO, "%s: offset %llu: read failed: %s", f->path,
                              (unsigned long long)baton_rec_reader_fed(f->r), strerror(e));
            if (err) *err = f->sticky;
            return f->err_code;
        }
        if (got == 0) {
            f->eof = 1;
            baton_rec_reader_finish(f->r);
        } else {
            baton_rec_reader_commit(f->r, (size_t)got);
        }
        return BATON_OK;
    }
}

baton_rec_file *baton_rec_file_open(const char *path, baton_rec_format fmt, int checksum,
                                    baton_err *err)
{
    baton_rec_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    f->fd = baton_open_regular(path, err);
    if (f->fd == -2) {
        free(f->path);
        free(f);
        return NULL;
    }
    if (f->fd < 0) {
        int e = errno;
        baton_err_set(err, e == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO, "%s: cannot open: %s",
                      path, strerror(e));
        free(f->path);
        free(f);
        return NULL;
    }
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    f->r = baton_rec_reader_new(fmt, path, 0);
    if (!f->r) {
        baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", path);
        baton_rec_file_close(f);
        return NULL;
    }
    if (checksum) baton_rec_reader_enable_checksum(f->r);
    int rc;
    /* a finished reader never answers NEED_MORE, so this ends at EOF at the latest */
    while ((rc = rec_reader_detect(f->r, err)) == BATON_NEED_MORE)
        if ((rc = fill(f, err)) != BATON_OK) break;
    if (rc != BATON_OK) {
        baton_rec_file_close(f);
        return NULL;
    }
    return f;
}

int baton_rec_file_next(baton_rec_file *f, baton_rec *rec, baton_err *err)
{
    if (f->err_code) {
        if (err) *err = f->sticky;
        return f->err_code;
    }
    for (;;) {
        int rc = baton_rec_reader_next(f->r, rec, err);
        if (rc != BATON_NEED_MORE) return rc;
        if (f->eof) /* cannot happen: a finished reader never asks for more */
            return baton_err_set(err, BATON_ERR_IO, "%s: reader wants bytes after the end",
                                 f->path);
        rc = fill(f, err);
        if (rc) return rc;
    }
}

baton_rec_format baton_rec_file_format(const baton_rec_file *f)
{
    return baton_rec_reader_format(f->r);
}

uint32_t baton_rec_file_checksum(const baton_rec_file *f)
{
    return baton_rec_reader_checksum(f->r);
}
uint64_t baton_rec_file_bytes(const baton_rec_file *f) { return baton_rec_reader_fed(f->r); }

void baton_rec_file_close(baton_rec_file *f)
{
    if (!f) return;
    if (f->fd >= 0) baton_sys.close(f->fd);
    baton_rec_reader_free(f->r);
    free(f->path);
    free(f);
}
