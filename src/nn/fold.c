/* fold.c — the folded inference plan's first step: a model's layer graph lowered to a short list of
 * fused operations on "values" (one activation buffer each), ready for fold_dnnl.c to compile. A
 * convolution followed by batch norm gets the BN folded in
 * (w' = w·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β); a following ReLU becomes a post-op; dropout is
 * the identity; a residual add whose one operand is a convolution read only by the add becomes a
 * sum post-op of that convolution writing into the other operand's buffer (legal only when the add
 * is that operand's last reader; the convolution then runs after the shortcut's producer), and the
 * ReLU after the add a second post-op.
 *
 * Contract: the model is read, not changed; weights are copied (and folded) into F, which owns
 * them until nn_fold_free. Anything the plan cannot express is refused with the layer's name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

int nn_grow(void **arr, int *n, int *cap, size_t elem)
{
    if (*n < *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static const float *tensor_f32(const baton_nn_model *m, int t)
{
    return t < 0 ? NULL : (const float *)m->tensors[t].data;
}

static float *copy_floats(const float *src, size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (p && src) memcpy(p, src, n * sizeof *p);
    if (p && !src) memset(p, 0, n * sizeof *p);
    return p;
}

/* A new value of one image's shape c × h × w (producer -1); its index, or -1 on OOM. */
static int new_value(nn_fold *F, int c, int h, int w)
{
    const int cap = F->capvals;
    if (nn_grow((void **)&F->vals, &F->nvals, &F->capvals, sizeof *F->vals)) return -1;
    if (cap != F->capvals || !F->producer) {   /* producer[] is indexed by value: as long as vals */
        int *p = realloc(F->producer, sizeof(int) * (size_t)F->capvals);
        if (!p) return -1;
        F->producer = p;
    }
    F->vals[F->nvals] = (nn_fold_val){.c = c, .h = h, .w = w};
    F->producer[F->nvals] = -1;
    return F->nvals++;
}

static int add_op(nn_fold *F, const nn_fold_op *o)
{
    if (nn_grow((void **)&F->ops, &F->nops, &F->capops, sizeof *F->ops)) return -1;
    F->ops[F->nops] = *o;
    F->ops[F->nops].seq = F->seq++;
    return F->nops++;
}

/* Fold batch norm bn into o's weights (per output channel, wn weights) and bias. */
static int fold_bn(const baton_nn_model *m, const nn_layer *bn, nn_fold_op *o, size_t wn)
{
    if (!o->b && !(o->b = copy_floats(NULL, (size_t)o->oc))) return -1;
    const float *gamma = tensor_f32(m, bn->tw), *beta = tensor_f32(m, bn->tb);
    const float *mean = tensor_f32(m, bn->trm), *var = tensor_f32(m, bn->trv);
    const size_t per = wn / (size_t)o->oc;
    for (int q = 0; q < o->oc; q++) {
        const double sc = (double)gamma[q] / sqrt((double)var[q] + (double)NN_BN_EPS);
        for (size_t e = 0; e < per; e++) o->w[(size_t)q * per + e] = (float)(o->w[(size_t)q * per + e] * sc);
        o->b[q] = (float)(((double)o->b[q] - mean[q]) * sc + beta[q]);
    }
    return 0;
}

/* A convolution or linear layer at i, the batch norm folded into it and the ReLU fused when they
 * follow it and read nothing else; *next is the first layer it did not consume. */
static int lower_dense(const baton_nn_model *m, nn_fold *F, size_t i, int vin, size_t *next)
{
    const nn_layer *li = m->layers, *l = &li[i];
    const size_t nl = m->nlayers;
    nn_fold_op o = {.kind = l->kind == NN_CONV ? NN_FOLD_CONV : NN_FOLD_IP, .name = l->name, .src = vin, .sum = -1,
                    .k = l->k, .stride = l->stride, .pad = l->pad};
    const nn_slot *si = &m->slots[l->in], *so = &m->slots[l->out];
    o.oc = so->c;
    size_t wn = o.kind == NN_FOLD_CONV ? (size_t)so->c * si->c * l->k * l->k : (size_t)so->c * si->c * si->h * si->w;
    const float *bias = tensor_f32(m, l->tb);
    o.w = copy_floats(tensor_f32(m, l->tw), wn);
    o.b = bias ? copy_floats(bias, (size_t)o.oc) : NULL;
    if (!o.w || (bias && !o.b)) goto nomem;
    int out = l->out;
    size_t j = i + 1;
    if (o.kind == NN_FOLD_CONV && j < nl && li[j].kind == NN_BN && li[j].in == out && F->uses[out] == 1) {
        if (fold_bn(m, &li[j], &o, wn)) goto nomem;
        out = li[j].out;
        j++;
    }
    if (j < nl && li[j].kind == NN_RELU && li[j].in == out && F->uses[out] == 1) {
        o.relu = 1;
        out = li[j].out;
        j++;
    }
    o.dst = new_value(F, so->c, so->h, so->w);
    if (o.dst < 0) goto nomem;
    int idx = add_op(F, &o);
    if (idx < 0) goto nomem;
    F->producer[o.dst] = idx;
    F->slot_val[out] = o.dst;
    *next = j;
    return BATON_OK;
nomem:
    free(o.w);
    free(o.b);
    return BATON_ERR_NOMEM;
}

/* Max pooling, or global average pooling over the whole plane. */
static int lower_pool(const baton_nn_model *m, nn_fold *F, const nn_layer *l, int vin)
{
    const nn_slot *so = &m->slots[l->out];
    nn_fold_op o = {.kind = l->kind == NN_MAXPOOL ? NN_FOLD_MAXPOOL : NN_FOLD_AVGPOOL, .name = l->name,
                    .src = vin, .sum = -1, .k = l->k, .stride = l->stride, .oc = so->c};
    if (o.kind == NN_FOLD_AVGPOOL) {
        o.k = F->vals[vin].h;   /* global: the whole (square or not) plane, see fold_dnnl.c */
        o.stride = 1;
    }
    o.dst = new_value(F, so->c, so->h, so->w);
    if (o.dst < 0) return BATON_ERR_NOMEM;
    int idx = add_op(F, &o);
    if (idx < 0) return BATON_ERR_NOMEM;
    F->producer[o.dst] = idx;
    F->slot_val[l->out] = o.dst;
    return BATON_OK;
}

/* A residual add fused into the convolution that produced one of its inputs (read by the add
 * alone), summing onto the other in place; 0 when no input qualifies. */
static int lower_add(nn_fold *F, const nn_layer *l, size_t i)
{
    for (int t = 0; t < 2; t++) {
        const int x = t ? l->in2 : l->in, y = t ? l->in : l->in2;
        const int vx = F->slot_val[x], vy = F->slot_val[y];
        const int p = vx >= 0 ? F->producer[vx] : -1;
        if (p < 0 || vy < 0 || vy == F->in_val) continue;
        nn_fold_op *o = &F->ops[p];
        if ((o->kind != NN_FOLD_CONV && o->kind != NN_FOLD_IP) || o->relu || o->sum >= 0 || F->uses[x] != 1 ||
            F->last_use[y] != (int)i || o->src == vy)
            continue;
        const nn_fold_val *a = &F->vals[vx], *b = &F->vals[vy];
        if (a->c != b->c || a->h != b->h || a->w != b->w) continue;
        o->sum = vy;
        o->dst = vy;
        o->seq = F->seq++;   /* runs after the shortcut's producer */
        F->vals[vx].dead = 1;
        F->producer[vy] = p;
        F->slot_val[l->out] = vy;
        return 1;
    }
    return 0;
}

/* How many layers read each slot, and which reads it last; the input's value. */
static int lower_prepare(const baton_nn_model *m, nn_fold *F)
{
    const size_t ns = m->nslots;
    F->slot_val = malloc(sizeof(int) * ns);
    F->uses = calloc(ns, sizeof(int));
    F->last_use = calloc(ns, sizeof(int));
    if (!F->slot_val || !F->uses || !F->last_use) return BATON_ERR_NOMEM;
    for (size_t i = 0; i < ns; i++) F->slot_val[i] = -1;
    for (size_t i = 0; i < m->nlayers; i++) {
        const nn_layer *l = &m->layers[i];
        F->uses[l->in]++;
        F->last_use[l->in] = (int)i;
        if (l->kind == NN_ADD) {
            F->uses[l->in2]++;
            F->last_use[l->in2] = (int)i;
        }
    }
    F->in_val = new_value(F, m->slots[0].c, m->slots[0].h, m->slots[0].w);
    if (F->in_val < 0) return BATON_ERR_NOMEM;
    F->slot_val[0] = F->in_val;
    return BATON_OK;
}

/* A ReLU not right after its convolution: only after a fused residual add. */
static int lower_relu(nn_fold *F, const nn_layer *l, int vin, baton_err *err)
{
    const int p = F->producer[vin];
    if (!(p >= 0 && (F->ops[p].kind == NN_FOLD_CONV || F->ops[p].kind == NN_FOLD_IP) && F->ops[p].sum >= 0 &&
          !F->ops[p].relu && F->uses[l->in] == 1))
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: ReLU on %s cannot be fused (not after a "
                             "convolution or residual add)", l->name);
    F->ops[p].relu = 1;
    F->slot_val[l->out] = vin;
    return BATON_OK;
}

/* One layer (or a run that fuses into it): *i advances past what was consumed. */
static int lower_layer(const baton_nn_model *m, nn_fold *F, size_t *i, baton_err *err)
{
    const nn_layer *l = &m->layers[*i];
    const int vin = F->slot_val[l->in];
    size_t next = *i + 1;
    int rc = BATON_OK;
    if (vin < 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: layer %s reads an activation never written", l->name);
    switch (l->kind) {
    case NN_CONV:
    case NN_LINEAR:
        rc = lower_dense(m, F, *i, vin, &next);
        break;
    case NN_MAXPOOL:
    case NN_GAP:
        rc = lower_pool(m, F, l, vin);
        break;
    case NN_DROPOUT:   /* evaluation mode: the identity */
        F->slot_val[l->out] = vin;
        break;
    case NN_RELU:
        if ((rc = lower_relu(F, l, vin, err))) return rc;
        break;
    case NN_ADD:
        if (!lower_add(F, l, *i))
            return baton_err_set(err, BATON_ERR_FORMAT, "fast path: residual add after %s cannot be fused",
                                 *i > 0 ? m->layers[*i - 1].name : "the input");
        break;
    default:
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: layer %s: batch norm not after a convolution",
                             l->name);
    }
    if (rc) return baton_err_set(err, rc, "fast path: out of memory");
    *i = next;
    return BATON_OK;
}

int nn_fold_lower(const baton_nn_model *m, nn_fold *F, baton_err *err)
{
    F->in_val = F->out_val = -1;
    int rc = lower_prepare(m, F);
    if (rc) return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    for (size_t i = 0; i < m->nlayers && rc == BATON_OK;) rc = lower_layer(m, F, &i, err);
    if (rc) return rc;
    F->out_val = F->slot_val[m->nslots - 1];
    const int p = F->out_val >= 0 ? F->producer[F->out_val] : -1;
    if (p < 0 || F->ops[p].kind != NN_FOLD_IP)
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: the model does not end in a linear layer");
    /* execution order */
    for (int a = 1; a < F->nops; a++) {
        nn_fold_op t = F->ops[a];
        int b = a - 1;
        while (b >= 0 && F->ops[b].seq > t.seq) {
            F->ops[b + 1] = F->ops[b];
            b--;
        }
        F->ops[b + 1] = t;
    }
    return BATON_OK;
}

void nn_fold_free(nn_fold *F)
{
    for (int i = 0; i < F->nops; i++) {
        free(F->ops[i].w);
        free(F->ops[i].b);
    }
    free(F->ops);
    free(F->vals);
    free(F->slot_val);
    free(F->producer);
    free(F->uses);
    free(F->last_use);
    memset(F, 0, sizeof *F);
}
