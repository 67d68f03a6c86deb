/* rec_writer.h — the shard writer: records and their .idx file written crash-safe (part of rec.h,
 * which includes it; src/rec/shard.c).
 *
 * Contract: as rec.h's. */
#ifndef BATON_REC_WRITER_H
#define BATON_REC_WRITER_H

#include "baton/rec.h"

/* ---------------------------------------------------------------- shard writer */
/* Writes one shard crash-safely: frames go to "<final>.tmp.<pid>" (and the index to its own temp
 * file); _commit fsyncs both, renames them to their final names and fsyncs the directory. Until
 * then no file exists under a final name. Keeps the running CRC32C and size of the shard file.
 * An index line is written for every record (key = running record number unless given). */
typedef struct baton_shard_writer baton_shard_writer;
#define BATON_SHARD_KEY_AUTO UINT64_MAX   /* _add key: use the running record number */
baton_shard_writer *baton_shard_writer_open(const char *rec_path, const char *idx_path,
                                            baton_rec_format fmt, baton_err *err);
int baton_shard_writer_add(baton_shard_writer *w, uint64_t key, const void *payload, size_t n,
                           baton_err *err);
uint64_t baton_shard_writer_bytes(const baton_shard_writer *w);
uint64_t baton_shard_writer_records(const baton_shard_writer *w);
uint32_t baton_shard_writer_crc32c(const baton_shard_writer *w);
uint64_t baton_shard_writer_idx_bytes(const baton_shard_writer *w);
uint32_t baton_shard_writer_idx_crc32c(const baton_shard_writer *w);
/* Piece checksums: before the first _add, piece_bytes > 0 asks for the CRC32C of every
 * piece_bytes of the shard file ([k·piece_bytes, (k+1)·piece_bytes), the last one shorter), which
 * _pieces returns (*n of them, valid until _commit or _abort; the last one final once every record
 * was added). BATON_ERR_ARG after an _add or for a size outside BATON_PIECE_BYTES_MIN..MAX. */
int baton_shard_writer_set_pieces(baton_shard_writer *w, uint64_t piece_bytes, baton_err *err);
const uint32_t *baton_shard_writer_pieces(const baton_shard_writer *w, size_t *n);
int baton_shard_writer_commit(baton_shard_writer *w, baton_err *err);  /* frees w */
void baton_shard_writer_abort(baton_shard_writer *w);                  /* removes temps, frees */

#endif
