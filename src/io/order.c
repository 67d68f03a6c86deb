/* order.c — each epoch's record order as a pure function of (seed, epoch, rank, world, manifest).
 *
 * Streamed order (pipe mode, cache mode's first epoch): shards are taken in a per-epoch
 * permutation and read as one stream; the stream is cut into blocks of `block` consecutive
 * records (the last block of an epoch may be shorter); each block is emitted in a permutation
 * drawn from RNG(seed, epoch, block number) — a shuffle buffer of one block, whose memory is
 * bounded and whose state at any position can be recomputed, so resumption is exact and needs no
 * replay. Worker rank of world takes blocks b ≡ rank (mod world).
 *
 * Indexed order (file, mount, cache afterwards): one permutation of all records of the dataset
 * from RNG(seed, epoch); worker rank takes positions p ≡ rank (mod world).
 *
 * Every sample of an epoch therefore reaches exactly one worker exactly once, and a cursor
 * {seed, epoch, position} names the same record on every run. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>

/* RNG stream tags, so orders for different purposes never share numbers. */
#define TAG_SHARDS 0x73686172ULL   /* "shar" */
#define TAG_BLOCK 0x626c6f63ULL    /* "bloc" */
#define TAG_INDEXED 0x696e6478ULL  /* "indx" */

static const char *mode_names[] = {"file", "pipe", "mount", "cache"};

const char *baton_io_mode_name(baton_io_mode m)
{
    return (unsigned)m < 4 ? mode_names[m] : "unknown";
}

int baton_io_mode_parse(const char *s, baton_io_mode *m)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, mode_names[i])) {
            *m = (baton_io_mode)i;
            return BATON_OK;
        }
    return BATON_ERR_ARG;
}

/* The identity: the order without shuffling (baton_loader_opts.no_shuffle). */
static void identity(uint64_t *perm, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) perm[i] = i;
}

void io_order_shards(uint64_t seed, uint64_t epoch, size_t nshards, int shuffle, uint64_t *perm)
{
    if (!shuffle) {
        identity(perm, nshards);
        return;
    }
    baton_rng r;
    baton_rng_seed3(&r, seed, epoch, TAG_SHARDS);
    baton_rng_permutation(&r, perm, nshards);
}

uint64_t io_block_size(uint64_t total, uint64_t block, uint64_t b)
{
    uint64_t start = b * block;
    if (start >= total) return 0;
    return total - start < block ? total - start : block;
}

uint64_t io_stream_epoch_size(uint64_t total, uint64_t block, uint32_t rank, uint32_t world)
{
    uint64_t nblocks = (total + block - 1) / block, n = 0;
    uint64_t full = total / block;  /* blocks of exactly `block` records */
    /* worker's blocks: rank, rank+world, ... < nblocks */
    if (rank >= nblocks) return 0;
    uint64_t mine = (nblocks - rank + world - 1) / world;
    n = mine * block;
    uint64_t last = nblocks - 1;
    if (full != nblocks && last % world == rank) n -= block - (total - full * block);
    return n;
}

void io_stream_locate(uint64_t total, uint64_t block, uint32_t rank, uint32_t world,
                      uint64_t position, uint64_t *b, uint64_t *within)
{
    (void)total;
    uint64_t j = position / block;  /* the worker's j-th block; all but the epoch's last are full */
    *b = rank + j * world;
    *within = position - j * block;
}

int io_stream_layout_init(io_stream_layout *L, const baton_manifest *m, uint64_t seed,
                          uint64_t epoch, uint64_t block, int shuffle, baton_err *err)
{
    memset(L, 0, sizeof *L);
    size_t n = m->nshards;
    L->block = block;
    L->nblocks = (m->samples + block - 1) / block;
    L->shard_perm = malloc((n ? n : 1) * sizeof *L->shard_perm);
    L->start = malloc((n + 1) * sizeof *L->start);
    if (!L->shard_perm || !L->start) {
        io_stream_layout_free(L);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    io_order_shards(seed, epoch, n, shuffle, L->shard_perm);
    L->start[0] = 0;
    for (size_t i = 0; i < n; i++) L->start[i + 1] = L->start[i] + m->shards[L->shard_perm[i]].records;
    return BATON_OK;
}

void io_stream_layout_free(io_stream_layout *L)
{
    free(L->shard_perm);
    free(L->start);
    L->shard_perm = L->start = NULL;
}

size_t io_stream_block_segments(const io_stream_layout *L, const baton_manifest *m, uint64_t b,
                                io_segment *seg, size_t cap)
{
    uint64_t first = b * L->block, left = io_block_size(m->samples, L->block, b);
    size_t ns = 0, n = m->nshards;
    /* binary search the shard (in epoch order) holding global record `first` */
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (L->start[mid] <= first) lo = mid;
        else hi = mid;
    }
    for (size_t i = lo; i < n && left > 0 && ns < cap; i++) {
        uint64_t s_first = L->start[i], s_n = L->start[i + 1] - s_first;
        if (s_n == 0 || first >= s_first + s_n) continue;
        uint64_t in = first - s_first, take = s_n - in < left ? s_n - in : left;
        seg[ns++] = (io_segment){(uint32_t)L->shard_perm[i], in, take};
        first += take;
        left -= take;
    }
    return ns;
}

void io_block_permutation(uint64_t seed, uint64_t epoch, uint64_t b, uint64_t n, int shuffle, uint64_t *out)
{
    if (!shuffle) {
        identity(out, n);
        return;
    }
    baton_rng r;
    baton_rng_seed3(&r, seed ^ TAG_BLOCK, epoch, b);
    baton_rng_permutation(&r, out, n);
}

uint64_t io_indexed_epoch_size(uint64_t total, uint32_t rank, uint32_t world)
{
    return total > rank ? (total - rank + world - 1) / world : 0;
}

void io_indexed_permutation(uint64_t seed, uint64_t epoch, uint64_t total, int shuffle, uint64_t *perm)
{
    if (!shuffle) {
        identity(perm, total);
        return;
    }
    baton_rng r;
    baton_rng_seed3(&r, seed ^ TAG_INDEXED, epoch, 0);
    baton_rng_permutation(&r, perm, total);
}

int io_stream_permutation(const baton_manifest *m, uint64_t seed, uint64_t epoch, uint64_t block, int shuffle,
                          uint32_t rank, uint32_t world, const uint64_t *shard_first, uint64_t *perm,
                          baton_err *err)
{
    io_stream_layout L;
    int rc = io_stream_layout_init(&L, m, seed, epoch, block, shuffle, err);
    if (rc) return rc;
    size_t cap = m->nshards + 1;
    io_segment *seg = malloc(cap * sizeof *seg);
    uint64_t *ids = malloc(block * sizeof *ids), *bp = malloc(block * sizeof *bp);
    if (!seg || !ids || !bp) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    uint64_t p = 0;
    for (uint64_t b = rank; rc == BATON_OK && b < L.nblocks; b += world) {
        uint64_t n = 0;   /* the block's records in stream order, as global record numbers */
        size_t ns = io_stream_block_segments(&L, m, b, seg, cap);
        for (size_t i = 0; i < ns; i++)
            for (uint64_t j = 0; j < seg[i].count; j++) ids[n++] = shard_first[seg[i].shard] + seg[i].first + j;
        io_block_permutation(seed, epoch, b, n, shuffle, bp);
        for (uint64_t i = 0; i < n; i++) perm[p++] = ids[bp[i]];
    }
    free(seg);
    free(ids);
    free(bp);
    io_stream_layout_free(&L);
    return rc;
}
