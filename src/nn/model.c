/* model.c — a model as a small static graph of layers over activation slots (built by zoo.c
 * through build.c's builder): arena allocation and PyTorch-default initialisation, forward / loss /
 * backward through the kernel table, and the named-tensor view (state_dict order) used by
 * checkpoints.
 *
 * Contract: all memory is allocated in baton_nn_model_create (parameters, gradients, buffers and
 * activations each in one arena, every tensor 64-byte aligned within it); forward, loss and
 * backward allocate nothing. Layers run in build order; backward runs them in reverse and adds the
 * gradients of a slot read by several layers (residual fan-out) in a fixed order. */
#include "nn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation and initialisation ---- */

/* A linear layer reads its input as [n, c*h*w] in NCHW order (PyTorch's flatten). When a kernel
 * table keeps that activation blocked, the layer flattens it into a buffer of its own. */
static int needs_flat(const nn_slot *s)
{
    return s->h * s->w > 1 && s->c % NN_BLOCK == 0;
}

static int flat_now(const baton_nn_model *m, const nn_layer *l)
{
    return l->flat && nn_is_blocked(m->k->block, m->slots[l->in].c);
}

static int finalize(baton_nn_model *m, int init_params, baton_err *err)
{
    const size_t B = (size_t)m->spec.max_batch;
    /* activation arena: per slot data + grad, per layer extras */
    size_t nact = 0, nws = 0;
    for (size_t i = 0; i < m->nslots; i++) {
        m->slots[i].off_data = nact;
        nact += nn_align_up(m->slots[i].per_image * B);
        m->slots[i].off_grad = nact;
        nact += nn_align_up(m->slots[i].per_image * B);
    }
    for (size_t i = 0; i < m->nlayers; i++) {
        nn_layer *l = &m->layers[i];
        if (l->kind == NN_BN) {
            l->off_a = nact;
            nact += nn_align_up(2 * (size_t)m->slots[l->in].c);
        } else if (l->kind == NN_DROPOUT) {
            l->off_a = nact;
            nact += nn_align_up(m->slots[l->in].per_image * B);
        } else if (l->kind == NN_MAXPOOL) {
            l->off_ws = nws;
            nws += nn_align_up(m->slots[l->out].per_image * B);
        } else if (l->kind == NN_LINEAR && needs_flat(&m->slots[l->in])) {
            l->off_flat = nact;
            nact += nn_align_up(m->slots[l->in].per_image * B);
        }
    }
    size_t nscratch = nn_align_up(m->max_slot * B);
    m->nact = nact;
    m->nws = nws;
    m->params = aligned_alloc(64, sizeof(float) * (m->nparam ? m->nparam : NN_ALIGN_ELEMS));
    m->grads = aligned_alloc(64, sizeof(float) * (m->nparam ? m->nparam : NN_ALIGN_ELEMS));
    m->bufs = aligned_alloc(64, sizeof(float) * (m->nbuf ? m->nbuf : NN_ALIGN_ELEMS));
    m->i64 = calloc(m->ni64 ? m->ni64 : 1, sizeof(int64_t));
    m->acts_bytes = sizeof(float) * (nact + nscratch);
    m->acts = baton_bigmem_alloc(m->acts_bytes);   /* zeroed by the kernel, touched by the first step */
    m->wsa = aligned_alloc(64, sizeof(int32_t) * (nws ? nws : NN_ALIGN_ELEMS));
    if (!m->params || !m->grads || !m->bufs || !m->i64 || !m->acts || !m->wsa)
        return baton_err_set(err, BATON_ERR_NOMEM, "model %s: cannot allocate %zu activation floats for batch %d",
                             m->name, nact + nscratch, m->spec.max_batch);
    memset(m->params, 0, sizeof(float) * m->nparam);
    memset(m->grads, 0, sizeof(float) * m->nparam);
    memset(m->bufs, 0, sizeof(float) * m->nbuf);
    memset(m->wsa, 0, sizeof(int32_t) * nws);
    m->scratch = m->acts + nact;
    m->pend = -1;
    for (size_t i = 0; i < m->nslots; i++) {
        m->slots[i].data = m->acts + m->slots[i].off_data;
        m->slots[i].grad = m->acts + m->slots[i].off_grad;
    }
    for (size_t i = 0; i < m->nlayers; i++) {
        nn_layer *l = &m->layers[i];
        if (l->kind == NN_BN) {
            l->save_mean = m->acts + l->off_a;
            l->save_var = l->save_mean + m->slots[l->in].c;
        } else if (l->kind == NN_DROPOUT) {
            l->mask = m->acts + l->off_a;
        } else if (l->kind == NN_MAXPOOL) {
            l->ws = m->wsa + l->off_ws;
        } else if (l->kind == NN_LINEAR && needs_flat(&m->slots[l->in])) {
            l->flat = m->acts + l->off_flat;
        }
    }
    /* tensors: pointers and PyTorch-default initial values, drawn in state_dict order */
    baton_rng init;
    baton_rng_seed(&init, m->spec.seed);
    for (size_t i = 0; i < m->ntensors; i++) {
        nn_tensor *t = &m->tensors[i];
        if (t->kind == BATON_NN_PARAM) {
            t->data = m->params + t->off;
            t->grad = m->grads + t->off;
        } else if (t->dtype == BATON_NN_F32) {
            t->data = m->bufs + t->off;
        } else {
            t->data = m->i64 + t->off;
        }
        if (t->dtype == BATON_NN_I64 || !init_params) continue;
        float *d = t->data;
        for (size_t j = 0; j < t->numel; j++) {
            if (t->init == NN_INIT_UNIFORM)
                d[j] = -t->bound + 2.0f * t->bound * baton_rng_float(&init);
            else
                d[j] = t->init == NN_INIT_ONES ? 1.0f : 0.0f;
        }
    }
    /* the dropout stream is independent of the initialisation stream */
    baton_rng_seed3(&m->rng, m->spec.seed, 0x64726f70 /* "drop" */, 0);
    return BATON_OK;
}

static int create(const baton_nn_spec *spec, const baton_nn_kernels *kernels, int init_params, baton_nn_model **out,
                  baton_err *err)
{
    *out = NULL;
    if (!spec || !spec->name) return baton_err_set(err, BATON_ERR_ARG, "nn: no model name");
    if (spec->in_c < 1 || spec->in_h < 1 || spec->in_w < 1 || spec->in_c > 4096 || spec->in_h > 8192 ||
        spec->in_w > 8192)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: bad input shape %dx%dx%d", spec->name, spec->in_c,
                             spec->in_h, spec->in_w);
    if (spec->classes < 2 || spec->classes > 1000000)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: bad class count %d (need at least 2)", spec->name,
                             spec->classes);
    if (spec->max_batch < 1 || spec->max_batch > 65536)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: bad batch size %d", spec->name, spec->max_batch);
    baton_nn_model *m = calloc(1, sizeof *m);
    if (!m) return baton_err_set(err, BATON_ERR_NOMEM, "model %s: out of memory", spec->name);
    snprintf(m->name, sizeof m->name, "%s", spec->name);
    m->spec = *spec;
    m->spec.name = m->name;
    m->k = kernels ? kernels : baton_nn_kernels_reference();
    m->training = 1;
    m->out_slot = -1;
    int rc = nn_zoo_build(m, err);
    if (rc == BATON_OK && m->build_err) {
        rc = m->build_err;
        if (err) *err = m->berr;
    }
    if (rc == BATON_OK) rc = finalize(m, init_params, err);
    if (rc != BATON_OK) {
        baton_nn_model_free(m);
        return rc;
    }
    m->out_slot = (int)m->nslots - 1;
    nn_plan_fusions(m);
    *out = m;
    return BATON_OK;
}

int baton_nn_model_create(const baton_nn_spec *spec, const baton_nn_kernels *kernels, baton_nn_model **out,
                          baton_err *err)
{
    return create(spec, kernels, 1, out, err);
}

int baton_nn_model_create_empty(const baton_nn_spec *spec, const baton_nn_kernels *kernels, baton_nn_model **out,
                                baton_err *err)
{
    return create(spec, kernels, 0, out, err);
}

void baton_nn_model_free(baton_nn_model *m)
{
    if (!m) return;
    free(m->layers);
    free(m->slots);
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->bufs);
    free(m->i64);
    baton_bigmem_free(m->acts, m->acts_bytes);
    free(m->wsa);
    free(m);
}

const char *baton_nn_model_name(const baton_nn_model *m) { return m->name; }
void baton_nn_model_set_kernels(baton_nn_model *m, const baton_nn_kernels *k)
{
    m->k = k ? k : baton_nn_kernels_reference();
    nn_plan_fusions(m);   /* what this table fuses */
}
void baton_nn_model_set_training(baton_nn_model *m, int training) { m->training = training != 0; }
size_t baton_nn_model_param_count(const baton_nn_model *m) { return m->param_count; }
int baton_nn_model_classes(const baton_nn_model *m) { return m->spec.classes; }
baton_rng *baton_nn_model_rng(baton_nn_model *m) { return &m->rng; }
size_t baton_nn_model_ntensors(const baton_nn_model *m) { return m->ntensors; }

int baton_nn_model_tensor(const baton_nn_model *m, size_t i, baton_nn_tensor *t)
{
    if (i >= m->ntensors) return BATON_ERR_ARG;
    const nn_tensor *s = &m->tensors[i];
    t->name = s->name;
    t->kind = s->kind;
    t->dtype = s->dtype;
    t->ndim = s->ndim;
    memcpy(t->shape, s->shape, sizeof t->shape);
    t->numel = s->numel;
    t->data = s->data;
    t->grad = s->grad;
    return BATON_OK;
}

int baton_nn_model_find(const baton_nn_model *m, const char *name, baton_nn_tensor *t)
{
    for (size_t i = 0; i < m->ntensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return baton_nn_model_tensor(m, i, t);
    return BATON_ERR_NOTFOUND;
}

/* ---- forward / loss / backward ---- */

static float *tdata(const baton_nn_model *m, int t) { return t < 0 ? NULL : (float *)m->tensors[t].data; }
static float *tgrad(const baton_nn_model *m, int t) { return t < 0 ? NULL : m->tensors[t].grad; }

static baton_nn_conv_geom conv_geom(const baton_nn_model *m, const nn_layer *l, int n)
{
    const nn_slot *i = &m->slots[l->in], *o = &m->slots[l->out];
    baton_nn_conv_geom g = {n, i->c, i->h, i->w, o->c, l->k, l->k, l->stride, l->pad, o->h, o->w};
    return g;
}

static baton_nn_pool_geom pool_geom(const baton_nn_model *m, const nn_layer *l, int n)
{
    const nn_slot *i = &m->slots[l->in], *o = &m->slots[l->out];
    baton_nn_pool_geom g = {n, i->c, i->h, i->w, l->k, l->stride, o->h, o->w};
    return g;
}

/* The ReLU fused after layer l in this training forward, or NULL */
static nn_layer *relu_after(baton_nn_model *m, const nn_layer *l)
{
    return m->training && l->relu_next >= 0 ? &m->layers[l->relu_next] : NULL;
}

/* PyTorch: running = (1 - momentum) * running + momentum * batch statistic, with the unbiased
 * variance for the running estimate */
static void bn_running_update(baton_nn_model *m, nn_layer *l, int n)
{
    const nn_slot *in = &m->slots[l->in];
    const int hw = in->h * in->w;
    float *rm = tdata(m, l->trm), *rv = tdata(m, l->trv);
    const float corr = (float)((double)n * hw / ((double)n * hw - 1.0));
    for (int c = 0; c < in->c; c++) {
        rm[c] = (1.0f - NN_BN_MOMENTUM) * rm[c] + NN_BN_MOMENTUM * l->save_mean[c];
        rv[c] = (1.0f - NN_BN_MOMENTUM) * rv[c] + NN_BN_MOMENTUM * (l->save_var[c] * corr);
    }
    ((int64_t *)m->tensors[l->tnbt].data)[0] += 1;
}

/* A batch norm's training forward (n * hw >= 2, checked by the caller), with the ReLU after it when
 * that is fused */
static void bn_forward_train(baton_nn_model *m, nn_layer *l, int n)
{
    const baton_nn_kernels *k = m->k;
    const nn_slot *in = &m->slots[l->in];
    const int hw = in->h * in->w;
    nn_layer *r = relu_after(m, l);
    const int ready = l->stats_ready;
    l->stats_ready = 0;
    if (ready && k->bn_apply_train(n, in->c, hw, in->data, NULL, r != NULL, tdata(m, l->tw), tdata(m, l->tb),
                                   NN_BN_EPS, l->save_mean, l->save_var, m->slots[r ? r->out : l->out].data)) {
        if (r) r->fused = 1;
    } else if (r && k->bn_relu_fwd_train(n, in->c, hw, in->data, tdata(m, l->tw), tdata(m, l->tb), NN_BN_EPS,
                                         m->slots[r->out].data, l->save_mean, l->save_var)) {
        r->fused = 1;   /* the ReLU's output is written: skip that layer */
    } else {
        if (r) r->fused = 0;
        k->bn_fwd_train(n, in->c, hw, in->data, tdata(m, l->tw), tdata(m, l->tb), NN_BN_EPS,
                        m->slots[l->out].data, l->save_mean, l->save_var);
    }
    bn_running_update(m, l, n);
}

int baton_nn_forward(baton_nn_model *m, const float *x, int n, baton_err *err)
{
    if (n < 1 || n > m->spec.max_batch)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: batch of %d images (allowed 1..%d)", m->name, n,
                             m->spec.max_batch);
    const baton_nn_kernels *k = m->k;
    const nn_slot *s0 = &m->slots[0];
    if (nn_is_blocked(k->block, s0->c))
        k->from_plain(n, s0->c, s0->h, s0->w, x, s0->data);
    else
        memcpy(s0->data, x, sizeof(float) * s0->per_image * (size_t)n);
    for (size_t li = 0; li < m->nlayers; li++) {
        nn_layer *l = &m->layers[li];
        const nn_slot *in = &m->slots[l->in];
        nn_slot *out = &m->slots[l->out];
        const size_t count = out->per_image * (size_t)n;
        switch (l->kind) {
        case NN_CONV: {
            baton_nn_conv_geom g = conv_geom(m, l, n);
            nn_layer *r = relu_after(m, l);
            if (m->training && l->bn_next >= 0) {
                nn_layer *b = &m->layers[l->bn_next];
                b->stats_ready = n * out->h * out->w >= 2 &&
                                 k->conv_bn_stats_fwd(&g, in->data, tdata(m, l->tw), tdata(m, l->tb), tdata(m, b->trm),
                                                      out->data, b->save_mean, b->save_var);
                if (b->stats_ready) break;
            }
            if (r && k->conv_relu_fwd(&g, in->data, tdata(m, l->tw), tdata(m, l->tb), m->slots[r->out].data)) {
                r->fused = 2;   /* the ReLU's output is written: skip its forward */
            } else {
                if (r) r->fused = 0;
                k->conv_fwd(&g, in->data, tdata(m, l->tw), tdata(m, l->tb), out->data);
            }
            break;
        }
        case NN_BN: {
            const int hw = in->h * in->w;
            if (m->training) {
                if ((size_t)n * hw < 2)
                    return baton_err_set(err, BATON_ERR_ARG,
                                         "model %s: layer %s: batch norm in training needs more than 1 value "
                                         "per channel (batch %d)", m->name, l->name, n);
                if (l->add_next >= 0) {
                    l->deferred = 1;   /* runs inside the add after it */
                    break;
                }
                bn_forward_train(m, l, n);
            } else {
                k->bn_fwd_infer(n, in->c, hw, in->data, tdata(m, l->tw), tdata(m, l->tb), tdata(m, l->trm),
                                tdata(m, l->trv), NN_BN_EPS, out->data);
            }
            break;
        }
        case NN_RELU:
            if (!(m->training && l->fused)) k->relu_fwd(count, in->data, out->data);
            break;
        case NN_MAXPOOL: {
            baton_nn_pool_geom g = pool_geom(m, l, n);
            k->maxpool_fwd(&g, in->data, out->data, l->ws);
            break;
        }
        case NN_GAP:
            k->gap_fwd(n, in->c, in->h * in->w, in->data, out->data);
            break;
        case NN_LINEAR: {
            const float *xin = in->data;
            if (flat_now(m, l)) {
                k->to_plain(n, in->c, in->h, in->w, in->data, l->flat);
                xin = l->flat;
            }
            k->linear_fwd(n, (int)in->per_image, out->c, xin, tdata(m, l->tw), tdata(m, l->tb), out->data);
            break;
        }
        case NN_DROPOUT:
            if (m->training && l->p > 0.0f)
                baton_nn_dropout_fwd(count, l->p, &m->rng, in->data, out->data, l->mask);
            else
                memcpy(out->data, in->data, sizeof(float) * count);
            break;
        case NN_ADD: {
            nn_layer *r = relu_after(m, l);
            if (l->bn_prev >= 0 && m->layers[l->bn_prev].deferred == 1) {
                nn_layer *b = &m->layers[l->bn_prev];
                const nn_slot *bi = &m->slots[b->in];
                int done = 0;
                b->deferred = 0;
                if (r && b->stats_ready)   /* the convolution before took the statistics */
                    done = k->bn_apply_train(n, bi->c, bi->h * bi->w, bi->data, m->slots[l->bn_res].data, 1,
                                             tdata(m, b->tw), tdata(m, b->tb), NN_BN_EPS, b->save_mean, b->save_var,
                                             m->slots[r->out].data);
                if (r && !done)
                    done = k->bn_add_relu_fwd_train(n, bi->c, bi->h * bi->w, bi->data, m->slots[l->bn_res].data,
                                                    tdata(m, b->tw), tdata(m, b->tb), NN_BN_EPS,
                                                    m->slots[r->out].data, b->save_mean, b->save_var);
                if (done) {
                    b->stats_ready = 0;
                    bn_running_update(m, b, n);
                    r->fused = 1;
                    break;
                }
                bn_forward_train(m, b, n);   /* not fused for this geometry: the batch norm first */
            }
            if (r && k->add_relu && k->add_relu(count, in->data, m->slots[l->in2].data, m->slots[r->out].data)) {
                r->fused = 1;
            } else {
                if (r) r->fused = 0;
                k->add(count, in->data, m->slots[l->in2].data, out->data);
            }
            break;
        }
        }
    }
    m->fwd_n = n;
    m->fwd_training = m->training;
    m->have_loss = 0;
    return BATON_OK;
}

const float *baton_nn_logits(const baton_nn_model *m) { return m->slots[m->out_slot].data; }

int baton_nn_loss(baton_nn_model *m, const int32_t *labels, float *loss, int *correct, baton_err *err)
{
    if (m->fwd_n < 1) return baton_err_set(err, BATON_ERR_ARG, "model %s: loss before any forward", m->name);
    const int classes = m->slots[m->out_slot].c;
    for (int i = 0; i < m->fwd_n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return baton_err_set(err, BATON_ERR_ARG, "model %s: label %d of image %d is outside 0..%d", m->name,
                                 (int)labels[i], i, classes - 1);
    baton_nn_softmax_xent(m->fwd_n, classes, m->slots[m->out_slot].data, labels, m->slots[m->out_slot].grad,
                          loss, correct);
    m->have_loss = 1;
    return BATON_OK;
}

/* Where a layer writes d(input): straight into the slot's grad the first time, else into scratch
 * (then added by add_grad). */
static float *grad_target(baton_nn_model *m, int slot)
{
    return m->slots[slot].grad_ready ? m->scratch : m->slots[slot].grad;
}

/* d(slot) for reading in backward */
static const float *grad_of(const nn_slot *s) { return s->galias ? s->galias : s->grad; }

/* Adds a pending contribution (in scratch) to its slot's gradient. */
static void grad_flush(baton_nn_model *m)
{
    if (m->pend < 0) return;
    nn_slot *s = &m->slots[m->pend];
    m->k->add(s->per_image * (size_t)m->fwd_n, s->grad, m->scratch, s->grad);
    m->pend = -1;
}

/* A contribution to d(slot) was written where grad_target said. A second one stays in scratch,
 * pending, when the table can add it inside the fused ReLU backward that reads it next
 * (relu_bwd_add, see keeps_pend); anything else adds it first (grad_flush). */
static void grad_commit(baton_nn_model *m, int slot)
{
    nn_slot *s = &m->slots[slot];
    if (s->grad_ready) {
        m->pend = slot;
        if (!m->k->relu_bwd_add) grad_flush(m);
    }
    s->grad_ready = 1;
}

/* Layer l's backward takes the pending contribution as it is: a ReLU run inside the add before it
 * (its backward is that add's), or that add, when it writes in2's gradient once for both inputs */
static int keeps_pend(const baton_nn_model *m, const nn_layer *l)
{
    if (l->kind == NN_RELU) return l->fused == 1 && l->out == m->pend;
    if (l->kind != NN_ADD || !l->alias_in || l->relu_next < 0) return 0;
    const nn_layer *r = &m->layers[l->relu_next];
    return r->fused == 1 && r->out == m->pend && !m->slots[l->in2].grad_ready;
}

int baton_nn_backward(baton_nn_model *m, baton_err *err)
{
    if (!m->have_loss || !m->fwd_training)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: backward needs a training-mode forward and a loss",
                             m->name);
    const baton_nn_kernels *k = m->k;
    const int n = m->fwd_n;
    for (size_t i = 0; i < m->nslots; i++) {
        m->slots[i].grad_ready = 0;
        m->slots[i].galias = NULL;
    }
    m->slots[m->out_slot].grad_ready = 1;
    m->pend = -1;
    for (size_t li = m->nlayers; li-- > 0;) {
        nn_layer *l = &m->layers[li];
        if (m->pend >= 0 && !keeps_pend(m, l)) grad_flush(m);
        nn_slot *in = &m->slots[l->in], *out = &m->slots[l->out];
        const size_t count = out->per_image * (size_t)n;
        if (l->kind == NN_RELU && l->in_pool == 2) {   /* its backward ran inside the pool after it */
            l->in_pool = 1;
            continue;
        }
        if (l->kind == NN_BN && l->deferred == 2) {   /* and this one inside the add after it */
            l->deferred = 0;
            continue;
        }
        if (!out->grad_ready) memset(out->grad, 0, sizeof(float) * count);   /* unused output */
        const float *dy = grad_of(out);   /* d(this layer's output) */
        const int need_dx = l->in != 0;   /* no gradient for the input images */
        float *dx = need_dx ? grad_target(m, l->in) : NULL;
        switch (l->kind) {
        case NN_CONV: {
            baton_nn_conv_geom g = conv_geom(m, l, n);
            k->conv_bwd_weights(&g, in->data, dy, tgrad(m, l->tw), tgrad(m, l->tb));
            if (need_dx) k->conv_bwd_data(&g, dy, tdata(m, l->tw), dx);
            break;
        }
        case NN_BN: {
            const nn_layer *r = l->relu_next >= 0 ? &m->layers[l->relu_next] : NULL;
            if (r && r->fused) {   /* d(ReLU output) straight into the fused backward */
                const nn_slot *ro = &m->slots[r->out];
                if (k->bn_relu_bwd && k->bn_relu_bwd(n, in->c, in->h * in->w, in->data, grad_of(ro), tdata(m, l->tw),
                                                     tdata(m, l->tb), l->save_mean, l->save_var, NN_BN_EPS,
                                                     need_dx ? dx : m->scratch, tgrad(m, l->tw), tgrad(m, l->tb)))
                    break;
                k->relu_bwd(count, ro->data, grad_of(ro), out->grad);   /* not fused for this geometry */
                dy = out->grad;
            }
            k->bn_bwd(n, in->c, in->h * in->w, in->data, dy, tdata(m, l->tw), l->save_mean, l->save_var,
                      NN_BN_EPS, need_dx ? dx : m->scratch, tgrad(m, l->tw), tgrad(m, l->tb));
            break;
        }
        case NN_RELU:
            if (l->fused == 1) {   /* its gradient goes through the batch norm's or add's fused backward */
                m->slots[l->in].grad_ready = 1;
                continue;
            }
            if (need_dx) k->relu_bwd(count, out->data, dy, dx);
            break;
        case NN_MAXPOOL:
            if (need_dx) {
                baton_nn_pool_geom g = pool_geom(m, l, n);
                if (l->relu_prev >= 0) {   /* straight to d(ReLU input), when the table does it here */
                    nn_layer *r = &m->layers[l->relu_prev];
                    if (k->maxpool_relu_bwd(&g, dy, l->ws, in->data, grad_target(m, r->in))) {
                        grad_commit(m, r->in);
                        r->in_pool = 2;   /* the ReLU layer skips its backward this time */
                        continue;
                    }
                }
                k->maxpool_bwd(&g, dy, l->ws, dx);
            }
            break;
        case NN_GAP:
            if (need_dx) k->gap_bwd(n, in->c, in->h * in->w, dy, dx);
            break;
        case NN_LINEAR: {
            const int flat = flat_now(m, l);   /* l->flat holds the input in NCHW order from forward */
            k->linear_bwd_weights(n, (int)in->per_image, out->c, flat ? l->flat : in->data, dy,
                                  tgrad(m, l->tw), tgrad(m, l->tb));
            if (need_dx) {
                k->linear_bwd_data(n, (int)in->per_image, out->c, dy, tdata(m, l->tw), flat ? l->flat : dx);
                if (flat) k->from_plain(n, in->c, in->h, in->w, l->flat, dx);
            }
            break;
        }
        case NN_DROPOUT:
            if (need_dx) {
                if (l->p > 0.0f)
                    baton_nn_dropout_bwd(count, l->mask, dy, dx);
                else
                    memcpy(dx, dy, sizeof(float) * count);
            }
            break;
        case NN_ADD: {
            /* fused with the ReLU after it: d(sum) = d(ReLU output) where that output is > 0 */
            const nn_layer *r = l->relu_next >= 0 ? &m->layers[l->relu_next] : NULL;
            const float *g = dy;
            if (r && r->fused) {
                const nn_slot *ro = &m->slots[r->out];
                nn_slot *s2 = &m->slots[l->in2];
                if (l->alias_in && !s2->grad_ready) {   /* one copy of the gradient, in in2's buffer */
                    const float *d2 = m->pend == r->out ? m->scratch : NULL;   /* a pending contribution */
                    nn_layer *b = l->bn_prev >= 0 ? &m->layers[l->bn_prev] : NULL;
                    const nn_slot *bi = b ? &m->slots[b->in] : NULL;
                    if (b && !bi->grad_ready && k->bn_add_relu_bwd &&
                        k->bn_add_relu_bwd(n, bi->c, bi->h * bi->w, bi->data, ro->data, grad_of(ro), d2,
                                           tdata(m, b->tw), b->save_mean, b->save_var, NN_BN_EPS, s2->grad,
                                           m->slots[b->in].grad, tgrad(m, b->tw), tgrad(m, b->tb)))
                        b->deferred = 2;   /* and the batch norm's backward: skipped when reached */
                    else
                        b = NULL;
                    if (b || (d2 && k->relu_bwd_add(count, ro->data, grad_of(ro), d2, s2->grad))) {
                        if (d2) m->pend = -1;
                    } else {
                        grad_flush(m);
                        k->relu_bwd(count, ro->data, grad_of(ro), s2->grad);
                    }
                    s2->grad_ready = 1;
                    m->slots[l->in].galias = s2->grad;
                    m->slots[l->in].grad_ready = 1;
                    if (b) grad_commit(m, b->in);
                    continue;
                }
                float *first = need_dx ? dx : l->in2 != 0 ? grad_target(m, l->in2) : NULL;
                if (first) k->relu_bwd(count, ro->data, grad_of(ro), first);
                g = first;
            }
            if (need_dx) {
                if (g != dx) memcpy(dx, g, sizeof(float) * count);
                grad_commit(m, l->in);
            }
            if (l->in2 != 0) {
                float *t = grad_target(m, l->in2);
                if (g != t) memcpy(t, g, sizeof(float) * count);
                grad_commit(m, l->in2);
            }
            continue;
        }
        }
        if (need_dx) grad_commit(m, l->in);
    }
    grad_flush(m);
    return BATON_OK;
}

int baton_nn_train_batch(baton_nn_model *m, const float *x, const int32_t *labels, int n, float *loss,
                         int *correct, baton_err *err)
{
    int rc = baton_nn_forward(m, x, n, err);
    if (rc == BATON_OK) rc = baton_nn_loss(m, labels, loss, correct, err);
    if (rc == BATON_OK) rc = baton_nn_backward(m, err);
    return rc;
}
