/* npy.c — NumPy .npy files of 2-D float64 arrays (DeepRacer's track waypoints).
 *
 * Layout: "\x93NUMPY", major and minor version bytes, the header length (2 bytes little-endian for
 * version 1.0, 4 bytes for 2.0 and 3.0), then the header — a Python dict literal such as
 * {'descr': '<f8', 'fortran_order': False, 'shape': (119, 6), } padded with spaces and ending in
 * a newline — then the data. Accepted: dtype '<f8' (also written '<d' or 'float64'), C order, a
 * 2-D shape whose data is exactly what follows the header. Every length is checked before it is
 * trusted; every failure names the file and what is wrong. */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

#define NPY_MAX_BYTES ((size_t)1 << 30)
#define NPY_MAX_HEADER 65536

typedef struct npy_cursor {
    const char *p, *end;
} npy_cursor;

static void skip_ws(npy_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* A quoted Python string into out (at most cap-1 characters). */
static int parse_str(npy_cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    char q = *c->p++;
    size_t k = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || k + 1 >= cap) return -1;
        out[k++] = *c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[k] = 0;
    return 0;
}

static int expect(npy_cursor *c, char ch)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) return -1;
    c->p++;
    return 0;
}

/* (d0, d1, ...) with at most 8 dimensions; (n,) is 1-D, () is 0-D. */
static int parse_shape(npy_cursor *c, uint64_t *dims, int *ndim)
{
    if (expect(c, '(')) return -1;
    *ndim = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            return 0;
        }
        if (*ndim >= 8 || c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
        uint64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (UINT64_MAX - 9) / 10) return -1;
            v = v * 10 + (uint64_t)(*c->p++ - '0');
        }
        while (c->p < c->end && *c->p == 'L') c->p++;   /* Python 2 longs */
        dims[(*ndim)++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') c->p++;
        else if (c->p < c->end && *c->p == ')') continue;
        else return -1;
    }
}

static int parse_header(const char *name, const char *h, size_t hl, uint64_t *dims, int *ndim,
                        baton_err *err)
{
    npy_cursor c = {h, h + hl};
    char key[64], descr[64] = "";
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    if (expect(&c, '{')) return baton_err_set(err, BATON_ERR_FORMAT, "%s: header is not a dict", name);
    for (;;) {
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}') break;
        if (parse_str(&c, key, sizeof key) || expect(&c, ':'))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: malformed key at byte %zu", name,
                                 (size_t)(c.p - h));
        if (!strcmp(key, "descr")) {
            if (parse_str(&c, descr, sizeof descr))
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: 'descr' is not a string", name);
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            skip_ws(&c);
            size_t left = (size_t)(c.end - c.p);
            if (left >= 4 && !memcmp(c.p, "True", 4)) fortran = 1, c.p += 4;
            else if (left >= 5 && !memcmp(c.p, "False", 5)) fortran = 0, c.p += 5;
            else return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: 'fortran_order' is not True/False", name);
            have_order = 1;
        } else if (!strcmp(key, "shape")) {
            if (parse_shape(&c, dims, ndim))
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: 'shape' is not a tuple of sizes", name);
            have_shape = 1;
        } else {
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: unknown key '%s'", name, key);
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
        else if (!(c.p < c.end && *c.p == '}'))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: expected ',' or '}' at byte %zu", name,
                                 (size_t)(c.p - h));
    }
    c.p++;
    skip_ws(&c);
    if (c.p != c.end)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: header: bytes after the dict at byte %zu", name,
                             (size_t)(c.p - h));
    if (!have_descr || !have_order || !have_shape)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: header lacks '%s'", name,
                             !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    if (strcmp(descr, "<f8") && strcmp(descr, "<d") && strcmp(descr, "float64"))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: dtype '%s' is not supported (want '<f8', "
                             "little-endian float64)", name, descr);
    if (fortran)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: Fortran order is not supported (want C order)", name);
    return BATON_OK;
}

int race_npy_parse(const char *name, const uint8_t *buf, size_t n, baton_npy *out, baton_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a .npy file (bad magic)", name);
    unsigned major = buf[6], minor = buf[7];
    size_t hl, hoff;
    if (major == 1 && minor == 0) {
        hl = (size_t)buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (n < 12) return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: truncated header length", name);
        hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: .npy version %u.%u is not supported (1.0, 2.0, 3.0)",
                             name, major, minor);
    }
    if (hl > NPY_MAX_HEADER || hl > n - hoff)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: header length %zu runs past the end of the "
                             "file (%zu bytes)", name, hl, n);
    uint64_t dims[8];
    int ndim = 0;
    int rc = parse_header(name, (const char *)buf + hoff, hl, dims, &ndim, err);
    if (rc) return rc;
    if (ndim != 2)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: shape has %d dimensions (want 2: rows × columns)",
                             name, ndim);
    size_t data_off = hoff + hl, have = n - data_off;
    if (dims[0] > NPY_MAX_BYTES / 8 || dims[1] > NPY_MAX_BYTES / 8 ||
        (dims[1] && dims[0] > NPY_MAX_BYTES / 8 / dims[1]))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: shape (%llu, %llu) is too large", name,
                             (unsigned long long)dims[0], (unsigned long long)dims[1]);
    size_t count = (size_t)(dims[0] * dims[1]), want = count * 8;
    if (have < want)
        return baton_err_set(err, BATON_ERR_TRUNCATED, "%s: data is %zu bytes, shape (%llu, %llu) needs %zu "
                             "(row %zu is incomplete)", name, have, (unsigned long long)dims[0],
                             (unsigned long long)dims[1], want, dims[1] ? have / 8 / (size_t)dims[1] : 0);
    if (have > want)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes after the data of shape (%llu, %llu)", name,
                             have - want, (unsigned long long)dims[0], (unsigned long long)dims[1]);
    out->data = malloc(want ? want : 1);
    if (!out->data) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    const uint8_t *d = buf + data_off;
    for (size_t i = 0; i < count; i++) {
        uint64_t u = 0;
        for (int k = 7; k >= 0; k--) u = u << 8 | d[i * 8 + (size_t)k];
        memcpy(&out->data[i], &u, 8);
    }
    out->rows = (size_t)dims[0];
    out->cols = (size_t)dims[1];
    return BATON_OK;
}

int race_npy_load(const char *path, baton_npy *out, baton_err *err)
{
    uint8_t *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    int rc = baton_file_read_all(path, NPY_MAX_BYTES, &buf, &len, err);
    if (rc) return rc;
    rc = race_npy_parse(path, buf, len, out, err);
    free(buf);
    return rc;
}

void race_npy_free(baton_npy *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}

int race_npy_write(baton_buf *out, const double *data, size_t rows, size_t cols)
{
    char h[128];
    int hl = snprintf(h, sizeof h, "{'descr': '<f8', 'fortran_order': False, 'shape': (%zu, %zu), }", rows, cols);
    if (hl < 0 || (size_t)hl >= sizeof h) return BATON_ERR_ARG;
    size_t total = 10 + (size_t)hl + 1, pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)hl + pad + 1;
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(hlen & 0xff), (uint8_t)(hlen >> 8)};
    if (baton_buf_append(out, pre, 10) || baton_buf_append(out, h, (size_t)hl)) return BATON_ERR_NOMEM;
    for (size_t i = 0; i < pad; i++)
        if (baton_buf_append(out, " ", 1)) return BATON_ERR_NOMEM;
    if (baton_buf_append(out, "\n", 1)) return BATON_ERR_NOMEM;
    for (size_t i = 0; i < rows * cols; i++) {
        uint64_t u;
        uint8_t le[8];
        memcpy(&u, &data[i], 8);
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)(u >> (8 * k));
        if (baton_buf_append(out, le, 8)) return BATON_ERR_NOMEM;
    }
    return BATON_OK;
}
