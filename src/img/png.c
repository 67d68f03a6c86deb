/* png.c — PNG through libpng's classic API: header probe, decode to 8-bit grey or RGB, encode.
 *
 * Contract:
 *  - Probe reads only the signature and the IHDR chunk, which must come first (its CRC is
 *    checked); decode runs the same checks before libpng sees the bytes.
 *  - Decode: palettes are expanded to RGB, grey below 8 bits widened, 16-bit samples scaled to
 *    8 bits (rounded), alpha and tRNS transparency dropped (not composited), gAMA ignored (sample
 *    values are kept as stored, like most loaders do). Interlaced images are supported. The whole
 *    stream up to IEND is read, so CRC errors, a damaged zlib stream or a file that stops early
 *    are errors: BATON_ERR_TRUNCATED when the bytes run out, BATON_ERR_CORRUPT for CRC and data
 *    errors, BATON_ERR_FORMAT for a missing signature or an image over the pixel guard.
 *  - libpng never prints: its warnings are dropped and its errors become baton errors through a
 *    longjmp back into the function that set the jump buffer (which keeps no state in locals
 *    across the jump; the libpng calls live in a separate function, the error in struct png_io).
 *  - libpng cannot reuse a read struct, so its own state (a few tens of KB) is created per image;
 *    the pixel buffer is the caller's baton_image and rows are read straight into it.
 *  - Encode: 8-bit grey or RGB, not interlaced, libpng's default filters and zlib level, no time
 *    or text chunks: the same pixels always give the same bytes. */
#include "img_internal.h"

#include <png.h>
#include <string.h>
#include <zlib.h>

struct png_io {
    const uint8_t *p;   /* reading */
    size_t n, off;
    baton_buf *out;     /* writing */
    int code;           /* baton status of the first error */
    char msg[256];
};

static void on_error(png_structp png, png_const_charp msg)
{
    struct png_io *io = png_get_error_ptr(png);
    if (io->code == 0) {
        io->code = strstr(msg, "CRC") ? BATON_ERR_CORRUPT
                 : strstr(msg, "signature") || strstr(msg, "Not a PNG") ? BATON_ERR_FORMAT
                 : BATON_ERR_CORRUPT;
        snprintf(io->msg, sizeof io->msg, "%s", msg);
    }
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;  /* ancillary-chunk trouble: the pixels are still right; never print */
}

static void read_bytes(png_structp png, png_bytep data, size_t len)
{
    struct png_io *io = png_get_io_ptr(png);
    if (len > io->n - io->off) {
        io->code = BATON_ERR_TRUNCATED;
        snprintf(io->msg, sizeof io->msg, "data ends at byte %zu, in the middle of a chunk", io->n);
        png_error(png, io->msg);
    }
    memcpy(data, io->p + io->off, len);
    io->off += len;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int img_png_probe(const uint8_t *p, size_t n, uint32_t *h, uint32_t *w, uint32_t *c,
                  baton_err *err)
{
    /* signature (8) + length (4) + "IHDR" (4) + 13 data bytes + CRC (4) */
    if (n < 33) {
        if (n < 8 || img_sniff(p, n) != BATON_ENC_PNG)
            return baton_err_set(err, BATON_ERR_FORMAT, "PNG: no PNG signature");
        return baton_err_set(err, BATON_ERR_TRUNCATED, "PNG: %zu bytes, too short for the header",
                             n);
    }
    if (img_sniff(p, n) != BATON_ENC_PNG)
        return baton_err_set(err, BATON_ERR_FORMAT, "PNG: no PNG signature");
    if (be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0)
        return baton_err_set(err, BATON_ERR_CORRUPT, "PNG: first chunk is not a 13-byte IHDR");
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p + 12, 17);
    if (crc != be32(p + 29))
        return baton_err_set(err, BATON_ERR_CORRUPT, "PNG: IHDR CRC 0x%08x, computed 0x%08x",
                             be32(p + 29), crc);
    uint32_t pw = be32(p + 16), ph = be32(p + 20);
    unsigned depth = p[24], ctype = p[25];
    int ok;
    switch (ctype) {
    case 0: ok = depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16; break;
    case 3: ok = depth == 1 || depth == 2 || depth == 4 || depth == 8; break;
    case 2: case 4: case 6: ok = depth == 8 || depth == 16; break;
    default: ok = 0;
    }
    if (!ok)
        return baton_err_set(err, BATON_ERR_CORRUPT, "PNG: colour type %u with bit depth %u",
                             ctype, depth);
    if (p[26] != 0 || p[27] != 0 || p[28] > 1)
        return baton_err_set(err, BATON_ERR_CORRUPT,
                             "PNG: compression %u / filter %u / interlace %u (expected 0/0/0-1)",
                             p[26], p[27], p[28]);
    if (pw > 0x7fffffffu || ph > 0x7fffffffu)
        return baton_err_set(err, BATON_ERR_CORRUPT, "PNG: %ux%u exceeds the PNG limit", pw, ph);
    int rc = img_check_pixels(ph, pw, "PNG", err);
    if (rc) return rc;
    *h = ph;
    *w = pw;
    *c = (ctype & 2) ? 3 : 1;
    return BATON_OK;
}

/* The libpng calls of a decode; a libpng error longjmps out of here into decode_guarded. */
static int decode_steps(png_structp png, png_infop info, struct png_io *io, uint32_t force_c,
                        baton_image *im, baton_err *err)
{
    png_set_read_fn(png, io, read_bytes);
    png_read_info(png, info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, NULL, NULL, NULL);
    int rc = img_check_pixels(h, w, "PNG", err);
    if (rc) return rc;
    uint32_t c = (ctype & PNG_COLOR_MASK_COLOR) ? 3 : 1;
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_scale_16(png);
    if ((ctype & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (png_get_bit_depth(png, info) != 8 || png_get_channels(png, info) != c ||
        rowbytes != (size_t)w * c)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "PNG: colour type %d, depth %d did not convert to 8-bit %u-channel",
                             ctype, depth, c);
    /* room for the widest result, so a later grey -> RGB conversion does not reallocate */
    rc = baton_image_resize(im, h, w, force_c > c ? force_c : c, err);
    if (rc) return rc;
    im->c = c;
    for (int pass = 0; pass < passes; pass++)
        for (png_uint_32 y = 0; y < h; y++) png_read_row(png, im->px + (size_t)y * rowbytes, NULL);
    png_read_end(png, NULL);
    return BATON_OK;
}

/* Sets the jump buffer and holds no locals of its own, so nothing can be clobbered by the jump. */
static int decode_guarded(png_structp png, png_infop info, struct png_io *io, uint32_t force_c,
                          baton_image *im, baton_err *err)
{
    if (setjmp(png_jmpbuf(png)))
        return baton_err_set(err, io->code ? io->code : BATON_ERR_CORRUPT, "PNG: %s", io->msg);
    return decode_steps(png, info, io, force_c, im, err);
}

int img_png_decode(const uint8_t *p, size_t n, uint32_t force_c, baton_image *im, baton_err *err)
{
    /* the header checks first: IHDR must be the first chunk (libpng tolerates ancillary chunks
     * before it), and the pixel guard applies before libpng allocates anything */
    uint32_t ph, pw, pc;
    int rc = img_png_probe(p, n, &ph, &pw, &pc, err);
    if (rc) return rc;
    struct png_io io = {.p = p, .n = n};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
    if (!png) return baton_err_set(err, BATON_ERR_NOMEM, "PNG: cannot create a decoder");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return baton_err_set(err, BATON_ERR_NOMEM, "PNG: cannot create a decoder");
    }
    rc = decode_guarded(png, info, &io, force_c, im, err);
    png_destroy_read_struct(&png, &info, NULL);
    if (rc == BATON_OK && force_c && force_c != im->c) rc = img_convert_channels(im, force_c, err);
    return rc;
}

static void write_bytes(png_structp png, png_bytep data, size_t len)
{
    struct png_io *io = png_get_io_ptr(png);
    if (baton_buf_append(io->out, data, len) != BATON_OK) {
        io->code = BATON_ERR_NOMEM;
        snprintf(io->msg, sizeof io->msg, "out of memory for the encoded image");
        png_error(png, io->msg);
    }
}

static void flush_bytes(png_structp png)
{
    (void)png;
}

static void encode_steps(png_structp png, png_infop info, struct png_io *io,
                         const baton_image *im)
{
    png_set_write_fn(png, io, write_bytes, flush_bytes);
    png_set_IHDR(png, info, im->w, im->h, 8, im->c == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    size_t stride = (size_t)im->w * im->c;
    for (uint32_t y = 0; y < im->h; y++) png_write_row(png, im->px + (size_t)y * stride);
    png_write_end(png, NULL);
}

static int encode_guarded(png_structp png, png_infop info, struct png_io *io,
                          const baton_image *im, baton_err *err)
{
    if (setjmp(png_jmpbuf(png)))
        return baton_err_set(err, io->code ? io->code : BATON_ERR_FORMAT, "PNG: %s", io->msg);
    encode_steps(png, info, io, im);
    return BATON_OK;
}

int img_png_encode(const baton_image *im, baton_buf *out, baton_err *err)
{
    if (im->w > 0x7fffffffu || im->h > 0x7fffffffu)
        return baton_err_set(err, BATON_ERR_ARG, "PNG: %ux%u exceeds the PNG limit", im->h, im->w);
    struct png_io io = {.out = out};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
    if (!png) return baton_err_set(err, BATON_ERR_NOMEM, "PNG: cannot create an encoder");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return baton_err_set(err, BATON_ERR_NOMEM, "PNG: cannot create an encoder");
    }
    int rc = encode_guarded(png, info, &io, im, err);
    png_destroy_write_struct(&png, &info);
    return rc;
}
