/* fuzz_img.c — libFuzzer target for the image decoders: the bytes are sniffed, probed and decoded
 * as PNG or JPEG; the last byte picks the channels asked for (own, grey or RGB). The probe keeps
 * the fuzzer on images of at most 1 Mpixel so runs stay fast (the decoder's own guard is 64
 * Mpixel). Any bytes must decode or fail cleanly: no crash, no leak, no output; on success the
 * shape agrees with the probe; a header the probe refuses is refused by the decoder too. */
#include "../../src/img/img_internal.h"
#include "baton/img.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static baton_image im;  /* reused across runs, as a decode loop would */
    baton_err err;
    baton_encoding enc = img_sniff(data, size);
    uint32_t h = 0, w = 0, c = 0;
    int rc = img_probe(data, size, enc, NULL, &h, &w, &c, &err);
    if (rc != BATON_OK) {
        if (rc >= 0 || err.msg[0] == 0) abort();
        if (baton_img_decode(data, size, enc, NULL, &im, &err) == BATON_OK) abort();
        return 0;
    }
    if ((uint64_t)h * w > (1u << 20)) return 0;
    static const uint32_t want_c[3] = {0, 1, 3};
    uint32_t expect[3] = {h, w, want_c[data[size - 1] % 3]};
    rc = baton_img_decode(data, size, enc, expect, &im, &err);
    if (rc == BATON_OK) {
        if (im.h != h || im.w != w || im.c != (expect[2] ? expect[2] : c)) abort();
        volatile uint8_t sink = im.px[(size_t)im.h * im.w * im.c - 1];
        (void)sink;
    } else if (rc >= 0 || err.msg[0] == 0) {
        abort();
    }
    return 0;
}
