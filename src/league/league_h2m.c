/* league_h2m.c — head-to-model in the league (league.h, invariant 8): racers' models entered on a
 * track, the matches the league races between them, and the board by rating.
 *
 * Entering a model: its policy is exported (baton_ppo_policy_export: the policy network alone) into
 * the work folder, DB-work/models/ID/, where the matches still to come load it; the racer's row
 * and that folder are made together (the folder renamed into place inside the row's transaction).
 * Then the league schedules: the new racer against each of the track's top BATON_LEAGUE_H2M_TOP on
 * the board (each other alias's latest racer, by rating, as it stood before), twice — the new one
 * on the line and then behind, so neither start decides the pairing — each a baton_ppo_match
 * under the league's rules (3 laps, 1 m apart, 5 s per reset and per crash from behind), stored
 * with its cars' drives in one transaction. A match that cannot be raced (an opponent's folder
 * gone) is logged and skipped; the entry stands.
 *
 * The board: every racer of the track rated together by Bradley–Terry (league_rating.c) from
 * every match's pairwise order (the car ahead at the finish beat each car behind), each alias's
 * latest racer shown with its rating, matches, wins (first past the line) and losses.
 *
 * Over HTTP (the queue, league_queue.c) the racer's row names its submission, which is marked done
 * once its matches are raced: a server that dies on the way queues it again, and the next attempt
 * finds the racer entered and races only the pairings not stored yet — entered once, raced once.
 *
 * Contract: prepared statements only, every value bound; a failed entry stores nothing (its
 * exported folder removed). */
#include "league_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The track's name (as entries store it) and how to load it; head-to-model needs a loop. */
static int track_of(const char *spelling, char name[256], char path[1024], baton_err *err)
{
    baton_race_track *t;
    if (!spelling) return baton_err_set(err, BATON_ERR_ARG, "head-to-model: a track is required");
    if (baton_race_track_load(spelling, &t, err)) return err->code;
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    snprintf(name, 256, "%s", in.name);
    baton_race_track_free(t);
    if (!in.loop) return baton_err_set(err, BATON_ERR_ARG, "head-to-model: track %s is open; its cars race round a loop", name);
    char *abs = strchr(spelling, '/') || strstr(spelling, ".npy") ? realpath(spelling, NULL) : NULL;
    snprintf(path, 1024, "%s", abs ? abs : spelling);
    free(abs);
    return BATON_OK;
}

/* A track as the racers store it, from a name (taken as it is) or a .npy path (read for its name). */
static int track_name(const char *spelling, char name[256], baton_err *err)
{
    char path[1024];
    if (strchr(spelling, '/') || strstr(spelling, ".npy")) return track_of(spelling, name, path, err);
    snprintf(name, 256, "%s", spelling);
    return BATON_OK;
}

static int model_dir(baton_league *l, int64_t id, char *out, size_t cap, baton_err *err)
{
    char dir[4200];
    if (league_work_dir(l->path, "models", dir, sizeof dir, err)) return err->code;
    if (snprintf(out, cap, "%s/%lld", dir, (long long)id) >= (int)cap)
        return baton_err_set(err, BATON_ERR_ARG, "%s: a model's path is too long", dir);
    return BATON_OK;
}

static void read_racer(sqlite3_stmt *st, baton_league_racer *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    snprintf(r->alias, sizeof r->alias, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(r->track, sizeof r->track, "%s", (const char *)sqlite3_column_text(st, 2));
    snprintf(r->track_path, sizeof r->track_path, "%s", (const char *)sqlite3_column_text(st, 3));
    snprintf(r->model_hash, sizeof r->model_hash, "%s", (const char *)sqlite3_column_text(st, 4));
    r->iteration = (uint64_t)sqlite3_column_int64(st, 5);
    r->submitted_at = sqlite3_column_double(st, 6);
}

/* Every racer of track, by id. */
static int racers_of(baton_league *l, const char *track, baton_league_racer **out, size_t *n, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT id, alias, track, track_path, model_hash, iteration, submitted_at FROM h2m_racers"
                                  " WHERE track = ? ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the racers");
    sqlite3_bind_text(st, 1, track, -1, SQLITE_STATIC);
    size_t cap = 8, cnt = 0;
    baton_league_racer *r = malloc(cap * sizeof *r);
    int rc = r ? SQLITE_ROW : SQLITE_NOMEM;
    while (r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            baton_league_racer *g = realloc(r, 2 * cap * sizeof *r);
            if (!g) {
                rc = SQLITE_NOMEM;
                break;
            }
            r = g, cap *= 2;
        }
        read_racer(st, &r[cnt++]);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(r);
        return rc == SQLITE_NOMEM ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : league_db_fail(l, err, "cannot read the racers");
    }
    *out = r;
    *n = cnt;
    return BATON_OK;
}

static size_t index_of(const baton_league_racer *r, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && r[lo].id == id ? lo : n;
}

/* Ratings and counts of every racer of the track (r by id). */
static int rate(baton_league *l, const char *track, baton_league_racer *r, size_t n, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT a.racer, b.racer FROM h2m_cars a JOIN h2m_cars b ON a.match = b.match AND"
                                  " a.position < b.position JOIN h2m_matches m ON m.id = a.match WHERE m.track = ?"
                                  " ORDER BY a.match, a.slot, b.slot", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the matches");
    sqlite3_bind_text(st, 1, track, -1, SQLITE_STATIC);
    size_t cap = 64, m = 0;
    uint32_t(*g)[2] = malloc(cap * sizeof *g);
    double *rating = malloc((n ? n : 1) * sizeof *rating);
    int rc = g && rating ? SQLITE_ROW : SQLITE_NOMEM;
    while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        size_t w = index_of(r, n, sqlite3_column_int64(st, 0)), lo = index_of(r, n, sqlite3_column_int64(st, 1));
        if (w == n || lo == n) continue;   /* the foreign keys hold this never */
        if (m == cap) {
            uint32_t(*h)[2] = realloc(g, 2 * cap * sizeof *g);
            if (!h) {
                rc = SQLITE_NOMEM;
                break;
            }
            g = h, cap *= 2;
        }
        g[m][0] = (uint32_t)w, g[m][1] = (uint32_t)lo, m++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(g);
        free(rating);
        return rc == SQLITE_NOMEM ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : league_db_fail(l, err, "cannot read the matches");
    }
    int brc = league_bt_fit(n, (const uint32_t(*)[2])g, m, rating, err);
    for (size_t i = 0; !brc && i < n; i++) r[i].rating = rating[i];
    free(g);
    free(rating);
    if (brc) return brc;
    if (sqlite3_prepare_v2(l->db, "SELECT c.racer, count(*), sum(c.position = 1) FROM h2m_cars c JOIN h2m_matches m ON"
                                  " m.id = c.match WHERE m.track = ? GROUP BY c.racer", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the matches");
    sqlite3_bind_text(st, 1, track, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        size_t i = index_of(r, n, sqlite3_column_int64(st, 0));
        if (i == n) continue;
        r[i].matches = (uint32_t)sqlite3_column_int64(st, 1);
        r[i].wins = (uint32_t)sqlite3_column_int64(st, 2);
        r[i].losses = r[i].matches - r[i].wins;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? BATON_OK : league_db_fail(l, err, "cannot read the matches");
}

static int by_rating(const void *pa, const void *pb)
{
    const baton_league_racer *a = pa, *b = pb;
    if (a->rating != b->rating) return a->rating > b->rating ? -1 : 1;
    if (a->submitted_at != b->submitted_at) return a->submitted_at < b->submitted_at ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The board of one track (its name): each alias's latest racer, by rating. */
static int board(baton_league *l, const char *track, baton_league_racer **out, size_t *n, baton_err *err)
{
    baton_league_racer *r = NULL;
    size_t cnt = 0;
    int rc = racers_of(l, track, &r, &cnt, err);
    if (rc) return rc;
    if ((rc = rate(l, track, r, cnt, err))) {
        free(r);
        return rc;
    }
    size_t k = 0;
    for (size_t i = 0; i < cnt; i++) {
        int later = 0;   /* a later racer of the same alias stands instead */
        for (size_t j = i + 1; j < cnt && !later; j++) later = !strcmp(r[j].alias, r[i].alias);
        if (!later) r[k++] = r[i];
    }
    qsort(r, k, sizeof *r, by_rating);
    for (size_t i = 0; i < k; i++) r[i].rank = (uint32_t)(i + 1);
    *out = r;
    *n = k;
    return BATON_OK;
}

int baton_league_h2m_ratings(baton_league *l, const char *track, baton_league_racer **out, size_t *n, baton_err *err)
{
    *out = NULL;
    *n = 0;
    if (track) {
        char name[256];
        if (track_name(track, name, err)) return err->code;
        return board(l, name, out, n, err);
    }
    sqlite3_stmt *st;   /* every track's board, tracks by name */
    if (sqlite3_prepare_v2(l->db, "SELECT DISTINCT track FROM h2m_racers ORDER BY track", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the racers");
    int rc = BATON_OK, s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        baton_league_racer *b;
        size_t nb;
        if ((rc = board(l, (const char *)sqlite3_column_text(st, 0), &b, &nb, err))) break;
        baton_league_racer *g = realloc(*out, (*n + nb + 1) * sizeof *g);
        if (!g) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        else memcpy(g + *n, b, nb * sizeof *b), *out = g, *n += nb;
        free(b);
    }
    sqlite3_finalize(st);
    if (rc) free(*out), *out = NULL, *n = 0;
    return rc;
}

/* A match's row and its cars' rows in one transaction. */
static int store_match(baton_league *l, const char *track, const baton_ppo_match_result *r, const int64_t *racer,
                       baton_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return league_db_fail(l, err, "cannot begin a transaction");
    if (sqlite3_prepare_v2(l->db, "INSERT INTO h2m_matches(track, laps, at, steps) VALUES(?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_text(st, 1, track, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, BATON_LEAGUE_LAPS);
    sqlite3_bind_double(st, 3, league_now());
    sqlite3_bind_int64(st, 4, (sqlite3_int64)r->steps);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    int64_t id = sqlite3_last_insert_rowid(l->db);
    if (sqlite3_prepare_v2(l->db, "INSERT INTO h2m_cars(match, slot, racer, position, completed, laps, total_s, best_lap_s,"
                                  " penalties_s, crashes, bumps, overtakes, steps, data) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    for (int i = 0; i < r->ncars; i++) {
        const baton_ppo_match_car *c = &r->car[i];
        float *blob = malloc(3 * c->n * sizeof *blob + 1);
        if (!blob) {
            sqlite3_finalize(st);
            sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
            return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        }
        for (size_t k = 0; k < c->n; k++)
            blob[k] = (float)c->x[k], blob[c->n + k] = (float)c->y[k], blob[2 * c->n + k] = (float)c->v[k];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int(st, 2, c->slot);
        sqlite3_bind_int64(st, 3, racer[i]);
        sqlite3_bind_int(st, 4, c->position);
        sqlite3_bind_int(st, 5, c->completed);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)c->nlaps);
        sqlite3_bind_double(st, 7, c->total_s);
        sqlite3_bind_double(st, 8, c->best_lap_s);
        sqlite3_bind_double(st, 9, c->penalties_s);
        sqlite3_bind_int64(st, 10, c->crashes);
        sqlite3_bind_int64(st, 11, c->bumps);
        sqlite3_bind_int64(st, 12, c->overtakes);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)c->n);
        sqlite3_bind_blob64(st, 14, blob, 3 * c->n * sizeof *blob, SQLITE_TRANSIENT);
        int ok = sqlite3_step(st) == SQLITE_DONE;
        free(blob);
        if (!ok) goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto fail;
    return BATON_OK;
fail:;
    int rc = league_db_fail(l, err, "cannot store the match");
    sqlite3_finalize(st);
    sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Race a (on the line) against b and store the match. */
static int race_pair(baton_league *l, const baton_league_racer *a, const baton_league_racer *b, baton_err *err)
{
    char da[4200], db[4200];
    if (model_dir(l, a->id, da, sizeof da, err) || model_dir(l, b->id, db, sizeof db, err)) return err->code;
    baton_ppo_match_opts o;
    baton_ppo_match_opts_default(&o);
    o.ncars = 2;
    o.ckpt[0] = da, o.ckpt[1] = db;
    o.name[0] = a->alias, o.name[1] = b->alias;
    o.track = a->track_path;
    o.laps = BATON_LEAGUE_LAPS;
    o.off_track_penalty_s = BATON_LEAGUE_PENALTY_S;
    o.collision_penalty_s = BATON_LEAGUE_COLLISION_PENALTY_S;
    baton_ppo_match_result r;
    int rc = baton_ppo_match(&o, &r, err);
    if (rc) return rc;
    const int64_t ids[2] = {a->id, b->id};
    rc = store_match(l, a->track, &r, ids, err);
    baton_ppo_match_result_free(&r);
    return rc;
}

/* Export ckpt's policy into a new folder under the models folder: *tmp the folder, *hash and
 * *iteration the exported checkpoint's. */
static int export_model(baton_league *l, const char *ckpt, char *tmp, size_t cap, char hash[65], uint64_t *iteration,
                        baton_err *err)
{
    char dir[4200], out[4200];
    if (league_work_dir(l->path, "models", dir, sizeof dir, err)) return err->code;
    if (snprintf(tmp, cap, "%s/new-XXXXXX", dir) >= (int)cap || !mkdtemp(tmp))
        return baton_err_errno(err, errno, "cannot make a folder for the model", dir);
    int rc = baton_ppo_policy_export(ckpt, tmp, out, sizeof out, err);
    if (!rc) rc = league_manifest_hash(out, hash, err);
    const char *base = strrchr(out, '/');
    if (!rc && (!base || sscanf(base + 1, "ckpt-%" SCNu64, iteration) != 1)) *iteration = 0;
    if (rc) baton_remove_tree(tmp);
    return rc;
}

/* Invariant 6 for head-to-model: the running submission done, naming its racer, in the racer's
 * transaction. */
static int mark_done(baton_league *l, int64_t submission, int64_t racer, baton_err *err)
{
    league_sub_move m = {.id = submission, .ref = racer};
    int rc = league_sub_step(l, LEAGUE_SE_DONE_RACER, &m, err);
    if (!rc && m.changed != 1)
        rc = baton_err_set(err, BATON_ERR_BUSY, "%s: submission %lld is no longer running; its racer is not stored", l->path,
                           (long long)submission);
    return rc;
}

int league_h2m_racer(baton_league *l, int64_t id, baton_league_racer *out, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT id, alias, track, track_path, model_hash, iteration, submitted_at FROM h2m_racers"
                                  " WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the racer");
    sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) read_racer(st, out);
    sqlite3_finalize(st);
    if (r != SQLITE_ROW)
        return r == SQLITE_DONE ? baton_err_set(err, BATON_ERR_NOTFOUND, "no racer %lld", (long long)id)
                                : league_db_fail(l, err, "cannot read the racer");
    baton_league_racer *b = NULL;   /* rated among all of the track's racers; ranked when it stands */
    size_t nb = 0;
    char track[256];
    snprintf(track, sizeof track, "%s", out->track);
    int rc = racers_of(l, track, &b, &nb, err);
    if (!rc && !(rc = rate(l, track, b, nb, err)))
        for (size_t i = 0; i < nb; i++)
            if (b[i].id == id) *out = b[i];
    free(b);
    b = NULL;
    if (!rc && !(rc = board(l, track, &b, &nb, err)))
        for (size_t i = 0; i < nb; i++)
            if (b[i].id == id) out->rank = b[i].rank;
    free(b);
    return rc;
}

int baton_league_h2m_submit(baton_league *l, const char *ckpt, const char *alias, const char *track,
                            baton_league_racer *out, size_t *nmatches, baton_err *err)
{
    return league_h2m_enter(l, ckpt, alias, track, 0, league_now(), out, nmatches, err);
}

/* The racer a submission entered in an earlier attempt (*found 0: none). */
static int racer_of_submission(baton_league *l, int64_t submission, baton_league_racer *r, int *found, baton_err *err)
{
    sqlite3_stmt *st;
    *found = 0;
    if (sqlite3_prepare_v2(l->db, "SELECT id, alias, track, track_path, model_hash, iteration, submitted_at FROM h2m_racers"
                                  " WHERE submission = ?", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the racers");
    sqlite3_bind_int64(st, 1, submission);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) read_racer(st, r), *found = 1;
    sqlite3_finalize(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? BATON_OK : league_db_fail(l, err, "cannot read the racers");
}

/* Whether a match of first (on the line) and second (behind) is stored already. */
static int raced_already(baton_league *l, int64_t first, int64_t second)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT count(*) FROM h2m_cars a JOIN h2m_cars b ON a.match = b.match WHERE a.racer = ?"
                                  " AND a.slot = 0 AND b.racer = ? AND b.slot = 1", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, first);
    sqlite3_bind_int64(st, 2, second);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return n > 0;
}

/* The new racer's row (naming its submission) and its model's folder, made together. */
static int store_racer(baton_league *l, baton_league_racer *me, int64_t submission, const char *tmp, baton_err *err)
{
    char final[4200];
    sqlite3_stmt *st = NULL;
    int rc = BATON_OK;
    if (sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return league_db_fail(l, err, "cannot begin a transaction");
    if (sqlite3_prepare_v2(l->db, "INSERT INTO h2m_racers(alias, track, track_path, model_hash, iteration, submitted_at,"
                                  " submission) VALUES(?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK) {
        rc = league_db_fail(l, err, "cannot store the racer");
    } else {
        sqlite3_bind_text(st, 1, me->alias, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, me->track, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, me->track_path, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, me->model_hash, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)me->iteration);
        sqlite3_bind_double(st, 6, me->submitted_at);
        if (submission > 0) sqlite3_bind_int64(st, 7, submission);
        else sqlite3_bind_null(st, 7);
        if (sqlite3_step(st) != SQLITE_DONE) rc = league_db_fail(l, err, "cannot store the racer");
        me->id = sqlite3_last_insert_rowid(l->db);
        if (!rc && !(rc = model_dir(l, me->id, final, sizeof final, err)) && rename(tmp, final))
            rc = baton_err_errno(err, errno, "cannot keep the model", final);
        if (!rc && sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            rc = league_db_fail(l, err, "cannot store the racer");
            baton_remove_tree(final);
        }
    }
    sqlite3_finalize(st);
    if (rc) sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int league_h2m_enter(baton_league *l, const char *ckpt, const char *alias, const char *track, int64_t submission,
                     double submitted_at, baton_league_racer *out, size_t *nmatches, baton_err *err)
{
    if (nmatches) *nmatches = 0;
    baton_league_racer me;
    memset(&me, 0, sizeof me);
    if (baton_league_alias_check(alias, err)) return err->code;
    if (!ckpt) return baton_err_set(err, BATON_ERR_ARG, "a checkpoint is required");
    int rc = track_of(track, me.track, me.track_path, err);
    if (!rc && (rc = baton_ppo_policy_check(ckpt, err))) baton_err_prefix(err, "%s", ckpt);
    if (rc) return rc;
    snprintf(me.alias, sizeof me.alias, "%s", alias);
    baton_league_racer *top = NULL;
    size_t ntop = 0;
    int again = 0;   /* a submission's earlier attempt entered it already: its missing matches now */
    if (submission > 0 && (rc = racer_of_submission(l, submission, &me, &again, err))) return rc;
    if ((rc = board(l, me.track, &top, &ntop, err))) return rc;   /* as it stands before its matches */
    if (!again) {
        char tmp[4300];
        if ((rc = export_model(l, ckpt, tmp, sizeof tmp, me.model_hash, &me.iteration, err))) {
            free(top);
            return rc;
        }
        me.submitted_at = submitted_at;
        if ((rc = store_racer(l, &me, submission, tmp, err))) {
            baton_remove_tree(tmp);
            free(top);
            return rc;
        }
    }
    size_t raced = 0, opponents = 0;
    for (size_t i = 0; i < ntop && opponents < BATON_LEAGUE_H2M_TOP; i++) {
        if (!strcmp(top[i].alias, me.alias)) continue;   /* one's own earlier model is no opponent */
        opponents++;
        for (int first = 0; first < 2; first++) {
            const baton_league_racer *a = first == 0 ? &me : &top[i], *b = first == 0 ? &top[i] : &me;
            if (raced_already(l, a->id, b->id)) {
                raced++;
                continue;
            }
            baton_err e2 = {0};
            int r2 = race_pair(l, a, b, &e2);
            if (r2 == BATON_ERR_NOMEM || r2 == BATON_ERR_IO) {   /* the league's own trouble: said */
                free(top);
                *err = e2;
                return r2;
            }
            if (r2) baton_log(BATON_LOG_WARN, "league: head-to-model on %s: %s against %s not raced: %s", me.track, me.alias,
                              top[i].alias, e2.msg);
            else raced++;
        }
    }
    free(top);
    if (nmatches) *nmatches = raced;
    if (submission > 0 && (rc = mark_done(l, submission, me.id, err))) return rc;
    return out ? league_h2m_racer(l, me.id, out, err) : BATON_OK;
}

int baton_league_h2m_matches(baton_league *l, const char *track, size_t limit, baton_league_match **out, size_t *n,
                             baton_err *err)
{
    *out = NULL;
    *n = 0;
    char name[256] = "";
    if (track && track_name(track, name, err)) return err->code;
    sqlite3_stmt *st, *cs;
    if (sqlite3_prepare_v2(l->db, track ? "SELECT id, track, laps, at, steps FROM h2m_matches WHERE track = ? ORDER BY id DESC LIMIT ?"
                                        : "SELECT id, track, laps, at, steps FROM h2m_matches ORDER BY id DESC LIMIT ?",
                           -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the matches");
    if (sqlite3_prepare_v2(l->db, "SELECT c.slot, c.racer, r.alias, c.position, c.completed, c.laps, c.total_s, c.best_lap_s,"
                                  " c.penalties_s, c.crashes, c.bumps, c.overtakes FROM h2m_cars c JOIN h2m_racers r ON"
                                  " r.id = c.racer WHERE c.match = ? ORDER BY c.slot", -1, &cs, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return league_db_fail(l, err, "cannot read the matches");
    }
    int k = 1;
    if (track) sqlite3_bind_text(st, k++, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, k, limit ? (sqlite3_int64)limit : -1);
    size_t cap = 0;
    int rc = BATON_OK, s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            baton_league_match *g = realloc(*out, (cap ? 2 * cap : 16) * sizeof *g);
            if (!g) {
                rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
                break;
            }
            *out = g, cap = cap ? 2 * cap : 16;
        }
        baton_league_match *m = &(*out)[(*n)++];
        memset(m, 0, sizeof *m);
        m->id = sqlite3_column_int64(st, 0);
        snprintf(m->track, sizeof m->track, "%s", (const char *)sqlite3_column_text(st, 1));
        m->laps = sqlite3_column_int(st, 2);
        m->at = sqlite3_column_double(st, 3);
        m->steps = (size_t)sqlite3_column_int64(st, 4);
        sqlite3_reset(cs);
        sqlite3_bind_int64(cs, 1, m->id);
        while (sqlite3_step(cs) == SQLITE_ROW && m->ncars < BATON_PPO_MATCH_MAX) {
            baton_league_match_car *c = &m->car[m->ncars++];
            c->slot = sqlite3_column_int(cs, 0);
            c->racer = sqlite3_column_int64(cs, 1);
            snprintf(c->alias, sizeof c->alias, "%s", (const char *)sqlite3_column_text(cs, 2));
            c->position = sqlite3_column_int(cs, 3);
            c->completed = sqlite3_column_int(cs, 4);
            c->laps = (uint32_t)sqlite3_column_int64(cs, 5);
            c->total_s = sqlite3_column_double(cs, 6);
            c->best_lap_s = sqlite3_column_double(cs, 7);
            c->penalties_s = sqlite3_column_double(cs, 8);
            c->crashes = (uint32_t)sqlite3_column_int64(cs, 9);
            c->bumps = (uint32_t)sqlite3_column_int64(cs, 10);
            c->overtakes = (uint32_t)sqlite3_column_int64(cs, 11);
        }
    }
    if (!rc && s != SQLITE_DONE) rc = league_db_fail(l, err, "cannot read the matches");
    sqlite3_finalize(st);
    sqlite3_finalize(cs);
    if (rc) free(*out), *out = NULL, *n = 0;
    return rc;
}

int baton_league_h2m_drive(baton_league *l, int64_t match, int slot, size_t *n, float **x, float **y, float **v,
                           baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT steps, data FROM h2m_cars WHERE match = ? AND slot = ?", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the match");
    sqlite3_bind_int64(st, 1, match);
    sqlite3_bind_int(st, 2, slot);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        rc = rc == SQLITE_DONE ? baton_err_set(err, BATON_ERR_NOTFOUND, "match %lld has no car %d", (long long)match, slot + 1)
                               : league_db_fail(l, err, "cannot read the match");
        sqlite3_finalize(st);
        return rc;
    }
    int64_t steps = sqlite3_column_int64(st, 0), len = sqlite3_column_bytes(st, 1);
    if (steps < 0 || steps > (1 << 26) || len != steps * 12) {
        sqlite3_finalize(st);
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: match %lld, car %d: %lld bytes for %lld steps", l->path,
                             (long long)match, slot + 1, (long long)len, (long long)steps);
    }
    float *b = malloc((size_t)len + 1);
    if (!b) {
        sqlite3_finalize(st);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    if (len) memcpy(b, sqlite3_column_blob(st, 1), (size_t)len);
    sqlite3_finalize(st);
    *n = (size_t)steps;
    *x = b, *y = b + steps, *v = b + 2 * steps;
    return BATON_OK;
}

cJSON *baton_league_racer_json(const baton_league_racer *r)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    if (r->rank) cJSON_AddNumberToObject(j, "rank", r->rank);
    cJSON_AddNumberToObject(j, "id", (double)r->id);
    cJSON_AddStringToObject(j, "alias", r->alias);
    cJSON_AddStringToObject(j, "track", r->track);
    cJSON_AddStringToObject(j, "race", "head-to-model");
    cJSON_AddNumberToObject(j, "rating", r->rating);
    cJSON_AddNumberToObject(j, "matches", r->matches);
    cJSON_AddNumberToObject(j, "wins", r->wins);
    cJSON_AddNumberToObject(j, "losses", r->losses);
    cJSON_AddNumberToObject(j, "iteration", (double)r->iteration);
    cJSON_AddStringToObject(j, "model_hash", r->model_hash);
    cJSON_AddNumberToObject(j, "submitted_at", r->submitted_at);
    return j;
}

cJSON *baton_league_match_json(const baton_league_match *m)
{
    cJSON *j = cJSON_CreateObject(), *cars = cJSON_CreateArray();
    if (!j || !cars) {
        cJSON_Delete(j);
        cJSON_Delete(cars);
        return NULL;
    }
    cJSON_AddNumberToObject(j, "id", (double)m->id);
    cJSON_AddStringToObject(j, "track", m->track);
    cJSON_AddNumberToObject(j, "laps", m->laps);
    cJSON_AddNumberToObject(j, "at", m->at);
    cJSON_AddNumberToObject(j, "steps", (double)m->steps);
    for (int i = 0; i < m->ncars; i++) {
        const baton_league_match_car *c = &m->car[i];
        cJSON *k = cJSON_CreateObject();
        cJSON_AddNumberToObject(k, "racer", (double)c->racer);
        cJSON_AddStringToObject(k, "alias", c->alias);
        cJSON_AddNumberToObject(k, "start", c->slot + 1);
        cJSON_AddNumberToObject(k, "position", c->position);
        cJSON_AddBoolToObject(k, "completed", c->completed);
        cJSON_AddNumberToObject(k, "laps", c->laps);
        cJSON_AddNumberToObject(k, "total_s", c->total_s);
        cJSON_AddNumberToObject(k, "best_lap_s", c->best_lap_s);
        cJSON_AddNumberToObject(k, "penalties_s", c->penalties_s);
        cJSON_AddNumberToObject(k, "crashes", c->crashes);
        cJSON_AddNumberToObject(k, "bumps", c->bumps);
        cJSON_AddNumberToObject(k, "overtakes", c->overtakes);
        cJSON_AddItemToArray(cars, k);
    }
    cJSON_AddItemToObject(j, "cars", cars);
    return j;
}
