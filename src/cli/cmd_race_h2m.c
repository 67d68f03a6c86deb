/* cmd_race_h2m.c — the league's head-to-model from the command line: `baton race submit --race
 * head-to-model` (the model entered, its matches raced against the track's top 8 and stored) and
 * `baton race leaderboard --race head-to-model` (the board by rating: table or --json), called by
 * cmd_race_league.c once it has parsed the flags. */
#include "cli.h"

#include "baton/league.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_h2m_submit(const char *db, const char *ckpt, const char *alias, const char *track, int json)
{
    baton_err err = {0};
    baton_league *l;
    if (baton_league_open(db, &l, &err)) return cli_fail("race submit", &err);
    baton_league_racer r;
    size_t matches = 0;
    int rc = baton_league_h2m_submit(l, ckpt, alias, track, &r, &matches, &err);
    baton_league_close(l);
    if (rc) return cli_fail("race submit", &err);
    if (json) {
        cJSON *j = baton_league_racer_json(&r);
        cJSON_AddNumberToObject(j, "matches_raced", (double)matches);
        return cli_print_json(stdout, j);
    }
    printf("racer %lld: %s on %s (head-to-model), iteration %llu: %zu match(es) raced, %u won\n", (long long)r.id, r.alias,
           r.track, (unsigned long long)r.iteration, matches, r.wins);
    printf("  rating %.0f, rank %u\n", r.rating, r.rank);
    return CLI_OK;
}

int cli_h2m_board(const char *db, const char *track, int json)
{
    baton_err err = {0};
    baton_league *l;
    if (baton_league_open(db, &l, &err)) return cli_fail("race leaderboard", &err);
    baton_league_racer *r;
    size_t n;
    int rc = baton_league_h2m_ratings(l, track, &r, &n, &err);
    baton_league_close(l);
    if (rc) return cli_fail("race leaderboard", &err);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "race", "head-to-model");
        cJSON *a = cJSON_AddArrayToObject(j, "racers");
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, baton_league_racer_json(&r[i]));
        free(r);
        return cli_print_json(stdout, j);
    }
    if (!n) printf("no racers%s%s (head-to-model)\n", track ? " on " : "", track ? track : "");
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(r[i].track, r[i - 1].track)) {
            printf("%s%s (head-to-model)\n", i ? "\n" : "", r[i].track);
            printf("  %4s %7s %7s %5s %6s  %-19s  %-12s  %s\n", "rank", "rating", "matches", "wins", "losses", "submitted (UTC)",
                   "model", "alias");
        }
        char when[32];
        time_t t = (time_t)r[i].submitted_at;
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
        printf("  %4u %7.0f %7u %5u %6u  %-19s  %-12.12s  %s\n", r[i].rank, r[i].rating, r[i].matches, r[i].wins, r[i].losses,
               when, r[i].model_hash, r[i].alias);
    }
    free(r);
    return CLI_OK;
}
