/* kern_conv_fast.c — direct 3x3 stride-1 "same" convolution on 16-channel blocks, AVX-512: the
 * oneDNN table's forward convolution (with or without bias, with or without the ReLU after it;
 * optionally taking the batch-norm statistics of its output as it writes it) and, with flipped
 * weights, its backward-data, for resnet's 16- and 32-channel stages.
 *
 * Contract: x [n][ic/16][h][w][16] (the table's blocked layout), y [n][oc/16][h][w][16], both
 * channel counts multiples of 16; the weights packed by nn_fast_conv3_pack into
 * [oc/16][ic/16][kh][kw][ic%16][oc%16] (from OIHW, or from the flipped and transposed weights of a
 * backward-data). nn_fast_conv3_usable says whether a geometry runs here: 3x3, stride 1, padding 1,
 * channels multiples of 16 up to FAST_CONV_MAX_C (above that oneDNN's Winograd kernels are clearly
 * faster), and a CPU with AVX-512F (checked once; BATON_FASTCONV=0 turns this path off) — for any
 * batch size. nn_fast_conv3_bn_ok is the predicate of the statistics-taking forward (the kernel
 * table's conv_bn_stats_ok).
 *
 * Why our own: speed alone would not justify it — in a resnet20 training step it is about as fast
 * as oneDNN 2.6 (its direct kernel at 16 channels, its Winograd at 32; forward within noise,
 * backward-data at 16 channels ≈ 9 % faster; bench/RESULTS.md §4g). What oneDNN cannot do is hand
 * over the accumulators before they are stored: nn_fast_conv3_bn_fwd sums each output tile about a
 * shift while it is still in registers, so the batch norm after the convolution never reads its
 * input for statistics (one pass over the activations less per batch norm).
 *
 * The kernel: an output row is cut into tiles of at most 16 pixels (8 when two output channel
 * blocks share a tile); a tile's sixteen output channels of each pixel live in one register. For
 * each input channel, the three weight vectors of a kernel row (kw = 0, 1, 2) are loaded once per
 * block and each input pixel of the row is broadcast once and multiplied into the up to three
 * outputs it touches (of each block). Padding is handled by skipping the taps that fall outside the
 * row (left / right edge tiles) and the rows outside the image. Summation order for an output:
 * input channel block, kernel row, input channel, kernel column — fixed, independent of tiling and
 * thread count, so results are bit-reproducible. The plain C reference (kern_conv.c's
 * nn_ref_conv_fwd) is what test_nn_dnnl compares it with.
 *
 * Threads: an OpenMP loop over (image, group of output channel blocks, output row), static
 * schedule; each row's statistics go to their own slot and are added in row order. */
#include "nn_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FAST_CONV_MAX_C 32
#define TILE_MAX 16

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_FAST_CONV 1
#define TGT __attribute__((target("avx512f,fma")))

/* st[0..16) += s1, st[16..32) += s2, lane by lane in double */
static inline TGT void stats_add(double *st, __m512 s1, __m512 s2)
{
    const __m512 v[2] = {s1, s2};
    for (int k = 0; k < 2; k++) {
        const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v[k]));
        const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v[k]), 1)));
        _mm512_storeu_pd(st + 16 * k, _mm512_add_pd(_mm512_loadu_pd(st + 16 * k), lo));
        _mm512_storeu_pd(st + 16 * k + 8, _mm512_add_pd(_mm512_loadu_pd(st + 16 * k + 8), hi));
    }
}

/* one tile of T output pixels (at ow0) of one output row, for P consecutive output channel blocks
 * (weights wstride floats apart, outputs ostride apart); left / right: the tile touches the image's
 * left / right edge (the tap outside is padding). P x T accumulators, 3 P weight vectors and the
 * broadcast input stay in the 32 vector registers. */
#define DEF_TILE(T, P)                                                                                       \
    static TGT void tile##T##_##P(const float *x, int icbs, int h, int w, int oh, int ow0, const float *wp, \
                                  size_t wstride, const float *bias, int relu, int left, int right, float *o, \
                                  size_t ostride, const float *shift, double *st)                          \
    {                                                                                                       \
        __m512 acc[P][T];                                                                                   \
        _Pragma("GCC unroll 2") for (int q = 0; q < P; q++) {                                               \
            const __m512 b0 = bias ? _mm512_loadu_ps(bias + q * 16) : _mm512_setzero_ps();                  \
            for (int t = 0; t < T; t++) acc[q][t] = b0;                                                     \
        }                                                                                                   \
        for (int cb = 0; cb < icbs; cb++)                                                                   \
            for (int kh = 0; kh < 3; kh++) {                                                                \
                const int ih = oh + kh - 1;                                                                 \
                if (ih < 0 || ih >= h) continue;                                                            \
                const float *r = x + (((size_t)cb * h + ih) * w + ow0) * 16;                                \
                const float *wk = wp + (size_t)(cb * 9 + kh * 3) * 256;                                     \
                for (int ic = 0; ic < 16; ic++) {                                                           \
                    __m512 w0[P], w1[P], w2[P];                                                             \
                    _Pragma("GCC unroll 2") for (int q = 0; q < P; q++) {                                   \
                        w0[q] = _mm512_loadu_ps(wk + q * wstride + ic * 16);                                \
                        w1[q] = _mm512_loadu_ps(wk + q * wstride + 256 + ic * 16);                          \
                        w2[q] = _mm512_loadu_ps(wk + q * wstride + 512 + ic * 16);                          \
                    }                                                                                       \
                    _Pragma("GCC unroll 18") for (int j = -1; j <= T; j++)                                  \
                    {                                                                                       \
                        if ((j == -1 && left) || (j == T && right)) continue;                               \
                        const __m512 v = _mm512_set1_ps(r[j * 16 + ic]);                                    \
                        _Pragma("GCC unroll 2") for (int q = 0; q < P; q++) {                               \
                            if (j + 1 >= 0 && j + 1 < T) acc[q][j + 1] = _mm512_fmadd_ps(v, w0[q], acc[q][j + 1]); \
                            if (j >= 0 && j < T) acc[q][j] = _mm512_fmadd_ps(v, w1[q], acc[q][j]);          \
                            if (j - 1 >= 0 && j - 1 < T) acc[q][j - 1] = _mm512_fmadd_ps(v, w2[q], acc[q][j - 1]); \
                        }                                                                                   \
                    }                                                                                       \
                }                                                                                           \
            }                                                                                               \
        const __m512 z = _mm512_setzero_ps();                                                               \
        _Pragma("GCC unroll 2") for (int q = 0; q < P; q++)                                                 \
            for (int t = 0; t < T; t++) /* max(acc, 0) is 0 for a NaN acc, as the reference ReLU */        \
                _mm512_storeu_ps(o + q * ostride + (size_t)t * 16, relu ? _mm512_max_ps(acc[q][t], z) : acc[q][t]); \
        if (st)                                                                                             \
            for (int q = 0; q < P; q++) {                                                                   \
                const __m512 sh = _mm512_loadu_ps(shift + q * 16);                                          \
                __m512 s1 = z, s2 = z;                                                                      \
                for (int t = 0; t < T; t++) {                                                               \
                    const __m512 d = _mm512_sub_ps(acc[q][t], sh);                                          \
                    s1 = _mm512_add_ps(s1, d);                                                              \
                    s2 = _mm512_fmadd_ps(d, d, s2);                                                         \
                }                                                                                           \
                stats_add(st + q * 32, s1, s2);                                                             \
            }                                                                                               \
    }

/* one output channel block per tile, tiles of up to 16 pixels (16-channel outputs) */
DEF_TILE(1, 1)
DEF_TILE(2, 1)
DEF_TILE(3, 1)
DEF_TILE(4, 1)
DEF_TILE(5, 1)
DEF_TILE(6, 1)
DEF_TILE(7, 1)
DEF_TILE(8, 1)
DEF_TILE(9, 1)
DEF_TILE(10, 1)
DEF_TILE(11, 1)
DEF_TILE(12, 1)
DEF_TILE(13, 1)
DEF_TILE(14, 1)
DEF_TILE(15, 1)
DEF_TILE(16, 1)
/* two output channel blocks per tile, tiles of up to 8 pixels (32 channels: each input value
 * broadcast feeds both blocks — 12-18 % faster than one block per tile, min of 40 calls) */
DEF_TILE(1, 2)
DEF_TILE(2, 2)
DEF_TILE(3, 2)
DEF_TILE(4, 2)
DEF_TILE(5, 2)
DEF_TILE(6, 2)
DEF_TILE(7, 2)
DEF_TILE(8, 2)

typedef void (*tile_fn)(const float *, int, int, int, int, int, const float *, size_t, const float *, int, int, int,
                        float *, size_t, const float *, double *);
#define TILE2_MAX 8
static const tile_fn tiles1[TILE_MAX + 1] = {
    NULL,      tile1_1,  tile2_1,  tile3_1,  tile4_1,  tile5_1,  tile6_1,  tile7_1,  tile8_1,
    tile9_1,   tile10_1, tile11_1, tile12_1, tile13_1, tile14_1, tile15_1, tile16_1,
};
static const tile_fn tiles2[TILE2_MAX + 1] = {
    NULL, tile1_2, tile2_2, tile3_2, tile4_2, tile5_2, tile6_2, tile7_2, tile8_2,
};

static int cpu_ok(void)
{
    static int ok = -1;
    if (ok < 0) {
        const char *e = getenv("BATON_FASTCONV");
        __builtin_cpu_init();
        ok = !(e && strcmp(e, "0") == 0) && __builtin_cpu_supports("avx512f");
    }
    return ok;
}
#else
#define HAVE_FAST_CONV 0
static int cpu_ok(void) { return 0; }
#endif

int nn_fast_conv3_usable(const baton_nn_conv_geom *g)
{
    return g->kh == 3 && g->kw == 3 && g->stride == 1 && g->pad == 1 && g->ic % NN_BLOCK == 0 &&
           g->oc % NN_BLOCK == 0 && g->ic <= FAST_CONV_MAX_C && g->oc <= FAST_CONV_MAX_C && g->ih == g->oh &&
           g->iw == g->ow && g->iw >= 1 && g->ih >= 1 && cpu_ok();
}

/* wp[ocb][icb][a][b][i%16][o%16] = w[o][i][a][b] (flip = 0), or for a backward-data run as a forward
 * convolution of dy (flip = 1): the forward weights of that convolution, w'[i][o][a][b] =
 * w[o][i][2-a][2-b] (its input channels are g->oc, its outputs g->ic) */
void nn_fast_conv3_pack(const baton_nn_conv_geom *g, const float *w, int flip, float *wp)
{
    const int co = flip ? g->ic : g->oc, ci = flip ? g->oc : g->ic, cib = ci / NN_BLOCK;
    for (int o = 0; o < co; o++)
        for (int i = 0; i < ci; i++)
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    const float v = flip ? w[(((size_t)i * g->ic + o) * 3 + (2 - a)) * 3 + (2 - b)]
                                         : w[(((size_t)o * g->ic + i) * 3 + a) * 3 + b];
                    wp[((((size_t)(o / NN_BLOCK) * cib + i / NN_BLOCK) * 3 + a) * 3 + b) * 256 +
                       (i % NN_BLOCK) * NN_BLOCK + o % NN_BLOCK] = v;
                }
}

/* one output row (all its tiles) of image xi, for P (1 or 2) output channel blocks from wo / bo;
 * st not NULL: the row's sums of (y - shift) and (y - shift)^2 added to st[P][32] */
static void conv_row(int P, int icbs, int h, int w, int oh, const float *xi, const float *wo, const float *bo,
                     int relu, float *o, const float *shift, double *st)
{
#if HAVE_FAST_CONV
    const int tmax = P == 2 ? TILE2_MAX : TILE_MAX;
    const int nt = (w + tmax - 1) / tmax, tw = (w + nt - 1) / nt;   /* tiles of tw, the last shorter */
    const size_t wstride = (size_t)icbs * 9 * 256, ostride = (size_t)h * w * NN_BLOCK;
    for (int ow0 = 0; ow0 < w; ow0 += tw) {
        const int len = w - ow0 < tw ? w - ow0 : tw;
        (P == 2 ? tiles2 : tiles1)[len](xi, icbs, h, w, oh, ow0, wo, wstride, bo, relu, ow0 == 0, ow0 + len == w,
                                        o + (size_t)ow0 * NN_BLOCK, ostride, shift, st);
    }
#else
    (void)P, (void)icbs, (void)h, (void)w, (void)oh, (void)xi, (void)wo, (void)bo, (void)relu, (void)o, (void)shift,
        (void)st;
#endif
}

/* y = conv(x) (+ bias) (then max(0, .) when relu) for a usable geometry g, with c_in input and
 * c_out output channels (g's, or swapped for a backward-data) and weights packed for them. Work
 * units are (image, group of P output channel blocks, row). sums not NULL: each row's sums of
 * (y - shift) and (y - shift)^2 per channel go to sums[img][row][c_out/16][32] (16 lanes of each,
 * in double), added tile by tile in a fixed order. */
void nn_fast_conv3_run(int n, int c_in, int c_out, int h, int w, const float *x, const float *wp, const float *bias,
                       int relu, float *y, const float *shift, double *sums)
{
    const int icbs = c_in / NN_BLOCK, ocbs = c_out / NN_BLOCK, P = ocbs % 2 == 0 ? 2 : 1, groups = ocbs / P;
    const size_t plane = (size_t)h * w * NN_BLOCK, wblk = (size_t)icbs * 9 * 256;
    const long rows = (long)n * groups * h;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        const int img = (int)(r / ((long)groups * h)), ob = (int)(r / h % groups) * P, oh = (int)(r % h);
        double *st = sums ? sums + (((size_t)img * h + oh) * ocbs + ob) * 32 : NULL;
        if (st) memset(st, 0, sizeof(double) * 32 * (size_t)P);
        conv_row(P, icbs, h, w, oh, x + (size_t)img * icbs * plane, wp + ob * wblk, bias ? bias + ob * NN_BLOCK : NULL,
                 relu, y + ((size_t)img * ocbs + ob) * plane + (size_t)oh * w * NN_BLOCK,
                 shift ? shift + ob * NN_BLOCK : NULL, st);
    }
}

/* The rows' sums for nn_fast_conv3_bn_fwd: grown (only) when a larger batch comes, reserved for a
 * model's largest batch by nn_fast_conv3_bn_ok; calls are serialised by its lock. */
static struct {
    pthread_mutex_t lk;
    double *buf;
    size_t cap;
} stats_buf = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* Under the lock: room for the sums of a batch of g->n images. */
static int stats_reserve(const baton_nn_conv_geom *g)
{
    const size_t need = (size_t)g->n * g->oh * (g->oc / NN_BLOCK) * 32;
    if (need <= stats_buf.cap) return 1;
    double *nb = realloc(stats_buf.buf, need * sizeof(double));
    if (!nb) return 0;
    stats_buf.buf = nb;
    stats_buf.cap = need;
    return 1;
}

/* The predicate of nn_fast_conv3_bn_fwd: a geometry the direct kernel and the blocked batch norm
 * take, with the sums' room reserved for batches of up to g->n images, so that no call with such a
 * batch declines (the buffer never shrinks). */
int nn_fast_conv3_bn_ok(const baton_nn_conv_geom *g)
{
    if (g->n < 1 || !nn_fast_conv3_usable(g) || !nn_fast_bn_stats_ok(g->oc, g->oh * g->ow)) return 0;
    pthread_mutex_lock(&stats_buf.lk);
    const int ok = stats_reserve(g);
    pthread_mutex_unlock(&stats_buf.lk);
    return ok;
}

/* y = conv(x) (+ bias) for a usable geometry, and the batch mean and biased variance of y per output
 * channel, from sums of (y - shift) and (y - shift)^2 taken from the accumulators before they are
 * stored (float within a tile of up to 16 pixels, double from there on; rows added in order):
 * with shift near the mean (the running mean) no cancellation. Equal to bn_fwd_train's statistics
 * within rounding, not bit for bit; the same for any thread count. 0: not done (geometry that the
 * kernel or the blocked batch norm does not take, or out of memory for a batch larger than
 * nn_fast_conv3_bn_ok reserved for), nothing written. */
int nn_fast_conv3_bn_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *bias,
                         const float *shift, float *y, float *mean, float *var)
{
    const int hw = g->oh * g->ow, ocbs = g->oc / NN_BLOCK;
    if (!nn_fast_conv3_usable(g) || !nn_fast_bn_stats_ok(g->oc, hw)) return 0;
    float wp[NN_FAST_CONV_PACK_MAX];
    pthread_mutex_lock(&stats_buf.lk);
    if (!stats_reserve(g)) {   /* a larger batch than nn_fast_conv3_bn_ok reserved for */
        pthread_mutex_unlock(&stats_buf.lk);
        return 0;
    }
    nn_fast_conv3_pack(g, w, 0, wp);
    nn_fast_conv3_run(g->n, g->ic, g->oc, g->oh, g->ow, x, wp, bias, 0, y, shift, stats_buf.buf);
    double s1[FAST_CONV_MAX_C] = {0}, s2[FAST_CONV_MAX_C] = {0};
    for (size_t row = 0; row < (size_t)g->n * g->oh; row++)   /* images and rows in order */
        for (int cb = 0; cb < ocbs; cb++) {
            const double *st = stats_buf.buf + (row * ocbs + cb) * 32;
            for (int l = 0; l < NN_BLOCK; l++) {
                s1[cb * NN_BLOCK + l] += st[l];
                s2[cb * NN_BLOCK + l] += st[NN_BLOCK + l];
            }
        }
    const double count = (double)g->n * hw;
    for (int c = 0; c < g->oc; c++) {
        const double m = s1[c] / count;
        double v = s2[c] / count - m * m;
        if (v < 0.0) v = 0.0;
        mean[c] = (float)(shift[c] + m);
        var[c] = (float)v;
    }
    pthread_mutex_unlock(&stats_buf.lk);
    return 1;
}
