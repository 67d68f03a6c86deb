/* track.c — a race track from DeepRacer waypoint rows (a .npy file or a built-in design): checks,
 * DeepRacer's clean-up, the lines of both driving directions, the on-track grid and the figures
 * `baton race track` prints.
 *
 * Contract: rows are N × 6 (centre x, y, inner x, y, outer x, y, metres); a loop repeats its first
 * row last (exactly, as DeepRacer tests it). Refused, naming the row: fewer than 3 rows, other
 * column counts, NaN or infinite values, zero width, borders that cross each other or themselves.
 * Rows whose centre point repeats the previous one are dropped, as the simulator does. */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

#define TRACK_MAX_ROWS 20000
#define GRID_CELL_M 0.05

static void geom_kappa(race_geom *g);

static void geom_free(race_geom *g)
{
    free(g->c);
    free(g->in);
    free(g->out);
    free(g->cs);
    free(g->ins);
    free(g->outs);
    free(g->ndist);
    free(g->kappa);
    free(g->cinv);
    free(g->iinv);
    free(g->oinv);
    memset(g, 0, sizeof *g);
}

static double cum(const double *p, size_t n, double *cs)
{
    cs[0] = 0;
    for (size_t k = 1; k < n; k++) cs[k] = cs[k - 1] + hypot(p[2 * k] - p[2 * k - 2], p[2 * k + 1] - p[2 * k - 1]);
    return cs[n - 1];
}

static int geom_build(race_geom *g, const double *rows, size_t n, int loop, int reversed)
{
    memset(g, 0, sizeof *g);
    if (n < 2) return BATON_ERR_ARG;
    g->n = n;
    g->loop = loop;
    g->c = malloc(2 * n * sizeof(double));
    g->in = malloc(2 * n * sizeof(double));
    g->out = malloc(2 * n * sizeof(double));
    g->cs = malloc(n * sizeof(double));
    g->ins = malloc(n * sizeof(double));
    g->outs = malloc(n * sizeof(double));
    g->ndist = malloc(n * sizeof(double));
    g->kappa = malloc(n * sizeof(double));
    g->cinv = malloc(n * sizeof(double));
    g->iinv = malloc(n * sizeof(double));
    g->oinv = malloc(n * sizeof(double));
    if (!g->c || !g->in || !g->out || !g->cs || !g->ins || !g->outs || !g->ndist || !g->kappa || !g->cinv ||
        !g->iinv || !g->oinv) {
        geom_free(g);
        return BATON_ERR_NOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        const double *r = rows + 6 * (reversed ? n - 1 - k : k);
        g->c[2 * k] = r[0], g->c[2 * k + 1] = r[1];
        g->in[2 * k] = r[2], g->in[2 * k + 1] = r[3];
        g->out[2 * k] = r[4], g->out[2 * k + 1] = r[5];
    }
    g->length = cum(g->c, n, g->cs);
    cum(g->in, n, g->ins);
    cum(g->out, n, g->outs);
    for (size_t k = 0; k + 1 < n; k++) g->ndist[k] = g->length > 0 ? g->cs[k] / g->length : 0;
    g->ndist[n - 1] = 1.0;
    double area = 0;   /* shoelace over the centre ring: > 0 counter-clockwise */
    for (size_t k = 0; k + 1 < n; k++) area += g->c[2 * k] * g->c[2 * k + 3] - g->c[2 * k + 2] * g->c[2 * k + 1];
    g->ccw = loop ? area > 0 : 1;   /* DeepRacer takes an open track as counter-clockwise */
    const double *pts[3] = {g->c, g->in, g->out};
    double *inv[3] = {g->cinv, g->iinv, g->oinv};
    for (int l = 0; l < 3; l++) {
        for (size_t k = 0; k + 1 < n; k++) {
            double ex = pts[l][2 * k + 2] - pts[l][2 * k], ey = pts[l][2 * k + 3] - pts[l][2 * k + 1];
            double l2 = ex * ex + ey * ey;
            inv[l][k] = l2 > 0 ? 1 / l2 : 0;
        }
        inv[l][n - 1] = 0;
    }
    g->cl = (race_poly){n, g->c, g->cs, g->cinv};
    g->il = (race_poly){n, g->in, g->ins, g->iinv};
    g->ol = (race_poly){n, g->out, g->outs, g->oinv};
    geom_kappa(g);
    return BATON_OK;
}

static int seg_cross(const double *a, const double *b, const double *c, const double *d)
{
    double o1 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    double o2 = (b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0]);
    double o3 = (d[0] - c[0]) * (a[1] - c[1]) - (d[1] - c[1]) * (a[0] - c[0]);
    double o4 = (d[0] - c[0]) * (b[1] - c[1]) - (d[1] - c[1]) * (b[0] - c[0]);
    return ((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0));
}

/* Edges of the track polygon: borders (inner first, then outer), and the end caps of an open
 * track. Edge k < n-1 is inner segment k, n-1 <= k < 2(n-1) outer segment k-(n-1). */
static int build_edges(baton_race_track *t)
{
    const race_geom *g = &t->fwd;
    size_t ns = g->n - 1;
    t->nedges = 2 * ns + (g->loop ? 0 : 2);
    t->edges = malloc(t->nedges * sizeof *t->edges);
    if (!t->edges) return BATON_ERR_NOMEM;
    for (size_t k = 0; k < ns; k++) {
        t->edges[k] = (race_edge){g->in[2 * k], g->in[2 * k + 1], g->in[2 * k + 2], g->in[2 * k + 3]};
        t->edges[ns + k] = (race_edge){g->out[2 * k], g->out[2 * k + 1], g->out[2 * k + 2], g->out[2 * k + 3]};
    }
    if (!g->loop) {
        t->edges[2 * ns] = (race_edge){g->in[0], g->in[1], g->out[0], g->out[1]};
        t->edges[2 * ns + 1] = (race_edge){g->in[2 * ns], g->in[2 * ns + 1], g->out[2 * ns], g->out[2 * ns + 1]};
    }
    return BATON_OK;
}

/* Border crossings, found through the grid's cells (pairs of edges that share a cell). */
static int check_crossings(const baton_race_track *t, baton_err *err)
{
    const race_grid *gr = &t->grid;
    size_t ns = t->fwd.n - 1;
    int loop = t->fwd.loop;
    for (size_t c = 0; c < (size_t)gr->nx * (size_t)gr->ny; c++) {
        for (uint32_t a = gr->off[c]; a < gr->off[c + 1]; a++)
            for (uint32_t b = a + 1; b < gr->off[c + 1]; b++) {
                size_t e1 = gr->idx[a], e2 = gr->idx[b];
                if (e1 > e2) {
                    size_t s = e1;
                    e1 = e2;
                    e2 = s;
                }
                if (e2 >= 2 * ns) continue;   /* end caps meet both borders at their ends */
                int inner1 = e1 < ns, inner2 = e2 < ns;
                size_t k1 = inner1 ? e1 : e1 - ns, k2 = inner2 ? e2 : e2 - ns;
                if (inner1 == inner2 && (k2 == k1 + 1 || (loop && k1 == 0 && k2 == ns - 1))) continue;
                const race_edge *p = &t->edges[e1], *q = &t->edges[e2];
                double a0[2] = {p->ax, p->ay}, a1[2] = {p->bx, p->by}, b0[2] = {q->ax, q->ay}, b1[2] = {q->bx, q->by};
                if (!seg_cross(a0, a1, b0, b1)) continue;
                if (inner1 != inner2)
                    return baton_err_set(err, BATON_ERR_FORMAT, "%s: the inner border (rows %zu-%zu) crosses the "
                                         "outer border (rows %zu-%zu)", t->name, k1, k1 + 1, k2, k2 + 1);
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: the %s border crosses itself (rows %zu-%zu and "
                                     "%zu-%zu)", t->name, inner1 ? "inner" : "outer", k1, k1 + 1, k2, k2 + 1);
            }
    }
    return BATON_OK;
}

/* Signed curvature of the circle through three points (0 when collinear). */
static double kappa3(double ax, double ay, double bx, double by, double cx, double cy)
{
    double a = hypot(bx - cx, by - cy), b = hypot(ax - cx, ay - cy), c = hypot(ax - bx, ay - by);
    double cr = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
    return a * b * c > 1e-15 && fabs(cr) > 1e-12 ? 2 * cr / (a * b * c) : 0;
}

/* Each waypoint's curvature through the waypoints about 0.25 m behind and ahead (vertices lie on
 * the drawn curve; points interpolated on the chords would bias it high). */
static void geom_kappa(race_geom *g)
{
    long ns = (long)g->n - 1;
    for (long k = 0; k < (long)g->n; k++) {
        long a = k, c = k;
        double back = 0, fwd = 0;
        if (g->loop && k == ns) {
            g->kappa[k] = g->kappa[0];
            continue;
        }
        while (back < 0.25 && (g->loop || a > 0)) {
            long p = g->loop ? (a - 1 + ns) % ns : a - 1;
            back += g->cs[p + 1] - g->cs[p];
            a = p;
            if (a == k) break;
        }
        while (fwd < 0.25 && (g->loop || c < ns)) {
            fwd += g->cs[c + 1] - g->cs[c];
            c = g->loop ? (c + 1) % ns : c + 1;
            if (c == k) break;
        }
        g->kappa[k] = back < 0.25 || fwd < 0.25 ? 0
                      : kappa3(g->c[2 * a], g->c[2 * a + 1], g->c[2 * k], g->c[2 * k + 1], g->c[2 * c], g->c[2 * c + 1]);
    }
}

double race_geom_kappa(const race_geom *g, double s)
{
    double x, y, t;
    size_t k = race_geom_at(g, &s, &x, &y, &t);
    return g->kappa[k] + t * (g->kappa[k + 1] - g->kappa[k]);
}

static void track_info(baton_race_track *t)
{
    baton_race_track_info *in = &t->info;
    const race_geom *g = &t->fwd;
    size_t m = g->loop ? g->n - 1 : g->n;
    in->name = t->name;
    in->rows = t->file_rows;
    in->waypoints = g->n;
    in->loop = g->loop;
    in->ccw = g->ccw;
    in->length_m = g->length;
    double sum = 0;
    in->min_width_m = INFINITY;
    in->max_width_m = 0;
    in->xmin = in->ymin = INFINITY;
    in->xmax = in->ymax = -INFINITY;
    for (size_t k = 0; k < g->n; k++) {
        double w = hypot(g->in[2 * k] - g->out[2 * k], g->in[2 * k + 1] - g->out[2 * k + 1]);
        if (k < m) sum += w;
        in->min_width_m = fmin(in->min_width_m, w);
        in->max_width_m = fmax(in->max_width_m, w);
        const double *pts[2] = {g->in + 2 * k, g->out + 2 * k};
        for (int s = 0; s < 2; s++) {
            in->xmin = fmin(in->xmin, pts[s][0]);
            in->xmax = fmax(in->xmax, pts[s][0]);
            in->ymin = fmin(in->ymin, pts[s][1]);
            in->ymax = fmax(in->ymax, pts[s][1]);
        }
    }
    in->width_m = sum / (double)m;
    /* turns: runs of waypoints whose radius (over ±0.25 m of centre line) is below 5 m */
    double *r = malloc(m * sizeof *r);
    in->turns = 0;
    in->min_radius_m = in->max_radius_m = 0;
    if (!r) return;
    for (size_t k = 0; k < m; k++) r[k] = g->kappa[k] != 0 ? 1 / fabs(g->kappa[k]) : INFINITY;
    size_t start = 0;   /* on a loop, begin counting at a point outside any turn */
    if (g->loop)
        while (start < m && r[start] < 5) start++;
    if (start == m) start = 0;
    double apex = INFINITY, lo = INFINITY, hi = 0;
    int inside = 0;
    for (size_t q = 0; q <= m; q++) {
        double v = q < m ? r[(start + q) % m] : INFINITY;
        if (v < 5) {
            inside = 1;
            apex = fmin(apex, v);
        } else if (inside) {
            in->turns++;
            lo = fmin(lo, apex);
            hi = fmax(hi, apex);
            inside = 0;
            apex = INFINITY;
        }
    }
    if (in->turns) {
        in->min_radius_m = lo;
        in->max_radius_m = hi;
    }
    free(r);
}

static int check_rows(const char *name, const double *rows, size_t n, baton_err *err)
{
    if (n < 3) return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu rows, a track needs at least 3", name, n);
    if (n > TRACK_MAX_ROWS)
        return baton_err_set(err, BATON_ERR_FORMAT, "%s: %zu rows, more than the %d accepted", name, n, TRACK_MAX_ROWS);
    static const char *col[6] = {"centre x", "centre y", "inner x", "inner y", "outer x", "outer y"};
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < 6; j++)
            if (!isfinite(rows[6 * i + j]) || fabs(rows[6 * i + j]) > 1e6)
                return baton_err_set(err, BATON_ERR_FORMAT, "%s: row %zu: %s is %g (want a finite coordinate in "
                                     "metres)", name, i, col[j], rows[6 * i + j]);
        if (hypot(rows[6 * i + 2] - rows[6 * i + 4], rows[6 * i + 3] - rows[6 * i + 5]) < 1e-6)
            return baton_err_set(err, BATON_ERR_FORMAT, "%s: row %zu: the inner and outer border meet (zero width)",
                                 name, i);
    }
    return BATON_OK;
}

int race_track_from_rows(const char *name, const double *rows, size_t n, baton_race_track **out,
                               baton_err *err)
{
    *out = NULL;
    int rc = check_rows(name, rows, n, err);
    if (rc) return rc;
    baton_race_track *t = calloc(1, sizeof *t);
    if (!t) return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->file_rows = n;
    int loop = !memcmp(rows, rows + 6 * (n - 1), 6 * sizeof(double));
    t->rows = malloc(6 * n * sizeof(double));
    if (!t->rows) goto nomem;
    /* DeepRacer's clean-up: drop a row whose centre point repeats the one before it (a loop keeps
     * its closing row) */
    size_t core = loop ? n - 1 : n, kept = 0;
    for (size_t i = 0; i < core; i++) {
        if (i > 0 && hypot(rows[6 * i] - rows[6 * i - 6], rows[6 * i + 1] - rows[6 * i - 5]) <= 1e-9) continue;
        memcpy(t->rows + 6 * kept++, rows + 6 * i, 6 * sizeof(double));
    }
    if (loop) memcpy(t->rows + 6 * kept++, rows + 6 * (n - 1), 6 * sizeof(double));
    t->n = kept;
    if (kept < 3 || (loop && kept < 4)) {
        baton_err_set(err, BATON_ERR_FORMAT, "%s: only %zu distinct centre points, a track needs at least 3", name,
                      kept - (size_t)loop);
        baton_race_track_free(t);
        return BATON_ERR_FORMAT;
    }
    if (geom_build(&t->fwd, t->rows, kept, loop, 0) || geom_build(&t->rev, t->rows, kept, loop, 1) ||
        build_edges(t))
        goto nomem;
    if ((rc = race_grid_build(&t->grid, t->edges, t->nedges, GRID_CELL_M, err)) ||
        (rc = check_crossings(t, err))) {
        baton_race_track_free(t);
        return rc;
    }
    track_info(t);
    *out = t;
    return BATON_OK;
nomem:
    baton_race_track_free(t);
    return baton_err_set(err, BATON_ERR_NOMEM, "%s: out of memory", name);
}

static const char *base_name(const char *p, char *buf, size_t cap)
{
    const char *s = strrchr(p, '/');
    snprintf(buf, cap, "%s", s ? s + 1 : p);
    size_t n = strlen(buf);
    if (n > 4 && !strcmp(buf + n - 4, ".npy")) buf[n - 4] = 0;
    return buf;
}

int baton_race_track_load(const char *name_or_path, baton_race_track **out, baton_err *err)
{
    *out = NULL;
    double *rows;
    size_t n;
    int rc = race_builtin_rows(name_or_path, &rows, &n, err);
    if (rc == BATON_OK) {
        rc = race_track_from_rows(name_or_path, rows, n, out, err);
        free(rows);
        return rc;
    }
    if (rc != BATON_ERR_NOTFOUND) return rc;
    if (!strchr(name_or_path, '/') && !strstr(name_or_path, ".npy")) {
        const char *const *b = baton_race_builtin_tracks();
        return baton_err_set(err, BATON_ERR_NOTFOUND, "%s: no such built-in track (%s, %s) and not a .npy path",
                             name_or_path, b[0], b[1]);
    }
    baton_npy a;
    if ((rc = race_npy_load(name_or_path, &a, err))) return rc;
    if (a.cols != 6) {
        rc = baton_err_set(err, BATON_ERR_FORMAT, "%s: shape (%zu, %zu): a track has 6 columns (centre x, y, "
                           "inner x, y, outer x, y)", name_or_path, a.rows, a.cols);
        race_npy_free(&a);
        return rc;
    }
    char nm[256];
    rc = race_track_from_rows(name_or_path, a.data, a.rows, out, err);
    if (rc == BATON_OK) snprintf((*out)->name, sizeof (*out)->name, "%s", base_name(name_or_path, nm, sizeof nm));
    race_npy_free(&a);
    return rc;
}

void baton_race_track_free(baton_race_track *t)
{
    if (!t) return;
    geom_free(&t->fwd);
    geom_free(&t->rev);
    race_grid_free(&t->grid);
    free(t->edges);
    free(t->rows);
    free(t);
}

const double *race_track_rows(const baton_race_track *t, size_t *n)
{
    *n = t->n;
    return t->rows;
}

void baton_race_track_get_info(const baton_race_track *t, baton_race_track_info *info)
{
    *info = t->info;
}

int race_track_contains(const baton_race_track *t, double x, double y)
{
    return race_grid_contains(&t->grid, x, y);
}

int race_track_contains_ref(const baton_race_track *t, double x, double y)
{
    return race_edges_contain(t->edges, t->nedges, x, y);
}
