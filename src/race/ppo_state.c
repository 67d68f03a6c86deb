/* ppo_state.c — state.json of a `baton race train` checkpoint: its writer (what a checkpoint
 * commits between iterations) beside its parser (what a resume, `race eval` and `race drive
 * --policy` trust). A field added to the file is added to both here, and to race_run_state.
 *
 * The file, as written:
 *   {"kind": "race-ppo", "step": <iteration>, "iteration", "episodes", "sim_steps", "ticks",
 *    "seconds", "rng": {"act": [4 hex], "shuffle": [4 hex]}, "optim_steps",
 *    "best_lap_s", "laps", "last_reward",
 *    "track", "reward", "reward_scale": "progress"|"step", "seed": "<decimal>", "envs", "max_steps",
 *    "car": {"min_speed_mps", "max_speed_mps", "max_steer_deg", "accel_mps2", "brake_mps2",
 *            "steer_rate_dps", "grip_mps2", "friction_circle": true|false},
 *    "objects": {"boxes", "randomize", "positions": [[progress, lane], ...], "min_gap_m", "bots",
 *                "bot_speed_mps", "lane_change", "lane_change_min_s", "lane_change_max_s",
 *                "lane_change_m", "bot_gap_m", "start_clear_m"}   (only with objects: a time
 *                trial's file is as it was, and one without it is a time trial's),
 *    "model_metadata": {...as the console writes it}, "hyperparameters": {...likewise}}
 *
 * Parser contract: the text is outside input. One JSON object whose "kind" is "race-ppo" (a
 * checkpoint of `baton train` is refused as such), with every field above: integers whole and
 * non-negative (at most 2^53, or decimal strings), numbers finite, rng states 1..16 hex digits and
 * not all zero, strings that fit, the car's limits within the simulator's ranges, and the two
 * embedded files valid as their own parsers check them, the objects as the simulator checks them. Every
 * failure names the field; *s is
 * written only when the whole text validates. */
#include "ppo_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void add_u64(cJSON *o, const char *k, uint64_t v) { cJSON_AddNumberToObject(o, k, (double)v); }

static cJSON *rng_json(const baton_rng *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < 4; i++) {
        char h[20];
        snprintf(h, sizeof h, "%016" PRIx64, r->s[i]);
        cJSON_AddItemToArray(a, cJSON_CreateString(h));
    }
    return a;
}

/* an embedded file: the formatter's text parsed back into a subtree */
static void add_file(cJSON *o, const char *k, char *text)
{
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (j) cJSON_AddItemToObject(o, k, j);
}

static void add_objects(cJSON *j, const baton_race_objects_opts *o)
{
    if (!race_objects_any(o)) return;
    cJSON *x = cJSON_AddObjectToObject(j, "objects"), *pos = x ? cJSON_AddArrayToObject(x, "positions") : NULL;
    if (!pos) return;
    cJSON_AddNumberToObject(x, "boxes", o->boxes);
    cJSON_AddBoolToObject(x, "randomize", o->randomize);
    for (int i = 0; i < o->npos; i++) {
        double pl[2] = {o->pos_progress[i], o->pos_lane[i]};
        cJSON_AddItemToArray(pos, cJSON_CreateDoubleArray(pl, 2));
    }
    cJSON_AddNumberToObject(x, "min_gap_m", o->min_gap_m);
    cJSON_AddNumberToObject(x, "bots", o->bots);
    cJSON_AddNumberToObject(x, "bot_speed_mps", o->bot_speed_mps);
    cJSON_AddBoolToObject(x, "lane_change", o->lane_change);
    cJSON_AddNumberToObject(x, "lane_change_min_s", o->lane_change_min_s);
    cJSON_AddNumberToObject(x, "lane_change_max_s", o->lane_change_max_s);
    cJSON_AddNumberToObject(x, "lane_change_m", o->lane_change_m);
    cJSON_AddNumberToObject(x, "bot_gap_m", o->bot_gap_m);
    cJSON_AddNumberToObject(x, "start_clear_m", o->start_clear_m);
}

char *race_state_format(const race_run_state *s)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "kind", "race-ppo");
    add_u64(j, "step", s->iteration);
    add_u64(j, "iteration", s->iteration);
    add_u64(j, "episodes", s->episodes);
    add_u64(j, "sim_steps", s->sim_steps);
    add_u64(j, "ticks", s->ticks);
    cJSON_AddNumberToObject(j, "seconds", s->seconds);
    cJSON *rng = cJSON_AddObjectToObject(j, "rng");
    if (rng) {
        cJSON_AddItemToObject(rng, "act", rng_json(&s->act_rng));
        cJSON_AddItemToObject(rng, "shuffle", rng_json(&s->shuffle_rng));
    }
    add_u64(j, "optim_steps", s->optim_steps);
    cJSON_AddNumberToObject(j, "best_lap_s", s->best_lap_s);
    add_u64(j, "laps", s->laps);
    cJSON_AddNumberToObject(j, "last_reward", s->last_reward);
    cJSON_AddStringToObject(j, "track", s->track);
    cJSON_AddStringToObject(j, "reward", s->reward);
    cJSON_AddStringToObject(j, "reward_scale", s->reward_scale == BATON_RACE_SCALE_STEP ? "step" : "progress");
    char seed[24];
    snprintf(seed, sizeof seed, "%" PRIu64, s->seed);
    cJSON_AddStringToObject(j, "seed", seed);
    add_u64(j, "envs", s->envs);
    add_u64(j, "max_steps", s->max_steps);
    cJSON *car = cJSON_AddObjectToObject(j, "car");
    if (car) {
        cJSON_AddNumberToObject(car, "min_speed_mps", s->car.min_speed_mps);
        cJSON_AddNumberToObject(car, "max_speed_mps", s->car.max_speed_mps);
        cJSON_AddNumberToObject(car, "max_steer_deg", s->car.max_steer_deg);
        cJSON_AddNumberToObject(car, "accel_mps2", s->car.accel_mps2);
        cJSON_AddNumberToObject(car, "brake_mps2", s->car.brake_mps2);
        cJSON_AddNumberToObject(car, "steer_rate_dps", s->car.steer_rate_dps);
        cJSON_AddNumberToObject(car, "grip_mps2", s->car.grip_mps2);
        cJSON_AddBoolToObject(car, "friction_circle", s->car.friction_circle);
    }
    add_objects(j, &s->objects);
    add_file(j, "model_metadata", baton_race_meta_format(&s->meta));
    add_file(j, "hyperparameters", baton_race_hyper_format(&s->hyper));
    char *out = baton_json_print(j, 0);
    cJSON_Delete(j);
    return out;
}

/* ---------------------------------------------------------------- parsing */

static int bad(baton_err *err, const char *field, const char *what)
{
    return baton_err_set(err, BATON_ERR_FORMAT, "state.json: %s %s", field, what);
}

static int get_u64(const cJSON *o, const char *k, uint64_t *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= 9007199254740992.0 &&
        x->valuedouble == floor(x->valuedouble)) {
        *v = (uint64_t)x->valuedouble;
        return BATON_OK;
    }
    if (cJSON_IsString(x)) {
        size_t n = strlen(x->valuestring);
        char *end;
        errno = 0;
        unsigned long long u = n >= 1 && n <= 20 && strspn(x->valuestring, "0123456789") == n
                                   ? strtoull(x->valuestring, &end, 10) : 0;
        if (n >= 1 && n <= 20 && strspn(x->valuestring, "0123456789") == n && !errno) {
            *v = u;
            return BATON_OK;
        }
    }
    return bad(err, k, "is missing or not a non-negative integer");
}

static int get_dbl(const cJSON *o, const char *k, double lo, double hi, double *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNumber(x) && isfinite(x->valuedouble) && x->valuedouble >= lo && x->valuedouble <= hi) {
        *v = x->valuedouble;
        return BATON_OK;
    }
    return bad(err, k, "is missing or not a number in range");
}

static int get_str(const cJSON *o, const char *k, char *out, size_t cap, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsString(x) && x->valuestring[0] && strlen(x->valuestring) < cap) {
        snprintf(out, cap, "%s", x->valuestring);
        return BATON_OK;
    }
    return bad(err, k, "is missing, empty or too long");
}

static int get_rng(const cJSON *o, const char *k, baton_rng *r, baton_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 4) return bad(err, k, "is not a list of 4 hex words");
    uint64_t any = 0;
    for (int i = 0; i < 4; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i);
        size_t n = cJSON_IsString(x) ? strlen(x->valuestring) : 0;
        if (n < 1 || n > 16 || strspn(x->valuestring, "0123456789abcdefABCDEF") != n)
            return bad(err, k, "holds a word that is not 1..16 hex digits");
        r->s[i] = strtoull(x->valuestring, NULL, 16);
        any |= r->s[i];
    }
    return any ? BATON_OK : bad(err, k, "is all zero (not a generator's state)");
}

/* the car: every limit within the simulator's ranges (baton_race_sim_new) */
static int get_car(const cJSON *j, baton_race_car *c, baton_err *err)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "car");
    if (!cJSON_IsObject(o)) return bad(err, "car", "is missing or not an object");
    baton_race_car_default(c);
    int rc;
    if ((rc = get_dbl(o, "min_speed_mps", 0, 100, &c->min_speed_mps, err)) ||
        (rc = get_dbl(o, "max_speed_mps", c->min_speed_mps, 100, &c->max_speed_mps, err)) ||
        (rc = get_dbl(o, "max_steer_deg", 1e-6, 88, &c->max_steer_deg, err)) ||
        (rc = get_dbl(o, "accel_mps2", 0, 1e3, &c->accel_mps2, err)) ||
        (rc = get_dbl(o, "brake_mps2", 0, 1e3, &c->brake_mps2, err)) ||
        (rc = get_dbl(o, "steer_rate_dps", 0, 1e5, &c->steer_rate_dps, err)) ||
        (rc = get_dbl(o, "grip_mps2", 0, 1e3, &c->grip_mps2, err)))
        return baton_err_prefix(err, "car");
    const cJSON *fc = cJSON_GetObjectItemCaseSensitive(o, "friction_circle");
    if (!cJSON_IsBool(fc)) return bad(err, "car.friction_circle", "is missing or not true/false");
    c->friction_circle = cJSON_IsTrue(fc);
    return BATON_OK;
}

static int get_bool(const cJSON *o, const char *k, int *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsBool(x)) return bad(err, k, "is missing or not true/false");
    *v = cJSON_IsTrue(x);
    return BATON_OK;
}

static int get_positions(const cJSON *o, baton_race_objects_opts *ob, baton_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "positions"), *p;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > BATON_RACE_MAX_OBJECTS)
        return bad(err, "positions", "is missing or not a list of at most 16 [progress, lane] pairs");
    cJSON_ArrayForEach(p, a)
    {
        const cJSON *pr = cJSON_GetArrayItem(p, 0), *ln = cJSON_GetArrayItem(p, 1);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(pr) || !cJSON_IsNumber(ln))
            return bad(err, "positions", "holds an entry that is not a [progress, lane] pair");
        ob->pos_progress[ob->npos] = pr->valuedouble;
        ob->pos_lane[ob->npos++] = ln->valuedouble;
    }
    return BATON_OK;
}

/* the objects (none when the field is absent), as the simulator checks them */
static int get_objects(const cJSON *j, baton_race_objects_opts *ob, baton_err *err)
{
    baton_race_objects_opts_default(ob);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "objects");
    if (!o) return BATON_OK;
    if (!cJSON_IsObject(o)) return bad(err, "objects", "is not an object");
    uint64_t boxes, bots;
    int rc;
    if ((rc = get_u64(o, "boxes", &boxes, err)) || (rc = get_bool(o, "randomize", &ob->randomize, err)) ||
        (rc = get_positions(o, ob, err)) || (rc = get_dbl(o, "min_gap_m", 0, 100, &ob->min_gap_m, err)) ||
        (rc = get_u64(o, "bots", &bots, err)) || (rc = get_dbl(o, "bot_speed_mps", 0, 4, &ob->bot_speed_mps, err)) ||
        (rc = get_bool(o, "lane_change", &ob->lane_change, err)) ||
        (rc = get_dbl(o, "lane_change_min_s", 0, 3600, &ob->lane_change_min_s, err)) ||
        (rc = get_dbl(o, "lane_change_max_s", 0, 3600, &ob->lane_change_max_s, err)) ||
        (rc = get_dbl(o, "lane_change_m", 0, 100, &ob->lane_change_m, err)) ||
        (rc = get_dbl(o, "bot_gap_m", 0, 100, &ob->bot_gap_m, err)) ||
        (rc = get_dbl(o, "start_clear_m", 0, 100, &ob->start_clear_m, err)))
        return baton_err_prefix(err, "objects");
    if (boxes > BATON_RACE_MAX_OBJECTS || bots > BATON_RACE_MAX_BOTS)
        return bad(err, "objects", "has more boxes or bots than the simulator takes");
    ob->boxes = (int)boxes, ob->bots = (int)bots;
    if (race_objects_check(ob, err)) {   /* the simulator's message, as the file's error */
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: %s", m);
    }
    return race_objects_any(ob) ? BATON_OK : bad(err, "objects", "names no box and no bot");
}

/* an embedded file, checked by its own parser */
static int get_file(const cJSON *j, const char *k, race_run_state *s, baton_err *err)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, k);
    if (!cJSON_IsObject(o)) return bad(err, k, "is missing or not an object");
    char *text = baton_json_print(o, 0);
    if (!text) return baton_err_set(err, BATON_ERR_NOMEM, "state.json: out of memory");
    char name[64];
    snprintf(name, sizeof name, "state.json %s", k);
    int rc = !strcmp(k, "model_metadata") ? baton_race_meta_parse(name, text, strlen(text), &s->meta, err)
                                          : baton_race_hyper_parse(name, text, strlen(text), &s->hyper, err);
    free(text);
    return rc;
}

static int parse_fields(const cJSON *j, race_run_state *s, baton_err *err)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "race-ppo"))
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a race model's checkpoint (kind is not "
                             "\"race-ppo\"; a `baton train` checkpoint?)");
    uint64_t step, envs, max_steps;
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(j, "rng");
    if (!cJSON_IsObject(rng)) return bad(err, "rng", "is missing or not an object");
    char scale[16], seed[24];
    int rc;
    if ((rc = get_u64(j, "step", &step, err)) || (rc = get_u64(j, "iteration", &s->iteration, err)) ||
        (rc = get_u64(j, "episodes", &s->episodes, err)) || (rc = get_u64(j, "sim_steps", &s->sim_steps, err)) ||
        (rc = get_u64(j, "ticks", &s->ticks, err)) || (rc = get_dbl(j, "seconds", 0, 1e12, &s->seconds, err)) ||
        (rc = get_rng(rng, "act", &s->act_rng, err)) || (rc = get_rng(rng, "shuffle", &s->shuffle_rng, err)) ||
        (rc = get_u64(j, "optim_steps", &s->optim_steps, err)) ||
        (rc = get_dbl(j, "best_lap_s", 0, 1e9, &s->best_lap_s, err)) || (rc = get_u64(j, "laps", &s->laps, err)) ||
        (rc = get_dbl(j, "last_reward", -1e300, 1e300, &s->last_reward, err)) ||
        (rc = get_str(j, "track", s->track, sizeof s->track, err)) ||
        (rc = get_str(j, "reward", s->reward, sizeof s->reward, err)) ||
        (rc = get_str(j, "reward_scale", scale, sizeof scale, err)) || (rc = get_str(j, "seed", seed, sizeof seed, err)) ||
        (rc = get_u64(j, "envs", &envs, err)) || (rc = get_u64(j, "max_steps", &max_steps, err)) ||
        (rc = get_car(j, &s->car, err)) || (rc = get_objects(j, &s->objects, err)) ||
        (rc = get_file(j, "model_metadata", s, err)) ||
        (rc = get_file(j, "hyperparameters", s, err)))
        return rc;
    if (step != s->iteration) return bad(err, "step", "differs from iteration");
    if (!strcmp(scale, "progress")) s->reward_scale = BATON_RACE_SCALE_PROGRESS;
    else if (!strcmp(scale, "step")) s->reward_scale = BATON_RACE_SCALE_STEP;
    else return bad(err, "reward_scale", "is neither progress nor step");
    size_t n = strlen(seed);
    if (n > 20 || strspn(seed, "0123456789") != n) return bad(err, "seed", "is not a decimal number");
    errno = 0;
    s->seed = strtoull(seed, NULL, 10);
    if (errno) return bad(err, "seed", "is out of range");
    if (envs < 1 || envs > 100000) return bad(err, "envs", "is outside 1..100000");
    if (max_steps < 1 || max_steps > 1000000) return bad(err, "max_steps", "is outside 1..1000000");
    s->envs = (uint32_t)envs;
    s->max_steps = (uint32_t)max_steps;
    return BATON_OK;
}

int race_state_parse(const char *text, size_t len, race_run_state *out, baton_err *err)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a JSON object");
    }
    race_run_state *s = calloc(1, sizeof *s);
    int rc = s ? parse_fields(j, s, err) : baton_err_set(err, BATON_ERR_NOMEM, "state.json: out of memory");
    if (!rc) memcpy(out, s, sizeof *s);
    free(s);
    cJSON_Delete(j);
    return rc;
}
