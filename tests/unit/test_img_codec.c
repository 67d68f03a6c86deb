/* test_img_codec.c — img codecs: sniffing, probing, exact raw and PNG round trips, JPEG round
 * trips within an error bound, PNG variants (palette, 16-bit, alpha, tRNS, 1-bit, interlaced)
 * written with libpng directly, forced channel conversion, the pixel guard, and clean errors (no
 * crash, no output on stderr) for random, truncated, bit-flipped and CRC-damaged inputs. */
#include "../../src/img/img_internal.h"
#include "baton/img.h"
#include "check.h"

#include <math.h>
#include <png.h>
#include <pthread.h>
#include <stdio.h>
#include <jpeglib.h>
#include <stdlib.h>
#include <zlib.h>

static int is_clean_error(int rc)
{
    return rc == BATON_ERR_FORMAT || rc == BATON_ERR_CORRUPT || rc == BATON_ERR_TRUNCATED;
}

static void fill_random(baton_image *im, uint32_t h, uint32_t w, uint32_t c, baton_rng *r)
{
    baton_err err;
    baton_image_resize(im, h, w, c, &err);
    for (size_t i = 0; i < (size_t)h * w * c; i++) im->px[i] = (uint8_t)baton_rng_next(r);
}

static void fill_smooth(baton_image *im, uint32_t h, uint32_t w, uint32_t c)
{
    baton_err err;
    baton_image_resize(im, h, w, c, &err);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            for (uint32_t k = 0; k < c; k++) {
                double v = 128 + 60 * sin((x + 2.0 * k) / 7.0) + 50 * cos((y + 3.0 * k) / 9.0);
                im->px[((size_t)y * w + x) * c + k] = (uint8_t)lround(v);
            }
}

static double mean_abs_err(const baton_image *a, const baton_image *b)
{
    size_t n = (size_t)a->h * a->w * a->c;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += abs((int)a->px[i] - (int)b->px[i]);
    return s / (double)n;
}

static int same_image(const baton_image *a, const baton_image *b)
{
    return a->h == b->h && a->w == b->w && a->c == b->c &&
           memcmp(a->px, b->px, (size_t)a->h * a->w * a->c) == 0;
}

/* ---- PNG writer for the variants our encoder never produces */
struct mem_out {
    baton_buf *b;
};
static void mem_write(png_structp png, png_bytep d, size_t n)
{
    baton_buf_append(((struct mem_out *)png_get_io_ptr(png))->b, d, n);
}
static void mem_flush(png_structp png)
{
    (void)png;
}
static int write_png_variant(baton_buf *out, uint32_t w, uint32_t h, int depth, int ctype,
                             int interlace, const uint8_t *rows, size_t stride,
                             const png_color *pal, int npal, const uint8_t *trns, int ntrns)
{
    struct mem_out mo = {out};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, &mo, mem_write, mem_flush);
    png_set_IHDR(png, info, w, h, depth, ctype, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (pal) png_set_PLTE(png, info, pal, npal);
    if (trns) png_set_tRNS(png, info, trns, ntrns, NULL);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (uint32_t y = 0; y < h; y++) png_write_row(png, rows + y * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Offset of the first chunk of the given type, or 0. */
static size_t find_chunk(const uint8_t *p, size_t n, const char *type)
{
    size_t off = 8;
    while (off + 12 <= n) {
        uint32_t len = be32(p + off);
        if (memcmp(p + off + 4, type, 4) == 0) return off;
        off += 12 + (size_t)len;
    }
    return 0;
}

static void test_sniff_and_image(void)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const uint8_t jpg_sig[3] = {0xff, 0xd8, 0xff};
    CHECK(img_sniff(png_sig, 8) == BATON_ENC_PNG);
    CHECK(img_sniff(png_sig, 7) == BATON_ENC_UNKNOWN);
    CHECK(img_sniff(jpg_sig, 3) == BATON_ENC_JPEG);
    CHECK(img_sniff(jpg_sig, 2) == BATON_ENC_UNKNOWN);
    CHECK(img_sniff((const uint8_t *)"hello world", 11) == BATON_ENC_UNKNOWN);
    CHECK(img_sniff(NULL, 0) == BATON_ENC_UNKNOWN);

    baton_image im = {0};
    baton_err err = {0};
    CHECK(baton_image_resize(&im, 10, 10, 3, &err) == BATON_OK);
    CHECK_EQ_U(im.cap, 300);
    uint8_t *px = im.px;
    CHECK(baton_image_resize(&im, 5, 5, 1, &err) == BATON_OK);
    CHECK(im.px == px && im.cap == 300 && im.h == 5 && im.c == 1);  /* never shrinks */
    CHECK(baton_image_resize(&im, UINT32_MAX, UINT32_MAX, 3, &err) == BATON_ERR_ARG ||
          sizeof(size_t) > 8);
    CHECK(im.h == 5);  /* left as it was */
    baton_image_free(&im);
    CHECK(im.px == NULL && im.cap == 0);
}

static void test_raw(baton_rng *r)
{
    baton_image a = {0}, b = {0};
    baton_buf out = {0};
    baton_err err = {0};
    fill_random(&a, 3, 5, 3, r);
    CHECK(baton_img_encode(&a, BATON_ENC_RAW, 0, &out, &err) == BATON_OK);
    CHECK_EQ_U(out.len, 45);
    uint32_t ex[3] = {3, 5, 3}, h, w, c;
    CHECK(img_probe(out.data, out.len, BATON_ENC_RAW, ex, &h, &w, &c, &err) == BATON_OK);
    CHECK(h == 3 && w == 5 && c == 3);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_RAW, ex, &b, &err) == BATON_OK);
    CHECK(same_image(&a, &b));
    CHECK(baton_img_decode(out.data, out.len - 1, BATON_ENC_RAW, ex, &b, &err) ==
          BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "44 bytes, expected 45") != NULL);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_RAW, NULL, &b, &err) == BATON_ERR_ARG);
    uint32_t bad_c[3] = {3, 5, 2};
    CHECK(baton_img_decode(out.data, 30, BATON_ENC_RAW, bad_c, &b, &err) == BATON_ERR_ARG);
    uint32_t huge[3] = {65536, 65536, 1};
    CHECK(img_probe(out.data, out.len, BATON_ENC_RAW, huge, &h, &w, &c, &err) ==
          BATON_ERR_FORMAT);
    /* encode refuses nonsense images and appends nothing */
    baton_image bad = a;
    bad.c = 2;
    size_t before = out.len;
    CHECK(baton_img_encode(&bad, BATON_ENC_PNG, 0, &out, &err) == BATON_ERR_ARG);
    CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 0, &out, &err) == BATON_ERR_ARG);
    CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 101, &out, &err) == BATON_ERR_ARG);
    CHECK(baton_img_encode(&a, BATON_ENC_UNKNOWN, 90, &out, &err) == BATON_ERR_ARG);
    CHECK(out.len == before);
    baton_image_free(&a);
    baton_image_free(&b);
    baton_buf_free(&out);
}

static const uint32_t sizes[][2] = {{1, 1}, {3, 5}, {5, 3}, {28, 28}, {32, 32}, {17, 100}};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void test_png_round_trip(baton_rng *r)
{
    baton_image a = {0}, b = {0};
    baton_buf out = {0}, again = {0};
    baton_err err = {0};
    for (size_t s = 0; s < NSIZES; s++)
        for (uint32_t c = 1; c <= 3; c += 2) {
            fill_random(&a, sizes[s][0], sizes[s][1], c, r);
            out.len = again.len = 0;
            CHECK(baton_img_encode(&a, BATON_ENC_PNG, 0, &out, &err) == BATON_OK);
            CHECK(baton_img_encode(&a, BATON_ENC_PNG, 0, &again, &err) == BATON_OK);
            CHECK(out.len == again.len && memcmp(out.data, again.data, out.len) == 0);
            CHECK(img_sniff(out.data, out.len) == BATON_ENC_PNG);
            uint32_t h = 0, w = 0, pc = 0;
            CHECK(img_probe(out.data, out.len, BATON_ENC_PNG, NULL, &h, &w, &pc, &err) ==
                  BATON_OK);
            CHECK(h == sizes[s][0] && w == sizes[s][1] && pc == c);
            CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_OK);
            CHECK_MSG(same_image(&a, &b), "%ux%ux%u", a.h, a.w, a.c);
            /* UNKNOWN sniffs */
            CHECK(baton_img_decode(out.data, out.len, BATON_ENC_UNKNOWN, NULL, &b, &err) ==
                  BATON_OK);
            CHECK(same_image(&a, &b));
        }
    /* forced channels: grey -> RGB replicates, RGB -> grey is BT.601 luma */
    fill_random(&a, 7, 9, 1, r);
    out.len = 0;
    CHECK(baton_img_encode(&a, BATON_ENC_PNG, 0, &out, &err) == BATON_OK);
    uint32_t rgb[3] = {0, 0, 3}, grey[3] = {0, 0, 1}, h, w, c;
    CHECK(img_probe(out.data, out.len, BATON_ENC_PNG, rgb, &h, &w, &c, &err) == BATON_OK);
    CHECK(c == 3);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, rgb, &b, &err) == BATON_OK);
    int ok = b.c == 3;
    for (size_t i = 0; ok && i < 63; i++)
        ok = b.px[3 * i] == a.px[i] && b.px[3 * i + 1] == a.px[i] && b.px[3 * i + 2] == a.px[i];
    CHECK(ok);
    fill_random(&a, 9, 7, 3, r);
    out.len = 0;
    CHECK(baton_img_encode(&a, BATON_ENC_PNG, 0, &out, &err) == BATON_OK);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, grey, &b, &err) == BATON_OK);
    ok = b.c == 1 && b.h == 9 && b.w == 7;
    for (size_t i = 0; ok && i < 63; i++) {
        double y = 0.299 * a.px[3 * i] + 0.587 * a.px[3 * i + 1] + 0.114 * a.px[3 * i + 2];
        ok = fabs(b.px[i] - y) <= 0.51;
    }
    CHECK(ok);
    /* expected H/W are checked */
    uint32_t wrong[3] = {9, 8, 0}, right[3] = {9, 7, 3}, bad_c[3] = {0, 0, 4};
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, wrong, &b, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "9x7 image, expected 9x8") != NULL);
    CHECK(img_probe(out.data, out.len, BATON_ENC_PNG, wrong, &h, &w, &c, &err) ==
          BATON_ERR_FORMAT);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, right, &b, &err) == BATON_OK);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, bad_c, &b, &err) == BATON_ERR_ARG);
    baton_image_free(&a);
    baton_image_free(&b);
    baton_buf_free(&out);
    baton_buf_free(&again);
}

static void test_png_variants(void)
{
    baton_buf out = {0};
    baton_image im = {0};
    baton_err err = {0};
    uint8_t rows[4096];
    const uint32_t w = 6, h = 4;

    /* RGBA 8-bit: alpha dropped, colour kept */
    for (uint32_t i = 0; i < w * h * 4; i++) rows[i] = (uint8_t)(i * 7);
    CHECK(write_png_variant(&out, w, h, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE, rows, w * 4,
                            NULL, 0, NULL, 0) == 0);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    int ok = im.c == 3 && im.h == h && im.w == w;
    for (uint32_t i = 0; ok && i < w * h; i++)
        ok = im.px[3 * i] == rows[4 * i] && im.px[3 * i + 1] == rows[4 * i + 1] &&
             im.px[3 * i + 2] == rows[4 * i + 2];
    CHECK(ok);

    /* grey + alpha */
    out.len = 0;
    CHECK(write_png_variant(&out, w, h, 8, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_INTERLACE_NONE, rows,
                            w * 2, NULL, 0, NULL, 0) == 0);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    ok = im.c == 1;
    for (uint32_t i = 0; ok && i < w * h; i++) ok = im.px[i] == rows[2 * i];
    CHECK(ok);

    /* 16-bit grey: scaled to 8 bits with rounding */
    uint16_t v16[] = {0, 65535, 257, 32768, 128, 40000};
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint16_t v = v16[(x + y) % 6];
            rows[(y * w + x) * 2] = (uint8_t)(v >> 8);
            rows[(y * w + x) * 2 + 1] = (uint8_t)v;
        }
    out.len = 0;
    CHECK(write_png_variant(&out, w, h, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, rows, w * 2,
                            NULL, 0, NULL, 0) == 0);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    ok = im.c == 1;
    for (uint32_t y = 0; ok && y < h; y++)
        for (uint32_t x = 0; ok && x < w; x++) {
            long want = lround(v16[(x + y) % 6] * 255.0 / 65535.0);
            ok = labs((long)im.px[y * w + x] - want) <= 1;
        }
    CHECK(ok);

    /* 16-bit RGBA */
    for (uint32_t i = 0; i < w * h * 8; i++) rows[i] = (uint8_t)(i * 13);
    out.len = 0;
    CHECK(write_png_variant(&out, w, h, 16, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE, rows,
                            w * 8, NULL, 0, NULL, 0) == 0);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    CHECK(im.c == 3 && im.w == w);

    /* palette (4-bit) with tRNS: expanded to RGB, transparency dropped */
    png_color pal[3] = {{255, 0, 0}, {0, 255, 0}, {10, 20, 30}};
    uint8_t trns[3] = {0, 128, 255};
    const uint32_t pstride = (w + 1) / 2;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < pstride; x++) {
            uint8_t i0 = (uint8_t)((2 * x + y) % 3), i1 = (uint8_t)((2 * x + 1 + y) % 3);
            rows[y * pstride + x] = (uint8_t)(i0 << 4 | i1);
        }
    out.len = 0;
    CHECK(write_png_variant(&out, w, h, 4, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, rows,
                            pstride, pal, 3, trns, 3) == 0);
    uint32_t ph, pw, pc;
    CHECK(img_probe(out.data, out.len, BATON_ENC_PNG, NULL, &ph, &pw, &pc, &err) == BATON_OK);
    CHECK(pc == 3);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    ok = im.c == 3;
    for (uint32_t y = 0; ok && y < h; y++)
        for (uint32_t x = 0; ok && x < w; x++) {
            const png_color *e = &pal[(x + y) % 3];
            const uint8_t *px = im.px + (y * w + x) * 3;
            ok = px[0] == e->red && px[1] == e->green && px[2] == e->blue;
        }
    CHECK(ok);

    /* 1-bit grey: 0 / 255 */
    for (uint32_t y = 0; y < h; y++) rows[y] = (uint8_t)(y & 1 ? 0xa8 : 0x54);  /* 6 pixels used */
    out.len = 0;
    CHECK(write_png_variant(&out, w, h, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, rows, 1, NULL,
                            0, NULL, 0) == 0);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    ok = im.c == 1;
    for (uint32_t y = 0; ok && y < h; y++)
        for (uint32_t x = 0; ok && x < w; x++) {
            int bit = (rows[y] >> (7 - x)) & 1;
            ok = im.px[y * w + x] == (bit ? 255 : 0);
        }
    CHECK(ok);

    /* interlaced RGB: exact */
    const uint32_t iw = 13, ih = 11;
    for (uint32_t i = 0; i < iw * ih * 3; i++) rows[i] = (uint8_t)(i * 31 + 5);
    out.len = 0;
    CHECK(write_png_variant(&out, iw, ih, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, rows, iw * 3,
                            NULL, 0, NULL, 0) == 0);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_PNG, NULL, &im, &err) == BATON_OK);
    CHECK(im.h == ih && im.w == iw && im.c == 3 && memcmp(im.px, rows, iw * ih * 3) == 0);

    baton_image_free(&im);
    baton_buf_free(&out);
}

static void test_jpeg(void)
{
    baton_image a = {0}, b = {0};
    baton_buf out = {0}, again = {0};
    baton_err err = {0};
    for (size_t s = 0; s < NSIZES; s++)
        for (uint32_t c = 1; c <= 3; c += 2) {
            fill_smooth(&a, sizes[s][0], sizes[s][1], c);
            out.len = again.len = 0;
            CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 95, &out, &err) == BATON_OK);
            CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 95, &again, &err) == BATON_OK);
            CHECK(out.len == again.len && memcmp(out.data, again.data, out.len) == 0);
            CHECK(img_sniff(out.data, out.len) == BATON_ENC_JPEG);
            uint32_t h = 0, w = 0, pc = 0;
            CHECK(img_probe(out.data, out.len, BATON_ENC_JPEG, NULL, &h, &w, &pc, &err) ==
                  BATON_OK);
            CHECK(h == sizes[s][0] && w == sizes[s][1] && pc == c);
            CHECK(baton_img_decode(out.data, out.len, BATON_ENC_JPEG, NULL, &b, &err) == BATON_OK);
            CHECK(b.h == a.h && b.w == a.w && b.c == a.c);
            double mae = mean_abs_err(&a, &b);
            CHECK_MSG(mae < 3.0, "%ux%ux%u q95 mae %.3f", a.h, a.w, a.c, mae);
            /* quality 50 (4:2:0 for colour) still resembles the image */
            out.len = 0;
            CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 50, &out, &err) == BATON_OK);
            CHECK(baton_img_decode(out.data, out.len, BATON_ENC_JPEG, NULL, &b, &err) == BATON_OK);
            mae = mean_abs_err(&a, &b);
            CHECK_MSG(mae < 8.0, "%ux%ux%u q50 mae %.3f", a.h, a.w, a.c, mae);
        }
    /* forced channels */
    fill_smooth(&a, 16, 24, 3);
    out.len = 0;
    CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 90, &out, &err) == BATON_OK);
    uint32_t grey[3] = {16, 24, 1}, rgb[3] = {0, 0, 3}, wrong[3] = {24, 16, 0};
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_JPEG, grey, &b, &err) == BATON_OK);
    CHECK(b.c == 1 && b.h == 16 && b.w == 24);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_JPEG, wrong, &b, &err) == BATON_ERR_FORMAT);
    fill_smooth(&a, 16, 24, 1);
    out.len = 0;
    CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 90, &out, &err) == BATON_OK);
    CHECK(baton_img_decode(out.data, out.len, BATON_ENC_JPEG, rgb, &b, &err) == BATON_OK);
    int ok = b.c == 3;
    for (size_t i = 0; ok && i < 16 * 24; i++)
        ok = b.px[3 * i] == b.px[3 * i + 1] && b.px[3 * i] == b.px[3 * i + 2] &&
             abs((int)b.px[3 * i] - (int)a.px[i]) < 12;
    CHECK(ok);
    baton_image_free(&a);
    baton_image_free(&b);
    baton_buf_free(&out);
    baton_buf_free(&again);
}

static void test_bad_inputs(baton_rng *r)
{
    baton_image a = {0}, b = {0};
    baton_buf png = {0}, jpg = {0}, tmp = {0};
    baton_err err = {0};
    fill_smooth(&a, 32, 32, 3);
    CHECK(baton_img_encode(&a, BATON_ENC_PNG, 0, &png, &err) == BATON_OK);
    CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 90, &jpg, &err) == BATON_OK);

    /* random bytes, with and without a signature in front */
    uint8_t junk[512];
    int all_clean = 1;
    for (int t = 0; t < 200; t++) {
        for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)baton_rng_next(r);
        size_t n = 1 + baton_rng_below(r, sizeof junk);
        if (t % 3 == 1) memcpy(junk, png.data, n < 33 ? n : 33);
        if (t % 3 == 2) memcpy(junk, jpg.data, n < 20 ? n : 20);
        baton_encoding encs[3] = {BATON_ENC_UNKNOWN, BATON_ENC_PNG, BATON_ENC_JPEG};
        for (int e = 0; e < 3; e++) {
            int rc = baton_img_decode(junk, n, encs[e], NULL, &b, &err);
            all_clean &= is_clean_error(rc) && err.msg[0] != 0;
        }
    }
    CHECK(all_clean);
    CHECK(baton_img_decode(jpg.data, jpg.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_ERR_FORMAT);
    CHECK(baton_img_decode(png.data, png.len, BATON_ENC_JPEG, NULL, &b, &err) == BATON_ERR_FORMAT);
    CHECK(baton_img_decode(png.data, 0, BATON_ENC_UNKNOWN, NULL, &b, &err) == BATON_ERR_FORMAT);

    /* every proper prefix fails cleanly */
    int png_prefix_ok = 1, jpg_prefix_ok = 1;
    for (size_t n = 0; n < png.len; n++) {
        int rc = baton_img_decode(png.data, n, BATON_ENC_PNG, NULL, &b, &err);
        if (!is_clean_error(rc)) png_prefix_ok = 0;
    }
    for (size_t n = 0; n < jpg.len; n++) {
        int rc = baton_img_decode(jpg.data, n, BATON_ENC_JPEG, NULL, &b, &err);
        if (!is_clean_error(rc)) {
            if (jpg_prefix_ok) fprintf(stderr, "JPEG prefix %zu/%zu: rc %d\n", n, jpg.len, rc);
            jpg_prefix_ok = 0;
        }
    }
    CHECK(png_prefix_ok);
    CHECK(jpg_prefix_ok);
    CHECK(baton_img_decode(png.data, png.len - 20, BATON_ENC_PNG, NULL, &b, &err) ==
          BATON_ERR_TRUNCATED);
    CHECK(baton_img_decode(jpg.data, jpg.len - 10, BATON_ENC_JPEG, NULL, &b, &err) ==
          BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "Premature end") != NULL);
    /* a failed header must not poison the thread's decompressor */
    CHECK(baton_img_decode(jpg.data, jpg.len / 3, BATON_ENC_JPEG, NULL, &b, &err) < 0);
    CHECK(baton_img_decode(jpg.data, jpg.len, BATON_ENC_JPEG, NULL, &b, &err) == BATON_OK);
    CHECK(baton_img_decode(jpg.data, 40, BATON_ENC_JPEG, NULL, &b, &err) < 0);
    CHECK(img_probe(jpg.data, jpg.len, BATON_ENC_JPEG, NULL, &b.h, &b.w, &b.c, &err) ==
          BATON_OK);

    /* CRC damage: IDAT's stored CRC, then one byte of IDAT data, then IHDR's CRC */
    size_t idat = find_chunk(png.data, png.len, "IDAT");
    CHECK(idat > 0);
    uint32_t idat_len = be32(png.data + idat);
    tmp.len = 0;
    baton_buf_append(&tmp, png.data, png.len);
    tmp.data[idat + 8 + idat_len] ^= 0x01;
    CHECK(baton_img_decode(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_ERR_CORRUPT);
    CHECK(strstr(err.msg, "CRC") != NULL);
    memcpy(tmp.data, png.data, png.len);
    tmp.data[idat + 8 + idat_len / 2] ^= 0x40;
    CHECK(baton_img_decode(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_ERR_CORRUPT);
    memcpy(tmp.data, png.data, png.len);
    tmp.data[29] ^= 0xff;
    uint32_t h, w, c;
    CHECK(img_probe(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &h, &w, &c, &err) ==
          BATON_ERR_CORRUPT);
    CHECK(baton_img_decode(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_ERR_CORRUPT);

    /* an ancillary chunk before IHDR (libpng alone would accept it): refused by probe and decode */
    tmp.len = 0;
    baton_buf_append(&tmp, png.data, 8);
    static const uint8_t early[16] = {0, 0, 0, 4, 't', 'e', 'X', 't', 'a', '\0', 'b', 'c'};
    uint32_t ecrc = (uint32_t)crc32(crc32(0, NULL, 0), early + 4, 8);
    uint8_t ecrcb[4] = {(uint8_t)(ecrc >> 24), (uint8_t)(ecrc >> 16), (uint8_t)(ecrc >> 8),
                        (uint8_t)ecrc};
    baton_buf_append(&tmp, early, 12);
    baton_buf_append(&tmp, ecrcb, 4);
    baton_buf_append(&tmp, png.data + 8, png.len - 8);
    CHECK(img_probe(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &h, &w, &c, &err) ==
          BATON_ERR_CORRUPT);
    CHECK(baton_img_decode(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_ERR_CORRUPT);
    CHECK(strstr(err.msg, "IHDR") != NULL);
    tmp.len = 0;
    CHECK(baton_buf_reserve(&tmp, png.len > jpg.len ? png.len : jpg.len) == BATON_OK);

    /* random single-byte damage: never a crash; decodes that pass have the right shape */
    int shapes_ok = 1;
    for (int t = 0; t < 300; t++) {
        baton_buf *src = t & 1 ? &jpg : &png;
        memcpy(tmp.data, src->data, src->len);
        size_t pos = baton_rng_below(r, src->len);
        tmp.data[pos] ^= (uint8_t)(1 + baton_rng_below(r, 255));
        int rc = baton_img_decode(tmp.data, src->len, BATON_ENC_UNKNOWN, NULL, &b, &err);
        if (rc == BATON_OK) shapes_ok &= b.h * b.w <= BATON_IMG_MAX_PIXELS && (b.c == 1 || b.c == 3);
        else shapes_ok &= is_clean_error(rc) || rc == BATON_ERR_ARG;
    }
    CHECK(shapes_ok);

    /* the pixel guard: a PNG header announcing 10000x10000 (valid CRC), a JPEG SOF of 65000^2 */
    tmp.len = 0;
    baton_buf_append(&tmp, png.data, png.len);
    uint8_t dim[4] = {0, 0, 0x27, 0x10};  /* 10000 */
    memcpy(tmp.data + 16, dim, 4);
    memcpy(tmp.data + 20, dim, 4);
    uint32_t crc = (uint32_t)crc32(crc32(0, NULL, 0), tmp.data + 12, 17);
    uint8_t crcb[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    memcpy(tmp.data + 29, crcb, 4);
    CHECK(img_probe(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &h, &w, &c, &err) ==
          BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "larger than") != NULL);
    CHECK(baton_img_decode(tmp.data, tmp.len, BATON_ENC_PNG, NULL, &b, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "larger than") != NULL);
    tmp.len = 0;
    baton_buf_append(&tmp, jpg.data, jpg.len);
    size_t sof = 0;
    for (size_t i = 2; i + 9 < tmp.len; i++)
        if (tmp.data[i] == 0xff && tmp.data[i + 1] == 0xc0) {
            sof = i;
            break;
        }
    CHECK(sof > 0);
    tmp.data[sof + 5] = 0xfd;  /* height 65000 */
    tmp.data[sof + 6] = 0xe8;
    tmp.data[sof + 7] = 0xfd;  /* width 65000 */
    tmp.data[sof + 8] = 0xe8;
    CHECK(img_probe(tmp.data, tmp.len, BATON_ENC_JPEG, NULL, &h, &w, &c, &err) ==
          BATON_ERR_FORMAT);
    CHECK(baton_img_decode(tmp.data, tmp.len, BATON_ENC_JPEG, NULL, &b, &err) == BATON_ERR_FORMAT);
    CHECK(strstr(err.msg, "larger than") != NULL);

    baton_image_free(&a);
    baton_image_free(&b);
    baton_buf_free(&png);
    baton_buf_free(&jpg);
    baton_buf_free(&tmp);
}

/* Per-thread TurboJPEG handles: threads decode and encode at once and agree with the main
 * thread; their handles are released when they exit (the leak checker watches). */
struct thread_job {
    const baton_buf *jpg;
    const baton_image *want;
    int ok;
};

static void *jpeg_worker(void *arg)
{
    struct thread_job *job = arg;
    baton_image im = {0};
    baton_buf out = {0};
    baton_err err;
    job->ok = 1;
    for (int i = 0; i < 200; i++) {
        job->ok &= baton_img_decode(job->jpg->data, job->jpg->len, BATON_ENC_JPEG, NULL, &im,
                                    &err) == BATON_OK && same_image(&im, job->want);
        job->ok &= baton_img_decode(job->jpg->data, job->jpg->len / 2, BATON_ENC_JPEG, NULL, &im,
                                    &err) < 0;
        out.len = 0;
        job->ok &= baton_img_encode(job->want, BATON_ENC_JPEG, 80, &out, &err) == BATON_OK;
    }
    baton_image_free(&im);
    baton_buf_free(&out);
    return NULL;
}

static void test_threads(void)
{
    baton_image a = {0}, want = {0};
    baton_buf jpg = {0};
    baton_err err;
    fill_smooth(&a, 40, 30, 3);
    CHECK(baton_img_encode(&a, BATON_ENC_JPEG, 85, &jpg, &err) == BATON_OK);
    CHECK(baton_img_decode(jpg.data, jpg.len, BATON_ENC_JPEG, NULL, &want, &err) == BATON_OK);
    pthread_t t[3];
    struct thread_job jobs[3];
    for (int i = 0; i < 3; i++) {
        jobs[i] = (struct thread_job){&jpg, &want, 0};
        CHECK(pthread_create(&t[i], NULL, jpeg_worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(jobs[i].ok);
    }
    baton_image_free(&a);
    baton_image_free(&want);
    baton_buf_free(&jpg);
}

/* A JPEG whose scan uses Huffman table 0 while its DHT segments define table 2 (the file lacks
 * the tables it needs): its decode must not depend on what the thread decoded before (libjpeg
 * keeps a decompressor's tables from one image to the next). */
struct tables_job {
    const baton_buf *bad;
    int rc;
    baton_image out;
};

static void *decode_fresh(void *arg)
{
    struct tables_job *j = arg;
    baton_err err;
    j->rc = baton_img_decode(j->bad->data, j->bad->len, BATON_ENC_JPEG, NULL, &j->out, &err);
    return NULL;
}

/* RGB a (h×w×3) as a baseline JPEG with Huffman tables optimised for it (not the standard ones
 * TurboJPEG's encoder and libjpeg's defaults use), through libjpeg itself. */
static void encode_optimised(const baton_image *a, baton_buf *out)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *mem = NULL;
    unsigned long len = 0;
    jpeg_mem_dest(&c, &mem, &len);
    c.image_width = a->w;
    c.image_height = a->h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 85, TRUE);
    c.optimize_coding = TRUE;
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = a->px + (size_t)c.next_scanline * a->w * 3;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    baton_buf_append(out, mem, len);
    free(mem);
}

static void test_tables_not_kept(void)
{
    baton_image a = {0}, after = {0};
    baton_buf good = {0}, bad = {0};
    baton_err err;
    fill_smooth(&a, 32, 40, 3);
    encode_optimised(&a, &good);
    baton_buf_append(&bad, good.data, good.len);
    int changed = 0;
    for (size_t i = 2; i + 4 < bad.len; i++)   /* every DHT's first table: class/id 0x00 -> 0x02 */
        if (bad.data[i] == 0xff && bad.data[i + 1] == 0xc4 && (bad.data[i + 4] & 0x0f) == 0) {
            bad.data[i + 4] |= 0x02;
            changed++;
        }
    CHECK(changed > 0);
    struct tables_job fresh = {&bad, 0, {0}};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, decode_fresh, &fresh) == 0);   /* a thread that decoded nothing */
    pthread_join(t, NULL);
    baton_image tmp = {0};
    CHECK(baton_img_decode(good.data, good.len, BATON_ENC_JPEG, NULL, &tmp, &err) == BATON_OK);
    int rc = baton_img_decode(bad.data, bad.len, BATON_ENC_JPEG, NULL, &after, &err);
    CHECK_MSG(rc == fresh.rc && (rc != BATON_OK || (after.h == fresh.out.h && after.w == fresh.out.w &&
                                                    !memcmp(after.px, fresh.out.px, (size_t)after.h * after.w * after.c))),
              "a JPEG lacking its tables decodes differently after another JPEG (%d, %d)", fresh.rc, rc);
    baton_image_free(&a);
    baton_image_free(&after);
    baton_image_free(&tmp);
    baton_image_free(&fresh.out);
    baton_buf_free(&good);
    baton_buf_free(&bad);
}

int main(void)
{
    baton_rng r;
    baton_rng_seed(&r, 7);
    test_sniff_and_image();
    test_raw(&r);
    test_png_round_trip(&r);
    test_png_variants();
    test_jpeg();
    test_bad_inputs(&r);
    test_threads();
    test_tables_not_kept();
    CHECK_DONE();
}
