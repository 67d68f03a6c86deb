/* pass.c — forward, loss and backward: plain loops over the model's plan (fuse.c), forward over
 * the ops in order (the training plan, or in evaluation mode the one-op-per-layer plan), backward
 * over the training ops in reverse, each op's backward the mirror of its forward (ops.c).
 *
 * A caller with a loss of its own (the racing league's PPO) gives backward the gradient of that loss
 * with respect to the model's output (baton_nn_backward_from): it takes the place of the softmax
 * cross-entropy's d(logits) and the same backward runs.
 *
 * Contract: nothing is allocated and nothing decided here; a batch is 1..max_batch images, and in
 * training a batch of one image is refused where a batch norm would see one value per channel.
 * Backward follows a training-mode forward and a loss under the same plan (baton_nn_model_set_kernels
 * makes a new one and forgets the forward). */
#include "nn_internal.h"

#include <stdlib.h>
#include <string.h>

/* an op's kernel declined although its predicate had accepted the geometry */
static int declined(const baton_nn_model *m, const nn_op *o, const char *pass, baton_err *err)
{
    if (m->bn_sync_rc) {   /* not a kernel: the sum over the parts failed */
        *err = m->bn_sync_err;
        baton_err_prefix(err, "model %s: layer %s: the batch norm's sums over the parts", m->name,
                         m->layers[o->layer].name);
        return m->bn_sync_rc;
    }
    return baton_err_set(err, BATON_ERR_ARG,
                         "model %s: layer %s: %s %s of kernel table %s declined a geometry its predicate accepted",
                         m->name, m->layers[o->layer].name, nn_op_impls[o->kind].name, pass, m->k->name);
}

int baton_nn_forward(baton_nn_model *m, const float *x, int n, baton_err *err)
{
    if (n < 1 || n > m->spec.max_batch)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: batch of %d images (allowed 1..%d)", m->name, n,
                             m->spec.max_batch);
    const nn_plan *p = m->training ? &m->train : &m->infer;
    if (m->training && n < 2 && p->bn_1x1 >= 0)
        return baton_err_set(err, BATON_ERR_ARG,
                             "model %s: layer %s: batch norm in training needs more than 1 value per channel "
                             "(batch %d)", m->name, m->layers[p->bn_1x1].name, n);
    nn_params16_refresh(m);   /* a table reading bfloat16 weights: rounded once if they changed */
    const nn_slot *s0 = &m->slots[0];
    if (nn_is_blocked(m->k->block, s0->c))
        m->k->from_plain(n, s0->c, s0->h, s0->w, x, s0->data);
    else
        memcpy(s0->data, x, sizeof(float) * s0->per_image * (size_t)n);
    m->fwd_n = m->have_loss = 0;   /* until this forward is whole */
    for (size_t i = 0; i < p->nops; i++)
        if (!p->ops[i].fwd(m, &p->ops[i], n)) return declined(m, &p->ops[i], "forward", err);
    m->fwd_n = n;
    m->fwd_training = m->training;
    return BATON_OK;
}

const float *baton_nn_logits(const baton_nn_model *m) { return m->slots[m->out_slot].data; }

int baton_nn_loss_part(baton_nn_model *m, const int32_t *labels, int total, float *loss, int *correct,
                       baton_err *err)
{
    if (m->fwd_n < 1) return baton_err_set(err, BATON_ERR_ARG, "model %s: loss before any forward", m->name);
    if (total < m->fwd_n)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: a part of %d images of a batch of %d", m->name, m->fwd_n,
                             total);
    const int classes = m->slots[m->out_slot].c;
    for (int i = 0; i < m->fwd_n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return baton_err_set(err, BATON_ERR_ARG, "model %s: label %d of image %d is outside 0..%d", m->name,
                                 (int)labels[i], i, classes - 1);
    nn_softmax_xent_denom(m->fwd_n, total, classes, m->slots[m->out_slot].data, labels, m->slots[m->out_slot].grad,
                          loss, correct);
    m->have_loss = 1;
    return BATON_OK;
}

int baton_nn_loss(baton_nn_model *m, const int32_t *labels, float *loss, int *correct, baton_err *err)
{
    return baton_nn_loss_part(m, labels, m->fwd_n, loss, correct, err);
}

float *baton_nn_model_grads(baton_nn_model *m, size_t *len)
{
    *len = m->nparam;
    return m->grads;
}

int baton_nn_model_on_grad_ready(baton_nn_model *m, baton_nn_grad_ready_fn fn, void *ctx, baton_err *err)
{
    if (fn && !m->ready_op && !(m->ready_op = calloc(m->ntensors ? m->ntensors : 1, sizeof *m->ready_op)))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    m->ready_fn = fn;
    m->ready_ctx = ctx;
    return BATON_OK;
}

int baton_nn_model_set_bn_sync(baton_nn_model *m, baton_nn_sum_fn fn, void *ctx, baton_err *err)
{
    int maxc = 1;
    for (size_t li = 0; li < m->nlayers; li++)
        if (m->layers[li].kind == NN_BN && m->slots[m->layers[li].in].c > maxc) maxc = m->slots[m->layers[li].in].c;
    if (fn && !m->bn_sync_buf && !(m->bn_sync_buf = calloc(1 + 2 * (size_t)maxc, sizeof(double))))
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    m->bn_sync_fn = fn;
    m->bn_sync_ctx = ctx;
    m->bn_sync_rc = 0;
    nn_plan_fusions(m);   /* without the fused batch-norm ops, or with them again */
    m->fwd_n = m->have_loss = 0;
    return BATON_OK;
}

int baton_nn_bn_sync_idle(baton_nn_model *m, baton_err *err)
{
    if (!m->bn_sync_fn) return BATON_OK;
    if (nn_sync_bn_idle(m)) return BATON_OK;
    *err = m->bn_sync_err;
    baton_err_prefix(err, "model %s: the batch norms' sums over the parts (a part with no image)", m->name);
    return m->bn_sync_rc;
}

/* Which training op fills each parameter's grad (the plan's layers: main, bn, relu, pool). */
static void map_ready(baton_nn_model *m, const nn_plan *p)
{
    for (size_t t = 0; t < m->ntensors; t++) m->ready_op[t] = -1;
    for (size_t i = 0; i < p->nops; i++) {
        const nn_op *o = &p->ops[i];
        const int ls[4] = {o->layer, o->bn, o->relu, o->pool};
        for (int k = 0; k < 4; k++) {
            if (ls[k] < 0) continue;
            const nn_layer *l = &m->layers[ls[k]];
            if (l->tw >= 0) m->ready_op[l->tw] = (int)i;
            if (l->tb >= 0) m->ready_op[l->tb] = (int)i;
        }
    }
}

int baton_nn_backward(baton_nn_model *m, baton_err *err)
{
    if (!m->have_loss || !m->fwd_training)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: backward needs a training-mode forward and a loss",
                             m->name);
    const nn_plan *p = &m->train;
    if (m->ready_fn) map_ready(m, p);
    size_t next = m->ntensors;   /* tensors [next, ntensors) are reported final */
    size_t from = m->nparam;
    for (size_t i = p->nops; i-- > 0;) {
        if (!p->ops[i].bwd(m, &p->ops[i], m->fwd_n)) return declined(m, &p->ops[i], "backward", err);
        if (!m->ready_fn) continue;
        /* parameters are laid out in tensor order: walk down while each one is done */
        while (next > 0) {
            const nn_tensor *t = &m->tensors[next - 1];
            if (t->kind == BATON_NN_PARAM) {
                if (m->ready_op[next - 1] < (int)i) break;
                from = t->off;
            }
            next--;
        }
        m->ready_fn(m->ready_ctx, from);
    }
    return BATON_OK;
}

int baton_nn_backward_from(baton_nn_model *m, const float *dout, baton_err *err)
{
    if (m->fwd_n < 1 || !m->fwd_training)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: backward needs a training-mode forward", m->name);
    const nn_slot *o = &m->slots[m->out_slot];
    memcpy(o->grad, dout, sizeof(float) * o->per_image * (size_t)m->fwd_n);
    m->have_loss = 1;
    return baton_nn_backward(m, err);
}

int baton_nn_train_batch(baton_nn_model *m, const float *x, const int32_t *labels, int n, float *loss,
                         int *correct, baton_err *err)
{
    int rc = baton_nn_forward(m, x, n, err);
    if (rc == BATON_OK) rc = baton_nn_loss(m, labels, loss, correct, err);
    if (rc == BATON_OK) rc = baton_nn_backward(m, err);
    return rc;
}
