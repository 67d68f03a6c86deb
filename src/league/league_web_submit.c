/* league_web_submit.c — POST /api/submit on `baton race serve` (league.h, "submissions"):
 * a racer's upload from its headers to its place in the queue.
 *
 * Contract: everything that needs no body is checked on libmicrohttpd's first call, before a byte
 * of the body is read — the token's form and then the alias's token (401, 403), Content-Type (415),
 * alias, format and track (400, 404), a declared Content-Length (411 without one: a chunked body
 * declares no size) within the league's limit (413), no submission of the alias's waiting and no
 * other upload of it arriving (409). A response queued there is sent at once: the body is never
 * read and no "100 Continue" goes out. The one exception is a short body sent without waiting for
 * that word (league_drainable): it is read and dropped before the refusal, which the client could
 * not read if the connection closed on its unread bytes. An accepted body is written as it arrives to a file in the
 * database's folder (mode 0600, unlinked at once, so nothing is left whatever ends the request),
 * never held in memory; at its end it is mapped, checked (the archive, then the model loading as
 * evaluation will load it) and queued. */
#include "league_web_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct league_upload_ctx {
    league_upload_ctx *next;
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    int fd;                     /* the body's file; -1 for a refused request */
    size_t declared, seen;
    int werr;                   /* errno of a failed write: the rest is read and dropped, the answer 500 */
    unsigned refused;           /* the status it is refused with once its body is read (league_drainable) */
    char msg[sizeof ((baton_err *)0)->msg];
};

/* The request as it came (its body as given). */
static baton_league_request request_of(struct MHD_Connection *c, const uint8_t *body, size_t len)
{
    baton_league_request q = {
        .authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .alias = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "alias"),
        .track = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "track"),
        .format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format"),
        .race = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "race"),
        .body = body,
        .len = len,
    };
    return q;
}

/* The token against the database: BATON_OK, else the answer already queued in *ret. */
static int token_ok(baton_league_server *s, struct MHD_Connection *c, const baton_league_upload *up, enum MHD_Result *ret)
{
    baton_err err = {0};
    int rc = league_token_check(s->l, up->alias, up->token, &err);
    if (rc) *ret = league_reply_error(s, c, rc == BATON_ERR_DENIED ? 403 : 500, err.msg);
    return rc;
}

/* A file for the body in the database's folder: 0600, unlinked at once; -1 with errno. */
static int spool_open(const baton_league_server *s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.baton-upload-XXXXXX", s->spool_dir);
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0) unlink(path);
    return fd;
}

/* The body's size as the request declares it (0: none declared; libmicrohttpd answered 400 to a
 * Content-Length that is not a number). */
static size_t declared_length(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl ? (size_t)strtoull(cl, NULL, 10) : 0;
}

/* Every check that needs no body: 0, or the status to refuse with and its message in msg. */
static unsigned check_head(baton_league_server *s, struct MHD_Connection *c, baton_league_upload *up, char *msg, size_t cap)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    size_t declared = declared_length(c);
    baton_league_request q = request_of(c, NULL, 0);
    unsigned http = 400;
    baton_err err = {0};
    int rc;
    if (league_request_head(&q, &s->rules, up, &http, &err)) return snprintf(msg, cap, "%s", err.msg), http;
    if ((rc = league_token_check(s->l, up->alias, up->token, &err)))
        return snprintf(msg, cap, "%s", err.msg), rc == BATON_ERR_DENIED ? 403 : 500;
    if (te || !cl)
        return snprintf(msg, cap, "Content-Length required: send the archive with its size (a chunked body is not taken: "
                                  "its size is not known before it arrives)"), 411;
    if (declared > s->rules.max_bytes)
        return snprintf(msg, cap, "Content-Length %zu: over %zu bytes, the most this league takes", declared,
                        s->rules.max_bytes), 413;
    if (!declared) return snprintf(msg, cap, "an empty body: send the tar of the checkpoint folder"), 400;
    int64_t waiting;
    if (league_waiting(s->l, up->alias, &waiting, &err)) return snprintf(msg, cap, "%s", err.msg), 500;
    if (waiting)
        return snprintf(msg, cap, "'%s' has submission %lld waiting to be evaluated; one at a time", up->alias,
                        (long long)waiting), 409;
    for (league_upload_ctx *o = s->uploads; o; o = o->next)
        if (!o->refused && !strcmp(o->alias, up->alias))
            return snprintf(msg, cap, "an upload of '%s' is arriving already; one at a time", up->alias), 409;
    return 0;
}

enum MHD_Result league_submit_begin(baton_league_server *s, struct MHD_Connection *c, void **con_cls)
{
    baton_league_upload up;
    char msg[sizeof ((baton_err *)0)->msg];
    unsigned refused = check_head(s, c, &up, msg, sizeof msg);
    if (refused && !league_drainable(c)) return league_reply_error(s, c, refused, msg);
    league_upload_ctx *u = calloc(1, sizeof *u);
    if (!u) return MHD_NO;
    u->fd = -1;
    u->declared = declared_length(c);
    if (refused) {   /* a short body sent without waiting for our word: read and dropped, then the refusal */
        u->refused = refused;
        snprintf(u->msg, sizeof u->msg, "%s", msg);
    } else if ((u->fd = spool_open(s)) < 0) {
        baton_log(BATON_LOG_WARN, "league: cannot make a file for an upload in %s: %s", s->spool_dir, strerror(errno));
        free(u);
        return league_reply_error(s, c, 500, "cannot make a file for the upload on the server");
    }
    snprintf(u->alias, sizeof u->alias, "%s", up.alias);
    u->next = s->uploads;
    s->uploads = u;
    *con_cls = u;
    return MHD_YES;
}

enum MHD_Result league_submit_body(league_upload_ctx *u, const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    if (n > u->declared - u->seen) return MHD_NO;   /* more than declared: libmicrohttpd does not pass that */
    u->seen += n;
    baton_err err = {0};
    if (!u->refused && !u->werr && baton_write_all(u->fd, data, n, "the upload", &err)) u->werr = errno ? errno : EIO;
    return MHD_YES;
}

/* The body arrived whole and mapped: checked, unpacked, loaded, queued. */
static enum MHD_Result submit_archive(baton_league_server *s, struct MHD_Connection *c, const uint8_t *body, size_t len)
{
    baton_league_request q = request_of(c, body, len);
    baton_league_upload up;
    unsigned http = 400;
    baton_err err = {0};
    enum MHD_Result ret;
    if (league_request_parse(&q, &s->rules, &up, &http, &err)) return league_reply_error(s, c, http, err.msg);
    if (token_ok(s, c, &up, &ret)) return ret;   /* again: it may have been revoked while the body arrived */
    /* the model must load now, not fail in the queue an hour later */
    league_unpacked un;
    int rc = league_unpack(up.archive, up.len, s->tmp_parent, &un, &err);
    if (rc)
        return league_reply_error(s, c, rc == BATON_ERR_IO || rc == BATON_ERR_NOSPACE || rc == BATON_ERR_NOMEM ? 500 : 400,
                                  err.msg);
    baton_remove_tree(un.dir);
    int64_t id;
    if ((rc = league_enqueue(s->l, &up, &id, &err)))
        return league_reply_error(s, c, rc == BATON_ERR_BUSY ? 409 : 500, err.msg);
    baton_log(BATON_LOG_INFO, "league: submission %lld queued (%s on %s, %zu bytes)", (long long)id, up.alias, up.track, up.len);
    pthread_mutex_lock(&s->mu);
    s->poke = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    baton_league_submission sub;
    if (league_submission_get(s->l, id, &sub, &err)) return league_reply_error(s, c, 500, err.msg);
    cJSON *j = league_submission_json(&sub);
    char loc[64];
    snprintf(loc, sizeof loc, "/api/submissions/%lld", (long long)id);
    cJSON_AddStringToObject(j, "status_url", loc);
    return league_reply_json(c, 202, j);
}

enum MHD_Result league_submit_end(baton_league_server *s, struct MHD_Connection *c, league_upload_ctx *u)
{
    if (u->refused) return league_reply_error(s, c, u->refused, u->msg);
    if (u->werr || u->seen != u->declared) {
        baton_log(BATON_LOG_WARN, "league: an upload of '%s' into %s: %s", u->alias, s->spool_dir,
                  u->werr ? strerror(u->werr) : "shorter than declared");
        char msg[200];
        snprintf(msg, sizeof msg, "cannot store the upload on the server: %s", u->werr ? strerror(u->werr) : "it ended early");
        return league_reply_error(s, c, 500, msg);
    }
    void *map = mmap(NULL, u->seen, PROT_READ, MAP_PRIVATE, u->fd, 0);
    if (map == MAP_FAILED) {
        baton_log(BATON_LOG_WARN, "league: cannot map an upload of %zu bytes: %s", u->seen, strerror(errno));
        return league_reply_error(s, c, 500, "cannot read the upload back on the server");
    }
    enum MHD_Result r = submit_archive(s, c, map, u->seen);
    munmap(map, u->seen);
    return r;
}

void league_submit_free(baton_league_server *s, league_upload_ctx *u)
{
    for (league_upload_ctx **p = &s->uploads; *p; p = &(*p)->next)
        if (*p == u) {
            *p = u->next;
            break;
        }
    if (u->fd >= 0) close(u->fd);
    free(u);
}
