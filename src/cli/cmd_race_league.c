/* cmd_race_league.c — `baton race submit` (a model evaluated by the league under its fixed rules
 * and stored), `baton race leaderboard` (the standings: table or --json) and `baton race serve`
 * (the league's page and JSON API until SIGINT or SIGTERM). The database is
 * --db, else $BATON_LEAGUE_DB, else league.db in the current folder. */
#include "cli.h"

#include "baton/race_league.h"

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

static int print_json(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return CLI_ERROR;
    puts(s);
    free(s);
    return CLI_OK;
}

int cli_race_submit(int argc, char **argv)
{
    const char *ckpt = NULL, *alias = NULL, *track = NULL, *db = NULL, *fmt = "time-trial";
    int json = 0;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, "the model: a checkpoint folder, or a folder of them (its newest that verifies) (required)"},
        {"alias", CLI_STR, &alias, "the racer's name on the leaderboard, 1-64 bytes of UTF-8 (required)"},
        {"track", CLI_STR, &track, "a built-in track or a DeepRacer .npy (required)"},
        {"format", CLI_STR, &fmt, "time-trial (the fastest lap, penalties included; default) | total (the laps' total)"},
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"json", CLI_FLAG, &json, "the stored entry and its rank as one JSON object"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race submit", "--ckpt DIR --alias NAME --track T [--format time-trial|total] [--db FILE] [--json]", opts,
                  argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    baton_err err = {0};
    baton_league_format f;
    if (!ckpt || !alias || !track) {
        fprintf(stderr, "baton race submit: --ckpt, --alias and --track are required\n");
        return CLI_USAGE;
    }
    if (baton_league_format_parse(fmt, &f, &err) || baton_league_alias_check(alias, &err))
        return cli_fail("race submit", &err);
    baton_league *l;
    if (baton_league_open(db_path(db), &l, &err)) return cli_fail("race submit", &err);
    baton_league_entry e;
    if (baton_league_submit(l, ckpt, alias, track, f, &e, &err)) {
        baton_league_close(l);
        return cli_fail("race submit", &err);
    }
    baton_league_entry *s = NULL;
    size_t n = 0;
    uint32_t rank = 0;
    if (!baton_league_standings(l, e.track, f, &s, &n, &err))
        for (size_t i = 0; i < n; i++)
            if (!strcmp(s[i].alias, e.alias)) rank = s[i].id == e.id ? s[i].rank : 0;
    baton_league_close(l);
    if (err.code) {
        free(s);
        return cli_fail("race submit", &err);
    }
    int rc = CLI_OK;
    if (json) {
        cJSON *j = baton_league_entry_json(&e);
        if (rank) cJSON_AddNumberToObject(j, "rank", rank);
        cJSON_AddBoolToObject(j, "standing", rank != 0);
        cJSON_AddNumberToObject(j, "entries", (double)n);
        rc = print_json(j);
    } else {
        printf("entry %lld: %s on %s (%s), iteration %llu: %s, best lap %.3f s, total %.3f s, %u reset(s)\n",
               (long long)e.id, e.alias, e.track, baton_league_format_name(f), (unsigned long long)e.iteration,
               e.completed ? "3 laps" : "did not complete its laps", e.best_lap_s, e.total_s, e.resets);
        if (rank) printf("  rank %u of %zu\n", rank, n);
        else printf("  not the alias's best: its standing is an earlier entry (%zu on the board)\n", n);
    }
    free(s);
    return rc;
}

int cli_race_leaderboard(int argc, char **argv)
{
    const char *track = NULL, *db = NULL, *fmt = "time-trial";
    int json = 0;
    const struct cli_opt opts[] = {
        {"track", CLI_STR, &track, "one track's standings, by its name (default: every track)"},
        {"format", CLI_STR, &fmt, "time-trial (default) | total"},
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"json", CLI_FLAG, &json, "one JSON object: format, entries (rank, alias, track, best_lap_s, ...)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race leaderboard", "[--track T] [--format time-trial|total] [--db FILE] [--json]", opts, argc, argv,
                  pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    baton_err err = {0};
    baton_league_format f;
    if (baton_league_format_parse(fmt, &f, &err)) return cli_fail("race leaderboard", &err);
    baton_league *l;
    if (baton_league_open(db_path(db), &l, &err)) return cli_fail("race leaderboard", &err);
    baton_league_entry *e;
    size_t n;
    int rc = baton_league_standings(l, track, f, &e, &n, &err);
    baton_league_close(l);
    if (rc) return cli_fail("race leaderboard", &err);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "format", baton_league_format_name(f));
        cJSON *a = cJSON_AddArrayToObject(j, "entries");
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, baton_league_entry_json(&e[i]));
        free(e);
        return print_json(j);
    }
    if (!n) printf("no entries%s%s (%s)\n", track ? " on " : "", track ? track : "", baton_league_format_name(f));
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(e[i].track, e[i - 1].track)) {
            printf("%s%s (%s)\n", i ? "\n" : "", e[i].track, baton_league_format_name(f));
            printf("  %4s  %-24s %10s %10s %6s %5s  %-19s  %s\n", "rank", "alias", "best lap", "total", "resets", "laps",
                   "submitted (UTC)", "model");
        }
        char when[32];
        time_t t = (time_t)e[i].submitted_at;
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
        printf("  %4u  %-24s %9.3fs %9.3fs %6u %5u  %-19s  %.12s\n", e[i].rank, e[i].alias, e[i].best_lap_s, e[i].total_s,
               e[i].resets, e[i].laps, when, e[i].model_hash);
    }
    free(e);
    return CLI_OK;
}

int cli_race_serve(int argc, char **argv)
{
    const char *listen = "127.0.0.1:8080", *db = NULL;
    int remote = 0;
    const struct cli_opt opts[] = {
        {"listen", CLI_STR, &listen, "HOST:PORT to serve on (default 127.0.0.1:8080; port 0: any free one)"},
        {"db", CLI_STR, &db, "the league database (default $BATON_LEAGUE_DB, else league.db)"},
        {"allow-remote", CLI_FLAG, &remote, "serve on an address other than loopback"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race serve", "[--listen HOST:PORT] [--db FILE] [--allow-remote]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    /* the signals are taken by sigwait below: block them before the server's thread starts */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    baton_league_server *s;
    baton_err err = {0};
    if (baton_league_serve_start(db_path(db), listen, remote, &s, &err)) return cli_fail("race serve", &err);
    printf("%s\n", baton_league_serve_url(s));
    fflush(stdout);
    baton_log(BATON_LOG_INFO, "race serve: the league of %s at %s (Ctrl-C stops)", db_path(db), baton_league_serve_url(s));
    int sig = 0;
    sigwait(&set, &sig);
    baton_league_serve_stop(s);
    return CLI_OK;
}
