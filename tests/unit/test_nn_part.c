/* test_nn_part.c — what data parallelism needs from a model: (1) the gradients of a batch's parts,
 * each with its loss over the whole batch's size (baton_nn_loss_part), add up to the whole
 * batch's gradient; (2) backward's progress (baton_nn_model_on_grad_ready) only ever reports a
 * region of the gradient arena whose values are already final, with `from` never increasing, for
 * plain and fused plans (resnet8: batch norm, residual adds, shortcuts) on both kernel tables;
 * (3) every parameter's grad lies inside the arena baton_nn_model_grads gives. */
#include "check.h"
#include "baton/nn.h"

#include <math.h>
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
    }
    CHECK_DONE();
}
