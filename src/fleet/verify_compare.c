/* verify_compare.c — reading BATON_VERIFY_LOG files and holding an interrupted run's events to an
 * uninterrupted run's, step by step (fleet.h: baton_verify_resume; verify.c runs the command).
 *
 * Contract:
 *   - a line that is not one of the events (another program's JSON, a line torn by a SIGKILL) is
 *     skipped, never an error;
 *   - steps: a resume event (its step; 0 for a fresh start) starts a segment, whose k-th batch is
 *     step resume + k (so step N's batch is the one a run from scratch trains at its N-th step); loss
 *     and ckpt events carry their own step (the steps done);
 *   - every event of every interrupted process is compared (a step redone after a SIGKILL is held to
 *     the reference each time): a batch by its epoch, first position, sample count and digest, a loss
 *     bit for bit, a checkpoint by the SHA-256 of its model and of its optimizer file where the
 *     reference committed the same step (checkpoints only the interruptions caused are not compared);
 *   - then the whole: every reference step up to the last one reached must have had its batch and
 *     loss; the runs must reach the reference's last step and no further, and end with a checkpoint
 *     at the reference's last checkpoint step;
 *   - the verdict is the difference with the lowest step (at one step: samples, loss, weights,
 *     optimizer, a failed run, then the lengths). */
#include "verify_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS (1u << 26)   /* a log of more steps is refused (memory: ~40 bytes a step) */

int verify_parse_line(const char *line, size_t len, vevent *e)
{
    memset(e, 0, sizeof *e);
    if (len < 2 || line[0] != '{') return 0;
    cJSON *j = baton_jr_value(line, len);   /* a line baton wrote, judged here */
    if (!j) return 0;
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "ev");
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    int ok = 0;
    if (cJSON_IsString(ev) && cJSON_IsNumber(step) && step->valuedouble >= 0 && step->valuedouble < 9e15)
        e->step = (uint64_t)step->valuedouble;
    if (!cJSON_IsString(ev)) {
    } else if (!strcmp(ev->valuestring, "resume") && cJSON_IsNumber(step)) {
        e->type = VEV_RESUME, ok = 1;
    } else if (!strcmp(ev->valuestring, "loss") && cJSON_IsNumber(step)) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, "loss");
        e->type = VEV_LOSS, ok = 1;
        if (cJSON_IsNumber(l)) e->has_loss = 1, e->loss = l->valuedouble;
        else if (cJSON_IsString(l)) e->has_loss = 1, e->loss = strtod(l->valuestring, NULL);   /* "nan", "inf" */
    } else if (!strcmp(ev->valuestring, "ckpt") && cJSON_IsNumber(step)) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model"), *o = cJSON_GetObjectItemCaseSensitive(j, "optim");
        e->type = VEV_CKPT, ok = 1;
        snprintf(e->model, sizeof e->model, "%s", cJSON_IsString(m) ? m->valuestring : "");
        snprintf(e->optim, sizeof e->optim, "%s", cJSON_IsString(o) ? o->valuestring : "");
    } else if (!strcmp(ev->valuestring, "batch")) {
        const cJSON *ep = cJSON_GetObjectItemCaseSensitive(j, "epoch"), *f = cJSON_GetObjectItemCaseSensitive(j, "first"),
                    *n = cJSON_GetObjectItemCaseSensitive(j, "n"), *d = cJSON_GetObjectItemCaseSensitive(j, "digest");
        if (cJSON_IsNumber(ep) && cJSON_IsNumber(f) && cJSON_IsNumber(n) && cJSON_IsString(d)) {
            e->type = VEV_BATCH, ok = 1;
            e->epoch = (uint64_t)ep->valuedouble, e->first = (uint64_t)f->valuedouble, e->n = (uint32_t)n->valuedouble;
            e->digest = strtoull(d->valuestring, NULL, 16);
        }
    }
    cJSON_Delete(j);
    return ok;
}

uint64_t verify_seg_step(vseg *s, const vevent *e)
{
    uint64_t step = 0;
    switch (e->type) {
    case VEV_RESUME:
        s->resume = e->step, s->k = 0, s->progressed = 0;
        step = e->step;
        break;
    case VEV_BATCH:
        step = s->resume + ++s->k;
        s->progressed = 1;
        break;
    case VEV_LOSS:
        step = e->step;
        s->progressed = 1;
        break;
    case VEV_CKPT:
        step = e->step;
        break;
    }
    if (step > s->last) s->last = step;
    return e->type == VEV_RESUME ? 0 : step;
}

int verify_read_log(const char *path, char **text, size_t *len, baton_err *err)
{
    uint8_t *d = NULL;
    int rc = baton_file_read_all(path, (size_t)1 << 31, &d, len, err);
    if (rc == BATON_ERR_NOTFOUND) {
        d = calloc(1, 1);
        *len = 0;
        rc = d ? BATON_OK : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    *text = (char *)d;
    return rc;
}

/* ---------------------------------------------------------------- the reference */
typedef struct vstep {
    uint64_t epoch, first, digest;
    double loss;
    uint32_t n;
    uint8_t has_batch, has_loss, seen_batch, seen_loss;
} vstep;
typedef struct vckpt {
    uint64_t step;
    char model[65], optim[65];
} vckpt;
struct vref {
    vstep *s;                   /* [0..steps] */
    uint64_t steps, cap;
    vckpt *c;
    size_t nc, ccap;
    int any_batch, any_loss;
};

static int grow_steps(vref *v, uint64_t step, baton_err *err)
{
    if (step < v->cap) return BATON_OK;
    if (step >= MAX_STEPS) return baton_err_set(err, BATON_ERR_FORMAT, "step %" PRIu64 ": more than %u steps", step, MAX_STEPS);
    uint64_t cap = v->cap ? v->cap : 1024;
    while (cap <= step) cap *= 2;
    vstep *s = realloc(v->s, cap * sizeof *s);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    memset(s + v->cap, 0, (cap - v->cap) * sizeof *s);
    v->s = s, v->cap = cap;
    return BATON_OK;
}

/* Call fn for each event of the log at path with its step. */
static int walk(const char *path, int (*fn)(void *, const vevent *, uint64_t, baton_err *), void *ctx, vseg *seg,
                baton_err *err)
{
    char *text;
    size_t len;
    int rc = verify_read_log(path, &text, &len, err);
    if (rc) return rc;
    memset(seg, 0, sizeof *seg);
    for (size_t at = 0; at < len && rc == BATON_OK;) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl) break;   /* a line cut short by a kill: not an event */
        vevent e;
        if (verify_parse_line(text + at, (size_t)(nl - text - at), &e)) {
            uint64_t step = verify_seg_step(seg, &e);
            if (e.type != VEV_RESUME) rc = fn(ctx, &e, step, err);
        }
        at = (size_t)(nl - text) + 1;
    }
    free(text);
    return rc;
}

static int ref_event(void *ctx, const vevent *e, uint64_t step, baton_err *err)
{
    vref *v = ctx;
    int rc = grow_steps(v, step, err);
    if (rc) return rc;
    if (step > v->steps) v->steps = step;
    vstep *s = &v->s[step];
    if (e->type == VEV_BATCH) {
        s->has_batch = 1, v->any_batch = 1;
        s->epoch = e->epoch, s->first = e->first, s->n = e->n, s->digest = e->digest;
    } else if (e->type == VEV_LOSS && e->has_loss) {
        s->has_loss = 1, v->any_loss = 1;
        s->loss = e->loss;
    } else if (e->type == VEV_CKPT) {
        for (size_t i = 0; i < v->nc; i++)
            if (v->c[i].step == step) {   /* committed again (a final save of the same step): the last counts */
                snprintf(v->c[i].model, sizeof v->c[i].model, "%s", e->model);
                snprintf(v->c[i].optim, sizeof v->c[i].optim, "%s", e->optim);
                return BATON_OK;
            }
        if (v->nc == v->ccap) {
            size_t cap = v->ccap ? 2 * v->ccap : 64;
            vckpt *c = realloc(v->c, cap * sizeof *c);
            if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
            v->c = c, v->ccap = cap;
        }
        vckpt *c = &v->c[v->nc++];
        c->step = step;
        snprintf(c->model, sizeof c->model, "%s", e->model);
        snprintf(c->optim, sizeof c->optim, "%s", e->optim);
    }
    return BATON_OK;
}

int verify_ref_load(const char *path, vref **out, baton_err *err)
{
    vref *v = calloc(1, sizeof *v);
    if (!v) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    vseg seg;
    int rc = grow_steps(v, 1, err);
    if (!rc) rc = walk(path, ref_event, v, &seg, err);
    if (rc) {
        verify_ref_free(v);
        return baton_err_prefix(err, "%s", path);
    }
    *out = v;
    return BATON_OK;
}

void verify_ref_free(vref *v)
{
    if (!v) return;
    free(v->s);
    free(v->c);
    free(v);
}

uint64_t verify_ref_steps(const vref *v) { return v->steps; }

/* ---------------------------------------------------------------- comparing */
typedef struct cmpctx {
    vref *ref;
    baton_verify_report *r;
    uint64_t last_step, last_ckpt;   /* over all the interrupted processes */
} cmpctx;

/* Keep the difference with the lowest step (then the lowest cause). */
static void consider(baton_verify_report *r, int cause, uint64_t step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void consider(baton_verify_report *r, int cause, uint64_t step, const char *fmt, ...)
{
    if (r->cause != BATON_VERIFY_IDENTICAL && (step > r->step || (step == r->step && cause >= r->cause))) return;
    r->cause = cause;
    r->step = step;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->what, sizeof r->what, fmt, ap);
    va_end(ap);
}

static void fmt_batch(char *out, size_t cap, uint64_t epoch, uint64_t first, uint32_t n, uint64_t digest)
{
    snprintf(out, cap, "epoch %" PRIu64 " positions %" PRIu64 "..%" PRIu64 " (digest %016" PRIx64 ")", epoch, first,
             first + (n ? n - 1 : 0), digest);
}

static int cmp_event(void *ctx, const vevent *e, uint64_t step, baton_err *err)
{
    cmpctx *c = ctx;
    vref *v = c->ref;
    baton_verify_report *r = c->r;
    if (step > c->last_step) c->last_step = step;
    if (step > v->steps || step == 0) return BATON_OK;   /* past the reference's end: judged as a whole */
    vstep *s = &v->s[step];
    if (e->type == VEV_BATCH && v->any_batch) {
        r->batches++;
        s->seen_batch = 1;
        char a[160], b[160];
        fmt_batch(a, sizeof a, e->epoch, e->first, e->n, e->digest);
        if (!s->has_batch)
            consider(r, BATON_VERIFY_SAMPLES, step, "step %" PRIu64 ": a batch (%s) where the uninterrupted run had none", step, a);
        else if (s->epoch != e->epoch || s->first != e->first || s->n != e->n || s->digest != e->digest) {
            fmt_batch(b, sizeof b, s->epoch, s->first, s->n, s->digest);
            consider(r, BATON_VERIFY_SAMPLES, step, "step %" PRIu64 ": the batch held %s; the uninterrupted run's held %s",
                     step, a, b);
        }
    } else if (e->type == VEV_LOSS && e->has_loss && s->has_loss) {
        r->losses++;
        s->seen_loss = 1;
        if (memcmp(&s->loss, &e->loss, sizeof s->loss) != 0)
            consider(r, BATON_VERIFY_LOSS, step, "step %" PRIu64 ": loss %.17g; the uninterrupted run's %.17g", step, e->loss,
                     s->loss);
    } else if (e->type == VEV_CKPT) {
        if (step > c->last_ckpt) c->last_ckpt = step;
        for (size_t i = 0; i < v->nc; i++) {
            if (v->c[i].step != step) continue;
            r->ckpts++;
            if (strcmp(v->c[i].model, e->model))
                consider(r, BATON_VERIFY_WEIGHTS, step,
                         "step %" PRIu64 ": the checkpoint's weights (model.safetensors SHA-256 %.16s…) differ from the "
                         "uninterrupted run's (%.16s…)", step, e->model, v->c[i].model);
            else if (strcmp(v->c[i].optim, e->optim))
                consider(r, BATON_VERIFY_OPTIM, step,
                         "step %" PRIu64 ": the checkpoint's optimizer state (optim.safetensors SHA-256 %.16s…) differs "
                         "from the uninterrupted run's (%.16s…)", step, e->optim, v->c[i].optim);
            break;
        }
    }
    (void)err;
    return BATON_OK;
}

int verify_compare(const vref *ref, char *const *paths, int n, uint64_t failed_step, const char *failed_what,
                   baton_verify_report *r, baton_err *err)
{
    vref *v = (vref *)ref;   /* the seen flags are this comparison's scratch */
    for (uint64_t i = 0; i <= v->steps; i++) v->s[i].seen_batch = v->s[i].seen_loss = 0;
    cmpctx c = {v, r, 0, 0};
    for (int i = 0; i < n; i++) {
        vseg seg;
        int rc = walk(paths[i], cmp_event, &c, &seg, err);
        if (rc) return baton_err_prefix(err, "%s", paths[i]);
    }
    if (failed_step) consider(r, BATON_VERIFY_FAILED, failed_step, "%s", failed_what ? failed_what : "the run failed");
    uint64_t upto = c.last_step < v->steps ? c.last_step : v->steps;
    for (uint64_t s = 1; s <= upto; s++) {
        if (v->s[s].has_batch && !v->s[s].seen_batch) {
            consider(r, BATON_VERIFY_SAMPLES, s, "step %" PRIu64 ": no batch in the interrupted runs (the step was skipped)", s);
            break;
        }
        if (v->s[s].has_loss && !v->s[s].seen_loss) {
            consider(r, BATON_VERIFY_LOSS, s, "step %" PRIu64 ": no loss logged in the interrupted runs", s);
            break;
        }
    }
    if (c.last_step < v->steps)
        consider(r, BATON_VERIFY_EARLY, c.last_step + 1,
                 "the interrupted runs ended at step %" PRIu64 "; the uninterrupted run went on to step %" PRIu64, c.last_step,
                 v->steps);
    else if (c.last_step > v->steps)
        consider(r, BATON_VERIFY_LONGER, v->steps + 1,
                 "the interrupted runs went on to step %" PRIu64 "; the uninterrupted run ended at step %" PRIu64, c.last_step,
                 v->steps);
    uint64_t ref_last = v->nc ? v->c[0].step : 0;
    for (size_t i = 1; i < v->nc; i++)
        if (v->c[i].step > ref_last) ref_last = v->c[i].step;
    if (c.last_ckpt != ref_last)
        consider(r, BATON_VERIFY_EARLY, c.last_ckpt < ref_last ? c.last_ckpt + 1 : ref_last + 1,
                 "the last checkpoint is at step %" PRIu64 "; the uninterrupted run's at step %" PRIu64, c.last_ckpt, ref_last);
    return BATON_OK;
}
