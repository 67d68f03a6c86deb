/* train.h — the training loop in stages, and the supervised trainer behind `baton train` and
 * `baton eval`.
 *
 * What it offers, in the order a caller uses it:
 *   1. The stages every trainer shares, the session: include/baton/train_session.h (included
 *      here), src/train/session.c.
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

#include "baton/img.h"
#include "baton/train_session.h"

/* The largest batch the trainer accepts: activations are allocated for it up front. */
#define BATON_TRAIN_MAX_BATCH 4096

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
    /* the augmentation the samples were drawn with ("augment"; written when crop or flip is on):
     * a resume draws the same crops, evaluation takes the centre crop of the same size */
    int has_augment;
    int crop;                   /* baton_crop */
    uint32_t crop_size;
    float scale[2], ratio[2];
    int flip;
    int precision;              /* BATON_NN_PRECISION_F32 or _BF16 ("precision"; f32 when absent) */
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
    /* the checkpoint folder (session.ckpt_dir, required; file and cache mode keep their local copy
     * of the data in ckpt_dir/data), its remote copy, the interval (a checkpoint is always written
     * when the run ends), retention, notices (terminate/stop/hibernate/SIGTERM/SIGINT/preempted:
     * after the current step, a synchronous checkpoint, then BATON_STOPPED; a rebalance
     * recommendation: a background checkpoint), the progress file: train_session.h. session.store
     * is also the data's store options. The trainer sets session.snapshot and session.ctx itself. */
    baton_train_session_opts session;
    const char *data_uri;       /* required */
    const char *val_uri;        /* NULL: no evaluation */
    const char *model;          /* "mlp", "lenet", "resnet8", "resnet20", "resnet56" */
    const char *log_path;       /* CSV log; NULL: none */
    baton_io_mode mode;
    int mode_set;               /* 0: mount for a local path, pipe otherwise */
    uint64_t epochs;            /* 0: the checkpoint's, or 1 for a fresh run */
    uint32_t batch;             /* 1..BATON_TRAIN_MAX_BATCH; default 128 */
    double lr;                  /* 0: the checkpoint's, or 0.1 for resnet-N, 0.01 for lenet and mlp */
    uint64_t seed;
    int allow_change;           /* apply a changed epochs / lr / dataset size on resume */
    uint64_t max_steps;         /* global step to stop at; 0: no limit */
    int workers;                /* decode threads; default 2 */
    int reference_kernels;      /* force the plain C kernels */
    int precision;              /* BATON_NN_PRECISION_F32 (default) or _BF16: convolutions and linear
                                   layers on oneDNN's bfloat16 kernels, master weights, optimizer and
                                   batch norm in f32 (baton_nn_kernels_dnnl_bf16); refused where the
                                   CPU lacks bfloat16. Kept in state.json: a resume keeps the run's
                                   unless precision_set, and a change needs allow_change */
    int precision_set;
    int progress;               /* show a progress line on a terminal */
    double progress_every_s;    /* when stderr is not a terminal: a plain progress line every this
                                   many seconds (0: none) */
    int dist;                   /* data parallelism over MPI ranks: 0 when launched as a rank
                                   (mpirun, srun --mpi=pmix; baton_dist_launched), 1 required (an
                                   error when not launched so), -1 never (a single process) */
    size_t bucket_bytes;        /* gradient allreduce bucket; 0: 1 MiB */
    int sync_bn;                /* with ranks: batch norm over the whole global batch (its statistics
                                   summed over the ranks, baton_nn_model_set_bn_sync); 0: each
                                   rank's own part (the default, as PyTorch DDP) */
    /* the samples' crop and flip (baton_crop, img.h): NONE (the default) takes a fixed-size dataset as
     * it is; RANDOM_RESIZED (crop_size, scale, ratio: the pipeline's defaults when 0) takes any image
     * size, and its validation the centre crop of crop_size; flip: random horizontal flip. Kept in
     * state.json; a resume with other values is refused, naming them */
    int crop;
    uint32_t crop_size;
    float scale[2], ratio[2];
    int flip;
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
    char kernels[16];           /* "dnnl" / "dnnl-bf16" / "reference" */
    char checkpoint[4096];      /* the last committed checkpoint folder */
    int stopped;                /* 1: stopped on an interruption notice (status BATON_STOPPED) */
    char notice[16];            /* its kind: terminate, stop, hibernate, sigterm, sigint, preempted */
    char notice_source[32];     /* imds-v2, imds-v1, sigterm, sigint, gce */
    double notice_deadline;     /* unix seconds; 0 unknown */
    double notice_margin_s;     /* seconds left before the deadline when the run returned */
    baton_train_stop interruption;   /* stopped: the notice's deadline, the commit, the upload (or
                                        "left to the next machine") and the exit, when (train_session.h) */
    uint64_t rebalances;        /* rebalance recommendations seen (each one checkpointed) */
    int rank, world;            /* this process's place in the data-parallel world (0, 1 alone) */
    double comm_s_per_step;     /* allreduce span per step (first bucket started → last done) */
    double wait_s_per_step;     /* of it, what the step waited for after backward */
    double overlap;             /* 1 - wait/comm: the part hidden behind backward (0..1) */
    double allreduce_mb;        /* gradient megabytes reduced per step per rank */
    double ckpt_tau_s, ckpt_delta_s;   /* --ckpt-every auto: the last interval and blocking cost */
    double ckpt_mtbi_s;         /* the hazard it was computed for (session.mtbi_s; 0: none) */
} baton_train_result;

void baton_train_opts_default(baton_train_opts *o);
int baton_train_run(const baton_train_opts *o, baton_train_result *r, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * 4. Evaluation (src/train/eval.c)
 *
 * ckpt is a checkpoint folder or a directory of them (its newest that verifies). The model is named
 * by the checkpoint's state.json; the dataset's image shape and classes must be the ones it was
 * trained on, and it is normalised with the training data's statistics from state.json. mode as in
 * baton_train_opts (file/cache need local_dir). A model trained with the random-resized or centre
 * crop is evaluated on the centre crop of the size it trained on (any image size); crop_set with
 * crop CENTER (or size > 0) takes the centre crop of size instead, and with crop NONE the images as
 * they are (a fixed-size dataset). precision: BATON_NN_PRECISION_F32 (whatever the checkpoint was
 * trained in: checkpoints are f32) or _BF16 (refused where the CPU lacks bfloat16).
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
    char kernels[16];           /* the table it ran on */
    char checkpoint[4096];
} baton_eval_result;

int baton_eval_run(const char *ckpt, const char *data_uri, baton_io_mode mode, int mode_set,
                   const char *local_dir, uint32_t batch, int crop, int crop_set, uint32_t size, int precision,
                   baton_eval_result *r, baton_err *err);
void baton_eval_result_free(baton_eval_result *r);

#endif
