/* tfrecord.c — TFRecord framing: writing one record and parsing one record.
 *
 * Layout (REFERENCE §2): u64 length (LE) | u32 masked CRC32C of those 8 bytes | data[length] |
 * u32 masked CRC32C of data; no padding. Masking: ((c >> 15) | (c << 17)) + 0xa282ead8.
 *
 * Contract of the parser: the length CRC is checked before the length is trusted (so a flipped
 * bit in the length is BATON_ERR_CORRUPT, not a huge allocation or a bogus TRUNCATED); records
 * longer than BATON_TFRECORD_MAX_LEN are refused (BATON_ERR_FORMAT); a data CRC mismatch is
 * BATON_ERR_CORRUPT; a window that ends inside the record is NEED_MORE or, when final,
 * BATON_ERR_TRUNCATED. Every message names the stream and the record's byte offset. */
#include "rec_internal.h"

#include <string.h>

int baton_tfrecord_frame(baton_buf *out, const void *payload, size_t n, baton_err *err)
{
    if ((uint64_t)n > BATON_TFRECORD_MAX_LEN)
        return baton_err_set(err, BATON_ERR_ARG,
                             "record payload of %zu bytes is larger than the 2 GiB we write", n);
    if (baton_buf_reserve(out, n + 16) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory framing a %zu-byte record", n);
    uint8_t *o = out->data + out->len;
    rec_put_le64(o, (uint64_t)n);
    rec_put_le32(o + 8, rec_crc32c_mask(baton_crc32c(0, o, 8)));
    if (n) memcpy(o + 12, payload, n);
    rec_put_le32(o + 12 + n, rec_crc32c_mask(baton_crc32c(0, payload, n)));
    out->len += n + 16;
    return BATON_OK;
}

int rec_tfrecord_parse(const uint8_t *p, size_t n, uint64_t offset, const char *name, int final,
                       baton_rec *rec, size_t *need, baton_err *err)
{
    if (n < 12) {
        if (!final) {
            if (need) *need = 12;
            return BATON_NEED_MORE;
        }
        return baton_err_set(err, BATON_ERR_TRUNCATED,
                             "%s: offset %llu: truncated record: %zu bytes left, the header needs "
                             "12",
                             name, (unsigned long long)offset, n);
    }
    uint64_t len = rec_le64(p);
    uint32_t stored = rec_le32(p + 8);
    uint32_t computed = rec_crc32c_mask(baton_crc32c(0, p, 8));
    if (stored != computed)
        return baton_err_set(err, BATON_ERR_CORRUPT,
                             "%s: offset %llu: length checksum mismatch (stored 0x%08x, computed "
                             "0x%08x)",
                             name, (unsigned long long)offset, stored, computed);
    if (len > BATON_TFRECORD_MAX_LEN)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: offset %llu: record of %llu bytes is larger than the 2 GiB we "
                             "accept",
                             name, (unsigned long long)offset, (unsigned long long)len);
    size_t total = (size_t)len + 16;
    if (n < total) {
        if (!final) {
            if (need) *need = total;
            return BATON_NEED_MORE;
        }
        return baton_err_set(err, BATON_ERR_TRUNCATED,
                             "%s: offset %llu: truncated record: length %llu needs %zu bytes, "
                             "only %zu left",
                             name, (unsigned long long)offset, (unsigned long long)len, total, n);
    }
    stored = rec_le32(p + 12 + len);
    computed = rec_crc32c_mask(baton_crc32c(0, p + 12, (size_t)len));
    if (stored != computed)
        return baton_err_set(err, BATON_ERR_CORRUPT,
                             "%s: offset %llu: data checksum mismatch (stored 0x%08x, computed "
                             "0x%08x)",
                             name, (unsigned long long)offset, stored, computed);
    rec->data = p + 12;
    rec->len = (size_t)len;
    rec->offset = offset;
    rec->size = total;
    return BATON_OK;
}
