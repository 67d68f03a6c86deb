/* league_internal.h — what the league's files share (src/race/league*.c): the database handle,
 * its error helper, the two halves of a submission (evaluate a checkpoint; store its entry,
 * optionally marking a queued submission done in the same transaction), the checks of an upload
 * before its body, and the server's paths kept out of what a racer is told. */
#ifndef BATON_LEAGUE_INTERNAL_H
#define BATON_LEAGUE_INTERNAL_H

#include "baton/race_league.h"

#include <sqlite3.h>

struct baton_league {
    sqlite3 *db;
    char path[4096];
};

/* What a time trial's entry stores as its settings, and what entries of version-2 files (all time
 * trials under the rules the league had then) are given by the upgrade. */
#define LEAGUE_TT_SETTINGS "{\"race\":\"time-trial\",\"laps\":3,\"off_track_penalty_s\":5}"
/* The race types as the SQL of league.c writes them (the columns' CHECK allows 0..2). */
#define LEAGUE_SQL_TIME_TRIAL "0"
#define LEAGUE_SQL_OBJECT_AVOIDANCE "1"
#define LEAGUE_SQL_HEAD_TO_BOT "2"
_Static_assert(BATON_RACE_TIME_TRIAL == 0 && BATON_RACE_OBJECT_AVOIDANCE == 1 && BATON_RACE_HEAD_TO_BOT == 2 && BATON_LEAGUE_RACES == 3,
               "LEAGUE_SQL_* are the race types' values");

int league_db_fail(baton_league *l, baton_err *err, const char *what);
double league_now(void);

/* Evaluate ckpt on track under the league's rules for race (its official settings): e (alias, track, result fields, model hash,
 * submitted_at now) and r (the drive; baton_race_eval_result_free it). */
int league_evaluate(const char *ckpt, const char *alias, const char *track, int race, baton_league_format f,
                    baton_league_entry *e, baton_race_eval_result *r, baton_err *err);
/* league_objects.c: the objects of r's drive into trace_objects for entry id, in the caller's
 * transaction (nothing for a drive without objects). */
int league_objects_store(baton_league *l, int64_t id, const baton_race_eval_result *r, baton_err *err);
/* The trace answer's ,"objects":[...] member for entry id (steps: the car's trace's) appended to b;
 * nothing for a drive without objects. */
int league_objects_json(baton_league *l, int64_t id, size_t steps, baton_buf *b, baton_err *err);
/* Store e and its drive; checkpoint is what the entry records as its source. submission > 0: mark
 * that submission done in the same transaction, only if it is still running (else nothing is
 * stored and the result is BATON_ERR_BUSY). */
int league_store(baton_league *l, baton_league_entry *e, const baton_race_eval_result *r, const char *checkpoint,
                 int64_t submission, baton_err *err);

/* league_client.c: a league server's JSON answer about a submission (id, state; entry, attempts,
 * reason when present), every field checked; url names it in errors. */
int league_submission_read(const uint8_t *data, size_t len, const char *url, baton_league_submission *s,
                           baton_err *err);

/* league_upload.c: baton_league_request_parse's checks of everything but the body and its size
 * (the token's form, Content-Type, alias, format, track), so a request can be refused before a
 * byte of its body is read. */
int league_request_head(const baton_league_request *q, const baton_league_upload_rules *rules, baton_league_upload *u,
                        unsigned *http, baton_err *err);

/* An unpacked archive (baton_league_unpack): the folder made for it (remove it when done), the
 * checkpoint or run folder in it to evaluate, and what the archive calls that folder ("": its top
 * level). A failed unpack has said its error in the archive's names and removed the folder. */
typedef struct league_unpacked {
    char dir[4096];
    char ckpt[4096];
    char as[256];
} league_unpacked;
int league_unpack(const uint8_t *archive, size_t len, const char *tmp_parent, league_unpacked *u, baton_err *err);
/* msg (cap bytes, at most a baton_err's) with the unpacked folder's paths in it said as the
 * archive names them: "/tmp/baton-upload-x/ckpt-286/MANIFEST: line 18" -> "ckpt-286/MANIFEST:
 * line 18" when the archive's folder was ckpt-286, "MANIFEST: line 18" when its files were at its top. */
void league_unpacked_msg(const league_unpacked *u, char *msg, size_t cap);
/* Every occurrence of server in msg replaced by client (msg as above). */
void league_unpath(char *msg, size_t cap, const char *server, const char *client);

/* league_queue.c: the alias's submission that is queued or running (*id 0: none). */
int league_waiting(baton_league *l, const char *alias, int64_t *id, baton_err *err);
/* A running submission whose attempt the server failed (its entry could not be stored, its upload
 * not unpacked for want of space) back in the queue with why as its reason, the attempt not
 * counted; a no-op when it is no longer running. */
int league_requeue(baton_league *l, int64_t id, const char *why, baton_err *err);

/* league_work.c: the league's work folder DB-work/ beside its database (sub NULL: the folder
 * itself; league_work_dir makes them, mode 0700); a queued submission's archive in it
 * (uploads/ID.tar, 0600; put before the row commits, dropped once it is done or failed); at a
 * server's start, unpack/ emptied and uploads no waiting submission names removed. */
int league_work_path(const char *db_path, const char *sub, char *out, size_t cap, baton_err *err);
int league_work_dir(const char *db_path, const char *sub, char *out, size_t cap, baton_err *err);
int league_archive_put(baton_league *l, int64_t id, const uint8_t *data, size_t len, baton_err *err);
int league_archive_get(baton_league *l, int64_t id, uint8_t **data, size_t *len, baton_err *err);
void league_archive_drop(baton_league *l, int64_t id);
int league_work_clean(baton_league *l, baton_err *err);

/* The submission states as the SQL of league.c and league_queue.c writes them (the column holds
 * baton_league_state's values; the table's CHECK allows 0..3). */
#define LEAGUE_SQL_QUEUED "0"
#define LEAGUE_SQL_RUNNING "1"
#define LEAGUE_SQL_DONE "2"
#define LEAGUE_SQL_FAILED "3"
_Static_assert(BATON_LEAGUE_QUEUED == 0 && BATON_LEAGUE_RUNNING == 1 && BATON_LEAGUE_DONE == 2 && BATON_LEAGUE_FAILED == 3,
               "LEAGUE_SQL_* are baton_league_state's values");

#endif
