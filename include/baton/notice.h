/* notice.h — interruption notices on rented machines: a local EC2 instance-metadata service (the
 * emulator behind `baton imds`) and the notice watcher (behind `baton notice wait` and the
 * trainer's reaction to a notice).
 *
 * What it offers, in the order a caller uses it:
 *   1. The metadata emulator (src/notice/imds.c): baton_imds_opts_default, baton_imds_start, then
 *      baton_imds_url (or _port) for its clients and baton_imds_interrupt / _rebalance to schedule
 *      events; baton_imds_stop.
 *   2. The watcher (src/notice/notice.c): baton_notice_opts_default, baton_notice_start (before
 *      any compute threads), then baton_notice_poll once per step, or baton_notice_wait /
 *      _wait_any to block for a notice; baton_notice_watching says what it polls (for messages);
 *      baton_notice_stop.
 *   3. BATON_EXIT_STOPPED, the exit status of a command stopped by a notice, and EC2's time format
 *      (src/notice/spottime.c).
 * The parsers of metadata answers, the DMI cloud detection, the watcher's target list and poll
 * count, and the emulator's clear are private to src/notice (src/notice/notice_internal.h).
 *
 * The emulator (src/notice/imds.c) serves EC2's metadata paths on loopback with libmicrohttpd:
 * static items, spot/instance-action (404 until an interruption is scheduled, then
 * {"action","time"}), spot/termination-time, events/recommendations/rebalance, the IMDSv2 token
 * PUT, GCE's instance/preempted, Azure's Scheduled Events (metadata/scheduledevents, with
 * Metadata: true: a Preempt event whose NotBefore is the notice's time), and control requests (PUT /baton/interrupt, /baton/rebalance,
 * /baton/clear) that schedule events on demand.
 *
 * The watcher (src/notice/notice.c) is one thread that polls the metadata service(s) every poll_s
 * seconds with short timeouts (IMDSv2 token flow with a v1 fallback; GCE with Metadata-Flavor:
 * Google; Azure with Metadata: true) and turns SIGTERM into a notice. It latches the first terminal notice it sees (kind,
 * deadline, source) and never changes it afterwards; readers see it through atomics, so
 * baton_notice_poll costs a few atomic loads and never blocks. An unreachable, slow or
 * garbage-answering service is never a notice.
 *
 * Layering: notice depends on util only (train includes this header). */
#ifndef BATON_NOTICE_H
#define BATON_NOTICE_H

#include "baton/util.h"

/* The exit status of a command that stopped on an interruption notice (or SIGTERM/SIGINT) after
 * committing a checkpoint: EX_TEMPFAIL, "run me again". Supervisors (the fleet's backends, the
 * generated Slurm and EC2 scripts) treat it as "resume elsewhere", not as a crash. */
#define BATON_EXIT_STOPPED 75
#define BATON_EXIT_STOPPED_STR "75"   /* the same, for generated shell scripts */

/* ---------------------------------------------------------------- the metadata emulator */
typedef struct baton_imds baton_imds;
typedef struct baton_imds_opts {
    const char *listen;          /* "127.0.0.1:0" = ephemeral port on loopback (the default);
                                    "HOST:PORT" or "[V6]:PORT" */
    const char *instance_id, *instance_type, *zone;   /* static items; defaults provided */
    int v2_only;                 /* 401 on GETs without a valid token */
    double interrupt_after;      /* seconds after start to schedule a notice; < 0: none (default) */
    const char *action;          /* "terminate" (default) | "stop" | "hibernate" */
    double notice_seconds;       /* notice lead time, default 120 */
    int slide;                   /* the notice time slides to now+notice on every request */
    double rebalance_after;      /* < 0: none */
    int garbage;                 /* answer junk on every path (status 200, bodies that are not
                                    what the path promises: random bytes, HTML, wrong JSON) */
    int allow_remote;
    /* additions */
    double interrupt_at;         /* unix seconds at which to schedule a notice; 0: none */
    int token_status;            /* 0: the token PUT works; else answer it with this HTTP status
                                    (403, 404, 405: an IMDSv1-only service) */
} baton_imds_opts;

void baton_imds_opts_default(baton_imds_opts *o);
int baton_imds_start(const baton_imds_opts *o, baton_imds **out, baton_err *err);
int baton_imds_port(const baton_imds *m);
const char *baton_imds_url(const baton_imds *m);          /* "http://127.0.0.1:PORT" */
/* Schedule an interruption now: instance-action appears at once with time = now + notice_s.
 * action NULL: the configured one; notice_s < 0: the configured lead time. */
void baton_imds_interrupt(baton_imds *m, const char *action, double notice_s);
void baton_imds_rebalance(baton_imds *m);
uint64_t baton_imds_requests(const baton_imds *m);        /* served so far (for tests) */
void baton_imds_stop(baton_imds *m);                      /* frees */

/* ---------------------------------------------------------------- the notice watcher */
typedef enum { BATON_NOTICE_NONE = 0, BATON_NOTICE_REBALANCE, BATON_NOTICE_TERMINATE,
               BATON_NOTICE_STOP, BATON_NOTICE_HIBERNATE, BATON_NOTICE_SIGNAL,
               BATON_NOTICE_PREEMPTED } baton_notice_kind;

typedef struct baton_notice_event {
    baton_notice_kind kind;
    double deadline;             /* unix seconds; 0 unknown */
    double seen_at;              /* unix seconds */
    char source[32];             /* "imds-v2", "imds-v1", "sigterm", "sigint", "gce", "azure" */
} baton_notice_event;

typedef struct baton_notice_watcher baton_notice_watcher;
typedef struct baton_notice_opts {
    const char *endpoint;        /* EC2 metadata base URL; NULL: http://169.254.169.254, and only
                                    when DMI says this is an EC2 instance */
    double poll_s;               /* seconds between polls (default 5; BATON_NOTICE_POLL_S) */
    double timeout_s;            /* per-request limit, connect included (default 1 s) */
    int handle_sigterm;          /* SIGTERM and SIGINT latch a BATON_NOTICE_SIGNAL notice (default 1);
                                    a second SIGINT ends the process at once */
    const char *dmi_dir;         /* DMI folder (default /sys/devices/virtual/dmi/id; BATON_DMI_DIR) */
    /* additions */
    int ec2_disabled;            /* do not look for the real EC2 metadata service
                                    (AWS_EC2_METADATA_DISABLED=true); an explicit endpoint is still polled */
    const char *gce_endpoint;    /* GCE metadata base URL; NULL: http://169.254.169.254, and only
                                    when DMI says this is a GCE instance */
    double sigterm_grace_s;      /* deadline of a SIGTERM notice = arrival + this (default 30;
                                    BATON_TERM_GRACE_S, or the older BATON_SIGTERM_GRACE_S; under
                                    Slurm, SLURM's --signal lead when the job script exports it as
                                    BATON_TERM_GRACE_S); 0: unknown */
    const char *azure_endpoint;  /* Azure metadata base URL; NULL: http://169.254.169.254, and only
                                    when DMI says this is an Azure machine */
    int guest;                   /* with handle_sigterm, for a program that goes on after the watcher
                                    (an interpreter): no thread's signal mask changes (the handler,
                                    which only records the signal, runs on whichever thread the
                                    kernel picks), and when the last watcher stops and it is a guest,
                                    the previous handlers come back even after a signal came */
} baton_notice_opts;

/* Defaults from the environment: AWS_EC2_METADATA_SERVICE_ENDPOINT, AWS_EC2_METADATA_DISABLED,
 * BATON_GCE_METADATA_ENDPOINT (or GCE_METADATA_HOST), BATON_AZURE_METADATA_ENDPOINT, BATON_DMI_DIR,
 * BATON_NOTICE_POLL_S, BATON_NOTICE_TIMEOUT_S, BATON_TERM_GRACE_S (or BATON_SIGTERM_GRACE_S). The strings point into the environment. */
void baton_notice_opts_default(baton_notice_opts *o);
/* With handle_sigterm and not guest, SIGTERM and SIGINT are blocked in the calling thread (and so in every thread it starts
 * afterwards) and taken by the watcher's thread; when the last such watcher stops
 * (baton_notice_stop, from the same thread), that thread's mask is as before. Start the watcher before any compute threads. */
int baton_notice_start(const baton_notice_opts *o, baton_notice_watcher **out, baton_err *err);
/* Non-blocking: the latched terminal notice (kind != NONE) and, separately, whether a rebalance
 * recommendation arrived since the last call. Returns 1 when a terminal notice is latched (then
 * *terminal is filled), else 0 (terminal->kind = NONE). rebalance_new may be NULL. Atomic loads
 * only; meant to be called by one thread (the trainer) once per step. */
int baton_notice_poll(baton_notice_watcher *w, baton_notice_event *terminal, int *rebalance_new);
/* Block until a terminal notice is latched or timeout_s passes (< 0: no limit). Returns 1 with
 * *ev filled, or 0 on timeout. */
int baton_notice_wait(baton_notice_watcher *w, double timeout_s, baton_notice_event *ev);
/* As baton_notice_wait, and when rebalance_too is set also returns on a rebalance recommendation
 * (ev->kind = BATON_NOTICE_REBALANCE, deadline 0, seen_at its noticeTime). */
int baton_notice_wait_any(baton_notice_watcher *w, double timeout_s, int rebalance_too, baton_notice_event *ev);
/* Which services the watcher polls (for messages): flags below. */
enum { BATON_NOTICE_WATCH_EC2 = 1, BATON_NOTICE_WATCH_GCE = 2, BATON_NOTICE_WATCH_SIGTERM = 4,
       BATON_NOTICE_WATCH_AZURE = 8 };
int baton_notice_watching(const baton_notice_watcher *w);
void baton_notice_stop(baton_notice_watcher *w);

/* "terminate", "stop", "hibernate", "rebalance", "sigterm", "preempted", "none". */
const char *baton_notice_kind_name(baton_notice_kind k);

/* ISO 8601 times as EC2 writes them: "2017-09-18T08:22:00Z" (fractions and ±hh:mm offsets are
 * accepted). parse returns 0 and sets *t (unix seconds), or -1. format writes the Z form. */
int baton_notice_time_parse(const char *s, double *t);
void baton_notice_time_format(double t, char out[32]);
double baton_wall_now(void);   /* unix seconds (CLOCK_REALTIME) */

#endif
