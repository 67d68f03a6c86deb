/* data.c — what the trainer and evaluation open before a step: the dataset as a loader and a
 * decode pipeline, and the model for the dataset's image shape and classes. */
#include "train_internal.h"

#include <string.h>

int train_open_loader(const char *uri, baton_io_mode mode, int mode_set, const baton_store_opts *store,
                      const char *local_dir, uint32_t share_rank, uint32_t share_size, uint64_t seed,
                      baton_loader **l, baton_err *err)
{
    baton_loader_opts lo;
    baton_loader_opts_default(&lo);
    lo.uri = uri;
    lo.mode = mode;
    lo.store = *store;
    lo.seed = seed;
    lo.local_dir = local_dir;
    lo.share_rank = share_rank;
    lo.share_size = share_size;
    return baton_loader_open_dataset(&lo, mode_set, l, err);
}

static int crops(const train_aug *a)
{
    return a && (a->crop == BATON_CROP_RANDOM_RESIZED || a->crop == BATON_CROP_CENTER);
}

train_aug train_aug_eval(const train_aug *a)
{
    train_aug e = {0};
    if (crops(a)) e.crop = BATON_CROP_CENTER, e.size = a->size;
    return e;
}

int train_input_shape(const baton_manifest *m, const train_aug *a, const char *uri, uint32_t shape[3], baton_err *err)
{
    if (baton_pipeline_shape(m, a ? (baton_crop)a->crop : BATON_CROP_NONE, a ? a->size : 0, shape))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: images vary in size: crop them to one size (--crop random-resized "
                             "--size N for training; evaluation then takes the centre crop)", uri);
    return BATON_OK;
}

static baton_pipeline *open_pipe(baton_loader *l, uint32_t batch, int workers, const float *mean, const float *std,
                                 int rank, int world, const train_aug *a, baton_err *err)
{
    baton_pipeline_opts po;
    baton_pipeline_opts_default(&po);
    po.batch = batch;
    po.workers = workers > 0 ? workers : 2;
    if (a) {
        po.crop = (baton_crop)a->crop;
        po.size = a->size;
        memcpy(po.scale, a->scale, sizeof po.scale);
        memcpy(po.ratio, a->ratio, sizeof po.ratio);
        po.flip = a->flip;
    }
    po.layout = BATON_LAYOUT_NCHW;
    po.mean = mean;
    po.std = std;
    po.part_rank = (uint32_t)rank;
    po.part_world = (uint32_t)world;
    baton_pipeline *p = baton_pipeline_open(l, &po, err);
    if (!p && !err->code) baton_err_set(err, BATON_ERR_ARG, "cannot open the decode pipeline");
    return p;
}

baton_pipeline *train_open_pipe(baton_loader *l, uint32_t batch, int workers, const float *mean, const float *std,
                                const train_aug *a, baton_err *err)
{
    baton_pipeline *p = open_pipe(l, batch, workers, mean, std, 0, 1, a, err);
    baton_pipeline_set_logged(p, 0);   /* evaluation's batches are not training steps */
    return p;
}

baton_pipeline *train_open_pipe_part(baton_loader *l, uint32_t batch, int workers, int rank, int world,
                                     const train_aug *a, baton_err *err)
{
    return open_pipe(l, batch, workers, NULL, NULL, rank, world, a, err);
}

int train_shape_mismatch(baton_err *err, const char *what, const uint32_t ws[3], uint32_t wc, const char *uri,
                         const baton_manifest *got)
{
    return baton_err_set(err, BATON_ERR_FORMAT, "%s: %ux%ux%u images, %u classes; %s has %ux%ux%u, %u classes", what,
                         ws[0], ws[1], ws[2], wc, uri, got->shape[0], got->shape[1], got->shape[2], got->classes);
}

int train_model_for(const char *name, const uint32_t shape[3], uint32_t classes, uint32_t batch, uint64_t seed,
                    int reference, int precision, baton_nn_model **m, char kname[16], baton_err *err)
{
    const baton_nn_kernels *k = baton_nn_kernels_select(reference, precision, err);
    if (!k) return baton_err_prefix(err, "--precision %s", baton_nn_precision_name(precision));
    snprintf(kname, 16, "%s", k->name);
    baton_nn_spec spec = {
        .name = name,
        .in_c = (int)shape[2],
        .in_h = (int)shape[0],
        .in_w = (int)shape[1],
        .classes = (int)classes,
        .max_batch = (int)batch,
        .seed = seed,
    };
    int rc = baton_nn_model_create(&spec, k, m, err);
    if (rc)
        return baton_err_prefix(err, "model %s for %ux%ux%u images, %u classes", name, shape[0], shape[1], shape[2],
                                classes);
    return BATON_OK;
}
