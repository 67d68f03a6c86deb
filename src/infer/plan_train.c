/* plan_train.c — `baton plan train`: wall time and cost of a training run on each catalog instance,
 * on demand and on spot, with the checkpoint interval of Young and Daly and the overhead it implies.
 *
 *   compute hours     = dataset × epochs / samples_per_s, where samples_per_s is measured here and,
 *                       on another type, scaled by its FP32 TFLOPS over this machine's (projected);
 *                       a bf16 rate by the bf16 (fp16_tflops) figures instead, from the --here
 *                       type's, onto the types that have one (the others refuse --precision bf16)
 *   on-demand cost    = hours × on-demand $/h (no interruptions)
 *   spot              = a constant-hazard interruption process with mean time between interruptions
 *                       M (from the monthly reclaim fraction f: M = 730 h / −ln(1 − f)); checkpoints
 *                       every τ = Daly's optimum for the blocking checkpoint cost δ; expected wall time
 *                       by Daly's model M·e^(R/M)·(e^((τ+δ)/M) − 1)·work/τ with restart cost R
 *                       (checkpoint writes, lost work and restarts all included); cost = that × spot $/h
 *                       (the catalog's, else on-demand × (1 − spot_discount), marked estimated).
 * Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps";
 * Young 1974. Billing details (an instance reclaimed in its first hour is free) are ignored: the
 * spot figure is an upper bound in that respect. */
#include "infer_internal.h"
#include "baton/ckpt.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double baton_daly_wall(double work, double tau, double delta, double mtbi, double restart)
{
    if (!(tau > 0)) return INFINITY;
    if (!(mtbi > 0) || isinf(mtbi)) return work * (1 + delta / tau);   /* no interruptions: writes only */
    return mtbi * exp(restart / mtbi) * expm1((tau + delta) / mtbi) * work / tau;
}

int baton_plan_train_run(const baton_infer_catalog *c, const baton_plan_train_opts *o, baton_plan_train *p, baton_err *err)
{
    memset(p, 0, sizeof *p);
    if (!(o->samples_per_s > 0) || !(o->dataset > 0) || !(o->epochs > 0))
        return baton_err_set(err, BATON_ERR_USAGE, "samples/s, dataset size and epochs must be > 0");
    if (o->interrupt_month < 0 || o->interrupt_month >= 1 || o->ckpt_seconds < 0 || o->restart_seconds < 0 ||
        o->spot_discount < 0 || o->spot_discount >= 1)
        return baton_err_set(err, BATON_ERR_USAGE, "interruption rate and spot discount must be in [0, 1), "
                             "checkpoint and restart seconds >= 0");
    baton_infer_config here = {0};
    double here_tflops = o->here_gflops > 0 ? o->here_gflops / 1e3 : -1;
    if (o->here) {
        int rc = baton_infer_catalog_config(c, o->here, &here, err);
        if (rc) return baton_err_prefix(err, "--here");
        if (here.tflops > 0) here_tflops = here.tflops * (here.chips > 1 ? here.chips : 1);
    }
    if (o->bf16) {   /* this machine's bf16 figure is the catalog's: a measured FMA peak is f32's */
        if (!o->here || !(here.fp16_tflops > 0))
            return baton_err_set(err, BATON_ERR_USAGE, "a bf16 rate is projected by the catalog's bf16 figures "
                                 "(fp16_tflops): give --here TYPE, a type that has one%s%s%s",
                                 o->here ? " (" : "", o->here ? o->here : "", o->here ? " has none)" : "");
        here_tflops = here.fp16_tflops * (here.chips > 1 ? here.chips : 1);
    }
    p->rows = calloc(c->n + 1, sizeof *p->rows);
    if (!p->rows) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    p->mtbi_h = baton_ckpt_mtbi_hours(o->interrupt_month);
    const double M = p->mtbi_h * 3600, delta = o->ckpt_seconds;
    p->tau_young_s = isinf(M) ? INFINITY : baton_ckpt_young_interval(delta, M);
    const double work = o->dataset * o->epochs;
    for (size_t i = 0; i < c->n; i++) {
        const baton_infer_catalog_entry *e = &c->e[i];
        if (e->kind == BATON_CAT_ACCEL || e->retired) continue;   /* accelerators do not train; retired: not sold */
        if (o->bf16 && !(e->fp16_tflops > 0)) continue;          /* no bfloat16 there: --precision bf16 is refused */
        const double tflops = o->bf16 ? e->fp16_tflops : e->tflops;
        baton_plan_train_row *r = &p->rows[p->n];
        snprintf(r->config, sizeof r->config, "%s", e->name);
        if (o->here && !strcmp(e->name, here.name)) {
            r->source = BATON_SRC_MEASURED;
            r->samples_per_s = o->samples_per_s;
        } else if (here_tflops > 0 && tflops > 0 && e->project) {
            r->source = BATON_SRC_PROJECTED;
            r->samples_per_s = o->samples_per_s * tflops * (e->chips > 1 ? e->chips : 1) / here_tflops;   /* data parallel */
        } else {
            continue;   /* nothing to project from or onto */
        }
        const double secs = work / r->samples_per_s;
        r->hours = secs / 3600;
        r->od_cost = r->hours * e->on_demand;
        r->spot_estimated = e->spot < 0;
        r->spot_price = e->spot >= 0 ? e->spot : e->on_demand * (1 - o->spot_discount);
        r->tau_s = isinf(M) ? secs : baton_ckpt_daly_interval(delta, M);
        if (r->tau_s > secs) r->tau_s = secs;   /* never more than the run itself */
        const double wall = baton_daly_wall(secs, r->tau_s, delta, isinf(M) ? 0 : M, o->restart_seconds);
        r->spot_hours = wall / 3600;
        r->overhead = wall / secs - 1;
        r->spot_cost = r->spot_hours * r->spot_price;
        r->worth_it = r->overhead <= 1;
        p->n++;
    }
    p->pick = p->pick_od = -1;
    for (size_t i = 0; i < p->n; i++) {
        const baton_plan_train_row *r = &p->rows[i];
        if (r->worth_it && (p->pick < 0 || r->spot_cost < p->rows[p->pick].spot_cost)) p->pick = (long)i;
        if (p->pick_od < 0 || r->od_cost < p->rows[p->pick_od].od_cost) p->pick_od = (long)i;
    }
    if (p->n == 0) {
        baton_plan_train_free(p);
        return baton_err_set(err, BATON_ERR_ARG, "no catalog type to report: give --here TYPE or a "
                             "catalog with fp32_tflops figures");
    }
    return BATON_OK;
}

void baton_plan_train_free(baton_plan_train *p)
{
    free(p->rows);
    p->rows = NULL;
    p->n = 0;
}

/* A duration as a person compares them: hours from one hour up, else minutes, else seconds. */
static void duration_text(char *b, size_t n, double hours)
{
    if (hours >= 1) snprintf(b, n, "%.2f h", hours);
    else if (hours * 60 >= 1) snprintf(b, n, "%.1f min", hours * 60);
    else snprintf(b, n, "%.1f s", hours * 3600);
}

void baton_plan_train_table(FILE *f, const baton_plan_train *p, const baton_plan_train_opts *o)
{
    fprintf(f, "%.0f samples x %g epochs; spot: %.0f %% of instances reclaimed per month -> mean time between "
               "interruptions %.0f h; checkpoint %.0f s, restart %.0f s\n",
            o->dataset, o->epochs, o->interrupt_month * 100, p->mtbi_h, o->ckpt_seconds, o->restart_seconds);
    /* the rate and the checkpoint plan, then the job twice: on demand (time, cost) and on spot */
    fprintf(f, "%-14s %-9s %10s %9s %12s %9s %10s %10s %10s %10s\n", "type", "source", "samples/s", "spot $/h",
            "ckpt every", "overhead", "od time", "od cost", "spot time", "spot cost");
    int est = 0, unworthy = 0;
    for (size_t i = 0; i < p->n; i++) {
        const baton_plan_train_row *r = &p->rows[i];
        char tau[32], od[32], sc[32], t[32], st[32];
        duration_text(tau, sizeof tau, r->tau_s / 3600);
        duration_text(t, sizeof t, r->hours);
        duration_text(st, sizeof st, r->spot_hours);
        infer_money_text(od, sizeof od, r->od_cost);
        infer_money_text(sc, sizeof sc, r->spot_cost);
        fprintf(f, "%-14s %-9s %10.1f %8.4f%s %12s %8.2f%% %10s %10s %10s %10s%s\n", r->config,
                r->source == BATON_SRC_MEASURED ? "measured" : "projected", r->samples_per_s, r->spot_price,
                r->spot_estimated ? "*" : " ", tau, r->overhead * 100, t, od, st, sc,
                !r->worth_it ? "  not worth it" : (long)i == p->pick ? "  <- pick" : "");
        est |= r->spot_estimated;
        unworthy += !r->worth_it;
    }
    fprintf(f, "od: on demand; the costs are the whole job's, the $/h the rate\n");
    if (est) fprintf(f, "* no spot price in the catalog: on-demand x (1 - %.2f) (--spot-discount)\n", o->spot_discount);
    fprintf(f, "checkpoint interval: Daly's optimum (Young's sqrt(2*delta*M) = %.1f min); overhead = checkpoint "
               "writes + lost work + restarts, Daly's expected wall time\n",
            isinf(p->tau_young_s) ? 0.0 : p->tau_young_s / 60);
    if (unworthy)
        fprintf(f, "not worth it: an overhead above 100 %% (%d type(s)) means checkpoints, lost work and restarts "
                   "cost more than the training itself: the type is too fast for a job this size\n", unworthy);
    if (p->pick >= 0) {
        const baton_plan_train_row *r = &p->rows[p->pick], *d = &p->rows[p->pick_od];
        char sc[32], od[32], t[32];
        infer_money_text(sc, sizeof sc, r->spot_cost);
        infer_money_text(od, sizeof od, d->od_cost);
        duration_text(t, sizeof t, r->spot_hours);
        fprintf(f, "pick: %s on spot, %s in %s (%s, the lowest spot cost among types worth it); on demand the "
                   "cheapest is %s at %s\n", r->config, sc, t, r->source == BATON_SRC_MEASURED ? "measured" : "projected",
                d->config, od);
    } else {
        fprintf(f, "pick: none on spot (no type has an overhead of 100 %% or less)\n");
    }
}

static cJSON *train_row_object(const baton_plan_train_row *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "type", r->config);
    cJSON_AddStringToObject(j, "source", r->source == BATON_SRC_MEASURED ? "measured" : "projected");
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    cJSON_AddNumberToObject(j, "hours", r->hours);
    cJSON_AddNumberToObject(j, "on_demand_cost", r->od_cost);
    cJSON_AddNumberToObject(j, "spot_price_per_h", r->spot_price);
    cJSON_AddBoolToObject(j, "spot_price_estimated", r->spot_estimated);
    cJSON_AddNumberToObject(j, "ckpt_interval_s", r->tau_s);
    cJSON_AddNumberToObject(j, "overhead", r->overhead);
    cJSON_AddNumberToObject(j, "spot_hours", r->spot_hours);
    cJSON_AddNumberToObject(j, "spot_cost", r->spot_cost);
    cJSON_AddBoolToObject(j, "worth_it", r->worth_it);
    return j;
}

char *baton_plan_train_row_json(const baton_plan_train_row *r)
{
    cJSON *j = train_row_object(r);
    char *s = j ? baton_json_print(j, 0) : NULL;
    cJSON_Delete(j);
    return s;
}

void baton_plan_train_json(FILE *f, const baton_plan_train *p)
{
    cJSON *doc = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(doc, "rows");
    for (size_t i = 0; rows && i < p->n; i++) cJSON_AddItemToArray(rows, train_row_object(&p->rows[i]));
    cJSON_AddNumberToObject(doc, "mtbi_h", isinf(p->mtbi_h) ? -1.0 : p->mtbi_h);
    cJSON_AddItemToObject(doc, "pick", p->pick >= 0 ? cJSON_CreateString(p->rows[p->pick].config) : cJSON_CreateNull());
    cJSON_AddItemToObject(doc, "pick_on_demand",
                          p->pick_od >= 0 ? cJSON_CreateString(p->rows[p->pick_od].config) : cJSON_CreateNull());
    if (rows) baton_json_write_lines(f, doc);
    cJSON_Delete(doc);
}
