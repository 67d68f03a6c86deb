/* kern_conv_fast.c — direct 3x3 stride-1 "same" convolution on 16-channel blocks, AVX-512: the
 * oneDNN table's forward convolution (with or without bias, with or without the ReLU after it) and,
 * with flipped weights, its backward-data, for resnet's 16- and 32-channel stages.
 *
 * Contract: x [n][ic/16][h][w][16] (the table's blocked layout), y [n][oc/16][h][w][16], both
 * channel counts multiples of 16; the weights packed by nn_fast_conv3_pack into
 * [oc/16][ic/16][kh][kw][ic%16][oc%16] (from OIHW, or from the flipped and transposed weights of a
 * backward-data). nn_fast_conv3_usable says whether a geometry runs here: 3x3, stride 1, padding 1,
 * channels multiples of 16 up to FAST_CONV_MAX_C (above that oneDNN's Winograd kernels measured
 * faster), and a CPU with AVX-512F (checked once; BATON_FASTCONV=0 turns this path off).
 *
 * Why our own: oneDNN 2.6's direct kernel for these shapes runs at 190–310 GFLOP/s on the 2-core
 * machine and its Winograd loses at 16 channels; this one measured 1.13–1.28x oneDNN's forward at
 * 16 channels and 1.12x its Winograd at 32 (min of 30 alternated calls, bench/RESULTS.md §4g),
 * ≈ 4 % of a resnet20 training step. Above 32 channels oneDNN's Winograd wins and keeps them.
 *
 * The kernel: an output row is cut into tiles of at most 16 pixels; a tile's sixteen output
 * channels of each pixel live in one register (T accumulators). For each input channel, the three
 * weight vectors of a kernel row (kw = 0, 1, 2) are loaded once and each input pixel of the row is
 * broadcast once and multiplied into the up to three outputs it touches. Padding is handled by
 * skipping the taps that fall outside the row (left / right edge tiles) and the rows outside the
 * image. Summation order for an output: input channel block, kernel row, input channel, kernel
 * column — fixed, independent of the thread count, so results are bit-reproducible. The plain C
 * reference (kern_conv.c's nn_ref_conv_fwd) is what test_nn_dnnl compares it with.
 *
 * Threads: an OpenMP loop over (image, output channel block, output row), static schedule. */
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

/* one tile of T output pixels (at ow0) of one output row and one output channel block; left /
 * right: the tile touches the image's left / right edge (the tap outside is padding) */
#define DEF_TILE(T)                                                                                          \
    static TGT void tile##T(const float *x, int icbs, int h, int w, int oh, int ow0, const float *wp,      \
                            const float *bias, int relu, int left, int right, float *o)                     \
    {                                                                                                       \
        __m512 acc[T];                                                                                      \
        const __m512 b0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();                               \
        for (int t = 0; t < T; t++) acc[t] = b0;                                                            \
        for (int cb = 0; cb < icbs; cb++)                                                                   \
            for (int kh = 0; kh < 3; kh++) {                                                                \
                const int ih = oh + kh - 1;                                                                 \
                if (ih < 0 || ih >= h) continue;                                                            \
                const float *r = x + (((size_t)cb * h + ih) * w + ow0) * 16;                                \
                const float *wk = wp + (size_t)(cb * 9 + kh * 3) * 256;                                     \
                for (int ic = 0; ic < 16; ic++) {                                                           \
                    const __m512 w0 = _mm512_loadu_ps(wk + ic * 16);                                        \
                    const __m512 w1 = _mm512_loadu_ps(wk + 256 + ic * 16);                                  \
                    const __m512 w2 = _mm512_loadu_ps(wk + 512 + ic * 16);                                  \
                    _Pragma("GCC unroll 18") for (int j = -1; j <= T; j++)                                  \
                    {                                                                                       \
                        if ((j == -1 && left) || (j == T && right)) continue;                               \
                        const __m512 v = _mm512_set1_ps(r[j * 16 + ic]);                                    \
                        if (j + 1 >= 0 && j + 1 < T) acc[j + 1] = _mm512_fmadd_ps(v, w0, acc[j + 1]);      \
                        if (j >= 0 && j < T) acc[j] = _mm512_fmadd_ps(v, w1, acc[j]);                       \
                        if (j - 1 >= 0 && j - 1 < T) acc[j - 1] = _mm512_fmadd_ps(v, w2, acc[j - 1]);      \
                    }                                                                                       \
                }                                                                                           \
            }                                                                                               \
        const __m512 z = _mm512_setzero_ps();                                                               \
        for (int t = 0; t < T; t++) /* max(acc, 0) gives 0 for a NaN acc, as the reference ReLU does */    \
            _mm512_storeu_ps(o + (size_t)t * 16, relu ? _mm512_max_ps(acc[t], z) : acc[t]);                 \
    }

DEF_TILE(1)
DEF_TILE(2)
DEF_TILE(3)
DEF_TILE(4)
DEF_TILE(5)
DEF_TILE(6)
DEF_TILE(7)
DEF_TILE(8)
DEF_TILE(9)
DEF_TILE(10)
DEF_TILE(11)
DEF_TILE(12)
DEF_TILE(13)
DEF_TILE(14)
DEF_TILE(15)
DEF_TILE(16)

typedef void (*tile_fn)(const float *, int, int, int, int, int, const float *, const float *, int, int, int,
                        float *);
static const tile_fn tiles[TILE_MAX + 1] = {
    NULL,    tile1,  tile2,  tile3,  tile4,  tile5,  tile6,  tile7,  tile8,
    tile9,   tile10, tile11, tile12, tile13, tile14, tile15, tile16,
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

/* one output row (all its tiles) of image plane xi, output channel block ob */
static void conv_row(int icbs, int h, int w, int oh, const float *xi, const float *wo, const float *bo, int relu,
                     float *o)
{
#if HAVE_FAST_CONV
    const int nt = (w + TILE_MAX - 1) / TILE_MAX, tw = (w + nt - 1) / nt;   /* tiles of tw, the last shorter */
    for (int ow0 = 0; ow0 < w; ow0 += tw) {
        const int len = w - ow0 < tw ? w - ow0 : tw;
        tiles[len](xi, icbs, h, w, oh, ow0, wo, bo, relu, ow0 == 0, ow0 + len == w, o + (size_t)ow0 * NN_BLOCK);
    }
#else
    (void)icbs, (void)h, (void)w, (void)oh, (void)xi, (void)wo, (void)bo, (void)relu, (void)o;
#endif
}

/* y = conv(x) (+ bias) (then max(0, .) when relu) for a usable geometry g, with c_in input and
 * c_out output channels (g's, or swapped for a backward-data) and weights packed for them. planes
 * not NULL: the work is cut by output plane (image, channel block) instead of by row, and each
 * plane's batch-norm partial sums go to planes[img][c_out/16][48] while it is in cache. */
void nn_fast_conv3_run(int n, int c_in, int c_out, int h, int w, const float *x, const float *wp, const float *bias,
                       int relu, float *y, double *planes)
{
    const int icbs = c_in / NN_BLOCK, ocbs = c_out / NN_BLOCK;
    const size_t plane = (size_t)h * w * NN_BLOCK, wblk = (size_t)icbs * 9 * 256;
    if (planes) {
        const long np = (long)n * ocbs;
#pragma omp parallel for schedule(static)
        for (long pl = 0; pl < np; pl++) {
            const int img = (int)(pl / ocbs), ob = (int)(pl % ocbs);
            float *o = y + (size_t)pl * plane;
            for (int oh = 0; oh < h; oh++)
                conv_row(icbs, h, w, oh, x + (size_t)img * icbs * plane, wp + ob * wblk,
                         bias ? bias + ob * NN_BLOCK : NULL, relu, o + (size_t)oh * w * NN_BLOCK);
            nn_fast_bn_plane_stats(o, h * w, planes + (size_t)pl * 48);
        }
        return;
    }
    const long rows = (long)n * ocbs * h;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        const int img = (int)(r / ((long)ocbs * h)), ob = (int)(r / h % ocbs), oh = (int)(r % h);
        conv_row(icbs, h, w, oh, x + (size_t)img * icbs * plane, wp + ob * wblk, bias ? bias + ob * NN_BLOCK : NULL,
                 relu, y + ((size_t)img * ocbs + ob) * plane + (size_t)oh * w * NN_BLOCK);
    }
}

/* The planes' partial sums of nn_fast_conv3_bn_fwd: grown (only) when a larger batch comes; calls
 * are serialised by its lock. */
static struct {
    pthread_mutex_t lk;
    double *buf;
    size_t cap;
} stats_buf = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* y = conv(x) (+ bias) for a usable geometry, and the batch mean and biased variance of y per
 * output channel — bn_fwd_train's statistics of y, bit for bit (kern_bn_fast.c adds the planes'
 * sums as it adds its own). 0: not done (geometry, or out of memory), nothing written. */
int nn_fast_conv3_bn_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *bias, float *y,
                         float *mean, float *var)
{
    if (!nn_fast_conv3_usable(g) || !nn_fast_bn_stats_ok(g->oc, g->oh * g->ow)) return 0;
    const size_t need = (size_t)g->n * (g->oc / NN_BLOCK) * 48;
    float wp[NN_FAST_CONV_PACK_MAX];
    pthread_mutex_lock(&stats_buf.lk);
    if (need > stats_buf.cap) {
        double *nb = realloc(stats_buf.buf, need * sizeof(double));
        if (!nb) {
            pthread_mutex_unlock(&stats_buf.lk);
            return 0;
        }
        stats_buf.buf = nb;
        stats_buf.cap = need;
    }
    nn_fast_conv3_pack(g, w, 0, wp);
    nn_fast_conv3_run(g->n, g->ic, g->oc, g->oh, g->ow, x, wp, bias, 0, y, stats_buf.buf);
    nn_fast_bn_stats_from_planes(g->n, g->oc, g->oh * g->ow, stats_buf.buf, mean, var);
    pthread_mutex_unlock(&stats_buf.lk);
    return 1;
}
