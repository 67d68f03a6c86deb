/* test_fleet_market.c — the spot-market simulator: hazards from the Spot Advisor buckets, seeded
 * draws (deterministic, with the right statistics), the explicit schedule taking precedence, the
 * --interrupts syntax, and the three allocation strategies (price-capacity-optimized the default)
 * with capacity cooldown. */
#include "../../src/fleet/fleet_parts.h"
#include "baton/fleet.h"
#include "check.h"

#include <math.h>
#include <string.h>

static int job(baton_job *j, const char *text)
{
    baton_err e = {0};
    int rc = baton_job_parse("t.yaml", text, strlen(text), j, &e);
    if (rc) fprintf(stderr, "%s\n", e.msg);
    return rc;
}

/* The three strategies on pools where they disagree: two types in the least interrupted bucket
 * (the dearer listed first), a cheaper one that is interrupted more, a fast one per unit of speed. */
static void strategies(void)
{
    baton_job j;
    baton_err e = {0};
    CHECK(job(&j, "name: s\ncommand: a\nzones: [za]\n"
                  "instance_types:\n"
                  "  - {name: steady-dear, on_demand_price: 1, spot_price: 0.40, interruption: '<5%'}\n"
                  "  - {name: steady-cheap, on_demand_price: 1, spot_price: 0.35, interruption: '<5%'}\n"
                  "  - {name: risky-cheapest, on_demand_price: 1, spot_price: 0.20, interruption: '15-20%'}\n"
                  "  - {name: fast, on_demand_price: 2, spot_price: 0.60, speed: 4, interruption: '5-10%'}\n") == 0);
    baton_market m;
    CHECK(fleet_market_init(&m, &j, &e) == 0);
    static const struct { baton_alloc a; const char *want; } cases[] = {
        {BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED, "steady-cheap"},   /* the cheapest of the least interrupted */
        {BATON_ALLOC_CAPACITY_OPTIMIZED, "steady-dear"},          /* least interrupted, price ignored: listed first */
        {BATON_ALLOC_LOWEST_PRICE, "fast"},                       /* 0.15 per unit of speed */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        j.alloc = cases[i].a;
        double retry;
        int p = fleet_market_choose(&m, 0, NULL, &retry);
        CHECK_MSG(p >= 0 && !strcmp(j.types[fleet_pool_type(&m, p)].name, cases[i].want), "%s: %s, expected %s",
                  baton_alloc_name(cases[i].a), p >= 0 ? j.types[fleet_pool_type(&m, p)].name : "none", cases[i].want);
    }
    /* price-capacity-optimized moves on to the next bucket only when the best one has no capacity */
    j.alloc = BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED;
    fleet_market_reclaimed(&m, 0, 0);
    fleet_market_reclaimed(&m, 1, 0);
    double retry;
    int p = fleet_market_choose(&m, 10, NULL, &retry);
    CHECK(p >= 0 && !strcmp(j.types[fleet_pool_type(&m, p)].name, "fast"));
    fleet_market_free(&m);
    baton_job_free(&j);
}

/* A schedule by the task's step (at_step): counted from where each instance resumed, at least one
 * step for an instance that resumes at or past it; and the line that says how interruptions come. */
static void schedule_by_step(void)
{
    baton_job j;
    baton_err e = {0};
    char line[512];
    CHECK(job(&j, "name: d\ncommand: a\nzones: [za]\ninstance_types: [{name: t, on_demand_price: 1, spot_price: 0.3}]\n"
                  "market:\n  interruptions:\n    - {at_step: 281}\n    - {at_step: 610}\n"
                  "    - {after_steps: 5, notice: 0}\n") == 0);
    baton_market m;
    CHECK(fleet_market_init(&m, &j, &e) == 0);
    double a, n;
    int64_t st;
    fleet_market_plan(&m, 0, 0, 0, &a, &n, &st);
    CHECK(a == 0 && n == 120 && st == 0);   /* the step condition is set when the instance starts */
    CHECK(fleet_market_steps_to(&m, 0, 0, 0) == 281);
    CHECK(fleet_market_steps_to(&m, 0, 0, -1) == 281);    /* no checkpoint yet */
    CHECK(fleet_market_steps_to(&m, 0, 1, 283) == 327);   /* resumed from the first notice's checkpoint */
    CHECK(fleet_market_steps_to(&m, 0, 1, 700) == 1);     /* already past it: one step, then the notice */
    CHECK(fleet_market_steps_to(&m, 0, 2, 700) == 0);     /* after_steps: not an at_step entry */
    CHECK(fleet_market_steps_to(&m, 0, 3, 0) == 0);       /* beyond the schedule */
    fleet_market_describe(&m, line, sizeof line);
    CHECK_MSG(strstr(line, "interruptions scheduled (3): instance 1 at step 281, instance 2 at step 610, instance 3 "
                           "after 5 step(s) trained (no notice); none drawn from the market's hazard"), "%s", line);
    char tiny[24];
    fleet_market_describe(&m, tiny, sizeof tiny);
    CHECK_MSG(strlen(tiny) == sizeof tiny - 1 && !strcmp(tiny + sizeof tiny - 4, "..."), "%s", tiny);
    fleet_market_free(&m);
    baton_job_free(&j);

    CHECK(job(&j, "name: d\ncommand: a\nzones: [za]\ninstance_types: [{name: t, on_demand_price: 1, spot_price: 0.3}]\n"
                  "market: {hazard_scale: 6000, seed: 3}\n") == 0);
    CHECK(fleet_market_init(&m, &j, &e) == 0);
    fleet_market_describe(&m, line, sizeof line);
    CHECK_MSG(strstr(line, "interruptions drawn from the market's hazard") && strstr(line, "x6000, seed 3"), "%s", line);
    j.market.random = 0;
    fleet_market_describe(&m, line, sizeof line);
    CHECK_MSG(strstr(line, "no interruptions"), "%s", line);
    fleet_market_free(&m);
    baton_job_free(&j);
}

int main(void)
{
    /* hazards: increasing by bucket; a month at the >20 % rate reclaims 25 % */
    for (int b = 1; b < BATON_BUCKET_COUNT; b++)
        CHECK(fleet_bucket_hazard((baton_bucket)b) > fleet_bucket_hazard((baton_bucket)(b - 1)));
    CHECK(fabs(1 - exp(-fleet_bucket_hazard(BATON_BUCKET_GT20) * BATON_MONTH_S) - 0.25) < 1e-12);
    CHECK(fabs(1 - exp(-fleet_bucket_hazard(BATON_BUCKET_LT5) * BATON_MONTH_S) - 0.025) < 1e-12);

    baton_job j;
    baton_err e = {0};
    CHECK(job(&j, "name: m\ncommands: [a, b]\nzones: [za, zb]\n"
                  "instance_types:\n"
                  "  - {name: cheap, on_demand_price: 1, spot_price: {za: 0.30, zb: 0.30}, interruption: '>20%'}\n"
                  "  - {name: safe, on_demand_price: 1, spot_price: 0.40, interruption: '<5%'}\n"
                  "  - {name: fast, on_demand_price: 2, spot_price: 0.50, speed: 2, interruption: '10-15%'}\n"
                  "market: {seed: 11, capacity_cooldown: 1h}\n") == 0);
    baton_market m;
    CHECK(fleet_market_init(&m, &j, &e) == 0);
    CHECK_EQ_U(m.npools, 6);

    /* seeded draws: deterministic, seed-dependent, exponential with the bucket's rate */
    double a1, n1, a2, n2;
    int64_t s1, s2;
    int pool_cheap = 0;   /* type 0, zone 0 */
    fleet_market_plan(&m, 0, 3, pool_cheap, &a1, &n1, &s1);
    fleet_market_plan(&m, 0, 3, pool_cheap, &a2, &n2, &s2);
    CHECK(a1 > 0 && a1 == a2 && n1 == 120 && s1 == 0 && s2 == 0);
    fleet_market_plan(&m, 1, 3, pool_cheap, &a2, &n2, &s2);
    CHECK(a1 != a2);
    const int N = 40000;
    double sum = 0, rate = fleet_bucket_hazard(BATON_BUCKET_GT20);
    int within_month = 0;
    for (int k = 0; k < N; k++) {
        double a, n;
        fleet_market_plan(&m, 0, k, pool_cheap, &a, &n, &s1);
        sum += a;
        within_month += a <= BATON_MONTH_S;
    }
    double mean = sum / N;
    CHECK_MSG(fabs(mean * rate - 1) < 0.03, "mean %g, expected %g", mean, 1 / rate);
    CHECK_MSG(fabs((double)within_month / N - 0.25) < 0.01, "%d of %d within a month", within_month, N);
    /* another seed: a different sequence with the same statistics */
    j.market.seed = 12;
    double first12;
    fleet_market_plan(&m, 0, 3, pool_cheap, &first12, &n2, &s1);
    CHECK(first12 != a1);
    /* hazard_scale multiplies the rate */
    j.market.seed = 11;
    j.market.hazard_scale = 100;
    fleet_market_plan(&m, 0, 3, pool_cheap, &a2, &n2, &s1);
    CHECK(fabs(a2 * 100 - a1) < 1e-6 * a1);
    j.market.hazard_scale = 1;

    /* allocation: lowest-price compares price per unit of speed (fast: 0.25) */
    CHECK(j.alloc == BATON_ALLOC_PRICE_CAPACITY_OPTIMIZED);   /* the default */
    j.alloc = BATON_ALLOC_LOWEST_PRICE;
    double retry;
    int p = fleet_market_choose(&m, 0, NULL, &retry);
    CHECK(p >= 0 && !strcmp(j.types[fleet_pool_type(&m, p)].name, "fast") && fleet_pool_zone(&m, p) == 0);
    /* ties go to the preferred zone */
    p = fleet_market_choose(&m, 0, "zb", &retry);
    CHECK(!strcmp(j.types[fleet_pool_type(&m, p)].name, "fast") && fleet_pool_zone(&m, p) == 1);
    /* a reclaimed pool has no capacity for the cooldown: the other zone, then the next type */
    fleet_market_reclaimed(&m, p, 100);
    int q = fleet_market_choose(&m, 200, "zb", &retry);
    CHECK(!strcmp(j.types[fleet_pool_type(&m, q)].name, "fast") && fleet_pool_zone(&m, q) == 0);
    fleet_market_reclaimed(&m, q, 150);
    int r = fleet_market_choose(&m, 200, "zb", &retry);
    CHECK(!strcmp(j.types[fleet_pool_type(&m, r)].name, "cheap") && fleet_pool_zone(&m, r) == 1);
    CHECK(fleet_market_choose(&m, 3701, "zb", &retry) == p);   /* cooled down */
    for (int k = 0; k < 6; k++) fleet_market_reclaimed(&m, k, 1000 + k);
    CHECK(fleet_market_choose(&m, 2000, NULL, &retry) == -1 && retry == 4600);
    /* capacity-optimized: the lowest bucket first */
    for (int k = 0; k < 6; k++) m.busy_until[k] = 0;
    j.alloc = BATON_ALLOC_CAPACITY_OPTIMIZED;
    p = fleet_market_choose(&m, 0, NULL, &retry);
    CHECK(!strcmp(j.types[fleet_pool_type(&m, p)].name, "safe"));
    j.alloc = BATON_ALLOC_LOWEST_PRICE;
    strategies();
    schedule_by_step();

    /* the explicit schedule comes first, per task, in order; then the random market */
    CHECK(fleet_market_set_schedule(&m, "5m,90s/0,10m/30s@1", &e) == 0);
    CHECK_EQ_U(m.nsched, 3);
    fleet_market_plan(&m, 0, 0, 0, &a1, &n1, &s1);
    CHECK(a1 == 300 && n1 == 120);
    fleet_market_plan(&m, 0, 1, 0, &a1, &n1, &s1);
    CHECK(a1 == 90 && n1 == 0);
    fleet_market_plan(&m, 1, 0, 0, &a1, &n1, &s1);
    CHECK(a1 == 600 && n1 == 30);
    fleet_market_plan(&m, 0, 2, 0, &a1, &n1, &s1);   /* schedule exhausted: random (on) */
    CHECK(a1 > 0);
    j.market.random = 0;
    fleet_market_plan(&m, 0, 2, 0, &a1, &n1, &s1);
    CHECK(a1 < 0);
    CHECK(fleet_market_set_schedule(&m, "5m,x", &e) != 0 && strstr(e.msg, "entry 2"));
    CHECK(fleet_market_set_schedule(&m, "5m@7", &e) != 0 && strstr(e.msg, "task"));
    CHECK(fleet_market_set_schedule(&m, "5m,,1m", &e) != 0);
    fleet_market_free(&m);
    baton_job_free(&j);
    CHECK_DONE();
}
