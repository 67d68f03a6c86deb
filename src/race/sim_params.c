/* sim_params.c — the reward function's input for one car, computed as DeepRacer's
 * set_reward_and_metrics computes it (bundle/markov/agent_ctrl/utils.py in deepracer-simapp):
 *
 *   x, y                  the front of the car (0.14 m ahead of its centre)
 *   distance_from_center  to the nearest point of the centre line
 *   track_width           between the inner and outer border points nearest to that point
 *   is_left_of_center     nearer to the inner border's point than to the outer's, flipped when
 *                         the direction of travel is clockwise
 *   projection_distance   the nearest point's distance along the centre line
 *   speed, steering_angle the action's values (clamped to the car's limits)
 *   waypoints             the centre line's points, a loop's first repeated last
 *
 * With objects (track_data.py's get_object_reward_params):
 *   num_objects, objects_location (each object's centre), objects_heading (degrees),
 *   objects_speed (m/s), objects_distance (its nearest centre-line point's distance along the
 *   line), objects_distance_from_center, objects_left_of_center: kept by the scene (objects.c)
 *   closest_objects       [behind, ahead]: find_prev_next of the car's projection_distance over
 *                         the objects' distances in order, wrapping round (one object: [0, 0])
 *   object_in_camera      the object ahead is in the simulated camera's frustum as simapp's
 *                         get_objects_in_camera_frustums decides it: one of its footprint's corners
 *                         or its centre, on the ground, inside the frustum of the Gazebo camera
 *                         (horizontal field of view 1.13 rad, 4:3, near plane 0.2 m) at the
 *                         camera's place and pitch (camera.c's pinhole)
 *   is_crashed            the step ended touching an object
 *
 * The searches start from the car's centre-line segment (the reference: every segment). */
#include "race_internal.h"

#include <string.h>

/* DeepRacer's find_prev_next over the objects' distances: the last at or before the car's
 * (bisect_right - 1) and the first after it, wrapping round. */
static void closest_objects(const race_scene *sc, double at, int out[2])
{
    int prev = -1, next = -1, lo = 0, hi = 0;
    for (size_t i = 0; i < sc->n; i++) {
        int k = (int)i;
        double d = sc->dist[i];
        if (d <= at && (prev < 0 || d >= sc->dist[prev])) prev = k;
        if (d > at && (next < 0 || d < sc->dist[next])) next = k;
        if (d < sc->dist[lo]) lo = k;
        if (d >= sc->dist[hi]) hi = k;
    }
    out[0] = prev >= 0 ? prev : hi;
    out[1] = next >= 0 ? next : lo;
}

/* simapp's frustum test: the object's footprint corners and its centre, on the ground. */
static int in_frustum(const race_obj *ob, const baton_race_car_state *st)
{
    baton_race_camera_opts co;
    baton_race_camera_opts_default(&co);
    co.hfov_deg = 1.13 * 180 / RACE_PI, co.width = 640, co.height = 480;
    race_rect r;
    race_obj_rect(ob, &r);
    double c = cos(st->yaw), sn = sin(st->yaw), u, v;
    for (int k = 0; k < 5; k++) {
        double a = k == 4 ? 0 : (k & 1 ? r.hl : -r.hl), b = k == 4 ? 0 : (k & 2 ? r.hw : -r.hw);
        double px = k == 4 ? ob->x : r.cx + a * r.c - b * r.s, py = k == 4 ? ob->y : r.cy + a * r.s + b * r.c;
        double dx = px - st->x, dy = py - st->y;
        if (race_camera_project_near(&co, 0.2, dx * c + dy * sn, -dx * sn + dy * c, 0, &u, &v) && u >= 0 &&
            u <= co.width && v >= 0 && v <= co.height)
            return 1;
    }
    return 0;
}

static void fill_objects(const baton_race_sim *s, size_t e, struct baton_race_params *p)
{
    const race_scene *sc = &s->scene[e];
    const baton_race_car_state *st = &s->env[e].st;
    p->is_crashed = st->crashed;
    p->num_objects = (int)sc->n;
    p->objects_location = (const double (*)[2])sc->loc;
    p->objects_left_of_center = sc->left;
    p->objects_speed = sc->speed;
    p->objects_heading = sc->heading;
    p->objects_distance_from_center = sc->dcenter;
    p->objects_distance = sc->dist;
    if (sc->n == 0) return;
    closest_objects(sc, p->projection_distance, p->closest_objects);
    p->object_in_camera = in_frustum(&sc->o[p->closest_objects[1]], st);
}

void race_sim_fill_params(const baton_race_sim *s, size_t e, int ref, struct baton_race_params *p)
{
    const race_env *v = &s->env[e];
    const baton_race_car_state *st = &v->st;
    const race_geom *g = race_track_geom(s->t, st->reversed_dir);
    memset(p, 0, sizeof *p);
    race_near c, in, out;
    if (ref) race_poly_near_all(&g->cl, st->fx, st->fy, &c);
    else race_poly_near(&g->cl, g->loop, v->seg, st->fx, st->fy, &c);
    if (ref) {
        race_poly_near_all(&g->il, c.nx, c.ny, &in);
        race_poly_near_all(&g->ol, c.nx, c.ny, &out);
    } else {
        race_poly_near(&g->il, g->loop, c.seg, c.nx, c.ny, &in);
        race_poly_near(&g->ol, g->loop, c.seg, c.nx, c.ny, &out);
        /* a border point much farther than the track is wide: the walk stopped short */
        double lim = 1.5 * s->t->info.max_width_m;
        if (in.d2 > lim * lim) race_poly_near_all(&g->il, c.nx, c.ny, &in);
        if (out.d2 > lim * lim) race_poly_near_all(&g->ol, c.nx, c.ny, &out);
    }
    double d_in = hypot(st->fx - in.nx, st->fy - in.ny), d_out = hypot(st->fx - out.nx, st->fy - out.ny);
    p->all_wheels_on_track = st->wheels_on == 4;
    p->x = st->fx;
    p->y = st->fy;
    p->heading = st->yaw * (180 / RACE_PI);
    p->distance_from_center = sqrt(c.d2);
    p->projection_distance = st->ndist * g->length;
    p->progress = st->progress;
    p->steps = (int)st->steps;
    p->speed = st->cmd_speed;
    p->steering_angle = st->cmd_steer_deg;
    p->track_width = hypot(in.nx - out.nx, in.ny - out.ny);
    p->track_length = g->length;
    p->waypoints = (const double (*)[2])g->c;
    p->num_waypoints = (int)g->n;
    p->closest_waypoints[0] = st->closest[0];
    p->closest_waypoints[1] = st->closest[1];
    p->is_left_of_center = (d_in < d_out) ^ !g->ccw;
    p->is_reversed = st->reversed_dir;
    p->is_crashed = 0;
    p->is_offtrack = st->wheels_on == 0;
    p->sim_time = (double)st->total_steps / s->o.hz;
    if (s->scene) fill_objects(s, e, p);
}

void baton_race_sim_params(const baton_race_sim *s, size_t env, struct baton_race_params *p)
{
    race_sim_fill_params(s, env, 0, p);
}

void race_sim_params_ref(const baton_race_sim *s, size_t env, struct baton_race_params *p)
{
    race_sim_fill_params(s, env, 1, p);
}
