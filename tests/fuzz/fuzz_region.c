/* fuzz_region.c — libFuzzer target for the crop decoder (img_decode_crop, src/img/region.c) and
 * the box resampler behind it. The first FUZZ_HDR bytes are the request, the rest the image:
 *   byte 0: bit 0 the channels asked for (grey or RGB), bit 1 a fractional box, bit 2 the
 *           encoding sniffed (else JPEG declared), bit 3 the scratch freed after this run;
 *   bytes 1, 2: the output height and width, 1..64;
 *   bytes 3..6: the box, as fractions of the image's size: x0, y0, then the share of what is
 *           left to the right and below.
 * Images the probe says are over 4 Mpixel are skipped so runs stay fast (the decoder's own guard
 * is 64 Mpixel). Any bytes must give the output shape or a clean error (a negative status with a
 * message): no crash, leak, hang or output. The scratch is reused across runs, as a pipeline
 * worker's is, so an image that fails must leave it fit for the next. A JPEG the rectangle path
 * decoded (a restart marker after every MCU) is decoded again the ordinary way (a second scratch
 * with rect_off): when that succeeds too, the bytes must be the same. Seeds:
 * tests/fuzz/seeds/region/ (this header, then a small JPEG, progressive JPEG or PNG; restart-*:
 * JPEGs with a restart marker after every MCU, as `baton pack --jpeg-restart` writes them). */
#include "../../src/img/img_internal.h"
#include "../../src/img/region_internal.h"
#include "baton/img.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_HDR 7

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct req {
    uint8_t b[4];
    int frac;
} req;

static int plan(void *ctx, uint32_t h, uint32_t w, double box[4], baton_err *err)
{
    const req *q = ctx;
    double x0 = q->b[0] / 256.0 * w, y0 = q->b[1] / 256.0 * h;
    double x1 = x0 + (q->b[2] + 1) / 256.0 * (w - x0), y1 = y0 + (q->b[3] + 1) / 256.0 * (h - y0);
    if (!q->frac) {
        x0 = floor(x0);
        y0 = floor(y0);
        x1 = ceil(x1);
        y1 = ceil(y1);
    }
    box[0] = x0;
    box[1] = y0;
    box[2] = x1;
    box[3] = y1;
    return BATON_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static img_scratch s, plain = {.rect_off = 1};  /* reused across runs, as a decode loop would */
    static baton_image out, out2;
    if (size < FUZZ_HDR) return 0;
    const uint8_t *p = data + FUZZ_HDR;
    size_t n = size - FUZZ_HDR;
    uint32_t c = data[0] & 1 ? 3 : 1, oh = 1 + data[1] % 64, ow = 1 + data[2] % 64;
    req q = {{data[3], data[4], data[5], data[6]}, (data[0] >> 1) & 1};
    baton_encoding enc = data[0] & 4 ? BATON_ENC_UNKNOWN : BATON_ENC_JPEG;
    baton_err err;
    uint32_t h = 0, w = 0;
    if (img_probe(p, n, BATON_ENC_UNKNOWN, NULL, &h, &w, NULL, &err) == BATON_OK &&
        (uint64_t)h * w > (4u << 20))
        return 0;
    err.msg[0] = 0;
    uint32_t sh = 0, sw = 0;
    uint64_t rects = s.rect_decodes;
    int rc = img_decode_crop(p, n, enc, NULL, c, plan, &q, oh, ow, &s, &out, &sh, &sw, &err);
    if (rc == BATON_OK) {
        if (out.h != oh || out.w != ow || out.c != c || sh == 0 || sw == 0) abort();
        volatile uint8_t sink = out.px[(size_t)oh * ow * c - 1];
        (void)sink;
    } else if (rc >= 0 || err.msg[0] == 0) {
        abort();
    }
    if (rc == BATON_OK && s.rect_decodes != rects &&
        img_decode_crop(p, n, enc, NULL, c, plan, &q, oh, ow, &plain, &out2, NULL, NULL, &err) == BATON_OK &&
        memcmp(out.px, out2.px, (size_t)oh * ow * c) != 0)
        abort();  /* the rectangle path gave other bytes than the ordinary one */
    if (data[0] & 8) {
        img_scratch_free(&s);
        img_scratch_free(&plain);
        plain.rect_off = 1;
        baton_image_free(&out);
        baton_image_free(&out2);
    }
    return 0;
}
