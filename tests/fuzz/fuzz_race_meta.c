/* fuzz_race_meta.c — libFuzzer target: the parsers of DeepRacer's model files
 * (ppo_meta_parse for model_metadata.json, ppo_hyper_parse for hyperparameters.json;
 * the first byte picks which), text a user hands `baton race train` and a checkpoint's state.json
 * carries. Whatever parses must hold the documented ranges (src/ppo/meta.c) and survive a round
 * trip through the formatter; a refusal must come with a message; nothing may crash or leak. */
#include "../../src/ppo/ppo_internal.h"
#include "baton/race.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_meta(const baton_ppo_meta *m)
{
    if (m->action_type == BATON_PPO_DISCRETE) {
        if (m->nactions < 1 || m->nactions > BATON_PPO_MAX_ACTIONS) abort();
        for (size_t i = 0; i < m->nactions; i++)
            if (!(m->actions[i].speed_mps >= 0.1 && m->actions[i].speed_mps <= 4) ||
                !(m->actions[i].steer_deg >= -30 && m->actions[i].steer_deg <= 30))
                abort();
    } else if (m->action_type == BATON_PPO_CONTINUOUS) {
        if (!(m->speed_low < m->speed_high) || !(m->steer_low < m->steer_high)) abort();
        if (!(m->speed_low >= 0.1 && m->speed_high <= 4 && m->steer_low >= -30 && m->steer_high <= 30)) abort();
    } else {
        abort();
    }
    if (!memchr(m->version, 0, sizeof m->version)) abort();
    char *s = ppo_meta_format(m);
    if (!s) return;
    baton_ppo_meta b;
    baton_err err = {0};
    if (ppo_meta_parse("again", s, strlen(s), &b, &err) != BATON_OK) abort();
    if (b.action_type != m->action_type || b.obs != m->obs || b.nactions != m->nactions) abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    baton_err err = {0};
    int rc;
    if (data[0] & 1) {
        baton_ppo_meta m;
        rc = ppo_meta_parse("model_metadata.json", (const char *)data + 1, size - 1, &m, &err);
        if (rc == BATON_OK) check_meta(&m);
    } else {
        baton_ppo_hyper h;
        rc = ppo_hyper_parse("hyperparameters.json", (const char *)data + 1, size - 1, &h, &err);
        if (rc == BATON_OK) {
            if (h.batch_size < 1 || h.batch_size > 4096 || !(h.lr > 0) || !(h.discount_factor > 0) ||
                !(h.discount_factor <= 1) || h.num_epochs < 1 || h.stack_size < 1 || h.stack_size > 16 ||
                h.num_episodes_between_training < 1 || !(h.beta_entropy >= 0))
                abort();
            char *s = ppo_hyper_format(&h);
            baton_ppo_hyper b;
            if (s && (ppo_hyper_parse("again", s, strlen(s), &b, &err) != BATON_OK || memcmp(&b, &h, sizeof b)))
                abort();
            free(s);
        }
    }
    if (rc != BATON_OK && (rc >= 0 || err.code != rc || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg))) abort();
    return 0;
}
