/* fuse.c — a model's plan: its layers as a list of ops for its kernel table (nn_internal.h, nn_op),
 * beside the folded inference plan (fold.c, fold_dnnl.c). Two plans: the evaluation forward's, one op
 * per layer; and training's, where the table's optional entries fuse layers into one op with its
 * own forward and backward (ops.c):
 *
 *   conv+relu        a convolution whose only reader is the ReLU after it (conv_relu_fwd);
 *   conv+relu+pool   that, when a max pool is the ReLU's only reader: the pool's backward writes
 *                    d(ReLU input) directly (maxpool_relu_bwd);  relu+pool the same without the conv;
 *   conv+bn stats    a convolution whose only reader is the batch norm after it takes that batch
 *                    norm's statistics as it writes (conv_bn_stats_fwd), which then only normalises
 *                    (bn_apply_train) — alone, with its ReLU or inside its add;
 *   bn+relu          a batch norm whose only reader is the ReLU after it (bn_relu_*);
 *   add+relu         a residual add whose only reader is the ReLU after it (add_relu); backward
 *                    writes d(sum) once, in the second input's buffer, when nothing can change that
 *                    buffer before the first input's producer reads it (the op's alias);
 *   bn+add+relu      add+relu whose input is a batch norm read only by it, runs that batch norm too:
 *                    one kernel forward (bn_add_relu_fwd_train, the batch norm's output never
 *                    stored) and one backward (bn_add_relu_bwd) — where both its inputs' gradients
 *                    start there (nothing after the add reads them).
 *
 * Which entries: an optional entry is used where the table has it and its predicate (nn.h) accepts
 * the geometry at the model's largest batch. The entries decline only on channels, plane size and
 * CPU features (never on the batch size), and the statistics-taking convolution's predicate reserves
 * its buffer for the largest batch, so no batch of 1..max_batch images declines at run time.
 *
 * Gradients: planning walks the training ops in backward order, as backward will, and sets each
 * op's routes (nn_op dy, zero_dy, dy2, alias, gx, gx2): a slot's first gradient contribution goes
 * into its grad, a later one into scratch, added to the grad right away, or — when the next op
 * backward is the add+relu (or bn+add+relu) whose ReLU output it is, and the table has
 * relu_bwd_add — left there and added inside that op (a resnet block output's two contributions).
 * With one contribution in scratch at a time, each slot's contributions are summed in backward
 * order.
 *
 * Contract: nn_plan_alloc once per model (after the graph is built), nn_plan_fusions whenever the
 * table changes; planning looks only at the graph, the table's entries and predicates, and
 * m->spec.max_batch, and allocates only the bfloat16 copies' buffer (plan_copies; a predicate may
 * reserve its kernel's buffers). */
#include "nn_internal.h"

#include <stdlib.h>

/* layers reading a slot (an add counts for each of its inputs) */
static int slot_users(const baton_nn_model *m, int slot)
{
    int users = 0;
    for (size_t lj = 0; lj < m->nlayers; lj++)
        users += (m->layers[lj].in == slot) + (m->layers[lj].kind == NN_ADD && m->layers[lj].in2 == slot);
    return users;
}

/* some layer after li reads slot */
static int read_after(const baton_nn_model *m, int slot, size_t li)
{
    for (size_t lj = li + 1; lj < m->nlayers; lj++)
        if (m->layers[lj].in == slot || (m->layers[lj].kind == NN_ADD && m->layers[lj].in2 == slot)) return 1;
    return 0;
}

static int producer(const baton_nn_model *m, int slot)
{
    for (size_t lj = 0; lj < m->nlayers; lj++)
        if (m->layers[lj].out == slot) return (int)lj;
    return -1;
}

/* layer li's output feeds exactly one layer, the next one (and is not the logits) */
static int only_user(const baton_nn_model *m, size_t li)
{
    const int slot = m->layers[li].out;
    if (slot == m->out_slot || li + 1 >= m->nlayers || m->layers[li + 1].in != slot) return 0;
    return slot_users(m, slot) == 1;
}

static int next_is(const baton_nn_model *m, size_t li, int kind)
{
    return li + 1 < m->nlayers && m->layers[li + 1].kind == kind && only_user(m, li);
}

/* the fused batch-norm entries take batch norm b's geometry */
static int bn_fused_ok(const baton_nn_model *m, int b)
{
    const nn_slot *s = &m->slots[m->layers[b].in];
    if (m->bn_sync_fn) return 0;   /* synchronised: every batch norm alone (kern_bn_sync.c) */
    return !m->k->bn_fused_ok || m->k->bn_fused_ok(s->c, s->h * s->w);
}

/* convolution li takes the statistics of the batch norm after it */
static int conv_stats_ok(const baton_nn_model *m, size_t li)
{
    const baton_nn_kernels *k = m->k;
    if (!k->conv_bn_stats_fwd || !k->bn_apply_train || !next_is(m, li, NN_BN)) return 0;
    const baton_nn_conv_geom g = nn_conv_geom(m, &m->layers[li], m->spec.max_batch);
    return (!k->conv_bn_stats_ok || k->conv_bn_stats_ok(&g)) && bn_fused_ok(m, (int)li + 1);
}

/* ReLU ri and the max pool after it: the pool's backward gives d(ReLU input) */
static int relu_pool_ok(const baton_nn_model *m, size_t ri)
{
    const baton_nn_kernels *k = m->k;
    if (!k->maxpool_relu_bwd || m->layers[ri].in == 0 || !next_is(m, ri, NN_MAXPOOL)) return 0;
    const baton_nn_pool_geom g = nn_pool_geom(m, &m->layers[ri + 1], m->spec.max_batch);
    return !k->maxpool_relu_ok || k->maxpool_relu_ok(&g);
}

/* The batch norm add ai runs with its ReLU (one kernel each way), or -1: an input of the add that
 * a batch norm writes for it alone (the first such); the other input and the batch norm's input
 * need gradients nothing after the add contributes to (so both start in this op's backward). */
static int bn_add_partner(const baton_nn_model *m, size_t ai)
{
    const baton_nn_kernels *k = m->k;
    const nn_layer *a = &m->layers[ai];
    if (!k->bn_add_relu_fwd_train || !k->bn_add_relu_bwd || a->in == a->in2) return -1;
    for (int side = 0; side < 2; side++) {
        const int s = side ? a->in2 : a->in, res = side ? a->in : a->in2, p = producer(m, s);
        if (p < 0 || m->layers[p].kind != NN_BN || slot_users(m, s) != 1) continue;
        const int x = m->layers[p].in;
        if (!bn_fused_ok(m, p) || res == 0 || x == 0 || read_after(m, res, ai) || read_after(m, x, ai)) return -1;
        return p;
    }
    return -1;
}

static nn_op *emit(baton_nn_model *m, nn_plan *p, int kind, int layer)
{
    nn_op *o = &p->ops[p->nops++];
    const nn_layer *l = &m->layers[layer];
    *o = (nn_op){.kind = kind, .fwd = nn_op_impls[kind].fwd, .bwd = nn_op_impls[kind].bwd, .layer = layer,
                 .bn = -1, .relu = -1, .pool = -1, .in = l->in, .in2 = l->kind == NN_ADD ? l->in2 : -1,
                 .out = l->out, .dy = l->out};
    o->flat = l->kind == NN_LINEAR && l->flat && nn_is_blocked(m->k->block, m->slots[l->in].c);
    return o;
}

/* the op o runs layer li too, as its last: its output is the op's */
static void take(baton_nn_model *m, nn_op *o, int *field, size_t li, int *taken)
{
    *field = (int)li;
    o->out = o->dy = m->layers[li].out;
    taken[li] = 1;
}

static void plan_infer(baton_nn_model *m)
{
    static const int kinds[] = {[NN_CONV] = NN_OP_CONV, [NN_BN] = NN_OP_BN_INFER, [NN_RELU] = NN_OP_RELU,
                                [NN_MAXPOOL] = NN_OP_MAXPOOL, [NN_GAP] = NN_OP_GAP, [NN_LINEAR] = NN_OP_LINEAR,
                                [NN_DROPOUT] = NN_OP_DROPOUT_INFER, [NN_ADD] = NN_OP_ADD};
    m->infer.nops = 0;
    m->infer.bn_1x1 = -1;
    for (size_t li = 0; li < m->nlayers; li++) emit(m, &m->infer, kinds[m->layers[li].kind], (int)li);
}

/* convolution li: alone, with its ReLU (and that ReLU's pool), or taking its batch norm's
 * statistics (stats[bn] set) */
static void plan_conv(baton_nn_model *m, size_t li, int *taken, int *stats)
{
    if (conv_stats_ok(m, li)) {
        emit(m, &m->train, NN_OP_CONV_STATS, (int)li)->bn = (int)li + 1;
        stats[li + 1] = 1;
    } else if (m->k->conv_relu_fwd && next_is(m, li, NN_RELU)) {
        const int pool = relu_pool_ok(m, li + 1);
        nn_op *o = emit(m, &m->train, pool ? NN_OP_CONV_RELU_POOL : NN_OP_CONV_RELU, (int)li);
        take(m, o, &o->relu, li + 1, taken);
        if (pool) take(m, o, &o->pool, li + 2, taken);
    } else {
        emit(m, &m->train, NN_OP_CONV, (int)li);
    }
}

/* the training ops, in forward order; a batch norm run inside the add after it is emitted there */
static void plan_train(baton_nn_model *m)
{
    const baton_nn_kernels *k = m->k;
    nn_plan *p = &m->train;
    int *taken = m->plan_work, *stats = taken + m->nlayers, *partner = stats + m->nlayers;
    p->nops = 0;
    p->bn_1x1 = -1;
    for (size_t li = 0; li < m->nlayers; li++) taken[li] = stats[li] = 0, partner[li] = -1;
    for (size_t li = 0; li < m->nlayers; li++)
        if (m->layers[li].kind == NN_ADD && k->add_relu && next_is(m, li, NN_RELU)) {
            const int b = bn_add_partner(m, li);
            partner[li] = b;
            if (b >= 0) taken[b] = 1;
        }
    for (size_t li = 0; li < m->nlayers; li++) {
        const nn_layer *l = &m->layers[li];
        const nn_slot *in = &m->slots[l->in];
        if (l->kind == NN_BN && p->bn_1x1 < 0 && in->h * in->w == 1) p->bn_1x1 = (int)li;
        if (taken[li]) continue;
        nn_op *o;
        switch (l->kind) {
        case NN_CONV:
            plan_conv(m, li, taken, stats);
            break;
        case NN_BN: {
            const int relu = k->bn_relu_fwd_train && k->bn_relu_bwd && next_is(m, li, NN_RELU) && bn_fused_ok(m, (int)li);
            o = emit(m, p, relu ? NN_OP_BN_RELU : NN_OP_BN, (int)li);
            o->stats = stats[li];
            if (relu) take(m, o, &o->relu, li + 1, taken);
            break;
        }
        case NN_RELU: {
            const int pool = relu_pool_ok(m, li);
            o = emit(m, p, pool ? NN_OP_RELU_POOL : NN_OP_RELU, (int)li);
            if (pool) take(m, o, &o->pool, li + 1, taken);
            break;
        }
        case NN_ADD:
            if (!k->add_relu || !next_is(m, li, NN_RELU)) {
                emit(m, p, NN_OP_ADD, (int)li);
                break;
            }
            o = emit(m, p, partner[li] >= 0 ? NN_OP_BN_ADD_RELU : NN_OP_ADD_RELU, (int)li);
            take(m, o, &o->relu, li + 1, taken);
            if (partner[li] < 0) break;
            o->bn = partner[li];
            o->stats = stats[o->bn];
            o->in = m->layers[o->bn].in;
            o->in2 = m->layers[o->bn].out == l->in ? l->in2 : l->in;   /* the residual */
            break;
        case NN_MAXPOOL: emit(m, p, NN_OP_MAXPOOL, (int)li); break;
        case NN_GAP: emit(m, p, NN_OP_GAP, (int)li); break;
        case NN_LINEAR: emit(m, p, NN_OP_LINEAR, (int)li); break;
        default: emit(m, p, NN_OP_DROPOUT, (int)li); break;
        }
    }
}

/* add+relu op i may keep d(sum) once, in in2's grad: in is read by the add alone, and no op between
 * in's producer and the add reads in2 (whose grad then holds d(sum) until in's producer has read it:
 * in2's gradient changes only by its readers' contributions) */
static int alias_ok(const baton_nn_model *m, size_t i)
{
    const nn_op *ops = m->train.ops, *a = &ops[i];
    if (a->in == 0 || a->in2 == 0 || a->in == a->in2 || slot_users(m, a->in) != 1) return 0;
    size_t pi = i;
    while (pi-- > 0 && ops[pi].out != a->in) {}
    if (pi >= i) return 0;   /* no op writes in */
    for (size_t j = pi + 1; j < i; j++)
        if (ops[j].in == a->in2 || ops[j].in2 == a->in2) return 0;
    return 1;
}

/* d(slot) from an op: the first contribution into the grad, a later one into scratch (pending;
 * one at a time, so an earlier pending one of this op is added first) */
static void route(nn_gout *g, int slot, int *ready, nn_gout **pend)
{
    g->slot = slot;
    g->mode = NN_G_NONE;
    if (slot <= 0) return;   /* the input images, or no input */
    if (!ready[slot]) {
        g->mode = NN_G_DIRECT;
        ready[slot] = 1;
        return;
    }
    if (*pend) (*pend)->mode = NN_G_ADD;
    g->mode = NN_G_PEND;
    *pend = g;
}

/* The training ops' gradient routes, walking them as backward will. ready[s]: d(s) holds a value;
 * alias[s]: the slot whose grad holds d(s) (-1: its own). */
static void plan_grads(baton_nn_model *m)
{
    int *ready = m->plan_work, *alias = ready + m->nslots;
    for (size_t s = 0; s < m->nslots; s++) ready[s] = 0, alias[s] = -1;
    ready[m->out_slot] = 1;   /* the loss writes d(logits) */
    nn_gout *pend = NULL;     /* a contribution the op after this one left in scratch */
    for (size_t i = m->train.nops; i-- > 0;) {
        nn_op *o = &m->train.ops[i];
        o->alias = o->kind == NN_OP_ADD_RELU && alias_ok(m, i) && !ready[o->in2];
        const int takes = o->kind == NN_OP_BN_ADD_RELU || o->alias;
        if (pend) {
            if (takes && m->k->relu_bwd_add && pend->slot == o->out)
                o->dy2 = 1;
            else
                pend->mode = NN_G_ADD;
            pend = NULL;
        }
        o->dy = alias[o->out] >= 0 ? alias[o->out] : o->out;
        o->zero_dy = !ready[o->out];
        ready[o->out] = 1;
        if (takes) {   /* d(in2) is written here first (the plan made bn+add+relu only so) */
            o->gx = (nn_gout){o->in, o->kind == NN_OP_BN_ADD_RELU ? NN_G_DIRECT : NN_G_NONE};
            o->gx2 = (nn_gout){o->in2, NN_G_DIRECT};
            ready[o->in] = ready[o->in2] = 1;
            if (o->alias) alias[o->in] = o->in2;
        } else {
            route(&o->gx, o->in, ready, &pend);
            route(&o->gx2, o->in2, ready, &pend);
        }
    }
    if (pend) pend->mode = NN_G_ADD;
}

int nn_plan_alloc(baton_nn_model *m, baton_err *err)
{
    const size_t nl = m->nlayers ? m->nlayers : 1, work = 3 * nl > 2 * m->nslots ? 3 * nl : 2 * m->nslots;
    m->train.ops = calloc(nl, sizeof(nn_op));
    m->infer.ops = calloc(nl, sizeof(nn_op));
    m->plan_work = calloc(work, sizeof(int));
    if (!m->train.ops || !m->infer.ops || !m->plan_work)
        return baton_err_set(err, BATON_ERR_NOMEM, "model %s: out of memory for its plan", m->name);
    return BATON_OK;
}

/* Convolution li reads and writes bfloat16 where its table can (conv16_ok at the largest batch) and
 * its output's only reader is the batch norm after it, which takes it in every form (bn_fused_ok:
 * the bfloat16 batch-norm entries' geometries) — so it is its own op in both plans. */
static int conv16_at(const baton_nn_model *m, size_t li)
{
    const baton_nn_kernels *k = m->k;
    if (m->layers[li].kind != NN_CONV || !next_is(m, li, NN_BN)) return 0;
    const nn_slot *s = &m->slots[m->layers[li].out];
    const baton_nn_conv_geom g = nn_conv_geom(m, &m->layers[li], m->spec.max_batch);
    return (!k->bn_fused_ok || k->bn_fused_ok(s->c, s->h * s->w)) && (!k->conv16_ok || k->conv16_ok(&g));
}

/* Which slots hold bfloat16 (nn_slot.bf16), where the table has the entries for them (conv_fwd16,
 * bn16_*, relu_*_y16; nn.h): the output of a convolution conv16_at takes, and the output of a
 * batch norm's ReLU whose only reader is such a convolution (the batch norm writes it fused with
 * its ReLU, or the ReLU alone after it: evaluation, synchronised batch norm; backward finds the
 * ReLU's mask from the batch norm's input, or reads it from the bfloat16 output). The gradient of
 * such a convolution output too (nn_slot.grad16) where both its backward passes run on the
 * bfloat16 kernels (conv_dy16_ok): the batch norm's backward, its only contribution, writes it
 * rounded — what the convolution's backward would round it to. Statistics, other gradients and
 * everything else stay float32. Not with a statistics-taking convolution (it writes float32). */
static void plan_bf16_slots(baton_nn_model *m)
{
    const baton_nn_kernels *k = m->k;
    for (size_t s = 0; s < m->nslots; s++) m->slots[s].bf16 = m->slots[s].grad16 = 0;
    if (!k->conv_fwd16 || !k->conv_bwd16 || !k->bn16_fwd_train || !k->bn16_fwd_infer || !k->bn_x16_bwd ||
        !k->relu_fwd_y16 || !k->relu_bwd_y16 || k->conv_bn_stats_fwd)
        return;
    for (size_t li = 0; li < m->nlayers; li++) {
        if (conv16_at(m, li)) {   /* its gradient too where both backward passes are bfloat16 */
            nn_slot *s = &m->slots[m->layers[li].out];
            const baton_nn_conv_geom g = nn_conv_geom(m, &m->layers[li], m->spec.max_batch);
            s->bf16 = 1;
            s->grad16 = k->conv_dy16_ok && k->conv_dy16_ok(&g);
        }
        const nn_layer *r = &m->layers[li];   /* a batch norm's ReLU, read by such a convolution alone */
        if (li > 0 && r->kind == NN_RELU && m->layers[li - 1].kind == NN_BN && only_user(m, li - 1) &&
            next_is(m, li, NN_CONV) && conv16_at(m, li + 1))
            m->slots[r->out].bf16 = 1;
    }
}

/* The bfloat16 copies (nn_slot.data16, nn_op.copy16): a float32 activation that a training op's batch
 * norm writes fused with its ReLU, or with its add and ReLU — a resnet block's output, which the
 * residual add, the backward's ReLU mask and the convolutions on the float32 kernels read as float32 —
 * gets a bfloat16 copy where a convolution on the bfloat16 kernels reads it (conv16_ok): the batch
 * norm's kernel rounds each value into the copy as it stores it, and that convolution reads the copy
 * instead of converting its input (a pass over it) and saving the conversion — in forward, and in
 * backward where its weights' pass runs on the bfloat16 kernels too (copy_reader). The
 * same bits either way: both round to nearest even. One buffer for every copy at the largest batch;
 * where it cannot be had, no copies (the same results). */
/* how convolution op o would read a copy of its input: 0 not (the f32 kernels), 1 in forward, 2 in
 * backward too (its weights' pass on the bfloat16 kernels, conv_dy16_ok; else that pass reads x itself) */
static int copy_reader(const baton_nn_model *m, const nn_op *o)
{
    const baton_nn_conv_geom g = nn_conv_geom(m, &m->layers[o->layer], m->spec.max_batch);
    if (!m->k->conv16_ok(&g)) return 0;
    return m->k->conv_dy16_ok && m->k->conv_dy16_ok(&g) ? 2 : 1;
}

static void plan_copies(baton_nn_model *m)
{
    const baton_nn_kernels *k = m->k;
    int *want = m->plan_work;   /* per slot: 1 a fused batch norm writes it, 2 and a bfloat16 convolution
                                 * reads it */
    free(m->copies16);
    m->copies16 = NULL;
    for (size_t s = 0; s < m->nslots; s++) m->slots[s].data16 = NULL, want[s] = 0;
    if (!k->bn16_fwd_train || !k->conv_fwd16 || !k->conv_bwd16 || !k->conv16_ok || k->conv_bn_stats_fwd) return;
    nn_plan *p = &m->train;
    for (size_t i = 0; i < p->nops; i++) {
        const nn_op *o = &p->ops[i];
        if ((o->kind == NN_OP_BN_RELU || o->kind == NN_OP_BN_ADD_RELU) && !o->stats && !m->slots[o->out].bf16 &&
            o->out != m->out_slot)
            want[o->out] = 1;
    }
    for (size_t i = 0; i < p->nops; i++)
        if (p->ops[i].kind == NN_OP_CONV && want[p->ops[i].in] && copy_reader(m, &p->ops[i])) want[p->ops[i].in] = 2;
    size_t total = 0;
    for (size_t s = 0; s < m->nslots; s++)
        if (want[s] == 2) total += nn_align_up(m->slots[s].per_image * (size_t)m->spec.max_batch);
    if (!total || !(m->copies16 = aligned_alloc(64, sizeof(uint16_t) * total))) return;
    total = 0;
    for (size_t s = 0; s < m->nslots; s++)
        if (want[s] == 2) {
            m->slots[s].data16 = m->copies16 + total;
            total += nn_align_up(m->slots[s].per_image * (size_t)m->spec.max_batch);
        }
    for (size_t i = 0; i < p->nops; i++) {
        nn_op *o = &p->ops[i];
        if (o->kind == NN_OP_CONV) o->copy16 = want[o->in] == 2 ? copy_reader(m, o) : 0;
        else if (o->kind == NN_OP_BN_RELU || o->kind == NN_OP_BN_ADD_RELU) o->copy16 = want[o->out] == 2;
    }
}

void nn_plan_fusions(baton_nn_model *m)
{
    plan_bf16_slots(m);
    plan_infer(m);
    plan_train(m);
    plan_copies(m);
    plan_grads(m);
}

void nn_plan_free(baton_nn_model *m)
{
    free(m->train.ops);
    free(m->infer.ops);
    free(m->plan_work);
    free(m->copies16);
}
