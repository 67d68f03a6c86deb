/* fleet_gang.c — a task over nodes (`nodes: {min: M, max: N}`) on the local backend: its members
 * are simulated instances, one per rank, each with its own metadata service, and its ranks run as
 * one launch under mpirun (loopback, oversubscribed), rank r reading member r's metadata.
 *
 * The rules (the supervisor's loop calls fleet_gang_tick per task, fleet_gang_market per member):
 *   1. The task keeps max members: one noticed, reclaimed or released is replaced at once
 *      (fleet_gang_ensure). A member is RUNNING once its machine is ready, whether or not a rank of
 *      the task runs on it.
 *   2. A launch starts when none runs and at least min members are RUNNING (not NOTICED): the first
 *      waits until no member is still launching; later ones start at once with the survivors. Each
 *      member of a launch gets a fresh metadata service (an old notice is gone) and its rank gets
 *      that endpoint and the member's BATON_INSTANCE_* names; the task's volume is attached for
 *      rank 0's member (rank 0 alone writes checkpoints).
 *   3. A notice on a member reaches its rank: the world stops at one step, rank 0 commits, the
 *      launch exits 75; the noticed member is STOPPED, the others wait for the next launch. A
 *      member reclaimed without notice, or at its deadline, ends the launch at once (SIGKILL of
 *      its process group: what MPI does when a rank dies) and the others wait.
 *   4. A launch of fewer than max ranks, when another member is ready, is asked to stop (a stop
 *      notice through rank 0's metadata) so that the next launch has them all.
 *   5. Exit 0: the task is done (every member ends DONE). Any other end with no member reclaimed is
 *      one crash of the task, whatever the world size; until retries run out the members wait for
 *      a relaunch, then every member is released and the task fails.
 *   6. After a supervisor restart, members whose launch still runs are adopted (fleet_run.c) and the
 *      launch is found again from their pid; an ended launch's status is read from the task's file.
 * Ranks see the launcher's environment (OMPI_COMM_WORLD_*): `baton train` in the command runs data
 * parallel by itself (--dist auto). As root, the launch is allowed to run as root (Open MPI's two
 * OMPI_ALLOW_RUN_AS_ROOT variables), as the tests on a fresh machine need. */
#include "baton/ckpt.h"
#include "fleet_internal.h"
#include "remote_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gang *gang_of(sup *s, int task)
{
    if (!s->gangs && !(s->gangs = calloc(s->ntasks ? s->ntasks : 1, sizeof *s->gangs))) return NULL;
    return &s->gangs[task];
}

void fleet_gang_ensure(sup *s, int task)
{
    if (s->cancelling || s->tasks[task].state != BATON_TASK_RUNNING) return;
    int have = 0;
    for (size_t i = 0; i < s->ninsts; i++) {
        const baton_fleet_inst *in = &s->insts[i];
        have += in->task == task && (in->state == BATON_W_PENDING || in->state == BATON_W_LAUNCHING ||
                                     in->state == BATON_W_RUNNING);
    }
    for (; have < s->job->nodes.max; have++)
        if (fleet_new_instance(s, task) < 0) break;
}

int fleet_gang_member_start(sup *s, size_t i, baton_err *err)
{
    baton_fleet_inst *in = &s->insts[i];
    const char *vol = s->tasks[in->task].volume;
    fleet_inst_paths(s, i);
    int rc = fleet_start_imds(s, i, 0, err);
    if (rc) return rc;
    in->t_running = fleet_now(s);
    in->resumed_step = in->reached_step = vol[0] ? fleet_verified_ckpt_step(s, vol) : 0;
    int64_t to = fleet_market_steps_to(&s->market, in->task, in->launch, in->resumed_step);
    if (to > 0) in->plan_after_steps = to;
    cJSON *d = cJSON_CreateObject();
    if (d) cJSON_AddStringToObject(d, "metadata", s->lv[i].imds ? baton_imds_url(s->lv[i].imds) : "unreachable");
    fleet_transition(s, i, BATON_WE_START, d, "running: a machine for the task's ranks");
    return 0;
}

/* SIGKILL the launch's process group; our child is collected here (its status kept for the tick). */
static void kill_launch(gang *g)
{
    fleet_worker_kill(g->pid);
    if (!g->child || g->ended) return;
    for (int k = 0; k < 2000; k++) {
        if (fleet_worker_reap(g->pid, &g->code)) {
            g->ended = 1;
            return;
        }
        usleep(1000);
    }
}

static void reclaim_member(sup *s, size_t i, double now, const char *why)
{
    gang *g = gang_of(s, s->insts[i].task);
    if (g && g->pid && s->lv[i].rank >= 0) {
        g->reclaimed = 1;
        kill_launch(g);
    }
    s->insts[i].pid = 0;
    s->lv[i].rank = -1;
    fleet_finish_instance(s, i, BATON_WE_RECLAIMED, 137, now, "%s", why);
}

void fleet_gang_market(sup *s, size_t i, double now)
{
    baton_fleet_inst *in = &s->insts[i];
    const int64_t trained = in->reached_step - (in->resumed_step > 0 ? in->resumed_step : 0);
    if (in->state == BATON_W_RUNNING && in->plan_after >= 0 && now >= in->t_running + in->plan_after &&
        (in->plan_after_steps <= 0 || trained >= in->plan_after_steps)) {
        fleet_market_reclaimed(&s->market, in->pool, now);
        if (in->plan_notice <= 0) {
            in->interrupted = BATON_INT_NO_NOTICE;
            reclaim_member(s, i, now, "interrupted without notice");
            return;
        }
        char d[32];
        in->interrupted = BATON_INT_NOTICE;
        in->t_notice = now;
        in->t_deadline = now + in->plan_notice;
        if (s->lv[i].imds) baton_imds_interrupt(s->lv[i].imds, "terminate", in->plan_notice / s->scale);
        baton_fleet_fmt_duration(in->plan_notice, d, sizeof d);
        fleet_transition(s, i, BATON_WE_NOTICE, NULL, "spot interruption notice (terminate), %s to the deadline%s", d,
                         s->lv[i].rank >= 0 ? "" : " (no rank of the task on it)");
        fleet_gang_ensure(s, in->task);
    } else if (in->state == BATON_W_NOTICED && now >= in->t_deadline) {
        reclaim_member(s, i, now, s->lv[i].cancel ? "killed at the cancel deadline" : "terminated at the deadline");
    }
}

/* Every member of a task that has ended: those waiting cancelled, those alive released. */
static void release_all(sup *s, int task, double now, int done, const char *why)
{
    for (size_t i = 0; i < s->ninsts; i++) {
        baton_fleet_inst *in = &s->insts[i];
        if (in->task != task) continue;
        if (in->state == BATON_W_PENDING || in->state == BATON_W_LAUNCHING) {
            in->t_end = now;
            fleet_transition(s, i, BATON_WE_CANCEL, NULL, "%s", why);
        } else if (fleet_alive_state(in->state)) {
            in->pid = 0;
            s->lv[i].rank = -1;
            fleet_finish_instance(s, i, done ? BATON_WE_EXIT_OK : BATON_WE_EXIT_STOPPED, done ? 0 : BATON_EXIT_STOPPED,
                                  now, "released: %s", why);
        }
    }
}

/* The launch ended with code: its members move on (rule 3, 5). */
static void launch_end(sup *s, int task, gang *g, int code, double now)
{
    baton_fleet_task *t = &s->tasks[task];
    const int reclaimed = g->reclaimed, world = g->world;
    memset(g, 0, offsetof(gang, launches));   /* keeps the count of launches */
    fleet_log_event(s, "gang", -1, task, NULL, NULL, NULL, "task %d: the launch of %d rank(s) ended (exit %d)", task,
                    world, code);
    for (size_t i = 0; i < s->ninsts; i++) {
        baton_fleet_inst *in = &s->insts[i];
        live *l = &s->lv[i];
        if (in->task != task || l->rank < 0 || !fleet_alive_state(in->state)) continue;
        const int rank = l->rank;
        in->pid = 0;
        l->rank = -1;
        if (code == 0)
            fleet_finish_instance(s, i, BATON_WE_EXIT_OK, 0, now, "exited 0: done (rank %d of %d)", rank, world);
        else if (in->state == BATON_W_NOTICED) {
            if (code == BATON_EXIT_STOPPED) fleet_deadline_event(s, i);   /* the task's result file, in its volume */
            fleet_finish_instance(s, i, BATON_WE_EXIT_STOPPED, code, now, "%s (rank %d of %d)",
                                  code == BATON_EXIT_STOPPED ? "stopped after a checkpoint (exit 75)" : "its ranks ended",
                                  rank, world);
        }
        else
            fleet_save_inst(s, i);   /* waits for the next launch */
    }
    if (code == 0) {
        release_all(s, task, now, 1, "the task is done");
        return;
    }
    if (code == BATON_EXIT_STOPPED || reclaimed || s->cancelling) return;
    t->crashes++;
    s->sum->crashes++;
    if (t->crashes <= s->job->retries) {
        fleet_log_event(s, "task", -1, task, NULL, NULL, NULL, "task %d: crash %d of %d allowed (exit %d), relaunching",
                        task, t->crashes, s->job->retries, code);
    } else {
        char log[4200];
        fleet_fmt(log, sizeof log, "%s/logs/task-%d.log", t->volume[0] ? t->volume : s->dir, task);
        fleet_fmt(s->sum->failure, sizeof s->sum->failure,
                  "task %d failed: %d crashes (retries: %d); its ranks' last launch exited with status %d; log %s",
                  task, t->crashes, s->job->retries, code, log);
        fleet_task_transition(s, task, BATON_TE_FAIL, "%s", s->sum->failure);
        release_all(s, task, now, 0, "the task failed");
    }
    fleet_save_task(s, task);
}

static int launch_ended(sup *s, int task, gang *g, int *code)
{
    if (g->ended) {
        *code = g->code;
        return 1;
    }
    if (g->child) return fleet_worker_reap(g->pid, code);
    if (fleet_proc_same(g->pid, g->pid_start)) return 0;
    char status[4200];
    double mtime;
    fleet_fmt(status, sizeof status, "%s/run/task-%d.status", s->dir, task);
    if (!fleet_worker_read_status(status, code, &mtime)) *code = -1;
    return 1;
}

/* After a restart: the launch its members' pid names (rule 6). */
static void find_launch(sup *s, int task, gang *g)
{
    for (size_t i = 0; i < s->ninsts && !g->pid; i++) {
        const baton_fleet_inst *in = &s->insts[i];
        if (in->task == task && fleet_alive_state(in->state) && in->pid > 0) g->pid = in->pid, g->pid_start = in->pid_start;
    }
    if (!g->pid) return;
    g->child = 0;
    for (size_t i = 0; i < s->ninsts; i++)
        if (s->insts[i].task == task && fleet_alive_state(s->insts[i].state) && s->insts[i].pid == g->pid)
            s->lv[i].rank = g->world++;
    g->launches = 1;
}

/* One rank's part of the mpirun line: its environment, then the command. */
static int rank_args(sup *s, size_t i, const char *command, baton_buf *b)
{
    const baton_fleet_inst *in = &s->insts[i];
    const live *l = &s->lv[i];
    char v[256];
    int rc = rmt_printf(b, " -n 1 env");
    const char *names[] = {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "BATON_INSTANCE_ID", "BATON_INSTANCE_TYPE", "BATON_ZONE"};
    const char *vals[] = {l->imds ? baton_imds_url(l->imds) : "http://127.0.0.1:1", in->name, in->type, in->zone};
    for (int k = 0; k < 4; k++) {
        fleet_fmt(v, sizeof v, "%s=%s", names[k], vals[k]);
        rc |= rmt_printf(b, " ");
        rc |= rmt_shq(b, v);
    }
    rc |= rmt_printf(b, " /bin/sh -c ");
    rc |= rmt_shq(b, command);
    return rc;
}

/* A launch of the ready members' ranks (rule 2); 0, or an error to count as the task's crash. */
static int start_launch(sup *s, int task, gang *g, size_t *idx, int world, baton_err *err)
{
    baton_fleet_task *t = &s->tasks[task];
    int rc = fleet_attach_volume(s, idx[0], err);   /* rank 0's machine holds the volume */
    for (int r = 0; !rc && r < world; r++) {
        size_t i = idx[r];
        fleet_fmt(s->insts[i].volume, sizeof s->insts[i].volume, "%s", t->volume);
        fleet_inst_paths(s, i);
        if (s->lv[i].imds) baton_imds_stop(s->lv[i].imds);
        s->lv[i].imds = NULL;
        rc = fleet_start_imds(s, i, 0, err);
    }
    if (rc) return rc;
    const live *l0 = &s->lv[idx[0]];
    unlink(l0->progress);
    int64_t from = fleet_verified_ckpt_step(s, t->volume);
    baton_buf cmd = {0};
    rc = rmt_printf(&cmd, "exec mpirun --oversubscribe --bind-to none");
    for (int r = 0; !rc && r < world; r++) rc = (r ? rmt_printf(&cmd, " :") : 0) | rank_args(s, idx[r], t->command, &cmd);
    rc |= rmt_printf(&cmd, "%c", 0);
    if (rc) {
        baton_buf_free(&cmd);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    fleet_wenv w;
    fleet_wenv_build(s, idx[0], &w);
    if (geteuid() == 0) {
        w.env[w.n++] = "OMPI_ALLOW_RUN_AS_ROOT=1";
        w.env[w.n++] = "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
    }
    baton_worker_spec ws = {(const char *)cmd.data, t->volume, l0->log, l0->status, w.env, w.n};
    rc = fleet_worker_spawn(&ws, &g->pid, &g->pid_start, err);
    fleet_wenv_free(&w);
    baton_buf_free(&cmd);
    if (rc) return rc;
    g->child = 1;
    g->world = world;
    g->launches++;
    char names[512] = "";
    for (int r = 0; r < world; r++) {
        baton_fleet_inst *in = &s->insts[idx[r]];
        in->pid = g->pid;
        in->pid_start = g->pid_start;
        in->resumed_step = in->reached_step = from;
        int64_t to = fleet_market_steps_to(&s->market, in->task, in->launch, from);
        if (to > 0) in->plan_after_steps = to;   /* a schedule by the task's step: from this launch */
        s->lv[idx[r]].rank = r;
        char cdir[4400];
        fleet_ckpt_dir(s, t->volume, cdir, sizeof cdir);
        s->lv[idx[r]].last_ckpt = fleet_ckpt_newest_name(cdir);
        fleet_save_inst(s, idx[r]);
        size_t k = strlen(names);
        fleet_fmt(names + k, sizeof names - k, "%s%s", r ? ", " : "", in->name);
    }
    cJSON *d = cJSON_CreateObject();
    if (d) {
        cJSON_AddNumberToObject(d, "pid", g->pid);
        cJSON_AddNumberToObject(d, "world", world);
        cJSON_AddNumberToObject(d, "resumed_step", (double)from);
    }
    fleet_log_event(s, "gang", -1, task, NULL, NULL, d, "task %d: launched %d rank(s) under mpirun (pid %d) from step %lld on %s",
                    task, world, g->pid, (long long)from, names);
    return 0;
}

static void launch_failed(sup *s, int task, double now, const baton_err *e)
{
    baton_fleet_task *t = &s->tasks[task];
    t->crashes++;
    s->sum->crashes++;
    fleet_log_event(s, "task", -1, task, NULL, NULL, NULL, "task %d: its ranks could not start: %s", task, e->msg);
    if (t->crashes > s->job->retries) {
        fleet_fmt(s->sum->failure, sizeof s->sum->failure, "task %d failed: its ranks could not start: %s", task, e->msg);
        fleet_task_transition(s, task, BATON_TE_FAIL, "%s", s->sum->failure);
        release_all(s, task, now, 0, "the task failed");
    }
    fleet_save_task(s, task);
}

void fleet_gang_tick(sup *s, int task, double now)
{
    gang *g = gang_of(s, task);
    if (!g) return;
    if (!g->pid && !g->launches) find_launch(s, task, g);
    size_t idx[1024];
    int ready = 0, launching = 0, idle = 0;
    for (size_t i = 0; i < s->ninsts; i++) {
        const baton_fleet_inst *in = &s->insts[i];
        if (in->task != task) continue;
        launching += in->state == BATON_W_LAUNCHING;   /* not PENDING: one may wait for capacity for an hour */
        if (in->state == BATON_W_RUNNING && ready < s->job->nodes.max && ready < 1024) idx[ready++] = i;
        idle += in->state == BATON_W_RUNNING && s->lv[i].rank < 0;
        if (s->cancelling && in->state == BATON_W_NOTICED && s->lv[i].rank < 0 && !g->pid) {
            s->insts[i].pid = 0;
            fleet_finish_instance(s, i, BATON_WE_EXIT_STOPPED, BATON_EXIT_STOPPED, now, "cancelled (no rank ran on it)");
        }
    }
    if (g->pid) {
        int code;
        if (launch_ended(s, task, g, &code)) {
            launch_end(s, task, g, code, now);
        } else if (!g->grow_asked && !s->cancelling && idle > 0 && g->world < s->job->nodes.max) {
            for (size_t i = 0; i < s->ninsts; i++)   /* rule 4: through rank 0's metadata */
                if (s->insts[i].task == task && s->lv[i].rank == 0 && s->lv[i].imds)
                    baton_imds_interrupt(s->lv[i].imds, "stop", s->job->market.notice / s->scale);
            g->grow_asked = 1;
            fleet_log_event(s, "gang", -1, task, NULL, NULL, NULL,
                            "task %d: %d more member(s) ready: the %d rank(s) stop at the next step to relaunch wider",
                            task, idle, g->world);
        }
        return;
    }
    if (s->cancelling || s->tasks[task].state != BATON_TASK_RUNNING) return;
    if (ready < s->job->nodes.min || (!g->launches && launching)) return;
    baton_err e = {0};
    if (start_launch(s, task, g, idx, ready, &e)) {
        memset(g, 0, offsetof(gang, launches));
        launch_failed(s, task, now, &e);
    }
}
