/* cmd_race.c — `baton race track|drive|limit`:
 *   track NAME|PATH [--json] [--svg FILE]        a built-in track or a DeepRacer .npy: length,
 *                                               widths, waypoints, loop, turn radii; an SVG
 *   drive TRACK [--policy centerline|CKPT] [--reward FILE|NAME] [--frames DIR] [--svg FILE] [--json]
 *         [--race time-trial|object-avoidance|head-to-bot] [--objects N] [--bots N] [--bot-speed V]
 *         [--lane-change] [--randomize]
 *                                               one lap with the built-in controller or a trained
 *                                               policy: time, reward, camera frames, the path driven;
 *                                               boxes or bot cars on the track (a crash ends it)
 *   limit TRACK [--json] [--svg FILE] [car limits] the racing line's lap against the centre line's */
#include "baton/ppo.h"
#include "baton/race.h"
#include "cli.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int do_track(int argc, char **argv)
{
    const char *svg = NULL;
    int json = 0;
    const struct cli_opt opts[] = {
        {"json", CLI_FLAG, &json, "print one JSON object"},
        {"svg", CLI_STR, &svg, "write a picture of the track (SVG)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race track", "NAME|PATH [--json] [--svg FILE]", opts, argc, argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 1) {
        fprintf(stderr, "baton race track: expected a track name (oval, technical) or a .npy path\n");
        return CLI_USAGE;
    }
    baton_race_track *t;
    baton_err err = {0};
    if (baton_race_track_load(pos[0], &t, &err)) return cli_fail("race track", &err);
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    if (svg) {
        char title[512];
        snprintf(title, sizeof title, "%s: %.2f m, %.3f m wide, %zu waypoints", in.name, in.length_m, in.width_m,
                 in.waypoints);
        if (baton_race_svg(svg, t, title, NULL, 0, &err)) {
            baton_race_track_free(t);
            return cli_fail("race track", &err);
        }
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "track", in.name);
        cJSON_AddNumberToObject(o, "length_m", in.length_m);
        cJSON_AddNumberToObject(o, "width_m", in.width_m);
        cJSON_AddNumberToObject(o, "min_width_m", in.min_width_m);
        cJSON_AddNumberToObject(o, "max_width_m", in.max_width_m);
        cJSON_AddNumberToObject(o, "waypoints", (double)in.waypoints);
        cJSON_AddNumberToObject(o, "rows", (double)in.rows);
        cJSON_AddBoolToObject(o, "loop", in.loop);
        cJSON_AddBoolToObject(o, "ccw", in.ccw);
        cJSON_AddNumberToObject(o, "turns", (double)in.turns);
        cJSON_AddNumberToObject(o, "min_radius_m", in.min_radius_m);
        cJSON_AddNumberToObject(o, "max_radius_m", in.max_radius_m);
        double bbox[4] = {in.xmin, in.ymin, in.xmax, in.ymax};
        cJSON_AddItemToObject(o, "bbox_m", cJSON_CreateDoubleArray(bbox, 4));
        baton_race_track_free(t);
        return cli_print_json(stdout, o);
    }
    printf("track %s: %s, %s, %zu rows", in.name, in.loop ? "loop" : "open",
           in.ccw ? "counter-clockwise" : "clockwise", in.rows);
    if (in.waypoints != in.rows) printf(" (%zu waypoints: repeated centre points dropped)", in.waypoints);
    printf("\n  length   %8.3f m (centre line)\n", in.length_m);
    printf("  width    %8.3f m mean, %.3f to %.3f m\n", in.width_m, in.min_width_m, in.max_width_m);
    if (in.turns) printf("  turns    %8zu, radius %.2f to %.2f m at their apexes\n", in.turns, in.min_radius_m, in.max_radius_m);
    else printf("  turns           0\n");
    printf("  extent   x %.2f to %.2f m, y %.2f to %.2f m\n", in.xmin, in.xmax, in.ymin, in.ymax);
    if (svg) printf("  picture  %s\n", svg);
    baton_race_track_free(t);
    return CLI_OK;
}

static int do_drive(int argc, char **argv)
{
    baton_ppo_drive_opts o;
    baton_ppo_drive_opts_default(&o);
    const char *svg = NULL, *policy = "centerline", *reward = NULL, *frames = NULL;
    int json = 0, max_steps = 0;
    uint64_t seed = 1;
    struct cli_race_objects ro;
    cli_race_objects_init(&ro);
    const struct cli_opt opts[] = {
        CLI_RACE_OBJECTS_OPTS(ro),
        {"policy", CLI_STR, &policy, "centerline, or CKPT: a checkpoint of `baton race train` drives"},
        {"reward", CLI_STR, &reward, "FILE.c, FILE.py or a built-in (follow_center_line, stay_inside_borders, prevent_zigzag)"},
        {"frames", CLI_STR, &frames, "write every camera frame as PNG into DIR"},
        {"svg", CLI_STR, &svg, "write the path driven over the track (SVG)"},
        {"pace", CLI_DBL, &o.pace, "centerline: share of the corner speeds the car can take (0.85)"},
        {"max-steps", CLI_INT, &max_steps, "stop after this many steps (default 10000)"},
        {"seed", CLI_U64, &seed, "simulator seed"},
        {"json", CLI_FLAG, &json, "print one JSON object"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race drive", "TRACK [--policy centerline|CKPT] [--reward FILE|NAME] [--frames DIR] [--svg FILE] [--json] "
                  "[--race time-trial|object-avoidance|head-to-bot] [--objects N] [--bots N] [--bot-speed V] [--lane-change] "
                  "[--randomize]",
                  opts, argc, argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 1) {
        fprintf(stderr, "baton race drive: expected a track name or a .npy path\n");
        return CLI_USAGE;
    }
    int rc_ro;
    if ((rc_ro = cli_race_objects_finish(&ro, "race drive", argc, argv, &o.sim.objects))) return rc_ro;
    if (max_steps < 0) {
        fprintf(stderr, "baton race drive: --max-steps must be positive\n");
        return CLI_USAGE;
    }
    o.policy = policy;
    if (reward) o.reward = reward;
    o.frames_dir = frames;
    o.max_steps = (uint32_t)max_steps;
    o.sim.seed = seed;
    baton_race_track *t;
    baton_err err = {0};
    if (baton_race_track_load(pos[0], &t, &err)) return cli_fail("race drive", &err);
    baton_ppo_drive_result r;
    if (baton_ppo_drive(t, &o, &r, &err)) {
        baton_race_track_free(t);
        return cli_fail("race drive", &err);
    }
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    int rc = CLI_OK;
    if (svg) {
        char title[512];
        snprintf(title, sizeof title, "%s: %s, %s after %u steps (%.2f s)", in.name, policy,
                 baton_race_status_name(r.status), r.steps, r.lap_s);
        baton_race_svg_line line = {"path driven", r.x, r.y, r.v, r.n, 0};
        if (baton_race_svg(svg, t, title, &line, 1, &err)) rc = cli_fail("race drive", &err);
    }
    if (rc == CLI_OK && json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "race", ro.race ? ro.race : "time-trial");
        cJSON_AddNumberToObject(j, "objects", o.sim.objects.boxes + o.sim.objects.bots);
        cJSON_AddStringToObject(j, "track", in.name);
        cJSON_AddStringToObject(j, "policy", policy);
        cJSON_AddStringToObject(j, "reward_function", o.reward);
        cJSON_AddStringToObject(j, "status", baton_race_status_name(r.status));
        cJSON_AddNumberToObject(j, "steps", r.steps);
        cJSON_AddNumberToObject(j, "lap_s", r.lap_s);
        cJSON_AddNumberToObject(j, "progress", r.progress);
        cJSON_AddNumberToObject(j, "reward", r.reward_sum);
        cJSON_AddNumberToObject(j, "frames", (double)r.frames);
        rc = cli_print_json(stdout, j);
    } else if (rc == CLI_OK) {
        printf("drive %s with %s: %s after %u steps = %.2f s, progress %.1f %%\n", in.name, policy,
               baton_race_status_name(r.status), r.steps, r.lap_s, r.progress);
        printf("  reward   %.3f in total, %.4f per step (%s)\n", r.reward_sum, r.steps ? r.reward_sum / r.steps : 0,
               o.reward);
        if (frames) printf("  frames   %zu PNG files in %s\n", r.frames, frames);
        if (svg) printf("  picture  %s\n", svg);
    }
    baton_ppo_drive_result_free(&r);
    baton_race_track_free(t);
    return rc;
}

static int do_limit(int argc, char **argv)
{
    baton_race_limits l;
    baton_race_limits_default(&l);
    const char *svg = NULL;
    int json = 0;
    const struct cli_opt opts[] = {
        {"max-speed", CLI_DBL, &l.max_speed_mps, "top speed, m/s (4)"},
        {"lat-accel", CLI_DBL, &l.lat_accel_mps2, "lateral acceleration limit, m/s² (3)"},
        {"accel", CLI_DBL, &l.accel_mps2, "acceleration limit, m/s² (3)"},
        {"brake", CLI_DBL, &l.brake_mps2, "braking limit, m/s² (4)"},
        {"margin", CLI_DBL, &l.margin_m, "distance kept from each border, m (half the car's width, 0.0935)"},
        {"json", CLI_FLAG, &json, "print one JSON object"},
        {"svg", CLI_STR, &svg, "write the racing line coloured by speed over the track (SVG)"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race limit", "TRACK [--json] [--svg FILE]", opts, argc, argv, pos, 1, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    if (npos != 1) {
        fprintf(stderr, "baton race limit: expected a track name or a .npy path\n");
        return CLI_USAGE;
    }
    if (!(l.max_speed_mps > 0 && l.lat_accel_mps2 > 0 && l.accel_mps2 > 0 && l.brake_mps2 > 0 && l.margin_m >= 0)) {
        fprintf(stderr, "baton race limit: the car's limits must be positive\n");
        return CLI_USAGE;
    }
    baton_race_track *t;
    baton_err err = {0};
    if (baton_race_track_load(pos[0], &t, &err)) return cli_fail("race limit", &err);
    baton_race_limit_result r;
    if (baton_race_limit(t, &l, &r, &err)) {
        baton_race_track_free(t);
        return cli_fail("race limit", &err);
    }
    baton_race_track_info in;
    baton_race_track_get_info(t, &in);
    double vmin = INFINITY;
    for (size_t k = 0; k < r.racing.n; k++) vmin = r.racing.v[k] < vmin ? r.racing.v[k] : vmin;
    int rc = CLI_OK;
    if (svg) {
        char title[512];
        snprintf(title, sizeof title, "%s: racing line %.2f s, centre line %.2f s", in.name, r.lap_s, r.centerline_lap_s);
        baton_race_svg_line line = {"racing line", r.racing.x, r.racing.y, r.racing.v, r.racing.n, r.racing.loop};
        if (baton_race_svg(svg, t, title, &line, 1, &err)) rc = cli_fail("race limit", &err);
    }
    if (rc == CLI_OK && json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "track", in.name);
        cJSON_AddNumberToObject(j, "lap_s", r.lap_s);
        cJSON_AddNumberToObject(j, "centerline_lap_s", r.centerline_lap_s);
        cJSON_AddNumberToObject(j, "mincurv_lap_s", r.mincurv_lap_s);
        cJSON_AddNumberToObject(j, "blend", r.blend);
        cJSON_AddNumberToObject(j, "racing_line_m", r.racing.length_m);
        cJSON_AddNumberToObject(j, "centerline_m", r.center.length_m);
        cJSON_AddNumberToObject(j, "slowest_mps", vmin);
        cJSON_AddNumberToObject(j, "max_speed_mps", l.max_speed_mps);
        cJSON_AddNumberToObject(j, "lat_accel_mps2", l.lat_accel_mps2);
        cJSON_AddNumberToObject(j, "accel_mps2", l.accel_mps2);
        cJSON_AddNumberToObject(j, "brake_mps2", l.brake_mps2);
        cJSON_AddNumberToObject(j, "margin_m", l.margin_m);
        rc = cli_print_json(stdout, j);
    } else if (rc == CLI_OK) {
        printf("limit %s: racing line %.2f m, lap %.3f s; centre line %.2f m, lap %.3f s (racing line %.1f %% faster)\n",
               in.name, r.racing.length_m, r.lap_s, r.center.length_m, r.centerline_lap_s,
               100 * (1 - r.lap_s / r.centerline_lap_s));
        printf("  car      top speed %.2f m/s, lateral %.2f m/s², accelerate %.2f m/s², brake %.2f m/s², %.3f m "
               "from the borders\n", l.max_speed_mps, l.lat_accel_mps2, l.accel_mps2, l.brake_mps2, l.margin_m);
        printf("  line     the minimum-curvature line (lap %.3f s)%s", r.mincurv_lap_s, r.blend > 0 ? "" : "\n");
        if (r.blend > 0) printf(", %.0f %% of the way to the short smooth line\n", 100 * r.blend);
        printf("  slowest  %.2f m/s\n", vmin);
        if (svg) printf("  picture  %s\n", svg);
    }
    baton_race_limit_free(&r);
    baton_race_track_free(t);
    return rc;
}

int cmd_race(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: baton race track|drive|limit|train|eval|match|submit|leaderboard|serve|token ...\n"
                   "  track NAME|PATH [--json] [--svg FILE]   a track's length, widths, turns (built-in: oval, technical)\n"
                   "  drive TRACK [--policy centerline|CKPT] [--reward FILE|NAME] [--frames DIR] [--svg FILE] [--json]\n"
                   "        [--race time-trial|object-avoidance|head-to-bot] [--objects N] [--bots N] [--bot-speed V] [--lane-change]\n"
                   "        [--randomize]                     boxes or bot cars on the track (a crash ends the drive)\n"
                   "  limit TRACK [--json] [--svg FILE]       the fastest lap the car can drive, and the centre line's\n"
                   "  train --track T [--reward FILE|NAME] [--metadata F] [--hyper F] --ckpt-dir DIR [--minutes M | --episodes N]\n"
                   "        [--obs sensor|camera] [--seed S]  PPO, as DeepRacer trains; resumes from --ckpt-dir\n"
                   "        [--race ... and its settings]     with boxes or bot cars (a crash ends an episode)\n"
                   "        [--race head-to-model --opponent CKPT ...]   against 1 to 3 models\n"
                   "  eval --ckpt DIR [--track T] [--laps 3] [--json] [--trace F] [--svg F]   a time trial of a trained model\n"
                   "        [--race ...] [--objects N] [--bots N] [--bot-speed V] [--lane-change] [--randomize] [--collision-penalty S]\n"
                   "                                          or a race with boxes or bots (a crash: a reset with a penalty)\n"
                   "  match --ckpt A --ckpt B [--ckpt ...] [--track T] [--laps 3] [--seed S] [--gap M] [--json] [--svg F] [--trace F]\n"
                   "                                          head-to-model: 2 to 4 models on one track at once\n"
                   "  export --ckpt DIR --out DIR [--json]   the policy alone, as a checkpoint (what a league evaluates)\n"
                   "  submit --ckpt DIR --alias NAME --track T [--race R] [--format time-trial|total] [--db FILE] [--json]\n"
                   "                                          the league evaluates a model under its rules and stores it\n"
                   "  leaderboard [--track T] [--race R] [--format time-trial|total] [--db FILE] [--json]   the standings\n"
                   "                                          (--race head-to-model: the board by rating)\n"
                   "  serve [--listen HOST:PORT] [--db FILE] [--tracks DIR]   the league's page (standings, track, replays),\n"
                   "                                          JSON API and submissions over HTTP (POST /api/submit)\n"
                   "  token add ALIAS [--rotate] | ls | revoke ALIAS [--db FILE]   a racer's token for HTTP submissions\n");
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "track")) return do_track(argc - 1, argv + 1);
    if (!strcmp(argv[1], "drive")) return do_drive(argc - 1, argv + 1);
    if (!strcmp(argv[1], "limit")) return do_limit(argc - 1, argv + 1);
    if (!strcmp(argv[1], "train")) return cli_race_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "eval")) return cli_race_eval(argc - 1, argv + 1);
    if (!strcmp(argv[1], "match")) return cli_race_match(argc - 1, argv + 1);
    if (!strcmp(argv[1], "submit")) return cli_race_submit(argc - 1, argv + 1);
    if (!strcmp(argv[1], "export")) return cli_race_export(argc - 1, argv + 1);
    if (!strcmp(argv[1], "leaderboard")) return cli_race_leaderboard(argc - 1, argv + 1);
    if (!strcmp(argv[1], "serve")) return cli_race_serve(argc - 1, argv + 1);
    if (!strcmp(argv[1], "token")) return cli_race_token(argc - 1, argv + 1);
    fprintf(stderr, "baton race: unknown action '%s' (track, drive, limit, train, eval, match, export, submit, leaderboard, serve, token)\n", argv[1]);
    return CLI_USAGE;
}
