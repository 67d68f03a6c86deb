/* lower.c — the first step of the fast path: a model's layer graph lowered to a short list of
 * fused operations on "values" (one activation buffer each), ready for fast.c to turn into oneDNN
 * primitives. A convolution followed by batch norm gets the BN folded in
 * (w' = w·γ/√(σ²+ε), b' = (b − μ)·γ/√(σ²+ε) + β); a following ReLU becomes a post-op; dropout is
 * the identity; a residual add whose one operand is a convolution read only by the add becomes a
 * sum post-op of that convolution writing into the other operand's buffer (legal only when the add
 * is that operand's last reader; the convolution then runs after the shortcut's producer), and the
 * ReLU after the add a second post-op. Anything else is refused with the layer's name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast_internal.h"


static float *copy_floats(const float *src, size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (p && src) memcpy(p, src, n * sizeof *p);
    if (p && !src) memset(p, 0, n * sizeof *p);
    return p;
}

static int slot_shape(const baton_nn_model *m, int s, int *c, int *h, int *w)
{
    return baton_nn_model_slot(m, (size_t)s, c, h, w);
}

static int add_op(lowering *L, const lop *o)
{
    if (fast_push((void **)&L->ops, &L->nops, &L->capops, sizeof *L->ops)) return -1;
    L->ops[L->nops] = *o;
    L->ops[L->nops].seq = L->seq++;
    return L->nops++;
}

static int grow_value_maps(lowering *L, infer_fast *f)
{
    /* producer[] is indexed by value: keep it as long as vals */
    int *p = realloc(L->producer, sizeof(int) * (size_t)(f->capvals ? f->capvals : 16));
    if (!p) return -1;
    L->producer = p;
    return 0;
}

/* A convolution or linear layer at li[i], the batch norm folded into it and the ReLU fused when
 * they follow it and read nothing else; *next is the first layer it did not consume. */
static int lower_dense(const baton_nn_model *m, infer_fast *f, lowering *L, const baton_nn_layer_info *li,
                       size_t nl, size_t i, int vin, size_t *next)
{
    const baton_nn_layer_info *l = &li[i];
    lop o = {.kind = l->kind == BATON_NN_L_CONV ? K_CONV : K_IP, .name = l->name, .src = vin, .sum = -1,
             .k = l->k, .stride = l->stride, .pad = l->pad};
    int ic, ih, iw, oc, oh, ow;
    slot_shape(m, l->in, &ic, &ih, &iw);
    slot_shape(m, l->out, &oc, &oh, &ow);
    o.oc = oc;
    size_t wn = o.kind == K_CONV ? (size_t)oc * ic * l->k * l->k : (size_t)oc * ic * ih * iw;
    o.w = copy_floats(l->weight, wn);
    o.b = l->bias ? copy_floats(l->bias, (size_t)oc) : NULL;
    if (!o.w || (l->bias && !o.b)) goto nomem;
    int out = l->out;
    size_t j = i + 1;
    if (o.kind == K_CONV && j < nl && li[j].kind == BATON_NN_L_BN && li[j].in == out && L->uses[out] == 1) {
        const baton_nn_layer_info *bn = &li[j];
        if (!o.b && !(o.b = copy_floats(NULL, (size_t)oc))) goto nomem;
        const size_t per = wn / (size_t)oc;
        for (int q = 0; q < oc; q++) {
            const double sc = (double)bn->weight[q] / sqrt((double)bn->running_var[q] + (double)bn->eps);
            for (size_t e = 0; e < per; e++) o.w[(size_t)q * per + e] = (float)(o.w[(size_t)q * per + e] * sc);
            o.b[q] = (float)(((double)o.b[q] - bn->running_mean[q]) * sc + bn->bias[q]);
        }
        out = bn->out;
        j++;
    }
    if (j < nl && li[j].kind == BATON_NN_L_RELU && li[j].in == out && L->uses[out] == 1) {
        o.relu = 1;
        out = li[j].out;
        j++;
    }
    o.dst = fast_new_value(f, oc, oh, ow);
    if (o.dst < 0 || grow_value_maps(L, f)) goto nomem;
    int idx = add_op(L, &o);
    if (idx < 0) goto nomem;
    L->producer[o.dst] = idx;
    L->slot_val[out] = o.dst;
    *next = j;
    return BATON_OK;
nomem:
    free(o.w);
    free(o.b);
    return BATON_ERR_NOMEM;
}

/* Max pooling, or global average pooling over the whole plane. */
static int lower_pool(const baton_nn_model *m, infer_fast *f, lowering *L, const baton_nn_layer_info *l, int vin)
{
    int oc, oh, ow;
    slot_shape(m, l->out, &oc, &oh, &ow);
    lop o = {.kind = l->kind == BATON_NN_L_MAXPOOL ? K_MAXPOOL : K_AVGPOOL, .name = l->name, .src = vin,
             .sum = -1, .k = l->k, .stride = l->stride, .oc = oc};
    if (o.kind == K_AVGPOOL) {
        o.k = f->vals[vin].h;   /* global: the whole (square or not) plane, see make_pool */
        o.stride = 1;
    }
    o.dst = fast_new_value(f, oc, oh, ow);
    if (o.dst < 0 || grow_value_maps(L, f)) return BATON_ERR_NOMEM;
    int idx = add_op(L, &o);
    if (idx < 0) return BATON_ERR_NOMEM;
    L->producer[o.dst] = idx;
    L->slot_val[l->out] = o.dst;
    return BATON_OK;
}

/* A residual add fused into the convolution that produced one of its inputs (read by the add
 * alone), summing onto the other in place; 0 when no input qualifies. */
static int lower_add(infer_fast *f, lowering *L, const baton_nn_layer_info *l, size_t i)
{
    for (int t = 0; t < 2; t++) {
        const int x = t ? l->in2 : l->in, y = t ? l->in : l->in2;
        const int vx = L->slot_val[x], vy = L->slot_val[y];
        const int p = vx >= 0 ? L->producer[vx] : -1;
        if (p < 0 || vy < 0 || vy == f->in_val) continue;
        lop *o = &L->ops[p];
        if ((o->kind != K_CONV && o->kind != K_IP) || o->relu || o->sum >= 0 || L->uses[x] != 1 ||
            L->last_use[y] != (int)i || o->src == vy)
            continue;
        if (f->vals[vx].c != f->vals[vy].c || f->vals[vx].h != f->vals[vy].h || f->vals[vx].w != f->vals[vy].w)
            continue;
        o->sum = vy;
        o->dst = vy;
        o->seq = L->seq++;   /* runs after the shortcut's producer */
        f->vals[vx].dead = 1;
        L->producer[vy] = p;
        L->slot_val[l->out] = vy;
        return 1;
    }
    return 0;
}

/* How many layers read each slot, and which reads it last; the input's value. */
static int lower_prepare(const baton_nn_model *m, infer_fast *f, lowering *L, baton_nn_layer_info *li, size_t nl,
                         size_t ns)
{
    L->slot_val = malloc(sizeof(int) * ns);
    L->uses = calloc(ns, sizeof(int));
    L->last_use = calloc(ns, sizeof(int));
    if (!L->slot_val || !L->uses || !L->last_use) return BATON_ERR_NOMEM;
    for (size_t i = 0; i < ns; i++) L->slot_val[i] = -1;
    for (size_t i = 0; i < nl; i++) {
        baton_nn_model_layer(m, i, &li[i]);
        L->uses[li[i].in]++;
        L->last_use[li[i].in] = (int)i;
        if (li[i].in2 >= 0) {
            L->uses[li[i].in2]++;
            L->last_use[li[i].in2] = (int)i;
        }
    }
    int c, h, w;
    slot_shape(m, 0, &c, &h, &w);
    f->in_val = fast_new_value(f, c, h, w);
    if (f->in_val < 0 || grow_value_maps(L, f)) return BATON_ERR_NOMEM;
    L->slot_val[0] = f->in_val;
    L->producer[f->in_val] = -1;
    return BATON_OK;
}

/* One layer (or a run that fuses into it): *i advances past what was consumed. */
static int lower_layer(const baton_nn_model *m, infer_fast *f, lowering *L, const baton_nn_layer_info *li, size_t nl,
                       size_t *i, baton_err *err)
{
    const baton_nn_layer_info *l = &li[*i];
    const int vin = L->slot_val[l->in];
    size_t next = *i + 1;
    int rc = BATON_OK;
    if (vin < 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: layer %s reads an activation never written", l->name);
    switch (l->kind) {
    case BATON_NN_L_CONV:
    case BATON_NN_L_LINEAR:
        rc = lower_dense(m, f, L, li, nl, *i, vin, &next);
        break;
    case BATON_NN_L_MAXPOOL:
    case BATON_NN_L_GAP:
        rc = lower_pool(m, f, L, l, vin);
        break;
    case BATON_NN_L_DROPOUT:   /* evaluation mode: the identity */
        L->slot_val[l->out] = vin;
        break;
    case BATON_NN_L_RELU: {
        /* a ReLU not right after its convolution: only after a fused residual add */
        const int p = L->producer[vin];
        if (!(p >= 0 && (L->ops[p].kind == K_CONV || L->ops[p].kind == K_IP) && L->ops[p].sum >= 0 &&
              !L->ops[p].relu && L->uses[l->in] == 1))
            return baton_err_set(err, BATON_ERR_FORMAT, "fast path: ReLU on %s cannot be fused (not after a "
                                 "convolution or residual add)", l->name);
        L->ops[p].relu = 1;
        L->slot_val[l->out] = vin;
        break;
    }
    case BATON_NN_L_ADD:
        if (!lower_add(f, L, l, *i))
            return baton_err_set(err, BATON_ERR_FORMAT, "fast path: residual add after %s cannot be fused",
                                 *i > 0 ? li[*i - 1].name : "the input");
        break;
    default:
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: layer %s: batch norm not after a convolution",
                             l->name);
    }
    if (rc) return baton_err_set(err, rc, "fast path: out of memory");
    *i = next;
    return BATON_OK;
}

int fast_lower(const baton_nn_model *m, infer_fast *f, lowering *L, baton_err *err)
{
    const size_t nl = baton_nn_model_nlayers(m), ns = baton_nn_model_nslots(m);
    baton_nn_layer_info *li = calloc(nl ? nl : 1, sizeof *li);
    int rc = li ? lower_prepare(m, f, L, li, nl, ns) : BATON_ERR_NOMEM;
    if (rc) {
        free(li);
        return baton_err_set(err, BATON_ERR_NOMEM, "fast path: out of memory");
    }
    for (size_t i = 0; i < nl && rc == BATON_OK;) rc = lower_layer(m, f, L, li, nl, &i, err);
    free(li);
    if (rc) return rc;
    f->out_val = L->slot_val[ns - 1];
    const int p = f->out_val >= 0 ? L->producer[f->out_val] : -1;
    if (p < 0 || L->ops[p].kind != K_IP)
        return baton_err_set(err, BATON_ERR_FORMAT, "fast path: the model does not end in a linear layer");
    /* execution order */
    for (int a = 1; a < L->nops; a++) {
        lop t = L->ops[a];
        int b = a - 1;
        while (b >= 0 && L->ops[b].seq > t.seq) {
            L->ops[b + 1] = L->ops[b];
            b--;
        }
        L->ops[b + 1] = t;
    }
    return BATON_OK;
}

void fast_lowering_free(lowering *L)
{
    for (int i = 0; i < L->nops; i++) {
        free(L->ops[i].w);
        free(L->ops[i].b);
    }
    free(L->ops);
    free(L->slot_val);
    free(L->producer);
    free(L->uses);
    free(L->last_use);
    memset(L, 0, sizeof *L);
}
