/* test_io_order.c — epoch orders: for random shard layouts, block sizes and worker counts, the
 * streamed and indexed orders hand every record of an epoch to exactly one worker exactly once;
 * epoch sizes and position lookups agree with a plain enumeration; orders depend only on
 * (seed, epoch) and differ between epochs (a block's shuffle too). */
#include "../../src/io/io_internal.h"
#include "check.h"

#include <stdlib.h>

static baton_manifest fake(baton_rng *r, size_t nshards, uint64_t *total)
{
    baton_manifest m;
    memset(&m, 0, sizeof m);
    m.nshards = nshards;
    m.shards = calloc(nshards, sizeof *m.shards);
    *total = 0;
    for (size_t i = 0; i < nshards; i++) {
        m.shards[i].records = baton_rng_below(r, 4) == 0 ? 0 : 1 + baton_rng_below(r, 200);
        *total += m.shards[i].records;
    }
    m.samples = *total;
    return m;
}

/* global id of a record = shard * 1000 + record number */
static void stream_worker_order(const baton_manifest *m, uint64_t seed, uint64_t epoch, uint64_t block,
                                uint32_t rank, uint32_t world, uint64_t *out, uint64_t *n)
{
    io_stream_layout L;
    baton_err err;
    io_stream_layout_init(&L, m, seed, epoch, block, 1, &err);
    *n = 0;
    io_segment seg[64];
    uint64_t ids[4096], perm[4096];
    for (uint64_t b = rank; b < L.nblocks; b += world) {
        size_t ns = io_stream_block_segments(&L, m, b, seg, 64);
        uint64_t k = 0;
        for (size_t s = 0; s < ns; s++)
            for (uint64_t j = 0; j < seg[s].count; j++) ids[k++] = seg[s].shard * 1000 + seg[s].first + j;
        uint64_t bs = io_block_size(m->samples, block, b);
        CHECK_EQ_U(k, bs);
        io_block_permutation(seed, epoch, b, k, 1, perm);
        for (uint64_t i = 0; i < k; i++) out[(*n)++] = ids[perm[i]];
    }
    io_stream_layout_free(&L);
}

/* a block's shuffle depends on the epoch too (with one shard, the shard order cannot hide it) */
static void test_block_epoch(void)
{
    uint64_t a[64], b[64];
    int differ = 0;
    for (uint64_t blk = 0; blk < 4; blk++) {
        io_block_permutation(7, 0, blk, 64, 1, a);
        io_block_permutation(7, 1, blk, 64, 1, b);
        differ += memcmp(a, b, sizeof a) != 0;
    }
    CHECK_MSG(differ == 4, "%d of 4 blocks shuffled differently in epochs 0 and 1", differ);
}

int main(void)
{
    test_block_epoch();
    baton_rng r;
    baton_rng_seed(&r, 99);
    static uint64_t order[8][20000], all[20000];
    for (int trial = 0; trial < 200; trial++) {
        size_t nshards = 1 + baton_rng_below(&r, 12);
        uint64_t total;
        baton_manifest m = fake(&r, nshards, &total);
        if (total == 0) {
            free(m.shards);
            continue;
        }
        uint64_t block = 1 + baton_rng_below(&r, 300);
        uint32_t world = 1 + (uint32_t)baton_rng_below(&r, 5);
        uint64_t seed = baton_rng_next(&r), epoch = baton_rng_below(&r, 5);
        /* streamed: union over workers = every record exactly once */
        uint64_t got = 0;
        static uint8_t seen[12 * 1000];
        memset(seen, 0, sizeof seen);
        int dup = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            uint64_t n;
            stream_worker_order(&m, seed, epoch, block, rank, world, order[rank], &n);
            CHECK_EQ_U(n, io_stream_epoch_size(total, block, rank, world));
            for (uint64_t i = 0; i < n; i++) {
                if (seen[order[rank][i]]++) dup = 1;
            }
            got += n;
            /* locate: position p lies in block b at index `within` */
            for (uint64_t p = 0; p < n; p += 1 + p / 3) {
                uint64_t b, within;
                io_stream_locate(total, block, rank, world, p, &b, &within);
                CHECK(b % world == rank && within < io_block_size(total, block, b));
            }
        }
        CHECK(!dup);
        CHECK_EQ_U(got, total);
        /* same (seed, epoch) → same order; another epoch → (almost surely) another order */
        uint64_t n1, n2;
        stream_worker_order(&m, seed, epoch, block, 0, world, order[0], &n1);
        stream_worker_order(&m, seed, epoch, block, 0, world, all, &n2);
        CHECK(n1 == n2 && memcmp(order[0], all, n1 * sizeof *all) == 0);
        /* indexed */
        uint64_t *perm = malloc(total * sizeof *perm);
        io_indexed_permutation(seed, epoch, total, 1, perm);
        uint64_t sum = 0;
        for (uint32_t rank = 0; rank < world; rank++) sum += io_indexed_epoch_size(total, rank, world);
        CHECK_EQ_U(sum, total);
        memset(seen, 0, sizeof seen);
        dup = 0;
        for (uint64_t i = 0; i < total; i++)
            if (perm[i] >= total || seen[perm[i]]++) dup = 1;
        CHECK(!dup);
        free(perm);
        free(m.shards);
    }
    /* different epochs give different shard orders (12 shards: collisions are ~1/479001600) */
    uint64_t a[12], b[12];
    io_order_shards(1, 0, 12, 1, a);
    io_order_shards(1, 1, 12, 1, b);
    CHECK(memcmp(a, b, sizeof a) != 0);
    baton_io_mode mode;
    CHECK(baton_io_mode_parse("cache", &mode) == BATON_OK && mode == BATON_MODE_CACHE);
    CHECK(baton_io_mode_parse("bogus", &mode) == BATON_ERR_ARG);
    CHECK(!strcmp(baton_io_mode_name(BATON_MODE_PIPE), "pipe"));
    CHECK_DONE();
}
