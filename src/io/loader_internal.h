/* loader_internal.h — shared by loader.c (opening, the indexed order, the cursor API) and
 * stream.c (the streamed order): the loader object itself. Not public. */
#ifndef BATON_LOADER_INTERNAL_H
#define BATON_LOADER_INTERNAL_H

#include "io_internal.h"

#include <pthread.h>

typedef struct plan_seg {   /* one fetched range: a run of records of one shard */
    uint64_t epoch, block;
    uint32_t shard;
    uint64_t first, count;  /* records */
    uint64_t start, end;    /* bytes of those records */
    uint64_t fstart, fend;  /* bytes fetched: [start, end) widened to whole pieces */
    uint64_t bfirst;        /* index of record `first` within its block */
    uint64_t n, lo, hi;     /* the block's records, and the positions [lo, hi) of its permutation
                               that are handed out (the rest are not needed: before a resume
                               point, or past the end) */
    int last_of_block;
} plan_seg;

typedef struct blk_rec {
    size_t at, len;         /* in the block arena */
    uint32_t shard;
    uint64_t offset;
} blk_rec;

struct baton_loader {
    baton_loader_opts o;
    char *uri, *local_dir;
    baton_store *store;
    baton_manifest m;
    uint64_t **off;         /* per shard: byte offset of each record (from the .idx); NULL until
                             * its index arrived (io_loader_index) */
    baton_fetch *ifetch;    /* the indexes still arriving (pipe and cache mode); NULL once all came */
    baton_buf ibuf;         /* the index being assembled from ifetch's pieces */
    uint64_t *iorder;       /* the shards in the order their indexes are asked for */
    size_t iasked;          /* of them, asked for so far (the first alone, the rest once it came) */
    int iall;               /* the indexes come in one file (dataset.json's "indexes"), in shard order */
    size_t inext, ioff;     /* iall: the shard whose index is next in it, and where in ibuf */
    uint64_t *shard_first;  /* per shard: global number of its first record (shard-major) */
    uint64_t total, block;
    baton_cursor cur;
    baton_cursor end;       /* has_end: nothing at or past it is fetched or handed out */
    int has_end;
    int positioned;
    int hold_ahead;         /* baton_loader_hold_ahead: only the block being read is fetched */
    int streamed;           /* current epoch uses the streamed order */
    int cache_off;          /* cache mode: caching disabled (disk full) */
    int cache_ready;        /* cache mode: local copy complete */
    uint8_t *cache_written; /* cache mode: per shard, copy written and committed by this process */
    baton_loader_stats st;
    uint64_t *ep_fetched;   /* store bytes for the records of epoch ep_base + i */
    uint64_t ep_base;
    size_t ep_len;

    /* local (indexed) reading, with pread through sf: mount mode's folder, file and cache mode's copy */
    io_shardfile *sf;
    char *local_uri;        /* local_dir ending in '/': how errors name the copy's files */
    uint8_t *local_ok;      /* file and cache mode: per shard, the copy in place and checked */
    uint64_t *perm, perm_epoch;
    int perm_valid;
    baton_buf scratch;

    /* streamed reading */
    baton_fetch_opts sfetch;  /* o.fetch with chunks of whole pieces (io_piece_fetch_opts) */
    baton_fetch *fetch;
    plan_seg *plan;
    size_t plan_len, plan_cap, plan_next;  /* next plan entry whose data we consume */
    uint64_t plan_base;                    /* fetch tag of plan[0]: consumed entries are dropped */
    uint64_t planned_through;              /* epochs < this are in the plan (but rest_b's blocks) */
    uint64_t rest_epoch, rest_b;           /* blocks of rest_epoch from rest_b on wait to be planned
                                            * (their shards' indexes still arriving); rest_b
                                            * UINT64_MAX: none */
    baton_buf arena;
    blk_rec *recs;
    size_t nrecs, cap_recs;
    uint64_t *bperm;        /* the block's permutation, then (for [lo, hi)) arena slots */
    size_t cap_bperm;
    size_t *slot;           /* record index within the block -> arena slot */
    uint8_t *need;          /* planning: records of the block that are handed out */
    size_t cap_block;       /* of slot, need and pperm */
    uint64_t *pperm;        /* planning: the block's permutation */
    uint64_t blk_epoch, blk_block, blk_pos, blk_end;  /* the assembled block; next and end index */
    int blk_valid;
    baton_rec_reader *reader;
    io_sink sink;
    int sink_open;
    uint32_t sink_shard;

    io_fill *fill;          /* file mode: the copy filling while it is read (fill.c); retired once
                             * whole (fill_whole), freed at close */
    int fill_whole;
    int dl_lock;            /* file mode: the folder's download turn while fill runs; -1 */
    uint64_t fill_epoch;    /* the epoch whose positions below fill_asked had their pieces asked for */
    uint64_t fill_asked;
    uint64_t fill_read_to;  /* of them, the reader read those below this */
    uint64_t fill_reads;    /* records read through fill (FILL_START of them start the download) */
    int fill_started;
    pthread_mutex_t stats_mu; /* fetch and ifetch are replaced under it (io_loader_set_fetch), so
                               * baton_loader_get_stats from another thread never reads a freed one */
    struct io_share *share; /* a local copy shared by the ranks of a machine (share.c), or NULL */
    io_verify verify;       /* streamed and mount-mode reads: each shard against dataset.json */
};

/* loader.c, for stream.c: shard s's record offsets in l->off[s], taking the indexes that arrive
 * before it (in pipe and cache mode they stream in behind the open: the first block waits only
 * for its own shards' indexes). */
int io_loader_index(baton_loader *l, uint32_t s, baton_err *err);
/* The same without waiting: *ready 1 when shard s's index is in (those that arrived taken). */
int io_loader_index_ready(baton_loader *l, uint32_t s, int *ready, baton_err *err);

/* *pf (l->fetch or l->ifetch) replaced by `by` under stats_mu, the old one's counts added to l->st
 * (and to its open_fetched when `open`) and then freed. */
void io_loader_set_fetch(baton_loader *l, baton_fetch **pf, baton_fetch *by, int open);

/* loader.c, for loader_fill.c: the local copy read through the pread reader (lazy: each shard
 * opened at its first read), and the folder made a dataset (its dataset.json; the shards' own .idx
 * files when the indexes came in one). */
int io_loader_open_local(baton_loader *l, int lazy, baton_err *err);
int io_loader_write_local(baton_loader *l, baton_err *err);

/* loader_fill.c: file mode's copy filled while it is read (its contract there). */
static inline int io_loader_filling(const baton_loader *l) { return l->fill && !l->fill_whole; }
int io_loader_fill_launch(baton_loader *l, baton_err *err);   /* at the open: epoch 0's first records */
int io_loader_fill_seek(baton_loader *l, baton_err *err);     /* at a seek (l->perm: the cursor's epoch) */
int io_loader_fill_ahead(baton_loader *l, baton_err *err);    /* before a record is read */
/* What arrived counted into the cursor's epoch; the copy taken over once whole when `take`. */
int io_loader_fill_poll(baton_loader *l, int take, baton_err *err);

/* loader.c, for share.c */
/* The shard holding global record g. */
uint32_t io_loader_shard_of(const baton_loader *l, uint64_t g);
/* The worker's order of `epoch`: perm[p] = the global record number at the worker's position p
 * (l->total entries at most). */
int io_loader_order(const baton_loader *l, uint64_t epoch, uint64_t *perm, baton_err *err);

/* share.c: one local copy for the loaders of one machine (share_size > 1) */
typedef struct io_share io_share;
int io_share_open(baton_loader *l, baton_err *err);
void io_share_close(baton_loader *l);
/* At a seek (l->perm holding the cursor's epoch): the shards needed from the cursor to the end;
 * this loader's downloader (re)started for its part when needed. */
int io_share_plan(baton_loader *l, baton_err *err);
/* Shard s in place and checked, then marked in l->local_ok (waiting for it, bounded). */
int io_share_take(baton_loader *l, uint32_t s, baton_err *err);
/* Per record: the downloader's bytes counted, its failure returned. */
int io_share_poll(baton_loader *l, baton_err *err);
void io_share_stats(const baton_loader *l, baton_loader_stats *st);
uint32_t io_share_owner(const baton_loader *l, uint32_t s);

/* stream.c: the streamed order (pipe mode, cache mode's first epoch). */
/* Whether `epoch` is read in the streamed order. */
int io_loader_epoch_streamed(const baton_loader *l, uint64_t epoch);
/* 1 when record `position` of `epoch` is at or past the end the caller set. */
int io_loader_past_end(const baton_loader *l, uint64_t epoch, uint64_t position);
/* Byte offset where record j of shard s ends (the next record's offset, or the shard's size). */
uint64_t io_loader_rec_end(const baton_loader *l, uint32_t s, uint64_t j);
/* Count n store bytes for the records of `epoch` (baton_loader_epoch_fetched). */
void io_loader_count_fetched(baton_loader *l, uint64_t epoch, uint64_t n);
/* Drop the fetcher, the plan and the assembled block (counting what was fetched). */
void io_stream_reset(baton_loader *l);
/* Start streaming at l->cur: plan from its block on and assemble that block. */
int io_stream_seek(baton_loader *l, baton_err *err);
/* Keep the plan one epoch ahead of l->cur (up to the end). */
int io_stream_plan_ahead(baton_loader *l, baton_err *err);
/* baton_loader_hold_ahead's release: plan what the hold kept back. */
int io_stream_release(baton_loader *l, baton_err *err);
/* The next record of the current epoch (the caller checks the epoch's size and the end). */
int io_stream_next(baton_loader *l, baton_record *out, baton_err *err);

#endif
