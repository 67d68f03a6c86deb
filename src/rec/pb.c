/* pb.c — the protobuf wire format, as far as tf.train.Example needs it: varints (at most 10
 * bytes, no overflow past 64 bits), field tags, and walking a message body field by field while
 * skipping fields we do not know (varint, fixed64, length-delimited, fixed32).
 *
 * Contract: never reads outside p[0..n); every length is checked against the bytes left before
 * it is used; groups (wire types 3/4, long deprecated) and wire types 6/7 are malformed input,
 * as is field number 0. No allocation. */
#include "rec_internal.h"

int rec_pb_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    size_t i = *pos;
    if (i < n && p[i] < 0x80) {  /* the common one-byte case */
        *v = p[i];
        *pos = i + 1;
        return 0;
    }
    for (int k = 0; k < 10; k++) {
        if (i >= n) return -1;
        uint8_t b = p[i++];
        if (k == 9 && b > 1) return -1;   /* would overflow 64 bits */
        x |= (uint64_t)(b & 0x7f) << (7 * k);
        if (!(b & 0x80)) {
            *v = x;
            *pos = i;
            return 0;
        }
    }
    return -1;   /* more than 10 bytes */
}

int rec_pb_next(const uint8_t *p, size_t n, size_t *pos, rec_pb_field *f, const char **why)
{
    if (*pos >= n) return 0;
    uint64_t tag;
    if (rec_pb_varint(p, n, pos, &tag) != 0) {
        *why = "bad varint in a field tag";
        return -1;
    }
    uint64_t num = tag >> 3;
    if (num == 0 || num > 0x1fffffff) {
        *why = "field number out of range";
        return -1;
    }
    f->num = (uint32_t)num;
    f->wt = (int)(tag & 7);
    f->data = NULL;
    f->len = 0;
    f->v = 0;
    switch (f->wt) {
    case PB_VARINT:
        if (rec_pb_varint(p, n, pos, &f->v) != 0) {
            *why = "bad varint value";
            return -1;
        }
        return 1;
    case PB_FIXED64:
    case PB_FIXED32: {
        size_t w = f->wt == PB_FIXED64 ? 8 : 4;
        if (n - *pos < w) {
            *why = "fixed-width value runs past the end";
            return -1;
        }
        f->v = w == 8 ? rec_le64(p + *pos) : rec_le32(p + *pos);
        *pos += w;
        return 1;
    }
    case PB_LEN: {
        uint64_t len;
        if (rec_pb_varint(p, n, pos, &len) != 0) {
            *why = "bad varint length";
            return -1;
        }
        if (len > n - *pos) {
            *why = "length-delimited field runs past the end";
            return -1;
        }
        f->data = p + *pos;
        f->len = (size_t)len;
        *pos += (size_t)len;
        return 1;
    }
    default:
        *why = "unsupported wire type (group or invalid)";
        return -1;
    }
}

size_t rec_pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t rec_pb_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}
