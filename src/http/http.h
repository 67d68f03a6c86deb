/* http.h — internal to the library, never installed (it pulls in curl and microhttpd): the HTTP
 * plumbing baton's components share (src/http/): libcurl set up once and one
 * request into memory (the client side of the notice watcher, the league client, the stores'
 * defaults), and libmicrohttpd started on a listening socket with its answers (the metadata
 * emulator, the league's server). The streaming transfers of the stores (ranges, S3 signing,
 * pause and resume) stay in io; what every handle needs is set here once. */
#ifndef HTTP_HTTP_H
#define HTTP_HTTP_H

#include "baton/util.h"

#include <curl/curl.h>
#include <microhttpd.h>

/* ---------------------------------------------------------------- the client (http_client.c) */
/* curl_global_init, once per process whatever the threads; BATON_ERR_NET when it failed. */
int http_global_init(baton_err *err);
/* What every baton handle has: no signals, http and https only (also after a redirect), baton's
 * user agent, the connect timeout (seconds, at least 1 ms). */
void http_defaults(CURL *h, double connect_s);

typedef struct http_req {
    const char *method;         /* "GET" (NULL), "POST" or "PUT" */
    const char *url;
    const char *const *headers; /* "Name: value" lines, NULL-terminated; may be NULL */
    const void *body;           /* POST and PUT: body_len bytes (may be 0) */
    size_t body_len;
    size_t max_answer;          /* a longer answer fails the request; 0: 1 MiB */
    double timeout_s;           /* the whole request; 0: none */
    double connect_s;           /* 0: 10 s */
    int no_proxy;               /* never through a proxy (the link-local metadata address) */
    int (*stop)(void *ctx);     /* polled during the transfer: non-zero aborts it */
    void *ctx;
} http_req;

/* One request on h (a handle kept for its connection, reset first; NULL: a handle of its own).
 * *status gets the answer's HTTP status and ans (appended to) its body. A failure to get a whole
 * answer — refused, timed out, over max_answer, stopped — is BATON_ERR_NET naming the method, the
 * URL and the cause; an HTTP error status is not a failure here. */
int http_request(CURL *h, const http_req *q, long *status, baton_buf *ans, baton_err *err);

/* ---------------------------------------------------------------- the libraries (http_dl.c) */
/* libcurl and libmicrohttpd are opened at their first use; why libmicrohttpd cannot be used
 * ("" when it can). libcurl's cause is curl_easy_strerror's text then. */
const char *http_server_why(void);

/* ---------------------------------------------------------------- the server (http_server.c) */
/* libmicrohttpd on fd (a listening socket, baton_net_listen's; v6 when it is IPv6) with its own
 * polling thread, handler h(cls), and the options of opts (pairs ended by MHD_OPTION_END; may be
 * NULL). On failure fd is closed and NULL returned with the error naming what (e.g. the URL). */
struct MHD_Daemon *http_serve(int fd, int v6, MHD_AccessHandlerCallback h, void *cls,
                              const struct MHD_OptionItem *opts, const char *what, baton_err *err);
/* An answer of len bytes (copied) with its content type (NULL: none) and extra headers as name,
 * value pairs ended by NULL (may be NULL). */
enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *ctype, const void *body,
                           size_t len, const char *const *headers);
/* j printed (baton_json_print) as application/json, then deleted. */
enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, struct cJSON *j,
                                const char *const *headers);

#endif
