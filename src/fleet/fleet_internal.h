/* fleet_internal.h — what the local fleet supervisor's two files share (fleet_local.c: events,
 * transitions, instances, the loop; fleet_run.c: start, recovery, end, cancel). Not public. */
#ifndef BATON_FLEET_INTERNAL_H
#define BATON_FLEET_INTERNAL_H

#include <cJSON.h>
#include <signal.h>

#include "baton/notice.h"
#include "fleet_parts.h"

typedef struct live {
    baton_imds *imds;
    int child;                 /* 1: our child (waitpid); 0: adopted after a restart */
    int killed;                /* we SIGKILLed it */
    int cancel;                /* it was asked to stop by a cancel */
    int told_no_capacity;      /* "no capacity" was logged while it waits */
    int64_t last_ckpt;         /* newest ckpt-<step> folder seen */
    double next_poll;          /* wall time of the next progress / checkpoint look */
    double next_save;          /* wall time from which a new step may be saved (for status) */
    char progress[4200], status[4200], log[4200];
    int rank;                  /* a task over nodes: its rank in the running launch, -1 none */
} live;

/* A task over nodes (fleet_gang.c): the one launch of its ranks running now, if any. */
typedef struct gang {
    int pid;                   /* mpirun's process group; 0 none */
    uint64_t pid_start;
    int child;                 /* 1: our child; 0: adopted after a restart */
    int world;                 /* ranks of that launch */
    int grow_asked;            /* a stop was asked so that the next launch has more ranks */
    int reclaimed;             /* a member of the launch was reclaimed: its end is no crash */
    int ended, code;           /* collected when it was killed (its status for the next tick) */
    int launches;              /* launches so far (this supervisor's); last: a launch's end clears the rest */
} gang;

typedef struct sup {
    baton_job jc;              /* the job with command-line overrides applied (shallow copy) */
    const baton_job *job;      /* = &jc */
    const baton_fleet_opts *o;
    char dir[4096];
    baton_fleet_db *db;
    baton_market market;
    baton_fleet_job rec;
    baton_fleet_task *tasks;
    size_t ntasks;
    baton_fleet_inst *insts;
    live *lv;
    size_t ninsts, cap;
    int lock_fd;
    double scale;
    int cancelling;
    int db_failed;
    baton_err db_err;
    baton_fleet_summary *sum;
    double last_draw;
    int drawn;
    gang *gangs;               /* per task, when the job has nodes: */
} sup;

extern volatile sig_atomic_t fleet_stop_flag;   /* SIGINT/SIGTERM: cancel */

/* snprintf whose truncation is deliberate: paths that do not fit fail later with a clear message */
int fleet_fmt(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline double fleet_now(const sup *s) { return (baton_wall_now() - s->rec.origin) * s->scale; }
static inline int fleet_alive_state(baton_wstate st) { return st == BATON_W_RUNNING || st == BATON_W_NOTICED; }

void fleet_log_event(sup *s, const char *kind, int idx, int task, const char *from, const char *to, cJSON *detail,
                     const char *fmt, ...) __attribute__((format(printf, 8, 9)));
void fleet_save_inst(sup *s, size_t i);
void fleet_save_task(sup *s, int t);
void fleet_save_job(sup *s);
void fleet_ckpt_dir(const sup *s, const char *volume, char *out, size_t cap);
void fleet_inst_paths(sup *s, size_t i);
int fleet_start_imds(sup *s, size_t i, int port, baton_err *err);
void fleet_kill_now(sup *s, size_t i);
/* After worker i exited 75: a "deadline" event from the interruption its run left in the task's
 * result file (fleet_deadline.c); nothing when there is none from this run. */
void fleet_deadline_event(sup *s, size_t i);
void fleet_finish_instance(sup *s, size_t i, baton_wevent ev, int code, double t_end, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
int fleet_transition(sup *s, size_t i, baton_wevent ev, cJSON *detail, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Task t's state through fleet_task_next, saved; msg (may be NULL: nothing logged) logged as a
 * "task" event with the states. A refused event is logged as an error and returns -1. */
int fleet_task_transition(sup *s, int t, baton_tevent ev, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The one place the job's state changes (through fleet_job_next): an impossible event is logged and
 * refused with BATON_ERR_ARG. The caller saves the record with the fields that change with it. */
int fleet_job_step(sup *s, fleet_jevent ev, baton_err *err);
int fleet_new_instance(sup *s, int task);
int64_t fleet_verified_ckpt_step(const sup *s, const char *volume);
/* The task's volume in instance i's zone: created, attached or moved (i's volume set). */
int fleet_attach_volume(sup *s, size_t i, baton_err *err);

/* A worker's environment (the metadata endpoint, BATON_* names, PATH, the job's env:). */
typedef struct fleet_wenv {
    char url[128], vol[1100], job[128], task[32], id[64], type[96], zone[96], prog[4300], poll[48], path[8192],
        mtbi[64], pypath[8192], result[1200];
    const char *env[72];
    size_t n;
    char *extra[48];
    size_t nextra;
} fleet_wenv;
void fleet_wenv_build(sup *s, size_t i, fleet_wenv *w);
void fleet_wenv_free(fleet_wenv *w);

/* fleet_gang.c — a task over nodes: its members (one simulated instance per rank, each with its
 * own metadata service) and the launches of its ranks under mpirun. */
int fleet_gang_member_start(sup *s, size_t i, baton_err *err);
void fleet_gang_ensure(sup *s, int task);
void fleet_gang_market(sup *s, size_t i, double now);
void fleet_gang_tick(sup *s, int task, double now);

/* Run the fleet until every task has ended (or, cancelling, every instance). */
int fleet_loop(sup *s, baton_err *err);

#endif
