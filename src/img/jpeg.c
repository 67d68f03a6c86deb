/* jpeg.c — JPEG through the TurboJPEG API of libjpeg-turbo: header probe, decode to grey or RGB,
 * encode.
 *
 * Contract:
 *  - A fresh decompressor for every probe and decode (a few microseconds): libjpeg keeps a
 *    decompressor's Huffman and quantisation tables from one image to the next, so a file that
 *    uses a table it does not define would decode with an earlier file's — its pixels depending
 *    on what the thread decoded before. One compressor per thread, created on first use and
 *    destroyed when the thread exits (a pthread key destructor). TurboJPEG never prints; its
 *    messages become baton errors.
 *  - Decode: grey JPEGs stay 1 channel, every other colour space becomes RGB (libjpeg's
 *    YCbCr -> RGB with fancy upsampling and the accurate integer IDCT); CMYK/YCCK are refused
 *    (BATON_ERR_FORMAT). Fatal libjpeg errors are BATON_ERR_CORRUPT. libjpeg warnings: a stream
 *    that ends early ("Premature end of JPEG file") is BATON_ERR_TRUNCATED and "premature end of
 *    data segment" is BATON_ERR_CORRUPT; other warnings (e.g. extraneous bytes before a marker)
 *    are accepted, as most loaders do, because the pixels are complete.
 *  - Encode: quality 1..100 (checked by the caller), accurate DCT, subsampling 4:4:4 for
 *    quality >= 90 and 4:2:0 below; grey images give a one-component (grey) JPEG. Written straight
 *    into the output buffer (reserved to TurboJPEG's worst-case size, never reallocated by it).
 *    Deterministic for a given libjpeg-turbo build. */
#include "img_internal.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <turbojpeg.h>

#define JPEG_MAX_DIM 65500  /* libjpeg's limit per side */

static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static pthread_key_t key_enc;
static int keys_ok;

static void destroy_handle(void *h)
{
    if (h) tjDestroy(h);
}

static void make_keys(void)
{
    if (pthread_key_create(&key_enc, destroy_handle) != 0) return;
    keys_ok = 1;
}

static tjhandle new_decompressor(baton_err *err)
{
    tjhandle h = tjInitDecompress();
    if (!h) baton_err_set(err, BATON_ERR_NOMEM, "JPEG: cannot create a decompressor");
    return h;
}

static tjhandle thread_compressor(baton_err *err)
{
    pthread_once(&keys_once, make_keys);
    if (!keys_ok) {
        baton_err_set(err, BATON_ERR_NOMEM, "JPEG: cannot create thread keys");
        return NULL;
    }
    tjhandle h = pthread_getspecific(key_enc);
    if (h) return h;
    h = tjInitCompress();
    if (!h) {
        baton_err_set(err, BATON_ERR_NOMEM, "JPEG: cannot create a compressor");
        return NULL;
    }
    if (pthread_setspecific(key_enc, h) != 0) {
        tjDestroy(h);
        baton_err_set(err, BATON_ERR_NOMEM, "JPEG: cannot store the thread's handle");
        return NULL;
    }
    return h;
}

/* After a failed call TurboJPEG's handle may be left mid-stream (a header error is not always
 * followed by an abort, and later calls then fail the same way), so a failed handle is dropped
 * and the thread gets a fresh one on its next call. Call after the message has been copied. */
static void drop_compressor(tjhandle h)
{
    pthread_setspecific(key_enc, NULL);
    tjDestroy(h);
}

/* Header fields, with the checks shared by probe and decode. */
static int read_header(tjhandle tj, const uint8_t *p, size_t n, uint32_t *h, uint32_t *w,
                       uint32_t *c, baton_err *err)
{
    if (img_sniff(p, n) != BATON_ENC_JPEG)
        return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: no SOI marker (FF D8 FF)");
    if (n > ULONG_MAX) return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: %zu bytes is too big", n);
    int jw = 0, jh = 0, sub = 0, cs = 0;
    if (tjDecompressHeader3(tj, p, (unsigned long)n, &jw, &jh, &sub, &cs) != 0) {
        return baton_err_set(err, BATON_ERR_CORRUPT, "JPEG: bad header: %s", tjGetErrorStr2(tj));
    }
    if (cs == TJCS_CMYK || cs == TJCS_YCCK)
        return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: %s colour space is not supported",
                             cs == TJCS_CMYK ? "CMYK" : "YCCK");
    if (jw <= 0 || jh <= 0)
        return baton_err_set(err, BATON_ERR_CORRUPT, "JPEG: %dx%d image", jh, jw);
    int rc = img_check_pixels((uint64_t)jh, (uint64_t)jw, "JPEG", err);
    if (rc) return rc;
    *h = (uint32_t)jh;
    *w = (uint32_t)jw;
    *c = cs == TJCS_GRAY ? 1 : 3;
    return BATON_OK;
}

int img_jpeg_probe(const uint8_t *p, size_t n, uint32_t *h, uint32_t *w, uint32_t *c,
                   baton_err *err)
{
    tjhandle tj = new_decompressor(err);
    if (!tj) return err ? err->code : BATON_ERR_NOMEM;
    int rc = read_header(tj, p, n, h, w, c, err);
    tjDestroy(tj);
    return rc;
}

/* The decode itself, on a handle whose header has been read. */
static int decode_into(tjhandle tj, const uint8_t *p, size_t n, baton_image *im, baton_err *err)
{
    uint32_t h = im->h, w = im->w, c = im->c;
    int rc, pf = c == 1 ? TJPF_GRAY : TJPF_RGB;
    if (tjDecompress2(tj, p, (unsigned long)n, im->px, (int)w, 0, (int)h, pf,
                      TJFLAG_ACCURATEDCT) != 0) {
        const char *msg = tjGetErrorStr2(tj);
        rc = BATON_ERR_CORRUPT;
        if (tjGetErrorCode(tj) == TJERR_WARNING) {
            if (strstr(msg, "Premature end of JPEG file")) rc = BATON_ERR_TRUNCATED;
            else if (!strstr(msg, "premature end of data segment"))
                return BATON_OK;  /* a harmless warning: the image is complete */
        }
        return baton_err_set(err, rc, "JPEG: %s", msg);
    }
    return BATON_OK;
}

int img_jpeg_decode(const uint8_t *p, size_t n, uint32_t force_c, baton_image *im,
                    baton_err *err)
{
    tjhandle tj = new_decompressor(err);
    if (!tj) return err ? err->code : BATON_ERR_NOMEM;
    uint32_t h, w, c;
    int rc = read_header(tj, p, n, &h, &w, &c, err);
    if (!rc && force_c) c = force_c;  /* libjpeg converts YCbCr -> grey (Y) and grey -> RGB itself */
    if (!rc) rc = baton_image_resize(im, h, w, c, err);
    if (!rc) rc = decode_into(tj, p, n, im, err);
    tjDestroy(tj);
    return rc;
}

int img_jpeg_encode(const baton_image *im, int quality, baton_buf *out, baton_err *err)
{
    if (im->w > JPEG_MAX_DIM || im->h > JPEG_MAX_DIM)
        return baton_err_set(err, BATON_ERR_ARG, "JPEG: %ux%u image (at most %d per side)", im->h,
                             im->w, JPEG_MAX_DIM);
    tjhandle tj = thread_compressor(err);
    if (!tj) return err ? err->code : BATON_ERR_NOMEM;
    int sub = im->c == 1 ? TJSAMP_GRAY : quality >= 90 ? TJSAMP_444 : TJSAMP_420;
    unsigned long bound = tjBufSize((int)im->w, (int)im->h, sub);
    if (bound == (unsigned long)-1 || bound > SIZE_MAX)
        return baton_err_set(err, BATON_ERR_ARG, "JPEG: cannot size a %ux%u image", im->h, im->w);
    if (baton_buf_reserve(out, (size_t)bound) != BATON_OK)
        return baton_err_set(err, BATON_ERR_NOMEM, "JPEG: out of memory for %lu bytes", bound);
    unsigned char *dst = out->data + out->len;
    unsigned long size = 0;
    if (tjCompress2(tj, im->px, (int)im->w, 0, (int)im->h, im->c == 1 ? TJPF_GRAY : TJPF_RGB, &dst,
                    &size, sub, quality, TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0) {
        baton_err_set(err, BATON_ERR_FORMAT, "JPEG: encode failed: %s", tjGetErrorStr2(tj));
        drop_compressor(tj);
        return BATON_ERR_FORMAT;
    }
    if (dst != out->data + out->len || size > bound)
        return baton_err_set(err, BATON_ERR_FORMAT, "JPEG: encoder left the reserved buffer");
    out->len += (size_t)size;
    return BATON_OK;
}
