/* test_util.c — util: buffers and their text printer, RNG determinism and permutations, atomic writes, error values,
 * and a write failure injected through the system-call table. */
#include "baton/util.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fsyncs;
static int counting_fsync(int fd)
{
    fsyncs++;
    return fsync(fd);
}

static int fail_writes;
static ssize_t failing_write(int fd, const void *p, size_t n)
{
    if (fail_writes) {
        errno = ENOSPC;
        return -1;
    }
    return write(fd, p, n);
}

/* Error values: a prefix is added once; errno values map to their status; the lock names its holder. */
static void test_errors(void)
{
    baton_err e = {0};
    baton_err_set(&e, BATON_ERR_NOTFOUND, "/d: no such folder");
    CHECK(baton_err_prefix(&e, "%s", "/d") == BATON_ERR_NOTFOUND && !strcmp(e.msg, "/d: no such folder"));
    CHECK(baton_err_prefix(&e, "train") == BATON_ERR_NOTFOUND && !strcmp(e.msg, "train: /d: no such folder"));
    CHECK(baton_err_prefix(&e, "/") && !strcmp(e.msg, "/: train: /d: no such folder"));   /* a prefix, not a start */
    CHECK(baton_err_errno(&e, ENOSPC, "write failed", "f") == BATON_ERR_NOSPACE && strstr(e.msg, "f: write failed: "));
    CHECK(baton_err_errno(&e, ENOTDIR, "open", "f") == BATON_ERR_NOTFOUND);
    CHECK(baton_err_errno(&e, EACCES, "open", "f") == BATON_ERR_IO);
    char lock[64];
    snprintf(lock, sizeof lock, "/tmp/baton-test-lock.%ld", (long)getpid());
    int a = -1, b = -1;
    CHECK(baton_lock_acquire(lock, "thing", &a, &e) == BATON_OK && a >= 0);
    char pid[48];
    snprintf(pid, sizeof pid, "thing is in use by process %ld", (long)getpid());
    CHECK(baton_lock_acquire(lock, "thing", &b, &e) == BATON_ERR_BUSY && b < 0 && strstr(e.msg, pid));
    baton_lock_release(a);
    CHECK(baton_lock_acquire(lock, "thing", &b, &e) == BATON_OK);
    baton_lock_release(b);
    unlink(lock);
}

/* Large regions: zero from the start; growing keeps the bytes and adds zeros (a pipeline's arena,
 * moved while records are in it); shrinking keeps the front; size 0 and NULL are legal. */
static void test_bigmem(void)
{
    size_t a = (5u << 20) + 123, b = (13u << 20) + 7;
    uint8_t *p = baton_bigmem_alloc(a);
    CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
    if (!p) return;
    CHECK(p[0] == 0 && p[a - 1] == 0);
    for (size_t i = 0; i < a; i++) p[i] = (uint8_t)(i * 31 + 7);
    uint8_t *q = baton_bigmem_realloc(p, a, b);
    CHECK(q != NULL);
    if (!q) {
        baton_bigmem_free(p, a);
        return;
    }
    size_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < a; i++) bad += q[i] != (uint8_t)(i * 31 + 7);
    for (size_t i = a; i < b; i++) nonzero += q[i] != 0;
    CHECK_EQ_U(bad, 0);
    CHECK_EQ_U(nonzero, 0);
    q[b - 1] = 1;
    uint8_t *r = baton_bigmem_realloc(q, b, 4096);
    CHECK(r != NULL && r[4095] == (uint8_t)(4095 * 31 + 7));
    baton_bigmem_free(r ? r : q, r ? 4096 : b);
    uint8_t *z = baton_bigmem_realloc(NULL, 0, 0);
    CHECK(z != NULL);
    baton_bigmem_free(z, 0);
    baton_bigmem_free(NULL, 0);
}

/* An arena's growth: doubled from its first size until the bytes fit, kept when they fit already,
 * refused (region and capacity unchanged) when len + extra overflows. */
static void test_bigmem_reserve(void)
{
    void *p = NULL;
    size_t cap = 0;
    CHECK(baton_bigmem_reserve(&p, &cap, 0, 10, 4096) == 0 && p != NULL);
    CHECK_EQ_U(cap, 4096);
    if (!p) return;
    memset(p, 0xab, 4096);
    void *was = p;
    CHECK(baton_bigmem_reserve(&p, &cap, 4000, 96, 4096) == 0 && p == was && cap == 4096);   /* fits */
    CHECK(baton_bigmem_reserve(&p, &cap, 4000, 97, 4096) == 0 && cap == 8192);
    CHECK(baton_bigmem_reserve(&p, &cap, 8192, 40000, 4096) == 0 && cap == 65536);   /* 8192 * 2^3 */
    CHECK(((uint8_t *)p)[0] == 0xab && ((uint8_t *)p)[4095] == 0xab && ((uint8_t *)p)[4096] == 0);
    was = p;
    CHECK(baton_bigmem_reserve(&p, &cap, 100, SIZE_MAX - 50, 4096) == -1 && p == was && cap == 65536);
    CHECK(baton_bigmem_reserve(&p, &cap, 100, SIZE_MAX / 2 + 2, 4096) == -1 && p == was && cap == 65536);
    baton_bigmem_free(p, cap);
}

int main(void)
{
    test_errors();
    test_bigmem();
    test_bigmem_reserve();
    baton_buf b = {0};
    for (int i = 0; i < 1000; i++) CHECK(baton_buf_append(&b, "abcd", 4) == BATON_OK);
    CHECK_EQ_U(b.len, 4000);
    CHECK(memcmp(b.data + 3996, "abcd", 4) == 0);
    baton_buf_free(&b);
    /* the text printer: nothing cut at any length (the SVG helper's printer cut at 1,023 bytes),
     * and the five XML/HTML specials escaped, the rest as it is */
    char *big = malloc(5001);
    CHECK(big != NULL);
    if (big) {
        memset(big, 'x', 5000), big[5000] = 0;
        CHECK(baton_buf_printf(&b, "<%s|%d>", big, 42) == BATON_OK);
        CHECK_EQ_U(b.len, 5005);
        CHECK(b.len == 5005 && b.data[0] == '<' && !memcmp(b.data + 5001, "|42>", 4));
        free(big);
    }
    CHECK(baton_buf_printf(&b, "%s", "") == BATON_OK && b.len == 5005);
    b.len = 0;
    CHECK(baton_buf_esc_xml(&b, "a<b>&\"c'd\xc3\xa9") == BATON_OK);
    CHECK(b.len == strlen("a&lt;b&gt;&amp;&quot;c&#39;d\xc3\xa9") &&
          !memcmp(b.data, "a&lt;b&gt;&amp;&quot;c&#39;d\xc3\xa9", b.len));
    CHECK(baton_buf_esc_xml(&b, NULL) == BATON_OK && baton_buf_esc_xml(&b, "") == BATON_OK);
    baton_buf_free(&b);

    baton_rng r1, r2;
    baton_rng_seed(&r1, 42);
    baton_rng_seed(&r2, 42);
    int same = 1;
    for (int i = 0; i < 100; i++) same &= baton_rng_next(&r1) == baton_rng_next(&r2);
    CHECK(same);
    baton_rng_seed3(&r1, 1, 2, 3);
    baton_rng_seed3(&r2, 1, 3, 2);
    CHECK(baton_rng_next(&r1) != baton_rng_next(&r2));

    uint64_t perm[1000];
    int seen[1000] = {0};
    baton_rng_permutation(&r1, perm, 1000);
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        if (perm[i] >= 1000 || seen[perm[i]]) ok = 0;
        else seen[perm[i]] = 1;
    }
    CHECK(ok);
    uint64_t hist[7] = {0};
    for (int i = 0; i < 70000; i++) hist[baton_rng_below(&r1, 7)]++;
    for (int i = 0; i < 7; i++) CHECK(hist[i] > 9000 && hist[i] < 11000);
    float f = baton_rng_float(&r1);
    CHECK(f >= 0 && f < 1);

    char dir[] = "/tmp/baton-test-util-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], sub[256];
    snprintf(path, sizeof path, "%s/a.txt", dir);
    baton_err err = {0};
    CHECK(baton_file_write_atomic(path, "hello", 5, &err) == BATON_OK);
    uint8_t *data;
    size_t n;
    CHECK(baton_file_read_all(path, 100, &data, &n, &err) == BATON_OK);
    CHECK(n == 5 && memcmp(data, "hello", 5) == 0);
    free(data);
    CHECK(baton_file_read_all(path, 3, &data, &n, &err) == BATON_ERR_FORMAT);
    CHECK(baton_file_read_all(path, 5, &data, &n, &err) == BATON_OK);  /* exactly the limit */
    CHECK(n == 5);
    free(data);

    /* a failing write leaves the old file intact and no temp file behind */
    baton_sys.write = failing_write;
    fail_writes = 1;
    int rc = baton_file_write_atomic(path, "world!", 6, &err);
    CHECK(rc == BATON_ERR_NOSPACE);
    CHECK(strstr(err.msg, "No space") != NULL);
    baton_sys_reset();
    CHECK(baton_file_read_all(path, 100, &data, &n, &err) == BATON_OK);
    CHECK(n == 5 && memcmp(data, "hello", 5) == 0);
    free(data);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);

    /* the same without fsync (a copy its readers check): replaced whole, nothing left behind on
     * a failure, the old file intact */
    baton_sys.fsync = counting_fsync;
    CHECK(baton_file_write_replace(path, "again", 5, &err) == BATON_OK && fsyncs == 0);
    CHECK(baton_file_write_atomic(path, "hello", 5, &err) == BATON_OK && fsyncs == 2);  /* the file and its folder */
    CHECK(baton_file_write_replace(path, "world!", 6, &err) == BATON_OK && fsyncs == 2);
    CHECK(baton_file_read_all(path, 100, &data, &n, &err) == BATON_OK);
    CHECK(n == 6 && memcmp(data, "world!", 6) == 0);
    free(data);
    baton_sys.write = failing_write;
    CHECK(baton_file_write_replace(path, "lost", 4, &err) == BATON_ERR_NOSPACE);
    baton_sys_reset();
    CHECK(baton_file_read_all(path, 100, &data, &n, &err) == BATON_OK);
    CHECK(n == 6 && memcmp(data, "world!", 6) == 0);
    free(data);
    snprintf(sub, sizeof sub, "%s", dir);
    DIR *dd = opendir(sub);
    int entries = 0;
    for (struct dirent *e; dd && (e = readdir(dd));) entries += e->d_name[0] != '.';
    if (dd) closedir(dd);
    CHECK_MSG(entries == 1, "%d files in the folder after a failed replace (expected a.txt alone)", entries);

    snprintf(sub, sizeof sub, "%s/x/y/z", dir);
    CHECK(baton_mkdir_p(sub, &err) == BATON_OK);
    CHECK(baton_is_dir(sub));
    char dn[256];
    baton_path_dirname("a/b/c", dn, sizeof dn);
    CHECK(strcmp(dn, "a/b") == 0);
    baton_path_dirname("c", dn, sizeof dn);
    CHECK(strcmp(dn, ".") == 0);
    CHECK(baton_file_read_all("/nonexistent/x", 10, &data, &n, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "/nonexistent/x") != NULL);

    char f2[300];
    snprintf(f2, sizeof f2, "%s/x/y/file", dir);
    CHECK(baton_file_write_atomic(f2, "x", 1, &err) == BATON_OK);
    snprintf(sub, sizeof sub, "%s/x", dir);
    CHECK(baton_remove_tree(sub) == 0);  /* nested folders and files */
    CHECK(!baton_is_dir(sub));
    CHECK(baton_remove_tree(sub) == 0);  /* already gone: fine */
    CHECK(baton_remove_tree(dir) == 0);
    CHECK(access(dir, F_OK) != 0);
    CHECK_DONE();
}
