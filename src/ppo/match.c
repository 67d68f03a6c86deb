/* match.c — `baton race match`: head-to-model, two to four models on one track at once (race.h's
 * shared simulator: each car sees the others as it sees bot cars, and a car that hits another from
 * behind has crashed). Every car is driven by its own pilot (pilot.c: its checkpoint's policy,
 * sensor or camera, its own frame stack and camera) with the deterministic action, as race eval
 * drives one; or by race's centre-line driver ("centerline[:PACE[:LANE]]", along the centre line
 * or a lane's, which sees nobody: a baseline, and the tests' cars built to hit or to pass).
 *
 * The match's rules (docs/race.md "Head-to-model"): a loop; car k starts gap_m × k behind the start
 * line, standing, and drives `laps` laps from its own place (each car the same distance); the clock
 * runs from the start for all; off the track, reversed or immobilized: back on the centre line
 * where it was, never onto another car, with the off-track penalty; a crash (hitting a car from
 * behind): back clear of the others with the collision penalty; a lap from line to line (the
 * crossing interpolated within its step), penalties included; a car that has driven its laps
 * leaves the track (parked). Finish order: cars that drove every lap by total time, then the
 * others by distance. Overtakes: each pair's gap along the track (driven distance less the start
 * stagger, wrapped into half a lap), a change of sign while both drive is a pass, as eval counts
 * passes of bots; a reset's jump is none.
 *
 * Contract: deterministic for the checkpoints, the track and the options (the seed matters only
 * with action noise); everything is allocated before the first step. */
#include "ppo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void baton_ppo_match_opts_default(baton_ppo_match_opts *o)
{
    memset(o, 0, sizeof *o);
    o->laps = 3;
    o->seed = 1;
    o->gap_m = 1.0;
    o->off_track_penalty_s = 5;
    o->collision_penalty_s = 5;
    baton_ppo_train_opts t;
    baton_ppo_train_opts_default(&t);
    o->car = t.car;
}

void baton_ppo_match_result_free(baton_ppo_match_result *r)
{
    for (int i = 0; i < BATON_PPO_MATCH_MAX; i++) {
        baton_ppo_match_car *c = &r->car[i];
        free(c->lap_s);
        free(c->x);
        free(c->y);
        free(c->v);
    }
    memset(r, 0, sizeof *r);
}

typedef struct driver {
    int centerline;             /* race's centre-line driver at pace, along lane */
    double pace, lane;
    race_pilot pilot;
    race_run_state st;
    baton_race_camera *cam;     /* a camera policy's own camera */
} driver;

typedef struct matcher {
    const baton_ppo_match_opts *o;
    baton_ppo_match_result *r;
    baton_race_track *track;
    baton_race_sim *sim;
    driver d[BATON_PPO_MATCH_MAX];
    int n;
    double L;
    int active[BATON_PPO_MATCH_MAX];   /* on the track */
    double at[BATON_PPO_MATCH_MAX];    /* front point along the centre line after the last step */
    double pen[BATON_PPO_MATCH_MAX], lap_start[BATON_PPO_MATCH_MAX];
    double gap[BATON_PPO_MATCH_MAX][BATON_PPO_MATCH_MAX];   /* j's position ahead of i's, wrapped */
    baton_buf trace[BATON_PPO_MATCH_MAX];
} matcher;

static double wrap(double d, double L)
{
    d = fmod(d, L);
    if (d > L / 2) d -= L;
    if (d <= -L / 2) d += L;
    return d;
}

static int open_driver(matcher *m, int i, baton_err *err)
{
    const char *spec = m->o->ckpt[i];
    driver *d = &m->d[i];
    baton_ppo_match_car *c = &m->r->car[i];
    if (!spec || !*spec) return baton_err_set(err, BATON_ERR_ARG, "race match: car %d has no checkpoint", i + 1);
    snprintf(c->name, sizeof c->name, "%s", m->o->name[i] ? m->o->name[i] : spec);
    c->slot = i;
    if (!strncmp(spec, "centerline", 10) && (spec[10] == 0 || spec[10] == ':')) {
        d->centerline = 1;
        d->pace = 0.85;
        if (spec[10] == ':') {   /* :PACE[:LANE] */
            char *end;
            d->pace = strtod(spec + 11, &end);
            if (*end == ':') d->lane = strtod(end + 1, &end);
            if (end == spec + 11 || *end || !(d->pace > 0 && d->pace <= 2) || !(d->lane >= -1 && d->lane <= 1))
                return baton_err_set(err, BATON_ERR_ARG,
                                     "race match: car %d: %s: want centerline:PACE[:LANE], the pace above 0 and at most 2, "
                                     "the lane -1..1", i + 1, spec);
        }
        snprintf(c->checkpoint, sizeof c->checkpoint, "centerline");
        return BATON_OK;
    }
    int rc = race_pilot_open(&d->pilot, spec, c->checkpoint, sizeof c->checkpoint, &d->st, err);
    if (rc) baton_err_prefix(err, "race match: car %d (%s)", i + 1, spec);
    return rc;
}

static int setup(matcher *m, size_t limit, baton_err *err)
{
    const baton_ppo_match_opts *o = m->o;
    int rc = BATON_OK;
    for (int i = 0; !rc && i < m->n; i++) rc = open_driver(m, i, err);
    if (rc) return rc;
    const char *track = o->track;
    for (int i = 0; !track && i < m->n; i++)
        if (!m->d[i].centerline) track = m->d[i].st.track;
    if (!track) return baton_err_set(err, BATON_ERR_ARG, "race match: a track is required (no checkpoint names one)");
    snprintf(m->r->track, sizeof m->r->track, "%s", track);
    if ((rc = baton_race_track_load(track, &m->track, err))) return rc;
    baton_race_track_info in;
    baton_race_track_get_info(m->track, &in);
    snprintf(m->r->track_name, sizeof m->r->track_name, "%s", in.name);
    m->L = in.length_m;
    if (!in.loop)
        return baton_err_set(err, BATON_ERR_ARG, "race match: track %s is open; a match's staggered cars race round a loop",
                             in.name);
    if (!(o->gap_m >= 0.3 && (m->n - 1) * o->gap_m < m->L / 2))
        return baton_err_set(err, BATON_ERR_ARG, "race match: a start gap of %g m (want 0.3 m up to %.2f m on %s)", o->gap_m,
                             m->L / 2 / (m->n - 1), in.name);
    baton_race_sim_opts so;
    baton_race_sim_opts_default(&so);
    so.envs = (size_t)m->n;
    so.shared = m->n;
    so.car = o->car;
    so.seed = o->seed;
    so.steer_noise_deg = o->steer_noise_deg;
    so.speed_noise_mps = o->speed_noise_mps;
    so.max_steps = 100000000;   /* the step limit is the match's own */
    if ((rc = baton_race_sim_new(m->track, &so, &m->sim, err))) return rc;
    for (int i = 0; i < m->n; i++) {
        driver *d = &m->d[i];
        if (!d->centerline && d->pilot.a.obs == BATON_PPO_OBS_CAMERA &&
            (rc = baton_race_camera_new(m->track, &d->pilot.a.camera, &d->cam, err)))
            return rc;
        baton_ppo_match_car *c = &m->r->car[i];
        c->lap_s = calloc((size_t)o->laps, sizeof *c->lap_s);
        c->x = malloc(limit * sizeof *c->x);
        c->y = malloc(limit * sizeof *c->y);
        c->v = malloc(limit * sizeof *c->v);
        if (!c->lap_s || !c->x || !c->y || !c->v)
            return baton_err_set(err, BATON_ERR_NOMEM, "race match: out of memory for %zu steps", limit);
    }
    return BATON_OK;
}

/* Every pair's gap after a step; a change of sign while both drove is a pass. */
static void count_passes(matcher *m, const int *was_active, const int *reset, int counting)
{
    for (int i = 0; i < m->n; i++) {
        for (int j = i + 1; j < m->n; j++) {
            if (!was_active[i] || !was_active[j]) continue;
            baton_ppo_match_car *a = &m->r->car[i], *b = &m->r->car[j];
            double g = wrap((b->distance_m - m->o->gap_m * b->slot) - (a->distance_m - m->o->gap_m * a->slot), m->L);
            double was = m->gap[i][j];
            if (counting && !reset[i] && !reset[j] && fabs(g - was) < m->L / 4) {
                if (was > 0 && g <= 0) a->overtakes++, b->overtaken++;
                else if (was <= 0 && g > 0) b->overtakes++, a->overtaken++;
            }
            m->gap[i][j] = g;
        }
    }
}

/* The distance driven follows the front point along the centre line (a reset's jump included). */
static void follow(matcher *m, int i)
{
    const baton_race_car_state *st = baton_race_sim_state(m->sim, (size_t)i);
    double s = st->ndist * m->L;
    m->r->car[i].distance_m += wrap(s - m->at[i], m->L);
    m->at[i] = s;
}

static void observe(matcher *m, int i, int refill)
{
    driver *d = &m->d[i];
    if (!d->centerline) race_pilot_observe(&d->pilot, m->sim, d->cam, (size_t)i, refill);
}

static int trace_row(matcher *m, int i, size_t k, int index)
{
    if (!m->o->trace_path) return BATON_OK;
    const baton_race_car_state *st = baton_race_sim_state(m->sim, (size_t)i);
    struct baton_race_params p;
    baton_race_sim_params(m->sim, (size_t)i, &p);
    return race_trace_row(&m->trace[i], (uint64_t)i, (uint32_t)(k + 1), st, index,
                          baton_race_reward_follow_center_line(&p), m->L, (double)(k + 1) / 15 + m->pen[i]);
}

/* After car i's step k: its lap, its reset. Returns 1 when it was reset. */
static int after_step(matcher *m, int i, size_t k, double before)
{
    const baton_ppo_match_opts *o = m->o;
    const double dt = 1.0 / 15;
    baton_ppo_match_car *c = &m->r->car[i];
    const baton_race_car_state *st = baton_race_sim_state(m->sim, (size_t)i);
    if (st->status == BATON_RACE_LAP_COMPLETE) {
        double over = baton_race_sim_overshoot(m->sim, (size_t)i), frac = (100 - before) / (100 + over - before);
        double cross = ((double)k + (frac > 0 && frac <= 1 ? frac : 1)) * dt + m->pen[i];
        c->lap_s[c->nlaps++] = cross - m->lap_start[i];
        m->lap_start[i] = cross;
        if (c->nlaps == (size_t)o->laps) {
            c->completed = 1;
            c->total_s = cross;
            m->active[i] = 0;
            baton_race_sim_park(m->sim, (size_t)i);
        } else {
            baton_race_sim_next_lap(m->sim, (size_t)i);
        }
        return 0;
    }
    if (st->status == BATON_RACE_IN_PROGRESS) return 0;
    int crash = st->status == BATON_RACE_CRASHED;
    if (crash) baton_race_sim_crash_reset(m->sim, (size_t)i);
    else baton_race_sim_reset_here(m->sim, (size_t)i);
    double add = crash ? o->collision_penalty_s : o->off_track_penalty_s;
    c->resets++;
    c->crashes += (uint32_t)crash;
    c->penalties_s += add;
    m->pen[i] += add;
    return 1;
}

static int drive(matcher *m, size_t limit, baton_err *err)
{
    const int n = m->n;
    for (int i = 0; i < n; i++) {
        baton_race_sim_start(m->sim, (size_t)i, -(double)i * m->o->gap_m / m->L, 0);
        m->active[i] = 1;
    }
    for (int i = 0; i < n; i++) {
        m->at[i] = baton_race_sim_state(m->sim, (size_t)i)->ndist * m->L;
        observe(m, i, 1);
    }
    int none[BATON_PPO_MATCH_MAX] = {0};
    count_passes(m, m->active, none, 0);
    size_t k = 0;
    int rc = BATON_OK, left = n;
    for (; !rc && k < limit && left > 0; k++) {
        float steer[BATON_PPO_MATCH_MAX] = {0}, speed[BATON_PPO_MATCH_MAX] = {0};
        int index[BATON_PPO_MATCH_MAX] = {0}, was[BATON_PPO_MATCH_MAX], reset[BATON_PPO_MATCH_MAX] = {0};
        double before[BATON_PPO_MATCH_MAX];
        for (int i = 0; !rc && i < n; i++) {
            was[i] = m->active[i];
            before[i] = baton_race_sim_state(m->sim, (size_t)i)->progress;
            if (!m->active[i]) continue;
            driver *d = &m->d[i];
            if (d->centerline) {
                baton_race_lane_action(m->sim, (size_t)i, d->pace, d->lane, &steer[i], &speed[i]);
                index[i] = -1;
            } else {
                rc = race_pilot_act(&d->pilot, &steer[i], &speed[i], &index[i], err);
            }
        }
        if (rc) break;
        baton_race_sim_step(m->sim, steer, speed);
        for (int i = 0; !rc && i < n; i++) {
            if (!was[i]) continue;
            const baton_race_car_state *st = baton_race_sim_state(m->sim, (size_t)i);
            baton_ppo_match_car *c = &m->r->car[i];
            c->x[c->n] = st->x, c->y[c->n] = st->y, c->v[c->n] = st->speed, c->n++;
            follow(m, i);
            if ((rc = trace_row(m, i, k, index[i]))) {
                baton_err_set(err, rc, "race match: out of memory for the trace");
                break;
            }
            if (st->bumped) c->bumps++;
            reset[i] = after_step(m, i, k, before[i]);
            if (reset[i]) follow(m, i);
            left -= !m->active[i];
        }
        if (rc) break;
        count_passes(m, was, reset, 1);
        for (int i = 0; i < n; i++)
            if (m->active[i]) observe(m, i, reset[i]);
    }
    m->r->steps = k;
    return rc;
}

/* Finish order: every lap driven, by total time; then by distance; then the start slot. */
static void rank(baton_ppo_match_result *r)
{
    int order[BATON_PPO_MATCH_MAX];
    for (int i = 0; i < r->ncars; i++) order[i] = i;
    for (int a = 1; a < r->ncars; a++) {
        for (int b = a; b > 0; b--) {
            const baton_ppo_match_car *x = &r->car[order[b - 1]], *y = &r->car[order[b]];
            int swap = x->completed != y->completed ? y->completed
                       : x->completed && x->total_s != y->total_s ? y->total_s < x->total_s
                       : !x->completed && x->distance_m != y->distance_m ? y->distance_m > x->distance_m
                       : 0;
            if (!swap) break;
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    }
    for (int p = 0; p < r->ncars; p++) r->car[order[p]].position = p + 1;
}

static int write_trace(matcher *m, baton_err *err)
{
    baton_buf out = {0};
    int rc = baton_buf_append(&out, RACE_TRACE_HEADER, strlen(RACE_TRACE_HEADER));
    for (int i = 0; !rc && i < m->n; i++) rc = baton_buf_append(&out, m->trace[i].data, m->trace[i].len);
    if (!rc) rc = baton_file_write_atomic(m->o->trace_path, out.data, out.len, err);
    else baton_err_set(err, rc, "race match: out of memory for the trace");
    baton_buf_free(&out);
    return rc;
}

int baton_ppo_match(const baton_ppo_match_opts *o, baton_ppo_match_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (o->ncars < 2 || o->ncars > BATON_PPO_MATCH_MAX)
        return baton_err_set(err, BATON_ERR_ARG, "race match: %d cars (want 2 to %d)", o->ncars, BATON_PPO_MATCH_MAX);
    if (o->laps < 1 || o->laps > 100) return baton_err_set(err, BATON_ERR_ARG, "race match: laps %d (want 1..100)", o->laps);
    if (!(o->off_track_penalty_s >= 0 && o->off_track_penalty_s <= 3600) ||
        !(o->collision_penalty_s >= 0 && o->collision_penalty_s <= 3600))
        return baton_err_set(err, BATON_ERR_ARG, "race match: the penalties must be 0..3600 s");
    matcher m;
    memset(&m, 0, sizeof m);
    m.o = o, m.r = r, m.n = o->ncars;
    r->ncars = o->ncars;
    size_t limit = o->max_steps ? o->max_steps : (size_t)o->laps * 10000;
    int rc = setup(&m, limit, err);
    if (!rc) rc = drive(&m, limit, err);
    if (!rc) {
        for (int i = 0; i < m.n; i++) {
            baton_ppo_match_car *c = &r->car[i];
            if (!c->completed) c->total_s = (double)r->steps / 15 + c->penalties_s;
            for (size_t l = 0; l < c->nlaps; l++)
                if (c->best_lap_s == 0 || c->lap_s[l] < c->best_lap_s) c->best_lap_s = c->lap_s[l];
        }
        rank(r);
    }
    if (!rc && o->trace_path) rc = write_trace(&m, err);
    for (int i = 0; i < BATON_PPO_MATCH_MAX; i++) {
        if (!m.d[i].centerline) race_pilot_close(&m.d[i].pilot);
        baton_race_camera_free(m.d[i].cam);
        baton_buf_free(&m.trace[i]);
    }
    baton_race_sim_free(m.sim);
    baton_race_track_free(m.track);
    if (rc) baton_ppo_match_result_free(r);
    return rc;
}
