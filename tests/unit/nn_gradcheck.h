/* nn_gradcheck.h — shared helpers for the nn unit tests: random fills and a central
 * finite-difference check of an analytic gradient against a scalar loss computed in double. */
#ifndef BATON_NN_GRADCHECK_H
#define BATON_NN_GRADCHECK_H

#include "baton/nn.h"
#include "check.h"

#include <math.h>

static inline void fill_uniform(baton_rng *r, float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * baton_rng_float(r);
}

/* loss(ctx) is recomputed from scratch each call; var[idx] is perturbed by +-eps. Returns the
 * number of mismatches among the checked entries (every entry when n <= max_checks, else
 * max_checks entries picked by rng). */
typedef double (*gc_loss_fn)(void *ctx);

static inline int gradcheck(const char *what, gc_loss_fn loss, void *ctx, float *var, const float *analytic, size_t n,
                     float eps, double atol, double rtol, size_t max_checks, baton_rng *rng)
{
    int bad = 0;
    size_t checks = n <= max_checks ? n : max_checks;
    for (size_t c = 0; c < checks; c++) {
        size_t i = n <= max_checks ? c : (size_t)baton_rng_below(rng, n);
        float v = var[i];
        var[i] = v + eps;
        double lp = loss(ctx);
        var[i] = v - eps;
        double lm = loss(ctx);
        var[i] = v;
        double num = (lp - lm) / (2.0 * (double)eps), an = analytic[i];
        double tol = atol + rtol * fmax(fabs(num), fabs(an));
        if (!(fabs(num - an) <= tol)) {
            if (bad < 5)
                fprintf(stderr, "%s[%zu]: numeric %.6g analytic %.6g\n", what, i, num, an);
            bad++;
        }
    }
    return bad;
}

/* Tensor i of model m against the same tensor of ref (two models of one spec): the sums of
 * squares of the gradients' difference (*d2) and of ref's gradient (*r2), and its name; 0 when the
 * tensor has no gradient. */
static inline int grad_diff2(const baton_nn_model *m, const baton_nn_model *ref, size_t i, double *d2, double *r2,
                             const char **name)
{
    baton_nn_tensor tr, tm;
    baton_nn_model_tensor(ref, i, &tr);
    baton_nn_model_tensor(m, i, &tm);
    if (!tr.grad) return 0;
    *d2 = *r2 = 0;
    for (size_t j = 0; j < tr.numel; j++) {
        const double d = (double)tm.grad[j] - tr.grad[j];
        *d2 += d * d, *r2 += (double)tr.grad[j] * tr.grad[j];
    }
    *name = tr.name;
    return 1;
}

#endif
