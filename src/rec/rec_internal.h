/* rec_internal.h — pieces shared by the files of src/rec/ and nothing else (but its tests): the
 * CRC32C paths behind the dispatcher and TFRecord's masking, the formats' constants, format
 * detection, RecordIO resynchronisation, loading and appending .idx files; explicit
 * little-endian loads and stores (memcpy-free byte arithmetic, so any alignment is fine), the
 * one-record parsers of each format, and the protobuf wire helpers used by sample.c.
 *
 * Contract of the one-record parsers: p/n is a contiguous window that starts at a record
 * boundary whose stream offset is `offset`. They return
 *   BATON_OK          rec filled (rec->size = bytes the record occupies in the stream);
 *   BATON_NEED_MORE   the window ends inside the record and `final` is 0; *need (when non-NULL)
 *                     is a lower bound on the window size that can make progress;
 *   BATON_ERR_TRUNCATED when `final` is 1 and the window ends inside the record;
 *   BATON_ERR_CORRUPT / BATON_ERR_FORMAT with a message naming `name` and the byte offset.
 * They never read outside p[0..n). */
#ifndef BATON_REC_INTERNAL_H
#define BATON_REC_INTERNAL_H

#include "baton/rec.h"

/* ---- what src/rec (and its tests) uses beyond rec.h */
/* CRC32C (crc32c.c): the paths behind baton_crc32c's dispatcher, and TFRecord's masking. */
uint32_t rec_crc32c_sw(uint32_t crc, const void *p, size_t n);  /* table reference, any CPU */
uint32_t rec_crc32c_hw(uint32_t crc, const void *p, size_t n);  /* only if _hw_available() */
int rec_crc32c_hw_available(void);
uint32_t rec_crc32c_mask(uint32_t crc);    /* TFRecord masking */
uint32_t rec_crc32c_unmask(uint32_t masked);

/* Formats (format.c, recordio.c, tfrecord.c, sample.c) */
#define BATON_RECORDIO_MAGIC 0xced7230aU
#define BATON_RECORDIO_LEGACY_MAGIC 0x3ed7230aU
#define BATON_RECORDIO_MAX_LEN ((1U << 29) - 1U)
#define BATON_TFRECORD_MAX_LEN ((uint64_t)1 << 31)  /* we refuse records larger than 2 GiB */
#define BATON_IRHEADER_SIZE 24

/* Look at the first bytes of a stream and say which format it is. Fails with BATON_ERR_FORMAT
 * for a legacy-magic RecordIO file or for bytes that are neither; BATON_ERR_TRUNCATED if n is too
 * small to tell (n == 0: "empty file"). name is used in messages. */
int rec_detect(const uint8_t *p, size_t n, const char *name, baton_rec_format *fmt,
                     baton_err *err);
/* RecordIO resynchronisation without an index: the first 4-byte-aligned position >= from where a
 * record starts (magic followed by a word with cflag 0 or 1), or n if none. */
size_t rec_recordio_resync(const uint8_t *buf, size_t n, size_t from);

/* .idx files (idx.c; the format is in rec.h, beside baton_idx_parse) */
int rec_idx_load(const char *path, baton_idx_entry **out, size_t *count, baton_err *err);
/* Append one line to out. */
int rec_idx_append(baton_buf *out, uint64_t key, uint64_t offset);

static inline uint32_t rec_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rec_le64(const uint8_t *p)
{
    return (uint64_t)rec_le32(p) | (uint64_t)rec_le32(p + 4) << 32;
}

static inline void rec_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void rec_put_le64(uint8_t *p, uint64_t v)
{
    rec_put_le32(p, (uint32_t)v);
    rec_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* CRC32C variants for tests and benchmarks (crc32c.c): the crc32-instruction path alone (no
 * carry-less folding), and whether the folding path is in use on this CPU. */
uint32_t rec_crc32c_sse42(uint32_t crc, const void *p, size_t n);
int rec_crc32c_fold_available(void);

/* RecordIO (recordio.c). scratch receives multi-part payloads. */
int rec_recordio_parse(const uint8_t *p, size_t n, uint64_t offset, const char *name, int final,
                       baton_buf *scratch, baton_rec *rec, size_t *need, baton_err *err);
/* TFRecord (tfrecord.c). */
int rec_tfrecord_parse(const uint8_t *p, size_t n, uint64_t offset, const char *name, int final,
                       baton_rec *rec, size_t *need, baton_err *err);

/* rec_detect for a window that starts at stream offset `offset` (format.c). */
int rec_detect_at(const uint8_t *p, size_t n, const char *name, uint64_t offset,
                  baton_rec_format *fmt, baton_err *err);
/* Detection step of a reader whose format is still unknown (reader.c): BATON_OK once the format
 * is known, BATON_NEED_MORE while too few bytes have arrived, or the (sticky) error. */
int rec_reader_detect(baton_rec_reader *r, baton_err *err);

/* ---- protobuf wire format (pb.c) ---- */
enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2, PB_FIXED32 = 5 };

typedef struct rec_pb_field {
    uint32_t num;          /* field number */
    int wt;                /* wire type */
    uint64_t v;            /* PB_VARINT value, or fixed32/fixed64 bits */
    const uint8_t *data;   /* PB_LEN: the bytes */
    size_t len;
} rec_pb_field;

/* Decode one varint at p[*pos..n) (at most 10 bytes, no overflow): 0 on success, -1 if bad. */
int rec_pb_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v);
/* Next field of a message body: 1 field read, 0 end of body, -1 malformed (*why says what). */
int rec_pb_next(const uint8_t *p, size_t n, size_t *pos, rec_pb_field *f, const char **why);
size_t rec_pb_varint_size(uint64_t v);
/* Write a varint into p (at least 10 bytes of room); returns bytes written. */
size_t rec_pb_put_varint(uint8_t *p, uint64_t v);

#endif
