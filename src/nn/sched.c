/* sched.c — learning-rate schedules (constant, step, cosine) with optional linear warm-up, as a
 * pure function of the global step so that a resumed run continues with exactly the same values.
 * The formulas are documented next to baton_nn_sched in nn.h. */
#include "nn_internal.h"

#include <math.h>

int baton_nn_sched_check(const baton_nn_sched *s, baton_err *err)
{
    if (!(s->base_lr >= 0.0) || !isfinite(s->base_lr))
        return baton_err_set(err, BATON_ERR_ARG, "schedule: learning rate %g is not a finite value >= 0", s->base_lr);
    switch (s->kind) {
    case BATON_NN_SCHED_CONST:
        return BATON_OK;
    case BATON_NN_SCHED_STEP:
        if (s->step_every == 0) return baton_err_set(err, BATON_ERR_ARG, "schedule step: step_every must be > 0");
        if (!(s->gamma > 0.0) || !isfinite(s->gamma))
            return baton_err_set(err, BATON_ERR_ARG, "schedule step: gamma %g must be > 0", s->gamma);
        return BATON_OK;
    case BATON_NN_SCHED_COSINE:
        if (s->total_steps == 0) return baton_err_set(err, BATON_ERR_ARG, "schedule cosine: total_steps must be > 0");
        return BATON_OK;
    }
    return baton_err_set(err, BATON_ERR_ARG, "schedule: unknown kind %d", s->kind);
}

double baton_nn_sched_lr(const baton_nn_sched *s, uint64_t step)
{
    double lr = s->base_lr;
    if (s->kind == BATON_NN_SCHED_STEP && s->step_every > 0) {
        lr *= pow(s->gamma, (double)(step / s->step_every));
    } else if (s->kind == BATON_NN_SCHED_COSINE && s->total_steps > 0) {
        uint64_t t = step < s->total_steps ? step : s->total_steps;
        lr *= 0.5 * (1.0 + cos(M_PI * (double)t / (double)s->total_steps));
    }
    if (s->warmup_steps > 0 && step < s->warmup_steps) lr *= (double)(step + 1) / (double)s->warmup_steps;
    return lr;
}
