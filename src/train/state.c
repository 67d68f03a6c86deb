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
 *   "augment"       optional {"crop": "none"|"pad"|"random-resized"|"center", "size": integer 0..4096,
 *                   "scale": [2 numbers in (0, 1]], "ratio": [2 positive numbers], "flip": boolean}
 *   "precision"     optional "f32" | "bf16": the arithmetic of the run's convolutions and linear
 *                   layers (written for bf16 only; the tensors are f32 either way)
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

#define U53 9007199254740992ull   /* counts: exact in a double */

/* metrics.KEY: a number, or null for one that was not finite (NaN then) */
static void get_metric(baton_jr *r, const cJSON *j, const char *path, double *v)
{
    const cJSON *x = baton_jr_get(r, j, path);
    if (cJSON_IsNull(x)) *v = NAN;
    else if (cJSON_IsNumber(x)) *v = x->valuedouble;
    else baton_jr_fail(r, path, "is missing or not a number");
}

/* The required core: model, step, epoch, hyper.seed/batch, the cursor, the epoch's sums. */
static void parse_core(baton_jr *r, const cJSON *j, baton_train_state *st)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsString(m)) {
        const char *hint = baton_ckpt_kind_hint(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "kind")));
        if (hint) baton_jr_fail(r, NULL, "not a baton train checkpoint: %s", hint);
    }
    baton_jr_str(r, j, "model", st->model, sizeof st->model);
    baton_jr_obj(r, j, "hyper");
    baton_jr_obj(r, j, "cursor");
    baton_jr_obj(r, j, "epoch_sums");
    baton_jr_u64(r, j, "step", 0, U53, &st->step);
    baton_jr_u64(r, j, "epoch", 0, U53, &st->epoch);
    baton_jr_u64(r, j, "hyper.seed", 0, UINT64_MAX, &st->seed);
    baton_jr_u64(r, j, "hyper.batch", 1, UINT32_MAX, &st->batch);
    baton_jr_u64(r, j, "cursor.seed", 0, UINT64_MAX, &st->cursor.seed);
    baton_jr_u64(r, j, "cursor.epoch", 0, U53, &st->cursor.epoch);
    baton_jr_u64(r, j, "cursor.position", 0, U53, &st->cursor.position);
    baton_jr_u64(r, j, "epoch_sums.correct", 0, U53, &st->ep_correct);
    baton_jr_u64(r, j, "epoch_sums.seen", 0, U53, &st->ep_seen);
    baton_jr_dbl(r, j, "epoch_sums.loss_sum", 0, HUGE_VAL, &st->ep_loss_sum);
    baton_jr_dbl(r, j, "epoch_sums.seconds", 0, HUGE_VAL, &st->ep_seconds);
    if (!r->rc && st->cursor.seed != st->seed)
        baton_jr_fail(r, "cursor.seed", "%llu differs from hyper.seed %llu", (unsigned long long)st->cursor.seed,
                      (unsigned long long)st->seed);
    if (!r->rc && st->ep_correct > st->ep_seen)
        baton_jr_fail(r, "epoch_sums.correct", "%llu exceeds seen %llu", (unsigned long long)st->ep_correct,
                      (unsigned long long)st->ep_seen);
    /* optional (older versions lack them) */
    if (baton_jr_get(r, j, "hyper.epochs")) baton_jr_u64(r, j, "hyper.epochs", 1, U53, &st->epochs);
    if (baton_jr_get(r, j, "hyper.steps_per_epoch")) baton_jr_u64(r, j, "hyper.steps_per_epoch", 1, U53, &st->steps_per_epoch);
}

/* schedule and input_shape: optional, validated when present */
static void parse_schedule_shape(baton_jr *r, const cJSON *j, baton_train_state *st)
{
    if (baton_jr_get(r, j, "schedule")) {
        baton_jr_obj(r, j, "schedule");
        baton_jr_dbl(r, j, "schedule.base_lr", 0, HUGE_VAL, &st->base_lr);
        baton_jr_u64(r, j, "schedule.total_steps", 0, U53, &st->total_steps);
        if (!r->rc && !(st->base_lr > 0)) baton_jr_fail(r, "schedule.base_lr", "must be positive");
        st->has_schedule = !r->rc;
    }
    const cJSON *shp = baton_jr_get(r, j, "input_shape");
    if (!shp) return;
    uint64_t cl = 0;
    if (!cJSON_IsArray(shp) || cJSON_GetArraySize(shp) != 3) baton_jr_fail(r, "input_shape", "is not [h, w, c]");
    for (int k = 0; k < 3 && !r->rc; k++) {
        const cJSON *x = cJSON_GetArrayItem(shp, k);
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 1 && x->valuedouble <= 1e6) || x->valuedouble != floor(x->valuedouble))
            baton_jr_fail(r, "input_shape", "[%d] is not an integer in 1..1000000", k);
        else st->input_shape[k] = (uint32_t)x->valuedouble;
    }
    baton_jr_u64(r, j, "classes", 1, UINT32_MAX, &cl);
    st->classes = (uint32_t)cl;
}

static void pair(baton_jr *r, const cJSON *j, const char *name, double hi, float out[2])
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, name);
    for (int k = 0; k < 2 && !r->rc; k++) {
        const cJSON *x = cJSON_IsArray(a) && cJSON_GetArraySize(a) == 2 ? cJSON_GetArrayItem(a, k) : NULL;
        if (!cJSON_IsNumber(x) || !(x->valuedouble > 0 && x->valuedouble <= hi)) baton_jr_fail(r, "augment", "%s is not two numbers in (0, %g]", name, hi);
        else out[k] = (float)x->valuedouble;
    }
}

/* augment: optional */
static void parse_augment(baton_jr *r, const cJSON *j, baton_train_state *st)
{
    const cJSON *a = baton_jr_get(r, j, "augment");
    if (!a || r->rc) return;
    baton_jr_obj(r, j, "augment");
    const cJSON *c = r->rc ? NULL : cJSON_GetObjectItemCaseSensitive(a, "crop");
    baton_crop crop = BATON_CROP_NONE;
    if (!r->rc && (!cJSON_IsString(c) || baton_crop_parse(c->valuestring, &crop)))
        baton_jr_fail(r, "augment.crop", "expected \"none\", \"pad\", \"random-resized\" or \"center\"");
    uint64_t size = 0;
    baton_jr_u64(r, j, "augment.size", 0, 4096, &size);
    pair(r, a, "scale", 1, st->scale);
    pair(r, a, "ratio", 1e6, st->ratio);
    const cJSON *f = r->rc ? NULL : cJSON_GetObjectItemCaseSensitive(a, "flip");
    if (!r->rc && !cJSON_IsBool(f)) baton_jr_fail(r, "augment.flip", "is not true or false");
    st->crop = (int)crop;
    st->crop_size = (uint32_t)size;
    st->flip = cJSON_IsTrue(f);
    st->has_augment = !r->rc;
}

/* metrics and normalisation: optional */
static void parse_metrics_norm(baton_jr *r, const cJSON *j, baton_train_state *st)
{
    if (baton_jr_get(r, j, "metrics")) {
        baton_jr_obj(r, j, "metrics");
        get_metric(r, j, "metrics.loss", &st->loss);
        get_metric(r, j, "metrics.accuracy", &st->accuracy);
        st->has_metrics = !r->rc;
        if (baton_jr_get(r, j, "metrics.val_loss")) {
            get_metric(r, j, "metrics.val_loss", &st->val_loss);
            get_metric(r, j, "metrics.val_accuracy", &st->val_accuracy);
            st->has_val = !r->rc;
        }
    }
    const cJSON *nm = baton_jr_get(r, j, "normalisation");
    if (!nm) return;
    const cJSON *mean = cJSON_GetObjectItemCaseSensitive(nm, "mean");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(nm, "std");
    const int n = cJSON_IsArray(mean) ? cJSON_GetArraySize(mean) : -1;
    if (!cJSON_IsObject(nm) || n < 1 || n > 4 || !cJSON_IsArray(sd) || cJSON_GetArraySize(sd) != n) {
        baton_jr_fail(r, "normalisation", "is not {\"mean\": [1..4 numbers], \"std\": [as many]}");
        return;
    }
    for (int k = 0; k < n && !r->rc; k++) {
        const cJSON *a = cJSON_GetArrayItem(mean, k), *b = cJSON_GetArrayItem(sd, k);
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !isfinite(a->valuedouble) || !(b->valuedouble > 0) ||
            !isfinite(b->valuedouble))
            baton_jr_fail(r, "normalisation", "channel %d: mean must be finite and std positive", k);
        else st->mean[k] = (float)a->valuedouble, st->std[k] = (float)b->valuedouble;
    }
    st->norm_channels = n;
}

int baton_train_state_parse(const char *text, size_t len, baton_train_state *out, baton_err *err)
{
    baton_jr r;
    baton_jr_init(&r, "state.json", err);
    r.strings = BATON_JR_DIGITS;   /* seeds: any uint64 as decimal digits */
    cJSON *j = baton_jr_parse(&r, text, len);
    baton_train_state st;
    memset(&st, 0, sizeof st);
    if (j) {
        parse_core(&r, j, &st);
        baton_jr_hex64(&r, j, "dropout_rng", 4, st.rng);
        parse_schedule_shape(&r, j, &st);
        parse_metrics_norm(&r, j, &st);
        parse_augment(&r, j, &st);
        if (!r.rc && baton_jr_get(&r, j, "precision")) {
            char prec[8] = "";
            baton_jr_str(&r, j, "precision", prec, sizeof prec);
            if (!r.rc && (st.precision = baton_nn_precision_parse(prec)) < 0)
                baton_jr_fail(&r, "precision", "is neither \"f32\" nor \"bf16\"");
        }
    }
    if (!r.rc) *out = st;
    cJSON_Delete(j);
    return r.rc;
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
    if (s->has_augment) {
        cJSON *a = cJSON_AddObjectToObject(j, "augment");
        cJSON_AddStringToObject(a, "crop", baton_crop_name((baton_crop)s->crop));
        add_num(a, "size", s->crop_size);
        cJSON *sa = cJSON_AddArrayToObject(a, "scale"), *ra = cJSON_AddArrayToObject(a, "ratio");
        for (int k = 0; k < 2; k++) {
            cJSON_AddItemToArray(sa, cJSON_CreateNumber(s->scale[k]));
            cJSON_AddItemToArray(ra, cJSON_CreateNumber(s->ratio[k]));
        }
        cJSON_AddBoolToObject(a, "flip", s->flip);
    }
    if (s->precision == BATON_NN_PRECISION_BF16) cJSON_AddStringToObject(j, "precision", "bf16");
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
