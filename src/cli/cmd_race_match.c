/* cmd_race_match.c — `baton race match --ckpt A --ckpt B [--ckpt …] [--track T] [--laps 3] [--seed S]
 * [--gap M] [--off-track-penalty S] [--collision-penalty S] [--max-steps N] [--json] [--svg F]
 * [--trace F]`: head-to-model, two to four models on one track at once (baton_ppo_match). --ckpt is
 * given once per car, in start order (the first on the line); "centerline[:PACE]" is race's
 * centre-line driver. The JSON: the match's settings and one object per car. */
#include "baton/ppo.h"
#include "cli.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static int match_json(const baton_ppo_match_opts *o, const baton_ppo_match_result *r)
{
    cJSON *j = cJSON_CreateObject(), *cars = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "race", "head-to-model");
    cJSON_AddStringToObject(j, "track", r->track_name);
    cJSON_AddNumberToObject(j, "laps", o->laps);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    cJSON_AddNumberToObject(j, "gap_m", o->gap_m);
    cJSON_AddNumberToObject(j, "steps", (double)r->steps);
    for (int i = 0; i < r->ncars; i++) {
        const baton_ppo_match_car *c = &r->car[i];
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "car", c->name);
        cJSON_AddStringToObject(k, "checkpoint", c->checkpoint);
        cJSON_AddNumberToObject(k, "start", c->slot + 1);
        cJSON_AddNumberToObject(k, "position", c->position);
        cJSON_AddBoolToObject(k, "completed", c->completed);
        cJSON_AddNumberToObject(k, "laps", (double)c->nlaps);
        cJSON_AddItemToObject(k, "lap_s", cJSON_CreateDoubleArray(c->lap_s, (int)c->nlaps));
        cJSON_AddNumberToObject(k, "total_s", c->total_s);
        cJSON_AddNumberToObject(k, "best_lap_s", c->best_lap_s);
        cJSON_AddNumberToObject(k, "distance_m", c->distance_m);
        cJSON_AddNumberToObject(k, "resets", c->resets);
        cJSON_AddNumberToObject(k, "crashes", c->crashes);
        cJSON_AddNumberToObject(k, "bumps", c->bumps);
        cJSON_AddNumberToObject(k, "penalties_s", c->penalties_s);
        cJSON_AddNumberToObject(k, "overtakes", c->overtakes);
        cJSON_AddNumberToObject(k, "overtaken", c->overtaken);
        cJSON_AddItemToArray(cars, k);
    }
    cJSON_AddItemToObject(j, "cars", cars);
    return cli_print_json(stdout, j);
}

static void match_text(const baton_ppo_match_opts *o, const baton_ppo_match_result *r)
{
    printf("match on %s: %d cars, %d lap(s), %.2f m apart at the start, %zu steps\n", r->track_name, r->ncars, o->laps,
           o->gap_m, r->steps);
    for (int p = 1; p <= r->ncars; p++) {
        for (int i = 0; i < r->ncars; i++) {
            const baton_ppo_match_car *c = &r->car[i];
            if (c->position != p) continue;
            printf("  %d. %-24s start %d  ", p, c->name, c->slot + 1);
            if (c->completed) printf("total %8.3f s, best lap %.3f s", c->total_s, c->best_lap_s);
            else printf("%zu of %d laps, %.1f m driven", c->nlaps, o->laps, c->distance_m);
            printf("; %u crash(es), %u reset(s), %.0f s of penalties, %u overtake(s), bumped %u time(s)\n", c->crashes,
                   c->resets, c->penalties_s, c->overtakes, c->bumps);
        }
    }
}

/* --ckpt once per car: taken out of argv before the rest is parsed. */
static int take_ckpts(int argc, char **argv, char **rest, int *nrest, baton_ppo_match_opts *o)
{
    *nrest = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (i > 0 && !strcmp(argv[i], "--ckpt")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "baton race match: --ckpt needs a value\n");
                return CLI_USAGE;
            }
            v = argv[++i];
        } else if (i > 0 && !strncmp(argv[i], "--ckpt=", 7)) {
            v = argv[i] + 7;
        } else {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        if (o->ncars == BATON_PPO_MATCH_MAX) {
            fprintf(stderr, "baton race match: at most %d cars (--ckpt)\n", BATON_PPO_MATCH_MAX);
            return CLI_USAGE;
        }
        o->ckpt[o->ncars++] = v;
    }
    return CLI_OK;
}

int cli_race_match(int argc, char **argv)
{
    baton_ppo_match_opts o;
    baton_ppo_match_opts_default(&o);
    const char *svg = NULL, *unused = NULL;
    int json = 0, max_steps = 0;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &unused, "a car: a checkpoint folder (or a folder of them), or centerline[:PACE]; once per car, 2 to 4, in start order"},
        {"track", CLI_STR, &o.track, "the track (default: the first checkpoint's)"},
        {"laps", CLI_INT, &o.laps, "laps each car drives (default 3)"},
        {"seed", CLI_U64, &o.seed, "the simulator's seed (matters with action noise)"},
        {"gap", CLI_DBL, &o.gap_m, "metres between cars at the staggered start (default 1)"},
        {"off-track-penalty", CLI_DBL, &o.off_track_penalty_s, "seconds added for each reset (default 5)"},
        {"collision-penalty", CLI_DBL, &o.collision_penalty_s, "seconds added to a car that hits another from behind (default 5)"},
        {"steer-noise", CLI_DBL, &o.steer_noise_deg, "Gaussian noise on every steering action, degrees (0)"},
        {"speed-noise", CLI_DBL, &o.speed_noise_mps, "Gaussian noise on every speed action, m/s (0)"},
        {"max-steps", CLI_INT, &max_steps, "stop after this many steps (default 10000 per lap)"},
        {"trace", CLI_STR, &o.trace_path, "SIM_TRACE_LOG CSV: each car's rows as an episode (its start, 0-based)"},
        {"svg", CLI_STR, &svg, "every car's path over the track (SVG)"},
        {"json", CLI_FLAG, &json, "one JSON object: the match and one object per car"},
        {0},
    };
    char **rest = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *rest);
    if (!rest) return CLI_ERROR;
    int nrest, rc = take_ckpts(argc, argv, rest, &nrest, &o), npos, help;
    const char *pos[1];
    if (rc == CLI_OK &&
        cli_parse("race match", "--ckpt A --ckpt B [--ckpt ...] [--track T] [--laps 3] [--seed S] [--gap M] [--json] [--svg F] [--trace F]",
                  opts, nrest, rest, pos, 0, &npos, &help))
        rc = help ? -1 : CLI_USAGE;
    free(rest);
    if (rc) return rc < 0 ? CLI_OK : rc;
    const char *bad = o.ncars < 2 ? "two to four --ckpt are required (one per car)"
                    : o.laps < 1 || o.laps > 100 ? "--laps must be 1..100"
                    : !(o.off_track_penalty_s >= 0 && o.off_track_penalty_s <= 3600) ? "--off-track-penalty must be 0..3600"
                    : !(o.collision_penalty_s >= 0 && o.collision_penalty_s <= 3600) ? "--collision-penalty must be 0..3600"
                    : !(o.steer_noise_deg >= 0 && o.speed_noise_mps >= 0) ? "--steer-noise and --speed-noise must be >= 0"
                    : max_steps < 0 ? "--max-steps must be >= 1"
                    : NULL;
    if (bad) {
        fprintf(stderr, "baton race match: %s\n", bad);
        return CLI_USAGE;
    }
    o.max_steps = (uint32_t)max_steps;
    baton_ppo_match_result r;
    baton_err err = {0};
    if (baton_ppo_match(&o, &r, &err)) return cli_fail("race match", &err);
    rc = CLI_OK;
    if (svg) {
        baton_race_track *t = NULL;
        if (baton_race_track_load(r.track, &t, &err)) {
            rc = cli_fail("race match", &err);
        } else {
            char title[512];
            snprintf(title, sizeof title, "%s: head-to-model, %d cars, %d lap(s)", r.track_name, r.ncars, o.laps);
            baton_race_svg_line lines[BATON_PPO_MATCH_MAX];
            for (int i = 0; i < r.ncars; i++)
                lines[i] = (baton_race_svg_line){r.car[i].name, r.car[i].x, r.car[i].y, NULL, r.car[i].n, 0};
            if (baton_race_svg(svg, t, title, lines, (size_t)r.ncars, &err)) rc = cli_fail("race match", &err);
            baton_race_track_free(t);
        }
    }
    if (rc == CLI_OK) rc = json ? match_json(&o, &r) : (match_text(&o, &r), CLI_OK);
    baton_ppo_match_result_free(&r);
    return rc;
}
