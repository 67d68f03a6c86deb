/* drive.c — `baton race drive`: one lap with the built-in controller (race's centre-line driver,
 * src/race/centerline.c) or a trained policy (a checkpoint of `baton race train`, driven by
 * pilot.c with the car it was trained with), the reward of every step, PNG camera frames a person
 * can look at, and the path driven. */
#include "baton/img.h"
#include "ppo_internal.h"

#include <stdlib.h>
#include <string.h>

void baton_ppo_drive_opts_default(baton_ppo_drive_opts *o)
{
    memset(o, 0, sizeof *o);
    o->policy = "centerline";
    o->reward = "follow_center_line";
    o->pace = 0.85;
    baton_race_camera_opts_default(&o->camera);
    baton_race_sim_opts_default(&o->sim);
}

void baton_ppo_drive_result_free(baton_ppo_drive_result *r)
{
    free(r->x);
    free(r->y);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static int write_frame(const char *dir, size_t k, const baton_race_camera_opts *co, const uint8_t *px, baton_err *err)
{
    baton_image im = {0};
    baton_buf b = {0};
    int rc = baton_image_resize(&im, (uint32_t)co->height, (uint32_t)co->width, 1, err);
    if (!rc) {
        memcpy(im.px, px, (size_t)co->width * (size_t)co->height);
        rc = baton_img_encode(&im, BATON_ENC_PNG, 0, &b, err);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/frame-%05zu.png", dir, k);
    if (!rc) rc = baton_file_write_atomic(path, b.data, b.len, err);
    baton_buf_free(&b);
    baton_image_free(&im);
    return rc;
}

static int trace_push(baton_ppo_drive_result *r, size_t *cap, const baton_race_car_state *st)
{
    if (r->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 1024;
        double *x = realloc(r->x, nc * sizeof *x);
        if (x) r->x = x;
        double *y = x ? realloc(r->y, nc * sizeof *y) : NULL;
        if (y) r->y = y;
        double *v = y ? realloc(r->v, nc * sizeof *v) : NULL;
        if (!v) return BATON_ERR_NOMEM;
        r->v = v;
        *cap = nc;
    }
    r->x[r->n] = st->x;
    r->y[r->n] = st->y;
    r->v[r->n] = st->speed;
    r->n++;
    return BATON_OK;
}

int baton_ppo_drive(const baton_race_track *t, const baton_ppo_drive_opts *o, baton_ppo_drive_result *r,
                    baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!(o->pace > 0 && o->pace <= 2)) return baton_err_set(err, BATON_ERR_ARG, "pace %g: want 0 < pace <= 2", o->pace);
    baton_race_sim_opts so = o->sim;
    so.envs = 1;
    if (o->max_steps) so.max_steps = o->max_steps;
    race_pilot pilot = {0};
    race_run_state *st_run = NULL;
    int piloted = o->policy && strcmp(o->policy, "centerline");
    baton_race_sim *sim = NULL;
    baton_race_reward *rw = NULL;
    baton_race_camera *cam = NULL;
    uint8_t *frame = NULL;
    size_t cap = 0;
    int rc = BATON_OK;
    if (piloted) {   /* a checkpoint: its policy, on the car it was trained with */
        char path[4096];
        if (!(st_run = malloc(sizeof *st_run))) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        if (!rc && (rc = race_pilot_open(&pilot, o->policy, path, sizeof path, st_run, err)))
            baton_err_prefix(err, "--policy %s", o->policy);
        if (!rc) so.car = st_run->car;
    }
    if (!rc) rc = baton_race_sim_new(t, &so, &sim, err);
    if (!rc) rc = baton_race_reward_open(o->reward, &rw, err);
    const baton_race_camera_opts *co = piloted ? &pilot.a.camera : &o->camera;
    if (!rc && (o->frames_dir || (piloted && pilot.a.obs == BATON_PPO_OBS_CAMERA)))
        rc = baton_race_camera_new(t, co, &cam, err);
    if (!rc && o->frames_dir) {
        rc = baton_mkdir_p(o->frames_dir, err);
        if (!rc && !(frame = malloc((size_t)co->width * (size_t)co->height)))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    if (!rc && piloted) race_pilot_observe(&pilot, sim, cam, 0, 1);
    if (!rc) rc = trace_push(r, &cap, baton_race_sim_state(sim, 0));
    if (!rc && frame) {
        baton_race_sim_camera_env(sim, cam, 0, frame);
        rc = write_frame(o->frames_dir, r->frames++, co, frame, err);
    }
    while (!rc && baton_race_sim_state(sim, 0)->status == BATON_RACE_IN_PROGRESS) {
        float steer, speed;
        int index;
        if (piloted && (rc = race_pilot_act(&pilot, &steer, &speed, &index, err))) break;
        if (!piloted) baton_race_centerline_action(sim, 0, o->pace, &steer, &speed);
        baton_race_sim_step(sim, &steer, &speed);
        if (piloted) race_pilot_observe(&pilot, sim, cam, 0, 0);
        const baton_race_car_state *st = baton_race_sim_state(sim, 0);
        struct baton_race_params p;
        baton_race_sim_params(sim, 0, &p);
        double rew;
        if ((rc = baton_race_reward_eval(rw, &p, &rew, err))) break;
        r->reward_sum += rew;
        if ((rc = trace_push(r, &cap, st))) break;
        if (frame) {
            baton_race_sim_camera_env(sim, cam, 0, frame);
            rc = write_frame(o->frames_dir, r->frames++, co, frame, err);
        }
    }
    if (!rc) {
        const baton_race_car_state *st = baton_race_sim_state(sim, 0);
        r->status = st->status;
        r->steps = st->steps;
        r->lap_s = st->steps / so.hz;
        r->progress = st->progress;
    } else if (rc == BATON_ERR_NOMEM && !err->msg[0]) {
        baton_err_set(err, rc, "out of memory");
    }
    free(frame);
    race_pilot_close(&pilot);
    free(st_run);
    baton_race_camera_free(cam);
    baton_race_reward_free(rw);
    baton_race_sim_free(sim);
    if (rc) baton_ppo_drive_result_free(r);
    return rc;
}
