/* cmd_race_train.c — `baton race train` and `baton race eval`:
 *   train --track T [--reward FILE|NAME] [--metadata F] [--hyper F] --ckpt-dir DIR
 *         [--minutes M | --episodes N] [--obs sensor|camera] [--seed S] [--race ... and its settings] [...]
 *                 PPO with checkpoints that resume bit-exactly, a progress line, a per-iteration CSV
 *                 log, SIM_TRACE_LOG traces; exit 75 after a checkpoint on an interruption notice
 *   eval --ckpt DIR [--track T] [--laps 3] [--off-track-penalty S] [--json] [--trace F] [--svg F]
 *        [--race time-trial|object-avoidance|head-to-bot] [--objects N] [--bots N] [--bot-speed V]
 *        [--lane-change] [--randomize] [--collision-penalty S]
 *                 DeepRacer's time trial (or a race with boxes or bot cars): every lap, resets,
 *                 crashes, penalties, the best lap against the racing-line limit
 * Usage errors exit 2 naming the option; library errors exit 1. */
#include "baton/ckpt.h"
#include "baton/ppo.h"
#include "baton/race.h"
#include "cli.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void train_json(const baton_ppo_train_result *r, int rc, int print)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", rc == BATON_STOPPED ? "stopped" : "done");
    cJSON_AddNumberToObject(j, "iteration", (double)r->iteration);
    cJSON_AddNumberToObject(j, "episodes", (double)r->episodes);
    cJSON_AddNumberToObject(j, "sim_steps", (double)r->sim_steps);
    cJSON_AddBoolToObject(j, "resumed", r->resumed);
    cJSON_AddNumberToObject(j, "resumed_iteration", (double)r->resumed_iteration);
    cJSON_AddNumberToObject(j, "seconds", r->seconds);
    cJSON_AddNumberToObject(j, "total_seconds", r->total_seconds);
    cJSON_AddNumberToObject(j, "steps_per_s", r->steps_per_s);
    cJSON_AddNumberToObject(j, "mean_reward", r->mean_reward);
    cJSON_AddNumberToObject(j, "mean_progress", r->mean_progress);
    cJSON_AddNumberToObject(j, "best_lap_s", r->best_lap_s);
    cJSON_AddNumberToObject(j, "laps", (double)r->laps);
    cJSON_AddStringToObject(j, "kernels", r->kernels);
    cJSON_AddNumberToObject(j, "rebalances", (double)r->rebalances);
    if (r->ckpt_tau_s > 0) {   /* --ckpt-every auto, a fleet's default: Daly's interval */
        cJSON_AddNumberToObject(j, "ckpt_tau_s", r->ckpt_tau_s);
        cJSON_AddNumberToObject(j, "ckpt_delta_s", r->ckpt_delta_s);
        cJSON_AddNumberToObject(j, "ckpt_mtbi_s", r->ckpt_mtbi_s);
    }
    cJSON_AddStringToObject(j, "checkpoint", r->checkpoint);
    if (rc == BATON_STOPPED) {
        cJSON_AddStringToObject(j, "notice", r->notice);
        cJSON_AddStringToObject(j, "notice_source", r->notice_source);
        cJSON_AddNumberToObject(j, "notice_margin_s", r->notice_margin_s);
        cli_interruption_json(j, &r->interruption);
    }
    char *s = baton_json_print(j, 0);
    if (s && print) printf("%s\n", s);
    if (s) cli_result_file(s);   /* where the fleet's report reads it, when $BATON_RESULT_FILE says */
    free(s);
    cJSON_Delete(j);
}

static void train_text(const baton_ppo_train_result *r, int rc)
{
    printf("iteration %llu, %llu episodes, %llu steps", (unsigned long long)r->iteration,
           (unsigned long long)r->episodes, (unsigned long long)r->sim_steps);
    if (r->seconds > 0 && r->iteration > r->resumed_iteration)
        printf(", %.0f steps/s (%s)", r->steps_per_s, r->kernels);
    else if (r->resumed)
        printf(", nothing left to train (resumed at iteration %llu)", (unsigned long long)r->resumed_iteration);
    printf("\n  last iteration: reward %.2f per episode, lap completion %.1f %%\n", r->mean_reward, r->mean_progress);
    if (r->best_lap_s > 0) printf("  best lap in training %.2f s (%llu laps completed)\n", r->best_lap_s, (unsigned long long)r->laps);
    if (r->checkpoint[0]) printf("  checkpoint %s\n", r->checkpoint);
    if (rc == BATON_STOPPED) {
        printf("stopped on a %s notice (%s)\n", r->notice, r->notice_source);
        cli_interruption_print(stdout, &r->interruption);
    }
}

/* --opponent CKPT (once per opponent) and --race head-to-model, taken out of argv into rest before
 * the rest is parsed; -1 with the usage error said. */
static int take_opponents(int argc, char **argv, char **rest, int *nrest, baton_ppo_train_opts *o)
{
    int h2m = 0;
    *nrest = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int race = i > 0 && (!strcmp(argv[i], "--race") || !strncmp(argv[i], "--race=", 7));
        const char *rv = !race ? NULL : argv[i][6] == '=' ? argv[i] + 7 : i + 1 < argc ? argv[i + 1] : NULL;
        if (race && rv && !strcmp(rv, "head-to-model")) {
            h2m = 1;
            i += argv[i][6] != '=';
            continue;
        }
        if (i > 0 && !strcmp(argv[i], "--opponent")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "baton race train: --opponent needs a checkpoint\n");
                return -1;
            }
            v = argv[++i];
        } else if (i > 0 && !strncmp(argv[i], "--opponent=", 11)) {
            v = argv[i] + 11;
        } else {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        if (o->nopponents == BATON_RACE_MAX_CARS - 1) {
            fprintf(stderr, "baton race train: at most %d --opponent\n", BATON_RACE_MAX_CARS - 1);
            return -1;
        }
        o->opponents[o->nopponents++] = v;
    }
    if (h2m && !o->nopponents) {
        fprintf(stderr, "baton race train: --race head-to-model needs --opponent CKPT (the model to race against)\n");
        return -1;
    }
    return 0;
}

/* The options that are not fields of baton_ppo_train_opts, as given (-1, NAN, UINT64_MAX: not
 * given). */
typedef struct race_train_args {
    const char *obs, *scale, *precision;
    double minutes, progress_every;
    uint64_t episodes;
    int envs, max_steps, threads, quiet, json, trace_every;
} race_train_args;

/* What is wrong with the options, in words, or NULL. */
static const char *check_args(const baton_ppo_train_opts *o, const race_train_args *a, int argc, char **argv,
                              char miss[256])
{
    const int given_min = cli_given(argc, argv, "minutes"), given_ep = cli_given(argc, argv, "episodes");
    return cli_missing(miss, "--track", o->track, "--ckpt-dir", o->session.ckpt_dir, NULL)
               ?: given_min && given_ep ? "give --minutes or --episodes, not both"
         : given_min && !(a->minutes > 0 && isfinite(a->minutes)) ? "--minutes must be a positive number"
         : given_ep && a->episodes == 0 ? "--episodes must be >= 1"
         : a->obs && strcmp(a->obs, "sensor") && strcmp(a->obs, "camera") ? "--obs must be sensor or camera"
         : a->scale && strcmp(a->scale, "progress") && strcmp(a->scale, "step") ? "--reward-scale must be progress or step"
         : cli_given(argc, argv, "envs") && (a->envs < 1 || a->envs > 4096) ? "--envs must be 1..4096"
         : cli_given(argc, argv, "max-steps") && (a->max_steps < 1 || a->max_steps > 100000) ? "--max-steps must be 1..100000"
         : a->trace_every < 1 ? "--trace-every must be >= 1"
         : a->threads < 0 ? "--threads must not be negative"
         : a->precision && strcmp(a->precision, "f32") && strcmp(a->precision, "bf16") ? "--precision must be f32 or bf16"
         : a->precision && !strcmp(a->precision, "bf16") && o->reference_kernels ? "--precision bf16 runs on oneDNN, not with --reference"
         : !(a->progress_every >= 0 && isfinite(a->progress_every)) ? "--progress-every must be >= 0"
         : NULL;
}

/* The checked options into o; a resume takes the run's race, sensor, scale, precision, seed,
 * envs and step limit unless one is given. */
static void apply_args(baton_ppo_train_opts *o, const race_train_args *a, int argc, char **argv)
{
    o->objects_set = cli_given(argc, argv, "race") || cli_given(argc, argv, "objects") || cli_given(argc, argv, "bots") ||
                     cli_given(argc, argv, "bot-speed") || cli_given(argc, argv, "lane-change") ||
                     cli_given(argc, argv, "randomize");
    cli_set_threads(a->threads);
    if (a->threads > 0) o->threads = a->threads;
    o->minutes = cli_given(argc, argv, "minutes") ? a->minutes : 0;
    o->episodes = cli_given(argc, argv, "episodes") ? a->episodes : 0;
    if (a->obs) o->obs = !strcmp(a->obs, "sensor") ? BATON_PPO_OBS_SENSOR : BATON_PPO_OBS_CAMERA, o->obs_set = 1;
    if (a->scale) o->reward_scale = !strcmp(a->scale, "step") ? BATON_PPO_SCALE_STEP : BATON_PPO_SCALE_PROGRESS, o->scale_set = 1;
    if (a->precision) o->precision = !strcmp(a->precision, "bf16") ? BATON_PPO_BF16 : BATON_PPO_F32, o->precision_set = 1;
    o->seed_set = cli_given(argc, argv, "seed");
    if (a->envs > 0) o->envs = (uint32_t)a->envs, o->envs_set = 1;
    if (a->max_steps > 0) o->max_steps = (uint32_t)a->max_steps, o->max_steps_set = 1;
    o->trace_every = (uint32_t)a->trace_every;
    o->progress = !a->quiet && !getenv("BATON_NO_PROGRESS");
    o->progress_every_s = a->quiet ? 0 : a->progress_every;
}

int cli_race_train(int argc, char **argv)
{
    baton_ppo_train_opts o;
    baton_ppo_train_opts_default(&o);
    static char *rest[1024];   /* argv without --opponent and --race head-to-model */
    int nrest = 0;
    if (argc > 1024) {
        fprintf(stderr, "baton race train: too many arguments\n");
        return CLI_USAGE;
    }
    if (take_opponents(argc, argv, rest, &nrest, &o)) return CLI_USAGE;
    argc = nrest;
    argv = rest;
    race_train_args a = {.minutes = NAN, .progress_every = 30, .episodes = UINT64_MAX, .envs = -1, .max_steps = -1,
                         .trace_every = 1};
    struct cli_session cs;
    cli_session_init(&cs, &o.session);
    struct cli_race_objects ro;
    cli_race_objects_init(&ro);
    const struct cli_opt opts[] = {
        {"track", CLI_STR, &o.track, "a built-in track (oval, technical) or a DeepRacer .npy (required)"},
        CLI_RACE_OBJECTS_OPTS(ro),
        {"opponent", CLI_STR, &o.opponents[0], "head-to-model (--race head-to-model): a model to race against, a checkpoint; "
                                              "once per opponent, 1 to 3 (a resume keeps the run's)"},
        {"reward", CLI_STR, &o.reward, "FILE.py, FILE.c or a built-in (default follow_center_line)"},
        {"metadata", CLI_STR, &o.metadata, "model_metadata.json: actions and sensor (default: the console's)"},
        {"hyper", CLI_STR, &o.hyper, "hyperparameters.json (default: the console's)"},
        CLI_SESSION_OPTS(cs, "iterations", "iteration"),
        {"minutes", CLI_DBL, &a.minutes, "training time, summed over restarts (default 60, the console's)"},
        {"episodes", CLI_U64, &a.episodes, "episodes, counted over restarts (instead of --minutes)"},
        {"obs", CLI_STR, &a.obs, "sensor | camera (default: the metadata's sensor; camera for the console's)"},
        {"seed", CLI_U64, &o.seed, "initialisation, actions and minibatches (default 0)"},
        {"reward-scale", CLI_STR, &a.scale, "progress (default: each step's reward times its progress) | step (DeepRacer's)"},
        {"envs", CLI_INT, &a.envs, "cars stepped as one batch (default num_episodes_between_training)"},
        {"max-steps", CLI_INT, &a.max_steps, "a training episode's step limit (default 10000)"},
        {"log", CLI_STR, &o.log_path, "CSV log, one row per iteration"},
        {"trace", CLI_STR, &o.trace_dir, "SIM_TRACE_LOG CSVs into DIR (<n>-iteration.csv)"},
        {"trace-every", CLI_INT, &a.trace_every, "trace one iteration in K (default 1: all)"},
        {"threads", CLI_INT, &a.threads, "compute threads (sets OMP_NUM_THREADS)"},
        {"reference", CLI_FLAG, &o.reference_kernels, "the plain C kernels instead of oneDNN"},
        {"precision", CLI_STR, &a.precision, "f32 (default) | bf16: convolutions and linear layers on bfloat16 kernels (AVX512-BF16; about twice as fast)"},
        {"quiet", CLI_FLAG, &a.quiet, "no progress line"},
        {"progress-every", CLI_DBL, &a.progress_every, "when stderr is not a terminal, a progress line every S seconds (30)"},
        {"json", CLI_FLAG, &a.json, "the summary as one JSON object"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race train",
                  "--track T [--reward FILE|NAME] [--metadata F] [--hyper F] --ckpt-dir DIR [--minutes M | --episodes N] "
                  "[--obs sensor|camera] [--seed S] [--log FILE.csv] [--trace DIR] [--json] "
                  "[--race time-trial|object-avoidance|head-to-bot] [--objects N] [--bots N] [--bot-speed V] [--lane-change] "
                  "[--randomize] [--race head-to-model --opponent CKPT ...] [--precision f32|bf16]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    char miss[256];
    const char *bad = check_args(&o, &a, argc, argv, miss);
    if (bad) {
        fprintf(stderr, "baton race train: %s\n", bad);
        return CLI_USAGE;
    }
    if (cli_session_finish(&cs, "race train", argc, argv)) return CLI_USAGE;
    int rc_ro;
    if ((rc_ro = cli_race_objects_finish(&ro, "race train", argc, argv, &o.objects))) return rc_ro;
    apply_args(&o, &a, argc, argv);
    baton_ppo_train_result r;
    baton_err err = {0};
    int rc = baton_ppo_train(&o, &r, &err);
    if (rc && rc != BATON_STOPPED) return cli_fail("race train", &err);
    train_json(&r, rc, a.json);   /* printed with --json; the result file either way */
    if (!a.json) train_text(&r, rc);
    return rc == BATON_STOPPED ? CLI_INTERRUPTED : CLI_OK;
}

static int eval_json(const baton_ppo_eval_result *r, const char *race)
{
    cJSON *j = cJSON_CreateObject(), *laps = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "race", race);
    cJSON_AddStringToObject(j, "track", r->track_name);
    cJSON_AddStringToObject(j, "track_path", r->track);
    cJSON_AddStringToObject(j, "checkpoint", r->checkpoint);
    cJSON_AddNumberToObject(j, "iteration", (double)r->iteration);
    cJSON_AddBoolToObject(j, "completed", r->completed);
    for (size_t i = 0; i < r->nlaps; i++) {
        cJSON *l = cJSON_CreateObject();
        cJSON_AddNumberToObject(l, "lap", (double)(i + 1));
        cJSON_AddNumberToObject(l, "time_s", r->laps[i].time_s);
        cJSON_AddNumberToObject(l, "resets", r->laps[i].resets);
        cJSON_AddNumberToObject(l, "penalty_s", r->laps[i].penalty_s);
        cJSON_AddNumberToObject(l, "steps", r->laps[i].steps);
        if (r->nobj && r->obj[r->nobj - 1].kind == BATON_RACE_BOT) {   /* bots are last */
            cJSON_AddNumberToObject(l, "overtakes", r->laps[i].overtakes);
            cJSON_AddNumberToObject(l, "overtaken", r->laps[i].overtaken);
            cJSON *b = cJSON_AddArrayToObject(l, "bots_passed");
            for (int k = 0; k < 32; k++)
                if (r->laps[i].bots_passed >> k & 1) cJSON_AddItemToArray(b, cJSON_CreateNumber(k));
        }
        cJSON_AddItemToArray(laps, l);
    }
    cJSON_AddItemToObject(j, "laps", laps);
    cJSON_AddNumberToObject(j, "best_lap_s", r->best_lap_s);
    cJSON_AddNumberToObject(j, "total_s", r->total_s);
    cJSON_AddNumberToObject(j, "resets", r->resets);
    cJSON_AddNumberToObject(j, "crashes", r->crashes);
    if (r->nobj && r->obj[r->nobj - 1].kind == BATON_RACE_BOT) cJSON_AddNumberToObject(j, "overtakes", r->overtakes);
    cJSON_AddNumberToObject(j, "penalties_s", r->penalties_s);
    cJSON_AddNumberToObject(j, "limit_s", r->limit_s);
    cJSON_AddNumberToObject(j, "ratio", r->ratio);
    return cli_print_json(stdout, j);
}

static void eval_text(const baton_ppo_eval_result *r, const char *race)
{
    printf("eval %s on %s (iteration %llu): %s %s\n", r->checkpoint, r->track_name, (unsigned long long)r->iteration,
           !strcmp(race, "time-trial") ? "time trial" : race, r->completed ? "complete" : "given up at the step limit");
    for (size_t i = 0; i < r->nlaps; i++) {
        printf("  lap %zu   %8.3f s   %u reset(s), %.0f s of penalties", i + 1, r->laps[i].time_s, r->laps[i].resets,
               r->laps[i].penalty_s);
        if (r->nobj && r->obj[r->nobj - 1].kind == BATON_RACE_BOT) printf(", %u overtake(s)", r->laps[i].overtakes);
        printf("\n");
    }
    if (r->nlaps) {
        printf("  best lap %.3f s, total %.3f s, %u reset(s), %u crash(es)\n", r->best_lap_s, r->total_s, r->resets,
               r->crashes);
        printf("  limit    %.3f s (the racing line): best lap / limit = %.3f\n", r->limit_s, r->ratio);
    } else {
        printf("  no lap completed (%u resets)\n", r->resets);
        printf("  limit    %.3f s (the racing line)\n", r->limit_s);
    }
}

int cli_race_eval(int argc, char **argv)
{
    baton_ppo_eval_opts o;
    baton_ppo_eval_opts_default(&o);
    const char *svg = NULL;
    int json = 0, max_steps = 0;
    struct cli_race_objects ro;
    cli_race_objects_init(&ro);
    const struct cli_opt opts[] = {
        CLI_RACE_OBJECTS_OPTS(ro),
        {"collision-penalty", CLI_DBL, &o.collision_penalty_s, "seconds added for each crash into an object (default 5)"},
        {"ckpt", CLI_STR, &o.ckpt, "a checkpoint folder, or a folder of them (its newest that verifies) (required)"},
        {"track", CLI_STR, &o.track, "the track (default: the one it was trained on)"},
        {"laps", CLI_INT, &o.laps, "laps in a row (default 3)"},
        {"off-track-penalty", CLI_DBL, &o.off_track_penalty_s, "seconds added for each reset (default 5)"},
        {"max-steps", CLI_INT, &max_steps, "give up after this many steps (default 10000 per lap)"},
        {"trace", CLI_STR, &o.trace_path, "SIM_TRACE_LOG CSV of the drive"},
        {"frames", CLI_STR, &o.frames_dir, "every camera frame as PNG into DIR"},
        {"svg", CLI_STR, &svg, "the driven line over the racing line (SVG)"},
        {"json", CLI_FLAG, &json, "one JSON object: laps, best_lap_s, total_s, resets, limit_s, ratio"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race eval", "--ckpt DIR [--track T] [--laps 3] [--off-track-penalty S] [--json] [--trace F] [--svg F] "
                  "[--race time-trial|object-avoidance|head-to-bot] [--objects N] [--bots N] [--bot-speed V] [--lane-change] "
                  "[--randomize] [--collision-penalty S]",
                  opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    int rc_ro;
    if ((rc_ro = cli_race_objects_finish(&ro, "race eval", argc, argv, &o.objects))) return rc_ro;
    const char *bad = !o.ckpt ? "--ckpt is required"
                    : o.laps < 1 || o.laps > 1000 ? "--laps must be 1..1000"
                    : !(o.off_track_penalty_s >= 0 && o.off_track_penalty_s <= 3600) ? "--off-track-penalty must be 0..3600"
                    : !(o.collision_penalty_s >= 0 && o.collision_penalty_s <= 3600) ? "--collision-penalty must be 0..3600"
                    : max_steps < 0 ? "--max-steps must be >= 1"
                    : NULL;
    if (bad) {
        fprintf(stderr, "baton race eval: %s\n", bad);
        return CLI_USAGE;
    }
    o.max_steps = (uint32_t)max_steps;
    baton_ppo_eval_result r;
    baton_err err = {0};
    if (baton_ppo_eval(&o, &r, &err)) return cli_fail("race eval", &err);
    int rc = CLI_OK;
    if (svg) {
        baton_race_track *t = NULL;
        baton_race_limit_result lr;
        baton_race_limits lim;
        baton_race_limits_default(&lim);
        int ok = baton_race_track_load(r.track, &t, &err) == BATON_OK;
        if (ok && baton_race_limit(t, &lim, &lr, &err) == BATON_OK) {
            char title[512];
            snprintf(title, sizeof title, "%s: best lap %.3f s, %u reset(s); racing line %.3f s (ratio %.3f)", r.track_name,
                     r.best_lap_s, r.resets, r.limit_s, r.ratio);
            baton_race_svg_line lines[2] = {{"racing line (limit)", lr.racing.x, lr.racing.y, NULL, lr.racing.n, 1},
                                            {"driven", r.x, r.y, r.v, r.n, 0}};
            if (baton_race_svg(svg, t, title, lines, 2, &err)) rc = cli_fail("race eval", &err);
            baton_race_limit_free(&lr);
        } else {
            rc = cli_fail("race eval", &err);
        }
        baton_race_track_free(t);
    }
    if (rc == CLI_OK) rc = json ? eval_json(&r, ro.race ? ro.race : "time-trial") : (eval_text(&r, ro.race ? ro.race : "time-trial"), CLI_OK);
    baton_ppo_eval_result_free(&r);
    return rc;
}

/* `baton race export --ckpt DIR --out DIR [--json]`: baton_ppo_policy_export. */
int cli_race_export(int argc, char **argv)
{
    const char *ckpt = NULL, *out = NULL;
    int json = 0;
    const struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, "a checkpoint folder, or a folder of them (its newest that verifies) (required)"},
        {"out", CLI_STR, &out, "the folder the policy's checkpoint goes into (required)"},
        {"json", CLI_FLAG, &json, "one JSON object: checkpoint, bytes"},
        {0},
    };
    const char *pos[1];
    int npos, help;
    if (cli_parse("race export", "--ckpt DIR --out DIR [--json]", opts, argc, argv, pos, 0, &npos, &help))
        return help ? CLI_OK : CLI_USAGE;
    char miss[256];
    if (cli_missing(miss, "--ckpt", ckpt, "--out", out, NULL)) {
        fprintf(stderr, "baton race export: %s (baton race export --help)\n", miss);
        return CLI_USAGE;
    }
    char path[4096];
    baton_err err = {0};
    if (baton_ppo_policy_export(ckpt, out, path, sizeof path, &err)) return cli_fail("race export", &err);
    uint64_t bytes = 0;
    baton_ckpt_info *in = NULL;
    size_t n = 0;
    if (!baton_ckpt_list(out, 0, &in, &n, &err))   /* just written and committed */
        for (size_t i = 0; i < n; i++)
            if (!strcmp(path, in[i].path)) bytes = in[i].bytes;
    free(in);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "checkpoint", path);
        cJSON_AddNumberToObject(j, "bytes", (double)bytes);
        if (cli_print_json(stdout, j)) return CLI_ERROR;
    } else {
        printf("the policy of %s: %s (%.1f MB)\n", ckpt, path, bytes / 1e6);
    }
    return CLI_OK;
}
