/* train_session.h — the training loop's stages that every trainer shares (src/train/session.c):
 * `baton train`'s supervised trainer, `baton race train`'s PPO, a distributed rank.
 *
 * In the order a caller uses them: the options (one struct that each trainer's options embed,
 * filled from its flags and then from the environment a fleet gives its tasks), open (the
 * checkpoint folder locked and writable, its store, the optional remote copy, the notice watcher,
 * the progress file), resume (the newest checkpoint that verifies, or the remote's), then per step:
 * poll (stop on a terminal notice; checkpoint on a rebalance recommendation) and step-done
 * (periodic background checkpoints, a bound on uncommitted work, one retry after a failed save),
 * and finish (the final synchronous checkpoint and what stopped the run). A loop brings only its
 * own step and its own state; it checkpoints through a callback. When a save is due, the progress
 * file and the bound are ckpt.h's cadence (baton_ckpt_cadence), which the Python module's
 * Checkpoints paces its saves with too.
 *
 * Layering: part of train; builds on ckpt (and io's store options through it) and notice. A
 * trainer in another component includes this header, not train.h. Errors are values. */
#ifndef BATON_TRAIN_SESSION_H
#define BATON_TRAIN_SESSION_H

#include "baton/ckpt.h"
#include "baton/notice.h"

/* The default checkpoint interval: a background checkpoint at the first step that ends 60 s or
 * more after the previous one. Its blocking part (the snapshot) costs well under 1 ms for the
 * models here (bench/ckpt.sh), and at most a minute of work is lost to a hard kill. */
#define BATON_TRAIN_CKPT_EVERY_SEC BATON_CKPT_EVERY_SEC_DEFAULT

typedef struct baton_train_session baton_train_session;

/* Snapshot the caller's tensors and state for step into store: baton_ckpt_snapshot (a model and an
 * optimizer) or baton_ckpt_snapshot_tensors (any tensor lists), flags BATON_CKPT_WAIT. Called by
 * the session whenever it saves, on the caller's thread, between steps. */
typedef int (*baton_train_snapshot_fn)(void *ctx, baton_ckpt_store *store, uint64_t step, baton_err *err);

typedef struct baton_train_session_opts {
    const char *ckpt_dir;       /* required: created if missing, locked while the session is open */
    const char *ckpt_uri;       /* NULL, or where every committed checkpoint is uploaded and restored
                                   from when ckpt_dir has none (baton_ckpt_store_attach) */
    baton_store_opts store;
    int keep;                   /* checkpoints kept; 0: BATON_CKPT_KEEP_DEFAULT */
    uint64_t ckpt_every;        /* steps between background checkpoints; 0: none by count. Also a
                                   bound: the progress file never runs more than this many steps
                                   ahead of the newest committed checkpoint */
    double ckpt_every_sec;      /* seconds between background checkpoints; 0: none by time */
    int notice;                 /* watch for interruption notices (notice.h) */
    const baton_notice_opts *notice_opts;   /* NULL: baton_notice_opts_default */
    const char *progress_file;  /* NULL: none; else the global step, rewritten after every step */
    baton_train_snapshot_fn snapshot;       /* required */
    void *ctx;
    int ckpt_auto;              /* checkpoint every τ seconds, Daly's optimum (ckpt.h) for the measured
                                   blocking cost δ of this run's checkpoints (the time a save holds
                                   the step loop; the first save right after the first step
                                   measures it) and mtbi_s; re-estimated after every save. Replaces
                                   ckpt_every_sec; without a hazard (mtbi_s <= 0) ckpt_every_sec */
    double mtbi_s;              /* mean time between interruptions, seconds (0: unknown) */
    double deadline_margin_s;   /* on a notice, the upload is attempted only when it fits before the
                                   notice's deadline less this (default 5; BATON_DEADLINE_MARGIN_S) */
    int follower;               /* a data-parallel rank other than 0: no store, no lock, no progress
                                   file (rank 0 commits for the world); resume finds nothing, saves
                                   do nothing; notices are watched and finish reports them */
} baton_train_session_opts;

/* --ckpt-every auto: the interval in force and the blocking cost it was computed from (0, 0
 * before the first save, or when not auto). */
void baton_train_session_interval(const baton_train_session *s, double *tau_s, double *delta_s);

/* Open: checks that ckpt_dir is a folder this process can write and that no other process has it
 * open (BATON_ERR_BUSY naming the holder's pid), opens its store (and the remote), starts the
 * watcher (before any compute thread: it takes SIGTERM and SIGINT), opens the progress file. */
int baton_train_session_open(const baton_train_session_opts *o, baton_train_session **out, baton_err *err);
/* Resume: the newest checkpoint under ckpt_dir that verifies, or with ckpt_uri the newest complete
 * remote one restored into ckpt_dir. Fills path (cap bytes) and *step, and *state with its
 * state.json text (malloc'd; the caller frees and loads its tensors from path, e.g. with
 * baton_ckpt_load). BATON_ERR_NOTFOUND: a fresh start. */
int baton_train_session_resume(baton_train_session *s, char *path, size_t cap, uint64_t *step, char **state,
                               baton_err *err);
/* Tell the session which step the run starts from (after resume, or 0): the progress file and the
 * save bookkeeping start there; a resumed step counts as saved. */
void baton_train_session_begin(baton_train_session *s, uint64_t step, int resumed);
/* Before each step: 1 when a terminal notice is latched (stop now: finish saves the state of the
 * steps done), 0 to go on; a rebalance recommendation saves in the background first. < 0: that
 * save failed (err). */
int baton_train_session_poll(baton_train_session *s, uint64_t step, baton_err *err);
/* After each step (global step count `step`): the progress file, collecting a finished background
 * save (waiting for it when more than ckpt_every steps would be at risk), and a background save
 * when one is due (every ckpt_every steps, every ckpt_every_sec seconds). After a failed background
 * save it retries at once, synchronously; when that fails too, it returns the error, and the
 * caller stops (the newest committed checkpoint stays valid). */
int baton_train_session_step_done(baton_train_session *s, uint64_t step, baton_err *err);
/* Finish, when the loop ended at global step `step` without an error: a synchronous checkpoint of
 * that step unless one was just saved, then waits for background persists and uploads. Returns
 * BATON_STOPPED when a terminal notice stopped the run (*notice filled; may be NULL), else BATON_OK
 * or the error. On a notice the commit is planned by its deadline (baton_ckpt_persist_by): the
 * step under way was finished (the loop polls between steps), the checkpoint is committed and
 * verified locally, and uploaded only when the measured upload cost fits before the deadline less
 * deadline_margin_s, else left to the next machine; BATON_STOPPED only after a verified local
 * commit. baton_train_session_stop_report then says what happened when. */
int baton_train_session_finish(baton_train_session *s, uint64_t step, baton_notice_event *notice, baton_err *err);
/* What a notice's stop did, for reports: every time is wall time (unix seconds). */
typedef struct baton_train_stop {
    int stopped;                /* 1 when finish stopped on a notice (the rest is then filled) */
    char kind[16], source[32];  /* as baton_train_notice_describe */
    double notice_at;           /* when the watcher latched it */
    double deadline;            /* 0: unknown */
    uint64_t step;              /* the committed step */
    double commit_at, commit_s; /* the local commit verified, and how long the commit took */
    int upload;                 /* BATON_CKPT_UPLOAD_NONE / _DONE / _LEFT (left to the next machine) */
    double upload_at, upload_s, upload_est_s;
    char upload_why[256];
    double exit_at;             /* when finish returned */
    double margin_s;            /* deadline - exit_at (0 when the deadline is unknown) */
} baton_train_stop;
const baton_train_stop *baton_train_session_stop_report(const baton_train_session *s);
/* "uploaded in 0.4 s", "left to the next machine", "no remote" (for messages and tables). */
const char *baton_train_stop_upload_text(const baton_train_stop *st, char *buf, size_t cap);

/* The newest checkpoint this session committed (or resumed from): its folder, "" when none. */
const char *baton_train_session_checkpoint(const baton_train_session *s);
uint64_t baton_train_session_rebalances(const baton_train_session *s);
/* Waits for what is in flight (a failure is logged), stops the watcher, releases the lock. */
void baton_train_session_close(baton_train_session *s);


/* ---------------------------------------------------------------------------------------------
 * The options' defaults and where they come from
 * --------------------------------------------------------------------------------------------- */
/* Defaults: store options as baton_store_opts_default, a checkpoint every
 * BATON_TRAIN_CKPT_EVERY_SEC seconds, deadline_margin_s -1 (5 s unless the environment says), nothing else set (notices not watched: a program turns them
 * on, as the CLI does unless --no-notice). */
void baton_train_session_opts_default(baton_train_session_opts *o);
/* After the caller's flags, what the environment says where they did not, as `baton fleet` (and
 * its Slurm and AWS backends) tells a task: BATON_CKPT_EVERY (auto, off, a number of steps or
 * seconds as in baton_ckpt_policy_parse; applied only when interval_given is 0, i.e. no flag set an
 * interval), BATON_SPOT_MTBI_S (the hazard, seconds, when mtbi_s is 0), BATON_PROGRESS_FILE (when
 * progress_file is NULL), BATON_DEADLINE_MARGIN_S (when deadline_margin_s is negative, i.e. not
 * given). A bad value is BATON_ERR_USAGE naming the variable. */
int baton_train_session_opts_env(baton_train_session_opts *o, int interval_given, baton_err *err);

/* What a latched notice says, for a trainer's result: its kind ("sigterm"/"sigint" for a signal,
 * else baton_notice_kind_name: terminate, stop, hibernate, preempted), its source (imds-v2, gce,
 * sigterm, …) and the seconds left before its deadline (0 when it has none). */
void baton_train_notice_describe(const baton_notice_event *ev, char kind[16], char source[32], double *margin_s);

#endif
