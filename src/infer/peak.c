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

__attribute__((target("avx512f"))) static float loop512(uint64_t iters)
{
    __m512 a[CHAINS];
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (int k = 0; k < CHAINS; k++) a[k] = _mm512_set1_ps(1.0f + (float)k * 1e-3f);
    for (uint64_t i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = _mm512_fmadd_ps(a[k], b, c);
    __m512 s = a[0];
    for (int k = 1; k < CHAINS; k++) s = _mm512_add_ps(s, a[k]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float loop256(uint64_t iters)
{
    __m256 a[CHAINS];
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (int k = 0; k < CHAINS; k++) a[k] = _mm256_set1_ps(1.0f + (float)k * 1e-3f);
    for (uint64_t i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = _mm256_fmadd_ps(a[k], b, c);
    __m256 s = a[0];
    for (int k = 1; k < CHAINS; k++) s = _mm256_add_ps(s, a[k]);
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static float loop_scalar(uint64_t iters)
{
    float a[CHAINS];
    for (int k = 0; k < CHAINS; k++) a[k] = 1.0f + (float)k * 1e-3f;
    for (uint64_t i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) a[k] = a[k] * 0.999999f + 1e-6f;
    float s = 0;
    for (int k = 0; k < CHAINS; k++) s += a[k];
    return s;
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
