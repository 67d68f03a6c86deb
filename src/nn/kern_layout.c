/* kern_layout.c — the blocked activation layout of the oneDNN table (nChw16c), the channels-last
 * one of its bfloat16 twin (nhwc), and the kernels of those tables that must know them: conversions
 * to and from NCHW and global average pooling (max pooling is kern_pool_fast.c's).
 *
 * The layout: an activation [n, c, h, w] whose channel count is a multiple of NN_BLOCK (16) is
 * stored as [n][c / 16][h][w][16] — sixteen channels of one pixel side by side, the layout
 * oneDNN's AVX-512 convolutions read and write natively, so the network runs without a reorder
 * around every convolution. Activations with other channel counts (the input images, a 6-channel
 * layer) stay NCHW. With h = w = 1 both layouts are the same bytes ([n][c]).
 *
 * Contract: the functions here follow the kernel-table contract of nn.h for a table whose
 * `block` is NN_BLOCK: the same results as the reference kernels on the NCHW view of the data
 * (bit for bit: the same summation order per value). Single-threaded, no allocation. */
#include "nn_internal.h"

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

/* Channels-last (the bf16 table: oneDNN's AMX convolutions read and write it, so its activations
 * need no reorder around them): a channel count that is a multiple of NN_BLOCK is stored
 * [n][h][w][c]; others, and h = w = 1, as NCHW. */
static int cl_is(int c, size_t hw) { return nn_is_blocked(NN_BLOCK, c) && hw > 1; }

/* Each of n images: x as rows × cols, transposed into y as cols × rows (x != y, or the layout is
 * one where nothing moves). */
static void cl_transpose(int n, int c, int h, int w, int to_plain, const float *x, float *y)
{
    const size_t hw = (size_t)h * w, rows = to_plain ? hw : (size_t)c, cols = to_plain ? (size_t)c : hw;
    if (!cl_is(c, hw)) {
        if (x != y) memmove(y, x, sizeof(float) * (size_t)n * c * hw);
        return;
    }
    for (int i = 0; i < n; i++) {
        const float *src = x + (size_t)i * c * hw;
        float *dst = y + (size_t)i * c * hw;
        for (size_t r = 0; r < rows; r++)
            for (size_t k = 0; k < cols; k++) dst[k * rows + r] = src[r * cols + k];
    }
}

void nn_cl_to_plain(int n, int c, int h, int w, const float *x, float *y) { cl_transpose(n, c, h, w, 1, x, y); }

void nn_cl_from_plain(int n, int c, int h, int w, const float *x, float *y) { cl_transpose(n, c, h, w, 0, x, y); }

/* as nn_blk_gap_fwd: per (image, channel) a double sum in pixel order */
void nn_cl_gap_fwd(int n, int c, int hw, const float *x, float *y)
{
    if (!cl_is(c, (size_t)hw)) {
        nn_ref_gap_fwd(n, c, hw, x, y);
        return;
    }
    for (int i = 0; i < n; i++)
        for (int b = 0; b < c / NN_BLOCK; b++) {
            const float *xp = x + (size_t)i * c * hw + (size_t)b * NN_BLOCK;
            double acc[NN_BLOCK] = {0};
            for (int p = 0; p < hw; p++)
                for (int l = 0; l < NN_BLOCK; l++) acc[l] += xp[(size_t)p * c + l];
            for (int l = 0; l < NN_BLOCK; l++) y[(size_t)i * c + (size_t)b * NN_BLOCK + l] = (float)(acc[l] / hw);
        }
}

void nn_cl_gap_bwd(int n, int c, int hw, const float *dy, float *dx)
{
    if (!cl_is(c, (size_t)hw)) {
        nn_ref_gap_bwd(n, c, hw, dy, dx);
        return;
    }
    for (int i = 0; i < n; i++) {
        float *dp = dx + (size_t)i * c * hw;
        for (int l = 0; l < c; l++) dp[l] = dy[(size_t)i * c + l] / (float)hw;
        for (int p = 1; p < hw; p++) memcpy(dp + (size_t)p * c, dp, sizeof(float) * (size_t)c);
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
