/* test_img_region.c — the crop decoder and the box resampler (src/img/region.c, resample.c):
 * the resampler against a plain double-precision evaluation of the same filter, identity and
 * constant images; the fast crop decoder against the reference (whole decode, then resample) on
 * photo-like JPEGs (4:2:0, 4:4:4, grey, progressive, odd sizes, 1×1, 6000 wide) for many random
 * boxes and output sizes; PNG and raw through the same call; clean errors for truncated, lying,
 * CMYK, too-many-scans and garbage inputs, and a scratch that still works after them; and the
 * speed of the fast path against the reference (printed, never failed on).
 * Under valgrind, run with JSIMD_FORCENONE=1: libjpeg-turbo's SIMD code reads buffer padding it
 * then discards, which memcheck reports as uninitialised pixels (the bytes are deterministic:
 * the same under any MALLOC_PERTURB_, and clean with the SIMD code off). */
#include "../../src/img/img_internal.h"
#include "../../src/img/region_internal.h"
#include "baton/img.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
/* jpeglib.h needs size_t and FILE first */
#include <jpeglib.h>

/* ---- images and encodings */

/* Photo-like content: smooth gradients and blobs, a fine texture, deterministic noise. */
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

static int encode_jpeg(const baton_image *im, int quality, baton_buf *out)
{
    baton_err err;
    out->len = 0;
    return baton_img_encode(im, BATON_ENC_JPEG, quality, out, &err);
}

/* libjpeg directly: a progressive JPEG (jpeg_simple_progression), or a CMYK one (4 components
 * made from the image's first channel). */
static int encode_jpeg_lib(const baton_image *im, int quality, int progressive, int cmyk, baton_buf *out)
{
    struct jpeg_compress_struct cj;
    struct jpeg_error_mgr je;
    cj.err = jpeg_std_error(&je);
    jpeg_create_compress(&cj);
    unsigned char *mem = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&cj, &mem, &size);
    cj.image_width = im->w;
    cj.image_height = im->h;
    cj.input_components = cmyk ? 4 : (int)im->c;
    cj.in_color_space = cmyk ? JCS_CMYK : im->c == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cj);
    jpeg_set_quality(&cj, quality, TRUE);
    if (progressive) jpeg_simple_progression(&cj);
    jpeg_start_compress(&cj, TRUE);
    uint8_t *row = malloc((size_t)im->w * 4);
    while (cj.next_scanline < cj.image_height) {
        const uint8_t *src = im->px + (size_t)cj.next_scanline * im->w * im->c;
        JSAMPROW rp = (JSAMPROW)src;
        if (cmyk) {
            for (uint32_t x = 0; x < im->w; x++)
                for (int k = 0; k < 4; k++) row[4 * x + k] = (uint8_t)(src[x * im->c] + 40 * k);
            rp = row;
        }
        jpeg_write_scanlines(&cj, &rp, 1);
    }
    jpeg_finish_compress(&cj);
    jpeg_destroy_compress(&cj);
    free(row);
    out->len = 0;
    int rc = baton_buf_append(out, mem, size);
    free(mem);
    return rc;
}

/* ---- the plan: a fixed box, checked against the size the header gave */
typedef struct plan_ctx {
    double box[4];
    uint32_t h, w;  /* what the header said */
    int calls;
} plan_ctx;

static int plan_fixed(void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    plan_ctx *p = ctx;
    p->h = h;
    p->w = w;
    p->calls++;
    memcpy(box, p->box, sizeof p->box);
    return BATON_OK;
}

static int plan_refuse(void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    return baton_err_set(err, BATON_ERR_ARG, "refused %ux%u", h, w);
}

static double urand(baton_rng *r)
{
    return (double)(baton_rng_next(r) >> 11) / 9007199254740992.0;
}

/* A random box in an h × w image: RandomResizedCrop-like (whole numbers), fractional centre crop,
 * tiny, whole image, or pressed against a border. */
static void random_box(baton_rng *r, uint32_t h, uint32_t w, double box[4])
{
    int kind = (int)(baton_rng_next(r) % 6);
    if (kind == 0) {  /* whole image */
        box[0] = box[1] = 0;
        box[2] = w;
        box[3] = h;
        return;
    }
    if (kind == 1) {  /* fractional centre crop */
        double f = 0.5 + 0.5 * urand(r);
        double bw = w * f, bh = h * f;
        box[0] = (w - bw) / 2;
        box[1] = (h - bh) / 2;
        box[2] = box[0] + bw;
        box[3] = box[1] + bh;
        return;
    }
    double area = (double)h * w * (kind == 2 ? 0.002 * urand(r) : 0.08 + 0.92 * urand(r));
    double ratio = exp(log(3.0 / 4) + urand(r) * (log(4.0 / 3) - log(3.0 / 4)));
    double bw = round(sqrt(area * ratio)), bh = round(sqrt(area / ratio));
    bw = bw < 1 ? 1 : bw > w ? w : bw;
    bh = bh < 1 ? 1 : bh > h ? h : bh;
    double x0 = floor(urand(r) * (w - bw + 1)), y0 = floor(urand(r) * (h - bh + 1));
    if (kind == 4) x0 = w - bw;  /* right border */
    if (kind == 5) y0 = 0;       /* top border */
    box[0] = x0;
    box[1] = y0;
    box[2] = x0 + bw;
    box[3] = y0 + bh;
}

/* ---- the resampler against a plain double-precision evaluation */
static double tri(double x)
{
    x = fabs(x);
    return x < 1 ? 1 - x : 0;
}

/* Pillow's weights for output i of n over [b0, b1) of nin, as a dense row of nin. */
static void plain_weights(double b0, double b1, uint32_t nin, uint32_t n, uint32_t i, double *wt)
{
    double scale = (b1 - b0) / n, fs = scale > 1 ? scale : 1, centre = b0 + (i + 0.5) * scale;
    double lo = floor(centre - fs + 0.5), hi = floor(centre + fs + 0.5), sum = 0;
    for (uint32_t j = 0; j < nin; j++) {
        wt[j] = (j >= lo && j < hi) ? tri((j - centre + 0.5) / fs) : 0;
        sum += wt[j];
    }
    for (uint32_t j = 0; j < nin; j++) wt[j] /= sum;
}

static int plain_resample_max_diff(const baton_image *src, const double box[4], const baton_image *out)
{
    double *wx = malloc(sizeof(double) * src->w), *wy = malloc(sizeof(double) * src->h);
    int worst = 0;
    for (uint32_t y = 0; y < out->h; y++) {
        plain_weights(box[1], box[3], src->h, out->h, y, wy);
        for (uint32_t x = 0; x < out->w; x++) {
            plain_weights(box[0], box[2], src->w, out->w, x, wx);
            /* the weights' support (outside it they are 0 and add nothing) */
            uint32_t i0 = 0, i1 = src->w, j0 = 0, j1 = src->h;
            while (i0 < i1 && wx[i0] == 0) i0++;
            while (i1 > i0 && wx[i1 - 1] == 0) i1--;
            while (j0 < j1 && wy[j0] == 0) j0++;
            while (j1 > j0 && wy[j1 - 1] == 0) j1--;
            for (uint32_t k = 0; k < src->c; k++) {
                double v = 0;
                for (uint32_t j = j0; j < j1; j++)
                    for (uint32_t i = i0; i < i1; i++)
                        v += wy[j] * wx[i] * src->px[((size_t)j * src->w + i) * src->c + k];
                long e = lround(v < 0 ? 0 : v > 255 ? 255 : v);
                int d = abs((int)e - (int)out->px[((size_t)y * out->w + x) * out->c + k]);
                if (d > worst) worst = d;
            }
        }
    }
    free(wx);
    free(wy);
    return worst;
}

static void test_resample(baton_rng *r)
{
    baton_image src = {0}, out = {0}, base = {0};
    img_scratch s = {0};
    baton_err err;
    int worst = 0;
    for (int t = 0; t < 300; t++) {
        uint32_t h = 1 + (uint32_t)(baton_rng_next(r) % 23), w = 1 + (uint32_t)(baton_rng_next(r) % 23);
        uint32_t c = t % 2 ? 3 : 1;
        fill_photo(&src, h, w, c, (uint64_t)t);
        double box[4];
        if (t % 3 == 0) {
            random_box(r, h, w, box);
        } else {  /* arbitrary fractional box */
            double a = urand(r) * w, b = urand(r) * w, d = urand(r) * h, e = urand(r) * h;
            box[0] = fmin(a, b);
            box[2] = fmax(a, b) + 0.01;
            box[1] = fmin(d, e);
            box[3] = fmax(d, e) + 0.01;
            if (box[2] > w) box[2] = w;
            if (box[3] > h) box[3] = h;
        }
        uint32_t oh = 1 + (uint32_t)(baton_rng_next(r) % 30), ow = 1 + (uint32_t)(baton_rng_next(r) % 30);
        int rc = img_resample_box(&src, box, oh, ow, &out, &s, &err);
        CHECK_MSG(rc == BATON_OK, "%s", err.msg);
        if (rc) continue;
        CHECK(out.h == oh && out.w == ow && out.c == c);
        int d = plain_resample_max_diff(&src, box, &out);
        if (d > worst) worst = d;
        /* the baseline passes (SSE2 and scalar) give the same bytes as the AVX2 ones */
        img_resample_baseline = 1;
        rc = img_resample_box(&src, box, oh, ow, &base, &s, &err);
        img_resample_baseline = 0;
        CHECK(rc == BATON_OK && base.h == oh && base.w == ow && memcmp(base.px, out.px, (size_t)oh * ow * c) == 0);
        CHECK_MSG(d <= 1, "box (%g,%g)-(%g,%g) of %ux%u to %ux%u: %d levels off", box[0], box[1], box[2],
                  box[3], h, w, oh, ow, d);
    }
    printf("resample vs plain double: max abs difference %d\n", worst);
    /* photo-sized: random boxes of a 333x517 image to 224x224 and 97x61, both channel counts */
    int big_same = 1, big_worst = 0;
    baton_image photo[2] = {{0}, {0}};   /* made once (fill_photo's sines are the slow part) */
    fill_photo(&photo[0], 333, 517, 1, 1000);
    fill_photo(&photo[1], 333, 517, 3, 1001);
    for (int t = 0; t < 24; t++) {
        uint32_t c = t % 3 ? 3 : 1, oh = t % 4 ? 224 : 97, ow = t % 4 ? 224 : 61;
        baton_image_resize(&src, 333, 517, c, &err);
        memcpy(src.px, photo[c == 3].px, (size_t)333 * 517 * c);
        double box[4];
        random_box(r, 333, 517, box);
        CHECK(img_resample_box(&src, box, oh, ow, &out, &s, &err) == BATON_OK);
        img_resample_baseline = 1;
        CHECK(img_resample_box(&src, box, oh, ow, &base, &s, &err) == BATON_OK);
        img_resample_baseline = 0;
        big_same &= memcmp(base.px, out.px, (size_t)oh * ow * c) == 0;
        if (t % 6 == 0) {   /* the plain evaluation of a whole 224x224 output is the slow part */
            int d = plain_resample_max_diff(&src, box, &out);
            if (d > big_worst) big_worst = d;
        }
    }
    baton_image_free(&photo[0]);
    baton_image_free(&photo[1]);
    CHECK(big_same);
    CHECK_MSG(big_worst <= 1, "photo-sized boxes: %d levels off the plain double evaluation", big_worst);
    printf("resample, photo-sized boxes: AVX2 and baseline passes %s, max abs difference from plain double %d\n",
           big_same ? "identical" : "DIFFER", big_worst);

    /* identity: the whole image at its own size is the image */
    fill_photo(&src, 37, 53, 3, 99);
    double whole[4] = {0, 0, 53, 37};
    CHECK(img_resample_box(&src, whole, 37, 53, &out, &s, &err) == BATON_OK);
    CHECK(out.h == 37 && out.w == 53 && memcmp(out.px, src.px, (size_t)37 * 53 * 3) == 0);
    /* a whole-number sub-box at its own size is that part of the image */
    double part[4] = {5, 7, 25, 30};
    CHECK(img_resample_box(&src, part, 23, 20, &out, &s, &err) == BATON_OK);
    int same = 1;
    for (uint32_t y = 0; y < 23; y++)
        same &= memcmp(out.px + (size_t)y * 20 * 3, src.px + ((size_t)(y + 7) * 53 + 5) * 3, 60) == 0;
    CHECK(same);
    /* a constant image stays constant, shrunk, enlarged, fractional */
    baton_image_resize(&src, 41, 29, 1, &err);
    memset(src.px, 173, (size_t)41 * 29);
    double boxes[3][4] = {{0, 0, 29, 41}, {3.3, 1.7, 5.1, 4.9}, {0.5, 0.25, 28.75, 40.5}};
    uint32_t sizes[3][2] = {{7, 5}, {64, 48}, {13, 31}};
    for (int i = 0; i < 3; i++) {
        CHECK(img_resample_box(&src, boxes[i], sizes[i][0], sizes[i][1], &out, &s, &err) == BATON_OK);
        int flat = 1;
        for (size_t j = 0; j < (size_t)out.h * out.w; j++) flat &= out.px[j] == 173;
        CHECK(flat);
    }
    /* boxes outside the image and empty outputs are argument errors */
    double bad[4] = {0, 0, 30, 41};
    CHECK(img_resample_box(&src, bad, 4, 4, &out, &s, &err) == BATON_ERR_ARG);
    double nan_box[4] = {0, 0, NAN, 41};
    CHECK(img_resample_box(&src, nan_box, 4, 4, &out, &s, &err) == BATON_ERR_ARG);
    CHECK(img_resample_box(&src, whole, 0, 4, &out, &s, &err) != BATON_OK);
    img_scratch_free(&s);
    baton_image_free(&src);
    baton_image_free(&out);
    baton_image_free(&base);
}

/* ---- fast against reference */

/* Tolerance of the fast path against the reference, by class of crop:
 *  0 "8/8": the box is less than 8/7 of the output on some side, so no M < 8 keeps it at least
 *    the output and nothing is DCT-scaled: the decoded pixels are libjpeg's own, the margin keeps
 *    the filter's taps and the chroma upsampler's context inside the region, and the resampler's
 *    weights do not change when the box moves by the region's whole-pixel offset. Exact: max 0.
 *  1 "scaled": libjpeg's scaled IDCT (M×M inverse transform of each 8×8 block's low frequencies)
 *    does the shrinking down to between 1 and 8/7 (M >= 2; more for M = 1) of the output, and the
 *    bilinear filter the rest; the reference's filter (a triangle of support = the shrink factor)
 *    sees the full-size pixels. Two different low-pass kernels: on smooth content they agree to
 *    a level, on the ±12 pixel noise and 14-pixel texture of fill_photo the DCT kernel, sharper,
 *    keeps more of both. Measured (printed below): pooled mean abs 1.37 over all such crops (0.26
 *    to 2.5 per image; the most on grey, unsubsampled images, where nothing else smooths the
 *    noise), worst crop mean 4.6, max abs 24 on single pixels. Bounds with margin: pooled mean
 *    <= 2, crop mean <= 8, max <= 40.
 *  2 "scaled, tiny output" (a side under 8): a whole box averaged into a pixel or a few. At 1/8
 *    each decoded pixel is one 8×8 block's mean, blocks aligned to the image, not the box, and an
 *    edge block padded by repetition; the reference weights the box by a wide triangle centred on
 *    it. On a 90-level gradient the two averages differ by up to ~20 levels (measured: pooled mean
 *    1.6, worst crop mean 17 and max 28, both 17×13 to 1×1). Bounds: crop mean <= 32, max <= 48,
 *    no pooled bound (a handful of pixels each).
 * The overall pooled mean (every byte compared, all classes; measured 0.17) is <= 1. */
typedef struct acc {
    double sum;       /* of |fast - ref| over every byte compared */
    size_t n, crops;
    double worst_mean;
    int max;
} acc;
typedef struct diff_stats {
    acc k[3];
} diff_stats;
static const char *const class_name[3] = {"8/8", "scaled", "scaled, tiny output"};
static const double tol_pooled[3] = {0, 2.0, 1e9};
static const double tol_crop_mean[3] = {0, 8.0, 32.0};
static const int tol_max[3] = {0, 40, 48};
#define TOL_MEAN_ALL 1.0

static void acc_add(acc *a, double sum, size_t n, int mx)
{
    a->sum += sum;
    a->n += n;
    a->crops++;
    if (mx > a->max) a->max = mx;
    if (sum / n > a->worst_mean) a->worst_mean = sum / n;
}

static void acc_merge(acc *a, const acc *b)
{
    a->sum += b->sum;
    a->n += b->n;
    a->crops += b->crops;
    if (b->max > a->max) a->max = b->max;
    if (b->worst_mean > a->worst_mean) a->worst_mean = b->worst_mean;
}

static int crop_class(const double box[4], uint32_t oh, uint32_t ow)
{
    double bw = box[2] - box[0], bh = box[3] - box[1];
    if (!(bw * 7 / 8 >= ow && bh * 7 / 8 >= oh)) return 0;  /* no M < 8 would do: see dct_scale */
    return oh < 8 || ow < 8 ? 2 : 1;
}

static void compare_crop(const baton_buf *jpg, uint32_t h, uint32_t w, const double box[4], uint32_t c,
                         uint32_t oh, uint32_t ow, img_scratch *s, diff_stats *st, const char *what)
{
    baton_image fast = {0}, ref = {0};
    baton_err err;
    plan_ctx pf = {{box[0], box[1], box[2], box[3]}, 0, 0, 0}, pr = pf;
    uint32_t fh = 0, fw = 0;
    int rc = img_decode_crop(jpg->data, jpg->len, BATON_ENC_UNKNOWN, NULL, c, plan_fixed, &pf, oh, ow, s, &fast,
                             &fh, &fw, &err);
    CHECK_MSG(rc == BATON_OK, "%s: %s", what, err.msg);
    int rr = img_decode_crop_ref(jpg->data, jpg->len, BATON_ENC_JPEG, NULL, c, plan_fixed, &pr, oh, ow, s,
                                 &ref, NULL, NULL, &err);
    CHECK_MSG(rr == BATON_OK, "%s: %s", what, err.msg);
    if (rc == BATON_OK && rr == BATON_OK) {
        CHECK(fh == h && fw == w && pf.h == h && pf.w == w && pf.calls == 1);
        CHECK(fast.h == oh && fast.w == ow && fast.c == c && ref.h == oh && ref.w == ow && ref.c == c);
        size_t n = (size_t)oh * ow * c;
        double sum = 0;
        int mx = 0;
        for (size_t i = 0; i < n; i++) {
            int d = abs((int)fast.px[i] - (int)ref.px[i]);
            sum += d;
            if (d > mx) mx = d;
        }
        int k = crop_class(box, oh, ow);
        acc_add(&st->k[k], sum, n, mx);
        CHECK_MSG(sum / n <= tol_crop_mean[k] && mx <= tol_max[k],
                  "%s (%s): c=%u box (%g,%g)-(%g,%g) of %ux%u to %ux%u: mean %.3f max %d", what, class_name[k],
                  c, box[0], box[1], box[2], box[3], h, w, oh, ow, sum / n, mx);
    }
    baton_image_free(&fast);
    baton_image_free(&ref);
}

static void compare_many(const baton_buf *jpg, uint32_t h, uint32_t w, int grey_src, baton_rng *r, int n,
                         img_scratch *s, diff_stats *st, const char *what)
{
    static const uint32_t outs[][2] = {{224, 224}, {32, 32}, {64, 48}, {17, 29}, {1, 1}, {300, 260}, {5, 9}};
    for (int i = 0; i < n; i++) {
        double box[4];
        random_box(r, h, w, box);
        const uint32_t *o = outs[baton_rng_next(r) % (sizeof outs / sizeof outs[0])];
        uint32_t c = (baton_rng_next(r) % 3 == 0) ? (grey_src ? 3 : 1) : (grey_src ? 1 : 3);
        compare_crop(jpg, h, w, box, c, o[0], o[1], s, st, what);
    }
}

static void print_stats(const char *what, const diff_stats *st)
{
    for (int k = 0; k < 3; k++) {
        const acc *a = &st->k[k];
        if (!a->crops) continue;
        printf("fast vs reference, %-28s %-20s %3zu crops: mean abs %.3f, worst crop mean %.3f, max abs %d\n",
               what, class_name[k], a->crops, a->sum / a->n, a->worst_mean, a->max);
    }
}

static void test_fast_vs_ref(baton_rng *r)
{
    static const struct {
        uint32_t h, w, c;
        int quality, progressive;
        const char *what;
    } cases[] = {
        {375, 500, 3, 85, 0, "500x375 4:2:0"},  {211, 333, 3, 95, 0, "333x211 4:4:4"},
        {193, 257, 1, 85, 0, "257x193 grey"},   {240, 320, 3, 80, 1, "320x240 progressive 4:2:0"},
        {97, 131, 1, 90, 1, "131x97 progressive grey"}, {13, 17, 3, 75, 0, "17x13 4:2:0"},
        {1, 1, 3, 85, 0, "1x1"},                {40, 6000, 3, 85, 0, "6000x40 4:2:0"},
        {64, 64, 3, 92, 1, "64x64 progressive 4:4:4"}, {480, 640, 3, 90, 0, "640x480 4:4:4"},
    };
    baton_image im = {0};
    baton_buf jpg = {0};
    img_scratch s = {0};
    diff_stats all = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fill_photo(&im, cases[i].h, cases[i].w, cases[i].c, 1000 + i);
        int rc = cases[i].progressive ? encode_jpeg_lib(&im, cases[i].quality, 1, 0, &jpg)
                                      : encode_jpeg(&im, cases[i].quality, &jpg);
        CHECK(rc == BATON_OK);
        diff_stats one = {0};
        compare_many(&jpg, cases[i].h, cases[i].w, cases[i].c == 1, r, 100, &s, &one, cases[i].what);
        print_stats(cases[i].what, &one);
        for (int k = 0; k < 3; k++) acc_merge(&all.k[k], &one.k[k]);
    }
    print_stats("all", &all);
    acc total = {0};
    for (int k = 0; k < 3; k++) {
        acc_merge(&total, &all.k[k]);
        double pooled = all.k[k].sum / (all.k[k].n ? all.k[k].n : 1);
        CHECK_MSG(pooled <= tol_pooled[k], "%s: pooled mean abs %.3f", class_name[k], pooled);
    }
    printf("fast vs reference, all crops: %zu, mean abs %.3f, max abs %d\n", total.crops, total.sum / total.n,
           total.max);
    CHECK_MSG(total.sum / total.n <= TOL_MEAN_ALL, "mean abs %.3f", total.sum / total.n);
    CHECK(all.k[1].crops > 50 && all.k[0].crops > 50);  /* both kinds of crop were exercised */
    img_scratch_free(&s);
    baton_image_free(&im);
    baton_buf_free(&jpg);
}

/* ---- errors, and a scratch that keeps working after them */
static int is_clean_error(int rc)
{
    return rc == BATON_ERR_FORMAT || rc == BATON_ERR_CORRUPT || rc == BATON_ERR_TRUNCATED;
}

/* Both decoders on the same bytes and box; their status codes. */
static void both(const baton_buf *b, const double box[4], uint32_t c, img_scratch *s, int *rc_fast,
                 int *rc_ref, int *plan_calls)
{
    baton_image out = {0};
    baton_err err;
    plan_ctx p = {{box[0], box[1], box[2], box[3]}, 0, 0, 0};
    err.msg[0] = 0;
    *rc_fast = img_decode_crop(b->data, b->len, BATON_ENC_UNKNOWN, NULL, c, plan_fixed, &p, 32, 32, s, &out, NULL,
                               NULL, &err);
    CHECK(*rc_fast == BATON_OK || err.msg[0] != 0);
    if (plan_calls) *plan_calls = p.calls;
    err.msg[0] = 0;
    *rc_ref = img_decode_crop_ref(b->data, b->len, BATON_ENC_UNKNOWN, NULL, c, plan_fixed, &p, 32, 32, s, &out,
                                  NULL, NULL, &err);
    CHECK(*rc_ref == BATON_OK || err.msg[0] != 0);
    baton_image_free(&out);
}

/* The offset of the first SOFn marker's segment (FF C0..C2), or 0. */
static size_t find_sof(const baton_buf *b)
{
    for (size_t i = 2; i + 9 < b->len; i++)
        if (b->data[i] == 0xff && b->data[i + 1] >= 0xc0 && b->data[i + 1] <= 0xc2) return i;
    return 0;
}

static void patch_size(baton_buf *b, size_t sof, uint32_t h, uint32_t w)
{
    b->data[sof + 5] = (uint8_t)(h >> 8);
    b->data[sof + 6] = (uint8_t)h;
    b->data[sof + 7] = (uint8_t)(w >> 8);
    b->data[sof + 8] = (uint8_t)w;
}

/* After whatever came before, the scratch still decodes a good image exactly as a fresh one. */
static void check_scratch_works(img_scratch *s, const baton_buf *good, const char *after)
{
    diff_stats st = {0};
    double box[4] = {10, 20, 250, 180};
    char what[96];
    snprintf(what, sizeof what, "good image after %s", after);
    compare_crop(good, 375, 500, box, 3, 64, 64, s, &st, what);
}

/* Truncated files and headers that lie about the size. */
static void test_errors_size(void)
{
    baton_image im = {0};
    baton_buf good = {0}, b = {0};
    img_scratch s = {0};
    fill_photo(&im, 375, 500, 3, 5);
    CHECK(encode_jpeg(&im, 85, &good) == BATON_OK);
    double whole[4] = {0, 0, 500, 375}, bottom[4] = {100, 300, 400, 375}, top[4] = {0, 0, 100, 40};
    int rf, rr, calls;

    /* truncated: the fast path reads into the missing part, so both say TRUNCATED */
    baton_buf_free(&b);
    baton_buf_append(&b, good.data, good.len * 6 / 10);
    both(&b, whole, 3, &s, &rf, &rr, NULL);
    CHECK_EQ_U(rf, BATON_ERR_TRUNCATED);
    CHECK_EQ_U(rr, BATON_ERR_TRUNCATED);
    both(&b, bottom, 1, &s, &rf, &rr, NULL);
    CHECK_EQ_U(rf, BATON_ERR_TRUNCATED);
    CHECK_EQ_U(rr, BATON_ERR_TRUNCATED);
    /* a box above the cut: its rows are complete, so the fast path may decode them (contract) */
    both(&b, top, 3, &s, &rf, &rr, NULL);
    CHECK(rf == BATON_OK || rf == BATON_ERR_TRUNCATED);
    CHECK_EQ_U(rr, BATON_ERR_TRUNCATED);
    check_scratch_works(&s, &good, "a truncated file");
    /* cut inside the header */
    b.len = 120;
    both(&b, whole, 3, &s, &rf, &rr, NULL);
    CHECK(is_clean_error(rf) && is_clean_error(rr));

    /* a header claiming 60000×60000: refused before anything is allocated or planned */
    b.len = 0;
    baton_buf_append(&b, good.data, good.len);
    size_t sof = find_sof(&b);
    CHECK(sof > 0);
    patch_size(&b, sof, 60000, 60000);
    double t0 = baton_now();
    both(&b, whole, 3, &s, &rf, &rr, &calls);
    CHECK_EQ_U(rf, BATON_ERR_FORMAT);
    CHECK_EQ_U(rr, BATON_ERR_FORMAT);
    CHECK_EQ_U(calls, 0);
    CHECK(baton_now() - t0 < 2.0);
    /* a header claiming 8000×8000 (within the pixel limit) on 30 kB of data: an error or, for a
     * box the data still covers, some pixels; never a crash, and quickly */
    patch_size(&b, sof, 8000, 8000);
    double lie_top[4] = {0, 0, 64, 64}, lie_all[4] = {0, 0, 8000, 8000};
    t0 = baton_now();
    both(&b, lie_all, 3, &s, &rf, &rr, NULL);
    CHECK(is_clean_error(rf) && is_clean_error(rr));
    both(&b, lie_top, 1, &s, &rf, &rr, NULL);
    CHECK(rf == BATON_OK || is_clean_error(rf));
    printf("lying 8000x8000 header: %.3f s for both decoders twice\n", baton_now() - t0);
    check_scratch_works(&s, &good, "a lying header");

    img_scratch_free(&s);
    baton_image_free(&im);
    baton_buf_free(&good);
    baton_buf_free(&b);
}

/* CMYK, garbage, bit flips, refusals by the plan or the arguments. */
static void test_errors_bytes(baton_rng *r)
{
    baton_image im = {0};
    baton_buf good = {0}, b = {0};
    img_scratch s = {0};
    fill_photo(&im, 375, 500, 3, 5);
    CHECK(encode_jpeg(&im, 85, &good) == BATON_OK);
    double whole[4] = {0, 0, 500, 375};
    int rf, rr;

    /* CMYK refused */
    fill_photo(&im, 40, 48, 3, 6);
    CHECK(encode_jpeg_lib(&im, 85, 0, 1, &b) == BATON_OK);
    double cbox[4] = {0, 0, 48, 40};
    both(&b, cbox, 3, &s, &rf, &rr, NULL);
    CHECK_EQ_U(rf, BATON_ERR_FORMAT);
    CHECK_EQ_U(rr, BATON_ERR_FORMAT);

    /* a progressive file whose last scan is repeated 600 times: refused past 500 scans, so a
     * file of many scans cannot keep the decoder busy (the reference has no such limit) */
    CHECK(encode_jpeg_lib(&im, 85, 1, 0, &b) == BATON_OK);
    size_t last_sos = 0;
    for (size_t i = 2; i + 1 < b.len; i++)
        if (b.data[i] == 0xff && b.data[i + 1] == 0xda) last_sos = i;
    CHECK(last_sos > 0 && b.data[b.len - 2] == 0xff && b.data[b.len - 1] == 0xd9);
    baton_buf many = {0};
    baton_buf_append(&many, b.data, b.len - 2);
    for (int k = 0; k < 600; k++) baton_buf_append(&many, b.data + last_sos, b.len - 2 - last_sos);
    baton_buf_append(&many, "\xff\xd9", 2);
    both(&many, cbox, 3, &s, &rf, &rr, NULL);
    CHECK_EQ_U(rf, BATON_ERR_CORRUPT);
    baton_buf_free(&many);

    /* garbage, garbage after an SOI marker, and bit flips of a good file */
    for (int t = 0; t < 200; t++) {
        b.len = 0;
        size_t n = 1 + (size_t)(baton_rng_next(r) % 3000);
        if (t % 2) baton_buf_append(&b, "\xff\xd8\xff", 3);
        for (size_t i = 0; i < n; i++) {
            uint8_t v = (uint8_t)baton_rng_next(r);
            baton_buf_append(&b, &v, 1);
        }
        both(&b, whole, 3, &s, &rf, &rr, NULL);
        CHECK(is_clean_error(rf) && is_clean_error(rr));
    }
    int flipped_ok = 0;
    for (int t = 0; t < 120; t++) {
        b.len = 0;
        baton_buf_append(&b, good.data, good.len);
        for (int k = 0; k < 1 + t % 8; k++) b.data[baton_rng_next(r) % b.len] ^= (uint8_t)(1u << (baton_rng_next(r) % 8));
        double box[4];
        random_box(r, 375, 500, box);
        both(&b, box, 1 + 2 * (t % 2), &s, &rf, &rr, NULL);
        CHECK((rf == BATON_OK || rf < 0) && (rr == BATON_OK || rr < 0));
        flipped_ok += rf == BATON_OK;
    }
    printf("bit-flipped JPEGs: %d of 120 decoded by the fast path, the rest refused cleanly\n", flipped_ok);
    check_scratch_works(&s, &good, "garbage");

    /* a plan's refusal comes back as it is; a box outside the image is an argument error */
    baton_image out = {0};
    baton_err err;
    CHECK_EQ_U(img_decode_crop(good.data, good.len, BATON_ENC_JPEG, NULL, 3, plan_refuse, NULL, 8, 8, &s, &out,
                               NULL, NULL, &err), BATON_ERR_ARG);
    CHECK(strstr(err.msg, "refused 375x500") != NULL);
    plan_ctx p = {{0, 0, 501, 375}, 0, 0, 0};
    CHECK_EQ_U(img_decode_crop(good.data, good.len, BATON_ENC_JPEG, NULL, 3, plan_fixed, &p, 8, 8, &s, &out, NULL,
                               NULL, &err), BATON_ERR_ARG);
    /* expect's size is checked against the header */
    uint32_t expect[3] = {376, 500, 0};
    CHECK_EQ_U(img_decode_crop(good.data, good.len, BATON_ENC_JPEG, expect, 3, plan_fixed, &p, 8, 8, &s, &out,
                               NULL, NULL, &err), BATON_ERR_FORMAT);
    CHECK_EQ_U(img_decode_crop(good.data, good.len, BATON_ENC_JPEG, NULL, 2, plan_fixed, &p, 8, 8, &s, &out, NULL,
                               NULL, &err), BATON_ERR_ARG);
    check_scratch_works(&s, &good, "refusals");
    baton_image_free(&out);
    img_scratch_free(&s);
    img_scratch_free(&s);  /* twice is harmless */
    baton_image_free(&im);
    baton_buf_free(&good);
    baton_buf_free(&b);
}

/* PNG and raw take the whole-image path in both: the same bytes exactly. */
static void test_png_raw(baton_rng *r)
{
    baton_image im = {0}, a = {0}, b = {0};
    baton_buf png = {0};
    img_scratch s = {0};
    baton_err err;
    fill_photo(&im, 61, 83, 3, 8);
    CHECK(baton_img_encode(&im, BATON_ENC_PNG, 0, &png, &err) == BATON_OK);
    for (int t = 0; t < 20; t++) {
        plan_ctx p = {{0}, 0, 0, 0};
        random_box(r, 61, 83, p.box);
        plan_ctx q = p;
        uint32_t c = t % 2 ? 3 : 1, h = 0, w = 0;
        int ra = img_decode_crop(png.data, png.len, BATON_ENC_UNKNOWN, NULL, c, plan_fixed, &p, 24, 40, &s, &a, &h,
                                 &w, &err);
        int rb = img_decode_crop_ref(png.data, png.len, BATON_ENC_PNG, NULL, c, plan_fixed, &q, 24, 40, &s, &b, NULL,
                                     NULL, &err);
        CHECK(ra == BATON_OK && rb == BATON_OK && h == 61 && w == 83);
        CHECK(a.c == c && a.h == 24 && a.w == 40 && memcmp(a.px, b.px, (size_t)24 * 40 * c) == 0);
        uint32_t shape[3] = {61, 83, 3};
        ra = img_decode_crop(im.px, (size_t)61 * 83 * 3, BATON_ENC_RAW, shape, c, plan_fixed, &p, 24, 40, &s, &a,
                             NULL, NULL, &err);
        CHECK(ra == BATON_OK && a.c == c && memcmp(a.px, b.px, (size_t)24 * 40 * c) == 0);
    }
    uint32_t shape[3] = {61, 83, 3};
    plan_ctx p = {{0, 0, 83, 61}, 0, 0, 0};
    CHECK_EQ_U(img_decode_crop(im.px, (size_t)61 * 83 * 3 - 1, BATON_ENC_RAW, shape, 3, plan_fixed, &p, 8, 8, &s,
                               &a, NULL, NULL, &err), BATON_ERR_TRUNCATED);
    img_scratch_free(&s);
    baton_image_free(&im);
    baton_image_free(&a);
    baton_image_free(&b);
    baton_buf_free(&png);
}

/* The point of the fast path: a RandomResizedCrop of ~30% of an h × w photo to 224×224 (at
 * 500×375 the box is under 8/7 of the output, so only rows and columns are saved; at 1024×768 the
 * DCT scale does part of the shrinking too). Printed, never failed on. */
static void test_speed(baton_rng *r, uint32_t h, uint32_t w)
{
    baton_image im = {0}, out = {0};
    baton_buf jpg = {0};
    img_scratch s = {0};
    baton_err err;
    fill_photo(&im, h, w, 3, 21);
    CHECK(encode_jpeg(&im, 85, &jpg) == BATON_OK);
    enum { N = 150 };
    static double boxes[N][4];
    double area = 0.3 * h * w;
    for (int i = 0; i < N; i++) {
        double bw = round(sqrt(area * (0.8 + 0.4 * urand(r)) * (4.0 / 3)));
        double bh = round(area / bw);
        boxes[i][0] = floor(urand(r) * (w - bw));
        boxes[i][1] = floor(urand(r) * (h - bh));
        boxes[i][2] = boxes[i][0] + bw;
        boxes[i][3] = boxes[i][1] + bh;
    }
    double t[2];
    for (int k = 0; k < 2; k++) {
        int fails = 0;
        double t0 = baton_now();
        for (int i = 0; i < N; i++) {
            plan_ctx p = {{boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3]}, 0, 0, 0};
            int rc = (k ? img_decode_crop_ref : img_decode_crop)(jpg.data, jpg.len, BATON_ENC_JPEG, NULL, 3, plan_fixed,
                                                                 &p, 224, 224, &s, &out, NULL, NULL, &err);
            fails += rc != BATON_OK;
        }
        t[k] = baton_now() - t0;
        CHECK_EQ_U(fails, 0);
    }
    printf("speed, %ux%u JPEG, ~30%% box to 224x224: fast %.3f ms, reference %.3f ms per image, %.2fx faster\n",
           w, h, 1e3 * t[0] / N, 1e3 * t[1] / N, t[1] / t[0]);
    img_scratch_free(&s);
    baton_image_free(&im);
    baton_image_free(&out);
    baton_buf_free(&jpg);
}

int main(void)
{
    baton_rng r;
    baton_rng_seed(&r, 11);
    test_resample(&r);
    test_fast_vs_ref(&r);
    test_errors_size();
    test_errors_bytes(&r);
    test_png_raw(&r);
    test_speed(&r, 375, 500);
    test_speed(&r, 768, 1024);
    CHECK_DONE();
}
