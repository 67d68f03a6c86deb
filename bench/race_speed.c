/* race_speed.c — how fast the race simulator runs on one core (bench/race.sh runs it).
 *
 *   steps      car steps per second of baton_race_sim_step alone: ENVS cars as one batch replay
 *              actions recorded from the built-in centre-line controller (random starts, an ended
 *              episode reset, inside the timing); and of the plain reference step
 *   params     the reward's input plus the default reward, per car step; the same with the
 *              guide's first example in Python (tests/race/follow_center_line.py), when built with it
 *   sensor     the sensor vector (11 rays through the track grid), per car
 *   camera     160×120 frames per second (baton_race_camera_render), and of the reference renderer
 *
 * Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so the figures are per core even on
 * a shared machine. Usage: race_speed [--track T] [--envs N] [--seconds S]. Prints a table, then
 * one JSON line. */
#include "baton/race.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* This thread's CPU seconds: the figures are per core even when other work shares the machine. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Record T steps of the centre-line controller's actions for every car, then replay them on fresh
 * simulators with the same seed (the same episodes, resets and all), timing only the replays. */
#define REC_STEPS 1500

static double run_steps(const baton_race_track *t, const baton_race_sim_opts *so, double seconds, int ref,
                        uint64_t *steps_out)
{
    size_t envs = so->envs;
    float *steer = malloc(REC_STEPS * envs * sizeof *steer), *speed = malloc(REC_STEPS * envs * sizeof *speed);
    baton_err err = {0};
    baton_race_sim *sim;
    if (baton_race_sim_new(t, so, &sim, &err)) return 0;
    for (size_t k = 0; k < REC_STEPS; k++) {
        for (size_t e = 0; e < envs; e++)
            baton_race_centerline_action(sim, e, 0.7, &steer[k * envs + e], &speed[k * envs + e]);
        baton_race_sim_step(sim, steer + k * envs, speed + k * envs);
        for (size_t e = 0; e < envs; e++)
            if (baton_race_sim_state(sim, e)->status != BATON_RACE_IN_PROGRESS) baton_race_sim_reset(sim, e);
    }
    baton_race_sim_free(sim);
    double busy = 0;
    uint64_t steps = 0;
    while (busy < seconds) {
        if (baton_race_sim_new(t, so, &sim, &err)) return 0;
        double t0 = cpu_now();
        for (size_t k = 0; k < REC_STEPS; k++) {
            if (ref) baton_race_sim_step_ref(sim, steer + k * envs, speed + k * envs);
            else baton_race_sim_step(sim, steer + k * envs, speed + k * envs);
            for (size_t e = 0; e < envs; e++)
                if (baton_race_sim_state(sim, e)->status != BATON_RACE_IN_PROGRESS) baton_race_sim_reset(sim, e);
        }
        busy += cpu_now() - t0;
        steps += REC_STEPS * envs;
        baton_race_sim_free(sim);
    }
    free(steer);
    free(speed);
    *steps_out = steps;
    return (double)steps / busy;
}

int main(int argc, char **argv)
{
    const char *track = "../shared/tracks/reinvent_base.npy";
    size_t envs = 64;
    double seconds = 2;
    int only_steps = 0;   /* --only-steps 1: just the fast step (for profiling) */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--track")) track = argv[i + 1];
        else if (!strcmp(argv[i], "--envs")) envs = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--only-steps")) only_steps = atoi(argv[i + 1]);
    }
    baton_err err = {0};
    baton_race_track *t;
    if (baton_race_track_load(track, &t, &err)) {
        fprintf(stderr, "race_speed: %s\n", err.msg);
        return 1;
    }
    baton_race_sim_opts so;
    baton_race_sim_opts_default(&so);
    so.envs = envs;
    so.random_start = 1;
    uint64_t n_fast, n_ref;
    double fast = run_steps(t, &so, seconds, 0, &n_fast);
    if (only_steps) {
        printf("car steps (fast) %.0f per second\n", fast);
        return 0;
    }
    double ref = run_steps(t, &so, seconds / 4, 1, &n_ref);
    baton_race_sim *sim;
    if (baton_race_sim_new(t, &so, &sim, &err)) {
        fprintf(stderr, "race_speed: %s\n", err.msg);
        return 1;
    }
    for (int k = 0; k < 100; k++) {   /* cars spread over the track for the per-car figures */
        float st[1024], sp[1024];
        for (size_t e = 0; e < envs && e < 1024; e++) baton_race_centerline_action(sim, e, 0.7, &st[e], &sp[e]);
        baton_race_sim_step(sim, st, sp);
    }

    /* params + reward, and the sensor vector, per car */
    baton_race_reward *rw;
    if (baton_race_reward_open("follow_center_line", &rw, &err)) return 1;
    struct baton_race_params *p = malloc(envs * sizeof *p);
    double *r = malloc(envs * sizeof *r);
    baton_race_sensor_opts sopt;
    baton_race_sensor_opts_default(&sopt);
    float *obs = malloc(envs * baton_race_sensor_dim(&sopt) * sizeof *obs);
    uint64_t np = 0, ns = 0;
    double t0 = cpu_now();
    while (cpu_now() - t0 < seconds / 2) {
        for (int rep = 0; rep < 64; rep++) {
            for (size_t e = 0; e < envs; e++) baton_race_sim_params(sim, e, &p[e]);
            baton_race_reward_eval_batch(rw, p, envs, r, &err);
            np += envs;
        }
    }
    double params_rate = (double)np / (cpu_now() - t0);
    /* the guide's first example as DeepRacer's Python, through the embedded interpreter */
    double py_rate = 0;
    baton_race_reward *py;
    if (baton_race_python_available() && baton_race_reward_open("tests/race/follow_center_line.py", &py, &err) == BATON_OK) {
        uint64_t nq = 0;
        t0 = cpu_now();
        while (cpu_now() - t0 < seconds / 2) {
            for (int rep = 0; rep < 16; rep++) {
                for (size_t e = 0; e < envs; e++) baton_race_sim_params(sim, e, &p[e]);
                baton_race_reward_eval_batch(py, p, envs, r, &err);
                nq += envs;
            }
        }
        py_rate = (double)nq / (cpu_now() - t0);
        baton_race_reward_free(py);
    }
    t0 = cpu_now();
    while (cpu_now() - t0 < seconds / 2) {
        for (int rep = 0; rep < 64; rep++) {
            baton_race_sim_sensor(sim, &sopt, obs);
            ns += envs;
        }
    }
    double sensor_rate = (double)ns / (cpu_now() - t0);

    /* camera: frames along a lap of the centre line */
    baton_race_camera_opts co;
    baton_race_camera_opts_default(&co);
    baton_race_camera *cam;
    if (baton_race_camera_new(t, &co, &cam, &err)) {
        fprintf(stderr, "race_speed: %s\n", err.msg);
        return 1;
    }
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    uint8_t *img = malloc((size_t)co.width * (size_t)co.height);
    uint64_t nf = 0, nfr = 0;
    t0 = cpu_now();
    while (cpu_now() - t0 < seconds) {
        double x, y, yaw;
        baton_race_track_at(t, fmod(0.13 * (double)nf, in.length_m), &x, &y, &yaw);
        baton_race_camera_render(cam, x, y, yaw, img);
        nf++;
    }
    double cam_rate = (double)nf / (cpu_now() - t0);
    t0 = cpu_now();
    while (cpu_now() - t0 < seconds / 4) {
        double x, y, yaw;
        baton_race_track_at(t, fmod(0.13 * (double)nfr, in.length_m), &x, &y, &yaw);
        baton_race_camera_render_ref(cam, x, y, yaw, img);
        nfr++;
    }
    double cam_ref = (double)nfr / (cpu_now() - t0);

    printf("%-34s %14s %10s\n", "what (one core)", "per second", "vs 15 Hz");
    printf("%-34s %14.0f %10.0f\n", "car steps (fast)", fast, fast / 15);
    printf("%-34s %14.0f %10.0f\n", "car steps (reference)", ref, ref / 15);
    printf("%-34s %14.0f\n", "params + default reward, per car", params_rate);
    printf("%-34s %14.0f\n", "params + Python reward, per car", py_rate);
    printf("%-34s %14.0f\n", "sensor vectors, per car", sensor_rate);
    printf("%-34s %14.0f %10.0f\n", "camera frames 160x120 (fast)", cam_rate, cam_rate / 15);
    printf("%-34s %14.0f %10.0f\n", "camera frames (reference)", cam_ref, cam_ref / 15);
    printf("{\"bench\":\"race_speed\",\"track\":\"%s\",\"envs\":%zu,\"steps_per_s\":%.0f,\"ref_steps_per_s\":%.0f,"
           "\"params_reward_per_s\":%.0f,\"python_reward_per_s\":%.0f,\"sensor_per_s\":%.0f,\"frames_per_s\":%.0f,\"ref_frames_per_s\":%.0f,"
           "\"steps_goal\":5000000,\"frames_goal\":3000}\n",
           in.name, envs, fast, ref, params_rate, py_rate, sensor_rate, cam_rate, cam_ref);
    free(img);
    free(obs);
    free(p);
    free(r);
    baton_race_reward_free(rw);
    baton_race_camera_free(cam);
    baton_race_sim_free(sim);
    baton_race_track_free(t);
    return 0;
}
