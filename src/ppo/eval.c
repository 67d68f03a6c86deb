/* race_eval.c — `baton race eval`: a trained model in DeepRacer's time trial (the evaluation
 * rules of the console and the league). The car starts on the start line standing still and
 * drives `laps` laps in a row (an open track once, to its end) with the policy's deterministic action (the most likely discrete
 * action, or the Gaussian's mean), the frames stacked as in training. The clock runs from the
 * start. Off the track (no wheel on it), reversed or immobilized: the car is put back on the
 * centre line where it was, standing, facing along the track, and the penalty is added to the
 * clock (and to the lap it happened in). A lap's time runs from line to line, the crossing
 * interpolated within its step from the progress on each side of it. The best lap is held to the
 * racing-line limit of the same track and car (limit.c). With objects on the track (object
 * avoidance, head-to-bot: the same scene as training's for the same seed 1), a crash puts the car
 * back on the centre line, as little behind where it was as keeps it clear of every object
 * (baton_race_sim_crash_reset), with the collision penalty (DR_EVAL_COLLISION_PENALTY's part).
 *
 * The car's limits are training's (the limit's acceleration, braking and grip: docs/race.md), so a
 * lap is compared with the limit like with like. SIM_TRACE_LOG rows carry the reward of
 * DeepRacer's default function, as its evaluation traces do (markov.defaults).
 *
 * Contract: deterministic for the checkpoint, the track and the options; the drive's arrays are
 * allocated once for the step limit. */
#include "ppo_internal.h"

#include "baton/img.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void baton_ppo_eval_opts_default(baton_ppo_eval_opts *o)
{
    memset(o, 0, sizeof *o);
    o->laps = 3;
    o->off_track_penalty_s = 5;
    o->collision_penalty_s = 5;
    baton_race_objects_opts_default(&o->objects);
    baton_ppo_train_opts t;
    baton_ppo_train_opts_default(&t);
    o->car = t.car;
}

void baton_ppo_eval_result_free(baton_ppo_eval_result *r)
{
    free(r->laps);
    free(r->x);
    free(r->y);
    free(r->v);
    free(r->lap_of);
    free(r->reset);
    free(r->obj_pose);
    memset(r, 0, sizeof *r);
}

typedef struct evaluator {
    const baton_ppo_eval_opts *o;
    baton_ppo_eval_result *r;
    race_run_state st;
    baton_race_track *track;
    baton_race_sim *sim;
    baton_race_camera *cam;
    race_pilot pilot;
    uint8_t *png;               /* a camera frame for --frames */
    baton_buf trace;
    double track_len;
    size_t frames;
    double gap[BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS];   /* each bot's distance ahead of the car */
} evaluator;

static int alloc_result(evaluator *e, size_t steps, baton_err *err)
{
    baton_ppo_eval_result *r = e->r;
    r->laps = calloc((size_t)e->o->laps, sizeof *r->laps);
    r->x = malloc(steps * sizeof *r->x);
    r->y = malloc(steps * sizeof *r->y);
    r->v = malloc(steps * sizeof *r->v);
    r->lap_of = malloc(steps * sizeof *r->lap_of);
    r->reset = calloc(steps, 1);
    r->nobj = baton_race_sim_objects(e->sim, 0, r->obj, sizeof r->obj / sizeof r->obj[0]);
    r->obj_pose = r->nobj ? malloc(steps * r->nobj * 3 * sizeof *r->obj_pose) : NULL;
    if (!r->laps || !r->x || !r->y || !r->v || !r->lap_of || !r->reset || (r->nobj && !r->obj_pose))
        return baton_err_set(err, BATON_ERR_NOMEM, "race eval: out of memory for %zu steps", steps);
    return BATON_OK;
}

static int setup(evaluator *e, char *path, size_t cap, baton_err *err)
{
    const baton_ppo_eval_opts *o = e->o;
    int rc = race_pilot_open(&e->pilot, o->ckpt, path, cap, &e->st, err);
    if (rc) return rc;
    const race_agent *a = &e->pilot.a;
    const char *track = o->track ? o->track : e->st.track;
    snprintf(e->r->track, sizeof e->r->track, "%s", track);
    snprintf(e->r->checkpoint, sizeof e->r->checkpoint, "%s", path);
    e->r->iteration = e->st.iteration;
    if ((rc = baton_race_track_load(track, &e->track, err))) return rc;
    baton_race_track_info in;
    baton_race_track_get_info(e->track, &in);
    snprintf(e->r->track_name, sizeof e->r->track_name, "%s", in.name);
    e->track_len = in.length_m;
    baton_race_sim_opts so;
    baton_race_sim_opts_default(&so);
    so.car = o->car;
    so.objects = o->objects;
    so.max_steps = 100000000;   /* the step limit is the evaluation's own */
    if ((rc = baton_race_sim_new(e->track, &so, &e->sim, err))) return rc;
    int camera = a->obs == BATON_PPO_OBS_CAMERA || o->frames_dir;
    if (camera && (rc = baton_race_camera_new(e->track, &a->camera, &e->cam, err))) return rc;
    if (o->frames_dir && (rc = baton_mkdir_p(o->frames_dir, err))) return rc;
    e->png = camera ? malloc((size_t)a->camera.width * a->camera.height) : NULL;
    if (camera && !e->png) return baton_err_set(err, BATON_ERR_NOMEM, "race eval: out of memory");
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    lim.max_speed_mps = o->car.max_speed_mps;
    baton_race_limit_result lr;
    if ((rc = baton_race_limit(e->track, &lim, &lr, err))) return rc;
    e->r->limit_s = lr.lap_s;
    baton_race_limit_free(&lr);
    return BATON_OK;
}

static int write_frame(evaluator *e, baton_err *err)
{
    baton_race_sim_camera_env(e->sim, e->cam, 0, e->png);
    baton_image im = {0};
    baton_buf b = {0};
    const baton_race_camera_opts *co = &e->pilot.a.camera;
    int rc = baton_image_resize(&im, (uint32_t)co->height, (uint32_t)co->width, 1, err);
    if (!rc) {
        memcpy(im.px, e->png, (size_t)co->width * (size_t)co->height);
        rc = baton_img_encode(&im, BATON_ENC_PNG, 0, &b, err);
    }
    char name[32], path[4200];
    snprintf(name, sizeof name, "frame-%05zu.png", e->frames++);
    if (!rc) rc = baton_path_join(path, sizeof path, e->o->frames_dir, name, err);
    if (!rc) rc = baton_file_write_atomic(path, b.data, b.len, err);
    baton_buf_free(&b);
    baton_image_free(&im);
    return rc;
}

/* Where each object stands after step r->n (the replay draws them there). */
static void record_objects(evaluator *e)
{
    baton_ppo_eval_result *r = e->r;
    if (!r->nobj) return;
    baton_race_object o[BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS];
    size_t n = baton_race_sim_objects(e->sim, 0, o, r->nobj);
    float *p = r->obj_pose + r->n * r->nobj * 3;
    for (size_t i = 0; i < r->nobj; i++) {
        p[3 * i] = (float)(i < n ? o[i].x : r->obj[i].x);
        p[3 * i + 1] = (float)(i < n ? o[i].y : r->obj[i].y);
        p[3 * i + 2] = (float)(i < n ? o[i].yaw : r->obj[i].yaw);
    }
}

/* Overtakes: each bot's distance ahead of the car along the centre line (both measured from its first
 * waypoint), wrapped into half a lap either way. While driving, a gap that goes from ahead to
 * behind without wrapping is a pass; behind to ahead, the bot passed the car. After a reset only
 * the gaps are taken again (the car was put back; that is no pass). */
static void count_passes(evaluator *e, baton_ppo_lap *lap, int driving)
{
    baton_ppo_eval_result *r = e->r;
    struct baton_race_params p;
    baton_race_sim_params(e->sim, 0, &p);
    const double L = e->track_len;
    for (int i = 0, bot = 0; i < p.num_objects && (size_t)i < r->nobj; i++) {
        if (r->obj[i].kind != BATON_RACE_BOT) continue;
        double g = fmod(p.objects_distance[i] - p.projection_distance, L);
        if (g > L / 2) g -= L;
        if (g <= -L / 2) g += L;
        const double was = e->gap[i];
        if (driving && fabs(g - was) < L / 4) {
            if (was > 0 && g <= 0) lap->overtakes++, lap->bots_passed |= 1u << bot, r->overtakes++;
            else if (was <= 0 && g > 0) lap->overtaken++;
        }
        e->gap[i] = g;
        bot++;
    }
}

static int drive(evaluator *e, size_t limit, baton_err *err)
{
    const baton_ppo_eval_opts *o = e->o;
    baton_ppo_eval_result *r = e->r;
    const double dt = 1.0 / 15, pen = o->off_track_penalty_s;
    baton_race_track_info in;
    baton_race_track_get_info(e->track, &in);
    const size_t laps = in.loop ? (size_t)o->laps : 1;   /* an open track is driven once, start to end */
    baton_race_sim_start(e->sim, 0, 0, 0);
    const baton_race_car_state *st = baton_race_sim_state(e->sim, 0);
    race_pilot_observe(&e->pilot, e->sim, e->cam, 0, 1);
    count_passes(e, &r->laps[0], 0);
    double penalties = 0, lap_start = 0;
    int rc = o->frames_dir ? write_frame(e, err) : BATON_OK;
    for (size_t k = 0; !rc && k < limit && r->nlaps < laps; k++) {
        float steer, speed;
        int index;
        if ((rc = race_pilot_act(&e->pilot, &steer, &speed, &index, err))) break;
        double before = st->progress;
        baton_race_sim_step(e->sim, &steer, &speed);
        r->x[r->n] = st->x, r->y[r->n] = st->y, r->v[r->n] = st->speed, r->lap_of[r->n] = (uint32_t)r->nlaps;
        record_objects(e);
        r->n++;
        baton_ppo_lap *lap = &r->laps[r->nlaps];
        lap->steps++;
        count_passes(e, lap, 1);
        if (o->trace_path) {
            struct baton_race_params p;
            baton_race_sim_params(e->sim, 0, &p);
            rc = race_trace_row(&e->trace, 0, (uint32_t)r->n, st, index, baton_race_reward_follow_center_line(&p),
                                e->track_len, (double)r->n * dt + penalties);
            if (rc) {
                baton_err_set(err, rc, "race eval: out of memory for the trace");
                break;
            }
        }
        if (o->frames_dir && (rc = write_frame(e, err))) break;
        if (st->status == BATON_RACE_LAP_COMPLETE) {
            double over = baton_race_sim_overshoot(e->sim, 0), frac = (100 - before) / (100 + over - before);
            double cross = ((double)r->n - 1 + (frac > 0 && frac <= 1 ? frac : 1)) * dt + penalties;
            lap->time_s = cross - lap_start;
            lap_start = cross;
            r->nlaps++;
            baton_race_sim_next_lap(e->sim, 0);
        } else if (st->status != BATON_RACE_IN_PROGRESS) {   /* crashed, off track, reversed, immobilized: a reset */
            int crash = st->status == BATON_RACE_CRASHED;
            if (crash) baton_race_sim_crash_reset(e->sim, 0);
            else baton_race_sim_reset_here(e->sim, 0);
            double add = crash ? o->collision_penalty_s : pen;
            r->reset[r->n - 1] = 1;
            r->resets++;
            r->crashes += (uint32_t)crash;
            lap->resets++;
            lap->penalty_s += add;
            penalties += add;
            count_passes(e, lap, 0);
            race_pilot_observe(&e->pilot, e->sim, e->cam, 0, 1);
            continue;
        }
        race_pilot_observe(&e->pilot, e->sim, e->cam, 0, 0);
    }
    if (rc) return rc;
    r->completed = r->nlaps == laps;
    r->penalties_s = penalties;
    r->total_s = r->completed ? lap_start : (double)r->n * dt + penalties;
    for (size_t i = 0; i < r->nlaps; i++)
        if (r->best_lap_s == 0 || r->laps[i].time_s < r->best_lap_s) r->best_lap_s = r->laps[i].time_s;
    r->ratio = r->best_lap_s > 0 && r->limit_s > 0 ? r->best_lap_s / r->limit_s : 0;
    return BATON_OK;
}

int baton_ppo_eval(const baton_ppo_eval_opts *o, baton_ppo_eval_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!o->ckpt) return baton_err_set(err, BATON_ERR_ARG, "race eval: a checkpoint is required");
    if (o->laps < 1 || o->laps > 1000) return baton_err_set(err, BATON_ERR_ARG, "race eval: laps %d (want 1..1000)", o->laps);
    if (!(o->off_track_penalty_s >= 0 && o->off_track_penalty_s <= 3600))
        return baton_err_set(err, BATON_ERR_ARG, "race eval: the off-track penalty must be 0..3600 s");
    if (!(o->collision_penalty_s >= 0 && o->collision_penalty_s <= 3600))
        return baton_err_set(err, BATON_ERR_ARG, "race eval: the collision penalty must be 0..3600 s");
    evaluator e;
    memset(&e, 0, sizeof e);
    e.o = o, e.r = r;
    char path[4096];
    size_t limit = o->max_steps ? o->max_steps : (size_t)o->laps * 10000;
    int rc = setup(&e, path, sizeof path, err);
    if (!rc) rc = alloc_result(&e, limit, err);
    if (!rc) rc = drive(&e, limit, err);
    if (!rc && o->trace_path) {
        baton_buf out = {0};
        rc = baton_buf_append(&out, RACE_TRACE_HEADER, strlen(RACE_TRACE_HEADER));
        if (!rc) rc = baton_buf_append(&out, e.trace.data, e.trace.len);
        if (!rc) rc = baton_file_write_atomic(o->trace_path, out.data, out.len, err);
        else baton_err_set(err, rc, "race eval: out of memory for the trace");
        baton_buf_free(&out);
    }
    race_pilot_close(&e.pilot);
    baton_race_camera_free(e.cam);
    baton_race_sim_free(e.sim);
    baton_race_track_free(e.track);
    baton_buf_free(&e.trace);
    free(e.png);
    if (rc) baton_ppo_eval_result_free(r);
    return rc;
}
