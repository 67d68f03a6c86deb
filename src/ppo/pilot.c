/* pilot.c — a trained policy driving one car (race eval, race drive --policy): the checkpoint's
 * policy network, the car's last stack_size frames (the oldest first, refilled with the current
 * frame at a start and after a reset, as training stacks an episode's first frame), and the
 * deterministic action (the most likely discrete action, or the Gaussian's mean squashed into
 * the ranges).
 *
 * Contract: race_pilot_open allocates everything; observe and act allocate nothing. */
#include "ppo_internal.h"

#include <stdlib.h>
#include <string.h>

int race_pilot_open(race_pilot *p, const char *ckpt, char *path, size_t cap, race_run_state *st, baton_err *err)
{
    memset(p, 0, sizeof *p);
    int rc = race_ckpt_find(ckpt, path, cap, st, err);
    if (!rc) rc = race_agent_from_ckpt(&p->a, path, st, 1, err);
    if (rc) return rc;
    p->open = 1;
    if (!(p->hist = malloc(p->a.frame_bytes * (size_t)p->a.stack))) {
        race_pilot_close(p);
        return baton_err_set(err, BATON_ERR_NOMEM, "race: out of memory");
    }
    return BATON_OK;
}

int baton_ppo_policy_check(const char *ckpt, baton_err *err)
{
    race_pilot p;
    race_run_state st;
    char path[4096];
    int rc = race_pilot_open(&p, ckpt, path, sizeof path, &st, err);
    if (!rc) race_pilot_close(&p);
    return rc;
}

void race_pilot_close(race_pilot *p)
{
    if (p->open) race_agent_free(&p->a);
    free(p->hist);
    memset(p, 0, sizeof *p);
}

void race_pilot_observe(race_pilot *p, const baton_race_sim *sim, const baton_race_camera *cam, size_t env, int refill)
{
    const size_t fb = p->a.frame_bytes, k = (size_t)p->a.stack;
    if (!refill) memmove(p->hist, p->hist + fb, fb * (k - 1));
    race_agent_frame(&p->a, sim, cam, env, p->hist + fb * (k - 1));
    for (size_t i = 0; refill && i + 1 < k; i++) memcpy(p->hist + fb * i, p->hist + fb * (k - 1), fb);
}

int race_pilot_act(race_pilot *p, float *steer, float *speed, int *index, baton_err *err)
{
    const void *f[16];
    for (int k = 0; k < p->a.stack; k++) f[k] = p->hist + p->a.frame_bytes * (size_t)k;
    race_agent_input(&p->a, 0, f);
    int rc = baton_nn_forward(p->a.pi, p->a.x, 1, err);
    if (!rc) race_agent_greedy(&p->a, baton_nn_logits(p->a.pi), steer, speed, index);
    return rc;
}
