/* test_nn_optim.c — optimizers and schedules: SGD (plain, momentum, Nesterov, weight decay) and
 * AdamW steps against values computed by hand and against an independent double-precision
 * transcription of PyTorch's update rules; state tensor names; bad configurations; learning-rate
 * schedules at known steps. */
#include "nn_gradcheck.h"

#include <stdlib.h>

static baton_nn_model *tiny(void)
{
    /* mlp on 1x1x2 images, 2 classes: fc1.weight [256,2], fc1.bias, fc2.weight [2,256], fc2.bias */
    baton_nn_spec s = {"mlp", 1, 1, 2, 2, 1, 5};
    baton_nn_model *m = NULL;
    baton_err err;
    CHECK(baton_nn_model_create(&s, NULL, &m, &err) == BATON_OK);
    return m;
}

static void set_param(baton_nn_model *m, float p, float g)
{
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        baton_nn_model_tensor(m, i, &t);
        for (size_t j = 0; j < t.numel; j++) ((float *)t.data)[j] = p, t.grad[j] = g;
    }
}

static float first_param(baton_nn_model *m)
{
    baton_nn_tensor t;
    baton_nn_model_tensor(m, 0, &t);
    return ((float *)t.data)[0];
}

static void test_sgd_hand(void)
{
    baton_nn_model *m = tiny();
    if (!m) return;
    baton_err err;
    baton_nn_optim *o;
    /* momentum 0.9, wd 0.01, lr 0.1, p = 1, g = 0.5:
     * step 1: d = 0.51, buf = 0.51, p = 0.949; step 2: d = 0.50949, buf = 0.96849, p = 0.852151 */
    baton_nn_optim_cfg c = {BATON_NN_SGD, 0.9f, 0, 0.01f, 0, 0, 0};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_OK);
    set_param(m, 1.0f, 0.5f);
    baton_nn_optim_step(o, 0.1, &err);
    CHECK(fabsf(first_param(m) - 0.949f) < 1e-6f);
    baton_nn_optim_step(o, 0.1, &err);
    CHECK(fabsf(first_param(m) - 0.852151f) < 1e-6f);
    CHECK_EQ_U(baton_nn_optim_steps(o), 2);
    CHECK_EQ_U(baton_nn_optim_ntensors(o), 4);
    baton_nn_tensor t;
    CHECK(baton_nn_optim_tensor(o, 1, &t) == BATON_OK && strcmp(t.name, "fc1.bias.momentum_buffer") == 0);
    CHECK(fabsf(((float *)t.data)[0] - 0.96849f) < 1e-6f && t.numel == 256);
    CHECK(baton_nn_optim_tensor(o, 4, &t) == BATON_ERR_ARG);
    baton_nn_optim_free(o);
    /* Nesterov: step 1: d = 0.51 + 0.9 * 0.51 = 0.969, p = 0.9031 */
    c.nesterov = 1;
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_OK);
    set_param(m, 1.0f, 0.5f);
    baton_nn_optim_step(o, 0.1, &err);
    CHECK(fabsf(first_param(m) - 0.9031f) < 1e-6f);
    baton_nn_optim_free(o);
    /* plain SGD keeps no state */
    baton_nn_optim_cfg plain = {BATON_NN_SGD, 0, 0, 0, 0, 0, 0};
    CHECK(baton_nn_optim_create(&plain, m, &o, &err) == BATON_OK);
    set_param(m, 1.0f, 0.5f);
    baton_nn_optim_step(o, 0.2, &err);
    CHECK(first_param(m) == 0.9f);
    CHECK_EQ_U(baton_nn_optim_ntensors(o), 0);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
}

static void test_adamw_hand(void)
{
    baton_nn_model *m = tiny();
    if (!m) return;
    baton_err err;
    baton_nn_optim *o;
    /* lr 0.1, wd 0.01, p = 1, g = 0.5: decay first (p *= 0.999), then, since the gradient is
     * constant, the bias-corrected m / sqrt(v) is 1 and each step moves p by lr:
     * step 1 -> 0.999 - 0.1 = 0.899, step 2 -> 0.899 * 0.999 - 0.1 = 0.798101 */
    baton_nn_optim_cfg c = {BATON_NN_ADAMW, 0, 0, 0.01f, 0, 0, 0};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_OK);
    set_param(m, 1.0f, 0.5f);
    baton_nn_optim_step(o, 0.1, &err);
    CHECK(fabsf(first_param(m) - 0.899f) < 1e-6f);
    baton_nn_optim_step(o, 0.1, &err);
    CHECK(fabsf(first_param(m) - 0.798101f) < 1e-6f);
    baton_nn_tensor t;
    CHECK(baton_nn_optim_tensor(o, 0, &t) == BATON_OK && strcmp(t.name, "fc1.weight.exp_avg") == 0);
    CHECK(fabsf(((float *)t.data)[0] - 0.095f) < 1e-7f);
    CHECK(baton_nn_optim_tensor(o, 1, &t) == BATON_OK && strcmp(t.name, "fc1.weight.exp_avg_sq") == 0);
    CHECK_MSG(fabsf(((float *)t.data)[0] - 0.00049975f) < 1e-5f * 0.00049975f, "v %.9g", (double)((float *)t.data)[0]);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
}

/* random parameters and gradients over several steps against a double transcription */
static void test_against_double(int kind, int nesterov)
{
    baton_nn_model *m = tiny();
    if (!m) return;
    baton_err err;
    baton_nn_optim *o;
    baton_nn_optim_cfg c = {kind, 0.8f, nesterov, 0.05f, 0.85f, 0.99f, 1e-6f};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_OK);
    baton_nn_tensor t;
    baton_nn_model_tensor(m, 2, &t);   /* fc2.weight */
    float *p = t.data, *g = t.grad;
    enum { N = 512 };
    double P[N], B[N] = {0}, V[N] = {0};
    baton_rng r;
    baton_rng_seed(&r, 8);
    for (int i = 0; i < N; i++) P[i] = p[i];
    double worst = 0;
    for (int step = 1; step <= 5; step++) {
        double lr = 0.05 * step;
        fill_uniform(&r, g, N, -1, 1);
        for (size_t k = 0; k < baton_nn_model_ntensors(m); k++) {
            baton_nn_tensor u;
            baton_nn_model_tensor(m, k, &u);
            if (k != 2) memset(u.grad, 0, u.numel * sizeof(float));
        }
        baton_nn_optim_step(o, lr, &err);
        for (int i = 0; i < N; i++) {
            double gi = g[i];
            if (kind == BATON_NN_SGD) {
                double d = gi + 0.05 * P[i];
                B[i] = step == 1 ? d : 0.8 * B[i] + d;
                d = nesterov ? d + 0.8 * B[i] : B[i];
                P[i] -= lr * d;
            } else {
                P[i] *= 1 - lr * 0.05;
                B[i] = 0.85 * B[i] + 0.15 * gi;
                V[i] = 0.99 * V[i] + 0.01 * gi * gi;
                double mh = B[i] / (1 - pow(0.85, step));
                double den = sqrt(V[i]) / sqrt(1 - pow(0.99, step)) + 1e-6;
                P[i] -= lr * mh / den;
            }
            worst = fmax(worst, fabs(P[i] - p[i]));
        }
    }
    CHECK_MSG(worst < 2e-5, "kind %d nesterov %d: worst difference %g", kind, nesterov, worst);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
}

static void test_bad_cfg(void)
{
    baton_nn_model *m = tiny();
    if (!m) return;
    baton_err err;
    baton_nn_optim *o = NULL;
    baton_nn_optim_cfg c = {BATON_NN_SGD, 0, 1, 0, 0, 0, 0};   /* nesterov without momentum */
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_ERR_ARG && o == NULL);
    c = (baton_nn_optim_cfg){BATON_NN_SGD, 1.5f, 0, 0, 0, 0, 0};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_ERR_ARG);
    c = (baton_nn_optim_cfg){BATON_NN_ADAMW, 0, 0, -1, 0, 0, 0};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_ERR_ARG);
    c = (baton_nn_optim_cfg){7, 0, 0, 0, 0, 0, 0};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_ERR_ARG);
    c = (baton_nn_optim_cfg){BATON_NN_ADAMW, 0, 0, 0, 0, 0, 0};
    CHECK(baton_nn_optim_create(&c, m, &o, &err) == BATON_OK);
    CHECK(baton_nn_optim_step(o, NAN, &err) == BATON_ERR_ARG && strstr(err.msg, "mlp") != NULL);
    CHECK(baton_nn_optim_step(o, -1, &err) == BATON_ERR_ARG);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
}

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(1, fabs(b)); }

static void test_sched(void)
{
    baton_err err;
    baton_nn_sched s = {BATON_NN_SCHED_STEP, 0.1, 10, 0.1, 0, 0};
    CHECK(baton_nn_sched_check(&s, &err) == BATON_OK);
    CHECK(near(baton_nn_sched_lr(&s, 0), 0.1) && near(baton_nn_sched_lr(&s, 9), 0.1));
    CHECK(near(baton_nn_sched_lr(&s, 10), 0.01) && near(baton_nn_sched_lr(&s, 25), 0.001));
    s = (baton_nn_sched){BATON_NN_SCHED_COSINE, 0.2, 0, 0, 100, 0};
    CHECK(near(baton_nn_sched_lr(&s, 0), 0.2) && near(baton_nn_sched_lr(&s, 50), 0.1));
    CHECK(near(baton_nn_sched_lr(&s, 25), 0.1 * (1 + sqrt(0.5))));
    CHECK(fabs(baton_nn_sched_lr(&s, 100)) < 1e-15 && fabs(baton_nn_sched_lr(&s, 1000)) < 1e-15);
    s.warmup_steps = 5;   /* warm-up multiplies the main schedule by (step+1)/5 */
    CHECK(near(baton_nn_sched_lr(&s, 0), 0.2 * 0.5 * (1 + cos(0)) / 5));
    CHECK(near(baton_nn_sched_lr(&s, 4), 0.1 * (1 + cos(M_PI * 4 / 100))));
    CHECK(near(baton_nn_sched_lr(&s, 5), 0.1 * (1 + cos(M_PI * 5 / 100))));
    s = (baton_nn_sched){BATON_NN_SCHED_CONST, 0.05, 0, 0, 0, 10};
    CHECK(near(baton_nn_sched_lr(&s, 1), 0.01) && near(baton_nn_sched_lr(&s, 10), 0.05));
    /* resuming: the value at a step does not depend on what was asked before */
    CHECK(baton_nn_sched_lr(&s, 7) == baton_nn_sched_lr(&s, 7));
    s = (baton_nn_sched){BATON_NN_SCHED_STEP, 0.1, 0, 0.1, 0, 0};
    CHECK(baton_nn_sched_check(&s, &err) == BATON_ERR_ARG);
    s = (baton_nn_sched){BATON_NN_SCHED_COSINE, 0.1, 0, 0, 0, 0};
    CHECK(baton_nn_sched_check(&s, &err) == BATON_ERR_ARG);
    s = (baton_nn_sched){9, 0.1, 0, 0, 0, 0};
    CHECK(baton_nn_sched_check(&s, &err) == BATON_ERR_ARG);
    s = (baton_nn_sched){BATON_NN_SCHED_CONST, -1, 0, 0, 0, 0};
    CHECK(baton_nn_sched_check(&s, &err) == BATON_ERR_ARG);
}

int main(void)
{
    test_sgd_hand();
    test_adamw_hand();
    test_against_double(BATON_NN_SGD, 0);
    test_against_double(BATON_NN_SGD, 1);
    test_against_double(BATON_NN_ADAMW, 0);
    test_bad_cfg();
    test_sched();
    CHECK_DONE();
}
