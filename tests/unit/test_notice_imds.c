/* test_notice_imds.c — the metadata emulator over real HTTP (libcurl against its loopback port):
 * static paths, the IMDSv2 token PUT (ttl bounds, X-Forwarded-For), v2-only 401s, expired and
 * unknown tokens, instance-action before/after a scheduled interruption (fixed and sliding time),
 * termination-time, rebalance, the GCE preempted path, Azure's Scheduled Events (and the parser of
 * their answers, HTTP dates), control requests, the token-status and
 * garbage modes, the loopback-only rule, and ISO 8601 parsing. */
#include "baton/notice.h"
#include "check.h"
#include "../../src/notice/notice_internal.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { char *data; size_t len; } body;

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    body *b = ud;
    size_t k = sz * n;
    char *q = realloc(b->data, b->len + k + 1);
    if (!q) return 0;
    memcpy(q + b->len, p, k);
    b->data = q;
    b->len += k;
    b->data[b->len] = 0;
    return k;
}

/* One request; returns the HTTP status (0 on a transport failure); *out gets the body (free it). */
static long req(const char *method, const char *base, const char *path, const char *h1, const char *h2, body *out)
{
    char url[512];
    snprintf(url, sizeof url, "%s%s", base, path);
    CURL *c = curl_easy_init();
    struct curl_slist *hs = NULL;
    if (h1) hs = curl_slist_append(hs, h1);
    if (h2) hs = curl_slist_append(hs, h2);
    body b = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hs);
    curl_easy_cleanup(c);
    if (out) *out = b;
    else free(b.data);
    return status;
}

static long get(const char *base, const char *path, const char *tokhdr, body *out)
{
    return req("GET", base, path, tokhdr, NULL, out);
}

static int body_is(const body *b, const char *s)
{
    return b->data && !strcmp(b->data, s);
}

static void test_time(void)
{
    double t = 0;
    CHECK(baton_notice_time_parse("2017-09-18T08:22:00Z", &t) == 0 && t == 1505722920.0);
    CHECK(baton_notice_time_parse("2017-09-18T10:22:00+02:00", &t) == 0 && t == 1505722920.0);
    CHECK(baton_notice_time_parse("2017-09-18T08:22:00.250Z", &t) == 0 && fabs(t - 1505722920.25) < 1e-6);
    CHECK(baton_notice_time_parse("2017-09-18T08:22:00", &t) == -1);       /* no zone */
    CHECK(baton_notice_time_parse("2017-02-30T08:22:00Z", &t) == -1);      /* no such day */
    CHECK(baton_notice_time_parse("2017-09-18T25:22:00Z", &t) == -1);
    CHECK(baton_notice_time_parse("2017-09-18T08:22:00Zjunk", &t) == -1);
    CHECK(baton_notice_time_parse("soon", &t) == -1);
    CHECK(baton_notice_time_parse("", &t) == -1);
    char s[32];
    baton_notice_time_format(1505722920.9, s);
    CHECK(!strcmp(s, "2017-09-18T08:22:00Z"));
}

/* Answers that are almost right are not notices: each class, not one example. */
static void test_strict_answers(void)
{
    char soon[32], past[32], far[32], old[32], ans[256];
    double now = baton_wall_now(), t = 0, d = 0;
    baton_notice_time_format(now + 120, soon);
    baton_notice_time_format(now - 7200, past);
    baton_notice_time_format(now + 7200, far);
    baton_notice_time_format(now - 8 * 86400.0, old);
    baton_notice_kind k;
#define ACTION(fmt, ...) (snprintf(ans, sizeof ans, fmt, __VA_ARGS__), notice_parse_action(ans, strlen(ans), &k, &d))
    CHECK(ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", soon) && k == BATON_NOTICE_TERMINATE && fabs(d - now - 120) < 1.5);
    CHECK(ACTION("{\"action\":\"stop\",\"time\":\"%s\"}", soon) && k == BATON_NOTICE_STOP);
    /* NUL and control characters inside strings, escapes */
    CHECK(!ACTION("{\"action\": \"terminate\\u0000x\", \"time\": \"%s\"}", soon));
    CHECK(!ACTION("{\"action\": \"termin\\u0061te\", \"time\": \"%s\"}", soon));
    CHECK(!ACTION("{\"action\": \"terminate\x01\", \"time\": \"%s\"}", soon));
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\x7f\"}", soon));
    /* an action that merely starts with (or contains) a known word, or in another case */
    CHECK(!ACTION("{\"action\": \"terminated\", \"time\": \"%s\"}", soon));
    CHECK(!ACTION("{\"action\": \"terminate now\", \"time\": \"%s\"}", soon));
    CHECK(!ACTION("{\"action\": \"Terminate\", \"time\": \"%s\"}", soon));
    /* times: far past, far future, another zone, a lower-case or missing Z, a space for the T */
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", past));
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", far));
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", "1970-01-01T00:00:00Z"));
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", "2999-01-01T00:00:00Z"));
    char zone[40];
    snprintf(zone, sizeof zone, "%.19s+00:00", soon);
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", zone));
    snprintf(zone, sizeof zone, "%.19sz", soon);
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", zone));
    snprintf(zone, sizeof zone, "%.10s %.9s", soon, soon + 11);
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\"}", zone));
    /* members missing, extra or repeated */
    CHECK(!ACTION("{\"action\": \"terminate\", \"time\": \"%s\", \"x\": 1}", soon));
    CHECK(!ACTION("{\"action\": \"terminate\", \"action\": \"stop\", \"time\": \"%s\"}", soon));
    CHECK(!ACTION("{\"time\": \"%s\"}", soon));
#undef ACTION
    char raw[64];
    snprintf(ans, sizeof ans, "{\"noticeTime\": \"%s\"}", past);
    CHECK(notice_parse_rebalance(ans, strlen(ans), &t, raw, sizeof raw) && !strcmp(raw, past));
    snprintf(ans, sizeof ans, "{\"noticeTime\": \"%s\"}", far);
    CHECK(!notice_parse_rebalance(ans, strlen(ans), &t, raw, sizeof raw));
    snprintf(ans, sizeof ans, "{\"noticeTime\": \"%s\"}", old);
    CHECK(!notice_parse_rebalance(ans, strlen(ans), &t, raw, sizeof raw));
    snprintf(ans, sizeof ans, "{\"noticeTime\": \"%s\\u0000\"}", past);
    CHECK(!notice_parse_rebalance(ans, strlen(ans), &t, raw, sizeof raw));
}

static void test_static_and_tokens(void)
{
    baton_imds_opts o;
    baton_imds_opts_default(&o);
    o.instance_id = "i-0123456789abcdef0";
    o.instance_type = "c5.xlarge";
    o.zone = "eu-west-1b";
    baton_imds *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    const char *u = baton_imds_url(m);
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%d", baton_imds_port(m));
    CHECK(baton_imds_port(m) > 0 && !strcmp(u, want));

    body b;
    CHECK(get(u, "/latest/meta-data/instance-id", NULL, &b) == 200 && body_is(&b, "i-0123456789abcdef0"));
    free(b.data);
    CHECK(get(u, "/latest/meta-data/instance-type", NULL, &b) == 200 && body_is(&b, "c5.xlarge"));
    free(b.data);
    CHECK(get(u, "/latest/meta-data/placement/availability-zone", NULL, &b) == 200 && body_is(&b, "eu-west-1b"));
    free(b.data);
    CHECK(get(u, "/latest/meta-data/placement/region", NULL, &b) == 200 && body_is(&b, "eu-west-1"));
    free(b.data);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", NULL, NULL) == 404);
    CHECK(get(u, "/latest/meta-data/spot/termination-time", NULL, NULL) == 404);
    CHECK(get(u, "/latest/meta-data/events/recommendations/rebalance", NULL, NULL) == 404);
    CHECK(get(u, "/latest/meta-data/no/such/item", NULL, NULL) == 404);

    /* token PUT: ttl bounds */
    CHECK(req("PUT", u, "/latest/api/token", NULL, NULL, NULL) == 400);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 0", NULL, NULL) == 400);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 21601", NULL, NULL) == 400);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 12x", NULL, NULL) == 400);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 60", "X-Forwarded-For: 1.2.3.4",
              NULL) == 403);
    CHECK(req("GET", u, "/latest/api/token", NULL, NULL, NULL) == 405);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL, NULL) == 200);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 1", NULL, &b) == 200);
    char hdr[128] = "X-aws-ec2-metadata-token: ";
    CHECK(b.data && b.len > 20 && b.len < 80);
    if (b.data) strncat(hdr, b.data, sizeof hdr - strlen(hdr) - 1);
    free(b.data);
    CHECK(get(u, "/latest/meta-data/instance-id", hdr, NULL) == 200);
    CHECK(get(u, "/latest/meta-data/instance-id", "X-aws-ec2-metadata-token: nope", NULL) == 401);
    usleep(1100 * 1000);   /* the 1 s token expires */
    CHECK(get(u, "/latest/meta-data/instance-id", hdr, NULL) == 401);
    CHECK(baton_imds_requests(m) >= 19);
    baton_imds_stop(m);
}

static void test_v2_only_and_notice(int slide)
{
    baton_imds_opts o;
    baton_imds_opts_default(&o);
    o.v2_only = 1;
    o.slide = slide;
    o.notice_seconds = 90;
    baton_imds *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    const char *u = baton_imds_url(m);
    CHECK(get(u, "/latest/meta-data/instance-id", NULL, NULL) == 401);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", NULL, NULL) == 401);
    body b;
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 300", NULL, &b) == 200);
    char hdr[128] = "X-aws-ec2-metadata-token: ";
    if (b.data) strncat(hdr, b.data, sizeof hdr - strlen(hdr) - 1);
    free(b.data);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", hdr, NULL) == 404);

    /* schedule through the control request; notice lead 90 s from the options */
    double t0 = baton_wall_now();
    CHECK(req("PUT", u, "/baton/interrupt?action=stop", NULL, NULL, NULL) == 200);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", hdr, &b) == 200);
    cJSON *j = b.data ? cJSON_Parse(b.data) : NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "action"), *t = cJSON_GetObjectItemCaseSensitive(j, "time");
    double when = 0;
    CHECK(cJSON_IsString(a) && !strcmp(a->valuestring, "stop"));
    CHECK(cJSON_IsString(t) && baton_notice_time_parse(t->valuestring, &when) == 0);
    CHECK_MSG(when >= floor(t0) + 89 && when <= t0 + 91, "time %f, t0 %f", when, t0);
    char first[32] = "";
    if (cJSON_IsString(t)) snprintf(first, sizeof first, "%s", t->valuestring);
    cJSON_Delete(j);
    free(b.data);
    /* termination-time only for terminate */
    CHECK(get(u, "/latest/meta-data/spot/termination-time", hdr, NULL) == 404);

    usleep(1100 * 1000);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", hdr, &b) == 200);
    int same = b.data && strstr(b.data, first) != NULL;
    CHECK_MSG(slide ? !same : same, "slide %d: first %s, now %s", slide, first, b.data ? b.data : "");
    free(b.data);

    /* terminate with a 30 s notice: termination-time appears, plain text */
    CHECK(req("PUT", u, "/baton/interrupt?action=terminate&notice=30", NULL, NULL, NULL) == 200);
    t0 = baton_wall_now();
    CHECK(get(u, "/latest/meta-data/spot/termination-time", hdr, &b) == 200);
    CHECK(b.data && baton_notice_time_parse(b.data, &when) == 0 && when >= floor(t0) + 29 && when <= t0 + 31);
    free(b.data);
    /* bad control requests */
    CHECK(req("PUT", u, "/baton/interrupt?action=explode", NULL, NULL, NULL) == 400);
    CHECK(req("PUT", u, "/baton/interrupt?notice=-3", NULL, NULL, NULL) == 400);
    CHECK(req("GET", u, "/baton/interrupt", NULL, NULL, NULL) == 405);

    /* rebalance: a new noticeTime each time */
    CHECK(get(u, "/latest/meta-data/events/recommendations/rebalance", hdr, NULL) == 404);
    CHECK(req("PUT", u, "/baton/rebalance", NULL, NULL, NULL) == 200);
    body r1, r2;
    CHECK(get(u, "/latest/meta-data/events/recommendations/rebalance", hdr, &r1) == 200);
    CHECK(r1.data && strstr(r1.data, "\"noticeTime\""));
    baton_imds_rebalance(m);
    CHECK(get(u, "/latest/meta-data/events/recommendations/rebalance", hdr, &r2) == 200);
    CHECK(r1.data && r2.data && strcmp(r1.data, r2.data) != 0);
    free(r1.data);
    free(r2.data);

    /* the state and clear */
    CHECK(get(u, "/baton/state", NULL, &b) == 200 && b.data && strstr(b.data, "\"visible\":true"));
    free(b.data);
    CHECK(req("PUT", u, "/baton/clear", NULL, NULL, NULL) == 200);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", hdr, NULL) == 404);
    CHECK(get(u, "/latest/meta-data/events/recommendations/rebalance", hdr, NULL) == 404);
    baton_imds_stop(m);
}

static void test_azure(void)
{
    /* HTTP dates */
    double t = 0;
    char s[32];
    CHECK(notice_http_time_parse("Mon, 19 Sep 2016 18:29:47 GMT", &t) == 0 && t == 1474309787.0);
    notice_http_time_format(1474309787.0, s);
    CHECK_MSG(!strcmp(s, "Mon, 19 Sep 2016 18:29:47 GMT"), "%s", s);
    CHECK(notice_http_time_parse("Tue, 19 Sep 2016 18:29:47 GMT", &t) == -1);   /* not that weekday */
    CHECK(notice_http_time_parse("Mon, 31 Apr 2016 18:29:47 GMT", &t) == -1);
    CHECK(notice_http_time_parse("Mon, 19 Sep 2016 18:29:47 UTC", &t) == -1);
    CHECK(notice_http_time_parse("2016-09-19T18:29:47Z", &t) == -1);
    CHECK(notice_http_time_parse("", &t) == -1);

    /* the parser: this machine's Preempt or Terminate only, NotBefore plausible */
    double now = 1474309787.0 - 40;
    baton_notice_kind k;
    char id[64];
    const char *ok = "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"e1\",\"EventType\":\"Preempt\","
                     "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm1\"],\"EventStatus\":\"Scheduled\","
                     "\"NotBefore\":\"Mon, 19 Sep 2016 18:29:47 GMT\",\"Description\":\"\",\"EventSource\":\"Platform\","
                     "\"DurationInSeconds\":-1}]}";
    CHECK(notice_parse_azure(ok, strlen(ok), "vm1", now, &k, &t, id, sizeof id) == 1 &&
          k == BATON_NOTICE_PREEMPTED && t == 1474309787.0 && !strcmp(id, "e1"));
    CHECK(notice_parse_azure(ok, strlen(ok), NULL, now, &k, &t, NULL, 0) == 1);
    CHECK(notice_parse_azure(ok, strlen(ok), "vm2", now, &k, &t, NULL, 0) == 0);   /* another machine's */
    CHECK(notice_parse_azure(ok, strlen(ok), "vm1", now - 7200, &k, &t, NULL, 0) == 0);   /* implausible */
    const char *reboot = "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"e1\",\"EventType\":\"Reboot\","
                         "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"vm1\"],\"EventStatus\":\"Scheduled\","
                         "\"NotBefore\":\"Mon, 19 Sep 2016 18:29:47 GMT\"}]}";
    CHECK(notice_parse_azure(reboot, strlen(reboot), "vm1", now, &k, &t, NULL, 0) == 0);   /* keeps the machine */
    const char *term = "{\"DocumentIncarnation\":3,\"Events\":[{\"EventId\":\"e2\",\"EventType\":\"Terminate\","
                       "\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"a\",\"vm1\"],\"EventStatus\":\"Started\","
                       "\"NotBefore\":\"\"}]}";
    CHECK(notice_parse_azure(term, strlen(term), "vm1", now, &k, &t, NULL, 0) == 1 && k == BATON_NOTICE_TERMINATE &&
          t == now);
    const char *bad[] = {"{\"Events\":[]}", "[]", "{\"DocumentIncarnation\":1,\"Events\":{}}", "",
                         "{\"DocumentIncarnation\":1,\"Events\":[{\"EventType\":\"Preempt\"}]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(notice_parse_azure(bad[i], strlen(bad[i]), NULL, now, &k, &t, NULL, 0) == 0);

    /* the emulator */
    baton_imds *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_imds_start(NULL, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    const char *u = baton_imds_url(m), *se = "/metadata/scheduledevents?api-version=2020-07-01";
    body b;
    CHECK(get(u, se, NULL, &b) == 400 && b.data && strstr(b.data, "metadata header"));
    free(b.data);
    CHECK(get(u, "/metadata/scheduledevents", "Metadata: true", &b) == 400 && b.data && strstr(b.data, "api-version"));
    free(b.data);
    CHECK(get(u, se, "Metadata: true", &b) == 200 && body_is(&b, "{\"DocumentIncarnation\":0,\"Events\":[]}"));
    free(b.data);
    CHECK(get(u, "/metadata/instance/compute/name?api-version=2021-02-01&format=text", "Metadata: true", &b) == 200 &&
          body_is(&b, "baton-vm"));
    free(b.data);
    double t0 = baton_wall_now();
    baton_imds_interrupt(m, NULL, 30);
    CHECK(get(u, se, "Metadata: true", &b) == 200 && b.data);
    CHECK_MSG(b.data && notice_parse_azure(b.data, b.len, "baton-vm", baton_wall_now(), &k, &t, id, sizeof id) == 1 &&
                  k == BATON_NOTICE_PREEMPTED && t > t0 + 28.9 && t < t0 + 30.1 && strlen(id) == 36,
              "%s", b.data ? b.data : "(none)");
    CHECK(b.data && strstr(b.data, "\"DocumentIncarnation\":1,") && strstr(b.data, "\"EventStatus\":\"Scheduled\""));
    free(b.data);
    CHECK(req("POST", u, se, "Metadata: true", NULL, NULL) == 200);   /* an acknowledgement */
    baton_imds_interrupt(m, NULL, 0);   /* its time has come: Started, no NotBefore */
    CHECK(get(u, se, "Metadata: true", &b) == 200 && b.data && strstr(b.data, "\"EventStatus\":\"Started\"") &&
          strstr(b.data, "\"NotBefore\":\"\"") && strstr(b.data, "\"DocumentIncarnation\":2,"));
    free(b.data);
    CHECK(req("PUT", u, "/baton/clear", NULL, NULL, NULL) == 200);
    CHECK(get(u, se, "Metadata: true", &b) == 200 && body_is(&b, "{\"DocumentIncarnation\":3,\"Events\":[]}"));
    free(b.data);
    baton_imds_stop(m);
}

static void test_scheduled_and_gce(void)
{
    baton_imds_opts o;
    baton_imds_opts_default(&o);
    o.interrupt_after = 0.5;
    o.action = "hibernate";
    baton_imds *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    const char *u = baton_imds_url(m);
    body b;
    CHECK(get(u, "/latest/meta-data/spot/instance-action", NULL, NULL) == 404);
    CHECK(get(u, "/computeMetadata/v1/instance/preempted", NULL, NULL) == 403);
    CHECK(get(u, "/computeMetadata/v1/instance/preempted", "Metadata-Flavor: Google", &b) == 200 &&
          body_is(&b, "FALSE"));
    free(b.data);
    usleep(700 * 1000);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", NULL, &b) == 200 && b.data &&
          strstr(b.data, "\"hibernate\""));
    free(b.data);
    CHECK(get(u, "/computeMetadata/v1/instance/preempted", "Metadata-Flavor: Google", &b) == 200 &&
          body_is(&b, "TRUE"));
    free(b.data);
    baton_imds_stop(m);

    /* interrupt_at in the past: visible at once; rebalance_after 0 */
    baton_imds_opts_default(&o);
    o.interrupt_at = baton_wall_now() - 5;
    o.rebalance_after = 0;
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    u = baton_imds_url(m);
    CHECK(get(u, "/latest/meta-data/spot/instance-action", NULL, NULL) == 200);
    CHECK(get(u, "/latest/meta-data/events/recommendations/rebalance", NULL, NULL) == 200);
    baton_imds_stop(m);
}

static void test_modes(void)
{
    baton_imds_opts o;
    baton_imds_opts_default(&o);
    o.token_status = 403;
    baton_imds *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    const char *u = baton_imds_url(m);
    CHECK(req("PUT", u, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 60", NULL, NULL) == 403);
    CHECK(get(u, "/latest/meta-data/instance-id", NULL, NULL) == 200);
    baton_imds_stop(m);

    /* garbage: 200 everywhere, never a well-formed notice */
    baton_imds_opts_default(&o);
    o.garbage = 1;
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    if (!m) return;
    u = baton_imds_url(m);
    int well_formed = 0, ok200 = 0;
    size_t biggest = 0;
    for (int i = 0; i < 12; i++) {
        body b;
        long st = get(u, "/latest/meta-data/spot/instance-action", NULL, &b);
        ok200 += st == 200;
        if (b.len > biggest) biggest = b.len;
        cJSON *j = b.data ? cJSON_Parse(b.data) : NULL;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "time");
        double when;
        if (cJSON_IsString(t) && baton_notice_time_parse(t->valuestring, &when) == 0) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "action");
            if (cJSON_IsString(a) && !strcmp(a->valuestring, "terminate")) well_formed++;
        }
        cJSON_Delete(j);
        free(b.data);
    }
    CHECK_EQ_U(ok200, 12);
    CHECK_EQ_U(well_formed, 0);
    CHECK(biggest >= 256 * 1024);
    /* control requests still work */
    CHECK(req("PUT", u, "/baton/interrupt", NULL, NULL, NULL) == 200);
    baton_imds_stop(m);

    /* only loopback unless allowed (a policy: BATON_ERR_ARG); bad specs are usage errors */
    baton_imds_opts_default(&o);
    o.listen = "0.0.0.0:0";
    CHECK(baton_imds_start(&o, &m, &err) == BATON_ERR_ARG && strstr(err.msg, "loopback"));
    o.listen = "127.0.0.1";
    CHECK(baton_imds_start(&o, &m, &err) == BATON_ERR_USAGE);
    o.listen = "127.0.0.1:70000";
    CHECK(baton_imds_start(&o, &m, &err) == BATON_ERR_USAGE);
    o.listen = "[::1]:0";
    if (baton_imds_start(&o, &m, &err) == BATON_OK) {   /* hosts without IPv6 skip this */
        CHECK(!strncmp(baton_imds_url(m), "http://[::1]:", 13));
        CHECK(get(baton_imds_url(m), "/latest/meta-data/instance-id", NULL, NULL) == 200);
        baton_imds_stop(m);
    }
    baton_imds_opts_default(&o);
    o.action = "explode";
    CHECK(baton_imds_start(&o, &m, &err) == BATON_ERR_USAGE);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_time();
    test_strict_answers();
    test_static_and_tokens();
    test_v2_only_and_notice(0);
    test_v2_only_and_notice(1);
    test_scheduled_and_gce();
    test_azure();
    test_modes();
    curl_global_cleanup();
    CHECK_DONE();
}
