/* league_client.c — `baton race submit --server URL` (league.h, "the client"): find the
 * racer's newest verified checkpoint, ask the league its limit (GET /api/server), write the
 * checkpoint's policy alone as a checkpoint of its own (no value network or optimizer: what
 * evaluation needs), tar it in memory, POST it to a league's /api/submit with the racer's token
 * (libcurl), and follow the submission at /api/submissions/ID until it is done or failed.
 *
 * Contract: only the one checkpoint's policy is sent (not the run's other checkpoints); the token
 * goes only in the Authorization header, never in a URL or a message; every answer is checked
 * (status, JSON, fields) before it is believed. */
#include "league_internal.h"
#include "baton/ckpt.h"
#include "../http/http.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One request: GET (body NULL) or POST of body; *status and the answer's bytes into out. No
 * "Expect:" override: above 1 MiB libcurl asks for 100 Continue, and the league answers a refusal
 * (a wrong token, a submission waiting) before the body is sent. */
static int request(const char *url, const char *token, const baton_buf *body, long *status, baton_buf *out, baton_err *err)
{
    char auth[120];
    const char *hdr[3] = {NULL, NULL, NULL};
    int k = 0;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr[k++] = auth;
    }
    if (body) hdr[k++] = "Content-Type: application/x-tar";
    http_req q = {.method = body ? "POST" : "GET", .url = url, .headers = hdr, .body = body ? body->data : NULL,
                  .body_len = body ? body->len : 0, .max_answer = (size_t)1 << 20, .timeout_s = 600, .connect_s = 10};
    int rc = http_request(NULL, &q, status, out, err);
    memset(auth, 0, sizeof auth);
    return rc;
}

/* The league's answer about a submission, checked field by field (league_internal.h). */
/* A number in [lo, hi], else NAN. */
static double num_in(const cJSON *o, const char *key, double lo, double hi)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) && x->valuedouble >= lo && x->valuedouble <= hi ? x->valuedouble : NAN;
}

/* A done submission's "result" (the entry) and "entries": believed only when every field checks. */
static void read_result(const cJSON *j, baton_league_submission *s)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "result");
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(r, "alias"), *tr = cJSON_GetObjectItemCaseSensitive(r, "track");
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(r, "completed");
    double best = num_in(r, "best_lap_s", 0, 1e9), total = num_in(r, "total_s", 0, 1e9);
    double resets = num_in(r, "resets", 0, 1e9), it = num_in(r, "iteration", 0, 9007199254740992.0);
    double rank = num_in(r, "rank", 1, 1e9), n = num_in(j, "entries", 0, 1e9);
    if (!cJSON_IsObject(r) || !cJSON_IsString(al) || !cJSON_IsString(tr) || !cJSON_IsBool(done) || isnan(best) ||
        isnan(total) || isnan(resets) || isnan(it) || isnan(n))
        return;
    baton_league_entry *e = &s->result;
    memset(e, 0, sizeof *e);
    e->id = s->entry;
    snprintf(e->alias, sizeof e->alias, "%s", al->valuestring);
    snprintf(e->track, sizeof e->track, "%s", tr->valuestring);
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(j, "format");
    baton_league_format f = BATON_LEAGUE_TIME_TRIAL;
    if (cJSON_IsString(fm) && baton_league_format_parse(fm->valuestring, &f, NULL)) return;
    e->format = s->format = f;
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(j, "race");
    int race = BATON_RACE_TIME_TRIAL;   /* a server from before race types: its entries are time trials */
    if (cJSON_IsString(rt) && baton_league_race_parse(rt->valuestring, &race, NULL)) return;
    e->race = s->race = race;
    e->completed = cJSON_IsTrue(done);
    e->best_lap_s = best, e->total_s = total, e->resets = (uint32_t)resets, e->iteration = (uint64_t)it;
    e->rank = isnan(rank) ? 0 : (uint32_t)rank;
    s->entries = (size_t)n;
    s->has_result = 1;
}

int league_submission_read(const uint8_t *data, size_t len, const char *url, baton_league_submission *s, baton_err *err)
{
    cJSON *j = baton_jr_value((const char *)data, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id"), *st = cJSON_GetObjectItemCaseSensitive(j, "state");
    const cJSON *entry = cJSON_GetObjectItemCaseSensitive(j, "entry"), *why = cJSON_GetObjectItemCaseSensitive(j, "reason");
    const cJSON *att = cJSON_GetObjectItemCaseSensitive(j, "attempts");
    int k = -1;
    for (int i = 0; cJSON_IsString(st) && i < 4; i++)
        if (!strcmp(st->valuestring, baton_league_state_name((baton_league_state)i))) k = i;
    if (!cJSON_IsNumber(id) || id->valuedouble < 1 || id->valuedouble > 9007199254740992.0 || k < 0) {
        cJSON_Delete(j);
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a submission's answer (id, state)", url);
    }
    memset(s, 0, sizeof *s);
    s->id = (int64_t)id->valuedouble;
    s->state = (baton_league_state)k;
    if (cJSON_IsNumber(entry) && entry->valuedouble >= 1 && entry->valuedouble <= 9007199254740992.0)
        s->entry = (int64_t)entry->valuedouble;   /* beyond 2^53 not an entry of any league (never cast) */
    const cJSON *racer = cJSON_GetObjectItemCaseSensitive(j, "racer");
    if (cJSON_IsNumber(racer) && racer->valuedouble >= 1 && racer->valuedouble <= 9007199254740992.0)
        s->racer = (int64_t)racer->valuedouble;   /* head-to-model: the racer entered */
    if (cJSON_IsNumber(att) && att->valuedouble >= 0 && att->valuedouble < 1e6) s->attempts = (uint32_t)att->valuedouble;
    if (cJSON_IsString(why)) snprintf(s->reason, sizeof s->reason, "%s", why->valuestring);
    read_result(j, s);
    cJSON_Delete(j);
    return BATON_OK;
}

/* An error answer: the server's {"error": ...} and its status. */
static int answer_error(const char *what, long status, const baton_buf *b, baton_err *err)
{
    cJSON *j = baton_jr_value((const char *)b->data, b->len);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    int rc = baton_err_set(err, status == 401 || status == 403 ? BATON_ERR_DENIED : status == 409 ? BATON_ERR_BUSY : BATON_ERR_NET,
                           "%s: the league answered %ld: %s", what, status, cJSON_IsString(e) ? e->valuestring : "(no message)");
    cJSON_Delete(j);
    return rc;
}

static int post(const baton_league_remote_opts *o, const baton_buf *tar, baton_league_submission *s, baton_err *err)
{
    CURL *h = http_global_init(err) ? NULL : curl_easy_init();
    char *a = h ? curl_easy_escape(h, o->alias, 0) : NULL, *t = h ? curl_easy_escape(h, o->track, 0) : NULL;
    char url[2048];
    int rc = a && t ? BATON_OK : baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    if (!rc && (o->race == BATON_LEAGUE_H2M   /* rated, not timed: no format */
                    ? snprintf(url, sizeof url, "%s/api/submit?alias=%s&track=%s&race=head-to-model", o->server, a, t)
                    : snprintf(url, sizeof url, "%s/api/submit?alias=%s&track=%s&race=%s&format=%s", o->server, a, t,
                               baton_league_race_name(o->race), baton_league_format_name(o->format))) >= (int)sizeof url)
        rc = baton_err_set(err, BATON_ERR_ARG, "the submission's URL is too long");
    curl_free(a);
    curl_free(t);
    if (h) curl_easy_cleanup(h);
    if (rc) return rc;
    long status = 0;
    baton_buf ans = {0};
    if (!(rc = request(url, o->token, tar, &status, &ans, err)))
        rc = status == 202 ? league_submission_read(ans.data, ans.len, url, s, err) : answer_error("POST /api/submit", status, &ans, err);
    baton_buf_free(&ans);
    return rc;
}

/* The server's limit on an archive (GET /api/server's "max_upload_bytes"); a league that predates
 * the question (404) takes the default. */
static int server_limit(const baton_league_remote_opts *o, size_t *max, baton_err *err)
{
    char url[2048];
    if (snprintf(url, sizeof url, "%s/api/server", o->server) >= (int)sizeof url)
        return baton_err_set(err, BATON_ERR_ARG, "the server's URL is too long");
    long status = 0;
    baton_buf ans = {0};
    int rc = request(url, NULL, NULL, &status, &ans, err);
    if (!rc && status == 404) *max = BATON_LEAGUE_UPLOAD_MAX;
    else if (!rc && status != 200) rc = answer_error(url, status, &ans, err);
    else if (!rc) {
        cJSON *j = baton_jr_value((const char *)ans.data, ans.len);
        double m = num_in(j, "max_upload_bytes", 1024, 4294967296.0);
        cJSON_Delete(j);
        if (isnan(m)) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no \"max_upload_bytes\" of 1024 .. 4294967296", url);
        else *max = (size_t)m;
    }
    baton_buf_free(&ans);
    return rc;
}

/* The archive sent: the policy alone (baton_ppo_policy_export, which finds and verifies the
 * checkpoint o->ckpt names) in a folder of its own under $TMPDIR, removed before this returns. */
static int pack(const baton_league_remote_opts *o, size_t max, baton_buf *tar, baton_err *err)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    if (snprintf(dir, sizeof dir, "%s/baton-submit-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)sizeof dir)
        return baton_err_set(err, BATON_ERR_ARG, "TMPDIR is too long");
    if (!mkdtemp(dir)) return baton_err_set(err, BATON_ERR_IO, "%s: cannot make a folder: %s", dir, strerror(errno));
    int rc = baton_ppo_policy_export(o->ckpt, dir, path, sizeof path, err);
    baton_ckpt_info *in = NULL;
    size_t n = 0;   /* the sizes its MANIFEST gives (just written and committed: not verified again) */
    if (!rc && !(rc = baton_ckpt_list(dir, 0, &in, &n, err)) && n == 1 && in[0].bytes > max)
        rc = baton_err_set(err, BATON_ERR_ARG, "%s: its policy is %llu bytes, over the %zu bytes the league at %s takes", o->ckpt,
                           (unsigned long long)in[0].bytes, max, o->server);
    free(in);
    const char *base = strrchr(path, '/');
    if (!rc) rc = league_tar_write(tar, path, base ? base + 1 : path, max, err);
    baton_remove_tree(dir);
    return rc;
}

int baton_league_remote_submit(const baton_league_remote_opts *o, baton_league_submission *s, baton_err *err)
{
    memset(s, 0, sizeof *s);
    if (!o->server || strncmp(o->server, "http", 4) || !o->token || !o->ckpt || !o->track)
        return baton_err_set(err, BATON_ERR_USAGE, "a server (http://HOST:PORT), a token, a checkpoint and a track are required");
    if (baton_league_alias_check(o->alias, err)) return err->code;
    size_t max = 0;
    baton_buf tar = {0};
    int rc = server_limit(o, &max, err);
    if (!rc) rc = pack(o, max, &tar, err);
    if (!rc) rc = post(o, &tar, s, err);
    if (!rc) baton_log(BATON_LOG_INFO, "race submit: the policy of %s (%zu bytes) sent as submission %lld", o->ckpt, tar.len,
                       (long long)s->id);
    baton_buf_free(&tar);
    if (rc) return rc;
    char url[2048];
    snprintf(url, sizeof url, "%s/api/submissions/%lld", o->server, (long long)s->id);
    double until = league_now() + o->wait_s;
    while (o->wait_s > 0 && (s->state == BATON_LEAGUE_QUEUED || s->state == BATON_LEAGUE_RUNNING) && league_now() < until) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
        long status = 0;
        baton_buf ans = {0};
        int64_t id = s->id;
        if (!(rc = request(url, NULL, NULL, &status, &ans, err)))
            rc = status == 200 ? league_submission_read(ans.data, ans.len, url, s, err) : answer_error(url, status, &ans, err);
        baton_buf_free(&ans);
        if (rc) return rc;
        if (s->id != id) return baton_err_set(err, BATON_ERR_FORMAT, "%s: the answer is about submission %lld", url, (long long)s->id);
    }
    return BATON_OK;
}
