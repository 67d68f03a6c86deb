/* test_race_sim.c — the car simulator: DeepRacer's episode rules on constructed cases (driven off
 * the edge, reversed, stopped, a lap, the step limit), the bicycle model against its closed form,
 * the speed and steering limits, start positions between episodes, determinism from the seed, a
 * batch against single cars, the fast step against the reference step, and the reward's params on
 * cases whose answers are known. */
#include "../../src/race/race_internal.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static baton_race_track *load(const char *spec)
{
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_track_load(spec, &t, &err) == BATON_OK, "%s: %s", spec, err.msg);
    return t;
}

/* A ring 10 m in radius and 10 m wide: room to drive circles without leaving the track. */
static baton_race_track *ring(void)
{
    enum { N = 401 };
    double *rows = malloc(N * 6 * sizeof *rows);
    for (int i = 0; i < N; i++) {
        double a = 2 * M_PI * (i % (N - 1)) / (N - 1), c = cos(a), s = sin(a);
        double r[6] = {10 * c, 10 * s, 5 * c, 5 * s, 15 * c, 15 * s};
        memcpy(rows + 6 * i, r, sizeof r);
    }
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(race_track_from_rows("ring", rows, N, &t, &err) == BATON_OK, "%s", err.msg);
    free(rows);
    return t;
}

static baton_race_sim *sim_new(const baton_race_track *t, baton_race_sim_opts *o)
{
    baton_race_sim *s = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_race_sim_new(t, o, &s, &err) == BATON_OK, "%s", err.msg);
    return s;
}

/* Step env 0 with a constant action until its episode ends or max steps; returns the steps. */
static uint32_t drive_const(baton_race_sim *s, float steer, float speed, uint32_t max)
{
    uint32_t k = 0;
    while (k < max && baton_race_sim_state(s, 0)->status == BATON_RACE_IN_PROGRESS) {
        baton_race_sim_step(s, &steer, &speed);
        k++;
    }
    return k;
}

static void test_off_track(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_race_sim *s = sim_new(oval, &o);
    /* on the bottom straight (start at its middle), turned 90° to the right: straight off the edge */
    race_sim_place(s, 0, 0.5, 0, -M_PI / 2);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    CHECK(st->wheels_on == 4);
    int saw_partial = 0;
    float steer = 0, speed = 1;
    while (st->status == BATON_RACE_IN_PROGRESS && st->steps < 100) {
        baton_race_sim_step(s, &steer, &speed);
        if (st->status == BATON_RACE_IN_PROGRESS && st->wheels_on > 0 && st->wheels_on < 4) saw_partial = 1;
        struct baton_race_params p;
        baton_race_sim_params(s, 0, &p);
        CHECK(p.all_wheels_on_track == (st->wheels_on == 4));
        CHECK(p.is_offtrack == (st->wheels_on == 0));
    }
    CHECK_MSG(st->status == BATON_RACE_OFF_TRACK, "status %s", baton_race_status_name(st->status));
    CHECK(st->wheels_on == 0 && saw_partial);
    /* 0.38 m to the edge plus the car's length: about 0.5 m at 1 m/s, 15 steps per second */
    CHECK_MSG(st->steps >= 6 && st->steps <= 9, "%u steps", st->steps);
    /* ended episodes do not move */
    double x = st->x;
    baton_race_sim_step(s, &steer, &speed);
    CHECK(st->x == x && st->status == BATON_RACE_OFF_TRACK);
    baton_race_sim_free(s);
}

static void test_reversed(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_race_sim *s = sim_new(oval, &o);
    /* at the start, facing backwards: progress falls every step; reversed after 15 of them */
    race_sim_place(s, 0, 0, 0, M_PI);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    uint32_t k = drive_const(s, 0, 0.5f, 100);
    CHECK_MSG(st->status == BATON_RACE_REVERSED && k == 15, "%s after %u", baton_race_status_name(st->status), k);
    CHECK(st->progress < 0 && st->wheels_on == 4);
    baton_race_sim_free(s);
}

static void test_immobilized(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.car.min_speed_mps = 0;   /* DeepRacer clamps to 0.1 m/s; a stuck car is what this rule is for */
    baton_race_sim *s = sim_new(oval, &o);
    uint32_t k = drive_const(s, 0, 0, 100);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    CHECK_MSG(st->status == BATON_RACE_IMMOBILIZED && k == 15, "%s after %u", baton_race_status_name(st->status), k);
    baton_race_sim_free(s);
    /* with the usual minimum speed the car moves 6.7 mm per step: never immobilized */
    baton_race_sim_opts_default(&o);
    s = sim_new(oval, &o);
    drive_const(s, 0, 0, 40);
    CHECK(baton_race_sim_state(s, 0)->status == BATON_RACE_IN_PROGRESS);
    CHECK(fabs(baton_race_sim_state(s, 0)->speed - 0.1) < 1e-12);
    baton_race_sim_free(s);
}

static void test_lap_and_time_up(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_race_sim *s = sim_new(oval, &o);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    double last = 0;
    int monotone = 1;
    while (st->status == BATON_RACE_IN_PROGRESS && st->steps < 2000) {
        float steer, speed;
        baton_race_centerline_action(s, 0, 0.6, &steer, &speed);
        baton_race_sim_step(s, &steer, &speed);
        if (st->progress < last) monotone = 0;
        last = st->progress;
    }
    CHECK_MSG(st->status == BATON_RACE_LAP_COMPLETE, "%s", baton_race_status_name(st->status));
    CHECK(st->progress == 100 && monotone);
    CHECK(st->steps > 60 && st->steps < 300);
    baton_race_sim_free(s);

    o.max_steps = 10;
    s = sim_new(oval, &o);
    uint32_t k = drive_const(s, 0, 1, 100);
    CHECK(k == 10 && baton_race_sim_state(s, 0)->status == BATON_RACE_TIME_UP);
    CHECK(!strcmp(baton_race_status_name(BATON_RACE_TIME_UP), "time_up"));
    CHECK(!strcmp(baton_race_status_name(BATON_RACE_LAP_COMPLETE), "lap_complete"));
    baton_race_sim_free(s);
}

/* sim_start puts an episode where it is asked; next_lap drives on across the line at speed */
static void test_start_and_next_lap(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.envs = 2;
    baton_race_sim *s = sim_new(oval, &o);
    const baton_race_car_state *st = baton_race_sim_state(s, 1);
    uint64_t ep = st->episode;
    baton_race_sim_start(s, 1, 1.25, 1);   /* a quarter of the way, driving in reverse */
    CHECK(st->episode == ep + 1 && st->reversed_dir == 1 && st->progress == 0 && st->speed == 0);
    CHECK_MSG(fabs(st->ndist - 0.25) < 0.02, "ndist %g", st->ndist);
    CHECK(st->status == BATON_RACE_IN_PROGRESS && st->steps == 0);
    baton_race_sim_start(s, 1, 0.5, 0);
    CHECK_MSG(fabs(st->ndist - 0.5) < 0.02 && !st->reversed_dir, "ndist %g", st->ndist);
    /* env 0: two laps in a row with the controller, the second one flying */
    st = baton_race_sim_state(s, 0);
    float steer[2] = {0, 0}, speed[2] = {0.1f, 0.1f};
    int laps = 0;
    uint32_t lap_steps[2] = {0, 0}, at = 0;
    double v_at_line = 0, p_after = -1, over = -1;
    while (laps < 2 && st->steps < 3000) {
        baton_race_centerline_action(s, 0, 0.6, &steer[0], &speed[0]);
        baton_race_sim_step(s, steer, speed);
        if (st->status == BATON_RACE_LAP_COMPLETE) {
            lap_steps[laps++] = st->steps - at;
            at = st->steps;
            v_at_line = st->speed;
            over = baton_race_sim_overshoot(s, 0);
            baton_race_sim_next_lap(s, 0);
            p_after = st->progress;
            CHECK(st->status == BATON_RACE_IN_PROGRESS && st->speed == v_at_line);
        } else {
            CHECK_MSG(st->status == BATON_RACE_IN_PROGRESS, "%s", baton_race_status_name(st->status));
        }
    }
    CHECK(laps == 2 && v_at_line > 1);
    CHECK_MSG(p_after >= 0 && p_after < 2 && fabs(p_after - over) < 1e-12, "progress after the line %g (overshoot %g)",
              p_after, over);
    CHECK_MSG(lap_steps[1] < lap_steps[0], "the flying lap (%u steps) is faster than the standing one (%u)",
              lap_steps[1], lap_steps[0]);
    /* next_lap does nothing to an episode that did not complete a lap */
    baton_race_sim_start(s, 0, 0, 0);
    baton_race_sim_next_lap(s, 0);
    CHECK(st->status == BATON_RACE_IN_PROGRESS && st->steps == 0);
    baton_race_sim_free(s);
}

/* The friction circle: cornering at the grip limit leaves nothing to speed up or slow down with;
 * straight on, the full acceleration; halfway, sqrt(1 - u^2) of it */
static void test_friction_circle(baton_race_track *wide)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.car.accel_mps2 = 3, o.car.brake_mps2 = 4, o.car.grip_mps2 = 3, o.car.friction_circle = 1;
    baton_race_sim *s = sim_new(wide, &o);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    float steer = 0, speed = 2;
    for (int i = 0; i < 15; i++) baton_race_sim_step(s, &steer, &speed);   /* up to 2 m/s straight on */
    CHECK_MSG(fabs(st->speed - 2) < 1e-12, "%g", st->speed);
    double v0 = st->speed;
    speed = 4;
    baton_race_sim_step(s, &steer, &speed);
    CHECK_MSG(fabs(st->speed - (v0 + 3.0 / 15)) < 1e-12, "straight: %g", st->speed);
    v0 = st->speed;
    steer = 30;   /* tan(30) / 0.164 = 3.52 /m: v^2 k far above the grip, u = 1 */
    baton_race_sim_step(s, &steer, &speed);
    CHECK_MSG(st->speed == v0, "at the limit: %g -> %g", v0, st->speed);
    speed = 0.5;
    baton_race_sim_step(s, &steer, &speed);
    CHECK_MSG(st->speed == v0, "no braking either: %g -> %g", v0, st->speed);
    /* steering for half the grip: u = 0.5, accelerating at 3 sqrt(0.75) */
    double k = 0.5 * 3 / (v0 * v0);
    steer = (float)(atan(k * 0.164) * 180 / M_PI);
    speed = 4;
    baton_race_sim_step(s, &steer, &speed);
    double kk = tan((double)steer * M_PI / 180) / 0.164, u = v0 * v0 * kk / 3;
    CHECK_MSG(fabs(st->speed - (v0 + 3 * sqrt(1 - u * u) / 15)) < 1e-9, "u %.3f: %g", u, st->speed);
    baton_race_sim_free(s);
    /* without the circle the same turn speeds up at the full rate */
    o.car.friction_circle = 0;
    s = sim_new(wide, &o);
    st = baton_race_sim_state(s, 0);
    steer = 0, speed = 2;
    for (int i = 0; i < 15; i++) baton_race_sim_step(s, &steer, &speed);
    steer = 30, speed = 4;
    baton_race_sim_step(s, &steer, &speed);
    CHECK(fabs(st->speed - (2 + 3.0 / 15)) < 1e-12);
    baton_race_sim_free(s);
}

/* Constant speed and steering: the rear axle runs on a circle of radius L / tan(steer). */
static void test_kinematics(baton_race_track *wide)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_race_sim *s = sim_new(wide, &o);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    race_sim_set_pose(s, 0, 10, 0, 0);   /* on the ring, heading across it */
    double L = 0.164, a = 0.0817, v = 1.0, d = 20 * M_PI / 180, R = L / tan(d);
    double rx0 = st->x - a, ry0 = st->y, cx = rx0, cy = ry0 + R;
    float steer = 20, speed = 1;
    int ok = 1;
    for (int k = 1; k <= 12; k++) {
        baton_race_sim_step(s, &steer, &speed);
        if (st->status != BATON_RACE_IN_PROGRESS) ok = 0;
        double psi = v * k / 15.0 / R;   /* yaw after k steps */
        double rx = st->x - a * cos(st->yaw), ry = st->y - a * sin(st->yaw);
        if (fabs(st->yaw - psi) > 1e-12 || fabs(hypot(rx - cx, ry - cy) - R) > 1e-12 ||
            fabs(rx - (cx + R * sin(psi))) > 1e-12)
            ok = 0;
    }
    CHECK_MSG(ok, "the bicycle model leaves its circle");
    baton_race_sim_free(s);

    /* the limits: speed ramps at accel, steering turns at its rate */
    o.car.accel_mps2 = 2;
    o.car.brake_mps2 = 3;
    o.car.steer_rate_dps = 60;
    s = sim_new(wide, &o);
    st = baton_race_sim_state(s, 0);
    steer = 30;
    speed = 2;
    ok = 1;
    for (int k = 1; k <= 20; k++) {
        baton_race_sim_step(s, &steer, &speed);
        if (fabs(st->speed - fmin(2, 2.0 * k / 15)) > 1e-12) ok = 0;
        if (k <= 10 && fabs(st->steer_deg - fmin(30, 4.0 * k)) > 1e-9) ok = 0;
        if (k == 10) steer = 0;
        if (k > 10 && fabs(st->steer_deg - fmax(0, 30 - 4.0 * (k - 10))) > 1e-9) ok = 0;
    }
    speed = 0.5;
    baton_race_sim_step(s, &steer, &speed);
    ok &= fabs(st->speed - 1.8) < 1e-12;
    CHECK_MSG(ok && st->status == BATON_RACE_IN_PROGRESS, "acceleration or steering-rate limits");
    baton_race_sim_free(s);
    /* a grip limit: at 3 m/s with full lock the path bends at 3 m/s² / v² only */
    baton_race_sim_opts_default(&o);
    o.car.grip_mps2 = 3;
    s = sim_new(wide, &o);
    st = baton_race_sim_state(s, 0);
    race_sim_set_pose(s, 0, 10, 0, 0);
    steer = 30;
    speed = 3;
    double yaw0 = st->yaw;
    baton_race_sim_step(s, &steer, &speed);
    CHECK_MSG(fabs(st->yaw - yaw0 - 3.0 / 15 * (3.0 / 9)) < 1e-12, "yaw turned %.6f", st->yaw - yaw0);
    speed = 0.5;   /* slow enough: the kinematic curve, tan(30°) / L */
    yaw0 = st->yaw;
    baton_race_sim_step(s, &steer, &speed);
    CHECK(fabs(st->yaw - yaw0 - 0.5 / 15 * tan(M_PI / 6) / 0.164) < 1e-12);
    /* actions are clamped to the car's limits; NaN steers straight at the slowest speed */
    race_sim_place(s, 0, 0, 0, 0);
    steer = 90;
    speed = 9;
    baton_race_sim_step(s, &steer, &speed);
    CHECK(st->cmd_steer_deg == 30 && st->cmd_speed == 4);
    steer = NAN;
    speed = NAN;
    baton_race_sim_step(s, &steer, &speed);
    CHECK(st->cmd_steer_deg == 0 && st->cmd_speed == 0.1);
    baton_race_sim_free(s);
}

static void test_starts(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.alternate_dir = 1;
    baton_race_sim *s = sim_new(oval, &o);
    baton_race_track_info in;
    baton_race_track_get_info(oval, &in);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    CHECK(st->episode == 1 && !st->reversed_dir && fabs(st->x) < 1e-12 && fabs(st->y) < 1e-12);
    for (int ep = 2; ep <= 4; ep++) {
        drive_const(s, 0, 1, 3);
        baton_race_sim_reset(s, 0);
        CHECK(st->episode == (uint64_t)ep && st->steps == 0 && st->progress == 0);
        CHECK(st->reversed_dir == (ep % 2 == 0));
        /* round robin: 5 % of the lap further along that direction's centre line each episode */
        struct baton_race_params p;
        baton_race_sim_params(s, 0, &p);
        double along = fmod(0.05 * (ep - 1), 1.0) * in.length_m + 0.14;
        CHECK_MSG(fabs(p.projection_distance - along) < 0.01, "episode %d: %.4f, want %.4f", ep, p.projection_distance, along);
        CHECK(p.is_reversed == st->reversed_dir);
    }
    baton_race_sim_free(s);
    /* random starts follow the seed */
    baton_race_sim_opts_default(&o);
    o.random_start = 1;
    o.envs = 4;
    o.seed = 11;
    baton_race_sim *a = sim_new(oval, &o), *b = sim_new(oval, &o);
    o.seed = 12;
    baton_race_sim *c = sim_new(oval, &o);
    int same = 1, differ = 0;
    for (int ep = 0; ep < 3; ep++) {
        for (size_t e = 0; e < 4; e++) {
            same &= baton_race_sim_state(a, e)->x == baton_race_sim_state(b, e)->x;
            differ |= baton_race_sim_state(a, e)->x != baton_race_sim_state(c, e)->x;
            baton_race_sim_reset(a, e);
            baton_race_sim_reset(b, e);
            baton_race_sim_reset(c, e);
        }
    }
    CHECK(same && differ);
    baton_race_sim_free(a);
    baton_race_sim_free(b);
    baton_race_sim_free(c);
}

/* Run `envs` cars with the centre-line controller (and noise) for `steps`, recording states. */
static baton_race_car_state *trace(baton_race_track *t, uint64_t seed, size_t envs, int steps, int ref)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    o.seed = seed;
    o.envs = envs;
    o.steer_noise_deg = 6;
    o.speed_noise_mps = 0.2;
    o.random_start = 1;
    baton_race_sim *s = sim_new(t, &o);
    baton_race_car_state *out = calloc((size_t)steps * envs, sizeof *out);
    float *st = malloc(envs * sizeof *st), *sp = malloc(envs * sizeof *sp);
    for (int k = 0; k < steps; k++) {
        for (size_t e = 0; e < envs; e++) baton_race_centerline_action(s, e, 0.8, &st[e], &sp[e]);
        if (ref) baton_race_sim_step_ref(s, st, sp);
        else baton_race_sim_step(s, st, sp);
        for (size_t e = 0; e < envs; e++) {
            out[(size_t)k * envs + e] = *baton_race_sim_state(s, e);
            if (baton_race_sim_state(s, e)->status != BATON_RACE_IN_PROGRESS) baton_race_sim_reset(s, e);
        }
    }
    free(st);
    free(sp);
    baton_race_sim_free(s);
    return out;
}

static void test_determinism(baton_race_track *t)
{
    const int steps = 600;
    baton_race_car_state *a = trace(t, 5, 3, steps, 0), *b = trace(t, 5, 3, steps, 0), *c = trace(t, 6, 3, steps, 0);
    CHECK(!memcmp(a, b, (size_t)steps * 3 * sizeof *a));
    CHECK(memcmp(a, c, (size_t)steps * 3 * sizeof *a) != 0);
    /* a batch is each car on its own: env e of a batch of 3 follows its own seed stream, so a
     * batch of 1 matches env 0 */
    baton_race_car_state *one = trace(t, 5, 1, steps, 0);
    int same = 1;
    for (int k = 0; k < steps; k++) same &= !memcmp(&one[k], &a[(size_t)k * 3], sizeof *one);
    CHECK(same);
    free(a);
    free(b);
    free(c);
    free(one);
}

/* The fast step (grid, walking searches) against the reference (full scans), many episodes. */
static void test_fast_vs_ref(baton_race_track *t, const char *name)
{
    const int steps = 400;
    size_t envs = 4;
    baton_race_car_state *f = trace(t, 9, envs, steps, 0), *r = trace(t, 9, envs, steps, 1);
    int same = 1, ended = 0;
    for (size_t i = 0; i < (size_t)steps * envs; i++) {
        const baton_race_car_state *a = &f[i], *b = &r[i];
        if (a->x != b->x || a->y != b->y || a->yaw != b->yaw || a->status != b->status ||
            a->wheels_on != b->wheels_on || a->closest[0] != b->closest[0] || a->closest[1] != b->closest[1] ||
            fabs(a->ndist - b->ndist) > 1e-12 || fabs(a->progress - b->progress) > 1e-9) {
            if (same) fprintf(stderr, "%s: first difference at %zu: status %d/%d ndist %.15f/%.15f\n", name, i,
                              a->status, b->status, a->ndist, b->ndist);
            same = 0;
        }
        ended += a->status != BATON_RACE_IN_PROGRESS;
    }
    CHECK_MSG(same, "%s: fast and reference steps differ", name);
    CHECK(ended > 0);
    free(f);
    free(r);
}

static void test_params(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_race_sim *s = sim_new(oval, &o);
    struct baton_race_params p, q;
    /* 0.1 m left of the centre line, heading along it, 1 m into the bottom straight */
    race_sim_place(s, 0, 1.0, 0.1, 0);
    float steer = 0, speed = 1.5;
    baton_race_sim_step(s, &steer, &speed);
    baton_race_sim_params(s, 0, &p);
    race_sim_params_ref(s, 0, &q);
    const baton_race_car_state *st = baton_race_sim_state(s, 0);
    CHECK(p.all_wheels_on_track && !p.is_offtrack && !p.is_crashed && !p.is_reversed);
    CHECK(p.is_left_of_center);
    CHECK(fabs(p.distance_from_center - (st->fy - 0)) < 1e-9 && p.distance_from_center > 0.09);
    CHECK(fabs(p.track_width - 0.76) < 1e-9);
    CHECK(fabs(p.x - st->fx) < 1e-15 && fabs(p.x - (st->x + 0.14 * cos(st->yaw))) < 1e-12);
    CHECK(fabs(p.heading - st->yaw * 180 / M_PI) < 1e-12);
    CHECK(p.speed == 1.5 && p.steering_angle == 0 && p.steps == 1);
    CHECK(fabs(p.sim_time - 1.0 / 15) < 1e-15);
    CHECK(p.num_waypoints == 124 && p.waypoints[0][0] == 0 && p.waypoints[123][0] == 0);
    CHECK(fabs(p.track_length - (8 + 3.2 * M_PI)) < 0.01);
    CHECK(fabs(p.projection_distance - p.x) < 1e-9);   /* along the straight from (0, 0) */
    CHECK(p.closest_waypoints[1] == p.closest_waypoints[0] + 1);
    CHECK(p.waypoints[p.closest_waypoints[0]][0] <= p.x && p.waypoints[p.closest_waypoints[1]][0] > p.x);
    {
        int a = p.closest_waypoints[0], b = p.closest_waypoints[1];
        int nearer = fabs(p.waypoints[b][0] - p.x) < fabs(p.waypoints[a][0] - p.x) ? b : a;
        CHECK(st->nearest_waypoint == nearer);
    }
    CHECK(p.num_objects == 0 && p.objects_location == NULL);
    CHECK(fabs(p.distance_from_center - q.distance_from_center) < 1e-12 && fabs(p.track_width - q.track_width) < 1e-12 &&
          p.is_left_of_center == q.is_left_of_center && p.closest_waypoints[0] == q.closest_waypoints[0]);
    /* right of the centre line */
    race_sim_place(s, 0, 1.0, -0.2, 0);
    baton_race_sim_params(s, 0, &p);
    CHECK(!p.is_left_of_center && fabs(p.distance_from_center - 0.2) < 1e-9);
    baton_race_sim_free(s);
    /* driven in reverse the left side swaps */
    o.reverse = 1;
    s = sim_new(oval, &o);
    race_sim_place(s, 0, 1.0, 0.1, 0);
    baton_race_sim_params(s, 0, &p);
    CHECK(p.is_reversed && p.is_left_of_center && fabs(p.heading - 180) < 1e-9);
    race_sim_place(s, 0, 1.0, -0.1, 0);
    baton_race_sim_params(s, 0, &p);
    CHECK(!p.is_left_of_center);
    baton_race_sim_free(s);
}

static void test_options(baton_race_track *oval)
{
    baton_race_sim_opts o;
    baton_race_sim_opts_default(&o);
    baton_err err = {0};
    baton_race_sim *s = NULL;
    o.envs = 0;
    CHECK(baton_race_sim_new(oval, &o, &s, &err) == BATON_ERR_ARG && !s);
    baton_race_sim_opts_default(&o);
    o.car.max_steer_deg = 95;
    CHECK(baton_race_sim_new(oval, &o, &s, &err) == BATON_ERR_ARG);
    baton_race_sim_opts_default(&o);
    o.round_robin = 1.5;
    CHECK(baton_race_sim_new(oval, &o, &s, &err) == BATON_ERR_ARG);
}

int main(void)
{
    baton_race_track *oval = load("oval");
    if (!oval) CHECK_DONE();
    test_off_track(oval);
    test_reversed(oval);
    test_immobilized(oval);
    test_lap_and_time_up(oval);
    baton_race_track *wide = ring();
    if (wide) test_kinematics(wide);
    if (wide) test_friction_circle(wide);
    baton_race_track_free(wide);
    test_starts(oval);
    test_start_and_next_lap(oval);
    test_determinism(oval);
    test_params(oval);
    test_options(oval);
    const char *specs[] = {"oval", "technical", "../shared/tracks/reinvent_base.npy", "../shared/tracks/Spain_track.npy",
                           "../shared/tracks/Bowtie_track.npy", "../shared/tracks/Straight_track.npy"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        baton_race_track *t = load(specs[i]);
        if (t) test_fast_vs_ref(t, specs[i]);
        baton_race_track_free(t);
    }
    baton_race_track_free(oval);
    CHECK_DONE();
}
