/* plan_infer.c — `baton plan infer`'s rows: which catalog configuration serves a model most
 * cheaply within a P90 latency target.
 *
 * Rows come from measurements made here (infer-bench contexts; priced as the --here
 * configuration, or unpriced), from projections of those onto the other catalog configurations
 * (plan_project.c: the FLOP efficiency measured here, capped at 1, and the chip's memory-bandwidth
 * floor; always labelled "projected", with its basis), or from a latencies file. Configurations
 * that cannot be projected onto honestly are listed with the reason instead.
 *
 * Cost per row: sequential (latency per image) and throughput-bound (images/s of the context);
 * the pick is the row with the lowest throughput-bound cost whose P90 meets the target, never a
 * retired configuration unless asked, never a projection resting on the memory floor alone when a
 * measured or listed row meets the target. The order, the table, JSON and the chart: plan_report.c. */
#include "infer_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int add_row(baton_plan_infer *p, size_t *cap, const baton_plan_row *r, baton_err *err)
{
    if (p->n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        baton_plan_row *nr = realloc(p->rows, *cap * sizeof *nr);
        if (!nr) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
        p->rows = nr;
    }
    p->rows[p->n++] = *r;
    return BATON_OK;
}

/* Note a configuration not projected onto (once per configuration). */
static int add_skip(baton_plan_infer *p, const char *config, const char *why, baton_err *err)
{
    for (size_t i = 0; i < p->nskipped; i++)
        if (!strcmp(p->skipped[i].config, config)) return BATON_OK;
    baton_plan_skip *ns = realloc(p->skipped, (p->nskipped + 1) * sizeof *ns);
    if (!ns) return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    p->skipped = ns;
    snprintf(ns[p->nskipped].config, sizeof ns->config, "%s", config);
    snprintf(ns[p->nskipped].reason, sizeof ns->reason, "%s", why);
    p->nskipped++;
    return BATON_OK;
}

static void price_row(baton_plan_row *r, int batch, const baton_plan_infer_opts *o)
{
    if (r->price_per_h >= 0) {
        r->cost_seq = baton_cost_sequential(r->price_per_h, r->mean_ms / 1e3 / (batch > 0 ? batch : 1));
        r->cost_thr = baton_cost_throughput(r->price_per_h, r->per_s);
    } else {
        r->cost_seq = r->cost_thr = -1;
    }
    r->meets = o->slo_p90_ms <= 0 || r->p90_ms <= o->slo_p90_ms;
}

/* The pick: the lowest throughput-bound cost that meets the SLO. A projection that rests on the
 * memory floor alone (its FLOP estimate was below it) never beats a measured or listed row that
 * meets the SLO: it is a bound, not a figure. */
static void choose(baton_plan_infer *p, const baton_plan_infer_opts *o)
{
    int firm = 0;
    for (size_t i = 0; i < p->n; i++) {
        const baton_plan_row *r = &p->rows[i];
        firm |= r->source != BATON_SRC_PROJECTED && r->meets && r->cost_thr >= 0 && (!r->retired || o->include_retired);
    }
    p->pick = -1;
    for (size_t i = 0; i < p->n; i++) {
        const baton_plan_row *r = &p->rows[i];
        if (!r->meets || r->cost_thr < 0 || (r->retired && !o->include_retired)) continue;
        if (firm && r->source == BATON_SRC_PROJECTED && r->at_floor) continue;
        if (p->pick < 0 || r->cost_thr < p->rows[p->pick].cost_thr) p->pick = (long)i;
    }
}

/* The measured row of one context, and its projections. */
static int context_rows(baton_plan_infer *p, size_t *cap, const baton_infer_stats *s, const baton_infer_config *here,
                        const baton_infer_config *cfgs, size_t ncfg, const baton_plan_infer_opts *o, baton_err *err)
{
    baton_plan_row r = {0};
    snprintf(r.context, sizeof r.context, "%s %s t=%d b=%d", s->model[0] ? s->model : "?",
             baton_infer_path_name(s->ctx.path), s->ctx.threads, s->ctx.batch);
    snprintf(r.config, sizeof r.config, "%s", here ? here->name : "this machine");
    r.source = BATON_SRC_MEASURED;
    r.mean_ms = s->mean_ms;
    r.p90_ms = s->p90_ms;
    r.per_s = s->per_s;
    r.efficiency = infer_efficiency(s);
    if (r.efficiency > 0)
        snprintf(r.basis, sizeof r.basis, "%.3g%% of %.0f GFLOP/s", r.efficiency * 100, s->peak_gflops);
    else
        snprintf(r.basis, sizeof r.basis, "measured here");
    r.price_per_h = here ? here->on_demand : -1;
    r.retired = here && here->retired;
    price_row(&r, s->ctx.batch, o);
    int rc = add_row(p, cap, &r, err);
    if (rc || !o->project || s->peak_gflops <= 0) return rc;
    for (size_t k = 0; k < ncfg && !rc; k++) {
        const baton_infer_config *cf = &cfgs[k];
        if (here && !strcmp(cf->name, here->name)) continue;
        baton_plan_row q;
        char why[160];
        if (!infer_project(s, &r, cf, &q, why, sizeof why)) {
            rc = add_skip(p, cf->name, why, err);
            continue;
        }
        snprintf(q.config, sizeof q.config, "%s", cf->name);
        q.price_per_h = cf->on_demand;
        q.retired = cf->retired;
        price_row(&q, s->ctx.batch, o);
        rc = add_row(p, cap, &q, err);
    }
    return rc;
}

int baton_plan_infer_measured(const baton_infer_catalog *c, const baton_infer_stats *st, size_t n,
                              const baton_plan_infer_opts *o, baton_plan_infer *p, baton_err *err)
{
    memset(p, 0, sizeof *p);
    p->pick = -1;
    baton_infer_config here = {0};
    int rc = BATON_OK;
    if (o->here && (rc = baton_infer_catalog_config(c, o->here, &here, err))) return baton_err_prefix(err, "--here");
    baton_infer_config *cfgs = NULL;
    size_t ncfg = 0, cap = 0, peaks = 0, used = 0;
    if ((rc = baton_infer_catalog_configs(c, o->include_retired, &cfgs, &ncfg, err))) return rc;
    for (size_t i = 0; i < n && !rc; i++) {
        if (st[i].skipped[0]) continue;
        used++;
        peaks += st[i].peak_gflops > 0;
        rc = context_rows(p, &cap, &st[i], o->here ? &here : NULL, cfgs, ncfg, o, err);
    }
    free(cfgs);
    if (!rc && used == 0) rc = baton_err_set(err, BATON_ERR_ARG, "no measured contexts (all skipped)");
    if (rc) {
        baton_plan_infer_free(p);
        return rc;
    }
    if (o->project && !peaks)
        snprintf(p->note, sizeof p->note, "nothing projected: the measurements have no peak FLOP/s (infer-bench "
                                          "--peak; plan infer --ckpt measures it)");
    choose(p, o);
    return BATON_OK;
}

int baton_plan_infer_file(const baton_infer_catalog *c, const baton_latency_row *lr, size_t n, const baton_plan_infer_opts *o,
                          baton_plan_infer *p, baton_err *err)
{
    memset(p, 0, sizeof *p);
    p->pick = -1;
    size_t cap = 0;
    int rc = BATON_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        baton_infer_config cf;
        baton_plan_row r = {0};
        if (lr[i].price_per_h >= 0) {
            r.price_per_h = lr[i].price_per_h;
            r.retired = baton_infer_catalog_config(c, lr[i].config, &cf, NULL) == BATON_OK && cf.retired;
        } else if ((rc = baton_infer_catalog_config(c, lr[i].config, &cf, err))) {
            baton_err_prefix(err, "line %zu", lr[i].line);
            break;
        } else {
            r.price_per_h = cf.on_demand;
            r.retired = cf.retired;
        }
        snprintf(r.config, sizeof r.config, "%s", lr[i].config);
        snprintf(r.context, sizeof r.context, "%s", lr[i].label[0] ? lr[i].label : "from file");
        snprintf(r.basis, sizeof r.basis, "%s", lr[i].price_per_h >= 0 ? "from file (its price)" : "from file");
        r.source = BATON_SRC_FILE;
        r.mean_ms = lr[i].mean_ms;
        r.p90_from_mean = lr[i].p90_ms < 0;
        r.p90_ms = lr[i].p90_ms < 0 ? lr[i].mean_ms : lr[i].p90_ms;
        r.per_s = lr[i].per_s;
        price_row(&r, lr[i].batch, o);
        rc = add_row(p, &cap, &r, err);
    }
    if (rc) {
        baton_plan_infer_free(p);
        return rc;
    }
    choose(p, o);
    return BATON_OK;
}

void baton_plan_infer_free(baton_plan_infer *p)
{
    free(p->rows);
    free(p->skipped);
    p->rows = NULL;
    p->skipped = NULL;
    p->n = p->nskipped = 0;
}
