/* store_remote.c — the blocking store calls for HTTP and S3 stores: GET (whole object, bounded),
 * ranged GET, HEAD for the size, PUT from memory or streamed from a file, and bucket creation.
 *
 * Owns: the retry loop of one blocking call and the easy-handle pool of the store (handles are
 * reused so keep-alive connections survive between calls; the pool is shared by threads).
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

static CURL *take_handle(baton_store *s)
{
    CURL *h = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->npool > 0) h = s->pool[--s->npool];
    pthread_mutex_unlock(&s->mu);
    if (h) curl_easy_reset(h);
    else h = curl_easy_init();
    return h;
}

static void give_handle(baton_store *s, CURL *h)
{
    if (!h) return;
    pthread_mutex_lock(&s->mu);
    if (s->npool < IO_HANDLE_POOL) {
        s->pool[s->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (h) curl_easy_cleanup(h);
}

static int is_2xx(long st)
{
    return st >= 200 && st < 300;
}

/* ---------------------------------------------------------------- reads */

typedef struct reader {
    const baton_store *s;
    const char *name;
    io_resp resp;
    int ranged;
    uint64_t start, len;     /* asked for this attempt; len UINT64_MAX = to the end */
    baton_buf *out;
    size_t max;              /* bound on out->len growth for whole-object GETs */
    size_t base;             /* out->len before the call */
    uint64_t got;            /* bytes appended by this attempt */
    uint64_t total;          /* object size when the answer told it */
    const char *etag;        /* ETag of the first answer, or "" */
    int checked, failed;
    baton_err ferr;
} reader;

static size_t reader_write(char *p, size_t size, size_t nitems, void *ud)
{
    reader *r = ud;
    size_t n = size * nitems;
    if (!is_2xx(r->resp.status)) {
        io_resp_keep_error(&r->resp, p, n);
        return n;
    }
    char obj[1400];
    if (!r->checked) {
        r->checked = 1;
        if (io_resp_check(r->s, r->name, &r->resp, r->ranged, r->start, r->len, &r->total, &r->ferr) !=
            BATON_OK)
            goto fail;
        if (r->etag[0] && r->resp.etag[0] && strcmp(r->etag, r->resp.etag) != 0) {
            io_object_uri(r->s, r->name, obj, sizeof obj);
            baton_err_set(&r->ferr, BATON_ERR_CORRUPT,
                          "%s at offset %" PRIu64 ": the object changed on the server while it was "
                          "being read (ETag %s, then %s)", obj, r->start, r->etag, r->resp.etag);
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

/* Read [off, off+len) (len UINT64_MAX: to the end; whole: first attempt without Range). */
static int remote_read(baton_store *s, const char *name, uint64_t off, uint64_t len, size_t max,
                       int whole, baton_buf *out, baton_err *err)
{
    char *url = io_object_url(s, name);
    CURL *h = url ? take_handle(s) : NULL;
    if (!h) {
        free(url);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    }
    char etag[sizeof ((io_resp *)0)->etag] = "";
    char errbuf[CURL_ERROR_SIZE];
    size_t base = out->len;
    uint64_t done = 0;
    int fails = 0, rc = BATON_OK;
    reader *r = malloc(sizeof *r);
    if (!r) rc = baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    while (rc == BATON_OK) {
        memset(r, 0, sizeof *r);
        r->s = s;
        r->name = name;
        r->ranged = !(whole && done == 0);
        r->start = off + done;
        r->len = len == UINT64_MAX ? UINT64_MAX : len - done;
        r->out = out;
        r->max = max;
        r->base = base;
        r->etag = etag;
        r->total = UINT64_MAX;
        struct curl_slist *hdrs = NULL;
        curl_easy_reset(h);
        rc = io_request_setup(s, h, url, r->ranged, r->start,
                              r->len == UINT64_MAX ? UINT64_MAX : r->start + r->len - 1,
                              etag[0] ? etag : NULL, &r->resp, errbuf, &hdrs, err);
        if (rc != BATON_OK) break;
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reader_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
        CURLcode cc = curl_easy_perform(h);
        curl_slist_free_all(hdrs);
        done += r->got;
        if (r->failed) {
            if (err) *err = r->ferr;
            rc = r->ferr.code;
            break;
        }
        if (!etag[0] && is_2xx(r->resp.status)) memcpy(etag, r->resp.etag, sizeof etag);
        /* the first answer told the size: later attempts ask for exactly the rest */
        if (r->checked && len == UINT64_MAX && r->total != UINT64_MAX && r->total >= off)
            len = r->total - off;
        int retry = 0;
        if (cc == CURLE_OK && is_2xx(r->resp.status)) {
            if (!r->checked) {  /* empty body: validate the headers all the same */
                uint64_t t;
                rc = io_resp_check(s, name, &r->resp, r->ranged, r->start, r->len, &t, err);
                if (rc != BATON_OK) break;
                r->total = t;
            }
            if (len == UINT64_MAX && r->total != UINT64_MAX && r->total >= off) len = r->total - off;
            if (len == UINT64_MAX || done == len) break;  /* complete */
            char obj[1400];
            io_object_uri(s, name, obj, sizeof obj);
            baton_err_set(err, BATON_ERR_NET, "%s at offset %" PRIu64 ": short body (%" PRIu64
                          " of %" PRIu64 " bytes)", obj, off + done, done, len);
            rc = BATON_ERR_NET;
            retry = 1;
        } else {
            rc = io_request_error(s, name, whole && done == 0 ? UINT64_MAX : off + done, cc, errbuf,
                                  &r->resp, &retry, err);
        }
        if (!retry) break;
        if (r->got > 0) {
            fails = 0;          /* progress: try again at once for the rest */
        } else if (++fails > s->opts.retries) {
            break;
        } else {
            io_sleep_s(io_backoff_s(fails - 1));
        }
        rc = BATON_OK;
    }
    if (rc != BATON_OK) out->len = base;
    free(r);
    give_handle(s, h);
    free(url);
    return rc;
}

int io_remote_get(baton_store *s, const char *name, size_t max, baton_buf *out, baton_err *err)
{
    return remote_read(s, name, 0, UINT64_MAX, max, 1, out, err);
}

int io_remote_get_range(baton_store *s, const char *name, uint64_t off, uint64_t len,
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

int io_remote_size(baton_store *s, const char *name, uint64_t *size, baton_err *err)
{
    char *url = io_object_url(s, name);
    CURL *h = url ? take_handle(s) : NULL;
    if (!h) {
        free(url);
        return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    }
    io_resp resp;
    char errbuf[CURL_ERROR_SIZE];
    int fails = 0, rc;
    for (;;) {
        struct curl_slist *hdrs = NULL;
        curl_easy_reset(h);
        rc = io_request_setup(s, h, url, 0, 0, 0, NULL, &resp, errbuf, &hdrs, err);
        if (rc != BATON_OK) break;
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        CURLcode cc = curl_easy_perform(h);
        curl_slist_free_all(hdrs);
        int retry = 0;
        if (cc == CURLE_OK && resp.status == 200) {
            if (resp.have_len) {
                *size = resp.content_length;
                rc = BATON_OK;
            } else {
                char obj[1400];
                io_object_uri(s, name, obj, sizeof obj);
                rc = baton_err_set(err, BATON_ERR_NET, "%s: HEAD answer without Content-Length", obj);
            }
            break;
        }
        rc = io_request_error(s, name, UINT64_MAX, cc, errbuf, &resp, &retry, err);
        if (!retry || ++fails > s->opts.retries) break;
        io_sleep_s(io_backoff_s(fails - 1));
    }
    give_handle(s, h);
    free(url);
    return rc;
}

/* ---------------------------------------------------------------- uploads */

typedef struct upload {
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

/* PUT url with the body from u; name is for messages. */
static int remote_put(baton_store *s, const char *url, const char *name, upload *u, int bucket,
                      baton_err *err)
{
    CURL *h = take_handle(s);
    if (!h) return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    io_resp resp;
    char errbuf[CURL_ERROR_SIZE];
    int fails = 0, rc;
    for (;;) {
        struct curl_slist *hdrs = NULL;
        curl_easy_reset(h);
        u->pos = 0;
        rc = io_request_setup(s, h, url, 0, 0, 0, NULL, &resp, errbuf, &hdrs, err);
        if (rc != BATON_OK) break;
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, upload_read);
        curl_easy_setopt(h, CURLOPT_READDATA, u);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, upload_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, u);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)u->size);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        CURLcode cc = curl_easy_perform(h);
        curl_slist_free_all(hdrs);
        if (u->failed) {
            if (err) *err = u->ferr;
            rc = u->ferr.code;
            break;
        }
        if (cc == CURLE_OK && is_2xx(resp.status)) {
            rc = BATON_OK;
            break;
        }
        if (bucket && cc == CURLE_OK && resp.status == 409 &&
            strstr(resp.errbody, "<Code>BucketAlreadyOwnedByYou</Code>") != NULL) {
            rc = BATON_OK;
            break;
        }
        int retry = 0;
        rc = io_request_error(s, name, UINT64_MAX, cc, errbuf, &resp, &retry, err);
        if (bucket && resp.status == 409 && err) {
            baton_err_prefix(err, "cannot create bucket \"%s\"", s->bucket);
        }
        if (!retry || ++fails > s->opts.retries) break;
        io_sleep_s(io_backoff_s(fails - 1));
    }
    give_handle(s, h);
    return rc;
}

int io_remote_put(baton_store *s, const char *name, const void *p, size_t n, const char *path,
                  baton_err *err)
{
    upload u = {.mem = p, .fd = -1, .path = path, .size = n};
    if (path) {
        u.mem = NULL;
        u.fd = baton_sys.open(path, O_RDONLY | O_CLOEXEC, 0);
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
    int rc = url ? remote_put(s, url, name, &u, 0, err)
                 : baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, name);
    free(url);
    if (u.fd >= 0) baton_sys.close(u.fd);
    return rc;
}

int io_remote_create_bucket(baton_store *s, baton_err *err)
{
    char body[256] = "";
    if (s->aws_default && strcmp(s->region, "us-east-1") != 0)
        snprintf(body, sizeof body,
                 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                 "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
                 s->region);
    upload u = {.mem = (const uint8_t *)body, .fd = -1, .size = strlen(body)};
    return remote_put(s, s->bucket_url, "", &u, 1, err);
}
