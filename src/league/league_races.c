/* league_races.c — the league's race types and their official settings (league.h): what
 * `race=`/`--race` may name, how each race's standings rank by default, the evaluation options the
 * league drives every model of that race under (never the racer's), and those settings as the
 * JSON each entry stores (invariant 7).
 *
 * Why these settings: DeepRacer's evaluations drive 3 laps with a penalty per off-track reset and
 * per collision (deepracer-for-cloud's DR_EVAL_OFF_TRACK_PENALTY / DR_EVAL_COLLISION_PENALTY; the
 * league's 5 s for both, DR_H2B_BOT_CAR_PENALTY's upper end). Object avoidance: 3 boxes at fixed
 * places (DR_OA_OBJECT_POSITIONS' form, "progress,lane" with lane ±1), so every entry faces the
 * same course and the ranking compares drivers, not luck; 3 rather than deepracer-for-cloud's 6
 * so that a box stands in every third of even a short track with room to swing between them.
 * Head-to-bot: 2 bots (DR_H2B_NUMBER_OF_BOT_CARS allows 0-3) at 1 m/s (deepracer-for-cloud's
 * 0.2 m/s is a walking pace a model passes without racing it; 1 m/s is the pace the issue's
 * benchmark races) with lane changes on (3-5 s over 1 m, simapp's values) and no randomizing: the
 * bots' lane changes come from the simulator's fixed seed, the same drive for every entry.
 *
 * Contract: pure functions; the settings JSON of a race is the same bytes on every call. */
#include "league_internal.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the object-avoidance boxes stand: share of the lap from the start line, lane (+1 inner). */
static const double oa_progress[BATON_LEAGUE_OA_BOXES] = {0.25, 0.50, 0.75};
static const double oa_lane[BATON_LEAGUE_OA_BOXES] = {1, -1, 1};

int baton_league_race_parse(const char *s, int *race, baton_err *err)
{
    for (int r = 0; r < BATON_LEAGUE_RACES; r++)
        if (s && !strcmp(s, baton_race_type_name(r))) {
            *race = r;
            return BATON_OK;
        }
    return baton_err_set(err, BATON_ERR_USAGE, "race '%s': time-trial, object-avoidance, head-to-bot or head-to-model", s ? s : "");
}

const char *baton_league_race_name(int race)
{
    return race == BATON_LEAGUE_H2M ? "head-to-model" : baton_race_type_name(race);
}

int league_race_parse_any(const char *s, int *race, baton_err *err)
{
    if (s && !strcmp(s, "head-to-model")) {
        *race = BATON_LEAGUE_H2M;
        return BATON_OK;
    }
    if (!baton_league_race_parse(s, race, NULL)) return BATON_OK;
    return baton_err_set(err, BATON_ERR_USAGE, "race '%s': time-trial, object-avoidance, head-to-bot or head-to-model", s ? s : "");
}

baton_league_format baton_league_race_format(int race)
{
    return race == BATON_RACE_TIME_TRIAL ? BATON_LEAGUE_TIME_TRIAL : BATON_LEAGUE_TOTAL;
}

int league_race_official(int race, baton_ppo_eval_opts *o, baton_err *err)
{
    if (race < 0 || race >= BATON_LEAGUE_RACES)
        return baton_err_set(err, BATON_ERR_ARG, "race: type %d is not one of the league's", race);
    baton_ppo_eval_opts_default(o);   /* the league's rules, whatever the racer's defaults */
    o->laps = BATON_LEAGUE_LAPS;
    o->off_track_penalty_s = BATON_LEAGUE_PENALTY_S;
    o->collision_penalty_s = BATON_LEAGUE_COLLISION_PENALTY_S;
    baton_race_objects_opts_default(&o->objects);
    int count = race == BATON_RACE_OBJECT_AVOIDANCE ? BATON_LEAGUE_OA_BOXES : BATON_LEAGUE_H2B_BOTS;
    if (baton_race_objects_for_race(race, count, &o->objects, err)) return err->code;
    if (race == BATON_RACE_OBJECT_AVOIDANCE) {
        o->objects.npos = BATON_LEAGUE_OA_BOXES;
        for (int i = 0; i < BATON_LEAGUE_OA_BOXES; i++) {
            o->objects.pos_progress[i] = oa_progress[i];
            o->objects.pos_lane[i] = oa_lane[i];
        }
    } else if (race == BATON_RACE_HEAD_TO_BOT) {
        o->objects.bot_speed_mps = BATON_LEAGUE_H2B_BOT_SPEED;
        o->objects.lane_change = 1;
    }
    o->objects.randomize = 0;
    return BATON_OK;
}

int league_race_settings(int race, char *out, size_t cap, baton_err *err)
{
    baton_ppo_eval_opts o;
    if (league_race_official(race, &o, err)) return err->code;
    if (race == BATON_RACE_TIME_TRIAL) {
        snprintf(out, cap, "%s", LEAGUE_TT_SETTINGS);   /* what version-2 entries were evaluated under */
        return BATON_OK;
    }
    const baton_race_objects_opts *b = &o.objects;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "race", baton_league_race_name(race));
    cJSON_AddNumberToObject(j, "laps", o.laps);
    cJSON_AddNumberToObject(j, "off_track_penalty_s", o.off_track_penalty_s);
    cJSON_AddNumberToObject(j, "collision_penalty_s", o.collision_penalty_s);
    if (race == BATON_RACE_OBJECT_AVOIDANCE) {
        cJSON *boxes = cJSON_AddArrayToObject(j, "boxes");
        for (int i = 0; i < b->npos; i++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "progress", b->pos_progress[i]);
            cJSON_AddNumberToObject(x, "lane", b->pos_lane[i]);
            cJSON_AddItemToArray(boxes, x);
        }
    } else {
        const double lc[2] = {b->lane_change_min_s, b->lane_change_max_s};
        cJSON_AddNumberToObject(j, "bots", b->bots);
        cJSON_AddNumberToObject(j, "bot_speed_mps", b->bot_speed_mps);
        cJSON_AddNumberToObject(j, "bot_gap_m", b->bot_gap_m);
        cJSON_AddBoolToObject(j, "lane_change", b->lane_change);
        cJSON_AddItemToObject(j, "lane_change_s", cJSON_CreateDoubleArray(lc, 2));
        cJSON_AddNumberToObject(j, "lane_change_m", b->lane_change_m);
    }
    cJSON_AddFalseToObject(j, "randomize");
    char *text = baton_json_print(j, 0);
    cJSON_Delete(j);
    if (!text) return baton_err_set(err, BATON_ERR_NOMEM, "race: out of memory");
    size_t k = strlen(text);
    if (k < cap) memcpy(out, text, k + 1);
    free(text);
    if (k >= cap) return baton_err_set(err, BATON_ERR_ARG, "race: settings longer than %zu bytes", cap);
    return BATON_OK;
}
