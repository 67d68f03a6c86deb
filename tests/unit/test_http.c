/* test_http.c — the shared HTTP plumbing (http.h) against itself on loopback: a libmicrohttpd
 * daemon started by http_serve on a socket of baton_net_listen's, answering with
 * http_reply / http_reply_json and their extra headers; libcurl requests by
 * http_request: a GET's body and status (also an HTTP error status, which is not a failure),
 * a POST's and a PUT's body and headers echoed, the same kept handle used three times, an answer
 * over max_answer refused naming its size, a request stopped by its callback and one past its
 * timeout, and a refused connection named by method and URL. */
#include "../../src/http/http.h"
#include "check.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct body {
    char data[4096];
    size_t len;
} body;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls, (void)version;
    body *b = *con_cls;
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size < sizeof b->data - b->len ? *upload_size : sizeof b->data - b->len;
        memcpy(b->data + b->len, upload, n);
        b->len += n;
        *upload_size = 0;
        return MHD_YES;
    }
    static const char *const hdr[] = {"X-Test", "yes", NULL};
    enum MHD_Result r;
    if (!strcmp(url, "/json")) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "method", method);
        cJSON_AddStringToObject(j, "token", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Token") ?: "");
        cJSON_AddStringToObject(j, "body", b->len ? b->data : "");
        r = http_reply_json(c, 200, j, hdr);
    } else if (!strcmp(url, "/big")) {
        static char big[100000];
        memset(big, 'x', sizeof big);
        r = http_reply(c, 200, "text/plain", big, sizeof big, NULL);
    } else if (!strcmp(url, "/slow")) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        r = http_reply(c, 200, "text/plain", "late", 4, NULL);
    } else {
        r = http_reply(c, 404, "text/plain", "no", 2, hdr);
    }
    return r;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static int stop_now(void *ctx) { return ++*(int *)ctx > 1; }

int main(void)
{
    baton_err err = {0};
    char url[128], u[256];
    int port = 0, v6 = 0;
    int fd = baton_net_listen("127.0.0.1:0", 0, url, sizeof url, &port, &v6, &err);
    CHECK_MSG(fd >= 0, "%s", err.msg);
    const struct MHD_OptionItem opts[] = {{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)done, NULL}, {MHD_OPTION_END, 0, NULL}};
    struct MHD_Daemon *d = http_serve(fd, v6, handler, NULL, opts, url, &err);
    CHECK_MSG(d != NULL, "%s", err.msg);
    CURL *h = curl_easy_init();
    long status = 0;
    baton_buf ans = {0};
    snprintf(u, sizeof u, "%s/json", url);
    const char *hdr[] = {"X-Token: t0k", NULL};
    const char *methods[] = {"GET", "POST", "PUT"};
    for (int i = 0; i < 3; i++) {   /* one handle, three requests */
        http_req q = {.method = methods[i], .url = u, .headers = hdr, .body = "abc", .body_len = i ? 3 : 0};
        ans.len = 0;
        CHECK_MSG(http_request(h, &q, &status, &ans, &err) == BATON_OK && status == 200, "%s: %s", methods[i], err.msg);
        cJSON *j = cJSON_ParseWithLength((const char *)ans.data, ans.len);
        CHECK_MSG(j && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "method")), methods[i]) &&
                      !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "token")), "t0k") &&
                      !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "body")), i ? "abc" : ""),
                  "%s: %.*s", methods[i], (int)ans.len, (const char *)ans.data);
        cJSON_Delete(j);
    }
    /* an HTTP error status is an answer, not a failure */
    snprintf(u, sizeof u, "%s/nothing", url);
    http_req q404 = {.url = u};
    ans.len = 0;
    CHECK(http_request(NULL, &q404, &status, &ans, &err) == BATON_OK && status == 404 && ans.len == 2);
    /* an answer over max_answer */
    snprintf(u, sizeof u, "%s/big", url);
    http_req qbig = {.url = u, .max_answer = 1000};
    ans.len = 0;
    CHECK_MSG(http_request(h, &qbig, &status, &ans, &err) == BATON_ERR_NET && strstr(err.msg, "over 1000 bytes") &&
                  strstr(err.msg, "/big"), "%s", err.msg);
    qbig.max_answer = 0;
    ans.len = 0;
    CHECK(http_request(h, &qbig, &status, &ans, &err) == BATON_OK && status == 200 && ans.len == 100000);
    /* stopped by its callback, and a timeout */
    snprintf(u, sizeof u, "%s/slow", url);
    int calls = 0;
    http_req qs = {.url = u, .stop = stop_now, .ctx = &calls};
    CHECK_MSG(http_request(h, &qs, &status, &ans, &err) == BATON_ERR_NET && status == 0, "%s", err.msg);
    http_req qt = {.url = u, .timeout_s = 0.2};
    CHECK_MSG(http_request(h, &qt, &status, &ans, &err) == BATON_ERR_NET && strstr(err.msg, "GET "), "%s", err.msg);
    curl_easy_cleanup(h);
    MHD_stop_daemon(d);
    /* refused: named by method and URL */
    http_req qr = {.method = "POST", .url = u};
    CHECK_MSG(http_request(NULL, &qr, &status, &ans, &err) == BATON_ERR_NET && strstr(err.msg, "POST http://127.0.0.1:"),
              "%s", err.msg);
    baton_buf_free(&ans);
    CHECK_DONE();
}
