/* test_notice_watcher.c — the notice watcher against the metadata emulator on loopback: IMDSv2 token
 * flow, IMDSv1 fallback (token PUT answered 403 / 404), a v2-only service, latching of a sliding
 * deadline (and no more polling once latched), rebalance once per recommendation, GCE preempted,
 * Azure's Scheduled Events (a Preempt's NotBefore as the deadline),
 * SIGTERM (handler restored afterwards, no stale latch in the next watcher), and the failure
 * modes that must never be a notice nor block the caller: garbage answers, a closed port, a
 * listening socket that never answers. Also DMI detection on fake folders and
 * AWS_EC2_METADATA_DISABLED (which an explicit endpoint overrides). No test touches anything but 127.0.0.1. */
#include "../../src/notice/notice_internal.h"
#include "baton/notice.h"
#include "check.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char dmi_none[256];   /* a folder that names no cloud */

static void opts_for(baton_notice_opts *o, const char *endpoint)
{
    baton_notice_opts_default(o);
    o->endpoint = endpoint;
    o->gce_endpoint = NULL;
    o->azure_endpoint = NULL;
    o->ec2_disabled = 0;
    o->poll_s = 0.05;
    o->timeout_s = 0.5;
    o->handle_sigterm = 0;
    o->dmi_dir = dmi_none;
}

static baton_imds *imds(int v2_only, int slide, int token_status, int garbage)
{
    baton_imds_opts o;
    baton_imds_opts_default(&o);
    o.v2_only = v2_only;
    o.slide = slide;
    o.token_status = token_status;
    o.garbage = garbage;
    baton_imds *m = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_imds_start(&o, &m, &err) == BATON_OK, "%s", err.msg);
    return m;
}

/* Wait until the watcher has done n more rounds (bounded). */
static void rounds(baton_notice_watcher *w, uint64_t n)
{
    uint64_t want = notice_rounds(w) + n;
    for (int i = 0; i < 400 && notice_rounds(w) < want; i++) usleep(10000);
}

/* A watcher of the EC2 metadata service at url (the test's options); NULL, with the check failed,
 * when it does not start. */
static baton_notice_watcher *watch(const char *url)
{
    baton_notice_opts o;
    opts_for(&o, url);
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    return w;
}

static void test_flow(int v2_only, int slide, int token_status, const char *want_source)
{
    baton_imds *m = imds(v2_only, slide, token_status, 0);
    if (!m) return;
    baton_notice_watcher *w = watch(baton_imds_url(m));
    if (!w) {
        baton_imds_stop(m);
        return;
    }
    CHECK(baton_notice_watching(w) == BATON_NOTICE_WATCH_EC2);
    rounds(w, 3);
    baton_notice_event ev;
    int rb = -1;
    CHECK(baton_notice_poll(w, &ev, &rb) == 0 && ev.kind == BATON_NOTICE_NONE && rb == 0);
    CHECK(baton_notice_wait(w, 0.1, &ev) == 0);

    double t0 = baton_wall_now();
    baton_imds_interrupt(m, "stop", 100);
    CHECK(baton_notice_wait(w, 3, &ev) == 1);
    CHECK(ev.kind == BATON_NOTICE_STOP);
    CHECK_MSG(!strcmp(ev.source, want_source), "source %s, want %s", ev.source, want_source);
    CHECK_MSG(ev.deadline >= floor(t0) + 99 && ev.deadline <= t0 + 101, "deadline %f, t0 %f", ev.deadline, t0);
    CHECK(ev.seen_at >= t0 - 0.01 && ev.seen_at <= baton_wall_now());
    baton_notice_event ev2;
    CHECK(baton_notice_poll(w, &ev2, NULL) == 1 && !memcmp(&ev, &ev2, sizeof ev));

    /* latched: a later, different notice changes nothing and the service is no longer polled */
    uint64_t served = baton_imds_requests(m);
    baton_imds_interrupt(m, "terminate", 5);
    usleep(slide ? 1200 * 1000 : 300 * 1000);   /* a sliding time has moved on by a second */
    CHECK(baton_notice_poll(w, &ev2, NULL) == 1 && ev2.kind == BATON_NOTICE_STOP && ev2.deadline == ev.deadline);
    CHECK_MSG(baton_imds_requests(m) <= served + 3, "served %llu then %llu", (unsigned long long)served,
              (unsigned long long)baton_imds_requests(m));
    baton_notice_stop(w);
    baton_imds_stop(m);
}

/* A token the service no longer knows (its 401): the watcher asks for a new one and goes on
 * watching, rather than keeping the dead token until its own expiry hours later. The service is
 * restarted on the same port (its tokens are gone), v2-only. */
static void test_token_renewal(void)
{
    baton_imds *m = imds(1, 0, 0, 0);
    if (!m) return;
    int port = baton_imds_port(m);
    char url[64], listen[64];
    snprintf(url, sizeof url, "%s", baton_imds_url(m));
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    baton_notice_watcher *w = watch(url);
    if (!w) {
        baton_imds_stop(m);
        return;
    }
    rounds(w, 3);
    baton_imds_stop(m);
    baton_imds_opts io;
    baton_err err = {0};
    baton_imds_opts_default(&io);
    io.v2_only = 1;
    io.listen = listen;
    m = NULL;
    for (int i = 0; i < 50 && baton_imds_start(&io, &m, &err) != BATON_OK; i++) usleep(20000);
    CHECK_MSG(m != NULL, "restart on port %d: %s", port, err.msg);
    if (m) {
        rounds(w, 3);   /* the old token meets 401s */
        baton_imds_interrupt(m, "terminate", 100);
        baton_notice_event ev;
        CHECK_MSG(baton_notice_wait(w, 3, &ev) == 1 && ev.kind == BATON_NOTICE_TERMINATE,
                  "no notice through a renewed token");
        baton_imds_stop(m);
    }
    baton_notice_stop(w);
}

static void test_rebalance(void)
{
    baton_imds *m = imds(0, 0, 0, 0);
    if (!m) return;
    baton_notice_opts o;
    opts_for(&o, baton_imds_url(m));
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (!w) return;
    baton_notice_event ev;
    int rb = -1;
    baton_imds_rebalance(m);
    CHECK(baton_notice_wait_any(w, 3, 1, &ev) == 1 && ev.kind == BATON_NOTICE_REBALANCE && ev.deadline == 0);
    CHECK(baton_notice_poll(w, &ev, &rb) == 0 && rb == 1);
    rounds(w, 4);   /* the same recommendation is still served: not new */
    CHECK(baton_notice_poll(w, &ev, &rb) == 0 && rb == 0);
    CHECK(baton_notice_wait_any(w, 0.2, 1, &ev) == 0);
    baton_imds_rebalance(m);
    rounds(w, 3);
    CHECK(baton_notice_poll(w, &ev, &rb) == 0 && rb == 1);
    CHECK(baton_notice_poll(w, &ev, &rb) == 0 && rb == 0);
    baton_notice_stop(w);
    baton_imds_stop(m);
}

/* Polls that must stay without a notice; each call to poll must return at once: it never waits
 * for the watcher's requests (timeouts of 0.2-0.5 s here). Judged by the median call (under 1 ms)
 * and the worst (under 0.1 s): a single call stretched by a preemption on 2 busy cores, or by the
 * sanitizers, is not a blocking poll; a poll that waited on a request would take its timeout. */
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quiet_for(baton_notice_watcher *w, uint64_t nrounds, double max_s)
{
    static double took[8192];
    size_t n = 0;
    double t0 = baton_now(), worst = 0;
    uint64_t want = notice_rounds(w) + nrounds;
    int notices = 0;
    while (notice_rounds(w) < want && baton_now() - t0 < max_s) {
        baton_notice_event ev;
        int rb = 0;
        double a = baton_now();
        notices += baton_notice_poll(w, &ev, &rb) + rb;
        double d = baton_now() - a;
        if (d > worst) worst = d;
        if (n < sizeof took / sizeof *took) took[n++] = d;
        usleep(2000);
    }
    CHECK_MSG(notice_rounds(w) >= want, "only %llu rounds in %.1f s", (unsigned long long)notice_rounds(w),
              max_s);
    CHECK_EQ_U(notices, 0);
    qsort(took, n, sizeof *took, cmp_d);
    double median = n ? took[n / 2] : 0;
    CHECK_MSG(n > 0 && median < 0.001 && worst < 0.1, "%zu polls: median %.6f s, worst %.6f s", n, median, worst);
}

static void test_garbage(void)
{
    baton_imds *m = imds(0, 0, 0, 1);
    if (!m) return;
    baton_imds_interrupt(m, "terminate", 120);   /* scheduled, but every answer is junk */
    baton_imds_rebalance(m);
    baton_notice_opts o;
    opts_for(&o, baton_imds_url(m));
    o.gce_endpoint = baton_imds_url(m);
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (!w) return;
    quiet_for(w, 12, 10);
    CHECK(baton_imds_requests(m) >= 30);   /* it did talk to the service and read its answers */
    baton_notice_stop(w);
    baton_imds_stop(m);
}

static void test_unreachable_and_slow(void)
{
    /* a closed port */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    close(fd);
    baton_notice_opts o;
    opts_for(&o, url);
    o.gce_endpoint = url;
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (w) {
        quiet_for(w, 5, 5);
        baton_notice_stop(w);
    }

    /* a listening socket that never accepts nor answers */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = 0;
    al = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    opts_for(&o, url);
    o.timeout_s = 0.2;
    w = NULL;
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (w) {
        quiet_for(w, 3, 5);
        CHECK(baton_notice_wait(w, 0.3, NULL) == 0);
        double t0 = baton_now();
        baton_notice_stop(w);   /* a request may be in flight: stopping aborts it */
        CHECK_MSG(baton_now() - t0 < 0.5, "stop took %.3f s", baton_now() - t0);
    }
    close(fd);
}

static void test_gce(void)
{
    baton_imds *m = imds(0, 0, 0, 0);
    if (!m) return;
    baton_notice_opts o;
    opts_for(&o, NULL);
    o.ec2_disabled = 1;
    o.gce_endpoint = baton_imds_url(m);
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (!w) return;
    CHECK(baton_notice_watching(w) == BATON_NOTICE_WATCH_GCE);
    rounds(w, 2);
    CHECK(baton_notice_poll(w, NULL, NULL) == 0);
    baton_imds_interrupt(m, "terminate", 120);
    baton_notice_event ev;
    CHECK(baton_notice_wait(w, 3, &ev) == 1 && ev.kind == BATON_NOTICE_PREEMPTED && !strcmp(ev.source, "gce"));
    CHECK(fabs(ev.deadline - ev.seen_at - 30) < 0.01);
    baton_notice_stop(w);
    baton_imds_stop(m);
}

static void test_azure(void)
{
    baton_imds *m = imds(0, 0, 0, 0);
    if (!m) return;
    baton_notice_opts o;
    opts_for(&o, NULL);
    o.ec2_disabled = 1;
    o.azure_endpoint = baton_imds_url(m);
    baton_notice_watcher *w = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (!w) return;
    CHECK(baton_notice_watching(w) == BATON_NOTICE_WATCH_AZURE);
    rounds(w, 2);
    CHECK(baton_notice_poll(w, NULL, NULL) == 0);
    double t0 = baton_wall_now();
    baton_imds_interrupt(m, NULL, 45);
    baton_notice_event ev;
    CHECK(baton_notice_wait(w, 3, &ev) == 1 && ev.kind == BATON_NOTICE_PREEMPTED && !strcmp(ev.source, "azure"));
    /* NotBefore has whole seconds */
    CHECK_MSG(ev.deadline > t0 + 43.9 && ev.deadline < t0 + 45.1, "deadline %.2f s after the interruption",
              ev.deadline - t0);
    baton_notice_stop(w);
    baton_imds_stop(m);

    /* garbage from an Azure endpoint is never a notice */
    m = imds(0, 0, 0, 1);
    if (!m) return;
    o.azure_endpoint = baton_imds_url(m);
    CHECK_MSG(baton_notice_start(&o, &w, &err) == BATON_OK, "%s", err.msg);
    if (w) {
        rounds(w, 12);
        CHECK(baton_notice_poll(w, NULL, NULL) == 0);
        baton_notice_stop(w);
    }
    baton_imds_stop(m);
}

static void test_sigterm(void)
{
    baton_notice_opts o;
    opts_for(&o, NULL);
    o.handle_sigterm = 1;
    o.sigterm_grace_s = 45;
    baton_notice_watcher *w1 = NULL, *w2 = NULL;
    baton_err err = {0};
    CHECK_MSG(baton_notice_start(&o, &w1, &err) == BATON_OK, "%s", err.msg);
    CHECK_MSG(baton_notice_start(&o, &w2, &err) == BATON_OK, "%s", err.msg);
    if (!w1 || !w2) return;
    CHECK(baton_notice_watching(w1) == BATON_NOTICE_WATCH_SIGTERM);
    CHECK(baton_notice_wait(w1, 0.1, NULL) == 0);
    double t0 = baton_wall_now();
    kill(getpid(), SIGTERM);   /* process-directed, as Slurm, systemd and Kubernetes send it */
    baton_notice_event e1, e2;
    CHECK(baton_notice_wait(w1, 2, &e1) == 1 && e1.kind == BATON_NOTICE_SIGNAL && !strcmp(e1.source, "sigterm"));
    CHECK(baton_notice_wait(w2, 2, &e2) == 1 && e2.kind == BATON_NOTICE_SIGNAL);
    CHECK(e1.seen_at >= t0 - 0.01 && fabs(e1.deadline - e1.seen_at - 45) < 0.01);
    baton_notice_stop(w1);
    struct sigaction cur;
    sigaction(SIGTERM, NULL, &cur);
    CHECK(cur.sa_handler != SIG_DFL);   /* w2 still holds it */
    baton_notice_stop(w2);
    sigaction(SIGTERM, NULL, &cur);
    CHECK(cur.sa_handler != SIG_DFL);   /* kept after a SIGTERM: a second one must not kill an exiting trainer */
    kill(getpid(), SIGTERM);            /* ignored: no watcher, and no stale latch for the next one */
    sigset_t m;
    pthread_sigmask(SIG_SETMASK, NULL, &m);
    CHECK(!sigismember(&m, SIGTERM));   /* the caller's mask is back */
    /* the next watcher does not inherit the old signal */
    CHECK_MSG(baton_notice_start(&o, &w1, &err) == BATON_OK, "%s", err.msg);
    if (w1) {
        usleep(100 * 1000);
        CHECK(baton_notice_poll(w1, NULL, NULL) == 0);
        baton_notice_stop(w1);
        sigaction(SIGTERM, NULL, &cur);
        CHECK(cur.sa_handler == SIG_DFL);   /* no SIGTERM this time: the old disposition is back */
    }
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_dmi_and_env(void)
{
    char base[] = "/tmp/baton-dmi-XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    char d[6][300];
    for (int i = 0; i < 6; i++) {
        snprintf(d[i], sizeof d[i], "%s/%d", base, i);
        mkdir(d[i], 0755);
    }
    write_file(d[0], "sys_vendor", "Amazon EC2\n");
    write_file(d[1], "board_asset_tag", "i-0123456789abcdef0\n");
    write_file(d[1], "sys_vendor", "Something\n");
    write_file(d[2], "bios_version", "4.11.amazon\n");
    write_file(d[2], "sys_vendor", "Xen\n");
    write_file(d[3], "product_name", "Google Compute Engine\n");
    write_file(d[3], "sys_vendor", "Google\n");
    write_file(d[4], "sys_vendor", "QEMU\n");
    write_file(d[4], "product_name", "Standard PC (Q35 + ICH9, 2009)\n");
    write_file(d[4], "board_asset_tag", "\n");
    write_file(d[5], "sys_vendor", "Microsoft Corporation\n");
    write_file(d[5], "chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77\n");
    CHECK(notice_cloud_detect(d[0]) == BATON_CLOUD_EC2);
    CHECK(notice_cloud_detect(d[1]) == BATON_CLOUD_EC2);
    CHECK(notice_cloud_detect(d[2]) == BATON_CLOUD_EC2);
    CHECK(notice_cloud_detect(d[3]) == BATON_CLOUD_GCE);
    CHECK(notice_cloud_detect(d[4]) == BATON_CLOUD_UNKNOWN);
    CHECK(notice_cloud_detect(d[5]) == BATON_CLOUD_AZURE);
    CHECK(notice_cloud_detect(base) == BATON_CLOUD_UNKNOWN);   /* no DMI files at all */
    setenv("BATON_DMI_DIR", d[0], 1);
    CHECK(notice_cloud_detect(NULL) == BATON_CLOUD_EC2);
    setenv("BATON_DMI_DIR", dmi_none, 1);

    /* what a watcher would poll, decided without the network */
    baton_notice_opts o;
    opts_for(&o, NULL);
    char ec2[256], gce[256];
    baton_err err = {0};
    o.dmi_dir = d[0];
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == BATON_NOTICE_WATCH_EC2 &&
          !strcmp(ec2, "http://169.254.169.254") && !gce[0]);
    o.dmi_dir = d[3];
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == BATON_NOTICE_WATCH_GCE && !ec2[0]);
    o.dmi_dir = d[4];
    o.handle_sigterm = 1;
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == BATON_NOTICE_WATCH_SIGTERM);
    o.handle_sigterm = 0;
    o.dmi_dir = d[0];
    o.ec2_disabled = 1;
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == 0);
    o.ec2_disabled = 0;
    char az[256];
    o.dmi_dir = d[5];
    CHECK(notice_azure_target(&o, az, sizeof az, &err) == BATON_NOTICE_WATCH_AZURE &&
          !strcmp(az, "http://169.254.169.254"));
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == 0);
    o.dmi_dir = d[0];
    CHECK(notice_azure_target(&o, az, sizeof az, &err) == 0 && !az[0]);
    o.endpoint = "127.0.0.1:1338/";
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == BATON_NOTICE_WATCH_EC2 &&
          !strcmp(ec2, "http://127.0.0.1:1338"));
    o.endpoint = "ftp://127.0.0.1";
    CHECK(notice_targets(&o, ec2, sizeof ec2, gce, sizeof gce, &err) == BATON_ERR_ARG);
    baton_notice_watcher *w = NULL;
    CHECK(baton_notice_start(&o, &w, &err) == BATON_ERR_ARG && !w && strstr(err.msg, "ftp://"));

    /* the environment */
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9/", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
    setenv("BATON_NOTICE_POLL_S", "0.25", 1);
    setenv("BATON_GCE_METADATA_ENDPOINT", "http://127.0.0.1:8", 1);
    baton_notice_opts_default(&o);
    CHECK(o.endpoint && !strcmp(o.endpoint, "http://127.0.0.1:9/") && o.ec2_disabled && o.poll_s == 0.25 &&
          o.handle_sigterm && o.gce_endpoint && !strcmp(o.gce_endpoint, "http://127.0.0.1:8"));
    unsetenv("BATON_GCE_METADATA_ENDPOINT");
    unsetenv("BATON_NOTICE_POLL_S");
    /* SIGTERM's grace: BATON_TERM_GRACE_S, else the older BATON_SIGTERM_GRACE_S, else 30 s */
    setenv("BATON_SIGTERM_GRACE_S", "20", 1);
    baton_notice_opts_default(&o);
    CHECK(o.sigterm_grace_s == 20);
    setenv("BATON_TERM_GRACE_S", "7", 1);
    setenv("BATON_AZURE_METADATA_ENDPOINT", "http://127.0.0.1:7", 1);
    baton_notice_opts_default(&o);
    CHECK(o.sigterm_grace_s == 7 && o.azure_endpoint && !strcmp(o.azure_endpoint, "http://127.0.0.1:7"));
    unsetenv("BATON_TERM_GRACE_S");
    unsetenv("BATON_SIGTERM_GRACE_S");
    unsetenv("BATON_AZURE_METADATA_ENDPOINT");
    baton_notice_opts_default(&o);
    CHECK(o.sigterm_grace_s == 30 && !o.azure_endpoint);

    /* AWS_EC2_METADATA_DISABLED=true turns off finding the instance's own service (DMI, above),
     * not an endpoint the user named: a live service at AWS_EC2_METADATA_SERVICE_ENDPOINT is asked */
    baton_imds *m = imds(0, 0, 0, 0);
    if (m) {
        baton_imds_interrupt(m, "terminate", 120);
        setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", baton_imds_url(m), 1);
        baton_notice_opts_default(&o);
        o.poll_s = 0.05;
        o.handle_sigterm = 0;
        CHECK(o.ec2_disabled);
        CHECK(baton_notice_start(&o, &w, &err) == BATON_OK);
        if (w) {
            CHECK(baton_notice_watching(w) == BATON_NOTICE_WATCH_EC2);
            CHECK(baton_notice_wait(w, 3, NULL) == 1);
            baton_notice_stop(w);
        }
        CHECK(baton_imds_requests(m) > 0);
        unsetenv("AWS_EC2_METADATA_DISABLED");
        baton_notice_opts_default(&o);
        o.poll_s = 0.05;
        o.handle_sigterm = 0;
        o.dmi_dir = dmi_none;
        CHECK(baton_notice_start(&o, &w, &err) == BATON_OK);
        if (w) {
            CHECK(baton_notice_wait(w, 3, NULL) == 1);
            baton_notice_stop(w);
        }
        baton_imds_stop(m);
    }
    unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    baton_remove_tree(base);
}

int main(void)
{
    unsetenv("AWS_EC2_METADATA_DISABLED");
    unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    unsetenv("BATON_AZURE_METADATA_ENDPOINT");
    snprintf(dmi_none, sizeof dmi_none, "/tmp/baton-no-dmi-%d", (int)getpid());   /* does not exist */
    setenv("BATON_DMI_DIR", dmi_none, 1);   /* never a real metadata service, whatever machine this is */
    test_flow(0, 0, 0, "imds-v2");
    test_flow(1, 1, 0, "imds-v2");
    test_flow(0, 0, 403, "imds-v1");
    test_flow(0, 1, 404, "imds-v1");
    test_token_renewal();
    test_rebalance();
    test_garbage();
    test_unreachable_and_slow();
    test_gce();
    test_azure();
    test_sigterm();
    test_dmi_and_env();
    CHECK_DONE();
}
