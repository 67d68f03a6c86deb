/* http_client.c — libcurl once for all of baton (http.h, the client): the global initialisation,
 * the options every handle has, and a request whose answer is read into memory.
 *
 * Contract: http_request never follows a redirect to another protocol, never raises a
 * signal, bounds the answer (max_answer) and the time (timeout_s, connect_s), and leaves h reset
 * to its defaults' state for the next request (the connection kept). */
#include "http.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc;
static void init(void) { init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int http_global_init(baton_err *err)
{
    pthread_once(&once, init);
    if (init_rc != CURLE_OK)
        return baton_err_set(err, BATON_ERR_NET, "libcurl initialisation failed: %s", curl_easy_strerror(init_rc));
    return BATON_OK;
}

void http_defaults(CURL *h, double connect_s)
{
    long ms = (long)(connect_s * 1000.0);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms < 1 ? 1L : ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "baton/" BATON_VERSION);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
}

typedef struct sink {
    baton_buf *b;
    size_t max, start;
    int over;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (s->b->len - s->start + len > s->max) {
        s->over = 1;
        return 0;   /* aborts the transfer: an oversized answer is not one */
    }
    return baton_buf_append(s->b, p, len) ? 0 : len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    const http_req *q = ud;
    return q->stop(q->ctx) ? 1 : 0;
}

int http_request(CURL *h, const http_req *q, long *status, baton_buf *ans, baton_err *err)
{
    *status = 0;
    int rc = http_global_init(err);
    if (rc) return rc;
    CURL *own = h ? NULL : curl_easy_init();
    if (!h && !(h = own)) return baton_err_set(err, BATON_ERR_NOMEM, "libcurl: out of memory");
    curl_easy_reset(h);   /* keeps the connection */
    struct curl_slist *hs = NULL, *t;
    for (size_t i = 0; q->headers && q->headers[i]; i++)
        if ((t = curl_slist_append(hs, q->headers[i]))) hs = t;
    const char *method = q->method ? q->method : "GET";
    sink s = {ans, q->max_answer ? q->max_answer : (size_t)1 << 20, ans->len, 0};
    char errbuf[CURL_ERROR_SIZE] = "";
    http_defaults(h, q->connect_s > 0 ? q->connect_s : 10);
    curl_easy_setopt(h, CURLOPT_URL, q->url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    if (q->timeout_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(q->timeout_s * 1000.0) < 1 ? 1L : (long)(q->timeout_s * 1000.0));
    if (q->no_proxy) curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    if (!strcmp(method, "POST") || !strcmp(method, "PUT")) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body_len ? (const char *)q->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
        if (!strcmp(method, "PUT")) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    if (q->stop) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, q);
    }
    CURLcode c = curl_easy_perform(h);
    if (c == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    else if (s.over) rc = baton_err_set(err, BATON_ERR_NET, "%s %s: the answer is over %zu bytes", method, q->url, s.max);
    else rc = baton_err_set(err, BATON_ERR_NET, "%s %s: %s", method, q->url, errbuf[0] ? errbuf : curl_easy_strerror(c));
    curl_easy_reset(h);   /* nothing of this request's (headers, buffers) left pointing into its frame */
    curl_slist_free_all(hs);
    if (own) curl_easy_cleanup(own);
    return rc;
}
