/* test_infer_fast.c — the fast inference path against the reference path, on every model: random
 * weights and non-trivial batch-norm statistics (so folding matters), random inputs, batch 1 and
 * batch 3, logits equal within 1e-4 of the largest logit. Also: the fast path fuses (fewer
 * primitives than layers), a query allocates nothing new (same results twice), FLOP counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baton/infer.h"
#include "check.h"
#include "nn_bn_stats.h"

static double compare(const char *name, int c, int h, int w, int batch)
{
    baton_nn_spec spec = {.name = name, .in_c = c, .in_h = h, .in_w = w, .classes = 10, .max_batch = 1, .seed = 11};
    baton_nn_model *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_nn_model_create(&spec, NULL, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return 1e9;
    randomise_bn(m, 5);
    baton_infer_engine *ref = NULL, *fast = NULL;
    CHECK_MSG(baton_infer_from_model(m, BATON_INFER_REFERENCE, batch, &ref, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_infer_from_model(m, BATON_INFER_FAST, batch, &fast, &err) == BATON_OK, "%s: %s", name, err.msg);
    const size_t nin = (size_t)batch * c * h * w, nout = (size_t)batch * 10;
    float *x = malloc(nin * sizeof *x), *a = malloc(nout * sizeof *a), *b = malloc(nout * sizeof *b),
          *b2 = malloc(nout * sizeof *b2);
    baton_rng r;
    baton_rng_seed(&r, 99);
    for (size_t i = 0; i < nin; i++) x[i] = 2 * baton_rng_float(&r) - 1;
    double worst = 1e9;
    if (ref && fast) {
        CHECK(baton_infer_run(ref, x, a, &err) == BATON_OK);
        CHECK_MSG(baton_infer_run(fast, x, b, &err) == BATON_OK, "%s", err.msg);
        CHECK(baton_infer_run(fast, x, b2, &err) == BATON_OK);
        CHECK_MSG(memcmp(b, b2, nout * sizeof *b) == 0, "%s: the fast path is not repeatable", name);
        double amax = 0, dmax = 0;
        for (size_t i = 0; i < nout; i++) {
            if (fabs(a[i]) > amax) amax = fabs(a[i]);
            if (fabs(a[i] - b[i]) > dmax || a[i] != a[i] || b[i] != b[i]) dmax = fabs(a[i] - b[i]);
        }
        worst = dmax / (amax > 1e-6 ? amax : 1e-6);
        CHECK_MSG(worst <= 1e-4, "%s %dx%dx%d batch %d: max |fast - reference| = %g of max |logit| %g", name, c, h, w,
                  batch, dmax, amax);
        CHECK_MSG(amax > 1e-3, "%s: logits all near zero (%g): the comparison would mean nothing", name, amax);
        const baton_infer_info *fi = baton_infer_engine_info(fast);
        CHECK(fi->flops > 0 && fi->nprims > 0);
        CHECK_MSG((size_t)fi->nprims < baton_nn_model_nlayers(m), "%s: %d primitives for %zu layers: nothing fused",
                  name, fi->nprims, baton_nn_model_nlayers(m));
        printf("%-9s %dx%dx%d b=%d: %2d primitives for %2zu layers, rel. error %.2e (prepare %.0f ms)\n", name, c, h, w, batch,
               fi->nprims, baton_nn_model_nlayers(m), worst, fi->prepare_ms);
    }
    free(x);
    free(a);
    free(b);
    free(b2);
    baton_infer_close(ref);
    baton_infer_close(fast);
    baton_nn_model_free(m);
    return worst;
}

int main(void)
{
    baton_infer_set_threads(1);   /* one thread: quick on a busy machine; two below */
    static const char *const models[] = {"mlp", "lenet", "resnet8", "resnet20", "resnet56"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        compare(models[i], 1, 28, 28, 1);
        if (strcmp(models[i], "resnet56")) compare(models[i], 1, 28, 28, 3);   /* resnet56's reference is slow */
    }
    compare("resnet8", 3, 32, 32, 2);   /* several input channels, CIFAR's shape */
    compare("lenet", 3, 20, 24, 2);     /* not square */
    baton_infer_set_threads(2);          /* primitives made for two threads */
    compare("resnet8", 1, 28, 28, 2);

    /* FLOPs as the PyTorch peer counts them: lenet 1x28x28 = 2 x (conv1 + conv2 + fc1 + fc2) */
    baton_nn_spec spec = {.name = "lenet", .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10, .max_batch = 1};
    baton_nn_model *m = NULL;
    baton_err err = {0};
    CHECK(baton_nn_model_create(&spec, NULL, &m, &err) == BATON_OK);
    const double macs = 32.0 * 26 * 26 * 9 + 64.0 * 24 * 24 * 32 * 9 + 9216.0 * 128 + 128.0 * 10;
    CHECK(m && fabs(baton_infer_model_flops(m) - 2 * macs) < 0.5);
    baton_nn_model_free(m);

    /* the GPU path is refused cleanly in a build without CUDA */
    baton_infer_engine *e = NULL;
    if (baton_infer_gpu_unavailable()) {
        CHECK(baton_infer_open("/nonexistent", BATON_INFER_GPU, 1, &e, &err) == BATON_ERR_ARG);
        CHECK(strstr(err.msg, "no CUDA build") != NULL);
    }
    CHECK(baton_infer_open("/nonexistent/ckpt", BATON_INFER_FAST, 1, &e, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "/nonexistent/ckpt") != NULL);
    CHECK_DONE();
}
