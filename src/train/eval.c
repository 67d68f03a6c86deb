/* eval.c — `baton eval`: a checkpoint's loss, accuracy and confusion matrix on a dataset
 * (baton_eval_run), and the evaluation pass the trainer's validation shares (train_eval_epoch).
 *
 * Contract: the checkpoint is trusted only after it verifies; the dataset must have the image
 * shape and classes the model was built for (state.json's input_shape, or the checkpoint's tensors
 * for older checkpoints), checked before anything is decoded; it is normalised with the training
 * data's statistics from state.json (older checkpoints without them: the dataset's own). */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

int train_eval_epoch(baton_nn_model *m, baton_pipeline *p, double *loss, double *acc, uint64_t *samples,
                     uint64_t *conf, baton_err *err)
{
    baton_nn_model_set_training(m, 0);
    double sum = 0;
    uint64_t correct = 0, seen = 0;
    int rc;
    for (;;) {
        baton_batch *b;
        rc = baton_pipeline_next(p, &b, err);
        if (rc == BATON_END) {
            if (seen) break;
            continue;   /* the end marker of the previous pass */
        }
        if (rc) break;
        float l = 0;
        int ok = 0;
        rc = baton_nn_forward(m, b->x, (int)b->n, err);
        if (!rc) rc = baton_nn_loss(m, b->y, &l, &ok, err);   /* checks the labels' range */
        if (!rc && conf) {
            int k = baton_nn_model_classes(m);
            const float *lg = baton_nn_logits(m);
            for (uint32_t i = 0; i < b->n; i++) {
                const float *row = lg + (size_t)i * (size_t)k;
                int best = 0;
                for (int c = 1; c < k; c++)
                    if (row[c] > row[best]) best = c;
                conf[(size_t)b->y[i] * (size_t)k + (size_t)best]++;
            }
        }
        int last = b->last_of_epoch;
        uint32_t n = b->n;
        baton_pipeline_release(p, b);
        if (rc) break;
        sum += (double)l * n;
        correct += (uint64_t)ok;
        seen += n;
        if (last) break;
    }
    baton_nn_model_set_training(m, 1);
    if (rc && rc != BATON_END) return rc;
    *loss = seen ? sum / (double)seen : 0;
    *acc = seen ? (double)correct / (double)seen : 0;
    if (samples) *samples = seen;
    return BATON_OK;
}

void baton_eval_result_free(baton_eval_result *r)
{
    free(r->confusion);
    free(r->class_names);
    r->confusion = NULL;
    r->class_names = NULL;
}

/* The checkpoint folder ckpt names: itself when it is a ckpt-<step> folder, else its newest one
 * that verifies. */
static int find_ckpt(const char *ckpt, char *path, size_t cap, uint64_t *step, baton_err *err)
{
    char base[4096];
    snprintf(base, sizeof base, "%s", ckpt);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') base[--bl] = 0;
    const char *slash = strrchr(base, '/');
    if (baton_ckpt_parse_name(slash ? slash + 1 : base, step)) {
        snprintf(path, cap, "%s", base);
        return BATON_OK;
    }
    return baton_ckpt_latest(ckpt, path, cap, step, err);
}

/* What the model expects against what the dataset has: shape and classes from state.json, the
 * normalisation's channel count for checkpoints that do not record the shape. */
static int check_fits(const char *path, const baton_train_state *st, const char *uri, const baton_manifest *dm,
                      const uint32_t shape[3], baton_err *err)
{
    char what[4200];
    snprintf(what, sizeof what, "%s: trained on", path);
    if (st->classes) {
        /* a crop's size may differ from training's (a convolutional net evaluated at another
         * resolution); the channels and classes may not */
        int crop = st->has_augment && (st->crop == BATON_CROP_RANDOM_RESIZED || st->crop == BATON_CROP_CENTER);
        if ((crop ? st->input_shape[2] != shape[2] : memcmp(st->input_shape, shape, 3 * sizeof *shape)) ||
            st->classes != dm->classes)
            return train_shape_mismatch(err, what, st->input_shape, st->classes, uri, dm);
    } else if (st->norm_channels > 0 && (uint32_t)st->norm_channels != shape[2]) {
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: trained on %d-channel images; %s has %u channels", path,
                             st->norm_channels, uri, shape[2]);
    }
    return BATON_OK;
}

int baton_eval_run(const char *ckpt, const char *data_uri, baton_io_mode mode, int mode_set,
                   const char *local_dir, uint32_t batch, int crop, int crop_set, uint32_t size, int precision,
                   baton_eval_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!ckpt || !data_uri || batch < 1) return baton_err_set(err, BATON_ERR_ARG, "checkpoint, data and batch are required");
    char path[4096];
    int rc = find_ckpt(ckpt, path, sizeof path, &r->step, err);
    if (rc) return rc;
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
    char *state = NULL;
    if ((rc = baton_ckpt_load(path, NULL, NULL, &state, err))) return rc;
    baton_train_state st;
    rc = baton_train_state_parse(state, strlen(state), &st, err);
    free(state);
    if (rc) return baton_err_prefix(err, "%s", path);
    snprintf(r->model, sizeof r->model, "%s", st.model);

    baton_loader *l = NULL;
    baton_pipeline *p = NULL;
    baton_nn_model *m = NULL;
    baton_store_opts so;
    baton_store_opts_default(&so);
    if ((rc = train_open_loader(data_uri, mode, mode_set, &so, local_dir, 0, 0, st.seed, &l, err))) return rc;
    const baton_manifest *man = baton_loader_manifest(l);
    train_aug trained = {st.crop, st.crop_size, {st.scale[0], st.scale[1]}, {st.ratio[0], st.ratio[1]}, 0};
    train_aug aug = train_aug_eval(&trained);   /* the centre crop of the size it trained on */
    if (crop == BATON_CROP_CENTER || (crop == BATON_CROP_NONE && size)) aug.crop = BATON_CROP_CENTER, aug.size = size ? size : aug.size;
    else if (crop == BATON_CROP_NONE && crop_set) aug = (train_aug){0};
    uint32_t shape[3];
    if ((rc = train_input_shape(man, &aug, data_uri, shape, err))) goto out;
    if ((rc = check_fits(path, &st, data_uri, man, shape, err))) goto out;
    const int norm = st.norm_channels > 0;
    baton_cursor end = {st.seed, 1, 0};   /* one pass: nothing after it is fetched */
    if ((rc = baton_loader_set_end(l, &end, err))) goto out;
    if (!(p = train_open_pipe(l, batch, 2, norm ? st.mean : NULL, norm ? st.std : NULL, &aug, err))) {
        rc = err->code;
        goto out;
    }
    if ((rc = train_model_for(r->model, shape, man->classes, batch, st.seed, 0, precision, &m, r->kernels, err))) goto out;
    if ((rc = baton_ckpt_load(path, m, NULL, NULL, err))) {
        baton_err_prefix(err, "dataset %s (%ux%ux%u, %u classes)", data_uri, shape[0], shape[1], shape[2], man->classes);
        goto out;
    }
    r->classes = (uint32_t)baton_nn_model_classes(m);
    r->confusion = calloc((size_t)r->classes * r->classes, sizeof *r->confusion);
    r->class_names = calloc(r->classes, sizeof *r->class_names);
    if (!r->confusion || !r->class_names) {
        rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; man->class_names && i < r->classes && i < man->classes; i++)
        if (man->class_names[i]) snprintf(r->class_names[i], sizeof r->class_names[i], "%s", man->class_names[i]);
    rc = train_eval_epoch(m, p, &r->loss, &r->accuracy, &r->samples, r->confusion, err);
out:
    if (rc) baton_eval_result_free(r);
    if (p) baton_pipeline_close(p);
    if (l) baton_loader_close(l);
    baton_nn_model_free(m);
    return rc;
}
