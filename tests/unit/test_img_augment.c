/* test_img_augment.c — augmentation and normalisation: the draw is a pure function of
 * (seed, epoch, position) with offsets in [-pad, pad] and a fair flip; the reference path equals
 * an independent "pad the image, crop, flip" construction (torchvision's order); the fast path is
 * bit-identical to the reference for random images (C = 1..4, 1×1 up to 40×33), pads 0..6 (also
 * larger than the image), both flips and both layouts. */
#include "../../src/img/augment_internal.h"
#include "baton/img.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>

static void test_draw(void)
{
    baton_augment a;
    img_augment_draw(7, 3, 11, 0, 0, &a);
    CHECK(a.dy == 0 && a.dx == 0 && a.flip == 0);

    /* pure function of its inputs */
    baton_augment b;
    img_augment_draw(7, 3, 11, 4, 1, &a);
    img_augment_draw(7, 3, 11, 4, 1, &b);
    CHECK(a.dy == b.dy && a.dx == b.dx && a.flip == b.flip);

    /* ranges, coverage of every offset, fair flip; epochs and seeds give different streams */
    const uint32_t pad = 3;
    uint64_t hy[7] = {0}, hx[7] = {0}, flips = 0, bad = 0, same_epoch = 0, same_seed = 0;
    const uint64_t n = 20000;
    for (uint64_t p = 0; p < n; p++) {
        img_augment_draw(42, 1, p, pad, 1, &a);
        if (a.dy < -(int32_t)pad || a.dy > (int32_t)pad || a.dx < -(int32_t)pad ||
            a.dx > (int32_t)pad || (a.flip != 0 && a.flip != 1)) {
            bad++;
            continue;
        }
        hy[a.dy + 3]++;
        hx[a.dx + 3]++;
        flips += (uint64_t)a.flip;
        img_augment_draw(42, 2, p, pad, 1, &b);
        same_epoch += a.dy == b.dy && a.dx == b.dx && a.flip == b.flip;
        img_augment_draw(43, 1, p, pad, 1, &b);
        same_seed += a.dy == b.dy && a.dx == b.dx && a.flip == b.flip;
    }
    CHECK_EQ_U(bad, 0);
    int even = 1;
    for (int i = 0; i < 7; i++) {
        double e = (double)n / 7.0;
        if (fabs((double)hy[i] - e) > 0.1 * e || fabs((double)hx[i] - e) > 0.1 * e) even = 0;
    }
    CHECK(even);
    CHECK(flips > n * 45 / 100 && flips < n * 55 / 100);
    /* a random match happens with probability 1/98 */
    CHECK(same_epoch < n / 40);
    CHECK(same_seed < n / 40);

    /* flip only: no offsets */
    int moved = 0;
    for (uint64_t p = 0; p < 100; p++) {
        img_augment_draw(1, 0, p, 0, 1, &a);
        moved |= a.dy != 0 || a.dx != 0;
    }
    CHECK(!moved);
}

static void random_image(baton_image *im, uint32_t h, uint32_t w, uint32_t c, unsigned *seed)
{
    baton_err err = {0};
    CHECK(baton_image_resize(im, h, w, c, &err) == BATON_OK);
    for (size_t i = 0; i < (size_t)h * w * c; i++) im->px[i] = (uint8_t)(rand_r(seed) & 0xff);
}

/* Independent construction: zero-pad by pad, crop at (pad + dy, pad + dx), then flip. */
static void pad_crop_flip(const baton_image *im, uint32_t pad, const baton_augment *a,
                          const float *mean, const float *std, baton_layout layout, float *dst)
{
    size_t ph = im->h + 2 * (size_t)pad, pw = im->w + 2 * (size_t)pad, c = im->c;
    uint8_t *padded = calloc(ph * pw * c, 1);
    for (size_t y = 0; y < im->h; y++)
        memcpy(padded + ((y + pad) * pw + pad) * c, im->px + y * im->w * c, im->w * c);
    for (size_t y = 0; y < im->h; y++) {
        for (size_t x = 0; x < im->w; x++) {
            size_t cx = a->flip ? im->w - 1 - x : x;
            size_t py = (size_t)((int64_t)y + pad + a->dy), px = (size_t)((int64_t)cx + pad + a->dx);
            for (size_t k = 0; k < c; k++) {
                float v = ((float)padded[(py * pw + px) * c + k] / 255.0f - mean[k]) / std[k];
                if (layout == BATON_LAYOUT_NHWC) dst[(y * im->w + x) * c + k] = v;
                else dst[(k * im->h + y) * im->w + x] = v;
            }
        }
    }
    free(padded);
}

static void test_apply(void)
{
    unsigned seed = 1234;
    baton_image im = {0};
    const float mean[4] = {0.2860f, 0.485f, 0.456f, 0.5f}, std[4] = {0.3530f, 0.229f, 0.224f, 0.25f};
    size_t cap = 40 * 33 * 4;
    float *ref = malloc(cap * sizeof *ref), *fast = malloc(cap * sizeof *fast),
          *indep = malloc(cap * sizeof *indep);
    uint64_t cases = 0, fast_bad = 0, indep_bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        uint32_t c = iter % 4 == 3 ? (uint32_t)(rand_r(&seed) % 4 + 1) : (iter % 2 ? 3 : 1);
        uint32_t h = (uint32_t)(rand_r(&seed) % 40 + 1), w = (uint32_t)(rand_r(&seed) % 33 + 1);
        if (iter < 4) h = w = 1;
        random_image(&im, h, w, c, &seed);
        uint32_t pad = (uint32_t)(rand_r(&seed) % 7);
        baton_augment a;
        img_augment_draw(99, (uint64_t)iter, (uint64_t)iter * 7, pad, 1, &a);
        if (iter % 5 == 0) a.flip = 0;
        for (int lay = 0; lay < 2; lay++) {
            baton_layout layout = lay ? BATON_LAYOUT_NHWC : BATON_LAYOUT_NCHW;
            size_t nv = (size_t)h * w * c;
            memset(ref, 0xa5, nv * sizeof *ref);
            memset(fast, 0x5a, nv * sizeof *fast);
            img_augment_apply_ref(&im, &a, mean, std, layout, ref);
            img_augment_apply(&im, &a, mean, std, layout, fast);
            pad_crop_flip(&im, pad, &a, mean, std, layout, indep);
            cases++;
            if (memcmp(ref, fast, nv * sizeof *ref) != 0) {
                if (!fast_bad)
                    fprintf(stderr, "fast != ref: %ux%ux%u pad %u dy %d dx %d flip %d layout %d\n",
                            h, w, c, pad, a.dy, a.dx, a.flip, lay);
                fast_bad++;
            }
            if (memcmp(ref, indep, nv * sizeof *ref) != 0) indep_bad++;
        }
    }
    CHECK(cases == 6000);
    CHECK_EQ_U(fast_bad, 0);
    CHECK_EQ_U(indep_bad, 0);

    /* offsets far outside the image: everything is the normalised zero */
    random_image(&im, 5, 4, 3, &seed);
    baton_augment far = {.dy = 9, .dx = -9, .flip = 1};
    img_augment_apply(&im, &far, mean, std, BATON_LAYOUT_NHWC, fast);
    int all_zero = 1;
    for (size_t i = 0; i < 5 * 4 * 3; i++)
        if (fast[i] != (0.0f - mean[i % 3]) / std[i % 3]) all_zero = 0;
    CHECK(all_zero);

    /* a hand-worked 2×3 grey case: shift down by one, right by one (dx = -1), flipped */
    CHECK(baton_image_resize(&im, 2, 3, 1, &(baton_err){0}) == BATON_OK);
    const uint8_t px[6] = {10, 20, 30, 40, 50, 60};
    memcpy(im.px, px, 6);
    baton_augment hand = {.dy = -1, .dx = -1, .flip = 1};
    const float one_mean[1] = {0}, one_std[1] = {1};
    img_augment_apply(&im, &hand, one_mean, one_std, BATON_LAYOUT_NCHW, fast);
    /* unflipped crop: row0 = 0 0 0, row1 = 0 10 20; flipped: row0 = 0 0 0, row1 = 20 10 0 */
    const uint8_t want[6] = {0, 0, 0, 20, 10, 0};
    int hand_ok = 1;
    for (int i = 0; i < 6; i++)
        if (fast[i] != (float)want[i] / 255.0f) hand_ok = 0;
    CHECK(hand_ok);

    free(ref);
    free(fast);
    free(indep);
    baton_image_free(&im);
}

/* The crops' rows (3 channels, no shift: the 16-pixel AVX2 blocks and their scalar tails), in
 * both layouts, floats and bytes, flipped and not, at every width to 80 and at offsets that leave
 * the rows aligned or not: each equal to its plain loop. */
static void test_crop_rows(void)
{
    unsigned seed = 77;
    baton_image im = {0};
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    size_t cap = 1280;   /* 3 x 5 x 80 + 80; aligned to 64 (so offset 0 takes the streamed stores where rows allow) */
    float *ref = aligned_alloc(64, cap * sizeof *ref), *fast = aligned_alloc(64, cap * sizeof *fast);
    uint8_t *ref8 = aligned_alloc(64, cap), *fast8 = aligned_alloc(64, cap);
    uint64_t cases = 0, bad = 0, bad8 = 0;
    for (int lay = 0; lay < 2; lay++)
    for (uint32_t w = 1; w <= 80; w++)
        for (uint32_t h = 1; h <= 5; h += 4)
            for (int flip = 0; flip < 2; flip++)
                for (size_t off = 0; off < 16; off += 5) {
                    baton_layout layout = lay ? BATON_LAYOUT_NHWC : BATON_LAYOUT_NCHW;
                    random_image(&im, h, w, 3, &seed);
                    baton_augment a = {.flip = flip};
                    memset(ref, 0xa5, cap * sizeof *ref);
                    memset(fast, 0xa5, cap * sizeof *fast);
                    memset(ref8, 0xa5, cap);
                    memset(fast8, 0xa5, cap);
                    img_augment_apply_ref(&im, &a, mean, std, layout, ref + off);
                    img_augment_apply(&im, &a, mean, std, layout, fast + off);
                    img_augment_apply_u8_ref(&im, &a, layout, ref8 + off);
                    img_augment_apply_u8(&im, &a, layout, fast8 + off);
                    cases++;
                    if (memcmp(ref, fast, cap * sizeof *ref) != 0) {   /* and nothing written around them */
                        if (!bad) fprintf(stderr, "crop rows (floats) differ: %ux%u flip %d offset %zu layout %d\n", h, w, flip, off, lay);
                        bad++;
                    }
                    if (memcmp(ref8, fast8, cap) != 0) {
                        if (!bad8) fprintf(stderr, "crop rows (bytes) differ: %ux%u flip %d offset %zu layout %d\n", h, w, flip, off, lay);
                        bad8++;
                    }
                }
    CHECK_EQ_U(cases, 2 * 80 * 2 * 2 * 4);
    CHECK_EQ_U(bad, 0);
    CHECK_EQ_U(bad8, 0);
    /* a flipped byte row by hand: pixels 0..19 with R = i, G = 100 + i, B = 200 - i */
    CHECK(baton_image_resize(&im, 1, 20, 3, &(baton_err){0}) == BATON_OK);
    for (int i = 0; i < 20; i++) im.px[3 * i] = (uint8_t)i, im.px[3 * i + 1] = (uint8_t)(100 + i), im.px[3 * i + 2] = (uint8_t)(200 - i);
    img_augment_apply_u8(&im, &(baton_augment){.flip = 1}, BATON_LAYOUT_NCHW, fast8);
    int hand = 1;
    for (int x = 0; x < 20; x++)
        if (fast8[x] != 19 - x || fast8[20 + x] != 119 - x || fast8[40 + x] != 181 + x) hand = 0;
    CHECK(hand);
    img_augment_apply_u8(&im, &(baton_augment){.flip = 1}, BATON_LAYOUT_NHWC, fast8);
    hand = 1;
    for (int x = 0; x < 20; x++)
        if (fast8[3 * x] != 19 - x || fast8[3 * x + 1] != 119 - x || fast8[3 * x + 2] != 181 + x) hand = 0;
    CHECK(hand);
    free(ref);
    free(fast);
    free(ref8);
    free(fast8);
    baton_image_free(&im);
}

int main(void)
{
    test_draw();
    test_apply();
    test_crop_rows();
    CHECK_DONE();
}
