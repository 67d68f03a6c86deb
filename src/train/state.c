/* state.c — a checkpoint's state.json: its one writer (baton_train_state_format, what the trainer
 * commits) beside its one parser (baton_train_state_parse, what a resume and `baton eval` trust).
 * A field added to the file is added to both here, and to baton_train_state.
 *
 * The file, as written (field order fixed; seeds as decimal strings so any uint64 survives JSON):
 *   {"model", "step", "epoch", "cursor": {"seed", "epoch", "position"}, "dropout_rng": [4 hex],
 *    "schedule": {"kind": "cosine", "base_lr", "total_steps", "position"},
 *    "hyper": {"seed", "batch", "epochs", "steps_per_epoch", "optimizer": "sgd", "momentum",
 *              "nesterov", "weight_decay"},
 *    "normalisation": {"mean": [...], "std": [...]}, "input_shape": [h, w, c], "classes",
 *    "epoch_sums": {"loss_sum", "correct", "seen", "seconds"},
 *    "metrics": {"loss", "accuracy"[, "val_loss", "val_accuracy"]}, "baton_version"}
 *
 * Parser contract: the text is outside input (a file from disk or a bucket). It must be one JSON
 * object (nothing but white space after it) with:
 *   "model"         a string of 1..31 bytes
 *   "step", "epoch" non-negative integers
 *   "cursor"        {"seed": integer, "epoch": integer, "position": integer}; seed equals hyper.seed
 *   "hyper"         {"seed": integer, "batch": integer >= 1, ...}
 *   "dropout_rng"   4 strings of 1..16 hex digits, not all zero (xoshiro's forbidden state)
 *   "epoch_sums"    {"loss_sum": number >= 0, "correct": integer, "seen": integer >= correct,
 *                    "seconds": number >= 0}
 *   "metrics"       optional {"loss", "accuracy"[, "val_loss", "val_accuracy"]}: numbers, or null
 *                   for a value that was not finite (informational: NaN then)
 *   "normalisation" optional {"mean": [1..4 finite numbers], "std": [as many positive numbers]}: the
 *                   training data's per-channel statistics, which evaluation must normalise with
 *   "schedule"      optional {"base_lr": finite number > 0, "total_steps": integer}
 *   "hyper"         may also hold "epochs" and "steps_per_epoch" (integers >= 1), read when present
 *   "input_shape"   optional [h, w, c] (integers 1..10^6) with "classes" (integer >= 1): what the
 *                   model was built for
 * (checkpoints of older versions lack the optional fields: their has_* flags stay 0).
 * Integers are JSON numbers that are whole, non-negative and at most 2^53 (exact in a double), or
 * strings of decimal digits (any uint64; seeds are written that way). Every failure names the field.
 * Nothing is written to *st unless the whole text validates. */
#include "baton/train.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int get_u64(const cJSON *o, const char *obj, const char *key, uint64_t *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(x)) {
        double d = x->valuedouble;
        if (d >= 0 && d <= 9007199254740992.0 && d == floor(d)) {
            *v = (uint64_t)d;
            return BATON_OK;
        }
    } else if (cJSON_IsString(x)) {
        const char *s = x->valuestring;
        size_t n = strlen(s);
        if (n >= 1 && n <= 20 && strspn(s, "0123456789") == n) {
            char *end;
            errno = 0;
            unsigned long long u = strtoull(s, &end, 10);
            if (!errno && !*end) {
                *v = u;
                return BATON_OK;
            }
        }
    }
    return baton_err_set(err, BATON_ERR_FORMAT, "state.json: %s%s\"%s\" missing or not a non-negative integer",
                         obj ? obj : "", obj ? "." : "", key);
}

static int get_dbl(const cJSON *o, const char *obj, const char *key, int nonneg, double *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(x) && isfinite(x->valuedouble) && (!nonneg || x->valuedouble >= 0)) {
        *v = x->valuedouble;
        return BATON_OK;
    }
    return baton_err_set(err, BATON_ERR_FORMAT, "state.json: %s.\"%s\" missing or not a finite%s number", obj, key,
                         nonneg ? " non-negative" : "");
}

static int get_metric(const cJSON *o, const char *key, double *v, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNull(x)) {
        *v = NAN;
        return BATON_OK;
    }
    if (cJSON_IsNumber(x)) {
        *v = x->valuedouble;
        return BATON_OK;
    }
    return baton_err_set(err, BATON_ERR_FORMAT, "state.json: metrics.\"%s\" missing or not a number", key);
}

static const cJSON *get_obj(const cJSON *j, const char *key, baton_err *err)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsObject(o)) baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"%s\" missing or not an object", key);
    return cJSON_IsObject(o) ? o : NULL;
}

/* The required core: model, step, epoch, hyper.seed/batch, the cursor, the epoch's sums. */
static int parse_core(const cJSON *j, baton_train_state *st, baton_err *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsString(m) || !m->valuestring[0] || strlen(m->valuestring) >= sizeof st->model) {
        const char *hint = baton_ckpt_kind_hint(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "kind")));
        if (hint) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a baton train checkpoint: %s", hint);
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"model\" missing or not a model name");
    }
    snprintf(st->model, sizeof st->model, "%s", m->valuestring);
    const cJSON *h, *c, *ep;
    if (!(h = get_obj(j, "hyper", err)) || !(c = get_obj(j, "cursor", err)) || !(ep = get_obj(j, "epoch_sums", err)))
        return BATON_ERR_FORMAT;
    int rc;
    if ((rc = get_u64(j, NULL, "step", &st->step, err)) || (rc = get_u64(j, NULL, "epoch", &st->epoch, err)) ||
        (rc = get_u64(h, "hyper", "seed", &st->seed, err)) || (rc = get_u64(h, "hyper", "batch", &st->batch, err)) ||
        (rc = get_u64(c, "cursor", "seed", &st->cursor.seed, err)) ||
        (rc = get_u64(c, "cursor", "epoch", &st->cursor.epoch, err)) ||
        (rc = get_u64(c, "cursor", "position", &st->cursor.position, err)) ||
        (rc = get_u64(ep, "epoch_sums", "correct", &st->ep_correct, err)) ||
        (rc = get_u64(ep, "epoch_sums", "seen", &st->ep_seen, err)) ||
        (rc = get_dbl(ep, "epoch_sums", "loss_sum", 1, &st->ep_loss_sum, err)) ||
        (rc = get_dbl(ep, "epoch_sums", "seconds", 1, &st->ep_seconds, err)))
        return rc;
    if (st->batch < 1 || st->batch > UINT32_MAX)
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: hyper.\"batch\" is %llu, not 1..%u",
                             (unsigned long long)st->batch, UINT32_MAX);
    if (st->cursor.seed != st->seed)
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: cursor.\"seed\" %llu differs from hyper.\"seed\" %llu",
                             (unsigned long long)st->cursor.seed, (unsigned long long)st->seed);
    if (st->ep_correct > st->ep_seen)
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: epoch_sums.\"correct\" %llu exceeds \"seen\" %llu",
                             (unsigned long long)st->ep_correct, (unsigned long long)st->ep_seen);
    static const char *const counts[] = {"epochs", "steps_per_epoch"};
    for (int k = 0; k < 2; k++) {   /* optional (older versions lack them) */
        uint64_t *v = k ? &st->steps_per_epoch : &st->epochs;
        if (!cJSON_GetObjectItemCaseSensitive(h, counts[k])) continue;
        if ((rc = get_u64(h, "hyper", counts[k], v, err))) return rc;
        if (*v < 1) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: hyper.\"%s\" must be >= 1", counts[k]);
    }
    return BATON_OK;
}

static int parse_rng(const cJSON *j, baton_train_state *st, baton_err *err)
{
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(j, "dropout_rng");
    if (!cJSON_IsArray(rng) || cJSON_GetArraySize(rng) != 4)
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"dropout_rng\" missing or not 4 hex words");
    uint64_t any = 0;
    for (int i = 0; i < 4; i++) {
        const cJSON *x = cJSON_GetArrayItem(rng, i);
        const char *s = cJSON_IsString(x) ? x->valuestring : "";
        size_t n = strlen(s);
        if (n < 1 || n > 16 || strspn(s, "0123456789abcdefABCDEF") != n)
            return baton_err_set(err, BATON_ERR_FORMAT, "state.json: dropout_rng[%d] is not a hex word", i);
        st->rng[i] = strtoull(s, NULL, 16);
        any |= st->rng[i];
    }
    if (!any) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: dropout_rng is all zero (not a valid RNG state)");
    return BATON_OK;
}

/* schedule and input_shape: optional, validated when present */
static int parse_schedule_shape(const cJSON *j, baton_train_state *st, baton_err *err)
{
    int rc;
    const cJSON *sched = cJSON_GetObjectItemCaseSensitive(j, "schedule");
    if (sched) {
        if (!cJSON_IsObject(sched)) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"schedule\" is not an object");
        if ((rc = get_dbl(sched, "schedule", "base_lr", 1, &st->base_lr, err)) ||
            (rc = get_u64(sched, "schedule", "total_steps", &st->total_steps, err)))
            return rc;
        if (!(st->base_lr > 0)) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: schedule.\"base_lr\" must be positive");
        st->has_schedule = 1;
    }
    const cJSON *shp = cJSON_GetObjectItemCaseSensitive(j, "input_shape");
    if (!shp) return BATON_OK;
    uint64_t cl = 0;
    int ok = cJSON_IsArray(shp) && cJSON_GetArraySize(shp) == 3 && get_u64(j, NULL, "classes", &cl, NULL) == 0 &&
             cl >= 1 && cl <= UINT32_MAX;
    for (int k = 0; ok && k < 3; k++) {
        const cJSON *x = cJSON_GetArrayItem(shp, k);
        ok = cJSON_IsNumber(x) && x->valuedouble >= 1 && x->valuedouble <= 1e6 && x->valuedouble == floor(x->valuedouble);
        if (ok) st->input_shape[k] = (uint32_t)x->valuedouble;
    }
    if (!ok) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"input_shape\" is not [h, w, c] with \"classes\"");
    st->classes = (uint32_t)cl;
    return BATON_OK;
}

/* metrics and normalisation: optional */
static int parse_metrics_norm(const cJSON *j, baton_train_state *st, baton_err *err)
{
    int rc;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "metrics");
    if (mt) {
        if (!cJSON_IsObject(mt)) return baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"metrics\" is not an object");
        if ((rc = get_metric(mt, "loss", &st->loss, err)) || (rc = get_metric(mt, "accuracy", &st->accuracy, err)))
            return rc;
        st->has_metrics = 1;
        if (cJSON_GetObjectItemCaseSensitive(mt, "val_loss")) {
            if ((rc = get_metric(mt, "val_loss", &st->val_loss, err)) ||
                (rc = get_metric(mt, "val_accuracy", &st->val_accuracy, err)))
                return rc;
            st->has_val = 1;
        }
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "normalisation");
    if (!nm) return BATON_OK;
    const cJSON *mean = cJSON_GetObjectItemCaseSensitive(nm, "mean");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(nm, "std");
    const int n = cJSON_IsArray(mean) ? cJSON_GetArraySize(mean) : -1;
    if (!cJSON_IsObject(nm) || n < 1 || n > 4 || !cJSON_IsArray(sd) || cJSON_GetArraySize(sd) != n)
        return baton_err_set(err, BATON_ERR_FORMAT,
                             "state.json: \"normalisation\" is not {\"mean\": [1..4 numbers], \"std\": [as many]}");
    for (int k = 0; k < n; k++) {
        const cJSON *a = cJSON_GetArrayItem(mean, k), *b = cJSON_GetArrayItem(sd, k);
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !isfinite(a->valuedouble) || !(b->valuedouble > 0) ||
            !isfinite(b->valuedouble))
            return baton_err_set(err, BATON_ERR_FORMAT,
                                 "state.json: normalisation channel %d: mean must be finite and std positive", k);
        st->mean[k] = (float)a->valuedouble;
        st->std[k] = (float)b->valuedouble;
    }
    st->norm_channels = n;
    return BATON_OK;
}

int baton_train_state_parse(const char *text, size_t len, baton_train_state *out, baton_err *err)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        size_t off = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return baton_err_set(err, BATON_ERR_FORMAT, "state.json: not valid JSON (at offset %zu)", off);
    }
    baton_train_state st;
    memset(&st, 0, sizeof st);
    int rc = BATON_OK;
    for (const char *q = end; q < text + len && !rc; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
            rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: unexpected byte after the JSON at offset %zu",
                               (size_t)(q - text));
    if (!rc && !cJSON_IsObject(j)) rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a JSON object");
    if (!rc) rc = parse_core(j, &st, err);
    if (!rc) rc = parse_rng(j, &st, err);
    if (!rc) rc = parse_schedule_shape(j, &st, err);
    if (!rc) rc = parse_metrics_norm(j, &st, err);
    if (!rc) *out = st;
    cJSON_Delete(j);
    return rc;
}

/* ---------------------------------------------------------------- the writer */
/* A double as JSON that reads back bit-identical: the shortest of %.15g..%.17g that strtod turns
 * into the same double (cJSON's own printer settles for "nearly equal" at 15 digits, so a resumed
 * run's sums would drift in the last bits). Not finite: null. */
static void add_num(cJSON *o, const char *key, double v)
{
    if (!isfinite(v)) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    char b[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(b, sizeof b, "%.*g", digits, v);
        if (strtod(b, NULL) == v) break;
    }
    cJSON_AddRawToObject(o, key, b);
}

static void add_u64_string(cJSON *o, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%" PRIu64, v);
    cJSON_AddStringToObject(o, key, b);
}

char *baton_train_state_format(const baton_train_state *s)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    char buf[24];
    cJSON_AddStringToObject(j, "model", s->model);
    add_num(j, "step", (double)s->step);
    add_num(j, "epoch", (double)s->epoch);
    cJSON *c = cJSON_AddObjectToObject(j, "cursor");
    add_u64_string(c, "seed", s->cursor.seed);
    add_num(c, "epoch", (double)s->cursor.epoch);
    add_num(c, "position", (double)s->cursor.position);
    cJSON *r = cJSON_AddArrayToObject(j, "dropout_rng");
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%016" PRIx64, s->rng[i]);
        cJSON_AddItemToArray(r, cJSON_CreateString(buf));
    }
    cJSON *sc = cJSON_AddObjectToObject(j, "schedule");
    cJSON_AddStringToObject(sc, "kind", "cosine");
    add_num(sc, "base_lr", s->base_lr);
    add_num(sc, "total_steps", (double)s->total_steps);
    add_num(sc, "position", (double)s->step);
    cJSON *h = cJSON_AddObjectToObject(j, "hyper");
    add_u64_string(h, "seed", s->seed);
    add_num(h, "batch", (double)s->batch);
    add_num(h, "epochs", (double)s->epochs);
    add_num(h, "steps_per_epoch", (double)s->steps_per_epoch);
    cJSON_AddStringToObject(h, "optimizer", "sgd");
    add_num(h, "momentum", s->momentum);
    cJSON_AddBoolToObject(h, "nesterov", s->nesterov);
    add_num(h, "weight_decay", s->weight_decay);
    cJSON *nm = s->norm_channels > 0 ? cJSON_AddObjectToObject(j, "normalisation") : NULL;   /* optional */
    cJSON *mean = nm ? cJSON_AddArrayToObject(nm, "mean") : NULL, *std = nm ? cJSON_AddArrayToObject(nm, "std") : NULL;
    for (int k = 0; nm && k < s->norm_channels && k < 4; k++) {
        cJSON_AddItemToArray(mean, cJSON_CreateNumber(s->mean[k]));   /* floats: 15 digits are exact */
        cJSON_AddItemToArray(std, cJSON_CreateNumber(s->std[k]));
    }
    cJSON *sh = cJSON_AddArrayToObject(j, "input_shape");
    for (int k = 0; k < 3; k++) cJSON_AddItemToArray(sh, cJSON_CreateNumber(s->input_shape[k]));
    add_num(j, "classes", s->classes);
    cJSON *ep = cJSON_AddObjectToObject(j, "epoch_sums");
    add_num(ep, "loss_sum", s->ep_loss_sum);
    add_num(ep, "correct", (double)s->ep_correct);
    add_num(ep, "seen", (double)s->ep_seen);
    add_num(ep, "seconds", s->ep_seconds);
    cJSON *m = cJSON_AddObjectToObject(j, "metrics");
    add_num(m, "loss", s->loss);
    add_num(m, "accuracy", s->accuracy);
    if (s->has_val) {
        add_num(m, "val_loss", s->val_loss);
        add_num(m, "val_accuracy", s->val_accuracy);
    }
    cJSON_AddStringToObject(j, "baton_version", BATON_VERSION);
    char *out = baton_json_print(j, 0);
    cJSON_Delete(j);
    return out;
}
