/* test_ckpt_remote.c — remote checkpoint copies on a folder store (the S3 path runs against the
 * RADOS Gateway in tests/servers/test_ckpt_s3.sh): baton_store_list / baton_store_delete on a local
 * store; background uploads after each persist (same bytes as the local folder, MANIFEST present);
 * remote retention; the MANIFEST object deleted first (a failing delete of another file leaves the
 * checkpoint incomplete, never complete); a failed MANIFEST upload leaves the checkpoint incomplete
 * and makes a synchronous save fail with the local commit standing; a damaged local file is never
 * uploaded; restore into an empty folder, falling back past a corrupted and a truncated newest
 * remote checkpoint, and NOTFOUND when the remote holds none. Commits planned by a deadline
 * (baton_ckpt_persist_by): uploaded with time, left to the next machine without it (no time left, or
 * the measured upload cost does not fit), never claimed remotely then, and uploaded by the next
 * opener (baton_ckpt_store_upload_left). */
#include "../../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"
#include "baton/notice.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[256], local[300], remote[300];

static int same_file(const char *a, const char *b)
{
    uint8_t *x, *y;
    size_t nx, ny;
    baton_err e;
    if (baton_file_read_all(a, 1 << 24, &x, &nx, &e)) return 0;
    if (baton_file_read_all(b, 1 << 24, &y, &ny, &e)) {
        free(x);
        return 0;
    }
    int same = nx == ny && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

static int exists(const char *dir, unsigned long long step, const char *file)
{
    char p[600];
    snprintf(p, sizeof p, "%s/ckpt-%09llu/%s", dir, step, file);
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void flip(const char *dir, unsigned long long step, const char *file, long off)
{
    char p[600];
    snprintf(p, sizeof p, "%s/ckpt-%09llu/%s", dir, step, file);
    int fd = open(p, O_RDWR);
    unsigned char c = 0;
    if (fd < 0) return;
    if (pread(fd, &c, 1, off) == 1) {
        c ^= 0x10;
        if (pwrite(fd, &c, 1, off) != 1) c = 0;
    }
    close(fd);
}

/* A snapshot whose tensor values depend on step. */
static int snap(baton_ckpt_store *s, uint64_t step, baton_err *err)
{
    static float w[256], mom[256];
    for (int i = 0; i < 256; i++) {
        w[i] = (float)step * 0.5f + (float)i;
        mom[i] = (float)i - (float)step;
    }
    baton_nn_tensor mt = {"w", BATON_NN_PARAM, BATON_NN_F32, 2, {16, 16}, 256, w, NULL};
    baton_nn_tensor ot = {"w.momentum_buffer", BATON_NN_BUFFER, BATON_NN_F32, 2, {16, 16}, 256, mom, NULL};
    char st[96];
    snprintf(st, sizeof st, "{\"step\": %llu, \"model\": \"x\"}", (unsigned long long)step);
    return baton_ckpt_snapshot_tensors(s, &mt, 1, &ot, 1, step, st, step, BATON_CKPT_WAIT, err);
}

/* failure injection */
static int (*real_open)(const char *, int, mode_t);
static int (*real_unlink)(const char *);
static int fail_manifest_put(const char *path, int flags, mode_t mode)
{
    if ((flags & O_CREAT) && strstr(path, remote) == path && strstr(path, "/MANIFEST")) {
        errno = EIO;
        return -1;
    }
    return real_open(path, flags, mode);
}
static int fail_model_unlink(const char *path)
{
    if (strstr(path, remote) == path && strstr(path, "model.safetensors")) {
        errno = EACCES;
        return -1;
    }
    return real_unlink(path);
}

/* a slow remote: every file the upload creates there takes 0.1 s more */
static char slow_dir[400];
static int slow_remote_open(const char *path, int flags, mode_t mode)
{
    if ((flags & O_CREAT) && strstr(path, slow_dir) == path) usleep(100 * 1000);
    return real_open(path, flags, mode);
}

static void test_deadline(void)
{
    char dl_local[400], dl_remote[400], path[4096];
    snprintf(dl_local, sizeof dl_local, "%s/dl-local", root);
    snprintf(dl_remote, sizeof dl_remote, "%s/dl-remote", root);
    baton_err err = {0};
    baton_ckpt_store *s = NULL;
    baton_ckpt_by by;
    CHECK(baton_ckpt_store_open(dl_local, 3, &s, &err) == BATON_OK);
    if (!s) return;
    CHECK(baton_ckpt_persist_by(s, 0, 0, &by, &err) == BATON_ERR_ARG);   /* nothing to commit */
    CHECK(baton_ckpt_store_attach(s, dl_remote, NULL, &err) == BATON_OK);
    baton_ckpt_costs c;
    baton_ckpt_store_costs(s, &c);
    CHECK(c.commits == 0 && c.uploads == 0 && c.commit_s < 0 && c.upload_s < 0);
    /* no deadline: committed, verified, uploaded */
    CHECK(snap(s, 1, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_persist_by(s, 0, 5, &by, &err) == BATON_OK, "%s", err.msg);
    CHECK(by.step == 1 && by.upload == BATON_CKPT_UPLOAD_DONE && by.upload_est_s < 0 && by.commit_s >= 0 &&
          exists(dl_remote, 1, "MANIFEST"));
    /* a slow upload is measured; a background save's commit is collected by persist_by */
    snprintf(slow_dir, sizeof slow_dir, "%s", dl_remote);
    baton_sys.open = slow_remote_open;
    CHECK(snap(s, 2, &err) == BATON_OK);
    CHECK(baton_ckpt_persist_async(s, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_wait(s, &err) == BATON_OK, "%s", err.msg);
    baton_sys.open = real_open;
    baton_ckpt_store_costs(s, &c);
    CHECK_MSG(c.commits == 2 && c.uploads == 2 && c.upload_s >= 0.35, "%llu uploads, %.3f s", (unsigned long long)c.uploads,
              c.upload_s);
    /* that cost does not fit before the deadline less the margin: left, nothing claimed */
    double now = baton_wall_now();
    CHECK(snap(s, 3, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_persist_by(s, now + 1.2, 1, &by, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(by.upload == BATON_CKPT_UPLOAD_LEFT && by.upload_est_s >= 0.35 && strstr(by.why, "an upload takes") &&
                  by.upload_s == 0,
              "%d %s", by.upload, by.why);
    CHECK(exists(dl_local, 3, "MANIFEST") && !exists(dl_remote, 3, "model.safetensors"));
    /* with time: uploaded */
    CHECK(snap(s, 4, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_persist_by(s, now + 60, 5, &by, &err) == BATON_OK, "%s", err.msg);
    CHECK(by.upload == BATON_CKPT_UPLOAD_DONE && by.upload_at >= by.commit_at && exists(dl_remote, 4, "MANIFEST"));
    /* no time left at all */
    CHECK(snap(s, 5, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_persist_by(s, now + 2, 5, &by, &err) == BATON_OK, "%s", err.msg);
    CHECK(by.upload == BATON_CKPT_UPLOAD_LEFT && strstr(by.why, "no time left") && !exists(dl_remote, 5, "MANIFEST"));
    /* a damaged local commit is never stopped on: an error, not a claim */
    CHECK(snap(s, 6, &err) == BATON_OK);
    CHECK(baton_ckpt_persist_async(s, &err) == BATON_OK);
    uint64_t reaped = 0;
    CHECK(baton_ckpt_reap(s, 1, &reaped) == 1 && reaped == 6);
    flip(dl_local, 6, "model.safetensors", 90);
    CHECK(baton_ckpt_persist_by(s, now + 60, 5, &by, &err) == BATON_ERR_CORRUPT && strstr(err.msg, "does not verify"));
    flip(dl_local, 6, "model.safetensors", 90);
    CHECK(snap(s, 7, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_persist_by(s, baton_wall_now() + 1, 5, &by, &err) == BATON_OK, "%s", err.msg);
    CHECK(by.step == 7 && by.upload == BATON_CKPT_UPLOAD_LEFT && !exists(dl_remote, 7, "MANIFEST"));
    baton_ckpt_store_close(s);
    /* the next machine: the local folder of step 7 is not in the remote; upload it, once */
    s = NULL;
    CHECK(baton_ckpt_store_open(dl_local, 3, &s, &err) == BATON_OK);
    if (!s) return;
    CHECK(baton_ckpt_store_attach(s, dl_remote, NULL, &err) == BATON_OK);
    uint64_t step = 0;
    CHECK(baton_ckpt_store_latest(s, path, sizeof path, &step, &err) == BATON_OK && step == 7);
    CHECK(baton_ckpt_store_upload_left(s, path, step) == 1);
    CHECK_MSG(baton_ckpt_wait(s, &err) == BATON_OK, "%s", err.msg);
    CHECK(exists(dl_remote, 7, "MANIFEST") && baton_ckpt_store_upload_left(s, path, step) == 0);
    baton_ckpt_store_close(s);
}

static void test_store_list(void)
{
    baton_err err = {0};
    char d[400];
    snprintf(d, sizeof d, "%s/objs", root);
    baton_mkdir_p(d, &err);
    baton_store *s = NULL;
    CHECK(baton_store_open(d, NULL, &s, &err) == BATON_OK);
    if (!s) return;
    CHECK(baton_store_put(s, "b/x", "12345", 5, &err) == BATON_OK);
    CHECK(baton_store_put(s, "a/y", "1", 1, &err) == BATON_OK);
    CHECK(baton_store_put(s, "a/z/deep", "", 0, &err) == BATON_OK);
    CHECK(baton_store_put(s, "c", "12", 2, &err) == BATON_OK);
    baton_store_obj *v = NULL;
    size_t n = 0;
    CHECK(baton_store_list(s, "", 0, &v, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 4);
    if (n == 4) {
        CHECK(!strcmp(v[0].name, "a/y") && v[0].size == 1);
        CHECK(!strcmp(v[1].name, "a/z/deep") && v[1].size == 0);
        CHECK(!strcmp(v[2].name, "b/x") && v[2].size == 5);
        CHECK(!strcmp(v[3].name, "c"));
    }
    baton_store_list_free(v, n);
    CHECK(baton_store_list(s, "a/", 0, &v, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 2);
    baton_store_list_free(v, n);
    CHECK(baton_store_list(s, "a/z", 0, &v, &n, &err) == BATON_OK);
    CHECK(n == 1 && !strcmp(v[0].name, "a/z/deep"));
    baton_store_list_free(v, n);
    CHECK(baton_store_list(s, "", 3, &v, &n, &err) == BATON_ERR_FORMAT);   /* more than max */
    CHECK(baton_store_delete(s, "a/z/deep", &err) == BATON_OK);
    CHECK(baton_store_delete(s, "a/z/deep", &err) == BATON_OK);          /* already gone */
    char p[500];
    snprintf(p, sizeof p, "%s/a/z", d);
    CHECK(!baton_is_dir(p));                                            /* emptied folder pruned */
    snprintf(p, sizeof p, "%s/a", d);
    CHECK(baton_is_dir(p));                                             /* a/y still there */
    CHECK(baton_store_delete(s, "../c", &err) != BATON_OK);             /* names are checked */
    baton_store_close(s);
}

int main(void)
{
    baton_log_set_level(getenv("V") ? BATON_LOG_INFO : BATON_LOG_ERROR);
    snprintf(root, sizeof root, "/tmp/baton-test-remote.%ld", (long)getpid());
    snprintf(local, sizeof local, "%s/local", root);
    snprintf(remote, sizeof remote, "%s/remote", root);
    baton_err err = {0};
    CHECK(baton_mkdir_p(remote, &err) == BATON_OK);
    real_open = baton_sys.open;
    real_unlink = baton_sys.unlink;

    test_store_list();
    test_deadline();

    /* background uploads: one per persist, waited for with baton_ckpt_wait */
    baton_ckpt_store *s = NULL;
    CHECK(baton_ckpt_store_open(local, 3, &s, &err) == BATON_OK);
    CHECK(s && baton_ckpt_store_attach(s, remote, NULL, &err) == BATON_OK);
    CHECK(s && baton_ckpt_store_attach(s, remote, NULL, &err) == BATON_ERR_ARG);   /* only one */
    if (!s) CHECK_DONE();
    for (uint64_t step = 1; step <= 5; step++) {
        CHECK(snap(s, step, &err) == BATON_OK);
        CHECK(baton_ckpt_persist_async(s, &err) == BATON_OK);
        CHECK_MSG(baton_ckpt_wait(s, &err) == BATON_OK, "%s", err.msg);
    }
    const char *files[] = {"model.safetensors", "optim.safetensors", "state.json", "MANIFEST"};
    for (int f = 0; f < 4; f++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/ckpt-000000005/%s", local, files[f]);
        snprintf(b, sizeof b, "%s/ckpt-000000005/%s", remote, files[f]);
        CHECK_MSG(same_file(a, b), "remote %s differs from the local one", files[f]);
    }
    baton_ckpt_remote *r = NULL;
    CHECK(ckpt_remote_open(remote, NULL, 3, &r, &err) == BATON_OK);
    if (!r) CHECK_DONE();
    uint64_t *steps = NULL;
    size_t n = 0;
    CHECK(ckpt_remote_list(r, &steps, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 3);   /* retention: 5, 4, 3 */
    CHECK(n == 3 && steps[0] == 5 && steps[1] == 4 && steps[2] == 3);
    free(steps);
    CHECK(!exists(remote, 2, "model.safetensors") && !exists(remote, 1, "MANIFEST"));

    /* a synchronous save whose MANIFEST upload fails: committed locally, not uploaded, incomplete remotely */
    baton_sys.open = fail_manifest_put;
    CHECK(snap(s, 6, &err) == BATON_OK);
    int rc = baton_ckpt_persist_sync(s, &err);
    baton_sys.open = real_open;
    CHECK_MSG(rc != BATON_OK && strstr(err.msg, "committed locally") && strstr(err.msg, "not uploaded"), "%s", err.msg);
    CHECK(exists(local, 6, "MANIFEST"));
    CHECK(exists(remote, 6, "model.safetensors") && !exists(remote, 6, "MANIFEST"));
    CHECK(ckpt_remote_list(r, &steps, &n, &err) == BATON_OK);
    CHECK(n == 3 && steps[0] == 5);
    free(steps);

    /* the next successful upload deletes the incomplete leftover older than it */
    CHECK(snap(s, 7, &err) == BATON_OK);
    CHECK_MSG(baton_ckpt_persist_sync(s, &err) == BATON_OK, "%s", err.msg);
    CHECK(!exists(remote, 6, "model.safetensors"));
    CHECK(exists(remote, 7, "MANIFEST") && !exists(remote, 3, "MANIFEST"));

    /* retention deletes the MANIFEST object first: with the model's delete failing, step 4 is left
     * without its MANIFEST (incomplete), never complete with a file missing */
    baton_sys.unlink = fail_model_unlink;
    CHECK(snap(s, 8, &err) == BATON_OK);
    CHECK(baton_ckpt_persist_sync(s, &err) == BATON_OK);   /* retention failures are only warnings */
    baton_sys.unlink = real_unlink;
    CHECK(!exists(remote, 4, "MANIFEST") && exists(remote, 4, "model.safetensors"));
    CHECK(ckpt_remote_list(r, &steps, &n, &err) == BATON_OK);
    CHECK(n == 3 && steps[0] == 8 && steps[1] == 7 && steps[2] == 5);
    free(steps);

    /* a damaged local file is never uploaded */
    char folder[600];
    snprintf(folder, sizeof folder, "%s/ckpt-000000008", local);
    flip(local, 8, "optim.safetensors", 100);
    CHECK(ckpt_remote_upload(r, folder, 8, &err) == BATON_ERR_CORRUPT);
    CHECK(strstr(err.msg, "optim.safetensors") != NULL);
    CHECK(exists(remote, 8, "MANIFEST"));   /* nothing was sent: the earlier upload stands */
    flip(local, 8, "optim.safetensors", 100);
    baton_ckpt_store_close(s);

    /* restore into an empty folder */
    char fresh[400], path[4096];
    uint64_t step = 0;
    snprintf(fresh, sizeof fresh, "%s/fresh", root);
    CHECK(baton_mkdir_p(fresh, &err) == BATON_OK);
    CHECK_MSG(ckpt_remote_restore(r, fresh, 3, path, sizeof path, &step, &err) == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(step, 8);
    CHECK(baton_ckpt_verify(path, &err) == BATON_OK);
    for (int f = 0; f < 4; f++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/ckpt-000000008/%s", local, files[f]);
        snprintf(b, sizeof b, "%s/ckpt-000000008/%s", fresh, files[f]);
        CHECK_MSG(same_file(a, b), "restored %s differs", files[f]);
    }
    /* a corrupted newest and a truncated next one: falls back to 5 */
    flip(remote, 8, "model.safetensors", 200);
    char p[600];
    snprintf(p, sizeof p, "%s/ckpt-000000007/state.json", remote);
    CHECK(truncate(p, 5) == 0);
    snprintf(fresh, sizeof fresh, "%s/fresh2", root);
    CHECK_MSG(ckpt_remote_restore(r, fresh, 3, path, sizeof path, &step, &err) == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(step, 5);
    CHECK(exists(fresh, 5, "MANIFEST") && !exists(fresh, 8, "MANIFEST") && !exists(fresh, 7, "MANIFEST"));
    /* nothing usable remotely */
    flip(remote, 5, "state.json", 2);
    snprintf(fresh, sizeof fresh, "%s/fresh3", root);
    CHECK(ckpt_remote_restore(r, fresh, 3, path, sizeof path, &step, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "3 with a MANIFEST") != NULL);
    ckpt_remote_close(r);

    /* an empty remote: NOTFOUND; HTTP stores are refused */
    char empty[400];
    snprintf(empty, sizeof empty, "%s/empty-remote", root);
    CHECK(ckpt_remote_open(empty, NULL, 0, &r, &err) == BATON_OK);   /* a plain folder is created */
    if (r) {
        CHECK(ckpt_remote_restore(r, fresh, 3, path, sizeof path, &step, &err) == BATON_ERR_NOTFOUND);
        ckpt_remote_close(r);
    }
    CHECK(ckpt_remote_open("http://127.0.0.1:1/x/", NULL, 0, &r, &err) == BATON_ERR_ARG);

    baton_remove_tree(root);
    CHECK_DONE();
}
