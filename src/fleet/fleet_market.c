/* fleet_market.c — the local backend's spot market: pools (instance type × zone), allocation
 * strategies, capacity that disappears for a while after a reclaim, and when each instance is
 * interrupted (an explicit schedule first, then seeded draws from the type's hazard). The strategies
 * are AWS's three for Spot: price-capacity-optimized (the default), capacity-optimized, lowest-price.
 *
 * Contract: everything is in simulated seconds and deterministic: the same job, seed and
 * schedule give the same pool choices and interruption times. No clocks, no I/O. A schedule entry
 * may also name a point of training (after_steps, at_step): the supervisor then waits for the
 * trainer's progress, so the interruption lands at the same step on a fast machine and a slow one. */
#include "fleet_parts.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double bucket_mid[BATON_BUCKET_COUNT] = {0.025, 0.075, 0.125, 0.175, 0.25};

double fleet_bucket_monthly(baton_bucket b)
{
    return (unsigned)b < BATON_BUCKET_COUNT ? bucket_mid[b] : bucket_mid[BATON_BUCKET_GT20];
}

double fleet_bucket_hazard(baton_bucket b)
{
    return -log(1.0 - fleet_bucket_monthly(b)) / BATON_MONTH_S;
}

int fleet_market_init(baton_market *m, const baton_job *job, baton_err *err)
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
            fleet_market_free(m);
            return baton_err_set(err, BATON_ERR_NOMEM, "market: out of memory");
        }
        memcpy(m->sched, job->market.interrupts, job->market.ninterrupts * sizeof *m->sched);
        m->nsched = job->market.ninterrupts;
    }
    return BATON_OK;
}

void fleet_market_free(baton_market *m)
{
    free(m->busy_until);
    free(m->sched);
    m->busy_until = NULL;
    m->sched = NULL;
    m->nsched = 0;
}

int fleet_market_set_schedule(baton_market *m, const char *spec, baton_err *err)
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
        if (fleet_duration_parse(item, &in->after) || (notice && fleet_duration_parse(notice, &in->notice)) ||
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
    const baton_job_type *t = &j->types[fleet_pool_type(m, pool)];
    double price = baton_job_spot_price(t, j->zones[fleet_pool_zone(m, pool)]) / t->speed;
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

int fleet_market_choose(const baton_market *m, double t, const char *prefer_zone, double *retry_at)
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
        int pref = prefer_zone && !strcmp(m->job->zones[fleet_pool_zone(m, p)], prefer_zone);
        /* compare (score, tie, not preferred) lexicographically; prices within 1e-9 are equal */
        int better = best < 0 || s < bs - 1e-9 ||
                     (fabs(s - bs) <= 1e-9 && (tie < bt - 1e-9 || (fabs(tie - bt) <= 1e-9 && pref && !bpref)));
        if (better) best = p, bs = s, bt = tie, bpref = pref;
    }
    if (best < 0 && retry_at) *retry_at = first_free;
    return best;
}

void fleet_market_reclaimed(baton_market *m, int pool, double t)
{
    if (pool >= 0 && (size_t)pool < m->npools) m->busy_until[pool] = t + m->job->market.capacity_cooldown;
}

/* The schedule entry for the launch_index-th instance of task (the k-th entry naming the task), or
 * NULL when the schedule has none. */
static const baton_job_interrupt *sched_entry(const baton_market *m, int task, int launch_index)
{
    int k = 0;
    for (size_t i = 0; i < m->nsched; i++)
        if (m->sched[i].task == task && k++ == launch_index) return &m->sched[i];
    return NULL;
}

void fleet_market_plan(const baton_market *m, int task, int launch_index, int pool, double *after, double *notice,
                       int64_t *after_steps)
{
    const baton_job *j = m->job;
    *after = -1;
    *after_steps = 0;
    *notice = j->market.notice;
    const baton_job_interrupt *e = sched_entry(m, task, launch_index);
    if (e) {
        *after = e->after;
        *notice = e->notice;
        *after_steps = e->after_steps;
        return;
    }
    if (!j->market.random || !(j->market.hazard_scale > 0) || pool < 0) return;
    double rate = fleet_bucket_hazard(j->types[fleet_pool_type(m, pool)].bucket) * j->market.hazard_scale;
    baton_rng r;
    baton_rng_seed3(&r, j->market.seed, 0x6d61726b6574ULL + (uint64_t)task, (uint64_t)launch_index);
    double u = ((double)(baton_rng_next(&r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);   /* (0, 1) */
    *after = -log(u) / rate;
}

int64_t fleet_market_steps_to(const baton_market *m, int task, int launch_index, int64_t resumed)
{
    const baton_job_interrupt *e = sched_entry(m, task, launch_index);
    if (!e || e->at_step <= 0) return 0;
    if (resumed < 0) resumed = 0;
    return e->at_step > resumed ? e->at_step - resumed : 1;
}

/* append to out[cap] at *len; once it does not fit, end with "..." and append nothing more */
static void put(char *out, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < cap - *len) {
        *len += (size_t)n;
        return;
    }
    if (cap >= 4) memcpy(out + cap - 4, "...", 4);
    *len = cap;
}

static void put_entry(const baton_market *m, const baton_job_interrupt *e, char *out, size_t cap, size_t *len)
{
    char d[32];
    if (e->at_step > 0) put(out, cap, len, "at step %lld", (long long)e->at_step);
    if (e->after_steps > 0) put(out, cap, len, "after %lld step(s) trained", (long long)e->after_steps);
    if (e->after > 0) {
        baton_fleet_fmt_duration(e->after, d, sizeof d);
        put(out, cap, len, "%s%s after it runs", e->at_step > 0 || e->after_steps > 0 ? ", not before " : "", d);
    } else if (e->at_step <= 0 && e->after_steps <= 0) {
        put(out, cap, len, "as soon as it runs");
    }
    if (e->notice <= 0) put(out, cap, len, " (no notice)");
    else if (e->notice != m->job->market.notice) {
        baton_fleet_fmt_duration(e->notice, d, sizeof d);
        put(out, cap, len, " (%s notice)", d);
    }
}

void fleet_market_describe(const baton_market *m, char *out, size_t cap)
{
    const baton_job *j = m->job;
    const int drawn = j->market.random && j->market.hazard_scale > 0;
    size_t len = 0;
    if (!cap) return;
    out[0] = 0;
    if (m->nsched) {
        put(out, cap, &len, "interruptions scheduled (%zu):", m->nsched);
        for (size_t t = 0; t < j->ncommands; t++) {
            int k = 0;
            for (size_t i = 0; i < m->nsched; i++) {
                if ((size_t)m->sched[i].task != t) continue;
                if (k == 0 && j->ncommands > 1) put(out, cap, &len, " task %zu:", t);
                put(out, cap, &len, "%s instance %d ", k ? "," : "", k + 1);
                put_entry(m, &m->sched[i], out, cap, &len);
                k++;
            }
            if (k && t + 1 < j->ncommands) put(out, cap, &len, ";");
        }
        if (drawn) put(out, cap, &len, "; for later instances, drawn from the market's hazard (x%g, seed %llu)",
                       j->market.hazard_scale, (unsigned long long)j->market.seed);
        else put(out, cap, &len, "; none drawn from the market's hazard");
    } else if (drawn) {
        put(out, cap, &len, "interruptions drawn from the market's hazard: each type's Spot Advisor rate x%g, seed %llu",
            j->market.hazard_scale, (unsigned long long)j->market.seed);
    } else {
        put(out, cap, &len, "no interruptions: no schedule, and the market's hazard is off");
    }
}
