/* bf16_vec.h — bfloat16 <-> float32 for the kernels that read and write bfloat16 activations
 * (kern_bn_fast.c, kern_eltwise_fast.c) and bf16.c's array conversions: sixteen lanes at a time
 * (GCC vector extensions: one AVX-512 register where the caller is built for it) and one value at
 * a time, rounding to nearest, ties to even (a NaN stays a quiet NaN of its sign) — the same bits as
 * oneDNN's conversions. Widening is exact. Nothing outside src/nn includes this. */
#ifndef BATON_NN_BF16_VEC_H
#define BATON_NN_BF16_VEC_H

#include <stdint.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wpsabi"   /* 64-byte vectors pass only between inlined functions */
typedef float nn_v16f __attribute__((vector_size(16 * sizeof(float))));
typedef uint16_t nn_v16h __attribute__((vector_size(16 * sizeof(uint16_t))));
typedef uint32_t nn_v16u __attribute__((vector_size(16 * sizeof(uint32_t))));

static inline nn_v16f nn_v16_widen(const uint16_t *p)
{
    nn_v16h h;
    memcpy(&h, p, sizeof h);
    return (nn_v16f)(__builtin_convertvector(h, nn_v16u) << 16);
}

static inline void nn_v16_round(uint16_t *p, nn_v16f v)
{
    const nn_v16u u = (nn_v16u)v;
    const nn_v16u nan = (nn_v16u)((u & 0x7fffffffu) > 0x7f800000u);
    const nn_v16u r = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16 & ~nan) | (((u >> 16) | 0x40u) & nan);
    const nn_v16h h = __builtin_convertvector(r, nn_v16h);
    memcpy(p, &h, sizeof h);
}

static inline float nn_bf16_widen1(uint16_t x)
{
    const uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t nn_bf16_round1(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u;   /* branchless: loops over it vectorise */
    return (uint16_t)(nan ? (u >> 16) | 0x40u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
