/* test_nn_fold.c — the folded inference plan three ways on every model of the zoo: the model's own
 * evaluation forward on the reference kernels (nothing folded: the independent baseline), the
 * folded op list run on the reference table (fold_table.c: the plain reference of the folding),
 * the same op list on the oneDNN table, and the compiled plan (fold_dnnl.c: the fast path). Random
 * weights and non-trivial batch-norm statistics (so folding matters), random inputs; logits equal
 * within 1e-4 of the largest logit (the folding's own rounding is far below: 1e-5 is asked of the
 * folded reference). The op list on the reference table repeats bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/nn/nn_internal.h"
#include "check.h"
#include "nn_bn_stats.h"

/* max |a - b| over max |a| (a the baseline) */
static double rel(const float *a, const float *b, size_t n, double *amax)
{
    double dmax = 0;
    *amax = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(a[i]) > *amax) *amax = fabs(a[i]);
        if (!(fabs(a[i] - b[i]) <= dmax)) dmax = fabs(a[i] - b[i]);   /* a NaN makes it NaN */
    }
    return dmax / (*amax > 1e-6 ? *amax : 1e-6);
}

static void compare(const char *name, int c, int h, int w, int batch)
{
    baton_nn_spec spec = {.name = name, .in_c = c, .in_h = h, .in_w = w, .classes = 10, .max_batch = batch, .seed = 11};
    baton_nn_model *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_nn_model_create(&spec, baton_nn_kernels_reference(), &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    randomise_bn(m, 5);
    baton_nn_model_set_training(m, 0);
    const size_t nin = (size_t)batch * c * h * w, nout = (size_t)batch * 10;
    float *x = malloc(nin * sizeof *x), *base = malloc(nout * sizeof *base), *fr = malloc(nout * sizeof *fr),
          *fr2 = malloc(nout * sizeof *fr2), *fd = malloc(nout * sizeof *fd), *fc = malloc(nout * sizeof *fc);
    baton_rng r;
    baton_rng_seed(&r, 99);
    for (size_t i = 0; i < nin; i++) x[i] = 2 * baton_rng_float(&r) - 1;
    CHECK_MSG(baton_nn_forward(m, x, batch, &err) == BATON_OK, "%s", err.msg);
    memcpy(base, baton_nn_logits(m), nout * sizeof *base);

    nn_fold_exec *er = NULL, *ed = NULL;
    baton_nn_infer_plan *plan = NULL;
    const baton_nn_kernels *D = baton_nn_kernels_dnnl(&err);
    CHECK_MSG(nn_fold_exec_create(m, baton_nn_kernels_reference(), batch, &er, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(D && nn_fold_exec_create(m, D, batch, &ed, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_nn_infer_plan_create(m, batch, BATON_NN_PRECISION_F32, &plan, &err) == BATON_OK, "%s: %s", name, err.msg);
    if (er && ed && plan) {
        nn_fold_exec_run(er, x, fr);
        nn_fold_exec_run(er, x, fr2);
        nn_fold_exec_run(ed, x, fd);
        CHECK(baton_nn_infer_plan_run(plan, x, fc, &err) == BATON_OK);
        CHECK_MSG(memcmp(fr, fr2, nout * sizeof *fr) == 0, "%s: the folded reference does not repeat", name);
        double amax, e_ref = rel(base, fr, nout, &amax), e_dnnl = rel(fr, fd, nout, &amax),
                     e_comp = rel(fr, fc, nout, &amax);
        CHECK_MSG(amax > 1e-3, "%s: logits all near zero (%g): the comparison would mean nothing", name, amax);
        CHECK_MSG(e_ref <= 1e-5, "%s b=%d: folded reference against the model's forward: %g", name, batch, e_ref);
        CHECK_MSG(e_dnnl <= 1e-4, "%s b=%d: op list on oneDNN's table against the folded reference: %g", name, batch,
                  e_dnnl);
        CHECK_MSG(e_comp <= 1e-4, "%s b=%d: compiled plan against the folded reference: %g", name, batch, e_comp);
        CHECK_MSG(nn_fold_exec_nops(er) < (int)baton_nn_model_nlayers(m) || !strcmp(name, "mlp"),
                  "%s: %d ops for %zu layers: nothing folded", name, nn_fold_exec_nops(er), baton_nn_model_nlayers(m));
        printf("%-9s %dx%dx%d b=%d: %2d ops for %2zu layers; folded reference vs forward %.1e, op list on oneDNN %.1e, "
               "compiled %.1e\n", name, c, h, w, batch, nn_fold_exec_nops(er), baton_nn_model_nlayers(m), e_ref, e_dnnl,
               e_comp);
    }
    nn_fold_exec_free(er);
    nn_fold_exec_free(ed);
    baton_nn_infer_plan_free(plan);
    free(x);
    free(base);
    free(fr);
    free(fr2);
    free(fd);
    free(fc);
    baton_nn_model_free(m);
}

int main(void)
{
    baton_nn_set_threads(1);
    static const char *const models[] = {"mlp", "lenet", "resnet8", "resnet20"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        compare(models[i], 1, 28, 28, 1);
        compare(models[i], 1, 28, 28, 3);
    }
    compare("resnet8", 3, 32, 32, 2);     /* several input channels, CIFAR's shape */
    compare("lenet", 3, 20, 24, 2);       /* not square */
    compare("race_cnn", 1, 120, 160, 2);  /* DeepRacer's shallow network on the camera frame */
    CHECK_DONE();
}
