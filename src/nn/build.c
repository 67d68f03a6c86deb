/* build.c — the builder the model zoo uses: layers appended in execution order over activation
 * slots, each with its named tensors (parameters and buffers, in PyTorch's state_dict order), their
 * shapes, initialisation rule and place in the arenas (sizes only; model.c allocates).
 *
 * Contract: each nn_b_* returns the new slot, or -1 after recording the first failure in m->berr
 * ("model <name>: ..."; m->build_err its status); after a failure every later call returns -1, so
 * the zoo checks once at the end. */
#include "nn_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records the builder's first failure ("model <name>: " and the message) and returns -1. */
static int fail(baton_nn_model *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(baton_nn_model *m, int code, const char *fmt, ...)
{
    if (!m->build_err) {
        char msg[sizeof m->berr.msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        m->build_err = code;
        baton_err_set(&m->berr, code, "model %s: %s", m->name, msg);
    }
    return -1;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(p, nc * elem);
    if (q) *cap = nc;
    return q;
}

static int add_slot(baton_nn_model *m, int c, int h, int w)
{
    if (m->build_err) return -1;
    nn_slot *s = grow(m->slots, &m->cap_slots, m->nslots + 1, sizeof *s);
    if (!s) return fail(m, BATON_ERR_NOMEM, "out of memory");
    m->slots = s;
    nn_slot *t = &s[m->nslots];
    memset(t, 0, sizeof *t);
    t->c = c;
    t->h = h;
    t->w = w;
    t->per_image = (size_t)c * h * w;
    if (t->per_image > m->max_slot) m->max_slot = t->per_image;
    return (int)m->nslots++;
}

static nn_layer *add_layer(baton_nn_model *m, int kind, const char *name, int in)
{
    if (m->build_err || in < 0) return NULL;
    nn_layer *l = grow(m->layers, &m->cap_layers, m->nlayers + 1, sizeof *l);
    if (!l) {
        fail(m, BATON_ERR_NOMEM, "out of memory");
        return NULL;
    }
    m->layers = l;
    l = &l[m->nlayers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    l->in = in;
    l->in2 = l->out = l->tw = l->tb = l->trm = l->trv = l->tnbt = -1;
    return l;
}

static int add_tensor(baton_nn_model *m, const char *prefix, const char *leaf, int kind, int dtype, int ndim,
                      const int64_t *shape, int init, float bound)
{
    if (m->build_err) return -1;
    nn_tensor *t = grow(m->tensors, &m->cap_tensors, m->ntensors + 1, sizeof *t);
    if (!t) return fail(m, BATON_ERR_NOMEM, "out of memory");
    m->tensors = t;
    t = &t[m->ntensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s.%s", prefix, leaf);
    t->kind = kind;
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->numel *= (size_t)shape[i];
    }
    t->init = init;
    t->bound = bound;
    if (kind == BATON_NN_PARAM) {
        t->off = m->nparam;
        m->nparam += nn_align_up(t->numel);
        m->param_count += t->numel;
    } else if (dtype == BATON_NN_F32) {
        t->off = m->nbuf;
        m->nbuf += nn_align_up(t->numel);
    } else {
        t->off = m->ni64;
        m->ni64 += 1;
    }
    return (int)m->ntensors++;
}

int nn_b_input(baton_nn_model *m, int c, int h, int w) { return add_slot(m, c, h, w); }

int nn_b_conv(baton_nn_model *m, const char *name, int in, int oc, int k, int stride, int pad, int bias)
{
    nn_layer *l = add_layer(m, NN_CONV, name, in);
    if (!l) return -1;
    const nn_slot *s = &m->slots[in];
    int oh = (s->h + 2 * pad - k) / stride + 1, ow = (s->w + 2 * pad - k) / stride + 1;
    if (s->h + 2 * pad < k || s->w + 2 * pad < k || oh < 1 || ow < 1)
        return fail(m, BATON_ERR_ARG, "layer %s: input is smaller than the kernel", name);
    l->k = k;
    l->stride = stride;
    l->pad = pad;
    float bound = 1.0f / sqrtf((float)(s->c * k * k));
    int64_t ws[4] = {oc, s->c, k, k}, bs[1] = {oc};
    l->tw = add_tensor(m, name, "weight", BATON_NN_PARAM, BATON_NN_F32, 4, ws, NN_INIT_UNIFORM, bound);
    if (bias) l->tb = add_tensor(m, name, "bias", BATON_NN_PARAM, BATON_NN_F32, 1, bs, NN_INIT_UNIFORM, bound);
    l = &m->layers[m->nlayers - 1];
    return l->out = add_slot(m, oc, oh, ow);
}

int nn_b_bn(baton_nn_model *m, const char *name, int in)
{
    nn_layer *l = add_layer(m, NN_BN, name, in);
    if (!l) return -1;
    const nn_slot s = m->slots[in];
    int64_t cs[1] = {s.c};
    int tw = add_tensor(m, name, "weight", BATON_NN_PARAM, BATON_NN_F32, 1, cs, NN_INIT_ONES, 0);
    int tb = add_tensor(m, name, "bias", BATON_NN_PARAM, BATON_NN_F32, 1, cs, NN_INIT_ZEROS, 0);
    int trm = add_tensor(m, name, "running_mean", BATON_NN_BUFFER, BATON_NN_F32, 1, cs, NN_INIT_ZEROS, 0);
    int trv = add_tensor(m, name, "running_var", BATON_NN_BUFFER, BATON_NN_F32, 1, cs, NN_INIT_ONES, 0);
    int tn = add_tensor(m, name, "num_batches_tracked", BATON_NN_BUFFER, BATON_NN_I64, 0, cs, NN_INIT_ZEROS, 0);
    if (m->build_err) return -1;
    l = &m->layers[m->nlayers - 1];
    l->tw = tw;
    l->tb = tb;
    l->trm = trm;
    l->trv = trv;
    l->tnbt = tn;
    return l->out = add_slot(m, s.c, s.h, s.w);
}

int nn_b_relu(baton_nn_model *m, int in)
{
    nn_layer *l = add_layer(m, NN_RELU, "relu", in);
    if (!l) return -1;
    const nn_slot s = m->slots[in];
    int out = add_slot(m, s.c, s.h, s.w);
    return m->layers[m->nlayers - 1].out = out;
}

int nn_b_maxpool(baton_nn_model *m, int in, int k, int stride)
{
    nn_layer *l = add_layer(m, NN_MAXPOOL, "max_pool2d", in);
    if (!l) return -1;
    const nn_slot s = m->slots[in];
    if (s.h < k || s.w < k) return fail(m, BATON_ERR_ARG, "max_pool2d: input smaller than the pooling window");
    l->k = k;
    l->stride = stride;
    int oh = (s.h - k) / stride + 1, ow = (s.w - k) / stride + 1;
    int out = add_slot(m, s.c, oh, ow);
    return m->layers[m->nlayers - 1].out = out;
}

int nn_b_gap(baton_nn_model *m, int in)
{
    if (!add_layer(m, NN_GAP, "adaptive_avg_pool2d", in)) return -1;
    int out = add_slot(m, m->slots[in].c, 1, 1);
    return m->layers[m->nlayers - 1].out = out;
}

int nn_b_linear(baton_nn_model *m, const char *name, int in, int out_features, int bias)
{
    nn_layer *l = add_layer(m, NN_LINEAR, name, in);
    if (!l) return -1;
    const int fan_in = (int)m->slots[in].per_image;
    float bound = 1.0f / sqrtf((float)fan_in);
    int64_t ws[2] = {out_features, fan_in}, bs[1] = {out_features};
    int tw = add_tensor(m, name, "weight", BATON_NN_PARAM, BATON_NN_F32, 2, ws, NN_INIT_UNIFORM, bound);
    int tb = bias ? add_tensor(m, name, "bias", BATON_NN_PARAM, BATON_NN_F32, 1, bs, NN_INIT_UNIFORM, bound) : -1;
    if (m->build_err) return -1;
    l = &m->layers[m->nlayers - 1];
    l->tw = tw;
    l->tb = tb;
    int out = add_slot(m, out_features, 1, 1);
    return m->layers[m->nlayers - 1].out = out;
}

int nn_b_dropout(baton_nn_model *m, int in, float p)
{
    nn_layer *l = add_layer(m, NN_DROPOUT, "dropout", in);
    if (!l) return -1;
    l->p = p;
    const nn_slot s = m->slots[in];
    int out = add_slot(m, s.c, s.h, s.w);
    return m->layers[m->nlayers - 1].out = out;
}

int nn_b_add(baton_nn_model *m, int a, int b)
{
    nn_layer *l = add_layer(m, NN_ADD, "add", a);
    if (!l || b < 0) return -1;
    l->in2 = b;
    const nn_slot sa = m->slots[a], sb = m->slots[b];
    if (sa.c != sb.c || sa.h != sb.h || sa.w != sb.w)
        return fail(m, BATON_ERR_ARG, "residual add: shapes differ");
    int out = add_slot(m, sa.c, sa.h, sa.w);
    return m->layers[m->nlayers - 1].out = out;
}
