/* resample.c — the box resampler (img_resample_box) and the scratch it keeps (img_scratch_free).
 *
 * Contract (see region_internal.h): Pillow's ImagingResample with a box and the bilinear
 * (triangle) filter. For each axis, output pixel i of n covering the box [b0, b1) of an input of
 * size N has scale = (b1 - b0) / n, centre = b0 + (i + 0.5)·scale, support = max(scale, 1); its
 * taps are the input pixels j in [floor(centre - support + 0.5), floor(centre + support + 0.5))
 * clipped to [0, N), weighted by triangle((j - centre + 0.5) / max(scale, 1)) and renormalised to
 * sum 1 (so a tap cut off at the image edge gives its weight to the others). Row by row of the
 * output: the vertical pass sums the source rows its taps reach, over the source columns the
 * horizontal taps reach, into one float row; the horizontal pass sums that row's taps, rounds to
 * nearest and clamps to 0..255. (Vertical first: a crop shrinks, so the horizontal pass, the one
 * that gathers, runs over the output's rows rather than the source's, and nothing is held
 * between output rows.) Weights are computed in double and applied in float (within a level of a
 * double-precision evaluation, ties aside). Deterministic, the same bytes with or without SSE2;
 * the scratch (weights, bounds, one row) grows to the largest size seen and is reused. */
#include "region_internal.h"
#include "img_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif

int img_resample_baseline = 0;

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

/* The vertical pass for one output row: vrow[j] = Σ_k w[k]·src[k·stride + j] for j < len, the
 * taps summed in order from zero (the SSE2 lanes and the scalar tail do the same operations, so
 * every value is the same whichever computed it). src is the first tap's row at the first column. */
static void pass_v(const uint8_t *src, size_t stride, const float *w, int32_t cnt, size_t len, float *vrow)
{
    size_t j = 0;
#ifdef __SSE2__
    const __m128i z = _mm_setzero_si128();
    for (; j + 16 <= len; j += 16) {
        __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int32_t k = 0; k < cnt; k++) {
            __m128i b;
            memcpy(&b, src + (size_t)k * stride + j, sizeof b);
            __m128i lo = _mm_unpacklo_epi8(b, z), hi = _mm_unpackhi_epi8(b, z);
            __m128 wk = _mm_set1_ps(w[k]);
            a0 = _mm_add_ps(a0, _mm_mul_ps(wk, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, z))));
            a1 = _mm_add_ps(a1, _mm_mul_ps(wk, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, z))));
            a2 = _mm_add_ps(a2, _mm_mul_ps(wk, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, z))));
            a3 = _mm_add_ps(a3, _mm_mul_ps(wk, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, z))));
        }
        _mm_storeu_ps(vrow + j, a0);
        _mm_storeu_ps(vrow + j + 4, a1);
        _mm_storeu_ps(vrow + j + 8, a2);
        _mm_storeu_ps(vrow + j + 12, a3);
    }
#endif
    for (; j < len; j++) {
        float a = 0;
        for (int32_t k = 0; k < cnt; k++) a += w[k] * (float)src[(size_t)k * stride + j];
        vrow[j] = a;
    }
}

/* The RGB weights, by pairs of output pixels: pair q (pixels 2q, 2q + 1), tap k holds pixel 2q's
 * weight in lanes 0..3 and 2q + 1's in lanes 4..7 (zero past a pixel's count), so the AVX2 pass
 * multiplies two pixels' taps at once and the SSE2 pass reads its four lanes. */
static inline const v4f *pair_w(const float *wp, uint32_t ks, uint32_t x)
{
    return (const v4f *)(wp + ((size_t)(x / 2) * ks * 8 + 4 * (x & 1)));
}

/* Output pixel x of an RGB row: its taps over the vertical sums, four lanes (the fourth unused). */
static inline v4f pixel3(const float *vrow, const axis *ax, int32_t x_first, const float *wp, uint32_t x)
{
    const float *p = vrow + 3 * (size_t)(ax->b[2 * x] - x_first);
    const v4f *w = pair_w(wp, ax->ksize, x);
    v4f acc = {0, 0, 0, 0};
    for (int32_t k = 0, cnt = ax->b[2 * x + 1]; k < cnt; k++) {
        v4f pv;
        memcpy(&pv, p + 3 * k, sizeof pv);
        acc += w[2 * k] * pv;
    }
    return acc;
}

/* Four RGB pixels rounded and clamped as to_u8 does, into d[0..11] (d[12] is written too: the
 * caller writes the pixel after them later). */
static inline void store4x4_u8(uint8_t *d, const v4f a[4])
{
#ifdef __SSE2__
    const __m128 half = _mm_set1_ps(0.5f), zero = _mm_setzero_ps(), top = _mm_set1_ps(255.0f);
    __m128i i[4];
    for (int j = 0; j < 4; j++)
        i[j] = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(_mm_add_ps((__m128)a[j], half), zero), top));
    __m128i b = _mm_packus_epi16(_mm_packs_epi32(i[0], i[1]), _mm_packs_epi32(i[2], i[3]));
    for (int j = 0; j < 4; j++, b = _mm_srli_si128(b, 4)) {  /* each pixel's fourth byte overwritten next */
        uint32_t u = (uint32_t)_mm_cvtsi128_si32(b);
        memcpy(d + 3 * j, &u, sizeof u);
    }
#else
    for (int j = 0; j < 4; j++) store4_u8(d + 3 * j, a[j]);
#endif
}

/* The horizontal pass for one output row, from output pixel from (a multiple of 4; 0 but for the
 * AVX2 pass's rest): the vertical sums (vrow: source columns from x_first, c floats each, then
 * zeros) through the horizontal taps, rounded, into d. wb: the weights in float, for RGB by pairs
 * (pair_w), else ow × ksize. */
static void pass_h(const float *vrow, uint32_t c, uint32_t ow, const axis *ax, int32_t x_first, const float *wb,
                   uint32_t from, uint8_t *d)
{
    uint32_t ks = ax->ksize;
    if (c == 3) {  /* one pixel's three channels (and the next pixel's first, unused) per tap */
        uint32_t x = from;
        for (; x + 4 < ow; x += 4) {  /* four pixels, rounded together; a pixel is left after them */
            v4f acc[4];
            for (uint32_t i = 0; i < 4; i++) acc[i] = pixel3(vrow, ax, x_first, wb, x + i);
            store4x4_u8(d + 3 * (size_t)x, acc);
        }
        for (; x < ow; x++) {
            v4f acc = pixel3(vrow, ax, x_first, wb, x);
            if (x + 1 < ow) {
                store4_u8(d + 3 * (size_t)x, acc);  /* its fourth byte is the next pixel's, written next */
            } else {
                uint8_t t[4];
                store4_u8(t, acc);
                memcpy(d + 3 * (size_t)x, t, 3);
            }
        }
        return;
    }
    for (uint32_t x = 0; x < ow; x++) {
        const float *p = vrow + (size_t)(ax->b[2 * x] - x_first) * c;
        const float *w = wb + (size_t)x * ks;
        for (uint32_t ch = 0; ch < c; ch++) {
            float acc = 0;
            for (int32_t k = 0, cnt = ax->b[2 * x + 1]; k < cnt; k++) acc += w[k] * p[(size_t)k * c + ch];
            d[(size_t)x * c + ch] = to_u8(acc);
        }
    }
}

#ifdef HAVE_AVX2_PATH
/* The vertical pass with AVX2: 32 bytes of each tap row at a time, then pass_v for the rest. Lane
 * by lane the same operations as pass_v (0 + w0·x0 + w1·x1 …, a multiply then an add: avx2 does
 * not bring FMA contraction), so the same floats. */
__attribute__((target("avx2"))) static void pass_v_avx2(const uint8_t *src, size_t stride, const float *w,
                                                        int32_t cnt, size_t len, float *vrow)
{
    size_t j = 0;
    for (; j + 32 <= len; j += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const uint8_t *s = src + j;
        for (int32_t k = 0; k < cnt; k++, s += stride) {
            __m256 wk = _mm256_set1_ps(w[k]);
            __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)s);
            __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(wk, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo))));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(wk, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)))));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(wk, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi))));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(wk, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)))));
        }
        _mm256_storeu_ps(vrow + j, a0);
        _mm256_storeu_ps(vrow + j + 8, a1);
        _mm256_storeu_ps(vrow + j + 16, a2);
        _mm256_storeu_ps(vrow + j + 24, a3);
    }
    for (; j + 8 <= len; j += 8) {
        __m256 a = _mm256_setzero_ps();
        const uint8_t *s = src + j;
        for (int32_t k = 0; k < cnt; k++, s += stride) {
            __m128i b8 = _mm_loadl_epi64((const __m128i *)(const void *)s);
            a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(w[k]), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b8))));
        }
        _mm256_storeu_ps(vrow + j, a);
    }
    if (j < len) pass_v(src + j, stride, w, cnt, len - j, vrow + j);
}

/* Two adjacent output pixels' sums, side by side (pixel xa in lanes 0..3): their taps up to the
 * larger count (a zero weight adds +0 to a non-negative sum, which leaves it as it is). */
__attribute__((target("avx2"))) static inline __m256 pair_sum(const float *vrow, const int32_t *b, int32_t x_first,
                                                              const float *w, uint32_t xa)
{
    const float *pa = vrow + 3 * (size_t)(b[2 * xa] - x_first), *pb = vrow + 3 * (size_t)(b[2 * xa + 2] - x_first);
    int32_t kmax = b[2 * xa + 1] > b[2 * xa + 3] ? b[2 * xa + 1] : b[2 * xa + 3];
    __m256 s = _mm256_setzero_ps();
    for (int32_t k = 0; k < kmax; k++) {
        __m256 v = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(pa + 3 * k)), _mm_loadu_ps(pb + 3 * k), 1);
        s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_loadu_ps(w + 8 * k), v));
    }
    return s;
}

/* The horizontal pass of an RGB row with AVX2: two pixels per multiply, four rounded as
 * store4x4_u8 rounds and written as 16 bytes (the last 4 are the next pixels', written next; the
 * row's last four as their 12 bytes), then pass_h for the 0-3 left. The same floats and bytes as pass_h. */
__attribute__((target("avx2"))) static void pass_h3_avx2(const float *vrow, uint32_t ow, const axis *ax,
                                                         int32_t x_first, const float *wp, uint8_t *d)
{
    uint32_t ks = ax->ksize, x = 0;
    const __m256 half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
    const __m128i pick = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    for (; x + 4 <= ow; x += 4) {
        const float *w = wp + (size_t)(x / 2) * ks * 8;
        __m256 s01 = pair_sum(vrow, ax->b, x_first, w, x);
        __m256 s23 = pair_sum(vrow, ax->b, x_first, w + (size_t)ks * 8, x + 2);
        __m256i i01 = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_add_ps(s01, half), zero), top));
        __m256i i23 = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_add_ps(s23, half), zero), top));
        __m256i p = _mm256_packus_epi16(_mm256_packs_epi32(i01, i23), _mm256_setzero_si256());
        /* lane 0: pixels 0 and 2, lane 1: 1 and 3, four bytes each */
        __m128i px = _mm_shuffle_epi8(_mm_unpacklo_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1)), pick);
        if (x + 6 <= ow) {
            _mm_storeu_si128((__m128i *)(void *)(d + 3 * (size_t)x), px);
        } else {   /* the row's last four pixels: their 12 bytes alone */
            uint8_t t[16];
            _mm_storeu_si128((__m128i *)(void *)t, px);
            memcpy(d + 3 * (size_t)x, t, 12);
        }
    }
    pass_h(vrow, 3, ow, ax, x_first, wp, x, d);
}
#endif

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

    int32_t x_first = ax.b[0], x_last = ax.b[0] + ax.b[1];
    for (uint32_t x = 0; x < ow; x++) {  /* the bounds are monotone, but cheap to be sure */
        if (ax.b[2 * x] < x_first) x_first = ax.b[2 * x];
        if (ax.b[2 * x] + ax.b[2 * x + 1] > x_last) x_last = ax.b[2 * x] + ax.b[2 * x + 1];
    }
    /* the row, then zeros: a tap past a pixel's count (weight zero) and the fourth lane read there */
    size_t len = (size_t)(x_last - x_first) * src->c, pad = 3 * (size_t)ax.ksize + 4;
    size_t nw = src->c == 3 ? ((size_t)ow + 1) / 2 * ax.ksize * 8 : nx;
    rc = scratch_rows(s, len + pad, nw + ny, err);
    if (rc) return rc;
    rc = baton_image_resize(dst, oh, ow, src->c, err);
    if (rc) return rc;
    float *wh = s->line, *wv = s->line + nw;
    if (src->c == 3) {
        memset(wh, 0, nw * sizeof *wh);
        for (uint32_t x = 0; x < ow; x++)
            for (int32_t k = 0; k < ax.b[2 * x + 1]; k++) {
                float *o = wh + (size_t)(x / 2) * ax.ksize * 8 + 8 * (size_t)k + 4 * (x & 1);
                o[0] = o[1] = o[2] = o[3] = (float)ax.w[(size_t)x * ax.ksize + (size_t)k];
            }
    } else {
        for (size_t i = 0; i < nx; i++) wh[i] = (float)ax.w[i];
    }
    for (size_t i = 0; i < ny; i++) wv[i] = (float)ay.w[i];
    memset(s->rows + len, 0, pad * sizeof *s->rows);
    size_t src_stride = (size_t)src->w * src->c, dst_stride = (size_t)ow * src->c;
    int avx2 = 0;
#ifdef HAVE_AVX2_PATH
    avx2 = !img_resample_baseline && __builtin_cpu_supports("avx2");
#endif
    for (uint32_t y = 0; y < oh; y++) {
        const uint8_t *first = src->px + (size_t)ay.b[2 * y] * src_stride + (size_t)x_first * src->c;
        const float *w = wv + (size_t)y * ay.ksize;
        uint8_t *d = dst->px + (size_t)y * dst_stride;
#ifdef HAVE_AVX2_PATH
        if (avx2) {
            pass_v_avx2(first, src_stride, w, ay.b[2 * y + 1], len, s->rows);
            if (src->c == 3) pass_h3_avx2(s->rows, ow, &ax, x_first, wh, d);
            else pass_h(s->rows, src->c, ow, &ax, x_first, wh, 0, d);
            continue;
        }
#endif
        pass_v(first, src_stride, w, ay.b[2 * y + 1], len, s->rows);
        pass_h(s->rows, src->c, ow, &ax, x_first, wh, 0, d);
    }
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
