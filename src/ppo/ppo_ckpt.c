/* ppo_ckpt.c — a race model's checkpoint tensors: the policy's and the value network's tensors
 * named "policy.<name>" and "value.<name>" (the networks' own state_dict names), their Adam states
 * "policy.<name>.exp_avg", ".exp_avg_sq", likewise; the shadow copy the trainer checkpoints from
 * (taken between iterations, so a save asked for in the middle of one holds the state at its
 * start); loading them back by name; and finding a checkpoint with its state.
 *
 * Contract: the lists and the shadow are allocated once (race_ckpt_tensors_new); a load is ckpt's
 * baton_ckpt_load_tensors (the folder verified, every tensor matched by name, dtype and shape, a
 * tensor no list names refused, nothing copied until all match, "steps" a count). */
#include "ppo_internal.h"

#include "baton/ckpt.h"

#include <stdlib.h>
#include <string.h>

static size_t model_count(const baton_nn_model *m) { return baton_nn_model_ntensors(m); }

/* The named lists over the live tensors (opi and ovf NULL: the networks only; policy_only: the
 * policy network alone). */
static int build_lists(race_ckpt_tensors *c, const race_agent *a, const baton_nn_optim *opi,
                       const baton_nn_optim *ovf, int policy_only, baton_err *err)
{
    memset(c, 0, sizeof *c);
    if (policy_only) opi = ovf = NULL;
    c->nm = model_count(a->pi) + (policy_only ? 0 : model_count(a->vf));
    c->no = opi && ovf ? baton_nn_optim_ntensors(opi) + baton_nn_optim_ntensors(ovf) : 0;
    c->mt = calloc(c->nm, sizeof *c->mt);
    c->ot = calloc(c->no ? c->no : 1, sizeof *c->ot);
    c->names = calloc(c->nm + c->no, sizeof *c->names);
    if (!c->mt || !c->ot || !c->names) {
        race_ckpt_tensors_free(c);
        return baton_err_set(err, BATON_ERR_NOMEM, "race checkpoint: out of memory for the tensor lists");
    }
    size_t k = 0;
    for (int net = 0; net < (policy_only ? 1 : 2); net++) {
        const baton_nn_model *m = net ? a->vf : a->pi;
        for (size_t i = 0; i < model_count(m); i++, k++) {
            baton_nn_model_tensor(m, i, &c->mt[k]);
            snprintf(c->names[k], sizeof c->names[0], "%s.%s", net ? "value" : "policy", c->mt[k].name);
            c->mt[k].name = c->names[k];
        }
    }
    size_t q = 0;
    for (int net = 0; net < 2 && c->no; net++) {
        const baton_nn_optim *o = net ? ovf : opi;
        for (size_t i = 0; i < baton_nn_optim_ntensors(o); i++, q++) {
            baton_nn_optim_tensor(o, i, &c->ot[q]);
            snprintf(c->names[c->nm + q], sizeof c->names[0], "%s.%s", net ? "value" : "policy", c->ot[q].name);
            c->ot[q].name = c->names[c->nm + q];
        }
    }
    return BATON_OK;
}

static size_t tensor_bytes(const baton_nn_tensor *t)
{
    return t->numel * (t->dtype == BATON_NN_I64 ? 8 : 4);
}

int race_ckpt_tensors_new(race_ckpt_tensors *c, const race_agent *a, const baton_nn_optim *opi,
                          const baton_nn_optim *ovf, baton_err *err)
{
    int rc = build_lists(c, a, opi, ovf, 0, err);
    if (rc) return rc;
    size_t bytes = 0;
    for (size_t i = 0; i < c->nm; i++) bytes += tensor_bytes(&c->mt[i]);
    for (size_t i = 0; i < c->no; i++) bytes += tensor_bytes(&c->ot[i]);
    c->shadow_bytes = bytes;
    if (!(c->shadow = malloc(bytes ? bytes : 1))) {
        race_ckpt_tensors_free(c);
        return baton_err_set(err, BATON_ERR_NOMEM, "race checkpoint: out of memory for the tensor lists");
    }
    /* the lists point into the shadow: what a snapshot copies is always the shadow */
    uint8_t *p = c->shadow;
    for (size_t i = 0; i < c->nm; i++) {
        c->mt[i].data = p;
        c->mt[i].grad = NULL;
        p += tensor_bytes(&c->mt[i]);
    }
    for (size_t i = 0; i < c->no; i++) {
        c->ot[i].data = p;
        c->ot[i].grad = NULL;
        p += tensor_bytes(&c->ot[i]);
    }
    race_ckpt_tensors_take(c, a, opi, ovf);
    return BATON_OK;
}

void race_ckpt_tensors_free(race_ckpt_tensors *c)
{
    free(c->mt);
    free(c->ot);
    free(c->names);
    free(c->shadow);
    memset(c, 0, sizeof *c);
}

void race_ckpt_tensors_take(race_ckpt_tensors *c, const race_agent *a, const baton_nn_optim *opi,
                            const baton_nn_optim *ovf)
{
    size_t k = 0;
    for (int net = 0; net < 2; net++) {
        const baton_nn_model *m = net ? a->vf : a->pi;
        for (size_t i = 0; i < model_count(m); i++, k++) {
            baton_nn_tensor t;
            baton_nn_model_tensor(m, i, &t);
            memcpy(c->mt[k].data, t.data, t.numel * (t.dtype == BATON_NN_I64 ? 8 : 4));
        }
    }
    k = 0;
    for (int net = 0; net < 2; net++) {
        const baton_nn_optim *o = net ? ovf : opi;
        for (size_t i = 0; i < baton_nn_optim_ntensors(o); i++, k++) {
            baton_nn_tensor t;
            baton_nn_optim_tensor(o, i, &t);
            memcpy(c->ot[k].data, t.data, t.numel * 4);
        }
    }
}

/* ---------------------------------------------------------------- loading */

int race_ckpt_load(const char *dir, int policy_only, race_agent *a, baton_nn_optim *opi, baton_nn_optim *ovf,
                   uint64_t *optim_steps, baton_err *err)
{
    if (policy_only && (opi || ovf))
        return baton_err_set(err, BATON_ERR_FORMAT, "the checkpoint holds the policy network alone (state.json \"contents\": "
                             "\"policy\", as `race export` writes it): no value network or optimizer to resume from");
    race_ckpt_tensors c;
    int rc = build_lists(&c, a, opi, ovf, policy_only, err);
    if (rc) return rc;
    uint64_t steps = 0;
    rc = baton_ckpt_load_tensors(dir, c.mt, c.nm, opi && ovf ? c.ot : NULL, c.no, &steps, err);
    race_ckpt_tensors_free(&c);
    if (!rc && opi && ovf) {
        baton_nn_optim_set_steps(opi, steps);
        baton_nn_optim_set_steps(ovf, steps);
        if (optim_steps) *optim_steps = steps;
    }
    return rc;
}

int race_ckpt_find(const char *spec, char *path, size_t cap, race_run_state *st, baton_err *err)
{
    char base[4096];
    snprintf(base, sizeof base, "%s", spec);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') base[--bl] = 0;
    const char *slash = strrchr(base, '/');
    uint64_t step;
    int rc = BATON_OK;
    if (baton_ckpt_parse_name(slash ? slash + 1 : base, &step)) snprintf(path, cap, "%s", base);
    else rc = baton_ckpt_latest(spec, path, cap, &step, err);
    if (rc == BATON_ERR_NOTFOUND)
        return baton_err_set(err, rc, "%s: no checkpoint that verifies (train one with `baton race train`)", spec);
    if (rc) return rc;
    char *text = NULL;
    if ((rc = baton_ckpt_load(path, NULL, NULL, &text, err))) return rc;
    rc = race_state_parse(text, strlen(text), st, err);
    free(text);
    if (rc) return baton_err_prefix(err, "%s", path);
    return BATON_OK;
}

int race_agent_from_ckpt(race_agent *a, const char *path, const race_run_state *st, int max_batch, baton_err *err)
{
    int rc = race_agent_new(a, &st->meta, (int)st->hyper.stack_size, st->seed, max_batch, 0, err);
    if (!rc && (rc = race_ckpt_load(path, st->policy_only, a, NULL, NULL, NULL, err))) race_agent_free(a);
    return rc;
}

/* ---------------------------------------------------------------- the policy alone */

int baton_ppo_policy_export(const char *spec, const char *dir, char *out, size_t cap, baton_err *err)
{
    char path[4096];
    race_run_state *st = calloc(1, sizeof *st);
    if (!st) return baton_err_set(err, BATON_ERR_NOMEM, "race: out of memory");
    race_agent a;
    race_ckpt_tensors c = {0};
    baton_ckpt_store *store = NULL;
    char *text = NULL;
    int rc = race_ckpt_find(spec, path, sizeof path, st, err), have_agent = 0;
    if (!rc && !(rc = race_agent_from_ckpt(&a, path, st, 1, err))) have_agent = 1;
    if (!rc) rc = build_lists(&c, &a, NULL, NULL, 1, err);
    st->policy_only = 1;
    if (!rc && !(text = race_state_format(st))) rc = baton_err_set(err, BATON_ERR_NOMEM, "race: out of memory");
    if (!rc) rc = baton_ckpt_store_open(dir, 1, &store, err);
    if (!rc) rc = baton_ckpt_snapshot_tensors(store, c.mt, c.nm, NULL, 0, 0, text, st->iteration, BATON_CKPT_WAIT, err);
    if (!rc) rc = baton_ckpt_persist_sync(store, err);
    uint64_t step = 0;
    if (!rc) rc = baton_ckpt_latest(dir, out, cap, &step, err);
    baton_ckpt_store_close(store);
    free(text);
    race_ckpt_tensors_free(&c);
    if (have_agent) race_agent_free(&a);
    free(st);
    return rc;
}
