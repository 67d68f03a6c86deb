/* sim_shared.c — head-to-model: two to four cars on one track (baton_race_sim_opts.shared), each
 * an environment of the simulator, each driven by its own policy; the simulator's envs are worlds
 * of that many cars (a match: one world; training against opponents: one per learning car).
 *
 * Each car's scene holds the other cars of its world (race_scene_peer), so everything that sees bot cars sees
 * them: the LIDAR (sensor.c), the camera (camera.c), the reward's object fields (sim_params.c) and
 * a crash reset's search for a clear place. The simulator moves every car first, then the scenes
 * follow (race_sim_sync_peers) and the cars are checked against each other where they all stand
 * after the step — the same for each car, whatever the order they were moved in.
 *
 * The collision rule (the league's; DeepRacer's console did not record its own): where two cars'
 * footprints touch, the one whose front point is behind the other's along the centre line (the
 * shorter way round a loop) hit it from behind: its step ends crashed (a crash counted; a match
 * puts it back clear of the others with the collision penalty, as a crash into a bot). The one
 * ahead is bumped (counted) and drives on. Equal to the millimetre: both crashed. A lap
 * completed in that step stands (as against objects). A car parked (finished) is off the track.
 *
 * Contract: allocation-free; a function of the cars' poses. */
#include "race_internal.h"

void race_sim_sync_world(baton_race_sim *s, size_t env)
{
    size_t cars = (size_t)s->o.shared, w0 = env - env % cars;
    for (size_t e = w0; e < w0 + cars; e++) {
        race_scene *sc = &s->scene[e];
        const race_geom *g = race_track_geom(s->t, s->env[e].st.reversed_dir);
        size_t k = 0;
        for (size_t j = w0; j < w0 + cars; j++) {
            const race_env *v = &s->env[j];
            if (j == e || v->parked) continue;
            race_scene_peer(sc, k++, j - w0, &s->o.car, v->st.x, v->st.y, v->st.yaw, v->st.speed, s->t, g);
        }
        for (size_t i = k; i < sc->n; i++) sc->o[i].peer = 0;   /* a later car in a freed slot starts fresh */
        sc->n = k;
    }
}

void race_sim_sync_peers(baton_race_sim *s)
{
    for (size_t w0 = 0; w0 < s->n; w0 += (size_t)s->o.shared) race_sim_sync_world(s, w0);
}

/* b's front point ahead of a's along the centre line (metres; negative: behind). */
static double ahead_of(const baton_race_sim *s, const baton_race_car_state *a, const baton_race_car_state *b)
{
    const race_geom *g = race_track_geom(s->t, a->reversed_dir);
    double d = (b->ndist - a->ndist) * g->length;
    if (g->loop) {
        if (d > g->length / 2) d -= g->length;
        else if (d <= -g->length / 2) d += g->length;
    }
    return d;
}

static int crash(baton_race_car_state *st)
{
    int ended = st->status == BATON_RACE_IN_PROGRESS;
    if (st->status != BATON_RACE_LAP_COMPLETE) st->status = BATON_RACE_CRASHED;
    if (!st->crashed) st->crashes++;
    st->crashed = 1;
    return ended;
}

size_t race_sim_collide(baton_race_sim *s)
{
    size_t ended = 0, cars = (size_t)s->o.shared;
    const uint8_t *stepped = s->stepped;
    for (size_t e = 0; e < s->n; e++) s->env[e].st.bumped = 0;
    for (size_t a = 0; a < s->n; a++) {
        for (size_t b = a + 1; b < a - a % cars + cars; b++) {   /* the rest of a's world */
            race_env *va = &s->env[a], *vb = &s->env[b];
            if (va->parked || vb->parked || !(stepped[a] || stepped[b])) continue;
            race_rect ra, rb;
            race_car_rect(&s->o.car, va->st.x, va->st.y, va->st.yaw, &ra);
            race_car_rect(&s->o.car, vb->st.x, vb->st.y, vb->st.yaw, &rb);
            if (!race_rect_touch(&ra, &rb)) continue;
            double d = ahead_of(s, &va->st, &vb->st);
            size_t ib = d > 0 ? a : b;
            race_env *behind = &s->env[ib], *front = d > 0 ? vb : va;
            if (d == 0) {   /* level: both (of those that moved) */
                if (stepped[a]) ended += (size_t)crash(&va->st);
                if (stepped[b]) ended += (size_t)crash(&vb->st);
                continue;
            }
            if (stepped[ib]) ended += (size_t)crash(&behind->st);   /* a car standing is nobody's fault */
            if (!front->st.bumped) front->st.bumps++;
            front->st.bumped = 1;
        }
    }
    return ended;
}

void baton_race_sim_park(baton_race_sim *s, size_t env)
{
    if (!s->o.shared || env >= s->n) return;
    s->env[env].parked = 1;
    race_sim_sync_world(s, env);
}
