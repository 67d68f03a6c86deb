/* region_internal.h — decoding the part of an image that a crop uses, at the size it is used
 * (src/img/region.c), and the resampler that takes a box of an image to an output size
 * (src/img/resample.c). What the decode pipeline's random-resized and centre crops call; private
 * to src/img and its tests.
 *
 * Contract:
 *  - A crop is a box in the source image's pixel coordinates, box[4] = {x0, y0, x1, y1}
 *    (doubles, 0 <= x0 < x1 <= W, 0 <= y0 < y1 <= H; a random-resized crop's are whole numbers, a
 *    centre crop's may be fractional). It is planned by a callback once the image's header has
 *    given its size, so a header is parsed once per sample.
 *  - img_resample_box is Pillow's resample (ImagingResample with a box): separable, horizontal
 *    pass then vertical, a triangle (bilinear) filter whose support is scaled by the reduction
 *    factor when shrinking (so it area-averages and does not alias) and 1 when enlarging; edge
 *    taps renormalised; intermediate rows in float, the result rounded to nearest and clamped.
 *    Deterministic; no allocation once the scratch has grown to the largest size seen.
 *  - img_decode_crop is the fast path: JPEG decodes only the rows and the iMCU-aligned columns the
 *    box touches (jpeg_skip_scanlines, jpeg_crop_scanline) at the smallest DCT scale M/8 (M = 1..8)
 *    that keeps the box at least oh × ow, then resamples the box (mapped into the decoded region's
 *    coordinates) to oh × ow; PNG and raw decode whole and resample. img_decode_crop_ref is the
 *    plain reference: baton_img_decode of the whole image at full size, then img_resample_box on the
 *    same box. The two agree within the tolerance tests/unit/test_img_region.c states. A JPEG with a
 *    restart marker after every MCU is decoded from its box's MCUs alone (jpeg_rect_internal.h),
 *    to the same bytes as the fast path gives without it (tests/unit/test_img_rect.c).
 *  - Errors are values (never a crash or a print, whatever the bytes): a header that lies about
 *    the size, a truncated stream ("Premature end": BATON_ERR_TRUNCATED), corrupt data
 *    (BATON_ERR_CORRUPT), a decompression bomb (more than BATON_IMG_MAX_PIXELS: BATON_ERR_FORMAT),
 *    CMYK/YCCK refused (BATON_ERR_FORMAT), as baton_img_decode does. The caller prefixes the record.
 *  - c is the channels wanted: 1 (grey) or 3 (RGB); a grey JPEG becomes RGB and a colour one grey
 *    as baton_img_decode's force_c does. */
#ifndef BATON_REGION_INTERNAL_H
#define BATON_REGION_INTERNAL_H

#include "baton/img.h"

/* Working memory of one thread (a pipeline worker): zero-initialise, reuse, free once. */
typedef struct img_scratch {
    baton_image full;      /* the decoded image or region */
    float *rows;           /* the resampler's intermediate (one vertically summed row) */
    size_t rows_cap;       /* floats */
    double *taps;          /* the resampler's weights */
    int32_t *bounds;
    size_t taps_cap, bounds_cap;
    float *line;           /* the resampler's weights in float */
    size_t line_cap;       /* floats */
    void *jpeg;            /* region.c's libjpeg decompressor, created on first use */
    void *rect;            /* region.c's restart index and rectangle (jpeg_rect.c), on first use */
    int rect_off;          /* 1: never the rectangle path (tests and benchmarks compare the two) */
    int huff_off;          /* 1: the rectangle path with libjpeg's own Huffman decoder, not
                            * jpeg_mcu.c's (its reference, in tests and benchmarks) */
    uint64_t rect_decodes; /* crops the rectangle path gave (tests check which path ran) */
} img_scratch;
void img_scratch_free(img_scratch *s);
/* region.c: destroy s->jpeg (NULL after); what img_scratch_free calls. */
void img_region_jpeg_free(img_scratch *s);

/* The crop for an image of h × w (from its header): fill box (see the contract). Non-zero (and
 * err set) refuses the image. */
typedef int (*img_crop_plan)(void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err);

/* box of src → dst, oh × ow, src's channels. Where the CPU has AVX2 both passes use it, with the
 * same arithmetic lane by lane (the same bytes); img_resample_baseline = 1 turns it off (tests
 * compare the two). */
extern int img_resample_baseline;
int img_resample_box(const baton_image *src, const double box[4], uint32_t oh, uint32_t ow,
                     baton_image *dst, img_scratch *s, baton_err *err);

/* Decode p/n (enc: RAW needs expect = {H, W, C}; PNG/JPEG/UNKNOWN are sniffed or checked as
 * baton_img_decode does), plan the crop with plan(ctx, H, W, box), and write the box resampled to
 * oh × ow with c channels into dst. *src_h / *src_w (may be NULL) get the image's size. */
int img_decode_crop(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3], uint32_t c,
                    img_crop_plan plan, void *ctx, uint32_t oh, uint32_t ow, img_scratch *s, baton_image *dst,
                    uint32_t *src_h, uint32_t *src_w, baton_err *err);
int img_decode_crop_ref(const uint8_t *p, size_t n, baton_encoding enc, const uint32_t expect[3], uint32_t c,
                        img_crop_plan plan, void *ctx, uint32_t oh, uint32_t ow, img_scratch *s, baton_image *dst,
                        uint32_t *src_h, uint32_t *src_w, baton_err *err);

#endif
