/* remote.c — the request layer shared by the blocking store calls (store_remote.c, store_list.c)
 * and the fetch thread (fetch.c) for HTTP and S3 stores.
 *
 * Owns: libcurl's one-time global initialisation; building object URLs; configuring an easy
 * handle for one request (timeouts, keep-alive, SigV4 through libcurl's CURLOPT_AWS_SIGV4 with
 * "x-amz-content-sha256: UNSIGNED-PAYLOAD" and the session token header, Range, If-Match);
 * capturing the response headers that matter (status, Content-Range, Content-Length, ETag);
 * validating a 2xx answer against the requested range before its body is trusted; mapping
 * failures to errors; the store's pool of easy handles (reused, so keep-alive connections survive
 * between blocking calls; shared by threads) and the retry loop of one blocking call (io_call_run).
 *
 * Error contract: messages name the object URI (and offset where one applies); a 403 names the
 * access key id and the S3 error code, never the secret; 404 → BATON_ERR_NOTFOUND; 412 (the
 * object changed: If-Match failed) → BATON_ERR_CORRUPT; 416 → BATON_ERR_TRUNCATED; connection
 * trouble, timeouts, 429 and 5xx → BATON_ERR_NET marked retryable. io_scrub removes the secrets
 * from any message as a last line of defence. Verbose curl output is never enabled. */
#include "store_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

char *io_object_url(const baton_store *s, const char *name)
{
    baton_buf b = {0};
    size_t bl = strlen(s->base_url);
    if (baton_buf_append(&b, s->base_url, bl) != BATON_OK || io_escape_append(&b, name) != BATON_OK ||
        baton_buf_append(&b, "", 1) != BATON_OK) {
        baton_buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}

void io_object_uri(const baton_store *s, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s", s->uri, name ? name : "");
}

/* ---------------------------------------------------------------- response headers */

static int header_is(const char *line, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) != 0 || line[n] != ':') return 0;
    const char *v = line + n + 1;
    while (*v == ' ' || *v == '\t') v++;
    *value = v;
    return 1;
}

static int parse_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s)) return 0;
    uint64_t v = 0;
    while (isdigit((unsigned char)*s)) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
        s++;
    }
    *p = s;
    *out = v;
    return 1;
}

static void parse_content_range(io_resp *r, const char *v)
{
    /* "bytes START-END/TOTAL", "bytes START-END/STAR" or "bytes STAR/TOTAL" (STAR = an asterisk) */
    if (strncasecmp(v, "bytes", 5) != 0) return;
    v += 5;
    while (*v == ' ') v++;
    if (*v == '*') {
        v++;
        if (*v++ != '/') return;
        uint64_t t;
        if (!parse_u64(&v, &t)) return;
        r->cr_unsatisfied = 1;
        r->cr_total = t;
        return;
    }
    uint64_t a, b, t = UINT64_MAX;
    if (!parse_u64(&v, &a) || *v++ != '-' || !parse_u64(&v, &b) || *v++ != '/') return;
    if (*v == '*') {
        t = UINT64_MAX;
    } else if (!parse_u64(&v, &t)) {
        return;
    }
    if (b < a || (t != UINT64_MAX && b >= t)) return;
    r->have_cr = 1;
    r->cr_start = a;
    r->cr_end = b;
    r->cr_total = t;
}

static size_t header_cb(char *data, size_t size, size_t nitems, void *ud)
{
    io_resp *r = ud;
    size_t n = size * nitems;
    char line[512];
    size_t k = n < sizeof line - 1 ? n : sizeof line - 1;
    memcpy(line, data, k);
    line[k] = 0;
    while (k > 0 && (line[k - 1] == '\r' || line[k - 1] == '\n' || line[k - 1] == ' ')) line[--k] = 0;
    const char *v;
    if (strncmp(line, "HTTP/", 5) == 0) {
        /* a new response (after a redirect or 100-continue): forget the previous one */
        memset(r, 0, offsetof(io_resp, errbody));
        r->errlen = 0;
        const char *sp = strchr(line, ' ');
        uint64_t st;
        if (sp) {
            sp++;
            if (parse_u64(&sp, &st) && st < 1000) r->status = (long)st;
        }
    } else if (header_is(line, "Content-Range", &v)) {
        parse_content_range(r, v);
    } else if (header_is(line, "Content-Length", &v)) {
        uint64_t len;
        if (parse_u64(&v, &len)) {
            r->have_len = 1;
            r->content_length = len;
        }
    } else if (header_is(line, "ETag", &v)) {
        snprintf(r->etag, sizeof r->etag, "%s", v);
    }
    return n;
}

void io_resp_keep_error(io_resp *r, const void *p, size_t n)
{
    size_t room = sizeof r->errbody - 1 - r->errlen;
    if (n > room) n = room;
    memcpy(r->errbody + r->errlen, p, n);
    r->errlen += n;
    r->errbody[r->errlen] = 0;
}

int io_etag_strong(const char *etag)
{
    return etag[0] == '"' && strlen(etag) >= 2;
}

/* ---------------------------------------------------------------- request set-up */

int io_request_setup(const baton_store *s, CURL *h, const char *url, int range, uint64_t start,
                     uint64_t end, const char *if_match, io_resp *resp, char *errbuf,
                     struct curl_slist **hdrs, baton_err *err)
{
    memset(resp, 0, sizeof *resp);
    errbuf[0] = 0;
    *hdrs = NULL;
    long stall_s = (long)(s->opts.stall_timeout_s + 0.5);
    if (stall_s < 1) stall_s = 1;
    http_defaults(h, s->opts.connect_timeout_s);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    struct curl_slist *l = NULL, *t;
    char line[256];
    if (s->kind == BATON_STORE_S3) {
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
        curl_easy_setopt(h, CURLOPT_USERNAME, s->access_key);
        curl_easy_setopt(h, CURLOPT_PASSWORD, s->secret_key);
        /* libcurl 7.88 does not add it by itself, and radosgw refuses requests without it */
        if (!(t = curl_slist_append(l, "x-amz-content-sha256: UNSIGNED-PAYLOAD"))) goto nomem;
        l = t;
        if (s->session_token && *s->session_token) {
            size_t tl = strlen(s->session_token);
            char *tok = malloc(tl + 32);
            if (!tok) goto nomem;
            snprintf(tok, tl + 32, "x-amz-security-token: %s", s->session_token);
            t = curl_slist_append(l, tok);
            memset(tok, 0, tl + 32);
            free(tok);
            if (!t) goto nomem;
            l = t;
        }
    } else {
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    }
    if (range) {
        if (end == UINT64_MAX)
            snprintf(line, sizeof line, "Range: bytes=%" PRIu64 "-", start);
        else
            snprintf(line, sizeof line, "Range: bytes=%" PRIu64 "-%" PRIu64, start, end);
        if (!(t = curl_slist_append(l, line))) goto nomem;
        l = t;
    }
    if (if_match && io_etag_strong(if_match) && strlen(if_match) < 200) {
        snprintf(line, sizeof line, "If-Match: %s", if_match);
        if (!(t = curl_slist_append(l, line))) goto nomem;
        l = t;
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
    *hdrs = l;
    return BATON_OK;
nomem:
    curl_slist_free_all(l);
    return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", url);
}

/* ---------------------------------------------------------------- validation and errors */

static const char *reason(long st)
{
    switch (st) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    }
    return "";
}

/* "OBJ" or "OBJ at offset N" */
static void where(const baton_store *s, const char *name, uint64_t off, char *out, size_t cap)
{
    char obj[1400];
    io_object_uri(s, name, obj, sizeof obj);
    if (off == UINT64_MAX)
        snprintf(out, cap, "%s", obj);
    else
        snprintf(out, cap, "%s at offset %" PRIu64, obj, off);
}

int io_resp_check(const baton_store *s, const char *name, const io_resp *r, int ranged,
                  uint64_t start, uint64_t len, uint64_t *total, baton_err *err)
{
    char w[1500];
    *total = UINT64_MAX;
    uint64_t want_end = len == UINT64_MAX ? UINT64_MAX : start + len - 1;
    if (r->status == 206) {
        if (!ranged || !r->have_cr) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_NET, "%s: 206 answer without a usable Content-Range", w);
        }
        *total = r->cr_total;
        if (r->cr_start != start) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_NET,
                                 "%s: asked for bytes from %" PRIu64 ", server sent bytes %" PRIu64
                                 "-%" PRIu64, w, start, r->cr_start, r->cr_end);
        }
        if (want_end != UINT64_MAX && r->cr_end > want_end) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_NET,
                                 "%s: asked for bytes %" PRIu64 "-%" PRIu64 ", server sent up to %" PRIu64,
                                 w, start, want_end, r->cr_end);
        }
        if (want_end != UINT64_MAX && r->cr_end < want_end && r->cr_total != UINT64_MAX &&
            r->cr_total <= want_end) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_TRUNCATED,
                                 "%s: object is %" PRIu64 " bytes, the range of %" PRIu64
                                 " bytes runs past its end", w, r->cr_total, len);
        }
        if (r->have_len && r->content_length != r->cr_end - r->cr_start + 1) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_NET, "%s: Content-Length %" PRIu64
                                 " does not match Content-Range %" PRIu64 "-%" PRIu64,
                                 w, r->content_length, r->cr_start, r->cr_end);
        }
        return BATON_OK;
    }
    if (r->status == 200) {
        if (r->have_len) *total = r->content_length;
        if (!ranged) return BATON_OK;
        if (start != 0) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_NET,
                                 "%s: server ignored the Range request (200 instead of 206): baton reads shards in byte "
                                 "ranges; serve them with a server that answers ranges (nginx, Apache, S3)", w);
        }
        if (len == UINT64_MAX) return BATON_OK;
        if (r->have_len && r->content_length < len) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_TRUNCATED,
                                 "%s: object is %" PRIu64 " bytes, the range of %" PRIu64
                                 " bytes runs past its end", w, r->content_length, len);
        }
        if (!r->have_len || r->content_length != len) {
            where(s, name, start, w, sizeof w);
            return baton_err_set(err, BATON_ERR_NET,
                                 "%s: server ignored the Range request (200 instead of 206): baton reads shards in byte "
                                 "ranges; serve them with a server that answers ranges (nginx, Apache, S3)", w);
        }
        return BATON_OK;
    }
    where(s, name, start, w, sizeof w);
    return baton_err_set(err, BATON_ERR_NET, "%s: unexpected HTTP status %ld", w, r->status);
}

/* Text between <TAG> and </TAG> in an XML error body, printable characters only. */
static void xml_field(const char *body, const char *tag, char *out, size_t cap)
{
    char open[40], close[40];
    out[0] = 0;
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = strstr(body, open);
    if (!a) return;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b) return;
    size_t k = 0;
    for (const char *p = a; p < b && k + 1 < cap; p++)
        out[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
    out[k] = 0;
}

int io_request_error(const baton_store *s, const char *name, uint64_t off, CURLcode cc,
                     const char *errbuf, const io_resp *r, int *retry, baton_err *err)
{
    char w[1500];
    where(s, name, off, w, sizeof w);
    const char *detail = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(cc);
    *retry = 0;
    if (cc != CURLE_OK) {
        switch (cc) {
        case CURLE_COULDNT_CONNECT:
            *retry = 1;
            baton_err_set(err, BATON_ERR_NET, "%s: cannot connect to %s (%s)", w, s->hostport, detail);
            break;
        case CURLE_COULDNT_RESOLVE_HOST:
            *retry = 1;
            baton_err_set(err, BATON_ERR_NET, "%s: cannot resolve %s (%s)", w, s->hostport, detail);
            break;
        case CURLE_OPERATION_TIMEDOUT:
            *retry = 1;
            baton_err_set(err, BATON_ERR_NET, "%s: %s timed out (%s)", w, s->hostport, detail);
            break;
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_WEIRD_SERVER_REPLY:
            *retry = 1;
            baton_err_set(err, BATON_ERR_NET, "%s: connection to %s failed (%s)", w, s->hostport,
                          detail);
            break;
        default:
            baton_err_set(err, BATON_ERR_NET, "%s: %s", w, detail);
            break;
        }
        io_scrub(s, err);
        return err ? err->code : BATON_ERR_NET;
    }
    long st = r->status;
    char code[80], msg[200];
    xml_field(r->errbody, "Code", code, sizeof code);
    xml_field(r->errbody, "Message", msg, sizeof msg);
    char paren[100] = "";
    if (code[0]) snprintf(paren, sizeof paren, " (%s)", code);
    if (st == 403 || st == 401) {
        if (s->kind == BATON_STORE_S3) {
            const char *hint = "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";
            if (strcmp(code, "SignatureDoesNotMatch") == 0) hint = "check AWS_SECRET_ACCESS_KEY";
            else if (strcmp(code, "InvalidAccessKeyId") == 0) hint = "check AWS_ACCESS_KEY_ID";
            else if (strcmp(code, "AccessDenied") == 0) hint = "the key may not read or write this object";
            else if (strcmp(code, "RequestTimeTooSkewed") == 0) hint = "check the system clock";
            else if (strcmp(code, "ExpiredToken") == 0 || strcmp(code, "InvalidToken") == 0)
                hint = "check AWS_SESSION_TOKEN";
            baton_err_set(err, BATON_ERR_NET, "%s: %ld %s%s for access key %s: %s", w, st, reason(st),
                          paren, s->access_key, hint);
        } else {
            baton_err_set(err, BATON_ERR_NET, "%s: %ld %s", w, st, reason(st));
        }
    } else if (st == 404) {
        if (strcmp(code, "NoSuchBucket") == 0)
            baton_err_set(err, BATON_ERR_NOTFOUND,
                          "%s: 404 Not Found (NoSuchBucket): bucket \"%s\" does not exist", w,
                          s->bucket ? s->bucket : "?");
        else
            baton_err_set(err, BATON_ERR_NOTFOUND, "%s: 404 Not Found%s", w, paren);
    } else if (st == 412) {
        baton_err_set(err, BATON_ERR_CORRUPT,
                      "%s: the object changed on the server while it was being read (If-Match "
                      "failed: 412 Precondition Failed)", w);
    } else if (st == 416) {
        if (r->cr_unsatisfied)
            baton_err_set(err, BATON_ERR_TRUNCATED,
                          "%s: range not satisfiable: the object is only %" PRIu64 " bytes", w,
                          r->cr_total);
        else
            baton_err_set(err, BATON_ERR_TRUNCATED, "%s: 416 Range Not Satisfiable (object too short)", w);
    } else if (st == 429 || (st >= 500 && st <= 599)) {
        *retry = 1;
        baton_err_set(err, BATON_ERR_NET, "%s: %ld %s%s%s%s", w, st, reason(st), paren,
                      msg[0] ? ": " : "", msg);
    } else if (st == 0) {
        *retry = 1;
        baton_err_set(err, BATON_ERR_NET, "%s: no HTTP answer from %s", w, s->hostport);
    } else {
        baton_err_set(err, BATON_ERR_NET, "%s: %ld %s%s%s%s", w, st, reason(st), paren,
                      msg[0] ? ": " : "", msg);
    }
    io_scrub(s, err);
    return err ? err->code : BATON_ERR_NET;
}

static void scrub_one(char *msg, const char *secret)
{
    if (!secret) return;
    size_t sl = strlen(secret);
    if (sl < 4) return;
    char *p;
    while ((p = strstr(msg, secret)) != NULL) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + sl, strlen(p + sl) + 1);
    }
}

void io_scrub(const baton_store *s, baton_err *err)
{
    if (!err || !s) return;
    scrub_one(err->msg, s->secret_key);
    scrub_one(err->msg, s->session_token);
}

/* ---------------------------------------------------------------- blocking calls */

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

int io_call_check(baton_store *s, io_call *c, CURLcode cc, int *retry, baton_err *err)
{
    *retry = 0;
    if (cc == CURLE_OK && c->resp.status >= 200 && c->resp.status < 300) return BATON_OK;
    return io_request_error(s, c->name, c->err_off, cc, c->errbuf, &c->resp, retry, err);
}

/* Milliseconds left before the store's deadline (baton_store_set_deadline); LLONG_MAX: none. */
static long long deadline_left_ms(baton_store *s)
{
    long long ms = atomic_load(&s->deadline_ms);
    if (!ms) return LLONG_MAX;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ms - ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static int past_deadline(baton_store *s) { return deadline_left_ms(s) <= 0; }

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return past_deadline(ud);   /* non-zero aborts the transfer */
}

int io_call_run(baton_store *s, io_call *c, baton_err *err)
{
    CURL *h = take_handle(s);
    if (!h) return baton_err_set(err, BATON_ERR_NOMEM, "%s%s: out of memory", s->uri, c->name);
    int fails = 0, rc;
    for (;;) {
        if (past_deadline(s)) {   /* none starts after it, and a cut one is not tried again */
            rc = baton_err_set(err, BATON_ERR_NET, "%s%s: stopped at the deadline", s->uri, c->name);
            break;
        }
        struct curl_slist *hdrs = NULL;
        curl_easy_reset(h);
        c->progress = 0;
        if (c->begin) c->begin(c);
        rc = io_request_setup(s, h, c->url, c->range, c->start, c->end, c->if_match, &c->resp, c->errbuf, &hdrs,
                              err);
        if (rc != BATON_OK) break;
        if (c->prepare) c->prepare(c, h);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, s);
        long long left = deadline_left_ms(s);   /* a deadline set later is the progress callback's */
        if (left != LLONG_MAX) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left < 1 ? 1 : left));
        CURLcode cc = curl_easy_perform(h);
        curl_slist_free_all(hdrs);
        int retry = 0;
        rc = (c->check ? c->check : io_call_check)(s, c, cc, &retry, err);
        if (rc != BATON_OK && (cc == CURLE_ABORTED_BY_CALLBACK || cc == CURLE_OPERATION_TIMEDOUT) && past_deadline(s)) {
            rc = baton_err_set(err, BATON_ERR_NET, "%s%s: cut at the deadline", s->uri, c->name);
            break;
        }
        if (rc == BATON_OK || !retry) break;
        if (c->progress) {
            fails = 0;   /* bytes moved: try again at once for the rest */
        } else if (++fails > s->opts.retries) {
            break;
        } else {
            io_sleep_s(io_backoff_s(fails - 1));
        }
    }
    give_handle(s, h);
    return rc;
}

double io_backoff_s(int k)
{
    double d = 0.05;
    for (int i = 0; i < k && d < 5.0; i++) d *= 2;
    return d > 5.0 ? 5.0 : d;
}

void io_sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
