/* fleet_state.c — the per-worker state machine of the fleet supervisor: one pure transition
 * table (state × event -> next state), names for logging, and the task-state names.
 * The supervisor never assigns a worker's state directly; it calls baton_wstate_next and logs the
 * transition (fleet_local.c: transition()). Unlisted pairs are refused (-1), so an impossible
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

int baton_wstate_next(baton_wstate s, baton_wevent e)
{
    if ((unsigned)s >= BATON_W_NSTATES || (unsigned)e >= BATON_WE_NEVENTS) return -1;
    return table[s][e];
}

int baton_wstate_terminal(baton_wstate s)
{
    return s == BATON_W_STOPPED || s == BATON_W_DONE || s == BATON_W_CRASHED || s == BATON_W_CANCELLED;
}

const char *baton_wstate_name(baton_wstate s) { return (unsigned)s < BATON_W_NSTATES ? state_names[s] : "?"; }
const char *baton_wevent_name(baton_wevent e) { return (unsigned)e < BATON_WE_NEVENTS ? event_names[e] : "?"; }

int baton_wstate_parse(const char *name)
{
    for (int i = 0; i < BATON_W_NSTATES; i++)
        if (!strcmp(name, state_names[i])) return i;
    return -1;
}

const char *baton_task_state_name(baton_task_state s)
{
    static const char *const n[] = {"waiting", "running", "done", "failed", "cancelled"};
    return (unsigned)s < sizeof n / sizeof n[0] ? n[s] : "?";
}
