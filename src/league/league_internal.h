/* league_internal.h — what the league's files share (src/league/league*.c): the league's functions
 * that only its own files and tests call (races' settings, ranking, traces, tar, tokens, the
 * queue: moved out of league.h, which keeps what the command uses), the database handle,
 * its error helper, the two halves of a submission (evaluate a checkpoint; store its entry,
 * optionally marking a queued submission done in the same transaction), the checks of an upload
 * before its body, and the server's paths kept out of what a racer is told. */
#ifndef BATON_LEAGUE_INTERNAL_H
#define BATON_LEAGUE_INTERNAL_H

#include "baton/league.h"

#include <sqlite3.h>

/* ================================================================ the league's own API: what
 * its files and its unit tests call, and the command does not (the public API is league.h) */

/* The evaluation options of race's official settings into o (ckpt and track left NULL). */
int league_race_official(int race, baton_ppo_eval_opts *o, baton_err *err);
/* Those settings as the JSON an entry stores (into out, cap bytes). */
int league_race_settings(int race, char *out, size_t cap, baton_err *err);

/* The ranking rule: a negative, zero or positive number as a ranks before, with or after b. */
int league_compare(const baton_league_entry *a, const baton_league_entry *b, baton_league_format f);
/* Order e[0..n) by the rule and keep each alias's best (the rest moved past *kept); set rank. */
void league_rank_entries(baton_league_entry *e, size_t n, baton_league_format f, size_t *kept);

/* The tracks with entries, by name: how many entries and aliases, how many entries of each race
 * type, how to load the track. */
typedef struct baton_league_track {
    char track[256];
    char track_path[1024];
    size_t entries, aliases;
    size_t race_entries[BATON_LEAGUE_RACES];
} baton_league_track;
int league_tracks(baton_league *l, baton_league_track **out, size_t *n, baton_err *err);

/* Every submission, oldest first (the history). */
int league_history(baton_league *l, baton_league_entry **out, size_t *n, baton_err *err);

/* The drive of entry id: n steps of x, y, speed (malloc'd together: free(*x) frees all), the lap
 * of each step and 1 where the car was reset after it. */
int league_trace(baton_league *l, int64_t id, size_t *n, float **x, float **y, float **v,
                       uint8_t **lap, uint8_t **reset, baton_err *err);
/* The objects of entry id's drive (league_objects.c): *nobj of them (0 for a time trial, *pose
 * NULL), each's kind and size in obj (cap at least BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS;
 * x, y, yaw where it stood first), and *pose (malloc'd) steps × nobj × (x, y, yaw) float32: where
 * each stood after every step of the trace. */
int league_trace_objects(baton_league *l, int64_t id, size_t *nobj, baton_race_object *obj, size_t *steps,
                               float **pose, baton_err *err);

/* ---------------------------------------------------------------- uploads (league_tar.c) */
/* A tar archive held in memory, read under the rules of league_tar.c: regular files and folders
 * only, relative names without "..", at most BATON_LEAGUE_TAR_ENTRIES entries and
 * BATON_LEAGUE_TAR_DEPTH folders deep. Entries point into buf. */
#define BATON_LEAGUE_TAR_ENTRIES 1024
#define BATON_LEAGUE_TAR_DEPTH 4
typedef struct baton_league_tar_entry {
    char name[256];             /* normalized: no leading "./", no trailing "/" */
    int is_dir;
    const uint8_t *data;        /* into the archive; NULL for a folder */
    size_t size;
} baton_league_tar_entry;
int league_tar_read(const uint8_t *buf, size_t len, baton_league_tar_entry **out, size_t *n, baton_err *err);
/* Write the entries under dir, an existing empty folder (never through a link, never over a file). */
int league_tar_extract(const baton_league_tar_entry *e, size_t n, const char *dir, baton_err *err);
/* Append a ustar archive of folder dir (its regular files and folders, by name; anything else
 * refused) to b, its entries named as/...; at most max bytes. */
int league_tar_write(baton_buf *b, const char *dir, const char *as, size_t max, baton_err *err);


/* BATON_OK when token is alias's; else BATON_ERR_DENIED (the message never says which part was wrong). */
int league_token_check(baton_league *l, const char *alias, const char *token, baton_err *err);

/* What an HTTP submission carries, as the server received it (any field may be NULL). */
typedef struct baton_league_request {
    const char *authorization;  /* "Bearer TOKEN" */
    const char *content_type;   /* application/x-tar (or application/octet-stream, or none) */
    const char *alias, *track, *format;
    const uint8_t *body;        /* the tar of the checkpoint folder */
    size_t len;
    const char *race;           /* time-trial (NULL), object-avoidance, head-to-bot */
} baton_league_request;


/* A request that passed every check that needs no disk (parsed; the tar read). */
typedef struct baton_league_upload {
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    char token[BATON_LEAGUE_TOKEN_LEN + 1];
    char track[256];            /* its name */
    char track_path[1024];      /* a built-in's name, or tracks_dir/NAME.npy */
    baton_league_format format;
    int race;
    const uint8_t *archive;     /* the request's body */
    size_t len;
} baton_league_upload;

/* Check a request: the token's form, alias, track (a built-in, or NAME of tracks_dir/NAME.npy;
 * never a path), format, size and the archive's structure. *http gets the status to answer with
 * on failure (400, 401, 404, 413, 415). Pure: reads no file but the track folder's listing. */
int league_request_parse(const baton_league_request *q, const baton_league_upload_rules *rules,
                               baton_league_upload *u, unsigned *http, baton_err *err);

/* Unpack an archive into a fresh folder under tmp_parent (NULL: $TMPDIR or /tmp) and find the race
 * checkpoint in it (the archive's top level or its one folder, with or without an entry of its
 * own; a checkpoint folder or a folder of them); ckpt gets its path, dir the folder to remove
 * (baton_remove_tree) when done. A checkpoint that does not verify or is not a race model is an
 * error saying so, in the archive's names for its entries (never the folder it was unpacked in). */
int league_unpack_archive(const uint8_t *archive, size_t len, const char *tmp_parent, char dir[4096], char ckpt[4096],
                        baton_err *err);


/* Queue an upload (its archive kept in the database). An alias with a submission queued or
 * running already is BATON_ERR_BUSY, naming it. */
int league_enqueue(baton_league *l, const baton_league_upload *u, int64_t *id, baton_err *err);
int league_submission_get(baton_league *l, int64_t id, baton_league_submission *s, baton_err *err);
struct cJSON *league_submission_json(const baton_league_submission *s);
/* At a server's start: submissions left running by a server that died go back to the queue (one
 * that has been started BATON_LEAGUE_ATTEMPTS times fails instead); *requeued says how many. */
#define BATON_LEAGUE_ATTEMPTS 3
int league_queue_recover(baton_league *l, size_t *requeued, baton_err *err);
/* Take the oldest queued submission, evaluate it under the league's rules and store its entry
 * (or its failure); *id gets it, 0 when the queue was empty. An error is the database's; a model
 * that fails to evaluate is a failed submission, not an error. tmp_parent as league_unpack_archive. */
int league_queue_run_one(baton_league *l, const char *tmp_parent, int64_t *id, baton_err *err);

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
#define LEAGUE_SQL_HEAD_TO_MODEL "3"   /* submissions only (schema 4): its results are h2m_racers' */
_Static_assert(BATON_RACE_TIME_TRIAL == 0 && BATON_RACE_OBJECT_AVOIDANCE == 1 && BATON_RACE_HEAD_TO_BOT == 2 && BATON_LEAGUE_RACES == 3,
               "LEAGUE_SQL_* are the race types' values");
_Static_assert(BATON_LEAGUE_H2M == 3, "LEAGUE_SQL_HEAD_TO_MODEL is head-to-model's value");

int league_db_fail(baton_league *l, baton_err *err, const char *what);
/* SHA-256 of DIR/MANIFEST as 64 hex digits: a model's identity. */
int league_manifest_hash(const char *dir, char out[65], baton_err *err);
/* Head-to-model ratings (league_rating.c): Bradley–Terry strengths fitted to m games (winner,
 * loser: racer indices < n) with a prior of a win and a loss against a reference racer, on Elo's
 * scale (1500 the reference) into rating[n]. */
int league_bt_fit(size_t n, const uint32_t (*games)[2], size_t m, double *rating, baton_err *err);
double league_now(void);

/* A race as an upload names it: the three of baton_league_race_parse, or "head-to-model"
 * (BATON_LEAGUE_H2M). */
int league_race_parse_any(const char *s, int *race, baton_err *err);
/* league_h2m.c: enter ckpt as baton_league_h2m_submit does; submission > 0: the racer's row names
 * it, an earlier attempt's racer is taken up again (only its missing matches raced), and the
 * running submission is marked done naming the racer once its matches are raced (BATON_ERR_BUSY
 * when it is no longer running); submitted_at its upload's time. */
int league_h2m_enter(baton_league *l, const char *ckpt, const char *alias, const char *track, int64_t submission,
                     double submitted_at, baton_league_racer *out, size_t *nmatches, baton_err *err);
/* The racer as the board of its track has it now (rank 0 when an alias's later racer stands). */
int league_h2m_racer(baton_league *l, int64_t id, baton_league_racer *out, baton_err *err);

/* Evaluate ckpt on track under the league's rules for race (its official settings): e (alias, track, result fields, model hash,
 * submitted_at now) and r (the drive; baton_ppo_eval_result_free it). */
int league_evaluate(const char *ckpt, const char *alias, const char *track, int race, baton_league_format f,
                    baton_league_entry *e, baton_ppo_eval_result *r, baton_err *err);
/* league_objects.c: the objects of r's drive into trace_objects for entry id, in the caller's
 * transaction (nothing for a drive without objects). */
int league_objects_store(baton_league *l, int64_t id, const baton_ppo_eval_result *r, baton_err *err);
/* The trace answer's ,"objects":[...] member for entry id (steps: the car's trace's) appended to b;
 * nothing for a drive without objects. */
int league_objects_json(baton_league *l, int64_t id, size_t steps, struct cJSON *o, baton_err *err);
/* n floats (v[0], v[stride], ...) as a JSON list, each rounded to `decimals` places (2..4: a
 * trace's 0.1 mm keeps its answer small); NULL when out of memory */
struct cJSON *league_json_rounded(const float *v, size_t n, size_t stride, int decimals);
/* Store e and its drive; checkpoint is what the entry records as its source. submission > 0: mark
 * that submission done in the same transaction, only if it is still running (else nothing is
 * stored and the result is BATON_ERR_BUSY). */
int league_store(baton_league *l, baton_league_entry *e, const baton_ppo_eval_result *r, const char *checkpoint,
                 int64_t submission, baton_err *err);

/* league_client.c: a league server's JSON answer about a submission (id, state; entry, attempts,
 * reason when present), every field checked; url names it in errors. */
int league_submission_read(const uint8_t *data, size_t len, const char *url, baton_league_submission *s,
                           baton_err *err);

/* league_upload.c: league_request_parse's checks of everything but the body and its size
 * (the token's form, Content-Type, alias, format, track), so a request can be refused before a
 * byte of its body is read. */
int league_request_head(const baton_league_request *q, const baton_league_upload_rules *rules, baton_league_upload *u,
                        unsigned *http, baton_err *err);

/* An unpacked archive (league_unpack_archive): the folder made for it (remove it when done), the
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
/* league_state.c: a submission's state machine (the diagram is at the top of that file). Every
 * change of a submission's state is league_sub_step: one UPDATE guarded by the state the move
 * leaves; m->changed says how many rows it moved (0: none was in that state, which the caller
 * judges). m->id picks the submission (claim: the oldest queued; give-up and restart: every
 * running one); returning, when set, adds RETURNING with those columns and calls row for each. */
typedef enum { LEAGUE_SE_CLAIM = 0, LEAGUE_SE_DONE_ENTRY, LEAGUE_SE_DONE_RACER, LEAGUE_SE_FAIL, LEAGUE_SE_GIVE_UP,
               LEAGUE_SE_REQUEUE, LEAGUE_SE_RESTART, LEAGUE_SE_N } league_sub_event;
typedef struct league_sub_move {
    int64_t id;              /* the submission */
    int64_t ref;             /* done-entry: the entry; done-racer: the racer */
    const char *reason;      /* fail, give-up, requeue */
    const char *returning;   /* columns, or NULL */
    int (*row)(sqlite3_stmt *st, void *arg, baton_err *err);
    void *arg;
    int changed;             /* out */
} league_sub_move;
int league_sub_step(baton_league *l, league_sub_event ev, league_sub_move *m, baton_err *err);
/* The move's states (for tests and messages); -1 for an unknown event. */
int league_sub_move_of(league_sub_event ev, baton_league_state *from, baton_league_state *to);
const char *league_sub_event_name(league_sub_event ev);

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
