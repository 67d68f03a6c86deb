/* localcopy.c — verified local copies of shards: file mode's download and cache mode's copy.
 *
 * Contract: bytes of one shard arrive in order (io_sink_write); they go to "<shard>.part" while a
 * CRC32C runs over them (or the caller's own check of the same bytes gives it: crc_given, cache
 * mode's stream); io_sink_commit checks size and CRC against dataset.json and only then renames
 * the file to its final name; a download also stops at the first piece whose object size, as the
 * store tells it, is not the listed one. A partial or corrupted copy is never used: a copy is
 * trusted only after its size and CRC32C were checked in this process (by io_local_valid when it
 * opens a copy, or by the sink as this process wrote it: io_download's `written`). So no fsync is needed —
 * a copy torn by a crash fails that check and is fetched again — and writing the cache costs the
 * trainer no disk flushes. io_download pulls
 * whole shards through one ordered fetcher (several ranged requests in flight; with fetch options
 * from io_piece_fetch_opts each chunk holds whole pieces, checked as it arrives, so a wrong shard
 * stops at its first wrong piece), downloads a shard again once when its checksum does not match,
 * and fails clearly the second time, naming the piece where the shard has pieces. */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int io_sink_open(io_sink *s, const char *dir, const baton_shard_info *si, baton_err *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->si = si;
    if (baton_path_join(s->final, sizeof s->final, dir, si->file, err)) return err->code;
    if (snprintf(s->part, sizeof s->part, "%s.part", s->final) >= (int)sizeof s->part)
        return baton_err_set(err, BATON_ERR_ARG, "%s: path too long", s->final);
    s->fd = baton_sys.open(s->part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (s->fd < 0) {
        return baton_err_errno(err, errno, "cannot create", s->part);
    }
    return BATON_OK;
}

int io_sink_write(io_sink *s, const void *p, size_t n, baton_err *err)
{
    if (s->written + n > s->si->bytes)
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: more than the %llu bytes dataset.json lists",
                             s->si->file, (unsigned long long)s->si->bytes);
    int rc = baton_write_all(s->fd, p, n, s->part, err);
    if (rc) return rc;
    if (!s->crc_given) s->crc = baton_crc32c(s->crc, p, n);
    s->written += n;
    return BATON_OK;
}

void io_sink_abort(io_sink *s)
{
    if (s->fd >= 0) {
        baton_sys.close(s->fd);
        baton_sys.unlink(s->part);
    }
    s->fd = -1;
}

int io_sink_commit(io_sink *s, baton_err *err)
{
    const baton_shard_info *si = s->si;
    if (s->written != si->bytes || s->crc != si->crc32c) {
        int rc = baton_err_set(err, BATON_ERR_CORRUPT,
                               "%s: copy has %llu bytes CRC32C %08x, dataset.json says %llu bytes %08x",
                               si->file, (unsigned long long)s->written, s->crc,
                               (unsigned long long)si->bytes, si->crc32c);
        io_sink_abort(s);
        return rc;
    }
    int rc = BATON_OK;
    if (baton_sys.close(s->fd) != 0)
        rc = baton_err_set(err, BATON_ERR_IO, "%s: close: %s", s->part, strerror(errno));
    s->fd = -1;
    if (rc == BATON_OK && baton_sys.rename(s->part, s->final) != 0)
        rc = baton_err_set(err, BATON_ERR_IO, "%s: rename: %s", s->final, strerror(errno));
    if (rc) baton_sys.unlink(s->part);
    return rc;
}

int io_local_valid(const char *dir, const baton_shard_info *si)
{
    char path[4096];
    if (baton_path_join(path, sizeof path, dir, si->file, NULL)) return 0;
    int fd = baton_open_regular(path, NULL);
    if (fd < 0) return 0;
    struct stat st;
    if (baton_sys.fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != si->bytes) {
        baton_sys.close(fd);
        return 0;
    }
    static __thread uint8_t buf[1 << 20];
    uint32_t crc = 0;
    ssize_t r;
    while ((r = baton_sys.read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0) crc = baton_crc32c(crc, buf, (size_t)r);
    baton_sys.close(fd);
    return r == 0 && crc == si->crc32c;
}

/* One pass: fetch the listed shards whole, in order, into verified local files. Shards whose
 * checksum did not match are listed in bad[] (their .part removed); other errors abort. */
static int download_pass(baton_store *store, const baton_manifest *m, const char *dir,
                         const baton_fetch_opts *fo, const uint32_t *todo, size_t n, const int *cancel,
                         uint32_t *bad, size_t *nbad, baton_err *why, baton_loader_stats *st, baton_err *err)
{
    uint64_t skip = UINT64_MAX;   /* a shard found wrong: the rest of its pieces pass unused */
    *nbad = 0;
    baton_fetch *f = io_fetch_new(store, fo, err);
    if (!f) return err->code;
    int rc = BATON_OK;
    for (size_t i = 0; i < n && rc == BATON_OK; i++)
        rc = io_fetch_add(f, m->shards[todo[i]].file, 0, m->shards[todo[i]].bytes, todo[i], err);
    io_fetch_close_input(f);
    io_sink sink;
    int open = 0;
    baton_fetch_piece p;
    while (rc == BATON_OK && (rc = io_fetch_next(f, &p, err)) == BATON_OK) {
        const baton_shard_info *si = &m->shards[p.tag];
        if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
            io_fetch_release(f, &p);
            rc = baton_err_set(err, BATON_ERR_ARG, "cancelled");
            break;
        }
        st->bytes_read += p.len;
        if (p.tag == skip) {
            io_fetch_release(f, &p);
            continue;
        }
        rc = io_verify_size(baton_store_uri(store), si->file, si->bytes, p.object_size, p.offset, err);
        if (rc == BATON_OK && si->piece_bytes && p.offset % si->piece_bytes == 0 &&
            (p.offset + p.len) % si->piece_bytes * (p.offset + p.len != si->bytes) == 0 &&
            io_piece_check(baton_store_uri(store), si, p.offset, p.data, p.len, p.crc32c, why) == BATON_ERR_CORRUPT) {
            baton_log(BATON_LOG_WARN, "%s; downloading it again", why->msg);
            bad[(*nbad)++] = (uint32_t)p.tag;
            if (open) io_sink_abort(&sink);
            open = 0;
            skip = p.tag;
            io_fetch_release(f, &p);
            continue;
        }
        if (rc == BATON_OK && !open) {
            rc = io_sink_open(&sink, dir, si, err);
            open = rc == BATON_OK;
        }
        if (rc == BATON_OK) rc = io_sink_write(&sink, p.data, p.len, err);
        int last = p.last;
        io_fetch_release(f, &p);
        if (rc == BATON_OK && last) {
            open = 0;
            rc = io_sink_commit(&sink, err);
            if (rc == BATON_ERR_CORRUPT) {
                *why = *err;
                baton_log(BATON_LOG_WARN, "%s; downloading it again", err->msg);
                bad[(*nbad)++] = (uint32_t)p.tag;
                rc = BATON_OK;
            }
        }
    }
    if (rc == BATON_END) rc = BATON_OK;
    if (open) io_sink_abort(&sink);
    io_fetch_add_stats(f, st, 0);
    io_fetch_free(f);
    return rc;
}

/* A copy this process wrote and committed: trusted while its size is unchanged. */
static int written_here(const char *dir, const baton_shard_info *si)
{
    char path[4096];
    struct stat st;
    return !baton_path_join(path, sizeof path, dir, si->file, NULL) && stat(path, &st) == 0 &&
           (uint64_t)st.st_size == si->bytes;
}

int io_download(baton_store *store, const baton_manifest *m, const char *dir, const uint8_t *written,
                const baton_fetch_opts *fo, baton_loader_stats *st, baton_err *err)
{
    return io_download_some(store, m, dir, written, NULL, 0, NULL, fo, st, err);
}

int io_download_some(baton_store *store, const baton_manifest *m, const char *dir, const uint8_t *written,
                     const uint32_t *list, size_t nlist, const int *cancel, const baton_fetch_opts *fo,
                     baton_loader_stats *st, baton_err *err)
{
    size_t n = list ? nlist : m->nshards;
    uint32_t *todo = malloc((n ? n : 1) * sizeof *todo), *bad = malloc((n ? n : 1) * sizeof *bad);
    if (!todo || !bad) {
        free(todo);
        free(bad);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    size_t ntodo = 0, nbad = 0;
    baton_err why = {0};
    for (size_t k = 0; k < n; k++) {
        uint32_t i = list ? list[k] : (uint32_t)k;
        if (!(written && written[i] && written_here(dir, &m->shards[i])) && !io_local_valid(dir, &m->shards[i]))
            todo[ntodo++] = i;
    }
    int rc = BATON_OK;
    if (ntodo) {
        rc = download_pass(store, m, dir, fo, todo, ntodo, cancel, bad, &nbad, &why, st, err);
        st->downloads += ntodo;
    }
    if (rc == BATON_OK && nbad) {
        st->redownloads += nbad;
        memcpy(todo, bad, nbad * sizeof *bad);
        ntodo = nbad;
        rc = download_pass(store, m, dir, fo, todo, ntodo, cancel, bad, &nbad, &why, st, err);
        if (rc == BATON_OK && nbad)
            rc = baton_err_set(err, BATON_ERR_CORRUPT,
                               "%s: checksum mismatch again after downloading it a second time "
                               "(the store's copy does not match dataset.json): %s",
                               m->shards[bad[0]].file, why.msg);
    }
    free(todo);
    free(bad);
    return rc;
}
