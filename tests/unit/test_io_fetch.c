/* test_io_fetch.c — ordered range streaming: order, offsets, tags and last flags over several
 * ranges and objects (local); bounded memory (the consumer holding every buffer is told so);
 * sticky errors naming the object; prompt shutdown mid-transfer; a 50 MB object through nginx in
 * 1 MiB chunks with 4 requests in flight, byte-exact (CRC32); the same through faultproxy dropping
 * every connection mid-body and failing every 5th with a 500 (still byte-exact, retries counted);
 * S3 through the RADOS Gateway (byte-exact, and an object overwritten mid-stream is an error, not
 * a mix); a closed port is a quick network error; a server that ignores Range (plain GETs: whole
 * objects, ranges, a slow consumer, dropped connections, exact, and the bytes the server sent).
 *
 * BATON_FETCH_BENCH_MB=N additionally measures fetch throughput for an N MB object from nginx and
 * from the gateway against `curl -o /dev/null` of the same object, and prints a table. */
#include "../../src/io/io_internal.h"
#include "baton/io.h"
#include "check.h"
#include "testsrv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

typedef struct expect {
    const char *name;
    uint64_t off, len, tag;
} expect;

/* Read everything from f, checking that pieces arrive in range order, contiguous, with the right
 * tags, last flags and bytes (data[k] is the content of ranges[k].name). Returns the status that
 * ended the stream. */
static int drain_check(baton_fetch *f, const expect *ex, size_t nex, const unsigned char *const *data,
                       baton_err *err)
{
    size_t k = 0;
    uint64_t pos = ex[0].off;
    int ok = 1, rc;
    baton_fetch_piece p;
    while ((rc = io_fetch_next(f, &p, err)) == BATON_OK) {
        if (k >= nex) {
            ok = 0;
            io_fetch_release(f, &p);
            break;
        }
        int good = p.tag == ex[k].tag && p.offset == pos && p.offset + p.len <= ex[k].off + ex[k].len &&
                   (p.len == 0 || memcmp(p.data, data[k] + p.offset, p.len) == 0);
        if (!good) {
            fprintf(stderr, "piece %zu: tag %" PRIu64 " off %" PRIu64 " len %zu (want tag %" PRIu64
                    " off %" PRIu64 ")\n", k, p.tag, p.offset, p.len, ex[k].tag, pos);
            ok = 0;
        }
        pos += p.len;
        int end_here = pos == ex[k].off + ex[k].len;
        if (p.last != end_here) {
            fprintf(stderr, "piece %zu: last=%d at %" PRIu64 "\n", k, p.last, pos);
            ok = 0;
        }
        io_fetch_release(f, &p);
        if (p.last) {
            k++;
            if (k < nex) pos = ex[k].off;
        }
    }
    CHECK_MSG(ok && (rc != BATON_END || k == nex), "k=%zu of %zu", k, nex);
    return rc;
}

/* Stream [0, end) of name and return its CRC32; *bytes gets the count. Unless benchmarking (st
 * NULL): each piece's CRC32C is that of its bytes, and the size it tells is the object's. */
static int fetch_crc(baton_store *s, const char *name, const baton_fetch_opts *o, uLong *crc,
                     uint64_t *bytes, baton_fetch_stats *st, baton_err *err)
{
    baton_fetch *f = io_fetch_new(s, o, err);
    if (!f) return err->code;
    int rc = io_fetch_add(f, name, 0, UINT64_MAX, 42, err);
    io_fetch_close_input(f);
    *crc = crc32(0L, Z_NULL, 0);
    *bytes = 0;
    baton_fetch_piece p;
    int contiguous = 1, piece_crc = 1;
    uint64_t told = UINT64_MAX;
    while (rc == BATON_OK && (rc = io_fetch_next(f, &p, err)) == BATON_OK) {
        if (p.offset != *bytes || p.tag != 42) contiguous = 0;
        if (st && p.crc32c != baton_crc32c(0, p.data, p.len)) piece_crc = 0;
        if (st && (told == UINT64_MAX || p.object_size != told)) told = told == UINT64_MAX ? p.object_size : 0;
        *crc = crc32(*crc, p.data, (uInt)p.len);
        *bytes += p.len;
        io_fetch_release(f, &p);
    }
    CHECK(contiguous);
    CHECK_MSG(piece_crc, "%s: a piece's crc32c is not that of its bytes", name);
    CHECK_MSG(!st || rc != BATON_END || told == *bytes, "%s: pieces told %" PRIu64 " bytes, the object has %" PRIu64,
              name, told, *bytes);
    if (st) io_fetch_get_stats(f, st);
    io_fetch_free(f);
    return rc == BATON_END ? BATON_OK : rc;
}

static unsigned char *make_file(const char *path, size_t n, unsigned long long seed)
{
    unsigned char *d = malloc(n ? n : 1);
    srv_fill(d, n, seed);
    CHECK(srv_write_file(path, d, n));
    return d;
}

static void test_local(const char *dir)
{
    baton_err err = {0};
    baton_store *s = NULL;
    CHECK(baton_store_open(dir, NULL, &s, &err) == BATON_OK);
    if (!s) return;
    char path[600];
    size_t na = 5 * 1024 * 1024 + 123, nb = 1024 * 1024;
    snprintf(path, sizeof path, "%s/a.bin", dir);
    unsigned char *a = make_file(path, na, 1);
    snprintf(path, sizeof path, "%s/b.bin", dir);
    unsigned char *b = make_file(path, nb, 2);
    snprintf(path, sizeof path, "%s/e.bin", dir);
    unsigned char *e = make_file(path, 0, 3);

    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    o.chunk_bytes = 256 * 1024;
    o.inflight = 2;
    o.max_buffered = 1024 * 1024;
    baton_fetch *f = io_fetch_new(s, &o, &err);
    CHECK(f != NULL);
    if (!f) return;
    expect ex[] = {{"a.bin", 0, na, 1}, {"b.bin", 1000, 4000, 2}, {"a.bin", 100, 0, 3},
                   {"e.bin", 0, 0, 4}, {"b.bin", 0, nb, 5}, {"a.bin", na - 7, 7, 6}};
    const unsigned char *data[] = {a, b, a, e, b, a};
    uint64_t lens[] = {UINT64_MAX, 4000, 0, UINT64_MAX, UINT64_MAX, 7};
    for (size_t i = 0; i < 6; i++)
        CHECK(io_fetch_add(f, ex[i].name, ex[i].off, lens[i], ex[i].tag, &err) == BATON_OK);
    io_fetch_close_input(f);
    CHECK(io_fetch_add(f, "a.bin", 0, 1, 9, &err) == BATON_ERR_ARG);
    int rc = drain_check(f, ex, 6, data, &err);
    CHECK_MSG(rc == BATON_END, "%s", err.msg);
    baton_fetch_piece p;
    CHECK(io_fetch_next(f, &p, &err) == BATON_END);
    baton_fetch_stats st;
    io_fetch_get_stats(f, &st);
    CHECK_EQ_U(st.bytes, na + 4000 + nb + 7);
    CHECK_EQ_U(st.retries, 0);
    io_fetch_free(f);

    /* the consumer holding every buffer is told, not deadlocked */
    o.max_buffered = 2 * o.chunk_bytes;
    f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, "a.bin", 0, UINT64_MAX, 1, &err) == BATON_OK);
    baton_fetch_piece p1, p2, p3;
    CHECK(io_fetch_next(f, &p1, &err) == BATON_OK);
    CHECK(io_fetch_next(f, &p2, &err) == BATON_OK);
    CHECK(io_fetch_next(f, &p3, &err) == BATON_ERR_ARG);
    CHECK(strstr(err.msg, "release") != NULL);
    CHECK(p2.offset == o.chunk_bytes && memcmp(p2.data, a + p2.offset, p2.len) == 0);
    io_fetch_release(f, &p1);
    io_fetch_release(f, &p1);   /* a second release is harmless */
    CHECK(io_fetch_next(f, &p3, &err) == BATON_OK);
    CHECK(p3.offset == 2 * o.chunk_bytes && memcmp(p3.data, a + p3.offset, p3.len) == 0);
    /* free while holding pieces and with the input still open */
    double t0 = baton_now();
    io_fetch_free(f);
    CHECK(baton_now() - t0 < 1.0);

    /* errors are sticky and name the object */
    o.max_buffered = 1024 * 1024;
    f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, "b.bin", 0, 10, 1, &err) == BATON_OK);
    CHECK(io_fetch_add(f, "missing.bin", 0, 10, 2, &err) == BATON_OK);
    CHECK(io_fetch_add(f, "../x", 0, 10, 2, &err) == BATON_ERR_ARG);
    io_fetch_close_input(f);
    rc = io_fetch_next(f, &p, &err);
    if (rc == BATON_OK) {
        io_fetch_release(f, &p);
        rc = io_fetch_next(f, &p, &err);
    }
    CHECK(rc == BATON_ERR_NOTFOUND && strstr(err.msg, "missing.bin") != NULL);
    CHECK(io_fetch_next(f, &p, &err) == BATON_ERR_NOTFOUND);
    io_fetch_free(f);

    f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, "b.bin", nb - 10, 20, 1, &err) == BATON_OK);
    io_fetch_close_input(f);
    CHECK(io_fetch_next(f, &p, &err) == BATON_ERR_TRUNCATED);
    CHECK(strstr(err.msg, "b.bin") != NULL);
    io_fetch_free(f);

    f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, "b.bin", nb + 1, UINT64_MAX, 1, &err) == BATON_OK);
    io_fetch_close_input(f);
    CHECK(io_fetch_next(f, &p, &err) == BATON_ERR_TRUNCATED);
    io_fetch_free(f);

    /* nothing added at all */
    f = io_fetch_new(s, NULL, &err);
    io_fetch_close_input(f);
    CHECK(io_fetch_next(f, &p, &err) == BATON_END);
    io_fetch_free(f);

    free(a);
    free(b);
    free(e);
    baton_store_close(s);
}

/* Several explicit ranges of a remote object, byte-exact, plus a to-the-end range. */
static void check_ranges(baton_store *s, const char *name, const unsigned char *d, size_t n)
{
    baton_err err = {0};
    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    o.chunk_bytes = 300000;
    o.inflight = 3;
    o.max_buffered = 2 * 1024 * 1024;
    baton_fetch *f = io_fetch_new(s, &o, &err);
    if (!f) {
        CHECK(0);
        return;
    }
    expect ex[] = {{name, 12345, 1000000, 1}, {name, 0, 1, 2}, {name, n - 1000, 1000, 3},
                   {name, 777, 0, 4}, {name, n - 4000000, 4000000, 5}};
    uint64_t lens[] = {1000000, 1, UINT64_MAX, 0, UINT64_MAX};
    const unsigned char *data[] = {d, d, d, d, d};
    for (size_t i = 0; i < 5; i++)
        CHECK(io_fetch_add(f, name, ex[i].off, lens[i], ex[i].tag, &err) == BATON_OK);
    io_fetch_close_input(f);
    int rc = drain_check(f, ex, 5, data, &err);
    CHECK_MSG(rc == BATON_END, "%s", err.msg);
    io_fetch_free(f);

    /* a range past the end is an error naming the object */
    f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, name, n - 10, 20, 1, &err) == BATON_OK);
    io_fetch_close_input(f);
    baton_fetch_piece p;
    rc = io_fetch_next(f, &p, &err);
    CHECK_MSG(rc == BATON_ERR_TRUNCATED && strstr(err.msg, name), "rc %d: %s", rc, err.msg);
    io_fetch_free(f);
    /* a missing object */
    f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, "nope.bin", 0, UINT64_MAX, 1, &err) == BATON_OK);
    rc = io_fetch_next(f, &p, &err);
    CHECK_MSG(rc == BATON_ERR_NOTFOUND && strstr(err.msg, "nope.bin"), "rc %d: %s", rc, err.msg);
    io_fetch_free(f);
}

static void check_big(baton_store *s, const char *name, uLong want, uint64_t n, const char *what,
                      int expect_retries)
{
    baton_err err = {0};
    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    o.chunk_bytes = 1 << 20;
    o.inflight = 4;
    uLong crc;
    uint64_t bytes;
    baton_fetch_stats st = {0};
    double t0 = baton_now();
    int rc = fetch_crc(s, name, &o, &crc, &bytes, &st, &err);
    double dt = baton_now() - t0;
    CHECK_MSG(rc == BATON_OK, "%s: %s", what, err.msg);
    CHECK_MSG(crc == want && bytes == n, "%s: %" PRIu64 " bytes, crc %08lx want %08lx", what, bytes, crc,
              want);
    if (expect_retries) CHECK_MSG(st.retries > 0, "%s: no retries", what);
    else CHECK_EQ_U(st.retries, 0);
    printf("%-34s %6.1f MB/s  (%" PRIu64 " MB, %" PRIu64 " requests, %" PRIu64 " retries)\n", what,
           (double)bytes / 1e6 / dt, bytes >> 20, st.requests, st.retries);
}

/* A consumer slower than the transfer, holding a few pieces at a time: the plain GET pauses while
 * every slot is taken and goes on when one is free; the bytes still arrive in order, exact. */
static void check_slow_consumer(baton_store *s, const char *name, const unsigned char *d, size_t n)
{
    baton_err err = {0};
    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    o.chunk_bytes = 64 * 1024;
    o.max_buffered = 256 * 1024;
    baton_fetch *f = io_fetch_new(s, &o, &err);
    if (!f) {
        CHECK(0);
        return;
    }
    uint64_t want = n < 6000000 ? n : 6000000;
    CHECK(io_fetch_add(f, name, 1000, want - 1000, 7, &err) == BATON_OK);
    io_fetch_close_input(f);
    baton_fetch_piece held[3];
    int nh = 0, rc, ok = 1;
    uint64_t pos = 1000;
    while ((rc = io_fetch_next(f, &held[nh], &err)) == BATON_OK) {
        baton_fetch_piece *p = &held[nh++];
        if (p->offset != pos || memcmp(p->data, d + p->offset, p->len) != 0) ok = 0;
        pos += p->len;
        if (nh == 3) {   /* hold three, then let them go slowly */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            for (int i = 0; i < nh; i++) io_fetch_release(f, &held[i]);
            nh = 0;
        }
    }
    for (int i = 0; i < nh; i++) io_fetch_release(f, &held[i]);
    CHECK_MSG(rc == BATON_END && ok && pos == want, "slow consumer: rc %d, ok %d, %" PRIu64 " of %" PRIu64
              " bytes: %s", rc, ok, pos, want, err.msg);
    io_fetch_free(f);
}

/* A server that ignores Range (faultproxy --no-ranges before nginx: every answer a 200 with the
 * whole object, as python3 -m http.server gives): the fetcher switches to one plain GET per object
 * and delivers the same pieces — whole objects, explicit ranges, a slow consumer, dropped
 * connections (the object read again from byte 0) — and what the server sent stays near the
 * object's size. */
static void test_plain(int port, const unsigned char *big, size_t nbig, uLong bigcrc)
{
    const char *opts[] = {"--no-ranges", NULL};
    int pport;
    pid_t pp = srv_proxy_start(port, &pport, opts);
    CHECK(pp > 0);
    if (pp <= 0) return;
    char uri[200];
    baton_err err = {0};
    baton_store *s = NULL;
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", pport);
    CHECK(baton_store_open(uri, NULL, &s, &err) == BATON_OK);
    if (s) {
        baton_fetch_opts o;
        baton_fetch_opts_default(&o);
        o.chunk_bytes = 1 << 20;
        uLong crc;
        uint64_t bytes;
        baton_fetch_stats st = {0};
        int rc = fetch_crc(s, "big.bin", &o, &crc, &bytes, &st, &err);
        CHECK_MSG(rc == BATON_OK && crc == bigcrc && bytes == nbig, "plain GET: rc %d %s", rc, err.msg);
        /* the first ranged answers, stopped at their first bytes, and the GET of the whole */
        CHECK_MSG(st.bytes >= nbig && st.bytes < nbig + 8 * 1024 * 1024 && st.retries == 0,
                  "plain GET: the server sent %" PRIu64 " bytes for %zu, %" PRIu64 " retries", st.bytes, nbig,
                  st.retries);
        printf("%-34s %" PRIu64 " requests, %.3fx the object\n", "nginx without ranges, plain GET", st.requests,
               (double)st.bytes / (double)nbig);
        check_ranges(s, "big.bin", big, nbig);
        check_slow_consumer(s, "big.bin", big, nbig);
        baton_store_close(s);
    }
    srv_proxy_stop(pp);

    /* every second connection dropped 20 MB into its answer: read again from byte 0, exact */
    const char *dopts[] = {"--no-ranges", "--drop-after-bytes", "20000000", "--drop-every", "2", NULL};
    pp = srv_proxy_start(port, &pport, dopts);
    CHECK(pp > 0);
    if (pp <= 0) return;
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", pport);
    CHECK(baton_store_open(uri, NULL, &s, &err) == BATON_OK);
    if (s) {
        check_big(s, "big.bin", bigcrc, nbig, "plain GET via faultproxy (drops)", 1);
        baton_store_close(s);
    }
    srv_proxy_stop(pp);

    /* every connection dropped 1 MB in: no attempt gets further, an error after the retries */
    const char *aopts[] = {"--no-ranges", "--drop-after-bytes", "1000000", NULL};
    pp = srv_proxy_start(port, &pport, aopts);
    CHECK(pp > 0);
    if (pp <= 0) return;
    baton_store_opts so;
    baton_store_opts_default(&so);
    so.retries = 2;
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", pport);
    CHECK(baton_store_open(uri, &so, &s, &err) == BATON_OK);
    if (s) {
        uLong crc;
        uint64_t bytes;
        baton_fetch_stats st = {0};
        int rc = fetch_crc(s, "big.bin", NULL, &crc, &bytes, &st, &err);
        CHECK_MSG(rc == BATON_ERR_NET && strstr(err.msg, "big.bin"), "rc %d: %s", rc, err.msg);
        baton_store_close(s);
    }
    srv_proxy_stop(pp);
}

/* io_fetch_free in the middle of transfers returns promptly. */
static void check_prompt_free(baton_store *s, const char *name)
{
    baton_err err = {0};
    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    o.chunk_bytes = 1 << 20;
    baton_fetch *f = io_fetch_new(s, &o, &err);
    if (!f) return;
    CHECK(io_fetch_add(f, name, 0, UINT64_MAX, 1, &err) == BATON_OK);
    baton_fetch_piece p;
    CHECK(io_fetch_next(f, &p, &err) == BATON_OK);
    double t0 = baton_now();
    io_fetch_free(f);
    double dt = baton_now() - t0;
    CHECK_MSG(dt < 0.5, "free took %.3f s", dt);
}

static void test_http(const char *www, int port, const unsigned char *big, size_t nbig, uLong bigcrc)
{
    char uri[200];
    baton_err err = {0};
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", port);
    baton_store *s = NULL;
    CHECK(baton_store_open(uri, NULL, &s, &err) == BATON_OK);
    if (!s) return;
    check_ranges(s, "big.bin", big, nbig);
    check_big(s, "big.bin", bigcrc, nbig, "nginx, 1 MiB x 4", 0);
    check_prompt_free(s, "big.bin");
    baton_store_close(s);

    /* through faultproxy: every connection dropped after 300 kB, every 5th answered with a 500 */
    const char *opts[] = {"--drop-after-bytes", "300000", "--fail-every", "5", NULL};
    int pport;
    pid_t pp = srv_proxy_start(port, &pport, opts);
    CHECK(pp > 0);
    if (pp > 0) {
        snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", pport);
        CHECK(baton_store_open(uri, NULL, &s, &err) == BATON_OK);
        if (s) {
            check_big(s, "big.bin", bigcrc, nbig, "nginx via faultproxy (drop+500)", 1);
            /* blocking ranged reads survive the same faults */
            baton_buf b = {0};
            CHECK_MSG(baton_store_get_range(s, "big.bin", 1000, 2000000, &b, &err) == BATON_OK, "%s",
                      err.msg);
            CHECK(b.len == 2000000 && memcmp(b.data, big + 1000, 2000000) == 0);
            b.len = 0;
            CHECK_MSG(baton_store_get(s, "big.bin", nbig, &b, &err) == BATON_OK, "%s", err.msg);
            CHECK(b.len == nbig && memcmp(b.data, big, nbig) == 0);
            baton_buf_free(&b);
            baton_store_close(s);
        }
        srv_proxy_stop(pp);
    }
    /* a server that always fails: an error after the retries, naming object and offset */
    const char *opts500[] = {"--fail-every", "1", NULL};
    pp = srv_proxy_start(port, &pport, opts500);
    CHECK(pp > 0);
    if (pp > 0) {
        baton_store_opts so;
        baton_store_opts_default(&so);
        so.retries = 2;
        snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", pport);
        CHECK(baton_store_open(uri, &so, &s, &err) == BATON_OK);
        if (s) {
            baton_fetch *f = io_fetch_new(s, NULL, &err);
            CHECK(io_fetch_add(f, "big.bin", 5000, 10, 1, &err) == BATON_OK);
            baton_fetch_piece p;
            int rc = io_fetch_next(f, &p, &err);
            CHECK_MSG(rc == BATON_ERR_NET && strstr(err.msg, "big.bin at offset 5000") &&
                          strstr(err.msg, "500"), "rc %d: %s", rc, err.msg);
            baton_fetch_stats st;
            io_fetch_get_stats(f, &st);
            CHECK_EQ_U(st.retries, 2);
            io_fetch_free(f);
            baton_store_close(s);
        }
        srv_proxy_stop(pp);
    }
    (void)www;
}

static void test_s3(const char *bigpath, const unsigned char *big, size_t nbig, uLong bigcrc)
{
    baton_err err = {0};
    baton_store *s = NULL;
    CHECK(baton_store_open("s3://fetch-test/pre/fix/", NULL, &s, &err) == BATON_OK);
    if (!s) return;
    CHECK_MSG(baton_store_create_bucket(s, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_store_put_file(s, "big.bin", bigpath, &err) == BATON_OK, "%s", err.msg);
    check_ranges(s, "big.bin", big, nbig);
    check_big(s, "big.bin", bigcrc, nbig, "radosgw, 1 MiB x 4", 0);

    /* an object overwritten while it is streamed: an error, never a mix */
    size_t n = 4 * 1024 * 1024;
    CHECK(baton_store_put(s, "changing.bin", big, n, &err) == BATON_OK);
    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    o.chunk_bytes = 256 * 1024;
    o.inflight = 1;
    o.max_buffered = 2 * o.chunk_bytes;
    baton_fetch *f = io_fetch_new(s, &o, &err);
    CHECK(io_fetch_add(f, "changing.bin", 0, n, 1, &err) == BATON_OK);
    baton_fetch_piece p;
    CHECK(io_fetch_next(f, &p, &err) == BATON_OK);
    CHECK(baton_store_put(s, "changing.bin", big + 1, n, &err) == BATON_OK);
    io_fetch_release(f, &p);
    int rc, pieces = 1, mixed = 0;
    while ((rc = io_fetch_next(f, &p, &err)) == BATON_OK) {
        if (memcmp(p.data, big + p.offset, p.len) != 0) mixed = 1;
        pieces++;
        io_fetch_release(f, &p);
    }
    CHECK_MSG(rc == BATON_ERR_CORRUPT && strstr(err.msg, "changed") && strstr(err.msg, "changing.bin"),
              "rc %d after %d pieces: %s", rc, pieces, err.msg);
    CHECK(!mixed);
    io_fetch_free(f);
    baton_store_close(s);

    /* SigV4 requests retried through faultproxy (drops and 500s) */
    char ep[64];
    const char *opts[] = {"--drop-after-bytes", "400000", "--drop-every", "2", "--fail-every", "7", NULL};
    int pport;
    const char *real = getenv("AWS_ENDPOINT_URL");
    int rport = real ? atoi(strrchr(real, ':') + 1) : 0;
    pid_t pp = srv_proxy_start(rport, &pport, opts);
    CHECK(pp > 0);
    if (pp > 0) {
        baton_store_opts so;
        baton_store_opts_default(&so);
        snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
        so.s3_endpoint = ep;
        CHECK(baton_store_open("s3://fetch-test/pre/fix", &so, &s, &err) == BATON_OK);
        if (s) {
            check_big(s, "big.bin", bigcrc, nbig, "radosgw via faultproxy", 1);
            baton_store_close(s);
        }
        srv_proxy_stop(pp);
    }
}

static void test_down(void)
{
    int port = srv_free_port();
    char uri[100], hp[40];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/x/", port);
    snprintf(hp, sizeof hp, "127.0.0.1:%d", port);
    baton_store_opts so;
    baton_store_opts_default(&so);
    so.retries = 1;
    baton_store *s = NULL;
    baton_err err = {0};
    CHECK(baton_store_open(uri, &so, &s, &err) == BATON_OK);
    if (!s) return;
    baton_fetch *f = io_fetch_new(s, NULL, &err);
    double t0 = baton_now();
    CHECK(io_fetch_add(f, "a.rec", 0, UINT64_MAX, 1, &err) == BATON_OK);
    baton_fetch_piece p;
    int rc = io_fetch_next(f, &p, &err);
    double dt = baton_now() - t0;
    CHECK_MSG(rc == BATON_ERR_NET && strstr(err.msg, hp) && strstr(err.msg, "a.rec"), "rc %d: %s", rc,
              err.msg);
    CHECK_MSG(dt < 2.0, "took %.2f s", dt);
    io_fetch_free(f);
    baton_store_close(s);
}

/* ---------------------------------------------------------------- optional benchmark */

static double curl_time(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -sS -o /dev/null -w '%%{time_total}' %s", args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    double t = -1;
    if (fscanf(p, "%lf", &t) != 1) t = -1;
    pclose(p);
    return t;
}

static void bench(const char *www, int nport, int have_rgw, size_t mb)
{
    size_t n = mb * 1000 * 1000;
    char path[600], uri[200], args[600];
    snprintf(path, sizeof path, "%s/data/bench.bin", www);
    unsigned char *d = make_file(path, n, 99);
    free(d);
    baton_err err = {0};
    baton_fetch_opts o;
    baton_fetch_opts_default(&o);
    printf("\nfetch throughput, %zu MB object on loopback (best of 3)\n", mb);
    printf("%-12s %-28s %10s\n", "server", "client", "MB/s");
    size_t chunks[] = {1 << 20, 4 << 20};
    int inflights[] = {4, 8};
    for (int srv = 0; srv < 2; srv++) {
        baton_store *s = NULL;
        if (srv == 0) {
            snprintf(uri, sizeof uri, "http://127.0.0.1:%d/data/", nport);
            if (baton_store_open(uri, NULL, &s, &err) != BATON_OK) continue;
        } else {
            if (!have_rgw) continue;
            if (baton_store_open("s3://bench-bucket/", NULL, &s, &err) != BATON_OK) continue;
            baton_store_create_bucket(s, &err);
            if (baton_store_put_file(s, "bench.bin", path, &err) != BATON_OK) {
                printf("put failed: %s\n", err.msg);
                baton_store_close(s);
                continue;
            }
        }
        const char *sname = srv == 0 ? "nginx" : "radosgw";
        for (int ci = 0; ci < 2; ci++) {
            for (int ii = 0; ii < 2; ii++) {
                o.chunk_bytes = chunks[ci];
                o.inflight = inflights[ii];
                double best = 1e9;
                for (int rep = 0; rep < 3; rep++) {
                    uLong crc;
                    uint64_t bytes;
                    double t0 = baton_now();
                    if (fetch_crc(s, "bench.bin", &o, &crc, &bytes, NULL, &err) != BATON_OK) break;
                    double dt = baton_now() - t0;
                    if (dt < best) best = dt;
                }
                char label[64];
                snprintf(label, sizeof label, "fetch %zu MiB x %d (+crc32)", chunks[ci] >> 20, inflights[ii]);
                printf("%-12s %-28s %10.0f\n", sname, label, (double)n / 1e6 / best);
            }
        }
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            if (srv == 0) {
                snprintf(args, sizeof args, "http://127.0.0.1:%d/data/bench.bin", nport);
            } else {
                snprintf(args, sizeof args,
                         "--aws-sigv4 aws:amz:us-east-1:s3 --user \"$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY\" "
                         "-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \"$AWS_ENDPOINT_URL/bench-bucket/bench.bin\"");
            }
            double t = curl_time(args);
            if (t > 0 && t < best) best = t;
        }
        printf("%-12s %-28s %10.0f\n", sname, "curl -o /dev/null", (double)n / 1e6 / best);
        baton_store_close(s);
    }
}

int main(void)
{
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_S3");
    if (!srv_init("iofetch")) {
        CHECK(0);
        CHECK_DONE();
    }
    char dir[400], www[400], sub[500], bigpath[600];
    snprintf(dir, sizeof dir, "%s/local", srv_dir);
    snprintf(www, sizeof www, "%s/www", srv_dir);
    snprintf(sub, sizeof sub, "%s/data", www);
    CHECK(baton_mkdir_p(dir, NULL) == BATON_OK);
    CHECK(baton_mkdir_p(sub, NULL) == BATON_OK);

    test_local(dir);
    test_down();

    size_t nbig = 50 * 1000 * 1000 + 12345;
    snprintf(bigpath, sizeof bigpath, "%s/big.bin", sub);
    unsigned char *big = make_file(bigpath, nbig, 77);
    uLong bigcrc = crc32(crc32(0L, Z_NULL, 0), big, (uInt)nbig);

    int nport = 0, rport = 0, failed, have_nginx, have_rgw = 0;
    have_nginx = srv_nginx_start(www, &nport, &failed);
    CHECK(!failed);
    if (have_nginx) test_http(www, nport, big, nbig, bigcrc);
    if (have_nginx) test_plain(nport, big, nbig, bigcrc);

    const char *bmb = getenv("BATON_FETCH_BENCH_MB");
    size_t mb = bmb ? (size_t)atoi(bmb) : 0;
    have_rgw = srv_rgw_start(384 + (int)mb * 2, &rport, &failed);
    CHECK(!failed);
    if (have_rgw) test_s3(bigpath, big, nbig, bigcrc);
    free(big);
    if (mb > 0 && have_nginx) bench(www, nport, have_rgw, mb);
    srv_done();
    CHECK_DONE();
}
