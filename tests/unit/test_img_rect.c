/* test_img_rect.c — JPEGs with a restart marker after every MCU (src/img/jpeg_restart.c,
 * jpeg_rect.c) and the crop decoder's rectangle path for them (src/img/region.c):
 *   - the transcode is lossless: every photo-like JPEG (4:2:0, 4:2:2, 4:4:0, 4:4:4, grey,
 *     progressive, extended-sequential, sizes that are not MCU multiples, 1×1, 6000 wide) decodes
 *     to the same pixels before and after, and the result is indexed (the original is not);
 *   - a rectangle cut from it decodes to the whole image's pixels there (exactly, away from a
 *     subsampled rectangle's inner edges);
 *   - the crop decoder's output on the transcoded file is byte-identical to the ordinary fast
 *     path's (on the same file and on the original) for many boxes and output sizes, boxes pressed
 *     against each edge included, and it took the rectangle path;
 *   - hostile variants (truncated, a marker missing or misnumbered, DRI not 1, a lying size, bit
 *     flips) fall back or fail cleanly, never crash, and a scratch keeps working after them; a
 *     file that uses a Huffman table it does not define decodes the same whatever came before;
 *   - the CPU time of the two paths on one file (printed, never failed on). */
#include "../../src/img/img_internal.h"
#include "../../src/img/jpeg_rect_internal.h"
#include "../../src/img/region_internal.h"
#include "baton/img.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* jpeglib.h needs size_t and FILE first */
#include <jpeglib.h>

static void fill_photo(baton_image *im, uint32_t h, uint32_t w, uint32_t c, uint64_t seed)
{
    baton_err err;
    baton_rng r;
    baton_rng_seed(&r, seed);
    baton_image_resize(im, h, w, c, &err);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            for (uint32_t k = 0; k < c; k++) {
                double u = (double)x / w, v = (double)y / h;
                double g = 90 * u + 60 * v + 40 * sin(6.0 * u + 2.0 * k) * cos(5.0 * v - k);
                double t = 18 * sin(x * 0.45 + y * 0.21 + k) * sin(y * 0.33 - x * 0.12);
                double nz = (double)(baton_rng_next(&r) % 25) - 12;
                double val = 50 + g + t + nz;
                im->px[((size_t)y * w + x) * c + k] = (uint8_t)(val < 0 ? 0 : val > 255 ? 255 : val);
            }
}

static void quiet(j_common_ptr c, int level)
{
    (void)c;
    (void)level;
}

/* libjpeg directly: luma sampled hs × vs (chroma 1×1), progressive or not. */
static int encode(const baton_image *im, int quality, int hs, int vs, int progressive, baton_buf *out)
{
    struct jpeg_compress_struct cj;
    struct jpeg_error_mgr je;
    cj.err = jpeg_std_error(&je);
    je.emit_message = quiet;  /* "quantization tables are too coarse for baseline" below 25 */
    jpeg_create_compress(&cj);
    unsigned char *mem = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&cj, &mem, &size);
    cj.image_width = im->w;
    cj.image_height = im->h;
    cj.input_components = (int)im->c;
    cj.in_color_space = im->c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cj);
    jpeg_set_quality(&cj, quality, quality >= 25);  /* below: 16-bit tables, SOF1 */
    if (im->c == 3) {
        cj.comp_info[0].h_samp_factor = hs;
        cj.comp_info[0].v_samp_factor = vs;
    }
    if (progressive) jpeg_simple_progression(&cj);
    jpeg_start_compress(&cj, TRUE);
    while (cj.next_scanline < cj.image_height) {
        JSAMPROW rp = im->px + (size_t)cj.next_scanline * im->w * im->c;
        jpeg_write_scanlines(&cj, &rp, 1);
    }
    jpeg_finish_compress(&cj);
    jpeg_destroy_compress(&cj);
    out->len = 0;
    int rc = baton_buf_append(out, mem, size);
    free(mem);
    return rc;
}

static double urand(baton_rng *r)
{
    return (double)(baton_rng_next(r) >> 11) / 9007199254740992.0;
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

typedef struct plan_ctx {
    double box[4];
} plan_ctx;

static int plan_fixed(void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    memcpy(box, ((plan_ctx *)ctx)->box, 4 * sizeof(double));
    return BATON_OK;
}

/* A box of an h × w image: RandomResizedCrop-like, pressed against edge k % 5 (4: none), or a
 * fractional centre crop, the whole image, a sliver. */
static void pick_box(baton_rng *r, uint32_t h, uint32_t w, int k, double box[4])
{
    double area = (double)h * w * (0.08 + 0.92 * urand(r));
    double ratio = exp(log(3.0 / 4) + urand(r) * (log(4.0 / 3) - log(3.0 / 4)));
    double bw = round(sqrt(area * ratio)), bh = round(sqrt(area / ratio));
    if (k % 9 == 6) bw = 1 + floor(urand(r) * 3), bh = 1 + floor(urand(r) * 3);  /* a sliver */
    bw = bw < 1 ? 1 : bw > w ? w : bw;
    bh = bh < 1 ? 1 : bh > h ? h : bh;
    double x0 = floor(urand(r) * (w - bw + 1)), y0 = floor(urand(r) * (h - bh + 1));
    if (k % 9 == 0) x0 = 0;
    if (k % 9 == 1) y0 = 0;
    if (k % 9 == 2) x0 = w - bw;
    if (k % 9 == 3) y0 = h - bh;
    if (k % 9 == 4) x0 = y0 = 0, bw = w, bh = h;
    box[0] = x0;
    box[1] = y0;
    box[2] = x0 + bw;
    box[3] = y0 + bh;
    if (k % 9 == 5) {  /* fractional centre crop */
        double f = 0.5 + 0.5 * urand(r);
        box[0] = (w - w * f) / 2;
        box[1] = (h - h * f) / 2;
        box[2] = box[0] + w * f;
        box[3] = box[1] + h * f;
    }
}

typedef struct img_case {
    uint32_t h, w, c;
    int quality, hs, vs, progressive;
    const char *what;
} img_case;

static const img_case cases[] = {
    {375, 500, 3, 85, 2, 2, 0, "500x375 4:2:0"},      {211, 333, 3, 95, 1, 1, 0, "333x211 4:4:4"},
    {193, 257, 1, 85, 1, 1, 0, "257x193 grey"},       {241, 319, 3, 88, 2, 1, 0, "319x241 4:2:2"},
    {203, 151, 3, 88, 1, 2, 0, "151x203 4:4:0"},      {240, 320, 3, 80, 2, 2, 1, "320x240 progressive 4:2:0"},
    {97, 131, 1, 90, 1, 1, 1, "131x97 progressive grey"}, {13, 17, 3, 75, 2, 2, 0, "17x13 4:2:0"},
    {1, 1, 3, 85, 2, 2, 0, "1x1 4:2:0"},              {40, 6000, 3, 85, 2, 2, 0, "6000x40 4:2:0"},
    {800, 24, 3, 85, 2, 2, 0, "24x800 4:2:0"},        {120, 160, 3, 10, 2, 2, 0, "160x120 quality 10 (16-bit tables)"},
    {64, 64, 3, 92, 1, 1, 1, "64x64 progressive 4:4:4"}, {9, 31, 1, 70, 1, 1, 0, "31x9 grey"},
};

static size_t find_marker(const baton_buf *b, uint8_t m)
{
    for (size_t i = 2; i + 1 < b->len; i++)
        if (b->data[i] == 0xff && b->data[i + 1] == m) return i;
    return 0;
}

/* The whole-image pixels of a and b are the same. */
static int same_pixels(const baton_buf *a, const baton_buf *b)
{
    baton_image x = {0}, y = {0};
    baton_err err;
    int ok = baton_img_decode(a->data, a->len, BATON_ENC_JPEG, NULL, &x, &err) == BATON_OK &&
             baton_img_decode(b->data, b->len, BATON_ENC_JPEG, NULL, &y, &err) == BATON_OK && x.h == y.h &&
             x.w == y.w && x.c == y.c && memcmp(x.px, y.px, (size_t)x.h * x.w * x.c) == 0;
    baton_image_free(&x);
    baton_image_free(&y);
    return ok;
}

/* Rectangles cut out decode to the whole image's pixels, away from inner edges when subsampled. */
static void check_rects(const baton_buf *rst, const img_case *ic, baton_rng *r)
{
    jrect j = {0};
    baton_image whole = {0}, part = {0};
    baton_err err;
    CHECK(jrect_index(&j, rst->data, rst->len) == 1);
    CHECK(baton_img_decode(rst->data, rst->len, BATON_ENC_JPEG, NULL, &whole, &err) == BATON_OK);
    int sub = ic->c == 3 && (ic->hs > 1 || ic->vs > 1);
    for (int t = 0; t < 12; t++) {
        uint32_t x0 = (uint32_t)(urand(r) * j.mcux), y0 = (uint32_t)(urand(r) * j.mcuy);
        uint32_t x1 = x0 + 1 + (uint32_t)(urand(r) * (j.mcux - x0)), y1 = y0 + 1 + (uint32_t)(urand(r) * (j.mcuy - y0));
        size_t len = jrect_build(&j, rst->data, x0, x1, y0, y1, 1);
        CHECK(len > 0);
        int rc = baton_img_decode(j.out, len, BATON_ENC_JPEG, NULL, &part, &err);
        CHECK_MSG(rc == BATON_OK, "%s: rectangle %u..%u x %u..%u: %s", ic->what, x0, x1, y0, y1, err.msg);
        if (rc) continue;
        uint32_t px0 = x0 * j.mcu_w, py0 = y0 * j.mcu_h;
        CHECK(part.w == (x1 == j.mcux ? ic->w : x1 * j.mcu_w) - px0 && part.h == (y1 == j.mcuy ? ic->h : y1 * j.mcu_h) - py0);
        /* with chroma subsampling, the rectangle's edges inside the image are upsampled without
         * their neighbours: one MCU in from them is exact */
        uint32_t mx = sub ? j.mcu_w : 0, my = sub ? j.mcu_h : 0;
        uint32_t a = x0 ? mx : 0, b = x1 < j.mcux ? mx : 0, c = y0 ? my : 0, d = y1 < j.mcuy ? my : 0;
        size_t bad = 0;
        for (uint32_t y = c; y + d < part.h; y++)
            for (uint32_t x = a; x + b < part.w; x++)
                bad += memcmp(part.px + ((size_t)y * part.w + x) * part.c,
                              whole.px + ((size_t)(y + py0) * whole.w + x + px0) * whole.c, part.c) != 0;
        CHECK_MSG(bad == 0, "%s: rectangle %u..%u x %u..%u: %zu pixels differ", ic->what, x0, x1, y0, y1, bad);
    }
    jrect_free(&j);
    baton_image_free(&whole);
    baton_image_free(&part);
}

/* The rectangle path with libjpeg's own Huffman decoder: the reference for src/img/jpeg_mcu.c's. */
static img_scratch s_lj = {.huff_off = 1};

/* One crop four ways: the rectangle path on the transcoded file (baton's Huffman decoder, then
 * libjpeg's), the ordinary path on it and on the original. Returns 1 when all gave the same
 * bytes. */
static int crop3(const baton_buf *orig, const baton_buf *rst, const double box[4], uint32_t c, uint32_t oh,
                 uint32_t ow, img_scratch *sr, img_scratch *ss, const char *what)
{
    baton_image a = {0}, b = {0}, o = {0};
    baton_err err;
    plan_ctx p = {{box[0], box[1], box[2], box[3]}};
    uint64_t before = sr->rect_decodes;
    int ra = img_decode_crop(rst->data, rst->len, BATON_ENC_JPEG, NULL, c, plan_fixed, &p, oh, ow, sr, &a, NULL,
                             NULL, &err);
    CHECK_MSG(ra == BATON_OK, "%s: %s", what, err.msg);
    CHECK_MSG(sr->rect_decodes == before + 1, "%s: the rectangle path was not taken", what);
    int rb = img_decode_crop(rst->data, rst->len, BATON_ENC_JPEG, NULL, c, plan_fixed, &p, oh, ow, ss, &b, NULL,
                             NULL, &err);
    int ro = img_decode_crop(orig->data, orig->len, BATON_ENC_JPEG, NULL, c, plan_fixed, &p, oh, ow, ss, &o, NULL,
                             NULL, &err);
    baton_image l = {0};
    before = s_lj.rect_decodes;
    int rl = img_decode_crop(rst->data, rst->len, BATON_ENC_JPEG, NULL, c, plan_fixed, &p, oh, ow, &s_lj, &l, NULL,
                             NULL, &err);
    CHECK_MSG(s_lj.rect_decodes == before + 1, "%s: the rectangle path with libjpeg's decoder was not taken", what);
    size_t n = (size_t)oh * ow * c;
    int same = ra == BATON_OK && rb == BATON_OK && ro == BATON_OK && rl == BATON_OK && !memcmp(a.px, b.px, n) &&
               !memcmp(a.px, o.px, n) && !memcmp(a.px, l.px, n);
    baton_image_free(&l);
    CHECK_MSG(same, "%s: c=%u box (%g,%g)-(%g,%g) to %ux%u: rectangle path differs", what, c, box[0], box[1], box[2],
              box[3], oh, ow);
    baton_image_free(&a);
    baton_image_free(&b);
    baton_image_free(&o);
    return same;
}

static void test_cases(baton_rng *r)
{
    static const uint32_t outs[][2] = {{224, 224}, {32, 32}, {64, 48}, {17, 29}, {1, 1}, {300, 260}, {5, 9}, {112, 112}};
    baton_image im = {0};
    baton_buf orig = {0}, rst = {0};
    img_scratch sr = {0}, ss = {.rect_off = 1};
    jrect j = {0};
    baton_err err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const img_case *ic = &cases[i];
        fill_photo(&im, ic->h, ic->w, ic->c, 2000 + i);
        CHECK(encode(&im, ic->quality, ic->hs, ic->vs, ic->progressive, &orig) == BATON_OK);
        rst.len = 0;
        int rc = img_jpeg_restart(orig.data, orig.len, &rst, &err);
        CHECK_MSG(rc == BATON_OK, "%s: %s", ic->what, err.msg);
        if (rc) continue;
        CHECK_MSG(same_pixels(&orig, &rst), "%s: the transcode changed pixels", ic->what);
        CHECK(jrect_index(&j, orig.data, orig.len) == 0);
        CHECK_MSG(jrect_index(&j, rst.data, rst.len) == 1, "%s: the transcode is not indexed", ic->what);
        if (ic->quality < 25) CHECK_MSG(find_marker(&rst, 0xc1) > 0, "%s: not extended-sequential", ic->what);
        check_rects(&rst, ic, r);
        int same = 0, n = 160;
        for (int k = 0; k < n; k++) {
            double box[4];
            pick_box(r, ic->h, ic->w, k, box);
            const uint32_t *o = outs[baton_rng_next(r) % (sizeof outs / sizeof outs[0])];
            uint32_t c = baton_rng_next(r) % 3 == 0 ? 4 - ic->c : ic->c;
            jmcu_baseline = k & 1;  /* the decoder's two builds (BMI2 where the CPU has it), alternately */
            same += crop3(&orig, &rst, box, c, o[0], o[1], &sr, &ss, ic->what);
            jmcu_baseline = 0;
        }
        printf("%-38s %6zu -> %6zu bytes (%+.1f%%), %d of %d crops byte-identical on the rectangle path\n", ic->what,
               orig.len, rst.len, 100.0 * ((double)rst.len / orig.len - 1), same, n);
    }
    jrect_free(&j);
    img_scratch_free(&sr);
    img_scratch_free(&ss);
    baton_image_free(&im);
    baton_buf_free(&orig);
    baton_buf_free(&rst);
}

/* ---- hostile variants */
static int clean(int rc)
{
    return rc == BATON_OK || rc == BATON_ERR_FORMAT || rc == BATON_ERR_CORRUPT || rc == BATON_ERR_TRUNCATED;
}

/* The rectangle path (sr), the same with libjpeg's Huffman decoder and the ordinary one (ss) on
 * b: clean results; the same bytes where they decoded. Returns the rectangle path's status. */
static int hostile(const baton_buf *b, const double box[4], img_scratch *sr, img_scratch *ss, const char *what)
{
    baton_image x = {0}, y = {0};
    baton_err err;
    plan_ctx p = {{box[0], box[1], box[2], box[3]}};
    err.msg[0] = 0;
    int rx = img_decode_crop(b->data, b->len, BATON_ENC_UNKNOWN, NULL, 3, plan_fixed, &p, 24, 24, sr, &x, NULL, NULL,
                             &err);
    CHECK_MSG(clean(rx) && (rx == BATON_OK || err.msg[0]), "%s: %d", what, rx);
    int ry = img_decode_crop(b->data, b->len, BATON_ENC_UNKNOWN, NULL, 3, plan_fixed, &p, 24, 24, ss, &y, NULL, NULL,
                             &err);
    CHECK_MSG(clean(ry), "%s: %d", what, ry);
    if (rx == BATON_OK && ry == BATON_OK) CHECK_MSG(!memcmp(x.px, y.px, 24 * 24 * 3), "%s: different pixels", what);
    baton_image z = {0};
    int rz = img_decode_crop(b->data, b->len, BATON_ENC_UNKNOWN, NULL, 3, plan_fixed, &p, 24, 24, &s_lj, &z, NULL,
                             NULL, &err);
    CHECK_MSG(clean(rz), "%s: %d", what, rz);
    if (rx == BATON_OK && rz == BATON_OK)
        CHECK_MSG(!memcmp(x.px, z.px, 24 * 24 * 3), "%s: different pixels from libjpeg's Huffman decoder", what);
    baton_image_free(&z);
    baton_image_free(&x);
    baton_image_free(&y);
    return rx;
}

/* The offset of the n-th RST marker after SOS, or 0. */
static size_t nth_rst(const baton_buf *b, size_t n)
{
    size_t sos = 0;
    for (size_t i = 2; i + 1 < b->len; i++)
        if (b->data[i] == 0xff && b->data[i + 1] == 0xda) {
            sos = i;
            break;
        }
    for (size_t i = sos + 2; sos && i + 1 < b->len; i++)
        if (b->data[i] == 0xff && b->data[i + 1] >= 0xd0 && b->data[i + 1] <= 0xd7 && n-- == 0) return i;
    return 0;
}

static void test_hostile(baton_rng *r)
{
    baton_image im = {0};
    baton_buf orig = {0}, rst = {0}, b = {0};
    img_scratch sr = {0}, ss = {.rect_off = 1};
    jrect j = {0};
    baton_err err;
    fill_photo(&im, 375, 500, 3, 7);
    CHECK(encode(&im, 85, 2, 2, 0, &orig) == BATON_OK);
    CHECK(img_jpeg_restart(orig.data, orig.len, &rst, &err) == BATON_OK);
    double box[4] = {120, 80, 380, 300}, top[4] = {10, 5, 200, 60};

#define VARIANT(what, edit, want_index)                                           \
    do {                                                                          \
        b.len = 0;                                                                \
        baton_buf_append(&b, rst.data, rst.len);                                  \
        edit;                                                                     \
        CHECK_MSG(jrect_index(&j, b.data, b.len) == (want_index), "%s", what);    \
        hostile(&b, box, &sr, &ss, what);                                         \
        hostile(&b, top, &sr, &ss, what);                                         \
    } while (0)

    size_t m5 = nth_rst(&rst, 5), dri = find_marker(&rst, 0xdd), sof = find_marker(&rst, 0xc0);
    CHECK(m5 > 0 && dri > 0 && sof > 0);
    VARIANT("a marker removed", (memmove(b.data + m5, b.data + m5 + 2, b.len - m5 - 2), b.len -= 2), 0);
    VARIANT("a marker misnumbered", b.data[m5 + 1] ^= 1, 0);
    VARIANT("DRI 2", b.data[dri + 5] = 2, 0);
    VARIANT("DRI 0", b.data[dri + 5] = 0, 0);
    VARIANT("a taller size", b.data[sof + 6] += 16, 0);
    VARIANT("a narrower size", b.data[sof + 8] -= 16, 0);
    VARIANT("a zero height", (b.data[sof + 5] = 0, b.data[sof + 6] = 0), 0);
    VARIANT("no EOI", b.len -= 2, 0);
    VARIANT("an empty interval", (memmove(b.data + m5 + 2, b.data + nth_rst(&rst, 6), rst.len - nth_rst(&rst, 6)),
                                  b.len -= nth_rst(&rst, 6) - m5 - 2), 0);
    VARIANT("a DHT marker inside the scan", b.data[m5 + 1] = 0xc4, 0);
    VARIANT("three components claimed for a one-component scan", b.data[find_marker(&rst, 0xda) + 4] = 1, 0);
    VARIANT("a sampling factor of 5", b.data[sof + 11] = 0x52, 0);
    VARIANT("an unchanged copy", (void)0, 1);
    /* a Huffman table the file uses but does not define (its DHT says table 2): the result does
     * not depend on what the scratch decoded before (libjpeg keeps a decompressor's tables) */
    baton_buf prog = {0};
    fill_photo(&im, 40, 48, 3, 8);
    CHECK(encode(&im, 85, 2, 2, 1, &prog) == BATON_OK);
    b.len = 0;
    baton_buf_append(&b, rst.data, rst.len);
    b.data[find_marker(&b, 0xc4) + 4] = 0x02;
    for (int path = 0; path < 2; path++) {
        img_scratch fresh = {.rect_off = path}, *used = path ? &ss : &sr;
        baton_image x = {0}, y = {0}, z = {0};
        plan_ctx p = {{0, 0, 48, 40}}, pb = {{box[0], box[1], box[2], box[3]}};
        int rx = img_decode_crop(b.data, b.len, BATON_ENC_JPEG, NULL, 3, plan_fixed, &pb, 24, 24, &fresh, &x, NULL,
                                 NULL, &err);
        img_decode_crop(prog.data, prog.len, BATON_ENC_JPEG, NULL, 3, plan_fixed, &p, 24, 24, used, &z, NULL, NULL, &err);
        int ry = img_decode_crop(b.data, b.len, BATON_ENC_JPEG, NULL, 3, plan_fixed, &pb, 24, 24, used, &y, NULL, NULL,
                                 &err);
        CHECK_MSG(rx == ry && (rx != BATON_OK || !memcmp(x.px, y.px, 24 * 24 * 3)),
                  "path %d: a file lacking a table decodes differently after another file (%d, %d)", path, rx, ry);
        img_scratch_free(&fresh);
        baton_image_free(&x);
        baton_image_free(&y);
        baton_image_free(&z);
    }
    baton_buf_free(&prog);
    /* truncated anywhere */
    for (int t = 0; t < 60; t++) {
        b.len = 0;
        baton_buf_append(&b, rst.data, 1 + (size_t)(urand(r) * (rst.len - 1)));
        hostile(&b, t % 2 ? box : top, &sr, &ss, "truncated");
    }
    /* bit flips: each rectangle decode that fails is redone the ordinary way */
    int ok = 0;
    for (int t = 0; t < 200; t++) {
        b.len = 0;
        baton_buf_append(&b, rst.data, rst.len);
        for (int k = 0; k < 1 + t % 4; k++) b.data[baton_rng_next(r) % b.len] ^= (uint8_t)(1u << (baton_rng_next(r) % 8));
        double bx[4];
        pick_box(r, 375, 500, t, bx);
        jmcu_baseline = t & 1;
        ok += hostile(&b, bx, &sr, &ss, "bit flips") == BATON_OK;
        jmcu_baseline = 0;
    }
    printf("hostile variants: bit-flipped files, %d of 200 decoded, the rest refused cleanly\n", ok);
    /* the scratch still gives the right bytes */
    crop3(&orig, &rst, box, 3, 64, 64, &sr, &ss, "after the hostile variants");
    /* not JPEG, or not transcodable */
    CHECK(img_jpeg_restart((const uint8_t *)"GIF89a", 6, &b, &err) == BATON_ERR_FORMAT);
    b.len = 0;
    CHECK(img_jpeg_restart(rst.data, rst.len / 2, &b, &err) == BATON_ERR_TRUNCATED && b.len == 0);
    jrect_free(&j);
    img_scratch_free(&sr);
    img_scratch_free(&ss);
    baton_image_free(&im);
    baton_buf_free(&orig);
    baton_buf_free(&rst);
    baton_buf_free(&b);
}

/* CPU time of a random-resized crop to 224 on one 1024×768 4:2:0 photo, the paths alternated.
 * Printed, never failed on. */
static void test_speed(baton_rng *r)
{
    baton_image im = {0}, out = {0};
    baton_buf orig = {0}, rst = {0};
    img_scratch s = {0};
    baton_err err;
    fill_photo(&im, 768, 1024, 3, 21);
    CHECK(encode(&im, 85, 2, 2, 0, &orig) == BATON_OK);
    CHECK(img_jpeg_restart(orig.data, orig.len, &rst, &err) == BATON_OK);
    enum { N = 60 };
    double t[3] = {0, 0, 0};
    for (int rep = 0; rep < 4; rep++)
        for (int k = 0; k < 3; k++) {
            s.huff_off = k == 1;
            s.rect_off = k == 2;
            baton_rng rr = *r;
            double t0 = cpu_now();
            for (int i = 0; i < N; i++) {
                plan_ctx p;
                pick_box(&rr, 768, 1024, 7, p.box);
                CHECK(img_decode_crop(rst.data, rst.len, BATON_ENC_JPEG, NULL, 3, plan_fixed, &p, 224, 224, &s, &out,
                                      NULL, NULL, &err) == BATON_OK);
            }
            t[k] += cpu_now() - t0;
        }
    printf("speed, 1024x768 4:2:0 with restarts, random-resized crop to 224: rectangle %.3f ms (with libjpeg's "
           "Huffman decoder %.3f), ordinary %.3f ms CPU per image\n",
           1e3 * t[0] / (4 * N), 1e3 * t[1] / (4 * N), 1e3 * t[2] / (4 * N));
    img_scratch_free(&s);
    baton_image_free(&im);
    baton_image_free(&out);
    baton_buf_free(&orig);
    baton_buf_free(&rst);
}

int main(void)
{
    baton_rng r;
    baton_rng_seed(&r, 12);
    test_cases(&r);
    test_hostile(&r);
    test_speed(&r);
    img_scratch_free(&s_lj);
    CHECK_DONE();
}
