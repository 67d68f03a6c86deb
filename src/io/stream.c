/* stream.c — the loader's streamed order (pipe mode, cache mode's first epoch): which byte ranges
 * to fetch, and the records of each block out of them in the block's permutation (order.c).
 *
 * Owns: the plan (one entry per fetched range, in consumption order, consumed entries dropped),
 * the baton_fetch that streams those ranges, the block arena (baton_bigmem_alloc'd: a launch writes
 * its first 32 MB block into it) and its permutation, and cache
 * mode's copy of the shards that pass by whole; every piece is checked against dataset.json on the
 * way: the size the store tells, and before any record of it goes to the reader, each piece's
 * CRC32C (pieces.c; a range is fetched widened to whole pieces, and the fetch chunks hold whole
 * pieces, so the fetch thread's CRC of a chunk is all the check needs). A shard of an older dataset
 * without pieces is checked whole once all of it passed in an epoch (verify.c), as before.
 *
 * Contract: the plan runs at most one epoch ahead of the reader, never past the end the caller
 * set (baton_loader_set_end): an epoch's ranges are queued when the epoch before it starts, so the
 * next epoch streams without a stall and a run that ends fetches nothing more. After a seek (the
 * open's first read among them) the first block is queued at once and the blocks after it as
 * their shards' indexes arrive (loader.c takes them behind the open), all of them before the
 * reader needs them; ranges are queued in the order they are read whatever the indexes' order.
 * Held (baton_loader_hold_ahead, a pipeline's launch) only the block being read is fetched, the
 * next one when the reader needs it; the release plans what was held back.
 * Every byte of an epoch is asked for once (the fetcher retries only what did not arrive). A
 * block only partly needed because the end falls inside it fetches only the ranges around the
 * needed records when that costs less than half (a request counted as REQUEST_BYTES). Records come out of a block
 * exactly as from a whole one, so the order does not depend on where reading started or ends. */
#include "loader_internal.h"

#include <stdlib.h>
#include <string.h>

int io_loader_epoch_streamed(const baton_loader *l, uint64_t epoch)
{
    switch (l->o.mode) {
    case BATON_MODE_PIPE: return 1;
    case BATON_MODE_CACHE: return !l->share && (epoch == 0 || l->cache_off);   /* shared: read locally */
    default: return 0;
    }
}

/* ---------------------------------------------------------------- streamed order */

void io_stream_reset(baton_loader *l)
{
    io_loader_set_fetch(l, &l->fetch, NULL, 0);
    if (l->reader) baton_rec_reader_free(l->reader);
    l->reader = NULL;
    if (l->sink_open) io_sink_abort(&l->sink);
    l->sink_open = 0;
    l->plan_len = l->plan_next = 0;
    l->plan_base = 0;
    l->planned_through = 0;
    l->rest_b = UINT64_MAX;
    l->blk_valid = 0;
    io_verify_reset(&l->verify, &l->m);
}

uint64_t io_loader_rec_end(const baton_loader *l, uint32_t s, uint64_t j)
{
    return j < l->m.shards[s].records ? l->off[s][j] : l->m.shards[s].bytes;
}

/* 1 when record `position` of `epoch` is at or past the end the caller set. */
int io_loader_past_end(const baton_loader *l, uint64_t epoch, uint64_t position)
{
    return l->has_end && (epoch > l->end.epoch || (epoch == l->end.epoch && position >= l->end.position));
}

/* Append one range to the plan and hand it to the fetcher. */
static int plan_push(baton_loader *l, const plan_seg *ps, baton_err *err)
{
    if (l->plan_len == l->plan_cap && l->plan_next > 0) {  /* drop consumed entries */
        memmove(l->plan, l->plan + l->plan_next, (l->plan_len - l->plan_next) * sizeof *l->plan);
        l->plan_base += l->plan_next;
        l->plan_len -= l->plan_next;
        l->plan_next = 0;
    }
    if (l->plan_len == l->plan_cap) {
        size_t cap = l->plan_cap ? l->plan_cap * 2 : 64;
        plan_seg *p = realloc(l->plan, cap * sizeof *p);
        if (!p) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        l->plan = p;
        l->plan_cap = cap;
    }
    plan_seg *q = &l->plan[l->plan_len];
    *q = *ps;
    io_piece_span(&l->m.shards[q->shard], q->start, q->end, &q->fstart, &q->fend);
    int rc = io_fetch_add(l->fetch, l->m.shards[q->shard].file, q->fstart, q->fend - q->fstart,
                             l->plan_base + l->plan_len, err);
    l->plan_len++;
    return rc;
}

/* What one more request costs, in bytes: an S3 GET is priced like about 4 KiB of egress. Two
 * needed records closer than this are fetched by one request, the records between them too. */
#define REQUEST_BYTES 4096

/* The bytes a run [start, end) of shard s costs to fetch: widened to whole pieces. */
static uint64_t span_lo(const baton_loader *l, uint32_t s, uint64_t start)
{
    uint64_t lo, hi;
    io_piece_span(&l->m.shards[s], start, start + 1, &lo, &hi);
    return lo;
}
static uint64_t span_hi(const baton_loader *l, uint32_t s, uint64_t end)
{
    uint64_t lo, hi;
    io_piece_span(&l->m.shards[s], end - 1, end, &lo, &hi);
    return hi;
}

/* The ranges that cover the needed records of a block (need NULL: all of them): one per run of
 * needed records inside one segment, runs closer than REQUEST_BYTES joined. dry: only count their
 * bytes and their number into *cost (bytes + REQUEST_BYTES each); else plan them (the last one
 * ends the block). */
static int block_runs(baton_loader *l, const plan_seg *proto, const io_segment *seg, size_t ns,
                      const uint8_t *need, int dry, uint64_t *cost, baton_err *err)
{
    plan_seg run = *proto, pend = *proto;
    int have = 0, rc = BATON_OK;
    *cost = 0;
    for (size_t i = 0, base = 0; i < ns && rc == BATON_OK; base += seg[i].count, i++) {
        uint32_t s = seg[i].shard;
        int open = 0;
        for (uint64_t k = 0; k < seg[i].count && rc == BATON_OK; k++) {
            if (need && !need[base + k]) continue;
            uint64_t j = seg[i].first + k;
            if (open && span_lo(l, s, l->off[s][j]) <= span_hi(l, s, run.end) + REQUEST_BYTES) {
                run.count = j + 1 - run.first;
                run.end = io_loader_rec_end(l, s, j + 1);
                continue;
            }
            if (open) {
                *cost += span_hi(l, s, run.end) - span_lo(l, s, run.start) + REQUEST_BYTES;
                if (!dry && have) rc = plan_push(l, &pend, err);
                pend = run;
                have = 1;
            }
            run.shard = s;
            run.first = j;
            run.count = 1;
            run.bfirst = base + k;
            run.start = l->off[s][j];
            run.end = io_loader_rec_end(l, s, j + 1);
            open = 1;
        }
        if (open) {
            *cost += span_hi(l, s, run.end) - span_lo(l, s, run.start) + REQUEST_BYTES;
            if (!dry && have && rc == BATON_OK) rc = plan_push(l, &pend, err);
            pend = run;
            have = 1;
        }
    }
    if (!dry && have && rc == BATON_OK) {
        pend.last_of_block = 1;
        rc = plan_push(l, &pend, err);
    }
    return rc;
}

static int block_scratch(baton_loader *l, uint64_t n, baton_err *err)
{
    if (n <= l->cap_block) return BATON_OK;
    size_t *sl = realloc(l->slot, n * sizeof *sl);
    if (sl) l->slot = sl;
    uint8_t *nd = realloc(l->need, n);
    if (nd) l->need = nd;
    uint64_t *pp = realloc(l->pperm, n * sizeof *pp);
    if (pp) l->pperm = pp;
    if (!sl || !nd || !pp) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for a block of %llu records",
                                                (unsigned long long)n);
    l->cap_block = n;
    return BATON_OK;
}

/* Plan block b of `epoch` (segments seg[0..ns), n records), of which positions [lo, hi) of its
 * permutation are handed out. A block goes as one range per segment. When the end falls inside
 * it, only the ranges holding the records before the end are fetched, if that costs less than
 * half (REQUEST_BYTES a request; cache mode's first epoch wants whole shards for its copy). A
 * resume inside a block fetches it whole all the same: its first batch needs records from all
 * over the block, and a few large requests bring them sooner than many small ones. */
static int plan_block(baton_loader *l, uint64_t epoch, uint64_t b, const io_segment *seg, size_t ns,
                      uint64_t n, uint64_t lo, uint64_t hi, baton_err *err)
{
    plan_seg proto = {.epoch = epoch, .block = b, .n = n, .lo = lo, .hi = hi};
    uint64_t all = 0, part = 0;
    const uint8_t *need = NULL;
    int whole_shards = l->o.mode == BATON_MODE_CACHE && epoch == 0 && !l->cache_off && !io_loader_past_end(l, 1, 0);
    int rc = BATON_OK;
    for (size_t i = 0; i < ns && rc == BATON_OK; i++) rc = io_loader_index(l, seg[i].shard, err);
    if (rc) return rc;
    if (hi < n && !whole_shards) {
        if ((rc = block_scratch(l, n, err))) return rc;
        io_block_permutation(l->o.seed, epoch, b, n, !l->o.no_shuffle, l->pperm);
        memset(l->need, 0, n);
        for (uint64_t i = lo; i < hi; i++) l->need[l->pperm[i]] = 1;
        block_runs(l, &proto, seg, ns, NULL, 1, &all, err);
        block_runs(l, &proto, seg, ns, l->need, 1, &part, err);
        if (part * 2 < all) need = l->need;
    }
    return block_runs(l, &proto, seg, ns, need, 0, &all, err);
}

/* How far plan_blocks goes: every block (waiting for indexes), the first block only, or the blocks
 * whose shards' indexes are already in. */
enum { PLAN_ALL, PLAN_FIRST, PLAN_READY };

/* Add the ranges of this worker's blocks of `epoch`, from block b0 (position `within` of it) on,
 * up to the end, to the plan and fetcher, as far as `how` says; the blocks left over, if any, are
 * noted in l->rest_epoch and l->rest_b (planned later by plan_rest). */
static int plan_blocks(baton_loader *l, uint64_t epoch, uint64_t b0, uint64_t within, int how, baton_err *err)
{
    l->planned_through = epoch + 1;
    l->rest_b = UINT64_MAX;
    if (io_loader_past_end(l, epoch, 0)) return BATON_OK;
    io_stream_layout L;
    int rc = io_stream_layout_init(&L, &l->m, l->o.seed, epoch, l->block, !l->o.no_shuffle, err);
    if (rc) return rc;
    size_t segcap = l->m.nshards + 1;
    io_segment *seg = malloc(segcap * sizeof *seg);
    if (!seg) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (uint64_t b = b0; rc == BATON_OK && b < L.nblocks; b += l->o.world) {
        uint64_t pos0 = (b - l->o.rank) / l->o.world * l->block;  /* this worker's position */
        if (io_loader_past_end(l, epoch, pos0)) break;
        uint64_t n = io_block_size(l->total, l->block, b), lo = b == b0 ? within : 0, hi = n;
        if (l->has_end && epoch == l->end.epoch && l->end.position - pos0 < n) hi = l->end.position - pos0;
        if (lo >= hi) continue;
        size_t ns = io_stream_block_segments(&L, &l->m, b, seg, segcap);
        int ready = 1;
        for (size_t i = 0; how == PLAN_READY && ready && rc == BATON_OK && i < ns; i++)
            rc = io_loader_index_ready(l, seg[i].shard, &ready, err);
        if (rc == BATON_OK && !ready) {
            l->rest_epoch = epoch, l->rest_b = b;
            break;
        }
        if (rc == BATON_OK) rc = plan_block(l, epoch, b, seg, ns, n, lo, hi, err);
        if (rc == BATON_OK && how == PLAN_FIRST) {
            if (b + l->o.world < L.nblocks) l->rest_epoch = epoch, l->rest_b = b + l->o.world;
            break;
        }
    }
    free(seg);
    io_stream_layout_free(&L);
    return rc;
}

/* Cache mode: pass a streamed piece of shard s at byte offset `at` to its local copy. The stream's
 * check gives the copy its CRC32C: `whole` is 1 when this piece completed the shard and its CRC32C
 * matched (the copy, written from the same bytes, then needs no sum of its own). */
static void cache_piece(baton_loader *l, const plan_seg *p, uint64_t at, const uint8_t *d, size_t n, int whole)
{
    if (l->o.mode != BATON_MODE_CACHE || l->cache_off || p->epoch != 0) return;
    baton_err err = {0};
    const baton_shard_info *si = &l->m.shards[p->shard];
    if (l->sink_open && (l->sink_shard != p->shard || l->sink.written != at)) {
        io_sink_abort(&l->sink);  /* a gap: this shard's copy cannot be completed from the stream */
        l->sink_open = 0;
    }
    if (!l->sink_open) {
        if (at != 0 || io_local_valid(l->local_dir, si)) return;
        if (io_sink_open(&l->sink, l->local_dir, si, &err)) goto fail;
        l->sink_open = 1;
        l->sink_shard = p->shard;
        l->sink.crc_given = 1;
    }
    if (io_sink_write(&l->sink, d, n, &err)) goto fail;
    if (l->sink.written == si->bytes) {
        if (!whole) {   /* cannot happen (the copy's bytes are the whole shard's, in this pass): no copy */
            io_sink_abort(&l->sink);
            l->sink_open = 0;
            return;
        }
        l->sink.crc = si->crc32c;
        l->sink_open = 0;
        if (io_sink_commit(&l->sink, &err)) goto fail;
        l->cache_written[p->shard] = 1;   /* checked as written: no read-back before epoch 1 */
    }
    return;
fail:
    if (l->sink_open) io_sink_abort(&l->sink);
    l->sink_open = 0;
    if (err.code == BATON_ERR_NOSPACE) {
        l->cache_off = 1;
        l->st.cache_fallback = 1;
        baton_log(BATON_LOG_WARN, "%s; caching stops, reading goes on in pipe mode", err.msg);
    } else {
        baton_log(BATON_LOG_WARN, "cache: %s (that shard will be downloaded before epoch 1)", err.msg);
    }
}

static int arena_add(baton_loader *l, const baton_rec *r, uint32_t shard, baton_err *err)
{
    if (l->nrecs == l->cap_recs) {
        size_t cap = l->cap_recs ? l->cap_recs * 2 : 1024;
        blk_rec *p = realloc(l->recs, cap * sizeof *p);
        if (!p) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        l->recs = p;
        l->cap_recs = cap;
    }
    baton_buf *a = &l->arena;
    if (a->cap - a->len < r->len) {   /* it may move, as a realloc would: records are read one at a time */
        void *d = a->data;
        if (baton_bigmem_reserve(&d, &a->cap, a->len, r->len, (size_t)1 << 20))
            return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for a block (%zu + %zu bytes)", a->len, r->len);
        a->data = d;
    }
    size_t at = a->len;
    if (r->len) memcpy(a->data + at, r->data, r->len);
    a->len += r->len;
    l->recs[l->nrecs++] = (blk_rec){at, r->len, shard, r->offset};
    return BATON_OK;
}

/* Store bytes for the records of `epoch` (baton_loader_epoch_fetched). */
void io_loader_count_fetched(baton_loader *l, uint64_t epoch, uint64_t n)
{
    if (!l->ep_len) l->ep_base = epoch;
    if (epoch < l->ep_base) return;   /* a seek back to an earlier epoch: not kept apart */
    uint64_t i = epoch - l->ep_base;
    if (i >= l->ep_len) {
        size_t len = (size_t)i + 1;
        uint64_t *p = realloc(l->ep_fetched, len * sizeof *p);
        if (!p) return;   /* a counter only */
        memset(p + l->ep_len, 0, (len - l->ep_len) * sizeof *p);
        l->ep_fetched = p;
        l->ep_len = len;
    }
    l->ep_fetched[i] += n;
}

/* A streamed piece of plan entry p at offset `at`: checked against dataset.json (the size the
 * store told; its pieces' CRC32Cs, or for a shard without pieces the shard's CRC32C once all of it
 * passed in this epoch), then its part [lo, hi) inside the records' bytes to cache mode's copy. */
static int check_piece(baton_loader *l, const plan_seg *p, uint64_t at, const baton_fetch_piece *piece,
                       uint64_t lo, uint64_t hi, baton_err *err)
{
    const baton_shard_info *si = &l->m.shards[p->shard];
    const char *uri = baton_store_uri(l->store);
    int whole = 0;
    int rc = io_verify_size(uri, si->file, si->bytes, piece->object_size, at, err);
    if (rc == BATON_OK && si->piece_bytes) {
        rc = io_piece_check(uri, si, at, piece->data, piece->len, piece->crc32c, err);
        whole = 1;   /* every byte the copy gets was checked */
    } else if (rc == BATON_OK) {
        rc = io_verify_add(&l->verify, uri, &l->m, p->shard, p->epoch, at, piece->len, piece->crc32c, &whole, err);
    }
    if (rc == BATON_OK && lo < hi) cache_piece(l, p, lo, piece->data + (lo - at), (size_t)(hi - lo), whole);
    return rc;
}

/* Read the next block's ranges from the fetcher into the arena; permute the positions it hands
 * out into arena slots. */
static int plan_rest(baton_loader *l, baton_err *err);
static int assemble_block(baton_loader *l, baton_err *err)
{
    l->arena.len = 0;
    l->nrecs = 0;
    int rc = plan_rest(l, err);
    if (rc) return rc;
    for (;;) {
        if (l->plan_next >= l->plan_len)
            return baton_err_set(err, BATON_ERR_FORMAT, "internal: streamed plan ran out");
        const plan_seg *p = &l->plan[l->plan_next];
        const char *name = l->m.shards[p->shard].file;
        if ((rc = block_scratch(l, p->n, err))) return rc;
        l->reader = baton_rec_reader_new(l->m.format, name, p->start);
        if (!l->reader) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        uint64_t got = 0, at = p->fstart;
        baton_fetch_piece piece;
        int last = 0;
        while (!last && rc == BATON_OK) {
            rc = io_fetch_next(l->fetch, &piece, err);
            if (rc != BATON_OK) break;
            if (piece.tag != l->plan_base + l->plan_next || piece.offset != at) {
                io_fetch_release(l->fetch, &piece);
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: internal: piece at %llu, expected %llu", name,
                                   (unsigned long long)piece.offset, (unsigned long long)at);
                break;
            }
            /* the records' bytes in this piece (the rest only completes its first or last piece) */
            uint64_t lo = at > p->start ? at : p->start, hi = at + piece.len < p->end ? at + piece.len : p->end;
            if ((rc = check_piece(l, p, at, &piece, lo, hi, err)) != BATON_OK) {
                io_fetch_release(l->fetch, &piece);
                break;
            }
            /* lent, not copied: the records come out of the piece itself (only one that crosses
             * its edge is copied by the reader); the piece goes back once they are in the arena */
            if (lo < hi) rc = baton_rec_reader_feed_ref(l->reader, piece.data + (lo - at), (size_t)(hi - lo), err);
            at += piece.len;
            last = piece.last;
            l->st.bytes_read += piece.len;
            io_loader_count_fetched(l, p->epoch, piece.len);
            if (last) baton_rec_reader_finish(l->reader);
            baton_rec r;
            while (rc == BATON_OK && (rc = baton_rec_reader_next(l->reader, &r, err)) == BATON_OK) {
                if (++got > p->count) {
                    rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: more records in bytes %llu..%llu than the index says",
                                       name, (unsigned long long)p->start, (unsigned long long)p->end);
                    break;
                }
                l->slot[p->bfirst + got - 1] = l->nrecs;
                rc = arena_add(l, &r, p->shard, err);
            }
            io_fetch_release(l->fetch, &piece);
            if (rc == BATON_NEED_MORE || rc == BATON_END) rc = BATON_OK;
        }
        baton_rec_reader_free(l->reader);
        l->reader = NULL;
        if (rc == BATON_END) rc = baton_err_set(err, BATON_ERR_TRUNCATED, "%s: stream ended early", name);
        if (rc == BATON_OK && got != p->count)
            rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: %llu records in bytes %llu..%llu, the index says %llu",
                               name, (unsigned long long)got, (unsigned long long)p->start,
                               (unsigned long long)p->end, (unsigned long long)p->count);
        if (rc) return rc;
        l->plan_next++;
        if (p->last_of_block) break;
    }
    const plan_seg *p = &l->plan[l->plan_next - 1];
    if (p->n > l->cap_bperm) {
        uint64_t *b = realloc(l->bperm, p->n * sizeof *b);
        if (!b) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        l->bperm = b;
        l->cap_bperm = p->n;
    }
    io_block_permutation(l->o.seed, p->epoch, p->block, p->n, !l->o.no_shuffle, l->bperm);
    for (uint64_t i = p->lo; i < p->hi; i++) l->bperm[i] = l->slot[l->bperm[i]];
    l->blk_epoch = p->epoch;
    l->blk_block = p->block;
    l->blk_pos = p->lo;
    l->blk_end = p->hi;
    l->blk_valid = 1;
    return BATON_OK;
}

int io_stream_plan_ahead(baton_loader *l, baton_err *err)
{
    int rc = BATON_OK;
    if (l->rest_b != UINT64_MAX) rc = plan_blocks(l, l->rest_epoch, l->rest_b, 0, PLAN_ALL, err);   /* in order */
    if (rc == BATON_OK && l->planned_through <= l->cur.epoch)
        rc = plan_blocks(l, l->cur.epoch, l->o.rank, 0, PLAN_ALL, err);
    if (rc == BATON_OK && l->planned_through <= l->cur.epoch + 1 && io_loader_epoch_streamed(l, l->cur.epoch + 1))
        rc = plan_blocks(l, l->cur.epoch + 1, l->o.rank, 0, PLAN_ALL, err);
    return rc;
}

/* The blocks left from rest_b on, as far as `how` says; once none is left, the next epoch's. */
static int plan_rest_as(baton_loader *l, int how, baton_err *err)
{
    int rc = plan_blocks(l, l->rest_epoch, l->rest_b, 0, how, err);
    return rc == BATON_OK && l->rest_b == UINT64_MAX ? io_stream_plan_ahead(l, err) : rc;
}

/* The blocks a seek left unplanned (their shards' indexes had not arrived): those whose indexes
 * are in now — all of them, waiting, when nothing planned is left to read — and once none is
 * left, the next epoch's as io_stream_plan_ahead does. */
static int plan_rest(baton_loader *l, baton_err *err)
{
    if (l->rest_b == UINT64_MAX) return BATON_OK;
    int must = l->plan_next >= l->plan_len;
    if (l->hold_ahead) {   /* held: only the block the reader needs next, once it needs it */
        if (!must || (l->blk_valid && l->blk_pos < l->blk_end)) return BATON_OK;
        return plan_blocks(l, l->rest_epoch, l->rest_b, 0, PLAN_FIRST, err);
    }
    return plan_rest_as(l, must ? PLAN_ALL : PLAN_READY, err);
}

int io_stream_seek(baton_loader *l, baton_err *err)
{
    io_stream_reset(l);
    baton_fetch *f = io_fetch_new(l->store, &l->sfetch, err);
    if (!f) return err->code;
    io_loader_set_fetch(l, &l->fetch, f, 0);
    uint64_t size = io_stream_epoch_size(l->total, l->block, l->o.rank, l->o.world);
    if (l->cur.position >= size) return BATON_OK;  /* at the end: next() ends the epoch */
    uint64_t b, within;
    io_stream_locate(l->total, l->block, l->o.rank, l->o.world, l->cur.position, &b, &within);
    /* the first block is fetched while the other shards' indexes still arrive, and the blocks
     * after it are planned as theirs come in (plan_rest): a launch waits for the first block and
     * its own shards' indexes, not for every index (204 objects: 0.3 s from a gateway) */
    int rc = plan_blocks(l, l->cur.epoch, b, within, PLAN_FIRST, err);
    if (rc == BATON_OK && l->rest_b == UINT64_MAX && !l->hold_ahead) rc = io_stream_plan_ahead(l, err);
    if (rc == BATON_OK) rc = assemble_block(l, err);
    if (rc == BATON_OK) rc = plan_rest(l, err);
    return rc;
}

int io_stream_release(baton_loader *l, baton_err *err)
{
    if (!l->fetch) return BATON_OK;   /* not streaming now: a seek plans as usual */
    /* the blocks whose indexes are in; the others as plan_rest takes them */
    return l->rest_b != UINT64_MAX ? plan_rest_as(l, PLAN_READY, err) : io_stream_plan_ahead(l, err);
}

int io_stream_next(baton_loader *l, baton_record *out, baton_err *err)
{
    if (!l->blk_valid || l->blk_pos >= l->blk_end || l->blk_epoch != l->cur.epoch) {
        int rc = assemble_block(l, err);
        if (rc) return rc;
        if (l->blk_epoch != l->cur.epoch)
            return baton_err_set(err, BATON_ERR_FORMAT, "internal: streamed epoch mismatch");
    }
    const blk_rec *r = &l->recs[l->bperm[l->blk_pos++]];
    out->data = l->arena.data + r->at;
    out->len = r->len;
    out->shard = r->shard;
    out->offset = r->offset;
    return BATON_OK;
}

