/* kern_pool_fast.c — the oneDNN table's max-pooling entries: forward, backward, and the backward
 * fused with the ReLU before the pool (its predicate: blocked activations), threaded and vectorised
 * over blocked activations (nChw16c); on NCHW ones an unrolled 2x2 stride-2 forward, the reference
 * kernels otherwise.
 *
 * Contract: the same results, bit for bit, as the reference kernels (kern_misc.c) on the NCHW view
 * of the data: the window is scanned in row-major order, an element
 * replaces the best one when strictly greater or when it is a NaN and the best is not (the first
 * maximum wins; a NaN beats a number), and the workspace holds per output element (in storage order)
 * the index within its input plane of the chosen element. Backward: d(input) = the sum of the
 * d(output)s of the windows that chose it, 0 elsewhere. With a ReLU mask (the pool's input is a
 * ReLU's output r): d(ReLU input) = that sum where r > 0, else 0 — relu_bwd after maxpool_bwd in one
 * pass.
 *
 * Speed: 2x2 windows with stride 2 (lenet's) have their own loops; there the windows do not overlap,
 * so the backward writes every input element once (no clearing pass, no scatter). Other windows use
 * the general loops. Every (image, channel block) plane is independent: an OpenMP loop over them in
 * the normal build (the team oneDNN and the batch-norm kernels use, OMP_NUM_THREADS), serial
 * without OpenMP; results do not depend on the thread count. Built for AVX-512 and baseline x86-64,
 * the loader choosing per CPU (GCC target_clones). No allocation. */
#include "nn_internal.h"

#include <string.h>

#define B NN_BLOCK

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx512f", "default")))
#else
#define CLONES
#endif

/* one 16-lane step of the scan: take v (at plane index idx) where it beats best */
#define TAKE(best, at, v, idx)                                                  \
    for (int l = 0; l < B; l++) {                                               \
        const float t_ = (v)[l];                                                \
        const int gt_ = (t_ > best[l]) | ((t_ != t_) & (best[l] == best[l]));  \
        best[l] = gt_ ? t_ : best[l];                                           \
        at[l] = gt_ ? (idx) : at[l];                                            \
    }

/* ps: floats from one pixel to the next (B blocked, the channel count channels-last) */
CLONES static void fwd_plane_2x2(const baton_nn_pool_geom *g, const float *xp, float *yp, int32_t *wp, size_t ps)
{
    const int iw = g->iw;
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            const int32_t i0 = 2 * oy * iw + 2 * ox;
            const float *v0 = xp + (size_t)i0 * ps, *v2 = v0 + (size_t)iw * ps;
            float best[B];
            int32_t at[B];
            for (int l = 0; l < B; l++) best[l] = v0[l], at[l] = i0;
            TAKE(best, at, v0 + ps, i0 + 1);
            TAKE(best, at, v2, i0 + iw);
            TAKE(best, at, v2 + ps, i0 + iw + 1);
            const size_t o = ((size_t)oy * g->ow + ox) * ps;
            memcpy(yp + o, best, sizeof best);
            memcpy(wp + o, at, sizeof at);
        }
}

CLONES static void fwd_plane(const baton_nn_pool_geom *g, const float *xp, float *yp, int32_t *wp, size_t ps)
{
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            const int y0 = oy * g->stride, x0 = ox * g->stride;
            const int32_t first = y0 * g->iw + x0;
            float best[B];
            int32_t at[B];
            for (int l = 0; l < B; l++) best[l] = xp[(size_t)first * ps + l], at[l] = first;
            for (int ky = 0; ky < g->k; ky++)
                for (int kx = 0; kx < g->k; kx++) {
                    const int32_t idx = (y0 + ky) * g->iw + x0 + kx;
                    TAKE(best, at, xp + (size_t)idx * ps, idx);
                }
            const size_t o = ((size_t)oy * g->ow + ox) * ps;
            memcpy(yp + o, best, sizeof best);
            memcpy(wp + o, at, sizeof at);
        }
}

/* d(input) of one window tap: the window's d(output) on lanes that chose it (and whose ReLU output
 * r is > 0, with a mask), else 0 */
static inline void tap(float *restrict d, const float *restrict gp, const int32_t *restrict wp, int32_t idx)
{
    for (int l = 0; l < B; l++) {
        const float v = gp[l];   /* loaded unconditionally: the loop vectorises to a select */
        d[l] = wp[l] == idx ? v : 0.0f;
    }
}

static inline void tap_masked(float *restrict d, const float *restrict gp, const int32_t *restrict wp,
                              const float *restrict r, int32_t idx)
{
    for (int l = 0; l < B; l++) {
        const float v = gp[l], rv = r[l];
        d[l] = ((wp[l] == idx) & (rv > 0.0f)) ? v : 0.0f;
    }
}

/* 2x2 stride 2: each input element belongs to at most one window; rows and columns past the last
 * window (odd sizes) get 0 */
CLONES static void bwd_plane_2x2(const baton_nn_pool_geom *g, const float *gp, const int32_t *wp, const float *rp,
                                 float *dp, size_t ps)
{
    const int iw = g->iw;
    for (int oy = 0; oy < g->oh; oy++) {
        for (int ox = 0; ox < g->ow; ox++) {
            const size_t o = ((size_t)oy * g->ow + ox) * ps;
            const int32_t i0 = 2 * oy * iw + 2 * ox;
            const int32_t idx[4] = {i0, i0 + 1, i0 + iw, i0 + iw + 1};
            for (int t = 0; t < 4; t++) {
                if (rp)
                    tap_masked(dp + (size_t)idx[t] * ps, gp + o, wp + o, rp + (size_t)idx[t] * ps, idx[t]);
                else
                    tap(dp + (size_t)idx[t] * ps, gp + o, wp + o, idx[t]);
            }
        }
        if (iw > 2 * g->ow) {   /* an odd last column */
            memset(dp + ((size_t)2 * oy * iw + 2 * g->ow) * ps, 0, sizeof(float) * B);
            memset(dp + ((size_t)(2 * oy + 1) * iw + 2 * g->ow) * ps, 0, sizeof(float) * B);
        }
    }
    for (size_t q = (size_t)2 * g->oh * iw; q < (size_t)g->ih * iw; q++)   /* an odd last row */
        memset(dp + q * ps, 0, sizeof(float) * B);
}

CLONES static void bwd_plane(const baton_nn_pool_geom *g, const float *gp, const int32_t *wp, const float *rp,
                             float *dp)
{
    const size_t ihw = (size_t)g->ih * g->iw, ohw = (size_t)g->oh * g->ow;
    memset(dp, 0, sizeof(float) * ihw * B);
    for (size_t o = 0; o < ohw; o++)
        for (int l = 0; l < B; l++) dp[(size_t)wp[o * B + l] * B + l] += gp[o * B + l];
    if (rp)
        for (size_t i = 0; i < ihw * B; i++) dp[i] = rp[i] > 0.0f ? dp[i] : 0.0f;
}

static int two_by_two(const baton_nn_pool_geom *g) { return g->k == 2 && g->stride == 2; }

static void blk_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    const long planes = (long)g->n * (g->c / B);
    const size_t ihw = (size_t)g->ih * g->iw * B, ohw = (size_t)g->oh * g->ow * B;
    const int quick = two_by_two(g);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; p++) {
        if (quick)
            fwd_plane_2x2(g, x + p * ihw, y + p * ohw, ws + p * ohw, B);
        else
            fwd_plane(g, x + p * ihw, y + p * ohw, ws + p * ohw, B);
    }
}

/* relu_out NULL: no ReLU mask */
static void blk_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out, float *dx)
{
    const long planes = (long)g->n * (g->c / B);
    const size_t ihw = (size_t)g->ih * g->iw * B, ohw = (size_t)g->oh * g->ow * B;
    const int quick = two_by_two(g);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; p++) {
        const float *rp = relu_out ? relu_out + p * ihw : NULL;
        if (quick)
            bwd_plane_2x2(g, dy + p * ohw, ws + p * ohw, rp, dx + p * ihw, B);
        else
            bwd_plane(g, dy + p * ohw, ws + p * ohw, rp, dx + p * ihw);
    }
}

/* NCHW, 2x2 windows with stride 2 (lenet's on a non-blocked channel count): the reference's rule
 * (the first maximum in row-major window order; a NaN beats a number) unrolled over the four taps */
static void plain_fwd_2x2(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    for (size_t p = 0; p < (size_t)g->n * g->c; p++) {
        const float *xp = x + p * iplane;
        float *yp = y + p * oplane;
        int32_t *wp = ws + p * oplane;
        for (int oh = 0; oh < g->oh; oh++) {
            const int row = 2 * oh * g->iw;
            const float *r0 = xp + row, *r1 = r0 + g->iw;
            for (int ow = 0; ow < g->ow; ow++) {
                const int c = 2 * ow;
                const float t[4] = {r0[c], r0[c + 1], r1[c], r1[c + 1]};
                float bv = t[0];
                int bi = 0;
                for (int i = 1; i < 4; i++)
                    if (t[i] > bv || (t[i] != t[i] && bv == bv)) {
                        bv = t[i];
                        bi = i;
                    }
                yp[oh * g->ow + ow] = bv;
                wp[oh * g->ow + ow] = row + (bi >> 1) * g->iw + c + (bi & 1);
            }
        }
    }
}

/* ---- the oneDNN table's entries ---- */

void nn_fast_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    if (nn_is_blocked(B, g->c))
        blk_fwd(g, x, y, ws);
    else if (two_by_two(g))
        plain_fwd_2x2(g, x, y, ws);
    else
        nn_ref_maxpool_fwd(g, x, y, ws);
}

void nn_fast_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx)
{
    if (nn_is_blocked(B, g->c))
        blk_bwd(g, dy, ws, NULL, dx);
    else
        nn_ref_maxpool_bwd(g, dy, ws, dx);
}

/* maxpool_bwd and then relu_bwd of the ReLU before the pool, in one pass: blocked layouts only (the
 * geometries nn_fast_maxpool_relu_ok accepts, any n; 0 for others, nothing written) */
int nn_fast_maxpool_relu_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out,
                             float *dx)
{
    if (!nn_fast_maxpool_relu_ok(g)) return 0;
    blk_bwd(g, dy, ws, relu_out, dx);
    return 1;
}

int nn_fast_maxpool_relu_ok(const baton_nn_pool_geom *g) { return nn_is_blocked(B, g->c); }

/* ---- the bf16 table's entries: channels-last activations (nn_cl_to_plain's layout) ----
 * 16 channels (nhwc is nChw16c) and other counts as the oneDNN table's entries; a multiple of 16
 * above that by the same plane kernels, a plane being one image's block of 16 channels (pixels c
 * floats apart), its workspace (the flat index within the input plane, as the reference's) in the
 * output's layout. */
static int cl_own(const baton_nn_pool_geom *g)
{
    return g->c != B && nn_is_blocked(B, g->c) && (size_t)g->ih * g->iw > 1;
}

void nn_cl_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    if (!cl_own(g)) {
        nn_fast_maxpool_fwd(g, x, y, ws);
        return;
    }
    const int cbn = g->c / B;
    const long planes = (long)g->n * cbn;
    const size_t ihw = (size_t)g->ih * g->iw * g->c, ohw = (size_t)g->oh * g->ow * g->c;
    const int quick = two_by_two(g);
#pragma omp parallel for schedule(static)
    for (long p = 0; p < planes; p++) {
        const size_t xo = (size_t)(p / cbn) * ihw + (size_t)(p % cbn) * B;
        const size_t yo = (size_t)(p / cbn) * ohw + (size_t)(p % cbn) * B;
        if (quick)
            fwd_plane_2x2(g, x + xo, y + yo, ws + yo, (size_t)g->c);
        else
            fwd_plane(g, x + xo, y + yo, ws + yo, (size_t)g->c);
    }
}

/* relu_out NULL: no ReLU mask. 2x2 stride 2 by the plane kernel; other windows by the reference's
 * scatter on channels-last arrays, then the mask */
static void cl_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out, float *dx)
{
    const int c = g->c, cbn = c / B;
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    if (two_by_two(g)) {
        const long planes = (long)g->n * cbn;
#pragma omp parallel for schedule(static)
        for (long p = 0; p < planes; p++) {
            const size_t xo = (size_t)(p / cbn) * iplane * c + (size_t)(p % cbn) * B;
            const size_t yo = (size_t)(p / cbn) * oplane * c + (size_t)(p % cbn) * B;
            bwd_plane_2x2(g, dy + yo, ws + yo, relu_out ? relu_out + xo : NULL, dx + xo, (size_t)c);
        }
        return;
    }
    memset(dx, 0, sizeof(float) * (size_t)g->n * c * iplane);
    for (int i = 0; i < g->n; i++)
        for (size_t o = 0; o < oplane; o++)
            for (int ch = 0; ch < c; ch++) {
                const size_t at = ((size_t)i * oplane + o) * c + ch;
                dx[((size_t)i * iplane + (size_t)ws[at]) * c + ch] += dy[at];
            }
    if (relu_out)
        for (size_t k = 0; k < (size_t)g->n * c * iplane; k++) dx[k] = relu_out[k] > 0.0f ? dx[k] : 0.0f;
}

void nn_cl_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx)
{
    if (!cl_own(g)) nn_fast_maxpool_bwd(g, dy, ws, dx);
    else cl_bwd(g, dy, ws, NULL, dx);
}

int nn_cl_maxpool_relu_ok(const baton_nn_pool_geom *g) { return nn_is_blocked(B, g->c); }

int nn_cl_maxpool_relu_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, const float *relu_out,
                           float *dx)
{
    if (!nn_cl_maxpool_relu_ok(g)) return 0;
    if (!cl_own(g)) return nn_fast_maxpool_relu_bwd(g, dy, ws, relu_out, dx);
    cl_bwd(g, dy, ws, relu_out, dx);
    return 1;
}
