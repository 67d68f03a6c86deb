/* cmd_race_league.c — `baton race submit` (a model evaluated by the league under its fixed rules
 * and stored), `baton race leaderboard` (the standings: table or --json) and `baton race serve`
 * (the league's page, JSON API and submission queue until SIGINT or SIGTERM) and `baton race
 * token` (a racer's token for submissions over HTTP). The database is
 * --db, else $BATON_LEAGUE_DB, else league.db in the current folder. */
#include "cli.h"

#include "baton/league.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *db_path(const char *given)
{
    const char *env = getenv("BATON_LEAGUE_DB");
    return given ? given : env && *env ? env : "league.db";
}

/* The token for --server: $BATON_LEAGUE_TOKEN or the first line of --token-file (never an
 * argument, which every process on the machine can read). */
static int read_token(const char *file, char tok[BATON_LEAGUE_TOKEN_LEN + 1], baton_err *err)
{
    const char *env = getenv("BATON_LEAGUE_TOKEN");
    if (!file) {
        if (!env || !*env)
            return baton_err_set(err, BATON_ERR_USAGE, "--server needs the racer's token: $BATON_LEAGUE_TOKEN or --token-file FILE");
        snprintf(tok, BATON_LEAGUE_TOKEN_LEN + 1, "%s", env);
        return BATON_OK;
    }
    uint8_t *b;
    size_t n;
    if (baton_file_read_all(file, 4096, &b, &n, err)) return err->code;
    while (n && (b[n - 1] == '\n' || b[n - 1] == '\r' || b[n - 1] == ' ')) n--;
    int ok = n == BATON_LEAGUE_TOKEN_LEN;
    if (ok) memcpy(tok, b, n), tok[n] = 0;
    free(b);
    return ok ? BATON_OK : baton_err_set(err, BATON_ERR_FORMAT, "%s: not a league token (btn_ and 64 hex digits)", file);
}

/* "time-trial", "object-avoidance", or "head-to-bot, time-trial": the race, and the format when it
 * is not the race's own. */
static const char *race_label(int race, baton_league_format f, char *buf, size_t cap)
{
    if (f == baton_league_race_format(race)) snprintf(buf, cap, "%s", baton_league_race_name(race));
    else snprintf(buf, cap, "%s, %s", baton_league_race_name(race), baton_league_format_name(f));
    return buf;
}

/* A stored entry and its standing, as both the local and the remote submit print them. */
static void print_entry(const baton_league_entry *e, size_t entries)
{
    char label[64];
    printf("entry %lld: %s on %s (%s), iteration %llu: %s, best lap %.3f s, total %.3f s, %u reset(s)\n",
           (long long)e->id, e->alias, e->track, race_label(e->race, e->format, label, sizeof label),
           (unsigned long long)e->iteration, e->completed ? "3 laps" : "did not complete its laps", e->best_lap_s,
           e->total_s, e->resets);
    if (e->rank) printf("  rank %u of %zu\n", e->rank, entries);
    else printf("  not the alias's best: its standing is an earlier entry (%zu on the board)\n", entries);
}

static int submit_remote(const char *server, const char *token_file, const char *ckpt, const char *alias, const char *track,
                         int race, baton_league_format f, double wait_s, int json)
{
    baton_err err = {0};
    char tok[BATON_LEAGUE_TOKEN_LEN + 1];
    if (read_token(token_file, tok, &err)) return cli_fail("race submit", &err);
    baton_league_remote_opts o = {.server = server, .token = tok, .ckpt = ckpt, .alias = alias, .track = track,
                                  .format = f, .race = race, .wait_s = wait_s};
    baton_league_submission s;
    int rc = baton_league_remote_submit(&o, &s, &err);
    memset(tok, 0, sizeof tok);
    if (rc) return cli_fail("race submit", &err);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "id", (double)s.id);
        cJSON_AddStringToObject(j, "state", baton_league_state_name(s.state));
        if (s.entry) cJSON_AddNumberToObject(j, "entry", (double)s.entry);
        if (s.racer) cJSON_AddNumberToObject(j, "racer", (double)s.racer);
        if (s.has_result) {
            cJSON_AddItemToObject(j, "result", baton_league_entry_json(&s.result));
            cJSON_AddNumberToObject(j, "entries", (double)s.entries);
        }
        if (s.state == BATON_LEAGUE_FAILED) cJSON_AddStringToObject(j, "reason", s.reason);
        cJSON_AddNumberToObject(j, "attempts", s.attempts);
        if (cli_print_json(stdout, j)) return CLI_ERROR;
    } else if (s.state == BATON_LEAGUE_DONE && race == BATON_LEAGUE_H2M) {
        printf("submission %lld: done: racer %lld, raced and rated (%s/api/ratings?track=%s)\n", (long long)s.id,
               (long long)s.racer, server, track);
    } else if (s.state == BATON_LEAGUE_DONE) {
        printf("submission %lld: done (%s/api/leaderboard?track=%s%s%s)\n", (long long)s.id, server, track,
               race ? "&race=" : "", race ? baton_league_race_name(race) : "");
        if (s.has_result) print_entry(&s.result, s.entries);
        else printf("entry %lld (the server sent no result: an older league)\n", (long long)s.entry);
    } else if (s.state == BATON_LEAGUE_FAILED) {
        printf("submission %lld: failed: %s\n", (long long)s.id, s.reason);
    } else {
        printf("submission %lld: %s (%s/api/submissions/%lld)\n", (long long)s.id, baton_league_state_name(s.state), server,
               (long long)s.id);
    }
    return s.state == BATON_LEAGUE_FAILED ? CLI_ERROR : CLI_OK;
}

/* The settings `race eval` takes that a league fixes itself: named in a refusal rather than an
 * unknown option, so the racer learns why. */
static int league_fixed_setting(int argc, char **argv)
{
    static const char *const fixed[] = {"objects", "bots", "bot-speed", "lane-change", "randomize", "collision-penalty",
                                        "off-track-penalty", "laps", NULL};
    for (int i = 0; fixed[i]; i++)
        if (cli_given(argc, argv, fixed[i])) {
            fprintf(stderr, "baton race submit: --%s: the league evaluates every model under its race's official settings "
                            "(docs/race.md, the league); only --race chooses them\n", fixed[i]);
            return 1;
        }
    return 0;
}

int cli_race_submit(int argc, char **argv)
{
    if (league_fixed_setting(argc, argv)) return CLI_USAGE;
    const char *ckpt = NULL, *alias = NULL, *track = NULL, *db = NULL, *fmt = NULL, *server = NULL, *token_file = NULL;
    const char *race_s = "time-trial";
    double wait_s = 600;
    int json = 0;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, "the model: a checkpoint folder, or a folder of them (its newest that verifies) (required)"},
        {"alias", CLI_STR, &alias, "the racer's name on the leaderboard, 1-64 bytes of UTF-8 (required)"},
        {"track", CLI_STR, &track, "a built-in track or a DeepRacer .npy (required; with --server, a track's name)"},
        {"race", CLI_STR, &race_s, "time-trial (default) | object-avoidance | head-to-bot: evaluated under the league's "
                                   "official settings of that race, whatever the model was trained with | head-to-model: "
                                   "entered, raced against the track's top 8 (both starts), rated"},
        {"format", CLI_STR, &fmt, "time-trial (the fastest lap, penalties included; a time trial's default) | total (the laps' "
                                  "total; the other races' default)"},
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"server", CLI_STR, &server, "submit to a league over HTTP (http://HOST:PORT of `race serve`) instead of a database"},
        {"token-file", CLI_STR, &token_file, "with --server: a file holding the racer's token (default $BATON_LEAGUE_TOKEN)"},
        {"wait", CLI_DBL, &wait_s, "with --server: seconds to follow the submission until evaluated (default 600; 0: return at once)"},
        {"json", CLI_FLAG, &json, "the stored entry and its rank (with --server: the submission) as one JSON object"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race submit", "--ckpt DIR --alias NAME --track T [--race R] [--format time-trial|total] [--db FILE | --server URL] [--json]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    baton_err err = {0};
    baton_league_format f;
    int race;
    char miss[256];
    if (cli_missing(miss, "--ckpt", ckpt, "--alias", alias, "--track", track, NULL)) {
        fprintf(stderr, "baton race submit: %s (baton race submit --help)\n", miss);
        return CLI_USAGE;
    }
    if ((server && db) || (!server && token_file) || wait_s < 0) {
        fprintf(stderr, "baton race submit: %s\n", wait_s < 0 ? "--wait must be 0 or more seconds"
                                               : server ? "--server and --db are two different leagues: one of them"
                                                        : "--token-file goes with --server");
        return CLI_USAGE;
    }
    if (!strcmp(race_s, "head-to-model")) {   /* its board is by rating: no format */
        if (fmt) {
            fprintf(stderr, "baton race submit: --race head-to-model has no --format (its board is by rating)\n");
            return CLI_USAGE;
        }
        if (baton_league_alias_check(alias, &err)) return cli_fail("race submit", &err);
        if (server) return submit_remote(server, token_file, ckpt, alias, track, BATON_LEAGUE_H2M, BATON_LEAGUE_TOTAL, wait_s, json);
        return cli_h2m_submit(db_path(db), ckpt, alias, track, json);
    }
    if (baton_league_race_parse(race_s, &race, &err)) return cli_fail("race submit", &err);
    f = baton_league_race_format(race);
    if ((fmt && baton_league_format_parse(fmt, &f, &err)) || baton_league_alias_check(alias, &err))
        return cli_fail("race submit", &err);
    if (server) return submit_remote(server, token_file, ckpt, alias, track, race, f, wait_s, json);
    baton_league *l;
    if (baton_league_open(db_path(db), &l, &err)) return cli_fail("race submit", &err);
    baton_league_entry e;
    if (baton_league_submit(l, ckpt, alias, track, race, f, &e, &err)) {
        baton_league_close(l);
        return cli_fail("race submit", &err);
    }
    size_t n = 0;
    int rc = baton_league_entry_standing(l, e.id, &e, &n, &err);
    baton_league_close(l);
    if (rc) return cli_fail("race submit", &err);
    if (json) {
        cJSON *j = baton_league_entry_json(&e);   /* rank when it stands */
        cJSON_AddBoolToObject(j, "standing", e.rank != 0);
        cJSON_AddNumberToObject(j, "entries", (double)n);
        return cli_print_json(stdout, j);
    }
    print_entry(&e, n);
    return CLI_OK;
}

int cli_race_leaderboard(int argc, char **argv)
{
    const char *track = NULL, *db = NULL, *fmt = NULL, *race_s = "time-trial";
    int json = 0;
    const struct cli_opt opts[] = {
        {"track", CLI_STR, &track, "one track's standings, by its name or its .npy path (default: every track)"},
        {"race", CLI_STR, &race_s, "the race type's standings: time-trial (default) | object-avoidance | head-to-bot | "
                                   "head-to-model (by rating)"},
        {"format", CLI_STR, &fmt, "time-trial (a time trial's default) | total (the other races' default)"},
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"json", CLI_FLAG, &json, "one JSON object: race, format, entries (rank, alias, track, best_lap_s, ...)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race leaderboard", "[--track T] [--race R] [--format time-trial|total] [--db FILE] [--json]", opts, argc, argv,
                  pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    baton_err err = {0};
    baton_league_format f;
    int race;
    if (!strcmp(race_s, "head-to-model")) {
        if (fmt) {
            fprintf(stderr, "baton race leaderboard: --race head-to-model has no --format (its board is by rating)\n");
            return CLI_USAGE;
        }
        return cli_h2m_board(db_path(db), track, json);
    }
    if (baton_league_race_parse(race_s, &race, &err)) return cli_fail("race leaderboard", &err);
    f = baton_league_race_format(race);
    if (fmt && baton_league_format_parse(fmt, &f, &err)) return cli_fail("race leaderboard", &err);
    baton_league *l;
    if (baton_league_open(db_path(db), &l, &err)) return cli_fail("race leaderboard", &err);
    baton_league_entry *e;
    size_t n;
    int rc = baton_league_standings(l, track, race, f, &e, &n, &err);
    baton_league_close(l);
    if (rc) return cli_fail("race leaderboard", &err);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "race", baton_league_race_name(race));
        cJSON_AddStringToObject(j, "format", baton_league_format_name(f));
        cJSON *a = cJSON_AddArrayToObject(j, "entries");
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, baton_league_entry_json(&e[i]));
        free(e);
        return cli_print_json(stdout, j);
    }
    char label[64];
    race_label(race, f, label, sizeof label);
    if (!n) printf("no entries%s%s (%s)\n", track ? " on " : "", track ? track : "", label);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(e[i].track, e[i - 1].track)) {
            printf("%s%s (%s)\n", i ? "\n" : "", e[i].track, label);
            printf("  %4s %10s %10s %6s %5s  %-19s  %-12s  %s\n", "rank", "best lap", "total", "resets", "laps",
                   "submitted (UTC)", "model", "alias");
        }
        char when[32];
        time_t t = (time_t)e[i].submitted_at;
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
        /* the alias last: up to 64 bytes of any script, it cannot push the other columns */
        printf("  %4u %9.3fs %9.3fs %6u %5u  %-19s  %-12.12s  %s\n", e[i].rank, e[i].best_lap_s, e[i].total_s, e[i].resets,
               e[i].laps, when, e[i].model_hash, e[i].alias);
    }
    free(e);
    return CLI_OK;
}

int cli_race_serve(int argc, char **argv)
{
    const char *listen = "127.0.0.1:8080", *db = NULL, *tracks = NULL, *tmp = NULL;
    uint64_t max_upload = BATON_LEAGUE_UPLOAD_MAX;
    double head_timeout = 10;
    int remote = 0;
    const struct cli_opt opts[] = {
        {"listen", CLI_STR, &listen, "HOST:PORT to serve on (default 127.0.0.1:8080; port 0: any free one)"},
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"tracks", CLI_STR, &tracks, "a folder of DeepRacer NAME.npy tracks that submissions may name (besides the built-ins)"},
        {"max-upload", CLI_U64, &max_upload, "the largest checkpoint archive taken, in bytes (default 64 MiB)"},
        {"tmp", CLI_STR, &tmp, "where uploads are unpacked for evaluation (default: the league's work folder DB-work/unpack, emptied at each start)"},
        {"allow-remote", CLI_FLAG, &remote, "serve on an address other than loopback"},
        {"head-timeout", CLI_DBL, &head_timeout, "seconds a client has for a whole request head, however it trickles in (default 10)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race serve", "[--listen HOST:PORT] [--db FILE] [--tracks DIR] [--max-upload BYTES] [--tmp DIR] [--head-timeout S] [--allow-remote]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (max_upload < 1024 || max_upload > ((uint64_t)1 << 32)) {
        fprintf(stderr, "baton race serve: --max-upload must be 1024 .. 4294967296 bytes\n");
        return CLI_USAGE;
    }
    if (!(head_timeout >= 0.1 && head_timeout <= 3600)) {
        fprintf(stderr, "baton race serve: --head-timeout must be 0.1 .. 3600 seconds\n");
        return CLI_USAGE;
    }
    /* the signals are taken by sigwait below: block them before the server's threads start */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    baton_league_serve_opts o;
    baton_league_serve_opts_default(&o);
    o.db_path = db_path(db);
    o.listen = listen;
    o.allow_remote = remote;
    o.rules.max_bytes = (size_t)max_upload;
    o.rules.tracks_dir = tracks;
    o.tmp_parent = tmp;
    o.head_timeout_s = head_timeout;
    baton_league_server *s;
    baton_err err = {0};
    if (baton_league_serve_start(&o, &s, &err)) return cli_fail("race serve", &err);
    printf("%s\n", baton_league_serve_url(s));
    fflush(stdout);
    baton_log(BATON_LOG_INFO, "race serve: the league of %s at %s (Ctrl-C stops)", db_path(db), baton_league_serve_url(s));
    int sig = 0;
    sigwait(&set, &sig);
    baton_log(BATON_LOG_INFO, "race serve: stopping (an evaluation in progress finishes first)");
    baton_league_serve_stop(s);
    return CLI_OK;
}

/* `baton race token add ALIAS [--rotate] | ls [--json] | revoke ALIAS`, each with [--db FILE]. */
int cli_race_token(int argc, char **argv)
{
    const char *db = NULL;
    int rotate = 0, json = 0;
    const struct cli_opt opts[] = {
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"rotate", CLI_FLAG, &rotate, "add: replace the alias's token (the old one stops working)"},
        {"json", CLI_FLAG, &json, "ls: one JSON object"},
        {0},
    };
    const char *pos[2];
    int npos, help;
    if (cli_parse("race token", "add ALIAS [--rotate] | ls [--json] | revoke ALIAS   [--db FILE]", opts, argc, argv, pos, 2,
                  &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    const char *act = npos ? pos[0] : "";
    int needs_alias = !strcmp(act, "add") || !strcmp(act, "revoke");
    if (!(needs_alias && npos == 2) && !(!strcmp(act, "ls") && npos == 1)) {
        fprintf(stderr, "baton race token: add ALIAS | ls | revoke ALIAS\n");
        return CLI_USAGE;
    }
    baton_err err = {0};
    /* revoke takes any alias: one stored under an older, looser rule can still lose its token */
    if (!strcmp(act, "add") && baton_league_alias_check(pos[1], &err)) return cli_fail("race token", &err);
    baton_league *l;
    if (baton_league_open(db_path(db), &l, &err)) return cli_fail("race token", &err);
    int rc = BATON_OK;
    if (!strcmp(act, "add")) {
        char token[BATON_LEAGUE_TOKEN_LEN + 1];
        if (!(rc = baton_league_token_add(l, pos[1], rotate, token, &err))) {
            puts(token);
            fprintf(stderr, "the token of '%s' (keep it: the league stores only its hash and cannot show it again)\n", pos[1]);
        }
    } else if (!strcmp(act, "revoke")) {
        if (!(rc = baton_league_token_revoke(l, pos[1], &err))) printf("revoked the token of '%s'\n", pos[1]);
    } else {
        baton_league_token_info *t;
        size_t n;
        if (!(rc = baton_league_tokens(l, &t, &n, &err))) {
            cJSON *j = json ? cJSON_CreateObject() : NULL, *a = j ? cJSON_AddArrayToObject(j, "tokens") : NULL;
            if (!json) printf("%-24s %-19s  %s\n", "alias", "made (UTC)", "last used (UTC)");
            for (size_t i = 0; i < n; i++) {
                if (json) {
                    cJSON *x = cJSON_CreateObject();
                    cJSON_AddStringToObject(x, "alias", t[i].alias);
                    cJSON_AddNumberToObject(x, "created_at", t[i].created_at);
                    if (t[i].last_used_at > 0) cJSON_AddNumberToObject(x, "last_used_at", t[i].last_used_at);
                    cJSON_AddItemToArray(a, x);
                    continue;
                }
                char made[32], used[32] = "never";
                time_t c = (time_t)t[i].created_at, u = (time_t)t[i].last_used_at;
                struct tm tm;
                strftime(made, sizeof made, "%Y-%m-%d %H:%M:%S", gmtime_r(&c, &tm));
                if (u > 0) strftime(used, sizeof used, "%Y-%m-%d %H:%M:%S", gmtime_r(&u, &tm));
                printf("%-24s %-19s  %s\n", t[i].alias, made, used);
            }
            free(t);
            if (json) rc = cli_print_json(stdout, j) ? BATON_ERR_NOMEM : BATON_OK;
        }
    }
    baton_league_close(l);
    return rc ? cli_fail("race token", &err) : CLI_OK;
}
