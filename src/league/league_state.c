/* league_state.c — a submission's state machine (league.h, invariants 5 and 6): its names, and the
 * one function that moves a submission from one state to another, league_sub_step. Every move is
 * one UPDATE guarded by the state it leaves (in its WHERE clause), so two servers, or a server and
 * its own restart, can never move the same submission twice; the table below is the only place
 * that says which moves exist and what each writes beside the state.
 *
 *   (upload) ------> queued --claim--> running --done-entry--> done    (an entry stored, in the
 *                      ^                  |     --done-racer--> done     store's transaction)
 *                      |                  |     --fail--------> failed (the model's fault)
 *                      |                  |     --give-up-----> failed (interrupted ATTEMPTS times)
 *                      +-----requeue------+  (the server's fault: the attempt not counted)
 *                      +-----restart------+  (a server that died mid-evaluation)
 *
 * done and failed are final. The upload's INSERT (league_enqueue) is the only way into queued. */
#include "league_internal.h"

#include <stdio.h>

const char *baton_league_state_name(baton_league_state s)
{
    static const char *const names[] = {"queued", "running", "done", "failed"};
    return (unsigned)s < 4 ? names[s] : "?";
}

/* The moves. In set and which: ?1 is now, ?2 the reference (entry, racer), ?3 the reason, ?4 the
 * submission, ?5 BATON_LEAGUE_ATTEMPTS. */
static const struct {
    const char *name;
    baton_league_state from, to;
    const char *set;     /* the columns written beside the state */
    const char *which;   /* the rows, beside those in the state it leaves */
    const char *what;    /* the message when the database fails */
} moves[LEAGUE_SE_N] = {
    [LEAGUE_SE_CLAIM] = {"claim", BATON_LEAGUE_QUEUED, BATON_LEAGUE_RUNNING, "started_at = ?1, attempts = attempts + 1",
                         "id = (SELECT id FROM submissions WHERE state = " LEAGUE_SQL_QUEUED " ORDER BY id LIMIT 1)",
                         "cannot claim a submission"},
    [LEAGUE_SE_DONE_ENTRY] = {"done-entry", BATON_LEAGUE_RUNNING, BATON_LEAGUE_DONE,
                              "entry = ?2, finished_at = ?1, archive = NULL, reason = NULL", "id = ?4",
                              "cannot mark the submission done"},
    [LEAGUE_SE_DONE_RACER] = {"done-racer", BATON_LEAGUE_RUNNING, BATON_LEAGUE_DONE,
                              "racer = ?2, finished_at = ?1, archive = NULL, reason = NULL", "id = ?4",
                              "cannot mark the submission done"},
    [LEAGUE_SE_FAIL] = {"fail", BATON_LEAGUE_RUNNING, BATON_LEAGUE_FAILED, "finished_at = ?1, reason = ?3, archive = NULL",
                        "id = ?4", "cannot update the queue"},
    [LEAGUE_SE_GIVE_UP] = {"give-up", BATON_LEAGUE_RUNNING, BATON_LEAGUE_FAILED,
                           "finished_at = ?1, reason = ?3, archive = NULL", "attempts >= ?5", "cannot update the queue"},
    [LEAGUE_SE_REQUEUE] = {"requeue", BATON_LEAGUE_RUNNING, BATON_LEAGUE_QUEUED,
                           "started_at = ?1, reason = ?3, attempts = max(attempts - 1, 0)", "id = ?4",
                           "cannot update the queue"},
    [LEAGUE_SE_RESTART] = {"restart", BATON_LEAGUE_RUNNING, BATON_LEAGUE_QUEUED, "started_at = ?1", "1",
                           "cannot update the queue"},
};

int league_sub_move_of(league_sub_event ev, baton_league_state *from, baton_league_state *to)
{
    if ((unsigned)ev >= LEAGUE_SE_N) return -1;
    *from = moves[ev].from;
    *to = moves[ev].to;
    return 0;
}

const char *league_sub_event_name(league_sub_event ev) { return (unsigned)ev < LEAGUE_SE_N ? moves[ev].name : "?"; }

int league_sub_step(baton_league *l, league_sub_event ev, league_sub_move *m, baton_err *err)
{
    m->changed = 0;
    if ((unsigned)ev >= LEAGUE_SE_N)
        return baton_err_set(err, BATON_ERR_ARG, "%s: no submission move %d", l->path, (int)ev);
    char sql[1024];
    int n = snprintf(sql, sizeof sql, "UPDATE submissions SET state = %d, %s WHERE state = %d AND %s%s%s", (int)moves[ev].to,
                     moves[ev].set, (int)moves[ev].from, moves[ev].which, m->returning ? " RETURNING " : "",
                     m->returning ? m->returning : "");
    if (n < 0 || (size_t)n >= sizeof sql) return baton_err_set(err, BATON_ERR_ARG, "submission move %s: too long", moves[ev].name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, sql, -1, &st, NULL) != SQLITE_OK) return league_db_fail(l, err, moves[ev].what);
    /* every slot bound; a statement without one answers SQLITE_RANGE, which is no error here */
    sqlite3_bind_double(st, 1, league_now());
    sqlite3_bind_int64(st, 2, m->ref);
    if (m->reason) sqlite3_bind_text(st, 3, m->reason, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, m->id);
    sqlite3_bind_int(st, 5, BATON_LEAGUE_ATTEMPTS);
    int r, rc = BATON_OK;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)   /* RETURNING's rows; its UPDATE finishes at SQLITE_DONE */
        if (!rc && m->row) rc = m->row(st, m->arg, err);
    if (!rc && r != SQLITE_DONE) rc = league_db_fail(l, err, moves[ev].what);
    sqlite3_finalize(st);
    if (!rc) m->changed = sqlite3_changes(l->db);
    return rc;
}
