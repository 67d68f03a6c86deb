/* recordio.c — MXNet/dmlc-core RecordIO framing: writing one record, parsing one record, and
 * resynchronising without an index.
 *
 * Layout (REFERENCE §1): magic u32 | lrecord u32 = cflag << 29 | len | data[len] | zero pad to 4.
 * Writer (byte-compatible with dmlc-core's RecordIOWriter): the payload is scanned at 4-byte
 * aligned offsets i with i + 4 <= len; every occurrence of the magic there ends a part (cflag 1
 * for the first part, 2 for later ones), the 4 magic bytes are dropped and writing continues after
 * them; the last part gets cflag 3, or 0 if the payload was never split; one pad at the very end
 * rounds the ORIGINAL length up to a multiple of 4 (every earlier part is a multiple of 4 long).
 * Reader: parts with cflag 1/2 are joined with the 4 magic bytes re-inserted after each; the flag
 * sequence must be 0 alone or 1 2* 3; middle parts must be multiples of 4 long; the joined
 * payload must stay below 2^29 bytes (what any writer can produce). Anything else is
 * BATON_ERR_CORRUPT naming the offset of the offending header; the legacy magic is
 * BATON_ERR_FORMAT. Padding bytes are not inspected (dmlc-core does not either). */
#include "rec_internal.h"

#include <string.h>

static inline size_t align4(size_t n) { return (n + 3) & ~(size_t)3; }

static inline int is_magic(const uint8_t *p) { return rec_le32(p) == BATON_RECORDIO_MAGIC; }

static uint8_t *put_header(uint8_t *o, uint32_t cflag, size_t len)
{
    rec_put_le32(o, BATON_RECORDIO_MAGIC);
    rec_put_le32(o + 4, cflag << 29 | (uint32_t)len);
    return o + 8;
}

int baton_recordio_frame(baton_buf *out, const void *payload, size_t n, baton_err *err)
{
    const uint8_t *b = payload;
    if (n > BATON_RECORDIO_MAX_LEN)
        return baton_err_set(err, BATON_ERR_ARG,
                             "record payload of %zu bytes is too large for RecordIO "
                             "(at most %u bytes)",
                             n, BATON_RECORDIO_MAX_LEN);
    size_t lower = n & ~(size_t)3;
    size_t escapes = 0;
    for (size_t i = 0; i < lower; i += 4) escapes += is_magic(b + i);
    /* each escape drops 4 payload bytes and adds an 8-byte header */
    size_t total = 8 * (escapes + 1) + (n - 4 * escapes) + (align4(n) - n);
    if (baton_buf_reserve(out, total) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory framing a %zu-byte record", n);
    uint8_t *o = out->data + out->len;
    size_t dptr = 0;
    if (escapes > 0) {
        for (size_t i = 0; i < lower; i += 4) {
            if (!is_magic(b + i)) continue;
            o = put_header(o, dptr == 0 ? 1 : 2, i - dptr);
            if (i > dptr) memcpy(o, b + dptr, i - dptr);
            o += i - dptr;
            dptr = i + 4;
        }
    }
    o = put_header(o, dptr != 0 ? 3 : 0, n - dptr);
    if (n > dptr) memcpy(o, b + dptr, n - dptr);
    o += n - dptr;
    for (size_t pad = align4(n) - n; pad > 0; pad--) *o++ = 0;
    out->len += total;
    return BATON_OK;
}

static int want(int final, size_t have, size_t need_bytes, size_t *need, const char *name,
                uint64_t offset, uint64_t at, baton_err *err)
{
    if (!final) {
        if (need) *need = need_bytes;
        return BATON_NEED_MORE;
    }
    if (at == offset)
        return baton_err_set(err, BATON_ERR_TRUNCATED,
                             "%s: offset %llu: truncated record: %zu bytes left, the record needs "
                             "at least %zu",
                             name, (unsigned long long)offset, have, need_bytes);
    return baton_err_set(err, BATON_ERR_TRUNCATED,
                         "%s: offset %llu: truncated record: part at offset %llu needs %zu bytes "
                         "from the record start, only %zu left",
                         name, (unsigned long long)offset, (unsigned long long)at, need_bytes,
                         have);
}

int rec_recordio_parse(const uint8_t *p, size_t n, uint64_t offset, const char *name, int final,
                       baton_buf *scratch, baton_rec *rec, size_t *need, baton_err *err)
{
    size_t pos = 0, joined = 0;
    int parts = 0;
    for (;;) {
        uint64_t at = offset + pos;
        if (n - pos < 8) return want(final, n, pos + 8, need, name, offset, at, err);
        uint32_t magic = rec_le32(p + pos);
        if (magic != BATON_RECORDIO_MAGIC) {
            if (magic == BATON_RECORDIO_LEGACY_MAGIC && parts == 0)
                return baton_err_set(err, BATON_ERR_FORMAT,
                                     "%s: offset %llu: legacy RecordIO magic 0x3ed7230a (old "
                                     "dmlc-core) is not supported",
                                     name, (unsigned long long)at);
            return baton_err_set(err, BATON_ERR_CORRUPT,
                                 "%s: offset %llu: bad magic 0x%08x (expected 0xced7230a)", name,
                                 (unsigned long long)at, magic);
        }
        uint32_t lrec = rec_le32(p + pos + 4);
        uint32_t cflag = lrec >> 29, len = lrec & BATON_RECORDIO_MAX_LEN;
        if (parts == 0 && cflag > 1)
            return baton_err_set(err, BATON_ERR_CORRUPT,
                                 "%s: offset %llu: continuation flag %u with no first part before "
                                 "it",
                                 name, (unsigned long long)at, cflag);
        if (parts > 0 && cflag < 2)
            return baton_err_set(err, BATON_ERR_CORRUPT,
                                 "%s: offset %llu: continuation flag %u inside the multi-part "
                                 "record that starts at offset %llu",
                                 name, (unsigned long long)at, cflag,
                                 (unsigned long long)offset);
        if ((cflag == 1 || cflag == 2) && len % 4 != 0)
            return baton_err_set(err, BATON_ERR_CORRUPT,
                                 "%s: offset %llu: part of a multi-part record has length %u, not "
                                 "a multiple of 4",
                                 name, (unsigned long long)at, len);
        joined += len + ((cflag == 1 || cflag == 2) ? 4 : 0);
        if (joined > BATON_RECORDIO_MAX_LEN)
            return baton_err_set(err, BATON_ERR_CORRUPT,
                                 "%s: offset %llu: multi-part record that starts at offset %llu "
                                 "grows past %u bytes",
                                 name, (unsigned long long)at, (unsigned long long)offset,
                                 BATON_RECORDIO_MAX_LEN);
        size_t body = align4(len);
        if (n - pos - 8 < body) {
            if (final && parts == 0)
                return baton_err_set(err, BATON_ERR_TRUNCATED,
                                     "%s: offset %llu: truncated record: length %u needs %zu "
                                     "bytes, only %zu left",
                                     name, (unsigned long long)at, len, 8 + body, n - pos);
            return want(final, n, pos + 8 + body, need, name, offset, at, err);
        }
        pos += 8 + body;
        parts++;
        if (cflag == 0) {
            rec->data = p + 8;
            rec->len = len;
            rec->offset = offset;
            rec->size = pos;
            return BATON_OK;
        }
        if (cflag == 3) break;
    }
    /* every part is present and valid: join them */
    if (!scratch)
        return baton_err_set(err, BATON_ERR_ARG,
                             "%s: offset %llu: multi-part record but no scratch buffer", name,
                             (unsigned long long)offset);
    scratch->len = 0;
    if (baton_buf_reserve(scratch, joined ? joined : 1) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: offset %llu: out of memory joining a "
                             "%zu-byte record", name, (unsigned long long)offset, joined);
    uint8_t *o = scratch->data;
    for (size_t q = 0; q < pos;) {
        uint32_t lrec = rec_le32(p + q + 4);
        uint32_t cflag = lrec >> 29, len = lrec & BATON_RECORDIO_MAX_LEN;
        if (len) memcpy(o, p + q + 8, len);
        o += len;
        if (cflag != 3) {
            rec_put_le32(o, BATON_RECORDIO_MAGIC);
            o += 4;
        }
        q += 8 + align4(len);
    }
    scratch->len = joined;
    rec->data = scratch->data;
    rec->len = joined;
    rec->offset = offset;
    rec->size = pos;
    return BATON_OK;
}

size_t rec_recordio_resync(const uint8_t *buf, size_t n, size_t from)
{
    size_t i = align4(from);
    if (i < from) return n;   /* overflow */
    for (; i < n && n - i >= 8; i += 4) {
        if (!is_magic(buf + i)) continue;
        uint32_t cflag = rec_le32(buf + i + 4) >> 29;
        if (cflag == 0 || cflag == 1) return i;
    }
    return n;
}
