/* state.c — the parser of a checkpoint's state.json as the trainer reads it on resume and eval
 * reads it for the model (baton_train_state_parse; train.c writes the file).
 *
 * Contract: the text is outside input (a file from disk or a bucket). It must be one JSON object
 * (nothing but white space after it) with:
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
 * Integers are JSON numbers that are whole, non-negative and at most 2^53 (exact in a double), or
 * strings of decimal digits (any uint64; seeds are written that way). Every failure names the field.
 * Nothing is written to *st unless the whole text validates. */
#include "baton/train.h"

#include <cJSON.h>
#include <errno.h>
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
    for (const char *q = end; q < text + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: unexpected byte after the JSON at offset %zu",
                               (size_t)(q - text));
            goto out;
        }
    if (!cJSON_IsObject(j)) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: not a JSON object");
        goto out;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsString(m) || !m->valuestring[0] || strlen(m->valuestring) >= sizeof st.model) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"model\" missing or not a model name");
        goto out;
    }
    snprintf(st.model, sizeof st.model, "%s", m->valuestring);
    const cJSON *h, *c, *ep;
    if (!(h = get_obj(j, "hyper", err)) || !(c = get_obj(j, "cursor", err)) || !(ep = get_obj(j, "epoch_sums", err))) {
        rc = BATON_ERR_FORMAT;
        goto out;
    }
    if ((rc = get_u64(j, NULL, "step", &st.step, err)) || (rc = get_u64(j, NULL, "epoch", &st.epoch, err)) ||
        (rc = get_u64(h, "hyper", "seed", &st.seed, err)) || (rc = get_u64(h, "hyper", "batch", &st.batch, err)) ||
        (rc = get_u64(c, "cursor", "seed", &st.cursor.seed, err)) ||
        (rc = get_u64(c, "cursor", "epoch", &st.cursor.epoch, err)) ||
        (rc = get_u64(c, "cursor", "position", &st.cursor.position, err)) ||
        (rc = get_u64(ep, "epoch_sums", "correct", &st.ep_correct, err)) ||
        (rc = get_u64(ep, "epoch_sums", "seen", &st.ep_seen, err)) ||
        (rc = get_dbl(ep, "epoch_sums", "loss_sum", 1, &st.ep_loss_sum, err)) ||
        (rc = get_dbl(ep, "epoch_sums", "seconds", 1, &st.ep_seconds, err)))
        goto out;
    if (st.batch < 1 || st.batch > UINT32_MAX) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: hyper.\"batch\" is %llu, not 1..%u",
                           (unsigned long long)st.batch, UINT32_MAX);
        goto out;
    }
    if (st.cursor.seed != st.seed) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: cursor.\"seed\" %llu differs from hyper.\"seed\" %llu",
                           (unsigned long long)st.cursor.seed, (unsigned long long)st.seed);
        goto out;
    }
    if (st.ep_correct > st.ep_seen) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: epoch_sums.\"correct\" %llu exceeds \"seen\" %llu",
                           (unsigned long long)st.ep_correct, (unsigned long long)st.ep_seen);
        goto out;
    }
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(j, "dropout_rng");
    if (!cJSON_IsArray(rng) || cJSON_GetArraySize(rng) != 4) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"dropout_rng\" missing or not 4 hex words");
        goto out;
    }
    uint64_t any = 0;
    for (int i = 0; i < 4; i++) {
        const cJSON *x = cJSON_GetArrayItem(rng, i);
        const char *s = cJSON_IsString(x) ? x->valuestring : "";
        size_t n = strlen(s);
        if (n < 1 || n > 16 || strspn(s, "0123456789abcdefABCDEF") != n) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: dropout_rng[%d] is not a hex word", i);
            goto out;
        }
        st.rng[i] = strtoull(s, NULL, 16);
        any |= st.rng[i];
    }
    if (!any) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: dropout_rng is all zero (not a valid RNG state)");
        goto out;
    }
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "metrics");
    if (mt) {
        if (!cJSON_IsObject(mt)) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "state.json: \"metrics\" is not an object");
            goto out;
        }
        if ((rc = get_metric(mt, "loss", &st.loss, err)) || (rc = get_metric(mt, "accuracy", &st.accuracy, err)))
            goto out;
        st.has_metrics = 1;
        if (cJSON_GetObjectItemCaseSensitive(mt, "val_loss")) {
            if ((rc = get_metric(mt, "val_loss", &st.val_loss, err)) ||
                (rc = get_metric(mt, "val_accuracy", &st.val_accuracy, err)))
                goto out;
            st.has_val = 1;
        }
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "normalisation");
    if (nm) {
        const cJSON *mean = cJSON_GetObjectItemCaseSensitive(nm, "mean");
        const cJSON *sd = cJSON_GetObjectItemCaseSensitive(nm, "std");
        const int n = cJSON_IsArray(mean) ? cJSON_GetArraySize(mean) : -1;
        if (!cJSON_IsObject(nm) || n < 1 || n > 4 || !cJSON_IsArray(sd) || cJSON_GetArraySize(sd) != n) {
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "state.json: \"normalisation\" is not {\"mean\": [1..4 numbers], \"std\": [as many]}");
            goto out;
        }
        for (int k = 0; k < n; k++) {
            const cJSON *a = cJSON_GetArrayItem(mean, k), *b = cJSON_GetArrayItem(sd, k);
            if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !isfinite(a->valuedouble) || !(b->valuedouble > 0) ||
                !isfinite(b->valuedouble)) {
                rc = baton_err_set(err, BATON_ERR_FORMAT,
                                   "state.json: normalisation channel %d: mean must be finite and std positive", k);
                goto out;
            }
            st.mean[k] = (float)a->valuedouble;
            st.std[k] = (float)b->valuedouble;
        }
        st.norm_channels = n;
    }
    *out = st;
out:
    cJSON_Delete(j);
    return rc;
}
