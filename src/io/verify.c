/* verify.c — shards checked against dataset.json as their bytes pass: the size the store tells
 * with each piece, and the CRC32C of every shard whose every byte passed by in one pass.
 *
 * Owns: per shard, the bytes seen in the current pass (an epoch) and the XOR of their CRC32C terms
 * (baton_crc32c_shift: the CRC of a whole summed from its pieces' CRCs in any order), so the same sums serve the streamed order (ranges in shard order, their CRCs summed
 * by the fetch thread as they arrived) and mount mode's indexed order (records in a permutation),
 * with no second pass over the bytes. Terms are kept per MiB of distance from the shard's end and
 * moved to the end once, when the shard is whole: a record costs a short shift.
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
#define NEAR_BITS 20           /* terms are summed per MiB of distance from the shard's end */

int io_verify_init(io_verify *v, size_t nshards, baton_err *err)
{
    memset(v, 0, sizeof *v);
    v->seen = calloc(nshards ? nshards : 1, sizeof *v->seen);
    v->sums = calloc(nshards ? nshards : 1, sizeof *v->sums);
    if (!v->seen || !v->sums) {
        io_verify_free(v);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    v->n = nshards;
    return BATON_OK;
}

void io_verify_free(io_verify *v)
{
    for (size_t s = 0; v->sums && s < v->n; s++) free(v->sums[s]);
    free(v->seen);
    free(v->sums);
    memset(v, 0, sizeof *v);
}

static size_t nsums(const baton_shard_info *si) { return (size_t)(si->bytes >> NEAR_BITS) + 1; }

void io_verify_reset(io_verify *v, const baton_manifest *m)
{
    for (size_t s = 0; v->started && s < v->n; s++) {
        if (!v->seen[s]) continue;
        v->seen[s] = 0;
        if (v->sums[s]) memset(v->sums[s], 0, nsums(&m->shards[s]) * sizeof *v->sums[s]);
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

/* Every byte of shard s passed: the CRC32C of the whole from the sums, against dataset.json. */
static int verify_whole(const io_verify *v, const char *uri, const baton_shard_info *si, uint32_t s, baton_err *err)
{
    uint32_t x = 0;
    for (size_t k = 0; k < nsums(si); k++)
        if (v->sums[s][k]) x ^= baton_crc32c_shift(v->sums[s][k], (uint64_t)k << NEAR_BITS);
    if (x == si->crc32c) return BATON_OK;
    return baton_err_set(err, BATON_ERR_CORRUPT,
                         "%s%s: CRC32C %08x over its %llu bytes (read whole), dataset.json says %08x: it is not the "
                         "file dataset.json lists", uri, si->file, x, (unsigned long long)si->bytes, si->crc32c);
}

int io_verify_add(io_verify *v, const char *uri, const baton_manifest *m, uint32_t s, uint64_t pass, uint64_t at,
                  uint64_t n, uint32_t crc, int *whole, baton_err *err)
{
    if (whole) *whole = 0;
    if (!v->seen || s >= v->n) return BATON_OK;
    const baton_shard_info *si = &m->shards[s];
    if (!v->started || v->pass != pass) {
        io_verify_reset(v, m);
        v->pass = pass;
        v->started = 1;
    }
    if (v->seen[s] == VOID_SUM) return BATON_OK;
    if (at > si->bytes || n > si->bytes - at || n > si->bytes - v->seen[s]) {
        v->seen[s] = VOID_SUM;
        return BATON_OK;
    }
    if (!v->sums[s] && !(v->sums[s] = calloc(nsums(si), sizeof *v->sums[s])))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    /* summed near the end (a short shift, its tables in cache), moved the rest of the way once */
    uint64_t after = si->bytes - at - n;
    v->sums[s][after >> NEAR_BITS] ^= baton_crc32c_shift(crc, after & ((1u << NEAR_BITS) - 1));
    v->seen[s] += n;
    if (v->seen[s] != si->bytes) return BATON_OK;
    v->seen[s] = VOID_SUM;   /* checked: once a pass */
    int rc = verify_whole(v, uri, si, s, err);
    if (rc == BATON_OK && whole) *whole = 1;
    return rc;
}
