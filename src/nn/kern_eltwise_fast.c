/* kern_eltwise_fast.c — fused elementwise kernels of the oneDNN table: y = max(0, a + b), the
 * residual add and the ReLU after it in one pass (a resnet block's tail), and its backward with two
 * gradient contributions, dx = (dy + dy2) where y > 0 (the two readers of a block's output); and the
 * bf16 table's ReLU whose output is bfloat16 (relu_fwd_y16: max(0, x) rounded as bf16.c rounds;
 * relu_bwd_y16: dx = dy where that output > 0).
 * Layout-agnostic (any storage order, the same for every operand); outputs may alias inputs.
 *
 * Threads: an OpenMP parallel loop in the normal build — the same team oneDNN's primitives and the
 * batch-norm kernels use (OMP_NUM_THREADS); serial in builds without OpenMP. Each element is
 * computed alone, so results do not depend on the thread count. Built for AVX-512 and baseline
 * x86-64, the loader choosing per CPU (GCC target_clones). */
#include "nn_internal.h"
#include "bf16_vec.h"

#include <stdint.h>
#include <string.h>

#define PAR_MIN 65536   /* fewer elements: one thread */

/* sixteen lanes at a time (GCC vector extensions: one AVX-512 register, four SSE ones), the tail
 * one by one with the same operations. The 64-byte vector type passes only between static
 * functions of this file, which are inlined: the -Wpsabi note about an external ABI does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef int32_t v16i __attribute__((vector_size(16 * sizeof(int32_t))));

static inline v16 ld(const float *p)
{
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st(float *p, v16 v) { memcpy(p, &v, sizeof v); }

/* v where m > 0, else +0 (a NaN m masks) */
static inline v16 where_pos(v16 v, v16 m)
{
    const v16 z = {0};
    return (v16)((v16i)v & (m > z));
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void add_relu_span(const float *a, const float *b, float *y, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        const v16 s = ld(a + i) + ld(b + i);
        st(y + i, where_pos(s, s));
    }
    for (; i < hi; i++) {
        const float s = a[i] + b[i];
        y[i] = s > 0.0f ? s : 0.0f;
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void relu_bwd_add_span(const float *y, const float *dy, const float *dy2, float *dx, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 16 <= hi; i += 16) st(dx + i, where_pos(ld(dy + i) + ld(dy2 + i), ld(y + i)));
    for (; i < hi; i++) {
        const float s = dy[i] + dy2[i];
        dx[i] = y[i] > 0.0f ? s : 0.0f;
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void relu_y16_span(const float *x, uint16_t *y, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        const v16 v = ld(x + i);
        nn_v16_round(y + i, where_pos(v, v));
    }
    for (; i < hi; i++) y[i] = nn_bf16_round1(x[i] > 0.0f ? x[i] : 0.0f);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void relu_bwd_y16_span(const uint16_t *y, const float *dy, float *dx, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 16 <= hi; i += 16) st(dx + i, where_pos(ld(dy + i), nn_v16_widen(y + i)));
    for (; i < hi; i++) dx[i] = nn_bf16_widen1(y[i]) > 0.0f ? dy[i] : 0.0f;
}

/* one of the spans in pieces: the split depends on count only */
#define SPANS(count, call)                                                             \
    do {                                                                               \
        if ((count) < PAR_MIN) {                                                       \
            const size_t lo = 0, hi = (count);                                         \
            call;                                                                      \
            break;                                                                     \
        }                                                                              \
        const size_t pieces_ = 64, step_ = ((count) + pieces_ - 1) / pieces_;          \
        _Pragma("omp parallel for schedule(static)")                                   \
        for (size_t p_ = 0; p_ < pieces_; p_++) {                                      \
            const size_t lo = p_ * step_, hi = lo + step_ < (count) ? lo + step_ : (count); \
            if (lo < hi) call;                                                         \
        }                                                                              \
    } while (0)

int nn_fast_add_relu(size_t count, const float *a, const float *b, float *y)
{
    SPANS(count, add_relu_span(a, b, y, lo, hi));
    return 1;
}

int nn_fast_relu_bwd_add(size_t count, const float *y, const float *dy, const float *dy2, float *dx)
{
    SPANS(count, relu_bwd_add_span(y, dy, dy2, dx, lo, hi));
    return 1;
}

int nn_fast_relu_fwd_y16(size_t count, const float *x, uint16_t *y)
{
    SPANS(count, relu_y16_span(x, y, lo, hi));
    return 1;
}

int nn_fast_relu_bwd_y16(size_t count, const uint16_t *y, const float *dy, float *dx)
{
    SPANS(count, relu_bwd_y16_span(y, dy, dx, lo, hi));
    return 1;
}
