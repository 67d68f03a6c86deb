/* league_internal.h — what the league's files share (src/race/league*.c): the database handle,
 * its error helper, and the two halves of a submission (evaluate a checkpoint; store its entry,
 * optionally marking a queued submission done in the same transaction). */
#ifndef BATON_LEAGUE_INTERNAL_H
#define BATON_LEAGUE_INTERNAL_H

#include "baton/race_league.h"

#include <sqlite3.h>

struct baton_league {
    sqlite3 *db;
    char path[4096];
};

int league_db_fail(baton_league *l, baton_err *err, const char *what);
double league_now(void);

/* Evaluate ckpt on track under the league's rules: e (alias, track, result fields, model hash,
 * submitted_at now) and r (the drive; baton_race_eval_result_free it). */
int league_evaluate(const char *ckpt, const char *alias, const char *track, baton_league_format f, baton_league_entry *e,
                    baton_race_eval_result *r, baton_err *err);
/* Store e and its drive; checkpoint is what the entry records as its source. submission > 0: mark
 * that submission done in the same transaction, only if it is still running (else nothing is
 * stored and the result is BATON_ERR_BUSY). */
int league_store(baton_league *l, baton_league_entry *e, const baton_race_eval_result *r, const char *checkpoint,
                 int64_t submission, baton_err *err);

/* league_client.c: a league server's JSON answer about a submission (id, state; entry, attempts,
 * reason when present), every field checked; url names it in errors. */
int league_submission_read(const uint8_t *data, size_t len, const char *url, baton_league_submission *s,
                           baton_err *err);

#endif
