/* test_fleet_state.c — the worker state machine: the normal paths, every terminal state
 * refusing every event, impossible transitions refused, names round-trip; the task's and the job's
 * tables against the lists of their allowed moves. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "check.h"

#include <string.h>

static int run(const baton_wevent *ev, size_t n)
{
    int s = BATON_W_PENDING;
    for (size_t i = 0; i < n && s >= 0; i++) s = fleet_wstate_next((baton_wstate)s, ev[i]);
    return s;
}

int main(void)
{
    const baton_wevent done[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_EXIT_OK};
    const baton_wevent noticed[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_NOTICE, BATON_WE_EXIT_STOPPED};
    const baton_wevent deadline[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_NOTICE, BATON_WE_RECLAIMED};
    const baton_wevent nonotice[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_RECLAIMED};
    const baton_wevent crash[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_CRASH};
    const baton_wevent cancel[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_CANCEL, BATON_WE_EXIT_STOPPED};
    const baton_wevent late_done[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_NOTICE, BATON_WE_EXIT_OK};
    const baton_wevent no_start[] = {BATON_WE_LAUNCH, BATON_WE_CRASH};
    const baton_wevent early_cancel[] = {BATON_WE_LAUNCH, BATON_WE_CANCEL};
    CHECK(run(done, 3) == BATON_W_DONE);
    CHECK(run(noticed, 4) == BATON_W_STOPPED);
    CHECK(run(deadline, 4) == BATON_W_STOPPED);
    CHECK(run(nonotice, 3) == BATON_W_STOPPED);
    CHECK(run(crash, 3) == BATON_W_CRASHED);
    CHECK(run(cancel, 4) == BATON_W_STOPPED);
    CHECK(run(late_done, 4) == BATON_W_DONE);
    CHECK(run(no_start, 2) == BATON_W_CRASHED);
    CHECK(run(early_cancel, 2) == BATON_W_CANCELLED);
    /* impossible: starting without a launch, a notice before running, a second notice */
    const baton_wevent bad1[] = {BATON_WE_START};
    const baton_wevent bad2[] = {BATON_WE_LAUNCH, BATON_WE_NOTICE};
    const baton_wevent bad3[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_NOTICE, BATON_WE_NOTICE};
    const baton_wevent bad4[] = {BATON_WE_LAUNCH, BATON_WE_START, BATON_WE_NOTICE, BATON_WE_CANCEL};
    CHECK(run(bad1, 1) == -1 && run(bad2, 2) == -1 && run(bad3, 4) == -1 && run(bad4, 4) == -1);
    int terminals = 0;
    for (int s = 0; s < BATON_W_NSTATES; s++) {
        if (!fleet_wstate_terminal((baton_wstate)s)) continue;
        terminals++;
        for (int e = 0; e < BATON_WE_NEVENTS; e++) CHECK(fleet_wstate_next((baton_wstate)s, (baton_wevent)e) == -1);
    }
    CHECK_EQ_U(terminals, 4);
    /* every non-terminal state has a way out */
    for (int s = 0; s < BATON_W_NSTATES; s++) {
        if (fleet_wstate_terminal((baton_wstate)s)) continue;
        int out = 0;
        for (int e = 0; e < BATON_WE_NEVENTS; e++) out += fleet_wstate_next((baton_wstate)s, (baton_wevent)e) >= 0;
        CHECK(out > 0);
    }
    CHECK(fleet_wstate_next((baton_wstate)99, BATON_WE_LAUNCH) == -1);
    CHECK(fleet_wstate_next(BATON_W_PENDING, (baton_wevent)99) == -1);
    for (int s = 0; s < BATON_W_NSTATES; s++) CHECK(fleet_wstate_parse(fleet_wstate_name((baton_wstate)s)) == s);
    CHECK(fleet_wstate_parse("RUNNNING") == -1);
    CHECK(!strcmp(fleet_wevent_name(BATON_WE_EXIT_STOPPED), "exit-75"));

    /* a task's table: the supervisor's one path for each change, everything else refused */
    static const struct { baton_task_state s; baton_tevent e; int next; } tt[] = {
        {BATON_TASK_WAITING, BATON_TE_START, BATON_TASK_RUNNING},
        {BATON_TASK_WAITING, BATON_TE_CANCEL, BATON_TASK_CANCELLED},
        {BATON_TASK_RUNNING, BATON_TE_DONE, BATON_TASK_DONE},
        {BATON_TASK_RUNNING, BATON_TE_FAIL, BATON_TASK_FAILED},
        {BATON_TASK_RUNNING, BATON_TE_CANCEL, BATON_TASK_CANCELLED},
        {BATON_TASK_CANCELLED, BATON_TE_RESUME, BATON_TASK_WAITING},
    };
    int allowed = 0;
    for (int s = BATON_TASK_WAITING; s <= BATON_TASK_CANCELLED; s++)
        for (int e = 0; e < BATON_TE_NEVENTS; e++) {
            int want = -1;
            for (size_t k = 0; k < sizeof tt / sizeof tt[0]; k++)
                if (tt[k].s == (baton_task_state)s && tt[k].e == (baton_tevent)e) want = tt[k].next;
            int got = fleet_task_next((baton_task_state)s, (baton_tevent)e);
            CHECK_MSG(got == want, "task %s -%s-> %d, want %d", fleet_task_state_name((baton_task_state)s),
                      fleet_tevent_name((baton_tevent)e), got, want);
            allowed += got >= 0;
        }
    CHECK_EQ_U(allowed, 6);   /* done and failed are final; a task is never done twice */
    CHECK(fleet_task_next((baton_task_state)99, BATON_TE_START) == -1 && fleet_task_next(BATON_TASK_WAITING, (baton_tevent)99) == -1);
    CHECK(!strcmp(fleet_tevent_name(BATON_TE_RESUME), "resume"));

    /* the job's table: started once, resumed while running or cancelled, ended once */
    static const struct { fleet_jstate s; fleet_jevent e; int next; } jt[] = {
        {FLEET_JOB_NEW, FLEET_JE_START, FLEET_JOB_RUNNING},
        {FLEET_JOB_RUNNING, FLEET_JE_RESUME, FLEET_JOB_RUNNING},
        {FLEET_JOB_RUNNING, FLEET_JE_DONE, FLEET_JOB_DONE},
        {FLEET_JOB_RUNNING, FLEET_JE_FAIL, FLEET_JOB_FAILED},
        {FLEET_JOB_RUNNING, FLEET_JE_CANCEL, FLEET_JOB_CANCELLED},
        {FLEET_JOB_CANCELLED, FLEET_JE_RESUME, FLEET_JOB_RUNNING},
    };
    allowed = 0;
    for (int s = 0; s < FLEET_JOB_NSTATES; s++)
        for (int e = 0; e < FLEET_JE_NEVENTS; e++) {
            int want = -1;
            for (size_t k = 0; k < sizeof jt / sizeof jt[0]; k++)
                if (jt[k].s == (fleet_jstate)s && jt[k].e == (fleet_jevent)e) want = jt[k].next;
            int got = fleet_job_next((fleet_jstate)s, (fleet_jevent)e);
            CHECK_MSG(got == want, "job '%s' -%s-> %d, want %d", fleet_job_state_name((fleet_jstate)s),
                      fleet_jevent_name((fleet_jevent)e), got, want);
            allowed += got >= 0;
        }
    CHECK_EQ_U(allowed, 6);
    for (int s = 0; s < FLEET_JOB_NSTATES; s++)
        CHECK(fleet_job_state_parse(fleet_job_state_name((fleet_jstate)s)) == s);
    CHECK(fleet_job_state_parse("stalled") == -1 && fleet_job_next((fleet_jstate)99, FLEET_JE_START) == -1);
    CHECK(fleet_job_final("done") && fleet_job_final("failed") && !fleet_job_final("cancelled") &&
          !fleet_job_final("running") && !fleet_job_final("garbage"));
    CHECK_DONE();
}
