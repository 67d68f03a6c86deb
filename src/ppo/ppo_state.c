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
 *    "opponents": ["<checkpoint>", ...]   (only when trained against models: 1 to 3),
 *    "model_metadata": {...as the console writes it}, "hyperparameters": {...likewise},
 *    "contents": "full" | "policy"}
 * "contents" says what the folder's tensors are: "full" (the policy, the value network and their
 * Adam states: a run that resumes) or "policy" (the policy network alone: what evaluation needs,
 * as `race submit --server` sends it); absent in checkpoints written before it, which are full.
 *
 * Parser contract: the text is outside input. One JSON object whose "kind" is "race-ppo" (a
 * checkpoint of `baton train` is refused as such), with every field above: integers whole and
 * non-negative (at most 2^53, or decimal strings), numbers finite, rng states 1..16 hex digits and
 * not all zero, strings that fit, the car's limits within the simulator's ranges, and the two
 * embedded files valid as their own parsers check them, the objects as the simulator checks them.
 * Every failure names the field; *s is written only when the whole text validates. */
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
    cJSON *j = text ? baton_jr_value(text, strlen(text)) : NULL;
    free(text);
    if (j) cJSON_AddItemToObject(o, k, j);
}

static void add_objects(cJSON *j, const baton_race_objects_opts *o)
{
    if (!baton_race_objects_any(o)) return;
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
    cJSON_AddStringToObject(j, "reward_scale", s->reward_scale == BATON_PPO_SCALE_STEP ? "step" : "progress");
    if (s->precision == BATON_PPO_BF16) cJSON_AddStringToObject(j, "precision", "bf16");   /* f32 when absent */
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
    if (s->nopponents > 0) {   /* head-to-model only: another run's file is as it was */
        cJSON *a = cJSON_AddArrayToObject(j, "opponents");
        for (int i = 0; a && i < s->nopponents; i++) cJSON_AddItemToArray(a, cJSON_CreateString(s->opponents[i]));
    }
    add_file(j, "model_metadata", ppo_meta_format(&s->meta));
    add_file(j, "hyperparameters", ppo_hyper_format(&s->hyper));
    cJSON_AddStringToObject(j, "contents", s->policy_only ? "policy" : "full");
    char *out = baton_json_print(j, 0);
    cJSON_Delete(j);
    return out;
}

/* ---------------------------------------------------------------- parsing */

#define U53 9007199254740992ull   /* counts: exact in a double */

/* the car: every limit within the simulator's ranges (baton_race_sim_new) */
static void get_car(baton_jr *r, const cJSON *j, baton_race_car *c)
{
    baton_race_car_default(c);
    baton_jr_obj(r, j, "car");
    baton_jr_dbl(r, j, "car.min_speed_mps", 0, 100, &c->min_speed_mps);
    baton_jr_dbl(r, j, "car.max_speed_mps", c->min_speed_mps, 100, &c->max_speed_mps);
    baton_jr_dbl(r, j, "car.max_steer_deg", 1e-6, 88, &c->max_steer_deg);
    baton_jr_dbl(r, j, "car.accel_mps2", 0, 1e3, &c->accel_mps2);
    baton_jr_dbl(r, j, "car.brake_mps2", 0, 1e3, &c->brake_mps2);
    baton_jr_dbl(r, j, "car.steer_rate_dps", 0, 1e5, &c->steer_rate_dps);
    baton_jr_dbl(r, j, "car.grip_mps2", 0, 1e3, &c->grip_mps2);
    baton_jr_bool(r, j, "car.friction_circle", &c->friction_circle);
}

/* the objects (none when the field is absent), as the simulator checks them */
static void get_objects(baton_jr *r, const cJSON *j, baton_race_objects_opts *ob)
{
    baton_race_objects_opts_default(ob);
    if (!baton_jr_get(r, j, "objects")) return;
    uint64_t boxes = 0, bots = 0;
    baton_jr_obj(r, j, "objects");
    baton_jr_u64(r, j, "objects.boxes", 0, BATON_RACE_MAX_OBJECTS, &boxes);
    baton_jr_bool(r, j, "objects.randomize", &ob->randomize);
    const cJSON *a = baton_jr_get(r, j, "objects.positions"), *p;
    if (!r->rc && (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > BATON_RACE_MAX_OBJECTS))
        baton_jr_fail(r, "objects.positions", "is missing or not a list of at most %d [progress, lane] pairs",
                      BATON_RACE_MAX_OBJECTS);
    const cJSON *list = r->rc ? NULL : a;
    cJSON_ArrayForEach(p, list)
    {
        const cJSON *pr = cJSON_GetArrayItem(p, 0), *ln = cJSON_GetArrayItem(p, 1);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(pr) || !cJSON_IsNumber(ln)) {
            baton_jr_fail(r, "objects.positions", "holds an entry that is not a [progress, lane] pair");
            break;
        }
        ob->pos_progress[ob->npos] = pr->valuedouble;
        ob->pos_lane[ob->npos++] = ln->valuedouble;
    }
    baton_jr_dbl(r, j, "objects.min_gap_m", 0, 100, &ob->min_gap_m);
    baton_jr_u64(r, j, "objects.bots", 0, BATON_RACE_MAX_BOTS, &bots);
    baton_jr_dbl(r, j, "objects.bot_speed_mps", 0, 4, &ob->bot_speed_mps);
    baton_jr_bool(r, j, "objects.lane_change", &ob->lane_change);
    baton_jr_dbl(r, j, "objects.lane_change_min_s", 0, 3600, &ob->lane_change_min_s);
    baton_jr_dbl(r, j, "objects.lane_change_max_s", 0, 3600, &ob->lane_change_max_s);
    baton_jr_dbl(r, j, "objects.lane_change_m", 0, 100, &ob->lane_change_m);
    baton_jr_dbl(r, j, "objects.bot_gap_m", 0, 100, &ob->bot_gap_m);
    baton_jr_dbl(r, j, "objects.start_clear_m", 0, 100, &ob->start_clear_m);
    if (r->rc) return;
    ob->boxes = (int)boxes, ob->bots = (int)bots;
    if (baton_race_objects_check(ob, r->err)) {   /* the simulator's message, as the file's error */
        char m[sizeof r->err->msg];
        snprintf(m, sizeof m, "%s", r->err->msg);
        baton_jr_fail(r, "objects", "%s", m);
    } else if (!baton_race_objects_any(ob)) {
        baton_jr_fail(r, "objects", "names no box and no bot");
    }
}

/* an embedded file, checked by its own parser */
static void get_file(baton_jr *r, const cJSON *j, const char *k, race_run_state *s)
{
    const cJSON *o = baton_jr_obj(r, j, k);
    if (r->rc) return;
    char *text = baton_json_print(o, 0);
    if (!text) {
        r->rc = baton_err_set(r->err, BATON_ERR_NOMEM, "state.json: out of memory");
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "state.json %s", k);
    r->rc = !strcmp(k, "model_metadata") ? ppo_meta_parse(name, text, strlen(text), &s->meta, r->err)
                                         : ppo_hyper_parse(name, text, strlen(text), &s->hyper, r->err);
    free(text);
}

static int parse_fields(const cJSON *j, race_run_state *s, baton_err *err)
{
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "kind"));
    if (!kind || strcmp(kind, "race-ppo")) {
        /* say what it is where that is known (the Python module's, baton train's), never guess */
        const char *what = kind ? baton_ckpt_kind_hint(kind)
                           : cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "model"))
                               ? "a checkpoint of baton train: evaluate it with baton eval"
                               : NULL;
        if (what) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a race model's checkpoint: %s", what);
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a race model's checkpoint (its kind is %s%s%s, "
                             "not \"race-ppo\")", kind ? "\"" : "", kind ? kind : "missing", kind ? "\"" : "");
    }
    baton_jr r;
    baton_jr_init(&r, "state.json", err);
    r.strings = BATON_JR_DIGITS;   /* seeds: any uint64 as decimal digits */
    uint64_t step, envs, max_steps;
    char scale[16], contents[16] = "full";
    baton_jr_u64(&r, j, "step", 0, U53, &step);
    baton_jr_u64(&r, j, "iteration", 0, U53, &s->iteration);
    baton_jr_u64(&r, j, "episodes", 0, U53, &s->episodes);
    baton_jr_u64(&r, j, "sim_steps", 0, U53, &s->sim_steps);
    baton_jr_u64(&r, j, "ticks", 0, U53, &s->ticks);
    baton_jr_dbl(&r, j, "seconds", 0, 1e12, &s->seconds);
    baton_jr_obj(&r, j, "rng");
    baton_jr_hex64(&r, j, "rng.act", 4, s->act_rng.s);
    baton_jr_hex64(&r, j, "rng.shuffle", 4, s->shuffle_rng.s);
    baton_jr_u64(&r, j, "optim_steps", 0, U53, &s->optim_steps);
    baton_jr_dbl(&r, j, "best_lap_s", 0, 1e9, &s->best_lap_s);
    baton_jr_u64(&r, j, "laps", 0, U53, &s->laps);
    baton_jr_dbl(&r, j, "last_reward", -1e300, 1e300, &s->last_reward);
    baton_jr_str(&r, j, "track", s->track, sizeof s->track);
    baton_jr_str(&r, j, "reward", s->reward, sizeof s->reward);
    baton_jr_str(&r, j, "reward_scale", scale, sizeof scale);
    baton_jr_u64(&r, j, "seed", 0, UINT64_MAX, &s->seed);
    baton_jr_u64(&r, j, "envs", 1, 100000, &envs);
    baton_jr_u64(&r, j, "max_steps", 1, 1000000, &max_steps);
    get_car(&r, j, &s->car);
    get_objects(&r, j, &s->objects);
    const cJSON *opp = baton_jr_get(&r, j, "opponents");
    s->nopponents = 0;
    if (opp && (!cJSON_IsArray(opp) || cJSON_GetArraySize(opp) < 1 || cJSON_GetArraySize(opp) > BATON_RACE_MAX_CARS - 1))
        baton_jr_fail(&r, "opponents", "is not a list of 1 to %d checkpoints", BATON_RACE_MAX_CARS - 1);
    for (const cJSON *x = opp && cJSON_IsArray(opp) ? opp->child : NULL; x && !r.rc && s->nopponents < BATON_RACE_MAX_CARS - 1;
         x = x->next) {
        if (!cJSON_IsString(x) || !x->valuestring[0] || strlen(x->valuestring) >= sizeof s->opponents[0])
            baton_jr_fail(&r, "opponents", "holds an entry that is not a checkpoint's path (1 to %zu bytes)",
                          sizeof s->opponents[0] - 1);
        else
            snprintf(s->opponents[s->nopponents++], sizeof s->opponents[0], "%s", x->valuestring);
    }
    get_file(&r, j, "model_metadata", s);
    get_file(&r, j, "hyperparameters", s);
    if (baton_jr_get(&r, j, "contents")) baton_jr_str(&r, j, "contents", contents, sizeof contents);
    char precision[8] = "f32";
    if (baton_jr_get(&r, j, "precision")) baton_jr_str(&r, j, "precision", precision, sizeof precision);
    if (r.rc) return r.rc;
    if (step != s->iteration) return baton_jr_fail(&r, "step", "differs from iteration");
    if (!strcmp(scale, "progress")) s->reward_scale = BATON_PPO_SCALE_PROGRESS;
    else if (!strcmp(scale, "step")) s->reward_scale = BATON_PPO_SCALE_STEP;
    else return baton_jr_fail(&r, "reward_scale", "is neither progress nor step");
    if (!strcmp(precision, "f32")) s->precision = BATON_PPO_F32;
    else if (!strcmp(precision, "bf16")) s->precision = BATON_PPO_BF16;
    else return baton_jr_fail(&r, "precision", "is neither f32 nor bf16");
    if (strcmp(contents, "full") && strcmp(contents, "policy"))
        return baton_jr_fail(&r, "contents", "is neither \"full\" nor \"policy\"");
    s->policy_only = !strcmp(contents, "policy");
    s->envs = (uint32_t)envs;
    s->max_steps = (uint32_t)max_steps;
    return BATON_OK;
}

int race_state_parse(const char *text, size_t len, race_run_state *out, baton_err *err)
{
    baton_jr r;
    baton_jr_init(&r, "state.json", err);
    r.strings = BATON_JR_DIGITS;   /* seeds: any uint64 as decimal digits */
    cJSON *j = baton_jr_parse(&r, text, len);
    if (!j) return r.rc;
    race_run_state *s = calloc(1, sizeof *s);
    int rc = s ? parse_fields(j, s, err) : baton_err_set(err, BATON_ERR_NOMEM, "state.json: out of memory");
    if (!rc) memcpy(out, s, sizeof *s);
    free(s);
    cJSON_Delete(j);
    return rc;
}
