/* rollout.c — one PPO iteration's experience: num_episodes_between_training episodes driven on
 * `envs` cars stepped as one batch (each car drives its next episode as soon as its last ended,
 * until the iteration's episodes are all started; a car with none left waits), the policy run in
 * batch on the cars still driving, its actions sampled, the reward function called for the batch.
 *
 * Episodes: episode j of the run starts at (j mod 20) / 20 of the lap (DeepRacer's round robin,
 * its objects, if any, drawn from (seed, j)),
 * ROUND_ROBIN_ADVANCE_DIST 0.05) — an open track's always at its start —, standing still. It ends, as a terminal state (nothing after it),
 * off the track, reversed or immobilized; it is cut — the car would drive on — at its lap's end
 * (lap_complete) or its step limit (time_up): then the state after its last step is kept as a
 * bootstrap row, whose value stands for what follows.
 *
 * Rewards trained on: the reward function's value (what SIM_TRACE_LOG shows), times the progress
 * the step made over a top-speed step's distance (BATON_PPO_SCALE_PROGRESS; 1 for
 * BATON_PPO_SCALE_STEP), times the value scale (1 - discount).
 *
 * Rows: one per step with its frame; stacked inputs follow the rows' prev links (the episode's
 * first frame repeated before its start). The buffer holds cap rows (allocated once); an
 * iteration that would fill it cuts every episode under way there (bootstrapped) and ends.
 *
 * With opponents (c->opp, opponents.c) each learning car shares its world with them: they act
 * (deterministically) beside the car, move in the same step, are put back after their own resets
 * before the car's reward is taken, and are placed anew with each of its episodes.
 *
 * With a second learner (c->pair), the value network values the rows in whole batches on it as
 * they fill, while the cars drive (ppo_learn.c: the batches learning would run, so the same values).
 *
 * Contract: deterministic for the agent's weights, the RNG's state and the first episode's
 * number; allocates nothing. */
#include "ppo_internal.h"

#include <stdlib.h>
#include <string.h>

#define ROUND_ROBIN 20          /* starts per lap: DeepRacer's 0.05 */

int race_rollout_new(race_rollout *ro, size_t cap, size_t episodes, size_t frame_bytes, uint32_t max_steps, baton_err *err)
{
    memset(ro, 0, sizeof *ro);
    ro->cap = cap;
    ro->frame_bytes = frame_bytes;
    ro->frames_len = cap * frame_bytes;
    ro->ep_cap = episodes;
    ro->gcap = (size_t)max_steps + 2;
    ro->rows = calloc(cap, sizeof *ro->rows);
    ro->frames = baton_bigmem_alloc(ro->frames_len ? ro->frames_len : 1);
    ro->samples = calloc(cap, sizeof *ro->samples);
    ro->perm = calloc(cap, sizeof *ro->perm);
    ro->tmp = calloc(cap, sizeof *ro->tmp);
    ro->ep_last = calloc(episodes ? episodes : 1, sizeof *ro->ep_last);
    ro->gat = calloc(ro->gcap, sizeof *ro->gat);
    ro->gr = calloc(ro->gcap, sizeof(float));
    ro->gv = calloc(ro->gcap, sizeof(float));
    ro->ga = calloc(ro->gcap, sizeof(float));
    ro->gret = calloc(ro->gcap, sizeof(float));
    if (!ro->rows || !ro->frames || !ro->samples || !ro->perm || !ro->tmp || !ro->ep_last || !ro->gat || !ro->gr || !ro->gv ||
        !ro->ga || !ro->gret) {
        race_rollout_free(ro);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for %zu steps of experience", cap);
    }
    return BATON_OK;
}

void race_rollout_free(race_rollout *ro)
{
    free(ro->rows);
    if (ro->frames) baton_bigmem_free(ro->frames, ro->frames_len ? ro->frames_len : 1);
    free(ro->samples);
    free(ro->perm);
    free(ro->tmp);
    free(ro->ep_last);
    free(ro->gat);
    free(ro->gr);
    free(ro->gv);
    free(ro->ga);
    free(ro->gret);
    memset(ro, 0, sizeof *ro);
}

int race_collect_new(race_collect *c, uint32_t envs, int cars, baton_err *err)
{
    c->last = calloc(envs, sizeof *c->last);
    c->episode = calloc(envs, sizeof *c->episode);
    c->active = calloc(envs, 1);
    c->steer = calloc((size_t)envs * (size_t)(cars > 1 ? cars : 1), sizeof(float));
    c->speed = calloc((size_t)envs * (size_t)(cars > 1 ? cars : 1), sizeof(float));
    c->before = calloc(envs, sizeof(float));
    c->raw = calloc(envs, sizeof(double));
    c->ep_reward = calloc(envs, sizeof(double));
    c->slot_env = calloc(envs, sizeof(uint32_t));
    c->slot_row = calloc(envs, sizeof(uint32_t));
    c->params = calloc(envs, sizeof *c->params);
    if (!c->last || !c->episode || !c->active || !c->steer || !c->speed || !c->before || !c->raw || !c->ep_reward ||
        !c->slot_env || !c->slot_row || !c->params) {
        race_collect_free(c);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory for %u cars", envs);
    }
    return BATON_OK;
}

void race_collect_free(race_collect *c)
{
    free(c->last);
    free(c->episode);
    free(c->active);
    free(c->steer);
    free(c->speed);
    free(c->before);
    free(c->raw);
    free(c->ep_reward);
    free(c->slot_env);
    free(c->slot_row);
    free(c->params);
    c->last = NULL, c->episode = NULL, c->active = NULL, c->steer = c->speed = c->before = NULL;
    c->raw = c->ep_reward = NULL, c->slot_env = c->slot_row = NULL, c->params = NULL;
}

static uint8_t *frame_of(const race_rollout *ro, uint32_t row) { return ro->frames + (size_t)row * ro->frame_bytes; }

/* Learning car e in the simulator (with opponents each world's first car). */
static inline size_t senv(const race_collect *c, uint32_t e) { return c->opp ? (size_t)e * (size_t)c->opp->cars : e; }

void race_rollout_input(const race_rollout *ro, race_agent *a, int slot, uint32_t row)
{
    race_rollout_input_to(ro, a, a->x, slot, row);
}

void race_rollout_input_to(const race_rollout *ro, const race_agent *a, float *x, int slot, uint32_t row)
{
    const void *f[16];
    int32_t cur = (int32_t)row;
    f[a->stack - 1] = frame_of(ro, row);
    for (int k = a->stack - 2; k >= 0; k--) {
        if (ro->rows[cur].prev >= 0) cur = ro->rows[cur].prev;
        f[k] = frame_of(ro, (uint32_t)cur);
    }
    race_agent_input_to(a, x, slot, f);
}

/* a new row for env (its frame taken now) */
static uint32_t new_row(race_rollout *ro, race_collect *c, uint32_t env, int32_t prev, int sample)
{
    uint32_t r = (uint32_t)ro->n++;
    race_row *w = &ro->rows[r];
    memset(w, 0, sizeof *w);
    w->prev = prev;
    w->boot = -1;
    w->action = -1;
    w->sample = (uint8_t)sample;
    race_agent_frame(c->agent, c->sim, c->cam, senv(c, env), frame_of(ro, r));
    if (sample) ro->samples[ro->nsamples++] = r;
    return r;
}

static void start_episode(race_collect *c, uint32_t env, uint64_t episode)
{
    double start = c->loop ? (double)(episode % ROUND_ROBIN) / ROUND_ROBIN : 0;
    baton_race_sim_scene_seed(c->sim, senv(c, env), episode);   /* objects: the episode's scene, whichever car drives it */
    baton_race_sim_start(c->sim, senv(c, env), start, 0);
    if (c->opp) race_opponents_place(c->opp, c->sim, env, start, episode);   /* placed anew */
    c->episode[env] = episode;
    c->last[env] = -1;
    c->ep_reward[env] = 0;
    c->active[env] = 1;
}

/* env's episode ended after row r (status st): its end, its bootstrap row, its statistics */
static void end_episode(race_rollout *ro, race_collect *c, uint32_t env, uint32_t r, int cut, race_collect_stats *s)
{
    const baton_race_car_state *st = baton_race_sim_state(c->sim, senv(c, env));
    race_row *w = &ro->rows[r];
    w->end = cut ? RACE_CUT : RACE_ENDED;
    if (cut) w->boot = (int32_t)new_row(ro, c, env, (int32_t)r, 0);
    if (ro->nep < ro->ep_cap) ro->ep_last[ro->nep++] = r;
    s->episodes++;
    s->reward_sum += c->ep_reward[env];
    s->progress_sum += st->progress;
    if (st->status == BATON_RACE_LAP_COMPLETE) {
        s->laps++;
        double lap = st->steps / c->hz;
        if (s->best_lap_s == 0 || lap < s->best_lap_s) s->best_lap_s = lap;
    }
    c->active[env] = 0;
}

/* the policy on every driving car: rows, inputs, actions (into steer / speed). Returns the count. */
static int act(race_rollout *ro, race_collect *c, baton_err *err)
{
    race_agent *a = c->agent;
    int k = 0;
    for (uint32_t e = 0; e < c->envs; e++) {
        if (!c->active[e]) continue;
        uint32_t r = new_row(ro, c, e, c->last[e], 1);
        c->slot_env[k] = e;
        c->slot_row[k] = r;
        race_rollout_input(ro, a, k, r);
        k++;
    }
    if (k == 0) return 0;
    int rc = baton_nn_forward(a->pi, a->x, k, err);
    if (rc) return rc;
    const float *out = baton_nn_logits(a->pi);
    for (int i = 0; i < k; i++) {
        race_row *w = &ro->rows[c->slot_row[i]];
        const float *o = out + (size_t)i * a->nout;
        uint32_t e = c->slot_env[i];
        if (a->meta.action_type == BATON_PPO_DISCRETE) w->action = ppo_sample_discrete(a->nout, o, c->rng, &w->logp);
        else ppo_sample_gauss(2, o, c->rng, w->u, &w->logp);
        race_agent_action(a, w->action, w->u, &c->steer[senv(c, e)], &c->speed[senv(c, e)]);
        c->before[e] = (float)baton_race_sim_state(c->sim, senv(c, e))->progress;
    }
    return k;
}

/* after the step: rewards, trace rows, ends; new episodes where some are left */
static int after_step(race_rollout *ro, race_collect *c, int k, uint64_t tick, uint64_t *started,
                      race_collect_stats *s, baton_err *err)
{
    for (int i = 0; i < k; i++) baton_race_sim_params(c->sim, senv(c, c->slot_env[i]), &c->params[i]);
    /* the user's reward sees IEEE arithmetic, denormals and all (the networks flush them) */
    const int flushed = baton_nn_denormals_flushed();
    if (flushed) baton_nn_flush_denormals_here(0);
    int rc = baton_race_reward_eval_batch(c->reward, c->params, (size_t)k, c->raw, err);
    if (flushed) baton_nn_flush_denormals_here(1);
    if (rc) return rc;
    for (int i = 0; i < k; i++) {
        uint32_t e = c->slot_env[i], r = c->slot_row[i];
        const baton_race_car_state *st = baton_race_sim_state(c->sim, senv(c, e));
        double w = 1;
        if (c->reward_scale == BATON_PPO_SCALE_PROGRESS)
            w = (st->progress - c->before[e]) / 100 * c->track_len / c->top_step_m;
        ro->rows[r].reward = (float)(c->raw[i] * w * c->value_scale);
        c->ep_reward[e] += c->raw[i];
        if (c->trace && (rc = race_trace_row(c->trace, c->episode[e], st->steps, st, ro->rows[r].action, c->raw[i],
                                             c->track_len, (double)(c->tick0 + tick) / c->hz)))
            return baton_err_set(err, rc, "out of memory for the trace");
        c->last[e] = (int32_t)r;
        if (st->status == BATON_RACE_IN_PROGRESS) continue;
        int cut = st->status == BATON_RACE_LAP_COMPLETE || st->status == BATON_RACE_TIME_UP;
        end_episode(ro, c, e, r, cut, s);
        if (*started < c->episodes) start_episode(c, e, c->first_episode + (*started)++);
        else if (c->opp) race_opponents_park(c->opp, c->sim, e);   /* no episode left in this world */
    }
    return BATON_OK;
}

static int collect(race_rollout *ro, race_collect *c, race_collect_stats *s, baton_err *err)
{
    memset(s, 0, sizeof *s);
    ro->n = ro->nsamples = ro->nep = ro->valued = 0;
    uint64_t started = 0, tick = 0;
    for (uint32_t e = 0; e < c->envs; e++) {
        c->active[e] = 0;
        if (started < c->episodes) start_episode(c, e, c->first_episode + started++);
        else if (c->opp) race_opponents_park(c->opp, c->sim, e);
    }
    for (;;) {
        int rc = c->poll ? c->poll(c->poll_ctx, err) : 0;
        if (rc) return rc;
        if (ro->n + 2 * (size_t)c->envs > ro->cap) {   /* full: cut what is under way */
            for (uint32_t e = 0; e < c->envs; e++)
                if (c->active[e] && c->last[e] >= 0) end_episode(ro, c, e, (uint32_t)c->last[e], 1, s);
            break;
        }
        int k = act(ro, c, err);
        if (k < 0) return k;
        if (k == 0) break;
        if (c->opp && (rc = race_opponents_act(c->opp, c->sim, c->active, c->steer, c->speed, err))) return rc;
        baton_race_sim_step(c->sim, c->steer, c->speed);
        if (c->opp) race_opponents_after(c->opp, c->sim, c->active);   /* their laps and resets, before the rewards */
        if ((rc = after_step(ro, c, k, tick, &started, s, err))) return rc;
        race_values_early(ro, c);
        tick++;
    }
    s->samples = ro->nsamples;
    s->ticks = tick;
    return BATON_OK;
}

int race_rollout_collect(race_rollout *ro, race_collect *c, race_collect_stats *s, baton_err *err)
{
    int rc = collect(ro, c, s, err);
    baton_err verr = {0};
    int vrc = race_values_settle(ro, c, &verr);   /* the second learner is idle whatever happened */
    if (!rc && vrc) *err = verr, rc = vrc;
    return rc;
}
