/* test_fleet_cost.c — cost arithmetic: EC2's first-hour rule (no charge when the provider
 * interrupts within the first hour, but a charge when the instance ends by itself), the 60 s
 * minimum, per-second billing, the useful/restart/lost split, and the two savings figures, all
 * against sums done by hand. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "check.h"

#include <math.h>

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-9 * (1 + fabs((double)(b))))

int main(void)
{
    baton_cost_line l;
    /* interrupted by the provider after 30 min: free */
    baton_cost_in a = {1800, 0, 0, 0.10, 0.30, 1, 1};
    fleet_cost_line_compute(&a, &l);
    CHECK(l.free_first_hour && l.charged_s == 0 && l.spot_cost == 0);
    CHECK(NEAR(l.on_demand_cost, 0.15) && NEAR(l.useful_s, 1800));
    /* the same 30 min ending by itself (done, or crashed): charged per second */
    baton_cost_in b = a;
    b.provider_interrupted = 0;
    fleet_cost_line_compute(&b, &l);
    CHECK(!l.free_first_hour && NEAR(l.charged_s, 1800) && NEAR(l.spot_cost, 0.05));
    /* still running at 30 min: not known to be free yet */
    b = a;
    b.ended = 0;
    fleet_cost_line_compute(&b, &l);
    CHECK(!l.free_first_hour && NEAR(l.charged_s, 1800));
    /* interrupted after 2 h: every second counts; restart and lost time come out of useful */
    baton_cost_in c = {7200, 120, 300, 0.10, 0.30, 1, 1};
    fleet_cost_line_compute(&c, &l);
    CHECK(NEAR(l.charged_s, 7200) && NEAR(l.spot_cost, 0.20) && NEAR(l.useful_s, 6780));
    CHECK(NEAR(l.counterfactual_cost, 6780 * 0.30 / 3600));
    /* exactly one hour is not "within the first hour" */
    baton_cost_in d = {3600, 0, 0, 0.10, 0.30, 1, 1};
    fleet_cost_line_compute(&d, &l);
    CHECK(!l.free_first_hour && NEAR(l.charged_s, 3600));
    /* the 60 s minimum */
    baton_cost_in e = {20, 0, 0, 0.36, 1.0, 0, 1};
    fleet_cost_line_compute(&e, &l);
    CHECK(NEAR(l.charged_s, 60) && NEAR(l.spot_cost, 0.006));

    /* totals over three instances: 2 h interrupted (charged), 30 min interrupted (free), 1 h done */
    baton_cost_in in[3] = {{7200, 0, 600, 0.10, 0.30, 1, 1},
                           {1800, 60, 0, 0.10, 0.30, 1, 1},
                           {3600, 120, 0, 0.12, 0.40, 0, 1}};
    baton_cost_total t;
    fleet_cost_total_init(&t);
    for (int i = 0; i < 3; i++) {
        fleet_cost_line_compute(&in[i], &l);
        fleet_cost_total_add(&t, &in[i], &l);
    }
    fleet_cost_total_finish(&t);
    CHECK_EQ_U(t.instances, 3);
    CHECK(t.free_first_hour == 1);
    CHECK(NEAR(t.training_s, 12600));
    CHECK(NEAR(t.charged_s, 10800));
    CHECK(NEAR(t.spot_cost, 0.20 + 0.12));
    CHECK(NEAR(t.billable_s, 7200 * 0.10 / 0.30 + 3600 * 0.12 / 0.40));          /* 2400 + 1080 */
    CHECK(NEAR(t.savings_sagemaker_pct, (1 - 3480.0 / 12600) * 100));
    CHECK(NEAR(t.useful_s, 6600 + 1740 + 3480) && NEAR(t.restart_s, 180) && NEAR(t.lost_s, 600));
    CHECK(NEAR(t.useful_s + t.restart_s + t.lost_s, t.training_s));
    double cf = 6600 * 0.30 / 3600 + 1740 * 0.30 / 3600 + 3480 * 0.40 / 3600;
    CHECK(NEAR(t.counterfactual_cost, cf));
    CHECK(NEAR(t.savings_vs_on_demand_pct, (1 - 0.32 / cf) * 100));
    CHECK(NEAR(t.on_demand_cost, 7200 * 0.3 / 3600 + 1800 * 0.3 / 3600 + 3600 * 0.4 / 3600));
    /* nothing ran: no division by zero */
    fleet_cost_total_init(&t);
    fleet_cost_total_finish(&t);
    CHECK(t.savings_sagemaker_pct == 0 && t.savings_vs_on_demand_pct == 0);
    CHECK_DONE();
}
