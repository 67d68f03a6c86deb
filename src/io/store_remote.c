/* store_remote.c — the blocking store calls for HTTP and S3 stores: GET (whole object, bounded),
 * ranged GET, HEAD for the size, PUT from memory or streamed from a file, and bucket creation;
 * the method tables of both kinds (S3's list and delete are in store_list.c).
 *
 * Owns: what each call asks for and accepts; the retry loop and the handle pool they share are
 * io_call_run's (remote.c).
 *
 * Contract:
 *  - Every answer is validated before its body is used (io_resp_check): a 206 must start at the
 *    first byte asked for and not run past the last; a 200 to a ranged request is accepted only
 *    for offset 0 when its length is exactly the length asked for.
 *  - A dropped connection or short body re-requests only the bytes still missing, with If-Match
 *    on the ETag of the first answer, so a changed object is BATON_ERR_CORRUPT, never a mix.
 *  - Retryable failures (connection trouble, timeouts, 429, 5xx) are retried opts.retries times
 *    with a backoff of 50 ms × 2^k; an attempt that delivered bytes does not use up a retry.
 *  - PUTs restart from byte 0 on a retry. Secrets never appear in messages. */
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_2xx(long st)
{
    return st >= 200 && st < 300;
}

/* ---------------------------------------------------------------- reads */

typedef struct reader {
    io_call call;
    const baton_store *s;
    const char *name;
    int whole;               /* the first attempt asks without a Range header */
    uint64_t off, want;      /* the read: [off, off+want); want UINT64_MAX until the size is known */
    uint64_t done;           /* bytes received by all attempts */
    char etag[sizeof ((io_resp *)0)->etag];  /* of the first answer, or "" */
    baton_buf *out;
    size_t max;              /* bound on out->len growth for whole-object GETs */
    size_t base;             /* out->len before the call */
    /* this attempt */
    int ranged;
    uint64_t start, len;     /* asked for; len UINT64_MAX = to the end */
    uint64_t got;            /* bytes appended */
    uint64_t total;          /* object size when the answer told it */
    int checked, failed;
    baton_err ferr;
} reader;

static size_t reader_write(char *p, size_t size, size_t nitems, void *ud)
{
    reader *r = ud;
    io_resp *resp = &r->call.resp;
    size_t n = size * nitems;
    if (!is_2xx(resp->status)) {
        io_resp_keep_error(resp, p, n);
        return n;
    }
    char obj[1400];
    if (!r->checked) {
        r->checked = 1;
        if (io_resp_check(r->s, r->name, resp, r->ranged, r->start, r->len, &r->total, &r->ferr) != BATON_OK)
            goto fail;
        if (r->etag[0] && resp->etag[0] && strcmp(r->etag, resp->etag) != 0) {
            io_object_uri(r->s, r->name, obj, sizeof obj);
            baton_err_set(&r->ferr, BATON_ERR_CORRUPT,
                          "%s at offset %" PRIu64 ": the object changed on the server while it was "
                          "being read (ETag %s, then %s)", obj, r->start, r->etag, resp->etag);
            goto fail;
        }
        if (r->len == UINT64_MAX && r->total != UINT64_MAX && r->total >= r->start &&
            r->total - r->start > r->max - (r->out->len - r->base)) {
            io_object_uri(r->s, r->name, obj, sizeof obj);
            baton_err_set(&r->ferr, BATON_ERR_FORMAT, "%s: object is %" PRIu64
                          " bytes, more than the %zu accepted", obj, r->total, r->max);
            goto fail;
        }
        uint64_t want = r->len != UINT64_MAX ? r->len
                      : r->total != UINT64_MAX ? r->total - r->start : 0;
        if (want > 0 && want <= r->max && baton_buf_reserve(r->out, (size_t)want) != BATON_OK) {
            baton_err_set(&r->ferr, BATON_ERR_NOMEM, "out of memory for %" PRIu64 " bytes", want);
            goto fail;
        }
    }
    if (r->len != UINT64_MAX && r->got + n > r->len) {
        io_object_uri(r->s, r->name, obj, sizeof obj);
        baton_err_set(&r->ferr, BATON_ERR_NET, "%s at offset %" PRIu64
                      ": server sent more bytes than asked for", obj, r->start);
        goto fail;
    }
    if (r->out->len - r->base + n > r->max) {
        io_object_uri(r->s, r->name, obj, sizeof obj);
        baton_err_set(&r->ferr, BATON_ERR_FORMAT, "%s: more than the %zu bytes accepted", obj, r->max);
        goto fail;
    }
    if (baton_buf_append(r->out, p, n) != BATON_OK) {
        baton_err_set(&r->ferr, BATON_ERR_NOMEM, "out of memory");
        goto fail;
    }
    r->got += n;
    return n;
fail:
    r->failed = 1;
    return 0;
}

/* Each attempt asks for the bytes still missing, with If-Match on the first answer's ETag. */
static void read_begin(io_call *c)
{
    reader *r = c->ctx;
    r->ranged = !(r->whole && r->done == 0);
    r->start = r->off + r->done;
    r->len = r->want == UINT64_MAX ? UINT64_MAX : r->want - r->done;
    r->got = 0;
    r->total = UINT64_MAX;
    r->checked = r->failed = 0;
    c->range = r->ranged;
    c->start = r->start;
    c->end = r->len == UINT64_MAX ? UINT64_MAX : r->start + r->len - 1;
    c->if_match = r->etag[0] ? r->etag : NULL;
}

static void read_prepare(io_call *c, CURL *h)
{
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reader_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c->ctx);
}

static int read_check(baton_store *s, io_call *c, CURLcode cc, int *retry, baton_err *err)
{
    reader *r = c->ctx;
    r->done += r->got;
    c->progress = r->got > 0;
    *retry = 0;
    if (r->failed) {
        if (err) *err = r->ferr;
        return r->ferr.code;
    }
    if (!r->etag[0] && is_2xx(c->resp.status)) memcpy(r->etag, c->resp.etag, sizeof r->etag);
    /* the first answer told the size: later attempts ask for exactly the rest */
    if (r->checked && r->want == UINT64_MAX && r->total != UINT64_MAX && r->total >= r->off)
        r->want = r->total - r->off;
    if (cc != CURLE_OK || !is_2xx(c->resp.status)) {
        c->err_off = r->whole && r->done == 0 ? UINT64_MAX : r->off + r->done;
        return io_call_check(s, c, cc, retry, err);
    }
    if (!r->checked) {  /* empty body: validate the headers all the same */
        uint64_t t;
        int rc = io_resp_check(s, r->name, &c->resp, r->ranged, r->start, r->len, &t, err);
        if (rc != BATON_OK) return rc;
        r->total = t;
    }
    if (r->want == UINT64_MAX && r->total != UINT64_MAX && r->total >= r->off) r->want = r->total - r->off;
    if (r->want == UINT64_MAX || r->done == r->want) return BATON_OK;  /* complete */
    char obj[1400];
    io_object_uri(s, r->name, obj, sizeof obj);
    *retry = 1;
    return baton_err_set(err, BATON_ERR_NET, "%s at offset %" PRIu64 ": short body (%" PRIu64 " of %" PRIu64 " bytes)",
                         obj, r->off + r->done, r->done, r->want);
}

/* Read [off, off+len) (len UINT64_MAX: to the end; whole: first attempt without Range). */
static int remote_read(baton_store *s, const char *name, uint64_t off, uint64_t len, size_t max,
                       int whole, baton_buf *out, baton_err *err)
{
    char *url = io_object_url(s, name);
    reader *r = url ? calloc(1, sizeof *r) : NULL;
    if (!r) {
        free(url);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    }
    *r = (reader){.s = s, .name = name, .whole = whole, .off = off, .want = len, .out = out, .max = max,
                  .base = out->len};
    r->call = (io_call){.url = url, .name = name, .begin = read_begin, .prepare = read_prepare,
                        .check = read_check, .ctx = r};
    int rc = io_call_run(s, &r->call, err);
    if (rc != BATON_OK) out->len = r->base;
    free(r);
    free(url);
    return rc;
}

static int remote_get(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err)
{
    return remote_read(s, name, 0, UINT64_MAX, max, 1, out, err);
}

static int remote_get_range(baton_store *s, const char *name, uint64_t off, uint64_t len,
                            baton_buf *out, baton_err *err)
{
    return remote_read(s, name, off, len, (size_t)len, 0, out, err);
}

static size_t discard_write(char *p, size_t size, size_t nitems, void *ud)
{
    io_resp *r = ud;
    size_t n = size * nitems;
    if (!is_2xx(r->status)) io_resp_keep_error(r, p, n);
    return n;
}

static void head_prepare(io_call *c, CURL *h)
{
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->resp);
}

static int head_check(baton_store *s, io_call *c, CURLcode cc, int *retry, baton_err *err)
{
    *retry = 0;
    if (cc != CURLE_OK || c->resp.status != 200)
        return io_request_error(s, c->name, UINT64_MAX, cc, c->errbuf, &c->resp, retry, err);
    if (c->resp.have_len) {
        *(uint64_t *)c->ctx = c->resp.content_length;
        return BATON_OK;
    }
    char obj[1400];
    io_object_uri(s, c->name, obj, sizeof obj);
    return baton_err_set(err, BATON_ERR_NET, "%s: HEAD answer without Content-Length", obj);
}

static int remote_size(baton_store *s, const char *name, uint64_t *size, baton_err *err)
{
    char *url = io_object_url(s, name);
    io_call *c = url ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        free(url);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    }
    *c = (io_call){.url = url, .name = name, .err_off = UINT64_MAX, .prepare = head_prepare, .check = head_check,
                   .ctx = size};
    int rc = io_call_run(s, c, err);
    free(c);
    free(url);
    return rc;
}

/* ---------------------------------------------------------------- uploads */

typedef struct upload {
    int bucket;              /* the PUT creates the bucket */
    const uint8_t *mem;      /* from memory, or */
    int fd;                  /* from a file (pread through baton_sys) */
    const char *path;
    uint64_t size, pos;
    int failed;
    baton_err ferr;
} upload;

static size_t upload_read(char *buf, size_t size, size_t nitems, void *ud)
{
    upload *u = ud;
    size_t n = size * nitems;
    if (u->pos >= u->size) return 0;
    if (n > u->size - u->pos) n = (size_t)(u->size - u->pos);
    if (u->mem) {
        memcpy(buf, u->mem + u->pos, n);
        u->pos += n;
        return n;
    }
    for (;;) {
        ssize_t r = baton_sys.pread(u->fd, buf, n, (off_t)u->pos);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0)
                baton_err_set(&u->ferr, BATON_ERR_TRUNCATED, "%s: file shrank to %" PRIu64
                              " bytes while being uploaded", u->path, u->pos);
            else
                baton_err_set(&u->ferr, BATON_ERR_IO, "%s: read failed at offset %" PRIu64 ": %s",
                              u->path, u->pos, strerror(errno));
            u->failed = 1;
            return CURL_READFUNC_ABORT;
        }
        u->pos += (uint64_t)r;
        return (size_t)r;
    }
}

/* libcurl rewinds the body when it must send the request again on a fresh connection. */
static int upload_seek(void *ud, curl_off_t offset, int origin)
{
    upload *u = ud;
    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > u->size) return CURL_SEEKFUNC_FAIL;
    u->pos = (uint64_t)offset;
    return CURL_SEEKFUNC_OK;
}

static void put_begin(io_call *c)
{
    ((upload *)c->ctx)->pos = 0;   /* a retry sends the body again from its start */
}

static void put_prepare(io_call *c, CURL *h)
{
    upload *u = c->ctx;
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, upload_read);
    curl_easy_setopt(h, CURLOPT_READDATA, u);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, upload_seek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, u);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)u->size);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->resp);
}

static int put_check(baton_store *s, io_call *c, CURLcode cc, int *retry, baton_err *err)
{
    upload *u = c->ctx;
    *retry = 0;
    if (u->failed) {
        if (err) *err = u->ferr;
        return u->ferr.code;
    }
    if (u->bucket && cc == CURLE_OK && c->resp.status == 409 &&
        strstr(c->resp.errbody, "<Code>BucketAlreadyOwnedByYou</Code>") != NULL)
        return BATON_OK;
    int rc = io_call_check(s, c, cc, retry, err);
    if (rc != BATON_OK && u->bucket && c->resp.status == 409 && err)
        baton_err_prefix(err, "cannot create bucket \"%s\"", s->bucket);
    return rc;
}

/* PUT url with the body from u; name is for messages. */
static int remote_put(baton_store *s, const char *url, const char *name, upload *u, baton_err *err)
{
    io_call *c = calloc(1, sizeof *c);
    if (!c) return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    *c = (io_call){.url = url, .name = name, .err_off = UINT64_MAX, .begin = put_begin, .prepare = put_prepare,
                   .check = put_check, .ctx = u};
    int rc = io_call_run(s, c, err);
    free(c);
    return rc;
}

static int s3_put_any(baton_store *s, const char *name, const void *p, size_t n, const char *path,
                      baton_err *err)
{
    upload u = {.mem = p, .fd = -1, .path = path, .size = n};
    if (path) {
        u.mem = NULL;
        u.fd = baton_open_regular(path, err);
        if (u.fd == -2) return err->code;
        if (u.fd < 0)
            return baton_err_set(err, errno == ENOENT ? BATON_ERR_NOTFOUND : BATON_ERR_IO,
                                 "%s: cannot open: %s", path, strerror(errno));
        struct stat st;
        if (fstat(u.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            baton_sys.close(u.fd);
            return baton_err_set(err, BATON_ERR_IO, "%s: not a readable regular file", path);
        }
        u.size = (uint64_t)st.st_size;
    } else if (!p && n > 0) {
        return baton_err_set(err, BATON_ERR_ARG, "%s%s: no data", s->uri, name);
    } else if (!p) {
        u.mem = (const uint8_t *)"";
    }
    char *url = io_object_url(s, name);
    int rc = url ? remote_put(s, url, name, &u, err)
                 : baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    free(url);
    if (u.fd >= 0) baton_sys.close(u.fd);
    return rc;
}

static int s3_create_bucket(baton_store *s, baton_err *err)
{
    char body[256] = "";
    if (s->aws_default && strcmp(s->region, "us-east-1") != 0)
        snprintf(body, sizeof body,
                 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                 "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
                 s->region);
    upload u = {.bucket = 1, .mem = (const uint8_t *)body, .fd = -1, .size = strlen(body)};
    return remote_put(s, s->bucket_url, "", &u, err);
}

static int s3_put(baton_store *s, const char *name, const void *p, size_t n, baton_err *err)
{
    return s3_put_any(s, name, p, n, NULL, err);
}

static int s3_put_file(baton_store *s, const char *name, const char *path, baton_err *err)
{
    return s3_put_any(s, name, NULL, 0, path, err);
}

/* HTTP: a read-only folder of files on a web server (no listing: a server's index page is not one) */
const io_store_ops io_store_http_ops = {
    .get = remote_get,
    .get_range = remote_get_range,
    .size = remote_size,
};

const io_store_ops io_store_s3_ops = {
    .get = remote_get,
    .get_range = remote_get_range,
    .size = remote_size,
    .put = s3_put,
    .put_file = s3_put_file,
    .del = io_s3_delete,
    .list = io_s3_list,
    .create_bucket = s3_create_bucket,
};
