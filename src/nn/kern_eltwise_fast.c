/* kern_eltwise_fast.c — fused elementwise kernels of the oneDNN table: y = max(0, a + b), the
 * residual add and the ReLU after it in one pass (a resnet block's tail). Layout-agnostic (any
 * storage order, the same for a, b and y); y may alias a or b.
 *
 * Threads: an OpenMP parallel loop in the normal build — the same team oneDNN's primitives and the
 * batch-norm kernels use (OMP_NUM_THREADS); serial in builds without OpenMP. Each element is
 * computed alone, so results do not depend on the thread count. Built for AVX-512 and baseline
 * x86-64, the loader choosing per CPU (GCC target_clones). */
#include "nn_internal.h"

#define PAR_MIN 65536   /* fewer elements: one thread */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void add_relu_span(const float *a, const float *b, float *y, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) {
        const float s = a[i] + b[i];
        y[i] = s > 0.0f ? s : 0.0f;
    }
}

int nn_fast_add_relu(size_t count, const float *a, const float *b, float *y)
{
    if (count < PAR_MIN) {
        add_relu_span(a, b, y, 0, count);
        return 1;
    }
    const size_t pieces = 64, step = (count + pieces - 1) / pieces;
#pragma omp parallel for schedule(static)
    for (size_t p = 0; p < pieces; p++) {
        const size_t lo = p * step, hi = lo + step < count ? lo + step : count;
        if (lo < hi) add_relu_span(a, b, y, lo, hi);
    }
    return 1;
}
