/* test_io_store.c — io stores: URI parsing and object-name rules; the local store (get, range,
 * size, put, put_file, errors); the fault-injecting wrapper (store_fault.c's contract); the HTTP store against nginx (ranges byte-exact, HEAD, 404,
 * read-only); the S3 store against the RADOS Gateway (bucket, put, put_file, get, range, size,
 * wrong secret → 403 naming the key id but never the secret, unknown object, missing bucket);
 * a closed port → a quick network error. Servers that are not installed are skipped. */
#include "../../src/io/io_internal.h"
#include "../../src/io/store_internal.h"
#include "baton/io.h"
#include "check.h"
#include "testsrv.h"

#include <stdlib.h>
#include <string.h>

static baton_store *open_ok(const char *uri, const baton_store_opts *o)
{
    baton_store *s = NULL;
    baton_err err = {0};
    int rc = baton_store_open(uri, o, &s, &err);
    CHECK_MSG(rc == BATON_OK, "open %s: %s", uri, err.msg);
    return s;
}

static void test_uris(const char *dir)
{
    baton_err err = {0};
    baton_store *s = NULL;
    char uri[600];

    s = open_ok(dir, NULL);
    if (s) {
        CHECK(baton_store_kind_of(s) == BATON_STORE_LOCAL);
        CHECK(strcmp(baton_store_local_dir(s), dir) == 0);
        baton_store_close(s);
    }
    snprintf(uri, sizeof uri, "file://%s/", dir);
    s = open_ok(uri, NULL);
    if (s) {
        CHECK(strcmp(baton_store_local_dir(s), dir) == 0);
        char want[600];
        snprintf(want, sizeof want, "%s/", dir);
        CHECK(strcmp(baton_store_uri(s), want) == 0);
        baton_store_close(s);
    }
    snprintf(uri, sizeof uri, "%s/no-such-folder", dir);
    CHECK(baton_store_open(uri, NULL, &s, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "no-such-folder") != NULL);
    CHECK(baton_store_open("file://otherhost/x", NULL, &s, &err) == BATON_ERR_ARG);
    CHECK(baton_store_open("ftp://host/x", NULL, &s, &err) == BATON_ERR_ARG);
    CHECK(strstr(err.msg, "unsupported scheme") != NULL);
    CHECK(baton_store_open("", NULL, &s, &err) == BATON_ERR_ARG);

    s = open_ok("http://127.0.0.1:1/data/sets", NULL);
    if (s) {
        CHECK(baton_store_kind_of(s) == BATON_STORE_HTTP);
        CHECK(strcmp(baton_store_uri(s), "http://127.0.0.1:1/data/sets/") == 0);
        CHECK(baton_store_local_dir(s) == NULL);
        CHECK(baton_store_put(s, "x", "a", 1, &err) == BATON_ERR_ARG);
        CHECK(strstr(err.msg, "read-only") != NULL);
        baton_store_close(s);
    }
    CHECK(baton_store_open("http://user:pw@host/x", NULL, &s, &err) == BATON_ERR_ARG);
    CHECK(strstr(err.msg, "pw") == NULL);
    CHECK(baton_store_open("http://host/x?y=1", NULL, &s, &err) == BATON_ERR_ARG);
    CHECK(baton_store_open("http:///x", NULL, &s, &err) == BATON_ERR_ARG);

    /* S3: bucket rules, credentials */
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "sekrit-value-1234", 1);
    CHECK(baton_store_open("s3://ab/x", NULL, &s, &err) == BATON_ERR_ARG);
    CHECK(strstr(err.msg, "bucket") != NULL);
    CHECK(baton_store_open("s3://Bad_Bucket/x", NULL, &s, &err) == BATON_ERR_ARG);
    CHECK(baton_store_open("s3://bucket/a/../b", NULL, &s, &err) == BATON_ERR_ARG);
    baton_store_opts o;
    baton_store_opts_default(&o);
    o.s3_endpoint = "http://127.0.0.1:1/";
    s = open_ok("s3://my-bucket/some/prefix", &o);
    if (s) {
        CHECK(baton_store_kind_of(s) == BATON_STORE_S3);
        CHECK(strcmp(baton_store_uri(s), "s3://my-bucket/some/prefix/") == 0);
        baton_store_close(s);
    }
    s = open_ok("s3://my-bucket", &o);
    if (s) {
        CHECK(strcmp(baton_store_uri(s), "s3://my-bucket/") == 0);
        baton_store_close(s);
    }
    o.s3_endpoint = "ftp://x";
    CHECK(baton_store_open("s3://my-bucket/p", &o, &s, &err) == BATON_ERR_ARG);
    unsetenv("AWS_SECRET_ACCESS_KEY");
    o.s3_endpoint = NULL;
    CHECK(baton_store_open("s3://my-bucket/p", &o, &s, &err) == BATON_ERR_ARG);
    CHECK(strstr(err.msg, "AWS_SECRET_ACCESS_KEY") != NULL);
    unsetenv("AWS_ACCESS_KEY_ID");

    /* object names */
    s = open_ok(dir, NULL);
    if (s) {
        baton_buf b = {0};
        const char *bad[] = {"", "/abs", "../up", "a/../b", "a//b", "a/./b", "dir/", "tab\tname",
                             "back\\slash", ".."};
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            int rc = baton_store_get(s, bad[i], 100, &b, &err);
            CHECK_MSG(rc == BATON_ERR_ARG, "name \"%s\" accepted (rc %d)", bad[i], rc);
        }
        CHECK(strstr(err.msg, "bad object name") != NULL);
        baton_buf_free(&b);
        baton_store_close(s);
    }
}

static void test_local(const char *dir)
{
    baton_err err = {0};
    baton_store *s = open_ok(dir, NULL);
    if (!s) return;
    size_t n = 300000;
    unsigned char *data = malloc(n);
    srv_fill(data, n, 7);
    CHECK(baton_store_put(s, "sub/dir/obj.bin", data, n, &err) == BATON_OK);
    uint64_t size = 0;
    CHECK(baton_store_size(s, "sub/dir/obj.bin", &size, &err) == BATON_OK);
    CHECK_EQ_U(size, n);
    baton_buf b = {0};
    CHECK(baton_store_get(s, "sub/dir/obj.bin", n, &b, &err) == BATON_OK);
    CHECK(b.len == n && memcmp(b.data, data, n) == 0);
    b.len = 0;
    CHECK(baton_store_get(s, "sub/dir/obj.bin", n - 1, &b, &err) == BATON_ERR_FORMAT);
    b.len = 0;
    CHECK(baton_store_get_range(s, "sub/dir/obj.bin", 12345, 6789, &b, &err) == BATON_OK);
    CHECK(b.len == 6789 && memcmp(b.data, data + 12345, 6789) == 0);
    /* get_range appends */
    CHECK(baton_store_get_range(s, "sub/dir/obj.bin", 0, 10, &b, &err) == BATON_OK);
    CHECK(b.len == 6799 && memcmp(b.data + 6789, data, 10) == 0);
    b.len = 0;
    CHECK(baton_store_get_range(s, "sub/dir/obj.bin", n - 10, 11, &b, &err) == BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "obj.bin") != NULL && b.len == 0);
    CHECK(baton_store_get(s, "missing.bin", 100, &b, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "missing.bin") != NULL);
    CHECK(baton_store_size(s, "missing.bin", &size, &err) == BATON_ERR_NOTFOUND);
    CHECK(baton_store_get_range(s, "missing.bin", 0, 1, &b, &err) == BATON_ERR_NOTFOUND);
    /* put_file: streamed copy */
    char src[600];
    snprintf(src, sizeof src, "%s/sub/dir/obj.bin", dir);
    CHECK(baton_store_put_file(s, "copy.bin", src, &err) == BATON_OK);
    b.len = 0;
    CHECK(baton_store_get(s, "copy.bin", n, &b, &err) == BATON_OK);
    CHECK(b.len == n && memcmp(b.data, data, n) == 0);
    snprintf(src, sizeof src, "%s/nope", dir);
    CHECK(baton_store_put_file(s, "copy2.bin", src, &err) == BATON_ERR_NOTFOUND);
    /* empty object */
    CHECK(baton_store_put(s, "empty", "", 0, &err) == BATON_OK);
    b.len = 0;
    CHECK(baton_store_get(s, "empty", 10, &b, &err) == BATON_OK && b.len == 0);
    baton_buf_free(&b);
    free(data);
    baton_store_close(s);
}

/* The fault-injecting wrapper over a local store: every 2nd put and every 3rd get fail, counted
 * per operation, naming the object; failed puts leave nothing; the rest pass through; a fetch
 * refuses it; closing it closes the store it wraps. */
static void test_faults(const char *dir)
{
    baton_err err = {0};
    baton_store *in = open_ok(dir, NULL), *s = NULL;
    if (!in) return;
    io_faults f = {.ops = 1u << IO_OP_PUT | 1u << IO_OP_GET, .fail_every = 2, .delay_s = 0.001};
    CHECK(io_store_faulty(in, &f, &s, &err) == BATON_OK && s);
    if (!s) return;
    io_fault_state *fs = io_store_faults(s);
    CHECK(fs && io_store_faults(in) == NULL);
    CHECK(strcmp(baton_store_uri(s), baton_store_uri(in)) == 0 && baton_store_kind_of(s) == BATON_STORE_LOCAL);
    CHECK(baton_store_local_dir(s) == NULL);
    char name[32];
    int ok = 0, failed = 0;
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "f/obj%d", i);
        int rc = baton_store_put(s, name, "abc", 3, &err);
        if (rc == BATON_OK) ok++;
        else {
            failed++;
            CHECK_MSG(rc == BATON_ERR_IO && strstr(err.msg, name) && strstr(err.msg, "injected fault: put"), "%s", err.msg);
            uint64_t sz;
            CHECK(baton_store_size(in, name, &sz, &err) == BATON_ERR_NOTFOUND);  /* nothing written */
        }
    }
    CHECK(ok == 3 && failed == 3 && fs->calls[IO_OP_PUT] == 6 && fs->failed[IO_OP_PUT] == 3);
    baton_buf b = {0};
    CHECK(baton_store_get(s, "f/obj0", 10, &b, &err) == BATON_OK && b.len == 3);
    CHECK(baton_store_get(s, "f/obj0", 10, &b, &err) == BATON_ERR_IO && b.len == 3);  /* untouched */
    CHECK(baton_store_get_range(s, "f/obj0", 1, 2, &b, &err) == BATON_OK && b.len == 5);  /* not named: passes */
    baton_store_obj *v = NULL;
    size_t n = 0;
    CHECK(baton_store_list(s, "f/", 0, &v, &n, &err) == BATON_OK && n == 3 && fs->calls[IO_OP_LIST] == 1);
    baton_store_list_free(v, n);
    CHECK(baton_store_delete(s, "f/obj0", &err) == BATON_OK && fs->calls[IO_OP_DEL] == 1);
    CHECK(baton_store_create_bucket(s, &err) == BATON_ERR_ARG);  /* the inner store's answer */
    CHECK(baton_store_put(s, "../x", "a", 1, &err) == BATON_ERR_ARG && fs->calls[IO_OP_PUT] == 6);  /* names checked first */
    CHECK(io_fetch_new(s, NULL, &err) == NULL && strstr(err.msg, "fault-injecting"));
    baton_buf_free(&b);
    baton_store_close(s);   /* closes in too (ASan would see a leak otherwise) */
}

static void test_http(const char *www, int port)
{
    baton_err err = {0};
    char uri[200];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data", port);
    baton_store *s = open_ok(uri, NULL);
    if (!s) return;
    size_t n = 3 * 1024 * 1024 + 17;
    unsigned char *data = malloc(n);
    srv_fill(data, n, 11);
    char path[600];
    snprintf(path, sizeof path, "%s/data/blob.bin", www);
    CHECK(srv_write_file(path, data, n));

    uint64_t size = 0;
    CHECK_MSG(baton_store_size(s, "blob.bin", &size, &err) == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(size, n);
    baton_buf b = {0};
    CHECK_MSG(baton_store_get(s, "blob.bin", n, &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(b.len == n && memcmp(b.data, data, n) == 0);
    b.len = 0;
    CHECK(baton_store_get(s, "blob.bin", 1000, &b, &err) == BATON_ERR_FORMAT);
    CHECK(b.len == 0);
    /* ranges: byte-exact, including the first and the last byte */
    uint64_t offs[][2] = {{0, 1}, {0, 4096}, {1, 1}, {1000003, 1048576}, {n - 1, 1}, {n - 5000, 5000},
                          {2 * 1024 * 1024, 1024 * 1024 + 17}};
    int exact = 1;
    for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
        b.len = 0;
        int rc = baton_store_get_range(s, "blob.bin", offs[i][0], offs[i][1], &b, &err);
        CHECK_MSG(rc == BATON_OK, "range %llu+%llu: %s", (unsigned long long)offs[i][0],
                  (unsigned long long)offs[i][1], err.msg);
        if (rc != BATON_OK || b.len != offs[i][1] || memcmp(b.data, data + offs[i][0], offs[i][1]) != 0)
            exact = 0;
    }
    CHECK(exact);
    b.len = 0;
    CHECK(baton_store_get_range(s, "blob.bin", n - 10, 11, &b, &err) == BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "blob.bin") != NULL);
    CHECK(baton_store_get_range(s, "blob.bin", n + 10, 1, &b, &err) == BATON_ERR_TRUNCATED);
    CHECK(baton_store_get(s, "missing.bin", 100, &b, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "/data/missing.bin") != NULL && strstr(err.msg, "404") != NULL);
    CHECK(baton_store_size(s, "missing.bin", &size, &err) == BATON_ERR_NOTFOUND);
    baton_buf_free(&b);
    free(data);
    baton_store_close(s);
}

static void test_s3(void)
{
    baton_err err = {0};
    baton_store *s = open_ok("s3://baton-test/ds/v1", NULL);
    if (!s) return;
    CHECK_MSG(baton_store_create_bucket(s, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_store_create_bucket(s, &err) == BATON_OK, "again: %s", err.msg);

    const char *json = "{\"samples\": 3}";
    CHECK_MSG(baton_store_put(s, "dataset.json", json, strlen(json), &err) == BATON_OK, "%s", err.msg);
    baton_buf b = {0};
    CHECK_MSG(baton_store_get(s, "dataset.json", 1000, &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(b.len == strlen(json) && memcmp(b.data, json, b.len) == 0);

    size_t n = 5 * 1024 * 1024 + 3;
    unsigned char *data = malloc(n);
    srv_fill(data, n, 23);
    char path[600];
    snprintf(path, sizeof path, "%s/up.bin", srv_dir);
    CHECK(srv_write_file(path, data, n));
    CHECK_MSG(baton_store_put_file(s, "train-00000.rec", path, &err) == BATON_OK, "%s", err.msg);
    uint64_t size = 0;
    CHECK_MSG(baton_store_size(s, "train-00000.rec", &size, &err) == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(size, n);
    b.len = 0;
    CHECK_MSG(baton_store_get(s, "train-00000.rec", n, &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(b.len == n && memcmp(b.data, data, n) == 0);
    b.len = 0;
    CHECK_MSG(baton_store_get_range(s, "train-00000.rec", 4000001, 1000000, &b, &err) == BATON_OK,
              "%s", err.msg);
    CHECK(b.len == 1000000 && memcmp(b.data, data + 4000001, 1000000) == 0);
    b.len = 0;
    CHECK(baton_store_get_range(s, "train-00000.rec", n - 1, 2, &b, &err) == BATON_ERR_TRUNCATED);
    /* names that need escaping still sign correctly */
    CHECK_MSG(baton_store_put(s, "odd name+(1)=x.bin", "abc", 3, &err) == BATON_OK, "%s", err.msg);
    b.len = 0;
    CHECK_MSG(baton_store_get(s, "odd name+(1)=x.bin", 10, &b, &err) == BATON_OK, "%s", err.msg);
    CHECK(b.len == 3 && memcmp(b.data, "abc", 3) == 0);

    /* unknown object */
    CHECK(baton_store_get(s, "nope.rec", 100, &b, &err) == BATON_ERR_NOTFOUND);
    CHECK(strstr(err.msg, "s3://baton-test/ds/v1/nope.rec") != NULL);
    CHECK(baton_store_size(s, "nope.rec", &size, &err) == BATON_ERR_NOTFOUND);

    /* wrong secret: 403 with the key id, never the secret */
    const char *good = getenv("AWS_SECRET_ACCESS_KEY");
    char saved[128];
    snprintf(saved, sizeof saved, "%s", good ? good : "");
    setenv("AWS_SECRET_ACCESS_KEY", "WRONGsecretVALUE987", 1);
    baton_store *bad = open_ok("s3://baton-test/ds/v1", NULL);
    if (bad) {
        int rc = baton_store_get(bad, "dataset.json", 1000, &b, &err);
        CHECK(rc == BATON_ERR_NET);
        CHECK_MSG(strstr(err.msg, "403") && strstr(err.msg, "batontestkey") &&
                      strstr(err.msg, "SignatureDoesNotMatch") && strstr(err.msg, "dataset.json"),
                  "%s", err.msg);
        CHECK(strstr(err.msg, "WRONGsecretVALUE987") == NULL && strstr(err.msg, saved) == NULL);
        printf("wrong secret: %s\n", err.msg);
        CHECK(baton_store_put(bad, "x.bin", "x", 1, &err) == BATON_ERR_NET);
        CHECK(strstr(err.msg, "WRONGsecretVALUE987") == NULL && strstr(err.msg, "403") != NULL);
        CHECK(baton_store_size(bad, "dataset.json", &size, &err) == BATON_ERR_NET);
        CHECK(strstr(err.msg, "batontestkey") != NULL);
        baton_store_close(bad);
    }
    setenv("AWS_SECRET_ACCESS_KEY", "batontestsecret0123", 1);
    setenv("AWS_ACCESS_KEY_ID", "NOSUCHKEY", 1);
    bad = open_ok("s3://baton-test/ds/v1", NULL);
    if (bad) {
        CHECK(baton_store_get(bad, "dataset.json", 1000, &b, &err) == BATON_ERR_NET);
        CHECK_MSG(strstr(err.msg, "InvalidAccessKeyId") && strstr(err.msg, "NOSUCHKEY"), "%s", err.msg);
        baton_store_close(bad);
    }
    setenv("AWS_ACCESS_KEY_ID", "batontestkey", 1);
    setenv("AWS_SECRET_ACCESS_KEY", saved, 1);

    /* PUT and GET retried after 500s (every 2nd request fails) */
    const char *opts[] = {"--fail-every", "2", NULL};
    const char *real = getenv("AWS_ENDPOINT_URL");
    int pport;
    pid_t pp = srv_proxy_start(real ? atoi(strrchr(real, ':') + 1) : 0, &pport, opts);
    CHECK(pp > 0);
    if (pp > 0) {
        char ep[64];
        snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
        baton_store_opts o;
        baton_store_opts_default(&o);
        o.s3_endpoint = ep;
        baton_store *ps = open_ok("s3://baton-test/ds/v1", &o);
        int same = 1;
        for (int i = 0; ps && i < 3; i++) {
            char name[32];
            snprintf(name, sizeof name, "retry-%d.bin", i);
            CHECK_MSG(baton_store_put_file(ps, name, path, &err) == BATON_OK, "%s", err.msg);
            b.len = 0;
            CHECK_MSG(baton_store_get(s, name, n, &b, &err) == BATON_OK, "%s", err.msg);
            same &= b.len == n && memcmp(b.data, data, n) == 0;
        }
        CHECK(same);
        baton_store_close(ps);
        srv_proxy_stop(pp);
    }

    /* a deadline (baton_store_set_deadline): through a proxy that holds each request 1.5 s, a PUT is
     * cut at its deadline; none starts after it; without one it goes through */
    const char *slow[] = {"--delay-ms", "1500", NULL};
    pp = srv_proxy_start(real ? atoi(strrchr(real, ':') + 1) : 0, &pport, slow);
    if (pp > 0) {
        char ep[64];
        snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
        baton_store_opts o;
        baton_store_opts_default(&o);
        o.s3_endpoint = ep;
        baton_store *ps = open_ok("s3://baton-test/ds/v1", &o);
        if (ps) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double t0 = baton_now(), wall = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
            baton_store_set_deadline(ps, wall + 0.3);
            CHECK(baton_store_put(ps, "cut.bin", "abc", 3, &err) == BATON_ERR_NET);
            CHECK_MSG(strstr(err.msg, "at the deadline") && baton_now() - t0 < 1.2, "%.2f s: %s", baton_now() - t0, err.msg);
            t0 = baton_now();
            CHECK(baton_store_put(ps, "cut.bin", "abc", 3, &err) == BATON_ERR_NET);
            CHECK_MSG(strstr(err.msg, "stopped at the deadline") && baton_now() - t0 < 0.1, "%s", err.msg);
            baton_store_set_deadline(ps, 0);
            CHECK_MSG(baton_store_put(ps, "cut.bin", "abc", 3, &err) == BATON_OK, "%s", err.msg);
            baton_store_close(ps);
        }
        srv_proxy_stop(pp);
    }

    /* a missing bucket */
    baton_store *nb = open_ok("s3://no-such-bucket-here/p", NULL);
    if (nb) {
        CHECK(baton_store_put(nb, "a.bin", "a", 1, &err) == BATON_ERR_NOTFOUND);
        CHECK_MSG(strstr(err.msg, "NoSuchBucket") != NULL, "%s", err.msg);
        baton_store_close(nb);
    }
    baton_buf_free(&b);
    free(data);
    baton_store_close(s);
}

/* ListObjectsV2 over several pages (1000 keys per page), keys that need XML entities and query
 * escaping, DELETE (a missing object is fine; a missing bucket is not), a wrong secret. */
static void test_s3_list(void)
{
    baton_err err = {0};
    baton_store *s = open_ok("s3://baton-test/list/", NULL);
    if (!s) return;
    enum { N = 1003 };
    double t0 = baton_now();
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "k/%05d", i);
        if (baton_store_put(s, name, name, (size_t)(i % 7), &err) != BATON_OK) {
            CHECK_MSG(0, "put %s: %s", name, err.msg);
            break;
        }
    }
    const char *odd = "k/odd &<>\"'+=(1).bin";
    CHECK_MSG(baton_store_put(s, odd, "abcd", 4, &err) == BATON_OK, "%s", err.msg);
    baton_store_obj *v = NULL;
    size_t n = 0;
    CHECK_MSG(baton_store_list(s, "k/", 0, &v, &n, &err) == BATON_OK, "%s", err.msg);
    CHECK_EQ_U(n, N + 1);
    int ok = n == N + 1;
    for (size_t i = 0; ok && i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "k/%05zu", i);
        ok = !strcmp(v[i].name, name) && v[i].size == i % 7;
    }
    CHECK_MSG(ok, "listing differs from what was put");
    CHECK(n == N + 1 && !strcmp(v[N].name, odd) && v[N].size == 4);
    baton_store_list_free(v, n);
    printf("listed %d objects over %d pages (%.2f s with the puts)\n", N + 1, (N + 1 + 999) / 1000, baton_now() - t0);
    CHECK(baton_store_list(s, "k/0100", 0, &v, &n, &err) == BATON_OK);
    CHECK(n == 3 && !strcmp(v[0].name, "k/01000"));
    baton_store_list_free(v, n);
    CHECK(baton_store_list(s, "k/", 500, &v, &n, &err) == BATON_ERR_FORMAT);
    CHECK(baton_store_list(s, "nothing/", 0, &v, &n, &err) == BATON_OK && n == 0);
    baton_store_list_free(v, n);
    CHECK_MSG(baton_store_delete(s, odd, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_store_delete(s, odd, &err) == BATON_OK, "missing: %s", err.msg);
    CHECK(baton_store_list(s, "k/odd", 0, &v, &n, &err) == BATON_OK && n == 0);
    baton_store_list_free(v, n);
    baton_store_close(s);

    s = open_ok("s3://no-such-bucket-x/p/", NULL);
    if (s) {
        CHECK(baton_store_list(s, "", 0, &v, &n, &err) == BATON_ERR_NOTFOUND);
        CHECK_MSG(strstr(err.msg, "NoSuchBucket") != NULL, "%s", err.msg);
        CHECK(baton_store_delete(s, "x", &err) == BATON_ERR_NOTFOUND);
        baton_store_close(s);
    }
    const char *good = getenv("AWS_SECRET_ACCESS_KEY");
    char saved[128];
    snprintf(saved, sizeof saved, "%s", good ? good : "");
    setenv("AWS_SECRET_ACCESS_KEY", "WRONGsecretVALUE987", 1);
    s = open_ok("s3://baton-test/list/", NULL);
    if (s) {
        CHECK(baton_store_list(s, "k/", 0, &v, &n, &err) == BATON_ERR_NET);
        CHECK_MSG(strstr(err.msg, "403") && strstr(err.msg, "s3://baton-test/list/") &&
                      !strstr(err.msg, "WRONGsecretVALUE987"), "%s", err.msg);
        baton_store_close(s);
    }
    setenv("AWS_SECRET_ACCESS_KEY", saved, 1);
}

static void test_down(void)
{
    int port = srv_free_port();   /* nothing listens there */
    char ep[64], uri[100];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", port);
    baton_store_opts o;
    baton_store_opts_default(&o);
    o.retries = 1;
    o.s3_endpoint = ep;
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "sekrit-value-1234", 1);
    baton_store *s = open_ok("s3://some-bucket/p", &o);
    baton_err err = {0};
    baton_buf b = {0};
    char hp[40];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", port);
    if (s) {
        double t0 = baton_now();
        CHECK(baton_store_get(s, "dataset.json", 100, &b, &err) == BATON_ERR_NET);
        double dt = baton_now() - t0;
        CHECK_MSG(dt < 2.0, "took %.2f s", dt);
        CHECK_MSG(strstr(err.msg, hp) != NULL, "%s", err.msg);
        CHECK(strstr(err.msg, "sekrit") == NULL);
        baton_store_close(s);
    }
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/x", port);
    s = open_ok(uri, &o);
    if (s) {
        uint64_t size;
        CHECK(baton_store_size(s, "a", &size, &err) == BATON_ERR_NET);
        CHECK(strstr(err.msg, hp) != NULL);
        baton_store_close(s);
    }
    baton_buf_free(&b);
}

int main(void)
{
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_S3");
    if (!srv_init("iostore")) {
        CHECK(0);
        CHECK_DONE();
    }
    char dir[400], www[400];
    snprintf(dir, sizeof dir, "%s/local", srv_dir);
    snprintf(www, sizeof www, "%s/www", srv_dir);
    CHECK(baton_mkdir_p(dir, NULL) == BATON_OK);
    char sub[500];
    snprintf(sub, sizeof sub, "%s/data", www);
    CHECK(baton_mkdir_p(sub, NULL) == BATON_OK);

    test_uris(dir);
    test_local(dir);
    test_faults(dir);
    test_down();

    int port, failed;
    if (srv_nginx_start(www, &port, &failed)) test_http(www, port);
    CHECK(!failed);
    if (srv_rgw_start(256, &port, &failed)) {
        test_s3();
        test_s3_list();
    }
    CHECK(!failed);
    srv_done();
    CHECK_DONE();
}
