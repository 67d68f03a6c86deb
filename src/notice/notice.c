/* notice.c — the interruption-notice watcher: one thread that polls the metadata service(s) and
 * turns SIGTERM into a notice; readers see a latched state through atomics.
 *
 * What it polls, every poll_s seconds, each request limited to timeout_s (connect included):
 *   EC2 (when an endpoint is configured — AWS_EC2_METADATA_DISABLED notwithstanding — or when DMI
 *   says EC2 and AWS_EC2_METADATA_DISABLED is not true):
 *     PUT /latest/api/token (ttl 21600, renewed a minute before it expires); a 403/404/405 answer,
 *     or a 200 whose body is not a token, switches to IMDSv1 (no token); a 401 on a GET drops the
 *     token and starts over. Then GET spot/instance-action and events/recommendations/rebalance.
 *   GCE (when an endpoint is configured, or DMI says GCE): GET instance/preempted with
 *     Metadata-Flavor: Google; "TRUE" is a notice with a 30 s deadline.
 *   Azure (when an endpoint is configured, or DMI says Azure): GET instance/compute/name once (up to
 *     three tries), then metadata/scheduledevents with Metadata: true every round; a Preempt or
 *     Terminate event naming this machine is a notice whose deadline is its NotBefore (azure.c).
 * A terminal notice needs a 200 whose body is a JSON object with "action" terminate|stop|hibernate
 * and a "time" that parses as ISO 8601; anything else (timeouts, refused connections, 5xx, HTML,
 * JSON of another shape, bodies over 4 KiB) is ignored. The first terminal notice is latched: its
 * kind, deadline and source never change afterwards (a sliding mock's later times are ignored),
 * and the thread stops polling. A rebalance recommendation counts once per distinct noticeTime.
 *
 * SIGTERM and SIGINT (Ctrl-C): while at least one watcher with handle_sigterm runs, a process-wide
 * handler (replacing the previous one) records the arrival time and writes a byte to a pipe that is
 * never drained while a signal is pending, so every watcher's poll() wakes and latches a
 * BATON_NOTICE_SIGNAL notice (source "sigterm" or "sigint"; deadline = arrival + sigterm_grace_s).
 * When the last such watcher stops, the previous dispositions come back — unless a signal came:
 * then the handler stays, so a trainer that is committing its last checkpoint and exiting 75 is not
 * killed by a second SIGTERM (SIGKILL still ends it). A SIGINT after the first signal ends the
 * process at once (the default action, re-raised): the second Ctrl-C of a user who will not wait
 * for the checkpoint. SIGINT is left alone when it was ignored at start (a background job of a
 * non-interactive shell), as a program started under such a shell should. A guest watcher
 * (baton_notice_opts.guest: the Python module's, in a program that goes on after it stops) changes
 * no thread's mask, and when the last watcher stops and it is a guest, the previous dispositions
 * come back even after a signal came (the signal was delivered as a notice; the program decides).
 * Otherwise the signals are taken by the watcher threads alone: baton_notice_start blocks them in the calling
 * thread, so every thread that thread starts afterwards (oneDNN's OpenMP team, decode workers,
 * checkpoint writers) inherits the block; when the last such watcher stops, the calling thread's
 * mask is as it was before the first one started (start and stop from the same thread). A handler interrupting a oneDNN kernel on a compute thread was
 * seen to corrupt the computation: 1-2 % of trainings that received one SIGTERM aborted with heap
 * corruption, and 8 of 20 that received 40 in 0.2 s crashed (SIGSEGV, SIGFPE, abort); with the
 * signal kept on the watcher thread, none did (tests/cli/test_notice.sh sends such a storm). Senders
 * signal the process (kill, Slurm, systemd, Kubernetes); a signal aimed at one blocked thread
 * (raise, pthread_kill) waits until that thread unblocks it.
 *
 * Concurrency: the terminal event is written once under mu, then published by a release store of
 * its kind; baton_notice_poll reads it after an acquire load, without locks or system calls. */
#include "notice_internal.h"

#include <cJSON.h>
#include "../http/http.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define BODY_MAX 4096
#define TOKEN_TTL 21600
#define GCE_NOTICE_S 30.0

enum { MODE_UNKNOWN = 0, MODE_V2, MODE_V1 };

struct baton_notice_watcher {
    double poll_s, timeout_s, grace_s;
    int watching, sig, guest;
    char ec2[512], gce[512], azure[512];
    char vm[128];                       /* Azure: this machine's name ("" until known) */
    int vm_tries;
    pthread_t th;
    int th_started;
    int wake[2];
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    baton_notice_event term;            /* written once, before term_kind is published */
    atomic_int term_kind;
    baton_notice_event rebal;           /* the latest recommendation (under mu) */
    atomic_uint_fast64_t rebal_count;
    uint64_t rebal_polled, rebal_waited;   /* what poll() / wait() have reported */
    atomic_uint_fast64_t rounds;
    /* the polling thread's own */
    CURL *h;
    int mode;
    char token[128];
    double token_exp;
    char rebal_last[64];
    char body[BODY_MAX + 1];
    baton_buf ans;              /* the answer as it arrives, kept from request to request */
    size_t blen;
};

/* ---------------------------------------------------------------- SIGTERM and SIGINT, process-wide */
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t sig_once = PTHREAD_ONCE_INIT;
static int sig_pipe[2] = {-1, -1};
static int sig_users;
static int sig_mask_users;            /* users that blocked the signals in their thread (not guests) */
static int sig_caller_blocked;        /* SIGTERM was blocked in the first starter's thread already */
static int sig_int_caller_blocked;    /* the same for SIGINT */
static int sig_installed;             /* our handlers are in place (sig_old* hold the previous ones) */
static int sig_int_taken;             /* SIGINT is ours (it was not ignored when we started) */
static atomic_int sig_active;         /* a watcher is listening; otherwise the handler ignores */
static struct sigaction sig_old, sig_old_int;
static volatile sig_atomic_t sig_seen;   /* 0, or the first signal that came (SIGTERM or SIGINT) */
static atomic_llong sig_ms;   /* arrival, unix milliseconds */

static void sig_pipe_init(void)
{
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) sig_pipe[0] = sig_pipe[1] = -1;
}

static void on_sigterm(int s)
{
    int e = errno;
    if (s == SIGINT && sig_seen) {
        /* a second Ctrl-C (or one during a stop that a notice began): the user wants out now */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGINT, &dfl, NULL);
        raise(SIGINT);
    }
    if (atomic_load(&sig_active) && !sig_seen) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        atomic_store(&sig_ms, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        sig_seen = s;
        if (sig_pipe[1] >= 0) {
            ssize_t r = write(sig_pipe[1], "T", 1);
            (void)r;
        }
    }
    errno = e;
}

static int sig_register(int guest, baton_err *err)
{
    pthread_once(&sig_once, sig_pipe_init);
    if (sig_pipe[0] < 0) return baton_err_set(err, BATON_ERR_IO, "notice watcher: pipe: %s", strerror(errno));
    pthread_mutex_lock(&sig_mu);
    if (sig_users++ == 0) {
        if (!sig_installed) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_sigterm;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESTART;
            sigaction(SIGTERM, &sa, &sig_old);
            /* SIGINT too, unless whoever started us ignores it (a background job of a shell script:
             * then Ctrl-C is not meant for us) */
            sigaction(SIGINT, NULL, &sig_old_int);
            sig_int_taken = sig_old_int.sa_handler != SIG_IGN;
            if (sig_int_taken) sigaction(SIGINT, &sa, NULL);
            sig_installed = 1;
        }
        atomic_store(&sig_active, 1);
    }
    if (!guest) {   /* a guest leaves every thread's mask alone */
        if (sig_mask_users++ == 0) {
            sigset_t cur;
            pthread_sigmask(SIG_SETMASK, NULL, &cur);
            sig_caller_blocked = sigismember(&cur, SIGTERM) == 1;
            sig_int_caller_blocked = sigismember(&cur, SIGINT) == 1;
        }
        sigset_t t;
        sigemptyset(&t);
        sigaddset(&t, SIGTERM);
        sigaddset(&t, SIGINT);
        pthread_sigmask(SIG_BLOCK, &t, NULL);
    }
    pthread_mutex_unlock(&sig_mu);
    return BATON_OK;
}

static void sig_unregister(int guest)
{
    pthread_mutex_lock(&sig_mu);
    if (!guest && --sig_mask_users == 0) {
        sigset_t t;
        sigemptyset(&t);
        if (!sig_caller_blocked) sigaddset(&t, SIGTERM);
        if (!sig_int_caller_blocked) sigaddset(&t, SIGINT);
        pthread_sigmask(SIG_UNBLOCK, &t, NULL);
    }
    if (--sig_users == 0) {
        atomic_store(&sig_active, 0);
        if (!sig_seen || guest) {
            sigaction(SIGTERM, &sig_old, NULL);
            if (sig_int_taken) sigaction(SIGINT, &sig_old_int, NULL);
            sig_installed = 0;
        }
        char c[16];
        while (read(sig_pipe[0], c, sizeof c) > 0) {
        }
        sig_seen = 0;
    }
    pthread_mutex_unlock(&sig_mu);
}

/* ---------------------------------------------------------------- options */
static double env_seconds(const char *name, double def)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0 && x <= 86400)) {
        baton_log(BATON_LOG_WARN, "%s='%s' is not a number of seconds; using %g", name, v, def);
        return def;
    }
    return x;
}

static const char *env_str(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void baton_notice_opts_default(baton_notice_opts *o)
{
    memset(o, 0, sizeof *o);
    o->endpoint = env_str("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    const char *dis = env_str("AWS_EC2_METADATA_DISABLED");
    o->ec2_disabled = dis && !strcasecmp(dis, "true");
    o->gce_endpoint = env_str("BATON_GCE_METADATA_ENDPOINT");
    if (!o->gce_endpoint) o->gce_endpoint = env_str("GCE_METADATA_HOST");
    o->dmi_dir = env_str("BATON_DMI_DIR");
    o->poll_s = env_seconds("BATON_NOTICE_POLL_S", 5);
    o->timeout_s = env_seconds("BATON_NOTICE_TIMEOUT_S", 1);
    o->azure_endpoint = env_str("BATON_AZURE_METADATA_ENDPOINT");
    o->sigterm_grace_s = env_str("BATON_TERM_GRACE_S") ? env_seconds("BATON_TERM_GRACE_S", 30)
                                                       : env_seconds("BATON_SIGTERM_GRACE_S", 30);
    o->handle_sigterm = 1;
}

/* A base URL without trailing slashes; "http://" is added to a bare host[:port]. */
/* An endpoint as a base URL: http(s)://HOST[:PORT][/...], or HOST:PORT (the form of GCE_METADATA_HOST
 * and of the metadata mock's address), which gets http://. A bare word is not an address. */
static int base_url(const char *in, char *out, size_t cap, const char *what, baton_err *err)
{
    const char *scheme = strstr(in, "://") ? "" : "http://";
    if (*scheme == 0 && strncmp(in, "http://", 7) && strncmp(in, "https://", 8))
        return baton_err_set(err, BATON_ERR_ARG, "%s '%s': expected an http:// or https:// URL", what, in);
    const char *host = *scheme ? in : strstr(in, "://") + 3;
    size_t hl = strcspn(host, "/?#");
    const char *colon = memrchr(host, ':', hl), *close = memchr(host, ']', hl);
    int has_port = colon && (!close || colon > close);
    size_t name_len = has_port ? (size_t)(colon - host) : hl;
    size_t port_len = has_port ? hl - name_len - 1 : 0;
    int port_ok = !has_port || (port_len >= 1 && port_len <= 5 && strspn(colon + 1, "0123456789") >= port_len &&
                                atoi(colon + 1) >= 1 && atoi(colon + 1) <= 65535);
    if (name_len == 0 || !port_ok || (*scheme && !has_port))
        return baton_err_set(err, BATON_ERR_ARG, "%s '%s': expected an http:// or https:// URL, or HOST:PORT", what, in);
    if (snprintf(out, cap, "%s%s", scheme, in) >= (int)cap)
        return baton_err_set(err, BATON_ERR_ARG, "%s: URL too long", what);
    size_t n = strlen(out);
    while (n && out[n - 1] == '/') out[--n] = 0;
    return BATON_OK;
}

int notice_targets(const baton_notice_opts *o, char *ec2, size_t ec2_cap, char *gce, size_t gce_cap,
                         baton_err *err)
{
    int rc, flags = o->handle_sigterm ? BATON_NOTICE_WATCH_SIGTERM : 0, cloud = -1;
    ec2[0] = gce[0] = 0;
    /* an explicit endpoint is polled even with AWS_EC2_METADATA_DISABLED=true: the variable turns
     * off the discovery of the real service, not an address the user named */
    if (o->endpoint) {
        if ((rc = base_url(o->endpoint, ec2, ec2_cap, "EC2 metadata endpoint", err))) return rc;
    } else if (!o->ec2_disabled && (cloud = notice_cloud_detect(o->dmi_dir)) == BATON_CLOUD_EC2) {
        snprintf(ec2, ec2_cap, "http://169.254.169.254");
    }
    if (ec2[0]) flags |= BATON_NOTICE_WATCH_EC2;
    if (o->gce_endpoint) {
        if ((rc = base_url(o->gce_endpoint, gce, gce_cap, "GCE metadata endpoint", err))) return rc;
    } else if ((cloud >= 0 ? cloud : notice_cloud_detect(o->dmi_dir)) == BATON_CLOUD_GCE) {
        snprintf(gce, gce_cap, "http://169.254.169.254");
    }
    if (gce[0]) flags |= BATON_NOTICE_WATCH_GCE;
    return flags;
}

int notice_azure_target(const baton_notice_opts *o, char *azure, size_t cap, baton_err *err)
{
    azure[0] = 0;
    if (o->azure_endpoint) {
        int rc = base_url(o->azure_endpoint, azure, cap, "Azure metadata endpoint", err);
        if (rc) return rc;
    } else if (notice_cloud_detect(o->dmi_dir) == BATON_CLOUD_AZURE) {
        snprintf(azure, cap, "http://169.254.169.254");
    }
    return azure[0] ? BATON_NOTICE_WATCH_AZURE : 0;
}

/* ---------------------------------------------------------------- HTTP (the polling thread) */
static int stopping(void *ctx) { return atomic_load(&((baton_notice_watcher *)ctx)->stop); }

/* One request; returns the HTTP status, or 0 when no complete answer came (timeout, refused,
 * oversized, stopped). The body is in w->body. */
static long http(baton_notice_watcher *w, const char *method, const char *base, const char *path,
                 const char *h1, const char *h2)
{
    char url[1024];
    if (snprintf(url, sizeof url, "%s%s", base, path) >= (int)sizeof url) return 0;
    const char *hdr[3] = {h1 ? h1 : h2, h1 ? h2 : NULL, NULL};
    http_req q = {.method = method, .url = url, .headers = hdr, .max_answer = BODY_MAX, .timeout_s = w->timeout_s,
                  .connect_s = w->timeout_s, .no_proxy = 1 /* metadata never goes through a proxy */,
                  .stop = stopping, .ctx = w};
    baton_err err = {0};
    long status = 0;
    w->ans.len = 0;
    if (http_request(w->h, &q, &status, &w->ans, &err)) baton_log(BATON_LOG_DEBUG, "notice watcher: %s", err.msg);
    w->blen = status ? w->ans.len : 0;
    if (w->blen) memcpy(w->body, w->ans.data, w->blen);
    w->body[w->blen] = 0;
    return status;
}

/* ---------------------------------------------------------------- latching */
static void latch(baton_notice_watcher *w, baton_notice_kind kind, double deadline, double seen_at, const char *src)
{
    pthread_mutex_lock(&w->mu);
    if (atomic_load(&w->term_kind) == BATON_NOTICE_NONE) {
        w->term.kind = kind;
        w->term.deadline = deadline;
        w->term.seen_at = seen_at;
        snprintf(w->term.source, sizeof w->term.source, "%s", src);
        atomic_store_explicit(&w->term_kind, (int)kind, memory_order_release);
        char t[32] = "unknown";
        if (deadline > 0) baton_notice_time_format(deadline, t);
        if (kind == BATON_NOTICE_SIGNAL)
            baton_log(BATON_LOG_WARN, "notice: %s, deadline %s (in %.0f s)%s", src, t,
                      deadline > 0 ? deadline - baton_wall_now() : 0.0,
                      strcmp(src, "sigint") ? "" : "; checkpointing, Ctrl-C again to stop at once");
        else
            baton_log(BATON_LOG_WARN, "notice: %s (%s), deadline %s (in %.0f s)", baton_notice_kind_name(kind), src, t,
                      deadline > 0 ? deadline - baton_wall_now() : 0.0);
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

static const char *source_name(const baton_notice_watcher *w)
{
    return w->mode == MODE_V2 ? "imds-v2" : "imds-v1";
}

/* An answer is believed only when it is exactly what AWS documents: one JSON object with exactly
 * the expected members, strings free of escapes and control characters (a "\u0000" would cut a
 * string short, so "terminate\u0000x" reads as "terminate"), times written as AWS writes them
 * (YYYY-MM-DDTHH:MM:SS, optional fraction, "Z": no other zone) and plausible: an action's time
 * within NOTICE_SKEW_S of now either way, a rebalance recommendation's no later than that and at
 * most NOTICE_REBALANCE_AGE_S old. Anything else is not a notice. */
#define NOTICE_SKEW_S 3600.0
#define NOTICE_REBALANCE_AGE_S (7 * 86400.0)

static int plain_body(const char *body, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)body[i];
        if (c == '\\' || (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r')) return 0;
    }
    return 1;
}

static int aws_time(const char *s, double *t)
{
    size_t n = strlen(s);
    if (n < 20 || s[10] != 'T' || s[n - 1] != 'Z' || (s[19] != 'Z' && s[19] != '.')) return -1;
    return baton_notice_time_parse(s, t);
}

static int members(const cJSON *j)
{
    int n = 0;
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next) n++;
    return n;
}

int notice_parse_action(const char *body, size_t len, baton_notice_kind *kind, double *deadline)
{
    cJSON *j = plain_body(body, len) ? baton_jr_value(body, len) : NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "action");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "time");
    baton_notice_kind k = BATON_NOTICE_NONE;
    double when = 0, now = baton_wall_now();
    if (cJSON_IsObject(j) && members(j) == 2 && cJSON_IsString(a) && cJSON_IsString(t) && !aws_time(t->valuestring, &when) &&
        fabs(when - now) <= NOTICE_SKEW_S) {
        if (!strcmp(a->valuestring, "terminate")) k = BATON_NOTICE_TERMINATE;
        else if (!strcmp(a->valuestring, "stop")) k = BATON_NOTICE_STOP;
        else if (!strcmp(a->valuestring, "hibernate")) k = BATON_NOTICE_HIBERNATE;
    }
    cJSON_Delete(j);
    *kind = k;
    if (k != BATON_NOTICE_NONE) *deadline = when;
    return k != BATON_NOTICE_NONE;
}

int notice_parse_rebalance(const char *body, size_t len, double *notice_time, char *raw, size_t raw_cap)
{
    cJSON *j = plain_body(body, len) ? baton_jr_value(body, len) : NULL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "noticeTime");
    double when = 0, now = baton_wall_now();
    int ok = cJSON_IsObject(j) && members(j) == 1 && cJSON_IsString(t) && strlen(t->valuestring) < raw_cap &&
             !aws_time(t->valuestring, &when) && when <= now + NOTICE_SKEW_S && when >= now - NOTICE_REBALANCE_AGE_S;
    if (ok) {
        snprintf(raw, raw_cap, "%s", t->valuestring);
        *notice_time = when;
    }
    cJSON_Delete(j);
    return ok;
}

/* A terminal notice in w->body. */
static void ec2_action(baton_notice_watcher *w)
{
    baton_notice_kind k;
    double when;
    if (notice_parse_action(w->body, w->blen, &k, &when)) latch(w, k, when, baton_wall_now(), source_name(w));
    else baton_log(BATON_LOG_DEBUG, "notice watcher: instance-action answer is not a notice: %.80s", w->body);
}

/* A rebalance recommendation in w->body; new when its noticeTime is new. */
static void ec2_rebalance(baton_notice_watcher *w)
{
    char raw[sizeof w->rebal_last];
    double when;
    if (!notice_parse_rebalance(w->body, w->blen, &when, raw, sizeof raw) || !strcmp(raw, w->rebal_last)) return;
    memcpy(w->rebal_last, raw, sizeof raw);
    pthread_mutex_lock(&w->mu);
    w->rebal = (baton_notice_event){.kind = BATON_NOTICE_REBALANCE, .deadline = 0, .seen_at = when};
    snprintf(w->rebal.source, sizeof w->rebal.source, "%s", source_name(w));
    atomic_fetch_add(&w->rebal_count, 1);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    baton_log(BATON_LOG_INFO, "notice: rebalance recommendation (noticeTime %s) from %s", raw, source_name(w));
}

/* A token is printable ASCII without spaces, like EC2's base64 tokens. */
static int token_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 128) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~') return 0;
    return 1;
}

static void ec2_round(baton_notice_watcher *w)
{
    double now = baton_now();
    if (w->mode != MODE_V1 && (w->mode == MODE_UNKNOWN || now > w->token_exp)) {
        char ttl[64];
        snprintf(ttl, sizeof ttl, "X-aws-ec2-metadata-token-ttl-seconds: %d", TOKEN_TTL);
        long st = http(w, "PUT", w->ec2, "/latest/api/token", ttl, NULL);
        if (st == 0) return;   /* nothing answers: nothing to learn this round */
        if (st == 200 && token_ok(w->body, w->blen)) {
            memcpy(w->token, w->body, w->blen + 1);   /* token_ok bounds it below 128 */
            w->token_exp = now + TOKEN_TTL - 60;
            w->mode = MODE_V2;
        } else if (st == 403 || st == 404 || st == 405 || st == 200) {
            if (w->mode != MODE_V1) baton_log(BATON_LOG_DEBUG, "notice watcher: token PUT answered %ld; IMDSv1", st);
            w->mode = MODE_V1;
            w->token[0] = 0;
        } else {
            return;   /* 5xx, 400, 401: try again next round */
        }
    }
    char hdr[192] = "";
    if (w->mode == MODE_V2) snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", w->token);
    const char *h = hdr[0] ? hdr : NULL;
    long st = http(w, "GET", w->ec2, "/latest/meta-data/spot/instance-action", h, NULL);
    if (st == 401) {   /* token expired or v2 required: start over next round */
        w->mode = MODE_UNKNOWN;
        w->token[0] = 0;
        return;
    }
    if (st == 200) ec2_action(w);
    if (atomic_load(&w->term_kind) != BATON_NOTICE_NONE || atomic_load(&w->stop)) return;
    st = http(w, "GET", w->ec2, "/latest/meta-data/events/recommendations/rebalance", h, NULL);
    if (st == 200) ec2_rebalance(w);
}

static void gce_round(baton_notice_watcher *w)
{
    long st = http(w, "GET", w->gce, "/computeMetadata/v1/instance/preempted", "Metadata-Flavor: Google", NULL);
    size_t n = w->blen;
    while (n && (w->body[n - 1] == '\n' || w->body[n - 1] == '\r')) n--;
    if (st == 200 && n == 4 && !memcmp(w->body, "TRUE", 4)) {
        double now = baton_wall_now();
        latch(w, BATON_NOTICE_PREEMPTED, now + GCE_NOTICE_S, now, "gce");
    }
}

/* Azure: this machine's name once (its events are the ones that name it), then Scheduled Events. */
static void azure_round(baton_notice_watcher *w)
{
    if (!w->vm[0] && w->vm_tries < 3) {
        w->vm_tries++;
        long st = http(w, "GET", w->azure, "/metadata/instance/compute/name?api-version=2021-02-01&format=text",
                       "Metadata: true", NULL);
        size_t n = w->blen, i = 0;
        while (i < n && w->body[i] > ' ' && w->body[i] <= '~') i++;
        if (st == 200 && n && i == n && n < sizeof w->vm) memcpy(w->vm, w->body, n + 1);
        if (atomic_load(&w->stop)) return;
    }
    long st = http(w, "GET", w->azure, "/metadata/scheduledevents?api-version=2020-07-01", "Metadata: true", NULL);
    baton_notice_kind k;
    double when;
    char id[64];
    if (st == 200 && notice_parse_azure(w->body, w->blen, w->vm, baton_wall_now(), &k, &when, id, sizeof id)) {
        baton_log(BATON_LOG_DEBUG, "notice watcher: Azure event %s for %s", id, w->vm[0] ? w->vm : "this machine");
        latch(w, k, when, baton_wall_now(), "azure");
    }
}

/* ---------------------------------------------------------------- the thread */
static void check_signal(baton_notice_watcher *w)
{
    if (w->sig && sig_seen && atomic_load(&w->term_kind) == BATON_NOTICE_NONE) {
        double at = (double)atomic_load(&sig_ms) / 1000.0;
        latch(w, BATON_NOTICE_SIGNAL, w->grace_s > 0 ? at + w->grace_s : 0, at, sig_seen == SIGINT ? "sigint" : "sigterm");
    }
}

static void *watch(void *arg)
{
    baton_notice_watcher *w = arg;
    if (w->sig) {   /* this thread, and only watcher threads, take SIGTERM and SIGINT */
        sigset_t t;
        sigemptyset(&t);
        sigaddset(&t, SIGTERM);
        sigaddset(&t, SIGINT);
        pthread_sigmask(SIG_UNBLOCK, &t, NULL);
    }
    while (!atomic_load(&w->stop)) {
        check_signal(w);
        if (atomic_load(&w->term_kind) == BATON_NOTICE_NONE) {
            if (w->watching & BATON_NOTICE_WATCH_EC2) ec2_round(w);
            check_signal(w);
            if ((w->watching & BATON_NOTICE_WATCH_GCE) && atomic_load(&w->term_kind) == BATON_NOTICE_NONE &&
                !atomic_load(&w->stop))
                gce_round(w);
            if ((w->watching & BATON_NOTICE_WATCH_AZURE) && atomic_load(&w->term_kind) == BATON_NOTICE_NONE &&
                !atomic_load(&w->stop))
                azure_round(w);
            pthread_mutex_lock(&w->mu);
            atomic_fetch_add(&w->rounds, 1);
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
        if (atomic_load(&w->stop)) break;
        struct pollfd fds[2] = {{.fd = w->wake[0], .events = POLLIN}, {.fd = sig_pipe[0], .events = POLLIN}};
        /* the signal pipe stays readable once a SIGTERM came: watch it only until latched */
        int nfds = w->sig && atomic_load(&w->term_kind) == BATON_NOTICE_NONE ? 2 : 1;
        int ms = atomic_load(&w->term_kind) == BATON_NOTICE_NONE ? (int)(w->poll_s * 1000) : -1;
        if (ms == 0) ms = 1;
        int r = poll(fds, (nfds_t)nfds, ms);
        if (r > 0 && (fds[0].revents & POLLIN)) {
            char c[16];
            while (read(w->wake[0], c, sizeof c) > 0) {
            }
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- public */
int baton_notice_start(const baton_notice_opts *o, baton_notice_watcher **out, baton_err *err)
{
    *out = NULL;
    baton_notice_opts def;
    if (!o) {
        baton_notice_opts_default(&def);
        o = &def;
    }
    if (!(o->poll_s > 0 && o->poll_s <= 3600) || !(o->timeout_s > 0 && o->timeout_s <= 600) ||
        !(o->sigterm_grace_s >= 0))
        return baton_err_set(err, BATON_ERR_ARG,
                             "notice watcher: poll every 0..3600 s and a request timeout of 0..600 s expected");
    baton_notice_watcher *w = calloc(1, sizeof *w);
    if (!w) return baton_err_set(err, BATON_ERR_NOMEM, "notice watcher: out of memory");
    w->poll_s = o->poll_s;
    w->timeout_s = o->timeout_s;
    w->grace_s = o->sigterm_grace_s;
    w->wake[0] = w->wake[1] = -1;
    int rc = notice_targets(o, w->ec2, sizeof w->ec2, w->gce, sizeof w->gce, err);
    if (rc < 0) {
        free(w);
        return rc;
    }
    w->watching = rc & ~BATON_NOTICE_WATCH_SIGTERM;
    if ((rc = notice_azure_target(o, w->azure, sizeof w->azure, err)) < 0) {
        free(w);
        return rc;
    }
    w->watching |= rc;
    rc = BATON_OK;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        rc = baton_err_set(err, BATON_ERR_IO, "notice watcher: pipe: %s", strerror(errno));
        goto fail;
    }
    if (w->watching & (BATON_NOTICE_WATCH_EC2 | BATON_NOTICE_WATCH_GCE | BATON_NOTICE_WATCH_AZURE)) {
        if (http_global_init(err) || !(w->h = curl_easy_init())) {
            rc = baton_err_set(err, BATON_ERR_NET, "notice watcher: libcurl initialisation failed");
            goto fail;
        }
    }
    if (o->handle_sigterm) {
        if ((rc = sig_register(o->guest, err))) goto fail;
        w->sig = 1;
        w->guest = o->guest;
        w->watching |= BATON_NOTICE_WATCH_SIGTERM;
    }
    if (pthread_create(&w->th, NULL, watch, w) != 0) {
        rc = baton_err_set(err, BATON_ERR_IO, "notice watcher: cannot start its thread");
        goto fail;
    }
    w->th_started = 1;
    if (w->watching & BATON_NOTICE_WATCH_EC2) baton_log(BATON_LOG_DEBUG, "notice watcher: EC2 metadata at %s", w->ec2);
    if (w->watching & BATON_NOTICE_WATCH_GCE) baton_log(BATON_LOG_DEBUG, "notice watcher: GCE metadata at %s", w->gce);
    if (w->watching & BATON_NOTICE_WATCH_AZURE)
        baton_log(BATON_LOG_DEBUG, "notice watcher: Azure metadata at %s", w->azure);
    *out = w;
    return BATON_OK;
fail:
    baton_notice_stop(w);
    return rc;
}

int baton_notice_poll(baton_notice_watcher *w, baton_notice_event *terminal, int *rebalance_new)
{
    if (rebalance_new) {
        uint64_t c = atomic_load_explicit(&w->rebal_count, memory_order_relaxed);
        *rebalance_new = c != w->rebal_polled;
        w->rebal_polled = c;
    }
    int k = atomic_load_explicit(&w->term_kind, memory_order_acquire);
    if (k == BATON_NOTICE_NONE) {
        if (terminal) memset(terminal, 0, sizeof *terminal);
        return 0;
    }
    if (terminal) *terminal = w->term;
    return 1;
}

int baton_notice_wait_any(baton_notice_watcher *w, double timeout_s, int rebalance_too, baton_notice_event *ev)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (timeout_s >= 0) {
        double s = (double)dl.tv_sec + (double)dl.tv_nsec * 1e-9 + timeout_s;
        dl.tv_sec = (time_t)s;
        dl.tv_nsec = (long)((s - (double)dl.tv_sec) * 1e9);
    }
    int got = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (atomic_load(&w->term_kind) != BATON_NOTICE_NONE) {
            if (ev) *ev = w->term;
            got = 1;
            break;
        }
        uint64_t c = atomic_load(&w->rebal_count);
        if (rebalance_too && c != w->rebal_waited) {
            w->rebal_waited = c;
            if (ev) *ev = w->rebal;
            got = 1;
            break;
        }
        int r = timeout_s >= 0 ? pthread_cond_timedwait(&w->cv, &w->mu, &dl) : pthread_cond_wait(&w->cv, &w->mu);
        if (r == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&w->mu);
    if (!got && ev) memset(ev, 0, sizeof *ev);
    return got;
}

int baton_notice_wait(baton_notice_watcher *w, double timeout_s, baton_notice_event *ev)
{
    return baton_notice_wait_any(w, timeout_s, 0, ev);
}

int baton_notice_watching(const baton_notice_watcher *w) { return w->watching; }

uint64_t notice_rounds(const baton_notice_watcher *w)
{
    return atomic_load(&((baton_notice_watcher *)w)->rounds);
}

void baton_notice_stop(baton_notice_watcher *w)
{
    if (!w) return;
    atomic_store(&w->stop, 1);
    if (w->th_started) {
        if (w->wake[1] >= 0) {
            ssize_t r = write(w->wake[1], "s", 1);
            (void)r;
        }
        pthread_join(w->th, NULL);
    }
    if (w->sig) sig_unregister(w->guest);
    if (w->h) curl_easy_cleanup(w->h);
    baton_buf_free(&w->ans);
    if (w->wake[0] >= 0) close(w->wake[0]);
    if (w->wake[1] >= 0) close(w->wake[1]);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

const char *baton_notice_kind_name(baton_notice_kind k)
{
    switch (k) {
    case BATON_NOTICE_NONE: return "none";
    case BATON_NOTICE_REBALANCE: return "rebalance";
    case BATON_NOTICE_TERMINATE: return "terminate";
    case BATON_NOTICE_STOP: return "stop";
    case BATON_NOTICE_HIBERNATE: return "hibernate";
    case BATON_NOTICE_SIGNAL: return "sigterm";
    case BATON_NOTICE_PREEMPTED: return "preempted";
    }
    return "unknown";
}
