/* kern_norm.c — reference batch-normalisation kernels (training forward, inference forward,
 * backward) over activations [n, c, hw].
 *
 * Contract (nn.h, baton_nn_kernels): training forward normalises with the batch mean and the BIASED
 * batch variance and returns both per channel (float); the caller updates running statistics.
 * Both forward and backward compute invstd = 1 / sqrtf(var + eps) from the same float var, so the
 * pair is consistent. Per-channel sums are accumulated in double in a fixed order. */
#include "nn_internal.h"

#include <math.h>

void nn_ref_bn_fwd_train(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                         float eps, float *y, float *mean, float *var)
{
    const double count = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            const float *xp = x + ((size_t)i * c + ch) * hw;
            for (int k = 0; k < hw; k++) sum += xp[k];
        }
        const double mu = sum / count;
        double sq = 0.0;
        for (int i = 0; i < n; i++) {
            const float *xp = x + ((size_t)i * c + ch) * hw;
            for (int k = 0; k < hw; k++) {
                double d = xp[k] - mu;
                sq += d * d;
            }
        }
        mean[ch] = (float)mu;
        var[ch] = (float)(sq / count);
    }
    nn_ref_bn_fwd_infer(n, c, hw, x, gamma, beta, mean, var, eps, y);
}

void nn_ref_bn_fwd_infer(int n, int c, int hw, const float *x, const float *gamma, const float *beta,
                         const float *mean, const float *var, float eps, float *y)
{
    for (int ch = 0; ch < c; ch++) {
        const float invstd = 1.0f / sqrtf(var[ch] + eps);
        const float mu = mean[ch], g = gamma[ch], b = beta[ch];
        for (int i = 0; i < n; i++) {
            const float *xp = x + ((size_t)i * c + ch) * hw;
            float *yp = y + ((size_t)i * c + ch) * hw;
            for (int k = 0; k < hw; k++) yp[k] = (xp[k] - mu) * invstd * g + b;
        }
    }
}

void nn_ref_bn_bwd(int n, int c, int hw, const float *x, const float *dy, const float *gamma,
                   const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta)
{
    const double count = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        const float invstd = 1.0f / sqrtf(var[ch] + eps);
        const float mu = mean[ch];
        double sdy = 0.0, sdyx = 0.0;
        for (int i = 0; i < n; i++) {
            const float *xp = x + ((size_t)i * c + ch) * hw;
            const float *dyp = dy + ((size_t)i * c + ch) * hw;
            for (int k = 0; k < hw; k++) {
                sdy += dyp[k];
                sdyx += (double)dyp[k] * ((xp[k] - mu) * invstd);
            }
        }
        dgamma[ch] = (float)sdyx;
        dbeta[ch] = (float)sdy;
        /* dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)) */
        const float k1 = gamma[ch] * invstd;
        const float mdy = (float)(sdy / count), mdyx = (float)(sdyx / count);
        for (int i = 0; i < n; i++) {
            const float *xp = x + ((size_t)i * c + ch) * hw;
            const float *dyp = dy + ((size_t)i * c + ch) * hw;
            float *dxp = dx + ((size_t)i * c + ch) * hw;
            for (int k = 0; k < hw; k++) {
                float xhat = (xp[k] - mu) * invstd;
                dxp[k] = k1 * (dyp[k] - mdy - xhat * mdyx);
            }
        }
    }
}
