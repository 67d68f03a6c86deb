/* objects.c — the objects of DeepRacer's object-avoidance and head-to-bot races, one scene per
 * environment: boxes that stand still and bot cars that drive.
 *
 * A position is (s, lane): s metres along the centre line of the episode's direction, lane in
 * [-1, 1]: +1 the inner lane's centre (towards the inner border), -1 the outer lane's, as
 * deepracer-for-cloud's "progress,lane" pairs name them (simapp: "Inner lane is 1, outer lane is
 * -1"), a quarter of the local track width (between the border points around s) from the centre
 * line; 0 the centre line. The pose is the centre
 * line's point at s and its direction (race_geom_pose), moved across by that offset.
 *
 * Boxes (0.2 m square, 0.2 m high, facing along the track) are placed at the episode's start:
 * evenly over the lap from the start line (box i at (i + 1) / (boxes + 1), lanes alternating inner
 * and outer, the inner first, as simapp alternates them), at explicit places, or (randomize) at random places and lanes at least min_gap_m
 * apart and start_clear_m from the car's start. Bots (the car's footprint, 0.16 m high) start
 * ahead of the car (bot i (i + 1) / (bots + 1) of the lap ahead, lanes alternating) or at random
 * places bot_gap_m apart, and drive the lane's centre at bot_speed along the centre line; with
 * lane_change, a bot starts a change to the other lane every 3–5 s (drawn), spread over
 * lane_change_m of track. An open track's bots stop at its end.
 *
 * After every move the reward's arrays follow: location (the object's centre), heading (a bot's,
 * degrees as the guide documents it — simapp passes its radians —; 0 for a box, as simapp), speed
 * (0 for a box), distance along the centre line of its nearest point and distance from it, left of
 * centre.
 *
 * On a shared track (head-to-model) a scene holds the other cars instead (race_scene_peer): bot
 * cars the simulator moves, never driven here.
 *
 * Contract: a scene is a function of its RNG (seeded from the run's seed and the environment) and
 * the options; it allocates nothing. */
#include "race_internal.h"

#include <string.h>

void baton_race_objects_opts_default(baton_race_objects_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_gap_m = 2.0;
    o->bot_speed_mps = 0.2;
    o->lane_change_min_s = 3.0;
    o->lane_change_max_s = 5.0;
    o->lane_change_m = 1.0;
    o->bot_gap_m = 2.0;
    o->start_clear_m = 1.0;
}

static const char *race_names[] = {"time-trial", "object-avoidance", "head-to-bot"};

const char *baton_race_type_name(int race_type)
{
    return race_type >= 0 && race_type <= 2 ? race_names[race_type] : "unknown";
}

int baton_race_objects_for_race(int race_type, int count, baton_race_objects_opts *o, baton_err *err)
{
    if (race_type == BATON_RACE_TIME_TRIAL) {
        o->boxes = o->bots = o->npos = 0;
        return BATON_OK;
    }
    if (race_type == BATON_RACE_OBJECT_AVOIDANCE) {
        if (count < 1 || count > BATON_RACE_MAX_OBJECTS)
            return baton_err_set(err, BATON_ERR_ARG, "objects: %d boxes (want 1..%d)", count, BATON_RACE_MAX_OBJECTS);
        o->boxes = count;
        o->bots = 0;
        return BATON_OK;
    }
    if (race_type == BATON_RACE_HEAD_TO_BOT) {
        if (count < 1 || count > BATON_RACE_MAX_BOTS)
            return baton_err_set(err, BATON_ERR_ARG, "objects: %d bots (want 1..%d)", count, BATON_RACE_MAX_BOTS);
        o->bots = count;
        o->boxes = o->npos = 0;
        return BATON_OK;
    }
    return baton_err_set(err, BATON_ERR_ARG, "race type %d (time-trial, object-avoidance or head-to-bot)", race_type);
}

int baton_race_objects_any(const baton_race_objects_opts *o)
{
    return o->boxes > 0 || o->bots > 0;
}

int baton_race_objects_check(const baton_race_objects_opts *o, baton_err *err)
{
    if (o->boxes < 0 || o->boxes > BATON_RACE_MAX_OBJECTS)
        return baton_err_set(err, BATON_ERR_ARG, "objects: boxes %d (want 0..%d)", o->boxes, BATON_RACE_MAX_OBJECTS);
    if (o->bots < 0 || o->bots > BATON_RACE_MAX_BOTS)
        return baton_err_set(err, BATON_ERR_ARG, "objects: bots %d (want 0..%d)", o->bots, BATON_RACE_MAX_BOTS);
    if (o->boxes + o->bots > BATON_RACE_MAX_OBJECTS)
        return baton_err_set(err, BATON_ERR_ARG, "objects: %d boxes and %d bots (want at most %d in all)", o->boxes,
                             o->bots, BATON_RACE_MAX_OBJECTS);
    if (o->npos < 0 || o->npos > BATON_RACE_MAX_OBJECTS || (o->npos > 0 && o->npos != o->boxes))
        return baton_err_set(err, BATON_ERR_ARG, "objects: %d positions for %d boxes (want one per box)", o->npos,
                             o->boxes);
    for (int i = 0; i < o->npos; i++) {
        if (!(o->pos_progress[i] >= 0 && o->pos_progress[i] <= 1))
            return baton_err_set(err, BATON_ERR_ARG, "objects: position %d: progress %g (want 0..1)", i + 1,
                                 o->pos_progress[i]);
        if (!(o->pos_lane[i] >= -1 && o->pos_lane[i] <= 1))
            return baton_err_set(err, BATON_ERR_ARG, "objects: position %d: lane %g (want -1..1)", i + 1, o->pos_lane[i]);
    }
    if (o->bots > 0 && !(o->bot_speed_mps > 0 && o->bot_speed_mps <= 4))
        return baton_err_set(err, BATON_ERR_ARG, "objects: bot speed %g m/s (want above 0, at most 4)", o->bot_speed_mps);
    if (o->lane_change && !(o->lane_change_min_s > 0 && o->lane_change_max_s >= o->lane_change_min_s &&
                            o->lane_change_max_s <= 3600))
        return baton_err_set(err, BATON_ERR_ARG, "objects: lane-change interval %g..%g s (want 0 < min <= max)",
                             o->lane_change_min_s, o->lane_change_max_s);
    if (o->lane_change && !(o->lane_change_m > 0 && o->lane_change_m <= 100))
        return baton_err_set(err, BATON_ERR_ARG, "objects: lane-change distance %g m (want 0..100)", o->lane_change_m);
    if (!(o->min_gap_m >= 0 && o->min_gap_m <= 100) || !(o->bot_gap_m >= 0 && o->bot_gap_m <= 100) ||
        !(o->start_clear_m >= 0 && o->start_clear_m <= 100))
        return baton_err_set(err, BATON_ERR_ARG, "objects: min gap, bot gap and start clearance must be 0..100 m");
    return BATON_OK;
}

void race_scene_seed(race_scene *sc, uint64_t seed, size_t env)
{
    memset(sc, 0, sizeof *sc);
    baton_rng_seed3(&sc->rng, seed, env, 0x6f626a73);   /* "objs" */
}

static double uniform(baton_rng *r)
{
    return (double)(baton_rng_next(r) >> 11) / 9007199254740992.0;
}

double race_geom_lane_offset(const race_geom *g, double s, double lane)
{
    double x, y, u;
    size_t k = race_geom_at(g, &s, &x, &y, &u);
    const double *a = g->in + 2 * k, *b = g->out + 2 * k, *c = g->c + 2 * k;
    double w0 = hypot(a[0] - b[0], a[1] - b[1]), w1 = hypot(a[2] - b[2], a[3] - b[3]);
    /* the inner border's side of the segment (its first point, else its second) */
    double ex = c[2] - c[0], ey = c[3] - c[1];
    double side = ex * (a[1] - c[1]) - ey * (a[0] - c[0]);
    if (side == 0) side = ex * (a[3] - c[3]) - ey * (a[2] - c[2]);
    return (side < 0 ? -lane : lane) * (w0 + u * (w1 - w0)) / 4;
}

/* The lane a bot is in at distance ahead of its position (a change under way goes on). */
static double lane_ahead(const race_obj *ob, const baton_race_objects_opts *o, double ahead)
{
    if (!ob->changing) return ob->lane;
    double f = (ob->change_s + ahead) / o->lane_change_m;
    f = f > 1 ? 1 : f;
    return ob->lane_from + (ob->lane_to - ob->lane_from) * f;
}

static void lane_point(const race_geom *g, double s, double lane, double *x, double *y, double *yaw)
{
    race_geom_pose(g, s, x, y, yaw);
    double off = race_geom_lane_offset(g, s, lane);
    *x -= off * sin(*yaw);
    *y += off * cos(*yaw);
}

/* The pose from (s, lane); a bot faces where its lane takes it (5 cm on). */
static void pose(race_obj *ob, const baton_race_objects_opts *o, const race_geom *g)
{
    double yaw;
    lane_point(g, ob->s, ob->lane, &ob->x, &ob->y, &yaw);
    ob->yaw = yaw;
    if (ob->kind == BATON_RACE_BOT) {
        double x2, y2, yaw2;
        lane_point(g, ob->s + 0.05, lane_ahead(ob, o, 0.05), &x2, &y2, &yaw2);
        if (hypot(x2 - ob->x, y2 - ob->y) > 1e-9) ob->yaw = atan2(y2 - ob->y, x2 - ob->x);
    }
}

/* The reward's view of object i: centre, heading, speed, its nearest centre-line point. */
static void publish(race_scene *sc, size_t i, const baton_race_track *t, const race_geom *g, int fresh)
{
    race_obj *ob = &sc->o[i];
    race_near nr;
    if (fresh) {
        race_poly_near_all(&g->cl, ob->x, ob->y, &nr);
    } else {
        race_poly_near(&g->cl, g->loop, ob->seg, ob->x, ob->y, &nr);
        double lim = t->info.max_width_m;
        if (nr.d2 > lim * lim) race_poly_near_all(&g->cl, ob->x, ob->y, &nr);
    }
    ob->seg = nr.seg;
    const double *a = g->c + 2 * nr.seg;
    double ex = a[2] - a[0], ey = a[3] - a[1];
    sc->loc[i][0] = ob->x;
    sc->loc[i][1] = ob->y;
    sc->heading[i] = ob->kind == BATON_RACE_BOT ? ob->yaw * (180 / RACE_PI) : 0;   /* simapp: 0 for a box */
    sc->speed[i] = ob->speed;
    sc->dist[i] = nr.along;
    sc->dcenter[i] = sqrt(nr.d2);
    sc->left[i] = ex * (ob->y - nr.ny) - ey * (ob->x - nr.nx) > 0;
}

/* Distance along the track between a and b (the shorter way round a loop). */
static double track_gap(const race_geom *g, double a, double b)
{
    double d = fabs(a - b);
    if (g->loop && d > g->length / 2) d = g->length - d;
    return d;
}

/* A random place at least gap from the first n objects and clear from the start s0. */
static double random_place(race_scene *sc, const race_geom *g, size_t n, double gap, double clear, double s0)
{
    double s = 0;
    for (int tries = 0; tries < 200; tries++) {
        s = uniform(&sc->rng) * g->length;
        int ok = track_gap(g, s, s0) >= clear;
        for (size_t j = 0; ok && j < n; j++) ok = track_gap(g, s, sc->o[j].s) >= gap;
        if (ok) break;
    }
    return s;
}

void race_scene_start(race_scene *sc, const baton_race_objects_opts *o, const baton_race_car *car,
                      const baton_race_track *t, const race_geom *g, double start_ndist)
{
    sc->n = 0;
    sc->t = 0;
    double L = g->length, s0 = start_ndist * L;
    for (int i = 0; i < o->boxes; i++) {
        race_obj *ob = &sc->o[sc->n];
        memset(ob, 0, sizeof *ob);
        ob->kind = BATON_RACE_BOX;
        if (o->randomize) {
            ob->s = random_place(sc, g, sc->n, o->min_gap_m, o->start_clear_m, s0);
            ob->lane = baton_rng_next(&sc->rng) >> 63 ? 1 : -1;
        } else if (o->npos > 0) {
            ob->s = o->pos_progress[i] * L;
            ob->lane = o->pos_lane[i];
        } else {
            ob->s = (i + 1.0) / (o->boxes + 1.0) * L;
            ob->lane = i % 2 ? -1 : 1;
        }
        ob->len = ob->wid = BATON_RACE_BOX_SIZE_M;
        ob->hgt = BATON_RACE_BOX_HEIGHT_M;
        ob->back = ob->len / 2;
        sc->n++;
    }
    for (int i = 0; i < o->bots; i++) {
        race_obj *ob = &sc->o[sc->n];
        memset(ob, 0, sizeof *ob);
        ob->kind = BATON_RACE_BOT;
        if (o->randomize) {
            ob->s = random_place(sc, g, sc->n, o->bot_gap_m, o->start_clear_m, s0);
            ob->lane = baton_rng_next(&sc->rng) >> 63 ? 1 : -1;
        } else {
            ob->s = s0 + (i + 1.0) / (o->bots + 1.0) * L;
            if (g->loop) ob->s = fmod(ob->s, L);
            else if (ob->s > L) ob->s = L;
            ob->lane = i % 2 ? -1 : 1;
        }
        ob->speed = o->bot_speed_mps;
        if (o->lane_change)
            ob->next_change_t = o->lane_change_min_s + uniform(&sc->rng) * (o->lane_change_max_s - o->lane_change_min_s);
        ob->len = race_car_length(car);
        ob->wid = race_car_width(car);
        ob->hgt = BATON_RACE_BOT_HEIGHT_M;
        ob->back = race_car_back(car);
        sc->n++;
    }
    for (size_t i = 0; i < sc->n; i++) {
        pose(&sc->o[i], o, g);
        publish(sc, i, t, g, 1);
    }
}

static void bot_step(race_scene *sc, race_obj *ob, const baton_race_objects_opts *o, const race_geom *g, double dt)
{
    if (o->lane_change && !ob->changing && sc->t >= ob->next_change_t) {
        ob->changing = 1;
        ob->change_s = 0;
        ob->lane_from = ob->lane;
        ob->lane_to = ob->lane > 0 ? -1 : 1;
        ob->next_change_t = sc->t + o->lane_change_min_s + uniform(&sc->rng) * (o->lane_change_max_s - o->lane_change_min_s);
    }
    double ds = ob->speed * dt;
    if (!g->loop && ob->s + ds > g->length) ds = g->length - ob->s;
    if (ds <= 0) return;
    ob->s += ds;
    if (g->loop && ob->s >= g->length) ob->s -= g->length;
    if (ob->changing) {
        ob->change_s += ds;
        if (ob->change_s >= o->lane_change_m) {
            ob->changing = 0;
            ob->lane = ob->lane_to;
        } else {
            ob->lane = lane_ahead(ob, o, 0);
        }
    }
}

void race_scene_step(race_scene *sc, const baton_race_objects_opts *o, const baton_race_track *t,
                     const race_geom *g, double dt)
{
    sc->t += dt;
    for (size_t i = 0; i < sc->n; i++) {
        race_obj *ob = &sc->o[i];
        if (ob->kind != BATON_RACE_BOT || ob->peer) continue;   /* a peer is a car the simulator moves */
        bot_step(sc, ob, o, g, dt);
        pose(ob, o, g);
        publish(sc, i, t, g, 0);
    }
}

void race_scene_peer(race_scene *sc, size_t i, size_t env, const baton_race_car *car, double x, double y, double yaw,
                     double speed, const baton_race_track *t, const race_geom *g)
{
    race_obj *ob = &sc->o[i];
    int fresh = ob->peer != (int)env + 1;   /* the slot held another car: its segment hint is no hint */
    if (fresh) {
        memset(ob, 0, sizeof *ob);
        ob->kind = BATON_RACE_BOT;
        ob->peer = (int)env + 1;
        ob->len = race_car_length(car);
        ob->wid = race_car_width(car);
        ob->hgt = BATON_RACE_BOT_HEIGHT_M;
        ob->back = race_car_back(car);
    }
    ob->x = x;
    ob->y = y;
    ob->yaw = yaw;
    ob->speed = speed;
    publish(sc, i, t, g, fresh);
    ob->s = sc->dist[i];
}

void race_obj_rect(const race_obj *ob, race_rect *r)
{
    race_rect_make(r, ob->x, ob->y, ob->yaw, ob->back, ob->len, ob->wid);
}

int race_scene_hits(const race_scene *sc, const race_rect *r)
{
    for (size_t i = 0; i < sc->n; i++) {
        race_rect b;
        race_obj_rect(&sc->o[i], &b);
        if (race_rect_touch(r, &b)) return 1;
    }
    return 0;
}

double race_scene_raycast(const race_scene *sc, double x, double y, double dx, double dy, double tmax)
{
    double best = tmax;
    for (size_t i = 0; i < sc->n; i++) {
        race_rect b;
        race_obj_rect(&sc->o[i], &b);
        double d = race_rect_raycast(&b, x, y, dx, dy, best);
        if (d < best) best = d;
    }
    return best;
}

void race_obj_public(const race_obj *ob, baton_race_object *out)
{
    out->kind = ob->kind;
    out->x = ob->x;
    out->y = ob->y;
    out->yaw = ob->yaw;
    out->length_m = ob->len;
    out->width_m = ob->wid;
    out->height_m = ob->hgt;
    out->back_m = ob->back;
    out->speed_mps = ob->speed;
    out->lane = ob->lane;
}
