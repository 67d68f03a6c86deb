/* graph.c — what other components may ask of a model's layer graph: its size, the shape of each
 * activation slot, and the multiply-accumulates of one image's forward (for pricing and
 * efficiency). Code that compiles the graph lives in nn (the training plan in fuse.c, the folded
 * inference plan in fold.c), so no layer's internals are exported.
 *
 * Contract: nothing is copied or allocated; indices out of range give BATON_ERR_ARG. */
#include "nn_internal.h"

size_t baton_nn_model_nlayers(const baton_nn_model *m) { return m->nlayers; }

int baton_nn_model_slot(const baton_nn_model *m, size_t i, int *c, int *h, int *w)
{
    if (i >= m->nslots) return BATON_ERR_ARG;
    *c = m->slots[i].c;
    *h = m->slots[i].h;
    *w = m->slots[i].w;
    return BATON_OK;
}

double baton_nn_model_macs(const baton_nn_model *m)
{
    double macs = 0;
    for (size_t i = 0; i < m->nlayers; i++) {
        const nn_layer *l = &m->layers[i];
        const nn_slot *a = &m->slots[l->in], *b = &m->slots[l->out];
        if (l->kind == NN_CONV) macs += (double)b->c * b->h * b->w * a->c * l->k * l->k;
        else if (l->kind == NN_LINEAR) macs += (double)b->c * a->c * a->h * a->w;
    }
    return macs;
}
