/* train_internal.h — pieces the supervised trainer (train.c) and evaluation (eval.c) share: opening
 * a dataset for training or evaluation, the model for its shape, one evaluation pass, and the CSV
 * log. Nothing outside src/train includes this. */
#ifndef BATON_TRAIN_INTERNAL_H
#define BATON_TRAIN_INTERNAL_H

#include "baton/train.h"

/* data.c: open uri as a loader (mode_set 0: mount for a local path, pipe otherwise; file/cache
 * copy into local_dir, shared by share_size ranks of one machine when that is > 1: see
 * baton_loader_opts). Checks that there are records. */
int train_open_loader(const char *uri, baton_io_mode mode, int mode_set, const baton_store_opts *store,
                      const char *local_dir, uint32_t share_rank, uint32_t share_size, uint64_t seed,
                      baton_loader **l, baton_err *err);
/* A sample's crop and flip (state.json's "augment"; crop is a baton_crop). */
typedef struct train_aug {
    int crop;
    uint32_t size;
    float scale[2], ratio[2];
    int flip;
} train_aug;
/* What evaluation of a model trained with a takes: the centre crop of the same size for the
 * random-resized or centre crops, else the images as they are; no flip. */
train_aug train_aug_eval(const train_aug *a);
/* The shape [h, w, c] the model sees for m's images under a: size × size for the random-resized
 * and centre crops, else m's fixed shape (a dataset whose images vary is refused, naming uri). */
int train_input_shape(const baton_manifest *m, const train_aug *a, const char *uri, uint32_t shape[3], baton_err *err);
/* The decode pipeline over l: NCHW, the augmentation a (NULL: none), normalised with mean/std
 * (NULL: the dataset's own), its batches not logged for verify-resume (evaluation's). NULL with err
 * filled on failure. */
baton_pipeline *train_open_pipe(baton_loader *l, uint32_t batch, int workers, const float *mean, const float *std,
                                const train_aug *a, baton_err *err);
/* The same keeping only part `rank` of `world` of each batch (the pipeline's parts). */
baton_pipeline *train_open_pipe_part(baton_loader *l, uint32_t batch, int workers, int rank, int world,
                                     const train_aug *a, baton_err *err);
/* The error for a dataset whose images or classes differ from what a model was built for. */
int train_shape_mismatch(baton_err *err, const char *what, const uint32_t want_shape[3], uint32_t want_classes,
                         const char *uri, const baton_manifest *got);
/* The zoo model name for these images on the table reference and precision select
 * (baton_nn_kernels_select: refused where bf16 is unavailable); the table's name into kname. */
int train_model_for(const char *name, const uint32_t shape[3], uint32_t classes, uint32_t batch, uint64_t seed,
                    int reference, int precision, baton_nn_model **m, char kname[16], baton_err *err);

/* eval.c: one pass over the next epoch of p with the model in evaluation mode; conf (NULL: not
 * wanted) receives the classes × classes confusion counts (row = label, column = first maximum). */
int train_eval_epoch(baton_nn_model *m, baton_pipeline *p, double *loss, double *acc, uint64_t *samples,
                     uint64_t *conf, baton_err *err);

/* csvlog.c: the per-epoch CSV log (header "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds").
 * cut: make the file hold exactly the rows of epochs < epochs (creating it with its header when
 * missing or empty; rows of later epochs — written after the checkpoint being resumed — are
 * dropped, atomically). row: append one row. */
int train_csv_cut(const char *path, uint64_t epochs, baton_err *err);
int train_csv_row(const char *path, uint64_t epoch, double loss, double acc, int has_val, double vloss, double vacc,
                  double lr, double seconds, baton_err *err);

/* dist.c: data parallelism over MPI ranks (docs/distributed.md). NULL *out: a single process. */
typedef struct train_dist train_dist;
int train_dist_open(const baton_train_opts *o, train_dist **out, baton_err *err);
int train_dist_rank(const train_dist *td);    /* 0 for NULL */
int train_dist_world(const train_dist *td);   /* 1 for NULL */
void train_dist_node(const train_dist *td, int *local_rank, int *local_size, int *leader);   /* baton_dist_node */
/* The ranks that share dir (an existing folder): those of this machine that see it as the same
 * folder (device and inode; a relative path under another working directory is another folder).
 * This rank's place among them and their number; 0, 1 without MPI. Collective. */
int train_dist_share_group(train_dist *td, const char *dir, uint32_t *share_rank, uint32_t *share_size,
                           baton_err *err);
/* The gradient reducer over the model's arena, and backward's progress hooked to it; sync_bn:
 * the model's batch norms summed over the ranks, on a communicator of their own. */
int train_dist_attach(train_dist *td, baton_nn_model *m, size_t bucket_bytes, int sync_bn, baton_err *err);
/* All ranks were given the same run: `what` (bytes) hashed and compared with rank 0's. */
int train_dist_same(train_dist *td, const char *what, const void *bytes, size_t n, baton_err *err);
/* Rank 0's model, optimizer, training state and resume facts to every rank. */
int train_dist_sync(train_dist *td, baton_nn_model *m, baton_nn_optim *opt, baton_train_state *st, int *resumed,
                    uint64_t *resumed_step, baton_err *err);
/* One step's forward, loss and backward on this rank's part of a batch, and the gradient
 * allreduce: afterwards every rank holds the global batch's gradient. noticed: this rank saw a
 * notice before the step. Out: the global batch's loss sum and correct count, and *stop when any
 * rank had noticed one. */
int train_dist_step(train_dist *td, baton_nn_model *m, const baton_batch *b, int noticed, double *loss_sum,
                    uint64_t *correct, int *stop, baton_err *err);
/* The world stops: every rank's latched notice is exchanged and the first one (by rank) latched
 * on sessions that saw none. */
int train_dist_share_notice(train_dist *td, baton_train_session *sess, const baton_notice_event *mine,
                            baton_err *err);
/* The end of a run: every rank's weights agree bit for bit (else BATON_ERR_CORRUPT), and no rank
 * leaves before rank 0 has committed (a barrier). */
int train_dist_end(train_dist *td, baton_nn_model *m, baton_err *err);
void train_dist_stats(const train_dist *td, baton_train_result *r);
/* A barrier of the world (nothing for a single process). */
int train_dist_barrier(train_dist *td, baton_err *err);
void train_dist_close(train_dist *td);

/* session.c, for data parallelism (dist.c, train.c) */
/* Latch a notice another rank saw (data parallelism: the world stops at the same step), unless
 * this session already holds one. finish then commits and reports it as its own. */
void train_session_stop_for(baton_train_session *s, const baton_notice_event *ev);
/* The notice this session holds (kind NONE: none). */
const baton_notice_event *train_session_latched(const baton_train_session *s);

#endif
