/* league_web_track.c — what a track page of `baton race serve` draws that does not change between
 * loads (league.h, "the page"): the track and its racing-line limit (baton_race_limit, about
 * 40 ms for a built-in track), computed once per track and kept while the track's file is the same.
 *
 * Contract: a view is keyed by the track's path and its file's modification time (ns), size and
 * inode: a track file replaced or rewritten is computed afresh on its next load; a built-in track
 * (a name, no file) never changes. At most LEAGUE_VIEWS views, the least recently used replaced.
 * The worker thread computes the league's tracks' views at its start and after each evaluation
 * (league_track_views_warm), so the thread that answers rarely computes one. The computing is
 * done outside s->views_mu; a view is read (the page drawn) and replaced only under it, so a view
 * in use is never freed. A failure is not kept. */
#include "league_web_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct league_track_view {
    char path[4096];
    long long mtime_ns, size, ino;
    unsigned long long used;   /* when it was last asked for, on the cache's own clock */
    baton_race_track *track;
    baton_race_limit_result lr;
};

static void view_clear(league_track_view *v)
{
    baton_race_track_free(v->track);
    baton_race_limit_free(&v->lr);
    memset(v, 0, sizeof *v);
}

/* The file's identity now; all 0 for a built-in track (or a file gone: its load then fails). */
static void file_key(const char *path, long long *mtime_ns, long long *size, long long *ino)
{
    struct stat sb;
    *mtime_ns = *size = *ino = 0;
    if (stat(path, &sb)) return;
    *mtime_ns = (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
    *size = (long long)sb.st_size;
    *ino = (long long)sb.st_ino;
}

/* The fresh view of path, or NULL (a stale one cleared); *slot the place a new one would go. */
static league_track_view *find(baton_league_server *s, const char *path, long long mt, long long sz, long long ino,
                               league_track_view **slot)
{
    *slot = NULL;
    for (size_t i = 0; i < LEAGUE_VIEWS; i++) {
        league_track_view *v = &s->views[i];
        if (v->track && !strcmp(v->path, path)) {
            if (v->mtime_ns == mt && v->size == sz && v->ino == ino) return v;
            view_clear(v);   /* the file changed */
        }
        if (!*slot || !v->track || ((*slot)->track && v->used < (*slot)->used)) *slot = v;
    }
    return NULL;
}

/* Compute path's view outside the lock, then put it in (s->views_mu held on return, *out set). */
static int compute(baton_league_server *s, const char *path, league_track_view **out, baton_err *err)
{
    league_track_view fresh;
    memset(&fresh, 0, sizeof fresh);
    file_key(path, &fresh.mtime_ns, &fresh.size, &fresh.ino);
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    int rc = baton_race_track_load(path, &fresh.track, err);
    if (!rc) rc = baton_race_limit(fresh.track, &lim, &fresh.lr, err);
    pthread_mutex_lock(&s->views_mu);
    if (rc) {
        view_clear(&fresh);
        return rc;
    }
    snprintf(fresh.path, sizeof fresh.path, "%s", path);
    league_track_view *slot, *v = find(s, path, fresh.mtime_ns, fresh.size, fresh.ino, &slot);
    if (v) {
        view_clear(&fresh);   /* the other thread put the same in meanwhile */
    } else {
        view_clear(slot);
        *slot = fresh;
        v = slot;
    }
    v->used = ++s->views_clock;
    *out = v;
    return BATON_OK;
}

int league_track_view_get(baton_league_server *s, const char *path, baton_race_track **track,
                          const baton_race_limit_result **lr, baton_err *err)
{
    long long mt, sz, ino;
    file_key(path, &mt, &sz, &ino);
    pthread_mutex_lock(&s->views_mu);
    league_track_view *slot, *v = find(s, path, mt, sz, ino, &slot);
    int rc = BATON_OK;
    if (!v) {
        pthread_mutex_unlock(&s->views_mu);
        rc = compute(s, path, &v, err);
    }
    if (rc) {
        pthread_mutex_unlock(&s->views_mu);
        return rc;
    }
    v->used = ++s->views_clock;
    *track = v->track;
    *lr = &v->lr;
    return BATON_OK;
}

void league_track_view_put(baton_league_server *s) { pthread_mutex_unlock(&s->views_mu); }

void league_track_views_warm(baton_league_server *s, baton_league *l)
{
    baton_league_track *t;
    size_t n;
    baton_err err = {0};
    if (league_tracks(l, &t, &n, &err)) return;
    for (size_t i = 0; i < n && i < LEAGUE_VIEWS; i++) {
        long long mt, sz, ino;
        file_key(t[i].track_path, &mt, &sz, &ino);
        pthread_mutex_lock(&s->views_mu);
        league_track_view *slot, *v = find(s, t[i].track_path, mt, sz, ino, &slot);
        pthread_mutex_unlock(&s->views_mu);
        if (v) continue;
        if (compute(s, t[i].track_path, &v, &err) == BATON_OK)
            pthread_mutex_unlock(&s->views_mu), baton_log(BATON_LOG_DEBUG, "league: the page of %s drawn ahead", t[i].track);
        else
            pthread_mutex_unlock(&s->views_mu), baton_log(BATON_LOG_INFO, "league: the page of %s: %s", t[i].track, err.msg);
    }
    free(t);
}

league_track_view *league_track_views_new(void) { return calloc(LEAGUE_VIEWS, sizeof(league_track_view)); }

void league_track_views_free(baton_league_server *s)
{
    if (!s->views) return;
    for (size_t i = 0; i < LEAGUE_VIEWS; i++) view_clear(&s->views[i]);
    free(s->views);
    s->views = NULL;
}
