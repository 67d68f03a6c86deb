/* kern_bn_sync.c — batch normalisation over a batch split between processes (synchronised batch
 * norm, data parallelism's --sync-bn): each process holds a part of the batch; the per-channel
 * sums are taken here over the part, summed over the parts by the model's bn_sync function
 * (baton_nn_model_set_bn_sync: an allreduce), and every part is normalised — and its input's
 * gradient computed — with the whole batch's statistics, as one process holding the whole batch
 * would (PyTorch's SyncBatchNorm).
 *
 * Contract: the formulas of kern_norm.c (batch mean, BIASED batch variance; invstd = 1 / sqrtf(var +
 * eps) from the float var; dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)); the
 * means over the whole batch), on activations in the table's layout (NCHW, or blocked
 * [n][c/16][hw][16], or channels-last [n][hw][c] for the bf16 table, there in bfloat16 where the
 * slot holds it: nn_slot.bf16, widened as read). Sums are double, in a fixed order, two passes
 * forward (the sum, then the
 * squares about the whole batch's mean: two calls of bn_sync) and one backward (sum dy and sum dy *
 * xhat: one call). dgamma and dbeta are this part's own sums — the gradient reducer sums them over
 * the parts like every other gradient. The calls every process makes, in the same order: forward,
 * per batch norm in plan order, 1 + c values then c; backward, per batch norm in reverse plan
 * order, 2c. A process with no image in a step makes the same calls with zeros (n = 0: ops.c's idle pass),
 * so the others are never left waiting. Nothing is allocated per call (m->bn_sync_buf, sized once).
 * A failed sum is sticky in m->bn_sync_rc / bn_sync_err; the op reports 0 and the pass names it. */
#include "nn_internal.h"
#include "bf16_vec.h"

#include <math.h>
#include <string.h>

/* element (i, ch, k) of an [n, c, hw] activation in the table's layout */
static inline size_t at(int blocked, int c, int hw, int i, int ch, int k)
{
    if (!blocked) return ((size_t)i * c + ch) * hw + k;
    if (blocked == 2) return ((size_t)i * hw + k) * c + ch;   /* channels-last */
    return (((size_t)i * (c / NN_BLOCK) + ch / NN_BLOCK) * hw + k) * NN_BLOCK + ch % NN_BLOCK;
}

/* element e of slot s's data: float32, or bfloat16 widened (exactly) */
static inline float xv(const nn_slot *s, size_t e)
{
    return s->bf16 ? nn_bf16_widen1(((const uint16_t *)(const void *)s->data)[e]) : s->data[e];
}

static int sum(baton_nn_model *m, double *v, int n)
{
    if (m->bn_sync_rc) return 0;
    m->bn_sync_rc = m->bn_sync_fn(v, n, m->bn_sync_ctx, &m->bn_sync_err);
    return m->bn_sync_rc == BATON_OK;
}

int nn_sync_bn_fwd(baton_nn_model *m, nn_layer *l, int n, float *y)
{
    const nn_slot *in = &m->slots[l->in];
    const int c = in->c, hw = in->h * in->w;
    const int blk = nn_is_blocked(m->k->block, c) && hw > 1 ? 1 + m->k->channels_last : 0;   /* at()'s layout */
    double *v = m->bn_sync_buf;
    v[0] = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double s = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < hw; k++) s += xv(in, at(blk, c, hw, i, ch, k));
        v[1 + ch] = s;
    }
    if (!sum(m, v, 1 + c)) return 0;
    l->sync_count = v[0];
    for (int ch = 0; ch < c; ch++) l->save_mean[ch] = (float)(v[1 + ch] / l->sync_count);
    for (int ch = 0; ch < c; ch++) {
        const double mu = (double)l->save_mean[ch];
        double s = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < hw; k++) {
                const double d = xv(in, at(blk, c, hw, i, ch, k)) - mu;
                s += d * d;
            }
        v[ch] = s;
    }
    if (!sum(m, v, c)) return 0;
    for (int ch = 0; ch < c; ch++) l->save_var[ch] = (float)(v[ch] / l->sync_count);
    const float *gm = m->tensors[l->tw].data, *bt = m->tensors[l->tb].data;
    if (n > 0 && in->bf16)
        return m->k->bn16_fwd_infer(n, c, hw, 1, in->data, gm, bt, l->save_mean, l->save_var, NN_BN_EPS, 0, y);
    if (n > 0) m->k->bn_fwd_infer(n, c, hw, in->data, gm, bt, l->save_mean, l->save_var, NN_BN_EPS, y);
    return 1;
}

int nn_sync_bn_bwd(baton_nn_model *m, const nn_layer *l, int n, const float *dy, float *dx)
{
    const nn_slot *in = &m->slots[l->in];
    const int c = in->c, hw = in->h * in->w;
    const int blk = nn_is_blocked(m->k->block, c) && hw > 1 ? 1 + m->k->channels_last : 0;   /* at()'s layout */
    const float *gamma = m->tensors[l->tw].data;
    float *dgamma = m->tensors[l->tw].grad, *dbeta = m->tensors[l->tb].grad;
    double *v = m->bn_sync_buf;
    for (int ch = 0; ch < c; ch++) {
        const float invstd = 1.0f / sqrtf(l->save_var[ch] + NN_BN_EPS), mu = l->save_mean[ch];
        double sdy = 0, sdyx = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < hw; k++) {
                const size_t e = at(blk, c, hw, i, ch, k);
                sdy += dy[e];
                sdyx += (double)dy[e] * ((xv(in, e) - mu) * invstd);
            }
        v[ch] = sdy;
        v[c + ch] = sdyx;
        dgamma[ch] = (float)sdyx;   /* this part's own: the gradient reducer sums them */
        dbeta[ch] = (float)sdy;
    }
    if (!sum(m, v, 2 * c)) return 0;
    for (int ch = 0; ch < c; ch++) {
        const float invstd = 1.0f / sqrtf(l->save_var[ch] + NN_BN_EPS), mu = l->save_mean[ch];
        const float k1 = gamma[ch] * invstd;
        const float mdy = (float)(v[ch] / l->sync_count), mdyx = (float)(v[c + ch] / l->sync_count);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < hw; k++) {
                const size_t e = at(blk, c, hw, i, ch, k);
                const float xhat = (xv(in, e) - mu) * invstd, d = k1 * (dy[e] - mdy - xhat * mdyx);
                if (in->grad16) ((uint16_t *)(void *)dx)[e] = nn_bf16_round1(d);   /* nn_slot.grad16 */
                else dx[e] = d;
            }
    }
    return 1;
}
