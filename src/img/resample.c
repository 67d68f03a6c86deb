/* resample.c — the box resampler (img_resample_box) and the scratch it keeps (img_scratch_free).
 *
 * Contract (see region_internal.h): Pillow's ImagingResample with a box and the bilinear
 * (triangle) filter. For each axis, output pixel i of n covering the box [b0, b1) of an input of
 * size N has scale = (b1 - b0) / n, centre = b0 + (i + 0.5)·scale, support = max(scale, 1); its
 * taps are the input pixels j in [floor(centre - support + 0.5), floor(centre + support + 0.5))
 * clipped to [0, N), weighted by triangle((j - centre + 0.5) / max(scale, 1)) and renormalised to
 * sum 1 (so a tap cut off at the image edge gives its weight to the others). The horizontal pass
 * runs only over the source rows the vertical taps reach, into float rows; the vertical pass sums
 * them, rounds to nearest and clamps to 0..255. Weights are computed in double and applied in
 * float (within a level of a double-precision evaluation, ties aside). Deterministic; the
 * scratch (weights, bounds, rows) grows to the largest size seen and is reused. */
#include "region_internal.h"
#include "img_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* Grow the float rows (n) and the line (source row and float weights, nline). */
static int scratch_rows(img_scratch *s, size_t n, size_t nline, baton_err *err)
{
    if (n > s->rows_cap) {
        float *r = realloc(s->rows, n * sizeof *r);
        if (!r) return baton_err_set(err, BATON_ERR_NOMEM, "resample: out of memory for %zu floats", n);
        s->rows = r;
        s->rows_cap = n;
    }
    if (nline > s->line_cap) {
        float *l = realloc(s->line, nline * sizeof *l);  /* malloc's alignment suits v4f */
        if (!l) return baton_err_set(err, BATON_ERR_NOMEM, "resample: out of memory for %zu floats", nline);
        s->line = l;
        s->line_cap = nline;
    }
    return BATON_OK;
}

/* A pixel of 1..4 channels in float lanes: the horizontal pass of an RGB row is one multiply-add
 * of four lanes per tap (GCC and clang vector extension). */
typedef float v4f __attribute__((vector_size(16)));

/* An RGB pixel's three bytes into lanes 0..2 (lane 3 zero). */
static inline v4f px3_to_v4f(const uint8_t *s)
{
#ifdef __SSE2__
    __m128i v = _mm_cvtsi32_si128((int)(s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16));
    v = _mm_unpacklo_epi8(v, _mm_setzero_si128());
    v = _mm_unpacklo_epi16(v, _mm_setzero_si128());
    return (v4f)_mm_cvtepi32_ps(v);
#else
    return (v4f){s[0], s[1], s[2], 0};
#endif
}

/* The horizontal pass's view of one call: float weights, the source columns it reads. */
typedef struct hpass {
    const axis *ax;
    const float *wf;   /* ow × ksize, the weights in float */
    int32_t x_first;   /* the first source column any tap reads */
    int32_t x_last;    /* one past the last */
    void *line;        /* (x_last - x_first) converted source pixels */
} hpass;

/* One source row → one float row of ow × c, through the horizontal taps. */
static void pass_h(const uint8_t *src, uint32_t c, uint32_t ow, const hpass *hp, float *out)
{
    const axis *ax = hp->ax;
    const uint8_t *s = src + (size_t)hp->x_first * c;
    int32_t n = hp->x_last - hp->x_first;
    if (c == 3) {
        v4f *row = hp->line;
        for (int32_t x = 0; x < n; x++, s += 3) row[x] = px3_to_v4f(s);
        for (uint32_t x = 0; x < ow; x++) {
            const float *w = hp->wf + (size_t)x * ax->ksize;
            const v4f *p = row + (ax->b[2 * x] - hp->x_first);
            v4f acc = {0, 0, 0, 0};
            for (int32_t k = 0, cnt = ax->b[2 * x + 1]; k < cnt; k++) acc += w[k] * p[k];
            out[3 * x] = acc[0];
            out[3 * x + 1] = acc[1];
            out[3 * x + 2] = acc[2];
        }
    } else if (c == 1) {
        float *row = hp->line;
        for (int32_t x = 0; x < n; x++) row[x] = s[x];
        for (uint32_t x = 0; x < ow; x++) {
            const float *w = hp->wf + (size_t)x * ax->ksize;
            const float *p = row + (ax->b[2 * x] - hp->x_first);
            float acc = 0;
            for (int32_t k = 0, cnt = ax->b[2 * x + 1]; k < cnt; k++) acc += w[k] * p[k];
            out[x] = acc;
        }
    } else {
        for (uint32_t x = 0; x < ow; x++) {
            const double *w = ax->w + (size_t)x * ax->ksize;
            const uint8_t *p = src + (size_t)ax->b[2 * x] * c;
            for (uint32_t ch = 0; ch < c; ch++) {
                double s0 = 0;
                for (int32_t k = 0, cnt = ax->b[2 * x + 1]; k < cnt; k++) s0 += w[k] * p[(size_t)k * c + ch];
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

/* Four lanes rounded and clamped as to_u8 does, into d[0..3]. */
static inline void store4_u8(uint8_t *d, v4f a)
{
#ifdef __SSE2__
    __m128 v = _mm_add_ps((__m128)a, _mm_set1_ps(0.5f));
    v = _mm_min_ps(_mm_max_ps(v, _mm_setzero_ps()), _mm_set1_ps(255.0f));
    __m128i i = _mm_cvttps_epi32(v);  /* truncation of a non-negative value: floor */
    i = _mm_packs_epi32(i, i);
    i = _mm_packus_epi16(i, i);
    uint32_t u = (uint32_t)_mm_cvtsi128_si32(i);
    memcpy(d, &u, sizeof u);
#else
    for (int j = 0; j < 4; j++) d[j] = to_u8(a[j]);
#endif
}

/* The float rows (row r is source row y_first + r) → dst through the vertical taps, a block of
 * VBLOCK values at a time, four lanes at once, so the taps' rows are read in order. */
#define VBLOCK 256
static void pass_v(const float *rows, int32_t y_first, size_t stride, uint32_t oh, const axis *ay,
                   uint8_t *dst)
{
    v4f acc[VBLOCK / 4];
    for (uint32_t y = 0; y < oh; y++) {
        const double *w = ay->w + (size_t)y * ay->ksize;
        int32_t y0 = ay->b[2 * y] - y_first, cnt = ay->b[2 * y + 1];
        uint8_t *d = dst + (size_t)y * stride;
        for (size_t i0 = 0; i0 < stride; i0 += VBLOCK) {
            size_t len = stride - i0 < VBLOCK ? stride - i0 : VBLOCK, nv = (len + 3) / 4, full = len / 4;
            for (size_t j = 0; j < nv; j++) acc[j] = (v4f){0, 0, 0, 0};
            for (int32_t k = 0; k < cnt; k++) {
                const float *p = rows + (size_t)(y0 + k) * stride + i0;
                float wk = (float)w[k];
                for (size_t j = 0; j < full; j++) {
                    v4f pv;
                    memcpy(&pv, p + 4 * j, sizeof pv);
                    acc[j] += wk * pv;
                }
                for (size_t j = 4 * full; j < len; j++) acc[full][j - 4 * full] += wk * p[j];
            }
            for (size_t j = 0; j < full; j++) store4_u8(d + i0 + 4 * j, acc[j]);
            for (size_t j = 4 * full; j < len; j++) d[i0 + j] = to_u8(acc[full][j - 4 * full]);
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
    hpass hp = {&ax, NULL, ax.b[0], ax.b[0] + ax.b[1], NULL};
    for (uint32_t x = 0; x < ow; x++) {
        if (ax.b[2 * x] < hp.x_first) hp.x_first = ax.b[2 * x];
        if (ax.b[2 * x] + ax.b[2 * x + 1] > hp.x_last) hp.x_last = ax.b[2 * x] + ax.b[2 * x + 1];
    }
    size_t stride = (size_t)ow * src->c, line = 4 * (size_t)(hp.x_last - hp.x_first);
    rc = scratch_rows(s, (size_t)(y_last - y_first) * stride, line + nx, err);
    if (rc) return rc;
    rc = baton_image_resize(dst, oh, ow, src->c, err);
    if (rc) return rc;
    hp.line = s->line;
    float *wf = s->line + line;
    for (size_t i = 0; i < nx; i++) wf[i] = (float)ax.w[i];
    hp.wf = wf;
    size_t src_stride = (size_t)src->w * src->c;
    for (int32_t y = y_first; y < y_last; y++)
        pass_h(src->px + (size_t)y * src_stride, src->c, ow, &hp, s->rows + (size_t)(y - y_first) * stride);
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
    free(s->line);
    *s = (img_scratch){0};
}
