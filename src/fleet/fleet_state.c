/* fleet_state.c — the fleet supervisor's state machines: one pure transition table (state × event
 * -> next state) for a worker and one for a task, with names for logging. The supervisor never
 * assigns either state directly; it calls fleet_transition / fleet_task_transition (fleet_local.c),
 * which go through these tables and log the change. Unlisted pairs are refused (-1), so an impossible
 * sequence shows up as a logged error instead of a silently wrong state. */
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
