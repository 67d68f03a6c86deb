/* nn_bn_stats.h — for the inference tests (test_infer_fast.c, test_nn_fold.c): give a model's batch
 * norms non-trivial parameters and running statistics (γ in [0.5, 1.5), β in [-0.5, 0.5), mean in
 * [-0.2, 0.2), variance in [0.5, 2)), seeded, so that folding them into the convolutions matters. */
#ifndef BATON_TEST_NN_BN_STATS_H
#define BATON_TEST_NN_BN_STATS_H

#include <string.h>

#include "baton/nn.h"

static inline void randomise_bn(baton_nn_model *m, uint64_t seed)
{
    baton_rng r;
    baton_rng_seed(&r, seed);
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        baton_nn_model_tensor(m, i, &t);
        if (t.dtype != BATON_NN_F32 || t.ndim != 1) continue;
        float *d = t.data;
        const char *leaf = strrchr(t.name, '.');
        if (!leaf || (!strstr(t.name, "bn") && !strstr(t.name, "short.1"))) continue;
        for (size_t k = 0; k < t.numel; k++) {
            float u = baton_rng_float(&r);
            if (!strcmp(leaf, ".weight")) d[k] = 0.5f + u;
            else if (!strcmp(leaf, ".bias")) d[k] = u - 0.5f;
            else if (!strcmp(leaf, ".running_mean")) d[k] = 0.4f * (u - 0.5f);
            else if (!strcmp(leaf, ".running_var")) d[k] = 0.5f + 1.5f * u;
        }
    }
}

#endif
