/* fold_table.c — the folded inference plan's op list (fold.c) run on one of nn's kernel tables:
 * each op is one table call, or two (a convolution then its residual add; a ReLU a table fuses no
 * other way), on activations in the table's layout. On the reference table it is the plain
 * reference of the compiled plan (fold_dnnl.c): the same lowering — batch norm folded into the
 * convolution's weights, ReLU and residual add fused, dropout dropped — computed by the plain
 * loops, which the tests compare with the compiled plan and with the model's own evaluation
 * forward. The compiled plan stays the fast path: a table's entries take dense weights and
 * reorder them into oneDNN's layouts on every call, where the compiled plan packs them once.
 *
 * Contract: nn_fold_exec_create lowers the model (which it only reads) and allocates every buffer;
 * nn_fold_exec_run allocates nothing and runs exactly `batch` images. */
#include "nn_internal.h"

#include <stdlib.h>
#include <string.h>

struct nn_fold_exec {
    nn_fold F;
    const baton_nn_kernels *K;
    int batch;
    float **buf;             /* per value: batch × c × h × w in the table's layout; NULL when dead */
    float *tmp;              /* a convolution's output before its residual add */
    float *flat;             /* a linear layer's input in plain [batch, c·h·w] */
    int32_t *ws;             /* max pooling's indices */
};

static size_t val_count(const nn_fold_exec *e, int v)
{
    const nn_fold_val *x = &e->F.vals[v];
    return (size_t)e->batch * x->c * x->h * x->w;
}

static baton_nn_conv_geom conv_geom(const nn_fold_exec *e, const nn_fold_op *o)
{
    const nn_fold_val *in = &e->F.vals[o->src], *out = &e->F.vals[o->dst];
    return (baton_nn_conv_geom){.n = e->batch, .ic = in->c, .ih = in->h, .iw = in->w, .oc = o->oc, .kh = o->k,
                                .kw = o->k, .stride = o->stride, .pad = o->pad, .oh = out->h, .ow = out->w};
}

void nn_fold_exec_free(nn_fold_exec *e)
{
    if (!e) return;
    for (int v = 0; e->buf && v < e->F.nvals; v++) free(e->buf[v]);
    free(e->buf);
    free(e->tmp);
    free(e->flat);
    free(e->ws);
    nn_fold_free(&e->F);
    free(e);
}

int nn_fold_exec_create(const baton_nn_model *m, const baton_nn_kernels *K, int batch, nn_fold_exec **out,
                        baton_err *err)
{
    *out = NULL;
    if (K->weights_bf16)   /* its folded weights are f32 */
        return baton_err_set(err, BATON_ERR_ARG, "folded plan: kernel table %s reads bfloat16 weights", K->name);
    nn_fold_exec *e = calloc(1, sizeof *e);
    if (!e) return baton_err_set(err, BATON_ERR_NOMEM, "folded plan: out of memory");
    e->K = K;
    e->batch = batch;
    int rc = nn_fold_lower(m, &e->F, err);
    size_t tmp = 0, flat = 0, ws = 0;
    for (int i = 0; !rc && i < e->F.nops; i++) {
        const nn_fold_op *o = &e->F.ops[i];
        if (o->kind == NN_FOLD_CONV && o->sum >= 0 && val_count(e, o->dst) > tmp) tmp = val_count(e, o->dst);
        if (o->kind == NN_FOLD_IP && val_count(e, o->src) > flat) flat = val_count(e, o->src);
        if (o->kind == NN_FOLD_MAXPOOL && val_count(e, o->dst) > ws) ws = val_count(e, o->dst);
    }
    if (!rc && !(e->buf = calloc((size_t)e->F.nvals, sizeof *e->buf)))
        rc = baton_err_set(err, BATON_ERR_NOMEM, "folded plan: out of memory");
    for (int v = 0; !rc && v < e->F.nvals; v++)
        if (!e->F.vals[v].dead && !(e->buf[v] = malloc(val_count(e, v) * sizeof(float))))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "folded plan: out of memory for activations");
    if (!rc && tmp && !(e->tmp = malloc(tmp * sizeof(float)))) rc = BATON_ERR_NOMEM;
    if (!rc && flat && !(e->flat = malloc(flat * sizeof(float)))) rc = BATON_ERR_NOMEM;
    if (!rc && ws && !(e->ws = malloc(ws * sizeof(int32_t)))) rc = BATON_ERR_NOMEM;
    if (rc == BATON_ERR_NOMEM) baton_err_set(err, rc, "folded plan: out of memory");
    if (rc) {
        nn_fold_exec_free(e);
        return rc;
    }
    *out = e;
    return BATON_OK;
}

int nn_fold_exec_nops(const nn_fold_exec *e) { return e->F.nops; }

/* One convolution: y = conv(x) (+ the sum target's old value) (then max(0, .)). */
static void run_conv(nn_fold_exec *e, const nn_fold_op *o)
{
    const baton_nn_kernels *K = e->K;
    const baton_nn_conv_geom g = conv_geom(e, o);
    float *y = e->buf[o->dst];
    const size_t n = val_count(e, o->dst);
    if (o->sum < 0 && o->relu && K->conv_relu_fwd && K->conv_relu_fwd(&g, e->buf[o->src], o->w, o->b, y)) return;
    K->conv_fwd(&g, e->buf[o->src], o->w, o->b, o->sum >= 0 ? e->tmp : y);
    if (o->sum >= 0) {
        if (o->relu && K->add_relu && K->add_relu(n, e->tmp, y, y)) return;
        K->add(n, e->tmp, y, y);
    }
    if (o->relu) K->relu_fwd(n, y, y);
}

/* One linear layer on its input flattened to plain [batch, c·h·w]. */
static void run_ip(nn_fold_exec *e, const nn_fold_op *o)
{
    const baton_nn_kernels *K = e->K;
    const nn_fold_val *in = &e->F.vals[o->src];
    const int nin = in->c * in->h * in->w;
    K->to_plain(e->batch, in->c, in->h, in->w, e->buf[o->src], e->flat);
    K->linear_fwd(e->batch, nin, o->oc, e->flat, o->w, o->b, e->buf[o->dst]);
    if (o->relu) K->relu_fwd(val_count(e, o->dst), e->buf[o->dst], e->buf[o->dst]);
}

static void run_pool(nn_fold_exec *e, const nn_fold_op *o)
{
    const nn_fold_val *in = &e->F.vals[o->src], *out = &e->F.vals[o->dst];
    if (o->kind == NN_FOLD_AVGPOOL) {   /* global: the whole plane */
        e->K->gap_fwd(e->batch, in->c, in->h * in->w, e->buf[o->src], e->buf[o->dst]);
        return;
    }
    const baton_nn_pool_geom g = {.n = e->batch, .c = in->c, .ih = in->h, .iw = in->w, .k = o->k,
                                  .stride = o->stride, .oh = out->h, .ow = out->w};
    e->K->maxpool_fwd(&g, e->buf[o->src], e->buf[o->dst], e->ws);
}

void nn_fold_exec_run(nn_fold_exec *e, const float *x, float *logits)
{
    const nn_fold_val *in = &e->F.vals[e->F.in_val], *out = &e->F.vals[e->F.out_val];
    e->K->from_plain(e->batch, in->c, in->h, in->w, x, e->buf[e->F.in_val]);
    for (int i = 0; i < e->F.nops; i++) {
        const nn_fold_op *o = &e->F.ops[i];
        if (o->kind == NN_FOLD_CONV) run_conv(e, o);
        else if (o->kind == NN_FOLD_IP) run_ip(e, o);
        else run_pool(e, o);
    }
    e->K->to_plain(e->batch, out->c, out->h, out->w, e->buf[e->F.out_val], logits);
}
