/* pieces.c — a shard's bytes checked against dataset.json piece by piece (baton_shard_info's
 * piece_bytes and piece_crc32c), so that no record is decoded from bytes that were not checked.
 *
 * Owns: the widening of a byte range to the whole pieces around it (what a streamed reader
 * fetches), the check of bytes that are whole pieces against the listed CRC32Cs (one comparison for
 * many pieces: their CRCs are combined with baton_crc32c_shift, so bytes whose CRC the fetch thread
 * already summed need no second pass; only a mismatch sums each piece to name it), the fetch chunk
 * size that keeps every fetched piece whole, and the warning (once per dataset in a process) for a
 * dataset without pieces.
 *
 * Contract: io_piece_check accepts bytes only when every piece they cover matches dataset.json; a
 * mismatch is BATON_ERR_CORRUPT naming the shard, the first piece that differs (its byte range and
 * number) and both CRC32Cs. Bytes that are not whole pieces are an internal error, never a pass.
 * A shard without pieces (an older dataset) is never checked here: its readers sum whole shards
 * (verify.c), as before pieces existed. */
#include "io_internal.h"

#include <pthread.h>
#include <string.h>

void io_piece_span(const baton_shard_info *si, uint64_t start, uint64_t end, uint64_t *lo, uint64_t *hi)
{
    *lo = start;
    *hi = end;
    if (!si->piece_bytes || start >= end) return;
    uint64_t p = si->piece_bytes;
    *lo = start / p * p;
    *hi = (end + p - 1) / p * p;   /* end <= bytes < 2^53: no wrap */
    if (*hi > si->bytes) *hi = si->bytes;
}

/* The end of piece k. */
static uint64_t piece_end(const baton_shard_info *si, uint64_t k)
{
    uint64_t e = (k + 1) * si->piece_bytes;
    return e < si->bytes ? e : si->bytes;
}

int io_piece_check(const char *uri, const baton_shard_info *si, uint64_t at, const uint8_t *data, size_t n,
                   uint32_t crc, baton_err *err)
{
    uint64_t p = si->piece_bytes;
    if (!p || !si->piece_crc32c) return BATON_OK;
    if (n == 0) return BATON_OK;
    if (at % p || at > si->bytes || n > si->bytes - at || ((at + n) % p && at + n != si->bytes))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s%s: internal: bytes %llu..%llu are not whole pieces of %llu bytes",
                             uri, si->file, (unsigned long long)at, (unsigned long long)(at + n - 1),
                             (unsigned long long)p);
    uint64_t k0 = at / p, k1 = (at + n - 1) / p;
    uint32_t want = 0;
    for (uint64_t k = k0; k <= k1; k++)
        want = baton_crc32c_shift(want, piece_end(si, k) - k * p) ^ si->piece_crc32c[k];
    if (want == crc) return BATON_OK;
    for (uint64_t k = k0; k <= k1; k++) {   /* name the first piece that differs */
        uint64_t lo = k * p, hi = piece_end(si, k);
        uint32_t got = baton_crc32c(0, data + (lo - at), (size_t)(hi - lo));
        if (got == si->piece_crc32c[k])
            continue;
        return baton_err_set(err, BATON_ERR_CORRUPT,
                             "%s%s: bytes %llu..%llu (piece %llu of %llu): CRC32C %08x, dataset.json says %08x: it is "
                             "not the file dataset.json lists (checked before any record of that piece was used)",
                             uri, si->file, (unsigned long long)lo, (unsigned long long)(hi - 1),
                             (unsigned long long)k + 1, (unsigned long long)baton_shard_pieces(si), got,
                             si->piece_crc32c[k]);
    }
    /* each piece matched but not their sum: crc was not the bytes' own */
    return baton_err_set(err, BATON_ERR_FORMAT, "%s%s: internal: CRC32C %08x given for bytes %llu..%llu is not theirs",
                         uri, si->file, crc, (unsigned long long)at, (unsigned long long)(at + n - 1));
}

int io_piece_fetch_opts(const baton_manifest *m, baton_fetch_opts *fo, baton_err *err)
{
    baton_fetch_opts d;
    baton_fetch_opts_default(&d);
    if (!fo->chunk_bytes) fo->chunk_bytes = d.chunk_bytes;
    if (!fo->max_buffered) fo->max_buffered = d.max_buffered;
    for (size_t s = 0; s < m->nshards; s++) {
        uint64_t p = m->shards[s].piece_bytes;
        if (!p || fo->chunk_bytes % p == 0) continue;
        uint64_t c = (fo->chunk_bytes + p - 1) / p * p;   /* a multiple of every piece size so far? */
        for (size_t t = 0; t < s; t++)
            if (m->shards[t].piece_bytes && c % m->shards[t].piece_bytes)
                return baton_err_set(err, BATON_ERR_FORMAT,
                                     "dataset.json: shards[%zu] has pieces of %llu bytes, shards[%zu] of %llu: no fetch "
                                     "size keeps both whole", t, (unsigned long long)m->shards[t].piece_bytes, s,
                                     (unsigned long long)p);
        fo->chunk_bytes = (size_t)c;
    }
    if (fo->max_buffered < fo->chunk_bytes) fo->max_buffered = fo->chunk_bytes;
    return BATON_OK;
}

/* Once per dataset in a process (loaders are opened again and again: each epoch of a script, each
 * worker of a DataLoader): the datasets warned about, by the CRC32C of their URI. */
static pthread_mutex_t warned_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t warned[64];
static size_t nwarned;

void io_pieces_warn_old(const char *uri, const baton_manifest *m)
{
    size_t old = 0, first = 0;
    for (size_t s = 0; s < m->nshards; s++)
        if (!m->shards[s].piece_bytes && m->shards[s].bytes && !old++) first = s;
    if (!old) return;
    uint32_t id = baton_crc32c(0, uri, strlen(uri));
    pthread_mutex_lock(&warned_mu);
    int seen = 0;
    for (size_t i = 0; i < nwarned && i < 64; i++) seen |= warned[i] == id;
    if (!seen) warned[nwarned++ % 64] = id;
    pthread_mutex_unlock(&warned_mu);
    if (seen) return;
    baton_log(BATON_LOG_WARN,
              "%sdataset.json lists no piece checksums (%zu of %zu shards, %s first: packed by an older baton): "
              "each such shard is checked whole, after its records were read; pack the dataset again to have every "
              "piece checked before use", uri, old, m->nshards, m->shards[first].file);
}
