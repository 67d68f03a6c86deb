/* plan_infer.c — `baton plan infer`: which catalog configuration serves a model most cheaply within a
 * P90 latency target.
 *
 * Rows come from measurements made here (infer-bench contexts; priced as the --here
 * configuration, or unpriced), from projections of those onto every other catalog configuration
 * with an FP32 TFLOPS figure, or from a latencies file. A projection keeps the FLOP efficiency
 * measured here: efficiency = achieved FLOP/s ÷ this machine's measured peak, so on a type with T
 * TFLOPS latency = model FLOPs × batch ÷ (efficiency × T) = measured latency × peak ÷ T. It is
 * always labelled "projected", never "measured" (batch-1 work rarely scales to a larger machine
 * or a GPU that well: treat projections as optimistic).
 *
 * Cost per row: sequential (latency per image) and throughput-bound (images/s of the context);
 * the pick is the row with the lowest throughput-bound cost whose P90 meets the target. */
#include "infer_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const src_name[] = {"measured", "projected", "file"};

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

static void choose(baton_plan_infer *p, const baton_plan_infer_opts *o)
{
    p->pick = -1;
    for (size_t i = 0; i < p->n; i++) {
        const baton_plan_row *r = &p->rows[i];
        if (!r->meets || r->cost_thr < 0 || (r->retired && !o->include_retired)) continue;
        if (p->pick < 0 || r->cost_thr < p->rows[p->pick].cost_thr) p->pick = (long)i;
    }
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
    size_t ncfg = 0, cap = 0;
    if ((rc = baton_infer_catalog_configs(c, o->include_retired, &cfgs, &ncfg, err))) return rc;
    for (size_t i = 0; i < n && !rc; i++) {
        const baton_infer_stats *s = &st[i];
        if (s->skipped[0]) continue;
        baton_plan_row r = {0};
        snprintf(r.context, sizeof r.context, "%s %s t=%d b=%d", s->model[0] ? s->model : "?",
                 baton_infer_path_name(s->ctx.path), s->ctx.threads, s->ctx.batch);
        snprintf(r.config, sizeof r.config, "%s", o->here ? here.name : "this machine");
        r.source = BATON_SRC_MEASURED;
        r.mean_ms = s->mean_ms;
        r.p90_ms = s->p90_ms;
        r.per_s = s->per_s;
        r.price_per_h = o->here ? here.on_demand : -1;
        price_row(&r, s->ctx.batch, o);
        rc = add_row(p, &cap, &r, err);
        if (!o->project || s->peak_gflops <= 0) continue;
        for (size_t k = 0; k < ncfg && !rc; k++) {
            const baton_infer_config *cf = &cfgs[k];
            if (cf->tflops <= 0 || !cf->project || (o->here && !strcmp(cf->name, here.name))) continue;
            const double scale = s->peak_gflops / (cf->tflops * 1e3);
            baton_plan_row q = r;
            snprintf(q.config, sizeof q.config, "%s", cf->name);
            q.source = BATON_SRC_PROJECTED;
            q.mean_ms = r.mean_ms * scale;
            q.p90_ms = r.p90_ms * scale;
            q.per_s = r.per_s / scale;
            q.price_per_h = cf->on_demand;
            q.retired = cf->retired;
            price_row(&q, s->ctx.batch, o);
            rc = add_row(p, &cap, &q, err);
        }
    }
    free(cfgs);
    if (!rc && p->n == 0) rc = baton_err_set(err, BATON_ERR_ARG, "no measured contexts (all skipped)");
    if (rc) {
        baton_plan_infer_free(p);
        return rc;
    }
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
    p->rows = NULL;
    p->n = 0;
}

static void money(char *b, size_t n, double v)
{
    if (v < 0) snprintf(b, n, "-");
    else snprintf(b, n, "$%.4f", v);
}

void baton_plan_infer_table(FILE *f, const baton_plan_infer *p, const baton_plan_infer_opts *o)
{
    fprintf(f, "%-24s %-9s %-28s %9s %9s %10s %7s %11s %11s  %s\n", "configuration", "source", "context", "p90 ms",
            "mean ms", "images/s", "$/h", "seq $/100k", "thr $/100k", "SLO");
    for (size_t i = 0; i < p->n; i++) {
        const baton_plan_row *r = &p->rows[i];
        char price[16], a[16], b[16];
        if (r->price_per_h < 0) snprintf(price, sizeof price, "-");
        else snprintf(price, sizeof price, "%.3f", r->price_per_h);
        money(a, sizeof a, r->cost_seq);
        money(b, sizeof b, r->cost_thr);
        fprintf(f, "%-24s %-9s %-28s %9.3f%s %9.3f %10.1f %7s %11s %11s  %s%s%s\n", r->config, src_name[r->source],
                r->context, r->p90_ms, r->p90_from_mean ? "*" : " ", r->mean_ms, r->per_s, price, a, b,
                o->slo_p90_ms > 0 ? (r->meets ? "meets" : "misses") : "-", r->retired ? " (retired)" : "",
                (long)i == p->pick ? "  <- pick" : "");
    }
    int retired = 0;
    for (size_t i = 0; i < p->n; i++) retired |= p->rows[i].retired;
    if (retired && !o->include_retired)
        fprintf(f, "(retired configurations can no longer be bought and are never picked; --include-retired to "
                   "compare as the seed did)\n");
    int starred = 0;
    for (size_t i = 0; i < p->n; i++) starred |= p->rows[i].p90_from_mean;
    if (starred) fprintf(f, "* no P90 known: the mean stands in for it\n");
    if (p->pick >= 0) {
        const baton_plan_row *r = &p->rows[p->pick];
        fprintf(f, "pick: %s (%s, %s): $%.4f per 100k inferences (throughput-bound; sequential $%.4f), P90 %.3f ms%s\n",
                r->config, r->context, src_name[r->source], r->cost_thr, r->cost_seq, r->p90_ms,
                o->slo_p90_ms > 0 ? "" : " (no SLO given: the cheapest)");
    } else {
        fprintf(f, "pick: none: no priced configuration meets P90 <= %.3f ms%s\n", o->slo_p90_ms,
                o->here ? "" : " (measured rows need --here TYPE to be priced)");
    }
}

char *baton_plan_row_json(const baton_plan_row *r)
{
    char buf[768];
    snprintf(buf, sizeof buf,
             "{\"configuration\":\"%s\",\"source\":\"%s\",\"context\":\"%s\",\"p90_ms\":%.4f,\"p90_from_mean\":%s,"
             "\"mean_ms\":%.4f,\"per_s\":%.2f,\"price_per_h\":%.4f,\"cost_seq_100k\":%.5f,\"cost_thr_100k\":%.5f,"
             "\"meets_slo\":%s,\"retired\":%s}",
             r->config, src_name[r->source], r->context, r->p90_ms, r->p90_from_mean ? "true" : "false", r->mean_ms,
             r->per_s, r->price_per_h, r->cost_seq, r->cost_thr, r->meets ? "true" : "false",
             r->retired ? "true" : "false");
    return strdup(buf);
}

static int cmp_cost(const void *a, const void *b)
{
    const baton_plan_row *x = *(const baton_plan_row *const *)a, *y = *(const baton_plan_row *const *)b;
    if (x->cost_thr != y->cost_thr) return x->cost_thr < y->cost_thr ? -1 : 1;
    return x->p90_ms < y->p90_ms ? -1 : x->p90_ms > y->p90_ms;
}

int baton_plan_infer_svg(const char *path, const baton_plan_infer *p, baton_err *err)
{
    size_t n = p->n;
    double *x = calloc(4 * (n + 1), sizeof *x);
    const char **lab = calloc(2 * (n + 1), sizeof *lab);
    const baton_plan_row **sorted = calloc(n + 1, sizeof *sorted);
    if (!x || !lab || !sorted) {
        free(x);
        free(lab);
        free(sorted);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    double *y = x + 2 * (n + 1);
    baton_svg_points s[4];
    size_t ns = 0, used = 0;
    for (int src = 0; src < 3; src++) {
        size_t k0 = used;
        for (size_t i = 0; i < n; i++) {
            const baton_plan_row *r = &p->rows[i];
            if (r->source != src || r->cost_thr < 0) continue;
            x[used] = r->cost_thr;
            y[used] = r->p90_ms;
            lab[used] = r->config;
            used++;
        }
        if (used > k0)
            s[ns++] = (baton_svg_points){.name = src_name[src], .x = x + k0, .y = y + k0, .n = used - k0,
                                         .labels = lab + k0};
    }
    /* the Pareto front: cheapest first, each point faster than every cheaper one */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p->rows[i].cost_thr >= 0) sorted[m++] = &p->rows[i];
    qsort(sorted, m, sizeof *sorted, cmp_cost);
    size_t k0 = used;
    double best = INFINITY;
    for (size_t i = 0; i < m; i++)
        if (sorted[i]->p90_ms < best) {
            best = sorted[i]->p90_ms;
            x[used] = sorted[i]->cost_thr;
            y[used] = sorted[i]->p90_ms;
            used++;
        }
    if (used > k0) s[ns++] = (baton_svg_points){.name = "Pareto front", .x = x + k0, .y = y + k0, .n = used - k0, .line = 1};
    int rc = ns ? baton_svg_scatter(path, "Inference: P90 latency against cost", "$ per 100k inferences (throughput-bound)",
                                    "P90 latency (ms)", s, ns, err)
                : baton_err_set(err, BATON_ERR_ARG, "no priced rows to chart");
    free(x);
    free(lab);
    free(sorted);
    return rc;
}
