/* bf16.c — bfloat16 conversions for the mixed-precision kernels, and the model's bfloat16 copy of
 * its parameters (what a table with weights_bf16 reads: nn.h).
 *
 * A bfloat16 is the top half of a float32: rounding keeps the upper 16 bits, to nearest with ties
 * to even (what oneDNN's reorders and the AVX512-BF16 instructions do); a NaN stays a quiet NaN of
 * the same sign. Widening is exact.
 *
 * The copy (m->params16, same offsets as m->params) is written by the optimizer's step for every
 * parameter it updates (optim.c), so a training step converts each weight once, not once per
 * kernel call. Anything else that may write the f32 parameters — a caller given a tensor's data
 * pointer (baton_nn_model_tensor / _find: loading a checkpoint, a broadcast from another rank) —
 * marks the copy stale, and the next forward on such a table rounds all of it again: the same
 * values, as rounding is a pure function of the f32 weights, so a resumed run matches an
 * uninterrupted one bit for bit.
 *
 * Contract: no allocation (the copy is allocated with the model); the results do not depend on the
 * thread count. */
#include "nn_internal.h"
#include "bf16_vec.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
void nn_bf16_round(size_t n, const float *restrict x, uint16_t *restrict y)
{
    for (size_t i = 0; i < n; i++) y[i] = nn_bf16_round1(x[i]);
}

void nn_bf16_widen(size_t n, const uint16_t *x, float *y)
{
    for (size_t i = 0; i < n; i++) y[i] = nn_bf16_widen1(x[i]);
}

void nn_params16_refresh(baton_nn_model *m)
{
    if (!m->k->weights_bf16 || !m->params16_stale) return;
    nn_bf16_round(m->nparam, m->params, m->params16);
    m->params16_stale = 0;
}

void baton_nn_model_weights_changed(baton_nn_model *m)
{
    m->params16_stale = 1;
}
