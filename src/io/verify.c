/* verify.c — shards checked against dataset.json as their bytes pass: the size the store tells
 * with each piece, and the CRC32C of every shard whose every byte passed by in one pass.
 *
 * Owns: per shard, the bytes seen in the current pass (an epoch) and the XOR of their CRC32C terms
 * (baton_crc32c_term: the CRC of a whole summed from its pieces in any order), so the same sums
 * serve the streamed order (ranges in shard order) and mount mode's indexed order (records in a
 * permutation), with no second pass over the bytes.
 *
 * Contract: a shard is compared once all of its bytes passed in one pass — never from part of it:
 * a pass that reads only some of a shard (another rank's blocks, an end or a resume inside the
 * epoch) checks nothing for it, so it can never raise a false alarm. A reader never hands the same
 * bytes twice in one pass without a seek, and a seek resets the sums; bytes past the shard's size
 * make its sums void for the pass (no check rather than a wrong one). A mismatch is
 * BATON_ERR_CORRUPT naming the shard, the sizes or the CRCs, and the offset where known. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>

#define VOID_SUM UINT64_MAX   /* seen[s]: this pass cannot check shard s */

int io_verify_init(io_verify *v, size_t nshards, baton_err *err)
{
    memset(v, 0, sizeof *v);
    v->seen = calloc(nshards ? nshards : 1, sizeof *v->seen);
    v->terms = calloc(nshards ? nshards : 1, sizeof *v->terms);
    if (!v->seen || !v->terms) {
        io_verify_free(v);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    v->n = nshards;
    return BATON_OK;
}

void io_verify_free(io_verify *v)
{
    free(v->seen);
    free(v->terms);
    memset(v, 0, sizeof *v);
}

void io_verify_reset(io_verify *v)
{
    if (v->started && v->seen) {
        memset(v->seen, 0, v->n * sizeof *v->seen);
        memset(v->terms, 0, v->n * sizeof *v->terms);
    }
    v->started = 0;
}

int io_verify_size(const char *uri, const char *name, uint64_t expect, uint64_t told, uint64_t at, baton_err *err)
{
    if (told == UINT64_MAX || told == expect) return BATON_OK;
    return baton_err_set(err, BATON_ERR_CORRUPT,
                         "%s%s: %llu bytes (as the store told at offset %llu), dataset.json says %llu: it is not the "
                         "file dataset.json lists", uri, name, (unsigned long long)told, (unsigned long long)at,
                         (unsigned long long)expect);
}

int io_verify_bytes(io_verify *v, const char *uri, const baton_shard_info *si, uint32_t s, uint64_t pass,
                    uint64_t at, const void *p, size_t n, int *whole, baton_err *err)
{
    if (whole) *whole = 0;
    if (!v->seen || s >= v->n) return BATON_OK;
    if (!v->started || v->pass != pass) {
        io_verify_reset(v);
        v->pass = pass;
        v->started = 1;
    }
    if (v->seen[s] == VOID_SUM) return BATON_OK;
    if (at > si->bytes || n > si->bytes - at || n > si->bytes - v->seen[s]) {
        v->seen[s] = VOID_SUM;
        return BATON_OK;
    }
    if (n == 0 && si->bytes != 0) return BATON_OK;
    v->terms[s] ^= baton_crc32c_term(p, n, si->bytes - at - n);
    v->seen[s] += n;
    if (v->seen[s] != si->bytes) return BATON_OK;
    v->seen[s] = VOID_SUM;   /* checked: once a pass */
    uint32_t crc = baton_crc32c_terms_total(v->terms[s], si->bytes);
    if (crc != si->crc32c)
        return baton_err_set(err, BATON_ERR_CORRUPT,
                             "%s%s: CRC32C %08x over its %llu bytes (read whole), dataset.json says %08x: it is not "
                             "the file dataset.json lists", uri, si->file, crc, (unsigned long long)si->bytes,
                             si->crc32c);
    if (whole) *whole = 1;
    return BATON_OK;
}
