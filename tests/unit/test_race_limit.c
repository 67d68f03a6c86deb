/* test_race_limit.c — the racing-line limit on cases with known answers: a circle (every point at
 * min(v_max, sqrt(a_lat R))), a straight (the acceleration ramp from the start speed), a straight
 * between two turns (the braking ramp into the next), a ring track (the minimum-curvature line is
 * the widest circle the margin allows, the fastest the tightest); then real tracks: the racing line stays the margin away
 * from the borders and beats the centre line. */
#include "../../src/race/race_internal.h"
#include "baton/race.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void line_of(baton_race_line *l, size_t n, int loop)
{
    CHECK(race_line_alloc(l, n, loop) == BATON_OK);
}

static void test_circle(void)
{
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    const double radii[] = {0.3, 0.8, 2.0, 3.2, 6.0};
    for (int i = 0; i < 5; i++) {
        double R = radii[i];
        baton_race_line l;
        line_of(&l, 400, 1);
        for (size_t k = 0; k < l.n; k++) {
            l.x[k] = R * cos(2 * M_PI * k / l.n);
            l.y[k] = R * sin(2 * M_PI * k / l.n);
        }
        baton_err err = {0};
        CHECK(race_speed_profile(&l, &lim, &err) == BATON_OK);
        double want = fmin(lim.max_speed_mps, sqrt(lim.lat_accel_mps2 * R)), worst = 0;
        for (size_t k = 0; k < l.n; k++) worst = fmax(worst, fabs(l.v[k] / want - 1));
        CHECK_MSG(worst < 1e-9, "R %.1f: speeds off by %g", R, worst);
        CHECK(fabs(l.kappa[0] - 1 / R) < 1e-9);
        double perim = 2 * l.n * R * sin(M_PI / l.n);
        CHECK(fabs(l.lap_s - perim / want) < 1e-9 && fabs(l.length_m - perim) < 1e-9);
        race_line_free(&l);
    }
}

static void test_straight(void)
{
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    baton_race_line l;
    line_of(&l, 401, 0);
    for (size_t k = 0; k < l.n; k++) l.x[k] = 10.0 * k / 400;
    baton_err err = {0};
    CHECK(race_speed_profile(&l, &lim, &err) == BATON_OK);
    double v0 = lim.start_speed_mps, a = lim.accel_mps2, vm = lim.max_speed_mps, worst = 0;
    for (size_t k = 0; k < l.n; k++) worst = fmax(worst, fabs(l.v[k] - fmin(vm, sqrt(v0 * v0 + 2 * a * l.x[k]))));
    CHECK_MSG(worst < 1e-9, "ramp off by %g", worst);
    double s1 = (vm * vm - v0 * v0) / (2 * a), t = (vm - v0) / a + (10 - s1) / vm;
    CHECK_MSG(fabs(l.lap_s / t - 1) < 0.002, "lap %.4f, want %.4f", l.lap_s, t);
    race_line_free(&l);
}

/* A stadium: two 6 m straights and half circles of radius 1: on a straight, speed rises from the
 * corner speed at the acceleration limit and falls into the next corner at the braking limit. */
static void test_braking(void)
{
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    lim.friction_exp = 0;   /* the corners' ends: no trade between grip and acceleration */
    size_t ns = 240, na = 126, n = 2 * (ns + na);
    baton_race_line l;
    line_of(&l, n, 1);
    size_t k = 0;
    for (int side = 0; side < 2; side++) {
        double sg = side ? -1 : 1;
        for (size_t i = 0; i < ns; i++, k++) l.x[k] = sg * (-3 + 6.0 * i / ns), l.y[k] = sg * -1;
        for (size_t i = 0; i < na; i++, k++) {
            double a = -M_PI / 2 + M_PI * i / na;
            l.x[k] = sg * (3 + cos(a));
            l.y[k] = sg * sin(a);
        }
    }
    baton_err err = {0};
    CHECK(race_speed_profile(&l, &lim, &err) == BATON_OK);
    /* the bottom straight, entered at x = -3 (point 0) and left at x = 3 (point ns) */
    double vc = sqrt(lim.lat_accel_mps2 * 1.0), v_in = l.v[0], v_out = l.v[ns], worst = 0;
    CHECK_MSG(fabs(v_in / vc - 1) < 0.05 && fabs(v_out / vc - 1) < 0.05, "corner speeds %.3f %.3f, want %.3f", v_in,
              v_out, vc);
    for (size_t i = 1; i < ns; i++) {
        double se = l.x[i] + 3, sb = 3 - l.x[i];
        double want = fmin(lim.max_speed_mps, fmin(sqrt(v_in * v_in + 2 * lim.accel_mps2 * se),
                                                   sqrt(v_out * v_out + 2 * lim.brake_mps2 * sb)));
        worst = fmax(worst, fabs(l.v[i] / want - 1));
    }
    CHECK_MSG(worst < 1e-9, "straight between corners: off by %g", worst);
    CHECK(l.v[ns / 2] == lim.max_speed_mps);
    race_line_free(&l);
}

static baton_race_track *ring(double rc, double half)
{
    enum { N = 361 };
    double *rows = malloc(N * 6 * sizeof *rows);
    for (int i = 0; i < N; i++) {
        double a = 2 * M_PI * (i % (N - 1)) / (N - 1), c = cos(a), s = sin(a);
        double r[6] = {rc * c, rc * s, (rc - half) * c, (rc - half) * s, (rc + half) * c, (rc + half) * s};
        memcpy(rows + 6 * i, r, sizeof r);
    }
    baton_race_track *t = NULL;
    baton_err err = {0};
    CHECK_MSG(race_track_from_rows("ring", rows, N, &t, &err) == BATON_OK, "%s", err.msg);
    free(rows);
    return t;
}

static void test_ring(void)
{
    /* the minimum-curvature line of a ring is its widest circle the margin allows */
    enum { N = 360 };
    double in[2 * N], out[2 * N], b[N];
    for (int j = 0; j < N; j++) {
        double a = 2 * M_PI * j / N;
        in[2 * j] = 2.5 * cos(a), in[2 * j + 1] = 2.5 * sin(a);
        out[2 * j] = 3.5 * cos(a), out[2 * j + 1] = 3.5 * sin(a);
    }
    CHECK(race_line_mincurv(N, 1, in, out, 0.1, b) == BATON_OK);
    double worst = 0;
    for (int j = 0; j < N; j++) worst = fmax(worst, fabs(b[j] - 0.9));
    CHECK_MSG(worst < 1e-3, "the ring's minimum-curvature line strays %.4f of the width from its outer circle", worst);
    /* ... but on a ring every lap is at the speed sqrt(a_lat R), so the tightest circle is the
     * fastest: the limit takes the short line */
    baton_race_track *t = ring(3, 0.5);
    if (!t) return;
    baton_race_limits lim;
    baton_race_limits_default(&lim);
    lim.lat_accel_mps2 = 2;
    baton_race_limit_result r;
    baton_err err = {0};
    CHECK_MSG(baton_race_limit(t, &lim, &r, &err) == BATON_OK, "%s", err.msg);
    double Rin = 2.5 + lim.margin_m, Rout = 3.5 - lim.margin_m;
    worst = 0;
    for (size_t k = 0; k < r.racing.n; k++) worst = fmax(worst, fabs(hypot(r.racing.x[k], r.racing.y[k]) - Rin));
    CHECK_MSG(worst < 2e-3 && r.blend == 1, "the ring's racing line strays %.4f m from its inner circle", worst);
    CHECK_MSG(fabs(r.lap_s / (2 * M_PI * sqrt(Rin / 2)) - 1) < 0.003, "ring lap %.4f", r.lap_s);
    CHECK_MSG(fabs(r.mincurv_lap_s / (2 * M_PI * sqrt(Rout / 2)) - 1) < 0.003, "ring min-curvature lap %.4f", r.mincurv_lap_s);
    CHECK(fabs(r.centerline_lap_s / (2 * M_PI * sqrt(3 / 2.0)) - 1) < 0.003);
    baton_race_limit_free(&r);
    baton_race_track_free(t);
}

/* The racing line's smallest distance to the borders (linear between waypoints). */
static double border_clearance(const baton_race_track *t, const baton_race_line *l)
{
    size_t n;
    const double *rows = race_track_rows(t, &n);
    double worst = INFINITY;
    for (size_t k = 0; k < l->n; k++)
        for (size_t i = 0; i + 1 < n; i++)
            for (int b = 2; b <= 4; b += 2) {
                double ax = rows[6 * i + b], ay = rows[6 * i + b + 1], bx = rows[6 * i + 6 + b], by = rows[6 * i + 7 + b];
                double ex = bx - ax, ey = by - ay, l2 = ex * ex + ey * ey;
                double u = l2 > 0 ? ((l->x[k] - ax) * ex + (l->y[k] - ay) * ey) / l2 : 0;
                u = u < 0 ? 0 : u > 1 ? 1 : u;
                worst = fmin(worst, hypot(l->x[k] - ax - u * ex, l->y[k] - ay - u * ey));
            }
    return worst;
}

static void test_tracks(void)
{
    const char *specs[] = {"../shared/tracks/reinvent_base.npy", "oval", "technical", "../shared/tracks/Straight_track.npy"};
    for (int i = 0; i < 4; i++) {
        baton_race_track *t = NULL;
        baton_err err = {0};
        CHECK_MSG(baton_race_track_load(specs[i], &t, &err) == BATON_OK, "%s", err.msg);
        if (!t) continue;
        baton_race_limits lim;
        baton_race_limits_default(&lim);
        baton_race_limit_result r;
        CHECK_MSG(baton_race_limit(t, &lim, &r, &err) == BATON_OK, "%s", err.msg);
        int on = 1;   /* (an open track's first and last points lie on its ends) */
        for (size_t k = r.racing.loop ? 0 : 1; k + (r.racing.loop ? 0 : 1) < r.racing.n; k++)
            on &= race_track_contains(t, r.racing.x[k], r.racing.y[k]);
        double clear = border_clearance(t, &r.racing);
        CHECK_MSG(on && clear > lim.margin_m - 0.005, "%s: racing line %s, %.4f m from a border", specs[i],
                  on ? "on the track" : "off the track", clear);
        if (i < 3) {
            CHECK_MSG(r.lap_s < 0.95 * r.centerline_lap_s, "%s: racing %.3f s, centre %.3f s", specs[i], r.lap_s,
                      r.centerline_lap_s);
            CHECK(r.lap_s <= r.mincurv_lap_s && r.mincurv_lap_s < r.centerline_lap_s);
        } else {
            CHECK(fabs(r.lap_s / r.centerline_lap_s - 1) < 0.01 && r.racing.v[0] == lim.start_speed_mps);
        }
        for (size_t k = 0; k < r.racing.n; k++) CHECK(r.racing.v[k] > 0 && r.racing.v[k] <= lim.max_speed_mps);
        if (i == 0) printf("reinvent_base: racing line %.3f s, centre line %.3f s\n", r.lap_s, r.centerline_lap_s);
        baton_race_limit_free(&r);
        lim.step_m = 0;
        CHECK(baton_race_limit(t, &lim, &r, &err) == BATON_ERR_ARG);
        baton_race_track_free(t);
    }
}

int main(void)
{
    test_circle();
    test_straight();
    test_braking();
    test_ring();
    test_tracks();
    CHECK_DONE();
}
