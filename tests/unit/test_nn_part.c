/* test_nn_part.c — what data parallelism needs from a model: (1) the gradients of a batch's parts,
 * each with its loss over the whole batch's size (baton_nn_loss_part), add up to the whole
 * batch's gradient; (2) backward's progress (baton_nn_model_on_grad_ready) only ever reports a
 * region of the gradient arena whose values are already final, with `from` never increasing, for
 * plain and fused plans (resnet8: batch norm, residual adds, shortcuts) on both kernel tables;
 * (3) every parameter's grad lies inside the arena baton_nn_model_grads gives; (4) synchronised
 * batch norm (baton_nn_model_set_bn_sync): two parts of a batch trained in two threads whose sums
 * meet through a barrier give the whole batch's gradient and running statistics (resnet8, both
 * tables: NCHW and blocked layouts, and the bfloat16 table's channels-last where the CPU has it),
 * also when one part is empty (baton_nn_bn_sync_idle); with local statistics the same parts do
 * not. */
#include "check.h"
#include "baton/nn.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#define N 8

static baton_nn_model *make(const char *name, const baton_nn_kernels *k, int c, int hw, int classes)
{
    baton_nn_spec s = {name, c, hw, hw, classes, N, 3};
    baton_nn_model *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_nn_model_create(&s, k, &m, &err) == BATON_OK, "%s: %s", name, err.msg);
    if (m) baton_nn_model_set_training(m, 1);
    return m;
}

static void fill(float *x, size_t n, int32_t *y, int classes)
{
    baton_rng r;
    baton_rng_seed(&r, 11);
    for (size_t i = 0; i < n; i++) x[i] = baton_rng_float(&r) * 2 - 1;
    for (int i = 0; i < N; i++) y[i] = i % classes;
}

/* the sum of the two halves' gradients (loss over N) against the whole batch's */
static void test_parts_sum(const char *name, const baton_nn_kernels *k, int c, int hw, int classes)
{
    baton_nn_model *m = make(name, k, c, hw, classes);
    if (!m) return;
    size_t per = (size_t)c * hw * hw, len = 0;
    float *x = malloc(sizeof(float) * per * N);
    int32_t y[N];
    fill(x, per * N, y, classes);
    float *g = baton_nn_model_grads(m, &len), loss;
    int correct;
    baton_err err = {0};
    CHECK(baton_nn_train_batch(m, x, y, N, &loss, &correct, &err) == BATON_OK);
    float *whole = malloc(sizeof(float) * len), *sum = calloc(len, sizeof(float));
    memcpy(whole, g, sizeof(float) * len);
    for (int half = 0; half < 2; half++) {
        CHECK(baton_nn_forward(m, x + (size_t)half * (N / 2) * per, N / 2, &err) == BATON_OK);
        CHECK(baton_nn_loss_part(m, y + half * (N / 2), N, &loss, &correct, &err) == BATON_OK);
        CHECK(baton_nn_backward(m, &err) == BATON_OK);
        for (size_t i = 0; i < len; i++) sum[i] += g[i];
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < len; i++) {
        num += (double)(sum[i] - whole[i]) * (sum[i] - whole[i]);
        den += (double)whole[i] * whole[i];
    }
    CHECK_MSG(den > 0 && sqrt(num / den) < 1e-5, "%s/%s: parts' gradients differ from the whole's by %.3g", name,
              k ? k->name : "reference", sqrt(num / den));
    CHECK(baton_nn_loss_part(m, y, 1, &loss, &correct, &err) == BATON_ERR_ARG);   /* a part beyond the whole */
    free(whole), free(sum), free(x);
    baton_nn_model_free(m);
}

typedef struct seen {
    const float *g;
    size_t len, calls, last_from;
    int increased;
    float *snap;             /* the arena as each call saw it, where that call said it was final */
    size_t *from;
} seen;

static void on_ready(void *ctx, size_t from)
{
    seen *s = ctx;
    if (from > s->last_from) s->increased = 1;
    s->last_from = from;
    if (s->calls < 64) {
        s->from[s->calls] = from;
        memcpy(s->snap + s->calls * s->len + from, s->g + from, (s->len - from) * sizeof(float));
    }
    s->calls++;
}

static void test_ready(const char *name, const baton_nn_kernels *k, int c, int hw, int classes)
{
    baton_nn_model *m = make(name, k, c, hw, classes);
    if (!m) return;
    size_t per = (size_t)c * hw * hw;
    float *x = malloc(sizeof(float) * per * N);
    int32_t y[N];
    fill(x, per * N, y, classes);
    seen s = {0};
    s.g = baton_nn_model_grads(m, &s.len);
    s.last_from = s.len;
    s.snap = calloc(64 * s.len, sizeof(float));
    s.from = calloc(64, sizeof(size_t));
    baton_err err = {0};
    CHECK(baton_nn_model_on_grad_ready(m, on_ready, &s, &err) == BATON_OK);
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {   /* every grad inside the arena */
        baton_nn_tensor t;
        baton_nn_model_tensor(m, i, &t);
        if (t.kind == BATON_NN_PARAM) CHECK(t.grad >= s.g && t.grad + t.numel <= s.g + s.len);
    }
    float loss;
    int correct;
    /* twice: the second pass must report finals of its own backward, not the first one's */
    for (int pass = 0; pass < 2; pass++) {
        s.calls = 0;
        s.last_from = s.len;
        s.increased = 0;
        if (pass) x[0] += 0.5f;
        CHECK(baton_nn_train_batch(m, x, y, N, &loss, &correct, &err) == BATON_OK);
        CHECK_MSG(s.calls > 1 && s.calls <= 64 && !s.increased, "%s: %zu calls, from increased %d", name, s.calls,
                  s.increased);
        size_t bad = 0, early = s.len;
        for (size_t c2 = 0; c2 < s.calls && c2 < 64; c2++) {
            if (s.from[c2] < early) early = s.from[c2];
            bad += memcmp(s.snap + c2 * s.len + s.from[c2], s.g + s.from[c2], (s.len - s.from[c2]) * sizeof(float)) != 0;
        }
        CHECK_MSG(bad == 0, "%s/%s: %zu reports of a region that changed afterwards", name, k ? k->name : "reference",
                  bad);
        CHECK_MSG(early < s.len / 2, "%s: the reports never reached below %zu of %zu (no overlap)", name, early, s.len);
    }
    CHECK(baton_nn_model_on_grad_ready(m, NULL, NULL, &err) == BATON_OK);
    free(s.snap), free(s.from), free(x);
    baton_nn_model_free(m);
}

/* ---- synchronised batch norm: two parts in two threads, their sums meeting at a barrier */
typedef struct meet {
    pthread_barrier_t bar;
    double v[2][1 + 2 * 64];
    int calls;
} meet;

typedef struct part {
    meet *mt;
    int rank, n, sync;
    baton_nn_model *m;
    const float *x;
    const int32_t *y;
    int rc;
} part;

static int meet_sum(double *v, int n, void *ctx, baton_err *err)
{
    part *p = ctx;
    meet *mt = p->mt;
    if (n > 1 + 2 * 64) return baton_err_set(err, BATON_ERR_ARG, "%d values", n);
    memcpy(mt->v[p->rank], v, sizeof(double) * (size_t)n);
    pthread_barrier_wait(&mt->bar);
    for (int i = 0; i < n; i++) v[i] = mt->v[0][i] + mt->v[1][i];   /* the same order on both */
    if (p->rank == 0) mt->calls++;
    pthread_barrier_wait(&mt->bar);
    return BATON_OK;
}

static void *run_part(void *arg)
{
    part *p = arg;
    baton_err err = {0};
    float loss;
    int correct;
    if (p->n == 0) {
        p->rc = baton_nn_bn_sync_idle(p->m, &err);
        return NULL;
    }
    p->rc = baton_nn_forward(p->m, p->x, p->n, &err);
    if (!p->rc) p->rc = baton_nn_loss_part(p->m, p->y, N, &loss, &correct, &err);
    if (!p->rc) p->rc = baton_nn_backward(p->m, &err);
    return NULL;
}

static double rel(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) num += (double)(a[i] - b[i]) * (a[i] - b[i]), den += (double)b[i] * b[i];
    return den > 0 ? sqrt(num / den) : INFINITY;
}

/* the running statistics of every batch norm, concatenated */
static size_t running(baton_nn_model *m, float *out)
{
    size_t k = 0;
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        baton_nn_model_tensor(m, i, &t);
        if (t.kind == BATON_NN_BUFFER && t.dtype == BATON_NN_F32)
            for (size_t j = 0; j < t.numel; j++) out[k++] = ((const float *)t.data)[j];
    }
    return k;
}

/* parts of n0 and N - n0 images (positions interleaved as data parallelism splits a batch) */
static double sync_parts(const baton_nn_kernels *k, int n0, int sync, const float *x, const int32_t *y,
                         const float *whole, const float *whole_run, double *run_rel)
{
    const size_t per = 3 * 8 * 8;
    meet mt = {0};
    pthread_barrier_init(&mt.bar, NULL, 2);
    part p[2];
    float *px[2];
    int32_t py[2][N];
    baton_err err = {0};
    for (int r = 0; r < 2; r++) {
        p[r] = (part){.mt = &mt, .rank = r, .n = r ? N - n0 : n0, .sync = sync, .m = make("resnet8", k, 3, 8, 10)};
        px[r] = malloc(sizeof(float) * per * N);
        if (sync) CHECK(baton_nn_model_set_bn_sync(p[r].m, meet_sum, &p[r], &err) == BATON_OK);
    }
    for (int i = 0, c[2] = {0, 0}; i < N; i++) {   /* n0 = N/2: positions 0, 2, .. and 1, 3, ..; else a prefix */
        const int r = n0 == N / 2 ? i % 2 : i >= n0;
        memcpy(px[r] + (size_t)c[r] * per, x + (size_t)i * per, sizeof(float) * per);
        py[r][c[r]++] = y[i];
    }
    pthread_t th[2];
    for (int r = 0; r < 2; r++) {
        p[r].x = px[r], p[r].y = py[r];
        pthread_create(&th[r], NULL, run_part, &p[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    CHECK(p[0].rc == BATON_OK && p[1].rc == BATON_OK);
    size_t len;
    const float *g0 = baton_nn_model_grads(p[0].m, &len), *g1 = baton_nn_model_grads(p[1].m, &len);
    float *sum = malloc(sizeof(float) * len), *r0 = malloc(sizeof(float) * 4096), *r1 = malloc(sizeof(float) * 4096);
    for (size_t i = 0; i < len; i++) sum[i] = (p[0].n ? g0[i] : 0) + (p[1].n ? g1[i] : 0);
    double d = rel(sum, whole, len);
    size_t nr = running(p[0].m, r0);
    CHECK(running(p[1].m, r1) == nr && nr > 0 && nr <= 4096);
    if (sync) CHECK_MSG(memcmp(r0, r1, nr * sizeof(float)) == 0, "the parts' running statistics differ");
    *run_rel = rel(r0, whole_run, nr);
    if (sync) CHECK_MSG(mt.calls == 3 * 9, "%d sums (resnet8's 9 batch norms: 3 each)", mt.calls);
    for (int r = 0; r < 2; r++) baton_nn_model_free(p[r].m), free(px[r]);
    free(sum), free(r0), free(r1);
    pthread_barrier_destroy(&mt.bar);
    return d;
}

static void test_sync_bn(const baton_nn_kernels *k)
{
    const size_t per = 3 * 8 * 8;
    float *x = malloc(sizeof(float) * per * N), loss, *whole_run = malloc(sizeof(float) * 4096);
    int32_t y[N];
    int correct;
    fill(x, per * N, y, 10);
    baton_nn_model *m = make("resnet8", k, 3, 8, 10);
    baton_err err = {0};
    CHECK(baton_nn_train_batch(m, x, y, N, &loss, &correct, &err) == BATON_OK);
    size_t len;
    float *g = baton_nn_model_grads(m, &len), *whole = malloc(sizeof(float) * len);
    memcpy(whole, g, sizeof(float) * len);
    running(m, whole_run);
    double rr, d;
    const char *tn = k->name;
    /* the gradient's tolerance: float32 tables 1e-5 (the synchronised sums are double, the fused
     * batch norm's float: rounding apart); the bfloat16 table 1e-3 — the same rounding differences
     * in a batch norm's output flip the bfloat16 rounding (8 bits) of some inputs of the next
     * convolution, each 2^-8 of its value (measured: 1.1e-4 for 4 + 4 and for 8 + 0 alike, so
     * the parts add nothing; 6e-6 since the convolutions' outputs are bfloat16 on both sides;
     * local statistics instead give 0.7) */
    const double tol = k->weights_bf16 ? 1e-3 : 1e-5;
    d = sync_parts(k, N / 2, 1, x, y, whole, whole_run, &rr);
    printf("%s: sync-bn, 4 + 4 images against 8: gradient %.3g, running statistics %.3g (L2, relative)\n", tn, d, rr);
    CHECK_MSG(d < tol && rr < 1e-6, "%s: sync-bn parts against the whole: %.3g, %.3g", tn, d, rr);
    d = sync_parts(k, N, 1, x, y, whole, whole_run, &rr);
    CHECK_MSG(d < tol && rr < 1e-6, "%s: sync-bn, 8 + 0 (idle) against the whole: %.3g, %.3g", tn, d, rr);
    d = sync_parts(k, N / 2, 0, x, y, whole, whole_run, &rr);
    printf("%s: local statistics, 4 + 4 images against 8: gradient %.3g\n", tn, d);
    CHECK_MSG(d > 1e-3, "%s: local batch norm statistics should change the gradient (%.3g)", tn, d);
    /* off again: the fused plan's second pass, bit for bit (a model never synchronised, twice) */
    CHECK(baton_nn_model_set_bn_sync(m, meet_sum, NULL, &err) == BATON_OK);
    CHECK(baton_nn_model_set_bn_sync(m, NULL, NULL, &err) == BATON_OK);
    CHECK(baton_nn_train_batch(m, x, y, N, &loss, &correct, &err) == BATON_OK);
    baton_nn_model *m2 = make("resnet8", k, 3, 8, 10);
    for (int pass = 0; pass < 2; pass++) CHECK(baton_nn_train_batch(m2, x, y, N, &loss, &correct, &err) == BATON_OK);
    CHECK_MSG(memcmp(g, baton_nn_model_grads(m2, &len), sizeof(float) * len) == 0, "%s: unsynchronised again", tn);
    baton_nn_model_free(m2);
    free(whole), free(whole_run), free(x);
    baton_nn_model_free(m);
}

int main(void)
{
    baton_err err = {0};
    const baton_nn_kernels *tables[2] = {baton_nn_kernels_reference(), baton_nn_kernels_dnnl(&err)};
    for (int t = 0; t < 2; t++) {
        if (!tables[t]) continue;
        test_parts_sum("lenet", tables[t], 1, 12, 10);
        test_ready("lenet", tables[t], 1, 12, 10);
        test_ready("resnet8", tables[t], 3, 8, 10);
        test_ready("mlp", tables[t], 1, 8, 4);
        test_sync_bn(tables[t]);
    }
    /* the bfloat16 table keeps activations channels-last: the synchronised sums read that layout */
    const baton_nn_kernels *bf = baton_nn_kernels_dnnl_bf16(&err);
    if (bf) test_sync_bn(bf);
    else printf("no bfloat16 table here (%s): sync-bn on channels-last activations not run\n", err.msg);
    CHECK_DONE();
}
