/* race_objects_args.c — the race-type flags `baton race drive` and `baton race eval` share
 * (CLI_RACE_OBJECTS_OPTS in cli.h): --race time-trial|object-avoidance|head-to-bot and the
 * settings of each, as deepracer-for-cloud names them (DR_OA_NUMBER_OF_OBSTACLES 6,
 * DR_H2B_NUMBER_OF_BOT_CARS 3, DR_H2B_BOT_CAR_SPEED 0.2, DR_H2B_IS_LANE_CHANGE,
 * DR_*_RANDOMIZE_*_LOCATIONS). A setting that belongs to another race type is refused, naming it. */
#include "baton/race.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void cli_race_objects_init(struct cli_race_objects *c)
{
    memset(c, 0, sizeof *c);
    c->objects = c->bots = -1;
    c->bot_speed = NAN;
}

static int race_type(const char *name)
{
    if (!name || !strcmp(name, "time-trial")) return BATON_RACE_TIME_TRIAL;
    if (!strcmp(name, "object-avoidance")) return BATON_RACE_OBJECT_AVOIDANCE;
    if (!strcmp(name, "head-to-bot")) return BATON_RACE_HEAD_TO_BOT;
    return -1;
}

/* --race-file: the file holds the race and every setting of it; a flag beside it is refused */
static int from_file(struct cli_race_objects *c, const char *cmd, int argc, char **argv, baton_race_objects_opts *o)
{
    static const char *const flags[] = {"race", "objects", "bots", "bot-speed", "lane-change", "randomize"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (cli_given(argc, argv, flags[i])) {
            fprintf(stderr, "baton %s: --%s beside --race-file: the file holds the race's settings\n", cmd, flags[i]);
            return CLI_USAGE;
        }
    int type = 0;
    baton_err err = {0};
    if (baton_race_objects_load(c->file, &type, o, &err)) return cli_fail(cmd, &err);
    c->race = baton_race_type_name(type);
    return CLI_OK;
}

int cli_race_objects_finish(struct cli_race_objects *c, const char *cmd, int argc, char **argv,
                            baton_race_objects_opts *o)
{
    if (c->file) return from_file(c, cmd, argc, argv, o);
    int type = race_type(c->race), oa = type == BATON_RACE_OBJECT_AVOIDANCE, h2b = type == BATON_RACE_HEAD_TO_BOT;
    int speed = cli_given(argc, argv, "bot-speed");
    const char *bad = type < 0 ? "--race takes time-trial, object-avoidance or head-to-bot"
                    : c->objects >= 0 && !oa ? "--objects needs --race object-avoidance"
                    : c->bots >= 0 && !h2b ? "--bots needs --race head-to-bot"
                    : speed && !h2b ? "--bot-speed needs --race head-to-bot"
                    : c->lane_change && !h2b ? "--lane-change needs --race head-to-bot"
                    : c->randomize && !oa && !h2b ? "--randomize needs --race object-avoidance or head-to-bot"
                    : oa && cli_given(argc, argv, "objects") && (c->objects < 1 || c->objects > BATON_RACE_MAX_OBJECTS)
                        ? "--objects must be 1..16"
                    : h2b && cli_given(argc, argv, "bots") && (c->bots < 1 || c->bots > BATON_RACE_MAX_BOTS)
                        ? "--bots must be 1..6"
                    : speed && !(c->bot_speed > 0 && c->bot_speed <= 4) ? "--bot-speed must be above 0 and at most 4 m/s"
                    : NULL;
    if (bad) {
        fprintf(stderr, "baton %s: %s\n", cmd, bad);
        return CLI_USAGE;
    }
    baton_race_objects_opts_default(o);
    baton_err err = {0};
    int count = oa ? (c->objects >= 0 ? c->objects : 6) : h2b ? (c->bots >= 0 ? c->bots : 3) : 0;
    if (baton_race_objects_for_race(type, count, o, &err)) return cli_fail(cmd, &err);
    o->randomize = c->randomize;
    o->lane_change = c->lane_change;
    if (speed) o->bot_speed_mps = c->bot_speed;
    return CLI_OK;
}
