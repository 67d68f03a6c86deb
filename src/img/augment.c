/* augment.c — per-sample augmentation and normalisation into a batch slot: random crop of the
 * original size from the image zero-padded by `pad` on each side, horizontal flip, and
 * (pixel/255 - mean[c]) / std[c], written as NCHW or NHWC floats.
 *
 * Contract:
 *  - img_augment_draw is a pure function of (seed, epoch, position, pad, flip): the RNG stream
 *    is baton_rng_seed3(seed ^ "aug ", epoch, position); dy then dx uniform in [-pad, pad] (drawn
 *    only when pad > 0), then the flip bit (drawn only when flip is on, p = 0.5). This matches
 *    torchvision's RandomCrop(size, padding=pad) followed by RandomHorizontalFlip.
 *  - dst[y][x] = norm(P(y + dy, x' + dx)) with x' = w-1-x when flipped, else x; P is the image
 *    with zero pixels outside it (zero before normalisation, as torchvision pads).
 *  - img_augment_apply_ref is the plain per-pixel loop; img_augment_apply walks rows, fills
 *    the out-of-image spans with the normalised zero and reads a 256-entry table per channel.
 *    Both compute every value with img_norm_value, so they agree bit for bit (tests memcmp them).
 *  - img_augment_apply_u8 is the same crop and flip without normalisation (bytes), beside its
 *    plain loop img_augment_apply_u8_ref.
 *  - The crops' case (3 channels, no shift) goes 16 pixels at a time with AVX2 where the CPU has
 *    it, in either layout, for floats and bytes: the same results (the tests compare every path
 *    with its plain loop).
 *  - No allocation; nothing here can fail. Images with more than IMG_NORM_MAX_C channels take
 *    the reference path. */
#include "augment_internal.h"

#include <string.h>
#include <stdint.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_ROWS 1
#endif

#define AUG_TAG 0x61756720ULL  /* "aug " */

void img_augment_draw(uint64_t seed, uint64_t epoch, uint64_t position, uint32_t pad, int flip,
                        baton_augment *a)
{
    a->dy = 0;
    a->dx = 0;
    a->flip = 0;
    if (pad == 0 && !flip) return;
    baton_rng r;
    baton_rng_seed3(&r, seed ^ AUG_TAG, epoch, position);
    if (pad > 0) {
        uint64_t span = 2 * (uint64_t)pad + 1;
        a->dy = (int32_t)((int64_t)baton_rng_below(&r, span) - (int64_t)pad);
        a->dx = (int32_t)((int64_t)baton_rng_below(&r, span) - (int64_t)pad);
    }
    if (flip) a->flip = (int)(baton_rng_next(&r) >> 63);
}

/* ---------------------------------------------------------------- reference */

void img_augment_apply_ref(const baton_image *im, const baton_augment *a, const float *mean,
                             const float *std, baton_layout layout, float *dst)
{
    int64_t h = im->h, w = im->w, c = im->c;
    for (int64_t y = 0; y < h; y++) {
        for (int64_t x = 0; x < w; x++) {
            int64_t sy = y + a->dy;
            int64_t sx = (a->flip ? w - 1 - x : x) + a->dx;
            int inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
            for (int64_t k = 0; k < c; k++) {
                uint32_t px = inside ? im->px[(sy * w + sx) * c + k] : 0;
                float v = img_norm_value(px, mean[k], std[k]);
                if (layout == BATON_LAYOUT_NHWC) dst[(y * w + x) * c + k] = v;
                else dst[(k * h + y) * w + x] = v;
            }
        }
    }
}

/* ---------------------------------------------------------------- fast path */

void img_norm_lut_init(img_norm_lut *lut, uint32_t c, const float *mean, const float *std)
{
    lut->c = c;
    for (uint32_t k = 0; k < c && k < IMG_NORM_MAX_C; k++)
        for (uint32_t px = 0; px < 256; px++) lut->v[k][px] = img_norm_value(px, mean[k], std[k]);
}

/* Output columns [*x0, *x1) that read inside the image; the rest read padding. */
static void valid_span(int64_t w, int64_t dx, int flip, int64_t *x0, int64_t *x1)
{
    /* unflipped: sx = x + dx in [0, w)  ->  x in [-dx, w - dx)
     * flipped:   sx = w-1-x + dx in [0, w)  ->  x in [dx, w + dx) */
    int64_t lo = flip ? dx : -dx, hi = flip ? w + dx : w - dx;
    if (lo < 0) lo = 0;
    if (lo > w) lo = w;
    if (hi > w) hi = w;
    if (hi < lo) hi = lo;
    *x0 = lo;
    *x1 = hi;
}

static void fill(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) p[i] = v;
}

/* One output row of one channel (stride 1 in dst), reading every c-th byte of a source row. */
static void row_plane(const uint8_t *src, int64_t w, int64_t c, int64_t dx, int flip,
                      const float *t, float *row)
{
    int64_t x0, x1;
    valid_span(w, dx, flip, &x0, &x1);
    fill(row, (size_t)x0, t[0]);
    if (!flip) {
        if (c == 1) {
            for (int64_t x = x0; x < x1; x++) row[x] = t[src[x + dx]];
        } else {
            for (int64_t x = x0; x < x1; x++) row[x] = t[src[(x + dx) * c]];
        }
    } else {
        for (int64_t x = x0; x < x1; x++) row[x] = t[src[(w - 1 - x + dx) * c]];
    }
    fill(row + x1, (size_t)(w - x1), t[0]);
}

#ifdef HAVE_AVX2_ROWS
/* The crops' rows (3 channels, no shift) with AVX2, 16 pixels at a time: their 48 bytes loaded as
 * three 16-byte pieces and split into one 16-byte run per channel by byte shuffles (pick[flip][k][j]:
 * byte i of channel k's run from piece j, or zero; flipped, pixel 15 - i's, so the run comes out
 * reversed), then for floats each byte's table entry gathered, 8 at a time. The same table entries
 * and bytes as the scalar loops, so the same results; the columns past the last 16 are theirs.
 * Where a row's planes are aligned the stores are streamed (non-temporal), and the caller fences
 * once per sample: a batch (77 MB of 224-px float crops) is read next by its consumer, not by
 * this core, and is far larger than the cache — streamed, its lines are not first read from
 * memory to be overwritten (1-3 % of a crop's CPU on the 2-core machines; bench/RESULTS.md §16). */
#define PK(f, k, j, i) \
    (char)((3 * ((f) ? 15 - (i) : (i)) + (k)) / 16 == (j) ? (3 * ((f) ? 15 - (i) : (i)) + (k)) % 16 : -128)
#define PK16(f, k, j)                                                                                        \
    {PK(f, k, j, 0),  PK(f, k, j, 1),  PK(f, k, j, 2),  PK(f, k, j, 3),  PK(f, k, j, 4),  PK(f, k, j, 5),     \
     PK(f, k, j, 6),  PK(f, k, j, 7),  PK(f, k, j, 8),  PK(f, k, j, 9),  PK(f, k, j, 10), PK(f, k, j, 11),    \
     PK(f, k, j, 12), PK(f, k, j, 13), PK(f, k, j, 14), PK(f, k, j, 15)}
#define PK3(f, k) {PK16(f, k, 0), PK16(f, k, 1), PK16(f, k, 2)}
static const char pick[2][3][3][16] = {{PK3(0, 0), PK3(0, 1), PK3(0, 2)}, {PK3(1, 0), PK3(1, 1), PK3(1, 2)}};

static int rows_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

/* Channel k's 16 bytes of the 16 pixels at s (three 16-byte loads, nothing read past s + 48). */
__attribute__((target("avx2"))) static inline __m128i channel16(const __m128i c[3], const char (*m)[16])
{
    __m128i v = _mm_shuffle_epi8(c[0], _mm_loadu_si128((const __m128i *)(const void *)m[0]));
    v = _mm_or_si128(v, _mm_shuffle_epi8(c[1], _mm_loadu_si128((const __m128i *)(const void *)m[1])));
    return _mm_or_si128(v, _mm_shuffle_epi8(c[2], _mm_loadu_si128((const __m128i *)(const void *)m[2])));
}

__attribute__((target("avx2"))) static inline void load48(const uint8_t *p, __m128i c[3])
{
    for (int j = 0; j < 3; j++) c[j] = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * j));
}

/* Columns [0, return) of one output row of floats in the three planes. */
__attribute__((target("avx2"))) static int64_t rows3_f32_avx2(const uint8_t *s, int64_t w, int flip,
                                                              const float *const t[3], float *const o[3])
{
    int64_t x = 0;
    int nt = (((uintptr_t)o[0] | (uintptr_t)o[1] | (uintptr_t)o[2]) & 31) == 0;
    for (; x + 16 <= w; x += 16) {
        __m128i c[3];
        load48(s + 3 * (flip ? w - 16 - x : x), c);
        for (int k = 0; k < 3; k++) {
            __m128i v = channel16(c, pick[flip][k]);
            __m256 lo = _mm256_i32gather_ps(t[k], _mm256_cvtepu8_epi32(v), 4);
            __m256 hi = _mm256_i32gather_ps(t[k], _mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), 4);
            if (nt) {
                _mm256_stream_ps(o[k] + x, lo);
                _mm256_stream_ps(o[k] + x + 8, hi);
            } else {
                _mm256_storeu_ps(o[k] + x, lo);
                _mm256_storeu_ps(o[k] + x + 8, hi);
            }
        }
    }
    return x;
}

__attribute__((target("avx2"))) static int64_t rows3_u8_avx2(const uint8_t *s, int64_t w, int flip,
                                                             uint8_t *const o[3])
{
    int64_t x = 0;
    int nt = (((uintptr_t)o[0] | (uintptr_t)o[1] | (uintptr_t)o[2]) & 15) == 0;
    for (; x + 16 <= w; x += 16) {
        __m128i c[3];
        load48(s + 3 * (flip ? w - 16 - x : x), c);
        for (int k = 0; k < 3; k++) {
            __m128i v = channel16(c, pick[flip][k]);
            if (nt) _mm_stream_si128((__m128i *)(void *)(o[k] + x), v);
            else _mm_storeu_si128((__m128i *)(void *)(o[k] + x), v);
        }
    }
    return x;
}

/* NHWC: the same 16 pixels kept interleaved, reversed when flipped (rev[j][m]: byte t of output
 * piece j from source piece m, pixel 15 - (16j + t) / 3's channel (16j + t) % 3, or zero). */
#define PR_SRC(j, t) (3 * (15 - (16 * (j) + (t)) / 3) + (16 * (j) + (t)) % 3)
#define PR(j, m, t) (char)(PR_SRC(j, t) / 16 == (m) ? PR_SRC(j, t) % 16 : -128)
#define PR16(j, m)                                                                                      \
    {PR(j, m, 0),  PR(j, m, 1),  PR(j, m, 2),  PR(j, m, 3),  PR(j, m, 4),  PR(j, m, 5),  PR(j, m, 6),      \
     PR(j, m, 7),  PR(j, m, 8),  PR(j, m, 9),  PR(j, m, 10), PR(j, m, 11), PR(j, m, 12), PR(j, m, 13),     \
     PR(j, m, 14), PR(j, m, 15)}
static const char rev[3][3][16] = {{PR16(0, 0), PR16(0, 1), PR16(0, 2)},
                                   {PR16(1, 0), PR16(1, 1), PR16(1, 2)},
                                   {PR16(2, 0), PR16(2, 1), PR16(2, 2)}};

/* The 48 bytes of 16 pixels at s in output order: as they are, or the pixels reversed. */
__attribute__((target("avx2"))) static inline void pixels16(const uint8_t *s, int flip, __m128i out[3])
{
    __m128i c[3];
    load48(s, c);
    for (int j = 0; j < 3; j++) out[j] = flip ? channel16(c, rev[j]) : c[j];
}

/* Columns [0, return) of one NHWC output row of floats: each byte's entry gathered from the table
 * of its channel (v[k][px] at 256k + px of the table's floats; value i of a row is channel i mod
 * 3, so eight values take one of three offset patterns). */
__attribute__((target("avx2"))) static int64_t rows3_hwc_f32_avx2(const uint8_t *s, int64_t w, int flip,
                                                                  const float *t, float *o)
{
    const __m256i off[3] = {_mm256_setr_epi32(0, 256, 512, 0, 256, 512, 0, 256),
                            _mm256_setr_epi32(512, 0, 256, 512, 0, 256, 512, 0),
                            _mm256_setr_epi32(256, 512, 0, 256, 512, 0, 256, 512)};
    int nt = ((uintptr_t)o & 31) == 0;
    int64_t x = 0;
    for (; x + 16 <= w; x += 16) {
        __m128i px[3];
        pixels16(s + 3 * (flip ? w - 16 - x : x), flip, px);
        float *d = o + 3 * x;
        for (int g = 0; g < 6; g++) {
            __m128i b = g & 1 ? _mm_srli_si128(px[g / 2], 8) : px[g / 2];
            __m256 v = _mm256_i32gather_ps(t, _mm256_add_epi32(_mm256_cvtepu8_epi32(b), off[g % 3]), 4);
            if (nt) _mm256_stream_ps(d + 8 * g, v);
            else _mm256_storeu_ps(d + 8 * g, v);
        }
    }
    return x;
}

/* Columns [0, return) of one flipped NHWC output row of bytes. */
__attribute__((target("avx2"))) static int64_t rows3_hwc_u8_flip_avx2(const uint8_t *s, int64_t w, uint8_t *o)
{
    int64_t x = 0;
    for (; x + 16 <= w; x += 16) {
        __m128i px[3];
        pixels16(s + 3 * (w - 16 - x), 1, px);
        for (int j = 0; j < 3; j++) _mm_storeu_si128((__m128i *)(void *)(o + 3 * x + 16 * j), px[j]);
    }
    return x;
}

static void rows_fence(void)
{
    _mm_sfence();   /* the streamed stores before the batch is handed on */
}
#else
/* Without AVX2 in the compiler: no columns done ahead of the scalar loops. */
static int rows_avx2(void)
{
    return 0;
}
static int64_t rows3_f32_avx2(const uint8_t *s, int64_t w, int flip, const float *const t[3], float *const o[3])
{
    return 0;
}
static int64_t rows3_u8_avx2(const uint8_t *s, int64_t w, int flip, uint8_t *const o[3])
{
    return 0;
}
static int64_t rows3_hwc_f32_avx2(const uint8_t *s, int64_t w, int flip, const float *t, float *o)
{
    return 0;
}
static int64_t rows3_hwc_u8_flip_avx2(const uint8_t *s, int64_t w, uint8_t *o)
{
    return 0;
}
static void rows_fence(void)
{
}
#endif

void img_augment_apply_lut(const baton_image *im, const baton_augment *a, const img_norm_lut *lut,
                           baton_layout layout, float *dst)
{
    int64_t h = im->h, w = im->w, c = im->c;
    if (layout == BATON_LAYOUT_NCHW && c == 3 && a->dy == 0 && a->dx == 0) {
        /* the crops' case (no shift): each source row read once, into the three planes */
        const float *t0 = lut->v[0], *t1 = lut->v[1], *t2 = lut->v[2];
        size_t plane = (size_t)(h * w);
        int simd = rows_avx2();
        const float *const t[3] = {t0, t1, t2};
        for (int64_t y = 0; y < h; y++) {
            const uint8_t *s = im->px + y * w * 3;
            float *r = dst + y * w, *g = r + plane, *b = g + plane;
            int64_t x = simd ? rows3_f32_avx2(s, w, a->flip, t, (float *const[3]){r, g, b}) : 0;
            if (a->flip)
                for (; x < w; x++) {
                    const uint8_t *p = s + (w - 1 - x) * 3;
                    r[x] = t0[p[0]], g[x] = t1[p[1]], b[x] = t2[p[2]];
                }
            else
                for (const uint8_t *p = s + 3 * x; x < w; x++, p += 3) r[x] = t0[p[0]], g[x] = t1[p[1]], b[x] = t2[p[2]];
        }
        if (simd) rows_fence();
        return;
    }
    if (layout == BATON_LAYOUT_NHWC && c == 3 && a->dy == 0 && a->dx == 0) {
        /* the crops' case in NHWC: whole pixels, in order or reversed */
        int simd = rows_avx2();
        for (int64_t y = 0; y < h; y++) {
            const uint8_t *s = im->px + y * w * 3;
            float *row = dst + y * w * 3;
            int64_t x = simd ? rows3_hwc_f32_avx2(s, w, a->flip, &lut->v[0][0], row) : 0;
            for (; x < w; x++) {
                const uint8_t *p = s + (a->flip ? w - 1 - x : x) * 3;
                row[3 * x] = lut->v[0][p[0]], row[3 * x + 1] = lut->v[1][p[1]], row[3 * x + 2] = lut->v[2][p[2]];
            }
        }
        if (simd) rows_fence();
        return;
    }
    if (layout == BATON_LAYOUT_NCHW || c == 1) {
        for (int64_t k = 0; k < c; k++) {
            const float *t = lut->v[k];
            float *plane = dst + k * h * w;
            for (int64_t y = 0; y < h; y++) {
                int64_t sy = y + a->dy;
                if (sy < 0 || sy >= h) fill(plane + y * w, (size_t)w, t[0]);
                else row_plane(im->px + sy * w * c + k, w, c, a->dx, a->flip, t, plane + y * w);
            }
        }
        return;
    }
    /* NHWC with several channels: whole pixels */
    float zero[IMG_NORM_MAX_C];
    for (int64_t k = 0; k < c; k++) zero[k] = lut->v[k][0];
    for (int64_t y = 0; y < h; y++) {
        float *row = dst + y * w * c;
        int64_t sy = y + a->dy, x0 = 0, x1 = 0;
        if (sy >= 0 && sy < h) valid_span(w, a->dx, a->flip, &x0, &x1);
        for (int64_t x = 0; x < x0; x++)
            for (int64_t k = 0; k < c; k++) row[x * c + k] = zero[k];
        if (x1 > x0) {
            const uint8_t *s = im->px + sy * w * c;
            int64_t dx = a->dx;
            if (c == 3) {
                const float *t0 = lut->v[0], *t1 = lut->v[1], *t2 = lut->v[2];
                for (int64_t x = x0; x < x1; x++) {
                    const uint8_t *p = s + ((a->flip ? w - 1 - x : x) + dx) * 3;
                    float *o = row + x * 3;
                    o[0] = t0[p[0]];
                    o[1] = t1[p[1]];
                    o[2] = t2[p[2]];
                }
            } else {
                for (int64_t x = x0; x < x1; x++) {
                    const uint8_t *p = s + ((a->flip ? w - 1 - x : x) + dx) * c;
                    for (int64_t k = 0; k < c; k++) row[x * c + k] = lut->v[k][p[k]];
                }
            }
        }
        for (int64_t x = x1 > x0 ? x1 : x0; x < w; x++)
            for (int64_t k = 0; k < c; k++) row[x * c + k] = zero[k];
    }
}

void img_augment_apply(const baton_image *im, const baton_augment *a, const float *mean,
                         const float *std, baton_layout layout, float *dst)
{
    if (im->c > IMG_NORM_MAX_C) {
        img_augment_apply_ref(im, a, mean, std, layout, dst);
        return;
    }
    img_norm_lut lut;
    img_norm_lut_init(&lut, im->c, mean, std);
    img_augment_apply_lut(im, a, &lut, layout, dst);
}

/* ---------------------------------------------------------------- uint8 (no normalisation) */

void img_augment_apply_u8(const baton_image *im, const baton_augment *a, baton_layout layout, uint8_t *dst)
{
    int64_t h = im->h, w = im->w;
    if (layout == BATON_LAYOUT_NCHW && im->c == 3 && a->dy == 0 && a->dx == 0) {
        /* the crops' case, as img_augment_apply_lut's: each source row read once, into the planes */
        size_t plane = (size_t)(h * w);
        int simd = rows_avx2();
        for (int64_t y = 0; y < h; y++) {
            const uint8_t *s = im->px + y * w * 3;
            uint8_t *r = dst + y * w, *g = r + plane, *b = g + plane;
            int64_t x = simd ? rows3_u8_avx2(s, w, a->flip, (uint8_t *const[3]){r, g, b}) : 0;
            for (; x < w; x++) {
                const uint8_t *p = s + (a->flip ? w - 1 - x : x) * 3;
                r[x] = p[0], g[x] = p[1], b[x] = p[2];
            }
        }
        if (simd) rows_fence();
        return;
    }
    if (layout == BATON_LAYOUT_NHWC && im->c == 3 && a->dy == 0 && a->dx == 0) {
        if (!a->flip) {
            memcpy(dst, im->px, (size_t)(h * w) * 3);
            return;
        }
        int simd = rows_avx2();
        for (int64_t y = 0; y < h; y++) {
            const uint8_t *s = im->px + y * w * 3;
            uint8_t *row = dst + y * w * 3;
            int64_t x = simd ? rows3_hwc_u8_flip_avx2(s, w, row) : 0;
            for (; x < w; x++) memcpy(row + 3 * x, s + (w - 1 - x) * 3, 3);
        }
        return;
    }
    img_augment_apply_u8_ref(im, a, layout, dst);
}

void img_augment_apply_u8_ref(const baton_image *im, const baton_augment *a, baton_layout layout, uint8_t *dst)
{
    int64_t h = im->h, w = im->w, c = im->c;
    for (int64_t y = 0; y < h; y++) {
        int64_t sy = y + a->dy;
        for (int64_t x = 0; x < w; x++) {
            int64_t sx = (a->flip ? w - 1 - x : x) + a->dx;
            int inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
            const uint8_t *p = inside ? im->px + (sy * w + sx) * c : NULL;
            for (int64_t k = 0; k < c; k++) {
                uint8_t v = p ? p[k] : 0;
                if (layout == BATON_LAYOUT_NHWC) dst[(y * w + x) * c + k] = v;
                else dst[(k * h + y) * w + x] = v;
            }
        }
    }
}
