/* kern_layout.c — the blocked activation layout of the oneDNN table (nChw16c) and the kernels of
 * that table that must know it: conversions to and from NCHW, max pooling and global average
 * pooling over blocked activations.
 *
 * The layout: an activation [n, c, h, w] whose channel count is a multiple of NN_BLOCK (16) is
 * stored as [n][c / 16][h][w][16] — sixteen channels of one pixel side by side, the layout
 * oneDNN's AVX-512 convolutions read and write natively, so the network runs without a reorder
 * around every convolution. Activations with other channel counts (the input images, a 6-channel
 * layer) stay NCHW. With h = w = 1 both layouts are the same bytes ([n][c]).
 *
 * Contract: the functions here follow the kernel-table contract of nn.h for a table whose
 * `block` is NN_BLOCK: the same results as the reference kernels on the NCHW view of the data
 * (bit for bit: the same comparisons and the same summation order per value). The max-pool
 * workspace holds, per output element in storage order, the index within its input plane
 * (ih * iw) of the chosen element, as in the reference. Single-threaded, no allocation. */
#include "nn_internal.h"

#include <math.h>
#include <string.h>

int nn_is_blocked(int block, int c) { return block > 0 && c % block == 0; }

void nn_layout_to_plain(int block, int n, int c, int h, int w, const float *x, float *y)
{
    const size_t hw = (size_t)h * w;
    if (!nn_is_blocked(block, c) || hw == 1) {
        if (x != y) memmove(y, x, sizeof(float) * (size_t)n * c * hw);
        return;
    }
    const int cb = c / block;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < cb; b++) {
            const float *src = x + ((size_t)i * cb + b) * hw * block;
            float *dst = y + ((size_t)i * c + (size_t)b * block) * hw;
            for (size_t p = 0; p < hw; p++)
                for (int l = 0; l < block; l++) dst[(size_t)l * hw + p] = src[p * block + l];
        }
}

void nn_layout_from_plain(int block, int n, int c, int h, int w, const float *x, float *y)
{
    const size_t hw = (size_t)h * w;
    if (!nn_is_blocked(block, c) || hw == 1) {
        if (x != y) memmove(y, x, sizeof(float) * (size_t)n * c * hw);
        return;
    }
    const int cb = c / block;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < cb; b++) {
            const float *src = x + ((size_t)i * c + (size_t)b * block) * hw;
            float *dst = y + ((size_t)i * cb + b) * hw * block;
            for (size_t p = 0; p < hw; p++)
                for (int l = 0; l < block; l++) dst[p * block + l] = src[(size_t)l * hw + p];
        }
}

/* Max pooling over blocked activations: the window is scanned in row-major order and an element
 * replaces the best one only when strictly greater (the first maximum wins), as in the reference. */
void nn_blk_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    const int B = NN_BLOCK, cb = g->c / B;
    const size_t ihw = (size_t)g->ih * g->iw, ohw = (size_t)g->oh * g->ow;
    for (int i = 0; i < g->n; i++)
        for (int b = 0; b < cb; b++) {
            const float *xp = x + ((size_t)i * cb + b) * ihw * B;
            float *yp = y + ((size_t)i * cb + b) * ohw * B;
            int32_t *wp = ws + ((size_t)i * cb + b) * ohw * B;
            for (int oy = 0; oy < g->oh; oy++)
                for (int ox = 0; ox < g->ow; ox++) {
                    float best[NN_BLOCK];
                    int32_t at[NN_BLOCK];
                    const int y0 = oy * g->stride, x0 = ox * g->stride;
                    const int32_t first = y0 * g->iw + x0;
                    for (int l = 0; l < B; l++) best[l] = xp[(size_t)first * B + l], at[l] = first;
                    for (int ky = 0; ky < g->k; ky++)
                        for (int kx = 0; kx < g->k; kx++) {
                            const int32_t idx = (y0 + ky) * g->iw + x0 + kx;
                            const float *v = xp + (size_t)idx * B;
                            for (int l = 0; l < B; l++)
                                if (v[l] > best[l] || (isnan(v[l]) && !isnan(best[l]))) best[l] = v[l], at[l] = idx;
                        }
                    const size_t o = ((size_t)oy * g->ow + ox) * B;
                    memcpy(yp + o, best, sizeof best);
                    memcpy(wp + o, at, sizeof at);
                }
        }
}

void nn_blk_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx)
{
    const int B = NN_BLOCK, cb = g->c / B;
    const size_t ihw = (size_t)g->ih * g->iw, ohw = (size_t)g->oh * g->ow;
    memset(dx, 0, sizeof(float) * (size_t)g->n * g->c * ihw);
    for (int i = 0; i < g->n; i++)
        for (int b = 0; b < cb; b++) {
            float *dp = dx + ((size_t)i * cb + b) * ihw * B;
            const float *gp = dy + ((size_t)i * cb + b) * ohw * B;
            const int32_t *wp = ws + ((size_t)i * cb + b) * ohw * B;
            for (size_t o = 0; o < ohw; o++)
                for (int l = 0; l < B; l++) dp[(size_t)wp[o * B + l] * B + l] += gp[o * B + l];
        }
}

/* Global average pooling: per (image, channel) a double sum over the plane in pixel order, as the
 * reference. Output [n, c]. */
void nn_blk_gap_fwd(int n, int c, int hw, const float *x, float *y)
{
    const int B = NN_BLOCK, cb = c / B;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < cb; b++) {
            const float *xp = x + ((size_t)i * cb + b) * (size_t)hw * B;
            double acc[NN_BLOCK] = {0};
            for (int p = 0; p < hw; p++)
                for (int l = 0; l < B; l++) acc[l] += xp[(size_t)p * B + l];
            for (int l = 0; l < B; l++) y[(size_t)i * c + (size_t)b * B + l] = (float)(acc[l] / hw);
        }
}

void nn_blk_gap_bwd(int n, int c, int hw, const float *dy, float *dx)
{
    const int B = NN_BLOCK, cb = c / B;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < cb; b++) {
            float d[NN_BLOCK];
            for (int l = 0; l < B; l++) d[l] = dy[(size_t)i * c + (size_t)b * B + l] / (float)hw;
            float *dp = dx + ((size_t)i * cb + b) * (size_t)hw * B;
            for (int p = 0; p < hw; p++) memcpy(dp + (size_t)p * B, d, sizeof d);
        }
}

/* the table entries (kernel-table signatures: the block is the table's) */
void nn_blk_to_plain(int n, int c, int h, int w, const float *x, float *y)
{
    nn_layout_to_plain(NN_BLOCK, n, c, h, w, x, y);
}

void nn_blk_from_plain(int n, int c, int h, int w, const float *x, float *y)
{
    nn_layout_from_plain(NN_BLOCK, n, c, h, w, x, y);
}

void nn_ref_layout_copy(int n, int c, int h, int w, const float *x, float *y)
{
    nn_layout_to_plain(0, n, c, h, w, x, y);
}
