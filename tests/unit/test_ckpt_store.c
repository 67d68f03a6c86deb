/* test_ckpt_store.c — MANIFEST and state.json checks, the commit protocol (with ENOSPC midway,
 * failing fsyncs and a failing rename: no temp folder left, earlier checkpoints untouched),
 * retention (only checkpoints that pass the full check count; damaged ones are moved aside, never
 * deleted), stray temporaries (any number of them), re-committing a step, listing, the folder lock,
 * baton_ckpt_latest falling back past a truncated file, a missing MANIFEST and a flipped byte, every
 * system call of a save failing in turn, and the commit's order (the folder fsync after publishing,
 * retention's rename out of sight, a MANIFEST that leaves out a required file). */
#include "../../src/ckpt/ckpt_internal.h"
#include "baton/ckpt.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static int count_entries(const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    if (d) closedir(d);
    return n;
}

/* Commit a small checkpoint whose contents depend on step. */
static int save(uint64_t step, int keep, baton_err *err)
{
    float w[64];
    for (int i = 0; i < 64; i++) w[i] = (float)step + (float)i;
    int64_t sw[2] = {8, 8};
    baton_st_entry t[1] = {{"w", BATON_ST_F32, 2, sw, w}};
    baton_buf m = {0}, o = {0};
    uint64_t dl;
    ckpt_st_build_header(t, 1, NULL, NULL, 0, &m, &dl, err);
    baton_buf_append(&m, w, sizeof w);
    ckpt_st_build_header(NULL, 0, NULL, NULL, 0, &o, &dl, err);
    char state[128];
    snprintf(state, sizeof state, "{\"step\": %llu, \"model\": \"x\"}", (unsigned long long)step);
    baton_ckpt_blob b[3] = {{"model.safetensors", m.data, m.len}, {"optim.safetensors", o.data, o.len},
                            {"state.json", state, strlen(state)}};
    int rc = ckpt_commit_files(dir, step, b, 3, keep, NULL, 0, err);
    baton_buf_free(&m);
    baton_buf_free(&o);
    return rc;
}

static void ckpath(char *out, size_t cap, uint64_t step, const char *file)
{
    snprintf(out, cap, "%s/ckpt-%09llu%s%s", dir, (unsigned long long)step, file ? "/" : "", file ? file : "");
}

static void test_manifest(void)
{
    baton_ckpt_manifest m;
    baton_err e;
    const char *ok = "baton-ckpt 1\nmodel.safetensors 123 0badf00d\nstate.json 0 00000000\n";
    CHECK(ckpt_manifest_parse("M", ok, strlen(ok), &m, &e) == BATON_OK && m.nfiles == 2 &&
          m.files[0].bytes == 123 && m.files[0].crc32c == 0x0badf00d);
    char *f = ckpt_manifest_format(&m);
    CHECK(f && !strcmp(f, ok));
    free(f);
    static const struct { const char *text, *needle; } bad[] = {
        {"", "line 1"},
        {"baton-ckpt 2\n", "line 1"},
        {"baton-ckpt 1\nmodel 1 00000000", "no end of line"},
        {"baton-ckpt 1\nmodel 1\n", "expected \"name bytes crc32c\""},
        {"baton-ckpt 1\n../x 1 00000000\n", "bad file name"},
        {"baton-ckpt 1\n.. 1 00000000\n", "bad file name"},
        {"baton-ckpt 1\na 01 00000000\n", "bad byte count"},
        {"baton-ckpt 1\na -1 00000000\n", "bad byte count"},
        {"baton-ckpt 1\na 99999999999999999999 00000000\n", "bad byte count"},
        {"baton-ckpt 1\na 9223372036854775808 00000000\n", "too large"},
        {"baton-ckpt 1\na 1 0000000\n", "8 hex digits"},
        {"baton-ckpt 1\na 1 0000000G\n", "lowercase hex"},
        {"baton-ckpt 1\na 1 ABCDEF00\n", "lowercase hex"},
        {"baton-ckpt 1\na 1 00000000\na 2 00000000\n", "listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        int rc = ckpt_manifest_parse("M", bad[i].text, strlen(bad[i].text), &m, &e);
        CHECK_MSG(rc != BATON_OK && strstr(e.msg, bad[i].needle), "case %zu: %s", i, e.msg);
    }
    CHECK(ckpt_state_check("s", "{\"step\": 5}", 11, 5, &e) == BATON_OK);
    CHECK(ckpt_state_check("s", "{\"step\": 5}", 11, 6, &e) == BATON_ERR_FORMAT && strstr(e.msg, "is 5"));
    CHECK(ckpt_state_check("s", "{\"step\": 5", 10, 5, &e) == BATON_ERR_FORMAT);
    CHECK(ckpt_state_check("s", "[5]", 3, 5, &e) == BATON_ERR_FORMAT && strstr(e.msg, "object"));
    CHECK(ckpt_state_check("s", "{\"step\": -1}", 12, 5, &e) == BATON_ERR_FORMAT);
    CHECK(ckpt_state_check("s", "{\"step\": 1.5}", 13, 5, &e) == BATON_ERR_FORMAT);
    CHECK(ckpt_state_check("s", "{} x", 4, 5, &e) == BATON_ERR_FORMAT);
    uint64_t st;
    CHECK(baton_ckpt_parse_name("ckpt-000000042", &st) && st == 42);
    CHECK(!baton_ckpt_parse_name("ckpt-", &st) && !baton_ckpt_parse_name("ckpt-1x", &st) &&
          !baton_ckpt_parse_name(".ckpt-1.tmp.3", &st) && !baton_ckpt_parse_name("ckpt-99999999999999999999", &st));
}

static long fail_after;          /* bytes the fake write lets through before ENOSPC */
static ssize_t enospc_write(int fd, const void *b, size_t n)
{
    if (fail_after <= 0) {
        errno = ENOSPC;
        return -1;
    }
    if ((long)n > fail_after) n = (size_t)fail_after;
    fail_after -= (long)n;
    return write(fd, b, n);
}
static int fsync_calls, fsync_fail_at;
static int failing_fsync(int fd)
{
    if (++fsync_calls == fsync_fail_at) {
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}
static int failing_rename(const char *a, const char *b)
{
    (void)a;
    (void)b;
    errno = EXDEV;
    return -1;
}

static void test_commit_failures(void)
{
    baton_err err = {0};
    CHECK(save(1, 3, &err) == BATON_OK);
    char p[512];
    ckpath(p, sizeof p, 1, NULL);
    CHECK(baton_ckpt_verify(p, &err) == BATON_OK);

    for (long at = 0; at < 400; at += 97) {   /* ENOSPC at several points, files 1..MANIFEST */
        fail_after = at;
        baton_sys.write = enospc_write;
        int rc = save(2, 3, &err);
        baton_sys_reset();
        CHECK_MSG(rc == BATON_ERR_NOSPACE && strstr(err.msg, "not saved"), "at %ld: %d %s", at, rc, err.msg);
        CHECK(count_entries(".ckpt-") == 0);
        CHECK(count_entries("ckpt-") == 1);
        CHECK(baton_ckpt_verify(p, &err) == BATON_OK);
    }
    for (int k = 1; k <= 5; k++) {   /* fsync of each file, MANIFEST, then the temp folder */
        fsync_calls = 0;
        fsync_fail_at = k;
        baton_sys.fsync = failing_fsync;
        int rc = save(2, 3, &err);
        baton_sys_reset();
        CHECK_MSG(rc == BATON_ERR_IO && strstr(err.msg, "fsync"), "fsync %d: %d %s", k, rc, err.msg);
        CHECK(count_entries(".ckpt-") == 0 && count_entries("ckpt-") == 1);
    }
    baton_sys.rename = failing_rename;
    CHECK(save(2, 3, &err) == BATON_ERR_IO);
    baton_sys_reset();
    CHECK(count_entries(".ckpt-") == 0 && count_entries("ckpt-") == 1);
    CHECK(baton_ckpt_verify(p, &err) == BATON_OK);
    /* and the next save works */
    CHECK(save(2, 3, &err) == BATON_OK);
    CHECK(count_entries("ckpt-") == 2);
}

/* Every system call of a save fails in turn ("fail the k-th call" for every k, with EIO, and once
 * more with ENOSPC for writes): whatever fails, the previous checkpoint still verifies, a failed
 * save says so and leaves no checkpoint that does not verify, a save reported as done verifies in
 * full, and the next save without faults succeeds. */
static long sys_calls, sys_fail_at;
static int sys_errno;
static int hit_as(int e)
{
    if (++sys_calls != sys_fail_at) return 0;
    errno = e;
    return 1;
}
static int hit(void) { return hit_as(sys_errno == ENOSPC ? EIO : sys_errno); }   /* ENOSPC: writing calls only */
static int hit_w(void) { return hit_as(sys_errno); }
static int f_open(const char *p, int fl, mode_t m) { return ((fl & O_CREAT) ? hit_w() : hit()) ? -1 : open(p, fl, m); }
static ssize_t f_read(int fd, void *b, size_t n) { return hit() ? -1 : read(fd, b, n); }
static ssize_t f_write(int fd, const void *b, size_t n) { return hit_w() ? -1 : write(fd, b, n); }
static ssize_t f_pread(int fd, void *b, size_t n, off_t o) { return hit() ? -1 : pread(fd, b, n, o); }
static int f_fsync(int fd) { return hit_w() ? -1 : fsync(fd); }
static int f_close(int fd)
{
    int r = close(fd);   /* the descriptor is gone either way, as with a real failing close */
    return hit() ? -1 : r;
}
static int f_rename(const char *a, const char *b) { return hit() ? -1 : rename(a, b); }
static int f_unlink(const char *p) { return hit() ? -1 : unlink(p); }
static int f_mkdir(const char *p, mode_t m) { return hit_w() ? -1 : mkdir(p, m); }
static int f_fstat(int fd, struct stat *st) { return hit() ? -1 : fstat(fd, st); }
static void faulty(long at, int e)
{
    sys_calls = 0, sys_fail_at = at, sys_errno = e;
    baton_sys.open = f_open, baton_sys.read = f_read, baton_sys.write = f_write, baton_sys.pread = f_pread;
    baton_sys.fsync = f_fsync, baton_sys.close = f_close, baton_sys.rename = f_rename;
    baton_sys.unlink = f_unlink, baton_sys.mkdir = f_mkdir, baton_sys.fstat = f_fstat;
}

static void test_fail_each_call(void)
{
    baton_err err = {0};
    CHECK(save(30, 3, &err) == BATON_OK);
    int aside0 = count_entries(".ckpt-");   /* what the tests before left damaged, now moved aside */
    faulty(0, 0);   /* count the calls of one save */
    CHECK(save(31, 3, &err) == BATON_OK);
    char prev[512];
    ckpath(prev, sizeof prev, 31, NULL);
    long n = sys_calls;
    baton_sys_reset();
    CHECK_MSG(n > 10, "a save made %ld system calls through the table", n);
    int failed = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (long k = 1; k <= n + 1; k++) {
            uint64_t step = 32 + (uint64_t)(pass * (n + 2) + k);
            faulty(k, pass ? ENOSPC : EIO);
            err.msg[0] = 0;
            int rc = save(step, 3, &err);
            baton_sys_reset();
            CHECK_MSG(baton_ckpt_verify(prev, &err) == BATON_OK, "call %ld failing: the previous checkpoint: %s", k,
                      err.msg);
            char p[512];
            ckpath(p, sizeof p, step, NULL);
            int published = rc != BATON_OK && strstr(err.msg, "published but not durable") != NULL;
            if (rc != BATON_OK) {
                failed++;
                /* failed before the publishing rename: no folder; after it (the folder's fsync): says so */
                CHECK_MSG(err.msg[0] && (published ? baton_ckpt_verify(p, &err) == BATON_OK : !baton_is_dir(p)),
                          "call %ld failing: rc %d, \"%s\", folder %d", k, rc, err.msg, baton_is_dir(p));
                if (published) snprintf(prev, sizeof prev, "%s", p);
                if (pass && rc != BATON_ERR_NOSPACE && rc != BATON_ERR_IO)
                    CHECK_MSG(0, "call %ld failing with ENOSPC: status %d", k, rc);
            } else {
                CHECK_MSG(baton_ckpt_verify(p, &err) == BATON_OK, "call %ld failing, save reported done: %s", k,
                          err.msg);
                snprintf(prev, sizeof prev, "%s", p);   /* the newest committed one now */
            }
            /* nothing that does not verify is ever listed as a checkpoint */
            baton_ckpt_info *v = NULL;
            size_t nv = 0;
            CHECK(baton_ckpt_list(dir, 1, &v, &nv, &err) == BATON_OK);
            for (size_t i = 0; i < nv; i++)
                CHECK_MSG(v[i].status == BATON_OK, "call %ld failing: ckpt-%llu listed and broken", k,
                          (unsigned long long)v[i].step);
            free(v);
        }
    }
    CHECK_MSG(failed >= 10, "only %d of %ld failing calls failed the save", failed, 2 * (n + 1));
    CHECK(save(10000, 3, &err) == BATON_OK);
    CHECK_MSG(count_entries(".ckpt-") == aside0, "%d temporaries or folders moved aside left",
              count_entries(".ckpt-") - aside0);   /* and no good checkpoint was taken for a damaged one */
}

/* The commit's order, watched through the system-call table: after the rename that publishes
 * ckpt-<step>, the folder holding it is fsynced (else a power cut can lose the rename); retention
 * renames a folder out of sight (.ckpt-<step>.del.<pid>) before removing its files, so a listing
 * never sees a half-removed checkpoint. */
static int published, dir_synced_after, del_renames;
static char watch_dir[512];
static int watching_rename(const char *a, const char *b)
{
    const char *base = strrchr(b, '/');
    base = base ? base + 1 : b;
    if (!strncmp(base, "ckpt-", 5)) published = 1, dir_synced_after = 0;
    if (strstr(base, ".del.")) del_renames++;
    return rename(a, b);
}
static int watching_fsync(int fd)
{
    char link[64], path[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n > 0) {
        path[n] = 0;
        if (published && !strcmp(path, watch_dir)) dir_synced_after = 1;
    }
    return fsync(fd);
}

static void test_commit_order(void)
{
    baton_err err = {0};
    char real[512];
    CHECK(realpath(dir, real) != NULL);
    snprintf(watch_dir, sizeof watch_dir, "%s", real);
    baton_sys.rename = watching_rename;
    baton_sys.fsync = watching_fsync;
    published = dir_synced_after = del_renames = 0;
    CHECK(save(20040, 2, &err) == BATON_OK);
    CHECK_MSG(published && dir_synced_after, "published %d, the folder fsynced after it %d", published,
              dir_synced_after);
    CHECK(save(20041, 2, &err) == BATON_OK);
    int before = del_renames;
    CHECK(save(20042, 2, &err) == BATON_OK);   /* keep 2: retention removes the oldest */
    baton_sys_reset();
    CHECK_MSG(del_renames > before, "retention removed a checkpoint without renaming it out of sight first");
    /* a MANIFEST that does not list a required file is not a checkpoint, whatever else checks out */
    char m[512], o[512];
    ckpath(m, sizeof m, 20042, "MANIFEST");
    ckpath(o, sizeof o, 20042, "optim.safetensors");
    uint8_t *text = NULL;
    size_t len = 0;
    CHECK(baton_file_read_all(m, 1 << 16, &text, &len, &err) == BATON_OK);
    if (text) {
        char out[4096];
        size_t k = 0;
        for (char *line = strtok((char *)text, "\n"); line && k < sizeof out - 200; line = strtok(NULL, "\n"))
            if (strncmp(line, "optim.safetensors ", 18)) k += (size_t)snprintf(out + k, sizeof out - k, "%s\n", line);
        free(text);
        int fd = open(m, O_WRONLY | O_TRUNC);
        CHECK(fd >= 0 && write(fd, out, k) == (ssize_t)k);
        if (fd >= 0) close(fd);
        unlink(o);
        char p[512];
        ckpath(p, sizeof p, 20042, NULL);
        int rc = baton_ckpt_verify(p, &err);
        CHECK_MSG(rc != BATON_OK && strstr(err.msg, "does not list optim.safetensors"), "%d %s", rc, err.msg);
    }
}

static void test_retention_and_temps(void)
{
    baton_err err = {0};
    for (uint64_t s = 3; s <= 6; s++) CHECK(save(s, 3, &err) == BATON_OK);
    baton_ckpt_info *v;
    size_t n;
    CHECK(baton_ckpt_list(dir, 1, &v, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 3);
    if (n == 3) CHECK(v[0].step == 6 && v[1].step == 5 && v[2].step == 4 && v[0].status == BATON_OK && v[0].bytes > 0);
    free(v);
    /* a torn checkpoint is not counted; the next commit moves it aside (never deletes it) */
    char p[512];
    ckpath(p, sizeof p, 5, "MANIFEST");
    unlink(p);
    CHECK(save(7, 3, &err) == BATON_OK);
    CHECK(baton_ckpt_list(dir, 1, &v, &n, &err) == BATON_OK);
    CHECK_EQ_U(n, 3);
    if (n == 3) CHECK(v[0].step == 7 && v[1].step == 6 && v[2].step == 4);
    free(v);
    snprintf(p, sizeof p, "%s/.ckpt-000000005.corrupt/model.safetensors", dir);
    CHECK(access(p, F_OK) == 0);
    CHECK(baton_ckpt_list(dir, 1 | BATON_CKPT_LIST_ASIDE, &v, &n, &err) == BATON_OK && n == 4);
    if (n == 4) CHECK(v[2].step == 5 && v[2].aside && v[2].status != BATON_OK && !v[0].aside && !v[1].aside);
    free(v);
    snprintf(p, sizeof p, "%s/.ckpt-000000005.corrupt", dir);
    CHECK(baton_remove_tree(p) == 0);
    /* stray temporaries of a crashed run go on the next save; a moved-aside folder comes back */
    char t[512], f[600];
    snprintf(t, sizeof t, "%s/.ckpt-000000008.tmp.99999", dir);
    mkdir(t, 0755);
    snprintf(f, sizeof f, "%s/model.safetensors", t);
    int fd = open(f, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
    char a[512], b[512];
    ckpath(a, sizeof a, 4, NULL);
    snprintf(b, sizeof b, "%s/.ckpt-000000004.old.99999", dir);
    CHECK(rename(a, b) == 0);
    /* and so does the half-removed folder of a retention that was killed */
    char d[512];
    snprintf(d, sizeof d, "%s/.ckpt-000000002.del.99999", dir);
    CHECK(mkdir(d, 0755) == 0);
    CHECK(save(8, 4, &err) == BATON_OK);
    CHECK(count_entries(".ckpt-") == 0);
    CHECK(baton_ckpt_verify(a, &err) == BATON_OK);
    /* committing a step that exists replaces it */
    CHECK(save(8, 4, &err) == BATON_OK);
    ckpath(a, sizeof a, 8, NULL);
    CHECK(baton_ckpt_verify(a, &err) == BATON_OK);
    CHECK(count_entries(".ckpt-") == 0 && count_entries("ckpt-") == 4);
}


/* Flip one byte inside a file of ckpt-<step> (its size stays right: only the full check sees it). */
static void flip(uint64_t step, const char *file, off_t at)
{
    char f[512];
    ckpath(f, sizeof f, step, file);
    int fd = open(f, O_RDWR);
    uint8_t c = 0;
    CHECK(fd >= 0 && pread(fd, &c, 1, at) == 1);
    c ^= 0x40;
    CHECK(pwrite(fd, &c, 1, at) == 1);
    if (fd >= 0) close(fd);
}

static int aside_exists(uint64_t step)
{
    char p[512];
    snprintf(p, sizeof p, "%s/.ckpt-%09llu.corrupt", dir, (unsigned long long)step);
    return baton_is_dir(p);
}

/* Retention counts only checkpoints that pass the full check, never deletes the newest verified
 * one, and moves damaged ones aside. */
static void test_retention_damaged(void)
{
    char sub[256];
    snprintf(sub, sizeof sub, "%.200s/ret", dir);
    baton_err err = {0};
    baton_mkdir_p(sub, &err);
    char saved[256];
    snprintf(saved, sizeof saved, "%s", dir);
    snprintf(dir, sizeof dir, "%s", sub);
    /* keep 1 and a damaged ckpt-40 (right sizes, one byte flipped): a run restarting from 0 keeps
     * its new ckpt-10 instead of deleting it right after the commit */
    CHECK(save(40, 1, &err) == BATON_OK);
    flip(40, "model.safetensors", 150);
    CHECK(save(10, 1, &err) == BATON_OK);
    char p[512];
    ckpath(p, sizeof p, 10, NULL);
    CHECK_MSG(baton_ckpt_verify(p, &err) == BATON_OK, "ckpt-10 kept: %s", err.msg);
    CHECK(aside_exists(40));
    ckpath(p, sizeof p, 40, NULL);
    CHECK(!baton_is_dir(p));
    uint64_t step = 0;
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK && step == 10);
    /* three damaged folders above a good ckpt-20, keep 3: everything that verifies stays */
    for (uint64_t s = 20; s <= 50; s += 10) CHECK(save(s, 5, &err) == BATON_OK);
    flip(30, "model.safetensors", 150);
    flip(40, "optim.safetensors", 10);
    flip(50, "state.json", 3);
    CHECK(save(21, 3, &err) == BATON_OK);   /* a run resumed from ckpt-20 commits its next step */
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK && step == 21);
    ckpath(p, sizeof p, 20, NULL);
    CHECK(baton_ckpt_verify(p, &err) == BATON_OK);
    ckpath(p, sizeof p, 10, NULL);
    CHECK(baton_ckpt_verify(p, &err) == BATON_OK);
    CHECK(aside_exists(30) && aside_exists(50));
    snprintf(p, sizeof p, "%s/.ckpt-000000040.corrupt.2", dir);   /* the second damaged ckpt-40 */
    CHECK(baton_is_dir(p));
    baton_ckpt_info *v;
    size_t n;
    CHECK(baton_ckpt_list(dir, 1, &v, &n, &err) == BATON_OK && n == 3);
    free(v);
    CHECK(baton_ckpt_list(dir, 1 | BATON_CKPT_LIST_ASIDE, &v, &n, &err) == BATON_OK && n == 7);
    size_t aside = 0;
    for (size_t i = 0; i < n; i++) aside += v[i].aside && v[i].status != BATON_OK;
    CHECK_EQ_U(aside, 4);
    free(v);
    /* re-committing the step of a damaged folder moves the damaged one aside, not into .old */
    CHECK(save(60, 3, &err) == BATON_OK);
    ckpath(p, sizeof p, 60, "optim.safetensors");
    CHECK(truncate(p, 8) == 0);   /* only optim.safetensors truncated */
    CHECK(save(60, 3, &err) == BATON_OK);
    CHECK(aside_exists(60));
    ckpath(p, sizeof p, 60, NULL);
    CHECK(baton_ckpt_verify(p, &err) == BATON_OK);
    /* strays beyond any fixed number are all cleared */
    for (int i = 0; i < 100; i++) {
        snprintf(p, sizeof p, "%s/.ckpt-%09d.tmp.%d", dir, 100 + i, 70000 + i);
        CHECK(mkdir(p, 0755) == 0);
    }
    CHECK(ckpt_clean_temps(dir) == 100);
    snprintf(dir, sizeof dir, "%s", saved);
}

/* One store per folder: a second opener gets an error naming the holder, and the lock goes with
 * the first store; a folder that cannot hold the lock file is refused at open. */
static int eacces_open(const char *path, int flags, mode_t mode)
{
    if (strstr(path, "/.lock")) {
        errno = EROFS;
        return -1;
    }
    return open(path, flags, mode);
}

static void test_store_lock(void)
{
    char sub[256];
    snprintf(sub, sizeof sub, "%.200s/lock", dir);
    baton_err err = {0};
    baton_ckpt_store *a = NULL, *b = NULL;
    CHECK(baton_ckpt_store_open(sub, 3, &a, &err) == BATON_OK && a);
    /* the lock is per open file: the same process opening it again contends like another would */
    int rc = baton_ckpt_store_open(sub, 3, &b, &err);
    char pid[32];
    snprintf(pid, sizeof pid, "process %ld", (long)getpid());
    CHECK_MSG(rc == BATON_ERR_BUSY && !b && strstr(err.msg, pid) && strstr(err.msg, "in use"), "%d %s", rc, err.msg);
    baton_ckpt_store_close(a);
    CHECK(baton_ckpt_store_open(sub, 3, &b, &err) == BATON_OK && b);
    baton_ckpt_store_close(b);
    baton_sys.open = eacces_open;
    rc = baton_ckpt_store_open(sub, 3, &b, &err);
    baton_sys_reset();
    CHECK_MSG(rc == BATON_ERR_IO && strstr(err.msg, "not writable") && strstr(err.msg, "Read-only"), "%d %s", rc, err.msg);
}

static void test_latest(void)
{
    baton_err err = {0};
    char p[512];
    uint64_t step;
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK && step == 8);
    /* truncate the newest model.safetensors */
    char f[512];
    ckpath(f, sizeof f, 8, "model.safetensors");
    CHECK(truncate(f, 100) == 0);
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK && step == 7);
    ckpath(f, sizeof f, 8, NULL);
    CHECK(baton_ckpt_verify(f, &err) == BATON_ERR_TRUNCATED && strstr(err.msg, "MANIFEST says"));
    /* delete the next one's MANIFEST */
    ckpath(f, sizeof f, 7, "MANIFEST");
    unlink(f);
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK && step == 6);
    /* flip a byte in the data of the next */
    ckpath(f, sizeof f, 6, "model.safetensors");
    int fd = open(f, O_RDWR);
    uint8_t c;
    CHECK(pread(fd, &c, 1, 200) == 1);
    c ^= 0x10;
    CHECK(pwrite(fd, &c, 1, 200) == 1);
    close(fd);
    ckpath(f, sizeof f, 6, NULL);
    CHECK(baton_ckpt_verify(f, &err) == BATON_ERR_CORRUPT && strstr(err.msg, "CRC32C"));
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK && step == 4);
    CHECK(baton_ckpt_latest(dir, p, sizeof p, &step, &err) == BATON_OK);
    baton_ckpt_info *v;
    size_t n;
    CHECK(baton_ckpt_list(dir, 1, &v, &n, &err) == BATON_OK && n == 4);
    if (n == 4) CHECK(v[0].status != BATON_OK && v[1].status != BATON_OK && v[2].status != BATON_OK && v[3].status == BATON_OK);
    free(v);
    /* nothing verifies */
    char d2[300];
    snprintf(d2, sizeof d2, "%s/empty", dir);
    baton_mkdir_p(d2, &err);
    CHECK(baton_ckpt_latest(d2, p, sizeof p, &step, &err) == BATON_ERR_NOTFOUND);
}

int main(void)
{
    baton_log_set_level(BATON_LOG_ERROR);
    snprintf(dir, sizeof dir, "/tmp/baton-test-store.%ld", (long)getpid());
    baton_err err;
    baton_mkdir_p(dir, &err);
    test_manifest();
    test_commit_failures();
    test_retention_and_temps();
    test_latest();
    test_retention_damaged();
    test_store_lock();
    test_fail_each_call();
    test_commit_order();   /* last: its retention (keep 2) removes the others */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    CHECK_DONE();
}
