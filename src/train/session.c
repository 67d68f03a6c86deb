/* session.c — the stages every training loop shares: open, resume, poll, step-done, finish
 * (train_session.h), and the session options' defaults and environment. The supervised trainer
 * (train.c) and race's PPO (ppo_train.c) run on them; so can any other loop that brings its own
 * step and checkpoints its own tensors through the snapshot callback.
 *
 * Contract:
 *   - one session per checkpoint folder: the store's lock (ckpt) makes a second opener fail with
 *     the holder's pid; a folder this process cannot write fails at open, before any work;
 *   - the caller's thread drives everything; background persists run on the store's thread;
 *   - when to save, the progress file and the bound on work at risk are the checkpoint cadence's
 *     (ckpt.h, baton_ckpt_cadence, shared with the Python module's Checkpoints): with ckpt_every,
 *     the progress file never runs more than ckpt_every steps ahead of the newest committed
 *     checkpoint (step-done waits for a persist that has not committed); every save restarts the
 *     clock of a time-based interval;
 *   - a failed background save is retried once at once, synchronously, from the current state;
 *     a second failure is the run's error (training does not go on without a safety net);
 *   - finish commits the final state synchronously, so a BATON_STOPPED run has its checkpoint. */
#include "baton/train_session.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void baton_train_session_opts_default(baton_train_session_opts *o)
{
    memset(o, 0, sizeof *o);
    baton_store_opts_default(&o->store);
    o->ckpt_every_sec = BATON_TRAIN_CKPT_EVERY_SEC;
    o->deadline_margin_s = -1;
}

int baton_train_session_opts_env(baton_train_session_opts *o, int interval_given, baton_err *err)
{
    baton_ckpt_policy p;
    baton_ckpt_policy_init(&p, o->ckpt_every, o->ckpt_every_sec, o->ckpt_auto, 0);
    int rc = baton_ckpt_policy_from_env(&p, err);
    if (rc < 0) return rc;
    const char *every = getenv("BATON_CKPT_EVERY");
    if (rc == 1 && !(o->mtbi_s > 0)) o->mtbi_s = p.mtbi_s;
    if (rc == 1 && !interval_given && every && *every) {   /* the fleet's interval, where no flag set one */
        o->ckpt_every = p.every_steps;
        o->ckpt_every_sec = p.every_sec;
        o->ckpt_auto = p.automatic;
    }
    const char *pf = getenv("BATON_PROGRESS_FILE");
    if (!o->progress_file && pf && *pf) o->progress_file = pf;
    return o->deadline_margin_s < 0 ? baton_ckpt_margin_from_env(&o->deadline_margin_s, err) : BATON_OK;
}

void baton_train_notice_describe(const baton_notice_event *ev, char kind[16], char source[32], double *margin_s)
{
    snprintf(kind, 16, "%.15s", ev->kind == BATON_NOTICE_SIGNAL ? ev->source : baton_notice_kind_name(ev->kind));
    snprintf(source, 32, "%.31s", ev->source);
    *margin_s = ev->deadline > 0 ? ev->deadline - baton_wall_now() : 0;
}

struct baton_train_session {
    baton_train_session_opts o;
    baton_ckpt_store *store;
    baton_notice_watcher *nw;
    baton_notice_event nev;     /* the latched terminal notice (kind NONE while there is none) */
    baton_ckpt_cadence *cad;    /* when saves are due, the progress file, the bound (ckpt.h) */
    uint64_t last_saved;        /* step of the newest save handed to the store; UINT64_MAX none */
    uint64_t rebalances;
    baton_train_stop stop;      /* what a notice's stop did (finish) */
    char resumed_from[4096];
};

int baton_train_session_open(const baton_train_session_opts *o, baton_train_session **out, baton_err *err)
{
    *out = NULL;
    if (!o->ckpt_dir || !o->snapshot) return baton_err_set(err, BATON_ERR_ARG, "a checkpoint folder and a snapshot are required");
    baton_train_session *s = calloc(1, sizeof *s);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    s->o = *o;
    s->last_saved = UINT64_MAX;
    int rc = o->follower ? BATON_OK : baton_ckpt_store_open(o->ckpt_dir, o->keep, &s->store, err);
    if (!rc && !o->follower && o->ckpt_uri && (rc = baton_ckpt_store_attach(s->store, o->ckpt_uri, &o->store, err)))
        baton_err_prefix(err, "--ckpt-uri %s", o->ckpt_uri);
    if (!rc && o->notice) rc = baton_notice_start(o->notice_opts, &s->nw, err);
    baton_ckpt_policy pol;
    baton_ckpt_policy_init(&pol, o->ckpt_every, o->ckpt_every_sec, o->ckpt_auto, o->mtbi_s);
    /* the bound: the progress file never more than ckpt_every steps ahead of the newest commit */
    if (!rc) rc = baton_ckpt_cadence_open(&pol, o->follower ? NULL : o->progress_file, o->ckpt_every, &s->cad, err);
    if (rc) {
        baton_train_session_close(s);
        return rc;
    }
    *out = s;
    return BATON_OK;
}

int baton_train_session_resume(baton_train_session *s, char *path, size_t cap, uint64_t *step, char **state,
                               baton_err *err)
{
    *state = NULL;
    if (s->o.follower) return baton_err_set(err, BATON_ERR_NOTFOUND, "rank 0 resumes for the world");
    baton_err lerr = {0};
    int rc = baton_ckpt_latest(s->o.ckpt_dir, path, cap, step, &lerr);
    if (rc == BATON_ERR_NOTFOUND && s->o.ckpt_uri) rc = baton_ckpt_store_restore(s->store, path, cap, step, &lerr);
    if (rc) {
        *err = lerr;
        return rc;
    }
    if ((rc = baton_ckpt_load(path, NULL, NULL, state, err))) return baton_err_prefix(err, "resume from %s", path);
    snprintf(s->resumed_from, sizeof s->resumed_from, "%s", path);
    /* a checkpoint the previous machine committed but had no time to upload (the volume carried it) */
    if (s->o.ckpt_uri) baton_ckpt_store_upload_left(s->store, path, *step);
    return BATON_OK;
}

void baton_train_session_begin(baton_train_session *s, uint64_t step, int resumed)
{
    baton_verify_log_resume(resumed ? step : 0);
    s->last_saved = resumed ? step : UINT64_MAX;
    baton_ckpt_cadence_begin(s->cad, step, resumed ? step : 0, baton_now());
}

/* Snapshot through the caller and persist: in the background, or on this thread (sync). Every
 * save restarts the cadence's clock; δ is what the snapshot held the loop for (as the Python
 * module's save measures it). */
static int save(baton_train_session *s, uint64_t step, int sync, baton_err *err)
{
    if (!s->store) return BATON_OK;   /* a follower: rank 0 saves */
    double t0 = baton_now();
    uint64_t cs;
    if (baton_ckpt_reap(s->store, 1, &cs) > 0) baton_ckpt_cadence_committed(s->cad, cs);
    int rc = s->o.snapshot(s->o.ctx, s->store, step, err);   /* waits for a persist in flight */
    double blocked = baton_now() - t0;
    if (!rc) rc = sync ? baton_ckpt_persist_sync(s->store, err) : baton_ckpt_persist_async(s->store, err);
    if (rc) return baton_err_prefix(err, "checkpoint at step %" PRIu64, step);
    s->last_saved = step;
    if (sync) baton_ckpt_cadence_committed(s->cad, step);
    baton_ckpt_cadence_saved(s->cad, baton_now(), blocked);
    return BATON_OK;
}

/* A background save failed (its failure is already logged): save again now, on this thread. */
static int retry(baton_train_session *s, uint64_t step, baton_err *err)
{
    baton_log(BATON_LOG_WARN, "retrying the checkpoint at step %" PRIu64 " synchronously", step);
    int rc = save(s, step, 1, err);
    if (rc) {
        const char *last = baton_ckpt_last_committed(s->store)[0] ? baton_ckpt_last_committed(s->store) : s->resumed_from;
        size_t l = strlen(err->msg);
        snprintf(err->msg + l, sizeof err->msg - l, " (a background save failed before it; stopping rather than "
                 "training on without a checkpoint; the last committed one is %s)", last[0] ? last : "none");
    }
    return rc;
}

int baton_train_session_poll(baton_train_session *s, uint64_t step, baton_err *err)
{
    if (!s->nw) return 0;
    int rebalance = 0;
    if (baton_notice_poll(s->nw, &s->nev, &rebalance)) return 1;
    if (!rebalance) return 0;
    s->rebalances++;
    if (s->last_saved == step) return 0;
    return save(s, step, 0, err);
}

int baton_train_session_step_done(baton_train_session *s, uint64_t step, baton_err *err)
{
    if (!s->store) return BATON_OK;
    int due = baton_ckpt_cadence_due(s->cad, s->store, step, baton_now());
    if (due == BATON_CKPT_RETRY) return retry(s, step, err);
    return due == BATON_CKPT_DUE ? save(s, step, 0, err) : BATON_OK;
}

/* The stop on a notice: the state of the steps done committed and verified locally, the upload
 * planned by the deadline (baton_ckpt_persist_by), and what happened when, in s->stop. */
static int finish_by_deadline(baton_train_session *s, uint64_t step, baton_err *err)
{
    baton_train_stop *st = &s->stop;
    double margin;
    memset(st, 0, sizeof *st);
    baton_train_notice_describe(&s->nev, st->kind, st->source, &margin);
    st->notice_at = s->nev.seen_at;
    st->deadline = s->nev.deadline;
    uint64_t cs;
    int rc = BATON_OK;
    if (s->last_saved == step && baton_ckpt_reap(s->store, 1, &cs) < 0) s->last_saved = UINT64_MAX;   /* failed: again */
    /* nothing of this step committed by this store (a notice right after a resume): commit it again */
    if (s->last_saved != step || !baton_ckpt_last_committed(s->store)[0]) {
        rc = s->o.snapshot(s->o.ctx, s->store, step, err);
        if (rc) return baton_err_prefix(err, "checkpoint at step %" PRIu64, step);
        s->last_saved = step;
    }
    baton_ckpt_by by;
    if ((rc = baton_ckpt_persist_by(s->store, s->nev.deadline, s->o.deadline_margin_s, &by, err)))
        return baton_err_prefix(err, "checkpoint at step %" PRIu64, step);
    baton_ckpt_cadence_committed(s->cad, by.step);
    st->step = by.step;
    st->commit_at = by.commit_at;
    st->commit_s = by.commit_s;
    st->upload = by.upload;
    st->upload_at = by.upload_at;
    st->upload_s = by.upload_s;
    st->upload_est_s = by.upload_est_s;
    snprintf(st->upload_why, sizeof st->upload_why, "%s", by.why);
    return BATON_OK;
}

const char *baton_train_stop_upload_text(const baton_train_stop *st, char *buf, size_t cap)
{
    if (st->upload == BATON_CKPT_UPLOAD_DONE) snprintf(buf, cap, "uploaded in %.1f s", st->upload_s);
    else if (st->upload == BATON_CKPT_UPLOAD_LEFT) snprintf(buf, cap, "left to the next machine");
    else snprintf(buf, cap, "no remote");
    return buf;
}

int baton_train_session_finish(baton_train_session *s, uint64_t step, baton_notice_event *notice, baton_err *err)
{
    int rc;
    if (!s->store) {
        if (notice) *notice = s->nev;
        return s->nev.kind != BATON_NOTICE_NONE ? BATON_STOPPED : BATON_OK;
    }
    if (s->nev.kind != BATON_NOTICE_NONE) {
        if (notice) *notice = s->nev;
        if ((rc = finish_by_deadline(s, step, err))) return rc;
        baton_train_stop *st = &s->stop;
        st->stopped = 1;
        st->exit_at = baton_wall_now();
        st->margin_s = st->deadline > 0 ? st->deadline - st->exit_at : 0;
        const char *cp = baton_ckpt_last_committed(s->store), *slash = strrchr(cp, '/');
        char left[48] = "deadline unknown", up[64];
        if (st->deadline > 0) snprintf(left, sizeof left, "%.0f s before the deadline", st->margin_s);
        baton_log(BATON_LOG_WARN, "notice: %s (%s), %s: checkpoint %s committed, stopping",
                  s->nev.kind == BATON_NOTICE_SIGNAL ? "signal" : baton_notice_kind_name(s->nev.kind), s->nev.source,
                  left, slash ? slash + 1 : cp);
        baton_log(BATON_LOG_INFO, "interruption: commit took %.2f s (verified), %s", st->commit_s,
                  baton_train_stop_upload_text(st, up, sizeof up));
        if (st->upload == BATON_CKPT_UPLOAD_LEFT)
            baton_log(BATON_LOG_WARN, "checkpoint %" PRIu64 " left to the next machine: %s", st->step, st->upload_why);
        return BATON_STOPPED;
    }
    if (s->last_saved == step) {
        rc = baton_ckpt_wait(s->store, err);
        if (rc) {   /* the last background save failed: the final one is synchronous */
            baton_log(BATON_LOG_WARN, "%s", err->msg);
            rc = save(s, step, 1, err);
        }
    } else {
        rc = save(s, step, 1, err);
    }
    if (!rc) rc = baton_ckpt_wait(s->store, err);
    if (notice) *notice = s->nev;
    return rc;
}

const baton_train_stop *baton_train_session_stop_report(const baton_train_session *s) { return &s->stop; }

void train_session_stop_for(baton_train_session *s, const baton_notice_event *ev)
{
    if (s->nev.kind == BATON_NOTICE_NONE) s->nev = *ev;
}

void baton_train_session_interval(const baton_train_session *s, double *tau_s, double *delta_s)
{
    const baton_ckpt_policy *p = baton_ckpt_cadence_policy(s->cad);
    *tau_s = p->tau;
    *delta_s = p->nsaves ? p->delta_sum / (double)p->nsaves : 0;
}

const baton_notice_event *train_session_latched(const baton_train_session *s) { return &s->nev; }

const char *baton_train_session_checkpoint(const baton_train_session *s)
{
    if (!s->store) return "";
    const char *c = baton_ckpt_last_committed(s->store);
    return c[0] ? c : s->resumed_from;
}

uint64_t baton_train_session_rebalances(const baton_train_session *s) { return s->rebalances; }

void baton_train_session_close(baton_train_session *s)
{
    if (!s) return;
    if (s->store) {
        baton_err werr = {0};
        if (baton_ckpt_wait(s->store, &werr)) baton_log(BATON_LOG_WARN, "%s", werr.msg);
        baton_ckpt_store_close(s->store);
    }
    baton_notice_stop(s->nw);
    baton_ckpt_cadence_close(s->cad);
    free(s);
}
