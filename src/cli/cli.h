/* cli.h — shared pieces of the `baton` command: the command table entry, exit codes, and a small
 * declarative option parser (long options "--name VALUE" or "--name=VALUE", flags "--name").
 * Every subcommand lives in its own cmd_<name>.c and calls only the public library API. */
#ifndef BATON_CLI_H
#define BATON_CLI_H

#include "baton/img.h"
#include "baton/notice.h"

enum { CLI_OK = 0, CLI_ERROR = 1, CLI_USAGE = 2, CLI_INTERRUPTED = BATON_EXIT_STOPPED };

struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

int cmd_pack(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench_io(int argc, char **argv);
int cmd_channel(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_ckpt(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_imds(int argc, char **argv);
int cmd_notice(int argc, char **argv);
int cmd_infer_bench(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_race(int argc, char **argv);
int cmd_verify(int argc, char **argv);
/* cmd_race_train.c: `baton race train` and `baton race eval` (argv[0] is the action) */
int cli_race_train(int argc, char **argv);
int cli_race_eval(int argc, char **argv);
int cli_race_export(int argc, char **argv);
int cli_race_match(int argc, char **argv);   /* cmd_race_match.c: head-to-model */
/* cmd_race_h2m.c: the league's head-to-model, once submit's and leaderboard's flags are parsed */
int cli_h2m_submit(const char *db, const char *ckpt, const char *alias, const char *track, int json);
int cli_h2m_board(const char *db, const char *track, int json);
int cli_race_submit(int argc, char **argv);
int cli_race_leaderboard(int argc, char **argv);
int cli_race_serve(int argc, char **argv);
int cli_race_token(int argc, char **argv);
/* `baton fleet run|status|cancel`: every backend's options, parsed once (cmd_fleet.c); which of
 * them a subcommand and backend take is checked there too. */
struct cli_fleet_args {
    const char *sub;       /* run, status, cancel */
    const char *pos;       /* the job file, or (status, cancel) a job name; NULL none */
    const char *backend, *state, *out, *account, *region, *interrupts, *svg, *imds, *api;
    double time_scale, hazard, timeout, poll, grace;
    uint64_t seed;
    int seed_set, hazard_set;
    int json, quiet, wait, dry_run, apply, events;
};
/* `baton fleet run` and `baton run JOBFILE`: run a job file to its end, print the report. */
struct baton_fleet_opts;
int cli_fleet_run_file(const char *cmd, const char *path, struct baton_fleet_opts *o, int json, const char *svg);
/* cmd_fleet_remote.c: which backend the arguments ask for (--backend, else the job file's, else
 * what the state folder holds; a baton_backend value), and `baton fleet` for slurm and aws. */
int cli_fleet_backend(const struct cli_fleet_args *a);
int cli_fleet_remote(const struct cli_fleet_args *a, int backend);

/* crop_args.c: --crop, --size, --scale A,B, --ratio A,B (train, eval, bench-io) */
struct cli_crop {
    const char *crop, *scale, *ratio;
    int size;
};
struct cli_crop_out {
    baton_crop crop;
    int set;                 /* --crop was given */
    uint32_t size;
    float scale[2], ratio[2];   /* 0, 0: the pipeline's defaults */
};
#define CLI_CROP_OPTS(c)                                                                                                \
    {"crop", CLI_STR, &(c).crop, "random-resized | center | pad | none: the samples' crop (any image size with the first two)"}, \
        {"size", CLI_INT, &(c).size, "with --crop random-resized or center: the side of the crop (default 224)"},     \
        {"scale", CLI_STR, &(c).scale, "A,B: random-resized's area fraction range (default 0.08,1)"},                  \
        {"ratio", CLI_STR, &(c).ratio, "A,B: random-resized's aspect ratio range (default 0.75,1.333)"}
int cli_crop_finish(const struct cli_crop *c, const char *cmd, struct cli_crop_out *o);

/* Option table. kind: CLI_FLAG sets *(int*)dst = 1; CLI_STR stores the argument pointer;
 * CLI_INT / CLI_U64 / CLI_DBL parse numbers (a bad number is a usage error). */
enum cli_kind { CLI_FLAG, CLI_STR, CLI_INT, CLI_U64, CLI_DBL };
struct cli_opt {
    const char *name;      /* without the leading "--" */
    enum cli_kind kind;
    void *dst;
    const char *help;      /* NULL: an internal option, accepted but not listed by --help */
};

/* Parse argv[1..]. Positional arguments are collected into pos (up to maxpos). Returns 0, or
 * CLI_USAGE after printing what was wrong (or the help text for --help: then *help_shown = 1). */
int cli_parse(const char *cmd, const char *synopsis, const struct cli_opt *opts, int argc,
              char **argv, const char **pos, int maxpos, int *npos, int *help_shown);
/* The required options that are missing, as "--a and --b are required" in buf (which it
 * returns), or NULL when every one is given. Arguments: pairs of an option's name ("--data") and
 * its value (NULL: not given), ended by a NULL name. Names only what is missing: an option given
 * is never said to be required. */
const char *cli_missing(char buf[256], const char *name, const void *val, ...);
/* 1 when argv holds --NAME (as "--NAME" or "--NAME=..."): tells an explicit value from a default. */
int cli_given(int argc, char **argv, const char *name);
/* --threads T (T > 0; else nothing): OMP_NUM_THREADS for what the run starts, and this process's
 * compute threads (the runtime read the environment before main). */
void cli_set_threads(int threads);
/* Print j (then a newline) to f through baton_json_print — every number exact, every string
 * escaped — and delete it. CLI_OK, or CLI_ERROR with a message when j is NULL or out of memory
 * (a NULL j is what a failed cJSON_Create* chain leaves). */
struct cJSON;
int cli_print_json(FILE *f, struct cJSON *j);
/* A run's result (one JSON object, text) into $BATON_RESULT_FILE when it is set, atomically: the
 * fleet's reports show each task's result beside its cost. A failure is a warning, not an error. */
void cli_result_file(const char *json);
/* Print "baton CMD: message" for a library error and return CLI_ERROR (CLI_USAGE for
 * BATON_ERR_USAGE: an option value the library refused). */
int cli_fail(const char *cmd, const baton_err *err);

/* The checkpoint-session flags `baton train` and `baton race train` share (session_args.c): put
 * CLI_SESSION_OPTS(c, "steps", "step") in the option table, cli_session_init before cli_parse and
 * cli_session_finish after it, which checks them and fills the session options from them and
 * then from the environment a fleet gives its tasks (baton_train_session_opts_env). */
struct baton_train_session_opts;
struct cli_session {
    struct baton_train_session_opts *so;
    uint64_t every_steps;   /* UINT64_MAX: not given */
    double every_sec;       /* NAN: not given */
    const char *every;      /* --ckpt-every */
    double rate_pct;        /* NAN: not given */
    int keep;               /* -1: not given */
    int no_notice;
    double term_grace;      /* --term-grace: NAN not given */
    baton_notice_opts nopts;   /* the watcher's options when a flag changes them */
};
#define CLI_SESSION_OPTS(c, units, unit)                                                                         \
    {"ckpt-dir", CLI_STR, &(c).so->ckpt_dir, "checkpoint folder (required); resumes from it"},                    \
    {"ckpt-uri", CLI_STR, &(c).so->ckpt_uri,                                                                      \
     "upload every checkpoint to s3://bucket/prefix (MANIFEST last); restore from it when --ckpt-dir is empty"},  \
    {"s3-endpoint", CLI_STR, &(c).so->store.s3_endpoint, "S3 endpoint (else AWS_ENDPOINT_URL)"},                 \
    {"ckpt-every-steps", CLI_U64, &(c).every_steps, "checkpoint every K " units " in the background (0: at the end)"}, \
    {"ckpt-every-sec", CLI_DBL, &(c).every_sec,                                                                   \
     "checkpoint every S seconds in the background (default 60 unless --ckpt-every-steps is given; 0: off)"},    \
    {"ckpt-every", CLI_STR, &(c).every,                                                                           \
     "auto: every τ seconds, Daly's optimum for the measured checkpoint cost and the interruption hazard "        \
     "(--interrupt-rate, else $BATON_SPOT_MTBI_S; the default under baton fleet, $BATON_CKPT_EVERY=auto)"},      \
    {"interrupt-rate", CLI_DBL, &(c).rate_pct,                                                                    \
     "with --ckpt-every auto: percent of spot instances reclaimed per month (Spot Advisor's bucket)"},           \
    {"keep", CLI_INT, &(c).keep, "checkpoints kept, >= 1 (default 3)"},                                           \
    {"no-notice", CLI_FLAG, &(c).no_notice, "ignore interruption notices (metadata service, SIGTERM, SIGINT)"},   \
    {"term-grace", CLI_DBL, &(c).term_grace,                                                                      \
     "a SIGTERM's deadline, seconds after it comes (default 30, or $BATON_TERM_GRACE_S; 0: unknown)"},             \
    {"deadline-margin", CLI_DBL, &(c).so->deadline_margin_s,                                                      \
     "on a notice, upload the checkpoint only if it fits before the deadline less S seconds (default 5)"},        \
    {"progress-file", CLI_STR, &(c).so->progress_file, "keep the current " unit " in FILE (default $BATON_PROGRESS_FILE)"}
void cli_session_init(struct cli_session *c, struct baton_train_session_opts *so);
/* An interruption's times (train_session.h's baton_train_stop), for `baton train`'s and `race
 * train`'s results: an "interruption" object in parent (nothing when the run did not stop on a
 * notice), and one summary line "interruption: … notice at …, deadline +10.0 s, step N committed at
 * +0.05 s, left to the next machine, exit at +0.06 s, margin 9.9 s". */
struct baton_train_stop;
void cli_interruption_json(struct cJSON *parent, const struct baton_train_stop *st);
void cli_interruption_print(FILE *f, const struct baton_train_stop *st);
/* CLI_OK, or CLI_USAGE after printing "baton CMD: what is wrong". */
int cli_session_finish(struct cli_session *c, const char *cmd, int argc, char **argv);

/* The race-type flags `race drive` and `race eval` share (race_objects_args.c): put
 * CLI_RACE_OBJECTS_OPTS(c) in the option table, cli_race_objects_init before cli_parse and
 * cli_race_objects_finish after it, which checks them (naming the flag) and fills the objects. */
struct baton_race_objects_opts;
struct cli_race_objects {
    const char *race;       /* time-trial (NULL), object-avoidance, head-to-bot */
    int objects, bots;      /* -1: not given */
    double bot_speed;       /* NAN: not given */
    int randomize, lane_change;
    const char *file;       /* --race-file: all of them from a YAML or JSON file */
};
#define CLI_RACE_OBJECTS_OPTS(c)                                                                                     \
    {"race", CLI_STR, &(c).race, "time-trial (default), object-avoidance (boxes on the track) or head-to-bot (bot cars)"}, \
    {"objects", CLI_INT, &(c).objects, "object-avoidance: boxes, 1..16 (default 6), evenly spaced, lanes alternating"}, \
    {"bots", CLI_INT, &(c).bots, "head-to-bot: bot cars, 1..6 (default 3)"},                                        \
    {"bot-speed", CLI_DBL, &(c).bot_speed, "head-to-bot: the bots' speed along the centre line, m/s (default 0.2)"},  \
    {"lane-change", CLI_FLAG, &(c).lane_change, "head-to-bot: each bot changes lanes every 3-5 s, over 1 m"},        \
    {"randomize", CLI_FLAG, &(c).randomize, "boxes or bots at random places each episode (seeded), 2 m apart"},      \
    {"race-file", CLI_STR, &(c).file, "the race and its settings from a YAML or JSON file (baton's or deepracer-for-cloud's names)"}
void cli_race_objects_init(struct cli_race_objects *c);
/* CLI_OK, or CLI_USAGE after printing "baton CMD: what is wrong" (CLI_ERROR: a bad --race-file).
 * With --race-file, c->race becomes the file's race. */
int cli_race_objects_finish(struct cli_race_objects *c, const char *cmd, int argc, char **argv,
                            struct baton_race_objects_opts *o);

#endif
