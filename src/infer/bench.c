/* bench.c — the latency benchmark of one context (threads, batch, path), MLPerf single-stream
 * style: cold start (process start → checkpoint verified, read and loaded → fast path compiled),
 * the first query once ready, a warm-up, then queries one at a time, back to back, until both a
 * minimum count and a minimum duration are met (or a cap on the duration), and nearest-rank
 * percentiles of the timed queries.
 *
 * Contract: the input is a fixed batch of pseudo-random values in [-1, 1) (the model's normalised
 * input range); the latency array is allocated once before the timed loop (sized from the
 * warm-up's speed), so the loop itself allocates nothing. Times come from baton_now() (monotonic). */
#include "infer_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void baton_infer_bench_opts_default(baton_infer_bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_queries = 200;
    o->min_seconds = 1.0;
    o->max_seconds = 30.0;
    o->warmup = 10;
}

double baton_infer_percentile(const double *sorted, size_t n, double q)
{
    if (n == 0) return 0;
    if (q <= 0) return sorted[0];
    double r = ceil(q * (double)n);   /* nearest rank, 1-based */
    size_t i = r < 1 ? 0 : (size_t)r - 1;
    return sorted[i < n ? i : n - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int infer_bench_engine(baton_infer_engine *e, const baton_infer_bench_opts *o, baton_infer_stats *st,
                             baton_err *err)
{
    const baton_infer_info *in = baton_infer_engine_info(e);
    const size_t nin = (size_t)in->batch * in->in_c * in->in_h * in->in_w;
    const size_t nout = (size_t)in->batch * in->classes;
    float *x = aligned_alloc(64, (nin * sizeof(float) + 63) / 64 * 64);
    float *y = aligned_alloc(64, (nout * sizeof(float) + 63) / 64 * 64);
    double *lat = NULL;
    int rc = BATON_OK;
    if (!x || !y) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "benchmark: out of memory");
        goto out;
    }
    baton_rng r;
    baton_rng_seed(&r, 12345);
    for (size_t i = 0; i < nin; i++) x[i] = 2.0f * baton_rng_float(&r) - 1.0f;

    double t = baton_now();
    if ((rc = baton_infer_run(e, x, y, err))) goto out;
    st->first_ms = (baton_now() - t) * 1e3;
    t = baton_now();
    for (uint64_t i = 0; i < o->warmup; i++)
        if ((rc = baton_infer_run(e, x, y, err))) goto out;
    double per = o->warmup ? (baton_now() - t) / (double)o->warmup : st->first_ms / 1e3;
    if (per < 1e-6) per = 1e-6;
    double want = (double)o->min_queries + (o->max_seconds > 0 ? o->max_seconds : o->min_seconds) / per * 1.5 + 16;
    size_t cap = want > 2e7 ? 20000000 : (size_t)want;
    lat = malloc(cap * sizeof *lat);
    if (!lat) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "benchmark: out of memory for %zu latencies", cap);
        goto out;
    }
    size_t n = 0;
    const double start = baton_now();
    double now = start;
    while (n < cap) {
        const double t0 = baton_now();
        if ((rc = baton_infer_run(e, x, y, err))) goto out;
        now = baton_now();
        lat[n++] = now - t0;
        const double el = now - start;
        if (n >= o->min_queries && el >= o->min_seconds) break;
        if (o->max_seconds > 0 && el >= o->max_seconds) break;
    }
    st->queries = n;
    st->seconds = now - start;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += lat[i];
    qsort(lat, n, sizeof *lat, cmp_double);
    st->mean_ms = sum / (double)n * 1e3;
    st->p50_ms = baton_infer_percentile(lat, n, 0.50) * 1e3;
    st->p90_ms = baton_infer_percentile(lat, n, 0.90) * 1e3;
    st->p95_ms = baton_infer_percentile(lat, n, 0.95) * 1e3;
    st->p99_ms = baton_infer_percentile(lat, n, 0.99) * 1e3;
    st->min_ms = lat[0] * 1e3;
    st->max_ms = lat[n - 1] * 1e3;
    st->per_s = st->seconds > 0 ? (double)in->batch * (double)n / st->seconds : 0;
    st->flops = in->flops;
    st->min_bytes = in->min_bytes;
    st->kernels = in->nprims > 0 ? in->nprims : in->nlayers;
    st->gflops = st->mean_ms > 0 ? in->flops * in->batch / (st->mean_ms * 1e-3) / 1e9 : 0;
out:
    free(x);
    free(y);
    free(lat);
    return rc;
}

int baton_infer_bench_context(const char *ckpt, const baton_infer_ctx *ctx, const baton_infer_bench_opts *o,
                              double t0, double t_main, baton_infer_stats *st, baton_err *err)
{
    memset(st, 0, sizeof *st);
    st->ctx = *ctx;
    if (ctx->path == BATON_INFER_GPU && baton_infer_gpu_unavailable()) {
        snprintf(st->skipped, sizeof st->skipped, "%s", baton_infer_gpu_unavailable());
        return BATON_OK;
    }
    if (ctx->threads < 1 || ctx->batch < 1)
        return baton_err_set(err, BATON_ERR_ARG, "context: threads and batch must be >= 1");
    if (t0 <= 0) t0 = baton_now();
    baton_infer_set_threads(ctx->threads);
    baton_infer_engine *e = NULL;
    int rc = baton_infer_open(ckpt, ctx->path, ctx->batch, &e, err);
    if (rc) return rc;
    const double ready = baton_now();
    const baton_infer_info *in = baton_infer_engine_info(e);
    snprintf(st->model, sizeof st->model, "%s", in->model);
    st->cold_start_ms = (ready - t0) * 1e3;
    st->exec_ms = t_main > 0 ? (t_main - t0) * 1e3 : 0;
    st->load_ms = in->load_ms;
    st->prepare_ms = in->prepare_ms;
    rc = infer_bench_engine(e, o, st, err);
    baton_infer_close(e);
    if (!rc && o->peak) st->peak_gflops = baton_infer_peak_gflops(ctx->threads, 0.2);
    return rc;
}
