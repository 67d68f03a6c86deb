/* format.c — what kind of record stream this is: names of formats and image encodings, format
 * detection from a stream's first bytes, and the per-format dispatch of framing and random-access
 * parsing (baton_rec_frame, baton_rec_read_at).
 *
 * Contract: detection never reads past p[n); a RecordIO stream starts with the magic 0xced7230a,
 * a legacy (old dmlc-core) stream with 0x3ed7230a and is refused with BATON_ERR_FORMAT, and a
 * TFRecord stream is recognised by the masked CRC32C of its first 8 bytes stored at bytes 8..11.
 * Too few bytes to tell is BATON_ERR_TRUNCATED ("empty file" when there are none). */
#include "rec_internal.h"

#include <strings.h>

const char *baton_rec_format_name(baton_rec_format f)
{
    switch (f) {
    case BATON_FMT_RECORDIO: return "recordio";
    case BATON_FMT_TFRECORD: return "tfrecord";
    default: return "unknown";
    }
}

int baton_rec_format_parse(const char *s, baton_rec_format *f)
{
    if (s && !strcasecmp(s, "recordio")) {
        *f = BATON_FMT_RECORDIO;
        return BATON_OK;
    }
    if (s && !strcasecmp(s, "tfrecord")) {
        *f = BATON_FMT_TFRECORD;
        return BATON_OK;
    }
    return BATON_ERR_ARG;
}

const char *baton_encoding_name(baton_encoding e)
{
    switch (e) {
    case BATON_ENC_RAW: return "raw";
    case BATON_ENC_PNG: return "png";
    case BATON_ENC_JPEG: return "jpeg";
    default: return "unknown";
    }
}

int baton_encoding_parse(const char *s, baton_encoding *e)
{
    if (!s) return BATON_ERR_ARG;
    if (!strcasecmp(s, "raw")) *e = BATON_ENC_RAW;
    else if (!strcasecmp(s, "png")) *e = BATON_ENC_PNG;
    else if (!strcasecmp(s, "jpeg") || !strcasecmp(s, "jpg")) *e = BATON_ENC_JPEG;
    else return BATON_ERR_ARG;
    return BATON_OK;
}

int rec_detect_at(const uint8_t *p, size_t n, const char *name, uint64_t offset,
                  baton_rec_format *fmt, baton_err *err)
{
    unsigned long long off = (unsigned long long)offset;
    if (!name) name = "stream";
    *fmt = BATON_FMT_UNKNOWN;
    if (n == 0 && offset == 0)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: empty file", name);
    if (n == 0)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: offset %llu: no bytes to recognise",
                             name, off);
    if (n >= 4) {
        uint32_t w = rec_le32(p);
        if (w == BATON_RECORDIO_MAGIC) {
            *fmt = BATON_FMT_RECORDIO;
            return BATON_OK;
        }
        if (w == BATON_RECORDIO_LEGACY_MAGIC)
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: offset %llu: legacy RecordIO magic 0x3ed7230a (old "
                                 "dmlc-core) is not supported",
                                 name, off);
    }
    if (n >= 12) {
        if (rec_crc32c_mask(baton_crc32c(0, p, 8)) == rec_le32(p + 8)) {
            *fmt = BATON_FMT_TFRECORD;
            return BATON_OK;
        }
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: offset %llu: neither RecordIO (magic 0x%08x, expected "
                             "0xced7230a) nor TFRecord (length checksum does not match)",
                             name, off, rec_le32(p));
    }
    /* Fewer than 12 bytes and no RecordIO magic: TFRecord's free-form length field means any
     * prefix could still be one, so we cannot tell yet. */
    return baton_err_set(err, BATON_ERR_TRUNCATED,
                         "%s: offset %llu: only %zu bytes, too short to recognise RecordIO or "
                         "TFRecord",
                         name, off, n);
}

int rec_detect(const uint8_t *p, size_t n, const char *name, baton_rec_format *fmt,
                     baton_err *err)
{
    return rec_detect_at(p, n, name, 0, fmt, err);
}

int baton_rec_frame(baton_rec_format f, baton_buf *out, const void *payload, size_t n,
                    baton_err *err)
{
    switch (f) {
    case BATON_FMT_RECORDIO: return baton_recordio_frame(out, payload, n, err);
    case BATON_FMT_TFRECORD: return baton_tfrecord_frame(out, payload, n, err);
    default:
        return baton_err_set(err, BATON_ERR_ARG, "cannot frame a record: format %d is unknown",
                             (int)f);
    }
}

int baton_rec_read_at(baton_rec_format fmt, const uint8_t *buf, size_t n, uint64_t offset,
                      const char *name, baton_buf *scratch, baton_rec *rec, baton_err *err)
{
    if (!name) name = "stream";
    switch (fmt) {
    case BATON_FMT_RECORDIO:
        return rec_recordio_parse(buf, n, offset, name, 1, scratch, rec, NULL, err);
    case BATON_FMT_TFRECORD:
        return rec_tfrecord_parse(buf, n, offset, name, 1, rec, NULL, err);
    default:
        return baton_err_set(err, BATON_ERR_ARG, "%s: offset %llu: record format unknown", name,
                             (unsigned long long)offset);
    }
}
