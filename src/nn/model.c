/* model.c — a model's life: created from its spec as a small static graph of layers over
 * activation slots (zoo.c through build.c's builder), its arenas allocated and initialised as
 * PyTorch does by default, planned for its kernel table (fuse.c; again when the table changes),
 * freed; and the named-tensor view (state_dict order) checkpoints use. pass.c runs its passes.
 *
 * Contract: all memory is allocated in baton_nn_model_create (parameters, gradients, buffers and
 * activations each in one arena, every tensor 64-byte aligned within it, and the plans); forward,
 * loss, backward and a change of table allocate nothing here (planning may let a table's predicate
 * reserve the kernel's own buffers for the largest batch). */
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

static int finalize(baton_nn_model *m, int init_params, baton_err *err)
{
    const size_t B = (size_t)m->spec.max_batch;
    /* activation arena: per slot data + grad, per layer extras */
    size_t nact = 0, nws = 0;
    for (size_t i = 0; i < m->nslots; i++)
        if (m->slots[i].c > NN_BN_MAX_C && needs_flat(&m->slots[i]))   /* blocked, h * w > 1 */
            return baton_err_set(err, BATON_ERR_ARG, "model %s: an activation of %d channels (at most %d with "
                                 "more than one pixel)", m->name, m->slots[i].c, NN_BN_MAX_C);
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
    m->params16 = aligned_alloc(64, sizeof(uint16_t) * ((m->nparam + 31) / 32 * 32 + 32));   /* 64-byte multiple */
    m->params16_stale = 1;
    m->i64 = calloc(m->ni64 ? m->ni64 : 1, sizeof(int64_t));
    m->acts_bytes = sizeof(float) * (nact + nscratch);
    m->acts = baton_bigmem_alloc(m->acts_bytes);   /* zeroed by the kernel, touched by the first step */
    m->wsa = aligned_alloc(64, sizeof(int32_t) * (nws ? nws : NN_ALIGN_ELEMS));
    if (!m->params || !m->params16 || !m->grads || !m->bufs || !m->i64 || !m->acts || !m->wsa)
        return baton_err_set(err, BATON_ERR_NOMEM, "model %s: cannot allocate %zu activation floats for batch %d",
                             m->name, nact + nscratch, m->spec.max_batch);
    memset(m->params, 0, sizeof(float) * m->nparam);
    memset(m->grads, 0, sizeof(float) * m->nparam);
    memset(m->bufs, 0, sizeof(float) * m->nbuf);
    memset(m->wsa, 0, sizeof(int32_t) * nws);
    m->scratch = m->acts + nact;
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
    if (spec->classes < 1 || spec->classes > 1000000)
        return baton_err_set(err, BATON_ERR_ARG, "model %s: bad output count %d (need at least 1)", spec->name,
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
    if (rc == BATON_OK) rc = nn_plan_alloc(m, err);
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
    free(m->ready_op);
    free(m->bn_sync_buf);
    free(m->layers);
    free(m->slots);
    free(m->tensors);
    free(m->params);
    free(m->params16);
    free(m->grads);
    free(m->bufs);
    free(m->i64);
    baton_bigmem_free(m->acts, m->acts_bytes);
    free(m->wsa);
    nn_plan_free(m);
    free(m);
}

const char *baton_nn_model_name(const baton_nn_model *m) { return m->name; }
void baton_nn_model_set_kernels(baton_nn_model *m, const baton_nn_kernels *k)
{
    m->k = k ? k : baton_nn_kernels_reference();
    nn_plan_fusions(m);   /* the ops for this table */
    m->fwd_n = 0;         /* the activations are the old table's (its layout, its plan) */
    m->params16_stale = 1;/* the optimizer kept the copy only while the table read it */
    m->have_loss = 0;
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
    /* a writable pointer to a parameter: the bfloat16 copy is made again before the next forward
     * on a table that reads it (bf16.c); the model itself is not const, only this view of it */
    if (s->kind == BATON_NN_PARAM) ((baton_nn_model *)m)->params16_stale = 1;
    return BATON_OK;
}

int baton_nn_model_find(const baton_nn_model *m, const char *name, baton_nn_tensor *t)
{
    for (size_t i = 0; i < m->ntensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return baton_nn_model_tensor(m, i, t);
    return BATON_ERR_NOTFOUND;
}
