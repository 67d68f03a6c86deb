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
#include "race_internal.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (1u << 20)

/* ---------------------------------------------------------------- value helpers */

/* A number, or a string holding one (DeepRacer float()s its values). 1 found, 0 absent, < 0 bad. */
static int get_double(const cJSON *o, const char *key, const char *file, const char *field, double *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x) return 0;
    if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) {
        *v = x->valuedouble;
        return 1;
    }
    if (cJSON_IsString(x) && x->valuestring[0]) {
        char *end;
        errno = 0;
        double d = strtod(x->valuestring, &end);
        while (*end && isspace((unsigned char)*end)) end++;
        if (!errno && !*end && isfinite(d)) {
            *v = d;
            return 1;
        }
    }
    return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is not a number", file, field);
}

/* A whole number in [lo, hi] (a JSON number or a string of digits, as Python's int() takes). */
static int get_uint(const cJSON *o, const char *key, const char *file, uint64_t lo, uint64_t hi, uint64_t *v,
                    baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x) return 0;
    double d = NAN;
    if (cJSON_IsNumber(x)) {
        d = x->valuedouble;
    } else if (cJSON_IsString(x)) {
        const char *s = x->valuestring;
        while (isspace((unsigned char)*s)) s++;
        size_t n = strspn(s, "0123456789");
        const char *rest = s + n;
        while (isspace((unsigned char)*rest)) rest++;
        if (n >= 1 && n <= 15 && !*rest) d = strtod(s, NULL);
    }
    if (!(d >= 0 && d <= 9007199254740992.0 && d == floor(d)))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is not a whole number", file, key);
    if (d < (double)lo || d > (double)hi)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s %.0f is outside %llu..%llu", file, key, d,
                             (unsigned long long)lo, (unsigned long long)hi);
    *v = (uint64_t)d;
    return 1;
}

/* A string, lower-cased and trimmed into out (DeepRacer's .lower().strip()). */
static int get_word(const cJSON *o, const char *key, const char *file, char *out, size_t cap, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x) return 0;
    if (!cJSON_IsString(x)) return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is not a string", file, key);
    const char *s = x->valuestring;
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n >= cap) return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is too long (%zu bytes)", file, key, n);
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)s[i]);
    out[n] = 0;
    return 1;
}

static cJSON *parse_object(const char *name, const char *text, size_t len, baton_err *err)
{
    if (len > MAX_FILE_BYTES) {
        baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu bytes is too large for this file (at most %u)", name, len,
                      MAX_FILE_BYTES);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        baton_err_set(err, BATON_ERR_FORMAT, "%s: not valid JSON (near byte %zu)", name, at);
        return NULL;
    }
    while (end && (size_t)(end - text) < len && isspace((unsigned char)*end)) end++;
    if (end && (size_t)(end - text) < len && *end) {
        baton_err_set(err, BATON_ERR_FORMAT, "%s: text after the JSON object (byte %zu)", name, (size_t)(end - text));
        cJSON_Delete(j);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        baton_err_set(err, BATON_ERR_FORMAT, "%s: not a JSON object", name);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
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
#define SPEED_MIN 0.1
#define SPEED_MAX 4.0

void baton_race_meta_default(baton_race_meta *m)
{
    memset(m, 0, sizeof *m);
    static const double steer[5] = {-30, -15, 0, 15, 30}, speed[2] = {0.4, 0.8};
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 2; k++) m->actions[m->nactions++] = (baton_race_action){steer[i], speed[k]};
    m->action_type = BATON_RACE_DISCRETE;
    m->steer_low = -30, m->steer_high = 30, m->speed_low = 0.5, m->speed_high = 1;   /* the console's continuous default */
    m->obs = BATON_RACE_OBS_CAMERA;
    snprintf(m->version, sizeof m->version, "5");
}

static int check_steer(const char *file, const char *field, double v, baton_err *err)
{
    if (v >= -STEER_MAX && v <= STEER_MAX) return BATON_OK;
    return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s %g is outside -30..30 degrees", file, field, v);
}

static int check_speed(const char *file, const char *field, double v, baton_err *err)
{
    if (v >= SPEED_MIN && v <= SPEED_MAX) return BATON_OK;
    return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s %g is outside 0.1..4 m/s", file, field, v);
}

static int parse_discrete(const char *file, const cJSON *as, baton_race_meta *m, baton_err *err)
{
    if (!cJSON_IsArray(as))
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "%s: action_space must be a list of {steering_angle, speed} for action_space_type discrete",
                             file);
    int n = cJSON_GetArraySize(as);
    if (n == 0) return baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space is an empty list (no actions)", file);
    if (n > BATON_RACE_MAX_ACTIONS)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space has %d actions (at most %d)", file, n,
                             BATON_RACE_MAX_ACTIONS);
    m->nactions = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, as)
    {
        char f[64];
        size_t i = m->nactions;
        if (!cJSON_IsObject(a)) return baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space[%zu] is not an object", file, i);
        baton_race_action *act = &m->actions[i];
        int rc;
        snprintf(f, sizeof f, "action_space[%zu].steering_angle", i);
        if ((rc = get_double(a, "steering_angle", file, f, &act->steer_deg, err)) <= 0)
            return rc < 0 ? rc : baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is missing", file, f);
        if ((rc = check_steer(file, f, act->steer_deg, err))) return rc;
        snprintf(f, sizeof f, "action_space[%zu].speed", i);
        if ((rc = get_double(a, "speed", file, f, &act->speed_mps, err)) <= 0)
            return rc < 0 ? rc : baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is missing", file, f);
        if ((rc = check_speed(file, f, act->speed_mps, err))) return rc;
        m->nactions++;
    }
    return BATON_OK;
}

/* one {low, high} range of a continuous action space */
static int parse_range(const char *file, const cJSON *as, const char *key, double *lo, double *hi, baton_err *err)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(as, key);
    if (!cJSON_IsObject(r))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space.%s must be an object {low, high}", file, key);
    char f[64];
    int rc;
    snprintf(f, sizeof f, "action_space.%s.low", key);
    if ((rc = get_double(r, "low", file, f, lo, err)) <= 0)
        return rc < 0 ? rc : baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is missing", file, f);
    if ((rc = (!strcmp(key, "speed") ? check_speed : check_steer)(file, f, *lo, err))) return rc;
    snprintf(f, sizeof f, "action_space.%s.high", key);
    if ((rc = get_double(r, "high", file, f, hi, err)) <= 0)
        return rc < 0 ? rc : baton_err_set(err, BATON_ERR_FORMAT, "%s: %s is missing", file, f);
    if ((rc = (!strcmp(key, "speed") ? check_speed : check_steer)(file, f, *hi, err))) return rc;
    if (!(*lo < *hi))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space.%s: low %g is not below high %g", file, key, *lo,
                             *hi);
    return BATON_OK;
}

/* "sensor": exactly one camera-like input, which baton simulates as the front camera, or baton's
 * sensor vector; with the sensor vector, "LIDAR" too (its rays appended to the vector). */
static int parse_sensor(const char *file, const cJSON *j, baton_race_meta *m, baton_err *err)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "sensor");
    if (!s) return BATON_OK;   /* before simapp 2: ["observation"], the front camera */
    if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) == 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: sensor must be a non-empty list of sensor names", file);
    int cameras = 0, vectors = 0, lidars = 0, i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, s)
    {
        if (!cJSON_IsString(x)) return baton_err_set(err, BATON_ERR_FORMAT, "%s: sensor[%d] is not a string", file, i);
        const char *v = x->valuestring;
        if (!strcmp(v, "FRONT_FACING_CAMERA") || !strcmp(v, "observation")) cameras++;
        else if (!strcmp(v, "BATON_SENSOR_VECTOR")) vectors++;
        else if (!strcmp(v, "LIDAR")) lidars++;
        else if (!strcmp(v, "LEFT_CAMERA") || !strcmp(v, "STEREO_CAMERAS") ||
                 !strcmp(v, "SECTOR_LIDAR") || !strcmp(v, "DISCRETIZED_SECTOR_LIDAR") || !strcmp(v, "IMU"))
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: sensor[%d] %s is not simulated by baton (FRONT_FACING_CAMERA or BATON_SENSOR_VECTOR)",
                                 file, i, v);
        else
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: sensor[%d] '%.64s' is unknown (FRONT_FACING_CAMERA or BATON_SENSOR_VECTOR)", file, i,
                                 v);
        i++;
    }
    if (cameras + vectors != 1)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: sensor must name exactly one input (FRONT_FACING_CAMERA or "
                             "BATON_SENSOR_VECTOR), not %d", file, cameras + vectors);
    if (lidars > 1 || (lidars && !vectors))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: sensor LIDAR is simulated once, beside BATON_SENSOR_VECTOR "
                             "(not with the camera)", file);
    m->obs = vectors ? BATON_RACE_OBS_SENSOR : BATON_RACE_OBS_CAMERA;
    m->lidar = lidars;
    return BATON_OK;
}

/* neural_network, training_algorithm, version */
static int parse_model_keys(const char *file, const cJSON *j, baton_race_meta *m, baton_err *err)
{
    const cJSON *nn = cJSON_GetObjectItemCaseSensitive(j, "neural_network");
    if (nn) {
        if (!cJSON_IsString(nn)) return baton_err_set(err, BATON_ERR_FORMAT, "%s: neural_network is not a string", file);
        const char *v = nn->valuestring;
        if (strcmp(v, "DEEP_CONVOLUTIONAL_NETWORK_SHALLOW") && strcmp(v, "BATON_SENSOR_MLP"))
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "%s: neural_network '%.64s' is not built by baton (DEEP_CONVOLUTIONAL_NETWORK_SHALLOW "
                                 "for the camera, BATON_SENSOR_MLP for the sensor vector)", file, v);
    }
    char w[32];
    int rc = get_word(j, "training_algorithm", file, w, sizeof w, err);
    if (rc < 0) return rc;
    if (rc && strcmp(w, "clipped_ppo"))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: training_algorithm '%s' is not supported (clipped_ppo)", file, w);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "version");
    if (cJSON_IsString(v) && strlen(v->valuestring) < sizeof m->version)
        snprintf(m->version, sizeof m->version, "%s", v->valuestring);
    else if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && fabs(v->valuedouble) < 1e6)
        snprintf(m->version, sizeof m->version, "%g", v->valuedouble);
    else if (v)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: version is not a short string or a number", file);
    return BATON_OK;
}

int baton_race_meta_parse(const char *name, const char *text, size_t len, baton_race_meta *out, baton_err *err)
{
    cJSON *j = parse_object(name, text, len, err);
    if (!j) return BATON_ERR_FORMAT;
    baton_race_meta *m = malloc(sizeof *m);
    if (!m) {
        cJSON_Delete(j);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    }
    baton_race_meta_default(m);
    char type[32] = "discrete";
    int rc = get_word(j, "action_space_type", name, type, sizeof type, err);
    if (rc >= 0) rc = BATON_OK;
    if (!rc && strcmp(type, "discrete") && strcmp(type, "continuous"))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space_type '%s' is unknown (discrete or continuous)", name,
                           type);
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(j, "action_space");
    if (!rc && !as) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: action_space is missing (no actions defined)", name);
    if (!rc && !strcmp(type, "discrete")) {
        m->action_type = BATON_RACE_DISCRETE;
        rc = parse_discrete(name, as, m, err);
    } else if (!rc) {
        m->action_type = BATON_RACE_CONTINUOUS;
        if (!cJSON_IsObject(as))
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "%s: action_space must be {steering_angle: {low, high}, speed: {low, high}} for "
                               "action_space_type continuous", name);
        if (!rc) rc = parse_range(name, as, "steering_angle", &m->steer_low, &m->steer_high, err);
        if (!rc) rc = parse_range(name, as, "speed", &m->speed_low, &m->speed_high, err);
    }
    if (!rc) rc = parse_sensor(name, j, m, err);
    if (!rc) rc = parse_model_keys(name, j, m, err);
    if (!rc) memcpy(out, m, sizeof *m);
    free(m);
    cJSON_Delete(j);
    return rc;
}

int baton_race_meta_load(const char *path, baton_race_meta *m, baton_err *err)
{
    char *text;
    size_t len;
    int rc = load_file(path, &text, &len, err);
    if (rc) return rc;
    rc = baton_race_meta_parse(path, text, len, m, err);
    free(text);
    return rc;
}

/* numbers as the console writes them: integers without a fraction */
static cJSON *num(double v)
{
    return cJSON_CreateNumber(v);
}

char *baton_race_meta_format(const baton_race_meta *m)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    if (m->action_type == BATON_RACE_DISCRETE) {
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
    const char *sensor[2] = {m->obs == BATON_RACE_OBS_SENSOR ? "BATON_SENSOR_VECTOR" : "FRONT_FACING_CAMERA", "LIDAR"};
    cJSON_AddItemToObject(j, "sensor", cJSON_CreateStringArray(sensor, m->obs == BATON_RACE_OBS_SENSOR && m->lidar ? 2 : 1));
    cJSON_AddStringToObject(j, "neural_network",
                            m->obs == BATON_RACE_OBS_SENSOR ? "BATON_SENSOR_MLP" : "DEEP_CONVOLUTIONAL_NETWORK_SHALLOW");
    cJSON_AddStringToObject(j, "training_algorithm", "clipped_ppo");
    cJSON_AddStringToObject(j, "action_space_type", m->action_type == BATON_RACE_DISCRETE ? "discrete" : "continuous");
    cJSON_AddStringToObject(j, "version", m->version[0] ? m->version : "5");
    char *s = baton_json_print(j, 1);
    cJSON_Delete(j);
    return s;
}

/* ---------------------------------------------------------------- hyperparameters.json */

void baton_race_hyper_default(baton_race_hyper *h)
{
    memset(h, 0, sizeof *h);
    h->batch_size = 64;
    h->beta_entropy = 0.01;
    h->discount_factor = 0.999;
    h->loss_type = BATON_RACE_LOSS_HUBER;
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

/* a real-valued setting: present, finite, and within its range */
static int hyper_real(const cJSON *j, const char *file, const char *key, double lo, int lo_open, double hi, double *v,
                      baton_err *err)
{
    double d;
    int rc = get_double(j, key, file, key, &d, err);
    if (rc <= 0) return rc;
    if (!(lo_open ? d > lo : d >= lo) || !(d <= hi)) {
        if (!strcmp(key, "lr") && !(d > 0))
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s %g must be a positive number", file, key, d);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %s %g is outside %s%g..%g%s", file, key, d, lo_open ? "(" : "",
                             lo, hi, lo_open ? ", open below" : "");
    }
    *v = d;
    return BATON_OK;
}

static int hyper_uint(const cJSON *j, const char *file, const char *key, uint64_t lo, uint64_t hi, uint64_t *v,
                      baton_err *err)
{
    int rc = get_uint(j, key, file, lo, hi, v, err);
    return rc < 0 ? rc : BATON_OK;
}

static int parse_loss(const cJSON *j, const char *file, baton_race_hyper *h, baton_err *err)
{
    char w[48];
    int rc = get_word(j, "loss_type", file, w, sizeof w, err);
    if (rc <= 0) return rc;
    if (!strcmp(w, "huber")) h->loss_type = BATON_RACE_LOSS_HUBER;
    else if (!strcmp(w, "mean squared error") || !strcmp(w, "mean_squared_error") || !strcmp(w, "mse"))
        h->loss_type = BATON_RACE_LOSS_MSE;
    else
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: loss_type '%s' is unknown (huber or mean squared error)", file, w);
    return BATON_OK;
}

int baton_race_hyper_parse(const char *name, const char *text, size_t len, baton_race_hyper *out, baton_err *err)
{
    cJSON *j = parse_object(name, text, len, err);
    if (!j) return BATON_ERR_FORMAT;
    baton_race_hyper h;
    baton_race_hyper_default(&h);
    uint64_t bs = h.batch_size, ne = h.num_episodes_between_training, ep = h.num_epochs, ss = h.stack_size;
    int rc = hyper_uint(j, name, "batch_size", 1, 4096, &bs, err);
    if (!rc) rc = hyper_real(j, name, "beta_entropy", 0, 0, 1e3, &h.beta_entropy, err);
    if (!rc) rc = hyper_real(j, name, "discount_factor", 0, 1, 1, &h.discount_factor, err);
    if (!rc) rc = parse_loss(j, name, &h, err);
    if (!rc) rc = hyper_real(j, name, "lr", 0, 1, 10, &h.lr, err);
    if (!rc) rc = hyper_uint(j, name, "num_episodes_between_training", 1, 10000, &ne, err);
    if (!rc) rc = hyper_uint(j, name, "num_epochs", 1, 100, &ep, err);
    if (!rc) rc = hyper_uint(j, name, "stack_size", 1, 16, &ss, err);
    if (!rc) rc = hyper_uint(j, name, "term_cond_max_episodes", 1, UINT64_C(1) << 53, &h.term_cond_max_episodes, err);
    if (!rc) rc = hyper_real(j, name, "term_cond_avg_score", -1e300, 0, 1e300, &h.term_cond_avg_score, err);
    if (!rc) rc = hyper_real(j, name, "e_greedy_value", -1e300, 0, 1e300, &h.e_greedy_value, err);
    if (!rc) rc = hyper_uint(j, name, "epsilon_steps", 0, UINT64_C(1) << 53, &h.epsilon_steps, err);
    if (!rc) rc = hyper_real(j, name, "sac_alpha", -1e300, 0, 1e300, &h.sac_alpha, err);
    if (!rc && get_word(j, "exploration_type", name, h.exploration_type, sizeof h.exploration_type, err) < 0)
        rc = BATON_ERR_FORMAT;
    cJSON_Delete(j);
    if (rc) return rc;
    h.batch_size = (uint32_t)bs;
    h.num_episodes_between_training = (uint32_t)ne;
    h.num_epochs = (uint32_t)ep;
    h.stack_size = (uint32_t)ss;
    memcpy(out, &h, sizeof h);
    return BATON_OK;
}

int baton_race_hyper_load(const char *path, baton_race_hyper *h, baton_err *err)
{
    char *text;
    size_t len;
    int rc = load_file(path, &text, &len, err);
    if (rc) return rc;
    rc = baton_race_hyper_parse(path, text, len, h, err);
    free(text);
    return rc;
}

char *baton_race_hyper_format(const baton_race_hyper *h)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "batch_size", h->batch_size);
    cJSON_AddNumberToObject(j, "beta_entropy", h->beta_entropy);
    cJSON_AddNumberToObject(j, "discount_factor", h->discount_factor);
    cJSON_AddNumberToObject(j, "e_greedy_value", h->e_greedy_value);
    cJSON_AddNumberToObject(j, "epsilon_steps", (double)h->epsilon_steps);
    cJSON_AddStringToObject(j, "exploration_type", h->exploration_type);
    cJSON_AddStringToObject(j, "loss_type", h->loss_type == BATON_RACE_LOSS_MSE ? "mean squared error" : "huber");
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
