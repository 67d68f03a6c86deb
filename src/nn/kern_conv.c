/* kern_conv.c — reference kernels for convolution and fully connected layers (forward, backward
 * data, backward weights), as entries of the reference kernel table.
 *
 * Contract (see baton_nn_kernels in nn.h): NCHW activations, OIHW / [out,in] weights, outputs
 * overwritten. The loops are the textbook definitions, ordered so the innermost loop runs along a
 * contiguous output row (the compiler can vectorise it) and the summation order is fixed, so results
 * are bit-reproducible. Out-of-range taps (zero padding) are skipped by clipping the row range. */
#include "nn_internal.h"

#include <string.h>

/* Output columns o in [lo, hi) whose input column o*stride + off lies inside [0, in). */
static void valid_range(int out, int in, int stride, int off, int *lo, int *hi)
{
    int l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int h = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
    if (h > out) h = out;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

void nn_ref_conv_fwd(const baton_nn_conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    const int s = g->stride;
    for (int n = 0; n < g->n; n++) {
        for (int oc = 0; oc < g->oc; oc++) {
            float *yp = y + ((size_t)n * g->oc + oc) * oplane;
            float bias = b ? b[oc] : 0.0f;
            for (size_t i = 0; i < oplane; i++) yp[i] = bias;
            for (int ic = 0; ic < g->ic; ic++) {
                const float *xp = x + ((size_t)n * g->ic + ic) * iplane;
                const float *wp = w + ((size_t)oc * g->ic + ic) * g->kh * g->kw;
                for (int kh = 0; kh < g->kh; kh++) {
                    for (int kw = 0; kw < g->kw; kw++) {
                        const float wv = wp[kh * g->kw + kw];
                        int lo, hi;
                        valid_range(g->ow, g->iw, s, kw - g->pad, &lo, &hi);
                        for (int oh = 0; oh < g->oh; oh++) {
                            int ih = oh * s + kh - g->pad;
                            if (ih < 0 || ih >= g->ih) continue;
                            const float *xr = xp + (size_t)ih * g->iw;
                            const int off = kw - g->pad;
                            float *yr = yp + (size_t)oh * g->ow;
                            if (s == 1)
                                for (int ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow + off];
                            else
                                for (int ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * s + off];
                        }
                    }
                }
            }
        }
    }
}

void nn_ref_conv_bwd_data(const baton_nn_conv_geom *g, const float *dy, const float *w, float *dx)
{
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    const int s = g->stride;
    memset(dx, 0, sizeof(float) * (size_t)g->n * g->ic * iplane);
    for (int n = 0; n < g->n; n++) {
        for (int oc = 0; oc < g->oc; oc++) {
            const float *dyp = dy + ((size_t)n * g->oc + oc) * oplane;
            for (int ic = 0; ic < g->ic; ic++) {
                float *dxp = dx + ((size_t)n * g->ic + ic) * iplane;
                const float *wp = w + ((size_t)oc * g->ic + ic) * g->kh * g->kw;
                for (int kh = 0; kh < g->kh; kh++) {
                    for (int kw = 0; kw < g->kw; kw++) {
                        const float wv = wp[kh * g->kw + kw];
                        int lo, hi;
                        valid_range(g->ow, g->iw, s, kw - g->pad, &lo, &hi);
                        for (int oh = 0; oh < g->oh; oh++) {
                            int ih = oh * s + kh - g->pad;
                            if (ih < 0 || ih >= g->ih) continue;
                            float *xr = dxp + (size_t)ih * g->iw;
                            const int off = kw - g->pad;
                            const float *yr = dyp + (size_t)oh * g->ow;
                            if (s == 1)
                                for (int ow = lo; ow < hi; ow++) xr[ow + off] += wv * yr[ow];
                            else
                                for (int ow = lo; ow < hi; ow++) xr[ow * s + off] += wv * yr[ow];
                        }
                    }
                }
            }
        }
    }
}

void nn_ref_conv_bwd_weights(const baton_nn_conv_geom *g, const float *x, const float *dy, float *dw,
                             float *db)
{
    const size_t iplane = (size_t)g->ih * g->iw, oplane = (size_t)g->oh * g->ow;
    const int s = g->stride;
    memset(dw, 0, sizeof(float) * (size_t)g->oc * g->ic * g->kh * g->kw);
    if (db) memset(db, 0, sizeof(float) * (size_t)g->oc);
    for (int n = 0; n < g->n; n++) {
        for (int oc = 0; oc < g->oc; oc++) {
            const float *dyp = dy + ((size_t)n * g->oc + oc) * oplane;
            if (db) {
                float acc = 0.0f;
                for (size_t i = 0; i < oplane; i++) acc += dyp[i];
                db[oc] += acc;
            }
            for (int ic = 0; ic < g->ic; ic++) {
                const float *xp = x + ((size_t)n * g->ic + ic) * iplane;
                float *wp = dw + ((size_t)oc * g->ic + ic) * g->kh * g->kw;
                for (int kh = 0; kh < g->kh; kh++) {
                    for (int kw = 0; kw < g->kw; kw++) {
                        int lo, hi;
                        valid_range(g->ow, g->iw, s, kw - g->pad, &lo, &hi);
                        const int off = kw - g->pad;
                        float acc = 0.0f;
                        for (int oh = 0; oh < g->oh; oh++) {
                            int ih = oh * s + kh - g->pad;
                            if (ih < 0 || ih >= g->ih) continue;
                            const float *xr = xp + (size_t)ih * g->iw;
                            const float *yr = dyp + (size_t)oh * g->ow;
                            float row = 0.0f;
                            if (s == 1)
                                for (int ow = lo; ow < hi; ow++) row += yr[ow] * xr[ow + off];
                            else
                                for (int ow = lo; ow < hi; ow++) row += yr[ow] * xr[ow * s + off];
                            acc += row;
                        }
                        wp[kh * g->kw + kw] += acc;
                    }
                }
            }
        }
    }
}

void nn_ref_linear_fwd(int n, int in, int out, const float *x, const float *w, const float *b, float *y)
{
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * in;
        for (int o = 0; o < out; o++) {
            const float *wr = w + (size_t)o * in;
            /* 8 interleaved partial sums (fixed order), then added in order */
            float part[8] = {0};
            int k = 0;
            for (; k + 8 <= in; k += 8)
                for (int j = 0; j < 8; j++) part[j] += xr[k + j] * wr[k + j];
            float acc = 0.0f;
            for (int j = 0; j < 8; j++) acc += part[j];
            for (; k < in; k++) acc += xr[k] * wr[k];
            y[(size_t)i * out + o] = acc + (b ? b[o] : 0.0f);
        }
    }
}

void nn_ref_linear_bwd_data(int n, int in, int out, const float *dy, const float *w, float *dx)
{
    memset(dx, 0, sizeof(float) * (size_t)n * in);
    for (int i = 0; i < n; i++) {
        float *xr = dx + (size_t)i * in;
        for (int o = 0; o < out; o++) {
            const float d = dy[(size_t)i * out + o];
            const float *wr = w + (size_t)o * in;
            for (int k = 0; k < in; k++) xr[k] += d * wr[k];
        }
    }
}

void nn_ref_linear_bwd_weights(int n, int in, int out, const float *x, const float *dy, float *dw, float *db)
{
    memset(dw, 0, sizeof(float) * (size_t)out * in);
    if (db) memset(db, 0, sizeof(float) * (size_t)out);
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * in;
        for (int o = 0; o < out; o++) {
            const float d = dy[(size_t)i * out + o];
            float *wr = dw + (size_t)o * in;
            for (int k = 0; k < in; k++) wr[k] += d * xr[k];
            if (db) db[o] += d;
        }
    }
}
