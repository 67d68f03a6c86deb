/* opponents.c — training against models (race train --opponent): in every world of the training
 * simulator (race.h's shared worlds: the learning car first, then one car per opponent) each
 * opponent is driven by its checkpoint's policy with the deterministic action, as race match
 * drives it, all worlds' cars of one opponent in one batch.
 *
 * Each episode of the learning car places its world's opponents anew, standing, by the episode's
 * number (mod 3): spread over the lap ahead of the car as the bots are placed (objects.c: bot i at
 * (i + 1) / (n + 1) of the lap ahead of the car's start); on a loop also as a match's staggered
 * grid (RACE_OPPONENTS_GAP_M apart), the car last, or the car on the line with them behind it — a
 * car trained only with its opponents half a lap ahead learned to keep clear of a friend's model
 * starting just ahead of it, not to pass it (bench/RESULTS.md 17). An
 * opponent drives on through its own laps; off the track, reversed or immobilized it is put back
 * where it was (never onto another car), after hitting a car from behind clear of the others — as
 * a match puts a car back, without a clock. A world whose learning car has no episode left parks
 * its opponents (off the track: nobody sees or touches them).
 *
 * Contract: race_opponents_open allocates everything; the rest allocates nothing and is a function
 * of the simulator's state (the opponents' actions are deterministic), so a run resumed between
 * iterations drives the same opponents as the run it replaces. */
#include "ppo_internal.h"

#include <stdlib.h>
#include <string.h>

static uint8_t *hist_of(race_opponents *o, int j, uint32_t w)
{
    return o->hist[j] + (size_t)w * o->a[j].frame_bytes * (size_t)o->a[j].stack;
}

static size_t env_of(const race_opponents *o, uint32_t w, int j)
{
    return (size_t)w * (size_t)o->cars + 1 + (size_t)j;
}

int race_opponents_open(race_opponents *o, const char *const *ckpts, int k, uint32_t worlds, const baton_race_track *t,
                        baton_err *err)
{
    memset(o, 0, sizeof *o);
    if (k < 1 || k > RACE_OPPONENTS_MAX)
        return baton_err_set(err, BATON_ERR_ARG, "%d opponents (want 1 to %d)", k, RACE_OPPONENTS_MAX);
    o->k = k, o->worlds = worlds, o->cars = 1 + k;
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    o->length = in.length_m > 0 ? in.length_m : 1, o->loop = in.loop;
    int rc = BATON_OK;
    for (int j = 0; !rc && j < k; j++) {
        char path[4096];
        race_run_state *st = calloc(1, sizeof *st);
        if (!st) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        if (!rc && !(rc = race_ckpt_find(ckpts[j], path, sizeof path, st, err)) &&
            !(rc = race_agent_from_ckpt(&o->a[j], path, st, (int)worlds, err)))
            o->open[j] = 1;
        free(st);
        if (rc) {
            baton_err_prefix(err, "--opponent %s", ckpts[j]);
            break;
        }
        if (o->a[j].obs == BATON_PPO_OBS_CAMERA && (rc = baton_race_camera_new(t, &o->a[j].camera, &o->cam[j], err))) break;
        if (!(o->hist[j] = malloc((size_t)worlds * o->a[j].frame_bytes * (size_t)o->a[j].stack + 1)))
            rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory for the opponents' frames");
    }
    if (!rc && !(o->slot = calloc(worlds ? worlds : 1, sizeof *o->slot)))
        rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    if (rc) race_opponents_close(o);
    return rc;
}

void race_opponents_close(race_opponents *o)
{
    for (int j = 0; j < RACE_OPPONENTS_MAX; j++) {
        if (o->open[j]) race_agent_free(&o->a[j]);
        baton_race_camera_free(o->cam[j]);
        free(o->hist[j]);
    }
    free(o->slot);
    memset(o, 0, sizeof *o);
}

/* Opponent j of world w sees (its newest frame; refill: the whole stack that frame, as a start). */
static void observe(race_opponents *o, const baton_race_sim *sim, uint32_t w, int j, int refill)
{
    const size_t fb = o->a[j].frame_bytes, n = (size_t)o->a[j].stack;
    uint8_t *h = hist_of(o, j, w);
    if (!refill) memmove(h, h + fb, fb * (n - 1));
    race_agent_frame(&o->a[j], sim, o->cam[j], env_of(o, w, j), h + fb * (n - 1));
    for (size_t i = 0; refill && i + 1 < n; i++) memcpy(h + fb * i, h + fb * (n - 1), fb);
}

void race_opponents_place(race_opponents *o, baton_race_sim *sim, uint32_t w, double start, uint64_t episode)
{
    /* episode mod 3: 0 spread ahead as the bots are; on a loop 1 a match's grid with the car last,
     * 2 with the car on the line (the opponents behind it) */
    int mode = o->loop ? (int)(episode % 3) : 0;
    double gap = RACE_OPPONENTS_GAP_M / o->length;
    for (int j = 0; j < o->k; j++) {
        double at = mode == 0 ? start + (j + 1.0) / (o->k + 1.0) : mode == 1 ? start + (j + 1) * gap : start - (j + 1) * gap;
        baton_race_sim_start(sim, env_of(o, w, j), at, 0);
    }
    for (int j = 0; j < o->k; j++) observe(o, sim, w, j, 1);   /* each sees the others placed */
}

void race_opponents_park(race_opponents *o, baton_race_sim *sim, uint32_t w)
{
    for (int j = 0; j < o->k; j++) baton_race_sim_park(sim, env_of(o, w, j));
}

int race_opponents_act(race_opponents *o, const baton_race_sim *sim, const uint8_t *active, float *steer, float *speed,
                       baton_err *err)
{
    for (int j = 0; j < o->k; j++) {
        race_agent *a = &o->a[j];
        int n = 0;
        for (uint32_t w = 0; w < o->worlds; w++) {
            if (!active[w] || baton_race_sim_state(sim, env_of(o, w, j))->status != BATON_RACE_IN_PROGRESS) continue;
            const void *f[16];
            const uint8_t *h = hist_of(o, j, w);
            for (int s = 0; s < a->stack; s++) f[s] = h + a->frame_bytes * (size_t)s;
            race_agent_input(a, n, f);
            o->slot[n++] = w;
        }
        if (n == 0) continue;
        int rc = baton_nn_forward(a->pi, a->x, n, err);
        if (rc) return baton_err_prefix(err, "an opponent's policy");
        const float *out = baton_nn_logits(a->pi);
        for (int i = 0; i < n; i++) {
            size_t e = env_of(o, o->slot[i], j);
            int index;
            race_agent_greedy(a, out + (size_t)i * a->nout, &steer[e], &speed[e], &index);
        }
    }
    return BATON_OK;
}

void race_opponents_after(race_opponents *o, baton_race_sim *sim, const uint8_t *active)
{
    for (uint32_t w = 0; w < o->worlds; w++) {
        if (!active[w]) continue;
        for (int j = 0; j < o->k; j++) {
            size_t e = env_of(o, w, j);
            const baton_race_car_state *st = baton_race_sim_state(sim, e);
            int reset = 0;
            if (st->status == BATON_RACE_LAP_COMPLETE) {
                baton_race_sim_next_lap(sim, e);
            } else if (st->status != BATON_RACE_IN_PROGRESS) {
                if (st->status == BATON_RACE_CRASHED) baton_race_sim_crash_reset(sim, e);
                else baton_race_sim_reset_here(sim, e);
                reset = 1;
            }
            observe(o, sim, w, j, reset);
        }
    }
}
