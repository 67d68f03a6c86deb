/* io_internal.h — shared between the io files (not public; its tests include it): the fetch
 * thread that streams ranges in order (fetch.c), the shard permutation of the streamed order, the
 * epoch layouts that order.c computes and loader.c walks, and verified local copies. */
#ifndef BATON_IO_INTERNAL_H
#define BATON_IO_INTERNAL_H

#include "baton/io.h"

#include <pthread.h>

/* ---------------------------------------------------------------- fetch (fetch.c): the thread
 * behind the loader's streamed reads and downloads; its options (baton_fetch_opts) are in io.h */
typedef struct baton_fetch_piece {
    uint64_t tag;           /* the tag given to io_fetch_add */
    uint64_t offset;        /* object offset of data[0] */
    const uint8_t *data;
    size_t len;
    int last;               /* 1 on the final piece of that range */
    uint64_t object_size;   /* the object's size as the store told it with this piece (a local
                               file's size when opened, a Content-Range total); UINT64_MAX: not
                               told. A reader compares it with the size it expects. */
    uint32_t crc32c;        /* baton_crc32c(0, data, len), summed by the I/O thread as the bytes
                               arrived, so a reader checks them without a pass of its own */
    void *priv_;
} baton_fetch_piece;

typedef struct baton_fetch baton_fetch;
baton_fetch *io_fetch_new(baton_store *s, const baton_fetch_opts *o, baton_err *err);
/* Queue the range [off, off+len) of object name (len = UINT64_MAX: to the end). Ranges are
 * delivered in the order they were added. */
int io_fetch_add(baton_fetch *f, const char *name, uint64_t off, uint64_t len, uint64_t tag,
                    baton_err *err);
void io_fetch_close_input(baton_fetch *f);   /* no more ranges: next returns END after them */
/* Block until the next in-order piece. OK, END, or an error (sticky). Each piece is one complete
 * chunk (at most chunk_bytes; an empty range gives one empty piece with last = 1); it stays valid
 * until released. Held pieces count against max_buffered: a caller that holds all
 * max_buffered / chunk_bytes of them and asks for more gets BATON_ERR_ARG instead of a deadlock.
 * The store must outlive the fetch. */
int io_fetch_next(baton_fetch *f, baton_fetch_piece *p, baton_err *err);
/* The same without waiting: BATON_NEED_MORE when the next in-order piece has not arrived yet. */
int io_fetch_next_nowait(baton_fetch *f, baton_fetch_piece *p, baton_err *err);
void io_fetch_release(baton_fetch *f, baton_fetch_piece *p);
/* *pf replaced by `by` under mu, the old fetch's retries and bytes added to st (and to its
 * open_fetched when `open`) and its requests to *requests (may be NULL), then freed (its transfers
 * stop): a thread that reads *pf's counts under mu never meets a freed fetch. */
void io_fetch_replace(baton_fetch **pf, baton_fetch *by, pthread_mutex_t *mu, baton_loader_stats *st, int open,
                      uint64_t *requests);
/* Counters for benchmarks and tests: bytes is every body byte received, including those of
 * transfers stopped by io_fetch_free or an error. */
typedef struct baton_fetch_stats {
    uint64_t requests, retries, bytes;
} baton_fetch_stats;
void io_fetch_get_stats(const baton_fetch *f, baton_fetch_stats *st);
/* Its retries and bytes added to a loader's stats (and to their open_fetched when `open`). */
void io_fetch_add_stats(const baton_fetch *f, baton_loader_stats *st, int open);
void io_fetch_free(baton_fetch *f);

/* ---------------------------------------------------------------- orders (order.c); what they
 * are is described in io.h, above baton_loader_opts */
/* shuffle 0: every order below is the identity (shards in manifest order, records in file order) */
void io_order_shards(uint64_t seed, uint64_t epoch, size_t nshards, int shuffle, uint64_t *perm);

/* ---------------------------------------------------------------- epoch layouts (order.c) */
/* A contiguous run of records inside one shard. */
typedef struct io_segment {
    uint32_t shard;
    uint64_t first;     /* record number within the shard */
    uint64_t count;
} io_segment;

/* Streamed order of one epoch for one worker: the worker's blocks, each a list of segments. */
typedef struct io_stream_layout {
    uint64_t block;           /* records per block (the last block of the epoch may be shorter) */
    uint64_t nblocks;         /* blocks in the whole epoch (all workers) */
    uint64_t *shard_perm;     /* nshards: the epoch's shard order */
    uint64_t *start;          /* nshards + 1: first global record (in epoch order) of perm[i] */
} io_stream_layout;

/* Records in the whole dataset and in block b of an epoch. */
uint64_t io_block_size(uint64_t total, uint64_t block, uint64_t b);
/* Number of records worker rank of world gets per epoch in streamed order. */
uint64_t io_stream_epoch_size(uint64_t total, uint64_t block, uint32_t rank, uint32_t world);
/* Worker-local position → (block number, index within block). */
void io_stream_locate(uint64_t total, uint64_t block, uint32_t rank, uint32_t world,
                      uint64_t position, uint64_t *b, uint64_t *within);
int io_stream_layout_init(io_stream_layout *L, const baton_manifest *m, uint64_t seed,
                          uint64_t epoch, uint64_t block, int shuffle, baton_err *err);
void io_stream_layout_free(io_stream_layout *L);
/* Segments of block b (at most nshards + 1 of them); returns how many. */
size_t io_stream_block_segments(const io_stream_layout *L, const baton_manifest *m, uint64_t b,
                                io_segment *seg, size_t cap);
/* The permutation of a block's records: out[i] = which record of the block comes i-th. */
void io_block_permutation(uint64_t seed, uint64_t epoch, uint64_t b, uint64_t n, int shuffle, uint64_t *out);

/* Indexed order: global record numbers (shard-major: shard 0's records first) of the epoch. */
uint64_t io_indexed_epoch_size(uint64_t total, uint32_t rank, uint32_t world);
void io_indexed_permutation(uint64_t seed, uint64_t epoch, uint64_t total, int shuffle, uint64_t *perm);
/* The streamed order of one epoch for worker rank of world as global record numbers (as the
 * indexed permutation gives them): perm[p] = the record the worker's position p holds;
 * shard_first as the loader keeps it (nshards + 1 entries). */
int io_stream_permutation(const baton_manifest *m, uint64_t seed, uint64_t epoch, uint64_t block, int shuffle,
                          uint32_t rank, uint32_t world, const uint64_t *shard_first, uint64_t *perm,
                          baton_err *err);

/* Shards checked against dataset.json as their bytes pass (verify.c): per shard, the bytes seen
 * in one pass (an epoch) and the XOR of their CRC32C terms, in whatever order they come. */
typedef struct io_verify {
    size_t n;
    uint64_t *seen;
    uint32_t **sums;    /* per shard (on first use): the terms, by MiB of distance from its end */
    uint64_t pass;
    int started;
} io_verify;
int io_verify_init(io_verify *v, size_t nshards, baton_err *err);
void io_verify_free(io_verify *v);
void io_verify_reset(io_verify *v, const baton_manifest *m);   /* a seek: forget the pass's sums */
/* The store told `told` bytes (UINT64_MAX: nothing) for object name with its bytes at offset
 * `at`; dataset.json says `expect`. BATON_ERR_CORRUPT naming both when they differ. */
int io_verify_size(const char *uri, const char *name, uint64_t expect, uint64_t told, uint64_t at, baton_err *err);
/* n bytes of shard s of m at offset `at`, whose CRC32C is crc (baton_crc32c(0, bytes, n)), passed
 * in pass `pass` (a new pass forgets the last): summed, and once every byte of the shard passed
 * in this pass, its CRC32C is compared with dataset.json (BATON_ERR_CORRUPT naming the shard).
 * *whole (may be NULL): 1 when this call completed the shard and it matched. */
int io_verify_add(io_verify *v, const char *uri, const baton_manifest *m, uint32_t s, uint64_t pass, uint64_t at,
                  uint64_t n, uint32_t crc, int *whole, baton_err *err);

/* Pieces (pieces.c): a shard's bytes against dataset.json's piece_crc32c before any record is
 * decoded from them. A shard without pieces (an older dataset) passes every call unchecked. */
/* [start, end) widened to the whole pieces around it (unchanged without pieces). */
void io_piece_span(const baton_shard_info *si, uint64_t start, uint64_t end, uint64_t *lo, uint64_t *hi);
/* Bytes [at, at+n) of shard si, whole pieces (at on a piece boundary, at+n on one or at the
 * shard's end), whose CRC32C is crc: BATON_OK when each piece is the one dataset.json lists, else
 * BATON_ERR_CORRUPT naming the shard, the first piece that differs (byte range) and both CRC32Cs. */
int io_piece_check(const char *uri, const baton_shard_info *si, uint64_t at, const uint8_t *data, size_t n,
                   uint32_t crc, baton_err *err);
/* Fetch options (defaults filled in) whose chunks hold whole pieces of every shard of m. */
int io_piece_fetch_opts(const baton_manifest *m, baton_fetch_opts *fo, baton_err *err);
/* One warning when shards of m have no pieces (uri: the dataset's). */
void io_pieces_warn_old(const char *uri, const baton_manifest *m);

/* Local shard files for the indexed order (shardfile.c; mount mode's folder, file and cache mode's
 * copy): read with pread (a file cut short under
 * the reader is an error naming it, never SIGBUS), each piece checked against dataset.json before
 * a byte of it is returned and kept in a bounded cache of checked pieces. */
typedef struct io_shardfile io_shardfile;
/* Open and size-check every shard of m in folder dir (uri, copied: the folder as errors name it,
 * ending in '/'). */
int io_shardfile_open(io_shardfile **out, const char *uri, const char *dir, const baton_manifest *m,
                      size_t cache_bytes, baton_err *err);
/* Bytes [at, end) of shard s: *p valid until the next call. Checked piece by piece when the shard
 * has pieces; else read as they are (the caller sums the whole shard). */
/* The same without opening any shard yet: each is opened and size-checked at its first read (a
 * shard that another process is still downloading). */
int io_shardfile_new(io_shardfile **out, const char *uri, const char *dir, const baton_manifest *m,
                     size_t cache_bytes, baton_err *err);
/* A local copy that was checked whole as it was written: each piece is checked the first time this
 * reader needs it; once checked and dropped from the cache, its records are read as they are. */
int io_shardfile_check_once(io_shardfile *f, baton_err *err);
int io_shardfile_read(io_shardfile *f, uint32_t s, uint64_t at, uint64_t end, const uint8_t **p, baton_err *err);
void io_shardfile_close(io_shardfile *f);

/* Verified local copies (localcopy.c). */
typedef struct io_sink {
    const baton_shard_info *si;
    char final[4096], part[4200];
    int fd;
    uint64_t written;
    uint32_t crc;
    int crc_given;   /* the caller checks the CRC32C as the bytes pass (io_sink_write does not)
                        and sets crc to the verified value before the commit */
} io_sink;
int io_sink_open(io_sink *s, const char *dir, const baton_shard_info *si, baton_err *err);
int io_sink_write(io_sink *s, const void *p, size_t n, baton_err *err);
int io_sink_commit(io_sink *s, baton_err *err);   /* verify size + CRC32C, then rename */
void io_sink_abort(io_sink *s);
/* 1 when dir holds a whole copy of the shard (size and CRC32C as the manifest says). */
int io_local_valid(const char *dir, const baton_shard_info *si);
/* Download every shard not already valid in dir (one re-download on a checksum mismatch).
 * written (NULL, or one flag per shard): copies this process wrote through an io_sink and
 * committed — their size and CRC32C were checked as they were written — are trusted when their
 * size still matches, without reading them back. */
int io_download(baton_store *store, const baton_manifest *m, const char *dir, const uint8_t *written,
                const baton_fetch_opts *fo, baton_loader_stats *st, baton_err *err);
/* The same for the listed shards only, in that order (list NULL: all); *cancel (may be NULL)
 * becoming non-zero stops it between two pieces (BATON_ERR_ARG, "cancelled"). */
int io_download_some(baton_store *store, const baton_manifest *m, const char *dir, const uint8_t *written,
                     const uint32_t *list, size_t nlist, const int *cancel, const baton_fetch_opts *fo,
                     baton_loader_stats *st, baton_err *err);

/* File mode's copy filled while the first epoch reads it (fill.c; its contract there): the files
 * opened or created in dir (uri: how errors name it), the download thread started, waiting for
 * io_fill_start. Every shard of m must have pieces. */
typedef struct io_fill io_fill;
int io_fill_open(io_fill **out, baton_store *store, const baton_manifest *m, const char *dir, const char *uri,
                 const baton_fetch_opts *fo, baton_err *err);
void io_fill_start(io_fill *f);   /* the download begins (after the first batch's records were asked for) */
/* Bytes [at, end) of shard s will be read soon: the pieces of them nobody fetches yet, asked for. */
int io_fill_want(io_fill *f, uint32_t s, uint64_t at, uint64_t end, baton_err *err);
/* The pieces asked for and not read yet forgotten (a seek elsewhere): asked again when needed. */
int io_fill_forget(io_fill *f, baton_err *err);
/* Bytes [at, end) of shard s, every piece of them checked: *p valid until the next call. */
int io_fill_read(io_fill *f, uint32_t s, uint64_t at, uint64_t end, const uint8_t **p, baton_err *err);
/* Store bytes received since the last poll; *done 1 once every shard has its final name; the
 * download's failure. */
int io_fill_poll(io_fill *f, uint64_t *got, int *done, baton_err *err);
/* Bytes, retries, shards and record requests added to st: safe from any thread until io_fill_close. */
void io_fill_stats(io_fill *f, baton_loader_stats *st);
/* The copy whole (or the reading over): the download thread joined, the fetches and files closed;
 * io_fill_stats still answers (the loader keeps a retired fill until it closes). */
void io_fill_retire(io_fill *f);
void io_fill_close(io_fill *f);

/* Open a shard file read-only into *fd, checked: a regular file of the size dataset.json says
 * (BATON_ERR_CORRUPT naming both sizes otherwise); the fd is closed on any error (loader.c). */
int io_open_shard(const char *path, const baton_shard_info *si, int *fd, baton_err *err);

#endif
