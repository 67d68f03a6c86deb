/* kern_bn_fast.c — the fast batch-normalisation kernels of the oneDNN table (training forward,
 * inference forward, backward) over activations [n, c, hw] in the table's layout — NCHW, or
 * blocked [n][c/16][hw][16] when c is a multiple of 16 — and the threads they run on; the _cl
 * entries are the same kernels (their items in kern_bn_cl.c, what both share in kern_bn.h) on the
 * bf16 table's channels-last layout ([n][hw][c] when c is a
 * multiple of 16: a block is sixteen adjacent channels of a pixel, c floats from the next pixel's),
 * with the same arithmetic in the same order, so the same bits for the same values. On that layout
 * x may be bfloat16 (cl | NN_CL_X16: widened as read, exactly, so the f32 kernels' bits on the widened
 * values) and y too (cl | NN_CL_Y16: the f32 result rounded to nearest even as it is stored).
 *
 * Contract: that of the kernel table (nn.h, baton_nn_kernels) and of the reference kernels in
 * kern_norm.c — the same formulas (PyTorch's: batch mean and BIASED batch variance returned and
 * used to normalise; invstd = 1 / sqrtf(var + eps) from the float var in forward and backward;
 * dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), dgamma = sum(dy * xhat),
 * dbeta = sum(dy)), equal to the reference within float rounding, not bit for bit. The running
 * statistics are the caller's (model.c).
 *
 * Arithmetic, NCHW: a channel is the n contiguous spans x[i, ch, 0 .. hw) of one image each. Sums
 * run in float vector lanes (GCC vector extensions: SSE on baseline x86-64) over at most SUM_BLOCK
 * elements, then fold into a double; the lane layout, the folding points and the final horizontal
 * sum depend only on (n, hw), never on threads. Training forward is two passes for the statistics
 * (mean, then squares about it) and one to normalise, all over one channel while it sits in cache.
 * Blocked: sixteen channels sit in the sixteen lanes of one vector; the images are cut into at
 * most 16 chunks (a function of n, c and hw only), each (channel block, chunk) item sums in float
 * lanes per image and in double across images, and the call adds the items' partials in chunk
 * order. Training forward reads the activations once for the statistics: per image plane (in
 * cache) its sum, then its squares about its own mean; the planes combine in double (Chan et al.:
 * the sum of those squares plus each plane's hw * (plane mean - mean)^2). Each pass is a parallel
 * phase.
 *
 * Threads: every item (NCHW: a channel, or for inference an [image, channel] plane; blocked: a
 * channel block and image chunk) is computed entirely by one thread, and the partial sums are added
 * in a fixed order afterwards, so results are bit-identical whatever the thread count or
 * scheduling. The items run in an OpenMP loop (the file is built with -fopenmp, as the other fast
 * kernels are): the same team of threads that runs oneDNN's primitives, sized by OMP_NUM_THREADS,
 * so the two never compete for the cores. Small tensors, calls made inside a parallel region, calls
 * in a child after fork and builds without OpenMP (the fuzzing build) run on the caller alone
 * (same results). Nothing is allocated per call (the blocked path keeps its partial sums on the
 * stack). */
#include "nn_internal.h"
#include "kern_bn.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define LANES 4      /* one SSE register: baseline x86-64, no ABI change for the vector type */
#define ACCS 4       /* independent accumulator chains per sum */
#define SUM_BLOCK 4096       /* elements summed in float lanes before folding into the double */
#define MAX_THREADS 16
#define MIN_PARALLEL 32768   /* fewer elements than this: one thread (not worth waking the team) */
#define COEF_ROWS 6
#define BLK_PART_PLAN 4096  /* the chunk plan's bound on those partials (blk_plan): a fixed number, so a
                             * call's summation order stays what it was before the stack room grew */

typedef float vf __attribute__((vector_size(LANES * sizeof(float))));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v)
{
    memcpy(p, &v, sizeof v);
}

static inline vf vset(float s)
{
    return (vf){s, s, s, s};
}

/* Lane accumulators of one sum: ACCS vectors (independent dependency chains), a scalar for span
 * tails, and the double they fold into every SUM_BLOCK elements. */
typedef struct acc {
    vf v[ACCS];
    float t;
    int pending;
    double total;
} acc;

static inline void acc_init(acc *s)
{
    for (int i = 0; i < ACCS; i++) s->v[i] = vset(0.0f);
    s->t = 0.0f;
    s->pending = 0;
    s->total = 0.0;
}

static inline void acc_fold(acc *s)
{
    vf v = (s->v[0] + s->v[1]) + (s->v[2] + s->v[3]);
    double h = 0.0;
    for (int i = 0; i < LANES; i++) h += v[i];
    s->total += h + s->t;
    for (int i = 0; i < ACCS; i++) s->v[i] = vset(0.0f);
    s->t = 0.0f;
    s->pending = 0;
}

static inline double acc_result(acc *s)
{
    acc_fold(s);
    return s->total;
}

/* Sums over one span [0, len), len <= SUM_BLOCK, into the accumulators; folds when due. */
static inline void span_sum(acc *s, const float *restrict p, int len)
{
    int k = 0;
    for (; k + ACCS * LANES <= len; k += ACCS * LANES)
        for (int a = 0; a < ACCS; a++) s->v[a] += vload(p + k + a * LANES);
    for (; k + LANES <= len; k += LANES) s->v[0] += vload(p + k);
    for (; k < len; k++) s->t += p[k];
    if ((s->pending += len) >= SUM_BLOCK) acc_fold(s);
}

/* sum (p - m)^2 */
static inline void span_sq(acc *s, const float *restrict p, int len, float m)
{
    const vf mv = vset(m);
    int k = 0;
    for (; k + ACCS * LANES <= len; k += ACCS * LANES)
        for (int a = 0; a < ACCS; a++) {
            vf d = vload(p + k + a * LANES) - mv;
            s->v[a] += d * d;
        }
    for (; k + LANES <= len; k += LANES) {
        vf d = vload(p + k) - mv;
        s->v[0] += d * d;
    }
    for (; k < len; k++) {
        float d = p[k] - m;
        s->t += d * d;
    }
    if ((s->pending += len) >= SUM_BLOCK) acc_fold(s);
}

/* sum dy and sum dy * (x - m) */
static inline void span_bwd(acc *sdy, acc *sdyx, const float *restrict x, const float *restrict dy, int len, float m)
{
    const vf mv = vset(m);
    int k = 0;
    for (; k + 2 * LANES <= len; k += 2 * LANES)
        for (int a = 0; a < 2; a++) {
            vf g = vload(dy + k + a * LANES);
            sdy->v[a] += g;
            sdyx->v[a] += g * (vload(x + k + a * LANES) - mv);
        }
    for (; k + LANES <= len; k += LANES) {
        vf g = vload(dy + k);
        sdy->v[0] += g;
        sdyx->v[0] += g * (vload(x + k) - mv);
    }
    for (; k < len; k++) {
        sdy->t += dy[k];
        sdyx->t += dy[k] * (x[k] - m);
    }
    if ((sdy->pending += len) >= SUM_BLOCK) acc_fold(sdy);
    if ((sdyx->pending += len) >= SUM_BLOCK) acc_fold(sdyx);
}

/* y = (x - m) * scale + shift */
static inline void span_affine(float *restrict y, const float *restrict x, int len, float m, float scale, float shift)
{
    const vf mv = vset(m), sv = vset(scale), bv = vset(shift);
    int k = 0;
    for (; k + LANES <= len; k += LANES) vstore(y + k, (vload(x + k) - mv) * sv + bv);
    for (; k < len; k++) y[k] = (x[k] - m) * scale + shift;
}

/* dx = k1 * (dy - mdy - (x - m) * b) */
static inline void span_dx(float *restrict dx, const float *restrict x, const float *restrict dy, int len, float m,
                           float k1, float mdy, float b)
{
    const vf mv = vset(m), kv = vset(k1), dv = vset(mdy), bv = vset(b);
    int k = 0;
    for (; k + LANES <= len; k += LANES) vstore(dx + k, kv * (vload(dy + k) - dv - (vload(x + k) - mv) * bv));
    for (; k < len; k++) dx[k] = k1 * (dy[k] - mdy - (x[k] - m) * b);
}

/* ---- one call's work ---- */


/* The spans of channel ch, cut to at most SUM_BLOCK elements: offset of piece k of image i. */
static inline size_t span_off(const bn_job *j, int i, int ch, int s)
{
    return ((size_t)i * j->c + ch) * j->hw + s;
}

static inline int span_len(const bn_job *j, int s)
{
    return j->hw - s < SUM_BLOCK ? j->hw - s : SUM_BLOCK;
}

/* the forward's scale gamma / sqrt(var + eps), written once: the fused backward recomputes the
 * forward's output from it for the ReLU mask, so both must round alike */
static inline float fwd_scale(float var, float eps, float gamma) { return 1.0f / sqrtf(var + eps) * gamma; }

static void train_channel(const bn_job *j, int ch)
{
    const double count = (double)j->n * j->hw;
    acc s;
    acc_init(&s);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->hw; k += SUM_BLOCK) span_sum(&s, j->x + span_off(j, i, ch, k), span_len(j, k));
    const double mu = acc_result(&s) / count;
    const float m = (float)mu;
    acc_init(&s);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->hw; k += SUM_BLOCK) span_sq(&s, j->x + span_off(j, i, ch, k), span_len(j, k), m);
    /* the squares were taken about the float mean m: remove the (tiny) offset m - mu */
    const double dm = (double)m - mu;
    double var = acc_result(&s) / count - dm * dm;
    if (var < 0.0) var = 0.0;
    const float v = (float)var;
    j->omean[ch] = m;
    j->ovar[ch] = v;
    const float scale = fwd_scale(v, j->eps, j->gamma[ch]), shift = j->beta[ch];
    for (int i = 0; i < j->n; i++) {
        const size_t off = span_off(j, i, ch, 0);
        span_affine(j->y + off, j->x + off, j->hw, m, scale, shift);
    }
}

static void infer_plane(const bn_job *j, int plane)
{
    const int ch = plane % j->c;
    const float scale = fwd_scale(j->var[ch], j->eps, j->gamma[ch]);
    const size_t off = (size_t)plane * j->hw;
    span_affine(j->y + off, j->x + off, j->hw, j->mean[ch], scale, j->beta[ch]);
}

static void bwd_channel(const bn_job *j, int ch)
{
    const double count = (double)j->n * j->hw;
    const float invstd = 1.0f / sqrtf(j->var[ch] + j->eps), m = j->mean[ch];
    acc sdy, sdyx;
    acc_init(&sdy);
    acc_init(&sdyx);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->hw; k += SUM_BLOCK) {
            const size_t off = span_off(j, i, ch, k);
            span_bwd(&sdy, &sdyx, j->x + off, j->dy + off, span_len(j, k), m);
        }
    const double gdy = acc_result(&sdy), gdyx = acc_result(&sdyx) * invstd;   /* sum dy, sum dy * xhat */
    j->dgamma[ch] = (float)gdyx;
    j->dbeta[ch] = (float)gdy;
    const float k1 = j->gamma[ch] * invstd;
    const float mdy = (float)(gdy / count), b = invstd * (float)(gdyx / count);
    for (int i = 0; i < j->n; i++) {
        const size_t off = span_off(j, i, ch, 0);
        span_dx(j->dx + off, j->x + off, j->dy + off, j->hw, m, k1, mdy, b);
    }
}

/* ---- blocked activations: [n][c/16][hw][16], sixteen channels in the lanes of one vector ----
 * An item is (channel block cb, image chunk ch). Sums of one item run in 16-lane float vectors over
 * one image's plane at a time (hw elements per lane, folded into double lanes after each image);
 * the caller adds the items' double partials in chunk order. The cut into chunks depends only on
 * (n, c, hw), so results do not depend on threads. */


static inline const float *blk_plane(const bn_job *j, const float *base, int img, int cb)
{
    return base + ((size_t)img * (j->c / 16) + cb) * (size_t)j->hw * 16;
}

/* Built twice, for AVX-512 and for baseline x86-64; the loader picks one for the CPU it runs on
 * (GCC's target_clones, an ifunc). With AVX-512 a v16 is one register instead of four SSE ones:
 * the blocked batch norm phases took ~40 % less time in resnet20 (train_speed --profile). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void blk_item(const bn_job *j, int item)
{
    const int cb = item / j->chunks, ch = item % j->chunks;
    const int i0 = ch * j->per_chunk, i1 = i0 + j->per_chunk < j->n ? i0 + j->per_chunk : j->n;
    double *part = j->part + (size_t)item * PART_STRIDE;
    const float *cf = j->coef + (size_t)cb * 16;   /* coef rows: [4][c] */
    const size_t C = (size_t)j->c;
    const v16 m = v16from(cf), k1 = v16from(cf + C), k2 = v16from(cf + 2 * C), k3 = v16from(cf + 3 * C);
    const v16 f1 = v16from(cf + 4 * C), f2 = v16from(cf + 5 * C);
    double d0[16] = {0}, d1[16] = {0}, d2[16] = {0};
    for (int i = i0; i < i1; i++) {
        const float *x = blk_plane(j, j->x, i, cb);
        v16 a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
        int p = 0;
        switch (j->kind) {
        case JOB_B_STATS: {    /* the plane's sum, then squares about its mean while it is in cache */
            for (; p + 2 <= j->hw; p += 2) a0 += v16load(x + (size_t)p * 16), a1 += v16load(x + (size_t)p * 16 + 16);
            for (; p < j->hw; p++) a0 += v16load(x + (size_t)p * 16);
            const v16 sa = a0 + a1;
            double mu[16];
            v16 mf;
            for (int l = 0; l < 16; l++) {
                mu[l] = (double)sa[l] / j->hw;
                mf[l] = (float)mu[l];
            }
            for (p = 0; p + 2 <= j->hw; p += 2) {
                const v16 u = v16load(x + (size_t)p * 16) - mf, w = v16load(x + (size_t)p * 16 + 16) - mf;
                b0 += u * u;
                b1 += w * w;
            }
            for (; p < j->hw; p++) {
                const v16 u = v16load(x + (size_t)p * 16) - mf;
                b0 += u * u;
            }
            const v16 sb = b0 + b1;
            for (int l = 0; l < 16; l++) {   /* squares about the float mean, less its offset from mu */
                const double dm = (double)mf[l] - mu[l];
                d0[l] += sa[l];
                d1[l] += (double)sb[l] - j->hw * dm * dm;
                d2[l] += sa[l] * mu[l];
            }
            continue;
        }
        case JOB_B_AFFINE: {   /* y = (x - m) * scale + shift, with the ReLU: max(0, that [+ res]) */
            float *y = (float *)blk_plane(j, j->y, i, cb);
            if (j->res) {   /* the bn output rounded to float, then the add, as bn + add_relu do */
                const float *r = blk_plane(j, j->res, i, cb);
                for (; p < j->hw; p++) {
                    const v16 b = (v16load(x + (size_t)p * 16) - m) * k1 + k2;
                    v16store(y + (size_t)p * 16, v16relu(b + v16load(r + (size_t)p * 16)));
                }
            } else if (j->relu)
                for (; p < j->hw; p++)
                    v16store(y + (size_t)p * 16, v16relu((v16load(x + (size_t)p * 16) - m) * k1 + k2));
            else
                for (; p < j->hw; p++) v16store(y + (size_t)p * 16, (v16load(x + (size_t)p * 16) - m) * k1 + k2);
            continue;
        }
        case JOB_B_BSUM: {     /* sum dy, sum dy * (x - m); dy masked where the fused ReLU's output > 0 */
            const float *dy = blk_plane(j, j->dy, i, cb);
            const float *yo = j->g ? blk_plane(j, j->yo, i, cb) : NULL;
            const float *dy2 = j->g && j->dy2 ? blk_plane(j, j->dy2, i, cb) : NULL;
            float *go = j->g ? (float *)blk_plane(j, j->g, i, cb) : NULL;
            for (; p < j->hw; p++) {
                v16 g = v16load(dy + (size_t)p * 16);
                if (j->relu) g = v16mask(g, (v16load(x + (size_t)p * 16) - m) * f1 + f2);
                if (go) {   /* as relu_bwd_add (or relu_bwd) would give it, then the sums over it */
                    if (dy2) g += v16load(dy2 + (size_t)p * 16);
                    g = v16mask(g, v16load(yo + (size_t)p * 16));
                    v16store(go + (size_t)p * 16, g);
                }
                if (p & 1) {
                    a1 += g;
                    b1 += g * (v16load(x + (size_t)p * 16) - m);
                } else {
                    a0 += g;
                    b0 += g * (v16load(x + (size_t)p * 16) - m);
                }
            }
            break;
        }
        default: {             /* JOB_B_DX: dx = k1 * (dy - mdy - (x - m) * b) */
            const float *dy = blk_plane(j, j->dy, i, cb);
            float *dx = (float *)blk_plane(j, j->dx, i, cb);
            if (j->relu) {
                for (; p < j->hw; p++) {
                    const v16 xm = v16load(x + (size_t)p * 16) - m;
                    const v16 g = v16mask(v16load(dy + (size_t)p * 16), xm * f1 + f2);
                    v16store(dx + (size_t)p * 16, k1 * (g - k2 - xm * k3));
                }
            } else {
                for (; p < j->hw; p++)
                    v16store(dx + (size_t)p * 16,
                             k1 * (v16load(dy + (size_t)p * 16) - k2 - (v16load(x + (size_t)p * 16) - m) * k3));
            }
            continue;
        }
        }
        const v16 sa = a0 + a1, sb = b0 + b1;
        for (int l = 0; l < 16; l++) d0[l] += sa[l], d1[l] += sb[l];
    }
    memcpy(part, d0, sizeof d0);
    memcpy(part + 16, d1, sizeof d1);
    memcpy(part + 32, d2, sizeof d2);
}

static void run_item(const bn_job *j, int it)
{
    switch (j->kind) {
    case JOB_TRAIN: train_channel(j, it); break;
    case JOB_INFER: infer_plane(j, it); break;
    case JOB_BWD: bwd_channel(j, it); break;
    default:
        if (j->cl) nn_bn_cl_item(j, it);
        else blk_item(j, it);
        break;
    }
}

/* ---- threads ---- */

/* The team for one call: OMP_NUM_THREADS capped at MAX_THREADS (taken on the first call), or 1
 * without OpenMP, inside a parallel region already, or in a child after fork (the team belongs to
 * the parent process). */
static struct {
    pthread_once_t once;
    pid_t pid;
    int size;
} T = {.once = PTHREAD_ONCE_INIT, .size = 1};

static void team_init(void)
{
    T.pid = getpid();
#ifdef _OPENMP
    const int t = omp_get_max_threads();
    T.size = t < 1 ? 1 : t > MAX_THREADS ? MAX_THREADS : t;
#endif
}

static int team_size(void)
{
    pthread_once(&T.once, team_init);
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#endif
    return getpid() == T.pid ? T.size : 1;
}

/* Every item of the call, in an OpenMP loop over oneDNN's team (its threads just ran the convolution
 * and spin a while waiting for more, so the work goes to them): a few chunks of items per thread,
 * taken dynamically, so a thread that gets its CPU late (the machine's other threads) takes fewer
 * instead of holding the call up. Which thread computes an item changes nothing in it. */
static void run(bn_job *j)
{
    const size_t total = (size_t)j->n * j->c * j->hw;
    const int threads = j->items > 1 && total >= MIN_PARALLEL ? team_size() : 1;
    if (threads == 1) {
        for (int it = 0; it < j->items; it++) run_item(j, it);
        return;
    }
    const int chunk = j->items / (8 * threads) > 1 ? j->items / (8 * threads) : 1;
    (void)chunk;   /* read by the pragma only */
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
    for (int it = 0; it < j->items; it++) run_item(j, it);
}

/* ---- blocked calls ---- */

/* The cut of images into chunks for a blocked call: about 4096 elements per lane and chunk, at most
 * 16 chunks, fewer when the partials would not fit. A function of (n, c, hw) only. */
static void blk_plan(bn_job *j)
{
    const int cb = j->c / 16;
    long want = (long)j->n * j->hw / 4096;
    if (want < 1) want = 1;
    if (want > 16) want = 16;
    while (want > 1 && (long)cb * want * PART_STRIDE > BLK_PART_PLAN) want--;
    j->per_chunk = (int)((j->n + want - 1) / want);
    j->chunks = (j->n + j->per_chunk - 1) / j->per_chunk;
    j->items = cb * j->chunks;
    if (j->cl) {   /* channels-last: an item takes every block of its chunk, or two where that leaves a
                    * thread idle (which blocks an item takes changes no sum) */
        const size_t total = (size_t)j->n * j->c * j->hw;
        const int threads = total >= MIN_PARALLEL ? team_size() : 1;
        j->cl_gb = threads > 1 && j->chunks < 2 * threads && cb % 2 == 0 ? 2 : cb;
        j->items = j->chunks * (cb / j->cl_gb);
    }
}

/* Lane l of channel block cb summed over the chunks, in chunk order; which = 0, 1 or 2 (the sum). */
static double blk_total(const bn_job *j, int cb, int l, int which)
{
    double t = 0.0;
    for (int ch = 0; ch < j->chunks; ch++)
        t += j->part[((size_t)cb * j->chunks + ch) * PART_STRIDE + (size_t)which * 16 + l];
    return t;
}

static int blk_ok(int c, int hw)
{
    return nn_is_blocked(NN_BLOCK, c) && hw > 1 && (size_t)(c / 16) * PART_STRIDE <= BLK_PART_MAX;
}

/* A phase; on channels-last, those without sums (normalise, dx) in finer image runs taking every block
 * (the sums' plan can leave a thread two items or one: resnet's 64-channel 7x7 stage has one chunk) —
 * each element's result is the same whichever item computes it. */
static void blk_phase(bn_job *j, int kind)
{
    j->kind = kind;
    if (!j->cl || kind == JOB_B_STATS || kind == JOB_B_BSUM) {
        run(j);
        return;
    }
    bn_job e = *j;
    e.per_chunk = (j->n + 15) / 16;
    e.chunks = e.items = (j->n + e.per_chunk - 1) / e.per_chunk;
    e.cl_gb = j->c / 16;
    run(&e);
}

/* the forward's coefficient rows from the statistics: m, scale, shift (the other rows zero) */
static void blk_fwd_coef(int c, const float *gamma, const float *beta, float eps, const float *mean,
                         const float *var, float *coef)
{
    memset(coef, 0, sizeof(float) * COEF_ROWS * (size_t)c);
    for (int ch = 0; ch < c; ch++) {
        coef[ch] = mean[ch];
        coef[c + ch] = fwd_scale(var[ch], eps, gamma[ch]);
        coef[2 * c + ch] = beta[ch];
    }
}

/* y2 (channels-last, y float32; NULL none): y rounded to bfloat16 written there too */
static void blk_fwd_train(int cl, int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                          float eps, float *y, float *mean, float *var, float *coef, int relu, const float *res,
                          uint16_t *y2)
{
    double part[BLK_PART_MAX];
    bn_job j = {.n = n, .c = c, .hw = hw, .eps = eps, .x = x, .y = y, .part = part, .coef = coef, .relu = relu,
                .res = res, .cl = cl, .y2 = cl && !(cl & NN_CL_Y16) ? y2 : NULL};
    blk_plan(&j);
    const double count = (double)n * hw;
    blk_phase(&j, JOB_B_STATS);
    /* Chan et al.'s combination of the planes: the squares about each plane's mean, plus each plane's
     * hw * (plane mean - mean)^2 = sum over planes of s^2 / hw, less count * mean^2 */
    for (int ch = 0; ch < c; ch++) {
        const int cb = ch / 16, l = ch % 16;
        const double s = blk_total(&j, cb, l, 0), mu = s / count;
        double v = (blk_total(&j, cb, l, 1) + (blk_total(&j, cb, l, 2) - s * mu)) / count;
        if (v < 0.0) v = 0.0;
        mean[ch] = (float)mu;
        var[ch] = (float)v;
    }
    blk_fwd_coef(c, gamma, beta, eps, mean, var, coef);
    blk_phase(&j, JOB_B_AFFINE);
}

static void blk_fwd_infer(int cl, int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                          const float *mean, const float *var, float eps, float *y, float *coef)
{
    double part[BLK_PART_MAX];
    bn_job j = {.n = n, .c = c, .hw = hw, .eps = eps, .x = x, .y = y, .part = part, .coef = coef, .cl = cl};
    blk_plan(&j);
    blk_fwd_coef(c, gamma, beta, eps, mean, var, coef);
    blk_phase(&j, JOB_B_AFFINE);
}

/* beta != NULL: with the ReLU after the batch norm, whose mask is recomputed from x with the
 * forward's coefficients and operations (blk_fwd_train: the same m, scale and shift, so the same
 * bn(x) bit for bit), which saves reading the ReLU's output. g != NULL: the batch norm's output
 * went through a residual add and a ReLU with output yo; its gradient is (dy [+ dy2]) where yo > 0,
 * written to g in the sums' pass and read back by the dx pass. */
static void blk_bwd(int cl, int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                    const float *beta, const float *mean, const float *var, float eps, float *dx, float *dgamma,
                    float *dbeta, float *coef, const float *yo, const float *dy2, float *g)
{
    double part[BLK_PART_MAX];
    bn_job j = {.n = n, .c = c, .hw = hw, .eps = eps, .x = x, .dy = dy, .dx = dx, .part = part, .coef = coef,
             .relu = beta != NULL, .yo = yo, .dy2 = dy2, .g = g, .cl = cl};
    blk_plan(&j);
    const double count = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        coef[ch] = mean[ch];
        coef[c + ch] = coef[2 * c + ch] = coef[3 * c + ch] = 0.0f;
        coef[4 * c + ch] = beta ? fwd_scale(var[ch], eps, gamma[ch]) : 0.0f;   /* as blk_fwd_train */
        coef[5 * c + ch] = beta ? beta[ch] : 0.0f;
    }
    blk_phase(&j, JOB_B_BSUM);
    for (int ch = 0; ch < c; ch++) {
        const float invstd = 1.0f / sqrtf(var[ch] + eps);
        const double gdy = blk_total(&j, ch / 16, ch % 16, 0), gdyx = blk_total(&j, ch / 16, ch % 16, 1) * invstd;
        dgamma[ch] = (float)gdyx;
        dbeta[ch] = (float)gdy;
        coef[c + ch] = gamma[ch] * invstd;
        coef[2 * c + ch] = (float)(gdy / count);
        coef[3 * c + ch] = invstd * (float)(gdyx / count);
    }
    if (g) j.dy = g;
    blk_phase(&j, JOB_B_DX);
}

/* ---- the table entries, on either layout (cl: channels-last); kern_bn_entries.c names them ---- */

void nn_fast_bn_fwd_train_lay(int cl, int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                              float eps, float *y, float *mean, float *var)
{
    if (n <= 0 || c <= 0 || hw <= 0) return;
    if (blk_ok(c, hw)) {
        float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
        blk_fwd_train(cl, n, c, hw, x, gamma, beta, eps, y, mean, var, coef, 0, NULL, NULL);
        return;
    }
    bn_job j = {.kind = JOB_TRAIN, .n = n, .c = c, .hw = hw, .eps = eps, .items = c, .x = x, .gamma = gamma,
             .beta = beta, .y = y, .omean = mean, .ovar = var};
    run(&j);
}

void nn_fast_bn_fwd_infer_lay(int cl, int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                              const float *mean, const float *var, float eps, float *y)
{
    if (n <= 0 || c <= 0 || hw <= 0) return;
    if (blk_ok(c, hw)) {
        float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
        blk_fwd_infer(cl, n, c, hw, x, gamma, beta, mean, var, eps, y, coef);
        return;
    }
    bn_job j = {.kind = JOB_INFER, .n = n, .c = c, .hw = hw, .eps = eps, .items = n * c, .x = x, .gamma = gamma,
             .beta = beta, .mean = mean, .var = var, .y = y};
    run(&j);
}

void nn_fast_bn_bwd_lay(int cl, int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                        const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta)
{
    if (n <= 0 || c <= 0 || hw <= 0) return;
    if (blk_ok(c, hw)) {
        float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
        blk_bwd(cl, n, c, hw, x, dy, gamma, NULL, mean, var, eps, dx, dgamma, dbeta, coef, NULL, NULL, NULL);
        return;
    }
    bn_job j = {.kind = JOB_BWD, .n = n, .c = c, .hw = hw, .eps = eps, .items = c, .x = x, .dy = dy, .gamma = gamma,
             .mean = mean, .var = var, .dx = dx, .dgamma = dgamma, .dbeta = dbeta};
    run(&j);
}

/* The training forward alone (relu 0, res NULL; with the blocked geometries, unlike bn_fwd_train_lay),
 * fused with the ReLU after it (relu: y = max(0, bn(x))), or with the residual add and the ReLU after
 * that (res: y = max(0, bn(x) + res), a resnet block's tail; the bn output rounded to float before the
 * add, so y equals bn_fwd_train followed by add_relu bit for bit); where ycopy is given (channels-last,
 * y float32), y rounded to bfloat16 written there too. Blocked geometries only (nn_fast_bn_stats_ok,
 * for any n; 0 for others, nothing written). The fused backward takes d(y) and the forward's gamma,
 * beta and statistics, and finds where y > 0 from x (blk_bwd). */
int nn_fast_bn_fused_train_lay(int cl, int n, int c, int hw, const float *x, const float *res, int relu,
                               const float *gamma, const float *beta, float eps, float *y, uint16_t *ycopy, float *mean,
                               float *var)
{
    if (n <= 0 || c <= 0 || hw <= 0 || !blk_ok(c, hw)) return 0;
    float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
    blk_fwd_train(cl, n, c, hw, x, gamma, beta, eps, y, mean, var, coef, relu || res, res, ycopy);
    return 1;
}

int nn_fast_bn_relu_bwd_lay(int cl, int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                            const float *beta, const float *mean, const float *var, float eps, float *dx, float *dgamma,
                            float *dbeta)
{
    if (n <= 0 || c <= 0 || hw <= 0 || !blk_ok(c, hw)) return 0;
    float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
    blk_bwd(cl, n, c, hw, x, dy, gamma, beta, mean, var, eps, dx, dgamma, dbeta, coef, NULL, NULL, NULL);
    return 1;
}

/* The backward of bn_add_relu_fwd_train (blocked only; 0 for others, nothing written): d(y) = dy
 * (+ dy2 when not NULL); g = that where y > 0, the gradient of both addends, written out; dx,
 * dgamma, dbeta the batch norm's backward of g. The same results as relu_bwd_add (or relu_bwd), then
 * bn_bwd, bit for bit when dy2 is given. g may not alias any input. */
int nn_fast_bn_add_relu_bwd_lay(int cl, int n, int c, int hw, const float *x, const float *y, const float *dy,
                                const float *dy2, const float *gamma, const float *mean, const float *var, float eps,
                                float *g, float *dx, float *dgamma, float *dbeta)
{
    if (n <= 0 || c <= 0 || hw <= 0 || !blk_ok(c, hw)) return 0;
    float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
    blk_bwd(cl, n, c, hw, x, dy, gamma, NULL, mean, var, eps, dx, dgamma, dbeta, coef, y, dy2, g);
    return 1;
}

/* ---- normalisation with statistics taken elsewhere (by the convolution that wrote x) ---- */

/* The predicate of every fused entry here and of the statistics-taking convolution: the blocked
 * geometries (the kernel table's bn_fused_ok). The entries decline on nothing else, so no batch
 * size changes the answer. */
int nn_fast_bn_stats_ok(int c, int hw) { return c > 0 && blk_ok(c, hw); }

/* The training forward's normalisation with batch statistics already taken (mean, var as
 * bn_fwd_train returns them): y = bn(x), or max(0, bn(x)) (relu), or max(0, bn(x) + res) (res not
 * NULL) — what bn_fwd_train, bn_relu_fwd_train and bn_add_relu_fwd_train write, bit for bit.
 * Blocked only; 0 for others, nothing written. */
int nn_fast_bn_apply_train_lay(int cl, int n, int c, int hw, const float *x, const float *res, int relu,
                               const float *gamma, const float *beta, float eps, const float *mean, const float *var,
                               float *y)
{
    if (n <= 0 || c <= 0 || hw <= 0 || !blk_ok(c, hw)) return 0;
    float coef[COEF_ROWS * (BLK_PART_MAX / PART_STRIDE) * 16];
    double part[BLK_PART_MAX];
    bn_job j = {.n = n, .c = c, .hw = hw, .eps = eps, .x = x, .y = y, .part = part, .coef = coef,
             .relu = relu || res, .res = res, .cl = cl};
    blk_plan(&j);
    blk_fwd_coef(c, gamma, beta, eps, mean, var, coef);
    blk_phase(&j, JOB_B_AFFINE);
    return 1;
}
