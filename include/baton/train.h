/* train.h — the training loop in stages, and the supervised trainer behind `baton train` and
 * `baton eval`.
 *
 * What it offers, in the order a caller uses it:
 *   1. The stages every trainer shares (a session, src/train/session.c): open (the checkpoint
 *      folder locked and writable, its store, the optional remote copy, the notice watcher, the
 *      progress file), resume (the newest checkpoint that verifies, or the remote's), then per
 *      step: poll (stop on a terminal notice; checkpoint on a rebalance recommendation) and
 *      step-done (periodic background checkpoints, a bound on uncommitted work, one retry after a
 *      failed save), and finish (the final synchronous checkpoint and what stopped the run). A
 *      second loop — the racing league's PPO trainer, a distributed trainer — builds on these and
 *      brings only its own step and its own state; it checkpoints through a callback.
 *   2. The state a checkpoint's state.json holds for the supervised trainer (baton_train_state;
 *      writer and parser side by side in src/train/state.c).
 *   3. The supervised trainer (baton_train_run, src/train/train.c): data through any URI and input
 *      mode, a model from the zoo, SGD with Nesterov momentum on a cosine schedule, a CSV log, and
 *      checkpoints that resume bit-exactly.
 *   4. Evaluation of a checkpoint (baton_eval_run, src/train/eval.c).
 *
 * Layering: train builds on ckpt, nn, img, io, rec, util and notice's watcher. Errors are values. */
#ifndef BATON_TRAIN_H
#define BATON_TRAIN_H

#include "baton/ckpt.h"
#include "baton/img.h"
#include "baton/notice.h"

/* The default checkpoint interval: a background checkpoint at the first step that ends 60 s or
 * more after the previous one. Its blocking part (the snapshot) costs well under 1 ms for the
 * models here (bench/ckpt.sh), and at most a minute of work is lost to a hard kill. */
#define BATON_TRAIN_CKPT_EVERY_SEC 60.0
/* The largest batch the trainer accepts: activations are allocated for it up front. */
#define BATON_TRAIN_MAX_BATCH 4096

/* ---------------------------------------------------------------------------------------------
 * 1. The stages (src/train/session.c)
 * --------------------------------------------------------------------------------------------- */
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
    int follower;               /* a data-parallel rank other than 0: no store, no lock, no progress
                                   file (rank 0 commits for the world); resume finds nothing, saves
                                   do nothing; notices are watched and finish reports them */
} baton_train_session_opts;

/* Latch a notice another rank saw (data parallelism: the world stops at the same step), unless
 * this session already holds one. finish then commits and reports it as its own. */
void baton_train_session_stop_for(baton_train_session *s, const baton_notice_event *ev);
/* --ckpt-every auto: the interval in force and the blocking cost it was computed from (0, 0
 * before the first save, or when not auto). */
void baton_train_session_interval(const baton_train_session *s, double *tau_s, double *delta_s);
/* The notice this session holds (kind NONE: none). */
const baton_notice_event *baton_train_session_latched(const baton_train_session *s);

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
 * or the error. */
int baton_train_session_finish(baton_train_session *s, uint64_t step, baton_notice_event *notice, baton_err *err);
/* The newest checkpoint this session committed (or resumed from): its folder, "" when none. */
const char *baton_train_session_checkpoint(const baton_train_session *s);
uint64_t baton_train_session_rebalances(const baton_train_session *s);
/* Waits for what is in flight (a failure is logged), stops the watcher, releases the lock. */
void baton_train_session_close(baton_train_session *s);

/* ---------------------------------------------------------------------------------------------
 * 2. state.json of the supervised trainer (src/train/state.c: the writer beside the parser)
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_train_state {
    char model[32];
    uint64_t step, epoch;       /* global step; epochs completed */
    baton_cursor cursor;        /* after the last trained batch */
    uint64_t seed, batch;       /* hyper.seed, hyper.batch */
    uint64_t epochs, steps_per_epoch;   /* hyper.epochs / steps_per_epoch; 0: not recorded */
    int has_schedule;           /* schedule.base_lr and total_steps were read */
    double base_lr;
    uint64_t total_steps;
    double momentum, weight_decay;      /* written; fixed values */
    int nesterov;
    uint64_t rng[4];            /* the model's dropout RNG */
    double ep_loss_sum, ep_seconds;     /* running sums of the epoch under way */
    uint64_t ep_correct, ep_seen;
    int has_metrics, has_val;
    double loss, accuracy, val_loss, val_accuracy;   /* the last completed epoch */
    int norm_channels;          /* 0: state.json has no normalisation */
    float mean[4], std[4];      /* the training data's, per channel */
    uint32_t input_shape[3], classes;   /* written; 0 when not read */
} baton_train_state;

/* Parse and validate state.json text (len bytes; need not be NUL-terminated); see state.c for the
 * fields and checks. *st is written only on success. */
int baton_train_state_parse(const char *text, size_t len, baton_train_state *st, baton_err *err);
/* Serialise (malloc'd, NUL-terminated JSON; NULL when out of memory). */
char *baton_train_state_format(const baton_train_state *st);

/* ---------------------------------------------------------------------------------------------
 * 3. The supervised trainer (src/train/train.c)
 *
 * One run: open the loader on --data (any URI and input mode) and the decode pipeline, build the
 * model from the dataset's shape and classes (oneDNN kernels, the reference kernels when oneDNN is
 * unavailable), SGD with Nesterov momentum 0.9 and weight decay 5e-4 on a cosine schedule over
 * epochs × ceil(epoch_size / batch) steps, then run epochs. Per epoch: an evaluation of --val when
 * given, and one CSV row (epoch, loss, accuracy, val_loss, val_accuracy, lr, seconds; header only
 * when the file is new). Checkpoints through a session (above). state.json carries what a resume
 * needs to continue bit-exactly.
 *
 * Resume: the checkpoint's hyper-parameters are the run's. epochs and lr left at 0 take the
 * checkpoint's values; a different value (or another dataset size) is refused, naming the change,
 * unless allow_change is set — then it is applied, logged, and kept in the next checkpoints.
 * seed, batch and model can never change (the data order and the tensors depend on them). The CSV
 * log is cut back to the checkpoint's epochs (a row written after the checkpoint is written again).
 * max_steps counts global steps across restarts.
 * --------------------------------------------------------------------------------------------- */
struct baton_train_result;

typedef struct baton_train_opts {
    const char *data_uri;       /* required */
    const char *val_uri;        /* NULL: no evaluation */
    const char *model;          /* "mlp", "lenet", "resnet8", "resnet20", "resnet56" */
    const char *ckpt_dir;       /* required; local copies for file/cache mode go to ckpt_dir/data */
    const char *ckpt_uri;       /* see baton_train_session_opts */
    const char *log_path;       /* CSV log; NULL: none */
    baton_io_mode mode;
    int mode_set;               /* 0: mount for a local path, pipe otherwise */
    baton_store_opts store;
    uint64_t epochs;            /* 0: the checkpoint's, or 1 for a fresh run */
    uint32_t batch;             /* 1..BATON_TRAIN_MAX_BATCH; default 128 */
    double lr;                  /* 0: the checkpoint's, or 0.1 for resnet-N, 0.01 for lenet and mlp */
    uint64_t seed;
    int allow_change;           /* apply a changed epochs / lr / dataset size on resume */
    uint64_t ckpt_every;        /* see baton_train_session_opts */
    double ckpt_every_sec;      /* default BATON_TRAIN_CKPT_EVERY_SEC (a checkpoint is always
                                   written when the run ends) */
    uint64_t max_steps;         /* global step to stop at; 0: no limit */
    int keep;                   /* checkpoints kept; 0: the default */
    int workers;                /* decode threads; default 2 */
    int reference_kernels;      /* force the plain C kernels */
    int progress;               /* show a progress line on a terminal */
    double progress_every_s;    /* when stderr is not a terminal: a plain progress line every this
                                   many seconds (0: none) */
    int notice;                 /* watch for interruption notices (default 0; the CLI turns it on).
                                   terminate/stop/hibernate/SIGTERM/SIGINT/preempted: after the
                                   current step, a synchronous checkpoint, then BATON_STOPPED; a
                                   rebalance recommendation: a background checkpoint */
    const baton_notice_opts *notice_opts;   /* NULL: baton_notice_opts_default (the environment) */
    const char *progress_file;  /* see baton_train_session_opts */
    int dist;                   /* data parallelism over MPI ranks: 0 when launched as a rank
                                   (mpirun, srun --mpi=pmix; baton_dist_launched), 1 required (an
                                   error when not launched so), -1 never (a single process) */
    size_t bucket_bytes;        /* gradient allreduce bucket; 0: 1 MiB */
    int sync_bn;                /* with ranks: batch norm over the whole global batch (its statistics
                                   summed over the ranks, baton_nn_model_set_bn_sync); 0: each
                                   rank's own part (the default, as PyTorch DDP) */
    int ckpt_auto;              /* see baton_train_session_opts (the CLI's --ckpt-every auto) */
    double mtbi_s;
    const char *sample_log;     /* NULL, or a file each rank appends "epoch position rank label crc32c"
                                   to for every sample it trains (one write per batch; the CRC32C of
                                   its input floats): an audit that every sample of an epoch is seen
                                   once, whatever the world sizes, and of what another reader yields */
    /* NULL, or called once with the final result (BATON_OK or BATON_STOPPED) by the process that
     * speaks for the run — rank 0, or the single process — before the ranks' last barrier: under
     * a launcher that ends the job when a rank exits non-zero (mpirun on exit 75), what it prints
     * and flushes is out before any other rank exits */
    void (*report)(const struct baton_train_result *r, int rc, void *ctx);
    void *report_ctx;
} baton_train_opts;

typedef struct baton_train_result {
    int resumed;                /* 1 when a checkpoint was loaded */
    uint64_t resumed_step;      /* its step */
    uint64_t step;              /* global step at the end */
    uint64_t epoch;             /* epochs completed */
    uint64_t epochs;            /* epochs the run was asked for (the checkpoint's when not given) */
    uint64_t steps_per_epoch;
    uint64_t steps_run;         /* steps this process trained (0: a resume with nothing left to do) */
    double loss, accuracy;      /* the last completed epoch (or the partial one when stopped) */
    int has_val;
    double val_loss, val_accuracy;
    double lr;                  /* base learning rate of the schedule */
    double seconds;             /* this process's training time */
    double samples_per_s;
    char kernels[16];           /* "dnnl" / "reference" */
    char checkpoint[4096];      /* the last committed checkpoint folder */
    int stopped;                /* 1: stopped on an interruption notice (status BATON_STOPPED) */
    char notice[16];            /* its kind: terminate, stop, hibernate, sigterm, sigint, preempted */
    char notice_source[32];     /* imds-v2, imds-v1, sigterm, sigint, gce */
    double notice_deadline;     /* unix seconds; 0 unknown */
    double notice_margin_s;     /* seconds left before the deadline when the run returned */
    uint64_t rebalances;        /* rebalance recommendations seen (each one checkpointed) */
    int rank, world;            /* this process's place in the data-parallel world (0, 1 alone) */
    double comm_s_per_step;     /* allreduce span per step (first bucket started → last done) */
    double wait_s_per_step;     /* of it, what the step waited for after backward */
    double overlap;             /* 1 - wait/comm: the part hidden behind backward (0..1) */
    double allreduce_mb;        /* gradient megabytes reduced per step per rank */
    double ckpt_tau_s, ckpt_delta_s;   /* --ckpt-every auto: the last interval and blocking cost */
} baton_train_result;

void baton_train_opts_default(baton_train_opts *o);
int baton_train_run(const baton_train_opts *o, baton_train_result *r, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * 4. Evaluation (src/train/eval.c)
 *
 * ckpt is a checkpoint folder or a directory of them (its newest that verifies). The model is named
 * by the checkpoint's state.json; the dataset's image shape and classes must be the ones it was
 * trained on, and it is normalised with the training data's statistics from state.json. mode as in
 * baton_train_opts (file/cache need local_dir).
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_eval_result {
    double loss, accuracy;
    uint64_t samples;
    uint32_t classes;
    uint64_t *confusion;        /* classes × classes, row = true class, column = predicted (the first
                                   maximum logit); malloc'd: baton_eval_result_free */
    char (*class_names)[32];    /* classes names from dataset.json ("" when it has none), malloc'd */
    uint64_t step;              /* the checkpoint's step */
    char model[32];
    char checkpoint[4096];
} baton_eval_result;

int baton_eval_run(const char *ckpt, const char *data_uri, baton_io_mode mode, int mode_set,
                   const char *local_dir, uint32_t batch, baton_eval_result *r, baton_err *err);
void baton_eval_result_free(baton_eval_result *r);

#endif
