/* fleet_local.c — the running local fleet behind `baton fleet run` (contract in fleet.h; start,
 * recovery and end are in fleet_run.c): tasks, instances and their state machine, the market's
 * interruptions, replacements, volume attachment and moves, progress and checkpoint tracking,
 * cancel, the status line and the loop (a worker's environment is built in fleet_wenv.c).
 *
 * Every instance change goes through fleet_transition(), every task change through
 * fleet_task_transition(), the job's through fleet_job_step(): the one place each that calls its
 * table (fleet_wstate_next, fleet_task_next, fleet_job_next; fleet_state.c), saves the row and logs the event (database, JSONL, a line on stderr). Instances live in one
 * growing array and are referred to by index, never by pointer across a call that may add one. */
#include "baton/ckpt.h"
#include "fleet_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int fleet_fmt(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n;
}

void baton_fleet_opts_default(baton_fleet_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tick_s = 0.02;
}

void baton_fleet_fmt_duration(double s, char *out, size_t cap)
{
    if (!(s >= 0)) s = 0;      /* NaN too */
    if (s > 1e15) s = 1e15;    /* a value from a damaged record: printed, never cast out of range */
    long t = (long)(s + 0.5);
    if (t >= 3600) fleet_fmt(out, cap, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60) fleet_fmt(out, cap, "%ldm%02lds", t / 60, t % 60);
    else fleet_fmt(out, cap, "%lds", t);
}

int baton_fleet_job_dir(const char *state_dir, const char *name, char *out, size_t cap, baton_err *err)
{
    return baton_path_join(out, cap, state_dir && *state_dir ? state_dir : "baton-fleet", name, err);
}

/* ------------------------------------------------------------------ events */
static void clear_line(sup *s)
{
    if (s->drawn) {
        fputs("\r\033[K", stderr);
        s->drawn = 0;
    }
}

void fleet_log_event(sup *s, const char *kind, int idx, int task, const char *from, const char *to, cJSON *detail,
                      const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (!detail) detail = cJSON_CreateObject();
    if (detail) cJSON_AddStringToObject(detail, "message", text);
    baton_fleet_event ev;
    memset(&ev, 0, sizeof ev);
    ev.t_sim = fleet_now(s);
    ev.t_wall = baton_wall_now();
    fleet_fmt(ev.kind, sizeof ev.kind, "%s", kind);
    ev.inst = idx >= 0 ? s->insts[idx].id : 0;
    ev.task = task;
    fleet_fmt(ev.from, sizeof ev.from, "%s", from ? from : "");
    fleet_fmt(ev.to, sizeof ev.to, "%s", to ? to : "");
    ev.detail = detail ? baton_json_print(detail, 0) : NULL;
    cJSON_Delete(detail);
    if (!s->db_failed && fleet_db_event(s->db, &ev, &s->db_err)) s->db_failed = 1;
    free(ev.detail);
    if (!s->o->quiet) {
        char t[32];
        baton_fleet_fmt_duration(ev.t_sim, t, sizeof t);
        clear_line(s);
        if (idx >= 0)
            fprintf(stderr, "fleet [%8s] %s task %d: %s\n", t, s->insts[idx].name, task, text);
        else
            fprintf(stderr, "fleet [%8s] %s\n", t, text);
    }
}

void fleet_save_inst(sup *s, size_t i)
{
    if (!s->db_failed && fleet_db_save_inst(s->db, &s->insts[i], &s->db_err)) s->db_failed = 1;
}

void fleet_save_task(sup *s, int t)
{
    if (!s->db_failed && fleet_db_save_task(s->db, &s->tasks[t], &s->db_err)) s->db_failed = 1;
}

void fleet_save_job(sup *s)
{
    if (!s->db_failed && fleet_db_save_job(s->db, &s->rec, &s->db_err)) s->db_failed = 1;
}

/* The one place an instance changes state. */
int fleet_transition(sup *s, size_t i, baton_wevent ev, cJSON *detail, const char *fmt, ...)
{
    baton_fleet_inst *in = &s->insts[i];
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    int next = fleet_wstate_next(in->state, ev);
    if (next < 0) {
        fleet_log_event(s, "error", (int)i, in->task, fleet_wstate_name(in->state), NULL, detail,
                  "refused transition: %s in state %s (%s)", fleet_wevent_name(ev), fleet_wstate_name(in->state), reason);
        return -1;
    }
    const char *from = fleet_wstate_name(in->state);
    in->state = (baton_wstate)next;
    fleet_fmt(in->reason, sizeof in->reason, "%s", reason);
    fleet_save_inst(s, i);
    if (!detail) detail = cJSON_CreateObject();
    if (detail) {
        cJSON_AddStringToObject(detail, "event", fleet_wevent_name(ev));
        cJSON_AddStringToObject(detail, "instance", in->name);
        if (in->type[0]) cJSON_AddStringToObject(detail, "type", in->type);
        if (in->zone[0]) cJSON_AddStringToObject(detail, "zone", in->zone);
    }
    fleet_log_event(s, "transition", (int)i, in->task, from, fleet_wstate_name(in->state), detail, "%s -> %s: %s", from,
              fleet_wstate_name(in->state), reason);
    return 0;
}

int fleet_task_transition(sup *s, int t, baton_tevent ev, const char *fmt, ...)
{
    baton_fleet_task *tk = &s->tasks[t];
    int next = fleet_task_next(tk->state, ev);
    const char *from = fleet_task_state_name(tk->state);
    if (next < 0) {
        fleet_log_event(s, "error", -1, t, from, NULL, NULL, "task %d: refused transition: %s in state %s", t,
                        fleet_tevent_name(ev), from);
        return -1;
    }
    tk->state = (baton_task_state)next;
    fleet_save_task(s, t);
    if (fmt) {
        char msg[1200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fleet_log_event(s, "task", -1, t, from, fleet_task_state_name(tk->state), NULL, "%s", msg);
    }
    return 0;
}

int fleet_job_step(sup *s, fleet_jevent ev, baton_err *err)
{
    const int from = fleet_job_state_parse(s->rec.state);
    const int next = from < 0 ? -1 : fleet_job_next((fleet_jstate)from, ev);
    if (next < 0) {
        fleet_log_event(s, "error", -1, -1, s->rec.state, NULL, NULL, "job %s: refused transition: %s in state '%s'",
                        s->rec.name, fleet_jevent_name(ev), s->rec.state);
        return baton_err_set(err, BATON_ERR_ARG, "job %s: refused transition: %s in state '%s'", s->rec.name,
                             fleet_jevent_name(ev), s->rec.state);
    }
    fleet_fmt(s->rec.state, sizeof s->rec.state, "%s", fleet_job_state_name((fleet_jstate)next));
    return BATON_OK;
}

/* ------------------------------------------------------------------ instances */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int fleet_new_instance(sup *s, int task)
{
    if (s->ninsts == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        baton_fleet_inst *p = realloc(s->insts, nc * sizeof *p);
        if (!p) return -1;
        s->insts = p;
        live *l = realloc(s->lv, nc * sizeof *l);
        if (!l) return -1;
        s->lv = l;
        s->cap = nc;
    }
    size_t i = s->ninsts++;
    baton_fleet_inst *in = &s->insts[i];
    memset(in, 0, sizeof *in);
    memset(&s->lv[i], 0, sizeof s->lv[i]);
    s->lv[i].last_ckpt = -1;
    s->lv[i].rank = -1;
    in->id = (int)i + 1;
    fleet_fmt(in->name, sizeof in->name, "i-%09x%08x", name_hash(s->rec.name) & 0xfffffffu, (unsigned)in->id);
    in->task = task;
    in->launch = s->tasks[task].launches++;
    in->state = BATON_W_PENDING;
    in->pool = -1;
    in->t_request = fleet_now(s);
    in->t_running = in->t_first_step = in->t_notice = in->t_deadline = in->t_end = -1;
    in->plan_after = -1;
    in->plan_after_steps = 0;
    in->exit_code = -1;
    in->resumed_step = in->reached_step = in->ckpt_step = -1;
    fleet_save_inst(s, i);
    fleet_save_task(s, task);
    fleet_log_event(s, "request", (int)i, task, NULL, "PENDING", NULL, "requested (instance %d of the task)", in->launch + 1);
    return (int)i;
}

/* The task needs an instance: request one unless one is already pending or launching (a task
 * over nodes: enough for its max, fleet_gang.c). */
static void ensure_successor(sup *s, int task)
{
    if (s->cancelling || s->tasks[task].state != BATON_TASK_RUNNING) return;
    if (s->job->nodes.max) {
        fleet_gang_ensure(s, task);
        return;
    }
    for (size_t i = 0; i < s->ninsts; i++)
        if (s->insts[i].task == task && (s->insts[i].state == BATON_W_PENDING || s->insts[i].state == BATON_W_LAUNCHING))
            return;
    fleet_new_instance(s, task);
}

static void cancel_waiting(sup *s, int task, const char *why)
{
    for (size_t i = 0; i < s->ninsts; i++)
        if (s->insts[i].task == task && (s->insts[i].state == BATON_W_PENDING || s->insts[i].state == BATON_W_LAUNCHING)) {
            s->insts[i].t_end = fleet_now(s);
            fleet_transition(s, i, BATON_WE_CANCEL, NULL, "%s", why);
        }
}

void fleet_ckpt_dir(const sup *s, const char *volume, char *out, size_t cap)
{
    fleet_fmt(out, cap, "%s/%s", volume, s->job->volume.checkpoints);
}

/* The step of the newest complete checkpoint (the quick check: MANIFEST parses and every listed
 * file has its size; folders appear by rename, so that is what "committed" means); 0 when none. */
int64_t fleet_verified_ckpt_step(const sup *s, const char *volume)
{
    char dir[4400];
    fleet_ckpt_dir(s, volume, dir, sizeof dir);
    baton_ckpt_info *v = NULL;
    size_t n = 0;
    baton_err e;
    int64_t step = 0;
    if (!baton_is_dir(dir) || baton_ckpt_list(dir, 2, &v, &n, &e)) return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].status == BATON_OK) {
            step = (int64_t)v[i].step;
            break;
        }
    free(v);
    return step;
}

static void last_log_line(const char *path, char *out, size_t cap)
{
    out[0] = 0;
    uint8_t *p;
    size_t n;
    baton_err e;
    if (baton_file_read_all(path, 64u << 20, &p, &n, &e)) return;
    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ')) n--;
    size_t b = n;
    while (b && p[b - 1] != '\n' && p[b - 1] != '\r') b--;
    fleet_fmt(out, cap, "%.*s", (int)(n - b > 300 ? 300 : n - b), (const char *)p + b);
    free(p);
}

/* An instance's process has ended (or was killed): account for it and move the task on. */
void fleet_finish_instance(sup *s, size_t i, baton_wevent ev, int code, double t_end, const char *fmt, ...)
{
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    baton_fleet_inst *in = &s->insts[i];
    live *l = &s->lv[i];
    fleet_worker_kill(in->pid);   /* stragglers in its process group */
    if (l->imds) {
        baton_imds_stop(l->imds);
        l->imds = NULL;
    }
    in->exit_code = code;
    in->t_end = t_end;
    int64_t reached = fleet_progress_file_read(l->progress);
    if (reached > in->reached_step) in->reached_step = reached;
    if (in->reached_step < in->resumed_step) in->reached_step = in->resumed_step;
    in->ckpt_step = fleet_verified_ckpt_step(s, in->volume);
    int64_t lost = in->reached_step > in->ckpt_step ? in->reached_step - in->ckpt_step : 0;
    cJSON *d = cJSON_CreateObject();
    if (d) {
        cJSON_AddNumberToObject(d, "exit", code);
        cJSON_AddNumberToObject(d, "resumed_step", (double)in->resumed_step);
        cJSON_AddNumberToObject(d, "reached_step", (double)in->reached_step);
        cJSON_AddNumberToObject(d, "checkpoint_step", (double)in->ckpt_step);
        cJSON_AddNumberToObject(d, "lost_steps", (double)lost);
        cJSON_AddStringToObject(d, "interruption", in->interrupted == BATON_INT_NOTICE ? "notice"
                                                   : in->interrupted == BATON_INT_NO_NOTICE ? "no-notice" : "none");
    }
    fleet_transition(s, i, ev, d, "%s; steps %lld -> %lld, checkpoint %lld, lost %lld", reason, (long long)in->resumed_step,
               (long long)in->reached_step, (long long)in->ckpt_step, (long long)lost);
    baton_fleet_task *t = &s->tasks[in->task];
    if (in->interrupted != BATON_INT_NONE) {
        t->interruptions++;
        s->sum->interruptions++;
        if (in->interrupted == BATON_INT_NOTICE) s->sum->with_notice++;
        else s->sum->without_notice++;
    }
    if (in->state == BATON_W_DONE && t->state == BATON_TASK_DONE) {
        /* another machine of a task over nodes, released */
    } else if (in->state == BATON_W_DONE) {
        t->final_step = in->reached_step;
        fleet_task_transition(s, in->task, BATON_TE_DONE, "task %d done at step %lld", in->task, (long long)t->final_step);
        cancel_waiting(s, in->task, "the task is done");
    } else if (in->state == BATON_W_CRASHED) {
        t->crashes++;
        s->sum->crashes++;
        if (t->crashes > s->job->retries) {
            char last[320];
            last_log_line(l->log, last, sizeof last);
            fleet_fmt(s->sum->failure, sizeof s->sum->failure,
                     "task %d failed: %d crashes (retries: %d); the last, %s, exited with status %d; log %s%s%s",
                     in->task, t->crashes, s->job->retries, in->name, code, l->log, last[0] ? ": " : "", last);
            fleet_task_transition(s, in->task, BATON_TE_FAIL, "%s", s->sum->failure);
            cancel_waiting(s, in->task, "the task failed");
        } else {
            fleet_log_event(s, "task", -1, in->task, NULL, NULL, NULL, "task %d: crash %d of %d allowed, replacing", in->task,
                      t->crashes, s->job->retries);
            ensure_successor(s, in->task);
        }
    } else if (in->state == BATON_W_STOPPED) {
        ensure_successor(s, in->task);
    }
    fleet_save_task(s, in->task);
}

/* ------------------------------------------------------------------ launching */
static int zone_index(const baton_job *j, const char *zone)
{
    for (size_t z = 0; z < j->nzones; z++)
        if (!strcmp(j->zones[z], zone)) return (int)z;
    return -1;
}

static void set_pool(sup *s, size_t i, int pool)
{
    baton_fleet_inst *in = &s->insts[i];
    const baton_job_type *t = &s->job->types[fleet_pool_type(&s->market, pool)];
    const char *zone = s->job->zones[fleet_pool_zone(&s->market, pool)];
    in->pool = pool;
    fleet_fmt(in->type, sizeof in->type, "%s", t->name);
    fleet_fmt(in->zone, sizeof in->zone, "%s", zone);
    in->spot_price = baton_job_spot_price(t, zone);
    in->on_demand_price = t->on_demand_price;
}

static void try_launch(sup *s, size_t i, double now)
{
    baton_fleet_inst *in = &s->insts[i];
    double retry = 0;
    const char *pref = s->tasks[in->task].zone[0] ? s->tasks[in->task].zone : NULL;
    int pool = fleet_market_choose(&s->market, now, pref, &retry);
    if (pool < 0) {   /* no capacity anywhere yet: say so once, try again every tick */
        if (!s->lv[i].told_no_capacity) {
            char d[32];
            baton_fleet_fmt_duration(retry - now, d, sizeof d);
            fleet_log_event(s, "market", (int)i, in->task, NULL, NULL, NULL, "no spot capacity in any pool for %s", d);
            s->lv[i].told_no_capacity = 1;
        }
        return;
    }
    set_pool(s, i, pool);
    fleet_market_plan(&s->market, in->task, in->launch, pool, &in->plan_after, &in->plan_notice,
                      &in->plan_after_steps);
    char d[32];
    baton_fleet_fmt_duration(s->job->market.launch_delay, d, sizeof d);
    fleet_transition(s, i, BATON_WE_LAUNCH, NULL, "%s in %s at $%.4f/h (on demand $%.4f/h), running in %s", in->type, in->zone,
               in->spot_price, in->on_demand_price, d);
}

static void volume_step(void *arg, const char *step, const char *path)
{
    void **a = arg;
    sup *s = a[0];
    int idx = *(int *)a[1];
    cJSON *d = cJSON_CreateObject();
    if (d) {
        cJSON_AddStringToObject(d, "step", step);
        cJSON_AddStringToObject(d, "path", path);
    }
    fleet_log_event(s, "volume", idx, s->insts[idx].task, NULL, NULL, d, "volume: %s %s", step, path);
    if (!strcmp(step, "volume-restored")) {   /* the new copy is the task's volume from now on */
        baton_fleet_task *t = &s->tasks[s->insts[idx].task];
        fleet_fmt(t->volume, sizeof t->volume, "%s", path);
        fleet_fmt(t->zone, sizeof t->zone, "%s", s->insts[idx].zone);
        fleet_save_task(s, t->idx);
    }
}

/* The task's volume in the instance's zone: create it, attach it, or move it. */
int fleet_attach_volume(sup *s, size_t i, baton_err *err)
{
    baton_fleet_inst *in = &s->insts[i];
    baton_fleet_task *t = &s->tasks[in->task];
    char path[4096];
    if (!t->volume[0]) {
        fleet_fmt(path, sizeof path, "%s/volumes/%s/vol-%d-%d", s->dir, in->zone, t->idx, s->rec.next_volume++);
        fleet_save_job(s);
        if (fleet_volume_create(path, s->job->volume.seed, err)) return err->code;
        fleet_fmt(t->volume, sizeof t->volume, "%s", path);
        fleet_fmt(t->zone, sizeof t->zone, "%s", in->zone);
        fleet_save_task(s, t->idx);
        cJSON *d = cJSON_CreateObject();
        if (d) cJSON_AddStringToObject(d, "path", path);
        fleet_log_event(s, "volume", (int)i, t->idx, NULL, NULL, d, "volume: created %s%s%s", path,
                  s->job->volume.seed[0] ? " from " : "", s->job->volume.seed);
    } else if (strcmp(t->zone, in->zone) != 0) {
        char snap[4096];
        fleet_fmt(snap, sizeof snap, "%s/snapshots/snap-%d", s->dir, s->rec.next_snapshot++);
        fleet_fmt(path, sizeof path, "%s/volumes/%s/vol-%d-%d", s->dir, in->zone, t->idx, s->rec.next_volume++);
        fleet_save_job(s);
        fleet_log_event(s, "volume", (int)i, t->idx, NULL, NULL, NULL, "volume: moving %s (%s) to %s", t->volume, t->zone, in->zone);
        int idx = (int)i;
        void *arg[2] = {s, &idx};
        baton_err me = {0};
        char from[sizeof t->volume];   /* volume_step repoints t->volume while the move runs */
        fleet_fmt(from, sizeof from, "%s", t->volume);
        if (fleet_volume_move(from, snap, path, volume_step, arg, &me)) {
            /* the old volume is intact: run in its zone instead */
            fleet_log_event(s, "volume", (int)i, t->idx, NULL, NULL, NULL, "volume: move failed (%s); the volume stays in %s",
                      me.msg, t->zone);
            int z = zone_index(s->job, t->zone);
            if (z < 0) return baton_err_set(err, BATON_ERR_ARG, "volume zone %s is not in the job's zones", t->zone);
            set_pool(s, i, fleet_pool_type(&s->market, in->pool) * (int)s->job->nzones + z);
        } else {
            /* keep only the newest snapshot */
            char old[4096];
            for (int k = 0; k < s->rec.next_snapshot - 1; k++) {
                fleet_fmt(old, sizeof old, "%s/snapshots/snap-%d", s->dir, k);
                baton_remove_tree(old);
            }
        }
    } else {
        fleet_log_event(s, "volume", (int)i, t->idx, NULL, NULL, NULL, "volume: attached %s", t->volume);
    }
    fleet_fmt(in->volume, sizeof in->volume, "%s", t->volume);
    char logs[4200];
    fleet_fmt(logs, sizeof logs, "%s/logs", in->volume);
    if (baton_mkdir_p(logs, err)) return err->code;
    if (access(in->volume, W_OK) != 0)
        return baton_err_set(err, BATON_ERR_IO, "volume %s is not writable: %s", in->volume, strerror(errno));
    return 0;
}

int fleet_start_imds(sup *s, size_t i, int port, baton_err *err)
{
    baton_fleet_inst *in = &s->insts[i];
    const char *mode = s->o->imds_mode ? s->o->imds_mode : "normal";
    if (!strcmp(mode, "unreachable")) {
        in->port = 0;
        return 0;
    }
    baton_imds_opts io;
    baton_imds_opts_default(&io);
    char listen_on[64];
    fleet_fmt(listen_on, sizeof listen_on, "127.0.0.1:%d", port);
    io.listen = listen_on;
    io.instance_id = in->name;
    io.instance_type = in->type;
    io.zone = in->zone;
    io.notice_seconds = s->job->market.notice / s->scale;
    io.garbage = !strcmp(mode, "garbage");
    if (baton_imds_start(&io, &s->lv[i].imds, err)) return err->code;
    in->port = baton_imds_port(s->lv[i].imds);
    return 0;
}

void fleet_inst_paths(sup *s, size_t i)
{
    live *l = &s->lv[i];
    const baton_fleet_inst *in = &s->insts[i];
    if (s->job->nodes.max) {   /* a task over nodes: one launch of ranks, its files the task's */
        const char *vol = s->tasks[in->task].volume;
        fleet_fmt(l->progress, sizeof l->progress, "%s/run/task-%d.step", s->dir, in->task);
        fleet_fmt(l->status, sizeof l->status, "%s/run/task-%d.status", s->dir, in->task);
        fleet_fmt(l->log, sizeof l->log, "%s/logs/task-%d.log", vol[0] ? vol : s->dir, in->task);
        return;
    }
    fleet_fmt(l->progress, sizeof l->progress, "%s/run/%s.step", s->dir, in->name);
    fleet_fmt(l->status, sizeof l->status, "%s/run/%s.status", s->dir, in->name);
    fleet_fmt(l->log, sizeof l->log, "%s/logs/%s.log", in->volume[0] ? in->volume : s->dir, in->name);
}

static int spawn(sup *s, size_t i, baton_err *err)
{
    baton_fleet_inst *in = &s->insts[i];
    live *l = &s->lv[i];
    int rc = fleet_attach_volume(s, i, err);
    if (rc) return rc;
    fleet_inst_paths(s, i);
    unlink(l->progress);
    in->resumed_step = fleet_verified_ckpt_step(s, in->volume);
    in->reached_step = in->resumed_step;
    int64_t to = fleet_market_steps_to(&s->market, in->task, in->launch, in->resumed_step);
    if (to > 0) in->plan_after_steps = to;   /* a schedule by the task's step: counted from here */
    if ((rc = fleet_start_imds(s, i, 0, err))) return rc;
    fleet_wenv w;
    fleet_wenv_build(s, i, &w);
    baton_worker_spec ws = {s->tasks[in->task].command, in->volume, l->log, l->status, w.env, w.n};
    rc = fleet_worker_spawn(&ws, &in->pid, &in->pid_start, err);
    fleet_wenv_free(&w);
    if (rc) return rc;
    l->child = 1;
    char cdir[4400];
    fleet_ckpt_dir(s, in->volume, cdir, sizeof cdir);
    l->last_ckpt = fleet_ckpt_newest_name(cdir);
    in->t_running = fleet_now(s);   /* after the volume was attached or moved, which takes time */
    cJSON *d = cJSON_CreateObject();
    if (d) {
        cJSON_AddNumberToObject(d, "pid", in->pid);
        cJSON_AddNumberToObject(d, "resumed_step", (double)in->resumed_step);
        cJSON_AddStringToObject(d, "metadata", l->imds ? baton_imds_url(l->imds) : "unreachable");
        if (in->plan_after >= 0) cJSON_AddNumberToObject(d, "planned_interruption_after", in->plan_after);
        if (in->plan_after_steps > 0) cJSON_AddNumberToObject(d, "planned_interruption_after_steps", (double)in->plan_after_steps);
    }
    fleet_transition(s, i, BATON_WE_START, d, "running (pid %d) from step %lld", in->pid, (long long)in->resumed_step);
    return 0;
}

static void launch_ready(sup *s, size_t i, double now)
{
    baton_fleet_inst *in = &s->insts[i];
    if (now < in->t_request + s->job->market.launch_delay) return;
    for (size_t k = 0; k < s->ninsts && !s->job->nodes.max; k++)   /* the volume attaches to one instance at a time */
        if (k != i && s->insts[k].task == in->task && fleet_alive_state(s->insts[k].state)) return;
    baton_err e = {0};
    if (s->job->nodes.max ? fleet_gang_member_start(s, i, &e) : spawn(s, i, &e)) {
        if (s->lv[i].imds) {
            baton_imds_stop(s->lv[i].imds);
            s->lv[i].imds = NULL;
        }
        in->t_end = now;
        s->tasks[in->task].crashes++;
        s->sum->crashes++;
        fleet_transition(s, i, BATON_WE_CRASH, NULL, "could not start: %s", e.msg);
        baton_fleet_task *t = &s->tasks[in->task];
        if (t->crashes > s->job->retries) {
            fleet_fmt(s->sum->failure, sizeof s->sum->failure, "task %d failed: could not start an instance: %s", t->idx, e.msg);
            fleet_task_transition(s, t->idx, BATON_TE_FAIL, "%s", s->sum->failure);
        } else {
            ensure_successor(s, in->task);
        }
        fleet_save_task(s, in->task);
    }
}

/* ------------------------------------------------------------------ the running fleet */
void fleet_kill_now(sup *s, size_t i)
{
    baton_fleet_inst *in = &s->insts[i];
    fleet_worker_kill(in->pid);
    s->lv[i].killed = 1;
    if (s->lv[i].child) {   /* SIGKILL is immediate: collect it now */
        int code;
        for (int k = 0; k < 2000 && !fleet_worker_reap(in->pid, &code); k++) usleep(1000);
    } else {
        for (int k = 0; k < 2000 && fleet_proc_same(in->pid, in->pid_start); k++) usleep(1000);
    }
}

static void market_tick(sup *s, size_t i, double now)
{
    baton_fleet_inst *in = &s->insts[i];
    char d[32];
    if (s->job->nodes.max) {
        fleet_gang_market(s, i, now);
        return;
    }
    const int64_t trained = in->reached_step - (in->resumed_step > 0 ? in->resumed_step : 0);
    if (in->state == BATON_W_RUNNING && in->plan_after >= 0 && now >= in->t_running + in->plan_after &&
        (in->plan_after_steps <= 0 || trained >= in->plan_after_steps)) {
        fleet_market_reclaimed(&s->market, in->pool, now);
        if (in->plan_notice > 0) {
            in->interrupted = BATON_INT_NOTICE;
            in->t_notice = now;
            in->t_deadline = now + in->plan_notice;
            if (s->lv[i].imds) baton_imds_interrupt(s->lv[i].imds, "terminate", in->plan_notice / s->scale);
            baton_fleet_fmt_duration(in->plan_notice, d, sizeof d);
            fleet_transition(s, i, BATON_WE_NOTICE, NULL, "spot interruption notice (terminate), %s to the deadline", d);
            ensure_successor(s, in->task);
        } else {
            in->interrupted = BATON_INT_NO_NOTICE;
            fleet_kill_now(s, i);
            fleet_finish_instance(s, i, BATON_WE_RECLAIMED, 137, now, "interrupted without notice");
        }
    } else if (in->state == BATON_W_NOTICED && now >= in->t_deadline) {
        fleet_kill_now(s, i);
        fleet_finish_instance(s, i, BATON_WE_RECLAIMED, 137, now, "%s", s->lv[i].cancel ? "killed at the cancel deadline"
                                                                                : "terminated at the deadline");
    }
}

static void reap_tick(sup *s, size_t i, double now)
{
    baton_fleet_inst *in = &s->insts[i];
    live *l = &s->lv[i];
    int code = -1;
    double t_end = now;
    if (l->child) {
        if (!fleet_worker_reap(in->pid, &code)) return;
    } else {
        if (fleet_proc_same(in->pid, in->pid_start)) return;
        double mtime;
        if (fleet_worker_read_status(l->status, &code, &mtime)) {
            double t = (mtime - s->rec.origin) * s->scale;
            if (t < t_end && t >= in->t_running) t_end = t;
        } else {
            code = -1;
        }
    }
    if (code == 0) fleet_finish_instance(s, i, BATON_WE_EXIT_OK, 0, t_end, "exited 0: done");
    else if (code == BATON_EXIT_STOPPED) {
        fleet_deadline_event(s, i);
        fleet_finish_instance(s, i, BATON_WE_EXIT_STOPPED, BATON_EXIT_STOPPED, t_end, "%s",
                        in->state == BATON_W_NOTICED ? "stopped after a checkpoint (exit 75)" : "stopped (exit 75)");
    }
    else if (code < 0) fleet_finish_instance(s, i, BATON_WE_CRASH, -1, t_end, "vanished (no exit status)");
    else fleet_finish_instance(s, i, BATON_WE_CRASH, code, t_end, "crashed (exit %d)", code);
}

static void progress_tick(sup *s, size_t i, double now, double wall)
{
    baton_fleet_inst *in = &s->insts[i];
    live *l = &s->lv[i];
    if (wall < l->next_poll) return;
    l->next_poll = wall + 0.1;
    int64_t step = fleet_progress_file_read(l->progress);
    if (step > in->reached_step) {
        in->reached_step = step;
        if (in->t_first_step < 0 && step > in->resumed_step) in->t_first_step = now;
        if (wall >= l->next_save) {   /* at most twice a second: `baton fleet status` shows the step */
            fleet_save_inst(s, i);
            l->next_save = wall + 0.5;
        }
    }
    char cdir[4400];
    fleet_ckpt_dir(s, in->volume, cdir, sizeof cdir);
    int64_t c = fleet_ckpt_newest_name(cdir);
    if (c > l->last_ckpt && s->job->nodes.max && l->rank != 0) l->last_ckpt = c;   /* ranks: rank 0's member tells */
    if (c > l->last_ckpt) {
        l->last_ckpt = c;
        cJSON *d = cJSON_CreateObject();
        if (d) cJSON_AddNumberToObject(d, "step", (double)c);
        fleet_log_event(s, "checkpoint", (int)i, in->task, NULL, NULL, d, "checkpoint ckpt-%lld committed", (long long)c);
    }
}

static void start_cancel(sup *s, double now)
{
    s->cancelling = 1;
    fleet_log_event(s, "job", -1, -1, NULL, "cancelling", NULL, "cancel: stopping every instance (a stop notice; each "
                                                              "checkpoints and exits)");
    for (size_t i = 0; i < s->ninsts; i++) {
        baton_fleet_inst *in = &s->insts[i];
        if (in->state == BATON_W_PENDING || in->state == BATON_W_LAUNCHING) {
            in->t_end = now;
            fleet_transition(s, i, BATON_WE_CANCEL, NULL, "cancelled before it ran");
        } else if (in->state == BATON_W_RUNNING) {
            s->lv[i].cancel = 1;
            in->t_notice = now;
            in->t_deadline = now + s->job->market.notice;
            if (s->lv[i].imds) baton_imds_interrupt(s->lv[i].imds, "stop", s->job->market.notice / s->scale);
            fleet_transition(s, i, BATON_WE_CANCEL, NULL, "cancel: stop notice");
        }
    }
}

static void draw_status(sup *s, double now, double wall)
{
    if (!s->o->progress || wall < s->last_draw + 0.2) return;
    s->last_draw = wall;
    char t[32], line[512];
    baton_fleet_fmt_duration(now, t, sizeof t);
    int k = fleet_fmt(line, sizeof line, "fleet %s [%s]", s->rec.name, t);
    int shown = 0;
    for (size_t i = 0; i < s->ninsts && k > 0 && (size_t)k < sizeof line - 80 && shown < 3; i++) {
        const baton_fleet_inst *in = &s->insts[i];
        if (!fleet_alive_state(in->state) && in->state != BATON_W_LAUNCHING) continue;
        k += fleet_fmt(line + k, sizeof line - (size_t)k, " | task %d %s %s/%s step %lld", in->task,
                  fleet_wstate_name(in->state), in->type, in->zone, (long long)(in->reached_step < 0 ? 0 : in->reached_step));
        if (s->o->progress_total && k > 0 && (size_t)k < sizeof line - 24)
            k += fleet_fmt(line + k, sizeof line - (size_t)k, "/%llu", (unsigned long long)s->o->progress_total);
        shown++;
    }
    if (k > 0 && (size_t)k < sizeof line - 40)
        fleet_fmt(line + k, sizeof line - (size_t)k, " | interruptions %d", s->sum->interruptions);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    s->drawn = 1;
}

static int all_tasks_ended(const sup *s)
{
    for (size_t t = 0; t < s->ntasks; t++)
        if (s->tasks[t].state == BATON_TASK_WAITING || s->tasks[t].state == BATON_TASK_RUNNING) return 0;
    return 1;
}

static int any_alive(const sup *s)
{
    for (size_t i = 0; i < s->ninsts; i++)
        if (!fleet_wstate_terminal(s->insts[i].state)) return 1;
    return 0;
}

int fleet_loop(sup *s, baton_err *err)
{
    for (;;) {
        double now = fleet_now(s), wall = baton_wall_now();
        if (fleet_stop_flag && !s->cancelling) start_cancel(s, now);
        /* start waiting tasks up to the target capacity */
        int running = 0;
        for (size_t t = 0; t < s->ntasks; t++) running += s->tasks[t].state == BATON_TASK_RUNNING;
        for (size_t t = 0; t < s->ntasks && running < s->job->target_capacity && !s->cancelling; t++)
            if (s->tasks[t].state == BATON_TASK_WAITING) {
                fleet_task_transition(s, (int)t, BATON_TE_START, NULL);
                running++;
                ensure_successor(s, (int)t);
            }
        for (size_t t = 0; t < s->ntasks && s->job->nodes.max; t++) fleet_gang_tick(s, (int)t, now);
        for (size_t i = 0; i < s->ninsts; i++) {   /* ninsts may grow inside: new ones wait a tick */
            baton_wstate st = s->insts[i].state;
            if (fleet_alive_state(st)) {
                if (!s->job->nodes.max) reap_tick(s, i, now);   /* a task's ranks: its gang's */
                if (fleet_alive_state(s->insts[i].state)) progress_tick(s, i, now, wall);
                if (fleet_alive_state(s->insts[i].state)) market_tick(s, i, now);
            } else if (st == BATON_W_PENDING) {
                try_launch(s, i, now);
            } else if (st == BATON_W_LAUNCHING) {
                launch_ready(s, i, now);
            }
        }
        if (s->db_failed) {
            clear_line(s);
            return baton_err_set(err, s->db_err.code ? s->db_err.code : BATON_ERR_IO,
                                 "%s (the workers keep running; run the job again to adopt them)", s->db_err.msg);
        }
        if (s->cancelling ? !any_alive(s) : all_tasks_ended(s) && !any_alive(s)) break;
        draw_status(s, now, wall);
        struct timespec ts = {0, (long)(s->o->tick_s * 1e9)};
        nanosleep(&ts, NULL);
    }
    clear_line(s);
    return 0;
}

