/* test_ckpt_async.c — two-phase save on a real model (resnet20 + SGD momentum): the snapshot is
 * independent of later changes to the model, an async persist writes the same bytes as a
 * synchronous save, a busy persist makes SKIP_IF_BUSY skip and WAIT wait, retention across saves,
 * a failing background persist is reported by baton_ckpt_wait, and a checkpoint loads back into a
 * fresh model and optimizer (tensors and update count). Prints the snapshot (blocking) time. */
#include "../../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static int same_file(const char *a, const char *b)
{
    uint8_t *x, *y;
    size_t nx, ny;
    baton_err e;
    if (baton_file_read_all(a, 1 << 28, &x, &nx, &e) || baton_file_read_all(b, 1 << 28, &y, &ny, &e)) return 0;
    int same = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

static void scribble(baton_nn_model *m, float v)
{
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        baton_nn_model_tensor(m, i, &t);
        if (t.dtype == BATON_NN_F32)
            for (size_t k = 0; k < t.numel; k++) ((float *)t.data)[k] += v;
    }
}

static ssize_t slow_write(int fd, const void *b, size_t n)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return write(fd, b, n);
}
static ssize_t full_write(int fd, const void *b, size_t n)
{
    (void)fd;
    (void)b;
    (void)n;
    errno = ENOSPC;
    return -1;
}

int main(void)
{
    baton_log_set_level(BATON_LOG_ERROR);
    snprintf(root, sizeof root, "/tmp/baton-test-async.%ld", (long)getpid());
    char da[300], ds[300];
    snprintf(da, sizeof da, "%s/a", root);
    snprintf(ds, sizeof ds, "%s/s", root);
    baton_err err = {0};
    baton_nn_spec spec = {"resnet20", 3, 32, 32, 10, 1, 7};
    baton_nn_model *m = NULL, *m2 = NULL;
    baton_nn_optim *o = NULL, *o2 = NULL;
    baton_nn_optim_cfg oc = {BATON_NN_SGD, 0.9, 0, 5e-4, 0, 0, 0};
    CHECK(baton_nn_model_create(&spec, NULL, &m, &err) == BATON_OK);
    CHECK(m && baton_nn_optim_create(&oc, m, &o, &err) == BATON_OK);
    spec.seed = 8;
    CHECK(baton_nn_model_create(&spec, NULL, &m2, &err) == BATON_OK);
    CHECK(m2 && baton_nn_optim_create(&oc, m2, &o2, &err) == BATON_OK);
    if (!m || !o || !m2 || !o2) CHECK_DONE();
    baton_nn_optim_set_steps(o, 41);
    printf("resnet20: %zu params, %zu model tensors, %zu optimizer tensors\n", baton_nn_model_param_count(m),
           baton_nn_model_ntensors(m), baton_nn_optim_ntensors(o));

    baton_ckpt_store *sa = NULL, *ss = NULL;
    CHECK(baton_ckpt_store_open(da, 2, &sa, &err) == BATON_OK);
    CHECK(baton_ckpt_store_open(ds, 2, &ss, &err) == BATON_OK);
    if (!sa || !ss) CHECK_DONE();

    /* async: snapshot, scribble on the model at once, persist; sync from the same state */
    const char *st = "{\"step\": 100, \"model\": \"resnet20\", \"epoch\": 1}";
    CHECK(baton_ckpt_persist_async(sa, &err) == BATON_ERR_ARG);   /* nothing to persist yet */
    CHECK(ckpt_save_sync(ss, m, o, st, 100, &err) == BATON_OK);
    double best = 1e9;
    for (int i = 0; i < 5; i++) {   /* the first allocates; the rest reuse */
        double t0 = baton_now();
        CHECK(baton_ckpt_snapshot(sa, m, o, st, 100, BATON_CKPT_WAIT, &err) == BATON_OK);
        double dt = baton_now() - t0;
        if (i > 0 && dt < best) best = dt;
    }
    printf("snapshot (blocking) time: %.3f ms for %zu params + momentum\n", best * 1e3,
           baton_nn_model_param_count(m));
    baton_buf saved = {0};   /* the model as snapshotted, to compare with what loads back */
    for (size_t i = 0; i < baton_nn_model_ntensors(m); i++) {
        baton_nn_tensor t;
        baton_nn_model_tensor(m, i, &t);
        baton_buf_append(&saved, t.data, t.numel * baton_st_dtype_size(t.dtype));
    }
    scribble(m, 1.0f);
    CHECK(baton_ckpt_persist_async(sa, &err) == BATON_OK);
    CHECK(baton_ckpt_persist_async(sa, &err) == BATON_ERR_ARG);   /* one in flight */
    CHECK(baton_ckpt_wait(sa, &err) == BATON_OK);
    char pa[600], ps[600];
    const char *files[] = {"model.safetensors", "optim.safetensors", "state.json", "MANIFEST"};
    for (int i = 0; i < 4; i++) {
        snprintf(pa, sizeof pa, "%s/ckpt-000000100/%s", da, files[i]);
        snprintf(ps, sizeof ps, "%s/ckpt-000000100/%s", ds, files[i]);
        CHECK_MSG(same_file(pa, ps), "%s differs", files[i]);
    }
    CHECK(strstr(baton_ckpt_last_committed(sa), "ckpt-000000100") != NULL);

    /* busy: a slow persist in flight makes SKIP skip and WAIT wait */
    const char *st2 = "{\"step\": 200}", *st3 = "{\"step\": 300}";
    CHECK(baton_ckpt_snapshot(sa, m, o, st2, 200, BATON_CKPT_WAIT, &err) == BATON_OK);
    baton_sys.write = slow_write;
    CHECK(baton_ckpt_persist_async(sa, &err) == BATON_OK);
    CHECK(ckpt_busy(sa));
    CHECK(baton_ckpt_snapshot(sa, m, o, st3, 300, BATON_CKPT_SKIP_IF_BUSY, &err) == BATON_CKPT_SKIPPED);
    CHECK(baton_ckpt_snapshot(sa, m, o, st3, 300, BATON_CKPT_WAIT, &err) == BATON_OK);
    CHECK(!ckpt_busy(sa));
    baton_sys_reset();
    CHECK(baton_ckpt_persist_async(sa, &err) == BATON_OK);
    CHECK(baton_ckpt_wait(sa, &err) == BATON_OK);
    baton_ckpt_info *v;
    size_t n;
    CHECK(baton_ckpt_list(da, 1, &v, &n, &err) == BATON_OK && n == 2);   /* keep 2 */
    if (n == 2) CHECK(v[0].step == 300 && v[1].step == 200 && v[0].status == BATON_OK);
    free(v);

    /* a failing background persist: reported by wait, previous checkpoints intact */
    CHECK(baton_ckpt_snapshot(sa, m, o, "{\"step\": 400}", 400, 0, &err) == BATON_OK);
    baton_sys.write = full_write;
    CHECK(baton_ckpt_persist_async(sa, &err) == BATON_OK);
    CHECK(baton_ckpt_wait(sa, &err) == BATON_ERR_NOSPACE);
    baton_sys_reset();
    char latest[600];
    uint64_t step;
    CHECK(baton_ckpt_latest(da, latest, sizeof latest, &step, &err) == BATON_OK && step == 300);
    CHECK(baton_ckpt_snapshot(sa, m, o, "{\"step\": 400, \"x\": 1}", 401, 0, &err) == BATON_ERR_FORMAT);

    /* load back into a fresh model and optimizer */
    char *state = NULL;
    snprintf(pa, sizeof pa, "%s/ckpt-000000100", ds);
    CHECK(baton_ckpt_load(pa, m2, o2, &state, &err) == BATON_OK);
    CHECK(state && strstr(state, "\"epoch\": 1"));
    free(state);
    CHECK(baton_nn_optim_steps(o2) == 41);
    int same = 1;
    size_t at = 0;
    for (size_t i = 0; i < baton_nn_model_ntensors(m2); i++) {
        baton_nn_tensor b;
        baton_nn_model_tensor(m2, i, &b);
        size_t bytes = b.numel * baton_st_dtype_size(b.dtype);
        same &= at + bytes <= saved.len && !memcmp(saved.data + at, b.data, bytes);
        at += bytes;
    }
    CHECK(same && at == saved.len);
    baton_buf_free(&saved);

    baton_ckpt_store_close(sa);
    baton_ckpt_store_close(ss);
    baton_nn_optim_free(o);
    baton_nn_optim_free(o2);
    baton_nn_model_free(m);
    baton_nn_model_free(m2);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    CHECK_DONE();
}
