/* fleet_deadline.c — each interruption's commit against its deadline, as the fleet records and
 * reports it: the "deadline" event the supervisor logs when a worker exits 75 (from the
 * "interruption" object its run left in the task's result file: baton train, race train, and a
 * Python trainer's baton.result), and the report's per-interruption table with the percentiles of
 * notice → commit, notice → exit and the margin left.
 *
 * Contract: a result file is believed only when it is one JSON object whose interruption began
 * after this instance started running (an older run's file is not this exit's) and whose times are
 * in order; otherwise no event is logged (the exit's own transition still is). All times in the
 * event are seconds after the notice, wall clock (a run's deadline is the provider's, not the
 * simulation's). */
#include "fleet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double num(const cJSON *o, const char *k, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : def;
}

void fleet_deadline_event(sup *s, size_t i)
{
    baton_fleet_inst *in = &s->insts[i];
    const char *vol = s->job->nodes.max ? s->tasks[in->task].volume : in->volume;
    char path[4400];
    if (vol[0]) fleet_fmt(path, sizeof path, "%s/" BATON_FLEET_RESULT_FILE, vol);
    else fleet_fmt(path, sizeof path, "%s/run/task-%d.result.json", s->dir, in->task);
    uint8_t *text = NULL;
    size_t len = 0;
    baton_err err = {0};
    if (baton_file_read_all(path, 1 << 20, &text, &len, &err)) return;
    cJSON *j = baton_jr_value((const char *)text, len);
    free(text);
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, "interruption");
    double started = s->rec.origin + in->t_running / (s->scale > 0 ? s->scale : 1);
    double notice = num(it, "notice_at", -1), commit = num(it, "commit_at", -1), exit_at = num(it, "exit_at", -1);
    double deadline = num(it, "deadline", 0);
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(it, "upload");
    if (!cJSON_IsObject(it) || notice < started - 1 || commit < notice || exit_at < commit || !cJSON_IsString(up)) {
        cJSON_Delete(j);
        return;
    }
    cJSON *d = cJSON_CreateObject();
    if (d) {
        cJSON_AddNumberToObject(d, "step", num(it, "step", -1));
        cJSON_AddNumberToObject(d, "commit_after_s", commit - notice);
        cJSON_AddNumberToObject(d, "exit_after_s", exit_at - notice);
        cJSON_AddStringToObject(d, "upload", up->valuestring);
        if (num(it, "upload_at", 0) > 0) cJSON_AddNumberToObject(d, "upload_after_s", num(it, "upload_at", 0) - notice);
        if (deadline > 0) {
            cJSON_AddNumberToObject(d, "deadline_after_s", deadline - notice);
            cJSON_AddNumberToObject(d, "margin_s", deadline - exit_at);
        }
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "kind");
        cJSON_AddStringToObject(d, "notice", cJSON_IsString(k) ? k->valuestring : "?");
    }
    char dl[64] = "no deadline known", upl[64];
    if (deadline > 0) snprintf(dl, sizeof dl, "margin %.1f s of %.1f s", deadline - exit_at, deadline - notice);
    if (num(it, "upload_at", 0) > 0) snprintf(upl, sizeof upl, "uploaded +%.2f s", num(it, "upload_at", 0) - notice);
    else snprintf(upl, sizeof upl, "%s", !strcmp(up->valuestring, "none") ? "no upload" : up->valuestring);
    fleet_log_event(s, "deadline", (int)i, in->task, NULL, NULL, d,
                    "notice -> step %.0f committed +%.2f s, %s, exit +%.2f s; %s", num(it, "step", -1), commit - notice,
                    upl, exit_at - notice, dl);
    cJSON_Delete(j);
}

/* ---------------------------------------------------------------- the report's side */
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* p50 (the lower middle) and the extremes of v[0..n) (sorted in place). */
static void stats(double *v, size_t n, double *p50, double *lo, double *hi)
{
    *p50 = *lo = *hi = 0;
    if (!n) return;
    qsort(v, n, sizeof *v, cmp_d);
    *p50 = v[(n - 1) / 2];
    *lo = v[0];
    *hi = v[n - 1];
}

int baton_fleet_deadlines(const baton_fleet_report *r, baton_fleet_deadline_stats *st)
{
    memset(st, 0, sizeof *st);
    size_t cap = 0;
    for (size_t e = 0; e < r->rec.nevents; e++) cap += !strcmp(r->rec.events[e].kind, "deadline");
    if (!cap) return 0;
    double *c = malloc(cap * sizeof *c), *x = malloc(cap * sizeof *x), *m = malloc(cap * sizeof *m);
    if (!c || !x || !m) {
        free(c);
        free(x);
        free(m);
        return -1;
    }
    for (size_t e = 0; e < r->rec.nevents; e++) {
        const baton_fleet_event *ev = &r->rec.events[e];
        if (strcmp(ev->kind, "deadline")) continue;
        cJSON *d = fleet_event_detail(ev);
        double ca = num(d, "commit_after_s", -1), xa = num(d, "exit_after_s", -1), mg = num(d, "margin_s", NAN);
        const cJSON *up = cJSON_GetObjectItemCaseSensitive(d, "upload");
        if (ca >= 0 && xa >= 0) {
            c[st->n] = ca;
            x[st->n] = xa;
            st->n++;
            if (isfinite(mg)) {
                m[st->with_deadline++] = mg;
                st->inside += mg >= 0;
            }
            if (cJSON_IsString(up) && !strcmp(up->valuestring, "done")) st->uploaded++;
            else if (cJSON_IsString(up) && strstr(up->valuestring, "next machine")) st->left++;
        }
        cJSON_Delete(d);
    }
    double unused;
    stats(c, st->n, &st->commit_p50, &unused, &st->commit_max);
    stats(x, st->n, &st->exit_p50, &unused, &st->exit_max);
    stats(m, st->with_deadline, &st->margin_p50, &st->margin_min, &unused);
    free(c);
    free(x);
    free(m);
    return (int)st->n;
}

void fleet_deadlines_print(FILE *f, const baton_fleet_report *r)
{
    baton_fleet_deadline_stats st;
    if (baton_fleet_deadlines(r, &st) <= 0) return;
    fprintf(f, "\ninterruptions against their deadlines (seconds after each notice):\n");
    fprintf(f, "  %-19s %4s %-10s %9s %8s %9s %-26s %8s %8s\n", "instance", "task", "notice", "deadline", "commit",
            "step", "upload", "exit", "margin");
    for (size_t e = 0; e < r->rec.nevents; e++) {
        const baton_fleet_event *ev = &r->rec.events[e];
        if (strcmp(ev->kind, "deadline")) continue;
        cJSON *d = fleet_event_detail(ev);
        const char *iname = "?";
        for (size_t i = 0; i < r->rec.ninsts; i++)
            if (r->rec.insts[i].id == ev->inst) iname = r->rec.insts[i].name;
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(d, "notice"), *up = cJSON_GetObjectItemCaseSensitive(d, "upload");
        char dl[16] = "-", mg[16] = "-", upl[32];
        if (isfinite(num(d, "deadline_after_s", NAN))) snprintf(dl, sizeof dl, "%.1f", num(d, "deadline_after_s", 0));
        if (isfinite(num(d, "margin_s", NAN))) snprintf(mg, sizeof mg, "%.2f", num(d, "margin_s", 0));
        if (num(d, "upload_after_s", -1) >= 0) snprintf(upl, sizeof upl, "done at %.2f", num(d, "upload_after_s", 0));
        else snprintf(upl, sizeof upl, "%.26s", cJSON_IsString(up) ? up->valuestring : "?");
        fprintf(f, "  %-19s %4lld %-10.10s %9s %8.2f %9.0f %-26s %8.2f %8s\n", iname, (long long)ev->task,
                cJSON_IsString(k) ? k->valuestring : "?", dl, num(d, "commit_after_s", 0), num(d, "step", -1), upl,
                num(d, "exit_after_s", 0), mg);
        cJSON_Delete(d);
    }
    fprintf(f, "  %zu interruption(s): commit p50 %.2f s, max %.2f s; exit p50 %.2f s, max %.2f s", st.n, st.commit_p50,
            st.commit_max, st.exit_p50, st.exit_max);
    if (st.with_deadline)
        fprintf(f, "; margin p50 %.2f s, min %.2f s; %zu of %zu inside the deadline", st.margin_p50, st.margin_min,
                st.inside, st.with_deadline);
    fprintf(f, "; %zu uploaded, %zu left to the next machine\n", st.uploaded, st.left);
}

void fleet_deadlines_json(cJSON *o, const baton_fleet_report *r)
{
    baton_fleet_deadline_stats st;
    if (baton_fleet_deadlines(r, &st) < 0) return;
    cJSON *d = cJSON_AddObjectToObject(o, "deadlines");
    if (!d) return;
    cJSON_AddNumberToObject(d, "interruptions", (double)st.n);
    cJSON_AddNumberToObject(d, "with_deadline", (double)st.with_deadline);
    cJSON_AddNumberToObject(d, "inside", (double)st.inside);
    cJSON_AddNumberToObject(d, "uploaded", (double)st.uploaded);
    cJSON_AddNumberToObject(d, "left_to_next_machine", (double)st.left);
    if (st.n) {
        cJSON_AddNumberToObject(d, "commit_p50_s", st.commit_p50);
        cJSON_AddNumberToObject(d, "commit_max_s", st.commit_max);
        cJSON_AddNumberToObject(d, "exit_p50_s", st.exit_p50);
        cJSON_AddNumberToObject(d, "exit_max_s", st.exit_max);
    }
    if (st.with_deadline) {
        cJSON_AddNumberToObject(d, "margin_p50_s", st.margin_p50);
        cJSON_AddNumberToObject(d, "margin_min_s", st.margin_min);
    }
    cJSON *a = cJSON_AddArrayToObject(d, "each");
    for (size_t e = 0; a && e < r->rec.nevents; e++) {
        const baton_fleet_event *ev = &r->rec.events[e];
        if (strcmp(ev->kind, "deadline")) continue;
        cJSON *x = fleet_event_detail(ev);
        if (!x) continue;
        cJSON_AddNumberToObject(x, "task", (double)ev->task);
        cJSON_AddNumberToObject(x, "t_sim", ev->t_sim);
        for (size_t i = 0; i < r->rec.ninsts; i++)
            if (r->rec.insts[i].id == ev->inst) cJSON_AddStringToObject(x, "instance", r->rec.insts[i].name);
        cJSON_AddItemToArray(a, x);
    }
}
