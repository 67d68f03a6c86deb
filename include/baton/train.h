/* train.h — the training loop behind `baton train` and the evaluation behind `baton eval`.
 *
 * One run: open the loader on --data (any URI and input mode) and the decode pipeline, build the
 * model from the dataset's shape and classes (oneDNN kernels, the reference kernels when oneDNN is
 * unavailable), SGD with Nesterov momentum 0.9 and weight decay 5e-4 on a cosine schedule over
 * epochs × ceil(epoch_size / batch) steps, then run epochs. Per epoch: one CSV row appended to the
 * log (epoch, loss, accuracy, val_loss, val_accuracy, lr, seconds; header only when the file is
 * new), and an evaluation of --val when given. Checkpoints: every ckpt_every steps and/or every
 * ckpt_every_sec seconds (snapshot, then persist in the background; default every 60 s) and when
 * the run ends (synchronously). state.json carries what a
 * resume needs to continue bit-exactly: the loader cursor after the last trained batch, the
 * model's dropout RNG, the global step (the schedule position), the running sums of the current
 * epoch, hyper-parameters and normalisation.
 *
 * Resume: when ckpt_dir holds a checkpoint that verifies (or, with ckpt_uri, when the newest complete
 * remote one could be restored into it), the model, optimizer and state are loaded from it and the
 * loader is positioned at the saved cursor. max_steps counts global steps
 * across restarts.
 *
 * Notices (opts.notice): a watcher (notice.h) runs beside the loop; the loop reads its latched state
 * once per step (atomic loads). On a terminal notice the run returns BATON_STOPPED after the
 * current step's synchronous checkpoint is committed; the result says which notice, its deadline
 * and how many seconds were left.
 *
 * Layering: train depends on ckpt, nn, img, io, rec, util and spot's notice watcher. Errors are
 * values. */
#ifndef BATON_TRAIN_H
#define BATON_TRAIN_H

#include "baton/ckpt.h"
#include "baton/img.h"
#include "baton/notice.h"

/* The default checkpoint interval: a background checkpoint at the first step that ends 60 s or
 * more after the previous one. Its blocking part (the snapshot) costs well under 1 ms for the
 * models here (bench/ckpt.sh), and at most a minute of work is lost to a hard kill. */
#define BATON_TRAIN_CKPT_EVERY_SEC 60.0

typedef struct baton_train_opts {
    const char *data_uri;       /* required */
    const char *val_uri;        /* NULL: no evaluation */
    const char *model;          /* "mlp", "lenet", "resnet8", "resnet20", "resnet56" */
    const char *ckpt_dir;       /* required; local copies for file/cache mode go to ckpt_dir/data */
    const char *ckpt_uri;       /* NULL, or s3://bucket/prefix/ (or a folder): every committed
                                   checkpoint is uploaded there, and restored from there when
                                   ckpt_dir holds none that verifies (see baton_ckpt_store_attach) */
    const char *log_path;       /* CSV log; NULL: none */
    baton_io_mode mode;
    int mode_set;               /* 0: mount for a local path, pipe otherwise */
    baton_store_opts store;
    uint64_t epochs;            /* >= 1 */
    uint32_t batch;             /* >= 1; default 128 */
    double lr;                  /* 0: 0.1 for resnet-N, 0.01 for lenet and mlp */
    uint64_t seed;
    uint64_t ckpt_every;        /* steps between background checkpoints; 0: none by step count.
                                   Also a bound: the progress file never runs more than this many
                                   steps ahead of the newest committed checkpoint (the trainer
                                   waits for a persist that has not committed one step after its
                                   snapshot) */
    double ckpt_every_sec;      /* seconds between background checkpoints; 0: none by time;
                                   default BATON_TRAIN_CKPT_EVERY_SEC (a checkpoint is always
                                   written when the run ends) */
    uint64_t max_steps;         /* global step to stop at; 0: no limit */
    int keep;                   /* checkpoints kept; 0: the default */
    int workers;                /* decode threads; default 2 */
    int reference_kernels;      /* force the plain C kernels */
    int progress;               /* show a progress line */
    int notice;                 /* watch for interruption notices (default 0; the CLI turns it on).
                                   terminate/stop/hibernate/SIGTERM/preempted: after the current
                                   step, a synchronous checkpoint, then BATON_STOPPED; a rebalance
                                   recommendation: a background checkpoint at the next step */
    const baton_notice_opts *notice_opts;   /* NULL: baton_notice_opts_default (the environment) */
    const char *progress_file;  /* NULL: none; else the global step is kept in it (rewritten in
                                   place after every step) for a supervisor's work-lost accounting */
} baton_train_opts;

typedef struct baton_train_result {
    int resumed;                /* 1 when a checkpoint was loaded */
    uint64_t resumed_step;      /* its step */
    uint64_t step;              /* global step at the end */
    uint64_t epoch;             /* epochs completed */
    uint64_t steps_per_epoch;
    double loss, accuracy;      /* the last completed epoch (or the partial one when stopped) */
    int has_val;
    double val_loss, val_accuracy;
    double seconds;             /* this process's training time */
    double samples_per_s;
    char kernels[16];           /* "dnnl" / "reference" */
    char checkpoint[4096];      /* the last committed checkpoint folder */
    int stopped;                /* 1: stopped on an interruption notice (status BATON_STOPPED) */
    char notice[16];            /* its kind: terminate, stop, hibernate, sigterm, preempted */
    char notice_source[32];     /* imds-v2, imds-v1, sigterm, gce */
    double notice_deadline;     /* unix seconds; 0 unknown */
    double notice_margin_s;     /* seconds left before the deadline when the run returned */
    uint64_t rebalances;        /* rebalance recommendations seen (each one checkpointed) */
} baton_train_result;

void baton_train_opts_default(baton_train_opts *o);
int baton_train_run(const baton_train_opts *o, baton_train_result *r, baton_err *err);

/* What a checkpoint's state.json tells the trainer (src/train/state.c; train.c writes it). */
typedef struct baton_train_state {
    char model[32];
    uint64_t step, epoch;
    baton_cursor cursor;        /* after the last trained batch */
    uint64_t seed, batch;       /* hyper.seed, hyper.batch */
    uint64_t rng[4];            /* the model's dropout RNG */
    double ep_loss_sum, ep_seconds;
    uint64_t ep_correct, ep_seen;
    int has_metrics, has_val;
    double loss, accuracy, val_loss, val_accuracy;
    int norm_channels;          /* 0: state.json has no normalisation */
    float mean[4], std[4];      /* the training data's, per channel */
} baton_train_state;

/* Parse and validate state.json text (len bytes; need not be NUL-terminated); see state.c for the
 * fields and checks. *st is written only on success. */
int baton_train_state_parse(const char *text, size_t len, baton_train_state *st, baton_err *err);

/* Evaluate a checkpoint on a dataset. ckpt is a checkpoint folder or a directory of them (its
 * newest that verifies). The model is named by the checkpoint's state.json; its shapes must fit
 * the dataset's. mode as in baton_train_opts (file/cache need local_dir). */
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
