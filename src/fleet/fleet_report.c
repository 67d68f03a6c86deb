/* fleet_report.c — what `baton fleet status` and the end of `baton fleet run` show: the job's
 * instances with their cost lines (fleet_cost.c rules), totals, interruptions and work lost, as a
 * table, as JSON, and as an SVG timeline (instances × simulated time; checkpoints, notices, kills
 * and crashes marked). Reads the job's database only; works while a supervisor is running. */
#include "baton/notice.h"
#include "fleet_parts.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Until when an instance counts: its end; while it runs, now — unless the job is stalled and its
 * worker has gone too (nothing runs it any more): then the last thing recorded. */
static double inst_end(const baton_fleet_report *r, const baton_fleet_inst *in)
{
    if (in->t_end >= 0) return in->t_end;
    if (r->stalled && !(in->pid > 0 && fleet_proc_same(in->pid, in->pid_start))) return r->last_sim;
    return r->now_sim;
}

const char *fleet_report_state(const baton_fleet_report *r) { return r->stalled ? "stalled" : r->rec.job.state; }

int64_t fleet_report_task_step(const baton_fleet_report *r, size_t task)
{
    const baton_fleet_task *k = &r->rec.tasks[task];
    if (k->final_step >= 0) return k->final_step;
    int64_t best = -1;
    for (size_t i = 0; i < r->rec.ninsts; i++)
        if (r->rec.insts[i].task == k->idx && r->rec.insts[i].reached_step > best) best = r->rec.insts[i].reached_step;
    return best;
}

static int64_t lost_steps(const baton_fleet_inst *in)
{
    if (!fleet_wstate_terminal(in->state) || in->state == BATON_W_DONE || in->state == BATON_W_CANCELLED) return 0;
    if (in->reached_step < 0 || in->ckpt_step < 0) return 0;
    return in->reached_step > in->ckpt_step ? in->reached_step - in->ckpt_step : 0;
}

/* Each task's result (its volume's BATON_FLEET_RESULT_FILE, else the job's run/task-N.result.json:
 * a JSON object a run left; anything else is no result) and what its instances cost on spot. */
static int load_results(const char *job_dir, baton_fleet_report *r, baton_err *err)
{
    size_t n = r->rec.ntasks;
    r->results = calloc(n ? n : 1, sizeof *r->results);
    r->task_spot_cost = calloc(n ? n : 1, sizeof *r->task_spot_cost);
    if (!r->results || !r->task_spot_cost) {
        baton_fleet_report_free(r);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < r->rec.ninsts; i++)
        if (r->rec.insts[i].task >= 0 && (size_t)r->rec.insts[i].task < n)
            r->task_spot_cost[r->rec.insts[i].task] += r->lines[i].spot_cost;
    for (size_t t = 0; t < n; t++) {
        const baton_fleet_task *k = &r->rec.tasks[t];
        char path[4200];
        if (k->volume[0]) snprintf(path, sizeof path, "%s/%s", k->volume, BATON_FLEET_RESULT_FILE);
        else snprintf(path, sizeof path, "%s/run/task-%d.result.json", job_dir, k->idx);
        uint8_t *data = NULL;
        size_t len = 0;
        baton_err ignore = {0};
        if (baton_file_read_all(path, 1 << 16, &data, &len, &ignore)) continue;
        cJSON *j = baton_jr_value((const char *)data, len);
        free(data);
        if (cJSON_IsObject(j)) r->results[t] = j;
        else cJSON_Delete(j);
    }
    return BATON_OK;
}

cJSON *fleet_event_detail(const baton_fleet_event *ev)
{
    const char *d = ev->detail ? ev->detail : "{}";
    return baton_jr_value(d, strlen(d));
}

int baton_fleet_report_load(const char *job_dir, baton_fleet_report *r, baton_err *err)
{
    memset(r, 0, sizeof *r);
    char dbpath[4200];
    snprintf(dbpath, sizeof dbpath, "%s/fleet.db", job_dir);
    if (access(dbpath, F_OK) != 0) return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no fleet job there", job_dir);
    baton_fleet_db *db;
    int found = 0, rc = fleet_db_open(job_dir, &db, err);
    if (rc) return rc;
    rc = fleet_db_load(db, 1, &r->rec, &found, err);
    fleet_db_close(db);
    if (!rc && !found) rc = baton_err_set(err, BATON_ERR_NOTFOUND, "%s: the job has not started", job_dir);
    if (rc) {
        fleet_records_free(&r->rec);
        return rc;
    }
    const baton_fleet_job *j = &r->rec.job;
    r->now_sim = j->t_end >= 0 ? j->t_end : (baton_wall_now() - j->origin) * j->time_scale;
    if (fleet_job_state_parse(j->state) == FLEET_JOB_RUNNING && !fleet_proc_same(j->supervisor_pid, j->supervisor_start)) {
        r->stalled = 1;
        for (size_t e = 0; e < r->rec.nevents; e++)
            if (r->rec.events[e].t_sim > r->last_sim) r->last_sim = r->rec.events[e].t_sim;
    }
    size_t n = r->rec.ninsts;
    r->lines = calloc(n ? n : 1, sizeof *r->lines);
    r->ins = calloc(n ? n : 1, sizeof *r->ins);
    if (!r->lines || !r->ins) {
        baton_fleet_report_free(r);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    fleet_cost_total_init(&r->total);
    for (size_t i = 0; i < n; i++) {
        const baton_fleet_inst *in = &r->rec.insts[i];
        baton_cost_in *c = &r->ins[i];
        double end = inst_end(r, in);
        c->running_s = in->t_running >= 0 ? end - in->t_running : 0;
        if (c->running_s < 0) c->running_s = 0;
        if (in->launch > 0 && in->t_running >= 0)
            c->restart_s = (in->t_first_step >= 0 ? in->t_first_step : end) - in->t_running;
        if (c->restart_s < 0) c->restart_s = 0;
        int64_t lost = lost_steps(in), done = in->reached_step - (in->resumed_step > 0 ? in->resumed_step : 0);
        if (lost > 0 && done > 0 && in->t_first_step >= 0) {
            double work = end - in->t_first_step;
            c->lost_s = work * (double)lost / (double)done;
        } else if (lost > 0) {
            c->lost_s = c->running_s - c->restart_s;
        }
        c->spot_price = in->spot_price;
        c->on_demand_price = in->on_demand_price;
        c->provider_interrupted = in->interrupted != BATON_INT_NONE;
        c->ended = fleet_wstate_terminal(in->state);
        fleet_cost_line_compute(c, &r->lines[i]);
        fleet_cost_total_add(&r->total, c, &r->lines[i]);
        if (c->ended && in->state != BATON_W_CANCELLED) {
            if (in->interrupted == BATON_INT_NOTICE) {
                r->with_notice++;
                if (lost > r->max_lost_notice) r->max_lost_notice = lost;
            } else if (in->interrupted == BATON_INT_NO_NOTICE) {
                r->without_notice++;
                if (lost > r->max_lost_no_notice) r->max_lost_no_notice = lost;
            }
            r->crashes += in->state == BATON_W_CRASHED;
            r->lost_steps += lost;
        }
    }
    r->interruptions = r->with_notice + r->without_notice;
    fleet_cost_total_finish(&r->total);
    return load_results(job_dir, r, err);
}

void baton_fleet_report_free(baton_fleet_report *r)
{
    for (size_t t = 0; r->results && t < r->rec.ntasks; t++) cJSON_Delete(r->results[t]);
    free(r->results);
    free(r->task_spot_cost);
    r->results = NULL;
    r->task_spot_cost = NULL;
    fleet_records_free(&r->rec);
    free(r->lines);
    free(r->ins);
    r->lines = NULL;
    r->ins = NULL;
}

static void dur(double s, char *out, size_t cap) { baton_fleet_fmt_duration(s, out, cap); }

/* A result's figures a person compares tasks by, in words ("loss 0.4121, accuracy 0.8513, ..."):
 * the known keys that are numbers, in this order; 0 when there are none. */
static int result_text(const cJSON *j, char *out, size_t cap)
{
    /* a trainer's loss and accuracy are its last steps' (training, not test): said so */
    static const char *const keys[][2] = {
        {"loss", "training loss"}, {"accuracy", "training accuracy"}, {"val_loss", "validation loss"},
        {"val_accuracy", "validation accuracy"}, {"best_lap_s", "best lap s"}, {"laps", "laps"},
        {"mean_reward", "mean reward"}, {"mean_progress", "mean progress"}, {"samples_per_s", "samples/s"},
        {"step", "step"}, {"iteration", "iteration"}};
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; j && i < sizeof keys / sizeof *keys && o + 48 < cap; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, keys[i][0]);
        if (!cJSON_IsNumber(x)) continue;
        o += (size_t)snprintf(out + o, cap - o, "%s%s %.4g", o ? ", " : "", keys[i][1], x->valuedouble);
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
    if (o && cJSON_IsString(st) && o + 20 < cap) snprintf(out + o, cap - o, " (%s)", st->valuestring);
    return o > 0;
}

void baton_fleet_report_print(FILE *f, const baton_fleet_report *r, int events)
{
    const baton_fleet_job *j = &r->rec.job;
    char a[32], b[32], c[32], d[32];
    int done = 0, failed = 0;
    for (size_t t = 0; t < r->rec.ntasks; t++) {
        done += r->rec.tasks[t].state == BATON_TASK_DONE;
        failed += r->rec.tasks[t].state == BATON_TASK_FAILED;
    }
    dur(r->now_sim, a, sizeof a);
    dur(r->now_sim / (j->time_scale > 0 ? j->time_scale : 1), b, sizeof b);
    fprintf(f, "job %s: %s; tasks %zu (%d done, %d failed); simulated %s (%s of wall time at x%g)\n", j->name,
            fleet_report_state(r), r->rec.ntasks, done, failed, a, b, j->time_scale);
    if (r->stalled) {
        dur(r->last_sim, c, sizeof c);
        fprintf(f, "  its supervisor (pid %d) is not running: instances whose worker has ended too are counted up to "
                   "the last record (%s); run `baton fleet run` on the job file again to adopt the rest and go on\n",
                j->supervisor_pid, c);
    }
    for (size_t t = 0; t < r->rec.ntasks; t++) {
        const baton_fleet_task *k = &r->rec.tasks[t];
        int64_t step = fleet_report_task_step(r, t);
        char st[48] = "no step yet";
        if (step >= 0) snprintf(st, sizeof st, "%s %lld", k->final_step >= 0 ? "step" : "reached step", (long long)step);
        fprintf(f, "  task %d: %s, %s, %d interruption(s), %d crash(es), volume %s (%s)\n", k->idx,
                fleet_task_state_name(k->state), st, k->interruptions, k->crashes, k->volume[0] ? k->volume : "-",
                k->zone[0] ? k->zone : "-");
        char res[256];
        if (result_text(r->results ? r->results[t] : NULL, res, sizeof res))
            fprintf(f, "    result: %s; spot $%.4f\n", res, r->task_spot_cost ? r->task_spot_cost[t] : 0.0);
    }
    fprintf(f, "\n%-19s %4s %-11s %-11s %-9s %9s %9s %15s %5s %9s %8s %8s  %s\n", "instance", "task", "type", "zone",
            "state", "start", "run", "steps", "lost", "charged", "spot$", "od$", "how it ended");
    for (size_t i = 0; i < r->rec.ninsts; i++) {
        const baton_fleet_inst *in = &r->rec.insts[i];
        const baton_cost_line *l = &r->lines[i];
        char steps[48];
        if (in->resumed_step >= 0)
            snprintf(steps, sizeof steps, "%lld->%lld", (long long)in->resumed_step, (long long)in->reached_step);
        else
            snprintf(steps, sizeof steps, "-");
        dur(in->t_running >= 0 ? in->t_running : in->t_request, a, sizeof a);
        dur(r->ins[i].running_s, b, sizeof b);
        dur(l->charged_s, c, sizeof c);
        fprintf(f, "%-19s %4d %-11.11s %-11.11s %-9s %9s %9s %15s %5lld %9s %8.4f %8.4f  %s%s\n", in->name, in->task,
                in->type[0] ? in->type : "-", in->zone[0] ? in->zone : "-", fleet_wstate_name(in->state), a, b, steps,
                (long long)lost_steps(in), c, l->spot_cost, l->on_demand_cost, in->reason,
                l->free_first_hour ? " [not charged: interrupted in its first hour]" : "");
    }
    const baton_cost_total *t = &r->total;
    dur(t->useful_s, a, sizeof a);
    dur(t->restart_s, b, sizeof b);
    dur(t->lost_s, c, sizeof c);
    dur(t->charged_s, d, sizeof d);
    fprintf(f, "\ninterruptions %d (%d with notice, %d without), crashes %d; work lost %lld steps "
               "(at most %lld per interruption with notice, %lld without)\n",
            r->interruptions, r->with_notice, r->without_notice, r->crashes, (long long)r->lost_steps,
            (long long)r->max_lost_notice, (long long)r->max_lost_no_notice);
    fprintf(f, "time: useful %s, restart %s, lost %s; charged %s over %zu instance(s), %d not charged (first-hour rule)\n",
            a, b, c, d, t->instances, t->free_first_hour);
    fprintf(f, "cost: spot $%.4f; on demand for the same useful time $%.4f -> savings %.1f %%\n", t->spot_cost,
            t->counterfactual_cost, t->savings_vs_on_demand_pct);
    fprintf(f, "SageMaker-style: training seconds %.0f, billable seconds %.0f, managed spot savings %.1f %%\n",
            t->training_s, t->billable_s, t->savings_sagemaker_pct);
    fleet_deadlines_print(f, r);
    if (events && r->rec.nevents) {
        size_t from = r->rec.nevents > (size_t)events ? r->rec.nevents - (size_t)events : 0;
        fprintf(f, "\nevents (last %zu of %zu):\n", r->rec.nevents - from, r->rec.nevents);
        for (size_t e = from; e < r->rec.nevents; e++) {
            const baton_fleet_event *ev = &r->rec.events[e];
            cJSON *dj = fleet_event_detail(ev);
            const cJSON *m = dj ? cJSON_GetObjectItemCaseSensitive(dj, "message") : NULL;
            dur(ev->t_sim, a, sizeof a);
            const char *iname = "";
            for (size_t i = 0; i < r->rec.ninsts; i++)
                if (r->rec.insts[i].id == ev->inst) iname = r->rec.insts[i].name;
            fprintf(f, "  %5lld [%9s] %-10s %s%s%s\n", (long long)ev->seq, a, ev->kind, iname, *iname ? " " : "",
                    cJSON_IsString(m) ? m->valuestring : "");
            cJSON_Delete(dj);
        }
    }
}

static void job_json(cJSON *o, const baton_fleet_report *r)
{
    const baton_fleet_job *j = &r->rec.job;
    cJSON *jo = cJSON_AddObjectToObject(o, "job");
    cJSON_AddStringToObject(jo, "name", j->name);
    cJSON_AddStringToObject(jo, "state", fleet_report_state(r));
    cJSON_AddBoolToObject(jo, "supervisor_running", fleet_job_state_parse(j->state) == FLEET_JOB_RUNNING && !r->stalled);
    cJSON_AddNumberToObject(jo, "time_scale", j->time_scale);
    cJSON_AddNumberToObject(jo, "sim_seconds", r->now_sim);
    cJSON_AddNumberToObject(jo, "wall_seconds", r->now_sim / (j->time_scale > 0 ? j->time_scale : 1));
    cJSON_AddStringToObject(jo, "jobfile", j->jobfile);
}

static void tasks_json(cJSON *o, const baton_fleet_report *r)
{
    cJSON *ta = cJSON_AddArrayToObject(o, "tasks");
    for (size_t t = 0; t < r->rec.ntasks; t++) {
        const baton_fleet_task *k = &r->rec.tasks[t];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "task", k->idx);
        cJSON_AddStringToObject(x, "command", k->command);
        cJSON_AddStringToObject(x, "state", fleet_task_state_name(k->state));
        if (k->final_step >= 0) cJSON_AddNumberToObject(x, "final_step", (double)k->final_step);
        else cJSON_AddNullToObject(x, "final_step");   /* not done (yet) */
        int64_t step = fleet_report_task_step(r, t);
        if (step >= 0) cJSON_AddNumberToObject(x, "step", (double)step);
        else cJSON_AddNullToObject(x, "step");
        cJSON_AddNumberToObject(x, "interruptions", k->interruptions);
        cJSON_AddNumberToObject(x, "crashes", k->crashes);
        cJSON_AddStringToObject(x, "volume", k->volume);
        cJSON_AddStringToObject(x, "zone", k->zone);
        cJSON_AddNumberToObject(x, "spot_cost", r->task_spot_cost ? r->task_spot_cost[t] : 0);
        if (r->results && r->results[t]) cJSON_AddItemToObject(x, "result", cJSON_Duplicate(r->results[t], 1));
        else cJSON_AddNullToObject(x, "result");
        cJSON_AddItemToArray(ta, x);
    }
}

static void instance_json(cJSON *ia, const baton_fleet_report *r, size_t i)
{
    const baton_fleet_inst *in = &r->rec.insts[i];
    const baton_cost_line *l = &r->lines[i];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "id", in->id);
    cJSON_AddStringToObject(x, "name", in->name);
    cJSON_AddNumberToObject(x, "task", in->task);
    cJSON_AddStringToObject(x, "type", in->type);
    cJSON_AddStringToObject(x, "zone", in->zone);
    cJSON_AddStringToObject(x, "state", fleet_wstate_name(in->state));
    cJSON_AddStringToObject(x, "reason", in->reason);
    cJSON_AddStringToObject(x, "interruption", in->interrupted == BATON_INT_NOTICE ? "notice"
                                               : in->interrupted == BATON_INT_NO_NOTICE ? "no-notice" : "none");
    cJSON_AddNumberToObject(x, "exit_code", in->exit_code);
    cJSON_AddNumberToObject(x, "t_request", in->t_request);
    cJSON_AddNumberToObject(x, "t_running", in->t_running);
    cJSON_AddNumberToObject(x, "t_first_step", in->t_first_step);
    cJSON_AddNumberToObject(x, "t_notice", in->t_notice);
    cJSON_AddNumberToObject(x, "t_end", in->t_end);
    cJSON_AddNumberToObject(x, "resumed_step", (double)in->resumed_step);
    cJSON_AddNumberToObject(x, "reached_step", (double)in->reached_step);
    cJSON_AddNumberToObject(x, "checkpoint_step", (double)in->ckpt_step);
    cJSON_AddNumberToObject(x, "lost_steps", (double)lost_steps(in));
    cJSON_AddNumberToObject(x, "spot_price", in->spot_price);
    cJSON_AddNumberToObject(x, "on_demand_price", in->on_demand_price);
    cJSON_AddNumberToObject(x, "running_s", r->ins[i].running_s);
    cJSON_AddNumberToObject(x, "restart_s", r->ins[i].restart_s);
    cJSON_AddNumberToObject(x, "lost_s", r->ins[i].lost_s);
    cJSON_AddNumberToObject(x, "useful_s", l->useful_s);
    cJSON_AddNumberToObject(x, "charged_s", l->charged_s);
    cJSON_AddBoolToObject(x, "free_first_hour", l->free_first_hour);
    cJSON_AddNumberToObject(x, "spot_cost", l->spot_cost);
    cJSON_AddNumberToObject(x, "on_demand_cost", l->on_demand_cost);
    cJSON_AddNumberToObject(x, "counterfactual_cost", l->counterfactual_cost);
    cJSON_AddStringToObject(x, "volume", in->volume);
    cJSON_AddItemToArray(ia, x);
}

static void totals_json(cJSON *o, const baton_fleet_report *r)
{
    const baton_cost_total *t = &r->total;
    cJSON *to = cJSON_AddObjectToObject(o, "totals");
    cJSON_AddNumberToObject(to, "instances", (double)t->instances);
    cJSON_AddNumberToObject(to, "interruptions", r->interruptions);
    cJSON_AddNumberToObject(to, "interruptions_with_notice", r->with_notice);
    cJSON_AddNumberToObject(to, "interruptions_without_notice", r->without_notice);
    cJSON_AddNumberToObject(to, "crashes", r->crashes);
    cJSON_AddNumberToObject(to, "lost_steps", (double)r->lost_steps);
    cJSON_AddNumberToObject(to, "max_lost_steps_with_notice", (double)r->max_lost_notice);
    cJSON_AddNumberToObject(to, "max_lost_steps_without_notice", (double)r->max_lost_no_notice);
    cJSON_AddNumberToObject(to, "training_seconds", t->training_s);
    cJSON_AddNumberToObject(to, "charged_seconds", t->charged_s);
    cJSON_AddNumberToObject(to, "billable_seconds", t->billable_s);
    cJSON_AddNumberToObject(to, "useful_seconds", t->useful_s);
    cJSON_AddNumberToObject(to, "restart_seconds", t->restart_s);
    cJSON_AddNumberToObject(to, "lost_seconds", t->lost_s);
    cJSON_AddNumberToObject(to, "not_charged_first_hour", t->free_first_hour);
    cJSON_AddNumberToObject(to, "spot_cost", t->spot_cost);
    cJSON_AddNumberToObject(to, "on_demand_cost_same_time", t->on_demand_cost);
    cJSON_AddNumberToObject(to, "on_demand_counterfactual_cost", t->counterfactual_cost);
    cJSON_AddNumberToObject(to, "savings_pct", t->savings_vs_on_demand_pct);
    cJSON_AddNumberToObject(to, "sagemaker_savings_pct", t->savings_sagemaker_pct);
}

static void events_json(cJSON *o, const baton_fleet_report *r)
{
    cJSON *ea = cJSON_AddArrayToObject(o, "events");
    for (size_t e = 0; e < r->rec.nevents; e++) {
        const baton_fleet_event *ev = &r->rec.events[e];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "seq", (double)ev->seq);
        cJSON_AddNumberToObject(x, "t_sim", ev->t_sim);
        cJSON_AddStringToObject(x, "kind", ev->kind);
        cJSON_AddNumberToObject(x, "instance", ev->inst);
        cJSON_AddNumberToObject(x, "task", ev->task);
        if (ev->from[0]) cJSON_AddStringToObject(x, "from", ev->from);
        if (ev->to[0]) cJSON_AddStringToObject(x, "to", ev->to);
        cJSON *dj = fleet_event_detail(ev);
        if (dj) cJSON_AddItemToObject(x, "detail", dj);
        cJSON_AddItemToArray(ea, x);
    }
}

char *baton_fleet_report_json(const baton_fleet_report *r, int events)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    job_json(o, r);
    tasks_json(o, r);
    fleet_deadlines_json(o, r);
    cJSON *ia = cJSON_AddArrayToObject(o, "instances");
    for (size_t i = 0; i < r->rec.ninsts; i++) instance_json(ia, r, i);
    totals_json(o, r);
    if (events) events_json(o, r);
    char *s = baton_json_print(o, 0);
    cJSON_Delete(o);
    return s;
}

int baton_fleet_report_svg(const baton_fleet_report *r, const char *path, baton_err *err)
{
    size_t n = r->rec.ninsts;
    baton_svg_row *rows = calloc(n ? n : 1, sizeof *rows);
    baton_svg_span *spans = calloc(3 * (n ? n : 1), sizeof *spans);
    char(*labels)[160] = calloc(n ? n : 1, sizeof *labels);
    size_t nm = 0, capm = 3 * n + r->rec.nevents + 1;
    baton_svg_mark *marks = calloc(capm, sizeof *marks);
    char(*titles)[96] = calloc(capm, sizeof *titles);
    if (!rows || !spans || !labels || !marks || !titles) {
        free(rows), free(spans), free(labels), free(marks), free(titles);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    const double u = 60;   /* minutes on the axis */
    for (size_t i = 0; i < n; i++) {
        const baton_fleet_inst *in = &r->rec.insts[i];
        double end = inst_end(r, in);
        baton_svg_span *sp = &spans[3 * i];
        size_t k = 0;
        double run = in->t_running >= 0 ? in->t_running : end;
        sp[k++] = (baton_svg_span){in->t_request / u, run / u, 0};
        if (in->t_running >= 0) {
            double stop = in->t_notice >= 0 ? in->t_notice : end;
            sp[k++] = (baton_svg_span){in->t_running / u, stop / u, 1};
            if (in->t_notice >= 0) sp[k++] = (baton_svg_span){in->t_notice / u, end / u, 2};
        }
        snprintf(labels[i], sizeof labels[i], "%s t%d %s %s", in->name, in->task, in->type, in->zone);
        rows[i] = (baton_svg_row){labels[i], sp, k};
        if (in->t_notice >= 0) {
            snprintf(titles[nm], sizeof titles[nm], "notice at step %lld", (long long)in->reached_step);
            marks[nm] = (baton_svg_mark){in->t_notice / u, i, 1, titles[nm]};
            nm++;
        }
        if (in->interrupted == BATON_INT_NO_NOTICE || (in->state == BATON_W_STOPPED && in->exit_code == 137)) {
            snprintf(titles[nm], sizeof titles[nm], "killed: %lld steps lost", (long long)lost_steps(in));
            marks[nm] = (baton_svg_mark){end / u, i, 2, titles[nm]};
            nm++;
        }
        if (in->state == BATON_W_CRASHED && in->t_running >= 0) {
            snprintf(titles[nm], sizeof titles[nm], "crashed (exit %d)", in->exit_code);
            marks[nm] = (baton_svg_mark){end / u, i, 3, titles[nm]};
            nm++;
        }
    }
    for (size_t e = 0; e < r->rec.nevents && nm < capm; e++) {
        const baton_fleet_event *ev = &r->rec.events[e];
        if (strcmp(ev->kind, "checkpoint") != 0) continue;
        for (size_t i = 0; i < n; i++)
            if (r->rec.insts[i].id == ev->inst) {
                cJSON *dj = fleet_event_detail(ev);
                const cJSON *st = dj ? cJSON_GetObjectItemCaseSensitive(dj, "step") : NULL;
                snprintf(titles[nm], sizeof titles[nm], "checkpoint %lld",
                         cJSON_IsNumber(st) ? (long long)st->valuedouble : -1LL);
                cJSON_Delete(dj);
                marks[nm] = (baton_svg_mark){ev->t_sim / u, i, 0, titles[nm]};
            nm++;
                break;
            }
    }
    static const char *const span_names[] = {"launching", "running", "after the notice"};
    static const char *const mark_names[4] = {"checkpoint", "notice", "killed", "crash"};
    char title[256];
    snprintf(title, sizeof title, "fleet %s: instances over simulated time (%s)", r->rec.job.name, r->rec.job.state);
    int rc = baton_svg_timeline(path, title, "simulated time (minutes)", rows, n, span_names, 3, marks, nm, mark_names, err);
    free(rows), free(spans), free(labels), free(marks), free(titles);
    return rc;
}
