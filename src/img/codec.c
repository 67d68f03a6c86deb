/* codec.c — the image codec front door: sniffing, and the dispatch of probe / decode / encode to
 * raw (here), PNG (png.c) and JPEG (jpeg.c); the pixel guard and grey/RGB conversion they share.
 *
 * Contract:
 *  - enc BATON_ENC_UNKNOWN means "sniff it": PNG or JPEG by signature, else BATON_ERR_FORMAT.
 *  - RAW needs expect = {H, W, C}, all non-zero, C 1 or 3, and n == H*W*C exactly.
 *  - For PNG / JPEG, expect may be NULL. Non-zero expect[0] / expect[1] are checked against the
 *    image (BATON_ERR_FORMAT on mismatch); non-zero expect[2] (1 or 3) forces grey or RGB.
 *  - Images are non-empty and at most BATON_IMG_MAX_PIXELS pixels (checked from the header,
 *    before any pixel buffer is allocated).
 *  - Encoding appends to out and leaves out->len unchanged on failure. Deterministic. */
#include "img_internal.h"

#include <string.h>

static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

baton_encoding img_sniff(const uint8_t *p, size_t n)
{
    if (p && n >= sizeof png_sig && memcmp(p, png_sig, sizeof png_sig) == 0) return BATON_ENC_PNG;
    if (p && n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) return BATON_ENC_JPEG;
    return BATON_ENC_UNKNOWN;
}

int img_check_pixels(uint64_t h, uint64_t w, const char *what, baton_err *err)
{
    if (h == 0 || w == 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: empty image (%llux%llu)", what,
                             (unsigned long long)h, (unsigned long long)w);
    /* h and w come from 32-bit header fields, so the product fits in 64 bits */
    if (h > UINT32_MAX || w > UINT32_MAX || h * w > BATON_IMG_MAX_PIXELS)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: %llux%llu image is larger than the %llu pixels accepted", what,
                             (unsigned long long)h, (unsigned long long)w,
                             (unsigned long long)BATON_IMG_MAX_PIXELS);
    return BATON_OK;
}

int img_convert_channels(baton_image *im, uint32_t c, baton_err *err)
{
    if (im->c == c) return BATON_OK;
    size_t npx = (size_t)im->h * im->w;
    if (im->c == 1 && c == 3) {
        int rc = baton_image_resize(im, im->h, im->w, 3, err);
        if (rc) return rc;
        uint8_t *px = im->px;
        for (size_t i = npx; i-- > 0;) {  /* backwards: the grey byte i is read before 3i.. */
            uint8_t v = px[i];
            px[3 * i] = v;
            px[3 * i + 1] = v;
            px[3 * i + 2] = v;
        }
        return BATON_OK;
    }
    if (im->c == 3 && c == 1) {
        uint8_t *px = im->px;
        for (size_t i = 0; i < npx; i++) {
            const uint8_t *s = px + 3 * i;
            /* ITU-R BT.601 luma in 16-bit fixed point; the weights sum to 65536 */
            px[i] = (uint8_t)((19595u * s[0] + 38470u * s[1] + 7471u * s[2] + 32768u) >> 16);
        }
        im->c = 1;
        return BATON_OK;
    }
    return baton_err_set(err, BATON_ERR_ARG, "cannot convert %u channels to %u", im->c, c);
}

static const char *enc_label(baton_encoding enc)
{
    switch (enc) {
    case BATON_ENC_RAW: return "raw";
    case BATON_ENC_PNG: return "PNG";
    case BATON_ENC_JPEG: return "JPEG";
    default: return "unknown encoding";
    }
}

/* Resolve UNKNOWN by sniffing; validate expect[2]. */
static int resolve(const uint8_t *p, size_t n, baton_encoding *enc, const uint32_t expect[3],
                   baton_err *err)
{
    if (!p && n > 0) return baton_err_set(err, BATON_ERR_ARG, "image: NULL buffer of %zu bytes", n);
    if (*enc == BATON_ENC_UNKNOWN) {
        *enc = img_sniff(p, n);
        if (*enc == BATON_ENC_UNKNOWN)
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "image: %zu bytes that are neither PNG nor JPEG (no signature)",
                                 n);
    }
    if (*enc != BATON_ENC_RAW && *enc != BATON_ENC_PNG && *enc != BATON_ENC_JPEG)
        return baton_err_set(err, BATON_ERR_ARG, "image: unknown encoding %d", (int)*enc);
    if (expect && expect[2] != 0 && expect[2] != 1 && expect[2] != 3)
        return baton_err_set(err, BATON_ERR_ARG, "%s: %u channels requested (expected 1 or 3)",
                             enc_label(*enc), expect[2]);
    return BATON_OK;
}

static int raw_check(size_t n, const uint32_t expect[3], baton_err *err)
{
    if (!expect || expect[0] == 0 || expect[1] == 0 || expect[2] == 0)
        return baton_err_set(err, BATON_ERR_ARG, "raw: the image shape {H,W,C} is required");
    int rc = img_check_pixels(expect[0], expect[1], "raw", err);
    if (rc) return rc;
    uint64_t want = (uint64_t)expect[0] * expect[1] * expect[2];
    if ((uint64_t)n != want)
        return baton_err_set(err, n < want ? BATON_ERR_TRUNCATED : BATON_ERR_FORMAT,
                             "raw: %zu bytes, expected %llu for a %ux%ux%u image", n,
                             (unsigned long long)want, expect[0], expect[1], expect[2]);
    return BATON_OK;
}

static int check_dims(baton_encoding enc, uint32_t h, uint32_t w, const uint32_t expect[3],
                      baton_err *err)
{
    if (expect && ((expect[0] && expect[0] != h) || (expect[1] && expect[1] != w)))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %ux%u image, expected %ux%u",
                             enc_label(enc), h, w, expect[0] ? expect[0] : h,
                             expect[1] ? expect[1] : w);
    return BATON_OK;
}

int img_probe(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3],
                    uint32_t *h, uint32_t *w, uint32_t *c, baton_err *err)
{
    int rc = resolve(p, n, &enc, expect, err);
    if (rc) return rc;
    uint32_t ph = 0, pw = 0, pc = 0;
    if (enc == BATON_ENC_RAW) {
        rc = raw_check(n, expect, err);
        if (rc) return rc;
        ph = expect[0];
        pw = expect[1];
        pc = expect[2];
    } else {
        rc = enc == BATON_ENC_PNG ? img_png_probe(p, n, &ph, &pw, &pc, err)
                                  : img_jpeg_probe(p, n, &ph, &pw, &pc, err);
        if (rc) return rc;
        rc = check_dims(enc, ph, pw, expect, err);
        if (rc) return rc;
        if (expect && expect[2]) pc = expect[2];
    }
    if (h) *h = ph;
    if (w) *w = pw;
    if (c) *c = pc;
    return BATON_OK;
}

int baton_img_decode(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3],
                     baton_image *im, baton_err *err)
{
    int rc = resolve(p, n, &enc, expect, err);
    if (rc) return rc;
    if (enc == BATON_ENC_RAW) {
        rc = raw_check(n, expect, err);
        if (rc) return rc;
        rc = baton_image_resize(im, expect[0], expect[1], expect[2], err);
        if (rc) return rc;
        memcpy(im->px, p, n);
        return BATON_OK;
    }
    uint32_t force_c = expect ? expect[2] : 0;
    rc = enc == BATON_ENC_PNG ? img_png_decode(p, n, force_c, im, err)
                              : img_jpeg_decode(p, n, force_c, im, err);
    if (rc) return rc;
    return check_dims(enc, im->h, im->w, expect, err);
}

int baton_img_encode(const baton_image *im, baton_encoding enc, int quality, baton_buf *out,
                     baton_err *err)
{
    if (!im || !out) return baton_err_set(err, BATON_ERR_ARG, "encode: NULL image or buffer");
    if (im->c != 1 && im->c != 3)
        return baton_err_set(err, BATON_ERR_ARG, "encode: %u channels (expected 1 or 3)", im->c);
    int rc = img_check_pixels(im->h, im->w, "encode", err);
    if (rc) return rc;
    if (!im->px) return baton_err_set(err, BATON_ERR_ARG, "encode: image without pixels");
    size_t before = out->len;
    switch (enc) {
    case BATON_ENC_RAW: {
        size_t n = (size_t)im->h * im->w * im->c;
        rc = baton_buf_append(out, im->px, n);
        if (rc) rc = baton_err_set(err, rc, "raw: out of memory for %zu bytes", n);
        break;
    }
    case BATON_ENC_PNG:
        rc = img_png_encode(im, out, err);
        break;
    case BATON_ENC_JPEG:
        if (quality < 1 || quality > 100)
            return baton_err_set(err, BATON_ERR_ARG, "JPEG: quality %d (expected 1..100)",
                                 quality);
        rc = img_jpeg_encode(im, quality, out, err);
        break;
    default:
        return baton_err_set(err, BATON_ERR_ARG, "encode: unknown encoding %d", (int)enc);
    }
    if (rc) out->len = before;
    return rc;
}
