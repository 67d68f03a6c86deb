/* jpeg_rect.c — cutting a rectangle of whole MCUs out of a JPEG that has a restart marker after
 * every MCU, as a small JPEG of its own: jrect_index (header checks and the restart index) and
 * jrect_build. The bytes are hostile input: every length and offset is checked against the
 * buffer, and anything unexpected makes jrect_index say 0 (decode the ordinary way), never an
 * error. Contract: jpeg_rect_internal.h. */
#include "jpeg_rect_internal.h"

#include <stdlib.h>
#include <string.h>

static uint32_t be16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static int keep(jrect *j, const uint8_t *p, size_t n)
{
    if (j->hdr_len + n > j->hdr_cap) {
        size_t cap = j->hdr_cap ? j->hdr_cap : 1024;
        while (cap < j->hdr_len + n) cap *= 2;
        uint8_t *h = realloc(j->hdr, cap);
        if (!h) return 0;
        j->hdr = h;
        j->hdr_cap = cap;
    }
    memcpy(j->hdr + j->hdr_len, p, n);
    j->hdr_len += n;
    return 1;
}

/* SOF0/SOF1 (s: the marker, len: the segment's length field): 8-bit, 1 component sampled 1×1 or
 * 3 components with factors 1..4; the MCU geometry from the factors. */
static int read_sof(jrect *j, const uint8_t *s, size_t len)
{
    if (len < 8) return 0;
    uint32_t nf = s[9];
    if (s[4] != 8 || len != 8 + 3 * nf || (nf != 1 && nf != 3)) return 0;
    j->h = be16(s + 5);
    j->w = be16(s + 7);
    if (!j->h || !j->w) return 0;
    uint32_t hmax = 1, vmax = 1;
    for (uint32_t k = 0; k < nf; k++) {
        uint32_t hf = s[11 + 3 * k] >> 4, vf = s[11 + 3 * k] & 15;
        if (hf < 1 || hf > 4 || vf < 1 || vf > 4 || (nf == 1 && (hf != 1 || vf != 1))) return 0;
        if (hf > hmax) hmax = hf;
        if (vf > vmax) vmax = vf;
    }
    j->ncomp = nf;
    j->hmax = hmax;
    j->mcu_w = 8 * hmax;
    j->mcu_h = 8 * vmax;
    j->mcux = (j->w + j->mcu_w - 1) / j->mcu_w;
    j->mcuy = (j->h + j->mcu_h - 1) / j->mcu_h;
    return 1;
}

/* SOS: every component of the frame in one sequential scan. */
static int read_sos(const jrect *j, const uint8_t *s, size_t len)
{
    if (len < 6) return 0;
    uint32_t ns = s[4];
    if (ns != j->ncomp || len != 6 + 2 * ns) return 0;
    const uint8_t *t = s + 5 + 2 * ns;
    return t[0] == 0 && t[1] == 63 && t[2] == 0;
}

/* The header, SOI to the end of SOS: the segments kept into j->hdr; *data = the first entropy
 * byte. 0 when the file is not one a rectangle can be cut from. */
static int read_header(jrect *j, const uint8_t *p, size_t n, size_t *data)
{
    int sof = 0, dri = 0;
    j->hdr_len = 0;
    if (!keep(j, p, 2)) return 0;
    size_t pos = 2;
    for (;;) {
        while (pos + 1 < n && p[pos] == 0xff && p[pos + 1] == 0xff) pos++;  /* fill bytes */
        if (pos + 4 > n || p[pos] != 0xff) return 0;
        uint8_t m = p[pos + 1];
        size_t len = be16(p + pos + 2);
        if (len < 2 || len > n - pos - 2) return 0;
        const uint8_t *s = p + pos;
        pos += 2 + len;
        if ((m >= 0xe1 && m <= 0xed) || m == 0xef || m == 0xfe) continue;  /* APP1..13, APP15, COM */
        if (m == 0xc0 || m == 0xc1) {
            if (sof || !read_sof(j, s, len)) return 0;
            sof = 1;
            j->sof_at = j->hdr_len;
        } else if (m == 0xdd) {
            if (len != 4 || be16(s + 4) != 1) return 0;
            dri = 1;
        } else if (m == 0xda) {
            if (!sof || !dri || !read_sos(j, s, len) || !keep(j, s, 2 + len)) return 0;
            *data = pos;
            return 1;
        } else if (m != 0xc4 && m != 0xdb && m != 0xe0 && m != 0xee) {
            return 0;  /* another frame type, arithmetic coding, DNL, a marker out of place */
        }
        if (!keep(j, s, 2 + len)) return 0;
    }
}

int jrect_index(jrect *j, const uint8_t *p, size_t n)
{
    size_t data = 0;
    if (!j || !p || n < 4 || p[0] != 0xff || p[1] != 0xd8 || !read_header(j, p, n, &data)) return 0;
    size_t total = (size_t)j->mcux * j->mcuy;
    if (total > (n - data) / 3) return 0;  /* each interval: a byte at least, then 2 of marker */
    if (total + 1 > j->iv_cap) {
        size_t *iv = realloc(j->iv, (total + 1) * sizeof *iv);
        if (!iv) return 0;
        j->iv = iv;
        j->iv_cap = total + 1;
    }
    size_t k = 0, q = data;
    j->iv[0] = data;
    for (;;) {
        const uint8_t *f = q < n ? memchr(p + q, 0xff, n - q) : NULL;
        if (!f) return 0;  /* no EOI */
        q = (size_t)(f - p);
        if (q + 1 >= n) return 0;
        uint8_t b = p[q + 1];
        if (b == 0x00) {  /* a stuffed FF */
            q += 2;
        } else if (b == 0xff) {  /* a fill byte before a marker */
            q += 1;
        } else if (b >= 0xd0 && b <= 0xd7) {
            if (b != 0xd0 + (k & 7) || k + 1 >= total || q == j->iv[k]) return 0;
            j->iv[++k] = q + 2;
            q += 2;
        } else if (b == 0xd9) {
            if (k + 1 != total || q == j->iv[k]) return 0;
            j->iv[total] = q + 2;
            return 1;
        } else {
            return 0;  /* any other marker inside the scan */
        }
    }
}

size_t jrect_build(jrect *j, const uint8_t *p, uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, int data)
{
    if (x0 >= x1 || y0 >= y1 || x1 > j->mcux || y1 > j->mcuy) return 0;
    const size_t *iv = j->iv;
    size_t need = j->hdr_len + 2;
    for (uint32_t y = y0; data && y < y1; y++) need += iv[(size_t)y * j->mcux + x1] - iv[(size_t)y * j->mcux + x0];
    if (need > j->out_cap) {
        size_t cap = j->out_cap ? j->out_cap : 16384;
        while (cap < need) cap *= 2;
        uint8_t *o = realloc(j->out, cap);
        if (!o) return 0;
        j->out = o;
        j->out_cap = cap;
    }
    uint8_t *out = j->out;
    memcpy(out, j->hdr, j->hdr_len);
    uint32_t rh = (y1 == j->mcuy ? j->h : y1 * j->mcu_h) - y0 * j->mcu_h;
    uint32_t rw = (x1 == j->mcux ? j->w : x1 * j->mcu_w) - x0 * j->mcu_w;
    uint8_t *sof = out + j->sof_at;
    sof[5] = (uint8_t)(rh >> 8);
    sof[6] = (uint8_t)rh;
    sof[7] = (uint8_t)(rw >> 8);
    sof[8] = (uint8_t)rw;
    size_t o = j->hdr_len;
    if (!data) {
        out[o++] = 0xff;
        out[o++] = 0xd9;
        return o;
    }
    unsigned k = 0;
    for (uint32_t y = y0; y < y1; y++) {
        /* a row's MCUs are contiguous in the file, each followed by its marker (RST, or EOI after
         * the image's last): copied at once, then every marker renumbered in order */
        size_t a = (size_t)y * j->mcux + x0, b = (size_t)y * j->mcux + x1;
        memcpy(out + o, p + iv[a], iv[b] - iv[a]);
        for (size_t i = a; i < b; i++) out[o + (iv[i + 1] - 1 - iv[a])] = (uint8_t)(0xd0 + (k++ & 7));
        o += iv[b] - iv[a];
    }
    out[o - 1] = 0xd9;  /* the last MCU's marker becomes EOI */
    return o;
}

void jrect_free(jrect *j)
{
    if (!j) return;
    free(j->hdr);
    free(j->iv);
    free(j->out);
    jmcu_free(j->mcu);
    *j = (jrect){0};
}
