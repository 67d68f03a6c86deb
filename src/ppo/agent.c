/* agent.c — the agent a race model is: its policy and value networks (two networks of one shape,
 * as DeepRacer's use_separate_networks_per_head builds them: race_cnn, DeepRacer's shallow CNN, on
 * the camera; race_mlp on baton's sensor vector), what they see and what their outputs mean.
 *
 * Observations: one frame per step — the 160x120 greyscale camera (bytes, divided by 255 as
 * rl_coach's image embedder rescales them) or the sensor vector (floats as they are) — and
 * stack_size frames side by side as the networks' input, the oldest first (rl_coach's
 * observation stacking), the episode's first frame repeated until there are enough.
 * Actions: discrete, the action list's index (softmax logits); continuous, a Gaussian's means and
 * log standard deviations for steering and speed, squashed by tanh into the metadata's ranges.
 *
 * Contract: race_agent_new allocates everything (networks for max_batch inputs, the input
 * buffer); nothing after it allocates. The networks run on oneDNN's kernels unless the caller
 * asks for the reference ones or oneDNN cannot start (then the reference ones, logged). */
#include "ppo_internal.h"

#include <stdlib.h>
#include <string.h>

int race_agent_new(race_agent *a, const baton_ppo_meta *meta, int stack, uint64_t seed, int max_batch, int kind,
                   baton_err *err)
{
    memset(a, 0, sizeof *a);
    a->meta = *meta;
    a->obs = meta->obs;
    a->stack = stack < 1 ? 1 : stack;
    a->max_batch = max_batch;
    baton_race_sensor_opts_default(&a->sensor);
    if (meta->lidar && a->obs == BATON_PPO_OBS_SENSOR) baton_race_sensor_opts_lidar(&a->sensor);
    baton_race_camera_opts_default(&a->camera);
    if (a->obs == BATON_PPO_OBS_SENSOR) {
        a->frame_elems = baton_race_sensor_dim(&a->sensor);
        a->frame_bytes = a->frame_elems * sizeof(float);
        a->in_c = a->stack * (int)a->frame_elems, a->in_h = a->in_w = 1;
    } else {
        a->frame_elems = (size_t)a->camera.width * (size_t)a->camera.height;
        a->frame_bytes = a->frame_elems;
        a->in_c = a->stack, a->in_h = a->camera.height, a->in_w = a->camera.width;
    }
    a->in_elems = (size_t)a->in_c * a->in_h * a->in_w;
    a->nout = meta->action_type == BATON_PPO_DISCRETE ? (int)meta->nactions : 4;
    const baton_nn_kernels *k = baton_nn_kernels_select(
        kind == RACE_KERNELS_REFERENCE, kind == RACE_KERNELS_BF16 ? BATON_NN_PRECISION_BF16 : BATON_NN_PRECISION_F32, err);
    if (!k) return baton_err_prefix(err, "race: --precision bf16");
    snprintf(a->kernels, sizeof a->kernels, "%s", k->name);
    const char *net = a->obs == BATON_PPO_OBS_SENSOR ? "race_mlp" : "race_cnn";
    baton_nn_spec ps = {net, a->in_c, a->in_h, a->in_w, a->nout, max_batch, seed * 2 + 1};
    baton_nn_spec vs = {net, a->in_c, a->in_h, a->in_w, 1, max_batch, seed * 2 + 2};
    int rc = baton_nn_model_create(&ps, k, &a->pi, err);
    if (!rc) rc = baton_nn_model_create(&vs, k, &a->vf, err);
    if (!rc && (!(a->x = malloc(sizeof(float) * a->in_elems * (size_t)max_batch)) ||
                !(a->dout = malloc(sizeof(float) * (size_t)a->nout * (size_t)max_batch)) ||
                !(a->dval = malloc(sizeof(float) * (size_t)max_batch)) ||
                !(a->xv = malloc(sizeof(float) * a->in_elems * (size_t)max_batch))))
        rc = baton_err_set(err, BATON_ERR_NOMEM, "race: out of memory for %d inputs", max_batch);
    if (rc) {
        race_agent_free(a);
        return baton_err_prefix(err, "race policy");
    }
    return BATON_OK;
}

void race_agent_free(race_agent *a)
{
    baton_nn_model_free(a->pi);
    baton_nn_model_free(a->vf);
    free(a->x);
    free(a->dout);
    free(a->dval);
    free(a->xv);
    a->pi = a->vf = NULL;
    a->x = a->dout = a->dval = a->xv = NULL;
}

void race_agent_frame(const race_agent *a, const baton_race_sim *sim, const baton_race_camera *cam, size_t env,
                      void *dst)
{
    if (a->obs == BATON_PPO_OBS_SENSOR) {
        baton_race_sim_sensor_env(sim, &a->sensor, env, dst);
    } else {
        baton_race_sim_camera_env(sim, cam, env, dst);
    }
}

void race_agent_input(race_agent *a, int i, const void *const *frames)
{
    race_agent_input_to(a, a->x, i, frames);
}

void race_agent_input_to(const race_agent *a, float *xs, int i, const void *const *frames)
{
    float *x = xs + (size_t)i * a->in_elems;
    for (int k = 0; k < a->stack; k++) {
        if (a->obs == BATON_PPO_OBS_SENSOR) {
            memcpy(x + (size_t)k * a->frame_elems, frames[k], a->frame_bytes);
        } else {
            const uint8_t *p = frames[k];
            float *o = x + (size_t)k * a->frame_elems;
            for (size_t j = 0; j < a->frame_elems; j++) o[j] = (float)p[j] * (1.0f / 255.0f);
        }
    }
}

/* a tanh-squashed value u in (-1, 1) into [lo, hi] */
static float squash(float u, double lo, double hi)
{
    return (float)(lo + (tanh((double)u) + 1) * 0.5 * (hi - lo));
}

void race_agent_action(const race_agent *a, int index, const float *u, float *steer, float *speed)
{
    const baton_ppo_meta *m = &a->meta;
    if (m->action_type == BATON_PPO_DISCRETE) {
        *steer = (float)m->actions[index].steer_deg;
        *speed = (float)m->actions[index].speed_mps;
    } else {
        *steer = squash(u[0], m->steer_low, m->steer_high);
        *speed = squash(u[1], m->speed_low, m->speed_high);
    }
}

void race_agent_greedy(const race_agent *a, const float *out, float *steer, float *speed, int *index)
{
    if (a->meta.action_type == BATON_PPO_DISCRETE) {
        *index = ppo_argmax(a->nout, out);
        race_agent_action(a, *index, NULL, steer, speed);
    } else {
        *index = -1;
        race_agent_action(a, -1, out, steer, speed);   /* the means */
    }
}
