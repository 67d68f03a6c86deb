/* fleet_parts.h — the pieces the local fleet supervisor is built from, which only src/fleet and
 * its tests use: job-file helpers, the spot-market simulator, cost accounting, volumes and
 * snapshots, the worker state machine's transitions, the fleet database, worker processes, and two
 * helpers of the report. The types a caller of fleet.h can see (the job, the worker states, the
 * records, the cost figures, the report) stay in include/baton/fleet.h. Not public: src/fleet/ and
 * tests/ include this; what only the supervisor's own two files share is in fleet_internal.h.
 *
 * In the order the supervisor uses them: it reads the job (baton_job_load, fleet.h) and builds a
 * market from it; creates, snapshots and moves the tasks' volumes; spawns, reaps and kills worker
 * processes; routes each worker's change through fleet_wstate_next; and keeps every record in the
 * fleet database. The report (fleet_report.c) loads those records back and prices each instance
 * with the cost accounting. */
#ifndef BATON_FLEET_PARTS_H
#define BATON_FLEET_PARTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "baton/fleet.h"

/* ---------------------------------------------------------------------------------------------
 * Job-file helpers (src/fleet/jobfile.c)
 * --------------------------------------------------------------------------------------------- */
/* Parse "<5%", "5-10%", "10-15%", "15-20%", ">20%" (the % optional). 0 on success. */
int fleet_bucket_parse(const char *s, baton_bucket *b);
/* Parse a duration: a number of seconds, or a number with s, m, h or d. 0 on success. */
int fleet_duration_parse(const char *s, double *seconds);
/* A backend option by key (NULL if absent). */
const baton_job_kv *fleet_job_backend_opt(const baton_job *job, const char *key);

/* ---------------------------------------------------------------------------------------------
 * Spot-market simulator (src/fleet/fleet_market.c). All times are simulated seconds.
 *
 * A pool is (instance type, zone). Hazard: a type's Spot Advisor bucket gives the share p of
 * instances reclaimed per month (the bucket's midpoint: 2.5, 7.5, 12.5, 17.5, 25 %); an instance
 * lives an exponential time with rate -ln(1 - p) / month (month = 730 h), times hazard_scale.
 * Draws are a pure function of (seed, task, launch index), so the same job and seed give the same
 * interruption times whatever the order of events. The explicit schedule (market.interruptions or
 * --interrupts) comes first: the k-th entry for a task applies to that task's k-th instance.
 * --------------------------------------------------------------------------------------------- */
#define BATON_MONTH_S (730.0 * 3600.0)

double fleet_bucket_monthly(baton_bucket b);     /* share reclaimed per month (midpoint) */
double fleet_bucket_hazard(baton_bucket b);      /* rate per simulated second */

typedef struct baton_market {
    const baton_job *job;
    size_t npools;                /* ntypes * nzones; pool = type * nzones + zone */
    double *busy_until;           /* per pool: no capacity before this time */
    baton_job_interrupt *sched;   /* the schedule in force (the job's or --interrupts') */
    size_t nsched;
} baton_market;

int fleet_market_init(baton_market *m, const baton_job *job, baton_err *err);
void fleet_market_free(baton_market *m);
/* Replace the schedule with SPEC: comma-separated "AFTER[/NOTICE][@TASK]" entries (durations as in
 * the job file; NOTICE 0 = none), e.g. "5m,5m/0,10m@1". Turns the random market off. */
int fleet_market_set_schedule(baton_market *m, const char *spec, baton_err *err);
/* Choose a pool for a launch at time t: the strategy's best pool with capacity, ties broken in
 * favour of prefer_zone (the task's volume zone; may be NULL), then by listing order. Returns the
 * pool, or -1 when every pool is busy (*retry_at: when the first one frees). */
int fleet_market_choose(const baton_market *m, double t, const char *prefer_zone, double *retry_at);
/* The pool reclaimed an instance at time t: it has no capacity for capacity_cooldown. */
void fleet_market_reclaimed(baton_market *m, int pool, double t);
/* When the launch_index-th instance (0-based) of task, in pool, is interrupted: *after simulated
 * seconds after it starts running (< 0: never) and once it trained *after_steps steps (0: any), with
 * *notice seconds of warning (0: none). */
void fleet_market_plan(const baton_market *m, int task, int launch_index, int pool, double *after,
                       double *notice, int64_t *after_steps);
/* The schedule entry's at_step for that instance as steps to train from resumed (the step it
 * resumed from): at_step - resumed, at least 1; 0 when its entry has no at_step (or it has none). */
int64_t fleet_market_steps_to(const baton_market *m, int task, int launch_index, int64_t resumed);
/* One line for the log: whether interruptions are scheduled (and where) or drawn from the hazard. */
void fleet_market_describe(const baton_market *m, char *out, size_t cap);
static inline int fleet_pool_type(const baton_market *m, int pool) { return pool / (int)m->job->nzones; }
static inline int fleet_pool_zone(const baton_market *m, int pool) { return pool % (int)m->job->nzones; }

/* ---------------------------------------------------------------------------------------------
 * Cost accounting (src/fleet/fleet_cost.c): the rules are in fleet.h, beside the types.
 * --------------------------------------------------------------------------------------------- */
void fleet_cost_line_compute(const baton_cost_in *in, baton_cost_line *out);
void fleet_cost_total_init(baton_cost_total *t);
void fleet_cost_total_add(baton_cost_total *t, const baton_cost_in *in, const baton_cost_line *l);
void fleet_cost_total_finish(baton_cost_total *t);   /* the two savings percentages */

/* ---------------------------------------------------------------------------------------------
 * Volumes and snapshots, simulated with folders (src/fleet/fleet_volume.c).
 *
 * A volume is a folder. A snapshot is a folder holding a copy of a volume plus SNAPSHOT, its
 * manifest ("baton-snapshot 1", then "d PATH" per folder and "f SIZE CRC32C PATH" per file, sorted),
 * written last; the snapshot folder is published by rename, so it exists only when complete.
 * Moving a volume to another zone: snapshot the old volume, verify the snapshot by reading every
 * byte back, restore it into the new folder (again under a temporary name, verified, then
 * renamed), and only then delete the old volume. Any failure removes the partial copy and leaves
 * the old volume untouched: there is never a moment without a complete copy. Symbolic links and
 * other special files in a volume are refused. File I/O goes through baton_sys.
 * --------------------------------------------------------------------------------------------- */
#define BATON_SNAPSHOT_MANIFEST "SNAPSHOT"

/* Create the folder (and parents); copy seed into it when seed is non-empty (under a temporary
 * name, verified, then renamed). A volume that already exists is left as it is. */
int fleet_volume_create(const char *path, const char *seed, baton_err *err);
/* The manifest text of a folder tree (malloc'd, NUL-terminated), as SNAPSHOT would hold it. */
int fleet_volume_manifest(const char *dir, char **text, baton_err *err);
int fleet_snapshot_create(const char *volume, const char *snapshot, baton_err *err);
/* Every file listed with its size and CRC32C, nothing else present. */
int fleet_snapshot_verify(const char *snapshot, baton_err *err);
int fleet_volume_restore(const char *snapshot, const char *volume, baton_err *err);

/* Steps reported by fleet_volume_move, in order: "snapshot-created", "snapshot-verified",
 * "volume-restored" (the new copy verified), "old-volume-deleted". */
typedef void (*baton_volume_step_fn)(void *arg, const char *step, const char *path);
int fleet_volume_move(const char *from, const char *snapshot, const char *to, baton_volume_step_fn fn,
                      void *arg, baton_err *err);

/* ---------------------------------------------------------------------------------------------
 * The worker state machine's transitions (src/fleet/fleet_state.c); the diagram is in fleet.h,
 * beside baton_wstate.
 * --------------------------------------------------------------------------------------------- */
typedef enum { BATON_WE_LAUNCH = 0, BATON_WE_START, BATON_WE_NOTICE, BATON_WE_EXIT_OK,
               BATON_WE_EXIT_STOPPED, BATON_WE_RECLAIMED, BATON_WE_CRASH, BATON_WE_CANCEL,
               BATON_WE_NEVENTS } baton_wevent;

/* The next state, or -1 when the event is not allowed in that state. */
int fleet_wstate_next(baton_wstate s, baton_wevent e);
int fleet_wstate_terminal(baton_wstate s);
const char *fleet_wstate_name(baton_wstate s);     /* "PENDING", ... */
const char *fleet_wevent_name(baton_wevent e);     /* "launch", ... */
int fleet_wstate_parse(const char *name);          /* -1 if unknown */

/* A task's states go through a table too (fleet_state.c): waiting -start-> running -done-> done,
 * running -fail-> failed, waiting|running -cancel-> cancelled, cancelled -resume-> waiting (a rerun
 * of a cancelled job). */
typedef enum { BATON_TE_START = 0, BATON_TE_DONE, BATON_TE_FAIL, BATON_TE_CANCEL, BATON_TE_RESUME,
               BATON_TE_NEVENTS } baton_tevent;
int fleet_task_next(baton_task_state s, baton_tevent e);   /* -1 when not allowed */
const char *fleet_tevent_name(baton_tevent e);             /* "start", ... */

/* A job's states (fleet_state.c, whose top comment has the diagram). The record keeps the state's
 * name (baton_fleet_job.state, which fleet.h shows as a string); the supervisor changes it only
 * through fleet_job_step (fleet_local.c), which goes through this table. NEW is a job not yet in
 * its database (an empty name). */
typedef enum { FLEET_JOB_NEW = 0, FLEET_JOB_RUNNING, FLEET_JOB_DONE, FLEET_JOB_FAILED, FLEET_JOB_CANCELLED,
               FLEET_JOB_NSTATES } fleet_jstate;
typedef enum { FLEET_JE_START = 0, FLEET_JE_RESUME, FLEET_JE_DONE, FLEET_JE_FAIL, FLEET_JE_CANCEL,
               FLEET_JE_NEVENTS } fleet_jevent;
int fleet_job_next(fleet_jstate s, fleet_jevent e);       /* -1 when not allowed */
const char *fleet_job_state_name(fleet_jstate s);         /* "" (new), "running", "done", ... */
const char *fleet_jevent_name(fleet_jevent e);            /* "start", ... */
int fleet_job_state_parse(const char *name);              /* -1 if unknown */
/* done or failed: a job that ended and is not run again (a cancelled one resumes). */
int fleet_job_final(const char *name);

/* ---------------------------------------------------------------------------------------------
 * The fleet database (src/fleet/fleet_db.c); the records it holds are in fleet.h.
 * --------------------------------------------------------------------------------------------- */
const char *fleet_task_state_name(baton_task_state s);
typedef struct baton_fleet_db baton_fleet_db;
/* Open (creating the schema) STATE/JOB/fleet.db; events also go to events.jsonl next to it. */
int fleet_db_open(const char *dir, baton_fleet_db **out, baton_err *err);
void fleet_db_close(baton_fleet_db *db);
int fleet_db_begin(baton_fleet_db *db, baton_err *err);
int fleet_db_commit(baton_fleet_db *db, baton_err *err);
int fleet_db_save_job(baton_fleet_db *db, const baton_fleet_job *j, baton_err *err);
int fleet_db_save_task(baton_fleet_db *db, const baton_fleet_task *t, baton_err *err);
int fleet_db_save_inst(baton_fleet_db *db, const baton_fleet_inst *i, baton_err *err);
/* Append an event (seq assigned) to the table and to events.jsonl. */
int fleet_db_event(baton_fleet_db *db, baton_fleet_event *ev, baton_err *err);
/* Load everything back. *found = 0 when the database holds no job yet. Free with
 * fleet_records_free. */
int fleet_db_load(baton_fleet_db *db, int with_events, baton_fleet_records *r, int *found, baton_err *err);
void fleet_records_free(baton_fleet_records *r);

/* ---------------------------------------------------------------------------------------------
 * Worker processes (src/fleet/fleet_proc.c)
 *
 * A worker is a small shim process (a fork of the supervisor that only waits) leading its own
 * process group, and under it /bin/sh -c COMMAND. The shim ignores SIGTERM/SIGINT/SIGHUP, waits
 * for the command and writes its exit status (128+N for a signal) to a status file before exiting
 * with it, so a supervisor that was restarted, and is no longer the parent, still learns how an
 * adopted worker ended. Killing a worker kills its whole process group.
 * --------------------------------------------------------------------------------------------- */
typedef struct baton_worker_spec {
    const char *command;          /* run by /bin/sh -c */
    const char *cwd;              /* the volume */
    const char *log_path;         /* stdout and stderr, appended */
    const char *status_path;      /* written by the shim when the command ends */
    const char *const *env;       /* NAME=VALUE entries added to (or replacing in) the environment */
    size_t nenv;
} baton_worker_spec;

/* Start a worker; *pid is the shim (= the process group), *start its /proc start time. */
int fleet_worker_spawn(const baton_worker_spec *w, int *pid, uint64_t *start, baton_err *err);
/* In a child after fork, before exec: every catchable signal back to its default action and
 * none blocked (what a supervisor set up for itself must not reach the command it starts). */
void fleet_reset_signals(void);
/* Start time of a process (clock ticks since boot, /proc/PID/stat field 22); 0 if it is gone. */
uint64_t fleet_proc_start_time(int pid);
/* 1 when pid is alive and still the process that started at start (not a reused pid). */
int fleet_proc_same(int pid, uint64_t start);
/* Reap a child without blocking: 1 and *code (exit status, or 128+signal) when it has ended. */
int fleet_worker_reap(int pid, int *code);
/* The status a shim wrote: 1 and *code; 0 when there is none (the shim was killed). */
int fleet_worker_read_status(const char *status_path, int *code, double *mtime);
/* SIGKILL the whole process group. */
void fleet_worker_kill(int pid);
/* Read a progress file (a decimal step); -1 when missing or not a number. */
int64_t fleet_progress_file_read(const char *path);
/* The highest ckpt-<step> folder name under dir (no verification; -1 when none). */
int64_t fleet_ckpt_newest_name(const char *dir);

/* ---------------------------------------------------------------------------------------------
 * Report helpers (src/fleet/fleet_report.c)
 * --------------------------------------------------------------------------------------------- */
/* What a job shows as its state: the recorded one, or "stalled" for a running job whose supervisor
 * has gone (a rerun of `baton fleet run` adopts its workers). */
const char *fleet_report_state(const baton_fleet_report *r);
/* A task's progress: its final step when done, else the newest step any of its instances reached;
 * -1 when none reported one. */
int64_t fleet_report_task_step(const baton_fleet_report *r, size_t task);

/* Interruptions against their deadlines (src/fleet/fleet_deadline.c; the figures: baton_fleet_deadlines
 * in fleet.h): the report's table and percentiles (nothing without such events), and the JSON's
 * "deadlines" object. */
struct cJSON;
void fleet_deadlines_print(FILE *f, const baton_fleet_report *r);
void fleet_deadlines_json(struct cJSON *o, const baton_fleet_report *r);
/* An event's detail (the JSON object the supervisor wrote; none: {}) parsed, NULL when it is not
 * JSON (src/fleet/fleet_report.c); cJSON_Delete it. */
struct cJSON *fleet_event_detail(const baton_fleet_event *ev);

#endif
