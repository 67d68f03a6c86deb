/* image.c — the baton_image pixel buffer (u8, H×W×C, HWC).
 *
 * Contract: baton_image_resize sets the dimensions and makes px hold at least h*w*c bytes; it
 * grows the buffer only when a larger image arrives (never shrinks), so decoding in a loop stops
 * allocating once the largest image has been seen. Bytes already in the buffer are kept (realloc),
 * which lets converters widen an image in place. A size that overflows size_t is refused with
 * BATON_ERR_ARG; on failure the image is left as it was. */
#include "baton/img.h"

#include <stdlib.h>

int baton_image_resize(baton_image *im, uint32_t h, uint32_t w, uint32_t c, baton_err *err)
{
    size_t hw, need;
    if (__builtin_mul_overflow((size_t)h, (size_t)w, &hw) ||
        __builtin_mul_overflow(hw, (size_t)c, &need))
        return baton_err_set(err, BATON_ERR_ARG, "image %ux%ux%u: size overflows", h, w, c);
    if (need > im->cap) {
        uint8_t *p = realloc(im->px, need);
        if (!p)
            return baton_err_set(err, BATON_ERR_NOMEM, "image %ux%ux%u: out of memory (%zu bytes)",
                                 h, w, c, need);
        im->px = p;
        im->cap = need;
    }
    im->h = h;
    im->w = w;
    im->c = c;
    return BATON_OK;
}

void baton_image_free(baton_image *im)
{
    if (!im) return;
    free(im->px);
    im->px = NULL;
    im->cap = 0;
    im->h = im->w = im->c = 0;
}
