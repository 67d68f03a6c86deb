/* ppo_learn.c — learning from one iteration's experience, as rl_coach's ClippedPPOAgent does it
 * (fill_advantages, then train_network): the value network's estimate of every row (the steps
 * and the bootstrap states), GAE over each episode (the value after a terminal step is 0, after a
 * cut one the bootstrap state's), the iteration's advantages standardised, then num_epochs passes
 * over the steps in a shuffled order, in minibatches of batch_size (the last one shorter): for
 * each, the policy's forward, the clipped surrogate with the entropy bonus and its gradient (mean
 * over the minibatch), backward and one Adam step; and the value network's forward against the
 * GAE returns (huber or mean squared error), backward and one Adam step — on a second thread at
 * the same time when the caller has one (race_pair: the same bytes as one after the other). The
 * learning rate is constant (DeepRacer's).
 *
 * Contract: deterministic for the networks, the experience and the shuffle RNG's state; nothing
 * is allocated (the rollout's and the agent's buffers). A stop asked between minibatches (poll
 * returns 1) returns 1 with the networks changed: the caller throws the iteration away. */
#include "ppo_internal.h"

#include <string.h>

/* the values of rows [from, to), max_batch at a time from from, the inputs built in x */
static int value_rows(race_rollout *ro, race_agent *a, float *x, size_t from, size_t to, baton_err *err)
{
    for (size_t i = from; i < to; i += (size_t)a->max_batch) {
        int k = (int)(to - i < (size_t)a->max_batch ? to - i : (size_t)a->max_batch);
        for (int j = 0; j < k; j++) race_rollout_input_to(ro, a, x, j, (uint32_t)(i + (size_t)j));
        int rc = baton_nn_forward(a->vf, x, k, err);
        if (rc) return rc;
        const float *v = baton_nn_logits(a->vf);
        for (int j = 0; j < k; j++) ro->rows[i + (size_t)j].value = v[j];
    }
    return BATON_OK;
}

static void value_job(void *arg)
{
    race_vjob *j = arg;
    j->rc = value_rows(j->ro, j->a, j->a->xv, j->from, j->to, &j->err);
}

void race_values_early(race_rollout *ro, race_collect *c)
{
    race_vjob *j = &c->vjob;
    if (!c->pair || j->rc || (j->posted && !race_pair_idle(c->pair))) return;
    if (j->posted) ro->valued = j->to, j->posted = 0;   /* done (the idle check orders its writes before ours) */
    const size_t B = (size_t)c->agent->max_batch, whole = (ro->n - ro->valued) / B * B;
    if (!whole) return;
    j->ro = ro, j->a = c->agent, j->from = ro->valued, j->to = ro->valued + whole, j->posted = 1;
    race_pair_post(c->pair, value_job, j);
}

int race_values_settle(race_rollout *ro, race_collect *c, baton_err *err)
{
    race_vjob *j = &c->vjob;
    if (!c->pair) return BATON_OK;
    race_pair_wait(c->pair);
    if (j->posted && !j->rc) ro->valued = j->to;
    j->posted = 0;
    int rc = j->rc;
    if (rc) *err = j->err;
    j->rc = 0;
    return rc;
}

/* every row's value not taken during the rollout, max_batch at a time */
static int values(race_rollout *ro, race_agent *a, baton_err *err)
{
    return value_rows(ro, a, a->x, ro->valued, ro->n, err);
}

/* GAE of every episode, then the advantages standardised over the iteration */
static void advantages(race_rollout *ro, double gamma)
{
    for (size_t e = 0; e < ro->nep; e++) {
        size_t n = 0;
        for (int32_t r = (int32_t)ro->ep_last[e]; r >= 0 && n + 1 < ro->gcap; r = ro->rows[r].prev) ro->gat[n++] = (uint32_t)r;
        for (size_t i = 0; i < n / 2; i++) {   /* oldest first */
            uint32_t t = ro->gat[i];
            ro->gat[i] = ro->gat[n - 1 - i];
            ro->gat[n - 1 - i] = t;
        }
        for (size_t i = 0; i < n; i++) ro->gr[i] = ro->rows[ro->gat[i]].reward, ro->gv[i] = ro->rows[ro->gat[i]].value;
        const race_row *last = &ro->rows[ro->ep_last[e]];
        ro->gv[n] = last->end == RACE_CUT && last->boot >= 0 ? ro->rows[last->boot].value : 0.0f;
        ppo_gae(n, ro->gr, ro->gv, gamma, PPO_LAMBDA, ro->ga, ro->gret);
        for (size_t i = 0; i < n; i++) ro->rows[ro->gat[i]].adv = ro->ga[i], ro->rows[ro->gat[i]].ret = ro->gret[i];
    }
    for (size_t i = 0; i < ro->nsamples; i++) ro->tmp[i] = ro->rows[ro->samples[i]].adv;
    ppo_normalize(ro->nsamples, ro->tmp);
    for (size_t i = 0; i < ro->nsamples; i++) ro->rows[ro->samples[i]].adv = ro->tmp[i];
}

/* One network's half of a minibatch: its forward on the agent's input (filled, read-only here),
 * its loss's gradient into its own buffer, backward and one Adam step. The two halves share
 * nothing else, so they may run at once (ppo_pair.c). */
typedef struct half {
    race_rollout *ro;
    race_agent *a;
    baton_nn_optim *opt;
    const baton_ppo_hyper *h;
    const uint64_t *idx;
    int k;
    double loss, ent, kl, clipped;   /* sums over the minibatch */
    int rc;
    baton_err err;
} half;

static void policy_half(void *arg)
{
    half *m = arg;
    race_agent *a = m->a;
    if ((m->rc = baton_nn_forward(a->pi, a->x, m->k, &m->err))) return;
    const float *out = baton_nn_logits(a->pi);
    const double w = 1.0 / m->k;
    for (int j = 0; j < m->k; j++) {
        const race_row *r = &m->ro->rows[m->ro->samples[m->idx[j]]];
        const float *o = out + (size_t)j * a->nout;
        float *d = a->dout + (size_t)j * a->nout;
        ppo_terms t;
        if (a->meta.action_type == BATON_PPO_DISCRETE)
            ppo_discrete_loss(a->nout, o, r->action, r->logp, r->adv, PPO_CLIP, m->h->beta_entropy, w, d, &t);
        else
            ppo_gauss_loss(2, o, r->u, r->logp, r->adv, PPO_CLIP, m->h->beta_entropy, w, d, &t);
        m->loss += t.loss, m->ent += t.entropy, m->kl += t.kl, m->clipped += t.clipped;
    }
    if (!(m->rc = baton_nn_backward_from(a->pi, a->dout, &m->err))) m->rc = baton_nn_optim_step(m->opt, m->h->lr, &m->err);
}

static void value_half(void *arg)
{
    half *m = arg;
    race_agent *a = m->a;
    if ((m->rc = baton_nn_forward(a->vf, a->x, m->k, &m->err))) return;
    const float *v = baton_nn_logits(a->vf);
    const double w = 1.0 / m->k;
    for (int j = 0; j < m->k; j++) {
        const race_row *r = &m->ro->rows[m->ro->samples[m->idx[j]]];
        m->loss += ppo_value_loss(m->h->loss_type, v[j], r->ret, w, &a->dval[j]);
    }
    if (!(m->rc = baton_nn_backward_from(a->vf, a->dval, &m->err))) m->rc = baton_nn_optim_step(m->opt, m->h->lr, &m->err);
}

/* one minibatch: the policy's half and the value's, at once when there is a second learner */
static int minibatch(race_rollout *ro, race_agent *a, baton_nn_optim *opi, baton_nn_optim *ovf,
                     const baton_ppo_hyper *h, const uint64_t *idx, int k, race_pair *pair, race_learn_stats *st,
                     baton_err *err)
{
    for (int j = 0; j < k; j++) race_rollout_input(ro, a, j, ro->samples[idx[j]]);
    half pm = {.ro = ro, .a = a, .opt = opi, .h = h, .idx = idx, .k = k};
    half vm = {.ro = ro, .a = a, .opt = ovf, .h = h, .idx = idx, .k = k};
    if (pair) race_pair_post(pair, value_half, &vm);
    policy_half(&pm);
    if (pair) race_pair_wait(pair);
    else value_half(&vm);
    if (pm.rc) return *err = pm.err, pm.rc;
    if (vm.rc) return *err = vm.err, vm.rc;
    st->policy_loss += pm.loss, st->value_loss += vm.loss, st->entropy += pm.ent, st->kl += pm.kl;
    st->clip_frac += pm.clipped;
    st->updates++;
    return BATON_OK;
}

int race_learn(race_rollout *ro, race_agent *a, baton_nn_optim *opi, baton_nn_optim *ovf, const baton_ppo_hyper *h,
               baton_rng *shuffle, race_pair *pair, int (*poll)(void *, baton_err *), void *poll_ctx,
               race_learn_stats *st, baton_err *err)
{
    memset(st, 0, sizeof *st);
    if (ro->nsamples == 0) return BATON_OK;
    int rc = values(ro, a, err);
    if (rc) return rc;
    advantages(ro, h->discount_factor);
    const int B = (int)(h->batch_size < (uint32_t)a->max_batch ? h->batch_size : (uint32_t)a->max_batch);
    size_t seen = 0;
    for (uint32_t ep = 0; ep < h->num_epochs; ep++) {
        baton_rng_permutation(shuffle, ro->perm, ro->nsamples);
        for (size_t i = 0; i < ro->nsamples; i += (size_t)B) {
            if (poll && (rc = poll(poll_ctx, err))) return rc;
            int k = (int)(ro->nsamples - i < (size_t)B ? ro->nsamples - i : (size_t)B);
            if ((rc = minibatch(ro, a, opi, ovf, h, ro->perm + i, k, pair, st, err))) return rc;
            seen += (size_t)k;
        }
    }
    if (seen) {   /* means per sample */
        st->policy_loss /= (double)seen;
        st->value_loss /= (double)seen;
        st->entropy /= (double)seen;
        st->kl /= (double)seen;
        st->clip_frac /= (double)seen;
    }
    return BATON_OK;
}
