/* fuzz_npy.c — libFuzzer target: .npy files. Whatever parses must write back (race_npy_write) and
 * parse again to the same shape and the same bits; a parse with 6 columns and few rows also goes
 * through the track checks (rows, finite values, crossing borders), which must either refuse it
 * with a message or build a track whose on-track test agrees with the reference (away from borders). */
#include "../../src/race/race_internal.h"
#include "baton/race.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double seg_dist(double px, double py, double ax, double ay, double bx, double by)
{
    double ex = bx - ax, ey = by - ay, l2 = ex * ex + ey * ey;
    double u = l2 > 0 ? ((px - ax) * ex + (py - ay) * ey) / l2 : 0;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    return hypot(px - ax - u * ex, py - ay - u * ey);
}

/* The distance from (x, y) to the nearest border edge (and the caps of an open track). */
static double border_dist(const double *r, size_t n, double x, double y)
{
    double d = INFINITY;
    for (size_t i = 0; i + 1 < n; i++)
        for (int k = 2; k <= 4; k += 2)
            d = fmin(d, seg_dist(x, y, r[6 * i + k], r[6 * i + k + 1], r[6 * i + 6 + k], r[6 * i + 7 + k]));
    d = fmin(d, seg_dist(x, y, r[2], r[3], r[4], r[5]));
    d = fmin(d, seg_dist(x, y, r[6 * (n - 1) + 2], r[6 * (n - 1) + 3], r[6 * (n - 1) + 4], r[6 * (n - 1) + 5]));
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    baton_npy a;
    baton_err err;
    if (race_npy_parse("fuzz.npy", data, size, &a, &err) != BATON_OK) {
        if (a.data != NULL || a.rows || a.cols || !err.msg[0]) abort();
        return 0;
    }
    baton_buf b = {0};
    if (race_npy_write(&b, a.data, a.rows, a.cols) != BATON_OK) abort();
    baton_npy c;
    if (race_npy_parse("fuzz2.npy", b.data, b.len, &c, &err) != BATON_OK || c.rows != a.rows || c.cols != a.cols ||
        memcmp(a.data, c.data, a.rows * a.cols * sizeof(double)))
        abort();
    race_npy_free(&c);
    baton_buf_free(&b);
    if (a.cols == 6 && a.rows <= 64) {
        baton_race_track *t = NULL;
        if (race_track_from_rows("fuzz.npy", a.data, a.rows, &t, &err) == BATON_OK) {
            size_t n;
            const double *r = race_track_rows(t, &n);
            /* points between each centre point and its border points, where the reference's answer
             * is the same a hair away in every direction (not on a border) */
            for (size_t i = 0; i < n; i++)
                for (int k = 2; k <= 4; k += 2) {
                    double x = 0.5 * (r[6 * i] + r[6 * i + k]), y = 0.5 * (r[6 * i + 1] + r[6 * i + k + 1]);
                    int want = race_track_contains_ref(t, x, y), clear = border_dist(r, n, x, y) > 1e-9;
                    static const int ox[8] = {1, -1, 0, 0, 1, 1, -1, -1}, oy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
                    for (double h = 1e-5; h > 1e-13; h *= 1e-3)   /* thin slivers between near edges too */
                        for (int q = 0; q < 8; q++)
                            clear &= race_track_contains_ref(t, x + h * ox[q], y + h * oy[q]) == want;
                    if (clear && race_track_contains(t, x, y) != want) abort();
                }
            baton_race_track_info in;
            baton_race_track_get_info(t, &in);
            if (!(in.length_m >= 0) || in.waypoints != n) abort();
            baton_race_track_free(t);
        } else if (t != NULL || !err.msg[0]) {
            abort();
        }
    }
    race_npy_free(&a);
    return 0;
}
