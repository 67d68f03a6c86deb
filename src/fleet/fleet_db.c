/* fleet_db.c — the fleet's memory: an SQLite database (STATE/JOB/fleet.db: the job, its tasks,
 * every instance, every event) written through as the supervisor runs, and an append-only JSONL
 * copy of the events (events.jsonl) for tools that read logs.
 *
 * Contract: the database is the authority a restarted supervisor recovers from, so every save is a
 * complete row (INSERT OR REPLACE); callers group related saves in begin/commit. WAL mode, a busy
 * timeout so `baton fleet status` can read while a supervisor writes. Each JSONL line is written
 * with one append. */
#include "fleet_parts.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct baton_fleet_db {
    sqlite3 *db;
    int jsonl;
    char path[4096];
};

static const char *schema =
    "CREATE TABLE IF NOT EXISTS job(id INTEGER PRIMARY KEY CHECK(id = 1), name TEXT, state TEXT,"
    " origin REAL, time_scale REAL, t_end REAL, supervisor_pid INTEGER, supervisor_start INTEGER,"
    " next_volume INTEGER, next_snapshot INTEGER, jobfile TEXT, jobfile_text TEXT);"
    "CREATE TABLE IF NOT EXISTS tasks(idx INTEGER PRIMARY KEY, command TEXT, state TEXT, crashes INTEGER,"
    " launches INTEGER, interruptions INTEGER, volume TEXT, zone TEXT, final_step INTEGER);"
    "CREATE TABLE IF NOT EXISTS instances(id INTEGER PRIMARY KEY, name TEXT, task INTEGER, launch INTEGER,"
    " pool INTEGER, type TEXT, zone TEXT, spot_price REAL, on_demand_price REAL, state TEXT, reason TEXT,"
    " pid INTEGER, pid_start INTEGER, port INTEGER, t_request REAL, t_running REAL, t_first_step REAL,"
    " t_notice REAL, t_deadline REAL, t_end REAL, plan_after REAL, plan_notice REAL, plan_after_steps INTEGER,"
    " exit_code INTEGER,"
    " interrupted INTEGER, resumed_step INTEGER, reached_step INTEGER, ckpt_step INTEGER, volume TEXT);"
    "CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY, t_sim REAL, t_wall REAL, kind TEXT,"
    " inst INTEGER, task INTEGER, from_state TEXT, to_state TEXT, detail TEXT);";

static int db_err(baton_fleet_db *d, baton_err *err, const char *what)
{
    return baton_err_set(err, BATON_ERR_IO, "%s: %s: %s", d->path, what, sqlite3_errmsg(d->db));
}

int fleet_db_open(const char *dir, baton_fleet_db **out, baton_err *err)
{
    *out = NULL;
    baton_fleet_db *d = calloc(1, sizeof *d);
    if (!d) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    d->jsonl = -1;
    char jpath[4200];
    if (baton_path_join(d->path, sizeof d->path, dir, "fleet.db", err) ||
        baton_path_join(jpath, sizeof jpath, dir, "events.jsonl", err)) {
        free(d);
        return err->code;
    }
    if (sqlite3_open_v2(d->path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL) !=
        SQLITE_OK) {
        int rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot open: %s", d->path,
                               d->db ? sqlite3_errmsg(d->db) : "out of memory");
        sqlite3_close(d->db);
        free(d);
        return rc;
    }
    sqlite3_busy_timeout(d->db, 10000);
    char *msg = NULL;
    if (sqlite3_exec(d->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(d->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = baton_err_set(err, BATON_ERR_IO, "%s: %s", d->path, msg ? msg : "cannot create the schema");
        sqlite3_free(msg);
        sqlite3_close(d->db);
        free(d);
        return rc;
    }
    d->jsonl = open(jpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (d->jsonl < 0) {
        int rc = baton_err_set(err, BATON_ERR_IO, "%s: cannot open: %s", jpath, strerror(errno));
        sqlite3_close(d->db);
        free(d);
        return rc;
    }
    *out = d;
    return BATON_OK;
}

void fleet_db_close(baton_fleet_db *d)
{
    if (!d) return;
    sqlite3_close(d->db);
    if (d->jsonl >= 0) close(d->jsonl);
    free(d);
}

int fleet_db_begin(baton_fleet_db *d, baton_err *err)
{
    return sqlite3_exec(d->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : db_err(d, err, "begin");
}

int fleet_db_commit(baton_fleet_db *d, baton_err *err)
{
    return sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : db_err(d, err, "commit");
}

/* Bind a list of values described by a format: s text, i int64, d double. */
static int run_stmt(baton_fleet_db *d, const char *sql, const char *fmt, baton_err *err, ...)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK) return db_err(d, err, "prepare");
    va_list ap;
    va_start(ap, err);
    for (int i = 0; fmt[i]; i++) {
        if (fmt[i] == 's') sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else if (fmt[i] == 'i') sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        else sqlite3_bind_double(st, i + 1, va_arg(ap, double));
    }
    va_end(ap);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_err(d, err, "write");
    sqlite3_finalize(st);
    return rc;
}

int fleet_db_save_job(baton_fleet_db *d, const baton_fleet_job *j, baton_err *err)
{
    return run_stmt(d, "INSERT OR REPLACE INTO job VALUES(1,?,?,?,?,?,?,?,?,?,?,?)", "ssdddiiiiss", err, j->name,
                    j->state, j->origin, j->time_scale, j->t_end, (int64_t)j->supervisor_pid,
                    (int64_t)j->supervisor_start, (int64_t)j->next_volume, (int64_t)j->next_snapshot, j->jobfile,
                    j->jobfile_text ? j->jobfile_text : "");
}

int fleet_db_save_task(baton_fleet_db *d, const baton_fleet_task *t, baton_err *err)
{
    return run_stmt(d, "INSERT OR REPLACE INTO tasks VALUES(?,?,?,?,?,?,?,?,?)", "issiiissi", err, (int64_t)t->idx,
                    t->command, fleet_task_state_name(t->state), (int64_t)t->crashes, (int64_t)t->launches,
                    (int64_t)t->interruptions, t->volume, t->zone, t->final_step);
}

int fleet_db_save_inst(baton_fleet_db *d, const baton_fleet_inst *i, baton_err *err)
{
    return run_stmt(d, "INSERT OR REPLACE INTO instances VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    "isiiissddssiiiddddddddiiiiiis", err, (int64_t)i->id, i->name, (int64_t)i->task,
                    (int64_t)i->launch, (int64_t)i->pool, i->type, i->zone, i->spot_price, i->on_demand_price,
                    fleet_wstate_name(i->state), i->reason, (int64_t)i->pid, (int64_t)i->pid_start,
                    (int64_t)i->port, i->t_request, i->t_running, i->t_first_step, i->t_notice, i->t_deadline,
                    i->t_end, i->plan_after, i->plan_notice, i->plan_after_steps, (int64_t)i->exit_code, (int64_t)i->interrupted,
                    i->resumed_step, i->reached_step, i->ckpt_step, i->volume);
}

int fleet_db_event(baton_fleet_db *d, baton_fleet_event *ev, baton_err *err)
{
    const char *detail = ev->detail ? ev->detail : "{}";
    int rc = run_stmt(d, "INSERT INTO events(t_sim,t_wall,kind,inst,task,from_state,to_state,detail) VALUES(?,?,?,?,?,?,?,?)",
                      "ddsiisss", err, ev->t_sim, ev->t_wall, ev->kind, (int64_t)ev->inst, (int64_t)ev->task,
                      ev->from, ev->to, detail);
    if (rc) return rc;
    ev->seq = sqlite3_last_insert_rowid(d->db);
    cJSON *o = cJSON_CreateObject();
    if (!o) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
    cJSON_AddNumberToObject(o, "t_sim", ev->t_sim);
    cJSON_AddNumberToObject(o, "t_wall", ev->t_wall);
    cJSON_AddStringToObject(o, "kind", ev->kind);
    if (ev->inst > 0) cJSON_AddNumberToObject(o, "instance", ev->inst);
    if (ev->task >= 0) cJSON_AddNumberToObject(o, "task", ev->task);
    if (ev->from[0]) cJSON_AddStringToObject(o, "from", ev->from);
    if (ev->to[0]) cJSON_AddStringToObject(o, "to", ev->to);
    cJSON *dj = detail ? baton_jr_value(detail, strlen(detail)) : NULL;
    if (dj) cJSON_AddItemToObject(o, "detail", dj);
    char *line = baton_json_print(o, 0);
    cJSON_Delete(o);
    if (!line) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    size_t n = strlen(line);
    line[n] = '\n';   /* replaces the NUL; written with its length */
    rc = baton_write_all(d->jsonl, line, n + 1, "events.jsonl", err);
    free(line);
    return rc;
}

static const char *col_text(sqlite3_stmt *st, int c)
{
    const unsigned char *t = sqlite3_column_text(st, c);
    return t ? (const char *)t : "";
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

static int load_job(baton_fleet_db *d, baton_fleet_job *j, int *found, baton_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, "SELECT name,state,origin,time_scale,t_end,supervisor_pid,supervisor_start,"
                                  "next_volume,next_snapshot,jobfile,jobfile_text FROM job WHERE id = 1",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(d, err, "read");
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *found = 1;
        copy_text(j->name, sizeof j->name, col_text(st, 0));
        copy_text(j->state, sizeof j->state, col_text(st, 1));
        j->origin = sqlite3_column_double(st, 2);
        j->time_scale = sqlite3_column_double(st, 3);
        j->t_end = sqlite3_column_double(st, 4);
        j->supervisor_pid = sqlite3_column_int(st, 5);
        j->supervisor_start = (uint64_t)sqlite3_column_int64(st, 6);
        j->next_volume = sqlite3_column_int(st, 7);
        j->next_snapshot = sqlite3_column_int(st, 8);
        copy_text(j->jobfile, sizeof j->jobfile, col_text(st, 9));
        j->jobfile_text = strdup(col_text(st, 10));
        if (!j->jobfile_text) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    sqlite3_finalize(st);
    return rc;
}

static int load_tasks(baton_fleet_db *d, baton_fleet_records *r, baton_err *err)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(d->db, "SELECT idx,command,state,crashes,launches,interruptions,volume,zone,final_step"
                                  " FROM tasks ORDER BY idx", -1, &st, NULL) != SQLITE_OK)
        return db_err(d, err, "read");
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        baton_fleet_task *p = realloc(r->tasks, (r->ntasks + 1) * sizeof *p);
        if (!p) { rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory"); break; }
        r->tasks = p;
        baton_fleet_task *t = &p[r->ntasks++];
        memset(t, 0, sizeof *t);
        t->idx = sqlite3_column_int(st, 0);
        t->command = strdup(col_text(st, 1));
        const char *s = col_text(st, 2);
        for (int k = 0; k <= BATON_TASK_CANCELLED; k++)
            if (!strcmp(s, fleet_task_state_name((baton_task_state)k))) t->state = (baton_task_state)k;
        t->crashes = sqlite3_column_int(st, 3);
        t->launches = sqlite3_column_int(st, 4);
        t->interruptions = sqlite3_column_int(st, 5);
        copy_text(t->volume, sizeof t->volume, col_text(st, 6));
        copy_text(t->zone, sizeof t->zone, col_text(st, 7));
        t->final_step = sqlite3_column_int64(st, 8);
        if (!t->command) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    sqlite3_finalize(st);
    return rc;
}

/* One row of instances (SELECT *, in the table's column order). */
static void read_inst(sqlite3_stmt *st, baton_fleet_inst *i)
{
    int c = 0;
    i->id = sqlite3_column_int(st, c++);
    copy_text(i->name, sizeof i->name, col_text(st, c++));
    i->task = sqlite3_column_int(st, c++);
    i->launch = sqlite3_column_int(st, c++);
    i->pool = sqlite3_column_int(st, c++);
    copy_text(i->type, sizeof i->type, col_text(st, c++));
    copy_text(i->zone, sizeof i->zone, col_text(st, c++));
    i->spot_price = sqlite3_column_double(st, c++);
    i->on_demand_price = sqlite3_column_double(st, c++);
    int s = fleet_wstate_parse(col_text(st, c++));
    i->state = s < 0 ? BATON_W_CRASHED : (baton_wstate)s;
    copy_text(i->reason, sizeof i->reason, col_text(st, c++));
    i->pid = sqlite3_column_int(st, c++);
    i->pid_start = (uint64_t)sqlite3_column_int64(st, c++);
    i->port = sqlite3_column_int(st, c++);
    double *times[] = {&i->t_request, &i->t_running, &i->t_first_step, &i->t_notice, &i->t_deadline,
                       &i->t_end, &i->plan_after, &i->plan_notice};
    for (size_t k = 0; k < sizeof times / sizeof times[0]; k++) *times[k] = sqlite3_column_double(st, c++);
    i->plan_after_steps = sqlite3_column_int64(st, c++);
    i->exit_code = sqlite3_column_int(st, c++);
    i->interrupted = (baton_int_kind)sqlite3_column_int(st, c++);
    i->resumed_step = sqlite3_column_int64(st, c++);
    i->reached_step = sqlite3_column_int64(st, c++);
    i->ckpt_step = sqlite3_column_int64(st, c++);
    copy_text(i->volume, sizeof i->volume, col_text(st, c++));
}

static int load_insts(baton_fleet_db *d, baton_fleet_records *r, baton_err *err)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(d->db, "SELECT * FROM instances ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return db_err(d, err, "read");
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        baton_fleet_inst *p = realloc(r->insts, (r->ninsts + 1) * sizeof *p);
        if (!p) { rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory"); break; }
        r->insts = p;
        baton_fleet_inst *i = &p[r->ninsts++];
        memset(i, 0, sizeof *i);
        read_inst(st, i);
    }
    sqlite3_finalize(st);
    return rc;
}

static int load_events(baton_fleet_db *d, baton_fleet_records *r, baton_err *err)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(d->db, "SELECT seq,t_sim,t_wall,kind,inst,task,from_state,to_state,detail FROM events"
                                  " ORDER BY seq", -1, &st, NULL) != SQLITE_OK)
        return db_err(d, err, "read");
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        baton_fleet_event *p = realloc(r->events, (r->nevents + 1) * sizeof *p);
        if (!p) { rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory"); break; }
        r->events = p;
        baton_fleet_event *e = &p[r->nevents++];
        memset(e, 0, sizeof *e);
        e->seq = sqlite3_column_int64(st, 0);
        e->t_sim = sqlite3_column_double(st, 1);
        e->t_wall = sqlite3_column_double(st, 2);
        copy_text(e->kind, sizeof e->kind, col_text(st, 3));
        e->inst = sqlite3_column_int(st, 4);
        e->task = sqlite3_column_int(st, 5);
        copy_text(e->from, sizeof e->from, col_text(st, 6));
        copy_text(e->to, sizeof e->to, col_text(st, 7));
        e->detail = strdup(col_text(st, 8));
        if (!e->detail) rc = baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    sqlite3_finalize(st);
    return rc;
}

static int load_rows(baton_fleet_db *d, int with_events, baton_fleet_records *r, int *found, baton_err *err)
{
    memset(r, 0, sizeof *r);
    *found = 0;
    int rc = load_job(d, &r->job, found, err);
    if (rc || !*found) return rc;
    rc = load_tasks(d, r, err);
    if (!rc) rc = load_insts(d, r, err);
    if (!rc && with_events) rc = load_events(d, r, err);
    return rc;
}

/* Values a damaged or hand-edited database may hold that the report's arithmetic must not meet:
 * steps beyond 2^53 (or below -1), times and prices that are not finite, negative counts. */
#define STEP_MAX 9007199254740992.0
static int bad_step(int64_t v) { return v < -1 || (double)v > STEP_MAX; }
static int bad_time(double v) { return !isfinite(v) || fabs(v) > 1e15; }

static int check_rows(const baton_fleet_db *d, const baton_fleet_records *r, baton_err *err)
{
    const baton_fleet_job *j = &r->job;
    if (bad_time(j->origin) || bad_time(j->t_end) || !(j->time_scale > 0) || bad_time(j->time_scale))
        return baton_err_set(err, BATON_ERR_CORRUPT, "%s: job: origin %g, time_scale %g or t_end %g out of range",
                             d->path, j->origin, j->time_scale, j->t_end);
    for (size_t k = 0; k < r->ntasks; k++) {
        const baton_fleet_task *t = &r->tasks[k];
        if (t->crashes < 0 || t->launches < 0 || t->interruptions < 0 || bad_step(t->final_step))
            return baton_err_set(err, BATON_ERR_CORRUPT, "%s: task %d: a count or final_step (%lld) out of range",
                                 d->path, t->idx, (long long)t->final_step);
    }
    for (size_t k = 0; k < r->ninsts; k++) {
        const baton_fleet_inst *i = &r->insts[k];
        const double times[] = {i->t_request, i->t_running, i->t_first_step, i->t_notice, i->t_deadline,
                                i->t_end, i->plan_after, i->plan_notice, i->spot_price, i->on_demand_price};
        for (size_t t = 0; t < sizeof times / sizeof times[0]; t++)
            if (bad_time(times[t]))
                return baton_err_set(err, BATON_ERR_CORRUPT, "%s: instance %d: a time or price (%g) out of range",
                                     d->path, i->id, times[t]);
        if (bad_step(i->resumed_step) || bad_step(i->reached_step) || bad_step(i->ckpt_step) ||
            i->plan_after_steps < 0 || (double)i->plan_after_steps > STEP_MAX || i->spot_price < 0 ||
            i->on_demand_price < 0 || i->interrupted < BATON_INT_NONE || i->interrupted > BATON_INT_NO_NOTICE)
            return baton_err_set(err, BATON_ERR_CORRUPT,
                                 "%s: instance %d: steps %lld/%lld/%lld, a price or the interruption kind out of range",
                                 d->path, i->id, (long long)i->resumed_step, (long long)i->reached_step,
                                 (long long)i->ckpt_step);
    }
    for (size_t k = 0; k < r->nevents; k++)
        if (bad_time(r->events[k].t_sim) || bad_time(r->events[k].t_wall))
            return baton_err_set(err, BATON_ERR_CORRUPT, "%s: event %lld: a time out of range", d->path,
                                 (long long)r->events[k].seq);
    return BATON_OK;
}

int fleet_db_load(baton_fleet_db *d, int with_events, baton_fleet_records *r, int *found, baton_err *err)
{
    int rc = load_rows(d, with_events, r, found, err);
    return rc || !*found ? rc : check_rows(d, r, err);
}

void fleet_records_free(baton_fleet_records *r)
{
    free(r->job.jobfile_text);
    for (size_t i = 0; i < r->ntasks; i++) free(r->tasks[i].command);
    free(r->tasks);
    free(r->insts);
    for (size_t i = 0; i < r->nevents; i++) free(r->events[i].detail);
    free(r->events);
    memset(r, 0, sizeof *r);
}
