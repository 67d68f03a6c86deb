/* league_web_internal.h — what the server's two files share (league_web.c: the pages, the API and
 * the daemon; league_web_submit.c: POST /api/submit): the server, its answers, an upload. */
#ifndef BATON_LEAGUE_WEB_INTERNAL_H
#define BATON_LEAGUE_WEB_INTERNAL_H

#include "league_internal.h"
#include "../http/http.h"

#include <cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

typedef struct league_upload_ctx league_upload_ctx;
typedef struct league_track_view league_track_view;
typedef struct league_conn league_conn;
#define LEAGUE_VIEWS 32   /* tracks whose page's drawing is kept (league_web_track.c) */

struct baton_league_server {
    baton_league *l;
    struct MHD_Daemon *d;
    char url[128];
    baton_league_upload_rules rules;
    char tracks_dir[1024], tracks_real[4096], tmp_parent[4200];  /* where uploads are unpacked: DB-work/unpack unless told */
    char db_path[4096], db_real[4096];
    char spool_dir[4096];        /* where a body is written as it arrives: the database's folder */
    league_upload_ctx *uploads;  /* the uploads arriving (the daemon's one thread reads and writes it) */
    league_track_view *views;    /* LEAGUE_VIEWS tracks' pages' drawings, under views_mu */
    unsigned long long views_clock;
    pthread_mutex_t views_mu;
    /* the worker */
    baton_league *wl;
    pthread_t worker;
    int worker_started, stop, poke;
    int recovered;   /* the queue's recovery after a kill is written (the worker's alone after start) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* the request-head deadline (league_web_guard.c) */
    league_conn *conns;          /* every open connection, under guard_mu */
    long long head_deadline_ms;
    unsigned long long heads_evicted;   /* connections shut down for a newer one (league_web_guard.c), under guard_mu */
    pthread_t guard;
    int guard_started, guard_stop;
    pthread_mutex_t guard_mu;
    pthread_cond_t guard_cv;
};

/* An answer; an error's message said without the server's paths (the full one goes to the log
 * when it named any, and for every 5xx). */
enum MHD_Result league_reply_json(struct MHD_Connection *c, unsigned status, cJSON *j);
enum MHD_Result league_reply_error(baton_league_server *s, struct MHD_Connection *c, unsigned status, const char *msg);
/* 200 with b's bytes (freed; NULL data: out of memory, the connection closed). */
enum MHD_Result league_reply_buf(struct MHD_Connection *c, baton_buf *b, const char *ctype);
/* A submission time (unix seconds) as the pages show it: "YYYY-MM-DD HH:MM", UTC. */
void league_utc_minutes(double t, char out[32]);
/* A path segment for a link: letters, digits and ._- as they are, the rest %XX. */
void league_put_url_part(baton_buf *b, const char *s);
/* A page's head (title escaped, the league's style) and the start of its body. */
void league_page_head(baton_buf *b, const char *title);
/* head-to-model's API (league_web_h2m.c): /api/ratings, /api/matches, /api/matches/ID/trace, and
 * its page, /track/NAME?race=head-to-model (the board by rating, the matches, a replay with every car). */
enum MHD_Result league_page_h2m(baton_league_server *s, struct MHD_Connection *c, const char *track);
/* The front page's head-to-model table (each track with racers: how many, its leader), appended
 * to b; nothing when there are none. */
int league_h2m_index(baton_league_server *s, baton_buf *b, baton_err *err);
enum MHD_Result league_api_ratings(baton_league_server *s, struct MHD_Connection *c);
enum MHD_Result league_api_matches(baton_league_server *s, struct MHD_Connection *c);
enum MHD_Result league_api_match_trace(baton_league_server *s, struct MHD_Connection *c, long long id);

/* Whether a request to be refused on libmicrohttpd's first call should have its body read (and
 * dropped) first: a declared body of at most LEAGUE_DRAIN_MAX bytes sent without "Expect:
 * 100-continue" is on its way already, and a connection closed on unread bytes is reset, the
 * answer lost with it. curl waits for "100 Continue" above 1 MiB; so drains stop there. */
#define LEAGUE_DRAIN_MAX ((size_t)1 << 20)
int league_drainable(struct MHD_Connection *c);

/* POST /api/submit, in the three calls libmicrohttpd makes: the headers (every check that needs
 * no body: refused there, the body is never read; else *con_cls gets the upload), each piece of
 * the body (written to an unlinked 0600 file in spool_dir), the end (the archive checked,
 * unpacked, loaded and queued: 202); a refused request whose body is drained answers at the end.
 * league_submit_free when the request ends, however it ends. */
enum MHD_Result league_submit_begin(baton_league_server *s, struct MHD_Connection *c, void **con_cls);
enum MHD_Result league_submit_body(league_upload_ctx *u, const char *data, size_t *size);
enum MHD_Result league_submit_end(baton_league_server *s, struct MHD_Connection *c, league_upload_ctx *u);
void league_submit_free(baton_league_server *s, league_upload_ctx *u);

/* league_web_track.c: the track at path (a file or a built-in's name) and its racing-line limit,
 * computed once (by the worker ahead of time: league_track_views_warm, else on the page's first
 * load) and kept while its file is unchanged; owned by the cache. On success the cache is held
 * until league_track_view_put, which the page calls once drawn. league_track_views_free at the
 * server's end. */
int league_track_view_get(baton_league_server *s, const char *path, baton_race_track **track,
                          const baton_race_limit_result **lr, baton_err *err);
void league_track_view_put(baton_league_server *s);
void league_track_views_warm(baton_league_server *s, baton_league *l);
league_track_view *league_track_views_new(void);
void league_track_views_free(baton_league_server *s);

/* league_web_guard.c: a deadline for each request's whole head (slowloris). league_guard_notify
 * is libmicrohttpd's connection notifier; the handler calls head_done on a request's first call,
 * the completion notifier request_done; start after the mutex and before the daemon, stop after
 * the daemon. */
void league_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode toe);
void league_guard_head_done(baton_league_server *s, struct MHD_Connection *c);
void league_guard_request_done(baton_league_server *s, struct MHD_Connection *c);
int league_guard_start(baton_league_server *s, baton_err *err);
void league_guard_stop(baton_league_server *s);

#endif
