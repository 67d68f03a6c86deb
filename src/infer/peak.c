/* peak.c — this machine's peak FP32 rate, measured: every thread runs independent chains of
 * fused multiply-adds on the widest vectors the CPU has (AVX-512, else AVX2+FMA, else scalar
 * doubles of work), and the rate is the FLOPs of all threads over the wall time from start to the
 * last join. This is the denominator of "FLOP efficiency" (achieved / peak) that projects a
 * measured latency onto catalog hardware by its FP32 TFLOPS.
 *
 * Contract: no allocation beyond the threads; the result is in GFLOP/s (0 if threads cannot start). */
#include "infer_internal.h"

#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#define CHAINS 12   /* independent accumulators: FMA latency (4) × 2 ports, with room */

/* The chains are named variables, not an array, so that they stay in registers. */
#define CHAIN_DECL(T, SET) T a0 = SET(1.000f), a1 = SET(1.001f), a2 = SET(1.002f), a3 = SET(1.003f), \
    a4 = SET(1.004f), a5 = SET(1.005f), a6 = SET(1.006f), a7 = SET(1.007f), a8 = SET(1.008f),      \
    a9 = SET(1.009f), a10 = SET(1.010f), a11 = SET(1.011f)
#define CHAIN_STEP(F)                                                                                 \
    do {                                                                                              \
        a0 = F(a0, b, c), a1 = F(a1, b, c), a2 = F(a2, b, c), a3 = F(a3, b, c), a4 = F(a4, b, c);     \
        a5 = F(a5, b, c), a6 = F(a6, b, c), a7 = F(a7, b, c), a8 = F(a8, b, c), a9 = F(a9, b, c);     \
        a10 = F(a10, b, c), a11 = F(a11, b, c);                                                       \
    } while (0)
#define CHAIN_SUM(ADD) ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), \
                           ADD(ADD(a8, a9), ADD(a10, a11)))

__attribute__((target("avx512f"))) static float loop512(uint64_t iters)
{
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    CHAIN_DECL(__m512, _mm512_set1_ps);
    for (uint64_t i = 0; i < iters; i++) CHAIN_STEP(_mm512_fmadd_ps);
    return _mm512_reduce_add_ps(CHAIN_SUM(_mm512_add_ps));
}

__attribute__((target("avx2,fma"))) static float loop256(uint64_t iters)
{
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    CHAIN_DECL(__m256, _mm256_set1_ps);
    for (uint64_t i = 0; i < iters; i++) CHAIN_STEP(_mm256_fmadd_ps);
    float v[8];
    _mm256_storeu_ps(v, CHAIN_SUM(_mm256_add_ps));
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static float mul_add(float x, float y, float z) { return x * y + z; }
static float add(float x, float y) { return x + y; }
static float same(float x) { return x; }

static float loop_scalar(uint64_t iters)
{
    const float b = 0.999999f, c = 1e-6f;
    CHAIN_DECL(float, same);
    for (uint64_t i = 0; i < iters; i++) CHAIN_STEP(mul_add);
    return CHAIN_SUM(add);
}

typedef struct job {
    int width;               /* floats per vector: 16, 8 or 1 */
    uint64_t iters;
    volatile float sink;
} job;

static void *run(void *p)
{
    job *j = p;
    j->sink = j->width == 16 ? loop512(j->iters) : j->width == 8 ? loop256(j->iters) : loop_scalar(j->iters);
    return NULL;
}

double baton_infer_peak_gflops(int threads, double seconds)
{
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    int width = 1;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) width = 16;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) width = 8;
    const double per_iter = 2.0 * CHAINS * width;
    /* calibrate on this thread */
    job cal = {.width = width, .iters = 20000};
    double t = baton_now();
    run(&cal);
    double dt = baton_now() - t;
    if (dt < 1e-6) dt = 1e-6;
    uint64_t iters = (uint64_t)((double)cal.iters / dt * (seconds > 0 ? seconds : 0.2));
    if (iters < 1000) iters = 1000;
    job jobs[256];
    pthread_t tid[256];
    int started = 0;
    t = baton_now();
    for (int i = 0; i < threads; i++) jobs[i] = (job){.width = width, .iters = iters};
    for (int i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, run, &jobs[i]) == 0) started++;
    run(&jobs[0]);
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    dt = baton_now() - t;
    return dt > 0 ? per_iter * (double)iters * (double)(started + 1) / dt / 1e9 : 0;
}
