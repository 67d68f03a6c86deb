/* sim.c — the car simulator: many environments (one car each, on the same track) stepped as one
 * batch, 15 steps per simulated second, with DeepRacer's episode rules.
 *
 * The car is a kinematic bicycle: the rear axle moves along the heading, the yaw rate is
 * v·tan(steer)/wheelbase, integrated exactly over a step (an arc of constant radius). Speed and
 * steering follow the action within a step unless the car's acceleration, braking or steering-rate
 * limits are set; with a grip limit the path's curvature is held to grip / v² (the car runs wide),
 * and with the friction circle too the acceleration and braking limits are scaled by
 * sqrt(1 - (v² |curvature| / grip)²), what cornering leaves of the grip (the limit's own rule). After the move: the four wheel centres and whether each is on the track (the
 * track grid), the front point's projection on the centre line (DeepRacer's x, y and progress),
 * the closest waypoints, and the rules, in DeepRacer's order of precedence — lap complete
 * (progress 100), crashed (the car's footprint touches an object: objects.c, collide.c; before
 * the rest, as a crash is what a reward and an evaluation must see), off track (no wheel on the
 * track), immobilized (moved <= 0.3 mm per step for stuck_steps steps), reversed (progress fell
 * for stuck_steps steps) — and our step limit (time_up). With objects, the bots drive their step
 * before the car does; collisions are checked after each step's move, which cannot pass through an
 * object (at 4 m/s a step is 0.27 m, less than a box and the car's length together, 0.45 m).
 * Progress is computed as the simulator's compute_current_prog does, relative to the
 * episode's start, which advances round robin (ROUND_ROBIN_ADVANCE_DIST) between episodes; the
 * direction may alternate. Everything random (action noise, random starts) comes from each
 * environment's own RNG seeded from (seed, env), and the objects' from another (objects.c): a run
 * is a function of the seed and the actions.
 *
 * With `shared` the environments are worlds of that many cars on one track each (head-to-model:
 * sim_shared.c): all move, then each world's cars are checked against each other.
 *
 * step_ref is the same step with the plain searches: every centre-line segment and the full
 * polygon test. */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

#define IMMOBILE_M 0.0003

void baton_race_car_default(baton_race_car *c)
{
    memset(c, 0, sizeof *c);
    c->wheelbase_m = 0.164;
    c->rear_axle_m = 0.0817;
    c->track_m = 0.162;
    c->front_m = 0.14;
    c->min_speed_mps = BATON_RACE_MIN_SPEED_MPS;
    c->max_speed_mps = BATON_RACE_MAX_SPEED_MPS;
    c->max_steer_deg = 30.0;
}

void baton_race_car_racing(baton_race_car *c)
{
    baton_race_car_default(c);
    c->accel_mps2 = BATON_RACE_ACCEL_MPS2;
    c->brake_mps2 = BATON_RACE_BRAKE_MPS2;
    c->grip_mps2 = BATON_RACE_GRIP_MPS2;
    c->friction_circle = 1;
}

void baton_race_sim_opts_default(baton_race_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->envs = 1;
    o->seed = 1;
    o->hz = 15;
    o->max_steps = 10000;
    o->stuck_steps = 15;
    o->round_robin = 0.05;
    baton_race_car_default(&o->car);
    baton_race_objects_opts_default(&o->objects);
}

static const char *status_names[BATON_RACE_NSTATUS] = {
    "in_progress", "lap_complete", "off_track", "reversed", "immobilized", "time_up", "crashed",
};

const char *baton_race_status_name(int status)
{
    return status >= 0 && status < BATON_RACE_NSTATUS ? status_names[status] : "unknown";
}

/* sin and cos of |x| <= 1 by their Taylor series to x^17 and x^18 (the remainders are below 1e-17):
 * exact to the last bit or two, and a third of libm's sincos, which must handle any argument. */
static inline void small_sincos(double x, double *s, double *c)
{
    double z = x * x;
    double ps = 1.0 / 355687428096000.0;                 /* 1/17! */
    ps = ps * z - 1.0 / 1307674368000.0;                 /* 1/15! */
    ps = ps * z + 1.0 / 6227020800.0;
    ps = ps * z - 1.0 / 39916800.0;
    ps = ps * z + 1.0 / 362880.0;
    ps = ps * z - 1.0 / 5040.0;
    ps = ps * z + 1.0 / 120.0;
    ps = ps * z - 1.0 / 6.0;
    *s = x + x * z * ps;
    double pc = 1.0 / 6402373705728000.0;                /* 1/18! */
    pc = pc * z - 1.0 / 20922789888000.0;                /* 1/16! */
    pc = pc * z + 1.0 / 87178291200.0;
    pc = pc * z - 1.0 / 479001600.0;
    pc = pc * z + 1.0 / 3628800.0;
    pc = pc * z - 1.0 / 40320.0;
    pc = pc * z + 1.0 / 720.0;
    pc = pc * z - 1.0 / 24.0;
    pc = pc * z + 0.5;
    *c = 1 - z * pc;
}

static inline void any_sincos(double x, double *s, double *c)
{
    if (fabs(x) <= 1) small_sincos(x, s, c);
    else *s = sin(x), *c = cos(x);
}

/* A standard normal from the env's RNG (Box–Muller; one draw per call keeps the stream simple). */
static double gauss(baton_rng *r)
{
    double u = ((double)(baton_rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
    double w = (double)(baton_rng_next(r) >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(2 * RACE_PI * w);
}

/* DeepRacer's compute_current_prog: progress in percent from the raw share since the start. */
static double current_progress(double share, double prev)
{
    double cur = 100 * share;
    if (cur <= 0) cur += 100;
    if (prev > cur + 50) cur += 100;
    if (cur > prev + 50) cur -= 100;
    return cur < 100 ? cur : 100;
}

/* Everything that follows from the pose: front point, wheels, on-track, projection, waypoints
 * (v->cy, v->sy hold the yaw's cosine and sine). */
static inline void derive(const baton_race_sim *s, race_env *v, int ref)
{
    baton_race_car_state *st = &v->st;
    const baton_race_car *car = &s->o.car;
    const race_geom *g = race_track_geom(s->t, st->reversed_dir);
    double c = v->cy, sn = v->sy;
    st->fx = st->x + car->front_m * c;
    st->fy = st->y + car->front_m * sn;
    double xf = car->wheelbase_m - car->rear_axle_m, xr = -car->rear_axle_m, hw = car->track_m / 2;
    const double wx[4] = {xf, xf, xr, xr}, wy[4] = {hw, -hw, hw, -hw};
    st->wheels_on = 0;
    for (int k = 0; k < 4; k++) {
        st->wheel_x[k] = st->x + wx[k] * c - wy[k] * sn;
        st->wheel_y[k] = st->y + wx[k] * sn + wy[k] * c;
        st->wheel_on[k] = ref ? race_edges_contain(s->t->edges, s->t->nedges, st->wheel_x[k], st->wheel_y[k])
                              : race_grid_contains(&s->t->grid, st->wheel_x[k], st->wheel_y[k]);
        st->wheels_on += st->wheel_on[k];
    }
    race_near nr;
    if (ref) {
        race_poly_near_all(&g->cl, st->fx, st->fy, &nr);
    } else {
        race_poly_near(&g->cl, g->loop, v->seg, st->fx, st->fy, &nr);
        double lim = s->t->info.max_width_m;
        if (nr.d2 > lim * lim) race_poly_near_all(&g->cl, st->fx, st->fy, &nr);
    }
    v->seg = nr.seg;
    st->ndist = g->length > 0 ? nr.along / g->length : 0;
    if (ref) race_geom_closest(g, st->ndist, st->closest);
    else race_geom_closest_hint(g, nr.seg, st->ndist, st->closest);
    const double *wp = g->c + 2 * (size_t)st->closest[0], *wn = g->c + 2 * (size_t)st->closest[1];
    double dp = (st->fx - wp[0]) * (st->fx - wp[0]) + (st->fy - wp[1]) * (st->fy - wp[1]);
    double dn = (st->fx - wn[0]) * (st->fx - wn[0]) + (st->fy - wn[1]) * (st->fy - wn[1]);
    st->nearest_waypoint = dn < dp ? st->closest[1] : st->closest[0];
}

static void start_episode(baton_race_sim *s, size_t e)
{
    race_env *v = &s->env[e];
    baton_race_car_state *st = &v->st;
    uint64_t episode = st->episode + 1, total = st->total_steps;
    memset(st, 0, sizeof *st);
    st->episode = episode;
    st->total_steps = total;
    st->reversed_dir = v->next_reversed;
    v->start_ndist = v->next_start;
    const race_geom *g = race_track_geom(s->t, st->reversed_dir);
    race_geom_pose(g, v->start_ndist * g->length, &st->x, &st->y, &st->yaw);
    v->cy = cos(st->yaw);
    v->sy = sin(st->yaw);
    v->prev_progress = 0;
    v->rev_count = v->immob_count = 0;
    v->last_x = st->x;
    v->last_y = st->y;
    race_near nr;
    race_poly_near_all(&g->cl, st->x + s->o.car.front_m * cos(st->yaw), st->y + s->o.car.front_m * sin(st->yaw), &nr);
    v->seg = nr.seg;
    derive(s, v, 0);
    st->status = BATON_RACE_IN_PROGRESS;
    if (s->o.shared) {
        v->parked = 0;
        race_sim_sync_world(s, e);
    } else if (s->scene) {
        race_scene_start(&s->scene[e], &s->o.objects, &s->o.car, s->t, g, v->start_ndist);
    }
    /* the next episode's start and direction (DeepRacer's finish_episode) */
    if (s->o.random_start)
        v->next_start = (double)(baton_rng_next(&v->rng) >> 11) / 9007199254740992.0;
    else
        v->next_start = fmod(v->start_ndist + s->o.round_robin, 1.0);
    if (s->o.alternate_dir) v->next_reversed = !st->reversed_dir;
}

int baton_race_sim_new(const baton_race_track *t, const baton_race_sim_opts *o, baton_race_sim **out,
                       baton_err *err)
{
    *out = NULL;
    const baton_race_car *c = &o->car;
    if (o->envs == 0 || o->envs > ((size_t)1 << 24))
        return baton_err_set(err, BATON_ERR_ARG, "race sim: %zu environments (want 1 to 16M)", o->envs);
    if (!(o->hz > 0) || !(c->wheelbase_m > 0) || !(c->track_m > 0) || !(c->max_speed_mps >= c->min_speed_mps) ||
        c->min_speed_mps < 0 || !(c->max_steer_deg > 0 && c->max_steer_deg < 89) || c->accel_mps2 < 0 ||
        c->brake_mps2 < 0 || c->steer_rate_dps < 0 || c->grip_mps2 < 0 || o->stuck_steps == 0 || o->max_steps == 0 ||
        !(o->round_robin >= 0 && o->round_robin < 1) || !(o->start_offset >= 0 && o->start_offset < 1) ||
        o->steer_noise_deg < 0 || o->speed_noise_mps < 0)
        return baton_err_set(err, BATON_ERR_ARG, "race sim: car or simulator options out of range");
    int rc = baton_race_objects_check(&o->objects, err);
    if (rc) return rc;
    if (o->shared && (o->shared < 2 || o->shared > BATON_RACE_MAX_CARS || o->envs % (size_t)o->shared))
        return baton_err_set(err, BATON_ERR_ARG, "race sim: %d cars on one track (want 2 to %d) and %zu environments (want a multiple)",
                             o->shared, BATON_RACE_MAX_CARS, o->envs);
    if (o->shared && baton_race_objects_any(&o->objects))
        return baton_err_set(err, BATON_ERR_ARG, "race sim: cars on one track race without boxes or bots");
    baton_race_sim *s = calloc(1, sizeof *s);
    if (!s || !(s->env = calloc(o->envs, sizeof *s->env)) ||
        ((baton_race_objects_any(&o->objects) || o->shared) && !(s->scene = calloc(o->envs, sizeof *s->scene))) ||
        (o->shared && !(s->stepped = calloc(o->envs, 1)))) {
        if (s) free(s->env), free(s->scene);
        free(s);
        return baton_err_set(err, BATON_ERR_NOMEM, "race sim: out of memory");
    }
    s->t = t;
    s->o = *o;
    s->n = o->envs;
    s->dt = 1 / o->hz;
    for (size_t e = 0; e < s->n; e++) s->env[e].parked = 1;   /* a shared track's cars join as they start */
    for (size_t e = 0; e < s->n; e++) {
        race_env *v = &s->env[e];
        baton_rng_seed3(&v->rng, o->seed, e, 0x72616365);   /* "race" */
        v->next_start = o->random_start ? (double)(baton_rng_next(&v->rng) >> 11) / 9007199254740992.0
                                        : o->start_offset;
        v->next_reversed = o->reverse ? 1 : 0;
        if (s->scene) race_scene_seed(&s->scene[e], o->seed, e);
        start_episode(s, e);
    }
    *out = s;
    return BATON_OK;
}

void baton_race_sim_free(baton_race_sim *s)
{
    if (!s) return;
    free(s->env);
    free(s->scene);
    free(s->stepped);
    free(s);
}

void baton_race_sim_reset(baton_race_sim *s, size_t env)
{
    if (env < s->n) start_episode(s, env);
}

void baton_race_sim_start(baton_race_sim *s, size_t env, double start, int reversed)
{
    if (env >= s->n || !(start == start)) return;
    race_env *v = &s->env[env];
    v->next_start = start - floor(start);
    v->next_reversed = reversed != 0;
    start_episode(s, env);
}

void baton_race_sim_next_lap(baton_race_sim *s, size_t env)
{
    if (env >= s->n) return;
    race_env *v = &s->env[env];
    baton_race_car_state *st = &v->st;
    if (st->status != BATON_RACE_LAP_COMPLETE || !race_track_geom(s->t, st->reversed_dir)->loop) return;
    /* the line was crossed within the last step: the new lap's progress is what lies past it */
    st->progress = current_progress(st->ndist - v->start_ndist, 0);
    if (st->progress >= 50) st->progress = 0;   /* a rounding on the line itself */
    v->prev_progress = st->progress;
    v->rev_count = 0;
    st->status = BATON_RACE_IN_PROGRESS;
}

double baton_race_sim_overshoot(const baton_race_sim *s, size_t env)
{
    const race_env *v = &s->env[env];
    double p = current_progress(v->st.ndist - v->start_ndist, 0);
    return p < 50 ? p : 0;
}

const baton_race_car_state *baton_race_sim_state(const baton_race_sim *s, size_t env)
{
    return &s->env[env].st;
}

static inline double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* One environment's step. ref is a constant at each call site, so each loop is specialised. */
static inline int step_env(baton_race_sim *s, size_t e, float steer_in, float speed_in, int ref)
{
    race_env *v = &s->env[e];
    baton_race_car_state *st = &v->st;
    if (st->status != BATON_RACE_IN_PROGRESS) return 0;
    const baton_race_car *car = &s->o.car;
    double dt = s->dt, sd = steer_in, sp = speed_in;
    if (s->scene) race_scene_step(&s->scene[e], &s->o.objects, s->t, race_track_geom(s->t, st->reversed_dir), dt);
    if (s->o.steer_noise_deg > 0) sd += s->o.steer_noise_deg * gauss(&v->rng);
    if (s->o.speed_noise_mps > 0) sp += s->o.speed_noise_mps * gauss(&v->rng);
    sd = sd == sd ? clampd(sd, -car->max_steer_deg, car->max_steer_deg) : 0;
    sp = sp == sp ? clampd(sp, car->min_speed_mps, car->max_speed_mps) : car->min_speed_mps;
    st->cmd_steer_deg = sd;
    st->cmd_speed = sp;
    if (car->steer_rate_dps > 0)
        st->steer_deg += clampd(sd - st->steer_deg, -car->steer_rate_dps * dt, car->steer_rate_dps * dt);
    else
        st->steer_deg = sd;
    if (st->steer_deg != v->tan_deg) {
        double ss, cs;
        any_sincos(st->steer_deg * (RACE_PI / 180), &ss, &cs);
        v->tan_deg = st->steer_deg;
        v->tan_val = ss / cs;
    }
    double k = v->tan_val / car->wheelbase_m, ax = car->accel_mps2, bx = car->brake_mps2;
    if (car->friction_circle && car->grip_mps2 > 0) {   /* what cornering leaves of the grip for speed changes */
        double u = fmin(1, st->speed * st->speed * fabs(k) / car->grip_mps2), f = sqrt(1 - u * u);
        ax *= f;
        bx *= f;
    }
    if (sp > st->speed) st->speed = car->accel_mps2 > 0 ? fmin(sp, st->speed + ax * dt) : sp;
    else st->speed = car->brake_mps2 > 0 ? fmax(sp, st->speed - bx * dt) : sp;

    /* the rear axle moves on an arc of radius wheelbase / tan(steer); the heading turns by dpsi:
     * rotate (cos, sin) by it, kept on the unit circle */
    double c = v->cy, sn = v->sy, ds = st->speed * dt;
    double rx = st->x - car->rear_axle_m * c, ry = st->y - car->rear_axle_m * sn;
    if (car->grip_mps2 > 0 && st->speed * st->speed * fabs(k) > car->grip_mps2)   /* sliding: runs wide */
        k = copysign(car->grip_mps2 / (st->speed * st->speed), k);
    double dpsi = ds * k, yaw = st->yaw + dpsi, sdp, cdp;
    any_sincos(dpsi, &sdp, &cdp);
    double c2 = c * cdp - sn * sdp, s2 = sn * cdp + c * sdp, norm = 1.5 - 0.5 * (c2 * c2 + s2 * s2);
    c2 *= norm;
    s2 *= norm;
    if (fabs(dpsi) < 1e-9) {
        rx += ds * c;
        ry += ds * sn;
    } else {
        double r = ds / dpsi;
        rx += r * (s2 - sn);
        ry += r * (c - c2);
    }
    if (yaw > RACE_PI) yaw -= 2 * RACE_PI;
    else if (yaw <= -RACE_PI) yaw += 2 * RACE_PI;
    st->yaw = yaw;
    st->x = rx + car->rear_axle_m * c2;
    st->y = ry + car->rear_axle_m * s2;
    v->cy = c2;
    v->sy = s2;
    derive(s, v, ref);

    st->steps++;
    st->total_steps++;
    st->progress = current_progress(st->ndist - v->start_ndist, v->prev_progress);
    int lap = st->progress >= 100;
    int off = st->wheels_on == 0;
    st->crashed = 0;
    if (s->scene && !s->o.shared) {   /* a shared track's cars: after every car's move (race_sim_collide) */
        race_rect r;
        race_car_rect(car, st->x, st->y, st->yaw, &r);
        st->crashed = race_scene_hits(&s->scene[e], &r);
        st->crashes += (uint32_t)st->crashed;
    }
    double mx = st->x - v->last_x, my = st->y - v->last_y;
    v->immob_count = mx * mx + my * my <= IMMOBILE_M * IMMOBILE_M ? v->immob_count + 1 : 0;
    int immob = v->immob_count >= s->o.stuck_steps;
    v->rev_count = st->progress < v->prev_progress ? v->rev_count + 1 : 0;
    int rev = v->rev_count >= s->o.stuck_steps;
    st->status = lap ? BATON_RACE_LAP_COMPLETE
                 : st->crashed ? BATON_RACE_CRASHED
                 : off ? BATON_RACE_OFF_TRACK
                 : immob ? BATON_RACE_IMMOBILIZED
                 : rev ? BATON_RACE_REVERSED
                 : st->steps >= s->o.max_steps ? BATON_RACE_TIME_UP
                 : BATON_RACE_IN_PROGRESS;
    v->last_x = st->x;
    v->last_y = st->y;
    v->prev_progress = st->progress == 100 ? 0 : st->progress;
    return st->status != BATON_RACE_IN_PROGRESS;
}

/* A shared track's step: every car moves, then the scenes follow and the cars are checked against
 * each other where they all stand (sim_shared.c). */
static size_t step_shared(baton_race_sim *s, const float *steer_deg, const float *speed, int ref)
{
    size_t ended = 0;
    for (size_t e = 0; e < s->n; e++) {
        s->stepped[e] = s->env[e].st.status == BATON_RACE_IN_PROGRESS && !s->env[e].parked;
        if (s->stepped[e])
            ended += (size_t)(ref ? step_env(s, e, steer_deg[e], speed[e], 1) : step_env(s, e, steer_deg[e], speed[e], 0));
    }
    race_sim_sync_peers(s);
    return ended + race_sim_collide(s);
}

size_t baton_race_sim_step(baton_race_sim *s, const float *steer_deg, const float *speed)
{
    if (s->o.shared) return step_shared(s, steer_deg, speed, 0);
    size_t ended = 0;
    for (size_t e = 0; e < s->n; e++) ended += (size_t)step_env(s, e, steer_deg[e], speed[e], 0);
    return ended;
}

size_t baton_race_sim_step_ref(baton_race_sim *s, const float *steer_deg, const float *speed)
{
    if (s->o.shared) return step_shared(s, steer_deg, speed, 1);
    size_t ended = 0;
    for (size_t e = 0; e < s->n; e++) ended += (size_t)step_env(s, e, steer_deg[e], speed[e], 1);
    return ended;
}

void race_sim_set_pose(baton_race_sim *s, size_t env, double x, double y, double yaw)
{
    race_env *v = &s->env[env];
    baton_race_car_state *st = &v->st;
    const race_geom *g = race_track_geom(s->t, st->reversed_dir);
    st->x = x;
    st->y = y;
    st->yaw = atan2(sin(yaw), cos(yaw));
    v->cy = cos(st->yaw);
    v->sy = sin(st->yaw);
    st->speed = 0;
    st->steer_deg = 0;
    race_near nr;
    race_poly_near_all(&g->cl, x + s->o.car.front_m * cos(st->yaw), y + s->o.car.front_m * sin(st->yaw), &nr);
    v->seg = nr.seg;
    derive(s, v, 0);
    v->last_x = x;
    v->last_y = y;
    v->rev_count = v->immob_count = 0;
    st->crashed = 0;
    st->status = BATON_RACE_IN_PROGRESS;
    if (s->o.shared) race_sim_sync_world(s, env);   /* the others see it where it now stands */
}

void race_sim_place(baton_race_sim *s, size_t env, double s_m, double lateral_m, double yaw_off)
{
    const race_geom *g = race_track_geom(s->t, s->env[env].st.reversed_dir);
    double x, y, yaw;
    race_geom_pose(g, s_m, &x, &y, &yaw);
    race_sim_set_pose(s, env, x - lateral_m * sin(yaw), y + lateral_m * cos(yaw), yaw + yaw_off);
}

size_t baton_race_sim_objects(const baton_race_sim *s, size_t env, baton_race_object *out, size_t cap)
{
    if (!s->scene || env >= s->n) return 0;
    const race_scene *sc = &s->scene[env];
    for (size_t i = 0; i < sc->n && i < cap; i++) race_obj_public(&sc->o[i], &out[i]);
    return sc->n;
}

void baton_race_sim_scene_seed(baton_race_sim *s, size_t env, uint64_t key)
{
    if (s->scene && env < s->n) baton_rng_seed3(&s->scene[env].rng, s->o.seed, key, 0x7363656e);   /* "scen" */
}

void baton_race_sim_reset_here(baton_race_sim *s, size_t env)
{
    if (env >= s->n) return;
    if (s->o.shared) {   /* never onto another car: as little behind as keeps it clear */
        baton_race_sim_crash_reset(s, env);
        return;
    }
    const race_geom *g = race_track_geom(s->t, s->env[env].st.reversed_dir);
    race_sim_place(s, env, s->env[env].st.ndist * g->length, 0, 0);
}

void baton_race_sim_crash_reset(baton_race_sim *s, size_t env)
{
    if (env >= s->n) return;
    race_env *v = &s->env[env];
    const race_geom *g = race_track_geom(s->t, v->st.reversed_dir);
    double s0 = v->st.ndist * g->length, back = 0;
    for (; s->scene && back < 3; back += 0.05) {   /* back along the centre line until clear */
        double x, y, yaw, at = s0 - back;
        if (!g->loop && at < 0) break;
        race_geom_pose(g, at, &x, &y, &yaw);
        race_rect r;
        race_car_rect(&s->o.car, x, y, yaw, &r);
        if (!race_scene_hits(&s->scene[env], &r)) break;
    }
    race_sim_place(s, env, s0 - back, 0, 0);
}
