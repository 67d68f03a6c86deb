/* fleet_state.c — the fleet supervisor's state machines: one pure transition table (state × event
 * -> next state) for a worker, one for a task and one for the job, with names for logging. The
 * supervisor never assigns a state directly; it calls fleet_transition / fleet_task_transition /
 * fleet_job_step (fleet_local.c), which go through these tables and log the change. Unlisted pairs
 * are refused (-1), so an impossible sequence shows up as a logged error instead of a silently
 * wrong state. The worker's diagram is in fleet.h beside baton_wstate; the task's and the job's:
 *
 *   task:  waiting --start--> running --done--> done
 *                                     --fail--> failed
 *          waiting|running --cancel--> cancelled --resume--> waiting     (the job run again)
 *
 *   job:   (new) --start--> running --done--> done          (every task done)
 *                                   --fail--> failed        (a task failed)
 *                                   --cancel--> cancelled   (tasks left when the loop stopped)
 *          running|cancelled --resume--> running            (a supervisor recovering it)
 *
 * done and failed are final: a supervisor finding them says so and runs nothing. */
#include "fleet_parts.h"

#include <string.h>

static const char *const state_names[BATON_W_NSTATES] = {
    "PENDING", "LAUNCHING", "RUNNING", "NOTICED", "STOPPED", "DONE", "CRASHED", "CANCELLED"};
static const char *const event_names[BATON_WE_NEVENTS] = {
    "launch", "start", "notice", "exit-0", "exit-75", "reclaimed", "crash", "cancel"};

#define X (-1)
static const signed char table[BATON_W_NSTATES][BATON_WE_NEVENTS] = {
    /*               launch            start            notice           exit-0        exit-75          reclaimed        crash            cancel */
    [BATON_W_PENDING] = {BATON_W_LAUNCHING, X, X, X, X, X, X, BATON_W_CANCELLED},
    [BATON_W_LAUNCHING] = {X, BATON_W_RUNNING, X, X, X, X, BATON_W_CRASHED, BATON_W_CANCELLED},
    [BATON_W_RUNNING] = {X, X, BATON_W_NOTICED, BATON_W_DONE, BATON_W_STOPPED, BATON_W_STOPPED, BATON_W_CRASHED,
                         BATON_W_NOTICED},
    [BATON_W_NOTICED] = {X, X, X, BATON_W_DONE, BATON_W_STOPPED, BATON_W_STOPPED, BATON_W_CRASHED, X},
    [BATON_W_STOPPED] = {X, X, X, X, X, X, X, X},
    [BATON_W_DONE] = {X, X, X, X, X, X, X, X},
    [BATON_W_CRASHED] = {X, X, X, X, X, X, X, X},
    [BATON_W_CANCELLED] = {X, X, X, X, X, X, X, X},
};
#undef X

int fleet_wstate_next(baton_wstate s, baton_wevent e)
{
    if ((unsigned)s >= BATON_W_NSTATES || (unsigned)e >= BATON_WE_NEVENTS) return -1;
    return table[s][e];
}

int fleet_wstate_terminal(baton_wstate s)
{
    return s == BATON_W_STOPPED || s == BATON_W_DONE || s == BATON_W_CRASHED || s == BATON_W_CANCELLED;
}

const char *fleet_wstate_name(baton_wstate s) { return (unsigned)s < BATON_W_NSTATES ? state_names[s] : "?"; }
const char *fleet_wevent_name(baton_wevent e) { return (unsigned)e < BATON_WE_NEVENTS ? event_names[e] : "?"; }

int fleet_wstate_parse(const char *name)
{
    for (int i = 0; i < BATON_W_NSTATES; i++)
        if (!strcmp(name, state_names[i])) return i;
    return -1;
}

#define X (-1)
static const signed char task_table[BATON_TASK_CANCELLED + 1][BATON_TE_NEVENTS] = {
    /*                     start              done             fail               cancel                resume */
    [BATON_TASK_WAITING] = {BATON_TASK_RUNNING, X, X, BATON_TASK_CANCELLED, X},
    [BATON_TASK_RUNNING] = {X, BATON_TASK_DONE, BATON_TASK_FAILED, BATON_TASK_CANCELLED, X},
    [BATON_TASK_DONE] = {X, X, X, X, X},
    [BATON_TASK_FAILED] = {X, X, X, X, X},
    [BATON_TASK_CANCELLED] = {X, X, X, X, BATON_TASK_WAITING},
};
#undef X

int fleet_task_next(baton_task_state s, baton_tevent e)
{
    if ((unsigned)s > BATON_TASK_CANCELLED || (unsigned)e >= BATON_TE_NEVENTS) return -1;
    return task_table[s][e];
}

const char *fleet_tevent_name(baton_tevent e)
{
    static const char *const n[BATON_TE_NEVENTS] = {"start", "done", "fail", "cancel", "resume"};
    return (unsigned)e < BATON_TE_NEVENTS ? n[e] : "?";
}

const char *fleet_task_state_name(baton_task_state s)
{
    static const char *const n[] = {"waiting", "running", "done", "failed", "cancelled"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}

#define X (-1)
static const signed char job_table[FLEET_JOB_NSTATES][FLEET_JE_NEVENTS] = {
    /*                      start              resume             done            fail              cancel */
    [FLEET_JOB_NEW] = {FLEET_JOB_RUNNING, X, X, X, X},
    [FLEET_JOB_RUNNING] = {X, FLEET_JOB_RUNNING, FLEET_JOB_DONE, FLEET_JOB_FAILED, FLEET_JOB_CANCELLED},
    [FLEET_JOB_DONE] = {X, X, X, X, X},
    [FLEET_JOB_FAILED] = {X, X, X, X, X},
    [FLEET_JOB_CANCELLED] = {X, FLEET_JOB_RUNNING, X, X, X},
};
#undef X

static const char *const job_state_names[FLEET_JOB_NSTATES] = {"", "running", "done", "failed", "cancelled"};

int fleet_job_next(fleet_jstate s, fleet_jevent e)
{
    if ((unsigned)s >= FLEET_JOB_NSTATES || (unsigned)e >= FLEET_JE_NEVENTS) return -1;
    return job_table[s][e];
}

const char *fleet_job_state_name(fleet_jstate s) { return (unsigned)s < FLEET_JOB_NSTATES ? job_state_names[s] : "?"; }

const char *fleet_jevent_name(fleet_jevent e)
{
    static const char *const n[FLEET_JE_NEVENTS] = {"start", "resume", "done", "fail", "cancel"};
    return (unsigned)e < FLEET_JE_NEVENTS ? n[e] : "?";
}

int fleet_job_state_parse(const char *name)
{
    for (int i = 0; i < FLEET_JOB_NSTATES; i++)
        if (!strcmp(name, job_state_names[i])) return i;
    return -1;
}

int fleet_job_final(const char *name)
{
    int s = fleet_job_state_parse(name);
    return s == FLEET_JOB_DONE || s == FLEET_JOB_FAILED;
}
