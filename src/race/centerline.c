/* centerline.c — the built-in controller (baton_race_centerline_action; race drive's default
 * policy, and the tests' driver): pure pursuit of the centre line from the rear axle (look-ahead
 * 0.35 m plus 0.25 s of travel, at most 1 m), and a speed that the car can brake from for every
 * corner in the next few metres — sqrt(a_lat / |kappa|) at the corner plus the braking ramp to
 * it, a_lat and braking from baton_race_limits — scaled by `pace`. baton_race_lane_action pursues a
 * lane's line instead (objects.c's lanes, a quarter of the width off the centre line: the match's
 * cars built to pass each other). It reads the car's state and allocates nothing. */
#include "race_internal.h"

void baton_race_centerline_action(const baton_race_sim *s, size_t env, double pace, float *steer_deg, float *speed)
{
    baton_race_lane_action(s, env, pace, 0, steer_deg, speed);
}

void baton_race_lane_action(const baton_race_sim *s, size_t env, double pace, double lane, float *steer_deg, float *speed)
{
    const baton_race_car_state *st = &s->env[env].st;
    const race_geom *g = race_track_geom(s->t, st->reversed_dir);
    const baton_race_car *car = &s->o.car;
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    double s0 = st->ndist * g->length;
    /* steering: pure pursuit */
    double ld = fmin(1.0, 0.35 + 0.25 * st->speed), tx, ty, tyaw;
    double sl = s0 + ld;
    if (!g->loop && sl > g->length) sl = g->length;
    race_geom_pose(g, sl, &tx, &ty, &tyaw);
    if (lane != 0) {   /* the lane's line: lane x a quarter of the width, towards the inner border for lane > 0 */
        double off = race_geom_lane_offset(g, sl, lane);
        tx -= off * sin(tyaw);
        ty += off * cos(tyaw);
    }
    double c = cos(st->yaw), sn = sin(st->yaw);
    double rx = st->x - car->rear_axle_m * c, ry = st->y - car->rear_axle_m * sn;
    double dx = tx - rx, dy = ty - ry, lx = dx * c + dy * sn, lyl = -dx * sn + dy * c;
    double dist = hypot(lx, lyl), alpha = atan2(lyl, lx);
    double delta = dist > 1e-6 ? atan(2 * car->wheelbase_m * sin(alpha) / dist) : 0;
    *steer_deg = (float)(delta * 180 / RACE_PI);
    /* speed: the slowest of every corner ahead, reached by braking from here */
    double v = car->max_speed_mps, alat = lim.lat_accel_mps2 * pace * pace;
    for (double d = 0; d <= 3.0; d += 0.1) {
        double sk = s0 + d;
        if (!g->loop && sk > g->length) break;
        double k = fabs(race_geom_kappa(g, sk));
        double vc = k > 1e-6 ? sqrt(alat / k) : car->max_speed_mps;
        v = fmin(v, sqrt(vc * vc + 2 * lim.brake_mps2 * pace * d));
    }
    *speed = (float)fmax(car->min_speed_mps, fmin(car->max_speed_mps, v));
}
