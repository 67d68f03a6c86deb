/* resize.c — bilinear image resize (for `pack --resize`, like im2rec's): output pixel (y, x) samples
 * the source at ((y + 0.5)·H/h − 0.5, (x + 0.5)·W/w − 0.5), clamped to the edges, weights in
 * floating point, rounded to nearest. Deterministic: the same input gives the same bytes. */
#include "img_internal.h"

#include <math.h>

int img_resize_bilinear(const baton_image *src, uint32_t h, uint32_t w, baton_image *dst,
                              baton_err *err)
{
    if (h == 0 || w == 0 || src->h == 0 || src->w == 0)
        return baton_err_set(err, BATON_ERR_ARG, "resize: empty image or target %ux%u", h, w);
    int rc = baton_image_resize(dst, h, w, src->c, err);
    if (rc) return rc;
    const uint32_t c = src->c, W = src->w, H = src->h;
    const double sy = (double)H / h, sx = (double)W / w;
    for (uint32_t y = 0; y < h; y++) {
        double fy = (y + 0.5) * sy - 0.5;
        if (fy < 0) fy = 0;
        uint32_t y0 = (uint32_t)fy, y1 = y0 + 1 < H ? y0 + 1 : H - 1;
        double wy = fy - y0;
        for (uint32_t x = 0; x < w; x++) {
            double fx = (x + 0.5) * sx - 0.5;
            if (fx < 0) fx = 0;
            uint32_t x0 = (uint32_t)fx, x1 = x0 + 1 < W ? x0 + 1 : W - 1;
            double wx = fx - x0;
            for (uint32_t k = 0; k < c; k++) {
                double a = src->px[((size_t)y0 * W + x0) * c + k], b = src->px[((size_t)y0 * W + x1) * c + k];
                double d = src->px[((size_t)y1 * W + x0) * c + k], e = src->px[((size_t)y1 * W + x1) * c + k];
                double v = (a * (1 - wx) + b * wx) * (1 - wy) + (d * (1 - wx) + e * wx) * wy;
                dst->px[((size_t)y * w + x) * c + k] = (uint8_t)lrint(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
    return BATON_OK;
}
