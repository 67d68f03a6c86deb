/* fuse.c — which layers of a model run fused in training, for the model's kernel table: a ReLU
 * with the layer before it (batch norm, residual add, convolution) or inside the max pool after it,
 * a batch norm inside the residual add after it, an add's two input gradients in one buffer, and
 * a batch norm's statistics taken by the convolution before it.
 * The plan lives in the layers' fields (nn_internal.h: relu_next, fused, relu_prev, in_pool,
 * add_next, bn_prev, bn_res, alias_in, bn_next); model.c's forward and backward follow it, and fall back to
 * the separate kernels where a fused entry declines a geometry at run time.
 *
 * Contract: nn_plan_fusions is called when a model is created and whenever its table changes; it
 * looks only at the graph and at which optional entries the table has. */
#include "nn_internal.h"

/* layers reading a slot (an add counts for each of its inputs) */
static int slot_users(const baton_nn_model *m, int slot)
{
    int users = 0;
    for (size_t lj = 0; lj < m->nlayers; lj++)
        users += (m->layers[lj].in == slot) + (m->layers[lj].kind == NN_ADD && m->layers[lj].in2 == slot);
    return users;
}

/* Where the table fuses a layer with a ReLU next to it (training only). Forward and backward: a batch
 * norm or residual add whose output feeds exactly one layer, the ReLU right after it, runs with it as
 * one kernel (the first layer's own output slot then stays unused in training; inference runs the
 * two layers as before); the add's backward takes d(ReLU output) masked by the ReLU output. Forward
 * only: a convolution feeding only the ReLU after it writes the ReLU's output (the ReLU's backward is
 * unchanged: it reads only that output). Backward only: a max pool whose input is the output of a
 * ReLU that feeds only the pool writes d(ReLU input) directly. */
static int only_user(const baton_nn_model *m, size_t li)
{
    const int slot = m->layers[li].out;
    if (slot == m->out_slot || li + 1 >= m->nlayers || m->layers[li + 1].in != slot) return 0;
    return slot_users(m, slot) == 1;
}

static void fuse_relus(baton_nn_model *m)
{
    for (size_t li = 0; li < m->nlayers; li++) {
        nn_layer *l = &m->layers[li];
        l->relu_next = l->relu_prev = -1;
        l->fused = l->in_pool = 0;
    }
    const int bn = m->k->bn_relu_fwd_train && m->k->bn_relu_bwd, add = m->k->add_relu != NULL;
    const int conv = m->k->conv_relu_fwd != NULL, pool = m->k->maxpool_relu_bwd != NULL;
    for (size_t li = 0; li + 1 < m->nlayers; li++) {
        nn_layer *b = &m->layers[li], *r = &m->layers[li + 1];
        if (r->kind != NN_RELU || !only_user(m, li)) continue;
        if ((b->kind == NN_BN && bn) || (b->kind == NN_ADD && add)) {
            b->relu_next = (int)li + 1;
            r->fused = 1;
        } else if (b->kind == NN_CONV && conv) {
            b->relu_next = (int)li + 1;
            r->fused = 2;
        }
    }
    for (size_t li = 0; li + 1 < m->nlayers; li++) {
        nn_layer *r = &m->layers[li], *p = &m->layers[li + 1];
        if (r->kind == NN_RELU && p->kind == NN_MAXPOOL && pool && r->fused != 1 && r->in != 0 && only_user(m, li)) {
            p->relu_prev = (int)li;
            r->in_pool = 1;
        }
    }
}

static int producer(const baton_nn_model *m, int slot)
{
    for (size_t lj = 0; lj < m->nlayers; lj++)
        if (m->layers[lj].out == slot) return (int)lj;
    return -1;
}

/* Residual adds (after fuse_relus). Forward: a batch norm whose only reader is an add with a fused
 * ReLU runs inside that add (bn_add_relu_fwd_train), so the batch norm's output is never written.
 * Backward: the add gives both inputs the same gradient; in's may stay in in2's buffer (alias_in)
 * instead of being copied when in has no other reader and no layer between in's producer and the
 * add reads in2 — then nothing changes that buffer before in's producer has read it (backward runs
 * the layers in reverse, and in2's gradient changes only by its readers' contributions). */
static void plan_adds(baton_nn_model *m)
{
    for (size_t li = 0; li < m->nlayers; li++) {
        nn_layer *l = &m->layers[li];
        l->add_next = l->bn_prev = l->bn_res = -1;
        l->deferred = l->alias_in = 0;
    }
    for (size_t ai = 0; ai < m->nlayers; ai++) {
        nn_layer *a = &m->layers[ai];
        if (a->kind != NN_ADD) continue;
        for (int side = 0; side < 2 && a->relu_next >= 0 && m->k->bn_add_relu_fwd_train; side++) {
            const int s = side ? a->in2 : a->in, p = producer(m, s);
            nn_layer *b = p >= 0 ? &m->layers[p] : NULL;
            if (b && b->kind == NN_BN && b->relu_next < 0 && b->add_next < 0 && slot_users(m, s) == 1 &&
                a->in != a->in2) {
                a->bn_prev = p;
                a->bn_res = side ? a->in : a->in2;
                b->add_next = (int)ai;
                break;
            }
        }
        const int p = producer(m, a->in);
        if (a->in == 0 || a->in2 == 0 || a->in == a->in2 || p < 0 || slot_users(m, a->in) != 1) continue;
        int ok = 1;
        for (size_t lj = (size_t)p + 1; lj < ai && ok; lj++)
            ok = m->layers[lj].in != a->in2 && !(m->layers[lj].kind == NN_ADD && m->layers[lj].in2 == a->in2);
        a->alias_in = ok;
    }
}

/* Batch-norm statistics taken by the convolution before (training forward): a convolution whose
 * output's only reader is a batch norm right after it writes that output and its per-channel sums
 * in one pass (conv_bn_stats_fwd); the batch norm (alone or inside its ReLU or add) then only
 * normalises (bn_apply_train). */
static void plan_conv_stats(baton_nn_model *m)
{
    for (size_t li = 0; li < m->nlayers; li++) {
        m->layers[li].bn_next = -1;
        m->layers[li].stats_ready = 0;
    }
    if (!m->k->conv_bn_stats_fwd || !m->k->bn_apply_train) return;
    for (size_t li = 0; li + 1 < m->nlayers; li++)
        if (m->layers[li].kind == NN_CONV && m->layers[li + 1].kind == NN_BN && only_user(m, li))
            m->layers[li].bn_next = (int)li + 1;
}

void nn_plan_fusions(baton_nn_model *m)
{
    fuse_relus(m);
    plan_adds(m);
    plan_conv_stats(m);
}
