/* kern_misc.c — the remaining reference kernels (relu, max pooling, global average pooling,
 * elementwise add), the reference-only operations (dropout, softmax cross-entropy) and the
 * reference kernel table itself.
 *
 * Contract: as documented for baton_nn_kernels and the reference-only functions in nn.h; fixed
 * summation order, single-threaded, no allocation. */
#include "nn_internal.h"

#include <math.h>
#include <string.h>

void nn_ref_relu_fwd(size_t count, const float *x, float *y)
{
    for (size_t i = 0; i < count; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void nn_ref_relu_bwd(size_t count, const float *y, const float *dy, float *dx)
{
    for (size_t i = 0; i < count; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void nn_ref_maxpool_fwd(const baton_nn_pool_geom *g, const float *x, float *y, int32_t *ws)
{
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    for (size_t p = 0; p < (size_t)g->n * g->c; p++) {
        const float *xp = x + p * iplane;
        for (int oh = 0; oh < g->oh; oh++) {
            for (int ow = 0; ow < g->ow; ow++) {
                int best = (oh * g->stride) * g->iw + ow * g->stride;
                float bv = xp[best];
                for (int kh = 0; kh < g->k; kh++) {
                    for (int kw = 0; kw < g->k; kw++) {
                        int idx = (oh * g->stride + kh) * g->iw + ow * g->stride + kw;
                        float v = xp[idx];
                        if (v > bv || (isnan(v) && !isnan(bv))) {
                            bv = v;
                            best = idx;
                        }
                    }
                }
                y[p * oplane + (size_t)oh * g->ow + ow] = bv;
                ws[p * oplane + (size_t)oh * g->ow + ow] = best;
            }
        }
    }
}

void nn_ref_maxpool_bwd(const baton_nn_pool_geom *g, const float *dy, const int32_t *ws, float *dx)
{
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    memset(dx, 0, sizeof(float) * (size_t)g->n * g->c * iplane);
    for (size_t p = 0; p < (size_t)g->n * g->c; p++)
        for (size_t o = 0; o < oplane; o++) dx[p * iplane + (size_t)ws[p * oplane + o]] += dy[p * oplane + o];
}

void nn_ref_gap_fwd(int n, int c, int hw, const float *x, float *y)
{
    for (size_t p = 0; p < (size_t)n * c; p++) {
        double acc = 0.0;
        for (int k = 0; k < hw; k++) acc += x[p * hw + k];
        y[p] = (float)(acc / hw);
    }
}

void nn_ref_gap_bwd(int n, int c, int hw, const float *dy, float *dx)
{
    for (size_t p = 0; p < (size_t)n * c; p++) {
        const float d = dy[p] / (float)hw;
        for (int k = 0; k < hw; k++) dx[p * hw + k] = d;
    }
}

void nn_ref_add(size_t count, const float *a, const float *b, float *y)
{
    for (size_t i = 0; i < count; i++) y[i] = a[i] + b[i];
}

void baton_nn_dropout_fwd(size_t count, float p, baton_rng *rng, const float *x, float *y, float *mask)
{
    const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    for (size_t i = 0; i < count; i++) {
        mask[i] = baton_rng_float(rng) >= p ? scale : 0.0f;
        y[i] = x[i] * mask[i];
    }
}

void baton_nn_dropout_bwd(size_t count, const float *mask, const float *dy, float *dx)
{
    for (size_t i = 0; i < count; i++) dx[i] = dy[i] * mask[i];
}

void baton_nn_softmax_xent(int n, int classes, const float *logits, const int32_t *labels,
                           float *dlogits, float *loss, int *correct)
{
    nn_softmax_xent_denom(n, n, classes, logits, labels, dlogits, loss, correct);
}

void nn_softmax_xent_denom(int n, int denom, int classes, const float *logits, const int32_t *labels, float *dlogits,
                           float *loss, int *correct)
{
    double total = 0.0;
    int right = 0;
    for (int i = 0; i < n; i++) {
        const float *l = logits + (size_t)i * classes;
        int arg = 0;
        for (int k = 1; k < classes; k++)
            if (l[k] > l[arg]) arg = k;
        if (arg == labels[i]) right++;
        const double mx = l[arg];
        double se = 0.0;
        for (int k = 0; k < classes; k++) se += exp((double)l[k] - mx);
        const double lse = mx + log(se);
        total += lse - l[labels[i]];
        if (dlogits) {
            for (int k = 0; k < classes; k++) {
                double pk = exp((double)l[k] - lse);
                dlogits[(size_t)i * classes + k] = (float)((pk - (k == labels[i] ? 1.0 : 0.0)) / denom);
            }
        }
    }
    if (loss) *loss = n > 0 ? (float)(total / n) : 0.0f;
    if (correct) *correct = right;
}

static const baton_nn_kernels reference = {
    .name = "reference",
    .block = 0,
    .to_plain = nn_ref_layout_copy,
    .from_plain = nn_ref_layout_copy,
    .conv_fwd = nn_ref_conv_fwd,
    .conv_bwd_data = nn_ref_conv_bwd_data,
    .conv_bwd_weights = nn_ref_conv_bwd_weights,
    .linear_fwd = nn_ref_linear_fwd,
    .linear_bwd_data = nn_ref_linear_bwd_data,
    .linear_bwd_weights = nn_ref_linear_bwd_weights,
    .bn_fwd_train = nn_ref_bn_fwd_train,
    .bn_fwd_infer = nn_ref_bn_fwd_infer,
    .bn_bwd = nn_ref_bn_bwd,
    .relu_fwd = nn_ref_relu_fwd,
    .relu_bwd = nn_ref_relu_bwd,
    .maxpool_fwd = nn_ref_maxpool_fwd,
    .maxpool_bwd = nn_ref_maxpool_bwd,
    .gap_fwd = nn_ref_gap_fwd,
    .gap_bwd = nn_ref_gap_bwd,
    .add = nn_ref_add,
};

const baton_nn_kernels *baton_nn_kernels_reference(void) { return &reference; }
