/* fuzz_fleet_report.c — libFuzzer target: the fleet's report and status reader
 * (baton_fleet_report_load of a job's fleet.db, then the text report, its JSON and its SVG
 * timeline: what `baton fleet status` and `baton fleet report` show) over a database whose values
 * are hostile. A well-formed job (2 tasks, 3 instances, events) is written once through the fleet
 * database's own API; each input is a list of updates to it — a column of one of its tables and a
 * value: an integer, a double (NaN and infinities included), text (with NUL and control bytes) or
 * NULL, each of any type SQLite lets any column hold. The reader must turn every such database
 * into a report or an error value with a message; nothing may crash, leak or overflow. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], db[128], tmpl[128], svg[128];

static const char *const cols[][2] = {
    {"job", "name"}, {"job", "state"}, {"job", "origin"}, {"job", "time_scale"}, {"job", "t_end"},
    {"job", "supervisor_pid"}, {"job", "jobfile_text"}, {"tasks", "command"}, {"tasks", "state"},
    {"tasks", "crashes"}, {"tasks", "launches"}, {"tasks", "interruptions"}, {"tasks", "final_step"},
    {"tasks", "idx"}, {"instances", "name"}, {"instances", "task"}, {"instances", "launch"},
    {"instances", "pool"}, {"instances", "type"}, {"instances", "spot_price"}, {"instances", "on_demand_price"},
    {"instances", "state"}, {"instances", "reason"}, {"instances", "t_request"}, {"instances", "t_running"},
    {"instances", "t_first_step"}, {"instances", "t_notice"}, {"instances", "t_end"}, {"instances", "exit_code"},
    {"instances", "interrupted"}, {"instances", "resumed_step"}, {"instances", "reached_step"},
    {"instances", "ckpt_step"}, {"instances", "id"}, {"events", "t_sim"}, {"events", "kind"}, {"events", "inst"},
    {"events", "task"}, {"events", "from_state"}, {"events", "to_state"}, {"events", "detail"},
};

static void cleanup(void)
{
    unlink(db);
    unlink(tmpl);
    unlink(svg);
    char p[160];
    snprintf(p, sizeof p, "%s/events.jsonl", dir);
    unlink(p);
    rmdir(dir);
}

static void make_template(void)
{
    snprintf(dir, sizeof dir, "/tmp/baton-fuzz-fleet-%d", (int)getpid());
    snprintf(db, sizeof db, "%s/fleet.db", dir);
    snprintf(tmpl, sizeof tmpl, "%s/template.db", dir);
    snprintf(svg, sizeof svg, "%s/timeline.svg", dir);
    if (mkdir(dir, 0700) && access(dir, W_OK)) abort();
    atexit(cleanup);
    baton_fleet_db *d;
    baton_err err = {0};
    if (fleet_db_open(dir, &d, &err)) abort();
    baton_fleet_job j = {.origin = 1.7e9, .time_scale = 60, .t_end = 900, .supervisor_pid = 0};
    snprintf(j.name, sizeof j.name, "fz");
    snprintf(j.state, sizeof j.state, "done");
    if (fleet_db_save_job(d, &j, &err)) abort();
    for (int t = 0; t < 2; t++) {
        baton_fleet_task tk = {.idx = t, .command = "baton train", .state = BATON_TASK_DONE, .launches = 2,
                               .interruptions = 1, .final_step = 100};
        if (fleet_db_save_task(d, &tk, &err)) abort();
    }
    for (int i = 0; i < 3; i++) {
        baton_fleet_inst in = {.id = i + 1, .task = i % 2, .launch = i / 2, .pool = i, .spot_price = 0.03,
                               .on_demand_price = 0.09, .state = i ? BATON_W_DONE : BATON_W_STOPPED,
                               .t_request = 10.0 * i, .t_running = 10.0 * i + 90, .t_first_step = 10.0 * i + 95,
                               .t_notice = i ? -1 : 300, .t_deadline = i ? -1 : 420, .t_end = i ? 900 : 410,
                               .exit_code = i ? 0 : 75, .interrupted = i ? BATON_INT_NONE : BATON_INT_NOTICE,
                               .resumed_step = 0, .reached_step = 100, .ckpt_step = i ? 100 : 40};
        snprintf(in.name, sizeof in.name, "i-%d", i);
        snprintf(in.type, sizeof in.type, "c5.large");
        snprintf(in.zone, sizeof in.zone, "us-east-1a");
        snprintf(in.reason, sizeof in.reason, "why");
        if (fleet_db_save_inst(d, &in, &err)) abort();
        baton_fleet_event ev = {.t_sim = 90.0 + i, .inst = i + 1, .task = i % 2, .detail = "{\"message\":\"m\"}"};
        snprintf(ev.kind, sizeof ev.kind, "transition");
        snprintf(ev.from, sizeof ev.from, "LAUNCHING");
        snprintf(ev.to, sizeof ev.to, "RUNNING");
        if (fleet_db_event(d, &ev, &err)) abort();
    }
    fleet_db_close(d);
    if (rename(db, tmpl)) abort();
}

static int copy(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[65536];
    size_t n;
    int ok = a && b;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b && fclose(b)) ok = 0;
    return ok;
}

/* Apply the input's updates: [column byte][kind byte][value...] repeated. */
static void apply(sqlite3 *q, const uint8_t *p, size_t n)
{
    const size_t ncols = sizeof cols / sizeof cols[0];
    while (n >= 2) {
        const char *const *c = cols[p[0] % ncols];
        int kind = p[1] & 3;
        p += 2, n -= 2;
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE %s SET %s = ?", c[0], c[1]);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(q, sql, -1, &st, NULL) != SQLITE_OK) abort();
        if (kind == 0 && n >= 8) {
            int64_t v;
            memcpy(&v, p, 8);
            sqlite3_bind_int64(st, 1, v);
            p += 8, n -= 8;
        } else if (kind == 1 && n >= 8) {
            double v;
            memcpy(&v, p, 8);
            sqlite3_bind_double(st, 1, v);
            p += 8, n -= 8;
        } else if (kind == 2 && n >= 1) {
            size_t len = p[0] < n - 1 ? p[0] : n - 1;
            sqlite3_bind_text(st, 1, (const char *)p + 1, (int)len, SQLITE_TRANSIENT);
            p += 1 + len, n -= 1 + len;
        } else {
            sqlite3_bind_null(st, 1);
        }
        sqlite3_step(st);   /* a constraint may refuse it: the database stays as it was */
        sqlite3_finalize(st);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) make_template();
    if (!copy(tmpl, db)) abort();
    sqlite3 *q;
    if (sqlite3_open(db, &q) != SQLITE_OK) abort();
    apply(q, data, size);
    sqlite3_close(q);
    baton_fleet_report r;
    baton_err err = {0};
    int rc = baton_fleet_report_load(dir, &r, &err);
    if (rc == BATON_OK) {
        FILE *f = fopen("/dev/null", "w");
        if (!f) abort();
        baton_fleet_report_print(f, &r, 1);
        fclose(f);
        char *js = baton_fleet_report_json(&r, 1);
        free(js);
        baton_err e2 = {0};
        if (baton_fleet_report_svg(&r, svg, &e2) != BATON_OK && !e2.msg[0]) abort();
        baton_fleet_report_free(&r);
    } else if (rc >= 0 || !err.msg[0] || !memchr(err.msg, 0, sizeof err.msg)) {
        abort();
    }
    return 0;
}
