/* idxu.c — the IDX-ubyte file format of the MNIST family, plain or gzip-compressed.
 *
 * Contract:
 *  - Input: magic 0x00 0x00 type ndim, then ndim big-endian u32 dimensions, then the data. We
 *    accept type 0x08 (u8) with ndim 1 (labels, magic 0x00000801) or 3 (images, 0x00000803).
 *  - The data must be exactly product(dims) bytes: fewer is BATON_ERR_TRUNCATED, more is
 *    BATON_ERR_FORMAT (trailing bytes); the message gives both numbers. The product is computed
 *    overflow-safely.
 *  - A buffer starting 1f 8b is a gzip stream (one or more members, as gzip writes them) and is
 *    inflated in memory by zlib first, to at most IDXU_MAX_BYTES; zlib's complaints (bad header,
 *    CRC or length check, stream cut short) become CORRUPT / TRUNCATED errors naming the file.
 *  - Bad magic bytes are BATON_ERR_CORRUPT, a type or rank we do not read is BATON_ERR_FORMAT.
 *  - On success out->data is malloc'd (free with img_idxu_free); on failure *out is empty. */
#include "img_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IDXU_MAX_BYTES ((size_t)1 << 30)  /* 1 GiB, compressed or not */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case 0x08: return "u8";
    case 0x09: return "i8";
    case 0x0b: return "i16";
    case 0x0c: return "i32";
    case 0x0d: return "f32";
    case 0x0e: return "f64";
    default: return "unknown type";
    }
}

/* Inflate a gzip buffer into a malloc'd *out of *out_len bytes (at most IDXU_MAX_BYTES). */
static int gunzip(const char *name, const uint8_t *in, size_t n, uint8_t **out, size_t *out_len,
                  baton_err *err)
{
    *out = NULL;
    *out_len = 0;
    /* first guess: the size the last member's trailer announces, bounded by deflate's best
     * possible ratio (1032:1) so a tiny hostile file cannot make us allocate a gigabyte */
    size_t cap = 4096;
    if (n >= 18) {
        size_t isize = (size_t)in[n - 4] | (size_t)in[n - 3] << 8 | (size_t)in[n - 2] << 16 |
                       (size_t)in[n - 1] << 24;
        size_t ratio_bound = n > IDXU_MAX_BYTES / 1032 ? IDXU_MAX_BYTES : n * 1032;
        if (isize > ratio_bound) isize = ratio_bound;
        if (isize > cap) cap = isize;
    }
    if (cap > IDXU_MAX_BYTES) cap = IDXU_MAX_BYTES;
    uint8_t *buf = malloc(cap);
    if (!buf) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for %zu bytes", name, cap);

    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        free(buf);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: cannot start zlib", name);
    }
    size_t used = 0, len = 0;
    int rc = BATON_OK;
    for (;;) {
        if (len == cap) {
            if (cap == IDXU_MAX_BYTES) {
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: inflates to more than %zu bytes",
                                   name, IDXU_MAX_BYTES);
                break;
            }
            size_t ncap = cap > IDXU_MAX_BYTES / 2 ? IDXU_MAX_BYTES : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for %zu bytes", name,
                                   ncap);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t in_left = n - used, out_left = cap - len;
        zs.next_in = (Bytef *)(uintptr_t)(in + used);  /* zlib does not write through next_in */
        zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
        zs.next_out = buf + len;
        zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
        uInt ain = zs.avail_in, aout = zs.avail_out;
        int zr = inflate(&zs, Z_NO_FLUSH);
        used += ain - zs.avail_in;
        len += aout - zs.avail_out;
        if (zr == Z_STREAM_END) {
            if (used == n) break;
            /* another gzip member follows (concatenated .gz files), or trailing zero padding */
            if (n - used >= 2 && in[used] == 0x1f && in[used + 1] == 0x8b) {
                inflateReset(&zs);
                continue;
            }
            size_t k = used;
            while (k < n && in[k] == 0) k++;
            if (k == n) break;
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "%s: %zu bytes of trailing garbage after the gzip stream (offset %zu)",
                               name, n - used, used);
            break;
        }
        if (zr == Z_OK || zr == Z_BUF_ERROR) {
            if (zs.avail_out == 0) continue;            /* output full: grow and go on */
            if (used == n) {
                rc = baton_err_set(err, BATON_ERR_TRUNCATED,
                                   "%s: gzip stream ends early (after %zu compressed bytes)", name,
                                   n);
                break;
            }
            if (zr == Z_OK) continue;
        }
        if (zr == Z_MEM_ERROR) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: zlib out of memory", name);
            break;
        }
        rc = baton_err_set(err, BATON_ERR_CORRUPT, "%s: gzip data is corrupt near offset %zu: %s",
                           name, used, zs.msg ? zs.msg : "inflate failed");
        break;
    }
    inflateEnd(&zs);
    if (rc != BATON_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = len;
    return BATON_OK;
}

/* Parse plain IDX bytes p. owned is NULL (p belongs to the caller: the data is copied) or p
 * itself as a malloc'd buffer that becomes out->data, or is freed on failure. */
static int parse_plain(const char *name, const uint8_t *p, size_t n, uint8_t *owned,
                       baton_idxu *out, baton_err *err)
{
    int rc;
    if (n < 4) {
        rc = baton_err_set(err, BATON_ERR_TRUNCATED,
                           "%s: %zu bytes, too short for the 4-byte IDX magic", name, n);
        goto fail;
    }
    uint32_t magic = be32(p);
    unsigned type = p[2], ndim = p[3];
    if (p[0] != 0 || p[1] != 0) {
        rc = baton_err_set(err, BATON_ERR_CORRUPT,
                           "%s: bad IDX magic 0x%08x (expected 0x00000801 for u8 labels or "
                           "0x00000803 for u8 images)", name, magic);
        goto fail;
    }
    if (type != 0x08) {
        rc = baton_err_set(err, BATON_ERR_FORMAT,
                           "%s: IDX magic 0x%08x has element type 0x%02x (%s), expected 0x08 (u8)",
                           name, magic, type, type_name(type));
        goto fail;
    }
    if (ndim != 1 && ndim != 3) {
        rc = baton_err_set(err, BATON_ERR_FORMAT,
                           "%s: IDX magic 0x%08x has %u dimensions, expected 1 (labels, "
                           "0x00000801) or 3 (images, 0x00000803)", name, magic, ndim);
        goto fail;
    }
    size_t hdr = 4 + 4 * (size_t)ndim;
    if (n < hdr) {
        rc = baton_err_set(err, BATON_ERR_TRUNCATED,
                           "%s: %zu bytes, too short for the %zu-byte IDX header", name, n, hdr);
        goto fail;
    }
    uint32_t dims[3] = {0, 0, 0};
    uint64_t want = 1;
    int overflow = 0;
    for (unsigned i = 0; i < ndim; i++) {
        dims[i] = be32(p + 4 + 4 * i);
        if (__builtin_mul_overflow(want, (uint64_t)dims[i], &want)) overflow = 1;
    }
    char shape[64];
    if (ndim == 1) snprintf(shape, sizeof shape, "%u", dims[0]);
    else snprintf(shape, sizeof shape, "%ux%ux%u", dims[0], dims[1], dims[2]);
    size_t have = n - hdr;
    if (overflow || want > have) {
        if (overflow)
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "%s: header says %s elements, which overflows 64 bits", name, shape);
        else
            rc = baton_err_set(err, BATON_ERR_TRUNCATED,
                               "%s: header says %s = %llu data bytes, file has %zu", name, shape,
                               (unsigned long long)want, have);
        goto fail;
    }
    if (want < have) {
        rc = baton_err_set(err, BATON_ERR_FORMAT,
                           "%s: header says %s = %llu data bytes, file has %zu (%zu trailing bytes)",
                           name, shape, (unsigned long long)want, have, have - (size_t)want);
        goto fail;
    }
    uint8_t *data;
    if (owned) {
        memmove(owned, owned + hdr, have);
        data = owned;
    } else {
        data = malloc(have ? have : 1);
        if (!data) {
            rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory for %zu bytes", name, have);
            goto fail;
        }
        memcpy(data, p + hdr, have);
    }
    out->ndim = ndim;
    memcpy(out->dims, dims, sizeof dims);
    out->data = data;
    out->len = have;
    return BATON_OK;
fail:
    free(owned);
    return rc;
}

int img_idxu_parse(const char *name, const uint8_t *buf, size_t n, baton_idxu *out,
                     baton_err *err)
{
    memset(out, 0, sizeof *out);
    if (!name) name = "IDX";
    if (!buf && n > 0) return baton_err_set(err, BATON_ERR_ARG, "%s: NULL buffer", name);
    if (n >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
        uint8_t *plain;
        size_t len;
        int rc = gunzip(name, buf, n, &plain, &len, err);
        if (rc) return rc;
        return parse_plain(name, plain, len, plain, out, err);
    }
    if (n > IDXU_MAX_BYTES)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes, more than the %zu accepted",
                             name, n, IDXU_MAX_BYTES);
    return parse_plain(name, buf, n, NULL, out, err);  /* the caller keeps buf; data is copied */
}

int img_idxu_load(const char *path, baton_idxu *out, baton_err *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *buf;
    size_t n;
    int rc = baton_file_read_all(path, IDXU_MAX_BYTES, &buf, &n, err);
    if (rc) return rc;
    rc = img_idxu_parse(path, buf, n, out, err);
    free(buf);
    return rc;
}

void img_idxu_free(baton_idxu *x)
{
    if (!x) return;
    free(x->data);
    memset(x, 0, sizeof *x);
}
