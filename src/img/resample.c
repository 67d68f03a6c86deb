/* resample.c — the box resampler (img_resample_box) and the scratch it keeps (img_scratch_free).
 *
 * Contract (see region_internal.h): Pillow's ImagingResample with a box and the bilinear
 * (triangle) filter. For each axis, output pixel i of n covering the box [b0, b1) of an input of
 * size N has scale = (b1 - b0) / n, centre = b0 + (i + 0.5)·scale, support = max(scale, 1); its
 * taps are the input pixels j in [floor(centre - support + 0.5), floor(centre + support + 0.5))
 * clipped to [0, N), weighted by triangle((j - centre + 0.5) / max(scale, 1)) and renormalised to
 * sum 1 (so a tap cut off at the image edge gives its weight to the others). The horizontal pass
 * runs only over the source rows the vertical taps reach, into float rows; the vertical pass sums
 * them in double, rounds to nearest and clamps to 0..255. Weights are double. Deterministic; the
 * scratch (weights, bounds, rows) grows to the largest size seen and is reused. */
#include "region_internal.h"
#include "img_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct axis {
    uint32_t ksize;   /* taps per output pixel (row stride of the weights) */
    double *w;        /* n × ksize weights */
    int32_t *b;       /* n × {first tap, count} */
} axis;

static double triangle(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Taps per output pixel for an input of size n_in shrunk or grown by scale. */
static uint32_t axis_ksize(double scale, uint32_t n_in)
{
    double support = scale > 1.0 ? scale : 1.0;
    double k = 2.0 * ceil(support) + 1.0;
    return k > (double)n_in ? n_in : (uint32_t)k;
}

/* Pillow's precompute_coeffs for one axis: n outputs over [b0, b1) of an input of n_in. The
 * centres are computed relative to floor(b0), so a box moved by a whole number of pixels (a
 * crop's region offset) gets bit-identical weights. */
static void axis_coeffs(double b0, double b1, uint32_t n_in, uint32_t n, axis *a)
{
    double scale = (b1 - b0) / n;
    double fscale = scale > 1.0 ? scale : 1.0, support = fscale, inv = 1.0 / fscale;
    double base = floor(b0), frac = b0 - base;  /* exact */
    for (uint32_t i = 0; i < n; i++) {
        double centre = frac + (i + 0.5) * scale;  /* relative to base */
        int64_t lo = (int64_t)base + (int64_t)floor(centre - support + 0.5);
        int64_t hi = (int64_t)base + (int64_t)floor(centre + support + 0.5);
        int64_t xmin = lo < 0 ? 0 : lo > (int64_t)n_in - 1 ? (int64_t)n_in - 1 : lo;
        int64_t xmax = hi > (int64_t)n_in ? (int64_t)n_in : hi;
        int64_t cnt = xmax - xmin;
        if (cnt > (int64_t)a->ksize) cnt = a->ksize;
        if (cnt < 1) cnt = 1;
        double *w = a->w + (size_t)i * a->ksize, sum = 0;
        for (int64_t k = 0; k < cnt; k++) {
            w[k] = triangle(((double)(xmin + k - (int64_t)base) - centre + 0.5) * inv);
            sum += w[k];
        }
        if (sum > 0) {
            for (int64_t k = 0; k < cnt; k++) w[k] /= sum;
        } else {  /* cannot happen for a valid box; keep the nearest pixel rather than black */
            for (int64_t k = 0; k < cnt; k++) w[k] = 0;
            w[0] = 1;
        }
        a->b[2 * i] = (int32_t)xmin;
        a->b[2 * i + 1] = (int32_t)cnt;
    }
}

/* Grow the scratch to hold both axes' weights and bounds. */
static int scratch_coeffs(img_scratch *s, size_t ntaps, size_t nbounds, baton_err *err)
{
    if (ntaps > s->taps_cap) {
        double *t = realloc(s->taps, ntaps * sizeof *t);
        if (!t) return baton_err_set(err, BATON_ERR_NOMEM, "resample: out of memory for %zu weights", ntaps);
        s->taps = t;
        s->taps_cap = ntaps;
    }
    if (nbounds > s->bounds_cap) {
        int32_t *b = realloc(s->bounds, nbounds * sizeof *b);
        if (!b) return baton_err_set(err, BATON_ERR_NOMEM, "resample: out of memory for %zu bounds", nbounds);
        s->bounds = b;
        s->bounds_cap = nbounds;
    }
    return BATON_OK;
}

static int scratch_rows(img_scratch *s, size_t n, baton_err *err)
{
    if (n <= s->rows_cap) return BATON_OK;
    float *r = realloc(s->rows, n * sizeof *r);
    if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "resample: out of memory for %zu floats", n);
    s->rows = r;
    s->rows_cap = n;
    return BATON_OK;
}

/* One source row → one float row of ow × c, through the horizontal taps. */
static void pass_h(const uint8_t *src, uint32_t c, uint32_t ow, const axis *ax, float *out)
{
    for (uint32_t x = 0; x < ow; x++) {
        const double *w = ax->w + (size_t)x * ax->ksize;
        int32_t x0 = ax->b[2 * x], cnt = ax->b[2 * x + 1];
        const uint8_t *p = src + (size_t)x0 * c;
        if (c == 3) {
            double s0 = 0, s1 = 0, s2 = 0;
            for (int32_t k = 0; k < cnt; k++, p += 3) {
                s0 += w[k] * p[0];
                s1 += w[k] * p[1];
                s2 += w[k] * p[2];
            }
            out[3 * x] = (float)s0;
            out[3 * x + 1] = (float)s1;
            out[3 * x + 2] = (float)s2;
        } else if (c == 1) {
            double s0 = 0;
            for (int32_t k = 0; k < cnt; k++) s0 += w[k] * p[k];
            out[x] = (float)s0;
        } else {
            for (uint32_t ch = 0; ch < c; ch++) {
                double s0 = 0;
                for (int32_t k = 0; k < cnt; k++) s0 += w[k] * p[(size_t)k * c + ch];
                out[(size_t)x * c + ch] = (float)s0;
            }
        }
    }
}

/* Round to nearest (halves up) and clamp; v + 0.5 is positive where it is truncated, so the
 * truncation is floor (and no libm call in the innermost loop). */
static inline uint8_t to_u8(double v)
{
    v += 0.5;
    return v < 1.0 ? 0 : v >= 255.0 ? 255 : (uint8_t)(int)v;
}

/* The float rows (row r is source row y_first + r) → dst through the vertical taps, a block of
 * VBLOCK values at a time so the taps' rows are read in order. */
#define VBLOCK 256
static void pass_v(const float *rows, int32_t y_first, size_t stride, uint32_t oh, const axis *ay,
                   uint8_t *dst)
{
    double acc[VBLOCK];
    for (uint32_t y = 0; y < oh; y++) {
        const double *w = ay->w + (size_t)y * ay->ksize;
        int32_t y0 = ay->b[2 * y] - y_first, cnt = ay->b[2 * y + 1];
        uint8_t *d = dst + (size_t)y * stride;
        for (size_t i0 = 0; i0 < stride; i0 += VBLOCK) {
            size_t len = stride - i0 < VBLOCK ? stride - i0 : VBLOCK;
            for (size_t j = 0; j < len; j++) acc[j] = 0;
            for (int32_t k = 0; k < cnt; k++) {
                const float *p = rows + (size_t)(y0 + k) * stride + i0;
                double wk = w[k];
                for (size_t j = 0; j < len; j++) acc[j] += wk * p[j];
            }
            for (size_t j = 0; j < len; j++) d[i0 + j] = to_u8(acc[j]);
        }
    }
}

static int box_ok(const double box[4], uint32_t h, uint32_t w)
{
    for (int i = 0; i < 4; i++)
        if (!isfinite(box[i])) return 0;
    return box[0] >= 0 && box[1] >= 0 && box[0] < box[2] && box[1] < box[3] && box[2] <= (double)w &&
           box[3] <= (double)h;
}

int img_resample_box(const baton_image *src, const double box[4], uint32_t oh, uint32_t ow,
                     baton_image *dst, img_scratch *s, baton_err *err)
{
    if (!src || !src->px || !dst || !s || src->c == 0 || src == dst)
        return baton_err_set(err, BATON_ERR_ARG, "resample: no source, destination or scratch");
    int rc = img_check_pixels(oh, ow, "resample: output", err);
    if (rc) return rc;
    if (!box_ok(box, src->h, src->w))
        return baton_err_set(err, BATON_ERR_ARG, "resample: box (%g,%g)-(%g,%g) is not inside the %ux%u image",
                             box[0], box[1], box[2], box[3], src->h, src->w);
    axis ax = {axis_ksize((box[2] - box[0]) / ow, src->w), NULL, NULL};
    axis ay = {axis_ksize((box[3] - box[1]) / oh, src->h), NULL, NULL};
    size_t nx = (size_t)ow * ax.ksize, ny = (size_t)oh * ay.ksize;
    rc = scratch_coeffs(s, nx + ny, 2 * ((size_t)ow + oh), err);
    if (rc) return rc;
    ax.w = s->taps;
    ay.w = s->taps + nx;
    ax.b = s->bounds;
    ay.b = s->bounds + 2 * (size_t)ow;
    axis_coeffs(box[0], box[2], src->w, ow, &ax);
    axis_coeffs(box[1], box[3], src->h, oh, &ay);

    int32_t y_first = ay.b[0], y_last = ay.b[2 * (oh - 1)] + ay.b[2 * (oh - 1) + 1];
    for (uint32_t y = 0; y < oh; y++) {  /* the bounds are monotone, but cheap to be sure */
        if (ay.b[2 * y] < y_first) y_first = ay.b[2 * y];
        if (ay.b[2 * y] + ay.b[2 * y + 1] > y_last) y_last = ay.b[2 * y] + ay.b[2 * y + 1];
    }
    size_t stride = (size_t)ow * src->c;
    rc = scratch_rows(s, (size_t)(y_last - y_first) * stride, err);
    if (rc) return rc;
    rc = baton_image_resize(dst, oh, ow, src->c, err);
    if (rc) return rc;
    size_t src_stride = (size_t)src->w * src->c;
    for (int32_t y = y_first; y < y_last; y++)
        pass_h(src->px + (size_t)y * src_stride, src->c, ow, &ax, s->rows + (size_t)(y - y_first) * stride);
    pass_v(s->rows, y_first, stride, oh, &ay, dst->px);
    return BATON_OK;
}

void img_scratch_free(img_scratch *s)
{
    if (!s) return;
    img_region_jpeg_free(s);
    baton_image_free(&s->full);
    free(s->rows);
    free(s->taps);
    free(s->bounds);
    *s = (img_scratch){0};
}
