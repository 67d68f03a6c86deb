/* ops.c — the forward and backward of every op kind a plan is made of (fuse.c decides which ops a
 * model runs, pass.c runs them): single layers (convolution, batch norm, ReLU, pooling, linear,
 * dropout, residual add) and fused ones, each calling the kernel-table entries the plan chose.
 * A fused op's backward is the mirror of its forward: conv+relu forward is one convolution with the
 * ReLU as post-op, backward the ReLU's backward then the convolution's; bn+add+relu is one kernel
 * each way.
 *
 * Gradients: an op reads d(its output) from op->dy's grad (cleared first when nothing wrote it)
 * and, with op->dy2, a second contribution to it from scratch; it writes d(input) where op->gx
 * says — the slot's grad (its first contribution) or scratch (a later one), then adds scratch into
 * the grad (NN_G_ADD) or leaves it for the next op's dy2 (NN_G_PEND). Nothing here decides a route.
 *
 * Contract: no allocation; an op returns 0 only when an optional entry declined a geometry its
 * predicate had accepted (the plan only uses entries so), which pass.c reports as an error. */
#include "nn_internal.h"

#include <string.h>

static float *tdata(const baton_nn_model *m, int t) { return t < 0 ? NULL : (float *)m->tensors[t].data; }
/* a convolution's or linear layer's weights as the table reads them: the f32 tensor, or with
 * weights_bf16 its bfloat16 copy (bf16.c), passed through the entry's float pointer */
static const float *wdata(const baton_nn_model *m, int t)
{
    if (!m->k->weights_bf16) return tdata(m, t);
    return (const float *)(const void *)(m->params16 + m->tensors[t].off);
}
static float *tgrad(const baton_nn_model *m, int t) { return t < 0 ? NULL : m->tensors[t].grad; }
static const nn_layer *layer(const baton_nn_model *m, int i) { return &m->layers[i]; }
static const nn_slot *slot(const baton_nn_model *m, int i) { return &m->slots[i]; }
static size_t count(const baton_nn_model *m, int s, int n) { return m->slots[s].per_image * (size_t)n; }
/* a slot's data as bfloat16 (nn_slot.bf16: between convolutions and batch norms, fuse.c) */
static uint16_t *data16(const nn_slot *s) { return (uint16_t *)(void *)s->data; }

baton_nn_conv_geom nn_conv_geom(const baton_nn_model *m, const nn_layer *l, int n)
{
    const nn_slot *i = slot(m, l->in), *o = slot(m, l->out);
    baton_nn_conv_geom g = {n, i->c, i->h, i->w, o->c, l->k, l->k, l->stride, l->pad, o->h, o->w};
    return g;
}

baton_nn_pool_geom nn_pool_geom(const baton_nn_model *m, const nn_layer *l, int n)
{
    const nn_slot *i = slot(m, l->in), *o = slot(m, l->out);
    baton_nn_pool_geom g = {n, i->c, i->h, i->w, l->k, l->stride, o->h, o->w};
    return g;
}

/* ---- gradient routing, as the plan set it ---- */

/* d(op output) */
static const float *dy_of(baton_nn_model *m, const nn_op *o, int n)
{
    if (o->zero_dy) memset(m->slots[o->out].grad, 0, sizeof(float) * count(m, o->out, n));
    return m->slots[o->dy].grad;
}

/* where d(input) goes; NULL: not wanted */
static float *gx_at(baton_nn_model *m, const nn_gout *g)
{
    if (g->mode == NN_G_NONE) return NULL;
    return g->mode == NN_G_DIRECT ? m->slots[g->slot].grad : m->scratch;
}

/* after writing d(input) where gx_at said */
static void gx_done(baton_nn_model *m, const nn_gout *g, int n)
{
    if (g->mode != NN_G_ADD) return;
    float *grad = m->slots[g->slot].grad;
    m->k->add(count(m, g->slot, n), grad, m->scratch, grad);
}

/* ---- convolution: alone, with the ReLU after it (and the max pool after that), or taking the
 * statistics of the batch norm after it ---- */

static int conv_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const baton_nn_conv_geom g = nn_conv_geom(m, l, n);
    const nn_slot *in = slot(m, l->in), *out = slot(m, l->out);
    if (o->copy16)   /* x float32, read from its bfloat16 copy (fuse.c, plan_copies) */
        return m->k->conv_fwd16(&g, 1, in->data16, wdata(m, l->tw), tdata(m, l->tb), out->bf16, out->data);
    if (in->bf16 || out->bf16)
        return m->k->conv_fwd16(&g, in->bf16, in->data, wdata(m, l->tw), tdata(m, l->tb), out->bf16, out->data);
    m->k->conv_fwd(&g, in->data, wdata(m, l->tw), tdata(m, l->tb), out->data);
    return 1;
}

static int conv_relu_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const baton_nn_conv_geom g = nn_conv_geom(m, l, n);
    return m->k->conv_relu_fwd(&g, slot(m, l->in)->data, wdata(m, l->tw), tdata(m, l->tb),
                               slot(m, layer(m, o->relu)->out)->data);
}

static int conv_stats_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer), *b = layer(m, o->bn);
    const baton_nn_conv_geom g = nn_conv_geom(m, l, n);
    return m->k->conv_bn_stats_fwd(&g, slot(m, l->in)->data, tdata(m, l->tw), tdata(m, l->tb), tdata(m, b->trm),
                                   slot(m, l->out)->data, b->save_mean, b->save_var);
}

static int pool_fwd_of(baton_nn_model *m, const nn_layer *p, int n)
{
    const baton_nn_pool_geom g = nn_pool_geom(m, p, n);
    m->k->maxpool_fwd(&g, slot(m, p->in)->data, slot(m, p->out)->data, p->ws);
    return 1;
}

static int conv_relu_pool_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    return conv_relu_fwd(m, o, n) && pool_fwd_of(m, layer(m, o->pool), n);
}

/* the convolution's backward from d(its output) = dy, x read from its bfloat16 copy with copy16 (the
 * plan's copy16 2: the weights' pass on the bfloat16 kernels, which would convert x to that copy); 0
 * where a bfloat16 entry declined */
static int conv_back(baton_nn_model *m, const nn_layer *l, int n, const float *dy, const nn_gout *gx, int copy16)
{
    const baton_nn_conv_geom g = nn_conv_geom(m, l, n);
    float *dx = gx_at(m, gx);
    const nn_slot *in = slot(m, l->in), *out = slot(m, l->out);
    if (in->bf16 || out->grad16 || copy16) {   /* x, dy in bfloat16 (the plan took only geometries the table
                                                * takes so) */
        const void *x = copy16 ? (const void *)in->data16 : in->data;
        if (!m->k->conv_bwd16(&g, in->bf16 || copy16, x, out->grad16, dy, wdata(m, l->tw), tgrad(m, l->tw),
                              tgrad(m, l->tb), dx))
            return 0;
        if (dx) gx_done(m, gx, n);
        return 1;
    }
    if (m->k->conv_bwd) {   /* both passes in one call (the bf16 table: dy converted once) */
        m->k->conv_bwd(&g, in->data, dy, wdata(m, l->tw), tgrad(m, l->tw), tgrad(m, l->tb), dx);
        if (dx) gx_done(m, gx, n);
        return 1;
    }
    m->k->conv_bwd_weights(&g, in->data, dy, tgrad(m, l->tw), tgrad(m, l->tb));
    if (!dx) return 1;
    m->k->conv_bwd_data(&g, dy, wdata(m, l->tw), dx);
    gx_done(m, gx, n);
    return 1;
}

static int conv_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    return conv_back(m, layer(m, o->layer), n, dy_of(m, o, n), &o->gx, o->copy16 == 2);
}

/* the ReLU's backward into d(conv output) (the convolution's only reader), then the convolution's */
static int conv_relu_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *c = layer(m, o->layer);
    const nn_slot *r = slot(m, o->out);
    float *dc = m->slots[c->out].grad;
    m->k->relu_bwd(count(m, o->out, n), r->data, dy_of(m, o, n), dc);
    return conv_back(m, c, n, dc, &o->gx, 0);
}

/* the pool's and the ReLU's backward in one pass into d(conv output), then the convolution's */
static int conv_relu_pool_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *c = layer(m, o->layer), *p = layer(m, o->pool);
    const baton_nn_pool_geom g = nn_pool_geom(m, p, n);
    float *dc = m->slots[c->out].grad;
    if (!m->k->maxpool_relu_bwd(&g, dy_of(m, o, n), p->ws, slot(m, p->in)->data, dc)) return 0;
    return conv_back(m, c, n, dc, &o->gx, 0);
}

/* ---- batch norm: alone, with the ReLU after it, or with the residual add and ReLU after it;
 * with its own statistics or those the convolution before took (op->stats) ---- */

/* PyTorch: running = (1 - momentum) * running + momentum * batch statistic, with the unbiased
 * variance for the running estimate */
static void bn_running_update(baton_nn_model *m, const nn_layer *l, double count)
{
    const nn_slot *in = slot(m, l->in);
    float *rm = tdata(m, l->trm), *rv = tdata(m, l->trv);
    const float corr = (float)(count / (count - 1.0));
    for (int c = 0; c < in->c; c++) {
        rm[c] = (1.0f - NN_BN_MOMENTUM) * rm[c] + NN_BN_MOMENTUM * l->save_mean[c];
        rv[c] = (1.0f - NN_BN_MOMENTUM) * rv[c] + NN_BN_MOMENTUM * (l->save_var[c] * corr);
    }
    ((int64_t *)m->tensors[l->tnbt].data)[0] += 1;
}

/* The training forward of batch norm l into y: res NULL and relu 0 alone, relu 1 with the ReLU,
 * res given with the add and the ReLU; with copy16, y's bfloat16 copy written too (out->data16). */
static int bn_train(baton_nn_model *m, const nn_layer *l, int stats, const float *res, int relu, const nn_slot *out,
                    int copy16, int n)
{
    float *y = out->data;
    const baton_nn_kernels *k = m->k;
    const nn_slot *in = slot(m, l->in);
    const int c = in->c, hw = in->h * in->w;
    const float *x = in->data, *gm = tdata(m, l->tw), *bt = tdata(m, l->tb);
    int done = 1;
    if (m->bn_sync_fn) {   /* the whole batch's statistics (kern_bn_sync.c) */
        if (!nn_sync_bn_fwd(m, &m->layers[l - m->layers], n, y)) return 0;
        bn_running_update(m, l, l->sync_count);
        return 1;
    }
    if (in->bf16 || out->bf16 || copy16)   /* bfloat16 x, y or copy (never with stats or bn_sync: fuse.c) */
        done = k->bn16_fwd_train(n, c, hw, in->bf16, x, res, relu, gm, bt, NN_BN_EPS, out->bf16, y,
                                 copy16 ? out->data16 : NULL, l->save_mean, l->save_var);
    else if (stats)
        done = k->bn_apply_train(n, c, hw, x, res, relu, gm, bt, NN_BN_EPS, l->save_mean, l->save_var, y);
    else if (res)
        done = k->bn_add_relu_fwd_train(n, c, hw, x, res, gm, bt, NN_BN_EPS, y, l->save_mean, l->save_var);
    else if (relu)
        done = k->bn_relu_fwd_train(n, c, hw, x, gm, bt, NN_BN_EPS, y, l->save_mean, l->save_var);
    else
        k->bn_fwd_train(n, c, hw, x, gm, bt, NN_BN_EPS, y, l->save_mean, l->save_var);
    if (done) bn_running_update(m, l, (double)n * hw);
    return done;
}

int nn_sync_bn_idle(baton_nn_model *m)
{
    const nn_plan *p = &m->train;
    for (size_t i = 0; i < p->nops; i++) {
        if (p->ops[i].kind != NN_OP_BN) continue;
        nn_layer *l = &m->layers[p->ops[i].layer];
        if (!nn_sync_bn_fwd(m, l, 0, NULL)) return 0;
        bn_running_update(m, l, l->sync_count);
    }
    for (size_t i = p->nops; i-- > 0;)
        if (p->ops[i].kind == NN_OP_BN && !nn_sync_bn_bwd(m, layer(m, p->ops[i].layer), 0, NULL, NULL)) return 0;
    return 1;
}

static int bn_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    return bn_train(m, layer(m, o->layer), o->stats, NULL, 0, slot(m, o->out), o->copy16, n);
}

static int bn_relu_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    return bn_train(m, layer(m, o->layer), o->stats, NULL, 1, slot(m, o->out), o->copy16, n);
}

static int bn_add_relu_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    return bn_train(m, layer(m, o->bn), o->stats, slot(m, o->in2)->data, 1, slot(m, o->out), o->copy16, n);
}

static int bn_infer_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const nn_slot *in = slot(m, l->in), *out = slot(m, l->out);
    if (in->bf16 || out->bf16)
        return m->k->bn16_fwd_infer(n, in->c, in->h * in->w, in->bf16, in->data, tdata(m, l->tw), tdata(m, l->tb),
                                    tdata(m, l->trm), tdata(m, l->trv), NN_BN_EPS, out->bf16, out->data);
    m->k->bn_fwd_infer(n, in->c, in->h * in->w, in->data, tdata(m, l->tw), tdata(m, l->tb), tdata(m, l->trm),
                       tdata(m, l->trv), NN_BN_EPS, slot(m, l->out)->data);
    return 1;
}

static int bn_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const nn_slot *in = slot(m, l->in);
    float *dx = gx_at(m, &o->gx);
    if (m->bn_sync_fn) {
        if (!nn_sync_bn_bwd(m, l, n, dy_of(m, o, n), dx ? dx : m->scratch)) return 0;
    } else if (in->bf16) {
        if (!m->k->bn_x16_bwd(n, in->c, in->h * in->w, data16(in), NULL, dy_of(m, o, n), NULL, 0, tdata(m, l->tw),
                              NULL, l->save_mean, l->save_var, NN_BN_EPS, NULL, in->grad16, dx ? dx : m->scratch,
                              tgrad(m, l->tw), tgrad(m, l->tb)))
            return 0;
    } else {
        m->k->bn_bwd(n, in->c, in->h * in->w, in->data, dy_of(m, o, n), tdata(m, l->tw), l->save_mean,
                     l->save_var, NN_BN_EPS, dx ? dx : m->scratch, tgrad(m, l->tw), tgrad(m, l->tb));
    }
    gx_done(m, &o->gx, n);
    return 1;
}

/* d(ReLU output) straight into the fused backward (the ReLU's mask found from the input) */
static int bn_relu_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const nn_slot *in = slot(m, l->in);
    float *dx = gx_at(m, &o->gx);
    const int hw = in->h * in->w;
    const float *dy = dy_of(m, o, n), *gm = tdata(m, l->tw), *bt = tdata(m, l->tb);
    float *d = dx ? dx : m->scratch;
    if (!(in->bf16 ? m->k->bn_x16_bwd(n, in->c, hw, data16(in), NULL, dy, NULL, 1, gm, bt, l->save_mean, l->save_var,
                                      NN_BN_EPS, NULL, in->grad16, d, tgrad(m, l->tw), tgrad(m, l->tb))
                   : m->k->bn_relu_bwd(n, in->c, hw, in->data, dy, gm, bt, l->save_mean, l->save_var, NN_BN_EPS, d,
                                       tgrad(m, l->tw), tgrad(m, l->tb))))
        return 0;
    gx_done(m, &o->gx, n);
    return 1;
}

/* One kernel: the masked d(sum) written once into the residual input's grad (the gradient of both
 * addends), the batch norm's backward of it into d(bn input); both are those slots' first
 * contributions (the plan makes this op only then), and a pending second contribution to d(output)
 * is added inside. */
static int bn_add_relu_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *b = layer(m, o->bn);
    const nn_slot *in = slot(m, o->in);
    if (in->bf16)
        return m->k->bn_x16_bwd(n, in->c, in->h * in->w, data16(in), slot(m, o->out)->data, dy_of(m, o, n),
                                o->dy2 ? m->scratch : NULL, 1, tdata(m, b->tw), NULL, b->save_mean, b->save_var,
                                NN_BN_EPS, m->slots[o->in2].grad, in->grad16, m->slots[o->in].grad,
                                tgrad(m, b->tw), tgrad(m, b->tb));
    return m->k->bn_add_relu_bwd(n, in->c, in->h * in->w, in->data, slot(m, o->out)->data, dy_of(m, o, n),
                                 o->dy2 ? m->scratch : NULL, tdata(m, b->tw), b->save_mean, b->save_var, NN_BN_EPS,
                                 m->slots[o->in2].grad, m->slots[o->in].grad, tgrad(m, b->tw), tgrad(m, b->tb));
}

/* ---- ReLU (and the max pool after it), pooling ---- */

static int relu_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    if (slot(m, l->out)->bf16)   /* a batch norm's ReLU output a convolution reads (fuse.c) */
        return m->k->relu_fwd_y16(count(m, l->out, n), slot(m, l->in)->data, data16(slot(m, l->out)));
    m->k->relu_fwd(count(m, l->out, n), slot(m, l->in)->data, slot(m, l->out)->data);
    return 1;
}

static int relu_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const float *dy = dy_of(m, o, n);
    float *dx = gx_at(m, &o->gx);
    if (!dx) return 1;
    if (slot(m, o->out)->bf16) {
        if (!m->k->relu_bwd_y16(count(m, o->out, n), data16(slot(m, o->out)), dy, dx)) return 0;
    } else {
        m->k->relu_bwd(count(m, o->out, n), slot(m, o->out)->data, dy, dx);
    }
    gx_done(m, &o->gx, n);
    return 1;
}

static int relu_pool_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    return relu_fwd(m, o, n) && pool_fwd_of(m, layer(m, o->pool), n);
}

/* the pool's and the ReLU's backward in one pass: d(ReLU input) (the plan makes this op only where
 * that is wanted) */
static int relu_pool_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *p = layer(m, o->pool);
    const baton_nn_pool_geom g = nn_pool_geom(m, p, n);
    if (!m->k->maxpool_relu_bwd(&g, dy_of(m, o, n), p->ws, slot(m, p->in)->data, gx_at(m, &o->gx))) return 0;
    gx_done(m, &o->gx, n);
    return 1;
}

static int pool_fwd(baton_nn_model *m, const nn_op *o, int n) { return pool_fwd_of(m, layer(m, o->layer), n); }

static int pool_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *p = layer(m, o->layer);
    const baton_nn_pool_geom g = nn_pool_geom(m, p, n);
    const float *dy = dy_of(m, o, n);
    float *dx = gx_at(m, &o->gx);
    if (!dx) return 1;
    m->k->maxpool_bwd(&g, dy, p->ws, dx);
    gx_done(m, &o->gx, n);
    return 1;
}

static int gap_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_slot *in = slot(m, o->in);
    m->k->gap_fwd(n, in->c, in->h * in->w, in->data, slot(m, o->out)->data);
    return 1;
}

static int gap_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_slot *in = slot(m, o->in);
    const float *dy = dy_of(m, o, n);
    float *dx = gx_at(m, &o->gx);
    if (!dx) return 1;
    m->k->gap_bwd(n, in->c, in->h * in->w, dy, dx);
    gx_done(m, &o->gx, n);
    return 1;
}

/* ---- linear (a blocked spatial input flattened to NCHW order first), dropout ---- */

static int linear_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const nn_slot *in = slot(m, l->in);
    const float *x = in->data;
    if (o->flat) {
        m->k->to_plain(n, in->c, in->h, in->w, in->data, l->flat);
        x = l->flat;
    }
    m->k->linear_fwd(n, (int)in->per_image, slot(m, l->out)->c, x, wdata(m, l->tw), tdata(m, l->tb),
                     slot(m, l->out)->data);
    return 1;
}

static int linear_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const nn_slot *in = slot(m, l->in);
    const int fin = (int)in->per_image, fout = slot(m, l->out)->c;
    const float *dy = dy_of(m, o, n);
    m->k->linear_bwd_weights(n, fin, fout, o->flat ? l->flat : in->data, dy, tgrad(m, l->tw), tgrad(m, l->tb));
    float *dx = gx_at(m, &o->gx);
    if (!dx) return 1;
    m->k->linear_bwd_data(n, fin, fout, dy, wdata(m, l->tw), o->flat ? l->flat : dx);
    if (o->flat) m->k->from_plain(n, in->c, in->h, in->w, l->flat, dx);
    gx_done(m, &o->gx, n);
    return 1;
}

static int dropout_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    if (l->p > 0.0f)
        baton_nn_dropout_fwd(count(m, o->out, n), l->p, &m->rng, slot(m, o->in)->data, m->slots[o->out].data,
                             l->mask);
    else
        memcpy(m->slots[o->out].data, slot(m, o->in)->data, sizeof(float) * count(m, o->out, n));
    return 1;
}

static int dropout_infer_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    memcpy(m->slots[o->out].data, slot(m, o->in)->data, sizeof(float) * count(m, o->out, n));
    return 1;
}

static int dropout_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const nn_layer *l = layer(m, o->layer);
    const float *dy = dy_of(m, o, n);
    float *dx = gx_at(m, &o->gx);
    if (!dx) return 1;
    if (l->p > 0.0f)
        baton_nn_dropout_bwd(count(m, o->out, n), l->mask, dy, dx);
    else
        memcpy(dx, dy, sizeof(float) * count(m, o->out, n));
    gx_done(m, &o->gx, n);
    return 1;
}

/* ---- residual add, alone or with the ReLU after it ---- */

static int add_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    m->k->add(count(m, o->out, n), slot(m, o->in)->data, slot(m, o->in2)->data, m->slots[o->out].data);
    return 1;
}

static int add_relu_fwd(baton_nn_model *m, const nn_op *o, int n)
{
    return m->k->add_relu(count(m, o->out, n), slot(m, o->in)->data, slot(m, o->in2)->data, m->slots[o->out].data);
}

/* Both inputs get d(sum): d(out), masked by the ReLU's output when there is one. With op->alias
 * (add+relu) it is written once, into in2's grad, where in's producer reads it. */
static int add_bwd(baton_nn_model *m, const nn_op *o, int n)
{
    const baton_nn_kernels *k = m->k;
    const size_t cnt = count(m, o->out, n);
    const float *dy = dy_of(m, o, n), *relu_out = o->relu >= 0 ? slot(m, o->out)->data : NULL;
    if (o->alias) {
        float *g = m->slots[o->in2].grad;
        if (o->dy2) return k->relu_bwd_add(cnt, relu_out, dy, m->scratch, g);
        k->relu_bwd(cnt, relu_out, dy, g);
        return 1;
    }
    float *t1 = gx_at(m, &o->gx), *t2 = gx_at(m, &o->gx2);
    const float *g = dy;
    if (relu_out) {
        float *first = t1 ? t1 : t2;
        if (first) k->relu_bwd(cnt, relu_out, dy, first);
        g = first;
    }
    if (t1) {
        if (g != t1) memcpy(t1, g, sizeof(float) * cnt);
        gx_done(m, &o->gx, n);
    }
    if (t2) {   /* g may be scratch after gx_done: its content stays */
        if (g != t2) memcpy(t2, g, sizeof(float) * cnt);
        gx_done(m, &o->gx2, n);
    }
    return 1;
}

const nn_op_impl nn_op_impls[NN_OP_KINDS] = {
    [NN_OP_CONV] = {"conv", conv_fwd, conv_bwd},
    [NN_OP_CONV_RELU] = {"conv+relu", conv_relu_fwd, conv_relu_bwd},
    [NN_OP_CONV_STATS] = {"conv+bn statistics", conv_stats_fwd, conv_bwd},
    [NN_OP_CONV_RELU_POOL] = {"conv+relu+max_pool2d", conv_relu_pool_fwd, conv_relu_pool_bwd},
    [NN_OP_BN] = {"bn", bn_fwd, bn_bwd},
    [NN_OP_BN_RELU] = {"bn+relu", bn_relu_fwd, bn_relu_bwd},
    [NN_OP_BN_ADD_RELU] = {"bn+add+relu", bn_add_relu_fwd, bn_add_relu_bwd},
    [NN_OP_BN_INFER] = {"bn (evaluation)", bn_infer_fwd, NULL},
    [NN_OP_RELU] = {"relu", relu_fwd, relu_bwd},
    [NN_OP_RELU_POOL] = {"relu+max_pool2d", relu_pool_fwd, relu_pool_bwd},
    [NN_OP_MAXPOOL] = {"max_pool2d", pool_fwd, pool_bwd},
    [NN_OP_GAP] = {"adaptive_avg_pool2d", gap_fwd, gap_bwd},
    [NN_OP_LINEAR] = {"linear", linear_fwd, linear_bwd},
    [NN_OP_DROPOUT] = {"dropout", dropout_fwd, dropout_bwd},
    [NN_OP_DROPOUT_INFER] = {"dropout (evaluation)", dropout_infer_fwd, NULL},
    [NN_OP_ADD] = {"add", add_fwd, add_bwd},
    [NN_OP_ADD_RELU] = {"add+relu", add_relu_fwd, add_bwd},
};
