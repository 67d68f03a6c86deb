/* test_race_league.c — the league (league.h): the ranking rule on constructed results
 * (penalties in the lap, incomplete runs after complete ones, more laps first, the total format,
 * ties to the earlier submission then the lower id, one standing per alias, the same standings for
 * every order the rows come in); aliases (SQL- and HTML-special ones stored literally, empty,
 * too long, control characters and broken UTF-8 refused); the database's invariants (created with
 * its id and version; another version, another application's file, bytes SQLite cannot read and a
 * folder each refused by name, the file left as it was); and a real submission: a model trained
 * briefly, evaluated, stored with its trace, read back; a failed one stores nothing; the race types
 * (names, official settings and their JSON), a version-2 file upgraded (its entries time trials),
 * the same model submitted to object avoidance and head-to-bot under the official settings, each
 * on its own board with its drive's objects stored as evaluated; head-to-model's Bradley–Terry fit
 * (the likelihood's stationary point, order-independent, finite for the unbeaten) and a queued
 * head-to-model submission attempted twice: one racer, each pairing raced once, done naming it. */
#include "../../src/league/league_internal.h"
#include "check.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/baton-test-league-XXXXXX";

static char *path_in(const char *name)
{
    static char p[16][512];
    static int k;
    char *o = p[k++ % 16];
    snprintf(o, 512, "%s/%s", tmp, name);
    return o;
}

static baton_league_entry mk(int64_t id, const char *alias, int completed, uint32_t laps, double best, double total,
                             double at)
{
    baton_league_entry e = {0};
    e.id = id;
    snprintf(e.alias, sizeof e.alias, "%s", alias);
    snprintf(e.track, sizeof e.track, "oval");
    e.completed = completed, e.laps = laps, e.best_lap_s = best, e.total_s = total, e.submitted_at = at;
    return e;
}

static void test_rank(void)
{
    /* a lap with a 5 s penalty (12.1 s) loses to a clean slower one (8.5 s): the stored lap holds it */
    baton_league_entry e[] = {
        mk(1, "pen", 1, 3, 12.1, 30.0, 100), mk(2, "clean", 1, 3, 8.5, 27.0, 101),
        mk(3, "dnf-fast", 0, 2, 6.0, 40.0, 99),   /* faster lap but did not finish: after every finisher */
        mk(4, "dnf-one", 0, 1, 5.0, 50.0, 98),    /* fewer laps: after dnf-fast */
        mk(5, "tie-late", 1, 3, 8.5, 26.0, 102),  /* same best lap as clean, submitted later */
        mk(6, "zero", 0, 0, 0.0, 60.0, 97),       /* no lap: last, its 0 s never counts as fast */
    };
    size_t n = sizeof e / sizeof e[0], kept;
    league_rank_entries(e, n, BATON_LEAGUE_TIME_TRIAL, &kept);
    const char *want[] = {"clean", "tie-late", "pen", "dnf-fast", "dnf-one", "zero"};
    CHECK(kept == n);
    for (size_t i = 0; i < n; i++) CHECK_MSG(!strcmp(e[i].alias, want[i]) && e[i].rank == i + 1, "rank %zu: %s", i, e[i].alias);
    /* the total format: by the laps' total, so tie-late (26.0) before clean (27.0) */
    league_rank_entries(e, n, BATON_LEAGUE_TOTAL, &kept);
    const char *want_total[] = {"tie-late", "clean", "pen", "dnf-fast", "dnf-one", "zero"};
    for (size_t i = 0; i < n; i++) CHECK_MSG(!strcmp(e[i].alias, want_total[i]), "total %zu: %s", i, e[i].alias);
    /* an exact tie in time and submission: the lower id */
    baton_league_entry t[] = {mk(9, "b", 1, 3, 7.0, 21.0, 5), mk(8, "a", 1, 3, 7.0, 21.0, 5)};
    league_rank_entries(t, 2, BATON_LEAGUE_TIME_TRIAL, &kept);
    CHECK(t[0].id == 8 && t[1].id == 9);
    CHECK(league_compare(&t[0], &t[0], BATON_LEAGUE_TIME_TRIAL) == 0);
    /* one standing per alias: its best; the others after, unranked, in rank order */
    baton_league_entry h[] = {mk(1, "ann", 1, 3, 9.0, 28.0, 1), mk(2, "bob", 1, 3, 8.0, 25.0, 2),
                              mk(3, "ann", 1, 3, 7.5, 23.0, 3), mk(4, "bob", 0, 1, 6.0, 40.0, 4),
                              mk(5, "ann", 1, 3, 7.9, 24.0, 5)};
    league_rank_entries(h, 5, BATON_LEAGUE_TIME_TRIAL, &kept);
    CHECK(kept == 2 && h[0].id == 3 && h[0].rank == 1 && h[1].id == 2 && h[1].rank == 2);
    CHECK(h[2].id == 5 && h[3].id == 1 && h[4].id == 4 && h[2].rank == 0 && h[4].rank == 0);
    /* every order of the rows gives the same standings */
    baton_league_entry base[5];
    memcpy(base, h, sizeof base);
    srand(7);
    for (int trial = 0; trial < 200; trial++) {
        baton_league_entry s[5];
        memcpy(s, base, sizeof s);
        for (int i = 4; i > 0; i--) {
            int j = rand() % (i + 1);
            baton_league_entry x = s[i];
            s[i] = s[j], s[j] = x;
        }
        size_t k2;
        league_rank_entries(s, 5, BATON_LEAGUE_TIME_TRIAL, &k2);
        int same = k2 == kept;
        for (int i = 0; i < 5 && same; i++) same = s[i].id == base[i].id;
        CHECK(same);
    }
}

static void test_alias(void)
{
    baton_err err = {0};
    CHECK(baton_league_alias_check("'; DROP TABLE entries;--", &err) == BATON_OK);
    CHECK(baton_league_alias_check("<script>alert(1)</script>", &err) == BATON_OK);
    CHECK(baton_league_alias_check("Zo\xc3\xab \xf0\x9f\x8f\x8e", &err) == BATON_OK);
    CHECK(baton_league_alias_check("", &err) == BATON_ERR_USAGE && strstr(err.msg, "required"));
    char longer[80];
    memset(longer, 'x', 65), longer[65] = 0;
    CHECK(baton_league_alias_check(longer, &err) == BATON_ERR_USAGE && strstr(err.msg, "65 bytes"));
    longer[64] = 0;
    CHECK(baton_league_alias_check(longer, &err) == BATON_OK);
    CHECK(baton_league_alias_check("tab\there", &err) == BATON_ERR_USAGE && strstr(err.msg, "control character (0x09) at byte 3"));
    CHECK(baton_league_alias_check("bad\xc3", &err) == BATON_ERR_USAGE && strstr(err.msg, "not UTF-8 at byte 3"));
    CHECK(baton_league_alias_check("\xc0\xaf", &err) == BATON_ERR_USAGE && strstr(err.msg, "not UTF-8"));
    /* well-formed UTF-8 only (Unicode's table 3-7): each of these is one byte off a valid form */
    const char *not_utf8[] = {"\xe0\x80\xaf", "\xe0\x9f\xbf", "\xf0\x8f\xbf\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
                              "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "a\x80", "\xe2\x82", "\xf0\x9f\x8f"};
    for (size_t i = 0; i < sizeof not_utf8 / sizeof *not_utf8; i++)
        CHECK_MSG(baton_league_alias_check(not_utf8[i], &err) == BATON_ERR_USAGE && strstr(err.msg, "not UTF-8"), "case %zu", i);
    const char *fine[] = {"\xe0\xa0\x80", "\xed\x9f\xbf", "\xef\xbf\xbd",
                          "\xf0\x90\x80\x80", "\xf3\xa0\x84\x80", "Tar\xc5\x8d \xe5\xb1\xb1\xe7\x94\xb0",
                          "\xd0\xb0\xd0\xbb\xd0\xb8\xd1\x81\xd0\xb0", "a b", "x\xcc\x81"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        CHECK_MSG(baton_league_alias_check(fine[i], &err) == BATON_OK, "case %zu: %s", i, err.msg);
    /* what does not read as it is: controls, invisible and reordering characters, odd spaces */
    CHECK(baton_league_alias_check("a\xc2\x85", &err) == BATON_ERR_USAGE && strstr(err.msg, "control character (U+0085) at byte 1"));
    CHECK(baton_league_alias_check("a\xe2\x80\xa8", &err) == BATON_ERR_USAGE && strstr(err.msg, "control character (U+2028)"));
    CHECK(baton_league_alias_check("a\x7f", &err) == BATON_ERR_USAGE && strstr(err.msg, "control character (0x7f)"));
    const char *unseen[] = {"a\xe2\x80\xae", "a\xe2\x80\xaa", "a\xe2\x81\xa6", "a\xe2\x81\xa9", "a\xe2\x80\x8b",
                            "a\xe2\x80\x8f", "\xef\xbb\xbf" "a", "a\xc2\xad", "a\xf3\xa0\x80\x81"};
    for (size_t i = 0; i < sizeof unseen / sizeof *unseen; i++)
        CHECK_MSG(baton_league_alias_check(unseen[i], &err) == BATON_ERR_USAGE && strstr(err.msg, "invisible or text-direction"),
                  "case %zu: %s", i, err.msg);
    CHECK(baton_league_alias_check("a\xef\xb7\x90", &err) == BATON_ERR_USAGE && strstr(err.msg, "noncharacter (U+FDD0)"));
    CHECK(baton_league_alias_check("a\xee\x80\x80", &err) == BATON_ERR_USAGE && strstr(err.msg, "private-use character (U+E000)"));
    CHECK(baton_league_alias_check(" a", &err) == BATON_ERR_USAGE && strstr(err.msg, "a space first at byte 0"));
    CHECK(baton_league_alias_check("a  b", &err) == BATON_ERR_USAGE && strstr(err.msg, "a space twice at byte 1"));
    CHECK(baton_league_alias_check("a\xe3\x80\x80" "b", &err) == BATON_ERR_USAGE && strstr(err.msg, "space other than ' ' (U+3000)"));
    /* look-alikes: one script's letters per alias among Latin, Greek, Cyrillic, Armenian, Cherokee */
    CHECK(baton_league_alias_check("\xd0\xb0lice", &err) == BATON_ERR_USAGE &&
          strstr(err.msg, "mixes Cyrillic and Latin letters (U+0430 at byte 0, U+006C at byte 2)"));
    CHECK(baton_league_alias_check("p\xce\xb1ul", &err) == BATON_ERR_USAGE && strstr(err.msg, "mixes Latin and Greek"));
    CHECK(baton_league_alias_check("ann 2 \xf0\x9f\x8f\x8e", &err) == BATON_OK);
    baton_league_format f;
    CHECK(baton_league_format_parse("total", &f, &err) == BATON_OK && f == BATON_LEAGUE_TOTAL);
    CHECK(baton_league_format_parse("sprint", &f, &err) == BATON_ERR_USAGE && strstr(err.msg, "time-trial or total"));
}

static int file_is(const char *path, const void *bytes, size_t n)
{
    uint8_t *b = NULL;
    size_t len = 0;
    baton_err err = {0};
    int same = baton_file_read_all(path, 1 << 20, &b, &len, &err) == BATON_OK && len == n && !memcmp(b, bytes, n);
    free(b);
    return same;
}

static void test_db_files(void)
{
    baton_err err = {0};
    baton_league *l;
    const char *p = path_in("new.db");
    CHECK(baton_league_open(p, &l, &err) == BATON_OK);
    baton_league_entry *e = NULL;
    size_t n = 9;
    CHECK(baton_league_standings(l, NULL, BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &n, &err) == BATON_OK && n == 0);
    free(e);
    baton_league_close(l);
    CHECK(baton_league_open(p, &l, &err) == BATON_OK);   /* reopened: the same file is fine */
    baton_league_close(l);
    /* another schema version */
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK && sqlite3_exec(db, "PRAGMA user_version=5", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(baton_league_open(p, &l, &err) == BATON_ERR_FORMAT && strstr(err.msg, "schema version 5") && strstr(err.msg, p));
    /* another application's database (its tables left alone) */
    const char *q = path_in("other.db");
    CHECK(sqlite3_open(q, &db) == SQLITE_OK && sqlite3_exec(db, "CREATE TABLE jobs(x)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(baton_league_open(q, &l, &err) == BATON_ERR_FORMAT && strstr(err.msg, "not a league database (application_id"));
    CHECK(sqlite3_open(q, &db) == SQLITE_OK);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
          sqlite3_column_int(st, 0) == 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    /* bytes SQLite cannot read: refused, the file untouched */
    const char *g = path_in("garbage.db");
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
    CHECK(baton_file_write_atomic(g, junk, sizeof junk, &err) == BATON_OK);
    CHECK(baton_league_open(g, &l, &err) == BATON_ERR_CORRUPT && strstr(err.msg, "not a league database SQLite can read") &&
          strstr(err.msg, g));
    CHECK(file_is(g, junk, sizeof junk));
    /* a folder */
    CHECK(baton_league_open(tmp, &l, &err) == BATON_ERR_FORMAT && strstr(err.msg, "is a directory, expected a regular file"));
}

static void test_submit(void)
{
    baton_err err = {0};
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    o.track = "oval";
    o.obs = BATON_PPO_OBS_SENSOR, o.obs_set = 1;
    o.session.ckpt_dir = path_in("model");
    o.episodes = 100;
    o.seed = 3, o.seed_set = 1;
    baton_ppo_train_result tr;
    CHECK_MSG(baton_ppo_train(&o, &tr, &err) == BATON_OK, "train: %s", err.msg);
    baton_league *l;
    CHECK(baton_league_open(path_in("sub.db"), &l, &err) == BATON_OK);
    baton_league_entry e;
    const char *alias = "<b>'; DROP TABLE entries;--";
    CHECK_MSG(baton_league_submit(l, o.session.ckpt_dir, alias, "oval", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &err) == BATON_OK, "%s", err.msg);
    CHECK(e.id == 1 && !strcmp(e.alias, alias) && !strcmp(e.track, "oval") && strlen(e.model_hash) == 64 && e.iteration == 5);
    /* the stored drive is the league's own evaluation under its rules */
    baton_ppo_eval_opts eo;
    baton_ppo_eval_opts_default(&eo);
    eo.ckpt = o.session.ckpt_dir, eo.track = "oval";
    baton_ppo_eval_result r;
    CHECK(baton_ppo_eval(&eo, &r, &err) == BATON_OK);
    CHECK(r.best_lap_s == e.best_lap_s && r.total_s == e.total_s && r.resets == e.resets && r.nlaps == e.laps);
    size_t n;
    float *x, *y, *v;
    uint8_t *lap, *reset;
    CHECK(league_trace(l, e.id, &n, &x, &y, &v, &lap, &reset, &err) == BATON_OK && n == r.n && n > 0);
    int same = 1;
    for (size_t k = 0; k < n && same; k++)
        same = x[k] == (float)r.x[k] && y[k] == (float)r.y[k] && v[k] == (float)r.v[k] && lap[k] == r.lap_of[k] &&
               reset[k] == r.reset[k];
    CHECK(same);
    free(x);
    baton_ppo_eval_result_free(&r);
    CHECK(league_trace(l, 99, &n, &x, &y, &v, &lap, &reset, &err) == BATON_ERR_NOTFOUND && strstr(err.msg, "no entry 99"));
    /* failures store nothing */
    CHECK(baton_league_submit(l, path_in("nothing-here"), "x", "oval", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &err) != BATON_OK &&
          strstr(err.msg, "nothing-here"));
    CHECK(baton_league_submit(l, o.session.ckpt_dir, "x", "no-such-track", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &err) != BATON_OK);
    CHECK(baton_league_submit(l, o.session.ckpt_dir, "", "oval", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &err) == BATON_ERR_USAGE);
    baton_league_entry *h;
    CHECK(league_history(l, &h, &n, &err) == BATON_OK && n == 1 && !strcmp(h[0].alias, alias));
    free(h);
    baton_league_close(l);
}

/* The race types: names, the official settings (whatever the caller's defaults), their JSON. */
static void test_race_settings(void)
{
    baton_err err = {0};
    int race = -1;
    CHECK(baton_league_race_parse("head-to-bot", &race, &err) == BATON_OK && race == BATON_RACE_HEAD_TO_BOT);
    CHECK(baton_league_race_parse("drag", &race, &err) == BATON_ERR_USAGE &&
          !strcmp(err.msg, "race 'drag': time-trial, object-avoidance, head-to-bot or head-to-model"));
    CHECK(baton_league_race_parse(NULL, &race, &err) == BATON_ERR_USAGE && strstr(err.msg, "race ''"));
    CHECK(baton_league_race_format(BATON_RACE_TIME_TRIAL) == BATON_LEAGUE_TIME_TRIAL &&
          baton_league_race_format(BATON_RACE_OBJECT_AVOIDANCE) == BATON_LEAGUE_TOTAL &&
          baton_league_race_format(BATON_RACE_HEAD_TO_BOT) == BATON_LEAGUE_TOTAL);
    baton_ppo_eval_opts o;
    CHECK(league_race_official(BATON_RACE_OBJECT_AVOIDANCE, &o, &err) == BATON_OK);
    CHECK(o.laps == 3 && o.off_track_penalty_s == 5 && o.collision_penalty_s == 5 && o.objects.boxes == 3 &&
          o.objects.bots == 0 && o.objects.npos == 3 && !o.objects.randomize && o.objects.pos_progress[0] == 0.25 &&
          o.objects.pos_lane[0] == 1 && o.objects.pos_progress[1] == 0.5 && o.objects.pos_lane[1] == -1 &&
          o.objects.pos_progress[2] == 0.75 && o.objects.pos_lane[2] == 1);
    CHECK(league_race_official(BATON_RACE_HEAD_TO_BOT, &o, &err) == BATON_OK);
    CHECK(o.objects.bots == 2 && o.objects.boxes == 0 && o.objects.bot_speed_mps == 1.0 && o.objects.lane_change &&
          !o.objects.randomize && o.collision_penalty_s == 5);
    CHECK(league_race_official(BATON_RACE_TIME_TRIAL, &o, &err) == BATON_OK && o.objects.boxes == 0 && o.objects.bots == 0);
    CHECK(league_race_official(3, &o, &err) == BATON_ERR_ARG && strstr(err.msg, "race:"));
    char set[1024];
    CHECK(league_race_settings(BATON_RACE_TIME_TRIAL, set, sizeof set, &err) == BATON_OK &&
          !strcmp(set, "{\"race\":\"time-trial\",\"laps\":3,\"off_track_penalty_s\":5}"));
    CHECK(league_race_settings(BATON_RACE_OBJECT_AVOIDANCE, set, sizeof set, &err) == BATON_OK &&
          strstr(set, "\"boxes\":[{\"progress\":0.25,\"lane\":1},{\"progress\":0.5,\"lane\":-1},{\"progress\":0.75,\"lane\":1}]"));
    CHECK(league_race_settings(BATON_RACE_HEAD_TO_BOT, set, sizeof set, &err) == BATON_OK &&
          strstr(set, "\"bots\":2,\"bot_speed_mps\":1,") && strstr(set, "\"lane_change\":true"));
    CHECK(league_race_settings(BATON_RACE_HEAD_TO_BOT, set, 40, &err) == BATON_ERR_ARG);
}

/* A version-2 file (as the league wrote it before race types) is upgraded on open: its entries
 * time trials under the league's settings of then, its tables otherwise as they were. */
static void test_upgrade_v2(void)
{
    static const char v2[] =
        "CREATE TABLE entries(id INTEGER PRIMARY KEY, alias TEXT NOT NULL, model_hash TEXT NOT NULL,"
        " track TEXT NOT NULL, format INTEGER NOT NULL, completed INTEGER NOT NULL, laps INTEGER NOT NULL,"
        " best_lap_s REAL NOT NULL, total_s REAL NOT NULL, penalties_s REAL NOT NULL, resets INTEGER NOT NULL,"
        " iteration INTEGER NOT NULL, submitted_at REAL NOT NULL, checkpoint TEXT NOT NULL, track_path TEXT NOT NULL);"
        "CREATE INDEX entries_track ON entries(track, format);"
        "CREATE TABLE laps(entry INTEGER NOT NULL REFERENCES entries(id), lap INTEGER NOT NULL, time_s REAL NOT NULL,"
        " penalty_s REAL NOT NULL, resets INTEGER NOT NULL, steps INTEGER NOT NULL, PRIMARY KEY(entry, lap));"
        "CREATE TABLE traces(entry INTEGER PRIMARY KEY REFERENCES entries(id), steps INTEGER NOT NULL, data BLOB NOT NULL);"
        "CREATE TABLE tokens(alias TEXT PRIMARY KEY, hash TEXT NOT NULL, created_at REAL NOT NULL, last_used_at REAL);"
        "CREATE TABLE submissions(id INTEGER PRIMARY KEY, alias TEXT NOT NULL, track TEXT NOT NULL, track_path TEXT NOT NULL,"
        " format INTEGER NOT NULL, state INTEGER NOT NULL CHECK(state BETWEEN 0 AND 3), reason TEXT,"
        " entry INTEGER REFERENCES entries(id), attempts INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL,"
        " submitted_at REAL NOT NULL, started_at REAL, finished_at REAL, archive BLOB);"
        "INSERT INTO entries VALUES(1, 'old', 'h', 'oval', 0, 1, 3, 9.5, 30, 0, 0, 7, 100, 'c', 'oval');"
        "INSERT INTO entries VALUES(2, 'older', 'h', 'oval', 0, 1, 3, 9.0, 31, 0, 0, 7, 50, 'c', 'oval');"
        "INSERT INTO submissions(alias, track, track_path, format, state, bytes, submitted_at) VALUES('old', 'oval', 'oval', 0, 2, 1, 99);"
        "PRAGMA application_id=1651797580; PRAGMA user_version=2;";
    const char *p = path_in("v2.db");
    sqlite3 *db;
    CHECK(sqlite3_open(p, &db) == SQLITE_OK && sqlite3_exec(db, v2, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    baton_err err = {0};
    baton_league *l;
    CHECK_MSG(baton_league_open(p, &l, &err) == BATON_OK, "%s", err.msg);
    baton_league_entry *e = NULL;
    size_t n = 0;
    CHECK(baton_league_standings(l, "oval", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &e, &n, &err) == BATON_OK &&
          n == 2 && e[0].id == 2 && e[0].race == BATON_RACE_TIME_TRIAL &&
          !strcmp(e[0].settings, "{\"race\":\"time-trial\",\"laps\":3,\"off_track_penalty_s\":5}") && e[1].id == 1);
    free(e);
    CHECK(baton_league_standings(l, "oval", BATON_RACE_OBJECT_AVOIDANCE, BATON_LEAGUE_TOTAL, &e, &n, &err) == BATON_OK && n == 0);
    free(e);
    CHECK(baton_league_standings(l, "oval", 7, BATON_LEAGUE_TOTAL, &e, &n, &err) == BATON_ERR_USAGE && strstr(err.msg, "race:"));
    baton_league_submission s;
    CHECK(league_submission_get(l, 1, &s, &err) == BATON_OK && s.race == BATON_RACE_TIME_TRIAL && s.state == BATON_LEAGUE_DONE);
    size_t nobj = 9, steps = 9;
    baton_race_object obj[BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS];
    float *pose = (float *)&nobj;
    CHECK(league_trace_objects(l, 1, &nobj, obj, &steps, &pose, &err) == BATON_OK && nobj == 0 && !pose);
    baton_league_close(l);
    CHECK(sqlite3_open(p, &db) == SQLITE_OK);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
          sqlite3_column_int(st, 0) == BATON_LEAGUE_SCHEMA && BATON_LEAGUE_SCHEMA == 4);
    sqlite3_finalize(st);
    /* version 4's head-to-model tables came with the upgrade: an empty board */
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM h2m_racers, h2m_matches, h2m_cars", -1, &st, NULL) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A model trained in a time trial submitted to object avoidance and head-to-bot: evaluated under
 * the official settings (race eval with them gives the same drive), each entry on its own board,
 * its drive's objects stored and read back as evaluated. */
static void test_submit_races(void)
{
    baton_err err = {0};
    baton_league *l;
    CHECK(baton_league_open(path_in("races.db"), &l, &err) == BATON_OK);
    const int races[2] = {BATON_RACE_OBJECT_AVOIDANCE, BATON_RACE_HEAD_TO_BOT};
    for (int k = 0; k < 2; k++) {
        baton_league_entry e;
        CHECK_MSG(baton_league_submit(l, path_in("model"), "racer", "oval", races[k], baton_league_race_format(races[k]), &e,
                                      &err) == BATON_OK, "%s", err.msg);
        CHECK(e.race == races[k] && strstr(e.settings, baton_league_race_name(races[k])));
        size_t nobj, steps;
        baton_race_object obj[BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS];
        float *pose;
        CHECK(league_trace_objects(l, e.id, &nobj, obj, &steps, &pose, &err) == BATON_OK && nobj == (k ? 2u : 3u) &&
              steps > 0 && pose);
        int kinds = 1;
        for (size_t i = 0; i < nobj; i++) kinds &= obj[i].kind == (k ? BATON_RACE_BOT : BATON_RACE_BOX);
        CHECK(kinds);
        if (k == 0) {   /* the drive as race eval gives it under the official settings (one race: evaluations are slow) */
            baton_ppo_eval_opts eo;
            CHECK(league_race_official(races[k], &eo, &err) == BATON_OK);
            eo.ckpt = path_in("model"), eo.track = "oval";
            baton_ppo_eval_result r;
            CHECK(baton_ppo_eval(&eo, &r, &err) == BATON_OK);
            CHECK(r.total_s == e.total_s && r.resets == e.resets && r.nobj == nobj && r.n == steps);
            int same = 1;
            for (size_t i = 0; same && i < nobj; i++)
                same = obj[i].length_m == (float)r.obj[i].length_m && obj[i].width_m == (float)r.obj[i].width_m;
            for (size_t i = 0; same && i < steps * nobj * 3; i++) same = pose[i] == r.obj_pose[i];
            CHECK(same);
            baton_ppo_eval_result_free(&r);
        } else {        /* the bots drive: each somewhere else at the end than at the start */
            int moved = 1;
            for (size_t i = 0; i < nobj; i++) moved &= pose[i * 3] != pose[((steps - 1) * nobj + i) * 3];
            CHECK(moved);
        }
        free(pose);
        baton_league_entry *b;
        size_t n;
        CHECK(baton_league_standings(l, "oval", races[k], BATON_LEAGUE_TOTAL, &b, &n, &err) == BATON_OK && n == 1 &&
              b[0].id == e.id && b[0].rank == 1);
        free(b);
    }
    baton_league_entry *b;
    size_t n;
    CHECK(baton_league_standings(l, "oval", BATON_RACE_TIME_TRIAL, BATON_LEAGUE_TIME_TRIAL, &b, &n, &err) == BATON_OK && n == 0);
    free(b);
    CHECK(baton_league_submit(l, path_in("model"), "racer", "oval", 5, BATON_LEAGUE_TOTAL, NULL, &err) == BATON_ERR_ARG &&
          strstr(err.msg, "race:"));
    baton_league_close(l);
    /* a row of objects that does not add up is said so, naming the entry */
    sqlite3 *db;
    CHECK(sqlite3_open(path_in("races.db"), &db) == SQLITE_OK &&
          sqlite3_exec(db, "UPDATE trace_objects SET objects = 5 WHERE entry = 1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(baton_league_open(path_in("races.db"), &l, &err) == BATON_OK);
    size_t nobj, steps;
    baton_race_object obj[BATON_RACE_MAX_OBJECTS + BATON_RACE_MAX_BOTS];
    float *pose;
    CHECK(league_trace_objects(l, 1, &nobj, obj, &steps, &pose, &err) == BATON_ERR_CORRUPT && strstr(err.msg, "entry 1:") &&
          !pose);
    baton_league_close(l);
}

/* Bradley–Terry ratings: the maximum-likelihood fit (each racer's expected wins, prior included,
 * equal its wins), mirror-symmetric, independent of the games' order, finite for the unbeaten,
 * bad indices refused. */
static void test_ratings(void)
{
    baton_err err = {0};
    double r[4];
    CHECK(league_bt_fit(3, NULL, 0, r, &err) == BATON_OK && r[0] == 1500 && r[1] == 1500 && r[2] == 1500);
    const uint32_t two[4][2] = {{0, 1}, {0, 1}, {1, 0}, {0, 1}};
    CHECK(league_bt_fit(2, two, 4, r, &err) == BATON_OK && r[0] > r[1] && fabs(r[0] + r[1] - 3000) < 1e-6);
    const uint32_t g[7][2] = {{0, 1}, {1, 2}, {2, 0}, {0, 2}, {3, 0}, {3, 1}, {3, 2}}, h[7][2] = {{3, 2}, {0, 2}, {3, 0}, {1, 2},
                                                                                                  {2, 0}, {3, 1}, {0, 1}};
    double q[4];
    CHECK(league_bt_fit(4, g, 7, r, &err) == BATON_OK && league_bt_fit(4, h, 7, q, &err) == BATON_OK);
    for (int i = 0; i < 4; i++) CHECK_MSG(fabs(r[i] - q[i]) < 1e-9 && isfinite(r[i]), "racer %d: %.12g %.12g", i, r[i], q[i]);
    CHECK(r[3] > r[0] && r[0] > r[1] && r[0] > r[2]);   /* 3 unbeaten; 0 won 2 of 4 */
    for (int i = 0; i < 4; i++) {   /* the likelihood's stationary point: expected wins = wins, prior included */
        double p = pow(10, (r[i] - 1500) / 400), expect = 2 * p / (p + 1), wins = 1;
        for (int k = 0; k < 7; k++) {
            int w = (int)g[k][0], l = (int)g[k][1];
            if (w != i && l != i) continue;
            double o = pow(10, (r[w == i ? l : w] - 1500) / 400);
            expect += p / (p + o);
            wins += w == i;
        }
        CHECK_MSG(fabs(expect - wins) < 1e-6, "racer %d: %g expected, %g won", i, expect, wins);
    }
    const uint32_t bad[1][2] = {{0, 4}};
    CHECK(league_bt_fit(4, bad, 1, r, &err) == BATON_ERR_ARG && strstr(err.msg, "game 0"));
}

static int count_rows(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    int n = -1;
    if (sqlite3_open(db, &h) == SQLITE_OK && sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return n;
}

/* Head-to-model over the queue: a submission's racer is entered once, even when an attempt is made
 * again (a server that died during the matches): the second finds the racer and races nothing
 * twice; done names the racer. (The model test_submit trained.) */
static void test_h2m_attempts(void)
{
    const char *db = path_in("h2m.db"), *ckpt = path_in("model");
    baton_err err = {0};
    baton_league *l;
    CHECK_MSG(baton_league_open(db, &l, &err) == BATON_OK, "%s", err.msg);
    baton_league_racer r;
    size_t m = 9;
    CHECK_MSG(baton_league_h2m_submit(l, ckpt, "ann", "oval", &r, &m, &err) == BATON_OK && m == 0 && r.rank == 1, "%s", err.msg);
    sqlite3 *h;
    const char *running = "INSERT INTO submissions(id, alias, track, track_path, format, state, bytes, submitted_at, race)"
                          " VALUES(7, 'bob', 'oval', 'oval', 1, 1, 1, 5, 3)";
    CHECK(sqlite3_open(db, &h) == SQLITE_OK && sqlite3_exec(h, running, NULL, NULL, NULL) == SQLITE_OK);
    CHECK_MSG(league_h2m_enter(l, ckpt, "bob", "oval", 7, 5, &r, &m, &err) == BATON_OK && m == 2, "%s", err.msg);
    int64_t bob = r.id;
    baton_league_submission s;
    CHECK(league_submission_get(l, 7, &s, &err) == BATON_OK && s.state == BATON_LEAGUE_DONE && s.racer == bob &&
          s.race == BATON_LEAGUE_H2M);
    CHECK(sqlite3_exec(h, "UPDATE submissions SET state = 1 WHERE id = 7", NULL, NULL, NULL) == SQLITE_OK);   /* again */
    sqlite3_close(h);
    CHECK_MSG(league_h2m_enter(l, ckpt, "bob", "oval", 7, 5, &r, &m, &err) == BATON_OK && m == 2 && r.id == bob, "%s", err.msg);
    CHECK(count_rows(db, "SELECT count(*) FROM h2m_racers") == 2 && count_rows(db, "SELECT count(*) FROM h2m_matches") == 2);
    CHECK(league_h2m_enter(l, ckpt, "bob", "oval", 7, 5, &r, &m, &err) == BATON_ERR_BUSY);   /* no longer running */
    baton_league_close(l);
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    test_rank();
    test_alias();
    test_db_files();
    test_submit();
    test_race_settings();
    test_upgrade_v2();
    test_submit_races();
    test_ratings();
    test_h2m_attempts();
    baton_remove_tree(tmp);
    CHECK_DONE();
}
