/* test_nn_overfit.c — forward, backward and optimizer step agree end to end: lenet memorises 64
 * random images with random labels (training accuracy >= 90 % within a bounded number of full-batch
 * AdamW steps), and resnet8 with SGD + Nesterov does the same. Images are
 * 1x8x8 so the reference kernels finish in seconds under the sanitizers too. */
#include "nn_gradcheck.h"

#include <stdlib.h>

enum { N = 64, C = 1, H = 8, W = 8, CLASSES = 10 };

static float run(const char *name, const baton_nn_optim_cfg *oc, double lr, int max_steps, const float *x,
                 const int32_t *y, float *first_loss, int *steps_taken)
{
    baton_nn_spec s = {name, C, H, W, CLASSES, N, 2024};
    baton_nn_model *m = NULL;
    baton_nn_optim *o = NULL;
    baton_err err;
    CHECK(baton_nn_model_create(&s, NULL, &m, &err) == BATON_OK);
    CHECK(m && baton_nn_optim_create(oc, m, &o, &err) == BATON_OK);
    if (!m || !o) return 0;
    float loss = 0, acc = 0;
    int correct = 0, step;
    for (step = 0; step < max_steps; step++) {
        CHECK(baton_nn_train_batch(m, x, y, N, &loss, &correct, &err) == BATON_OK);
        if (step == 0) *first_loss = loss;
        acc = (float)correct / N;
        if (acc >= 0.95f) break;
        baton_nn_optim_step(o, lr, &err);
    }
    *steps_taken = step;
    printf("%s: %d steps, loss %.3f -> %.3f, training accuracy %.2f\n", name, step, *first_loss, loss, acc);
    baton_nn_optim_free(o);
    baton_nn_model_free(m);
    return acc;
}

int main(void)
{
    static float x[N * C * H * W];
    int32_t y[N];
    baton_rng r;
    baton_rng_seed(&r, 31);
    fill_uniform(&r, x, N * C * H * W, -1, 1);
    for (int i = 0; i < N; i++) y[i] = (int32_t)baton_rng_below(&r, CLASSES);
    float first;
    int steps;
    baton_nn_optim_cfg adam = {BATON_NN_ADAMW, 0, 0, 0, 0, 0, 0};
    float acc = run("lenet", &adam, 3e-3, 80, x, y, &first, &steps);
    CHECK_MSG(acc >= 0.9f, "lenet reached only %.2f", (double)acc);
    baton_nn_optim_cfg sgd = {BATON_NN_SGD, 0.9, 1, 1e-4, 0, 0, 0};
    acc = run("resnet8", &sgd, 0.05, 40, x, y, &first, &steps);
    CHECK_MSG(acc >= 0.9f, "resnet8 reached only %.2f", (double)acc);
    CHECK_DONE();
}
