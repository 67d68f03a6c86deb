/* nn_optim.h — the native training engine's optimizers (SGD, AdamW: PyTorch's update rules) and
 * learning-rate schedules (part of nn.h, which includes it; src/nn/optim.c, sched.c).
 *
 * Contract: as nn.h's. */
#ifndef BATON_NN_OPTIM_H
#define BATON_NN_OPTIM_H

#include "baton/nn.h"

/* ---------------------------------------------------------------------------------------------
 * Optimizers (PyTorch's update rules, float32 state)
 *   SGD:   d = g + wd*p; buf = d on the first step, else momentum*buf + d;
 *          d = nesterov ? d + momentum*buf : buf; p -= lr*d          (momentum 0: p -= lr*d)
 *   AdamW: p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
 *          p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
 * --------------------------------------------------------------------------------------------- */
enum { BATON_NN_SGD = 0, BATON_NN_ADAMW = 1 };

typedef struct baton_nn_optim_cfg {
    int kind;                /* BATON_NN_SGD or BATON_NN_ADAMW */
    /* hyper-parameters are doubles, as PyTorch's Python floats: derived scalars such as 1 - beta2
     * are formed in double and rounded to float once, where PyTorch does */
    double momentum;         /* SGD */
    int nesterov;            /* SGD; needs momentum > 0 */
    double weight_decay;     /* both (AdamW: decoupled) */
    double beta1, beta2, eps;/* AdamW; 0 means PyTorch's defaults 0.9, 0.999, 1e-8 */
} baton_nn_optim_cfg;

typedef struct baton_nn_optim baton_nn_optim;

int baton_nn_optim_create(const baton_nn_optim_cfg *cfg, baton_nn_model *m, baton_nn_optim **out,
                          baton_err *err);
void baton_nn_optim_free(baton_nn_optim *o);
/* One update of every parameter from its grad, at learning rate lr. */
int baton_nn_optim_step(baton_nn_optim *o, double lr, baton_err *err);
uint64_t baton_nn_optim_steps(const baton_nn_optim *o);   /* updates done (AdamW's t) */
void baton_nn_optim_set_steps(baton_nn_optim *o, uint64_t steps);   /* on resume */
/* State tensors, named "<param>.momentum_buffer" (SGD with momentum) or "<param>.exp_avg" and
 * "<param>.exp_avg_sq" (AdamW), in parameter order. */
size_t baton_nn_optim_ntensors(const baton_nn_optim *o);
int baton_nn_optim_tensor(const baton_nn_optim *o, size_t i, baton_nn_tensor *t);

/* ---------------------------------------------------------------------------------------------
 * Learning-rate schedules: a pure function of the global step (0-based), so resuming is exact.
 *   CONST:  base
 *   STEP:   base * gamma^floor(step / step_every)            (step_every = k epochs in steps)
 *   COSINE: base * (1 + cos(pi * min(step, total) / total)) / 2   (reaches 0 at step total)
 *   warm-up (any kind, warmup_steps > 0): multiplied by (step + 1) / warmup_steps while
 *   step < warmup_steps; the main schedule runs on the global step throughout.
 * --------------------------------------------------------------------------------------------- */
enum { BATON_NN_SCHED_CONST = 0, BATON_NN_SCHED_STEP = 1, BATON_NN_SCHED_COSINE = 2 };

typedef struct baton_nn_sched {
    int kind;
    double base_lr;
    uint64_t step_every;     /* STEP */
    double gamma;            /* STEP */
    uint64_t total_steps;    /* COSINE */
    uint64_t warmup_steps;   /* 0: none */
} baton_nn_sched;

int baton_nn_sched_check(const baton_nn_sched *s, baton_err *err);
double baton_nn_sched_lr(const baton_nn_sched *s, uint64_t step);

#endif
