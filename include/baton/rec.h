/* rec.h — record formats: MXNet RecordIO (.rec/.idx, image records with the 24-byte IRHeader),
 * TFRecord (masked CRC32C, payload = tf.train.Example), CRC32C, and the dataset manifest
 * (dataset.json). Byte layouts: REFERENCE.md §1–2.
 *
 * What it offers, in the order a caller uses it:
 *   1. Writing a dataset (src/rec/sample.c, shard.c, manifest.c): baton_sample_build turns an
 *      image and its labels into a payload; per shard baton_shard_writer_open, _add for every
 *      record, then _commit (or _abort); last baton_manifest_save of dataset.json.
 *   2. Reading one (src/rec/manifest.c, reader.c, recfile.c, idx.c, sample.c): baton_manifest_load
 *      (or _parse) of dataset.json; the records of a shard through a baton_rec_reader fed with its
 *      bytes (baton_rec_file_open for a whole local file), or one record at an .idx offset
 *      (baton_idx_parse, baton_rec_read_at); baton_sample_parse of each payload into a sample.
 *   3. Pieces for writers of other streams: baton_crc32c, the framing of one record
 *      (baton_recordio_frame, ...), and the names of formats and encodings.
 * The CRC32C variants behind the dispatcher, TFRecord's CRC masking, format detection, RecordIO
 * resynchronisation, loading and appending .idx files and the formats' constants are private to
 * src/rec (src/rec/rec_internal.h).
 *
 * Layering: rec depends only on util. Everything that reads shards (io, img, train) goes through
 * this header.
 *
 * Error contract: every length read from outside is checked before use. Readers distinguish a
 * clean end (BATON_END), a truncated record (BATON_ERR_TRUNCATED), a corrupted record
 * (BATON_ERR_CORRUPT: bad magic, CRC mismatch, impossible continuation flag) and an unsupported
 * file (BATON_ERR_FORMAT: legacy RecordIO magic, …); messages name the stream and byte offset:
 *   "train-00000.rec: offset 4096: bad magic 0x00000000 (expected 0xced7230a)". */
#ifndef BATON_REC_H
#define BATON_REC_H

#include "baton/util.h"

/* ---------------------------------------------------------------- CRC32C (Castagnoli) */
/* zlib-style running CRC: baton_crc32c(0, p, n) is the standard CRC32C of p, and
 * baton_crc32c(baton_crc32c(0, a, na), b, nb) equals the CRC of a followed by b.
 * The dispatcher uses the SSE4.2 instruction when the CPU has it, else the table path. */
uint32_t baton_crc32c(uint32_t crc, const void *p, size_t n);
/* The CRC32C of a whole summed from its pieces in any order: baton_crc32c_shift(crc, n) moves the
 * CRC of a piece (baton_crc32c(0, piece, len)) over n bytes that follow it, and the XOR over the
 * pieces that tile a whole of each one's CRC shifted by the bytes after it is the CRC32C of the
 * whole (zlib's crc32_combine: crc(A‖B) = shift(crc(A), len B) ^ crc(B)). Shifts add —
 * shift(shift(c, a), b) = shift(c, a + b) — and a shift of an XOR is the XOR of the shifts, so
 * pieces can be summed near the end and moved the rest of the way once. No pass over the bytes:
 * four table lookups per bit set in n. */
uint32_t baton_crc32c_shift(uint32_t crc, uint64_t n);

/* ---------------------------------------------------------------- formats */
typedef enum baton_rec_format {
    BATON_FMT_UNKNOWN = 0,
    BATON_FMT_RECORDIO = 1,
    BATON_FMT_TFRECORD = 2,
} baton_rec_format;
const char *baton_rec_format_name(baton_rec_format f);        /* "recordio" / "tfrecord" */
int baton_rec_format_parse(const char *s, baton_rec_format *f); /* BATON_OK or BATON_ERR_ARG */

/* Image encodings a record payload may carry. Defined here because TFRecord Examples and the
 * manifest name them; img/ implements the codecs. */
typedef enum baton_encoding {
    BATON_ENC_UNKNOWN = -1,
    BATON_ENC_RAW = 0,    /* u8 pixels, H×W×C (HWC), shape from the manifest or the Example */
    BATON_ENC_PNG = 1,
    BATON_ENC_JPEG = 2,
} baton_encoding;
const char *baton_encoding_name(baton_encoding e);            /* "raw" / "png" / "jpeg" */
int baton_encoding_parse(const char *s, baton_encoding *e);

/* ---------------------------------------------------------------- framing (writers) */
/* Append one framed record to out: RecordIO with dmlc-core's escaping of magic words at 4-byte
 * aligned payload offsets (multi-part records) and zero padding; TFRecord with length, masked
 * CRCs and no padding. Payload must be < 2^29 bytes for RecordIO. */
int baton_recordio_frame(baton_buf *out, const void *payload, size_t n, baton_err *err);
int baton_tfrecord_frame(baton_buf *out, const void *payload, size_t n, baton_err *err);
int baton_rec_frame(baton_rec_format f, baton_buf *out, const void *payload, size_t n,
                    baton_err *err);

/* ---------------------------------------------------------------- reading */
typedef struct baton_rec {
    const uint8_t *data;  /* payload; valid until the next call on the reader */
    size_t len;
    uint64_t offset;      /* stream offset of the record's first byte (RecordIO: its magic) */
    uint64_t size;        /* bytes the record occupies in the stream, framing and padding included */
} baton_rec;

/* A push parser that turns a byte stream into whole records. Bytes arrive in chunks of any size
 * (a network stream), a whole memory buffer, or a file; records are returned zero-copy when they
 * lie whole in the reader's buffer (multi-part RecordIO records are assembled in a scratch buffer).
 *
 *   r = baton_rec_reader_new(fmt, "name", start_offset);
 *   loop: feed bytes (baton_rec_reader_feed, or reserve/commit to read() straight into the
 *         reader's buffer); then call _next until it returns BATON_NEED_MORE;
 *   at end of input: baton_rec_reader_finish(r); _next then returns the remaining records and
 *         finally BATON_END (clean end) or BATON_ERR_TRUNCATED (input stopped mid-record).
 *
 * Errors are sticky: once _next fails, it keeps returning the same error.
 * fmt may be BATON_FMT_UNKNOWN: the reader detects it from the first bytes.
 * The optional checksum hook keeps a CRC32C of every byte fed (for whole-shard checksums in the
 * same pass). */
typedef struct baton_rec_reader baton_rec_reader;

baton_rec_reader *baton_rec_reader_new(baton_rec_format fmt, const char *name,
                                       uint64_t start_offset);
void baton_rec_reader_free(baton_rec_reader *r);
baton_rec_format baton_rec_reader_format(const baton_rec_reader *r);
void baton_rec_reader_enable_checksum(baton_rec_reader *r);
uint32_t baton_rec_reader_checksum(const baton_rec_reader *r);   /* CRC32C of all bytes fed */
uint64_t baton_rec_reader_fed(const baton_rec_reader *r);        /* total bytes fed so far */
/* Copy n bytes in. */
int baton_rec_reader_feed(baton_rec_reader *r, const void *p, size_t n, baton_err *err);
/* Lend n bytes instead of copying them: records lying whole in p[0, n) are parsed straight from
 * it, and only a record that crosses its edges is copied. p must stay valid and unchanged until
 * _next has returned NEED_MORE, END or an error (call _next until then before feeding more); the
 * reader's own copies need nothing afterwards. Same results, positions and checksum as _feed. */
int baton_rec_reader_feed_ref(baton_rec_reader *r, const void *p, size_t n, baton_err *err);
/* Zero-copy fill: get a writable region of at least min bytes (the reader compacts or grows its
 * buffer as needed), write into it, then commit how many bytes were written. */
int baton_rec_reader_reserve(baton_rec_reader *r, size_t min, uint8_t **p, size_t *cap,
                             baton_err *err);
void baton_rec_reader_commit(baton_rec_reader *r, size_t n);
void baton_rec_reader_finish(baton_rec_reader *r);
/* Zero-copy whole input: parse records straight from p[0, n), which is then the rest of the stream
 * (finish is implied). Only on a reader that has not been fed yet; p must stay valid and unchanged
 * until the reader is freed. The checksum (if enabled) is final once _next returns BATON_END. */
int baton_rec_reader_borrow(baton_rec_reader *r, const void *p, size_t n, baton_err *err);
/* Returns BATON_OK (rec filled), BATON_NEED_MORE, BATON_END, or an error. */
int baton_rec_reader_next(baton_rec_reader *r, baton_rec *rec, baton_err *err);
/* Stream offset of the first byte not yet consumed by _next (where a resumed stream restarts:
 * always a record boundary). */
uint64_t baton_rec_reader_position(const baton_rec_reader *r);

/* Convenience: read a whole file with a reader (read() in large chunks into the reader buffer).
 * f = baton_rec_file_open(path, fmt, &err); while ((rc = baton_rec_file_next(f,&rec,&err)) == OK) */
typedef struct baton_rec_file baton_rec_file;
baton_rec_file *baton_rec_file_open(const char *path, baton_rec_format fmt, int checksum,
                                    baton_err *err);
int baton_rec_file_next(baton_rec_file *f, baton_rec *rec, baton_err *err); /* OK / END / error */
baton_rec_format baton_rec_file_format(const baton_rec_file *f);
uint32_t baton_rec_file_checksum(const baton_rec_file *f);      /* valid after BATON_END */
uint64_t baton_rec_file_bytes(const baton_rec_file *f);
void baton_rec_file_close(baton_rec_file *f);

/* Parse exactly one record that starts at buf[0] from a memory buffer (random access through an
 * index). scratch is used for multi-part RecordIO records. Returns OK, TRUNCATED or CORRUPT. */
int baton_rec_read_at(baton_rec_format fmt, const uint8_t *buf, size_t n, uint64_t offset,
                      const char *name, baton_buf *scratch, baton_rec *rec, baton_err *err);

/* ---------------------------------------------------------------- .idx files */
/* MXNet index: text lines "key\toffset\n" (offset = byte position of the record start). We write
 * the same file for TFRecord shards. */
typedef struct baton_idx_entry {
    uint64_t key;
    uint64_t offset;
} baton_idx_entry;
/* Parse an .idx text. Errors name the line: "train-00000.idx: line 17: expected key<TAB>offset".
 * *out is malloc'd. */
int baton_idx_parse(const char *name, const char *text, size_t n, baton_idx_entry **out,
                    size_t *count, baton_err *err);

/* ---------------------------------------------------------------- samples (image records) */
/* A labelled image record, whichever format carried it.
 * RecordIO payload = IRHeader {u32 flag, f32 label, u64 id, u64 id2} (24 bytes, LE), then
 * flag × f32 labels if flag > 0, then the image bytes.
 * TFRecord payload = tf.train.Example with features image/encoded (bytes), image/format (bytes:
 * "raw"|"png"|"jpeg"), image/class/label (int64 list), image/height, image/width,
 * image/channels (int64), image/id (int64). */

typedef struct baton_sample {
    uint64_t id, id2;
    uint32_t nlabels;          /* >= 1 */
    float label;               /* the first label */
    const uint8_t *labels;     /* all labels, encoded: f32 LE array (RecordIO) or packed varints */
    size_t labels_len;
    int labels_varint;         /* 1 when `labels` holds packed int64 varints (TFRecord); 2 when it
                                * holds a whole Int64List message body (unpacked or split lists).
                                * Read labels with baton_sample_label, whatever the storage. */
    const uint8_t *img;        /* encoded image bytes (points into the payload) */
    size_t img_len;
    baton_encoding encoding;   /* from the Example; BATON_ENC_UNKNOWN for RecordIO */
    uint32_t h, w, c;          /* from the Example when present; else 0 */
} baton_sample;

/* Label i (0 <= i < nlabels) as float. */
float baton_sample_label(const baton_sample *s, uint32_t i);
/* Parse a payload of format fmt into a sample view (no copy). name/offset for messages. */
int baton_sample_parse(baton_rec_format fmt, const uint8_t *p, size_t n, const char *name,
                       uint64_t offset, baton_sample *s, baton_err *err);
/* Build a payload for format fmt. labels/nlabels: nlabels == 1 writes a plain IRHeader label
 * (flag 0); nlabels > 1 writes flag = nlabels and the float labels after the header. For
 * TFRecord, labels are written as int64 (rounded) and h/w/c/encoding become features. */
typedef struct baton_sample_in {
    uint64_t id, id2;
    const float *labels;
    uint32_t nlabels;
    const uint8_t *img;
    size_t img_len;
    baton_encoding encoding;
    uint32_t h, w, c;
} baton_sample_in;
int baton_sample_build(baton_rec_format fmt, const baton_sample_in *in, baton_buf *out,
                       baton_err *err);

/* ---------------------------------------------------------------- manifest (dataset.json) */
#define BATON_MANIFEST_NAME "dataset.json"
#define BATON_MANIFEST_MAX_BYTES (64u << 20)

/* Pieces: a shard is also checksummed in fixed-size pieces, [k·piece_bytes, (k+1)·piece_bytes)
 * (the last one shorter), small enough that a reader checks the piece before it decodes any record
 * from it. A dataset packed before pieces existed has none (piece_bytes 0): only whole shards.
 * 64 KiB by default: a reader in random order (mount mode over a dataset larger than its piece
 * cache) reads and checks about piece + record bytes per record — 1.6x a 108 KB photo's bytes
 * (256 KiB: 3.4x), and a stream's ranges widened to whole pieces over-fetch less; dataset.json
 * holds 8 hex digits per piece (128 KB per GB of shards). */
#define BATON_PIECE_BYTES_DEFAULT (64u << 10)
#define BATON_PIECE_BYTES_MIN (4u << 10)
#define BATON_PIECE_BYTES_MAX (64u << 20)

typedef struct baton_shard_info {
    char *file;            /* shard file name, relative to the dataset folder (no '/' or "..") */
    char *index;           /* its .idx file name, or NULL */
    uint64_t bytes;
    uint64_t records;
    uint32_t crc32c;       /* of the whole shard file */
    uint64_t index_bytes;
    uint32_t index_crc32c;
    uint64_t piece_bytes;  /* 0: no piece checksums (an older dataset) */
    uint32_t *piece_crc32c; /* baton_shard_pieces(si) CRC32Cs, one per piece; NULL when none */
} baton_shard_info;

/* Pieces of a shard: ceil(bytes / piece_bytes), 0 when it has none. */
uint64_t baton_shard_pieces(const baton_shard_info *si);

typedef struct baton_manifest {
    int version;                 /* 1 */
    char *name;                  /* e.g. "fashion-mnist" */
    char *split;                 /* "train" / "test" / … */
    baton_rec_format format;
    baton_encoding encoding;
    int quality;                 /* JPEG quality, 0 when not JPEG */
    uint64_t samples;
    uint32_t classes;
    char **class_names;          /* classes entries */
    uint32_t shape[3];           /* H, W, C; all 0 when images vary in size */
    uint32_t channels;           /* C (also set when shape varies) */
    float mean[4], std[4];       /* per channel, pixel values scaled to [0, 1] */
    uint64_t seed;
    int shuffled;
    size_t nshards;
    baton_shard_info *shards;
    /* Every shard's .idx in one file, in shards[] order (each part checked by its shard's
     * index_crc32c): a reader that needs all the indexes gets them in one request instead of one
     * per shard. NULL when absent (packed by an older baton, or shards without indexes). */
    char *indexes;         /* "dataset.idx" */
    uint64_t indexes_bytes; /* == Σ shards[].index_bytes */
} baton_manifest;
#define BATON_INDEXES_NAME "dataset.idx"

/* dir's dataset.idx (m->indexes, which must be set) read whole into *out (malloc'd, *n ==
 * m->indexes_bytes), each shard's part checked against its index_bytes and index_crc32c: an
 * error (BATON_ERR_CORRUPT) names the file and the first part that differs. */
int baton_indexes_read(const char *dir, const baton_manifest *m, uint8_t **out, size_t *n, baton_err *err);

/* Parse and validate (types, ranges, shard names, sums: samples == Σ records). */
int baton_manifest_parse(const char *name, const char *json, size_t n, baton_manifest *m,
                         baton_err *err);
int baton_manifest_load(const char *dir, baton_manifest *m, baton_err *err);
/* Serialise to pretty JSON (malloc'd, NUL-terminated). */
char *baton_manifest_to_json(const baton_manifest *m);
/* Write dir/dataset.json crash-safely. */
int baton_manifest_save(const char *dir, const baton_manifest *m, baton_err *err);
void baton_manifest_free(baton_manifest *m);

/* The shard writer (rec_writer.h) is part of this header too. */
#include "baton/rec_writer.h"

#endif
