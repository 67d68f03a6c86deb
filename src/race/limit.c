/* limit.c — the fastest lap the car can physically drive on a track: a minimum-curvature line
 * inside the borders (limit_line.c; after Heilmeier et al., Vehicle System Dynamics 2019: in
 * corners it is close to the minimum-time line), blended toward a short smooth line where that is
 * faster, and a speed profile under the car's limits.
 *
 * The track is first resampled every step_m of centre line on smooth curves through its
 * waypoints, each sample a rung from its inner to its outer border point; the line crosses every
 * rung margin_m (half the car's width) or more from both ends. The centre line is resampled the
 * same way and timed under the same limits.
 *
 * The speed profile: v_j <= min(v_max, sqrt(a_lat / |kappa_j|)), then a forward pass
 * v_{j+1} = min(limit, sqrt(v_j^2 + 2 a Δs)) with a = accel scaled by the friction circle
 * (1 - (v^2 |kappa| / a_lat)^e)^(1/e), and a backward pass with the braking limit — twice around
 * a loop; an open track starts at start_speed_mps. Lap time: the sum of 2 Δs / (v_j + v_{j+1}),
 * exact for constant acceleration between points. */
#include "race_internal.h"

#include <stdlib.h>
#include <string.h>

void baton_race_limits_default(baton_race_limits *l)
{
    memset(l, 0, sizeof *l);
    l->max_speed_mps = BATON_RACE_MAX_SPEED_MPS;
    l->lat_accel_mps2 = BATON_RACE_GRIP_MPS2;
    l->accel_mps2 = BATON_RACE_ACCEL_MPS2;
    l->brake_mps2 = BATON_RACE_BRAKE_MPS2;
    l->friction_exp = 2.0;
    l->margin_m = 0.0935;
    l->step_m = 0.05;
    l->start_speed_mps = 0.1;
}

void race_line_free(baton_race_line *l)
{
    free(l->x);
    free(l->y);
    free(l->s);
    free(l->kappa);
    free(l->v);
    memset(l, 0, sizeof *l);
}

void baton_race_limit_free(baton_race_limit_result *r)
{
    race_line_free(&r->racing);
    race_line_free(&r->center);
}

int race_line_alloc(baton_race_line *l, size_t n, int loop)
{
    memset(l, 0, sizeof *l);
    l->n = n;
    l->loop = loop;
    l->x = calloc(n, sizeof(double));
    l->y = calloc(n, sizeof(double));
    l->s = calloc(n, sizeof(double));
    l->kappa = calloc(n, sizeof(double));
    l->v = calloc(n, sizeof(double));
    if (!l->x || !l->y || !l->s || !l->kappa || !l->v) {
        race_line_free(l);
        return BATON_ERR_NOMEM;
    }
    return BATON_OK;
}

/* Signed curvature of the circle through a, b, c (positive turning left). */
static double curvature3(double ax, double ay, double bx, double by, double cx, double cy)
{
    double a = hypot(bx - cx, by - cy), b = hypot(ax - cx, ay - cy), c = hypot(ax - bx, ay - by);
    double cr = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
    double den = a * b * c;
    return den > 1e-15 ? 2 * cr / den : 0;
}

/* Longitudinal acceleration available at speed v on curvature k (friction circle). */
static double avail(double amax, double v, double k, const baton_race_limits *l)
{
    if (!(l->friction_exp > 0)) return amax;
    double used = v * v * fabs(k) / l->lat_accel_mps2;
    if (used >= 1) return 0;
    return amax * pow(1 - pow(used, l->friction_exp), 1 / l->friction_exp);
}

int race_speed_profile(baton_race_line *line, const baton_race_limits *l, baton_err *err)
{
    size_t n = line->n;
    int loop = line->loop;
    if (n < (loop ? 3u : 2u)) return baton_err_set(err, BATON_ERR_ARG, "speed profile: %zu points", n);
    if (!(l->max_speed_mps > 0) || !(l->lat_accel_mps2 > 0) || !(l->accel_mps2 > 0) || !(l->brake_mps2 > 0))
        return baton_err_set(err, BATON_ERR_ARG, "speed profile: limits must be positive");
    double *ds = malloc(n * sizeof *ds), *lim = malloc(n * sizeof *lim);
    if (!ds || !lim) {
        free(ds);
        free(lim);
        return baton_err_set(err, BATON_ERR_NOMEM, "speed profile: out of memory");
    }
    size_t nseg = loop ? n : n - 1;
    line->s[0] = 0;
    for (size_t j = 0; j < n; j++) {
        size_t a = loop ? (j + n - 1) % n : (j ? j - 1 : 0), c = loop ? (j + 1) % n : (j + 1 < n ? j + 1 : j);
        line->kappa[j] = (a == j || c == j) ? 0 : curvature3(line->x[a], line->y[a], line->x[j], line->y[j], line->x[c], line->y[c]);
        double k = fabs(line->kappa[j]);
        lim[j] = k > 0 ? fmin(l->max_speed_mps, sqrt(l->lat_accel_mps2 / k)) : l->max_speed_mps;
        if (j < nseg) {
            size_t nx = (j + 1) % n;
            ds[j] = hypot(line->x[nx] - line->x[j], line->y[nx] - line->y[j]);
            if (j + 1 < n) line->s[j + 1] = line->s[j] + ds[j];
        }
    }
    double *v = line->v;
    memcpy(v, lim, n * sizeof *v);
    size_t j0 = 0;   /* a loop's passes start where the limit is lowest: there v = limit holds */
    if (loop)
        for (size_t j = 1; j < n; j++)
            if (lim[j] < lim[j0]) j0 = j;
    if (!loop) v[0] = fmin(v[0], l->start_speed_mps);
    size_t laps = loop ? 2 * n : n - 1;
    for (size_t q = 0; q < laps; q++) {   /* forward: acceleration */
        size_t j = loop ? (j0 + q) % n : q, nx = (j + 1) % n;
        double a = avail(l->accel_mps2, v[j], line->kappa[j], l);
        double vn = sqrt(v[j] * v[j] + 2 * a * ds[j]);
        if (vn < v[nx]) v[nx] = vn;
    }
    for (size_t q = 0; q < laps; q++) {   /* backward: braking */
        size_t nx = loop ? (j0 + n - q % n) % n : n - 1 - q, j = loop ? (nx + n - 1) % n : nx - 1;
        double a = avail(l->brake_mps2, v[nx], line->kappa[nx], l);
        double vp = sqrt(v[nx] * v[nx] + 2 * a * ds[j]);
        if (vp < v[j]) v[j] = vp;
    }
    double t = 0, len = 0;
    for (size_t j = 0; j < nseg; j++) {
        size_t nx = (j + 1) % n;
        t += 2 * ds[j] / (v[j] + v[nx]);
        len += ds[j];
    }
    line->lap_s = t;
    line->length_m = len;
    free(ds);
    free(lim);
    return BATON_OK;
}

/* Point at knot value t of the Catmull-Rom curve (Barry and Goldman's form, non-uniform knots)
 * through p0..p3 with knots t0..t3, t1 <= t <= t2. */
static double catmull(double p0, double p1, double p2, double p3, double t0, double t1, double t2, double t3,
                      double t)
{
    double a1 = ((t1 - t) * p0 + (t - t0) * p1) / (t1 - t0);
    double a2 = ((t2 - t) * p1 + (t - t1) * p2) / (t2 - t1);
    double a3 = ((t3 - t) * p2 + (t - t2) * p3) / (t3 - t2);
    double b1 = ((t2 - t) * a1 + (t - t0) * a2) / (t2 - t0);
    double b2 = ((t3 - t) * a2 + (t - t1) * a3) / (t3 - t1);
    return ((t2 - t) * b1 + (t - t1) * b2) / (t2 - t1);
}

/* Resample the track every ~step of centre line: the centre line on a smooth curve through its
 * waypoints (Catmull-Rom, knots at its cumulative lengths: straight chords would put a kink, and a
 * spike of curvature, at every waypoint), the borders at the same places on their chords. */
static int resample(const race_geom *g, double step, size_t *np, double **c, double **in, double **out)
{
    size_t m = (size_t)ceil(g->length / step);
    if (m < 8) m = 8;
    size_t n = g->loop ? m : m + 1, ns = g->n - 1;
    *c = malloc(2 * n * sizeof(double));
    *in = malloc(2 * n * sizeof(double));
    *out = malloc(2 * n * sizeof(double));
    if (!*c || !*in || !*out) return BATON_ERR_NOMEM;
    const double *lines[3] = {g->c, g->in, g->out};
    double *dst[3] = {*c, *in, *out};
    for (size_t j = 0; j < n; j++) {
        double s = g->length * (double)j / (double)m;
        size_t k;
        double x, y;
        race_poly_at(&g->cl, s, &k, &x, &y);
        if (k >= ns) k = ns - 1;
        /* knots and points k-1 .. k+2, wrapping on a loop, mirrored at an open track's ends */
        double t[4];
        long idx[4];
        for (int q = 0; q < 4; q++) {
            long i = (long)k - 1 + q;
            double off = 0;
            if (g->loop) {
                if (i < 0) i += (long)ns, off = -g->length;
                else if (i > (long)ns) i -= (long)ns, off = g->length;
            }
            idx[q] = i;
            t[q] = (i >= 0 && i <= (long)ns) ? g->cs[i] + off : 0;
        }
        /* the borders stay the straight chords between waypoints: that is the polygon the car
         * must stay inside (DeepRacer's on-track test) */
        double len = g->cs[k + 1] - g->cs[k], u = len > 0 ? (s - g->cs[k]) / len : 0;
        u = u < 0 ? 0 : u > 1 ? 1 : u;
        for (int d = 1; d < 3; d++)
            for (int a = 0; a < 2; a++) dst[d][2 * j + a] = lines[d][2 * k + a] + u * (lines[d][2 * k + 2 + a] - lines[d][2 * k + a]);
        for (int d = 0; d < 1; d++)
            for (int a = 0; a < 2; a++) {
                const double *p = lines[d];
                double v[4];
                for (int q = 0; q < 4; q++) {
                    long i = idx[q];
                    if (i < 0) v[q] = 2 * p[2 * 0 + a] - p[2 * 1 + a];
                    else if (i > (long)ns) v[q] = 2 * p[2 * ns + a] - p[2 * (ns - 1) + a];
                    else v[q] = p[2 * i + a];
                }
                double tt[4] = {t[0], t[1], t[2], t[3]};
                if (idx[0] < 0) tt[0] = 2 * t[1] - t[2];
                if (idx[3] > (long)ns) tt[3] = 2 * t[2] - t[1];
                dst[d][2 * j + a] = catmull(v[0], v[1], v[2], v[3], tt[0], tt[1], tt[2], tt[3], s);
            }
    }
    *np = n;
    return BATON_OK;
}

/* The racing line: the minimum-curvature line, the smoothest short line, and the lines between
 * them (b = (1 - w) b_mincurv + w b_smooth, w in steps of 0.05); the one with the fastest lap.
 * The minimum-curvature line takes the widest corners, which costs distance where corners are
 * gentle and straights short (an oval); the short line cuts corners tighter; the fastest lies
 * between, usually near the first. */
static int racing_line(size_t n, int loop, const double *in, const double *out, const baton_race_limits *l,
                       baton_race_line *line, baton_race_limit_result *res, baton_err *err)
{
    double *bm = malloc(n * sizeof *bm), *bs = malloc(n * sizeof *bs), *best = malloc(2 * n * sizeof *best);
    int rc = !bm || !bs || !best ? BATON_ERR_NOMEM : BATON_OK;
    if (!rc) rc = race_line_mincurv(n, loop, in, out, l->margin_m, bm);
    if (!rc) rc = race_line_smooth(n, loop, in, out, l->margin_m, bs);
    double best_lap = INFINITY;
    for (int k = 0; !rc && k <= 20; k++) {
        double w = k / 20.0;
        for (size_t j = 0; j < n; j++) {
            double b = (1 - w) * bm[j] + w * bs[j];
            line->x[j] = in[2 * j] + b * (out[2 * j] - in[2 * j]);
            line->y[j] = in[2 * j + 1] + b * (out[2 * j + 1] - in[2 * j + 1]);
        }
        if ((rc = race_speed_profile(line, l, err))) break;
        if (k == 0) res->mincurv_lap_s = line->lap_s;
        if (line->lap_s < best_lap) {
            res->blend = w;
            best_lap = line->lap_s;
            memcpy(best, line->x, n * sizeof *best);
            memcpy(best + n, line->y, n * sizeof *best);
        }
    }
    if (!rc) {
        memcpy(line->x, best, n * sizeof *best);
        memcpy(line->y, best + n, n * sizeof *best);
        rc = race_speed_profile(line, l, err);
    }
    free(bm);
    free(bs);
    free(best);
    return rc;
}

int baton_race_limit(const baton_race_track *t, const baton_race_limits *l, baton_race_limit_result *out,
                     baton_err *err)
{
    memset(out, 0, sizeof *out);
    if (!(l->step_m > 0) || l->margin_m < 0)
        return baton_err_set(err, BATON_ERR_ARG, "%s: limit: step and margin must be positive", t->name);
    const race_geom *g = &t->fwd;
    double step = fmax(l->step_m, g->length / 20000);
    size_t n;
    double *c = NULL, *in = NULL, *ou = NULL;
    int rc = resample(g, step, &n, &c, &in, &ou);
    if (rc || (rc = race_line_alloc(&out->racing, n, g->loop)) || (rc = race_line_alloc(&out->center, n, g->loop))) goto fail;
    for (size_t j = 0; j < n; j++) {
        out->center.x[j] = c[2 * j];
        out->center.y[j] = c[2 * j + 1];
    }
    if ((rc = racing_line(n, g->loop, in, ou, l, &out->racing, out, err)) || (rc = race_speed_profile(&out->center, l, err))) {
        if (rc == BATON_ERR_NOMEM) goto fail;
        goto fail_msg;
    }
    out->lap_s = out->racing.lap_s;
    out->centerline_lap_s = out->center.lap_s;
    free(c);
    free(in);
    free(ou);
    return BATON_OK;
fail:
    baton_err_set(err, BATON_ERR_NOMEM, "%s: limit: out of memory", t->name);
fail_msg:
    free(c);
    free(in);
    free(ou);
    baton_race_limit_free(out);
    return rc ? rc : BATON_ERR_NOMEM;
}
