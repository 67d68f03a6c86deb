/* fleet_run.c — the local fleet supervisor's start and end (contract in fleet.h): the state
 * folder and its lock, a new job or the recovery of one from its database (adopting live workers,
 * accounting for those that ended meanwhile, removing copies left by an interrupted volume move),
 * the signals that cancel, the final state, summary and report files; and baton_fleet_cancel. */
#include "fleet_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

volatile sig_atomic_t fleet_stop_flag;
static void on_stop_signal(int sig) { (void)sig; fleet_stop_flag = 1; }

/* ------------------------------------------------------------------ start, recovery, end */
static int same_commands(const sup *s, const baton_fleet_records *r)
{
    if (r->ntasks != s->job->ncommands) return 0;
    for (size_t t = 0; t < r->ntasks; t++)
        if (strcmp(r->tasks[t].command, s->job->commands[t]) != 0) return 0;
    return 1;
}

static int recover(sup *s, baton_fleet_records *r, baton_err *err)
{
    if (!same_commands(s, r))
        return baton_err_set(err, BATON_ERR_ARG,
                             "%s: the job's commands differ from those it was started with; give the job another "
                             "name, or remove %s to start over", s->job->path, s->dir);
    s->rec = r->job;
    r->job.jobfile_text = NULL;   /* moved */
    s->scale = s->rec.time_scale;
    if (s->o->time_scale > 0 && fabs(s->o->time_scale - s->scale) > 1e-9)
        baton_log(BATON_LOG_WARN, "job %s keeps the time scale it started with (%g)", s->rec.name, s->scale);
    s->tasks = r->tasks;
    s->ntasks = r->ntasks;
    r->tasks = NULL;
    r->ntasks = 0;
    for (size_t t = 0; t < s->ntasks; t++)
        if (s->tasks[t].state == BATON_TASK_CANCELLED) fleet_task_transition(s, (int)t, BATON_TE_RESUME, NULL);
    s->insts = r->insts;
    s->ninsts = s->cap = r->ninsts;
    r->insts = NULL;
    r->ninsts = 0;
    s->lv = calloc(s->cap ? s->cap : 1, sizeof *s->lv);
    if (!s->lv) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    if (fleet_job_step(s, FLEET_JE_RESUME, err)) return err->code;
    s->rec.t_end = -1;
    double now = fleet_now(s);
    fleet_log_event(s, "job", -1, -1, NULL, "running", NULL, "resuming job %s from its database (%zu task(s), %zu instance(s) so far)",
              s->rec.name, s->ntasks, s->ninsts);
    for (size_t i = 0; i < s->ninsts; i++) {
        baton_fleet_inst *in = &s->insts[i];
        live *l = &s->lv[i];
        l->last_ckpt = -1;
        l->rank = -1;
        fleet_inst_paths(s, i);
        if (in->interrupted != BATON_INT_NONE)
            fleet_market_reclaimed(&s->market, in->pool, in->t_notice >= 0 ? in->t_notice : in->t_end);
        if (!fleet_alive_state(in->state)) continue;
        l->child = 0;
        if (!fleet_proc_same(in->pid, in->pid_start)) continue;   /* ended meanwhile: the loop reads its status */
        baton_err ie = {0};
        if (fleet_start_imds(s, i, in->port, &ie)) {
            fleet_kill_now(s, i);
            fleet_finish_instance(s, i, BATON_WE_RECLAIMED, 137, now,
                            "killed on restart: its metadata port %d could not be served again (%s)", in->port, ie.msg);
            continue;
        }
        if (in->state == BATON_W_NOTICED && l->imds) {
            double left = (in->t_deadline - now) / s->scale;
            baton_imds_interrupt(l->imds, in->interrupted == BATON_INT_NOTICE ? "terminate" : "stop", left > 0.001 ? left : 0.001);
        }
        char cdir[4400];
        fleet_ckpt_dir(s, in->volume, cdir, sizeof cdir);
        l->last_ckpt = fleet_ckpt_newest_name(cdir);
        s->sum->adopted++;
        cJSON *d = cJSON_CreateObject();
        if (d) cJSON_AddNumberToObject(d, "pid", in->pid);
        fleet_log_event(s, "adopt", (int)i, in->task, fleet_wstate_name(in->state), fleet_wstate_name(in->state), d,
                  "adopted the running worker (pid %d, metadata on port %d)", in->pid, in->port);
    }
    return 0;
}

static void clean_volumes(sup *s)
{
    /* A move interrupted by a supervisor crash leaves either a temporary copy or an extra complete
     * copy; the task's recorded volume is the one to keep (it always exists: see fleet_volume.c). */
    for (size_t t = 0; t < s->ntasks; t++) {
        const char *v = s->tasks[t].volume;
        if (!v[0] || !baton_is_dir(v)) continue;
        char pattern[64];
        fleet_fmt(pattern, sizeof pattern, "vol-%zu-", t);
        for (size_t z = 0; z < s->job->nzones; z++) {
            char zdir[4400];
            fleet_fmt(zdir, sizeof zdir, "%s/volumes/%s", s->dir, s->job->zones[z]);
            char **names = NULL;
            size_t n = 0;
            DIR *d = opendir(zdir);
            if (!d) continue;
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strncmp(e->d_name, pattern, strlen(pattern)) != 0) continue;
                char full[4600];
                fleet_fmt(full, sizeof full, "%s/%s", zdir, e->d_name);
                if (strcmp(full, v) == 0) continue;
                char **p = realloc(names, (n + 1) * sizeof *p);
                if (!p) break;
                names = p;
                names[n++] = strdup(full);
            }
            closedir(d);
            for (size_t k = 0; k < n; k++) {
                if (names[k]) {
                    fleet_log_event(s, "volume", -1, (int)t, NULL, NULL, NULL, "volume: removing the stale copy %s (task %zu's volume is %s)",
                              names[k], t, v);
                    baton_remove_tree(names[k]);
                }
                free(names[k]);
            }
            free(names);
        }
    }
}

static void summarise(sup *s)
{
    baton_fleet_summary *m = s->sum;
    m->tasks = (int)s->ntasks;
    m->tasks_done = m->tasks_failed = 0;
    for (size_t t = 0; t < s->ntasks; t++) {
        m->tasks_done += s->tasks[t].state == BATON_TASK_DONE;
        m->tasks_failed += s->tasks[t].state == BATON_TASK_FAILED;
    }
    m->instances = (int)s->ninsts;
    m->interruptions = m->with_notice = m->without_notice = m->crashes = 0;
    for (size_t i = 0; i < s->ninsts; i++) {
        const baton_fleet_inst *in = &s->insts[i];
        if (!fleet_wstate_terminal(in->state) || in->state == BATON_W_CANCELLED) continue;
        if (in->interrupted == BATON_INT_NOTICE) m->with_notice++;
        if (in->interrupted == BATON_INT_NO_NOTICE) m->without_notice++;
        m->crashes += in->state == BATON_W_CRASHED;
    }
    m->interruptions = m->with_notice + m->without_notice;
    fleet_fmt(m->state, sizeof m->state, "%s", s->rec.state);
    m->sim_s = s->rec.t_end >= 0 ? s->rec.t_end : fleet_now(s);
}

static void write_reports(sup *s)
{
    baton_fleet_report r;
    baton_err e = {0};
    if (baton_fleet_report_load(s->dir, &r, &e)) {
        baton_log(BATON_LOG_WARN, "report: %s", e.msg);
        return;
    }
    char path[4200];
    fleet_fmt(path, sizeof path, "%s/timeline.svg", s->dir);
    if (baton_fleet_report_svg(&r, path, &e)) baton_log(BATON_LOG_WARN, "%s", e.msg);
    char *json = baton_fleet_report_json(&r, 0);
    fleet_fmt(path, sizeof path, "%s/report.json", s->dir);
    if (json && baton_file_write_atomic(path, json, strlen(json), &e)) baton_log(BATON_LOG_WARN, "%s", e.msg);
    free(json);
    baton_fleet_report_free(&r);
}

static int open_lock(const char *dir, int *fd_out, baton_err *err)
{
    char path[4200];
    fleet_fmt(path, sizeof path, "%s/supervisor.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return baton_err_set(err, BATON_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    *fd_out = fd;
    return 0;
}

/* ------------------------------------------------------------------ baton_fleet_run's stages */
static sup *sup_new(const baton_job *job, const baton_fleet_opts *o, baton_fleet_summary *sum)
{
    sup *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->jc = *job;
    s->job = &s->jc;
    s->o = o;
    s->sum = sum;
    s->lock_fd = -1;
    if (o->seed_set) s->jc.market.seed = o->seed;
    if (o->hazard_set) s->jc.market.hazard_scale = o->hazard_scale;
    if (o->hazard_set && o->hazard_scale > 0) s->jc.market.random = 1;
    return s;
}

static void sup_free(sup *s)
{
    for (size_t i = 0; i < s->ninsts && s->lv; i++)
        if (s->lv[i].imds) baton_imds_stop(s->lv[i].imds);
    fleet_market_free(&s->market);
    fleet_db_close(s->db);
    if (s->lock_fd >= 0) close(s->lock_fd);
    for (size_t t = 0; t < s->ntasks; t++) free(s->tasks[t].command);
    free(s->tasks);
    free(s->insts);
    free(s->lv);
    free(s->gangs);
    free(s->rec.jobfile_text);
    free(s);
}

/* The job's state folder (and run/, volumes/, snapshots/), held by its lock; its database and the
 * market. sum->dir names the folder. */
static int open_state(sup *s, baton_err *err)
{
    const baton_job *job = s->job;
    const baton_fleet_opts *o = s->o;
    char rel[4096], sub[4200];
    int rc = baton_fleet_job_dir(o->state_dir ? o->state_dir : job->state_dir, job->name, rel, sizeof rel, err);
    if (!rc && (rc = baton_mkdir_p(rel, err))) baton_err_prefix(err, "state folder");
    static const char *const subs[] = {"run", "volumes", "snapshots"};
    for (size_t k = 0; !rc && k < 3; k++) {
        fleet_fmt(sub, sizeof sub, "%s/%s", rel, subs[k]);
        if ((rc = baton_mkdir_p(sub, err))) baton_err_prefix(err, "state folder");
    }
    if (!rc && !realpath(rel, s->dir)) rc = baton_err_set(err, BATON_ERR_IO, "%s: %s", rel, strerror(errno));
    if (!rc && access(s->dir, W_OK) != 0)
        rc = baton_err_set(err, BATON_ERR_IO, "state folder %s is not writable: %s", s->dir, strerror(errno));
    fleet_fmt(s->sum->dir, sizeof s->sum->dir, "%s", s->dir);
    if (!rc) rc = open_lock(s->dir, &s->lock_fd, err);
    if (!rc && flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
        rc = baton_err_set(err, BATON_ERR_ARG, "job %s is already being run by another supervisor (%s/supervisor.lock is held)",
                           job->name, s->dir);
    if (!rc) rc = fleet_db_open(s->dir, &s->db, err);
    if (!rc) rc = fleet_market_init(&s->market, s->job, err);
    if (!rc && o->interrupts) rc = fleet_market_set_schedule(&s->market, o->interrupts, err);
    return rc;
}

/* A job that already ended (done or failed): its records summarised, and said so. */
static void take_ended(sup *s, baton_fleet_records *r)
{
    const int changed = !same_commands(s, r);
    s->rec = r->job;
    r->job.jobfile_text = NULL;
    s->tasks = r->tasks;
    s->ntasks = r->ntasks;
    s->insts = r->insts;
    s->ninsts = r->ninsts;
    r->tasks = NULL, r->insts = NULL, r->ntasks = r->ninsts = 0;
    s->scale = s->rec.time_scale;
    summarise(s);
    if (changed) {
        /* the user edited the file after the job ended: say so, and how to run the new one */
        baton_log(BATON_LOG_WARN, "job %s already ended (%s), and %s has changed since: its commands differ from "
                  "the ones that ran. To run the new commands, give the job another name, or remove %s",
                  s->rec.name, s->rec.state, s->job->path, s->dir);
    } else if (!s->o->quiet) {
        fprintf(stderr, "fleet: job %s already ended (%s); nothing to run\n", s->rec.name, s->rec.state);
    }
}

/* A job seen for the first time: its record and one waiting task per command, saved. */
static int start_new(sup *s, double wall0, baton_err *err)
{
    const baton_job *job = s->job;
    const baton_fleet_opts *o = s->o;
    fleet_fmt(s->rec.name, sizeof s->rec.name, "%s", job->name);
    int rc = fleet_job_step(s, FLEET_JE_START, err);
    s->scale = o->time_scale > 0 ? o->time_scale : job->market.time_scale;
    s->rec.time_scale = s->scale;
    s->rec.origin = wall0;
    s->rec.t_end = -1;
    fleet_fmt(s->rec.jobfile, sizeof s->rec.jobfile, "%s", job->path);
    s->rec.jobfile_text = o->jobfile_text ? baton_job_redact_env(job, o->jobfile_text) : NULL;   /* no secrets kept */
    s->ntasks = job->ncommands;
    s->tasks = calloc(s->ntasks, sizeof *s->tasks);
    if (!s->tasks) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    for (size_t t = 0; !rc && t < s->ntasks; t++) {
        s->tasks[t].idx = (int)t;
        s->tasks[t].command = strdup(job->commands[t]);
        s->tasks[t].final_step = -1;
        if (!s->tasks[t].command) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        else fleet_save_task(s, (int)t);
    }
    return rc;
}

/* This process as the job's supervisor, said in the log with the market's description; a
 * recovered job's stale volume copies removed. */
static void announce(sup *s, int found)
{
    s->rec.supervisor_pid = (int)getpid();
    s->rec.supervisor_start = fleet_proc_start_time((int)getpid());
    fleet_save_job(s);
    char ts[32];
    baton_fleet_fmt_duration(s->job->market.notice, ts, sizeof ts);
    fleet_log_event(s, "job", -1, -1, NULL, "running", NULL, "%s job %s: %zu task(s), capacity %d, %s, time x%g, notice %s",
                    found ? "supervising" : "starting", s->rec.name, s->ntasks, s->job->target_capacity,
                    baton_alloc_name(s->job->alloc), s->scale, ts);
    char md[768];
    fleet_market_describe(&s->market, md, sizeof md);
    fleet_log_event(s, "market", -1, -1, NULL, NULL, NULL, "market: %s", md);
    if (found) clean_volumes(s);
}

/* The loop, with SIGINT and SIGTERM cancelling it (o->cancel: from the start). */
static int supervise(sup *s, baton_err *err)
{
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    fleet_stop_flag = s->o->cancel ? 1 : 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = fleet_loop(s, err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc;
}

/* The job's end: tasks left waiting or running cancelled, the job done, failed or cancelled, its
 * record saved, the summary and the report files written. An error is the database's. */
static int finish(sup *s, baton_err *err)
{
    int failed = 0, cancelled = 0, rc = BATON_OK;
    for (size_t t = 0; t < s->ntasks; t++) {
        if (s->tasks[t].state == BATON_TASK_FAILED) failed = 1;
        if (s->tasks[t].state == BATON_TASK_WAITING || s->tasks[t].state == BATON_TASK_RUNNING) {
            fleet_task_transition(s, (int)t, BATON_TE_CANCEL, NULL);
            cancelled = 1;
        }
    }
    fleet_job_step(s, failed ? FLEET_JE_FAIL : cancelled ? FLEET_JE_CANCEL : FLEET_JE_DONE, NULL);   /* running: always allowed */
    s->rec.t_end = fleet_now(s);
    s->rec.supervisor_pid = 0;
    fleet_save_job(s);
    fleet_log_event(s, "job", -1, -1, "running", s->rec.state, NULL, "job %s %s", s->rec.name, s->rec.state);
    if (s->db_failed) rc = baton_err_set(err, s->db_err.code, "%s", s->db_err.msg);
    summarise(s);
    write_reports(s);
    return rc;
}

int baton_fleet_run(const baton_job *job, const baton_fleet_opts *o, baton_fleet_summary *sum, baton_err *err)
{
    memset(sum, 0, sizeof *sum);
    if (job->backend != BATON_BACKEND_LOCAL)
        return baton_err_set(err, BATON_ERR_ARG, "%s: backend %s is not run by the local supervisor", job->path,
                             baton_backend_name(job->backend));
    sup *s = sup_new(job, o, sum);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    const double wall0 = baton_wall_now();
    baton_fleet_records r;
    memset(&r, 0, sizeof r);
    int found = 0, ended = 0;
    int rc = open_state(s, err);
    if (!rc) rc = fleet_db_load(s->db, 0, &r, &found, err);
    if (!rc && found && fleet_job_final(r.job.state)) {
        take_ended(s, &r);
        ended = 1;
    } else if (!rc) {
        rc = found ? recover(s, &r, err) : start_new(s, wall0, err);
    }
    if (!rc && !ended) {
        announce(s, found);
        rc = supervise(s, err);
        if (!rc) rc = finish(s, err);
    }
    sum->wall_s = baton_wall_now() - wall0;
    fleet_records_free(&r);
    sup_free(s);
    return rc;
}

int baton_fleet_cancel(const char *job_dir, double grace_s, baton_err *err)
{
    char dbpath[4200];
    fleet_fmt(dbpath, sizeof dbpath, "%s/fleet.db", job_dir);
    if (access(dbpath, F_OK) != 0) return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no fleet job there", job_dir);
    baton_fleet_db *db;
    baton_fleet_records r;
    int found = 0, lock = -1;
    int rc = fleet_db_open(job_dir, &db, err);
    if (rc) return rc;
    rc = fleet_db_load(db, 0, &r, &found, err);
    fleet_db_close(db);
    if (rc) return rc;
    if (!found || fleet_job_state_parse(r.job.state) != FLEET_JOB_RUNNING) {
        rc = baton_err_set(err, BATON_ERR_ARG, "job at %s is not running (%s)", job_dir, found ? r.job.state : "empty");
        fleet_records_free(&r);
        return rc;
    }
    if ((rc = open_lock(job_dir, &lock, err))) {
        fleet_records_free(&r);
        return rc;
    }
    if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
        /* a supervisor holds the job: ask it to cancel, wait for it to finish */
        if (fleet_proc_same(r.job.supervisor_pid, r.job.supervisor_start)) kill(r.job.supervisor_pid, SIGTERM);
        double until = baton_now() + grace_s + 30;
        while (flock(lock, LOCK_EX | LOCK_NB) != 0 && baton_now() < until) usleep(50000);
        close(lock);
        fleet_records_free(&r);
        return BATON_OK;
    }
    close(lock);
    /* nobody runs it: become its supervisor just long enough to stop it cleanly */
    baton_job job;
    char state_dir[4096];
    baton_path_dirname(job_dir, state_dir, sizeof state_dir);
    rc = baton_job_parse(r.job.jobfile[0] ? r.job.jobfile : "job", r.job.jobfile_text ? r.job.jobfile_text : "",
                         r.job.jobfile_text ? strlen(r.job.jobfile_text) : 0, &job, err);
    fleet_records_free(&r);
    if (rc) return baton_err_prefix(err, "the job file kept in %s", dbpath);
    baton_fleet_opts o;
    baton_fleet_opts_default(&o);
    o.state_dir = state_dir;
    o.cancel = 1;
    o.quiet = 1;
    baton_fleet_summary sum;
    rc = baton_fleet_run(&job, &o, &sum, err);
    baton_job_free(&job);
    return rc;
}
