/* imds.c — a local EC2 instance-metadata service (the emulator behind `baton imds`), on
 * libmicrohttpd, so that interruption handling can be tested and demonstrated anywhere.
 *
 * Serves (IMDS paths under /latest/meta-data/):
 *   instance-id, instance-type, placement/availability-zone, placement/region, ami-id
 *   spot/instance-action      404 until an interruption is scheduled, then
 *                             {"action": "...", "time": "...Z"}; with slide, time = now + notice on
 *                             every request (like amazon-ec2-metadata-mock), else fixed
 *   spot/termination-time     the same time as plain text (action terminate only)
 *   events/recommendations/rebalance   404, or {"noticeTime": "...Z"}
 *   PUT /latest/api/token     X-aws-ec2-metadata-token-ttl-seconds 1..21600 (else 400; a request
 *                             with X-Forwarded-For gets 403, as on EC2); other methods 405
 *   GET with X-aws-ec2-metadata-token: 401 when the token is unknown or expired; without one,
 *                             401 when v2_only
 *   GET /computeMetadata/v1/instance/preempted  (GCE) "TRUE" once an interruption is visible,
 *                             else "FALSE"; 403 without Metadata-Flavor: Google
 *   GET /metadata/scheduledevents?api-version=…   (Azure) {"DocumentIncarnation": N, "Events": []},
 *                             and once an interruption is visible one Preempt event for this
 *                             machine (EventStatus Scheduled, NotBefore = the notice's time as an
 *                             HTTP date; Started, NotBefore "", once that time has passed); the
 *                             incarnation grows with every change. POST (an acknowledgement) 200.
 *   GET /metadata/instance/compute/name?api-version=…&format=text   (Azure) the machine's name
 *                             Azure paths answer 400 with a JSON error without Metadata: true or
 *                             without api-version, as Azure's service does
 * Control (no token needed, work in every mode):
 *   PUT /baton/interrupt[?action=terminate|stop|hibernate&notice=SEC]  schedule one now
 *   PUT /baton/rebalance      a rebalance recommendation now (a new noticeTime)
 *   PUT /baton/clear          withdraw both
 *   GET /baton/state          JSON: requests served, what is scheduled
 * garbage: every metadata path (token PUT included) answers 200 with a body that is not what the
 * path promises (random bytes, HTML, JSON of the wrong shape, a time that does not parse, a
 * truncated object, an empty body, a 256 KiB body), rotating per request.
 *
 * Listens on loopback unless allow_remote; port 0 = ephemeral (the socket is bound here, so the
 * port is known before the first request). One libmicrohttpd polling thread; state under a mutex. */
#include "notice_internal.h"
#include "../http/http.h"

#include <arpa/inet.h>
#include <cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKENS 64

struct baton_imds {
    struct MHD_Daemon *d;
    int port;
    char url[96];
    char instance_id[64], instance_type[64], zone[64], region[64];
    int v2_only, slide, garbage, token_status;
    char action[16];
    double notice_s;
    pthread_mutex_t mu;
    /* an interruption: visible from sched_at on, time = sched_at + sched_notice (or sliding) */
    int sched;
    double sched_at, sched_notice;
    char sched_action[16];
    double rebal_at, rebal_time;   /* 0: none; visible from rebal_at on, noticeTime = rebal_time */
    unsigned incarnation;          /* Azure's DocumentIncarnation: one more per change of the events */
    char event_id[40];             /* Azure's EventId of the scheduled interruption */
    struct { char tok[48]; double expires; } tokens[TOKENS];
    unsigned tok_next;
    baton_rng rng;
    uint64_t garbage_seq;
    _Atomic uint64_t requests;
};

static int valid_action(const char *a)
{
    return a && (!strcmp(a, "terminate") || !strcmp(a, "stop") || !strcmp(a, "hibernate"));
}

void baton_imds_opts_default(baton_imds_opts *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:0";
    o->interrupt_after = -1;
    o->rebalance_after = -1;
    o->action = "terminate";
    o->notice_seconds = 120;
}

/* ---------------------------------------------------------------- responses */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype, const void *body,
                             size_t len, const char *hname, const char *hval)
{
    const char *const headers[] = {MHD_HTTP_HEADER_SERVER, "EC2ws", hname, hval, NULL};
    return http_reply(c, status, ctype, body, len, headers);
}

/* j's text (baton_json_print) into out, j deleted; returns out ("{}" when out of memory) */
static const char *json_text(cJSON *j, char *out, size_t cap)
{
    char *s = baton_json_print(j, 0);
    snprintf(out, cap, "%s", s ? s : "{}");
    free(s);
    cJSON_Delete(j);
    return out;
}

/* Azure's one preemption event in its list (not_before "": already started) */
static void azure_event(cJSON *events, const char *id, const char *not_before)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "EventId", id);
    cJSON_AddStringToObject(e, "EventStatus", not_before[0] ? "Scheduled" : "Started");
    cJSON_AddStringToObject(e, "EventType", "Preempt");
    cJSON_AddStringToObject(e, "ResourceType", "VirtualMachine");
    const char *vm = "baton-vm";
    cJSON_AddItemToObject(e, "Resources", cJSON_CreateStringArray(&vm, 1));
    cJSON_AddStringToObject(e, "NotBefore", not_before);
    cJSON_AddStringToObject(e, "Description", "Virtual machine is being preempted.");
    cJSON_AddStringToObject(e, "EventSource", "Platform");
    cJSON_AddNumberToObject(e, "DurationInSeconds", -1);
    cJSON_AddItemToArray(events, e);
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    return reply(c, status, "text/plain", text, strlen(text), NULL, NULL);
}

static enum MHD_Result reply_status(struct MHD_Connection *c, unsigned status)
{
    static const char *const names[] = {[400] = "Bad Request", [401] = "Unauthorized", [403] = "Forbidden",
                                        [404] = "Not Found", [405] = "Method Not Allowed"};
    const char *name = status < sizeof names / sizeof names[0] && names[status] ? names[status] : "Error";
    char body[512];
    snprintf(body, sizeof body,
             "<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n<html><head><title>%u - %s</title></head>"
             "<body><h1>%u - %s</h1></body></html>\n",
             status, name, status, name);
    return reply(c, status, "text/html", body, strlen(body), NULL, NULL);
}

/* A body that is not what the path promises, rotating per request. */
static enum MHD_Result reply_garbage(baton_imds *m, struct MHD_Connection *c)
{
    static const char *const junk[] = {
        "<html><body><h1>Service Unavailable</h1></body></html>",
        "{\"action\": 42, \"time\": null}",
        "{\"action\":\"terminate\",\"time\":\"soon\"}",
        "{\"action\":\"explode\",\"time\":\"2030-01-01T00:00:00Z\"}",
        "{\"action\":\"terminate\",\"time\":\"2030-01-01T00:00:00Z\"",
        "{\"noticeTime\":\"yesterday\"}",
        "[\"terminate\",\"2030-01-01T00:00:00Z\"]",
        "",
    };
    enum { NJUNK = sizeof junk / sizeof junk[0] };
    pthread_mutex_lock(&m->mu);
    uint64_t k = m->garbage_seq++ % (NJUNK + 2);
    uint64_t seed = baton_rng_next(&m->rng);
    pthread_mutex_unlock(&m->mu);
    if (k < NJUNK) return reply(c, 200, k % 2 ? "application/json" : "text/html", junk[k], strlen(junk[k]), NULL, NULL);
    size_t n = k == NJUNK ? 96 : 256 * 1024;
    uint8_t *b = malloc(n);
    if (!b) return MHD_NO;
    baton_rng r;
    baton_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) b[i] = k == NJUNK ? (uint8_t)baton_rng_next(&r) : 'A';
    enum MHD_Result ret = reply(c, 200, "application/octet-stream", b, n, NULL, NULL);
    free(b);
    return ret;
}

/* ---------------------------------------------------------------- state (m->mu held) */
static int notice_visible(const baton_imds *m, double now)
{
    return m->sched && now >= m->sched_at;
}

static double notice_time(const baton_imds *m, double now)
{
    return m->slide ? now + m->sched_notice : m->sched_at + m->sched_notice;
}

static void schedule(baton_imds *m, double at, const char *action, double notice_s)
{
    m->sched = 1;
    m->sched_at = at;
    snprintf(m->sched_action, sizeof m->sched_action, "%s", valid_action(action) ? action : m->action);
    m->sched_notice = notice_s >= 0 ? notice_s : m->notice_s;
    m->incarnation++;
    uint64_t a = baton_rng_next(&m->rng), b = baton_rng_next(&m->rng);
    snprintf(m->event_id, sizeof m->event_id, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)a, (unsigned)(a >> 32) & 0xffff,
             (unsigned)(a >> 48) & 0xfff, (unsigned)b & 0xfff, (unsigned long long)(b >> 16) & 0xffffffffffffULL);
}

/* ---------------------------------------------------------------- tokens (m->mu held) */
static void token_new(baton_imds *m, double ttl, char out[48])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < 44; i++) out[i] = b64[baton_rng_next(&m->rng) & 63];
    out[44] = '=';
    out[45] = '=';
    out[46] = 0;
    unsigned slot = m->tok_next++ % TOKENS;
    snprintf(m->tokens[slot].tok, sizeof m->tokens[slot].tok, "%s", out);
    m->tokens[slot].expires = baton_wall_now() + ttl;
}

static int token_valid(const baton_imds *m, const char *tok, double now)
{
    for (int i = 0; i < TOKENS; i++)
        if (m->tokens[i].tok[0] && !strcmp(m->tokens[i].tok, tok)) return now < m->tokens[i].expires;
    return 0;
}

/* ---------------------------------------------------------------- handlers */
static enum MHD_Result handle_token(baton_imds *m, struct MHD_Connection *c, const char *method)
{
    if (strcmp(method, "PUT")) return reply_status(c, 405);
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For")) return reply_status(c, 403);
    if (m->garbage) return reply_garbage(m, c);
    if (m->token_status) return reply_status(c, (unsigned)m->token_status);
    const char *ttl_s = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-aws-ec2-metadata-token-ttl-seconds");
    char *end = NULL;
    long ttl = ttl_s ? strtol(ttl_s, &end, 10) : 0;
    if (!ttl_s || end == ttl_s || *end || ttl < 1 || ttl > 21600) return reply_status(c, 400);
    char tok[48], ttl_echo[16];
    pthread_mutex_lock(&m->mu);
    token_new(m, (double)ttl, tok);
    pthread_mutex_unlock(&m->mu);
    snprintf(ttl_echo, sizeof ttl_echo, "%ld", ttl);
    return reply(c, 200, "text/plain", tok, strlen(tok), "X-aws-ec2-metadata-token-ttl-seconds", ttl_echo);
}

static enum MHD_Result handle_meta(baton_imds *m, struct MHD_Connection *c, const char *path)
{
    if (m->garbage) return reply_garbage(m, c);   /* whatever token came with the request */
    const char *tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-aws-ec2-metadata-token");
    double now = baton_wall_now();
    pthread_mutex_lock(&m->mu);
    int tok_ok = tok && token_valid(m, tok, now);
    pthread_mutex_unlock(&m->mu);
    if ((tok && !tok_ok) || (!tok && m->v2_only)) return reply_status(c, 401);

    char body[512];
    const char *text = NULL;
    int found = 1;
    pthread_mutex_lock(&m->mu);
    if (!strcmp(path, "") || !strcmp(path, "/")) {
        text = "ami-id\nevents/\ninstance-id\ninstance-type\nplacement/\nspot/";
    } else if (!strcmp(path, "instance-id")) {
        text = m->instance_id;
    } else if (!strcmp(path, "instance-type")) {
        text = m->instance_type;
    } else if (!strcmp(path, "ami-id")) {
        text = "ami-0123456789abcdef0";
    } else if (!strcmp(path, "placement/availability-zone")) {
        text = m->zone;
    } else if (!strcmp(path, "placement/region")) {
        text = m->region;
    } else if (!strcmp(path, "spot/instance-action")) {
        if ((found = notice_visible(m, now))) {
            char t[32];
            baton_notice_time_format(notice_time(m, now), t);
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "action", m->sched_action);
            cJSON_AddStringToObject(j, "time", t);
            text = json_text(j, body, sizeof body);
        }
    } else if (!strcmp(path, "spot/termination-time")) {
        if ((found = notice_visible(m, now) && !strcmp(m->sched_action, "terminate"))) {
            baton_notice_time_format(notice_time(m, now), body);
            text = body;
        }
    } else if (!strcmp(path, "events/recommendations/rebalance")) {
        if ((found = m->rebal_at > 0 && now >= m->rebal_at)) {
            char t[32];
            baton_notice_time_format(m->rebal_time, t);
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "noticeTime", t);
            text = json_text(j, body, sizeof body);
        }
    } else {
        found = 0;
    }
    char copy[512];
    if (found) snprintf(copy, sizeof copy, "%s", text);
    pthread_mutex_unlock(&m->mu);
    if (!found) return reply_status(c, 404);
    return reply_text(c, 200, copy);
}

static enum MHD_Result handle_gce(baton_imds *m, struct MHD_Connection *c, const char *path)
{
    const char *flavor = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Metadata-Flavor");
    if (!flavor || strcmp(flavor, "Google")) return reply_status(c, 403);
    if (m->garbage) return reply_garbage(m, c);
    if (strcmp(path, "instance/preempted")) return reply_status(c, 404);
    pthread_mutex_lock(&m->mu);
    int vis = notice_visible(m, baton_wall_now());
    pthread_mutex_unlock(&m->mu);
    return reply(c, 200, "application/text", vis ? "TRUE" : "FALSE", vis ? 4 : 5, "Metadata-Flavor", "Google");
}

static enum MHD_Result azure_error(struct MHD_Connection *c, const char *msg)
{
    char body[256];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", msg);
    json_text(j, body, sizeof body);
    return reply(c, 400, "application/json; charset=utf-8", body, strlen(body), NULL, NULL);
}

static enum MHD_Result handle_azure(baton_imds *m, struct MHD_Connection *c, const char *method, const char *path)
{
    const char *md = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Metadata");
    if (!md || strcasecmp(md, "true")) return azure_error(c, "Bad request. Required metadata header not specified");
    if (!MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "api-version"))
        return azure_error(c, "Bad request. api-version was not specified in the request");
    if (m->garbage) return reply_garbage(m, c);
    if (!strcmp(path, "instance/compute/name")) {
        if (strcmp(method, "GET")) return reply_status(c, 405);
        return reply(c, 200, "text/plain; charset=utf-8", "baton-vm", 8, NULL, NULL);
    }
    if (strcmp(path, "scheduledevents")) return reply_status(c, 404);
    if (!strcmp(method, "POST")) return reply(c, 200, "application/json", "", 0, NULL, NULL);   /* acknowledged */
    if (strcmp(method, "GET")) return reply_status(c, 405);
    double now = baton_wall_now();
    char body[1024];
    cJSON *doc = cJSON_CreateObject();
    pthread_mutex_lock(&m->mu);
    cJSON_AddNumberToObject(doc, "DocumentIncarnation", m->incarnation);
    if (notice_visible(m, now)) {
        double t = notice_time(m, now);
        char nb[32] = "";
        if (now < t) notice_http_time_format(t, nb);
        azure_event(cJSON_AddArrayToObject(doc, "Events"), m->event_id, nb);
    } else {
        cJSON_AddArrayToObject(doc, "Events");
    }
    json_text(doc, body, sizeof body);
    pthread_mutex_unlock(&m->mu);
    return reply(c, 200, "application/json; charset=utf-8", body, strlen(body), NULL, NULL);
}

static enum MHD_Result handle_control(baton_imds *m, struct MHD_Connection *c, const char *method, const char *what)
{
    if (!strcmp(what, "state")) {
        double now = baton_wall_now();
        cJSON *j = cJSON_CreateObject();
        if (!j) return MHD_NO;
        char t[32];
        pthread_mutex_lock(&m->mu);
        cJSON_AddNumberToObject(j, "requests", (double)atomic_load(&m->requests));
        cJSON_AddBoolToObject(j, "scheduled", m->sched);
        cJSON_AddBoolToObject(j, "visible", notice_visible(m, now));
        if (m->sched) {
            cJSON_AddStringToObject(j, "action", m->sched_action);
            baton_notice_time_format(m->sched_at, t);
            cJSON_AddStringToObject(j, "notice_at", t);
            baton_notice_time_format(notice_time(m, now), t);
            cJSON_AddStringToObject(j, "time", t);
        }
        if (m->rebal_at > 0) {
            baton_notice_time_format(m->rebal_time, t);
            cJSON_AddStringToObject(j, "rebalance", t);
        }
        pthread_mutex_unlock(&m->mu);
        char *s = baton_json_print(j, 0);
        cJSON_Delete(j);
        if (!s) return MHD_NO;
        enum MHD_Result r = reply(c, 200, "application/json", s, strlen(s), NULL, NULL);
        free(s);
        return r;
    }
    if (strcmp(method, "PUT") && strcmp(method, "POST")) return reply_status(c, 405);
    if (!strcmp(what, "interrupt")) {
        const char *a = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "action");
        const char *n = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "notice");
        if (a && !valid_action(a)) return reply_text(c, 400, "action: expected terminate, stop or hibernate\n");
        double notice = -1;
        if (n) {
            char *end = NULL;
            notice = strtod(n, &end);
            if (end == n || *end || !(notice >= 0 && notice <= 86400))
                return reply_text(c, 400, "notice: expected seconds in 0..86400\n");
        }
        baton_imds_interrupt(m, a, notice);
        return reply_text(c, 200, "scheduled\n");
    }
    if (!strcmp(what, "rebalance")) {
        baton_imds_rebalance(m);
        return reply_text(c, 200, "recommended\n");
    }
    if (!strcmp(what, "clear")) {
        notice_imds_clear(m);
        return reply_text(c, 200, "cleared\n");
    }
    return reply_status(c, 404);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    static int marker;
    baton_imds *m = cls;
    if (*con_cls == NULL) {   /* headers only so far */
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_size) {       /* request bodies are not used: discard */
        *upload_size = 0;
        return MHD_YES;
    }
    atomic_fetch_add(&m->requests, 1);
    if (!strcmp(url, "/latest/api/token")) return handle_token(m, c, method);
    if (!strncmp(url, "/baton/", 7)) return handle_control(m, c, method, url + 7);
    if (!strncmp(url, "/metadata/", 10)) return handle_azure(m, c, method, url + 10);
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) return reply_status(c, 405);
    if (!strncmp(url, "/latest/meta-data", 17) && (url[17] == '/' || !url[17]))
        return handle_meta(m, c, url[17] ? url + 18 : "");
    if (!strncmp(url, "/computeMetadata/v1/", 20)) return handle_gce(m, c, url + 20);
    if (m->garbage) return reply_garbage(m, c);
    return reply_status(c, 404);
}

/* ---------------------------------------------------------------- life cycle */
int baton_imds_start(const baton_imds_opts *o, baton_imds **out, baton_err *err)
{
    *out = NULL;
    baton_imds_opts def;
    if (!o) {
        baton_imds_opts_default(&def);
        o = &def;
    }
    if (o->action && !valid_action(o->action))
        return baton_err_set(err, BATON_ERR_USAGE, "action '%s': expected terminate, stop or hibernate", o->action);
    if (!(o->notice_seconds >= 0 && o->notice_seconds <= 86400))
        return baton_err_set(err, BATON_ERR_USAGE, "notice lead time %g s: expected 0..86400", o->notice_seconds);
    if (o->token_status && (o->token_status < 400 || o->token_status > 599))
        return baton_err_set(err, BATON_ERR_USAGE, "token status %d: expected an HTTP error status", o->token_status);
    const char *strs[] = {o->instance_id, o->instance_type, o->zone};
    for (int i = 0; i < 3; i++)
        if (strs[i] && (strlen(strs[i]) >= 64 || !*strs[i]))
            return baton_err_set(err, BATON_ERR_USAGE, "instance id, type and zone must be 1..63 characters");
    baton_imds *m = calloc(1, sizeof *m);
    if (!m) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->instance_id, sizeof m->instance_id, "%s", o->instance_id ? o->instance_id : "i-0b22a22eec53b9321");
    snprintf(m->instance_type, sizeof m->instance_type, "%s", o->instance_type ? o->instance_type : "m5.large");
    snprintf(m->zone, sizeof m->zone, "%s", o->zone ? o->zone : "us-east-1a");
    snprintf(m->region, sizeof m->region, "%s", m->zone);
    size_t rl = strlen(m->region);
    if (rl > 1 && m->region[rl - 1] >= 'a' && m->region[rl - 1] <= 'z') m->region[rl - 1] = 0;
    m->v2_only = o->v2_only;
    m->slide = o->slide;
    m->garbage = o->garbage;
    m->token_status = o->token_status;
    snprintf(m->action, sizeof m->action, "%s", o->action ? o->action : "terminate");
    m->notice_s = o->notice_seconds;
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)(baton_wall_now() * 1e6);
    baton_rng_seed(&m->rng, seed);
    double now = baton_wall_now();
    if (o->interrupt_after >= 0) schedule(m, now + o->interrupt_after, NULL, -1);
    if (o->interrupt_at > 0) schedule(m, o->interrupt_at, NULL, -1);
    if (o->rebalance_after >= 0) m->rebal_at = m->rebal_time = now + o->rebalance_after;

    int v6 = 0;
    int fd = baton_net_listen(o->listen ? o->listen : "127.0.0.1:0", o->allow_remote, m->url, sizeof m->url, &m->port,
                              &v6, err);
    if (fd < 0) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        return err ? err->code : BATON_ERR_ARG;
    }
    const struct MHD_OptionItem opts[] = {{MHD_OPTION_CONNECTION_TIMEOUT, 10, NULL},
                                          {MHD_OPTION_CONNECTION_LIMIT, 256, NULL},
                                          {MHD_OPTION_END, 0, NULL}};
    if (!(m->d = http_serve(fd, v6, handler, m, opts, m->url, err))) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        return err ? err->code : BATON_ERR_IO;
    }
    *out = m;
    return BATON_OK;
}

int baton_imds_port(const baton_imds *m) { return m->port; }
const char *baton_imds_url(const baton_imds *m) { return m->url; }
uint64_t baton_imds_requests(const baton_imds *m) { return atomic_load(&((baton_imds *)m)->requests); }

void baton_imds_interrupt(baton_imds *m, const char *action, double notice_s)
{
    pthread_mutex_lock(&m->mu);
    schedule(m, baton_wall_now(), action, notice_s);
    pthread_mutex_unlock(&m->mu);
}

void baton_imds_rebalance(baton_imds *m)
{
    pthread_mutex_lock(&m->mu);
    double now = baton_wall_now();
    /* a new recommendation has a new noticeTime (the format has whole seconds) */
    m->rebal_time = m->rebal_time > 0 && (long)now <= (long)m->rebal_time ? (double)((long)m->rebal_time + 1) : now;
    m->rebal_at = now;
    pthread_mutex_unlock(&m->mu);
}

void notice_imds_clear(baton_imds *m)
{
    pthread_mutex_lock(&m->mu);
    if (m->sched) m->incarnation++;
    m->sched = 0;
    m->rebal_at = m->rebal_time = 0;
    pthread_mutex_unlock(&m->mu);
}

void baton_imds_stop(baton_imds *m)
{
    if (!m) return;
    MHD_stop_daemon(m->d);   /* closes the listening socket */
    pthread_mutex_destroy(&m->mu);
    free(m);
}
