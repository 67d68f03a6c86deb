/* ppo_ckpt.c — a race model's checkpoint tensors: the policy's and the value network's tensors
 * named "policy.<name>" and "value.<name>" (the networks' own state_dict names), their Adam states
 * "policy.<name>.exp_avg", ".exp_avg_sq", likewise; the shadow copy the trainer checkpoints from
 * (taken between iterations, so a save asked for in the middle of one holds the state at its
 * start); loading them back by name; and finding a checkpoint with its state.
 *
 * Contract: the lists and the shadow are allocated once (race_ckpt_tensors_new); a load matches
 * every tensor by name, dtype and shape and copies nothing until all of them match. */
#include "ppo_internal.h"

#include "baton/ckpt.h"

#include <stdlib.h>
#include <string.h>

static size_t model_count(const baton_nn_model *m) { return baton_nn_model_ntensors(m); }

int race_ckpt_tensors_new(race_ckpt_tensors *c, const race_agent *a, const baton_nn_optim *opi,
                          const baton_nn_optim *ovf, baton_err *err)
{
    memset(c, 0, sizeof *c);
    c->nm = model_count(a->pi) + model_count(a->vf);
    c->no = baton_nn_optim_ntensors(opi) + baton_nn_optim_ntensors(ovf);
    c->mt = calloc(c->nm, sizeof *c->mt);
    c->ot = calloc(c->no ? c->no : 1, sizeof *c->ot);
    c->names = calloc(c->nm + c->no, sizeof *c->names);
    if (!c->mt || !c->ot || !c->names) goto nomem;
    size_t k = 0, bytes = 0;
    for (int net = 0; net < 2; net++) {
        const baton_nn_model *m = net ? a->vf : a->pi;
        for (size_t i = 0; i < model_count(m); i++, k++) {
            baton_nn_model_tensor(m, i, &c->mt[k]);
            snprintf(c->names[k], sizeof c->names[0], "%s.%s", net ? "value" : "policy", c->mt[k].name);
            c->mt[k].name = c->names[k];
            bytes += c->mt[k].numel * (c->mt[k].dtype == BATON_NN_I64 ? 8 : 4);
        }
    }
    size_t q = 0;
    for (int net = 0; net < 2; net++) {
        const baton_nn_optim *o = net ? ovf : opi;
        for (size_t i = 0; i < baton_nn_optim_ntensors(o); i++, q++) {
            baton_nn_optim_tensor(o, i, &c->ot[q]);
            snprintf(c->names[c->nm + q], sizeof c->names[0], "%s.%s", net ? "value" : "policy", c->ot[q].name);
            c->ot[q].name = c->names[c->nm + q];
            bytes += c->ot[q].numel * 4;
        }
    }
    c->shadow_bytes = bytes;
    if (!(c->shadow = malloc(bytes ? bytes : 1))) goto nomem;
    /* the lists point into the shadow: what a snapshot copies is always the shadow */
    uint8_t *p = c->shadow;
    for (size_t i = 0; i < c->nm; i++) {
        c->mt[i].data = p;
        c->mt[i].grad = NULL;
        p += c->mt[i].numel * (c->mt[i].dtype == BATON_NN_I64 ? 8 : 4);
    }
    for (size_t i = 0; i < c->no; i++) {
        c->ot[i].data = p;
        c->ot[i].grad = NULL;
        p += c->ot[i].numel * 4;
    }
    race_ckpt_tensors_take(c, a, opi, ovf);
    return BATON_OK;
nomem:
    race_ckpt_tensors_free(c);
    return baton_err_set(err, BATON_ERR_NOMEM, "race checkpoint: out of memory for the tensor lists");
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

static const baton_st_tensor *find(const baton_st_header *h, const char *name)
{
    for (size_t i = 0; i < h->ntensors; i++)
        if (!strcmp(h->tensors[i].name, name)) return &h->tensors[i];
    return NULL;
}

/* match (phase 0) or copy (phase 1) one tensor of the file */
static int match(const char *file, const baton_st_header *h, const uint8_t *data, const char *name,
                 const baton_nn_tensor *t, int phase, baton_err *err)
{
    const baton_st_tensor *s = find(h, name);
    if (!s) return baton_err_set(err, BATON_ERR_FORMAT, "%s: tensor %s is missing", file, name);
    int same = s->dtype == t->dtype && s->ndim == t->ndim && s->numel == t->numel;
    for (int d = 0; same && d < t->ndim; d++) same = s->shape[d] == t->shape[d];
    if (!same)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: tensor %s has another dtype or shape than this model's (%zu "
                             "elements expected)", file, name, t->numel);
    if (phase) memcpy(t->data, data + h->data_start + s->begin, t->numel * (t->dtype == BATON_NN_I64 ? 8 : 4));
    return BATON_OK;
}

static int load_model_file(const char *dir, race_agent *a, baton_err *err)
{
    char path[4200];
    int rc = baton_path_join(path, sizeof path, dir, "model.safetensors", err);
    baton_st_header h = {0};
    uint8_t *data = NULL;
    if (!rc) rc = baton_st_read_file(path, &h, &data, err);
    for (int phase = 0; !rc && phase < 2; phase++)
        for (int net = 0; !rc && net < 2; net++) {
            const baton_nn_model *m = net ? a->vf : a->pi;
            for (size_t i = 0; !rc && i < model_count(m); i++) {
                baton_nn_tensor t;
                baton_nn_model_tensor(m, i, &t);
                char name[128];
                snprintf(name, sizeof name, "%s.%s", net ? "value" : "policy", t.name);
                rc = match(path, &h, data, name, &t, phase, err);
            }
        }
    baton_st_header_free(&h);
    free(data);
    return rc;
}

static int load_optim_file(const char *dir, baton_nn_optim *opi, baton_nn_optim *ovf, uint64_t *steps, baton_err *err)
{
    char path[4200];
    int rc = baton_path_join(path, sizeof path, dir, "optim.safetensors", err);
    baton_st_header h = {0};
    uint8_t *data = NULL;
    if (!rc) rc = baton_st_read_file(path, &h, &data, err);
    for (int phase = 0; !rc && phase < 2; phase++)
        for (int net = 0; !rc && net < 2; net++) {
            baton_nn_optim *o = net ? ovf : opi;
            for (size_t i = 0; !rc && i < baton_nn_optim_ntensors(o); i++) {
                baton_nn_tensor t;
                baton_nn_optim_tensor(o, i, &t);
                char name[160];
                snprintf(name, sizeof name, "%s.%s", net ? "value" : "policy", t.name);
                rc = match(path, &h, data, name, &t, phase, err);
            }
        }
    *steps = 0;
    for (size_t i = 0; !rc && i < h.nmeta; i++)
        if (!strcmp(h.meta_keys[i], "steps")) *steps = strtoull(h.meta_vals[i], NULL, 10);
    baton_st_header_free(&h);
    free(data);
    return rc;
}

int race_ckpt_load(const char *dir, race_agent *a, baton_nn_optim *opi, baton_nn_optim *ovf, uint64_t *optim_steps,
                   baton_err *err)
{
    int rc = load_model_file(dir, a, err);
    if (!rc && opi && ovf) {
        uint64_t steps = 0;
        rc = load_optim_file(dir, opi, ovf, &steps, err);
        if (!rc) {
            baton_nn_optim_set_steps(opi, steps);
            baton_nn_optim_set_steps(ovf, steps);
            if (optim_steps) *optim_steps = steps;
        }
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
    if (!rc && (rc = race_ckpt_load(path, a, NULL, NULL, NULL, err))) race_agent_free(a);
    return rc;
}
