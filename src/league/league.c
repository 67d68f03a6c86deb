/* league.c — the league's database (league.h, invariants 1-4 and 7): open and check the file
 * (upgrading a version-1 or -2 file),
 * submit (evaluate under the league's fixed rules, hash the checkpoint's MANIFEST, store entry,
 * laps and trace in one transaction), read the standings, the history and an entry's trace.
 *
 * Contract: prepared statements only, every value bound; a failed submission stores nothing; a file
 * of another application, schema version or one SQLite cannot read is an error naming the file. */
#include "league_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char schema[] =
    "CREATE TABLE entries(id INTEGER PRIMARY KEY, alias TEXT NOT NULL, model_hash TEXT NOT NULL,"
    " track TEXT NOT NULL, format INTEGER NOT NULL, completed INTEGER NOT NULL, laps INTEGER NOT NULL,"
    " best_lap_s REAL NOT NULL, total_s REAL NOT NULL, penalties_s REAL NOT NULL, resets INTEGER NOT NULL,"
    " iteration INTEGER NOT NULL, submitted_at REAL NOT NULL, checkpoint TEXT NOT NULL, track_path TEXT NOT NULL);"
    "CREATE INDEX entries_track ON entries(track, format);"
    "CREATE TABLE laps(entry INTEGER NOT NULL REFERENCES entries(id), lap INTEGER NOT NULL, time_s REAL NOT NULL,"
    " penalty_s REAL NOT NULL, resets INTEGER NOT NULL, steps INTEGER NOT NULL, PRIMARY KEY(entry, lap));"
    "CREATE TABLE traces(entry INTEGER PRIMARY KEY REFERENCES entries(id), steps INTEGER NOT NULL, data BLOB NOT NULL);";

/* What version 2 added (invariants 5 and 6). */
static const char schema2[] =
    "CREATE TABLE tokens(alias TEXT PRIMARY KEY, hash TEXT NOT NULL, created_at REAL NOT NULL, last_used_at REAL);"
    "CREATE TABLE submissions(id INTEGER PRIMARY KEY, alias TEXT NOT NULL, track TEXT NOT NULL, track_path TEXT NOT NULL,"
    " format INTEGER NOT NULL, state INTEGER NOT NULL CHECK(state BETWEEN " LEAGUE_SQL_QUEUED " AND " LEAGUE_SQL_FAILED "), reason TEXT,"
    " entry INTEGER REFERENCES entries(id), attempts INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL,"
    " submitted_at REAL NOT NULL, started_at REAL, finished_at REAL, archive BLOB);"
    "CREATE INDEX submissions_state ON submissions(state, id);"
    "CREATE INDEX submissions_alias ON submissions(alias, state);";

/* What version 3 added (invariant 7): race types, the entries' settings, the drives' objects. The
 * entries of a version-2 file are time trials under the rules the league had then. */
static const char schema3[] =
    "ALTER TABLE entries ADD COLUMN race INTEGER NOT NULL DEFAULT " LEAGUE_SQL_TIME_TRIAL
    " CHECK(race BETWEEN " LEAGUE_SQL_TIME_TRIAL " AND " LEAGUE_SQL_HEAD_TO_BOT ");"
    "ALTER TABLE entries ADD COLUMN race_settings TEXT NOT NULL DEFAULT '" LEAGUE_TT_SETTINGS "';"
    "DROP INDEX entries_track;"
    "CREATE INDEX entries_track ON entries(track, race, format);"
    "ALTER TABLE submissions ADD COLUMN race INTEGER NOT NULL DEFAULT " LEAGUE_SQL_TIME_TRIAL
    " CHECK(race BETWEEN " LEAGUE_SQL_TIME_TRIAL " AND " LEAGUE_SQL_HEAD_TO_BOT ");"
    "CREATE TABLE trace_objects(entry INTEGER PRIMARY KEY REFERENCES entries(id), objects INTEGER NOT NULL,"
    " steps INTEGER NOT NULL, shapes BLOB NOT NULL, data BLOB NOT NULL);";

/* What version 4 added (invariant 8): head-to-model's racers, matches and each car of a match with
 * its drive. */
static const char schema4[] =
    "CREATE TABLE h2m_racers(id INTEGER PRIMARY KEY, alias TEXT NOT NULL, track TEXT NOT NULL, track_path TEXT NOT NULL,"
    " model_hash TEXT NOT NULL, iteration INTEGER NOT NULL, submitted_at REAL NOT NULL, submission INTEGER);"
    "CREATE INDEX h2m_racers_track ON h2m_racers(track, alias);"
    "CREATE TABLE h2m_matches(id INTEGER PRIMARY KEY, track TEXT NOT NULL, laps INTEGER NOT NULL, at REAL NOT NULL,"
    " steps INTEGER NOT NULL);"
    "CREATE INDEX h2m_matches_track ON h2m_matches(track);"
    "CREATE TABLE h2m_cars(match INTEGER NOT NULL REFERENCES h2m_matches(id), slot INTEGER NOT NULL,"
    " racer INTEGER NOT NULL REFERENCES h2m_racers(id), position INTEGER NOT NULL, completed INTEGER NOT NULL,"
    " laps INTEGER NOT NULL, total_s REAL NOT NULL, best_lap_s REAL NOT NULL, penalties_s REAL NOT NULL,"
    " crashes INTEGER NOT NULL, bumps INTEGER NOT NULL, overtakes INTEGER NOT NULL, steps INTEGER NOT NULL,"
    " data BLOB NOT NULL, PRIMARY KEY(match, slot));"
    "CREATE INDEX h2m_cars_racer ON h2m_cars(racer);"
    /* submissions take head-to-model (race 3) and name the racer one made: the table rebuilt, as
     * SQLite changes no CHECK in place (foreign keys are off while a schema is applied) */
    "CREATE TABLE submissions4(id INTEGER PRIMARY KEY, alias TEXT NOT NULL, track TEXT NOT NULL, track_path TEXT NOT NULL,"
    " format INTEGER NOT NULL, state INTEGER NOT NULL CHECK(state BETWEEN " LEAGUE_SQL_QUEUED " AND " LEAGUE_SQL_FAILED "), reason TEXT,"
    " entry INTEGER REFERENCES entries(id), attempts INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL,"
    " submitted_at REAL NOT NULL, started_at REAL, finished_at REAL, archive BLOB,"
    " race INTEGER NOT NULL DEFAULT " LEAGUE_SQL_TIME_TRIAL " CHECK(race BETWEEN " LEAGUE_SQL_TIME_TRIAL " AND " LEAGUE_SQL_HEAD_TO_MODEL "),"
    " racer INTEGER REFERENCES h2m_racers(id));"
    "INSERT INTO submissions4(id, alias, track, track_path, format, state, reason, entry, attempts, bytes, submitted_at,"
    " started_at, finished_at, archive, race) SELECT id, alias, track, track_path, format, state, reason, entry, attempts,"
    " bytes, submitted_at, started_at, finished_at, archive, race FROM submissions;"
    "DROP TABLE submissions;"
    "ALTER TABLE submissions4 RENAME TO submissions;"
    "CREATE INDEX submissions_state ON submissions(state, id);"
    "CREATE INDEX submissions_alias ON submissions(alias, state);";

#define TRACE_STEP_BYTES 14 /* x, y, v as float32; lap, reset as uint8 */

double league_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int league_db_fail(baton_league *l, baton_err *err, const char *what)
{
    return baton_err_set(err, BATON_ERR_IO, "%s: %s: %s", l->path, what, sqlite3_errmsg(l->db));
}

static int pragma_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Run sql in one IMMEDIATE transaction, setting user_version to ver (and the application id). */
static int apply(baton_league *l, const char *sql, int ver, const char *what, baton_err *err)
{
    char *buf = malloc(strlen(sql) + 160);
    if (!buf) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    sprintf(buf, "BEGIN IMMEDIATE;%sPRAGMA application_id=%d;PRAGMA user_version=%d;COMMIT;", sql, BATON_LEAGUE_APP_ID,
            ver);
    char *msg = NULL;
    int rc = BATON_OK;
    if (sqlite3_exec(l->db, buf, NULL, NULL, &msg) != SQLITE_OK) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot %s: %s", l->path, what, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    }
    free(buf);
    return rc;
}

/* Invariant 1: a new (empty) file gets the schema; version 1 (entries only) gains version 2's,
 * 3's and 4's tables and columns, version 2 version 3's and 4's, version 3 version 4's, its rows
 * untouched but for the new columns' values (time trials); any other must be ours at our version. */
static int check_or_create(baton_league *l, baton_err *err)
{
    int64_t app = 0, ver = 0, tables = 0;
    int rc = pragma_int(l->db, "PRAGMA application_id", &app);
    if (!rc) rc = pragma_int(l->db, "PRAGMA user_version", &ver);
    if (!rc) rc = pragma_int(l->db, "SELECT count(*) FROM sqlite_master", &tables);
    if (rc)
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: not a league database SQLite can read: %s", l->path,
                             sqlite3_errstr(rc));
    if (app == 0 && ver == 0 && tables == 0) {
        char sql[sizeof schema + sizeof schema2 + sizeof schema3 + sizeof schema4];
        snprintf(sql, sizeof sql, "%s%s%s%s", schema, schema2, schema3, schema4);
        return apply(l, sql, BATON_LEAGUE_SCHEMA, "create the league's tables", err);
    }
    if (app != BATON_LEAGUE_APP_ID)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: not a league database (application_id 0x%08llx, a league's is 0x%08x)",
                             l->path, (unsigned long long)app, BATON_LEAGUE_APP_ID);
    if (ver >= 1 && ver <= 3) {
        char sql[sizeof schema2 + sizeof schema3 + sizeof schema4];
        snprintf(sql, sizeof sql, "%s%s%s", ver == 1 ? schema2 : "", ver <= 2 ? schema3 : "", schema4);
        if (ver <= 2)
            baton_log(BATON_LOG_INFO, "%s: league schema version %lld: adding race types (its entries are time trials)%s",
                      l->path, (long long)ver, ver == 1 ? ", tokens and submissions" : "");
        baton_log(BATON_LOG_INFO, "%s: league schema version %lld: adding head-to-model's racers and matches", l->path,
                  (long long)ver);
        return apply(l, sql, BATON_LEAGUE_SCHEMA, "upgrade the league's tables to version 4", err);
    }
    if (ver != BATON_LEAGUE_SCHEMA)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: league schema version %lld; this baton reads versions 1 to %d",
                             l->path, (long long)ver, BATON_LEAGUE_SCHEMA);
    return BATON_OK;
}

/* The database and its WAL and shared-memory files are the league's alone (tokens' hashes, racers'
 * traces): a new database is made 0600 before SQLite opens it (SQLite gives its WAL and -shm the
 * database's mode), and existing ones readable by others are made 0600. */
static int private_files(const char *path, baton_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
    else if (errno != EEXIST) return baton_err_errno(err, errno, "cannot create the league's database", path);
    static const char *const ext[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[4200];
        struct stat sb;
        snprintf(p, sizeof p, "%s%s", path, ext[i]);
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 077) && chmod(p, sb.st_mode & 0700))
            baton_log(BATON_LOG_WARN, "%s: cannot make it private (mode %03o): %s", p, sb.st_mode & 0777, strerror(errno));
    }
    return BATON_OK;
}

int baton_league_open(const char *path, baton_league **out, baton_err *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {   /* a FIFO, a device, a folder: said so, never opened */
        return baton_check_regular(path, err) ? err->code : baton_err_set(err, BATON_ERR_ARG, "%s: not a regular file", path);
    }
    baton_league *l = calloc(1, sizeof *l);
    if (!l) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    snprintf(l->path, sizeof l->path, "%s", path);
    int rc;
    if ((rc = private_files(path, err))) {
        free(l);
        return rc;
    }
    if (sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot open: %s", path, l->db ? sqlite3_errmsg(l->db) : "out of memory");
        baton_league_close(l);
        return rc;
    }
    sqlite3_busy_timeout(l->db, 10000);
    if ((rc = check_or_create(l, err))) {
        baton_league_close(l);
        return rc;
    }
    char *msg = NULL;
    if (sqlite3_exec(l->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"
                            " PRAGMA secure_delete=ON;", NULL, NULL,
                     &msg) != SQLITE_OK) {
        rc = baton_err_set(err, BATON_ERR_IO, "%s: %s", path, msg ? msg : "cannot set WAL mode");
        sqlite3_free(msg);
        baton_league_close(l);
        return rc;
    }
    *out = l;
    return BATON_OK;
}

void baton_league_close(baton_league *l)
{
    if (!l) return;
    sqlite3_close(l->db);
    free(l);
}

int league_manifest_hash(const char *dir, char out[65], baton_err *err)
{
    char path[4200];
    if (baton_path_join(path, sizeof path, dir, "MANIFEST", err)) return err->code;
    uint8_t *buf;
    size_t len;
    if (baton_file_read_all(path, 16u << 20, &buf, &len, err)) return err->code;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int ok = EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL);
    free(buf);
    if (!ok || mdlen != 32) return baton_err_set(err, BATON_ERR_IO, "%s: SHA-256 failed", path);
    for (unsigned i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    return BATON_OK;
}

/* The drive as the traces table holds it (invariant 3). */
static uint8_t *trace_blob(const baton_ppo_eval_result *r, size_t *len)
{
    size_t n = r->n;
    uint8_t *b = malloc(n * TRACE_STEP_BYTES + 1);
    if (!b) return NULL;
    float *x = (float *)b, *y = x + n, *v = y + n;
    uint8_t *lap = (uint8_t *)(v + n), *reset = lap + n;
    for (size_t k = 0; k < n; k++) {
        x[k] = (float)r->x[k];
        y[k] = (float)r->y[k];
        v[k] = (float)r->v[k];
        lap[k] = (uint8_t)(r->lap_of[k] > 255 ? 255 : r->lap_of[k]);
        reset[k] = r->reset[k];
    }
    *len = n * TRACE_STEP_BYTES;
    return b;
}

/* Invariant 6: the submission is done with this entry, in the caller's transaction. */
static int mark_done(baton_league *l, int64_t submission, int64_t entry, baton_err *err)
{
    league_sub_move m = {.id = submission, .ref = entry};
    int rc = league_sub_step(l, LEAGUE_SE_DONE_ENTRY, &m, err);
    if (!rc && m.changed != 1)
        rc = baton_err_set(err, BATON_ERR_BUSY, "%s: submission %lld is no longer running; its result is not stored", l->path,
                           (long long)submission);
    return rc;
}

int league_store(baton_league *l, baton_league_entry *e, const baton_ppo_eval_result *r, const char *checkpoint,
                 int64_t submission, baton_err *err)
{
    int64_t *id = &e->id;
    static const char ins[] =
        "INSERT INTO entries(alias, model_hash, track, format, completed, laps, best_lap_s, total_s, penalties_s,"
        " resets, iteration, submitted_at, checkpoint, track_path, race, race_settings)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    size_t blen = 0;
    uint8_t *blob = trace_blob(r, &blen);
    if (!blob) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    sqlite3_stmt *st = NULL;
    int rc = BATON_OK;
    if (sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        free(blob);
        return league_db_fail(l, err, "cannot begin a transaction");
    }
    if (sqlite3_prepare_v2(l->db, ins, -1, &st, NULL) != SQLITE_OK) goto fail;
    sqlite3_bind_text(st, 1, e->alias, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->model_hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->track, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, (int)e->format);
    sqlite3_bind_int(st, 5, e->completed);
    sqlite3_bind_int64(st, 6, e->laps);
    sqlite3_bind_double(st, 7, e->best_lap_s);
    sqlite3_bind_double(st, 8, e->total_s);
    sqlite3_bind_double(st, 9, e->penalties_s);
    sqlite3_bind_int64(st, 10, e->resets);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)e->iteration);
    sqlite3_bind_double(st, 12, e->submitted_at);
    sqlite3_bind_text(st, 13, checkpoint, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 14, e->track_path, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 15, e->race);
    sqlite3_bind_text(st, 16, e->settings, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    *id = sqlite3_last_insert_rowid(l->db);
    if (sqlite3_prepare_v2(l->db, "INSERT INTO laps(entry, lap, time_s, penalty_s, resets, steps) VALUES(?,?,?,?,?,?)", -1,
                           &st, NULL) != SQLITE_OK)
        goto fail;
    for (size_t k = 0; k < r->nlaps; k++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, *id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)k + 1);
        sqlite3_bind_double(st, 3, r->laps[k].time_s);
        sqlite3_bind_double(st, 4, r->laps[k].penalty_s);
        sqlite3_bind_int64(st, 5, r->laps[k].resets);
        sqlite3_bind_int64(st, 6, r->laps[k].steps);
        if (sqlite3_step(st) != SQLITE_DONE) goto fail;
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(l->db, "INSERT INTO traces(entry, steps, data) VALUES(?,?,?)", -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, *id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)r->n);
    sqlite3_bind_blob64(st, 3, blob, blen, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = league_objects_store(l, *id, r, err))) goto undo;
    if (submission > 0 && (rc = mark_done(l, submission, *id, err))) goto undo;
    if (sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto fail;
    free(blob);
    return BATON_OK;
fail:
    rc = league_db_fail(l, err, "cannot store the entry");
undo:
    sqlite3_finalize(st);
    sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    free(blob);
    return rc;
}

int league_evaluate(const char *ckpt, const char *alias, const char *track, int race, baton_league_format format,
                    baton_league_entry *e, baton_ppo_eval_result *r, baton_err *err)
{
    memset(e, 0, sizeof *e);
    memset(r, 0, sizeof *r);
    if (baton_league_alias_check(alias, err)) return err->code;
    if (!ckpt || !track) return baton_err_set(err, BATON_ERR_ARG, "a checkpoint and a track are required");
    baton_ppo_eval_opts o;   /* the race's official settings, whatever the model was trained with */
    if (league_race_official(race, &o, err) || league_race_settings(race, e->settings, sizeof e->settings, err))
        return err->code;
    e->race = race;
    o.ckpt = ckpt;
    o.track = track;
    int rc = baton_ppo_eval(&o, r, err);
    if (rc) {
        baton_err_prefix(err, "evaluating %s", ckpt);
        baton_ppo_eval_result_free(r);
        return rc;
    }
    snprintf(e->alias, sizeof e->alias, "%s", alias);
    snprintf(e->track, sizeof e->track, "%s", r->track_name);
    /* a built-in by its name; a file by its absolute path, so the league's page can draw it */
    char *abs = strchr(r->track, '/') || strstr(r->track, ".npy") ? realpath(r->track, NULL) : NULL;
    snprintf(e->track_path, sizeof e->track_path, "%s", abs ? abs : r->track);
    free(abs);
    e->format = format;
    e->completed = r->completed;
    e->laps = (uint32_t)r->nlaps;
    e->best_lap_s = r->best_lap_s;
    e->total_s = r->total_s;
    e->penalties_s = r->penalties_s;
    e->resets = r->resets;
    e->crashes = r->crashes;
    e->iteration = r->iteration;
    e->submitted_at = league_now();
    if ((rc = league_manifest_hash(r->checkpoint, e->model_hash, err))) baton_ppo_eval_result_free(r);
    return rc;
}

int baton_league_submit(baton_league *l, const char *ckpt, const char *alias, const char *track, int race,
                        baton_league_format format, baton_league_entry *out, baton_err *err)
{
    baton_league_entry e;
    baton_ppo_eval_result r;
    int rc = league_evaluate(ckpt, alias, track, race, format, &e, &r, err);
    if (rc) return rc;
    rc = league_store(l, &e, &r, r.checkpoint, 0, err);
    baton_ppo_eval_result_free(&r);
    if (!rc && out) *out = e;
    return rc;
}

/* ------------------------------------------------------------------ reading */
static const char cols[] = "id, alias, model_hash, track, format, completed, laps, best_lap_s, total_s, penalties_s,"
                           " resets, iteration, submitted_at, track_path, race, race_settings";

static void read_row(sqlite3_stmt *st, baton_league_entry *e)
{
    memset(e, 0, sizeof *e);
    e->id = sqlite3_column_int64(st, 0);
    snprintf(e->alias, sizeof e->alias, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(e->model_hash, sizeof e->model_hash, "%s", (const char *)sqlite3_column_text(st, 2));
    snprintf(e->track, sizeof e->track, "%s", (const char *)sqlite3_column_text(st, 3));
    e->format = sqlite3_column_int(st, 4) == BATON_LEAGUE_TOTAL ? BATON_LEAGUE_TOTAL : BATON_LEAGUE_TIME_TRIAL;
    e->completed = sqlite3_column_int(st, 5) != 0;
    e->laps = (uint32_t)sqlite3_column_int64(st, 6);
    e->best_lap_s = sqlite3_column_double(st, 7);
    e->total_s = sqlite3_column_double(st, 8);
    e->penalties_s = sqlite3_column_double(st, 9);
    e->resets = (uint32_t)sqlite3_column_int64(st, 10);
    e->iteration = (uint64_t)sqlite3_column_int64(st, 11);
    e->submitted_at = sqlite3_column_double(st, 12);
    snprintf(e->track_path, sizeof e->track_path, "%s", (const char *)sqlite3_column_text(st, 13));
    int race = sqlite3_column_int(st, 14);
    e->race = race >= 0 && race < BATON_LEAGUE_RACES ? race : BATON_RACE_TIME_TRIAL;
    snprintf(e->settings, sizeof e->settings, "%s", (const char *)sqlite3_column_text(st, 15));
}

/* Run a SELECT of `cols` with up to two bound values (a race type when race >= 0, a track) into a
 * malloc'd array. */
static int select_entries(baton_league *l, const char *where, int race, const char *track,
                          baton_league_entry **out, size_t *n, baton_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM entries %s", cols, where);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) return league_db_fail(l, err, "cannot read the entries");
    int k = 1;
    if (race >= 0) sqlite3_bind_int(st, k++, race);
    if (track) sqlite3_bind_text(st, k++, track, -1, SQLITE_STATIC);
    size_t cap = 16, cnt = 0;
    baton_league_entry *e = malloc(cap * sizeof *e);
    int rc = e ? SQLITE_ROW : SQLITE_NOMEM;
    while (e && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            baton_league_entry *g = realloc(e, 2 * cap * sizeof *e);
            if (!g) {
                rc = SQLITE_NOMEM;
                break;
            }
            e = g;
            cap *= 2;
        }
        read_row(st, &e[cnt++]);
    }
    if (rc != SQLITE_DONE) {
        int r2 = rc == SQLITE_NOMEM ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory")
                                    : league_db_fail(l, err, "cannot read the entries");
        sqlite3_finalize(st);
        free(e);
        return r2;
    }
    sqlite3_finalize(st);
    *out = e;
    *n = cnt;
    return BATON_OK;
}

int league_history(baton_league *l, baton_league_entry **out, size_t *n, baton_err *err)
{
    return select_entries(l, "ORDER BY id", -1, NULL, out, n, err);
}

int baton_league_entry_standing(baton_league *l, int64_t id, baton_league_entry *e, size_t *entries, baton_err *err)
{
    baton_league_entry *all = NULL, *st = NULL;
    size_t n = 0, ns = 0;
    int rc = league_history(l, &all, &n, err), found = 0;
    for (size_t i = 0; !rc && i < n && !found; i++)
        if (all[i].id == id) *e = all[i], found = 1;
    free(all);
    if (rc) return rc;
    if (!found) return baton_err_set(err, BATON_ERR_NOTFOUND, "entry %lld: no such entry", (long long)id);
    e->rank = 0;
    if ((rc = baton_league_standings(l, e->track, e->race, e->format, &st, &ns, err))) return rc;
    for (size_t i = 0; i < ns; i++)
        if (st[i].id == id) e->rank = st[i].rank;
    free(st);
    *entries = ns;
    return BATON_OK;
}

/* A track as entries store it (race_eval's name: a built-in's, or a .npy's stem) from any spelling
 * a racer may give: that name, or a path to the .npy file. */
static int track_key(const char *spelling, char *key, size_t cap, baton_err *err)
{
    snprintf(key, cap, "%s", spelling);
    if (!strchr(spelling, '/') && !strstr(spelling, ".npy")) return BATON_OK;
    baton_race_track *t;
    if (baton_race_track_load(spelling, &t, err)) return baton_err_prefix(err, "--track");
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    snprintf(key, cap, "%s", in.name);
    baton_race_track_free(t);
    return BATON_OK;
}

int baton_league_standings(baton_league *l, const char *track, int race, baton_league_format f, baton_league_entry **out,
                           size_t *n, baton_err *err)
{
    if (race < 0 || race >= BATON_LEAGUE_RACES)
        return baton_err_set(err, BATON_ERR_USAGE, "race: type %d is not one of the league's", race);
    baton_league_entry *e;
    size_t cnt;
    char key[256];
    if (track && track_key(track, key, sizeof key, err)) return err->code;
    /* every entry of the track and race type, whatever format it was submitted under: the league
     * evaluates every model of a race under the same settings, so each has both a best lap and a
     * total to be ranked by */
    int rc = select_entries(l, track ? "WHERE race = ? AND track = ? ORDER BY track, id" : "WHERE race = ? ORDER BY track, id",
                            race, track ? key : NULL, &e, &cnt, err);
    if (rc) return rc;
    /* rank each track's run of rows; keep only the kept ones, tracks in name order */
    size_t w = 0;
    for (size_t a = 0; a < cnt;) {
        size_t b = a;
        while (b < cnt && !strcmp(e[b].track, e[a].track)) b++;
        size_t kept;
        league_rank_entries(e + a, b - a, f, &kept);
        memmove(e + w, e + a, kept * sizeof *e);
        w += kept;
        a = b;
    }
    *out = e;
    *n = w;
    return BATON_OK;
}

int league_trace(baton_league *l, int64_t id, size_t *n, float **x, float **y, float **v, uint8_t **lap,
                       uint8_t **reset, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT steps, data FROM traces WHERE entry = ?", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the trace");
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        rc = rc == SQLITE_DONE ? baton_err_set(err, BATON_ERR_NOTFOUND, "no entry %lld", (long long)id)
                               : league_db_fail(l, err, "cannot read the trace");
        sqlite3_finalize(st);
        return rc;
    }
    int64_t steps = sqlite3_column_int64(st, 0);
    const void *data = sqlite3_column_blob(st, 1);
    int64_t len = sqlite3_column_bytes(st, 1);
    if (steps < 0 || steps > (1 << 26) || len != steps * TRACE_STEP_BYTES) {
        sqlite3_finalize(st);
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: entry %lld: the trace holds %lld bytes for %lld steps",
                             l->path, (long long)id, (long long)len, (long long)steps);
    }
    uint8_t *b = malloc((size_t)len + 1);
    if (!b) {
        sqlite3_finalize(st);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    if (len) memcpy(b, data, (size_t)len);
    sqlite3_finalize(st);
    size_t m = (size_t)steps;
    *n = m;
    *x = (float *)b;
    *y = *x + m;
    *v = *y + m;
    *lap = (uint8_t *)(*v + m);
    *reset = *lap + m;
    return BATON_OK;
}

int league_tracks(baton_league *l, baton_league_track **out, size_t *n, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT track, count(*), count(DISTINCT alias), max(track_path),"
                           " sum(race = " LEAGUE_SQL_TIME_TRIAL "), sum(race = " LEAGUE_SQL_OBJECT_AVOIDANCE "),"
                           " sum(race = " LEAGUE_SQL_HEAD_TO_BOT ") FROM entries GROUP BY track ORDER BY track", -1, &st,
                           NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the tracks");
    size_t cap = 8, cnt = 0;
    baton_league_track *t = malloc(cap * sizeof *t);
    int rc = t ? SQLITE_ROW : SQLITE_NOMEM;
    while (t && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            baton_league_track *g = realloc(t, 2 * cap * sizeof *t);
            if (!g) {
                rc = SQLITE_NOMEM;
                break;
            }
            t = g, cap *= 2;
        }
        baton_league_track *x = &t[cnt++];
        snprintf(x->track, sizeof x->track, "%s", (const char *)sqlite3_column_text(st, 0));
        x->entries = (size_t)sqlite3_column_int64(st, 1);
        x->aliases = (size_t)sqlite3_column_int64(st, 2);
        snprintf(x->track_path, sizeof x->track_path, "%s", (const char *)sqlite3_column_text(st, 3));
        for (int r = 0; r < BATON_LEAGUE_RACES; r++) x->race_entries[r] = (size_t)sqlite3_column_int64(st, 4 + r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(t);
        return rc == SQLITE_NOMEM ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : league_db_fail(l, err, "cannot read the tracks");
    }
    *out = t;
    *n = cnt;
    return BATON_OK;
}
