/* ppo_train.c — `baton race train` (baton_ppo_train) as a straight list of stages over a
 * training session (train_session.h): open (the session first, so a notice during setup is not missed),
 * resume (the newest checkpoint's state: what the run is and where it stands), build (the track,
 * the reward, the agent, Adam for each network, the simulator, the camera, the buffers), then per
 * iteration poll → rollout → learn → iteration end (counters, the shadow, the log, the trace, the
 * progress line) → step-done, then finish. A session step is one PPO iteration: ckpt-<k>/ holds
 * the state after k iterations.
 *
 * Determinism: the networks are initialised from the seed; episode j starts where j says
 * (rollout.c); actions are drawn from one RNG in car order, minibatches from another; both are in
 * state.json. So a run resumed from any checkpoint ends with the bytes an uninterrupted one ends
 * with (same kernels, same thread count). The session may ask for a checkpoint in the middle of an
 * iteration (a rebalance, the final one after a notice): it gets the shadow — the tensors and the
 * state.json of the last iteration's end — and a run stopped there throws the unfinished iteration
 * away. */
#include "ppo_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void baton_ppo_train_opts_default(baton_ppo_train_opts *o)
{
    memset(o, 0, sizeof *o);
    baton_train_session_opts_default(&o->session);
    o->obs = -1;
    o->trace_every = 1;
    o->reward_scale = BATON_PPO_SCALE_PROGRESS;
    baton_race_car_racing(&o->car);   /* the lap-time limit's car: a lap is compared with it fairly */
    baton_race_objects_opts_default(&o->objects);
}

typedef struct trainer {
    const baton_ppo_train_opts *o;
    baton_train_session *sess;
    race_run_state st;          /* at the last iteration's end */
    char *state_json;           /* its state.json */
    baton_race_track *track;
    baton_race_reward *reward;
    baton_race_sim *sim;
    baton_race_camera *cam;
    race_agent agent;
    int have_agent;
    baton_nn_optim *opi, *ovf;
    race_pair *pair;            /* the value network's learner thread, or NULL */
    int team0;                  /* the caller's team size, restored at the end */
    race_ckpt_tensors ct;
    race_rollout ro;
    race_collect col;
    race_opponents opp;         /* head-to-model: the models raced against */
    int have_opp;
    baton_rng act, shuffle;     /* live */
    baton_buf trace;
    double t0, steps_run;
    double mean_reward, mean_progress;
    baton_progress prog;
    char label[200];
} trainer;

/* ---------------------------------------------------------------- the session's callbacks */

static int snapshot(void *ctx, baton_ckpt_store *store, uint64_t step, baton_err *err)
{
    trainer *t = ctx;
    if (step != t->st.iteration) return baton_err_set(err, BATON_ERR_ARG, "checkpoint of step %" PRIu64
                                                      " asked at iteration %" PRIu64, step, t->st.iteration);
    return baton_ckpt_snapshot_tensors(store, t->ct.mt, t->ct.nm, t->ct.ot, t->ct.no, t->st.optim_steps, t->state_json,
                                       step, BATON_CKPT_WAIT, err);
}

/* inside an iteration: 1 when a terminal notice is latched (rebalances save the shadow) */
static int poll(void *ctx, baton_err *err)
{
    trainer *t = ctx;
    return baton_train_session_poll(t->sess, t->st.iteration, err);
}

static int refresh_state(trainer *t, baton_err *err)
{
    free(t->state_json);
    t->state_json = race_state_format(&t->st);
    return t->state_json ? BATON_OK : baton_err_set(err, BATON_ERR_NOMEM, "out of memory for state.json");
}

/* ---------------------------------------------------------------- stage: what the run is */

/* A fresh run's settings from the options and the files. */
static int fresh_state(trainer *t, baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    race_run_state *s = &t->st;
    memset(s, 0, sizeof *s);
    int rc = o->metadata ? ppo_meta_load(o->metadata, &s->meta, err) : (ppo_meta_default(&s->meta), 0);
    if (!rc) rc = o->hyper ? ppo_hyper_load(o->hyper, &s->hyper, err) : (ppo_hyper_default(&s->hyper), 0);
    if (rc) return rc;
    if (o->obs >= 0) s->meta.obs = o->obs;
    snprintf(s->track, sizeof s->track, "%s", o->track);
    snprintf(s->reward, sizeof s->reward, "%s", o->reward ? o->reward : "follow_center_line");
    if (strlen(o->track) >= sizeof s->track || (o->reward && strlen(o->reward) >= sizeof s->reward))
        return baton_err_set(err, BATON_ERR_ARG, "the track or reward name is too long");
    s->reward_scale = o->reward_scale;
    s->precision = o->precision;
    s->seed = o->seed;
    s->envs = o->envs ? o->envs : s->hyper.num_episodes_between_training;
    if (s->envs > s->hyper.num_episodes_between_training) s->envs = s->hyper.num_episodes_between_training;
    s->max_steps = o->max_steps ? o->max_steps : 10000;
    s->car = o->car;
    s->objects = o->objects;
    if (o->nopponents < 0 || o->nopponents > BATON_RACE_MAX_CARS - 1)
        return baton_err_set(err, BATON_ERR_ARG, "%d opponents (want 1 to %d)", o->nopponents, BATON_RACE_MAX_CARS - 1);
    if (o->nopponents && baton_race_objects_any(&o->objects))
        return baton_err_set(err, BATON_ERR_ARG, "--opponent races without boxes or bots");
    s->nopponents = o->nopponents;
    for (int i = 0; i < o->nopponents; i++) {
        if (!o->opponents[i] || strlen(o->opponents[i]) >= sizeof s->opponents[i])
            return baton_err_set(err, BATON_ERR_ARG, "opponent %d: no path, or one too long", i + 1);
        char *abs = realpath(o->opponents[i], NULL);   /* a resume from another folder finds it */
        snprintf(s->opponents[i], sizeof s->opponents[i], "%s", abs ? abs : o->opponents[i]);
        free(abs);
    }
    s->meta.lidar = (baton_race_objects_any(&s->objects) || s->nopponents) && s->meta.obs == BATON_PPO_OBS_SENSOR;
    baton_rng_seed3(&s->act_rng, o->seed, 0x616374 /* "act" */, 0);
    baton_rng_seed3(&s->shuffle_rng, o->seed, 0x73687566 /* "shuf" */, 0);
    return BATON_OK;
}

/* A resumed run is the checkpoint's: a setting given now must be the one it was trained with. */
static int same_settings(trainer *t, const race_run_state *ck, baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    int rc = fresh_state(t, err);   /* the caller replaces t->st with the checkpoint's next */
    if (rc) return rc;
    race_run_state now = t->st;
    if (!o->obs_set) now.meta.obs = ck->meta.obs;   /* --obs decides that, not the file */
    if (!o->objects_set) now.objects = ck->objects, now.meta.lidar = ck->meta.lidar;   /* the race's, likewise */
    if (!o->nopponents) {   /* the opponents: the run's, unless given */
        now.nopponents = ck->nopponents;
        memcpy(now.opponents, ck->opponents, sizeof now.opponents);
        now.meta.lidar = ck->meta.lidar;
    }
    if (!o->precision_set) now.precision = ck->precision;
    const char *what = NULL;
    if (strcmp(now.track, ck->track)) what = "--track";
    else if (o->reward && strcmp(now.reward, ck->reward)) what = "--reward";
    else if (o->metadata && memcmp(&now.meta, &ck->meta, sizeof now.meta)) what = "--metadata (model_metadata.json)";
    else if (o->hyper && memcmp(&now.hyper, &ck->hyper, sizeof now.hyper)) what = "--hyper (hyperparameters.json)";
    else if (o->obs_set && now.meta.obs != ck->meta.obs) what = "--obs";
    else if (o->seed_set && now.seed != ck->seed) what = "--seed";
    else if (o->scale_set && now.reward_scale != ck->reward_scale) what = "--reward-scale";
    else if (o->precision_set && now.precision != ck->precision) what = "--precision";
    else if (o->envs_set && now.envs != ck->envs) what = "--envs";
    else if (o->max_steps_set && now.max_steps != ck->max_steps) what = "--max-steps";
    else if (o->objects_set && memcmp(&now.objects, &ck->objects, sizeof now.objects)) what = "race (its objects)";
    else if (now.nopponents != ck->nopponents || memcmp(now.opponents, ck->opponents, sizeof now.opponents))
        what = "--opponent (the models raced against)";
    else if (memcmp(&now.car, &ck->car, sizeof now.car)) what = "the car's limits";
    if (what)
        return baton_err_set(err, BATON_ERR_ARG, "the checkpoint was trained with another %s than this run's; resume "
                             "with the same settings (or leave them out), or train into another --ckpt-dir", what);
    return BATON_OK;
}

static int stage_open(trainer *t, baton_ppo_train_result *r, char *path, size_t cap, int *resumed, baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    baton_train_session_opts so = o->session;
    so.snapshot = snapshot;
    so.ctx = t;
    int rc = baton_train_session_open(&so, &t->sess, err);
    if (rc) return rc;
    uint64_t step;
    char *text = NULL;
    rc = baton_train_session_resume(t->sess, path, cap, &step, &text, err);
    *resumed = rc == BATON_OK;
    if (rc == BATON_ERR_NOTFOUND) return fresh_state(t, err);
    if (rc) return rc;
    race_run_state ck;
    rc = race_state_parse(text, strlen(text), &ck, err);
    free(text);
    if (!rc) rc = same_settings(t, &ck, err);
    if (rc) return baton_err_prefix(err, "resume from %s", path);
    t->st = ck;
    r->resumed = 1;
    r->resumed_iteration = ck.iteration;
    return BATON_OK;
}

/* ---------------------------------------------------------------- stage: build */

static int build(trainer *t, const char *path, int resumed, baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    race_run_state *s = &t->st;
    int rc = baton_race_track_load(s->track, &t->track, err);
    if (!rc) rc = baton_race_reward_open(s->reward, &t->reward, err);
    if (rc) return rc;
    int max_batch = (int)(s->hyper.batch_size > s->envs ? s->hyper.batch_size : s->envs);
    if (max_batch < 64) max_batch = 64;
    const int kind = o->reference_kernels ? RACE_KERNELS_REFERENCE
                     : s->precision == BATON_PPO_BF16 ? RACE_KERNELS_BF16 : RACE_KERNELS_DNNL;
    if ((rc = race_agent_new(&t->agent, &s->meta, (int)s->hyper.stack_size, s->seed, max_batch, kind, err)))
        return rc;
    t->have_agent = 1;
    const int nthr = o->threads > 0 ? o->threads : baton_nn_threads();
    if (nthr >= 2) {   /* the policy on this thread, the value beside it, the threads split */
        baton_nn_set_threads(nthr / 2);
        if ((rc = race_pair_new(&t->pair, nthr - nthr / 2, err))) return rc;
    } else if (o->threads > 0) {
        baton_nn_set_threads(o->threads);
    }
    baton_nn_optim_cfg oc = {.kind = BATON_NN_ADAMW, .eps = 1e-5};   /* Adam: DeepRacer's eps */
    if ((rc = baton_nn_optim_create(&oc, t->agent.pi, &t->opi, err)) ||
        (rc = baton_nn_optim_create(&oc, t->agent.vf, &t->ovf, err)))
        return rc;
    if (resumed && (rc = race_ckpt_load(path, t->st.policy_only, &t->agent, t->opi, t->ovf, NULL, err)))
        return baton_err_prefix(err, "resume from %s", path);
    baton_nn_optim_set_steps(t->opi, s->optim_steps);
    baton_nn_optim_set_steps(t->ovf, s->optim_steps);
    if ((rc = race_ckpt_tensors_new(&t->ct, &t->agent, t->opi, t->ovf, err))) return rc;
    baton_race_sim_opts so;
    baton_race_sim_opts_default(&so);
    so.envs = s->envs, so.seed = s->seed, so.max_steps = s->max_steps, so.car = s->car, so.objects = s->objects;
    if (s->nopponents) {   /* head-to-model: a world per learning car, its opponents beside it */
        const char *paths[BATON_RACE_MAX_CARS - 1];
        for (int i = 0; i < s->nopponents; i++) paths[i] = s->opponents[i];
        if ((rc = race_opponents_open(&t->opp, paths, s->nopponents, s->envs, t->track, err))) return rc;
        t->have_opp = 1;
        so.shared = 1 + s->nopponents;
        so.envs = (size_t)s->envs * (size_t)so.shared;
    }
    if ((rc = baton_race_sim_new(t->track, &so, &t->sim, err))) return rc;
    if (s->meta.obs == BATON_PPO_OBS_CAMERA && (rc = baton_race_camera_new(t->track, &t->agent.camera, &t->cam, err)))
        return rc;
    /* a camera iteration's frames are bounded to about 1.5 GB; steps beyond cut the iteration */
    size_t eps = s->hyper.num_episodes_between_training, cap = eps * ((size_t)s->max_steps + 1) + 2 * s->envs;
    size_t cam_cap = ((size_t)1536 << 20) / (t->agent.frame_bytes ? t->agent.frame_bytes : 1);
    if (s->meta.obs == BATON_PPO_OBS_CAMERA && cap > cam_cap) cap = cam_cap;
    if ((rc = race_rollout_new(&t->ro, cap, eps, t->agent.frame_bytes, s->max_steps, err)) ||
        (rc = race_collect_new(&t->col, s->envs, 1 + s->nopponents, err)))
        return rc;
    baton_race_track_info in;
    baton_race_track_get_info(t->track, &in);
    race_collect *c = &t->col;
    c->sim = t->sim, c->cam = t->cam, c->reward = t->reward, c->agent = &t->agent, c->rng = &t->act;
    c->envs = s->envs, c->episodes = (uint32_t)eps, c->hz = so.hz, c->track_len = in.length_m, c->loop = in.loop;
    c->top_step_m = s->car.max_speed_mps / so.hz;
    c->reward_scale = s->reward_scale;
    c->value_scale = 1 - s->hyper.discount_factor > 1e-4 ? 1 - s->hyper.discount_factor : 1e-4;
    c->poll = poll, c->poll_ctx = t, c->pair = t->pair;
    c->opp = t->have_opp ? &t->opp : NULL;
    t->act = s->act_rng, t->shuffle = s->shuffle_rng;
    if (!resumed && (rc = race_model_files(o->session.ckpt_dir, &s->meta, &s->hyper, err))) return rc;
    if (o->log_path && (rc = race_log_cut(o->log_path, s->iteration, err))) return rc;
    if (o->trace_dir && (rc = race_trace_cut(o->trace_dir, s->iteration, err))) return rc;
    if ((rc = refresh_state(t, err))) return rc;
    baton_train_session_begin(t->sess, s->iteration, resumed);
    if (resumed)
        baton_log(BATON_LOG_INFO, "resuming from %s (iteration %" PRIu64 ", %" PRIu64 " episodes)", path, s->iteration,
                  s->episodes);
    return BATON_OK;
}

/* ---------------------------------------------------------------- stage: one iteration */

static int budget_left(const trainer *t)
{
    const baton_ppo_train_opts *o = t->o;
    const race_run_state *s = &t->st;
    double minutes = o->minutes > 0 || o->episodes ? o->minutes : 60;   /* the console's default: an hour */
    if (o->episodes && s->episodes >= o->episodes) return 0;
    if (minutes > 0 && s->seconds >= minutes * 60) return 0;
    if (s->episodes >= s->hyper.term_cond_max_episodes) return 0;
    if (s->iteration > 0 && s->last_reward >= s->hyper.term_cond_avg_score) return 0;
    return 1;
}

static int iteration_end(trainer *t, const race_collect_stats *cs, const race_learn_stats *ls, double secs,
                         baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    race_run_state *s = &t->st;
    uint64_t index = s->iteration;   /* 0-based: this iteration's trace file */
    s->iteration++;
    baton_verify_log_loss(s->iteration, ls->policy_loss);
    s->episodes += t->col.episodes;
    s->sim_steps += cs->samples;
    s->ticks += cs->ticks;
    s->seconds += secs;
    s->act_rng = t->act, s->shuffle_rng = t->shuffle;
    s->optim_steps = baton_nn_optim_steps(t->opi);
    s->laps += cs->laps;
    if (cs->best_lap_s > 0 && (s->best_lap_s == 0 || cs->best_lap_s < s->best_lap_s)) s->best_lap_s = cs->best_lap_s;
    t->mean_reward = cs->episodes ? cs->reward_sum / (double)cs->episodes : 0;
    t->mean_progress = cs->episodes ? cs->progress_sum / (double)cs->episodes : 0;
    s->last_reward = t->mean_reward;
    race_ckpt_tensors_take(&t->ct, &t->agent, t->opi, t->ovf);
    int rc = refresh_state(t, err);
    double sps = secs > 0 ? (double)cs->samples / secs : 0;
    if (!rc && o->log_path)
        rc = race_log_row(o->log_path, s, cs->samples, t->mean_reward, t->mean_progress, cs->laps, ls, secs, sps, err);
    if (!rc && t->trace.len) rc = race_trace_write(o->trace_dir, index, &t->trace, err);
    if (rc) return rc;
    double el = baton_now() - t->t0;
    char best[32] = "none yet";
    if (s->best_lap_s > 0) snprintf(best, sizeof best, "%.2f s", s->best_lap_s);
    snprintf(t->label, sizeof t->label,
             "race train it %" PRIu64 " ep %" PRIu64 " reward %.1f lap %.0f%% best lap %s %.0f steps/s", s->iteration,
             s->episodes, t->mean_reward, t->mean_progress, best, el > 0 ? t->steps_run / el : 0.0);
    baton_progress_update(&t->prog, o->episodes ? s->episodes : (uint64_t)s->seconds);
    return BATON_OK;
}

static int one_iteration(trainer *t, baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    double t0 = baton_now();
    t->trace.len = 0;
    int traced = o->trace_dir && t->st.iteration % (o->trace_every ? o->trace_every : 1) == 0;
    t->col.trace = traced ? &t->trace : NULL;
    t->col.first_episode = t->st.episodes;
    t->col.tick0 = t->st.ticks;
    race_collect_stats cs;
    race_learn_stats ls;
    int rc = race_rollout_collect(&t->ro, &t->col, &cs, err);
    if (!rc) rc = race_learn(&t->ro, &t->agent, t->opi, t->ovf, &t->st.hyper, &t->shuffle, t->pair, poll, t, &ls,
                              err);
    if (rc) return rc;   /* 1: a notice; the iteration is thrown away */
    t->steps_run += (double)cs.samples;
    return iteration_end(t, &cs, &ls, baton_now() - t0, err);
}

static int run(trainer *t, baton_err *err)
{
    const baton_ppo_train_opts *o = t->o;
    uint64_t total = o->episodes ? o->episodes : (uint64_t)((o->minutes > 0 ? o->minutes : 60) * 60);
    snprintf(t->label, sizeof t->label, "race train");
    if (o->progress) baton_progress_start(&t->prog, t->label, total);
    else memset(&t->prog, 0, sizeof t->prog);
    baton_progress_plain_every(&t->prog, t->label, total, o->progress_every_s);
    t->t0 = baton_now();
    int rc = BATON_OK;
    while (budget_left(t)) {
        if ((rc = baton_train_session_poll(t->sess, t->st.iteration, err))) break;
        if ((rc = one_iteration(t, err))) break;
        if ((rc = baton_train_session_step_done(t->sess, t->st.iteration, err))) break;
    }
    baton_progress_finish(&t->prog);
    return rc < 0 ? rc : BATON_OK;
}

static void fill_result(const trainer *t, baton_ppo_train_result *r, const baton_notice_event *nev)
{
    const race_run_state *s = &t->st;
    r->iteration = s->iteration, r->episodes = s->episodes, r->sim_steps = s->sim_steps;
    r->seconds = t->t0 > 0 ? baton_now() - t->t0 : 0;
    r->total_seconds = s->seconds;
    r->steps_per_s = r->seconds > 0 ? t->steps_run / r->seconds : 0;
    r->mean_reward = t->mean_reward, r->mean_progress = t->mean_progress;
    r->best_lap_s = s->best_lap_s, r->laps = s->laps;
    snprintf(r->kernels, sizeof r->kernels, "%s", t->have_agent ? t->agent.kernels : "");
    r->rebalances = t->sess ? baton_train_session_rebalances(t->sess) : 0;
    if (t->sess) baton_train_session_interval(t->sess, &r->ckpt_tau_s, &r->ckpt_delta_s);
    r->ckpt_mtbi_s = t->o->session.mtbi_s;
    if (nev && nev->kind != BATON_NOTICE_NONE) {
        r->stopped = 1;
        baton_train_notice_describe(nev, r->notice, r->notice_source, &r->notice_margin_s);
        if (t->sess) r->interruption = *baton_train_session_stop_report(t->sess);
        if (r->interruption.stopped) r->notice_margin_s = r->interruption.margin_s;
    }
}

static void teardown(trainer *t)
{
    baton_train_session_close(t->sess);
    race_pair_free(t->pair);
    race_collect_free(&t->col);
    race_rollout_free(&t->ro);
    race_ckpt_tensors_free(&t->ct);
    baton_nn_optim_free(t->opi);
    baton_nn_optim_free(t->ovf);
    if (t->have_agent) race_agent_free(&t->agent);
    baton_race_camera_free(t->cam);
    baton_race_sim_free(t->sim);
    if (t->have_opp) race_opponents_close(&t->opp);
    baton_race_reward_free(t->reward);
    baton_race_track_free(t->track);
    baton_buf_free(&t->trace);
    free(t->state_json);
}

int baton_ppo_train(const baton_ppo_train_opts *o, baton_ppo_train_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!o->track || !o->session.ckpt_dir)
        return baton_err_set(err, BATON_ERR_ARG, "a track and a checkpoint folder are required");
    if (o->trace_dir && !o->trace_every) return baton_err_set(err, BATON_ERR_ARG, "trace every 0 iterations");
    trainer *t = calloc(1, sizeof *t);
    if (!t) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    t->o = o;
    t->team0 = baton_nn_threads();
    /* the networks train with denormals flushed, as TensorFlow's CPU kernels run (src/nn/fpmode.c);
     * the reward function runs without (rollout.c) */
    const int flushed = baton_nn_denormals_flushed();
    baton_nn_flush_denormals(1);
    char path[4096];
    int resumed = 0;
    int rc = stage_open(t, r, path, sizeof path, &resumed, err);
    if (!rc) rc = build(t, path, resumed, err);
    if (!rc) rc = run(t, err);
    if (!rc) {
        baton_notice_event nev = {0};
        rc = baton_train_session_finish(t->sess, t->st.iteration, &nev, err);
        fill_result(t, r, rc == BATON_STOPPED ? &nev : NULL);
    } else {
        fill_result(t, r, NULL);
    }
    if (t->sess) snprintf(r->checkpoint, sizeof r->checkpoint, "%s", baton_train_session_checkpoint(t->sess));
    teardown(t);
    const int team0 = t->team0;
    free(t);
    baton_nn_set_threads(team0);
    baton_nn_flush_denormals(flushed);
    return rc;
}
