/* optim.c — SGD (momentum, Nesterov, weight decay) and AdamW over a model's parameters, with
 * PyTorch's update rules and float32 arithmetic in the same operation order (see nn.h), and the
 * named view of the optimizer state for checkpoints.
 *
 * Contract: all state is allocated in baton_nn_optim_create, laid out like the model's parameter
 * arena (same offsets); baton_nn_optim_step allocates nothing and is deterministic: each element's
 * update is computed alone, so the results do not depend on the thread count (large SGD tensors are
 * split over the OpenMP team in the normal build; the loops are built for AVX-512 and baseline). */
#include "nn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct baton_nn_optim {
    baton_nn_optim_cfg cfg;
    baton_nn_model *m;
    float *s1, *s2;           /* SGD: momentum buffer; AdamW: exp_avg, exp_avg_sq */
    uint64_t steps;
    size_t nstate;            /* state tensors per parameter: 0, 1 or 2 */
    size_t *params;           /* model tensor index of each parameter */
    size_t nparams;
    char (*names)[NN_NAME_MAX + 16];
};

int baton_nn_optim_create(const baton_nn_optim_cfg *cfg, baton_nn_model *m, baton_nn_optim **out, baton_err *err)
{
    *out = NULL;
    baton_nn_optim_cfg c = *cfg;
    if (c.kind == BATON_NN_ADAMW) {
        if (c.beta1 == 0.0) c.beta1 = 0.9;
        if (c.beta2 == 0.0) c.beta2 = 0.999;
        if (c.eps == 0.0) c.eps = 1e-8;
        if (!(c.beta1 > 0.0 && c.beta1 < 1.0) || !(c.beta2 > 0.0 && c.beta2 < 1.0) || !(c.eps > 0.0))
            return baton_err_set(err, BATON_ERR_ARG, "optimizer adamw: betas must be in (0,1) and eps > 0");
    } else if (c.kind == BATON_NN_SGD) {
        if (!(c.momentum >= 0.0 && c.momentum < 1.0))
            return baton_err_set(err, BATON_ERR_ARG, "optimizer sgd: momentum %g outside [0,1)", c.momentum);
        if (c.nesterov && c.momentum <= 0.0)
            return baton_err_set(err, BATON_ERR_ARG, "optimizer sgd: nesterov needs momentum > 0");
    } else {
        return baton_err_set(err, BATON_ERR_ARG, "optimizer: unknown kind %d", c.kind);
    }
    if (!(c.weight_decay >= 0.0) || !isfinite(c.weight_decay))
        return baton_err_set(err, BATON_ERR_ARG, "optimizer: weight_decay %g must be >= 0", c.weight_decay);
    baton_nn_optim *o = calloc(1, sizeof *o);
    if (!o) return baton_err_set(err, BATON_ERR_NOMEM, "optimizer: out of memory");
    o->cfg = c;
    o->m = m;
    o->nstate = c.kind == BATON_NN_ADAMW ? 2 : (c.momentum > 0.0 ? 1 : 0);
    size_t np = m->nparam ? m->nparam : 16;
    o->params = calloc(m->ntensors ? m->ntensors : 1, sizeof *o->params);
    if (o->nstate >= 1) o->s1 = calloc(np, sizeof(float));
    if (o->nstate >= 2) o->s2 = calloc(np, sizeof(float));
    int bad = !o->params || (o->nstate >= 1 && !o->s1) || (o->nstate >= 2 && !o->s2);
    if (!bad) {
        for (size_t i = 0; i < m->ntensors; i++)
            if (m->tensors[i].kind == BATON_NN_PARAM) o->params[o->nparams++] = i;
        o->names = calloc(o->nparams * (o->nstate ? o->nstate : 1), sizeof *o->names);
        bad = !o->names;
    }
    if (bad) {
        baton_nn_optim_free(o);
        return baton_err_set(err, BATON_ERR_NOMEM, "optimizer for model %s: out of memory", m->name);
    }
    static const char *sgd_leaf[1] = {"momentum_buffer"}, *adam_leaf[2] = {"exp_avg", "exp_avg_sq"};
    for (size_t p = 0; p < o->nparams; p++)
        for (size_t s = 0; s < o->nstate; s++)
            snprintf(o->names[p * o->nstate + s], sizeof o->names[0], "%s.%s", m->tensors[o->params[p]].name,
                     c.kind == BATON_NN_ADAMW ? adam_leaf[s] : sgd_leaf[s]);
    *out = o;
    return BATON_OK;
}

void baton_nn_optim_free(baton_nn_optim *o)
{
    if (!o) return;
    free(o->s1);
    free(o->s2);
    free(o->params);
    free(o->names);
    free(o);
}

/* One span of an SGD update, written as four branch-free loops (momentum or not, first step or not)
 * so that each vectorises; the same float operations in the same order as the plain rule:
 * d = g + wd * p; buf = first ? d : buf * mom + d; d = nesterov ? d + mom * buf : buf; p = p - lr * d. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void sgd_span(float wd, float mom, int nesterov, int first, float lr, size_t n, float *restrict p,
                     const float *restrict g, float *restrict buf)
{
    const int decay = wd != 0.0f;
    if (mom == 0.0f || !buf) {
        for (size_t i = 0; i < n; i++) {
            const float w = p[i], d = decay ? g[i] + wd * w : g[i];
            p[i] = w + -lr * d;
        }
    } else if (first) {
        for (size_t i = 0; i < n; i++) {
            const float w = p[i], d = decay ? g[i] + wd * w : g[i];
            buf[i] = d;
            p[i] = w + -lr * (nesterov ? d + mom * d : d);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            const float w = p[i], d = decay ? g[i] + wd * w : g[i], b = buf[i] * mom + d;
            buf[i] = b;
            p[i] = w + -lr * (nesterov ? d + mom * b : b);
        }
    }
}

#define SGD_PIECE 32768   /* elements per OpenMP work item */

static void sgd_tensor(const baton_nn_optim_cfg *c, int first, float lr, size_t n, float *p, const float *g,
                       float *buf)
{
    const float wd = (float)c->weight_decay, mom = (float)c->momentum;
    if (n < 2 * SGD_PIECE) {
        sgd_span(wd, mom, c->nesterov, first, lr, n, p, g, buf);
        return;
    }
    const long pieces = (long)((n + SGD_PIECE - 1) / SGD_PIECE);
#pragma omp parallel for schedule(static)
    for (long k = 0; k < pieces; k++) {
        const size_t lo = (size_t)k * SGD_PIECE, len = lo + SGD_PIECE < n ? SGD_PIECE : n - lo;
        sgd_span(wd, mom, c->nesterov, first, lr, len, p + lo, g + lo, buf ? buf + lo : NULL);
    }
}

/* One span of an AdamW update as one branch-free loop over restrict pointers, so that it vectorises;
 * the same float operations in the same order as the plain rule (m2 >= 0, so sqrtf never sets errno:
 * the file is built with -fno-math-errno, which lets the square root vectorise, same results). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "default")))
#endif
static void adamw_span(int decayed, float decay, int small_w1, float w1, float w2, float b2, float bc2_sqrt, float eps,
                       float step_size, size_t n, float *restrict p, const float *restrict g, float *restrict m1,
                       float *restrict m2)
{
    for (size_t i = 0; i < n; i++) {
        const float w = decayed ? p[i] * decay : p[i], gi = g[i], mi = m1[i];
        /* exp_avg.lerp_(grad, 1 - beta1): the weight < 0.5 form, or the other */
        const float a = small_w1 ? mi + w1 * (gi - mi) : gi - (gi - mi) * (1.0f - w1);
        const float v = m2[i] * b2 + w2 * (gi * gi);
        m1[i] = a;
        m2[i] = v;
        const float denom = sqrtf(v) / bc2_sqrt + eps;
        p[i] = w + -step_size * (a / denom);
    }
}

static void adamw_tensor(const baton_nn_optim_cfg *c, uint64_t t, double lr, size_t n, float *p, const float *g,
                         float *m1, float *m2)
{
    /* scalars as PyTorch computes them in Python (double), used as float in the tensor ops */
    const float decay = (float)(1.0 - lr * c->weight_decay);
    const double bc1 = 1.0 - pow(c->beta1, (double)t);
    const double bc2 = 1.0 - pow(c->beta2, (double)t);
    const float step_size = (float)(lr / bc1);
    const float bc2_sqrt = (float)sqrt(bc2);
    const float w1 = (float)(1.0 - c->beta1), w2 = (float)(1.0 - c->beta2);
    adamw_span(c->weight_decay != 0.0, decay, w1 < 0.5f, w1, w2, (float)c->beta2, bc2_sqrt, (float)c->eps, step_size, n,
               p, g, m1, m2);
}

int baton_nn_optim_step(baton_nn_optim *o, double lr, baton_err *err)
{
    if (!(lr >= 0.0) || !isfinite(lr))
        return baton_err_set(err, BATON_ERR_ARG, "optimizer for model %s: learning rate %g is not a finite value >= 0",
                             o->m->name, lr);
    baton_nn_model *m = o->m;
    /* a table reading bfloat16 weights: the step writes their copy too (each tensor rounded as soon
     * as it is updated, while in cache); it is then current for every parameter */
    const int w16 = m->k->weights_bf16;
    o->steps++;
    for (size_t k = 0; k < o->nparams; k++) {
        const nn_tensor *t = &m->tensors[o->params[k]];
        float *p = t->data;
        if (o->cfg.kind == BATON_NN_SGD)
            sgd_tensor(&o->cfg, o->steps == 1, (float)lr, t->numel, p, t->grad, o->s1 ? o->s1 + t->off : NULL);
        else
            adamw_tensor(&o->cfg, o->steps, lr, t->numel, p, t->grad, o->s1 + t->off, o->s2 + t->off);
        if (w16) nn_bf16_round(t->numel, p, m->params16 + t->off);
    }
    m->params16_stale = !w16;   /* the optimizer updates every parameter */
    return BATON_OK;
}

uint64_t baton_nn_optim_steps(const baton_nn_optim *o) { return o->steps; }
void baton_nn_optim_set_steps(baton_nn_optim *o, uint64_t steps) { o->steps = steps; }
size_t baton_nn_optim_ntensors(const baton_nn_optim *o) { return o->nparams * o->nstate; }

int baton_nn_optim_tensor(const baton_nn_optim *o, size_t i, baton_nn_tensor *t)
{
    if (i >= o->nparams * o->nstate) return BATON_ERR_ARG;
    const nn_tensor *p = &o->m->tensors[o->params[i / o->nstate]];
    const size_t s = i % o->nstate;
    t->name = o->names[i];
    t->kind = BATON_NN_BUFFER;
    t->dtype = BATON_NN_F32;
    t->ndim = p->ndim;
    memcpy(t->shape, p->shape, sizeof t->shape);
    t->numel = p->numel;
    t->data = (s == 0 ? o->s1 : o->s2) + p->off;
    t->grad = NULL;
    return BATON_OK;
}
