/* plan_report.c — `baton plan infer`'s output: which rows to show and in what order (one per
 * configuration by default, --all for every context; the pick first, then by throughput-bound
 * cost per 100k), the table a person reads, the JSON lines a script reads, and the Pareto chart
 * (log-log, one marker shape per source, only the front labelled).
 *
 * Contract: reads a finished plan (plan_infer.c); writes to the FILE or path given. */
#include "infer_internal.h"

#include <cJSON.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *const src_name[] = {"measured", "projected", "file"};

/* ------------------------------------------------------------------ order */
/* Is row a a better representative of its configuration than b: meeting the SLO and priced, the
 * cheaper; else the faster. */
static int better_rep(const baton_plan_row *a, const baton_plan_row *b)
{
    const int ca = a->meets && a->cost_thr >= 0, cb = b->meets && b->cost_thr >= 0;
    if (ca != cb) return ca;
    if (ca && a->cost_thr != b->cost_thr) return a->cost_thr < b->cost_thr;
    return a->p90_ms < b->p90_ms;
}

static int cmp_shown(const void *pa, const void *pb)
{
    const baton_plan_row *a = *(const baton_plan_row *const *)pa, *b = *(const baton_plan_row *const *)pb;
    const int ua = a->cost_thr < 0, ub = b->cost_thr < 0;
    if (ua != ub) return ua - ub;   /* unpriced last */
    if (!ua && a->cost_thr != b->cost_thr) return a->cost_thr < b->cost_thr ? -1 : 1;
    if (a->p90_ms != b->p90_ms) return a->p90_ms < b->p90_ms ? -1 : 1;
    int c = strcmp(a->config, b->config);
    if (c) return c;
    return a < b ? -1 : a > b;   /* rows of one array: their order there */
}

size_t baton_plan_infer_order(const baton_plan_infer *p, int all, size_t *idx)
{
    const baton_plan_row **v = calloc(p->n + 1, sizeof *v);
    if (!v) return 0;
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++) {
        /* one per configuration: the pick stands for its own; else the best row of the configuration */
        int keep = 1;
        for (size_t j = 0; j < p->n && keep && !all && (long)i != p->pick; j++) {
            if (j == i || strcmp(p->rows[j].config, p->rows[i].config)) continue;
            if ((long)j == p->pick || better_rep(&p->rows[j], &p->rows[i]) ||
                (j < i && !better_rep(&p->rows[i], &p->rows[j])))
                keep = 0;
        }
        if (keep) v[m++] = &p->rows[i];
    }
    qsort(v, m, sizeof *v, cmp_shown);
    size_t k = 0;
    if (p->pick >= 0) idx[k++] = (size_t)p->pick;   /* the pick first */
    for (size_t i = 0; i < m; i++)
        if ((long)(v[i] - p->rows) != p->pick) idx[k++] = (size_t)(v[i] - p->rows);
    free(v);
    return k;
}

/* ------------------------------------------------------------------ table */
void infer_money_text(char *b, size_t n, double v)
{
    if (v < 0) snprintf(b, n, "-");
    else if (v >= 0.01 || v == 0) snprintf(b, n, "$%.4f", v);
    else snprintf(b, n, "$%.6f", v);
}

/* A latency with four significant digits, trailing zeros kept (25.90, 0.002743, 1234). */
static void ms_text(char *b, size_t n, double v)
{
    if (v >= 1000) {
        snprintf(b, n, "%.0f", v);
        return;
    }
    snprintf(b, n, "%#.4g", v);
    size_t l = strlen(b);
    if (l && b[l - 1] == '.') b[l - 1] = 0;
}

static size_t widest(const baton_plan_infer *p, const size_t *idx, size_t m, size_t off, size_t least)
{
    size_t w = least;
    for (size_t k = 0; k < m; k++) {
        size_t l = strlen((const char *)&p->rows[idx[k]] + off);
        if (l > w) w = l;
    }
    return w;
}

/* What was not projected, one line per reason. */
static void skipped_lines(FILE *f, const baton_plan_infer *p)
{
    unsigned char *done = calloc(p->nskipped + 1, 1);
    for (size_t i = 0; done && i < p->nskipped; i++) {
        if (done[i]) continue;
        fprintf(f, "not projected: %s", p->skipped[i].config);
        for (size_t j = i + 1; j < p->nskipped; j++)
            if (!done[j] && !strcmp(p->skipped[j].reason, p->skipped[i].reason)) {
                fprintf(f, ", %s", p->skipped[j].config);
                done[j] = 1;
            }
        fprintf(f, " — %s\n", p->skipped[i].reason);
    }
    free(done);
}

static void footer(FILE *f, const baton_plan_infer *p, const baton_plan_infer_opts *o, const size_t *idx, size_t m)
{
    int retired = 0, starred = 0, projected = 0;
    for (size_t k = 0; k < m; k++) {
        retired |= p->rows[idx[k]].retired;
        starred |= p->rows[idx[k]].p90_from_mean;
        projected |= p->rows[idx[k]].source == BATON_SRC_PROJECTED;
    }
    if (retired && !o->include_retired)
        fprintf(f, "(retired configurations can no longer be bought and are never picked; --include-retired to "
                   "compare as the seed did)\n");
    if (starred) fprintf(f, "* no P90 known: the mean stands in for it\n");
    if (projected)
        fprintf(f, "projected (basis: TFLOPS x the FLOP efficiency measured here, at most 100%%; or the memory "
                   "floor: the bytes a query moves / the chip's bandwidth; on a device plus what a call costs there: "
                   "copies, the wait and a launch per kernel, per the catalog): a lower bound, not a promise; "
                   "batch-1 work on a big chip usually does worse\n");
    skipped_lines(f, p);
    if (p->note[0]) fprintf(f, "%s\n", p->note);
    if (m < p->n) fprintf(f, "(%zu more rows for other contexts of the same configurations: --all)\n", p->n - m);
    if (p->pick >= 0) {
        const baton_plan_row *r = &p->rows[p->pick];
        char a[24], b[24], why[200];
        infer_money_text(a, sizeof a, r->cost_thr);
        infer_money_text(b, sizeof b, r->cost_seq);
        fprintf(f, "pick: %s (%s, %s): %s per 100k inferences (throughput-bound; sequential %s), P90 %.4g ms%s\n",
                r->config, r->context, src_name[r->source], a, b, r->p90_ms,
                o->slo_p90_ms > 0 ? "" : " (no SLO given: the cheapest)");
        fprintf(f, "the pick rests on %s\n", infer_pick_basis(r, why, sizeof why));
    } else {
        fprintf(f, "pick: none: no priced configuration meets P90 <= %.3f ms%s\n", o->slo_p90_ms,
                o->here ? "" : " (measured rows need --here TYPE to be priced)");
    }
}

void baton_plan_infer_table(FILE *f, const baton_plan_infer *p, const baton_plan_infer_opts *o)
{
    size_t *idx = calloc(p->n + 1, sizeof *idx);
    if (!idx) return;
    const size_t m = baton_plan_infer_order(p, o->all, idx);
    const int wc = (int)widest(p, idx, m, offsetof(baton_plan_row, config), 13);
    const int wx = (int)widest(p, idx, m, offsetof(baton_plan_row, context), 7);
    const int wb = (int)widest(p, idx, m, offsetof(baton_plan_row, basis), 5);
    fprintf(f, "%-*s %-9s %-*s %-*s %10s %10s %10s %7s %11s %11s  %s\n", wc, "configuration", "source", wx, "context",
            wb, "basis", "p90 ms", "mean ms", "images/s", "$/h", "thr $/100k", "seq $/100k", "SLO");
    for (size_t k = 0; k < m; k++) {
        const baton_plan_row *r = &p->rows[idx[k]];
        char price[16], a[24], b[24], p90[24];
        if (r->price_per_h < 0) snprintf(price, sizeof price, "-");
        else snprintf(price, sizeof price, "%.3f", r->price_per_h);
        infer_money_text(a, sizeof a, r->cost_thr);
        infer_money_text(b, sizeof b, r->cost_seq);
        char mean[24];
        ms_text(p90, sizeof p90 - 1, r->p90_ms);
        if (r->p90_from_mean) strcat(p90, "*");
        ms_text(mean, sizeof mean, r->mean_ms);
        fprintf(f, "%-*s %-9s %-*s %-*s %10s %10s %10.1f %7s %11s %11s  %s%s%s\n", wc, r->config, src_name[r->source],
                wx, r->context, wb, r->basis, p90, mean, r->per_s, price, a, b,
                o->slo_p90_ms > 0 ? (r->meets ? "meets" : "misses") : "-", r->retired ? " (retired)" : "",
                (long)idx[k] == p->pick ? "  <- pick" : "");
    }
    footer(f, p, o, idx, m);
    free(idx);
}

/* ------------------------------------------------------------------ JSON */
/* Every value through cJSON and baton_json_print: strings escaped, numbers exact. */
static cJSON *row_object(const baton_plan_row *r)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "configuration", r->config);
    cJSON_AddStringToObject(j, "source", src_name[r->source]);
    cJSON_AddStringToObject(j, "context", r->context);
    cJSON_AddStringToObject(j, "basis", r->basis);
    cJSON_AddNumberToObject(j, "p90_ms", r->p90_ms);
    cJSON_AddBoolToObject(j, "p90_from_mean", r->p90_from_mean);
    cJSON_AddNumberToObject(j, "mean_ms", r->mean_ms);
    cJSON_AddNumberToObject(j, "per_s", r->per_s);
    cJSON_AddNumberToObject(j, "efficiency", r->efficiency);
    cJSON_AddNumberToObject(j, "floor_ms", r->floor_ms);
    cJSON_AddBoolToObject(j, "at_floor", r->at_floor);
    cJSON_AddNumberToObject(j, "call_ms", r->call_ms);
    cJSON_AddNumberToObject(j, "price_per_h", r->price_per_h);
    cJSON_AddNumberToObject(j, "cost_seq_100k", r->cost_seq);
    cJSON_AddNumberToObject(j, "cost_thr_100k", r->cost_thr);
    cJSON_AddBoolToObject(j, "meets_slo", r->meets);
    cJSON_AddBoolToObject(j, "retired", r->retired);
    return j;
}

char *infer_plan_row_json(const baton_plan_row *r)
{
    cJSON *j = row_object(r);
    char *s = j ? baton_json_print(j, 0) : NULL;
    cJSON_Delete(j);
    return s;
}

const char *infer_pick_basis(const baton_plan_row *r, char *b, size_t n)
{
    if (r->source == BATON_SRC_MEASURED) snprintf(b, n, "a measurement on this machine");
    else if (r->source == BATON_SRC_FILE) snprintf(b, n, "the latencies file's figures");
    else if (r->at_floor)
        snprintf(b, n, "a projection: %s, a lower bound (no measured row meets the SLO): measure on %s before "
                       "relying on it", r->basis, r->config);
    else
        snprintf(b, n, "a projection: %s, a lower bound: measure on %s before relying on it", r->basis, r->config);
    return b;
}

void baton_plan_infer_json(FILE *f, const baton_plan_infer *p, const baton_plan_infer_opts *o)
{
    size_t *idx = calloc(p->n + 1, sizeof *idx);
    cJSON *doc = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(doc, "rows");
    if (!idx || !rows) {
        free(idx);
        cJSON_Delete(doc);
        return;
    }
    const size_t m = baton_plan_infer_order(p, o->all, idx);
    /* one document, a row per line: {"rows":[...], "pick":{...}|null} */
    for (size_t k = 0; k < m; k++) cJSON_AddItemToArray(rows, row_object(&p->rows[idx[k]]));
    for (size_t i = 0; i < p->nskipped; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "configuration", p->skipped[i].config);
        cJSON_AddStringToObject(j, "source", "not projected");
        cJSON_AddStringToObject(j, "reason", p->skipped[i].reason);
        cJSON_AddItemToArray(rows, j);
    }
    cJSON *pick = cJSON_CreateNull();
    if (p->pick >= 0) {
        char why[200];
        const baton_plan_row *r = &p->rows[p->pick];
        cJSON_Delete(pick);
        pick = cJSON_CreateObject();
        cJSON_AddStringToObject(pick, "configuration", r->config);
        cJSON_AddStringToObject(pick, "context", r->context);
        cJSON_AddStringToObject(pick, "source", src_name[r->source]);
        cJSON_AddNumberToObject(pick, "cost_thr_100k", r->cost_thr);
        cJSON_AddNumberToObject(pick, "p90_ms", r->p90_ms);
        cJSON_AddStringToObject(pick, "rests_on", infer_pick_basis(r, why, sizeof why));
    }
    cJSON_AddItemToObject(doc, "pick", pick);
    baton_json_write_lines(f, doc);
    cJSON_Delete(doc);
    free(idx);
}

/* ------------------------------------------------------------------ chart */
static int cmp_cost(const void *a, const void *b)
{
    const baton_plan_row *x = *(const baton_plan_row *const *)a, *y = *(const baton_plan_row *const *)b;
    if (x->cost_thr != y->cost_thr) return x->cost_thr < y->cost_thr ? -1 : 1;
    return x->p90_ms < y->p90_ms ? -1 : x->p90_ms > y->p90_ms;
}

int baton_plan_infer_svg(const char *path, const baton_plan_infer *p, const baton_plan_infer_opts *o, baton_err *err)
{
    const size_t n = p->n;
    size_t *idx = calloc(n + 1, sizeof *idx);
    double *x = calloc(4 * (n + 1), sizeof *x);
    const char **lab = calloc(2 * (n + 1), sizeof *lab);
    const baton_plan_row **pts = calloc(n + 1, sizeof *pts);
    if (!idx || !x || !lab || !pts) {
        free(idx), free(x), free(lab), free(pts);
        return baton_err_set(err, BATON_ERR_NOMEM, "out of memory");
    }
    double *y = x + 2 * (n + 1);
    /* one point per configuration, priced, current unless asked; the pick's row for its own */
    size_t m = baton_plan_infer_order(p, 0, idx), np = 0;
    for (size_t k = 0; k < m; k++) {
        const baton_plan_row *r = &p->rows[idx[k]];
        if (r->cost_thr > 0 && r->p90_ms > 0 && (!r->retired || o->include_retired)) pts[np++] = r;
    }
    static const int marker[3] = {BATON_SVG_DOT, BATON_SVG_DIAMOND, BATON_SVG_SQUARE};
    static const char *const legend[3] = {"measured", "projected (a floor, see the table)", "from a latencies file"};
    baton_svg_points s[4];
    size_t ns = 0, used = 0;
    for (int src = 0; src < 3; src++) {
        const size_t k0 = used;
        for (size_t i = 0; i < np; i++)
            if (pts[i]->source == src) {
                x[used] = pts[i]->cost_thr;
                y[used] = pts[i]->p90_ms;
                used++;
            }
        if (used > k0)
            s[ns++] = (baton_svg_points){.name = legend[src], .x = x + k0, .y = y + k0, .n = used - k0,
                                         .marker = marker[src]};
    }
    /* the Pareto front: cheapest first, each point faster than every cheaper one; only it is labelled */
    qsort(pts, np, sizeof *pts, cmp_cost);
    const size_t k0 = used;
    double best = INFINITY;
    char pick[120] = "";
    for (size_t i = 0; i < np; i++)
        if (pts[i]->p90_ms < best) {
            best = pts[i]->p90_ms;
            x[used] = pts[i]->cost_thr;
            y[used] = pts[i]->p90_ms;
            lab[used - k0] = pts[i]->config;
            if (p->pick >= 0 && pts[i] == &p->rows[p->pick]) {   /* the pick is on the front: say so */
                snprintf(pick, sizeof pick, "%s (pick)", pts[i]->config);
                lab[used - k0] = pick;
            }
            used++;
        }
    if (used > k0)
        s[ns++] = (baton_svg_points){.name = "Pareto front (labelled)", .x = x + k0, .y = y + k0, .n = used - k0,
                                     .labels = lab, .line = 1, .marker = BATON_SVG_NOMARK};
    int rc = ns ? baton_svg_scatter_axes(path, "Inference: P90 latency against cost per 100k",
                                         "$ per 100k inferences (throughput-bound, log scale)",
                                         "P90 latency (ms, log scale)", s, ns, BATON_SVG_XLOG | BATON_SVG_YLOG, err)
                : baton_err_set(err, BATON_ERR_ARG, "no priced rows to chart%s",
                                o->here ? "" : " (measured rows need --here TYPE to be priced)");
    free(idx), free(x), free(lab), free(pts);
    return rc;
}
