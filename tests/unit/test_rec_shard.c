/* test_rec_shard.c — rec: the shard writer. After commit both files hold exactly the framed
 * records and their index lines, the running sizes/CRCs match the files, and no temp file is
 * left; before commit nothing exists under a final name; abort removes everything; a failing
 * write (ENOSPC through baton_sys) makes add/commit fail with BATON_ERR_NOSPACE and leaves no file
 * under the final names nor any temp; a failing rename takes back what was published. */
#include "../../src/rec/rec_internal.h"
#include "baton/rec.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64];

static int exists(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static int count_files(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static void clean(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

static int fail_after;   /* writes allowed before ENOSPC; -1 = never fail */
static ssize_t failing_write(int fd, const void *p, size_t n)
{
    if (fail_after == 0) {
        errno = ENOSPC;
        return -1;
    }
    if (fail_after > 0) fail_after--;
    return write(fd, p, n);
}
static int failing_rename(const char *a, const char *b)
{
    (void)a;
    (void)b;
    errno = EXDEV;
    return -1;
}
static int rename_calls;
static int second_rename_fails(const char *a, const char *b)
{
    if (++rename_calls == 2) {
        errno = EIO;
        return -1;
    }
    return rename(a, b);
}

static void write_and_check(baton_rec_format fmt, size_t nrec, size_t maxlen)
{
    char rec[128], idx[128];
    snprintf(rec, sizeof rec, "%s/s.rec", dir);
    snprintf(idx, sizeof idx, "%s/s.idx", dir);
    baton_err err = {0};
    baton_shard_writer *w = baton_shard_writer_open(rec, idx, fmt, &err);
    CHECK_MSG(w != NULL, "%s", err.msg);
    if (!w) return;
    baton_buf want = {0}, want_idx = {0}, payload = {0};
    baton_rng rng;
    baton_rng_seed(&rng, nrec);
    for (size_t i = 0; i < nrec; i++) {
        size_t len = baton_rng_below(&rng, maxlen);
        payload.len = 0;
        baton_buf_reserve(&payload, len);
        for (size_t k = 0; k < len; k++) payload.data[k] = (uint8_t)baton_rng_next(&rng);
        payload.len = len;
        uint64_t key = i % 2 ? BATON_SHARD_KEY_AUTO : 1000 + i;
        rec_idx_append(&want_idx, i % 2 ? i : 1000 + i, want.len);
        baton_rec_frame(fmt, &want, payload.data, len, &err);
        CHECK(baton_shard_writer_add(w, key, payload.data, len, &err) == BATON_OK);
    }
    CHECK(!exists("s.rec") && !exists("s.idx"));   /* nothing final before commit */
    CHECK_EQ_U(baton_shard_writer_records(w), nrec);
    CHECK_EQ_U(baton_shard_writer_bytes(w), want.len);
    CHECK_EQ_U(baton_shard_writer_crc32c(w), baton_crc32c(0, want.data, want.len));
    CHECK_EQ_U(baton_shard_writer_idx_bytes(w), want_idx.len);
    CHECK_EQ_U(baton_shard_writer_idx_crc32c(w), baton_crc32c(0, want_idx.data, want_idx.len));
    CHECK_MSG(baton_shard_writer_commit(w, &err) == BATON_OK, "%s", err.msg);
    uint8_t *got;
    size_t n;
    CHECK(baton_file_read_all(rec, (size_t)1 << 30, &got, &n, &err) == BATON_OK);
    CHECK(n == want.len && (n == 0 || memcmp(got, want.data, n) == 0));
    free(got);
    CHECK(baton_file_read_all(idx, (size_t)1 << 30, &got, &n, &err) == BATON_OK);
    CHECK(n == want_idx.len && (n == 0 || memcmp(got, want_idx.data, n) == 0));
    free(got);
    CHECK(count_files() == 2);   /* no temp left behind */
    /* the index points at every record */
    baton_idx_entry *e;
    size_t ne;
    CHECK(rec_idx_load(idx, &e, &ne, &err) == BATON_OK && ne == nrec);
    baton_buf scratch = {0};
    int ok = 1;
    for (size_t i = 0; i < ne; i++) {
        baton_rec r;
        if (baton_rec_read_at(fmt, want.data + e[i].offset, want.len - e[i].offset, e[i].offset,
                              "s", &scratch, &r, &err) != BATON_OK)
            ok = 0;
    }
    CHECK(ok);
    free(e);
    baton_buf_free(&scratch);
    baton_buf_free(&want);
    baton_buf_free(&want_idx);
    baton_buf_free(&payload);
    clean();
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/baton-test-shard-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    write_and_check(BATON_FMT_RECORDIO, 50, 500);
    write_and_check(BATON_FMT_TFRECORD, 50, 500);
    write_and_check(BATON_FMT_RECORDIO, 40, 200000);   /* several 1 MiB flushes */
    write_and_check(BATON_FMT_RECORDIO, 0, 1);          /* empty shard */

    char rec[128], idx[128];
    snprintf(rec, sizeof rec, "%s/s.rec", dir);
    snprintf(idx, sizeof idx, "%s/s.idx", dir);
    baton_err err = {0};
    uint8_t blob[4096] = {1, 2, 3};

    /* abort: nothing left */
    baton_shard_writer *w = baton_shard_writer_open(rec, idx, BATON_FMT_RECORDIO, &err);
    CHECK(w && baton_shard_writer_add(w, 0, blob, 100, &err) == BATON_OK);
    CHECK(count_files() == 2);   /* the two temps */
    baton_shard_writer_abort(w);
    CHECK(count_files() == 0);

    /* no index: one file */
    w = baton_shard_writer_open(rec, NULL, BATON_FMT_TFRECORD, &err);
    CHECK(w && baton_shard_writer_add(w, BATON_SHARD_KEY_AUTO, blob, 100, &err) == BATON_OK);
    CHECK(baton_shard_writer_commit(w, &err) == BATON_OK && exists("s.rec") && count_files() == 1);
    clean();

    /* bad key and oversized payload are refused without poisoning the writer */
    w = baton_shard_writer_open(rec, idx, BATON_FMT_RECORDIO, &err);
    CHECK(baton_shard_writer_add(w, (uint64_t)1 << 63, blob, 10, &err) == BATON_ERR_ARG);
    CHECK(baton_shard_writer_add(w, 1, blob, (size_t)1 << 29, &err) == BATON_ERR_ARG);
    CHECK(baton_shard_writer_add(w, 1, blob, 10, &err) == BATON_OK);
    CHECK(baton_shard_writer_records(w) == 1 && baton_shard_writer_bytes(w) == 20);
    CHECK(baton_shard_writer_commit(w, &err) == BATON_OK);
    clean();

    /* disk full during a flush inside add: NOSPACE, sticky, commit fails, nothing left */
    baton_sys.write = failing_write;
    fail_after = 0;
    w = baton_shard_writer_open(rec, idx, BATON_FMT_RECORDIO, &err);
    int rc = BATON_OK;
    for (int i = 0; i < 1000 && rc == BATON_OK; i++)
        rc = baton_shard_writer_add(w, i, blob, 4000, &err);
    CHECK_MSG(rc == BATON_ERR_NOSPACE && strstr(err.msg, "s.rec.tmp."), "%d %s", rc, err.msg);
    CHECK(baton_shard_writer_add(w, 0, blob, 10, &err) == BATON_ERR_NOSPACE);
    CHECK(baton_shard_writer_commit(w, &err) == BATON_ERR_NOSPACE);
    CHECK(!exists("s.rec") && !exists("s.idx") && count_files() == 0);

    /* disk full at commit (the final flush): NOSPACE, nothing left */
    fail_after = 0;
    w = baton_shard_writer_open(rec, idx, BATON_FMT_TFRECORD, &err);
    CHECK(baton_shard_writer_add(w, 0, blob, 100, &err) == BATON_OK);
    rc = baton_shard_writer_commit(w, &err);
    CHECK_MSG(rc == BATON_ERR_NOSPACE && strstr(err.msg, "No space"), "%d %s", rc, err.msg);
    CHECK(count_files() == 0);
    /* the index write fails after the shard's went through */
    fail_after = 1;
    w = baton_shard_writer_open(rec, idx, BATON_FMT_RECORDIO, &err);
    CHECK(baton_shard_writer_add(w, 0, blob, 100, &err) == BATON_OK);
    CHECK(baton_shard_writer_commit(w, &err) == BATON_ERR_NOSPACE);
    CHECK_MSG(strstr(err.msg, "s.idx.tmp."), "%s", err.msg);
    CHECK(count_files() == 0);
    baton_sys_reset();

    /* rename fails: error, nothing published, temps removed */
    baton_sys.rename = failing_rename;
    w = baton_shard_writer_open(rec, idx, BATON_FMT_RECORDIO, &err);
    CHECK(baton_shard_writer_add(w, 0, blob, 100, &err) == BATON_OK);
    CHECK(baton_shard_writer_commit(w, &err) == BATON_ERR_IO);
    CHECK(count_files() == 0);
    /* the second rename (the shard) fails after the index was published: taken back */
    baton_sys.rename = second_rename_fails;
    rename_calls = 0;
    w = baton_shard_writer_open(rec, idx, BATON_FMT_RECORDIO, &err);
    CHECK(baton_shard_writer_add(w, 0, blob, 100, &err) == BATON_OK);
    CHECK(baton_shard_writer_commit(w, &err) == BATON_ERR_IO);
    CHECK(count_files() == 0);
    baton_sys_reset();

    /* cannot create the temp file */
    char nodir[160];
    snprintf(nodir, sizeof nodir, "%s/missing/s.rec", dir);
    CHECK(baton_shard_writer_open(nodir, NULL, BATON_FMT_RECORDIO, &err) == NULL);
    CHECK(err.code == BATON_ERR_NOTFOUND && strstr(err.msg, "missing/s.rec.tmp."));
    CHECK(baton_shard_writer_open(rec, idx, BATON_FMT_UNKNOWN, &err) == NULL);
    CHECK(count_files() == 0);
    rmdir(dir);
    CHECK_DONE();
}
