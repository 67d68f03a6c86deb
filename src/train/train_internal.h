/* train_internal.h — pieces the supervised trainer (train.c) and evaluation (eval.c) share: opening
 * a dataset for training or evaluation, the model for its shape, one evaluation pass, and the CSV
 * log. Nothing outside src/train includes this. */
#ifndef BATON_TRAIN_INTERNAL_H
#define BATON_TRAIN_INTERNAL_H

#include "baton/train.h"

/* data.c: open uri as a loader (mode_set 0: mount for a local path, pipe otherwise; file/cache
 * copy into local_dir). Checks that the images have one fixed shape and that there are records. */
int train_open_loader(const char *uri, baton_io_mode mode, int mode_set, const baton_store_opts *store,
                      const char *local_dir, uint64_t seed, baton_loader **l, baton_err *err);
/* The decode pipeline over l: NCHW, no augmentation, normalised with mean/std (NULL: the dataset's
 * own). NULL with err filled on failure. */
baton_pipeline *train_open_pipe(baton_loader *l, uint32_t batch, int workers, const float *mean, const float *std,
                                baton_err *err);
/* The error for a dataset whose images or classes differ from what a model was built for. */
int train_shape_mismatch(baton_err *err, const char *what, const uint32_t want_shape[3], uint32_t want_classes,
                         const char *uri, const baton_manifest *got);
/* The zoo model name for these images (oneDNN kernels unless reference, or when unavailable);
 * the table's name into kname. */
int train_model_for(const char *name, const uint32_t shape[3], uint32_t classes, uint32_t batch, uint64_t seed,
                    int reference, baton_nn_model **m, char kname[16], baton_err *err);

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

#endif
