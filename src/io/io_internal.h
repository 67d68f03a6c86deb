/* io_internal.h — shared between the io files (not public): the epoch layouts that order.c
 * computes and loader.c walks. */
#ifndef BATON_IO_INTERNAL_H
#define BATON_IO_INTERNAL_H

#include "baton/io.h"

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
                          uint64_t epoch, uint64_t block, baton_err *err);
void io_stream_layout_free(io_stream_layout *L);
/* Segments of block b (at most nshards + 1 of them); returns how many. */
size_t io_stream_block_segments(const io_stream_layout *L, const baton_manifest *m, uint64_t b,
                                io_segment *seg, size_t cap);
/* The permutation of a block's records: out[i] = which record of the block comes i-th. */
void io_block_permutation(uint64_t seed, uint64_t epoch, uint64_t b, uint64_t n, uint64_t *out);

/* Indexed order: global record numbers (shard-major: shard 0's records first) of the epoch. */
uint64_t io_indexed_epoch_size(uint64_t total, uint32_t rank, uint32_t world);
void io_indexed_permutation(uint64_t seed, uint64_t epoch, uint64_t total, uint64_t *perm);

/* Verified local copies (localcopy.c). */
typedef struct io_sink {
    const baton_shard_info *si;
    char final[4096], part[4200];
    int fd;
    uint64_t written;
    uint32_t crc;
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

#endif
