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
} live;

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
void fleet_finish_instance(sup *s, size_t i, baton_wevent ev, int code, double t_end, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Run the fleet until every task has ended (or, cancelling, every instance). */
int fleet_loop(sup *s, baton_err *err);

#endif
