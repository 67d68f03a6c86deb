/* league_web_guard.c — the league server's deadline for a whole request head.
 *
 * libmicrohttpd's connection timeout restarts with every byte that arrives, so a client that
 * drips one header line every few seconds holds a connection for ever (slowloris); 0.9.75 has no
 * deadline for the head as a whole. This file adds one from outside the library:
 *   - every connection is known from its start (MHD_CONNECTION_NOTIFY_STARTED) to its end
 *     (MHD_CONNECTION_NOTIFY_CLOSED), in a list under guard_mu, with the time its current
 *     request head began: the connection's start, then the end of each request on it (keep-alive);
 *   - the handler's first call for a request (the head is complete) clears that time;
 *   - a thread looks every 250 ms and shuts down (shutdown(2), both ways) the socket of each
 *     connection whose head is older than the deadline; libmicrohttpd then sees the end of the
 *     stream and closes the connection itself, on its own thread;
 *   - across all addresses at most LEAGUE_HEADS_MAX connections wait on a head (an unfinished
 *     one, or a keep-alive connection idle between requests): a new connection beyond it shuts
 *     down the one whose head began first. One address holds at most 16 connections
 *     (libmicrohttpd's per-address limit), but 8 addresses could hold all 128 the server takes and
 *     a racer would wait for the deadline; with the cap half of them stay for clients that send
 *     their request at once, and the oldest waiting head, never a racer's fresh one, gives way.
 * Invariants: (1) a socket is shut down only under guard_mu and only while its connection is in
 * the list; (2) libmicrohttpd tells CLOSED — which takes guard_mu and unlinks — before it closes
 * the descriptor, so the number shut down is never one reused by another connection; (3) a body
 * is not under this deadline (an accepted upload has its token checked; the idle timeout holds). */
#include "league_web_internal.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define LEAGUE_HEADS_MAX 64   /* of the server's 128 connections (league_web.c) */

struct league_conn {
    struct league_conn *prev, *next;
    int fd;
    long long head_since_ms;   /* when the head being read began; 0: none being read */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static league_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Over LEAGUE_HEADS_MAX connections waiting on a head: the oldest one (not fresh) gives way. */
static void evict_oldest(baton_league_server *s, const league_conn *fresh)
{
    unsigned waiting = 0;
    league_conn *oldest = NULL;
    for (league_conn *k = s->conns; k; k = k->next) {
        if (!k->head_since_ms) continue;
        waiting++;
        if (k != fresh && (!oldest || k->head_since_ms < oldest->head_since_ms)) oldest = k;
    }
    if (waiting <= LEAGUE_HEADS_MAX || !oldest) return;
    shutdown(oldest->fd, SHUT_RDWR);
    oldest->head_since_ms = 0;   /* once: libmicrohttpd closes it next */
    s->heads_evicted++;
}

void league_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
    baton_league_server *s = cls;
    pthread_mutex_lock(&s->guard_mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        league_conn *k = calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (k && ci) {   /* out of memory: the connection goes unguarded, as without this file */
            k->fd = ci->connect_fd;
            k->head_since_ms = now_ms();
            k->next = s->conns;
            if (s->conns) s->conns->prev = k;
            s->conns = k;
            evict_oldest(s, k);
        } else {
            free(k);
            k = NULL;
        }
        *socket_context = k;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        league_conn *k = *socket_context;
        if (k->prev) k->prev->next = k->next;
        else s->conns = k->next;
        if (k->next) k->next->prev = k->prev;
        free(k);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&s->guard_mu);
}

static void set_since(baton_league_server *s, struct MHD_Connection *c, long long t)
{
    league_conn *k = conn_of(c);
    if (!k) return;
    pthread_mutex_lock(&s->guard_mu);
    k->head_since_ms = t;
    pthread_mutex_unlock(&s->guard_mu);
}

void league_guard_head_done(baton_league_server *s, struct MHD_Connection *c) { set_since(s, c, 0); }
void league_guard_request_done(baton_league_server *s, struct MHD_Connection *c) { set_since(s, c, now_ms()); }

static void *guard_main(void *arg)
{
    baton_league_server *s = arg;
    unsigned long long logged = 0;
    pthread_mutex_lock(&s->guard_mu);
    while (!s->guard_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->guard_cv, &s->guard_mu, &ts);
        long long t = now_ms();
        unsigned cut = 0;
        for (league_conn *k = s->conns; k; k = k->next)
            if (k->head_since_ms && t - k->head_since_ms > s->head_deadline_ms) {
                shutdown(k->fd, SHUT_RDWR);
                k->head_since_ms = 0;   /* once: libmicrohttpd closes it next */
                cut++;
            }
        if (cut) baton_log(BATON_LOG_DEBUG, "league: %u connection(s) closed: no whole request head within %.1f s",
                           cut, s->head_deadline_ms / 1000.0);
        if (s->heads_evicted != logged) {
            baton_log(BATON_LOG_DEBUG, "league: %llu connection(s) closed for newer ones: more than %d waiting on a request head",
                      s->heads_evicted - logged, LEAGUE_HEADS_MAX);
            logged = s->heads_evicted;
        }
    }
    pthread_mutex_unlock(&s->guard_mu);
    return NULL;
}

int league_guard_start(baton_league_server *s, baton_err *err)
{
    if (pthread_create(&s->guard, NULL, guard_main, s))
        return baton_err_set(err, BATON_ERR_IO, "cannot start the league server's request-deadline thread");
    s->guard_started = 1;
    return BATON_OK;
}

void league_guard_stop(baton_league_server *s)
{
    if (!s->guard_started) return;
    pthread_mutex_lock(&s->guard_mu);
    s->guard_stop = 1;
    pthread_cond_signal(&s->guard_cv);
    pthread_mutex_unlock(&s->guard_mu);
    pthread_join(s->guard, NULL);
    s->guard_started = 0;
}
