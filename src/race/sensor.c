/* sensor.c — the cheap observation: a short vector per car instead of a camera frame.
 *
 * Layout (dim = rays + 3 + ahead floats):
 *   [0, rays)        distance from the front point to the nearest border along each ray, spread
 *                    evenly over fov_deg centred on the heading (left to right), / max_range_m,
 *                    capped at 1
 *   rays             speed / max speed
 *   rays + 1         steering angle / max steering (left positive)
 *   rays + 2         heading error: heading minus the centre line's direction at the nearest
 *                    point, radians / pi, in (-1, 1]
 *   rays + 3 + k     the centre line's curvature (1/m, left positive) ahead_m[k] ahead of the
 *                    nearest point, × 0.25 (a 0.5 m radius reads 0.5)
 *   rays + 3 + ahead + k   (only with lidar > 0: races with objects) a front-facing LIDAR:
 *                    distance from the front point to the nearest object (box or bot footprint)
 *                    along each of lidar rays spread over lidar_fov_deg (left to right), /
 *                    lidar_range_m, capped at 1 (no object nearer, or none at all)
 * Rays are cast through the track grid; _ref casts them against every border edge. Without lidar
 * the vector is what it always was: a time-trial policy keeps its input size. */
#include "race_internal.h"

#include <string.h>

void baton_race_sensor_opts_default(baton_race_sensor_opts *o)
{
    memset(o, 0, sizeof *o);
    o->rays = 11;
    o->fov_deg = 180;
    o->max_range_m = 3;
    o->ahead = 3;
    o->ahead_m[0] = 0.5;
    o->ahead_m[1] = 1.0;
    o->ahead_m[2] = 2.0;
    o->lidar = 0;
    o->lidar_fov_deg = 180;
    o->lidar_range_m = 3;
}

void baton_race_sensor_opts_lidar(baton_race_sensor_opts *o)
{
    o->lidar = 11;
    o->lidar_fov_deg = 180;
    o->lidar_range_m = 3;
}

static int clamp_count(int n, int max)
{
    return n < 0 ? 0 : n > max ? max : n;
}

size_t baton_race_sensor_dim(const baton_race_sensor_opts *o)
{
    int rays = clamp_count(o->rays, BATON_RACE_SENSOR_MAX_RAYS), ahead = clamp_count(o->ahead, BATON_RACE_SENSOR_MAX_AHEAD);
    return (size_t)rays + 3 + (size_t)ahead + (size_t)clamp_count(o->lidar, BATON_RACE_SENSOR_MAX_RAYS);
}

/* The LIDAR's rays into out (lidar floats). */
static void lidar(const baton_race_sim *s, size_t e, const baton_race_sensor_opts *o, float *out)
{
    const baton_race_car_state *st = &s->env[e].st;
    int n = clamp_count(o->lidar, BATON_RACE_SENSOR_MAX_RAYS);
    double range = o->lidar_range_m > 0 ? o->lidar_range_m : 3;
    for (int k = 0; k < n; k++) {
        double a = n > 1 ? st->yaw + (o->lidar_fov_deg / 2 - o->lidar_fov_deg * k / (n - 1)) * (RACE_PI / 180) : st->yaw;
        double d = s->scene ? race_scene_raycast(&s->scene[e], st->fx, st->fy, cos(a), sin(a), range) : range;
        out[k] = (float)(d / range);
    }
}

static void sensor_one(const baton_race_sim *s, size_t e, const baton_race_sensor_opts *o, int ref, float *out)
{
    const race_env *v = &s->env[e];
    const baton_race_car_state *st = &v->st;
    const baton_race_track *t = s->t;
    const race_geom *g = race_track_geom(t, st->reversed_dir);
    int rays = clamp_count(o->rays, BATON_RACE_SENSOR_MAX_RAYS), ahead = clamp_count(o->ahead, BATON_RACE_SENSOR_MAX_AHEAD);
    double range = o->max_range_m > 0 ? o->max_range_m : 3;
    for (int k = 0; k < rays; k++) {
        double a = rays > 1 ? st->yaw + (o->fov_deg / 2 - o->fov_deg * k / (rays - 1)) * (RACE_PI / 180) : st->yaw;
        double dx = cos(a), dy = sin(a);
        double d = ref ? race_edges_raycast(t->edges, t->nedges, st->fx, st->fy, dx, dy, range)
                       : race_grid_raycast(&t->grid, st->fx, st->fy, dx, dy, range);
        out[k] = (float)(d / range);
    }
    const baton_race_car *car = &s->o.car;
    out[rays] = (float)(st->speed / car->max_speed_mps);
    out[rays + 1] = (float)(st->steer_deg / car->max_steer_deg);
    /* the centre line's direction at the front point's projection (its segment) */
    size_t seg = v->seg < g->n - 1 ? v->seg : g->n - 2;
    const double *p = g->c + 2 * seg;
    double err = st->yaw - atan2(p[3] - p[1], p[2] - p[0]);
    err = atan2(sin(err), cos(err));
    out[rays + 2] = (float)(err / RACE_PI);
    double s0 = st->ndist * g->length;
    for (int k = 0; k < ahead; k++) {
        double sk = s0 + o->ahead_m[k];
        if (!g->loop && sk > g->length) sk = g->length;
        out[rays + 3 + k] = (float)(0.25 * race_geom_kappa(g, sk));
    }
    if (o->lidar > 0) lidar(s, e, o, out + rays + 3 + ahead);
}

void baton_race_sim_sensor(const baton_race_sim *s, const baton_race_sensor_opts *o, float *out)
{
    size_t dim = baton_race_sensor_dim(o);
    for (size_t e = 0; e < s->n; e++) sensor_one(s, e, o, 0, out + e * dim);
}

void baton_race_sim_sensor_env(const baton_race_sim *s, const baton_race_sensor_opts *o, size_t env, float *out)
{
    if (env < s->n) sensor_one(s, env, o, 0, out);
}

void race_sim_sensor_ref(const baton_race_sim *s, const baton_race_sensor_opts *o, float *out)
{
    size_t dim = baton_race_sensor_dim(o);
    for (size_t e = 0; e < s->n; e++) sensor_one(s, e, o, 1, out + e * dim);
}
