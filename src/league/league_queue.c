/* league_queue.c — racers' tokens and the submissions queue (league.h, invariants 5 and 6):
 * make, check and revoke a token; queue an upload; read a submission; recover the queue after a
 * server died; run the oldest queued submission.
 *
 * Contract: a token is returned once and only its SHA-256 stored, compared in constant time; a
 * submission moves queued -> running -> done | failed through league_sub_step (league_state.c,
 * with the diagram), each move one UPDATE guarded by the state it leaves, and done is set in the
 * transaction that stores its entry (league_store), so a submission is never counted twice and
 * never lost. */
#include "league_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static void sha256_hex(const char *s, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) || n != 32) {
        memset(out, '0', 64);   /* never equal to a real digest's lookup: check_token compares lengths too */
        out[64] = 0;
        return;
    }
    for (unsigned i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* ------------------------------------------------------------------ tokens */
int baton_league_token_add(baton_league *l, const char *alias, int rotate, char token[BATON_LEAGUE_TOKEN_LEN + 1],
                           baton_err *err)
{
    if (baton_league_alias_check(alias, err)) return err->code;
    unsigned char rnd[32];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return baton_err_errno(err, errno, "cannot draw random bytes for a token", "getrandom");
    memcpy(token, "btn_", 4);
    for (int i = 0; i < 32; i++) snprintf(token + 4 + 2 * i, 3, "%02x", rnd[i]);
    char hash[65];
    sha256_hex(token, hash);
    sqlite3_stmt *st;
    const char *sql = rotate ? "INSERT INTO tokens(alias, hash, created_at) VALUES(?,?,?) ON CONFLICT(alias) DO UPDATE"
                               " SET hash = excluded.hash, created_at = excluded.created_at, last_used_at = NULL"
                             : "INSERT INTO tokens(alias, hash, created_at) VALUES(?,?,?)";
    if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) return league_db_fail(l, err, "cannot store the token");
    sqlite3_bind_text(st, 1, alias, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, league_now());
    int s = sqlite3_step(st), rc = BATON_OK;
    if (s == SQLITE_CONSTRAINT)
        rc = baton_err_set(err, BATON_ERR_BUSY, "%s: '%s' has a token already (--rotate makes a new one and retires it)",
                           l->path, alias);
    else if (s != SQLITE_DONE)
        rc = league_db_fail(l, err, "cannot store the token");
    sqlite3_finalize(st);
    if (rc) memset(token, 0, BATON_LEAGUE_TOKEN_LEN + 1);
    return rc;
}

int baton_league_token_revoke(baton_league *l, const char *alias, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "DELETE FROM tokens WHERE alias = ?", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot revoke the token");
    sqlite3_bind_text(st, 1, alias, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? BATON_OK : league_db_fail(l, err, "cannot revoke the token");
    sqlite3_finalize(st);
    if (!rc && sqlite3_changes(l->db) == 0)
        rc = baton_err_set(err, BATON_ERR_NOTFOUND, "%s: '%s' has no token", l->path, alias);
    return rc;
}

int league_token_check(baton_league *l, const char *alias, const char *token, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT hash FROM tokens WHERE alias = ?", -1, &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the tokens");
    sqlite3_bind_text(st, 1, alias, -1, SQLITE_STATIC);
    char want[65] = {0}, got[65];
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) snprintf(want, sizeof want, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE) return league_db_fail(l, err, "cannot read the tokens");
    sha256_hex(token ? token : "", got);
    int ok = s == SQLITE_ROW && strlen(want) == 64 && CRYPTO_memcmp(want, got, 64) == 0;
    if (!ok) return baton_err_set(err, BATON_ERR_DENIED, "the token is not this alias's (baton race token add ALIAS makes one)");
    if (sqlite3_prepare_v2(l->db, "UPDATE tokens SET last_used_at = ? WHERE alias = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_double(st, 1, league_now());
        sqlite3_bind_text(st, 2, alias, -1, SQLITE_STATIC);
        sqlite3_step(st);   /* a record of use only: its failure does not refuse the racer */
        sqlite3_finalize(st);
    }
    return BATON_OK;
}

int baton_league_tokens(baton_league *l, baton_league_token_info **out, size_t *n, baton_err *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT alias, created_at, coalesce(last_used_at, 0) FROM tokens ORDER BY alias", -1, &st,
                           NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the tokens");
    size_t cap = 8, cnt = 0;
    baton_league_token_info *t = malloc(cap * sizeof *t);
    int s = t ? SQLITE_ROW : SQLITE_NOMEM;
    while (t && (s = sqlite3_step(st)) == SQLITE_ROW) {
        if (cnt == cap) {
            baton_league_token_info *g = realloc(t, 2 * cap * sizeof *t);
            if (!g) {
                s = SQLITE_NOMEM;
                break;
            }
            t = g, cap *= 2;
        }
        snprintf(t[cnt].alias, sizeof t[cnt].alias, "%s", (const char *)sqlite3_column_text(st, 0));
        t[cnt].created_at = sqlite3_column_double(st, 1);
        t[cnt].last_used_at = sqlite3_column_double(st, 2);
        cnt++;
    }
    sqlite3_finalize(st);
    if (s != SQLITE_DONE) {
        free(t);
        return s == SQLITE_NOMEM ? baton_err_set(err, BATON_ERR_NOMEM, "out of memory") : league_db_fail(l, err, "cannot read the tokens");
    }
    *out = t;
    *n = cnt;
    return BATON_OK;
}

/* ------------------------------------------------------------------ submissions */
int league_waiting(baton_league *l, const char *alias, int64_t *id, baton_err *err)
{
    *id = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT id FROM submissions WHERE alias = ? AND state IN (" LEAGUE_SQL_QUEUED ", " LEAGUE_SQL_RUNNING ") ORDER BY id LIMIT 1", -1,
                           &st, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot read the queue");
    sqlite3_bind_text(st, 1, alias, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? BATON_OK : league_db_fail(l, err, "cannot read the queue");
}

int league_enqueue(baton_league *l, const baton_league_upload *u, int64_t *id, baton_err *err)
{
    *id = 0;
    if (sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return league_db_fail(l, err, "cannot begin a transaction");
    sqlite3_stmt *st = NULL;
    int64_t waiting;
    int rc = league_waiting(l, u->alias, &waiting, err);
    if (rc) goto undo;
    if (waiting) {
        rc = baton_err_set(err, BATON_ERR_BUSY, "'%s' has submission %lld waiting to be evaluated; one at a time", u->alias,
                           (long long)waiting);
        goto undo;
    }
    if (sqlite3_prepare_v2(l->db, "INSERT INTO submissions(alias, track, track_path, format, state, bytes, submitted_at, race)"
                                  " VALUES(?,?,?,?," LEAGUE_SQL_QUEUED ",?,?,?)", -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_text(st, 1, u->alias, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, u->track, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, u->track_path, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, (int)u->format);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)u->len);
    sqlite3_bind_double(st, 6, league_now());
    sqlite3_bind_int(st, 7, u->race);
    if (sqlite3_step(st) != SQLITE_DONE) goto fail;
    sqlite3_finalize(st);
    st = NULL;
    *id = sqlite3_last_insert_rowid(l->db);
    /* the archive goes to the work folder, never into the database (whose pages would keep it) */
    if ((rc = league_archive_put(l, *id, u->archive, u->len, err))) goto undo;
    if (sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        league_archive_drop(l, *id);
        goto fail;
    }
    return BATON_OK;
fail:
    rc = league_db_fail(l, err, "cannot queue the submission");
undo:
    *id = 0;
    sqlite3_finalize(st);
    sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* the columns read_sub reads (15; claim reads the archive after them, column 15) */
static const char sub_cols[] = "id, alias, track, track_path, format, state, coalesce(reason, ''), coalesce(entry, 0),"
                               " attempts, bytes, submitted_at, coalesce(started_at, 0), coalesce(finished_at, 0), race,"
                               " coalesce(racer, 0)";

static void read_sub(sqlite3_stmt *st, baton_league_submission *s)
{
    memset(s, 0, sizeof *s);
    s->id = sqlite3_column_int64(st, 0);
    snprintf(s->alias, sizeof s->alias, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(s->track, sizeof s->track, "%s", (const char *)sqlite3_column_text(st, 2));
    snprintf(s->track_path, sizeof s->track_path, "%s", (const char *)sqlite3_column_text(st, 3));
    s->format = sqlite3_column_int(st, 4) == BATON_LEAGUE_TOTAL ? BATON_LEAGUE_TOTAL : BATON_LEAGUE_TIME_TRIAL;
    int state = sqlite3_column_int(st, 5);
    s->state = state >= BATON_LEAGUE_QUEUED && state <= BATON_LEAGUE_FAILED ? (baton_league_state)state : BATON_LEAGUE_FAILED;
    snprintf(s->reason, sizeof s->reason, "%s", (const char *)sqlite3_column_text(st, 6));
    s->entry = sqlite3_column_int64(st, 7);
    s->attempts = (uint32_t)sqlite3_column_int64(st, 8);
    s->bytes = (uint64_t)sqlite3_column_int64(st, 9);
    s->submitted_at = sqlite3_column_double(st, 10);
    s->started_at = sqlite3_column_double(st, 11);
    s->finished_at = sqlite3_column_double(st, 12);
    int race = sqlite3_column_int(st, 13);
    s->race = race >= 0 && race <= BATON_LEAGUE_H2M ? race : BATON_RACE_TIME_TRIAL;
    s->racer = sqlite3_column_int64(st, 14);
}

int league_submission_get(baton_league *l, int64_t id, baton_league_submission *s, baton_err *err)
{
    char sql[400];
    snprintf(sql, sizeof sql, "SELECT %s FROM submissions WHERE id = ?", sub_cols);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) return league_db_fail(l, err, "cannot read the submission");
    sqlite3_bind_int64(st, 1, id);
    int r = sqlite3_step(st), rc = BATON_OK;
    if (r == SQLITE_ROW) read_sub(st, s);
    else if (r == SQLITE_DONE) rc = baton_err_set(err, BATON_ERR_NOTFOUND, "no submission %lld", (long long)id);
    else rc = league_db_fail(l, err, "cannot read the submission");
    sqlite3_finalize(st);
    return rc;
}

cJSON *league_submission_json(const baton_league_submission *s)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "id", (double)s->id);
    cJSON_AddStringToObject(j, "alias", s->alias);
    cJSON_AddStringToObject(j, "track", s->track);
    cJSON_AddStringToObject(j, "race", baton_league_race_name(s->race));
    if (s->race != BATON_LEAGUE_H2M) cJSON_AddStringToObject(j, "format", baton_league_format_name(s->format));
    cJSON_AddStringToObject(j, "state", baton_league_state_name(s->state));
    if (s->state != BATON_LEAGUE_DONE && s->reason[0]) cJSON_AddStringToObject(j, "reason", s->reason);   /* why it failed, or why it waits again */
    if (s->entry) cJSON_AddNumberToObject(j, "entry", (double)s->entry);
    if (s->racer) cJSON_AddNumberToObject(j, "racer", (double)s->racer);
    cJSON_AddNumberToObject(j, "attempts", s->attempts);
    cJSON_AddNumberToObject(j, "bytes", (double)s->bytes);
    cJSON_AddNumberToObject(j, "submitted_at", s->submitted_at);
    if (s->started_at > 0) cJSON_AddNumberToObject(j, "started_at", s->started_at);
    if (s->finished_at > 0) cJSON_AddNumberToObject(j, "finished_at", s->finished_at);
    return j;
}

int league_queue_recover(baton_league *l, size_t *requeued, baton_err *err)
{
    *requeued = 0;
    char why[200];
    snprintf(why, sizeof why, "the evaluation was interrupted %d times (the server stopped during it)", BATON_LEAGUE_ATTEMPTS);
    league_sub_move failed = {.reason = why}, back = {0};
    int rc = league_sub_step(l, LEAGUE_SE_GIVE_UP, &failed, err);
    if (!rc) rc = league_sub_step(l, LEAGUE_SE_RESTART, &back, err);
    if (!rc) *requeued = (size_t)back.changed;
    if (failed.changed) baton_log(BATON_LOG_WARN, "%s: %d submission(s) failed: %s", l->path, failed.changed, why);
    return rc;
}

typedef struct claimed {
    baton_league_submission *s;
    uint8_t **archive;
    size_t *len;
} claimed;

static int claimed_row(sqlite3_stmt *st, void *arg, baton_err *err)
{
    claimed *c = arg;
    read_sub(st, c->s);
    const void *b = sqlite3_column_blob(st, 15);   /* queued by an older baton, which kept it there */
    size_t n = (size_t)sqlite3_column_bytes(st, 15);
    if (b && (*c->archive = malloc(n + 1))) {
        memcpy(*c->archive, b, n);
        *c->len = n;
    } else if (b) {
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    return BATON_OK;
}

/* Claim the oldest queued submission: *s and its archive (malloc'd), or s->id 0 when none. */
static int claim(baton_league *l, baton_league_submission *s, uint8_t **archive, size_t *len, baton_err *err)
{
    memset(s, 0, sizeof *s);
    *archive = NULL;
    *len = 0;
    char cols[400];
    snprintf(cols, sizeof cols, "%s, archive", sub_cols);
    claimed c = {s, archive, len};
    league_sub_move m = {.returning = cols, .row = claimed_row, .arg = &c};
    int rc = league_sub_step(l, LEAGUE_SE_CLAIM, &m, err);
    if (rc) {
        free(*archive);
        *archive = NULL;
        s->id = 0;
    }
    return rc;
}

int league_requeue(baton_league *l, int64_t id, const char *why, baton_err *err)
{
    char said[sizeof ((baton_err *)0)->msg];
    snprintf(said, sizeof said, "the server could not finish its attempt; it is retried: %s", why);
    league_unpath(said, sizeof said, l->path, "the league's database");
    league_sub_move m = {.id = id, .reason = said};
    int rc = league_sub_step(l, LEAGUE_SE_REQUEUE, &m, err);
    if (!rc && m.changed) baton_log(BATON_LOG_WARN, "league: submission %lld queued again: %s", (long long)id, why);
    return rc;
}

/* For tests that kill the server mid-evaluation or fill its disk during one: an evaluation of a
 * small model takes a tenth of a second, too short a window to act in reliably; this holds the
 * submission running, its upload unpacked. */
static void test_hold(void)
{
    const char *hold = getenv("BATON_LEAGUE_TEST_HOLD_MS");
    if (hold && atoi(hold) > 0) {
        int ms = atoi(hold) > 60000 ? 60000 : atoi(hold);
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The server's own failures, which say nothing of the model: a retry may succeed. */
static int retryable(int rc) { return rc == BATON_ERR_IO || rc == BATON_ERR_NOSPACE || rc == BATON_ERR_NOMEM; }

/* The claimed submission's evaluation: BATON_OK with *bad set and why said as the racer reads it
 * when the model failed; an error (the server's) when the attempt could not be made or stored. */
static int attempt(baton_league *l, const baton_league_submission *s, uint8_t *archive, size_t len, const char *tmp_parent,
                   int *bad, baton_err *why, baton_err *err)
{
    league_unpacked up;
    baton_league_entry e;
    baton_ppo_eval_result r = {0};
    int rc = BATON_OK;
    *bad = league_unpack(archive, len, tmp_parent, &up, why);
    test_hold();
    if (*bad && retryable(*bad)) {
        *err = *why;   /* no room to unpack: the server's, not the model's */
        *bad = 0;
        return err->code;
    }
    if (!*bad && s->race == BATON_LEAGUE_H2M) {   /* entered and raced; done with the racer's row */
        baton_league_racer racer;
        size_t matches = 0;
        baton_err e2 = {0};
        rc = league_h2m_enter(l, up.ckpt, s->alias, s->track_path, s->id, s->submitted_at, &racer, &matches, &e2);
        if (rc && !retryable(rc) && rc != BATON_ERR_BUSY) {   /* the model's: said in the archive's names */
            *bad = rc, rc = BATON_OK, *why = e2;
            league_unpacked_msg(&up, why->msg, sizeof why->msg);
            league_unpath(why->msg, sizeof why->msg, s->track_path, s->track);
            league_unpath(why->msg, sizeof why->msg, l->path, "the league's database");
        } else if (rc) {
            *err = e2;
        } else {
            baton_log(BATON_LOG_INFO, "league: submission %lld done: racer %lld, %zu match(es)", (long long)s->id,
                      (long long)racer.id, matches);
        }
        if (up.dir[0]) baton_remove_tree(up.dir);
        return rc;
    }
    if (!*bad && (*bad = league_evaluate(up.ckpt, s->alias, s->track_path, s->race, s->format, &e, &r, why))) {
        baton_log(BATON_LOG_INFO, "league: submission %lld: %s", (long long)s->id, why->msg);   /* the full paths */
        league_unpacked_msg(&up, why->msg, sizeof why->msg);   /* the reason the racer reads: the archive's names */
        league_unpath(why->msg, sizeof why->msg, s->track_path, s->track);
        league_unpath(why->msg, sizeof why->msg, l->path, "the league's database");
    }
    if (!*bad) {
        char label[64];
        snprintf(label, sizeof label, "submission %lld", (long long)s->id);
        e.submitted_at = s->submitted_at;   /* ties go to the earlier upload, not the earlier evaluation */
        rc = league_store(l, &e, &r, label, s->id, err);
        baton_ppo_eval_result_free(&r);
    }
    if (up.dir[0]) baton_remove_tree(up.dir);   /* after the store: its room is not the entry's */
    if (*bad) return BATON_OK;
    if (!rc)
        baton_log(BATON_LOG_INFO, "league: submission %lld done: entry %lld, best lap %.3f s", (long long)s->id,
                  (long long)e.id, e.best_lap_s);
    return rc;
}

int league_queue_run_one(baton_league *l, const char *tmp_parent, int64_t *id, baton_err *err)
{
    *id = 0;
    baton_league_submission s;
    uint8_t *archive = NULL;
    size_t len = 0;
    int rc = claim(l, &s, &archive, &len, err);
    if (rc || !s.id) return rc;
    *id = s.id;
    baton_log(BATON_LOG_INFO, "league: evaluating submission %lld (%s on %s, attempt %u)", (long long)s.id, s.alias,
              s.track, s.attempts);
    baton_err why = {0};
    int bad = 0;
    if (!archive) {
        rc = league_archive_get(l, s.id, &archive, &len, err);
        if (rc == BATON_ERR_NOTFOUND) {   /* removed by hand: nothing left to evaluate */
            baton_log(BATON_LOG_WARN, "league: submission %lld: %s", (long long)s.id, err->msg);
            snprintf(why.msg, sizeof why.msg, "its upload is no longer on the server; submit it again");
            bad = 1;
            rc = BATON_OK;
        }
    }
    if (!rc && !bad) rc = attempt(l, &s, archive, len, tmp_parent, &bad, &why, err);
    free(archive);
    if (rc == BATON_ERR_BUSY) return BATON_OK;   /* no longer running: another server took it */
    if (rc) {   /* the server's failure, not the model's: back in the queue, the attempt not counted */
        baton_err e2 = {0};
        if (league_requeue(l, s.id, err->msg, &e2)) baton_log(BATON_LOG_WARN, "league: %s", e2.msg);
        return rc;
    }
    if (!bad) {
        league_archive_drop(l, s.id);
        return BATON_OK;
    }
    league_sub_move m = {.id = s.id, .reason = why.msg};
    rc = league_sub_step(l, LEAGUE_SE_FAIL, &m, err);
    if (!rc) league_archive_drop(l, s.id);
    baton_log(BATON_LOG_INFO, "league: submission %lld failed: %s", (long long)s.id, why.msg);
    return rc;
}
