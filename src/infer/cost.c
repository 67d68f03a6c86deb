/* cost.c — cost per 100k inferences and the latencies file.
 *
 *   sequential       = $/h / 3600 × latency_s × 100 000   (one query at a time, latency per image)
 *   throughput-bound = $/h × 100 000 / (3600 × inferences_per_s)
 *
 * The latencies file lets anyone feed in measurements made elsewhere (the seed's, their own): CSV
 * with a header row naming its columns (configuration and mean_ms required; p90_ms, per_s, batch,
 * price_per_h, label, note optional, in any order; '#' lines are comments). Every malformed line is
 * reported with its number and the column. */
#include "infer_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double baton_cost_sequential(double price_per_h, double latency_s) { return price_per_h / 3600.0 * latency_s * 1e5; }

double baton_cost_throughput(double price_per_h, double per_s)
{
    return per_s > 0 ? price_per_h * 1e5 / (3600.0 * per_s) : -1;
}

enum { C_CONFIG, C_MEAN, C_P90, C_PER_S, C_BATCH, C_PRICE, C_LABEL, C_NOTE, C_COUNT };
static const char *const col_names[C_COUNT] = {"configuration", "mean_ms", "p90_ms", "per_s",
                                               "batch",         "price_per_h", "label", "note"};

static int number(const char *name, size_t line, const char *col, const char *s, double *v, baton_err *err)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(x) || x < 0)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %s: '%s' is not a non-negative number", name, line, col, s);
    *v = x;
    return BATON_OK;
}

/* Cut line l at commas into f (up to 16 fields, trimmed); the count, 17 when there are more. */
static int split_fields(char *l, char **f)
{
    int nf = 0;
    for (char *p = l;;) {
        if (nf == 16) return 17;
        char *c = strchr(p, ',');
        f[nf++] = p;
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    for (int i = 0; i < nf; i++) infer_text_trim(&f[i]);
    return nf;
}

/* The header row: each field's column into map. */
static int parse_header(const char *name, size_t line, char **f, int nf, int *map, baton_err *err)
{
    int seen[C_COUNT] = {0}, rc = BATON_OK;
    for (int i = 0; i < nf && !rc; i++) {
        int k = 0;
        while (k < C_COUNT && strcmp(f[i], col_names[k])) k++;
        if (k == C_COUNT)
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: unknown column '%s' (known: configuration, "
                               "mean_ms, p90_ms, per_s, batch, price_per_h, label, note)", name, line, f[i]);
        else if (seen[k]++)
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: column '%s' appears twice", name, line, f[i]);
        map[i] = k;
    }
    if (!rc && (!seen[C_CONFIG] || !seen[C_MEAN]))
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: the header needs the columns configuration and "
                           "mean_ms", name, line);
    return rc;
}

/* One field x of column col into row r. */
static int parse_field(const char *name, size_t line, int col, const char *x, baton_latency_row *r, baton_err *err)
{
    double d = 0;
    int rc = BATON_OK;
    switch (col) {
    case C_CONFIG:
        if (!*x || strlen(x) >= sizeof r->config)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: configuration is empty or too long", name, line);
        snprintf(r->config, sizeof r->config, "%s", x);
        return BATON_OK;
    case C_MEAN:
        rc = number(name, line, "mean_ms", x, &r->mean_ms, err);
        if (!rc && r->mean_ms <= 0) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: mean_ms must be > 0", name, line);
        return rc;
    case C_P90:
        return *x ? number(name, line, "p90_ms", x, &r->p90_ms, err) : BATON_OK;
    case C_PER_S:
        return *x ? number(name, line, "per_s", x, &r->per_s, err) : BATON_OK;
    case C_PRICE:
        return *x ? number(name, line, "price_per_h", x, &r->price_per_h, err) : BATON_OK;
    case C_BATCH:
        if (!*x) return BATON_OK;
        rc = number(name, line, "batch", x, &d, err);
        if (!rc && (d < 1 || d > 65536 || d != floor(d)))
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: batch: '%s' is not a whole number >= 1", name, line, x);
        if (!rc) r->batch = (int)d;   /* only once it is known to fit */
        return rc;
    case C_LABEL:
        snprintf(r->label, sizeof r->label, "%s", x);
        return BATON_OK;
    default:
        return BATON_OK;
    }
}

/* A data row of nf fields (columns in map) into r. */
static int parse_row(const char *name, size_t line, char **f, int nf, const int *map, baton_latency_row *r,
                     baton_err *err)
{
    memset(r, 0, sizeof *r);
    r->line = line;
    r->p90_ms = r->price_per_h = r->per_s = -1;
    r->batch = 1;
    int rc = BATON_OK;
    for (int i = 0; i < nf && !rc; i++) rc = parse_field(name, line, map[i], f[i], r, err);
    if (!rc && r->per_s < 0) r->per_s = r->batch / (r->mean_ms / 1e3);
    return rc;
}

int baton_latencies_parse(const char *name, const char *text, size_t len, baton_latency_row **out, size_t *n,
                          baton_err *err)
{
    *out = NULL;
    *n = 0;
    char *copy;
    int crc = infer_text_copy(name, text, len, &copy, err);
    if (crc) return crc;
    int map[16], ncols = 0, rc = BATON_OK;
    baton_latency_row *v = NULL;
    size_t cnt = 0, cap = 0, line = 0;
    char *s = copy, *l;
    while (!rc && (l = infer_text_line(&s, &line))) {
        char *f[16];
        const int nf = split_fields(l, f);
        if (nf > 16) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: more than 16 columns", name, line);
            break;
        }
        if (!ncols) {   /* the header */
            rc = parse_header(name, line, f, nf, map, err);
            ncols = nf;
            continue;
        }
        if (nf != ncols) {
            rc = baton_err_set(err, BATON_ERR_FORMAT, "%s:%zu: %d fields, the header has %d", name, line, nf, ncols);
            break;
        }
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            baton_latency_row *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                rc = baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
                break;
            }
            v = nv;
        }
        rc = parse_row(name, line, f, nf, map, &v[cnt], err);
        if (!rc) cnt++;
    }
    free(copy);
    if (!rc && !ncols) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: empty (no header line)", name);
    if (!rc && !cnt) rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: no rows after the header", name);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return BATON_OK;
}

int baton_latencies_load(const char *path, baton_latency_row **out, size_t *n, baton_err *err)
{
    uint8_t *data = NULL;
    size_t len = 0;
    int rc = baton_file_read_all(path, 16u << 20, &data, &len, err);
    if (rc) return rc;
    rc = baton_latencies_parse(path, (const char *)data, len, out, n, err);
    free(data);
    return rc;
}
