/* train.c — the supervised trainer (baton_train_run) as a straight list of stages over a session
 * (session.c): open, resume, then per step poll → step → epoch end → step-done, then finish.
 *
 * Determinism: batches are a pure function of (seed, epoch, position); the model is initialised
 * from the seed; the learning rate is a pure function of the global step and the schedule; a
 * checkpoint carries the cursor after its last batch, the dropout RNG, the optimizer state and
 * the schedule. So a run resumed from any checkpoint ends with the same bytes as an uninterrupted
 * one (same kernels and thread count).
 *
 * Epoch bookkeeping (validation, CSV row) happens right after an epoch's last batch is trained,
 * before any checkpoint of that step, so a checkpoint never sits between a finished epoch and its
 * row; a crash after the row but before the next checkpoint leaves a row that the resume cuts
 * (csvlog.c). */
#include "train_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

void baton_train_opts_default(baton_train_opts *o)
{
    memset(o, 0, sizeof *o);
    baton_train_session_opts_default(&o->session);
    o->batch = 128;
    o->workers = 2;
}

typedef struct trainer {
    const baton_train_opts *o;
    baton_train_session *sess;
    baton_loader *loader, *vloader;
    baton_pipeline *pipe, *vpipe;
    baton_nn_model *model;
    baton_nn_optim *optim;
    const baton_manifest *man;
    train_aug aug;              /* the samples' crop and flip (opts) */
    int kprec;                  /* the precision the model's kernels run */
    uint32_t in_shape[3];       /* what the model sees: the crop's size, or the dataset's fixed shape */
    baton_nn_sched sched;
    uint64_t esize;             /* samples per epoch */
    baton_train_state st;       /* what the next checkpoint's state.json holds */
    double ep_t0;               /* start of the current epoch's time not yet in st.ep_seconds */
    double lr;                  /* the learning rate of the last step */
    uint64_t samples;           /* trained by this process */
    double t0;
    baton_progress prog;
    char label[160];
    train_dist *dist;           /* data parallelism; NULL: a single process */
    int stop_all;               /* a rank saw a notice before this step: the world stops after it */
    int audit_fd;               /* opts.sample_log, opened once (-1 none) */
    char *audit_buf;            /* a batch's audit lines, allocated once */
} trainer;

/* The session's snapshot callback: the model, the optimizer and state.json of this step. */
static int snapshot(void *ctx, baton_ckpt_store *store, uint64_t step, baton_err *err)
{
    trainer *t = ctx;
    double now = baton_now();
    t->st.ep_seconds += now - t->ep_t0;
    t->ep_t0 = now;
    memcpy(t->st.rng, baton_nn_model_rng(t->model)->s, sizeof t->st.rng);
    char *js = baton_train_state_format(&t->st);
    if (!js) return baton_err_set(err, BATON_ERR_NOMEM, "state.json: out of memory");
    int rc = baton_ckpt_snapshot(store, t->model, t->optim, js, step, BATON_CKPT_WAIT, err);
    free(js);
    return rc;
}

/* The zoo's models this trainer trains (the zoo also builds race's networks). */
static const char *const trainer_models[] = {"mlp", "lenet", "resnet8", "resnet20", "resnet56"};

static int check_opts(const baton_train_opts *o, baton_err *err)
{
    if (!o->data_uri || !o->model || !o->session.ckpt_dir)
        return baton_err_set(err, BATON_ERR_ARG, "data, model and checkpoint folder are required");
    int known = 0;
    for (size_t i = 0; i < sizeof trainer_models / sizeof trainer_models[0]; i++) known |= !strcmp(o->model, trainer_models[i]);
    if (!known)
        return baton_err_set(err, BATON_ERR_USAGE, "unknown model '%.40s': expected mlp, lenet, resnet8, resnet20 or resnet56",
                             o->model);
    if (o->batch < 1 || o->batch > BATON_TRAIN_MAX_BATCH)
        return baton_err_set(err, BATON_ERR_USAGE, "batch size %u: must be 1..%d (activations are allocated for it)",
                             o->batch, BATON_TRAIN_MAX_BATCH);
    if (o->lr < 0 || !isfinite(o->lr)) return baton_err_set(err, BATON_ERR_ARG, "learning rate must be positive");
    return BATON_OK;
}

/* What every rank must agree on before its first step (the data grid and the schedule). */
static int check_same_run(trainer *t, baton_err *err)
{
    const baton_train_opts *o = t->o;
    struct {
        uint64_t seed, batch, epochs, max_steps, esize, spe;
        uint32_t shape[3], classes, sync_bn, precision;
        char model[32];
    } f;
    memset(&f, 0, sizeof f);
    f.seed = o->seed, f.batch = o->batch, f.epochs = o->epochs, f.max_steps = o->max_steps, f.esize = t->esize;
    f.spe = t->st.steps_per_epoch;
    memcpy(f.shape, t->in_shape, sizeof f.shape);
    f.classes = t->man->classes;
    f.sync_bn = o->sync_bn != 0;
    f.precision = (uint32_t)o->precision;
    snprintf(f.model, sizeof f.model, "%s", o->model);
    return train_dist_same(t->dist, "--seed, --batch, --epochs, --max-steps, --model, --sync-bn, --precision and the dataset", &f,
                           sizeof f, err);
}

/* ---------------------------------------------------------------- stage: open */
static int stage_open(trainer *t, baton_train_result *r, baton_err *err)
{
    const baton_train_opts *o = t->o;
    baton_train_session_opts so = o->session;
    so.snapshot = snapshot;
    so.ctx = t;
    int rc = train_dist_open(o, &t->dist, err);
    if (rc) return rc;
    const int rank = train_dist_rank(t->dist);
    so.follower = rank > 0;   /* rank 0 alone holds the checkpoint folder */
    rc = baton_train_session_open(&so, &t->sess, err);   /* first: a notice during setup is not missed */
    /* file/cache copies: one per machine, shared by its ranks that see the same folder, named
     * after the first rank of the machine */
    char local[4096], dname[32];
    int lrank, lsize, leader;
    uint32_t srank = 0, ssize = 1;
    train_dist_node(t->dist, &lrank, &lsize, &leader);
    snprintf(dname, sizeof dname, leader ? "data-rank%d" : "data", leader);
    if (!rc) rc = baton_path_join(local, sizeof local, o->session.ckpt_dir, dname, err);
    const int copies = o->mode_set && (o->mode == BATON_MODE_FILE || o->mode == BATON_MODE_CACHE);
    if (!rc && copies && t->dist && !(rc = baton_mkdir_p(local, err)))
        rc = train_dist_share_group(t->dist, local, &srank, &ssize, err);
    if (!rc)
        rc = train_open_loader(o->data_uri, o->mode, o->mode_set, &o->session.store, local, srank, ssize, o->seed, &t->loader,
                               err);
    if (rc) return rc;
    t->man = baton_loader_manifest(t->loader);
    t->aug = (train_aug){o->crop, o->crop_size, {o->scale[0], o->scale[1]}, {o->ratio[0], o->ratio[1]}, o->flip != 0};
    if (!t->aug.scale[0] && !t->aug.scale[1]) t->aug.scale[0] = 0.08f, t->aug.scale[1] = 1.0f;   /* the pipeline's defaults, */
    if (!t->aug.ratio[0] && !t->aug.ratio[1]) t->aug.ratio[0] = 0.75f, t->aug.ratio[1] = 4.0f / 3.0f;   /* written down */
    if (!t->aug.size && (t->aug.crop == BATON_CROP_RANDOM_RESIZED || t->aug.crop == BATON_CROP_CENTER)) t->aug.size = 224;
    if ((rc = train_input_shape(t->man, &t->aug, o->data_uri, t->in_shape, err))) return rc;
    if ((rc = train_model_for(o->model, t->in_shape, t->man->classes, o->batch, o->seed, o->reference_kernels,
                              o->precision, &t->model, r->kernels, err)))
        return rc;
    t->st.precision = t->kprec = o->precision;
    baton_nn_optim_cfg oc = {.kind = BATON_NN_SGD, .momentum = 0.9, .nesterov = 1, .weight_decay = 5e-4};
    if ((rc = baton_nn_optim_create(&oc, t->model, &t->optim, err))) return rc;
    t->esize = baton_loader_epoch_size(t->loader);
    baton_train_state *s = &t->st;
    snprintf(s->model, sizeof s->model, "%s", o->model);
    s->seed = o->seed;
    s->batch = o->batch;
    s->cursor = (baton_cursor){o->seed, 0, 0};
    s->steps_per_epoch = (t->esize + o->batch - 1) / o->batch;
    s->epochs = o->epochs ? o->epochs : 1;
    s->base_lr = o->lr > 0 ? o->lr : (!strncmp(o->model, "resnet", 6) ? 0.1 : 0.01);
    s->momentum = oc.momentum, s->nesterov = oc.nesterov, s->weight_decay = oc.weight_decay;
    s->norm_channels = (int)(t->in_shape[2] < 4 ? t->in_shape[2] : 4);
    memcpy(s->mean, t->man->mean, sizeof s->mean);
    memcpy(s->std, t->man->std, sizeof s->std);
    memcpy(s->input_shape, t->in_shape, sizeof s->input_shape);
    s->has_augment = t->aug.crop != BATON_CROP_NONE || t->aug.flip;
    s->crop = t->aug.crop, s->crop_size = t->aug.size, s->flip = t->aug.flip;
    memcpy(s->scale, t->aug.scale, sizeof s->scale);
    memcpy(s->ratio, t->aug.ratio, sizeof s->ratio);
    s->classes = t->man->classes;
    if (t->dist && ((rc = check_same_run(t, err)) || (rc = train_dist_attach(t->dist, t->model, o->bucket_bytes, o->sync_bn, err))))
        return rc;
    if (!o->val_uri || rank > 0) return BATON_OK;   /* rank 0 validates for the world */
    /* validation: the shape first (its pipeline opens once the run's length is known, at resume) */
    char vlocal[4096];
    if ((rc = baton_path_join(vlocal, sizeof vlocal, o->session.ckpt_dir, "data-val", err))) return rc;
    if ((rc = train_open_loader(o->val_uri, o->mode, o->mode_set, &o->session.store, vlocal, 0, 0, o->seed, &t->vloader, err)))
        return rc;
    const baton_manifest *vm = baton_loader_manifest(t->vloader);
    train_aug va = train_aug_eval(&t->aug);
    uint32_t vshape[3];
    if ((rc = train_input_shape(vm, &va, o->val_uri, vshape, err))) return rc;
    if (memcmp(vshape, t->in_shape, sizeof vshape) || vm->classes != t->man->classes) {
        char what[4200];
        snprintf(what, sizeof what, "--data %s", o->data_uri);
        return train_shape_mismatch(err, what, t->in_shape, t->man->classes, o->val_uri, vm);
    }
    return BATON_OK;
}

/* The loaders fetch nothing past the run's last batch: the end of the last epoch, or the batch of
 * step --max-steps (batches follow the epoch's aligned grid); validation reads one pass for each
 * epoch this run ends, normalised with the training data's statistics. Set before the first seek
 * and before any pipeline reads. */
static int plan_reads(trainer *t, baton_err *err)
{
    const baton_train_opts *o = t->o;
    const baton_train_state *s = &t->st;
    baton_cursor end = {o->seed, s->epochs, 0};
    if (o->max_steps && o->max_steps < s->epochs * s->steps_per_epoch)
        end = (baton_cursor){o->seed, o->max_steps / s->steps_per_epoch, (o->max_steps % s->steps_per_epoch) * o->batch};
    int rc = baton_loader_set_end(t->loader, &end, err);
    if (rc || !t->vloader) return rc;
    baton_cursor vend = {o->seed, end.epoch > s->cursor.epoch ? end.epoch - s->cursor.epoch : 0, 0};
    if ((rc = baton_loader_set_end(t->vloader, &vend, err))) return rc;
    train_aug va = train_aug_eval(&t->aug);
    t->vpipe = train_open_pipe(t->vloader, o->batch, o->workers, t->man->mean, t->man->std, &va, err);
    return t->vpipe ? BATON_OK : err->code;
}

/* ---------------------------------------------------------------- stage: resume */
/* One hyper-parameter of the checkpoint against this run's (asked 0: not asked). 1: changed (with
 * allow), 0: unchanged, < 0: refused. */
static int hyper_change(const char *name, double ck, double asked, int allow, const char *effect, const char *advice,
                        baton_err *err)
{
    if (asked == 0 || asked == ck) return 0;
    if (!allow)
        return baton_err_set(err, BATON_ERR_ARG,
                             "the checkpoint was trained with %s %.10g; this run has %.10g%s. %s, or pass "
                             "--allow-change to apply the change",
                             name, ck, asked, effect, advice);
    baton_log(BATON_LOG_WARN, "resume: %s changed from %.10g to %.10g%s", name, ck, asked, effect);
    return 1;
}

/* The checkpoint's hyper-parameters become the run's; changes are refused unless allowed. */
static int adopt_hyper(trainer *t, const baton_train_state *ck, baton_err *err)
{
    const baton_train_opts *o = t->o;
    if (strcmp(ck->model, o->model))
        return baton_err_set(err, BATON_ERR_FORMAT, "the checkpoint holds model %s, not %s (use another --ckpt-dir)",
                             ck->model, o->model);
    if (ck->seed != o->seed || ck->batch != o->batch)
        return baton_err_set(err, BATON_ERR_ARG,
                             "the checkpoint was trained with --seed %" PRIu64 " --batch %" PRIu64
                             "; resume with the same values",
                             ck->seed, ck->batch);
    baton_train_state *s = &t->st;
    if (ck->has_augment != s->has_augment ||
        (s->has_augment && (ck->crop != s->crop || ck->crop_size != s->crop_size || ck->flip != s->flip ||
                            memcmp(ck->scale, s->scale, sizeof s->scale) || memcmp(ck->ratio, s->ratio, sizeof s->ratio))))
        return baton_err_set(err, BATON_ERR_ARG,
                             "the checkpoint was trained with --crop %s --size %u --scale %g,%g --ratio %g,%g%s; this run "
                             "has --crop %s --size %u --scale %g,%g --ratio %g,%g%s: resume with the same values",
                             baton_crop_name((baton_crop)ck->crop), ck->crop_size, ck->scale[0], ck->scale[1], ck->ratio[0],
                             ck->ratio[1], ck->flip ? " --flip" : "", baton_crop_name((baton_crop)s->crop), s->crop_size,
                             s->scale[0], s->scale[1], s->ratio[0], s->ratio[1], s->flip ? " --flip" : "");
    const uint64_t spe = s->steps_per_epoch;
    uint64_t epochs = ck->epochs ? ck->epochs : s->epochs;
    double lr = ck->has_schedule ? ck->base_lr : s->base_lr;
    char effect[256];
    if (ck->steps_per_epoch && ck->steps_per_epoch != spe) {
        snprintf(effect, sizeof effect, " (the data now has %" PRIu64 " samples: the cursor and schedule no longer match)",
                 t->esize);
        int rc = hyper_change("steps per epoch", (double)ck->steps_per_epoch, (double)spe, o->allow_change, effect,
                              "Resume on the dataset it was trained on", err);
        if (rc < 0) return rc;
    }
    if (ck->epochs && o->epochs) {
        uint64_t from = ck->has_schedule ? ck->total_steps : ck->epochs * spe, to = o->epochs * spe;
        baton_nn_sched a = {.kind = BATON_NN_SCHED_COSINE, .base_lr = lr, .total_steps = from};
        baton_nn_sched b = {.kind = BATON_NN_SCHED_COSINE, .base_lr = lr, .total_steps = to};
        snprintf(effect, sizeof effect,
                 " (the cosine schedule goes from %" PRIu64 " to %" PRIu64 " steps: the learning rate at step %" PRIu64
                 " from %.4g to %.4g)",
                 from, to, ck->step, baton_nn_sched_lr(&a, ck->step), baton_nn_sched_lr(&b, ck->step));
        int rc = hyper_change("--epochs", (double)ck->epochs, (double)o->epochs, o->allow_change, effect,
                              "Leave --epochs out to continue as trained", err);
        if (rc < 0) return rc;
        if (rc) epochs = o->epochs;
    }
    if (ck->has_schedule && o->lr > 0) {
        int rc = hyper_change("--lr", ck->base_lr, o->lr, o->allow_change, "",
                              "Leave --lr out to continue as trained", err);
        if (rc < 0) return rc;
        if (rc) lr = o->lr;
    }
    s->epochs = epochs;
    s->base_lr = lr;
    s->precision = ck->precision;   /* the run's arithmetic (applied by use_precision) */
    if (o->precision_set && o->precision != ck->precision) {
        if (!o->allow_change)
            return baton_err_set(err, BATON_ERR_ARG,
                                 "the checkpoint was trained with --precision %s; this run has --precision %s (the "
                                 "tensors are f32 either way, the arithmetic differs). Leave --precision out to "
                                 "continue as trained, or pass --allow-change to apply the change",
                                 baton_nn_precision_name(ck->precision), baton_nn_precision_name(o->precision));
        baton_log(BATON_LOG_WARN, "resume: --precision changed from %s to %s", baton_nn_precision_name(ck->precision),
                  baton_nn_precision_name(o->precision));
        s->precision = o->precision;
    }
    return BATON_OK;
}

/* The model onto the kernels of the run's precision (the checkpoint's, adopted at resume) when it
 * was built for another. */
static int use_precision(trainer *t, baton_train_result *r, baton_err *err)
{
    const int want = t->st.precision;
    if (want == t->kprec) return BATON_OK;
    const baton_nn_kernels *k = baton_nn_kernels_select(t->o->reference_kernels, want, err);
    if (!k)
        return baton_err_prefix(err, "the checkpoint was trained with --precision %s (pass --precision %s "
                                "--allow-change to go on in the other precision)", baton_nn_precision_name(want),
                                baton_nn_precision_name(t->kprec));
    baton_nn_model_set_kernels(t->model, k);
    snprintf(r->kernels, sizeof r->kernels, "%s", k->name);
    t->kprec = want;
    return BATON_OK;
}

static int stage_resume(trainer *t, baton_train_result *r, baton_err *err)
{
    const baton_train_opts *o = t->o;
    char path[4096];
    uint64_t cstep = 0;
    char *state = NULL;
    double read_t0 = baton_now();
    int rc = baton_train_session_resume(t->sess, path, sizeof path, &cstep, &state, err);
    if (rc == BATON_OK) {
        baton_train_state ck;
        rc = baton_train_state_parse(state, strlen(state), &ck, err);
        free(state);
        if (!rc) rc = adopt_hyper(t, &ck, err);
        if (!rc) rc = baton_ckpt_load(path, t->model, t->optim, NULL, err);
        if (rc) return baton_err_prefix(err, "resume from %s", path);
        baton_train_state *s = &t->st;
        s->step = ck.step, s->epoch = ck.epoch, s->cursor = ck.cursor;
        s->ep_loss_sum = ck.ep_loss_sum, s->ep_seconds = ck.ep_seconds;
        s->ep_correct = ck.ep_correct, s->ep_seen = ck.ep_seen;
        memcpy(baton_nn_model_rng(t->model)->s, ck.rng, sizeof ck.rng);
        if (ck.has_metrics) {
            s->loss = ck.loss, s->accuracy = ck.accuracy;
            s->has_val = ck.has_val, s->val_loss = ck.val_loss, s->val_accuracy = ck.val_accuracy;
        }
        r->resumed = 1;
        r->resumed_step = s->step;
        baton_log(BATON_LOG_INFO, "resuming from %s (step %" PRIu64 ", epoch %" PRIu64 "; checkpoint read in %.3f s)",
                  path, s->step, s->epoch, baton_now() - read_t0);
    } else if (rc != BATON_ERR_NOTFOUND) {
        return rc;
    }
    if (t->dist && (rc = train_dist_sync(t->dist, t->model, t->optim, &t->st, &r->resumed, &r->resumed_step, err)))
        return rc;
    if ((rc = use_precision(t, r, err))) return rc;
    baton_train_state *s = &t->st;
    s->total_steps = s->epochs * s->steps_per_epoch;
    t->sched = (baton_nn_sched){.kind = BATON_NN_SCHED_COSINE, .base_lr = s->base_lr, .total_steps = s->total_steps};
    if ((rc = baton_nn_sched_check(&t->sched, err))) return rc;
    /* a cursor at the end of an epoch continues with the next one */
    if (s->cursor.position >= t->esize) s->cursor = (baton_cursor){s->cursor.seed, s->cursor.epoch + 1, 0};
    if ((rc = plan_reads(t, err))) return rc;
    if ((rc = baton_loader_seek(t->loader, &s->cursor, err))) return rc;
    if (!(t->pipe = train_open_pipe_part(t->loader, o->batch, o->workers, train_dist_rank(t->dist),
                                         train_dist_world(t->dist), &t->aug, err)))
        return err->code;
    if (o->log_path && !train_dist_rank(t->dist) && (rc = train_csv_cut(o->log_path, s->epoch, err))) return rc;
    baton_train_session_begin(t->sess, s->step, r->resumed);
    return BATON_OK;
}

/* ---------------------------------------------------------------- stage: step */
/* The audit line of each sample of this batch (opts.sample_log), appended in one write: its epoch,
 * position and rank, then its label and the CRC32C of its input tensor (the decoded, normalised
 * floats), so that another reader of the same data (the Python module's Loader) can be held to
 * exactly these samples. */
static int log_samples(trainer *t, const baton_batch *b, baton_err *err)
{
    if (t->audit_fd < 0) {
        if (!(t->audit_buf = malloc((size_t)t->o->batch * 96 + 1)))
            return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        if ((t->audit_fd = open(t->o->sample_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
            return baton_err_errno(err, errno, "open", t->o->sample_log);
    }
    size_t len = 0, floats = (size_t)b->c * b->h * b->w;
    for (uint32_t i = 0; i < b->n; i++)
        len += (size_t)snprintf(t->audit_buf + len, 96, "%" PRIu64 " %" PRIu64 " %d %d %08x\n", b->epoch, b->pos[i],
                                train_dist_rank(t->dist), (int)b->y[i],
                                (unsigned)baton_crc32c(0, b->x + i * floats, floats * sizeof(float)));
    return baton_write_all(t->audit_fd, t->audit_buf, len, t->o->sample_log, err);
}

/* Train one batch. *last: it was the epoch's last. */
static int stage_step(trainer *t, int *last, baton_err *err)
{
    baton_train_state *s = &t->st;
    baton_batch *b;
    int rc;
    while ((rc = baton_pipeline_next(t->pipe, &b, err)) == BATON_END) {}   /* epochs end on last_of_epoch */
    if (rc) return rc;
    if (t->o->sample_log && (rc = log_samples(t, b, err))) {
        baton_pipeline_release(t->pipe, b);
        return rc;
    }
    double compute_t0 = baton_now();
    float loss = 0;
    int correct = 0;
    double loss_sum = 0;
    uint64_t gcorrect = 0;
    if (t->dist) {   /* this rank's part, then the gradient allreduce: every rank steps the same */
        /* dropout: each rank its own stream, a function of (seed, step, rank), so that ranks do not
         * drop the same units and a resume (rank 0's state for all) continues every rank exactly */
        baton_rng_seed3(baton_nn_model_rng(t->model), s->seed ^ 0x64726f706f7574ull, s->step,
                        (uint64_t)train_dist_rank(t->dist));
        int stop = 0;
        rc = train_dist_step(t->dist, t->model, b, t->stop_all, &loss_sum, &gcorrect, &stop, err);
        t->stop_all = stop;
        loss = b->total ? (float)(loss_sum / b->total) : 0;
    } else {
        rc = baton_nn_train_batch(t->model, b->x, b->y, (int)b->n, &loss, &correct, err);
        loss_sum = (double)loss * b->n;
        gcorrect = (uint64_t)correct;
    }
    t->lr = baton_nn_sched_lr(&t->sched, s->step);
    if (!rc) rc = baton_nn_optim_step(t->optim, t->lr, err);
    uint32_t n = t->dist ? b->total : b->n;   /* the global batch's samples */
    *last = b->last_of_epoch;
    s->cursor = b->next;
    baton_pipeline_release(t->pipe, b);
    if (rc) return baton_err_prefix(err, "step %" PRIu64, s->step);
    if (!isfinite(loss)) return baton_err_set(err, BATON_ERR_ARG, "step %" PRIu64 ": loss is %f (lower --lr)", s->step, loss);
    s->step++;
    baton_verify_log_loss(s->step, (double)loss);
    t->samples += n;
    s->ep_loss_sum += loss_sum;
    s->ep_correct += gcorrect;
    s->ep_seen += n;
    double now = baton_now();
    if (t->samples == n) {   /* for resume-latency measurements: BATON_LOG=debug */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        baton_log(BATON_LOG_DEBUG, "first step of this process done at %.6f (wall clock; its compute %.3f s)",
                  (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9, now - compute_t0);
    }
    double el = now - t->t0;
    snprintf(t->label, sizeof t->label, "train epoch %" PRIu64 "/%" PRIu64 " step %" PRIu64 " loss %.4f acc %.4f %.0f samples/s",
             s->epoch + 1, s->epochs, s->step, s->ep_loss_sum / (double)s->ep_seen,
             (double)s->ep_correct / (double)s->ep_seen, el > 0 ? (double)t->samples / el : 0.0);
    baton_progress_update(&t->prog, s->step);
    return BATON_OK;
}

/* ---------------------------------------------------------------- stage: end of epoch */
static int stage_epoch_end(trainer *t, baton_err *err)
{
    baton_train_state *s = &t->st;
    double secs = s->ep_seconds + (baton_now() - t->ep_t0);
    s->loss = s->ep_loss_sum / (double)s->ep_seen;
    s->accuracy = (double)s->ep_correct / (double)s->ep_seen;
    int rc;
    if (t->vpipe) {
        if ((rc = train_eval_epoch(t->model, t->vpipe, &s->val_loss, &s->val_accuracy, NULL, NULL, err)))
            return baton_err_prefix(err, "validation after epoch %" PRIu64, s->epoch);
        s->has_val = 1;
    }
    if (t->o->log_path && !train_dist_rank(t->dist) && (rc = train_csv_row(t->o->log_path, s->epoch, s->loss, s->accuracy, t->vpipe != NULL,
                                              s->val_loss, s->val_accuracy, t->lr, secs, err)))
        return rc;
    s->epoch++;
    s->ep_loss_sum = 0;
    s->ep_correct = s->ep_seen = 0;
    s->ep_seconds = 0;
    t->ep_t0 = baton_now();
    return BATON_OK;
}

/* ---------------------------------------------------------------- the run */
static int run_steps(trainer *t, baton_err *err)
{
    const baton_train_opts *o = t->o;
    baton_train_state *s = &t->st;
    baton_nn_model_set_training(t->model, 1);
    uint64_t total = s->epochs * s->steps_per_epoch;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    snprintf(t->label, sizeof t->label, "train");
    const int shown = train_dist_rank(t->dist) == 0;   /* one progress line for the world */
    if (o->progress && shown) baton_progress_start(&t->prog, t->label, total);
    else memset(&t->prog, 0, sizeof t->prog);
    baton_progress_plain_every(&t->prog, t->label, total, shown ? o->progress_every_s : 0);
    t->t0 = t->ep_t0 = baton_now();
    t->lr = baton_nn_sched_lr(&t->sched, s->step);
    int rc = BATON_OK;
    while (s->epoch < s->epochs && (!o->max_steps || s->step < o->max_steps)) {
        /* 1: a notice, after the step before. With ranks, it rides in this step's allreduce and the
         * whole world stops after the step (all ranks at the same boundary) */
        if ((rc = baton_train_session_poll(t->sess, s->step, err)) && !t->dist) break;
        if (rc < 0) break;
        t->stop_all = rc == 1;
        int last = 0;
        if ((rc = stage_step(t, &last, err))) break;
        if (last && (rc = stage_epoch_end(t, err))) break;
        if ((rc = baton_train_session_step_done(t->sess, s->step, err))) break;
        if (t->stop_all) {
            rc = 1;
            break;
        }
    }
    baton_progress_finish(&t->prog);
    return rc < 0 ? rc : BATON_OK;
}

static void fill_result(const trainer *t, baton_train_result *r, const baton_notice_event *nev)
{
    const baton_train_state *s = &t->st;
    r->step = s->step;
    r->epoch = s->epoch;
    r->epochs = s->epochs;
    r->steps_per_epoch = s->steps_per_epoch;
    r->steps_run = s->step - r->resumed_step;
    r->lr = s->base_lr;
    r->seconds = baton_now() - t->t0;
    r->samples_per_s = r->seconds > 0 ? (double)t->samples / r->seconds : 0;
    r->loss = s->ep_seen ? s->ep_loss_sum / (double)s->ep_seen : s->loss;   /* stopped inside an epoch: the partial one */
    r->accuracy = s->ep_seen ? (double)s->ep_correct / (double)s->ep_seen : s->accuracy;
    r->has_val = s->has_val;
    r->val_loss = s->val_loss;
    r->val_accuracy = s->val_accuracy;
    r->rebalances = baton_train_session_rebalances(t->sess);
    train_dist_stats(t->dist, r);
    baton_train_session_interval(t->sess, &r->ckpt_tau_s, &r->ckpt_delta_s);
    r->ckpt_mtbi_s = t->o->session.mtbi_s;
    if (nev && nev->kind != BATON_NOTICE_NONE) {
        r->stopped = 1;
        baton_train_notice_describe(nev, r->notice, r->notice_source, &r->notice_margin_s);
        r->notice_deadline = nev->deadline;
        r->interruption = *baton_train_session_stop_report(t->sess);
        if (r->interruption.stopped) r->notice_margin_s = r->interruption.margin_s;
    }
}

int baton_train_run(const baton_train_opts *o, baton_train_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = check_opts(o, err);
    if (rc) return rc;
    trainer t;
    memset(&t, 0, sizeof t);
    t.o = o;
    t.t0 = baton_now();
    t.audit_fd = -1;
    if (!(rc = stage_open(&t, r, err)) && !(rc = stage_resume(&t, r, err)) && !(rc = run_steps(&t, err))) {
        baton_notice_event nev = {0};
        if (t.dist && t.stop_all)   /* the world stops: rank 0 commits the notice whoever saw it */
            rc = train_dist_share_notice(t.dist, t.sess, train_session_latched(t.sess), err);
        if (!rc) rc = baton_train_session_finish(t.sess, t.st.step, &nev, err);
        /* after rank 0's commit (a collective waits for it): the ranks' weights agree */
        if (t.dist && (rc == BATON_OK || rc == BATON_STOPPED)) {
            int erc = train_dist_end(t.dist, t.model, err);
            if (erc) rc = erc;
        }
        fill_result(&t, r, rc == BATON_STOPPED ? &nev : NULL);
    } else if (t.sess) {
        fill_result(&t, r, NULL);
    }
    if (t.sess) snprintf(r->checkpoint, sizeof r->checkpoint, "%s", baton_train_session_checkpoint(t.sess));
    if ((rc == BATON_OK || rc == BATON_STOPPED) && t.sess) {
        if (o->report && train_dist_rank(t.dist) == 0) o->report(r, rc, o->report_ctx);
        /* the others exit only after rank 0 has reported (mpirun ends the job on their exit 75) */
        baton_err berr = {0};
        if (t.dist && train_dist_barrier(t.dist, &berr))
            baton_log(BATON_LOG_WARN, "the ranks' last barrier: %s", berr.msg);
    }
    baton_train_session_close(t.sess);
    if (t.vpipe) baton_pipeline_close(t.vpipe);
    if (t.vloader) baton_loader_close(t.vloader);
    if (t.pipe) baton_pipeline_close(t.pipe);
    if (t.loader) baton_loader_close(t.loader);
    baton_nn_optim_free(t.optim);
    baton_nn_model_free(t.model);
    train_dist_close(t.dist);
    if (t.audit_fd >= 0) close(t.audit_fd);
    free(t.audit_buf);
    return rc;
}
