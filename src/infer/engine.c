/* engine.c — the inference engine: opening a checkpoint for serving (verify, read state.json,
 * build the model it names, load the weights), the two paths behind one call (REFERENCE: nn's
 * reference kernels in evaluation mode; FAST: nn's folded inference plan), model FLOPs, thread
 * control, and the names of the paths. There is no CUDA build: the GPU path reports why.
 *
 * Contract: baton_infer_open accepts a checkpoint folder (ckpt-<step>) or a folder of them (its
 * newest that verifies); the folder is verified (MANIFEST sizes and CRC32C) before anything is
 * trusted. state.json must name a known model, its input shape and class count; the weights must
 * match that model tensor for tensor. Every failure names the folder and the field. */
#include "infer_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baton/ckpt.h"

void omp_set_num_threads(int n);   /* libgomp (oneDNN's OpenMP runtime) */

const char *baton_infer_path_name(int path)
{
    return path == BATON_INFER_REFERENCE ? "reference" : path == BATON_INFER_FAST ? "fast"
                                                       : path == BATON_INFER_GPU  ? "gpu"
                                                       : path == BATON_INFER_FAST_BF16 ? "fast-bf16"
                                                                                  : "?";
}

int baton_infer_path_parse(const char *s, int *path)
{
    for (int p = BATON_INFER_REFERENCE; p <= BATON_INFER_FAST_BF16; p++)
        if (!strcmp(s, baton_infer_path_name(p))) {
            *path = p;
            return BATON_OK;
        }
    return BATON_ERR_ARG;
}

const char *baton_infer_gpu_unavailable(void)
{
#ifdef BATON_CUDA
    return NULL;
#else
    return "no CUDA build";
#endif
}

void baton_infer_set_threads(int n)
{
    if (n >= 1) omp_set_num_threads(n);
}

double baton_infer_model_flops(const baton_nn_model *m) { return 2 * baton_nn_model_macs(m); }

/* ---------------------------------------------------------------- engine from a model */

static int fill_info(baton_infer_engine *e, const baton_nn_model *m, int path, int batch)
{
    baton_infer_info *in = &e->info;
    snprintf(in->model, sizeof in->model, "%s", baton_nn_model_name(m));
    int c, h, w;
    baton_nn_model_slot(m, 0, &c, &h, &w);
    in->in_c = c;
    in->in_h = h;
    in->in_w = w;
    in->classes = baton_nn_model_classes(m);
    in->batch = batch;
    in->path = path;
    in->flops = baton_infer_model_flops(m);
    in->nlayers = (int)baton_nn_model_nlayers(m);
    double weights = 0;   /* every FP32 tensor once (the int64 step counters are not read) */
    const size_t nt = baton_nn_model_ntensors(m);
    for (size_t i = 0; i < nt; i++) {
        baton_nn_tensor t;
        if (baton_nn_model_tensor(m, i, &t) == BATON_OK && t.dtype != BATON_NN_I64) weights += 4.0 * (double)t.numel;
    }
    in->min_bytes = weights + 4.0 * batch * ((double)c * h * w + in->classes);
    return BATON_OK;
}

/* Copy every tensor of src into dst (same architecture). */
static void copy_tensors(baton_nn_model *dst, const baton_nn_model *src)
{
    const size_t n = baton_nn_model_ntensors(src);
    for (size_t i = 0; i < n; i++) {
        baton_nn_tensor a, b;
        baton_nn_model_tensor(src, i, &a);
        baton_nn_model_tensor(dst, i, &b);
        memcpy(b.data, a.data, a.numel * (a.dtype == BATON_NN_I64 ? 8 : 4));
    }
}

/* owned (may be NULL): a reference-kernel model built for this batch that the engine takes over
 * (freed on failure too). */
static int engine_new(const baton_nn_model *m, baton_nn_model *owned, int path, int batch, baton_infer_engine **out,
                      baton_err *err)
{
    *out = NULL;
    int rc = BATON_OK;
    if (batch < 1 || batch > 65536) rc = baton_err_set(err, BATON_ERR_ARG, "batch %d: expected 1..65536", batch);
    else if (path == BATON_INFER_GPU && baton_infer_gpu_unavailable())
        rc = baton_err_set(err, BATON_ERR_ARG, "gpu path: %s", baton_infer_gpu_unavailable());
    else if (path != BATON_INFER_REFERENCE && path != BATON_INFER_FAST && path != BATON_INFER_FAST_BF16)
        rc = baton_err_set(err, BATON_ERR_ARG, "unknown inference path %d", path);
    baton_infer_engine *e = rc ? NULL : calloc(1, sizeof *e);
    if (!e) {
        baton_nn_model_free(owned);
        return rc ? rc : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    fill_info(e, m, path, batch);
    const double t = baton_now();
    if (path == BATON_INFER_FAST || path == BATON_INFER_FAST_BF16) {
        rc = baton_nn_infer_plan_create(m, batch, path == BATON_INFER_FAST_BF16 ? BATON_NN_PRECISION_BF16
                                                                               : BATON_NN_PRECISION_F32, &e->fast, err);
        if (!rc) {
            e->info.nprims = baton_nn_infer_plan_nprims(e->fast);
            e->info.bytes = baton_nn_infer_plan_bytes(e->fast);
        }
        baton_nn_model_free(owned);
    } else if (owned) {
        e->ref = owned;   /* already built for this batch with the reference kernels */
    } else {
        int c, h, w;
        baton_nn_model_slot(m, 0, &c, &h, &w);
        baton_nn_spec spec = {.name = baton_nn_model_name(m), .in_c = c, .in_h = h, .in_w = w,
                              .classes = baton_nn_model_classes(m), .max_batch = batch};
        rc = baton_nn_model_create(&spec, baton_nn_kernels_reference(), &e->ref, err);
        if (!rc) copy_tensors(e->ref, m);
    }
    if (e->ref) baton_nn_model_set_training(e->ref, 0);
    e->info.prepare_ms = (baton_now() - t) * 1e3;
    if (rc) {
        baton_infer_close(e);
        return rc;
    }
    *out = e;
    return BATON_OK;
}

int baton_infer_from_model(const baton_nn_model *m, int path, int batch, baton_infer_engine **out, baton_err *err)
{
    return engine_new(m, NULL, path, batch, out, err);
}

/* ---------------------------------------------------------------- engine from a checkpoint */

static int state_int(const cJSON *j, const char *key, int lo, int hi, int *v, const char *path, baton_err *err)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsNumber(x) || x->valuedouble < lo || x->valuedouble > hi || x->valuedouble != floor(x->valuedouble))
        return baton_err_set(err, BATON_ERR_FORMAT, "%s/state.json: \"%s\" missing or not an integer in %d..%d", path,
                             key, lo, hi);
    *v = (int)x->valuedouble;
    return BATON_OK;
}

/* From state.json: model name, input shape (H, W, C), classes, normalisation. */
static int read_state(const char *path, const char *text, baton_nn_spec *spec, char *name, size_t cap,
                      baton_infer_info *info, baton_err *err)
{
    cJSON *j = baton_jr_value(text, strlen(text));
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s/state.json: not a JSON object", path);
    }
    int rc = BATON_OK;
    const cJSON *mo = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "input_shape");
    const char *hint = baton_ckpt_kind_hint(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "kind")));
    if (!cJSON_IsString(mo) && hint) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: not a baton train checkpoint: %s", path, hint);
    } else if (!cJSON_IsString(mo) || strlen(mo->valuestring) >= cap) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s/state.json: \"model\" missing or not a model name", path);
    } else if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 3) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s/state.json: \"input_shape\" missing or not [H, W, C]", path);
    } else {
        snprintf(name, cap, "%s", mo->valuestring);
        int d[3];
        for (int k = 0; k < 3 && !rc; k++) {
            const cJSON *x = cJSON_GetArrayItem(sh, k);
            if (!cJSON_IsNumber(x) || x->valuedouble < 1 || x->valuedouble > 8192)
                rc = baton_err_set(err, BATON_ERR_FORMAT, "%s/state.json: input_shape[%d] is not in 1..8192", path, k);
            else
                d[k] = (int)x->valuedouble;
        }
        int classes = 0;
        if (!rc) rc = state_int(j, "classes", 2, 1000000, &classes, path, err);
        if (!rc) {
            spec->in_h = d[0];
            spec->in_w = d[1];
            spec->in_c = d[2];
            spec->classes = classes;
        }
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "normalisation");
    if (!rc && cJSON_IsObject(nm)) {
        const cJSON *mean = cJSON_GetObjectItemCaseSensitive(nm, "mean"), *sd = cJSON_GetObjectItemCaseSensitive(nm, "std");
        int n = cJSON_IsArray(mean) && cJSON_IsArray(sd) ? cJSON_GetArraySize(mean) : 0;
        if (n > 4 || (cJSON_IsArray(sd) && cJSON_GetArraySize(sd) != n)) n = 0;
        for (int k = 0; k < n; k++) {
            const cJSON *a = cJSON_GetArrayItem(mean, k), *b = cJSON_GetArrayItem(sd, k);
            if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b)) {
                n = 0;
                break;
            }
            info->mean[k] = (float)a->valuedouble;
            info->std[k] = (float)b->valuedouble;
        }
        info->nnorm = n;
    }
    cJSON_Delete(j);
    return rc;
}

/* The checkpoint folder to serve, verified once (MANIFEST sizes and CRC32C of every file): DIR
 * itself when it is a ckpt-<step> folder, else its newest folder that verifies. */
static int resolve(const char *ckpt, char *path, size_t cap, uint64_t *step, baton_err *err)
{
    char base[4096];
    if (snprintf(base, sizeof base, "%s", ckpt) >= (int)sizeof base)
        return baton_err_set(err, BATON_ERR_ARG, "checkpoint path too long");
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') base[--bl] = 0;
    if (!baton_is_dir(base)) return baton_err_set(err, BATON_ERR_NOTFOUND, "checkpoint %s: no such folder", ckpt);
    const char *slash = strrchr(base, '/');
    if (baton_ckpt_parse_name(slash ? slash + 1 : base, step)) {
        snprintf(path, cap, "%s", base);
        return baton_ckpt_verify(base, err);
    }
    int rc = baton_ckpt_latest(base, path, cap, step, err);
    if (rc == BATON_ERR_NOTFOUND)
        return baton_err_set(err, rc, "checkpoint %s: no verified ckpt-<step> folder in it", ckpt);
    return rc;
}

int baton_infer_open(const char *ckpt, int path, int batch, baton_infer_engine **out, baton_err *err)
{
    *out = NULL;
    if (!ckpt) return baton_err_set(err, BATON_ERR_ARG, "no checkpoint given");
    if (path == BATON_INFER_GPU && baton_infer_gpu_unavailable())
        return baton_err_set(err, BATON_ERR_ARG, "gpu path: %s", baton_infer_gpu_unavailable());
    if (batch < 1 || batch > 65536) return baton_err_set(err, BATON_ERR_ARG, "batch %d: expected 1..65536", batch);
    const double t = baton_now();
    char dir[4096], file[4200];
    uint64_t step = 0;
    int rc = resolve(ckpt, dir, sizeof dir, &step, err);
    if (rc) return rc;
    /* verified just now: read what serving needs, nothing else */
    uint8_t *state = NULL;
    size_t slen = 0;
    snprintf(file, sizeof file, "%s/state.json", dir);
    if ((rc = baton_file_read_all(file, 16u << 20, &state, &slen, err))) return rc;
    baton_infer_info info = {0};
    char name[32];
    baton_nn_spec spec = {0};
    rc = read_state(dir, (const char *)state, &spec, name, sizeof name, &info, err);
    free(state);
    if (rc) return rc;
    spec.name = name;
    /* the reference path serves from this model directly; the fast path only reads it */
    spec.max_batch = path == BATON_INFER_REFERENCE ? batch : 1;
    baton_nn_model *m = NULL;
    if ((rc = baton_nn_model_create_empty(&spec, baton_nn_kernels_reference(), &m, err)))
        return baton_err_prefix(err, "%s/state.json", dir);
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    if ((rc = baton_ckpt_load_model(file, m, err))) {
        baton_nn_model_free(m);
        return rc;
    }
    const double load_ms = (baton_now() - t) * 1e3;
    if (path == BATON_INFER_REFERENCE) {
        rc = engine_new(m, m, path, batch, out, err);   /* the engine owns m from here */
    } else {
        rc = engine_new(m, NULL, path, batch, out, err);
        baton_nn_model_free(m);
    }
    if (rc) return rc;
    baton_infer_info *in = &(*out)->info;
    in->step = step;
    snprintf(in->checkpoint, sizeof in->checkpoint, "%s", dir);
    in->nnorm = info.nnorm;
    memcpy(in->mean, info.mean, sizeof in->mean);
    memcpy(in->std, info.std, sizeof in->std);
    in->load_ms = load_ms;
    return BATON_OK;
}

int baton_infer_run(baton_infer_engine *e, const float *x, float *logits, baton_err *err)
{
    if (e->fast) return baton_nn_infer_plan_run(e->fast, x, logits, err);
    int rc = baton_nn_forward(e->ref, x, e->info.batch, err);
    if (rc) return rc;
    memcpy(logits, baton_nn_logits(e->ref), sizeof(float) * (size_t)e->info.batch * (size_t)e->info.classes);
    return BATON_OK;
}

const baton_infer_info *baton_infer_engine_info(const baton_infer_engine *e) { return &e->info; }

void baton_infer_close(baton_infer_engine *e)
{
    if (!e) return;
    baton_nn_infer_plan_free(e->fast);
    baton_nn_model_free(e->ref);
    free(e);
}
