/* fleet.h — running a job on a fleet of interruptible instances: the job file every fleet backend
 * reads, the local backend's supervisor, and the report of a run.
 *
 * What it offers, in the order a caller uses it:
 *   1. The job file (src/fleet/jobfile.c): baton_job_load (or baton_job_parse of text, then
 *      baton_job_resolve_paths) into a baton_job, which every backend reads; baton_job_free. The
 *      names of its enums and baton_job_spot_price are there to show it.
 *   2. The local supervisor (src/fleet/fleet_local.c, fleet_run.c): baton_fleet_opts_default, then
 *      baton_fleet_run runs (or resumes) a job until every task has ended, in the folder that
 *      baton_fleet_job_dir names; baton_fleet_cancel stops it from another process. The Slurm and
 *      AWS backends are in fleet_backend.h.
 *   3. The report (src/fleet/fleet_report.c): baton_fleet_report_load of a job's folder (also while
 *      it runs), then baton_fleet_report_print, _json or _svg, and baton_fleet_report_free. The
 *      records and cost figures a report holds are defined here so that a caller can read them.
 *
 * The job file is YAML (parsed with libyaml); docs/jobfile.md is its reference. Every error names
 * the file, the line and the field ("job.yaml:12: instance_types[1].spot_price: expected a number
 * of dollars per hour, got 'cheap'"). Backends other than local (slurm, aws) read the same file; the
 * fields only they understand live in their own sections (`slurm:`, `aws:`) and reach them as
 * key/value pairs with line numbers, so each backend validates its own options.
 *
 * The pieces the supervisor is built from (the spot-market simulator, cost accounting, volumes and
 * their snapshots, the worker state machine's transitions, the fleet database, worker processes)
 * are private to src/fleet: src/fleet/fleet_parts.h.
 *
 * Layering: fleet (this header) depends on train's headers only through ckpt (checkpoint listing
 * for work-lost accounting) and on util. Errors are values; nothing here exits. */
#ifndef BATON_FLEET_H
#define BATON_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "baton/notice.h"
#include "baton/util.h"

/* ---------------------------------------------------------------------------------------------
 * Job file (src/fleet/jobfile.c)
 * --------------------------------------------------------------------------------------------- */
#define BATON_JOB_MAX_BYTES (1u << 20)    /* a job file is small; refuse anything over 1 MiB */
#define BATON_JOB_NAME_MAX 64
#define BATON_JOB_MAX_TYPES 64
#define BATON_JOB_MAX_ZONES 32
#define BATON_JOB_MAX_COMMANDS 256

typedef enum { BATON_BACKEND_LOCAL = 0, BATON_BACKEND_SLURM, BATON_BACKEND_AWS } baton_backend;
/* How a pool (instance type x zone) is chosen for a launch, as EC2 Auto Scaling and EC2 Fleet
 * name them: price-capacity-optimized (the default, AWS's recommendation) takes the cheapest pool
 * among those least likely to be interrupted; capacity-optimized the pool least likely to be
 * interrupted whatever its price; lowest-price the cheapest. */
typedef enum { BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED = 0, BATON_ALLOC_LOWEST_PRICE,
               BATON_ALLOC_CAPACITY_OPTIMIZED } baton_alloc;

/* Spot Instance Advisor interruption-frequency buckets (share of instances reclaimed per month). */
typedef enum { BATON_BUCKET_LT5 = 0, BATON_BUCKET_5_10, BATON_BUCKET_10_15, BATON_BUCKET_15_20,
               BATON_BUCKET_GT20, BATON_BUCKET_COUNT } baton_bucket;

typedef struct baton_job_zone_price {
    char zone[64];
    double price;                 /* USD per hour */
} baton_job_zone_price;

typedef struct baton_job_type {
    char name[64];                /* e.g. "c5.xlarge" */
    double on_demand_price;       /* USD per hour */
    double spot_price;            /* USD per hour in every zone without an entry in zone_prices */
    baton_job_zone_price *zone_prices;
    size_t nzone_prices;
    double speed;                 /* relative speed (work per hour), default 1 */
    baton_bucket bucket;          /* interruption frequency */
    int from_catalog;             /* prices/speed/bucket defaulted from the built-in catalog */
    int line;
} baton_job_type;

/* One entry of the explicit interruption schedule: the k-th entry naming task T interrupts the
 * k-th instance launched for T, `after` simulated seconds after it started running, with `notice`
 * simulated seconds of warning (0: none, the instance just dies). */
typedef struct baton_job_interrupt {
    int task;
    double after, notice;
    int64_t after_steps;          /* also not before the instance trained this many steps (0: no such
                                   * condition): a schedule that holds on machines of any speed */
    int64_t at_step;              /* also not before the task's training reached this step, counted
                                   * across restarts (0: no such condition); an instance that resumes
                                   * at or past it trains one step first */
    int line;
} baton_job_interrupt;

/* A field of a backend section (`slurm:`, `aws:`) or of `env:`, flattened: nested maps give
 * dotted keys ("aws.tags.team"), sequences give indices ("aws.security_groups.0"). */
typedef struct baton_job_kv {
    char *key, *value;
    int line;
} baton_job_kv;

typedef struct baton_job {
    char path[1024];              /* where it was read from ("-" or a name for text) */
    char name[BATON_JOB_NAME_MAX + 1];
    baton_backend backend;
    char **commands;              /* run by /bin/sh -c in the volume folder; one per task */
    size_t ncommands;
    int target_capacity;          /* instances running at once (default: the number of commands) */
    baton_alloc alloc;
    int alloc_line;               /* line of allocation_strategy (0: not given, the default) */
    int retries;                  /* crashes tolerated per task before it fails (default 2) */
    struct {
        int min, max;             /* `nodes:` — each task a data-parallel run over min..max machines,
                                     its ranks started by the backend's MPI launcher; 0 0: one
                                     process on one machine (the default) */
        int line;
    } nodes;
    baton_job_type *types;
    size_t ntypes;
    char zones[BATON_JOB_MAX_ZONES][64];
    size_t nzones;
    char state_dir[1024];         /* "" : the caller's default */
    struct {
        char checkpoints[256];    /* folder inside the volume with ckpt-<step>/ (default "ckpt") */
        char seed[1024];          /* copied into a new volume once ("" none) */
        double size_gb;           /* for backends that create real volumes (default 20) */
    } volume;
    struct {
        double time_scale;        /* simulated seconds per wall second (default 1) */
        uint64_t seed;
        double launch_delay;      /* simulated seconds from request to running (default 90) */
        double notice;            /* simulated seconds of notice (default 120) */
        double hazard_scale;      /* multiplies every type's hazard (default 1; stress tests) */
        double capacity_cooldown; /* a pool that reclaimed an instance has none this long (3600) */
        int random;               /* draw interruptions from the hazard (default: 1 unless a
                                     schedule is given) */
        baton_job_interrupt *interrupts;
        size_t ninterrupts;
    } market;
    baton_job_kv *env;            /* extra environment for every worker */
    size_t nenv;
    baton_job_kv *backend_opts;   /* the `slurm:` and `aws:` sections, flattened */
    size_t nbackend_opts;
} baton_job;

/* Parse a job file. Every error names path, line and field. Unknown fields are errors (a typo
 * must not be silently ignored); backend sections are kept for their backend to check. Instance
 * types named without prices are looked up in the built-in catalog (an unknown one is an error
 * that lists the known names). */
int baton_job_load(const char *path, baton_job *job, baton_err *err);
int baton_job_parse(const char *name, const char *text, size_t len, baton_job *job, baton_err *err);
/* text (the file job was parsed from) with every env: value replaced by "<redacted>" where it is
 * written, for keeping: a database or a log never holds what a job passes its workers (tokens,
 * keys). A value that cannot be found where its line says (a multi-line scalar) has every
 * occurrence in the text replaced instead. malloc'd; NULL when out of memory. */
char *baton_job_redact_env(const baton_job *job, const char *text);
/* After baton_job_parse of a file at job->path (baton_job_load does this): relative local paths
 * (state_dir, volume.seed) become relative to the job file's folder, and a local volume.seed must
 * be an existing folder. */
int baton_job_resolve_paths(baton_job *job, baton_err *err);
void baton_job_free(baton_job *job);

const char *baton_backend_name(baton_backend b);
const char *baton_alloc_name(baton_alloc a);
const char *baton_bucket_name(baton_bucket b);
/* The spot price of a type in a zone. */
double baton_job_spot_price(const baton_job_type *t, const char *zone);

/* ---------------------------------------------------------------------------------------------
 * The local fleet supervisor (src/fleet/fleet_local.c)
 *
 * One process runs the whole fleet: a loop that every tick reaps ended workers, lets the market
 * interrupt running ones (a notice through the worker's own metadata service, then a kill at the
 * deadline; or a kill without notice), launches replacements (a replacement is requested as soon
 * as its predecessor gets a notice, so the launch delay overlaps the notice), attaches or moves
 * volumes, and reads each worker's progress and checkpoints. Every state change goes through
 * baton_wstate_next and is logged (SQLite + JSONL + a line on stderr).
 *
 * Restart: a supervisor that finds the job's database recovers from it: live workers (same pid
 * and start time) are ADOPTED — their metadata service is started again on the same port, their
 * exit status is read from the shim's status file — and workers that ended meanwhile are
 * accounted from their status files. A worker whose metadata port cannot be bound again is
 * killed and replaced (its work since the last checkpoint is lost, and reported). Only one
 * supervisor runs a job at a time (a lock file).
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_fleet_opts {
    const char *state_dir;        /* overrides the job's state_dir; default "baton-fleet" */
    double time_scale;            /* > 0: overrides market.time_scale */
    int seed_set;
    uint64_t seed;
    int hazard_set;
    double hazard_scale;
    const char *interrupts;       /* an explicit schedule (see baton_market_set_schedule,
                                     src/fleet/fleet_parts.h) */
    const char *bin_dir;          /* put first on the workers' PATH (the baton binary's folder) */
    const char *imds_mode;        /* fault injection: NULL/"normal", "garbage", "unreachable" */
    const char *jobfile_text;     /* kept in the database */
    int quiet;                    /* no event lines on stderr */
    int progress;                 /* a status line on a terminal */
    double tick_s;                /* loop period in wall seconds (default 0.02) */
    int cancel;                   /* recover the job, then cancel it at once (baton_fleet_cancel) */
    uint64_t progress_total;      /* steps a task needs, when known: the status line shows N/total */
} baton_fleet_opts;

void baton_fleet_opts_default(baton_fleet_opts *o);

typedef struct baton_fleet_summary {
    char dir[4096];               /* STATE/JOB */
    char state[16];               /* "done", "failed", "cancelled" */
    int tasks, tasks_done, tasks_failed;
    int instances, interruptions, with_notice, without_notice, crashes, adopted;
    double wall_s, sim_s;
    char failure[1024];           /* why the job failed, in words (with the log's last line) */
} baton_fleet_summary;

/* STATE/JOB for a job name. */
int baton_fleet_job_dir(const char *state_dir, const char *name, char *out, size_t cap, baton_err *err);
/* Run (or resume) a job until every task is done, failed or cancelled. Returns BATON_OK even when
 * a task failed (s->state says so); errors are for the supervisor itself (state folder, database,
 * a changed job file). SIGINT/SIGTERM cancel: workers get a "stop" notice, checkpoint and exit. */
int baton_fleet_run(const baton_job *job, const baton_fleet_opts *o, baton_fleet_summary *s, baton_err *err);
/* Ask the job's supervisor to cancel (SIGTERM); with no supervisor alive, stop the job's live
 * workers (SIGTERM to their process groups, then SIGKILL after grace_s) and mark it cancelled. */
int baton_fleet_cancel(const char *job_dir, double grace_s, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * The worker state machine (src/fleet/fleet_state.c): one pure transition function
 * (baton_wstate_next, src/fleet/fleet_parts.h); the supervisor routes every change through it and
 * logs each transition as an event.
 *
 *   PENDING --launch--> LAUNCHING --start--> RUNNING --notice--> NOTICED
 *   RUNNING | NOTICED --exit 0--> DONE     --exit 75 / reclaimed--> STOPPED    --crash--> CRASHED
 *   PENDING | LAUNCHING --cancel--> CANCELLED;  LAUNCHING --crash--> CRASHED (could not start)
 *   RUNNING --cancel--> NOTICED (a "stop" notice: the worker checkpoints and exits 75)
 * --------------------------------------------------------------------------------------------- */
typedef enum { BATON_W_PENDING = 0, BATON_W_LAUNCHING, BATON_W_RUNNING, BATON_W_NOTICED,
               BATON_W_STOPPED, BATON_W_DONE, BATON_W_CRASHED, BATON_W_CANCELLED,
               BATON_W_NSTATES } baton_wstate;

/* ---------------------------------------------------------------------------------------------
 * Fleet records (what the supervisor keeps in SQLite; src/fleet/fleet_db.c). Times are simulated
 * seconds since the fleet's origin; -1 = not yet.
 * --------------------------------------------------------------------------------------------- */
typedef enum { BATON_TASK_WAITING = 0, BATON_TASK_RUNNING, BATON_TASK_DONE, BATON_TASK_FAILED,
               BATON_TASK_CANCELLED } baton_task_state;
typedef enum { BATON_INT_NONE = 0, BATON_INT_NOTICE, BATON_INT_NO_NOTICE } baton_int_kind;

typedef struct baton_fleet_inst {
    int id;                       /* 1, 2, ... in launch-request order */
    char name[24];                /* EC2-style instance id */
    int task, launch;             /* task index; the launch-th instance of that task (0-based) */
    int pool;
    char type[64], zone[64];
    double spot_price, on_demand_price;
    baton_wstate state;
    char reason[160];             /* how it ended, in words */
    int pid;                      /* the worker's process group leader; 0 none */
    uint64_t pid_start;           /* its start time (/proc/PID/stat field 22), against pid reuse */
    int port;                     /* its metadata service */
    double t_request, t_running, t_first_step, t_notice, t_deadline, t_end;
    double plan_after, plan_notice;   /* the market's plan: interrupted plan_after after running */
    int64_t plan_after_steps;     /* ... and once it trained this many steps (0: any) */
    int exit_code;                /* -1 unknown; 128+N for a signal */
    baton_int_kind interrupted;
    int64_t resumed_step;         /* the checkpoint it started from (0: fresh) */
    int64_t reached_step;         /* the last step it reported */
    int64_t ckpt_step;            /* the last committed checkpoint when it ended */
    char volume[1024];            /* the volume it ran on */
} baton_fleet_inst;

typedef struct baton_fleet_task {
    int idx;
    char *command;
    baton_task_state state;
    int crashes, launches, interruptions;
    char volume[1024];            /* the task's one volume (its current copy) */
    char zone[64];                /* the volume's zone */
    int64_t final_step;
} baton_fleet_task;

typedef struct baton_fleet_job {
    char name[BATON_JOB_NAME_MAX + 1];
    char state[16];               /* "running", "done", "failed", "cancelled" */
    double origin;                /* unix time of simulated time 0 */
    double time_scale;
    double t_end;                 /* simulated; -1 while running */
    int supervisor_pid;
    uint64_t supervisor_start;
    int next_volume, next_snapshot;
    char jobfile[1024];
    char *jobfile_text;
} baton_fleet_job;

typedef struct baton_fleet_event {
    int64_t seq;
    double t_sim, t_wall;
    char kind[32];                /* "transition", "checkpoint", "volume", "market", ... */
    int inst, task;               /* 0 / -1 when not about one */
    char from[16], to[16];
    char *detail;                 /* a JSON object */
} baton_fleet_event;

/* Everything a job's database holds (baton_fleet_db_load, src/fleet/fleet_parts.h). */
typedef struct baton_fleet_records {
    baton_fleet_job job;
    baton_fleet_task *tasks;
    size_t ntasks;
    baton_fleet_inst *insts;
    size_t ninsts;
    baton_fleet_event *events;
    size_t nevents;
} baton_fleet_records;

/* ---------------------------------------------------------------------------------------------
 * Cost accounting (src/fleet/fleet_cost.c). Simulated seconds; prices per simulated hour.
 *
 * Per instance: charged seconds = running seconds, rounded up to the 60 s minimum, except that an
 * instance the provider interrupted (with or without notice) within its first hour costs nothing
 * (the EC2 rule for Linux spot instances). Spot cost = charged × spot price; on-demand cost of
 * the same seconds = running × on-demand price.
 * Time split: restart = from running to the first new step of an instance that resumed from a
 * checkpoint (the first instance of a task pays its start-up as useful time, as an on-demand run
 * would); lost = steps done after the last committed checkpoint and thrown away × the instance's
 * mean step time; useful = running − restart − lost.
 * Totals: SageMaker's figures — training seconds (Σ running), billable seconds (Σ charged ×
 * spot/on-demand price: the on-demand-equivalent time actually paid for) and savings
 * (1 − billable/training) × 100 — and the comparison with the on-demand counterfactual (the useful
 * time at on-demand prices: the same work on uninterruptible instances): (1 − spot/on-demand) × 100.
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_cost_in {
    double running_s;             /* from running to the end (or to now) */
    double restart_s, lost_s;
    double spot_price, on_demand_price;
    int provider_interrupted;     /* ended by an interruption (the market's, notice or not) */
    int ended;                    /* 0 while still running: the first-hour rule is not known yet */
} baton_cost_in;

typedef struct baton_cost_line {
    double charged_s, spot_cost, on_demand_cost, useful_s, counterfactual_cost;
    int free_first_hour;          /* interrupted within the first hour: not charged */
} baton_cost_line;

typedef struct baton_cost_total {
    size_t instances;
    double training_s, charged_s, billable_s;
    double useful_s, restart_s, lost_s;
    double spot_cost, on_demand_cost, counterfactual_cost;
    double savings_sagemaker_pct, savings_vs_on_demand_pct;
    int free_first_hour;          /* instances not charged under the first-hour rule */
} baton_cost_total;

/* ---------------------------------------------------------------------------------------------
 * Reports (src/fleet/fleet_report.c): the cost table, --json, the SVG timeline, status.
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_fleet_report {
    baton_fleet_records rec;
    baton_cost_line *lines;       /* per instance, same order as rec.insts */
    baton_cost_in *ins;
    baton_cost_total total;
    double now_sim;               /* the report's time (the end, or now while running) */
    int interruptions, with_notice, without_notice, crashes;
    int64_t lost_steps;           /* summed over interrupted and crashed instances */
    int64_t max_lost_notice;      /* the most steps lost by one interruption with notice */
    int64_t max_lost_no_notice;
    int stalled;                  /* recorded as running, but its supervisor process is gone */
    double last_sim;              /* when stalled: the simulated time of the last record */
    struct cJSON **results;       /* per task: its run's result (BATON_FLEET_RESULT_FILE), or NULL */
    double *task_spot_cost;       /* per task: what its instances cost on spot */
} baton_fleet_report;

/* What can be checked of a job's commands before launch (src/fleet/job_check.c): their programs
 * on PATH (bin_dir first), --data folders holding dataset.json, named files in the volume seed.
 * The problems, one per line, into out; returns how many (0: all checked ones are fine). */
int baton_job_check_commands(const baton_job *j, const char *bin_dir, char *out, size_t cap);

/* Where a task's run leaves its result (one JSON object: loss, accuracy, best lap, ...), in its
 * volume; workers get the path as $BATON_RESULT_FILE. The report carries it beside the task's cost. */
#define BATON_FLEET_RESULT_FILE "baton-result.json"

int baton_fleet_report_load(const char *job_dir, baton_fleet_report *r, baton_err *err);
void baton_fleet_report_free(baton_fleet_report *r);
void baton_fleet_report_print(FILE *f, const baton_fleet_report *r, int events);
char *baton_fleet_report_json(const baton_fleet_report *r, int events);   /* malloc'd */
int baton_fleet_report_svg(const baton_fleet_report *r, const char *path, baton_err *err);
/* Each interruption against its deadline (src/fleet/fleet_deadline.c): the supervisor logs a
 * "deadline" event when a worker exits 75 after a run that left its interruption's times in the
 * task's result file (baton train, race train, baton.result of a Python trainer); from those
 * events, seconds after each notice (p50: the lower middle value). Returns n, or -1 when out of
 * memory. */
typedef struct baton_fleet_deadline_stats {
    size_t n;                   /* interruptions with a recorded commit */
    size_t with_deadline, inside;   /* of them: a known deadline, and exited before it */
    size_t uploaded, left;      /* the upload done before the exit, or left to the next machine */
    double commit_p50, commit_max, exit_p50, exit_max;
    double margin_p50, margin_min;  /* deadline - exit, over those with a deadline */
} baton_fleet_deadline_stats;
int baton_fleet_deadlines(const baton_fleet_report *r, baton_fleet_deadline_stats *st);
/* "1h02m03s" style simulated durations. */
void baton_fleet_fmt_duration(double s, char *out, size_t cap);

/* ---------------------------------------------------------------------------------------------
 * Proof that a command resumes exactly (src/fleet/verify.c runs, src/fleet/verify_compare.c compares):
 * `baton verify-resume`. The command runs once uninterrupted, then again from an emptied checkpoint
 * folder with interruptions at random steps (SIGTERM, SIGKILL, a spot notice through an in-process
 * metadata emulator, SIGINT), rerun after each until it exits 0. Both runs log what they did to
 * $BATON_VERIFY_LOG (util.h: the batches, losses, checkpoints and resume points the library logs,
 * and the losses a Python script logs with baton.log_step), and the logs are compared step by step:
 * step N is the N-th training step, its batch the N-th batch after a resume from step 0, or the
 * k-th batch of a process that resumed from step R when N = R + k. Every process's every event is
 * held to the uninterrupted run's at its step; the first difference by step is the verdict.
 * --------------------------------------------------------------------------------------------- */
enum { BATON_VERIFY_TERM = 1, BATON_VERIFY_KILL = 2, BATON_VERIFY_NOTICE = 4, BATON_VERIFY_INT = 8 };
#define BATON_VERIFY_ALL_KINDS 15u
/* "term,kill,notice,int" (any of them, comma-separated) into BATON_VERIFY_* bits; BATON_ERR_USAGE
 * naming an unknown one. */
int baton_verify_kinds_parse(const char *s, unsigned *kinds, baton_err *err);
const char *baton_verify_kind_name(int kind);   /* "term", ...; "-" for 0 */

typedef struct baton_verify_opts {
    char *const *argv;          /* the command (argv[0] looked up in PATH), NULL-terminated */
    const char *ckpt_dir;       /* the command's checkpoint folder: emptied before each of the two runs */
    const char *work_dir;       /* the logs and each run's output; NULL: a new folder in $TMPDIR, removed
                                   when the runs are identical */
    int interruptions;          /* how many (default 4); at distinct steps drawn uniformly in 1..steps-1 */
    unsigned kinds;             /* BATON_VERIFY_* bits, used in turn (default all four) */
    uint64_t seed;              /* for the steps drawn */
    double run_timeout_s;       /* one process's limit (0: 3 × the uninterrupted run's time + 60 s) */
    int progress;               /* a line on stderr per run */
} baton_verify_opts;
void baton_verify_opts_default(baton_verify_opts *o);

enum { BATON_VERIFY_IDENTICAL = 0, BATON_VERIFY_SAMPLES, BATON_VERIFY_LOSS, BATON_VERIFY_WEIGHTS,
       BATON_VERIFY_OPTIM, BATON_VERIFY_FAILED, BATON_VERIFY_EARLY, BATON_VERIFY_LONGER };
/* "identical", "samples", "loss", "weights", "optimizer", "failed", "ended early", "ran longer" */
const char *baton_verify_cause_name(int cause);

/* What became of an interruption: the process stopped (and was rerun); it went on (ignored: a
 * command that does not watch for that kind); it finished before it could stop; never delivered
 * (the runs ended before its step). */
enum { BATON_VERIFY_STOPPED = 0, BATON_VERIFY_IGNORED, BATON_VERIFY_FINISHED, BATON_VERIFY_UNREACHED };
#define BATON_VERIFY_MAX_INTS 32
#define BATON_VERIFY_MAX_RUNS (BATON_VERIFY_MAX_INTS + 1)
/* The check's time, less the restarts (restarts_s), over the uninterrupted run's: at most this (the
 * two runs, and half of one for the steps redone after a kill and the check's own work). */
#define BATON_VERIFY_BUDGET 2.5
typedef struct baton_verify_int {
    int kind;
    uint64_t drawn;             /* the step drawn */
    uint64_t at;                /* the step the process was at when it was delivered */
    int run;                    /* the process (index into runs) it was delivered to; -1 none */
    int outcome;                /* BATON_VERIFY_STOPPED, ... */
} baton_verify_int;
typedef struct baton_verify_run {
    uint64_t resumed_from;      /* the step its log says it resumed from */
    uint64_t last_step;         /* the last step it reached */
    int exit_code;              /* exit status, or 128 + the signal that ended it */
    double seconds;
    double startup_s;           /* from its start to its first step done (the first loss or checkpoint
                                   logged after its first batch, or its second batch): imports, the
                                   data opened, the checkpoint loaded, a first step with its warm-up */
    double stop_s;              /* from the interruption that stopped it to its exit (0: none) */
    uint64_t redone;            /* steps it trained that an earlier process had reached (after a kill) */
} baton_verify_run;

typedef struct baton_verify_report {
    int cause;                  /* BATON_VERIFY_IDENTICAL or the first difference's */
    uint64_t step;              /* its step */
    char what[1024];            /* what differed, in words */
    uint64_t steps;             /* the uninterrupted run's */
    uint64_t batches, losses, ckpts;   /* events compared */
    baton_verify_run ref;
    double ref_s, interrupted_s, total_s;   /* the uninterrupted run, the interrupted runs together,
                                               the whole check */
    double step_s;              /* the uninterrupted run's mean step after its first */
    double restarts_s;          /* what the interruptions cost beyond training, which the uninterrupted
                                   run does not pay: each stopped process's way out (stop_s: the
                                   commit on a stop, its exit) and each rerun's way in (startup_s
                                   less step_s: the first step is training too) */
    double budget_s;            /* BATON_VERIFY_BUDGET × ref_s + restarts_s: what the check may take */
    baton_verify_run runs[BATON_VERIFY_MAX_RUNS];
    int nruns;
    baton_verify_int ints[BATON_VERIFY_MAX_INTS];
    int nints;
    char work_dir[4096];
    int kept;                   /* work_dir was kept (a difference, or given) */
} baton_verify_report;

/* Run the check. BATON_OK with the verdict in r (identical or not); an error when the check could
 * not be made: the command cannot start, its uninterrupted run fails (the message names its output
 * file), it logs no steps (no BATON_VERIFY_LOG events: not a baton trainer), the folder is unsafe
 * to empty. */
int baton_verify_resume(const baton_verify_opts *o, baton_verify_report *r, baton_err *err);
void baton_verify_report_print(FILE *f, const baton_verify_report *r);
char *baton_verify_report_json(const baton_verify_report *r);   /* malloc'd */

#endif
