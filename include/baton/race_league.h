/* race_league.h — the racing league's results (src/race/league*.c): a model submitted under an
 * alias is evaluated by the league itself under fixed rules (a reported time is never trusted),
 * and the result goes into a SQLite database; the standings rank each alias's best entry per
 * track.
 *
 * What it offers, in the order a caller uses it: open the database; submit a checkpoint (evaluate
 * and store); the standings of a track; an entry's lap trace; close. The ranking rule on its own
 * (baton_league_rank) for callers and tests that hold results already.
 *
 * The database (one file, WAL mode, prepared statements only):
 *   1. PRAGMA application_id is BATON_LEAGUE_APP_ID and PRAGMA user_version is
 *      BATON_LEAGUE_SCHEMA; a file with another id or version, or one SQLite cannot read, is an
 *      error naming the file — never reset or migrated silently.
 *   2. entries: one row per submission (history is kept); an alias's standing on a track and
 *      format is its best row by the ranking rule.
 *   3. traces: the drive of each entry, step by step (x, y, speed, lap, reset) as float32/uint8
 *      arrays in one blob, written in the same transaction as its entry.
 *   4. Aliases are stored as given (1-64 bytes of UTF-8, no control characters): SQL- and
 *      HTML-special characters are data, bound as parameters and escaped by whoever shows them.
 *
 * Ranking: time trial (`time-trial`) — the fastest lap, its penalties included; `total` — the total
 * time of the laps. A run that did not complete its laps ranks after every run that did (more laps
 * first). Ties go to the earlier submission, then the lower entry id. */
#ifndef BATON_RACE_LEAGUE_H
#define BATON_RACE_LEAGUE_H

#include "baton/race.h"

#define BATON_LEAGUE_APP_ID 0x62746e4c /* "btnL" */
#define BATON_LEAGUE_SCHEMA 1
#define BATON_LEAGUE_ALIAS_MAX 64

typedef enum { BATON_LEAGUE_TIME_TRIAL = 0, BATON_LEAGUE_TOTAL = 1 } baton_league_format;

/* The league's fixed rules: DeepRacer's time trial, 3 laps, 5 s per reset. */
#define BATON_LEAGUE_LAPS 3
#define BATON_LEAGUE_PENALTY_S 5.0

typedef struct baton_league_entry {
    int64_t id;
    char alias[BATON_LEAGUE_ALIAS_MAX + 1];
    char model_hash[65];       /* SHA-256 of the evaluated checkpoint's MANIFEST, hex */
    char track[256];           /* the track's name (a built-in's, or the .npy's stem) */
    char track_path[1024];     /* how to load it: a built-in's name, or the .npy's absolute path */
    baton_league_format format;
    int completed;             /* all laps driven */
    uint32_t laps;             /* laps completed */
    double best_lap_s, total_s, penalties_s;
    uint32_t resets;
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
 * league's rules and store the result; *out (may be NULL) gets the stored entry. Nothing is
 * stored when anything fails. */
int baton_league_submit(baton_league *l, const char *ckpt, const char *alias, const char *track,
                        baton_league_format format, baton_league_entry *out, baton_err *err);

/* The ranking rule: a negative, zero or positive number as a ranks before, with or after b. */
int baton_league_compare(const baton_league_entry *a, const baton_league_entry *b, baton_league_format f);
/* Order e[0..n) by the rule and keep each alias's best (the rest moved past *kept); set rank. */
void baton_league_rank(baton_league_entry *e, size_t n, baton_league_format f, size_t *kept);

/* The standings of track (NULL: every track, ranked per track, tracks by name) in format f:
 * *out malloc'd, *n entries, ranks set. */
int baton_league_standings(baton_league *l, const char *track, baton_league_format f,
                           baton_league_entry **out, size_t *n, baton_err *err);
/* The tracks with entries, by name: how many entries and aliases, how to load the track. */
typedef struct baton_league_track {
    char track[256];
    char track_path[1024];
    size_t entries, aliases;
} baton_league_track;
int baton_league_tracks(baton_league *l, baton_league_track **out, size_t *n, baton_err *err);

/* An entry as JSON (cJSON object: rank when set, id, alias, track, format, completed, laps,
 * best_lap_s, total_s, penalties_s, resets, iteration, model_hash, submitted_at). */
struct cJSON *baton_league_entry_json(const baton_league_entry *e);

/* Every submission, oldest first (the history). */
int baton_league_history(baton_league *l, baton_league_entry **out, size_t *n, baton_err *err);

/* The drive of entry id: n steps of x, y, speed (malloc'd together: free(*x) frees all), the lap
 * of each step and 1 where the car was reset after it. */
int baton_league_trace(baton_league *l, int64_t id, size_t *n, float **x, float **y, float **v,
                       uint8_t **lap, uint8_t **reset, baton_err *err);

/* ---------------------------------------------------------------- the page (league_web.c) */
/* `baton race serve`: the league over HTTP (libmicrohttpd, one thread): GET / (the tracks),
 * GET /track/NAME (its standings, the track with its racing line, a replay of any entry's drive;
 * no external scripts or fonts), GET /api/tracks, GET /api/leaderboard?track=T[&format=F],
 * GET /api/entries/ID/trace. Read-only; every alias escaped where it is shown. */
typedef struct baton_league_server baton_league_server;
int baton_league_serve_start(const char *db_path, const char *listen, int allow_remote, baton_league_server **out,
                             baton_err *err);
const char *baton_league_serve_url(const baton_league_server *s);
void baton_league_serve_stop(baton_league_server *s);

#endif
