/* http_server.c — libmicrohttpd for all of baton (http.h, the server): a daemon with its own
 * polling thread on a socket the caller listens on, and answers with their headers.
 *
 * Contract: http_serve takes the socket (closed when the daemon does not start); an answer's
 * body is copied, so the caller's buffer may go as soon as it returns. */
#include "http.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct MHD_Daemon *http_serve(int fd, int v6, MHD_AccessHandlerCallback h, void *cls,
                              const struct MHD_OptionItem *opts, const char *what, baton_err *err)
{
    static const struct MHD_OptionItem none[] = {{MHD_OPTION_END, 0, NULL}};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, h, cls, MHD_OPTION_LISTEN_SOCKET, fd,
                                            MHD_OPTION_ARRAY, opts ? opts : none, MHD_OPTION_END);
    if (!d) {
        close(fd);
        const char *why = http_server_why();
        baton_err_set(err, BATON_ERR_IO, "libmicrohttpd did not start on %s%s%s", what, *why ? ": " : "", why);
    }
    return d;
}

enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *ctype, const void *body,
                           size_t len, const char *const *headers)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    if (ctype) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2) MHD_add_response_header(r, headers[i], headers[i + 1]);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, cJSON *j, const char *const *headers)
{
    char *s = j ? baton_json_print(j, 0) : NULL;
    cJSON_Delete(j);
    if (!s) return MHD_NO;
    enum MHD_Result r = http_reply(c, status, "application/json", s, strlen(s), headers);
    free(s);
    return r;
}
