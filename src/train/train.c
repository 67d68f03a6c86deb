/* train.c — the training loop (baton_train_run) and checkpoint evaluation (baton_eval_run).
 *
 * Determinism: batches are a pure function of (seed, epoch, position); the model is initialised
 * from the seed; the learning rate is a pure function of the global step; a checkpoint carries the
 * cursor after its last batch, the dropout RNG and the optimizer state. So a run resumed from any
 * checkpoint ends with the same bytes as an uninterrupted one (same kernels and thread count).
 *
 * Epoch bookkeeping (CSV row, validation) happens right after an epoch's last batch is trained,
 * before any checkpoint of that step, so a checkpoint never sits between a finished epoch and its
 * row. A crash after the row is written but before the next checkpoint repeats that row on resume. */
#include "baton/train.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void baton_train_opts_default(baton_train_opts *o)
{
    memset(o, 0, sizeof *o);
    baton_store_opts_default(&o->store);
    o->epochs = 1;
    o->batch = 128;
    o->workers = 2;
    o->ckpt_every_sec = BATON_TRAIN_CKPT_EVERY_SEC;
}

static int is_local_uri(const char *uri)
{
    return !strstr(uri, "://") || !strncmp(uri, "file://", 7);
}

/* Per-run state that goes into state.json. */
typedef struct run_state {
    uint64_t step, epoch;
    baton_cursor cursor;
    double ep_loss_sum, ep_seconds;
    uint64_t ep_correct, ep_seen;
    double last_loss, last_acc, last_val_loss, last_val_acc;
    int has_val_metrics;
} run_state;

typedef struct trainer {
    const baton_train_opts *o;
    baton_loader *loader, *vloader;
    baton_pipeline *pipe, *vpipe;
    baton_nn_model *model;
    baton_nn_optim *optim;
    baton_ckpt_store *store;
    const baton_manifest *man;
    baton_nn_sched sched;
    baton_nn_optim_cfg ocfg;
    double lr;
    uint64_t steps_per_epoch;
    uint64_t committed;   /* step of the newest committed checkpoint (the start state: 0) */
    run_state st;
} trainer;

/* ---------------------------------------------------------------- state.json */
static char *state_to_json(const trainer *t)
{
    const run_state *s = &t->st;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    char buf[64];
    cJSON_AddStringToObject(j, "model", t->o->model);
    cJSON_AddNumberToObject(j, "step", (double)s->step);
    cJSON_AddNumberToObject(j, "epoch", (double)s->epoch);
    cJSON *c = cJSON_AddObjectToObject(j, "cursor");
    snprintf(buf, sizeof buf, "%" PRIu64, s->cursor.seed);
    cJSON_AddStringToObject(c, "seed", buf);
    cJSON_AddNumberToObject(c, "epoch", (double)s->cursor.epoch);
    cJSON_AddNumberToObject(c, "position", (double)s->cursor.position);
    const baton_rng *rng = baton_nn_model_rng(t->model);
    cJSON *r = cJSON_AddArrayToObject(j, "dropout_rng");
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%016" PRIx64, rng->s[i]);
        cJSON_AddItemToArray(r, cJSON_CreateString(buf));
    }
    cJSON *sc = cJSON_AddObjectToObject(j, "schedule");
    cJSON_AddStringToObject(sc, "kind", "cosine");
    cJSON_AddNumberToObject(sc, "base_lr", t->sched.base_lr);
    cJSON_AddNumberToObject(sc, "total_steps", (double)t->sched.total_steps);
    cJSON_AddNumberToObject(sc, "position", (double)s->step);
    cJSON *h = cJSON_AddObjectToObject(j, "hyper");
    snprintf(buf, sizeof buf, "%" PRIu64, t->o->seed);
    cJSON_AddStringToObject(h, "seed", buf);
    cJSON_AddNumberToObject(h, "batch", t->o->batch);
    cJSON_AddNumberToObject(h, "epochs", (double)t->o->epochs);
    cJSON_AddNumberToObject(h, "steps_per_epoch", (double)t->steps_per_epoch);
    cJSON_AddStringToObject(h, "optimizer", "sgd");
    cJSON_AddNumberToObject(h, "momentum", t->ocfg.momentum);
    cJSON_AddBoolToObject(h, "nesterov", t->ocfg.nesterov);
    cJSON_AddNumberToObject(h, "weight_decay", t->ocfg.weight_decay);
    cJSON *nm = cJSON_AddObjectToObject(j, "normalisation");
    cJSON *mean = cJSON_AddArrayToObject(nm, "mean"), *std = cJSON_AddArrayToObject(nm, "std");
    for (uint32_t k = 0; k < t->man->shape[2] && k < 4; k++) {
        cJSON_AddItemToArray(mean, cJSON_CreateNumber(t->man->mean[k]));
        cJSON_AddItemToArray(std, cJSON_CreateNumber(t->man->std[k]));
    }
    cJSON *sh = cJSON_AddArrayToObject(j, "input_shape");
    for (int k = 0; k < 3; k++) cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->man->shape[k]));
    cJSON_AddNumberToObject(j, "classes", t->man->classes);
    cJSON *ep = cJSON_AddObjectToObject(j, "epoch_sums");
    cJSON_AddNumberToObject(ep, "loss_sum", s->ep_loss_sum);
    cJSON_AddNumberToObject(ep, "correct", (double)s->ep_correct);
    cJSON_AddNumberToObject(ep, "seen", (double)s->ep_seen);
    cJSON_AddNumberToObject(ep, "seconds", s->ep_seconds);
    cJSON *m = cJSON_AddObjectToObject(j, "metrics");
    cJSON_AddNumberToObject(m, "loss", s->last_loss);
    cJSON_AddNumberToObject(m, "accuracy", s->last_acc);
    if (s->has_val_metrics) {
        cJSON_AddNumberToObject(m, "val_loss", s->last_val_loss);
        cJSON_AddNumberToObject(m, "val_accuracy", s->last_val_acc);
    }
    cJSON_AddStringToObject(j, "baton_version", BATON_VERSION);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}

/* Restore the run state from state.json text (the model must be this run's, seed and batch too). */
static int state_from_json(trainer *t, const char *text, baton_err *err)
{
    baton_train_state st;
    int rc = baton_train_state_parse(text, strlen(text), &st, err);
    if (rc) return rc;
    if (strcmp(st.model, t->o->model))
        return baton_err_set(err, BATON_ERR_FORMAT, "the checkpoint holds model %s, not %s (use another --ckpt-dir)",
                             st.model, t->o->model);
    if (st.seed != t->o->seed || st.batch != t->o->batch)
        return baton_err_set(err, BATON_ERR_ARG,
                             "the checkpoint was trained with --seed %" PRIu64 " --batch %" PRIu64
                             "; resume with the same values",
                             st.seed, st.batch);
    run_state *s = &t->st;
    s->step = st.step;
    s->epoch = st.epoch;
    s->cursor = st.cursor;
    s->ep_loss_sum = st.ep_loss_sum;
    s->ep_seconds = st.ep_seconds;
    s->ep_correct = st.ep_correct;
    s->ep_seen = st.ep_seen;
    memcpy(baton_nn_model_rng(t->model)->s, st.rng, sizeof st.rng);
    if (st.has_metrics) {
        s->last_loss = st.loss;
        s->last_acc = st.accuracy;
        s->has_val_metrics = st.has_val;
        s->last_val_loss = st.val_loss;
        s->last_val_acc = st.val_accuracy;
    }
    return BATON_OK;
}

/* ---------------------------------------------------------------- helpers */
/* The decode pipeline: no augmentation, NCHW; normalised with mean/std (NULL: the dataset's own —
 * the training data; validation and evaluation pass the training data's statistics). */
static baton_pipeline *open_pipe(baton_loader *l, uint32_t batch, int workers, const float *mean, const float *std,
                                 baton_err *err)
{
    baton_pipeline_opts po;
    baton_pipeline_opts_default(&po);
    po.batch = batch;
    po.workers = workers > 0 ? workers : 2;
    po.crop_pad = 0;
    po.flip = 0;
    po.layout = BATON_LAYOUT_NCHW;
    po.mean = mean;
    po.std = std;
    return baton_pipeline_open(l, &po, err);
}

static int open_data(const char *uri, baton_io_mode mode, int mode_set, const baton_store_opts *store,
                     const char *local_dir, uint64_t seed, uint32_t batch, int workers, const float *mean,
                     const float *std, baton_loader **l, baton_pipeline **p, baton_err *err)
{
    baton_loader_opts lo;
    baton_loader_opts_default(&lo);
    lo.uri = uri;
    lo.mode = mode_set ? mode : (is_local_uri(uri) ? BATON_MODE_MOUNT : BATON_MODE_PIPE);
    lo.store = *store;
    lo.seed = seed;
    if (lo.mode == BATON_MODE_FILE || lo.mode == BATON_MODE_CACHE) {
        if (!local_dir) return baton_err_set(err, BATON_ERR_ARG, "%s mode needs a local folder", baton_io_mode_name(lo.mode));
        int rc = baton_mkdir_p(local_dir, err);
        if (rc) return rc;
        lo.local_dir = local_dir;
    }
    int rc = baton_loader_open(&lo, l, err);
    if (rc) return baton_err_prefix(err, "%s", uri);
    const baton_manifest *m = baton_loader_manifest(*l);
    if (!m->shape[0] || !m->shape[1] || !m->shape[2]) {
        baton_loader_close(*l);
        *l = NULL;
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: images vary in size; training needs one fixed shape", uri);
    }
    if (baton_loader_epoch_size(*l) == 0) {
        baton_loader_close(*l);
        *l = NULL;
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: no records", uri);
    }
    if (!p) return BATON_OK;   /* the caller positions the loader first */
    *p = open_pipe(*l, batch, workers, mean, std, err);
    if (!*p) {
        baton_loader_close(*l);
        *l = NULL;
        return err->code ? err->code : BATON_ERR_ARG;
    }
    return BATON_OK;
}

/* One pass over the next epoch of a pipeline, model in evaluation mode. conf (NULL: not wanted)
 * receives the classes × classes confusion counts (row = label, column = first maximum logit). */
static int eval_epoch(baton_nn_model *m, baton_pipeline *p, double *loss, double *acc, uint64_t *samples,
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

/* Create the log with its header row when it does not exist yet (or is empty). */
static int csv_header(const char *path, baton_err *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && sb.st_size > 0) return BATON_OK;
    FILE *f = fopen(path, "a");
    if (!f) return baton_err_set(err, BATON_ERR_IO, "%s: cannot open the log: %s", path, strerror(errno));
    fprintf(f, "epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds\n");
    if (fclose(f) != 0) return baton_err_set(err, BATON_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return BATON_OK;
}

static int csv_row(const char *path, uint64_t epoch, double loss, double acc, int has_val, double vloss,
                   double vacc, double lr, double seconds, baton_err *err)
{
    int rc = csv_header(path, err);
    if (rc) return rc;
    FILE *f = fopen(path, "a");
    if (!f) return baton_err_set(err, BATON_ERR_IO, "%s: cannot open the log: %s", path, strerror(errno));
    fprintf(f, "%" PRIu64 ",%.6f,%.6f,", epoch, loss, acc);
    if (has_val) fprintf(f, "%.6f,%.6f,", vloss, vacc);
    else fprintf(f, ",,");
    fprintf(f, "%.8g,%.3f\n", lr, seconds);
    if (fclose(f) != 0) return baton_err_set(err, BATON_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return BATON_OK;
}

static int model_for(const char *name, const baton_manifest *man, uint32_t batch, uint64_t seed, int reference,
                     baton_nn_model **m, char kname[16], baton_err *err)
{
    const baton_nn_kernels *k = NULL;
    if (!reference) {
        baton_err kerr = {0};
        k = baton_nn_kernels_dnnl(&kerr);
        if (!k) baton_log(BATON_LOG_WARN, "oneDNN unavailable (%s); using the reference kernels", kerr.msg);
    }
    if (!k) k = baton_nn_kernels_reference();
    snprintf(kname, 16, "%s", k->name);
    baton_nn_spec spec = {
        .name = name,
        .in_c = (int)man->shape[2],
        .in_h = (int)man->shape[0],
        .in_w = (int)man->shape[1],
        .classes = (int)man->classes,
        .max_batch = (int)batch,
        .seed = seed,
    };
    int rc = baton_nn_model_create(&spec, k, m, err);
    if (rc)
        return baton_err_prefix(err, "model %s for %ux%ux%u images, %u classes", name, man->shape[0], man->shape[1],
                                man->shape[2], man->classes);
    return BATON_OK;
}

static int save(trainer *t, int sync, baton_err *err)
{
    char *js = state_to_json(t);
    if (!js) return baton_err_set(err, BATON_ERR_NOMEM, "state.json: out of memory");
    int rc;
    uint64_t cs;
    if (baton_ckpt_reap(t->store, 1, &cs) > 0) t->committed = cs;
    if (sync) {
        rc = baton_ckpt_save_sync(t->store, t->model, t->optim, js, t->st.step, err);
        if (!rc) t->committed = t->st.step;
    } else {
        rc = baton_ckpt_snapshot(t->store, t->model, t->optim, js, t->st.step, BATON_CKPT_WAIT, err);
        if (!rc) rc = baton_ckpt_persist_async(t->store, err);
    }
    free(js);
    return rc ? baton_err_prefix(err, "checkpoint at step %" PRIu64, t->st.step) : BATON_OK;
}

/* The global step for a supervisor (fleet work-lost accounting): a fixed-width number rewritten
 * in place, so a reader never sees a torn or shorter value. */
static void progress_put(int fd, uint64_t step)
{
    char b[24];
    int n = snprintf(b, sizeof b, "%020" PRIu64 "\n", step);
    if (fd >= 0 && pwrite(fd, b, (size_t)n, 0) != n) baton_log(BATON_LOG_DEBUG, "progress file: %s", strerror(errno));
}

/* ---------------------------------------------------------------- the loop */
int baton_train_run(const baton_train_opts *o, baton_train_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!o->data_uri || !o->model || !o->ckpt_dir)
        return baton_err_set(err, BATON_ERR_ARG, "data, model and checkpoint folder are required");
    if (o->epochs < 1 || o->batch < 1) return baton_err_set(err, BATON_ERR_ARG, "epochs and batch must be >= 1");
    if (o->lr < 0 || !isfinite(o->lr)) return baton_err_set(err, BATON_ERR_ARG, "learning rate must be positive");

    trainer t;
    memset(&t, 0, sizeof t);
    t.o = o;
    int rc = baton_ckpt_store_open(o->ckpt_dir, o->keep, &t.store, err);
    if (rc) return rc;
    int pfd = -1;
    baton_notice_watcher *nw = NULL;   /* started first: a notice during setup is not missed */
    baton_notice_event nev = {0};
    if (o->notice && (rc = baton_notice_start(o->notice_opts, &nw, err))) goto done;
    if (o->ckpt_uri && (rc = baton_ckpt_store_attach(t.store, o->ckpt_uri, &o->store, err))) goto done;
    char local[4096];
    if ((rc = baton_path_join(local, sizeof local, o->ckpt_dir, "data", err))) goto done;
    if ((rc = open_data(o->data_uri, o->mode, o->mode_set, &o->store, local, o->seed, o->batch, o->workers, NULL,
                        NULL, &t.loader, NULL, err)))
        goto done;
    t.man = baton_loader_manifest(t.loader);
    if ((rc = model_for(o->model, t.man, o->batch, o->seed, o->reference_kernels, &t.model, r->kernels, err)))
        goto done;
    t.ocfg = (baton_nn_optim_cfg){.kind = BATON_NN_SGD, .momentum = 0.9, .nesterov = 1, .weight_decay = 5e-4};
    if ((rc = baton_nn_optim_create(&t.ocfg, t.model, &t.optim, err))) goto done;
    uint64_t esize = baton_loader_epoch_size(t.loader);
    t.steps_per_epoch = (esize + o->batch - 1) / o->batch;
    r->steps_per_epoch = t.steps_per_epoch;
    t.lr = o->lr > 0 ? o->lr : (!strncmp(o->model, "resnet", 6) ? 0.1 : 0.01);
    t.sched = (baton_nn_sched){.kind = BATON_NN_SCHED_COSINE, .base_lr = t.lr,
                               .total_steps = o->epochs * t.steps_per_epoch};
    if ((rc = baton_nn_sched_check(&t.sched, err))) goto done;
    if (o->val_uri) {
        char vlocal[4096];
        if ((rc = baton_path_join(vlocal, sizeof vlocal, o->ckpt_dir, "data-val", err))) goto done;
        if ((rc = open_data(o->val_uri, o->mode, o->mode_set, &o->store, vlocal, o->seed, o->batch, o->workers,
                            t.man->mean, t.man->std, &t.vloader, NULL, err)))
            goto done;
        const baton_manifest *vm = baton_loader_manifest(t.vloader);
        if (memcmp(vm->shape, t.man->shape, sizeof vm->shape) || vm->classes != t.man->classes) {
            rc = baton_err_set(err, BATON_ERR_FORMAT,
                               "%s: %ux%ux%u images, %u classes; --data has %ux%ux%u, %u classes", o->val_uri,
                               vm->shape[0], vm->shape[1], vm->shape[2], vm->classes, t.man->shape[0],
                               t.man->shape[1], t.man->shape[2], t.man->classes);
            goto done;
        }
    }

    /* resume */
    t.st.cursor = (baton_cursor){o->seed, 0, 0};
    char path[4096];
    uint64_t cstep = 0;
    baton_err lerr = {0};
    double read_t0 = baton_now();
    int lrc = baton_ckpt_latest(o->ckpt_dir, path, sizeof path, &cstep, &lerr);
    if (lrc == BATON_ERR_NOTFOUND && o->ckpt_uri) lrc = baton_ckpt_store_restore(t.store, path, sizeof path, &cstep, &lerr);
    if (lrc == BATON_OK) {
        /* the state first: a checkpoint of another model is named as such */
        char *state = NULL;
        if ((rc = baton_ckpt_load(path, NULL, NULL, &state, err))) {
            baton_err_prefix(err, "resume from %s", path);
            goto done;
        }
        rc = state_from_json(&t, state, err);
        free(state);
        if (!rc) rc = baton_ckpt_load(path, t.model, t.optim, NULL, err);
        if (rc) {
            baton_err_prefix(err, "resume from %s", path);
            goto done;
        }
        r->resumed = 1;
        r->resumed_step = t.committed = t.st.step;
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
        baton_log(BATON_LOG_INFO, "resuming from %s (step %" PRIu64 ", epoch %" PRIu64 "; checkpoint read in %.3f s)",
                  path, t.st.step, t.st.epoch, baton_now() - read_t0);
    } else if (lrc != BATON_ERR_NOTFOUND) {
        rc = lrc;
        *err = lerr;
        goto done;
    }
    /* a cursor at the end of an epoch continues with the next one */
    if (t.st.cursor.position >= esize) t.st.cursor = (baton_cursor){t.st.cursor.seed, t.st.cursor.epoch + 1, 0};
    /* the loader fetches nothing past the run's last batch: the end of epoch --epochs, or the
     * batch of step --max-steps (batches follow the epoch's aligned grid) */
    baton_cursor end = {o->seed, o->epochs, 0};
    if (o->max_steps && o->max_steps < o->epochs * t.steps_per_epoch)
        end = (baton_cursor){o->seed, o->max_steps / t.steps_per_epoch, (o->max_steps % t.steps_per_epoch) * o->batch};
    if ((rc = baton_loader_set_end(t.loader, &end, err))) goto done;
    if ((rc = baton_loader_seek(t.loader, &t.st.cursor, err))) goto done;
    if (t.vloader) {   /* one validation pass for each epoch this run ends */
        baton_cursor vend = {o->seed, end.epoch > t.st.cursor.epoch ? end.epoch - t.st.cursor.epoch : 0, 0};
        if ((rc = baton_loader_set_end(t.vloader, &vend, err))) goto done;
        if (!(t.vpipe = open_pipe(t.vloader, o->batch, o->workers, t.man->mean, t.man->std, err))) {
            rc = err->code ? err->code : BATON_ERR_ARG;
            goto done;
        }
    }
    t.pipe = open_pipe(t.loader, o->batch, o->workers, NULL, NULL, err);
    if (!t.pipe) {
        rc = err->code ? err->code : BATON_ERR_ARG;
        goto done;
    }

    if (o->log_path && (rc = csv_header(o->log_path, err))) goto done;
    if (o->progress_file && (pfd = open(o->progress_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
        baton_log(BATON_LOG_WARN, "%s: cannot open the progress file: %s", o->progress_file, strerror(errno));
    progress_put(pfd, t.st.step);
    baton_nn_model_set_training(t.model, 1);
    baton_progress prog;
    char label[160] = "train";
    uint64_t total = o->epochs * t.steps_per_epoch;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    if (o->progress) baton_progress_start(&prog, label, total);
    uint64_t last_saved = r->resumed ? t.st.step : UINT64_MAX, samples = 0;
    double t0 = baton_now(), ep_t0 = t0, saved_t = t0;
    double lr = baton_nn_sched_lr(&t.sched, t.st.step);
    while (t.st.epoch < o->epochs && (!o->max_steps || t.st.step < o->max_steps)) {
        int rebalance = 0;
        if (nw && baton_notice_poll(nw, &nev, &rebalance)) break;   /* after the step before */
        if (rebalance) {
            r->rebalances++;
            if (last_saved != t.st.step) {
                t.st.ep_seconds += baton_now() - ep_t0;
                ep_t0 = baton_now();
                if ((rc = save(&t, 0, err))) break;
                last_saved = t.st.step;
            }
        }
        baton_batch *b;
        rc = baton_pipeline_next(t.pipe, &b, err);
        if (rc == BATON_END) continue;   /* epochs end on last_of_epoch */
        if (rc) break;
        double compute_t0 = baton_now();
        float loss = 0;
        int correct = 0;
        rc = baton_nn_train_batch(t.model, b->x, b->y, (int)b->n, &loss, &correct, err);
        lr = baton_nn_sched_lr(&t.sched, t.st.step);
        if (!rc) rc = baton_nn_optim_step(t.optim, lr, err);
        uint32_t n = b->n;
        int last = b->last_of_epoch;
        t.st.cursor = b->next;
        baton_pipeline_release(t.pipe, b);
        if (rc) {
            baton_err_prefix(err, "step %" PRIu64, t.st.step);
            break;
        }
        if (!isfinite(loss)) {
            rc = baton_err_set(err, BATON_ERR_ARG, "step %" PRIu64 ": loss is %f (lower --lr)", t.st.step, loss);
            break;
        }
        t.st.step++;
        /* The work at risk never exceeds --ckpt-every-steps: a background persist overlaps the
         * step after its snapshot; if it has not committed by then, wait for it before this step
         * counts as reached (so a kill loses at most ckpt_every steps plus the step under way). */
        if (o->ckpt_every) {
            uint64_t cs;
            int k = baton_ckpt_reap(t.store, t.st.step - t.committed > o->ckpt_every, &cs);
            if (k > 0) t.committed = cs;
            else if (k < 0) last_saved = UINT64_MAX;   /* failed: the end of training saves again */
        }
        progress_put(pfd, t.st.step);
        samples += n;
        t.st.ep_loss_sum += (double)loss * n;
        t.st.ep_correct += (uint64_t)correct;
        t.st.ep_seen += n;
        double now = baton_now();
        if (samples == n) {   /* for resume-latency measurements: BATON_LOG=debug */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            baton_log(BATON_LOG_DEBUG, "first step of this process done at %.6f (wall clock; its compute %.3f s)",
                      (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9, now - compute_t0);
        }
        if (o->progress) {
            double el = now - t0;
            snprintf(label, sizeof label, "train epoch %" PRIu64 "/%" PRIu64 " step %" PRIu64 " loss %.4f acc %.4f %.0f samples/s",
                     t.st.epoch + 1, o->epochs, t.st.step, t.st.ep_loss_sum / (double)t.st.ep_seen,
                     (double)t.st.ep_correct / (double)t.st.ep_seen, el > 0 ? (double)samples / el : 0.0);
            baton_progress_update(&prog, t.st.step);
        }
        if (last) {
            double secs = t.st.ep_seconds + (now - ep_t0);
            t.st.last_loss = t.st.ep_loss_sum / (double)t.st.ep_seen;
            t.st.last_acc = (double)t.st.ep_correct / (double)t.st.ep_seen;
            if (t.vpipe) {
                if ((rc = eval_epoch(t.model, t.vpipe, &t.st.last_val_loss, &t.st.last_val_acc, NULL, NULL, err))) {
                    baton_err_prefix(err, "validation after epoch %" PRIu64, t.st.epoch);
                    break;
                }
                t.st.has_val_metrics = 1;
            }
            if (o->log_path && (rc = csv_row(o->log_path, t.st.epoch, t.st.last_loss, t.st.last_acc, t.vpipe != NULL,
                                             t.st.last_val_loss, t.st.last_val_acc, lr, secs, err)))
                break;
            t.st.epoch++;
            t.st.ep_loss_sum = 0;
            t.st.ep_correct = t.st.ep_seen = 0;
            t.st.ep_seconds = 0;
            ep_t0 = baton_now();
        }
        if ((o->ckpt_every && t.st.step % o->ckpt_every == 0) ||
            (o->ckpt_every_sec > 0 && baton_now() - saved_t >= o->ckpt_every_sec)) {
            t.st.ep_seconds += baton_now() - ep_t0;
            ep_t0 = baton_now();
            if ((rc = save(&t, 0, err))) break;
            last_saved = t.st.step;
            saved_t = baton_now();
        }
    }
    if (o->progress) baton_progress_finish(&prog);
    r->seconds = baton_now() - t0;
    r->samples_per_s = r->seconds > 0 ? (double)samples / r->seconds : 0;
    if (rc == BATON_OK) {
        if (last_saved == t.st.step) {
            rc = baton_ckpt_wait(t.store, err);
        } else {
            t.st.ep_seconds += baton_now() - ep_t0;
            rc = save(&t, 1, err);
        }
    }
    if (rc == BATON_OK && nev.kind != BATON_NOTICE_NONE) {
        rc = BATON_STOPPED;
        r->stopped = 1;
        snprintf(r->notice, sizeof r->notice, "%s", baton_notice_kind_name(nev.kind));
        snprintf(r->notice_source, sizeof r->notice_source, "%s", nev.source);
        r->notice_deadline = nev.deadline;
        r->notice_margin_s = nev.deadline > 0 ? nev.deadline - baton_wall_now() : 0;
        const char *cp = baton_ckpt_last_committed(t.store), *slash = strrchr(cp, '/');
        char left[48] = "deadline unknown";
        if (nev.deadline > 0) snprintf(left, sizeof left, "%.0f s before the deadline", r->notice_margin_s);
        baton_log(BATON_LOG_WARN, "notice: %s (%s), %s: checkpoint %s committed, stopping", r->notice,
                  r->notice_source, left, slash ? slash + 1 : cp);
    }
    r->step = t.st.step;
    r->epoch = t.st.epoch;
    if (t.st.ep_seen) {   /* stopped inside an epoch: report the partial one */
        r->loss = t.st.ep_loss_sum / (double)t.st.ep_seen;
        r->accuracy = (double)t.st.ep_correct / (double)t.st.ep_seen;
    } else {
        r->loss = t.st.last_loss;
        r->accuracy = t.st.last_acc;
    }
    r->has_val = t.st.has_val_metrics;
    r->val_loss = t.st.last_val_loss;
    r->val_accuracy = t.st.last_val_acc;

done:
    if (t.store) {
        baton_err werr = {0};
        int wrc = baton_ckpt_wait(t.store, &werr);
        if (wrc && rc == BATON_OK) {
            rc = wrc;
            *err = werr;
        }
        if (baton_ckpt_last_committed(t.store)[0])
            snprintf(r->checkpoint, sizeof r->checkpoint, "%s", baton_ckpt_last_committed(t.store));
        baton_ckpt_store_close(t.store);
    }
    baton_notice_stop(nw);
    if (pfd >= 0) close(pfd);
    if (t.vpipe) baton_pipeline_close(t.vpipe);
    if (t.vloader) baton_loader_close(t.vloader);
    if (t.pipe) baton_pipeline_close(t.pipe);
    if (t.loader) baton_loader_close(t.loader);
    baton_nn_optim_free(t.optim);
    baton_nn_model_free(t.model);
    return rc;
}

/* ---------------------------------------------------------------- eval */
void baton_eval_result_free(baton_eval_result *r)
{
    free(r->confusion);
    free(r->class_names);
    r->confusion = NULL;
    r->class_names = NULL;
}

int baton_eval_run(const char *ckpt, const char *data_uri, baton_io_mode mode, int mode_set,
                   const char *local_dir, uint32_t batch, baton_eval_result *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    if (!ckpt || !data_uri || batch < 1) return baton_err_set(err, BATON_ERR_ARG, "checkpoint, data and batch are required");
    char path[4096];
    uint64_t step = 0;
    char base[4096];
    snprintf(base, sizeof base, "%s", ckpt);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') base[--bl] = 0;
    const char *slash = strrchr(base, '/');
    if (baton_ckpt_parse_name(slash ? slash + 1 : base, &step)) {
        snprintf(path, sizeof path, "%s", base);
    } else {
        int rc = baton_ckpt_latest(ckpt, path, sizeof path, &step, err);
        if (rc) return rc;
    }
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
    char *state = NULL;
    int rc = baton_ckpt_load(path, NULL, NULL, &state, err);
    if (rc) return rc;
    baton_train_state tst;
    rc = baton_train_state_parse(state, strlen(state), &tst, err);
    free(state);
    if (rc) return baton_err_prefix(err, "%s", path);
    uint64_t seed = tst.seed;
    snprintf(r->model, sizeof r->model, "%s", tst.model);
    r->step = step;

    baton_loader *l = NULL;
    baton_pipeline *p = NULL;
    baton_nn_model *m = NULL;
    baton_store_opts so;
    baton_store_opts_default(&so);
    if ((rc = open_data(data_uri, mode, mode_set, &so, local_dir, seed, batch, 2, NULL, NULL, &l, NULL, err)))
        return rc;
    {   /* normalise as in training (state.json's statistics; older checkpoints: the dataset's own) */
        const baton_manifest *dm = baton_loader_manifest(l);
        const int use = tst.norm_channels > 0;
        if (use && (uint32_t)tst.norm_channels != dm->shape[2]) {
            baton_loader_close(l);
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: trained on %d-channel images; %s has %u channels", path,
                                 tst.norm_channels, data_uri, dm->shape[2]);
        }
        baton_cursor end = {seed, 1, 0};   /* one pass: nothing after it is fetched */
        if ((rc = baton_loader_set_end(l, &end, err)) == BATON_OK)
            p = open_pipe(l, batch, 2, use ? tst.mean : NULL, use ? tst.std : NULL, err);
        if (!p) {
            baton_loader_close(l);
            return err->code ? err->code : BATON_ERR_ARG;
        }
    }
    char kname[16];
    const baton_manifest *man = baton_loader_manifest(l);
    if ((rc = model_for(r->model, man, batch, seed, 0, &m, kname, err))) goto out;
    if ((rc = baton_ckpt_load(path, m, NULL, NULL, err))) {
        baton_err_prefix(err, "dataset %s (%ux%ux%u, %u classes)", data_uri, man->shape[0], man->shape[1],
                         man->shape[2], man->classes);
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
    rc = eval_epoch(m, p, &r->loss, &r->accuracy, &r->samples, r->confusion, err);
out:
    if (rc) baton_eval_result_free(r);
    if (p) baton_pipeline_close(p);
    if (l) baton_loader_close(l);
    baton_nn_model_free(m);
    return rc;
}
