/* fleet_market.c — the local backend's spot market: pools (instance type × zone), allocation
 * strategies, capacity that disappears for a while after a reclaim, and when each instance is
 * interrupted (an explicit schedule first, then seeded draws from the type's hazard). The strategies
 * are AWS's three for Spot: price-capacity-optimized (the default), capacity-optimized, lowest-price.
 *
 * Contract: everything is in simulated seconds and deterministic: the same job, seed and
 * schedule give the same pool choices and interruption times. No clocks, no I/O. */
#include "fleet_parts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double bucket_mid[BATON_BUCKET_COUNT] = {0.025, 0.075, 0.125, 0.175, 0.25};

double baton_bucket_monthly(baton_bucket b)
{
    return (unsigned)b < BATON_BUCKET_COUNT ? bucket_mid[b] : bucket_mid[BATON_BUCKET_GT20];
}

double baton_bucket_hazard(baton_bucket b)
{
    return -log(1.0 - baton_bucket_monthly(b)) / BATON_MONTH_S;
}

int baton_market_init(baton_market *m, const baton_job *job, baton_err *err)
{
    memset(m, 0, sizeof *m);
    m->job = job;
    m->npools = job->ntypes * job->nzones;
    if (!m->npools) return baton_err_set(err, BATON_ERR_ARG, "%s: no instance types or zones", job->path);
    m->busy_until = calloc(m->npools, sizeof *m->busy_until);
    if (!m->busy_until) return baton_err_set(err, BATON_ERR_NOMEM, "market: out of memory");
    if (job->market.ninterrupts) {
        m->sched = malloc(job->market.ninterrupts * sizeof *m->sched);
        if (!m->sched) {
            baton_market_free(m);
            return baton_err_set(err, BATON_ERR_NOMEM, "market: out of memory");
        }
        memcpy(m->sched, job->market.interrupts, job->market.ninterrupts * sizeof *m->sched);
        m->nsched = job->market.ninterrupts;
    }
    return BATON_OK;
}

void baton_market_free(baton_market *m)
{
    free(m->busy_until);
    free(m->sched);
    m->busy_until = NULL;
    m->sched = NULL;
    m->nsched = 0;
}

int baton_market_set_schedule(baton_market *m, const char *spec, baton_err *err)
{
    size_t cap = 1;
    for (const char *p = spec; *p; p++) cap += *p == ',';
    baton_job_interrupt *s = calloc(cap, sizeof *s);
    if (!s) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    size_t n = 0;
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[128], whole[128], *notice, *task;
        if (len == 0 || len >= sizeof item) {
            free(s);
            return baton_err_set(err, BATON_ERR_USAGE, "--interrupts: entry %zu: expected AFTER[/NOTICE][@TASK]", n + 1);
        }
        memcpy(item, p, len);
        item[len] = 0;
        memcpy(whole, item, len + 1);
        task = strchr(item, '@');
        if (task) *task++ = 0;
        notice = strchr(item, '/');
        if (notice) *notice++ = 0;
        baton_job_interrupt *in = &s[n];
        in->notice = m->job->market.notice;
        char *tend = NULL;
        long t = task ? strtol(task, &tend, 10) : 0;
        if (baton_duration_parse(item, &in->after) || (notice && baton_duration_parse(notice, &in->notice)) ||
            (task && (!*task || *tend || t < 0 || (size_t)t >= m->job->ncommands))) {
            free(s);
            return baton_err_set(err, BATON_ERR_USAGE,
                                 "--interrupts: entry %zu '%s': expected AFTER[/NOTICE][@TASK] with durations like "
                                 "90s or 5m (not negative) and a task below %zu", n + 1, whole, m->job->ncommands);
        }
        in->task = (int)t;
        n++;
        p += len;
        if (*p == ',') p++;
    }
    free(m->sched);
    m->sched = s;
    m->nsched = n;
    return BATON_OK;
}

/* A pool's rank under the job's strategy: (score, tie), lower is better, compared in that order
 * (then the preferred zone, then the pool listed first). The interruption bucket stands for how
 * likely the pool is to be interrupted (AWS: how much spare capacity it has); the price is the
 * zone's spot price per unit of speed.
 *   price-capacity-optimized: the pools least likely to be interrupted, the cheapest of them
 *                             (AWS: "the lowest priced of the pools with the highest capacity");
 *   capacity-optimized:       the pools least likely to be interrupted, price ignored;
 *   lowest-price:             the cheapest pool, the least interrupted breaking ties. */
static double pool_score(const baton_market *m, int pool, double *tie)
{
    const baton_job *j = m->job;
    const baton_job_type *t = &j->types[baton_pool_type(m, pool)];
    double price = baton_job_spot_price(t, j->zones[baton_pool_zone(m, pool)]) / t->speed;
    switch (j->alloc) {
    case BATON_ALLOC_CAPACITY_OPTIMIZED:
        *tie = 0;
        return (double)t->bucket;
    case BATON_ALLOC_LOWEST_PRICE:
        *tie = (double)t->bucket;
        return price;
    default:
        *tie = price;
        return (double)t->bucket;
    }
}

int baton_market_choose(const baton_market *m, double t, const char *prefer_zone, double *retry_at)
{
    int best = -1;
    double bs = 0, bt = 0, first_free = INFINITY;
    int bpref = 0;
    for (int p = 0; p < (int)m->npools; p++) {
        if (m->busy_until[p] > t) {
            if (m->busy_until[p] < first_free) first_free = m->busy_until[p];
            continue;
        }
        double tie, s = pool_score(m, p, &tie);
        int pref = prefer_zone && !strcmp(m->job->zones[baton_pool_zone(m, p)], prefer_zone);
        /* compare (score, tie, not preferred) lexicographically; prices within 1e-9 are equal */
        int better = best < 0 || s < bs - 1e-9 ||
                     (fabs(s - bs) <= 1e-9 && (tie < bt - 1e-9 || (fabs(tie - bt) <= 1e-9 && pref && !bpref)));
        if (better) best = p, bs = s, bt = tie, bpref = pref;
    }
    if (best < 0 && retry_at) *retry_at = first_free;
    return best;
}

void baton_market_reclaimed(baton_market *m, int pool, double t)
{
    if (pool >= 0 && (size_t)pool < m->npools) m->busy_until[pool] = t + m->job->market.capacity_cooldown;
}

void baton_market_plan(const baton_market *m, int task, int launch_index, int pool, double *after, double *notice,
                       int64_t *after_steps)
{
    const baton_job *j = m->job;
    *after = -1;
    *after_steps = 0;
    *notice = j->market.notice;
    int k = 0;
    for (size_t i = 0; i < m->nsched; i++) {
        if (m->sched[i].task != task) continue;
        if (k++ == launch_index) {
            *after = m->sched[i].after;
            *notice = m->sched[i].notice;
            *after_steps = m->sched[i].after_steps;
            return;
        }
    }
    if (!j->market.random || !(j->market.hazard_scale > 0) || pool < 0) return;
    double rate = baton_bucket_hazard(j->types[baton_pool_type(m, pool)].bucket) * j->market.hazard_scale;
    baton_rng r;
    baton_rng_seed3(&r, j->market.seed, 0x6d61726b6574ULL + (uint64_t)task, (uint64_t)launch_index);
    double u = ((double)(baton_rng_next(&r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);   /* (0, 1) */
    *after = -log(u) / rate;
}
