/* graph.c — the read-only view of a model's layer graph (baton_nn_model_layer / _slot): what each
 * layer is, which activation slots it reads and writes, and pointers to its parameters, so that
 * other code (the inference fast path) can compile the model without knowing nn's internals.
 *
 * Contract: nothing is copied or allocated; the pointers are the model's own tensors and stay
 * valid while the model lives. Indices out of range give BATON_ERR_ARG. */
#include "nn_internal.h"

size_t baton_nn_model_nlayers(const baton_nn_model *m) { return m->nlayers; }
size_t baton_nn_model_nslots(const baton_nn_model *m) { return m->nslots; }

int baton_nn_model_slot(const baton_nn_model *m, size_t i, int *c, int *h, int *w)
{
    if (i >= m->nslots) return BATON_ERR_ARG;
    *c = m->slots[i].c;
    *h = m->slots[i].h;
    *w = m->slots[i].w;
    return BATON_OK;
}

static const float *tensor_f32(const baton_nn_model *m, int t)
{
    return t < 0 ? NULL : (const float *)m->tensors[t].data;
}

int baton_nn_model_layer(const baton_nn_model *m, size_t i, baton_nn_layer_info *li)
{
    if (i >= m->nlayers) return BATON_ERR_ARG;
    const nn_layer *l = &m->layers[i];
    static const int kinds[] = {
        [NN_CONV] = BATON_NN_L_CONV, [NN_BN] = BATON_NN_L_BN, [NN_RELU] = BATON_NN_L_RELU,
        [NN_MAXPOOL] = BATON_NN_L_MAXPOOL, [NN_GAP] = BATON_NN_L_GAP, [NN_LINEAR] = BATON_NN_L_LINEAR,
        [NN_DROPOUT] = BATON_NN_L_DROPOUT, [NN_ADD] = BATON_NN_L_ADD,
    };
    li->kind = kinds[l->kind];
    li->name = l->name;
    li->in = l->in;
    li->in2 = l->kind == NN_ADD ? l->in2 : -1;
    li->out = l->out;
    li->k = l->k;
    li->stride = l->stride;
    li->pad = l->pad;
    li->weight = tensor_f32(m, l->tw);
    li->bias = tensor_f32(m, l->tb);
    li->running_mean = l->kind == NN_BN ? tensor_f32(m, l->trm) : NULL;
    li->running_var = l->kind == NN_BN ? tensor_f32(m, l->trv) : NULL;
    li->eps = l->kind == NN_BN ? NN_BN_EPS : 0.0f;
    return BATON_OK;
}
