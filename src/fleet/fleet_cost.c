/* fleet_cost.c — cost accounting for a fleet: per-instance charges under EC2's spot billing rules
 * (per second with a 60 s minimum; nothing when the provider interrupts within the first hour),
 * the on-demand comparison, and the useful / restart / lost split (the formulas are in fleet.h).
 * Pure arithmetic: no clocks, no I/O, so tests can check every sum by hand. */
#include "fleet_parts.h"

#include <string.h>

void fleet_cost_line_compute(const baton_cost_in *in, baton_cost_line *out)
{
    memset(out, 0, sizeof *out);
    double run = in->running_s > 0 ? in->running_s : 0;
    if (in->ended && in->provider_interrupted && run < 3600) {
        out->free_first_hour = 1;
        out->charged_s = 0;
    } else {
        out->charged_s = run > 0 && run < 60 ? 60 : run;
    }
    out->spot_cost = out->charged_s * in->spot_price / 3600;
    out->on_demand_cost = run * in->on_demand_price / 3600;
    double overhead = in->restart_s + in->lost_s;
    if (overhead > run) overhead = run;
    out->useful_s = run - overhead;
    out->counterfactual_cost = out->useful_s * in->on_demand_price / 3600;
}

void fleet_cost_total_init(baton_cost_total *t) { memset(t, 0, sizeof *t); }

void fleet_cost_total_add(baton_cost_total *t, const baton_cost_in *in, const baton_cost_line *l)
{
    double run = in->running_s > 0 ? in->running_s : 0;
    t->instances++;
    t->training_s += run;
    t->charged_s += l->charged_s;
    if (in->on_demand_price > 0) t->billable_s += l->charged_s * in->spot_price / in->on_demand_price;
    t->useful_s += l->useful_s;
    double restart = in->restart_s < run ? in->restart_s : run;
    t->restart_s += restart;
    t->lost_s += run - l->useful_s - restart;
    t->spot_cost += l->spot_cost;
    t->on_demand_cost += l->on_demand_cost;
    t->counterfactual_cost += l->counterfactual_cost;
    t->free_first_hour += l->free_first_hour;
}

void fleet_cost_total_finish(baton_cost_total *t)
{
    t->savings_sagemaker_pct = t->training_s > 0 ? (1 - t->billable_s / t->training_s) * 100 : 0;
    t->savings_vs_on_demand_pct =
        t->counterfactual_cost > 0 ? (1 - t->spot_cost / t->counterfactual_cost) * 100 : 0;
}
