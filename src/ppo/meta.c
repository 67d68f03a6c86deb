/* meta.c — DeepRacer's two files of a model: model_metadata.json (the action space, the sensor,
 * the network, the algorithm) and hyperparameters.json (PPO's settings), parsed as the simulator
 * parses them (deepracer-simapp markov/boto/s3/files/model_metadata.py and the training preset:
 * a key left out takes its default, strings are lower-cased and trimmed where DeepRacer does so,
 * numbers may be written as numbers or as numeric strings, keys baton does not use are ignored)
 * and written back in the console's format.
 *
 * Contract: the text is outside input. It must be one JSON object; every value baton uses is
 * checked (types, ranges, the action list's length) and a failure names the file and the field,
 * with the value and what was expected. *m / *h are written only when the whole file validates.
 * The formatters write what the parsers read back to equal structs. */
#include "ppo_internal.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (1u << 20)

/* ---------------------------------------------------------------- value helpers */
/* Both files are read with baton_jr (util.h) with numeric strings on: DeepRacer float()s and
 * int()s its values. A key left out keeps its default: the optional reads below look first. */

/* An optional string at key, lower-cased and trimmed into out (DeepRacer's .lower().strip()):
 * 1 when present, 0 when absent or after a failure. */
static int get_word(baton_jr *r, const cJSON *o, const char *key, char *out, size_t cap)
{
    const cJSON *x = baton_jr_get(r, o, key);
    if (!x) return 0;
    if (!cJSON_IsString(x)) return baton_jr_fail(r, key, "is not a string"), 0;
    const char *s = x->valuestring;
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n >= cap) return baton_jr_fail(r, key, "is too long (%zu bytes)", n), 0;
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)s[i]);
    out[n] = 0;
    return 1;
}

/* the file as one JSON object, at most MAX_FILE_BYTES */
static cJSON *parse_object(baton_jr *r, const char *text, size_t len)
{
    if (len > MAX_FILE_BYTES) {
        baton_jr_fail(r, NULL, "%zu bytes is too large for this file (at most %u)", len, MAX_FILE_BYTES);
        return NULL;
    }
    return baton_jr_parse(r, text, len);
}

static int load_file(const char *path, char **text, size_t *len, baton_err *err)
{
    uint8_t *b = NULL;
    int rc = baton_file_read_all(path, MAX_FILE_BYTES, &b, len, err);
    *text = (char *)b;
    return rc;
}

/* ---------------------------------------------------------------- model_metadata.json */

#define STEER_MAX 30.0
#define SPEED_MIN BATON_RACE_MIN_SPEED_MPS
#define SPEED_MAX BATON_RACE_MAX_SPEED_MPS

void ppo_meta_default(baton_ppo_meta *m)
{
    memset(m, 0, sizeof *m);
    static const double steer[5] = {-30, -15, 0, 15, 30}, speed[2] = {0.4, 0.8};
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 2; k++) m->actions[m->nactions++] = (baton_ppo_action){steer[i], speed[k]};
    m->action_type = BATON_PPO_DISCRETE;
    m->steer_low = -30, m->steer_high = 30, m->speed_low = 0.5, m->speed_high = 1;   /* the console's continuous default */
    m->obs = BATON_PPO_OBS_CAMERA;
    snprintf(m->version, sizeof m->version, "5");
}

/* an angle or a speed already read at path: within DeepRacer's limits */
static void check_steer(baton_jr *r, const char *path, double v)
{
    if (!(v >= -STEER_MAX && v <= STEER_MAX)) baton_jr_fail(r, path, "%g is outside -30..30 degrees", v);
}

static void check_speed(baton_jr *r, const char *path, double v)
{
    if (!(v >= SPEED_MIN && v <= SPEED_MAX)) baton_jr_fail(r, path, "%g is outside 0.1..4 m/s", v);
}

static void parse_discrete(baton_jr *r, const cJSON *as, baton_ppo_meta *m)
{
    if (!cJSON_IsArray(as)) {
        baton_jr_fail(r, "action_space", "must be a list of {steering_angle, speed} for action_space_type discrete");
        return;
    }
    int n = cJSON_GetArraySize(as);
    if (n == 0) baton_jr_fail(r, "action_space", "is an empty list (no actions)");
    if (n > BATON_PPO_MAX_ACTIONS) baton_jr_fail(r, "action_space", "has %d actions (at most %d)", n, BATON_PPO_MAX_ACTIONS);
    m->nactions = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, as)
    {
        if (r->rc) break;
        baton_ppo_action *act = &m->actions[m->nactions];
        baton_jr_at(r, "action_space[%zu]", m->nactions);
        if (!cJSON_IsObject(a)) baton_jr_fail(r, NULL, "is not an object");
        baton_jr_dbl(r, a, "steering_angle", -HUGE_VAL, HUGE_VAL, &act->steer_deg);
        if (!r->rc) check_steer(r, "steering_angle", act->steer_deg);
        baton_jr_dbl(r, a, "speed", -HUGE_VAL, HUGE_VAL, &act->speed_mps);
        if (!r->rc) check_speed(r, "speed", act->speed_mps);
        m->nactions++;
    }
    baton_jr_at(r, "%s", "");
}

/* one {low, high} range of a continuous action space */
static void parse_range(baton_jr *r, const cJSON *as, const char *key, double *lo, double *hi)
{
    baton_jr_at(r, "action_space.%s", key);
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(as, key))) baton_jr_fail(r, NULL, "must be an object {low, high}");
    const cJSON *o = baton_jr_get(r, as, key);
    void (*check)(baton_jr *, const char *, double) = !strcmp(key, "speed") ? check_speed : check_steer;
    baton_jr_dbl(r, o, "low", -HUGE_VAL, HUGE_VAL, lo);
    if (!r->rc) check(r, "low", *lo);
    baton_jr_dbl(r, o, "high", -HUGE_VAL, HUGE_VAL, hi);
    if (!r->rc) check(r, "high", *hi);
    if (!r->rc && !(*lo < *hi)) baton_jr_fail(r, NULL, "low %g is not below high %g", *lo, *hi);
    baton_jr_at(r, "%s", "");
}

/* "sensor": exactly one camera-like input, which baton simulates as the front camera, or baton's
 * sensor vector; with the sensor vector, "LIDAR" too (its rays appended to the vector). */
static void parse_sensor(baton_jr *r, const cJSON *j, baton_ppo_meta *m)
{
    const cJSON *s = baton_jr_get(r, j, "sensor");
    if (!s) return;   /* before simapp 2: ["observation"], the front camera */
    if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) == 0) {
        baton_jr_fail(r, "sensor", "must be a non-empty list of sensor names");
        return;
    }
    int cameras = 0, vectors = 0, lidars = 0, i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, s)
    {
        const char *v = cJSON_IsString(x) ? x->valuestring : NULL;
        baton_jr_at(r, "sensor[%d]", i++);
        if (!v) baton_jr_fail(r, NULL, "is not a string");
        else if (!strcmp(v, "FRONT_FACING_CAMERA") || !strcmp(v, "observation")) cameras++;
        else if (!strcmp(v, "BATON_SENSOR_VECTOR")) vectors++;
        else if (!strcmp(v, "LIDAR")) lidars++;
        else if (!strcmp(v, "LEFT_CAMERA") || !strcmp(v, "STEREO_CAMERAS") ||
                 !strcmp(v, "SECTOR_LIDAR") || !strcmp(v, "DISCRETIZED_SECTOR_LIDAR") || !strcmp(v, "IMU"))
            baton_jr_fail(r, NULL, "%s is not simulated by baton (FRONT_FACING_CAMERA or BATON_SENSOR_VECTOR)", v);
        else
            baton_jr_fail(r, NULL, "'%.64s' is unknown (FRONT_FACING_CAMERA or BATON_SENSOR_VECTOR)", v);
    }
    baton_jr_at(r, "%s", "");
    if (cameras + vectors != 1)
        baton_jr_fail(r, "sensor", "must name exactly one input (FRONT_FACING_CAMERA or BATON_SENSOR_VECTOR), not %d",
                      cameras + vectors);
    if (lidars > 1 || (lidars && !vectors))
        baton_jr_fail(r, "sensor", "LIDAR is simulated once, beside BATON_SENSOR_VECTOR (not with the camera)");
    m->obs = vectors ? BATON_PPO_OBS_SENSOR : BATON_PPO_OBS_CAMERA;
    m->lidar = lidars;
}

/* neural_network, training_algorithm, version */
static void parse_model_keys(baton_jr *r, const cJSON *j, baton_ppo_meta *m)
{
    const cJSON *nn = baton_jr_get(r, j, "neural_network");
    if (nn && !cJSON_IsString(nn)) baton_jr_fail(r, "neural_network", "is not a string");
    else if (nn && strcmp(nn->valuestring, "DEEP_CONVOLUTIONAL_NETWORK_SHALLOW") && strcmp(nn->valuestring, "BATON_SENSOR_MLP"))
        baton_jr_fail(r, "neural_network", "'%.64s' is not built by baton (DEEP_CONVOLUTIONAL_NETWORK_SHALLOW for the "
                      "camera, BATON_SENSOR_MLP for the sensor vector)", nn->valuestring);
    char w[32];
    if (get_word(r, j, "training_algorithm", w, sizeof w) && strcmp(w, "clipped_ppo"))
        baton_jr_fail(r, "training_algorithm", "'%s' is not supported (clipped_ppo)", w);
    const cJSON *v = baton_jr_get(r, j, "version");
    if (cJSON_IsString(v) && strlen(v->valuestring) < sizeof m->version)
        snprintf(m->version, sizeof m->version, "%s", v->valuestring);
    else if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && fabs(v->valuedouble) < 1e6)
        snprintf(m->version, sizeof m->version, "%g", v->valuedouble);
    else if (v)
        baton_jr_fail(r, "version", "is not a short string or a number");
}

int ppo_meta_parse(const char *name, const char *text, size_t len, baton_ppo_meta *out, baton_err *err)
{
    baton_jr r;
    baton_jr_init(&r, name, err);
    r.strings = BATON_JR_NUMERIC;
    cJSON *j = parse_object(&r, text, len);
    if (!j) return r.rc;
    baton_ppo_meta *m = malloc(sizeof *m);
    if (!m) {
        cJSON_Delete(j);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    }
    ppo_meta_default(m);
    char type[32] = "discrete";
    get_word(&r, j, "action_space_type", type, sizeof type);
    if (!r.rc && strcmp(type, "discrete") && strcmp(type, "continuous"))
        baton_jr_fail(&r, "action_space_type", "'%s' is unknown (discrete or continuous)", type);
    const cJSON *as = baton_jr_get(&r, j, "action_space");
    if (!as) baton_jr_fail(&r, "action_space", "is missing (no actions defined)");
    if (!strcmp(type, "discrete")) {
        m->action_type = BATON_PPO_DISCRETE;
        parse_discrete(&r, as, m);
    } else {
        m->action_type = BATON_PPO_CONTINUOUS;
        if (!cJSON_IsObject(as))
            baton_jr_fail(&r, "action_space", "must be {steering_angle: {low, high}, speed: {low, high}} for "
                          "action_space_type continuous");
        parse_range(&r, as, "steering_angle", &m->steer_low, &m->steer_high);
        parse_range(&r, as, "speed", &m->speed_low, &m->speed_high);
    }
    parse_sensor(&r, j, m);
    parse_model_keys(&r, j, m);
    if (!r.rc) memcpy(out, m, sizeof *m);
    free(m);
    cJSON_Delete(j);
    return r.rc;
}

int ppo_meta_load(const char *path, baton_ppo_meta *m, baton_err *err)
{
    char *text;
    size_t len;
    int rc = load_file(path, &text, &len, err);
    if (rc) return rc;
    rc = ppo_meta_parse(path, text, len, m, err);
    free(text);
    return rc;
}

/* numbers as the console writes them: integers without a fraction */
static cJSON *num(double v)
{
    return cJSON_CreateNumber(v);
}

char *ppo_meta_format(const baton_ppo_meta *m)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    if (m->action_type == BATON_PPO_DISCRETE) {
        cJSON *a = cJSON_AddArrayToObject(j, "action_space");
        for (size_t i = 0; a && i < m->nactions; i++) {
            cJSON *o = cJSON_CreateObject();
            if (!o) break;
            cJSON_AddItemToObject(o, "steering_angle", num(m->actions[i].steer_deg));
            cJSON_AddItemToObject(o, "speed", num(m->actions[i].speed_mps));
            cJSON_AddItemToObject(o, "index", num((double)i));
            cJSON_AddItemToArray(a, o);
        }
    } else {
        cJSON *a = cJSON_AddObjectToObject(j, "action_space"), *st = cJSON_CreateObject(), *sp = cJSON_CreateObject();
        if (a && st && sp) {
            cJSON_AddItemToObject(st, "high", num(m->steer_high));
            cJSON_AddItemToObject(st, "low", num(m->steer_low));
            cJSON_AddItemToObject(sp, "high", num(m->speed_high));
            cJSON_AddItemToObject(sp, "low", num(m->speed_low));
            cJSON_AddItemToObject(a, "steering_angle", st);
            cJSON_AddItemToObject(a, "speed", sp);
        } else {
            cJSON_Delete(st);
            cJSON_Delete(sp);
        }
    }
    const char *sensor[2] = {m->obs == BATON_PPO_OBS_SENSOR ? "BATON_SENSOR_VECTOR" : "FRONT_FACING_CAMERA", "LIDAR"};
    cJSON_AddItemToObject(j, "sensor", cJSON_CreateStringArray(sensor, m->obs == BATON_PPO_OBS_SENSOR && m->lidar ? 2 : 1));
    cJSON_AddStringToObject(j, "neural_network",
                            m->obs == BATON_PPO_OBS_SENSOR ? "BATON_SENSOR_MLP" : "DEEP_CONVOLUTIONAL_NETWORK_SHALLOW");
    cJSON_AddStringToObject(j, "training_algorithm", "clipped_ppo");
    cJSON_AddStringToObject(j, "action_space_type", m->action_type == BATON_PPO_DISCRETE ? "discrete" : "continuous");
    cJSON_AddStringToObject(j, "version", m->version[0] ? m->version : "5");
    char *s = baton_json_print(j, 1);
    cJSON_Delete(j);
    return s;
}

/* ---------------------------------------------------------------- hyperparameters.json */

void ppo_hyper_default(baton_ppo_hyper *h)
{
    memset(h, 0, sizeof *h);
    h->batch_size = 64;
    h->beta_entropy = 0.01;
    h->discount_factor = 0.999;
    h->loss_type = BATON_PPO_LOSS_HUBER;
    h->lr = 0.0003;
    h->num_episodes_between_training = 20;
    h->num_epochs = 3;
    h->stack_size = 1;
    h->term_cond_max_episodes = 100000;
    h->term_cond_avg_score = 100000;
    snprintf(h->exploration_type, sizeof h->exploration_type, "categorical");
    h->e_greedy_value = 0.05;
    h->epsilon_steps = 10000;
    h->sac_alpha = 0.2;
}

/* an optional real-valued setting: finite and within its range (lo_open: above lo) */
static void hyper_real(baton_jr *r, const cJSON *j, const char *key, double lo, int lo_open, double hi, double *v)
{
    double d;
    if (!baton_jr_get(r, j, key) || baton_jr_dbl(r, j, key, -HUGE_VAL, HUGE_VAL, &d)) return;
    if (!strcmp(key, "lr") && !(d > 0)) baton_jr_fail(r, key, "%g must be a positive number", d);
    else if (!(lo_open ? d > lo : d >= lo) || !(d <= hi))
        baton_jr_fail(r, key, "%g is outside %s%g..%g%s", d, lo_open ? "(" : "", lo, hi, lo_open ? ", open below" : "");
    else *v = d;
}

/* an optional whole number in lo..hi */
static void hyper_uint(baton_jr *r, const cJSON *j, const char *key, uint64_t lo, uint64_t hi, uint64_t *v)
{
    if (baton_jr_get(r, j, key)) baton_jr_u64(r, j, key, lo, hi, v);
}

static void parse_loss(baton_jr *r, const cJSON *j, baton_ppo_hyper *h)
{
    char w[48];
    if (!get_word(r, j, "loss_type", w, sizeof w)) return;
    if (!strcmp(w, "huber")) h->loss_type = BATON_PPO_LOSS_HUBER;
    else if (!strcmp(w, "mean squared error") || !strcmp(w, "mean_squared_error") || !strcmp(w, "mse"))
        h->loss_type = BATON_PPO_LOSS_MSE;
    else baton_jr_fail(r, "loss_type", "'%s' is unknown (huber or mean squared error)", w);
}

int ppo_hyper_parse(const char *name, const char *text, size_t len, baton_ppo_hyper *out, baton_err *err)
{
    baton_jr r;
    baton_jr_init(&r, name, err);
    r.strings = BATON_JR_NUMERIC;
    cJSON *j = parse_object(&r, text, len);
    if (!j) return r.rc;
    baton_ppo_hyper h;
    ppo_hyper_default(&h);
    uint64_t bs = h.batch_size, ne = h.num_episodes_between_training, ep = h.num_epochs, ss = h.stack_size;
    hyper_uint(&r, j, "batch_size", 1, 4096, &bs);
    hyper_real(&r, j, "beta_entropy", 0, 0, 1e3, &h.beta_entropy);
    hyper_real(&r, j, "discount_factor", 0, 1, 1, &h.discount_factor);
    parse_loss(&r, j, &h);
    hyper_real(&r, j, "lr", 0, 1, 10, &h.lr);
    hyper_uint(&r, j, "num_episodes_between_training", 1, 10000, &ne);
    hyper_uint(&r, j, "num_epochs", 1, 100, &ep);
    hyper_uint(&r, j, "stack_size", 1, 16, &ss);
    hyper_uint(&r, j, "term_cond_max_episodes", 1, UINT64_C(1) << 53, &h.term_cond_max_episodes);
    hyper_real(&r, j, "term_cond_avg_score", -1e300, 0, 1e300, &h.term_cond_avg_score);
    hyper_real(&r, j, "e_greedy_value", -1e300, 0, 1e300, &h.e_greedy_value);
    hyper_uint(&r, j, "epsilon_steps", 0, UINT64_C(1) << 53, &h.epsilon_steps);
    hyper_real(&r, j, "sac_alpha", -1e300, 0, 1e300, &h.sac_alpha);
    get_word(&r, j, "exploration_type", h.exploration_type, sizeof h.exploration_type);
    cJSON_Delete(j);
    if (r.rc) return r.rc;
    h.batch_size = (uint32_t)bs;
    h.num_episodes_between_training = (uint32_t)ne;
    h.num_epochs = (uint32_t)ep;
    h.stack_size = (uint32_t)ss;
    memcpy(out, &h, sizeof h);
    return BATON_OK;
}

int ppo_hyper_load(const char *path, baton_ppo_hyper *h, baton_err *err)
{
    char *text;
    size_t len;
    int rc = load_file(path, &text, &len, err);
    if (rc) return rc;
    rc = ppo_hyper_parse(path, text, len, h, err);
    free(text);
    return rc;
}

char *ppo_hyper_format(const baton_ppo_hyper *h)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "batch_size", h->batch_size);
    cJSON_AddNumberToObject(j, "beta_entropy", h->beta_entropy);
    cJSON_AddNumberToObject(j, "discount_factor", h->discount_factor);
    cJSON_AddNumberToObject(j, "e_greedy_value", h->e_greedy_value);
    cJSON_AddNumberToObject(j, "epsilon_steps", (double)h->epsilon_steps);
    cJSON_AddStringToObject(j, "exploration_type", h->exploration_type);
    cJSON_AddStringToObject(j, "loss_type", h->loss_type == BATON_PPO_LOSS_MSE ? "mean squared error" : "huber");
    cJSON_AddNumberToObject(j, "lr", h->lr);
    cJSON_AddNumberToObject(j, "num_episodes_between_training", h->num_episodes_between_training);
    cJSON_AddNumberToObject(j, "num_epochs", h->num_epochs);
    cJSON_AddNumberToObject(j, "stack_size", h->stack_size);
    cJSON_AddNumberToObject(j, "term_cond_avg_score", h->term_cond_avg_score);
    cJSON_AddNumberToObject(j, "term_cond_max_episodes", (double)h->term_cond_max_episodes);
    cJSON_AddNumberToObject(j, "sac_alpha", h->sac_alpha);
    char *s = baton_json_print(j, 1);
    cJSON_Delete(j);
    return s;
}
