/* league.h — the racing league (src/league/): a model submitted under an
 * alias and a race type (time trial, object avoidance, head-to-bot) is evaluated by the league
 * itself under that race's official settings (a reported time is never trusted), and the result
 * goes into a SQLite database; the standings rank each alias's best entry per track and race type.
 *
 * What it offers, in the order a caller uses it: open the database; submit a checkpoint (evaluate
 * and store); the standings of a track; racers' tokens; a submission sent to a league's server
 * over HTTP; the server itself; close. The ranking rule, traces, the tar reader and the queue
 * are the league's own (src/league/league_internal.h).
 *
 * The database (one file, WAL mode, prepared statements only):
 *   1. PRAGMA application_id is BATON_LEAGUE_APP_ID and PRAGMA user_version is
 *      BATON_LEAGUE_SCHEMA; a file with another id or version, or one SQLite cannot read, is an
 *      error naming the file — never reset or migrated silently.
 *   2. entries: one row per submission (history is kept); an alias's standing on a track and
 *      format is its best row by the ranking rule.
 *   3. traces: the drive of each entry, step by step (x, y, speed, lap, reset) as float32/uint8
 *      arrays in one blob, written in the same transaction as its entry.
 *   4. Aliases are stored as given (1-64 bytes of well-formed UTF-8 that reads as it is: no
 *      control, invisible or text-direction character, spaces single and inside, the letters of
 *      one of the scripts that pass for each other's; league_alias.c): SQL- and HTML-special
 *      characters are data, bound as parameters and escaped by whoever shows them.
 *   5. tokens: one per alias, only its SHA-256 kept; a token is shown once, when it is made.
 *   6. submissions: the queue of uploads. Each row is queued, running, done (with its entry) or
 *      failed (with the reason). An entry is inserted in the same transaction that marks its
 *      submission done, and only while it is running: a submission is counted at most once, and a
 *      server that dies while one runs finds it running at its next start and queues it again.
 *      The uploaded archive is kept until the submission is done or failed, then dropped (the
 *      entry keeps the model's hash).
 *   7. Every entry and submission names its race type (time trial, object avoidance, head-to-bot:
 *      the column holds BATON_RACE_TIME_TRIAL..BATON_RACE_HEAD_TO_BOT) and every entry the official
 *      settings it was evaluated under, as JSON (baton_league_race_settings); entries of version-2
 *      files are time trials under the settings the league had then. trace_objects: where each
 *      box and bot stood after every step of an entry's drive (none for a time trial), written in
 *      the same transaction as its entry (league_objects.c).
 *   8. Head-to-model (league_h2m.c): h2m_racers, one row per model entered on a track (its policy
 *      kept in the work folder, DB-work/models/ID/, for the matches still to come); h2m_matches and
 *      h2m_cars, each match and each of its cars (racer, start slot, result, its drive as float32
 *      x, y, speed), a match and its cars in one transaction. Ratings are not stored: they are
 *      fitted to the track's matches when read (league_rating.c).
 *
 * Ranking: time trial (`time-trial`, a time trial's default) — the fastest lap, its penalties
 * included; `total` (object avoidance's and head-to-bot's default) — the total time of the laps,
 * crash and reset penalties included. A run that did not complete its laps ranks after every run that did (more laps
 * first). Ties go to the earlier submission, then the lower entry id. */
#ifndef BATON_LEAGUE_H
#define BATON_LEAGUE_H

#include "baton/ppo.h"
#include "baton/race.h"

#define BATON_LEAGUE_APP_ID 0x62746e4c /* "btnL" */
#define BATON_LEAGUE_SCHEMA 4   /* 2 added tokens and submissions, 3 race types (invariant 7), 4
                                  * head-to-model (invariant 8); older files are upgraded on open */
#define BATON_LEAGUE_ALIAS_MAX 64

typedef enum { BATON_LEAGUE_TIME_TRIAL = 0, BATON_LEAGUE_TOTAL = 1 } baton_league_format;

/* The league's fixed rules: DeepRacer's time trial, 3 laps, 5 s per reset. */
#define BATON_LEAGUE_LAPS 3
#define BATON_LEAGUE_PENALTY_S 5.0

/* The race types' official settings (league_races.c), the league's and never the racer's:
 *   time-trial        no objects;
 *   object-avoidance  3 boxes standing still at 25 % (inner lane), 50 % (outer), 75 % (inner) of
 *                     the lap, the same for every entry (no randomizing);
 *   head-to-bot       2 bot cars at 1.0 m/s, 2 m apart at least, changing lanes every 3-5 s over
 *                     1 m, their lane changes drawn from the simulator's fixed seed (the same
 *                     drive for every entry);
 * all: 3 laps from a standing start, 5 s per off-track reset, 5 s per crash into an object (the
 * car put back clear of it). */
#define BATON_LEAGUE_OA_BOXES 3
#define BATON_LEAGUE_H2B_BOTS 2
#define BATON_LEAGUE_H2B_BOT_SPEED 1.0
#define BATON_LEAGUE_COLLISION_PENALTY_S 5.0
#define BATON_LEAGUE_RACES 3   /* BATON_RACE_TIME_TRIAL .. BATON_RACE_HEAD_TO_BOT */
/* Parse "time-trial" / "object-avoidance" / "head-to-bot" (err names `race`). */
int baton_league_race_parse(const char *s, int *race, baton_err *err);
/* A race type's name (baton_race_type_name's). */
const char *baton_league_race_name(int race);
/* How a race's standings rank by default: time trial by the fastest lap, the others by total time
 * (as DeepRacer ranks them). */
baton_league_format baton_league_race_format(int race);

typedef struct baton_league_entry {
    int64_t id;
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    char model_hash[65];       /* SHA-256 of the evaluated checkpoint's MANIFEST, hex */
    char track[256];           /* the track's name (a built-in's, or the .npy's stem) */
    char track_path[1024];     /* how to load it: a built-in's name, or the .npy's absolute path */
    baton_league_format format;
    int race;                  /* BATON_RACE_TIME_TRIAL, ... */
    char settings[1024];       /* the official settings it was evaluated under, JSON */
    int completed;             /* all laps driven */
    uint32_t laps;             /* laps completed */
    double best_lap_s, total_s, penalties_s;
    uint32_t resets;
    uint32_t crashes;          /* of the resets, crashes into objects (not stored: 0 when read back) */
    uint64_t iteration;        /* the checkpoint's training iteration */
    double submitted_at;       /* seconds since the epoch */
    uint32_t rank;             /* in standings: 1-based */
} baton_league_entry;

typedef struct baton_league baton_league;

/* Open (create when missing) the league database at path; checks invariant 1. */
int baton_league_open(const char *path, baton_league **out, baton_err *err);
void baton_league_close(baton_league *l);

/* Parse "time-trial" / "total". */
int baton_league_format_parse(const char *s, baton_league_format *out, baton_err *err);
const char *baton_league_format_name(baton_league_format f);
/* Whether an alias may be stored (invariant 4); err says why not. */
int baton_league_alias_check(const char *alias, baton_err *err);

/* Evaluate ckpt (a checkpoint folder or a folder of them; a race model's) on track under the
 * league's rules for race (its official settings, whatever the model was trained with) and store
 * the result; *out (may be NULL) gets the stored entry. Nothing is stored when anything fails. */
int baton_league_submit(baton_league *l, const char *ckpt, const char *alias, const char *track, int race,
                        baton_league_format format, baton_league_entry *out, baton_err *err);


/* The standings of track (NULL: every track, ranked per track, tracks by name) in race type race,
 * ranked by format f: *out malloc'd, *n entries, ranks set. */
int baton_league_standings(baton_league *l, const char *track, int race, baton_league_format f,
                           baton_league_entry **out, size_t *n, baton_err *err);
/* Entry id as stored, its rank set when it is its alias's standing on its track, race and format (0: an
 * earlier entry of the alias stands), *entries the number of standings there. */
int baton_league_entry_standing(baton_league *l, int64_t id, baton_league_entry *e, size_t *entries, baton_err *err);

/* An entry as JSON (cJSON object: rank when set, id, alias, track, race, format, settings (an
 * object), completed, laps, best_lap_s, total_s, penalties_s, resets, iteration, model_hash,
 * submitted_at). */
struct cJSON *baton_league_entry_json(const baton_league_entry *e);


/* ---------------------------------------------------------------- head-to-model (league_h2m.c) */
/* The league's fourth race type (not one of race.h's: its standings are ratings, not times). A
 * model entered races the track's top BATON_LEAGUE_H2M_TOP racers (each alias's latest model, by
 * rating), each pairing twice, once from each starting place, under the league's rules
 * (baton_ppo_match: 3 laps, 1 m apart, 5 s per reset and per crash from behind); each match and
 * its cars' drives are stored; ratings are Bradley–Terry's fit to every match of the track
 * (league_rating.c). */
#define BATON_LEAGUE_H2M BATON_LEAGUE_RACES   /* "head-to-model" */
#define BATON_LEAGUE_H2M_TOP 8

typedef struct baton_league_racer {
    int64_t id;
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    char track[256], track_path[1024];
    char model_hash[65];
    uint64_t iteration;
    double submitted_at;
    double rating;              /* Elo's scale, 1500 the reference */
    uint32_t matches, wins, losses;   /* a win: first past the line */
    uint32_t rank;              /* on the board: 1-based */
} baton_league_racer;

typedef struct baton_league_match_car {
    int64_t racer;
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    int slot, position, completed;
    uint32_t laps, crashes, bumps, overtakes;
    double total_s, best_lap_s, penalties_s;
} baton_league_match_car;
typedef struct baton_league_match {
    int64_t id;
    char track[256];
    int laps, ncars;
    double at;
    size_t steps;
    baton_league_match_car car[BATON_PPO_MATCH_MAX];   /* in start order */
} baton_league_match;

/* Enter ckpt (a race model's checkpoint folder or a folder of them) under alias on track: its
 * policy kept, its matches raced and stored (*nmatches how many). *out (may be NULL) gets the
 * racer as the board has it afterwards. */
int baton_league_h2m_submit(baton_league *l, const char *ckpt, const char *alias, const char *track,
                            baton_league_racer *out, size_t *nmatches, baton_err *err);
/* The board of track (a name or a .npy path; NULL: every track, by name): each alias's latest
 * racer, by rating (ties: the earlier submission), *out malloc'd. */
int baton_league_h2m_ratings(baton_league *l, const char *track, baton_league_racer **out, size_t *n, baton_err *err);
/* The matches of track (NULL: all), newest first, at most limit (0: all); *out malloc'd. */
int baton_league_h2m_matches(baton_league *l, const char *track, size_t limit, baton_league_match **out, size_t *n,
                             baton_err *err);
/* One car's drive in match id (slot 0-based): n steps of x, y, speed (malloc'd together: free(*x)). */
int baton_league_h2m_drive(baton_league *l, int64_t match, int slot, size_t *n, float **x, float **y, float **v,
                           baton_err *err);
struct cJSON *baton_league_racer_json(const baton_league_racer *r);
struct cJSON *baton_league_match_json(const baton_league_match *m);

/* ---------------------------------------------------------------- tokens (league_queue.c) */
/* A racer's token: "btn_" and 64 hex digits (256 random bits); the database keeps its SHA-256. */
#define BATON_LEAGUE_TOKEN_LEN 68
/* Make alias's token into token (printed once by the caller). An alias that has one already is
 * BATON_ERR_BUSY unless rotate (then the old one stops working). */
int baton_league_token_add(baton_league *l, const char *alias, int rotate, char token[BATON_LEAGUE_TOKEN_LEN + 1],
                           baton_err *err);
/* The alias's token is removed; an alias without one is BATON_ERR_NOTFOUND. */
int baton_league_token_revoke(baton_league *l, const char *alias, baton_err *err);
typedef struct baton_league_token_info {
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    double created_at, last_used_at;   /* last_used_at 0: never */
} baton_league_token_info;
int baton_league_tokens(baton_league *l, baton_league_token_info **out, size_t *n, baton_err *err);

/* ---------------------------------------------------------------- submissions (league_upload.c, league_queue.c) */
typedef struct baton_league_upload_rules {
    size_t max_bytes;           /* the largest archive taken (BATON_LEAGUE_UPLOAD_MAX by default) */
    const char *tracks_dir;     /* where NAME.npy tracks may come from besides the built-ins; NULL: none */
} baton_league_upload_rules;
#define BATON_LEAGUE_UPLOAD_MAX ((size_t)64 << 20)

typedef enum {
    BATON_LEAGUE_QUEUED = 0,
    BATON_LEAGUE_RUNNING = 1,
    BATON_LEAGUE_DONE = 2,
    BATON_LEAGUE_FAILED = 3,
} baton_league_state;
const char *baton_league_state_name(baton_league_state s);

typedef struct baton_league_submission {
    int64_t id;
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    char track[256], track_path[1024];
    baton_league_format format;
    int race;
    baton_league_state state;
    char reason[1024];          /* failed: why */
    int64_t entry;              /* done: the entry it made */
    int64_t racer;              /* done, head-to-model (race BATON_LEAGUE_H2M): the racer it entered */
    uint32_t attempts;          /* evaluations started (more than 1 after a server died in one) */
    uint64_t bytes;
    double submitted_at, started_at, finished_at;   /* 0: not yet */
    /* done, as the server answers it: the entry's result (rank 0: not the alias's standing) and
     * the number of standings on its track; has_result 0 when the answer carried none */
    int has_result;
    baton_league_entry result;
    size_t entries;
} baton_league_submission;

/* ---------------------------------------------------------------- the client (league_client.c) */
/* `baton race submit --server URL`: the newest checkpoint of ckpt that verifies (a race model's),
 * as a tar, POSTed to URL/api/submit with the racer's token; then, when wait_s > 0, polled at
 * GET /api/submissions/ID until done or failed (or wait_s passed: *s says where it stands). An
 * answer other than 202 is an error quoting the server's message and its status. */
typedef struct baton_league_remote_opts {
    const char *server;         /* http://HOST:PORT */
    const char *token;
    const char *ckpt, *alias, *track;
    baton_league_format format;
    int race;
    double wait_s;
} baton_league_remote_opts;
int baton_league_remote_submit(const baton_league_remote_opts *o, baton_league_submission *s, baton_err *err);

/* ---------------------------------------------------------------- the page (league_web.c) */
/* `baton race serve`: the league over HTTP (libmicrohttpd, one thread): GET / (the tracks),
 * GET /track/NAME (its standings per race type, the track with its racing line, a replay of any
 * entry's drive with its objects; no external scripts or fonts), GET /api/tracks,
 * GET /api/leaderboard?track=T[&race=R][&format=F], GET /api/entries/ID/trace, GET /api/server,
 * GET /api/submissions/ID; POST /api/submit?alias=A&track=T[&race=R][&format=F]
 * with the tar as its body, its Content-Length and "Authorization: Bearer TOKEN" (202 and the
 * submission's id; every check that needs no body made before a byte of it is read, the body
 * written to a file in the database's folder as it arrives). A second thread evaluates the queue,
 * one submission at a time. Every alias escaped where shown; no answer names a server path. */
typedef struct baton_league_server baton_league_server;
typedef struct baton_league_serve_opts {
    const char *db_path;
    const char *listen;         /* HOST:PORT; NULL: 127.0.0.1:0 */
    int allow_remote;
    baton_league_upload_rules rules;
    const char *tmp_parent;     /* where uploads are unpacked; NULL: the work folder DB-work/unpack, emptied at start */
    double head_timeout_s;      /* a request's whole head (line and headers) within this, else the
                                 * connection is closed; 0: 10 s. Each line does not restart it. */
} baton_league_serve_opts;
void baton_league_serve_opts_default(baton_league_serve_opts *o);
int baton_league_serve_start(const baton_league_serve_opts *o, baton_league_server **out, baton_err *err);
const char *baton_league_serve_url(const baton_league_server *s);
void baton_league_serve_stop(baton_league_server *s);

#endif
